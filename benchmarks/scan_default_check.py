"""Whether CUMULATIVE_PRODUCT's default call runs what the sweep timed: dmljax.cumulative_product
beside ops.cumulative.tally compiled with scan_kernels' settings (read-ahead on and off, two and
four warps), 2^28 elements as rows of 8,192 and 65,536, FLOAT32 and FLOAT16, forward and
reverse, device time against a copy, in one run.

    python benchmarks/scan_default_check.py
"""

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

TOTAL = 2 ** 28


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
                for ahead, warps in ((None, None), (True, 2), (False, 2), (False, 4), (True, 1), (False, 1)):
                    f = compiled_with(scan_kernels, lambda x, r=reverse: tally(x, 1, r, False, True, False), xs[0],
                                      PREFETCH=ahead, PRODUCT_WARPS=warps)
                    fns.append((f"tally PREFETCH={ahead} warps={warps}", f))
                t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
                case = f"{np.dtype(dtype).name} rows of {row} {'reverse' if reverse else 'forward'}"
                for name, v in t.items():
                    print(f"{case:28s} {name:34s} {v['s'] * 1e3:7.3f} ms  {t['copy']['s'] / v['s']:.2f} of copy",
                          flush=True)


if __name__ == "__main__":
    main()
