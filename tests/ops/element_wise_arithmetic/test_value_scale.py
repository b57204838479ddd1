"""Hand-written edges of VALUE_SCALE_2D (Output = Scale * Input + Bias[c] on NCHW): each channel
gets its own bias, ChannelCount 1 or 3 matching the Channel dimension and the Bias array (refused
at trace time otherwise, with the message), FLOAT16 computed in FLOAT32 and rounded once,
FLOAT32 denormals flushed, NaN and infinities, and the gradient Scale * dY. Expected values are
written out by hand. The generated cases (tests/test_catalog.py) cover the support table, the data
types, eager/jit and the reference gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

NAN, INF = np.nan, np.inf


def bits(x):
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32}[x.dtype.itemsize])


def _error(fn):
    with pytest.raises(dmljax.ValidationError) as info:
        fn()
    return str(info.value)


def test_each_channel_gets_its_own_bias():
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 1, 2)  # N = 2, C = 3, H = 1, W = 2
    out = np.asarray(dmljax.value_scale_2d(x, scale=2.0, bias=(100.0, 200.0, 300.0)))
    want = 2.0 * x + np.array([100.0, 200.0, 300.0], np.float32).reshape(1, 3, 1, 1)
    np.testing.assert_array_equal(out, want)
    assert out[1, 2, 0, 1] == 2 * 11 + 300
    counted = dmljax.value_scale_2d(x, scale=2.0, channel_count=np.uint32(3), bias=np.array([100, 200, 300.0]))
    np.testing.assert_array_equal(np.asarray(counted), want)
    one = np.asarray(dmljax.value_scale_2d(x[:, :1], scale=-1.0, channel_count=1, bias=[0.5]))
    np.testing.assert_array_equal(one, 0.5 - x[:, :1])


def test_channel_count_and_bias_are_checked_at_trace_time():
    x = jax.ShapeDtypeStruct((1, 3, 4, 4), np.float32)

    def call(**kw):
        return _error(lambda: jax.eval_shape(lambda v: dmljax.value_scale_2d(v, scale=1.0, **kw), x))

    msg = call(channel_count=2, bias=(0.0, 0.0))
    assert msg.startswith("value_scale_2d (DML_OPERATOR_VALUE_SCALE_2D) at DML_FEATURE_LEVEL_"), msg
    assert "  ChannelCount (argument `channel_count`) is 2; must be either 1 or 3." in msg, msg
    msg = call(channel_count=3, bias=(0.0, 0.0))
    assert "  Bias (argument `bias`) has 2 entries; ChannelCount is 3, the size of the Bias array." in msg, msg
    msg = call(bias=(0.0, 0.0, 0.0, 0.0))
    assert ("  Bias (argument `bias`) has 4 entries; ChannelCount (here the Bias array's length) must be "
            "either 1 or 3.") in msg, msg
    msg = call(bias=(0.0,))
    assert ("  InputTensor (argument `input`) has 3 channels (Sizes [1, 3, 4, 4], { BatchCount, ChannelCount, "
            "Height, Width }); ChannelCount is 1; it must match the size of the Channel dimension.") in msg, msg
    msg = call(bias="abc")
    assert "Bias (argument `bias`) is 'abc' (str); expected a sequence of FLOAT." in msg, msg
    with pytest.raises(TypeError, match="value_scale_2d: missing a required argument: 'scale'"):
        dmljax.value_scale_2d(np.zeros((1, 3, 2, 2), np.float32), bias=(0.0,) * 3)


def test_float32_specials_and_denormals():
    x = np.array([NAN, INF, -INF, 1e-40, -1e-40, 1e-30, -1e-30, 3e38], np.float32).reshape(1, 1, 2, 4)
    # Denormal inputs read as zero, and the denormal results +-1e-40 are flushed to zero (the
    # sign of a zero is not checked: XLA folds "+ 0.0" away, so -0 * s + 0 may stay -0);
    # 3e38 * 1e-10 is an ordinary number.
    out = np.asarray(jax.jit(lambda v: dmljax.value_scale_2d(v, scale=1e-10, bias=(0.0,)))(x)).ravel()
    assert np.isnan(out[0]) and out[1] == INF and out[2] == -INF
    np.testing.assert_array_equal(out[3:7], np.zeros(4, np.float32))
    assert out[7] == np.float32(np.float32(3e38) * np.float32(1e-10))
    # An infinite input times a zero Scale is NaN (IEEE), plus any Bias.
    z = np.asarray(dmljax.value_scale_2d(np.array([INF, 1.0], np.float32).reshape(1, 1, 1, 2), scale=0.0, bias=(1.0,)))
    assert np.isnan(z.ravel()[0]) and z.ravel()[1] == 1.0


def test_float16_is_computed_in_float32_and_rounded_once():
    # 1 + (2^-11 + 2^-22): in FLOAT32 it lies just above the FLOAT16 midpoint 1 + 2^-11, so it
    # rounds up to 1 + 2^-10. In FLOAT16 arithmetic the Bias itself rounds to 2^-11 first, and
    # the sum is the midpoint, which rounds to even: 1.
    x = np.ones((1, 1, 1, 1), np.float16)
    bias = (2.0**-11 + 2.0**-22,)
    assert float(np.asarray(dmljax.value_scale_2d(x, scale=1.0, bias=bias)).ravel()[0]) == 1 + 2.0**-10
    half = dmljax.value_scale_2d(x, scale=1.0, bias=bias, allow_half_precision_computation=True)
    assert float(np.asarray(half).ravel()[0]) == 1.0


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gradient_is_scale_times_dy(dtype):
    x = np.linspace(-3, 3, 6, dtype=dtype).reshape(1, 3, 1, 2)
    dy = np.array([1.0, -2.0, 0.5, 0.0, 4.0, -0.25], dtype).reshape(x.shape)
    _, vjp = jax.vjp(lambda v: dmljax.value_scale_2d(v, scale=-1.5, bias=(1.0, 2.0, 3.0)), x)
    (dx,) = vjp(dy)
    assert dx.dtype == dtype
    np.testing.assert_array_equal(np.asarray(dx), (np.float32(-1.5) * dy.astype(np.float32)).astype(dtype))
    g = jax.grad(lambda v: jnp.sum(dmljax.value_scale_2d(v, scale=0.25, bias=(9.0, 9.0, 9.0))))(x)
    np.testing.assert_array_equal(np.asarray(g), np.full(x.shape, 0.25, dtype))
