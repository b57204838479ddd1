"""Exact references of UNFOLD and FOLD, from their pages, element by element: block l of
BlocksPerDimension (row-major) starts at l * Strides - StartPadding; window position k (row-major
over WindowSizes) adds k * Dilations; UNFOLD copies InputTensor[n, c, there] (0 outside) into
OutputTensor[n, c * prod(WindowSizes) + k, l], FOLD adds it back (float64 sums, integers wrapped).
Each one's gradient is the other."""

import itertools
import math

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import read, wrap

_SPATIAL = (5, 4, 2, 1, 2, 1)


def _blocks(spatial, window, strides, dilations, start, end):
    return [(s + a + b - d * (w - 1) - 1) // t + 1 for s, w, t, d, a, b in zip(spatial, window, strides, dilations, start, end)]


def _pairs(spatial, window_sizes, strides, dilations, start_padding, end_padding):
    """(row k, column l, spatial position or None in the padding) for every window element."""
    blocks = _blocks(spatial, window_sizes, strides, dilations, start_padding, end_padding)
    out = []
    for l, b in enumerate(itertools.product(*(range(n) for n in blocks))):
        for k, w in enumerate(itertools.product(*(range(n) for n in window_sizes))):
            pos = tuple(bi * t + wi * d - a for bi, wi, t, d, a in zip(b, w, strides, dilations, start_padding))
            inside = all(0 <= p < s for p, s in zip(pos, spatial))
            out.append((k, l, pos if inside else None))
    return out, math.prod(window_sizes), math.prod(blocks)


def unfold(x, window_sizes, strides, dilations, start_padding, end_padding, output_sizes=None):
    x = np.asarray(x)
    n, c = x.shape[:2]
    pairs, k_count, l_count = _pairs(x.shape[2:], window_sizes, strides, dilations, start_padding, end_padding)
    out = np.zeros((n, c * k_count, l_count), x.dtype)
    for k, l, pos in pairs:
        if pos is not None:
            for ci in range(c):
                out[:, ci * k_count + k, l] = x[(slice(None), ci) + pos]
    return [out.reshape(output_sizes) if output_sizes is not None else out]


def _fold64(x64, output_sizes, window_sizes, strides, dilations, start_padding, end_padding):
    n, c = output_sizes[:2]
    pairs, k_count, l_count = _pairs(output_sizes[2:], window_sizes, strides, dilations, start_padding, end_padding)
    cols = np.asarray(x64).reshape(n, c * k_count, l_count)
    out = np.zeros(tuple(output_sizes), cols.dtype)
    for k, l, pos in pairs:
        if pos is not None:
            for ci in range(c):
                out[(slice(None), ci) + pos] += cols[:, ci * k_count + k, l]
    return out


def fold(x, window_sizes, strides, dilations, start_padding, end_padding, output_sizes, half=False):
    x = np.asarray(x)
    geometry = (window_sizes, strides, dilations, start_padding, end_padding)
    if x.dtype.kind in "iu":
        return [wrap(_fold64(x.astype(object), output_sizes, *geometry), x.dtype)]
    return [_fold64(read(x), output_sizes, *geometry)]


def _fold_magnitude(x, window_sizes, strides, dilations, start_padding, end_padding, output_sizes, half=False):
    x = np.asarray(x)
    if x.dtype.kind in "iu":
        return np.zeros(tuple(output_sizes))
    return _fold64(np.abs(read(x)), output_sizes, window_sizes, strides, dilations, start_padding, end_padding)


def _unfold_grad(dy, x, window_sizes, strides, dilations, start_padding, end_padding, output_sizes=None):
    x = np.asarray(x)
    cols = np.asarray(dy, np.float64).reshape(x.shape[0], -1, np.asarray(dy).shape[-1])
    return [_fold64(cols, x.shape, window_sizes, strides, dilations, start_padding, end_padding)]


def _fold_grad(dy, x, window_sizes, strides, dilations, start_padding, end_padding, output_sizes, half=False):
    cols = unfold(np.asarray(dy, np.float64), window_sizes, strides, dilations, start_padding, end_padding)[0]
    return [cols.reshape(np.shape(x))]


def _image_shape(shape):
    """A case's image-shaped tensor: a long vector (the gradient cases, (1, 1, 64)) as it is;
    otherwise (2, 3) and up to six spatial sizes of 5, 4, 2, 1, 2, 1."""
    if shape[-1] >= 8 or len(shape) < 3:
        return tuple(shape)
    return (2, 3) + _SPATIAL[:len(shape) - 2]


def _geometry(strided: bool):
    def shaped(shape):
        spatial = shape[2:]
        if not strided:  # windows of 3 (or the axis), no padding
            return {"window_sizes": tuple(min(3, s) for s in spatial), "strides": (1,) * len(spatial),
                    "dilations": (1,) * len(spatial), "start_padding": (0,) * len(spatial),
                    "end_padding": (0,) * len(spatial)}
        return {"window_sizes": (2,) * len(spatial), "strides": (2,) * len(spatial),
                "dilations": tuple(2 if s > 2 else 1 for s in spatial),
                "start_padding": (1,) * len(spatial), "end_padding": tuple(2 if i == 0 else 0 for i in range(len(spatial)))}
    return shaped


def _fold_shaped(strided: bool):
    def shaped(shape):
        return {**_geometry(strided)(shape), "output_sizes": tuple(shape)}
    return shaped


def _fold_inputs(rng, types, shape, window_sizes, strides, dilations, start_padding, end_padding, output_sizes, **_):
    """Columns for the case's image-shaped output: (N, C x prod(WindowSizes), BlockCount)."""
    from tests.catalog import random_tensor
    blocks = _blocks(output_sizes[2:], window_sizes, strides, dilations, start_padding, end_padding)
    cols = (output_sizes[0], output_sizes[1] * math.prod(window_sizes), math.prod(blocks))
    return [random_tensor(rng, types["InputTensor"], cols)]


REFERENCES = {
    "DML_OPERATOR_UNFOLD": Reference(
        unfold, attrs=(Attrs(shaped=_geometry(False)), Attrs(shaped=_geometry(True))), selection=True,
        pointwise=False, shape=_image_shape, grad=_unfold_grad),
    "DML_OPERATOR_FOLD": Reference(
        fold, attrs=(Attrs(shaped=_fold_shaped(False)), Attrs(shaped=_fold_shaped(True))), pointwise=False,
        shape=_image_shape, make_inputs=_fold_inputs, magnitude=_fold_magnitude, grad=_fold_grad, accumulates=True),
}
