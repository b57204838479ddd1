"""BATCH_NORMALIZATION_TRAINING against the jax.numpy formula a user would write (mean, variance,
normalize, in FLOAT32), forward and forward+backward, side by side in one run.

    python benchmarks/normalization/batch_normalization.py [--out DIR]   (SMOKE=1: small shapes, any machine)

Batch 32 x 64 channels x 56 x 56 and 32 x 256 x 14 x 14, FLOAT32 and FLOAT16, statistics over the
batch and the spatial axes (epsilon 1e-5). Per-call time (device time where the backend records it:
benchmarks/common.py), two input sets; GB/s counts the input read once and the output written
once. Writes batch_normalization.json and batch_normalization.md to DIR (default:
benchmarks/results/<device>/normalization).
"""

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

EPSILON = 1e-5
SHAPES = [(2, 4, 6, 6)] if common.SMOKE else [(32, 64, 56, 56), (32, 256, 14, 14)]


def twin(x, scale, bias):
    """The formula a jax.numpy user would write (FLOAT32 statistics)."""
    xf = x.astype(jnp.float32)
    mean = xf.mean(axis=(0, 2, 3), keepdims=True)
    var = xf.var(axis=(0, 2, 3), keepdims=True)
    y = (xf - mean) / jnp.sqrt(var + EPSILON) * scale.astype(jnp.float32) + bias.astype(jnp.float32)
    return y.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)


def dml(x, scale, bias):
    return dmljax.batch_normalization_training(x, scale, bias, epsilon=EPSILON)


def main():
    report = common.Report("normalization", "per-call time (benchmarks/common.py), two input sets; "
                           "GB/s = (input + output bytes) / time")
    report.group = "batch_normalization"
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float16):
        for shape in SHAPES:
            c = shape[1]
            x = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
            s = jnp.asarray(rng.standard_normal((1, c, 1, 1), dtype=np.float32).astype(dtype))
            b = jnp.asarray(rng.standard_normal((1, c, 1, 1), dtype=np.float32).astype(dtype))
            groups = []
            for name, f in (("dmljax", dml), ("jnp formula", twin)):
                fwd = jax.jit(f)
                both = jax.jit(lambda x, s, b, f=f: jax.vjp(lambda *a: f(*a)[0], x, s, b)[1](x))
                groups += [(f"fwd {name}", lambda i, f=fwd: f(x[i], s, b)),
                           (f"fwd+bwd {name}", lambda i, f=both: f(x[i], s, b))]
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            label = "x".join(map(str, shape))
            for name, v in common.times(groups).items():
                gbps = 2 * nbytes / v["s"] / 1e9
                report.point(f"{np.dtype(dtype).name:7s} {label:14s} {name:22s} {v['s'] * 1e3:8.4f} ms  {gbps:7.1f} GB/s",
                             dtype=np.dtype(dtype).name, shape=label, variant=name, ms=v["s"] * 1e3, gbps_in_out=gbps,
                             kernels=v["kernels_per_call"], method=v["method"])
    report.write()


if __name__ == "__main__":
    main()
