"""FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE, DIAGONAL_MATRIX, DIAGONAL_MATRIX1 and RANDOM_GENERATOR,
of the generator family: each page's record, with its formula below it. The OutputTensor's Sizes
and DataType are the caller's (``output_sizes=``, ``output_data_type=``), as a desc's OutputTensor
gives them (DIAGONAL_MATRIX1's optional InputTensor gives them too)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, DataType,
)
from dmljax._src.enums import RandomGeneratorType
from dmljax._src.errors import Violation
from dmljax._src.numerics import attr_as
from dmljax._src.op import operator
from dmljax._src.spec import (
    INFERRED, OpSpec, ParamSpec, REQUIRED, SameDataType, SameSizes, SilentChoice, TensorSpec, table,
)
from dmljax._src.validate import TensorInfo

_THREE = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8
_OUT = (TensorSpec("OutputTensor", "output", default_data_type=REQUIRED, sizes_arg=True),)
_VALUE_TYPE = ParamSpec("ValueDataType", "DML_TENSOR_DATA_TYPE", default=None, converted_to="OutputTensor",
                        doc="The data type of the values, which must match OutputTensor.DataType (None: that DataType).")


def _union(name: str, doc: str, default=REQUIRED) -> ParamSpec:
    return ParamSpec(name, "DML_SCALAR_UNION", default=default, converted_to="OutputTensor", doc=doc)


FILL_VALUE_CONSTANT = OpSpec(
    enum_name=PREFIX + "FILL_VALUE_CONSTANT",
    summary="Fills a tensor with the given constant Value. This operator performs the following computation.",
    formula="OutputTensor[coordinate] = Value\n(for each coordinate in OutputTensor)",
    tensors=_OUT,
    support=(
        table("4.1", OutputTensor=("1 to 8", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8)),
        table("4.0", OutputTensor=("1 to 8", _THREE)),
        table("2.1", OutputTensor=("4", _THREE)),
    ),
    params=(_VALUE_TYPE, _union("Value", "The value every element takes, read as the OutputTensor's DataType.")),
    math=False,
    gradient="None: the operator has no inputs.",
    notes=("Value is a DML_SCALAR_UNION of the OutputTensor's DataType (exact: a value the type cannot hold is "
           "refused, or given as the union's bytes, {'Bytes': ...}). Returns a new array of output_sizes."),
    silent=(
        SilentChoice(
            "FILL_VALUE_* values",
            "DML_SCALAR_UNIONs of the output type, exact (the page's UINT8 delta -2 is 254, its bytes; -2 "
            "itself is refused); the OutputTensor's Sizes and DataType are `output_sizes=` and "
            "`output_data_type=` (required), ValueDataType must match",
            "A desc's OutputTensor carries both; the union holds only values of its type.",
            also=("FILL_VALUE_SEQUENCE",)),
    ),
)


@operator(FILL_VALUE_CONSTANT)
def fill_value_constant(*, value_data_type, value, output_data_type, output_sizes):
    """Example:
        >>> import dmljax
        >>> dmljax.fill_value_constant(value=13.0, output_data_type="FLOAT32", output_sizes=(1, 1, 2, 4))[0, 0]
        Array([[13., 13., 13., 13.],
               [13., 13., 13., 13.]], dtype=float32)
    """
    return jnp.full(output_sizes, value.as_numpy(), output_data_type.dtype)


FILL_VALUE_SEQUENCE = OpSpec(
    enum_name=PREFIX + "FILL_VALUE_SEQUENCE",
    summary=("Fills a tensor with a sequence. This operator performs the following computation."),
    formula=("Value += Delta\n(the page's pseudocode: each coordinate in turn takes Value, then Value += Delta; "
             "dmljax computes element i, in row-major order, as ValueStart + i * ValueDelta; the page's Example 2: "
             "ValueStart 10 and ValueDelta -2 in UINT8 over {1, 1, 2, 2} give [[10, 8], [6, 4]])"),
    tensors=_OUT,
    support=(
        table("5.0", OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8)),
        table("4.0", OutputTensor=("1 to 8", _THREE)),
        table("2.1", OutputTensor=("4", _THREE)),
    ),
    params=(_VALUE_TYPE,
            _union("ValueStart", "The first element's value, read as the OutputTensor's DataType."),
            _union("ValueDelta", "The step added for each element, read as the OutputTensor's DataType.")),
    math=False,
    gradient="None: the operator has no inputs.",
    notes=("Element i (row-major) is ValueStart + i * ValueDelta. Integers: exact, wrapping around as two's "
           "complement (the page's Example 2 writes ValueDelta -2 for UINT8, which is the union's bytes of the "
           "INT8 -2: as UINT8, 254, which dmljax takes; -2 itself is refused, as the union cannot hold it). "
           "Floats: i * ValueDelta + ValueStart in FLOAT32 (FLOAT64 for FLOAT64 tensors: none in the table), a "
           "multiply-add the backend may fuse or not (docs/semantics.md#fused-multiply-add), then rounded once to FLOAT16 for "
           "FLOAT16 tensors; i is exact in FLOAT32 up to 2^24 elements. The page's pseudocode adds Delta "
           "element after element; a GPU computes the elements in parallel, as start + i * delta, and so does "
           "dmljax: the same values for integers and wherever the terms are exact (integral starts and "
           "steps), and within an ULP or two of the true value otherwise, where serial float addition would "
           "drift by up to i rounding steps."),
    silent=(
        SilentChoice(
            "FILL_VALUE_SEQUENCE's arithmetic",
            "element i (row-major) = ValueStart + i * ValueDelta: integers exact and wrapping, floats a "
            "FLOAT32 multiply-add (fused or not) rounded once to the type",
            "The page's pseudocode adds Delta element by element; a GPU computes the elements in parallel, and "
            "serial float addition would drift by up to i roundings. Identical for integers and exact terms."),
    ),
)


@operator(FILL_VALUE_SEQUENCE)
def fill_value_sequence(*, value_data_type, value_start, value_delta, output_data_type, output_sizes):
    """Example:
        >>> import dmljax
        >>> dmljax.fill_value_sequence(value_start=3, value_delta=2, output_data_type="FLOAT32",
        ...                            output_sizes=(1, 1, 1, 3)).ravel()
        Array([3., 5., 7.], dtype=float32)
        >>> dmljax.fill_value_sequence(value_start=10, value_delta=254, output_data_type="UINT8",
        ...                            output_sizes=(1, 1, 2, 2))[0, 0]
        Array([[10,  8],
               [ 6,  4]], dtype=uint8)
    """
    dt = output_data_type
    n = int(np.prod(output_sizes))
    if dt.is_integer:
        i = lax.iota(np.uint64 if dt.bits == 64 else np.uint32, n).astype(dt.dtype)  # wraps, as the values do
        out = value_start.as_numpy() + i * value_delta.as_numpy()
    else:
        ct = np.float64 if dt is DataType.FLOAT64 else np.float32
        i = lax.iota(ct, n)
        out = (i * np.asarray(value_delta.value, ct) + np.asarray(value_start.value, ct)).astype(dt.dtype)
    return out.reshape(output_sizes)


DIAGONAL_MATRIX = OpSpec(
    enum_name=PREFIX + "DIAGONAL_MATRIX",
    summary=("Generates an identity-like matrix with ones (or other explicit value) on the major diagonal, and "
             "zeros everywhere else. The diagonal ones may be shifted (via Offset) where OutputTensor[i, i + "
             "Offset] = Value, meaning that an argument of Offset greater than zero shifts all values to the "
             "right, and less than zero shifts them to the left."),
    formula=("OutputTensor[coordinate] = if (coordinate.y + Offset == coordinate.x) then Value else 0\n(each "
             "of the last two dimensions' matrices; Offset 1 shifts the ones right/up, -1 left/down)"),
    tensors=_OUT,
    support=(
        table("5.1", OutputTensor=("2 to 4", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8)),
        table("4.0", OutputTensor=("2 to 4", _THREE)),
        table("2.1", OutputTensor=("4", _THREE)),
        table("2.0", OutputTensor=("4", FLOAT32_FLOAT16)),
    ),
    params=(ParamSpec("Offset", "INT", default=0, doc="The diagonal's shift: positive to the right, negative to "
                                                    "the left (default 0, the identity)."),
            ParamSpec("Value", "FLOAT", default=1.0, converted_to="OutputTensor",
                      doc=("The value on the diagonal (default 1.0, 'the standard value'); truncated toward zero "
                           "(and saturated) for integer types, as the page says ('10.6 will become 10')."))),
    math=False,
    gradient="None: the operator has no inputs.",
    notes=("The OutputTensor is {Batch1, Batch2, OutputHeight, OutputWidth} (2 to 4 dimensions from "
           "DML_FEATURE_LEVEL_4_0), each matrix the same; it need not be square."),
    silent=(
        SilentChoice(
            "DIAGONAL_MATRIX's Offset and Value",
            "defaults 0 and 1.0 (the page's \"default identity matrix\", \"the standard value is 1.0\"); Value "
            "truncated toward zero and saturated for integer types",
            "The page: \"10.6 will become 10\"."),
    ),
)


@operator(DIAGONAL_MATRIX)
def diagonal_matrix(*, offset, value, output_data_type, output_sizes):
    """Example:
        >>> import dmljax
        >>> dmljax.diagonal_matrix(offset=-1, output_data_type="FLOAT32", output_sizes=(1, 1, 3, 2))[0, 0]
        Array([[0., 0.],
               [1., 0.],
               [0., 1.]], dtype=float32)
    """
    h, w = output_sizes[-2], output_sizes[-1]
    y = lax.broadcasted_iota(np.int32, (h, w), 0)
    x = lax.broadcasted_iota(np.int32, (h, w), 1)
    v = attr_as(value, output_data_type)
    m = jnp.where(x - y == offset, jnp.asarray(v, output_data_type.dtype), jnp.zeros((), output_data_type.dtype))
    return jnp.broadcast_to(m, tuple(output_sizes))


def _matrix_below_2_31(tensors, attrs, level) -> list[Violation]:
    """x - y is computed in INT32: a matrix's height and width stay below 2^31 (a 1 x 2^31
    matrix is the only kind within 2^32 - 1 elements that this refuses)."""
    out = tensors.get("OutputTensor")
    if out is None or len(out.shape) < 2 or max(out.shape[-2:]) < 2**31:
        return []
    return [Violation("OutputTensor", "", f"has Sizes {list(out.shape)}", "a height and width below 2^31 each",
                      "put the long run in a batch dimension")]


def _diagonal1_output(tensors, attrs, problems) -> dict:
    """Without an InputTensor the OutputTensor's DataType and Sizes are the caller's, both
    required (the desc's OutputTensor gives them); with one, its constraints give them."""
    if tensors.get("InputTensor") is not None:
        return {}
    out = tensors.get("OutputTensor")
    missing = [arg for arg, known in (("output_data_type", out is not None and out.data_type is not None),
                                      ("output_sizes", out is not None and out.shape != ())) if not known]
    if missing:
        problems.append(Violation("OutputTensor", missing[0], "has no " + " and no ".join(
            "DataType" if m == "output_data_type" else "Sizes" for m in missing) + " without an InputTensor",
            "an InputTensor to take them from, or " + " and ".join(f"{m}=" for m in missing),
            "e.g. output_data_type='FLOAT32', output_sizes=(4, 5)"))
    return {}


DIAGONAL_MATRIX1 = OpSpec(
    enum_name=PREFIX + "DIAGONAL_MATRIX1",
    summary=("Generates an identity-like matrix with ones (or other explicit value) along the given diagonal "
             "span, with other elements being filled with either the input values or zeros (if no InputTensor "
             "is passed). The diagonal values may be shifted anywhere between DiagonalFillBegin and "
             "DiagonalFillEnd, where a value greater than zero shifts all values to the right, and less than "
             "zero shifts them to the left."),
    formula=("topX = coordinate.x - coordinate.y\n"
             "useValue = (DiagonalFillEnd >= DiagonalFillBegin) ^ (topX >= DiagonalFillBegin) ^ (topX < "
             "DiagonalFillEnd)\nOutputTensor[coordinate] = useValue ? Value : (InputTensor ? "
             "InputTensor[coordinate] : 0)"),
    tensors=(TensorSpec("InputTensor", "input", optional=True),
             TensorSpec("OutputTensor", "output", default_data_type=INFERRED, sizes_arg=True, sizes_default=True)),
    support=(table("5.1", InputTensor=("2 to 4", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
                   OutputTensor=("2 to 4", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8)),),
    params=(_VALUE_TYPE,
            _union("Value", "The value inside the fill span, read as the OutputTensor's DataType (default 1, "
                   "the identity's ones).", default=1),
            ParamSpec("DiagonalFillBegin", "INT", default=0,
                      doc="The span's first diagonal, inclusive (x - y; default 0, the main diagonal)."),
            ParamSpec("DiagonalFillEnd", "INT", default=1,
                      doc="The span's end, exclusive (default 1); below DiagonalFillBegin the fill is reversed: "
                          "Value everywhere outside [DiagonalFillEnd, DiagonalFillBegin).")),
    constraints=(SameDataType(("InputTensor", "OutputTensor")), SameSizes(("InputTensor", "OutputTensor"))),
    math=False,
    gradient=("dInputTensor = dOutputTensor where useValue is false, 0 where Value is written; integer "
              "inputs and a left-out InputTensor: none."),
    notes=("Leading dimensions before the last two are a batch of matrices. Equal to DIAGONAL_MATRIX with "
           "DiagonalFillBegin = Offset and DiagonalFillEnd = Offset + 1. Bit-exact."),
    extra_checks=(_matrix_below_2_31,),
    infer_outputs=_diagonal1_output,
    silent=(
        SilentChoice(
            "DIAGONAL_MATRIX1 without InputTensor; its defaults",
            "the rest is 0 and `output_data_type=`, `output_sizes=` are required (the desc's OutputTensor); "
            "with an InputTensor the output has its DataType and Sizes (a different choice is refused, never "
            "overridden); Value, DiagonalFillBegin and DiagonalFillEnd default to 1, 0 and 1, the identity; "
            "Value is an exact DML_SCALAR_UNION",
            "The page asks for the same DataType and DimensionCount; `OutputTensor[coordinate] = "
            "InputTensor[coordinate]` needs the same Sizes. Its first example writes Value 7 but shows ones: "
            "dmljax writes Value (a test gives the example with Value 1)."),
    ),
)


@operator(DIAGONAL_MATRIX1)
def diagonal_matrix1(input=None, *, value_data_type, value, diagonal_fill_begin, diagonal_fill_end,
                     output_data_type, output_sizes):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.diagonal_matrix1(value=7.0, diagonal_fill_begin=0, diagonal_fill_end=3,
        ...                         output_data_type="FLOAT32", output_sizes=(3, 5))
        Array([[7., 7., 7., 0., 0.],
               [0., 7., 7., 7., 0.],
               [0., 0., 7., 7., 7.]], dtype=float32)
        >>> x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
        >>> dmljax.diagonal_matrix1(x, value=0, diagonal_fill_begin=-2**31, diagonal_fill_end=1)  # strictly upper
        Array([[ 0,  2,  3,  4],
               [ 0,  0,  7,  8],
               [ 0,  0,  0, 12]], dtype=int32)
    """
    h, w = output_sizes[-2], output_sizes[-1]
    top_x = lax.broadcasted_iota(np.int32, (h, w), 1) - lax.broadcasted_iota(np.int32, (h, w), 0)
    begin, end = diagonal_fill_begin, diagonal_fill_end
    # Compared as Python ints against the iota: topX spans [-(h - 1), w - 1], so the bounds clamp
    # to that range (+-1) first, keeping INT32_MIN and INT32_MAX exact in int32 arithmetic.
    lo, hi = -h, w
    use = (end >= begin) ^ (top_x >= max(lo, min(hi, begin))) ^ (top_x < max(lo, min(hi, end)))
    v = jnp.asarray(value.as_numpy(), output_data_type.dtype)
    rest = jnp.zeros((), output_data_type.dtype) if input is None else input
    return jnp.broadcast_to(jnp.where(use, v, rest), tuple(output_sizes))  # the matrix over the batch


# --------------------------------------------------------------------------------------------
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # Philox 4x32's multipliers
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # and key increments (Salmon et al., SC'11, "Random123")
_U32 = np.uint32


def _mulhilo(a: int, b):
    """The high and low 32 bits of the 64-bit product of the constant ``a`` and the uint32 array
    ``b``, from 16-bit limbs (no 64-bit type: JAX's 64-bit mode may be off)."""
    a_lo, a_hi = _U32(a & 0xFFFF), _U32(a >> 16)
    b_lo, b_hi = b & _U32(0xFFFF), b >> _U32(16)
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> _U32(16)) + (p1 & _U32(0xFFFF)) + (p2 & _U32(0xFFFF))
    hi = p3 + (p1 >> _U32(16)) + (p2 >> _U32(16)) + (mid >> _U32(16))
    return hi, _U32(a) * b


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox 4x32 with 10 rounds: four counter words (uint32 arrays) and a two-word key to four
    words of output."""
    for r in range(10):
        if r:
            k0, k1 = k0 + _U32(_PHILOX_W[0]), k1 + _U32(_PHILOX_W[1])
        hi0, lo0 = _mulhilo(_PHILOX_M[0], c0)
        hi1, lo1 = _mulhilo(_PHILOX_M[1], c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def _add_128(words, n):
    """The 128-bit counter (four uint32 words, the first the lowest) plus ``n`` (uint32, an array
    or a scalar), carrying across the words."""
    c0, c1, c2, c3 = words
    s0 = c0 + n
    carry = s0 < c0
    s1 = c1 + carry.astype(np.uint32)
    carry = carry & (c1 == _U32(0xFFFFFFFF))
    s2 = c2 + carry.astype(np.uint32)
    carry = carry & (c2 == _U32(0xFFFFFFFF))
    return s0, s1, s2, c3 + carry.astype(np.uint32)


def _state_rules(tensors, attrs, level):
    """The InputStateTensor is {1, ..., 1, 6}: four counter words, then two key words."""
    s = tensors.get("InputStateTensor")
    if s is None or not s.shape or (s.shape[-1] == 6 and all(d == 1 for d in s.shape[:-1])):
        return []
    return [Violation("InputStateTensor", "input_state", f"has Sizes {list(s.shape)}",
                      "{1, ..., 1, 6}: the 128-bit counter's four words, then the 64-bit key's two")]


def _random_out(tensors, attrs, problems):
    return {"OutputTensor": TensorInfo(tensors["OutputTensor"].shape, DataType.UINT32),
            "OutputStateTensor": TensorInfo(tensors["InputStateTensor"].shape, DataType.UINT32)}


RANDOM_GENERATOR = OpSpec(
    enum_name=PREFIX + "RANDOM_GENERATOR",
    summary=("Fills an output tensor with deterministically-generated, pseudo-random, uniformly-distributed bits. "
             "This operator optionally may also output an updated internal generator state, which can be used "
             "during subsequent executions of the operator."),
    formula=("For **DML_RANDOM_GENERATOR_TYPE_PHILOX_4X32_10**, the 128-bit counter should be incremented by "
             "`ceil(outputSize / 4)` on each execution, where `outputSize` is the number of elements in the "
             "*OutputTensor*.\n(element i of the OutputTensor, in row-major order, is word i mod 4 of Philox "
             "4x32-10 of the counter + floor(i / 4) under the key)"),
    tensors=(TensorSpec("InputStateTensor", "input"),
             TensorSpec("OutputTensor", "output", sizes_arg=True),
             TensorSpec("OutputStateTensor", "output", optional=True)),
    support=(
        table("4.0", InputStateTensor=("1 to 8", (DataType.UINT32,)), OutputTensor=("1 to 8", (DataType.UINT32,)),
              OutputStateTensor=("1 to 8", (DataType.UINT32,))),
        table("3.0", InputStateTensor=("4", (DataType.UINT32,)), OutputTensor=("4", (DataType.UINT32,)),
              OutputStateTensor=("4", (DataType.UINT32,))),
    ),
    params=(ParamSpec("Type", "DML_RANDOM_GENERATOR_TYPE", default=RandomGeneratorType.PHILOX_4X32_10,
                      enum=RandomGeneratorType,
                      doc="The generator: PHILOX_4X32_10, the only one (default)."),),
    constraints=(SameSizes(("InputStateTensor", "OutputStateTensor")),),
    math=False,
    gradient="None: the outputs are random bits (UINT32).",
    notes=("The InputStateTensor is {1, ..., 1, 6}: the 128-bit counter in its first four words, the lowest "
           "first, then the 64-bit key (the page's layout). Block b of four outputs is Philox 4x32-10 (Salmon "
           "et al., the Random123 paper the page cites: multipliers 0xD2511F53 and 0xCD9E8D57, key increments "
           "0x9E3779B9 and 0xBB67AE85) of the counter + b, carried across the words; element i of the "
           "OutputTensor, in row-major order, is word i mod 4 of block floor(i / 4), which the page leaves to "
           "'Philox 4x32-10'. The output state is the counter + ceil(outputSize / 4) with the key unchanged. "
           "The page's worked example of that increment (+324,855) shows a result whose last word reads 'town' "
           "in ASCII, not the sum: a joke, not arithmetic."),
    extra_checks=(_state_rules,),
    infer_outputs=_random_out,
    silent=(
        SilentChoice(
            "RANDOM_GENERATOR's output order",
            "element i (row-major) is word i mod 4 of Philox 4x32-10 of the counter + floor(i / 4) (the "
            "counter's first word the lowest); returns (output, output_state)",
            "The page gives the state layout and the increment, ceil(outputSize / 4), not the words' order. "
            "Checked against Random123's known-answer vectors."),
    ),
)


@operator(RANDOM_GENERATOR)
def random_generator(input_state, *, type, output_sizes):  # noqa: A002  (DirectML's member name)
    """Example:
        >>> import numpy as np, dmljax
        >>> state = np.array([[[[0, 0, 0, 0, 0, 0]]]], np.uint32)  # counter 0, key 0
        >>> bits, new_state = dmljax.random_generator(state, output_sizes=(1, 1, 1, 6))
        >>> [hex(int(v)) for v in bits.ravel()[:4]], new_state.ravel().tolist()
        (['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8'], [2, 0, 0, 0, 0, 0])
    """
    n = int(np.prod(output_sizes))
    blocks = -(-n // 4)
    words = jnp.asarray(input_state).reshape(-1)  # NumPy scalars would warn of the key's wraparound
    counter = tuple(words[i] for i in range(4))
    b = lax.iota(np.uint32, blocks)
    c = _add_128(counter, b)
    out = jnp.stack(philox4x32_10(*c, words[4], words[5]), axis=-1).reshape(-1)[:n]
    new = _add_128(counter, _U32(blocks))
    state = jnp.stack([*new, words[4], words[5]]).reshape(input_state.shape)
    return out.reshape(output_sizes), state
