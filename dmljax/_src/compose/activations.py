"""Activations with jax.nn's axis conventions: one function each, one DirectML operator each."""

from __future__ import annotations

from dmljax._src.compose.checks import axes_tuple, check, data_type
from dmljax._src.compose.views import reshape
from dmljax._src.errors import Violation
from dmljax._src.ops import OPERATORS

__all__ = ["relu", "gelu", "softmax", "log_softmax"]


def _unary(name: str, dml: str, x, **attrs):
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check(name, (dml,), problems)
    if x.ndim == 0:
        return reshape(OPERATORS[dml.lower()](reshape(x, (1,)), **attrs), ())
    return OPERATORS[dml.lower()](x, **attrs)


def relu(x):
    """``max(x, 0)`` by DML_OPERATOR_ACTIVATION_RELU (NaN gives 0: maxNum, docs/semantics.md)."""
    return _unary("relu", "ACTIVATION_RELU", x)


def gelu(x):
    """The exact GELU, ``x * (1 + erf(x / sqrt(2))) / 2``, by DML_OPERATOR_ACTIVATION_GELU
    (PyTorch's default; jax.nn.gelu's ``approximate=False``)."""
    return _unary("gelu", "ACTIVATION_GELU", x)


def _axes(name: str, dml: str, x, axis):
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check(name, (dml,), problems)
    if x.ndim == 0:
        check(name, (dml,), [Violation("", "", "`x` is 0-d", "an array of 1 or more dimensions")])
    axes = axes_tuple(axis, x.ndim, "axis", problems)
    check(name, (dml,), problems)
    return axes


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` over ``axis`` (an int or several; negatives count from the end),
    by DML_OPERATOR_ACTIVATION_SOFTMAX1.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.softmax(np.log(np.array([[1, 3], [2, 2]], np.float32))).round(4)
    Array([[0.25, 0.75],
           [0.5 , 0.5 ]], dtype=float32)
    """
    return OPERATORS["activation_softmax1"](x, axes=_axes("softmax", "ACTIVATION_SOFTMAX1", x, axis))


def log_softmax(x, axis=-1):
    """``x - log(sum(exp(x)))`` over ``axis`` (an int or several; negatives count from the end),
    by DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1."""
    return OPERATORS["activation_log_softmax1"](x, axes=_axes("log_softmax", "ACTIVATION_LOG_SOFTMAX1", x, axis))
