"""References of SCATTER_ELEMENTS and SCATTER_ND, written element by element from the pages'
pseudocode (dml_scatter_operator_desc.md, dml_scatter_nd_operator_desc.md in
../shared/spec/operators/) and the family's choices where the pages are silent: a scatter drops an
update whose index is out of range, and of several updates to one cell the last in row-major order
of the UpdatesTensor wins. Negative indices of signed types count from the end.

Values move untouched: each result is in the tensor's own type, compared bit for bit."""

import numpy as np

from tests.reference.indexing._common import (_FIRST, _LAST, _aligned, _axis, _index_dtype, _indices, _land, _nd_attrs, _nd_inputs, _values)
from tests.reference.record import Attrs, Reference


# ------------------------------------------------------------------------------------- SCATTER_ELEMENTS
def _scatter_elements_walk(x, indices, axis):
    """The writes in row-major order of the updates: (update coordinates, output coordinates)."""
    for c in np.ndindex(indices.shape):
        i = _land(indices[c], x.shape[axis])
        if i is not None:
            yield c, c[:axis] + (i,) + c[axis + 1:]


def _scatter_elements(x, indices, updates, axis):
    """output = input; output[c with indices[c] along Axis] = updates[c], in row-major order of
    the updates (the last write wins); out-of-range updates dropped."""
    x, indices, updates = np.asarray(x), np.asarray(indices), np.asarray(updates)
    out = x.copy()
    for c, t in _scatter_elements_walk(x, indices, axis):
        out[t] = updates[c]
    return out


def _scatter_elements_grad(dy, x, indices, updates, axis):
    x, indices = np.asarray(x), np.asarray(indices)
    dy = np.asarray(dy, np.float64)
    writer = {}
    for c, t in _scatter_elements_walk(x, indices, axis):
        writer[t] = c
    dx, du = dy.copy(), np.zeros(np.shape(updates))
    for t, c in writer.items():
        dx[t] = 0.0
        du[c] = dy[t]
    return (dx, None, du)


def _scatter_elements_inputs(rng, types, shape, axis):
    ishape = shape  # one shape for every float input (the generated gradient test needs it)
    return [_values(rng, types["InputTensor"], shape),
            _indices(rng, _index_dtype(types["IndicesTensor"]), ishape, shape[axis]),
            _values(rng, types["UpdatesTensor"], ishape)]


# ------------------------------------------------------------------------------------- SCATTER_ND
def _scatter_nd_walk(x, indices, m, q):
    """(update's relevant coordinates, output's relevant coordinates) for each element an
    in-range tuple writes, in row-major order of the updates."""
    d = x.ndim
    x_rel = x.shape[d - m:]
    rel = indices.reshape(indices.shape[d - q:])
    k = rel.shape[-1]
    u_rel = rel.shape[:-1] + x_rel[k:]
    for c in np.ndindex(u_rel):
        t, rest = c[:q - 1], c[q - 1:]
        coords = [_land(rel[t + (j,)], x_rel[j]) for j in range(k)]
        if all(v is not None for v in coords):
            yield c, tuple(coords) + rest
    return


def _scatter_nd(x, indices, updates, input_dimension_count, indices_dimension_count):
    """output = input; output[indices[t...]] = updates[t...] in row-major order (the last wins)."""
    x, indices, updates = np.asarray(x), np.asarray(indices), np.asarray(updates)
    m, q = input_dimension_count, indices_dimension_count
    x_rel = x.shape[x.ndim - m:]
    rel = indices.reshape(indices.shape[x.ndim - q:])
    u = updates.reshape(rel.shape[:-1] + x_rel[rel.shape[-1]:])
    out = x.copy().reshape(x_rel)
    for c, t in _scatter_nd_walk(x, indices, m, q):
        out[t] = u[c]
    return out.reshape(x.shape)


def _scatter_nd_grad(dy, x, indices, updates, input_dimension_count, indices_dimension_count):
    x, indices = np.asarray(x), np.asarray(indices)
    m, q = input_dimension_count, indices_dimension_count
    x_rel = x.shape[x.ndim - m:]
    rel = indices.reshape(indices.shape[x.ndim - q:])
    u_rel = rel.shape[:-1] + x_rel[rel.shape[-1]:]
    writer = {}
    for c, t in _scatter_nd_walk(x, indices, m, q):
        writer[t] = c
    dyr = np.asarray(dy, np.float64).reshape(x_rel)
    dx, du = dyr.copy(), np.zeros(u_rel)
    for t, c in writer.items():
        dx[t] = 0.0
        du[c] = dyr[t]
    return (dx.reshape(x.shape), None, du.reshape(np.shape(updates)))


def _scatter_nd_inputs(rng, types, shape, input_dimension_count, indices_dimension_count):
    # as many rows as the InputTensor's first dimension, so that UpdatesTensor has its Sizes (the
    # generated gradient test takes one mask for every float input: it needs one shape)
    x, idx = _nd_inputs(rng, types, shape, input_dimension_count, indices_dimension_count, rows=shape[0])
    d, q = len(shape), indices_dimension_count
    rel = idx.shape[d - q:]
    u_shape = _aligned(rel[:-1] + shape[rel[-1]:], d)
    return [x, idx, _values(rng, types["UpdatesTensor"], u_shape)]


REFERENCES = {
    "DML_OPERATOR_SCATTER_ELEMENTS": Reference(
        fn=lambda x, i, u, **kw: [_scatter_elements(x, i, u, **kw)],
        attrs=(Attrs(shaped=_axis(_FIRST)), Attrs(shaped=_axis(_LAST))),
        selection=True, pointwise=False, make_inputs=_scatter_elements_inputs, grad=_scatter_elements_grad),
    "DML_OPERATOR_SCATTER_ND": Reference(
        fn=lambda x, i, u, **kw: [_scatter_nd(x, i, u, **kw)],
        attrs=(Attrs(shaped=_nd_attrs("rows")),),
        # 1-D cases as (1, n): a 1-D scatter writes one element (UpdatesTensor {1}), and the generated
        # gradient test needs every float input in one shape (1-D calls: tests/ops/indexing/test_scatter.py)
        shape=lambda s: (1,) + tuple(s) if len(s) == 1 else tuple(s),
        selection=True, pointwise=False, make_inputs=_scatter_nd_inputs, grad=_scatter_nd_grad),
}
