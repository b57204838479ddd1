"""Whether a Pallas (Triton) convolution with true FLOAT32 products and DirectML's denormal flushes
in its loads and stores beats cuDNN's FLOAT32 convolution that dmljax wraps in two flush passes
(issue 12: the 3 x 3 FLOAT32 forward with NHWC memory at 0.896-0.899x lax): device time (CUPTI,
20 calls over two input sets) of batch 32, 64 -> 64 channels, 56 x 56, 3 x 3, padding 1.

The kernel is an implicit product: one program per image and block of BM output positions (the
positions flattened over the rows), the filter's KH * KW taps each a product of a (BM, C) block of
the input, shifted by the tap's offset in the flattened positions (masked outside the image: the
padding), and the tap's (C, O) filter. NHWC memory: the block is contiguous; NCHW: the same with
the channels first.

    CONFIGS="BM,warps,stages;..." LAYOUTS=NHWC,NCHW SHAPE=batch,in,out,size,window \
        python benchmarks/conv_pallas_probe.py
    (SMOKE=1: small shapes in Pallas's interpreter, on the CPU)
"""

import functools
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import triton as pl_triton  # noqa: E402

from benchmarks.issue12_gpu import _dml_nchw, _dml_nhwc, _lax_nchw, _lax_nhwc  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

HI = lax.Precision.HIGHEST
SMOKE = bool(os.environ.get("SMOKE"))
BATCH, CIN, COUT, HW, K = ((2, 16, 16, 12, 3) if SMOKE else
                           tuple(int(v) for v in os.environ.get("SHAPE", "32,64,64,56,3").split(",")))
TINY = np.float32(np.finfo(np.float32).tiny)


def _flush(v):
    return jnp.where(jnp.abs(v) < TINY, v * np.float32(0.0), v)


def _kernel(x_ref, w_ref, y_ref, *, nchw, h, w, kh, kw, pt, pleft, bm, c, o):
    n = pl.program_id(0)
    b = pl.program_id(1)
    p = b * bm + jnp.arange(bm, dtype=jnp.int32)
    row = p // w
    col = p % w

    def block(ref, start, mask, channels):
        """The (positions, channels) block at ``start`` as the layout holds it (NCHW: transposed),
        and ``mask`` over its positions broadcast to it."""
        if nchw:
            return ref.at[n, :, pl.ds(start, bm)], jnp.broadcast_to(mask[None, :], (channels, bm))
        return ref.at[n, pl.ds(start, bm), :], jnp.broadcast_to(mask[:, None], (bm, channels))

    def tap(t, acc):
        dh, dw = lax.div(t, kw) - pt, lax.rem(t, kw) - pleft
        ok = (p < h * w) & (row + dh >= 0) & (row + dh < h) & (col + dw >= 0) & (col + dw < w)
        at, mask = block(x_ref, b * bm + dh * w + dw, ok, c)
        a = _flush(pl_triton.load(at, mask=mask, other=0.0))
        f = _flush(w_ref[t])  # NHWC: (C, O); NCHW: (O, C)
        return acc + jnp.dot(*((f, a) if nchw else (a, f)), precision=HI, preferred_element_type=jnp.float32)

    acc = lax.fori_loop(0, kh * kw, tap, jnp.zeros((o, bm) if nchw else (bm, o), jnp.float32))
    at, mask = block(y_ref, b * bm, p < h * w, o)
    pl_triton.store(at, _flush(acc), mask=mask)


def pallas_conv(x, wt, *, layout, bm, warps, stages, pad=1):
    """x: NHWC or NCHW memory; wt: HWIO (NHWC) or HWOI (NCHW). Same padding, unit strides."""
    interpret = jax.devices()[0].platform == "cpu"
    params = None
    if not interpret:
        params = pl_triton.CompilerParams(num_warps=warps, num_stages=stages)
    kh, kw = wt.shape[:2]
    if layout == "NHWC":
        n, h, w, c = x.shape
        o = wt.shape[3]
        xs = x.reshape(n, h * w, c)
        out = jax.ShapeDtypeStruct((n, h * w, o), jnp.float32)
        kern = functools.partial(_kernel, nchw=False)
    else:
        n, c, h, w = x.shape
        o = wt.shape[2]
        xs = x.reshape(n, c, h * w)
        out = jax.ShapeDtypeStruct((n, o, h * w), jnp.float32)
        kern = functools.partial(_kernel, nchw=True)
    kern = functools.partial(kern, h=h, w=w, kh=kh, kw=kw, pt=pad, pleft=pad, bm=bm, c=c, o=o)
    wt = wt.reshape((kh * kw,) + wt.shape[2:])  # the taps in one axis
    y = pl.pallas_call(kern, out_shape=out, grid=(n, pl.cdiv(h * w, bm)), compiler_params=params,
                       interpret=interpret, name="conv_probe")(xs, wt)
    return y.reshape((n, h, w, o) if layout == "NHWC" else (n, o, h, w))


def main():
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    pad = K // 2
    flops = 2 * BATCH * COUT * HW * HW * CIN * K * K
    xs = [rng.standard_normal((BATCH, CIN, HW, HW), dtype=np.float32) for _ in range(2)]
    ws = [(rng.standard_normal((COUT, CIN, K, K), dtype=np.float32) / np.sqrt(CIN * K * K)) for _ in range(2)]
    xs[0][0, 0, 0, :4] = [1e-39, -1e-39, 7.5, -0.0]  # denormals: flushed in the loads
    nchw = [(jnp.asarray(x), jnp.asarray(w)) for x, w in zip(xs, ws)]
    nhwc = [(jnp.asarray(x.transpose(0, 2, 3, 1)), jnp.asarray(w.transpose(2, 3, 1, 0))) for x, w in zip(xs, ws)]
    nchw_p = [(x, jnp.transpose(w, (2, 3, 0, 1))) for x, w in nchw]  # HWOI
    ref_nhwc = jax.jit(lambda x, w: _dml_nhwc(x, w, pad, np.float32))(*nhwc[0])
    ref_nchw = jax.jit(lambda x, w: _dml_nchw(x, w, pad, np.float32))(*nchw[0])
    scale = float(jnp.max(jnp.abs(ref_nhwc)))
    progs = [("dmljax NCHW", lambda x, w: _dml_nchw(x, w, pad, np.float32), nchw),
             ("lax NCHW", lambda x, w: _lax_nchw(x, w, pad, np.float32), nchw),
             ("dmljax NHWC-physical", lambda x, w: _dml_nhwc(x, w, pad, np.float32), nhwc),
             ("lax NHWC", lambda x, w: _lax_nhwc(x, w, pad, np.float32), nhwc)]
    configs = [tuple(int(v) for v in c.split(",")) for c in os.environ.get(
        "CONFIGS", "16,4,1;32,4,2" if SMOKE else "64,4,1;64,4,2;128,4,2;128,8,2;64,8,2;128,8,3").split(";")]
    layouts = os.environ.get("LAYOUTS", "NHWC,NCHW").split(",")
    base = _timed(progs, flops, None)  # the baselines first, then each configuration as soon as it compiles
    for bm, warps, stages in configs:
        for layout, data, ref in (("NHWC", nhwc, ref_nhwc), ("NCHW", nchw_p, ref_nchw)):
            if layout not in layouts:
                continue
            t0 = time.perf_counter()
            name = f"pallas {layout} bm {bm} warps {warps} stages {stages}"
            f = functools.partial(pallas_conv, layout=layout, bm=bm, warps=warps, stages=stages)
            try:
                y = jax.jit(f)(*data[0])
                err = float(jnp.max(jnp.abs(y - ref))) / scale
                same_zeros = bool(jnp.all((y == 0) == (ref == 0)))
            except Exception as e:  # a configuration Triton cannot compile: reported, not timed
                print(f"{name}: {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            print(f"{name}: max |diff| / max |y| {err:.2e}, zeros alike {same_zeros}, "
                  f"compiled and run in {time.perf_counter() - t0:.1f} s", flush=True)
            _timed([(name, f, data)], flops, base)


def _timed(progs, flops, base):
    """Device times of ``progs``, printed against lax's in the same layout (``base``, or these
    programs' own lax ones); returns the lax times."""
    groups = [(name, (lambda f, d: lambda i: f(*d[i]))(jax.jit(f), d)) for name, f, d in progs]
    t = jax_device_times(groups, 2)
    if not t:
        return base
    base = base or {"NCHW": t["lax NCHW"]["s"], "NHWC": t["lax NHWC"]["s"]}
    for name, v in t.items():
        layout = "NHWC" if "NHWC" in name else "NCHW"
        print(f"{name:40s} {v['s'] * 1e3:8.4f} ms  {flops / v['s'] / 1e12:6.1f} TFLOP/s  "
              f"lax {layout}/this {base[layout] / v['s']:.3f}  kernels {v.get('kernels_per_call') or 0:.0f}",
              flush=True)
    return base


if __name__ == "__main__":
    main()
