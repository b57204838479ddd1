"""Data-parallel training over every device: examples/train_cnn.py's network (built only from
dmljax operators) trained with its batch split across the devices by jax.sharding.

One program runs on all the devices (`jax.jit` with shardings): the parameters, the running
statistics and Adam's moments are replicated (`NamedSharding(mesh, P())`), each batch is split
along its first axis (`P("data")`), and XLA inserts the collectives (the gradients' all-reduce,
BATCH_NORMALIZATION_TRAINING's statistics over the whole batch); none is written by hand. The
model is the same function as on one device: its batch statistics are over the global batch, so
one sharded step gives one device's step, up to the order in which the sums over the batch are
added (``--check`` measures the difference).

On a machine with one GPU (or none), `--cpu-devices N` splits the CPU into N virtual devices
(XLA's host platform device count), which is how the test suite runs this on 8 devices.

Run: python examples/train_sharded.py [--cpu-devices N] [--epochs N] [--batch-per-device N]
                                      [--limit N] [--check]
(needs scikit-learn, optax, matplotlib and tqdm, as examples/train_cnn.py: pip install ".[examples]")
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

EXTRA = ("sklearn", "optax", "matplotlib", "tqdm")  # train_cnn.py's, whose network this trains
if __name__ == "__main__":
    absent = []
    for module in EXTRA:
        try:
            importlib.import_module(module)
        except ImportError:
            absent.append(module)
    if absent:
        sys.exit(f"examples/train_sharded.py needs {', '.join(absent)}, of the examples extra: "
                 "pip install \".[examples]\"")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_cnn  # noqa: E402  (the network, its step and the data)


def mesh_of(devices=None) -> Mesh:
    """The devices (default: all of them) as one mesh axis, "data"."""
    return Mesh(np.array(devices if devices is not None else jax.devices()), ("data",))


def sharded_step(mesh: Mesh, lr: float):
    """train_cnn's step (forward, jax.grad, ADAM_OPTIMIZER, running statistics) compiled for
    ``mesh``: state replicated, the batch split along its first axis."""
    replicated = NamedSharding(mesh, P())
    split = NamedSharding(mesh, P("data"))

    def step(params, stats, moments, t, x, onehot):
        return train_cnn.dml_step(params, stats, moments, t, x, onehot, lr)

    return jax.jit(step, in_shardings=(replicated, replicated, replicated, replicated, split, split),
                   out_shardings=replicated, donate_argnums=(0, 1, 2))


def gradients(params, stats, x, onehot):
    """The loss's gradient with respect to every parameter (for ``--check``)."""
    return jax.grad(lambda p: train_cnn.dml_loss(p, stats, x, onehot)[0])(params)


def check(mesh: Mesh, params, stats, x, onehot) -> float:
    """The largest difference between the gradients of one batch computed sharded over ``mesh``
    and on one device, relative to the largest gradient of each parameter."""
    one = jax.jit(gradients)(params, stats, x, onehot)
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    many = jax.jit(gradients, in_shardings=(replicated, replicated, split, split))(params, stats, x, onehot)
    return max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(float(np.max(np.abs(np.asarray(a)))), 1e-30))
               for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(many)))


def train(epochs=3, batch_per_device=32, lr=3e-3, limit=None, seed=0, do_check=False, devices=None):
    """Trains the network data-parallel over ``devices``; returns (history, seconds a step, the
    gradient check's relative difference or None)."""
    mesh = mesh_of(devices)
    n = mesh.devices.size
    batch = batch_per_device * n
    xtr, ytr, xte, yte = train_cnn.digits(seed)
    if limit:
        xtr, ytr = xtr[:limit], ytr[:limit]
    if len(xtr) < batch:
        raise SystemExit(f"train_sharded.py: {len(xtr)} training images are fewer than one batch of "
                         f"{batch} ({batch_per_device} per device x {n} devices): ask for a smaller "
                         f"--batch-per-device or a larger --limit")
    onehot = np.eye(train_cnn.CLASSES, dtype=np.float32)[ytr]
    params, stats = train_cnn.init(seed)
    moments = {k: (np.zeros_like(p), np.zeros_like(p)) for k, p in params.items()}
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    params, stats, moments = jax.device_put((params, stats, moments), replicated)
    difference = None
    if do_check:
        first = np.arange(batch)
        difference = check(mesh, params, stats, xtr[first], onehot[first])
    step_fn = sharded_step(mesh, lr)
    history = {"loss": [], "accuracy": []}
    seconds, t = [], 0
    for epoch in train_cnn.batches(len(xtr), batch, epochs, seed):
        losses = []
        for idx in epoch:
            t += 1  # ADAM_OPTIMIZER counts steps from 1
            x, y = jax.device_put((xtr[idx], onehot[idx]), split)  # each device gets its slice
            start = time.perf_counter()
            params, stats, moments, loss = jax.block_until_ready(step_fn(params, stats, moments, t, x, y))
            seconds.append(time.perf_counter() - start)
            losses.append(float(loss))
        history["loss"].append(float(np.mean(losses)))
        predicted = np.asarray(train_cnn.dml_predict(params, stats, xte))
        history["accuracy"].append(float(np.mean(predicted == yte)))
    return history, seconds, difference


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-devices", type=int, default=None,
                        help="split the CPU into N virtual devices and train on them (before JAX starts)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-per-device", type=int, default=32)
    parser.add_argument("--limit", type=int, default=None, help="train on the first N training images only")
    parser.add_argument("--check", action="store_true",
                        help="compare one batch's gradients, sharded and on one device, first")
    args = parser.parse_args(argv)
    devices = None
    if args.cpu_devices is not None:
        if args.cpu_devices < 1:
            parser.error(f"--cpu-devices is {args.cpu_devices}; it must be 1 or more")
        jax.config.update("jax_num_cpu_devices", args.cpu_devices)
        devices = jax.devices("cpu")
    history, seconds, difference = train(epochs=args.epochs, batch_per_device=args.batch_per_device,
                                         limit=args.limit, do_check=args.check, devices=devices)
    used = devices if devices is not None else jax.devices()
    print(f"{len(used)} devices ({used[0].device_kind}), {args.batch_per_device} images each a step")
    if difference is not None:
        print(f"gradients sharded vs one device: largest difference {difference:.2e} of the largest gradient")
    for epoch, (loss, acc) in enumerate(zip(history["loss"], history["accuracy"]), 1):
        print(f"epoch {epoch}: training loss {loss:.4f}, test accuracy {acc:.4f}")
    print(f"{len(seconds)} steps, {seconds[0]:.1f} s the first (compiling), then "
          f"{1e3 * float(np.median(seconds[1:] or [0])):.2f} ms a step")
    return history


if __name__ == "__main__":
    main()
