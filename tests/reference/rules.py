"""SEMANTICS.md's rules, in float64 NumPy: the FLOAT32 denormal rule, FLOAT attributes as C
floats, attribute-to-integer conversion, and ScaleBias's fused / unfused candidates."""

import math

import numpy as np

F32_TINY = float(np.finfo(np.float32).tiny)


def c_float(v):
    """A FLOAT attribute: the Python value rounded to float32, as a Python float."""
    return float(np.float32(v))


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
    zero, saturated (SEMANTICS.md 3)."""
    f = c_float(v)
    info = np.iinfo(dtype)
    if math.isinf(f):
        return int(info.max if f > 0 else info.min)
    return min(max(math.trunc(f), int(info.min)), int(info.max))


def scale_bias_candidates(x64, scale_bias, dtype):
    """g(x) = x * Scale + Bias: fused (exact, float64) and unfused (rounded after the multiply in
    the compute type: float32 for FLOAT32 and FLOAT16 tensors). Both are DirectML-legal."""
    if scale_bias is None:
        return [x64]
    s, b = c_float(scale_bias[0]), c_float(scale_bias[1])
    fused = x64 * s + b
    with np.errstate(over="ignore", invalid="ignore"):
        prod = (x64.astype(np.float32) * np.float32(s)).astype(np.float64)
        unfused = (prod.astype(np.float32) + np.float32(b)).astype(np.float64)
    return [ftz(fused, np.float32) if np.dtype(dtype) == np.float32 else fused,
            ftz(unfused, np.float32) if np.dtype(dtype) == np.float32 else unfused]
