"""Layer normalization by DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1."""

from __future__ import annotations

from dmljax._src.compose.checks import axes_tuple, check, same_data_type
from dmljax._src.compose.views import reshape
from dmljax._src.errors import Violation
from dmljax._src.ops import OPERATORS

__all__ = ["layer_norm"]


def layer_norm(x, scale=None, bias=None, *, axes=-1, epsilon: float = 1e-5):
    """``(x - mean) / sqrt(var + epsilon) * scale + bias``, the mean and the biased variance taken
    over ``axes`` (default the last; negatives count from the end), as PyTorch's ``layer_norm``
    and flax's ``LayerNorm``, by one DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1.

    ``scale`` and ``bias`` (optional) broadcast against ``x`` by NumPy's rule within ``x``'s shape
    (usually ``x.shape[-1:]``); they are given the operator with leading sizes of 1 (a desc), and
    the operator broadcasts their sizes of 1. FLOAT16 is computed in FLOAT32 and rounded once.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.layer_norm(np.array([[1, 3], [2, 6]], np.float32), np.array([1, 2], np.float32), epsilon=0.0)
    Array([[-1.,  2.],
           [-1.,  2.]], dtype=float32)
    """
    ops = ("MEAN_VARIANCE_NORMALIZATION1",)
    problems: list[Violation] = []
    same_data_type({"x": x, "scale": scale, "bias": bias}, problems, optional=("scale", "bias"))
    check("layer_norm", ops, problems)
    if x.ndim == 0:
        check("layer_norm", ops, [Violation("", "", "`x` is 0-d", "an array of 1 or more dimensions")])
    normalized = axes_tuple(axes, x.ndim, "axes", problems)
    padded = {}
    for arg, t in (("scale", scale), ("bias", bias)):
        if t is None:
            continue
        if t.ndim > x.ndim or any(s not in (1, v) for s, v in zip(t.shape[::-1], x.shape[::-1])):
            problems.append(Violation("", "", f"`{arg}` of shape {tuple(t.shape)} does not broadcast to `x`'s "
                                              f"{tuple(x.shape)}", "sizes of 1 or x's, aligned at the end"))
            continue
        padded[arg] = reshape(t, (1,) * (x.ndim - t.ndim) + tuple(t.shape))
    check("layer_norm", ops, problems)
    return OPERATORS["mean_variance_normalization1"](x, padded.get("scale"), padded.get("bias"), axes=normalized,
                                                     epsilon=epsilon)
