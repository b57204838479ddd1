"""The compiled CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT row kernels (dmljax/_src/scan_kernels.py) on a GPU against the
float64 reference, within the operator's budget, and against the XLA path: every direction and
exclusivity, FLOAT32 and FLOAT16, rows of 16 to 8,192, with NaN, infinities and FLOAT32 denormals,
and the gradient (the tally the other way) through jax.grad. tests/gpu_check.py's shapes (rows of
65,536) stay with XLA, so this is the kernel's check on the device. Prints one line per case and
a summary; exits 1 on any failure.

    python benchmarks/scan_kernel_check.py     (SCAN_CHECK_ON_CPU=1: a dry run of this script on the CPU,
                                                where the XLA path runs and the kernel is not looked for)
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from dmljax._src import scan_kernels  # noqa: E402
from dmljax._src.ops.cumulative import tally  # noqa: E402
from benchmarks.kernel_checks import Cases, with_settings  # noqa: E402
from tests.compare import assert_matches  # noqa: E402
from tests.reference.rules import read  # noqa: E402


def _tally64(x, axis, axis_direction, has_exclusive_sum):
    """The float64 running sum (np.cumsum: its rounding, about n * 2^-53 of the magnitude, is far
    below FLOAT32's budget; the reference's exact sums are quadratic in the row length)."""
    v = read(np.asarray(x))
    v = v[:, ::-1] if axis_direction else v
    with np.errstate(invalid="ignore"):
        y = np.cumsum(v, axis=1)
    if has_exclusive_sum:
        y = np.concatenate([np.zeros((y.shape[0], 1)), y[:, :-1]], axis=1)
    return y[:, ::-1] if axis_direction else y


def _magnitude(x, **kw):
    return _tally64(np.abs(read(np.asarray(x))), **kw)


def _grad64(dy, **kw):  # the transpose: the tally of dY the other way
    return _tally64(np.asarray(dy, np.float64), kw["axis"], 1 - kw["axis_direction"], kw["has_exclusive_sum"])


def main() -> int:
    rng = np.random.default_rng(11)
    cases = Cases()
    spec = dmljax.get_operator("CUMULATIVE_SUMMATION").spec
    for n, rows in ((16, 256), (256, 40), (1024, 24), (8192, 3), (32768, 3)):  # 32,768: carried block to block
        for dtype in (np.float32, np.float16):
            x = (rng.standard_normal((rows, n)) * 4).astype(dtype)
            x[0, 3], x[1, n // 2], x[2, 0] = np.nan, np.inf, -np.inf
            if dtype == np.float32:
                x[-1, :4] = [1e-40, -1e-40, 1e-39, 0.0]
            assert scan_kernels.use_kernel(x.shape, 1, dtype, False), (n, rows)
            dt = dmljax.DataType.from_dtype(np.dtype(dtype))
            for reverse in (False, True):
                for exclusive in (False, True):
                    kw = {"axis": 1, "axis_direction": int(reverse), "has_exclusive_sum": exclusive}
                    with cases.case(f"rows of {n:5d} {np.dtype(dtype).name} reverse={reverse} exclusive={exclusive}"):
                        name = f"rows of {n} reverse={reverse} exclusive={exclusive}"
                        got = jax.jit(lambda v, kw=kw: dmljax.cumulative_summation(v, **kw))(x)
                        hlo = jax.jit(lambda v, kw=kw: dmljax.cumulative_summation(v, **kw)).lower(x).as_text()
                        assert os.environ.get("SCAN_CHECK_ON_CPU") or "dmljax_row_cumsum" in hlo or "__gpu$xla.gpu.triton" in hlo, "the kernel is not in the program"
                        budget = spec.budget(dt, x.shape, {"Axis": 1})
                        assert_matches(got, [_tally64(x, **kw)], dt, budget, magnitude=_magnitude(x, **kw),
                                       context=name)
                        xla = with_settings(scan_kernels, jax.jit(lambda v, r=reverse, e=exclusive: tally(
                            v, 1, r, e, False, False)), x, ENABLED=False)
                        assert_matches(got, [np.asarray(xla, np.float64)], dt, 2 * budget,
                                       magnitude=_magnitude(x, **kw), context=name + " against XLA")
                        clean = np.nan_to_num(x, nan=0.5, posinf=1.0, neginf=-1.0)
                        dy = rng.standard_normal(x.shape).astype(dtype)
                        g = jax.jit(jax.grad(lambda v, kw=kw: (dmljax.cumulative_summation(v, **kw)
                                                               .astype(jnp.float32) * dy).sum()))(clean)
                        assert_matches(g, [_grad64(dy, **kw)], dt, budget,
                                       magnitude=_grad64(np.abs(dy), **kw), context=name + " gradient")
    product_rows_check(rng, cases)
    return cases.summary()


def _product64(x, axis, axis_direction, has_exclusive_product):
    """The float64 running product (an overflow past float64 is far beyond FLOAT32's range)."""
    v = read(np.asarray(x))
    v = v[:, ::-1] if axis_direction else v
    with np.errstate(all="ignore"):
        y = np.cumprod(v, axis=1)
    if has_exclusive_product:
        y = np.concatenate([np.ones((y.shape[0], 1)), y[:, :-1]], axis=1)
    return y[:, ::-1] if axis_direction else y


def product_rows_check(rng, cases):
    """CUMULATIVE_PRODUCT's pair scan kernel, compiled: the reference within the budget, the XLA
    path (PRODUCT_ENABLED off), partial products past FLOAT32's range with prefixes inside it,
    true overflow coming back into range, zeros, NaN, infinities and denormals."""
    spec = dmljax.get_operator("CUMULATIVE_PRODUCT").spec
    for n, rows in ((16, 256), (1024, 24), (8192, 3), (32768, 3)):  # longer than PRODUCT_BLOCK: carried
        for dtype in (np.float32, np.float16):
            x = np.exp(rng.standard_normal((rows, n)) * 0.3) * rng.choice([-1, 1], (rows, n))
            x[0, 3], x[1, n // 2], x[2, 0] = np.nan, np.inf, 0.0
            if n > 1024:  # extremes across a block's edge
                x[0, 1022:1028] = [3e38, 0.47, 2.0, 0.5, 4.0, 0.25] if dtype == np.float32 else [6e4, 0.47, 2.0, 0.5, 4.0, 0.25]
            if dtype == np.float32:
                x[-1, :6] = [3e38, 0.47, 2.0, 0.5, 4.0, 0.25]
                x[-2, :4] = [1e30, 1e30, 1e-30, 1e-30]
                x[-3, :4] = [1e-40, 2.0, -1e-39, 3.0]
            x = x.astype(dtype)
            assert scan_kernels.use_product_kernel(x.shape, 1, dtype, False), (n, rows)
            dt = dmljax.DataType.from_dtype(np.dtype(dtype))
            for reverse in (False, True):
                for exclusive in (False, True):
                    kw = {"axis": 1, "axis_direction": int(reverse), "has_exclusive_product": exclusive}
                    name = f"CUMULATIVE_PRODUCT rows of {n:5d} {np.dtype(dtype).name} reverse={reverse} exclusive={exclusive}"
                    with cases.case(name):
                        f = jax.jit(lambda v, kw=kw: dmljax.cumulative_product(v, **kw))
                        hlo = f.lower(x).as_text()
                        assert os.environ.get("SCAN_CHECK_ON_CPU") or "dmljax_row_cumprod" in hlo, "the kernel is not in the program"
                        got = f(x)
                        budget = spec.budget(dt, x.shape, {"Axis": 1})
                        assert_matches(got, [_product64(x, **kw)], dt, budget, context=name)
                        xla = with_settings(scan_kernels, jax.jit(lambda v, r=reverse, e=exclusive: tally(
                            v, 1, r, e, True, False)), x, PRODUCT_ENABLED=False)
                        assert_matches(got, [np.asarray(xla, np.float64)], dt, 2 * budget, context=name + " against XLA")


if __name__ == "__main__":
    sys.exit(main())
