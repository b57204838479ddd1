"""ELEMENT_WISE_DEQUANTIZE_LINEAR, of the quantization family: the page's record with its formula
below it.

The difference ``input - zero_point`` is taken exactly (it can need 33 bits) and rounded once to
FLOAT32, then multiplied by the scale in the compute type and rounded once to the output's type,
as ONNX's DequantizeLinear (which ONNX Runtime's DirectML provider maps onto this operator)
computes ``(x - x_zero_point) * x_scale``."""

from __future__ import annotations

from dmljax._src.dtypes import FLOAT32, FLOAT32_FLOAT16, INT32_INT16_INT8_UINT32_UINT16_UINT8, UINT8, DataType
from dmljax._src.errors import Violation
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.linear_quantization import dequantize_values
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, SameDataType, SameSizes, TensorSpec, table

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
_INTS = INT32_INT16_INT8_UINT32_UINT16_UINT8


def _table(level, dims, ints, floats):
    return table(level, InputTensor=(dims, ints), ScaleTensor=(dims, floats), ZeroPointTensor=(dims, ints),
                 OutputTensor=(dims, floats))


def zero_point_checks(tensors, attrs, level) -> list[Violation]:
    """The ZeroPointTensor is optional from DML_FEATURE_LEVEL_6_2 on (the tables' "Optional
    input"); before, it is an input like the others. ELEMENT_WISE_QUANTIZE_LINEAR's tables say the
    same of its ZeroPointTensor, and its record uses this check too."""
    if "ZeroPointTensor" in tensors or level >= FeatureLevel.FL_6_2:
        return []
    return [Violation("ZeroPointTensor", "zero_point", "is missing",
                      "required before DML_FEATURE_LEVEL_6_2 (optional from 6.2 on)",
                      tip="pass zero_point=, or a feature level of 6.2 or above")]


ELEMENT_WISE_DEQUANTIZE_LINEAR = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR",
    summary=("Performs the following linear dequantization function on every element in InputTensor with "
             "respect to its corresponding element in ScaleTensor and ZeroPointTensor, placing the results in "
             "the corresponding element of OutputTensor."),
    formula="f(input, scale, zero_point) = (input - zero_point) * scale",
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("ScaleTensor", "input"),
             TensorSpec("ZeroPointTensor", "input", optional=True), TensorSpec("OutputTensor", "output")),
    support=(
        _table("6.2", "1 to 8", _INTS, FLOAT32_FLOAT16),
        _table("6.0", "1 to 8", _INTS, FLOAT32_FLOAT16),
        _table("3.0", "1 to 8", _INTS, FLOAT32),
        _table("2.1", "4", _INTS, FLOAT32),
        _table("1.0", "4", UINT8, FLOAT32),
    ),
    # "InputTensor, OutputTensor, ScaleTensor, and ZeroPointTensor must have the same DimensionCount
    # and Sizes. InputTensor and ZeroPointTensor must have the same DataType. OutputTensor and
    # ScaleTensor must have the same DataType."
    constraints=(
        SameSizes(("InputTensor", "ScaleTensor", "ZeroPointTensor", "OutputTensor")),
        SameDataType(("InputTensor", "ZeroPointTensor")),
        SameDataType(("ScaleTensor", "OutputTensor")),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=2,
    gradient=("The formula differentiated: dScale = (input - zero_point) * dY, the difference as the forward "
              "pass rounds it to FLOAT32; InputTensor and ZeroPointTensor are integers: no gradient (float0)."),
    notes=("The difference input - zero_point is exact (INT32 and UINT32 ones need 33 bits) and rounded once to "
           "FLOAT32; the product with the scale is computed in FLOAT32 (FLOAT16 scales widened, unless "
           "allow_half_precision_computation) and rounded once to the output's type, FLOAT32 denormals flushed. "
           "A missing ZeroPointTensor (from DML_FEATURE_LEVEL_6_2 on) is 0. A scale of 0 gives zeros of the "
           "difference's sign, an infinite scale infinities (NaN where the difference is 0), a NaN scale NaN: "
           "the page leaves a scale of 0 undefined, and these are IEEE arithmetic's results. Per-axis and "
           "per-block scales and zero points are broadcast tensors (a desc's zero strides, or "
           "jnp.broadcast_to)."),
    extra_checks=(zero_point_checks,),
)


@operator(ELEMENT_WISE_DEQUANTIZE_LINEAR)
def element_wise_dequantize_linear(input, scale, zero_point=None, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> q = np.array([0, 128, 255], np.uint8)
        >>> dmljax.element_wise_dequantize_linear(q, np.full(3, 0.5, np.float32), np.full(3, 128, np.uint8))
        Array([-64. ,   0. ,  63.5], dtype=float32)
    """
    return dequantize_values(input, scale, zero_point, allow_half=allow_half_precision_computation)
