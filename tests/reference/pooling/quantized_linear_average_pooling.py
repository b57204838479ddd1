"""Exact reference of QUANTIZED_LINEAR_AVERAGE_POOLING, from its page (dequantize, average as
AVERAGE_POOLING, quantize) and the steps its record defines: each window's sum of (input - zero
point) over its positions inside the input in Python integers, then, each a correctly rounded
FLOAT32 operation with denormals flushed (NumPy's float32 arithmetic): the sum to FLOAT32, times
the input scale, divided by the divisor (prod(WindowSize) with IncludePadding, else the inside
positions), divided by the output scale; rounded halves to even, the zero point added, saturated
(NaN to Min)."""

import math

import numpy as np

from tests.reference.pooling._common import _geometry_of, _image_shape, _planes, _pooled, _strided, _windows
from tests.reference.record import Attrs, Reference
from tests.reference.rules import ftz

F32 = np.float32


def _f32(v):
    """Rounded once to FLOAT32, denormals flushed."""
    with np.errstate(all="ignore"):
        return ftz(np.asarray(v, F32), F32).astype(F32)


def _channel(v, c, default=0):
    if v is None:
        return [default] * c
    flat = np.asarray(v).reshape(-1)
    return [flat[0]] * c if flat.size == 1 else list(flat)


def quantized_linear_average_pooling(x, x_scale, x_zero_point, y_scale, y_zero_point=None, strides=None,
                                     window_size=None, start_padding=None, end_padding=None, dilations=None,
                                     include_padding=False, output_data_type=None):
    kw = dict(strides=strides, window_size=window_size, start_padding=start_padding, end_padding=end_padding,
              dilations=dilations)
    x = np.asarray(x)
    c = x.shape[1]
    geometry = _geometry_of(kw, x.ndim - 2)
    out_dtype = np.dtype(output_data_type.lower()) if output_data_type else (
        np.asarray(y_zero_point).dtype if y_zero_point is not None else x.dtype)
    xz, yz = _channel(x_zero_point, c), _channel(y_zero_point, c)
    xs, ys = _channel(x_scale, c), _channel(y_scale, c)
    pooled = x.shape[:2] + _pooled(x.shape[2:], *geometry)
    sums, divisors = np.zeros(pooled, np.int64), np.zeros(pooled, np.int64)
    k = math.prod(window_size)
    for n, ch in _planes(x.shape):
        for o, cells in _windows(x.shape[2:], *geometry):
            inside = [pos for _, pos in cells if pos is not None]
            sums[(n, ch) + o] = sum(int(x[(n, ch) + p]) - int(xz[ch]) for p in inside)
            divisors[(n, ch) + o] = k if include_padding else len(inside)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return [requantize(sums, divisors, np.reshape(xs, shape), np.reshape(ys, shape), np.reshape(yz, shape),
                       out_dtype)]


def requantize(sums, divisors, x_scale, y_scale, y_zero_point, out_dtype):
    """The record's steps on each window's exact sum and divisor (broadcasting NumPy arrays)."""
    with np.errstate(all="ignore"):
        average = _f32(_f32(_f32(sums) * _f32(x_scale)) / np.asarray(divisors, F32))
        q = np.round(_f32(average / _f32(y_scale)).astype(np.float64)) + np.asarray(y_zero_point, np.int64)
        info = np.iinfo(out_dtype)
        return np.where(np.isnan(q), info.min, np.clip(q, info.min, info.max)).astype(np.int64)


def _case_shape(shape):
    """The case's image (4-D, or 5-D for a 5-dimensional case); the scales and zero points have
    its DimensionCount (1-dimensional ones are tested by hand)."""
    return _image_shape(shape if len(shape) >= 4 else (1,) * 4)


def _inputs(rng, types, shape, include_padding=False, **kw):
    """Scales of 2^-6 to 2^-1 (the output's the larger on average, so that most averages fall
    inside its range), zero points of the whole range; per channel in the sets without
    IncludePadding, per tensor in the others."""
    from tests.catalog import random_tensor
    c, r = shape[1], len(shape)
    size = (1,) * r if include_padding else (1, c) + (1,) * (r - 2)

    def scale(lo, hi):
        return np.exp2(rng.uniform(lo, hi, size)).astype(F32)

    return [random_tensor(rng, types["InputTensor"], shape), scale(-6, -3),
            random_tensor(rng, types["InputZeroPointTensor"], size), scale(-5, -1),
            random_tensor(rng, types["OutputZeroPointTensor"], size)]


_SETS = (Attrs(shaped=_strided(True)), Attrs({"include_padding": True}, shaped=_strided(True)))

REFERENCES = {
    "DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING": Reference(
        quantized_linear_average_pooling, attrs=_SETS, make_inputs=_inputs, pointwise=False,
        shape=_case_shape, output_types=lambda row: (None,),
        no_grad="integer output: no gradient (float0 for the integer inputs, zeros for the scales)"),
}
