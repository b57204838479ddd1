"""Hand-written edges of SIGMOID, TANH, SCALED_TANH, SOFTPLUS, PARAMETRIC_SOFTPLUS and CELU: special
values (NaN, +-inf, +-0, FLOAT32 denormals), large inputs that must not overflow (+-100, +-1e30,
FLOAT16's +-65504) eager and under jax.jit, gradients saturated and at the kinks, every FLOAT16
value, and the attribute rules (Steepness by feature level, a zero Alpha). Expected values come
from Python's math module, by hand, or from the float64 references in
tests/reference/activation/smooth.py. The generated cases (tests/test_catalog.py) cover the support
tables, types, eager/jit and gradients by finite differences."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax import DataType
from tests.compare import assert_matches
from tests.reference.activation import smooth as ref

NAN, INF = np.nan, np.inf
DENORM = 1e-40  # a FLOAT32 denormal
F32, F16 = DataType.FLOAT32, DataType.FLOAT16
ALL_F16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def bits(x):
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _grad(fn, x):
    return np.asarray(jax.jit(jax.grad(lambda v: fn(v).astype(jnp.float32).sum()))(x))


def _both(fn, x):
    """The operator's own call and the same inside a caller's jax.jit: the same bits."""
    own = np.asarray(fn(x))
    np.testing.assert_array_equal(bits(np.asarray(jax.jit(fn)(x))), bits(own))
    return own


def _budget(name, dt=F32):
    return dmljax.get_operator(name).spec.ulp[dt]


# ----------------------------------------------------------------------------------------------
# SIGMOID


def test_sigmoid_special_and_large_values():
    x = np.array([NAN, INF, -INF, 0.0, -0.0, DENORM, 100.0, -100.0, 1e30, -1e30, -87.0, -88.0], np.float32)
    out = _both(dmljax.activation_sigmoid, x)
    assert np.isnan(out[0]) and list(out[1:10]) == [1, 0, 0.5, 0.5, 0.5, 1, 0, 1, 0]
    assert out[10] == pytest.approx(math.exp(-87.0) / (1 + math.exp(-87.0)), rel=3e-7)  # normal: kept accurately
    assert out[11] == 0  # 6.05e-39 is a FLOAT32 denormal: flushed
    h = np.array([65504.0, -65504.0, 12.0, -12.0, -17.0, NAN], np.float16)
    out = _both(dmljax.activation_sigmoid, h)
    assert list(out[:2]) == [1, 0] and np.isnan(out[5])
    np.testing.assert_array_equal(out[2:5], np.array([1 / (1 + math.exp(-12)), math.exp(-12) / (1 + math.exp(-12)),
                                                      math.exp(-17)], np.float16))  # FLOAT16 denormal kept


def test_sigmoid_gradient_saturated_and_at_zero():
    x = np.array([0.0, -0.0, 100.0, -100.0, 1e30, -1e30, INF, -INF, -20.0, 20.0], np.float32)
    g = _grad(dmljax.activation_sigmoid, x)
    assert list(g[:8]) == [0.25, 0.25, 0, 0, 0, 0, 0, 0]  # never NaN where the value is finite
    e = math.exp(-20.0)
    np.testing.assert_allclose(g[8:], [e / (1 + e) ** 2] * 2, rtol=5e-7)  # no cancellation in 1 - f
    h = np.array([65504.0, -65504.0, 12.0, -12.0], np.float16)
    g = _grad(dmljax.activation_sigmoid, h)
    assert np.isfinite(g).all() and list(g[:2]) == [0, 0]
    assert g[2] == g[3] == np.float16(math.exp(-12) / (1 + math.exp(-12)) ** 2)


# ----------------------------------------------------------------------------------------------
# TANH: ELEMENT_WISE_TANH's formula without a ScaleBias, bit for bit


@pytest.mark.parametrize("half", [False, True])
def test_tanh_equals_element_wise_tanh_bit_for_bit(half, rng):
    x32 = np.concatenate([rng.standard_normal(4096) * 4, rng.uniform(-50, 50, 4096),
                          [NAN, INF, -INF, 0.0, -0.0, DENORM, -DENORM, 1e30, -1e30, 9.0, -44.5]]).astype(np.float32)
    for x in (x32, ALL_F16):
        a = np.asarray(dmljax.activation_tanh(x, allow_half_precision_computation=half))
        b = np.asarray(dmljax.element_wise_tanh(x, allow_half_precision_computation=half))
        np.testing.assert_array_equal(bits(a), bits(b))
    for x in (x32[np.isfinite(x32)], ALL_F16[np.isfinite(ALL_F16)]):
        np.testing.assert_array_equal(bits(_grad(dmljax.activation_tanh, x)), bits(_grad(dmljax.element_wise_tanh, x)))


def test_tanh_special_values_and_saturated_gradient():
    x = np.array([NAN, INF, -INF, -0.0, 0.0, DENORM, -DENORM, 100.0, -100.0, 1e30, -1e30], np.float32)
    out = _both(dmljax.activation_tanh, x)
    assert np.isnan(out[0]) and list(out[1:]) == [1, -1, 0, 0, 0, 0, 1, -1, 1, -1]
    assert bits(out[3]) == bits(np.float32(-0.0)) and bits(out[6]) == bits(np.float32(-0.0))
    g = _grad(dmljax.activation_tanh, x[1:])
    assert list(g) == [0, 0, 1, 1, 1, 1, 0, 0, 0, 0]
    h = np.array([65504.0, -65504.0, 5.0], np.float16)
    assert list(_both(dmljax.activation_tanh, h)[:2]) == [1, -1]
    g = _grad(dmljax.activation_tanh, h)
    assert list(g[:2]) == [0, 0] and g[2] == np.float16(1 / math.cosh(5.0) ** 2)


# ----------------------------------------------------------------------------------------------
# SOFTPLUS


def test_softplus_special_and_large_values():
    x = np.array([NAN, INF, -INF, 0.0, -0.0, DENORM, 100.0, -100.0, 1e30, -1e30, 3e38, -80.0], np.float32)
    out = _both(dmljax.activation_softplus, x)
    ln2 = np.float32(math.log(2))
    assert np.isnan(out[0]) and list(out[1:6]) == [INF, 0, ln2, ln2, ln2]
    assert list(out[6:11]) == [100, 0, np.float32(1e30), 0, np.float32(3e38)]  # x itself: no overflow
    assert out[11] == pytest.approx(math.log1p(math.exp(-80.0)), rel=3e-7)  # tiny, to full precision
    h = np.array([65504.0, -65504.0, 12.0, -17.0], np.float16)
    out = _both(dmljax.activation_softplus, h)
    np.testing.assert_array_equal(out, np.array([65504.0, 0.0, 12.0 + math.log1p(math.exp(-12.0)),
                                                 math.log1p(math.exp(-17.0))], np.float16))


def test_softplus_gradient_saturated():
    x = np.array([100.0, -100.0, 1e30, -1e30, INF, -INF, 0.0, -30.0], np.float32)
    g = _grad(dmljax.activation_softplus, x)
    assert list(g[:7]) == [1, 0, 1, 0, 1, 0, 0.5]  # sigmoid(x): never NaN
    assert g[7] == pytest.approx(math.exp(-30.0), rel=3e-7)
    g = _grad(lambda v: dmljax.activation_softplus(v, steepness=1.7), x)
    assert list(g[:7]) == [1, 0, 1, 0, 1, 0, 0.5]
    h = np.array([65504.0, -65504.0, 12.0], np.float16)
    g = _grad(dmljax.activation_softplus, h)
    assert list(g[:2]) == [1, 0] and g[2] == np.float16(1 / (1 + math.exp(-12.0)))


def test_softplus_steepness_product_is_exact_in_the_far_tail():
    # exp(Steepness * x) far out amplifies the rounding of the product by |Steepness * x|
    # (64 ULP uncorrected at Steepness 1.7); the carried rounding error keeps the budget.
    x = np.linspace(-55.0, -5.0, 4001).astype(np.float32)
    for s in (1.7, 3.3, 0.3, -1.3, -0.45):
        kw = {"steepness": s}
        got = dmljax.activation_softplus(x if s > 0 else -x, **kw)
        want = ref.activation_softplus(x if s > 0 else -x, **kw)
        assert_matches(got, want, F32, _budget("DML_OPERATOR_ACTIVATION_SOFTPLUS"), f"steepness {s}")
        g = _grad(lambda v, kw=kw: dmljax.activation_softplus(v, **kw), x if s > 0 else -x)
        assert_matches(g, [ref.softplus_slope(x if s > 0 else -x, **kw)], F32,
                       _budget("DML_OPERATOR_ACTIVATION_SOFTPLUS"), f"gradient, steepness {s}")


def test_softplus_small_steepness_lifts_denormal_exponentials():
    # exp(0.25 * -352) = 6e-39 is a FLOAT32 denormal; 4 times it is not: kept, not flushed
    x = np.array([-352.0, -349.0, -345.0], np.float32)
    np.testing.assert_allclose(dmljax.activation_softplus(x, steepness=0.25),
                               [4 * math.exp(0.25 * v) for v in x], rtol=1e-6)


def test_softplus_steepness_below_one_from_feature_level_6_4():
    x = np.array([-3.0, 0.0, 2.0], np.float32)
    for s in (0.5, -1.0, NAN):
        with pytest.raises(dmljax.ValidationError) as info:
            dmljax.activation_softplus(x, steepness=s, feature_level="6.3")
        msg = str(info.value)
        assert "activation_softplus (DML_OPERATOR_ACTIVATION_SOFTPLUS) at DML_FEATURE_LEVEL_6_3:" in msg
        assert "Steepness (argument `steepness`)" in msg and "cannot be less than 1 at DML_FEATURE_LEVEL_6_3" in msg
        assert "pass feature_level='6.4' or newer" in msg
    dmljax.activation_softplus(x.reshape(1, 1, 1, 3), steepness=1.0, feature_level="1.0")  # >= 1: every level
    out = dmljax.activation_softplus(x, steepness=0.5, feature_level="6.4")
    np.testing.assert_allclose(out, [math.log1p(math.exp(0.5 * v)) / 0.5 for v in x], rtol=3e-7)
    # a negative Steepness follows the formula: f_s(x) = -f_|s|(-x) <= 0
    out = np.asarray(dmljax.activation_softplus(x, steepness=-2.0))
    np.testing.assert_allclose(out, [-math.log1p(math.exp(-2.0 * v)) / 2.0 for v in x], rtol=3e-7)
    assert list(np.asarray(dmljax.activation_softplus(np.array([INF, -INF], np.float32), steepness=-2.0))) == [0, -INF]


def test_softplus_zero_steepness():
    # ln(2) / +-0: +-inf for every x but NaN (at +-inf too: the limit, not 0 * inf = NaN); the
    # gradient is the formula's, sigmoid(0 * x) = 0.5
    x = np.array([-3.0, 0.0, 2.0, INF, -INF, -0.0, NAN], np.float32)
    for s in (0.0, -0.0):
        out = np.asarray(dmljax.activation_softplus(x, steepness=s))
        assert list(out[:6]) == [math.copysign(INF, s)] * 6 and np.isnan(out[6])
        with pytest.raises(dmljax.ValidationError, match="cannot be less than 1"):
            dmljax.activation_softplus(x, steepness=s, feature_level="6.3")
    assert list(_grad(lambda v: dmljax.activation_softplus(v, steepness=0.0), x[:6])) == [0.5] * 6


# ----------------------------------------------------------------------------------------------
# SCALED_TANH


def test_scaled_tanh_special_and_large_values():
    x = np.array([NAN, INF, -INF, -0.0, 0.0, DENORM, 100.0, -100.0, 1e30, -1e30, 2.0], np.float32)
    out = _both(lambda v: dmljax.activation_scaled_tanh(v, alpha=-2.5), x)  # Beta = 0.5
    assert np.isnan(out[0]) and list(out[1:10]) == [-2.5, 2.5, 0, 0, 0, -2.5, 2.5, -2.5, 2.5]
    assert bits(out[3]) == bits(np.float32(0.0)) and bits(out[4]) == bits(np.float32(-0.0))  # -2.5 * tanh(+-0)
    assert out[10] == pytest.approx(-2.5 * math.tanh(1.0), rel=4e-7)
    h = np.array([65504.0, -65504.0], np.float16)
    assert list(_both(lambda v: dmljax.activation_scaled_tanh(v, alpha=1.7159, beta=2 / 3), h)) == [
        np.float16(1.7159), np.float16(-1.7159)]
    # a zero Beta: f is the constant 0, also at +-inf (the limit, not tanh(0 * inf) = NaN)
    out = np.asarray(dmljax.activation_scaled_tanh(x[1:], alpha=3.0, beta=0.0))
    assert not out.any() and not _grad(lambda v: dmljax.activation_scaled_tanh(v, alpha=3.0, beta=0.0), x[1:]).any()


def test_scaled_tanh_with_unit_attributes_is_tanh_bit_for_bit(rng):
    x = np.concatenate([rng.standard_normal(4096) * 4, [NAN, INF, -INF, -0.0, DENORM, 30.0]]).astype(np.float32)
    for v in (x, ALL_F16):
        np.testing.assert_array_equal(bits(np.asarray(dmljax.activation_scaled_tanh(v, alpha=1.0, beta=1.0))),
                                      bits(np.asarray(dmljax.activation_tanh(v))))


@pytest.mark.parametrize("alpha,beta", [(1.7159, 0.6667), (2.0, 0.5)])
def test_scaled_tanh_lifted_flushes_denormals_with_their_sign(alpha, beta):
    # |Beta| < 1 < |Alpha|: a denormal x (read as zero) gives a zero of its sign, a normal x
    # whose Beta * x is a denormal gives (Alpha * Beta) * x, normal; with Alpha * Beta = 1 too
    # (where the CPU's output flush is kept: XLA would pass x on untouched)
    tiny = np.finfo(np.float32).tiny
    x = np.array([DENORM, -DENORM, tiny, -tiny, 1.4 * tiny, -0.0, 0.0, 1e-5], np.float32)
    out = _both(lambda v: dmljax.activation_scaled_tanh(v, alpha=alpha, beta=beta), x)
    ab = np.float32(float(np.float32(alpha)) * float(np.float32(beta)))
    want = np.concatenate([[0.0, -0.0], ab * x[2:5], [-0.0, 0.0], [np.float32(alpha) * np.tanh(np.float32(beta) * x[7])]])
    assert bits(out[:7]).tolist() == bits(want[:7].astype(np.float32)).tolist()
    assert out[7] == pytest.approx(want[7], rel=4e-7)


def test_scaled_tanh_gradient_saturated_and_in_the_tails():
    x = np.array([100.0, -100.0, 1e30, -1e30, INF, -INF, 0.0], np.float32)
    g = _grad(lambda v: dmljax.activation_scaled_tanh(v, alpha=1.7159, beta=2 / 3), x)
    ab = np.float32(float(np.float32(1.7159)) * float(np.float32(2 / 3)))
    assert list(g) == [0, 0, 0, 0, 0, 0, ab]  # 0, not NaN, where sech^2 underflows
    # sech^2 amplifies the rounding of Beta * x by 2|Beta * x|: carried in, the budget holds
    x = np.linspace(-60.0, 60.0, 6001).astype(np.float32)
    kw = {"alpha": 1.7159, "beta": 2 / 3}
    assert_matches(_grad(lambda v: dmljax.activation_scaled_tanh(v, **kw), x), [ref.scaled_tanh_slope(x, **kw)],
                   F32, _budget("DML_OPERATOR_ACTIVATION_SCALED_TANH"), "gradient in the tails")
    # LeCun's attributes: 2/3 * x is a FLOAT32 denormal for x = 1.5e-38, 1.14 * x is not: kept
    x = np.array([1.5e-38, -1.5e-38, 1e-5], np.float32)
    np.testing.assert_allclose(dmljax.activation_scaled_tanh(x, **kw), float(ab) * x.astype(np.float64), rtol=3e-7)
    # Alpha * Beta = 8 lifts 4 exp(-89) = 8.9e-39 (a denormal) into the normal range: kept
    g = _grad(lambda v: dmljax.activation_scaled_tanh(v, alpha=8.0, beta=1.0), np.array([44.5, -44.5], np.float32))
    np.testing.assert_allclose(g, [32 * math.exp(-89.0)] * 2, rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# PARAMETRIC_SOFTPLUS


def test_parametric_softplus_needs_both_attributes():
    # the page gives no default: both are required keyword arguments
    for kw in ({}, {"alpha": 1.0}, {"beta": 1.0}):
        with pytest.raises(TypeError, match="missing a required argument"):
            dmljax.activation_parametric_softplus(np.ones(3, np.float32), **kw)


def test_parametric_softplus_special_and_large_values():
    kw = {"alpha": 1.7, "beta": 2.3}
    a, b = float(np.float32(1.7)), float(np.float32(2.3))
    x = np.array([NAN, INF, -INF, 0.0, -0.0, DENORM, 100.0, -100.0, 1e30, -1e30, -20.0], np.float32)
    out = _both(lambda v: dmljax.activation_parametric_softplus(v, **kw), x)
    assert np.isnan(out[0]) and list(out[1:3]) == [INF, 0] and list(out[7:8]) == [0] and out[9] == 0
    assert list(out[3:6]) == [np.float32(a * math.log(2))] * 3
    np.testing.assert_allclose(out[[6, 8]], [a * b * 100, a * b * 1e30], rtol=3e-7)  # no overflow inside
    assert out[10] == pytest.approx(a * math.log1p(math.exp(-20 * b)), rel=3e-7)  # tiny, to full precision
    h = np.array([65504.0, -65504.0, 4.0], np.float16)
    out = _both(lambda v: dmljax.activation_parametric_softplus(v, alpha=2.0, beta=0.5), h)
    np.testing.assert_array_equal(out, np.array([65504.0, 0.0, 2 * math.log1p(math.exp(2.0))], np.float16))
    # a zero Alpha or Beta makes f constant, also at +-inf (the limit, not 0 * inf = NaN)
    assert not np.asarray(dmljax.activation_parametric_softplus(x[1:], alpha=0.0, beta=2.0)).any()
    out = np.asarray(dmljax.activation_parametric_softplus(x[1:], alpha=3.0, beta=0.0))
    assert (out == np.float32(3 * math.log(2))).all()


def test_parametric_softplus_with_unit_attributes_is_softplus_bit_for_bit(rng):
    x = np.concatenate([rng.standard_normal(4096) * 4, [NAN, INF, -INF, -0.0, DENORM, 1e30, -90.0]]).astype(np.float32)
    for v in (x, ALL_F16):
        np.testing.assert_array_equal(bits(np.asarray(dmljax.activation_parametric_softplus(v, alpha=1.0, beta=1.0))),
                                      bits(np.asarray(dmljax.activation_softplus(v))))


def test_parametric_softplus_gradient_saturated_and_in_the_tail():
    x = np.array([100.0, -100.0, 1e30, -1e30, INF, -INF, 0.0], np.float32)
    kw = {"alpha": -0.5, "beta": -1.3}
    g = _grad(lambda v: dmljax.activation_parametric_softplus(v, **kw), x)
    ab = float(np.float32(-0.5)) * float(np.float32(-1.3))
    np.testing.assert_array_equal(g, np.array([0, ab, 0, ab, 0, ab, ab / 2], np.float32))  # never NaN
    # the far tail: Beta * x's rounding carried into exp, and Alpha = 3 lifting results whose
    # exp(Beta * x) is a FLOAT32 denormal (down to x = -85: 3 * exp(-1.3 * 85) = 3.2e-48 * 3)
    x = np.linspace(-84.0, 10.0, 4001).astype(np.float32)
    kw = {"alpha": 3.0, "beta": 1.3}
    budget = _budget("DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS")
    assert_matches(dmljax.activation_parametric_softplus(x, **kw), ref.activation_parametric_softplus(x, **kw),
                   F32, budget, "far tail")
    assert_matches(_grad(lambda v: dmljax.activation_parametric_softplus(v, **kw), x),
                   [ref.parametric_softplus_slope(x, **kw)], F32, budget, "gradient in the far tail")
    v = np.array([-68.0], np.float32)  # exp(-88.4) = 2.7e-39 is a denormal, 3 times it is not
    np.testing.assert_allclose(dmljax.activation_parametric_softplus(v, **kw),
                               [3 * math.exp(float(np.float32(1.3)) * -68.0)], rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# CELU


def test_celu_special_and_large_values():
    x = np.array([NAN, INF, -INF, -0.0, 0.0, DENORM, -DENORM, 100.0, -100.0, 1e30, -1e30, -1e-30, -1.0],
                 np.float32)
    out = _both(lambda v: dmljax.activation_celu(v, alpha=2.0), x)
    # max(0, x) + min(0, ...) with maxNum/minNum: NaN gives 0 + 0; -0 gives +0 + +0
    np.testing.assert_array_equal(bits(out[:11]), bits(np.array([0, INF, -2, 0, 0, 0, 0, 100, -2, 1e30, -2], np.float32)))
    assert out[11] == np.float32(-1e-30)  # small x keep their full precision
    assert out[12] == np.float32(2 * math.expm1(-0.5))
    h = np.array([-65504.0, 65504.0, -1e-7, NAN], np.float16)
    out = _both(dmljax.activation_celu, h)
    np.testing.assert_array_equal(bits(out), bits(np.array([-1.0, 65504.0, h[2], 0.0], np.float16)))


def test_celu_gradient_at_zero_nan_and_saturated():
    x = np.array([0.0, -0.0, DENORM, NAN, 1.0, -1.0, -100.0, -1e30, -INF, INF, 1e30], np.float32)
    g = _grad(lambda v: dmljax.activation_celu(v, alpha=0.5), x)
    # continuously differentiable: 1 at 0 from both sides; NaN gives the constant 0: no gradient
    np.testing.assert_array_equal(g, np.array([1, 1, 1, 0, 1, math.exp(-2.0), 0, 0, 0, 1, 1], np.float32))
    h = np.array([-65504.0, -4.0, 0.0], np.float16)
    g = _grad(dmljax.activation_celu, h)
    assert list(g) == [0, np.float16(math.exp(-4.0)), 1]


def test_celu_gradient_in_the_far_tail():
    # exp(x / Alpha) amplifies the rounding of x / Alpha by |x / Alpha| (1 / 2.5 = 0.4 is inexact)
    x = np.linspace(-215.0, -1.0, 4001).astype(np.float32)
    g = _grad(lambda v: dmljax.activation_celu(v, alpha=2.5), x)
    assert_matches(g, [ref.celu_slope(x, alpha=2.5)], F32, _budget("DML_OPERATOR_ACTIVATION_CELU"), "far tail")


def test_celu_alpha_limits():
    x = np.array([NAN, INF, -INF, -0.0, 0.0, 2.0, -2.0, -1e30], np.float32)
    relu = np.asarray(dmljax.activation_relu(x))
    for a in (0.0, -0.0, NAN):  # Alpha -> 0+ and min(0, NaN) = 0: max(0, x)
        np.testing.assert_array_equal(bits(np.asarray(dmljax.activation_celu(x, alpha=a))), bits(relu))
        np.testing.assert_array_equal(_grad(lambda v, a=a: dmljax.activation_celu(v, alpha=a), x),
                                      [0, 1, 0, 0, 0, 1, 0, 0])  # a kink at 0: strict, nothing there
    for a in (INF, -INF):  # Alpha -> +-inf: x (with CELU's +0 for -0 and 0 for NaN)
        out = np.asarray(dmljax.activation_celu(x, alpha=a))
        np.testing.assert_array_equal(bits(out), bits(np.array([0, INF, -INF, 0, 0, 2, -2, -1e30], np.float32)))
        np.testing.assert_array_equal(_grad(lambda v, a=a: dmljax.activation_celu(v, alpha=a), x), [0, 1, 1, 1, 1, 1, 1, 1])


def test_celu_negative_alpha_follows_the_formula():
    x = np.array([-1.0, -10.0, -60.0, -140.0, 3.0], np.float32)
    out = np.asarray(dmljax.activation_celu(x, alpha=-1.5))
    a = float(np.float32(-1.5))
    np.testing.assert_allclose(out[:3], [a * math.expm1(v / a) for v in x[:3]], rtol=5e-7)
    assert out[3] == -INF and out[4] == 3  # -1.5 * exp(93.3) overflows, as the value does
    g = _grad(lambda v: dmljax.activation_celu(v, alpha=-1.5), x[:3])
    np.testing.assert_allclose(g, [math.exp(v / a) for v in x[:3]], rtol=5e-7)


# ----------------------------------------------------------------------------------------------
# Every FLOAT16 value, computed in FLOAT32 and rounded once


@pytest.mark.parametrize("name,attrs,fn", [
    ("DML_OPERATOR_ACTIVATION_SIGMOID", {}, ref.activation_sigmoid),
    ("DML_OPERATOR_ACTIVATION_TANH", {}, ref.activation_tanh),
    ("DML_OPERATOR_ACTIVATION_SOFTPLUS", {}, ref.activation_softplus),
    ("DML_OPERATOR_ACTIVATION_SOFTPLUS", {"steepness": 1.7}, ref.activation_softplus),
    ("DML_OPERATOR_ACTIVATION_SCALED_TANH", {}, ref.activation_scaled_tanh),
    ("DML_OPERATOR_ACTIVATION_SCALED_TANH", {"alpha": 1.7159, "beta": 2 / 3}, ref.activation_scaled_tanh),
    ("DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS", {"alpha": -0.5, "beta": -1.3}, ref.activation_parametric_softplus),
    ("DML_OPERATOR_ACTIVATION_CELU", {}, ref.activation_celu),
    ("DML_OPERATOR_ACTIVATION_CELU", {"alpha": 0.3}, ref.activation_celu),
])
def test_every_float16_value(name, attrs, fn):
    op = dmljax.get_operator(name)
    assert_matches(op(ALL_F16, **attrs), fn(ALL_F16, **attrs), F16, op.spec.ulp[F16], f"{name} {attrs}")


@pytest.mark.parametrize("alpha,beta,x", [(-0.5, -1.3, -3e38), (0.25, 3.0, 2e38), (-0.5, -1.3, -1e37)])
def test_parametric_softplus_where_beta_x_overflows_but_f_does_not(alpha, beta, x):
    # f = Alpha * Beta * x far out: Beta * x alone overflows FLOAT32 (the H100 check found -inf
    # for -1.95e38); the result is the exact product within the budget.
    a, b = float(np.float32(alpha)), float(np.float32(beta))
    want = np.float32(a * b * float(np.float32(x)))
    got = dmljax.activation_parametric_softplus(np.array([x], np.float32), alpha=alpha, beta=beta)
    got_jit = jax.jit(lambda v: dmljax.activation_parametric_softplus(v, alpha=alpha, beta=beta))(np.array([x], np.float32))
    for g in (got, got_jit):
        assert np.isfinite(g[0]) and abs(float(g[0]) - float(want)) <= 2 * float(np.spacing(np.abs(want))), (g, want)


@pytest.mark.parametrize("alpha, beta", [(1.7159, 0.6667), (1.9999999, 1.0), (-1.0000001, 3.0)])
def test_scaled_tanh_float32_sweep_within_budget(alpha, beta):
    # Alpha * tanh(Beta * x) (XLA's own tanh on the CPU): Alpha just under 2 (or over 1) carries
    # tanh's relative error into the next binade's ULP; every 65537th FLOAT32 value and every
    # one from 1 to 1.0078125 (tanh from 0.76 on, the binade where its ULP is finest)
    from dmljax._src.compare.distance import ulp_distance
    m = np.concatenate([np.arange(0, 0x7F800001, 65537, dtype=np.uint32),
                        np.arange(0x3F800000, 0x3F810000, dtype=np.uint32)])
    x = np.concatenate([m, m | np.uint32(0x80000000)]).view(np.float32)
    got = np.asarray(dmljax.activation_scaled_tanh(x, alpha=alpha, beta=beta))
    with np.errstate(invalid="ignore"):
        want = ref.activation_scaled_tanh(x, alpha=alpha, beta=beta)[0].astype(np.float32)
    want = np.where(np.abs(want) < np.finfo(np.float32).tiny, want * np.float32(0), want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert ulp_distance(got, want).max() <= dmljax.activation_scaled_tanh.spec.ulp[F32]
