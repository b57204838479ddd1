"""com.microsoft DynamicQuantizeLSTM against ONNX Runtime's CPU kernel, one generated node at a time: bit for
bit where ONNX Runtime's activations are exact (Relu), within a few ULP of the outputs' largest magnitude with
its approximate Sigmoid and Tanh; the rows ONNX Runtime quantizes together (by batch row across its threads, or
the whole batch), gradients, and the forms refused when the model is loaded."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="comparing with ONNX Runtime needs onnxruntime (the test extra)")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.errors import ValidationError  # noqa: E402
from tests.onnx import onnx_models  # noqa: E402
from tests.tiers import fast_sample  # noqa: E402

RELU = {"activations": ["Relu"] * 3}
RELU2 = {"activations": ["Relu"] * 6}

FORMS = {
    "reverse_lengths_initial": dict(direction="reverse", lengths=[5, 3], initial=True),
    "forward": {},
    "bidirectional_uint8_per_column_peepholes_lengths": dict(direction="bidirectional", weights=np.uint8,
                                                             per_column=True, peepholes=True, lengths=[4, 0]),
    "whole_batch_lengths": dict(batch=3, hidden=260, lengths=[5, 2, 3], weight_scale=0.0005),
    "whole_batch_lengths_without_y": dict(batch=3, hidden=260, lengths=[5, 2, 3], weight_scale=0.0005,
                                          outputs=("", "Y_h", "Y_c")),
    "by_row_batch_6": dict(batch=6, lengths=[5, 1, 4, 5, 0, 2]),
    "clip": dict(clip=0.3, initial=True),
    "input_forget": dict(input_forget=1, peepholes=True),
}
"""The node's forms (the fast tier runs the first): the directions, sequence_lens (a reverse direction
reverses each sequence within its length), initial states, UINT8 weights with per-column scales, peepholes,
clip, input_forget; hidden_size 260 with 3 rows quantizes Ht-1 as one matrix (ONNX Runtime splits a batch
across its threads only past 4 rows, or from 2 with hidden_size <= 256), with and without the Y output (whose
zeros past a sequence's end ONNX Runtime reads back as Ht-1)."""


def _ort(model, feeds: dict, threads: int):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def _both(form: dict, seed: int, **extra):
    """dmljax's outputs and ONNX Runtime's, its threads at least the batch's rows (each thread quantizes
    its own rows: the answer dmljax computes)."""
    model, feeds = onnx_models.dynamic_quantize_lstm(seed, **{**form, **extra})
    got = [np.asarray(g) for g in dx.load(model)(*feeds.values())]
    want = _ort(model, feeds, threads=max(2, feeds["X"].shape[1]))
    assert [g.shape for g in got] == [w.shape for w in want]
    return got, want


def _ulps_of_largest(got, want) -> float:
    """The largest difference in ULP of the largest magnitude of ONNX Runtime's output."""
    return max(float(np.abs(g.astype(np.float64) - w).max() / np.spacing(np.float32(np.abs(w).max())))
               for g, w in zip(got, want))


@pytest.mark.parametrize("name", fast_sample(list(FORMS)))
def test_matches_onnx_runtime_bit_for_bit_where_its_activations_are_exact(name):
    form = FORMS[name]
    acts = RELU2 if form.get("direction") == "bidirectional" else RELU
    got, want = _both(form, seed=3, **acts, **({} if "weight_scale" in form else {"weight_scale": 0.005}))
    for g, w in zip(got, want):
        assert np.isfinite(w).all()
        np.testing.assert_array_equal(g.view(np.int32), w.view(np.int32))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FORMS))
def test_matches_onnx_runtime_within_a_few_ulp_with_sigmoid_and_tanh(name):
    got, want = _both(FORMS[name], seed=4)
    assert _ulps_of_largest(got, want) <= 8


@pytest.mark.slow
def test_activations_read_their_alphas_and_betas_as_onnx_runtime_does():
    # per direction; alphas and betas taken in order by the functions that read them, defaults after
    acts = dict(activations=["HardSigmoid", "LeakyRelu", "Softsign", "Sigmoid", "Affine", "ScaledTanh"],
                activation_alpha=[0.3, 0.05, 0.9], activation_beta=[0.4, 0.1])
    got, want = _both({"direction": "bidirectional"}, seed=5, **acts)
    assert _ulps_of_largest(got, want) <= 8
    acts = dict(activations=["sigmoid", "Elu", "Softplus", "HardSigmoid", "ThresholdedRelu", "TANH"])
    got, want = _both({"direction": "bidirectional"}, seed=6, **acts)
    assert _ulps_of_largest(got, want) <= 8


@pytest.mark.slow
def test_is_jitted_with_the_model_and_differentiable_where_float():
    model, feeds = onnx_models.dynamic_quantize_lstm(7, direction="bidirectional", per_column=True, peepholes=True,
                                                     lengths=[4, 2], initial=True)
    m = dx.load(model)
    x, lengths, h0, c0 = feeds.values()

    def loss(params, x, h0, c0):
        return sum(jnp.sum(o) for o in m.apply(params, x, lengths, h0, c0))

    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(m.params, x, h0, c0)
    assert set(grads[0]) == {"B", "P", "W_scale", "R_scale"}
    assert all(np.isfinite(np.asarray(g)).all() for g in jax.tree_util.tree_leaves(grads))
    assert float(jnp.abs(grads[0]["B"]).max()) > 0 and float(jnp.abs(grads[2]).max()) > 0
    # X reaches the outputs through its quantization: only its scale's extremes carry a gradient
    assert 0 < int(jnp.count_nonzero(grads[1])) <= 2
    step = 1e-3
    b = m.params["B"]
    bumped = [dict(m.params, B=b.at[1, 5].add(s)) for s in (step, -step)]
    numeric = (float(loss(bumped[0], x, h0, c0)) - float(loss(bumped[1], x, h0, c0))) / (2 * step)
    assert abs(numeric - float(grads[0]["B"][1, 5])) <= 1e-2 * max(1.0, abs(numeric))


def _refusal(inputs=None, **attrs) -> str:
    """load's message for the generated node with ``inputs`` as its inputs and ``attrs`` set (None: left out)."""
    model, _ = onnx_models.dynamic_quantize_lstm(0)
    node = model.graph.node[0]
    if inputs is not None:
        node.input[:] = inputs
    kept = [a for a in node.attribute if a.name not in attrs]
    del node.attribute[:]
    node.attribute.extend(kept + [onnx.helper.make_attribute(k, v) for k, v in attrs.items() if v is not None])
    with pytest.raises(dx.OnnxImportError) as e:
        dx.load(model)
    return str(e.value)


@pytest.mark.parametrize("changes,reason", [
    ({"direction": "sideways"}, "direction 'sideways': one of 'forward', 'reverse', 'bidirectional'"),
    ({"hidden_size": None}, "hidden_size is required, a positive number"),
    ({"activations": ["Sigmoid", "Tanh"]}, "2 activations; 3 a direction (f, g, h): 3"),
    ({"activations": ["Sigmoid", "Gelu", "Tanh"]}, "activation 'Gelu' is not one of ONNX Runtime's recurrent"),
    ({"clip": -1.0}, "clip -1.0 is not positive"),
    ({"layout": 1}, "layout=1 (batch-major) is not mapped"),
    ({"inputs": ["X", "W", "R", "B", "", "", "", "", "", "W_zero_point", "R_scale", ""]},
     "W_scale, R_zero_point left out (required)"),
])
def test_forms_it_cannot_map_are_refused_when_loaded_naming_the_node(changes, reason):
    message = _refusal(**changes)
    assert "node 'lstm' (DynamicQuantizeLSTM, com.microsoft opset 1)" in message
    assert reason in message


def test_weights_in_onnx_lstm_layout_are_refused_when_loaded():
    model, _ = onnx_models.dynamic_quantize_lstm(0)
    w = next(t for t in model.graph.initializer if t.name == "W")
    w.CopyFrom(onnx.numpy_helper.from_array(np.swapaxes(onnx.numpy_helper.to_array(w), 1, 2).copy(), "W"))
    with pytest.raises(dx.OnnxImportError, match=r"W has shape \[1, 16, 6\]; \[1, 6, 16\]"):
        dx.load(model)


def test_a_per_column_zero_point_of_several_values_is_refused_naming_the_node():
    model, feeds = onnx_models.dynamic_quantize_lstm(0, weights=np.uint8, per_column=True)
    zp = next(t for t in model.graph.initializer if t.name == "R_zero_point")
    values = onnx.numpy_helper.to_array(zp).copy()
    values[0, 3] = 7
    zp.CopyFrom(onnx.numpy_helper.from_array(values, "R_zero_point"))
    m = dx.load(model)
    with pytest.raises(ValidationError, match="R_zero_point per column holds 2 values") as e:
        m(*feeds.values())
    assert "'lstm' (DynamicQuantizeLSTM" in "".join(getattr(e.value, "__notes__", []))
