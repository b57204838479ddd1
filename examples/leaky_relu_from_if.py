"""The ELEMENT_WISE_IF page's composition: LeakyRelu(x) = If(Less(x, 0), Mul(x, alpha), x),
jitted, and its gradient (alpha where x < 0, 1 elsewhere); then DirectML's own
ACTIVATION_LEAKY_RELU, which gives the same bits, and the same gradient.

Run: python examples/leaky_relu_from_if.py
"""

import jax
import jax.numpy as jnp
import numpy as np

import dmljax


def leaky_relu(x, alpha=0.1):
    less = dmljax.element_wise_logical_less_than(x, jnp.zeros_like(x))  # UINT8 condition
    scaled = dmljax.element_wise_multiply(x, jnp.full_like(x, alpha))
    return dmljax.element_wise_if(less, scaled, x)


def main():
    x = jnp.asarray(np.array([-3.0, -1.0, -0.25, -0.0, 0.0, 0.5, 2.0], np.float32))
    y = jax.jit(leaky_relu)(x)
    dy = jax.grad(lambda v: jnp.sum(leaky_relu(v)))(x)
    print("x        ", np.asarray(x).tolist())
    print("leaky    ", np.asarray(y).tolist())
    print("d/dx     ", np.asarray(dy).tolist())
    expected = np.where(np.asarray(x) < 0, np.asarray(x) * np.float32(0.1), np.asarray(x))
    print("matches x if x >= 0 else 0.1 * x:", bool(np.array_equal(np.asarray(y), expected)))
    print("gradient is 0.1 below zero and 1 from zero up:",
          bool(np.array_equal(np.asarray(dy), np.where(np.asarray(x) < 0, np.float32(0.1), np.float32(1.0)))))
    # The same function as one DirectML operator: x if x >= 0 else Alpha * x.
    y1 = jax.jit(lambda v: dmljax.activation_leaky_relu(v, alpha=0.1))(x)
    dy1 = jax.grad(lambda v: jnp.sum(dmljax.activation_leaky_relu(v, alpha=0.1)))(x)
    print("activation_leaky_relu", np.asarray(y1).tolist())
    print("same bits as the composition:", np.asarray(y1).tobytes() == np.asarray(y).tobytes())
    print("same gradient bits:", np.asarray(dy1).tobytes() == np.asarray(dy).tobytes())


if __name__ == "__main__":
    main()
