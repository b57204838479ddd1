"""Small ONNX models built with onnx.helper for the import tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def classifier(seed: int = 0, opset: int = 17, batch: object = "N") -> onnx.ModelProto:
    """x (batch, 4) -> Gemm -> Relu -> MatMul + Add -> logits (batch, 3): a tiny classifier with
    float parameters, a Reshape whose shape is an initializer and a Shape-computed Flatten."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32) * 0.5, "w1"),
             numpy_helper.from_array(np.zeros(8, np.float32), "b1"),
             numpy_helper.from_array(rng.standard_normal((8, 3)).astype(np.float32) * 0.5, "w2"),
             numpy_helper.from_array(np.zeros(3, np.float32), "b2"),
             numpy_helper.from_array(np.array([-1, 8], np.int64), "shape")]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Shape", ["r"], ["s"], name="shape_of"),
             helper.make_node("Reshape", ["r", "shape"], ["r2"], name="reshape"),
             helper.make_node("MatMul", ["r2", "w2"], ["m"], name="fc2"),
             helper.make_node("Add", ["m", "b2"], ["logits"], name="bias2")]
    graph = helper.make_graph(nodes, "classifier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def unsupported(opset: int = 17) -> onnx.ModelProto:
    """A graph with two nodes that cannot be mapped and one static input fed from a graph input."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Det", ["a"], ["b"], name="det1"),
             helper.make_node("Reshape", ["b", "shape"], ["c"], name="reshape_dynamic"),
             helper.make_node("StringNormalizer", ["c"], ["d"], name="strings")]
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                             helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("d", TensorProto.FLOAT, [3, 2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _f(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def if_model(opset: int = 17, static_condition: bool | None = None) -> onnx.ModelProto:
    """y = If(sum(x) > 0, then: x * w + b, else: x - b): both branches read the outer scope (the
    graph input x, the initializers w and b, the outer node output xw). With
    ``static_condition``, the condition is an initializer instead."""
    w = numpy_helper.from_array(np.array([2.0, -3.0, 0.5], np.float32), "w")
    b = numpy_helper.from_array(np.array([1.0, 1.0, -1.0], np.float32), "b")
    then_g = helper.make_graph([helper.make_node("Add", ["xw", "b"], ["t"], name="add")], "then", [],
                               [_f("t", [2, 3])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "b"], ["e"], name="sub")], "else", [],
                               [_f("e", [2, 3])])
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"], name="mul")]
    inits = [w, b]
    if static_condition is None:
        nodes += [helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
                  helper.make_node("Greater", ["s", "zero"], ["c"], name="positive")]
        inits.append(numpy_helper.from_array(np.array(0.0, np.float32), "zero"))
    else:
        inits.append(numpy_helper.from_array(np.array(static_condition), "c"))
    nodes.append(helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g))
    graph = helper.make_graph(nodes, "if_model", [_f("x", [2, 3])], [_f("y", [2, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def loop_model(trips: int = 4, opset: int = 17) -> onnx.ModelProto:
    """A Loop of a static trip count whose condition stays true: h <- tanh(h * w + x) each
    iteration (x and w from the outer scope), every h also a scan output."""
    w = numpy_helper.from_array(np.array([0.9, -0.4, 1.3], np.float32), "w")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
         helper.make_node("Mul", ["h_in", "w"], ["hw"], name="mul"),
         helper.make_node("Add", ["hw", "x"], ["pre"], name="add"),
         helper.make_node("Tanh", ["pre"], ["h_out"], name="tanh"),
         helper.make_node("Identity", ["h_out"], ["h_seq"], name="out")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), _f("h_in", [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _f("h_out", [3]), _f("h_seq", [3])])
    inits = [w, numpy_helper.from_array(np.array(trips, np.int64), "M"),
             numpy_helper.from_array(np.array(True), "go")]
    nodes = [helper.make_node("Loop", ["M", "go", "h0"], ["h", "hs"], name="loop", body=body)]
    graph = helper.make_graph(nodes, "loop_model", [_f("x", [3]), _f("h0", [3])], [_f("h", [3]), _f("hs", [trips, 3])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def while_model(opset: int = 17) -> onnx.ModelProto:
    """A Loop without a trip count whose condition is a runtime value: x doubles while its sum is
    below 100 (a while loop)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["x_in", "x_in"], ["x_out"], name="double"),
         helper.make_node("ReduceSum", ["x_out"], ["s"], name="sum", keepdims=0),
         helper.make_node("Less", ["s", "limit"], ["cond_out"], name="below")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), _f("x_in", [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _f("x_out", [3])])
    nodes = [helper.make_node("Loop", ["", "", "x"], ["y"], name="loop", body=body)]
    graph = helper.make_graph(nodes, "while_model", [_f("x", [3])], [_f("y", [3])],
                              [numpy_helper.from_array(np.array(100.0, np.float32), "limit")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def scan_model(opset: int = 17) -> onnx.ModelProto:
    """A Scan over axis 1 of x (2, 4), backwards, with a running sum as its state and each step's
    sum times w (outer scope) as a scan output stacked on axis 1."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"], name="add"),
         helper.make_node("Mul", ["s_out", "w"], ["y_t"], name="scale")],
        "body", [_f("s_in", [2]), _f("x_t", [2])], [_f("s_out", [2]), _f("y_t", [2])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["s", "y"], name="scan", body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])]
    graph = helper.make_graph(nodes, "scan_model", [_f("s0", [2]), _f("x", [2, 4])], [_f("s", [2]), _f("y", [2, 4])],
                              [numpy_helper.from_array(np.array([0.5, -2.0], np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def glue_model(opset: int = 17) -> onnx.ModelProto:
    """A small network whose mapping needs DirectML's tensor descs between operators: a bias of
    shape (C, 1, 1) broadcast, a transpose followed by a reshape (a copy in DirectML), a Flatten,
    a comparison's BOOL result fed to Where, a Cast and a Concat, two outputs."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w"),
             numpy_helper.from_array(rng.standard_normal((4, 1, 1)).astype(np.float32), "bias"),
             numpy_helper.from_array(rng.standard_normal((64, 5)).astype(np.float32) * 0.2, "fc"),
             numpy_helper.from_array(np.array([1, 64], np.int64), "flat"),
             numpy_helper.from_array(np.array(0.25, np.float32), "half"),
             numpy_helper.from_array(np.zeros((1, 4, 4, 4), np.float32), "zeros")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "bias"], ["cb"], name="bias_add"),
             helper.make_node("Relu", ["cb"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Transpose", ["p"], ["t"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("Reshape", ["t", "flat"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "fc"], ["logits"], name="fc"),
             helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
             helper.make_node("Greater", ["p", "half"], ["big"], name="big"),
             helper.make_node("Where", ["big", "p", "zeros"], ["kept"], name="keep"),
             helper.make_node("Cast", ["big"], ["bigf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Concat", ["kept", "bigf"], ["both"], name="concat", axis=1)]
    graph = helper.make_graph(nodes, "glue", [_f("x", [1, 3, 8, 8])], [_f("probs", [1, 5]), _f("both", [1, 8, 4, 4])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


_ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8,
               np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int32): TensorProto.INT32}


def _quantized_weights(rng, dirs: int, k: int, n: int, dtype, per_column: bool, scale: float):
    """Quantized kernels {dirs, k, n} as ONNX Runtime's quantizer writes them: INT8 with zero points 0, or
    UINT8 with one zero point (131); scales per direction or per column."""
    size = (dirs, n) if per_column else (dirs,)
    if np.dtype(dtype) == np.int8:
        q, zp = rng.integers(-127, 128, (dirs, k, n)).astype(np.int8), np.zeros(size, np.int8)
    else:
        q, zp = rng.integers(0, 256, (dirs, k, n)).astype(np.uint8), np.full(size, 131, np.uint8)
    return q, (scale * rng.uniform(0.2, 2.0, size)).astype(np.float32), zp


def dynamic_quantize_lstm(seed: int = 0, *, seq: int = 5, batch: int = 2, input_size: int = 6, hidden: int = 4,
                          direction: str = "forward", weights=np.int8, per_column: bool = False, bias: bool = True,
                          lengths=None, initial: bool = False, peepholes: bool = False, weight_scale: float = 0.01,
                          outputs=("Y", "Y_h", "Y_c"), **attrs) -> tuple[onnx.ModelProto, dict]:
    """One com.microsoft DynamicQuantizeLSTM node (X {seq, batch, input}, W {dirs, input, 4 hidden} and R
    {dirs, hidden, 4 hidden} of type ``weights``, their scales and zero points) and its graph inputs (X, and
    sequence_lens, initial_h and initial_c where asked for): the model and the inputs by name. ``outputs`` names
    the node's outputs ("" leaves one out); ``attrs`` are the node's other attributes."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    feeds = {"X": rng.standard_normal((seq, batch, input_size)).astype(np.float32)}
    w, ws, wz = _quantized_weights(rng, dirs, input_size, 4 * hidden, weights, per_column, weight_scale)
    r, rs, rz = _quantized_weights(rng, dirs, hidden, 4 * hidden, weights, per_column, weight_scale)
    consts = {"W": w, "R": r, "W_scale": ws, "W_zero_point": wz, "R_scale": rs, "R_zero_point": rz}
    names = ["X", "W", "R", "", "", "", "", "", "W_scale", "W_zero_point", "R_scale", "R_zero_point"]
    if bias:
        consts["B"] = (rng.standard_normal((dirs, 8 * hidden)) * 0.5).astype(np.float32)
        names[3] = "B"
    if lengths is not None:
        feeds["sequence_lens"] = np.asarray(lengths, np.int32)
        names[4] = "sequence_lens"
    if initial:
        for i, name in ((5, "initial_h"), (6, "initial_c")):
            feeds[name] = (rng.standard_normal((dirs, batch, hidden)) * 0.5).astype(np.float32)
            names[i] = name
    if peepholes:
        consts["P"] = (rng.standard_normal((dirs, 3 * hidden)) * 0.5).astype(np.float32)
        names[7] = "P"
    node = helper.make_node("DynamicQuantizeLSTM", names, list(outputs), name="lstm", domain="com.microsoft",
                            direction=direction, hidden_size=hidden, **attrs)
    graph = helper.make_graph(
        [node], "dynamic_quantize_lstm",
        [helper.make_tensor_value_info(k, _ONNX_TYPES[v.dtype], v.shape) for k, v in feeds.items()],
        [_f(o, [None] * (4 if i == 0 else 3)) for i, o in enumerate(outputs) if o],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets), feeds
