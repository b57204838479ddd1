"""CONVOLUTION's FLOAT32 depthwise kernels (dmljax/_src/kernels/convolution_depthwise.py), run here by
Pallas's interpreter: the forward against the float64 reference within the record's budget and
against XLA's grouped convolution bit for bit where the sums are exact integers, the filter's
gradient and the input's (the forward kernel on the cotangent) likewise, DirectML's flushes; which
calls take them; and the operator with the kernels in place of its CUDA branch (the interpreter's),
whose values, jax.grad, jax.jvp, second derivatives and vmap equal XLA's formula's bit for bit on
integers; and which kernels the operator's programs lowered for CUDA hold. On the CPU the operator
computes XLA's formula; tests/gpu/kernels.py runs the compiled kernels on a GPU."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jax import lax

import dmljax
from dmljax import DataType
from dmljax._src import kernel_seam
from dmljax._src.kernels import convolution_depthwise as dw
from dmljax._src.ops.convolution import convolution as conv_op
from dmljax._src.ops.convolution.convolution import CONVOLUTION
from tests import catalog, tiers
from tests.compare import assert_matches
from tests.reference.convolution.convolution import _magnitude
from tests.reference.convolution.convolution import convolution as reference
from tests.reference.record import Attrs
from tests.reference.rules import read

SWITCH = dw.CONVOLUTION_DEPTHWISE.name

# (input Sizes, filter Sizes, attributes): depthwise geometries the kernels run
GEOMETRIES = [
    # 3 x 3, "same" padding: 70 positions (two blocks, the second part-filled), 40 channels (two blocks)
    ((2, 40, 5, 7), (40, 1, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1)}),
    # strides 2, padded unevenly, dilated: the output's rows narrower than the input's
    ((1, 20, 9, 11), (20, 1, 3, 3), {"strides": (2, 2), "dilations": (1, 2), "start_padding": (0, 2),
                                     "end_padding": (1, 0)}),
    # 5 x 5 at strides 2, and a channel multiplier (three outputs a channel) with a 3 x 2 window
    ((2, 33, 11, 10), (33, 1, 5, 5), {"strides": (2, 2), "start_padding": (2, 2), "end_padding": (2, 2)}),
    ((1, 12, 6, 8), (36, 1, 3, 2), {"strides": (1, 2), "start_padding": (1, 0), "end_padding": (1, 1)}),
    # unpadded, dilated both ways: the output three rows and columns shorter than the input
    ((2, 16, 9, 8), (16, 1, 2, 3), {"dilations": (3, 2)}),
]
SMALL = ((1, 16, 3, 5), (16, 1, 2, 2), {"start_padding": (1, 0), "end_padding": (0, 1)})  # one block: the fast tier's


def _spelled(attrs):
    return {k: tuple(attrs.get(k, (v, v))) for k, v in (("strides", 1), ("dilations", 1), ("start_padding", 0),
                                                         ("end_padding", 0))}


@functools.partial(jax.jit, static_argnames=("strides", "dilations", "start_padding", "end_padding", "flush"))
def forward(x, w, strides, dilations, start_padding, end_padding, flush=(True, True, True)):
    """The forward kernel in the interpreter, compiled once a geometry."""
    return dw.depthwise_forward(x, w, strides, dilations, start_padding, end_padding, flush=flush, interpret=True)


@functools.partial(jax.jit, static_argnames=("window", "strides", "dilations", "start_padding", "end_padding"))
def filter_gradient(x, dy, window, strides, dilations, start_padding, end_padding):
    """The filter's gradient kernel in the interpreter, compiled once a geometry."""
    return dw.depthwise_filter(x, dy, window, strides, dilations, start_padding, end_padding, interpret=True)


def _inputs(x_shape, w_shape, seed=0, integers=False):
    rng = np.random.default_rng(seed)
    if integers:  # exact sums in any order
        return rng.integers(-4, 5, x_shape).astype(np.float32), rng.integers(-4, 5, w_shape).astype(np.float32)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[2:]))).astype(np.float32)
    x.flat[:6] = [1e-39, -1e-39, 0.0, -0.0, 3e4, -2.5]  # denormals read as zeros
    w.flat[:2] = [-1e-40, 1e-38]
    return x, w


def _attrs(x_shape, attrs):
    return dict(attrs, group_count=x_shape[1])


def _xla(x, w, strides, dilations, start_padding, end_padding):
    """XLA's grouped convolution (HIGHEST precision), the kernels' twin."""
    return lax.conv_general_dilated(x, w, strides, list(zip(start_padding, end_padding)), rhs_dilation=dilations,
                                    feature_group_count=x.shape[1], precision=lax.Precision.HIGHEST)


def filter_gradient64(x, dy, window, strides, dilations, start_padding, end_padding):
    """The float64 filter gradient of the depthwise cross-correlation: for each output channel o
    and tap, the sum of the (flushed) input channel o / multiplier at the positions the tap reads
    times ``dy``; and the sums of the terms' magnitudes."""
    xs = read(x)
    c, o = xs.shape[1], dy.shape[1]
    xs = np.repeat(np.pad(xs, [(0, 0), (0, 0)] + [(a, b) for a, b in zip(start_padding, end_padding)]), o // c, axis=1)
    dy = np.asarray(dy, np.float64)
    out, size = np.zeros((o, 1) + tuple(window)), np.zeros((o, 1) + tuple(window))
    for i, j in np.ndindex(*window):
        piece = xs[:, :, i * dilations[0]::strides[0], j * dilations[1]::strides[1]][:, :, :dy.shape[2], :dy.shape[3]]
        out[:, 0, i, j] = np.sum(piece * dy, axis=(0, 2, 3))
        size[:, 0, i, j] = np.sum(np.abs(piece * dy), axis=(0, 2, 3))
    return out, size


def check_forward(x, w, attrs):
    """The forward kernel within CONVOLUTION's budget of the float64 reference."""
    a = _attrs(x.shape, attrs)
    got = np.asarray(forward(jnp.asarray(x), jnp.asarray(w), **_spelled(attrs)))
    want = reference(x, w, **a)[0]
    assert got.shape == want.shape
    budget = catalog.budget(CONVOLUTION, Attrs(a), DataType.FLOAT32, sizes=x.shape, args=(x, w))
    assert_matches(got, [want], DataType.FLOAT32, budget, "depthwise kernel vs reference", magnitude=_magnitude(x, w, **a))


def check_filter(x, dy, window, attrs):
    """The filter's gradient within (terms + 1) units of its terms' magnitude of the float64 sums,
    unflushed (a gradient is not written to a tensor)."""
    got = np.asarray(filter_gradient(jnp.asarray(x), jnp.asarray(dy), tuple(window), **_spelled(attrs)))
    want, size = filter_gradient64(x, dy, window, **_spelled(attrs))
    terms = dy.shape[0] * dy.shape[2] * dy.shape[3]
    assert_matches(got, [want], DataType.FLOAT32, terms + 1, "filter gradient vs reference", flush=False, magnitude=size)


def test_forward_kernel_in_the_interpreter():
    x_shape, w_shape, attrs = SMALL
    x, w = _inputs(x_shape, w_shape)
    check_forward(x, w, attrs)
    # integers: XLA's grouped convolution bit for bit; sums below FLOAT32's smallest normal
    # (1e-20 * -1e-19 up to nine times) written as zeros, of the same compiled kernel
    xi, wi = _inputs(x_shape, w_shape, integers=True)
    got = forward(jnp.asarray(xi), jnp.asarray(wi), **_spelled(attrs))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(_xla(xi, wi, **_spelled(attrs))))
    tiny = np.asarray(forward(jnp.full(x_shape, 1e-20, jnp.float32), jnp.full(w_shape, -1e-19, jnp.float32),
                              **_spelled(attrs)))
    assert not tiny.any() and not np.isnan(tiny).any()


def test_filter_kernel_in_the_interpreter():
    x_shape, w_shape, attrs = SMALL
    x, _ = _inputs(x_shape, w_shape)
    dy = np.random.default_rng(1).standard_normal((1, 16, 3, 5)).astype(np.float32)  # (the output's Sizes)
    check_filter(x, dy, w_shape[2:], attrs)


@pytest.mark.slow  # 2-5 s a geometry in the interpreter
@pytest.mark.parametrize("x_shape,w_shape,attrs", GEOMETRIES)
def test_kernels_in_the_interpreter_over_geometries(x_shape, w_shape, attrs):
    assert dw.CONVOLUTION_DEPTHWISE.runs(x_shape, w_shape, np.float32, True, x_shape[1], *_spelled(attrs).values(),
                                         (0, 0))
    x, w = _inputs(x_shape, w_shape)
    check_forward(x, w, attrs)
    y_shape = reference(x, w, **_attrs(x_shape, attrs))[0].shape
    dy = np.random.default_rng(1).standard_normal(y_shape).astype(np.float32)
    check_filter(x, dy, w_shape[2:], attrs)
    check_exact(x_shape, w_shape, attrs)


def check_exact(x_shape, w_shape, attrs, seed=0):
    """Integers: the forward, the filter's and (unit strides, no multiplier) the input's gradient
    kernels equal XLA's grouped convolution and its transposes bit for bit."""
    g = _spelled(attrs)
    x, w = _inputs(x_shape, w_shape, seed, integers=True)
    y = _xla(x, w, **g)
    dy = np.random.default_rng(seed + 1).integers(-4, 5, y.shape).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(forward(jnp.asarray(x), jnp.asarray(w), **g)), np.asarray(y))
    dx, dw_ = jax.vjp(lambda p, q: _xla(p, q, **g), x, w)[1](dy)
    got = filter_gradient(jnp.asarray(x), jnp.asarray(dy), tuple(w_shape[2:]), **g)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(dw_))
    if dw.CONVOLUTION_DEPTHWISE_DATA.runs(x_shape, w_shape, np.float32, True, x_shape[1], *g.values(), (0, 0)):
        start, end = dw.data_geometry(w_shape[2:], g["dilations"], g["start_padding"], g["end_padding"])
        got = forward(jnp.asarray(dy), jnp.asarray(np.ascontiguousarray(w[:, :, ::-1, ::-1])), (1, 1), g["dilations"],
                      start, end, flush=(False, False, False))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(dx))


@pytest.mark.slow  # the interpreter, a geometry an example
@pytest.mark.fuzz
@settings(max_examples=tiers.by_tier(2, 8), derandomize=True, deadline=None, database=None)
@given(st.data())
def test_kernels_in_the_interpreter_over_random_geometries(data):
    # the kernels' index arithmetic (each position's window from its own first row and column,
    # positions counted over the images, masks at the padding, past the end and past the channels)
    # over random strides, dilations, paddings (negative ones too: the input's gradient crops)
    # and windows, against XLA's grouped convolution and its transposes on integers
    kh, kw = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    strides = tuple(data.draw(st.integers(1, 2)) for _ in range(2))
    dilations = tuple(data.draw(st.integers(1, 2)) for _ in range(2))
    start = tuple(data.draw(st.integers(0, 3)) for _ in range(2))
    end = tuple(data.draw(st.integers(0, 3)) for _ in range(2))
    n, c, h, w = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 40)), data.draw(st.integers(1, 9)),
                  data.draw(st.integers(1, 9)))
    m = data.draw(st.sampled_from((1, 1, 2)))
    x_shape, w_shape = (n, c, h, w), (c * m, 1, kh, kw)
    attrs = {"strides": strides, "dilations": dilations, "start_padding": start, "end_padding": end}
    assume(dw.CONVOLUTION_DEPTHWISE.runs(x_shape, w_shape, np.float32, True, c, strides, dilations, start, end,
                                         (0, 0)))
    check_exact(x_shape, w_shape, attrs, seed=data.draw(st.integers(0, 3)))


@pytest.mark.parametrize("x_shape,w_shape,strides,takes,runs", [
    ((128, 96, 112, 112), (96, 1, 3, 3), (2, 2), True, True),  # MobileNetV2's
    ((128, 960, 7, 7), (960, 1, 3, 3), (1, 1), True, True),
    ((2, 32, 14, 14), (32, 1, 5, 5), (2, 1), True, True),
    ((2, 32, 14, 14), (32, 1, 7, 7), (2, 2), False, False),  # beyond MAX_WINDOW
    ((2, 32, 14, 14), (32, 1, 1, 1), (2, 2), False, False),  # one tap: a scaling
    ((2, 32, 14, 14), (32, 1, 3, 3), (3, 3), False, False),  # beyond MAX_STRIDE
    ((2, 8, 14, 14), (8, 1, 3, 3), (2, 2), False, True),  # fewer than MIN_CHANNELS
    ((2, 32, 14, 14), (64, 1, 3, 3), (2, 2), False, True),  # a multiplier
])
def test_which_convolutions_take_the_kernels(x_shape, w_shape, strides, takes, runs):
    rest = (strides, (1, 1), (1, 1), (1, 1), (0, 0))
    facts = (x_shape, w_shape, np.float32, True, x_shape[1]) + rest
    assert dw.CONVOLUTION_DEPTHWISE.applies(*facts) is takes
    assert dw.CONVOLUTION_DEPTHWISE_FILTER.applies(*facts) is (takes and dw.BACKWARD_FILTER)
    assert dw.CONVOLUTION_DEPTHWISE_DATA.applies(*facts) is (takes and dw.BACKWARD_DATA and max(strides) == 1)
    assert dw.CONVOLUTION_DEPTHWISE.runs(*facts) is runs
    assert not dw.CONVOLUTION_DEPTHWISE_DATA.runs(x_shape, (2 * x_shape[1],) + w_shape[1:], *facts[2:])
    x, w = (2, 32, 8, 8), (32, 1, 3, 3)
    assert not dw.CONVOLUTION_DEPTHWISE.runs(x, w, np.float16, True, 32, *rest)
    assert not dw.CONVOLUTION_DEPTHWISE.runs(x, w, np.float32, False, 32, *rest)  # BACKWARD
    assert not dw.CONVOLUTION_DEPTHWISE.runs(x, (32, 2, 3, 3), np.float32, True, 16, *rest)  # two channels a group
    assert not dw.CONVOLUTION_DEPTHWISE.runs(x, w, np.float32, True, 32, *rest[:-1], (1, 0))  # OutputPadding
    assert not dw.CONVOLUTION_DEPTHWISE.runs((2, 32, 8), (32, 1, 3), np.float32, True, 32, (1,), (1,), (1,), (1,), (0,))


@pytest.fixture
def kernels_in_the_interpreter(monkeypatch):
    """The operator's CUDA branch taken on the CPU, the kernels run by the interpreter: a route
    with a kernel runs it (without platform_dependent and the partitioning wrapper)."""
    def run(self, xla, cuda, *operands, lead=0, whole=()):
        return xla(*operands) if self.kernel is None or kernel_seam.in_gradient_rule() else cuda(*operands)

    def counted(kernel, key):
        def call(*args, **kwargs):
            taken.append(key(kwargs))
            return kernel(*args, interpret=True, **kwargs)
        return call

    taken = []  # the kernels the operator's programs hold, as they are traced or lowered
    monkeypatch.setattr(kernel_seam.Route, "run", run)
    monkeypatch.setattr(conv_op, "depthwise_forward", counted(
        dw.depthwise_forward, lambda kw: "forward" if kw.get("flush", (True,))[0] else "input gradient"))
    monkeypatch.setattr(conv_op, "depthwise_filter", counted(dw.depthwise_filter, lambda kw: "filter gradient"))
    return taken


@pytest.mark.slow  # the three kernels compiled by the interpreter (4-6 s)
@pytest.mark.parametrize("attrs", [{"start_padding": (1, 1), "end_padding": (1, 1), "mode": "CONVOLUTION"},
                                   {"strides": (2, 2), "start_padding": (0, 1), "end_padding": (1, 1)}])
def test_the_operator_with_the_kernels_differentiates_as_xla(kernels_in_the_interpreter, attrs):
    x_shape, w_shape = (2, 18, 6, 7), (18, 1, 3, 3)  # shapes of this test alone: the operator traces afresh
    attrs = dict(attrs, group_count=18)
    x, w = _inputs(x_shape, w_shape, integers=True)
    y_shape = jax.eval_shape(lambda a, b: dmljax.convolution(a, b, **attrs), x, w).shape
    rng = np.random.default_rng(2)
    dy, tx, tw = (rng.integers(-4, 5, s).astype(np.float32) for s in (y_shape, x_shape, w_shape))

    def everything(a, b):
        conv = lambda p, q: dmljax.convolution(p, q, **attrs)  # noqa: E731
        y, pull = jax.vjp(conv, a, b)
        _, t = jax.jvp(conv, (a, b), (tx, tw))
        gx = jax.grad(lambda p: jnp.vdot(conv(p, b), dy))(a)  # one argument: the other's tangent a symbolic zero
        second = jax.grad(lambda p: jnp.vdot(jax.grad(lambda q: jnp.sum(conv(q, b) ** 2))(p), tx))(a)
        return (y, t, gx, second) + pull(jnp.asarray(dy))

    with kernel_seam.force_kernels(SWITCH):
        got = jax.jit(everything)(x, w)
    unit = "strides" not in attrs
    assert set(kernels_in_the_interpreter) == {"forward", "filter gradient"} | ({"input gradient"} if unit else set())
    with dmljax.use_kernels(False, SWITCH):
        want = jax.jit(everything)(x, w)
    for name, g, h in zip(("value", "tangent", "input gradient", "second derivative", "input gradient (vjp)",
                           "filter gradient"), got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(h), err_msg=name)
    xs = np.stack([x, 2 * x])
    with kernel_seam.force_kernels(SWITCH):
        batched = jax.jit(jax.vmap(lambda a: dmljax.convolution(a, w, **attrs)))(xs)
    np.testing.assert_array_equal(np.asarray(batched[1]), 2 * np.asarray(want[0]))


def test_cuda_programs_hold_the_kernels_by_their_rules():
    # lowered for CUDA (Pallas's Triton lowering runs here; Triton's compiler on a GPU only): the
    # output takes the kernel at strides of MIN_STRIDE and more, and by their rules the gradients
    # (BACKWARD_FILTER, BACKWARD_DATA); forced (force_kernels) all three at unit strides, the
    # input's gradient by the forward kernel
    x, w = jnp.ones((2, 32, 8, 8), jnp.float32), jnp.ones((32, 1, 3, 3), jnp.float32)
    attrs = {"group_count": 32, "start_padding": (1, 1), "end_padding": (1, 1)}
    strided = dict(attrs, strides=(2, 2))

    def kernels(fn):
        text = jax.jit(fn).trace(x, w).lower(lowering_platforms=("cuda",)).as_text()
        return text.count("__gpu$xla.gpu.triton"), "dmljax_convolution_depthwise_filter" in text

    def grads(a, b, at=attrs):
        return jax.grad(lambda p, q: jnp.sum(dmljax.convolution(p, q, **at) ** 2), argnums=(0, 1))(a, b)

    unit = dw.MIN_STRIDE == 1
    assert kernels(lambda a, b: dmljax.convolution(a, b, **strided)) == (1, False)
    assert kernels(lambda a, b: dmljax.convolution(a, b, **attrs)) == (unit, False)
    # the output (read by the square's gradient) and, by their rules, the filter's and the input's
    # gradients
    assert kernels(grads) == (unit * (1 + dw.BACKWARD_FILTER + dw.BACKWARD_DATA), unit and dw.BACKWARD_FILTER)
    assert kernels(lambda a, b: grads(a, b, strided)) == (1 + dw.BACKWARD_FILTER, dw.BACKWARD_FILTER)
    with kernel_seam.force_kernels(SWITCH):
        assert kernels(grads) == (3, True)
