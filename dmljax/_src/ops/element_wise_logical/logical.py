"""Element-wise logical operators (comparisons, boolean logic, NaN and infinity tests,
selection): each page's record, with its formula right below it."""

from __future__ import annotations

from typing import Sequence

import jax.numpy as jnp
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT16, FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    UINT32,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, UINT8, UINT32_UINT8, DataType,
)
from dmljax._src.enums import IsInfinityMode
from dmljax._src.numerics import (
    load,
)
from dmljax._src.op import operator
from dmljax._src.ops.factories import (
    binary_op, comparison_op, unary_op,
)
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

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
    silent=(
        SilentChoice(
            "LOGICAL_LESS_THAN output type",
            "UINT8 by default, `output_data_type=\"UINT32\"` on request",
            "UINT8 is the smaller boolean type, as ONNX's; at feature level 1.0 only UINT32 is allowed, so the "
            "default is refused there with a tip, not silently changed."),
    ),
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
    return (load(a, float_reads=True) < load(b, float_reads=True)).astype(output_data_type.dtype)




# --------------------------------------------------------------------------------------------
# The other comparisons: LESS_THAN's shape (comparison_op), each with its page's tables.
SUPPORT_COMPARISON = (
    ("4.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, UINT32_UINT8),
    ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, UINT32_UINT8),
    ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, UINT32_UINT8),
    ("2.0", "4", FLOAT32_FLOAT16, UINT32_UINT8),
    ("1.0", "4", FLOAT32_FLOAT16, UINT32),
)
"""The table of the EQUALS, GREATER_THAN and LESS_THAN pages (FL 1.0 allows only a UINT32
output)."""
SUPPORT_COMPARISON_3_0 = (
    ("4.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, UINT32_UINT8),
    ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, UINT32_UINT8),
)
"""The table of the GREATER_THAN_OR_EQUAL and LESS_THAN_OR_EQUAL pages (introduced in FL 3.0)."""

_COMPARISON_GRADIENT = "None: the output is an integer tensor (its cotangent is float0)."
_COMPARISON_NOTES = ("FLOAT32 denormal inputs compare as zero (so -0.0, +0.0 and FLOAT32 denormals are all "
                     "equal).")

ELEMENT_WISE_LOGICAL_EQUALS = comparison_op(
    "ELEMENT_WISE_LOGICAL_EQUALS",
    summary=("Performs a logical equals on each pair of corresponding elements of the input "
             "tensors, placing the result (1 for true, 0 for false) into the corresponding "
             "element of OutputTensor."),
    formula="f(a, b) = (a == b)",
    support=SUPPORT_COMPARISON,
    gradient=_COMPARISON_GRADIENT,
    notes=_COMPARISON_NOTES,
    silent=(
        SilentChoice(
            "Comparisons",
            "NaN compares false (also with itself); FLOAT32 denormals compare as ±0; integers compare exactly, "
            "64-bit included; output UINT8 unless `output_data_type=\"UINT32\"`",
            "IEEE; the [denormal rule](semantics.md#denormals); as LESS_THAN.",
            also=("ELEMENT_WISE_LOGICAL_GREATER_THAN", "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL",
                  "ELEMENT_WISE_LOGICAL_LESS_THAN", "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL")),
    ),
)


@operator(ELEMENT_WISE_LOGICAL_EQUALS)
def element_wise_logical_equals(a, b, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([1.0, -0.0, np.nan, 2.0], np.float32)
        >>> b = np.array([1.0, 0.0, np.nan, 3.0], np.float32)
        >>> dmljax.element_wise_logical_equals(a, b)
        Array([1, 1, 0, 0], dtype=uint8)
    """
    return (load(a, float_reads=True) == load(b, float_reads=True)).astype(output_data_type.dtype)


ELEMENT_WISE_LOGICAL_GREATER_THAN = comparison_op(
    "ELEMENT_WISE_LOGICAL_GREATER_THAN",
    summary=("Performs a logical greater than on each pair of corresponding elements of the input "
             "tensors, placing the result (1 for true, 0 for false) into the corresponding "
             "element of OutputTensor."),
    formula="f(a, b) = (a > b)",
    support=SUPPORT_COMPARISON,
    gradient=_COMPARISON_GRADIENT,
    notes=_COMPARISON_NOTES,
)


@operator(ELEMENT_WISE_LOGICAL_GREATER_THAN)
def element_wise_logical_greater_than(a, b, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([1, 5, 3], np.int32), np.array([2, 5, 1], np.int32)
        >>> dmljax.element_wise_logical_greater_than(a, b, output_data_type="UINT32")
        Array([0, 0, 1], dtype=uint32)
    """
    return (load(a, float_reads=True) > load(b, float_reads=True)).astype(output_data_type.dtype)


ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL = comparison_op(
    "ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL",
    summary=("Performs a logical greater than or equal to on each pair of corresponding elements "
             "of the input tensors, placing the result (1 for true, 0 for false) into the "
             "corresponding element of OutputTensor."),
    formula="f(a, b) = (a >= b)",
    support=SUPPORT_COMPARISON_3_0,
    gradient=_COMPARISON_GRADIENT,
    notes=_COMPARISON_NOTES + " With a NaN the result is 0: it is not (a < b) negated.",
)


@operator(ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL)
def element_wise_logical_greater_than_or_equal(a, b, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([1.0, 5.0, 3.0, np.nan], np.float32)
        >>> b = np.array([2.0, 5.0, 1.0, 1.0], np.float32)
        >>> dmljax.element_wise_logical_greater_than_or_equal(a, b)
        Array([0, 1, 1, 0], dtype=uint8)
    """
    return (load(a, float_reads=True) >= load(b, float_reads=True)).astype(output_data_type.dtype)


ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL = comparison_op(
    "ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL",
    summary=("Performs a logical less than or equal to on each pair of corresponding elements of "
             "the input tensors, placing the result (1 for true, 0 for false) into the "
             "corresponding element of OutputTensor."),
    formula="f(a, b) = (a <= b)",
    support=SUPPORT_COMPARISON_3_0,
    gradient=_COMPARISON_GRADIENT,
    notes=(_COMPARISON_NOTES + " With a NaN the result is 0: it is not (a > b) negated. The page "
           "has two Availability sections (FL 1.0 and FL 3.0) and tables from FL 3.0: DirectML.h's "
           "FL 3.0 is used."),
)


@operator(ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL)
def element_wise_logical_less_than_or_equal(a, b, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([1, 5, 3], np.uint8), np.array([2, 5, 1], np.uint8)
        >>> dmljax.element_wise_logical_less_than_or_equal(a, b)
        Array([1, 1, 0], dtype=uint8)
    """
    return (load(a, float_reads=True) <= load(b, float_reads=True)).astype(output_data_type.dtype)


# --------------------------------------------------------------------------------------------
# Boolean logic on UINT8/UINT32 tensors: non-zero is true (C's && || !), the result is 1 or 0 in
# the inputs' own DataType.
SUPPORT_LOGIC = (
    ("3.0", "1 to 8", UINT32_UINT8),
    ("2.0", "4", UINT32_UINT8),
    ("1.0", "4", UINT32),
)
"""The table of the LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR and LOGICAL_NOT pages."""

_LOGIC_GRADIENT = "None: the inputs and the output are integer tensors (float0)."
_LOGIC_NOTES = ("Any non-zero input is true (the page's formula is C's), the result is 1 for true "
                "and 0 for false in the tensors' DataType.")

ELEMENT_WISE_LOGICAL_AND = binary_op(
    "ELEMENT_WISE_LOGICAL_AND",
    summary=("Performs a logical AND on each pair of corresponding elements of the input tensors, "
             "placing the result (1 for true, 0 for false) into the corresponding element of "
             "OutputTensor."),
    formula="f(a, b) = (a && b)",
    support=SUPPORT_LOGIC,
    math=False,
    gradient=_LOGIC_GRADIENT,
    notes=_LOGIC_NOTES,
    silent=(
        SilentChoice(
            "LOGICAL_AND / OR / XOR / NOT",
            "any non-zero value is true; 1 or 0 in the inputs' type; XOR is logical (`XOR(1, 2) = 0`)",
            "The pages' C formulas (`&&`, `||`, `!`).",
            also=("ELEMENT_WISE_LOGICAL_OR", "ELEMENT_WISE_LOGICAL_XOR", "ELEMENT_WISE_LOGICAL_NOT")),
    ),
)


@operator(ELEMENT_WISE_LOGICAL_AND)
def element_wise_logical_and(a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([0, 1, 2, 255], np.uint8), np.array([1, 0, 4, 1], np.uint8)
        >>> dmljax.element_wise_logical_and(a, b)
        Array([0, 0, 1, 1], dtype=uint8)
    """
    return ((a != 0) & (b != 0)).astype(a.dtype)


ELEMENT_WISE_LOGICAL_OR = binary_op(
    "ELEMENT_WISE_LOGICAL_OR",
    summary=("Performs a logical OR on each pair of corresponding elements of the input tensors, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(a, b) = (a || b)",
    support=SUPPORT_LOGIC,
    math=False,
    gradient=_LOGIC_GRADIENT,
    notes=_LOGIC_NOTES,
)


@operator(ELEMENT_WISE_LOGICAL_OR)
def element_wise_logical_or(a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([0, 0, 2, 255], np.uint32), np.array([0, 7, 0, 1], np.uint32)
        >>> dmljax.element_wise_logical_or(a, b)
        Array([0, 1, 1, 1], dtype=uint32)
    """
    return ((a != 0) | (b != 0)).astype(a.dtype)


ELEMENT_WISE_LOGICAL_XOR = binary_op(
    "ELEMENT_WISE_LOGICAL_XOR",
    summary=("Performs a logical XOR (exclusive or) on each pair of corresponding elements of the "
             "input tensors, placing the result into the corresponding element of OutputTensor."),
    formula="f(a, b) = (!!a) != (!!b)",
    support=SUPPORT_LOGIC,
    math=False,
    gradient=_LOGIC_GRADIENT,
    notes=_LOGIC_NOTES,
)


@operator(ELEMENT_WISE_LOGICAL_XOR)
def element_wise_logical_xor(a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([0, 1, 1, 0], np.uint8), np.array([0, 2, 0, 3], np.uint8)
        >>> dmljax.element_wise_logical_xor(a, b)
        Array([0, 0, 1, 1], dtype=uint8)
    """
    return ((a != 0) != (b != 0)).astype(a.dtype)


ELEMENT_WISE_LOGICAL_NOT = unary_op(
    "ELEMENT_WISE_LOGICAL_NOT",
    summary=("Performs a logical NOT on each element of InputTensor, placing the result into the "
             "corresponding element of OutputTensor."),
    formula="f(x) = !x",
    support=SUPPORT_LOGIC,
    math=False,
    gradient=_LOGIC_GRADIENT,
    notes=_LOGIC_NOTES,
)


@operator(ELEMENT_WISE_LOGICAL_NOT)
def element_wise_logical_not(input):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_logical_not(np.array([0, 1, 2, 255], np.uint8))
        Array([1, 0, 0, 0], dtype=uint8)
    """
    return (input == 0).astype(input.dtype)


# --------------------------------------------------------------------------------------------
# Tests of a float's class (NaN, infinity): one float input, a 1-or-0 output whose DataType the
# page lets the caller choose among its row's types ("InputTensor and OutputTensor must have the
# same DimensionCount and Sizes").
def float_test_op(short_name: str, *, support: Sequence[tuple[str, str, tuple, tuple]],
                  default_output: DataType = DataType.UINT8, **fields) -> OpSpec:
    """``f(x)`` with a boolean result (1 or 0) in an integer OutputTensor whose DataType the caller
    picks (``output_data_type=``): ``support`` rows are (level, dims, input types, output types).
    comparison_op's unary counterpart (IS_NAN, IS_INFINITY)."""
    tensors = (TensorSpec("InputTensor", "input"),
               TensorSpec("OutputTensor", "output", default_data_type=default_output))
    tables = tuple(table(level, InputTensor=(dims, ins), OutputTensor=(dims, outs))
                   for level, dims, ins, outs in support)
    return OpSpec(enum_name=PREFIX + short_name, tensors=tensors, support=tables, math=False,
                  constraints=(SameSizes(("InputTensor", "OutputTensor")),), **fields)


ELEMENT_WISE_IS_NAN = float_test_op(
    "ELEMENT_WISE_IS_NAN",
    summary=("For each element of the input tensor, returns 1 if the input is NaN (as defined by "
             "IEEE-754), and 0 otherwise. The result is placed into the corresponding element of "
             "the output tensor."),
    formula="returns 1 if the input is NaN (as defined by IEEE-754), and 0 otherwise",
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16, UINT32_UINT8),
        ("2.0", "4", FLOAT32_FLOAT16, UINT32_UINT8),
    ),
    gradient="None: the output is an integer tensor (its cotangent is float0).",
    notes=("Every NaN (quiet or signaling, any sign and payload) gives 1; +-inf, +-0 and "
           "denormals give 0. The output is UINT8 unless output_data_type= says UINT32."),
)


@operator(ELEMENT_WISE_IS_NAN)
def element_wise_is_nan(input, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_is_nan(np.array([1.0, np.nan, np.inf, -np.nan], np.float32))
        Array([0, 1, 0, 1], dtype=uint8)
    """
    return jnp.isnan(input).astype(output_data_type.dtype)


ELEMENT_WISE_IS_INFINITY = float_test_op(
    "ELEMENT_WISE_IS_INFINITY",
    summary=("Checks each element of InputTensor for IEEE-754 -inf, inf, or both, depending on the "
             "given InfinityMode, and places the result (1 for true, 0 for false) into the "
             "corresponding element of OutputTensor."),
    formula=("f(x) = isinf(x) && (\n"
             "       (x > 0 && InfinityMode == DML_IS_INFINITY_MODE_POSITIVE) ||\n"
             "       (x < 0 && InfinityMode == DML_IS_INFINITY_MODE_NEGATIVE) ||\n"
             "                 InfinityMode == DML_IS_INFINITY_MODE_EITHER)"),
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16, UINT8),
        ("2.1", "4", FLOAT32_FLOAT16, UINT8),
    ),
    params=(
        ParamSpec("InfinityMode", "DML_IS_INFINITY_MODE", default=IsInfinityMode.EITHER,
                  enum=IsInfinityMode,
                  doc=("Which infinities give 1: EITHER (-inf and inf), POSITIVE (inf) or "
                       "NEGATIVE (-inf).")),
    ),
    gradient="None: the output is an integer tensor (its cotangent is float0).",
    notes=("InfinityMode defaults to EITHER (the enum's 0, what a zero-initialized desc holds; "
           "the page gives no default). NaN, finite values and denormals give 0 in every mode. "
           "The only output DataType is UINT8 (output_data_type= exists, and refuses UINT32)."),
    silent=(
        SilentChoice(
            "IS_INFINITY's InfinityMode default",
            "EITHER",
            "The enum's 0 (a zero-initialised desc), ONNX IsInf's default."),
    ),
)


@operator(ELEMENT_WISE_IS_INFINITY)
def element_wise_is_infinity(input, *, infinity_mode, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([np.inf, -np.inf, 1.0, np.nan], np.float32)
        >>> dmljax.element_wise_is_infinity(x)
        Array([1, 1, 0, 0], dtype=uint8)
        >>> dmljax.element_wise_is_infinity(x, infinity_mode="NEGATIVE")
        Array([0, 1, 0, 0], dtype=uint8)
    """
    hit = jnp.isinf(input)
    if infinity_mode is IsInfinityMode.POSITIVE:
        hit = hit & (input > 0)
    elif infinity_mode is IsInfinityMode.NEGATIVE:
        hit = hit & (input < 0)
    return hit.astype(output_data_type.dtype)
