"""The one error of ONNX import: a model that cannot be read or mapped, every problem listed."""

from __future__ import annotations

from typing import Sequence

from dmljax._src.errors import ValidationError, Violation

__all__ = ["OnnxImportError", "node_violation", "file_error"]


class OnnxImportError(ValidationError):
    """An ONNX model that dmljax cannot import: the file cannot be read as an ONNX model, its opset
    is outside the supported range, or nodes cannot be mapped onto DirectML operators (each one
    named with its operator, opset and the reason, all in one error)."""

    def __init__(self, model: str, violations: Sequence[Violation]):
        super().__init__("dmljax.onnx.load", f"ONNX model {model}", None, violations)


def node_violation(name: str, op_type: str, opset: int, reason: str, tip: str = "", domain: str = "") -> Violation:
    """One node that cannot be mapped, named with its operator, its domain (ai.onnx where
    ``domain`` is empty) and the model's opset of that domain."""
    return Violation(f"node {name!r} ({op_type}, {domain or 'ai.onnx'} opset {opset})", "", reason, "", tip)


def file_error(model: str, found: str, tip: str = "") -> OnnxImportError:
    """A file that is not a readable ONNX model."""
    return OnnxImportError(model, [Violation("Model", "", found, "", tip)])
