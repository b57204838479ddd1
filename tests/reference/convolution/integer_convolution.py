"""Exact references of CONVOLUTION_INTEGER and QUANTIZED_LINEAR_CONVOLUTION, from their pages and
ONNX's ConvInteger and QLinearConv: each output the sum, in Python-sized integers, of (input -
input zero point) * (filter - filter zero point) over the window positions inside the input and
the group's channels (the padding adds nothing). QUANTIZED_LINEAR_CONVOLUTION requantizes that sum
plus the bias by the steps its record defines, each a correctly rounded FLOAT32 operation (NumPy's
float32 arithmetic): the sum to FLOAT32, M = (input scale * filter scale) / output scale, their
product; then rounded halves to even, the output zero point added, saturated."""

import itertools

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import ftz

F32 = np.float32


def _ints(v, default=0):
    return default if v is None else np.asarray(v).astype(np.int64)


def _per_channel(v, o):
    """A zero point or scale of Sizes all 1 or {1, O, 1...} ({O} in one dimension) as a vector of O."""
    if v is None:
        return np.zeros(o, np.int64)
    flat = np.asarray(v).reshape(-1)
    return np.broadcast_to(flat, (o,)) if flat.size == 1 else flat


def accumulate(x, x_zero_point, w, w_zero_point, strides=None, dilations=None, start_padding=None,
               end_padding=None, group_count=1):
    x, w = np.asarray(x).astype(np.int64), np.asarray(w).astype(np.int64)
    d = x.ndim - 2
    strides, dilations = tuple(strides or (1,) * d), tuple(dilations or (1,) * d)
    start, end = tuple(start_padding or (0,) * d), tuple(end_padding or (0,) * d)
    o, groups = w.shape[0], group_count or 1
    dx = x - int(_ints(x_zero_point).reshape(-1)[0]) if x_zero_point is not None else x
    dw = w - _per_channel(w_zero_point, o).astype(np.int64).reshape((o,) + (1,) * (w.ndim - 1))
    # the differences padded with zeros: a position in the padding adds nothing
    dx = np.pad(dx, ((0, 0), (0, 0)) + tuple(zip(start, end)))
    window = w.shape[2:]
    out = tuple((s + a + b - dl * (k - 1) - 1) // t + 1
                for s, a, b, dl, k, t in zip(x.shape[2:], start, end, dilations, window, strides))
    cg, og = x.shape[1] // groups, o // groups
    y = np.zeros((x.shape[0], o) + out, np.int64)
    for p in itertools.product(*(range(n) for n in out)):
        taps = tuple(slice(pi * t, pi * t + dl * (k - 1) + 1, dl) for pi, t, dl, k in zip(p, strides, dilations, window))
        for g in range(groups):
            part = dx[(slice(None), slice(g * cg, (g + 1) * cg)) + taps]  # (N, cg, window...)
            y[(slice(None), slice(g * og, (g + 1) * og)) + p] = np.tensordot(
                part, dw[g * og:(g + 1) * og], axes=(list(range(1, part.ndim)), list(range(1, part.ndim))))
    return y


def convolution_integer(x, x_zero_point, w, w_zero_point=None, **geometry):
    return [accumulate(x, x_zero_point, w, w_zero_point, **geometry)]


def requantize(acc, x_scale, w_scale, y_scale, y_zero_point, out_dtype):
    """The record's fused requantization: FLOAT32 steps, each rounded once and flushed."""
    o = acc.shape[1]
    shape = (1, o) + (1,) * (acc.ndim - 2)

    def f32(v):
        return ftz(np.asarray(v, F32), F32).astype(F32)

    with np.errstate(all="ignore"):
        m = f32(f32(f32(np.asarray(x_scale).reshape(())) * f32(_per_channel(w_scale, o)).reshape(shape))
                / f32(np.asarray(y_scale).reshape(())))
        value = f32(acc.astype(F32) * m).astype(np.float64)  # int64 -> float32: rounded once, to even
        info = np.iinfo(out_dtype)
        zp = 0 if y_zero_point is None else int(np.asarray(y_zero_point).reshape(()))
        q = np.round(value) + zp  # halves to even; exact in float64
        q = np.where(np.isnan(q), info.min, np.clip(q, info.min, info.max))
    return q.astype(np.int64)


def quantized_linear_convolution(x, x_scale, x_zero_point, w, w_scale, w_zero_point, bias, y_scale,
                                 y_zero_point=None, output_data_type=None, **geometry):
    acc = accumulate(x, x_zero_point, w, w_zero_point, **geometry)
    if bias is not None:
        acc = acc + np.asarray(bias).astype(np.int64)  # exact
    if output_data_type is not None:
        out = np.dtype(output_data_type.lower())
    else:
        out = np.asarray(y_zero_point if y_zero_point is not None else x).dtype
    return [requantize(acc, x_scale, w_scale, y_scale, y_zero_point, out)]


# ------------------------------------------------------------------------------ the generated cases
def _spatial(shape):
    return max(len(shape), 3) - 2 if len(shape) >= 3 else 2


def _conv_inputs(rng, types, shape, group_count=1, **_):
    """Input {2, 4, (5, 4)[:d]}, filter {6, 4 / G, (3, 2)[:d]}; zero points per tensor, the
    filter's per output channel in the grouped cases, each of its type's whole range."""
    from tests.catalog import random_tensor
    d = _spatial(shape)
    per_channel = (group_count or 1) > 1
    x = random_tensor(rng, types["InputTensor"], (2, 4) + (5, 4)[:d])
    w = random_tensor(rng, types["FilterTensor"], (6, 4 // (group_count or 1)) + (3, 2)[:d])
    xz = random_tensor(rng, types["InputZeroPointTensor"], (1,) * (d + 2))
    wz = random_tensor(rng, types["FilterZeroPointTensor"], (1, 6 if per_channel else 1) + (1,) * d)
    return x, xz, w, wz


def _integer_inputs(rng, types, shape, **kw):
    return list(_conv_inputs(rng, types, shape, **kw))


def _quantized_inputs(rng, types, shape, **kw):
    """As the integer cases', with scales of 2^-8 to 2^-2 (the output's larger, so that most
    values fall inside its range), a bias of the accumulator's size, and an output zero point."""
    from tests.catalog import random_tensor
    x, xz, w, wz = _conv_inputs(rng, types, shape, **kw)
    d = x.ndim - 2
    per_channel = wz.size > 1
    r = max(len(shape), 1) if len(shape) <= 4 else 4  # the scales' and zero points' DimensionCount

    def scale(n, lo, hi):
        size = (1,) * r if n == 1 else (1, n) + (1,) * (r - 2) if r >= 2 else (n,)
        return np.exp2(rng.uniform(lo, hi, size)).astype(F32)

    def point(t, n=1):
        return random_tensor(rng, types[t], (1,) * r if n == 1 else (1, n) + (1,) * (r - 2) if r >= 2 else (n,))

    xs, ys = scale(1, -8, -4), scale(1, -4, -1)
    ws = scale(6 if per_channel else 1, -8, -4)
    if max(r, 3) != r:  # before 5.2 the filter's scale has 3 or 4 dimensions
        ws = ws.reshape((1, ws.size, 1) if per_channel else (1, 1, 1))
    bias = rng.integers(-3000, 3000, (1, 6) + (1,) * d).astype(np.int32)
    return [x, xs, point("InputZeroPointTensor"), w, ws, point("FilterZeroPointTensor", 6 if per_channel else 1),
            bias, ys, point("OutputZeroPointTensor")]


def _each(value):
    return lambda shape: {k: (value[k],) * _spatial(shape) for k in value}


_SETS = (
    Attrs({}),
    Attrs({"group_count": 2}, shaped=_each({"strides": 2, "dilations": 2, "start_padding": 1, "end_padding": 2})),
)


_NO_GRAD = "integer output: no gradient (float0 for the integer inputs, zeros for the scales)"

REFERENCES = {
    "DML_OPERATOR_CONVOLUTION_INTEGER": Reference(convolution_integer, attrs=_SETS, make_inputs=_integer_inputs,
                                                  no_grad=_NO_GRAD, pointwise=False),
    "DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION": Reference(
        quantized_linear_convolution, attrs=_SETS, make_inputs=_quantized_inputs, no_grad=_NO_GRAD,
        pointwise=False, output_types=lambda row: (None,)),
}
