"""Exact references of FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE, DIAGONAL_MATRIX(1) and
RANDOM_GENERATOR, from their pages: a constant; ValueStart + i * ValueDelta in row-major order
(integers exact and wrapped; floats the FLOAT32 multiply-add, fused or not, rounded to the type);
Value where x - y = Offset; DIAGONAL_MATRIX1's pseudocode coordinate by coordinate; Philox."""

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


def diagonal_matrix1(x=None, value=1, diagonal_fill_begin=0, diagonal_fill_end=1, output_data_type=None,
                     output_sizes=None, value_data_type=None):
    """The page's pseudocode, coordinate by coordinate, in Python integers."""
    if x is not None:
        x = np.asarray(x)
    dt = np.dtype(x.dtype) if x is not None else DataType.parse(output_data_type).dtype
    sizes = x.shape if x is not None else tuple(output_sizes)
    out = np.zeros(sizes, dt) if x is None else x.copy()
    for index in np.ndindex(*sizes):
        top_x = index[-1] - index[-2]
        use = (diagonal_fill_end >= diagonal_fill_begin) ^ (top_x >= diagonal_fill_begin) ^ (top_x < diagonal_fill_end)
        if use:
            out[index] = value
    return [out]


def _diagonal1_grad(dy, x=None, value=1, diagonal_fill_begin=0, diagonal_fill_end=1, **_):
    kept = diagonal_matrix1(np.ones(np.shape(dy)), 0.0, diagonal_fill_begin, diagonal_fill_end)[0]
    return [np.asarray(dy, np.float64) * kept]


def _diagonal1_inputs(rng, types, shape, output_sizes=None, **_):
    """None where the set sizes the output itself (no InputTensor), else a random matrix stack."""
    from tests.catalog import random_tensor
    return [None] if output_sizes is not None else [random_tensor(rng, types["InputTensor"], shape)]


def _diagonal1_sets(dt):
    v = (lambda f, i: f if dt.is_float else i)
    return (Attrs({"value": v(2.5, 7), "diagonal_fill_begin": 0, "diagonal_fill_end": 3}),
            Attrs({"value": v(-1.5, 0), "diagonal_fill_begin": -2**31, "diagonal_fill_end": 1}),  # lower half
            Attrs({"value": 0, "diagonal_fill_begin": 1, "diagonal_fill_end": 0}),  # keeps the diagonal only
            Attrs({"value": v(3.0, 5), "diagonal_fill_begin": -1, "diagonal_fill_end": 2**31 - 1,
                   "output_data_type": dt.name}, shaped=_sized))  # no InputTensor: zeros and Value


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


def _philox(ctr, key):
    """Philox 4x32-10 in Python integers, written from the Random123 paper (Salmon et al., SC'11):
    ten rounds of two 32 x 32 -> 64-bit products, the key bumped by the Weyl constants between."""
    mask = 0xFFFFFFFF
    c, k = list(ctr), list(key)
    for r in range(10):
        if r:
            k = [(k[0] + 0x9E3779B9) & mask, (k[1] + 0xBB67AE85) & mask]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & mask, p1 & mask, ((p0 >> 32) ^ c[3] ^ k[1]) & mask, p0 & mask]
    return c


def random_generator(state, output_sizes, type=0):
    words = [int(v) for v in np.asarray(state).ravel()]
    counter = words[0] | words[1] << 32 | words[2] << 64 | words[3] << 96
    n = math.prod(output_sizes)
    out = []
    for b in range(-(-n // 4)):
        c = (counter + b) % (1 << 128)
        out += _philox([(c >> (32 * i)) & 0xFFFFFFFF for i in range(4)], words[4:6])
    new = (counter + -(-n // 4)) % (1 << 128)
    new_state = [(new >> (32 * i)) & 0xFFFFFFFF for i in range(4)] + words[4:6]
    return [(np.array(out[:n], np.uint32).reshape(output_sizes), np.array(new_state, np.uint32).reshape(np.shape(state)))]


def _state_inputs(rng, types, shape, **_):
    state = rng.integers(0, 2**32, 6, dtype=np.uint64).astype(np.uint32)
    state[1:4] = [0xFFFFFFFF, 0xFFFFFFFF, 7]  # carries out of the low words
    return [state.reshape((1,) * (len(shape) - 1) + (6,)) if shape else state]


def _random_sizes(shape):
    return {"output_sizes": tuple(shape) if shape else (5,)}


_NONE = "no inputs"

REFERENCES = {
    "DML_OPERATOR_FILL_VALUE_CONSTANT": Reference(fill_value_constant, attrs=_constant_sets, selection=True,
                                                  no_grad=_NONE, output_types=lambda row: (None,), output_type_arg=True),
    "DML_OPERATOR_FILL_VALUE_SEQUENCE": Reference(fill_value_sequence, attrs=_sequence_sets, selection=False,
                                                  multiply_add=True, no_grad=_NONE, output_types=lambda row: (None,),
                                                  output_type_arg=True),
    "DML_OPERATOR_RANDOM_GENERATOR": Reference(random_generator, attrs=(Attrs(shaped=_random_sizes),), selection=True,
                                               make_inputs=_state_inputs, no_grad="random bits (UINT32)"),
    "DML_OPERATOR_DIAGONAL_MATRIX1": Reference(diagonal_matrix1, attrs=_diagonal1_sets, selection=True,
                                               output_types=lambda row: (None,),
                                               make_inputs=_diagonal1_inputs, grad=_diagonal1_grad),
    "DML_OPERATOR_DIAGONAL_MATRIX": Reference(diagonal_matrix, attrs=_diagonal_sets, selection=True, no_grad=_NONE,
                                              output_types=lambda row: (None,), output_type_arg=True),
}
