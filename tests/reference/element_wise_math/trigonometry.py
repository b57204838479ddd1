"""float64 references for the element-wise trigonometric and hyperbolic functions (SIN, COS, TAN,
their inverses, ATAN_YX, SINH, COSH, TANH and their inverses), transcribed from the pages
(dml_element_wise_*_operator_desc.md in ../shared/spec/operators/) and docs/semantics.md; part of the
element_wise_math family's references.

Each unary page says ``f(x) = fn(x)`` with an optional ScaleBias applied first: g(x) = x * Scale
+ Bias. The reference is the true value of fn at g (numpy's float64 functions, which are
accurate to well under a FLOAT32 ULP, and C99's atan2), on each acceptable g (the multiply-add
fused or not); the gradient is fn'(g) * Scale in float64, with the one-sided limit at the ends of
a domain (asin'(+-1) = +inf, acos'(+-1) = -inf, atanh'(+-1) = +inf, acosh'(1) = +inf) and NaN
outside it."""

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import elementwise_vjp, ftz, read, scale_bias_candidates, sb_float


def _candidates(x, scale_bias, half):
    """g(x) on each acceptable rounding: fused or not in the compute type (FLOAT32 for FLOAT16
    tensors), and with allow_half_precision_computation the FLOAT16 multiply-add too.

    g is a math result in the compute type (docs/semantics.md#fused-multiply-add): the fused candidate is rounded to
    FLOAT32 here (rules.scale_bias_candidates leaves it exact), because these functions amplify
    g's last bit (sinh and cosh by |g|, sin and cos of g ~ 1e4 by far more) and no FLOAT32
    computation can see the exact x * Scale + Bias."""
    x_np = np.asarray(x)
    cands = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)
    if scale_bias is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            cands = [ftz(c.astype(np.float32).astype(np.float64), np.float32) for c in cands]
    if half and scale_bias is not None:
        s, b = np.float16(sb_float(scale_bias[0])), np.float16(sb_float(scale_bias[1]))
        with np.errstate(over="ignore", invalid="ignore"):
            cands.append((x_np.astype(np.float16) * s + b).astype(np.float64))
    return cands


def _g(x, scale_bias):
    """g(x) in float64 (the fused candidate): where slopes are taken."""
    return _candidates(x, scale_bias, False)[0]


def _scale(scale_bias):
    return 1.0 if scale_bias is None else sb_float(scale_bias[0])


def unary(fn):
    """The reference of ``f(x) = fn(g(x))``."""
    def reference(x, scale_bias=None, half=False):
        with np.errstate(all="ignore"):
            return [fn(g) for g in _candidates(x, scale_bias, half)]
    reference.__name__ = fn.__name__
    return reference


def slope(derivative):
    """The partial derivative by x of fn(g(x)): fn'(g) * Scale."""
    def partial(x, scale_bias=None, half=False):
        with np.errstate(all="ignore"):
            return derivative(_g(x, scale_bias)) * _scale(scale_bias)
    return partial


# ---------------------------------------------------------------------------- derivatives (of g)
def _d_tan(g):
    return 1.0 / np.cos(g) ** 2


def _d_asin(g):
    return 1.0 / np.sqrt(1.0 - g * g)  # +inf at +-1; NaN outside [-1, 1] (g*g is exact in float64)


def _d_acos(g):
    return -1.0 / np.sqrt(1.0 - g * g)


def _d_atan(g):
    return 1.0 / (1.0 + g * g)


def _d_tanh(g):
    return 1.0 / np.cosh(g) ** 2


def _d_asinh(g):
    return 1.0 / np.sqrt(g * g + 1.0)


def _d_acosh(g):
    return np.where(g < 1.0, np.nan, 1.0 / np.sqrt(g * g - 1.0))  # +inf at 1


def _d_atanh(g):
    return np.where(np.abs(g) > 1.0, np.nan, 1.0 / (1.0 - g * g))  # +inf at +-1


# ---------------------------------------------------------------------------- ATAN_YX
def element_wise_atan_yx(a, b):
    # f(y, x) = atan2(y, x), ATensor the Y axis and BTensor the X axis; C99's atan2 (numpy's
    # float64 arctan2 is the C library's) for the special values, the origin included.
    with np.errstate(all="ignore"):
        return [np.arctan2(read(a), read(b))]


def atan_yx_slopes(a, b):
    # d/dy atan2(y, x) = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2) (squares of FLOAT32 values are
    # exact and in range in float64); 0 at the origin (dmljax's choice: the page leaves atan2
    # undefined there) and with an infinite operand (the limit).
    y, x = read(a), read(b)
    with np.errstate(all="ignore"):
        r2 = x * x + y * y
        dy, dx = x / r2, -y / r2
    flat = (r2 == 0) | (np.isinf(r2) & ~np.isnan(x) & ~np.isnan(y))
    return np.where(flat, 0.0, dy), np.where(flat, 0.0, dx)


# ---------------------------------------------------------------------------- the records' uses
def _sets(scale_bias):
    """No ScaleBias, and one (its Scale a power of two and its Bias exact, so that a fused and an
    unfused multiply-add give the same g and the reference slope is taken at the very g)."""
    return (Attrs(), Attrs({"scale_bias": scale_bias}, half={"scale_bias": scale_bias, "half": True}))


def _unary(fn, derivative, scale_bias, plain=Attrs()):
    attrs = (plain, *_sets(scale_bias)[1:])
    return Reference(unary(fn), attrs=attrs, grad=elementwise_vjp(slope(derivative)))


ATAN_PLAIN = Attrs(known_issues={"eager_equals_jit": (
    "XLA's CPU atan (chlo.atan, expanded through atan2) gives bits that depend on what it is "
    "fused with and on the array's length: the operator's own compile and op by op "
    "(jax.disable_jit) differ by 1 ULP on some elements of a 24-element vector, each within the "
    "budget (measured with jax 0.10.2; reported)")})


P = "DML_OPERATOR_ELEMENT_WISE_"

REFERENCES = {
    # Large arguments: g = 1024 x reaches |g| ~ 1e4, where range reduction is the hard part.
    P + "SIN": _unary(np.sin, np.cos, (1024.0, 0.0)),
    P + "COS": _unary(np.cos, lambda g: -np.sin(g), (1024.0, 0.0)),
    P + "TAN": _unary(np.tan, _d_tan, (1024.0, 0.0)),
    # Domain [-1, 1]: most of N(0, 3) * 0.25 + 0.125 falls inside.
    P + "ASIN": _unary(np.arcsin, _d_asin, (0.25, 0.125)),
    P + "ACOS": _unary(np.arccos, _d_acos, (0.25, 0.125)),
    P + "ATAN": _unary(np.arctan, _d_atan, (64.0, 0.5), ATAN_PLAIN),
    P + "ATAN_YX": Reference(element_wise_atan_yx, grad=elementwise_vjp(atan_yx_slopes)),
    # Up to |g| ~ 40: FLOAT16 overflows to inf above 11.8, FLOAT32 stays finite.
    P + "SINH": _unary(np.sinh, np.cosh, (4.0, 0.5)),
    P + "COSH": _unary(np.cosh, np.sinh, (4.0, 0.5)),
    P + "TANH": _unary(np.tanh, _d_tanh, (0.5, -0.25)),
    P + "ASINH": _unary(np.arcsinh, _d_asinh, (64.0, 0.5)),
    # Domain [1, inf): most of N(0, 3) * 0.5 + 2.5 falls inside.
    P + "ACOSH": _unary(np.arccosh, _d_acosh, (0.5, 2.5)),
    P + "ATANH": _unary(np.arctanh, _d_atanh, (0.25, 0.125)),
}
