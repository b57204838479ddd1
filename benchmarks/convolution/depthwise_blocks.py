"""The FLOAT32 depthwise kernel's block shapes (dmljax/_src/kernels/convolution_depthwise.py's
BLOCK_POSITIONS, BLOCK_CHANNELS and WARPS) swept on a GPU: the forward kernel alone, NHWC memory
(the kernel's transposes cancel), batch 128, MobileNetV2's 3 x 3 shapes, each setting's device
time over lax's depthwise convolution (without DirectML's flushes) in one run, and its largest
difference from lax's output.

    python benchmarks/convolution/depthwise_blocks.py

Printed, not written: the output is committed as results/h200/convolution/depthwise_blocks.txt.
``SMOKE=1``: one small shape and one setting (through Pallas's interpreter on a CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
from dmljax._src.kernels import convolution_depthwise as dw  # noqa: E402

SHAPES = [((128, 32, 112, 112), 1), ((128, 144, 56, 56), 2), ((128, 144, 56, 56), 1), ((128, 384, 14, 14), 1)]
SETTINGS = [(bp, bc, warps) for bp in (32, 64, 128) for bc in (32, 64, 128) for warps in (4, 8)]


def main() -> None:
    shapes, settings = (([((2, 32, 8, 8), 2)], SETTINGS[:1]) if common.SMOKE else (SHAPES, SETTINGS))
    interpret = jax.default_backend() == "cpu"
    print(f"{common.device_name()}; jax {jax.__version__}; times over lax's (device time on a GPU)", flush=True)
    rng = np.random.default_rng(0)
    kept = (dw.BLOCK_POSITIONS, dw.BLOCK_CHANNELS, dw.WARPS)
    try:
        for (n, c, h, w), s in shapes:
            x = jnp.asarray(rng.standard_normal((n, h, w, c), dtype=np.float32))
            k = jnp.asarray(rng.standard_normal((c, 1, 3, 3), dtype=np.float32))
            hwio = jnp.transpose(k, (2, 3, 1, 0))
            twin = jax.jit(lambda a, b, s=s, c=c: lax.conv_general_dilated(
                a, b, (s, s), [(1, 1)] * 2, dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=c,
                precision=lax.Precision.HIGHEST))
            want = np.asarray(twin(x, hwio))
            calls = [("lax", lambda i, twin=twin, x=x, hwio=hwio: twin(x, hwio))]
            for bp, bc, warps in settings:
                dw.BLOCK_POSITIONS, dw.BLOCK_CHANNELS, dw.WARPS = bp, bc, warps
                f = jax.jit(lambda a, b, s=s: jnp.transpose(dw.depthwise_forward(
                    jnp.transpose(a, (0, 3, 1, 2)), b, (s, s), (1, 1), (1, 1), (1, 1), interpret=interpret), (0, 2, 3, 1)))
                compiled = f.lower(x, k).compile()  # the setting is read as the kernel is traced
                err = float(np.max(np.abs(np.asarray(compiled(x, k)) - want)))
                calls.append((f"blocks {bp} x {bc}, {warps} warps (max |difference| {err:.1e})",
                              lambda i, compiled=compiled, x=x, k=k: compiled(x, k)))
            t = common.times(calls)
            base = t["lax"]["s"]
            print(f"{(n, c, h, w)} stride {s}: lax {base * 1e3:.4f} ms", flush=True)
            for ratio, name in sorted((v["s"] / base, name) for name, v in t.items() if name != "lax"):
                print(f"    {ratio:.2f}x  {name}", flush=True)
    finally:
        dw.BLOCK_POSITIONS, dw.BLOCK_CHANNELS, dw.WARPS = kept


if __name__ == "__main__":
    main()
