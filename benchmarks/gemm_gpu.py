"""GEMM on a GPU against the jax.numpy formula a user would write, side by side in one run.

    python benchmarks/gemm_gpu.py OUT_DIR

8192^3 in FLOAT32 (dmljax: true FLOAT32 products, precision HIGHEST) against jnp.matmul with
precision=HIGHEST and with jnp's default precision (TF32 passes on the GPU, which dmljax never
takes), and in FLOAT16 (dmljax: FLOAT32 accumulation) against jnp.matmul of FLOAT16 (its default
accumulation) and with preferred_element_type=float32 then a cast. Device-side kernel time (CUPTI),
20 calls over two input sets; TFLOP/s = 2 M N K / time. Writes results.json and results.md.
"""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

N = int(os.environ.get("GEMM_N", 8192))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    lines = [f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; jax {jax.__version__}; {jax.devices()[0]}; "
             f"M = N = K = {N}"]
    print(lines[0], flush=True)
    points = []
    hi = jax.lax.Precision.HIGHEST
    for dtype, variants in (
            (np.float32, [("dmljax.gemm", lambda a, b: dmljax.gemm(a, b)),
                          ("jnp.matmul HIGHEST", lambda a, b: jnp.matmul(a, b, precision=hi)),
                          ("jnp.matmul default (TF32)", lambda a, b: jnp.matmul(a, b))]),
            (np.float16, [("dmljax.gemm", lambda a, b: dmljax.gemm(a, b)),
                          ("jnp.matmul", lambda a, b: jnp.matmul(a, b)),
                          ("jnp.matmul FLOAT32 accumulation", lambda a, b: jnp.matmul(
                              a, b, preferred_element_type=jnp.float32).astype(jnp.float16))])):
        sets = [(jnp.asarray(rng.standard_normal((N, N), dtype=np.float32).astype(dtype)),
                 jnp.asarray(rng.standard_normal((N, N), dtype=np.float32).astype(dtype))) for _ in range(2)]
        fns = [(name, jax.jit(f)) for name, f in variants]
        for _, f in fns:
            jax.block_until_ready(f(*sets[0]))
        t = jax_device_times([(name, lambda i, f=f: f(*sets[i % 2])) for name, f in fns], 2)
        for name, v in t.items():
            tflops = 2 * N ** 3 / v["s"] / 1e12
            points.append({"dtype": np.dtype(dtype).name, "variant": name, "ms": v["s"] * 1e3, "tflops": tflops})
            lines.append(f"{np.dtype(dtype).name:7s} {name:34s} {v['s'] * 1e3:8.3f} ms  {tflops:6.1f} TFLOP/s")
            print(lines[-1], flush=True)
        rows = 256  # the first rows against float64 on the host (the whole product would take minutes there)
        ref = np.asarray(sets[0][0][:rows], np.float64) @ np.asarray(sets[0][1], np.float64)
        for name, f in fns:
            err = np.linalg.norm(np.asarray(f(*sets[0])[:rows], np.float64) - ref) / np.linalg.norm(ref)
            lines.append(f"{np.dtype(dtype).name:7s} {name:34s} relative error {err:.2e} against float64")
            print(lines[-1], flush=True)
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump({"points": points, "jax": jax.__version__, "device": str(jax.devices()[0]), "n": N,
                   "method": "CUPTI kernel durations via jax.profiler, 20 calls, 2 input sets"}, fh, indent=1)
    with open(os.path.join(out_dir, "results.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
