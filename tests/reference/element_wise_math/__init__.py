"""float64 references for the element-wise math family, transcribed from the pages
(dml_element_wise_*_operator_desc.md in ../shared/spec/operators/) and SEMANTICS.md: powers,
exponentials and logarithms here, trigonometric and hyperbolic functions in trigonometry.py
(dmljax/_src/ops/element_wise_math.py and element_wise_trigonometry.py hold their records).
``REFERENCES`` is the whole family's."""

import math

import numpy as np

from tests.reference.element_wise_math import trigonometry
from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, elementwise_vjp, ftz, read, scale_bias_candidates


# ---------------------------------------------------------------------------------------------
def _pow(g, e):
    # pow(x, Exponent): "Negative bases are supported for integral exponents, otherwise this
    # operator returns NaN." Elsewhere C99 (Annex F) special values, which numpy's float64 power
    # follows: pow(x, 0) = 1, pow(1, y) = 1, pow(+-0, y < 0 odd) = +-inf, pow(-1, +-inf) = 1, ...
    with np.errstate(all="ignore"):
        out = np.power(g, e)
    if math.isnan(e) or not (math.isinf(e) or e == math.floor(e)):  # non-integral: negative base -> NaN
        out = np.where(g < 0, np.nan, out)
    return out


def element_wise_constant_pow(x, exponent, scale_bias=None):
    x_np = np.asarray(x)
    e = c_float(exponent)
    return [_pow(g, e) for g in scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)]


def constant_pow_slope(x, exponent, scale_bias=None):
    # d/dx pow(g(x), Exponent) = Exponent * pow(g(x), Exponent - 1) * Scale, with the same pow
    # rules; exactly 0 for Exponent 0.
    x_np = np.asarray(x)
    e = c_float(exponent)
    s = 1.0 if scale_bias is None else c_float(scale_bias[0])
    g = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)[0]
    if e == 0:
        return np.zeros(g.shape)
    with np.errstate(all="ignore"):
        return e * _pow(g, e - 1.0) * s


def _pow_near_kink(x, exponent, scale_bias=None):
    # pow and its derivative are steep (or singular) next to g(x) = 0.
    x_np = np.asarray(x)
    g = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)[0]
    return np.abs(g) < 1e-2


# ---------------------------------------------------------------------------------------------
# Square root, exponential, logarithm, erf: f(g) with g = x * Scale + Bias (fused or not), in
# float64; the derivative f'(g) * Scale at g, as the family's rules say: the limit from the
# defined side at a singular point, NaN outside the domain.

def _g(x, scale_bias, half=False):
    """g(x) candidates: fused and unfused in the compute type; with ``half`` (FLOAT16 computed in
    FLOAT16) also the multiply-add in FLOAT16, fused or not, Scale and Bias rounded to FLOAT16."""
    x_np = np.asarray(x)
    cands = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)
    if scale_bias is not None:
        # The fused candidate rounded once to the compute type (FLOAT32 for FLOAT32 and FLOAT16
        # tensors), which is where DirectML evaluates f: exp and erf amplify g's rounding.
        with np.errstate(all="ignore"):
            cands.insert(0, ftz(cands[0].astype(np.float32).astype(np.float64), np.float32))
    if half and scale_bias is not None and x_np.dtype == np.float16:
        s, b = np.float16(c_float(scale_bias[0])), np.float16(c_float(scale_bias[1]))
        with np.errstate(all="ignore"):
            x64 = x_np.astype(np.float64)
            cands.append((x64 * float(s) + float(b)).astype(np.float16).astype(np.float64))
            cands.append(((x_np * s).astype(np.float16) + b).astype(np.float16).astype(np.float64))
    return cands


def _unary(f):
    def reference(x, scale_bias=None, half=False):
        with np.errstate(all="ignore"):
            return [f(g) for g in _g(x, scale_bias, half)]
    return reference


def _slope(df):
    def slope(x, scale_bias=None, half=False):
        s = 1.0 if scale_bias is None else c_float(scale_bias[0])
        with np.errstate(all="ignore"):
            return df(_g(x, scale_bias)[0]) * s
    return slope


def _sqrt(g):
    return np.sqrt(g)  # IEEE: sqrt(-0) = -0, NaN below 0


def _sqrt_slope(g):
    # 1 / (2 sqrt(g)); +inf at +-0 (the limit from g > 0); NaN for g < 0.
    return np.where(g == 0, np.inf, 0.5 / np.sqrt(np.where(g == 0, 1.0, g)))


def _log(g):
    # "If x is negative, then this function returns indefinite. If x is 0, then this function
    # returns -INF" (+-0 both).
    return np.where(g == 0, -np.inf, np.log(np.where(g == 0, 1.0, g)))


def _log_slope(g):
    return np.where(g == 0, np.inf, np.where(g < 0, np.nan, 1.0 / np.where(g == 0, 1.0, g)))


def _erf(g):
    return np.array([math.erf(v) for v in np.ravel(g).tolist()]).reshape(np.shape(g))


def _erf_slope(g):
    return 2.0 / math.sqrt(math.pi) * np.exp(-(g * g))


def _near_zero(x, scale_bias=None, half=False):
    # 1/g and 1/sqrt(g) are steep next to g = 0.
    return np.abs(_g(x, scale_bias)[0]) < 1e-2


POSITIVE_SB = {"scale_bias": (0.5, 0.25)}  # keeps a positive input positive
ANY_SB = {"scale_bias": (0.75, -0.5)}


def _sb(kwargs):
    return Attrs(kwargs, half={**kwargs, "half": True})


ROOTS_EXP_LOG = {
    "DML_OPERATOR_ELEMENT_WISE_SQRT": Reference(
        _unary(_sqrt), attrs=(Attrs(), _sb(POSITIVE_SB)), roles={"InputTensor": "positive"},
        grad=elementwise_vjp(_slope(_sqrt_slope)), near_kink=_near_zero,
    ),
    "DML_OPERATOR_ELEMENT_WISE_EXP": Reference(
        _unary(np.exp), attrs=(Attrs(), _sb(ANY_SB)), grad=elementwise_vjp(_slope(np.exp)),
    ),
    "DML_OPERATOR_ELEMENT_WISE_LOG": Reference(
        _unary(_log), attrs=(Attrs(), _sb(POSITIVE_SB)), roles={"InputTensor": "positive"},
        grad=elementwise_vjp(_slope(_log_slope)), near_kink=_near_zero,
    ),
    "DML_OPERATOR_ELEMENT_WISE_ERF": Reference(
        _unary(_erf), attrs=(Attrs(), _sb(ANY_SB)), grad=elementwise_vjp(_slope(_erf_slope)),
    ),
}

POWERS = {
    "DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW": Reference(
        element_wise_constant_pow,
        attrs=(
            Attrs({"exponent": 3}, known_issues={"eager_equals_jit": (
                "XLA's algebraic simplifier turns pow(x, 3.0) with a constant exponent into "
                "x * x * x when the operator is compiled, while op by op (jax.disable_jit) pow "
                "runs: up to 1 FLOAT32 ULP apart, each within the budget (reported)")}),
            Attrs({"exponent": 0.5, "scale_bias": (2.0, 1.0)}),
        ),
        grad=elementwise_vjp(constant_pow_slope),
        near_kink=_pow_near_kink,
    ),
}

REFERENCES = {**ROOTS_EXP_LOG, **POWERS, **trigonometry.REFERENCES}
