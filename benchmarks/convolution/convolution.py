"""CONVOLUTION against lax.conv_general_dilated (and torch's cuDNN convolution, where torch sees a
GPU), side by side in one run.

    python benchmarks/convolution/convolution.py [--out DIR] [GROUP ...]   (SMOKE=1: small shapes, any machine)

Groups (default: all):
- ``resnet``: ResNet-50's shapes at batch 32 (64 -> 64 channels 56 x 56 3 x 3, 256 -> 256 14 x 14
  3 x 3, 1024 -> 256 14 x 14 1 x 1, padding to keep the size), FLOAT16 and FLOAT32 (true FLOAT32
  products: precision HIGHEST for lax), forward and forward+backward (the output and both
  gradients by jax.vjp), against lax in NCHW and in NHWC. dmljax runs in the logical NCHW layout
  and with NHWC memory: the caller's NHWC arrays seen as logical NCHW, as a DirectML desc's strides
  would give them (transposed around the operator inside one jit; XLA picks the layout). Also
  torch.nn.Conv2d in NCHW and channels_last (cuDNN benchmark mode, TF32 off; CUDA events over 50
  calls, which include launch gaps).
- ``geometry``: FLOAT32 forwards that CONVOLUTION's Pallas kernel takes on a GPU (strided,
  unpadded, padded), NHWC memory and NCHW, against the same call with the kernel off
  (``dmljax.use_kernels(False, "convolution")``: cuDNN between the denormal flushes) and lax.
- ``shapes``: FLOAT32 3 x 3 forwards with NHWC memory over other channel counts and sizes, one
  5 x 5 window, against lax (which of them take the kernel: see "kernels" in the results).

Per-call time (device time where the backend records it: benchmarks/common.py), two input sets;
TFLOP/s counts 2 x the multiply-adds of a direct convolution (x 3 with the gradients). Writes
<group>.json and <group>.md for each group run to DIR (default:
benchmarks/results/<device>/convolution).
"""

import functools
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

HI = lax.Precision.HIGHEST
BATCH = 2 if common.SMOKE else 32
RESNET = [("64->64 56x56 3x3", 64, 64, 56, 3), ("256->256 14x14 3x3", 256, 256, 14, 3),
          ("1024->256 14x14 1x1", 1024, 256, 14, 1)]
# (label, channels in, out, size, window, strides, start and end padding)
GEOMETRY = [("64->64 56x56 stride 2 padding 1", 64, 64, 56, 3, (2, 2), (1, 1), (1, 1)),
            ("32->64 112x112 stride 2 padding 1", 32, 64, 112, 3, (2, 2), (1, 1), (1, 1)),
            ("16->32 112x112 stride 2", 16, 32, 112, 3, (2, 2), (0, 0), (0, 0)),
            ("64->64 56x56", 64, 64, 56, 3, (1, 1), (0, 0), (0, 0)),
            ("64->64 56x56 padding 1", 64, 64, 56, 3, (1, 1), (1, 1), (1, 1))]
SHAPES = [(f"{ci}->{co} {s}x{s} {k}x{k}", ci, co, s, k, (1, 1), (k // 2,) * 2, (k // 2,) * 2) for ci, co, s, k in (
    (16, 16, 112, 3), (32, 32, 112, 3), (32, 32, 56, 3), (16, 64, 56, 3), (64, 32, 56, 3), (64, 64, 28, 3),
    (64, 64, 56, 5), (128, 128, 28, 3))]
if common.SMOKE:
    RESNET = [("8->8 6x6 3x3", 8, 8, 6, 3), ("16->8 4x4 1x1", 16, 8, 4, 1)]
    GEOMETRY = [(n, ci, co, 9, k, s, a, e) for n, ci, co, _, k, s, a, e in GEOMETRY[:2]]
    SHAPES = [(n, ci, co, 8, k, s, a, e) for n, ci, co, _, k, s, a, e in SHAPES[:2]]


def lax_conv(x, w, strides, start, end, layout):
    dn = ("NHWC", "HWIO", "NHWC") if layout == "NHWC" else ("NCHW", "OIHW", "NCHW")
    kw = dict(precision=HI) if x.dtype == jnp.float32 else {}
    return lax.conv_general_dilated(x, w, strides, list(zip(start, end)), dimension_numbers=dn, **kw)


def dml_conv(x, w, strides, start, end, layout):
    """dmljax.convolution; NHWC: the caller's NHWC memory seen as logical NCHW, out as NHWC."""
    def conv(p, q):
        return dmljax.convolution(p, q, strides=strides, start_padding=start, end_padding=end)
    if layout == "NHWC":
        return jnp.transpose(conv(jnp.transpose(x, (0, 3, 1, 2)), jnp.transpose(w, (3, 2, 0, 1))), (0, 2, 3, 1))
    return conv(x, w)


def _forward_backward(f):
    def run(x, w, dy):
        y, pull = jax.vjp(f, x, w)
        return y, pull(dy)
    return run


def _data(rng, dtype, cin, cout, size, k, out_size, with_dy=True):
    """Two input sets in each layout: (x, w[, dy]) in NCHW/OIHW and in NHWC/HWIO."""
    x = [rng.standard_normal((BATCH, cin, size, size), dtype=np.float32).astype(dtype) for _ in range(2)]
    w = [(rng.standard_normal((cout, cin, k, k), dtype=np.float32) / np.sqrt(cin * k * k)).astype(dtype)
         for _ in range(2)]
    dy = [rng.standard_normal((BATCH, cout, out_size, out_size), dtype=np.float32).astype(dtype) for _ in range(2)]
    nchw = [tuple(map(jnp.asarray, t if with_dy else t[:2])) for t in zip(x, w, dy)]
    nhwc = [tuple(jnp.asarray(a) for a in (x_.transpose(0, 2, 3, 1), w_.transpose(2, 3, 1, 0),
                                            d_.transpose(0, 2, 3, 1))[:3 if with_dy else 2])
            for x_, w_, d_ in zip(x, w, dy)]
    return {"NCHW": nchw, "NHWC": nhwc}


def _record(report, group, dtype, label, t, flops):
    for name, v in t.items():
        mult = 3 if "fwd+bwd" in name else 1
        tflops = mult * flops / v["s"] / 1e12
        report.point(f"{np.dtype(dtype).name:7s} {label:34s} {name:30s} {v['s'] * 1e3:8.4f} ms  {tflops:6.1f} TFLOP/s"
                     f"  kernels {v['kernels_per_call']}", group=group, dtype=np.dtype(dtype).name, shape=label,
                     variant=name, ms=v["s"] * 1e3, tflops=tflops, kernels=v["kernels_per_call"], method=v["method"])


def resnet(report, rng):
    for dtype in (np.float16, np.float32):
        for label, cin, cout, size, k in RESNET:
            pad = (k // 2, k // 2)
            flops = 2 * BATCH * cout * size * size * cin * k * k
            data = _data(rng, dtype, cin, cout, size, k, size)
            groups = []
            for name, f in (("dmljax", dml_conv), ("lax", lax_conv)):
                for layout in ("NCHW", "NHWC"):
                    g = functools.partial(f, strides=(1, 1), start=pad, end=pad, layout=layout)
                    fwd, both, d = jax.jit(g), jax.jit(_forward_backward(g)), data[layout]
                    tag = f"{name} {'NHWC memory' if name == 'dmljax' and layout == 'NHWC' else layout}"
                    groups.append((f"fwd {tag}", lambda i, f=fwd, d=d: f(d[i][0], d[i][1])))
                    groups.append((f"fwd+bwd {tag}", lambda i, f=both, d=d: f(*d[i])))
            _record(report, "resnet", dtype, label, common.times(groups), flops)
    torch_resnet(report)


def torch_resnet(report):
    """The same convolutions by torch.nn.Conv2d on the GPU, NCHW and channels_last."""
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        return
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    for dtype, tdtype in ((np.float16, torch.float16), (np.float32, torch.float32)):
        for label, cin, cout, size, k in RESNET:
            flops = 2 * BATCH * cout * size * size * cin * k * k
            for layout, fmt in (("NCHW", torch.contiguous_format), ("channels_last", torch.channels_last)):
                x = torch.randn(BATCH, cin, size, size, device="cuda", dtype=tdtype).to(memory_format=fmt)
                conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2, bias=False).to("cuda", tdtype).to(
                    memory_format=fmt)
                for mode in ("fwd", "fwd+bwd"):
                    xx = x.clone().requires_grad_(mode == "fwd+bwd")

                    def call():
                        y = conv(xx)
                        if mode == "fwd+bwd":
                            y.backward(torch.ones_like(y))
                    for _ in range(10):
                        call()
                    torch.cuda.synchronize()
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    for _ in range(50):
                        call()
                    end.record()
                    torch.cuda.synchronize()
                    s = start.elapsed_time(end) / 50 / 1e3
                    _record(report, "resnet", dtype, label, {f"{mode} torch {layout}": {
                        "s": s, "kernels_per_call": None, "method": "CUDA events over 50 calls"}}, flops)


def geometry(report, rng):
    for label, cin, cout, size, k, strides, start, end in GEOMETRY:
        out = [(size + a + e - k) // s + 1 for a, e, s in zip(start, end, strides)]
        flops = 2 * BATCH * cout * out[0] * out[1] * cin * k * k
        data = _data(rng, np.float32, cin, cout, size, k, out[0], with_dy=False)
        groups = []
        for layout in ("NHWC", "NCHW"):
            d = data[layout]
            g = functools.partial(dml_conv, strides=strides, start=start, end=end, layout=layout)
            on = common.compiled(g, *d[0])
            with dmljax.use_kernels(False, "convolution"):
                off = common.compiled(g, *d[0])
            twin = jax.jit(functools.partial(lax_conv, strides=strides, start=start, end=end, layout=layout))
            y_on, y_off = np.asarray(on(*d[0])), np.asarray(off(*d[0]))
            report.line(f"{label} {layout}: dmljax against the kernel-off path: max |difference| / max |y| "
                        f"{float(np.max(np.abs(y_on - y_off)) / np.max(np.abs(y_off))):.1e}")
            groups += [(f"dmljax {layout}", lambda i, f=on, d=d: f(*d[i])),
                       (f"dmljax kernel off {layout}", lambda i, f=off, d=d: f(*d[i])),
                       (f"lax {layout}", lambda i, f=twin, d=d: f(*d[i]))]
        _record(report, "geometry", np.float32, label, common.times(groups), flops)


def shapes(report, rng):
    for label, cin, cout, size, k, strides, start, end in SHAPES:
        flops = 2 * BATCH * cout * size * size * cin * k * k
        d = _data(rng, np.float32, cin, cout, size, k, size, with_dy=False)["NHWC"]
        groups = [(name, lambda i, f=jax.jit(functools.partial(f, strides=strides, start=start, end=end,
                                                                layout="NHWC")): f(*d[i]))
                  for name, f in (("dmljax NHWC memory", dml_conv), ("lax NHWC", lax_conv))]
        _record(report, "shapes", np.float32, label, common.times(groups), flops)


GROUPS = {"resnet": resnet, "geometry": geometry, "shapes": shapes}


def main():
    chosen = [a for a in common.arguments()[1] if a in GROUPS] or list(GROUPS)
    report = common.Report("convolution", f"batch {BATCH}; per-call time (benchmarks/common.py), two input sets")
    rng = np.random.default_rng(0)
    for group in chosen:
        report.group = group
        GROUPS[group](report, rng)
    report.write()


if __name__ == "__main__":
    main()
