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
             helper.make_node("Einsum", ["a", "a"], ["b"], name="einsum1", equation="ij,ij->ij"),
             helper.make_node("Reshape", ["b", "shape"], ["c"], name="reshape_dynamic"),
             helper.make_node("StringNormalizer", ["c"], ["d"], name="strings")]
    graph = helper.make_graph(nodes, "bad", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                                             helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("d", TensorProto.FLOAT, [3, 2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
