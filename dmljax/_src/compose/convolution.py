"""2-D convolution with PyTorch's arguments, by DML_OPERATOR_CONVOLUTION."""

from __future__ import annotations

import operator

from dmljax._src.compose.checks import check, same_data_type
from dmljax._src.compose.views import reshape
from dmljax._src.errors import Violation, quote
from dmljax._src.ops import OPERATORS

__all__ = ["conv2d"]


def _pair(value, arg: str, problems: list[Violation], low: int):
    seq = value if isinstance(value, (tuple, list)) else (value, value)
    try:
        out = tuple(operator.index(v) for v in seq)
    except TypeError:
        out = None
    if out is None or len(out) != 2 or any(v < low for v in out) or any(isinstance(v, bool) for v in seq):
        problems.append(Violation("", "", f"`{arg}` is {quote(value)}", f"an integer of at least {low} or a pair of them"))
        return None
    return out


def _padding(padding, size, window, stride, dilation, problems):
    """StartPadding and EndPadding (two each) for ``padding``: 'valid', 'same', an int, a pair or
    a pair of (start, end) pairs."""
    if isinstance(padding, str):
        mode = padding.lower()
        if mode == "valid":
            return (0, 0), (0, 0)
        if mode == "same":  # TensorFlow's and jax's SAME: out = ceil(in / stride), the odd one at the end
            start, end = [], []
            for n, k, s, d in zip(size, window, stride, dilation):
                total = max(0, (-(-n // s) - 1) * s + d * (k - 1) + 1 - n)
                start.append(total // 2)
                end.append(total - total // 2)
            return tuple(start), tuple(end)
    elif isinstance(padding, (tuple, list)) and len(padding) == 2 and all(isinstance(p, (tuple, list)) for p in padding):
        pairs = [_pair(p, "padding", problems, 0) for p in padding]
        if None not in pairs:
            return (pairs[0][0], pairs[1][0]), (pairs[0][1], pairs[1][1])
        return None, None
    else:
        p = _pair(padding, "padding", problems, 0)
        return p, p
    problems.append(Violation("", "", f"`padding` is {quote(padding)}",
                              "'valid', 'same', an int, (top/bottom, left/right) or ((top, bottom), (left, right))"))
    return None, None


def conv2d(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups: int = 1):
    """PyTorch's ``conv2d`` (cross-correlation) on NCHW: ``x`` {N, C, H, W} (or {C, H, W}),
    ``weight`` {O, C / groups, kH, kW}, ``bias`` {O} or None; by one DML_OPERATOR_CONVOLUTION
    (Mode CROSS_CORRELATION, Direction FORWARD), the bias given as {1, O, 1, 1} (a desc).

    ``stride`` and ``dilation`` are an int or a pair; ``padding`` an int, a pair, a pair of
    (start, end) pairs, ``'valid'`` (none) or ``'same'`` (the output ``ceil(H / stride)``, the odd
    padding at the end, as jax's and TensorFlow's SAME; PyTorch's 'same' for stride 1). FLOAT32
    products are FLOAT32; FLOAT16 accumulates in FLOAT32.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    >>> compose.conv2d(x, np.ones((2, 1, 2, 2), np.float32), np.array([0, 100], np.float32), padding="same")[0, 1]
    Array([[112., 116., 109.],
           [124., 128., 115.],
           [115., 117., 109.]], dtype=float32)
    """
    ops = ("CONVOLUTION",)
    problems: list[Violation] = []
    same_data_type({"x": x, "weight": weight, "bias": bias}, problems, optional=("bias",))
    check("conv2d", ops, problems)
    if x.ndim not in (3, 4):
        problems.append(Violation("", "", f"`x` has shape {tuple(x.shape)}", "{N, C, H, W} or {C, H, W}"))
    if weight.ndim != 4:
        problems.append(Violation("", "", f"`weight` has shape {tuple(weight.shape)}", "{O, C / groups, kH, kW}"))
    if bias is not None and (weight.ndim != 4 or tuple(bias.shape) != (weight.shape[0],)):
        problems.append(Violation("", "", f"`bias` has shape {tuple(bias.shape)}", "{O}, one per output channel"))
    strides = _pair(stride, "stride", problems, 1)
    dilations = _pair(dilation, "dilation", problems, 1)
    check("conv2d", ops, problems)
    unbatched = x.ndim == 3
    x4 = reshape(x, (1, *x.shape)) if unbatched else x
    start, end = _padding(padding, x4.shape[2:], weight.shape[2:], strides, dilations, problems)
    check("conv2d", ops, problems)
    b = None if bias is None else reshape(bias, (1, bias.shape[0], 1, 1))
    y = OPERATORS["convolution"](x4, weight, b, strides=strides, dilations=dilations, start_padding=start,
                                 end_padding=end, group_count=groups)
    return reshape(y, y.shape[1:]) if unbatched else y
