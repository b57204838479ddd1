"""Reductions with NumPy's ``axis`` and ``keepdims``, by DML_OPERATOR_REDUCE (which keeps the
reduced dimensions with size 1: ``keepdims=False`` drops them, a desc)."""

from __future__ import annotations

from dmljax._src.compose.checks import axes_tuple, check, data_type
from dmljax._src.compose.views import reshape
from dmljax._src.errors import Violation
from dmljax._src.ops import OPERATORS

__all__ = ["sum", "mean"]


def _reduce(name: str, function: str, x, axis, keepdims: bool):
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check(name, ("REDUCE",), problems)
    if x.ndim == 0:
        x = reshape(x, (1,))
        axis = None
        out_shape = ()
    else:
        axes = tuple(range(x.ndim)) if axis is None else axes_tuple(axis, x.ndim, "axis", problems)
        check(name, ("REDUCE",), problems)
        out_shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else tuple(
            s for i, s in enumerate(x.shape) if i not in axes)
    out = OPERATORS["reduce"](x, function=function, axes=tuple(range(x.ndim)) if axis is None else axes)
    return reshape(out, out_shape)


def sum(x, axis=None, keepdims: bool = False):  # noqa: A001  (NumPy's name)
    """The sum over ``axis`` (None: all), by DML_OPERATOR_REDUCE with Function SUM (FLOAT16
    accumulated in FLOAT32 and rounded once; integers wrap in their own type)."""
    return _reduce("sum", "SUM", x, axis, keepdims)


def mean(x, axis=None, keepdims: bool = False):
    """The mean over ``axis`` (None: all), by DML_OPERATOR_REDUCE with Function AVERAGE.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.mean(np.array([[1, 2], [3, 5]], np.float32), axis=-1)
    Array([1.5, 4. ], dtype=float32)
    """
    return _reduce("mean", "AVERAGE", x, axis, keepdims)
