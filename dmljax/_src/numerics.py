"""Floating-point rules shared by operators.

- FLOAT32 denormals are flushed to sign-preserving zero on the input and output of math
  (docs/semantics.md#denormals).
- FLOAT16 is computed in FLOAT32 and rounded once, unless half-precision computation is allowed
  (docs/semantics.md#half-precision).
- FLOAT attributes are float32 values; meeting an integer tensor they are truncated toward zero
  and saturated to the type's range (docs/semantics.md#attributes).
- min/max follow IEEE maxNum/minNum: one NaN operand gives the other operand
  (docs/semantics.md#minimum-and-maximum).
"""

from __future__ import annotations

import contextlib
import math
import threading
import weakref

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import DataType
from dmljax._src.structs import ScaleBias

__all__ = [
    "F32_TINY",
    "flush_values",
    "compute_dtype",
    "flush_denormals",
    "load",
    "store",
    "attr_as",
    "apply_scale_bias",
    "max_num",
    "min_num",
    "is_nan",
    "bits_type",
    "mark_flushed",
    "record_flushed",
    "is_flushed",
    "pow_c99",
    "copy_sign",
    "float_to_int",
    "expm1_nonpositive",
]

F32_TINY = np.float32(np.finfo(np.float32).tiny)
F32_MAGIC = np.float32(1.5 * 2**23)
"""A FLOAT32 integer v with |v| < 2^22 plus F32_MAGIC is exact and holds v, in two's complement, in
its low fraction bits (a value below 2^22 in size that is not an integer is rounded, halves to
even): how linear quantization turns a saturated FLOAT32 integer into its narrow bits without a
conversion."""
F32_MAGIC_BITS = np.int32(0x4B400000)  # F32_MAGIC's bits


def compute_dtype(data_type: DataType, allow_half: bool) -> np.dtype:
    """The dtype math on ``data_type`` runs in."""
    if data_type is DataType.FLOAT16 and not allow_half:
        return np.dtype(np.float32)
    return data_type.dtype


def flush_denormals(x: jnp.ndarray) -> jnp.ndarray:
    """FLOAT32 denormals to sign-preserving zero; other dtypes unchanged (FLOAT16 and FLOAT64
    denormals are kept). XLA's CPU backend flushes by itself and its GPU backend does not: doing
    it explicitly makes both give the same bits. The flush is a rule about values, not a function
    to differentiate: its derivative is the identity (a gradient at 0 is not cut off)."""
    if x.dtype != np.float32 or in_gradient_rule():
        return x
    return _flush_f32(x)


_RULE = threading.local()


@contextlib.contextmanager
def gradient_rule():
    """While a gradient rule is traced to be transposed (derivatives.backward_rule), FLOAT32
    denormals pass unflushed: the flush is a rule about values whose derivative is the identity,
    and it is not linear, so JAX could not transpose a rule that applied it to a cotangent."""
    depth = getattr(_RULE, "depth", 0)
    _RULE.depth = depth + 1
    try:
        yield
    finally:
        _RULE.depth = depth


def in_gradient_rule() -> bool:
    """Whether a gradient rule is being traced (``gradient_rule``)."""
    return getattr(_RULE, "depth", 0) > 0


def _flush_select(x):
    # x * 0 is the zero of x's sign for every finite x (IEEE: the product's sign is the XOR of
    # the signs): four instructions (abs, compare, multiply, select) where copysign(0, x) took
    # seven (its sign test is a bitcast, a shift and a compare), once per operator input and
    # output, which added up in fused chains of operators on the GPU.
    return jnp.where(jnp.abs(x) < F32_TINY, x * np.float32(0.0), x)


@jax.custom_jvp
def _flush_f32(x):
    # One form on every backend. An integer form on the bits would fuse into the math before it
    # on the CPU (the select after SIGMOID's exp and divide takes a second loop over memory
    # there), but it moves XLA's CPU contraction of multiply-adds with the program around it:
    # ADAM_OPTIMIZER's second moment then differs by one ULP between a direct call and a
    # DxDispatch model (tests/test_dxdispatch_catalog.py).
    # (jnp.asarray: op by op under jax.disable_jit a NumPy input would make NumPy warn at inf * 0)
    x = jnp.asarray(x)
    return _flush_select(x)


@_flush_f32.defjvp
def _flush_f32_jvp(primals, tangents):
    return _flush_f32(primals[0]), tangents[0]


@jax.custom_jvp
def _flush_f32_unless_cpu(x):
    # load(float_reads=True): the CPU's processor flushes what float operations read
    x = jnp.asarray(x)
    return lax.platform_dependent(x, cpu=lambda v: v, default=_flush_select)


@_flush_f32_unless_cpu.defjvp
def _flush_f32_unless_cpu_jvp(primals, tangents):
    return _flush_f32_unless_cpu(primals[0]), tangents[0]


# FLOAT32 values known to hold no denormal: the results of math that stored them (an operator's
# output, by object identity, while it lives). Reading one again needs no flush: a chain of
# operators then flushes each intermediate value once (at its store), not twice.
_FLUSHED: dict[int, weakref.ref] = {}


def flush_constant(value: float) -> float:
    """A FLOAT32 constant as ``flush_denormals`` leaves it: a denormal becomes the zero of its
    sign, anything else (NaN included) is kept."""
    return math.copysign(0.0, value) if 0 < abs(value) < F32_TINY else value


def flush_values(x):
    """FLOAT32 denormals to sign-preserving zero inside a Pallas kernel (``flush_denormals``'s rule
    in operations Triton lowers, without its custom_jvp)."""
    return jnp.where(jnp.abs(x) < F32_TINY, x * 0.0, x)


def mark_flushed(x) -> None:
    """Record that ``x`` (an array or tracer) holds FLOAT32 values already flushed (not inside a
    gradient rule, which does not flush)."""
    if not in_gradient_rule():
        record_flushed(x)


def record_flushed(x) -> None:
    """``mark_flushed`` where no gradient rule can be in progress (an operator's direct call)."""
    try:
        ref = weakref.ref(x)
    except TypeError:  # not weakly referenceable: simply not recorded
        return
    if len(_FLUSHED) >= _PRUNE_AT[0]:  # drop the records of values that died
        for key in [k for k, r in _FLUSHED.items() if r() is None]:
            del _FLUSHED[key]
        _PRUNE_AT[0] = max(1024, 2 * len(_FLUSHED))
    _FLUSHED[id(x)] = ref


_PRUNE_AT = [1024]  # the record's size that prunes it next (twice what lives after a pruning)


def is_flushed(x) -> bool:
    """Whether ``x`` is this very object that ``mark_flushed`` recorded (alive, not a reused id)."""
    ref = _FLUSHED.get(id(x))
    return ref is not None and ref() is x


def load(x: jnp.ndarray, allow_half: bool = False, flush: bool = True, float_reads: bool = False) -> jnp.ndarray:
    """A float tensor as math reads it: in its compute dtype, FLOAT32 denormals flushed (only a
    FLOAT32 tensor can hold one: FLOAT16 values widened to float32 never are; ``flush=False``
    for a value known to be flushed already, see ``is_flushed``).

    ``float_reads=True`` where the math looks at ``x`` only through float operations (comparisons
    included; a bit test that a denormal and its zero pass alike, such as ``is_nan``, too) and
    whatever it passes on untouched (a select) reaches the output through ``store``: then on the
    CPU the flush is left to the processor, which XLA's CPU backend runs with denormals read as zero (every
    float operation, comparisons included, takes a FLOAT32 denormal for the zero of its sign),
    and a denormal the math passes on untouched (a select) is flushed at the store. The explicit
    flush repeated that work (four operations per element: ELEMENT_WISE_TANH 1.3x jnp.tanh's
    time with it). Other platforms flush here as before."""
    dt = DataType.from_dtype(x.dtype)
    if dt is None or not dt.is_float:
        return x
    if dt is DataType.FLOAT32:
        if not flush or is_flushed(x) or in_gradient_rule():
            return x
        if float_reads:
            return _flush_f32_unless_cpu(x)
        return flush_denormals(x)
    return x.astype(compute_dtype(dt, allow_half))


def store(y: jnp.ndarray, data_type: DataType, float_result: bool = False) -> jnp.ndarray:
    """A math result written to a ``data_type`` tensor: rounded once, FLOAT32 denormals flushed
    (and recorded as flushed: an operator returning it marks its output, the next one's ``load``
    skips the flush).

    ``float_result=True`` where every element of a FLOAT32 ``y`` is the result of a float
    operation (a sum, a quotient; not a value passed on untouched, as a select or a copy of an
    input does): on the CPU the processor, which XLA's CPU backend runs with results flushed to
    zero, flushed it already, and the flush is left out there (``load``'s ``float_reads``). The
    explicit flush after a reduction was a pass of its own (REDUCE SUM over 4,096 terms 1.24x
    jnp.sum's time with it). Other platforms flush here as before."""
    if data_type is DataType.FLOAT32:
        if float_result and y.dtype == np.float32 and not in_gradient_rule():
            out = _flush_f32_unless_cpu(y)
        else:
            out = flush_denormals(y.astype(np.float32))
        mark_flushed(out)
        return out
    return y.astype(data_type.dtype)


def float32_as(value, dtype) -> np.ndarray:
    """A float32 value (a FLOAT attribute, a ScaleBias, a constant; a scalar or a list) in
    ``dtype``, rounded once. Beyond FLOAT16's range it is +-inf, as IEEE's conversion gives and
    DirectML's half-precision computation takes it, without NumPy's overflow warning."""
    with np.errstate(over="ignore"):
        return np.asarray(value, np.float32).astype(dtype)


def float32_product(a: float, b: float) -> np.float32:
    """The float32 product of two FLOAT attributes (a product of constants taken once, outside
    the traced program): +-inf where it overflows, as IEEE gives, without NumPy's warning."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.float32(a) * np.float32(b)


def attr_as(value: float, data_type: DataType, dtype: np.dtype | None = None) -> np.generic:
    """A FLOAT attribute (already a float32 value) as a scalar of the tensor's type.

    Floats: the float32 value in ``dtype`` (the compute dtype; default the tensor's own).
    Integers: truncated toward zero and saturated to the type's range (NaN was refused earlier).
    """
    if data_type.is_float:
        return float32_as(value, dtype or data_type.dtype)[()]
    if math.isnan(value):
        raise ValueError("NaN has no integer value")  # validation refuses this first
    info = np.iinfo(data_type.dtype)
    if math.isinf(value):
        i = info.max if value > 0 else info.min
    else:
        i = min(max(math.trunc(value), int(info.min)), int(info.max))
    return np.asarray(i, dtype=data_type.dtype)[()]


def apply_scale_bias(g: jnp.ndarray, scale_bias: ScaleBias | None) -> jnp.ndarray:
    """``g * Scale + Bias`` in g's dtype (float math; the result is flushed like any math
    output). Whether the multiply-add is fused is the backend's choice, as in DirectML."""
    if scale_bias is None:
        return g
    s, b = float32_as(scale_bias.scale, g.dtype), float32_as(scale_bias.bias, g.dtype)
    return flush_denormals(g * s + b)


_NAN_BITS = {  # dtype: (unsigned type, sign mask off, +inf bits)
    np.dtype(np.float16): (np.uint16, 0x7FFF, 0x7C00),
    np.dtype(np.float32): (np.uint32, 0x7FFFFFFF, 0x7F800000),
    np.dtype(np.float64): (np.uint64, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000),
}


def bits_type(dtype) -> type:
    """The unsigned integer type as wide as a float dtype: what its bits are read as."""
    return _NAN_BITS[np.dtype(dtype)][0]


def associative_scan(fn, elems: tuple, *, axis: int, reverse: bool) -> tuple:
    """``lax.associative_scan(fn, elems)`` with the signs of zeros kept: float operands travel
    as their integer bits between ``fn``'s calls. JAX's scan interleaves its partial results by
    adding two zero-padded arrays, so a -0.0 came out +0.0 (-0.0 + 0.0), where a product's zero
    has the sign of its factors (IEEE) and float64's cumprod gives it; x + 0 is x for bits."""
    floats = tuple(jnp.issubdtype(x.dtype, jnp.floating) for x in elems)
    dtypes = tuple(x.dtype for x in elems)

    def to_bits(values):
        return tuple(lax.bitcast_convert_type(v, bits_type(v.dtype)) if f else v for v, f in zip(values, floats))

    def from_bits(values):
        return tuple(lax.bitcast_convert_type(v, d) if f else v for v, f, d in zip(values, floats, dtypes))

    def combine(a, b):
        return to_bits(tuple(fn(from_bits(a), from_bits(b))))

    return from_bits(lax.associative_scan(combine, to_bits(tuple(elems)), axis=axis, reverse=reverse))


def is_nan(x: jnp.ndarray) -> jnp.ndarray:
    """NaN test on the bits (exponent all ones, mantissa non-zero). XLA's GPU code generator
    does not keep float comparisons' NaN behaviour through chains of compares and selects (an
    H100 run gave max(min(NaN, 1), 0) = 0, as if reordered into a clamp); integer operations on
    the bits are out of its reach. False for integer dtypes."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.zeros(x.shape, bool)
    uint, abs_mask, inf = _NAN_BITS[np.dtype(x.dtype)]
    bits = lax.bitcast_convert_type(x, uint)
    return (bits & np.asarray(abs_mask, uint)) > np.asarray(inf, uint)


def max_num(x: jnp.ndarray, m) -> jnp.ndarray:
    """IEEE maxNum of an array and a static scalar ``m``: NaN in x gives m; a NaN m gives x;
    at a tie (equal values, including -0 against +0) the scalar is returned."""
    return _num(x, m, greater=True)


def min_num(x: jnp.ndarray, m) -> jnp.ndarray:
    """IEEE minNum of an array and a static scalar ``m`` (max_num's twin): NaN in x gives m; a NaN
    m gives x; at a tie the scalar is returned."""
    return _num(x, m, greater=False)


def _num(x, m, greater: bool):
    if isinstance(m, (float, np.floating)) and math.isnan(m):
        return x
    m_arr = jnp.asarray(m, dtype=x.dtype)

    def compared(x):
        # x > m (x < m) is false for a NaN x and at every tie: one compare and one select, kept
        # as written by XLA's CPU backend
        return jnp.where(x > m_arr if greater else x < m_arr, x, m_arr)

    def tested(x):
        # XLA's GPU code generator reorders chains of such compares and selects into clamps that
        # lose NaN: NaN is tested first (x != x, one instruction; the test on the bits, is_nan,
        # took two more: on an H200 the five-operator chain 1.047x jnp's time against 1.043x, the
        # FLOAT16 quantization to INT4 in pairs 76.6% of a copy's bandwidth against 88.4%; both
        # keep every NaN rule of tests/gpu/semantics.py), then XLA's maximum (minimum), one
        # instruction, whose tie of zeros (+0 for maximum, -0 for minimum) is the scalar or equal
        # to it, except for the scalar zero of the other sign, which the compare keeps
        signed = float(m) == 0.0 and (math.copysign(1.0, float(m)) < 0) == greater
        plain = (lax.max if greater else lax.min)(x, m_arr)
        return jnp.where(x != x, m_arr, compared(x) if signed else plain)

    if not jnp.issubdtype(x.dtype, jnp.floating):
        return compared(x)
    return lax.platform_dependent(x, cpu=compared, default=tested)


@jax.custom_jvp
def copy_sign(x: jnp.ndarray, s: jnp.ndarray) -> jnp.ndarray:
    """copysign(x, s) on the bits: x's magnitude bits with s's sign bit (NaN and zeros
    included), the same values as ``jnp.copysign`` in two integer operations, where jnp's
    lowers to a shift, a compare, abs, negate and a select. Float dtypes only."""
    uint, magnitude, _ = _NAN_BITS[np.dtype(x.dtype)]
    m = np.asarray(magnitude, uint)
    sign = np.asarray(~np.asarray(magnitude, uint), uint)
    bits = (lax.bitcast_convert_type(x, uint) & m) | (lax.bitcast_convert_type(s, uint) & sign)
    return lax.bitcast_convert_type(bits, x.dtype)


@copy_sign.defjvp
def _copy_sign_jvp(primals, tangents):
    # jnp.copysign's rule (its |x| takes the slope of x >= 0 at -0 too); none for s
    (x, s), (tx, _) = primals, tangents
    flip = (x >= 0) == jnp.signbit(s)
    return copy_sign(x, s), jnp.where(flip, -tx, tx)


def _is_odd_integer(e: float) -> bool:
    return math.isfinite(e) and e == math.floor(e) and abs(e) < 2.0**53 and int(e) % 2 == 1


def _is_integral(e: float) -> bool:
    # C99 treats infinities as even integers for pow (pow(-1, inf) = 1, pow(-2, inf) = inf).
    return math.isinf(e) or e == math.floor(e)


def pow_c99(g: jnp.ndarray, exponent: float) -> jnp.ndarray:
    """``pow(g, exponent)`` for a static exponent, as DirectML's CONSTANT_POW page says:
    negative bases give a result signed by the exponent's parity when the exponent is integral,
    NaN otherwise (also for -inf, where C99 would give +inf); C99's special values elsewhere
    (pow(x, 0) = 1 even for NaN x, pow(1, NaN) = 1, pow(+-0, negative odd) = +-inf, ...).

    One code path for every exponent: 3 and 3.0 give the same bits."""
    if exponent == 0.0:
        return jnp.ones_like(g)
    e = float32_as(exponent, g.dtype)  # a float32 value: beyond FLOAT16's range, +-inf
    if math.isnan(exponent):
        return jnp.where(g == 1, jnp.ones_like(g), jnp.full_like(g, np.nan))
    if _is_odd_integer(exponent):
        # lax.pow is C99's pow on the CPU and on CUDA: an odd integral exponent keeps g's sign
        # (-0 and -inf included), which XLA's expansion of a small power into products keeps too
        return lax.pow(g, jnp.full_like(g, e))
    mag = lax.pow(jnp.abs(g), jnp.full_like(g, e))
    if _is_integral(exponent):
        # even: |g|^e; pow(-1, +-inf) = 1 in C99, and |-1|^inf = 1 already.
        return mag
    return jnp.where(g < 0, jnp.full_like(g, np.nan), mag)


def float_to_int(g: jnp.ndarray, data_type: DataType) -> jnp.ndarray:
    """Float values to an integer type by truncation toward zero, saturated to the type's range;
    NaN becomes 0 (dmljax's choice; C leaves it undefined). FLOAT16 values are compared in
    FLOAT32 (exactly): the bounds of the wide types (2^31, 2^63) are infinite in FLOAT16."""
    if g.dtype == np.float16:
        g = g.astype(np.float32)
    info = np.iinfo(data_type.dtype)
    hi = np.asarray(float(info.max) + 1.0, g.dtype)  # 2**k: exact in any float type
    lo = np.asarray(float(info.min), g.dtype)  # -2**k or 0: exact
    t = jnp.trunc(g)
    inside = (t < hi) & (t >= lo)
    safe = jnp.where(inside, t, jnp.zeros_like(t)).astype(data_type.dtype)
    out = jnp.where(t >= hi, np.asarray(info.max, data_type.dtype), safe)
    out = jnp.where(t < lo, np.asarray(info.min, data_type.dtype), out)
    return jnp.where(jnp.isnan(g), np.asarray(0, data_type.dtype), out)


# (expm1(x) - x) / x^2 on [-0.35, 0] as a cubic: the least-squares fit, weighted by |x| (the
# relative error it leaves in expm1), on 4,000 Chebyshev nodes, each coefficient rounded to
# float32. Evaluated in float32, x + x^2 * p(x) is under 0.95 ULP from expm1 at every float32
# from -0.35 to -2^-12 and on a sample below (tests/ops/activation/test_piecewise.py): as close
# as a Taylor series to x^8, with three multiply-adds fewer.
_EXPM1_CUBIC = (0.49999868869781494, 0.16663037240505219, 0.04135134443640709, 0.007236115634441376)


def expm1_nonpositive(x: jnp.ndarray, result_dtype=None) -> jnp.ndarray:
    """``exp(x) - 1`` for x <= 0 (and NaN), within 1 ULP in float32 (XLA's expm1 measured 5) at
    the cost of one exp and a cubic (XLA's costs several times the instructions).

    Below -0.35, exp(x) - 1 has no cancellation to fear: |result| > 0.29 and exp's own error
    stays under 2 ULP of it. From -0.35 to 0, x + x^2 * p(x) with ``_EXPM1_CUBIC``, so tiny x keep
    their full precision (expm1(-1e-30) = -1e-30). Positive x give a finite or infinite value
    that callers never select (their branch for x > 0 is another formula).

    With ``result_dtype`` FLOAT16 (float32 math rounded once to FLOAT16), a cheaper pair does:
    exp(x) - 1 below -2^-10 (relative error under 1.3e-4, a quarter of FLOAT16's half ULP) and
    x + x^2 / 2 above (relative error under 2e-7)."""
    if result_dtype is not None and np.dtype(result_dtype) == np.float16 and x.dtype == np.float32:
        cheap = x + np.float32(0.5) * x * x
        return jnp.where(x < np.float32(-(2.0**-10)), jnp.exp(x) - np.float32(1), cheap)
    p = jnp.full_like(x, _EXPM1_CUBIC[-1])
    for c in reversed(_EXPM1_CUBIC[:-1]):
        p = p * x + float32_as(c, x.dtype)
    series = x + x * x * p
    return jnp.where(x < np.asarray(-0.35, x.dtype), jnp.exp(x) - np.asarray(1, x.dtype), series)
