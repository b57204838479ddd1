"""The dmljax console script: ``dmljax run`` options and output format, ``dmljax ops``, the
committed example, and one run of the installed-style entry point in a subprocess."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dmljax
from dmljax._src.cli import main
from dmljax._src.docstrings import support_table_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "dxdispatch_threshold.json"


def run(argv, capsys):
    status = main([str(a) for a in argv])
    c = capsys.readouterr()
    return status, c.out, c.err


def test_example_output(capsys):
    status, out, err = run(["run", EXAMPLE], capsys)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Running on '")
    assert re.fullmatch(r"Dispatch 'threshold': 1 iterations, \d+\.\d{4} ms median \(CPU\)", lines[1])
    # threshold(2x + 1, 0.5), NaN -> 0.5 (maxNum); the strided dispatch keeps the -9 padding
    assert lines[-3:] == [
        "Resource 'input': -3, -1.5, 0, 0.25, 2, nan",
        "Resource 'output': 0.5, 0.5, 1, 1.5, 5, 0.5",
        "Resource 'tiled': 0.5, 0.5, 1, -9, 0.5, 0.5, 1, -9",
    ]


def test_timing_options(capsys):
    status, out, _ = run(["run", EXAMPLE, "-i", "5", "-r", "2", "-w", "2", "-v", "1"], capsys)
    assert status == 0
    assert "Dispatch 'threshold': 5 iterations" in out
    assert re.search(r"CPU Timings \(Cold\) : 2 samples, [\d.]+ ms average, [\d.]+ ms min, [\d.]+ ms median, [\d.]+ ms max", out)
    assert re.search(r"CPU Timings \(Hot\)  : 3 samples", out)
    status, out, _ = run(["run", EXAMPLE, "-i", "3", "-v", "2"], capsys)
    assert "The timings of each iteration: " in out and "iteration 2: " in out
    status, out, _ = run(["run", EXAMPLE, "-i", "1", "-w", "5", "-v", "1"], capsys)
    assert "(Cold)" not in out and "CPU Timings (Hot)  : 1 samples" in out  # at least one hot sample


def test_no_timing_and_feature_level(capsys):
    status, out, _ = run(["run", EXAMPLE, "--no-timing"], capsys)
    assert status == 0 and "Dispatch" not in out
    # THRESHOLD at 1.0 takes 4 to 5 dimensions; the example's 2-D tensors stop it
    status, out, err = run(["run", EXAMPLE, "--feature-level", "1.0"], capsys)
    assert status == 1 and out == ""
    assert "at DML_FEATURE_LEVEL_1_0" in err and "has 2 dimensions" in err and "dispatchable 'threshold'" in err


def test_usage_errors(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", str(EXAMPLE), "--feature-level", "9.9"])
    assert e.value.code == 2
    assert "is not a DirectML feature level" in capsys.readouterr().err
    status, _, err = run(["run", "does-not-exist.json"], capsys)
    assert status == 1 and "does-not-exist.json: file: cannot be read" in err


def test_ops_lists_every_operator(capsys):
    status, out, _ = run(["ops"], capsys)
    assert status == 0
    level = dmljax.FeatureLevel.newest()
    for name, op in dmljax.registry().items():
        assert f"{name} (value {op.spec.value}; introduced in {op.spec.introduced.dml_name}" in out
        assert support_table_text(op.spec, level) in out


def test_ops_at_an_old_level(capsys):
    status, out, _ = run(["ops", "--feature-level", "1.0"], capsys)
    assert status == 0 and "support tables at DML_FEATURE_LEVEL_1_0" in out
    # ELEMENT_WISE_IF came in 2.0
    block = out.split("DML_OPERATOR_ELEMENT_WISE_IF ")[1].split("\n\n")[0]
    assert "not available at DML_FEATURE_LEVEL_1_0" in block


def test_console_script_declared():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["dmljax"] == "dmljax._src.cli:main"


def test_console_script_in_a_subprocess():
    # The installed script calls dmljax._src.cli:main; run that entry point as a fresh process.
    code = "import sys; from dmljax._src.cli import main; sys.exit(main())"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-c", code, "run", str(EXAMPLE), "--no-timing"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "Resource 'tiled': 0.5, 0.5, 1, -9, 0.5, 0.5, 1, -9"
