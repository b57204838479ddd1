"""Grouped convolutions with few channels a group on the CPU, as sums over the window's taps
(dmljax/_src/ops/convolution/depthwise.py): against the float64 reference within CONVOLUTION's
budget (FLOAT32 and FLOAT16, strides, dilations, uneven padding, OutputPadding, CONVOLUTION mode,
channel multipliers, one to three spatial dimensions), against XLA's grouped convolution bit for
bit where the sums are exact integers, their gradients in reverse and forward mode, FLOAT32
denormals, which convolutions take them, and CONVOLUTION_INTEGER's depthwise sums."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import lax

import dmljax
from dmljax import DataType
from dmljax._src.ops.convolution import depthwise
from dmljax._src.ops.convolution.convolution import CONVOLUTION
from tests import catalog, tiers
from tests.compare import assert_matches
from tests.reference.convolution.convolution import _magnitude
from tests.reference.convolution.convolution import convolution as reference
from tests.reference.record import Attrs

# (input Sizes, filter Sizes, attributes): every one takes the taps
GEOMETRIES = [
    # depthwise 3 x 3, "same" padding
    ((2, 6, 7, 8), (6, 1, 3, 3), {"group_count": 6, "start_padding": (1, 1), "end_padding": (1, 1)}),
    # strided, dilated, uneven padding, flipped (CONVOLUTION), OutputPadding
    ((1, 4, 9, 10), (4, 1, 3, 2), {"group_count": 4, "strides": (2, 3), "dilations": (2, 1), "mode": "CONVOLUTION",
                                   "start_padding": (0, 2), "end_padding": (1, 0), "output_padding": (1, 1)}),
    # a channel multiplier (3 outputs a channel), and two channels a group with two outputs each
    ((1, 4, 6, 5), (12, 1, 2, 3), {"group_count": 4, "start_padding": (1, 0), "end_padding": (0, 1)}),
    ((2, 6, 5, 6), (6, 2, 3, 3), {"group_count": 3, "strides": (1, 2), "start_padding": (1, 1), "end_padding": (1, 1)}),
    # one spatial dimension, and three
    ((2, 3, 11), (3, 1, 4), {"group_count": 3, "strides": (2,), "dilations": (3,), "start_padding": (2,),
                             "end_padding": (1,)}),
    ((1, 4, 4, 5, 3), (8, 2, 2, 3, 2), {"group_count": 2, "start_padding": (1, 1, 0), "end_padding": (0, 1, 1)}),
]


def _inputs(x_shape, w_shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(dtype)
    return x, w


def _ints(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).integers(-4, 5, shape).astype(dtype)


def _check(got, x, w, attrs, data_type):
    budget = catalog.budget(CONVOLUTION, Attrs(attrs), data_type, sizes=x.shape, args=(x, w))
    want = reference(x, w, **attrs)[0]
    assert got.shape == want.shape
    assert_matches(np.asarray(got), [want], data_type, budget, "taps vs reference", magnitude=_magnitude(x, w, **attrs))


def _xla(x, w, attrs):
    """XLA's grouped convolution of the same call, FLOAT32 products (the path off the CPU)."""
    d = x.ndim - 2
    s, dl = attrs.get("strides", (1,) * d), attrs.get("dilations", (1,) * d)
    a, b = attrs.get("start_padding", (0,) * d), attrs.get("end_padding", (0,) * d)
    o = attrs.get("output_padding", (0,) * d)
    if attrs.get("mode") == "CONVOLUTION":
        w = lax.rev(w, tuple(range(2, w.ndim)))
    return lax.conv_general_dilated(x, w, s, [(p, q + e * t) for p, q, e, t in zip(a, b, o, s)], rhs_dilation=dl,
                                    feature_group_count=attrs["group_count"], precision="highest",
                                    preferred_element_type=np.float32)


def _lowered(f, *args, platform="cpu"):
    return jax.jit(f).trace(*args).lower(lowering_platforms=(platform,)).as_text()


@pytest.mark.parametrize("x_shape,w_shape,attrs,dtype", tiers.fast_sample(
    [(*g, t) for t in (np.float32, np.float16) for g in GEOMETRIES], keep=2, key="depthwise"))
def test_taps_match_the_reference_and_xla(x_shape, w_shape, attrs, dtype):
    assert depthwise.applies(x_shape, w_shape, attrs["group_count"])
    x, w = _inputs(x_shape, w_shape, dtype)
    conv = jax.jit(lambda a, b: dmljax.convolution(a, b, **attrs))
    _check(conv(x, w), x, w, attrs, DataType.from_dtype(dtype))
    assert "convolution" not in _lowered(conv, x, w)  # the taps on the CPU
    assert "convolution" in _lowered(conv, x, w, platform="cuda")  # XLA's convolution elsewhere
    # exact integers: the same sums in any order, so XLA's grouped convolution bit for bit
    xi, wi = _ints(x_shape, dtype), _ints(w_shape, dtype, seed=1)
    np.testing.assert_array_equal(np.asarray(conv(xi, wi)), np.asarray(_xla(xi, wi, attrs)).astype(dtype))


@pytest.mark.parametrize("x_shape,w_shape,attrs,dtype", tiers.fast_sample(
    [(*g, t) for t in (np.float32, np.float16) for g in GEOMETRIES], keep=1, key="depthwise-grad"))
def test_gradients_in_both_modes_equal_xlas(x_shape, w_shape, attrs, dtype):
    # exact integers, so the taps' derivatives (pads and sums of products) equal those of XLA's
    # grouped convolution bit for bit; the bias's too, through a fused activation
    x, w = _ints(x_shape, dtype), _ints(w_shape, dtype, seed=1)
    o = w_shape[0]
    bias = _ints((1, o) + (1,) * (len(x_shape) - 2), dtype, seed=2)
    y = jax.eval_shape(lambda a, b: dmljax.convolution(a, b, **attrs), x, w)
    dy = _ints(y.shape, dtype, seed=3)

    def ours(a, b, c):
        return jnp.vdot(dmljax.convolution(a, b, c, **attrs).astype(np.float32), dy.astype(np.float32))

    def xlas(a, b, c):
        return jnp.vdot(_xla(a.astype(np.float32), b.astype(np.float32), attrs) + c.astype(np.float32),
                        dy.astype(np.float32))

    # one argument alone (the others' tangents symbolic zeros) in the slow tier
    for argnums in ((0, 1, 2), 0, 1) if tiers.slow() else ((0, 1, 2),):
        got, want = (jax.tree_util.tree_leaves(jax.jit(jax.grad(f, argnums=argnums))(x, w, bias))
                     for f in (ours, xlas))
        for g, h in zip(got, want):
            assert g.dtype == dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(h).astype(dtype))
    tangents = (_ints(x_shape, dtype, seed=4), _ints(w_shape, dtype, seed=5), np.zeros_like(bias))
    _, t = jax.jit(lambda p, q: jax.jvp(lambda a, b: dmljax.convolution(a, b, **attrs), p, q))((x, w), tangents[:2])
    _, t_xla = jax.jvp(lambda a, b: _xla(a.astype(np.float32), b.astype(np.float32), attrs), (x, w), tangents[:2])
    np.testing.assert_array_equal(np.asarray(t), np.asarray(t_xla).astype(dtype))


def test_float32_denormals_read_and_written_as_zeros_and_float16_rounds_once():
    x = np.full((1, 4, 3, 3), 1e-39, np.float32)  # 1e-39 * 2^100 would be 1.3e-9
    w = np.full((4, 1, 3, 3), 2.0**100, np.float32)
    assert not np.asarray(dmljax.convolution(x, w, group_count=4)).any()
    x = np.full((1, 4, 3, 3), 1e-20, np.float32)  # nine products of 1e-39 sum to 9e-39: written as 0
    w = np.full((4, 1, 3, 3), 1e-19, np.float32)
    assert not np.asarray(dmljax.convolution(x, w, group_count=4)).any()
    # FLOAT16: summed in FLOAT32 and rounded once (FLOAT16 sums after 2048 would lose each 1)
    x = np.ones((1, 2, 1, 3), np.float16)
    x[:, :, :, 0] = 2048
    got = dmljax.convolution(x, np.ones((2, 1, 1, 3), np.float16), group_count=2)
    np.testing.assert_array_equal(np.asarray(got).ravel(), [2050, 2050])


@pytest.mark.parametrize("x_shape,w_shape,groups,takes", [
    ((1, 96, 28, 28), (96, 1, 3, 3), 96, True),  # depthwise
    ((1, 96, 28, 28), (384, 1, 3, 3), 96, True),  # a channel multiplier of 4
    ((1, 96, 28, 28), (96, 8, 3, 3), 12, True),  # CHANNELS a group
    ((1, 96, 28, 28), (96, 1, 13, 13), 96, True),  # TAPS products
    ((1, 96, 28, 28), (96, 16, 3, 3), 6, False),  # beyond CHANNELS
    ((1, 96, 28, 28), (96, 4, 7, 7), 24, False),  # beyond TAPS
    ((1, 64, 28, 28), (256, 8, 3, 3), 8, False),  # beyond OUTPUTS
    ((1, 3, 224, 224), (64, 3, 7, 7), 1, False),  # one group: XLA's dense convolution
])
def test_which_convolutions_take_the_taps(x_shape, w_shape, groups, takes):
    assert depthwise.applies(x_shape, w_shape, groups) is takes
    if not takes:
        x, w = (jax.ShapeDtypeStruct(s, np.float32) for s in (x_shape, w_shape))
        assert "convolution" in _lowered(lambda a, b: dmljax.convolution(a, b, group_count=groups), x, w)


def test_direction_backward_keeps_xlas_convolution():
    x, w = _ints((1, 4, 5, 5)), _ints((4, 1, 3, 3), seed=1)
    assert "convolution" in _lowered(lambda a, b: dmljax.convolution(a, b, direction="BACKWARD", group_count=4), x, w)


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=30, derandomize=True, deadline=None, database=None)
@given(st.data())
def test_taps_over_random_geometries(data):
    d = data.draw(st.integers(1, 3))
    groups = data.draw(st.integers(2, 4))
    cg, og = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    window = tuple(data.draw(st.integers(1, 3)) for _ in range(d))
    attrs = {"group_count": groups,
             "strides": tuple(data.draw(st.integers(1, 3)) for _ in range(d)),
             "dilations": tuple(data.draw(st.integers(1, 2)) for _ in range(d)),
             "start_padding": tuple(data.draw(st.integers(0, 2)) for _ in range(d)),
             "end_padding": tuple(data.draw(st.integers(0, 2)) for _ in range(d)),
             "output_padding": tuple(data.draw(st.integers(0, 1)) for _ in range(d)),
             "mode": data.draw(st.sampled_from(("CROSS_CORRELATION", "CONVOLUTION")))}
    spatial = tuple(dl * (k - 1) + 1 + data.draw(st.integers(0, 4)) for k, dl in zip(window, attrs["dilations"]))
    x_shape, w_shape = (data.draw(st.integers(1, 2)), groups * cg) + spatial, (groups * og, cg) + window
    dtype = data.draw(st.sampled_from((np.float32, np.float16)))
    x, w = _inputs(x_shape, w_shape, dtype, seed=data.draw(st.integers(0, 3)))
    _check(jax.jit(lambda a, b: dmljax.convolution(a, b, **attrs))(x, w), x, w, attrs, DataType.from_dtype(dtype))
