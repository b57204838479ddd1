"""CONVOLUTION FLOAT32 through conv_kernels' kernel against the same call with the kernel off
(cuDNN's FLOAT32 convolution between two flush passes) and lax's convolution, for geometries the
kernel takes: strided, unpadded, and unit-stride ones. Device time (CUPTI, 20 calls over two
input sets), NHWC memory (the caller's NHWC arrays seen as logical NCHW) and NCHW.

    python benchmarks/conv_geometry_gpu.py   (SMOKE=1: small shapes on the CPU, no times)
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import dmljax  # noqa: E402
from dmljax._src import conv_kernels  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402
from tests.ops.convolution.test_convolution_kernel import geometry_of, xla_formula  # noqa: E402

SMOKE = bool(os.environ.get("SMOKE"))
B = 2 if SMOKE else 32
# (label, channels in, out, size, window, strides, start and end padding)
SHAPES = [("64->64 56 s2 p1", 64, 64, 56, 3, (2, 2), (1, 1), (1, 1)),
          ("32->64 112 s2 p1", 32, 64, 112, 3, (2, 2), (1, 1), (1, 1)),
          ("64->64 56 s1 p0", 64, 64, 56, 3, (1, 1), (0, 0), (0, 0)),
          ("16->32 112 s2 p0", 16, 32, 112, 3, (2, 2), (0, 0), (0, 0)),
          ("64->64 56 s1 p1", 64, 64, 56, 3, (1, 1), (1, 1), (1, 1))]
if SMOKE:
    SHAPES = [(n, ci, co, 9, k, s, a, e) for n, ci, co, _, k, s, a, e in SHAPES[:2]]


def _lax(x, w, strides, a, e, layout):
    dn = ("NHWC", "HWIO", "NHWC") if layout == "NHWC" else ("NCHW", "OIHW", "NCHW")
    return lax.conv_general_dilated(x, w, strides, list(zip(a, e)), dimension_numbers=dn,
                                    precision=lax.Precision.HIGHEST)


def _dml(x, w, strides, a, e, layout, conv=None):
    """dmljax.convolution, or ``conv`` (x, w) in its place; NHWC: the caller's NHWC memory seen as
    logical NCHW, out as NHWC."""
    conv = conv or (lambda p, q: dmljax.convolution(p, q, strides=strides, start_padding=a, end_padding=e))
    if layout == "NHWC":
        return jnp.transpose(conv(jnp.transpose(x, (0, 3, 1, 2)), jnp.transpose(w, (3, 2, 0, 1))), (0, 2, 3, 1))
    return conv(x, w)


def main():
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    for label, cin, cout, hw, k, strides, a, e in SHAPES:
        out = [(hw + p + q - k) // s + 1 for p, q, s in zip(a, e, strides)]
        flops = 2 * B * cout * out[0] * out[1] * cin * k * k
        xs = [rng.standard_normal((B, cin, hw, hw), dtype=np.float32) for _ in range(2)]
        ws = [(rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32) for _ in range(2)]
        data = {"NCHW": [(jnp.asarray(x), jnp.asarray(w)) for x, w in zip(xs, ws)],
                "NHWC": [(jnp.asarray(x.transpose(0, 2, 3, 1)), jnp.asarray(w.transpose(2, 3, 1, 0)))
                         for x, w in zip(xs, ws)]}
        assert conv_kernels.use_kernel((B, cin, hw, hw), (cout, cin, k, k), np.float32, True, 1, strides, (1, 1), a, e,
                                       (0, 0))
        groups = []
        for layout in ("NHWC", "NCHW"):
            d = data[layout]

            def f_dml(x, w, lay=layout):
                return _dml(x, w, strides, a, e, lay)

            def f_lax(x, w, lay=layout):
                return _lax(x, w, strides, a, e, lay)
            def f_off(x, w, lay=layout):  # the path's other branch: XLA's formula (the public operator
                # keeps one traced program per attribute set, so the kernel is not switched off around it)
                geometry_ = geometry_of({"strides": strides, "start_padding": a, "end_padding": e})
                return _dml(x, w, strides, a, e, lay, lambda p, q: xla_formula(p, q, geometry_))
            kernel, off = jax.jit(f_dml), jax.jit(f_off)
            text = kernel.lower(*d[0]).compile().as_text()
            assert jax.devices()[0].platform == "cpu" or "dmljax_convolution_taps" in text, "no kernel"
            y_k, y_off = np.asarray(kernel(*d[0])), np.asarray(off(*d[0]))
            rel = float(np.max(np.abs(y_k - y_off)) / np.max(np.abs(y_off)))
            print(f"{label} {layout}: kernel against cuDNN's path, max |diff| / max |y| {rel:.1e}", flush=True)
            assert rel < 1e-5, rel
            groups += [(f"dmljax kernel {layout}", (lambda f, d: lambda i: f(*d[i]))(kernel, d)),
                       (f"dmljax cuDNN {layout}", (lambda f, d: lambda i: f(*d[i]))(off, d)),
                       (f"lax {layout}", (lambda f, d: lambda i: f(*d[i]))(jax.jit(f_lax), d))]
        t = jax_device_times(groups, 2)
        for name, v in t.items():
            layout = name.split()[-1]
            print(f"{label:18s} {name:22s} {v['s'] * 1e3:8.4f} ms  {flops / v['s'] / 1e12:6.1f} TFLOP/s  "
                  f"lax/this {t['lax ' + layout]['s'] / v['s']:.3f}  kernels {v.get('kernels_per_call') or 0:.0f}",
                  flush=True)


if __name__ == "__main__":
    main()
