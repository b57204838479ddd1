"""float64 references for the activations GELU, SWISH, HARD_SWISH, PARAMETERIZED_RELU, RELU_GRAD, transcribed from their pages and SEMANTICS.md."""

import numpy as np

from tests.reference.record import Reference
from tests.reference.rules import elementwise_vjp, is_int, read


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


REFERENCES = {
    "DML_OPERATOR_ACTIVATION_RELU_GRAD": Reference(
        activation_relu_grad,
        selection=True,
        grad=elementwise_vjp(relu_grad_slopes),
        near_kink=_near_zero,
    ),
}
