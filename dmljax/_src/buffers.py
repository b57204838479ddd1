"""Strided views of flat buffers: reading a DML_BUFFER_TENSOR_DESC's tensor out of a buffer and
writing an output tensor into one.

A buffer is a 1-D array: its bytes (uint8) or its elements of any DirectML type. Offsets are in
bytes. A view whose DataType differs from the buffer's dtype reinterprets the bytes (little-endian,
as Direct3D buffers are), so a buffer filled with FLOAT32 values can be bound as UINT32.

UINT4 and INT4 elements are packed two a byte, the first in the low nibble
(dml_tensor_data_type.md: [1, 2, 3, 4, 5] is the bytes [0x21, 0x43, 0x05], the tail nibble
ignored). A 4-bit view's Strides count elements (nibbles) from the bound byte offset; reading
ignores the nibbles no element covers and writing keeps them. A buffer of 4-bit elements (a JAX
int4 or uint4 array) is its elements packed that way (an odd count: the last byte's high nibble
is 0 when read and dropped when written back).

Layouts are planned statically (sizes, strides) and lowered without a gather whenever the strides
nest: packed, padded (a stride past the extent of the smaller ones), broadcast (stride 0) and
permuted layouts (NHWC, column-major) become one reshape, one slice, a transpose and a broadcast;
writes become one ``dynamic_update_slice`` at static zero indices. Only layouts whose strides
interleave (e.g. Strides [2, 3]) or overlap in an input fall back to a gather (reads) or a scatter
(writes).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import DataType
from dmljax._src.errors import ValidationError, Violation
from dmljax._src.tensor_desc import MINIMUM_BUFFER_TENSOR_ALIGNMENT, TensorDesc, index_of_last_element

__all__ = [
    "BufferBinding",
    "buffer_size_in_bytes",
    "to_bytes",
    "from_bytes",
    "read_view",
    "write_view",
    "binding_violations",
    "layout_plan",
    "pack_nibbles",
    "unpack_nibbles",
    "LayoutPlan",
]


class BufferBinding(NamedTuple):
    """A buffer bound at a byte offset (DML_BUFFER_BINDING's Buffer and Offset; the size is the
    rest of the buffer)."""

    buffer: Any
    offset_in_bytes: int = 0


_FOUR_BIT = (np.dtype(DataType.UINT4.dtype), np.dtype(DataType.INT4.dtype))


def _is_four_bit(dtype) -> bool:
    return np.dtype(dtype) in _FOUR_BIT


def buffer_size_in_bytes(buffer) -> int:
    """Bytes in a 1-D buffer (its length times its element size; 4-bit elements two a byte)."""
    count = int(np.prod(buffer.shape))
    if _is_four_bit(buffer.dtype):
        return (count + 1) // 2
    return count * np.dtype(buffer.dtype).itemsize


def pack_nibbles(codes) -> jax.Array:
    """4-bit codes (a 1-D uint8 array of values 0 to 15) packed two a byte, the first in the low
    nibble; an odd count gets a high nibble of 0 in its last byte."""
    codes = jnp.asarray(codes, np.uint8).reshape(-1)
    if codes.shape[0] % 2:
        codes = jnp.concatenate([codes, jnp.zeros((1,), np.uint8)])
    pairs = codes.reshape(-1, 2)
    return pairs[:, 0] | (pairs[:, 1] << np.uint8(4))


def unpack_nibbles(data) -> jax.Array:
    """A 1-D uint8 array's nibbles as codes 0 to 15 (uint8), two a byte, the low nibble first."""
    data = jnp.asarray(data, np.uint8).reshape(-1)
    return jnp.stack([data & np.uint8(0xF), data >> np.uint8(4)], axis=-1).reshape(-1)


def _codes(values) -> jax.Array:
    """4-bit values (UINT4 or INT4) as their codes 0 to 15 (INT4 in two's complement)."""
    values = jnp.asarray(values)
    wide = values.astype(np.int8 if values.dtype == DataType.INT4.dtype else np.uint8)
    return wide.astype(np.uint8) & np.uint8(0xF)


def _from_codes(codes, signed: bool) -> jax.Array:
    """Codes 0 to 15 as INT8 (sign-extended, ``signed``) or UINT8 values."""
    if not signed:
        return codes
    return (codes.astype(np.int8) ^ np.int8(8)) - np.int8(8)


def to_bytes(buffer) -> jax.Array:
    """A 1-D buffer's bytes as a 1-D uint8 array (little-endian; 4-bit elements packed)."""
    buffer = jnp.asarray(buffer)
    if buffer.dtype == np.uint8:
        return buffer.reshape(-1)
    if _is_four_bit(buffer.dtype):
        return pack_nibbles(_codes(buffer.reshape(-1)))
    if buffer.dtype.itemsize == 1:
        return lax.bitcast_convert_type(buffer, np.uint8).reshape(-1)
    return lax.bitcast_convert_type(buffer.reshape(-1), np.uint8).reshape(-1)


def from_bytes(data, dtype) -> jax.Array:
    """A 1-D uint8 array reinterpreted as 1-D elements of ``dtype`` (its length must divide; a
    4-bit dtype: two elements a byte, the low nibble first)."""
    dtype = np.dtype(dtype)
    data = jnp.asarray(data)
    if dtype == np.uint8:
        return data
    if _is_four_bit(dtype):
        return _from_codes(unpack_nibbles(data), dtype == DataType.INT4.dtype).astype(dtype)
    if dtype.itemsize == 1:
        return lax.bitcast_convert_type(data, dtype)
    if data.shape[0] % dtype.itemsize:
        raise ValueError(f"{data.shape[0]} bytes are not a whole number of {dtype} elements")
    return lax.bitcast_convert_type(data.reshape(-1, dtype.itemsize), dtype)


@dataclasses.dataclass(frozen=True)
class LayoutPlan:
    """How a (sizes, strides) layout is lowered.

    kind: "nested" (reshape/slice/transpose/broadcast) or "gather".
    order: the dimensions that move through memory (size > 1, stride > 0), by decreasing stride.
    grid: the shape the region of ``region`` elements is reshaped to; the tensor's elements are
        its leading corner ``corner``.
    """

    kind: str
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    order: tuple[int, ...]
    grid: tuple[int, ...]
    corner: tuple[int, ...]
    region: int
    needed: int  # elements from the view's start to one past its last element

    @property
    def broadcast_dims(self) -> tuple[int, ...]:
        return tuple(i for i, (s, t) in enumerate(zip(self.sizes, self.strides)) if s > 1 and t == 0)


@functools.lru_cache(maxsize=1024)
def layout_plan(sizes: tuple[int, ...], strides: tuple[int, ...]) -> LayoutPlan:
    """The static plan for a layout (see LayoutPlan)."""
    needed = index_of_last_element(sizes, strides) + 1
    moving = [i for i, (s, t) in enumerate(zip(sizes, strides)) if s > 1 and t > 0]
    order = tuple(sorted(moving, key=lambda i: -strides[i]))
    if not order:
        return LayoutPlan("nested", sizes, strides, (), (1,), (1,), 1, needed)
    nested = True
    for a, b in zip(order, order[1:]):
        ta, tb = strides[a], strides[b]
        if ta % tb or ta < sizes[b] * tb:
            nested = False
            break
    if not nested:
        return LayoutPlan("gather", sizes, strides, order, (), (), needed, needed)
    grid = [sizes[order[0]]]
    corner = [sizes[order[0]]]
    for a, b in zip(order, order[1:]):
        grid.append(strides[a] // strides[b])
        corner.append(sizes[b])
    last_stride = strides[order[-1]]
    if last_stride > 1:
        grid.append(last_stride)
        corner.append(1)
    region = sizes[order[0]] * strides[order[0]]
    return LayoutPlan("nested", sizes, strides, order, tuple(grid), tuple(corner), region, needed)


def _element_size(dt: DataType) -> int:
    """Bytes an element takes: 1 for the 4-bit types, whose offsets are whole bytes."""
    return max(1, dt.bits // 8)


def _nibble_elements(buffer, offset: int, count: int) -> jax.Array:
    """``count`` 4-bit codes (uint8, 0 to 15) starting at byte ``offset`` of ``buffer``, the low
    nibble of each byte first."""
    data = to_bytes(buffer)
    nbytes = (count + 1) // 2
    return lax.slice(unpack_nibbles(lax.slice(data, (offset,), (offset + nbytes,))), (0,), (count,))


def _as_elements(buffer, dtype: np.dtype, offset: int, count: int) -> jax.Array:
    """``count`` elements of ``dtype`` starting ``offset`` bytes into ``buffer``."""
    buffer = jnp.asarray(buffer)
    es = dtype.itemsize
    if buffer.dtype == dtype and offset % es == 0:
        start = offset // es
        return lax.slice(buffer.reshape(-1), (start,), (start + count,))
    data = to_bytes(buffer)
    return from_bytes(lax.slice(data, (offset,), (offset + count * es,)), dtype)


def _gather_offsets(plan: LayoutPlan) -> np.ndarray:
    idx = np.zeros((), np.int64)
    for s, t in zip(plan.sizes, plan.strides):
        idx = idx[..., None] + np.arange(s, dtype=np.int64) * t
    return idx.reshape(plan.sizes)


def _check_fits(desc: TensorDesc, buffer, offset: int, what: str) -> None:
    problems = binding_violations(desc, buffer_size_in_bytes(buffer), offset, what, check_total=False)
    if problems:
        raise ValidationError(what, "DML_BUFFER_BINDING", "every feature level", problems)


def read_view(buffer, desc: TensorDesc, offset_in_bytes: int = 0) -> jax.Array:
    """The tensor ``desc`` describes, read out of ``buffer`` from ``offset_in_bytes``.

    >>> import numpy as np, dmljax
    >>> from dmljax._src.buffers import read_view
    >>> buf = np.arange(6, dtype=np.float32)
    >>> read_view(buf, dmljax.TensorDesc("FLOAT32", [2, 3], strides=[0, 2]))[1]
    Array([0., 2., 4.], dtype=float32)
    """
    dt = desc.data_type
    _check_fits(desc, buffer, offset_in_bytes, "read_view")
    plan = layout_plan(desc.sizes, desc.effective_strides)
    if dt.bits < 8:  # laid out as INT8/UINT8 values, narrowed at the end
        flat = _from_codes(_nibble_elements(buffer, offset_in_bytes, plan.needed), dt.is_signed)
        return _arrange(flat, plan, desc.sizes).astype(dt.dtype)
    return _arrange(_as_elements(buffer, dt.dtype, offset_in_bytes, plan.needed), plan, desc.sizes)


def _arrange(flat, plan: LayoutPlan, sizes) -> jax.Array:
    """The tensor of ``sizes`` that ``plan`` lays out in ``flat`` (its elements from the view's
    start)."""
    dtype = flat.dtype
    if plan.kind == "gather":
        return flat[_gather_offsets(plan)]
    if plan.region > plan.needed:
        flat = lax.pad(flat, jnp.zeros((), dtype), ((0, plan.region - plan.needed, 0),))
    elif plan.region < plan.needed:  # only when no dimension moves (region 1)
        flat = lax.slice(flat, (0,), (plan.region,))
    grid = flat.reshape(plan.grid)
    block = lax.slice(grid, (0,) * len(plan.grid), plan.corner)
    moving_shape = tuple(sizes[i] for i in plan.order)
    block = block.reshape(moving_shape)
    # Back to the tensor's own dimension order, then broadcast (stride 0) and size-1 dimensions.
    natural = sorted(plan.order)
    if natural:
        block = jnp.transpose(block, [plan.order.index(i) for i in natural])
    return lax.broadcast_in_dim(block, tuple(sizes), tuple(natural))


def write_view(buffer, desc: TensorDesc, value, offset_in_bytes: int = 0):
    """``buffer`` with ``value`` (of ``desc``'s DataType and Sizes) written where ``desc`` puts
    it, from ``offset_in_bytes``; every other byte is kept. Returns an array of the buffer's own
    shape and dtype. The layout must not overlap itself (TensorDesc.overlap_violation).
    """
    dt = desc.data_type
    dtype = dt.dtype
    es = _element_size(dt)
    if tuple(value.shape) != desc.sizes or np.dtype(value.dtype) != dtype:
        raise ValueError(f"write_view: value is {value.dtype}{list(value.shape)}, the desc is "
                         f"{dt.name}{list(desc.sizes)}")
    overlap = desc.overlap_violation()
    if overlap is not None:
        raise ValidationError("write_view", "DML_BUFFER_TENSOR_DESC", "every feature level", [overlap])
    _check_fits(desc, buffer, offset_in_bytes, "write_view")
    buffer = jnp.asarray(buffer)
    if offset_in_bytes % es:
        raise ValidationError("write_view", "DML_BUFFER_BINDING", "every feature level", [
            Violation("Offset", "offset_in_bytes", f"is {offset_in_bytes}",
                      f"a multiple of the element size ({es} bytes)")])
    plan = layout_plan(desc.sizes, desc.effective_strides)
    four = dt.bits < 8
    same = buffer.dtype == dtype and not four
    value = jnp.asarray(value)
    if same:
        elements = buffer.reshape(-1)
    else:
        data = to_bytes(buffer)
        nbytes = data.shape[0]
        pad = (-nbytes) % es
        if pad:
            data = lax.pad(data, jnp.zeros((), np.uint8), ((0, pad, 0),))
        if four:  # every nibble of the buffer as a code; the view's values as theirs
            elements, value, dtype = unpack_nibbles(data), _codes(value), np.dtype(np.uint8)
        else:
            elements = from_bytes(data, dtype)
    start = offset_in_bytes * 2 if four else offset_in_bytes // es
    length = elements.shape[0]
    if plan.kind == "gather":
        idx = _gather_offsets(plan) + start
        elements = elements.at[idx].set(value, unique_indices=True)
    else:
        natural = sorted(plan.order)
        block = value.reshape(tuple(desc.sizes[i] for i in natural))
        if natural:
            block = jnp.transpose(block, [natural.index(i) for i in plan.order])
        block = block.reshape(plan.corner)
        avail = length - start
        take = min(plan.region, avail)
        region = lax.slice(elements, (start,), (start + take,))
        if plan.region > take:
            region = lax.pad(region, jnp.zeros((), dtype), ((0, plan.region - take, 0),))
        grid = lax.dynamic_update_slice(region.reshape(plan.grid), block, (0,) * len(plan.grid))
        region = grid.reshape(-1)
        if plan.region > take:
            region = lax.slice(region, (0,), (take,))
        elements = lax.dynamic_update_slice(elements, region, (start,))
    if same:
        return elements.reshape(buffer.shape)
    data = lax.slice(pack_nibbles(elements) if four else to_bytes(elements), (0,), (nbytes,))
    out = from_bytes(data, buffer.dtype)
    if _is_four_bit(buffer.dtype):  # an odd count of 4-bit elements: the last byte's high nibble goes
        out = lax.slice(out, (0,), (buffer.shape[0],))
    return out.reshape(buffer.shape)


def binding_violations(desc: TensorDesc, buffer_bytes: int, offset: int, subject: str,
                       arg: str = "", check_total: bool = True) -> list[Violation]:
    """What is wrong with binding ``desc`` to a buffer of ``buffer_bytes`` bytes at ``offset``
    (dml_buffer_tensor_desc.md, dml-binding.md): the offset must be a multiple of 16
    (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT) and of GuaranteedBaseOffsetAlignment, and the bound
    range must hold TotalTensorSizeInBytes (or, with ``check_total=False``, the elements)."""
    problems = []
    if offset < 0:
        problems.append(Violation(subject, arg, f"is bound at offset {offset}", "offsets are not negative"))
        return problems
    align = max(MINIMUM_BUFFER_TENSOR_ALIGNMENT, desc.guaranteed_base_offset_alignment)
    if offset % align:
        problems.append(Violation(
            subject, arg, f"is bound at byte offset {offset}",
            f"the offset must be a multiple of {align} bytes"
            + (" (GuaranteedBaseOffsetAlignment)" if desc.guaranteed_base_offset_alignment > MINIMUM_BUFFER_TENSOR_ALIGNMENT
               else " (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT)")))
    rng = buffer_bytes - offset
    if check_total:
        need, what = desc.total_tensor_size_in_bytes, "TotalTensorSizeInBytes"
    else:
        count = index_of_last_element(desc.sizes, desc.effective_strides) + 1
        need = (count * desc.data_type.bits + 7) // 8
        what = "the tensor's last element"
    if rng < need:
        problems.append(Violation(
            subject, arg,
            f"is bound to a range of {rng} bytes ({buffer_bytes}-byte buffer from offset {offset})",
            f"it must hold {what}: {need} bytes",
            "enlarge the buffer (sizeInBytes) or bind it at a smaller offset"))
    return problems
