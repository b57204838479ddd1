"""Element-wise operators: each page's record, with its formula right below it."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src import fused
from dmljax._src.dtypes import DataType
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.numerics import (
    apply_scale_bias, attr_as, float_to_int, flush_denormals, is_nan, load, max_num, min_num, pow_c99,
    store,
)
from dmljax._src.op import operator
from dmljax._src.ops.families import (
    BINARY_CONSTRAINTS, BINARY_TENSORS, UNARY_CONSTRAINTS, UNARY_TENSORS, binary_table, unary_table,
)
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, TensorSpec, table

FL = FeatureLevel
F32, F16 = DataType.FLOAT32, DataType.FLOAT16
SCALE_BIAS = ParamSpec(
    "ScaleBias", "DML_SCALE_BIAS", default=None, nullable=True,
    doc="Optional g(x) = x * Scale + Bias applied to each input element first.")

# --------------------------------------------------------------------------------------------
ELEMENT_WISE_IF = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_IF",
    value=88,
    page="dml_element_wise_if_operator_desc.md",
    introduced=FL.FL_2_0,
    summary=("Selects elements either from ATensor or BTensor, depending on the value of the "
             "corresponding element in ConditionTensor. Non-zero elements of ConditionTensor "
             "select from ATensor, while zero-valued elements select from BTensor."),
    formula="f(cond, a, b) = a, if cond != 0\n                b, otherwise",
    tensors=(
        TensorSpec("ConditionTensor", "input"),
        TensorSpec("ATensor", "input"),
        TensorSpec("BTensor", "input"),
        TensorSpec("OutputTensor", "output"),
    ),
    support=(
        table("5.0",
              ConditionTensor=("1 to 8", "UINT8"),
              ATensor=("1 to 8", "FLOAT64, FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
              BTensor=("1 to 8", "FLOAT64, FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
              OutputTensor=("1 to 8", "FLOAT64, FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8")),
        table("3.0",
              ConditionTensor=("1 to 8", "UINT8"),
              ATensor=("1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
              BTensor=("1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
              OutputTensor=("1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8")),
        table("2.0",
              ConditionTensor=("4", "UINT8"),
              ATensor=("4", "FLOAT16"),
              BTensor=("4", "FLOAT16"),
              OutputTensor=("4", "FLOAT16")),
    ),
    constraints=(
        # "ATensor, BTensor, ConditionTensor, and OutputTensor must have the same DimensionCount and Sizes."
        SameSizes(("ConditionTensor", "ATensor", "BTensor", "OutputTensor")),
        # "ATensor, BTensor, and OutputTensor must have the same DataType."
        SameDataType(("ATensor", "BTensor", "OutputTensor")),
    ),
    gradient=("dY goes to `a` where the condition is non-zero and to `b` elsewhere (zeros on "
              "the other side); the UINT8 condition and integer inputs get no gradient (float0)."),
    math=False,
    notes="Selection: the bits of the selected values are kept (NaN payloads, -0, denormals).",
)


@operator(ELEMENT_WISE_IF)
def element_wise_if(condition, a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> cond = np.array([[1, 0], [1, 1]], np.uint8)
        >>> a = np.array([[1, 2], [3, 4]], np.float32)
        >>> b = np.array([[9, 8], [7, 6]], np.float32)
        >>> dmljax.element_wise_if(cond, a, b)
        Array([[1., 8.],
               [3., 4.]], dtype=float32)
    """
    return lax.select(condition != 0, a, b)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_MULTIPLY = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_MULTIPLY",
    value=24,
    page="dml_element_wise_multiply_operator_desc.md",
    introduced=FL.FL_1_0,
    summary=("Computes the product of each pair of corresponding elements of the input tensors, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(a, b) = a * b",
    tensors=BINARY_TENSORS,
    support=(
        binary_table("5.1", "1 to 8", "FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
        binary_table("4.1", "1 to 8", "FLOAT32, FLOAT16, INT64, INT32, UINT64, UINT32"),
        binary_table("3.0", "1 to 8", "FLOAT32, FLOAT16, INT32, UINT32"),
        binary_table("2.1", "4 to 5", "FLOAT32, FLOAT16, INT32, UINT32"),
        binary_table("1.0", "4 to 5", "FLOAT32, FLOAT16"),
    ),
    constraints=BINARY_CONSTRAINTS,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dA = b * dY, dB = a * dY (integer inputs: no gradient).",
    in_place=True,
    notes="Integer products wrap around (two's complement), as integer hardware does.",
)


@operator(ELEMENT_WISE_MULTIPLY)
def element_wise_multiply(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_multiply(np.array([1.5, -2.0], np.float32), np.array([2.0, 3.0], np.float32))
        Array([ 3., -6.], dtype=float32)
    """
    dt = DataType.from_dtype(a.dtype)
    if dt.is_integer:
        return a * b
    half = allow_half_precision_computation
    return store(load(a, half) * load(b, half), dt)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_LOGICAL_LESS_THAN = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN",
    value=17,
    page="dml_element_wise_logical_less_than_operator_desc.md",
    introduced=FL.FL_1_0,
    summary=("Performs a logical less than on each pair of corresponding elements of the input "
             "tensors, placing the result (1 for true, 0 for false) into the corresponding "
             "element of OutputTensor."),
    formula="f(a, b) = (a < b)",
    tensors=(
        TensorSpec("ATensor", "input"),
        TensorSpec("BTensor", "input"),
        TensorSpec("OutputTensor", "output", default_data_type=DataType.UINT8),
    ),
    support=(
        table("4.1",
              ATensor=("1 to 8", "FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
              BTensor=("1 to 8", "FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
              OutputTensor=("1 to 8", "UINT32, UINT8")),
        table("3.0",
              ATensor=("1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
              BTensor=("1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
              OutputTensor=("1 to 8", "UINT32, UINT8")),
        table("2.1",
              ATensor=("4", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
              BTensor=("4", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
              OutputTensor=("4", "UINT32, UINT8")),
        table("2.0",
              ATensor=("4", "FLOAT32, FLOAT16"),
              BTensor=("4", "FLOAT32, FLOAT16"),
              OutputTensor=("4", "UINT32, UINT8")),
        table("1.0",
              ATensor=("4", "FLOAT32, FLOAT16"),
              BTensor=("4", "FLOAT32, FLOAT16"),
              OutputTensor=("4", "UINT32")),
    ),
    constraints=(
        # "ATensor, BTensor, and OutputTensor must have the same DimensionCount and Sizes."
        SameSizes(("ATensor", "BTensor", "OutputTensor")),
        # "ATensor and BTensor must have the same DataType."
        SameDataType(("ATensor", "BTensor")),
    ),
    gradient="None: the output is an integer tensor (its cotangent is float0).",
    math=False,
    notes="FLOAT32 denormal inputs compare as zero; NaN compares false.",
)


@operator(ELEMENT_WISE_LOGICAL_LESS_THAN)
def element_wise_logical_less_than(a, b, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([1, 5, 3], np.int32), np.array([2, 5, 1], np.int32)
        >>> dmljax.element_wise_logical_less_than(a, b)
        Array([1, 0, 0], dtype=uint8)
        >>> dmljax.element_wise_logical_less_than(a, b, output_data_type="UINT32")
        Array([1, 0, 0], dtype=uint32)
    """
    return (load(a) < load(b)).astype(output_data_type.dtype)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_THRESHOLD = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_THRESHOLD",
    value=32,
    page="dml_element_wise_threshold_operator_desc.md",
    introduced=FL.FL_1_0,
    summary=("Replaces all elements of InputTensor below the given threshold, Min, with Min. "
             "Results are placed into the corresponding element of OutputTensor."),
    formula="f(x) = max(x, Min)",
    tensors=UNARY_TENSORS,
    params=(
        ParamSpec("Min", "FLOAT", doc="The minimum value, below which the operator replaces the "
                  "value with Min.", converted_to="InputTensor"),
        SCALE_BIAS,
    ),
    support=(
        unary_table("3.0", "1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
        unary_table("2.1", "4", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
        unary_table("1.0", "4", "FLOAT32, FLOAT16"),
    ),
    constraints=UNARY_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient=("dX = Scale * (g(x) > Min ? dY : 0): nothing passes at a tie or for NaN input "
              "(a NaN Min passes everything, as the forward pass returns g(x) then)."),
    in_place=True,
    notes=("max follows IEEE maxNum (THRESHOLD(NaN) = Min; a tie returns Min). On integer "
           "tensors Min is truncated toward zero and saturated to the type; with a ScaleBias, "
           "g(x) is computed in FLOAT32 and converted back the same way."),
)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _threshold_float(x, m, scale_bias):
    return max_num(apply_scale_bias(x, scale_bias), m)


@_threshold_float.defjvp
def _threshold_float_jvp(m, scale_bias, primals, tangents):
    (x,), (t,) = primals, tangents
    g = apply_scale_bias(x, scale_bias)
    passes = jnp.ones(g.shape, bool) if math.isnan(m) else (g > m) & ~is_nan(g)
    scale = 1.0 if scale_bias is None else scale_bias.scale
    dt = t * np.asarray(scale, np.float32).astype(t.dtype)
    return max_num(g, m), jnp.where(passes, dt, jnp.zeros_like(dt))


@operator(ELEMENT_WISE_THRESHOLD)
def element_wise_threshold(input, *, min, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.0, 0.5, np.nan, 3.0], np.float32)
        >>> dmljax.element_wise_threshold(x, min=0.0)
        Array([0. , 0.5, 0. , 3. ], dtype=float32)
        >>> dmljax.element_wise_threshold(x, min=0.0, scale_bias=(2.0, 1.0))
        Array([0., 2., 0., 7.], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    if dt.is_integer:
        g = input
        if scale_bias is not None:
            g = float_to_int(apply_scale_bias(input.astype(np.float32), scale_bias), dt)
        return max_num(g, attr_as(min, dt))
    x = load(input, allow_half_precision_computation)
    return store(_threshold_float(x, attr_as(min, dt, x.dtype).item(), scale_bias), dt)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_CONSTANT_POW = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW",
    value=26,
    page="dml_element_wise_constant_pow_operator_desc.md",
    introduced=FL.FL_1_0,
    summary=("Raises each element of InputTensor to the power of Exponent, placing the result "
             "into the corresponding element of OutputTensor. Negative bases are supported for "
             "integral exponents, otherwise this operator returns NaN."),
    formula="f(x) = pow(x, Exponent)",
    tensors=UNARY_TENSORS,
    params=(
        ParamSpec("Exponent", "FLOAT", doc="The exponent that all inputs will be raised to."),
        SCALE_BIAS,
    ),
    support=(
        unary_table("3.0", "1 to 8", "FLOAT32, FLOAT16"),
        unary_table("1.0", "4", "FLOAT32, FLOAT16"),
    ),
    constraints=UNARY_CONSTRAINTS,
    ulp={F32: 4, F16: 1},
    ulp_half=4,
    gradient=("dX = Exponent * g(x)^(Exponent - 1) * Scale * dY, with the same pow rules; exactly 0 "
              "for Exponent 0 (also at g(x) = 0). At g(x) = 0: Scale*dY for Exponent 1, 0 for "
              "Exponent > 1, +-inf for Exponent < 1 (sign by parity of Exponent - 1)."),
    in_place=True,
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
ELEMENT_WISE_MODULUS_FLOOR = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR",
    value=102,
    page="dml_element_wise_modulus_floor_operator_desc.md",
    introduced=FL.FL_2_1,
    summary=("Computes the modulus, with the same results as the Python modulus, for each pair of "
             "corresponding elements from the input tensors. Because the quotient is rounded "
             "towards -inf, the result will have the same sign as the divisor."),
    formula="f(a, b) = a - (b * floor(a / b))",
    tensors=BINARY_TENSORS,
    support=(
        binary_table("6.0", "1 to 8", "FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
        binary_table("3.0", "1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
        binary_table("2.1", "4", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
    ),
    constraints=BINARY_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient="dA = dY, dB = -floor(a / b) * dY (integer inputs: no gradient).",
    in_place=True,
    notes=("Floats give Python's a % b: computed from the exact fmod, so large quotients stay "
           "accurate; the sign of a zero result is the divisor's; a zero divisor gives NaN; "
           "+-inf divisors give a, or +-inf where the signs differ. Integers: a zero divisor "
           "gives 0 (dmljax's choice), INT_MIN % -1 is 0; neither can crash the process."),
)


@jax.custom_jvp
def _modulus_floor_float(a, b):
    # C fmod: exact, sign of a. A FLOAT32 denormal remainder is flushed like any math result
    # (XLA's CPU backend does so by itself, its GPU backend does not).
    r = flush_denormals(lax.rem(a, b))
    wrong_side = (r != 0) & ((r < 0) != (b < 0))
    r = jnp.where(wrong_side, r + b, r)
    return jnp.where(r == 0, jnp.copysign(jnp.zeros_like(r), b), r)


@_modulus_floor_float.defjvp
def _modulus_floor_float_jvp(primals, tangents):
    (a, b), (ta, tb) = primals, tangents
    return _modulus_floor_float(a, b), ta - jnp.floor(a / b) * tb


def _modulus_floor_int(a, b, signed: bool):
    # b == 0 is undefined in DirectML and b == -1 overflows for INT_MIN; both give 0 here, and
    # the divisor XLA sees is never 0 (XLA raises SIGFPE for a constant zero divisor under jit).
    one = jnp.ones_like(b)
    guard = (b == 0) | (b == -1) if signed else (b == 0)
    safe = jnp.where(guard, one, b)
    r = lax.rem(a, safe)
    if signed:
        r = jnp.where((r != 0) & ((r < 0) != (safe < 0)), r + safe, r)
    return r


@operator(ELEMENT_WISE_MODULUS_FLOOR)
def element_wise_modulus_floor(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([-7.0, 7.0, -4.0, 1e9], np.float32)
        >>> b = np.array([3.0, -3.0, 2.0, np.pi], np.float32)
        >>> dmljax.element_wise_modulus_floor(a, b)
        Array([ 2.      , -2.      ,  0.      ,  1.024195], dtype=float32)
        >>> dmljax.element_wise_modulus_floor(np.array([-7, 7, 5], np.int32), np.array([3, -3, 0], np.int32))
        Array([ 2, -2,  0], dtype=int32)
    """
    dt = DataType.from_dtype(a.dtype)
    if dt.is_integer:
        return _modulus_floor_int(a, b, dt.is_signed)
    half = allow_half_precision_computation
    return store(_modulus_floor_float(load(a, half), load(b, half)), dt)


# ============================================================================================
# IDENTITY, ADD, ADD1, CLIP, CLIP1.
#
# Float math runs inside a custom_jvp that covers load and store too, so that the gradient is
# the derivative of the page's formula (taken on the branch the forward pass selects), not of
# dmljax's FLOAT32 denormal flushing.

F64 = DataType.FLOAT64


def _scale_of(scale_bias, dtype) -> np.generic:
    return np.asarray(1.0 if scale_bias is None else scale_bias.scale, np.float32).astype(dtype)[()]


def _int_scale_bias(x: jnp.ndarray, scale_bias, dt: DataType) -> jnp.ndarray:
    """g(x) = x * Scale + Bias on an integer tensor: computed in FLOAT32 (FLOAT64 for the 64-bit
    types, so that their values up to 2**53 survive) and converted back by truncation toward
    zero, saturated; NaN (from an infinite Scale times 0) gives 0. As THRESHOLD does."""
    if scale_bias is None:
        return x
    cd = np.float64 if dt.needs_x64 else np.float32
    return float_to_int(apply_scale_bias(x.astype(cd), scale_bias), dt)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_IDENTITY = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_IDENTITY",
    value=1,
    page="dml_element_wise_identity_operator_desc.md",
    introduced=FL.FL_1_0,
    summary=("Computes the identity for each element of InputTensor, placing the result into the "
             "corresponding element of OutputTensor."),
    formula="f(x) = x",
    tensors=UNARY_TENSORS,
    params=(ParamSpec(
        "ScaleBias", "DML_SCALE_BIAS", default=None, nullable=True,
        doc="An optional scale and bias to apply to the input: g(x) = x * scale + bias."),),
    support=(
        unary_table("4.1", "1 to 8", "FLOAT64, FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
        unary_table("3.0", "1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
        unary_table("2.1", "4 to 5", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
        unary_table("1.0", "4 to 5", "FLOAT32, FLOAT16"),
    ),
    constraints=UNARY_CONSTRAINTS,
    ulp={F32: 1, F16: 1, F64: 1},
    ulp_half=1,
    gradient="dX = Scale * dY (dY without a ScaleBias); integer inputs: no gradient.",
    in_place=True,
    notes=("Without a ScaleBias this is data movement: every bit is kept (NaN payloads, -0, "
           "FLOAT32 denormals). With one it is math: FLOAT32 denormals are flushed, FLOAT16 is "
           "computed in FLOAT32, and integer tensors compute g(x) in FLOAT32 (FLOAT64 for INT64 "
           "and UINT64) and convert back by truncation toward zero, saturated (NaN gives 0)."),
)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _identity_float(x, scale_bias, half):
    return store(apply_scale_bias(load(x, half), scale_bias), DataType.from_dtype(x.dtype))


@_identity_float.defjvp
def _identity_float_jvp(scale_bias, half, primals, tangents):
    (x,), (t,) = primals, tangents
    return _identity_float(x, scale_bias, half), t * _scale_of(scale_bias, t.dtype)


@operator(ELEMENT_WISE_IDENTITY)
def element_wise_identity(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([1.5, -0.0, np.nan], np.float32)
        >>> dmljax.element_wise_identity(x)
        Array([ 1.5, -0. ,  nan], dtype=float32)
        >>> dmljax.element_wise_identity(x, scale_bias=(2.0, 1.0))
        Array([ 4.,  1., nan], dtype=float32)
        >>> dmljax.element_wise_identity(np.array([7, -7], np.int8), scale_bias=(0.5, 0.0))
        Array([ 3, -3], dtype=int8)
    """
    dt = DataType.from_dtype(input.dtype)
    if scale_bias is None:
        return input
    if dt.is_integer:
        return _int_scale_bias(input, scale_bias, dt)
    return _identity_float(input, scale_bias, allow_half_precision_computation)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ADD = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_ADD",
    value=4,
    page="dml_element_wise_add_operator_desc.md",
    introduced=FL.FL_1_0,
    summary=("Adds every element in ATensor to its corresponding element in BTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(a, b) = a + b",
    tensors=BINARY_TENSORS,
    support=(
        binary_table("5.1", "1 to 8", "FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
        binary_table("4.1", "1 to 8", "FLOAT32, FLOAT16, INT64, INT32, UINT64, UINT32"),
        binary_table("3.0", "1 to 8", "FLOAT32, FLOAT16, INT32, UINT32"),
        binary_table("2.1", "4 to 5", "FLOAT32, FLOAT16, INT32, UINT32"),
        binary_table("1.0", "4 to 5", "FLOAT32, FLOAT16"),
    ),
    constraints=BINARY_CONSTRAINTS,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dA = dY, dB = dY (integer inputs: no gradient).",
    in_place=True,
    notes=("A float sum is correctly rounded (0 ULP; FLOAT16 through FLOAT32 is too: double "
           "rounding is harmless for a sum when the wider type has 2p + 2 bits). Integer sums "
           "wrap around (two's complement), as integer hardware does."),
)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _add_float(a, b, half):
    return store(load(a, half) + load(b, half), DataType.from_dtype(a.dtype))


@_add_float.defjvp
def _add_float_jvp(half, primals, tangents):
    (a, b), (ta, tb) = primals, tangents
    return _add_float(a, b, half), ta + tb


@operator(ELEMENT_WISE_ADD)
def element_wise_add(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_add(np.array([1.5, -2.0], np.float32), np.array([2.0, 3.0], np.float32))
        Array([3.5, 1. ], dtype=float32)
        >>> dmljax.element_wise_add(np.array([250], np.uint8), np.array([10], np.uint8))
        Array([4], dtype=uint8)
    """
    dt = DataType.from_dtype(a.dtype)
    if dt.is_integer:
        return a + b
    return _add_float(a, b, allow_half_precision_computation)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ADD1 = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_ADD1",
    value=89,
    page="dml_element_wise_add1_operator_desc.md",
    introduced=FL.FL_2_0,
    summary=("Adds every element in ATensor to its corresponding element in BTensor and places "
             "the result into the corresponding element of OutputTensor, with the option for "
             "fused activation."),
    formula="f(a, b) = FusedActivation(a + b)",
    tensors=BINARY_TENSORS,
    params=(ParamSpec(
        "FusedActivation", "DML_OPERATOR_DESC*", default=None, nullable=True,
        doc=("An optional fused activation layer to apply after the addition: a "
             "dmljax.FusedActivation, e.g. FusedActivation('ACTIVATION_ELU', alpha=1.0), or "
             "{'Type': 'DML_OPERATOR_ACTIVATION_ELU', 'Desc': {'Alpha': 1.0}}. Fused activation "
             "may be used only when the output datatype is FLOAT16 or FLOAT32.")),),
    support=(
        binary_table("3.0", "1 to 8", "FLOAT32, FLOAT16"),
        binary_table("2.0", "4 to 5", "FLOAT32, FLOAT16"),
    ),
    constraints=BINARY_CONSTRAINTS,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=("dA = dB = dY chained through the fused activation's own gradient "
              "(dA = dB = activation'(a + b) * dY)."),
    in_place=True,
    notes=("The sum alone is correctly rounded. A fused activation gives the same result as the "
           "two operators one after the other (core/dml-fused-activations.md: \"fused activations "
           "produce the same result\"): the sum is rounded to the output type, then the "
           "activation runs with its own rules and budget. Fusable and implemented: ELU, SCALED_ELU."),
)


@operator(ELEMENT_WISE_ADD1)
def element_wise_add1(a, b, *, fused_activation, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([1.0, -3.0], np.float32), np.array([0.5, 1.0], np.float32)
        >>> dmljax.element_wise_add1(a, b)
        Array([ 1.5, -2. ], dtype=float32)
        >>> dmljax.element_wise_add1(a, b, fused_activation=dmljax.FusedActivation("ACTIVATION_ELU", alpha=1.0))
        Array([ 1.5       , -0.86466473], dtype=float32)
    """
    half = allow_half_precision_computation
    return fused.apply(fused_activation, _add_float(a, b, half), half)


# --------------------------------------------------------------------------------------------
# CLIP and CLIP1 differ in the order of min and max, which matters where Min > Max (CLIP gives
# Max, CLIP1 gives Min) and for NaN inputs (CLIP gives min(Max, Min), CLIP1 max(Min, Max)).
# Their gradients are CLIP_GRAD's and CLIP_GRAD1's, which are the same formula.

_CLIP_GRAD_TEXT = (
    "As DML_OPERATOR_ELEMENT_WISE_{grad}: dX = Scale * (g(x) <= Min or g(x) >= Max ? 0 : dY), zero "
    "at and beyond the bounds (so zero for every number when Min > Max; a NaN bound bounds nothing; a "
    "NaN g(x) compares false both times, so dY passes, as the backward operator is written, "
    "also when Min > Max). "
    "Integer inputs: no gradient.")


def _clip_formula(g, lo, hi, min_first: bool):
    if min_first:  # CLIP: min(Max, max(Min, x))
        return min_num(max_num(g, lo), hi)
    return max_num(min_num(g, hi), lo)  # CLIP1: max(Min, min(x, Max))


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3, 4, 5))
def _clip_float(x, lo, hi, scale_bias, half, min_first):
    g = apply_scale_bias(load(x, half), scale_bias)
    return store(_clip_formula(g, lo, hi, min_first), DataType.from_dtype(x.dtype))


@_clip_float.defjvp
def _clip_float_jvp(lo, hi, scale_bias, half, min_first, primals, tangents):
    (x,), (t,) = primals, tangents
    g = apply_scale_bias(load(x, half), scale_bias)
    blocked = ((g <= jnp.asarray(lo, g.dtype)) | (g >= jnp.asarray(hi, g.dtype))) & ~is_nan(g)  # NaN: False
    dx = t * _scale_of(scale_bias, t.dtype)
    return _clip_float(x, lo, hi, scale_bias, half, min_first), jnp.where(blocked, jnp.zeros_like(dx), dx)


def _clip(input, lo_attr, hi_attr, scale_bias, half, min_first):
    """lo_attr/hi_attr: callables giving the bound as a scalar of a dtype."""
    dt = DataType.from_dtype(input.dtype)
    if dt.is_integer:
        return _clip_formula(_int_scale_bias(input, scale_bias, dt), lo_attr(None), hi_attr(None), min_first)
    cd = load(input, half).dtype
    lo, hi = lo_attr(cd).item(), hi_attr(cd).item()
    return _clip_float(input, lo, hi, scale_bias, half, min_first)


ELEMENT_WISE_CLIP = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_CLIP",
    value=8,
    page="dml_element_wise_clip_operator_desc.md",
    introduced=FL.FL_1_0,
    summary=("Performs the following operation for each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor. This operator clamps (or "
             "limits) every element in the input within the closed interval [Min, Max]."),
    formula="f(x) = min(Max, max(Min, x))",
    tensors=UNARY_TENSORS,
    params=(
        ParamSpec("ScaleBias", "DML_SCALE_BIAS", default=None, nullable=True,
                  doc="An optional scale and bias to apply to the input: g(x) = x * scale + bias."),
        ParamSpec("Min", "FLOAT", doc="The minimum value, below which the operator replaces the "
                  "value with Min.", converted_to="InputTensor"),
        ParamSpec("Max", "FLOAT", doc="The maximum value, above which the operator replaces the "
                  "value with Max.", converted_to="InputTensor"),
    ),
    support=(
        unary_table("5.0", "1 to 8", "FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
        unary_table("3.0", "1 to 8", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
        unary_table("2.1", "4", "FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8"),
        unary_table("1.0", "4", "FLOAT32, FLOAT16"),
    ),
    constraints=UNARY_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    grad_operator="DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD",
    gradient=_CLIP_GRAD_TEXT.format(grad="CLIP_GRAD"),
    in_place=True,
    notes=("min and max follow IEEE minNum/maxNum (a NaN operand gives the other one; a tie "
           "gives the bound), in the page's order: CLIP(NaN) = min(Max, Min), and Min > Max "
           "gives Max everywhere. Exact without a ScaleBias. On integer tensors Min and Max are "
           "truncated toward zero and saturated to the type (NaN is refused); a ScaleBias is "
           "computed in FLOAT32 (FLOAT64 for 64-bit types) and converted back as IDENTITY does."),
)


@operator(ELEMENT_WISE_CLIP)
def element_wise_clip(input, *, scale_bias, min, max, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.0, 0.5, 3.0, np.nan], np.float32)
        >>> dmljax.element_wise_clip(x, min=0.0, max=1.0)
        Array([0. , 0.5, 1. , 0. ], dtype=float32)
        >>> dmljax.element_wise_clip(np.array([-300, 5, 300], np.int16), min=-7.9, max=100.5)
        Array([ -7,   5, 100], dtype=int16)
    """
    dt = DataType.from_dtype(input.dtype)
    return _clip(input, lambda cd: attr_as(min, dt, cd), lambda cd: attr_as(max, dt, cd),
                 scale_bias, allow_half_precision_computation, True)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_CLIP1 = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_CLIP1",
    value=153,
    page="dml_element_wise_clip1_operator_desc.md",
    introduced=FL.FL_5_0,
    summary=("Performs the following operation for each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor. This operator clamps (or "
             "limits) every element in the input within the closed interval [Min, Max]."),
    formula="f(x) = max(Min, min(x, Max))",
    tensors=UNARY_TENSORS,
    params=(
        ParamSpec("ScaleBias", "DML_SCALE_BIAS", default=None, nullable=True,
                  doc="An optional scale and bias to apply to the input: g(x) = x * scale + bias."),
        ParamSpec("MinMaxDataType", "DML_TENSOR_DATA_TYPE", default=None,
                  doc=("The data type of the Min and Max members, which must match "
                       "OutputTensor.DataType (None: that DataType)."),
                  converted_to="OutputTensor"),
        ParamSpec("Min", "DML_SCALAR_UNION", doc=("The minimum value, below which the operator "
                  "replaces the value with Min; read as OutputTensor's DataType and refused "
                  "unless representable in it."), converted_to="OutputTensor"),
        ParamSpec("Max", "DML_SCALAR_UNION", doc=("The maximum value, above which the operator "
                  "replaces the value with Max; read as OutputTensor's DataType and refused "
                  "unless representable in it."), converted_to="OutputTensor"),
    ),
    support=(
        unary_table("5.0", "1 to 8", "FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8"),
    ),
    constraints=UNARY_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    grad_operator="DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1",
    gradient=_CLIP_GRAD_TEXT.format(grad="CLIP_GRAD1"),
    in_place=True,
    notes=("min and max follow IEEE minNum/maxNum in the page's order: CLIP1(NaN) = max(Min, "
           "Max), and Min > Max gives Min everywhere (the page does not forbid it). Min and Max "
           "are exact values of the tensor's type (a FLOAT16 bound is a FLOAT16 number); a value "
           "the type cannot hold is a ValidationError, never wrapped. Exact without a ScaleBias; "
           "a ScaleBias on integer tensors is computed as IDENTITY does."),
)


@operator(ELEMENT_WISE_CLIP1)
def element_wise_clip1(input, *, scale_bias, min_max_data_type, min, max,
                       allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.0, 0.5, 3.0, np.nan], np.float32)
        >>> dmljax.element_wise_clip1(x, min=0.0, max=1.0)
        Array([0. , 0.5, 1. , 1. ], dtype=float32)
        >>> dmljax.element_wise_clip1(np.array([0, 100, 255], np.uint8), min=10, max=200)
        Array([ 10, 100, 200], dtype=uint8)
    """
    def bound(u):
        return lambda cd: u.as_numpy() if cd is None else np.asarray(u.value, cd)[()]

    return _clip(input, bound(min), bound(max), scale_bias, allow_half_precision_computation, False)
