"""Issue 12's operators on a GPU against the jax formula a user would write, side by side in one run.

    python benchmarks/issue12_gpu.py OUT_DIR [GROUP ...]      (groups: conv, norm, pool, train)

conv: CONVOLUTION on the ResNet-50 shapes the issue names (batch 32, FLOAT16 and FLOAT32; 64->64
56x56 3x3, 256->256 14x14 3x3, 1024->256 14x14 1x1), forward and forward+backward (the output and
both gradients), against lax.conv_general_dilated in NCHW and in NHWC; dmljax in the logical NCHW
layout, and with NHWC-physical tensors (DirectML's strides let a logical NCHW tensor sit in NHWC
memory: here the caller's NHWC arrays are transposed to NCHW around the operator, inside one jit,
and XLA picks the layout).  norm: BATCH_NORMALIZATION_TRAINING forward and forward+backward against
its jnp twin (mean, var, normalize).  pool: MAX_POOLING 3x3 stride 2 and AVERAGE_POOLING 2x2
against lax.reduce_window.  train: one training step of examples/train_cnn.py's network against
its jax.numpy + optax twin, batch 32 and 512.

Device-side kernel time (CUPTI; the sum of kernel durations per call), 20 calls over two input
sets. Writes results.json and results.md to OUT_DIR.
"""

import functools
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import dmljax  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

HI = lax.Precision.HIGHEST
CONV_SHAPES = [("64->64 56x56 3x3", 64, 64, 56, 3), ("256->256 14x14 3x3", 256, 256, 14, 3),
               ("1024->256 14x14 1x1", 1024, 256, 14, 1)]
BATCH = 32
if os.environ.get("SMOKE"):  # a CPU dry run of every code path, on small shapes
    CONV_SHAPES = [("8->8 6x6 3x3", 8, 8, 6, 3), ("16->8 4x4 1x1", 16, 8, 4, 1)]
    BATCH = 2


def _lax_nchw(x, w, pad, dtype):
    kw = dict(precision=HI) if dtype == np.float32 else {}
    return lax.conv_general_dilated(x, w, (1, 1), [(pad, pad)] * 2, dimension_numbers=("NCHW", "OIHW", "NCHW"), **kw)


def _lax_nhwc(x, w, pad, dtype):
    kw = dict(precision=HI) if dtype == np.float32 else {}
    return lax.conv_general_dilated(x, w, (1, 1), [(pad, pad)] * 2, dimension_numbers=("NHWC", "HWIO", "NHWC"), **kw)


def _dml_nchw(x, w, pad, dtype):
    return dmljax.convolution(x, w, start_padding=(pad, pad), end_padding=(pad, pad))


def _dml_nhwc(x, w, pad, dtype):
    """NHWC memory seen as logical NCHW (the strides a DirectML desc would give), out as NHWC."""
    y = dmljax.convolution(jnp.transpose(x, (0, 3, 1, 2)), jnp.transpose(w, (3, 2, 0, 1)),
                           start_padding=(pad, pad), end_padding=(pad, pad))
    return jnp.transpose(y, (0, 2, 3, 1))


def _lax_nchw_f32_out(x, w, pad, dtype):
    """FLOAT32 results of FLOAT16 operands, rounded after: what 'accumulate in FLOAT32 and round
    once' asks, written with lax (does XLA keep the tensor cores for it?)."""
    kw = dict(precision=HI) if dtype == np.float32 else {}
    return lax.conv_general_dilated(x, w, (1, 1), [(pad, pad)] * 2, dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                    preferred_element_type=jnp.float32, **kw).astype(x.dtype)


def _dml_nchw_half(x, w, pad, dtype):
    return dmljax.convolution(x, w, start_padding=(pad, pad), end_padding=(pad, pad),
                              allow_half_precision_computation=True)


VARIANTS = [("dmljax NCHW", _dml_nchw, "nchw"), ("dmljax NHWC-physical", _dml_nhwc, "nhwc"),
            ("lax NCHW", _lax_nchw, "nchw"), ("lax NHWC", _lax_nhwc, "nhwc"),
            ("lax NCHW FLOAT32 out", _lax_nchw_f32_out, "nchw"), ("dmljax NCHW half", _dml_nchw_half, "nchw")]


def _fwd_bwd(f):
    def run(x, w, dy):
        y, pull = jax.vjp(f, x, w)
        return y, pull(dy)
    return run


def conv_points(rng):
    points = []
    for dtype in (np.float16, np.float32):
        for label, cin, cout, hw, k in CONV_SHAPES:
            pad = k // 2
            flops = 2 * BATCH * cout * hw * hw * cin * k * k
            x = [rng.standard_normal((BATCH, cin, hw, hw), dtype=np.float32).astype(dtype) for _ in range(2)]
            w = [(rng.standard_normal((cout, cin, k, k), dtype=np.float32) / np.sqrt(cin * k * k)).astype(dtype)
                 for _ in range(2)]
            dy = [rng.standard_normal((BATCH, cout, hw, hw), dtype=np.float32).astype(dtype) for _ in range(2)]
            data = {"nchw": [tuple(map(jnp.asarray, t)) for t in zip(x, w, dy)],
                    "nhwc": [(jnp.asarray(a.transpose(0, 2, 3, 1)), jnp.asarray(b.transpose(2, 3, 1, 0)),
                              jnp.asarray(c.transpose(0, 2, 3, 1))) for a, b, c in zip(x, w, dy)]}
            groups = []
            for name, f, layout in VARIANTS:
                fwd = jax.jit(functools.partial(f, pad=pad, dtype=dtype))
                both = jax.jit(_fwd_bwd(functools.partial(f, pad=pad, dtype=dtype)))
                groups.append((f"fwd {name}", lambda i, fwd=fwd, d=data[layout]: fwd(d[i][0], d[i][1])))
                groups.append((f"fwd+bwd {name}", lambda i, both=both, d=data[layout]: both(*d[i])))
            t = jax_device_times(groups, 2)
            for name, v in t.items():
                mult = 3 if name.startswith("fwd+bwd") else 1
                points.append({"group": "conv", "dtype": np.dtype(dtype).name, "shape": label, "variant": name,
                               "ms": v["s"] * 1e3, "tflops": mult * flops / v["s"] / 1e12,
                               "kernels": v.get("kernels_per_call")})
    return points


def norm_points(rng):
    points = []
    eps = 1e-5

    def twin(x, scale, bias):
        xf = x.astype(jnp.float32)
        mean = xf.mean(axis=(0, 2, 3), keepdims=True)
        var = xf.var(axis=(0, 2, 3), keepdims=True)
        y = (xf - mean) / jnp.sqrt(var + eps) * scale.astype(jnp.float32) + bias.astype(jnp.float32)
        return y.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)

    def dml(x, scale, bias):
        return dmljax.batch_normalization_training(x, scale, bias, epsilon=eps)

    for dtype in (np.float32, np.float16):
        for c, hw in ((64, 56), (256, 14)) if BATCH == 32 else ((4, 6),):
            x = [jnp.asarray(rng.standard_normal((BATCH, c, hw, hw), dtype=np.float32).astype(dtype)) for _ in range(2)]
            s = jnp.asarray(rng.standard_normal((1, c, 1, 1), dtype=np.float32).astype(dtype))
            b = jnp.asarray(rng.standard_normal((1, c, 1, 1), dtype=np.float32).astype(dtype))
            groups = []
            for name, f in (("dmljax", dml), ("jnp twin", twin)):
                fwd = jax.jit(f)
                both = jax.jit(lambda x, s, b, f=f: jax.vjp(lambda *a: f(*a)[0], x, s, b)[1](x))
                groups.append((f"fwd {name}", lambda i, fwd=fwd: fwd(x[i], s, b)))
                groups.append((f"fwd+bwd {name}", lambda i, both=both: both(x[i], s, b)))
            t = jax_device_times(groups, 2)
            nbytes = BATCH * c * hw * hw * np.dtype(dtype).itemsize
            for name, v in t.items():
                points.append({"group": "norm", "dtype": np.dtype(dtype).name, "shape": f"{BATCH}x{c}x{hw}x{hw}",
                               "variant": name, "ms": v["s"] * 1e3, "gbps_in_out": 2 * nbytes / v["s"] / 1e9})
    return points


def pool_points(rng):
    points = []
    cases = [("MAX 3x3 s2 p1", lambda x: dmljax.max_pooling(x, strides=(2, 2), window_size=(3, 3),
                                                            start_padding=(1, 1), end_padding=(1, 1)),
              lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2),
                                          [(0, 0), (0, 0), (1, 1), (1, 1)])),
             ("AVERAGE 2x2 s2", lambda x: dmljax.average_pooling(x, strides=(2, 2), window_size=(2, 2),
                                                                 start_padding=(0, 0), end_padding=(0, 0),
                                                                 include_padding=False),
              lambda x: (lax.reduce_window(x.astype(jnp.float32), 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2),
                                           "VALID") / 4).astype(x.dtype))]
    for dtype in (np.float32, np.float16):
        x = [jnp.asarray(rng.standard_normal((BATCH, 64, 112 // (8 if BATCH == 2 else 1), 112 // (8 if BATCH == 2 else 1)), dtype=np.float32).astype(dtype)) for _ in range(2)]
        for label, dml, twin in cases:
            groups = []
            for name, f in (("dmljax", dml), ("lax.reduce_window", twin)):
                fwd = jax.jit(f)
                both = jax.jit(lambda x, f=f: jax.vjp(f, x)[1](f(x)))
                groups.append((f"fwd {name}", lambda i, fwd=fwd: fwd(x[i])))
                groups.append((f"fwd+bwd {name}", lambda i, both=both: both(x[i])))
            t = jax_device_times(groups, 2)
            for name, v in t.items():
                points.append({"group": "pool", "dtype": np.dtype(dtype).name, "shape": label, "variant": name,
                               "ms": v["s"] * 1e3})
    return points


def train_points(rng):
    import optax
    import train_cnn as cnn
    points = []
    params, stats = cnn.init(0)
    moments = {k: (np.zeros_like(p), np.zeros_like(p)) for k, p in params.items()}
    optimizer = optax.adam(3e-3)
    jnp_step = cnn.make_jnp_step(optimizer)
    opt_state = optimizer.init(params)
    # every argument on the device first, as a training loop's state is (host arrays would be
    # copied over at each call: run 20 timed the copies of the NumPy moments with the dmljax step)
    params, stats, moments, opt_state = jax.device_put((params, stats, moments, opt_state))
    for batch in (32, 512) if BATCH == 32 else (4,):
        x = [jnp.asarray(rng.random((batch, 1, 8, 8), dtype=np.float32)) for _ in range(2)]
        step = jnp.asarray(1, jnp.int32)
        onehot = jnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)])
        groups = [("dmljax step", lambda i: cnn.dml_step(params, stats, moments, step, x[i], onehot, 3e-3)),
                  ("jnp + optax step", lambda i: jnp_step(params, stats, opt_state, x[i], onehot))]
        t = jax_device_times(groups, 2)
        for name, v in t.items():
            points.append({"group": "train", "dtype": "float32", "shape": f"batch {batch}", "variant": name,
                           "ms": v["s"] * 1e3, "span_ms": v.get("span_s", 0) * 1e3,
                           "kernels": v.get("kernels_per_call")})
    return points


def torch_points(rng):
    """The same convolutions in torch (cuDNN, channels_last and NCHW, benchmark mode), where the
    device has torch: CUDA-event time per call over 50 calls after 10 warm-up calls (an event span,
    not CUPTI kernel sums: a little above the kernels' own time)."""
    import torch
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    points = []
    for dtype, tdtype in ((np.float16, torch.float16), (np.float32, torch.float32)):
        for label, cin, cout, hw, k in CONV_SHAPES:
            flops = 2 * BATCH * cout * hw * hw * cin * k * k
            for layout, fmt in (("NCHW", torch.contiguous_format), ("channels_last", torch.channels_last)):
                x = torch.randn(BATCH, cin, hw, hw, device="cuda", dtype=tdtype).to(memory_format=fmt)
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
                    ms = start.elapsed_time(end) / 50
                    mult = 3 if mode == "fwd+bwd" else 1
                    points.append({"group": "torch", "dtype": np.dtype(dtype).name, "shape": label,
                                   "variant": f"{mode} torch {layout}", "ms": ms, "tflops": mult * flops / ms / 1e9})
    return points


GROUPS = {"conv": conv_points, "norm": norm_points, "pool": pool_points, "train": train_points, "torch": torch_points}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    chosen = sys.argv[2:] or list(GROUPS)
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    head = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; jax {jax.__version__}; {jax.devices()[0]}"
    print(head, flush=True)
    points, lines = [], [head]
    for g in chosen:
        try:
            got = GROUPS[g](rng)
        except Exception as e:  # noqa: BLE001  (one group's failure must not lose the others' results)
            lines.append(f"{g}: FAILED {type(e).__name__}: {e}")
            print(lines[-1], flush=True)
            continue
        points += got
        for p in got:
            extra = "".join(f"  {k} {p[k]:.1f}" for k in ("tflops", "gbps_in_out", "span_ms", "kernels")
                            if p.get(k) is not None)
            lines.append(f"{p['group']:5s} {p['dtype']:7s} {p['shape']:20s} {p['variant']:30s} {p['ms']:8.3f} ms{extra}")
            print(lines[-1], flush=True)
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump({"points": points, "jax": jax.__version__, "device": str(jax.devices()[0]),
                   "method": "CUPTI kernel durations via jax.profiler, 20 calls, 2 input sets"}, fh, indent=1)
    with open(os.path.join(out_dir, "results.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
