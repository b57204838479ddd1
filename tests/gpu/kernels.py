"""dmljax's Pallas kernels compiled on a GPU, each against the float64 reference (where its result
is rounded) and against XLA's formula of the same call with the kernels off
(``dmljax.use_kernels(False, ...)``), bit for bit where the kernel's contract is exact. The test
suite runs the kernels only in Pallas's interpreter, on the CPU; this is their check on the device.

    python tests/gpu/kernels.py [KERNEL ...]

on a machine with a CUDA GPU, from the repository root. Kernels (default: all): softmax
(SOFTMAX/LOG_SOFTMAX rows, values and gradients), cumulative (CUMULATIVE_SUMMATION/PRODUCT rows,
every direction and exclusivity, and the signs of zero results), top_k (TOP_K/TOP_K1 rows by the
K-steps and threshold kernels, ARGMAX/ARGMIN of FLOAT16 rows, and the threshold path under
jax.grad, jax.jvp and vmap), extreme_columns (ARGMAX/ARGMIN and REDUCE MAX/MIN of FLOAT16
columns), max_pooling, convolution, convolution_gemm (the 1 x 1 matrix-product forms), convolution_phases (BACKWARD with strides by
its output's phases), convolution_depthwise (FLOAT32 depthwise forward, input and filter gradients), padding, attention (MULTIHEAD_ATTENTION's
cuDNN route in every mode of differentiation), dequantize_gemm (DEQUANTIZE of 4-bit weights then
GEMM, split-K, the rule, and MatMulNBits), elementwise_quantization (QUANTIZE of FLOAT16 to 8 bits
and DEQUANTIZE of 4 bits by a per-tensor scale). Inputs hold NaN, infinities, signed zeros, ties and
FLOAT32 denormals. Prints one line per case and a summary; exit status 1 if any failed.
KERNEL_CHECK_ON_CPU=1 runs the script's code on the CPU (XLA's formula against itself, the
kernels called directly in Pallas's interpreter; nothing about the kernels is learnt). Not a
pytest module: CI has no GPU, and pytest only imports this file.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402

ON_CPU = bool(os.environ.get("KERNEL_CHECK_ON_CPU"))
"""A dry run on the CPU: both paths are XLA's, and the kernels are not looked for in the programs."""


class Cases:
    """Named checks, each reported as it ends; ``summary`` prints the count and gives the exit
    status (1 if any failed)."""

    def __init__(self):
        self.passed = self.failed = 0

    @contextlib.contextmanager
    def case(self, name: str):
        try:
            yield
        except Exception as e:  # noqa: BLE001  (every case is reported, the run goes on)
            self.failed += 1
            print(f"{name}: FAIL {str(e)[:600]}", flush=True)
        else:
            self.passed += 1
            print(f"{name}: ok", flush=True)

    def summary(self) -> int:
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def kernel_in(f, *args, name: str) -> None:
    """The kernel named ``name`` (its pallas_call's name) is in the program of ``f`` for ``args``,
    as lowered or as compiled."""
    if ON_CPU:
        return
    lowered = jax.jit(f).lower(*args)
    assert name in lowered.as_text() or name in lowered.compile().as_text(), f"the kernel {name} is not in the program"


def kernel_not_in(f, *args, name: str) -> None:
    """The kernel named ``name`` is not in the program of ``f`` for ``args`` (its rule left the call
    to XLA)."""
    if ON_CPU:
        return
    lowered = jax.jit(f).lower(*args)
    assert name not in lowered.as_text() and name not in lowered.compile().as_text(), f"the kernel {name} is taken"


def kernels_off(f, *args, names=()):
    """``f(*args)`` traced and compiled afresh with the named kernels (every kernel, if none is
    named) off: XLA's formula of the same call."""
    with dmljax.use_kernels(False, *names):
        return jax.device_get(jax.jit(f).lower(*args).compile()(*args))


def _bits(a):
    a = np.asarray(jax.device_get(a))
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


# ----------------------------------------------------------------------------------------- softmax
def softmax(cases: Cases):
    """SOFTMAX and LOG_SOFTMAX over rows of 2,048 to 65,536 (the kernel's rows): values and
    gradients within the record's budget of the float64 reference (the gradient's +2 ULP), rows
    with NaN, +inf, -inf only, zeros and FLOAT32 denormals."""
    from tests.compare import assert_matches
    from tests.reference.activation import softmax as ref

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float16):
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
                name = f"{'LOG_' if log else ''}SOFTMAX {np.dtype(dtype).name} rows of {n}"
                with cases.case(name):
                    kernel_in(op, x, name="dmljax_row_softmax")
                    y, pull = jax.vjp(jax.jit(op), jnp.asarray(x))
                    g = pull(jnp.asarray(dy))[0]
                    want = (ref._log_softmax if log else ref._softmax)(x)
                    assert_matches(np.asarray(y), want, dt, budget, name,
                                   magnitude=ref._log_magnitude(x) if log else None)
                    grad = (ref._log_softmax_grad if log else ref._softmax_grad)(dy, x)[0]
                    size = (ref._log_softmax_grad_size if log else ref._softmax_grad_size)(dy, x)[0]
                    assert_matches(np.asarray(g), [grad], dt, budget + 2, name + " gradient", magnitude=size)
                    off = kernels_off(op, x, names=("softmax",))
                    assert_matches(np.asarray(y), [np.asarray(off, np.float64)], dt, 2 * budget,
                                   name + " against XLA's formula", magnitude=ref._log_magnitude(x) if log else None)


# -------------------------------------------------------------------------------------- cumulative
def _tally64(x, axis, axis_direction, has_exclusive_sum):
    """The float64 running sum (np.cumsum: its rounding, about n * 2^-53 of the magnitude, is far
    below FLOAT32's budget; the reference's exact sums are quadratic in the row length)."""
    from tests.reference.rules import read

    v = read(np.asarray(x))
    v = v[:, ::-1] if axis_direction else v
    with np.errstate(invalid="ignore"):
        y = np.cumsum(v, axis=1)
    if has_exclusive_sum:
        y = np.concatenate([np.zeros((y.shape[0], 1)), y[:, :-1]], axis=1)
    return y[:, ::-1] if axis_direction else y


def _magnitude(x, **kw):
    from tests.reference.rules import read

    return _tally64(np.abs(read(np.asarray(x))), **kw)


def _grad64(dy, **kw):  # the transpose: the tally of dY the other way
    return _tally64(np.asarray(dy, np.float64), kw["axis"], 1 - kw["axis_direction"], kw["has_exclusive_sum"])


def _product64(x, axis, axis_direction, has_exclusive_product):
    """The float64 running product (an overflow past float64 is far beyond FLOAT32's range)."""
    from tests.reference.rules import read

    v = read(np.asarray(x))
    v = v[:, ::-1] if axis_direction else v
    with np.errstate(all="ignore"):
        y = np.cumprod(v, axis=1)
    if has_exclusive_product:
        y = np.concatenate([np.ones((y.shape[0], 1)), y[:, :-1]], axis=1)
    return y[:, ::-1] if axis_direction else y


def cumulative(cases: Cases):
    """The sum and product row kernels: rows of 16 to 32,768 (longer than a block: the tally
    carried from block to block), every direction and exclusivity, FLOAT32 and FLOAT16, against
    float64 within the budget and against XLA's formula within twice it; the sum's gradient (the
    tally the other way); products past FLOAT32's range with prefixes inside it, true overflow
    coming back into range; and the signs of zero results."""
    from tests.compare import assert_matches

    rng = np.random.default_rng(11)
    spec = dmljax.get_operator("CUMULATIVE_SUMMATION").spec
    for n, rows in ((16, 256), (256, 40), (1024, 24), (8192, 3), (32768, 3)):
        for dtype in (np.float32, np.float16):
            x = (rng.standard_normal((rows, n)) * 4).astype(dtype)
            x[0, 3], x[1, n // 2], x[2, 0] = np.nan, np.inf, -np.inf
            if dtype == np.float32:
                x[-1, :4] = [1e-40, -1e-40, 1e-39, 0.0]
            dt = dmljax.DataType.from_dtype(np.dtype(dtype))
            budget = spec.budget(dt, x.shape, {"Axis": 1})
            for reverse in (False, True):
                for exclusive in (False, True):
                    kw = {"axis": 1, "axis_direction": int(reverse), "has_exclusive_sum": exclusive}
                    name = f"CUMULATIVE_SUMMATION rows of {n:5d} {np.dtype(dtype).name} reverse={reverse} " \
                           f"exclusive={exclusive}"
                    with cases.case(name):
                        f = lambda v, kw=kw: dmljax.cumulative_summation(v, **kw)  # noqa: E731
                        kernel_in(f, x, name="dmljax_row_cumsum")
                        got = jax.jit(f)(x)
                        assert_matches(got, [_tally64(x, **kw)], dt, budget, magnitude=_magnitude(x, **kw),
                                       context=name)
                        off = kernels_off(f, x, names=("cumulative",))
                        assert_matches(got, [np.asarray(off, np.float64)], dt, 2 * budget,
                                       magnitude=_magnitude(x, **kw), context=name + " against XLA's formula")
                        clean = np.nan_to_num(x, nan=0.5, posinf=1.0, neginf=-1.0)
                        dy = rng.standard_normal(x.shape).astype(dtype)
                        g = jax.jit(jax.grad(lambda v, f=f: (f(v).astype(jnp.float32) * dy).sum()))(clean)
                        assert_matches(g, [_grad64(dy, **kw)], dt, budget, magnitude=_grad64(np.abs(dy), **kw),
                                       context=name + " gradient")
    spec = dmljax.get_operator("CUMULATIVE_PRODUCT").spec
    for n, rows in ((16, 256), (1024, 24), (8192, 3), (32768, 3)):
        for dtype in (np.float32, np.float16):
            x = np.exp(rng.standard_normal((rows, n)) * 0.3) * rng.choice([-1, 1], (rows, n))
            x[0, 3], x[1, n // 2], x[2, 0] = np.nan, np.inf, 0.0
            if n > 1024:  # extremes across a block's edge
                x[0, 1022:1028] = [3e38 if dtype == np.float32 else 6e4, 0.47, 2.0, 0.5, 4.0, 0.25]
            if dtype == np.float32:
                x[-1, :6] = [3e38, 0.47, 2.0, 0.5, 4.0, 0.25]
                x[-2, :4] = [1e30, 1e30, 1e-30, 1e-30]
                x[-3, :4] = [1e-40, 2.0, -1e-39, 3.0]
            x = x.astype(dtype)
            dt = dmljax.DataType.from_dtype(np.dtype(dtype))
            budget = spec.budget(dt, x.shape, {"Axis": 1})
            for reverse in (False, True):
                for exclusive in (False, True):
                    kw = {"axis": 1, "axis_direction": int(reverse), "has_exclusive_product": exclusive}
                    name = f"CUMULATIVE_PRODUCT rows of {n:5d} {np.dtype(dtype).name} reverse={reverse} " \
                           f"exclusive={exclusive}"
                    with cases.case(name):
                        f = lambda v, kw=kw: dmljax.cumulative_product(v, **kw)  # noqa: E731
                        kernel_in(f, x, name="dmljax_row_cumprod")
                        got = jax.jit(f)(x)
                        assert_matches(got, [_product64(x, **kw)], dt, budget, context=name)
                        off = kernels_off(f, x, names=("cumulative",))
                        assert_matches(got, [np.asarray(off, np.float64)], dt, 2 * budget,
                                       context=name + " against XLA's formula")
    zero_signs(cases, rng)


def zero_signs(cases: Cases, rng):
    """The signs of zero results against float64 NumPy: products whose zero crosses a block's edge
    (rows of 8,192: the carried element) and a short row (one block), forward and reverse, all of
    float64's sign; a sum of leading -0.0 terms is reported, not checked (its sign is left open)."""
    for dtype in (np.float32, np.float16):
        for n in (1024, 8192):
            x = rng.choice([-1.0, 1.0], (64, n)) * np.exp2(rng.uniform(-0.01, 0.01, (64, n)))
            x[:, 1000] = -0.0  # zeros from here on, their signs the product of the terms'
            x = x.astype(dtype)
            for reverse in (0, 1):
                name = f"CUMULATIVE_PRODUCT {np.dtype(dtype).name} rows of {n} {'reverse' if reverse else 'forward'}: " \
                       "the signs of zeros"
                with cases.case(name):
                    got = np.asarray(jax.jit(lambda v, r=reverse: dmljax.cumulative_product(
                        v, axis=1, axis_direction=r))(x))
                    wide = x.astype(np.float64)
                    ref = np.cumprod(wide[:, ::-1], axis=1)[:, ::-1] if reverse else np.cumprod(wide, axis=1)
                    zero = (ref == 0) & (got == 0)
                    same = int((np.signbit(got[zero]) == np.signbit(ref[zero])).sum())
                    assert zero.any() and same == int(zero.sum()), f"{same} of {int(zero.sum())} zeros of float64's sign"
        s = np.full((64, 1024), -0.0, dtype)
        s[:, 512:] = 1.0
        got = np.asarray(jax.jit(lambda v: dmljax.cumulative_summation(v, axis=1))(s))
        zero = got == 0
        print(f"CUMULATIVE_SUMMATION {np.dtype(dtype).name} of leading -0.0: {int(zero.sum())} zeros, "
              f"{int(np.signbit(got[zero]).sum())} of them -0.0 (left open; float64's cumsum gives +0.0)", flush=True)


# ------------------------------------------------------------------------------ top_k, extreme columns
def top_k(cases: Cases):
    """TOP_K and TOP_K1 (both directions) over rows of 1,024 to 32,768, K of 2 to 1,024 (the
    K-steps kernel up to K = 16 on rows of 1,024, the threshold kernels on longer rows): indices and
    values bit for bit against XLA's formula, rows with many ties, NaN, infinities, signed zeros
    and FLOAT32 denormals; ARGMAX/ARGMIN of FLOAT16 rows (the K-steps kernel with K = 1); the
    threshold path's values under jax.grad, jax.jvp and vmap."""
    rng = np.random.default_rng(13)
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
                    name = f"TOP_K rows of {n:5d} {np.dtype(dtype).name} {'largest' if largest else 'smallest'} k={k}"
                    with cases.case(name):
                        if largest:
                            f = lambda v, k=k: dmljax.top_k(v, axis=1, k=k)  # noqa: E731
                        else:
                            f = lambda v, k=k: dmljax.top_k1(v, axis=1, k=k, axis_direction="INCREASING")  # noqa: E731
                        kernel_in(f, x, name="dmljax_row_top_k")
                        got = jax.device_get(jax.jit(f)(x))
                        want = kernels_off(f, x)
                        np.testing.assert_array_equal(got[1], want[1])
                        np.testing.assert_array_equal(_bits(got[0]), _bits(want[0]))
    for n in (1024, 32768):
        x = (rng.integers(-200, 200, (64, n)) * 0.25).astype(np.float16)
        x[0, :5] = [np.nan, -np.inf, np.nan, 0.0, -0.0]
        x[2, :], x[3, :] = np.nan, -0.0
        for op in (dmljax.argmax, dmljax.argmin):
            for direction in ("INCREASING", "DECREASING"):
                with cases.case(f"rows of {n:5d} float16 {op.__name__.upper()} {direction}"):
                    f = lambda v, op=op, d=direction: op(v, axes=(1,), axis_direction=d)  # noqa: E731
                    kernel_in(f, x, name="dmljax_row_top_k")
                    np.testing.assert_array_equal(jax.device_get(jax.jit(f)(x)), kernels_off(f, x))
    for dtype in (np.float32, np.float16):
        x = rng.standard_normal((3, 8192)).astype(dtype)
        w = rng.standard_normal((3, 24)).astype(dtype)
        with cases.case(f"threshold path {np.dtype(dtype).name}: jax.grad, jax.jvp and vmap"):
            def loss(t):
                return jnp.sum((dmljax.top_k(t, axis=1, k=24)[0] * w).astype(np.float32))
            grad = jax.grad(loss)
            kernel_in(grad, x, name="dmljax_row_top_k_pick")
            idx = np.asarray(jax.device_get(dmljax.top_k(x, axis=1, k=24)[1])).astype(np.int64)
            want = np.zeros_like(x)
            np.put_along_axis(want, idx, w, axis=1)
            np.testing.assert_array_equal(np.asarray(jax.device_get(jax.jit(grad)(x))), want)
            dx = rng.standard_normal(x.shape).astype(dtype)
            _, tangent = jax.jit(lambda a, b: jax.jvp(lambda t: dmljax.top_k(t, axis=1, k=24)[0], (a,), (b,)))(x, dx)
            np.testing.assert_array_equal(np.asarray(jax.device_get(tangent)), np.take_along_axis(dx, idx, axis=1))
            batched = jax.device_get(jax.jit(jax.vmap(lambda t: dmljax.top_k(t, axis=1, k=24)))(np.stack([x, -x])))
            for b, t in enumerate((x, -x)):
                one = jax.device_get(dmljax.top_k(t, axis=1, k=24))
                np.testing.assert_array_equal(batched[1][b], one[1])
                np.testing.assert_array_equal(batched[0][b], one[0])


def extreme_columns(cases: Cases):
    """ARGMAX/ARGMIN (both directions) and REDUCE MAX/MIN of FLOAT16 over the first axes (the
    column kernel), three shapes with many ties, NaN and signed zeros: bit for bit against XLA's
    formula."""
    rng = np.random.default_rng(17)
    for shape, axis in (((256, 1024), 0), ((4, 96, 512), 1), ((32, 2, 256), 0)):
        x = (rng.integers(-6, 6, shape) * 0.5).astype(np.float16)  # many ties
        flat = x.reshape(-1, x.shape[-1])
        flat[:, 0], flat[:, 1] = np.nan, -0.0
        flat[5, 2], flat[:, 3] = -np.inf, np.nan
        for op in (dmljax.argmax, dmljax.argmin):
            for direction in ("INCREASING", "DECREASING"):
                with cases.case(f"columns {shape} axis {axis} float16 {op.__name__.upper()} {direction}"):
                    f = lambda v, op=op, d=direction, a=axis: op(v, axes=(a,), axis_direction=d)  # noqa: E731
                    kernel_in(f, x, name="dmljax_column_arg")
                    np.testing.assert_array_equal(jax.device_get(jax.jit(f)(x)), kernels_off(f, x))
        for function in ("MAX", "MIN"):
            with cases.case(f"columns {shape} axis {axis} float16 REDUCE {function}"):
                f = lambda v, fn=function, a=axis: dmljax.reduce(v, function=fn, axes=(a,))  # noqa: E731
                kernel_in(f, x, name="dmljax_column_max")
                np.testing.assert_array_equal(_bits(jax.jit(f)(x)), _bits(kernels_off(f, x)))


# ------------------------------------------------------------------------------------- max_pooling
POOL_GEOMETRIES = [  # (size, strides, dilations, start, end)
    ((3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    ((2, 2), (2, 2), (1, 1), (0, 0), (0, 0)),
    ((2, 3), (1, 2), (2, 1), (0, 2), (1, 0)),
    ((1, 2), (1, 1), (1, 1), (0, 3), (2, 4)),
    ((8, 8), (3, 1), (1, 1), (2, 0), (0, 5)),
    ((3, 3), (1, 1), (3, 3), (4, 4), (4, 4)),
]


def _pool_inputs(rng, dtype):
    x = (rng.integers(-4, 4, (4, 8, 37, 41)) * 0.5).astype(dtype)  # many ties and zeros
    x[0, 0, :3, :] = np.nan
    x[0, 1, 0, :6] = [np.nan, -np.inf, -0.0, 0.0, np.nan, -0.0]
    x[0, 2] = -0.0
    x[0, 2, 3::2, 1::3] = 0.0
    x[1, 0] = -np.inf
    x[1, 0, 4::7, 4::5] = np.nan
    x[2, 3] = rng.standard_normal((37, 41)).astype(dtype)
    if dtype == np.float32:
        x[1, 1, 0, :8] = [1e-40, -1e-40, -0.0, -1e-40, 0.0, 1e-40, -1e-40, -1e-40]
    return x


def max_pooling(cases: Cases):
    """The MAX_POOLING kernel called directly (it serves FLOAT16 windows of 5 positions or more in
    dmljax; here every geometry and FLOAT32 as well), compiled, against MAX_POOLING2's values with
    the kernel off, bit for bit: windows of NaN only, NaN beside -inf, every ordered pair of NaN,
    -inf, -0, +0, -1, 1 and inf, ties, FLOAT32 denormals, strides, dilations, padding on each side
    and windows wholly in it; and that dmljax's own FLOAT16 3 x 3 call holds the kernel."""
    from dmljax._src.kernels.max_pooling import max_pool_values

    rng = np.random.default_rng(5)

    def xla(v, size, strides, dilations, start, end):
        return dmljax.max_pooling2(v, window_size=size, strides=strides, dilations=dilations, start_padding=start,
                                   end_padding=end)[0]

    for dtype in (np.float16, np.float32):
        x = _pool_inputs(rng, dtype)
        values = np.array([np.nan, -np.inf, -0.0, 0.0, -1.0, 1.0, np.inf], dtype)
        pairs = np.stack(np.meshgrid(values, values), -1).reshape(1, 1, 1, -1)
        for label, v, geometries in ((f"{np.dtype(dtype).name} window", x, POOL_GEOMETRIES),
                                     (f"{np.dtype(dtype).name} every ordered pair of NaN, -inf, -0, +0, -1, 1, inf",
                                      pairs, [((1, 2), (1, 2), (1, 1), (0, 0), (0, 0))])):
            for g in geometries:
                with cases.case(f"{label} {g}"):
                    got = jax.jit(lambda t, g=g: max_pool_values(t, *g, interpret=ON_CPU))(v)
                    want = kernels_off(lambda t, g=g: xla(t, *g), v, names=("max_pooling",))
                    np.testing.assert_array_equal(_bits(got), _bits(want))
    with cases.case("float16 3 x 3 windows every 2: dmljax's call holds the kernel"):
        x = _pool_inputs(rng, np.float16)
        f = lambda t: dmljax.max_pooling(t, window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),  # noqa: E731
                                         end_padding=(1, 1))
        kernel_in(f, x, name="dmljax_max_pool")
        np.testing.assert_array_equal(_bits(jax.jit(f)(x)), _bits(kernels_off(f, x, names=("max_pooling",))))


# ------------------------------------------------------------------------------------- convolution
CONV_GEOMETRIES = [  # (input Sizes, filter Sizes, attributes): FLOAT32 forwards the kernel takes
    ((2, 16, 5, 7), (32, 16, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1)}),
    ((1, 32, 9, 10), (16, 32, 3, 3), {"dilations": (2, 2), "start_padding": (0, 2), "end_padding": (1, 2)}),
    ((1, 16, 4, 20), (16, 16, 1, 3), {"mode": "CONVOLUTION", "start_padding": (0, 0), "end_padding": (0, 2)}),
    ((2, 16, 9, 11), (16, 16, 3, 3), {"strides": (2, 2), "start_padding": (0, 1), "end_padding": (1, 0)}),
    ((1, 32, 7, 12), (16, 32, 3, 2), {"strides": (1, 2), "dilations": (2, 1)}),
    ((4, 64, 56, 56), (64, 64, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1)}),
    ((2, 32, 28, 28), (64, 32, 3, 2), {"start_padding": (1, 0), "end_padding": (1, 1)}),
    ((3, 64, 17, 19), (16, 64, 3, 3), {"dilations": (2, 1), "start_padding": (1, 1), "end_padding": (3, 1)}),
    ((2, 16, 33, 8), (32, 16, 2, 3), {"mode": "CONVOLUTION", "start_padding": (1, 0), "end_padding": (0, 2)}),
    ((4, 64, 56, 56), (64, 64, 3, 3), {"strides": (2, 2), "start_padding": (1, 1), "end_padding": (1, 1)}),
    ((3, 32, 29, 30), (64, 32, 3, 3), {"strides": (2, 1), "dilations": (1, 2)}),
    ((2, 64, 20, 17), (32, 64, 3, 3), {"strides": (1, 2), "start_padding": (2, 0), "end_padding": (0, 1)}),
]


def _conv_inputs(x_shape, w_shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    x.flat[:6] = [1e-39, -1e-39, 0.0, -0.0, 3e4, -2.5]  # denormals read as zeros
    w.flat[:2] = [-1e-40, 1e-38]
    return x, w


def convolution(cases: Cases):
    """CONVOLUTION's FLOAT32 kernel: each geometry in the program, within the record's budget of the
    float64 reference, within twice it of XLA's formula on the same GPU (cuDNN's convolution between
    the flush passes), and its gradients against that formula's; bias and RELU after the kernel;
    a batch by jax.vmap; DirectML's flushes (denormals read and written as zeros)."""
    from tests import catalog
    from tests.compare import assert_matches
    from tests.reference.convolution.convolution import _magnitude
    from tests.reference.convolution.convolution import convolution as reference
    from tests.reference.record import Attrs

    spec = dmljax.get_operator("CONVOLUTION").spec
    rng = np.random.default_rng(0)
    for x_shape, w_shape, attrs in CONV_GEOMETRIES:
        label = f"CONVOLUTION {x_shape} * {w_shape} {attrs}"
        x, w = _conv_inputs(x_shape, w_shape)
        f = lambda a, b, attrs=attrs: dmljax.convolution(a, b, **attrs)  # noqa: E731
        budget = catalog.budget(spec, Attrs(attrs), dmljax.DataType.FLOAT32, sizes=x.shape, args=(x, w))
        with cases.case(f"{label}: against the reference and XLA's formula"):
            kernel_in(f, x, w, name="dmljax_convolution_taps")
            y = np.asarray(jax.jit(f)(x, w))
            assert_matches(y, [reference(x, w, **attrs)[0]], dmljax.DataType.FLOAT32, budget, "kernel vs reference",
                           magnitude=_magnitude(x, w, **attrs))
            want = np.asarray(kernels_off(f, x, w, names=("convolution",)))
            assert_matches(y, [want.astype(np.float64)], dmljax.DataType.FLOAT32, 2 * budget,
                           "kernel vs XLA's formula", magnitude=_magnitude(x, w, **attrs))
        with cases.case(f"{label}: gradients against XLA's formula's"):
            dy = rng.standard_normal(y.shape).astype(np.float32)
            grad = lambda a, b, f=f: jax.grad(lambda p, q: jnp.vdot(f(p, q), dy), argnums=(0, 1))(a, b)  # noqa: E731
            got = jax.jit(grad)(x, w)
            for g, h in zip(got, kernels_off(grad, x, w, names=("convolution",))):
                np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-5, atol=1e-5)
    with cases.case("CONVOLUTION: bias and RELU after the kernel"):
        x, w = _conv_inputs((2, 32, 12, 12), (32, 32, 3, 3))
        b = rng.standard_normal((1, 32, 1, 1)).astype(np.float32)
        relu = dmljax.FusedActivation("ACTIVATION_RELU")
        got = np.asarray(dmljax.convolution(x, w, b, start_padding=(1, 1), end_padding=(1, 1), fused_activation=relu))
        want = np.maximum(np.asarray(dmljax.convolution(x, w, start_padding=(1, 1), end_padding=(1, 1))) + b, 0)
        np.testing.assert_array_equal(got, want)
    with cases.case("CONVOLUTION: batched by jax.vmap"):
        x, w = _conv_inputs((2, 16, 7, 9), (32, 16, 3, 3))
        xs = np.stack([x, 2 * x, -x])
        pads = {"start_padding": (1, 1), "end_padding": (1, 1)}
        got = np.asarray(jax.jit(jax.vmap(lambda a: dmljax.convolution(a, w, **pads)))(xs))
        for i in range(3):
            np.testing.assert_array_equal(got[i], np.asarray(dmljax.convolution(xs[i], w, **pads)))
    with cases.case("CONVOLUTION: denormals read and written as zeros"):
        x = np.full((1, 16, 9, 9), 1e-39, np.float32)
        w = np.full((16, 16, 3, 3), 2.0**100, np.float32)
        assert not np.asarray(dmljax.convolution(x, w, start_padding=(1, 1), end_padding=(1, 1))).any()
        x = np.full((1, 16, 9, 9), 1e-20, np.float32)
        w = np.zeros((16, 16, 3, 3), np.float32)
        w[:, 0] = -1e-19
        got = np.asarray(dmljax.convolution(x, w, start_padding=(1, 1), end_padding=(1, 1)))
        assert not got.any() and not np.isnan(got).any()
        print(f"  negative zeros: {int(np.signbit(got).sum())} of {got.size}")


# --------------------------------------------------------------------------- convolution_depthwise
DEPTHWISE_GEOMETRIES = [  # (input Sizes, filter Sizes, attributes): FLOAT32 depthwise forwards the kernels take
    ((2, 40, 5, 7), (40, 1, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1)}),
    ((1, 20, 9, 11), (20, 1, 3, 3), {"strides": (2, 2), "dilations": (1, 2), "start_padding": (0, 2),
                                     "end_padding": (1, 0)}),
    ((2, 33, 11, 10), (33, 1, 5, 5), {"strides": (2, 2), "start_padding": (2, 2), "end_padding": (2, 2)}),
    ((2, 16, 9, 8), (16, 1, 2, 3), {"dilations": (3, 2), "mode": "CONVOLUTION"}),
    ((1, 12, 6, 8), (36, 1, 3, 2), {"strides": (1, 2), "start_padding": (1, 0), "end_padding": (1, 1)}),  # multiplier
    ((8, 96, 56, 56), (96, 1, 3, 3), {"strides": (2, 2), "start_padding": (1, 1), "end_padding": (1, 1)}),
    ((8, 144, 28, 28), (144, 1, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1)}),
    ((4, 960, 7, 7), (960, 1, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1)}),
    ((4, 576, 14, 14), (576, 1, 5, 5), {"start_padding": (2, 2), "end_padding": (2, 2)}),
]


def convolution_depthwise(cases: Cases):
    """CONVOLUTION's FLOAT32 depthwise kernels (kernels/convolution_depthwise.py), forced
    (``force_kernels``: every direction where it can run), each geometry: the forward kernel in
    the program, within the record's budget of the float64 reference and within twice it of XLA's
    formula with the kernels off; the input's and filter's gradients against that formula's
    (within 2^-20 of the sums' magnitudes), and the kernels of the gradients in their program; bit for bit on integers in every
    direction; jax.jvp; a batch by jax.vmap; DirectML's flushes (denormals read and written as zeros)."""
    from dmljax._src.kernel_seam import force_kernels
    from tests import catalog
    from tests.compare import assert_matches
    from tests.reference.convolution.convolution import _magnitude
    from tests.reference.convolution.convolution import convolution as reference
    from tests.reference.record import Attrs

    spec = dmljax.get_operator("CONVOLUTION").spec
    switch = "convolution_depthwise"
    rng = np.random.default_rng(0)
    for x_shape, w_shape, attrs in DEPTHWISE_GEOMETRIES:
        attrs = dict(attrs, group_count=x_shape[1])
        label = f"CONVOLUTION depthwise {x_shape} * {w_shape} {attrs}"
        x, w = _conv_inputs(x_shape, w_shape)
        f = lambda a, b, attrs=attrs: dmljax.convolution(a, b, **attrs)  # noqa: E731
        budget = catalog.budget(spec, Attrs(attrs), dmljax.DataType.FLOAT32, sizes=x.shape, args=(x, w))
        unit = max(attrs.get("strides", (1, 1))) == 1 and w_shape[0] == x_shape[1]
        with cases.case(f"{label}: against the reference and XLA's formula"):
            with force_kernels(switch):
                kernel_in(f, x, w, name="dmljax_convolution_depthwise")
                y = np.asarray(jax.jit(f)(x, w))
            assert_matches(y, [reference(x, w, **attrs)[0]], dmljax.DataType.FLOAT32, budget, "kernel vs reference",
                           magnitude=_magnitude(x, w, **attrs))
            want = np.asarray(kernels_off(f, x, w, names=(switch,)))
            assert_matches(y, [want.astype(np.float64)], dmljax.DataType.FLOAT32, 2 * budget,
                           "kernel vs XLA's formula", magnitude=_magnitude(x, w, **attrs))
        with cases.case(f"{label}: gradients and tangent against XLA's formula's"):
            dy = rng.standard_normal(y.shape).astype(np.float32)
            dy.flat[:2] = [1e-39, -1e-39]  # a cotangent is not flushed (XLA's formula keeps them too)
            grad = lambda a, b, f=f: jax.grad(lambda p, q: jnp.vdot(f(p, q), dy), argnums=(0, 1))(a, b)  # noqa: E731
            with force_kernels(switch):
                kernel_in(grad, x, w, name="dmljax_convolution_depthwise_filter")
                got = jax.jit(grad)(x, w)
                tangent = jax.jit(lambda a, b: jax.jvp(f, (a, b), (a, b))[1])(x, w)
            # each gradient element sums thousands of products, in another order than XLA's: within
            # 2^-20 of the sum of the products' magnitudes (the gradients of |x|, |w| and |dy|)
            bound = kernels_off(lambda a, b: jax.grad(lambda p, q: jnp.vdot(f(p, q), np.abs(dy)), argnums=(0, 1))(a, b),
                                np.abs(x), np.abs(w), names=(switch,))
            for g, h, m in zip(got, kernels_off(grad, x, w, names=(switch,)), bound):
                excess = np.abs(np.asarray(g, np.float64) - np.asarray(h, np.float64)) - 2.0**-20 * np.asarray(m, np.float64)
                assert (excess <= 0).all(), f"{int((excess > 0).sum())} elements beyond 2^-20 of their magnitude"
            want_t = kernels_off(lambda a, b: jax.jvp(f, (a, b), (a, b))[1], x, w, names=(switch,))
            np.testing.assert_allclose(np.asarray(tangent), np.asarray(want_t), rtol=1e-5, atol=1e-5)
        with cases.case(f"{label}: integers bit for bit in every direction"
                        + (" (the input's gradient by the kernel)" if unit else "")):
            xi, wi = (rng.integers(-4, 5, s).astype(np.float32) for s in (x_shape, w_shape))
            dyi = rng.integers(-4, 5, y.shape).astype(np.float32)

            def everything(a, b, f=f, dyi=dyi):
                out, pull = jax.vjp(f, a, b)
                return (out,) + pull(jnp.asarray(dyi))
            with force_kernels(switch):
                got = jax.jit(everything)(xi, wi)
            for name, g, h in zip(("value", "input gradient", "filter gradient"), got,
                                  kernels_off(everything, xi, wi, names=(switch,))):
                np.testing.assert_array_equal(np.asarray(g), np.asarray(h), err_msg=name)
    pads = {"start_padding": (1, 1), "end_padding": (1, 1), "group_count": 32}
    with cases.case("CONVOLUTION depthwise: the rule takes the kernel (MobileNetV2's 96 x 112 x 112, stride 2)"):
        x, w = _conv_inputs((2, 96, 112, 112), (96, 1, 3, 3))
        kernel_in(lambda a, b: dmljax.convolution(a, b, strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1),
                                                  group_count=96), x, w, name="dmljax_convolution_depthwise")
    with cases.case("CONVOLUTION depthwise: batched by jax.vmap"):
        x, w = _conv_inputs((2, 32, 7, 9), (32, 1, 3, 3))
        xs = np.stack([x, 2 * x, -x])
        got = np.asarray(jax.jit(jax.vmap(lambda a: dmljax.convolution(a, w, **pads)))(xs))
        for i in range(3):
            np.testing.assert_array_equal(got[i], np.asarray(dmljax.convolution(xs[i], w, **pads)))
    with cases.case("CONVOLUTION depthwise: denormals read and written as zeros"):
        x = np.full((1, 32, 9, 9), 1e-39, np.float32)
        w = np.full((32, 1, 3, 3), 2.0**100, np.float32)
        assert not np.asarray(dmljax.convolution(x, w, **pads)).any()
        x = np.full((1, 32, 9, 9), 1e-20, np.float32)
        w = np.full((32, 1, 3, 3), -1e-19, np.float32)
        got = np.asarray(dmljax.convolution(x, w, **pads))
        assert not got.any() and not np.isnan(got).any()
        dy = np.ones(got.shape, np.float32)
        dw_ = np.asarray(jax.jit(jax.grad(lambda b: jnp.vdot(dmljax.convolution(
            np.full((1, 32, 9, 9), 1e-39, np.float32), b, **pads), dy)))(w))
        assert not dw_.any(), "the filter's gradient read the input's denormals"


# ----------------------------------------------------------------------------------------- padding
PAD_CASES = [((10,), (3,), (4,)), ((5, 7), (2, 9), (3, 1)), ((3, 4, 5), (1, 0, 2), (2, 3, 0)),
             ((2, 3, 2, 6), (0, 1, 2, 7), (1, 0, 3, 5)), ((2, 2, 3, 3, 9), (1, 0, 2, 0, 3), (0, 1, 0, 4, 4)),
             ((1000, 1024), (64, 64), (64, 64)), ((37, 6000), (3, 100), (5, 2)), ((3, 5000), (0, 5), (0, 5000))]
NP_MODES = {"EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric", "WRAP": "wrap"}


def padding(cases: Cases):
    """The PADDING kernels called directly for every copying mode (dmljax sends only EDGE to them),
    compiled, against PADDING with the kernel off and against np.pad, bit for bit: FLOAT32, FLOAT16,
    INT8 and UINT16, 1-D to 5-D, pads longer than the axis, a last axis longer than a column block,
    rows not filling the last program; dmljax's EDGE call holds the kernel, and its gradient equals
    the kernel-off formula's."""
    from dmljax._src.kernels.padding import pad_rows

    rng = np.random.default_rng(0)
    for shape, s, e in PAD_CASES:
        for mode, np_mode in NP_MODES.items():
            for dtype in (np.float32, np.float16, np.int8, np.uint16):
                with cases.case(f"PADDING {mode} {shape} {s} {e} {np.dtype(dtype).name}"):
                    x = jnp.asarray((rng.standard_normal(shape) * 40).astype(dtype))
                    got = np.asarray(jax.jit(lambda v, m=mode: pad_rows(v, dmljax.PaddingMode[m], s, e,
                                                                        interpret=ON_CPU))(x))
                    off = np.asarray(kernels_off(lambda v, m=mode: dmljax.padding(
                        v, padding_mode=m, start_padding=s, end_padding=e), x, names=("padding",)))
                    want = np.pad(np.asarray(x), list(zip(s, e)), mode=np_mode)
                    assert got.shape == want.shape, (got.shape, want.shape)
                    assert np.array_equal(got.view(np.uint8), off.view(np.uint8)), "kernel != XLA's formula"
                    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), "kernel != np.pad"
    with cases.case("PADDING EDGE: dmljax's call holds the kernel; its gradient"):
        x = jnp.asarray(rng.standard_normal((64, 700)).astype(np.float32))
        dy = jnp.asarray(rng.standard_normal((64 + 9, 700 + 300)).astype(np.float32))
        f = lambda v: dmljax.padding(v, padding_mode="EDGE", start_padding=(4, 100), end_padding=(5, 200))  # noqa: E731
        kernel_in(f, x, name="dmljax_pad")
        grad = jax.grad(lambda v: jnp.sum(f(v) * dy))
        np.testing.assert_array_equal(np.asarray(jax.jit(grad)(x)), np.asarray(kernels_off(grad, x, names=("padding",))))
    with cases.case("PADDING: the kernel-off formula is another program (the checks above can fail)"):
        x = jnp.asarray(rng.standard_normal((40, 300)).astype(np.float16))
        f = lambda v: dmljax.padding(v, padding_mode="EDGE", start_padding=(3, 5), end_padding=(3, 5))  # noqa: E731
        with dmljax.use_kernels(False, "padding"):
            off = jax.jit(f).lower(x).as_text()
        assert "dmljax_pad" not in off


def convolution_gemm(cases: Cases):
    """CONVOLUTION's 1 x 1 matrix-product forms (kernels/convolution_gemm.py), each forced
    (``force_kernels``; the columns form with each method of its filter gradient), compiled: a dot
    and no convolution in the program but XLA's filter gradient; forward, input and
    filter gradients within twice the record's budget of XLA's convolution with the forms off, in
    NCHW and NHWC memory (transposes around the call), FLOAT16 and FLOAT32 (denormals flushed)."""
    from dmljax._src.kernel_seam import force_kernels
    from dmljax._src.kernels import convolution_gemm as gemm
    from tests import catalog
    from tests.compare import assert_matches
    from tests.reference.record import Attrs

    spec = dmljax.get_operator("CONVOLUTION").spec
    names = (gemm.CONVOLUTION_GEMM_ROWS.name, gemm.CONVOLUTION_GEMM_COLUMNS.name)
    rng = np.random.default_rng(1)
    shapes = [((8, 64, 14, 14), (32, 64, 1, 1), {}), ((4, 32, 13, 9), (48, 32, 1, 1), {"strides": (2, 2)}),
              ((4, 48, 7, 7), (48, 16, 1, 1), {"direction": "BACKWARD"})]
    for dtype in (np.float32, np.float16):
        for x_shape, w_shape, attrs in shapes:
            x = rng.standard_normal(x_shape).astype(dtype)
            w = (rng.standard_normal(w_shape) / np.sqrt(x_shape[1])).astype(dtype)
            if dtype == np.float32:
                x.flat[:2] = [1e-39, -1e-39]
            for memory in ("NCHW", "NHWC"):
                def f(a, b, attrs=attrs, memory=memory):
                    if memory == "NHWC":  # a, the result: NHWC arrays seen as logical NCHW
                        return jnp.transpose(dmljax.convolution(jnp.transpose(a, (0, 3, 1, 2)), b, **attrs), (0, 2, 3, 1))
                    return dmljax.convolution(a, b, **attrs)
                xm = x.transpose(0, 2, 3, 1) if memory == "NHWC" else x
                dy = rng.standard_normal(jax.eval_shape(f, xm, w).shape).astype(dtype)

                def both(a, b, f=f, dy=dy):
                    y, pull = jax.vjp(f, a, b)
                    return (y, *pull(jnp.asarray(dy)))
                want = kernels_off(both, xm, w, names=names)
                budget = catalog.budget(spec, Attrs(attrs), dmljax.DataType.from_dtype(dtype), sizes=x.shape,
                                        args=(x, w))
                runs = [(gemm.CONVOLUTION_GEMM_ROWS.name, None)] + [
                    (gemm.CONVOLUTION_GEMM_COLUMNS.name, m) for m in gemm.FILTER_GRADIENTS]
                for name, method in runs:
                    label = (f"CONVOLUTION {np.dtype(dtype).name} {x_shape} * {w_shape} {attrs} {memory} {name}"
                             + (f" (filter gradient: {method})" if method else ""))
                    with cases.case(label):
                        forced, gemm.FORCED_FILTER_GRADIENT = gemm.FORCED_FILTER_GRADIENT, method
                        jax.clear_caches()  # the method is no switch: every trace made again
                        try:
                            with force_kernels(name):
                                lowered = jax.jit(both).lower(xm, w)
                                got = jax.device_get(lowered.compile()(xm, w))
                        finally:
                            gemm.FORCED_FILTER_GRADIENT = forced
                        text = lowered.as_text()
                        if not ON_CPU:  # XLA's filter gradient is the one convolution a form may hold
                            convolutions = text.count("stablehlo.convolution")
                            assert "dot_general" in text and convolutions == int(method == "xla"), "no product"
                        for g, h, what in zip(got, want, ("output", "input gradient", "filter gradient")):
                            scale = float(np.max(np.abs(np.asarray(h, np.float64)))) or 1.0
                            assert_matches(np.asarray(g), [np.asarray(h, np.float64)], dmljax.DataType.from_dtype(dtype),
                                           2 * budget, f"{what} against XLA's convolution", magnitude=np.full(
                                               np.shape(h), scale))


def _dilated_convolutions(text: str) -> int:
    """How many input-dilated convolutions (XLA's form of BACKWARD with strides) a program holds."""
    import re
    return sum(any(int(v) > 1 for v in m.split(",")) for m in re.findall(r"lhs_dilate = \[([\d, ]+)\]", text))


def _backward_gradients64(x, w, dy, full, reference):
    """The float64 input and filter gradients of sum(dy * BACKWARD(x, w)) for a 2-D CROSS_CORRELATION
    call (output q sums x[i] * w[k] over i * Strides + k * Dilations = q + StartPadding): the
    input's is the FORWARD convolution of dy by the same filter (``reference``, the operator's
    float64 reference), the filter's the products of x with dy's strided slices, tap by tap."""
    x, w, dy = (np.asarray(v, np.float64) for v in (x, w, dy))
    forward = dict(full, direction="FORWARD", output_padding=(0, 0))
    dx = reference(dy, w, **forward)[0][:, :, :x.shape[2], :x.shape[3]]
    groups, (s0, s1), (d0, d1), (p0, p1) = full["group_count"], full["strides"], full["dilations"], full["start_padding"]
    n, c, h, wd = x.shape
    o = dy.shape[1]
    need = [(h - 1) * s0 + (w.shape[2] - 1) * d0 + 1, (wd - 1) * s1 + (w.shape[3] - 1) * d1 + 1]
    padded = np.zeros((n, o, max(need[0], dy.shape[2] + p0), max(need[1], dy.shape[3] + p1)))
    padded[:, :, p0:p0 + dy.shape[2], p1:p1 + dy.shape[3]] = dy
    dw = np.zeros(w.shape)
    cg, og = c // groups, o // groups
    for kh in range(w.shape[2]):
        for kw in range(w.shape[3]):
            part = padded[:, :, kh * d0:kh * d0 + (h - 1) * s0 + 1:s0, kw * d1:kw * d1 + (wd - 1) * s1 + 1:s1]
            for gi in range(groups):
                dw[gi * cg:(gi + 1) * cg, :, kh, kw] = np.einsum(
                    "nchw,nohw->co", x[:, gi * cg:(gi + 1) * cg], part[:, gi * og:(gi + 1) * og])
    return dx, dw


def convolution_phases(cases: Cases):
    """CONVOLUTION's BACKWARD direction with strides as forward convolutions of its output's phases
    (kernels/convolution_phases.py), for each kind of call ("one product", "one convolution",
    "stacked") and a grouped one, compiled: forced (``force_kernels``: no input-dilated convolution
    in the output's program) and as the rules stand (RULE['cuda'], a form for each direction). The
    output and both gradients against the float64 reference, bit for bit with integer-valued data
    (every sum exact in any order); with random data against XLA's input-dilated convolution (the
    form off) within twice the record's budget; NCHW and NHWC memory, FLOAT32 and FLOAT16. Where
    XLA's own form fails to compile, that is reported as its own case."""
    from dmljax._src.kernel_seam import force_kernels
    from dmljax._src.kernels import convolution_phases as ph
    from tests import catalog
    from tests.compare import assert_matches
    from tests.ops.convolution.forms import full as _full
    from tests.reference.convolution.convolution import convolution as reference
    from tests.reference.record import Attrs

    spec = dmljax.get_operator("CONVOLUTION").spec
    name = ph.CONVOLUTION_PHASES.name
    rng = np.random.default_rng(2)
    back = {"direction": "BACKWARD", "strides": (2, 2)}
    shapes = [("one product", (4, 64, 14, 14), (64, 32, 2, 2), {}),
              ("one convolution", (4, 32, 16, 16), (32, 16, 4, 4), {"start_padding": (1, 1), "end_padding": (1, 1)}),
              ("stacked", (4, 32, 14, 14), (32, 16, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1),
                                                            "output_padding": (1, 1)}),
              ("one convolution", (2, 48, 9, 11), (48, 4, 4, 4), {"group_count": 12, "start_padding": (1, 1),
                                                                 "end_padding": (1, 1)})]
    for dtype in (np.float32, np.float16):
        for kind, x_shape, w_shape, extra in shapes:
            attrs = dict(back, **extra)
            full = _full(attrs, 2)
            assert ph.phase_kind(x_shape, w_shape, dtype, False, full["group_count"], full["strides"],
                                 full["dilations"], full["start_padding"], full["end_padding"],
                                 full["output_padding"]) == kind, kind
            for data in ("integers", "random"):
                if data == "integers":
                    x = rng.integers(-3, 4, x_shape).astype(dtype)
                    w = rng.integers(-2, 3, w_shape).astype(dtype)
                else:
                    x = rng.standard_normal(x_shape).astype(dtype)
                    w = (rng.standard_normal(w_shape) / np.sqrt(x_shape[1])).astype(dtype)
                    if dtype == np.float32:
                        x.flat[:2] = [1e-39, -1e-39]
                y_shape = jax.eval_shape(lambda a, b: dmljax.convolution(a, b, **attrs), x, w).shape
                dy = (rng.integers(-2, 3, y_shape) if data == "integers" else rng.standard_normal(y_shape)).astype(dtype)
                exact = None
                if data == "integers":  # the float64 reference, exact here, in NCHW
                    exact = (reference(x, w, **full)[0],) + _backward_gradients64(x, w, dy, full, reference)
                for memory in ("NCHW", "NHWC"):
                    def f(a, b, attrs=attrs, memory=memory):
                        if memory == "NHWC":
                            return jnp.transpose(dmljax.convolution(jnp.transpose(a, (0, 3, 1, 2)), b, **attrs),
                                                 (0, 2, 3, 1))
                        return dmljax.convolution(a, b, **attrs)
                    to_memory = (lambda v: v.transpose(0, 2, 3, 1)) if memory == "NHWC" else (lambda v: v)
                    xm, dym = to_memory(x), to_memory(dy)

                    def both(a, b, f=f, dym=dym):
                        y, pull = jax.vjp(f, a, b)
                        return (y, *pull(jnp.asarray(dym)))
                    label = (f"CONVOLUTION BACKWARD {kind} {np.dtype(dtype).name} {x_shape} * {w_shape} {extra} "
                             f"{memory} {data}")
                    want = None
                    with cases.case(f"{label}: XLA's input-dilated form"):
                        want = kernels_off(both, xm, w, names=(name,))
                    budget = catalog.budget(spec, Attrs(attrs), dmljax.DataType.from_dtype(dtype), sizes=x.shape,
                                            args=(x, w))
                    for form in ("phases", "rule"):
                        with cases.case(f"{label}: {form}"):
                            with force_kernels(name) if form == "phases" else contextlib.nullcontext():
                                text = jax.jit(f).lower(xm, w).as_text()
                                got = jax.device_get(jax.jit(both).lower(xm, w).compile()(xm, w))
                            if form == "phases" and not ON_CPU:
                                assert not _dilated_convolutions(text), "the output's program holds an input-dilated convolution"
                            for i, (g, what) in enumerate(zip(got, ("output", "input gradient", "filter gradient"))):
                                if exact is not None:
                                    # the output: the exact sums; the gradients: cuDNN's algorithm for
                                    # a gradient's convolution is XLA's choice (not every one sums
                                    # exactly), so within twice the budget of the exact sums
                                    e = exact[i] if i == 2 else to_memory(exact[i])
                                    assert np.shape(g) == np.shape(e), (what, np.shape(g), np.shape(e))
                                    if i == 0 or np.array_equal(np.asarray(g, np.float64), e):
                                        assert np.array_equal(np.asarray(g, np.float64), e), f"{what}: not the exact sums"
                                        continue
                                    print(f"  {label} {form} {what}: {int(np.sum(np.asarray(g, np.float64) != e))} "
                                          f"of {e.size} elements off the exact sums, by at most "
                                          f"{float(np.max(np.abs(np.asarray(g, np.float64) - e))):.3g}", flush=True)
                                    assert_matches(np.asarray(g), [e], dmljax.DataType.from_dtype(dtype), 2 * budget,
                                                   f"{what} against the exact sums",
                                                   magnitude=np.full(np.shape(e), float(np.max(np.abs(e))) or 1.0))
                                    continue
                                if want is None:
                                    continue  # nothing on the device to hold random data against
                                h = want[i]
                                scale = float(np.max(np.abs(np.asarray(h, np.float64)))) or 1.0
                                assert_matches(np.asarray(g), [np.asarray(h, np.float64)],
                                               dmljax.DataType.from_dtype(dtype), 2 * budget,
                                               f"{what} against XLA's convolution", magnitude=np.full(np.shape(h), scale))


# --------------------------------------------------------------------------------------- attention
def attention(cases: Cases):
    """MULTIHEAD_ATTENTION's cuDNN route (FLOAT16, plain and with a KEY_SEQUENCE_LENGTH mask): the
    forward, jax.grad (cuDNN's backward pass, through derivatives.custom_transposed), jax.jvp and a
    Hessian-vector product (the blockwise formula's) against the same calls with the route off; and
    the gradient's program, with the value or without: one cuDNN forward call and one backward call."""
    rng = np.random.default_rng(5)
    b, s, h, d = 2, 1024, 4, 64
    q, k, v = (jnp.asarray(rng.standard_normal((b, s, h * d)).astype(np.float16)) for _ in range(3))
    tq, tk, tv = (jnp.asarray(rng.standard_normal((b, s, h * d)).astype(np.float16)) for _ in range(3))
    w = jnp.asarray(rng.standard_normal((b, s, h * d)).astype(np.float32))
    for masked in (False, True):
        kw = dict(scale=0.125, head_count=h)
        if masked:
            kw.update(mask=jnp.asarray([[700, 1024]], np.int32), mask_type="KEY_SEQUENCE_LENGTH",
                      mask_filter_value=-10000.0)

        def f(q, k, v, kw=kw):
            return dmljax.multihead_attention(q, k, v, **kw)[0].astype(np.float32)

        def loss(q, k, v, f=f):
            return jnp.sum(f(q, k, v) * w)

        runs = {
            "forward": (f, (q, k, v)),
            "jax.grad": (jax.grad(loss, argnums=(0, 1, 2)), (q, k, v)),
            "jax.jvp": (lambda q, k, v, tq, tk, tv, f=f: jax.jvp(f, (q, k, v), (tq, tk, tv))[1], (q, k, v, tq, tk, tv)),
            "Hessian-vector": (lambda q, k, v, tq, tk, tv, loss=loss: jax.jvp(jax.grad(loss), (q, k, v), (tq, tk, tv))[1],
                               (q, k, v, tq, tk, tv)),
        }
        label = "KEY_SEQUENCE_LENGTH" if masked else "plain"
        for name, (g, args) in runs.items():
            with cases.case(f"attention {label} {name}: the cuDNN route against the blockwise formula"):
                got = jax.tree.leaves(jax.device_get(jax.jit(g)(*args)))
                want = jax.tree.leaves(kernels_off(g, *args, names=("attention_cudnn",)))
                for a, e in zip(got, want):
                    a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
                    err = np.abs(a - e).max() / max(np.abs(e).max(), 1e-30)
                    assert np.all(np.isfinite(a)) and err <= 4e-3, f"largest difference {err:.2e} of the largest value"
                print(f"    largest difference {err:.2e} of the largest value", flush=True)
        with cases.case(f"attention {label}: jax.grad's program holds cuDNN's forward and backward pass once"):
            if not ON_CPU:  # the backward pass reads the forward pass's residuals: no second forward call,
                for grad in (jax.grad, jax.value_and_grad):  # with the value returned or not
                    text = jax.jit(grad(loss, argnums=(0, 1, 2))).lower(q, k, v).compile().as_text()
                    calls = [line for line in text.splitlines() if "custom_call_target=\"__cudnn$fmha" in line]
                    targets = sorted(line.split('custom_call_target="')[1].split('"')[0] for line in calls)
                    print(f"    cuDNN calls in {grad.__name__}'s program: {targets}", flush=True)
                    forward = [t for t in targets if "Backward" not in t]
                    assert len(forward) == 1 and len(targets) == 2 and "Backward" in targets[-1], targets
        with cases.case(f"attention {label}: no transpose outside the blockwise formula's branch"):
            if not ON_CPU:  # the conditionals' operands and results cross as 1-D arrays (flat_cond):
                for name in ("forward", "jax.grad"):  # cuDNN reads and writes them where they lie
                    text = jax.jit(runs[name][0]).lower(*runs[name][1]).compile().as_text()
                    moved = [line.split("=")[0].strip() for body in _cudnn_computations(text)
                             for line in body.splitlines() if "transpose" in line.split("=")[0]]
                    print(f"    {name}: transposes beside cuDNN's calls: {moved}", flush=True)
                    assert not moved, moved


def _cudnn_computations(text: str) -> list[str]:
    """The bodies of a compiled HLO module's entry computation and of every computation that calls
    cuDNN's attention (a conditional's cuDNN branch)."""
    bodies = re.split(r"\n(?=%|ENTRY )", text)
    return [b for b in bodies if b.startswith("ENTRY ") or 'custom_call_target="__cudnn$fmha' in b]


# ---------------------------------------------------------------------------------- dequantize_gemm
def dequantize_gemm(cases: Cases):
    """DEQUANTIZE of 4-bit weights then GEMM (dmljax.dequantize_gemm): the kernel in the program for
    4096 x 4096 weights where its rule takes it (FASTER_UP_TO: {N, K}) and not elsewhere ({K, N}),
    and forced, INT4 with scales and UINT4 with scales and zero points, 1, 5 and 16 rows, with C
    and Alpha, within GEMM's budget of the float64 reference and of the two operators unfused (the
    kernel off); an odd K and small weights, forced; split-K (SPLIT_K > 1, even and ragged slices)
    against the reference, the two operators and one slice; the dequantized weights DEQUANTIZE's
    bit for bit (one-hot rows), in one slice and in two; a batch by jax.vmap; MatMulNBits imported
    from ONNX, and its DirectML graph, in the program."""
    import dataclasses

    from dmljax._src.kernel_seam import force_kernels
    from dmljax._src.kernels.dequantize_gemm import FASTER_UP_TO, Settings, dequantize_gemm_rows, layout, slices
    from tests.compare import assert_matches

    f16 = dmljax.DataType.FLOAT16
    rng = np.random.default_rng(0)

    def weights(shape, signed):
        return rng.integers(-8, 8, shape).astype(jnp.int4) if signed else rng.integers(0, 16, shape).astype(jnp.uint4)

    def reference(x, w, scale, zp, trans_b):
        def blocks(t):
            t = np.asarray(t).astype(np.float64)
            return np.repeat(np.repeat(t, w.shape[0] // t.shape[0], 0), w.shape[1] // t.shape[1], 1)
        d = (np.asarray(w).astype(np.float64) - (0 if zp is None else blocks(zp))) * blocks(scale)
        d = d.astype(np.float16).astype(np.float64)
        d = d.T if trans_b else d
        xs = np.asarray(x).astype(np.float64)
        return xs @ d, np.abs(xs) @ np.abs(d)

    for k, n, force in ((4096, 4096, False), (1023, 96, True)):
        for trans_b, signed, with_zp, block in ((False, True, False, 32), (True, False, True, 32 if k % 2 == 0 else 11)):
            shape = (n, k) if trans_b else (k, n)
            w = weights(shape, signed)
            sshape = (n, k // block) if trans_b else (k // block, n)
            scale = (rng.random(sshape) * 0.02 + 0.01).astype(np.float16)
            zp = weights(sshape, signed) if with_zp else None
            q = [scale] + ([] if zp is None else [zp])
            qt = "SCALE_ZERO_POINT" if with_zp else "SCALE"
            for m in (1, 5, 16):
                along_k = k // (sshape[1] if trans_b else sshape[0])
                label = f"DEQUANTIZE_GEMM {m} x {k} by {'{N, K}' if trans_b else '{K, N}'} {w.dtype} blocks of {along_k}"
                x = rng.standard_normal((m, k)).astype(np.float16)
                c = rng.standard_normal((m, n)).astype(np.float16) if m == 5 else None
                alpha = -0.5 if m == 5 else 1.0
                fn = lambda x, w, q, c, trans_b=trans_b, alpha=alpha, qt=qt: dmljax.dequantize_gemm(  # noqa: E731
                    x, w, q, c, quantization_type=qt, trans_b="TRANSPOSE" if trans_b else "NONE", alpha=alpha)
                with cases.case(label):
                    if not force:  # the rule: the kernel where it measured faster than the unfused pair
                        taken = m <= FASTER_UP_TO[layout(trans_b)]
                        (kernel_in if taken else kernel_not_in)(fn, x, w, q, c, name="dmljax_dequantize_gemm")
                    with force_kernels("dequantize_gemm"):
                        kernel_in(fn, x, w, q, c, name="dmljax_dequantize_gemm")
                        y = np.asarray(jax.jit(fn)(x, w, q, c))
                    want, size = reference(x, w, scale, zp, trans_b)
                    want = alpha * want + (0 if c is None else c.astype(np.float64))
                    size = abs(alpha) * size + (0 if c is None else np.abs(c.astype(np.float64)))
                    budget = dmljax.gemm.spec.budget(f16, (m, k))
                    assert_matches(y, [want], f16, budget, "kernel vs reference", magnitude=size)
                    unfused = np.asarray(kernels_off(fn, x, w, q, c, names=("dequantize_gemm",)))
                    assert_matches(y, [unfused.astype(np.float64)], f16, 2 * budget, "kernel vs unfused", magnitude=size)
    for k, split in ((4096, 4), (4096, 16), (4096 - 5 * 256, 2)):  # 16 tiles of 256 in 4 or 16 slices; 11 as 6 + 5
        for trans_b in (True, False):
            settings = Settings(32, 256, split_k=split)
            count = slices(k, settings)[1]
            label = f"DEQUANTIZE_GEMM split-K: K = {k} in {count} slices, {'{N, K}' if trans_b else '{K, N}'}"
            with cases.case(label):
                n = 64 if ON_CPU else 4096  # the interpreter's dry run: two programs
                shape, sshape = ((n, k), (n, k // 32)) if trans_b else ((k, n), (k // 32, n))
                w, scale = weights(shape, not trans_b), (rng.random(sshape) * 0.02 + 0.01).astype(np.float16)
                zp = weights(sshape, False) if trans_b else None
                q = [scale] + ([] if zp is None else [zp])
                qt = "SCALE_ZERO_POINT" if trans_b else "SCALE"
                for m, alpha in ((1, 1.0), (16, -0.5)):
                    x = rng.standard_normal((m, k)).astype(np.float16)
                    f = lambda x, w, s, *z, st=settings, t=trans_b, a=alpha: dequantize_gemm_rows(  # noqa: E731
                        x, w, s, *z, trans_b=t, alpha=a, out_dtype=jnp.float16, settings=st, interpret=ON_CPU)
                    kernel_in(f, x, w, *q, name="dmljax_dequantize_gemm")
                    y = np.asarray(jax.jit(f)(x, w, *q))
                    one = np.asarray(jax.jit(lambda x, w, s, *z, t=trans_b, a=alpha, st=settings: dequantize_gemm_rows(
                        x, w, s, *z, trans_b=t, alpha=a, settings=dataclasses.replace(st, split_k=1),
                        interpret=ON_CPU))(x, w, *q))
                    want, size = reference(x, w, scale, zp, trans_b)
                    budget = dmljax.gemm.spec.budget(f16, (m, k))
                    size = abs(alpha) * size
                    assert_matches(y, [alpha * want], f16, budget, "split-K vs reference", magnitude=size)
                    assert_matches(y, [one.astype(np.float64)], f16, budget, "split-K vs one slice", magnitude=size)
                    unfused = np.asarray(kernels_off(lambda x, w, q, t=trans_b, a=alpha, qt=qt: dmljax.dequantize_gemm(
                        x, w, q, quantization_type=qt, trans_b="TRANSPOSE" if t else "NONE", alpha=a), x, w, q,
                        names=("dequantize_gemm",)))
                    assert_matches(y, [unfused.astype(np.float64)], f16, 2 * budget, "split-K vs unfused",
                                   magnitude=size)
    with cases.case("DEQUANTIZE_GEMM: batched by jax.vmap"):
        w = weights((1024, 1024), True)
        scale = (rng.random((1024, 32)) * 0.02 + 0.01).astype(np.float16)
        xs = rng.standard_normal((3, 4, 1024)).astype(np.float16)
        f = lambda x: dmljax.dequantize_gemm(x, w, [scale], quantization_type="SCALE",  # noqa: E731
                                             trans_b="TRANSPOSE")
        kernel_in(jax.vmap(f), xs, name="dmljax_dequantize_gemm")
        got = np.asarray(jax.jit(jax.vmap(f))(xs))
        for i in range(3):
            np.testing.assert_array_equal(got[i], np.asarray(jax.jit(f)(xs[i])))
    with cases.case("DEQUANTIZE_GEMM: the dequantized weights are DEQUANTIZE's bit for bit"):
        for trans_b, settings in ((False, None), (True, None), (False, Settings(32, 32, split_k=2)),
                                  (True, Settings(32, 32, split_k=2))):
            shape = (64, 64)  # K = 64: two slices of 32 where split
            w = weights(shape, False)
            sshape = (64, 2) if trans_b else (2, 64)
            scale = np.exp2(rng.integers(-24, 12, sshape)).astype(np.float16)
            zp = weights(sshape, False)
            picked = 4 * np.arange(16)  # row i picks K = 4i: both slices where split
            x = np.zeros((16, 64), np.float16)
            x[np.arange(16), picked] = 1
            got = np.asarray(jax.jit(lambda x, w, s, z, t=trans_b, st=settings: dequantize_gemm_rows(
                x, w, s, z, trans_b=t, out_dtype=jnp.float16, settings=st, interpret=ON_CPU))(x, w, scale, zp))
            deq = np.asarray(dmljax.dequantize(w, [scale, zp], quantization_type="SCALE_ZERO_POINT"))
            want = (deq.T if trans_b else deq)[picked]
            same = _bits(got) == _bits(want)
            assert (same | ((got == 0) & (want == 0))).all(), np.argwhere(~same)[:5]
    with cases.case("DEQUANTIZE_GEMM: MatMulNBits from ONNX and its DirectML graph"):
        from onnx import TensorProto, helper, numpy_helper

        import dmljax.onnx as dx
        from dmljax._src.onnx.export import to_graph
        k = n = 4096
        codes = rng.integers(0, 16, (n, k)).astype(np.uint8)
        consts = {"B": (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8).reshape(n, k // 32, 16),
                  "scales": (rng.random(n * k // 32) * 0.02 + 0.01).astype(np.float16)}
        node = helper.make_node("MatMulNBits", ["A", "B", "scales"], ["y"], domain="com.microsoft", K=k, N=n, bits=4,
                                block_size=32)
        g = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("A", TensorProto.FLOAT16, (4, k))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, (4, n))],
                              [numpy_helper.from_array(v, name) for name, v in consts.items()])
        model = dx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                            helper.make_opsetid("com.microsoft", 1)]))
        a = rng.standard_normal((4, k)).astype(np.float16)
        kernel_in(lambda v: model(v), a, name="dmljax_dequantize_gemm")
        graph, _ = to_graph(model, [a])
        compiled = graph.compile()
        assert compiled._fusions, "the graph's DEQUANTIZE is not fused into its GEMM"
        np.testing.assert_array_equal(np.asarray(compiled.run(a)[0]), np.asarray(model(a)[0]))


# ---------------------------------------------------------------------------- elementwise_quantization
def elementwise_quantization(cases: Cases):
    """The element-wise quantization kernels compiled: QUANTIZE of FLOAT16 to INT8 and UINT8 by a
    per-tensor scale (every FLOAT16 value, 64 scales of both signs with denormals, 0, +-inf and
    NaN, zero points at the types' ends and none; a ragged last block) and DEQUANTIZE of INT4 and
    UINT4 (every value and zero point, FLOAT32 and FLOAT16 scales with specials), each in the
    program and bit for bit XLA's formula (the kernels off); DEQUANTIZE's derivative with respect to
    the scale through the kernel's route against XLA's; the rules leave a scale per axis to XLA."""
    rng = np.random.default_rng(5)
    every = np.arange(65536, dtype=np.uint16).view(np.float16)
    finite = np.arange(1, 0x7C00, dtype=np.uint16).view(np.float16)
    specials = np.array([0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -24, 65504, 0.05, -0.05, 1 / 3], np.float16)
    scales = np.concatenate([specials, rng.choice(finite, 40), -rng.choice(finite, 14)]).astype(np.float16)
    off = ("elementwise_quantization",)
    for out_type, zps in (("INT8", (None, 3, -128, 127)), ("UINT8", (None, 0, 255))):
        dt = np.dtype(out_type.lower())
        for zp in zps:
            with cases.case(f"elementwise_quantization QUANTIZE FLOAT16 -> {out_type} zero point {zp}"):
                q = [None, None]

                def f(x, s, z):
                    return dmljax.quantize(x, [s] + ([] if z is None else [z]), output_data_type=out_type,
                                           quantization_type="SCALE" if z is None else "SCALE_ZERO_POINT")
                z = None if zp is None else np.full((1, 1), zp, dt)
                x = every.reshape(256, 256)
                kernel_in(lambda x, s: f(x, s, z), x, scales[:1].reshape(1, 1), name="dmljax_quantize_half")
                fj = jax.jit(lambda x, s: f(x, s, z))
                bad = []
                for s in scales:
                    s2 = np.full((1, 1), s, np.float16)
                    q[0] = _bits(fj(x, s2))
                    q[1] = _bits(kernels_off(lambda x, s: f(x, s, z), x, s2, names=off))
                    if not np.array_equal(q[0], q[1]):
                        bad.append((float(s), int((q[0] != q[1]).sum())))
                assert not bad, f"(scale, differing elements): {bad[:8]}"
    with cases.case("elementwise_quantization QUANTIZE FLOAT16 -> INT8, every FLOAT16 value by every FLOAT16 scale"):
        # 2^32 quotients, the kernel called directly once a scale (lax.map), against the XLA formula
        # with a scale a row (the kernels off), mismatches counted on the device
        from dmljax._src.kernels.elementwise_quantization import quantize_half
        from dmljax._src.linear_quantization import quantize_values

        xs = jnp.asarray(every)
        z = jnp.asarray(np.array([3], np.int8))

        @jax.jit
        def differing(scales):
            got = jax.lax.map(lambda s: quantize_half(xs, s.reshape(1), z, np.int8, interpret=ON_CPU), scales)
            want = quantize_values(jnp.broadcast_to(xs, got.shape), scales[:, None], z.reshape(1, 1),
                                   dmljax.DataType.INT8)
            bad = got != want
            first = jnp.argmax(bad.reshape(-1))
            return jnp.sum(bad), first // xs.size, first % xs.size

        every_scale = every.reshape(-1, 64 if ON_CPU else 1024)[:1 if ON_CPU else None]
        with dmljax.use_kernels(False, *off):
            found = [jax.device_get(differing(jnp.asarray(c))) for c in every_scale]
        bad = [(int(n), float(c[int(r)]), float(every[int(i)])) for (n, r, i), c in zip(found, every_scale) if n]
        assert not bad, f"(differing elements, first scale, first value) per chunk of scales: {bad[:8]}"
    with cases.case("elementwise_quantization QUANTIZE FLOAT16 ragged last block, any shape"):
        for shape in ((3, 5), (4097,), (2, 3, 700), (1,)):
            x = (rng.standard_normal(shape) * 60).astype(np.float16)
            s, z = np.full([1] * len(shape), 0.37, np.float16), np.full([1] * len(shape), 128, np.uint8)

            def g(x):
                return dmljax.quantize(x, [s, z], quantization_type="SCALE_ZERO_POINT")
            kernel_in(g, x, name="dmljax_quantize_half")
            np.testing.assert_array_equal(_bits(jax.jit(g)(x)), _bits(kernels_off(g, x, names=off)))
    with cases.case("elementwise_quantization a scale per axis stays with XLA"):
        x = every.reshape(256, 256)

        def h(x, s):
            return dmljax.quantize(x, [s], quantization_type="SCALE", output_data_type="INT8")
        kernel_not_in(h, x, np.full((256, 1), 0.5, np.float16), name="dmljax_quantize_half")
    for in_type, zps in (("INT4", (None, -8, 7, 1)), ("UINT4", (None, 0, 15, 8))):
        dt = jnp.dtype(in_type.lower())
        lo, hi = (-8, 7) if in_type == "INT4" else (0, 15)
        x = np.tile(np.arange(lo, hi + 1), 1024 * 4).astype(dt).reshape(64, 1024)
        for st in (np.float32, np.float16):
            for zp in zps:
                name = f"elementwise_quantization DEQUANTIZE {in_type} -> {np.dtype(st).name} zero point {zp}"
                with cases.case(name):
                    z = None if zp is None else np.full((1, 1), zp, dt)

                    def d(x, s):
                        return dmljax.dequantize(x, [s] + ([] if z is None else [z]),
                                                 quantization_type="SCALE" if z is None else "SCALE_ZERO_POINT")
                    kernel_in(d, x, np.full((1, 1), 0.05, st), name="dmljax_dequantize_nibbles")
                    values = [0.05, -3.0, 65504.0, np.inf, -np.inf, np.nan, -0.0, 2.0 ** -24]
                    values += [1e-40, 3e38, 1.1754944e-38] if st == np.float32 else []
                    dj = jax.jit(d)
                    for v in values:
                        s = np.full((1, 1), v, st)
                        np.testing.assert_array_equal(_bits(dj(x, s)), _bits(kernels_off(d, x, s, names=off)),
                                                      err_msg=f"scale {v!r}")
    with cases.case("elementwise_quantization under jax.vmap (a batch of tensors, each its own scale)"):
        xb = (rng.standard_normal((3, 64, 1024)) * 40).astype(np.float16)
        sb = np.array([0.5, -0.25, 3.0], np.float16).reshape(3, 1, 1)

        def q(x, s):
            return dmljax.quantize(x, [s], quantization_type="SCALE", output_data_type="INT8")
        kernel_in(jax.vmap(q), xb, sb, name="dmljax_quantize_half")
        got = _bits(jax.jit(jax.vmap(q))(xb, sb))
        np.testing.assert_array_equal(got, _bits(np.stack([kernels_off(q, x, s, names=off) for x, s in zip(xb, sb)])))
        # forward mode through the kernel's route: the integer result's tangent is float0
        y, t = jax.jit(lambda x, s: jax.jvp(lambda v: q(v, s), (x,), (jnp.ones_like(x),)))(xb[0], sb[0])
        assert t.dtype == jax.dtypes.float0 and np.array_equal(_bits(y), got[0])
        nb = rng.integers(-8, 8, (3, 64, 1024)).astype(jnp.int4)
        fb = np.array([0.5, -0.25, 3.0], np.float32).reshape(3, 1, 1)

        def d(x, s):
            return dmljax.dequantize(x, [s], quantization_type="SCALE")
        kernel_in(jax.vmap(d), nb, fb, name="dmljax_dequantize_nibbles")
        got = _bits(jax.jit(jax.vmap(d))(nb, fb))
        np.testing.assert_array_equal(got, _bits(np.stack([kernels_off(d, x, s, names=off) for x, s in zip(nb, fb)])))
    with cases.case("elementwise_quantization DEQUANTIZE's derivative with respect to the scale"):
        x = rng.integers(-8, 8, (64, 1024)).astype(jnp.int4)
        dy = rng.standard_normal((64, 1024)).astype(np.float32)

        def loss(s):
            return jnp.sum(dmljax.dequantize(x, [s], quantization_type="SCALE") * dy)
        s = np.full((1, 1), 0.3, np.float32)
        kernel_in(jax.value_and_grad(loss), s, name="dmljax_dequantize_nibbles")  # (the gradient alone needs no value)
        got = jax.device_get(jax.jit(jax.value_and_grad(loss))(s))
        value, want = kernels_off(jax.value_and_grad(loss), s, names=off)
        np.testing.assert_allclose(got[0], value, rtol=1e-6)
        np.testing.assert_allclose(got[1], want, rtol=1e-6)
        t = jax.device_get(jax.jit(lambda s: jax.jvp(loss, (s,), (jnp.ones_like(s),))[1])(s))
        np.testing.assert_allclose(t, want.sum(), rtol=1e-6)


KERNELS = {"softmax": softmax, "cumulative": cumulative, "top_k": top_k, "extreme_columns": extreme_columns,
           "max_pooling": max_pooling, "convolution": convolution, "convolution_gemm": convolution_gemm,
           "convolution_phases": convolution_phases, "convolution_depthwise": convolution_depthwise,
           "padding": padding, "attention": attention, "dequantize_gemm": dequantize_gemm,
           "elementwise_quantization": elementwise_quantization}


def main() -> int:
    chosen = sys.argv[1:] or list(KERNELS)
    unknown = [k for k in chosen if k not in KERNELS]
    if unknown:
        print(f"unknown kernels {unknown}; choose from {list(KERNELS)}")
        return 2
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    if jax.default_backend() != "gpu" and not ON_CPU:
        print("no GPU: nothing to check (KERNEL_CHECK_ON_CPU=1 runs the script's code on the CPU)")
        return 0
    cases = Cases()
    for name in chosen:
        KERNELS[name](cases)
    return cases.summary()


if __name__ == "__main__":
    sys.exit(main())
