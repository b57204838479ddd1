"""TOP_K's XLA path with its rows staged in chunks (ops/top_k.py, STAGE_CHUNK) against the
unstaged path and lax.top_k, on a GPU: k = 32, 64 and 256 over FLOAT32 and FLOAT16 rows of
32,768 (2^26 elements), device time (CUPTI) and bandwidth against a copy; each staged result is
checked against the unstaged one, indices bit for bit.

    python benchmarks/top_k_stage_gpu.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.kernel_checks import compiled_with  # noqa: E402
from dmljax._src.ops import top_k as top_k_ops  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

TOTAL, ROW = 2 ** 26, 32768


def main():
    rng = np.random.default_rng(0)
    copy = jax.jit(lambda x: x.copy())
    print(f"jax {jax.__version__}; {jax.devices()[0]}; {TOTAL} elements, rows of {ROW}", flush=True)
    for dtype in (np.float32, np.float16):
        xs = [jax.numpy.asarray((rng.integers(-3000, 3000, (TOTAL // ROW, ROW)) * 0.25).astype(dtype)) for _ in range(2)]
        for k in (32, 64, 256):
            fns = [("copy", copy), ("lax.top_k", jax.jit(lambda x, k=k: jax.lax.top_k(x, k)))]
            for chunk in (None, 1024, 2048, 4096, 8192):
                if chunk is not None and chunk < 2 * k:
                    continue
                fns.append((f"chunks of {chunk}", compiled_with(
                    top_k_ops, lambda x, k=k: top_k_ops.top_k_along(x, 1, k, True, np.int32), xs[0], STAGE_CHUNK=chunk)))
            base = np.asarray(fns[2][1](xs[0])[1])
            for name, f in fns[3:]:
                same = np.array_equal(np.asarray(f(xs[0])[1]), base)
                print(f"{np.dtype(dtype).name} k={k:3d} {name}: indices {'equal' if same else 'DIFFER'}", flush=True)
            t = jax_device_times([(name, lambda i, f=f: f(xs[i % 2])) for name, f in fns], 2)
            for name, v in t.items():
                print(f"{np.dtype(dtype).name:7s} k={k:3d} {name:16s} {v['s'] * 1e3:8.3f} ms  "
                      f"{t['copy']['s'] / 2 / v['s']:.3f} of a copy's read  {v['kernels_per_call']} kernels", flush=True)


if __name__ == "__main__":
    main()
