"""benchmarks/onnx/cpu_kernels.py: its one-node ResNet-18 convolutions are the models it says they
are (dmljax and ONNX Runtime agree on them), and its profile sorts XLA's CPU calls into library
calls and generated loops."""

from __future__ import annotations


import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="the benchmark compares with ONNX Runtime (the test extra)")

import dmljax.onnx as dx  # noqa: E402

BENCHMARK = "cpu_kernels"
"""The script the ``bench`` fixture imports (tests/onnx/conftest.py)."""


def test_thunks_are_sorted_by_kind(bench):
    assert bench._kind("ynn_fusion.12") == "library" and bench._kind("convolution") == "library"
    assert bench._kind("dot.3") == "library"
    assert bench._kind("transpose_copy_fusion.30") == "generated" and bench._kind("while") == "generated"
    assert bench._kind("end: ynn_fusion") is None and bench._kind("ThunkExecutor::Execute") is None
    assert bench._kind("ThreadpoolListener::StartRegion") is None


@pytest.mark.parametrize("quantized", [False, True], ids=["Conv", "QLinearConv"])
def test_a_resnet_convolution_node_runs_alike_in_both(bench, quantized):
    # a smaller copy of a strided 3 x 3 layer: the node, its input and its operation count
    model, inputs, ops = bench._conv_model(16, 8, 12, 3, 2, quantized, np.random.default_rng(1))
    assert ops == 2 * 6 * 6 * 8 * 16 * 9
    got = np.asarray(dx.load(model)(*inputs)[0])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": inputs[0]})[0]
    assert got.shape == want.shape == (1, 8, 6, 6) and got.dtype == want.dtype
    if quantized:
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(got)) > 10  # the requantized values spread over the output's steps
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_profile_finds_the_convolution_a_library_call(bench):
    model, inputs, _ = bench._conv_model(16, 32, 28, 3, 1, False, np.random.default_rng(2))
    loaded = dx.load(model)
    got = bench.profile(loaded, inputs, calls=2)
    assert got["library_calls"] >= 1 and got["library_ms"] > 0
    assert set(got) == {"library_ms", "generated_ms", "library_calls", "generated_calls"}


def test_the_kernels_part_times_each_form_and_checks_the_exact_sums(bench, monkeypatch):
    # one small shape: every form timed, the INT8 forms checked against the exact sums, the table
    # written beside the nodes' ONNX Runtime times
    monkeypatch.setattr(bench, "RESNET18", ((8, 16, 10, 3, 2, 2),))
    (row,) = bench.kernel_rows(1)
    assert row["node"] == "8->16 10x10 3x3 stride 2" and row["ops"] == 2 * 5 * 5 * 16 * 8 * 9
    for key in ("float32_default_ms", "float32_program_options_ms", "int8_library_ms", "int8_columns_ms"):
        assert row[key] > 0
    nodes = [{"model": f"{kind} 8->16 10x10 3x3 stride 2", "quantized": kind == "QLinearConv", "ort_ms": 0.5,
              "dmljax_ms": 1.0, "ratio": 2.0, "times": 2, "ops": row["ops"]} for kind in ("Conv", "QLinearConv")]
    env = {"date": "d", "commit": "c" * 12, "uncommitted changes": False, "cpu": "cpu", "cores": 2, "jax": "j",
           "jaxlib": "j", "onnxruntime": "o", "load_average_at_start": "0", "load_average_at_end": "0"}
    text = bench.markdown(env, 1, [], nodes, [dict(row, commit="c" * 12, date="d")])
    assert "## XLA's own kernels, one convolution alone" in text and "| 8->16 10x10 3x3 stride 2" in text
    assert "ONNX Runtime's nodes: Conv 1.00 ms, QLinearConv 1.00 ms. The fastest of XLA's forms" in text

    from dmljax._src.ops.convolution import integer_convolution
    wrong = integer_convolution._window_columns
    monkeypatch.setattr(integer_convolution, "_window_columns", lambda x, w, g: wrong(x, w, g) + 1)
    with pytest.raises(AssertionError, match="not the exact sums"):
        bench.kernel_rows(1)
