"""Where CONVOLUTION's FLOAT32 forward loses to lax on the GPU (issue 12: 0.864-0.896x in three
cells), and whether a 1 x 1 convolution written as a matrix product lets XLA take the input's
denormal flush into the product: device time (CUPTI, 20 calls over two input sets) of batch 32,
1024 -> 256 channels 14 x 14 with 1 x 1 filters and 64 -> 64 channels 56 x 56 with 3 x 3 filters,
true FLOAT32 products (precision HIGHEST):

- dmljax.convolution (NCHW; and NHWC memory seen as logical NCHW), lax.conv_general_dilated twins;
- the flush alone (the pass dmljax adds);
- 1 x 1 only: the same product as a dot_general, with and without the flush of its input, NCHW and
  NHWC, and the kernels each program runs;
- 3 x 3 only, NHWC: the convolution without padding on an input padded before the program, padded
  in it, and flushed and padded in one pass with the output flushed (whether the input's pass can
  also take the padding off cuDNN's hands).

    python benchmarks/conv_flush_probe.py   (SMOKE=1: small shapes, for a CPU dry run)
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from benchmarks.issue12_gpu import _dml_nchw, _dml_nhwc, _lax_nchw, _lax_nhwc  # noqa: E402
from dmljax._src.numerics import flush_denormals  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

HI = lax.Precision.HIGHEST
SMOKE = bool(os.environ.get("SMOKE"))
BATCH = 2 if SMOKE else 32
SHAPES = [("1024->256 14x14 1x1", 1024, 256, 14, 1), ("64->64 56x56 3x3", 64, 64, 56, 3)]
if SMOKE:
    SHAPES = [("16->8 4x4 1x1", 16, 8, 4, 1), ("8->8 6x6 3x3", 8, 8, 6, 3)]


def _dot_nchw(x, w, flush):
    x = flush_denormals(x) if flush else x
    y = jnp.einsum("nchw,oc->nohw", x, w[:, :, 0, 0], precision=HI)
    return flush_denormals(y) if flush else y


def _dot_nhwc(x, w, flush):
    x = flush_denormals(x) if flush else x
    y = jnp.einsum("nhwc,co->nhwo", x, w[0, 0], precision=HI)
    return flush_denormals(y) if flush else y


def _valid_nhwc(x, w, pad, flush):
    """A 3 x 3 NHWC convolution with its zero padding written by the pass before it (the flush's,
    where ``flush``): the convolution itself runs without padding."""
    x = flush_denormals(x) if flush else x
    x = jnp.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    y = lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=HI)
    return flush_denormals(y) if flush else y


def main():
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    for label, cin, cout, hw, k in SHAPES:
        pad = k // 2
        flops = 2 * BATCH * cout * hw * hw * cin * k * k
        xs = [rng.standard_normal((BATCH, cin, hw, hw), dtype=np.float32) for _ in range(2)]
        ws = [(rng.standard_normal((cout, cin, k, k), dtype=np.float32) / np.sqrt(cin * k * k)) for _ in range(2)]
        nchw = [(jnp.asarray(x), jnp.asarray(w)) for x, w in zip(xs, ws)]
        nhwc = [(jnp.asarray(x.transpose(0, 2, 3, 1)), jnp.asarray(w.transpose(2, 3, 1, 0))) for x, w in zip(xs, ws)]
        progs = [("dmljax NCHW", lambda x, w: _dml_nchw(x, w, pad, np.float32), nchw),
                 ("lax NCHW", lambda x, w: _lax_nchw(x, w, pad, np.float32), nchw),
                 ("dmljax NHWC-physical", lambda x, w: _dml_nhwc(x, w, pad, np.float32), nhwc),
                 ("lax NHWC", lambda x, w: _lax_nhwc(x, w, pad, np.float32), nhwc),
                 ("the flush alone", lambda x, w: flush_denormals(x), nchw)]
        if k == 1:
            progs += [("dot NCHW, flushed", lambda x, w: _dot_nchw(x, w, True), nchw),
                      ("dot NCHW", lambda x, w: _dot_nchw(x, w, False), nchw),
                      ("dot NHWC, flushed", lambda x, w: _dot_nhwc(x, w, True), nhwc),
                      ("dot NHWC", lambda x, w: _dot_nhwc(x, w, False), nhwc)]
        if k == 3:
            padded = [(jnp.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0))), w) for x, w in nhwc]
            progs += [("lax NHWC, VALID, padded before", lambda x, w: lax.conv_general_dilated(
                          x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=HI), padded),
                      ("NHWC padded in the program", lambda x, w: _valid_nhwc(x, w, pad, False), nhwc),
                      ("NHWC flushed and padded, VALID", lambda x, w: _valid_nhwc(x, w, pad, True), nhwc)]
        groups = [(name, (lambda f, d: lambda i: f(*d[i]))(jax.jit(f), d)) for name, f, d in progs]
        t = jax_device_times(groups, 2)
        base = {"NCHW": t["lax NCHW"]["s"], "NHWC": t["lax NHWC"]["s"]}
        for name, v in t.items():
            layout = "NHWC" if "NHWC" in name else "NCHW"
            print(f"{label:22s} {name:24s} {v['s'] * 1e3:8.4f} ms  {flops / v['s'] / 1e12:6.1f} TFLOP/s  "
                  f"lax {layout}/this {base[layout] / v['s']:.3f}  kernels {v.get('kernels_per_call') or 0:.0f}", flush=True)


if __name__ == "__main__":
    main()
