"""dmljax.onnx.load: parameters as a pytree, one jitted program, static folding, symbolic
dimensions, every unmappable node in one error, bad files as one clear error (fuzzed),
jax.grad through an imported classifier."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402
from onnx import numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from tests import tiers  # noqa: E402
from tests.onnx import onnx_models as models  # noqa: E402


def _reference(x, m):
    w = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    return np.maximum(x @ w["w1"] + w["b1"], 0) @ w["w2"] + w["b2"]


def test_load_gives_parameters_and_a_pure_function():
    m = models.classifier()
    model = dx.load(m)
    assert set(model.params) == {"w1", "b1", "w2", "b2"}  # the int64 Reshape shape is folded, not a parameter
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    (y,) = model(x)
    np.testing.assert_allclose(y, _reference(x, m), rtol=1e-5, atol=1e-5)
    (y2,) = model.apply(model.params, x)
    np.testing.assert_array_equal(y, y2)
    assert [n.dml for n in model.nodes if n.op_type == "Gemm"] == [("DML_OPERATOR_GEMM",)]


def test_the_whole_graph_is_one_jitted_computation():
    model = dx.load(models.classifier())
    x = jnp.ones((2, 4), jnp.float32)
    jaxpr = jax.make_jaxpr(model.apply)(model.params, x)
    assert [e.primitive.name for e in jaxpr.eqns] == ["jit"]  # one program, no per-node dispatch
    hlo = model.apply.lower(model.params, x).as_text()
    assert hlo.count("func.func public @main") == 1


def test_symbolic_dimensions_are_specialised_per_call():
    model = dx.load(models.classifier())
    assert model.inputs[0][2] == ("N", 4)
    for n in (1, 3):
        (y,) = model(np.ones((n, 4), np.float32))
        assert y.shape == (n, 3)


def test_a_constant_node_the_reference_evaluator_cannot_run_is_folded_by_its_own_rule():
    # BERT's position ids: GatherElements of a constant row longer than 64, where ONNX's reference
    # evaluator fails (np.choose takes at most 64 choices); the node's own rule folds it instead
    import onnx  # noqa: PLC0415
    h = onnx.helper
    table = np.arange(100, dtype=np.int32)[None] * 3
    index = np.array([[5, 70, 99, 0]], np.int32)
    graph = h.make_graph(
        [h.make_node("GatherElements", ["table", "index"], ["ids"], axis=1), h.make_node("Add", ["ids", "x"], ["y"])],
        "fold", [h.make_tensor_value_info("x", onnx.TensorProto.INT32, (1, 4))],
        [h.make_tensor_value_info("y", onnx.TensorProto.INT32, (1, 4))],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(index, "index")])
    model = dx.load(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]))
    x = np.array([[1, 2, 3, 4]], np.int32)
    (y,) = model(x)
    np.testing.assert_array_equal(y, np.array([[15, 210, 297, 0]]) + x)


def test_every_unmappable_node_is_reported_at_load_in_one_error():
    with pytest.raises(dx.OnnxImportError) as e:
        dx.load(models.unsupported())
    text = str(e.value)
    assert text.startswith("dmljax.onnx.load (ONNX model <model>):")
    assert "node 'det1' (Det, ai.onnx opset 17) has no mapping onto DirectML operators" in text
    assert "node 'strings' (StringNormalizer, ai.onnx opset 17) has no mapping" in text
    assert "node 'reshape_dynamic' (Reshape, ai.onnx opset 17) needs graph input 'shape' as a static value" in text
    assert len(e.value.violations) == 3
    assert isinstance(e.value, dmljax_validation_error())


def dmljax_validation_error():
    import dmljax
    return dmljax.ValidationError


def test_static_inputs_fix_a_graph_input_at_load():
    m = models.unsupported()
    del m.graph.node[1]
    del m.graph.node[-1]
    m.graph.node[-1].input[0] = "a"
    m.graph.output[0].name = "c"
    model = dx.load(m, static_inputs={"shape": np.array([3, 2], np.int64)})
    (y,) = model(np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    np.testing.assert_array_equal(y, np.maximum(np.arange(6) - 2, 0).reshape(3, 2))


def test_grad_fine_tunes_an_imported_classifier():
    model = dx.load(models.classifier(seed=3))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0).astype(np.int32)

    def loss(params):
        (logits,) = model.apply(params, x)
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(32), labels])

    params = model.params
    losses = []
    step = jax.jit(jax.value_and_grad(loss))
    for _ in range(8):
        value, grads = step(params)
        losses.append(float(value))
        params = jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)
    assert losses[-1] < 0.8 * losses[0], losses


def _message(source) -> str:
    with pytest.raises(dx.OnnxImportError) as e:
        dx.load(source)
    return str(e.value)


def test_bad_files_give_one_clear_error(tmp_path):
    good = models.classifier().SerializeToString()
    (tmp_path / "text.onnx").write_text("not a model at all")
    assert "cannot be read as an ONNX model" in _message(tmp_path / "text.onnx") or "is not" in _message(
        tmp_path / "text.onnx")
    (tmp_path / "cut.onnx").write_bytes(good[: len(good) // 2])
    assert "'cut.onnx'" in _message(tmp_path / "cut.onnx")
    assert "does not exist" in _message(tmp_path / "missing.onnx")
    old = models.classifier(opset=17)
    old.opset_import[0].version = 99
    assert "opset 99; supported: 1 to" in _message(old)


def test_missing_external_data_is_named(tmp_path):
    m = models.classifier()
    onnx.save_model(m, tmp_path / "big.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="big.data", size_threshold=0)
    model = dx.load(tmp_path / "big.onnx")
    assert set(model.params) == {"w1", "b1", "w2", "b2"}
    (tmp_path / "big.data").unlink()
    text = _message(tmp_path / "big.onnx").lower()
    assert "has external data that is missing" in text and "big.data" in text


@settings(max_examples=tiers.by_tier(25, 300), deadline=None)
@given(st.data())
def test_corrupted_bytes_give_one_clear_error_never_a_traceback(data):
    good = models.classifier().SerializeToString()
    b = bytearray(good)
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(b) - 1))
        b[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(b)))
    try:
        model = dx.load(bytes(b[:cut]))
    except dx.OnnxImportError as e:
        assert str(e).startswith("dmljax.onnx.load (ONNX model <model>):")
        return
    assert isinstance(model, dx.OnnxModel)  # a flip that leaves a valid model loads


def _attention_with_mask(mask_shape, dims=None):
    """An ai.onnx Attention of queries {2, 2, 3, 4} over keys {2, 2, 5, 4} with an attn_mask; ``dims`` makes
    every declared shape symbolic."""
    h = onnx.helper
    shapes = {"q": [2, 2, 3, 4], "k": [2, 2, 5, 4], "v": [2, 2, 5, 4], "m": list(mask_shape)}
    node = h.make_node("Attention", ["q", "k", "v", "m"], ["y"], name="attend")
    g = h.make_graph([node], "attention", [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT,
                                                                    [f"{n}{i}" for i in range(len(s))] if dims else s)
                                           for n, s in shapes.items()],
                     [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, list("abcd") if dims else [2, 2, 3, 4])])
    values = [np.zeros(s, np.float32) for s in shapes.values()]
    return h.make_model(g, opset_imports=[h.make_opsetid("", 23)]), values


def test_an_attention_mask_that_cannot_broadcast_is_refused_at_load_or_at_the_call():
    """Declared static, the attn_mask's shape is checked at load (node, operator, opset, reason); symbolic, at
    the call, in dmljax's error rather than JAX's broadcasting error."""
    m, _ = _attention_with_mask((4, 5))
    with pytest.raises(dx.OnnxImportError, match=r"node 'attend' \(Attention, ai.onnx opset 23\) attn_mask has shape "
                                                 r"\[4, 5\]; supported: a shape that broadcasts to \[2, 2, 3, 5\]"):
        dx.load(m)
    m, values = _attention_with_mask((4, 5), dims=True)
    model = dx.load(m)
    with pytest.raises(ValueError, match=r"Attention \(ai.onnx\) attn_mask has shape \[4, 5\]"):
        model(*values)
    dx.load(_attention_with_mask((2, 1, 3, 4))[0])  # broadcast, its last axis padded to the 5 keys: loads
