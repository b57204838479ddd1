"""Losses: cross-entropy of integer labels."""

from __future__ import annotations

from dmljax._src.compose.checks import axis_index, check, data_type
from dmljax._src.compose.views import expand_dims, reshape
from dmljax._src.errors import Violation, quote
from dmljax._src.ops import OPERATORS

__all__ = ["cross_entropy"]

_OPS = ("ACTIVATION_LOG_SOFTMAX1", "GATHER_ELEMENTS", "REDUCE", "ELEMENT_WISE_NEGATE")


def cross_entropy(logits, labels, *, axis: int = -1, reduction: str = "mean"):
    """``-log softmax(logits)[label]`` for integer class ``labels``, averaged (``reduction=
    'mean'``, PyTorch's default), summed (``'sum'``) or per example (``'none'``), as PyTorch's
    ``cross_entropy`` and optax's ``softmax_cross_entropy_with_integer_labels``.

    ``axis`` is the class axis of ``logits`` (default the last, optax's layout; PyTorch's
    {N, C, d...} is ``axis=1``); ``labels`` has ``logits``' shape without it, of type INT32,
    UINT32, INT64 or UINT64. Lowered to DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1 over the class axis,
    DML_OPERATOR_GATHER_ELEMENTS of each label's log-probability, DML_OPERATOR_REDUCE (AVERAGE or
    SUM; FLOAT16 accumulated in FLOAT32) and DML_OPERATOR_ELEMENT_WISE_NEGATE. A label outside
    the classes reads 0 (GATHER_ELEMENTS's value for an index out of range), so it adds no loss;
    labels are not checked (their values are known only when the program runs).

    >>> import numpy as np
    >>> from dmljax import compose
    >>> logits = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]], np.float32))
    >>> compose.cross_entropy(logits, np.array([0, 2], np.int32), reduction="none").round(4)  # -log 0.5, -log 0.8
    Array([0.6931    , 0.22309999], dtype=float32)
    """
    problems: list[Violation] = []
    data_type(logits, "logits", problems)
    dt = data_type(labels, "labels", problems)
    if dt is not None and (dt.is_float or dt.bits < 32):
        problems.append(Violation("", "", f"`labels` has DataType {dt.name}", "INT32, UINT32, INT64 or UINT64",
                                  "cast it explicitly (dmljax.cast)"))
    if reduction not in ("mean", "sum", "none"):
        problems.append(Violation("", "", f"`reduction` is {quote(reduction)}", "'mean', 'sum' or 'none'"))
    check("cross_entropy", _OPS, problems)
    if logits.ndim == 0:
        check("cross_entropy", _OPS, [Violation("", "", "`logits` is 0-d", "an array with a class axis")])
    ax = axis_index(axis, logits.ndim, "axis", problems)
    check("cross_entropy", _OPS, problems)
    expected = tuple(s for i, s in enumerate(logits.shape) if i != ax)
    if tuple(labels.shape) != expected:
        check("cross_entropy", _OPS, [Violation(
            "", "", f"`labels` has shape {tuple(labels.shape)} for `logits` {tuple(logits.shape)}",
            f"logits' shape without the class axis {ax}: {expected}")])
    log_p = OPERATORS["activation_log_softmax1"](logits, axes=(ax,))
    picked = OPERATORS["gather_elements"](log_p, expand_dims(labels, ax), axis=ax)  # {..., 1, ...}
    if reduction == "none":
        return reshape(OPERATORS["element_wise_negate"](picked), expected)
    total = OPERATORS["reduce"](picked, function="AVERAGE" if reduction == "mean" else "SUM",
                                axes=tuple(range(picked.ndim)))
    return reshape(OPERATORS["element_wise_negate"](total), ())
