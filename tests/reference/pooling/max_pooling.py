"""float64 references of MAX_POOLING, MAX_POOLING1, MAX_POOLING2, MAX_POOLING_GRAD and
MAX_UNPOOLING, from their pages, window by window in plain loops (the windows' geometry:
_common.py).

MAX (and its index, MAX_POOLING_GRAD, MAX_UNPOOLING): over the positions inside the input, in
row-major window order, the first element with the largest value as math reads it (FLOAT32
denormals flushed), where NaN is below every number and -0 below +0 (the records' notes); none
inside: -inf (type minimum), index the index type's maximum. The index counts the whole tensor
row-major ("a contiguous one-dimensional array")."""

import math

import numpy as np

from tests.reference.pooling._common import _geometry_of, _image_shape, _plain, _planes, _pooled, _strided, _windows
from tests.reference.record import Attrs, Reference
from tests.reference.rules import is_int, read


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


def _sets(dilations: bool, plain: bool = True):
    """Per spatial rank r: a plain 2-wide window (MAX_POOLING's), and a strided, padded (and dilated)
    one; the operators that share MAX_POOLING's function (MAX_POOLING1/2, MAX_POOLING_GRAD) run the
    second alone, which keeps the suite's time down. The windows that lie wholly in the padding are
    tests/ops/pooling/test_max_pooling.py's."""
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


def _indices_every(row):
    return row


def _max_ref(**extra):
    return dict(selection=True, grad=_max_grad, pointwise=False, shape=_image_shape, ranks=True, **extra)


REFERENCES = {
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
