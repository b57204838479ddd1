"""SOFTMAX and LOG_SOFTMAX over the last axis on a GPU, side by side with jax.nn (issue 10, item 5).

    python benchmarks/softmax_gpu.py OUT_DIR

For FLOAT32 and FLOAT16 tensors of 2^28 elements in rows of 1,024 and 32,768: device-side kernel
time (CUPTI through jax.profiler, 20 calls per point, two input sets) of
- a device copy of the tensor (x.copy() in jit),
- jax.nn.softmax / jax.nn.log_softmax (axis -1) in jit,
- dmljax.activation_softmax / activation_log_softmax in jit, by the path it takes (rows of 2,048
  to 65,536 on a GPU: the Pallas kernel of dmljax/_src/row_kernels.py) and by XLA's formula
  (row_kernels.ENABLED = False),
forward, and forward+backward (jax.vjp with a random cotangent) against jax.nn's autodiff.
First it checks the compiled kernel: GPU against the float64 reference within the record's
budget (rows with NaN, +-inf, -inf only and FLOAT32 denormals), values and gradients, and it
tries warps per program for rows of 32,768. Writes results.json and results.md to OUT_DIR.
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
from dmljax._src import row_kernels
from dmljax._src.ops.activation_softmax import normalize
from dmljax.bench.timing import jax_device_times
from tests.compare import assert_matches
from tests.reference.activation import softmax as ref

TOTAL = int(os.environ.get("SOFTMAX_TOTAL", 2 ** 28))  # smaller for a dry run on a CPU
ROWS = (1024, 32768)
DTYPES = (np.float32, np.float16)


def check_kernel(lines):
    """The compiled kernel on the GPU against the float64 reference (first rows of a tensor)."""
    rng = np.random.default_rng(0)
    ok = True
    for dtype in DTYPES:
        for n in (2048, 4096, 32768, 65536):
            x = (rng.standard_normal((6, n)) * 8).astype(dtype)
            x[0, :3] = [np.nan, 1.0, 2.0]
            x[1, 7] = np.inf
            x[2, :] = -np.inf
            x[3, ::5] = -np.inf
            if dtype == np.float32:
                x[4, :100] = (rng.standard_normal(100) * 1e-39).astype(np.float32)
            x[5, :] = 0.0
            dy = rng.standard_normal(x.shape).astype(dtype)
            dt = dmljax.DataType.from_dtype(np.dtype(dtype))
            budget = dmljax.get_operator("ACTIVATION_SOFTMAX").spec.budget(dt, x.shape)
            for log in (False, True):
                op = dmljax.activation_log_softmax if log else dmljax.activation_softmax
                f = jax.jit(op)
                y, vjp = jax.vjp(f, jnp.asarray(x))
                g = vjp(jnp.asarray(dy))[0]
                name = f"{'LOG_' if log else ''}SOFTMAX {np.dtype(dtype).name} rows of {n}"
                try:
                    want = (ref._log_softmax if log else ref._softmax)(x)
                    assert_matches(np.asarray(y), want, dt, budget, name,
                                   magnitude=ref._log_magnitude(x) if log else None)
                    grad = (ref._log_softmax_grad if log else ref._softmax_grad)(dy, x)[0]
                    size = (ref._log_softmax_grad_size if log else ref._softmax_grad_size)(dy, x)[0]
                    assert_matches(np.asarray(g), [grad], dt, budget + 2, name + " gradient", magnitude=size)
                    hlo = f.lower(jnp.asarray(x)).compile().as_text()
                    path = "kernel" if "dmljax_row_softmax" in hlo or "__gpu$xla.gpu.triton" in hlo else "XLA"
                    lines.append(f"ok   {name}: values and gradient within {budget} ULP (+2 for the gradient); path {path}")
                except AssertionError as e:
                    ok = False
                    lines.append(f"FAIL {name}: {str(e)[:600]}")
    return ok


def timings(results, lines):
    rng = np.random.default_rng(1)
    copy = jax.jit(lambda x: x.copy())
    for dtype in DTYPES:
        for n in ROWS:
            shape = (TOTAL // n, n)
            xs = [jnp.asarray((rng.standard_normal(shape, dtype=np.float32) * 4).astype(dtype)) for _ in range(2)]
            gs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(1)]
            point = {"dtype": np.dtype(dtype).name, "row": n, "shape": list(shape),
                     "kernel_path": row_kernels.use_kernel(shape, (1,), dtype, False)}
            for log in (False, True):
                jnn = jax.nn.log_softmax if log else jax.nn.softmax
                dml = dmljax.activation_log_softmax if log else dmljax.activation_softmax
                row_kernels.ENABLED = True
                f_dml = jax.jit(lambda x, dml=dml: dml(x))
                b_dml = jax.jit(lambda x, g, dml=dml: jax.vjp(dml, x)[1](g)[0])
                f_dml(xs[0]).block_until_ready()
                b_dml(xs[0], gs[0]).block_until_ready()
                # XLA's formula: the operator's formula function itself (the public operator
                # keeps one trace per configuration, which would reuse the kernel's), traced
                # with the kernel off
                row_kernels.ENABLED = False
                xla = lambda x, log=log: normalize(x, (1,), log, False)  # noqa: E731
                f_xla = jax.jit(xla)
                b_xla = jax.jit(lambda x, g, xla=xla: jax.vjp(xla, x)[1](g)[0])
                f_xla(xs[0]).block_until_ready()
                b_xla(xs[0], gs[0]).block_until_ready()
                row_kernels.ENABLED = True
                f_jnn = jax.jit(lambda x, jnn=jnn: jnn(x, axis=-1))
                b_jnn = jax.jit(lambda x, g, jnn=jnn: jax.vjp(lambda v: jnn(v, axis=-1), x)[1](g)[0])
                groups = [
                    ("copy", lambda i: copy(xs[i % 2])),
                    ("jax.nn", lambda i: f_jnn(xs[i % 2])),
                    ("dmljax", lambda i: f_dml(xs[i % 2])),
                    ("dmljax XLA path", lambda i: f_xla(xs[i % 2])),
                    ("jax.nn fwd+bwd", lambda i: b_jnn(xs[i % 2], gs[0])),
                    ("dmljax fwd+bwd", lambda i: b_dml(xs[i % 2], gs[0])),
                    ("dmljax XLA path fwd+bwd", lambda i: b_xla(xs[i % 2], gs[0])),
                ]
                t = jax_device_times(groups, 2)
                kind = "LOG_SOFTMAX" if log else "SOFTMAX"
                point[kind] = {k: v["s"] * 1e3 for k, v in t.items()}
                point[kind + " kernels"] = {k: v["kernels_per_call"] for k, v in t.items()}
                ms = point[kind]
                if ms:
                    lines.append(
                        f"{kind:11s} {np.dtype(dtype).name:7s} rows of {n:5d}: copy {ms['copy']:.3f} ms, jax.nn "
                        f"{ms['jax.nn']:.3f}, dmljax {ms['dmljax']:.3f} (XLA path {ms['dmljax XLA path']:.3f}): "
                        f"time(dmljax)/time(jax.nn) {ms['dmljax'] / ms['jax.nn']:.3f}, bandwidth/copy "
                        f"{ms['copy'] / ms['dmljax']:.2f}; fwd+bwd {ms['dmljax fwd+bwd']:.3f} vs jax.nn "
                        f"{ms['jax.nn fwd+bwd']:.3f} = {ms['dmljax fwd+bwd'] / ms['jax.nn fwd+bwd']:.3f} "
                        f"(XLA path {ms['dmljax XLA path fwd+bwd']:.3f})")
                    print(lines[-1], flush=True)
            results.append(point)


def sweep_warps(lines, results):
    """Warps per program for FLOAT16 rows of 32,768 (forward softmax)."""
    rng = np.random.default_rng(2)
    x = jnp.asarray((rng.standard_normal((TOTAL // 32768, 32768), dtype=np.float32) * 4).astype(np.float16))
    keep = dict(row_kernels.WARPS)
    out = {}
    for w in (4, 8, 16, 32):
        row_kernels.WARPS = {4096: 4, 16384: 8, row_kernels.MAX_ROW: w}
        f = jax.jit(lambda v: row_kernels.softmax_rows(v, False))  # a new trace for each setting
        try:
            f(x).block_until_ready()
            t = jax_device_times([("k", lambda i: f(x))], 1)
            out[w] = t["k"]["s"] * 1e3 if t else None
        except Exception as e:  # a configuration the compiler refuses is reported, not fatal
            out[w] = f"error: {type(e).__name__}: {str(e)[:200]}"
        lines.append(f"warps {w:2d}: FLOAT16 rows of 32768 softmax {out[w]}")
        print(lines[-1], flush=True)
    row_kernels.WARPS = keep
    results.append({"warps_sweep_float16_32768": out})


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    lines = [f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; jax {jax.__version__}; devices {jax.devices()}"]
    results = []
    ok = check_kernel(lines)
    print("\n".join(lines), flush=True)
    sweep_warps(lines, results)
    timings(results, lines)
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump({"kernel_check_passed": ok, "points": results, "jax": jax.__version__,
                   "device": str(jax.devices()[0]), "method": "CUPTI kernel durations via jax.profiler, "
                   "20 calls per point, 2 input sets; FLOAT16/FLOAT32 tensors of 2^28 elements"}, fh, indent=1)
    with open(os.path.join(out_dir, "results.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
