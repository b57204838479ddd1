"""Exact references of JOIN and SPLIT, from their pages (dml_join_operator_desc.md,
dml_split_operator_desc.md): the input tensors' values, in order, along the axis; bit for bit."""

import numpy as np

from tests.reference.record import Attrs, Reference


def join(inputs, axis):
    return [np.concatenate([np.asarray(x) for x in inputs], axis=axis)]


def _join_grad(dy, inputs, axis):
    bounds = np.cumsum([np.shape(x)[axis] for x in inputs])[:-1]
    return [np.split(np.asarray(dy, np.float64), bounds, axis=axis)]


def split(x, axis, outputs_sizes):
    x = np.asarray(x)
    bounds = np.cumsum([s[axis] for s in outputs_sizes])[:-1]
    return [tuple(np.split(x, bounds, axis=axis))]


def _split_grad(dy, x, axis, outputs_sizes):
    """The generated tests differentiate the first output: dY lands in its part."""
    g = np.zeros(np.shape(x))
    idx = [slice(None)] * g.ndim
    idx[axis] = slice(0, outputs_sizes[0][axis])
    g[tuple(idx)] = dy
    return [g]


def _split_axis(shape):
    """The longest axis, split into its first element and the rest (one part when it is 1 long)."""
    if not shape:  # a 0-dimensional negative case: any Sizes will be refused with it
        return {"axis": 0, "outputs_sizes": [(1,)]}
    axis = int(np.argmax(shape))
    n = shape[axis]
    parts = [1, n - 1] if n > 1 else [1]
    sizes = [tuple(p if i == axis else s for i, s in enumerate(shape)) for p in parts]
    return {"axis": axis, "outputs_sizes": sizes}


REFERENCES = {
    "DML_OPERATOR_JOIN": Reference(join, attrs=(Attrs({"axis": 0}),), selection=True, grad=_join_grad,
                                   pointwise=False),
    "DML_OPERATOR_SPLIT": Reference(split, attrs=(Attrs(shaped=_split_axis),), selection=True, grad=_split_grad,
                                    pointwise=False),
}
