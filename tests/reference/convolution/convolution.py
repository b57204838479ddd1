"""Float64 reference of the convolution family (CONVOLUTION), from its page: FORWARD sums each
window of the zero-padded input against the filter (flipped in CONVOLUTION mode); BACKWARD
scatters each input element, times the filter, onto the output positions whose FORWARD windows
hold it (the transpose), cropped by the paddings and lengthened by OutputPadding. The inputs as
math reads them (FLOAT32 denormals flushed); the gradient by the same sums, transposed."""

import itertools

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import read


def _backward(direction):
    return str(direction).upper().endswith("BACKWARD") or direction == 1


def _flipped(mode):
    return str(mode).upper() in ("CONVOLUTION", "DML_CONVOLUTION_MODE_CONVOLUTION") or mode == 0


def _geometry(d, strides, dilations, start_padding, end_padding, output_padding):
    ones, zeros = (1,) * d, (0,) * d
    return (tuple(strides or ones), tuple(dilations or ones), tuple(start_padding or zeros),
            tuple(end_padding or zeros), tuple(output_padding or zeros))


def _taps(window):
    return itertools.product(*(range(k) for k in window))


def _out_spatial(spatial, window, backward, s, d, a, b, o):
    if backward:
        return tuple((i - 1) * st + dl * (k - 1) + 1 - p - q + op
                     for i, k, st, dl, p, q, op in zip(spatial, window, s, d, a, b, o))
    return tuple((i + p + q - dl * (k - 1) - 1) // st + 1 + op
                 for i, k, st, dl, p, q, op in zip(spatial, window, s, d, a, b, o))


def _positions(start, step, count):
    return tuple(slice(f, f + st * (n - 1) + 1, st) for f, st, n in zip(start, step, count))


def _parts(x, w, mode, direction, strides, dilations, start_padding, end_padding, output_padding, group_count):
    """The geometry of one call: (x, w as the sums use it, groups, out spatial, s, d, a, b, o)."""
    d = x.ndim - 2
    s, dl, a, b, o = _geometry(d, strides, dilations, start_padding, end_padding, output_padding)
    if _flipped(mode):
        w = w[(slice(None), slice(None)) + (slice(None, None, -1),) * d]
    out = _out_spatial(x.shape[2:], w.shape[2:], _backward(direction), s, dl, a, b, o)
    return w, int(group_count or 1), out, s, dl, a, b, o


def convolution(x, w, bias=None, mode="CROSS_CORRELATION", direction="FORWARD", strides=None, dilations=None,
                start_padding=None, end_padding=None, output_padding=None, group_count=1, fused_activation=None,
                half=False):
    x, w = read(x), read(w)
    w, groups, out_sp, s, dl, a, b, _ = _parts(x, w, mode, direction, strides, dilations, start_padding,
                                               end_padding, output_padding, group_count)
    n, c = x.shape[:2]
    if not _backward(direction):
        oc = w.shape[0]
        cg, og = c // groups, oc // groups
        # the input padded at the start, and at the end as far as any window reads
        reach = [p + (m - 1) * st + dd * (k - 1) + 1 for p, m, st, dd, k in zip(a, out_sp, s, dl, w.shape[2:])]
        xp = np.zeros((n, c) + tuple(max(r, p + i) for r, p, i in zip(reach, a, x.shape[2:])))
        xp[(slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(a, x.shape[2:]))] = x
        y = np.zeros((n, oc) + out_sp)
        for k in _taps(w.shape[2:]):
            window = xp[(slice(None), slice(None)) + _positions([kk * dd for kk, dd in zip(k, dl)], s, out_sp)]
            for g in range(groups):
                part = window[:, g * cg:(g + 1) * cg]
                taps = w[(slice(g * og, (g + 1) * og), slice(None)) + k]  # (og, cg)
                y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", part, taps)
    else:
        cg, og = c // groups, w.shape[1]
        oc = og * groups
        full = [(i - 1) * st + dd * (k - 1) + 1 for i, st, dd, k in zip(x.shape[2:], s, dl, w.shape[2:])]
        size = [max(f, p + m) for f, p, m in zip(full, a, out_sp)]
        y_full = np.zeros((n, oc) + tuple(size))
        for k in _taps(w.shape[2:]):
            where = (slice(None), slice(None)) + _positions([kk * dd for kk, dd in zip(k, dl)], s, x.shape[2:])
            for g in range(groups):
                taps = w[(slice(g * cg, (g + 1) * cg), slice(None)) + k]  # (cg, og)
                y_full[(slice(None), slice(g * og, (g + 1) * og)) + where[2:]] += np.einsum(
                    "nc...,co->no...", x[:, g * cg:(g + 1) * cg], taps)
        y = y_full[(slice(None), slice(None)) + tuple(slice(p, p + m) for p, m in zip(a, out_sp))]
    if bias is not None:
        y = y + read(bias)
    return [y]


def _magnitude(x, w, bias=None, fused_activation=None, half=False, **attrs):
    return convolution(np.abs(read(x)), np.abs(read(w)), None if bias is None else np.abs(read(bias)), **attrs)[0]


def _grad(dy, x, w, bias=None, fused_activation=None, half=False, absolute=False, **attrs):
    """dInput, dFilter, dBias of sum(dy * convolution(x, w, bias)) by the products transposed:
    the convolution is linear in each of x and w, so each gradient element is the sum, over the
    terms that hold it, of dy times the other factor."""
    xs, ws = read(x), read(w)
    if absolute:
        xs, ws, dy = np.abs(xs), np.abs(ws), np.abs(dy)
    dy = np.asarray(dy, np.float64)
    dx = np.zeros(xs.shape)
    dw = np.zeros(ws.shape)
    # gradient by the basis: convolution(e_i, w) and convolution(x, e_j) are the columns of the
    # two linear maps; dX_i = <dy, conv(e_i, w)>, dW_j = <dy, conv(x, e_j)>
    for i in np.ndindex(xs.shape):
        e = np.zeros(xs.shape)
        e[i] = 1
        dx[i] = np.sum(dy * convolution(e, ws, None, **attrs)[0])
    for j in np.ndindex(ws.shape):
        e = np.zeros(ws.shape)
        e[j] = 1
        dw[j] = np.sum(dy * convolution(xs, e, None, **attrs)[0])
    out = [dx, dw]
    if bias is not None:
        out.append(np.sum(dy, axis=(0,) + tuple(range(2, dy.ndim)), keepdims=True))
    return out


def _grad_magnitude(dy, x, w, bias=None, **attrs):
    return _grad(dy, x, w, bias, absolute=True, **attrs)


_WINDOW = (3, 2, 2)


def _inputs(rng, types, shape, direction="FORWARD", group_count=1, **_):
    """Input {2, 4, spatial} with spatial (5, 4, 3)[:d] (d = the case's spatial dimensions), a
    filter of window (3, 2, 2)[:d] with the channels the direction and GroupCount ask, the bias."""
    from tests.catalog import random_tensor
    d = max(len(shape), 3) - 2
    spatial, window = (5, 4, 3)[:d], _WINDOW[:d]
    g = group_count or 1
    x = random_tensor(rng, types["InputTensor"], (2, 4) + spatial)
    if _backward(direction):
        f, oc = (4, 6 // g) + window, 6
    else:
        f, oc = (6, 4 // g) + window, 6
    return [x, random_tensor(rng, types["FilterTensor"], f),
            random_tensor(rng, types["BiasTensor"], (1, oc) + (1,) * d)]


def _each(value):
    return lambda shape: {k: (value[k],) * (max(len(shape), 3) - 2) for k in value}


_SETS = (
    Attrs({}),
    Attrs({"mode": "CONVOLUTION", "group_count": 2},
          shaped=_each({"strides": 2, "dilations": 2, "start_padding": 1, "end_padding": 2})),
    Attrs({"direction": "BACKWARD"}, shaped=_each({"strides": 2, "start_padding": 1, "output_padding": 1})),
    Attrs({"direction": "BACKWARD", "mode": "CONVOLUTION", "group_count": 2},
          shaped=_each({"dilations": 2, "end_padding": 1})),
)

REFERENCES = {
    "DML_OPERATOR_CONVOLUTION": Reference(convolution, attrs=_SETS, make_inputs=_inputs, magnitude=_magnitude,
                                          grad=_grad, grad_magnitude=_grad_magnitude, pointwise=False,
                                          accumulates=True),
}
