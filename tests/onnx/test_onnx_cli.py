"""`dmljax onnx info` and `dmljax run MODEL.onnx`: mappings listed, outputs written as .npy,
bad files one message and exit status 1."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")

from dmljax._src.cli import main  # noqa: E402
from tests.onnx import onnx_models  # noqa: E402


def test_info_lists_each_nodes_mapping(tmp_path, capsys):
    onnx.save(onnx_models.classifier(), tmp_path / "c.onnx")
    assert main(["onnx", "info", str(tmp_path / "c.onnx")]) == 0
    out = capsys.readouterr().out
    assert "ai.onnx opset 17" in out and "fc1 (Gemm): DML_OPERATOR_GEMM" in out and "unsupported: none" in out


def test_info_lists_every_unsupported_node(tmp_path, capsys):
    onnx.save(onnx_models.unsupported(), tmp_path / "u.onnx")
    assert main(["onnx", "info", str(tmp_path / "u.onnx")]) == 1
    out = capsys.readouterr().out
    assert "'det1' (Det" in out and "'strings' (StringNormalizer" in out


def test_run_writes_outputs_from_given_and_random_inputs(tmp_path, capsys):
    onnx.save(onnx_models.classifier(), tmp_path / "c.onnx")
    x = np.ones((2, 4), np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(tmp_path / "c.onnx"), "--inputs", str(tmp_path / "x.npy"), "--out", str(tmp_path / "o")]) == 0
    assert np.load(tmp_path / "o" / "logits.npy").shape == (2, 3)
    np.savez(tmp_path / "in.npz", x=x)
    assert main(["run", str(tmp_path / "c.onnx"), "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "p")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "p" / "logits.npy"), np.load(tmp_path / "o" / "logits.npy"))
    assert main(["run", str(tmp_path / "c.onnx"), "--out", str(tmp_path / "r")]) == 0
    assert np.load(tmp_path / "r" / "logits.npy").shape == (1, 3)


@pytest.mark.parametrize("content", [b"not an onnx model", b"\x08\x07\x12", None])
def test_bad_files_exit_1_with_one_message(tmp_path, capsys, content):
    path = tmp_path / "m.onnx"
    if content is not None:
        path.write_bytes(content)
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("dmljax run: error: dmljax.onnx.load (ONNX model 'm.onnx'):")
    assert "Traceback" not in err


def _conv_bn():
    """Conv -> BatchNormalization: a pair load folds as ONNX Runtime does (onnx/folds.py)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for a, n in [
        (rng.standard_normal((4, 2, 3, 3)), "w"), (rng.standard_normal(4), "s"), (rng.standard_normal(4), "b"),
        (rng.standard_normal(4), "m"), (rng.uniform(0.5, 2, 4), "v")]]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"], name="bn")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_as_written_keeps_the_graph_for_info_run_and_export(tmp_path, capsys):
    import dmljax.onnx as dx
    path = tmp_path / "cb.onnx"
    onnx.save(_conv_bn(), path)
    assert main(["onnx", "info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 nodes folded into a Conv's filter and bias" in out and "bn (BatchNormalization)" not in out
    assert main(["onnx", "info", str(path), "--as-written"]) == 0
    out = capsys.readouterr().out
    assert "rewritten at load: nothing (--as-written)" in out and "bn (BatchNormalization)" in out
    x = np.random.default_rng(4).standard_normal((1, 2, 5, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    for flags, folded, folder in (([], True, "f"), (["--as-written"], False, "w")):
        assert main(["run", str(path), "--inputs", str(tmp_path / "x.npy"), "--out", str(tmp_path / folder), *flags]) == 0
        want = np.asarray(dx.load(str(path), fold_conv=folded)(x)[0])
        np.testing.assert_array_equal(np.load(tmp_path / folder / "y.npy"), want)
    assert main(["onnx", "export-dxdispatch", str(path), str(tmp_path / "w.json"), "--inputs", str(tmp_path / "x.npy"),
                 "--as-written"]) == 0
    assert "BATCH_NORMALIZATION" in (tmp_path / "w.json").read_text()
    capsys.readouterr()


def test_as_written_is_refused_for_a_dxdispatch_model(tmp_path, capsys):
    path = tmp_path / "m.json"
    path.write_text("{}")
    assert main(["run", str(path), "--as-written"]) == 2
    assert capsys.readouterr().err.strip() == ("dmljax run: error: --as-written applies to ONNX models; a DxDispatch "
                                               "model runs as it is written")
