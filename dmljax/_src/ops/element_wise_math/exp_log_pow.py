"""Element-wise math (powers, exponentials, logarithms, trigonometry): each page's record, with
its formula right below it."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, DataType,
)
from dmljax._src.errors import Violation
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.numerics import (
    apply_scale_bias, float32_as, float32_product, float_to_int, flush_denormals, load, pow_c99, store,
)
from dmljax._src.op import operator
from dmljax._src.ops.factories import (
    SUPPORT_FLOAT_MATH,
    SCALE_BIAS, elementwise, int_scale_bias, unary_op,
)
from dmljax._src.partition import along_leading_axes
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

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
              "Exponent > 1, +-inf for Exponent < 1 (sign by parity of Exponent - 1). "
              "g(x)^(Exponent - 1) is computed as g(x)^Exponent / g(x) where both are normal and "
              "finite, since Exponent - 1 rounded to float32 would cost up to |ln g| ULPs."),
    notes=("C99 pow special values (0^0 = 1, 0^-1 = inf, (-0)^-1 = -inf, 1^NaN = 1, NaN^0 = 1); "
           "an infinite Exponent counts as an even integer, as in C99; a negative base with a "
           "non-integral Exponent is NaN, -inf included (the page's rule, where C99 gives +inf)."),
    silent=(
        SilentChoice(
            "CONSTANT_POW of -inf with a non-integral Exponent",
            "NaN",
            "The page: negative bases give NaN for non-integral exponents (C99 would say +inf)."),
        SilentChoice(
            "CONSTANT_POW with an infinite Exponent",
            "treated as an even integer (`pow(-2, inf) = inf`, `pow(-1, ±inf) = 1`)",
            "C99's rule; the page is silent."),
        SilentChoice(
            "CONSTANT_POW gradient at g(x) = 0",
            "Exponent 0: 0; 1: Scale·dY; > 1: 0; < 1: ±inf (sign by the parity of Exponent − 1)",
            "`Exponent · g^(Exponent−1)` with the same pow rules; Exponent 0 is exactly 0 everywhere."),
    ),
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
    k = float32_as(float32_product(exponent, scale), x.dtype)
    # pow(g, Exponent - 1) as pow(g, Exponent) / g where both are normal and finite: Exponent - 1
    # rounded to float32 costs up to |ln g| * ulp(Exponent) (measured for POW: 17 FLOAT32 ULP at
    # -7.4); pow_c99(g, e1) keeps the special values (zeros, infinities, denormal results).
    tiny, inf = np.asarray(np.finfo(g.dtype).tiny, g.dtype), np.asarray(np.inf, g.dtype)
    plain = (jnp.abs(y) >= tiny) & (jnp.abs(y) < inf) & (jnp.abs(g) >= tiny) & (jnp.abs(g) < inf)
    below = jnp.where(plain, y / jnp.where(plain, g, jnp.ones_like(g)), pow_c99(g, e1))
    return y, flush_denormals(k * below) * t  # the slope is math: denormals flushed


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
           "The result is correctly rounded on CPU (0 ULP measured), 1 ULP on an H100; the FLOAT32 "
           "budget of 2 ULP is also the gradient's (a square root and a division)."
           " FLOAT16 without ScaleBias on CUDA: XLA's FLOAT16 sqrt (computed in FLOAT32 with the "
           "cheaper approximation FLOAT16 allows, rounded once), within 0.50 FLOAT16 ULP of "
           "float64 for all 65,536 inputs on an H100 (tests/gpu/half_precision.py); elsewhere "
           "the FLOAT32 sqrt rounded once."),
    silent=(
        SilentChoice(
            "Gradients at a singular point (SQRT and LOG at ±0, RECIP at ±0, ATANH/ASIN at ±1, ACOS at ±1, "
            "ACOSH at 1)",
            "the derivative's limit from the side where the function is defined (+inf, +inf, -inf, +inf, -inf, "
            "+inf); the product with dY is IEEE's (0 · inf = NaN, as in jax.numpy)",
            "No NaN made inside the formula, none from an unselected branch.",
            also=("ELEMENT_WISE_LOG", "ELEMENT_WISE_RECIP", "ELEMENT_WISE_ATANH", "ELEMENT_WISE_ASIN",
                  "ELEMENT_WISE_ACOS", "ELEMENT_WISE_ACOSH")),
    ),
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
                       scale_bias=scale_bias, half_native=True)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_EXP = unary_op(
    "ELEMENT_WISE_EXP",
    summary=("Applies the natural exponentiation function to each element of InputTensor, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(x) = exp(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 3, F16: 1},
    ulp_half=2,
    gradient=("dX = exp(g(x)) * Scale * dY: +inf where exp overflows (g(x) > 88.72 in FLOAT32, "
              "11.09 in FLOAT16), 0 at g(x) = -inf."),
    notes=("exp(+inf) = +inf, exp(-inf) = 0; overflow gives +inf (FLOAT16 tensors: the FLOAT32 "
           "result rounded once, so g(x) above about 11.09 gives +inf); results below FLOAT32's "
           "smallest normal are flushed to +0. Measured against the true value: 1 FLOAT32 ULP on "
           "CPU, 2 on an H100 (4M samples); the budget is 3."),
)


@operator(ELEMENT_WISE_EXP)
def element_wise_exp(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_exp(np.array([0.0, 1.0, -np.inf, 100.0], np.float32))
        Array([1.       , 2.7182817, 0.       ,       inf], dtype=float32)
    """
    # exp reads x (and x * Scale + Bias) through float operations and its result is one: on the
    # CPU the processor flushes both (XLA's CPU exp never returns a denormal: tests/ops/
    # element_wise_math checks every FLOAT32 input whose exp is one)
    return elementwise(jnp.exp, input, half=allow_half_precision_computation, slopes=jnp.exp,
                       scale_bias=scale_bias, float_reads=True, float_result=True)


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
           "\"indefinite\" for x < 0 (-inf included) is NaN. Measured: 1 FLOAT32 ULP on CPU and "
           "on an H100."
           " FLOAT16 without ScaleBias on CUDA: XLA's FLOAT16 log (computed in FLOAT32 with the "
           "cheaper approximation FLOAT16 allows, rounded once), within 0.51 FLOAT16 ULP of "
           "float64 for all 65,536 inputs on an H100 (tests/gpu/half_precision.py); elsewhere "
           "the FLOAT32 log rounded once."),
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
    # XLA's log reads its argument's bits (log(1e-40) gave -103.97): the input is flushed; its
    # result is a float operation's, which the CPU's processor flushes (float_result)
    return elementwise(jnp.log, input, half=allow_half_precision_computation, slopes=_log_slope,
                       scale_bias=scale_bias, half_native=True, float_result=True)


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
           "below 2; 6 ULP on an H100 over the same range), hence the FLOAT32 budget of 8 ULP."
           " FLOAT16 without ScaleBias on CUDA: XLA's FLOAT16 erf (computed in FLOAT32 with the "
           "cheaper approximation FLOAT16 allows, rounded once), within 0.50 FLOAT16 ULP of "
           "float64 for all 65,536 inputs on an H100 (tests/gpu/half_precision.py); elsewhere "
           "the FLOAT32 erf rounded once."),
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


def _erf(x):
    """lax.erf, split over the devices along every axis of a sharded input (XLA's partitioner
    would gather erf's whole operand onto each device: dmljax/_src/partition.py)."""
    return along_leading_axes(jax.lax.erf, x.ndim)(x)


@operator(ELEMENT_WISE_ERF)
def element_wise_erf(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_erf(np.array([0.0, 0.5, -np.inf], np.float32))
        Array([ 0.       ,  0.5204999, -1.       ], dtype=float32)
    """
    # XLA's erf reads x through float operations (a denormal x gives a zero of its sign) and
    # returns one's result (x times a polynomial near 0: normal for a normal x): on the CPU the
    # processor's flushes stand for both of DirectML's (tests/ops/element_wise_math checks them)
    return elementwise(_erf, input, half=allow_half_precision_computation, slopes=_erf_slope,
                       scale_bias=scale_bias, half_native=True, float_reads=True, float_result=True)


# --------------------------------------------------------------------------------------------
def _exponent_type_before_3_0(tensors, attrs, level=None):
    """"Until DML_FEATURE_LEVEL_3_0, ExponentTensor must match the type of InputTensor." Needs
    the level, which validate.py passes to an extra check only if it takes three arguments."""
    if level is None or level >= FeatureLevel.parse("3.0"):
        return []
    a, e = tensors.get("InputTensor"), tensors.get("ExponentTensor")
    if a is None or e is None or a.data_type is e.data_type:
        return []
    return [Violation(
        "InputTensor (argument `input`) and ExponentTensor (argument `exponent`)", "",
        f"have DataTypes {a.data_type.name}, {e.data_type.name}",
        "until DML_FEATURE_LEVEL_3_0 ExponentTensor must match the type of InputTensor",
        "cast explicitly, or pass feature_level='3.0' or newer")]


ELEMENT_WISE_POW = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_POW",
    summary=("Computes each element of InputTensor raised to the power of the corresponding "
             "element of ExponentTensor, placing the result into the corresponding element of "
             "OutputTensor. Negative bases are supported for exponents with integral values "
             "(though datatype can still be float), otherwise this operator returns NaN. When the "
             "input tensor and exponent tensor both have integral data type, this operator "
             "guarantees exact results."),
    formula="f(input, exponent) = pow(input, exponent)",
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("ExponentTensor", "input"),
             TensorSpec("OutputTensor", "output")),
    # "ExponentTensor, InputTensor, and OutputTensor must have the same DimensionCount and Sizes."
    # "InputTensor and OutputTensor must have the same DataType."
    constraints=(SameSizes(("ExponentTensor", "InputTensor", "OutputTensor")),
                 SameDataType(("InputTensor", "OutputTensor"))),
    support=(
        table("3.0", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
              ExponentTensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
              OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8)),
        table("1.0", InputTensor=("4", FLOAT32_FLOAT16), ExponentTensor=("4", FLOAT32_FLOAT16),
              OutputTensor=("4", FLOAT32_FLOAT16)),
    ),
    params=(SCALE_BIAS,),
    extra_checks=(_exponent_type_before_3_0,),
    in_place=True,
    ulp={F32: 4, F16: 1},
    ulp_half=4,
    gradient=("dInput = e * g^(e - 1) * Scale * dY with the pow rules (g = input * Scale + Bias): "
              "exactly 0 for e = 0; at g = 0: Scale*dY for e = 1, 0 for e > 1, +-inf for e < 1. "
              "dExponent = pow(g, e) * ln|g| * dY, exactly 0 where g = 0 or pow(g, e) = 0 (a FLOAT32 "
              "denormal pow(g, e) included, which is flushed; no NaN from 0 * -inf); for a negative base with an integral exponent this is the "
              "derivative of the real part of the complex power. Integer input or exponent "
              "tensors: no gradient (float0); an integer output passes none to a float exponent."),
    notes=("Float base: C99 pow special values with a tensor exponent (pow(x, 0) = 1 also for NaN x, pow(1, y) "
           "= 1 also for NaN y, pow(+-0, odd negative) = +-inf, pow(-1, +-inf) = 1, an infinite exponent "
           "counts as even), and the page's rule that a negative base (-inf included) with a non-integral "
           "exponent gives NaN. Integer base and exponent: exact, wrapping (two's complement) like MULTIPLY; a "
           "negative exponent gives 1 / b^|e| truncated toward zero: +-1 for |b| = 1, 0 for |b| > 1 and 0 for "
           "b = 0 (the family's integer division-by-zero choice). ScaleBias applies to the input (base) only; "
           "on an integer base it is computed in FLOAT32 and converted back first, as for the other integer "
           "operators. Until feature level 3.0 ExponentTensor's DataType must be InputTensor's. Measured: 1 "
           "FLOAT32 ULP on CPU and on an H100 (values), 3 ULP (gradients, CPU)."),
    silent=(
        SilentChoice(
            "POW, float base",
            "C99's special values with a tensor exponent (`pow(x, 0) = 1` also for NaN x, `pow(1, y) = 1` also "
            "for NaN y, infinite exponents count as even); a negative base (-inf included) with a non-integral "
            "exponent is NaN; an integer exponent's exact value decides parity (INT32/UINT32 beyond 2^24 split "
            "into two exact parts)",
            "The page's rule, C99 elsewhere."),
        SilentChoice(
            "POW, integers",
            "integer base and exponent: exact, wrapping like MULTIPLY; a negative exponent gives ±1 for |b| = "
            "1, else 0 (0 for b = 0); integer base with a float exponent: computed in FLOAT32, truncated "
            "toward zero and saturated, NaN to 0",
            "\"guarantees exact results\"; the integer division-by-zero choice."),
        SilentChoice(
            "POW gradient by the exponent",
            "`pow(g, e) · ln|g|`, exactly 0 where g = 0 or the result is 0 (a FLOAT32 denormal result counts "
            "as 0: it is flushed, on every backend); for a negative base with an integral exponent, the "
            "derivative of the real part of the complex power",
            "Finite where a real answer exists; never `0 · -inf`."),
    ),
)


def _split_exponent(e, cd):
    """An exponent tensor as what pow needs: (hi, lo, split, integral, odd), with
    e = hi + lo exactly in the compute dtype ``cd`` where ``split`` (lo is 0 elsewhere). lo,
    split and odd are None where every exponent is exact in ``cd`` (lax.pow then takes C99's
    parity from e itself); odd is e's exact parity where the exponent is split."""
    if jnp.issubdtype(e.dtype, jnp.integer):
        integral = jnp.ones(e.shape, bool)
        if np.iinfo(e.dtype).bits < 32:  # every value is exact in FLOAT32
            return e.astype(cd), None, None, integral, None
        odd = (e & np.asarray(1, e.dtype)) == 1
        big = (e >= 2**24) if not jnp.issubdtype(e.dtype, jnp.signedinteger) else (e >= 2**24) | (e <= -(2**24))
        lo_i = e & np.asarray(0xFF, e.dtype)  # 0..255; e - lo has its low 8 bits clear: exact
        hi_i = e - lo_i
        hi = jnp.where(big, hi_i, e).astype(cd)
        lo = jnp.where(big, lo_i, jnp.zeros_like(lo_i)).astype(cd)
        return hi, lo, big, integral, odd
    e = e.astype(cd)
    # C99: infinities are even integers (floor(+-inf) = +-inf); NaN is not integral
    return e, None, None, jnp.floor(e) == e, None


def _pow_parts(g, hi, lo, split, integral, odd, rounded=False):
    """pow(g, hi + lo) with the page's negative-base rule.

    One part (``lo`` None, every exponent exact in the compute type): ``lax.pow`` is C99's pow on
    every backend (the CPU's libm form and CUDA's powf: negative bases with integral exponents,
    pow(x, 0) = 1 also for NaN x, pow(1, y) = 1 also for NaN y, infinities counted as even), so
    only the page's rule that -inf with a non-integral exponent gives NaN is added (C99 gives
    +inf or +0 there). Two parts (INT32/UINT32 exponents beyond 2^24): |g|^hi * |g|^lo with the
    sign from the exact exponent's parity, and the 0 and 1 rules added.

    ``rounded``: ``hi`` is e - 1 rounded, which may be an integer where e - 1 is not (e = 1e-30
    gives -1, e = -1 - 2^-23 gives -2), and ``integral`` is e's: the rule then takes every negative
    base, not only -inf (a compare either way), so that NaN comes where pow(g, e) has it."""
    if lo is None:
        out = lax.pow(g, hi)
        bad = (g < 0) if rounded else (g == np.asarray(-np.inf, g.dtype))
        return jnp.where(bad & ~integral, jnp.full_like(g, np.nan), out)
    a = jnp.abs(g)
    mag = jnp.where(split, lax.pow(a, hi) * lax.pow(a, lo), lax.pow(a, hi))
    out = jnp.where(odd, jnp.copysign(mag, g), mag)
    return jnp.where((g < 0) & ~integral, jnp.full_like(g, np.nan), out)


def _pow_float_value(g, e, parts):
    hi, lo, split, integral, odd = parts
    out = _pow_parts(g, hi, lo, split, integral, odd)
    if lo is None:  # lax.pow has C99's pow(NaN, 0) = pow(1, NaN) = 1 already
        return out
    return jnp.where((e == 0) | (g == 1), jnp.ones_like(g), out)


def _less_one(e):
    """(e - 1 rounded, its rounding error ``lo``): e - 1 = em1 + lo exactly (Knuth's TwoSum: six
    additions, none a backend can fuse or reassociate). lo is 0 wherever e - 1 is exact, a
    fraction of an ULP of e - 1 below 2^p (p: the significand's bits), +-1 from there on (every
    e is even and e - 1 odd), NaN for an infinite or NaN e."""
    one = np.asarray(1, e.dtype)
    em1 = e - one
    back = em1 - e  # -1 as the sum took it
    return em1, (e - (em1 - back)) + (-one - back)


def _pow_less_one(g, e, integral, log_g):
    """pow(g, e - 1) with the page's rules, for the slope e * pow(g, e - 1) when e - 1 may round.

    pow(g, em1) (em1: e - 1 rounded) is off by the factor |g|^lo, lo = e - 1 - em1; rounding
    e - 1 would cost up to |ln g| * ulp(e) relative (17 FLOAT32 ULP measured at e = -7.4). Where
    pow(g, e - 1) is in range, |lo * ln|g|| <= 2^-p * |(e - 1) ln|g|| is below 2^-16, so the factor
    is 1 + lo * ln|g| to the type's rounding (the square's term is under 2^-33). A larger product
    (above 1/2) only arises where the power under- or overflows anyway: the factor is dropped
    there (as it is for NaN, from an infinite e, and for 0 * inf at g = inf), since any positive
    factor leaves 0 and inf as they are. Beyond 2^p, where lo = +-1, the odd power's sign is given
    back where g's sign bit is set (-0 included). No division: pow(g, e) / g takes more
    instructions in POW's forward+backward for half a rounding less (3 FLOAT32 ULP at most
    against float64 here, 2 there, on the CPU)."""
    em1, lo = _less_one(e)
    p = _pow_parts(g, em1, None, None, integral, None, rounded=True)
    corr = lo * log_g
    corr = jnp.where(jnp.abs(corr) <= np.asarray(0.5, g.dtype), corr, jnp.zeros_like(corr))
    p = p * (np.asarray(1, g.dtype) + corr)
    return jnp.where((jnp.abs(lo) == 1) & jnp.signbit(g), -p, p)


@functools.lru_cache(maxsize=None)
def _half_ln_abs_table() -> np.ndarray:
    """ln|v| of every FLOAT16 magnitude (indexed by its 15 low bits), the float64 logarithm
    rounded once to FLOAT32; 0 at zero, as ln|g| is taken there (the gradient's guard)."""
    v = np.arange(1 << 15, dtype=np.uint16).view(np.float16).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.log(v)
    t[0] = 0.0
    return t.astype(np.float32)


@jax.custom_jvp
def _half_ln_abs(g):
    """ln|g| for FLOAT32 ``g`` holding FLOAT16 values (a FLOAT16 base without ScaleBias), read
    from ``_half_ln_abs_table``: one gather from a 128 KB table where XLA's FLOAT32 log costs
    about 9% of POW FLOAT16's forward+backward on the H100; correctly rounded, where XLA's log
    is within an ULP. 0 at g = 0, like log(1)."""
    bits = lax.bitcast_convert_type(g.astype(np.float16), np.uint16) & np.uint16(0x7FFF)
    dims = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    return lax.gather(jnp.asarray(_half_ln_abs_table()), bits.astype(np.int32)[..., None], dims, (1,),
                      mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


@_half_ln_abs.defjvp
def _half_ln_abs_jvp(primals, tangents):  # d ln|g| / dg = 1 / g; 0 at g = 0, as for log(1)
    (g,), (t,) = primals, tangents
    return _half_ln_abs(g), jnp.where(g == 0, jnp.zeros_like(g), t / jnp.where(g == 0, jnp.ones_like(g), g))


_HALF_BELOW_RANGE = np.float32(-(2.0 ** 126))
"""-inf's stand-in in a FLOAT16 base's pow computed in FLOAT32 (``_pow_float``): its powers
round to FLOAT16 as -inf's do under the page's rule. Against an integral exponent: -inf (odd,
from 1), +inf (even, from 2), -0 (odd, from -1), +0 (even, from -2), 1 (0); +inf for +inf, +0 for
-inf; NaN for a non-integral exponent, as C99 gives every negative finite base (for -inf itself
it gives +inf or +0, which the page's rule turns to NaN)."""


@functools.partial(jax.custom_jvp, nondiff_argnums=(2, 3, 4))
def _pow_float(x, e, scale_bias, wide, half_exponent=False):
    g = apply_scale_bias(x, scale_bias)
    hi, lo, split, integral, odd = parts = _split_exponent(e, g.dtype)
    if wide and lo is None:
        # A FLOAT16 result: -inf's stand-in takes the page's rule from C99's negative bases, one
        # compare where the rule's test of the exponent costs a floor and three more (POW FLOAT16
        # is compute-bound on the H100).
        return lax.pow(jnp.where(g == np.float32(-np.inf), _HALF_BELOW_RANGE, g), hi)
    return _pow_float_value(g, e, parts)


@_pow_float.defjvp
def _pow_float_jvp(scale_bias, wide, half_exponent, primals, tangents):
    # half_exponent: the ExponentTensor is FLOAT16 or an integer of 16 bits or fewer, so that every
    # e - 1 is exact in FLOAT32 (|e| <= 65,535)
    (x, e), (tx, te) = primals, tangents
    g = apply_scale_bias(x, scale_bias)
    cd = g.dtype
    hi, lo, split, integral, odd = parts = _split_exponent(e, cd)
    y = _pow_float_value(g, e, parts)
    zero = jnp.zeros_like(g)
    log_g = None  # ln|g|, 0 at g = 0: the exponent's gradient's, and e - 1's correction's
    if jnp.issubdtype(e.dtype, jnp.floating):
        if wide and scale_bias is None:
            log_g = _half_ln_abs(g)
        else:
            a = jnp.abs(g)
            log_g = jnp.log(jnp.where(a == 0, jnp.ones_like(a), a))
    # d/dg: e * pow(g, e - 1); e - 1 has the other parity (an integer's exact e - 1)
    if lo is None:
        if not wide and not (half_exponent and cd == np.float32):
            e1 = _pow_less_one(g, hi, integral, log_g)
        else:
            # e - 1 is exact (a FLOAT16 or 16-bit integer exponent in FLOAT32) or, for a FLOAT16
            # base (``wide``), rounded by at most |ln pow(g, e)| * 2^-24 relative, under 2^-6
            # FLOAT16 ULP wherever the result is finite in FLOAT32
            e1 = _pow_parts(g, hi - np.asarray(1, cd), None, None, integral, None, rounded=not half_exponent)
            if not half_exponent:
                # beyond 2^24 every e is even and e - 1 rounds to an even float, so the odd
                # power's sign is given back where g's sign bit is set (-0 included)
                edge = np.asarray(2.0 ** (np.finfo(cd).nmant + 1), cd)
                inexact = (hi > edge) | (hi <= -edge)
                e1 = jnp.where(inexact & jnp.signbit(g), -e1, e1)
    else:  # e = hi + lo exactly in FLOAT32: both exponents of the product are exact
        e1 = _pow_parts(g, jnp.where(split, hi, hi - np.asarray(1, cd)),
                        lo - np.asarray(1, cd), split, integral, ~odd)
    ef = e.astype(cd) if lo is None else hi + lo  # lo is 0 outside split: exact there
    slope = jnp.where(e == 0, zero, ef * e1)
    scale = np.asarray(1.0 if scale_bias is None else scale_bias.scale, np.float32).astype(cd)
    # A FLOAT32 denormal slope is flushed (math); for a FLOAT16 base it would round to a zero
    # of the same sign in the FLOAT16 cotangent anyway (|dY| < 2^16), so ``wide`` skips it.
    flush = (lambda v: v) if wide else flush_denormals
    tangent = flush(slope * scale) * tx.astype(cd)
    if jnp.issubdtype(e.dtype, jnp.floating):
        # d/de: pow(g, e) * ln|g|; exactly 0 where g = 0 or pow(g, e) = 0 (pow(0, e) does not
        # vary with e), so 0 * -inf never makes a NaN. pow(g, e) is a FLOAT32 math result here, so
        # a denormal one is a zero (flushed), on the GPU as on the CPU, which flushes it itself.
        de = jnp.where((g == 0) | (jnp.abs(y) < np.asarray(np.finfo(cd).tiny, cd)), zero, y * log_g)
        # A FLOAT32 denormal de is flushed (math); where both base and exponent are FLOAT16 the
        # product with te (|te| < 2^16) rounds to a FLOAT16 zero of the same sign anyway.
        tangent = tangent + (de if wide and half_exponent else flush_denormals(de)) * te.astype(cd)
    return y, tangent


def _pow_int(b, e, dt: DataType):
    """b^e exactly in b's type, wrapping (repeated squaring over e's bits); e < 0 gives
    1 / b^|e| truncated toward zero: +-1 for |b| = 1, 0 otherwise (0 also for b = 0)."""
    one = jnp.ones_like(b)
    result, base = one, b
    # Modulo 2^n (b of n bits) only e's lowest n bits matter: an odd b has b^(2^(n-2)) = 1, and
    # an even b has b^e = 0 once e >= n.
    e_bits = np.iinfo(e.dtype).bits - (1 if jnp.issubdtype(e.dtype, jnp.signedinteger) else 0)
    n_bits = min(e_bits, np.iinfo(b.dtype).bits)
    for k in range(n_bits):
        bit = ((e >> np.asarray(k, e.dtype)) & np.asarray(1, e.dtype)) == 1
        result = jnp.where(bit, result * base, result)
        base = base * base
    if n_bits < e_bits:
        high = (e >> np.asarray(n_bits, e.dtype)) != 0
        even = (b & np.asarray(1, b.dtype)) == 0
        result = jnp.where(high & even, jnp.zeros_like(b), result)
    if not jnp.issubdtype(e.dtype, jnp.signedinteger):
        return result
    odd = (e & np.asarray(1, e.dtype)) == 1
    if dt.is_signed:
        neg = jnp.where(b == 1, one, jnp.where(b == -1, jnp.where(odd, -one, one), jnp.zeros_like(b)))
    else:
        neg = jnp.where(b == 1, one, jnp.zeros_like(b))
    return jnp.where(e < 0, neg, result)


@operator(ELEMENT_WISE_POW)
def element_wise_pow(input, exponent, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.0, 0.0, 4.0, -8.0], np.float32)
        >>> dmljax.element_wise_pow(x, np.array([3.0, -1.0, 0.5, 1 / 3], np.float32))
        Array([-8., inf,  2., nan], dtype=float32)
        >>> dmljax.element_wise_pow(np.array([3, -2, 2, 0], np.int8), np.array([5, 3, -1, -2], np.int32))
        Array([-13,  -8,   0,   0], dtype=int8)
    """
    dt = DataType.from_dtype(input.dtype)
    et = DataType.from_dtype(exponent.dtype)
    if dt.is_integer:
        b = int_scale_bias(input, scale_bias, dt)
        if et.is_integer:
            return _pow_int(b, exponent, dt)
        # computed in FLOAT32 (no gradient passes through an integer result)
        g = lax.stop_gradient(b.astype(np.float32))
        e = lax.stop_gradient(load(exponent))
        return float_to_int(_pow_float_value(g, e, _split_exponent(e, np.float32)), dt)
    half = allow_half_precision_computation and dt is DataType.FLOAT16 and et is DataType.FLOAT16
    x = load(input, half)
    e = load(exponent, half) if et.is_float else exponent
    if et.is_float:
        e = e.astype(x.dtype)
    half_exponent = et is DataType.FLOAT16 or (et.is_integer and np.iinfo(et.dtype).bits <= 16)
    return store(_pow_float(x, e, scale_bias, dt is DataType.FLOAT16 and not half, half_exponent), dt)
