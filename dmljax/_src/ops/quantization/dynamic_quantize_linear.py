"""DYNAMIC_QUANTIZE_LINEAR, of the quantization family: the page's record with its formula below it.

The page's formula block holds two lines copied from ELEMENT_WISE_QUANTIZED_LINEAR_ADD's page and
leaves the range, the zero point's rounding and the empty range open; the record's formula is
ONNX's DynamicQuantizeLinear (which ONNX Runtime's DirectML provider maps onto this operator) with
the page's Min and Max, every step in FLOAT32 as ONNX's definition and ONNX Runtime compute it."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.dtypes import FLOAT32, FLOAT32_FLOAT16, INT8_UINT8, DataType
from dmljax._src.linear_quantization import divide, integer_range, quantize_values
from dmljax._src.numerics import is_nan, load, max_num, min_num, store
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

__all__ = ["dynamic_quantize_linear"]


def _outputs(tensors, attrs, problems) -> dict:
    """OutputTensor: the InputTensor's Sizes, the DataType the caller chooses (UINT8 by default,
    ONNX's only type); OutputScaleTensor (FLOAT32) and OutputZeroPointTensor (OutputTensor's
    DataType): one element each, with the InputTensor's DimensionCount ("The expected number of
    elements ... is 1"; "must have the same DimensionCount")."""
    x, dt = tensors["InputTensor"], tensors["OutputTensor"].data_type
    one = (1,) * len(x.shape)
    return {"OutputTensor": TensorInfo(x.shape, dt), "OutputScaleTensor": TensorInfo(one, DataType.FLOAT32),
            "OutputZeroPointTensor": TensorInfo(one, dt)}


DYNAMIC_QUANTIZE_LINEAR = OpSpec(
    enum_name="DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR",
    summary=("Calculates the quantization scale and zero point values necessary to quantize the InputTensor, then "
             "applies that quantization, writing the result to OutputTensor."),
    formula=("InputMax = Max(InputTensor)\n"
             "InputMin = Min(InputTensor)\n"
             "// the range widened to include 0 (ONNX's DynamicQuantizeLinear)\n"
             "InputMax = max(InputMax, 0)\n"
             "InputMin = min(InputMin, 0)\n"
             "\n"
             "// For uint8 output, Min = 0, Max = 255\n"
             "// For int8 output, Min = -128, Max = 127\n"
             "OutputScale = (InputMax - InputMin) / (Max - Min)   // 1 where this is 0\n"
             "\n"
             "OutputZeroPoint = clamp(round(Min - InputMin / OutputScale), Min, Max)\n"
             "\n"
             "OutputTensor = clamp(round(InputValue / OutputScale) + OutputZeroPoint, Min, Max)"),
    tensors=(TensorSpec("InputTensor", "input"),
             TensorSpec("OutputTensor", "output", default_data_type=DataType.UINT8),
             TensorSpec("OutputScaleTensor", "output"), TensorSpec("OutputZeroPointTensor", "output")),
    support=(
        table("4.0", InputTensor=("1 to 8", FLOAT32_FLOAT16), OutputTensor=("1 to 8", INT8_UINT8),
              OutputScaleTensor=("1 to 8", FLOAT32), OutputZeroPointTensor=("1 to 8", INT8_UINT8)),
    ),
    # "InputTensor, OutputScaleTensor, OutputTensor, and OutputZeroPointTensor must have the same
    # DimensionCount. OutputTensor and OutputZeroPointTensor must have the same DataType." The three
    # outputs' Sizes and DataTypes come from _outputs.
    constraints=(SameDataType(("OutputTensor", "OutputZeroPointTensor")),),
    math=False,
    gradient=("OutputTensor and OutputZeroPointTensor are integers: no gradient. OutputScaleTensor's is the "
              "formula's: dOutputScale / (Max - Min) to the element that gave InputMax (the first in row-major "
              "order, as REDUCE's MAX) where InputMax > 0, and minus it to the element that gave InputMin where "
              "InputMin < 0 (the widening's 0 takes no gradient); 0 where the scale is the empty range's 1."),
    notes=("The page's formula block also holds the lines AValue = (A - AZeroPoint) * AScale and BValue = (B - "
           "BZeroPoint) * BScale, copied from ELEMENT_WISE_QUANTIZED_LINEAR_ADD's page (this operator has no A or "
           "B); the formula above leaves them out and says what the page leaves open, following ONNX's "
           "DynamicQuantizeLinear and ONNX Runtime: the range is widened to include 0, so InputMin <= 0 <= "
           "InputMax; NaN elements are skipped (maxNum/minNum) and FLOAT32 denormals read as 0. Every step is "
           "FLOAT32 arithmetic rounded once (a FLOAT16 input is widened exactly; the operator has no "
           "allow_half_precision_computation, as its scale is FLOAT32): InputMax - InputMin, then the quotient "
           "by Max - Min (255 for both types), FLOAT32 denormals flushed. An empty range (an input of zeros, "
           "or a range whose scale is below FLOAT32's normal numbers) gives OutputScale 1, as ONNX Runtime's "
           "kernel does (ONNX's reference evaluator gives 1/255, the formula 0 / 0), so OutputZeroPoint is Min "
           "and every output element Min, with no NaN. The zero point is Min - InputMin / OutputScale in "
           "FLOAT32, rounded with halves to even and saturated (a constant input c gives the range [0, c] or "
           "[c, 0]). INT8 is asymmetric, as the page's Min = -128 and Max = 127 in its own formula make it "
           "(ONNX defines only UINT8, and ONNX Runtime's DirectML provider registers only UINT8; for UINT8 the "
           "two definitions are the same). An infinite element, or a range beyond FLOAT32's, makes "
           "OutputScale +inf: OutputZeroPoint is then Min (NaN from -inf / inf saturates to Min) and every "
           "output element Min."),
    infer_outputs=_outputs,
    silent=(
        SilentChoice(
            "DYNAMIC_QUANTIZE_LINEAR",
            "ONNX's formula (the page's formula block holds two lines of QLinearAdd's page): range widened to "
            "include 0, NaN skipped, every step one FLOAT32 rounding, zero point rounded halves to even and "
            "saturated; an empty range (all 0) gives scale 1 and outputs Min; INT8 is asymmetric over "
            "-128..127",
            "ONNX defines UINT8 only; scale 1 is ONNX Runtime's kernel's choice and keeps NaN out."),
    ),
)


def _skipping_nan(x):
    """A FLOAT32 tensor flattened twice, NaN read as -inf (for the maximum) and as +inf (for the
    minimum)."""
    flat = x.reshape(-1)
    nan = is_nan(flat)
    return jnp.where(nan, -jnp.inf, flat), jnp.where(nan, jnp.inf, flat)


def _range(x):
    """The widened InputMax and InputMin of a FLOAT32 tensor (NaN skipped): two reductions. They
    are ``_extremes``' values but for the sign of a zero extreme, which no output reads (the
    widening to 0 makes a zero extreme's difference ``top - bottom`` and quotient ``bottom / scale``
    the same either way); the forward pass takes them, as an arg-max and its gather cost an XLA CPU
    program a loop each (ONNX Runtime's dynamically quantized LSTM, each step's Ht-1 quantized by
    batch row: 0.81x the call's time with the byte-wise flip of MATRIX_MULTIPLY_INTEGER, paired)."""
    hi, lo = _skipping_nan(x)
    return max_num(jnp.max(hi), 0.0), min_num(jnp.min(lo), 0.0)


def _extremes(x):
    """``_range`` and the first flat indices of the elements that gave the extremes (the
    derivative's)."""
    hi, lo = _skipping_nan(x)
    i_hi, i_lo = jnp.argmax(hi), jnp.argmin(lo)
    return max_num(hi[i_hi], 0.0), min_num(lo[i_lo], 0.0), i_hi, i_lo


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _scale(x, divisor):
    """OutputScale of a tensor (FLOAT32, shape ()): (InputMax - InputMin) / divisor, each step
    rounded to FLOAT32, denormals flushed, 1 for an empty range (``divisor``: Max - Min)."""
    top, bottom = _range(load(x))
    s = store(divide(top - bottom, np.float32(divisor)), DataType.FLOAT32)
    return jnp.where(s == 0, jnp.float32(1), s)


@_scale.defjvp
def _scale_jvp(divisor, primals, tangents):
    (x,), (dx,) = primals, tangents
    s = _scale(x, divisor)
    v = load(x)
    top, bottom, i_hi, i_lo = _extremes(v)
    d = dx.reshape(-1).astype(np.float32)
    up = jnp.where(top > 0, d[i_hi], jnp.float32(0))
    down = jnp.where(bottom < 0, d[i_lo], jnp.float32(0))
    empty = store(divide(top - bottom, np.float32(divisor)), DataType.FLOAT32) == 0
    return s, jnp.where(empty, jnp.float32(0), (up - down) / np.float32(divisor))  # linear in dx


@operator(DYNAMIC_QUANTIZE_LINEAR)
def dynamic_quantize_linear(input, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([0, 2, -3, -2.5, 1.34, 0.5], np.float32)
        >>> y, scale, zero_point = dmljax.dynamic_quantize_linear(x)
        >>> y, scale, zero_point
        (Array([153, 255,   0,  26, 221, 179], dtype=uint8), Array([0.01960784], dtype=float32), Array([153], dtype=uint8))
    """
    lo, hi = integer_range(output_data_type)
    s = _scale(input, float(hi - lo))
    bottom = _range(load(input))[1]
    zero_point_value = np.float32(lo) - divide(bottom, s)
    # the shared rounding (halves to even) and saturation (NaN to Min); the division by 1 is exact
    zero_point = quantize_values(zero_point_value, jnp.float32(1), None, output_data_type)
    out = quantize_values(input, s, zero_point, output_data_type)
    one = (1,) * input.ndim
    return out, s.reshape(one), zero_point.reshape(one)
