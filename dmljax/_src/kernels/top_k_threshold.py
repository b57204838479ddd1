"""Pallas kernels for TOP_K / TOP_K1 over FLOAT32 and FLOAT16 rows of MIN_ROW to MAX_ROW elements on
NVIDIA GPUs: a threshold found by bisection, then the elements above it, instead of K selection
steps or a sort.

XLA's top_k over rows of 32,768 runs one thread block a row for K <= 16 and sorts the whole row
beyond: on the H100, even staged in chunks (ops/reduction/top_k.py), it reads at 0.04 of a copy's
bandwidth for K = 8 and 0.02 for K = 256, where these kernels read at 0.81 and 0.40 (FLOAT32).
K up to ORDER_MAX costs two launches, up to RANK_MAX three:

1. ``_groups_kernel``, one program a row: the row is read chunk by chunk, each element's integer
   key taken (``_keys``: FLOAT32 denormals as zero, -0 equal to +0, NaN below every number;
   complemented for the smallest K; 17 bits for FLOAT16) and each group of GROUP adjacent
   elements reduced to its best key (GROUP from n / K: ``group_size``). The K-th best group key
   is found by bisection over the bits of the keys (the largest t with at least K group keys
   >= t: 32 counts over n / GROUP keys; for FLOAT16 only the bits below the highest one where two
   bounds of t differ, of 17), and the K best groups (above it, then the ties in index order) are
   written in ascending order, their slots from one scan of two packed counts. The K best
   elements lie in the K best groups ranked by (best key, group index): each of K better groups
   holds an element better than any element of a worse group, or equal to it and at a lower
   index.
2. ``_pick_kernel``, one program a row: the K * GROUP elements of those groups, read again (in
   ascending index order), their K-th best key found by the same bisection, and the K best
   taken in ascending index order: every key above the threshold, then the ties at it in index
   order (the page's tie rule). For K up to ORDER_MAX the kernel also writes them in the
   selection's order, each at its rank (the number of the K with a larger key, or an equal key
   at a lower index); there, where at most DIRECT_MAX candidates reach the K best groups' least
   best key (which K elements reach), those are ranked against each other directly instead,
   with no bisection.
3. ``_rank_kernel``, for K from ORDER_MAX + 1 to RANK_MAX, one program a row: the K (positions
   and keys, which the second kernel writes in ascending index order) each written at its rank,
   counted against the other K (K x K comparisons), with its value.

For K up to RANK_MAX the last kernel writes the values and the indices in the caller's index
type, so the call is these kernels and nothing else. For a larger K, XLA orders the K by key (a
stable sort of K keys a row, so ties stay in index order) and gathers the values.

Exactness: the XLA path's indices and values, bit for bit. Every step compares integer keys
exactly, the groups lose no candidate (above), and every tie is settled by index as the page
says. The tests run the kernels in Pallas's interpreter; tests/gpu/kernels.py checks them
compiled on a GPU. ``TOP_K_THRESHOLD`` says where the kernels apply.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.kernel_seam import Kernel
from dmljax._src.kernels.top_k import INT_MIN, keys_of

_INT_MAX = np.int32(np.iinfo(np.int32).max)

__all__ = ["TOP_K_THRESHOLD", "threshold_rows", "MIN_ROW", "MAX_ROW", "MIN_K", "MAX_K"]

MIN_ROW = 2048
MAX_ROW = 32768
MIN_K = 2
MAX_K = 1024
"""Rows of a power-of-two length from MIN_ROW to MAX_ROW and K from MIN_K to MAX_K (and at most
a quarter of the row's groups) take the kernels. Rows of 1,024 with K up to 16 stay with
kernels/top_k.py's K steps; K = 1 is ARGMAX's pass. H100, rows of 32,768: these kernels take
K = 8 and 16 in 0.111 and 0.113 ms (FLOAT32) and 0.064 and 0.066 ms (FLOAT16), where XLA's staged
top_k takes 2.353 ms for K = 8 in FLOAT32 and kernels/top_k.py's K steps took 0.125, 0.181, 0.099
and 0.167. Longer rows (measured and checked up to 32,768 only) would hold n / GROUP group keys a
program, up to 128 registers a thread at 131,072: they stay with XLA's staged top_k. Measured by
benchmarks/reductions/reductions.py."""

MIN_GROUP = 8
MAX_GROUP = 32
"""Adjacent elements ranked together by their best key in the first kernel: the power of two
nearest below sqrt(n / K), from MIN_GROUP to MAX_GROUP (``group_size``), so that the first
kernel's n / GROUP group keys and the second's K * GROUP candidates stay balanced."""
CHUNK_PER_WARP = 1024
"""Elements each warp of the first kernel reads per chunk (32 a thread)."""
WARPS = 4
"""Warps of the first kernel (the second takes one per CANDIDATES_PER_WARP candidates, 1 to WARPS).
One row a program: 2, 4 or 8 rows a program (one collective a count for all of them) took 1.5x
to 4x the first kernel's time on the H100. Timed at this setting by
benchmarks/reductions/reductions.py."""
CANDIDATES_PER_WARP = 1024
NARROW_DTYPES = (np.float16,)
"""The types whose bisection (one bit a step) settles only the bits below the highest one where
two bounds of the K-th key differ (``_narrowed_kth_key``); the others settle all their key's bits.
H100, rows of 32,768, of a copy's read, narrowed against all bits: FLOAT16 K = 8, 16, 32, 256
0.70, 0.68, 0.62, 0.25 against 0.67, 0.66, 0.59, 0.23; FLOAT32 0.84, 0.76, 0.70, 0.34 against
0.81, 0.79, 0.74, 0.36 (the bounds' reductions and a loop of unknown length cost more than the 9
of 32 steps they save there). Timed at this setting by benchmarks/reductions/reductions.py."""
DIGIT_BITS = 1
"""Bits of the threshold settled per counting step: 2^DIGIT_BITS - 1 counts at once, 32 (FLOAT16:
17) / DIGIT_BITS steps, rounded up. H100, FLOAT32 rows of 32,768: one bit a step (a bisection)
took 0.123, 0.128 and 0.150 ms for K = 8, 16 and 32, two bits 0.122, 0.130 and 0.161, four bits
0.159, 0.179 and 0.273 (16 counts of every key a step). Timed at this setting by
benchmarks/reductions/reductions.py."""
DIRECT_MAX = 64
"""K up to ORDER_MAX: candidates at or above the K best groups' threshold ranked against each other
directly, with no bisection, where at most this many reach it (``_pick_kernel``). H100, rows of
32,768, K = 32: FLOAT16 0.082 ms against 0.086 by bisection, FLOAT32 0.124 against 0.135. Timed
at this setting by benchmarks/reductions/reductions.py."""
ORDER_MAX = 32
"""K up to this: the second kernel also puts the K in the selection's order (each one's rank
counted against the others); a larger K, by the third kernel up to RANK_MAX, then by XLA's
sort. H100, rows of 32,768: the ranks took K = 8, 16 and 32 in 0.119, 0.125 and 0.138 ms
(FLOAT32) where XLA's sort took 0.125, 0.131 and 0.145; for K = 256, ranks in this kernel took
0.350 ms where the sort took 0.290. Timed at this setting by benchmarks/reductions/reductions.py."""

RANK_MAX = 256
"""K from ORDER_MAX + 1 to this: a third kernel puts the K in the selection's order, each one's rank
counted against the others (``_rank_kernel``); a larger K is ordered by XLA's sort."""
RANK_BLOCK = 4096
"""Comparisons a step of ``_rank_kernel`` (RANK_BLOCK / K of the K against all K), added up
element by element and reduced once at the end."""
RANK_WARPS = 0
"""Warps of ``_rank_kernel``; 0: 8 for K above 128, else WARPS. H100, rows of 32,768: K = 256
took 0.232 ms (FLOAT32) and 0.159 (FLOAT16) with 8 warps, 0.246 and 0.170 with 4, 0.293 and 0.217
with 2; for K = 64 and 128, 4 warps were as fast or faster (FLOAT16 K = 128: 0.118 against 8
warps' 0.121). RANK_BLOCK 2,048 or 8,192: the same to 0.001 ms. Timed at this setting by
benchmarks/reductions/reductions.py."""



def group_size(n: int, k: int) -> int:
    """GROUP for rows of ``n`` and ``k`` best: the largest power of two with GROUP^2 <= n / k,
    clipped to MIN_GROUP..MAX_GROUP."""
    g = MIN_GROUP
    while g < MAX_GROUP and (2 * g) ** 2 <= n // k:
        g *= 2
    return g


def _applies(shape: tuple[int, ...], axis: int, k: int, dtype) -> bool:
    """Whether a selection can take the kernels: along the last axis of a FLOAT32 or FLOAT16 tensor,
    a power-of-two row length from MIN_ROW to MAX_ROW, K from MIN_K to MAX_K and at most a quarter
    of the row's groups (so that the second kernel reads at most a quarter of the row)."""
    if np.dtype(dtype) not in (np.float32, np.float16) or not shape:
        return False
    n = shape[-1]
    return (axis == len(shape) - 1 and MIN_ROW <= n <= MAX_ROW and n & (n - 1) == 0
            and MIN_K <= k <= MAX_K and k * group_size(n, k) * 4 <= n)


TOP_K_THRESHOLD = Kernel("top_k_threshold", _applies, measured="benchmarks/reductions/reductions.py")


_HALF_NAN_KEY = np.int32(-32769)  # below every FLOAT16 number's 16-bit key


def _keys(v, largest: bool):
    """Order-preserving int32 keys, larger first in the selection: FLOAT32's are ARGMAX's
    (kernels/top_k.py's ``keys_of``: denormals as zero, -0 equal to +0, NaN below every number; 32 bits);
    FLOAT16's are its 16 bits made order-preserving (-0 equal to +0, NaN below every number: from
    -32,769 to 32,767, so the bisection needs 17 steps, not 32). Complemented for the smallest."""
    if v.dtype != jnp.float16:
        return keys_of(v, largest, True)
    bits = jnp.where(v == 0, 0, jax.lax.bitcast_convert_type(v, jnp.int16).astype(jnp.int32))
    key = jnp.where(bits < 0, bits ^ np.int32(0x7FFF), bits)  # negatives: magnitude bits reversed
    if not largest:
        key = ~key
    return jnp.where(v != v, _HALF_NAN_KEY, key)


def _key_range(dtype) -> tuple[np.int32, int]:
    """(lowest key, bits): every key of ``_keys`` (padding's INT_MIN aside) is lowest + u, u < 2^bits."""
    return (_HALF_NAN_KEY, 17) if np.dtype(dtype) == np.float16 else (INT_MIN, 32)


def _count(parts, hit):
    """How many keys of the (1, m) blocks ``parts`` ``hit`` (a test giving (D, m) for D tests at
    once), as (D, 1): the blocks' tallies added element by element, then one reduction."""
    total = None
    for p in parts:
        c = hit(p).astype(jnp.int32)
        total = c if total is None else total + c
    return jnp.sum(total, axis=1, keepdims=True)


def _kth_key(parts, k: int, dtype):
    """The K-th largest int32 key of the (1, m) blocks ``parts`` (ties counted): the largest t with
    at least K keys >= t, as lowest + u (``_key_range``), u settled DIGIT_BITS bits a step from the
    top (the sum wraps where lowest is INT_MIN, which makes it the order-preserving unsigned view
    of the keys): each step counts the keys at or above every nonzero value of the next digit
    and keeps the largest digit with K of them (0 if none has). For NARROW_DTYPES (one bit a step)
    only the bits below the highest one where two bounds of t differ are searched
    (``_narrowed_kth_key``)."""
    if DIGIT_BITS == 1 and np.dtype(dtype) in [np.dtype(d) for d in NARROW_DTYPES]:
        return _narrowed_kth_key(parts, k, dtype)
    lowest, bits = _key_range(dtype)
    steps = -(-bits // DIGIT_BITS)
    # the digits above 0: digit 0 is ``found`` itself, which K keys or more reach (not counted)
    digit = jnp.arange(1, 1 << DIGIT_BITS, dtype=jnp.int32)[:, None]  # (D, 1)

    def step(i, found):
        shift = DIGIT_BITS * (steps - 1 - i)
        trial = lowest + (found | (digit << shift))  # (D, 1)
        enough = _count(parts, lambda p: p >= trial) >= k  # fewer keys for a larger digit
        return found | (jnp.max(jnp.where(enough, digit, 0), axis=0, keepdims=True) << shift)

    return lowest + jax.lax.fori_loop(0, steps, step, jnp.zeros((1, 1), jnp.int32))


def _narrowed_kth_key(parts, k: int, dtype):
    """``_kth_key`` between two bounds: t is at most the largest key, and at least ``lo``, the least
    of the best keys of K or more disjoint groups of keys (each group holds a key >= lo). Every
    u from lo to the largest key shares their common high bits, so the bisection starts from them
    and settles only the bits below the highest differing one, a count each (data drawn from one
    distribution puts the best keys in a narrow band: about 10 of FLOAT16's 17 steps and 23 of
    FLOAT32's 32 for normal samples). A row whose keys all tie takes no step."""
    lowest, bits = _key_range(dtype)
    total = sum(p.shape[1] for p in parts)
    c = 1  # keys a group: K groups or more, within every block
    while 2 * c * k <= total and all(p.shape[1] % (2 * c) == 0 for p in parts):
        c *= 2
    lo = hi = None
    for p in parts:
        best = jnp.max(p.reshape(1, p.shape[1] // c, c), axis=2)  # each group's best key
        low, high = jnp.min(best, axis=1, keepdims=True), jnp.max(best, axis=1, keepdims=True)
        lo, hi = (low, high) if lo is None else (jnp.minimum(lo, low), jnp.maximum(hi, high))
    lo = jnp.maximum(lo, lowest)  # a padding key (INT_MIN) is below FLOAT16's lowest
    ulo, uhi = lo - lowest, hi - lowest  # (1, 1); as unsigned, ulo <= u <= uhi
    diff = ulo ^ uhi
    # the highest set bit of diff: its float's exponent (rounded up by at most one: a longer search)
    top = (jax.lax.bitcast_convert_type(diff.astype(jnp.uint32).astype(jnp.float32), jnp.int32) >> 23) - 127
    top = jnp.where(diff == 0, -1, jnp.minimum(top, bits - 1))
    bit = jnp.left_shift(1, jnp.maximum(top, 0))
    below = jnp.where(top < 0, 0, (bit - 1) | bit)  # the bits to search (top 31: all of them)

    def step(i, found):
        bit = jnp.left_shift(1, top - i)
        trial = lowest + (found | bit)
        return jnp.where(_count(parts, lambda p: p >= trial) >= k, found | bit, found)

    steps = jnp.sum(top + 1)  # a scalar trip count: 0 to bits
    return lowest + jax.lax.fori_loop(0, steps, step, ulo & ~below)


def _store_at(take, slot, spare: int, stores):
    """Write the lanes of the (1, m) block ``take`` marks to their ``slot``s of each ``(ref, values)``
    of ``stores``; the other lanes' (masked) stores aim at ``spare`` slots from ``spare`` on, never
    at a taken one (Pallas's interpreter writes a masked lane's old value back, and a scatter's
    duplicates land in any order)."""
    from jax.experimental.pallas import triton as pl_triton

    slot = jnp.where(take, slot, spare + (jnp.arange(take.shape[1], dtype=jnp.int32)[None, :] & (spare - 1)))
    for ref, values in stores:
        pl_triton.store(ref.at[jnp.zeros_like(slot), slot], values, mask=take)


def _store_taken(take, first, spare: int, stores):
    """Write the lanes of the (1, m) block ``take`` marks, in order, to consecutive slots from
    ``first`` of each ``(ref, values)`` of ``stores`` (``_store_at``)."""
    took = take.astype(jnp.int32)
    _store_at(take, first + jnp.cumsum(took, axis=1) - took, spare, stores)


_COUNT_BITS = 16
"""``_store_best`` counts the keys above the threshold and the ties at it in one int32 scan, the
ties in the low 16 bits: a program holds fewer than 2^16 keys (at most n / 8 = 4,096 group keys
in the first kernel, K * GROUP <= n / 4 = 8,192 candidates in the second)."""


def _store_best(parts, t, k: int, k2: int, *stores):
    """Write the K best keys' values of ``parts`` (blocks in ascending index order, with the K-th
    best key ``t``) to the first K slots of each ``(ref, values per part)`` of ``stores``, in
    ascending index order: every key above t, then the keys equal to t in index order until K are
    written. A key's slot is the count of keys above t before it plus that of the ties before it
    (at most the ties wanted): both from one scan of the two counts packed in an int32 (one
    collective a block instead of four). The refs are 2 * k2 wide: the other lanes' (masked)
    stores aim at the second half (``_store_at``)."""
    ties_wanted = k - _count(parts, lambda p: p > t)
    low = np.int32((1 << _COUNT_BITS) - 1)
    before = jnp.zeros((1, 1), jnp.int32)  # (above << 16) | ties, in the blocks before this one
    for j, p in enumerate(parts):
        above, tie = p > t, p == t
        packed = (above.astype(jnp.int32) << _COUNT_BITS) | tie.astype(jnp.int32)
        counts = before + jnp.cumsum(packed, axis=1) - packed  # each lane's, before it
        ties_before = counts & low
        take = above | (tie & (ties_before < ties_wanted))
        slot = (counts >> _COUNT_BITS) + jnp.minimum(ties_before, ties_wanted)
        _store_at(take, slot, k2, [(ref, values[j]) for ref, values in stores])
        before = before + jnp.sum(packed, axis=1, keepdims=True)


def _groups_kernel(x_ref, o_ref, *, n: int, chunk: int, g: int, k: int, k2: int, largest: bool):
    parts, numbers = [], []
    for start in range(0, n, chunk):  # chunk by chunk: each chunk's keys live only until reduced
        key = _keys(x_ref[:, start:start + chunk], largest)
        parts.append(jnp.max(key.reshape(1, chunk // g, g), axis=2))
        numbers.append(start // g + jnp.arange(chunk // g, dtype=jnp.int32)[None, :])
    _store_best(parts, _kth_key(parts, k, x_ref.dtype), k, k2, (o_ref, numbers))


def _precedes(key_j, j, key_i, i):
    """Whether the element at slot j comes before the one at slot i in the selection's order (slots
    in ascending index order): a larger key, or an equal key at a lower index (the page's tie rule).
    A rank is the count of the elements that come before it."""
    return (key_j > key_i) | ((key_j == key_i) & (j < i))


def _store_ranked(x_ref, o_ref, value_ref, at_ref, key_ref, slots: int, count, k: int, k2: int):
    """Write the K best of the first ``count`` of ``slots`` scratch slots (positions in ``at_ref``,
    keys in ``key_ref``, in ascending index order) at their ranks, with their values (the input's
    own bits): each one's rank is the number of the others before it (a larger key, or an equal
    key at a lower index, which is an earlier slot)."""
    from jax.experimental.pallas import triton as pl_triton

    slot = jnp.arange(slots, dtype=jnp.int32)[None, :]
    others = jnp.where(slot < count, key_ref[:, :slots], INT_MIN)  # (1, slots); unused: below every key
    b = max(1, min(slots, 4096 // slots))
    for first in range(0, slots, b):
        mine = first + jnp.arange(b, dtype=jnp.int32)[:, None]  # (b, 1)
        live = mine < count
        at_mine = pl_triton.load(at_ref.at[jnp.zeros_like(mine), mine], mask=live, other=0)
        key_mine = pl_triton.load(key_ref.at[jnp.zeros_like(mine), mine], mask=live, other=0)
        before = _precedes(others, slot, key_mine, mine)  # (b, slots)
        rank = jnp.sum(before.astype(jnp.int32), axis=1, keepdims=True)
        take = live & (rank < k)
        rank = jnp.where(take, rank, k2 + mine)  # the other lanes aim past the K slots: never a kept one
        pl_triton.store(o_ref.at[jnp.zeros_like(mine), rank], at_mine.astype(o_ref.dtype), mask=take)
        value = pl_triton.load(x_ref.at[jnp.zeros_like(mine), at_mine], mask=take, other=0)
        pl_triton.store(value_ref.at[jnp.zeros_like(mine), rank], value, mask=take)


def _pick_kernel(x_ref, group_ref, o_ref, *scratch, g: int, k: int, k2: int, largest: bool, interpret: bool,
                 ranked: bool = False):
    from jax.experimental.pallas import triton as pl_triton

    m = k2 * g
    real = (jnp.arange(m, dtype=jnp.int32) < k * g)[None, :]  # slots from K on hold no group
    group = group_ref[...]
    at = (group[:, :, None] * g + jnp.arange(g, dtype=jnp.int32)[None, None, :]).reshape(1, m)
    at = jnp.where(real, at, 0)
    key = jnp.where(real, _keys(x_ref[jnp.zeros_like(at), at], largest), INT_MIN)
    if ranked or not scratch:  # the K in ascending index order; _rank_kernel (given their keys) or XLA orders them
        keys = [(scratch[0], [key])] if ranked else []
        _store_best([key], _kth_key([key], k, x_ref.dtype), k, k2, (o_ref, [at]), *keys)
        return
    # The K in the selection's order. The K best groups' least best key t1 is reached by K
    # elements at least (each group's best), so the K best are among the candidates at or above
    # it; where at most DIRECT_MAX are (no wide tie at t1), they are gathered to scratch in
    # ascending order and ranked against each other directly. Otherwise the K-th best key is
    # bisected and the K ranked. Either way after a barrier, from scratch.
    value_ref, at_ref, key_ref = scratch
    best = jnp.max(key.reshape(1, k2, g), axis=2)  # each slot's group's best key
    t1 = jnp.min(jnp.where(jnp.arange(k2, dtype=jnp.int32)[None, :] < k, best, _INT_MAX))
    above = key >= t1
    count = jnp.sum(above.astype(jnp.int32))

    def sync():
        if not interpret:  # Pallas's interpreter runs the program's steps in order anyway
            pl_triton.debug_barrier()

    def direct():
        _store_taken(above, 0, at_ref.shape[1] // 2, [(at_ref, at), (key_ref, key)])
        sync()
        _store_ranked(x_ref, o_ref, value_ref, at_ref, key_ref, DIRECT_MAX, count, k, k2)

    def bisected():
        _store_best([key], _kth_key([key], k, x_ref.dtype), k, k2, (at_ref, [at]), (key_ref, [key]))
        sync()
        _store_ranked(x_ref, o_ref, value_ref, at_ref, key_ref, k2, k, k, k2)

    jax.lax.cond(count <= DIRECT_MAX, direct, bisected)


def _rank_kernel(x_ref, best_ref, key_ref, o_ref, value_ref, *, k: int, k2: int):
    """The K best of a row (their positions and keys in ascending position order in the first K
    of ``best_ref``'s and ``key_ref``'s slots, the second kernel's) in the selection's order: each
    one's rank is the number of the K with a larger key, or an equal key at a lower position (an
    earlier slot), written with its position (the caller's index type) and value (the input's own
    bits). The K x K comparisons go RANK_BLOCK at a time, the keys of slots j in a column (read
    straight from ``key_ref``: no load waits on another) against all K in a row, and are added up
    element by element; one reduction at the end."""
    from jax.experimental.pallas import triton as pl_triton

    slot = jnp.arange(k2, dtype=jnp.int32)[None, :]  # (1, k2): i
    live = slot < k
    key = jnp.where(live, key_ref[:, :k2], INT_MIN)  # unused slots: below every key
    b = max(1, min(k2, RANK_BLOCK // k2))
    total = jnp.zeros((b, k2), jnp.int32)
    for first in range(0, k2, b):
        j = first + jnp.arange(b, dtype=jnp.int32)[:, None]  # (b, 1)
        key_j = pl_triton.load(key_ref.at[jnp.zeros_like(j), j], mask=j < k, other=INT_MIN)
        total = total + _precedes(key_j, j, key, slot).astype(jnp.int32)
    rank = jnp.sum(total, axis=0, keepdims=True)
    rank = jnp.where(live, rank, k2 + slot)  # the unused slots' (masked) stores aim past the K
    at = jnp.where(live, best_ref[:, :k2], 0)
    pl_triton.store(o_ref.at[jnp.zeros_like(rank), rank], at.astype(o_ref.dtype), mask=live)
    pl_triton.store(value_ref.at[jnp.zeros_like(rank), rank], x_ref[jnp.zeros_like(at), at], mask=live)


def _pallas(kernel, inputs, specs, outputs, warps: int, interpret: bool, name: str):
    """One program a row of ``inputs`` (blocks of (1, c) for each c of ``specs``); ``outputs``:
    (columns, dtype) of each output, all returned."""
    from jax.experimental import pallas as pl  # imported where a kernel is built: dmljax's import stays light

    r = inputs[0].shape[0]
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=warps, num_stages=1)
    return pl.pallas_call(
        kernel, out_shape=tuple(jax.ShapeDtypeStruct((r, c), dtype) for c, dtype in outputs), grid=(r,),
        in_specs=[pl.BlockSpec((1, c), lambda i: (i, 0)) for c in specs],
        out_specs=tuple(pl.BlockSpec((1, c), lambda i: (i, 0)) for c, _ in outputs),
        compiler_params=params, interpret=interpret, name=name)(*inputs)


def best_groups(rows: jnp.ndarray, k: int, largest: bool, interpret: bool = False) -> jnp.ndarray:
    """The first kernel: the numbers of the K best groups of ``group_size`` elements of each row of
    ``rows`` (r, n), ascending, in the first K of (r, 2 * k2) slots (k2: K rounded up to a power of
    two)."""
    n = rows.shape[-1]
    k2 = 1 << (k - 1).bit_length()  # a power of two wide (Triton's blocks); slots from k on unused
    chunk = min(n, CHUNK_PER_WARP * WARPS)
    kernel = functools.partial(_groups_kernel, n=n, chunk=chunk, g=group_size(n, k), k=k, k2=k2, largest=largest)
    return _pallas(kernel, [rows], [n], [(2 * k2, jnp.int32)], WARPS, interpret, "dmljax_row_top_k_groups")[0]


def best_in_groups(rows: jnp.ndarray, groups: jnp.ndarray, k: int, largest: bool, interpret: bool = False,
                   index_dtype=np.int32):
    """The second kernel: the positions of the K best elements of each row of ``rows`` among those of
    its ``groups`` (best_groups's), as (r, K): for K up to ORDER_MAX in the selection's order, as
    ``index_dtype`` (the caller's: no conversion after), with their values (r, K); up to RANK_MAX
    the same, put in order by a third kernel (``_rank_kernel``); otherwise ascending, int32, and
    None for the values."""
    k2, g = groups.shape[-1] // 2, group_size(rows.shape[-1], k)
    warps = max(1, min(WARPS, k2 * g // CANDIDATES_PER_WARP))
    order, ranked = k <= ORDER_MAX, ORDER_MAX < k <= RANK_MAX
    kernel = functools.partial(_pick_kernel, g=g, k=k, k2=k2, largest=largest, interpret=interpret, ranked=ranked)
    scratch = [(2 * max(k2, DIRECT_MAX), jnp.int32)] * 2
    outputs = [(k2, index_dtype), (k2, rows.dtype)] + scratch if order else [(2 * k2, jnp.int32)] * (1 + ranked)
    out = _pallas(kernel, [rows, groups], [rows.shape[-1], k2], outputs, warps, interpret, "dmljax_row_top_k_pick")
    if order:
        return out[0][:, :k], out[1][:, :k]
    if ranked:  # the third kernel orders them
        kernel = functools.partial(_rank_kernel, k=k, k2=k2)
        # K a power of two: K wide, so that taking the first K copies nothing; otherwise the
        # unused slots' (masked) stores aim at a second half
        outputs = [(k2 if k == k2 else 2 * k2, index_dtype), (k2 if k == k2 else 2 * k2, rows.dtype)]
        warps = RANK_WARPS or (8 if k > 128 else WARPS)
        index, values = _pallas(kernel, [rows, *out], [rows.shape[-1], 2 * k2, 2 * k2], outputs, warps, interpret,
                                "dmljax_row_top_k_rank")
        return index[:, :k], values[:, :k]
    return out[0][:, :k], None


def threshold_rows(x: jnp.ndarray, k: int, largest: bool, interpret: bool = False, index_dtype=np.int32):
    """(indices, values): the indices (``index_dtype``) of the ``k`` largest (or smallest) elements of each
    row of ``x`` along its last axis, in the selection's order (best first, ties in ascending
    index), and those elements (their own bits), by the kernels (``interpret=True`` runs them on any
    backend, for tests); ``TOP_K_THRESHOLD`` must apply to the call. The values carry no
    derivative: the caller gives them one (ops/reduction/top_k.py's ``_selected``)."""
    n = x.shape[-1]
    rows = x.reshape((-1, n))
    best, values = best_in_groups(rows, best_groups(rows, k, largest, interpret), k, largest, interpret, index_dtype)
    if values is None:  # the K in the selection's order: a stable sort by key keeps ties in index order
        key = _keys(jnp.take_along_axis(rows, best, axis=1), largest)
        _, best = jax.lax.sort((~key, best), dimension=1, num_keys=1, is_stable=True)
        values = jnp.take_along_axis(rows, best, axis=1)
        best = best.astype(index_dtype)
    shape = x.shape[:-1] + (k,)
    return best.reshape(shape), values.reshape(shape)
