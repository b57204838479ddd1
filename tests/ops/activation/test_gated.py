"""Hand-written edges of the activations PARAMETERIZED_RELU, HARD_SWISH, SWISH and GELU: exact
special values, large inputs, the gradients at the kinks and saturated, against values derived by
hand or from the float64 references (tests/reference/activation/gated.py). The generated cases (tests/test_catalog.py)
cover the support tables, data types, eager/jit and gradients away from the kinks."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers

NAN, INF = np.nan, np.inf
DENORM = 1e-40  # a FLOAT32 denormal
TINY16 = 6e-8  # FLOAT16's smallest denormal (kept: only FLOAT32 denormals are flushed)


def bits(x):
    x = np.asarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def assert_same(out, want):
    """The same bits, except that a NaN is compared as "is NaN" (docs/semantics.md#nan), not by payload."""
    out, want = np.asarray(out), np.asarray(want)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(bits(out[keep]), bits(want[keep]))


def vjp(fn, dy, *args):
    """The cotangents of every input of ``fn`` for the output cotangent ``dy``."""
    _, pullback = jax.vjp(fn, *args)
    return [np.asarray(g) for g in pullback(dy)]


# ----------------------------------------------------------------------------------------------
# PARAMETERIZED_RELU


def test_parameterized_relu_special_values():
    x = np.array([-0.0, 0.0, -2.0, NAN, -INF, INF, DENORM, -DENORM, -3.0, -3.0], np.float32)
    s = np.array([5.0, 5.0, 0.5, 0.5, 0.5, 0.5, 0.5, -2.0, DENORM, NAN], np.float32)
    out = np.asarray(jax.jit(dmljax.activation_parameterized_relu)(x, s))
    # x >= 0 keeps x (-0 included); NaN x takes slope * x; denormal x reads as a signed zero,
    # so -DENORM keeps -0 whatever the slope; a denormal slope reads as +0.
    want = np.array([-0.0, 0.0, -1.0, NAN, -INF, INF, 0.0, -0.0, -0.0, NAN], np.float32)
    assert_same(out, want)
    h = np.array([-65504.0, -TINY16, 3.0], np.float16)
    sh = np.array([0.5, 0.5, 9.0], np.float16)
    out = np.asarray(dmljax.activation_parameterized_relu(h, sh))
    # FLOAT16 denormals are kept: -6e-8 * 0.5 is half the smallest denormal, rounded to even: -0
    assert_same(out, np.array([-32752.0, -0.0, 3.0], np.float16))


def test_parameterized_relu_gradients_for_input_and_slope():
    x = jnp.array([-2.0, -0.0, 0.0, 3.0, -INF, 1e-3, -1e-3], jnp.float32)
    s = jnp.array([0.25, 0.25, 0.25, 0.25, 0.25, -4.0, -4.0], jnp.float32)
    gx, gs = vjp(dmljax.activation_parameterized_relu, jnp.ones(7, jnp.float32), x, s)
    np.testing.assert_array_equal(gx, [0.25, 1, 1, 1, 0.25, 1, -4])  # x >= 0: 1, also at -0
    np.testing.assert_array_equal(gs, [-2, 0, 0, 0, -INF, 0, np.float32(-1e-3)])  # x where x < 0
    h = jnp.array([-65504.0, 2.0], jnp.float16)
    gx, gs = vjp(dmljax.activation_parameterized_relu, jnp.ones(2, jnp.float16), h, jnp.full(2, 0.5, jnp.float16))
    assert gx.dtype == gs.dtype == np.float16
    np.testing.assert_array_equal(gx, [0.5, 1]) and np.testing.assert_array_equal(gs, [-65504, 0])


def test_parameterized_relu_integers_wrap():
    info = np.iinfo(np.int32)
    x = np.array([info.min, -3, -1, 0, info.max], np.int32)
    s = np.array([-1, 1 << 30, info.min, info.min, -7], np.int32)
    out = np.asarray(jax.jit(dmljax.activation_parameterized_relu)(x, s))
    # -1 * INT_MIN wraps to INT_MIN; -3 * 2**30 wraps to 2**30; -1 * INT_MIN = INT_MIN; x >= 0 kept
    np.testing.assert_array_equal(out, np.array([info.min, 1 << 30, info.min, 0, info.max], np.int32))
    i8 = np.array([-128, -2, 100], np.int8)
    np.testing.assert_array_equal(np.asarray(dmljax.activation_parameterized_relu(i8, np.array([-1, 100, -1], np.int8))),
                                  np.array([-128, 56, 100], np.int8))


def test_parameterized_relu_per_channel_slope_by_zero_strides():
    # PReLU with one slope per channel of NCHW: the page wants SlopeTensor of the input's Sizes;
    # a buffer of C slopes with strides (0, 1, 0, 0) repeats each along N, H and W.
    rng = np.random.default_rng(7)
    sizes = [2, 3, 2, 4]
    x = (rng.standard_normal(sizes) * 3).astype(np.float32)
    slopes = np.array([0.5, -2.0, 0.125], np.float32)
    desc = {"InputTensor": {"DataType": "FLOAT32", "Sizes": sizes},
            "SlopeTensor": {"DataType": "FLOAT32", "Sizes": sizes, "Strides": [0, 1, 0, 0]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": sizes}}
    op = dmljax.compile_operator("ACTIVATION_PARAMETERIZED_RELU", desc)
    got = np.asarray(op(InputTensor=x.ravel(), SlopeTensor=slopes,
                        OutputTensor=np.zeros(x.size, np.float32))["OutputTensor"]).reshape(sizes)
    c = slopes[None, :, None, None]
    expected = np.where(x >= 0, x, c * x)  # NumPy's broadcast of the same C slopes
    np.testing.assert_array_equal(got, expected)
    assert (x < 0).any(axis=(0, 2, 3)).all()  # every channel's slope is used
    # the array API: a broadcast array is the same tensor
    broadcast = jnp.broadcast_to(jnp.asarray(c), sizes)
    np.testing.assert_array_equal(np.asarray(dmljax.activation_parameterized_relu(x, broadcast)), expected)
    # DirectML never broadcasts implicitly: a slope of other Sizes is refused
    with pytest.raises(dmljax.ValidationError, match="SlopeTensor"):
        dmljax.activation_parameterized_relu(x, c)


# ----------------------------------------------------------------------------------------------
# HARD_SWISH


def test_hard_swish_special_values_and_limits():
    # defaults Alpha = float32(1/6), Beta = 0.5: HardSigmoid is 0 at x = -3 and below, 1 at 3 and above
    x = np.array([-INF, INF, NAN, -0.0, 0.0, -3.0, 3.0, -100.0, 3e38, -3e38, DENORM, -DENORM], np.float32)
    for fn in (dmljax.activation_hard_swish, jax.jit(dmljax.activation_hard_swish)):
        out = np.asarray(fn(x))
        # -inf: the limit -0 (x * 0 would be NaN); -0 * 0.5 = -0; x * 0 keeps x's sign
        want = np.array([-0.0, INF, NAN, -0.0, 0.0, -0.0, 3.0, -0.0, 3e38, -0.0, 0.0, -0.0], np.float32)
        assert_same(out, want)
    # a negative Alpha turns it around: HardSigmoid is 0 for large x, so +inf gives the limit +0
    out = np.asarray(dmljax.activation_hard_swish(np.array([INF, -INF, 2.0], np.float32), alpha=-0.5, beta=0.5))
    assert_same(out, np.array([0.0, -INF, 0.0], np.float32))
    h = np.array([65504.0, -65504.0, -1.5, -INF], np.float16)
    out = np.asarray(dmljax.activation_hard_swish(h))
    assert_same(out, np.array([65504.0, -0.0, -0.375, -0.0], np.float16))


def test_hard_swish_gradient_at_the_bounds_and_its_zero():
    x = np.array([-3.0, 3.0, -1.5, -INF, INF, 10.0, -10.0, 0.0], np.float32)
    g = np.asarray(jax.grad(lambda v: dmljax.activation_hard_swish(v).sum())(x))
    # strict: HardSigmoid's clamped branch at g = 0 (x = -3) and g = 1 (x = 3): its constant
    np.testing.assert_array_equal(g[[0, 1, 3, 4, 5, 6]], [0, 1, 0, 1, 1, 0])
    assert abs(g[2]) < 1e-7 and g[7] == 0.5  # 2x/6 + 1/2 is zero at -1.5 (to float32(1/6)'s rounding)
    # near its zero the derivative keeps its relative precision (x - x0 with x0 in two floats)
    a = float(np.float32(1 / 6))
    near = np.float32(-1.5) + np.float32(2.0**-20) * np.arange(1, 9, dtype=np.float32)
    gn = np.asarray(jax.grad(lambda v: dmljax.activation_hard_swish(v).sum())(near))
    exact = 2 * a * near.astype(np.float64) + 0.5
    np.testing.assert_allclose(gn, exact, rtol=2.4e-7)
    h = np.array([-2.0, 2.0, 60000.0], np.float16)
    gh = np.asarray(jax.grad(lambda v: dmljax.activation_hard_swish(v).astype(jnp.float32).sum())(h))
    np.testing.assert_array_equal(gh, np.array([2 * a * -2 + 0.5, 2 * a * 2 + 0.5, 1], np.float64).astype(np.float16))


# ----------------------------------------------------------------------------------------------
# SWISH


def _swish64(x, b=1.0):
    # x * Sigmoid(b * x) in float64 for moderate arguments (by hand, not the operator's form)
    x = np.asarray(x, np.float64)
    return x / (1 + np.exp(-np.float64(np.float32(b)) * x))


def test_swish_special_and_large_values():
    x = np.array([-INF, INF, NAN, -0.0, 0.0, 100.0, -100.0, 1e30, -1e30, 3e38, -3e38, DENORM, -88.0, -1.0], np.float32)
    for fn in (dmljax.activation_swish, jax.jit(dmljax.activation_swish)):
        out = np.asarray(fn(x))
        # -inf: the limit -0 (the formula's -inf * 0); -100: -3.7e-42 is a denormal, flushed
        head = np.array([-0.0, INF, NAN, -0.0, 0.0, 100.0, -0.0, 1e30, -0.0, 3e38, -0.0, 0.0], np.float32)
        assert_same(out[:12], head)
        # -88: exp(-88) is a FLOAT32 denormal, -88 * exp(-88) a normal number: kept on every backend
        np.testing.assert_allclose(out[12:], _swish64(x[12:]), rtol=8 * 2.0**-23)
        assert out[12] < -5e-37
    h = np.array([65504.0, -65504.0, -20.0, 11.0], np.float16)
    out = np.asarray(jax.jit(dmljax.activation_swish)(h))
    np.testing.assert_array_equal(out, _swish64(h).astype(np.float16))  # -20: a FLOAT16 denormal, kept
    assert out[2] != 0 and bits(out[1]) == bits(np.float16(-0.0))
    # SigmoidInputScale: 0 gives x / 2 (also at +-inf); a negative one mirrors the saturation
    out = np.asarray(dmljax.activation_swish(np.array([INF, -INF, 3.0], np.float32), sigmoid_input_scale=0.0))
    np.testing.assert_array_equal(out, [INF, -INF, 1.5])
    # a denormal x, read as zero: a zero of its sign (on the CPU the quotient's own flush)
    for s in (1.0, 0.0, -2.0):
        out = jax.jit(lambda v: dmljax.activation_swish(v, sigmoid_input_scale=s))(np.array([DENORM, -DENORM], np.float32))
        assert_same(np.asarray(out), np.array([0.0, -0.0], np.float32))
    out = np.asarray(dmljax.activation_swish(np.array([INF, -INF, 2.0], np.float32), sigmoid_input_scale=-2.0))
    assert_same(out[:2], np.array([0.0, -INF], np.float32))
    np.testing.assert_allclose(out[2], _swish64(2.0, -2.0), rtol=8 * 2.0**-23)


def test_swish_gradient_saturated_and_at_its_zero():
    x = np.array([INF, -INF, 100.0, -100.0, 1e30, -1e30, 0.0, -88.0], np.float32)
    g = np.asarray(jax.grad(lambda v: dmljax.activation_swish(v).sum())(x))
    assert np.isfinite(g).all()
    np.testing.assert_array_equal(g[:7], [1, 0, 1, 0, 1, 0, 0.5])  # the limits at +-inf
    assert -6e-37 < g[7] < -5e-37  # exp(-88) (1 - 88): a normal gradient beyond exp's normal range
    h = np.array([65504.0, -65504.0, 12.0, -12.0], np.float16)
    gh = np.asarray(jax.grad(lambda v: dmljax.activation_swish(v).astype(jnp.float32).sum())(h))
    assert np.isfinite(gh).all() and gh[0] == 1 and gh[1] == 0
    # the derivative's zero z0 = -1.2784645...: relative precision kept on both sides of it
    z0 = -1.2784645427610738
    near = np.float32(z0) + np.float32(2.0**-22) * np.arange(-6, 7, dtype=np.float32)
    gn = np.asarray(jax.grad(lambda v: dmljax.activation_swish(v).sum())(near))
    d = near.astype(np.float64) - z0
    e = np.exp(near.astype(np.float64))
    exact = e * (d + np.exp(z0) * np.expm1(d)) / (1 + e) ** 2  # (1 + z + e^z) about its zero
    np.testing.assert_allclose(gn, exact, rtol=8 * 2.0**-23)
    assert (gn[:6] < 0).all() and (gn[7:] > 0).all()  # falling left of the minimum, rising right


# ----------------------------------------------------------------------------------------------
# GELU


def _gelu64(x):
    # 0.5 * x * (1 + erf(x / sqrt(2))) as 0.5 * x * erfc(-x / sqrt(2)) in float64 (by hand)
    return np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in np.asarray(x, np.float64)])


def _gelu_slope64(x):
    return np.array([0.5 * math.erfc(-v / math.sqrt(2)) + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi)
                     for v in np.asarray(x, np.float64)])


F32_ULP = 2.0**-23


def test_gelu_special_and_large_values():
    x = np.array([-INF, INF, NAN, -0.0, 0.0, 100.0, -100.0, 1e30, -1e30, 3e38, -3e38, DENORM, -DENORM], np.float32)
    for fn in (dmljax.activation_gelu, jax.jit(dmljax.activation_gelu)):
        out = np.asarray(fn(x))
        want = np.array([-0.0, INF, NAN, -0.0, 0.0, 100.0, -0.0, 1e30, -0.0, 3e38, -0.0, 0.0, -0.0], np.float32)
        assert_same(out, want)  # the limits at +-inf, -0 kept
    # The tail, where 1 + erf(x / sqrt(2)) cancels in FLOAT32 (the literal formula gives 0 or
    # garbage below x = -5): every value within the budget of the float64 value, -13 included,
    # whose result (-8e-38) is normal though its exp(-x^2 / 2) factor is near FLOAT32's smallest.
    t = np.array([-13.0, -12.5, -10.0, -8.0, -6.0, -5.0, -4.0, -2.0, -0.5, 0.5, 2.0, 6.0], np.float32)
    out = np.asarray(jax.jit(dmljax.activation_gelu)(t))
    np.testing.assert_allclose(out, _gelu64(t), rtol=8 * F32_ULP, atol=0)
    assert out[0] < -7e-38
    # results among the denormals, flushed to zeros of their sign (on the CPU by its processor):
    # -13.5 (-1.1e-40), 1.2e-38 (6e-39); 2.4e-38 gives 1.2e-38, normal
    out = np.asarray(jax.jit(dmljax.activation_gelu)(np.array([-13.5, 1.2e-38, -1.2e-38, 2.4e-38], np.float32)))
    assert_same(out[:3], np.array([-0.0, 0.0, -0.0], np.float32))
    assert out[3] == np.float32(1.2e-38)
    h = np.array([65504.0, -65504.0, -5.5, -3.0, 3.0], np.float16)
    out = np.asarray(dmljax.activation_gelu(h))
    np.testing.assert_array_equal(out, _gelu64(h).astype(np.float16))  # -5.5: a FLOAT16 denormal, kept
    assert out[2] != 0 and bits(out[1]) == bits(np.float16(-0.0))


def test_gelu_gradient_saturated_and_at_its_zero():
    x = np.array([INF, -INF, 100.0, -100.0, 1e30, -1e30, 3e38, -3e38], np.float32)
    g = np.asarray(jax.jit(jax.grad(lambda v: dmljax.activation_gelu(v).sum()))(x))
    np.testing.assert_array_equal(g, [1, 0, 1, 0, 1, 0, 1, 0])  # NaN-free, the limits
    t = np.array([-13.25, -13.0, -8.0, -3.0, -1.0, 0.0, 1.0, 2.5, 5.0], np.float32)
    g = np.asarray(jax.grad(lambda v: dmljax.activation_gelu(v).sum())(t))
    np.testing.assert_allclose(g, _gelu_slope64(t), rtol=8 * F32_ULP, atol=0)
    assert g[0] < -1.2e-38  # normal, though exp(-x^2 / 2) is a FLOAT32 denormal there
    # GELU's minimum x0 = -0.75179...: relative precision on both sides of the zero
    x0 = -0.7517915246935645
    near = np.float32(x0) + np.float32(2.0**-23) * np.arange(-6, 7, dtype=np.float32)
    gn = np.asarray(jax.grad(lambda v: dmljax.activation_gelu(v).sum())(near))
    np.testing.assert_allclose(gn, _gelu_slope64(near), rtol=8 * F32_ULP, atol=0)
    assert (gn[:6] < 0).all() and (gn[7:] > 0).all()
    h = np.array([65504.0, -65504.0, -4.0, 0.5], np.float16)
    gh = np.asarray(jax.grad(lambda v: dmljax.activation_gelu(v).astype(jnp.float32).sum())(h))
    assert gh.dtype == np.float16
    np.testing.assert_array_equal(gh, _gelu_slope64(h).astype(np.float16))


@pytest.mark.parametrize("scale", tiers.fast_sample([1.0, -2.0, 0.7, 300.0], keep=2, key="swish16"))
def test_swish_every_float16_value_and_gradient(scale):
    # FLOAT16 takes the plain formula in FLOAT32 (one exp): every FLOAT16 input, infinities and
    # NaN included, within the 1 ULP budget of the float64 reference, value and derivative.
    from tests.compare import assert_matches
    from tests.reference.activation import gated as gref
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    y = dmljax.activation_swish(x, sigmoid_input_scale=scale)
    assert_matches(y, gref.activation_swish(x, scale), dmljax.DataType.FLOAT16, 1)
    g = jax.grad(lambda v: jnp.sum(dmljax.activation_swish(v, sigmoid_input_scale=scale).astype(jnp.float32)))(x)
    assert_matches(g, [gref.swish_slope(x, scale)], dmljax.DataType.FLOAT16, 1)
