"""The examples run and print what a person can check."""

import os
import runpy
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(name, *args):
    # The checkout first on the path: the examples test this tree even where it is not installed.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_quickstart():
    out = run("quickstart.py")
    assert "IF             [[1.0, 8.0], [3.0, 4.0]]" in out
    assert "MODULUS_FLOOR  [2.0, -2.0, 1.0241949558258057]" in out  # Python: 1e9 % pi in float32 = 1.024195
    assert "THRESHOLD      [0.0, 0.0, 5.0]" in out
    assert "CONSTANT_POW   [-8.0, 0.0, 27.0]  and 0.5: [nan, 2.0]" in out
    assert "ValidationError:\nactivation_scaled_elu (DML_OPERATOR_ACTIVATION_SCALED_ELU) at DML_FEATURE_LEVEL_2_0:" in out


def test_leaky_relu_from_if():
    out = run("leaky_relu_from_if.py")
    assert "matches x if x >= 0 else 0.1 * x: True" in out
    assert "gradient is 0.1 below zero and 1 from zero up: True" in out
    assert "same bits as the composition: True" in out  # ACTIVATION_LEAKY_RELU, -0.0 included
    assert "same gradient bits: True" in out


def test_train_mlp_loss_goes_down():
    mod = runpy.run_path(str(EXAMPLES / "train_mlp.py"))
    first, last = mod["main"](["--steps", "150"])
    assert last < first / 10, (first, last)
