"""QUANTIZED_LINEAR_AVERAGE_POOLING, of the pooling family: the page's record with its formula
below it (the window geometry is window.py's, through max_pooling's Window).

The page's "dequantizing the inputs, then performing average pooling, and then quantizing the
output", with the sum taken exactly: the values of one channel share one scale and zero point,
so the window's dequantized sum is InputScale * sum(Input - InputZeroPoint), whose integer sum is
one INT32 windowed sum (XLA's reduce_window; a padding position adds 0, the input being padded
with its zero point); it is rounded once to FLOAT32, times the scale, divided by AVERAGE_POOLING's
divisor, and quantized by the page's quantize function (linear_quantization.quantize_values)."""

from __future__ import annotations

import math

import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32, INT8_UINT8, DataType
from dmljax._src.errors import Violation
from dmljax._src.linear_quantization import (
    INT32_MAX, difference_reach, divide, per_channel_violations, quantize_values, scale_violations,
)
from dmljax._src.numerics import load, store
from dmljax._src.op import operator
from dmljax._src.ops.pooling.max_pooling import (
    GEOMETRY_NOTE, geometry_checks, pooled_outputs, window_counts, window_of, window_params,
)
from dmljax._src.spec import INFERRED, OpSpec, ParamSpec, SameDataType, TensorSpec, snake_case, table
from dmljax._src.validate import TensorInfo

F32 = DataType.FLOAT32
_QUANTIZATION = ("InputScaleTensor", "InputZeroPointTensor", "OutputScaleTensor", "OutputZeroPointTensor")


def _checks(tensors, attrs, level) -> list[Violation]:
    """The scales and zero points per tensor or per channel ({1, ChannelCount, 1, 1}); the window's
    INT32 sum within range: prod(WindowSize) x the largest |Input - InputZeroPoint| at most 2^31 - 1."""
    x = tensors.get("InputTensor")
    if x is None or len(x.shape) < 2:
        return []
    problems = []
    for name in _QUANTIZATION:
        t = tensors.get(name)
        if t is not None:
            problems += per_channel_violations(t.shape, name, snake_case(name), x.shape[1], "channel")
    window = attrs.get("WindowSize")
    if window is not None and all(isinstance(v, int) for v in window) and x.data_type.is_integer:
        reach = difference_reach(x.data_type, "InputZeroPointTensor" in tensors)
        terms = math.prod(window)
        if terms * reach > INT32_MAX:
            problems.append(Violation("WindowSize", "window_size", f"makes each output a sum of {terms} differences "
                                      f"of up to {reach}", f"at most {INT32_MAX // reach} positions, so that the INT32 "
                                      "sum cannot pass its range"))
    return problems


def _scale_checks(values, attrs, level) -> list[Violation]:
    return [v for name in ("InputScaleTensor", "OutputScaleTensor")
            for v in scale_violations(values.get(name), name, snake_case(name))]


def _outputs(tensors, attrs, problems) -> dict:
    """The pooled Sizes; the DataType output_data_type= gives, else the OutputZeroPointTensor's,
    else the InputTensor's."""
    chosen = tensors.get("OutputTensor")
    info = pooled_outputs("OutputTensor")(tensors, attrs, problems)["OutputTensor"]
    dt = chosen.data_type if chosen is not None and chosen.data_type is not None else info.data_type
    return {"OutputTensor": TensorInfo(info.shape, dt)}


_INCLUDE = ParamSpec(
    "IncludePadding", "BOOL", default=False,
    doc=("Whether the padding elements count in the divisor: TRUE divides by prod(WindowSize), FALSE by the "
         "window's elements inside the InputTensor (default FALSE, AVERAGE_POOLING's)."))

QUANTIZED_LINEAR_AVERAGE_POOLING = OpSpec(
    enum_name=PREFIX + "QUANTIZED_LINEAR_AVERAGE_POOLING",
    summary=("Averages quantized values across the elements within the sliding window over the input tensor. This "
             "operator is mathematically equivalent to dequantizing the inputs, then performing average pooling, "
             "and then quantizing the output."),
    formula=("f(Input, Scale, ZeroPoint) = clamp(round(Input / Scale) + ZeroPoint, Min, Max)\n"
             "(the quantize function, applied as OutputTensor[n, c, o] = clamp(round(((FLOAT32(S) * InputScale[c]) "
             "/ divisor) / OutputScale[c]) + OutputZeroPoint[c], Min, Max), where S is the exact sum of "
             "InputTensor[n, c, o * Strides - StartPadding + k * Dilations] - InputZeroPoint[c] over the window "
             "positions k inside the input, and the divisor AVERAGE_POOLING's)"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("InputScaleTensor", "input"),
             TensorSpec("InputZeroPointTensor", "input", optional=True), TensorSpec("OutputScaleTensor", "input"),
             TensorSpec("OutputZeroPointTensor", "input", optional=True),
             TensorSpec("OutputTensor", "output", default_data_type=INFERRED)),
    support=(
        table("6.2", InputTensor=("4 to 5", INT8_UINT8), InputScaleTensor=("1 to 5", FLOAT32),
              InputZeroPointTensor=("1 to 5", INT8_UINT8), OutputScaleTensor=("1 to 5", FLOAT32),
              OutputZeroPointTensor=("1 to 5", INT8_UINT8), OutputTensor=("4 to 5", INT8_UINT8)),
    ),
    params=window_params(True) + (_INCLUDE,),
    # "InputTensor and OutputTensor must have the same DimensionCount. InputTensor and
    # InputZeroPointTensor must have the same DataType. OutputTensor and OutputZeroPointTensor must
    # have the same DataType."
    constraints=(SameDataType(("InputTensor", "InputZeroPointTensor")),
                 SameDataType(("OutputTensor", "OutputZeroPointTensor"))),
    math=False,
    gradient=("An integer output: no gradient; the integer inputs get float0 cotangents, the scales zeros (the "
              "output is a step function of them)."),
    notes=" ".join((
        "Each window's dequantized values are summed exactly: they share the channel's scale and zero point, so "
        "the sum is InputScale * S with S the INT32 sum of Input - InputZeroPoint over the window positions inside "
        "the input (the padding is the input's zero point, 0 once dequantized, as AVERAGE_POOLING's zeros). S is "
        "rounded once to FLOAT32 (exact up to 2^24), multiplied by the InputScale (rounded once), divided by "
        "AVERAGE_POOLING's divisor (prod(WindowSize) with IncludePadding, else the window's positions inside the "
        "input; rounded once) and quantized as the page's quantize function: divided by the OutputScale in "
        "FLOAT32, rounded halves to even, plus the output zero point, saturated (linear_quantization."
        "quantize_values); FLOAT32 denormals flushed at each step. A window wholly in the padding without "
        "IncludePadding averages 0 / 0 = NaN, which quantizes to Min (AVERAGE_POOLING gives NaN there). A call "
        "whose window could pass INT32's range (prod(WindowSize) x 255 > 2^31 - 1) is refused. Scales and zero "
        "points are per tensor (every size 1) or per channel ({1, ChannelCount, 1, 1}, the count in dimension 1, "
        "or dimension 0 of a 1-dimensional tensor): DirectML's broadcast tensors, in dmljax arrays of those "
        "Sizes. A missing zero point is 0. The OutputTensor's DataType is output_data_type= where given, else "
        "the OutputZeroPointTensor's, else the InputTensor's. The page leaves a scale of 0 undefined: a scale of "
        "0, NaN or inf (or a FLOAT32 denormal) whose values are known at the call is refused; a traced one gives "
        "IEEE's quotients, whose NaN quantizes to Min and +-inf to Max and Min. The FLOAT32 divisions are correctly "
        "rounded on every backend (linear_quantization.divide: XLA's own would multiply by the reciprocal of a "
        "constant or broadcast divisor on the CPU and approximate on a GPU), so the output is bit-exact everywhere. ONNX Runtime's com.microsoft QLinearAveragePool is the ONNX operator that "
        "maps onto this one.",
        GEOMETRY_NOTE)),
    extra_checks=(geometry_checks("InputTensor"), _checks),
    infer_outputs=_outputs,
    value_checks=(_scale_checks,),
)


def _per_channel(v, c, ndim):
    """A scale or zero point as a scalar or a (1, C, 1...) array."""
    if v is None:
        return None
    v = v.reshape(-1)
    return v.reshape(()) if v.size == 1 else v.reshape((1, c) + (1,) * (ndim - 2))


@operator(QUANTIZED_LINEAR_AVERAGE_POOLING)
def quantized_linear_average_pooling(input, input_scale, input_zero_point, output_scale, output_zero_point=None, *,
                                     strides, window_size, start_padding, end_padding, dilations, include_padding,
                                     output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[10, 20], [30, 41]]]], np.uint8)
        >>> half, one, zero_point = np.full((1, 1, 1, 1), 0.5, np.float32), np.ones((1, 1, 1, 1), np.float32), \\
        ...     np.full((1, 1, 1, 1), 10, np.uint8)
        >>> window = dict(strides=(1, 1), window_size=(2, 2), dilations=(1, 1))
        >>> dmljax.quantized_linear_average_pooling(x, half, zero_point, one, start_padding=(0, 0),
        ...                                         end_padding=(0, 0), **window)  # 61 * 0.5 / 4 = 7.625
        Array([[[[8]]]], dtype=uint8)
        >>> dmljax.quantized_linear_average_pooling(x, half, zero_point, one, start_padding=(1, 1),
        ...                                         end_padding=(0, 0), **window)[0, 0]  # 2.5 rounds to 2
        Array([[0, 2],
               [5, 8]], dtype=uint8)
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding, "Dilations": dilations})
    c, ndim = input.shape[1], input.ndim
    diff = input.astype(np.int32)
    if input_zero_point is not None:
        diff = diff - _per_channel(input_zero_point, c, ndim).astype(np.int32)
    s = lax.reduce_window(diff, np.int32(0), lax.add, **w.reduce_args())
    spatial = input.shape[2:]
    if include_padding or not (any(w.start) or any(w.end)):
        divisor = np.float32(math.prod(w.size))
    else:
        divisor = window_counts(spatial, w)
    total = store(s.astype(np.float32) * load(_per_channel(input_scale, c, ndim)), F32)
    average = store(divide(total, divisor), F32)  # correctly rounded
    return quantize_values(average, _per_channel(output_scale, c, ndim), _per_channel(output_zero_point, c, ndim),
                           output_data_type)
