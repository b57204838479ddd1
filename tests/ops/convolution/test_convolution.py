"""CONVOLUTION by hand: the DxDispatch example models' values, the page's Mode interactions table,
BACKWARD as the transpose of FORWARD (an adjoint identity, and the input gradient of FORWARD),
depthwise groups, the bias and a fused activation, FLOAT16 accumulated in FLOAT32, FLOAT32
products that TF32 would round, and the shape rules' messages."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers

RELU = dmljax.FusedActivation("ACTIVATION_RELU")


def _ints(rng, shape):
    return rng.integers(-3, 4, shape).astype(np.float32)


def test_the_example_models():
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)  # dml_convolution_2d.json
    np.testing.assert_array_equal(np.asarray(dmljax.convolution(x, np.full((1, 1, 2, 2), 0.5, np.float32))),
                                  [[[[6, 8], [12, 14]]]])
    cube = np.ones((1, 1, 3, 3, 3), np.float32)  # dml_convolution_3d.json: eight 0.5s over ones
    np.testing.assert_array_equal(np.asarray(dmljax.convolution(cube, np.full((1, 1, 2, 2, 2), 0.5, np.float32))),
                                  np.full((1, 1, 2, 2, 2), 4, np.float32))


def test_mode_interactions_table():
    """CROSS_CORRELATION FORWARD: the filter as it is; CONVOLUTION FORWARD: flipped; BACKWARD:
    the transpose, whose kernel is flipped in CROSS_CORRELATION and not in CONVOLUTION."""
    rng = np.random.default_rng(0)
    x, w = _ints(rng, (1, 2, 5, 4)), _ints(rng, (3, 2, 3, 2))
    cc = np.asarray(dmljax.convolution(x, w))
    # by hand: y[o, i, j] = sum_c,a,b x[c, i + a, j + b] w[o, c, a, b]
    want = np.zeros((1, 3, 3, 3), np.float32)
    for i in range(3):
        for j in range(3):
            want[0, :, i, j] = np.einsum("cab,ocab->o", x[0, :, i:i + 3, j:j + 2], w)
    np.testing.assert_array_equal(cc, want)
    flipped = w[:, :, ::-1, ::-1]
    np.testing.assert_array_equal(np.asarray(dmljax.convolution(x, w, mode="CONVOLUTION")),
                                  np.asarray(dmljax.convolution(x, flipped)))
    y = _ints(rng, (1, 3, 3, 3))
    np.testing.assert_array_equal(np.asarray(dmljax.convolution(y, w, mode="CONVOLUTION", direction="BACKWARD")),
                                  np.asarray(dmljax.convolution(y, flipped, direction="BACKWARD")))
    # BACKWARD CROSS_CORRELATION is a full correlation with the flipped, channel-transposed filter
    full = np.asarray(dmljax.convolution(y, np.swapaxes(flipped, 0, 1), start_padding=(2, 1), end_padding=(2, 1)))
    np.testing.assert_array_equal(np.asarray(dmljax.convolution(y, w, direction="BACKWARD")), full)


@pytest.mark.parametrize("geometry", tiers.fast_sample([
    dict(strides=(2, 1), dilations=(1, 2), start_padding=(1, 0), end_padding=(0, 2), group_count=1),
    dict(strides=(3, 2), dilations=(2, 1), start_padding=(2, 1), end_padding=(1, 1), group_count=2),
    dict(strides=(1, 1), dilations=(1, 1), start_padding=(0, 0), end_padding=(0, 0), group_count=4),  # depthwise
], keep=2, key="transpose"))
def test_backward_is_the_transpose_of_forward(geometry):
    rng = np.random.default_rng(1)
    g = geometry["group_count"]
    x, w = _ints(rng, (2, 4, 9, 8)), _ints(rng, (4, 4 // g, 3, 2))
    y = dmljax.convolution(x, w, **geometry)
    # OutputPadding gives BACKWARD the FORWARD input's size where the strides left a remainder
    back_size = np.asarray(jax.eval_shape(
        lambda v: dmljax.convolution(v, w, direction="BACKWARD", **geometry), y).shape[2:])
    pad = tuple(int(v) for v in np.array(x.shape[2:]) - back_size)
    dy = _ints(rng, y.shape)
    dx = dmljax.convolution(dy, w, direction="BACKWARD", output_padding=pad, **geometry)
    assert dx.shape == x.shape
    # <forward(x), dy> = <x, backward(dy)>, in exact integer arithmetic
    assert float(jnp.vdot(y, dy)) == float(jnp.vdot(x, dx))
    # and the input gradient of FORWARD is BACKWARD (the page: both directions serve training)
    grad = jax.grad(lambda v: jnp.vdot(dmljax.convolution(v, w, **geometry), dy))(x)
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(dx))


def test_backward_matches_a_transposed_convolution():
    rng = np.random.default_rng(2)
    x, w = _ints(rng, (1, 3, 4, 5)), _ints(rng, (3, 2, 3, 3))  # BACKWARD: {C_in, C_out, window}
    got = dmljax.convolution(x, w, direction="BACKWARD", strides=(2, 2), start_padding=(1, 1), end_padding=(1, 1),
                             output_padding=(1, 1))
    # ONNX ConvTranspose: out = (in - 1) * s + k - pads + output_padding; jax's conv_transpose
    # with transpose_kernel=True is the gradient of a forward convolution with kernel w
    want = jax.lax.conv_transpose(x, w, (2, 2), [(1, 2), (1, 2)], dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                  transpose_kernel=True, precision="highest")
    assert got.shape == (1, 2, 8, 10)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_depthwise_bias_and_fused_activation():
    rng = np.random.default_rng(3)
    x, w = _ints(rng, (2, 3, 6)), _ints(rng, (3, 1, 3))  # 1-D, from DML_FEATURE_LEVEL_4_0
    bias = np.array([-1, 0, 2], np.float32).reshape(1, 3, 1)
    got = np.asarray(dmljax.convolution(x, w, bias, group_count=3, fused_activation=RELU))
    want = np.stack([np.stack([np.correlate(x[n, c], w[c, 0], "valid") + bias[0, c, 0] for c in range(3)])
                     for n in range(2)])
    np.testing.assert_array_equal(got, np.maximum(want, 0))
    with pytest.raises(dmljax.ValidationError, match=r"InputTensor \(argument `input`\) has 3 dimensions"):
        dmljax.convolution(x, w, group_count=3, feature_level="3.1")


def test_output_padding_forward_reads_zeros_past_the_end():
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 5)
    w = np.ones((1, 1, 2), np.float32)
    got = np.asarray(dmljax.convolution(x, w, strides=(2,), output_padding=(1,)))[0, 0]
    np.testing.assert_array_equal(got, [3, 7, 5])  # windows [1 2], [3 4], then [5 (0)]


def test_float16_accumulates_in_float32_and_float32_is_not_tf32():
    x = np.array([2048, 1, 1], np.float16).reshape(1, 3, 1)
    w = np.ones((1, 3, 1), np.float16)
    assert float(dmljax.convolution(x, w)[0, 0, 0]) == 2050.0  # FLOAT16 sums after 2048 would lose each 1
    assert float(dmljax.convolution(x, w, allow_half_precision_computation=True)[0, 0, 0]) in (2048.0, 2050.0)
    v = np.float32(1 + 2 ** -20)  # TF32 keeps 10 mantissa bits: v * v would round to 1
    got = dmljax.convolution(np.full((1, 1, 1, 1), v), np.full((1, 1, 1, 1), v))
    assert float(got[0, 0, 0, 0]) == float(v * v)


def test_gradients_of_filter_and_bias():
    rng = np.random.default_rng(4)
    x, w, b = _ints(rng, (2, 2, 5, 5)), _ints(rng, (3, 2, 2, 2)), _ints(rng, (1, 3, 1, 1))
    dy = _ints(rng, (2, 3, 4, 4))
    dw, db = jax.grad(lambda w, b: jnp.vdot(dmljax.convolution(x, w, b), dy), argnums=(0, 1))(w, b)
    want = np.zeros_like(w)
    for a in range(2):
        for c in range(2):
            want[:, :, a, c] = np.einsum("nopq,nipq->oi", dy, x[:, :, a:a + 4, c:c + 4])
    np.testing.assert_array_equal(np.asarray(dw), want)
    np.testing.assert_array_equal(np.asarray(db), dy.sum(axis=(0, 2, 3), keepdims=True))


def _refused(match, *args, **kwargs):
    with pytest.raises(dmljax.ValidationError, match=match):
        dmljax.convolution(*args, **kwargs)


def test_shape_rules():
    x = np.zeros((1, 4, 5, 5), np.float32)
    w = np.zeros((6, 4, 3, 3), np.float32)
    _refused(r"FilterTensor \(argument `filter`\) has Sizes \[6, 2, 3, 3\]: FilterChannelCount 2; "
             r"InputChannelCount / GroupCount = 4 / 1 = 4", x, w[:, :2])
    _refused(r"GroupCount \(argument `group_count`\) is 3; a divisor of InputChannelCount 4", x, w, group_count=3)
    _refused(r"is 4; a divisor of FilterBatchCount \(the OutputChannelCount\) 6", x, w[:, :1], group_count=4)
    _refused(r"BiasTensor \(argument `bias`\) has Sizes \[1, 4, 1, 1\]; \{1, OutputChannelCount, 1...\} = "
             r"\[1, 6, 1, 1\]", x, w, np.zeros((1, 4, 1, 1), np.float32))
    _refused(r"Strides \(argument `strides`\) has 1 entries; DimensionCount \(2\) entries", x, w, strides=(1,))
    _refused(r"Strides\[1\] \(argument `strides`\) is 0; at least 1", x, w, strides=(1, 0))
    _refused(r"FilterTensor.Sizes\[3\] \(argument `filter`\) is 3 with Dilations 3: the window spans 7 elements; "
             r"at most the padded size of spatial dimension 1, 5 \+ StartPadding 0 \+ EndPadding 0", x, w,
             dilations=(1, 3))
    _refused(r"FilterBatchCount 6; the InputTensor's channels, 4", x, w, direction="BACKWARD")
    _refused(r"with the same DimensionCount", x, w[0])
    _refused(r"have DataTypes FLOAT32, FLOAT16", x, w.astype(np.float16))
    assert dmljax.convolution(x, w, start_padding=(1, 1), end_padding=(1, 1)).shape == (1, 6, 5, 5)
    assert dmljax.convolution(x, w[:4, :1], group_count=4, strides=(2, 2)).shape == (1, 4, 2, 2)
    assert dmljax.convolution(x, np.zeros((4, 2, 3, 3), np.float32), direction="BACKWARD", group_count=2,
                              strides=(2, 2)).shape == (1, 4, 11, 11)


@pytest.mark.parametrize("spatial", tiers.fast_sample([pytest.param((4, 3)), pytest.param((5,)), pytest.param((2, 3, 2))]))
def test_pointwise_float32_is_a_product_over_channels(spatial):
    # A 1 x 1 FLOAT32 forward convolution (one group, unit strides, no padding) is computed as a
    # dot_general over the channels (faster than cuDNN's true FLOAT32 convolution on the H100):
    # the same values (integers here: exact in any order), bias and fused activation after it,
    # FLOAT32 denormal inputs read as zeros, the same gradients, and a dot (no convolution) in
    # the program; strides, padding, groups or FLOAT16 keep the convolution.
    rng = np.random.default_rng(9)
    x, w, b = _ints(rng, (2, 6) + spatial), _ints(rng, (4, 6) + (1,) * len(spatial)), _ints(rng, (1, 4) + (1,) * len(spatial))
    want = np.einsum("nc...,oc->no...", x, w.reshape(4, 6)) + b
    got = dmljax.convolution(x, w, b, fused_activation=dmljax.FusedActivation("ACTIVATION_RELU"))
    np.testing.assert_array_equal(np.asarray(got), np.maximum(want, 0))
    tiny = np.zeros((1, 2) + spatial, np.float32)
    tiny[(0, 0) + (0,) * len(spatial)] = 1e-40
    big = np.full((1, 2) + (1,) * len(spatial), 2.0 ** 100, np.float32)
    assert not np.asarray(dmljax.convolution(tiny, big)).any()  # 1e-40 * 2^100 would be 1.3e-10
    dy = _ints(rng, (2, 4) + spatial)
    dx, dw = jax.grad(lambda a, c: jnp.vdot(dmljax.convolution(a, c), dy), argnums=(0, 1))(x, w)
    np.testing.assert_array_equal(np.asarray(dx), np.einsum("no...,oc->nc...", dy, w.reshape(4, 6)))
    np.testing.assert_array_equal(np.asarray(dw).reshape(4, 6), np.einsum("nos,ncs->oc", dy.reshape(2, 4, -1),
                                                                           x.reshape(2, 6, -1)))

    def text(f, *a):
        return jax.jit(f).trace(*a).lower(lowering_platforms=("cuda",)).as_text()
    assert "stablehlo.dot_general" in text(dmljax.convolution, x, w)
    assert "stablehlo.convolution" not in text(dmljax.convolution, x, w)
    n = len(spatial)
    for kw in ({"strides": (2,) * n}, {"start_padding": (1,) * n, "end_padding": (1,) * n}):
        assert "stablehlo.convolution" in text(lambda a, c, kw=kw: dmljax.convolution(a, c, **kw), x, w)
    assert "stablehlo.convolution" in text(dmljax.convolution, x.astype(np.float16), w.astype(np.float16))


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA's CPU compiler's layout of convolutions")
@pytest.mark.parametrize("wrt", ["input", "filter"])
def test_cpu_gradients_are_convolutions_in_the_layout_of_xla_cpu_library(wrt):
    # The gradients' convolutions, under jit, in the form XLA's CPU compiler hands to its library
    # ({N, spatial..., C} by {spatial..., C, O}): a gradient taken through the platform's branch
    # kept them in another layout, which XLA ran as plain loops (a 3 x 3 filter gradient, 256
    # channels at 14 x 14, batch 4: 53 ms against lax's 2.9). 40 channels: no kernel takes the call.
    x = jnp.ones((2, 40, 9, 9), jnp.float32)
    w = jnp.ones((40, 40, 3, 3), jnp.float32)

    def loss(a, b):
        return dmljax.convolution(a, b, start_padding=(1, 1), end_padding=(1, 1)).sum()

    grad = jax.grad(loss, argnums=0 if wrt == "input" else 1)
    text = jax.jit(grad).lower(x, w).compile().as_text()
    layouts = [line.split("dim_labels=")[1].split(",")[0] for line in text.splitlines() if " convolution(" in line]
    assert layouts and all(labels == "b01f_01io->b01f" for labels in layouts), layouts
    np.testing.assert_allclose(np.asarray(jax.jit(grad)(x, w)), np.asarray(jax.grad(
        lambda a, b: jax.lax.conv_general_dilated(a, b, (1, 1), [(1, 1)] * 2).sum(),
        argnums=0 if wrt == "input" else 1)(x, w)), rtol=1e-6)
