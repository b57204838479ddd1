"""GEMM against the jax.numpy product a user would write, side by side in one run.

    python benchmarks/gemm/gemm.py [--out DIR]        (GEMM_N=1024: a smaller product; SMOKE=1: 256)

M = N = K = 8192. FLOAT32 (dmljax: true FLOAT32 products, precision HIGHEST) against jnp.matmul
with precision=HIGHEST and with jnp's default precision (TF32 passes on the GPU, which dmljax never
takes); FLOAT16 (dmljax: FLOAT32 accumulation) against jnp.matmul of FLOAT16 (its default
accumulation) and with preferred_element_type=float32 then a cast. Then forward+backward (the
product and both gradients through jax.vjp: 3 products), a check that FLOAT16 accumulates in
FLOAT32 on the device, the relative error of the first 256 rows against float64, and
torch.matmul of FLOAT16 where torch and a GPU are present (CUDA events, 50 calls). Per-call time
(device time where the backend records it: benchmarks/common.py), two input sets; TFLOP/s =
2 M N K / time (x 3 with the gradients). Writes gemm.json and gemm.md to DIR (default:
benchmarks/results/<device>/gemm).
"""

import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

N = int(os.environ.get("GEMM_N", 256 if common.SMOKE else 8192))


def main():
    report = common.Report("gemm", f"M = N = K = {N}; per-call time (benchmarks/common.py), two input sets; "
                           "TFLOP/s = 2 M N K / time (x 3 with the gradients)")
    report.group = "gemm"
    rng = np.random.default_rng(0)
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
        t = common.times([(name, lambda i, f=f: f(*sets[i % 2])) for name, f in fns])
        for name, v in t.items():
            tflops = 2 * N ** 3 / v["s"] / 1e12
            report.point(f"{np.dtype(dtype).name:7s} {name:34s} {v['s'] * 1e3:8.3f} ms  {tflops:6.1f} TFLOP/s",
                         dtype=np.dtype(dtype).name, variant=name, ms=v["s"] * 1e3, tflops=tflops, method=v["method"])
        rows = min(256, N)  # the first rows against float64 on the host (the whole product would take minutes there)
        ref = np.asarray(sets[0][0][:rows], np.float64) @ np.asarray(sets[0][1], np.float64)
        for name, f in fns:
            err = np.linalg.norm(np.asarray(f(*sets[0])[:rows], np.float64) - ref) / np.linalg.norm(ref)
            report.line(f"{np.dtype(dtype).name:7s} {name:34s} relative error {err:.2e} against float64")
    forward_backward(rng, report)
    report.line(accumulation_check())
    torch_line = torch_float16()
    if torch_line:
        report.line(torch_line)
    report.write()


def forward_backward(rng, report):
    """The product and both gradients (jax.vjp, a cotangent of the output's type), jitted: 3 GEMMs."""
    hi = jax.lax.Precision.HIGHEST
    for dtype, variants in (
            (np.float32, [("dmljax.gemm", lambda a, b: dmljax.gemm(a, b)),
                          ("jnp.matmul HIGHEST", lambda a, b: jnp.matmul(a, b, precision=hi))]),
            (np.float16, [("dmljax.gemm", lambda a, b: dmljax.gemm(a, b)),
                          ("dmljax.gemm alpha 0.5", lambda a, b: dmljax.gemm(a, b, alpha=0.5)),
                          ("jnp.matmul", lambda a, b: jnp.matmul(a, b)),
                          ("jnp.matmul FLOAT32 accumulation", lambda a, b: jnp.matmul(
                              a, b, preferred_element_type=jnp.float32).astype(jnp.float16))])):
        sets = [tuple(jnp.asarray(rng.standard_normal((N, N), dtype=np.float32).astype(dtype)) for _ in range(3))
                for _ in range(2)]

        def both(f):
            def run(a, b, dy):
                y, vjp = jax.vjp(f, a, b)
                return y, vjp(dy)
            return jax.jit(run)
        fns = [(name, both(f)) for name, f in variants]
        t = common.times([(name, lambda i, f=f: f(*sets[i % 2])) for name, f in fns])
        for name, v in t.items():
            tflops = 3 * 2 * N ** 3 / v["s"] / 1e12
            report.point(f"{np.dtype(dtype).name:7s} {name + ' fwd+bwd':44s} {v['s'] * 1e3:8.3f} ms  {tflops:6.1f} "
                         f"TFLOP/s (3 products), {v['kernels_per_call']} kernels",
                         dtype=np.dtype(dtype).name, variant=name + " forward+backward", ms=v["s"] * 1e3,
                         tflops=tflops, kernels=v["kernels_per_call"], method=v["method"])


def accumulation_check() -> str:
    """FLOAT16 GEMM accumulates in FLOAT32 on this device: 2048 then 4,095 ones sum to 6,143,
    rounded once to FLOAT16's 6,144; a FLOAT16 accumulator stays at 2048 (2048 + 1 rounds back)."""
    a = np.ones((8, 4096), np.float16)
    a[:, 0] = 2048
    b = np.ones((4096, 8), np.float16)
    y = np.asarray(jax.jit(lambda a, b: dmljax.gemm(a, b))(a, b))
    da, _ = jax.jit(jax.grad(lambda a, b: dmljax.gemm(a, b).astype(jnp.float32).sum(), argnums=(0, 1)))(
        np.ones((8, 8), np.float16), np.ones((8, 4096), np.float16) * 0.25)
    ok = bool((y == 6144).all())
    return (f"FLOAT16 accumulation check: {'ok' if ok else 'FAILED'} (sum of 2048 and 4095 ones: "
            f"{sorted(set(y.ravel().tolist()))}; expected [6144.0]); gradient {float(np.asarray(da)[0, 0])} (expected 1024.0)")


def torch_float16() -> str | None:
    """torch.matmul of FLOAT16 on this GPU (CUDA events over 50 calls), where torch sees one."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    a = torch.randn(N, N, device="cuda", dtype=torch.float16)
    b = torch.randn(N, N, device="cuda", dtype=torch.float16)
    for _ in range(5):
        torch.matmul(a, b)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        torch.matmul(a, b)
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end) / 50
    return f"float16 torch.matmul {torch.__version__:26s} {ms:8.3f} ms  {2 * N ** 3 / ms / 1e9:6.1f} TFLOP/s (CUDA events, 50 calls)"


if __name__ == "__main__":
    main()
