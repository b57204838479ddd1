"""Float64 reference of the training family (ADAM_OPTIMIZER), from its page's pseudocode, line by
line; the hyperparameters are FLOAT (float32) values, the inputs as math reads them."""

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import read


def adam_optimizer(x, m, v, g, t, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8, half=False):
    lr, b1, b2, eps = (float(np.float32(a)) for a in (learning_rate, beta1, beta2, epsilon))
    x, m, v, g = (read(a) for a in (x, m, v, g))
    step = float(np.asarray(t).reshape(()))
    m = b1 * m + (1.0 - b1) * g
    v = b2 * v + (1.0 - b2) * g * g
    alpha = np.sqrt(1.0 - b2 ** step) / (1.0 - b1 ** step)
    x = x - lr * alpha * m / (np.sqrt(v) + eps)
    return [(x, m, v)]


def _magnitude(x, m, v, g, t, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8, half=False):
    """The sizes of each output's terms, before they cancel: |Beta1 M| + |(1 - Beta1) G| for M,
    the same for V, |X| + the step's size for X, the step counted with the conditioning of
    Alpha's 1 - pow(Beta, T) (a FLOAT32 pow's last-bit error in Beta^T, near 1 at small T, is
    Beta^T / (1 - Beta^T) times larger relative to the difference: 1000 for 0.999 at T = 1)."""
    lr, b1, b2, eps = (float(np.float32(a)) for a in (learning_rate, beta1, beta2, epsilon))
    x, m, v, g = (read(a) for a in (x, m, v, g))
    step = float(np.asarray(t).reshape(()))
    m_size = np.abs(b1 * m) + np.abs((1.0 - b1) * g)
    v_size = np.abs(b2 * v) + np.abs((1.0 - b2) * g * g)
    with np.errstate(all="ignore"):
        alpha = np.sqrt(1.0 - b2 ** step) / (1.0 - b1 ** step)
        v_new = b2 * v + (1.0 - b2) * g * g
        condition = 1.0 + b2 ** step / (1.0 - b2 ** step) + b1 ** step / (1.0 - b1 ** step)
        x_size = np.abs(x) + condition * lr * abs(alpha) * m_size / (np.sqrt(np.abs(v_new)) + eps)
    return x_size, m_size, v_size


def _inputs(rng, types, shape, **_):
    """Parameters, gradients and first moments of either sign (the budgets count the terms
    before they cancel), a second moment of at least 0 (a square's average); steps 1 to 9."""
    from tests.catalog import random_tensor
    dt = types["InputParametersTensor"]
    x, g = random_tensor(rng, dt, shape), random_tensor(rng, dt, shape)
    m = random_tensor(rng, dt, shape)
    v = np.abs(random_tensor(rng, dt, shape))
    step = np.full((1,) * len(shape), rng.integers(1, 10), np.uint32)
    return [x, m, v, g, step]


def _shape(shape):
    return (1,) * (4 - len(shape)) + tuple(shape) if len(shape) < 4 else shape


REFERENCES = {
    "DML_OPERATOR_ADAM_OPTIMIZER": Reference(
        adam_optimizer, attrs=(Attrs({"learning_rate": 0.01}),
                               Attrs({"learning_rate": 0.5, "beta1": 0.5, "beta2": 0.75, "epsilon": 0.25})),
        make_inputs=_inputs, magnitude=_magnitude, multiply_add=True, no_grad="an optimizer step: its outputs are not differentiated",
        shape=_shape),
}
