"""First H100 figures for issue 11's reductions and scans (ARGMAX, ARGMIN, CUMULATIVE_SUMMATION,
CUMULATIVE_PRODUCT) against jax.numpy, side by side in one run.

    python benchmarks/reduction_gpu.py OUT_DIR

FLOAT32 and FLOAT16 tensors of 2^28 elements as rows of 1,024 (the issue's cumsum shape) and
reduced over the last axis and over the first; device-side kernel time (CUPTI through
jax.profiler, 20 calls, two input sets) of a copy, dmljax's operator in jit and the jnp formula
in jit (jnp.argmax(..., keepdims=True).astype(uint32), jnp.cumsum, jnp.cumprod). Writes
results.json and results.md.
"""

from __future__ import annotations

import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import dmljax
from dmljax.bench.timing import jax_device_times

TOTAL = int(os.environ.get("REDUCTION_TOTAL", 2 ** 28))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    copy = jax.jit(lambda x: x.copy())
    lines = [f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; jax {jax.__version__}; {jax.devices()[0]}"]
    points = []
    for dtype in (np.float32, np.float16):
        shape = (TOTAL // 1024, 1024)
        xs = [jnp.asarray((rng.standard_normal(shape, dtype=np.float32)).astype(dtype)) for _ in range(2)]
        ps = [jnp.asarray(np.exp2(rng.uniform(-0.01, 0.01, shape)).astype(dtype)) for _ in range(2)]
        cases = []
        for axis in (1, 0):
            cases.append((f"ARGMAX axis {axis}", xs,
                          jax.jit(lambda x, a=axis: dmljax.argmax(x, axes=(a,))),
                          jax.jit(lambda x, a=axis: jnp.argmax(x, axis=a, keepdims=True).astype(jnp.uint32))))
            cases.append((f"ARGMIN axis {axis}", xs,
                          jax.jit(lambda x, a=axis: dmljax.argmin(x, axes=(a,))),
                          jax.jit(lambda x, a=axis: jnp.argmin(x, axis=a, keepdims=True).astype(jnp.uint32))))
        cases.append(("CUMULATIVE_SUMMATION rows of 1024", xs,
                      jax.jit(lambda x: dmljax.cumulative_summation(x, axis=1)),
                      jax.jit(lambda x: jnp.cumsum(x, axis=1))))
        cases.append(("CUMULATIVE_PRODUCT rows of 1024", ps,
                      jax.jit(lambda x: dmljax.cumulative_product(x, axis=1)),
                      jax.jit(lambda x: jnp.cumprod(x, axis=1))))
        for name, inputs, f_dml, f_jnp in cases:
            t = jax_device_times([("copy", lambda i: copy(inputs[i % 2])),
                                  ("dmljax", lambda i, f=f_dml: f(inputs[i % 2])),
                                  ("jnp", lambda i, f=f_jnp: f(inputs[i % 2]))], 2)
            if not t:
                continue
            ms = {k: v["s"] * 1e3 for k, v in t.items()}
            rec = {"op": name, "dtype": np.dtype(dtype).name, "ms": ms,
                   "kernels": {k: v["kernels_per_call"] for k, v in t.items()}}
            points.append(rec)
            lines.append(f"{name:34s} {np.dtype(dtype).name:7s}: copy {ms['copy']:.3f} ms, dmljax {ms['dmljax']:.3f}, "
                         f"jnp {ms['jnp']:.3f}: time(dmljax)/time(jnp) {ms['dmljax'] / ms['jnp']:.3f}, "
                         f"copy/dmljax {ms['copy'] / ms['dmljax']:.2f}")
            print(lines[-1], flush=True)
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump({"points": points, "jax": jax.__version__, "device": str(jax.devices()[0]),
                   "method": "CUPTI kernel durations via jax.profiler, 20 calls, 2 input sets, 2^28 elements"}, fh, indent=1)
    with open(os.path.join(out_dir, "results.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
