"""An imported model's prepared call runs channels last between its convolutions (onnx/layout.py):
each operation on a permuted value gives the bits of the program as written, no transpose is left
between two convolutions, and ``use_kernels(False, "channels_last")`` runs the program as written."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmljax  # noqa: E402
import dmljax.onnx as dx  # noqa: E402
from dmljax._src.onnx import layout, prepare  # noqa: E402
from tests import tiers  # noqa: E402

RNG = np.random.default_rng(5)
X = RNG.integers(-3, 4, (2, 4, 6, 6)).astype(np.float32)  # small integers: every sum is exact, in any order
W = RNG.integers(-2, 3, (8, 4, 3, 3)).astype(np.float32)
W2 = RNG.integers(-2, 3, (6, 4, 1, 1)).astype(np.float32)
M = RNG.integers(-2, 3, (5, 8)).astype(np.float32)
OTHER = RNG.integers(-3, 4, (2, 3, 6, 6)).astype(np.float32)


def conv(x, w, groups=1):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=groups)


AFTER_A_CONVOLUTION = {
    "per-channel broadcast": lambda y: jnp.where(y + jnp.arange(8.0)[None, :, None, None] > 0, y, 0.5 * y),
    "pad and strided slice": lambda y: lax.pad(y, 1.0, [(0, 0, 0), (0, 0, 0), (1, 2, 1), (2, 0, 0)])[:, 1:7:2, ::2, 1:],
    "sums and maxima": lambda y: (jnp.sum(y, axis=(2, 3), keepdims=True), jnp.max(y, axis=1), jnp.sum(y, axis=0)),
    "pooling window": lambda y: lax.reduce_window(y, -np.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2), "SAME"),
    "average window": lambda y: lax.reduce_window(y, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "VALID"),
    "cumulative sum": lambda y: jnp.cumsum(y, axis=2),
    "spatial axes merged": lambda y: y.reshape(2, 8, 36),
    "channels split into groups": lambda y: y.reshape(2, 2, 4, 6, 6) * 2.0,
    "channels merged with rows": lambda y: y.reshape(2, 48, 6),
    "transposed and flattened": lambda y: jnp.transpose(y, (0, 2, 3, 1)).reshape(2, 36, 8),
    "nearest upsampling": lambda y: jnp.broadcast_to(y[:, :, :, None, :, None], (2, 8, 6, 2, 6, 2)).reshape(2, 8, 12, 12),
    "concatenated with a value as written": lambda y: jnp.concatenate([y, OTHER, y], axis=1),
    "product over the channels": lambda y: (jnp.einsum("nchw,dc->ndhw", y, M), jnp.einsum("dc,nchw->nhdw", M, y)),
    "split and flipped": lambda y: tuple(jnp.flip(p, 2) for p in jnp.split(y, [3], axis=1)),
    "a second convolution, grouped": lambda y: conv(y, W2, groups=2) + conv(y[:, :4], W2),
    "one channel squeezed": lambda y: jnp.squeeze(y[:, 2:3], 1) * 3.0,
    "integer cast and compare": lambda y: (y.astype(jnp.int32) >> 1, y == 2.0),
}


def _flattened(f, *args):
    closed = jax.make_jaxpr(f)(*args)
    values = [prepare._Value(v.aval) for v in closed.jaxpr.invars]
    ops, outputs = prepare._flatten(closed, values, "cpu")
    return ops, outputs, {id(v): jnp.asarray(x) for v, x in zip(values, args)}


@pytest.mark.parametrize("case", tiers.fast_sample(sorted(AFTER_A_CONVOLUTION), keep=4, key="layout"))
def test_an_operation_on_a_permuted_value_gives_the_bits_of_the_program_as_written(case):
    op = AFTER_A_CONVOLUTION[case]
    ops, outputs, env = _flattened(lambda x, w: op(conv(x, w)), X, W)
    want = prepare._evaluate(ops, dict(env))
    read = layout.evaluate(ops, dict(env))
    for v in outputs:
        got = read(v)
        assert got.shape == want(v).shape and got.dtype == want(v).dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want(v)))


@pytest.mark.parametrize("case", ["per-channel broadcast", "pad and strided slice", "pooling window",
                                  "spatial axes merged", "nearest upsampling", "a second convolution, grouped",
                                  "product over the channels"])
def test_a_permuted_value_is_transposed_back_only_at_the_outputs(case):
    op = AFTER_A_CONVOLUTION[case]
    ops, outputs, env = _flattened(lambda x, w: op(conv(x, w)), X, W)
    read = layout.evaluate(ops, dict(env))
    arrays = read.__self__
    convolution_outputs = {id(r) for eqn, _, results in ops if eqn.primitive.name == "conv_general_dilated"
                           for r in results}
    assert all(arrays.get(next(r for _, _, rs in ops for r in rs if id(r) == k))[1] is not None
               for k in convolution_outputs)
    inside = [k for k, perm in arrays.made if perm is None and k not in {id(v) for v in outputs}]
    assert not [k for k, perm in arrays.made if perm is not None and k not in arrays.recipes], \
        f"{case}: an array as written transposed rather than broadcast into the permutation"
    assert inside == [], f"{case}: {len(inside)} values transposed back before the outputs"


def _node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


def _mobile_block(rng) -> onnx.ModelProto:
    """A small MobileNet-style network with the operations the OCR and orientation models have
    between their convolutions: a strided convolution, BatchNormalization, HardSwish, a depthwise
    convolution, a squeeze-and-excitation (GlobalAveragePool, two 1 x 1 convolutions, HardSigmoid,
    Mul), a residual Add, MaxPool, a nearest Resize, Concat, a ConvTranspose, Sigmoid, and a head
    (Flatten, Gemm, Softmax)."""
    def f(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    inits = {"w0": f(16, 3, 3, 3), "b0": f(16), "g": f(16) + 1, "be": f(16), "mu": f(16), "var": np.abs(f(16)) + 0.5,
             "wd": f(16, 1, 3, 3), "bd": f(16), "ws1": f(8, 16, 1, 1), "bs1": f(8), "ws2": f(16, 8, 1, 1),
             "bs2": f(16), "wp": f(16, 16, 1, 1), "bp": f(16), "wt": f(32, 8, 2, 2), "bt": f(8),
             "wg": f(8 * 16 * 16, 10, scale=0.05), "bg": f(10), "scales": np.array([1, 1, 2, 2], np.float32)}
    nodes = [_node("Conv", ["x", "w0", "b0"], ["c0"], pads=[1, 1, 1, 1], strides=[2, 2]),
             _node("BatchNormalization", ["c0", "g", "be", "mu", "var"], ["n0"]),
             _node("HardSwish", ["n0"], ["h0"]),
             _node("Conv", ["h0", "wd", "bd"], ["d0"], pads=[1, 1, 1, 1], group=16),
             _node("Relu", ["d0"], ["r0"]),
             _node("GlobalAveragePool", ["r0"], ["p0"]),
             _node("Conv", ["p0", "ws1", "bs1"], ["s1"]), _node("Relu", ["s1"], ["s2"]),
             _node("Conv", ["s2", "ws2", "bs2"], ["s3"]), _node("HardSigmoid", ["s3"], ["s4"], alpha=1 / 6),
             _node("Mul", ["r0", "s4"], ["e0"]),
             _node("Conv", ["e0", "wp", "bp"], ["c1"]), _node("Add", ["c1", "h0"], ["a0"]),
             _node("MaxPool", ["a0"], ["m0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             _node("Resize", ["m0", "", "scales"], ["u0"], mode="nearest"),
             _node("Concat", ["u0", "a0"], ["k0"], axis=1),
             _node("ConvTranspose", ["k0", "wt", "bt"], ["t0"], strides=[2, 2]),
             _node("Sigmoid", ["t0"], ["t1"]),
             _node("Flatten", ["t1"], ["f0"]), _node("Gemm", ["f0", "wg", "bg"], ["g0"]),
             _node("Softmax", ["g0"], ["y"])]
    graph = helper.make_graph(nodes, "mobile", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10]),
                               helper.make_tensor_value_info("k0", TensorProto.FLOAT, [1, 32, 8, 8])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def mobile():
    rng = np.random.default_rng(11)
    model = dx.load(_mobile_block(rng))
    x = rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
    return model, x


def _split(model, x):
    model(x)
    return next(entry for key, entry in model._prepared._splits.items()
                if key[1] == dmljax._src.kernel_seam.switches())


def _transposes_between_convolutions(split, prepared, x, convolution="conv_general_dilated") -> list:
    """The transposes of the call's program that read a convolution's result (at any distance)
    and feed a convolution (at any distance); ``convolution``: the primitive that computes one."""
    eqns = split.run.trace(prepared, x).jaxpr.jaxpr.eqns
    after: set = set()
    for e in eqns:
        if e.primitive.name == convolution or any(v in after for v in e.invars if not hasattr(v, "val")):
            after.update(e.outvars)
    before: set = set()
    found = []
    for e in reversed(eqns):
        if e.primitive.name == convolution or any(v in before for v in e.outvars):
            before.update(v for v in e.invars if not hasattr(v, "val"))
            if e.primitive.name == "transpose" and e.invars[0] in after:
                found.append(e)
    return found


def test_no_transpose_between_two_convolutions_in_the_prepared_program(mobile):
    model, x = mobile
    split, _, prepared = _split(model, x)
    assert split.channels_last
    assert _transposes_between_convolutions(split, prepared, x) == []
    with dmljax.use_kernels(False, "channels_last"):
        written, _, prepared_written = _split(model, x)
    assert not written.channels_last
    # the program as written transposes the depthwise convolution's taps to and from channels last
    assert len(_transposes_between_convolutions(written, prepared_written, x)) >= 2


def test_the_channels_last_call_equals_the_program_as_written(mobile):
    model, x = mobile
    got = [np.asarray(o) for o in model(x)]
    with dmljax.use_kernels(False, "channels_last"):
        want = [np.asarray(o) for o in model(x)]
    applied = [np.asarray(o) for o in model.apply(model.params, x)]
    for g, w, a in zip(got, want, applied):
        assert g.shape == w.shape and g.dtype == w.dtype
        # the same operations; only GlobalAveragePool's and the convolutions' sums may add in another order
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(g, a, rtol=2e-6, atol=1e-7)


def test_the_switch_keeps_a_program_of_each_form(mobile):
    model, x = mobile
    model(x)
    with dmljax.use_kernels(False, "channels_last"):
        model(x)
    forms = {entry[0].channels_last for entry in model._prepared._splits.values()}
    assert forms == {True, False}


def test_a_program_without_a_convolution_runs_as_written():
    graph = helper.make_graph([_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = dx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    model(np.ones((2, 3), np.float32))
    (split, _, _), = model._prepared._splits.values()
    assert not split.channels_last


def test_a_products_prepared_operand_is_passed_as_the_product_reads_it():
    # an LSTM's input weights {1, 4 hidden, input}, which its product reads as {4 hidden, input}
    # contracted on the last axis, are prepared as {input, 4 hidden}, which XLA's CPU product reads
    # without a transpose of its own in every call
    rng = np.random.default_rng(2)
    hidden = 8
    inits = {"w0": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
             "w1": rng.standard_normal((6, 4, 3, 3)).astype(np.float32),
             "shape": np.array([6, 1, 16], np.int64),
             "w": rng.standard_normal((1, 4 * hidden, 16)).astype(np.float32),
             "r": rng.standard_normal((1, 4 * hidden, hidden)).astype(np.float32)}
    nodes = [_node("Conv", ["x", "w0"], ["c0"], pads=[1, 1, 1, 1]), _node("Relu", ["c0"], ["r0"]),
             _node("Conv", ["r0", "w1"], ["c1"], pads=[1, 1, 1, 1]), _node("Reshape", ["c1", "shape"], ["s"]),
             _node("LSTM", ["s", "w", "r"], ["y"], hidden_size=hidden)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 1, 1, hidden])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = dx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]))
    x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    got = np.asarray(model(x)[0])
    split, _, prepared = _split(model, x)
    assert list(split.layouts.values()) == [(1, 0)]
    assert (16, 4 * hidden) in [tuple(p.shape) for p in prepared[0]]
    with dmljax.use_kernels(False, "channels_last"):
        want = np.asarray(model(x)[0])
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


def test_a_transpose_to_channels_first_is_told_from_others():
    assert layout.channels_first((0, 3, 1, 2)) and layout.channels_first((0, 2, 1))
    assert layout.channels_first((0, 4, 1, 2, 3))
    assert not layout.channels_first((0, 2, 3, 1))  # channels last
    assert not layout.channels_first((0, 3, 2, 1))  # the spatial axes reversed
    assert not layout.channels_first((1, 0)) and not layout.channels_first((0, 1, 2))


def _quantized_pair(rng) -> onnx.ModelProto:
    """QuantizeLinear -> QLinearConv (3 x 3, padded) -> QLinearConv (1 x 1, per-channel filter
    scales) -> QLinearAdd with the first one's result -> DequantizeLinear: two integer convolutions,
    with the requantization between them (no FLOAT32 convolution)."""
    def q8(*shape):
        return rng.integers(-90, 90, shape).astype(np.int8)
    f32, u8 = (lambda v: np.array(v, np.float32)), (lambda v: np.array(v, np.uint8))
    inits = {"xs": f32(0.02), "xz": u8(128), "w1": q8(8, 4, 3, 3), "w1s": f32(0.01), "w1z": np.array(0, np.int8),
             "y1s": f32(0.05), "y1z": u8(120), "w2": q8(8, 8, 1, 1),
             "w2s": rng.uniform(0.005, 0.02, 8).astype(np.float32),
             "w2z": np.zeros(8, np.int8), "y2s": f32(0.04), "y2z": u8(130), "as": f32(0.06), "az": u8(125)}
    nodes = [_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             _node("QLinearConv", ["q", "xs", "xz", "w1", "w1s", "w1z", "y1s", "y1z"], ["c1"], pads=[1, 1, 1, 1]),
             _node("QLinearConv", ["c1", "y1s", "y1z", "w2", "w2s", "w2z", "y2s", "y2z"], ["c2"]),
             helper.make_node("QLinearAdd", ["c2", "y2s", "y2z", "c1", "y1s", "y1z", "as", "az"], ["a"],
                              domain="com.microsoft"),
             _node("DequantizeLinear", ["a", "as", "az"], ["y"])]
    graph = helper.make_graph(nodes, "quantized", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                   helper.make_opsetid("com.microsoft", 1)])


def test_integer_convolutions_stay_channels_last_between_them():
    rng = np.random.default_rng(8)
    model = dx.load(_quantized_pair(rng))
    x = rng.uniform(-2, 2, (1, 4, 6, 6)).astype(np.float32)
    got = np.asarray(model(x)[0])
    split, _, prepared = _split(model, x)
    assert split.channels_last  # two transposes back to channels first, no FLOAT32 convolution
    eqns = split.run.trace(prepared, x).jaxpr.jaxpr.eqns
    assert [e.primitive.name for e in eqns].count("dot_general") == 2  # the windows' columns times the filter
    assert _transposes_between_convolutions(split, prepared, x, "dot_general") == []
    with dmljax.use_kernels(False, "channels_last"):
        written, _, prepared_written = _split(model, x)
        want = np.asarray(model(x)[0])
    # as written, the first product goes back to {N, C, H, W} and into the second one's columns as {N, H, W, C}
    assert len(_transposes_between_convolutions(written, prepared_written, x, "dot_general")) >= 2
    np.testing.assert_array_equal(got, want)  # integer sums and the same requantization: the same bits


def test_compiler_options_the_jaxlib_refuses_are_left_out(monkeypatch):
    monkeypatch.setattr(layout, "COMPILER_OPTIONS", dict(layout.COMPILER_OPTIONS, xla_cpu_no_such_option=True,
                                                         xla_cpu_prefer_vector_width="wide"))
    got = layout.compiler_options.__wrapped__()
    assert "xla_cpu_no_such_option" not in got and "xla_cpu_prefer_vector_width" not in got
    assert got["xla_cpu_experimental_ynn_fusion_type"] == "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"


def test_forcing_the_form_takes_it_for_one_convolution():
    # the benchmarks time one convolution as a model's run (force_kernels); the rule alone wants two
    from dmljax._src.kernel_seam import force_kernels
    graph = helper.make_graph([_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 6, 6])],
                              [numpy_helper.from_array(W, "w")])
    model = dx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    want = np.asarray(model(X)[0])
    with force_kernels("channels_last"):
        got = np.asarray(model(X)[0])
    forms = {key[1][1]: entry[0].channels_last for key, entry in model._prepared._splits.items()}  # by forced kernels
    assert forms == {frozenset(): False, frozenset({"channels_last"}): True}, forms
    np.testing.assert_array_equal(got, want)  # small integers: every sum exact in any order
