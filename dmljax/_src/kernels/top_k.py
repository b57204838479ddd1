"""A Pallas kernel for TOP_K / TOP_K1 with K from 2 to MAX_K over FLOAT32 and FLOAT16 rows of
TOP_K_ROW elements, and for ARGMAX/ARGMIN (K = 1) of FLOAT16 rows of MIN_ROW to MAX_ROW, on NVIDIA
GPUs: one program a row, which reads the row once and writes the selected indices (the caller
gathers the values).

On the H100, lax.top_k with K = 8 over rows of 1,024 takes 17x the kernel's time in FLOAT32 (the
kernel: 0.119 ms, 0.76 of a copy's read) and 26x in FLOAT16; XLA's arg-reduction of FLOAT16 keys
over rows of 1,024 reads at 0.59 of a copy's bandwidth, the kernel at 1.00.

The kernel orders elements by integer keys in ARGMAX's order (``keys_of``, as
ops/reduction/arg_extreme.py's ``_keys``): FLOAT32 denormals read as zero, -0 equal to +0, the
bits made order-preserving, NaN below every number (and taken, after every number, in ascending
index); for the smallest K the keys are complemented. A selection step takes the largest key and
the lowest index holding it (a maximum of keys, then a minimum of indices: Triton's argmax, one
reduction of (key, index) pairs, took as long over rows of 32,768 and 2.6 times as long over
rows of 1,024), then retires that element, so ties go to the lower index (the higher with
``last``, ARGMAX/ARGMIN's DECREASING). For K > 1 the row is first ranked in groups of GROUP
adjacent elements by their best key: K groups are selected, then K elements among theirs
(``_grouped_kernel``).

Exactness: the XLA path's indices, bit for bit. Keys compare exactly and each step is exact; the
grouping loses nothing, since the K best elements lie among the K best groups ranked by (best
key, group index), and equal keys keep index order. ``TOP_K_ROWS`` and ``ARG_EXTREME_ROWS`` say
where the kernel applies; longer rows with K > 1 take kernels/top_k_threshold.py.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.kernel_seam import Kernel
from dmljax._src.numerics import F32_TINY

__all__ = ["TOP_K_ROWS", "ARG_EXTREME_ROWS", "top_k_rows", "keys_of", "INT_MIN", "ARG_TYPES", "MIN_ROW", "MAX_ROW", "MAX_K"]

MIN_ROW = 1024
MAX_ROW = 32768
"""ARGMAX/ARGMIN (K = 1): rows of a power-of-two length from MIN_ROW to MAX_ROW. H100, FLOAT16
rows of 1,024: 0.845x jnp.argmax's time (XLA's arg-reduction of keys: 1.431x); rows of 32,768:
0.68 of a copy's read. Measured by benchmarks/reductions/reductions.py."""
TOP_K_ROW = 1024
MAX_K = 16
"""TOP_K with K from 2 to MAX_K: rows of TOP_K_ROW, K selection steps each. Longer rows take
kernels/top_k_threshold.py, which took K = 8 over rows of 32,768 in 0.119 ms (FLOAT32) and 0.075
(FLOAT16) on the H100 where these K steps took 0.125 and 0.099, and rows of 1,024 in 3.6x and 3.1x
these steps' time. Timed at this setting by benchmarks/reductions/reductions.py."""
WARPS_PER_1024 = 1
"""One row per program, with a warp for each 1,024 elements up to MAX_WARPS. H100 (K = 8,
FLOAT32): rows of 1,024 took 0.104 ms per 2^25 elements with one warp a row, against 0.407 ms
with 32 rows and 8 warps a program; rows of 32,768 0.140 ms with 8 or 16 warps, 0.593 ms with 4.
Timed at this setting by benchmarks/reductions/reductions.py."""
MAX_WARPS = 16

GROUP = 8
"""K > 1 over rows of 1,024 or more: the row is ranked in groups of GROUP elements first (see
_grouped_kernel); 0 takes the extreme K times over the whole row."""

ARG_TYPES = (np.dtype(np.float16),)
"""The types ARGMAX/ARGMIN take the kernel for. FLOAT32's XLA arg-reduction of keys already reads
at jnp.argmax's speed (H100, rows of 1,024: 1.000x; the kernel 0.994x). Measured by
benchmarks/reductions/reductions.py."""


INT_MIN = np.int32(np.iinfo(np.int32).min)
_NAN_KEY = np.int32(np.iinfo(np.int32).min + 1)  # below every number's key (INT_MIN + 1 is a NaN's bits)


def _applies(shape: tuple[int, ...], axis: int, k: int, dtype) -> bool:
    """Whether a selection can take the kernel: along the last axis of a FLOAT32 or FLOAT16 tensor,
    rows of TOP_K_ROW, K from 2 to MAX_K."""
    if np.dtype(dtype) not in (np.float32, np.float16) or not shape:
        return False
    n = shape[-1]
    return axis == len(shape) - 1 and n == TOP_K_ROW and 2 <= k <= MAX_K


def _arg_applies(shape: tuple[int, ...], axes: tuple[int, ...], dtype) -> bool:
    """Whether ARGMAX/ARGMIN (and TOP_K's K = 1) can take the kernel with K = 1: one axis, the
    last, of a FLOAT16 tensor (FLOAT32's XLA arg-reduction of keys already reads at jnp.argmax's
    speed: 1.000x on the H100), a power-of-two row length from MIN_ROW to MAX_ROW."""
    if np.dtype(dtype) not in ARG_TYPES or not shape:
        return False
    n = shape[-1]
    return tuple(axes) == (len(shape) - 1,) and MIN_ROW <= n <= MAX_ROW and n & (n - 1) == 0


TOP_K_ROWS = Kernel("top_k", _applies, measured="benchmarks/reductions/reductions.py")
ARG_EXTREME_ROWS = Kernel("top_k", _arg_applies, measured="benchmarks/reductions/reductions.py")
"""The two paths to the kernel, under one switch ("top_k"): ``TOP_K_ROWS`` for TOP_K with K from 2
to MAX_K, ``ARG_EXTREME_ROWS`` for ARGMAX/ARGMIN (and TOP_K's K = 1) of FLOAT16 rows."""


def _warps(n: int) -> int:
    return min(MAX_WARPS, max(1, WARPS_PER_1024 * n // 1024))


def keys_of(v, largest: bool, flush: bool):
    """ARGMAX's integer keys of float values (any shape): larger key, earlier in the selection."""
    f = v.astype(jnp.float32)
    nan = f != f
    f = jnp.where(jnp.abs(f) < F32_TINY, 0.0, f) if flush else jnp.where(f == 0, 0.0, f)  # -0 ties with +0
    bits = jax.lax.bitcast_convert_type(f, jnp.int32)
    key = jnp.where(bits < 0, bits ^ np.int32(0x7FFFFFFF), bits)  # order-preserving
    if not largest:
        key = ~key
    return jnp.where(nan, _NAN_KEY, key)


def _select(key, index, k: int, k2: int, limit: int, last: bool = False):
    """The ``index`` values of the ``k`` largest keys of each row, ties to the lowest index (the
    highest with ``last``), as a (rows, k2) block (slots from k on: 0)."""
    b = key.shape[0]
    slot = jnp.broadcast_to(jnp.arange(k2, dtype=jnp.int32)[None, :], (b, k2))
    out = jnp.zeros((b, k2), jnp.int32)
    for j in range(k):
        best = jnp.max(key, axis=1, keepdims=True)
        if last:  # ARGMAX/ARGMIN's DECREASING direction: the highest index of a tie
            at = jnp.max(jnp.where(key == best, index, -1), axis=1, keepdims=True)
        else:
            at = jnp.min(jnp.where(key == best, index, limit), axis=1, keepdims=True)
        out = jnp.where(slot == j, at, out)
        key = jnp.where(index == at, INT_MIN, key)  # retired: below NaN
    return out


def _kernel(x_ref, o_ref, *, n: int, k: int, k2: int, largest: bool, last: bool, flush: bool):
    key = keys_of(x_ref[...], largest, flush)
    b = key.shape[0]
    col = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], (b, n))
    o_ref[...] = _select(key, col, k, k2, n, last)


def _grouped_kernel(x_ref, o_ref, *, n: int, k: int, k2: int, g: int, largest: bool, flush: bool):
    # The row in groups of g: the K best elements lie in the K best groups by their best key
    # (ranked by key, then by group index), since each of K better groups holds an element
    # better than any element of a worse group. Selecting groups costs K passes over n / g
    # keys; the K groups' K * g elements, read again (from cache), give the K best.
    key = keys_of(x_ref[...], largest, flush)
    groups = jnp.max(key.reshape(1, n // g, g), axis=2)
    gcol = jnp.broadcast_to(jnp.arange(n // g, dtype=jnp.int32)[None, :], (1, n // g))
    chosen = _select(groups, gcol, k, k2, n // g)  # (1, k2): group numbers, slots from k on 0
    m = k2 * g
    cand = (chosen[:, :, None] * g + jnp.arange(g, dtype=jnp.int32)[None, None, :]).reshape(1, m)
    real = (jnp.arange(m, dtype=jnp.int32) < k * g)[None, :]  # the padding slots repeat group 0: out
    row = jnp.zeros((1, m), jnp.int32)
    ckey = jnp.where(real, keys_of(x_ref[row, cand], largest, flush), INT_MIN)
    o_ref[...] = _select(ckey, jnp.where(real, cand, n), k, k2, n)


def _run(rows: jnp.ndarray, k: int, largest: bool, last: bool, interpret: bool) -> jnp.ndarray:
    """One kernel launch over ``rows`` (r, n): the (r, k) selected positions."""
    from jax.experimental import pallas as pl  # imported where a kernel is built: dmljax's import stays light

    r, n = rows.shape
    k2 = 1 << (k - 1).bit_length()  # a power of two wide (Triton's blocks), cut to k after
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=_warps(n), num_stages=1)
    flush = rows.dtype == np.float32
    if GROUP and k > 1 and n // GROUP >= 128:
        kernel = functools.partial(_grouped_kernel, n=n, k=k, k2=k2, g=GROUP, largest=largest, flush=flush)
    else:
        kernel = functools.partial(_kernel, n=n, k=k, k2=k2, largest=largest, last=last and k == 1, flush=flush)
    out = pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((r, k2), jnp.int32), grid=(r,),
        in_specs=[pl.BlockSpec((1, n), lambda i: (i, 0))], out_specs=pl.BlockSpec((1, k2), lambda i: (i, 0)),
        compiler_params=params, interpret=interpret, name="dmljax_row_top_k")(rows)
    return out[:, :k]


def top_k_rows(x: jnp.ndarray, k: int, largest: bool, last: bool = False, interpret: bool = False) -> jnp.ndarray:
    """The indices (int32) of the ``k`` largest (or smallest) elements of each row of ``x`` along
    its last axis, in the selection's order, by the kernel (``interpret=True`` runs it on any
    backend, for tests); ``TOP_K_ROWS`` (``ARG_EXTREME_ROWS`` for K = 1) must apply to the call.
    ``last``: ties go to the higher index (ARGMAX/ARGMIN's DECREASING; K = 1 only)."""
    n = x.shape[-1]
    return _run(x.reshape((-1, n)), k, largest, last, interpret).reshape(x.shape[:-1] + (k,))
