"""benchmarks/onnx/jax_floor.py: its hand-written LSTM tagger and BERT encoder (plain and
dynamically quantized) are the exported models (ONNX Runtime's outputs, from the export's
weights), and its GELU chain is the encoder's imported operators."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
pytest.importorskip("onnxruntime", reason="the benchmark compares with ONNX Runtime (the test extra)")

import dmljax  # noqa: E402
from tests.onnx import zoo  # noqa: E402

BENCHMARK = "jax_floor"
"""The script the ``bench`` fixture imports (tests/onnx/conftest.py)."""


@pytest.mark.parametrize("name", ["lstm.plain", "bert_tiny.plain", "bert_tiny.dynamic"])
def test_the_hand_written_model_is_the_export(bench, name):
    base, form = name.split(".")
    path = zoo.exported(base, form)  # committed (zoo.SMALL)
    inputs = zoo.exported_inputs(base)
    hand, weights = bench.MODELS[name](onnx.load(path))
    want = zoo.ort_run(zoo.ort_session(path), inputs)
    got = [np.asarray(o) for o in hand(weights, *[jnp.asarray(x) for x in inputs])]
    assert [g.shape for g in got] == [w.shape for w in want]
    assert max(float(np.max(np.abs(g - w))) for g, w in zip(got, want)) <= bench.TOLERANCE
    assert max(float(np.max(np.abs(w))) for w in want) > 100 * bench.TOLERANCE  # not a comparison of zeros


def test_the_gelu_chain_is_the_encoders_operators(bench):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((16, 128)) * 3).astype(np.float32)
    x[0, :4] = [1e-40, -1e-40, 0.0, -0.0]
    b = rng.standard_normal(128).astype(np.float32)
    b[:4] = 0.0

    def operators(x, b):  # the imported graph's nodes: Add (the bias), Div, Erf, Add, Mul, Mul
        full = functools.partial(jnp.full, x.shape, dtype=np.float32)
        y = dmljax.element_wise_add(x, jnp.broadcast_to(b, x.shape))
        e = dmljax.element_wise_add(dmljax.element_wise_erf(dmljax.element_wise_divide(y, full(1.4142135))), full(1))
        return dmljax.element_wise_multiply(dmljax.element_wise_multiply(y, e), full(0.5))

    # both jitted: XLA takes a quotient by a constant as a product by its reciprocal in either
    want = np.asarray(jax.jit(operators)(x, b))
    got = np.asarray(jax.jit(bench.gelu_chain)(x, b))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert (want[0, :4] == 0).all()  # the denormals read as zeros
