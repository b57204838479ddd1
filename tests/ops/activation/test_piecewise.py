"""Hand-written edges of the piecewise activations (ELU, SCALED_ELU, RELU, LEAKY_RELU, LINEAR,
IDENTITY, THRESHOLDED_RELU, HARD_SIGMOID, SHRINK, SOFTSIGN) and RELU_GRAD (RELU's gradient is
RELU_GRAD's rule): values at the kinks and extremes, every FLOAT16 input, gradients at the kinks
and far out, against values derived independently (the float64 references in
tests/reference/activation/piecewise.py, or by hand). The generated cases (tests/test_catalog.py)
cover the support tables, data types, eager/jit and gradients away from the kinks."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import dmljax
from dmljax import DataType
from tests.compare import assert_matches
from tests.reference.activation import piecewise as ref

NAN, INF = np.nan, np.inf
DENORM = 1e-40  # a FLOAT32 denormal
TINY16 = 6e-8  # FLOAT16's smallest denormal (kept: only FLOAT32 denormals are flushed)
ALPHA, GAMMA = float(np.float32(1.6732)), float(np.float32(1.0507))


def bits(x):
    x = np.asarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def vjp(fn, dy, *args):
    """The cotangents of every input of ``fn`` for the output cotangent ``dy``."""
    _, pullback = jax.vjp(fn, *args)
    return [np.asarray(g) for g in pullback(dy)]


def grad_of(f, x):
    return np.asarray(jax.grad(lambda v: jnp.sum(f(v)))(x))


def _grad(fn, x):
    return np.asarray(jax.grad(lambda v: fn(v).astype(jnp.float32).sum())(x))


# ----------------------------------------------------------------------------------------------
# ELU


def test_elu_values():
    x = np.array([-0.0, 0.0, -1e-30, 100.0, -100.0, NAN, -INF, INF, DENORM], np.float32)
    out = np.asarray(dmljax.activation_elu(x, alpha=2.0))
    assert bits(out[0]) == bits(np.float32(-0.0))  # x >= 0 keeps x itself
    assert out[1] == 0 and out[2] == np.float32(-2e-30) and out[3] == 100 and out[4] == -2
    assert np.isnan(out[5]) and out[6] == -2 and out[7] == INF and out[8] == 0
    h = np.array([-20.0, 12.0, -6e-8], np.float16)
    out = np.asarray(dmljax.activation_elu(h))
    assert out[0] == -1 and out[1] == 12 and out[2] == h[2]


def test_elu_gradient_at_kinks():
    x = np.array([-1.0, -0.0, 0.0, DENORM, 1.0, 100.0, -100.0, 89.0], np.float32)
    got = _grad(lambda v: dmljax.activation_elu(v, alpha=2.0), x)
    assert list(got[1:6]) == [1.0, 1.0, 1.0, 1.0, 1.0]  # x >= 0 selects x, also at 0 and -0
    assert got[0] == pytest.approx(2 * math.exp(-1), rel=1e-6) and got[6] == 0.0 and got[7] == 1.0
    h = np.array([12.0, 20.0, -20.0, -1.0], np.float16)
    got = _grad(lambda v: dmljax.activation_elu(v), h)
    assert np.isfinite(got).all() and list(got[:3]) == [1, 1, 0]
    np.testing.assert_allclose(got, ref.elu_grad(h.astype(np.float64)).astype(np.float16), rtol=1e-3)


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_elu_finite_differences_away_from_kinks(rng):
    x = rng.uniform(0.2, 2.0, (16,)) * rng.choice([-1.0, 1.0], (16,))
    x = x.astype(np.float32)
    tol = {"atol": 2e-2, "rtol": 2e-2, "eps": 1e-3}
    check_grads(lambda v: dmljax.activation_elu(v, alpha=0.7), (x,), order=2, modes=("fwd", "rev"), **tol)


def test_elu_eager_equals_jit_and_vmap(rng):
    f = (rng.standard_normal((3, 8)) * 3).astype(np.float32)
    fn = lambda v: dmljax.activation_elu(v, alpha=0.3)  # noqa: E731
    eager = np.asarray(fn(f))
    np.testing.assert_array_equal(bits(np.asarray(jax.jit(fn)(f))), bits(eager))
    np.testing.assert_array_equal(bits(np.asarray(jax.vmap(fn)(f))), bits(eager))


# ----------------------------------------------------------------------------------------------
# SCALED_ELU


def test_scaled_elu_gradient_branches():
    x = jnp.array([2.0, 0.0, -0.0, -1.0, 1e-30], jnp.float32)
    g = grad_of(lambda v: dmljax.activation_scaled_elu(v), x)
    expected = [GAMMA, GAMMA * ALPHA, GAMMA * ALPHA, GAMMA * ALPHA * math.exp(-1.0), GAMMA]
    np.testing.assert_allclose(g, np.array(expected, np.float32), rtol=2e-7)


@pytest.mark.parametrize("dtype,big", [(jnp.float32, 100.0), (jnp.float32, 3e38), (jnp.float16, 12.0), (jnp.float16, 60000.0)])
def test_scaled_elu_gradient_no_nan_for_large_inputs(dtype, big):
    x = jnp.array([big, -big], dtype)
    g = grad_of(lambda v: dmljax.activation_scaled_elu(v), x)
    assert np.isfinite(g).all(), g
    assert g[0] == np.asarray(GAMMA, np.float32).astype(dtype)
    slope = GAMMA * ALPHA * math.exp(-big)  # Gamma * Alpha * exp(x) on the selected branch
    np.testing.assert_allclose(float(g[1]), slope, rtol=1e-2, atol=float(jnp.finfo(dtype).tiny))


# ----------------------------------------------------------------------------------------------
# Both, on every FLOAT16 value


@pytest.mark.parametrize("name", ["DML_OPERATOR_ACTIVATION_SCALED_ELU", "DML_OPERATOR_ACTIVATION_ELU"])
def test_elu_family_on_every_float16_value(name):
    # All 65536 FLOAT16 bit patterns (the cheaper expm1 for FLOAT16 results must hold everywhere).
    op = dmljax.get_operator(name)
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    refs = (ref.activation_scaled_elu(x) if name.endswith("SCALED_ELU")
            else ref.activation_elu(x))
    assert_matches(op(x), refs, DataType.FLOAT16, op.spec.ulp[DataType.FLOAT16], name)


# ----------------------------------------------------------------------------------------------
# RELU, LEAKY_RELU, LINEAR, IDENTITY, THRESHOLDED_RELU, HARD_SIGMOID, SHRINK, SOFTSIGN


def test_relu_values_and_gradient_at_zero():
    x = np.array([-0.0, 0.0, DENORM, -DENORM, NAN, INF, -INF, 2.5, -2.5], np.float32)
    out = np.asarray(jax.jit(dmljax.activation_relu)(x))
    # maxNum(0, x): NaN -> 0; -0 -> +0; FLOAT32 denormals flushed first.
    np.testing.assert_array_equal(bits(out), bits(np.array([0, 0, 0, 0, 0, INF, 0, 2.5, 0], np.float32)))
    g = _grad(dmljax.activation_relu, x)
    np.testing.assert_array_equal(g, [0, 0, 0, 0, 0, 1, 0, 1, 0])  # X > 0 ? dY : 0, nothing at 0
    i8 = np.array([-128, -1, 0, 1, 127], np.int8)
    np.testing.assert_array_equal(np.asarray(dmljax.activation_relu(i8)), [0, 0, 0, 1, 127])
    gi = jax.grad(lambda v: dmljax.activation_relu(v).astype(jnp.float32).sum(), allow_int=True)(i8)
    assert gi.dtype == jax.dtypes.float0


def test_leaky_relu_signed_zero_nan_and_gradient():
    x = np.array([-0.0, 0.0, -2.0, NAN, -INF], np.float32)
    out = np.asarray(dmljax.activation_leaky_relu(x, alpha=0.5))
    assert bits(out[0]) == bits(np.float32(-0.0)) and out[1] == 0 and out[2] == -1
    assert np.isnan(out[3]) and out[4] == -INF
    g = _grad(lambda v: dmljax.activation_leaky_relu(v, alpha=0.5), x[:3])
    np.testing.assert_array_equal(g, [1, 1, 0.5])  # x >= 0 selects x, at -0 too


def test_linear_and_identity():
    x = np.array([1.0, -0.0, NAN, DENORM], np.float32)
    out = np.asarray(dmljax.activation_linear(x, alpha=2.0, beta=-2.0))
    assert out[0] == 0 and out[1] == -2 and np.isnan(out[2]) and out[3] == -2
    np.testing.assert_array_equal(_grad(lambda v: dmljax.activation_linear(v, alpha=-3.0, beta=1.0), x[:2]), [-3, -3])
    nan_payload = np.array([0x7FC01234, 0x80000000, 0x00000001], np.uint32).view(np.float32)
    for fn in (dmljax.activation_identity, jax.jit(dmljax.activation_identity)):
        np.testing.assert_array_equal(bits(np.asarray(fn(nan_payload))), bits(nan_payload))  # every bit kept


def test_thresholded_relu_strict_at_alpha():
    x = np.array([1.0, np.nextafter(np.float32(1), np.float32(2)), 0.5, NAN, INF], np.float32)
    out = np.asarray(jax.jit(dmljax.activation_thresholded_relu)(x))
    np.testing.assert_array_equal(out, [0, x[1], 0, 0, INF])  # x > Alpha: nothing at Alpha, NaN -> 0
    np.testing.assert_array_equal(_grad(dmljax.activation_thresholded_relu, x), [0, 1, 0, 0, 1])
    h = np.array([-0.5, -0.25], np.float16)
    np.testing.assert_array_equal(np.asarray(dmljax.activation_thresholded_relu(h, alpha=-0.5)), [0, -0.25])


def test_hard_sigmoid_bounds_nan_and_gradient():
    # Alpha * x + Beta = 0 at x = -2.5 and 1 at x = 2.5 (defaults 0.2, 0.5 as float32).
    x = np.array([-2.5, 2.5, 0.0, -10.0, 10.0, NAN], np.float32)
    out = np.asarray(dmljax.activation_hard_sigmoid(x))
    assert out[3] == 0 and out[4] == 1 and out[2] == 0.5 and out[5] == 1  # minNum(NaN, 1) = 1
    assert bits(out[3]) == bits(np.float32(0.0))
    g = _grad(dmljax.activation_hard_sigmoid, x)
    assert g[2] == np.float32(0.2) and g[3] == 0 and g[4] == 0 and g[5] == 0
    g0 = ref.hard_sigmoid_slope(x[:2])
    np.testing.assert_array_equal(g[:2], g0.astype(np.float32))  # strictly inside only


def test_shrink_strict_thresholds_and_integers():
    t = np.float32(0.5)
    x = np.array([t, -t, np.nextafter(t, np.float32(1)), -np.nextafter(t, np.float32(1)), NAN, -0.0], np.float32)
    out = np.asarray(jax.jit(lambda v: dmljax.activation_shrink(v, bias=0.25, threshold=0.5))(x))
    np.testing.assert_array_equal(out[:2], [0, 0])
    assert out[2] == np.float32(x[2] - np.float32(0.25)) and out[3] == np.float32(x[3] + np.float32(0.25))
    assert out[4] == 0 and out[5] == 0
    np.testing.assert_array_equal(_grad(lambda v: dmljax.activation_shrink(v, threshold=0.5), x), [0, 0, 1, 1, 0, 0])
    # Integers: Bias 1.9 -> 1, Threshold 2.7 -> 2 (truncation toward zero); sums wrap.
    i8 = np.array([-128, -3, -2, 2, 3, 127], np.int8)
    got = np.asarray(jax.jit(lambda v: dmljax.activation_shrink(v, bias=1.9, threshold=2.7))(i8))
    np.testing.assert_array_equal(got, [-127, -2, 0, 0, 2, 126])
    got = np.asarray(dmljax.activation_shrink(i8, bias=-2.0, threshold=1.0))
    np.testing.assert_array_equal(got, [126, -5, -4, 4, 5, -127])  # wraps at both ends
    u8 = np.array([0, 1, 255], np.uint8)
    np.testing.assert_array_equal(np.asarray(dmljax.activation_shrink(u8, bias=2.0, threshold=0.0)), [0, 255, 253])


def test_softsign_limits_and_gradient():
    x = np.array([INF, -INF, 3e38, -0.0, NAN, DENORM], np.float32)
    out = np.asarray(jax.jit(dmljax.activation_softsign)(x))
    assert out[0] == 1 and out[1] == -1 and out[2] == 1 and bits(out[3]) == bits(np.float32(-0.0))
    assert np.isnan(out[4]) and out[5] == 0
    g = _grad(dmljax.activation_softsign, x[:4])
    np.testing.assert_array_equal(g, [0, 0, 0, 1])
    h = np.array([60000.0, -1.0], np.float16)
    gh = _grad(dmljax.activation_softsign, h)
    assert np.isfinite(gh).all() and gh[1] == np.float16(0.25)


# ----------------------------------------------------------------------------------------------
# RELU_GRAD, and jax.grad of RELU


def _relu_grad_inputs(dtype):
    # X: every special value, each met by a finite dY, a NaN dY, a -0 dY and a denormal dY.
    tiny = DENORM if dtype == np.float32 else TINY16
    xs = np.array([-0.0, 0.0, tiny, -tiny, NAN, -NAN, INF, -INF, 2.5, -2.5, 1e-3, -1e-3], dtype)
    dys = np.array([3.0, NAN, -0.0, tiny, -7.5], dtype)
    x = np.repeat(xs, len(dys))
    dy = np.tile(dys, len(xs))
    return x, dy


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_jax_grad_of_relu_is_relu_grad_bit_for_bit(dtype):
    x, dy = _relu_grad_inputs(dtype)
    public = np.asarray(dmljax.activation_relu_grad(x, dy))
    for fn in (dmljax.activation_relu, jax.jit(dmljax.activation_relu),
               lambda v: dmljax.activation_relu(v, allow_half_precision_computation=True)):
        (grad,) = vjp(fn, jnp.asarray(dy), jnp.asarray(x))
        assert grad.dtype == dtype
        np.testing.assert_array_equal(bits(grad), bits(public))
    # and the public operator is X > 0 ? dY : 0, by hand: dY's bits where X > 0 (a FLOAT16
    # denormal X is a number above zero; a FLOAT32 one reads as zero), +0 everywhere else.
    passes = np.isin(np.arange(len(x)) // 5, [6, 8, 10] + ([2] if dtype == np.float16 else []))
    expected = np.where(passes, dy, np.zeros_like(dy))
    np.testing.assert_array_equal(bits(public), bits(expected))
    assert np.isnan(public[passes & np.isnan(dy)]).all() and not np.isnan(public[~passes]).any()


def test_relu_grad_under_jit_and_its_own_gradient():
    x = np.array([-1.0, 0.0, DENORM, 2.0, NAN, INF], np.float32)
    dy = np.array([5.0, 5.0, 5.0, -DENORM, 5.0, NAN], np.float32)
    out = np.asarray(jax.jit(dmljax.activation_relu_grad)(x, dy))
    np.testing.assert_array_equal(bits(out), bits(np.array([0, 0, 0, -DENORM, 0, NAN], np.float32)))
    # second order: d/ddY is the mask, d/dX is zero
    gx, gdy = vjp(dmljax.activation_relu_grad, jnp.ones(6, jnp.float32), jnp.asarray(x), jnp.asarray(dy))
    np.testing.assert_array_equal(gx, np.zeros(6, np.float32))
    np.testing.assert_array_equal(gdy, [0, 0, 0, 1, 0, 1])


def test_relu_second_derivative_is_zero():
    x = jnp.array([-1.0, 0.5, 3.0], jnp.float32)
    g2 = jax.grad(lambda v: jax.grad(lambda u: dmljax.activation_relu(u).sum())(v).sum())(x)
    np.testing.assert_array_equal(np.asarray(g2), [0, 0, 0])


def test_relu_grad_integers_exact():
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        x = np.array([info.min, -1, 0, 1, info.max], dtype)
        dy = np.array([info.max, info.min, 7, info.min, -1], dtype)
        out = np.asarray(jax.jit(dmljax.activation_relu_grad)(x, dy))
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, np.array([0, 0, 0, info.min, -1], dtype))
    gx, gdy = jax.grad(lambda a, b: dmljax.activation_relu_grad(a, b).astype(jnp.float32).sum(),
                       argnums=(0, 1), allow_int=True)(x, dy)
    assert gx.dtype == jax.dtypes.float0 and gdy.dtype == jax.dtypes.float0


def test_relu_grad_refused_before_5_1_for_integers_and_before_3_0():
    x = np.zeros(4, np.int32)
    with pytest.raises(dmljax.ValidationError, match="INT32 is supported from DML_FEATURE_LEVEL_5_1"):
        dmljax.activation_relu_grad(x, x, feature_level="5.0")
    f = np.zeros(4, np.float32)
    with pytest.raises(dmljax.ValidationError, match="introduced in DML_FEATURE_LEVEL_3_0"):
        dmljax.activation_relu_grad(f, f, feature_level="2.1")
    with pytest.raises(dmljax.ValidationError, match="InputGradientTensor"):
        dmljax.activation_relu_grad(f, np.zeros(4, np.float16))


def test_relu_record_names_its_grad_operator():
    assert dmljax.activation_relu.spec.grad_operator == dmljax.activation_relu_grad.spec.enum_name


def _no_flush_sweep():
    """FLOAT32 inputs around and above the smallest normal, both signs, and the exp branch."""
    tiny = np.finfo(np.float32).tiny
    mags = np.concatenate([tiny * np.float32(2.0) ** np.arange(0, 126, 0.25, dtype=np.float32),
                           np.nextafter(np.float32(tiny), np.float32(1)) + np.arange(64, dtype=np.float32) * tiny,
                           np.linspace(0, 40, 4001, dtype=np.float32)])
    x = np.concatenate([mags, -mags, [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40]]).astype(np.float32)
    return x


@pytest.mark.parametrize("op, attrs", [
    ("activation_elu", {}), ("activation_elu", {"alpha": 1.0}), ("activation_elu", {"alpha": 3.5}),
    ("activation_scaled_elu", {}), ("activation_scaled_elu", {"alpha": 1.0, "gamma": 1.0}),
    ("activation_scaled_elu", {"alpha": 0.25, "gamma": 4.0}),
])
def test_elu_results_need_no_flush_where_their_scales_are_at_least_one(op, attrs):
    # ELU and SCALED_ELU store FLOAT32 results without a flush where every scale is >= 1
    # (piecewise._scales_keep_normals): no denormal may come out on the way to or from the
    # smallest normal, nor anywhere else.
    x = _no_flush_sweep()
    y = np.asarray(getattr(dmljax, op)(x, **attrs))
    finite = np.isfinite(y)
    assert not np.any((np.abs(y[finite]) > 0) & (np.abs(y[finite]) < np.finfo(np.float32).tiny))
    flushed_first = np.asarray(getattr(dmljax, op)(np.where(np.abs(x) < np.finfo(np.float32).tiny, x * 0, x), **attrs))
    np.testing.assert_array_equal(y.view(np.uint32), flushed_first.view(np.uint32))


def _expm1_ulps(x: np.ndarray) -> float:
    from dmljax._src.numerics import expm1_nonpositive
    got = np.asarray(jax.jit(expm1_nonpositive)(x)).astype(np.float64)
    want = np.expm1(x.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return float(np.max(np.abs(got - want) / ulp))


def test_expm1_nonpositive_is_within_one_ulp_on_a_sample():
    # the cubic above -0.35 (numerics._EXPM1_CUBIC) within 1 ULP; exp(x) - 1 below, exp's own error
    rng = np.random.default_rng(7)
    x = np.concatenate([-rng.uniform(0, 0.35, 1 << 17), -np.exp2(rng.uniform(-126, np.log2(0.35), 1 << 17))])
    assert _expm1_ulps(x.astype(np.float32)) < 0.95
    assert _expm1_ulps(-rng.uniform(0.35, 20, 1 << 14).astype(np.float32)) < 2.0


@pytest.mark.slow  # every float32 from -0.35 to -2^-12: 92 million values
def test_expm1_nonpositive_is_within_one_ulp_on_every_float32_of_the_cubic():
    lo = np.float32(-0.35).view(np.uint32)  # the bit patterns of -2^-12 .. -0.35, in order
    hi = np.float32(-(2.0 ** -12)).view(np.uint32)
    worst = 0.0
    for start in range(int(hi), int(lo) + 1, 1 << 22):
        bits = np.arange(start, min(start + (1 << 22), int(lo) + 1), dtype=np.uint32)
        worst = max(worst, _expm1_ulps(bits.view(np.float32)))
    assert worst < 0.95
