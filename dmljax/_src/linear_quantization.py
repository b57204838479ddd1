"""Linear quantization's arithmetic, one definition for every quantized operator.

DirectML's quantized operators (ELEMENT_WISE_QUANTIZE_LINEAR, QUANTIZE, the QUANTIZED_LINEAR_*
operators' requantization, DYNAMIC_QUANTIZE_LINEAR) all end in the page's

    clamp(round(value / scale) + zero_point, Min, Max)

and all dequantize as ``(input - zero_point) * scale``. Where the pages leave the details open,
dmljax follows ONNX's QuantizeLinear and DequantizeLinear (which ONNX Runtime's DirectML provider
maps onto these operators), and dmljax's own rules for NaN and denormals:

- ``value / scale`` is divided in FLOAT32 (FLOAT16 widened exactly, unless half-precision
  computation is allowed), rounded once, FLOAT32 denormals flushed on the way in;
- ``round`` rounds halves to even (ONNX: "rounding to nearest ties to even");
- the zero point is added to the rounded value, then the sum is saturated to the output type's
  range. The clamp follows IEEE minNum/maxNum, as every dmljax min and max does, so a NaN value
  (0 / 0, a NaN input or scale) becomes ``Min``; +-inf (a scale of 0) becomes ``Max``/``Min``;
- ``input - zero_point`` is exact (a 32-bit difference can need 33 bits) and rounded once to
  FLOAT32;
- a sum of products of differences (an integer convolution's or matrix product's) is accumulated
  in INT32, as the pages' INT32 outputs and accumulators are; ``accumulation_violations`` refuses,
  at trace time, a reduction long enough for the worst case of the types to pass INT32's range.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import DataType
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.elementwise_quantization import (DEQUANTIZE_NIBBLES, QUANTIZE_HALF, dequantize_nibbles,
                                                          quantize_half)
from dmljax._src.numerics import (F32_MAGIC, F32_MAGIC_BITS, F32_TINY, compute_dtype, copy_sign, is_flushed, load,
                                  mark_flushed, max_num, store)

__all__ = ["integer_range", "quantize_values", "unsaturated_values", "divide", "rounded_quotient", "ROUNDED_REACH",
           "paired_quantized",
           "exact_difference", "dequantize_values", "scale_violations",
           "INT32_MAX", "difference_reach", "accumulation_violations", "per_channel_violations"]

INT32_MAX = 2**31 - 1

ROUNDED_REACH = 2047
"""``rounded_quotient`` is exact wherever the rounded quotient is within +-ROUNDED_REACH; the
saturation bounds of every type it serves (the 8- and 4-bit ones, zero point included) lie well
inside."""


def integer_range(data_type: DataType) -> tuple[int, int]:
    """``(Min, Max)`` of an integer type, the 4-bit ones included (INT4: -8..7, UINT4: 0..15)."""
    info = jnp.iinfo(data_type.dtype)
    return int(info.min), int(info.max)


def quantize_values(value, scale, zero_point, data_type: DataType, *, allow_half: bool = False):
    """``clamp(round(value / scale) + zero_point, Min, Max)`` as ``data_type`` (INT8, UINT8, INT4,
    UINT4, or a wider integer type).

    ``value`` is a float tensor or an INT32 one (rounded once to FLOAT32 first, as ONNX's
    QuantizeLinear reads an INT32 input); ``scale`` a float tensor; ``zero_point`` an integer
    tensor or None (0). All three already have the output's shape or broadcast to it."""
    exact = _reach(data_type, zero_point) > ROUNDED_REACH
    half = np.dtype(value.dtype) == np.float16 and np.dtype(scale.dtype) == np.float16
    # CUDA: a kernel or values in pairs, traced only where a GPU is the backend (the same values
    # either way; on a CPU machine tracing them would only cost every quantization's trace twice)
    if jax.default_backend() == "gpu" and not allow_half and not exact and _narrow(data_type) and (
            half or np.dtype(value.dtype) == np.float32 and data_type.bits == 4):
        def xla(v, s, *z):
            return _quantized(v, s, z[0] if z else None, data_type, allow_half, exact)

        one = _per_tensor(scale, zero_point)
        route = choose(QUANTIZE_HALF, facts=(int(np.prod(value.shape, dtype=np.int64)), value.dtype, scale.dtype,
                                             data_type.dtype, one is not None, allow_half))
        if route.kernel is not None:
            return route.run(xla, lambda v, s, *z: quantize_half(v, s, z[0] if z else None, data_type.dtype),
                             value, *one, lead=value.ndim, whole=tuple(range(1, 1 + len(one))))
        return lax.platform_dependent(
            value, scale, *([] if zero_point is None else [zero_point]),
            cuda=lambda v, s, *z: paired_quantized(v, s, z[0] if z else None, data_type), default=xla)
    return _quantized(value, scale, zero_point, data_type, allow_half, exact)


def _per_tensor(scale, zero_point) -> list | None:
    """``[scale]`` or ``[scale, zero_point]`` each as one element (``_one_value``) where both hold
    one value for the whole tensor (a kernel's operands); None otherwise."""
    one = [_one_value(t) for t in (scale, zero_point) if t is not None]
    return None if any(t is None for t in one) else one


def _one_value(t):
    """A scale or zero point that holds one value for the whole tensor, as an array of one element:
    one of one element, or a known one (not traced) whose elements are all equal (a per-tensor
    value broadcast to the input's shape); None otherwise, and for None."""
    if t is None:
        return None
    if int(np.prod(t.shape, dtype=np.int64)) == 1:
        return jnp.reshape(t, (1,))
    if isinstance(t, jax.core.Tracer):
        return None
    v = np.asarray(t).reshape(-1)
    raw = v.view(np.uint8).reshape(v.size, -1)
    if not np.all(raw == raw[:1]):  # the same bits everywhere (NaN and the zeros' signs included)
        return None
    return jnp.asarray(v[:1])


def _reach(data_type: DataType, zero_point) -> int:
    """The largest |round(value / scale)| whose saturation can still tell: the output type's
    largest magnitude plus the zero point type's."""
    lo, hi = integer_range(data_type)
    reach = max(abs(lo), abs(hi))
    if zero_point is not None:
        zlo, zhi = integer_range(DataType.from_dtype(np.dtype(zero_point.dtype)))
        reach += max(abs(zlo), abs(zhi))
    return reach


def _quantized(value, scale, zero_point, data_type: DataType, allow_half: bool, exact: bool):
    """``quantize_values``'s formula as every platform but CUDA's pairs takes it (``exact``:
    ``unsaturated_values``'s)."""
    r = unsaturated_values(value, scale, zero_point, allow_half=allow_half, exact=exact, signed_zeros=False)
    lo, hi = (np.asarray(v, r.dtype) for v in integer_range(data_type))

    def on_cpu(r):  # a comparison with NaN is false: NaN gives Min
        r = jnp.where(r >= lo, r, lo)
        return jnp.where(r <= hi, r, hi).astype(data_type.dtype)

    def elsewhere(r):
        r = _saturated(r, lo, hi)
        return (_low_bits(r) if _narrow(data_type) and r.dtype == np.float32 else r).astype(data_type.dtype)

    return lax.platform_dependent(r, cpu=on_cpu, default=elsewhere)


def _saturated(r, lo, hi):
    """``r`` clamped to [lo, hi] off the CPU, NaN to ``lo``: NaN is tested before XLA's maximum
    (``max_num``: a GPU may merge chains of float compares and selects into a clamp that keeps
    NaN), and none is left for the minimum."""
    return lax.min(max_num(r, lo), hi)


def _narrow(data_type: DataType) -> bool:
    """An integer type of 8 bits or fewer (INT8, UINT8, INT4, UINT4)."""
    return data_type.bits <= 8 and jnp.issubdtype(data_type.dtype, jnp.integer)


def _low_bits(r):
    """A saturated FLOAT32 integer r of at most 8 bits as UINT32 bits whose low 8 (or 4) are r in
    two's complement: ``r + 1.5 * 2^23`` read as an integer, which a narrowing conversion (a
    truncation) turns into the value. On a GPU this is two operations where XLA's conversion of a
    FLOAT32 to an 8-bit integer re-checks the range it was clamped to (FLOAT32 to INT8 at 2^26
    elements on an H200: 94.2% of a copy's bandwidth, against 90.3% by the conversion)."""
    return lax.bitcast_convert_type(r + F32_MAGIC, np.uint32)


def paired_quantized(value, scale, zero_point, data_type: DataType) -> jnp.ndarray:
    """``quantize_values`` to an 8- or 4-bit ``data_type``, without half-precision computation, as
    CUDA takes it for a FLOAT16 ``value`` (and scale), and a FLOAT32 one to 4 bits. Where
    ``value``'s last axis has an even length, its elements are taken in pairs (FLOAT16 ones read as
    32-bit words), each quantized as ``quantize_values`` does (``unsaturated_values``, the
    saturation, the conversion through the bits: ``_low_bits``), and the two results written as one
    16-bit (or 8-bit) word. XLA's GPU code reads FLOAT16 elements one at a time where the result
    has narrower elements, and writes 4-bit results a nibble at a time. On an H200 at 2^26 elements
    (of a FLOAT32 copy's bandwidth): a plain FLOAT16 to INT8 conversion 59%, by pairs 97%; the
    quantization from FLOAT16 to 8 bits 59% before, 93.6% by pairs, to INT4 49% and 91.6% (FLOAT16
    values rounded by ``_low_bits``'s addition, not by a rounding of their own, and saturated
    before it where there is no zero point: 80.5% and 70.1% with a rounding of their own); from
    FLOAT32 to INT4 88% and 103% (a copy's 8 bytes an element against these 4.5). One scale for
    the tensor to 8 bits takes the kernel ``quantize_half`` instead (100%). The same values as
    ``quantize_values``, bit for bit."""
    lo, hi = integer_range(data_type)

    def bits(v, s, z):
        if np.dtype(v.dtype) == np.float16 and np.dtype(s.dtype) == np.float16:
            # FLOAT16: the quotient rounded by _low_bits's addition, halves to even (no rounding of
            # its own, which runs at a conversion's rate on a GPU). Without a zero point it is
            # saturated first (clamping to integer bounds and rounding commute); with one, clamped
            # to +-4096 (NaN to -4096), rounded, the zero point added and the sum saturated as
            # integers (every bound lies within +-4096, so the clamp changes no result)
            q = divide(v.astype(np.float32), s.astype(np.float32))
            if z is None:
                return _low_bits(_saturated(q, np.float32(lo), np.float32(hi)))
            q = _saturated(q, np.float32(-4096), np.float32(4096))
            k = lax.bitcast_convert_type(_low_bits(q), np.int32) - F32_MAGIC_BITS
            return jnp.clip(k + z.astype(np.int32), lo, hi)
        return _low_bits(_saturated(unsaturated_values(v, s, z, signed_zeros=False), np.float32(lo), np.float32(hi)))

    n = value.shape[-1] if value.ndim else 1
    if n % 2 or any(t is not None and t.ndim and t.shape[-1] not in (1, n) for t in (scale, zero_point)):
        return bits(value, scale, zero_point).astype(data_type.dtype)
    pairs = value.reshape(*value.shape[:-1], n // 2, 2)
    if np.dtype(value.dtype) == np.float16:
        words = lax.bitcast_convert_type(pairs, np.uint32)
        low = lax.bitcast_convert_type((words & 0xFFFF).astype(np.uint16), np.float16)  # the even elements
        high = lax.bitcast_convert_type((words >> 16).astype(np.uint16), np.float16)  # the odd ones
    else:
        low, high = pairs[..., 0], pairs[..., 1]

    def half(t, i):
        return t if t is None or not t.ndim or t.shape[-1] == 1 else t[..., i::2]
    a, b = bits(low, half(scale, 0), half(zero_point, 0)), bits(high, half(scale, 1), half(zero_point, 1))
    if data_type.bits == 4:
        pair = ((a & 15) | ((b & 15) << 4)).astype(np.uint8)
    else:
        pair = ((a & 255) | ((b & 255) << 8)).astype(np.uint16)
    return lax.bitcast_convert_type(pair, data_type.dtype).reshape(value.shape)


def unsaturated_values(value, scale, zero_point, *, allow_half: bool = False, exact: bool = False,
                       signed_zeros: bool = True):
    """``round(value / scale) + zero_point`` before the saturation, in the compute type (FLOAT32,
    or FLOAT16 with half-precision computation): what ``quantize_values`` clamps, for a caller
    that needs to know where the clamp acts (a straight-through gradient's mask).

    In FLOAT32 the rounded quotient is ``rounded_quotient``'s on a GPU or TPU (FLOAT32 arithmetic
    alone): the value a correctly rounded quotient rounds to wherever that is within
    +-ROUNDED_REACH (2047), and beyond, a value of the same sign beyond it, which every saturation
    of a type of up to 8 bits (zero point included) clamps alike. On the CPU and on CUDA GPUs,
    where FLOAT64 costs less than the FLOAT32 path's extra operations (benchmarks/quantization),
    it is ``round(divide(value, scale))``, the same value; the FLOAT32 path serves backends
    without fast FLOAT64 (TPUs). ``exact=True`` takes that everywhere, for a
    wider type. ``signed_zeros=False`` lets a rounded quotient of -0 come out +0 where the FLOAT32
    path is taken, for a caller that converts it to an integer anyway."""
    if not jnp.issubdtype(value.dtype, jnp.floating):
        value = value.astype(np.float32)
    ct = compute_dtype(DataType.from_dtype(scale.dtype), allow_half)
    if value.dtype == np.float32 or scale.dtype == np.float32:
        ct = np.dtype(np.float32)
    b = load(scale, allow_half).astype(ct)
    flushed = is_flushed(value)

    def wide(a, b):
        return jnp.round(divide(load(a, allow_half, flush=not flushed).astype(ct), b))  # halves to even

    if isinstance(scale, (np.ndarray, np.generic)) and np.all(np.asarray(scale) == 1):
        # a scale known to be 1 (the fused requantizations' second step): value / 1 is value, exactly
        r = jnp.round(load(value, allow_half, flush=not flushed).astype(ct))
    elif ct == np.float32 and not exact:
        # FLOAT64 where it is fast: on an H200 the FLOAT64 path streams at 93% of a copy's
        # bandwidth, the FLOAT32 one at 74% (benchmarks/results/h200/quantization/elementwise.md)
        r = lax.platform_dependent(value.astype(ct), b, cpu=wide, cuda=wide,
                                   default=lambda a, b: rounded_quotient(a, b, signed_zeros))  # flushes a itself
    else:
        r = wide(value, b)
    if zero_point is not None:
        r = r + zero_point.astype(ct)  # exact: |zero point| <= 2^8 for the types that reach here
    return r


@jax.custom_jvp
def divide(a, b) -> jnp.ndarray:
    """``a / b`` (broadcast together), correctly rounded: the quotient a division that rounds once
    gives, on every backend.

    XLA's own FLOAT32 quotient is not that everywhere: its algebraic simplifier rewrites a division
    by a constant or by a broadcast scalar (a per-tensor scale) into a product with the reciprocal,
    two roundings (measured on the CPU: 7% of FLOAT32 quotients by a broadcast scalar off in the
    last bit, -127.49999 becoming -127.5, which rounds to another integer), and its GPU division is
    an approximation (measured on an H200: 28% of FLOAT32 quotients off by an ULP or two). So the
    quotient is taken in FLOAT64, as a times the FLOAT64 reciprocal of b, and rounded to FLOAT32,
    which gives the correctly rounded FLOAT32 quotient: a / b of two FLOAT32 numbers is never a
    FLOAT32 midpoint (a midpoint times b would need more than 24 significant bits) and lies at least
    2^-49 (relative) from every one, while the product with the rounded reciprocal is within 2^-52
    of a / b; so both round to the same FLOAT32 number, overflow and FLOAT32 denormals included.
    (A FLOAT64 division would not do: LLVM narrows a FLOAT64 division of widened FLOAT32 operands
    rounded back to FLOAT32 into a FLOAT32 division, the GPU's approximate one.) The reciprocal of
    a per-tensor or per-axis scale is taken once, before the broadcast. FLOAT64 is used inside the
    computation alone, whatever ``jax_enable_x64`` says (measured on an H200 at 2^26 elements: the
    quotient by a broadcast scalar at the time of a copy, by a full tensor at 1.05x a plain FLOAT32
    division's). On the CPU the quotient is a FLOAT64 division of the widened operands instead,
    rounded to FLOAT32: where LLVM narrows it, a FLOAT32 division, which the CPU rounds correctly;
    where XLA turns it into a product with the FLOAT64 reciprocal (a division by a broadcast scalar),
    the product above; either way the correctly rounded quotient, and per element at a plain
    division's cost, where the reciprocal's FLOAT64 division and the product took 1.3-1.4x
    ELEMENT_WISE_QUANTIZE_LINEAR's twin (benchmarks/results/cpu/twins). Each operand is widened
    before it is broadcast: an imported model's call (onnx/prepare.py) then prepares a per-tensor
    divisor as one FLOAT64 number, not as a FLOAT64 array of the activations' shape (the two-layer
    encoder's QDQ form: 0.86x the call's time, paired). A FLOAT16 quotient is the FLOAT32 one
    rounded to FLOAT16 (FLOAT32 has more than 2 * 11 + 2 bits: the double rounding is exact)."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    if a.dtype == np.float16:
        return divide(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    if a.dtype != np.float32:
        return a / b
    shape = jnp.broadcast_shapes(a.shape, b.shape)

    def by_reciprocal(a, b):
        with jax.enable_x64(True):
            reciprocal = 1.0 / lax.convert_element_type(b, np.float64)
            q = lax.convert_element_type(jnp.broadcast_to(a, shape), np.float64) * jnp.broadcast_to(reciprocal, shape)
        return lax.convert_element_type(q, np.float32)

    def divided(a, b):
        with jax.enable_x64(True):
            q = (jnp.broadcast_to(lax.convert_element_type(a, np.float64), shape)
                 / jnp.broadcast_to(lax.convert_element_type(b, np.float64), shape))
        return lax.convert_element_type(q, np.float32)

    return lax.platform_dependent(a, b, cpu=divided, default=by_reciprocal)


@divide.defjvp
def _divide_jvp(primals, tangents):
    a, b = primals
    da, db = tangents
    q = divide(a, b)
    return q, (da - q * db) / b


_EXPONENT = 0x7F800000  # a FLOAT32's exponent bits: x's bits masked so are the power of 2 at or below |x|
_HIGH_HALF = np.int32(-4096)  # 0xFFFFF000: the sign, the exponent and the top 11 of 23 fraction bits


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def rounded_quotient(a, b, signed_zeros: bool = True) -> jnp.ndarray:
    """``round(a / b)`` of two FLOAT32 tensors (broadcast together), halves to even, the quotient
    correctly rounded to FLOAT32 first: the same value as ``jnp.round(divide(a, b))`` wherever that
    is within +-ROUNDED_REACH (2047), signed zeros included; beyond, both are beyond +-2048 with
    the same sign (or both NaN). In FLOAT32 alone: ``divide``'s FLOAT64 conversions are slow on a
    GPU (not on the CPU, where ``unsaturated_values`` keeps them), and only the integer must be
    exact here, not the quotient.

    The scale b = +-m * 2^-E with m in [1, 4) (E = 0 and m = |b| where b is 0, infinite or NaN; a
    per-tensor or per-axis scale's few values are worked on before the broadcast), a1 = a * +-2^E
    (exact unless it leaves FLOAT32's normal range, where |a / b| is below 2^-126 or above 2^126),
    so x = a / b = a1 / m. Then q = a1 * (1 / m), x within a relative 2^-20 (a GPU's approximate
    reciprocal included), k = floor(q) and h = k + 1/2. Where |x| < 2049, x lies within 2^-8 of q
    and so in (k - 1/2, k + 3/2): the FLOAT32 quotient fl(x) rounds to k or to k + 1, and to k + 1
    exactly when x > h + s * u / 2, u being FLOAT32's spacing at h and s = +1 when round(h) is k,
    -1 when it is k + 1 (fl(x) is h itself for x within u / 2 of h: x is never a FLOAT32 midpoint,
    a / b of two FLOAT32 numbers needing more than 25 significant bits there). Multiplied by m,
    that is e > t with e = a1 - h * m and t = s * m * u / 2 = (h - round(h)) * 2^floor(log2 |h|) *
    (m * 2^-23), a product of powers of 2 and m, exact. For |h| < 2048, 2h is an odd integer of at
    most 12 bits, and m splits into mh (its top 12 significant bits) and ml = m - mh (at most 12
    more), so h * mh and h * ml are exact; e = (a1 - h * mh) - h * ml. Where |x - h| <= u, e is
    exact: h * mh is within a factor 2 of a1, so the first difference is exact (Sterbenz), and e
    itself, a multiple of 2^-25 below 2^-11 in size, is a FLOAT32 number, which the second
    difference gives unrounded. Elsewhere |e - t| > |e| / 2 exceeds the two differences' rounding
    errors (below 2^-23 (|e| + |h| * m * 2^-11) with |e| > |h| * m * 2^-24), so e > t is decided
    right. So k + (e > t) is the exact result whenever |k + 1/2| < 2048; otherwise it is k or
    k + 1, beyond +-2048 with x's sign, as the exact result is (|x - q| < 2^-8 there too); NaN and
    +-inf go through floor and the sum as they are. At |h| = 1/2 (the only half that is a power of
    2) u is the spacing above 1/2, and s picks that side: 1/2 rounds to 0 from both.

    XLA folds a chain of products by constants into one, and a folded intermediate that is a
    FLOAT32 denormal becomes 0 (a constant scale's a * 2^E * (1 / m) would become a * (1 / b), 0
    for a scale above 2^126): so a1 is a selection (the flush of a's FLOAT32 denormals to zeros: a
    is flushed here, b by the caller), and m * 2^-23 is taken on the bits. ``signed_zeros=False``
    lets -0 come out +0 (k + 1 for k = -1), for a caller that converts to an integer."""
    a, b = jnp.asarray(a, np.float32), jnp.asarray(b, np.float32)
    i32 = np.int32
    # per scale value, before its broadcast
    magnitude = jnp.abs(b)
    field = lax.shift_right_logical(lax.bitcast_convert_type(magnitude, i32), i32(23))
    finite = (field >= 1) & (field <= 254)  # normal (a flushed denormal is 0)
    power = lax.bitcast_convert_type(lax.shift_left(jnp.clip(254 - field, 1, 253), i32(23)), np.float32)
    power = jnp.where(finite, power, np.float32(1))  # 2^E = 2^(127 - field), kept within 2^-126 to 2^126
    m = magnitude * power
    inverse = np.float32(1) / m
    signed_power = copy_sign(power, b)
    signed_zero = signed_power * np.float32(0)  # the zero of b's sign (NaN for NaN)
    m_high = lax.bitcast_convert_type(lax.bitcast_convert_type(m, i32) & _HIGH_HALF, np.float32)
    m_low = m - m_high
    spacing = lax.bitcast_convert_type(lax.bitcast_convert_type(m, i32) - i32(23 << 23), np.float32)  # m * 2^-23
    # per element
    shape = jnp.broadcast_shapes(a.shape, b.shape)
    a = jnp.broadcast_to(a, shape)
    a1 = jnp.where(jnp.abs(a) < F32_TINY, a * signed_zero, a * signed_power)  # a's denormals flushed
    q = a1 * inverse
    k = jnp.floor(q)
    h = k + np.float32(0.5)
    e = (a1 - h * m_high) - h * m_low
    floor_power = lax.bitcast_convert_type(lax.bitcast_convert_type(h, i32) & i32(_EXPONENT), np.float32)
    t = (h - jnp.round(h)) * floor_power * spacing
    r = jnp.where(e > t, k + np.float32(1), k)
    return copy_sign(r, q) if signed_zeros else r


@rounded_quotient.defjvp
def _rounded_quotient_jvp(signed_zeros, primals, tangents):
    r = rounded_quotient(*primals, signed_zeros)
    return r, jnp.zeros_like(r)  # a step function: 0 wherever it has a derivative


def dequantize_values(x, scale, zero_point, *, allow_half: bool = False):
    """``(x - zero_point) * scale`` stored in the scale's type: the difference exact and rounded
    once to FLOAT32 (``exact_difference``), the product computed in the compute type and rounded
    once, FLOAT32 denormals flushed. No gradient flows through the integers."""
    dt = DataType.from_dtype(scale.dtype)

    def xla(x, scale, *z):
        d = exact_difference(x, z[0] if z else None)
        return store(d.astype(compute_dtype(dt, allow_half)) * load(scale, allow_half), dt)

    out = None
    if jax.default_backend() == "gpu" and np.dtype(x.dtype) in (np.dtype(jnp.int4), np.dtype(jnp.uint4)):
        # CUDA: 4-bit values by a kernel (XLA reads them a nibble at a time), traced only where a GPU is
        # the backend, as quantize_values' pairs
        one = _per_tensor(scale, zero_point)
        route = choose(DEQUANTIZE_NIBBLES, facts=(int(np.prod(x.shape, dtype=np.int64)), x.dtype, scale.dtype,
                                                  one is not None, allow_half))
        if route.kernel is not None:
            out = _dequantized_nibbles(route, xla, x, scale, *one)
    if out is None:
        out = xla(x, scale, *([] if zero_point is None else [zero_point]))
    if dt is DataType.FLOAT32:
        mark_flushed(out)
    return out


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _dequantized_nibbles(route, xla, x, scale, one_scale, *zero_point):
    """The kernel's dequantization of 4-bit ``x`` by ``one_scale`` (``scale`` as one element), with
    the XLA formula's derivative with respect to the scale."""
    return route.run(xla, lambda x, s, *z: dequantize_nibbles(x, s, z[0] if z else None),
                     x, one_scale, *zero_point, lead=x.ndim, whole=tuple(range(1, 2 + len(zero_point))))


@_dequantized_nibbles.defjvp
def _dequantized_nibbles_jvp(route, xla, primals, tangents):
    x, scale, one_scale, *zero_point = primals
    out = _dequantized_nibbles(route, xla, x, scale, one_scale, *zero_point)
    # the formula d * scale differentiated (one_scale is scale's value, its tangent scale's too)
    d = exact_difference(x, zero_point[0] if zero_point else None)
    return out, (d * tangents[1].astype(np.float32)).astype(out.dtype)


def exact_difference(x, zero_point) -> jnp.ndarray:
    """``x - zero_point`` of two integer tensors of one type, exactly, rounded once to FLOAT32: in
    int32 for types of up to 16 bits; for 32-bit types as (high halves' difference) * 2^16 + (low
    halves' difference), two terms that FLOAT32 holds exactly, added with one rounding."""
    if zero_point is None:
        zero_point = jnp.zeros_like(x)
    if x.dtype.itemsize <= 2:
        return (x.astype(np.int32) - zero_point.astype(np.int32)).astype(np.float32)
    shift = np.asarray(16, x.dtype)
    mask = np.asarray(0xFFFF, x.dtype)
    high = lax.shift_right_arithmetic if x.dtype == np.int32 else lax.shift_right_logical
    dh = high(x, shift).astype(np.int32) - high(zero_point, shift).astype(np.int32)
    dl = (x & mask).astype(np.int32) - (zero_point & mask).astype(np.int32)
    return dh.astype(np.float32) * np.float32(65536) + dl.astype(np.float32)


def scale_violations(scale, subject: str, argument: str) -> list[Violation]:
    """Why a scale whose values can be read now (a NumPy array; None when it is traced) cannot
    quantize: an element that is 0, NaN or infinite, or a FLOAT32 denormal (math reads it as 0).
    Returns [] for a usable or traced scale. Traced scales are not checked: their results are the
    arithmetic's (``quantize_values``: +-inf to Max/Min, NaN to Min)."""
    if scale is None:
        return []
    s = np.asarray(scale)
    if not np.issubdtype(s.dtype, np.floating):
        return []
    with np.errstate(invalid="ignore"):
        zero = np.abs(s.astype(np.float64)) < (np.finfo(np.float32).tiny if s.dtype == np.float32 else 0)
        zero |= s == 0
        bad = zero | ~np.isfinite(s)
    if not bad.any():
        return []
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    value = s[first] if s.ndim else s[()]
    kinds = [word for word, mask in (("0", zero), ("NaN", np.isnan(s)), ("infinite", np.isinf(s))) if mask.any()]
    where = f" at {list(first)}" if s.ndim else ""
    denormal = " (a FLOAT32 denormal, which math reads as 0)" if value != 0 and zero[first] else ""
    return [Violation(subject, argument,
                      f"holds {int(bad.sum())} element{'s' if bad.sum() != 1 else ''} that {'is' if bad.sum() == 1 else 'are'} "
                      f"{' or '.join(kinds)}, the first {float(value)!r}{where}{denormal}",
                      "a scale is finite and not 0 (DirectML leaves such a quantization undefined)",
                      "give every element a finite, nonzero scale (a traced one is not checked: the "
                      "operator's notes say what it then gives)")]


def difference_reach(data_type: DataType, zero_point: bool) -> int:
    """The largest ``|x - zero_point|`` of an integer type: Max - Min with a zero point (UINT8's 255
    for 255 - 0, INT8's 255 for 127 - (-128)), the largest ``|x|`` without one (INT8's 128)."""
    lo, hi = integer_range(data_type)
    return hi - lo if zero_point else max(-lo, hi)


def accumulation_violations(terms: int, reach_a: int, reach_b: int, subject: str, arg: str,
                            what: str, tip: str = "split the channels into groups of convolutions whose results you "
                                                  "add in a wider type") -> list[Violation]:
    """A sum of ``terms`` products of differences of at most ``reach_a`` and ``reach_b`` in size
    may pass INT32's range (``terms * reach_a * reach_b > 2^31 - 1``): refused, naming the bound,
    since an INT32 accumulator would wrap silently. ``what`` says what the terms are, ``tip`` how
    to split the sum (a convolution's channels by default)."""
    if terms * reach_a * reach_b <= INT32_MAX:
        return []
    most = INT32_MAX // (reach_a * reach_b)
    return [Violation(subject, arg, f"makes each output a sum of {terms} products ({what}) of up to "
                      f"{reach_a} x {reach_b}",
                      f"at most {most} products, so that {most} x {reach_a} x {reach_b} <= 2^31 - 1: the INT32 "
                      "accumulator cannot pass its range",
                      tip)]


def per_channel_violations(shape, name: str, arg: str, channels: int | None, what: str = "output channel",
                           ) -> list[Violation]:
    """A scale's or zero point's Sizes: every size 1 (per tensor) or, where ``channels`` is given,
    the pages' { [1], ChannelCount, [1], [1] } (one value per channel): that count in dimension 1
    (dimension 0 of a 1-dimensional tensor) and 1 elsewhere."""
    shape = list(shape)
    if all(s == 1 for s in shape):
        return []
    axis = 1 if len(shape) >= 2 else 0
    if channels is not None and shape[axis] == channels and all(s == 1 for i, s in enumerate(shape) if i != axis):
        return []
    allowed = f"every size 1 (per tensor, {[1] * len(shape)})"
    if channels is not None:
        per_channel = [1] * len(shape)
        per_channel[axis] = channels
        allowed += f" or {per_channel} (per {what}: the count {channels} in dimension {axis})"
    return [Violation(name, arg, f"has Sizes {shape}", allowed,
                      "a per-tensor value repeated over a shape is one value: pass it with sizes of 1")]
