"""References of the indexing family: GATHER, GATHER_ELEMENTS, GATHER_ND, GATHER_ND1, SCATTER_ELEMENTS,
SCATTER_ND and ONE_HOT, written element by element from the pages' pseudocode
(dml_gather_operator_desc.md, ..., dml_one_hot_operator_desc.md in ../shared/spec/operators/)
and the family's choices where the pages are silent: a gather of an out-of-range index gives 0, a
scatter drops such an update, and of several updates to one cell the last in row-major order of
the UpdatesTensor wins. Negative indices of signed types count from the end.

Values move untouched: each result is in the tensor's own type, compared bit for bit."""

import numpy as np

import jax

from tests.catalog import random_tensor
from tests.reference.record import Attrs, Reference
from tests.reference.rules import read

_SMALL = {np.dtype(np.int64): np.int32, np.dtype(np.uint64): np.uint32}


def _index_dtype(data_type):
    """The case's index type; a 64-bit one becomes its 32-bit twin when JAX's 64-bit mode is off
    (the generated gradient cases run without it; the others turn it on for 64-bit types)."""
    dt = np.dtype(data_type.dtype)
    return np.dtype(_SMALL[dt]) if dt in _SMALL and not jax.config.jax_enable_x64 else dt


def _values(rng, data_type, shape):
    dt = np.dtype(data_type.dtype)
    if dt.kind == "f":
        x = (rng.standard_normal(shape) * 3).astype(dt)
        flat = x.reshape(-1)
        if flat.size >= 4:  # -0 and a denormal move untouched (NaN payloads: tests/ops/test_gather.py)
            flat[1:3] = np.array([-0.0, np.finfo(dt).smallest_subnormal], dt)
        return x
    info = np.iinfo(dt)
    return rng.integers(int(info.min), int(info.max), size=shape, endpoint=True, dtype=dt)


def _indices(rng, dtype, shape, n):
    """Indices into an axis of size ``n``: mostly in range (negative ones too for a signed type),
    about one in eight out of range (n, n + 3, -n - 1, the type's extremes)."""
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    lo = -n if info.min < 0 else 0
    i = rng.integers(lo, n, size=shape).astype(dtype)
    wild = [n, n + 3, int(info.max)] + ([-n - 1, int(info.min)] if info.min < 0 else [])
    out = rng.random(shape) < 0.125
    return np.where(out, rng.choice(np.array(wild, dtype), size=shape), i).astype(dtype)


def _land(i, n):
    """The page's reading of one index: negative counts from the end; None when out of range."""
    i = int(i)
    if i < 0:
        i += n
    return i if 0 <= i < n else None


def _aligned(sizes, ndim):
    sizes = tuple(sizes)
    if len(sizes) <= ndim:
        return (1,) * (ndim - len(sizes)) + sizes
    assert all(s == 1 for s in sizes[: len(sizes) - ndim])
    return sizes[len(sizes) - ndim:]


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


def _nd_attrs(variant):
    """Rows: a list of 1-coordinate tuples (IndicesDimensionCount 2); tuple: one tuple of up to 2
    coordinates (IndicesDimensionCount 1); batch: GATHER_ND1's batch of the first dimension with
    rows in each (IndicesDimensionCount 3, BatchDimensionCount 1), from 3 dimensions."""
    def shaped(shape):
        d = len(shape)
        if variant == "batch":
            b = 1 if d >= 3 else 0
            return {"input_dimension_count": d, "indices_dimension_count": min(d, 2 + b), "batch_dimension_count": b}
        return {"input_dimension_count": d, "indices_dimension_count": 1 if variant == "tuple" else min(d, 2)}
    return shaped


def _nd_index_shape(shape, q, b, k, rows=3):
    d = len(shape)
    middle = (shape[:b] + (rows,))[: q - 1] if q > 1 else ()
    return (1,) * (d - q) + middle + (k,)


def _nd_inputs(rng, types, shape, input_dimension_count, indices_dimension_count, batch_dimension_count=0, rows=3):
    """The InputTensor and index tuples: one tuple of min(2, rank) coordinates when
    IndicesDimensionCount is 1, else rows of 1-coordinate tuples (within each batch)."""
    b, q = batch_dimension_count, indices_dimension_count
    k = min(2, len(shape) - b) if q == 1 else 1
    rel = _nd_index_shape(shape, q, b, k, rows)
    dt = _index_dtype(types["IndicesTensor"])
    idx = np.stack([_indices(rng, dt, rel[:-1], shape[b + j]) for j in range(k)], axis=-1).astype(dt)
    return [_values(rng, types["InputTensor"], shape), idx]


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


# ------------------------------------------------------------------------------------- ONE_HOT
DEPTH = 4


def _one_hot(indices, values, axis, output_sizes):
    """Each sequence along Axis: OnValue at its index (negative from the end), OffValue elsewhere;
    all OffValue when the index is out of range (the page's Example 4)."""
    indices, values = np.asarray(indices), np.asarray(values)
    off, on = values.reshape(-1)[0], values.reshape(-1)[1]
    out = np.full(output_sizes, off, values.dtype)
    for c in np.ndindex(tuple(output_sizes)):
        i = _land(indices[c[:axis] + (0,) + c[axis + 1:]], output_sizes[axis])
        if i == c[axis]:
            out[c] = on
    return out


def _one_hot_grad(dy, indices, values, axis, output_sizes):
    on = _one_hot(indices, np.array([0.0, 1.0]).reshape((1,) * (np.ndim(values) - 1) + (2,)), axis, output_sizes)
    dy = np.asarray(dy, np.float64)
    dv = np.zeros(np.shape(values))
    flat = dv.reshape(-1)
    flat[0] = dy[on == 0].sum()
    flat[1] = dy[on == 1].sum()
    return (None, flat.reshape(np.shape(values)))


def _one_hot_attrs(axis_of):
    def shaped(shape):
        axis = axis_of(len(shape))
        return {"axis": axis, "output_sizes": tuple(DEPTH if a == axis else s for a, s in enumerate(shape))}
    return shaped


def _one_hot_inputs(rng, types, shape, axis, output_sizes):
    ishape = tuple(1 if a == axis else s for a, s in enumerate(shape))
    return [_indices(rng, _index_dtype(types["IndicesTensor"]), ishape, DEPTH),
            _values(rng, types["ValuesTensor"], shape)]


def _axis(which):
    return lambda shape: {"axis": which(len(shape))}


_FIRST, _LAST = (lambda d: 0), (lambda d: d - 1)

def _nonzero(x, output_count_sizes=None, output_coordinates_sizes=None):
    """The count of non-zero elements (-0.0, +0.0 and FLOAT32 denormals are zero, NaN is not) and
    their coordinates in the last N dimensions, in ascending element order, zero rows after."""
    x = np.asarray(x)
    r = x.ndim
    vals = read(x) if x.dtype.kind == "f" else x.astype(object)
    flat = [i for i, v in enumerate(np.ravel(vals)) if (v != 0 if x.dtype.kind != "f" else not v == 0.0)]
    m = x.size
    count_shape = tuple(output_count_sizes) if output_count_sizes else (1,) * r
    coords_shape = tuple(output_coordinates_sizes) if output_coordinates_sizes else (1,) * (max(r, 2) - 2) + (m, r)
    n = coords_shape[-1]
    dims = x.shape[r - n:] if n <= r else (1,) * (n - r) + x.shape
    rows = np.zeros((m, n), np.uint32)
    for k, i in enumerate(flat):
        rows[k] = np.unravel_index(i, dims) if dims else ()
    return (np.full(count_shape, len(flat), np.uint32), rows.reshape(coords_shape))


def _nonzero_inputs(rng, types, shape, **_):
    x = random_tensor(rng, types["InputTensor"], shape)
    return [np.where(rng.random(shape) < 0.5, np.zeros((), x.dtype), x)]  # about half zeros


def _effective_n(shape):
    lead = next((i for i, s in enumerate(shape) if s != 1), len(shape))
    n = max(len(shape) - lead, 1)
    return {"output_coordinates_sizes": (1,) * (max(len(shape), 2) - 2) + (int(np.prod(shape)), n)} if shape else {}


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
    "DML_OPERATOR_SCATTER_ELEMENTS": Reference(
        fn=lambda x, i, u, **kw: [_scatter_elements(x, i, u, **kw)],
        attrs=(Attrs(shaped=_axis(_FIRST)), Attrs(shaped=_axis(_LAST))),
        selection=True, pointwise=False, make_inputs=_scatter_elements_inputs, grad=_scatter_elements_grad),
    "DML_OPERATOR_SCATTER_ND": Reference(
        fn=lambda x, i, u, **kw: [_scatter_nd(x, i, u, **kw)],
        attrs=(Attrs(shaped=_nd_attrs("rows")),),
        # 1-D cases as (1, n): a 1-D scatter writes one element (UpdatesTensor {1}), and the generated
        # gradient test needs every float input in one shape (1-D calls: tests/ops/test_scatter.py)
        shape=lambda s: (1,) + tuple(s) if len(s) == 1 else tuple(s),
        selection=True, pointwise=False, make_inputs=_scatter_nd_inputs, grad=_scatter_nd_grad),
    "DML_OPERATOR_ONE_HOT": Reference(
        fn=lambda i, v, **kw: [_one_hot(i, v, **kw)],
        attrs=(Attrs(shaped=_one_hot_attrs(_FIRST)), Attrs(shaped=_one_hot_attrs(_LAST))),
        selection=True, pointwise=False, make_inputs=_one_hot_inputs, grad=_one_hot_grad),
    "DML_OPERATOR_NONZERO_COORDINATES": Reference(
        fn=lambda x, **kw: [_nonzero(x, **kw)],
        attrs=(Attrs(), Attrs(shaped=_effective_n)),
        selection=True, pointwise=False, make_inputs=_nonzero_inputs, no_grad="integer outputs (a count, coordinates)"),
}
