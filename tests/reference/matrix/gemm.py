"""Float64 references of the matrix family (GEMM), from its page: Alpha * TransA(A) x TransB(B) +
Beta * C over the batch dimensions, the inputs as math reads them (FLOAT32 denormals flushed);
the gradient by the same products transposed."""

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import read

_M, _K, _N = 3, 5, 4


def _trans(name):
    return str(name).upper().endswith("TRANSPOSE") or name == 1


def _operands(a, b, trans_a, trans_b):
    x, y = read(a), read(b)
    return (np.swapaxes(x, -1, -2) if _trans(trans_a) else x), (np.swapaxes(y, -1, -2) if _trans(trans_b) else y)


def gemm(a, b, c=None, trans_a="NONE", trans_b="NONE", alpha=1.0, beta=1.0, fused_activation=None, half=False):
    x, y = _operands(a, b, trans_a, trans_b)
    out = float(np.float32(alpha)) * (x @ y)
    if c is not None:
        out = out + float(np.float32(beta)) * read(c)
    return [out]


def _magnitude(a, b, c=None, trans_a="NONE", trans_b="NONE", alpha=1.0, beta=1.0, fused_activation=None, half=False):
    x, y = _operands(a, b, trans_a, trans_b)
    size = abs(float(np.float32(alpha))) * (np.abs(x) @ np.abs(y))
    return size if c is None else size + abs(float(np.float32(beta))) * np.abs(read(c))


def _grad(dy, a, b, c=None, trans_a="NONE", trans_b="NONE", alpha=1.0, beta=1.0, fused_activation=None, half=False):
    x, y = _operands(a, b, trans_a, trans_b)
    g = float(np.float32(alpha)) * np.asarray(dy, np.float64)
    da, db = g @ np.swapaxes(y, -1, -2), np.swapaxes(x, -1, -2) @ g
    out = [np.swapaxes(da, -1, -2) if _trans(trans_a) else da, np.swapaxes(db, -1, -2) if _trans(trans_b) else db]
    if c is not None:
        out.append(float(np.float32(beta)) * np.asarray(dy, np.float64))
    return out


def _grad_magnitude(dy, a, b, c=None, trans_a="NONE", trans_b="NONE", alpha=1.0, beta=1.0, **_):
    x, y = _operands(a, b, trans_a, trans_b)
    g = abs(float(np.float32(alpha))) * np.abs(np.asarray(dy, np.float64))
    da, db = g @ np.abs(np.swapaxes(y, -1, -2)), np.abs(np.swapaxes(x, -1, -2)) @ g
    out = [np.swapaxes(da, -1, -2) if _trans(trans_a) else da, np.swapaxes(db, -1, -2) if _trans(trans_b) else db]
    if c is not None:
        out.append(abs(float(np.float32(beta))) * np.abs(np.asarray(dy, np.float64)))
    return out


def _inputs(rng, types, shape, trans_a="NONE", trans_b="NONE", **_):
    """A, B and C of the case's DimensionCount: batch dimensions (2, 3)[:rank - 2], M 3, K 5, N 4."""
    from tests.catalog import random_tensor
    batch = (2, 3)[:max(len(shape), 2) - 2]
    a = batch + ((_K, _M) if _trans(trans_a) else (_M, _K))
    b = batch + ((_N, _K) if _trans(trans_b) else (_K, _N))
    return [random_tensor(rng, types["ATensor"], a), random_tensor(rng, types["BTensor"], b),
            random_tensor(rng, types["CTensor"], batch + (_M, _N))]


_SETS = (Attrs({}), Attrs({"trans_a": "TRANSPOSE", "alpha": -0.5}),
         Attrs({"trans_b": "TRANSPOSE", "beta": 2.0}), Attrs({"trans_a": "TRANSPOSE", "trans_b": "TRANSPOSE",
                                                              "alpha": 1.5, "beta": -1.0}))

REFERENCES = {
    "DML_OPERATOR_GEMM": Reference(gemm, attrs=_SETS, make_inputs=_inputs, magnitude=_magnitude, grad=_grad,
                                   grad_magnitude=_grad_magnitude, pointwise=False, accumulates=True),
}
