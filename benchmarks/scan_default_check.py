"""Whether CUMULATIVE_PRODUCT's default call runs what the sweep timed: dmljax.cumulative_product
beside ops.cumulative.tally compiled with scan_kernels' settings, 2^28 elements as rows of 8,192
and 65,536, FLOAT32 and FLOAT16, forward and reverse, device time against a copy, in one run.
Settings (SCAN_DEFAULT_SETTINGS=tiles for the second list): read-ahead on and off with one, two
and four warps (the pair scan of every element); or the sub-block tile kernel (PRODUCT_SUB 64 and
32) with one, two and four warps and read-ahead on and off, beside the pair scan's kernel
(PRODUCT_SUB 0) with the other defaults. SCAN_DEFAULT_TOTAL: the elements (2^28).

    python benchmarks/scan_default_check.py
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from benchmarks.kernel_checks import compiled_with  # noqa: E402
from dmljax._src import scan_kernels  # noqa: E402
from dmljax._src.ops.cumulative import tally  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

TOTAL = int(os.environ.get("SCAN_DEFAULT_TOTAL", 2 ** 28))
SETTINGS = [{}] + [dict(PREFETCH=a, PRODUCT_WARPS=w, PRODUCT_SUB=0) for a, w in (
    (True, 2), (False, 2), (False, 4), (True, 1), (False, 1))]
if os.environ.get("SCAN_DEFAULT_SETTINGS") == "tiles":
    SETTINGS = [{}, dict(PRODUCT_SUB=0)] + [dict(PRODUCT_SUB=s, PRODUCT_WARPS=w, PREFETCH=a) for s, w, a in (
        (64, 1, True), (64, 1, False), (64, 2, True), (64, 2, False), (64, 4, True), (64, 4, False), (32, 1, True))]
"""tally's settings beside the default ({}): scan_tiles.txt (results/h100_session8/scan_tiles) ran
this list with "SUB=64 WARPS=None PREFETCH=None" and "SUB=32 WARPS=None PREFETCH=None" where {} and
(32, 1, True) are now: there PREFETCH=None read nothing ahead (``if not PREFETCH`` in the loop,
since corrected), so those lines are the defaults without read-ahead."""


def main():
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}; {TOTAL} elements", flush=True)
    for dtype in (np.float32, np.float16):
        flat = [np.exp2(rng.uniform(-0.01, 0.01, TOTAL)).astype(dtype) for _ in range(2)]
        for row in (8192, 65536):
            xs = [jnp.asarray(f.reshape(-1, row)) for f in flat]
            for reverse in (False, True):
                fns = [("copy", jax.jit(lambda x: x.copy())),
                       ("dmljax.cumulative_product", jax.jit(
                           lambda x, r=reverse: dmljax.cumulative_product(x, axis=1, axis_direction=int(r))))]
                for settings in SETTINGS:
                    f = compiled_with(scan_kernels, lambda x, r=reverse: tally(x, 1, r, False, True, False), xs[0],
                                      **settings)
                    fns.append(("tally " + (" ".join(f"{k.removeprefix('PRODUCT_')}={v}" for k, v in settings.items())
                                             or "defaults"), f))
                t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
                case = f"{np.dtype(dtype).name} rows of {row} {'reverse' if reverse else 'forward'}"
                for name, v in t.items():
                    print(f"{case:28s} {name:42s} {v['s'] * 1e3:7.3f} ms  {t['copy']['s'] / v['s']:.2f} of copy",
                          flush=True)


if __name__ == "__main__":
    main()
