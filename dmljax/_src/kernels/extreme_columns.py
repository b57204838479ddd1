"""A Pallas kernel for the extreme of FLOAT16 values along an axis with elements after it (a
matrix's first axis) on NVIDIA GPUs: ARGMAX and ARGMIN (``arg_columns``) and REDUCE's MAX and MIN
(``max_key_columns``).

XLA's arg-reduction of FLOAT16 keys over the first axis reads at 0.58 of a copy's bandwidth
(H100, 262,144 x 1,024: 1.454x jnp.argmax's time); the kernel reads at 0.93 (0.912x). It keeps
the largest of integer keys: ARGMAX/ARGMIN's are the TOP_K kernel's order-preserving keys
(``top_k.keys_of``); REDUCE passes its own (-0 below +0), complemented for MIN. Each program
takes COLUMN_WIDTH adjacent columns and a segment of the reduced axis, walks it COLUMN_ROWS rows
at a time keeping each column's best key (and the index holding it), and XLA picks among the
segments' winners (a small reduction).

Exactness: bit for bit the XLA path's result. Keys are compared exactly, so the order of the
comparisons cannot change the extreme; ties go to the first index (the last with ``last``) both
within a segment and among the segments, and NaN is never chosen unless alone, as in the XLA
formula. ``EXTREME_COLUMNS`` says where the kernel applies.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.kernel_seam import Kernel
from dmljax._src.kernels.top_k import ARG_TYPES, INT_MIN, keys_of

__all__ = ["EXTREME_COLUMNS", "arg_columns", "max_key_columns", "COLUMN_WIDTH", "COLUMN_ROWS", "COLUMN_SEGMENT"]

COLUMN_WIDTH = 128
"""Adjacent columns a program takes (one lane each), walking down its segment of COLUMN_SEGMENT
elements COLUMN_ROWS rows at a time with COLUMN_WARPS warps."""
COLUMN_ROWS = 8
COLUMN_SEGMENT = 512
COLUMN_WARPS = 1
"""Settings from the H100 (ARGMAX of FLOAT16 262,144 x 1,024 over the first axis, time over
jnp.argmax's): 128 columns, 8 rows a step, segments of 512 and 1 warp 0.912x; segments of 256 or
1,024 0.948x and 0.990x; 4 rows a step 1.017x, 16 with 2 warps 1.000x; 64 columns 1.074x, 256
with 2 warps 1.120x. Measured by benchmarks/reductions/reductions.py."""


def _applies(shape: tuple[int, ...], axes: tuple[int, ...], dtype) -> bool:
    """Whether ARGMAX/ARGMIN or REDUCE's MAX/MIN can take the column kernel: one axis of a FLOAT16
    tensor with at least COLUMN_WIDTH elements after it (a multiple of it) and a multiple of
    COLUMN_ROWS along it."""
    if np.dtype(dtype) not in ARG_TYPES or len(axes) != 1 or not shape:
        return False
    a = axes[0]
    after = int(np.prod(shape[a + 1:], dtype=np.int64))
    return after >= COLUMN_WIDTH and after % COLUMN_WIDTH == 0 and shape[a] % COLUMN_ROWS == 0


EXTREME_COLUMNS = Kernel("extreme_columns", _applies, measured="benchmarks/reductions/reductions.py")


def _segment(r: int) -> int:
    """The rows a program walks: the largest power of two up to COLUMN_SEGMENT dividing r (r is a
    multiple of COLUMN_ROWS, a power of two)."""
    seg = COLUMN_SEGMENT
    while r % seg:
        seg //= 2
    return max(seg, COLUMN_ROWS)


def _column_kernel(x_ref, key_ref, at_ref=None, *, seg: int, keys, last: bool):
    """Each column's largest key over the program's segment and (with ``at_ref``) the first (or
    ``last``) row holding it; ``keys`` maps a block of values to int32 keys."""
    from jax.experimental import pallas as pl

    w = x_ref.shape[-1]
    first = pl.program_id(1) * seg  # the segment's first row along the reduced axis

    def step(i, carry):
        best, at = carry
        key = keys(x_ref[0, pl.ds(i * COLUMN_ROWS, COLUMN_ROWS), :])
        if at_ref is None:
            return jnp.maximum(best, jnp.max(key, axis=0, keepdims=True)), at
        row = first + i * COLUMN_ROWS + jnp.broadcast_to(jnp.arange(COLUMN_ROWS, dtype=jnp.int32)[:, None],
                                                         (COLUMN_ROWS, w))
        top = jnp.max(key, axis=0, keepdims=True)
        if last:
            where = jnp.max(jnp.where(key == top, row, -1), axis=0, keepdims=True)
            take = top >= best  # a later row's tie wins
        else:
            where = jnp.min(jnp.where(key == top, row, np.int32(np.iinfo(np.int32).max)), axis=0, keepdims=True)
            take = top > best  # an earlier row's tie stays
        return jnp.where(take, top, best), jnp.where(take, where, at)

    start = (jnp.full((1, w), INT_MIN, jnp.int32), jnp.zeros((1, w), jnp.int32))
    best, at = jax.lax.fori_loop(0, seg // COLUMN_ROWS, step, start)
    key_ref[...] = best.reshape(key_ref.shape)
    if at_ref is not None:
        at_ref[...] = at.reshape(at_ref.shape)


def _columns_call(x: jnp.ndarray, axis: int, keys, index: bool, last: bool, interpret: bool, name: str):
    """The column kernel over ``x`` viewed as (before, axis, after): each segment's largest keys
    (p, segments, after), and with ``index`` the rows holding them."""
    from jax.experimental import pallas as pl

    shape = x.shape
    p = int(np.prod(shape[:axis], dtype=np.int64))
    r, c = shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))
    seg = _segment(r)
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=COLUMN_WARPS, num_stages=1)
    part = jax.ShapeDtypeStruct((p, r // seg, c), jnp.int32)
    out_spec = pl.BlockSpec((1, 1, COLUMN_WIDTH), lambda i, s, j: (i, s, j))
    return pl.pallas_call(
        functools.partial(_column_kernel, seg=seg, keys=keys, last=last),
        out_shape=(part, part) if index else part, grid=(p, r // seg, c // COLUMN_WIDTH),
        in_specs=[pl.BlockSpec((1, seg, COLUMN_WIDTH), lambda i, s, j: (i, s, j))],
        out_specs=(out_spec, out_spec) if index else out_spec, compiler_params=params, interpret=interpret,
        name=name)(x.reshape(p, r, c))


def max_key_columns(x: jnp.ndarray, axis: int, keys, interpret: bool = False) -> jnp.ndarray:
    """The largest of ``keys(x)`` (int32) along ``axis`` of FLOAT16 ``x``, the axis kept as 1, by the
    column kernel (REDUCE's MAX and MIN); ``EXTREME_COLUMNS`` must apply to the shape."""
    best = jnp.max(_columns_call(x, axis, keys, False, False, interpret, "dmljax_column_max"), axis=1)
    return best.reshape(x.shape[:axis] + (1,) + x.shape[axis + 1:])


def arg_columns(x: jnp.ndarray, axis: int, largest: bool, last: bool, interpret: bool = False) -> jnp.ndarray:
    """The index (int32) of the largest (smallest) element along ``axis`` of FLOAT16 ``x``, ties to
    the first (``last``: the last), NaN never chosen unless alone (ARGMAX's keys), with the axis
    kept as 1; ``EXTREME_COLUMNS`` must apply to the call (``interpret=True``: any backend)."""
    shape = x.shape
    keys, at = _columns_call(x, axis, lambda v: keys_of(v, largest, False), True, last, interpret,
                             "dmljax_column_arg")
    # the segments' winners: the best key, then the first (last) index holding it
    best = jnp.max(keys, axis=1, keepdims=True)
    if last:
        index = jnp.max(jnp.where(keys == best, at, -1), axis=1)
    else:
        index = jnp.min(jnp.where(keys == best, at, np.int32(np.iinfo(np.int32).max)), axis=1)
    return index.reshape(shape[:axis] + (1,) + shape[axis + 1:])
