"""Pallas kernels for element-wise quantization by a per-tensor scale on NVIDIA GPUs: FLOAT16
values quantized to 8 bits, and 4-bit integers dequantized.

XLA's code for these streams is bound by conversions, not by memory: a FLOAT16 value quantized
through the FLOAT64 quotient (``linear_quantization.divide``) makes two conversions an element,
at a sixteenth of an SM's multiply-add rate, and XLA reads a 4-bit tensor a nibble at a time.
(H200, 2^26 elements, of a FLOAT32 copy's bandwidth: FLOAT16 to INT8 by XLA's pairs 93.6%, by
``quantize_half`` 100.2%; INT4 to FLOAT32 by XLA's own conversion 88.4%, by ``dequantize_nibbles``
94.0%: benchmarks/results/h200/quantization/elementwise.md.)

- ``quantize_half``: FLOAT16 values and a FLOAT16 scale to INT8 or UINT8, the FLOAT32 quotient
  correctly rounded by FLOAT32 arithmetic alone (``_quantized_ptx``), with no conversion but the
  FLOAT16 value's widening, contiguous loads and stores.
- ``dequantize_nibbles``: INT4 or UINT4 values and a FLOAT32 or FLOAT16 scale, ``(x -
  zero_point) * scale``; Pallas reads the 4-bit tensor as bytes, two values a load.

Exactness: bit for bit ``quantize_values`` and ``dequantize_values``, the XLA formulas
(tests/ops/quantization in Pallas's interpreter, tests/gpu/kernels.py compiled on a GPU).
``QUANTIZE_HALF`` and ``DEQUANTIZE_NIBBLES`` say where the kernels apply.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.kernel_seam import Kernel
from dmljax._src.numerics import F32_MAGIC, F32_MAGIC_BITS, flush_values

__all__ = ["QUANTIZE_HALF", "DEQUANTIZE_NIBBLES", "quantize_half", "dequantize_nibbles", "BLOCK", "WARPS",
           "NIBBLE_BLOCKS", "NIBBLE_WARPS"]

BLOCK = 1024
"""Elements a program of ``quantize_half`` (fewer where the tensor is smaller, MIN_BLOCK at least:
the PTX takes four values at a time). Measured by benchmarks/quantization/quantization.py, group
elementwise_blocks (H200, FLOAT16 to INT8, 2^26 elements, of a FLOAT32 copy's bandwidth): 1,024
elements and 2 warps 99.8%, 2,048 and 4 warps 99.1%, 4,096 and 8 warps 99.3%; 4,096 and 4 warps
97.7%, 16,384 and 2 warps 91.0%."""
MIN_BLOCK = 128
WARPS = 2
"""Warps a program of ``quantize_half``."""
NIBBLE_BLOCKS = (1024, 2048, 4096, 8192)
"""Elements a program of ``dequantize_nibbles``: the first that divides the element count. Pallas
reads a 4-bit block as bytes only where it is whole (no mask), so the count must be a multiple of
one of them. Measured by the group elementwise_blocks (INT4 to FLOAT32, 2^26 elements): 1,024
elements and 2 warps 94.9% of a copy's bandwidth, 2,048 to 8,192 elements at 2 to 8 warps
91.7-93.7%."""
NIBBLE_WARPS = 2
"""Warps a program of ``dequantize_nibbles``."""
NARROW = (np.dtype(np.int8), np.dtype(np.uint8))
NIBBLES = (np.dtype(jnp.int4), np.dtype(jnp.uint4))


def _quantize_applies(n: int, value_dtype, scale_dtype, out_dtype, per_tensor: bool, half: bool) -> bool:
    """Whether a quantization takes ``quantize_half``: FLOAT16 values and scale (not computed in
    half precision), one scale and zero point for the tensor, an 8-bit output, 1 to 2^31 - 1
    elements."""
    return (not half and per_tensor and np.dtype(value_dtype) == np.float16 and np.dtype(scale_dtype) == np.float16
            and np.dtype(out_dtype) in NARROW and 1 <= n < 2**31)


def _dequantize_applies(n: int, x_dtype, scale_dtype, per_tensor: bool, half: bool) -> bool:
    """Whether a dequantization takes ``dequantize_nibbles``: INT4 or UINT4 values, one FLOAT32 or
    FLOAT16 scale and zero point for the tensor (not computed in half precision), an element
    count below 2^31 that one of NIBBLE_BLOCKS divides."""
    return (not half and per_tensor and np.dtype(x_dtype) in NIBBLES
            and np.dtype(scale_dtype) in (np.dtype(np.float32), np.dtype(np.float16))
            and 0 < n < 2**31 and any(n % b == 0 for b in NIBBLE_BLOCKS))


QUANTIZE_HALF = Kernel("elementwise_quantization", _quantize_applies,
                       measured="benchmarks/quantization/quantization.py")
DEQUANTIZE_NIBBLES = Kernel("elementwise_quantization", _dequantize_applies,
                            measured="benchmarks/quantization/quantization.py")


def _params(interpret: bool, warps: int):
    if interpret:
        return None
    from jax.experimental.pallas import triton as pl_triton
    return pl_triton.CompilerParams(num_warps=warps, num_stages=1)


def _quantize_kernel(x_ref, s_ref, z_ref, o_ref, *, n: int, block: int, lo: int, hi: int, interpret: bool):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as pl_triton

    i = pl.program_id(0) * block + jax.lax.broadcasted_iota(jnp.int32, (block,), 0)
    live = None if n % block == 0 else i < n
    # the interpreter reads every index, masked or not (so they are kept in bounds), and its output
    # has whole blocks (so its masked stores stay apart)
    at = i if live is None or not interpret else jnp.where(live, i, 0)
    x = pl_triton.load(x_ref.at[at]) if live is None else pl_triton.load(x_ref.at[at], mask=live, other=0)
    # per program: the scale's reciprocal correctly rounded, and the bounds less the zero point
    s = s_ref[...].astype(jnp.float32)
    z = jnp.zeros((1,), jnp.int32) if z_ref is None else z_ref[...].astype(jnp.int32)
    inverse = 1 / s if interpret else _reciprocal_ptx(s)
    zf = z.astype(jnp.float32)
    lo_z, hi_z = np.float32(lo) - zf, np.float32(hi) - zf
    bias = z - F32_MAGIC_BITS
    scalars = [jnp.broadcast_to(v, (block,)) for v in (inverse, -s, lo_z, hi_z, bias)]
    q = (_quantized_xla if interpret else _quantized_ptx)(x, *scalars)
    pl_triton.store(o_ref.at[i], q.astype(o_ref.dtype), mask=live)


def _reciprocal_ptx(s):
    """``1 / s`` correctly rounded (PTX ``rcp.rn``; Triton's division may be approximate)."""
    from jax.experimental.pallas import triton as pl_triton

    [r] = pl_triton.elementwise_inline_asm("rcp.rn.f32 $0, $1;", args=[s], constraints="=f,f", pack=1,
                                           result_shape_dtypes=[jax.ShapeDtypeStruct(s.shape, jnp.float32)])
    return r


def _quantized_ptx(x, inverse, minus_s, lo_z, hi_z, bias):
    """``quantize_half``'s arithmetic on FLOAT16 ``x``, as PTX on four values a time, with a
    correctly rounded ``inverse`` = 1 / s, ``minus_s`` = -s, ``lo_z``/``hi_z`` = Min/Max - zero
    point (FLOAT32) and ``bias`` = zero point - F32_MAGIC_BITS (INT32), each broadcast: the 8-bit
    results (each the low byte of an INT32 k, four bytes permuted into one register). Per value:

        q = x * inverse                  (within an ULP of x / s)
        r = fma(q, -s, x)                (x - q * s, exact)
        p = fma(r, inverse, q)           (x / s correctly rounded: Markstein's theorem, the reciprocal
                                          correctly rounded and q within an ULP)
        p = q where p is NaN             (x infinite, s 0 or infinite: q is IEEE's quotient there)
        p = min(max(p, lo_z), hi_z)      (PTX max and min give the other operand for NaN: Min)
        k = bits(p + F32_MAGIC) + bias   (rounded, halves to even; the zero point added)

    Ten instructions a value (the FLOAT16 conversion included) and three byte permutations for
    four, where the FLOAT64 quotient took three conversions, each at a sixteenth of a multiply-
    add's rate."""
    from jax.experimental.pallas import triton as pl_triton

    # operands: $0 the four results' bytes; $1-$2 x (two FLOAT16 a register); then four registers each
    # for inverse, minus_s, lo_z, hi_z, bias
    def reg(operand, lane):
        return f"${3 + 4 * operand + lane}"

    code = ["{", ".reg .b16 h<4>;", ".reg .f32 x<4>, q<4>, r<4>, p<4>;", ".reg .b32 k<4>, t<2>;", ".reg .pred n<4>;",
            "mov.b32 {h0, h1}, $1;", "mov.b32 {h2, h3}, $2;"]
    for j in range(4):
        code += [f"cvt.f32.f16 x{j}, h{j};",
                 f"mul.rn.f32 q{j}, x{j}, {reg(0, j)};",
                 f"fma.rn.f32 r{j}, q{j}, {reg(1, j)}, x{j};",
                 f"fma.rn.f32 p{j}, r{j}, {reg(0, j)}, q{j};",
                 f"testp.notanumber.f32 n{j}, p{j};",
                 f"selp.f32 p{j}, q{j}, p{j}, n{j};",
                 f"max.f32 p{j}, p{j}, {reg(2, j)};",
                 f"min.f32 p{j}, p{j}, {reg(3, j)};",
                 f"add.rn.f32 p{j}, p{j}, 0f4B400000;",
                 f"mov.b32 k{j}, p{j};",
                 f"add.s32 k{j}, k{j}, {reg(4, j)};"]
    code += ["prmt.b32 t0, k0, k1, 0x0040;", "prmt.b32 t1, k2, k3, 0x0040;", "prmt.b32 $0, t0, t1, 0x5410;", "}"]
    constraints = ",".join(["=r", "r", "r"] + ["f"] * 16 + ["r"] * 4)
    [k] = pl_triton.elementwise_inline_asm(
        " ".join(code), args=[x, inverse, minus_s, lo_z, hi_z, bias], constraints=constraints, pack=4,
        result_shape_dtypes=[jax.ShapeDtypeStruct(x.shape, jnp.int8)])
    return k


def _quantized_xla(x, inverse, minus_s, lo_z, hi_z, bias):
    """``_quantized_ptx``'s arithmetic by XLA, for Pallas's interpreter, the fused multiply-adds in
    FLOAT64 rounded to FLOAT32: r's exactly (its exact value has at most 35 significant bits), p's
    with a double rounding that the GPU's does not have (so the interpreter checks the kernel's
    indexing, masks and stores, and its values against ``quantize_values``; the PTX's values are
    checked on a GPU, on every FLOAT16 value by every FLOAT16 scale)."""
    f64 = np.float64
    x = x.astype(jnp.float32)
    with jax.enable_x64(True):
        q = x * inverse
        r = (x.astype(f64) + q.astype(f64) * minus_s.astype(f64)).astype(jnp.float32)
        p = (q.astype(f64) + r.astype(f64) * inverse.astype(f64)).astype(jnp.float32)
    p = jnp.where(jnp.isnan(p), q, p)
    p = jnp.where(p > lo_z, p, lo_z)  # NaN gives lo_z, as PTX's max
    p = jnp.where(p < hi_z, p, hi_z)
    return jax.lax.bitcast_convert_type(p + F32_MAGIC, jnp.int32) + bias


def quantize_half(value, scale, zero_point, out_dtype, *, interpret: bool = False) -> jnp.ndarray:
    """``clamp(round(value / scale) + zero_point, Min, Max)`` of a FLOAT16 ``value`` (any shape) by
    a FLOAT16 ``scale`` of one element and an INT8/UINT8 ``zero_point`` of one element (or None),
    as ``out_dtype`` (INT8 or UINT8): ``quantize_values``' bits. ``interpret=True`` runs it on any
    backend."""
    from jax.experimental import pallas as pl

    value = jax.lax.stop_gradient(value)
    n = int(np.prod(value.shape, dtype=np.int64))
    block = min(BLOCK, max(MIN_BLOCK, 1 << max(n - 1, 0).bit_length()))
    lo, hi = (int(v) for v in (jnp.iinfo(out_dtype).min, jnp.iinfo(out_dtype).max))
    operands = [value.reshape(n), jax.lax.stop_gradient(scale).reshape(1)]
    if zero_point is not None:
        operands.append(zero_point.reshape(1))

    def kernel(x_ref, s_ref, *rest):
        z_ref, o_ref = rest if len(rest) == 2 else (None, rest[0])
        _quantize_kernel(x_ref, s_ref, z_ref, o_ref, n=n, block=block, lo=lo, hi=hi, interpret=interpret)

    programs = pl.cdiv(n, block)
    m = programs * block if interpret else n
    one = pl.BlockSpec((1,), lambda i: (0,))
    y = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m,), out_dtype), grid=(programs,),
                       in_specs=[pl.BlockSpec((n,), lambda i: (0,))] + [one] * (len(operands) - 1),
                       out_specs=pl.BlockSpec((m,), lambda i: (0,)), compiler_params=_params(interpret, WARPS),
                       interpret=interpret, name="dmljax_quantize_half")(*operands)
    return y[:n].reshape(value.shape)


def _dequantize_kernel(x_ref, s_ref, z_ref, o_ref):
    x = x_ref[...].astype(jnp.int32)
    if z_ref is not None:
        x = x - z_ref[...].astype(jnp.int32)
    s = s_ref[...]
    s = flush_values(s) if s.dtype == jnp.float32 else s.astype(jnp.float32)
    y = x.astype(jnp.float32) * s  # an exact difference, one rounding
    o_ref[...] = y.astype(o_ref.dtype)


def dequantize_nibbles(x, scale, zero_point, *, interpret: bool = False) -> jnp.ndarray:
    """``(x - zero_point) * scale`` of an INT4 or UINT4 ``x`` (any shape, an element count that
    one of NIBBLE_BLOCKS divides) by a FLOAT32 or FLOAT16 ``scale`` of one element (a FLOAT32
    denormal read as 0) and a ``zero_point`` of x's type and one element (or None),
    in the scale's type: ``dequantize_values``' bits. ``interpret=True`` runs it on any
    backend."""
    from jax.experimental import pallas as pl

    n = int(np.prod(x.shape, dtype=np.int64))
    block = next(b for b in NIBBLE_BLOCKS if n % b == 0)
    operands = [x.reshape(n), scale.reshape(1)]
    if zero_point is not None:
        operands.append(zero_point.reshape(1).astype(jnp.int8))

    def kernel(x_ref, s_ref, *rest):
        z_ref, o_ref = rest if len(rest) == 2 else (None, rest[0])
        _dequantize_kernel(x_ref, s_ref, z_ref, o_ref)

    blocks = pl.BlockSpec((block,), lambda i: (i,))
    one = pl.BlockSpec((1,), lambda i: (0,))
    y = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((n,), scale.dtype), grid=(n // block,),
                       in_specs=[blocks] + [one] * (len(operands) - 1), out_specs=blocks,
                       compiler_params=_params(interpret, NIBBLE_WARPS), interpret=interpret,
                       name="dmljax_dequantize_nibbles")(*operands)
    return y.reshape(x.shape)
