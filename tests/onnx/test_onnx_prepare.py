"""An imported model's call computes what depends on its parameters alone once (onnx/prepare.py):
the same outputs as ``apply``, the prepared values kept while the parameters are the same objects,
``apply`` and every JAX transformation left with the one program and its derivative rules."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")

import jax  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.onnx import prepare  # noqa: E402


def _conv_model(rng) -> onnx.ModelProto:
    """Conv (float weights, bias) -> Relu -> QuantizeLinear -> QLinearConv (INT8 weights, per
    channel, strides 2) -> DequantizeLinear: a float and an integer convolution on parameters."""
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    wq = rng.integers(-128, 128, (16, 8, 3, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(a, n) for a, n in [
        (w, "w"), (b, "b"), (np.float32(0.05), "xs"), (np.uint8(7), "xz"), (wq, "wq"),
        (np.full(16, 0.01, np.float32), "ws"), (np.zeros(16, np.int8), "wz"), (np.float32(0.2), "ys"),
        (np.uint8(128), "yz")]]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "xs", "xz"], ["q"]),
             helper.make_node("QLinearConv", ["q", "xs", "xz", "wq", "ws", "wz", "ys", "yz"], ["qc"], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("DequantizeLinear", ["qc", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 4, 4]),
                               helper.make_tensor_value_info("qc", TensorProto.UINT8, [1, 16, 4, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def loaded():
    rng = np.random.default_rng(3)
    model = dx.load(_conv_model(rng))
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    return model, x


def test_the_call_equals_apply_and_prepares_the_filters(loaded):
    model, x = loaded
    y, q = model(x)
    y2, q2 = model.apply(model.params, x)
    np.testing.assert_array_equal(np.asarray(q), np.asarray(q2))  # integers: the same bits
    np.testing.assert_allclose(np.asarray(y), np.asarray(y2), rtol=0, atol=1e-6)
    (split, _, prepared), = model._prepared._splits.values()
    shapes = [tuple(v.aval.shape) for v in split.prepared_values]
    assert [tuple(p.shape) for p in prepared[0]] == [s for s in shapes if np.prod(s, dtype=int) > prepare.PACKED]
    # the float filter window-first for the CPU's convolution, the INT8 one (over 1,024 values: a
    # buffer, not a constant) as the windows' columns
    assert (3, 3, 3, 8) in shapes and (72, 16) in shapes, shapes
    assert split.early_count and split.late_count
    # nothing prepared is larger than the parameters it comes from (broadcasts stay in the call)
    largest = max(np.size(v) for v in jax.tree.leaves((model.params, model._buffers)))
    assert max(np.prod(s, dtype=int) for s in shapes) <= largest


def test_a_replaced_parameter_prepares_again(loaded):
    model, x = loaded
    before = np.asarray(model(x)[0])
    params = model.params
    try:
        model.params = {k: v * np.float32(2) if k == "w" else v for k, v in params.items()}
        after = np.asarray(model(x)[0])
        np.testing.assert_array_equal(after, np.asarray(model.apply(model.params, x)[0]))
        assert not np.array_equal(before, after)
    finally:
        model.params = params
    np.testing.assert_array_equal(np.asarray(model(x)[0]), before)


@pytest.mark.slow  # 2.4 s: three transformations traced and compiled
def test_transformations_take_apply(loaded):
    model, x = loaded
    known = (model.params, model._buffers)
    seen = []
    jax.jit(lambda v: seen.append(model._prepared(known, v)) or v)(x)
    assert seen == [None] and model._prepared(known, x) is not None
    y = jax.jit(lambda v: model(v)[0])(x)
    np.testing.assert_array_equal(np.asarray(y), np.asarray(jax.jit(lambda v: model.apply(model.params, v)[0])(x)))
    g = jax.grad(lambda v: model(v)[0].sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(jax.grad(lambda v: model.apply(model.params, v)[0].sum())(x)))


def test_constants_stay_in_the_call():
    # a value computed from constants alone is not prepared (XLA folds it in the call, as in apply)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.float32(3), "k")),
         helper.make_node("Mul", ["w", "k"], ["wk"]), helper.make_node("MatMul", ["x", "wk"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])], [numpy_helper.from_array(w, "w")])
    model = dx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    x = np.ones((4, 2), np.float32)
    np.testing.assert_array_equal(np.asarray(model(x)[0]), x @ (w * 3))
    (split, _, prepared), = model._prepared._splits.values()
    assert split.early_count >= 1 and [tuple(v.aval.shape) for v in split.prepared_values] == [(2, 3)]


def test_a_sequence_input_takes_the_one_program():
    # a list (an ONNX sequence) is a pytree, not an array: the call is apply's, nothing is prepared
    seq = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [2, 2])
    graph = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "g", [seq],
                              [helper.make_tensor_sequence_value_info("t", TensorProto.FLOAT, [2, 2])])
    model = dx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    items = [np.full((2, 2), 1.5, np.float32), np.arange(4, dtype=np.float32).reshape(2, 2)]
    got, want = model(items), model.apply(model.params, items)
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(np.asarray(jax.tree.leaves(got)[0]).reshape(-1, 2, 2), np.stack(items))
    assert model._prepared._splits == {}


@pytest.mark.parametrize("length", [64, 2 * prepare.ENLARGED])
def test_broadcast_parameters_stay_in_the_call_through_element_wise_operations(length):
    # a scalar and a per-channel parameter broadcast over the activations, each read through
    # DirectML's flush (an element-wise select): where the flushed broadcasts are larger than
    # ENLARGED the call computes them from the parameters rather than reading them
    s, b = np.float32(0.5), np.arange(4, dtype=np.float32).reshape(1, 4, 1)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "s"], ["xs"]), helper.make_node("Add", ["xs", "b"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, length])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, length])],
        [numpy_helper.from_array(s, "s"), numpy_helper.from_array(b, "b")])
    model = dx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    x = np.random.default_rng(0).standard_normal((1, 4, length)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(model(x)[0]), np.asarray(model.apply(model.params, x)[0]))
    (split, _, _), = model._prepared._splits.values()
    largest = max(np.prod(v.aval.shape, dtype=int) for v in split.prepared_values)
    assert largest == (4 * length if 4 * length <= prepare.ENLARGED else 4)


def test_a_recurrent_networks_weights_are_laid_out_once():
    # DirectML's LSTM runs under jax.checkpoint: the split inlines it, so that the weights' layouts
    # (R^T for the CPU's steps: ops/recurrent COLUMNS_FROM_ROWS) are prepared, not laid out again
    # on every call, and the call's program holds no transpose and no checkpoint.
    rng = np.random.default_rng(5)
    hidden, inp, batch = 8, 3, 2
    w = rng.standard_normal((1, 4 * hidden, inp)).astype(np.float32)
    r = rng.standard_normal((1, 4 * hidden, hidden)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=hidden)], "lstm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, batch, inp])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 1, batch, hidden])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(r, "r")])
    model = dx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    x = rng.standard_normal((5, batch, inp)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(model(x)[0]), np.asarray(model.apply(model.params, x)[0]))
    (split, _, prepared), = model._prepared._splits.values()
    assert (hidden, 4 * hidden) in [tuple(v.aval.shape) for v in split.prepared_values]

    def primitives(jaxpr):
        for e in jaxpr.eqns:
            yield e.primitive.name
            for v in e.params.values():
                for sub in v if isinstance(v, (tuple, list)) else (v,):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        yield from primitives(inner)
    called = set(primitives(jax.make_jaxpr(split.run)(prepared, x).jaxpr))
    assert "scan" in called and not called & {"transpose", "remat2", "checkpoint"}, called
