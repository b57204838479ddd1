"""Small factories for the tensor lists, constraints and support tables that whole families of
operators share (unary and binary element-wise operators and activations)."""

from __future__ import annotations

from dmljax._src.spec import SameDataType, SameSizes, SupportTable, TensorSpec, table

__all__ = [
    "UNARY_TENSORS", "UNARY_CONSTRAINTS", "unary_table",
    "BINARY_TENSORS", "BINARY_CONSTRAINTS", "binary_table",
]

UNARY_TENSORS = (TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output"))
# "InputTensor and OutputTensor must have the same DataType, DimensionCount, and Sizes."
UNARY_CONSTRAINTS = (
    SameDataType(("InputTensor", "OutputTensor")),
    SameSizes(("InputTensor", "OutputTensor")),
)


def unary_table(level: str, dims: str, types: str) -> SupportTable:
    """A unary page's table, whose two rows are the same."""
    return table(level, InputTensor=(dims, types), OutputTensor=(dims, types))


BINARY_TENSORS = (
    TensorSpec("ATensor", "input"),
    TensorSpec("BTensor", "input"),
    TensorSpec("OutputTensor", "output"),
)
# "ATensor, BTensor, and OutputTensor must have the same DataType, DimensionCount, and Sizes."
BINARY_CONSTRAINTS = (
    SameDataType(("ATensor", "BTensor", "OutputTensor")),
    SameSizes(("ATensor", "BTensor", "OutputTensor")),
)


def binary_table(level: str, dims: str, types: str) -> SupportTable:
    """A binary page's table, whose three rows are the same."""
    return table(level, ATensor=(dims, types), BTensor=(dims, types), OutputTensor=(dims, types))
