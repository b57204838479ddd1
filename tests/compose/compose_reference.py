"""Independent float64 NumPy references of dmljax.compose's compositions, written from what each
promises (NumPy's matmul, PyTorch's linear, layer_norm, embedding, conv2d, scaled dot-product
attention and cross_entropy), not from dmljax's code. Inputs are read as float64; FLOAT32
denormals do not occur in the tests' inputs."""

from __future__ import annotations

import math

import numpy as np


def f64(x):
    return np.asarray(x, np.float64)


def matmul(a, b):
    return np.matmul(f64(a), f64(b))


def linear(x, w, b=None):
    y = f64(x) @ f64(w).T
    return y if b is None else y + f64(b)


def layer_norm(x, scale=None, bias=None, axes=(-1,), epsilon=1e-5):
    x = f64(x)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + np.float32(epsilon))
    if scale is not None:
        y = y * f64(scale)
    if bias is not None:
        y = y + f64(bias)
    return y


def embedding(table, indices):
    table = f64(table)
    idx = np.asarray(indices, np.int64)
    v = table.shape[0]
    valid = (idx >= -v) & (idx < v)
    rows = table[np.where(valid, idx, 0)]
    return np.where(valid.reshape(valid.shape + (1,) * (table.ndim - 1)), rows, 0.0)


def conv2d(x, w, b=None, stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1):
    """Cross-correlation on NCHW, by its definition: a sum over each window's taps."""
    x, w = f64(x), f64(w)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + sum(pads[0]), wd + sum(pads[1])))
    xp[:, :, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd] = x
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dilation[0]:i * dilation[0] + stride[0] * (oh - 1) + 1:stride[0],
                           j * dilation[1]:j * dilation[1] + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += f64(b)[None, :, None, None]
    return out


def attention(q, k, v, keep=None, heads=1, scale=None):
    """softmax(scale q k^T, masked keys excluded) v per head; q {B, T, H dk}, k {B, S, H dk},
    v {B, S, H dv}; keep broadcasts to {B, H, T, S} (True: attend)."""
    q, k, v = f64(q), f64(k), f64(v)
    b, t, d = q.shape
    s = k.shape[1]
    dk, dv = d // heads, v.shape[2] // heads
    qh = q.reshape(b, t, heads, dk).transpose(0, 2, 1, 3)
    kh = k.reshape(b, s, heads, dk).transpose(0, 2, 1, 3)
    vh = v.reshape(b, s, heads, dv).transpose(0, 2, 1, 3)
    scores = (1 / math.sqrt(dk) if scale is None else scale) * (qh @ kh.transpose(0, 1, 3, 2))
    if keep is not None:
        scores = np.where(np.broadcast_to(keep, scores.shape), scores, -np.inf)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ vh).transpose(0, 2, 1, 3).reshape(b, t, heads * dv)


def cross_entropy(logits, labels, axis=-1, reduction="mean"):
    x = np.moveaxis(f64(logits), axis, -1)
    log_p = x - x.max(axis=-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(axis=-1, keepdims=True))
    nll = -np.take_along_axis(log_p, np.asarray(labels, np.int64)[..., None], axis=-1)[..., 0]
    return {"none": nll, "sum": nll.sum(), "mean": nll.mean()}[reduction]


def gelu(x):
    x = f64(x)
    return x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) / 2


def softmax(x, axis=-1):
    x = f64(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def numeric_grad(f, x, eps=1e-6):
    """The gradient of the scalar float64 function ``f`` at ``x`` by central differences."""
    x = f64(x).copy()
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        up = f(x)
        x[i] = old - eps
        down = f(x)
        x[i] = old
        g[i] = (up - down) / (2 * eps)
    return g
