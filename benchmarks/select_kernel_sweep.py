"""Warp choices of the TOP_K row kernel (dmljax/_src/select_kernels.py) on a GPU, k = 8,
2^25 elements as rows of 32,768 and of 1,024, FLOAT32: device time (CUPTI) of each variant beside a
copy and lax.top_k, each variant traced afresh from the formula (top_k_along). (select_sweep_8.txt
came from the commit before this form, which also varied the rows per program: one row is best.)

    python benchmarks/select_kernel_sweep.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from dmljax._src import select_kernels as sk  # noqa: E402
from dmljax._src.ops.top_k import top_k_along  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402


def main():
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    for n, variants in ((32768, [(1, 8), (1, 16)]), (1024, [(1, 16), (2, 16)])):
        xs = [jnp.asarray(rng.standard_normal((2 ** 25 // n, n), dtype=np.float32)) for _ in range(2)]
        fns = [("copy", jax.jit(lambda x: x.copy())), ("lax.top_k", jax.jit(lambda x: jax.lax.top_k(x, 8)))]
        for per_1024, most in variants:
            sk.WARPS_PER_1024, sk.MAX_WARPS = per_1024, most
            f = jax.jit(lambda x: top_k_along(x, 1, 8, True, np.uint32))
            jax.block_until_ready(f(xs[0]))  # traced and compiled with these settings
            fns.append((f"{sk._warps(n)} warps a row", f))
        sk.WARPS_PER_1024, sk.MAX_WARPS = 1, 16
        t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
        for name, v in t.items():
            print(f"rows of {n:5d}: {name:24s} {v['s'] * 1e3:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
