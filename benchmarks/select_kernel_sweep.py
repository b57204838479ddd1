"""Segment and group sizes of the TOP_K row kernel (dmljax/_src/select_kernels.py) on a GPU, k = 8
and 16, 2^26 elements as rows of 32,768, FLOAT32 and FLOAT16: device time (CUPTI) of each variant
beside a copy and lax.top_k, each traced afresh from the formula (top_k_along).
(select_sweep_8.txt came from an earlier form, which varied rows and warps per program: one row,
a warp per 1,024 elements, is best.)

    python benchmarks/select_kernel_sweep.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.kernel_checks import compiled_with  # noqa: E402
from dmljax._src import select_kernels as sk  # noqa: E402
from dmljax._src.ops.top_k import top_k_along  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    n = 32768
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(rng.standard_normal((2 ** 26 // n, n), dtype=np.float32).astype(dtype)) for _ in range(2)]
        for k in (8, 16):
            fns = [("copy", jax.jit(lambda x: x.copy())), ("lax.top_k", jax.jit(lambda x, k=k: jax.lax.top_k(x, k)))]
            for segment, group in ((1024, 8), (1024, 16), (2048, 8), (2048, 16), (4096, 16), (4096, 32)):
                f = compiled_with(sk, lambda x, k=k: top_k_along(x, 1, k, True, np.uint32), xs[0],
                                  SEGMENT=segment, GROUP=group)
                fns.append((f"segments of {segment}, groups of {group}", f))
            t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
            for name, v in t.items():
                print(f"{np.dtype(dtype).name} rows of {n} k={k:2d}: {name:30s} {v['s'] * 1e3:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
