"""Element-wise math (powers, exponentials, logarithms, trigonometry): each page's record, with
its formula right below it."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, DataType,
)
from dmljax._src.numerics import (
    apply_scale_bias, flush_denormals, load, pow_c99, store,
)
from dmljax._src.op import operator
from dmljax._src.ops._families import (
    SUPPORT_FLOAT_MATH,
    SCALE_BIAS, elementwise, unary_op,
)
from dmljax._src.spec import ParamSpec

F32, F16, F64 = DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64

# --------------------------------------------------------------------------------------------
ELEMENT_WISE_CONSTANT_POW = unary_op(
    "ELEMENT_WISE_CONSTANT_POW",
    summary=("Raises each element of InputTensor to the power of Exponent, placing the result "
             "into the corresponding element of OutputTensor. Negative bases are supported for "
             "integral exponents, otherwise this operator returns NaN."),
    formula="f(x) = pow(x, Exponent)",
    params=(
        ParamSpec("Exponent", "FLOAT", doc="The exponent that all inputs will be raised to."),
        SCALE_BIAS,
    ),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 4, F16: 1},
    ulp_half=4,
    gradient=("dX = Exponent * g(x)^(Exponent - 1) * Scale * dY, with the same pow rules; exactly 0 "
              "for Exponent 0 (also at g(x) = 0). At g(x) = 0: Scale*dY for Exponent 1, 0 for "
              "Exponent > 1, +-inf for Exponent < 1 (sign by parity of Exponent - 1)."),
    notes=("C99 pow special values (0^0 = 1, 0^-1 = inf, (-0)^-1 = -inf, 1^NaN = 1, NaN^0 = 1); "
           "an infinite Exponent counts as an even integer, as in C99; a negative base with a "
           "non-integral Exponent is NaN, -inf included (the page's rule, where C99 gives +inf)."),
)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _constant_pow(x, exponent, scale_bias):
    return pow_c99(apply_scale_bias(x, scale_bias), exponent)


@_constant_pow.defjvp
def _constant_pow_jvp(exponent, scale_bias, primals, tangents):
    (x,), (t,) = primals, tangents
    g = apply_scale_bias(x, scale_bias)
    y = pow_c99(g, exponent)
    if exponent == 0.0:
        return y, jnp.zeros_like(t)
    e1 = float(np.float32(exponent) - np.float32(1.0))
    scale = 1.0 if scale_bias is None else scale_bias.scale
    k = np.asarray(np.float32(exponent) * np.float32(scale), np.float32).astype(x.dtype)
    return y, flush_denormals(k * pow_c99(g, e1)) * t  # the slope is math: denormals flushed


@operator(ELEMENT_WISE_CONSTANT_POW)
def element_wise_constant_pow(input, *, exponent, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.0, 0.0, 3.0], np.float32)
        >>> dmljax.element_wise_constant_pow(x, exponent=3)
        Array([-8.,  0., 27.], dtype=float32)
        >>> dmljax.element_wise_constant_pow(x, exponent=0.5)
        Array([      nan, 0.       , 1.7320508], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    x = load(input, allow_half_precision_computation)
    return store(_constant_pow(x, exponent, scale_bias), dt)




# --------------------------------------------------------------------------------------------
ELEMENT_WISE_SQRT = unary_op(
    "ELEMENT_WISE_SQRT",
    summary=("Computes the square root of each element of InputTensor, placing the result into "
             "the corresponding element of OutputTensor."),
    formula="f(x) = sqrt(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 2, F16: 1},
    ulp_half=1,
    gradient=("dX = Scale / (2 * sqrt(g(x))) * dY; at g(x) = +-0 the limit from the defined "
              "side, +inf (also for -0); NaN for g(x) < 0 (where the result is NaN)."),
    notes=("IEEE sqrt: sqrt(-0) = -0, sqrt(+inf) = +inf, NaN for g(x) < 0 (-inf included). "
           "The result is correctly rounded on CPU (0 ULP measured); the FLOAT32 budget of 2 ULP "
           "is the gradient's (a square root and a division)."),
)


def _sqrt_slope(g):
    y = jnp.sqrt(g)
    # 1 / (2 sqrt(g)); at +-0 the limit from g > 0, +inf (0.5 / sqrt(-0) would be -inf).
    return jnp.where(g == 0, jnp.full_like(g, np.inf), np.asarray(0.5, g.dtype) / y)


@operator(ELEMENT_WISE_SQRT)
def element_wise_sqrt(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_sqrt(np.array([4.0, 2.0, -0.0, -1.0], np.float32))
        Array([ 2.       ,  1.4142135, -0.       ,        nan], dtype=float32)
    """
    return elementwise(jnp.sqrt, input, half=allow_half_precision_computation, slopes=_sqrt_slope,
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_EXP = unary_op(
    "ELEMENT_WISE_EXP",
    summary=("Applies the natural exponentiation function to each element of InputTensor, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(x) = exp(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    gradient=("dX = exp(g(x)) * Scale * dY: +inf where exp overflows (g(x) > 88.72 in FLOAT32, "
              "11.09 in FLOAT16), 0 at g(x) = -inf."),
    notes=("exp(+inf) = +inf, exp(-inf) = 0; overflow gives +inf (FLOAT16 tensors: the FLOAT32 "
           "result rounded once, so g(x) above about 11.09 gives +inf); results below FLOAT32's "
           "smallest normal are flushed to +0."),
)


@operator(ELEMENT_WISE_EXP)
def element_wise_exp(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_exp(np.array([0.0, 1.0, -np.inf, 100.0], np.float32))
        Array([1.       , 2.7182817, 0.       ,       inf], dtype=float32)
    """
    return elementwise(jnp.exp, input, half=allow_half_precision_computation, slopes=jnp.exp,
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_LOG = unary_op(
    "ELEMENT_WISE_LOG",
    summary=("Computes the base-e (natural) logarithm of each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor. If x is negative, then this "
             "function returns indefinite. If x is 0, then this function returns -INF."),
    formula="f(x) = ln(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    gradient=("dX = Scale / g(x) * dY; at g(x) = +-0 the limit from the defined side, +inf (also "
              "for -0); NaN for g(x) < 0 (where the result is NaN); 0 at g(x) = +inf."),
    notes=("ln(+-0) = -inf (the page: \"If x is 0\", so -0 too), ln(+inf) = +inf; the page's "
           "\"indefinite\" for x < 0 (-inf included) is NaN."),
)


def _log_slope(g):
    # 1 / g; +inf at +-0 (1 / -0 would be -inf); NaN outside the domain, as the result is.
    slope = jnp.where(g == 0, jnp.full_like(g, np.inf), np.asarray(1, g.dtype) / g)
    return jnp.where(g < 0, jnp.full_like(g, np.nan), slope)


@operator(ELEMENT_WISE_LOG)
def element_wise_log(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_log(np.array([1.0, np.e, 0.0, -0.0, -1.0], np.float32))
        Array([  0.,   1., -inf, -inf,  nan], dtype=float32)
    """
    return elementwise(jnp.log, input, half=allow_half_precision_computation, slopes=_log_slope,
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ERF = unary_op(
    "ELEMENT_WISE_ERF",
    summary=("Performs the Gaussian error function (erf) on each element of InputTensor, placing "
             "the result into the corresponding element of OutputTensor."),
    formula="f(x) = 2 / sqrt(pi) * integrate( i = 0 to x, exp(-(i^2)) )",
    params=(SCALE_BIAS,),
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16),
        ("2.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 8, F16: 1},
    ulp_half=2,
    gradient="dX = 2 / sqrt(pi) * exp(-g(x)^2) * Scale * dY (0 at +-inf).",
    notes=("erf(+-0) = +-0, erf(+-inf) = +-1. XLA's FLOAT32 erf is a rational approximation: "
           "checked against the true value (math.erf) on every FLOAT32 in [1e-3, 4.1] on CPU it "
           "is within 7 ULP (worst near x = 3.79, where erf(x) is just below 1; under 5 ULP "
           "below 2), hence the FLOAT32 budget of 8 ULP."),
)

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf_slope(g):
    # 2/sqrt(pi) * exp(-g^2), without g*g's rounding (which exp would amplify by g^2, up to 100
    # ULP): |g| = n + r with n a multiple of 1/64, so that n^2 is exact and
    # g^2 = n^2 + r * (|g| + n); exp(-g^2) = exp(-n^2) * exp(-r * (|g| + n)).
    a = jnp.minimum(jnp.abs(g), np.asarray(16, g.dtype))  # exp(-256) is 0; NaN stays NaN
    n = jnp.round(a * np.asarray(64, g.dtype)) * np.asarray(1 / 64, g.dtype)
    t = (a - n) * (a + n)
    return np.asarray(_TWO_OVER_SQRT_PI, g.dtype) * jnp.exp(-(n * n)) * jnp.exp(-t)


@operator(ELEMENT_WISE_ERF)
def element_wise_erf(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_erf(np.array([0.0, 0.5, -np.inf], np.float32))
        Array([ 0.       ,  0.5204999, -1.       ], dtype=float32)
    """
    return elementwise(jax.lax.erf, input, half=allow_half_precision_computation, slopes=_erf_slope,
                       scale_bias=scale_bias)
