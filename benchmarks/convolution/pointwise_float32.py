"""Why a FLOAT32 1 x 1 convolution with NCHW memory trails torch forward: the same matrix product
by cuBLAS (torch.matmul, jnp.matmul) against cuDNN's convolution (torch), for ResNet-50's
unit-stride 1 x 1 shapes.

    python benchmarks/convolution/pointwise_float32.py [--out DIR] [--batch 128]   (SMOKE=1: small shapes)

A 1 x 1 convolution of NCHW memory is one product an image, W {O, C} times X {C, H * W}. Per shape,
FLOAT32 (never TF32), forward, in one run:
- ``dmljax``: dmljax.convolution within ``dmljax.packed_memory()``, as an operator called on its
  own takes it (convolution_gemm.py's PACKED_RULE: the rows or columns product);
- ``lax``: lax.conv_general_dilated at precision HIGHEST, NCHW;
- ``jnp.matmul``: W @ X over the images at precision HIGHEST (a cuBLAS or Triton GEMM, as XLA's
  autotuner picks); ``jnp.matmul cuBLAS``: the same with XLA's Triton GEMMs off;
- ``torch conv``: torch.nn.functional.conv2d (cuDNN, benchmark mode);
- ``torch matmul``: torch.matmul(W, X) over the images (cuBLAS), the same product.
Times: device time for JAX (CUPTI kernel durations, benchmarks/common.py), CUDA events for torch
(20 calls). Writes pointwise_float32.json and .md to DIR (default benchmarks/results/<device>/convolution).
"""

import argparse
import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # torch shares the GPU

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

HI = lax.Precision.HIGHEST


def shapes(smoke: bool):
    """ResNet-50's unit-stride 1 x 1 convolutions (C, O, side)."""
    if smoke:
        return [(16, 8, 6), (8, 16, 3)]
    return [(64, 64, 56), (64, 256, 56), (256, 64, 56), (256, 128, 56), (128, 512, 28), (512, 128, 28),
            (512, 256, 28), (256, 1024, 14), (1024, 256, 14), (1024, 512, 14), (512, 2048, 7), (2048, 512, 7)]


def torch_ms(c, o, side, batch):
    """{"torch conv", "torch matmul"}: milliseconds, where torch sees a GPU."""
    torch = common.torch_cuda()
    if torch is None:
        return {}
    x = torch.randn(batch, c, side, side, device="cuda")
    w = torch.randn(o, c, 1, 1, device="cuda")
    x3, w2 = x.view(batch, c, side * side), w.view(o, c)
    with torch.no_grad():
        return {"torch conv": common.torch_ms(lambda: torch.nn.functional.conv2d(x, w), calls=20),
                "torch matmul": common.torch_ms(lambda: torch.matmul(w2, x3), calls=20)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="the folder to write to (benchmarks/common.py reads it)")
    ap.add_argument("--batch", type=int, default=2 if common.SMOKE else 128)
    args = ap.parse_args()
    report = common.Report("convolution", "JAX: per-call time (benchmarks/common.py), two input sets; torch: CUDA "
                           "events over 20 calls")
    report.group = "pointwise_float32"
    rng = np.random.default_rng(0)
    n = args.batch
    for c, o, side in shapes(common.SMOKE):
        sets = [(jnp.asarray(rng.standard_normal((n, c, side, side), np.float32)),
                 jnp.asarray(rng.standard_normal((o, c, 1, 1), np.float32))) for _ in range(2)]
        with dmljax.packed_memory():
            ours = common.compiled(dmljax.convolution, *sets[0])
        theirs = jax.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", precision=HI)).lower(
            *sets[0]).compile()
        def matmul(x, w):
            return jnp.matmul(w.reshape(o, c), x.reshape(n, c, side * side), precision=HI)
        product = jax.jit(matmul).lower(*sets[0]).compile()
        calls = [("dmljax", ours), ("lax", theirs), ("jnp.matmul", product)]
        if jax.default_backend() == "gpu":  # the same product with XLA's Triton GEMMs off: cuBLAS's
            calls.append(("jnp.matmul cuBLAS", jax.jit(matmul, compiler_options={
                "xla_gpu_enable_triton_gemm": False}).lower(*sets[0]).compile()))
        t = common.times([(name, lambda i, f=f: f(*sets[i])) for name, f in calls])
        ms = {name: t[name]["s"] * 1e3 for name, _ in calls}
        ms.update(torch_ms(c, o, side, n))
        want = np.asarray(theirs(*sets[0]), np.float64)
        worst = float(np.max(np.abs(np.asarray(ours(*sets[0]), np.float64) - want)) / np.max(np.abs(want)))
        ref = ms.get("torch conv")
        versus = ", ".join(f"{k} {v / ref:.2f}x" for k, v in ms.items() if ref and k != "torch conv")
        flops = 2 * n * o * c * side * side
        report.point(f"b{n} {c}->{o} {side}x{side}: " + ", ".join(f"{k} {v:.4f}" for k, v in ms.items())
                     + f" ms; over torch conv: {versus or '-'}; max |dmljax - lax| / max |lax| {worst:.1e}",
                     batch=n, cin=c, cout=o, side=side, ms=ms, method=t["dmljax"]["method"],
                     tflops={k: flops / (v * 1e-3) / 1e12 for k, v in ms.items()}, difference_to_lax=worst)
    report.write()


if __name__ == "__main__":
    main()
