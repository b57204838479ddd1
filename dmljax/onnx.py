"""Import ONNX models as jitted, differentiable JAX functions of dmljax's DirectML operators
(``pip install "dmljax[onnx]"``)."""

from dmljax._src.onnx.errors import OnnxImportError
from dmljax._src.onnx.loader import MIN_OPSET, NodeInfo, OnnxModel, load, max_opset, random_inputs

__all__ = ["MIN_OPSET", "NodeInfo", "OnnxImportError", "OnnxModel", "load", "max_opset", "random_inputs"]
