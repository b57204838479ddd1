"""Exact references of FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE and DIAGONAL_MATRIX, from their
pages: a constant; ValueStart + i * ValueDelta in row-major order (integers exact and wrapped; floats
the FLOAT32 multiply-add, fused or not, rounded to the type); Value where x - y = Offset."""

import math

import numpy as np

from dmljax._src.dtypes import DataType
from tests.reference.record import Attrs, Reference
from tests.reference.rules import int_attr, wrap


def fill_value_constant(value, output_data_type, output_sizes, value_data_type=None):
    dt = DataType.parse(output_data_type)
    return [np.full(output_sizes, value, dt.dtype)]


def fill_value_sequence(value_start, value_delta, output_data_type, output_sizes, value_data_type=None):
    dt = DataType.parse(output_data_type)
    n = math.prod(output_sizes)
    if dt.is_integer:
        return [wrap(np.array([value_start + i * value_delta for i in range(n)], dtype=object), dt.dtype)
                .reshape(output_sizes)]
    i = np.arange(n, dtype=np.float32)
    s, d = np.float32(value_start), np.float32(value_delta)
    fused = (i.astype(np.float64) * float(d) + float(s)).astype(np.float32)  # exact product, one rounding
    unfused = (i * d).astype(np.float32) + s
    return [c.astype(dt.dtype).reshape(output_sizes) for c in (fused, unfused)]


def diagonal_matrix(output_data_type, output_sizes, offset=0, value=1.0):
    dt = DataType.parse(output_data_type)
    v = value if dt.is_float else int_attr(value, dt.dtype)
    h, w = output_sizes[-2], output_sizes[-1]
    m = np.zeros((h, w), dt.dtype)
    for y in range(h):
        for x in range(w):
            if x - y == offset:
                m[y, x] = v
    return [np.broadcast_to(m, output_sizes).copy()]


def _sized(shape):
    return {"output_sizes": tuple(shape)}


def _constant_sets(dt):
    return (Attrs({"value": 2.5 if dt.is_float else 7}, shaped=_sized),)


def _sequence_sets(dt):
    if dt.is_float:
        return (Attrs({"value_start": 3.0, "value_delta": 0.25}, shaped=_sized),
                Attrs({"value_start": -1.5, "value_delta": -3.0}, shaped=_sized))
    big = int(np.iinfo(dt.dtype).max) if np.dtype(dt.dtype).kind in "iu" else 7  # INT4/UINT4: negative cases only
    return (Attrs({"value_start": 10, "value_delta": 3}, shaped=_sized),
            Attrs({"value_start": big - 2, "value_delta": 1}, shaped=_sized))  # wraps past the maximum


def _diagonal_sets(dt):
    return (Attrs({}, shaped=_sized), Attrs({"offset": -1, "value": -10.6 if not dt.is_float else 2.5}, shaped=_sized),
            Attrs({"offset": 2, "value": 1e10}, shaped=_sized))  # saturated for integers, inf for FLOAT16


_NONE = "no inputs"

REFERENCES = {
    "DML_OPERATOR_FILL_VALUE_CONSTANT": Reference(fill_value_constant, attrs=_constant_sets, selection=True,
                                                  no_grad=_NONE, output_types=lambda row: (None,), output_type_arg=True),
    "DML_OPERATOR_FILL_VALUE_SEQUENCE": Reference(fill_value_sequence, attrs=_sequence_sets, selection=False,
                                                  multiply_add=True, no_grad=_NONE, output_types=lambda row: (None,),
                                                  output_type_arg=True),
    "DML_OPERATOR_DIAGONAL_MATRIX": Reference(diagonal_matrix, attrs=_diagonal_sets, selection=True, no_grad=_NONE,
                                              output_types=lambda row: (None,), output_type_arg=True),
}
