"""Element-wise bitwise operators (AND, OR, XOR, NOT, shifts, population count): each page's
record, with its formula right below it.

Every page says "the bitwise operation is applied to tensor data in its native encoding.
Therefore, the tensor data type is ignored except for determining the width of each element":
each element is read as the unsigned integer of its width that holds its bits (a float's bit
pattern, a signed integer's two's complement), the operation runs on that, and the result is
stored back as bits. Nothing here is float math: no denormal is flushed, NaN payloads and -0 are
bits like any other, and there is no half-precision option.
"""

from __future__ import annotations

import numpy as np
from jax import lax

from dmljax._src.dtypes import (
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, UINT32_UINT8,
    UINT32_UINT16_UINT8, UINT64_UINT32_UINT16_UINT8, DataType,
)
from dmljax._src.op import operator
from dmljax._src.ops.factories import UNARY_TENSORS, binary_op, unary_op
from dmljax._src.spec import OpSpec, SameSizes, SilentChoice, TensorSpec, table

Row = tuple[str, str, tuple[DataType, ...]]

# The table of the AND, OR, XOR and NOT pages (and BIT_COUNT's InputTensor).
SUPPORT_BITWISE: tuple[Row, ...] = (
    ("4.1", "1 to 8", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
    ("3.0", "1 to 8", UINT32_UINT16_UINT8),
)
# The table of the BIT_SHIFT_LEFT and BIT_SHIFT_RIGHT pages: unsigned types only.
SUPPORT_SHIFT: tuple[Row, ...] = (
    ("4.1", "1 to 8", UINT64_UINT32_UINT16_UINT8),
    ("3.0", "1 to 8", UINT32_UINT16_UINT8),
    ("2.1", "4", UINT32_UINT16_UINT8),
)

NATIVE_ENCODING = "The bitwise operation is applied to tensor data in its native encoding."
"""The pages' own words, the first line of the formula of the pages that have no formula."""

NO_GRADIENT = ("None: a bitwise operation has no derivative. Float inputs get zeros (the bits "
               "are not a differentiable function of the value), integer inputs float0.")
BITS_NOTE = ("Bits in, bits out: FLOAT inputs are their bit patterns (FLOAT32 denormals are not "
             "flushed; NaN payloads and -0 are kept), signed integers their two's complement.")

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits_of(x):
    """An element's native encoding: the unsigned integer of its width holding its bits. A float
    input's gradient stops here (bits are not a differentiable function of the value)."""
    x = lax.stop_gradient(x)
    unsigned = np.dtype(_UNSIGNED[x.dtype.itemsize])
    return x if x.dtype == unsigned else lax.bitcast_convert_type(x, unsigned)


def from_bits(u, dtype):
    """Bits back into ``dtype`` (of the same width), unchanged."""
    return u if u.dtype == np.dtype(dtype) else lax.bitcast_convert_type(u, dtype)


def bitwise(fn, *arrays):
    """``fn`` on the inputs' bits, stored back into the first input's type."""
    return from_bits(fn(*(bits_of(x) for x in arrays)), arrays[0].dtype)


def saturated_shift(shift, a, b):
    """``shift(a, b)`` on unsigned ``a`` and ``b`` of one type, with a count of the type's width
    or more giving 0 (every bit shifted out), chosen once for every backend: XLA is never asked
    for such a shift (its result there is backend territory; C leaves it undefined)."""
    width = np.asarray(a.dtype.itemsize * 8, b.dtype)
    in_range = b < width
    count = lax.select(in_range, b, lax.full_like(b, 0))
    return lax.select(in_range, shift(a, count), lax.full_like(a, 0))


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_BIT_AND = binary_op(
    "ELEMENT_WISE_BIT_AND",
    summary=("Computes the bitwise AND between each corresponding element of the input tensors, "
             "and writes the result into the output tensor."),
    formula=NATIVE_ENCODING + "\nf(a, b) = a & b, bit by bit",
    support=SUPPORT_BITWISE,
    gradient=NO_GRADIENT,
    math=False,
    notes=BITS_NOTE,
)


@operator(ELEMENT_WISE_BIT_AND)
def element_wise_bit_and(a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([12, 255, 0], np.uint8), np.array([10, 15, 255], np.uint8)
        >>> dmljax.element_wise_bit_and(a, b)
        Array([ 8, 15,  0], dtype=uint8)
    """
    return bitwise(lax.bitwise_and, a, b)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_BIT_OR = binary_op(
    "ELEMENT_WISE_BIT_OR",
    summary=("Computes the bitwise OR between each corresponding element of the input tensors, "
             "and writes the result into the output tensor."),
    formula=NATIVE_ENCODING + "\nf(a, b) = a | b, bit by bit",
    support=SUPPORT_BITWISE,
    gradient=NO_GRADIENT,
    math=False,
    notes=BITS_NOTE,
)


@operator(ELEMENT_WISE_BIT_OR)
def element_wise_bit_or(a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([12, 128, 0], np.uint8), np.array([10, 1, 0], np.uint8)
        >>> dmljax.element_wise_bit_or(a, b)
        Array([ 14, 129,   0], dtype=uint8)
    """
    return bitwise(lax.bitwise_or, a, b)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_BIT_XOR = binary_op(
    "ELEMENT_WISE_BIT_XOR",
    summary=("Computes the bitwise XOR (eXclusive OR) between each corresponding element of the "
             "input tensors, and writes the result into the output tensor."),
    formula=NATIVE_ENCODING + "\nf(a, b) = a ^ b, bit by bit",
    support=SUPPORT_BITWISE,
    gradient=NO_GRADIENT,
    math=False,
    notes=(BITS_NOTE + " The page's example shows one input only (it is BIT_NOT's example); "
           "its outputs are XOR with 255 (0b11111111) in B."),
    silent=(
        SilentChoice(
            "BIT_XOR page's example",
            "read as XOR with 255",
            "The page shows BIT_NOT's one-input example."),
    ),
)


@operator(ELEMENT_WISE_BIT_XOR)
def element_wise_bit_xor(a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([[0, 128], [42, 255]], np.uint8)
        >>> dmljax.element_wise_bit_xor(a, np.full((2, 2), 255, np.uint8))
        Array([[255, 127],
               [213,   0]], dtype=uint8)
    """
    return bitwise(lax.bitwise_xor, a, b)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_BIT_NOT = unary_op(
    "ELEMENT_WISE_BIT_NOT",
    summary=("Computes the bitwise NOT for each element of the input tensor, and writes the "
             "result into the output tensor."),
    formula=NATIVE_ENCODING + "\nf(x) = ~x, bit by bit",
    support=SUPPORT_BITWISE,
    gradient=NO_GRADIENT,
    math=False,
    notes=BITS_NOTE,
)


@operator(ELEMENT_WISE_BIT_NOT)
def element_wise_bit_not(input):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_bit_not(np.array([[0, 128], [42, 255]], np.uint8))
        Array([[255, 127],
               [213,   0]], dtype=uint8)
    """
    return bitwise(lax.bitwise_not, input)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_BIT_SHIFT_LEFT = binary_op(
    "ELEMENT_WISE_BIT_SHIFT_LEFT",
    summary=("Performs a logical left shift of each element of ATensor by a number of bits given "
             "by the corresponding element of BTensor, placing the result into the corresponding "
             "element of OutputTensor."),
    formula="f(a, b) = (a << b)",
    support=SUPPORT_SHIFT,
    gradient=NO_GRADIENT,
    math=False,
    notes=("BTensor holds the shift counts, in ATensor's DataType (the page's constraint); bits "
           "shifted past the width are dropped. A count of the type's width or more gives 0 on "
           "every backend (the page is silent; C leaves it undefined). The types are unsigned, "
           "so no count is negative."),
    silent=(
        SilentChoice(
            "BIT_SHIFT_LEFT / RIGHT by the type's width or more",
            "0 (right shifts are logical; the pages allow unsigned types only)",
            "Every bit shifted out; XLA never sees an out-of-range shift.",
            also=("ELEMENT_WISE_BIT_SHIFT_RIGHT",)),
    ),
)


@operator(ELEMENT_WISE_BIT_SHIFT_LEFT)
def element_wise_bit_shift_left(a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([1, 3, 255, 1], np.uint8), np.array([0, 2, 4, 8], np.uint8)
        >>> dmljax.element_wise_bit_shift_left(a, b)
        Array([  1,  12, 240,   0], dtype=uint8)
    """
    return saturated_shift(lax.shift_left, a, b)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_BIT_SHIFT_RIGHT = binary_op(
    "ELEMENT_WISE_BIT_SHIFT_RIGHT",
    summary=("Performs a logical right shift of each element of ATensor by a number of bits given "
             "by the corresponding element of BTensor, placing the result into the corresponding "
             "element of OutputTensor."),
    formula="f(a, b) = (a >> b)",
    support=SUPPORT_SHIFT,
    gradient=NO_GRADIENT,
    math=False,
    notes=("A logical shift, as the page says: zeros come in from the top. BTensor holds the "
           "shift counts, in ATensor's DataType (the page's constraint). A count of the type's "
           "width or more gives 0 on every backend (the page is silent; C leaves it undefined). "
           "The types are unsigned, so no count is negative."),
)


@operator(ELEMENT_WISE_BIT_SHIFT_RIGHT)
def element_wise_bit_shift_right(a, b):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([128, 12, 255, 255], np.uint8), np.array([7, 2, 4, 8], np.uint8)
        >>> dmljax.element_wise_bit_shift_right(a, b)
        Array([ 1,  3, 15,  0], dtype=uint8)
    """
    return saturated_shift(lax.shift_right_logical, a, b)


# --------------------------------------------------------------------------------------------
# The output's DataType (UINT32 or UINT8) is the caller's choice, as a comparison's is; it is
# not tied to the input's, so no unary factory fits: the record is written out.
ELEMENT_WISE_BIT_COUNT = OpSpec(
    enum_name="DML_OPERATOR_ELEMENT_WISE_BIT_COUNT",
    summary=("Computes the bitwise population count (the number of bits set to 1) for each "
             "element of the input tensor, and writes the result into the output tensor."),
    formula=NATIVE_ENCODING + "\nf(x) = the number of bits set to 1 in x",
    tensors=(UNARY_TENSORS[0], TensorSpec("OutputTensor", "output", default_data_type=DataType.UINT32)),
    support=tuple(table(level, InputTensor=(dims, types), OutputTensor=(dims, UINT32_UINT8))
                  for level, dims, types in SUPPORT_BITWISE),
    # "InputTensor and OutputTensor must have the same DimensionCount and Sizes."
    constraints=(SameSizes(("InputTensor", "OutputTensor")),),
    gradient="None: the output is an integer tensor (its cotangent is float0).",
    math=False,
    notes=(BITS_NOTE + " So a signed type counts its two's complement (INT8 -1 gives 8) and a "
           "float its bit pattern (FLOAT32 -0.0 gives 1). OutputTensor's DataType is chosen with "
           "output_data_type= (UINT32 unless given, the type of the page's example); every "
           "count (at most 64) fits either type."),
    silent=(
        SilentChoice(
            "BIT_COUNT's output type; bitwise operators on float inputs",
            "UINT32 unless `output_data_type=\"UINT8\"`; floats are their IEEE bit patterns (NaN payloads, -0 "
            "and FLOAT32 denormals kept), gradient 0",
            "First in the page's list; \"applied to tensor data in its native encoding\".",
            also=("ELEMENT_WISE_BIT_AND", "ELEMENT_WISE_BIT_OR", "ELEMENT_WISE_BIT_XOR",
                  "ELEMENT_WISE_BIT_NOT", "ELEMENT_WISE_BIT_SHIFT_LEFT", "ELEMENT_WISE_BIT_SHIFT_RIGHT")),
    ),
)


@operator(ELEMENT_WISE_BIT_COUNT)
def element_wise_bit_count(input, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_bit_count(np.array([[0, 123], [456, 789]], np.uint32))
        Array([[0, 6],
               [4, 5]], dtype=uint32)
        >>> dmljax.element_wise_bit_count(np.array([-1, -128, 0], np.int8), output_data_type="UINT8")
        Array([8, 1, 0], dtype=uint8)
    """
    return lax.population_count(bits_of(input)).astype(output_data_type.dtype)
