"""Settings of the TOP_K threshold kernels (dmljax/_src/threshold_kernels.py) on a GPU: 2^26
elements as rows of 32,768, FLOAT32 and FLOAT16, K = 8, 16, 32 and 256, device time
(CUPTI) of each variant (VARIANTS) beside a copy, lax.top_k and the path each K
takes without the threshold kernels, each traced afresh from the formula (top_k_along). K = 8 and
16 normally take select_kernels' K steps; here the threshold kernels are also timed there.

    python benchmarks/threshold_kernel_sweep.py [QUICK | RANK]
        (QUICK: the default settings only, no XLA path; RANK: K = 64, 128 and 256 ordered by the third
        kernel's ranks against XLA's sort, RANK_VARIANTS)
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.kernel_checks import compiled_with_each, with_settings  # noqa: E402
from dmljax._src import select_kernels as sk  # noqa: E402
from dmljax._src import threshold_kernels as tk  # noqa: E402
from dmljax._src.ops.top_k import top_k_along  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402


def compiled(k, x, select=None, threshold=None):
    """top_k_along (largest k along the last axis), compiled with select_kernels' and
    threshold_kernels' settings changed."""
    return compiled_with_each({sk: select or {}, tk: threshold or {}},
                              lambda v: top_k_along(v, 1, k, True, np.uint32), x)


VARIANTS = {
    "default": {},
    "bisection over every bit (NARROW_DTYPES ())": {"NARROW_DTYPES": ()},
    "bisection from two bounds (both types)": {"NARROW_DTYPES": (np.float32, np.float16)},
    "no direct ranking (bisected)": {"DIRECT_MAX": 1},
}
"""threshold_kernels settings tried beside the defaults. sweep_1.txt and sweep_2.txt (the first
runs: one bit a step, ordered by XLA's sort, one group size for every K) tried groups of 8, 16 and
32 with 4, 8 and 16 warps and chunks of 128 to 1,024 a warp: 4 warps, chunks of 1,024 and groups
of 32 were fastest for K up to 32, groups of 8 or 16 for K = 256. sweep_3.txt (4 bits a step by
default) also tried 1 bit, chunks of 512 a warp and groups of 16 only, and stopped after FLOAT32's
K = 32. sweep_4.txt (one bit a step) also tried 8 warps and groups up to 64: slower or the same.
sweep_6.txt (17-bit FLOAT16 keys) tried the K ordered by XLA's sort, groups of 16 at least and 2
bits a step (no better), and rows of 1,024 (3.6x and 3.1x the K steps' time for K = 8).
sweep_7.txt tried chunks of 2,048 and 4,096 a warp, 2 warps with chunks of 2,048 and 8 warps with
chunks of 512: all slower than the defaults or the same. sweep_8.txt: a warp per 512 or 256
candidates in the second kernel changed nothing. ../results/h200_top_k_fused_reverted/sweep_9.txt
(an H200; the forms lived in commit 3a294c3): both kernels in one program after a barrier, and
each group's key from its best value by Triton's float max (one key a group instead of one an
element): slower for every K up to 32 (FLOAT16 K = 16: 0.120 ms against the two kernels' 0.068),
and 0.261 against 0.273 ms at FLOAT32 K = 256: not kept. ../results/h100_session6/top_k/sweep_10.txt:
one count a bisection step (the defaults since), with a warp per 512 or 256 candidates.
sweep_11.txt: groups of 16 at most (fewer candidates for the second kernel at K = 32).
../results/h100_session7/top_k/sweep_12.txt: the second kernel ranking the candidates at or above
the best groups' threshold directly (DIRECT_MAX), against the bisection of their K-th key (and up
to 128 ranked directly, since dropped from the list). ../results/h100_session8/top_k/sweep_13.txt:
the bisection between two bounds (then NARROW, for both types) against the bisection over every
bit ("NARROW False"); now NARROW_DTYPES, FLOAT16's only by default.
../results/h100_session9/rows_per_program/sweep_first.txt (the form lived in commit f0c30de, its
``FIRST`` mode): the first kernel taking 2, 4 or 8 rows a program (each count and scan one
collective for all of them) with 4 or 8 warps: slower everywhere, 1.5x to 4x the first kernel's
time (FLOAT32 K = 256: 0.136 ms with one row and 4 warps, 0.187 with two rows and 8 warps)."""


RANK_VARIANTS = {
    "ranked by the third kernel (default)": {},
    "ordered by XLA's sort (RANK_MAX 0)": {"RANK_MAX": 0},
    "RANK_BLOCK 2048": {"RANK_BLOCK": 2048},
    "RANK_BLOCK 8192": {"RANK_BLOCK": 8192},
    "RANK_WARPS 2": {"RANK_WARPS": 2},
    "RANK_WARPS 8": {"RANK_WARPS": 8},
}


def rank_sweep():
    """K above ORDER_MAX: the whole operator with each of RANK_VARIANTS, and the first kernel alone."""
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    n = 32768
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(rng.standard_normal((2 ** 26 // n, n), dtype=np.float32).astype(dtype)) for _ in range(2)]
        for k in (64, 128, 256):
            fns = [("copy", jax.jit(lambda x: x.copy()))]
            for name, settings in RANK_VARIANTS.items():
                fns.append((name, compiled(k, xs[0], select={"ENABLED": False}, threshold=settings)))
            fns.append(("first kernel only", jax.jit(lambda x, k=k: tk.best_groups(x, k, True))))
            t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
            copy = t["copy"]["s"]
            for name, v in t.items():
                print(f"{np.dtype(dtype).name} rows of {n} k={k:3d}: {name:38s} {v['s'] * 1e3:7.3f} ms"
                      f"  of a copy's read {copy / 2 / v['s']:.2f}", flush=True)


def main():
    if sys.argv[1:] == ["RANK"]:
        return rank_sweep()
    quick = len(sys.argv) > 1
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    for n, dtype, ks in ((32768, np.float32, (8, 16, 32, 256)), (32768, np.float16, (8, 16, 32, 256))):
        xs = [jnp.asarray(rng.standard_normal((2 ** 26 // n, n), dtype=np.float32).astype(dtype)) for _ in range(2)]
        for k in ks:
            fns = [("copy", jax.jit(lambda x: x.copy())), ("lax.top_k", jax.jit(lambda x, k=k: jax.lax.top_k(x, k)))]
            if not quick:
                fns.append(("without threshold kernels", compiled(k, xs[0], threshold={"ENABLED": False})))
            for name, settings in [("default", {})] if quick else VARIANTS.items():
                settings = {"MIN_K": 2, "MIN_ROW": 1024, **settings}
                if not with_settings(tk, lambda: tk.use_kernel(xs[0].shape, 1, k, dtype), **settings):
                    continue
                fns.append((name, compiled(k, xs[0], select={"ENABLED": False}, threshold=settings)))
            # the default settings in parts: the first kernel alone, both kernels (no sort)
            if with_settings(tk, lambda: tk.use_kernel(xs[0].shape, 1, k, dtype), MIN_K=2, MIN_ROW=1024):
                first = jax.jit(lambda x, k=k: tk.best_groups(x, k, True))
                fns.append(("default: first kernel only", first))
            t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
            copy = t["copy"]["s"]
            for name, v in t.items():
                # a selection reads the row and writes almost nothing: of a copy = (copy time / 2) / time
                print(f"{np.dtype(dtype).name} rows of {n} k={k:3d}: {name:34s} {v['s'] * 1e3:7.3f} ms"
                      f"  of a copy's read {copy / 2 / v['s']:.2f}", flush=True)


if __name__ == "__main__":
    main()
