"""A Pallas kernel for DEQUANTIZE of 4-bit weights followed by GEMM on NVIDIA GPUs (ONNX's
com.microsoft MatMulNBits, which ONNX Runtime's DirectML provider runs as a DEQUANTIZE + GEMM
graph that DirectML's graph compiler fuses): FLOAT16 rows X {M, K}, M from 1 to MAX_ROWS, times
the dequantized INT4 or UINT4 weights, which are read once, packed, and never written out.

XLA computes the pair as two passes: DEQUANTIZE writes the FLOAT16 weights (4x the 4-bit bytes)
and the product reads them back, so at a 4096 x 4096 weight the pair took 2.5-2.7x a FLOAT16
GEMM's time on an H200 (benchmarks/quantization/quantization.py, group int4_gemm, the weights read
from device memory), where reading the weights is the whole cost (INT4: 8 MiB, FLOAT16: 32 MiB);
the kernel takes 0.86-0.96x the FLOAT16 GEMM's time at batch 1 to 16.

The weights {R, C} (B, or B transposed: {N, K} with TransB) arrive as DirectML packs them, two a
byte along the last axis, the first in the low nibble (``lax.bitcast_convert_type`` of the int4
array: the same bytes); 4-bit zero points are read packed the same way. The kernel never
interleaves nibbles: where the pairs run along K (the weights {N, K}), a byte holds the elements
of K = 2j (low) and 2j + 1 (high), so the product is X[:, even] x Low^T + X[:, odd] x High^T, X's
even and odd columns read as two tiles; where they run along N (the weights {K, N}), the output's
even columns are X x Low and its odd ones X x High, stored interleaved. One program computes
``block_n`` output columns (``block_n / 2`` byte columns when the pairs run along N) over its slice
of K, ``block_k`` elements of K an iteration (``Settings``): each nibble is dequantized to
DEQUANTIZE's FLOAT16 value (``(code - zero_point) * scale``) in FLOAT16 arithmetic, the code read
as the FLOAT16 value 1024 + code by its bits (``_dequantized``: no conversion per weight; on the
GPU inline PTX on four bytes at a time), its scale and zero point those at (row // block, column
// block) of their own blocking (per tensor, per axis or per block, as DEQUANTIZE's
QuantizationTensors: read once a block where the tile holds whole blocks or lies in one,
``_per_block``), and the FLOAT16 products accumulated in FLOAT32 by Triton's FLOAT16 product
(tensor cores; X's rows padded to MIN_DOT by masked loads).

Split-K: with ``split_k`` 1 a program walks the whole of K and writes the result, Alpha applied
and rounded once. With more, K's ``block_k`` tiles are dealt out in consecutive runs of
``ceil(tiles / split_k)`` (``slices``: whole tiles a slice, the last one's possibly fewer, none
empty; a scale block that straddles two slices is read by both, each weight by its own position),
a second grid axis runs the slices side by side (split_k x more programs, each reading
1 / split_k of the weights: the memory parallelism a 4096 x 4096 weight lacks with 128 or 256
programs on an H200's 132 SMs), each writes its FLOAT32 partial sums {slice, M, N}, and XLA adds
the slices, multiplies by Alpha and rounds once, in one fusion with GEMM's epilogue where the
caller adds C.

Exactness: the dequantized weights are DEQUANTIZE's FLOAT16 outputs bit for bit (``code -
zero_point`` has at most 5 bits and the scale 11, so their product is exact in FLOAT32 and a
correctly rounded FLOAT16 product rounds it once, as DEQUANTIZE's conversion does); each product
of two FLOAT16 values is exact in FLOAT32, as in GEMM; the sum of the K products is FLOAT32, in
Triton's order (a tensor core's) within a slice and XLA's across the slices, not XLA's or cuBLAS's
order of the whole: the result is within GEMM's budget of the unfused DEQUANTIZE then GEMM, not
bit for bit (docs/semantics.md#accumulating-operators: the order is the library's). Alpha
multiplies the FLOAT32 sum and the result is rounded once, as GEMM's epilogue does.
``DEQUANTIZE_GEMM`` says which calls take the kernel, ``SETTINGS`` how it is launched.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.kernel_seam import Kernel

__all__ = ["DEQUANTIZE_GEMM", "dequantize_gemm_rows", "packed_nibbles", "Settings", "SETTINGS", "FASTER_UP_TO",
           "LAYOUTS", "layout", "slices", "MAX_ROWS", "MIN_DOT", "WEIGHT_TYPES", "MIN_WEIGHTS"]

MAX_ROWS = 16
"""The most rows of X (GEMM's M, the batch of tokens) the kernel can take: one tensor-core tile of
rows. The goal was batch 1 to 16, where reading the weights dominates; from 32 rows a FLOAT16
GEMM's products start to count. Where it is taken: ``FASTER_UP_TO``."""
MIN_DOT = 16
"""Triton's smallest product tile along each dimension: X's rows are padded to it (masked loads)."""
LAYOUTS = ("{N, K}", "{K, N}")
"""The weights' two layouts: {N, K} (TransB; MatMulNBits' layout), where a byte's two elements run
along K, and {K, N}, where they run along N."""


def layout(trans_b: bool) -> str:
    """The weights' layout, one of LAYOUTS: ``"{N, K}"`` with ``trans_b``, else ``"{K, N}"``."""
    return LAYOUTS[0] if trans_b else LAYOUTS[1]


def _power_of_two(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1 and v & (v - 1) == 0


@dataclasses.dataclass(frozen=True)
class Settings:
    """How the kernel is launched. ``block_n``: output columns a program (a power of two, at least
    MIN_DOT; with the weights {K, N} at least 2 * MIN_DOT, where a program's products are
    ``block_n / 2`` byte columns wide). ``block_k``: elements of K an iteration (a power of two, at
    least 2 * MIN_DOT): ``block_n x block_k / 2`` bytes of weights each, pipelined over
    ``stages``. ``split_k``: the slices of K run side by side (at least 1; ``slices`` says how many
    a K gets: never an empty one), 1 for a program over the whole of K. ``warps``: Triton's warps a
    program (a power of two, at most 32). ``stages``: Triton's pipelining stages of the loop over K
    (at least 1)."""

    block_n: int
    block_k: int
    split_k: int = 1
    warps: int = 4
    stages: int = 3

    def __post_init__(self):
        problems = []
        for name, least in (("block_n", MIN_DOT), ("block_k", 2 * MIN_DOT)):
            v = getattr(self, name)
            if not (_power_of_two(v) and v >= least):
                problems.append(f"{name} is {v!r}; a power of two, at least {least}")
        for name, least in (("split_k", 1), ("stages", 1)):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= least):
                problems.append(f"{name} is {v!r}; an integer, at least {least}")
        if not (_power_of_two(self.warps) and self.warps <= 32):
            problems.append(f"warps is {self.warps!r}; a power of two from 1 to 32")
        if problems:
            raise ValueError("dequantize_gemm kernel Settings: " + "; ".join(problems))

    def describe(self) -> str:
        return (f"BLOCK_N {self.block_n:3d} BLOCK_K {self.block_k:3d} SPLIT_K {self.split_k:2d} {self.warps} warps "
                f"{self.stages} stages")


# The measured part: the kernel's settings and where it pays, by the weights' layout, set from
# benchmarks/quantization/quantization.py on an H200 (jax 0.11.2, K = N = 4096, one FLOAT16 scale a
# block of 32 along K, {N, K} with zero points). Group int4_gemm_blocks times the settings (SPLIT_K,
# BLOCK_N, BLOCK_K, warps, stages) beside FLOAT16 GEMM and the unfused pair, 8 weight sets in turn;
# change these two tables from its fastest rows.
SETTINGS = {
    "{N, K}": Settings(block_n=256, block_k=256, split_k=8, warps=8, stages=4),
    "{K, N}": Settings(block_n=128, block_k=64, split_k=16, warps=4, stages=3),
}
"""The kernel's settings by the weights' layout, from the group int4_gemm_blocks (279 settings at
batch 1, the fastest again at batch 1 and 16): {N, K} the fastest at batch 16 (0.947x FLOAT16
GEMM's time; 0.878x at batch 1, where the fastest took 0.849x), {K, N} the fastest at batch 16
(0.966x; within 1.02x of the fastest at batch 1). Where the kernel is forced (``force_kernels``)
or called directly, the same settings."""
FASTER_UP_TO = {"{N, K}": MAX_ROWS, "{K, N}": MAX_ROWS}
"""The most rows of X for which the kernel, at SETTINGS, measured faster than the unfused
DEQUANTIZE + GEMM (dmljax.dequantize then dmljax.gemm) that ``dmljax.dequantize_gemm`` runs
otherwise, by the weights' layout; 0: nowhere. The rule (``DEQUANTIZE_GEMM``) takes the kernel up
to there. Measured by benchmarks/quantization/quantization.py, group int4_gemm (H200, jax 0.11.2,
8 weight sets in turn, read from device memory): 0.33-0.38x the unfused pair's time at batch 1 to
16 in both layouts, and 0.86-0.96x a FLOAT16 GEMM's with FLOAT16 weights of the same shape."""
WEIGHT_TYPES = (np.dtype(jnp.int4), np.dtype(jnp.uint4))
MIN_WEIGHTS = 1 << 20
"""Weights of fewer elements stay with XLA, where launching the pair costs more than reading them
(a 1024 x 1024 INT4 weight is 0.5 MiB). Not yet measured: the benchmark's group int4_gemm."""


def slices(k: int, settings: Settings) -> tuple[int, int]:
    """(tiles a slice, slices) of a K: its ``ceil(k / block_k)`` tiles dealt out in runs of
    ``ceil(tiles / split_k)``, the last run possibly shorter, none empty (so at most ``split_k``
    slices: 16 tiles in 16, 8, 4, 2 or 1; 5 tiles and ``split_k`` 2 as 3 + 2; 8 tiles and
    ``split_k`` 16 as 8 slices of one)."""
    tiles = _cdiv(k, settings.block_k)
    per = _cdiv(tiles, settings.split_k)
    return per, _cdiv(tiles, per)


def _applies(x_shape, w_shape, x_dtype, w_dtype, scale_dtype, half: bool, trans_b: bool) -> bool:
    """Whether a DEQUANTIZE + GEMM takes the kernel: where it can run (``_runs``), with weights of
    at least MIN_WEIGHTS elements and at most ``FASTER_UP_TO[layout]`` rows of X, where the kernel
    measured faster than the unfused pair (benchmarks/quantization/quantization.py, groups
    int4_gemm and int4_gemm_blocks)."""
    return (_runs(x_shape, w_shape, x_dtype, w_dtype, scale_dtype, half, trans_b)
            and int(np.prod(w_shape)) >= MIN_WEIGHTS and x_shape[0] <= FASTER_UP_TO[layout(trans_b)])


def _runs(x_shape, w_shape, x_dtype, w_dtype, scale_dtype, half: bool, trans_b: bool) -> bool:
    """Where the kernel can run at all (``force_kernels``): X {M, K} FLOAT16 with M from 1 to
    MAX_ROWS, weights of two dimensions of INT4 or UINT4 ({K, N}, or {N, K} with ``trans_b``),
    FLOAT16 scales, without half-precision computation, fewer than 2^31 elements."""
    del trans_b  # either layout
    if half or len(x_shape) != 2 or len(w_shape) != 2:
        return False
    if np.dtype(x_dtype) != np.float16 or np.dtype(scale_dtype) != np.float16 or np.dtype(w_dtype) not in WEIGHT_TYPES:
        return False
    m, k = x_shape
    return 1 <= m <= MAX_ROWS and k >= 1 and min(w_shape) >= 1 and int(np.prod(w_shape)) < 2**31


DEQUANTIZE_GEMM = Kernel("dequantize_gemm", _applies, measured="benchmarks/quantization/quantization.py",
                         runs=_runs)


def packed_nibbles(w) -> jnp.ndarray:
    """An INT4 or UINT4 matrix {R, C} as DirectML's bytes {R, ceil(C / 2)} (uint8): two elements a
    byte along the last axis, the first in the low nibble; an odd C leaves each row's last high
    nibble 0."""
    r, c = w.shape
    if c % 2:
        w = jnp.pad(w, ((0, 0), (0, 1)))
    return lax.bitcast_convert_type(w.reshape(r, (c + 1) // 2, 2), jnp.uint8)


BIAS = 1024
"""A nibble's code is read as the FLOAT16 value ``BIAS + nibble`` (the bits ``0x6400 | nibble``: 1024
has FLOAT16's unit in the last place 1, so the ten fraction bits hold the nibble), with no
integer-to-float conversion: a conversion runs at a sixteenth of a multiply-add's rate on an SM,
and the kernel makes one or more per weight. INT4 is read with its sign bit flipped (``nibble ^
8``: -8..7 become 0..15), so its value is ``BIAS + 8 + code``."""


def _biased(b, signed: bool, high: bool):
    """A byte tile's low or (``high``) high nibbles as FLOAT16 values ``BIAS + nibble`` (INT4:
    ``BIAS + 8 + code``), exact."""
    b = b.astype(jnp.uint16)
    if signed:
        b = b ^ 0x88
    return lax.bitcast_convert_type(((b >> 4) if high else (b & 15)) | 0x6400, jnp.float16)


def _load(ref, at, mask, other, interpret: bool):
    """``ref[at]``, ``other`` where ``mask`` is False; every element where ``mask`` is None."""
    from jax.experimental.pallas import triton as pl_triton

    if mask is None:
        return pl_triton.load(ref.at[at])
    if interpret:  # the interpreter reads every index, masked or not: keep them in bounds
        at = tuple(jnp.where(mask, i, 0) for i in at)
    return pl_triton.load(ref.at[at], mask=mask, other=other)


def _per_block(ref, block, index, live, other, interpret, *, along, start, span, per, convert=None, nibbles=None):
    """The values of ``ref`` (one a block of ``block`` weights, DEQUANTIZE's blocking) for a tile of
    weights, shaped to meet it: ``convert(ref[row // block[0], column // block[1]])``. ``index``: the
    tile's weight rows and columns (broadcast index arrays; for the axis ``along`` the tile's first
    element and a pair's low nibble); the tile's axis ``along`` covers ``span`` consecutive weights
    of that axis from ``start`` (a multiple of span), ``per`` weights an element (2 where an element
    is a byte of two); ``live``: the rows', the columns' and the tile's liveness, None where every
    element is in bounds.

    A tile within one block along it reads one value a row (or column) of the other axis, which
    broadcasts; a tile of whole blocks of an even length reads a value a block and repeats it
    (broadcast and reshape); otherwise each element reads its own (Triton can neither vectorize
    those loads nor share them). ``convert`` (the identity where None) is applied to the values
    read, before they are repeated. ``nibbles``: None, or (the values' shape, signed) where ``ref``
    holds them packed as the weights are (``packed_nibbles``; ``_nibble``)."""
    convert = convert or (lambda v: v)
    shape = ref.shape if nibbles is None else nibbles[0]

    def read(at, mask):
        if nibbles is None:
            return _load(ref, at, mask, other, interpret)
        return _nibble(ref, at, mask, interpret, signed=nibbles[1])

    b = block[along]
    oi = lax.div(index[1 - along], block[1 - along])  # the other axis's blocks: {rows, 1} or {1, columns}
    olive = live[1 - along]
    if b % span == 0:
        ai = jnp.zeros_like(oi) + lax.div(start, b)
        return convert(read((oi, ai) if along == 1 else (ai, oi), olive))
    if span % b == 0 and b % per == 0:
        nb, each = span // b, b // per
        ai = lax.div(start, b) + jnp.arange(nb, dtype=jnp.int32)
        inside = None if live[2] is None else ai < shape[along]  # a whole tile's blocks are all in bounds
        if along == 1:
            mask = _mask((oi.shape[0], nb), olive, None if inside is None else inside[None, :])
            v = convert(read((oi, ai[None, :]), mask))  # {rows, nb}
            return jnp.broadcast_to(v[:, :, None], (v.shape[0], nb, each)).reshape(v.shape[0], nb * each)
        mask = _mask((nb, oi.shape[1]), None if inside is None else inside[:, None], olive)
        v = convert(read((ai[:, None], oi), mask))  # {nb, columns}
        return jnp.broadcast_to(v[:, None, :], (nb, each, v.shape[1])).reshape(nb * each, v.shape[1])
    r, c = index
    return convert(read((lax.div(r, block[0]), lax.div(c, block[1])), live[2]))


def _nibble(ref, at, mask, interpret, *, signed: bool):
    """Values at ``at`` (row and column index arrays) of a 4-bit matrix held packed in ``ref``
    (``packed_nibbles``: column c in byte c // 2, its high nibble where c is odd), as int32,
    sign-extended where ``signed``; 0 where ``mask`` is False."""
    r, c = at
    v = _load(ref, (r, c >> 1), mask, 0, interpret).astype(jnp.int32)
    v = (v >> ((c & 1) << 2)) & 15
    return v - ((v & 8) << 1) if signed else v


def _dequantized(b, high: bool, signed: bool, index, live, s_ref, z_ref, sb, zb, zshape, interpret, **tile):
    """DEQUANTIZE of a byte tile's low or (``high``) high nibbles (``_per_block``'s ``index``,
    ``live`` and ``tile``): ``(code - zero_point) * scale``, 0 where the tile is not live. Each code
    is read as the FLOAT16 value ``offset + code`` (``_biased``; ``offset`` BIAS, and 8 more for
    INT4), and the result is ``(biased - (offset + zero_point)) * scale`` in FLOAT16 arithmetic:
    the difference is an integer of at most 5 bits between two FLOAT16 values below 2,048 (exact),
    and one FLOAT16 product of it and the scale is that exact product rounded once, as DEQUANTIZE
    rounds its FLOAT32 product (exact: 5 bits by 11) to FLOAT16: DEQUANTIZE's value bit for bit. No
    conversion per weight: the zero points, packed as the weights are (``zshape``: their shape),
    are unpacked and converted as read, one a block. On the GPU the
    unpacking and both operations are PTX on four codes at once (``_nibbles_ptx``); in the
    interpreter, the same operations by XLA."""
    offset = BIAS + 8 * signed
    s = _per_block(s_ref, sb, index, live, 0.0, interpret, **tile)
    if z_ref is None:
        bias = np.float16(offset)
    else:
        bias = _per_block(z_ref, zb, index, live, 0, interpret, **tile, nibbles=(zshape, signed),
                          convert=lambda z: z.astype(jnp.float16) + np.float16(offset))
    if interpret:
        w = (_biased(b, signed, high) - bias) * s
    else:
        w = _nibbles_ptx(b, jnp.broadcast_to(bias, b.shape), jnp.broadcast_to(s, b.shape), high=high, signed=signed)
    if live[2] is None:
        return w
    return jnp.where(live[2], w, jnp.zeros_like(w))  # a padding nibble times an infinite scale is NaN: out


def _nibbles_ptx(b, bias, scale, *, high: bool, signed: bool):
    """``(BIAS + code - bias) * scale`` of a byte tile's low or high nibbles (the code's sign bit
    flipped for INT4, as ``_biased``), FLOAT16, by inline PTX on four bytes a time: ``prmt``
    spreads two bytes into the halves of a register, an ``and`` and an ``or`` with 0x6400 make them
    two FLOAT16 values ``BIAS + nibble`` (ptxas fuses the two into one ``lop3``), and ``sub.rn`` and
    ``mul.rn`` on FLOAT16 pairs finish them (``.rn``: correctly rounded, never contracted into a
    fused multiply-add; FLOAT16 subnormals are kept). About two instructions a weight, where XLA's
    and Triton's conversions took a sixteenth of the SM's rate each."""
    from jax.experimental.pallas import triton as pl_triton

    code = ["{", ".reg .b32 z, w, t0, t1;", "mov.b32 z, 0;", "mov.b32 w, $2;"]
    if signed:
        code.append("xor.b32 w, w, 0x88888888;")
    if high:
        code.append("shr.b32 w, w, 4;")
    for t, select in (("t0", "0x4140"), ("t1", "0x4342")):  # bytes 0, 1 and 2, 3 into the halves of a register
        code += [f"prmt.b32 {t}, w, z, {select};", f"and.b32 {t}, {t}, 0x000F000F;", f"or.b32 {t}, {t}, 0x64006400;"]
    code += ["sub.rn.f16x2 t0, t0, $3;", "sub.rn.f16x2 t1, t1, $4;", "mul.rn.f16x2 $0, t0, $5;",
             "mul.rn.f16x2 $1, t1, $6;", "}"]
    [w] = pl_triton.elementwise_inline_asm(
        " ".join(code), args=[b, bias, scale], constraints="=r,=r,r,r,r,r,r", pack=4,
        result_shape_dtypes=[jax.ShapeDtypeStruct(b.shape, jnp.float16)])
    return w


def _mask(shape, *parts):
    """The conjunction of ``parts`` (broadcast index masks, or None for all live) as a mask of
    ``shape``; None where every part is None."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    return jnp.broadcast_to(functools.reduce(jnp.logical_and, parts), shape)


def _finish(acc, alpha: float, dtype):
    return (acc if alpha == 1.0 else np.float32(alpha) * acc).astype(dtype)


def _over_k(step, init, *, per: int, tiles: int, sliced: bool):
    """``step`` (tile of K, accumulators) over a program's tiles of K: all ``tiles`` of them, or
    with ``sliced`` the run of ``per`` from ``program_id(1) * per``, the last run cut at ``tiles``."""
    if not sliced:
        return lax.fori_loop(0, tiles, step, init)
    first = _program_id(1) * per
    if tiles % per == 0:  # every run whole: a loop of a fixed count
        return lax.fori_loop(0, per, lambda t, acc: step(first + t, acc), init)
    return lax.fori_loop(first, jnp.minimum(first + per, tiles), step, init)


def _store(o_ref, acc, rows, cols, live, *, alpha, sliced: bool, height: int):
    """A program's {MIN_DOT, columns} sums into the output: the result (Alpha applied, rounded
    once), or with ``sliced`` the FLOAT32 partial sums at the slice's rows (``height`` rows a
    slice). ``live``: the mask, None for all."""
    from jax.experimental.pallas import triton as pl_triton

    if sliced:
        rows, value = _program_id(1) * height + rows, acc
    else:
        value = _finish(acc, alpha, o_ref.dtype)
    pl_triton.store(o_ref.at[rows[:, None], cols[None, :]], value, mask=live)


def _rows_of_x(m: int):
    """X's rows as a program reads them, padded to MIN_DOT, and their liveness (None where all of
    them are X's)."""
    xr = jnp.arange(MIN_DOT, dtype=jnp.int32)
    return xr, None if m == MIN_DOT else xr < m


def _pairs_along_k(x_ref, p_ref, s_ref, *rest, m, n, k, bn, bk, sb, zb, zshape, signed, alpha, interpret, per,
                   tiles, sliced, height, full):
    """Weights {N, K}: a byte holds K = 2j and 2j + 1 of one output column; X's even and odd columns
    are read as two tiles (strided loads of X, which is small and stays in cache). ``full``: N and
    K are whole tiles (no masks on the weights)."""
    z_ref, o_ref = rest if len(rest) == 2 else (None, rest[0])
    k2, bk2 = p_ref.shape[1], bk // 2
    rows = _program_id(0) * bn + jnp.arange(bn, dtype=jnp.int32)  # weight rows: output columns
    xr, xlive = _rows_of_x(m)
    rlive = None if full else (rows < n)[:, None]
    r2 = rows[:, None]

    def step(t, acc):
        j = t * bk2 + jnp.arange(bk2, dtype=jnp.int32)  # byte columns
        j2 = j[None, :]
        blive = None if full else rlive & (j2 < k2)
        b = _load(p_ref, (r2, j2), blive, 0, interpret)
        tile = dict(along=1, start=t * bk, span=bk, per=2)
        refs = (s_ref, z_ref, sb, zb, zshape, interpret)
        w_lo = _dequantized(b, False, signed, (r2, 2 * j2), (rlive, None, blive), *refs, **tile)
        hlive = None if full else blive & (2 * j2 + 1 < k)
        w_hi = _dequantized(b, True, signed, (r2, 2 * j2 + 1), (rlive, None, hlive), *refs, **tile)
        xrow = None if xlive is None else xlive[:, None]
        shape = (MIN_DOT, bk2)
        xe = _load(x_ref, (xr[:, None], 2 * j2), _mask(shape, xrow, None if full else 2 * j2 < k), 0.0, interpret)
        xo = _load(x_ref, (xr[:, None], 2 * j2 + 1), _mask(shape, xrow, None if full else 2 * j2 + 1 < k), 0.0,
                   interpret)
        dims = (((1,), (1,)), ((), ()))
        acc = acc + lax.dot_general(xe, w_lo, dims, preferred_element_type=jnp.float32)
        return acc + lax.dot_general(xo, w_hi, dims, preferred_element_type=jnp.float32)

    acc = _over_k(step, jnp.zeros((MIN_DOT, bn), jnp.float32), per=per, tiles=tiles, sliced=sliced)
    live = _mask((MIN_DOT, bn), None if xlive is None else xlive[:, None], None if rlive is None else rlive.T)
    _store(o_ref, acc, xr, rows, live, alpha=alpha, sliced=sliced, height=height)


def _pairs_along_n(x_ref, p_ref, s_ref, *rest, m, n, k, bn, bk, sb, zb, zshape, signed, alpha, interpret, per, tiles,
                   sliced, height, full):
    """Weights {K, N}: a byte holds output columns 2j and 2j + 1 of one K. ``full``: N and K are
    whole tiles (no masks on the weights)."""
    z_ref, o_ref = rest if len(rest) == 2 else (None, rest[0])
    bn2 = bn // 2
    j = _program_id(0) * bn2 + jnp.arange(bn2, dtype=jnp.int32)  # byte columns
    xr, xlive = _rows_of_x(m)
    j2 = j[None, :]
    jlive = None if full else j2 < p_ref.shape[1]
    lo_live, hi_live = jlive, None if full else jlive & (2 * j2 + 1 < n)

    def step(t, accs):
        kk = t * bk + jnp.arange(bk, dtype=jnp.int32)
        k2 = kk[:, None]
        blive = None if full else (k2 < k) & jlive
        b = _load(p_ref, (k2, j2), blive, 0, interpret)
        tile = dict(along=0, start=t * bk, span=bk, per=1)
        refs = (s_ref, z_ref, sb, zb, zshape, interpret)
        w_lo = _dequantized(b, False, signed, (k2, 2 * j2), (None, lo_live, blive), *refs, **tile)
        w_hi = _dequantized(b, True, signed, (k2, 2 * j2 + 1), (None, hi_live, None if full else blive & hi_live),
                            *refs, **tile)
        xmask = _mask((MIN_DOT, bk), None if xlive is None else xlive[:, None], None if full else kk[None, :] < k)
        xk = _load(x_ref, (xr[:, None], kk[None, :]), xmask, 0.0, interpret)
        return (accs[0] + jnp.dot(xk, w_lo, preferred_element_type=jnp.float32),
                accs[1] + jnp.dot(xk, w_hi, preferred_element_type=jnp.float32))

    zero = jnp.zeros((MIN_DOT, bn2), jnp.float32)
    acc_lo, acc_hi = _over_k(step, (zero, zero), per=per, tiles=tiles, sliced=sliced)
    for acc, col in ((acc_lo, 2 * j), (acc_hi, 2 * j + 1)):
        live = _mask((MIN_DOT, bn2), None if xlive is None else xlive[:, None], None if full else (col < n)[None, :])
        _store(o_ref, acc, xr, col, live, alpha=alpha, sliced=sliced, height=height)


def _program_id(axis: int):
    from jax.experimental import pallas as pl

    return pl.program_id(axis)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def dequantize_gemm_rows(x, w, scale, zero_point=None, *, trans_b: bool, alpha: float = 1.0, out_dtype=jnp.float32,
                         settings: Settings | None = None, interpret: bool = False) -> jnp.ndarray:
    """``alpha * X x dequantize(W)`` by the kernel, rounded once to ``out_dtype`` (FLOAT32: the sum
    for GEMM's epilogue to add C to; FLOAT16: GEMM's output without C). ``x`` {M, K} FLOAT16, M from
    1 to MAX_ROWS; ``w`` INT4 or UINT4, {K, N}, or {N, K} with ``trans_b``; ``scale`` FLOAT16 and
    ``zero_point`` (w's type, or None) each of w's two dimensions, each size a divisor of w's
    (DEQUANTIZE's blocking). ``settings``: other than the layout's SETTINGS, for the benchmark that
    measures them and for tests. With more than one slice of K (``slices``) the kernel writes
    FLOAT32 partial sums and XLA adds them, applies Alpha and rounds, in the caller's program.
    ``interpret=True`` runs it on any backend, for tests."""
    from jax.experimental import pallas as pl  # imported where a kernel is built: dmljax's import stays light

    m, k = x.shape
    r, c = w.shape
    n = r if trans_b else c
    settings = settings or SETTINGS[layout(trans_b)]
    bn, bk = settings.block_n, settings.block_k
    if not trans_b and bn < 2 * MIN_DOT:
        raise ValueError(f"dequantize_gemm kernel Settings: block_n is {bn} with the weights {{K, N}}; at least "
                         f"{2 * MIN_DOT} (a program's products are block_n / 2 byte columns wide)")
    per, count = slices(k, settings)
    sliced = count > 1
    sb = (r // scale.shape[0], c // scale.shape[1])
    zb = None if zero_point is None else (r // zero_point.shape[0], c // zero_point.shape[1])
    packed = packed_nibbles(w)
    operands = [x, packed, scale] + ([] if zero_point is None else [packed_nibbles(zero_point)])
    body = _pairs_along_k if trans_b else _pairs_along_n
    programs = _cdiv(n, bn)
    # the interpreter's output has whole blocks of rows and columns: its masked stores stay in bounds and apart
    height, width = (MIN_DOT, programs * bn) if interpret else (m, n)
    kernel = functools.partial(body, m=m, n=n, k=k, bn=bn, bk=bk, sb=sb, zb=zb,
                               zshape=None if zero_point is None else tuple(zero_point.shape),
                               signed=np.dtype(w.dtype) == np.dtype(jnp.int4), alpha=float(alpha),
                               interpret=interpret, per=per, tiles=_cdiv(k, bk), sliced=sliced, height=height,
                               full=n % bn == 0 and k % bk == 0)
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=settings.warps, num_stages=settings.stages)
    out = (count * height, width)
    y = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(out, jnp.float32 if sliced else out_dtype),
                       grid=(programs, count) if sliced else (programs,),
                       in_specs=[pl.BlockSpec(a.shape, lambda *_, d=a.ndim: (0,) * d) for a in operands],
                       out_specs=pl.BlockSpec(out, lambda *_: (0, 0)), compiler_params=params, interpret=interpret,
                       name="dmljax_dequantize_gemm")(*operands)
    if sliced:  # the slices' FLOAT32 sums added, Alpha applied and rounded once, by XLA
        return _finish(jnp.sum(y.reshape(count, height, width)[:, :m, :n], axis=0), alpha, out_dtype)
    return y[:m, :n] if interpret else y
