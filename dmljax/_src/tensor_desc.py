"""DML_TENSOR_DESC / DML_BUFFER_TENSOR_DESC: DataType, Flags, Sizes, Strides,
TotalTensorSizeInBytes and GuaranteedBaseOffsetAlignment, validated as the pages say
(dml_buffer_tensor_desc.md, dml-strides.md, dml-helper-functions.md, dml_tensor_flags.md).

``TensorDesc(data_type, sizes, strides=None)`` keeps its original three-argument form; the other
members are keyword arguments with DirectML's defaults. Every problem is collected and raised once
as a ``dmljax.ValidationError``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Sequence

import numpy as np

from dmljax._src.dtypes import DataType
from dmljax._src.errors import ValidationError, Violation, quote

__all__ = [
    "TensorDesc",
    "TensorFlags",
    "packed_strides",
    "calc_buffer_tensor_size",
    "index_of_last_element",
    "overlap_violation",
    "MAX_DIMENSIONS",
    "MAX_ELEMENTS",
    "MINIMUM_BUFFER_TENSOR_ALIGNMENT",
]

MAX_DIMENSIONS = 8  # DML_TENSOR_DIMENSION_COUNT_MAX1
MAX_ELEMENTS = 2**32 - 1  # "may not exceed (2^32 - 1) elements"
MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16  # DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT
_UINT32_MAX = 2**32 - 1
_UINT64_MAX = 2**64 - 1
# Enumerating every offset to prove an output does not overlap itself costs memory; above this
# many elements only the structural test is used.
_EXACT_OVERLAP_LIMIT = 1 << 22

_DESC_HEAD = ("TensorDesc", "DML_BUFFER_TENSOR_DESC", "every feature level")


class TensorFlags(enum.IntFlag):
    """DML_TENSOR_FLAGS (values can be OR'd)."""

    NONE = 0x0
    OWNED_BY_DML = 0x1

    @classmethod
    def parse(cls, value: object) -> "TensorFlags":
        """A member, an int, ``"OWNED_BY_DML"``, ``"DML_TENSOR_FLAG_OWNED_BY_DML"``, or a list
        of those (OR'd). Raises ``ValueError`` naming the valid spellings."""
        if isinstance(value, cls):
            return value
        if isinstance(value, (list, tuple)):
            out = cls.NONE
            for v in value:
                if isinstance(v, (list, tuple)):
                    raise ValueError(f"{quote(value)} is not a DML_TENSOR_FLAGS value (a list holds flags, not lists)")
                out |= cls.parse(v)
            return out
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            value = int(value)
            if value & ~int(cls.OWNED_BY_DML) or value < 0:
                raise ValueError(f"{quote(value)} is not a DML_TENSOR_FLAGS value (0 or 1)")
            return cls(value)
        if isinstance(value, str):
            out = cls.NONE
            for part in value.split("|"):
                key = part.strip().upper()
                if key.startswith("DML_TENSOR_FLAG_"):
                    key = key[len("DML_TENSOR_FLAG_"):]
                if key not in cls.__members__:
                    raise ValueError(
                        f"{quote(value)} is not a DML_TENSOR_FLAGS value; valid: NONE, OWNED_BY_DML "
                        "(or DML_TENSOR_FLAG_NONE, DML_TENSOR_FLAG_OWNED_BY_DML)")
                out |= cls[key]
            return out
        raise ValueError(f"{quote(value)} is not a DML_TENSOR_FLAGS value")


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Strides (in elements) of a contiguously packed tensor: the last dimension varies fastest."""
    strides, step = [], 1
    for s in reversed(sizes):
        strides.append(step)
        step *= s
    return tuple(reversed(strides))


def _element_size(data_type: DataType) -> int | None:
    """DMLCalcBufferTensorSize's element size; None for the 4-bit types, which it does not list."""
    if data_type.bits < 8:
        return None
    return data_type.bits // 8


def index_of_last_element(sizes: Sequence[int], strides: Sequence[int] | None) -> int:
    """``dot(Sizes - 1, Strides)``: the element offset of the last element (packed if no strides)."""
    st = packed_strides(sizes) if strides is None else strides
    return sum((int(s) - 1) * int(t) for s, t in zip(sizes, st))


def calc_buffer_tensor_size(data_type, sizes: Sequence[int], strides: Sequence[int] | None = None) -> int:
    """DMLCalcBufferTensorSize: the minimum bytes a buffer needs for the tensor.

    ``roundup((dot(Sizes - 1, Strides) + 1) * ElementSizeInBytes, 4)``, or, with no strides,
    ``roundup(prod(Sizes) * ElementSizeInBytes, 4)`` (dml-helper-functions.md).

    The page's helper returns 0 for a type it does not list: dmljax raises instead, and for the
    4-bit types (UINT4, INT4, absent from the helper) it counts half a byte per element, rounded
    up. Where the helper's 32-bit ``IndexOfLastElement`` would wrap (an index past 2^32 - 1) dmljax
    raises rather than returning the wrapped size.

    >>> import dmljax
    >>> dmljax.calc_buffer_tensor_size("FLOAT16", [5])
    12
    >>> dmljax.calc_buffer_tensor_size("FLOAT32", [2, 3], strides=[5, 1])
    32
    """
    problems: list[Violation] = []
    try:
        dt = DataType.parse(data_type)
    except ValueError as e:
        problems.append(Violation("DataType", "data_type", f"is {quote(data_type)}", str(e)))
    sizes = _int_list(sizes, "Sizes", "sizes", problems)
    strides = None if strides is None else _int_list(strides, "Strides", "strides", problems)
    if sizes is not None:
        problems += _size_problems(sizes, strides)
    if problems:
        raise ValidationError("calc_buffer_tensor_size", "DMLCalcBufferTensorSize", _DESC_HEAD[2], problems)
    if strides is None:
        count = math.prod(sizes)
    else:
        last = index_of_last_element(sizes, strides)
        if last > _UINT32_MAX:
            raise ValidationError("calc_buffer_tensor_size", "DMLCalcBufferTensorSize", _DESC_HEAD[2], [
                Violation("Strides", "strides",
                          f"{_seq(strides)} put the last element at index {last}",
                          "the helper's IndexOfLastElement is a UINT (at most 2^32 - 1)")])
        count = last + 1
    es = _element_size(dt)
    nbytes = count * es if es is not None else (count * dt.bits + 7) // 8
    return (nbytes + 3) & ~3


def _seq(values) -> str:
    """A list of integers for a message: whole when it is short, abbreviated otherwise."""
    if values is None:
        return "None"
    if len(values) <= 16 and all(abs(v) < 2**64 for v in values):
        return str(list(values))
    return quote(list(values))


def _size_problems(sizes, strides) -> list[Violation]:
    problems = []
    if not 1 <= len(sizes) <= MAX_DIMENSIONS:
        problems.append(Violation(
            "Sizes", "sizes", f"has {len(sizes)} dimensions ({_seq(sizes)})",
            f"a tensor has 1 to {MAX_DIMENSIONS} dimensions"))
    if any(s <= 0 for s in sizes):
        problems.append(Violation(
            "Sizes", "sizes", f"{_seq(sizes)} has a size below 1", "a zero size in any dimension is invalid"))
    if any(s > _UINT32_MAX for s in sizes):
        problems.append(Violation("Sizes", "sizes", f"{_seq(sizes)} has a size above 2^32 - 1", "sizes are UINT"))
    if strides is not None:
        if len(strides) != len(sizes):
            problems.append(Violation(
                "Strides", "strides",
                f"{_seq(strides)} has {len(strides)} entries for {len(sizes)} dimensions",
                "one stride per dimension (DimensionCount entries)"))
        if any(s < 0 or s > _UINT32_MAX for s in strides):
            problems.append(Violation("Strides", "strides", f"{_seq(strides)} has a stride outside 0 to 2^32 - 1",
                                      "strides are UINT"))
    return problems


_MAX_LIST = 1024  # entries of a Sizes or Strides list read before it is refused as too long


def _int_list(value, name, arg, problems) -> list[int] | None:
    """A list, tuple or 1-D NumPy array of integers (integral floats too, as JSON may write
    them) as Python ints; otherwise a Violation and None. A string, a mapping, a bool, a
    non-integral or non-finite number is refused, never converted."""
    ok = isinstance(value, (list, tuple)) or (
        isinstance(value, np.ndarray) and not isinstance(value, np.ma.MaskedArray) and value.ndim == 1)
    if ok and len(value) > _MAX_LIST:
        problems.append(Violation(name, arg, f"has {len(value)} entries", f"a tensor has at most {MAX_DIMENSIONS} dimensions"))
        return None
    out = [whole_number(v) for v in value] if ok else [None]
    if None in out:
        problems.append(Violation(name, arg, f"is {quote(value)}", "expected a list of integers"))
        return None
    return out


def whole_number(v) -> int | None:
    """``v`` as a Python int if it is a whole number (an int, a NumPy integer, or a finite
    integral float, as JSON may write one); None otherwise, bools included."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and np.isfinite(v) and v == np.floor(v):
        return int(v)
    return None


def overlap_violation(sizes: Sequence[int], strides: Sequence[int], subject: str = "Strides",
                      arg: str = "strides") -> Violation | None:
    """A Violation if two elements of the layout share an offset (an output may not overlap
    itself), else None.

    The layout is accepted at once when, in increasing stride order, each stride is past the
    extent of the smaller ones (every packed, padded or permuted layout). Otherwise, up to 2^22
    elements, every offset is enumerated; beyond that the layout is refused as unprovable.
    """
    dims = [(int(t), int(s)) for s, t in zip(sizes, strides) if int(s) > 1]
    if not dims:
        return None
    for t, s in dims:
        if t == 0:
            return Violation(subject, arg, f"{list(strides)} has stride 0 on a dimension of size {s}",
                             "an output's elements may not overlap (stride 0 broadcasts; only inputs may broadcast)")
    dims.sort()
    extent = 0
    nested = True
    for t, s in dims:
        if t <= extent:
            nested = False
            break
        extent += (s - 1) * t
    if nested:
        return None
    count = math.prod(s for _, s in dims)
    if count <= _EXACT_OVERLAP_LIMIT:
        offsets = np.zeros((), np.int64)
        for t, s in dims:
            offsets = (offsets[..., None] + np.arange(s, dtype=np.int64) * t)
        if np.unique(offsets.ravel()).size == count:
            return None
        return Violation(subject, arg, f"{list(strides)} make elements of Sizes {list(sizes)} share an offset",
                         "an output's elements may not overlap")
    return Violation(subject, arg, f"{list(strides)} interleave dimensions of a {count}-element output",
                     "dmljax only accepts large output layouts it can prove do not overlap",
                     "use strides where each is past the extent of the smaller ones")


@dataclasses.dataclass(frozen=True)
class TensorDesc:
    """A DML_BUFFER_TENSOR_DESC, frozen and hashable.

    data_type: DataType (or any spelling DataType.parse accepts).
    sizes: Sizes, 1 to 8 dimensions, none zero.
    strides: Strides in elements, one per dimension, or None (packed). Strides express
        broadcasting (0), padding and layouts; they never change what an operator computes, only
        where the elements live in the buffer.
    flags: DML_TENSOR_FLAGS (``TensorFlags.OWNED_BY_DML``, ``"OWNED_BY_DML"``, 0 or 1).
    total_tensor_size_in_bytes: TotalTensorSizeInBytes; None (or 0, as DxDispatch writes it)
        means DMLCalcBufferTensorSize's value. At least that value and a multiple of 4.
    guaranteed_base_offset_alignment: 0 (none) or a power of two at least the element size.

    >>> import dmljax
    >>> d = dmljax.TensorDesc("FLOAT32", [2, 3], strides=[0, 1])
    >>> d.total_tensor_size_in_bytes
    12
    """

    data_type: DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...] | None = None
    flags: TensorFlags = TensorFlags.NONE
    total_tensor_size_in_bytes: int | None = None
    guaranteed_base_offset_alignment: int = 0

    def __post_init__(self):
        problems: list[Violation] = []
        try:
            dt = DataType.parse(self.data_type)
        except ValueError as e:
            problems.append(Violation("DataType", "data_type", f"is {quote(self.data_type)}", str(e)))
            dt = None
        sizes = _int_list(self.sizes, "Sizes", "sizes", problems)
        strides = None if self.strides is None else _int_list(self.strides, "Strides", "strides", problems)
        try:
            flags = TensorFlags.parse(self.flags)
        except ValueError as e:
            problems.append(Violation("Flags", "flags", f"is {quote(self.flags)}", str(e)))
            flags = TensorFlags.NONE
        if sizes is not None:
            problems += _size_problems(sizes, strides)
        total = self.total_tensor_size_in_bytes
        align = self.guaranteed_base_offset_alignment
        if not problems and dt is not None:
            sizes_ok = sizes
            count = math.prod(sizes_ok)
            if count > MAX_ELEMENTS:
                problems.append(Violation("Sizes", "sizes", f"{_seq(sizes_ok)} hold {count} elements",
                                          "a buffer tensor holds at most 2^32 - 1 elements"))
            last = index_of_last_element(sizes_ok, strides)
            if last + 1 > MAX_ELEMENTS:
                problems.append(Violation(
                    "Strides", "strides", f"{_seq(strides)} put the last element at index {last}",
                    "a buffer tensor spans at most 2^32 - 1 elements"))
            if not problems:
                minimum = calc_buffer_tensor_size(dt, sizes_ok, strides)
                if isinstance(total, (bool, np.bool_)) or not isinstance(total, (int, np.integer, type(None))):
                    problems.append(Violation("TotalTensorSizeInBytes", "total_tensor_size_in_bytes",
                                              f"is {quote(total)}", "expected an integer (UINT64)"))
                elif total is None or int(total) == 0:
                    total = minimum
                else:
                    total = int(total)
                    if total > _UINT64_MAX:
                        problems.append(Violation("TotalTensorSizeInBytes", "total_tensor_size_in_bytes",
                                                  f"is {quote(total)}", "it is a UINT64"))
                    elif total < minimum:
                        problems.append(Violation(
                            "TotalTensorSizeInBytes", "total_tensor_size_in_bytes",
                            f"is {total}, below the {minimum} bytes that Sizes {_seq(sizes_ok)} and Strides "
                            f"{_seq(strides) if strides is not None else None} need",
                            "it must be at least DMLCalcBufferTensorSize's value",
                            "leave it out (or 0) to have it computed"))
                    if total % 4 and total <= _UINT64_MAX:
                        problems.append(Violation("TotalTensorSizeInBytes", "total_tensor_size_in_bytes",
                                                  f"is {total}", "it must be a multiple of 4"))
        if isinstance(align, (bool, np.bool_)) or not isinstance(align, (int, np.integer)):
            problems.append(Violation("GuaranteedBaseOffsetAlignment", "guaranteed_base_offset_alignment",
                                      f"is {quote(align)}", "expected an integer"))
        elif align != 0 and dt is not None:
            es = max(1, dt.bits // 8)
            align = int(align)
            if align < 0 or align & (align - 1) or align < es or align > _UINT32_MAX:
                problems.append(Violation(
                    "GuaranteedBaseOffsetAlignment", "guaranteed_base_offset_alignment", f"is {quote(align)}",
                    f"0 (none) or a power of two at least the element size ({es} bytes for {dt.name})"))
        if problems:
            raise ValidationError(*_DESC_HEAD, problems)
        object.__setattr__(self, "data_type", dt)
        object.__setattr__(self, "sizes", tuple(sizes))
        object.__setattr__(self, "strides", None if strides is None else tuple(strides))
        object.__setattr__(self, "flags", flags)
        object.__setattr__(self, "total_tensor_size_in_bytes", int(total))
        object.__setattr__(self, "guaranteed_base_offset_alignment", int(align))

    @property
    def dimension_count(self) -> int:
        return len(self.sizes)

    @property
    def effective_strides(self) -> tuple[int, ...]:
        return self.strides if self.strides is not None else packed_strides(self.sizes)

    @property
    def element_count(self) -> int:
        return math.prod(self.sizes)

    @property
    def is_packed(self) -> bool:
        """Strides are absent or equal the packed ones (size-1 dimensions' strides ignored)."""
        if self.strides is None:
            return True
        return all(s == 1 or a == b for s, a, b in zip(self.sizes, self.strides, packed_strides(self.sizes)))

    @property
    def owned_by_dml(self) -> bool:
        return bool(self.flags & TensorFlags.OWNED_BY_DML)

    def overlap_violation(self) -> Violation | None:
        """See ``overlap_violation``: outputs must not overlap themselves."""
        return overlap_violation(self.sizes, self.effective_strides)

    @classmethod
    def from_array(cls, x) -> "TensorDesc":
        """The packed desc of an array (its DataType must be a DirectML type)."""
        return cls(DataType.parse(x.dtype), tuple(x.shape))
