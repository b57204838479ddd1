"""float64 reference of LP_NORMALIZATION (dmljax's reading of a page without formula):
Input / (sum(|Input|^P along Axis) + Epsilon)^(1/P)."""

import numpy as np

from tests.reference.normalization._common import _sizes, complex_step
from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, read


# ----------------------------------------------------------------------------- LP_NORMALIZATION
def _lp_core(axis, p, eps):
    def core(x):
        mag = x * np.sign(np.real(x)) if p == 1 else x * x  # |x|^P, complex-safe
        return x / (np.sum(mag, axis=axis, keepdims=True) + eps) ** (1.0 / p)
    return core


def lp_normalization(x, axis, epsilon=1e-5, p=2, half=False):
    return [_lp_core(axis, p, c_float(epsilon))(read(x))]


def _lp_grad(dy, x, axis, epsilon=1e-5, p=2, half=False, sizes=False):
    grads, mags = complex_step(_lp_core(axis, p, c_float(epsilon)), [read(x)], dy)
    return mags if sizes else grads


def _longest(shape):
    return {"axis": int(np.argmax(shape)) if len(shape) else 0}


_LP_SETS = (Attrs({}, half={"half": True}, shaped=_longest),)  # P = 1: the hand tests

REFERENCES = {
    "DML_OPERATOR_LP_NORMALIZATION": Reference(
        lp_normalization, attrs=_LP_SETS, grad=_lp_grad, grad_magnitude=_sizes(_lp_grad), pointwise=False,
        accumulates=True),
}
