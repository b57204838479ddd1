"""Settings of the TOP_K threshold kernels (dmljax/_src/threshold_kernels.py) on a GPU: 2^26
elements as rows of 32,768 (and 8,192 for FLOAT16, K = 256), FLOAT32 and FLOAT16, K = 8, 16, 32 and 256, device time
(CUPTI) of each variant (group size, warps, chunk) beside a copy, lax.top_k and the path each K
takes without the threshold kernels, each traced afresh from the formula (top_k_along). K = 8 and
16 normally take select_kernels' K steps; here the threshold kernels are also timed there.

    python benchmarks/threshold_kernel_sweep.py [QUICK]   (QUICK: the default settings only, no XLA path)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.kernel_checks import with_settings  # noqa: E402
from dmljax._src import select_kernels as sk  # noqa: E402
from dmljax._src import threshold_kernels as tk  # noqa: E402
from dmljax._src.ops.top_k import top_k_along  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402


def compiled(k, x, select=None, threshold=None):
    """top_k_along (largest k along the last axis), compiled with select_kernels' and
    threshold_kernels' settings changed."""
    f = jax.jit(lambda v: top_k_along(v, 1, k, True, np.uint32))
    with_settings(sk, lambda v: with_settings(tk, lambda w: jax.block_until_ready(f(w)), v, **(threshold or {})),
                  x, **(select or {}))
    return f


SETTINGS = [(16, 8, 512), (32, 4, 512), (16, 4, 512), (16, 8, 1024), (32, 8, 1024), (8, 8, 1024), (32, 4, 1024)]
"""(group, warps, chunk per warp) tried; sweep_1.txt (the first run) tried groups of 8, 16 and 32
with 4, 8 and 16 warps and chunks of 128 to 512 a warp: 16 warps and chunks of 128 were slowest."""


def main():
    quick = len(sys.argv) > 1
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    for n, dtype in ((32768, np.float32), (32768, np.float16), (8192, np.float16)):
        xs = [jnp.asarray(rng.standard_normal((2 ** 26 // n, n), dtype=np.float32).astype(dtype)) for _ in range(2)]
        for k in (8, 16, 32, 256) if n == 32768 else (256,):
            fns = [("copy", jax.jit(lambda x: x.copy())), ("lax.top_k", jax.jit(lambda x, k=k: jax.lax.top_k(x, k)))]
            if not quick:
                fns.append(("without threshold kernels", compiled(k, xs[0], threshold={"ENABLED": False})))
            for g, w, c in [(tk.GROUP, tk.WARPS, tk.CHUNK_PER_WARP)] if quick else SETTINGS:
                if k > n // g // 4:
                    continue
                fns.append((f"group {g:2d} warps {w:2d} chunk/warp {c:4d}", compiled(
                    k, xs[0], select={"ENABLED": False},
                    threshold={"MIN_K": 2, "GROUP": g, "WARPS": w, "CHUNK_PER_WARP": c})))
            # the default settings in parts: the first kernel alone, both kernels (no sort)
            first = jax.jit(lambda x, k=k: tk.best_groups(x, k, True))
            both = jax.jit(lambda x, k=k: tk.best_in_groups(x, tk.best_groups(x, k, True), k, True))
            fns += [("default: first kernel only", first), ("default: both kernels, no sort", both)]
            t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
            copy = t["copy"]["s"]
            for name, v in t.items():
                # a selection reads the row and writes almost nothing: of a copy = (copy time / 2) / time
                print(f"{np.dtype(dtype).name} rows of {n} k={k:3d}: {name:34s} {v['s'] * 1e3:7.3f} ms"
                      f"  of a copy's read {copy / 2 / v['s']:.2f}", flush=True)


if __name__ == "__main__":
    main()
