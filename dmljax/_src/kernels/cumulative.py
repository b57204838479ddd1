"""Pallas kernels for CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT of FLOAT32 and FLOAT16 rows
along the last axis on NVIDIA GPUs, which read each row once and write it once.

On the H100, XLA's formula over rows of 1,024 moves 0.23 of a copy's bandwidth for sums and 0.15
(FLOAT32) and 0.08 (FLOAT16) for products; the kernels move 0.94 to 1.01 for sums and 0.65 to
0.99 for products. Each program reads a block of whole rows (BLOCK elements; PRODUCT_BLOCK for
products), scans them in registers and writes them once. A row longer than a block is one
program's, walked a block at a time in scan order with the tally of the blocks before it carried
on and the next block read ahead (``_sum_loop_kernel``, ``_product_tile_kernel``). Triton's scan
runs either way along a row (``_scan_primitive``: Pallas lowers only a forward cumsum), so a
reverse tally reads and writes its row in place, as a forward one; an exclusive tally reads it
through an index vector shifted by one (the identity in front): every mode is one pass.

A sum follows the XLA path's formula: read in FLOAT32 (FLOAT32 denormals flushed, FLOAT16
widened), summed in FLOAT32, rounded once to the tensor's type (denormals flushed). A product is
scanned as (mantissa, exponent) pairs, so that no partial product overflows or vanishes whatever
order the scan combines them in (the rule the XLA path keeps by a rescan), turned into a FLOAT32
value in one step (infinity above its range, a signed zero below its normal range) and rounded
to the tensor's type. Exactness: within the operators' budgets, not bit for bit: the order of
the additions and multiplications is Triton's scan tree instead of XLA's, which DirectML leaves
open (docs/semantics.md#accumulating-operators).
``CUMULATIVE_SUMMATION_ROWS`` and ``CUMULATIVE_PRODUCT_ROWS`` say where the kernels apply.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.kernel_seam import Kernel
from dmljax._src.numerics import associative_scan, flush_values

__all__ = ["CUMULATIVE_SUMMATION_ROWS", "CUMULATIVE_PRODUCT_ROWS", "scan_rows", "product_rows", "MIN_ROW", "MAX_ROW", "LOOP_MAX_ROW",
           "BLOCK"]

MIN_ROW = 16
MAX_ROW = 8192
"""Rows from MIN_ROW up take the kernels (shorter ones stay with XLA). A row of more than MAX_ROW
elements does not fit in one program's registers with room to scan: the sum's kernel takes it
MAX_ROW elements at a time (``_sum_loop_kernel``), the running sum carried from block to block."""
LOOP_MAX_ROW = 1 << 20
"""Rows up to this length take the kernels, a program a row carrying its tally block to block
(the product's carried exponent, at most 2^20 x 278 in magnitude, stays far inside int32)."""
BLOCK = 8192
"""Elements per program of the sum's kernel: rows of n are taken BLOCK / n at a time (at least
one). H100, rows of 128 to 8,192: 0.94 to 1.01 of a copy's bandwidth in FLOAT32 and FLOAT16.
Timed at this setting by benchmarks/reductions/reductions.py."""


def _rows_per_program(r: int, n: int, block: int = BLOCK) -> int:
    """The largest power of two up to block / n that divides the row count."""
    b = max(1, block // n)
    while r % b:
        b //= 2
    return b


def _sum_applies(shape: tuple[int, ...], axis: int, dtype, half: bool) -> bool:
    """Whether a tally can take the kernel: along the last axis, FLOAT32 or FLOAT16 computed in
    FLOAT32, a power-of-two row length from MIN_ROW to LOOP_MAX_ROW, and at least 1,024 elements
    per program (rows that short in a row count with no power-of-two factor stay with XLA), where
    this JAX's Triton lowering has the scan either way along a row."""
    if half or np.dtype(dtype) not in (np.float32, np.float16) or not shape:
        return False
    n, r = shape[-1], int(np.prod(shape[:-1], dtype=np.int64))
    if axis != len(shape) - 1 or not MIN_ROW <= n <= LOOP_MAX_ROW or n & (n - 1):
        return False
    return _rows_per_program(r, n) * n >= 1024 and _sum_scan()[1]


def _exclusive_input(x_ref, row, at, n: int, reverse: bool, first: float, sub: int | None = None):
    """An exclusive tally's input at the row positions ``at`` (any order): each position's neighbour
    before it in scan order, read through index vectors, and ``first`` (the tally's identity) at the
    row's first position in scan order; FLOAT32. ``sub``: the row held as (n / sub, sub) sub-blocks."""
    src = jnp.clip(at + 1 if reverse else at - 1, 0, n - 1)
    v = x_ref[row, src // sub, src % sub] if sub else x_ref[row, src]
    return jnp.where(at == (n - 1 if reverse else 0), first, v.astype(jnp.float32))


def _kernel(x_ref, o_ref, *, b: int, n: int, reverse: bool, exclusive: bool, flush: bool):
    # Triton's scan runs either way along the row (reverse), so only the exclusive tallies read
    # through an index grid: each position reads its neighbour before it in scan order, and the
    # first position a 0.
    if exclusive:
        col = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], (b, n))
        row = jnp.broadcast_to(jnp.arange(b, dtype=jnp.int32)[:, None], (b, n))
        x = _exclusive_input(x_ref, row, col, n, reverse, 0.0)
    else:
        x = x_ref[...].astype(jnp.float32)
    if flush:
        x = flush_values(x)
    y = _running_sum(x, reverse)
    if flush:
        y = flush_values(y)
    o_ref[...] = y.astype(o_ref.dtype)


def _blocks_in_scan_order(x_ref, n: int, chunk: int, reverse: bool, exclusive: bool, first: float):
    """A row of n elements walked ``chunk`` at a time in scan order (from its end with
    ``reverse``): the block count, the mask of a block's final element in scan order, each block's
    first position, and its read (an exclusive tally's through index vectors, ``first`` its
    identity)."""
    from jax.experimental import pallas as pl

    col = jnp.arange(chunk, dtype=jnp.int32)[None, :]
    blocks = n // chunk
    last = col == (0 if reverse else chunk - 1)

    def start(i):
        return ((blocks - 1 - i) if reverse else i) * chunk

    def read(i):
        if exclusive:
            return _exclusive_input(x_ref, jnp.zeros_like(col), start(i) + col, n, reverse, first)
        return x_ref[:, pl.ds(start(i), chunk)]

    return blocks, last, start, read


def _sum_loop_kernel(x_ref, o_ref, *, b: int, n: int, chunk: int, reverse: bool, exclusive: bool, flush: bool):
    """One row (b = 1) of n > chunk elements, ``chunk`` at a time in scan order (exclusive tallies
    through index vectors, as ``_kernel``): each block's running sum plus the sum carried from the
    blocks before it, written, and its last element in scan order carried on. The next block is
    read before this one is scanned (``_prefetched_loop``)."""
    from jax.experimental import pallas as pl

    blocks, last, start, read = _blocks_in_scan_order(x_ref, n, chunk, reverse, exclusive, 0.0)

    def step(i, x, carry):
        x = x.astype(jnp.float32)
        if flush:
            x = flush_values(x)
        y = _running_sum(x, reverse) + carry
        o_ref[:, pl.ds(start(i), chunk)] = (flush_values(y) if flush else y).astype(o_ref.dtype)
        return _pick(last, y, 1)

    _prefetched_loop(blocks, read, step, jnp.zeros((1, 1), jnp.float32), PREFETCH)


def _pick(mask, v, axis: int):
    """The element of the FLOAT32 or int32 ``v`` that ``mask`` selects along ``axis`` (one, or none:
    0), with that axis kept as 1, bit for bit: a float's bits summed as integers (a float sum of the
    others' zeros would turn -0.0 into +0.0: XLA's reduction starts from +0.0)."""
    if v.dtype != jnp.float32:
        return jnp.sum(jnp.where(mask, v, 0), axis=axis, keepdims=True)
    bits = jax.lax.bitcast_convert_type(v, jnp.int32)
    return jax.lax.bitcast_convert_type(jnp.sum(jnp.where(mask, bits, 0), axis=axis, keepdims=True), jnp.float32)


def _prefetched_loop(blocks: int, read, step, init, ahead: bool):
    """``carry = step(i, read(i), carry)`` for i in 0 .. blocks - 1, with block i + 1's read issued
    before step i runs: a load's registers are waited for at their first use, so the next block's
    memory latency is spent while this block is scanned instead of after it (a row walked block by
    block is a chain of such latencies). The last step reads its own block again (in cache).
    ``ahead`` False: each block is read when its step runs."""
    if not ahead:
        jax.lax.fori_loop(0, blocks, lambda i, carry: step(i, read(i), carry), init)
        return

    def body(i, state):
        carry, x = state
        following = read(jnp.minimum(i + 1, blocks - 1))
        return step(i, x, carry), following

    jax.lax.fori_loop(0, blocks, body, (init, read(0)))


PREFETCH = True
"""Whether the loops over a long row's blocks read the next block ahead (``_prefetched_loop``);
False: none does. H100, FLOAT16 products over rows of 65,536 (2^28 elements; forward / reverse,
of a copy's bandwidth): 0.70 / 0.65 read ahead, 0.64 / 0.58 without. Timed at this setting by
benchmarks/reductions/reductions.py."""


def scan_rows(x: jnp.ndarray, reverse: bool, exclusive: bool, interpret: bool = False) -> jnp.ndarray:
    """The running sum of ``x`` along its last axis (reversed and/or exclusive), by the kernel
    (``interpret=True`` runs it on any backend, for tests); ``CUMULATIVE_SUMMATION_ROWS`` must
    apply to the shape."""
    n = x.shape[-1]
    if n > MAX_ROW:
        return _rows_call(functools.partial(_sum_loop_kernel, chunk=MAX_ROW), "dmljax_row_cumsum", x, reverse,
                          exclusive, interpret, n, 8)
    return _rows_call(_kernel, "dmljax_row_cumsum", x, reverse, exclusive, interpret)


def _rows_call(body, name, x, reverse, exclusive, interpret, block=None, warps=None, sub=None):
    """``body`` over the rows of ``x`` along its last axis, a program a block of ``block`` elements
    (BLOCK) of whole rows; ``sub``: one row a program, as (1, n / sub, sub) sub-blocks."""
    from jax.experimental import pallas as pl  # imported where a kernel is built: dmljax's import stays light

    n = x.shape[-1]
    rows = x.reshape((-1, n))
    b = _rows_per_program(rows.shape[0], n, block or BLOCK)
    spec = pl.BlockSpec((b, n), lambda i: (i, 0))
    if sub:
        b, rows = 1, rows.reshape((-1, n // sub, sub))
        spec = pl.BlockSpec((1, n // sub, sub), lambda i: (i, 0, 0))
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=warps or (4 if b * n <= 2048 else 8), num_stages=1)
    kernel = functools.partial(body, b=b, n=n, reverse=reverse, exclusive=exclusive, flush=x.dtype == np.float32)
    out = pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct(rows.shape, rows.dtype), grid=(rows.shape[0] // b,),
        in_specs=[spec], out_specs=spec, compiler_params=params, interpret=interpret, name=name)(rows)
    return out.reshape(x.shape)


# ------------------------------------------------------------------ CUMULATIVE_PRODUCT's rows
# A product scan combines (mantissa, exponent) pairs, so that no partial product overflows or
# vanishes whatever order Triton's scan tree combines them in (the XLA path's rule, kept there by
# a rescan: ops/reduction/cumulative.py). Pallas lowers only cumsum to Triton's scan, so the pair
# scan is a primitive of its own: Triton's scan with this combine on a GPU,
# numerics.associative_scan elsewhere (Pallas's interpreter in the tests).
_EXP_MASK = np.int32(0x7F800000)


def _exponent_field(v):
    """(bits, field, normal): FLOAT32 ``v``'s bits as int32, its biased exponent field, and
    whether it is a normal number (the field neither 0 nor 255)."""
    bits = jax.lax.bitcast_convert_type(v, jnp.int32)
    field = jax.lax.shift_right_logical(bits & _EXP_MASK, np.int32(23))
    return bits, field, (field != 0) & (field != 255)


def _with_field(bits, field):
    """The FLOAT32 of ``bits`` with its exponent field replaced by ``field`` (0 to 255)."""
    return jax.lax.bitcast_convert_type((bits & ~_EXP_MASK) | (field << 23), jnp.float32)


def _normalized(v):
    """(m, k): ``v``'s mantissa scaled into [1, 2) with its sign, and its unbiased exponent; zero,
    infinity and NaN as they are, with exponent 0 (FLOAT32 denormals are flushed before)."""
    bits, field, normal = _exponent_field(v)
    return jnp.where(normal, _with_field(bits, np.int32(127)), v), jnp.where(normal, field - 127, 0)


def _pair_product(a, b):
    """(ma, ea) x (mb, eb): the mantissas' product renormalized into [1, 2), exponents added. Two
    mantissas in [1, 2) give a product in [1, 4): halved (its exponent field lowered by one) when
    that field is 128; zero, infinity and NaN products keep their field and stay as they are."""
    p = jax.lax.bitcast_convert_type(a[0] * b[0], jnp.int32)
    k = ((p & _EXP_MASK) == np.int32(128 << 23)).astype(jnp.int32)
    return jax.lax.bitcast_convert_type(p - (k << 23), jnp.float32), a[1] + b[1] + k


def _pairs_to_value(m, e):
    """m x 2^e as FLOAT32 for any normal m (its own exponent added to e): infinity above FLOAT32's
    range, a signed zero below its normal range (the flush of the output); zero, infinity and NaN
    mantissas as they are."""
    bits, field, normal = _exponent_field(m)
    biased = e + field  # the value's exponent field, where it is 1 to 254
    value = _with_field(bits, jnp.clip(biased, 0, 255))  # beyond the range: the fields 0 and 255
    huge = jnp.where(m < 0, -np.inf, np.inf).astype(jnp.float32)
    tiny = m * 0.0  # a zero with m's sign
    return jnp.where(normal, jnp.where(biased > 254, huge, jnp.where(biased < 1, tiny, value)), m)


def _scan_primitive(name: str, combine) -> tuple:
    """(a primitive scanning its operands along ``axis`` with ``combine`` (two tuples of elements
    to one), whether it lowers to Triton's scan): Triton's scan with the combine on a GPU, either
    way along the axis (``reverse``), and numerics.associative_scan elsewhere (Pallas's interpreter
    in the tests). The Triton lowering is registered where this JAX's Pallas Triton lowering has the
    pieces it is built from. (Pallas lowers only a forward cumsum to Triton's scan.)"""
    from jax.extend.core import Primitive
    from jax.interpreters import mlir

    def impl(*xs, axis, reverse):
        return associative_scan(combine, tuple(xs), axis=axis, reverse=reverse)

    prim = Primitive(name)
    prim.multiple_results = True
    prim.def_impl(impl)
    prim.def_abstract_eval(lambda *xs, axis, reverse: xs)
    mlir.register_lowering(prim, mlir.lower_fun(impl, multiple_results=True))
    try:
        from jax._src import api_util
        from jax._src import linear_util as lu
        from jax._src.interpreters import partial_eval as pe
        from jax._src.lib.triton import dialect as tt_dialect
        from jax._src.pallas.triton import lowering as tl
        from jax._src.lib.mlir import ir
    except ImportError:
        return prim, False

    def rule(ctx, *xs, axis, reverse):
        count = len(xs)
        scalars = [jax.core.ShapedArray((), a.dtype) for a in ctx.avals_in] * 2

        def flat(*v):
            return list(combine(v[:count], v[count:]))
        traced = lu.wrap_init(flat, debug_info=api_util.debug_info(name, flat, (0,) * (2 * count), {}))
        jaxpr, _, consts = pe.trace_to_jaxpr_dynamic(traced, scalars)
        if consts:
            raise NotImplementedError(f"{name}'s combine closes over constants")
        scan = tt_dialect.ScanOp(list(xs), axis, reverse)
        types = [tl._element_type(v.type) for v in xs]
        block = scan.regions[0].blocks.append(*(types * 2))
        with ir.InsertionPoint.at_block_begin(block):
            tt_dialect.scan_return(tl.lower_jaxpr_to_triton_ir(ctx.context, jaxpr, None, *block.arguments))
        scan.verify()
        return list(scan.result)

    tl.register_lowering(prim)(rule)
    return prim, True


@functools.cache
def _pair_scan() -> tuple:
    """The running (mantissa, exponent) product (``_pair_product``): ``_scan_primitive``'s pair,
    defined at first use, so that importing dmljax does not import Pallas."""
    return _scan_primitive("dmljax_pair_product_scan", _pair_product)


@functools.cache
def _mul_scan() -> tuple:
    """The running float product, unnormalized (``_scan_primitive``'s pair): for sub-blocks of
    mantissas in [1, 2) short enough that no product leaves FLOAT32's normal range."""
    return _scan_primitive("dmljax_product_scan", lambda a, b: (a[0] * b[0],))


@functools.cache
def _sum_scan() -> tuple:
    """The running sum either way along the axis (``_scan_primitive``'s pair)."""
    return _scan_primitive("dmljax_sum_scan", lambda a, b: (a[0] + b[0],))


def _running_sum(x, reverse: bool):
    """The running sum of the (rows, n) block ``x`` (float or integer) along its rows, in scan
    order (``reverse``: from the row's end), by Triton's scan on a GPU, in place either way."""
    if not reverse:
        return jnp.cumsum(x, axis=1)
    return _sum_scan()[0].bind(x, axis=1, reverse=True)[0]


def _product_applies(shape: tuple[int, ...], axis: int, dtype, half: bool) -> bool:
    """The sum's rule, for CUMULATIVE_PRODUCT (where this JAX's Triton lowering has the scan)."""
    return _sum_applies(shape, axis, dtype, half) and _pair_scan()[1]


CUMULATIVE_SUMMATION_ROWS = Kernel("cumulative", _sum_applies, measured="benchmarks/reductions/reductions.py")
CUMULATIVE_PRODUCT_ROWS = Kernel("cumulative", _product_applies, measured="benchmarks/reductions/reductions.py")


PRODUCT_BLOCK = 1024
"""Elements per program of the product's kernel: a pair per element, and the pair scan's combine
is longer than a sum's. H100, FLOAT32 rows of 1,024 (forward / reverse, of a copy's bandwidth):
0.99 / 0.96 with 1,024 elements and two warps; the sum's 8,192 and eight warps gave 0.70 / 0.64.
Timed at this setting by benchmarks/reductions/reductions.py."""
PRODUCT_WARPS = None
"""Warps per program of the product's kernel (None: one per 512 elements, 1 to 8; rows longer
than PRODUCT_BLOCK, which one program scans PRODUCT_BLOCK elements at a time with the running
product carried from block to block (``_product_tile_kernel``): ``LOOP_WARPS``)."""


def _product_kernel(x_ref, o_ref, *, b: int, n: int, reverse: bool, exclusive: bool, flush: bool):
    # Triton's scan runs either way along the row (reverse), so only the exclusive tallies read
    # through an index grid: each position reads its neighbour before it in scan order, and the
    # first position a 1.
    if exclusive:
        col = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32)[None, :], (b, n))
        row = jnp.broadcast_to(jnp.arange(b, dtype=jnp.int32)[:, None], (b, n))
        x = _exclusive_input(x_ref, row, col, n, reverse, 1.0)
    else:
        x = x_ref[...].astype(jnp.float32)
    if flush:
        x = flush_values(x)
    m, e = _normalized(x)
    m, e = _pair_scan()[0].bind(m, e, axis=1, reverse=reverse)
    o_ref[...] = _pairs_to_value(m, e).astype(o_ref.dtype)


def _product_loop_kernel(x_ref, o_ref, *, b: int, n: int, chunk: int, ahead: bool, reverse: bool, exclusive: bool,
                         flush: bool):
    """One row (b = 1) of n > chunk elements, ``chunk`` at a time in scan order: each block's pair scan
    times the product carried from the blocks before it (the pair of the last element scanned),
    the block written, its last pair carried on; the next block read ahead (``_prefetched_loop``)."""
    from jax.experimental import pallas as pl

    blocks, last, start, read = _blocks_in_scan_order(x_ref, n, chunk, reverse, exclusive, 1.0)

    def step(i, x, carry):
        x = x.astype(jnp.float32)
        if flush:
            x = flush_values(x)
        m, e = _normalized(x)
        m, e = _pair_scan()[0].bind(m, e, axis=1, reverse=reverse)
        m, e = _pair_product(carry, (m, e))
        o_ref[:, pl.ds(start(i), chunk)] = _pairs_to_value(m, e).astype(o_ref.dtype)
        return _pick(last, m, 1), _pick(last, e, 1)

    _prefetched_loop(blocks, read, step, (jnp.ones((1, 1), jnp.float32), jnp.zeros((1, 1), jnp.int32)), ahead)


def _product_tile_kernel(x_ref, o_ref, *, b: int, n: int, chunk: int, sub: int, ahead: bool, reverse: bool,
                         exclusive: bool, flush: bool):
    """``_product_loop_kernel``'s product with less arithmetic an element: the row comes as
    (1, n / sub, sub) sub-blocks (the wrapper's reshape), a block of ``chunk`` elements being a
    (chunk / sub, sub) tile. The mantissas (in [1, 2)) of a sub-block are multiplied as plain
    floats (below 2^sub, normal) and their exponents added as integers; only the tile's
    chunk / sub sub-block totals take the pair scan; each element's product is then its running
    product within the sub-block times the product of everything before the sub-block (the carry
    and the sub-blocks before it, (mantissa, exponent)), turned into a value in one step
    (``_pairs_to_value`` takes a mantissa of any exponent). The sub-blocks before each one are
    read off the tile's inclusive totals by a (chunk / sub)^2 selection (``_pick``), no memory
    round trip."""
    from jax.experimental import pallas as pl

    r = chunk // sub
    blocks = n // chunk
    col = jnp.arange(sub, dtype=jnp.int32)[None, :]  # (1, sub)
    row = jnp.arange(r, dtype=jnp.int32)[:, None]  # (r, 1)
    last_col = col == (0 if reverse else sub - 1)  # a sub-block's final element in scan order
    last_row = row == (0 if reverse else r - 1)  # the tile's final sub-block in scan order
    first_row = row == (r - 1 if reverse else 0)
    before = jnp.arange(r, dtype=jnp.int32)[None, :] == (row + 1 if reverse else row - 1)  # (r, r)

    def start(i):  # the first sub-block of scan step i's tile
        return ((blocks - 1 - i) if reverse else i) * r

    def read(i):
        if exclusive:
            pos = (start(i) + row) * sub + col  # (r, sub) positions in the row
            return _exclusive_input(x_ref, jnp.zeros_like(pos), pos, n, reverse, 1.0, sub)
        return x_ref[0, pl.ds(start(i), r), :]

    def step(i, x, carry):
        x = x.astype(jnp.float32)
        if flush:
            x = flush_values(x)
        m, e = _normalized(x)
        p = _mul_scan()[0].bind(m, axis=1, reverse=reverse)[0]  # (r, sub), below 2^sub
        s = _running_sum(e, reverse)
        tm, tk = _normalized(_pick(last_col, p, 1))  # (r, 1)
        te = _pick(last_col, s, 1) + tk
        im, ie = _pair_scan()[0].bind(tm, te, axis=0, reverse=reverse)  # through each sub-block
        xm = _pick(before, im.reshape(1, r), 1)  # through the one before
        xe = _pick(before, ie.reshape(1, r), 1)
        qm, qe = _pair_product(carry, (jnp.where(first_row, np.float32(1.0), xm), jnp.where(first_row, 0, xe)))
        o_ref[0, pl.ds(start(i), r), :] = _pairs_to_value(p * qm, s + qe).astype(o_ref.dtype)
        return _pair_product(carry, (_pick(last_row, im, 0), _pick(last_row, ie, 0)))

    _prefetched_loop(blocks, read, step, (jnp.ones((1, 1), jnp.float32), jnp.zeros((1, 1), jnp.int32)), ahead)


PRODUCT_SUB = 64
"""Elements of a sub-block in ``_product_tile_kernel`` (products of up to 64 mantissas in [1, 2)
stay below 2^64); 0: long rows take ``_product_loop_kernel``'s pair scan of every element. H100,
rows of 65,536, read ahead (forward / reverse, of a copy's bandwidth): FLOAT32 0.90 / 0.88 by
sub-blocks against 0.88 / 0.85 by the pair scan of every element; FLOAT16, which the pair
arithmetic bounds, 0.70 / 0.65 against 0.58 / 0.52. Timed at this setting by
benchmarks/reductions/reductions.py."""


LOOP_WARPS = 1
"""Warps of a program that carries a row's product from block to block, its next block read
ahead (PRODUCT_WARPS None). H100, 4,096 rows of 65,536 by sub-blocks (forward / reverse, of a
copy's bandwidth): FLOAT32 0.90 / 0.88 with one warp, 0.76 / 0.71 with two, 0.86 / 0.80 with
four; FLOAT16 0.70 / 0.65, 0.58 / 0.51, 0.56 / 0.53; 1,024 rows of 65,536: FLOAT32 0.85 / 0.83
with one, 0.78 / 0.74 with four; FLOAT16 0.64 / 0.59 with one, 0.49 / 0.48 with four. Timed at
this setting by benchmarks/reductions/reductions.py."""


def product_rows(x: jnp.ndarray, reverse: bool, exclusive: bool, interpret: bool = False) -> jnp.ndarray:
    """The running product of ``x`` along its last axis (reversed and/or exclusive), by the pair
    scan kernel; ``CUMULATIVE_PRODUCT_ROWS`` must apply to the shape (``interpret=True``: any
    backend)."""
    n = x.shape[-1]
    if n > PRODUCT_BLOCK:
        warps = PRODUCT_WARPS or LOOP_WARPS
        sub = PRODUCT_SUB
        if sub and PRODUCT_BLOCK % sub == 0:
            kernel = functools.partial(_product_tile_kernel, chunk=PRODUCT_BLOCK, sub=sub, ahead=PREFETCH)
            return _rows_call(kernel, "dmljax_row_cumprod", x, reverse, exclusive, interpret, n, warps, sub)
        kernel = functools.partial(_product_loop_kernel, chunk=PRODUCT_BLOCK, ahead=PREFETCH)
        return _rows_call(kernel, "dmljax_row_cumprod", x, reverse, exclusive, interpret, n, warps)
    b = _rows_per_program(int(np.prod(x.shape[:-1], dtype=np.int64)), n, PRODUCT_BLOCK)
    warps = PRODUCT_WARPS or max(1, min(8, b * n // 512))
    return _rows_call(_product_kernel, "dmljax_row_cumprod", x, reverse, exclusive, interpret, PRODUCT_BLOCK, warps)
