"""float64 references for the activations GELU, SWISH, HARD_SWISH, PARAMETERIZED_RELU, RELU_GRAD, transcribed from their pages and SEMANTICS.md."""

import numpy as np

from tests.reference.record import Reference
from tests.reference.rules import elementwise_vjp, is_int, read, wrap


def _near_zero(x, *_, **__):
    return np.abs(read(x)) < 1e-2


# ---------------------------------------------------------------------------------------------
def activation_relu_grad(x, gradient):
    # OutputGradientTensor = (X > 0 ? dY : 0). X is read as math reads it (a FLOAT32 denormal is
    # a zero) and compared strictly (NaN compares false); dY passes with its bits (a selection).
    x_np, dy = np.asarray(x), np.asarray(gradient)
    if is_int(x_np):
        passes = np.array([int(v) > 0 for v in x_np.ravel()], bool).reshape(x_np.shape)
    else:
        with np.errstate(invalid="ignore"):
            passes = read(x_np) > 0
    return [np.where(passes, dy, np.zeros_like(dy))]


def relu_grad_slopes(x, gradient):
    # Second order: the output is piecewise constant in X (0 away from X = 0) and dY times the
    # mask X > 0.
    with np.errstate(invalid="ignore"):
        return np.zeros(np.shape(x)), np.where(read(x) > 0, 1.0, 0.0)


# ---------------------------------------------------------------------------------------------
def activation_parameterized_relu(x, slope):
    # f(x, slope) = x if x >= 0, slope * x otherwise. Integers: exact, the product wrapped.
    x_np, s_np = np.asarray(x), np.asarray(slope)
    if is_int(x_np):
        vals = [v if v >= 0 else s * v for v, s in zip((int(u) for u in x_np.ravel()), (int(u) for u in s_np.ravel()))]
        return [wrap(vals, x_np.dtype).reshape(x_np.shape)]
    fx, fs = read(x_np), read(s_np)
    with np.errstate(invalid="ignore", over="ignore"):
        return [np.where(fx >= 0, fx, fs * fx)]


def parameterized_relu_slopes(x, slope):
    # d/dx = 1 on the x >= 0 branch, slope otherwise; d/dslope = 0 on the x >= 0 branch, x otherwise.
    fx, fs = read(x), read(slope)
    with np.errstate(invalid="ignore"):
        passes = fx >= 0
    return np.where(passes, 1.0, fs), np.where(passes, 0.0, fx)


REFERENCES = {
    "DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU": Reference(
        activation_parameterized_relu,
        grad=elementwise_vjp(parameterized_relu_slopes),
        near_kink=_near_zero,
    ),
    "DML_OPERATOR_ACTIVATION_RELU_GRAD": Reference(
        activation_relu_grad,
        selection=True,
        grad=elementwise_vjp(relu_grad_slopes),
        near_kink=_near_zero,
    ),
}
