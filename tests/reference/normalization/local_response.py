"""float64 references of LOCAL_RESPONSE_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION_GRAD.

LRN, from its page: Output = Input / (Bias + (Alpha / LocalSize) * sum(Input^2 over the local
region))^Beta, the region LocalSize channels (CrossChannel) or LocalSize x LocalSize of Height x
Width, from floor((LocalSize - 1) / 2) before the element to ceil((LocalSize - 1) / 2) after it,
clipped (ONNX's LRN, which ONNX Runtime maps onto CrossChannel TRUE). LRN_GRAD's page gives no
formula: its reference is the derivative of the LRN formula, written out element by element
(dX_q = dY_q D_q^-Beta - 2 Alpha Beta / LocalSize * X_q * sum over the regions p holding q of dY_p
X_p D_p^(-Beta-1)); the LRN's own gradient reference is the complex-step derivative of the LRN
formula, an independent check of that algebra."""

import numpy as np

from tests.reference.normalization._common import _sizes, complex_step, rows_of, total
from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, read


F32_MAX = float(np.finfo(np.float32).max)


def _span(i, n, size):
    before = (size - 1) // 2
    return max(0, i - before), min(n - 1, i + size - 1 - before)


def _region_sums(t, cross, size):
    """sum of t over each element's local region (complex-safe; loops over the region)."""
    out = np.zeros_like(t)
    _, c, h, w = t.shape
    if cross:
        for k in range(c):
            lo, hi = _span(k, c, size)
            out[:, k] = t[:, lo:hi + 1].sum(axis=1)
        return out
    for i in range(h):
        ilo, ihi = _span(i, h, size)
        for j in range(w):
            jlo, jhi = _span(j, w, size)
            out[:, :, i, j] = t[:, :, ilo:ihi + 1, jlo:jhi + 1].sum(axis=(2, 3))
    return out


def _holding_sums(t, cross, size):
    """sum of t over the regions that hold each element (region p holds q when q is in p's span)."""
    out = np.zeros_like(t)
    _, c, h, w = t.shape
    if cross:
        for p in range(c):
            lo, hi = _span(p, c, size)
            out[:, lo:hi + 1] += t[:, p:p + 1]
        return out
    for i in range(h):
        ilo, ihi = _span(i, h, size)
        for j in range(w):
            jlo, jhi = _span(j, w, size)
            out[:, :, ilo:ihi + 1, jlo:jhi + 1] += t[:, :, i:i + 1, j:j + 1]
    return out


def _in_float32(v):
    """A FLOAT32 intermediate of the formula (the record's notes): beyond FLOAT32's range it is inf,
    where float64 would hold it (|Input| above about 1.8e19 squared); complex values pass."""
    if np.iscomplexobj(v):
        return v
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(v) > F32_MAX, np.copysign(np.inf, v), v)


def _squares(x):
    return _in_float32(x * x)


def _params(cross_channel=True, local_size=1, alpha=0.0001, beta=0.75, bias=1.0):
    return bool(cross_channel), int(local_size), c_float(alpha), c_float(beta), c_float(bias)


def _lrn_core(cross, size, alpha, beta, bias):
    def core(x):
        return x / (bias + (alpha / size) * _in_float32(_region_sums(_squares(x), cross, size))) ** beta
    return core


def _lrn_grad_core(cross, size, alpha, beta, bias):
    def core(x, g):
        d = bias + (alpha / size) * _in_float32(_region_sums(_squares(x), cross, size))
        # (as its two terms, whose difference the OutputGradient is)
        return g * d ** -beta, -(2 * alpha * beta / size) * x * _holding_sums(g * x * d ** (-beta - 1), cross, size)
    return core


def local_response_normalization(x, half=False, **kwargs):
    return [_lrn_core(*_params(**kwargs))(read(x))]


def _lrn_grad(dy, x, half=False, sizes=False, **kwargs):
    grads, mags = complex_step(_lrn_core(*_params(**kwargs)), [read(x)], dy)
    return mags if sizes else grads


def local_response_normalization_grad(x, dy, half=False, **kwargs):
    return [total(_lrn_grad_core(*_params(**kwargs))(read(x), read(dy)))]


def _lrn_grad_magnitude(x, dy, half=False, **kwargs):
    cross, size, alpha, beta, bias = _params(**kwargs)
    x, g = read(x), read(dy)
    d = bias + (alpha / size) * _in_float32(_region_sums(_squares(x), cross, size))
    return np.abs(g) * d ** -beta + (2 * alpha * beta / size) * np.abs(x) * _holding_sums(
        np.abs(g * x) * d ** (-beta - 1), cross, size)


def _second_order(dy2, x, dy, half=False, sizes=False, **kwargs):
    grads, mags = complex_step(_lrn_grad_core(*_params(**kwargs)), [read(x), read(dy)], dy2)
    return mags if sizes else grads


_LRN_SETS = (  # Alpha large enough for the region to matter next to FLOAT16's rounding; few sets: each
    # costs compiles in every generated check (a region wider than the channels: the hand tests)
    Attrs({"local_size": 3, "alpha": 0.5}, half={"local_size": 3, "alpha": 0.5, "half": True}),
    Attrs({"local_size": 2, "cross_channel": False, "alpha": 0.5, "beta": 0.6, "bias": 2.0}),
)

_ROLES = {"InputTensor": "factor", "InputGradientTensor": "factor"}  # moderate values (FLOAT16 differences)

REFERENCES = {
    "DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION": Reference(
        local_response_normalization, attrs=_LRN_SETS, roles={"InputTensor": "factor"}, grad=_lrn_grad, grad_magnitude=_sizes(_lrn_grad),
        pointwise=False, accumulates=True, shape=rows_of),
    "DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD": Reference(
        local_response_normalization_grad, attrs=_LRN_SETS[1:], roles=_ROLES, magnitude=_lrn_grad_magnitude, grad=_second_order,
        grad_magnitude=_sizes(_second_order), pointwise=False, accumulates=True, shape=rows_of),
}
