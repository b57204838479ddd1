"""Every model that the onnx package ships with its data (backend/test/data/{simple,
pytorch-converted, pytorch-operator, light}) against ONNX Runtime's CPU provider, output by output,
with the largest difference reported; `real` holds download stubs only (no .onnx file here)."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="comparing with ONNX Runtime needs onnxruntime (the test extra)")

from onnx import numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")

NOT_MAPPED = {
    **{f"test_expand_shape_model{i}": "Expand's shape is a graph input: DirectML takes the output sizes in the "
       "desc, so it must be static" for i in range(1, 5)},
    "test_gradient_of_add": "the Gradient operator (ai.onnx.preview.training) is not an inference operator",
    "test_gradient_of_add_and_mul": "the Gradient operator (ai.onnx.preview.training) is not an inference operator",
    **{f"test_sequence_model{i}": "sequence types have no DirectML tensor" for i in range(1, 9)},
    **{n: "StringNormalizer: strings have no DirectML tensor" for n in (
        "test_strnorm_model_monday_casesensintive_lower", "test_strnorm_model_monday_casesensintive_nochangecase",
        "test_strnorm_model_monday_casesensintive_upper", "test_strnorm_model_monday_empty_output",
        "test_strnorm_model_monday_insensintive_upper_twodim", "test_strnorm_model_nostopwords_nochangecase")},
}
"""Models that load refuses, with the reason (the test checks it does refuse them)."""

BAD_DATA = {n: "its stored inputs and outputs are uninitialised float64 memory (denormals around 1e-310) and "
            "ONNX Runtime refuses its opset-6 Add, so there is nothing to compare with"
            for n in ("test_operator_add_broadcast", "test_operator_add_size1_right_broadcast",
                      "test_operator_add_size1_singleton_broadcast", "test_operator_addconstant")}


def _model_dirs() -> list[str]:
    out = []
    for kind in ("simple", "pytorch-converted", "pytorch-operator"):
        out += sorted(glob.glob(os.path.join(DATA, kind, "*", "model.onnx")))
    return out


def _light() -> list[str]:
    return sorted(glob.glob(os.path.join(DATA, "light", "*.onnx")))


FAST = {"test_single_relu_model", "test_Conv2d_groups", "test_BatchNorm2d_eval", "test_expand_shape_model1"}


def _params(paths):
    for p in paths:
        name = os.path.basename(os.path.dirname(p)) if p.endswith("model.onnx") else os.path.basename(p)[:-5]
        yield pytest.param(p, id=name, marks=() if name in FAST else (pytest.mark.slow,))


def _ort(path, inputs):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), inputs)})


def _largest_difference(got, want) -> float:
    worst = 0.0
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert g.shape == w.shape
        if g.size:
            both_nan = np.isnan(g) & np.isnan(w)
            worst = max(worst, float(np.max(np.where(both_nan, 0.0, np.abs(g - w)))))
    return worst


@pytest.mark.parametrize("path", list(_params(_model_dirs())))
def test_model_matches_onnx_runtime(path):
    name = os.path.basename(os.path.dirname(path))
    if name in NOT_MAPPED:
        with pytest.raises(dx.OnnxImportError):
            dx.load(path)
        return
    if name in BAD_DATA:
        pytest.skip(BAD_DATA[name])
    data = sorted(glob.glob(os.path.join(os.path.dirname(path), "test_data_set_*")))[0]
    inputs = [numpy_helper.to_array(onnx.load_tensor(f)) for f in sorted(glob.glob(os.path.join(data, "input_*.pb")))]
    model = dx.load(path)
    try:
        want = _ort(path, inputs)
    except Exception:  # noqa: BLE001  (ONNX Runtime no longer runs some opset-6 operators: use the stored outputs)
        want = [numpy_helper.to_array(onnx.load_tensor(f)) for f in sorted(glob.glob(os.path.join(data, "output_*.pb")))]
    diff = _largest_difference(model(*inputs), want)
    print(f"{name}: largest difference {diff:.3g}")
    assert diff <= 1e-4 * max(1.0, max(float(np.max(np.abs(w))) if np.size(w) else 0.0 for w in want))


@pytest.mark.parametrize("path", list(_params(_light())))
def test_light_model_matches_onnx_runtime(path):
    """The `light` models: the real architectures with ConstantOfShape weights (outputs near
    uniform, so this checks the graph's mapping and shapes more than its numerics)."""
    model = dx.load(path)
    inputs = dx.random_inputs(model, seed=0)
    diff = _largest_difference(model(*inputs), _ort(path, inputs))
    print(f"{os.path.basename(path)}: largest difference {diff:.3g}")
    assert diff <= 1e-4


def test_real_models_are_download_stubs():
    """`real` holds only data.json download stubs: nothing to run without a network."""
    assert not glob.glob(os.path.join(DATA, "real", "*", "*.onnx"))


