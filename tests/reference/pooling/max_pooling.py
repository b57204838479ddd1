"""float64 references of the windowed poolings (AVERAGE/LP/MAX_POOLING*, MAX_UNPOOLING and the
*_GRAD operators), from their pages, window by window in plain loops.

The geometry (every page): output o of a spatial dimension starts at o * Strides - StartPadding of
the input; window position k (row-major over WindowSize) adds k * Dilations; positions outside
the input are the padding. Pooled sizes: (Size + StartPadding + EndPadding - Dilations *
(WindowSize - 1) - 1) // Strides + 1.

MAX (and its index, MAX_POOLING_GRAD, MAX_UNPOOLING): over the positions inside the input, in
row-major window order, the first element with the largest value as math reads it (FLOAT32
denormals flushed), where NaN is below every number and -0 below +0 (the records' notes); none
inside: -inf (type minimum), index the index type's maximum. The index counts the whole tensor
row-major ("a contiguous one-dimensional array"). AVERAGE: the sum over the window (padding
zeros) divided by prod(WindowSize) with IncludePadding, else by the positions inside the input.
LP: (sum over the window of |x|^P)^(1/P)."""

import itertools
import math

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import is_int, read

_IMAGE = {4: (2, 3, 5, 4), 5: (1, 2, 4, 3, 3)}


def _image_shape(shape):
    """A case's image: (2, 3, 5, 4) for 4-D, (1, 2, 4, 3, 3) for 5-D (the generated shapes'
    spatial sizes of 1 and 2 hold few windows); other ranks (refused ones) as they are."""
    return _IMAGE.get(len(shape), tuple(shape))


def _geometry_of(kw, r):
    return (tuple(kw["window_size"]), tuple(kw["strides"]), tuple(kw.get("dilations") or (1,) * r),
            tuple(kw["start_padding"]), tuple(kw["end_padding"]))


def _pooled(spatial, window, strides, dilations, start, end):
    return tuple((s + a + b - d * (w - 1) - 1) // t + 1 for s, w, t, d, a, b in
                 zip(spatial, window, strides, dilations, start, end))


def _windows(spatial, window, strides, dilations, start, end):
    """(output position, [(window position k, input position or None), ...]) for every output."""
    pooled = _pooled(spatial, window, strides, dilations, start, end)
    for o in itertools.product(*(range(p) for p in pooled)):
        cells = []
        for k, ks in enumerate(itertools.product(*(range(w) for w in window))):
            pos = tuple(oi * t + ki * d - a for oi, ki, t, d, a in zip(o, ks, strides, dilations, start))
            inside = all(0 <= p < s for p, s in zip(pos, spatial))
            cells.append((k, pos if inside else None))
        yield o, cells


def _planes(shape):
    return itertools.product(range(shape[0]), range(shape[1]))


# ---------------------------------------------------------------------------------------- max
def _rank(v):
    """The order the maximum reads values in: NaN lowest, then the numbers, -0 below +0."""
    if isinstance(v, int):
        return (1, v, 0)
    if math.isnan(v):
        return (0, 0.0, 0)
    return (1, v, 1 if v == 0 and math.copysign(1.0, v) > 0 else 0)


def _argmax(x, window, strides, dilations, start, end):
    """{(n, c, o): input position of the first maximum, or None}."""
    x = np.asarray(x)
    vals = x.astype(object) if is_int(x) else read(x)
    spatial = x.shape[2:]
    out = {}
    for n, c in _planes(x.shape):
        for o, cells in _windows(spatial, window, strides, dilations, start, end):
            best = None
            for _, pos in cells:
                if pos is None:
                    continue
                v = vals[(n, c) + pos]
                if best is None or _rank(v) > _rank(vals[(n, c) + best]):
                    best = pos
            out[(n, c) + o] = best
    return out


def _flat(shape, n, c, pos):
    return int(np.ravel_multi_index((n, c) + pos, shape))


def _index_type(name):
    return np.uint64 if str(name).upper().endswith("UINT64") else np.uint32


def _max(x, strides, window_size, start_padding, end_padding, dilations=None, output_indices_data_type=None):
    x = np.asarray(x)
    r = x.ndim - 2
    geometry = _geometry_of(dict(window_size=window_size, strides=strides, dilations=dilations,
                                 start_padding=start_padding, end_padding=end_padding), r)
    pooled = _pooled(x.shape[2:], *geometry)
    picked = _argmax(x, *geometry)
    values = np.empty(x.shape[:2] + pooled, x.dtype)
    itype = _index_type(output_indices_data_type)
    indices = np.empty(values.shape, itype)
    vals = None if is_int(x) else read(x)
    for where, pos in picked.items():
        n, c = where[:2]
        if pos is None:
            values[where] = np.iinfo(x.dtype).min if is_int(x) else -np.inf
            indices[where] = np.iinfo(itype).max
        else:
            values[where] = x[(n, c) + pos] if is_int(x) else vals[(n, c) + pos]  # as math reads it
            indices[where] = _flat(x.shape, n, c, pos)
    if output_indices_data_type is None:
        return [values]
    return [(values, indices)]


def max_pooling(x, strides, window_size, start_padding, end_padding):
    return _max(x, strides, window_size, start_padding, end_padding)


def max_pooling1(x, strides, window_size, start_padding, end_padding, output_indices_data_type="UINT32"):
    return _max(x, strides, window_size, start_padding, end_padding, None, output_indices_data_type)


def max_pooling2(x, strides, window_size, start_padding, end_padding, dilations, output_indices_data_type="UINT32"):
    return _max(x, strides, window_size, start_padding, end_padding, dilations, output_indices_data_type)


def _max_grad(dy, x, strides, window_size, start_padding, end_padding, dilations=None, output_indices_data_type=None):
    x = np.asarray(x)
    geometry = _geometry_of(dict(window_size=window_size, strides=strides, dilations=dilations,
                                 start_padding=start_padding, end_padding=end_padding), x.ndim - 2)
    dy = np.asarray(dy, np.float64)
    g = np.zeros(x.shape)
    for where, pos in _argmax(x, *geometry).items():
        if pos is not None:
            g[where[:2] + pos] += dy[where]
    return [g]


def max_pooling_grad(x, dy, strides, window_size, start_padding, end_padding, dilations, half=False):
    return _max_grad(read(dy), x, strides, window_size, start_padding, end_padding, dilations)


def _max_pooling_grad_magnitude(x, dy, strides, window_size, start_padding, end_padding, dilations, half=False):
    return _max_grad(np.abs(read(dy)), x, strides, window_size, start_padding, end_padding, dilations)[0]


def _max_pooling_grad_grad(ddx, x, dy, strides, window_size, start_padding, end_padding, dilations, half=False):
    """By the InputGradientTensor: ddx read at each window's first maximum; by the InputTensor: 0."""
    x = np.asarray(x)
    geometry = _geometry_of(dict(window_size=window_size, strides=strides, dilations=dilations,
                                 start_padding=start_padding, end_padding=end_padding), x.ndim - 2)
    ddx = np.asarray(ddx, np.float64)
    out = np.zeros(np.shape(dy))
    for where, pos in _argmax(x, *geometry).items():
        if pos is not None:
            out[where] = ddx[where[:2] + pos]
    return [np.zeros(x.shape), out]


def max_unpooling(x, indices, output_sizes):
    x, indices = np.asarray(x), np.asarray(indices)
    out = np.zeros(tuple(output_sizes), x.dtype)
    flat = out.reshape(-1)
    written = set()
    for i, t in enumerate(indices.reshape(-1).tolist()):
        if t < flat.size and t not in written:
            written.add(t)
            flat[t] = x.reshape(-1)[i]
    return [out]


def _max_unpooling_grad(dy, x, indices, output_sizes):
    dy = np.asarray(dy, np.float64).reshape(-1)
    g = np.zeros(np.size(x))
    written = set()
    for i, t in enumerate(np.asarray(indices).reshape(-1).tolist()):
        if t < dy.size and t not in written:
            written.add(t)
            g[i] = dy[t]
    return [g.reshape(np.shape(x)), None]


# ------------------------------------------------------------------------------ average, lp
def _sums(x64, kw, of=lambda v: v):
    """{(n, c, o): (sum of of(x) over the window's inside positions, their count)}."""
    r = x64.ndim - 2
    geometry = _geometry_of(kw, r)
    out = {}
    for n, c in _planes(x64.shape):
        for o, cells in _windows(x64.shape[2:], *geometry):
            inside = [pos for _, pos in cells if pos is not None]
            out[(n, c) + o] = (sum(of(x64[(n, c) + p]) for p in inside), len(inside))
    return out, _pooled(x64.shape[2:], *geometry)


F32_MAX = float(np.finfo(np.float32).max)


def _reach(x64, kw, of):
    """Each output's sum of of(x) over its window: how far a tally of the terms can reach."""
    sums, pooled = _sums(x64, kw, of)
    out = np.empty(x64.shape[:2] + pooled)
    for where, (total, _) in sums.items():
        out[where] = total
    return out


def _or_overflow(value, reach):
    """The value, and where the terms' sizes add up past FLOAT32's range, the infinity of its
    sign too: a FLOAT32 tally may pass the range before the division (AVERAGE) or the root (LP)
    brings it back, in an order of additions that is the library's (SEMANTICS.md 8)."""
    over = reach > F32_MAX
    if not over.any():
        return [value]
    return [value, np.where(over, np.copysign(np.inf, value), value)]


def _average64(x64, kw, include_padding):
    sums, pooled = _sums(x64, kw)
    out = np.empty(x64.shape[:2] + pooled)
    k = math.prod(kw["window_size"])
    for where, (s, count) in sums.items():
        d = k if include_padding else count
        out[where] = s / d if d else np.nan
    return out


def average_pooling(x, strides, window_size, start_padding, end_padding, dilations=None, include_padding=False,
                    half=False):
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding,
              dilations=dilations)
    x64 = read(x)
    return _or_overflow(_average64(x64, kw, include_padding), _reach(x64, kw, abs))


def _average_magnitude(x, strides, window_size, start_padding, end_padding, dilations=None, include_padding=False,
                       half=False):
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding,
              dilations=dilations)
    return _average64(np.abs(read(x)), kw, include_padding)


def _spread(dy, shape, kw, include_padding, magnitude=False):
    """AVERAGE_POOLING_GRAD: each window's dY / divisor added to its inside positions."""
    dy = np.asarray(dy, np.float64)
    r = len(shape) - 2
    geometry = _geometry_of(kw, r)
    g = np.zeros(shape)
    k = math.prod(kw["window_size"])
    for n, c in _planes(shape):
        for o, cells in _windows(shape[2:], *geometry):
            inside = [pos for _, pos in cells if pos is not None]
            d = k if include_padding else len(inside)
            for p in inside:
                g[(n, c) + p] += (abs(dy[(n, c) + o]) if magnitude else dy[(n, c) + o]) / d
    return g


def _average_grad(dy, x, strides, window_size, start_padding, end_padding, dilations=None, include_padding=False,
                  half=False):
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding,
              dilations=dilations)
    return [_spread(dy, np.shape(x), kw, include_padding)]


def _average_grad_magnitude(dy, x, strides, window_size, start_padding, end_padding, dilations=None,
                            include_padding=False, half=False):
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding,
              dilations=dilations)
    return [_spread(dy, np.shape(x), kw, include_padding, magnitude=True)]


def average_pooling_grad(dy, strides, window_size, start_padding, end_padding, output_gradient_sizes,
                         include_padding=False, half=False):
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding)
    return [_spread(read(dy), tuple(output_gradient_sizes), kw, include_padding)]


def _average_pooling_grad_magnitude(dy, strides, window_size, start_padding, end_padding, output_gradient_sizes,
                                    include_padding=False, half=False):
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding)
    return _spread(read(dy), tuple(output_gradient_sizes), kw, include_padding, magnitude=True)


def _average_pooling_grad_grad(ddx, dy, strides, window_size, start_padding, end_padding, output_gradient_sizes,
                               include_padding=False, half=False, magnitude=False):
    """Linear: the transpose, each window's average of ddx (the divisor as above)."""
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding)
    ddx = np.asarray(ddx, np.float64)
    return [_average64(np.abs(ddx) if magnitude else ddx, kw, include_padding)]


def _average_pooling_grad_grad_magnitude(ddx, dy, **kw):
    return _average_pooling_grad_grad(ddx, dy, **kw, magnitude=True)


def _lp64(x64, kw, p):
    sums, pooled = _sums(x64, kw, lambda v: abs(v) ** p)
    out = np.empty(x64.shape[:2] + pooled)
    for where, (s, _) in sums.items():
        out[where] = s ** (1.0 / p)
    return out


def lp_pooling(x, strides, window_size, start_padding, end_padding, dilations=None, p=2, half=False):
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding,
              dilations=dilations)
    x64 = read(x)
    return _or_overflow(_lp64(x64, kw, p), _reach(x64, kw, lambda v: abs(v) ** p))


def _lp_grad(dy, x, strides, window_size, start_padding, end_padding, dilations=None, p=2, half=False,
             magnitude=False):
    """d/dx_i = sum over the windows holding i of dY * sign(x_i) |x_i|^(P-1) / y^(P-1) (0 where y = 0);
    ``magnitude``: the sum of the terms' sizes (they cancel where dY's signs differ)."""
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding,
              dilations=dilations)
    x64 = read(x)
    y = _lp64(x64, kw, p)
    dy = np.asarray(dy, np.float64)
    if magnitude:
        dy = np.abs(dy)
    geometry = _geometry_of(kw, x64.ndim - 2)
    g = np.zeros(x64.shape)
    for n, c in _planes(x64.shape):
        for o, cells in _windows(x64.shape[2:], *geometry):
            yo = y[(n, c) + o]
            if yo == 0:
                continue
            for _, pos in cells:
                if pos is not None:
                    v = x64[(n, c) + pos]
                    sign = 1.0 if magnitude else math.copysign(1.0, v)
                    g[(n, c) + pos] += dy[(n, c) + o] * sign * (abs(v) / yo) ** (p - 1) * (v != 0)
    return [g]


def _lp_grad_magnitude(dy, x, **kw):
    return _lp_grad(dy, x, **kw, magnitude=True)


# -------------------------------------------------------------------------------- the cases
def _plain(dilations: bool):
    def shaped(shape):
        r = len(shape) - 2
        out = {"strides": (1,) * r, "window_size": (2,) * r, "start_padding": (0,) * r, "end_padding": (0,) * r}
        return {**out, "dilations": (1,) * r} if dilations else out
    return shaped


def _strided(dilations: bool):
    def shaped(shape):
        r = len(shape) - 2
        out = {"strides": (2, 1, 2, 1)[:r], "window_size": (3, 2, 2, 2)[:r], "start_padding": (1, 0, 1, 0)[:r],
               "end_padding": (1, 1, 0, 0)[:r]}
        return {**out, "dilations": (1, 2, 1, 1)[:r]} if dilations else out
    return shaped


def _sets(dilations: bool, plain: bool = True):
    """Per spatial rank r: a plain 2-wide window (MAX_POOLING's), and a strided, padded (and dilated)
    one; the operators that share MAX_POOLING's function (MAX_POOLING1/2, MAX_POOLING_GRAD) run the
    second alone, which keeps the suite's time down. The windows that lie wholly in the padding are
    tests/ops/test_pooling.py's."""
    strided = (Attrs(shaped=_strided(dilations)),)
    return ((Attrs(shaped=_plain(dilations)),) + strided) if plain else strided


def _grad_inputs(rng, types, shape, **kw):
    """MAX_POOLING_GRAD: the InputTensor of the case's shape, the InputGradientTensor pooled."""
    from tests.catalog import random_tensor
    pooled = shape[:2] + _pooled(shape[2:], *_geometry_of(kw, len(shape) - 2))
    return [random_tensor(rng, types["InputTensor"], shape), random_tensor(rng, types["InputGradientTensor"], pooled)]


def _unpool_shaped(shape):
    return {"output_sizes": tuple(shape[:2]) + tuple(2 * s + 1 for s in shape[2:])}


def _unpool_inputs(rng, types, shape, output_sizes, **_):
    """Values of the case's shape; indices into the OutputTensor, with repeats (the first writer
    wins) and two past its end (dropped)."""
    from tests.catalog import random_tensor
    itype = types["IndicesTensor"].dtype
    total = math.prod(output_sizes)
    idx = rng.integers(0, total, size=shape).astype(itype)
    flat = idx.reshape(-1)
    if flat.size >= 4:
        flat[1] = flat[0]
        flat[2] = np.iinfo(itype).max
        flat[3] = total
    return [random_tensor(rng, types["InputTensor"], shape), idx]


def _average_grad_shaped(shape):
    return {**_strided(False)(shape), "output_gradient_sizes": tuple(shape)}


def _average_grad_inputs(rng, types, shape, output_gradient_sizes, **kw):
    from tests.catalog import random_tensor
    pooled = shape[:2] + _pooled(shape[2:], *_geometry_of(kw, len(shape) - 2))
    return [random_tensor(rng, types["InputGradientTensor"], pooled)]


def _indices_every(row):
    return row


def _max_ref(**extra):
    return dict(selection=True, grad=_max_grad, pointwise=False, shape=_image_shape, ranks=True, **extra)


def _average_sets(dilations: bool):
    """The padded window without and with IncludePadding (an unpadded window divides by
    prod(WindowSize) either way); AVERAGE_POOLING1 (the same function with Dilations) the first."""
    sets = (Attrs(shaped=_strided(dilations)), Attrs({"include_padding": True}, shaped=_strided(dilations)))
    return sets[:1] if dilations else sets


def _lp_sets(dilations: bool):
    """P = 2 over the plain window and P = 3 over the padded one; LP_POOLING1 (the same function with
    Dilations) P = 2 over the padded, dilated one (P = 1 is test_pooling.py's)."""
    if dilations:
        return (Attrs(shaped=_strided(True)),)
    return (Attrs(shaped=_plain(False)), Attrs({"p": 3}, shaped=_strided(False)))


def _average_grad_sets():
    return (Attrs(shaped=_average_grad_shaped),)


def _average_ref(dilations: bool):
    return Reference(average_pooling, attrs=_average_sets(dilations), magnitude=_average_magnitude, grad=_average_grad,
                     grad_magnitude=_average_grad_magnitude, pointwise=False, shape=_image_shape, accumulates=True)


def _lp_ref(dilations: bool):
    # values away from zero: |x| has a kink there that the generated differences would straddle
    return Reference(lp_pooling, attrs=_lp_sets(dilations), roles={"InputTensor": "nonzero"}, grad=_lp_grad,
                     grad_magnitude=_lp_grad_magnitude,
                     pointwise=False, shape=_image_shape, accumulates=True)


REFERENCES = {
    "DML_OPERATOR_AVERAGE_POOLING": _average_ref(False),
    "DML_OPERATOR_AVERAGE_POOLING1": _average_ref(True),
    "DML_OPERATOR_AVERAGE_POOLING_GRAD": Reference(
        average_pooling_grad, attrs=_average_grad_sets(), make_inputs=_average_grad_inputs,
        magnitude=_average_pooling_grad_magnitude, grad=_average_pooling_grad_grad,
        grad_magnitude=_average_pooling_grad_grad_magnitude, pointwise=False, shape=_image_shape, accumulates=True),
    "DML_OPERATOR_LP_POOLING": _lp_ref(False),
    "DML_OPERATOR_LP_POOLING1": _lp_ref(True),
    "DML_OPERATOR_MAX_POOLING": Reference(max_pooling, attrs=_sets(False), **_max_ref()),
    "DML_OPERATOR_MAX_POOLING1": Reference(max_pooling1, attrs=_sets(False, plain=False), output_types=_indices_every,
                                           output_type_arg=True, **_max_ref()),
    "DML_OPERATOR_MAX_POOLING2": Reference(max_pooling2, attrs=_sets(True, plain=False), output_types=_indices_every,
                                           output_type_arg=True, **_max_ref()),
    "DML_OPERATOR_MAX_POOLING_GRAD": Reference(
        max_pooling_grad, attrs=_sets(True, plain=False), grad=_max_pooling_grad_grad, pointwise=False,
        shape=_image_shape, make_inputs=_grad_inputs, magnitude=_max_pooling_grad_magnitude, accumulates=True,
        ranks=True),
    "DML_OPERATOR_MAX_UNPOOLING": Reference(
        max_unpooling, attrs=(Attrs(shaped=_unpool_shaped),), selection=True, grad=_max_unpooling_grad,
        pointwise=False, shape=_image_shape, make_inputs=_unpool_inputs),
}
