"""References of GATHER, GATHER_ELEMENTS, GATHER_ND and GATHER_ND1, written element by element from
the pages' pseudocode (dml_gather_operator_desc.md, dml_gather_elements_operator_desc.md,
dml_gather_nd_operator_desc.md, dml_gather_nd1_operator_desc.md in ../shared/spec/operators/) and
the family's choice where the pages are silent: a gather of an out-of-range index gives 0.
Negative indices of signed types count from the end.

Values move untouched: each result is in the tensor's own type, compared bit for bit."""

import numpy as np

from tests.reference.indexing._common import (_FIRST, _LAST, _aligned, _axis, _index_dtype, _indices, _land, _nd_attrs, _nd_inputs, _values)
from tests.reference.record import Attrs, Reference


# ------------------------------------------------------------------------------------- GATHER
def _gather(x, indices, axis, index_dimensions):
    """output[pre, t..., post] = input[pre, indices[t...], post], 0 out of range."""
    x, indices = np.asarray(x), np.asarray(indices)
    d, k = x.ndim, index_dimensions
    rel = indices.reshape(indices.shape[d - k:])
    full = x.shape[:axis] + rel.shape + x.shape[axis + 1:]
    out = np.zeros(full, x.dtype)
    for c in np.ndindex(full):
        i = _land(rel[c[axis:axis + k]], x.shape[axis])
        if i is not None:
            out[c] = x[c[:axis] + (i,) + c[axis + k:]]
    return out.reshape(_aligned(full, d))


def _gather_grad(dy, x, indices, axis, index_dimensions):
    x, indices = np.asarray(x), np.asarray(indices)
    d, k = x.ndim, index_dimensions
    rel = indices.reshape(indices.shape[d - k:])
    full = x.shape[:axis] + rel.shape + x.shape[axis + 1:]
    dy = np.asarray(dy, np.float64).reshape(full)
    dx = np.zeros(x.shape)
    for c in np.ndindex(full):
        i = _land(rel[c[axis:axis + k]], x.shape[axis])
        if i is not None:
            dx[c[:axis] + (i,) + c[axis + k:]] += dy[c]
    return (dx, None)


def _gather_inputs(rng, types, shape, axis, index_dimensions):
    k = index_dimensions
    idx_shape = (1,) * (len(shape) - k) + ((5,) if k else ())
    return [_values(rng, types["InputTensor"], shape),
            _indices(rng, _index_dtype(types["IndicesTensor"]), idx_shape, shape[axis])]


# ------------------------------------------------------------------------------------- GATHER_ELEMENTS
def _elements_shape(shape, axis):
    return tuple(3 if a == axis else s for a, s in enumerate(shape))


def _gather_elements(x, indices, axis):
    """output[c] = input[c with indices[c] along Axis], 0 out of range."""
    x, indices = np.asarray(x), np.asarray(indices)
    out = np.zeros(indices.shape, x.dtype)
    for c in np.ndindex(indices.shape):
        i = _land(indices[c], x.shape[axis])
        if i is not None:
            out[c] = x[c[:axis] + (i,) + c[axis + 1:]]
    return out


def _gather_elements_grad(dy, x, indices, axis):
    x, indices = np.asarray(x), np.asarray(indices)
    dx = np.zeros(x.shape)
    dy = np.asarray(dy, np.float64)
    for c in np.ndindex(indices.shape):
        i = _land(indices[c], x.shape[axis])
        if i is not None:
            dx[c[:axis] + (i,) + c[axis + 1:]] += dy[c]
    return (dx, None)


def _gather_elements_inputs(rng, types, shape, axis):
    return [_values(rng, types["InputTensor"], shape),
            _indices(rng, _index_dtype(types["IndicesTensor"]), _elements_shape(shape, axis), shape[axis])]


# ------------------------------------------------------------------------------------- GATHER_ND(1)
def _nd_walk(x, indices, m, q, b):
    """Each (output coordinates, input coordinates or None) pair of GATHER_ND1's pseudocode
    output[batch, t..., rest...] = input[batch, indices[batch, t..., :], rest...], in the relevant
    dimensions; and the relevant output Sizes."""
    d = x.ndim
    x_rel = x.shape[d - m:]
    rel = indices.reshape(indices.shape[d - q:])
    k = rel.shape[-1]
    full = rel.shape[:-1] + x_rel[b + k:]
    pairs = []
    for c in np.ndindex(full):
        t, rest = c[:q - 1], c[q - 1:]
        coords = [_land(rel[t + (j,)], x_rel[b + j]) for j in range(k)]
        src = None if any(v is None for v in coords) else t[:b] + tuple(coords) + rest
        pairs.append((c, src))
    return pairs, full, x_rel


def _gather_nd(x, indices, input_dimension_count, indices_dimension_count, batch_dimension_count=0):
    x, indices = np.asarray(x), np.asarray(indices)
    pairs, full, x_rel = _nd_walk(x, indices, input_dimension_count, indices_dimension_count, batch_dimension_count)
    xr = x.reshape(x_rel)
    out = np.zeros(full, x.dtype)
    for c, src in pairs:
        if src is not None:
            out[c] = xr[src]
    return out.reshape(_aligned(full, x.ndim))


def _gather_nd_grad(dy, x, indices, input_dimension_count, indices_dimension_count, batch_dimension_count=0):
    x, indices = np.asarray(x), np.asarray(indices)
    pairs, full, x_rel = _nd_walk(x, indices, input_dimension_count, indices_dimension_count, batch_dimension_count)
    dx = np.zeros(x_rel)
    dy = np.asarray(dy, np.float64).reshape(full)
    for c, src in pairs:
        if src is not None:
            dx[src] += dy[c]
    return (dx.reshape(x.shape), None)


REFERENCES = {
    "DML_OPERATOR_GATHER": Reference(
        fn=lambda x, i, **kw: [_gather(x, i, **kw)],
        attrs=(Attrs(shaped=lambda s: {"axis": 0, "index_dimensions": 1}),
               Attrs(shaped=lambda s: {"axis": len(s) - 1, "index_dimensions": 1}),
               Attrs(shaped=lambda s: {"axis": len(s) // 2, "index_dimensions": 0})),
        selection=True, pointwise=False, make_inputs=_gather_inputs, grad=_gather_grad),
    "DML_OPERATOR_GATHER_ELEMENTS": Reference(
        fn=lambda x, i, **kw: [_gather_elements(x, i, **kw)],
        attrs=(Attrs(shaped=_axis(_FIRST)), Attrs(shaped=_axis(_LAST))),
        selection=True, pointwise=False, make_inputs=_gather_elements_inputs, grad=_gather_elements_grad),
    "DML_OPERATOR_GATHER_ND": Reference(
        fn=lambda x, i, **kw: [_gather_nd(x, i, **kw)],
        attrs=(Attrs(shaped=_nd_attrs("rows")), Attrs(shaped=_nd_attrs("tuple"))),
        selection=True, pointwise=False, make_inputs=_nd_inputs, grad=_gather_nd_grad),
    "DML_OPERATOR_GATHER_ND1": Reference(
        fn=lambda x, i, **kw: [_gather_nd(x, i, **kw)],
        attrs=(Attrs(shaped=_nd_attrs("batch")),
               Attrs(shaped=lambda s: {**_nd_attrs("tuple")(s), "batch_dimension_count": 0})),
        selection=True, pointwise=False, make_inputs=_nd_inputs, grad=_gather_nd_grad),
}
