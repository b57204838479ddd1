"""CONVOLUTION's FLOAT32 kernel (dmljax/_src/kernels/convolution.py): run here by Pallas's interpreter
against the float64 reference within the record's budget, with DirectML's flushes bit for bit;
which convolutions take it; and the derivatives of the path that holds it, against autodiff of the
XLA formula (on the CPU the path computes that formula). tests/gpu/kernels.py runs the
compiled kernel on a GPU against the same reference."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import dmljax
from dmljax import DataType
from dmljax._src.enums import ConvolutionDirection, ConvolutionMode
from dmljax._src.kernel_seam import Route
from dmljax._src.kernels import convolution as conv_kernel
from dmljax._src.ops.convolution import convolution as conv_op
from dmljax._src.ops.convolution.convolution import CONVOLUTION
from tests import catalog, tiers
from tests.compare import assert_matches
from tests.reference.convolution.convolution import _magnitude
from tests.reference.convolution.convolution import convolution as reference
from tests.reference.record import Attrs

# (input Sizes, filter Sizes, attributes): geometries the kernel takes
GEOMETRIES = [
    ((2, 16, 5, 7), (32, 16, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1)}),
    # dilated, no padding above, the output three rows shorter than the input
    ((1, 32, 9, 10), (16, 32, 3, 3), {"dilations": (2, 2), "start_padding": (0, 2), "end_padding": (1, 2)}),
    # a row window, flipped (CONVOLUTION), padded unevenly: 80 positions, the second block part-filled
    ((1, 16, 4, 20), (16, 16, 1, 3), {"mode": "CONVOLUTION", "start_padding": (0, 0), "end_padding": (0, 2)}),
    # strided, unpadded and padded unevenly: the output's rows narrower than the input's
    ((2, 16, 9, 11), (16, 16, 3, 3), {"strides": (2, 2), "start_padding": (0, 1), "end_padding": (1, 0)}),
    ((1, 32, 7, 12), (16, 32, 3, 2), {"strides": (1, 2), "dilations": (2, 1)}),
]


def _inputs(x_shape, w_shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(np.float32)
    x.flat[:6] = [1e-39, -1e-39, 0.0, -0.0, 3e4, -2.5]  # denormals read as zeros
    w.flat[:2] = [-1e-40, 1e-38]
    return x, w


def check_against_reference(got, x, w, attrs):
    """``got`` (FLOAT32) within CONVOLUTION's budget of the float64 reference, for these sizes."""
    a = Attrs(attrs)
    budget = catalog.budget(CONVOLUTION, a, DataType.FLOAT32, sizes=x.shape, args=(x, w))
    want = reference(x, w, **attrs)[0]
    assert_matches(np.asarray(got), [want], DataType.FLOAT32, budget, "kernel vs reference",
                   magnitude=_magnitude(x, w, **attrs))


def _kernel_args(attrs):
    return (attrs.get("strides", (1, 1)), attrs.get("dilations", (1, 1)), attrs.get("start_padding", (0, 0)),
            attrs.get("end_padding", (0, 0)))


@pytest.mark.parametrize("x_shape,w_shape,attrs", tiers.fast_sample(GEOMETRIES, keep=2, key="taps"))
def test_kernel_in_the_interpreter_matches_the_reference(x_shape, w_shape, attrs):
    x, w = _inputs(x_shape, w_shape)
    assert conv_kernel.CONVOLUTION_TAPS.applies(x_shape, w_shape, np.float32, True, 1, *_kernel_args(attrs), (0, 0))
    wk = w[:, :, ::-1, ::-1] if attrs.get("mode") == "CONVOLUTION" else w  # the caller flips
    got = conv_kernel.convolve_taps(jnp.asarray(x), jnp.asarray(np.ascontiguousarray(wk)), *_kernel_args(attrs),
                                     interpret=True)
    assert got.shape == reference(x, w, **attrs)[0].shape
    check_against_reference(got, x, w, attrs)


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
@pytest.mark.fuzz  # (the slow tier draws more geometries)
@settings(max_examples=tiers.by_tier(4, 24), derandomize=True, deadline=None, database=None)
@given(st.data())
def test_kernel_in_the_interpreter_over_random_geometries(data):
    # the kernel's index arithmetic (each position's window from its own first row and column,
    # positions counted over the images, masks at the padding and past the end) over random
    # strides, dilations, paddings and windows the kernel takes, against the float64 reference
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    strides = tuple(data.draw(st.integers(1, 2)) for _ in range(2))
    dilations = tuple(data.draw(st.integers(1, 2)) for _ in range(2))
    start = tuple(data.draw(st.integers(0, 2)) for _ in range(2))
    end = tuple(data.draw(st.integers(0, 2)) for _ in range(2))
    h, w, n = data.draw(st.integers(1, 7)), data.draw(st.integers(1, 7)), data.draw(st.integers(1, 2))
    x_shape, w_shape = (n, 16, h, w), (data.draw(st.sampled_from((16, 32))), 16, kh, kw)
    assume(conv_kernel.CONVOLUTION_TAPS.applies(x_shape, w_shape, np.float32, True, 1, strides, dilations, start, end, (0, 0)))
    attrs = {"strides": strides, "dilations": dilations, "start_padding": start, "end_padding": end}
    x, wt = _inputs(x_shape, w_shape, seed=data.draw(st.integers(0, 3)))
    got = conv_kernel.convolve_taps(jnp.asarray(x), jnp.asarray(wt), strides, dilations, start, end, interpret=True)
    assert got.shape == reference(x, wt, **attrs)[0].shape
    check_against_reference(got, x, wt, attrs)


def test_kernel_flushes_its_inputs_and_sums():
    # denormal inputs read as zeros (1e-39 * 2^100 would be 1.3e-9), and sums below FLOAT32's
    # smallest normal written as zeros (1e-20 * -1e-19 summed up to nine times: -9e-39; the zero's
    # sign is the sum's order's: products flushed on the CPU add up to +0, docs/semantics.md#accumulating-operators). XLA's
    # CPU backend, which runs the interpreter, reads and writes denormals as zeros by itself, so
    # only tests/gpu/kernels.py on a GPU can fail on a kernel without its flushes.
    x = np.full((1, 16, 3, 4), 1e-39, np.float32)
    w = np.full((16, 16, 3, 3), 2.0**100, np.float32)
    got = np.asarray(conv_kernel.convolve_taps(jnp.asarray(x), jnp.asarray(w), (1, 1), (1, 1), (1, 1), (1, 1),
                                                interpret=True))
    assert not got.any()
    x = np.full((1, 16, 3, 4), 1e-20, np.float32)
    w = np.zeros((16, 16, 3, 3), np.float32)
    w[:, 0] = -1e-19
    got = np.asarray(conv_kernel.convolve_taps(jnp.asarray(x), jnp.asarray(w), (1, 1), (1, 1), (1, 1), (1, 1),
                                                interpret=True))
    assert not got.any() and not np.isnan(got).any()


@pytest.mark.parametrize("x_shape,w_shape,args,takes", [
    ((2, 64, 56, 56), (64, 64, 3, 3), ((1, 1), (1, 1), (1, 1)), True),
    ((2, 64, 56, 56), (64, 64, 3, 3), ((1, 1), (0, 0), (0, 0)), True),  # the output's rows narrower
    ((2, 64, 56, 56), (64, 64, 3, 3), ((1, 1), (0, 1), (2, 1)), True),  # rows may change
    ((2, 256, 14, 14), (256, 256, 3, 3), ((1, 1), (1, 1), (1, 1)), False),  # channels beyond CHANNELS
    ((2, 3, 32, 32), (16, 3, 3, 3), ((1, 1), (1, 1), (1, 1)), False),
    ((2, 16, 8, 8), (24, 16, 3, 3), ((1, 1), (1, 1), (1, 1)), False),
    ((2, 16, 8, 8), (16, 16, 1, 1), ((1, 1), (0, 0), (0, 0)), False),  # 1 x 1: a product over the channels
    ((2, 64, 56, 56), (64, 64, 5, 5), ((1, 1), (2, 2), (2, 2)), False),  # cuDNN's 5 x 5 is faster
    ((2, 64, 56, 56), (64, 64, 2, 3), ((1, 1), (0, 1), (1, 1)), True),
    ((2, 16, 8), (16, 16, 3), ((1,), (1,), (1,)), False),  # one spatial dimension
])
def test_which_convolutions_take_the_kernel(x_shape, w_shape, args, takes):
    assert conv_kernel.CONVOLUTION_TAPS.applies(x_shape, w_shape, np.float32, True, 1, (1,) * (len(x_shape) - 2), *args,
                                   (0,) * (len(x_shape) - 2)) is takes
    x, w, two = (2, 16, 8, 8), (16, 16, 3, 3), ((1, 1), (1, 1), (1, 1))
    assert conv_kernel.CONVOLUTION_TAPS.applies(x, w, np.float32, True, 1, (2, 1), *two, (0, 0))
    assert not conv_kernel.CONVOLUTION_TAPS.applies(x, w, np.float32, True, 1, (3, 1), *two, (0, 0))  # beyond MAX_STRIDE
    assert not conv_kernel.CONVOLUTION_TAPS.applies(x, w, np.float16, True, 1, (1, 1), *two, (0, 0))
    assert not conv_kernel.CONVOLUTION_TAPS.applies(x, w, np.float32, False, 1, (1, 1), *two, (0, 0))
    assert not conv_kernel.CONVOLUTION_TAPS.applies(x, w, np.float32, True, 2, (1, 1), *two, (0, 0))
    assert not conv_kernel.CONVOLUTION_TAPS.applies(x, w, np.float32, True, 1, (1, 1), *two, (0, 1))
    assert not conv_kernel.CONVOLUTION_TAPS.applies((2, 16, 2, 8), w, np.float32, True, 1, (1, 1), (1, 1), (0, 0), (0, 0), (0, 0))


def geometry_of(attrs):
    """convolution.py's (direction, mode, groups, geometry) of a FORWARD call with ``attrs``."""
    g = conv_op.geometry(2, {"Strides": attrs.get("strides"), "Dilations": attrs.get("dilations"),
                             "StartPadding": attrs.get("start_padding"), "EndPadding": attrs.get("end_padding")})
    return ConvolutionDirection.FORWARD, ConvolutionMode[attrs.get("mode", "CROSS_CORRELATION")], 1, g


xla_formula = conv_op.written_float32
TAPS = Route(conv_kernel.CONVOLUTION_TAPS)  # the route to the kernel that choose() gives on a GPU
"""The FLOAT32 convolution written to FLOAT32 by XLA's convolution (what the path holding the
kernel computes on other backends)."""


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_the_kernels_path_differentiates_as_the_xla_formula():
    x_shape, w_shape, attrs = GEOMETRIES[1]
    x, w = _inputs(x_shape, w_shape)
    geometry_ = geometry_of(attrs)
    rng = np.random.default_rng(1)
    y = jax.jit(lambda a, b: conv_op._taps(a, b, geometry_, TAPS))(x, w)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(xla_formula(x, w, geometry_)))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(dmljax.convolution(x, w, **attrs)))
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw = (rng.standard_normal(s).astype(np.float32) for s in (x_shape, w_shape))
    for argnums in ((0, 1), 0, 1):  # one argument alone: the other's tangent is a symbolic zero
        got = jax.grad(lambda a, b: jnp.vdot(conv_op._taps(a, b, geometry_, TAPS), dy), argnums=argnums)(x, w)
        want = jax.grad(lambda a, b: jnp.vdot(xla_formula(a, b, geometry_), dy), argnums=argnums)(x, w)
        for g, h in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-6, atol=1e-6)
    # forward mode (a custom_vjp would refuse it)
    _, t = jax.jvp(lambda a, b: conv_op._taps(a, b, geometry_, TAPS), (x, w), (dx, dw))
    _, t_xla = jax.jvp(lambda a, b: xla_formula(a, b, geometry_), (x, w), (dx, dw))
    np.testing.assert_allclose(np.asarray(t), np.asarray(t_xla), rtol=1e-5, atol=1e-5)
    # and batched
    xs = np.stack([x, x * 2])
    got = jax.vmap(lambda a: conv_op._taps(a, w, geometry_, TAPS))(xs)
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(xla_formula(xs[1], w, geometry_)))


def test_float32_bias_is_added_to_the_written_convolution():
    # The page: "perform the convolution into the output tensor; ... add the bias tensor to the
    # output tensor". In FLOAT32 the convolution is written first, its denormals as zeros: a sum of
    # 9e-39 (1e-20 * 1e-19 nine times) is 0 when the bias 1.2e-38 is added, which it would otherwise
    # lift to 2.1e-38. Both paths: the kernel's (16 channels, 3 x 3) and the convolution's (one channel).
    for c in (16, 1):
        x = np.full((1, c, 3, 3), 1e-20, np.float32)
        w = np.zeros((c, c, 3, 3), np.float32)
        w[:, 0] = 1e-19
        bias = np.full((1, c, 1, 1), 1.2e-38, np.float32)
        got = np.asarray(dmljax.convolution(x, w, bias, start_padding=(1, 1), end_padding=(1, 1)))
        assert got[0, 0, 1, 1] == np.float32(1.2e-38), got[0, 0, 1, 1]
