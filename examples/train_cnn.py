"""A convolutional network trained on DirectML's semantics, built only from dmljax operators, beside
the same network in plain jax.numpy + optax.

Data: scikit-learn's 8x8 handwritten digits (1,797 images that ship inside the package: no
download), 80% to train, 20% to test. The network:

    CONVOLUTION 3x3 (1 -> 16, padded) -> BATCH_NORMALIZATION_TRAINING -> RELU -> MAX_POOLING 2x2
    CONVOLUTION 3x3 (16 -> 32, padded) -> BATCH_NORMALIZATION_TRAINING -> RELU -> MAX_POOLING 2x2
    GEMM (128 -> 10, + bias) -> LOG_SOFTMAX;  loss = -REDUCE(AVERAGE, REDUCE(SUM, onehot * log p))

trained with jax.grad (each operator's gradient follows DirectML's rules) and ADAM_OPTIMIZER. At
test time the normalizations use running averages of the training batches' statistics through
BATCH_NORMALIZATION (inference). The twin uses lax.conv_general_dilated, jnp's mean/var,
jax.nn.relu, lax.reduce_window, jnp.matmul, jax.nn.log_softmax and optax.adam, from the same
initial weights and the same batches: the two should end at the same accuracy, give or take a
digit.

Run: python examples/train_cnn.py [--epochs N] [--plot PATH] [--limit N]
(needs scikit-learn, optax, matplotlib and tqdm: pip install ".[examples]")
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
import time

EXTRA = ("sklearn", "optax", "matplotlib", "tqdm")  # the examples extra (scikit-learn's module is sklearn)
if __name__ == "__main__":
    absent = []
    for module in EXTRA:
        try:
            importlib.import_module(module)
        except ImportError:
            absent.append(module)
    if absent:
        sys.exit(f"examples/train_cnn.py needs {', '.join(absent)}, of the examples extra: pip install \".[examples]\"")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax import lax  # noqa: E402
from tqdm import tqdm  # noqa: E402

import dmljax  # noqa: E402

CHANNELS = (1, 16, 32)
CLASSES = 10
EPSILON = 1e-5  # the normalizations' epsilon
MOMENTUM = 0.9  # of the running statistics
PAD = dict(start_padding=(1, 1), end_padding=(1, 1))
POOL = dict(strides=(2, 2), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0))


# ------------------------------------------------------------------------------------ data
def digits(seed=0):
    """(train x, train y, test x, test y): images as {N, 1, 8, 8} FLOAT32 in [0, 1]."""
    from sklearn.datasets import load_digits  # the network and its step need neither (benchmarks import them)
    from sklearn.model_selection import train_test_split

    data = load_digits()
    x = (data.images / 16.0).astype(np.float32)[:, None]
    y = data.target.astype(np.int32)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, random_state=seed, stratify=y)
    return xtr, ytr, xte, yte


def init(seed=0):
    """He-normal filters and dense weights, zero biases, unit scales; running statistics 0 and 1."""
    rng = np.random.default_rng(seed)
    params, stats = {}, {}
    for i, (cin, cout) in enumerate(zip(CHANNELS[:-1], CHANNELS[1:])):
        params[f"conv{i}"] = (rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2 / (9 * cin))).astype(np.float32)
        params[f"scale{i}"] = np.ones((1, cout, 1, 1), np.float32)
        params[f"bias{i}"] = np.zeros((1, cout, 1, 1), np.float32)
        stats[f"mean{i}"] = np.zeros((1, cout, 1, 1), np.float32)
        stats[f"var{i}"] = np.ones((1, cout, 1, 1), np.float32)
    features = CHANNELS[-1] * 2 * 2
    params["dense"] = (rng.standard_normal((features, CLASSES)) * np.sqrt(2 / features)).astype(np.float32)
    params["dense_bias"] = np.zeros((1, CLASSES), np.float32)
    return params, stats


def batches(n, size, epochs, seed=0):
    """The same shuffled index batches for both networks (the last partial batch dropped)."""
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(n)
        yield [order[i:i + size] for i in range(0, n - size + 1, size)]


# ------------------------------------------------------------------------------------ dmljax
def dml_forward(params, stats, x, training):
    """Log-probabilities, and (training) each block's batch mean and variance."""
    batch_stats = {}
    for i in range(len(CHANNELS) - 1):
        x = dmljax.convolution(x, params[f"conv{i}"], **PAD)
        if training:
            x, mean, var = dmljax.batch_normalization_training(x, params[f"scale{i}"], params[f"bias{i}"],
                                                               epsilon=EPSILON)
            batch_stats[f"mean{i}"], batch_stats[f"var{i}"] = mean, var
        else:
            x = dmljax.batch_normalization(x, stats[f"mean{i}"], stats[f"var{i}"], params[f"scale{i}"],
                                           params[f"bias{i}"], epsilon=EPSILON)
        x = dmljax.max_pooling(dmljax.activation_relu(x), **POOL)
    x = x.reshape(x.shape[0], -1)
    bias = jnp.broadcast_to(params["dense_bias"], (x.shape[0], CLASSES))  # DirectML never broadcasts implicitly
    return dmljax.activation_log_softmax(dmljax.gemm(x, params["dense"], bias)), batch_stats


def dml_loss(params, stats, x, onehot):
    logp, batch_stats = dml_forward(params, stats, x, training=True)
    picked = dmljax.reduce(dmljax.element_wise_multiply(onehot, logp), function="SUM", axes=(1,))
    loss = dmljax.element_wise_negate(dmljax.reduce(picked, function="AVERAGE", axes=(0,)))
    return loss[0, 0], batch_stats


def dml_adam(params, grads, moments, step, lr):
    """ADAM_OPTIMIZER on each parameter, seen as a {1, 1, 1, n} tensor (the page's 4-D)."""
    new_params, new_moments = {}, {}
    t = jnp.full((1, 1, 1, 1), step, jnp.uint32)
    for k, p in params.items():
        m, v = moments[k]
        flat = [a.reshape(1, 1, 1, -1) for a in (p, m, v, grads[k])]
        p2, m2, v2 = dmljax.adam_optimizer(*flat, t, learning_rate=lr)
        new_params[k] = p2.reshape(p.shape)
        new_moments[k] = (m2.reshape(p.shape), v2.reshape(p.shape))
    return new_params, new_moments


@functools.partial(jax.jit, static_argnames="lr")  # attributes are static: DirectML fixes them
def dml_step(params, stats, moments, step, x, onehot, lr):
    (loss, batch_stats), grads = jax.value_and_grad(dml_loss, has_aux=True)(params, stats, x, onehot)
    params, moments = dml_adam(params, grads, moments, step, lr)
    stats = {k: MOMENTUM * stats[k] + (1 - MOMENTUM) * batch_stats[k] for k in stats}
    return params, stats, moments, loss


@jax.jit
def dml_predict(params, stats, x):
    logp, _ = dml_forward(params, stats, x, training=False)
    return dmljax.argmax(logp, axes=(1,))[:, 0]


# ------------------------------------------------------------------------------------ jnp + optax
def jnp_forward(params, stats, x, training):
    batch_stats = {}
    for i in range(len(CHANNELS) - 1):
        x = lax.conv_general_dilated(x, params[f"conv{i}"], (1, 1), [(1, 1), (1, 1)],
                                     precision=lax.Precision.HIGHEST)
        if training:
            mean = x.mean(axis=(0, 2, 3), keepdims=True)
            var = x.var(axis=(0, 2, 3), keepdims=True)
            batch_stats[f"mean{i}"], batch_stats[f"var{i}"] = mean, var
        else:
            mean, var = stats[f"mean{i}"], stats[f"var{i}"]
        x = (x - mean) / jnp.sqrt(var + EPSILON) * params[f"scale{i}"] + params[f"bias{i}"]
        x = lax.reduce_window(jax.nn.relu(x), -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    x = x.reshape(x.shape[0], -1)
    logits = jnp.matmul(x, params["dense"], precision=lax.Precision.HIGHEST) + params["dense_bias"]
    return jax.nn.log_softmax(logits), batch_stats


def jnp_loss(params, stats, x, onehot):
    logp, batch_stats = jnp_forward(params, stats, x, training=True)
    return -jnp.mean(jnp.sum(onehot * logp, axis=1)), batch_stats


def make_jnp_step(optimizer):
    @jax.jit
    def step(params, stats, opt_state, x, onehot):
        (loss, batch_stats), grads = jax.value_and_grad(jnp_loss, has_aux=True)(params, stats, x, onehot)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        stats = {k: MOMENTUM * stats[k] + (1 - MOMENTUM) * batch_stats[k] for k in stats}
        return params, stats, opt_state, loss
    return step


@jax.jit
def jnp_predict(params, stats, x):
    logp, _ = jnp_forward(params, stats, x, training=False)
    return jnp.argmax(logp, axis=1)


# ------------------------------------------------------------------------------------ training
def train(epochs=12, batch=32, lr=3e-3, limit=None, seed=0, progress=True):
    """Both networks, side by side; returns the per-epoch history and the final accuracies."""
    xtr, ytr, xte, yte = digits(seed)
    if limit:
        xtr, ytr = xtr[:limit], ytr[:limit]
    onehot = np.eye(CLASSES, dtype=np.float32)[ytr]
    params, stats = init(seed)
    dml = dict(params=dict(params), stats=dict(stats), moments={k: (np.zeros_like(p), np.zeros_like(p))
                                                                 for k, p in params.items()})
    optimizer = optax.adam(lr, b1=0.9, b2=0.999, eps=1e-8)
    twin = dict(params=dict(params), stats=dict(stats), opt_state=optimizer.init(params))
    jnp_step = make_jnp_step(optimizer)
    history = {k: [] for k in ("dml_loss", "jnp_loss", "dml_acc", "jnp_acc")}
    step = 0
    seconds = {"dml": [], "jnp": []}  # per step, the first one compiling
    bar = tqdm(list(batches(len(xtr), batch, epochs, seed)), desc="epochs", unit="epoch", disable=not progress)
    for epoch in bar:
        losses = {"dml": [], "jnp": []}
        for idx in epoch:
            step += 1  # ADAM_OPTIMIZER's training step counts from 1 (step 0 would divide 0 by 0)
            start = time.perf_counter()
            dml["params"], dml["stats"], dml["moments"], loss = jax.block_until_ready(dml_step(
                dml["params"], dml["stats"], dml["moments"], step, xtr[idx], onehot[idx], lr))
            seconds["dml"].append(time.perf_counter() - start)
            losses["dml"].append(loss)
            start = time.perf_counter()
            twin["params"], twin["stats"], twin["opt_state"], loss = jax.block_until_ready(jnp_step(
                twin["params"], twin["stats"], twin["opt_state"], xtr[idx], onehot[idx]))
            seconds["jnp"].append(time.perf_counter() - start)
            losses["jnp"].append(loss)
        history["dml_loss"].append(float(np.mean(losses["dml"])))
        history["jnp_loss"].append(float(np.mean(losses["jnp"])))
        history["dml_acc"].append(float(np.mean(np.asarray(dml_predict(dml["params"], dml["stats"], xte)) == yte)))
        history["jnp_acc"].append(float(np.mean(np.asarray(jnp_predict(twin["params"], twin["stats"], xte)) == yte)))
        bar.set_postfix(dmljax=f"{history['dml_acc'][-1]:.3f}", jnp=f"{history['jnp_acc'][-1]:.3f}")
    return history, seconds


def plot(history, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    epochs = np.arange(1, len(history["dml_loss"]) + 1)
    left.plot(epochs, history["dml_loss"], "o-", label="dmljax")
    left.plot(epochs, history["jnp_loss"], "x--", label="jax.numpy + optax")
    left.set(xlabel="epoch", ylabel="training loss (mean over the epoch)", yscale="log")
    right.plot(epochs, history["dml_acc"], "o-", label="dmljax")
    right.plot(epochs, history["jnp_acc"], "x--", label="jax.numpy + optax")
    right.set(xlabel="epoch", ylabel="test accuracy")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("A CNN on scikit-learn's 8x8 digits, trained with DirectML's semantics")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--limit", type=int, default=None, help="train on the first N training images only")
    parser.add_argument("--plot", default="train_cnn.png", help="where to write the loss and accuracy curves")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    history, seconds = train(epochs=args.epochs, limit=args.limit, progress=not args.no_progress)
    plot(history, args.plot)
    steps = len(seconds["dml"])
    for key, name in (("dml", "dmljax"), ("jnp", "jax.numpy + optax")):
        print(f"{name:18s} {sum(seconds[key]):5.1f} s for {steps} steps ({seconds[key][0]:.1f} s the first, compiling; "
              f"then {1e3 * float(np.median(seconds[key][1:] or [0])):.2f} ms a step)")
    print(f"test accuracy: dmljax {history['dml_acc'][-1]:.4f}   jax.numpy + optax {history['jnp_acc'][-1]:.4f}")
    print(f"final training loss: dmljax {history['dml_loss'][-1]:.4f}   jax.numpy + optax {history['jnp_loss'][-1]:.4f}")
    print(f"curves written to {args.plot}")
    return history


if __name__ == "__main__":
    main()
