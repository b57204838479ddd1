"""Element-wise clamps and extremes (THRESHOLD, CLIP, CLIP1, their gradient operators CLIP_GRAD
and CLIP_GRAD1, MAX, MIN), of the element_wise_arithmetic family: each page's record, with its
formula right below it."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    DataType,
)
from dmljax._src.numerics import (
    apply_scale_bias, attr_as, float32_as, float_to_int, flush_constant, is_nan, load, mark_flushed, max_num,
    min_num, store,
)
from dmljax._src.op import operator
from dmljax._src.ops.factories import (
    SCALE_BIAS, binary_op, elementwise, int_scale_bias, scale_of, unary_op,
)
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

F32, F16, F64 = DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64

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
    silent=(
        SilentChoice(
            "ScaleBias on an integer tensor (THRESHOLD, IDENTITY, CLIP, CLIP1)",
            "`x * Scale + Bias` in FLOAT32 (FLOAT64 for INT64/UINT64), then truncated toward zero and "
            "saturated (NaN gives 0)",
            "The attributes are C floats; FLOAT32 is DirectML's compute type for them. INT32/UINT32 values "
            "above 2^24 (64-bit ones above 2^53) lose precision there.",
            also=("ELEMENT_WISE_IDENTITY", "ELEMENT_WISE_CLIP", "ELEMENT_WISE_CLIP1")),
        SilentChoice(
            "THRESHOLD at a tie (including -0 against +0)",
            "returns Min",
            "IEEE maxNum leaves the sign of equal zeros open."),
        SilentChoice(
            "THRESHOLD with a NaN Min",
            "returns g(x), and its gradient passes (Scale · dY)",
            "maxNum's rule for one NaN operand; the gradient follows the selected branch."),
    ),
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
    dt = t * float32_as(scale, t.dtype)
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
    m = attr_as(min, dt, x.dtype).item()
    if dt is not DataType.FLOAT32:
        return store(_threshold_float(x, m, scale_bias), dt)
    # maxNum picks x or Min: x is flushed (by load, or by the ScaleBias), so with Min flushed
    # here the result holds no denormal and needs no flush of its own (flushing is monotone:
    # max(flush(x), flush(Min)) = flush(max(x, Min)), ties and NaN included)
    y = _threshold_float(x, flush_constant(m), scale_bias)
    mark_flushed(y)
    return y


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
    g = apply_scale_bias(load(x, half, float_reads=True), scale_bias)
    return store(_clip_formula(g, lo, hi, min_first), DataType.from_dtype(x.dtype))


def clip_grad_rule(g, dy, lo, hi):
    """CLIP_GRAD's and CLIP_GRAD1's formula, the one declaration of the rule: 0 where g <= Min or
    g >= Max, else dy (its bits unchanged). ``g`` is the value CLIP compared (read as math reads
    it: FLOAT32 denormals flushed, FLOAT16 widened unless computed in half precision; after the
    ScaleBias in CLIP's own gradient); ``lo``/``hi`` are the bounds in ``g``'s type. A NaN ``g``
    compares false both times, so dy passes; the bit test keeps that on every backend."""
    lo, hi = jnp.asarray(lo, g.dtype), jnp.asarray(hi, g.dtype)
    blocked = ((g <= lo) | (g >= hi)) & ~is_nan(g)
    return jnp.where(blocked, jnp.zeros_like(dy), dy)


@_clip_float.defjvp
def _clip_float_jvp(lo, hi, scale_bias, half, min_first, primals, tangents):
    (x,), (t,) = primals, tangents
    g = apply_scale_bias(load(x, half), scale_bias)
    dx = t * scale_of(scale_bias, t.dtype)
    return _clip_float(x, lo, hi, scale_bias, half, min_first), clip_grad_rule(g, dx, lo, hi)


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
    silent=(
        SilentChoice(
            "CLIP / CLIP1 with a NaN input, or Min > Max",
            "the page's order of min and max under IEEE minNum/maxNum: CLIP(NaN) = min(Max, Min), CLIP1(NaN) = "
            "max(Min, Max); Min > Max is allowed (CLIP gives Max, CLIP1 gives Min); a NaN bound bounds nothing",
            "The pages neither forbid Min > Max nor say what NaN does.",
            also=("ELEMENT_WISE_CLIP1",)),
        SilentChoice(
            "CLIP / CLIP1 gradients",
            "CLIP_GRAD literally: 0 where x <= Min or x >= Max, Scale · dY elsewhere, so a NaN g(x) passes dY "
            "(THRESHOLD's rule gives 0 there)",
            "The `*_GRAD` page defines it.",
            also=("ELEMENT_WISE_CLIP1",)),
    ),
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
    notes=("Exact without a ScaleBias; a ScaleBias on integer tensors is computed as IDENTITY does."),
    silent=(
        SilentChoice(
            "CLIP1 bounds (DML_SCALAR_UNION)",
            "exact values of the tensor's type: integers take integral numbers only (2.5, NaN, inf and "
            "out-of-range values are refused), floats round to nearest and a finite value that overflows is "
            "refused; a FLOAT16 bound is a half value",
            "The union has no FLOAT16 member and no rule for unrepresentable values: refusing is never silent."),
    ),
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
# MAX and MIN: IEEE maxNum/minNum (one NaN operand gives the other one), exact. A tie between
# zeros gives +0 for MAX and -0 for MIN whatever the order (their bits ANDed / ORed). B is
# selected only where it wins strictly (or A alone is NaN): at a tie, and where both are NaN,
# A is the result, and A gets the whole gradient.


def _selects_b(x, y, larger: bool):
    wins = (y > x) if larger else (y < x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return wins
    return (wins & ~is_nan(x)) | (is_nan(x) & ~is_nan(y))


def _max_min(x, y, larger: bool):
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.where(_selects_b(x, y, larger), y, x)
    # maxNum/minNum: XLA's maximum/minimum order a tie of zeros (max(-0, +0) = +0 and
    # min(-0, +0) = -0 in either order: tested on the CPU, and by tests/gpu/semantics.py's signed-zero pairs on
    # an H100) and propagate NaN, so a NaN operand is answered first by the other one, tested on
    # the bits.
    # Fewer instructions than comparing order keys of the bits (a chain of eight FLOAT16
    # operators ending in MAX: 0.727 ms with keys, 0.669 ms so on an H100).
    extreme = lax.max(x, y) if larger else lax.min(x, y)
    return jnp.where(is_nan(x), y, jnp.where(is_nan(y), x, extreme))


def _max_min_slopes(larger: bool):
    def slopes(x, y):
        b = _selects_b(x, y, larger)
        one, zero = jnp.ones_like(x), jnp.zeros_like(x)
        return jnp.where(b, zero, one), jnp.where(b, one, zero)
    return slopes


_MAX_MIN_SUPPORT = (
    ("5.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
    ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
    ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
    ("1.0", "4", FLOAT32_FLOAT16),
)
_MAX_MIN_NOTES = (
    "IEEE {ieee}: one NaN operand gives the other operand, two give NaN (as THRESHOLD). A tie "
    "of zeros gives {zero} whatever the operands' order (IEEE lets either be returned). Exact; "
    "math, not data movement: a FLOAT32 denormal reads as a signed zero (as in CLIP). Integers "
    "exact, 64-bit types included.")
_MAX_MIN_GRADIENT = (
    "The selected operand gets dY: dB = dY where b {cmp} a strictly, or a alone is NaN; "
    "dA = dY everywhere else (ties, both NaN, b NaN). Integer inputs: no gradient.")

ELEMENT_WISE_MAX = binary_op(
    "ELEMENT_WISE_MAX",
    summary=("Takes the greater of two corresponding elements from the input tensors, and places "
             "the result into the corresponding element of the output tensor."),
    formula="f(a, b) = max(a, b)",
    support=_MAX_MIN_SUPPORT,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=_MAX_MIN_GRADIENT.format(cmp=">"),
    notes=_MAX_MIN_NOTES.format(ieee="maxNum", zero="+0 (max(-0, +0) = max(+0, -0) = +0)"),
    silent=(
        SilentChoice(
            "MAX / MIN with one NaN; at ±0; gradient at a tie",
            "the other operand (maxNum/minNum; both NaN give NaN); `max(-0, +0) = +0`, `min = -0` in either "
            "order; at a tie all of dY goes to A, B gets it only where it wins strictly or A alone is NaN",
            "Direct3D's min/max; one stated answer for the zeros; strict comparisons as in the *_GRAD "
            "operators.",
            also=("ELEMENT_WISE_MIN",)),
    ),
)


@operator(ELEMENT_WISE_MAX)
def element_wise_max(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_max(np.array([1.0, np.nan, -0.0], np.float32), np.array([2.0, 3.0, 0.0], np.float32))
        Array([2., 3., 0.], dtype=float32)
    """
    return elementwise(lambda x, y: _max_min(x, y, True), a, b, half=allow_half_precision_computation,
                       slopes=_max_min_slopes(True), integer=lambda x, y: _max_min(x, y, True),
                       float_reads=True)


ELEMENT_WISE_MIN = binary_op(
    "ELEMENT_WISE_MIN",
    summary=("Takes the lesser of two corresponding elements from the input tensors, and places "
             "the result into the corresponding element of OutputTensor."),
    formula="f(a, b) = min(a, b)",
    support=_MAX_MIN_SUPPORT,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=_MAX_MIN_GRADIENT.format(cmp="<"),
    notes=_MAX_MIN_NOTES.format(ieee="minNum", zero="-0 (min(-0, +0) = min(+0, -0) = -0)"),
)


@operator(ELEMENT_WISE_MIN)
def element_wise_min(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_min(np.array([1.0, np.nan, 0.0], np.float32), np.array([2.0, 3.0, -0.0], np.float32))
        Array([ 1.,  3., -0.], dtype=float32)
    """
    return elementwise(lambda x, y: _max_min(x, y, False), a, b, half=allow_half_precision_computation,
                       slopes=_max_min_slopes(False), integer=lambda x, y: _max_min(x, y, False),
                       float_reads=True)


# --------------------------------------------------------------------------------------------
# CLIP_GRAD and CLIP_GRAD1: DirectML's backward operators of CLIP and CLIP1, public, computing
# clip_grad_rule, the rule that jax.grad of CLIP and CLIP1 uses (one declaration serves both).

_CLIP_GRAD_TENSORS = (
    TensorSpec("InputTensor", "input"),
    TensorSpec("InputGradientTensor", "input"),
    TensorSpec("OutputGradientTensor", "output"),
)
# "InputGradientTensor, InputTensor, and OutputGradientTensor must have the same DataType,
# DimensionCount, and Sizes."
_CLIP_GRAD_CONSTRAINTS = (
    SameDataType(("InputTensor", "InputGradientTensor", "OutputGradientTensor")),
    SameSizes(("InputTensor", "InputGradientTensor", "OutputGradientTensor")),
)


def _clip_grad_table(level, types):
    return table(level, InputTensor=("1 to 8", types), InputGradientTensor=("1 to 8", types),
                 OutputGradientTensor=("1 to 8", types))


_CLIP_GRAD_FORMULA = ("f(x, gradient) = if x <= Min then 0\n"
                      "                 if x >= Max then 0\n"
                      "                 else        then gradient")
_CLIP_GRAD_GRADIENT = (
    "Second order: d/dInputGradientTensor is the same mask (1 where the gradient passes, 0 where "
    "it is blocked); d/dInputTensor is 0 (the output is piecewise constant in x). Integer "
    "inputs: no gradient.")
_CLIP_GRAD_NOTES = (
    "The rule of jax.grad of {fwd} (with dY as InputGradientTensor, bit for bit). InputTensor "
    "is compared as {fwd} compares it: FLOAT32 denormals flushed, FLOAT16 in FLOAT32 (in "
    "FLOAT16 with allow_half_precision_computation); a NaN x compares false both times, so the "
    "gradient passes; Min > Max blocks every number. The gradient itself passes unchanged (its "
    "bits, denormals included); blocked elements are +0.")


def _clip_grad(input, input_gradient, lo_attr, hi_attr, half):
    dt = DataType.from_dtype(input.dtype)
    if dt.is_integer:
        return clip_grad_rule(input, input_gradient, lo_attr(None), hi_attr(None))
    g = load(input, half, float_reads=True)  # only compared
    return clip_grad_rule(g, input_gradient, lo_attr(g.dtype).item(), hi_attr(g.dtype).item())


ELEMENT_WISE_CLIP_GRAD = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD",
    summary="Computes backpropagation gradients for element-wise clip.",
    formula=_CLIP_GRAD_FORMULA,
    tensors=_CLIP_GRAD_TENSORS,
    params=(
        ParamSpec("Min", "FLOAT", doc="The minimum value. If x is at or below this value, then the "
                  "gradient result is 0.", converted_to="InputTensor"),
        ParamSpec("Max", "FLOAT", doc="The maximum value. If x is at or above this value, then the "
                  "gradient result is 0.", converted_to="InputTensor"),
    ),
    support=(
        _clip_grad_table("5.0", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        _clip_grad_table("3.1", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
    ),
    constraints=_CLIP_GRAD_CONSTRAINTS,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=_CLIP_GRAD_GRADIENT,
    in_place=True,
    notes=_CLIP_GRAD_NOTES.format(fwd="CLIP") + (
        " On integer tensors Min and Max are truncated toward zero and saturated, as CLIP does."),
)


@operator(ELEMENT_WISE_CLIP_GRAD)
def element_wise_clip_grad(input, input_gradient, *, min, max, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.0, 0.0, 0.5, 1.0, np.nan], np.float32)
        >>> dmljax.element_wise_clip_grad(x, np.full(5, 3.0, np.float32), min=0.0, max=1.0)
        Array([0., 0., 3., 0., 3.], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    return _clip_grad(input, input_gradient, lambda cd: attr_as(min, dt, cd), lambda cd: attr_as(max, dt, cd),
                      allow_half_precision_computation)


ELEMENT_WISE_CLIP_GRAD1 = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1",
    summary="Computes backpropagation gradients for DML_OPERATOR_ELEMENT_WISE_CLIP1.",
    formula=_CLIP_GRAD_FORMULA,
    tensors=_CLIP_GRAD_TENSORS,
    params=(
        ParamSpec("MinMaxDataType", "DML_TENSOR_DATA_TYPE", default=None,
                  doc=("The data type of the Min and Max members, which must match "
                       "OutputTensor.DataType (None: that DataType)."),
                  converted_to="OutputGradientTensor"),
        ParamSpec("Min", "DML_SCALAR_UNION", doc=("The minimum value. If x is at or below this "
                  "value, then the gradient result is 0; read as the tensors' DataType and refused "
                  "unless representable in it."), converted_to="OutputGradientTensor"),
        ParamSpec("Max", "DML_SCALAR_UNION", doc=("The maximum value. If x is at or above this "
                  "value, then the gradient result is 0; read as the tensors' DataType and refused "
                  "unless representable in it."), converted_to="OutputGradientTensor"),
    ),
    support=(_clip_grad_table("5.0", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),),
    constraints=_CLIP_GRAD_CONSTRAINTS,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=_CLIP_GRAD_GRADIENT,
    in_place=True,
    notes=_CLIP_GRAD_NOTES.format(fwd="CLIP1") + (
        " The page's MinMaxDataType must match \"OutputTensor.DataType\": the desc has no "
        "OutputTensor, so OutputGradientTensor's DataType (all three are the same) is taken."),
    silent=(
        SilentChoice(
            "CLIP_GRAD1's MinMaxDataType",
            "matched against OutputGradientTensor",
            "The page says \"OutputTensor\", which its desc does not have."),
    ),
)


@operator(ELEMENT_WISE_CLIP_GRAD1)
def element_wise_clip_grad1(input, input_gradient, *, min_max_data_type, min, max,
                            allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([0, 10, 50, 200], np.uint8)
        >>> dmljax.element_wise_clip_grad1(x, np.full(4, 7, np.uint8), min=10, max=200)
        Array([0, 0, 7, 0], dtype=uint8)
    """
    def bound(u):
        return lambda cd: u.as_numpy() if cd is None else np.asarray(u.value, cd)[()]

    return _clip_grad(input, input_gradient, bound(min), bound(max), allow_half_precision_computation)
