"""QUANTIZED_LINEAR_AVERAGE_POOLING by hand: every INT8/UINT8 value, and every pair of values,
through the exact reference; the padding with a zero point, windows wholly in the padding, halves
and saturation, per-channel scales and zero points, scales of 0, NaN and inf, the INT32 bound,
5-D inputs, and jit, grad and vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers
from tests.reference.pooling.quantized_linear_average_pooling import (
    quantized_linear_average_pooling as reference, requantize,
)

TYPES = (np.int8, np.uint8)
POOL = dmljax.quantized_linear_average_pooling


def _range(t):
    i = np.iinfo(t)
    return np.arange(int(i.min), int(i.max) + 1)


def _full(value, dtype=np.float32, shape=(1, 1, 1, 1)):
    return np.full(shape, value, dtype)


def _window(size, start=(0, 0), end=(0, 0), strides=(1, 1), dilations=(1, 1), **kw):
    return dict(window_size=size, start_padding=start, end_padding=end, strides=strides, dilations=dilations, **kw)


@pytest.mark.parametrize("ty", tiers.fast_sample(TYPES), ids=lambda t: t.__name__)
@pytest.mark.parametrize("tx", TYPES, ids=lambda t: t.__name__)
def test_every_value_and_every_pair(tx, ty):
    rng = np.random.default_rng(11)
    xz, yz = _full(rng.choice(_range(tx)), tx), _full(rng.choice(_range(ty)), ty)
    xs, ys = _full(0.37), _full(0.11)
    # every value alone: a window of one
    x = _range(tx).astype(tx).reshape(1, 1, 16, 16)
    got = np.asarray(POOL(x, xs, xz, ys, yz, **_window((1, 1))))
    np.testing.assert_array_equal(got, reference(x, xs, xz, ys, yz, **_window((1, 1)))[0])
    # every pair: rows of two values, a window of two (the divisor 2 makes halves)
    a, b = np.meshgrid(_range(tx), _range(tx), indexing="ij")
    pairs = np.stack([a.ravel(), b.ravel()], -1).astype(tx).reshape(1, 1, -1, 2)
    for scales in [(xs, ys), (_full(0.5), _full(1.0)), (_full(2.0**-7), _full(2.0**-9))]:
        got = np.asarray(POOL(pairs, scales[0], xz, scales[1], yz, **_window((1, 2))))
        sums = pairs.astype(np.int64).sum(-1, keepdims=True) - 2 * int(xz.reshape(()))
        np.testing.assert_array_equal(got, requantize(sums, 2, scales[0], scales[1], yz, ty))


def test_padding_adds_nothing_and_empty_windows():
    x = _full(200, np.uint8, (1, 2, 3, 3))
    zp = _full(200, np.uint8)
    for include in (False, True):
        got = np.asarray(POOL(x, _full(0.1), zp, _full(0.1), _full(7, np.uint8),
                              **_window((3, 3), (2, 2), (2, 2), include_padding=include)))
        np.testing.assert_array_equal(got, 7)
    # a window wholly in the padding: 0 / 0 without IncludePadding (NaN: Min), 0 with it
    x = _full(9, np.int8, (1, 1, 2, 2))
    kw = _window((1, 1), (1, 1), (0, 0))
    np.testing.assert_array_equal(np.asarray(POOL(x, _full(1.0), None, _full(1.0), **kw))[0, 0],
                                  [[-128, -128, -128], [-128, 9, 9], [-128, 9, 9]])
    np.testing.assert_array_equal(np.asarray(POOL(x, _full(1.0), None, _full(1.0), include_padding=True, **kw))[0, 0],
                                  [[0, 0, 0], [0, 9, 9], [0, 9, 9]])
    # a corner window holds one of four positions: the divisor 1, or 4 with IncludePadding
    x = _full(8, np.int8, (1, 1, 2, 2))
    kw = _window((2, 2), (1, 1), (1, 1))
    np.testing.assert_array_equal(np.asarray(POOL(x, _full(1.0), None, _full(1.0), **kw))[0, 0], 8)
    np.testing.assert_array_equal(np.asarray(POOL(x, _full(1.0), None, _full(1.0), include_padding=True, **kw))[0, 0],
                                  [[2, 4, 2], [4, 8, 4], [2, 4, 2]])


def test_halves_to_even_and_saturation():
    x = np.arange(-5, 6, dtype=np.int8).reshape(1, 1, 1, 11)
    # pairs (k, k + 1) average to k + 0.5: halves to even
    got = np.asarray(POOL(x, _full(1.0), None, _full(1.0), **_window((1, 2))))[0, 0, 0]
    np.testing.assert_array_equal(got, [-4, -4, -2, -2, 0, 0, 2, 2, 4, 4])
    got = np.asarray(POOL(x, _full(100.0), None, _full(1.0), _full(100, np.uint8), **_window((1, 1))))[0, 0, 0]
    np.testing.assert_array_equal(got, [0] * 5 + [100, 200, 255, 255, 255, 255])


def test_the_divisions_are_true_divisions():
    # A sum of 884 over 12 positions, divided by 12 and by 16.370369: 4 (3.5 and a little), where
    # multiplying by the reciprocals (XLA's rewrite of a division by a broadcast or a constant)
    # gives 5.
    x = np.array([74] * 8 + [73] * 4, np.uint8).reshape(1, 1, 3, 4)
    args = (x, _full(1.0), None, _full(16.370369))
    got = np.asarray(POOL(*args, **_window((3, 4))))
    assert got.reshape(()) == 4
    np.testing.assert_array_equal(got, reference(*args, **_window((3, 4)))[0])


def test_per_channel_scales_and_zero_points(rng):
    x = rng.integers(-128, 128, (2, 3, 6, 5)).astype(np.int8)
    xs = np.array([0.01, 0.2, 3.0], np.float32).reshape(1, 3, 1, 1)
    xz = np.array([-3, 0, 100], np.int8).reshape(1, 3, 1, 1)
    ys = np.array([0.05, 0.07, 0.4], np.float32).reshape(1, 3, 1, 1)
    yz = np.array([0, 128, 250], np.uint8).reshape(1, 3, 1, 1)
    kw = _window((3, 2), (1, 0), (1, 1), strides=(2, 1), dilations=(1, 2))
    want = reference(x, xs, xz, ys, yz, **kw)[0]
    np.testing.assert_array_equal(np.asarray(POOL(x, xs, xz, ys, yz, **kw)), want)
    # the same as 1-dimensional tensors, { ChannelCount } (the table's 1 to 5 dimensions)
    np.testing.assert_array_equal(np.asarray(POOL(x, xs.reshape(3), xz.reshape(3), ys.reshape(3), yz.reshape(3), **kw)),
                                  want)
    with pytest.raises(dmljax.ValidationError) as info:
        POOL(x, xs.reshape(1, 1, 3, 1), xz, ys, yz, **kw)
    assert ("InputScaleTensor (argument `input_scale`) has Sizes [1, 1, 3, 1]; every size 1 (per tensor, [1, 1, 1, "
            "1]) or [1, 3, 1, 1] (per channel: the count 3 in dimension 1).") in str(info.value)


def test_five_dimensions(rng):
    x = rng.integers(0, 256, (1, 2, 4, 3, 5)).astype(np.uint8)
    kw = dict(window_size=(2, 2, 3), start_padding=(1, 0, 1), end_padding=(0, 1, 1), strides=(1, 2, 2),
              dilations=(2, 1, 1), include_padding=True)
    args = (x, _full(0.3, shape=(1,) * 5), _full(77, np.uint8, (1,) * 5), _full(0.2, shape=(1,) * 5))
    np.testing.assert_array_equal(np.asarray(POOL(*args, output_data_type="INT8", **kw)),
                                  reference(*args, output_data_type="INT8", **kw)[0])


@pytest.mark.parametrize("bad", [0.0, np.nan, -np.inf, 1e-41])
def test_known_bad_scales_are_refused(bad):
    x = np.ones((1, 2, 2, 2), np.uint8)
    for i, name in ((1, "InputScaleTensor (argument `input_scale`)"), (3, "OutputScaleTensor (argument `output_scale`)")):
        args = [x, _full(1.0), None, np.array([1.0, 1.0], np.float32).reshape(1, 2, 1, 1)]
        args[i] = np.array([1.0, bad], np.float32).reshape(1, 2, 1, 1)
        with pytest.raises(dmljax.ValidationError, match=f"{name.replace('(', '.').replace(')', '.')} holds"):
            POOL(*args, **_window((1, 1)))


def test_traced_bad_scales_give_the_documented_values():
    x = np.array([[[[0, 1, 2]]]], np.uint8)
    zp = _full(1, np.uint8)

    @jax.jit
    def run(xs, ys):
        return POOL(x, xs, zp, ys, _full(5, np.int8), **_window((1, 1)))

    one = _full(1.0)
    np.testing.assert_array_equal(run(one * 0, one)[0, 0, 0], [5, 5, 5])  # averages of 0
    np.testing.assert_array_equal(run(one, one * 0)[0, 0, 0], [-128, -128, 127])  # -inf, NaN, inf
    np.testing.assert_array_equal(run(one * np.nan, one)[0, 0, 0], [-128, -128, -128])  # NaN: Min


def test_the_int32_bound():
    s = jax.ShapeDtypeStruct
    fits = jax.eval_shape(lambda x, a, b: POOL(x, a, None, b, **_window((2048, 4112))),
                          s((1, 1, 2048, 4112), np.uint8), s((1,), np.float32), s((1,), np.float32))
    assert fits.shape == (1, 1, 1, 1)  # 8,421,376 positions x 255 <= 2^31 - 1
    with pytest.raises(dmljax.ValidationError, match=r"WindowSize \(argument `window_size`\) makes each output a sum "
                                                     r"of 8421505 differences of up to 255; at most 8421504 positions"):
        jax.eval_shape(lambda x, a, b: POOL(x, a, None, b, **_window((5, 1684301))),
                       s((1, 1, 5, 1684301), np.uint8), s((1,), np.float32), s((1,), np.float32))


def test_jit_vmap_grad(rng):
    x = rng.integers(-128, 128, (2, 3, 5, 4)).astype(np.int8)
    args = [x, _full(0.1), _full(3, np.int8), _full(0.2), _full(-4, np.int8)]
    kw = _window((2, 2), (1, 0), (0, 1), include_padding=True)
    want = np.asarray(POOL(*args, **kw))
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda *a: POOL(*a, **kw))(*args)), want)
    out = jax.vmap(lambda v: POOL(v, *args[1:], **kw))(np.stack([x, x[::-1]]))
    np.testing.assert_array_equal(np.asarray(out[0]), want)
    np.testing.assert_array_equal(np.asarray(out[1]), reference(x[::-1], *args[1:], **kw)[0])
    grads = jax.grad(lambda *a: jnp.sum(POOL(*a, **kw).astype(jnp.float32)), argnums=tuple(range(5)),
                     allow_int=True)(*args)
    assert [g.dtype for g in grads] == [jax.dtypes.float0, np.float32, jax.dtypes.float0, np.float32, jax.dtypes.float0]
    assert not np.asarray(grads[1]).any() and not np.asarray(grads[3]).any()
