"""CUMULATIVE_PRODUCT's row kernel on a GPU over elements per program (PRODUCT_BLOCK) and warps
(PRODUCT_WARPS): device time of each setting against a copy, forward and reverse, FLOAT32 and
FLOAT16, rows of 1,024 (2^26 elements; SWEEP_TOTAL, SWEEP_ROW, SWEEP_BLOCKS and SWEEP_WARPS
change them). Prints one line per setting, then the best setting per case.

SWEEP_PREFETCH=d,1,0 times each setting of rows longer than a block with scan_kernels.PREFETCH's
default (d: None, by dtype), the next block read ahead (1) and without (0); SWEEP_OP=sum sweeps
CUMULATIVE_SUMMATION's loop instead (the block is its MAX_ROW; its warps are fixed at 8,
SWEEP_WARPS ignored).

    python benchmarks/scan_product_sweep.py
"""

import itertools
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.kernel_checks import compiled_with  # noqa: E402
from dmljax._src import scan_kernels  # noqa: E402
from dmljax._src.ops.cumulative import tally  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

TOTAL = int(os.environ.get("SWEEP_TOTAL", 2 ** 26))
ROW = int(os.environ.get("SWEEP_ROW", 1024))
BLOCKS = tuple(int(b) for b in os.environ.get("SWEEP_BLOCKS", "1024,2048,4096,8192").split(","))
WARPS = tuple(int(w) for w in os.environ.get("SWEEP_WARPS", "1,2,4,8").split(","))
PREFETCH = tuple({"d": None, "1": True, "0": False}[p] for p in os.environ.get("SWEEP_PREFETCH", "d").split(","))
"""None: scan_kernels.PREFETCH as it is. (Until it was corrected, the loop read ahead only where
PREFETCH was true, so "d" with PREFETCH None read nothing ahead: results/h100_session8/scanrev.)"""
SUM = os.environ.get("SWEEP_OP", "product") == "sum"


def main():
    rng = np.random.default_rng(0)
    copy = jax.jit(lambda x: x.copy())
    best = {}
    print(f"jax {jax.__version__}; {jax.devices()[0]}; {TOTAL} elements, rows of {ROW}; "
          f"{'CUMULATIVE_SUMMATION' if SUM else 'CUMULATIVE_PRODUCT'}", flush=True)
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(np.exp2(rng.uniform(-0.01, 0.01, (TOTAL // ROW, ROW))).astype(dtype)) for _ in range(2)]
        for reverse in (False, True):
            fns = [("copy", copy)]
            for block, warps, ahead in itertools.product(BLOCKS, (8,) if SUM else WARPS, PREFETCH):
                if warps * 32 * 2 > max(block, ROW) or (ahead is not None and ROW <= block):
                    continue  # fewer than two elements a thread; a one-block row has no loop
                settings = ({"MAX_ROW": block} if SUM else {"PRODUCT_BLOCK": block, "PRODUCT_WARPS": warps})
                # tally itself: the operator's own call keeps the first program it compiled
                if ahead is not None:
                    settings["PREFETCH"] = ahead
                f = compiled_with(scan_kernels, lambda x, r=reverse: tally(x, 1, r, False, not SUM, False), xs[0],
                                  **settings)
                label = f"block {block:4d} warps {warps}" + {None: "", True: " read ahead", False: " no prefetch"}[ahead]
                fns.append((label, f))
            t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
            case = f"{np.dtype(dtype).name} {'reverse' if reverse else 'forward'}"
            for name, v in t.items():
                frac = t["copy"]["s"] / v["s"]
                print(f"{case:16s} {name:22s} {v['s'] * 1e3:7.3f} ms  {frac:.2f} of copy", flush=True)
                if name != "copy" and frac > best.get(case, ("", 0))[1]:
                    best[case] = (name, frac)
    for case, (name, frac) in best.items():
        print(f"best {case:16s} {name}: {frac:.2f} of copy")


if __name__ == "__main__":
    main()
