"""Pallas kernels for PADDING's EDGE mode on NVIDIA GPUs: the padded tensor written in one pass.

XLA builds EDGE from slices of the input concatenated around broadcasts of its edges (as jnp.pad
does), one padded axis at a time: on the H100, a tensor padded on two axes takes two kernels and
moves 0.95 (FLOAT32) and 0.85 (FLOAT16) of a copy's bandwidth; these kernels move 0.99 and 0.93.

The output is viewed as rows (every axis but the last) by columns (the last axis). Each output
row reads the input row its position maps to: per axis, the position j counted from the input's
first element goes to clip(j, 0, n - 1) (EDGE), j mod n (WRAP), or the fold of period 2(n - 1)
(REFLECTION, the edges not repeated) or 2n (SYMMETRIC, the edges repeated): ``source_index``,
which ops/data_movement/padding.py's XLA formula also takes, in NumPy. Two kernels:
- the gather kernel (``_kernel``): ROWS x BLOCK output elements a program, each loaded from its
  source element; any copying mode. FLOAT32 EDGE at 0.99 of a copy.
- the column-block kernel (``_edge_kernel``, EDGE of 1- and 2-byte elements): ROWS rows x BLOCK
  input columns a program, copied with contiguous loads and stores, the first and last blocks
  also writing the repeated edges. FLOAT16 EDGE at 0.93, where the gather kernel's 2-byte loads
  read 0.87 (each warp's gathered load fills only part of its memory transactions).

Exactness: bit for bit: pure data movement, the bits are the input's. ``PADDING_ROWS`` says where
the kernels apply (EDGE only, ``MODES``); ``pad_rows`` does every copying mode, and the tests (in
Pallas's interpreter) and tests/gpu/kernels.py (compiled on a GPU) check them all.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.enums import PaddingMode
from dmljax._src.kernel_seam import Kernel

__all__ = ["PADDING_ROWS", "pad_rows", "source_index", "MODES", "BLOCK", "ELEMENTS", "WARPS"]

BLOCK = 4096
"""Output columns per program at most (the last axis, rounded up to a power of two below it)."""
ELEMENTS = 8192
"""Output elements per program: ROWS = ELEMENTS // the column block."""
WARPS = 4


MODES = (PaddingMode.EDGE,)
"""The modes that take the kernel (``pad_rows`` does all four copying modes). XLA does the
mirroring and wrapping modes in one kernel already, at 0.91-0.99 of a copy's bandwidth, and
their maps take a remainder, a multiply-and-shift sequence unless the period is a power of two
(H100, FLOAT16 REFLECTION of rows of 1,024, period 2,046: 0.86 of a copy by the gather kernel
against XLA's 0.91). Measured by benchmarks/data_movement/data_movement.py."""


def _applies(shape: tuple[int, ...], dtype, mode: PaddingMode, start, end) -> bool:
    """Whether a PADDING can take the kernel: a mode in MODES, some padding, no empty axis, 1-, 2-
    or 4-byte elements, and fewer than 2^31 elements in and out (int32 offsets)."""
    if mode not in MODES or not shape or min(shape) < 1 or not any(start) and not any(end):
        return False
    if np.dtype(dtype).itemsize not in (1, 2, 4) or np.dtype(dtype) == np.bool_:
        return False
    out = [n + s + e for n, s, e in zip(shape, start, end)]
    return int(np.prod(shape, dtype=np.int64)) < 2**31 and int(np.prod(out, dtype=np.int64)) < 2**31


PADDING_ROWS = Kernel("padding", _applies, measured="benchmarks/data_movement/data_movement.py")


def source_index(j, n: int, s: int, mode: PaddingMode, xp=jnp):
    """For output positions ``j`` along an axis (0 at the output's start) of ``n`` input elements
    with ``s`` elements of start padding, the input element each mode copies (CONSTANT: -1 where
    the PaddingValue goes), in ``xp`` (jax.numpy in the kernels, NumPy for padding.py's gather).
    REFLECTION and SYMMETRIC fold periodically, as the page says pads larger than the axis do:
    REFLECTION with period 2(n - 1) (the edges are not mirrored), SYMMETRIC with period 2n (they
    are); WRAP repeats the axis."""
    j = j - s
    if mode is PaddingMode.CONSTANT:
        return xp.where((j >= 0) & (j < n), j, -1)
    if mode is PaddingMode.EDGE:
        return xp.clip(j, 0, n - 1)
    period = {PaddingMode.WRAP: n, PaddingMode.REFLECTION: 2 * (n - 1), PaddingMode.SYMMETRIC: 2 * n}[mode]
    if period == 0:  # REFLECTION of one element (validation refuses padding it): the element
        return xp.zeros_like(j)
    t = (j + period * (-(-s // period))) % period  # j >= -s: the shift keeps it non-negative
    if mode is PaddingMode.WRAP:
        return t
    return xp.where(t < n, t, period - t - (1 if mode is PaddingMode.SYMMETRIC else 0))


def _kernel(x_ref, o_ref, *, shape, out, start, mode, rows, block, n_rows):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as pl_triton

    r = pl.program_id(0) * rows + jax.lax.broadcasted_iota(jnp.int32, (rows, 1), 0)
    c = pl.program_id(1) * block + jax.lax.broadcasted_iota(jnp.int32, (1, block), 1)
    # the source row over the leading axes (the last of them fastest); rows and columns past the
    # output's end map inside the input too, and their stores are masked
    source_row = _source_rows(r, shape, out, start, mode)
    source_col = source_index(c, shape[-1], start[-1], mode)
    # the output is one whole-array ref and the store is masked here: a block past the array's
    # end is not masked by Pallas's Triton lowering (measured on the H100: such stores overwrote
    # the next rows' first elements, depending on the programs' order)
    pl_triton.store(o_ref.at[r, c], x_ref[source_row, source_col], mask=(r < n_rows) & (c < out[-1]))


def _source_rows(r, shape, out, start, mode):
    """The input row (over the leading axes, the last of them fastest) of output rows ``r``."""
    source_row = jnp.zeros_like(r)
    stride = 1
    for axis in range(len(shape) - 2, -1, -1):
        source_row = source_row + stride * source_index(r % out[axis], shape[axis], start[axis], mode)
        r = r // out[axis]
        stride *= shape[axis]
    return source_row


def _edge_kernel(x_ref, o_ref, *, shape, out, start, rows, block, n_rows, n_blocks):
    """EDGE by input-aligned column blocks: each program copies ``block`` contiguous input columns
    of ``rows`` output rows to their place (contiguous loads and stores, which Triton can
    vectorize, where gathered loads of 2-byte elements are not), and the first and last column
    blocks also write the left and right padding, the edge element of each row repeated."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as pl_triton

    n, s, e = shape[-1], start[-1], out[-1] - shape[-1] - start[-1]
    r = pl.program_id(0) * rows + jax.lax.broadcasted_iota(jnp.int32, (rows, 1), 0)
    source_row = _source_rows(r, shape, out, start, PaddingMode.EDGE)
    live = r < n_rows
    j = pl.program_id(1)
    c = j * block + jax.lax.broadcasted_iota(jnp.int32, (1, block), 1)
    inside = live & (c < n)
    pl_triton.store(o_ref.at[r, c + s], pl_triton.load(x_ref.at[source_row, c], mask=inside, other=0), mask=inside)

    def fill(first_col, count, source_col):
        # ``count`` columns from ``first_col`` of each row, all equal to the row's ``source_col``
        value = pl_triton.load(x_ref.at[source_row, jnp.full((1, 1), source_col, jnp.int32)], mask=live, other=0)
        width = min(block, 1 << max(count - 1, 0).bit_length())
        k = jax.lax.broadcasted_iota(jnp.int32, (1, width), 1)

        def step(i, carry):
            col = i * width + k
            pl_triton.store(o_ref.at[r, first_col + col], jnp.broadcast_to(value, (rows, width)),
                            mask=live & (col < count))
            return carry

        jax.lax.fori_loop(0, -(-count // width), step, 0)

    if s:
        @pl.when(j == 0)
        def _():
            fill(0, s, 0)
    if e:
        @pl.when(j == n_blocks - 1)
        def _():
            fill(s + n, e, n - 1)


def pad_rows(x: jnp.ndarray, mode: PaddingMode, start, end, interpret: bool = False) -> jnp.ndarray:
    """``x`` padded by ``start``/``end`` per axis in ``mode`` (any copying mode) by the kernels
    (the operator takes them where ``PADDING_ROWS`` applies; ``interpret=True`` runs them on any
    backend)."""
    from jax.experimental import pallas as pl

    shape = tuple(int(n) for n in x.shape)
    start, end = tuple(int(s) for s in start), tuple(int(e) for e in end)
    out = tuple(n + s + e for n, s, e in zip(shape, start, end))
    cols = out[-1]
    n_rows = int(np.prod(out[:-1], dtype=np.int64))
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=WARPS, num_stages=1)
    flat = x.reshape(int(np.prod(shape[:-1], dtype=np.int64)), shape[-1])
    if mode is PaddingMode.EDGE and np.dtype(x.dtype).itemsize < 4:
        # 1- and 2-byte elements by column blocks of the input: a warp's gathered loads of them fill
        # only part of each memory transaction (H100, FLOAT16: 0.93 of a copy by blocks, 0.87 by
        # gathers); 4-byte elements by the gather kernel (FLOAT32: 0.99 by gathers, 0.95 by blocks)
        block = min(BLOCK, 1 << max(shape[-1] - 1, 0).bit_length())
        n_blocks = -(-shape[-1] // block)
        kernel = functools.partial(_edge_kernel, n_blocks=n_blocks)
    else:
        block = min(BLOCK, 1 << max(cols - 1, 0).bit_length())
        n_blocks = -(-cols // block)
        kernel = functools.partial(_kernel, mode=mode)
    rows = max(1, ELEMENTS // block)
    y = pl.pallas_call(
        functools.partial(kernel, shape=shape, out=out, start=start, rows=rows, block=block, n_rows=n_rows),
        out_shape=jax.ShapeDtypeStruct((n_rows, cols), x.dtype),
        grid=(pl.cdiv(n_rows, rows), n_blocks),
        in_specs=[pl.BlockSpec(flat.shape, lambda i, j: (0, 0))],
        out_specs=pl.BlockSpec((n_rows, cols), lambda i, j: (0, 0)),
        compiler_params=params, interpret=interpret, name="dmljax_pad")(flat)
    return y.reshape(out)
