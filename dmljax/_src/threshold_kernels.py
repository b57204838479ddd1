"""Pallas kernels for TOP_K / TOP_K1 with a larger K over FLOAT32 and FLOAT16 rows on NVIDIA GPUs:
a threshold found by bisection, then the elements above it, instead of K selection steps or a sort.

XLA's top_k over rows of 32,768 sorts the whole row for K > 16 on the GPU (4.3 ms for K = 256 and
2^26 elements on the H100, even staged in chunks: 0.02 of the read bandwidth), and select_kernels'
K steps grow with K. Here each row costs two launches whatever K is:

1. ``_groups_kernel``, one program a row: the row is read chunk by chunk, each element's integer
   key taken (ARGMAX's keys, ``select_kernels._keys_of``: FLOAT32 denormals as zero, -0 equal to
   +0, NaN below every number; complemented for the smallest K) and each group of GROUP adjacent
   elements reduced to its best key. The K-th best group key is found by bisection over the
   32 bits of the keys (the largest t with at least K group keys >= t: 32 counts over n / GROUP
   keys), and the K best groups (above it, then the ties in index order) are written in
   ascending order. The K best elements lie in the K best groups ranked by (best key, group
   index): each of K better groups holds an element better than any element of a worse group, or
   equal to it and at a lower index.
2. ``_pick_kernel``, one program a row: the K * GROUP elements of those groups, read again (in
   ascending index order), their K-th best key found by the same bisection, and the K best
   written in ascending index order: every key above the threshold, then the ties at it in index
   order (the page's tie rule).

XLA then orders the K by key (a stable sort of K keys a row, so ties stay in index order) and
gathers the values. The indices are the XLA path's, bit for bit (tests/ops/test_top_k.py in
Pallas's interpreter; benchmarks/select_kernel_check.py compiled on the GPU).

``use_kernel`` says whether a call takes this path on a GPU; ``jax.lax.platform_dependent`` picks
it at lowering time, so CPU (and TPU) programs never contain it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.select_kernels import _INT_MIN, _keys_of

__all__ = ["use_kernel", "threshold_rows", "MIN_ROW", "MAX_ROW", "MIN_K", "MAX_K"]

MIN_ROW = 2048
MAX_ROW = 131072
MIN_K = 17
MAX_K = 1024
"""Rows of a power-of-two length from MIN_ROW to MAX_ROW and K from MIN_K to MAX_K (and at most
a quarter of the row's groups) take the kernels; a smaller K stays with select_kernels' steps."""

GROUP = 8
"""Adjacent elements ranked together by their best key in the first kernel."""
CHUNK_PER_WARP = 256
"""Elements each warp of the first kernel reads per chunk (8 a thread)."""
WARPS = 8
"""Warps of the first kernel (the second takes one per 1,024 candidates, 1 to WARPS)."""

ENABLED = True
"""False sends every call to the XLA formula (benchmarks/issue11_gpu.py times the two paths)."""


def use_kernel(shape: tuple[int, ...], axis: int, k: int, dtype) -> bool:
    """Whether a selection can take the kernels: along the last axis of a FLOAT32 or FLOAT16 tensor,
    a power-of-two row length from MIN_ROW to MAX_ROW, K from MIN_K to MAX_K and at most a quarter
    of the row's groups (so that the second kernel reads at most a quarter of the row)."""
    if not ENABLED or np.dtype(dtype) not in (np.float32, np.float16) or not shape:
        return False
    n = shape[-1]
    return (axis == len(shape) - 1 and MIN_ROW <= n <= MAX_ROW and n & (n - 1) == 0
            and MIN_K <= k <= min(MAX_K, n // GROUP // 4))


def _count_at_least(parts, t):
    """How many keys of the (1, m) blocks ``parts`` are >= ``t`` (1, 1), as (1, 1)."""
    total = None
    for p in parts:
        c = (p >= t).astype(jnp.int32)
        total = c if total is None else total + c
    return jnp.sum(total, axis=1, keepdims=True)


def _kth_key(parts, k: int):
    """The K-th largest int32 key of the blocks ``parts`` (ties counted): the largest t with at least
    K keys >= t, found bit by bit from the top in the order-preserving unsigned view (t ^ INT_MIN),
    so that no step overflows."""
    def step(_, carry):
        found, bit = carry
        trial = found | bit
        enough = _count_at_least(parts, trial ^ _INT_MIN) >= k
        return jnp.where(enough, trial, found), jax.lax.shift_right_logical(bit, np.int32(1))

    start = (jnp.zeros((1, 1), jnp.int32), jnp.full((1, 1), _INT_MIN, jnp.int32))
    found, _ = jax.lax.fori_loop(0, 32, step, start)
    return found ^ _INT_MIN


def _store_best(o_ref, parts, numbers, t, k: int):
    """Write ``numbers`` of the K best keys of ``parts`` (blocks in ascending index order, with the
    K-th best key ``t``) to o_ref's first K slots, in ascending order: every key above t, then the
    keys equal to t in index order until K are written."""
    from jax.experimental.pallas import triton as pl_triton

    above = None
    for p in parts:
        c = jnp.sum((p > t).astype(jnp.int32), axis=1, keepdims=True)
        above = c if above is None else above + c
    ties_wanted = k - above
    ties_before = jnp.zeros((1, 1), jnp.int32)
    written = jnp.zeros((1, 1), jnp.int32)
    for p, number in zip(parts, numbers):
        tie = (p == t).astype(jnp.int32)
        take = (p > t) | ((tie == 1) & (ties_before + jnp.cumsum(tie, axis=1) - tie < ties_wanted))
        took = take.astype(jnp.int32)
        slot = written + jnp.cumsum(took, axis=1) - took
        pl_triton.store(o_ref.at[jnp.zeros_like(slot), slot], number, mask=take)
        ties_before = ties_before + jnp.sum(tie, axis=1, keepdims=True)
        written = written + jnp.sum(took, axis=1, keepdims=True)


def _groups_kernel(x_ref, o_ref, *, n: int, chunk: int, g: int, k: int, largest: bool, flush: bool):
    parts, numbers = [], []
    for start in range(0, n, chunk):  # chunk by chunk: each chunk's keys live only until reduced
        key = _keys_of(x_ref[:, start:start + chunk], largest, flush)
        parts.append(jnp.max(key.reshape(1, chunk // g, g), axis=2))
        numbers.append(start // g + jnp.arange(chunk // g, dtype=jnp.int32)[None, :])
    _store_best(o_ref, parts, numbers, _kth_key(parts, k), k)


def _pick_kernel(x_ref, group_ref, o_ref, *, g: int, k: int, k2: int, largest: bool, flush: bool):
    m = k2 * g
    real = (jnp.arange(m, dtype=jnp.int32) < k * g)[None, :]  # slots from K on hold no group
    group = group_ref[...]
    at = (group[:, :, None] * g + jnp.arange(g, dtype=jnp.int32)[None, None, :]).reshape(1, m)
    at = jnp.where(real, at, 0)
    key = jnp.where(real, _keys_of(x_ref[jnp.zeros_like(at), at], largest, flush), _INT_MIN)
    _store_best(o_ref, [key], [at], _kth_key([key], k), k)


def _pallas(kernel, inputs, specs, out_cols: int, warps: int, interpret: bool, name: str):
    from jax.experimental import pallas as pl  # imported where a kernel is built: dmljax's import stays light

    r = inputs[0].shape[0]
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=warps, num_stages=1)
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((r, out_cols), jnp.int32), grid=(r,),
        in_specs=[pl.BlockSpec((1, c), lambda i: (i, 0)) for c in specs],
        out_specs=pl.BlockSpec((1, out_cols), lambda i: (i, 0)),
        compiler_params=params, interpret=interpret, name=name)(*inputs)


def best_groups(rows: jnp.ndarray, k: int, largest: bool, interpret: bool = False) -> jnp.ndarray:
    """The first kernel: the numbers of the K best groups of GROUP elements of each row of ``rows``
    (r, n), ascending, in the first K of (r, K rounded up to a power of two) slots."""
    n = rows.shape[-1]
    k2 = 1 << (k - 1).bit_length()  # a power of two wide (Triton's blocks); slots from k on unused
    chunk = min(n, CHUNK_PER_WARP * WARPS)
    kernel = functools.partial(_groups_kernel, n=n, chunk=chunk, g=GROUP, k=k, largest=largest,
                               flush=rows.dtype == np.float32)
    return _pallas(kernel, [rows], [n], k2, WARPS, interpret, "dmljax_row_top_k_groups")


def best_in_groups(rows: jnp.ndarray, groups: jnp.ndarray, k: int, largest: bool, interpret: bool = False) -> jnp.ndarray:
    """The second kernel: the positions of the K best elements of each row of ``rows`` among those of
    its ``groups`` (best_groups's), ascending, as (r, K)."""
    k2 = groups.shape[-1]
    warps = max(1, min(WARPS, k2 * GROUP // 1024))
    kernel = functools.partial(_pick_kernel, g=GROUP, k=k, k2=k2, largest=largest, flush=rows.dtype == np.float32)
    return _pallas(kernel, [rows, groups], [rows.shape[-1], k2], k2, warps, interpret, "dmljax_row_top_k_pick")[:, :k]


def threshold_rows(x: jnp.ndarray, k: int, largest: bool, interpret: bool = False) -> jnp.ndarray:
    """The indices (int32) of the ``k`` largest (or smallest) elements of each row of ``x`` along its
    last axis, in the selection's order (best first, ties in ascending index), by the kernels
    (``interpret=True`` runs them on any backend, for tests); ``use_kernel`` must allow the call."""
    n = x.shape[-1]
    rows = x.reshape((-1, n))
    best = best_in_groups(rows, best_groups(rows, k, largest, interpret), k, largest, interpret)
    # the K in the selection's order: by key, best first; a stable sort keeps ties in index order
    key = _keys_of(jnp.take_along_axis(rows, best, axis=1), largest, rows.dtype == np.float32)
    _, best = jax.lax.sort((~key, best), dimension=1, num_keys=1, is_stable=True)
    return best.reshape(x.shape[:-1] + (k,))
