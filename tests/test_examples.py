"""The examples run and print what a person can check."""

import os
import runpy
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

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
    assert "implements 177 of DirectML's 177 operators." in out
    assert "DML_OPERATOR_GEMM: value 54, introduced in 1.0" in out
    assert "ValidationError:\nactivation_scaled_elu (DML_OPERATOR_ACTIVATION_SCALED_ELU) at DML_FEATURE_LEVEL_2_0:" in out


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_leaky_relu_from_if():
    out = run("leaky_relu_from_if.py")
    assert "matches x if x >= 0 else 0.1 * x: True" in out
    assert "gradient is 0.1 below zero and 1 from zero up: True" in out
    assert "same bits as the composition: True" in out  # ACTIVATION_LEAKY_RELU, -0.0 included
    assert "same gradient bits: True" in out


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_train_mlp_loss_goes_down():
    mod = runpy.run_path(str(EXAMPLES / "train_mlp.py"))
    first, last = mod["main"](["--steps", "150"])
    assert last < first / 10, (first, last)


@pytest.mark.slow  # 20 s of training on two cores: the slow tier
def test_train_cnn_short_run_and_its_twin(tmp_path):
    """Two epochs on 320 images: the dmljax network and its jax.numpy + optax twin start from the
    same weights on the same batches, so their losses must agree closely (a gradient rule that
    strayed from autodiff's, or an ADAM step off the textbook's, would part them), the loss must
    fall, and the plot must be written."""
    mod = runpy.run_path(str(EXAMPLES / "train_cnn.py"))
    png = tmp_path / "curves.png"
    with jax.numpy_dtype_promotion("standard"):  # optax's bias correction mixes Python floats and int32
        history = mod["main"](["--epochs", "2", "--limit", "320", "--plot", str(png), "--no-progress"])
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for dml, twin in zip(history["dml_loss"], history["jnp_loss"]):
        assert abs(dml - twin) <= 1e-3 * abs(twin), history
    assert history["dml_loss"][1] < history["dml_loss"][0] * 0.7, history
    assert history["dml_acc"][-1] > 0.6 and abs(history["dml_acc"][-1] - history["jnp_acc"][-1]) <= 0.02, history


def test_an_example_names_its_missing_extra():
    # Without the examples extra (optax hidden here), train_cnn.py says what it needs and how to
    # install it, in one line, not a ModuleNotFoundError's traceback.
    code = ("import runpy, sys; sys.modules['optax'] = None; sys.argv = ['train_cnn.py']; "
            "runpy.run_path('examples/train_cnn.py', run_name='__main__')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 1, out.stderr
    assert out.stderr.strip() == 'examples/train_cnn.py needs optax, of the examples extra: pip install ".[examples]"'


@pytest.mark.slow  # 8 s on 2 cores
def test_finetune_onnx_learns_the_tagging_task():
    """150 steps of momentum on an imported ONNX LSTM tagger's weights through model.apply: the
    tags it gets right rise from chance to most (a gradient that did not flow through the imported
    LSTM, GEMM and bias would leave the loss where it was)."""
    pytest.importorskip("onnx", reason="the example imports an ONNX model (the onnx extra)")
    mod = runpy.run_path(str(EXAMPLES / "finetune_onnx.py"))
    before, after = mod["main"](["--steps", "150"])
    assert after[0] < 0.6 * before[0], (before, after)
    assert before[1] < 0.35 and after[1] > 0.6, (before, after)


@pytest.mark.slow  # 4 s on 2 cores
def test_train_lstm_short_run_and_its_twin():
    """80 steps: the dmljax LSTM and its jax.lax.scan twin start from the same weights on the same
    batches, so their losses agree closely, and the loss goes down. (Each gradient is within a few
    float32 ULP of float64's, but their sums run in different orders: dmljax takes
    RecurrenceTensor's gradient as one product over every step, the twin step by step; 80 steps
    of momentum carry that into the losses, 1.5e-3 apart at most.)"""
    mod = runpy.run_path(str(EXAMPLES / "train_lstm.py"))
    losses, acc = mod["main"](["--steps", "80"])
    ours, twin = np.array(losses["dmljax"]), np.array(losses["jax.numpy"])
    np.testing.assert_allclose(ours, twin, rtol=3e-3, atol=1e-4)
    assert ours[-10:].mean() < 0.8 * ours[:10].mean(), ours
    assert abs(acc["dmljax"] - acc["jax.numpy"]) <= 0.02


@pytest.mark.slow  # 4 s on 2 cores
def test_transformer_short_run_learns_to_reverse():
    """30 steps of the transformer block (MULTIHEAD_ATTENTION, GEMM, MEAN_VARIANCE_NORMALIZATION1,
    ACTIVATION_GELU, ADAM_OPTIMIZER): reversing a sequence needs each output to attend to the
    input its position names, which the block learns within these steps (chance is 0.1 a token)."""
    mod = runpy.run_path(str(EXAMPLES / "transformer.py"))
    history = mod["main"](["--steps", "30", "--no-progress"])
    assert len(history["loss"]) == 30 and history["loss"][-1] < history["loss"][0] / 5, history["loss"]
    assert history["token_acc"][-1] > 0.9, history


@pytest.mark.slow  # a new interpreter and two compiles of the sharded step: about 10 s of CPU on two cores
def test_train_sharded_on_eight_virtual_cpu_devices():
    """examples/train_sharded.py on 8 virtual CPU devices (its --cpu-devices): the batch split over
    the 8, one batch's gradients equal one device's up to the order of the sums over the batch, and
    the loss falls."""
    out = run("train_sharded.py", "--cpu-devices", "8", "--epochs", "2", "--batch-per-device", "8",
              "--limit", "256", "--check")
    assert out.startswith("8 devices (cpu), 8 images each a step\n"), out
    difference = float(out.split("largest difference ")[1].split()[0])
    assert difference < 1e-5, out
    losses = [float(line.split("training loss ")[1].split(",")[0]) for line in out.splitlines()
              if line.startswith("epoch ")]
    assert len(losses) == 2 and losses[1] < losses[0] * 0.9, out


@pytest.mark.slow  # scikit-learn's import and the digits' load: 8 s on two cores
def test_train_sharded_refuses_a_batch_larger_than_the_data():
    mod = runpy.run_path(str(EXAMPLES / "train_sharded.py"))
    with pytest.raises(SystemExit, match="8 training images are fewer than one batch of 64 "
                                         r"\(8 per device x 8 devices\)"):
        mod["train"](epochs=1, batch_per_device=8, limit=8)
