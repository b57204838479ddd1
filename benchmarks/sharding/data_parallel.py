"""Data-parallel training steps over 1, 2, 4, ... devices, through jax.sharding: examples/
train_cnn.py's CNN and a transformer block (benchmarks/sharding/models.py), both built only from
dmljax operators.

One program over all the devices: ``jax.jit`` with the parameters, running statistics and Adam's
moments replicated (``NamedSharding(mesh, P())``) and the batch split along its first axis
(``P("data")``); XLA inserts the collectives (the gradients' all-reduce, BATCH_NORMALIZATION_
TRAINING's statistics over the whole batch), none is written by hand. Weak scaling: each device
gets the same batch (``--per-device-batch``), so the global batch grows with the devices.

For each network and device count: the median step time of ``--steps`` timed steps (after
``--warmup``), the throughput (samples a second), the speedup of the throughput against one
device's, and the largest difference between the gradients of one global batch computed sharded
and on one device, relative to each parameter's largest gradient (the sums over the batch are
added in another order: DirectML leaves that order open, docs/semantics.md).

    python benchmarks/sharding/data_parallel.py [--devices 1,2,4] [--per-device-batch-cnn N]
        [--per-device-batch-block N] [--steps N] [--warmup N] [--size gpu|tiny] [--out FILE]
        [--cpu-devices N] [--only cnn|block]

The default sizes (--size gpu) keep one H200 busy; the whole run takes about two minutes on
eight GPUs or fewer (each device count compiles each step once). ``--cpu-devices 8 --size tiny``
runs the code on a CPU's virtual devices (the suite's smoke test). Needs optax and tqdm, which
examples/train_cnn.py imports (pip install ".[examples]"); the parameters are updated by dmljax's
ADAM_OPTIMIZER.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import models  # noqa: E402


def _cnn(per_device, tiny):
    import numpy as np

    import train_cnn as cnn

    params, stats = cnn.init(0)
    moments = {k: (np.zeros_like(p), np.zeros_like(p)) for k, p in params.items()}

    def make(n, seed):
        rng = np.random.default_rng(seed)
        x = rng.random((n, 1, 8, 8), dtype=np.float32)
        y = np.eye(cnn.CLASSES, dtype=np.float32)[rng.integers(0, cnn.CLASSES, n)]
        return x, y

    def step(state, batch):
        params, stats, moments, t = state
        params, stats, moments, _ = cnn.dml_step(params, stats, moments, t, *batch, 3e-3)
        return params, stats, moments, t + 1

    def grads(state, batch):
        params, stats = state[0], state[1]
        return __import__("jax").grad(lambda p: cnn.dml_loss(p, stats, *batch)[0])(params)

    return (params, stats, moments, np.int32(1)), make, step, grads


def _block(per_device, tiny):
    import jax
    import numpy as np

    cfg = models.TINY_BLOCK if tiny else models.Block()
    params = models.block_init(cfg)
    moments = {k: (np.zeros_like(p), np.zeros_like(p)) for k, p in params.items()}

    def make(n, seed):
        return models.block_data(cfg, n, seed)

    def step(state, batch):
        params, moments, t = state
        grads = jax.grad(functools.partial(models.block_loss, cfg))(params, *batch)
        params, moments = models.adam(params, grads, moments, t)
        return params, moments, t + 1

    def grads(state, batch):
        return jax.grad(functools.partial(models.block_loss, cfg))(state[0], *batch)

    return (params, moments, np.int32(1)), make, step, grads


NETWORKS = {"cnn": _cnn, "block": _block}


def measure(name, per_device, counts, args):
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    state0, make, step, grads = NETWORKS[name](per_device, args.size == "tiny")
    rows, base = [], None
    for n in counts:
        mesh = Mesh(jax.devices()[:n], ("data",))
        rep, split = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
        batches = [jax.device_put(make(per_device * n, seed), split) for seed in (0, 1)]
        state = jax.device_put(state0, rep)
        jitted = jax.jit(step, in_shardings=(rep, split), out_shardings=rep)
        seconds, _ = models.median_seconds(jitted, state, batches, args.steps, args.warmup)
        throughput = per_device * n / seconds
        base = throughput if n == 1 else base
        # the gradients of one global batch: sharded over n, and on one device
        host_batch = make(per_device * n, 0)
        one = jax.jit(grads)(jax.device_put(state0, jax.devices()[0]), jax.device_put(host_batch, jax.devices()[0]))
        many = jax.jit(grads, in_shardings=(rep, split))(state, batches[0])
        diff = models.max_relative_difference(one, many)
        rows.append([name, n, per_device, f"{seconds * 1e3:.2f}", f"{throughput:,.0f}",
                     f"{throughput / base:.2f}x" if base else "n/a", f"{diff:.1e}"])
    return rows


def options(parser):
    parser.add_argument("--per-device-batch-cnn", type=int, default=None,
                        help="images a device a step (default: 4096; 4 with --size tiny)")
    parser.add_argument("--per-device-batch-block", type=int, default=None,
                        help="sequences a device a step (default: 16 of 256 tokens; 2 with --size tiny)")
    parser.add_argument("--only", choices=tuple(NETWORKS), default=None)


def main(argv=None):
    args, counts = models.setup(argv, __doc__.split("\n\n")[0], options)
    tiny = args.size == "tiny"
    batch = {"cnn": args.per_device_batch_cnn or (4 if tiny else 4096),
             "block": args.per_device_batch_block or (2 if tiny else 16)}
    rows = []
    for name in NETWORKS:
        if args.only in (None, name):
            rows += measure(name, batch[name], counts, args)
    return models.table("Data-parallel training steps (jax.sharding)",
                        ["network", "devices", "per-device batch", "step ms (median)", "samples/s",
                         "speedup vs 1", "grad max rel diff vs 1 device"], rows, args.out)


if __name__ == "__main__":
    main()
