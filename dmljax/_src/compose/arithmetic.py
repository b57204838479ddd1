"""Element-wise arithmetic with NumPy's broadcasting: each operand is viewed at the common shape
(zero strides, views.py) and DirectML's element-wise operator runs on the views. One DataType for
both operands (DirectML never promotes), a Python number refused (it has no DataType)."""

from __future__ import annotations

from dmljax._src.compose.checks import check, same_data_type
from dmljax._src.compose.views import _broadcast_shapes, broadcast_to, reshape
from dmljax._src.errors import Violation
from dmljax._src.ops import OPERATORS

__all__ = ["add", "subtract", "multiply", "divide", "binary"]


def binary(name: str, dml: str, a, b):
    """DML_OPERATOR_<dml> (short name) of ``a`` and ``b`` broadcast to their common shape; a 0-d
    result is computed as {1} (DirectML tensors have 1 or more dimensions)."""
    problems: list[Violation] = []
    same_data_type({"a": a, "b": b}, problems)
    check(name, (dml,), problems)
    shape = _broadcast_shapes(name, [tuple(a.shape), tuple(b.shape)], ["`a`", "`b`"], (dml,))
    full = shape or (1,)
    out = OPERATORS[dml.lower()](broadcast_to(a, full), broadcast_to(b, full))
    return out if shape else reshape(out, ())


def add(a, b):
    """``a + b`` with NumPy's broadcasting, by DML_OPERATOR_ELEMENT_WISE_ADD (correctly rounded;
    FLOAT16 stays FLOAT16, integers wrap).

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.add(np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32))
    Array([[1., 2., 3.],
           [1., 2., 3.]], dtype=float32)
    """
    return binary("add", "ELEMENT_WISE_ADD", a, b)


def subtract(a, b):
    """``a - b`` with NumPy's broadcasting, by DML_OPERATOR_ELEMENT_WISE_SUBTRACT."""
    return binary("subtract", "ELEMENT_WISE_SUBTRACT", a, b)


def multiply(a, b):
    """``a * b`` with NumPy's broadcasting, by DML_OPERATOR_ELEMENT_WISE_MULTIPLY."""
    return binary("multiply", "ELEMENT_WISE_MULTIPLY", a, b)


def divide(a, b):
    """``a / b`` with NumPy's broadcasting, by DML_OPERATOR_ELEMENT_WISE_DIVIDE (integers: the
    operator's division and its defined value for a zero divisor, docs/silent.md)."""
    return binary("divide", "ELEMENT_WISE_DIVIDE", a, b)
