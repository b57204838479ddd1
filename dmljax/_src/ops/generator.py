"""FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE and DIAGONAL_MATRIX (operators without inputs), of the
generator family: each page's record, with its formula below it. The OutputTensor's Sizes and
DataType are the caller's (``output_sizes=``, ``output_data_type=``), as a desc's OutputTensor
gives them."""

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
from dmljax._src.numerics import attr_as
from dmljax._src.op import operator
from dmljax._src.spec import REQUIRED, OpSpec, ParamSpec, TensorSpec, table

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
           "multiply-add the backend may fuse or not (SEMANTICS.md 2), then rounded once to FLOAT16 for "
           "FLOAT16 tensors; i is exact in FLOAT32 up to 2^24 elements. The page's pseudocode adds Delta "
           "element after element; a GPU computes the elements in parallel, as start + i * delta, and so does "
           "dmljax: the same values for integers and wherever the terms are exact (integral starts and "
           "steps), and within an ULP or two of the true value otherwise, where serial float addition would "
           "drift by up to i rounding steps."),
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
           "DML_FEATURE_LEVEL_4_0), each matrix the same; it need not be square. Offset and Value default to 0 "
           "and 1.0, the page's 'default identity matrix'."),
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
