"""ELEMENT_WISE_QUANTIZE_LINEAR, of the quantization family: the page's record with its formula
below it.

``input / scale`` is divided in FLOAT32 and rounded once, rounded again to an integer with halves
to even, the zero point added and the sum saturated to the output type's range: the shared
arithmetic of dmljax/_src/linear_quantization.py, as ONNX's QuantizeLinear (which ONNX Runtime's
DirectML provider maps onto this operator) computes ``saturate(round(x / y_scale) + y_zero_point)``."""

from __future__ import annotations

from dmljax._src.dtypes import FLOAT32, FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32, FLOAT32_INT32, INT8_UINT8, UINT8, DataType
from dmljax._src.errors import Violation
from dmljax._src.linear_quantization import quantize_values, scale_violations
from dmljax._src.op import operator
from dmljax._src.ops.quantization.dequantize_linear import zero_point_checks
from dmljax._src.spec import INFERRED, OpSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

__all__ = ["element_wise_quantize_linear", "scale_type_checks"]


def _table(level, dims, inputs, scales, ints):
    return table(level, InputTensor=(dims, inputs), ScaleTensor=(dims, scales), ZeroPointTensor=(dims, ints),
                 OutputTensor=(dims, ints))


def scale_type_checks(tensors, attrs, level) -> list[Violation]:
    """"If InputTensor is INT32, then ScaleTensor must be FLOAT32. Otherwise, ScaleTensor must
    have the same DataType as InputTensor.\""""
    x, s = tensors.get("InputTensor"), tensors.get("ScaleTensor")
    if x is None or s is None or x.data_type is None or s.data_type is None:
        return []
    want = DataType.FLOAT32 if x.data_type is DataType.INT32 else x.data_type
    if s.data_type is want:
        return []
    return [Violation("ScaleTensor", "scale", f"has DataType {s.data_type.name} for an InputTensor of "
                      f"{x.data_type.name}", f"{want.name} (an INT32 input takes FLOAT32 scales; "
                      "otherwise the InputTensor's DataType)",
                      tip="cast explicitly: DirectML never promotes types")]


def _output(tensors, attrs, problems) -> dict:
    """The OutputTensor has the InputTensor's Sizes (the page's "same Sizes") and the
    ZeroPointTensor's DataType; without a ZeroPointTensor (optional from 6.2), the DataType the
    caller chooses (``output_data_type=``), UINT8 by default, as ONNX's QuantizeLinear."""
    x, chosen, zp = tensors["InputTensor"], tensors.get("OutputTensor"), tensors.get("ZeroPointTensor")
    dt = zp.data_type if zp is not None else chosen.data_type if chosen is not None else DataType.UINT8
    return {"OutputTensor": TensorInfo(x.shape, dt)}


def _scale_values(values, attrs, level) -> list[Violation]:
    return scale_violations(values.get("ScaleTensor"), "ScaleTensor", "scale")


ELEMENT_WISE_QUANTIZE_LINEAR = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR",
    summary=("Performs the following linear quantization function on every element in InputTensor with respect "
             "to its corresponding element in ScaleTensor and ZeroPointTensor, placing the results in the "
             "corresponding element of OutputTensor."),
    formula=("f(input, scale, zero_point) = clamp(round(input / scale) + zero_point, Min, Max)\n"
             "// For uint8 output, Min = 0, Max = 255\n"
             "// For int8 output, Min = -128, Max = 127"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("ScaleTensor", "input"),
             TensorSpec("ZeroPointTensor", "input", optional=True),
             TensorSpec("OutputTensor", "output", default_data_type=INFERRED)),
    support=(
        _table("6.2", "1 to 8", FLOAT32_FLOAT16_INT32, FLOAT32_FLOAT16, INT8_UINT8),
        _table("6.0", "1 to 8", FLOAT32_FLOAT16_INT32, FLOAT32_FLOAT16, INT8_UINT8),
        _table("3.0", "1 to 8", FLOAT32_INT32, FLOAT32, INT8_UINT8),
        _table("2.1", "4", FLOAT32_INT32, FLOAT32, INT8_UINT8),
        _table("1.0", "4", FLOAT32, FLOAT32, UINT8),
    ),
    # "InputTensor, OutputTensor, ScaleTensor, and ZeroPointTensor must have the same DimensionCount
    # and Sizes. OutputTensor and ZeroPointTensor must have the same DataType." The OutputTensor's
    # Sizes (the InputTensor's) and its DataType without a ZeroPointTensor come from _output.
    constraints=(
        SameSizes(("InputTensor", "ScaleTensor", "ZeroPointTensor")),
        SameDataType(("OutputTensor", "ZeroPointTensor")),
    ),
    gradient=("OutputTensor is an integer tensor: no gradient reaches InputTensor or ScaleTensor (zeros), and the "
              "integer inputs get float0. For training through a quantization, dmljax.quantize_dequantize (a "
              "composition of this operator and ELEMENT_WISE_DEQUANTIZE_LINEAR, not a DirectML operator) has a "
              "straight-through gradient."),
    notes=("input / scale is divided in FLOAT32 (a FLOAT16 input and scale widened exactly, or divided in FLOAT16 "
           "with allow_half_precision_computation) and rounded once, correctly on every backend (XLA's own "
           "quotient is not: linear_quantization.divide), FLOAT32 denormals flushed on the way in; an "
           "INT32 input is first rounded once to FLOAT32 (exact up to 2^24), as ONNX's QuantizeLinear reads it. "
           "The quotient is rounded to an integer with halves to even (ONNX: \"rounding to nearest ties to even\"), "
           "the zero point added, and the sum saturated to the OutputTensor's range (UINT8 0 to 255, INT8 -128 "
           "to 127). A missing ZeroPointTensor (from DML_FEATURE_LEVEL_6_2 on) is 0; the OutputTensor's DataType "
           "is then output_data_type= (UINT8 by default, ONNX's default), and otherwise the ZeroPointTensor's. "
           "A scale whose values can be read when the operator is called (a NumPy array or a JAX array outside "
           "a trace) is refused with a ValidationError if an element is 0, NaN, infinite or a FLOAT32 denormal "
           "(the page leaves a scale of 0 undefined); a traced scale gives the arithmetic's result: x / 0 is "
           "+-inf, saturated to Max or Min, and 0 / 0, inf / inf and a NaN scale or input are NaN, saturated "
           "to Min (minNum/maxNum); an infinite scale gives the zero point. Per-axis and per-block scales and "
           "zero points are broadcast tensors (a desc's zero strides, or jnp.broadcast_to)."),
    extra_checks=(zero_point_checks, scale_type_checks),
    value_checks=(_scale_values,),
    infer_outputs=_output,
    silent=(
        SilentChoice(
            "Quantization's `round` and saturation (every quantizing operator)",
            "halves to even; the zero point added to the rounded quotient, then saturated to the output type's "
            "range by minNum/maxNum: NaN becomes Min, ±inf Max/Min",
            "ONNX's QuantizeLinear (\"ties to even\", \"saturate\"); dmljax's min/max rule for NaN.",
            also=("QUANTIZE", "DYNAMIC_QUANTIZE_LINEAR", "ELEMENT_WISE_QUANTIZED_LINEAR_ADD",
                  "QUANTIZED_LINEAR_MATRIX_MULTIPLY", "QUANTIZED_LINEAR_CONVOLUTION",
                  "QUANTIZED_LINEAR_AVERAGE_POOLING")),
        SilentChoice(
            "`value / scale` in quantization",
            "the correctly rounded FLOAT32 quotient on every backend (FLOAT64 arithmetic on the CPU; on a GPU, "
            "FLOAT32 alone: where the quotient is near a half, its exact residual decides which integer it rounds "
            "to)",
            "XLA rewrites a division by a broadcast scale into a product with the reciprocal on the CPU (7% of "
            "quotients off by a bit, -127.49999 becoming -127.5) and approximates division on the GPU (28% off "
            "on an H200): a quotient near a half would round to another integer.",
            also=("QUANTIZE", "DYNAMIC_QUANTIZE_LINEAR", "ELEMENT_WISE_QUANTIZED_LINEAR_ADD",
                  "QUANTIZED_LINEAR_MATRIX_MULTIPLY", "QUANTIZED_LINEAR_CONVOLUTION",
                  "QUANTIZED_LINEAR_AVERAGE_POOLING")),
        SilentChoice(
            "A quantization scale of 0, NaN, ±inf or a FLOAT32 denormal",
            "ValidationError where the scale's values are known at the call (NumPy arrays, JAX arrays outside "
            "a trace), for the scales that quantize or requantize (ELEMENT_WISE_QUANTIZE_LINEAR, QUANTIZE and "
            "DEQUANTIZE, every scale of QUANTIZED_LINEAR_MATRIX_MULTIPLY, _CONVOLUTION and _AVERAGE_POOLING, "
            "QLinearAdd's output scale); scales that only multiply (ELEMENT_WISE_DEQUANTIZE_LINEAR, "
            "MATRIX_MULTIPLY_INTEGER_TO_FLOAT, QLinearAdd's input scales) give IEEE's products; traced: IEEE "
            "arithmetic (`x / 0` saturates to Max/Min, 0/0 and NaN give Min, an infinite scale gives the zero "
            "point; DEQUANTIZE's product is IEEE's)",
            "The pages call a scale of 0 undefined; a known value can be refused, a traced one can only be "
            "given a defined result.",
            also=("ELEMENT_WISE_DEQUANTIZE_LINEAR", "ELEMENT_WISE_QUANTIZED_LINEAR_ADD", "QUANTIZE",
                  "DEQUANTIZE", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT", "QUANTIZED_LINEAR_MATRIX_MULTIPLY",
                  "QUANTIZED_LINEAR_CONVOLUTION", "QUANTIZED_LINEAR_AVERAGE_POOLING")),
        SilentChoice(
            "Zero points absent, per tensor, per axis, per block",
            "absent: 0; per tensor or per axis: a broadcast tensor of the input's Sizes (zero strides); "
            "QUANTIZE/DEQUANTIZE: each quantization tensor's size along a dimension equal to the input's or a "
            "divisor of it, a divisor giving blocks of consecutive elements (ragged last blocks refused)",
            "How DirectML expresses per-axis and blocked scales, and how ONNX Runtime's DirectML provider "
            "binds MatMulNBits' scales.",
            also=("ELEMENT_WISE_DEQUANTIZE_LINEAR", "ELEMENT_WISE_QUANTIZED_LINEAR_ADD", "QUANTIZE",
                  "DEQUANTIZE", "MATRIX_MULTIPLY_INTEGER", "QUANTIZED_LINEAR_MATRIX_MULTIPLY",
                  "MATRIX_MULTIPLY_INTEGER_TO_FLOAT", "CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION",
                  "QUANTIZED_LINEAR_AVERAGE_POOLING")),
        SilentChoice(
            "Quantizing operators' output type",
            "the zero point's; without one, `output_data_type=` (UINT8 by default for QUANTIZE, "
            "ELEMENT_WISE_QUANTIZE_LINEAR and DYNAMIC_QUANTIZE_LINEAR, as ONNX; the A input's type for the "
            "QUANTIZED_LINEAR_* operators)",
            "ONNX's defaults; a desc's OutputTensor names the type in DxDispatch.",
            also=("ELEMENT_WISE_QUANTIZED_LINEAR_ADD", "DYNAMIC_QUANTIZE_LINEAR", "QUANTIZE",
                  "QUANTIZED_LINEAR_MATRIX_MULTIPLY", "QUANTIZED_LINEAR_CONVOLUTION",
                  "QUANTIZED_LINEAR_AVERAGE_POOLING")),
        SilentChoice(
            "Gradients through quantization",
            "integer outputs and inputs get float0; DEQUANTIZE(_LINEAR) and MATRIX_MULTIPLY_INTEGER_TO_FLOAT "
            "differentiate with respect to their scales; `dmljax.quantize_dequantize` (a composition, not a "
            "DirectML operator) gives the straight-through estimator (dY where `round(x / s) + zp` lies in "
            "[Min, Max], else 0), DirectML's forward bits unchanged",
            "Training with fake quantization needs a gradient that the rounding does not have.",
            also=("ELEMENT_WISE_DEQUANTIZE_LINEAR", "QUANTIZE", "DEQUANTIZE", "DYNAMIC_QUANTIZE_LINEAR",
                  "MATRIX_MULTIPLY_INTEGER_TO_FLOAT")),
    ),
)


@operator(ELEMENT_WISE_QUANTIZE_LINEAR)
def element_wise_quantize_linear(input, scale, zero_point=None, *, output_data_type, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([0, 2, 3, 1000, -254, -1000], np.float32)
        >>> dmljax.element_wise_quantize_linear(x, np.full(6, 2, np.float32), np.full(6, 128, np.uint8))
        Array([128, 129, 130, 255,   1,   0], dtype=uint8)
    """
    return quantize_values(input, scale, zero_point, output_data_type, allow_half=allow_half_precision_computation)
