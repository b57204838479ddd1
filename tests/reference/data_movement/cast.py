"""Exact reference of CAST, from its page (dml_cast_operator_desc.md) and the conversion rules
dmljax applies where the page is silent (Direct3D's, docs/semantics.md#conversions; the record's notes): floats to
integers truncated toward zero and saturated, NaN to 0; to floats rounded once to nearest even
from the exact value; integers to integers wrapped; FLOAT32 denormals read and written as zero."""

import math

import numpy as np

from dmljax._src.dtypes import DataType
from tests.reference.record import Reference
from tests.reference.rules import ftz, is_int, read, wrap

_BITS = {np.dtype(np.float16): 11, np.dtype(np.float32): 24, np.dtype(np.float64): 53}


def _round_int(v: int, bits: int) -> int:
    """An exact integer rounded to ``bits`` significant bits, ties to even."""
    n = abs(v).bit_length()
    if n <= bits:
        return v
    shift = n - bits
    q, r = divmod(abs(v), 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return int(math.copysign(1, v)) * (q << shift)


def cast(x, output_data_type):
    out = DataType.parse(output_data_type)
    x_np = np.asarray(x)
    if is_int(x_np):
        vals = [int(v) for v in x_np.ravel()]
        if out.is_integer:
            return [wrap(np.array(vals, dtype=object).reshape(x_np.shape), out.dtype)]
        bits = _BITS[np.dtype(out.dtype)]
        # rounded once from the exact integer; beyond the type's range it overflows to +-inf
        y = np.array([float(_round_int(v, bits)) for v in vals], np.float64).astype(out.dtype)
        return [ftz(y, out.dtype).reshape(x_np.shape)]
    vals = read(x_np)  # FLOAT32 denormals read as zero
    if out.is_integer:
        info = np.iinfo(out.dtype)
        res = []
        for v in vals.ravel():
            if math.isnan(v):
                res.append(0)
            elif v >= info.max + 1:
                res.append(int(info.max))
            elif v <= info.min - 1:
                res.append(int(info.min))
            else:
                res.append(int(math.trunc(v)))
        return [np.array(res, dtype=object).reshape(x_np.shape)]
    with np.errstate(over="ignore"):
        y = vals.astype(out.dtype)  # NumPy rounds float64 to FLOAT32 and FLOAT16 once, correctly
    return [ftz(y.astype(np.float64), out.dtype)]


def _grad(dy, x, output_data_type):
    """dX = dY in the input's type for float to float; a float cast to an integer passes 0."""
    if is_int(np.asarray(x)):
        return [None]
    if DataType.parse(output_data_type).is_integer:
        return [np.zeros(np.shape(x))]
    return [np.asarray(dy, np.float64)]


def _every(row):
    return row


REFERENCES = {
    "DML_OPERATOR_CAST": Reference(cast, output_types=_every, grad=_grad, output_type_arg=True),
}
