"""A Pallas kernel for CUMULATIVE_SUMMATION of FLOAT32 and FLOAT16 rows on NVIDIA GPUs: each
program reads a block of whole rows once, scans them in registers and writes them once.

XLA's cumsum over rows of 1,024 moved 1.18 TB/s in FLOAT32 and 0.67 TB/s in FLOAT16 on the H100,
where a copy moves about 2.9 (issue 11). The kernel's formula is the XLA path's: read in FLOAT32
(FLOAT32 denormals flushed, FLOAT16 widened), summed in FLOAT32, rounded once to the tensor's
type (denormals flushed). The order of the additions is Triton's scan tree instead of XLA's,
which DirectML leaves open (SEMANTICS.md 8): results agree within the operator's budget.

Reverse and exclusive tallies read the row through an index vector (reversed, or shifted by
one with a zero in front) and write it back the same way, so every mode is one pass.
``use_kernel`` says whether a call takes this path on a GPU; ``jax.lax.platform_dependent``
picks it at lowering time, so CPU (and TPU) programs never contain it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.row_kernels import flush_values

__all__ = ["use_kernel", "scan_rows", "MIN_ROW", "MAX_ROW", "BLOCK"]

MIN_ROW = 16
MAX_ROW = 8192
"""A row of more than this many elements does not fit in one program's registers with room to
scan; shorter rows than MIN_ROW stay with XLA."""
BLOCK = 8192
"""Elements per program: rows of n are taken BLOCK / n at a time (at least one)."""

ENABLED = True
"""False sends every call to XLA's formula (benchmarks/issue11_gpu.py times the two paths)."""

def _rows_per_program(r: int, n: int) -> int:
    """The largest power of two up to BLOCK / n that divides the row count."""
    b = max(1, BLOCK // n)
    while r % b:
        b //= 2
    return b


def use_kernel(shape: tuple[int, ...], axis: int, dtype, half: bool) -> bool:
    """Whether a tally can take the kernel: along the last axis, FLOAT32 or FLOAT16 computed in
    FLOAT32, a power-of-two row length from MIN_ROW to MAX_ROW, and at least 1,024 elements per
    program (rows that short in a row count with no power-of-two factor stay with XLA)."""
    if not ENABLED or half or np.dtype(dtype) not in (np.float32, np.float16) or not shape:
        return False
    n, r = shape[-1], int(np.prod(shape[:-1], dtype=np.int64))
    if axis != len(shape) - 1 or not MIN_ROW <= n <= MAX_ROW or n & (n - 1):
        return False
    return _rows_per_program(r, n) * n >= 1024


def _kernel(x_ref, o_ref, *, b: int, n: int, reverse: bool, exclusive: bool, flush: bool):
    # Index vectors as full (rows, n) grids: Triton's loads and stores take one offset per element
    col = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], (b, n))
    row = jnp.broadcast_to(jnp.arange(b, dtype=jnp.int32)[:, None], (b, n))
    at = n - 1 - col if reverse else col  # where scan position j lives in the row
    if exclusive:  # position j reads the element before it (in scan order); position 0 reads a 0
        src = jnp.clip(at + 1 if reverse else at - 1, 0, n - 1)
        x = jnp.where(col > 0, x_ref[row, src].astype(jnp.float32), 0.0)
    elif reverse:
        x = x_ref[row, at].astype(jnp.float32)
    else:
        x = x_ref[...].astype(jnp.float32)
    if flush:
        x = flush_values(x)
    y = jnp.cumsum(x, axis=1)
    if flush:
        y = flush_values(y)
    y = y.astype(o_ref.dtype)
    if reverse:
        o_ref[row, at] = y
    else:
        o_ref[...] = y


def scan_rows(x: jnp.ndarray, reverse: bool, exclusive: bool, interpret: bool = False) -> jnp.ndarray:
    """The running sum of ``x`` along its last axis (reversed and/or exclusive), by the kernel
    (``interpret=True`` runs it on any backend, for tests); ``use_kernel`` must allow the shape."""
    from jax.experimental import pallas as pl  # imported where a kernel is built: dmljax's import stays light

    n = x.shape[-1]
    rows = x.reshape((-1, n))
    b = _rows_per_program(rows.shape[0], n)
    spec = pl.BlockSpec((b, n), lambda i: (i, 0))
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=4 if b * n <= 2048 else 8, num_stages=1)
    kernel = functools.partial(_kernel, b=b, n=n, reverse=reverse, exclusive=exclusive, flush=x.dtype == np.float32)
    out = pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype), grid=(rows.shape[0] // b,),
        in_specs=[spec], out_specs=spec, compiler_params=params, interpret=interpret,
        name="dmljax_row_cumsum")(rows)
    return out.reshape(x.shape)
