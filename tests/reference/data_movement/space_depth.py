"""Exact references of SPACE_TO_DEPTH(1) and DEPTH_TO_SPACE(1), element by element from the
DML_DEPTH_SPACE_ORDER page's layouts: the depth side is [N, (bh, bw, C), H, W] (DEPTH_COLUMN_ROW) or
[N, (C, bh, bw), H, W] (COLUMN_ROW_DEPTH), the space side [N, C, (H, bh), (W, bw)]."""

import numpy as np

from tests.reference.record import Attrs, Reference


def _depth_channel(c, bh, bw, b, channels, order):
    crd = str(order).upper().endswith("COLUMN_ROW_DEPTH") or order == 1
    return (c * b + bh) * b + bw if crd else (bh * b + bw) * channels + c


def depth_to_space(x, block_size, order="DEPTH_COLUMN_ROW"):
    x = np.asarray(x)
    b = block_size
    n, c, h, w = x.shape
    c2 = c // (b * b)
    out = np.empty((n, c2, h * b, w * b), x.dtype)
    for i in np.ndindex(out.shape):
        nn, cc, yy, xx = i
        out[i] = x[nn, _depth_channel(cc, yy % b, xx % b, b, c2, order), yy // b, xx // b]
    return [out]


def space_to_depth(x, block_size, order="DEPTH_COLUMN_ROW"):
    x = np.asarray(x)
    b = block_size
    n, c, h, w = x.shape
    out = np.empty((n, c * b * b, h // b, w // b), x.dtype)
    for i in np.ndindex(x.shape):
        nn, cc, yy, xx = i
        out[nn, _depth_channel(cc, yy % b, xx % b, b, c, order), yy // b, xx // b] = x[i]
    return [out]


def _grad_of(forward, inverse):
    def grad(dy, x, **kw):  # a permutation: dX is dY moved back
        return [inverse(np.asarray(dy, np.float64), **kw)[0]]
    return grad


def _to_space_shape(shape):
    return (shape[0], 4 * shape[1], shape[2], shape[3]) if len(shape) == 4 else shape


def _to_depth_shape(shape):
    return (shape[0], shape[1], 2 * shape[2], 2 * shape[3]) if len(shape) == 4 else shape


_ORDERS = (Attrs({"block_size": 2, "order": "DEPTH_COLUMN_ROW"}), Attrs({"block_size": 2, "order": "COLUMN_ROW_DEPTH"}))

REFERENCES = {
    "DML_OPERATOR_DEPTH_TO_SPACE": Reference(
        depth_to_space, attrs=(Attrs({"block_size": 2}),), selection=True, pointwise=False,
        shape=_to_space_shape, grad=_grad_of(depth_to_space, space_to_depth)),
    "DML_OPERATOR_DEPTH_TO_SPACE1": Reference(
        depth_to_space, attrs=_ORDERS, selection=True, pointwise=False, shape=_to_space_shape,
        grad=_grad_of(depth_to_space, space_to_depth)),
    "DML_OPERATOR_SPACE_TO_DEPTH": Reference(
        space_to_depth, attrs=(Attrs({"block_size": 2}),), selection=True, pointwise=False,
        shape=_to_depth_shape, grad=_grad_of(space_to_depth, depth_to_space)),
    "DML_OPERATOR_SPACE_TO_DEPTH1": Reference(
        space_to_depth, attrs=_ORDERS, selection=True, pointwise=False, shape=_to_depth_shape,
        grad=_grad_of(space_to_depth, depth_to_space)),
}
