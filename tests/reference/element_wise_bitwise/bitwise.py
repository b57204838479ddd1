"""Exact-integer references for the element-wise bitwise family, transcribed from the pages
(dml_element_wise_bit_*_operator_desc.md in ../shared/spec/operators/) and docs/semantics.md.

"The bitwise operation is applied to tensor data in its native encoding": each element is read
(by a NumPy view) as the unsigned integer of its width holding its bits, the operation runs on
exact Python ints, and the result is stored back as those bits in the input's type. Python ints
have no width, so ``(p << q) mod 2**width`` and ``p >> q`` are already 0 for every count of the
width or more, which is what dmljax documents (the pages are silent); the left shift only skips
building a Python int of 2**64 bits for a huge count."""

import numpy as np

from tests.reference.record import Reference

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def patterns(x):
    """An array's elements as exact Python ints: their bit patterns, read unsigned."""
    x = np.asarray(x)
    return [int(v) for v in x.view(_UNSIGNED[x.dtype.itemsize]).ravel()]


def stored(values, like):
    """Bit patterns (Python ints below 2**width) as an array of ``like``'s type and shape."""
    like = np.asarray(like)
    unsigned = _UNSIGNED[like.dtype.itemsize]
    return np.array(values, dtype=unsigned).reshape(like.shape).view(like.dtype)


def width(x):
    return np.asarray(x).dtype.itemsize * 8


def _binary(op):
    def fn(a, b):
        return [stored([op(p, q, width(a)) for p, q in zip(patterns(a), patterns(b))], a)]
    return fn


def bit_not(x):
    mask = (1 << width(x)) - 1
    return [stored([p ^ mask for p in patterns(x)], x)]


def bit_count(x):
    # The number of bits set to 1 in the element's bit pattern (two's complement for signed
    # types, the IEEE pattern for floats): exact ints, compared as values in the output type.
    x = np.asarray(x)
    return [np.array([bin(p).count("1") for p in patterns(x)], dtype=object).reshape(x.shape)]


def _bits_everywhere(output_types):
    return output_types  # both UINT32 and UINT8 outputs


NO_GRAD = "a bitwise operation has no derivative: float inputs get zeros, integer inputs float0"
# Bits in, bits out: compared bit for bit in the input's type (FLOAT32 denormals kept).
REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_BIT_AND": Reference(
        _binary(lambda p, q, w: p & q), selection=True, no_grad=NO_GRAD),
    "DML_OPERATOR_ELEMENT_WISE_BIT_OR": Reference(
        _binary(lambda p, q, w: p | q), selection=True, no_grad=NO_GRAD),
    "DML_OPERATOR_ELEMENT_WISE_BIT_XOR": Reference(
        _binary(lambda p, q, w: p ^ q), selection=True, no_grad=NO_GRAD),
    "DML_OPERATOR_ELEMENT_WISE_BIT_NOT": Reference(bit_not, selection=True, no_grad=NO_GRAD),
    # f(a, b) = (a << b): bits past the width are dropped (mod 2**width).
    "DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_LEFT": Reference(
        _binary(lambda p, q, w: (p << min(q, w)) % (1 << w)), selection=True, no_grad=NO_GRAD),
    # f(a, b) = (a >> b), logical: zeros come in from the top.
    "DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_RIGHT": Reference(
        _binary(lambda p, q, w: p >> q), selection=True, no_grad=NO_GRAD),
    "DML_OPERATOR_ELEMENT_WISE_BIT_COUNT": Reference(
        bit_count, output_types=_bits_everywhere,
        no_grad="integer output (a count in UINT32 or UINT8): no gradient reaches the input"),
}
