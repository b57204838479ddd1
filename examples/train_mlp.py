"""A small MLP trained with DirectML semantics: jnp matmuls, SCALED_ELU activations, and an
epsilon-insensitive squared loss built from THRESHOLD and CONSTANT_POW:
    loss = mean(pow(max(|pred - y| - 0.05, 0), 2))
Data: y = sin(3x) + 0.5 x^2 on generated points. Plain gradient descent with momentum.

Run: python examples/train_mlp.py [--steps N]
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import dmljax

EPSILON = 0.05


def init(key, sizes=(1, 32, 32, 1)):
    params = []
    for k, (m, n) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
        params.append((jax.random.normal(k, (m, n), jnp.float32) / np.sqrt(m), jnp.zeros((n,), jnp.float32)))
    return params


def forward(params, x):
    for w, b in params[:-1]:
        x = dmljax.activation_scaled_elu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def loss_fn(params, x, y):
    err = jnp.abs(forward(params, x) - y)
    beyond = dmljax.element_wise_threshold(err, min=0.0, scale_bias=dmljax.ScaleBias(1.0, -EPSILON))
    return jnp.mean(dmljax.element_wise_constant_pow(beyond, exponent=2))


@jax.jit
def step(params, velocity, x, y, lr=0.01, momentum=0.9):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    velocity = jax.tree.map(lambda v, g: momentum * v - lr * g, velocity, grads)
    params = jax.tree.map(lambda p, v: p + v, params, velocity)
    return params, velocity, loss


def positive_int(text):
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive; give 1 or more")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=600, help="training steps (default 600)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, (256, 1)).astype(np.float32)
    y = (np.sin(3 * x) + 0.5 * x**2).astype(np.float32)
    params = init(jax.random.key(0))
    velocity = jax.tree.map(jnp.zeros_like, params)
    first = None
    for i in range(args.steps + 1):
        params, velocity, loss = step(params, velocity, x, y)
        loss = float(loss)
        first = loss if first is None else first
        if i % max(1, args.steps // 6) == 0:
            mae = float(jnp.mean(jnp.abs(forward(params, x) - y)))
            print(f"step {i:4d}  loss {loss:.6f}  mean |pred - y| {mae:.4f}")
    pred = forward(params, x)
    # THRESHOLD maps NaN to Min (DirectML's rule), so a diverged network would show a loss of 0:
    # check the predictions themselves.
    if not bool(jnp.isfinite(pred).all()):
        raise SystemExit("training diverged: predictions are not finite")
    print(f"loss went from {first:.6f} to {loss:.6f} ({'down' if loss < first else 'NOT down'})")
    return first, loss


if __name__ == "__main__":
    main()
