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
    """X's terms: |X| and the step's size (a difference of the two may cancel)."""
    new_x, _, _ = adam_optimizer(x, m, v, g, t, learning_rate, beta1, beta2, epsilon)[0]
    return np.abs(read(x)) + np.abs(read(x) - new_x)


def _inputs(rng, types, shape, **_):
    """Parameters and gradients of either sign; moments whose first has the gradient's sign (so
    that Beta1 * M + (1 - Beta1) * G does not cancel, which no ULP budget of the result could
    bound) and a second moment of at least 0; steps 1 to 9."""
    from tests.catalog import random_tensor
    dt = types["InputParametersTensor"]
    x, g = random_tensor(rng, dt, shape), random_tensor(rng, dt, shape)
    m = (np.abs(random_tensor(rng, dt, shape)) * np.sign(g)).astype(g.dtype)
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
