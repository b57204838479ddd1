"""What the element-wise arithmetic references share: the ScaleBias of the generated cases and
exact integer arithmetic on pairs of elements."""

import numpy as np


SB = {"scale_bias": (0.75, -0.5)}


def _exact_ints(a_np, b_np, f):
    """f on each pair as exact Python ints, in an object array of a's shape."""
    return np.array([f(int(x), int(y)) for x, y in zip(a_np.ravel(), b_np.ravel())],
                    dtype=object).reshape(a_np.shape)
