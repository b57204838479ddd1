"""MAX_POOLING's values by XLA's float maximum (pooling._float_max, FLOAT_MAX = True) against the
integer keys (FLOAT_MAX = False) on a GPU: the same bits on inputs full of NaN, infinities, signed
zeros and FLOAT32 denormals for several windows, then the device time (CUPTI) of both beside
lax.reduce_window's NaN-propagating max, 32 x 64 x 112 x 112, 3x3 stride 2 padding 1 (issue 12's
case), FLOAT32 and FLOAT16, forward. Exits 1 on any difference.

    python benchmarks/max_pool_gpu.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from benchmarks.kernel_checks import Cases, compiled_with  # noqa: E402
from dmljax._src.ops import pooling  # noqa: E402
from dmljax._src.ops.pooling import Window, max_pool  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

WINDOWS = [Window((3, 3), (2, 2), (1, 1), (1, 1), (1, 1)), Window((2, 2), (2, 2), (1, 1), (0, 0), (0, 0)),
           Window((3, 2), (1, 3), (2, 1), (4, 0), (2, 3)), Window((2, 2), (1, 1), (1, 1), (3, 3), (0, 0))]


def _bits(a):
    a = np.asarray(a)
    return np.where(np.isnan(a), 0, a).view(np.uint16 if a.dtype == np.float16 else np.uint32), np.isnan(a)


def main() -> int:
    rng = np.random.default_rng(3)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    cases = Cases()
    pool = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 1, -1, 2, 1e-40, -1e-40, 65504, -65504])
    for dtype in (np.float32, np.float16):
        for trial in range(4):
            x = rng.choice(pool, (4, 8, 19, 23)).astype(dtype)
            if trial == 1:
                x[:] = np.nan
            if trial == 2:
                x = np.where(rng.random(x.shape) < 0.7, np.nan, x).astype(dtype)
            if trial == 3:
                x = rng.choice(np.array([0.0, -0.0, -1e-40, np.nan]), x.shape).astype(dtype)
            for i, w in enumerate(WINDOWS):
                with cases.case(f"{np.dtype(dtype).name} input {trial} window {i}"):
                    a = compiled_with(pooling, lambda v, w=w: max_pool(v, w), x, FLOAT_MAX=True)(x)
                    b = compiled_with(pooling, lambda v, w=w: max_pool(v, w), x, FLOAT_MAX=False)(x)
                    for p, q in zip(_bits(a), _bits(b)):
                        np.testing.assert_array_equal(p, q)
    w = WINDOWS[0]
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(rng.standard_normal((32, 64, 112, 112), dtype=np.float32).astype(dtype)) for _ in range(2)]
        fns = [("float max (now)", compiled_with(pooling, lambda v: max_pool(v, w), xs[0], FLOAT_MAX=True)),
               ("integer keys (before)", compiled_with(pooling, lambda v: max_pool(v, w), xs[0], FLOAT_MAX=False)),
               ("lax.reduce_window", jax.jit(lambda v: lax.reduce_window(v, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2),
                                                                         [(0, 0), (0, 0), (1, 1), (1, 1)])))]
        t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
        twin = t["lax.reduce_window"]["s"]
        for name, v in t.items():
            print(f"MAX 3x3 s2 p1 {np.dtype(dtype).name}: {name:24s} {v['s'] * 1e3:.4f} ms, {twin / v['s']:.3f}x lax's speed,"
                  f" kernels {v.get('kernels', '?')}", flush=True)
    return cases.summary()


if __name__ == "__main__":
    sys.exit(main())
