"""float64 reference for ELEMENT_WISE_DEQUANTIZE_LINEAR, transcribed from its page
(dml_element_wise_dequantize_linear_operator_desc.md) and ONNX's DequantizeLinear:
f(input, scale, zero_point) = (input - zero_point) * scale, the difference exact (Python-sized
integers), the scale read as math reads it (FLOAT32 denormals as zero)."""

import numpy as np

from tests.reference.record import Reference
from tests.reference.rules import ftz, read


def _difference(x, zero_point):
    x = np.asarray(x).astype(np.int64)
    return (x - (0 if zero_point is None else np.asarray(zero_point).astype(np.int64))).astype(np.float64)


def element_wise_dequantize_linear(x, scale, zero_point=None):
    with np.errstate(invalid="ignore", over="ignore"):
        return [ftz(_difference(x, zero_point) * read(scale), np.asarray(scale).dtype)]


def _grad(dy, x, scale, zero_point=None):
    # d/dScale of (input - zero_point) * scale is the difference; the integers get none.
    return (None, _difference(x, zero_point) * np.asarray(dy, np.float64), None)


REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR": Reference(element_wise_dequantize_linear, grad=_grad),
}
