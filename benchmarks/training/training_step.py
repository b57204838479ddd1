"""One training step of examples/train_cnn.py's network (two CONVOLUTION + BATCH_NORMALIZATION_TRAINING
+ RELU + MAX_POOLING blocks, GEMM, LOG_SOFTMAX, ADAM_OPTIMIZER; FLOAT32) against its jax.numpy +
optax twin from the same example, side by side in one run.

    python benchmarks/training/training_step.py [--out DIR]   (needs optax and tqdm, as the example does)

Batches of 32 and 512 8 x 8 images, the parameters, statistics and optimizer state already on the
device (as in a training loop). Per-call time of the whole step (device time where the backend
records it: the sum of the step's kernel durations, with the kernels counted: benchmarks/common.py),
two input sets. Writes training_step.json and training_step.md to DIR (default:
benchmarks/results/<device>/training).
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parents[2]), str(HERE.parents[2] / "examples")]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import common  # noqa: E402
import train_cnn as cnn  # noqa: E402

LR = 3e-3


def main():
    report = common.Report("training", "per-call time of one step (benchmarks/common.py), two input sets")
    report.group = "training_step"
    rng = np.random.default_rng(0)
    params, stats = cnn.init(0)
    moments = {k: (np.zeros_like(p), np.zeros_like(p)) for k, p in params.items()}
    optimizer = optax.adam(LR)
    jnp_step = cnn.make_jnp_step(optimizer)
    opt_state = optimizer.init(params)
    params, stats, moments, opt_state = jax.device_put((params, stats, moments, opt_state))
    for batch in (4,) if common.SMOKE else (32, 512):
        x = [jnp.asarray(rng.random((batch, 1, 8, 8), dtype=np.float32)) for _ in range(2)]
        step = jnp.asarray(1, jnp.int32)
        onehot = jnp.asarray(np.eye(cnn.CLASSES, dtype=np.float32)[rng.integers(0, cnn.CLASSES, batch)])
        groups = [("dmljax step", lambda i: cnn.dml_step(params, stats, moments, step, x[i], onehot, LR)),
                  ("jnp + optax step", lambda i: jnp_step(params, stats, opt_state, x[i], onehot))]
        for name, v in common.times(groups).items():
            report.point(f"batch {batch:4d} {name:18s} {v['s'] * 1e3:8.4f} ms  kernels {v['kernels_per_call']}",
                         batch=batch, variant=name, ms=v["s"] * 1e3, kernels=v["kernels_per_call"],
                         method=v["method"])
    report.write()


if __name__ == "__main__":
    main()
