"""If, Loop and Scan: subgraphs mapped node by node, run as lax.cond, lax.scan and lax.while_loop
(a static If folded to its branch, a Loop unrolled where its body needs the iteration number
static), values from the enclosing scope read inside; ONNX's own node tests of the three; ONNX
Runtime as the reference for the hand-built models."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the reference for the control-flow models")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from onnx import helper  # noqa: E402
from onnx.backend.test.case import node as node_cases  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.cli import main  # noqa: E402
from tests.onnx import onnx_models as models  # noqa: E402
from tests.onnx.test_onnx_node import run_case  # noqa: E402
from tests.vendor_compare.faults import onnx_dump  # noqa: E402

NODE_TESTS = ("test_if", "test_loop11", "test_scan_sum", "test_scan9_sum", "test_scan9_multi_state", "test_scan9_scalar")
"""ONNX's node tests of If, Loop and Scan on tensors (the others hold sequences or optionals,
which DirectML has no form of)."""


def _ort(m, *inputs):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})


def _primitives(jaxpr) -> set[str]:
    """The primitives a jaxpr holds, nested ones included; a cond that picks an operator's form by
    platform (lax.platform_dependent: its index is a platform_index) is named "platform cond"."""
    out = set()
    made_by = {v: e.primitive.name for e in jaxpr.eqns for v in e.outvars}
    for e in jaxpr.eqns:
        by_platform = e.primitive.name == "cond" and made_by.get(e.invars[0]) == "platform_index"
        out.add("platform cond" if by_platform else e.primitive.name)
        for p in e.params.values():
            for sub in (p if isinstance(p, (list, tuple)) else [p]):
                if hasattr(sub, "jaxpr") and hasattr(sub.jaxpr, "eqns"):
                    out |= _primitives(sub.jaxpr)
                elif hasattr(sub, "eqns"):
                    out |= _primitives(sub)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", NODE_TESTS)
def test_onnx_node_tests_of_control_flow_pass(name):
    (case,) = [c for c in node_cases.collect_testcases(None) if c.name == name]
    assert run_case(case) == "pass"


def test_if_with_a_runtime_condition_is_lax_cond_over_the_outer_scope():
    m = models.if_model()
    model = dx.load(m)
    for x in (np.array([[1, 2, 3], [-1, 0, 4]], np.float32), np.array([[-1, 2, -3], [-1, 0, -4]], np.float32)):
        (y,) = model(x)
        np.testing.assert_allclose(y, _ort(m, x)[0], rtol=1e-6)
    jaxpr = jax.make_jaxpr(model.apply)(model.params, x).jaxpr
    assert "cond" in _primitives(jaxpr)


@pytest.mark.slow
def test_if_is_differentiable_through_the_branch_taken():
    model = dx.load(models.if_model())
    g = jax.grad(lambda p, x: model.apply(p, x)[0].sum())(model.params, np.ones((2, 3), np.float32))
    np.testing.assert_allclose(g["w"], [2, 2, 2])
    np.testing.assert_allclose(g["b"], [2, 2, 2])


@pytest.mark.parametrize("condition", [True, False])
def test_if_with_a_static_condition_folds_to_its_branch(condition):
    m = models.if_model(static_condition=condition)
    model = dx.load(m)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (y,) = model(x)
    np.testing.assert_allclose(y, _ort(m, x)[0], rtol=1e-6)
    assert "cond" not in _primitives(jax.make_jaxpr(model.apply)(model.params, x).jaxpr)


def test_loop_with_a_static_trip_count_is_lax_scan():
    m = models.loop_model(trips=4)
    model = dx.load(m)
    x = np.array([0.3, -0.2, 0.1], np.float32)
    h0 = np.array([0.5, 0.25, -1.0], np.float32)
    h, hs = model(x, h0)
    want_h, want_hs = _ort(m, x, h0)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hs, want_hs, rtol=1e-5, atol=1e-6)
    assert "scan" in _primitives(jax.make_jaxpr(model.apply)(model.params, x, h0).jaxpr)


@pytest.mark.slow
def test_a_loop_of_a_static_trip_count_is_reverse_differentiable():
    model = dx.load(models.loop_model(trips=4))
    x = np.array([0.3, -0.2, 0.1], np.float32)
    h0 = np.array([0.5, 0.25, -1.0], np.float32)
    g = jax.grad(lambda x: model(x, h0)[0].sum())(jnp.asarray(x))
    eps = 1e-3
    fd = [(model(x + eps * e, h0)[0].sum() - model(x - eps * e, h0)[0].sum()) / (2 * eps) for e in np.eye(3, dtype=np.float32)]
    np.testing.assert_allclose(g, fd, rtol=2e-2, atol=1e-3)


def test_loop_with_a_runtime_condition_is_lax_while_loop():
    m = models.while_model()
    model = dx.load(m)
    for x in (np.array([1, 2, 3], np.float32), np.array([30, 40, 50], np.float32)):
        (y,) = model(x)
        np.testing.assert_array_equal(y, _ort(m, x)[0])
    assert "while" in _primitives(jax.make_jaxpr(model.apply)(model.params, x).jaxpr)


def test_scan_runs_backwards_over_an_axis_with_outer_scope_values():
    m = models.scan_model()
    model = dx.load(m)
    s0 = np.array([1.0, -1.0], np.float32)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    s, y = model(s0, x)
    want_s, want_y = _ort(m, s0, x)
    np.testing.assert_allclose(s, want_s, rtol=1e-6)
    np.testing.assert_allclose(y, want_y, rtol=1e-6)


def test_branches_of_different_shapes_are_one_clear_error():
    m = models.if_model()
    else_g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["e"], name="sum", keepdims=1)], "else", [],
                              [models._f("e", [1, 1])])
    branch = m.graph.node[-1]
    branch.attribute[1].g.CopyFrom(else_g) if branch.attribute[1].name == "else_branch" else branch.attribute[0].g.CopyFrom(else_g)
    model = dx.load(m)
    with pytest.raises(dx.OnnxImportError, match="node 'branch' .If, ai.onnx opset 17. has branches whose outputs "
                                                 "differ in shape or type"):
        model(np.ones((2, 3), np.float32))


def test_a_branch_that_cannot_run_on_the_inputs_is_one_clear_error():
    """lax.cond traces both branches: one that DirectML refuses for these shapes (a GEMM whose K
    does not match) is named, with the remedy (static_inputs, so that only the branch taken is
    traced)."""
    m = models.if_model()
    m.graph.initializer.append(onnx.numpy_helper.from_array(np.ones((4, 2), np.float32), "k4"))
    else_g = helper.make_graph([helper.make_node("MatMul", ["x", "k4"], ["e"], name="mm")], "else", [],
                              [models._f("e", [2, 2])])
    [a for a in m.graph.node[-1].attribute if a.name == "else_branch"][0].g.CopyFrom(else_g)
    model = dx.load(m)
    with pytest.raises(dx.OnnxImportError) as e:
        model(np.ones((2, 3), np.float32))
    text = str(e.value)
    assert ("node 'branch' (If, ai.onnx opset 17) has a condition known only at run time, and its else_branch cannot "
            "run on these inputs: gemm (DML_OPERATOR_GEMM):") in text
    assert "give the inputs that decide the condition" in text


def test_a_subgraph_node_that_cannot_be_mapped_is_named_at_load():
    m = models.if_model()
    branch = m.graph.node[-1]
    then = [a for a in branch.attribute if a.name == "then_branch"][0]
    then.g.node[0].op_type = "Det"
    del then.g.node[0].input[1]
    with pytest.raises(dx.OnnxImportError, match=r"node 'branch/then_branch/add' \(Det, ai.onnx opset 17\) has "
                                                 "no mapping onto DirectML operators"):
        dx.load(m)


def test_a_loop_with_scan_outputs_and_a_runtime_trip_count_is_refused_at_load():
    m = models.loop_model()
    m.graph.initializer.pop(1)  # M becomes a graph input
    m.graph.input.append(helper.make_tensor_value_info("M", onnx.TensorProto.INT64, []))
    with pytest.raises(dx.OnnxImportError, match="needs graph input 'M' as a static value"):
        dx.load(m)


def test_info_shows_subgraphs(tmp_path, capsys):
    path = tmp_path / "if.onnx"
    onnx.save(models.if_model(), path)
    assert main(["onnx", "info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 nodes (and 2 in control-flow subgraphs)" in out
    assert ("  branch (If): lax.cond around the branches' operators, DML_OPERATOR_ELEMENT_WISE_ADD, "
            "DML_OPERATOR_ELEMENT_WISE_SUBTRACT\n    then_branch: 1 node\n      add (Add): "
            "DML_OPERATOR_ELEMENT_WISE_ADD\n    else_branch: 1 node\n") in out


@pytest.mark.slow
def test_compare_judges_a_control_flow_node_on_the_reference_values(tmp_path, capsys):
    """`dmljax compare`: an If node is evaluated on the reference's values, the outer-scope ones
    its branches read included (NodeInfo.inputs lists them after the node's own)."""
    path = tmp_path / "if.onnx"
    onnx.save(models.if_model(), path)
    info = [n for n in dx.load(path).nodes if n.op_type == "If"][0]
    assert info.inputs == ("c", "xw", "b", "x")
    ref = onnx_dump(path, {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, tmp_path / "ref", "npz")
    status = main(["compare", str(path), "--reference", str(ref / "reference.npz"), "--out", str(tmp_path / "report")])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), out
