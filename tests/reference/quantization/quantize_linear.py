"""Exact reference for ELEMENT_WISE_QUANTIZE_LINEAR, transcribed from its page
(dml_element_wise_quantize_linear_operator_desc.md) and ONNX's QuantizeLinear:
f(input, scale, zero_point) = clamp(round(input / scale) + zero_point, Min, Max).

The quotient is the one FLOAT32 rounding the definition has (FLOAT16 with half-precision
computation): the float64 quotient of two FLOAT32 values rounded to FLOAT32 is the correctly
rounded FLOAT32 quotient (float64 has more than 2 * 24 + 2 bits). The rest is exact: rounding
halves to even, the zero point added as a Python int, saturation with NaN to Min (minNum/maxNum).
The other quantization references build on ``quantize``."""

import numpy as np

from tests.reference.record import Reference
from tests.reference.rules import read

RANGES = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


def quotient(value, scale, half=False):
    """``value / scale`` as math reads both (FLOAT32 denormals as 0; an INT32 value rounded to
    FLOAT32 first), rounded once to FLOAT32 (FLOAT16 with ``half``), as float64."""
    v = np.asarray(value)
    v = read(v) if v.dtype.kind == "f" else v.astype(np.float32).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return (v / read(scale)).astype(np.float16 if half else np.float32).astype(np.float64)


def saturate(r, dtype):
    """An integer-valued float64 array (or +-inf, NaN) clamped to ``dtype``'s range, NaN to Min,
    as an array of ``dtype``."""
    lo, hi = RANGES[np.dtype(dtype)]
    r = np.asarray(r, np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(r), lo, np.clip(r, lo, hi)).astype(dtype)


def quantize(value, scale, zero_point, dtype, half=False):
    """clamp(round(value / scale) + zero_point, Min, Max) of ``dtype`` (halves to even)."""
    q = np.round(quotient(value, scale, half))  # NumPy rounds halves to even
    zp = 0 if zero_point is None else np.asarray(zero_point).astype(np.float64)
    return saturate(q + zp, dtype)


def element_wise_quantize_linear(x, scale, zero_point=None, output_data_type=None, half=False):
    dtype = np.asarray(zero_point).dtype if zero_point is not None else np.dtype(str(output_data_type or "uint8").lower())
    return [quantize(x, scale, zero_point, dtype, half)]


REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR": Reference(
        element_wise_quantize_linear, roles={"ScaleTensor": "positive"}, output_types=lambda row: (None,),
        no_grad="integer output: no gradient reaches the input or the scale (dmljax.quantize_dequantize has one)"),
}
