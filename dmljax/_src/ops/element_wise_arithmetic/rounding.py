"""Element-wise sign and rounding operators (ABS, SIGN, CEIL, FLOOR, ROUND), of the
element_wise_arithmetic family: each page's record, with its formula right below it.

All five are math (FLOAT32 denormals read as signed zero, FLOAT16 computed in FLOAT32 and
rounded once), and all five are exact: an integer-valued result of a FLOAT16 or FLOAT32 value is
representable in that type, so rounding once changes nothing."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import (
    FLOAT32_FLOAT16,
    FLOAT32_FLOAT16_INT32_INT16_INT8,
    FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    DataType,
)
from dmljax._src.enums import RoundingMode
from dmljax._src.op import operator
from dmljax._src.ops.factories import (
    SCALE_BIAS,
    SUPPORT_FLOAT_MATH,
    elementwise,
    zero_slopes,
    unary_op,
)
from dmljax._src.spec import ParamSpec, SilentChoice

F32, F16 = DataType.FLOAT32, DataType.FLOAT16

_STEP_GRADIENT = ("dX = 0: the derivative of a step function, 0 between the jumps and taken as 0 "
                  "at them (where it does not exist) and for NaN, as jax.numpy's; a constant zero "
                  "that reads neither x nor dY (ops._families.zero_slopes)")


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ABS = unary_op(
    "ELEMENT_WISE_ABS",
    summary=("Computes the absolute value for each element of InputTensor, placing the result "
             "into the corresponding element of OutputTensor."),
    formula="f(x) = abs(x)",
    params=(SCALE_BIAS,),
    support=(
        ("4.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8),
        ("1.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=("dX = Scale * sign(g(x)) * dY, with sign(+-0) = 0: abs is x for x > 0 and -x for "
              "x < 0, and at the tie x = 0 neither side passes (strict comparisons; jax.grad of "
              "jnp.abs gives 1 there). NaN for a NaN g(x). Integer inputs: no gradient."),
    notes=("Floats: the sign bit cleared, so -0.0 gives +0.0, -inf gives inf and NaN stays NaN; a "
           "FLOAT32 denormal input reads as (signed) zero. Integers wrap around as two's "
           "complement hardware does: abs(INT_MIN) is INT_MIN (abs(-128) is -128 in INT8; the "
           "page is silent). An integer ScaleBias computes g(x) in FLOAT32 (FLOAT64 for INT64), "
           "truncated toward zero and saturated, as IDENTITY does."),
    silent=(
        SilentChoice(
            "ABS",
            "`abs(INT_MIN)` is INT_MIN (wraps); gradient 0 at ±0",
            "Two's complement; strict comparisons at the kink (jax.grad of jnp.abs gives 1)."),
    ),
)


@operator(ELEMENT_WISE_ABS)
def element_wise_abs(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_abs(np.array([-1.5, -0.0, 2.0, -np.inf], np.float32))
        Array([1.5, 0. , 2. , inf], dtype=float32)
        >>> dmljax.element_wise_abs(np.array([-5, 7, -128], np.int8))
        Array([   5,    7, -128], dtype=int8)
    """
    return elementwise(jnp.abs, input, half=allow_half_precision_computation, slopes=jnp.sign,
                       integer=jnp.abs, scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_SIGN = unary_op(
    "ELEMENT_WISE_SIGN",
    summary=("Returns a value representing the sign of each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula=("f(x) = -1, if x < 0\n"
             "        1, if x > 0\n"
             "        0, otherwise // This includes negative zero."),
    support=(
        ("4.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=("dX = 0: the derivative of a step function, 0 everywhere (taken as 0 at the jump "
              "x = 0 too; also 0 for NaN, whose forward value 0 is not NaN). Integer inputs: no "
              "gradient."),
    notes=("As the page's formula reads: +0.0 for -0.0 and +0.0 (\"0, otherwise\", which "
           "includes negative zero), and 0 for NaN, since NaN < 0 and NaN > 0 are both false (the "
           "formula's 'otherwise'; numpy's sign gives NaN there). A FLOAT32 denormal input reads "
           "as zero, so gives 0. Unsigned types give 0 or 1."),
    silent=(
        SilentChoice(
            "SIGN of NaN and ±0",
            "0 and +0",
            "The page's formula: \"-1 if x < 0; 1 if x > 0; 0, otherwise (this includes negative zero)\"."),
    ),
)


def _sign(x):
    # -1 if x < 0, 1 if x > 0, 0 otherwise: (x > 0) - (x < 0), which is 0 for +-0 and NaN.
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def _sign_float(x):
    # The same values chosen by two selects of constants: -1, 0 and 1 are exact in every float
    # type, so a FLOAT16 tensor gets them in FLOAT16 directly, the bits that FLOAT32 rounded once
    # gives (the widening, subtraction and narrowing made SIGN 2x jnp.sign's time on the CPU).
    one, zero = np.ones((), x.dtype), np.zeros((), x.dtype)
    return jnp.where(x > zero, one, jnp.where(x < zero, -one, zero))


@operator(ELEMENT_WISE_SIGN)
def element_wise_sign(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_sign(np.array([-2.5, -0.0, 0.0, 3.0, np.nan], np.float32))
        Array([-1.,  0.,  0.,  1.,  0.], dtype=float32)
        >>> dmljax.element_wise_sign(np.array([0, 7, 255], np.uint8))
        Array([0, 1, 1], dtype=uint8)
    """
    return elementwise(_sign_float, input, half=True, slopes=zero_slopes, integer=_sign,
                       float_reads=True, constant_values=True)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_CEIL = unary_op(
    "ELEMENT_WISE_CEIL",
    summary=("Computes the ceiling for each element of InputTensor, placing the result into the "
             "corresponding element of OutputTensor. The ceiling of x is the smallest integer that "
             "is greater than or equal to x."),
    formula="f(x) = ceil(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=_STEP_GRADIENT + ".",
    notes=("IEEE ceil: exact; the sign of a zero result is the input's (ceil(-0.5) is -0.0); "
           "+-inf and NaN pass through; values of magnitude 2^23 (FLOAT32) or 2^10 (FLOAT16) and "
           "above are already integers and are returned unchanged."),
    silent=(
        SilentChoice(
            "CEIL, FLOOR, ROUND, SIGN gradients",
            "a constant 0, at the jumps and for NaN too (it reads neither x nor dY)",
            "The derivative of a step; jax.numpy's rule; a computed `0 · dY` cost 1.2-3.2x jnp autodiff on the "
            "H100.",
            also=("ELEMENT_WISE_FLOOR", "ELEMENT_WISE_ROUND", "ELEMENT_WISE_SIGN")),
    ),
)


@operator(ELEMENT_WISE_CEIL)
def element_wise_ceil(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_ceil(np.array([-1.5, -0.5, 0.2, 2.0], np.float32))
        Array([-1., -0.,  1.,  2.], dtype=float32)
    """
    return elementwise(jnp.ceil, input, half=allow_half_precision_computation, slopes=zero_slopes,
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_FLOOR = unary_op(
    "ELEMENT_WISE_FLOOR",
    summary=("Computes the floor for each element of InputTensor, placing the result into the "
             "corresponding element of OutputTensor. The floor of x is the largest integer that is "
             "less than or equal to x."),
    formula="f(x) = floor(x)",
    params=(SCALE_BIAS,),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=_STEP_GRADIENT + ".",
    notes=("IEEE floor: exact; the sign of a zero result is the input's (floor(-0.0) is -0.0, "
           "floor(0.5) is +0.0); +-inf and NaN pass through; values of magnitude 2^23 (FLOAT32) "
           "or 2^10 (FLOAT16) and above are already integers and are returned unchanged."),
)


@operator(ELEMENT_WISE_FLOOR)
def element_wise_floor(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_floor(np.array([-1.5, -0.5, 0.2, 2.0], np.float32))
        Array([-2., -1.,  0.,  2.], dtype=float32)
    """
    return elementwise(jnp.floor, input, half=allow_half_precision_computation, slopes=zero_slopes,
                       scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ROUND = unary_op(
    "ELEMENT_WISE_ROUND",
    summary=("Rounds each element of InputTensor to an integer value, placing the result into the "
             "corresponding element of OutputTensor."),
    formula=("DML_ROUNDING_MODE_HALVES_TO_NEAREST_EVEN\n"
             "    f(x) = the integer nearest x; halfway values (0.5) to the nearest even integer\n"
             "DML_ROUNDING_MODE_TOWARD_ZERO\n"
             "    f(x) = trunc(x), the fractional part dropped\n"
             "DML_ROUNDING_MODE_TOWARD_INFINITY\n"
             "    f(x) = the integer nearest x; halfway values away from zero"),
    params=(
        ParamSpec("RoundingMode", "DML_ROUNDING_MODE", default=RoundingMode.HALVES_TO_NEAREST_EVEN,
                  enum=RoundingMode,
                  doc=("The direction to round towards: HALVES_TO_NEAREST_EVEN (to the nearest "
                       "integer, halfway values such as 0.5 to the nearest even integer), "
                       "TOWARD_ZERO (truncates the fractional part) or TOWARD_INFINITY (to the "
                       "nearest integer, halfway values away from zero).")),
    ),
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16),
        ("2.1", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=_STEP_GRADIENT + ".",
    notes=("RoundingMode defaults to HALVES_TO_NEAREST_EVEN (the enum's 0, what a zero-initialized desc holds, "
           "and IEEE's default rounding; the page gives no default). Exact in every mode, halves included; the "
           "sign of a zero result is the input's (round(-0.4) is -0.0 in every mode); +-inf and NaN pass "
           "through; values of magnitude 2^23 (FLOAT32) or 2^10 (FLOAT16) and above are already integers."),
    silent=(
        SilentChoice(
            "ROUND's modes",
            "the three DML_ROUNDING_MODE members (halves to nearest even, toward zero, halves away from zero); "
            "default HALVES_TO_NEAREST_EVEN (the enum's 0); a zero result keeps the input's sign (`round(-0.4) "
            "= -0.0`)",
            "DirectML has no \"up\" or \"down\" mode: CEIL and FLOOR are those."),
    ),
)

_ROUNDERS = {
    RoundingMode.HALVES_TO_NEAREST_EVEN: lambda g: lax.round(g, lax.RoundingMethod.TO_NEAREST_EVEN),
    RoundingMode.TOWARD_ZERO: jnp.trunc,
    RoundingMode.TOWARD_INFINITY: lambda g: lax.round(g, lax.RoundingMethod.AWAY_FROM_ZERO),
}


@operator(ELEMENT_WISE_ROUND)
def element_wise_round(input, *, rounding_mode, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.5, -1.75, -1.5, -1.25, 0.0, 1.25, 1.5, 1.75, 2.5], np.float32)
        >>> dmljax.element_wise_round(x)
        Array([-2., -2., -2., -1.,  0.,  1.,  2.,  2.,  2.], dtype=float32)
        >>> dmljax.element_wise_round(x, rounding_mode="TOWARD_ZERO")
        Array([-2., -1., -1., -1.,  0.,  1.,  1.,  1.,  2.], dtype=float32)
        >>> dmljax.element_wise_round(x, rounding_mode=dmljax.RoundingMode.TOWARD_INFINITY)
        Array([-3., -2., -2., -1.,  0.,  1.,  2.,  2.,  3.], dtype=float32)
    """
    rounder = _ROUNDERS[rounding_mode]

    def math(g):
        # The integer nearest g keeps g's sign, also when it is zero (round(-0.4) = -0.0): the
        # copysign makes that hold whatever sequence a backend lowers the rounding to.
        return jnp.copysign(rounder(g), g)

    return elementwise(math, input, half=allow_half_precision_computation, slopes=zero_slopes)

