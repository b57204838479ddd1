"""float64 references for QUANTIZE and DEQUANTIZE (dml_quantize_operator_desc.md,
dml_dequantize_operator_desc.md), written from ONNX's QuantizeLinear and DequantizeLinear, which
the pages leave the formulas to:

    QUANTIZE:   clamp(round(input / scale) + zero_point, Min, Max), round halves to even
    DEQUANTIZE: (input - zero_point) * scale

QuantizationTensors is [scale] or [scale, zero_point]; each has the input's rank and along each
axis a size that divides the input's: each of its values covers that many consecutive elements
(np.repeat). Integers are Python-sized (int64 here, far from overflow); the quotient is the float64
one rounded to the compute type (FLOAT32, or FLOAT16 with half-precision computation): float64
has more than twice the bits of either plus two, so that double rounding is the single one."""

import ml_dtypes
import numpy as np

from dmljax._src.dtypes import DataType
from tests.reference.record import Attrs, Reference
from tests.reference.rules import ftz, read

INT_TYPES = (DataType.INT4, DataType.INT8, DataType.UINT4, DataType.UINT8)


def blocked(t, shape):
    """``t`` with each value repeated over its block: along axis i, shape[i] // t.shape[i] times."""
    t = np.asarray(t)
    for axis, (s, n) in enumerate(zip(t.shape, shape)):
        t = np.repeat(t, n // s, axis=axis)
    return t


def block_sums(g, sizes):
    """The sum of ``g`` over each block of a tensor of ``sizes`` (blocked's adjoint)."""
    g = np.asarray(g, np.float64)
    for axis, s in enumerate(sizes):
        n = g.shape[axis]
        g = g.reshape(g.shape[:axis] + (s, n // s) + g.shape[axis + 1:]).sum(axis=axis + 1)
    return g


def _ints(t, shape):
    return blocked(np.asarray(t).astype(np.int64), shape)


def integer_range(data_type: DataType):
    info = ml_dtypes.iinfo(data_type.dtype)
    return int(info.min), int(info.max)


def quantize(x, quantizations, quantization_type, output_data_type=None, half=False):
    x = np.asarray(x)
    scale = np.asarray(quantizations[0])
    zp = quantizations[1] if len(quantizations) > 1 else None
    out = DataType.from_dtype(np.asarray(zp).dtype) if zp is not None else DataType.parse(output_data_type or "UINT8")
    compute = np.float16 if half and scale.dtype == np.float16 else np.float32
    with np.errstate(all="ignore"):
        q = (read(x) / blocked(read(scale), x.shape)).astype(compute).astype(np.float64)
        r = np.round(q) + (0 if zp is None else _ints(zp, x.shape))
    lo, hi = integer_range(out)
    with np.errstate(invalid="ignore"):
        return [np.where(np.isnan(r), lo, np.clip(r, lo, hi)).astype(np.int64)]


def difference(x, zp):
    x = np.asarray(x)
    return (x.astype(np.int64) - (0 if zp is None else _ints(zp, x.shape))).astype(np.float64)


def dequantize(x, quantizations, quantization_type, half=False):
    scale = np.asarray(quantizations[0])
    zp = quantizations[1] if len(quantizations) > 1 else None
    with np.errstate(all="ignore"):
        return [ftz(difference(x, zp) * blocked(read(scale), np.shape(x)), scale.dtype)]


def _dequantize_grad(dy, x, quantizations, quantization_type, half=False):
    # d/dscale of (input - zero_point) * scale, summed over each scale's block; integers get none.
    zp = quantizations[1] if len(quantizations) > 1 else None
    d_scale = block_sums(difference(x, zp) * np.asarray(dy, np.float64), np.shape(quantizations[0]))
    return (None, [d_scale] + [None] * (len(quantizations) - 1))


def _sizes(shape, blocked_axis):
    """Quantization tensor Sizes for an input of ``shape``: per-element along ``blocked_axis``
    (halved where it is even: blocks of 2), one value along the others."""
    sizes = [1] * len(shape)
    if shape:
        n = shape[blocked_axis % len(shape)]
        sizes[blocked_axis % len(shape)] = n // 2 if n % 2 == 0 else n
    return tuple(sizes)


def _quantize_inputs(rng, types, shape, quantization_type):
    dt = types["InputTensor"]
    out = types["OutputTensor"] if types["OutputTensor"] in INT_TYPES else DataType.UINT8
    x = (rng.standard_normal(shape) * 3.0).astype(dt.dtype)
    big = out.bits == 8
    s_shape = _sizes(shape, 0)
    scale = (rng.uniform(0.02, 0.1) if big else rng.uniform(0.3, 1.0)) * rng.uniform(0.5, 1.5, s_shape)
    quantizations = [scale.astype(dt.dtype)]
    if quantization_type == "SCALE_ZERO_POINT":
        lo, hi = integer_range(out)
        quantizations.append(rng.integers(lo, hi + 1, _sizes(shape, -1)).astype(out.dtype))
    return [x, quantizations]


def _dequantize_inputs(rng, types, shape, quantization_type):
    dt = types["InputTensor"]
    out = types["OutputTensor"]
    lo, hi = integer_range(dt)
    x = rng.integers(lo, hi + 1, shape).astype(dt.dtype)
    scale = rng.uniform(0.01, 2.0, _sizes(shape, 0)) * np.where(rng.random(_sizes(shape, 0)) < 0.2, -1, 1)
    quantizations = [scale.astype(out.dtype)]
    if quantization_type == "SCALE_ZERO_POINT":
        quantizations.append(rng.integers(lo, hi + 1, _sizes(shape, -1)).astype(dt.dtype))
    return [x, quantizations]


ATTRS = (Attrs({"quantization_type": "SCALE_ZERO_POINT"}), Attrs({"quantization_type": "SCALE"}))

REFERENCES = {
    "DML_OPERATOR_QUANTIZE": Reference(
        quantize, attrs=ATTRS, make_inputs=_quantize_inputs, output_type_arg=True,
        output_types=lambda row: (DataType.INT4, DataType.UINT8, DataType.UINT4, DataType.INT8),
        no_grad="integer output: its cotangent is float0, and the input and scale get zeros"),
    "DML_OPERATOR_DEQUANTIZE": Reference(
        dequantize, attrs=ATTRS, make_inputs=_dequantize_inputs, grad=_dequantize_grad),
}
