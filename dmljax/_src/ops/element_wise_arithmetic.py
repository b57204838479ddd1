"""Element-wise arithmetic (sums, products, moduli, clamps, identity, negation): each page's
record, with its formula right below it."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, DataType,
)
from dmljax._src.numerics import (
    apply_scale_bias, attr_as, float_to_int, flush_denormals, is_nan, load, max_num, min_num, store,
)
from dmljax._src.op import operator
from dmljax._src.ops._families import (
    SCALE_BIAS, SUPPORT_ADD_MULTIPLY, apply_fused, binary_op, elementwise, int_scale_bias, scale_of, unary_op,
)
from dmljax._src.spec import ParamSpec

F32, F16, F64 = DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64

# --------------------------------------------------------------------------------------------
ELEMENT_WISE_MULTIPLY = binary_op(
    "ELEMENT_WISE_MULTIPLY",
    summary=("Computes the product of each pair of corresponding elements of the input tensors, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(a, b) = a * b",
    support=SUPPORT_ADD_MULTIPLY,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dA = b * dY, dB = a * dY (integer inputs: no gradient).",
    notes="Integer products wrap around (two's complement), as integer hardware does.",
)


@operator(ELEMENT_WISE_MULTIPLY)
def element_wise_multiply(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_multiply(np.array([1.5, -2.0], np.float32), np.array([2.0, 3.0], np.float32))
        Array([ 3., -6.], dtype=float32)
    """
    return elementwise(lambda x, y: x * y, a, b, half=allow_half_precision_computation,
                       slopes=lambda x, y: (y, x), integer=lambda x, y: x * y)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_THRESHOLD = unary_op(
    "ELEMENT_WISE_THRESHOLD",
    summary=("Replaces all elements of InputTensor below the given threshold, Min, with Min. "
             "Results are placed into the corresponding element of OutputTensor."),
    formula="f(x) = max(x, Min)",
    params=(
        ParamSpec("Min", "FLOAT", doc="The minimum value, below which the operator replaces the "
                  "value with Min.", converted_to="InputTensor"),
        SCALE_BIAS,
    ),
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("1.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient=("dX = Scale * (g(x) > Min ? dY : 0): nothing passes at a tie or for NaN input "
              "(a NaN Min passes everything, as the forward pass returns g(x) then)."),
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
ELEMENT_WISE_MODULUS_FLOOR = binary_op(
    "ELEMENT_WISE_MODULUS_FLOOR",
    summary=("Computes the modulus, with the same results as the Python modulus, for each pair of "
             "corresponding elements from the input tensors. Because the quotient is rounded "
             "towards -inf, the result will have the same sign as the divisor."),
    formula="f(a, b) = a - (b * floor(a / b))",
    support=(
        ("6.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient="dA = dY, dB = -floor(a / b) * dY (integer inputs: no gradient).",
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


# Float math runs inside a custom_jvp that covers load and store too, so that the gradient is
# the derivative of the page's formula (taken on the branch the forward pass selects), not of
# dmljax's FLOAT32 denormal flushing.

# --------------------------------------------------------------------------------------------
ELEMENT_WISE_IDENTITY = unary_op(
    "ELEMENT_WISE_IDENTITY",
    summary=("Computes the identity for each element of InputTensor, placing the result into the "
             "corresponding element of OutputTensor."),
    formula="f(x) = x",
    params=(SCALE_BIAS,),
    support=(
        ("4.1", "1 to 8", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.1", "4 to 5", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("1.0", "4 to 5", FLOAT32_FLOAT16),
    ),
    ulp={F32: 1, F16: 1, F64: 1},
    ulp_half=1,
    gradient="dX = Scale * dY (dY without a ScaleBias); integer inputs: no gradient.",
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
    return _identity_float(x, scale_bias, half), t * scale_of(scale_bias, t.dtype)


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
        return int_scale_bias(input, scale_bias, dt)
    return _identity_float(input, scale_bias, allow_half_precision_computation)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ADD = binary_op(
    "ELEMENT_WISE_ADD",
    summary=("Adds every element in ATensor to its corresponding element in BTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(a, b) = a + b",
    support=SUPPORT_ADD_MULTIPLY,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dA = dY, dB = dY (integer inputs: no gradient).",
    notes=("A float sum is correctly rounded (0 ULP; FLOAT16 through FLOAT32 is too: double "
           "rounding is harmless for a sum when the wider type has 2p + 2 bits). Integer sums "
           "wrap around (two's complement), as integer hardware does."),
)


def _add(a, b, half):
    return elementwise(lambda x, y: x + y, a, b, half=half, slopes=lambda x, y: (1.0, 1.0),
                       integer=lambda x, y: x + y)


@operator(ELEMENT_WISE_ADD)
def element_wise_add(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_add(np.array([1.5, -2.0], np.float32), np.array([2.0, 3.0], np.float32))
        Array([3.5, 1. ], dtype=float32)
        >>> dmljax.element_wise_add(np.array([250], np.uint8), np.array([10], np.uint8))
        Array([4], dtype=uint8)
    """
    return _add(a, b, allow_half_precision_computation)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ADD1 = binary_op(
    "ELEMENT_WISE_ADD1",
    summary=("Adds every element in ATensor to its corresponding element in BTensor and places "
             "the result into the corresponding element of OutputTensor, with the option for "
             "fused activation."),
    formula="f(a, b) = FusedActivation(a + b)",
    params=(ParamSpec(
        "FusedActivation", "DML_OPERATOR_DESC*", default=None, nullable=True,
        doc=("An optional fused activation layer to apply after the addition: a "
             "dmljax.FusedActivation, e.g. FusedActivation('ACTIVATION_ELU', alpha=1.0), or "
             "{'Type': 'DML_OPERATOR_ACTIVATION_ELU', 'Desc': {'Alpha': 1.0}}. Fused activation "
             "may be used only when the output datatype is FLOAT16 or FLOAT32.")),),
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16),
        ("2.0", "4 to 5", FLOAT32_FLOAT16),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=("dA = dB = dY chained through the fused activation's own gradient "
              "(dA = dB = activation'(a + b) * dY)."),
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
    return apply_fused(fused_activation, _add(a, b, half), half)


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
    dx = t * scale_of(scale_bias, t.dtype)
    return _clip_float(x, lo, hi, scale_bias, half, min_first), jnp.where(blocked, jnp.zeros_like(dx), dx)


def _clip(input, lo_attr, hi_attr, scale_bias, half, min_first):
    """lo_attr/hi_attr: callables giving the bound as a scalar of a dtype."""
    dt = DataType.from_dtype(input.dtype)
    if dt.is_integer:
        return _clip_formula(int_scale_bias(input, scale_bias, dt), lo_attr(None), hi_attr(None), min_first)
    cd = load(input, half).dtype
    lo, hi = lo_attr(cd).item(), hi_attr(cd).item()
    return _clip_float(input, lo, hi, scale_bias, half, min_first)


ELEMENT_WISE_CLIP = unary_op(
    "ELEMENT_WISE_CLIP",
    summary=("Performs the following operation for each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor. This operator clamps (or "
             "limits) every element in the input within the closed interval [Min, Max]."),
    formula="f(x) = min(Max, max(Min, x))",
    params=(
        SCALE_BIAS,
        ParamSpec("Min", "FLOAT", doc="The minimum value, below which the operator replaces the "
                  "value with Min.", converted_to="InputTensor"),
        ParamSpec("Max", "FLOAT", doc="The maximum value, above which the operator replaces the "
                  "value with Max.", converted_to="InputTensor"),
    ),
    support=(
        ("5.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("1.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    grad_operator="DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD",
    gradient=_CLIP_GRAD_TEXT.format(grad="CLIP_GRAD"),
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
ELEMENT_WISE_CLIP1 = unary_op(
    "ELEMENT_WISE_CLIP1",
    summary=("Performs the following operation for each element of InputTensor, placing the "
             "result into the corresponding element of OutputTensor. This operator clamps (or "
             "limits) every element in the input within the closed interval [Min, Max]."),
    formula="f(x) = max(Min, min(x, Max))",
    params=(
        SCALE_BIAS,
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
        ("5.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    grad_operator="DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1",
    gradient=_CLIP_GRAD_TEXT.format(grad="CLIP_GRAD1"),
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


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_NEGATE = unary_op(
    "ELEMENT_WISE_NEGATE",
    summary=("Negates each element of InputTensor, storing the result into the corresponding "
             "element of OutputTensor."),
    formula="f(x) = -x",
    support=(("5.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8),),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dX = -dY (integer inputs: no gradient).",
    notes=("Math, not data movement: FLOAT32 denormals are flushed (-(1e-40) is -0.0), -0.0 gives "
           "0.0 and NaN stays NaN. Integers wrap around as two's complement hardware does: the "
           "most negative value is its own negation (-(-128) is -128 in INT8)."),
)


@operator(ELEMENT_WISE_NEGATE)
def element_wise_negate(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_negate(np.array([1.5, -0.0, np.inf], np.float32))
        Array([-1.5,  0. , -inf], dtype=float32)
        >>> dmljax.element_wise_negate(np.array([5, -128], np.int8))
        Array([  -5, -128], dtype=int8)
    """
    return elementwise(lambda x: -x, input, half=allow_half_precision_computation,
                       slopes=lambda x: -1.0, integer=lambda x: -x)
