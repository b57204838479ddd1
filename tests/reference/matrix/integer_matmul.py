"""References of MATRIX_MULTIPLY_INTEGER, MATRIX_MULTIPLY_INTEGER_TO_FLOAT and
QUANTIZED_LINEAR_MATRIX_MULTIPLY, from their pages and ONNX's MatMulInteger, MatMulIntegerToFloat
and QLinearMatMul: the product sum_k (A[m, k] - AZeroPoint[m]) * (B[k, n] - BZeroPoint[n]) in
exact Python integers over the batch dimensions; a zero point or scale per tensor or per row (A's
and the output's: its values indexed by m) or per column (B's: by n).

MATRIX_MULTIPLY_INTEGER_TO_FLOAT: that sum times AScale[m] * BScale[n] (their product as a FLOAT32
multiply stores it, Direct3D's rule: a FLOAT32 denormal product is zero), plus Bias, in float64.
QUANTIZED_LINEAR_MATRIX_MULTIPLY: the record's FLOAT32 steps one by one (the sum rounded to
FLOAT32, times the scales' FLOAT32 product, divided by OutputScale, each rounded once to FLOAT32),
then rounded halves to even, the zero point added, and saturated (NaN to Min): an integer result
depends on every rounding before it."""

import numpy as np

from dmljax._src.dtypes import DataType
from tests.reference.record import Reference
from tests.reference.rules import ftz, read

_M, _K, _N = 3, 5, 4


def _rows(p):
    """A per-tensor or per-row parameter as a (1 or M, 1) column of its values."""
    return np.asarray(p).reshape(-1, 1)


def _columns(p):
    """A per-tensor or per-column parameter as a (1, 1 or N) row of its values."""
    return np.asarray(p).reshape(1, -1)


def exact_sum(a, b, a_zero_point=None, b_zero_point=None):
    """sum_k (a[..., m, k] - za[m]) * (b[..., k, n] - zb[n]) in Python integers (an object array)."""
    x = np.asarray(a).astype(object)
    y = np.asarray(b).astype(object)
    if a_zero_point is not None:
        x = x - _rows(a_zero_point).astype(object)
    if b_zero_point is not None:
        y = y - _columns(b_zero_point).astype(object)
    return np.matmul(x, y)


def matrix_multiply_integer(a, b, a_zero_point=None, b_zero_point=None):
    return [exact_sum(a, b, a_zero_point, b_zero_point)]


def _scales(a_scale, b_scale):
    """AScale[m] * BScale[n] as a FLOAT32 multiply of the values math reads stores it (exact in
    float64, rounded once, a denormal product flushed)."""
    p = read(_rows(a_scale)) * read(_columns(b_scale))
    return ftz(p.astype(np.float32).astype(np.float64), np.float32)


def matrix_multiply_integer_to_float(a, a_scale, b, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    p = exact_sum(a, b, a_zero_point, b_zero_point).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        out = p * _scales(a_scale, b_scale)
        if bias is not None:
            out = out + read(bias)
    return [out]


def _to_float_magnitude(a, a_scale, b, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    x = np.abs(np.asarray(a).astype(object) - (0 if a_zero_point is None else _rows(a_zero_point).astype(object)))
    y = np.abs(np.asarray(b).astype(object) - (0 if b_zero_point is None else _columns(b_zero_point).astype(object)))
    size = np.matmul(x, y).astype(np.float64) * np.abs(_scales(a_scale, b_scale))
    return size if bias is None else size + np.abs(read(bias))


def _reduce_to(g, shape, rows: bool):
    """A cotangent {batch..., M, N} summed to a scale's Sizes: over all but m (rows) or n."""
    keep = -2 if rows else -1
    axes = tuple(i for i in range(g.ndim) if i != g.ndim + keep)
    s = g.sum(axis=axes)
    return (s if np.prod(shape) > 1 else s.sum()).reshape(shape)


def _to_float_grad(dy, a, a_scale, b, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    # Output = P * AScale[m] * BScale[n] + Bias: dAScale[m] = sum dY * P * BScale[n], and so on.
    p = exact_sum(a, b, a_zero_point, b_zero_point).astype(np.float64)
    dy = np.asarray(dy, np.float64)
    da = _reduce_to(dy * p * read(_columns(b_scale)), np.shape(a_scale), rows=True)
    db = _reduce_to(dy * p * read(_rows(a_scale)), np.shape(b_scale), rows=False)
    return [None, da, None, db, None, None, None if bias is None else dy]


def _to_float_grad_magnitude(dy, a, a_scale, b, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    p = np.abs(exact_sum(a, b, a_zero_point, b_zero_point).astype(np.float64))
    dy = np.abs(np.asarray(dy, np.float64))
    da = _reduce_to(dy * p * np.abs(read(_columns(b_scale))), np.shape(a_scale), rows=True)
    db = _reduce_to(dy * p * np.abs(read(_rows(a_scale))), np.shape(b_scale), rows=False)
    return [None, da, None, db, None, None, None if bias is None else dy]


def _f32(x):
    """A float64 value rounded once to FLOAT32, denormals flushed (what a FLOAT32 operation stores)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return ftz(np.asarray(x, np.float64).astype(np.float32).astype(np.float64), np.float32)


def requantize(p, a_scale, b_scale, output_scale, output_zero_point, data_type: DataType):
    """The exact sum ``p`` requantized as the record's FLOAT32 steps: FLOAT32(p), times the scales'
    FLOAT32 product, divided by OutputScale, each rounded once; halves to even; the zero point
    added; saturated to ``data_type``'s range, NaN to Min."""
    value = _f32(_f32(np.asarray(p, dtype=object).astype(np.float64)) * _scales(a_scale, b_scale))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = _f32(value / read(_rows(output_scale)))
    r = np.round(q)  # halves to even
    if output_zero_point is not None:
        r = r + _rows(output_zero_point).astype(np.float64)
    info = np.iinfo(data_type.dtype)
    r = np.where(np.isnan(r), info.min, np.clip(r, info.min, info.max))
    return r.astype(np.int64)


def quantized_linear_matrix_multiply(a, a_scale, b, b_scale, output_scale, a_zero_point=None, b_zero_point=None,
                                     output_zero_point=None, output_data_type=None):
    dt = DataType.from_dtype(np.asarray(output_zero_point if output_zero_point is not None else a).dtype)
    if output_data_type is not None:
        dt = DataType.parse(output_data_type)
    p = exact_sum(a, b, a_zero_point, b_zero_point)
    return [requantize(p, a_scale, b_scale, output_scale, output_zero_point, dt)]


# ------------------------------------------------------------------------------------ inputs
def _values(rng, data_type, shape, bits=None):
    """Random values of ``data_type`` (the catalog's: the whole range and small ones), shifted
    right to ``bits`` magnitude bits where a FLOAT16 output needs a product that fits it."""
    from tests.catalog import random_tensor
    x = random_tensor(rng, data_type, shape)
    if bits is not None and data_type.bits > bits:
        x = x >> np.asarray(data_type.bits - bits, x.dtype)
    return x


def _parameter(rng, make, rank, count, rows):
    """A scale or zero point of ``rank`` dimensions, per tensor or per row / column (chosen at
    random), its values from ``make(shape)``."""
    n = count if rng.random() < 0.5 else 1
    if rank == 1:
        shape = (n,)
    else:
        shape = (1,) * (rank - 2) + ((n, 1) if rows else (1, n))
    return make(shape)


def _batch(rank):
    return (2, 3)[:rank - 2]


def _integer_inputs(rng, types, shape, **_):
    """A {batch..., 3, 5} and B {batch..., 5, 4} of the case's DimensionCount, each zero point of
    the same DimensionCount, per tensor or per row / column."""
    rank = len(shape)
    batch = _batch(rank)
    a = _values(rng, types["ATensor"], batch + (_M, _K))
    b = _values(rng, types["BTensor"], batch + (_K, _N))
    za = _parameter(rng, lambda s: _values(rng, types["AZeroPointTensor"], s), rank, _M, True)
    zb = _parameter(rng, lambda s: _values(rng, types["BZeroPointTensor"], s), rank, _N, False)
    return [a, b, za, zb]


def _scale(rng, data_type, shape, lo, hi):
    return rng.uniform(lo, hi, shape).astype(data_type.dtype)


def _to_float_inputs(rng, types, shape, **_):
    """The scales and zero points of the case's DimensionCount (1 to 4), A and B of at least 2
    (batch dimensions (2, 3) as far as it goes), the bias the output's Sizes. FLOAT16 outputs
    get integers of at most 6 magnitude bits, so that the output and its gradients stay in FLOAT16's range."""
    rank = len(shape)
    big = max(rank, 2)
    batch = _batch(big)
    half = types["OutputTensor"] is DataType.FLOAT16
    bits = 6 if half else None
    a = _values(rng, types["ATensor"], batch + (_M, _K), bits)
    b = _values(rng, types["BTensor"], batch + (_K, _N), bits)
    lo, hi = (2.0 ** -7, 2.0 ** -5) if half else (2.0 ** -40, 2.0 ** -30)
    if types["ATensor"].bits <= 8:
        lo, hi = 2.0 ** -7, 2.0 ** -4
    sa = _parameter(rng, lambda s: _scale(rng, types["AScaleTensor"], s, lo, hi), rank, _M, True)
    sb = _parameter(rng, lambda s: _scale(rng, types["BScaleTensor"], s, lo, hi), rank, _N, False)
    za = _parameter(rng, lambda s: _values(rng, types["AZeroPointTensor"], s, bits), rank, _M, True)
    zb = _parameter(rng, lambda s: _values(rng, types["BZeroPointTensor"], s, bits), rank, _N, False)
    bias = rng.standard_normal(batch + (_M, _N)).astype(types["BiasTensor"].dtype) * 3
    return [a, sa, b, sb, za, zb, bias]


def _quantized_inputs(rng, types, shape, **_):
    """The six quantization parameters of the case's DimensionCount (1 to 4), A and B of at least
    2; scales that put the requantized values around the output type's range, so that some
    saturate."""
    rank = len(shape)
    batch = _batch(max(rank, 2))
    a = _values(rng, types["ATensor"], batch + (_M, _K))
    b = _values(rng, types["BTensor"], batch + (_K, _N))
    f32 = DataType.FLOAT32
    sa = _parameter(rng, lambda s: _scale(rng, f32, s, 0.002, 0.02), rank, _M, True)
    sb = _parameter(rng, lambda s: _scale(rng, f32, s, 0.002, 0.02), rank, _N, False)
    sy = _parameter(rng, lambda s: _scale(rng, f32, s, 0.05, 0.5), rank, _M, True)
    za = _parameter(rng, lambda s: _values(rng, types["AZeroPointTensor"], s), rank, _M, True)
    zb = _parameter(rng, lambda s: _values(rng, types["BZeroPointTensor"], s), rank, _N, False)
    zy = _parameter(rng, lambda s: _values(rng, types["OutputZeroPointTensor"], s), rank, _M, True)
    return [a, sa, b, sb, sy, za, zb, zy]


REFERENCES = {
    "DML_OPERATOR_MATRIX_MULTIPLY_INTEGER": Reference(
        matrix_multiply_integer, make_inputs=_integer_inputs, pointwise=False,
        no_grad="integer inputs and an integer output"),
    "DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT": Reference(
        matrix_multiply_integer_to_float, make_inputs=_to_float_inputs, magnitude=_to_float_magnitude,
        grad=_to_float_grad, grad_magnitude=_to_float_grad_magnitude, pointwise=False, accumulates=True),
    "DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY": Reference(
        quantized_linear_matrix_multiply, make_inputs=_quantized_inputs, pointwise=False,
        output_types=lambda row: (None,),
        no_grad="an integer output: the scales get zero gradients, the integer inputs float0"),
}
