"""`dmljax compare MODEL.onnx --reference DIR`: the first node beyond budget, judged on the
reference's own inputs, never a node downstream of the fault."""

from __future__ import annotations


import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package (the test extra installs it)")
from onnx import TensorProto, helper  # noqa: E402

from dmljax._src.cli import main  # noqa: E402
from dmljax._src.compare.onnx import compare_onnx, ort_file_name  # noqa: E402
from tests.vendor_compare.faults import onnx_dump, ulp_step  # noqa: E402

X = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)


def split_sigmoid_mul(folder):
    """x -> Split -> (a, b); y = a * sigmoid(b) * 0.5 (the fused pattern of a GLU)."""
    nodes = [helper.make_node("Split", ["x"], ["a", "b"], axis=1, name="split"),
             helper.make_node("Sigmoid", ["b"], ["s"], name="sigmoid"),
             helper.make_node("Mul", ["a", "s"], ["m"], name="mul"),
             helper.make_node("Mul", ["m", "half"], ["y"], name="scale")]
    g = helper.make_graph(nodes, "glu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])])
    path = folder / "glu.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def masked(folder):
    """y = where(x > 0, x, -1) + 1."""
    nodes = [helper.make_node("Greater", ["x", "zero"], ["keep"], name="greater"),
             helper.make_node("Where", ["keep", "x", "minus"], ["w"], name="where"),
             helper.make_node("Add", ["w", "one"], ["y"], name="add")]
    g = helper.make_graph(nodes, "masked", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
                           helper.make_tensor("minus", TensorProto.FLOAT, [], [-1.0]),
                           helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    path = folder / "masked.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def _compare(capsys, *args):
    status = main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("kind", ["tensorproto", pytest.param("npz", marks=pytest.mark.slow)])
def test_clean_reference_is_silent(tmp_path, capsys, kind):
    model = split_sigmoid_mul(tmp_path)
    ref = onnx_dump(model, {"x": X}, tmp_path / "ref", kind)
    status, out, err = _compare(capsys, model, "--reference", ref / "reference.npz" if kind == "npz" else ref)
    assert (status, err) == (0, ""), out
    assert "All 5 compared tensors are within" in out  # a, b, s, m, y


def test_a_sigmoid_of_the_wrong_operand_names_the_mul(tmp_path, capsys):
    model = split_sigmoid_mul(tmp_path)
    wrong = lambda m, v: (v["a"] * (1 / (1 + np.exp(-v["a"])))).astype(np.float32)  # noqa: E731  a*sigmoid(a)
    ref = onnx_dump(model, {"x": X}, tmp_path / "ref", edit={"m": wrong})
    status, out, _ = _compare(capsys, model, "--reference", ref)
    assert status == 1
    assert "the first: m from node 'mul' (Mul) (DML_OPERATOR_ELEMENT_WISE_MULTIPLY)" in out
    assert "1 of 5 beyond budget" in out  # 'scale' consumed the faulty m and is right on it
    first = compare_onnx(model, ref).entries[3].comparison.first[0]
    i, j = first.position
    assert first.inputs == {"a": pytest.approx(float(X[i, j])), "s": pytest.approx(1 / (1 + np.exp(-X[i, j + 4])))}


@pytest.mark.parametrize("beyond", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_an_upstream_fault_is_not_blamed_downstream(tmp_path, capsys, beyond):
    model = split_sigmoid_mul(tmp_path)
    budget = 4  # ACTIVATION_SIGMOID's FLOAT32 budget
    ref = onnx_dump(model, {"x": X}, tmp_path / "ref", edit={"s": lambda s, v: ulp_step(s, budget + beyond)})
    status, out, _ = _compare(capsys, model, "--reference", ref)
    assert status == 1 and "1 of 5 beyond budget; the first: s from node 'sigmoid'" in out


def test_nan_for_a_masked_value_names_the_where(tmp_path, capsys):
    model = masked(tmp_path)
    nan_masked = lambda w, v: np.where(v["keep"], w, np.float32(np.nan)).astype(np.float32)  # noqa: E731
    ref = onnx_dump(model, {"x": X}, tmp_path / "ref", edit={"w": nan_masked})
    status, out, _ = _compare(capsys, model, "--reference", ref)
    assert status == 1 and "the first: w from node 'where' (Where)" in out
    assert f"{int((X <= 0).sum())} NaN where a value is expected" in out


def test_outputs_only_judges_nodes_on_dmljax_s_inputs_and_says_so(tmp_path, capsys):
    model = split_sigmoid_mul(tmp_path)
    ref = onnx_dump(model, {"x": X}, tmp_path / "ref", edit={"s": lambda s, v: ulp_step(s, 40)})
    for name in ("a", "b", "s", "m"):
        (ref / ort_file_name(name)).unlink()
    status, out, _ = _compare(capsys, model, "--reference", ref, "--out", tmp_path / "report")
    assert status == 1 and "the first: y from node 'scale'" in out
    assert "4 of the model's 5 node outputs are not in the reference" in out
    assert "Inputs not in the reference, computed by dmljax: m" in (tmp_path / "report" / "report.md").read_text()


@pytest.mark.slow
def test_graph_inputs_from_inputs_option(tmp_path, capsys):
    model = split_sigmoid_mul(tmp_path)
    ref = onnx_dump(model, {"x": X}, tmp_path / "ref")
    (ref / "x.tensorproto").unlink()
    status, _, err = _compare(capsys, model, "--reference", ref)
    assert status == 2 and "has no value of the model's input x" in err and "--inputs" in err
    np.save(tmp_path / "x.npy", X)
    assert _compare(capsys, model, "--reference", ref, "--inputs", tmp_path / "x.npy")[0] == 0


def test_ort_file_names():
    assert ort_file_name("layer.0/attn:out") == "layer_0_attn_out.tensorproto"


# ------------------------------------------------------------------ bad input
def _error(capsys, *args) -> str:
    status, out, err = _compare(capsys, *args)
    assert status == 2 and out == "" and "Traceback" not in err, (out, err)
    return err


def test_reference_of_another_model(tmp_path, capsys):
    model = split_sigmoid_mul(tmp_path)
    other = masked(tmp_path)
    ref = onnx_dump(other, {"x": X}, tmp_path / "ref")
    (ref / ort_file_name("x")).unlink()
    err = _error(capsys, model, "--reference", ref)  # it shares the name y only
    assert "no value of the model's input x" in err and "is it the reference of another model?" in err
    (ref / ort_file_name("y")).unlink()
    err = _error(capsys, model, "--reference", ref)
    assert "holds no tensor of this model (it holds " in err and "is it the reference of another model?" in err


@pytest.mark.slow
def test_reference_of_other_shapes(tmp_path, capsys):
    model = split_sigmoid_mul(tmp_path)
    ref = onnx_dump(model, {"x": X}, tmp_path / "ref")
    t = onnx.numpy_helper.from_array(np.zeros((3, 8), np.float32), "x")
    (ref / "x.tensorproto").write_bytes(t.SerializeToString())
    assert "x: holds float32 [3, 8]; the model's input is float32 [2, 8]" in _error(capsys, model, "--reference", ref)


def test_model_that_does_not_parse(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    assert "bad.onnx: cannot be imported" in _error(capsys, bad, "--reference", tmp_path)


@pytest.mark.slow
def test_corrupt_reference_file(tmp_path, capsys):
    model = split_sigmoid_mul(tmp_path)
    ref = onnx_dump(model, {"x": X}, tmp_path / "ref")
    (ref / "s.tensorproto").write_bytes(b"\xff\xff\xff")
    assert "s.tensorproto" in _error(capsys, model, "--reference", ref)
