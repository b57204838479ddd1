"""``load(..., gather_one_hot=True)``: a MatMul of one-hot rows (Equal of an expanded integer
tensor and the constants v0 to v0 + K - 1, Cast, MatMul) read as a gather of the product's
possible rows (onnx/one_hot.py). On small constructed graphs: the outputs are the graph as
written's (``gather_one_hot=False``) bit for bit, for weights holding infinities, NaNs, signed
zeros and FLOAT32 denormals and for inputs outside the one-hot range, through ``model(...)`` (the
table computed once) and ``apply``, and the weights' gradient is the product's; ONNX Runtime
agrees on finite weights; and the graphs that must stay as written (values not in order, a last
dimension that is not 1, an overridable constant, a Cast to another type) stay."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="comparing with ONNX Runtime needs onnxruntime (the test extra)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402

_ONNX = {np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.float32: TensorProto.FLOAT,
         np.float16: TensorProto.FLOAT16}


def _model(k=9, n=5, v0=0, index=np.int32, dtype=np.float32, opset=17, values=None, last=1, cast_to=None,
           overridable=False, weights=None, seed=0):
    """x {B, L} -> Reshape {B, L, last} -> Expand {B, L, K} (shape computed from x's) -> Equal with
    ``values`` (default v0..v0 + K - 1) {1, 1, K} -> Cast -> MatMul by W {K, N} -> y {B, L, N}."""
    rng = np.random.default_rng(seed)
    w = weights if weights is not None else rng.standard_normal((k, n)).astype(dtype)
    v = np.asarray(values if values is not None else np.arange(v0, v0 + k), index).reshape(1, 1, k)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(v, "V"),
             numpy_helper.from_array(np.array([0, 0, last], np.int64), "to3"),
             numpy_helper.from_array(np.array([0], np.int64), "s0"), numpy_helper.from_array(np.array([2], np.int64), "s2"),
             numpy_helper.from_array(np.array([k], np.int64), "kk")]
    nodes = [
        helper.make_node("Reshape", ["x", "to3"], ["x3"]) if last == 1 else
        helper.make_node("Tile", ["x3a", "reps"], ["x3"]),
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Slice", ["xs", "s0", "s2"], ["lead"]),
        helper.make_node("Concat", ["lead", "kk"], ["target"], axis=0),
        helper.make_node("Expand", ["x3", "target"], ["e"]),
        helper.make_node("Equal", ["e", "V"], ["hot"]),
        helper.make_node("Cast", ["hot"], ["hotf"], to=_ONNX[cast_to or dtype]),
        helper.make_node("MatMul", ["hotf", "W"], ["y"], name="embed"),
    ]
    if last != 1:  # x {B, L} -> {B, L, 1} -> tiled to {B, L, last}
        inits += [numpy_helper.from_array(np.array([0, 0, 1], np.int64), "to1"),
                  numpy_helper.from_array(np.array([1, 1, last], np.int64), "reps")]
        nodes.insert(0, helper.make_node("Reshape", ["x", "to1"], ["x3a"]))
    inputs = [helper.make_tensor_value_info("x", _ONNX[index], ["B", "L"])]
    if overridable:
        inputs.append(helper.make_tensor_value_info("V", _ONNX[index], [1, 1, k]))
    graph = helper.make_graph(nodes, "one_hot", inputs,
                              [helper.make_tensor_value_info("y", _ONNX[dtype], ["B", "L", n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _inputs(k, v0, index, seed=1, shape=(2, 40)):
    rng = np.random.default_rng(seed)
    x = rng.integers(v0 - 2, v0 + k + 2, shape).astype(index)  # some outside v0..v0 + K - 1
    x.flat[:2] = [np.iinfo(index).min, np.iinfo(index).max]
    return x


@pytest.mark.parametrize("opset", [11, 13, 17])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_gather_is_the_product_bit_for_bit(opset, dtype):
    k, n = 9, 6
    w = np.random.default_rng(3).standard_normal((k, n)).astype(dtype)
    w[0, 0], w[1, 1], w[2, 2], w[3, 3] = np.inf, np.nan, -0.0, 0.0
    w[:, 4] = -np.abs(w[:, 4])  # a column of negatives: the row of no match sums to -0
    w[4, 4] = -0.0
    if dtype == np.float32:
        w[5, 5] = np.float32(1e-40)  # a denormal, flushed by DirectML's FLOAT32 GEMM
    proto = _model(k=k, n=n, v0=3, index=np.int64 if opset == 13 else np.int32, dtype=dtype, opset=opset, weights=w)
    gathered, written = dx.load(proto), dx.load(proto, gather_one_hot=False)
    assert [p.k for p in gathered.gathered_one_hot] == [k] and written.gathered_one_hot == ()
    assert "Gather" in {n.op_type for n in gathered.nodes} and "Equal" not in {n.op_type for n in gathered.nodes}
    x = _inputs(k, 3, np.int64 if opset == 13 else np.int32)
    want = written(x)[0]
    np.testing.assert_array_equal(_bits(gathered(x)[0]), _bits(want))
    np.testing.assert_array_equal(_bits(gathered.apply(gathered.params, x)[0]), _bits(want))


def test_the_weights_gradient_is_the_products():
    proto = _model(k=7, n=3)
    gathered, written = dx.load(proto), dx.load(proto, gather_one_hot=False)
    x = _inputs(7, 0, np.int32)
    dy = np.random.default_rng(4).standard_normal((2, 40, 3)).astype(np.float32)

    def grad(model):
        return jax.grad(lambda p: jnp.sum(model.apply(p, x)[0] * dy))(model.params)["W"]
    np.testing.assert_allclose(np.asarray(grad(gathered)), np.asarray(grad(written)), rtol=1e-6, atol=1e-6)
    replaced = {"W": gathered.params["W"] * 2}  # a replaced weight is read through the table
    np.testing.assert_array_equal(np.asarray(gathered.apply(replaced, x)[0]),
                                  np.asarray(written.apply(replaced, x)[0]))


def test_onnx_runtime_agrees_on_finite_weights():
    proto = _model(k=11, n=4, v0=-5)
    x = _inputs(11, -5, np.int32)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(np.asarray(dx.load(proto)(x)[0]), session.run(None, {"x": x})[0])


@pytest.mark.parametrize("case", ["values out of order", "last dimension 3", "overridable values", "cast to FLOAT16"])
def test_what_is_not_a_one_hot_product_stays(case):
    kw = {"values out of order": dict(values=np.arange(9)[::-1]), "last dimension 3": dict(last=3),
          "overridable values": dict(overridable=True), "cast to FLOAT16": dict(cast_to=np.float16)}[case]
    proto = _model(**kw)
    if case == "cast to FLOAT16":  # MatMul of FLOAT16 by FLOAT32 is no valid graph: checked by the rewrite alone
        from dmljax._src.onnx import one_hot, qdq  # noqa: PLC0415
        values = qdq.const_values(proto.graph, {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer})
        nodes, done = one_hot.rewrite(proto, proto.graph.node, values, set(), ["y"])
        assert done == () and list(nodes) == list(proto.graph.node)
        return
    model = dx.load(proto)
    assert model.gathered_one_hot == () and "Equal" in {n.op_type for n in model.nodes}


def test_a_bad_option_is_refused():
    with pytest.raises(dx.OnnxImportError, match="gather_one_hot"):
        dx.load(_model(), gather_one_hot="yes")


@settings(max_examples=12, deadline=None)
@given(k=st.integers(1, 40), n=st.integers(1, 9), v0=st.integers(-300, 300), wide=st.booleans(),
       seed=st.integers(0, 2**16))
def test_fuzz_the_gather_is_the_product(k, n, v0, wide, seed):
    index = np.int64 if wide else np.int32
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((k, n)).astype(np.float32) * rng.choice([0.0, 1e-39, 1.0, 1e30], (k, n)).astype(np.float32)
    proto = _model(k=k, n=n, v0=v0, index=index, weights=w)
    x = _inputs(k, v0, index, seed=seed, shape=(1, 17))
    gathered = dx.load(proto)
    assert len(gathered.gathered_one_hot) == 1
    np.testing.assert_array_equal(_bits(gathered(x)[0]), _bits(dx.load(proto, gather_one_hot=False)(x)[0]))


def test_two_products_of_one_cast_under_one_name():
    # two MatMul nodes named alike read the same one-hot rows: both read as gathers, each with its
    # own values (the rewrite names them by the node's place), the Cast and Equal dropped once
    proto = _model(k=6, n=3)
    w2 = np.random.default_rng(9).standard_normal((6, 2)).astype(np.float32)
    proto.graph.initializer.append(numpy_helper.from_array(w2, "W2"))
    proto.graph.node.append(helper.make_node("MatMul", ["hotf", "W2"], ["y2"], name="embed"))
    proto.graph.output.append(helper.make_tensor_value_info("y2", TensorProto.FLOAT, ["B", "L", 2]))
    gathered, written = dx.load(proto), dx.load(proto, gather_one_hot=False)
    assert len(gathered.gathered_one_hot) == 2 and "Cast" not in {n.op_type for n in gathered.nodes}
    x = _inputs(6, 0, np.int32)
    for a, b in zip(gathered(x), written(x)):
        np.testing.assert_array_equal(_bits(a), _bits(b))
