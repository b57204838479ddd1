"""float64 references for the activations SOFTMAX, SOFTMAX1, LOG_SOFTMAX, LOG_SOFTMAX1, HARDMAX
and HARDMAX1, transcribed from their pages and docs/semantics.md#accumulating-operators (softmax subtracts the
row's maximum; a row of -inf only is NaN; maxNum for a maximum).

A group is the set of elements normalized together: a row of the last dimension for the original
operators, every coordinate of the dimensions ``axes`` names for the *1 operators."""

import math

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import read


def _groups(x, axes):
    """``x`` with the normalized dimensions moved last and flattened: (groups, n), and how to
    put a result of that shape back."""
    x = np.asarray(x)
    axes = (x.ndim - 1,) if axes is None else tuple(axes)
    keep = tuple(a for a in range(x.ndim) if a not in axes)
    perm = keep + axes
    moved = np.transpose(x, perm)
    flat = moved.reshape((-1, math.prod(moved.shape[len(keep):])))

    def back(y):
        return np.transpose(np.asarray(y).reshape(moved.shape), np.argsort(perm))
    return flat, back


def _terms(x, axes, half, exact=False):
    """Per group: d = x - max rounded to the compute type (FLOAT32, or FLOAT16 in FLOAT16
    arithmetic; unrounded with ``exact``), the exact sum of exp(d) and a mask of groups that are NaN throughout (holding
    NaN or +inf, or -inf only)."""
    x_np = np.asarray(x)
    flat, back = _groups(read(x_np), axes)
    with np.errstate(invalid="ignore", over="ignore"):
        bad = np.isnan(flat).any(1) | np.isposinf(flat).any(1) | np.isneginf(flat).all(1)
        m = np.where(bad, 0.0, np.max(np.where(np.isnan(flat), -np.inf, flat), axis=1))[:, None]
        ct = np.float16 if (half and x_np.dtype == np.float16) else np.float32
        d = flat - m if exact else (flat - m).astype(ct).astype(np.float64)
        e = np.exp(d)
        s = e.sum(1, keepdims=True)
    return d, e, s, bad[:, None], back


def _softmax(x, axes=None, half=False):
    d, e, s, bad, back = _terms(x, axes, half)
    _, e2, s2, _, _ = _terms(x, axes, half, exact=True)  # x - max unrounded: as good a softmax
    with np.errstate(invalid="ignore"):
        return [back(np.where(bad, np.nan, e / s)), back(np.where(bad, np.nan, e2 / s2))]


def _log_softmax(x, axes=None, half=False):
    d, e, s, bad, back = _terms(x, axes, half)
    with np.errstate(invalid="ignore", divide="ignore"):
        return [back(np.where(bad, np.nan, d - np.log(s)))]


def _log_magnitude(x, axes=None, half=False):
    # LOG_SOFTMAX is the difference of x - max and ln(sum): its error is one of their size.
    d, e, s, bad, back = _terms(x, axes, half)
    with np.errstate(invalid="ignore"):
        return back(np.abs(d) + np.abs(np.log(s)) + 1.0)


def _probabilities(x, axes):
    d, e, s, bad, back = _terms(x, axes, False)
    with np.errstate(invalid="ignore"):
        return np.where(bad, np.nan, e / s), back


def _softmax_grad(dy, x, axes=None, half=False):
    # dX = y * (dY - sum(dY * y)): softmax's Jacobian-vector product.
    p, back = _probabilities(x, axes)
    g, _ = _groups(np.asarray(dy, np.float64), axes)
    return (back(p * (g - (g * p).sum(1, keepdims=True))),)


def _softmax_grad_size(dy, x, axes=None, half=False):
    p, back = _probabilities(x, axes)
    g, _ = _groups(np.asarray(dy, np.float64), axes)
    return (back(p * (np.abs(g) + np.abs(g * p).sum(1, keepdims=True))),)


def _log_softmax_grad(dy, x, axes=None, half=False):
    # dX = dY - softmax(x) * sum(dY).
    p, back = _probabilities(x, axes)
    g, _ = _groups(np.asarray(dy, np.float64), axes)
    return (back(g - p * g.sum(1, keepdims=True)),)


def _log_softmax_grad_size(dy, x, axes=None, half=False):
    p, back = _probabilities(x, axes)
    g, _ = _groups(np.asarray(dy, np.float64), axes)
    return (back(np.abs(g) + p * np.abs(g).sum(1, keepdims=True)),)


def _hardmax(x, axes=None):
    # 1 at the first maximum of each group (row-major order of the group's coordinates), 0
    # elsewhere; the maximum is maxNum's (NaN never wins); FLOAT32 denormals read as zero.
    x_np = np.asarray(x)
    flat, back = _groups(read(x_np), axes)
    out = np.zeros(flat.shape)
    for r, row in enumerate(flat):
        best, where = None, 0
        for i, v in enumerate(row.tolist()):
            if math.isnan(v):
                continue
            if best is None or v > best:
                best, where = v, i
        out[r, where] = 1.0
    return [back(out).astype(x_np.dtype)]


def _rows_shape(shape):
    """Generated shapes as rows: the leading dimensions folded into one (effective rank 2, which
    the original operators require); a 1-D vector of 16 or more split into rows of 8."""
    if len(shape) == 1:
        return (shape[0] // 8, 8) if shape[0] >= 16 and shape[0] % 8 == 0 else shape
    return (1,) * (len(shape) - 2) + (math.prod(shape[:-1]), shape[-1])


_HALF = Attrs({}, half={"half": True})
_AXES0 = Attrs({"axes": (0,)}, half={"axes": (0,), "half": True})

REFERENCES = {
    "DML_OPERATOR_ACTIVATION_SOFTMAX": Reference(
        _softmax, attrs=(_HALF,), grad=_softmax_grad, grad_magnitude=_softmax_grad_size,
        pointwise=False, shape=_rows_shape),
    "DML_OPERATOR_ACTIVATION_SOFTMAX1": Reference(
        _softmax, attrs=(_AXES0,), grad=_softmax_grad, grad_magnitude=_softmax_grad_size,
        pointwise=False, shape=_rows_shape),
    "DML_OPERATOR_ACTIVATION_LOG_SOFTMAX": Reference(
        _log_softmax, attrs=(_HALF,), grad=_log_softmax_grad, grad_magnitude=_log_softmax_grad_size,
        magnitude=_log_magnitude, pointwise=False, shape=_rows_shape),
    "DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1": Reference(
        _log_softmax, attrs=(_AXES0,), grad=_log_softmax_grad, grad_magnitude=_log_softmax_grad_size,
        magnitude=_log_magnitude, pointwise=False, shape=_rows_shape),
    "DML_OPERATOR_ACTIVATION_HARDMAX": Reference(
        _hardmax, selection=True, no_grad="a step function: its gradient is zero",
        pointwise=False, shape=_rows_shape),
    "DML_OPERATOR_ACTIVATION_HARDMAX1": Reference(
        _hardmax, attrs=(Attrs({"axes": (0,)}),), selection=True,
        no_grad="a step function: its gradient is zero", pointwise=False, shape=_rows_shape),
}
