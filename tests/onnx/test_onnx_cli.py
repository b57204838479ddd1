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
