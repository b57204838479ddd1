"""MAX_POOLING and AVERAGE_POOLING against lax.reduce_window, side by side in one run.

    python benchmarks/pooling/pooling.py [--out DIR] [GROUP ...]     (SMOKE=1: small shapes, any machine)

Groups (default: both):
- ``lax``: 32 x 64 x 112 x 112, FLOAT32 and FLOAT16: MAX_POOLING of 3 x 3 windows every 2 with a
  padding of 1 against lax.reduce_window's float max, and AVERAGE_POOLING of 2 x 2 windows every 2
  against lax.reduce_window's sum over 4, forward and forward+backward (jax.vjp).
- ``max_kernel``: MAX_POOLING forward over 32 x 64 and 31 x 63 planes of 112 x 112 (the second
  gives no whole number of the kernel's blocks), 3 x 3 windows every 2 with a padding of 1 and
  2 x 2 windows every 2: the operator (on a GPU its Pallas kernel takes FLOAT16 windows of 5
  positions or more), the same call with the kernel off (``dmljax.use_kernels(False,
  "max_pooling")``: XLA's reduce_window of integer keys), lax.reduce_window's float max and a copy.

Per-call time (device time where the backend records it: benchmarks/common.py), two input sets.
Writes <group>.json and <group>.md for each group run to DIR (default:
benchmarks/results/<device>/pooling).
"""

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

SHAPES = {"32x64x112x112": (32, 64, 112, 112), "31x63x112x112": (31, 63, 112, 112)}
if common.SMOKE:
    SHAPES = {"2x4x14x14": (2, 4, 14, 14), "3x3x13x13": (3, 3, 13, 13)}
WINDOWS = {"MAX 3x3 stride 2 padding 1": ((3, 3), (2, 2), (1, 1)), "MAX 2x2 stride 2": ((2, 2), (2, 2), (0, 0))}


def max_pool(x, size, strides, pad):
    return dmljax.max_pooling(x, strides=strides, window_size=size, start_padding=pad, end_padding=pad)


def lax_max(x, size, strides, pad):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1) + size, (1, 1) + strides,
                             [(0, 0), (0, 0)] + [(p, p) for p in pad])


def against_lax(report, rng):
    shape = next(iter(SHAPES.values()))
    cases = [("MAX 3x3 stride 2 padding 1", lambda x: max_pool(x, (3, 3), (2, 2), (1, 1)),
              lambda x: lax_max(x, (3, 3), (2, 2), (1, 1))),
             ("AVERAGE 2x2 stride 2", lambda x: dmljax.average_pooling(
                 x, strides=(2, 2), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0), include_padding=False),
              lambda x: (lax.reduce_window(x.astype(jnp.float32), 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2),
                                           "VALID") / 4).astype(x.dtype))]
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
        for label, dml, twin in cases:
            groups = []
            for name, f in (("dmljax", dml), ("lax.reduce_window", twin)):
                fwd = jax.jit(f)
                both = jax.jit(lambda x, f=f: jax.vjp(f, x)[1](f(x)))
                groups += [(f"fwd {name}", lambda i, f=fwd: f(xs[i])), (f"fwd+bwd {name}", lambda i, f=both: f(xs[i]))]
            for name, v in common.times(groups).items():
                report.point(f"{np.dtype(dtype).name:7s} {label:28s} {name:28s} {v['s'] * 1e3:8.4f} ms",
                             dtype=np.dtype(dtype).name, shape=label, variant=name, ms=v["s"] * 1e3,
                             kernels=v["kernels_per_call"], method=v["method"])


def max_kernel(report, rng):
    for dtype in (np.float16, np.float32):
        for shape_label, shape in SHAPES.items():
            xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
            for label, (size, strides, pad) in WINDOWS.items():
                f = lambda x, a=size, s=strides, p=pad: max_pool(x, a, s, p)  # noqa: E731
                with dmljax.use_kernels(False, "max_pooling"):
                    off = common.compiled(f, xs[0])
                fns = [("copy", common.copy), ("lax.reduce_window (float max)",
                                               jax.jit(lambda x, a=size, s=strides, p=pad: lax_max(x, a, s, p))),
                       ("dmljax", jax.jit(f)), ("dmljax, kernel off", off)]
                t = common.times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns])
                twin = t["lax.reduce_window (float max)"]["s"]
                for name, v in t.items():
                    report.point(f"{np.dtype(dtype).name:7s} {shape_label} {label:28s} {name:30s} "
                                 f"{v['s'] * 1e3:7.4f} ms  time(lax)/time(this) {twin / v['s']:.3f}",
                                 dtype=np.dtype(dtype).name, shape=shape_label, window=label, variant=name,
                                 ms=v["s"] * 1e3, kernels=v["kernels_per_call"], method=v["method"])


GROUPS = {"lax": against_lax, "max_kernel": max_kernel}


def main():
    chosen = [a for a in common.arguments()[1] if a in GROUPS] or list(GROUPS)
    report = common.Report("pooling", "per-call time (benchmarks/common.py), two input sets")
    rng = np.random.default_rng(0)
    for group in chosen:
        report.group = group
        GROUPS[group](report, rng)
    report.write()


if __name__ == "__main__":
    main()
