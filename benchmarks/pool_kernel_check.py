"""MAX_POOLING's GPU kernel (dmljax/_src/pool_kernels.py) on a GPU: the compiled kernel against the
XLA path (integer keys, pool_kernels.ENABLED = False, traced afresh), bit for bit, over windows of
NaN only, NaN beside -inf, -0 beside +0 in either order, ties, FLOAT32 denormals, strides,
dilations and padding (FLOAT32 too, which the kernel takes only with DTYPES widened); then the
device time (CUPTI, 20 calls over two input sets) of 32 x 64 x 112 x 112 and 31 x 63 x 112 x 112
(SHAPES), 3 x 3 windows every 2 with a padding of 1 and 2 x 2 windows every 2: the operator, the
XLA path, lax.reduce_window's float max (issue 12's twin) and a copy, with the kernel's settings
varied.

    python benchmarks/pool_kernel_check.py [check|time ...]   (default: both; POOL_CHECK_ON_CPU=1:
                                                                a dry run of the check on the CPU)
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from benchmarks.kernel_checks import Cases, compiled_with  # noqa: E402
from dmljax._src import pool_kernels  # noqa: E402
from dmljax._src.ops.pooling import Window, max_pool  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

ON_CPU = bool(os.environ.get("POOL_CHECK_ON_CPU"))
"""A dry run on the CPU: both paths are XLA's and the kernel is not looked for."""

GEOMETRIES = [  # (size, strides, dilations, start, end)
    ((3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    ((2, 2), (2, 2), (1, 1), (0, 0), (0, 0)),
    ((2, 3), (1, 2), (2, 1), (0, 2), (1, 0)),
    ((1, 2), (1, 1), (1, 1), (0, 3), (2, 4)),
    ((8, 8), (3, 1), (1, 1), (2, 0), (0, 5)),
    ((3, 3), (1, 1), (3, 3), (4, 4), (4, 4)),
]


def _bits(a):
    a = np.asarray(jax.device_get(a))
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def _inputs(rng, dtype):
    x = (rng.integers(-4, 4, (4, 8, 37, 41)) * 0.5).astype(dtype)  # many ties and zeros
    x[0, 0, :3, :] = np.nan
    x[0, 1, 0, :6] = [np.nan, -np.inf, -0.0, 0.0, np.nan, -0.0]
    x[0, 2] = -0.0
    x[0, 2, 3::2, 1::3] = 0.0
    x[1, 0] = -np.inf
    x[1, 0, 4::7, 4::5] = np.nan
    x[2, 3] = rng.standard_normal((37, 41)).astype(dtype)
    if dtype == np.float32:
        x[1, 1, 0, :8] = [1e-40, -1e-40, -0.0, -1e-40, 0.0, 1e-40, -1e-40, -1e-40]
    return x


def check(cases: Cases):
    rng = np.random.default_rng(5)
    for dtype in (np.float16, np.float32):
        x = _inputs(rng, dtype)
        for geometry in GEOMETRIES:
            w = Window(*geometry)
            with cases.case(f"{np.dtype(dtype).name} window {geometry}"):
                f = compiled_with(pool_kernels, lambda v, w=w: max_pool(v, w), x, DTYPES=(np.float16, np.float32), MIN_WINDOW=1)
                assert ON_CPU or "dmljax_max_pool" in f.lower(x).as_text(), "the kernel is not in the program"
                xla = compiled_with(pool_kernels, lambda v, w=w: max_pool(v, w), x, ENABLED=False)
                assert "dmljax_max_pool" not in xla.lower(x).as_text()
                np.testing.assert_array_equal(_bits(f(x)), _bits(xla(x)))
        # windows of (1, 2) every 2 over a row of every ordered pair: each pair's maximum
        values = np.array([np.nan, -np.inf, -0.0, 0.0, -1.0, 1.0, np.inf], dtype)
        row = np.stack(np.meshgrid(values, values), -1).reshape(1, 1, 1, -1)
        w = Window((1, 2), (1, 2), (1, 1), (0, 0), (0, 0))
        with cases.case(f"{np.dtype(dtype).name} every ordered pair of NaN, -inf, -0, +0, -1, 1, inf"):
            f = compiled_with(pool_kernels, lambda v: max_pool(v, w), row, DTYPES=(np.float16, np.float32), MIN_WINDOW=1)
            xla = compiled_with(pool_kernels, lambda v: max_pool(v, w), row, ENABLED=False)
            np.testing.assert_array_equal(_bits(f(row)), _bits(xla(row)))


SETTINGS = {
    "default": {},
    "blocks of 128, 2 warps": {"BLOCK": 128, "WARPS": 2},
    "blocks of 512, 8 warps": {"BLOCK": 512, "WARPS": 8},
}
"""The kernel's settings timed beside the defaults (blocks of 256 and 4 warps, two outputs a
thread; the kernel is timed for every window, though windows of under MIN_WINDOW positions take
XLA's path). results/h100_session6/pool_1.txt tried blocks of 1,024 with 4 warps (the first
default), 2,048, 2 and 8 warps; pool_2.txt blocks of 128 to 2,048 with 1 to 16 warps: two
outputs a thread were fastest for 3 x 3 windows."""


SHAPES = {"": (32, 64, 112, 112), " 31x63": (31, 63, 112, 112)}
"""The inputs timed: 32 x 64 planes give outputs of whole blocks; 31 x 63 do not (1,953 x 56 x 56 =
23,924.25 blocks of 256), so there the kernel's last block is masked (before: its output was
rounded up to whole blocks and sliced after, a copy)."""


def time():
    rng = np.random.default_rng(0)
    for dtype, (shape_label, shape) in [(d, s) for d in (np.float16, np.float32) for s in SHAPES.items()]:
        xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
        for label, geometry in ((f"MAX 3x3 s2 p1{shape_label}", GEOMETRIES[0]), (f"MAX 2x2 s2{shape_label}", GEOMETRIES[1])):
            w = Window(*geometry)
            pad = [(0, 0), (0, 0)] + list(zip(w.start, w.end))
            fns = [("copy", jax.jit(lambda v: v.copy())),
                   ("lax.reduce_window (float max)", jax.jit(lambda v, w=w, pad=pad: lax.reduce_window(
                       v, -jnp.inf, lax.max, (1, 1) + w.size, (1, 1) + w.strides, pad))),
                   ("XLA path (integer keys)", compiled_with(pool_kernels, lambda v, w=w: max_pool(v, w), xs[0],
                                                             ENABLED=False))]
            for name, settings in SETTINGS.items():
                fns.append((f"kernel, {name}", compiled_with(pool_kernels, lambda v, w=w: max_pool(v, w), xs[0],
                                                             DTYPES=(np.float16, np.float32), MIN_WINDOW=1, **settings)))
            t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
            copy, twin = t["copy"]["s"], t["lax.reduce_window (float max)"]["s"]
            for name, v in t.items():
                print(f"{np.dtype(dtype).name} {label}: {name:32s} {v['s'] * 1e3:7.4f} ms  lax/this {twin / v['s']:.3f}"
                      f"  copy/this {copy / v['s']:.3f}", flush=True)


def main() -> int:
    what = sys.argv[1:] or ["check", "time"]
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    status = 0
    if "check" in what:
        cases = Cases()
        check(cases)
        status = cases.summary()
    if "time" in what:
        time()
    return status


if __name__ == "__main__":
    sys.exit(main())
