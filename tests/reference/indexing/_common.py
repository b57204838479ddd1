"""What the indexing references share: the generated cases' values and indices (mostly in
range, negative ones for a signed type, about one in eight out of range), the pages' reading of
one index (negative counts from the end), the GATHER_ND-style index tuples and the axes of the
attribute sets."""

import numpy as np

import jax


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
        if flat.size >= 4:  # -0 and a denormal move untouched (NaN payloads: tests/ops/indexing/test_gather.py)
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


def _axis(which):
    return lambda shape: {"axis": which(len(shape))}


_FIRST, _LAST = (lambda d: 0), (lambda d: d - 1)
