"""ELEMENT_WISE_QUANTIZED_LINEAR_ADD, of the quantization family: the page's record with its formula
below it.

Each input is dequantized (its difference from its zero point exact, times its scale, rounded once
to FLOAT32), the two values added (rounded once) and the sum requantized with the shared arithmetic
of dmljax/_src/linear_quantization.py, as ONNX Runtime's com.microsoft QLinearAdd (which its
DirectML provider maps onto this operator) defines it: dequantize both, add in float, quantize."""

from __future__ import annotations

from jax import lax

from dmljax._src.dtypes import FLOAT32, INT8_UINT8
from dmljax._src.errors import Violation
from dmljax._src.linear_quantization import exact_difference, quantize_values, scale_violations
from dmljax._src.numerics import load
from dmljax._src.op import operator
from dmljax._src.spec import INFERRED, OpSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, snake_case, table
from dmljax._src.validate import TensorInfo

__all__ = ["element_wise_quantized_linear_add"]

_ONE_ELEMENT = ("AScaleTensor", "AZeroPointTensor", "BScaleTensor", "BZeroPointTensor", "OutputScaleTensor",
                "OutputZeroPointTensor")


def _one_element_checks(tensors, attrs, level) -> list[Violation]:
    """"The expected number of elements in AScaleTensor is 1" (and in each scale and zero point),
    with ATensor's DimensionCount ("must have the same DimensionCount"): Sizes of all 1s."""
    a = tensors.get("ATensor")
    if a is None:
        return []
    one = [1] * len(a.shape)
    problems = []
    for name in _ONE_ELEMENT:
        t = tensors.get(name)
        if t is not None and list(t.shape) != one:
            problems.append(Violation(
                name, snake_case(name), f"has Sizes {list(t.shape)}",
                f"one element with ATensor's DimensionCount, Sizes {one} (the page: \"The expected number of "
                "elements ... is 1\")",
                tip="a per-tensor scale or zero point: reshape it to all 1s (DirectML broadcasts it with zero strides)"))
    return problems


def _output(tensors, attrs, problems) -> dict:
    """The OutputTensor has ATensor's Sizes and OutputZeroPointTensor's DataType; without one (an
    optional input), the DataType the caller chooses (``output_data_type=``), ATensor's by default
    (QLinearAdd's C has A's type)."""
    a, chosen, zp = tensors["ATensor"], tensors.get("OutputTensor"), tensors.get("OutputZeroPointTensor")
    dt = zp.data_type if zp is not None else chosen.data_type if chosen is not None else a.data_type
    return {"OutputTensor": TensorInfo(a.shape, dt)}


def _output_scale_values(values, attrs, level) -> list[Violation]:
    return scale_violations(values.get("OutputScaleTensor"), "OutputScaleTensor", "output_scale")


ELEMENT_WISE_QUANTIZED_LINEAR_ADD = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD",
    summary=("Adds every element in ATensor to its corresponding element in BTensor, placing the result into the "
             "corresponding element of OutputTensor. Values contained in ATensor and BTensor are dequantized, and "
             "then added and requantized."),
    formula=("AValue = (A - AZeroPoint) * AScale\n"
             "BValue = (B - BZeroPoint) * BScale\n"
             "\n"
             "OutputValue = AValue + BValue\n"
             "\n"
             "// For uint8 output, Min = 0, Max = 255\n"
             "// For int8 output, Min = -128, Max = 127\n"
             "OutputTensor = clamp(round(OutputValue / OutputScale) + OutputZeroPoint, Min, Max)"),
    # The page's order is A, AScale, AZeroPoint, B, BScale, BZeroPoint, OutputScale,
    # OutputZeroPoint, Output; the optional zero points come after the required inputs here, as
    # Python's positional arguments must.
    tensors=(TensorSpec("ATensor", "input"), TensorSpec("AScaleTensor", "input"),
             TensorSpec("BTensor", "input"), TensorSpec("BScaleTensor", "input"),
             TensorSpec("OutputScaleTensor", "input"),
             TensorSpec("AZeroPointTensor", "input", optional=True),
             TensorSpec("BZeroPointTensor", "input", optional=True),
             TensorSpec("OutputZeroPointTensor", "input", optional=True),
             TensorSpec("OutputTensor", "output", default_data_type=INFERRED)),
    support=(
        table("4.0", ATensor=("1 to 8", INT8_UINT8), AScaleTensor=("1 to 8", FLOAT32),
              AZeroPointTensor=("1 to 8", INT8_UINT8), BTensor=("1 to 8", INT8_UINT8),
              BScaleTensor=("1 to 8", FLOAT32), BZeroPointTensor=("1 to 8", INT8_UINT8),
              OutputScaleTensor=("1 to 8", FLOAT32), OutputZeroPointTensor=("1 to 8", INT8_UINT8),
              OutputTensor=("1 to 8", INT8_UINT8)),
    ),
    # "... must have the same DimensionCount. BTensor and BZeroPointTensor must have the same
    # DataType. OutputTensor and OutputZeroPointTensor must have the same DataType. ATensor and
    # AZeroPointTensor must have the same DataType." ATensor and BTensor hold corresponding
    # elements (the same Sizes); the scales' and zero points' one element is _one_element_checks',
    # the OutputTensor's Sizes (ATensor's) _output's.
    constraints=(
        SameDataType(("BTensor", "BZeroPointTensor")),
        SameDataType(("OutputTensor", "OutputZeroPointTensor")),
        SameDataType(("ATensor", "AZeroPointTensor")),
        SameSizes(("ATensor", "BTensor")),
    ),
    math=False,
    gradient=("OutputTensor is an integer tensor: no gradient reaches the scales (zeros), and the integer inputs get "
              "float0."),
    notes=("Each step is FLOAT32 arithmetic rounded once, in the formula's order: A - AZeroPoint exact, times AScale "
           "(rounded; likewise B), the two values added (rounded), the sum divided by OutputScale (rounded), then "
           "rounded to an integer with halves to even, OutputZeroPoint added and saturated to the OutputTensor's "
           "range, NaN to Min (the shared quantize arithmetic). The products are kept apart from the sum (no FMA "
           "contraction, which a backend may otherwise apply), so the result is the same on every backend. A "
           "missing zero point is 0; without an OutputZeroPointTensor the OutputTensor's DataType is "
           "output_data_type= (ATensor's by default, as ONNX Runtime's QLinearAdd gives C A's type). ATensor and "
           "BTensor have the same Sizes (corresponding elements) and may differ in DataType; each scale and zero "
           "point is one element with ATensor's DimensionCount (Sizes of all 1s), as the page expects. An "
           "OutputScale whose value can be read when the operator is called that is 0, NaN, infinite or a FLOAT32 "
           "denormal is refused with a ValidationError; a traced one gives the arithmetic's result (x / 0 is "
           "+-inf, saturated to Max or Min; 0 / 0 and NaN saturate to Min). AScale and BScale dequantize as "
           "ELEMENT_WISE_DEQUANTIZE_LINEAR does: 0 gives 0, an infinite or NaN one IEEE's results, saturated."),
    extra_checks=(_one_element_checks,),
    value_checks=(_output_scale_values,),
    infer_outputs=_output,
    silent=(
        SilentChoice(
            "Requantization (QUANTIZED_LINEAR_MATRIX_MULTIPLY, QUANTIZED_LINEAR_CONVOLUTION, "
            "ELEMENT_WISE_QUANTIZED_LINEAR_ADD, QUANTIZED_LINEAR_AVERAGE_POOLING)",
            "the INT32 sum (plus an exact INT32 bias) rounded once to FLOAT32, times the input scales' FLOAT32 "
            "product, then quantized by the output scale; QLinearAdd dequantizes each input with one rounding "
            "(no FMA) before the sum; QLinearAveragePool divides the exact window sum as AVERAGE_POOLING does "
            "(an empty window gives NaN, so Min)",
            "ONNX's definitions with each step rounded once, so that every backend gives the same bits.",
            also=("QUANTIZED_LINEAR_MATRIX_MULTIPLY", "QUANTIZED_LINEAR_CONVOLUTION",
                  "QUANTIZED_LINEAR_AVERAGE_POOLING")),
    ),
)


@operator(ELEMENT_WISE_QUANTIZED_LINEAR_ADD)
def element_wise_quantized_linear_add(a, a_scale, b, b_scale, output_scale, a_zero_point=None, b_zero_point=None,
                                      output_zero_point=None, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> one = lambda v, t=np.float32: np.full((1,), v, t)
        >>> a, b = np.array([0, 10, 250], np.uint8), np.array([0, 20, 250], np.uint8)
        >>> dmljax.element_wise_quantized_linear_add(a, one(0.5), b, one(0.25), one(1.0), one(0, np.uint8),
        ...                                          one(0, np.uint8), one(3, np.uint8))
        Array([  3,  13, 191], dtype=uint8)
    """
    a_value = exact_difference(a, a_zero_point) * load(a_scale)
    b_value = exact_difference(b, b_zero_point) * load(b_scale)
    # each product rounded on its own: the barrier keeps XLA from contracting one with the sum
    a_value, b_value = lax.optimization_barrier((a_value, b_value))
    return quantize_values(a_value + b_value, output_scale, output_zero_point, output_data_type)
