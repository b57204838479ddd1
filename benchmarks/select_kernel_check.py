"""The compiled TOP_K row kernel and, for K from 17, the threshold kernels (threshold_kernels.py) (and ARGMAX/ARGMIN of FLOAT16 rows, which take it with K = 1, and of FLOAT16 columns, the column kernel) (dmljax/_src/select_kernels.py) on a GPU against the XLA path
(select_kernels.ENABLED = False, which tests/gpu_check.py checks against the float64 reference):
the same indices and values bit for bit, TOP_K and TOP_K1 (both directions), FLOAT32 and FLOAT16,
rows of 1,024 to 32,768, K of 2 to 1,024, on rows with many ties, NaN, infinities, signed zeros and
FLOAT32 denormals; and the threshold path's values under jax.grad, jax.jvp and vmap. Prints one
line per case and a summary; exits 1 on any failure.

    python benchmarks/select_kernel_check.py   (SELECT_CHECK_ON_CPU=1: a dry run on the CPU, where
                                                 both paths are XLA's and the kernel is not looked for)
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from benchmarks.kernel_checks import Cases, compiled_with_each, with_settings  # noqa: E402
from dmljax._src import select_kernels, threshold_kernels  # noqa: E402
from dmljax._src.ops.arg_extreme import arg_extreme  # noqa: E402
from dmljax._src.ops.reduce import _max_min  # noqa: E402
from dmljax._src.ops.top_k import top_k_along  # noqa: E402


def _call(largest, k):
    if largest:
        return jax.jit(lambda v: dmljax.top_k(v, axis=1, k=k))
    return jax.jit(lambda v: dmljax.top_k1(v, axis=1, k=k, axis_direction="INCREASING"))


def _kernel_in(f, x) -> None:
    assert os.environ.get("SELECT_CHECK_ON_CPU") or "dmljax_row_top_k" in f.lower(x).as_text(), \
        "the kernel is not in the program"


def main() -> int:
    rng = np.random.default_rng(13)
    cases = Cases()
    for n, rows in ((1024, 64), (8192, 8), (32768, 4)):
        for dtype in (np.float32, np.float16):
            x = (rng.integers(-200, 200, (rows, n)) * 0.25).astype(dtype)
            x[0, :5] = [np.nan, -np.inf, np.nan, 0.0, -0.0]
            x[1, 64:128], x[1, 3::37] = np.nan, np.nan  # groups of NaN only, and NaN in many groups
            x[1, 10:14] = [np.inf, -np.inf, np.nan, -np.nan]
            x[2, :], x[2, 100] = np.nan, -np.inf
            x[3, :] = -0.0
            if dtype == np.float32:
                x[-1, :6] = [1e-40, -1e-40, 0.0, -0.0, 1e-39, 5.0]
            x[-2] = rng.standard_normal(n).astype(dtype)
            for largest in (True, False):
                for k in (2, 8, 16) + ((17, 32, 256) if n > 1024 else ()) + ((1024,) if n == 32768 else ()):
                    with cases.case(f"rows of {n:5d} {np.dtype(dtype).name} {'largest' if largest else 'smallest'} k={k:2d}"):
                        f = _call(largest, k)
                        _kernel_in(f, x)
                        got = jax.device_get(f(x))
                        # the formula itself, traced afresh (dmljax's own jit would reuse the kernel's trace)
                        xla = compiled_with_each({select_kernels: {"ENABLED": False}, threshold_kernels: {"ENABLED": False}},
                                                 lambda v, k=k, g=largest: top_k_along(v, 1, k, g, np.uint32), x)
                        want = jax.device_get(xla(x))
                        np.testing.assert_array_equal(got[1], want[1])
                        np.testing.assert_array_equal(got[0].view(np.uint16 if dtype == np.float16 else np.uint32),
                                                      want[0].view(np.uint16 if dtype == np.float16 else np.uint32))
    for n in (1024, 32768):  # ARGMAX/ARGMIN of FLOAT16 rows: the kernel with K = 1, both directions
        x = (rng.integers(-200, 200, (64, n)) * 0.25).astype(np.float16)
        x[0, :5] = [np.nan, -np.inf, np.nan, 0.0, -0.0]
        x[2, :], x[3, :] = np.nan, -0.0
        for larger in (True, False):
            for direction in ("INCREASING", "DECREASING"):
                op = dmljax.argmax if larger else dmljax.argmin
                with cases.case(f"rows of {n:5d} float16 {'ARGMAX' if larger else 'ARGMIN'} {direction}"):
                    f = jax.jit(lambda v, op=op, d=direction: op(v, axes=(1,), axis_direction=d))
                    _kernel_in(f, x)
                    got = jax.device_get(f(x))
                    want = jax.device_get(with_settings(select_kernels, jax.jit(lambda v, g=larger, d=direction: arg_extreme(
                        v, (1,), g, d == "DECREASING", np.uint32)), x, ENABLED=False))
                    np.testing.assert_array_equal(got, want)
    for shape, axis in (((256, 1024), 0), ((4, 96, 512), 1), ((32, 2, 256), 0)):  # FLOAT16 columns: the column kernel
        x = (rng.integers(-6, 6, shape) * 0.5).astype(np.float16)  # many ties
        flat = x.reshape(-1, x.shape[-1])
        flat[:, 0], flat[:, 1] = np.nan, -0.0
        flat[5, 2], flat[:, 3] = -np.inf, np.nan
        for larger in (True, False):
            for direction in ("INCREASING", "DECREASING"):
                op = dmljax.argmax if larger else dmljax.argmin
                with cases.case(f"columns {shape} axis {axis} float16 {'ARGMAX' if larger else 'ARGMIN'} {direction}"):
                    f = jax.jit(lambda v, op=op, d=direction, a=axis: op(v, axes=(a,), axis_direction=d))
                    assert os.environ.get("SELECT_CHECK_ON_CPU") or "dmljax_column_arg" in f.lower(x).as_text(), \
                        "the kernel is not in the program"
                    got = jax.device_get(f(x))
                    want = jax.device_get(with_settings(select_kernels, jax.jit(lambda v, g=larger, d=direction, a=axis: arg_extreme(
                        v, (a,), g, d == "DECREASING", np.uint32)), x, ENABLED=False))
                    np.testing.assert_array_equal(got, want)
        for function in ("MAX", "MIN"):  # REDUCE over the same columns: the column kernel's keys
            with cases.case(f"columns {shape} axis {axis} float16 REDUCE {function}"):
                f = jax.jit(lambda v, fn=function, a=axis: dmljax.reduce(v, function=fn, axes=(a,)))
                assert os.environ.get("SELECT_CHECK_ON_CPU") or "dmljax_column_max" in f.lower(x).as_text(), \
                    "the kernel is not in the program"
                got = np.asarray(jax.device_get(f(x)))
                want = np.asarray(jax.device_get(with_settings(select_kernels, jax.jit(
                    lambda v, g=function == "MAX", a=axis: _max_min(v, (a,), g)), x, ENABLED=False)))
                np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    for dtype in (np.float32, np.float16):  # the threshold path's values under jax.grad, jax.jvp and vmap
        x = rng.standard_normal((3, 8192)).astype(dtype)
        w = rng.standard_normal((3, 24)).astype(dtype)
        with cases.case(f"threshold path {np.dtype(dtype).name}: jax.grad, jax.jvp and vmap"):
            def f(t):
                return jnp.sum((dmljax.top_k(t, axis=1, k=24)[0] * w).astype(np.float32))
            grad = jax.jit(jax.grad(f))
            assert os.environ.get("SELECT_CHECK_ON_CPU") or "dmljax_row_top_k_pick" in grad.lower(x).as_text(), \
                "the kernel is not in the program"
            idx = np.asarray(jax.device_get(dmljax.top_k(x, axis=1, k=24)[1])).astype(np.int64)
            want = np.zeros_like(x)
            np.put_along_axis(want, idx, w, axis=1)
            np.testing.assert_array_equal(np.asarray(jax.device_get(grad(x))), want)
            dx = rng.standard_normal(x.shape).astype(dtype)
            _, tangent = jax.jit(lambda a, b: jax.jvp(lambda t: dmljax.top_k(t, axis=1, k=24)[0], (a,), (b,)))(x, dx)
            np.testing.assert_array_equal(np.asarray(jax.device_get(tangent)), np.take_along_axis(dx, idx, axis=1))
            batched = jax.device_get(jax.jit(jax.vmap(lambda t: dmljax.top_k(t, axis=1, k=24)))(np.stack([x, -x])))
            for b, t in enumerate((x, -x)):
                one = jax.device_get(dmljax.top_k(t, axis=1, k=24))
                np.testing.assert_array_equal(batched[1][b], one[1])
                np.testing.assert_array_equal(batched[0][b], one[0])
    return cases.summary()


if __name__ == "__main__":
    sys.exit(main())
