"""ONNX Runtime's com.microsoft operators that dmljax maps, one node at a time against ONNX Runtime's
CPU kernels: quantized outputs within one quantization step (DirectML's rounding of a dequantized
FLOAT32 value against ONNX Runtime's fixed-point or ratio scaling), FLOAT32 outputs within 1e-5 of
the largest value."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="comparing with ONNX Runtime needs onnxruntime (the test extra)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.onnx.table import CONTRIB  # noqa: E402

U8, I8 = np.uint8, np.int8
_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(U8): TensorProto.UINT8, np.dtype(I8): TensorProto.INT8,
          np.dtype(np.int32): TensorProto.INT32}


def _model(op, inputs: dict, consts: dict, out_type, attrs=None, n_inputs=None):
    """One com.microsoft node: ``inputs`` are graph inputs (name -> value), ``consts`` initializers;
    the node's inputs are both, in the order of ``n_inputs`` ("" leaves one out)."""
    order = n_inputs or list(inputs) + list(consts)
    node = helper.make_node(op, order, ["y"], domain="com.microsoft", **(attrs or {}))
    g = helper.make_graph([node], op, [helper.make_tensor_value_info(k, _TYPES[v.dtype], v.shape) for k, v in inputs.items()],
                          [helper.make_tensor_value_info("y", out_type, [None] * next(iter(inputs.values())).ndim)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def _run(m, inputs: dict):
    got = np.asarray(dx.load(m)(*inputs.values())[0])
    so = ort.SessionOptions()
    so.log_severity_level = 3
    want = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    d = np.abs(got.astype(np.float64) - want.astype(np.float64))
    if np.issubdtype(want.dtype, np.integer):
        assert d.max() <= 1, d.max()
        assert (d > 0).mean() <= 0.1, (d > 0).mean()
    else:
        assert d.max() <= 1e-5 * max(1.0, float(np.abs(want).max())), d.max()
    return got, want


def _q(rng, *shape, dtype=U8):
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def _s(v):
    return np.array(v, np.float32)


def _z(v, dtype=U8):
    return np.array(v, dtype)


def case_qlinear_add(rng):
    a, b = _q(rng, 2, 3, 4), _q(rng, 3, 4)
    return _model("QLinearAdd", {"a": a, "b": b}, {"as": _s(0.02), "az": _z(120), "bs": _s(0.03), "bz": _z(7),
                                                  "ys": _s(0.04), "yz": _z(130)}, TensorProto.UINT8,
                  n_inputs=["a", "as", "az", "b", "bs", "bz", "ys", "yz"]), {"a": a, "b": b}


def case_qlinear_mul(rng):
    a, b = _q(rng, 2, 5, dtype=I8), _q(rng, 2, 5, dtype=I8)
    return _model("QLinearMul", {"a": a, "b": b}, {"as": _s(0.05), "az": _z(3, I8), "bs": _s(0.04), "bz": _z(-2, I8),
                                                  "ys": _s(0.5), "yz": _z(1, I8)}, TensorProto.INT8,
                  n_inputs=["a", "as", "az", "b", "bs", "bz", "ys", "yz"]), {"a": a, "b": b}


def case_qlinear_sigmoid(rng):
    x = _q(rng, 4, 6)
    return _model("QLinearSigmoid", {"x": x}, {"xs": _s(0.05), "xz": _z(128), "ys": _s(1 / 256), "yz": _z(0)},
                  TensorProto.UINT8), {"x": x}


def case_qlinear_leaky_relu(rng):
    x = _q(rng, 4, 6)
    return _model("QLinearLeakyRelu", {"x": x}, {"xs": _s(0.05), "xz": _z(128), "ys": _s(0.04), "yz": _z(20)},
                  TensorProto.UINT8, attrs={"alpha": 0.1}), {"x": x}


def case_qlinear_softmax(rng):
    x = _q(rng, 3, 10)
    return _model("QLinearSoftmax", {"x": x}, {"xs": _s(0.1), "xz": _z(128), "ys": _s(1 / 256), "yz": _z(0)},
                  TensorProto.UINT8, attrs={"axis": -1, "opset": 13}), {"x": x}


def case_qlinear_concat(rng):
    a, b = _q(rng, 2, 3, 4), _q(rng, 2, 5, 4)
    return _model("QLinearConcat", {"a": a, "b": b}, {"ys": _s(0.05), "yz": _z(100), "as": _s(0.04), "az": _z(128),
                                                     "bs": _s(0.06), "bz": _z(90)}, TensorProto.UINT8,
                  attrs={"axis": 1}, n_inputs=["ys", "yz", "a", "as", "az", "b", "bs", "bz"]), {"a": a, "b": b}


def case_qlinear_global_average_pool(rng):
    x = _q(rng, 2, 8, 7, 7)
    return _model("QLinearGlobalAveragePool", {"x": x}, {"xs": _s(0.08), "xz": _z(3), "ys": _s(0.05), "yz": _z(10)},
                  TensorProto.UINT8, attrs={"channels_last": 0}), {"x": x}


def case_qlinear_global_average_pool_channels_last(rng):
    x = _q(rng, 2, 5, 5, 8)
    return _model("QLinearGlobalAveragePool", {"x": x}, {"xs": _s(0.08), "xz": _z(3), "ys": _s(0.05), "yz": _z(10)},
                  TensorProto.UINT8, attrs={"channels_last": 1}), {"x": x}


def case_qlinear_average_pool(rng):
    x = _q(rng, 1, 4, 9, 9)
    return _model("QLinearAveragePool", {"x": x}, {"xs": _s(0.08), "xz": _z(3), "ys": _s(0.05), "yz": _z(10)},
                  TensorProto.UINT8, attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}), {"x": x}


def _qgemm(rng, per_column: bool, quantized_out: bool):
    a, b = _q(rng, 3, 16), _q(rng, 6, 16, dtype=I8)
    consts = {"as": _s(0.05), "az": _z(120), "b": b,
              "bs": (rng.uniform(0.001, 0.01, 6).astype(np.float32) if per_column else _s(0.004)),
              "bz": (np.zeros(6, I8) if per_column else _z(0, I8)),
              "c": rng.integers(-500, 500, 6).astype(np.int32)}
    names = ["a", "as", "az", "b", "bs", "bz", "c"]
    if quantized_out:
        consts.update(ys=_s(0.1), yz=_z(128))
        names += ["ys", "yz"]
    return _model("QGemm", {"a": a}, consts, TensorProto.UINT8 if quantized_out else TensorProto.FLOAT,
                  attrs={"transB": 1, "alpha": 1.0}, n_inputs=names), {"a": a}


def case_qgemm(rng):
    return _qgemm(rng, False, True)


def case_qgemm_per_column_float_out(rng):
    return _qgemm(rng, True, False)


def case_matmul_integer_to_float(rng):
    a, b = _q(rng, 2, 4, 16), _q(rng, 16, 6, dtype=I8)
    consts = {"b": b, "as": _s(0.05), "bs": rng.uniform(0.001, 0.01, 6).astype(np.float32), "az": _z(100),
              "bz": np.zeros(6, I8), "bias": rng.standard_normal(6).astype(np.float32)}
    return _model("MatMulIntegerToFloat", {"a": a}, consts, TensorProto.FLOAT,
                  n_inputs=["a", "b", "as", "bs", "az", "bz", "bias"]), {"a": a}


def case_dynamic_quantize_matmul(rng):
    a, b = rng.standard_normal((2, 4, 16)).astype(np.float32), _q(rng, 16, 6, dtype=I8)
    consts = {"b": b, "bs": _s(0.01), "bz": _z(0, I8), "bias": rng.standard_normal(6).astype(np.float32)}
    return _model("DynamicQuantizeMatMul", {"a": a}, consts, TensorProto.FLOAT,
                  n_inputs=["a", "b", "bs", "bz", "bias"]), {"a": a}


def case_skip_layer_normalization(rng):
    x, skip = rng.standard_normal((2, 5, 16)).astype(np.float32), rng.standard_normal((2, 5, 16)).astype(np.float32)
    consts = {"gamma": rng.standard_normal(16).astype(np.float32), "beta": rng.standard_normal(16).astype(np.float32),
              "bias": rng.standard_normal(16).astype(np.float32)}
    return _model("SkipLayerNormalization", {"x": x, "skip": skip}, consts, TensorProto.FLOAT,
                  attrs={"epsilon": 1e-12}), {"x": x, "skip": skip}


def case_gelu(rng):
    x = (rng.standard_normal((3, 8)) * 3).astype(np.float32)
    return _model("Gelu", {"x": x}, {}, TensorProto.FLOAT), {"x": x}


def case_bias_gelu(rng):
    x = (rng.standard_normal((3, 8)) * 3).astype(np.float32)
    return _model("BiasGelu", {"x": x}, {"b": rng.standard_normal(8).astype(np.float32)}, TensorProto.FLOAT), {"x": x}


def case_quick_gelu(rng):
    x = (rng.standard_normal((3, 8)) * 3).astype(np.float32)
    return _model("QuickGelu", {"x": x}, {}, TensorProto.FLOAT, attrs={"alpha": 1.5}), {"x": x}


def case_fused_matmul(rng):
    a, b = rng.standard_normal((2, 6, 4)).astype(np.float32), rng.standard_normal((2, 5, 6)).astype(np.float32)
    return _model("FusedMatMul", {"a": a, "b": b}, {}, TensorProto.FLOAT,
                  attrs={"alpha": 0.5, "transA": 1, "transB": 1}), {"a": a, "b": b}


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}
FAST = {"qlinear_add", "qgemm"}


def _cases():
    for name, fn in CASES.items():
        yield pytest.param(fn, id=name, marks=() if name in FAST else (pytest.mark.slow,))


@pytest.mark.parametrize("case", list(_cases()))
def test_contrib_operator_matches_onnx_runtime(case):
    m, inputs = case(np.random.default_rng(7))
    _run(m, inputs)


def test_every_contrib_row_has_a_case():
    tested = {c(np.random.default_rng(0))[0].graph.node[0].op_type for c in CASES.values()}
    assert {r.op_type for r in CONTRIB} == tested


def test_an_unmapped_contrib_operator_is_refused_by_name():
    x = np.zeros((2, 3), np.float32)
    m = _model("FastGelu", {"x": x}, {}, TensorProto.FLOAT)
    with pytest.raises(dx.OnnxImportError, match="FastGelu.*com.microsoft"):
        dx.load(m)
