"""The mean variance normalizations by hand: MEAN_VARIANCE_NORMALIZATION's CrossChannel equal to
MEAN_VARIANCE_NORMALIZATION1's Axes (the page's remark), the optional Scale and Bias per feature
level, UseMean / UseVariance, the gradients, and the shape rules' messages."""

import jax
import numpy as np
import pytest

import dmljax
from tests.reference.normalization import mean_variance

RELU = dmljax.FusedActivation("ACTIVATION_RELU")


def _assert_close(got, want, rtol=2e-6, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


def _mvn64(x, axes, eps=1e-5, use_mean=True, use_var=True):
    x = np.asarray(x, np.float64)
    m = x.mean(axis=axes, keepdims=True) if use_mean else 0.0
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + float(np.float32(eps))) if use_var else x - m


# ----------------------------------------------------------------- MEAN_VARIANCE_NORMALIZATION
def test_cross_channel_is_mvn1_axes():
    # "setting the Axes array to { 2, 3 } is the equivalent of setting CrossChannel to FALSE ...
    # { 1, 2, 3 } is equivalent of setting CrossChannel to TRUE"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    s = rng.normal(size=(1, 3, 1, 5)).astype(np.float32)
    b = rng.normal(size=(1, 3, 1, 1)).astype(np.float32)
    for cross, axes in ((False, (2, 3)), (True, (1, 2, 3))):
        y0 = dmljax.mean_variance_normalization(x, s, b, cross_channel=cross)
        y1 = dmljax.mean_variance_normalization1(x, s, b, axes=axes)
        y2 = dmljax.mean_variance_normalization2(x, s, b, axes=axes[::-1])  # the order of Axes is no matter
        np.testing.assert_array_equal(np.asarray(y0), np.asarray(y1))
        np.testing.assert_array_equal(np.asarray(y0), np.asarray(y2))
        _assert_close(y0, s * _mvn64(x, axes) + b, rtol=1e-5, atol=1e-5)
    y = dmljax.mean_variance_normalization(x, s, b, normalize_variance=False, fused_activation=RELU)
    _assert_close(y, np.maximum(s * _mvn64(x, (2, 3), use_var=False) + b, 0), rtol=1e-5, atol=1e-5)


def test_scale_and_bias_are_optional_together_before_5_2():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    s = np.full((1, 1, 1, 1), 2.0, np.float32)
    plain = np.asarray(dmljax.mean_variance_normalization(x, feature_level="1.0"))
    _assert_close(plain, _mvn64(x, (2, 3)), rtol=1e-5)
    _assert_close(dmljax.mean_variance_normalization(x, s), 2 * plain)  # alone from DML_FEATURE_LEVEL_5_2
    _assert_close(dmljax.mean_variance_normalization1(x, bias=s, axes=(2, 3), feature_level="5.2"), plain + 2)
    for op, kw in ((dmljax.mean_variance_normalization, {}), (dmljax.mean_variance_normalization1, {"axes": (2, 3)})):
        with pytest.raises(dmljax.ValidationError) as info:
            op(x, s, feature_level="5.1", **kw)
        assert ("  BiasTensor (argument `bias`) is missing while ScaleTensor is given; before "
                "DML_FEATURE_LEVEL_5_2 ScaleTensor and BiasTensor are given together or not at all.\n"
                "    Tip: pass both (a Scale of ones, a Bias of zeros), or feature_level='5.2' or newer.") in str(info.value)
        with pytest.raises(dmljax.ValidationError, match=r"ScaleTensor \(argument `scale`\) is missing while BiasTensor"):
            op(x, bias=s, feature_level="5.1", **kw)


def test_mvn1_scale_channels_before_4_0_and_dimension_counts():
    x = np.ones((2, 3, 2, 2), np.float32)
    per_channel, one = np.ones((1, 3, 1, 1), np.float32), np.ones((1, 1, 1, 1), np.float32)
    dmljax.mean_variance_normalization1(x, per_channel, per_channel, axes=(2, 3), feature_level="2.1")
    dmljax.mean_variance_normalization1(x, one, one, axes=(2, 3), feature_level="4.0")
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.mean_variance_normalization1(x, one, per_channel, axes=(2, 3), feature_level="3.1")
    msg = str(info.value)
    assert ("  ScaleTensor (argument `scale`) has Sizes [1, 1, 1, 1] (dimension 1 is 1); dimension 1 equal to the "
            "InputTensor's, the others 1 or the InputTensor's (Sizes [2, 3, 2, 2]) before DML_FEATURE_LEVEL_4_0.\n"
            "    Tip: from DML_FEATURE_LEVEL_4_0 any dimension may be 1.") in msg, msg
    assert "BiasTensor" not in msg
    with pytest.raises(dmljax.ValidationError, match=r"ScaleTensor \(argument `scale`\) has 2 dimensions \(Sizes "
                       r"\[3, 1\]\); the same DimensionCount as InputTensor \(4\)"):
        dmljax.mean_variance_normalization1(x, np.ones((3, 1), np.float32), axes=(2, 3))
    with pytest.raises(dmljax.ValidationError, match=r"has 3 dimensions \(Sizes \[3, 2, 2\]\); supported: 4\.\n"
                       r"    Tip: 1 to 8 dimensions are supported from DML_FEATURE_LEVEL_3_1"):
        dmljax.mean_variance_normalization1(x[0], axes=(1, 2), feature_level="3.0")
    with pytest.raises(dmljax.ValidationError, match=r"has 3 dimensions \(Sizes \[3, 2, 2\]\); supported: 4\.\nThe call: "):  # no Tip line
        dmljax.mean_variance_normalization(x[0])


def test_mvn1_axes_rules():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(dmljax.ValidationError, match=r"Axes \(argument `axes`\) has \[2\] for a 2-dimensional "
                       r"InputTensor; values in the range \[0, 1\]"):
        dmljax.mean_variance_normalization1(x, axes=(0, 2))
    with pytest.raises(dmljax.ValidationError, match=r"Axes \(argument `axes`\) names axis 1 more than once"):
        dmljax.mean_variance_normalization1(x, axes=(1, 1))
    with pytest.raises(dmljax.ValidationError, match=r"Axes \(argument `axes`\) is empty"):
        dmljax.mean_variance_normalization2(x, axes=())


def test_mvn2_use_mean_and_use_variance():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 8)).astype(np.float32) + 2
    s = rng.normal(size=(1, 8)).astype(np.float32)
    b = rng.normal(size=(1, 8)).astype(np.float32)
    # UseMean FALSE: Mean 0, Variance = mean(x^2): a root mean square normalization
    rms = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + np.float32(1e-5))
    _assert_close(dmljax.mean_variance_normalization2(x, s, b, axes=(1,), use_mean=False), s * rms + b, rtol=1e-5, atol=1e-5)
    _assert_close(dmljax.mean_variance_normalization2(x, s, b, axes=(1,), use_variance=False),
                  s * _mvn64(x, (1,), use_var=False) + b, rtol=1e-5, atol=1e-5)
    # neither: Scale * Input + Bias, the multiply-add fused into an FMA or not (docs/semantics.md#fused-multiply-add)
    got = np.asarray(dmljax.mean_variance_normalization2(x, s, b, axes=(1,), use_mean=False, use_variance=False))
    fused = (x.astype(np.float64) * s + b).astype(np.float32)
    assert ((got == x * s + b) | (got == fused)).all()
    # The fused-activation page's hosts predate MEAN_VARIANCE_NORMALIZATION2 and leave it out
    with pytest.raises(dmljax.ValidationError, match="DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2 supports no fused"):
        dmljax.mean_variance_normalization2(x, axes=(1,), fused_activation=RELU)
    with pytest.raises(dmljax.ValidationError, match="it was introduced in DML_FEATURE_LEVEL_6_3"):
        dmljax.mean_variance_normalization2(x, axes=(1,), feature_level="6.2")


@pytest.mark.parametrize("use_mean,use_var", [(True, True), (False, True), (True, False)])
def test_mvn_gradients_are_the_formulas(use_mean, use_var):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    s = rng.normal(size=(4, 6)).astype(np.float32)  # not constant over the axes: dY * Scale is centered
    b = rng.normal(size=(1, 6)).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    got = jax.grad(lambda x, s, b: (dmljax.mean_variance_normalization2(
        x, s, b, axes=(1,), use_mean=use_mean, use_variance=use_var, epsilon=0.1) * dy).sum(), argnums=(0, 1, 2))(x, s, b)
    # the float64 reference's complex-step derivative of the formula
    want = mean_variance._grad(dy, x, s, b, axes=(1,), use_mean=use_mean, use_variance=use_var, epsilon=0.1)
    for g, w in zip(got, want):
        _assert_close(g, w, rtol=1e-5, atol=1e-5)
