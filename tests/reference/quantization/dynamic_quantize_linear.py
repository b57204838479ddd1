"""Exact reference for DYNAMIC_QUANTIZE_LINEAR, from ONNX's DynamicQuantizeLinear with the page's Min
and Max (dml_dynamic_quantize_linear_operator_desc.md, whose formula block also holds two lines of
another page's): the range widened to include 0, NaN skipped, each step a FLOAT32 operation rounded
once (the float64 result of an operation on FLOAT32 values, rounded to FLOAT32, is the correctly
rounded one), FLOAT32 denormals read as 0, an empty range's scale 1 (ONNX Runtime's), the zero
point Min - InputMin / OutputScale rounded with halves to even and saturated."""

import math

import numpy as np

from tests.reference.quantization.quantize_linear import RANGES, quantize, saturate
from tests.reference.record import Reference
from tests.reference.rules import F32_TINY, read


def f32(v):
    """One FLOAT32 rounding of a float64 value, FLOAT32 denormals flushed, as float64."""
    with np.errstate(over="ignore"):
        r = float(np.float32(v))
    return math.copysign(0.0, r) if abs(r) < F32_TINY else r


def parameters(x, dtype):
    """(OutputScale, OutputZeroPoint as a float64 integer, the widened InputMax and InputMin)."""
    lo, hi = RANGES[np.dtype(dtype)]
    v = read(x).ravel()
    v = v[~np.isnan(v)]
    top = max(float(v.max()), 0.0) if v.size else 0.0
    bottom = min(float(v.min()), 0.0) if v.size else 0.0
    scale = f32(f32(top - bottom) / (hi - lo))
    if scale == 0:
        scale = 1.0
    zero_point = f32(lo - f32(bottom / scale))  # -inf / inf: NaN, saturated to Min
    return scale, float(saturate(np.round(zero_point), dtype)), top, bottom


def dynamic_quantize_linear(x, output_data_type="UINT8"):
    dtype = np.dtype(str(output_data_type).lower())
    scale, zero_point, _, _ = parameters(x, dtype)
    one = (1,) * np.ndim(x)
    q = quantize(x, np.full(np.shape(x), scale, np.float32), np.full(np.shape(x), zero_point), dtype)
    return [(q, np.full(one, scale, np.float32), np.full(one, zero_point).astype(dtype))]


def scale_grad(dy_scale, x, output_data_type="UINT8"):
    """d(OutputScale) / dx times its cotangent: 1 / (Max - Min) at the first element that gave
    InputMax (where it is above 0), minus that at the first that gave InputMin (below 0); 0 for an
    empty range."""
    dtype = np.dtype(str(output_data_type).lower())
    lo, hi = RANGES[dtype]
    v = read(x)
    g = np.zeros(v.shape)
    if f32(f32(max(np.nanmax(v), 0.0) - min(np.nanmin(v), 0.0)) / (hi - lo)) == 0:
        return g
    flat = g.reshape(-1)
    w = v.reshape(-1)
    if np.nanmax(w) > 0:
        flat[int(np.nanargmax(w))] += float(dy_scale) / (hi - lo)
    if np.nanmin(w) < 0:
        flat[int(np.nanargmin(w))] -= float(dy_scale) / (hi - lo)
    return g


REFERENCES = {
    "DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR": Reference(
        dynamic_quantize_linear, output_types=lambda row: row, output_type_arg=True,
        no_grad=("its first output (the quantized tensor) is an integer: no gradient reaches the input through it "
                 "(OutputScaleTensor's gradient is checked in tests/ops/quantization/test_dynamic_quantize_linear.py)")),
}
