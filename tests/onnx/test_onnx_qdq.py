"""``load(..., fuse_qdq=True)``: QDQ groups fused into quantized operators as ONNX Runtime's CPU
provider fuses them (onnx/qdq.py). Each pattern on a small constructed graph: what dmljax fuses is
what ONNX Runtime fuses (its optimized graph, written out at the extended level), the fused
outputs equal ONNX Runtime's, and the unfused graph's are within one quantization step of them;
and the groups that must stay unfused (a second reader, a graph output, per-axis activation
scales, INT8 activations, a Relu the quantization does not make redundant)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="comparing with ONNX Runtime needs onnxruntime (the test extra)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from tests.tiers import by_tier  # noqa: E402

U8, I8, I32, F32 = np.uint8, np.int8, np.int32, np.float32


class _Graph:
    """A graph under construction: initializers, nodes, one FLOAT32 input ``x``."""

    def __init__(self, shape):
        self.shape = shape
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, value, name=None) -> str:
        self.count += 1
        name = name or f"c{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, name=None, **attrs) -> str:
        self.count += 1
        out = f"v{self.count}"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name or f"{op}_{self.count}", **attrs))
        return out

    def q(self, x, scale, zp, **attrs) -> str:
        return self.node("QuantizeLinear", [x, self.const(np.asarray(scale, F32)),
                                            self.const(np.asarray(zp))], **attrs)

    def dq(self, x, scale, zp=None, **attrs) -> str:
        ins = [x, self.const(np.asarray(scale, F32))] + ([] if zp is None else [self.const(np.asarray(zp))])
        return self.node("DequantizeLinear", ins, **attrs)

    def model(self, outputs, rank: int = 4):
        """The model whose outputs are ``outputs``: (name, TensorProto type) pairs of ``rank`` dimensions."""
        g = helper.make_graph(self.nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.shape)],
                              [helper.make_tensor_value_info(o, t, [None] * rank) for o, t in outputs],
                              self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def _conv_graph(rng, *, group=1, cin=4, cout=6, per_channel=True, bias="int32", act=U8, relu_zp=None,
                second_reader=False, conv_output=False, const_weight=True):
    g = _Graph([1, cin, 7, 7])
    zp = U8(128) if act == U8 else I8(3)
    x = g.dq(g.q("x", 0.05, zp), 0.05, zp)
    w_scale = (rng.uniform(0.002, 0.02, cout).astype(F32) if per_channel else F32(0.01))
    w_q = rng.integers(-127, 128, (cout, cin // group, 3, 3)).astype(I8)
    if const_weight:
        w = g.dq(g.const(w_q), w_scale, np.zeros(cout, I8) if per_channel else I8(0), axis=0)
    else:  # the weight computed at run time: quantized from the input's own values
        part = g.node("Slice", ["x", g.const(np.zeros(4, np.int64)), g.const(np.array([1, cin, 6, 6], np.int64))])
        w = g.dq(g.q(g.node("Reshape", [part, g.const(np.array([cout, cin // group, 3, 3], np.int64))]),
                     0.01, I8(0)), 0.01, I8(0))
    ins = [x, w]
    if bias == "int32":
        scale = (0.05 * w_scale).astype(F32) if per_channel else F32(0.05 * 0.01)
        ins.append(g.dq(g.const(rng.integers(-2000, 2000, cout).astype(I32)), scale,
                        np.zeros(cout, I32) if per_channel else I32(0), axis=0))
    elif bias == "float":
        ins.append(g.const(rng.standard_normal(cout).astype(F32)))
    y = g.node("Conv", ins, name="conv", pads=[1, 1, 1, 1], group=group)
    outs = []
    if second_reader:
        outs.append((g.node("Abs", [y]), TensorProto.FLOAT))
    if conv_output:
        outs.append((y, TensorProto.FLOAT))
    if relu_zp is not None:
        y = g.node("Relu", [y], name="relu")
    yq = g.q(y, 0.08, act(relu_zp if relu_zp is not None else (128 if act == U8 else 0)))
    return g.model([(yq, TensorProto.UINT8 if act == U8 else TensorProto.INT8)] + outs)


def _ort_fused(model) -> list[str]:
    """The op types of ONNX Runtime's CPU graph after its extended optimizations."""
    import tempfile  # noqa: PLC0415
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    with tempfile.TemporaryDirectory() as d:
        so.optimized_model_filepath = f"{d}/o.onnx"
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sorted(n.op_type for n in onnx.load(f"{d}/o.onnx").graph.node
                      if n.op_type.startswith("Q") and n.op_type != "QuantizeLinear")


def _ours(model) -> list[str]:
    return sorted(f.fused for f in dx.load(model).fused_qdq)


def _run_all(model, x):
    fused = [np.asarray(o) for o in dx.load(model)(x)]
    plain = [np.asarray(o) for o in dx.load(model, fuse_qdq=False)(x)]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    return fused, plain, want


def _steps(a, b) -> int:
    return int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)))) if a.size else 0


# ------------------------------------------------------------------------------------ what is fused
CASES = {
    "conv per channel": (dict(), ["QLinearConv"]),
    "conv per tensor, no bias": (dict(per_channel=False, bias=None), ["QLinearConv"]),
    "depthwise conv": (dict(group=4, cout=4), ["QLinearConv"]),
    "conv, redundant relu": (dict(relu_zp=0), ["QLinearConv"]),
    "conv, run-time weight": (dict(const_weight=False, per_channel=False, bias=None, cout=4, cin=4),
                              ["QLinearConv"]),
    "conv, FLOAT32 bias (quantized first)": (dict(bias="float"), ["QLinearConv"]),
    # must stay unfused
    "relu the quantization keeps": (dict(relu_zp=128), []),
    "second reader": (dict(second_reader=True), []),
    "conv output is a graph output": (dict(conv_output=True), []),
    "int8 activations": (dict(act=I8), []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fuses_what_onnx_runtime_fuses(case):
    kwargs, expected = CASES[case]
    model = _conv_graph(np.random.default_rng(1), **kwargs)
    assert _ours(model) == expected
    assert _ort_fused(model) == expected
    assert dx.load(model, fuse_qdq=False).fused_qdq == ()


def test_per_axis_activation_scale_stays_unfused():
    # ONNX Runtime's selector takes it and its QLinearConv kernel then refuses the per-axis x_scale;
    # dmljax leaves the group as written
    g = _Graph([1, 4, 5, 5])
    x = g.dq(g.q("x", np.full(4, 0.05, F32), np.full(4, 128, U8)), np.full(4, 0.05, F32), np.full(4, 128, U8))
    w = g.dq(g.const(np.ones((2, 4, 1, 1), I8)), F32(0.01), I8(0))
    model = g.model([(g.q(g.node("Conv", [x, w]), 0.1, U8(128)), TensorProto.UINT8)])
    assert _ours(model) == []


def _binary_graph(op, scales=(0.03, 0.05, 0.07)):
    g = _Graph([2, 3, 4])
    a = g.dq(g.q("x", scales[0], U8(120)), scales[0], U8(120))
    b = g.dq(g.q(g.node("Neg", ["x"]), scales[1], U8(131)), scales[1], U8(131))
    return g.model([(g.q(g.node(op, [a, b]), scales[2], U8(125)), TensorProto.UINT8)], rank=3)


def _unary_graph(op, **attrs):
    g = _Graph([1, 3, 6, 6])
    a = g.dq(g.q("x", 0.04, U8(128)), 0.04, U8(128))
    return g.model([(g.q(g.node(op, [a], **attrs), 0.02, U8(100)), TensorProto.UINT8)])


def _matmul_graph(rng, gemm=False):
    g = _Graph([3, 8])
    a = g.dq(g.q("x", 0.04, U8(128)), 0.04, U8(128))
    ws = rng.uniform(0.005, 0.02, 5).astype(F32)
    if gemm:  # Gemm (transB=1): B {N, K} per output channel, an INT32 bias
        b = g.dq(g.const(rng.integers(-127, 128, (5, 8)).astype(I8)), ws, np.zeros(5, I8), axis=0)
        c = g.dq(g.const(rng.integers(-500, 500, 5).astype(I32)), (0.04 * ws).astype(F32), np.zeros(5, I32), axis=0)
        y = g.node("Gemm", [a, b, c], transB=1)
    else:
        b = g.dq(g.const(rng.integers(-127, 128, (8, 5)).astype(I8)), ws, np.zeros(5, I8), axis=1)
        y = g.node("MatMul", [a, b])
    return g.model([(g.q(y, 0.1, U8(128)), TensorProto.UINT8)], rank=2)


OTHER = {
    "matmul": (lambda: _matmul_graph(np.random.default_rng(2)), ["QLinearMatMul"]),
    "gemm": (lambda: _matmul_graph(np.random.default_rng(2), gemm=True), ["QGemm"]),
    "add": (lambda: _binary_graph("Add"), ["QLinearAdd"]),
    "mul": (lambda: _binary_graph("Mul"), ["QLinearMul"]),
    "global average pool": (lambda: _unary_graph("GlobalAveragePool"), ["QLinearGlobalAveragePool"]),
    "average pool": (lambda: _unary_graph("AveragePool", kernel_shape=[3, 3]), ["QLinearAveragePool"]),
    "sigmoid": (lambda: _unary_graph("Sigmoid"), ["QLinearSigmoid"]),
    "leaky relu": (lambda: _unary_graph("LeakyRelu", alpha=0.2), ["QLinearLeakyRelu"]),
    "max pool (not a fused pattern)": (lambda: _unary_graph("MaxPool", kernel_shape=[2, 2]), []),
}


@pytest.mark.parametrize("case", list(OTHER))
def test_other_patterns_fuse_as_onnx_runtime(case):
    make, expected = OTHER[case]
    model = make()
    assert _ours(model) == expected
    if case != "max pool (not a fused pattern)":  # ONNX Runtime drops MaxPool's pair instead (same values)
        assert _ort_fused(model) == expected


def test_fused_conv_equals_onnx_runtime_and_the_unfused_graph_within_a_step():
    model = _conv_graph(np.random.default_rng(3))
    x = _input([1, 4, 7, 7])
    fused, plain, want = _run_all(model, x)
    assert fused[0].dtype == np.uint8
    assert _steps(fused[0], want[0]) == 0
    assert _steps(plain[0], fused[0]) <= 1


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c, (_, e) in CASES.items() if e] + [c for c, (_, e) in OTHER.items() if e])
def test_each_pattern_against_onnx_runtime(case):
    if case in CASES:
        model, shape = _conv_graph(np.random.default_rng(4), **CASES[case][0]), [1, 4, 7, 7]
    else:
        model = OTHER[case][0]()
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = _input(shape, 5)
    fused, plain, want = _run_all(model, x)
    # QLinearAdd, QLinearMul and the through-FLOAT32 unary forms round as DirectML's pages say,
    # ONNX Runtime's kernels by their fixed-point or table forms: within a step of each other
    tolerance = 0 if case in CASES or case in ("matmul", "gemm", "average pool", "global average pool") else 1
    assert _steps(fused[0], want[0]) <= tolerance, case
    assert _steps(plain[0], fused[0]) <= 1, case


# ------------------------------------------------------------------------------------ the option
@settings(max_examples=by_tier(8, 60), deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=3), st.floats(allow_nan=False), st.booleans()))
def test_fuse_qdq_takes_true_or_false(value):
    model = _binary_graph("Add")
    if isinstance(value, bool):
        assert len(dx.load(model, fuse_qdq=value).fused_qdq) == int(value)
    else:
        with pytest.raises(dx.OnnxImportError, match="fuse_qdq.*True or False"):
            dx.load(model, fuse_qdq=value)


@pytest.mark.slow
@settings(max_examples=by_tier(3, 25), deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([1, 2, 4]), st.booleans(), st.booleans(),
       st.floats(0.001, 0.2), st.integers(0, 255))
def test_fused_conv_fuzzed_against_onnx_runtime(seed, group, per_channel, with_bias, y_scale, y_zp):
    rng = np.random.default_rng(seed)
    cin = 4
    cout = 4 if group == 4 else 6 - (6 % group)
    g = _Graph([1, cin, 6, 6])
    x = g.dq(g.q("x", 0.05, U8(rng.integers(0, 256))), 0.05, U8(rng.integers(0, 256)))
    ws = rng.uniform(0.002, 0.03, cout).astype(F32) if per_channel else F32(rng.uniform(0.002, 0.03))
    w = g.dq(g.const(rng.integers(-127, 128, (cout, cin // group, 3, 3)).astype(I8)), ws,
             np.zeros(cout, I8) if per_channel else I8(0), axis=0)
    ins = [x, w]
    if with_bias:
        ins.append(g.dq(g.const(rng.integers(-3000, 3000, cout).astype(I32)), (F32(0.05) * ws).astype(F32),
                        np.zeros(cout, I32) if per_channel else I32(0), axis=0))
    model = g.model([(g.q(g.node("Conv", ins, pads=[1, 1, 1, 1], group=group, strides=[1 + seed % 2] * 2),
                          F32(y_scale), U8(y_zp)), TensorProto.UINT8)])
    assert _ours(model) == ["QLinearConv"]
    fused, plain, want = _run_all(model, _input([1, cin, 6, 6], seed % 1000))
    assert _steps(fused[0], want[0]) == 0
    assert _steps(plain[0], fused[0]) <= 1
