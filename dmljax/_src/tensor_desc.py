"""DML_TENSOR_DESC / DML_BUFFER_TENSOR_DESC: a DataType, Sizes and optional Strides."""

from __future__ import annotations

import dataclasses
from typing import Sequence

from dmljax._src.dtypes import DataType

__all__ = ["TensorDesc", "packed_strides"]


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Strides (in elements) of a contiguously packed tensor: the last dimension varies fastest."""
    strides, step = [], 1
    for s in reversed(sizes):
        strides.append(step)
        step *= s
    return tuple(reversed(strides))


@dataclasses.dataclass(frozen=True)
class TensorDesc:
    """A tensor's DataType, Sizes and optional Strides (in elements), frozen and hashable.

    ``Strides=None`` means packed. Strides express broadcasting (0) and padding; they never
    change what the operator computes, only where the elements live in the buffer.
    """

    data_type: DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "data_type", DataType.parse(self.data_type))
        object.__setattr__(self, "sizes", tuple(int(s) for s in self.sizes))
        if self.strides is not None:
            object.__setattr__(self, "strides", tuple(int(s) for s in self.strides))
        problems = []
        if not self.sizes:
            problems.append("Sizes is empty: a tensor has 1 to 8 dimensions")
        if any(s <= 0 for s in self.sizes):
            problems.append(f"Sizes {list(self.sizes)} has a size below 1 (a zero size is invalid)")
        if self.strides is not None:
            if len(self.strides) != len(self.sizes):
                problems.append(
                    f"Strides {list(self.strides)} has {len(self.strides)} entries for "
                    f"{len(self.sizes)} dimensions: one stride per dimension")
            if any(s < 0 for s in self.strides):
                problems.append(f"Strides {list(self.strides)} has a negative stride (strides are UINT)")
        if problems:
            raise ValueError("TensorDesc: " + "; ".join(problems))

    @property
    def dimension_count(self) -> int:
        return len(self.sizes)

    @property
    def effective_strides(self) -> tuple[int, ...]:
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    @property
    def element_count(self) -> int:
        n = 1
        for s in self.sizes:
            n *= s
        return n

    @classmethod
    def from_array(cls, x) -> "TensorDesc":
        """The packed desc of an array (its DataType must be a DirectML type)."""
        return cls(DataType.parse(x.dtype), tuple(x.shape))
