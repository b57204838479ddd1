"""A small LSTM classifier built from dmljax operators, beside its jax.numpy twin: LSTM, then GEMM
on the last hidden state, then ACTIVATION_LOG_SOFTMAX and a cross-entropy (an
ELEMENT_WISE_MULTIPLY of the one-hot labels and a REDUCE SUM); the twin is a jax.lax.scan LSTM,
jnp.matmul and jax.nn.log_softmax, from the same weights on the same batches.

Task (generated): sequences of 16 numbers drawn uniformly from [-1, 1]; the label is whether
their sum is positive, so the network has to accumulate the whole sequence in its state.
Accuracy of both networks is printed side by side. Plain gradient descent with momentum.

Run: python examples/train_lstm.py [--steps N]
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import dmljax

SYMBOLS, STEPS, HIDDEN, BATCH = 2, 16, 16, 64


def data(rng, n):
    """``n`` sequences of STEPS numbers, {1, STEPS, n, 1}, and their labels: 1 where the sum is
    positive, else 0."""
    v = rng.uniform(-1, 1, (STEPS, n)).astype(np.float32)
    return v[None, :, :, None], (v.sum(axis=0) > 0).astype(np.int64)


def init(seed=0):
    rng = np.random.default_rng(seed)

    def u(*s, scale):
        return jnp.asarray(rng.uniform(-scale, scale, s).astype(np.float32))
    k = 1 / np.sqrt(HIDDEN)
    return {"w": u(1, 1, 4 * HIDDEN, 1, scale=1.0), "r": u(1, 1, 4 * HIDDEN, HIDDEN, scale=k),
            "b": u(1, 1, 1, 8 * HIDDEN, scale=k), "dense": u(HIDDEN, SYMBOLS, scale=k),
            "bias": jnp.zeros((1, SYMBOLS), jnp.float32)}


# ---------------------------------------------------------------------------------- dmljax
def dml_logits(p, x):
    _, last, _ = dmljax.lstm(x, p["w"], p["r"], p["b"])
    h = last[0, 0]  # {batch, hidden}
    bias = jnp.broadcast_to(p["bias"], (h.shape[0], SYMBOLS))
    return dmljax.activation_log_softmax(dmljax.gemm(h, p["dense"], bias))


def dml_loss(p, x, onehot):
    picked = dmljax.element_wise_multiply(dml_logits(p, x), onehot)
    total = dmljax.reduce(picked, function="SUM", axes=(0, 1))  # {1, 1}: DirectML keeps the axes
    return -total.reshape(()) / x.shape[2]


# ---------------------------------------------------------------------------------- the twin
def jnp_logits(p, x):
    w, r, b = p["w"][0, 0], p["r"][0, 0], p["b"][0, 0, 0]
    proj = x[0] @ w.T + b[:4 * HIDDEN] + b[4 * HIDDEN:]

    def cell(carry, g):
        h, c = carry
        g = g + h @ r.T
        i, o, f, cc = jnp.split(g, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(cc)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), None
    zeros = jnp.zeros((x.shape[2], HIDDEN), jnp.float32)
    (h, _), _ = jax.lax.scan(cell, (zeros, zeros), proj)
    return jax.nn.log_softmax(h @ p["dense"] + p["bias"])


def jnp_loss(p, x, onehot):
    return -jnp.mean(jnp.sum(jnp_logits(p, x) * onehot, axis=1))


def make_step(loss):
    @jax.jit
    def step(p, v, x, onehot, lr=0.1, momentum=0.9):
        value, g = jax.value_and_grad(loss)(p, x, onehot)
        v = jax.tree.map(lambda a, b: momentum * a - lr * b, v, g)
        return jax.tree.map(lambda a, b: a + b, p, v), v, value
    return step


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
    parser.add_argument("--steps", type=positive_int, default=300, help="training steps (default 300)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    test_x, test_y = data(rng, 512)
    nets = {"dmljax": (make_step(dml_loss), dml_logits), "jax.numpy": (make_step(jnp_loss), jnp_logits)}
    state = {k: (init(), jax.tree.map(jnp.zeros_like, init())) for k in nets}
    losses = {k: [] for k in nets}
    for i in range(args.steps):
        x, y = data(rng, BATCH)
        onehot = np.eye(SYMBOLS, dtype=np.float32)[y]
        for k, (step, _) in nets.items():
            p, v = state[k]
            p, v, loss = step(p, v, x, onehot)
            state[k] = (p, v)
            losses[k].append(float(loss))
        if i % max(1, args.steps // 5) == 0 or i == args.steps - 1:
            print(f"step {i:4d}  loss " + "  ".join(f"{k} {losses[k][-1]:.4f}" for k in nets))
    acc = {}
    for k, (_, logits) in nets.items():
        pred = np.asarray(jnp.argmax(logits(state[k][0], test_x), axis=1))
        acc[k] = float(np.mean(pred == test_y))
    print("test accuracy  " + "  ".join(f"{k} {acc[k]:.3f}" for k in nets) + f"  (chance {1 / SYMBOLS:.2f})")
    return losses, acc


if __name__ == "__main__":
    main()
