"""Exact reference for ELEMENT_WISE_QUANTIZED_LINEAR_ADD, transcribed from its page
(dml_element_wise_quantized_linear_add_operator_desc.md) and ONNX Runtime's QLinearAdd: each input
dequantized, (A - AZeroPoint) * AScale rounded once to FLOAT32 (the float64 product of a 9-bit
integer and a FLOAT32 value is exact), the sum rounded once, then quantized as
ELEMENT_WISE_QUANTIZE_LINEAR's reference does."""

import numpy as np

from tests.reference.quantization.quantize_linear import quantize
from tests.reference.record import Reference
from tests.reference.rules import read


def dequantized(x, scale, zero_point):
    """(x - zero_point) * scale rounded once to FLOAT32, as float64."""
    d = np.asarray(x).astype(np.int64) - (0 if zero_point is None else np.asarray(zero_point).astype(np.int64))
    with np.errstate(invalid="ignore", over="ignore"):
        return (d.astype(np.float64) * read(scale)).astype(np.float32).astype(np.float64)


def element_wise_quantized_linear_add(a, a_scale, b, b_scale, output_scale, a_zero_point=None, b_zero_point=None,
                                      output_zero_point=None, output_data_type=None):
    if output_zero_point is not None:
        dtype = np.asarray(output_zero_point).dtype
    else:
        dtype = np.dtype(str(output_data_type).lower()) if output_data_type else np.asarray(a).dtype
    with np.errstate(invalid="ignore", over="ignore"):
        total = (dequantized(a, a_scale, a_zero_point) + dequantized(b, b_scale, b_zero_point)).astype(np.float32)
    return [quantize(total, output_scale, output_zero_point, dtype)]


def _inputs(rng, types, shape, **kwargs):
    """A and B of the case's shape; each scale and zero point one element (Sizes of 1s), the scales
    from 1/64 to 4, so that sums both saturate and land inside the range."""
    one = (1,) * len(shape)

    def ints(name, size):
        info = np.iinfo(types[name].dtype)
        return rng.integers(int(info.min), int(info.max), size=size, endpoint=True).astype(types[name].dtype)

    def scale():
        return np.exp2(rng.uniform(-6, 2, one)).astype(np.float32)

    return [ints("ATensor", shape), scale(), ints("BTensor", shape), scale(), scale(),
            ints("AZeroPointTensor", one), ints("BZeroPointTensor", one), ints("OutputZeroPointTensor", one)]


REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD": Reference(
        element_wise_quantized_linear_add, make_inputs=_inputs, output_types=lambda row: (None,),
        no_grad="integer output: no gradient reaches the scales"),
}
