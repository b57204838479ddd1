"""A transformer block built from dmljax.compose, trained to reverse short token sequences.

Task (generated): sequences of LENGTH tokens drawn uniformly from VOCAB symbols; the target at
position i is the input's token at position LENGTH - 1 - i, so every output has to attend to the
one input its position names. The network, one pre-norm block, each step a composition of
DirectML operators (dmljax.compose) with PyTorch's shapes:

    x = embedding (GATHER) + position (ELEMENT_WISE_ADD, broadcast as zero strides)
    q, k, v = SPLIT(linear(layer_norm(x)))                    linear: GEMM, layer_norm: MEAN_VARIANCE_NORMALIZATION1
    x = x + linear(attention(q, k, v))                        attention: MULTIHEAD_ATTENTION
    x = x + linear(ACTIVATION_GELU(linear(layer_norm(x))))
    loss = cross_entropy(linear(layer_norm(x)), targets)      LOG_SOFTMAX1, GATHER_ELEMENTS, REDUCE, NEGATE

trained with jax.grad and ADAM_OPTIMIZER. The loss and the accuracy (tokens, and whole sequences
reversed without a mistake) on held-out sequences are printed as it trains.

Run: python examples/transformer.py [--steps N] [--no-progress]
(needs tqdm for the progress bar: pip install ".[examples]")
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys

EXTRA = ("tqdm",)  # of the examples extra
if __name__ == "__main__":
    absent = []
    for module in EXTRA:
        try:
            importlib.import_module(module)
        except ImportError:
            absent.append(module)
    if absent:
        sys.exit(f"examples/transformer.py needs {', '.join(absent)}, of the examples extra: pip install \".[examples]\"")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from dmljax import compose  # noqa: E402

VOCAB, LENGTH = 10, 8
WIDTH, HEADS, HIDDEN = 32, 2, 64
BATCH = 64
EPSILON = 1e-5  # the normalizations'


# ------------------------------------------------------------------------------------ data
def data(rng, n):
    """``n`` sequences of LENGTH tokens and their reversals, INT32 [n, LENGTH] each."""
    x = rng.integers(0, VOCAB, (n, LENGTH)).astype(np.int32)
    return x, x[:, ::-1].copy()


def init(seed=0):
    """Scaled normal weights in PyTorch's {out, in} layout, zero biases, unit normalization scales."""
    rng = np.random.default_rng(seed)

    def w(n_out, n_in):
        return (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)

    def zeros(n):
        return np.zeros(n, np.float32)

    def ones(n):
        return np.ones(n, np.float32)

    return {"embed": (rng.standard_normal((VOCAB, WIDTH)) / np.sqrt(VOCAB)).astype(np.float32),
            "position": (0.1 * rng.standard_normal((LENGTH, WIDTH))).astype(np.float32),
            "norm0_scale": ones(WIDTH), "norm0_bias": zeros(WIDTH),
            "qkv": w(3 * WIDTH, WIDTH), "qkv_bias": zeros(3 * WIDTH), "out": w(WIDTH, WIDTH), "out_bias": zeros(WIDTH),
            "norm1_scale": ones(WIDTH), "norm1_bias": zeros(WIDTH),
            "up": w(HIDDEN, WIDTH), "up_bias": zeros(HIDDEN), "down": w(WIDTH, HIDDEN), "down_bias": zeros(WIDTH),
            "norm2_scale": ones(WIDTH), "norm2_bias": zeros(WIDTH),
            "head": w(VOCAB, WIDTH), "head_bias": zeros(VOCAB)}


# ------------------------------------------------------------------------------------ the network
def forward(p, tokens):
    """Logits [n, LENGTH, VOCAB] of each position's output token."""
    x = compose.add(compose.embedding(p["embed"], tokens), p["position"])  # {n, LENGTH, WIDTH}
    h = compose.layer_norm(x, p["norm0_scale"], p["norm0_bias"], epsilon=EPSILON)
    q, k, v = compose.split(compose.linear(h, p["qkv"], p["qkv_bias"]), 3, axis=-1)
    x = compose.add(x, compose.linear(compose.attention(q, k, v, num_heads=HEADS), p["out"], p["out_bias"]))
    h = compose.layer_norm(x, p["norm1_scale"], p["norm1_bias"], epsilon=EPSILON)
    h = compose.gelu(compose.linear(h, p["up"], p["up_bias"]))
    x = compose.add(x, compose.linear(h, p["down"], p["down_bias"]))
    h = compose.layer_norm(x, p["norm2_scale"], p["norm2_bias"], epsilon=EPSILON)
    return compose.linear(h, p["head"], p["head_bias"])


def loss_fn(p, tokens, targets):
    return compose.cross_entropy(forward(p, tokens), targets)


def adam(params, grads, moments, step, lr):
    """ADAM_OPTIMIZER on each parameter, seen as a {1, 1, 1, n} tensor (the page's 4-D)."""
    new_params, new_moments = {}, {}
    t = jnp.full((1, 1, 1, 1), step, jnp.uint32)
    for k, p in params.items():
        m, v = moments[k]
        flat = [compose.reshape(a, (1, 1, 1, -1)) for a in (p, m, v, grads[k])]
        p2, m2, v2 = dmljax.adam_optimizer(*flat, t, learning_rate=lr)
        new_params[k] = compose.reshape(p2, p.shape)
        new_moments[k] = (compose.reshape(m2, p.shape), compose.reshape(v2, p.shape))
    return new_params, new_moments


@functools.partial(jax.jit, static_argnames="lr")  # attributes are static: DirectML fixes them
def train_step(params, moments, step, tokens, targets, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
    params, moments = adam(params, grads, moments, step, lr)
    return params, moments, loss


@jax.jit
def predict(params, tokens):
    return jnp.argmax(forward(params, tokens), axis=-1)


def accuracy(params, tokens, targets):
    """(tokens right, sequences wholly right), as fractions."""
    right = np.asarray(predict(params, tokens)) == targets
    return float(right.mean()), float(right.all(axis=1).mean())


# ------------------------------------------------------------------------------------ main
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
    parser.add_argument("--lr", type=float, default=1e-2, help="ADAM's learning rate (default 0.01)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (logs, tests)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    test_x, test_y = data(rng, 512)
    params = {k: jnp.asarray(v) for k, v in init().items()}
    moments = {k: (jnp.zeros_like(v), jnp.zeros_like(v)) for k, v in params.items()}
    history = {"loss": [], "token_acc": [], "sequence_acc": []}
    steps = range(1, args.steps + 1)
    if not args.no_progress:
        from tqdm import tqdm
        steps = tqdm(steps, desc="training", unit="step")
    report = max(1, args.steps // 5)
    for step in steps:
        x, y = data(rng, BATCH)
        params, moments, loss = train_step(params, moments, step, x, y, lr=args.lr)
        history["loss"].append(float(loss))
        if step % report == 0 or step == args.steps:
            token, sequence = accuracy(params, test_x, test_y)
            history["token_acc"].append(token)
            history["sequence_acc"].append(sequence)
            line = (f"step {step:4d}  loss {history['loss'][-1]:.4f}  held-out accuracy: tokens {token:.3f}, "
                    f"whole sequences {sequence:.3f}")
            (steps.write if hasattr(steps, "write") else print)(line)
    print(f"chance: tokens {1 / VOCAB:.3f}, whole sequences {VOCAB ** -LENGTH:.1e}")
    return history


if __name__ == "__main__":
    main()
