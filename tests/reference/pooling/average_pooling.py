"""float64 references of AVERAGE_POOLING, AVERAGE_POOLING1, AVERAGE_POOLING_GRAD, LP_POOLING and
LP_POOLING1, from their pages, window by window in plain loops (the windows' geometry:
_common.py).

AVERAGE: the sum over the window (padding zeros) divided by prod(WindowSize) with IncludePadding,
else by the positions inside the input. LP: (sum over the window of |x|^P)^(1/P)."""

import math

import numpy as np

from tests.reference.pooling._common import _geometry_of, _image_shape, _plain, _planes, _pooled, _strided, _windows
from tests.reference.record import Attrs, Reference
from tests.reference.rules import read


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
    brings it back, in an order of additions that is the library's (docs/semantics.md#accumulating-operators)."""
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


def _average_grad_shaped(shape):
    return {**_strided(False)(shape), "output_gradient_sizes": tuple(shape)}


def _average_grad_inputs(rng, types, shape, output_gradient_sizes, **kw):
    from tests.catalog import random_tensor
    pooled = shape[:2] + _pooled(shape[2:], *_geometry_of(kw, len(shape) - 2))
    return [random_tensor(rng, types["InputGradientTensor"], pooled)]


def _average_sets(dilations: bool):
    """The padded window without and with IncludePadding (an unpadded window divides by
    prod(WindowSize) either way); AVERAGE_POOLING1 (the same function with Dilations) the first."""
    sets = (Attrs(shaped=_strided(dilations)), Attrs({"include_padding": True}, shaped=_strided(dilations)))
    return sets[:1] if dilations else sets


def _lp_sets(dilations: bool):
    """P = 2 over the plain window and P = 3 over the padded one; LP_POOLING1 (the same function with
    Dilations) P = 2 over the padded, dilated one (P = 1 is tests/ops/pooling/test_max_pooling.py's)."""
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
}
