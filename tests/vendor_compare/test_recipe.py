"""The Windows recipe's script (examples/ort_dump_intermediates.py), run here with ONNX Runtime's
CPU provider in place of DirectML: its archive is a reference `dmljax compare` reads."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime", reason="the recipe runs ONNX Runtime (the test extra installs it)")

from dmljax._src.cli import main  # noqa: E402
from tests.vendor_compare.test_compare_onnx import masked, split_sigmoid_mul  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "ort_dump_intermediates.py"


@pytest.mark.slow
def test_every_intermediate_in_one_npz(tmp_path, capsys):
    dump = runpy.run_path(str(SCRIPT))["main"]
    model = masked(tmp_path)
    assert dump([str(model), "--provider", "CPU", "--out", str(tmp_path / "masked.npz")]) == 0
    assert main(["compare", str(model), "--reference", str(tmp_path / "masked.npz")]) == 0
    assert "All 3 compared tensors are within" in capsys.readouterr().out
    model = split_sigmoid_mul(tmp_path)
    assert dump([str(model), "--provider", "CPU", "--out", str(tmp_path / "glu.npz"), "--no-optimizations"]) == 0
    main(["compare", str(model), "--reference", str(tmp_path / "glu.npz")])
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  ")]
    # ONNX Runtime's CPU sigmoid is an approximation (7 ULP from the float64 value was measured
    # for one element with onnxruntime 1.32); the exact operators must match bit for bit
    assert len(lines) == 5 and all(" ok " in x for x in lines if not x.strip().startswith("s "))
