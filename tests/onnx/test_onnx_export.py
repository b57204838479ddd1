"""ONNX -> DirectML graph -> DxDispatch model -> `dmljax run`: the exported model is valid against
the DxDispatch schema and reproduces the imported model's outputs bit for bit (and ONNX Runtime's
within float32 rounding); what has no DirectML form is refused, naming each step."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the reference for the exported models")

from onnx import numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.cli import main  # noqa: E402
from dmljax._src.dxdispatch.model import load_json  # noqa: E402
from dmljax._src.dxdispatch.schema import structure_problems  # noqa: E402
from dmljax._src.onnx import export  # noqa: E402
from tests import tiers  # noqa: E402
from tests.onnx import onnx_models as models  # noqa: E402
from tests.onnx.test_onnx_contrib import CASES as CONTRIB_CASES  # noqa: E402  (its one-node com.microsoft models)


def _round_trip(m, tmp_path, capsys, inputs, as_written=False):
    path = tmp_path / "model.onnx"
    onnx.save(m, path)
    np.savez(tmp_path / "inputs.npz", **inputs)
    out = tmp_path / "model.json"
    assert main(["onnx", "export-dxdispatch", str(path), str(out), "--inputs", str(tmp_path / "inputs.npz")]
                + (["--as-written"] if as_written else [])) == 0
    printed = capsys.readouterr().out
    assert "DirectML operators in one DML_GRAPH_DESC" in printed
    document = load_json(out.read_text())
    assert structure_problems(document) == []
    assert main(["run", str(out), "--no-timing", "--out", str(tmp_path / "outputs")]) == 0
    capsys.readouterr()
    model = dx.load(path, fuse_qdq=not as_written, fold_conv=not as_written)
    mine = model(*[inputs[n] for n, _, _ in model.inputs])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    theirs = sess.run(None, inputs)
    for name, y, w in zip(model.outputs, mine, theirs):
        got = np.load(tmp_path / "outputs" / f"{name}.npy")
        assert got.shape == np.shape(y) and got.dtype == np.asarray(y).dtype
        assert got.tobytes() == np.asarray(y).tobytes(), f"{name}: the DxDispatch model's bits differ"
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    return document


def test_a_classifier_round_trips_through_dxdispatch(tmp_path, capsys):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    doc = _round_trip(models.classifier(), tmp_path, capsys, {"x": x})
    types = [d["type"] for k, d in doc["dispatchables"].items() if k != "graph"]
    assert types == ["DML_OPERATOR_GEMM", "DML_OPERATOR_ACTIVATION_RELU", "DML_OPERATOR_GEMM",
                     "DML_OPERATOR_ELEMENT_WISE_ADD"]
    graph = doc["dispatchables"]["graph"]
    assert set(graph["bindings"].values()) == {"w1", "b1", "w2", "b2"}  # weights bound at initialization
    add = doc["dispatchables"]["node_3_element_wise_add"]["desc"]
    assert add["BTensor"] == {"DataType": "FLOAT32", "Sizes": [3, 3], "Strides": [0, 1], "Flags": "OWNED_BY_DML"}


@pytest.mark.slow
def test_descs_carry_broadcasts_transposes_and_types_between_operators(tmp_path, capsys):
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    # as written: load would otherwise fold the Conv's per-channel Add into its bias (onnx/folds.py)
    doc = _round_trip(models.glue_model(), tmp_path, capsys, {"x": x}, as_written=True)
    types = [d["type"] for k, d in doc["dispatchables"].items() if k != "graph"]
    assert "DML_OPERATOR_ELEMENT_WISE_IDENTITY" in types  # the transposed tensor, reshaped: copied packed
    assert "DML_OPERATOR_CAST" in types  # the BOOL comparison cast to FLOAT32
    bias = [d["desc"] for d in doc["dispatchables"].values() if d["type"] == "DML_OPERATOR_ELEMENT_WISE_ADD"][0]
    assert bias["BTensor"]["Strides"] == [0, 1, 0, 0]


@pytest.mark.slow
def test_an_if_with_a_static_condition_exports_its_branch(tmp_path, capsys):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    doc = _round_trip(models.if_model(static_condition=False), tmp_path, capsys, {"x": x})
    # the outer graph's Mul runs (its output unused, as in the ONNX graph), the else branch's Sub gives y
    assert [d["type"] for k, d in doc["dispatchables"].items() if k != "graph"] == [
        "DML_OPERATOR_ELEMENT_WISE_MULTIPLY", "DML_OPERATOR_ELEMENT_WISE_SUBTRACT"]


def test_control_flow_that_does_not_fold_is_refused_by_name(tmp_path, capsys):
    path = tmp_path / "if.onnx"
    onnx.save(models.if_model(), path)
    assert main(["onnx", "export-dxdispatch", str(path), str(tmp_path / "out.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"dmljax onnx export-dxdispatch: error: {path}: the model has no DirectML graph form:")
    assert "lax.cond (an If whose condition is known only at run time): DirectML has no control flow" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out.json").exists()
    with pytest.raises(dx.OnnxImportError, match="DirectML graph output 'y' depends on the steps above"):
        model = dx.load(path)
        export.to_graph(model, [np.ones((2, 3), np.float32)])


def test_an_existing_file_is_not_overwritten(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(models.classifier(), path)
    out = tmp_path / "m.json"
    out.write_text("mine")
    assert main(["onnx", "export-dxdispatch", str(path), str(out)]) == 1
    assert "exists; pass --force to overwrite it" in capsys.readouterr().err
    assert out.read_text() == "mine"
    assert main(["onnx", "export-dxdispatch", str(path), str(out), "--force"]) == 0
    assert json.loads(out.read_text())["dispatchables"]["graph"]["type"] == "DML_GRAPH_DESC"


@pytest.mark.slow
def test_the_graph_runs_in_process_as_the_model_does():
    model = dx.load(models.glue_model())
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    graph, runtime = export.to_graph(model, [x])
    got = graph.compile().run(*runtime)
    for g, y in zip(got, model(x)):
        np.testing.assert_array_equal(np.reshape(g, np.shape(y)), y)


def test_a_model_that_has_run_exports_too():
    """The export traces a new function: JAX's cached trace of model.apply would call no operator."""
    model = dx.load(models.classifier())
    x = np.ones((2, 4), np.float32)
    (y,) = model(x)
    graph, runtime = export.to_graph(model, [x])
    assert [n.type for n in graph.nodes] == ["DML_OPERATOR_GEMM", "DML_OPERATOR_ACTIVATION_RELU",
                                             "DML_OPERATOR_GEMM", "DML_OPERATOR_ELEMENT_WISE_ADD"]


DATA = pathlib.Path(onnx.__file__).parent / "backend" / "test" / "data"
DATA_MODELS = sorted(DATA.glob("*/*/model.onnx"))


@pytest.mark.slow
def test_every_data_model_that_loads_exports_to_the_same_bits():
    """The onnx package's data models (tests/onnx/test_onnx_models.py): each that loads becomes a
    DirectML graph whose DxDispatch form is valid and which gives the model's very bits."""
    assert DATA_MODELS
    exported = 0
    for path in DATA_MODELS:
        try:
            model = dx.load(path)
        except dx.OnnxImportError:
            continue  # test_onnx_models.py holds why each is refused
        inputs = [numpy_helper.to_array(onnx.load_tensor(p))
                  for p in sorted((path.parent / "test_data_set_0").glob("input_*.pb"))]
        want = model(*inputs)
        graph, runtime = export.to_graph(model, inputs)
        got = graph.compile().run(*runtime)
        for g, w in zip(got, want):
            assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), path.parent.name
        document = export.to_dxdispatch(graph, runtime, [np.shape(w) for w in want])
        assert structure_problems(json.loads(json.dumps(document))) == [], path.parent.name
        exported += 1
    assert exported >= 120


@settings(max_examples=tiers.by_tier(5, 100), deadline=None)
@given(st.data())
def test_export_of_corrupted_models_is_one_clear_error_never_a_traceback(data):
    good = bytearray(models.glue_model().SerializeToString())
    for _ in range(data.draw(st.integers(1, 6))):
        good[data.draw(st.integers(0, len(good) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(len(good) // 2, len(good)))
    with tempfile.TemporaryDirectory() as work:
        path, out = pathlib.Path(work) / "m.onnx", pathlib.Path(work) / "m.json"
        path.write_bytes(bytes(good[:cut]))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = main(["onnx", "export-dxdispatch", str(path), str(out)])
        text = err.getvalue()
        assert status in (0, 1), status
        assert "Traceback" not in text
        if status == 1:
            assert text.startswith("dmljax onnx export-dxdispatch: error: "), text
            assert not out.exists()
        else:
            assert structure_problems(load_json(out.read_text())) == []


@pytest.mark.slow
@pytest.mark.parametrize("case", ["attention_past_unidirectional", "group_query_attention_decode_seqlens"])
def test_contrib_attention_round_trips_through_dxdispatch(case, tmp_path, capsys):
    """com.microsoft Attention (GEMM, SLICE1, MULTIHEAD_ATTENTION, JOIN) and GroupQueryAttention
    (MULTIHEAD_ATTENTION1) as DirectML graphs, to the same bits and ONNX Runtime's values."""
    m, inputs = CONTRIB_CASES[case](np.random.default_rng(0))
    doc = _round_trip(m, tmp_path, capsys, inputs)
    types = {d["type"] for k, d in doc["dispatchables"].items() if k != "graph"}
    assert types & {"DML_OPERATOR_MULTIHEAD_ATTENTION", "DML_OPERATOR_MULTIHEAD_ATTENTION1"}, types
