"""docs/semantics.md's rules, in float64 NumPy: the FLOAT32 denormal rule, FLOAT attributes as C
floats, attribute-to-integer conversion, ScaleBias's fused / unfused candidates, two's complement
wraparound, Direct3D's min/max (maxNum/minNum), and element-wise reference gradients. Every
reference module (tests/reference/<family>/<module>.py) builds on these."""

import math
from fractions import Fraction

import numpy as np

F32_TINY = float(np.finfo(np.float32).tiny)


def c_float(v):
    """A FLOAT attribute: the Python value rounded to float32, as a Python float."""
    return float(np.float32(v))


def sb_float(v):
    """A ScaleBias member: a C float, and a FLOAT32 denormal one reads as zero of its sign (math
    reads FLOAT32 denormals as zero, docs/semantics.md#denormals)."""
    f = c_float(v)
    return math.copysign(0.0, f) if f != 0 and abs(f) < F32_TINY else f


def ftz(x, dtype):
    """FLOAT32 denormals (as float64 values) to sign-preserving zero; others unchanged."""
    x = np.asarray(x, np.float64)
    if np.dtype(dtype) != np.float32:
        return x
    with np.errstate(invalid="ignore"):
        tiny = np.abs(x.astype(np.float32).astype(np.float64)) < F32_TINY
    return np.where(tiny, np.copysign(0.0, x), x)


def read(x):
    """A tensor as math reads it, in float64: FLOAT32 denormals flushed."""
    x = np.asarray(x)
    return ftz(x.astype(np.float64), x.dtype)


def int_attr(v, dtype):
    """A FLOAT attribute converted to an integer type: float32 first, then truncation toward
    zero, saturated (docs/semantics.md#attributes)."""
    f = c_float(v)
    info = np.iinfo(dtype)
    if math.isinf(f):
        return int(info.max if f > 0 else info.min)
    return min(max(math.trunc(f), int(info.min)), int(info.max))


def _fma_to_float32(x64, s, b):
    """x * s + b rounded once to float32, for float32 values x, s, b: the product is exact in
    float64 (24 + 24 bits), the sum's rounding error is recovered exactly (TwoSum), and the
    float64 sum is rounded to odd before it is rounded to float32, which makes the double
    rounding correct (float64 has more than float32's 24 + 2 bits). A plain float64 x * s + b
    rounds twice: a product on a float32 tie with a small Bias came out 1 ULP off."""
    p = x64 * s
    total = p + b
    bb = total - p
    err = (p - (total - bb)) + (b - bb)
    inexact = np.isfinite(total) & (err != 0)
    even = (total.view(np.uint64) & np.uint64(1)) == 0
    toward = np.where(err > 0, np.inf, -np.inf)
    odd = np.where(inexact & even, np.nextafter(total, toward), total)
    return odd.astype(np.float32).astype(np.float64)


def scale_bias_candidates(x64, scale_bias, dtype):
    """g(x) = x * Scale + Bias: fused (exact, rounded once to FLOAT32) and unfused (rounded after the
    multiply too), computed in float32 for FLOAT32 and FLOAT16 tensors (``dtype``: the tensor's
    type) and in float64 for FLOAT64.
    Both are DirectML-legal."""
    if scale_bias is None:
        return [x64]
    s, b = sb_float(scale_bias[0]), sb_float(scale_bias[1])
    if np.dtype(dtype) == np.float64:
        # Computed in FLOAT64: fused is the exact value rounded once, unfused numpy's two steps.
        x64 = np.asarray(x64, np.float64)
        fused = [float(Fraction(v) * Fraction(s) + Fraction(b)) if math.isfinite(v) else v * s + b
                 for v in x64.ravel().tolist()]
        with np.errstate(over="ignore", invalid="ignore"):
            return [np.array(fused, np.float64).reshape(x64.shape), x64 * s + b]
    with np.errstate(over="ignore", invalid="ignore"):
        # fused: the exact x * s + b rounded once to the FLOAT32 value math then reads (an
        # amplifying function such as SINH sees that bit)
        fused = _fma_to_float32(np.asarray(x64, np.float64), s, b)
        prod = (x64.astype(np.float32) * np.float32(s)).astype(np.float64)
        unfused = (prod.astype(np.float32) + np.float32(b)).astype(np.float64)
    return [ftz(fused, np.float32) if np.dtype(dtype) == np.float32 else fused,
            ftz(unfused, np.float32) if np.dtype(dtype) == np.float32 else unfused]


def wrap(values, dtype):
    """Exact Python ints wrapped around to an integer type (two's complement), as an object
    array: what integer hardware stores."""
    info = np.iinfo(dtype)
    bits = np.dtype(dtype).itemsize * 8
    values = np.asarray(values, dtype=object)  # never through a float: products exceed 2**64
    flat = [((int(v) - int(info.min)) % (1 << bits)) + int(info.min) for v in values.ravel()]
    return np.array(flat, dtype=object).reshape(values.shape)


# ---------------------------------------------------------------------------------------------
# Direct3D's min/max: one NaN operand gives the other operand. At a tie either operand is the
# same number (only the sign of a zero could differ, which tests check separately).

def max_num(x, m):
    x = np.asarray(x, dtype=object if isinstance(m, int) else np.float64)
    if isinstance(m, float) and math.isnan(m):
        return x
    if x.dtype == object:
        return np.array([v if v > m else m for v in x.ravel()], dtype=object).reshape(x.shape)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(x), m, np.where(x > m, x, m))


def min_num(x, m):
    x = np.asarray(x, dtype=object if isinstance(m, int) else np.float64)
    if isinstance(m, float) and math.isnan(m):
        return x
    if x.dtype == object:
        return np.array([v if v < m else m for v in x.ravel()], dtype=object).reshape(x.shape)
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(x), m, np.where(x < m, x, m))


def elementwise_vjp(slopes):
    """A reference gradient (cotangent dy, then the operator's inputs and reference keywords)
    from ``slopes``, which gives each input's float64 partial derivative, element by element
    (None for an input with no gradient)."""
    def vjp(dy, *inputs, **kwargs):
        parts = slopes(*inputs, **kwargs)
        parts = parts if isinstance(parts, tuple) else (parts,)
        dy = np.asarray(dy, np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            return tuple(None if p is None else np.asarray(p, np.float64) * dy for p in parts)
    return vjp


# ---------------------------------------------------------------------------------------------
# g(x) = x * Scale + Bias as the element-wise operators read their input (ScaleBias)
def is_int(x):
    """Whether ``x`` holds an integer type."""
    return np.issubdtype(np.asarray(x).dtype, np.integer)


def scale_value(scale_bias):
    """ScaleBias's Scale as a C float (1 without one): what chains into a gradient."""
    return 1.0 if scale_bias is None else sb_float(scale_bias[0])


def int_g(x_np, scale_bias):
    """g(x) on an integer tensor as exact ints (candidates): dmljax's choice, shared by every
    operator (the pages are silent), of computing x * Scale + Bias in FLOAT32 (FLOAT64 for the
    64-bit types), then truncating toward zero, saturating, NaN to 0."""
    if scale_bias is None:
        return [np.array([int(v) for v in x_np.ravel()], dtype=object).reshape(x_np.shape)]
    info = np.iinfo(x_np.dtype)
    cd = np.float64 if x_np.dtype.itemsize == 8 else np.float32
    outs = []
    for g in scale_bias_candidates(x_np.astype(cd).astype(np.float64), scale_bias, cd):
        with np.errstate(over="ignore", invalid="ignore"):
            g = g.astype(cd).astype(np.float64)
        vals = []
        for v in g.ravel():
            if math.isnan(v):
                vals.append(0)
            elif math.isinf(v):
                vals.append(int(info.max) if v > 0 else int(info.min))
            else:
                vals.append(min(max(math.trunc(v), int(info.min)), int(info.max)))
        outs.append(np.array(vals, dtype=object).reshape(x_np.shape))
    return outs


def float_g(x_np, scale_bias=None, half=False):
    """g(x) candidates on a float tensor: FLOAT32 denormals read as zero; with a ScaleBias the
    fused and unfused multiply-add, and with ``half`` (FLOAT16 computed in FLOAT16) the FLOAT16
    ones too: unfused (two roundings) and fused (one: XLA's CPU backend contracts a FLOAT16
    multiply and add into one FMA on processors with AVX512-FP16; x * s + b of FLOAT16 values,
    exact in float64 unless its terms are over 2^53 apart (far from the inputs drawn here), rounds
    once to FLOAT16 as the fused result does)."""
    cands = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)
    if half and scale_bias is not None:
        s, b = np.float16(sb_float(scale_bias[0])), np.float16(sb_float(scale_bias[1]))
        x16 = x_np.astype(np.float16)
        with np.errstate(over="ignore", invalid="ignore"):
            cands.append((x16 * s + b).astype(np.float64))
            fused = x16.astype(np.float64) * np.float64(s) + np.float64(b)
            cands.append(fused.astype(np.float16).astype(np.float64))
    return cands


def g64(x, scale_bias):
    """g(x) in float64 (exact up to one rounding): where gradients are taken."""
    x_np = np.asarray(x)
    return scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)[0]
