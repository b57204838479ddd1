"""Embedding lookups by DML_OPERATOR_GATHER."""

from __future__ import annotations

from dmljax._src.compose.checks import check, data_type
from dmljax._src.compose.views import reshape
from dmljax._src.errors import Violation
from dmljax._src.ops import OPERATORS

__all__ = ["embedding"]


def embedding(table, indices):
    """The rows of ``table`` {V, D...} that ``indices`` (any shape, INT32, UINT32, INT64 or UINT64)
    name: ``table[indices]``, of shape ``indices.shape + table.shape[1:]``, as PyTorch's
    ``embedding``; by one DML_OPERATOR_GATHER along axis 0. The ranks are padded with leading
    sizes of 1 as GATHER wants them (a desc) and IndexDimensions is the indices' rank.

    GATHER's rules hold: a negative index counts from the end, an index outside [-V, V) gives a
    row of zeros (DirectML leaves it undefined; 0 is dmljax's value) rather than an error, and the
    gradient is the scatter-add of dY into the rows read.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> table = np.arange(6, dtype=np.float32).reshape(3, 2)
    >>> compose.embedding(table, np.array([[2, 0], [-1, 1]], np.int32))
    Array([[[4., 5.],
            [0., 1.]],
    <BLANKLINE>
           [[4., 5.],
            [2., 3.]]], dtype=float32)
    """
    problems: list[Violation] = []
    data_type(table, "table", problems)
    dt = data_type(indices, "indices", problems)
    if dt is not None and (dt.is_float or dt.bits < 32):
        problems.append(Violation("", "", f"`indices` has DataType {dt.name}", "INT32, UINT32, INT64 or UINT64",
                                  "cast it explicitly (dmljax.cast)"))
    check("embedding", ("GATHER",), problems)
    if table.ndim == 0:
        check("embedding", ("GATHER",), [Violation("", "", "`table` is 0-d", "a table of 1 or more dimensions")])
    out_shape = tuple(indices.shape) + tuple(table.shape[1:])
    rank = max(table.ndim, len(out_shape), 1)
    t = reshape(table, (1,) * (rank - table.ndim) + tuple(table.shape))
    i = reshape(indices, (1,) * (rank - max(indices.ndim, 1)) + (tuple(indices.shape) or (1,)))
    y = OPERATORS["gather"](t, i, axis=rank - table.ndim, index_dimensions=indices.ndim)
    return reshape(y, out_shape)
