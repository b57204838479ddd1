"""The batch normalizations by hand: Epsilon's place, the biased variance, the statistics' axes
from the broadcast dimensions, FusedAdd and the fused activation, FLOAT16 statistics accumulated
in FLOAT32, jax.grad equal to the *_GRAD operators (also through OutputMean and OutputVariance),
Spatial before DML_FEATURE_LEVEL_4_0, and the shape rules' messages."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests.reference.normalization import batch

RELU = dmljax.FusedActivation("ACTIVATION_RELU")


def _stats(rng, shape, c=3):
    s = (1, c) + (1,) * (len(shape) - 2)
    return (rng.normal(size=s).astype(np.float32), rng.uniform(0.5, 2.0, s).astype(np.float32),
            rng.normal(size=s).astype(np.float32), rng.normal(size=s).astype(np.float32))


def _assert_close(got, want, rtol=2e-6, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


# ------------------------------------------------------------------------- BATCH_NORMALIZATION
def test_batch_normalization_formula_and_epsilon_under_the_root():
    x = np.array([1.0, 3.0, -1.0], np.float32).reshape(1, 3, 1, 1)
    one, zero = np.ones((1, 3, 1, 1), np.float32), np.zeros((1, 3, 1, 1), np.float32)
    # Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias with Variance 0: 1 / sqrt(0.25) = 2
    got = dmljax.batch_normalization(x, zero, zero, one, zero, epsilon=0.25)
    np.testing.assert_array_equal(np.asarray(got).ravel(), [2.0, 6.0, -2.0])
    got = dmljax.batch_normalization(x, one, np.full((1, 3, 1, 1), 3.0, np.float32), 2 * one, one, epsilon=1.0)
    np.testing.assert_array_equal(np.asarray(got).ravel(), [1.0, 3.0, -1.0])  # 2 * (x - 1) / 2 + 1
    relu = dmljax.batch_normalization(x, zero, zero, one, zero, epsilon=0.25, fused_activation=RELU)
    np.testing.assert_array_equal(np.asarray(relu).ravel(), [2.0, 6.0, 0.0])


def test_batch_normalization_broadcasts_each_statistic_its_own_way():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 2, 4)).astype(np.float32)
    m = rng.normal(size=(1, 3, 1, 1)).astype(np.float32)  # per channel
    v = rng.uniform(0.5, 2, (1, 1, 1, 4)).astype(np.float32)  # per column
    s = rng.normal(size=(2, 3, 2, 4)).astype(np.float32)  # per element
    b = rng.normal(size=(1, 1, 1, 1)).astype(np.float32)  # one value
    want = s.astype(np.float64) * (x - m.astype(np.float64)) / np.sqrt(v.astype(np.float64) + 1e-5) + b
    _assert_close(dmljax.batch_normalization(x, m, v, s, b), want)
    # 1 to 8 dimensions from DML_FEATURE_LEVEL_3_1; 4 before
    x1, m1, v1, s1, b1 = x[0, 0, 0], m[0, 0, 0, :1], v[0, 0, 0], s[0, 0, 0], b[0, 0, 0]
    _assert_close(dmljax.batch_normalization(x1, m1, v1, s1, b1),
                  s1 * (x1 - m1.astype(np.float64)) / np.sqrt(v1.astype(np.float64) + 1e-5) + b1)
    with pytest.raises(dmljax.ValidationError, match=r"InputTensor \(argument `input`\) has 3 dimensions "
                       r"\(Sizes \[3, 2, 4\]\); supported: 4\.\n    Tip: 1 to 8 dimensions are supported from "
                       r"DML_FEATURE_LEVEL_3_1"):
        dmljax.batch_normalization(x[0], m[0], v[0], s[0], b[0], feature_level="3.0")


def test_batch_normalization_float16_is_computed_in_float32():
    x = np.array([[[[2049.0]]]], np.float32)  # not a FLOAT16 value: the input is 2048 or 2050
    x16 = x.astype(np.float16)
    m = np.full((1, 1, 1, 1), 2047.0, np.float16)
    v, one, zero = np.zeros_like(m), np.ones_like(m), np.zeros_like(m)
    # (2048 - 2047) / sqrt(1e-5 rounded to FLOAT32) in FLOAT32, rounded once: 316.25 (FLOAT16 math: 316.0)
    got = dmljax.batch_normalization(x16, m, v, one, zero)
    want = np.float16((np.float64(x16[0, 0, 0, 0]) - 2047.0) / np.sqrt(np.float64(np.float32(1e-5))))
    assert got.dtype == np.float16 and got[0, 0, 0, 0] == want


def test_batch_normalization_spatial_before_4_0():
    x = np.zeros((1, 2, 3, 3), np.float32)
    per_channel = np.zeros((1, 2, 1, 1), np.float32)
    full = np.zeros((1, 2, 3, 3), np.float32)
    # TRUE, or any value from DML_FEATURE_LEVEL_4_0 ("deprecated ... and has no effect"): broadcast allowed
    dmljax.batch_normalization(x, per_channel, per_channel, per_channel, per_channel, feature_level="3.1")
    dmljax.batch_normalization(x, per_channel, per_channel, per_channel, per_channel, spatial=False,
                               feature_level="4.0")
    dmljax.batch_normalization(x, full, full, per_channel, per_channel, spatial=False, feature_level="1.0")
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.batch_normalization(x, per_channel, full, per_channel, per_channel, spatial=False,
                                   feature_level="3.1")
    msg = str(info.value)
    assert ("  MeanTensor (argument `mean`) has Sizes [1, 2, 1, 1] (dimension 2 is 1); dimensions 2, 3 equal to "
            "the InputTensor's, the others 1 or the InputTensor's (Sizes [1, 2, 3, 3]) with Spatial FALSE before "
            "DML_FEATURE_LEVEL_4_0.\n    Tip: pass spatial=True") in msg, msg
    assert "VarianceTensor" not in msg


def test_batch_normalization_shape_rules():
    x = np.zeros((2, 3, 4, 4), np.float32)
    ok = np.zeros((1, 3, 1, 1), np.float32)
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.batch_normalization(x, np.zeros((1, 2, 1, 1), np.float32), ok, ok, np.zeros((3,), np.float32))
    msg = str(info.value)
    assert ("BiasTensor (argument `bias`) has 1 dimensions (Sizes [3]); the same DimensionCount as InputTensor (4)."
            "\n    Tip: add dimensions of 1") in msg, msg
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.batch_normalization(x, np.zeros((1, 2, 1, 1), np.float32), ok, ok, np.zeros((2, 3, 4, 1), np.float32))
    msg = str(info.value)
    assert ("  MeanTensor (argument `mean`) has Sizes [1, 2, 1, 1] (dimension 1 is 2); each dimension 1 or the "
            "InputTensor's (Sizes [2, 3, 4, 4]).\n    Tip: a dimension of 1 is broadcast; DirectML never "
            "broadcasts any other size.") in msg, msg
    assert "BiasTensor" not in msg  # (2, 3, 4, 1): each dimension 1 or the input's
    with pytest.raises(dmljax.ValidationError, match="have DataTypes FLOAT32, FLOAT16, FLOAT32, FLOAT32, FLOAT32"):
        dmljax.batch_normalization(x, ok.astype(np.float16), ok, ok, ok)


def test_batch_normalization_gradient_is_its_grad_operator():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 2, 2)).astype(np.float32)
    m, v, s, b = _stats(rng, x.shape)
    dy = rng.normal(size=x.shape).astype(np.float32)
    f = lambda *a: (dmljax.batch_normalization(*a) * dy).sum()
    dx, dm, dv, ds, db = jax.grad(f, argnums=(0, 1, 2, 3, 4))(x, m, v, s, b)
    want = dmljax.batch_normalization_grad(x, dy, m, v, s)
    for got, w in zip((dx, ds, db), want):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(w))
    # Mean and Variance (no GRAD output): the formula's derivatives
    ref = jax.grad(lambda x, m, v, s, b: ((s * (x - m) / jnp.sqrt(v + np.float32(1e-5)) + b) * dy).sum(),
                   argnums=(1, 2))(x, m, v, s, b)
    _assert_close(dm, ref[0], rtol=1e-5)
    _assert_close(dv, ref[1], rtol=1e-5)
    # through a fused RELU: nothing below zero
    g = jax.grad(lambda x: dmljax.batch_normalization(x, m, v, s, b, fused_activation=RELU).sum())(x)
    y = np.asarray(dmljax.batch_normalization(x, m, v, s, b))
    assert not np.asarray(g)[y < 0].any() and np.asarray(g)[y > 0].all()


def test_batch_normalization_grad_values():
    x = np.array([[1.0, 3.0], [2.0, 6.0]], np.float32)
    dy = np.array([[1.0, 2.0], [1.0, -1.0]], np.float32)
    m, v, s = (np.array(t, np.float32).reshape(2, 1) for t in ([2.0, 4.0], [1.0, 4.0], [3.0, -1.0]))
    dx, ds, db = dmljax.batch_normalization_grad(x, dy, m, v, s, epsilon=0.0)
    np.testing.assert_array_equal(np.asarray(dx), [[3.0, 6.0], [-0.5, 0.5]])  # dY * Scale / sqrt(Variance)
    np.testing.assert_array_equal(np.asarray(ds), [[1.0], [-2.0]])  # sum(dY * (X - Mean) / sqrt(Variance))
    np.testing.assert_array_equal(np.asarray(db), [[3.0], [0.0]])  # sum(dY)
    with pytest.raises(dmljax.ValidationError, match=r"MeanTensor \(argument `mean`\), VarianceTensor \(argument "
                       r"`variance`\) and ScaleTensor \(argument `scale`\) have Sizes \[2, 1\], \[2, 1\], "
                       r"\[1, 2\]; they must have the same DimensionCount and Sizes"):
        dmljax.batch_normalization_grad(x, dy, m, v, s.reshape(1, 2))
    with pytest.raises(dmljax.ValidationError, match=r"not available at DML_FEATURE_LEVEL_3_0"):
        dmljax.batch_normalization_grad(x, dy, m, v, s, feature_level="3.0")


# ---------------------------------------------------------------- BATCH_NORMALIZATION_TRAINING
def test_training_outputs_biased_variance_and_epsilon_only_in_the_output():
    x = np.array([[1.0, 0.0], [3.0, 4.0]], np.float32)  # statistics per column
    one, zero = np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32)
    out = dmljax.batch_normalization_training(x, one, zero, epsilon=3.0)
    assert isinstance(out, tuple) and len(out) == 3
    y, mean, var = (np.asarray(o) for o in out)
    np.testing.assert_array_equal(mean, [[2.0, 2.0]])
    np.testing.assert_array_equal(var, [[1.0, 4.0]])  # divided by N = 2, not N - 1; no Epsilon
    _assert_close(y, [[-0.5, -2 / np.sqrt(7)], [0.5, 2 / np.sqrt(7)]])  # (x - mean) / sqrt(var + 3)


def test_training_reads_denormals_as_zero_and_flushes_its_outputs():
    # denormal inputs give the flushed inputs' bits (the CPU leaves both flushes to its processor);
    # an output among the denormals (Scale 1.5e-38 times +-1 / sqrt(1 + Epsilon 1)) is a zero
    tiny = np.finfo(np.float32).tiny
    x = np.array([1e-40, -1e-40, 1.0, -1.0, 3e-39, 2.0], np.float32).reshape(1, 1, 2, 3)
    one, zero = np.ones((1, 1, 1, 1), np.float32), np.zeros((1, 1, 1, 1), np.float32)
    f = jax.jit(lambda v, s: dmljax.batch_normalization_training(v, s, zero, epsilon=1e-5))
    flushed = np.where(np.abs(x) < tiny, x * 0, x)
    for got, want in zip(f(x, one), f(flushed, one)):
        np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32))
    g = jax.jit(lambda v, s: dmljax.batch_normalization_training(v, s, zero, epsilon=1.0))
    y = np.asarray(g(np.array([1.0, -1.0], np.float32).reshape(1, 1, 1, 2), np.full((1, 1, 1, 1), 1.5e-38, np.float32))[0])
    assert (y == 0).all()  # +-1.06e-38 before the flush


def test_training_statistics_over_the_dimensions_where_scale_is_one():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 2, 4, 5)).astype(np.float32)
    s = rng.normal(size=(1, 2, 4, 1)).astype(np.float32)  # statistics over N and W, per (C, H)
    b = rng.normal(size=(1, 2, 4, 1)).astype(np.float32)
    fa = rng.normal(size=x.shape).astype(np.float32)
    y, mean, var = dmljax.batch_normalization_training(x, s, b, fa, epsilon=0.1, fused_activation=RELU)
    x64 = x.astype(np.float64)
    m64 = x64.mean(axis=(0, 3), keepdims=True)
    v64 = x64.var(axis=(0, 3), keepdims=True)
    assert mean.shape == var.shape == (1, 2, 4, 1)
    _assert_close(mean, m64)
    _assert_close(var, v64, rtol=1e-5)
    want = np.maximum(s * (x64 - m64) / np.sqrt(v64 + np.float64(np.float32(0.1))) + b + fa, 0)  # FusedAdd first
    _assert_close(y, want, rtol=1e-5, atol=1e-5)
    y0 = dmljax.batch_normalization_training(x, s, b, epsilon=0.1)[0]  # FusedAdd left out
    _assert_close(y0, s * (x64 - m64) / np.sqrt(v64 + np.float64(np.float32(0.1))) + b, rtol=1e-5, atol=1e-5)


def test_training_float16_statistics_accumulate_in_float32():
    # 64 + 1/32 rounds back to 64 in FLOAT16: a FLOAT16 sum would give the mean 16; FLOAT32's
    # 16.0234375 rounded once to FLOAT16 is 16.03125 (a tie, to even)
    x = np.array([[64.0], [1 / 32], [1 / 32], [1 / 32]], np.float16)
    y, mean, var = dmljax.batch_normalization_training(x, np.ones((1, 1), np.float16), np.zeros((1, 1), np.float16))
    assert mean.dtype == var.dtype == y.dtype == np.float16
    assert float(mean[0, 0]) == 16.03125
    assert float(var[0, 0]) == float(np.float16(np.var(x.astype(np.float64))))


def test_training_gradient_is_its_grad_operator():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 3, 2, 2)).astype(np.float32)
    s = rng.normal(size=(1, 3, 1, 1)).astype(np.float32)
    b = rng.normal(size=(1, 3, 1, 1)).astype(np.float32)
    fa = rng.normal(size=x.shape).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    f = lambda x, s, b, fa: (dmljax.batch_normalization_training(x, s, b, fa, epsilon=0.01)[0] * dy).sum()
    dx, ds, db, dfa = jax.grad(f, argnums=(0, 1, 2, 3))(x, s, b, fa)
    _, mean, var = dmljax.batch_normalization_training(x, s, b, fa, epsilon=0.01)
    want = dmljax.batch_normalization_training_grad(x, dy, mean, var, s, epsilon=0.01)
    for got, w in zip((dx, ds, db), want):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(w))
    np.testing.assert_array_equal(np.asarray(dfa), dy)
    # and both are the derivative of the formula (the float64 reference's complex-step derivative)
    want = batch._training_grad(dy, x, s, b, fa, epsilon=0.01)
    for got, w in zip((dx, ds, db), want):
        _assert_close(got, w, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_training_gradient_through_mean_and_variance_outputs():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 2)).astype(np.float32)
    s, b = np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32)

    def loss(x):
        y, mean, var = dmljax.batch_normalization_training(x, s, b)
        return (y * x).sum() + (mean ** 2).sum() + 3 * var.sum()

    def formula(x):
        m = x.mean(axis=0, keepdims=True)
        v = ((x - m) ** 2).mean(axis=0, keepdims=True)
        return ((x - m) / jnp.sqrt(v + np.float32(1e-5)) * x).sum() + (m ** 2).sum() + 3 * v.sum()
    _assert_close(jax.grad(loss)(x), jax.grad(formula)(x), rtol=1e-5, atol=1e-5)
    only_stats = jax.grad(lambda x: dmljax.batch_normalization_training(x, s, b)[2].sum())(x)
    _assert_close(only_stats, 2 * (x - x.mean(axis=0)) / 5)  # d var / dx = 2 (x - mean) / N


def test_training_grad_reads_the_mean_tensor():
    # The page's mean(Input) is the MeanTensor (what the forward pass returned): with another Mean
    # the page's formula with that Mean is what comes out
    x = np.array([[1.0], [2.0], [6.0]], np.float32)
    dy = np.array([[1.0], [-2.0], [0.5]], np.float32)
    m, v, s = (np.array([[t]], np.float32) for t in (2.0, 4.0, 3.0))
    dx, ds, db = dmljax.batch_normalization_training_grad(x, dy, m, v, s, epsilon=0.0)
    xc, g = x[:, 0] - 2.0, dy[:, 0].astype(np.float64)
    want = 3.0 / 2.0 * ((g - g.mean()) - xc * (g * xc).mean() / 4.0)
    _assert_close(dx[:, 0], want)
    _assert_close(ds, [[(g * xc / 2.0).sum()]])
    _assert_close(db, [[g.sum()]])
    second = jax.grad(lambda x: dmljax.batch_normalization_training_grad(x, dy, m, v, s)[0].sum())(x)
    assert np.isfinite(np.asarray(second)).all()


def test_training_shape_rules():
    x = np.zeros((4, 3, 2, 2), np.float32)
    s = np.ones((1, 3, 1, 1), np.float32)
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.batch_normalization_training(x, np.ones((1, 2, 1, 1), np.float32), np.ones((1, 2, 1, 1), np.float32))
    assert ("ScaleTensor (argument `scale`) has Sizes [1, 2, 1, 1] (dimension 1 is 2); each dimension 1 or the "
            "InputTensor's (Sizes [4, 3, 2, 2])") in str(info.value)
    with pytest.raises(dmljax.ValidationError, match=r"ScaleTensor \(argument `scale`\) and BiasTensor \(argument "
                       r"`bias`\) have Sizes \[1, 3, 1, 1\], \[1, 1, 1, 1\]; they must have the same DimensionCount"):
        dmljax.batch_normalization_training(x, s, np.ones((1, 1, 1, 1), np.float32))
    with pytest.raises(dmljax.ValidationError, match=r"InputTensor \(argument `input`\) and FusedAddTensor "
                       r"\(argument `fused_add`\) have Sizes \[4, 3, 2, 2\], \[1, 3, 2, 2\]"):
        dmljax.batch_normalization_training(x, s, s, np.zeros((1, 3, 2, 2), np.float32))
    with pytest.raises(dmljax.ValidationError, match="it was introduced in DML_FEATURE_LEVEL_4_1"):
        dmljax.batch_normalization_training(x, s, s, feature_level="4.0")
    with pytest.raises(dmljax.ValidationError, match="which DirectML fuses only into"):
        dmljax.batch_normalization_training(x, s, s, fused_activation={"Type": "ELEMENT_WISE_CLIP",
                                                                       "Desc": {"Min": 0.0, "Max": 1.0}})
