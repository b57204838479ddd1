"""ONNX's preview-domain operators (Adam, FlexAttention) and the ai.onnx generators folded at load
(MelWeightMatrix) beyond what ONNX's node tests reach (tests/onnx/test_onnx_node.py runs those): each
form of a row against ONNX's reference evaluator."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.errors import ValidationError  # noqa: E402
from dmljax._src.onnx import export  # noqa: E402
from dmljax._src.onnx.table import Call, _runtime_dtype, find_rule  # noqa: E402

_TRAINING, _PREVIEW = "ai.onnx.preview.training", "ai.onnx.preview"


def _adam_model(n: int, attrs: dict):
    xs = [f"{p}{i}" for p in "XGVH" for i in range(n)]
    node = helper.make_node("Adam", ["R", "T", *xs], [f"{p}{i}_new" for p in "XVH" for i in range(n)],
                            domain=_TRAINING, **attrs)
    inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 3]) for x in ["T", *xs]]
    inputs[0] = helper.make_tensor_value_info("T", TensorProto.INT64, [])
    g = helper.make_graph([node], "adam", inputs,
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, 3]) for o in node.output],
                          [numpy_helper.from_array(np.array(0.05, np.float32), "R")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid(_TRAINING, 1)])


@pytest.mark.parametrize("t_static, step, attrs", [
    (False, 3, {"alpha": 0.8, "beta": 0.95, "epsilon": 1e-3}),
    pytest.param(True, 7, {"norm_coefficient": 0.1, "norm_coefficient_post": 0.05}, marks=pytest.mark.slow),
    pytest.param(True, 0, {"norm_coefficient_post": 0.2}, marks=pytest.mark.slow),
    pytest.param(False, 0, {"norm_coefficient": 0.1}, marks=pytest.mark.slow),
], ids=["runtime_step", "static_step_norms", "static_step_zero", "runtime_step_zero"])
def test_adam_matches_onnx_reference(t_static, step, attrs):
    """ADAM_OPTIMIZER with the bias correction (T > 0), without it (T = 0: T = 1 and a LearningRate that
    cancels the correction), T static or a graph input (IF between the two), two tensors at once."""
    rng = np.random.default_rng(0)
    m = _adam_model(2, attrs)
    values = {f"{p}{i}": rng.standard_normal((2, 3)).astype(np.float32) for p in "XGVH" for i in range(2)}
    values.update({f"H{i}": np.abs(values[f"H{i}"]) for i in range(2)})
    t = np.array(step, np.int64)
    want = ReferenceEvaluator(m).run(None, {"T": t, **values})
    model = dx.load(m, static_inputs={"T": t}) if t_static else dx.load(m)
    got = model(*values.values()) if t_static else model(t, *values.values())
    assert len(got) == len(want) == 6
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=2e-6, atol=1e-6)


def test_adam_without_bias_correction_needs_alpha_and_beta_below_one():
    m = _adam_model(1, {"alpha": 1.0})
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValidationError, match="alpha 1.0 and beta 0.999 with a step T that may be 0 or less"):
        dx.load(m, static_inputs={"T": np.array(0, np.int64)})(x, x, x, x)


@pytest.mark.parametrize("inputs, dtype", [
    ((8, 16, 8192, 0.0, 4096.0), None),
    ((13, 64, 16000, 125.0, 3800.0), TensorProto.DOUBLE),
    ((4, 31, 22050, 300.0, 11025.0), TensorProto.FLOAT16),
])
def test_mel_weight_matrix_matches_onnx_reference(inputs, dtype):
    """The row's own constant (the loader folds a node of static inputs by ONNX's reference evaluator, so the
    node test reaches the row only through the evaluator): the lowering itself against the reference."""
    values = [np.int64(v) for v in inputs[:3]] + [np.float32(v) for v in inputs[3:]]
    attrs = {} if dtype is None else {"output_datatype": dtype}
    node = helper.make_node("MelWeightMatrix", ["n", "d", "r", "lo", "hi"], ["y"], **attrs)
    g = helper.make_graph([node], "mel", [helper.make_tensor_value_info(k, TensorProto.INT64 if i < 3 else
                                                                        TensorProto.FLOAT, [])
                                          for i, k in enumerate(["n", "d", "r", "lo", "hi"])],
                          [helper.make_tensor_value_info("y", dtype or TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    want = ReferenceEvaluator(m).run(None, dict(zip(["n", "d", "r", "lo", "hi"], values)))[0]
    got = find_rule("MelWeightMatrix", 17).lower(Call("MelWeightMatrix", 17, [np.asarray(v) for v in values], attrs, 1))[0]
    assert got.dtype == _runtime_dtype(want.dtype) and got.shape == want.shape  # FLOAT64 needs JAX's 64-bit mode
    np.testing.assert_array_equal(got, want.astype(got.dtype))


def _flex(score_nodes, score_consts=()):
    score = helper.make_graph(score_nodes, "score_mod", [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, None)], list(score_consts))
    node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], domain=_PREVIEW, name="flex")
    node.attribute.append(helper.make_attribute("score_mod", score))
    shape = [1, 2, 3, 4]
    g = helper.make_graph([node], "flex", [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape) for x in "qkv"],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                          [numpy_helper.from_array(np.array(0.25, np.float32), "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid(_PREVIEW, 1)])


def test_flex_attention_score_mod_reads_the_enclosing_graph():
    """A score_mod subgraph that reads an initializer of the main graph by name (ONNX's outer scope), against
    the reference evaluator's run of the same subgraph holding the value itself (it reads no outer scope)."""
    m = _flex([helper.make_node("Mul", ["s", "w"], ["s_out"])])
    inner = _flex([helper.make_node("Mul", ["s", "w"], ["s_out"])], [numpy_helper.from_array(np.array(0.25, np.float32),
                                                                                            "w")])
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, 2, 3, 4)).astype(np.float32) for _ in range(3))
    want = ReferenceEvaluator(inner).run(None, {"q": q, "k": k, "v": v})[0]
    np.testing.assert_allclose(np.asarray(dx.load(m)(q, k, v)[0]), want, rtol=1e-5, atol=1e-6)


def test_an_unmappable_node_in_a_score_mod_is_named_at_load():
    m = _flex([helper.make_node("Det", ["s"], ["d"], name="det"), helper.make_node("Add", ["s", "d"], ["s_out"])])
    with pytest.raises(dx.OnnxImportError, match=r"node 'flex/score_mod/det' \(Det"):
        dx.load(m)


def _linear_attention(t: int, hq: int = 2, hkv: int = 1, dk: int = 4):
    node = helper.make_node("LinearAttention", ["q", "k", "v", "", "d", "b"], ["y", "s"], q_num_heads=hq,
                            kv_num_heads=hkv)
    shapes = {"q": [1, t, hq * dk], "k": [1, t, hkv * dk], "v": [1, t, hkv * dk], "d": [1, t, hkv], "b": [1, t, hkv]}
    g = helper.make_graph([node], "linear_attention",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in shapes.items()],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, t, hq * dk]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, hkv, dk, dk])])
    rng = np.random.default_rng(t)
    ins = {n: rng.standard_normal(s).astype(np.float32) * 0.3 for n, s in shapes.items()}
    ins["d"], ins["b"] = -np.abs(ins["d"]), np.abs(ins["b"])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 27)]), ins


@pytest.mark.slow
def test_linear_attention_past_the_unrolled_length_runs_as_a_scan():
    """More tokens than UNROLL: the same step under lax.scan, against ONNX's reference."""
    m, ins = _linear_attention(260)
    want = ReferenceEvaluator(m).run(None, ins)
    for g, w in zip(dx.load(m)(*ins.values()), want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_linear_attention_is_a_directml_graph():
    """Unrolled, the recurrence is DirectML operators only: the DirectML graph export expresses it."""
    m, ins = _linear_attention(3)
    model = dx.load(m)
    graph, _ = export.to_graph(model, list(ins.values()))
    kinds = {n.type for n in graph.nodes}
    assert {"DML_OPERATOR_GEMM", "DML_OPERATOR_SLICE1", "DML_OPERATOR_JOIN"} <= kinds, kinds
