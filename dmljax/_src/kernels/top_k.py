"""A Pallas kernel for TOP_K / TOP_K1 with a small K (and ARGMAX/ARGMIN of FLOAT16 rows, K = 1)
over FLOAT32 and FLOAT16 rows on NVIDIA GPUs, which reads each row once.

XLA's top_k over rows of 32,768 ran at 0.07 of the read bandwidth for k = 8 on the H100 (one
thread block per row and a sort network), and lax.top_k of FLOAT16 sorts the whole row. The
kernel orders elements by the same integer keys as ARGMAX (``arg_extreme._keys``): FLOAT32
denormals read as zero, -0 equal to +0, the bits made order-preserving, NaN below every number
(and taken, after every number, in ascending index); for the smallest K the keys are
complemented. A selection step takes the largest key and the lowest index holding it, then
retires that element, so ties go to the lower index and the order is the page's (a maximum and a
minimum of indices per step: Triton's argmax, one reduction of (key, index) pairs, took as long
over rows of 32,768 and 2.6 times as long over rows of 1,024 on the H100).

For K >= 2 it serves rows of 1,024 (TOP_K_ROW): longer rows take threshold_kernels.py, which is
faster there (benchmarks/README.md, "TOP_K by a threshold"; the segments of 1,024 that served them
here before are gone). Within a program the row is ranked in groups of GROUP by their best key, K
groups are selected, then K elements among theirs (benchmarks/README.md, "The TOP_K kernel").
Each level is exact (the K best lie among the K best groups; equal keys keep index order): the
same indices as the XLA path, bit for bit. It returns the indices; the caller gathers the
values.

``use_kernel`` says whether a call takes this path on a GPU; ``jax.lax.platform_dependent``
picks it at lowering time, so CPU (and TPU) programs never contain it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["use_kernel", "use_arg_kernel", "use_column_arg_kernel", "top_k_rows", "arg_columns", "max_key_columns", "MIN_ROW", "MAX_ROW", "MAX_K"]

MIN_ROW = 1024
MAX_ROW = 32768
"""ARGMAX/ARGMIN (K = 1): rows of a power-of-two length from MIN_ROW to MAX_ROW."""
TOP_K_ROW = 1024
MAX_K = 16
"""TOP_K with K from 2 to MAX_K: rows of TOP_K_ROW (K steps each); longer rows take
threshold_kernels, which took K = 8 over rows of 32,768 in 0.119 ms (FLOAT32) and 0.075 (FLOAT16)
on the H100 where these K steps took 0.125 and 0.099, and rows of 1,024 in 3.6x and 3.1x these
steps' time."""
WARPS_PER_1024 = 1
"""One row per program, with a warp for each 1,024 elements up to MAX_WARPS: on the H100 (k = 8,
FLOAT32, select_sweep_8.txt, by a sweep script since removed) rows of 1,024 took 0.104 ms per
2^25 elements with one warp a row, against 0.407 ms with 32 rows and 8 warps a program; rows of
32,768 0.140 ms with 8 or 16 warps, 0.593 ms with 4."""
MAX_WARPS = 16

GROUP = 8
"""K > 1 over rows of 1,024 or more: the row is ranked in groups of GROUP elements first (see
_grouped_kernel); 0 takes the extreme K times over the whole row."""

ARG_TYPES = (np.dtype(np.float16),)
"""The types ARGMAX/ARGMIN take the kernel for (benchmarks/issue11_gpu.py times FLOAT32's too)."""

ENABLED = True
"""False sends every call to the XLA formula (benchmarks/issue11_gpu.py times the two paths)."""

_TINY = np.float32(np.finfo(np.float32).tiny)
_INT_MIN = np.int32(np.iinfo(np.int32).min)
_NAN_KEY = np.int32(np.iinfo(np.int32).min + 1)  # below every number's key (INT_MIN + 1 is a NaN's bits)


def use_kernel(shape: tuple[int, ...], axis: int, k: int, dtype) -> bool:
    """Whether a selection can take the kernel: along the last axis of a FLOAT32 or FLOAT16 tensor,
    rows of TOP_K_ROW, K from 2 to MAX_K."""
    if not ENABLED or np.dtype(dtype) not in (np.float32, np.float16) or not shape:
        return False
    n = shape[-1]
    return axis == len(shape) - 1 and n == TOP_K_ROW and 2 <= k <= MAX_K


def use_arg_kernel(shape: tuple[int, ...], axes: tuple[int, ...], dtype) -> bool:
    """Whether ARGMAX/ARGMIN (and TOP_K's K = 1) can take the kernel with K = 1: one axis, the
    last, of a FLOAT16 tensor (FLOAT32's XLA arg-reduction of keys already reads at jnp.argmax's
    speed: 1.000x on the H100), a power-of-two row length from MIN_ROW to MAX_ROW."""
    if not ENABLED or np.dtype(dtype) not in ARG_TYPES or not shape:
        return False
    n = shape[-1]
    return tuple(axes) == (len(shape) - 1,) and MIN_ROW <= n <= MAX_ROW and n & (n - 1) == 0


def _warps(n: int) -> int:
    return min(MAX_WARPS, max(1, WARPS_PER_1024 * n // 1024))


def _keys_of(v, largest: bool, flush: bool):
    """ARGMAX's integer keys of float values (any shape): larger key, earlier in the selection."""
    f = v.astype(jnp.float32)
    nan = f != f
    f = jnp.where(jnp.abs(f) < _TINY, 0.0, f) if flush else jnp.where(f == 0, 0.0, f)  # -0 ties with +0
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
        key = jnp.where(index == at, _INT_MIN, key)  # retired: below NaN
    return out


def _kernel(x_ref, o_ref, *, n: int, k: int, k2: int, largest: bool, last: bool, flush: bool):
    key = _keys_of(x_ref[...], largest, flush)
    b = key.shape[0]
    col = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], (b, n))
    o_ref[...] = _select(key, col, k, k2, n, last)


def _grouped_kernel(x_ref, o_ref, *, n: int, k: int, k2: int, g: int, largest: bool, flush: bool):
    # The row in groups of g: the K best elements lie in the K best groups by their best key
    # (ranked by key, then by group index), since each of K better groups holds an element
    # better than any element of a worse group. Selecting groups costs K passes over n / g
    # keys; the K groups' K * g elements, read again (from cache), give the K best.
    key = _keys_of(x_ref[...], largest, flush)
    groups = jnp.max(key.reshape(1, n // g, g), axis=2)
    gcol = jnp.broadcast_to(jnp.arange(n // g, dtype=jnp.int32)[None, :], (1, n // g))
    chosen = _select(groups, gcol, k, k2, n // g)  # (1, k2): group numbers, slots from k on 0
    m = k2 * g
    cand = (chosen[:, :, None] * g + jnp.arange(g, dtype=jnp.int32)[None, None, :]).reshape(1, m)
    real = (jnp.arange(m, dtype=jnp.int32) < k * g)[None, :]  # the padding slots repeat group 0: out
    row = jnp.zeros((1, m), jnp.int32)
    ckey = jnp.where(real, _keys_of(x_ref[row, cand], largest, flush), _INT_MIN)
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
    backend, for tests); ``use_kernel`` (``use_arg_kernel`` for K = 1) must allow the call.
    ``last``: ties go to the higher index (ARGMAX/ARGMIN's DECREASING; K = 1 only)."""
    n = x.shape[-1]
    return _run(x.reshape((-1, n)), k, largest, last, interpret).reshape(x.shape[:-1] + (k,))


# ----------------------------------------------------------------------- ARGMAX/ARGMIN by columns
COLUMN_WIDTH = 128
"""ARGMAX/ARGMIN over an axis with elements after it (the first axis of a matrix): one program per
COLUMN_WIDTH adjacent columns and COLUMN_SEGMENT elements of the reduced axis, walking down its
segment COLUMN_ROWS rows at a time, keeping each column's best key and its index; XLA then picks
among the segments' (a small reduction). XLA's arg-reduction of FLOAT16 over the first axis took
1.43x jnp.argmax's time on the H100 (issue 11)."""
COLUMN_ROWS = 8
COLUMN_SEGMENT = 512
COLUMN_WARPS = 1
"""Settings from the H100 (benchmarks/issue11_gpu.py's arg group, FLOAT16 262,144 x 1,024 over the
first axis; results/h100_remeasure/arg_columns_*): 128 columns, 8 rows a step, segments of 512
and 1 warp took 0.910x jnp.argmax's time; 128, 16, 512, 2: 1.002-1.007x; 256, 32, 1,024, 4:
1.059x; 256, 32, 4,096, 4: 1.228x (fewer, longer programs hide less of each step's latency)."""


def use_column_arg_kernel(shape: tuple[int, ...], axes: tuple[int, ...], dtype) -> bool:
    """Whether ARGMAX/ARGMIN can take the column kernel: one axis of a FLOAT16 tensor with at least
    COLUMN_WIDTH elements after it (a multiple of it) and a multiple of COLUMN_ROWS along it."""
    if not ENABLED or np.dtype(dtype) not in ARG_TYPES or len(axes) != 1 or not shape:
        return False
    a = axes[0]
    after = int(np.prod(shape[a + 1:], dtype=np.int64))
    return after >= COLUMN_WIDTH and after % COLUMN_WIDTH == 0 and shape[a] % COLUMN_ROWS == 0


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

    start = (jnp.full((1, w), _INT_MIN, jnp.int32), jnp.zeros((1, w), jnp.int32))
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
    column kernel (REDUCE's MAX and MIN); ``use_column_arg_kernel`` must allow the shape."""
    best = jnp.max(_columns_call(x, axis, keys, False, False, interpret, "dmljax_column_max"), axis=1)
    return best.reshape(x.shape[:axis] + (1,) + x.shape[axis + 1:])


def arg_columns(x: jnp.ndarray, axis: int, largest: bool, last: bool, interpret: bool = False) -> jnp.ndarray:
    """The index (int32) of the largest (smallest) element along ``axis`` of FLOAT16 ``x``, ties to
    the first (``last``: the last), NaN never chosen unless alone (ARGMAX's keys), with the axis
    kept as 1; ``use_column_arg_kernel`` must allow the call (``interpret=True``: any backend)."""
    shape = x.shape
    keys, at = _columns_call(x, axis, lambda v: _keys_of(v, largest, False), True, last, interpret,
                             "dmljax_column_arg")
    # the segments' winners: the best key, then the first (last) index holding it
    best = jnp.max(keys, axis=1, keepdims=True)
    if last:
        index = jnp.max(jnp.where(keys == best, at, -1), axis=1)
    else:
        index = jnp.min(jnp.where(keys == best, at, np.int32(np.iinfo(np.int32).max)), axis=1)
    return index.reshape(shape[:axis] + (1,) + shape[axis + 1:])
