"""Element-wise trigonometric and hyperbolic functions (SIN, COS, TAN, their inverses, ATAN_YX,
SINH, COSH, TANH and their inverses), of the element_wise_math family: each page's record, with
its formula right below it.

Every formula runs through ``elementwise`` (read and flush, ScaleBias, compute type, one
rounding, custom_jvp). The gradient of each is the derivative of the page's formula as a
function of g = x * Scale + Bias, written so that no NaN or overflow is made inside it: at the
domain's ends the one-sided limit (asin'(+-1) = +inf, acos'(+-1) = -inf, atanh'(+-1) = +inf,
acosh'(1) = +inf), outside the domain NaN (the forward value is NaN there too).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.numerics import expm1_nonpositive
from dmljax._src.op import operator
from dmljax._src.ops.factories import SCALE_BIAS, SUPPORT_FLOAT_MATH, binary_op, elementwise, unary_op
from dmljax._src.spec import SilentChoice

F32, F16 = DataType.FLOAT32, DataType.FLOAT16

SUPPORT_HYPERBOLIC = (
    ("3.0", "1 to 8", FLOAT32_FLOAT16),
    ("2.0", "4", FLOAT32_FLOAT16),
)
"""The table of the pages introduced at DML_FEATURE_LEVEL_2_0 (SINH, COSH, TANH, ASINH, ACOSH,
ATANH)."""

_SCALE_BIAS_TEXT = " Gradients are taken in g = x * Scale + Bias and times Scale."


def _c(value, like):
    """A constant in ``like``'s dtype (no Python scalar promotes or narrows the compute type)."""
    return np.asarray(value, like.dtype)


# Where a formula changes path with the compute type's range: e^a is finite below ``_EXP_SAFE``
# (FLOAT16 overflows e^a above 11.09, FLOAT32 above 88.72), and above ``_SQUARE_DROPS`` a*a + 1
# rounds to a*a (so 1 / sqrt(a*a + 1) is 1 / a within half an ULP, and a*a never overflows).
_EXP_SAFE = {np.dtype(np.float16): 10.0, np.dtype(np.float32): 88.0, np.dtype(np.float64): 708.0}
_SQUARE_DROPS = {np.dtype(np.float16): 2.0**6, np.dtype(np.float32): 2.0**13, np.dtype(np.float64): 2.0**28}


def _exp_halves(a):
    """(e^a / 2, e^-a / 2) for a >= 0 (or NaN), without overflow wherever e^a / 2 is finite: up
    to ``_EXP_SAFE`` from e = e^a as e / 2 (1 rounding more than exp's), above it from
    t = e^(a/2) as (t / 2) * t (a / 2 is exact); one exp for both. e^-a / 2 = 0.25 / p in both
    (below, e / 2 is exact, so 0.25 / (e / 2) is 0.5 / e rounded once): one division."""
    big = a > _c(_EXP_SAFE[np.dtype(a.dtype)], a)
    t = jnp.exp(jnp.where(big, a * _c(0.5, a), a))
    half_t = _c(0.5, a) * t
    p = jnp.where(big, half_t * t, half_t)
    return p, _c(0.25, a) / p


_SINH_TAYLOR = [1 / 6, 1 / 120, 1 / 5040, 1 / 362880, 1 / 39916800, 1 / 6227020800]


def _sinh(g):
    """sinh within 2 ULP in FLOAT32 and without overflow below 89.4 (XLA's expansion measured 24
    ULP): below |g| = 1 the Taylor series to g^13 (truncation under 1e-12 relative; sinh(-0) =
    -0, tiny g keep their precision), above (e^|g| - e^-|g|) / 2 signed by g."""
    a = jnp.abs(g)
    g2 = g * g
    p = jnp.full_like(g, _SINH_TAYLOR[-1])
    for c in reversed(_SINH_TAYLOR[:-1]):
        p = p * g2 + _c(c, g)
    series = g + g * g2 * p
    hp, hq = _exp_halves(a)
    return jnp.where(a < _c(1.0, g), series, jnp.copysign(hp - hq, g))


def _cosh(g):
    """cosh = e^|g| / 2 + e^-|g| / 2 (no cancellation), finite up to 89.4 in FLOAT32."""
    hp, hq = _exp_halves(jnp.abs(g))
    return hp + hq


def _tanh(g):
    """tanh(|g|) = -expm1(-2|g|) / (2 + expm1(-2|g|)), signed by g: one accurate expm1 of a
    non-positive argument (numerics.expm1_nonpositive, 1 ULP), no overflow, +-1 when saturated,
    tanh(-0) = -0."""
    em = expm1_nonpositive(_c(-2.0, g) * jnp.abs(g))
    return jnp.copysign(-em / (_c(2.0, g) + em), g)


def _tanh_f32(g):
    """tanh of a FLOAT32 compute value: on the CPU and on CUDA XLA's own tanh, elsewhere ``_tanh``.

    XLA's tanh (a rational approximation) is within TANH's 6-ULP budget of float64 for every
    FLOAT32 input (all 2^32 checked): 5 ULP on the CPU, 5.39 on an H200 (tests/gpu/semantics.py
    checks it there), at a third of ``_tanh``'s time on the CPU (whose exp, polynomial and division
    made ELEMENT_WISE_TANH 2-3x jnp.tanh's time); on CUDA ``_tanh``'s size kept XLA from fusing an
    LSTM step's gates with the split sum of its product (one more kernel a step: an LSTM of hidden
    1,024 in FLOAT16, 1.17x a lax.scan's time). Its relative error stays under 2.45 * 2^-23 on the
    CPU and 2.72 * 2^-23 on the H200, so SCALED_TANH's Alpha * tanh(Beta * x), with Beta * x's
    rounding (2^-24 relative, passed on at most once by tanh) and the product's, stays within
    2 * (2.72 + 0.5) + 0.5 = 6.94 < 7 ULP, its budget. It keeps tanh(-0) = -0 and gives +-1 at
    +-inf. Other platforms keep ``_tanh``, and so do other compute types (half precision)."""
    if g.dtype != np.float32:
        return _tanh(g)
    return lax.platform_dependent(g, cpu=jnp.tanh, cuda=jnp.tanh, default=_tanh)


def _sech2(g):
    """tanh'(g) = sech^2(g) = 4e / (1 + e)^2 with e = e^(-2|g|) <= 1, the exact equal of
    1 - tanh^2 without its cancellation (which loses every digit where tanh is near +-1); from
    |g| = 20 on, where 1 + e is 1, as (2h)^2 with h = e^-|g|, so that no FLOAT32 denormal appears
    inside while the result is normal (e would be one from |g| = 43.7 on). No overflow, 0 far out
    and at +-inf, never NaN except for NaN g."""
    a = jnp.abs(g)
    e = jnp.exp(_c(-2.0, g) * a)
    d = _c(1.0, g) + e
    near = (_c(4.0, g) * e) / (d * d)
    h2 = _c(2.0, g) * jnp.exp(-a)
    return jnp.where(a < _c(20.0, g), near, h2 * h2)


def _xla_suffices(x, half: bool) -> bool:
    """Whether XLA's own FLOAT32 sinh/cosh/tanh are accurate enough: for a FLOAT16 tensor
    computed in FLOAT32 (not in half precision). Their FLOAT32 errors (24/24/4 ULP measured, at
    most 1.5e-6 relative) are far below FLOAT16's half ULP (2.4e-4 relative), so the result
    rounded once to FLOAT16 stays within its 1-ULP budget, at XLA's speed (the exact-rounding
    formulas below made FLOAT16 SINH/COSH/TANH compute-bound on an H100: 1.3-1.7x jnp). FLOAT16
    inputs also keep g inside FLOAT32's range for them, except where FLOAT16 overflows anyway."""
    return np.dtype(x.dtype) == np.float16 and not half


def _one_minus_square(g):
    """1 - g^2 as (1 - g) * (1 + g): exact differences near +-1, where g * g would cancel."""
    return (_c(1.0, g) - g) * (_c(1.0, g) + g)


def _nan_where(cond, x):
    return jnp.where(cond, jnp.full_like(x, np.nan), x)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_SIN = unary_op(
    "ELEMENT_WISE_SIN",
    summary=("Computes the trigonometric sine of each element of InputTensor, placing the result "
             "into the corresponding element of OutputTensor."),
    formula="f(x) = sin(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    gradient="dX = cos(g(x)) * Scale * dY." + _SCALE_BIAS_TEXT,
    notes=("sin(+-inf) and sin(NaN) are NaN; sin(-0) = -0. The argument is reduced exactly over "
           "the whole FLOAT32 range (XLA's CPU sin measured 1 ULP up to 1e38)."),
)


@operator(ELEMENT_WISE_SIN)
def element_wise_sin(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_sin(np.array([0.0, 1.5707964, -3.0], np.float32))
        Array([ 0.     ,  1.     , -0.14112], dtype=float32)
    """
    return elementwise(jnp.sin, input, half=allow_half_precision_computation, slopes=jnp.cos,
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_COS = unary_op(
    "ELEMENT_WISE_COS",
    summary=("Computes the trigonometric cosine of each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(x) = cos(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    gradient="dX = -sin(g(x)) * Scale * dY." + _SCALE_BIAS_TEXT,
    notes=("cos(+-inf) and cos(NaN) are NaN. The argument is reduced exactly over the whole "
           "FLOAT32 range (XLA's CPU cos measured 1 ULP up to 1e38)."),
)


@operator(ELEMENT_WISE_COS)
def element_wise_cos(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_cos(np.array([0.0, 3.1415927, 1.0], np.float32))
        Array([ 1.       , -1.       ,  0.5403023], dtype=float32)
    """
    return elementwise(jnp.cos, input, half=allow_half_precision_computation,
                       slopes=lambda g: -jnp.sin(g), scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_TAN = unary_op(
    "ELEMENT_WISE_TAN",
    summary=("Computes the trigonometric tangent of each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(x) = tan(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 4, F16: 1},
    ulp_half=3,
    gradient=("dX = (1 + tan(g(x))^2) * Scale * dY (no FLOAT32 value is a pole: the slope is "
              "finite or overflows to +inf next to one)." + _SCALE_BIAS_TEXT),
    notes=("tan(+-inf) and tan(NaN) are NaN; tan(-0) = -0. The argument is reduced exactly over "
           "the whole FLOAT32 range (XLA's CPU tan measured 1 ULP up to 1e38)."),
)


@operator(ELEMENT_WISE_TAN)
def element_wise_tan(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_tan(np.array([0.0, 0.7853982, -1.0], np.float32))
        Array([ 0.       ,  1.       , -1.5574077], dtype=float32)
    """
    def slope(g):
        t = jnp.tan(g)
        return _c(1.0, g) + t * t

    return elementwise(jnp.tan, input, half=allow_half_precision_computation, slopes=slope,
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ASIN = unary_op(
    "ELEMENT_WISE_ASIN",
    summary=("Computes the arcsine for each element of InputTensor, placing the result into the "
             "corresponding element of OutputTensor."),
    formula="f(x) = asin(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 4, F16: 1},
    ulp_half=2,
    gradient=("dX = Scale * dY / sqrt((1 - g(x)) * (1 + g(x))): +inf at g(x) = +-1 (the limit "
              "from inside the domain), NaN outside [-1, 1]." + _SCALE_BIAS_TEXT),
    notes="NaN outside [-1, 1] (also +-inf); asin(-0) = -0, asin(+-1) = +-pi/2.",
)


@operator(ELEMENT_WISE_ASIN)
def element_wise_asin(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_asin(np.array([0.5, -1.0, 2.0], np.float32))
        Array([ 0.5235988, -1.5707964,        nan], dtype=float32)
    """
    return elementwise(jnp.arcsin, input, half=allow_half_precision_computation,
                       slopes=lambda g: _c(1.0, g) / jnp.sqrt(_one_minus_square(g)),
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ACOS = unary_op(
    "ELEMENT_WISE_ACOS",
    summary=("Computes the arccosine for each element of InputTensor, placing the result into the "
             "corresponding element of OutputTensor."),
    formula="f(x) = acos(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 4, F16: 1},
    ulp_half=2,
    gradient=("dX = -Scale * dY / sqrt((1 - g(x)) * (1 + g(x))): -inf at g(x) = +-1 (the limit "
              "from inside the domain), NaN outside [-1, 1]." + _SCALE_BIAS_TEXT),
    notes="NaN outside [-1, 1] (also +-inf); acos(1) = +0, acos(-1) = pi.",
)


@operator(ELEMENT_WISE_ACOS)
def element_wise_acos(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_acos(np.array([0.5, -1.0, 2.0], np.float32))
        Array([1.0471976, 3.1415927,       nan], dtype=float32)
    """
    return elementwise(jnp.arccos, input, half=allow_half_precision_computation,
                       slopes=lambda g: _c(-1.0, g) / jnp.sqrt(_one_minus_square(g)),
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ATAN = unary_op(
    "ELEMENT_WISE_ATAN",
    summary=("Computes the arctangent for each element of InputTensor, placing the result into "
             "the corresponding element of OutputTensor."),
    formula="f(x) = atan(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 4, F16: 1},
    ulp_half=3,
    gradient=("dX = Scale * dY / (1 + g(x)^2), as Scale * dY * r / (|g(x)| + r) with r = 1 / |g(x)| "
              "above |g(x)| = 1 (no square overflows); 0 at +-inf." + _SCALE_BIAS_TEXT),
    notes="atan(+-inf) = +-pi/2; atan(-0) = -0.",
)


def _atan_slope(g):
    """1 / (1 + g^2); above |g| = 1 as r / (|g| + r) with r = 1 / |g|, its exact equal, so that no
    square overflows where the slope is still representable (FLOAT16 computation from |g| = 256)."""
    a = jnp.abs(g)
    big = a > _c(1.0, g)
    r = _c(1.0, g) / jnp.where(big, a, jnp.ones_like(a))
    return jnp.where(big, r / (a + r), _c(1.0, g) / (_c(1.0, g) + g * g))


@operator(ELEMENT_WISE_ATAN)
def element_wise_atan(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_atan(np.array([0.5, -np.inf, 0.0], np.float32))
        Array([ 0.46364754, -1.5707964 ,  0.        ], dtype=float32)
    """
    return elementwise(jnp.arctan, input, half=allow_half_precision_computation,
                       slopes=_atan_slope, scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ATAN_YX = binary_op(
    "ELEMENT_WISE_ATAN_YX",
    summary=("Computes the 2-argument arctangent for each element of ATensor and BTensor, where "
             "ATensor is the Y-axis and BTensor is the X-axis, placing the result into the "
             "corresponding element of OutputTensor. This operator is undefined for the origin "
             "(that is, when ATensor and BTensor are both 0 for corresponding elements)."),
    formula="f(y, x) = atan2(y, x)",
    support=(("3.1", "1 to 8", FLOAT32_FLOAT16),),
    ulp={F32: 4, F16: 1},
    ulp_half=3,
    gradient=("With y = a, x = b and r^2 = x^2 + y^2: dA = x / r^2 * dY, dB = -y / r^2 * dY, "
              "computed on x and y scaled by an exact power of two that brings max(|x|, |y|) into "
              "[1, 2), so that no square overflows and no tiny one underflows to 0 / 0. At the origin (both +-0, where "
              "the page leaves atan2 undefined) both are 0 (dmljax's choice); with an infinite "
              "operand (and no NaN) both are 0, the limit."),
    notes=("a is the Y axis and b the X axis: element_wise_atan_yx(y, x). C99's atan2 special "
           "values, which the page leaves undefined at the origin: atan2(+-0, +0) = +-0, "
           "atan2(+-0, -0) = +-pi, atan2(+-0, x < 0) = +-pi, atan2(+-inf, +inf) = +-pi/4, "
           "atan2(+-inf, -inf) = +-3pi/4, atan2(+-inf, finite) = +-pi/2, atan2(+-y, +inf) = +-0, "
           "atan2(+-y, -inf) = +-pi; NaN in, NaN out. FLOAT32 denormal inputs are read as "
           "signed zeros (atan2(1e-40, -1) = pi)."),
    silent=(
        SilentChoice(
            "ATAN_YX at the origin",
            "value: C99 atan2 (`atan2(±0, +0) = ±0`, `atan2(±0, -0) = ±π`); gradient: 0",
            "The page calls the origin undefined; every backend's atan2 is C99's; the derivative has no limit "
            "there."),
    ),
)


_FLOAT_BITS = {np.dtype(np.float16): (np.uint16, 10, 15), np.dtype(np.float32): (np.uint32, 23, 127)}


def _power_of_two_halves(m):
    """For normal m > 0 with m = 2^e * (1 to 2): (2^n1, 2^n2) with n1 + n2 = -e, each normal, built
    from the bits (exact; XLA cannot reassociate them into an overflow or underflow)."""
    uint, mant, bias = _FLOAT_BITS[np.dtype(m.dtype)]
    biased = (lax.bitcast_convert_type(m, uint) >> np.asarray(mant, uint)).astype(np.int32)
    n = np.int32(bias) - biased  # -e
    n1 = n >> 1
    n2 = n - n1

    def pow2(k):
        return lax.bitcast_convert_type((k + np.int32(bias)).astype(uint) << np.asarray(mant, uint), m.dtype)

    return pow2(n1), pow2(n2)


def _atan_yx_slopes(y, x):
    # x / (x^2 + y^2) and -y / (x^2 + y^2) on operands scaled by an exact power of two so that
    # max(|x|, |y|) is in [1, 2): no square overflows or underflows. The scale is applied as two
    # multiplications by exact powers of two, never a chain of divisions (XLA rewrites
    # (a / b) / c into a / (b * c), which underflows b * c).
    m = jnp.maximum(jnp.abs(x), jnp.abs(y))
    finite = (m > 0) & (m < _c(np.inf, m))  # false at the origin, with an infinite operand, for NaN
    k1, k2 = _power_of_two_halves(jnp.where(finite, m, jnp.ones_like(m)))
    xs, ys = (x * k1) * k2, (y * k1) * k2
    r = xs * xs + ys * ys  # in [1, 8)
    dy = ((xs / r) * k1) * k2
    dx = ((-ys / r) * k1) * k2
    nan = jnp.isnan(x) | jnp.isnan(y)
    zero = jnp.zeros_like(m)
    dy = jnp.where(finite, dy, zero)
    dx = jnp.where(finite, dx, zero)
    return _nan_where(nan, dy), _nan_where(nan, dx)


@operator(ELEMENT_WISE_ATAN_YX)
def element_wise_atan_yx(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> y = np.array([1.0, 1.0, 0.0, -0.0], np.float32)
        >>> x = np.array([1.0, -1.0, -0.0, -1.0], np.float32)
        >>> dmljax.element_wise_atan_yx(y, x)
        Array([ 0.7853982,  2.3561945,  3.1415927, -3.1415927], dtype=float32)
    """
    return elementwise(jnp.arctan2, a, b, half=allow_half_precision_computation, slopes=_atan_yx_slopes)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_SINH = unary_op(
    "ELEMENT_WISE_SINH",
    summary=("Computes the hyperbolic sine of each element of InputTensor, placing the result "
             "into the corresponding element of OutputTensor."),
    formula="f(x) = sinh(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_HYPERBOLIC,
    ulp={F32: 4, F16: 1},
    ulp_half=3,
    gradient=("dX = cosh(g(x)) * Scale * dY (cosh as in COSH: +inf only where cosh itself "
              "overflows)." + _SCALE_BIAS_TEXT),
    notes=("Finite up to |g| = 89.4 in FLOAT32 (e^|g| is never formed where it would overflow "
           "first), +-inf beyond; sinh(-0) = -0. A series below |g| = 1, (e^|g| - e^-|g|) / 2 "
           "above (XLA's own sinh measured 24 ULP near 89)."),
    silent=(
        SilentChoice(
            "SINH, COSH, TANH, ASINH, ACOSH in FLOAT32",
            "computed without overflow or cancellation (sinh/cosh finite to 89.4, asinh(3e38) = 89.29, TANH's "
            "gradient sech² accurate where tanh rounds to 1); FLOAT16 uses XLA's FLOAT32 sinh/cosh/tanh, "
            "within FLOAT16's 1 ULP (checked on every FLOAT16)",
            "XLA's own FLOAT32 sinh/cosh measured 24 ULP; the page's `ln(x + sqrt(x*x + 1))` is a value, not "
            "an evaluation.",
            also=("ELEMENT_WISE_COSH", "ELEMENT_WISE_TANH", "ELEMENT_WISE_ASINH", "ELEMENT_WISE_ACOSH")),
    ),
)


@operator(ELEMENT_WISE_SINH)
def element_wise_sinh(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_sinh(np.array([1.0, -0.0, 89.0], np.float32))
        Array([ 1.1752012e+00, -0.0000000e+00,  2.2448064e+38], dtype=float32)
    """
    fast = _xla_suffices(input, allow_half_precision_computation)
    return elementwise(jnp.sinh if fast else _sinh, input, half=allow_half_precision_computation,
                       slopes=jnp.cosh if fast else _cosh, scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_COSH = unary_op(
    "ELEMENT_WISE_COSH",
    summary=("Computes the hyperbolic cosine of each element of InputTensor, placing the result "
             "into the corresponding element of OutputTensor."),
    formula="f(x) = cosh(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_HYPERBOLIC,
    ulp={F32: 4, F16: 1},
    ulp_half=3,
    gradient=("dX = sinh(g(x)) * Scale * dY (sinh as in SINH: +-inf only where sinh itself "
              "overflows; -0 at g = -0)." + _SCALE_BIAS_TEXT),
    notes=("Finite up to |g| = 89.4 in FLOAT32 (e^|g| is never formed where it would overflow "
           "first), +inf beyond (XLA's own cosh measured 24 ULP near 89)."),
)


@operator(ELEMENT_WISE_COSH)
def element_wise_cosh(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_cosh(np.array([1.0, 0.0, -89.0], np.float32))
        Array([1.5430806e+00, 1.0000000e+00, 2.2448064e+38], dtype=float32)
    """
    fast = _xla_suffices(input, allow_half_precision_computation)
    return elementwise(jnp.cosh if fast else _cosh, input, half=allow_half_precision_computation,
                       slopes=jnp.sinh if fast else _sinh, scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_TANH = unary_op(
    "ELEMENT_WISE_TANH",
    summary="Computes the hyperbolic tangent of element of InputTensor, placing the result into the corresponding element of OutputTensor.",
    formula="f(x) = tanh(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_HYPERBOLIC,
    ulp={F32: 6, F16: 1},
    ulp_half=4,
    gradient=("dX = sech(g(x))^2 * Scale * dY, the exact equal of 1 - tanh(g(x))^2, computed as "
              "4e / (1 + e)^2 with e = exp(-2|g(x)|) (from |g(x)| = 20 on (2h)^2, h = exp(-|g(x)|)): "
              "accurate where tanh is near +-1 (where "
              "1 - tanh^2 would cancel to 0 or to garbage), 0 (not NaN) far out and at +-inf."
              + _SCALE_BIAS_TEXT),
    notes=("tanh(+-inf) = +-1; tanh(-0) = -0; computed as -expm1(-2|g|) / (2 + expm1(-2|g|)), "
           "except in FLOAT32 on the CPU and on CUDA: there XLA's own tanh, within 5 ULP (CPU) "
           "and 5.39 ULP (H200) of float64 for every FLOAT32 input (all 2^32 checked), at a "
           "third of the formula's time on the CPU."
           " FLOAT16 without ScaleBias on CUDA: XLA's FLOAT16 tanh (computed in FLOAT32 with the "
           "cheaper approximation FLOAT16 allows, rounded once), within 0.50 FLOAT16 ULP of "
           "float64 for all 65,536 inputs on an H100 (tests/gpu/half_precision.py); elsewhere "
           "the FLOAT32 tanh rounded once."),
)


@operator(ELEMENT_WISE_TANH)
def element_wise_tanh(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_tanh(np.array([0.5, -np.inf, 20.0], np.float32))
        Array([ 0.46211717, -1.        ,  1.        ], dtype=float32)
    """
    fast = _xla_suffices(input, allow_half_precision_computation)
    return elementwise(jnp.tanh if fast else _tanh_f32, input, half=allow_half_precision_computation,
                       slopes=_sech2, scale_bias=scale_bias, half_native=fast,
                       float_reads=True)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ASINH = unary_op(
    "ELEMENT_WISE_ASINH",
    summary=("Computes the hyperbolic arcsine for each element of InputTensor, placing the result "
             "into the corresponding element of OutputTensor."),
    formula="f(x) = asinh(x) // ln(x + sqrt(x * x + 1))",
    params=(SCALE_BIAS,),
    support=SUPPORT_HYPERBOLIC,
    ulp={F32: 6, F16: 1},
    ulp_half=2,
    gradient=("dX = Scale * dY / sqrt(g(x)^2 + 1), as Scale * dY / |g(x)| where g(x)^2 + 1 "
              "rounds to g(x)^2 (so no square overflows); 0 at +-inf." + _SCALE_BIAS_TEXT),
    notes=("The page's ln(x + sqrt(x * x + 1)) is its value, not its evaluation: that literal "
           "expression overflows above 1.8e19 and cancels for negative x; asinh is finite for "
           "every finite FLOAT32 (asinh(3e38) = 89.29), odd (asinh(-0) = -0) and +-inf at +-inf."),
)


def _inverse_root_of_square_plus(g, minus: bool):
    """1 / sqrt(g^2 + 1) (ASINH's slope) or 1 / sqrt(g^2 - 1) (ACOSH's, as (g-1)(g+1)), with
    1 / |g| where the 1 no longer matters."""
    a = jnp.abs(g)
    big = a > _c(_SQUARE_DROPS[np.dtype(g.dtype)], g)
    small = jnp.where(big, jnp.ones_like(a), a)
    inner = (small - _c(1.0, g)) * (small + _c(1.0, g)) if minus else small * small + _c(1.0, g)
    return jnp.where(big, _c(1.0, g) / a, _c(1.0, g) / jnp.sqrt(inner))


@operator(ELEMENT_WISE_ASINH)
def element_wise_asinh(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_asinh(np.array([1.0, -3e38, -0.0], np.float32))
        Array([  0.88137364, -89.28999   ,  -0.        ], dtype=float32)
    """
    return elementwise(jnp.arcsinh, input, half=allow_half_precision_computation,
                       slopes=lambda g: _inverse_root_of_square_plus(g, minus=False),
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ACOSH = unary_op(
    "ELEMENT_WISE_ACOSH",
    summary=("Computes the hyperbolic arccosine for each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(x) = acosh(x) // ln(x + sqrt(x * x - 1))",
    params=(SCALE_BIAS,),
    support=SUPPORT_HYPERBOLIC,
    ulp={F32: 6, F16: 1},
    ulp_half=3,
    gradient=("dX = Scale * dY / sqrt((g(x) - 1) * (g(x) + 1)): +inf at g(x) = 1 (the limit from "
              "inside the domain), Scale * dY / g(x) where the 1 no longer matters (no square "
              "overflows), 0 at +inf, NaN below 1." + _SCALE_BIAS_TEXT),
    notes=("NaN below 1 (also -inf); acosh(1) = +0, acosh(+inf) = +inf. The page's "
           "ln(x + sqrt(x * x - 1)) is its value, not its evaluation: that literal expression "
           "overflows above 1.8e19, while acosh(3e38) = 89.29."),
)


@operator(ELEMENT_WISE_ACOSH)
def element_wise_acosh(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_acosh(np.array([1.0, 2.0, 3e38, 0.5], np.float32))
        Array([ 0.      ,  1.316958, 89.28999 ,       nan], dtype=float32)
    """
    def slope(g):
        return _nan_where(g < _c(1.0, g), _inverse_root_of_square_plus(g, minus=True))

    return elementwise(jnp.arccosh, input, half=allow_half_precision_computation, slopes=slope,
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ATANH = unary_op(
    "ELEMENT_WISE_ATANH",
    summary=("Computes the hyperbolic arctangent for each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(x) = atanh(x) // ln((1 + x) / (1 - x)) / 2",
    params=(SCALE_BIAS,),
    support=SUPPORT_HYPERBOLIC,
    ulp={F32: 6, F16: 1},
    ulp_half=3,
    gradient=("dX = Scale * dY / ((1 - g(x)) * (1 + g(x))): +inf at g(x) = +-1 (the limit from "
              "inside the domain), NaN outside [-1, 1]." + _SCALE_BIAS_TEXT),
    notes="atanh(+-1) = +-inf; NaN outside [-1, 1] (also +-inf); atanh(-0) = -0.",
)


@operator(ELEMENT_WISE_ATANH)
def element_wise_atanh(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_atanh(np.array([0.5, -1.0, 1.5], np.float32))
        Array([0.54930615,       -inf,        nan], dtype=float32)
    """
    def slope(g):
        return _nan_where(jnp.abs(g) > _c(1.0, g), _c(1.0, g) / _one_minus_square(g))

    return elementwise(jnp.arctanh, input, half=allow_half_precision_computation, slopes=slope,
                       scale_bias=scale_bias)
