"""ONNX Runtime's com.microsoft operators that dmljax maps, one node at a time against ONNX Runtime's
CPU kernels: quantized outputs within one quantization step (DirectML's rounding of a dequantized
FLOAT32 value against ONNX Runtime's fixed-point or ratio scaling), FLOAT32 outputs within 1e-5 of
the largest value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="comparing with ONNX Runtime needs onnxruntime (the test extra)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.errors import ValidationError  # noqa: E402
from dmljax._src.onnx.table import CONTRIB  # noqa: E402
from tests.onnx import onnx_models  # noqa: E402

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


_RANK = {"y": 3, "z": 3, "present_key": 4, "present_value": 4, "pk_out": 4, "pv_out": 4, "present": 5}


def _attention(op, inputs: dict, consts: dict, node_inputs, outputs, attrs):
    """One com.microsoft attention node with several outputs (every one a graph output, FLOAT32)."""
    node = helper.make_node(op, node_inputs, outputs, domain="com.microsoft", **attrs)
    g = helper.make_graph([node], op, [helper.make_tensor_value_info(k, _TYPES[v.dtype], v.shape)
                                       for k, v in inputs.items()],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [None] * _RANK[o]) for o in outputs if o],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def _ort(m, inputs: dict):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, inputs)


def _close(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    d = np.abs(got.astype(np.float64) - want.astype(np.float64))
    if np.issubdtype(want.dtype, np.integer):
        assert d.max() <= 1, d.max()
        assert (d > 0).mean() <= 0.1, (d > 0).mean()
    else:
        assert d.max() <= 1e-5 * max(1.0, float(np.abs(want).max())), d.max()


def _run(m, inputs: dict):
    """Every graph output of dmljax against ONNX Runtime's CPU provider."""
    gots = dx.load(m)(*inputs.values())
    wants = _ort(m, inputs)
    assert len(gots) == len(wants)
    for got, want in zip(gots, wants):
        _close(np.asarray(got), want)
    return np.asarray(gots[0]), wants[0]


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


def case_dynamic_quantize_lstm(rng):
    # one batch row: ONNX Runtime quantizes Ht-1 whole whatever its threads (tests/onnx/test_onnx_quantized_lstm.py)
    return onnx_models.dynamic_quantize_lstm(int(rng.integers(1 << 16)), batch=1, direction="bidirectional",
                                             lengths=[3])


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


def _f(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def case_multihead_attention(rng):
    q, k, v = _f(rng, 2, 3, 8), _f(rng, 2, 5, 8), _f(rng, 2, 5, 8)
    ins = {"q": q, "k": k, "v": v}
    return _attention("MultiHeadAttention", ins, {"bias": _f(rng, 24)}, ["q", "k", "v", "bias"], ["y"],
                      {"num_heads": 2}), ins


def case_multihead_attention_padding_mask_and_bias(rng):
    q, k, v = _f(rng, 2, 3, 8), _f(rng, 2, 5, 8), _f(rng, 2, 5, 8)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    ins = {"q": q, "k": k, "v": v, "mask": mask}
    return _attention("MultiHeadAttention", ins, {"ab": _f(rng, 1, 2, 3, 5)}, ["q", "k", "v", "", "mask", "ab"],
                      ["y"], {"num_heads": 2, "scale": 0.3}), ins


def case_multihead_attention_key_lengths(rng):
    q, k, v = _f(rng, 2, 3, 8), _f(rng, 2, 5, 8), _f(rng, 2, 5, 8)
    ins = {"q": q, "k": k, "v": v, "mask": np.array([2, 5], np.int32)}
    return _attention("MultiHeadAttention", ins, {}, ["q", "k", "v", "", "mask"], ["y"], {"num_heads": 2}), ins


def case_multihead_attention_past_unidirectional(rng):
    q, k, v = _f(rng, 2, 3, 8), _f(rng, 2, 3, 8), _f(rng, 2, 3, 8)
    ins = {"q": q, "k": k, "v": v, "pk": _f(rng, 2, 2, 4, 4), "pv": _f(rng, 2, 2, 4, 4),
           "mask": np.array([[1] * 7, [1] * 6 + [0]], np.int32)}
    return _attention("MultiHeadAttention", ins, {"bias": _f(rng, 24)},
                      ["q", "k", "v", "bias", "mask", "", "pk", "pv"], ["y", "present_key", "present_value"],
                      {"num_heads": 2, "unidirectional": 1}), ins


def case_attention(rng):
    x = _f(rng, 2, 4, 8)
    ins = {"x": x, "mask": np.array([3, 4], np.int32)}
    return _attention("Attention", ins, {"w": _f(rng, 8, 24) * 0.5, "b": _f(rng, 24)}, ["x", "w", "b", "mask"],
                      ["y"], {"num_heads": 2}), ins


def case_attention_past_unidirectional(rng):
    x = _f(rng, 2, 3, 8)
    mask = np.ones((2, 3, 5), np.int32)
    mask[1, :, 0] = 0
    mask[0, 2, 1] = 0
    ins = {"x": x, "mask": mask, "past": _f(rng, 2, 2, 2, 2, 4)}
    return _attention("Attention", ins, {"w": _f(rng, 8, 24) * 0.5, "b": _f(rng, 24)},
                      ["x", "w", "b", "mask", "past"], ["y", "present"], {"num_heads": 2, "unidirectional": 1}), ins


def case_attention_value_size_and_end_start_mask(rng):
    x = _f(rng, 2, 4, 8)
    ins = {"x": x, "mask": np.array([4, 3, 1, 0], np.int32)}
    return _attention("Attention", ins, {"w": _f(rng, 8, 28) * 0.5, "b": _f(rng, 28), "ab": _f(rng, 2, 2, 4, 4)},
                      ["x", "w", "b", "mask", "", "ab"], ["y"], {"num_heads": 2, "qkv_hidden_sizes": [8, 8, 12]}), ins


def _gqa(rng, s: int, past: int, seqlens, total: int, packed=False, outputs=("y", "pk_out", "pv_out"),
         rotary=None, head=8, **extra):
    b = len(seqlens)
    q = _f(rng, b, s, 4 * head * (2 if packed else 1))  # 4 query heads, 2 key/value heads
    ins = {"q": q} if packed else {"q": q, "k": _f(rng, b, s, 2 * head), "v": _f(rng, b, s, 2 * head)}
    if past:
        ins.update(pk=_f(rng, b, 2, past, head), pv=_f(rng, b, 2, past, head))
    consts = {"seqlens": np.array(seqlens, np.int32), "total": np.array(total, np.int32)}
    names = ["q", "" if packed else "k", "" if packed else "v", "pk" if past else "", "pv" if past else "",
             "seqlens", "total"]
    attrs = {"num_heads": 4, "kv_num_heads": 2, **extra}
    if rotary is not None:  # caches for 16 positions, the rotary dimension the whole head
        angles = np.arange(16)[:, None] * (10000.0 ** (-np.arange(head // 2) / (head // 2)))[None, :]
        consts.update(cos=np.cos(angles).astype(np.float32), sin=np.sin(angles).astype(np.float32))
        names += ["cos", "sin"]
        attrs.update(do_rotary=1, rotary_interleaved=rotary)
    node = helper.make_node("GroupQueryAttention", names, ["y", "pk_out", "pv_out"], domain="com.microsoft", **attrs)
    g = helper.make_graph([node], "gqa", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
                                          for k, v in ins.items()],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [None] * _RANK[o]) for o in outputs],
                          [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), ins


def case_group_query_attention(rng):
    return _gqa(rng, 4, 0, [3, 3], 4)


def case_group_query_attention_decode_seqlens(rng):
    return _gqa(rng, 1, 5, [5, 3], 6, outputs=("y",))  # batch 1 holds 3 valid past keys of the 5


def case_group_query_attention_chunk_after_past(rng):
    return _gqa(rng, 2, 3, [4], 5)  # ONNX Runtime takes one batch when a sequence follows a past


def case_group_query_attention_packed(rng):
    return _gqa(rng, 3, 0, [2, 2], 3, packed=True)


def case_group_query_attention_rotary(rng):
    return _gqa(rng, 3, 0, [2, 2], 3, rotary=0, head=16)  # ONNX Runtime rotates heads of 16k


def case_group_query_attention_rotary_interleaved_decode(rng):
    return _gqa(rng, 1, 4, [4, 2], 5, outputs=("y",), rotary=1, head=16)


def case_group_query_attention_window_decode(rng):
    return _gqa(rng, 1, 5, [5, 3], 6, local_window_size=2)  # batch 0 reads keys 4, 5; batch 1 keys 2, 3


def case_group_query_attention_window_prompt(rng):
    return _gqa(rng, 5, 0, [4, 4], 5, local_window_size=3)


def case_group_query_attention_softcap_chunk_after_past(rng):
    return _gqa(rng, 2, 3, [4], 5, softcap=0.5)


def case_group_query_attention_softcap_window_decode(rng):
    return _gqa(rng, 1, 5, [5, 3], 6, local_window_size=2, softcap=0.7)


def case_group_query_attention_softcap_window_packed_rotary(rng):
    return _gqa(rng, 3, 0, [2, 2], 3, packed=True, rotary=0, head=16, local_window_size=2, softcap=1.0)


def case_matmul_nbits(rng):
    # 4-bit weights {N, K} packed two a byte along K in blocks of 16, packed zero points (3 blocks a
    # row: each row's last high nibble is padding), a bias; A's leading dimensions folded into rows
    k, n, block = 48, 10, 16
    q = rng.integers(0, 16, (n, k)).astype(U8)
    zq = rng.integers(0, 16, (n, 4)).astype(U8)
    a = rng.standard_normal((2, 3, k)).astype(np.float32)
    consts = {"B": (q[:, 0::2] | (q[:, 1::2] << 4)).astype(U8).reshape(n, k // block, block // 2),
              "scales": (rng.random(n * k // block) * 0.1 + 0.01).astype(np.float32),
              "zp": (zq[:, 0::2] | (zq[:, 1::2] << 4)).astype(U8).reshape(-1),
              "bias": rng.standard_normal(n).astype(np.float32)}
    return _model("MatMulNBits", {"a": a}, consts, TensorProto.FLOAT, attrs={"K": k, "N": n, "bits": 4, "block_size": block},
                  n_inputs=["a", "B", "scales", "zp", "", "bias"]), {"a": a}


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}
FAST = {"qlinear_add", "qgemm", "matmul_nbits", "multihead_attention_past_unidirectional",
        "group_query_attention_decode_seqlens", "group_query_attention_softcap_window_decode"}


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


def test_matmul_nbits_forms_that_dequantize_cannot_express_are_refused():
    m, _ = case_matmul_nbits(np.random.default_rng(0))
    node = m.graph.node[0]
    for attrs, reason in (({"bits": 8}, "bits=8 is not mapped"), ({"block_size": 32}, "K=48 is not a multiple"),
                          ({}, "g_idx")):
        del node.attribute[:]
        node.attribute.extend(helper.make_attribute(k, v) for k, v in
                              {"K": 48, "N": 10, "bits": 4, "block_size": 16, **attrs}.items())
        node.input[4] = "" if attrs else "zp"  # g_idx wired (any tensor) in the last form
        with pytest.raises(dx.OnnxImportError, match=reason):
            dx.load(m)


def test_packed_multihead_attention_matches_the_unpacked_one_in_onnx_runtime():
    """Packed QKV and packed KV (ONNX Runtime's CPU provider runs neither) against its unpacked model."""
    rng = np.random.default_rng(3)
    q, k, v = _f(rng, 2, 3, 8), _f(rng, 2, 3, 8), _f(rng, 2, 3, 8)
    heads = lambda x: x.reshape(2, 3, 2, 4)  # noqa: E731
    plain = _attention("MultiHeadAttention", {"q": q, "k": k, "v": v}, {}, ["q", "k", "v"], ["y"], {"num_heads": 2})
    want = _ort(plain, {"q": q, "k": k, "v": v})[0]
    qkv = np.stack([heads(q), heads(k), heads(v)], axis=3)
    m = _attention("MultiHeadAttention", {"qkv": qkv}, {}, ["qkv"], ["y"], {"num_heads": 2})
    _close(np.asarray(dx.load(m)(qkv)[0]), want)
    kv = np.stack([heads(k), heads(v)], axis=3)
    m = _attention("MultiHeadAttention", {"q": q, "kv": kv}, {}, ["q", "kv"], ["y"], {"num_heads": 2})
    _close(np.asarray(dx.load(m)(q, kv)[0]), want)


def test_attention_forms_that_directml_cannot_express_are_refused_together():
    x = np.zeros((1, 2, 8), np.float32)
    gqa = helper.make_node("GroupQueryAttention", ["x", "x", "x", "", "", "sl", "t"], ["y", "pk", "pv"],
                           domain="com.microsoft", name="windowed", num_heads=2, kv_num_heads=2, local_window_size=0,
                           softcap=-30.0, do_rotary=1)
    att = helper.make_node("Attention", ["x", "w"], ["z"], domain="com.microsoft", name="rotary", num_heads=2,
                           do_rotary=1)
    g = helper.make_graph([gqa, att], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [None] * 3)],
                          [numpy_helper.from_array(np.ones(1, np.int32), "sl"),
                           numpy_helper.from_array(np.array(2, np.int32), "t"),
                           numpy_helper.from_array(np.zeros((8, 24), np.float32), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(dx.OnnxImportError) as e:
        dx.load(m)
    text = str(e.value)
    assert "'windowed'" in text and "local_window_size 0: -1 (no window) or a positive number" in text, text
    assert "softcap -30.0: 0 (none) or positive" in text, text
    assert "do_rotary=1 without cos_cache and sin_cache" in text, text
    assert "'rotary'" in text and "do_rotary=1" in text, text


@pytest.mark.slow
@settings(max_examples=10, deadline=None)
@given(st.data())
def test_group_query_attention_window_and_softcap_match_onnx_runtime(data):
    """Any window (wider than the keys too), softcap or neither, on a first prompt, a decode step after a
    past of uneven batches, or a chunk after a past."""
    s, past, seqlens, total = data.draw(st.sampled_from([(4, 0, [3, 3], 4), (1, 5, [5, 2], 6), (2, 3, [4], 5)]))
    extra = {}
    if data.draw(st.booleans()):
        extra["local_window_size"] = data.draw(st.integers(1, 7))
    if data.draw(st.booleans()):
        extra["softcap"] = data.draw(st.sampled_from([0.25, 1.0, 4.0, 50.0]))
    m, ins = _gqa(np.random.default_rng(data.draw(st.integers(0, 99))), s, past, seqlens, total, **extra)
    _run(m, ins)


@pytest.mark.slow
def test_an_encoder_with_fused_attention_matches_onnx_runtime(tmp_path):
    """A one-layer BERT-style encoder from transformers (random weights, eager attention), optimized by ONNX
    Runtime's transformer optimizer so that its attention is one com.microsoft node, end to end."""
    torch = pytest.importorskip("torch", reason="exporting the encoder needs torch")
    transformers = pytest.importorskip("transformers", reason="the encoder comes from transformers")
    from onnxruntime.transformers import optimizer

    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=32)
    config._attn_implementation = "eager"  # the pattern the optimizer fuses
    bert = transformers.BertModel(config, add_pooling_layer=False).eval()

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    rng = np.random.default_rng(0)
    ids = rng.integers(0, 128, (2, 8)).astype(np.int64)
    mask = np.ones((2, 8), np.int64)
    mask[1, 5:] = 0
    plain, fused = tmp_path / "encoder.onnx", tmp_path / "encoder.optimized.onnx"
    with torch.no_grad():
        torch.onnx.export(Encoder(), (torch.from_numpy(ids), torch.from_numpy(mask)), str(plain),
                          input_names=["input_ids", "attention_mask"], output_names=["hidden"], opset_version=17,
                          dynamo=False)
    optimizer.optimize_model(str(plain), model_type="bert", num_heads=4, hidden_size=32,
                             opt_level=0).save_model_to_file(str(fused))
    m = onnx.load(str(fused))
    fused_ops = {n.op_type for n in m.graph.node if n.domain == "com.microsoft"}
    assert fused_ops & {"Attention", "MultiHeadAttention"}
    inputs = {"input_ids": ids, "attention_mask": mask}
    got = np.asarray(dx.load(m)(ids, mask)[0])
    want = _ort(m, inputs)[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-4 * max(1.0, float(np.abs(want).max()))


@pytest.mark.slow
def test_attention_max_sequence_mask_reads_its_corner():
    """Attention's {batch, 1, max, max} mask (which ONNX Runtime's CPU provider does not run) against its
    {batch, sequence, total} corner in ONNX Runtime."""
    rng = np.random.default_rng(1)
    x, w, b = _f(rng, 2, 4, 8), _f(rng, 8, 24) * 0.5, _f(rng, 24)
    m4 = (rng.random((2, 1, 6, 6)) > 0.3).astype(np.int32)
    m4[..., 0] = 1
    m3 = np.ascontiguousarray(m4[:, 0, :4, :4])
    model = _attention("Attention", {"x": x, "mask": m4}, {"w": w, "b": b}, ["x", "w", "b", "mask"], ["y"],
                       {"num_heads": 2})
    want = _ort(_attention("Attention", {"x": x, "mask": m3}, {"w": w, "b": b}, ["x", "w", "b", "mask"], ["y"],
                           {"num_heads": 2}), {"x": x, "mask": m3})[0]
    _close(np.asarray(dx.load(model)(x, m4)[0]), want)


@pytest.mark.slow
@pytest.mark.parametrize("extra", [{}, {"local_window_size": 3, "softcap": 0.8}], ids=["plain", "window_softcap"])
def test_float16_group_query_attention_matches_onnx_runtime(extra):
    """FLOAT16 runs in FLOAT32 between CASTs (the provider's graph): within a FLOAT16 step of ONNX Runtime."""
    m, ins = _gqa(np.random.default_rng(2), 1, 5, [5, 3], 6, outputs=("y",), **extra)
    for vi in list(m.graph.input) + list(m.graph.output):
        vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    ins = {k: v.astype(np.float16) for k, v in ins.items()}
    got, want = np.asarray(dx.load(m)(*ins.values())[0]), _ort(m, ins)[0]
    assert got.dtype == want.dtype == np.float16
    assert np.abs(got.astype(np.float32) - want.astype(np.float32)).max() <= 2.0**-10 * max(1.0, float(np.abs(want).max()))


def test_a_mask_directml_cannot_read_is_refused_at_load_with_every_other_problem():
    """A {3 * batch + 2} key_padding_mask (ONNX Runtime's packed bounds) and an attention_bias of the wrong
    sequence, in a model that declares its shapes: refused at load, in the one error that also names an
    unmappable node (node, operator, opset, reason)."""
    q = np.zeros((2, 3, 8), np.float32)
    ins = {"q": q, "k": q, "v": q, "mask": np.zeros(8, np.int32), "ab": np.zeros((1, 2, 4, 3), np.float32)}
    m = _attention("MultiHeadAttention", ins, {}, ["q", "k", "v", "", "mask", "ab"], ["y"], {"num_heads": 2})
    m.graph.node[0].name = "attend"
    m.graph.node.append(helper.make_node("FastGelu", ["y"], ["z"], domain="com.microsoft", name="act"))
    with pytest.raises(dx.OnnxImportError) as e:
        dx.load(m)
    text = " ".join(str(e.value).split())
    assert "node 'attend' (MultiHeadAttention, com.microsoft opset 1) mask has shape [8]; supported: {2} key lengths" in text
    assert "attention_bias has shape [1, 2, 4, 3]; supported: {2 or 1, 2 or 1, 3, 3}" in text
    assert "node 'act' (FastGelu, com.microsoft opset 1)" in text, text


def test_attention_masks_of_static_shapes_that_directml_reads_load():
    """The forms the MaskTensor reads pass the load-time check: key lengths, {batch, total} with a past, and
    Attention's {batch, 1, max, max} corner."""
    q = np.zeros((2, 3, 8), np.float32)
    ins = {"q": q, "k": q, "v": q, "pk": np.zeros((2, 2, 4, 4), np.float32), "pv": np.zeros((2, 2, 4, 4), np.float32),
           "mask": np.ones((2, 7), np.int32)}
    dx.load(_attention("MultiHeadAttention", ins, {}, ["q", "k", "v", "", "mask", "", "pk", "pv"], ["y"],
                       {"num_heads": 2}))
    x = np.zeros((2, 4, 8), np.float32)
    dx.load(_attention("Attention", {"x": x, "mask": np.ones((2, 1, 6, 6), np.int32)}, {"w": np.zeros((8, 24), np.float32)},
                       ["x", "w", "", "mask"], ["y"], {"num_heads": 2}))


def test_a_mask_directml_cannot_read_is_refused_when_traced_where_shapes_are_symbolic():
    """Where the model's shapes are symbolic, the shape is known at the call: refused when traced."""
    q = np.zeros((2, 3, 8), np.float32)
    ins = {"q": q, "k": q, "v": q, "mask": np.zeros(8, np.int32)}
    m = _attention("MultiHeadAttention", ins, {}, ["q", "k", "v", "", "mask"], ["y"], {"num_heads": 2})
    for vi in m.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            d.dim_param = "n"
    with pytest.raises(ValidationError, match=r"MultiHeadAttention \(com.microsoft\) mask has shape \[8\]"):
        dx.load(m)(*ins.values())
