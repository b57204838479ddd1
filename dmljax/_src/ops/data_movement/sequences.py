"""REVERSE_SUBSEQUENCES (each sequence's first elements reversed along an axis), of the
data_movement family: the page's record, with its formula below it."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, UINT32, UINT64_UINT32,
)
from dmljax._src.errors import Violation
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

_ALL = FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
_THREE = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8


def _rules(tensors, attrs, level) -> list[Violation]:
    """Axis "must be less than the DimensionCount of the InputTensor"; the SequenceLengthsTensor
    "must have dimension count and sizes equal to the InputTensor, except for the dimension
    specified by the Axis parameter", whose size must be 1."""
    x, lengths, axis = tensors.get("InputTensor"), tensors.get("SequenceLengthsTensor"), attrs.get("Axis")
    if x is None or axis is None:
        return []
    n = len(x.shape)
    if axis >= n:
        return [Violation("Axis", "axis", f"is {axis} for a {n}-dimensional InputTensor",
                          f"less than the DimensionCount ({n}): 0 to {n - 1}")]
    if lengths is None:
        return []
    want = tuple(1 if i == axis else s for i, s in enumerate(x.shape))
    if tuple(lengths.shape) != want:
        return [Violation("SequenceLengthsTensor", "sequence_lengths", f"has Sizes {list(lengths.shape)}",
                          f"the InputTensor's Sizes with 1 along Axis {axis}: {list(want)}")]
    return []


REVERSE_SUBSEQUENCES = OpSpec(
    enum_name=PREFIX + "REVERSE_SUBSEQUENCES",
    summary=("Reverses the elements of one or more subsequences of a tensor. The set of subsequences to be "
             "reversed is chosen based on the provided axis and sequence lengths."),
    formula=("Notice that sequence lengths of 1 and 0 are effective nops\n(output[j] = input[L - 1 - j] for "
             "j < L, input[j] after, along Axis, L each sequence's length clamped to the axis; the page's "
             "Example 1: lengths 2, 4, 3 of rows [1..4], [5..8], [9..12] give [2, 1, 3, 4], [8, 7, 6, 5], "
             "[11, 10, 9, 12])"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("SequenceLengthsTensor", "input"),
             TensorSpec("OutputTensor", "output")),
    support=(
        table("5.0", InputTensor=("1 to 8", _ALL), SequenceLengthsTensor=("1 to 8", UINT64_UINT32),
              OutputTensor=("1 to 8", _ALL)),
        table("4.0", InputTensor=("1 to 8", _THREE), SequenceLengthsTensor=("1 to 8", UINT32),
              OutputTensor=("1 to 8", _THREE)),
        table("3.0", InputTensor=("4 to 5", _THREE), SequenceLengthsTensor=("4 to 5", UINT32),
              OutputTensor=("4 to 5", _THREE)),
        table("2.1", InputTensor=("4", _THREE), SequenceLengthsTensor=("4", UINT32), OutputTensor=("4", _THREE)),
    ),
    params=(ParamSpec("Axis", "UINT", doc="The dimension to reverse elements over; less than the InputTensor's "
                                          "DimensionCount."),),
    constraints=(SameDataType(("InputTensor", "OutputTensor")), SameSizes(("InputTensor", "OutputTensor"))),
    math=False,
    gradient="dInput = dY moved back by the same reversal (a permutation); SequenceLengthsTensor: none.",
    notes=("A length beyond the axis acts as the axis's size, as the page says; 0 and 1 leave the sequence as "
           "it is. The lengths are values, not attributes (they may come from the model at run time), so "
           "they are read under jit. Bit-exact data movement."),
    extra_checks=(_rules,),
    silent=(
        SilentChoice(
            "REVERSE_SUBSEQUENCES' lengths",
            "read under jit as values (clamped to the axis, as the page says; 0 and 1 change nothing)",
            "They are a tensor, which a model may compute."),
    ),
)


@operator(REVERSE_SUBSEQUENCES)
def reverse_subsequences(input, sequence_lengths, *, axis):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)  # the page's examples
        >>> dmljax.reverse_subsequences(x, np.array([2, 4, 3], np.uint32).reshape(1, 1, 3, 1), axis=3)[0, 0]
        Array([[ 2.,  1.,  3.,  4.],
               [ 8.,  7.,  6.,  5.],
               [11., 10.,  9., 12.]], dtype=float32)
        >>> dmljax.reverse_subsequences(x, np.array([[[[2, 3, 1, 0]]]], np.uint32), axis=2)[0, 0]
        Array([[ 5., 10.,  3.,  4.],
               [ 1.,  6.,  7.,  8.],
               [ 9.,  2., 11., 12.]], dtype=float32)
    """
    n = input.shape[axis]
    lengths = jnp.minimum(sequence_lengths, jnp.asarray(n, sequence_lengths.dtype)).astype(np.int32)
    j = lax.broadcasted_iota(np.int32, input.shape, axis)
    index = jnp.where(j < lengths, lengths - 1 - j, j)
    return jnp.take_along_axis(input, index, axis=axis)
