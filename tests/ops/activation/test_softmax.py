"""Hand-written edges of SOFTMAX, LOG_SOFTMAX, HARDMAX and their *1 forms: the pages' examples,
rows with NaN and infinities, stability for large inputs, HARDMAX's tie rule, the *1 forms equal
to the originals over the last axis, several axes, gradients where softmax saturates, and the
descriptor rules (effective rank, Axes, AxisCount). Expected values are the pages' or derived by
hand / from the float64 references in tests/reference/activation/softmax.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers
from tests.compare import assert_matches
from tests.reference.activation import softmax as ref

NAN, INF = np.nan, np.inf
F32 = dmljax.DataType.FLOAT32
F16 = dmljax.DataType.FLOAT16
PAGE_X = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)  # the *1 pages' input


def bits(x):
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32}[x.dtype.itemsize])


# ---------------------------------------------------------------------------------- HARDMAX
@pytest.mark.parametrize("axes,want", [
    ((1,), [[[1, 0], [0, 1]], [[1, 1], [0, 0]]]),   # the page's Example 1
    ((0,), [[[1, 0], [0, 1]], [[0, 1], [1, 0]]]),   # Example 2
    ((0, 2), [[[0, 0], [0, 1]], [[0, 1], [0, 0]]]),  # Example 3
])
def test_hardmax1_page_examples(axes, want):
    out = dmljax.activation_hardmax1(PAGE_X, axes=axes)
    np.testing.assert_array_equal(out, np.array(want, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_hardmax_first_maximum_nan_and_zeros(dtype):
    x = np.array([
        [1.0, 3.0, 3.0, 2.0],          # a tie: the first maximum
        [NAN, -1.0, -2.0, NAN],        # NaN is never the maximum
        [NAN, NAN, NAN, NAN],          # NaN only: the first element
        [-0.0, 0.0, -1.0, -INF],       # -0 ties with +0
        [-INF, -INF, NAN, -INF],       # -inf still beats NaN
        [INF, 1.0, INF, NAN],
    ], dtype)
    want = np.zeros(x.shape, dtype)
    want[np.arange(6), [1, 1, 0, 0, 0, 0]] = 1
    out = dmljax.activation_hardmax(x)
    assert out.dtype == dtype
    np.testing.assert_array_equal(bits(out), bits(want))
    np.testing.assert_array_equal(bits(jax.jit(dmljax.activation_hardmax)(x)), bits(want))


def test_hardmax_reads_float32_denormals_as_zero():
    out = dmljax.activation_hardmax(np.array([[0.0, 1e-40, -1e-40]], np.float32))
    np.testing.assert_array_equal(out, [[1, 0, 0]])  # all three are 0: the first wins


@pytest.mark.parametrize("name", ["activation_softmax1", "activation_log_softmax1"])
def test_softmax_gradient_reads_denormal_cotangents_as_zero(name):
    # dY's denormals read as zeros of their sign, and a dX among the denormals flushed (the CPU
    # leaves the three flushes of the backward pass to its processor): the flushed dY's bits
    tiny = np.finfo(np.float32).tiny
    x = np.array([[0.0, 1.0, -3.0, 2.0], [5.0, 5.0, -1.0, 0.5]], np.float32)
    dy = np.array([[1e-40, -1e-40, 1.0, 3e-39], [2e-38, -1.5e-38, 1e-39, 0.0]], np.float32)
    op = getattr(dmljax, name)
    _, vjp = jax.vjp(lambda v: op(v, axes=(1,)), x)
    got = np.asarray(jax.jit(vjp)(dy)[0])
    want = np.asarray(jax.jit(vjp)(np.where(np.abs(dy) < tiny, dy * 0, dy))[0])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not ((np.abs(got) > 0) & (np.abs(got) < tiny)).any()


def test_hardmax_has_a_zero_gradient():
    x = np.array([[1.0, 3.0, 2.0]], np.float32)
    g = jax.grad(lambda v: jnp.sum(dmljax.activation_hardmax(v) * jnp.arange(3.0)))(x)
    np.testing.assert_array_equal(g, np.zeros_like(x))


# ---------------------------------------------------------------------------------- SOFTMAX
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rows_with_nan_and_infinities(log, dtype):
    x = np.array([
        [0.0, 1.0, -INF, 2.0],      # -inf among numbers: 0 (log: -inf)
        [-INF, -INF, -INF, -INF],   # -inf only: 0 / 0 = NaN
        [1.0, INF, 2.0, 0.0],       # +inf: inf / inf, NaN throughout
        [1.0, NAN, 2.0, 0.0],       # NaN: NaN throughout
    ], dtype)
    op = dmljax.activation_log_softmax if log else dmljax.activation_softmax
    out = np.asarray(op(x), np.float64)
    assert np.isnan(out[1:]).all()
    assert out[0, 2] == (-INF if log else 0.0)
    finite = np.array([0.0, 1.0, 2.0])
    p = np.exp(finite - 2) / np.exp(finite - 2).sum()
    np.testing.assert_allclose(out[0, [0, 1, 3]], np.log(p) if log else p, rtol=2e-3 if dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("dtype,big", [(np.float32, 3e38), (np.float32, 1e4), (np.float16, 65504.0)])
def test_large_inputs_do_not_overflow(dtype, big):
    x = np.array([[big, big, 0.0, -big], [-big, -big, -big, -big]], dtype)
    out = np.asarray(dmljax.activation_softmax(x), np.float64)
    np.testing.assert_array_equal(out[0], [0.5, 0.5, 0.0, 0.0])
    np.testing.assert_array_equal(out[1], [0.25] * 4)
    logs = np.asarray(dmljax.activation_log_softmax(x), np.float64)
    assert abs(logs[0, 0] + np.log(2)) <= 1e-3 and logs[0, 2] < -1e4 and np.isfinite(logs[1]).all()
    # -big - big - ln 2: -inf where it is beyond the type's range (3e38), else finite
    assert logs[0, 3] == (-INF if 2 * big > np.finfo(dtype).max else logs[0, 3]) and not np.isnan(logs[0, 3])


def test_float16_is_computed_in_float32_and_rounded_once():
    # A row whose sum of exponentials is not representable in FLOAT16 arithmetic: 4097 terms of
    # exp(0) = 1 sum to 4096 in FLOAT16 (4097 is not a FLOAT16 number); computed in FLOAT32 the
    # probability is 1 / 4097 rounded once.
    x = np.zeros((1, 4097), np.float16)
    out = dmljax.activation_softmax(x)
    assert out[0, 0] == np.float16(1 / 4097)


@pytest.mark.parametrize("op,op1", tiers.fast_sample([
    (dmljax.activation_softmax, dmljax.activation_softmax1),
    (dmljax.activation_log_softmax, dmljax.activation_log_softmax1),
    (dmljax.activation_hardmax, dmljax.activation_hardmax1),
], keep=1))
@pytest.mark.parametrize("dtype", tiers.fast_sample([np.float16, np.float32]))
def test_axes_last_equals_the_original(op, op1, dtype, rng):
    # "equivalent to ... when AxisCount == 1, and Axes == {DimensionCount - 1}": the same bits,
    # and the same gradient.
    x = (rng.standard_normal((1, 5, 33)) * 4).astype(dtype)
    x[0, 0, :3] = [NAN, -INF, 1e-40 if dtype == np.float32 else 6e-8]
    np.testing.assert_array_equal(bits(op(x)), bits(op1(x, axes=(2,))))
    w = jnp.asarray(rng.standard_normal(x.shape), dtype)
    g = jax.grad(lambda v: jnp.sum(op(v) * w).astype(jnp.float32))(x)
    g1 = jax.grad(lambda v: jnp.sum(op1(v, axes=(2,)) * w).astype(jnp.float32))(x)
    np.testing.assert_array_equal(bits(g), bits(g1))


@pytest.mark.parametrize("axes", [(0, 2), (1,), (2, 0, 1), (3, 1)])
@pytest.mark.parametrize("log", [False, True])
def test_several_axes(axes, log, rng):
    x = (rng.standard_normal((3, 4, 5, 2)) * 3).astype(np.float32)
    op = dmljax.activation_log_softmax1 if log else dmljax.activation_softmax1
    out = op(x, axes=axes)
    want = (ref._log_softmax if log else ref._softmax)(x, axes)
    n = int(np.prod([x.shape[a] for a in axes]))
    mag = ref._log_magnitude(x, axes) if log else None
    assert_matches(out, want, F32, 4 + n, magnitude=mag)
    if not log:  # each group sums to 1
        np.testing.assert_allclose(np.asarray(out, np.float64).sum(axis=axes), 1.0, rtol=1e-5)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gradient_where_softmax_saturates(log, dtype):
    # Rows far beyond exp's range: the gradient is finite (NaN-free) and the saturated values'
    # derivative is exact: softmax [1, 0] at [big, -big] has gradient 0 for dY = (1, 1), and
    # log-softmax's is dY - p * sum(dY) = (1 - 2, 1 - 0) = (-1, 1).
    big = 3e38 if dtype == np.float32 else 6e4
    x = np.array([[big, -big], [0.0, -big]], dtype)
    op = dmljax.activation_log_softmax if log else dmljax.activation_softmax
    g = np.asarray(jax.grad(lambda v: jnp.sum(op(v).astype(jnp.float32)))(x), np.float64)
    assert np.isfinite(g).all()
    np.testing.assert_array_equal(g, [[-1.0, 1.0], [-1.0, 1.0]] if log else [[0.0, 0.0], [0.0, 0.0]])


def test_gradient_is_nan_only_in_nan_rows():
    x = np.array([[0.0, 1.0, 2.0], [NAN, 1.0, 2.0], [-INF, 0.0, 1.0]], np.float32)
    w = np.array([[1.0, -2.0, 0.5]] * 3, np.float32)
    for op in (dmljax.activation_softmax, dmljax.activation_log_softmax):
        g = np.asarray(jax.grad(lambda v: jnp.sum(op(v) * w))(x))
        assert np.isnan(g[1]).all() and np.isfinite(g[[0, 2]]).all(), op.__name__


# ---------------------------------------------------------------------------------- the desc
def test_effective_rank_above_2_is_refused():
    dmljax.activation_softmax(np.zeros((1, 1, 3, 4), np.float32))  # effective rank 2: fine
    for op in (dmljax.activation_softmax, dmljax.activation_log_softmax, dmljax.activation_hardmax):
        with pytest.raises(dmljax.ValidationError, match=r"(?s)effective rank 3 .*Sizes \[2, 3, 4\].*1 with Axes"):
            op(np.zeros((2, 3, 4), np.float32))


@pytest.mark.parametrize("axes,match", [
    ((), "Axes .argument `axes`. is empty"),
    ((3,), r"has \[3\] for a 3-dimensional InputTensor; values in the range \[0, 2\]"),
    ((1, 1), "names axis 1 more than once"),
    ((-4,), r"Axes\[0\] \(argument `axes\[0\]`\) is -4; InputTensor has 3 dimensions: an axis is -3 to 2"),
])
def test_bad_axes_are_refused(axes, match):
    for op in (dmljax.activation_softmax1, dmljax.activation_log_softmax1, dmljax.activation_hardmax1):
        with pytest.raises(dmljax.ValidationError, match=match):
            op(np.zeros((2, 3, 4), np.float32), axes=axes)


def _desc(**extra):
    t = {"DataType": "FLOAT32", "Sizes": [2, 3]}
    return {"InputTensor": t, "OutputTensor": t, **extra}


def test_axis_count_in_a_desc():
    op = dmljax.compile_operator("ACTIVATION_SOFTMAX1", _desc(AxisCount=1, Axes=[1]))
    x = np.array([0.0, 1.0, 2.0, 5.0, 5.0, 5.0], np.float32)
    out = op(InputTensor=x, OutputTensor=np.zeros(6, np.float32))["OutputTensor"]
    np.testing.assert_array_equal(out.reshape(2, 3), dmljax.activation_softmax(x.reshape(2, 3)))
    with pytest.raises(dmljax.ValidationError, match="AxisCount is 2, but Axes has 1 entry"):
        dmljax.compile_operator("ACTIVATION_SOFTMAX1", _desc(AxisCount=2, Axes=[1]))
    with pytest.raises(dmljax.ValidationError, match="AxisCount is 'one'; a whole number"):
        dmljax.compile_operator("ACTIVATION_SOFTMAX1", _desc(AxisCount="one", Axes=[1]))


# ---------------------------------------------------------------------------------- the GPU kernel
@pytest.mark.parametrize("log", tiers.fast_sample([False, True]))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_row_kernel_matches_the_reference(log, dtype, rng):
    # Long rows on a GPU take a Pallas kernel (dmljax/_src/kernels/softmax.py); run here in Pallas's
    # interpreter, it must give what the operator's reference gives, NaN rows included, and so
    # must its gradient (tests/gpu/kernels.py checks the compiled kernel on a GPU).
    from dmljax._src.kernels.softmax import MIN_ROW, SOFTMAX_ROWS, softmax_rows, softmax_rows_grad
    x = (rng.standard_normal((3, MIN_ROW)) * 6).astype(dtype)
    x[0, :2] = [NAN, 1.0]
    x[1, 5] = -INF
    if dtype == np.float32:
        x[2, :4] = [1e-40, -1e-40, 1e-39, 0.0]
    assert SOFTMAX_ROWS.applies(x.shape, (1,), dtype, False) and not SOFTMAX_ROWS.applies(x.shape, (1,), dtype, True)
    assert not SOFTMAX_ROWS.applies((4, 1024), (1,), dtype, False) and not SOFTMAX_ROWS.applies(x.shape, (0,), dtype, False)
    out = softmax_rows(jnp.asarray(x), log, interpret=True)
    dt = dmljax.DataType.from_dtype(np.dtype(dtype))
    want = (ref._log_softmax if log else ref._softmax)(x)
    budget = dmljax.get_operator("ACTIVATION_SOFTMAX").spec.budget(dt, x.shape)
    assert_matches(out, want, dt, budget, magnitude=ref._log_magnitude(x) if log else None)
    dy = rng.standard_normal(x.shape).astype(dtype)
    y = (dmljax.activation_log_softmax if log else dmljax.activation_softmax)(x)
    g = softmax_rows_grad(y, jnp.asarray(dy), log, interpret=True)
    grad = ref._log_softmax_grad if log else ref._softmax_grad
    size = ref._log_softmax_grad_size if log else ref._softmax_grad_size
    assert_matches(g, [grad(dy, x)[0]], dt, budget + 2, magnitude=size(dy, x)[0])


@pytest.mark.parametrize("axes", [(0,), (0, 2), (1,)])
def test_hardmax1_first_maximum_over_any_axes(axes, rng):
    # ties (equal values, -0 with +0, a denormal with 0), NaN and a group of NaN only: the 1 at
    # the first maximum in row-major order of the reduced coordinates (the CPU finds it in place
    # over axes that are not trailing)
    from tests.reference.activation.softmax import _hardmax
    x = rng.integers(-2, 3, (6, 5, 4)).astype(np.float32)
    x[0, 0, :] = [0.0, -0.0, 1e-40, -1e-40]
    x[1, :, 1] = np.nan
    x[2, 1, :] = np.nan
    x[:, 3, 2] = np.nan
    x[3] = np.where(x[3] > 0, -0.0, x[3])
    got = np.asarray(jax.jit(lambda v: dmljax.activation_hardmax1(v, axes=axes))(x))
    np.testing.assert_array_equal(got, _hardmax(x, axes)[0])
