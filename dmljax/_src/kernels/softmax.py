"""A Pallas kernel for SOFTMAX, LOG_SOFTMAX and their gradients over long rows on NVIDIA GPUs:
one program a row, which reads the row once and writes it once.

XLA computes a softmax over long rows in several passes over memory (the maximum, the sum of
exponentials, the quotient: three reads and a write); a row of up to MAX_ROW elements fits in one
program's registers, so the kernel reads it once (H100, FLOAT16 softmax of rows of 32,768: 0.463
ms, 0.77 of a copy's bandwidth, against XLA's 0.768 ms). The formula is the XLA path's
(ops/activation/softmax.py's ``normalize``): read in FLOAT32 (FLOAT32 denormals flushed), the
row's maximum subtracted, exp summed, rounded once to the tensor's type (denormals flushed); the
gradient is y * (dY - sum(dY * y)), or dY - exp(y) * sum(dY) for log-softmax, likewise.

Exactness: within the operator's budget, not bit for bit. The order of the sum is Triton's
reduction tree, which DirectML leaves open (docs/semantics.md#accumulating-operators), and softmax's quotient is taken as a
product with the row's reciprocal (one rounding more). ``SOFTMAX_ROWS`` says where the kernel
applies.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.kernel_seam import Kernel
from dmljax._src.numerics import flush_values

__all__ = ["SOFTMAX_ROWS", "softmax_rows", "softmax_rows_grad", "MIN_ROW", "MAX_ROW"]

MIN_ROW = 2048
"""Rows shorter than this stay with XLA, which reaches a copy's bandwidth on them (H100: rows of
1,024 at 1.00 of a copy in FLOAT32 and FLOAT16). Measured by benchmarks/activations/softmax.py."""
MAX_ROW = 65536
"""A row of more than this many elements does not fit in one program's registers."""

WARPS = {4096: 4, 16384: 8, MAX_ROW: 16}
"""Warps per program by row length (the smallest key >= n): a program holds its whole row in
registers (H100, FLOAT16 softmax of rows of 32,768: 16 warps 0.463 ms; 4, 8 and 32 warps 0.545,
0.481 and 0.463). The kernel at these settings is timed by benchmarks/activations/softmax.py."""


def _applies(shape: tuple[int, ...], axes: tuple[int, ...], dtype, half: bool) -> bool:
    """Whether a softmax can take the kernel: over the last axis only, FLOAT32 or FLOAT16 computed
    in FLOAT32, a power-of-two row length from MIN_ROW to MAX_ROW."""
    if half or np.dtype(dtype) not in (np.float32, np.float16) or not shape:
        return False
    n = shape[-1]
    return tuple(axes) == (len(shape) - 1,) and MIN_ROW <= n <= MAX_ROW and n & (n - 1) == 0


SOFTMAX_ROWS = Kernel("softmax", _applies, measured="benchmarks/activations/softmax.py")


def _warps(n: int) -> int:
    return WARPS[min(k for k in WARPS if k >= n)]


def _forward_kernel(x_ref, o_ref, *, log: bool, flush: bool):
    x = x_ref[...].astype(jnp.float32)
    if flush:
        x = flush_values(x)
    m = jnp.max(x, axis=-1, keepdims=True)
    d = x - m
    e = jnp.exp(d)
    s = jnp.sum(e, axis=-1, keepdims=True)
    # softmax's quotient as e * (1 / s): one division per row instead of one per element (a
    # FLOAT32 division is a long instruction sequence, and FLOAT16 rows are short of time
    # otherwise); one rounding more, within the budget (1.5 ULP of FLOAT32 before the output's)
    y = d - jnp.log(s) if log else e * (1.0 / s)
    if flush:
        y = flush_values(y)
    o_ref[...] = y.astype(o_ref.dtype)


def _backward_kernel(y_ref, g_ref, o_ref, *, log: bool, flush: bool):
    y = y_ref[...].astype(jnp.float32)
    g = g_ref[...].astype(jnp.float32)
    if log:
        dx = g - jnp.exp(y) * jnp.sum(g, axis=-1, keepdims=True)
    else:
        dx = y * (g - jnp.sum(g * y, axis=-1, keepdims=True))
    if flush:
        dx = flush_values(dx)
    o_ref[...] = dx.astype(o_ref.dtype)


def _call(kernel, rows: jnp.ndarray, *others, interpret: bool):
    from jax.experimental import pallas as pl  # imported where a kernel is built: dmljax's import stays light

    r, n = rows.shape
    spec = pl.BlockSpec((1, n), lambda i: (i, 0))
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=_warps(n), num_stages=1)
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype), grid=(r,),
        in_specs=[spec] * (1 + len(others)), out_specs=spec, compiler_params=params,
        interpret=interpret, name="dmljax_row_softmax")(rows, *others)


def softmax_rows(x: jnp.ndarray, log: bool, interpret: bool = False) -> jnp.ndarray:
    """Softmax (or log-softmax) of each row of ``x`` over its last axis, by the kernel
    (``interpret=True`` runs it on any backend, for tests)."""
    rows = x.reshape((-1, x.shape[-1]))
    kernel = functools.partial(_forward_kernel, log=log, flush=x.dtype == np.float32)
    return _call(kernel, rows, interpret=interpret).reshape(x.shape)


def softmax_rows_grad(y: jnp.ndarray, dy: jnp.ndarray, log: bool, interpret: bool = False) -> jnp.ndarray:
    """The gradient of ``softmax_rows`` from its stored output ``y`` and the cotangent ``dy``:
    y * (dy - sum(dy * y)), or dy - exp(y) * sum(dy) for log-softmax, in FLOAT32, rounded once."""
    rows = y.reshape((-1, y.shape[-1]))
    kernel = functools.partial(_backward_kernel, log=log, flush=dy.dtype == np.float32)
    return _call(kernel, rows, dy.reshape(rows.shape).astype(y.dtype), interpret=interpret).reshape(y.shape).astype(dy.dtype)
