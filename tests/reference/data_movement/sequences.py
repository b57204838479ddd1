"""Exact reference of REVERSE_SUBSEQUENCES, from its page: along Axis, each sequence's first L
elements (L its length, clamped to the axis) in reverse order, the rest as they are."""

import numpy as np

from tests.catalog import random_tensor
from tests.reference.record import Attrs, Reference


def reverse_subsequences(x, lengths, axis):
    x = np.asarray(x)
    out = x.copy()
    moved = np.moveaxis(x, axis, -1)
    dest = np.moveaxis(out, axis, -1)
    lens = np.moveaxis(np.asarray(lengths), axis, -1)[..., 0]
    n = moved.shape[-1]
    for idx in np.ndindex(moved.shape[:-1]):
        k = min(int(lens[idx]), n)
        dest[idx][:k] = moved[idx][:k][::-1]
    return [out]


def _inputs(rng, types, shape, axis):
    x = random_tensor(rng, types["InputTensor"], shape)
    lshape = tuple(1 if i == axis else s for i, s in enumerate(shape))
    n = shape[axis] if shape else 1
    lengths = rng.integers(0, n + 3, lshape).astype(types["SequenceLengthsTensor"].dtype)  # beyond the axis too
    return [x, lengths]


def _grad(dy, x, lengths, axis):
    return [reverse_subsequences(np.asarray(dy, np.float64), lengths, axis)[0], None]  # its own inverse


def _longest(shape):
    return {"axis": int(np.argmax(shape)) if shape else 0}


REFERENCES = {
    "DML_OPERATOR_REVERSE_SUBSEQUENCES": Reference(
        reverse_subsequences, attrs=(Attrs(shaped=_longest),), selection=True, pointwise=False,
        make_inputs=_inputs, grad=_grad),
}
