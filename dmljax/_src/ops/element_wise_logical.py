"""Element-wise logical operators (comparisons, selection): each page's record, with its
formula right below it."""

from __future__ import annotations


from jax import lax

from dmljax._src.dtypes import (
    FLOAT16, FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    UINT32,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, UINT8, UINT32_UINT8, DataType,
)
from dmljax._src.numerics import (
    load,
)
from dmljax._src.op import operator
from dmljax._src.ops._families import (
    comparison_op,
)
from dmljax._src.spec import OpSpec, SameDataType, SameSizes, TensorSpec, table

F32, F16, F64 = DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64

# --------------------------------------------------------------------------------------------
ELEMENT_WISE_IF = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_IF",
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
              ConditionTensor=("1 to 8", UINT8),
              ATensor=("1 to 8", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
              BTensor=("1 to 8", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
              OutputTensor=("1 to 8", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8)),
        table("3.0",
              ConditionTensor=("1 to 8", UINT8),
              ATensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
              BTensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
              OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8)),
        table("2.0",
              ConditionTensor=("4", UINT8),
              ATensor=("4", FLOAT16),
              BTensor=("4", FLOAT16),
              OutputTensor=("4", FLOAT16)),
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
ELEMENT_WISE_LOGICAL_LESS_THAN = comparison_op(
    "ELEMENT_WISE_LOGICAL_LESS_THAN",
    summary=("Performs a logical less than on each pair of corresponding elements of the input "
             "tensors, placing the result (1 for true, 0 for false) into the corresponding "
             "element of OutputTensor."),
    formula="f(a, b) = (a < b)",
    support=(
        ("4.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, UINT32_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, UINT32_UINT8),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, UINT32_UINT8),
        ("2.0", "4", FLOAT32_FLOAT16, UINT32_UINT8),
        ("1.0", "4", FLOAT32_FLOAT16, UINT32),
    ),
    gradient="None: the output is an integer tensor (its cotangent is float0).",
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


