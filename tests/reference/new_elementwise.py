"""float64 references for ELEMENT_WISE_IDENTITY, ELEMENT_WISE_ADD, ELEMENT_WISE_ADD1,
ELEMENT_WISE_CLIP, ELEMENT_WISE_CLIP1 and ACTIVATION_ELU, transcribed from their pages (and
CLIP_GRAD / CLIP_GRAD1 for the gradients), with SEMANTICS.md's rules from rules.py.

Each value reference returns a list of acceptable results (float64, or exact Python ints as an
object array): one, or two where a ScaleBias multiply-add may be fused or not."""

import math
from fractions import Fraction

import numpy as np

from tests.reference.rules import c_float, ftz, int_attr, read, scale_bias_candidates


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


def _int_g(x_np, scale_bias):
    """g(x) on an integer tensor, as exact ints: dmljax's choice (the pages are silent) of
    computing in FLOAT32 (FLOAT64 for 64-bit types), then truncating toward zero, saturating,
    NaN to 0."""
    info = np.iinfo(x_np.dtype)
    if scale_bias is None:
        return [np.array([int(v) for v in x_np.ravel()], dtype=object).reshape(x_np.shape)]
    wide = x_np.dtype.itemsize == 8
    cd = np.float64 if wide else np.float32
    xf = x_np.astype(cd).astype(np.float64)  # the input read in the compute type
    outs = []
    for g in scale_bias_candidates(xf, scale_bias, cd):
        with np.errstate(over="ignore", invalid="ignore"):
            g = g.astype(cd).astype(np.float64)  # the compute-type result
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


def _float_g(x_np, scale_bias, half):
    """g(x) candidates on a float tensor. ``half``: FLOAT16 computed in FLOAT16
    (allow_half_precision_computation), which adds the unfused FLOAT16 multiply-add, with Scale
    and Bias themselves rounded to FLOAT16."""
    cands = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)
    if half and scale_bias is not None:
        s, b = np.float16(c_float(scale_bias[0])), np.float16(c_float(scale_bias[1]))
        with np.errstate(over="ignore", invalid="ignore"):
            cands.append((x_np.astype(np.float16) * s + b).astype(np.float64))
    return cands


# ---------------------------------------------------------------------------------------------
def element_wise_identity(x, scale_bias=None, half=False):
    # f(x) = x, with g(x) = x * scale + bias applied first when a ScaleBias is given.
    x_np = np.asarray(x)
    if np.issubdtype(x_np.dtype, np.integer):
        return _int_g(x_np, scale_bias)
    if scale_bias is None:
        return [x_np.astype(np.float64)]  # data movement: compared bit for bit elsewhere
    if x_np.dtype == np.float64:
        # FLOAT64 computes in FLOAT64: fused (exact, rounded once) or unfused (numpy's two steps).
        s, b = Fraction(c_float(scale_bias[0])), Fraction(c_float(scale_bias[1]))
        fused = [float(Fraction(v) * s + b) if math.isfinite(v) else v * float(s) + float(b)
                 for v in x_np.ravel().tolist()]
        with np.errstate(over="ignore", invalid="ignore"):
            unfused = x_np * float(s) + float(b)
        return [np.array(fused, np.float64).reshape(x_np.shape), unfused]
    return _float_g(x_np, scale_bias, half)


def element_wise_add(a, b):
    # f(a, b) = a + b. Integer sums wrap around (two's complement) in the tensor's type.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if np.issubdtype(a_np.dtype, np.integer):
        info = np.iinfo(a_np.dtype)
        bits = a_np.dtype.itemsize * 8
        s = [((int(x) + int(y) - int(info.min)) % (1 << bits)) + int(info.min)
             for x, y in zip(a_np.ravel(), b_np.ravel())]
        return [np.array(s, dtype=object).reshape(a_np.shape)]
    with np.errstate(over="ignore", invalid="ignore"):
        return [read(a_np) + read(b_np)]


def activation_elu(x, alpha=1.0):
    # f(x) = x if x >= 0, Alpha * (exp(x) - 1) otherwise. exp(x) - 1 is written expm1(x): the
    # same real number, without float64's own cancellation for tiny |x|.
    a = c_float(alpha)
    x = read(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return [np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0.0)))]


def element_wise_add1(a, b, fused=None):
    # f(a, b) = FusedActivation(a + b). "Fused activations produce the same result" as the two
    # operators in turn: the sum is stored in the output type, then the activation reads it.
    s = element_wise_add(a, b)[0]
    if fused is None:
        return [s]
    dtype = np.asarray(a).dtype
    with np.errstate(over="ignore", invalid="ignore"):
        stored = ftz(s, dtype).astype(dtype)
    kind, attrs = fused
    if kind == "ELU":
        return activation_elu(stored, **attrs)
    if kind == "SCALED_ELU":
        al, ga = c_float(attrs.get("alpha", 1.6732)), c_float(attrs.get("gamma", 1.0507))
        x = read(stored)
        with np.errstate(over="ignore", invalid="ignore"):
            return [np.where(x > 0, ga * x, ga * al * np.expm1(np.minimum(x, 0.0)))]
    raise ValueError(kind)


def element_wise_clip(x, min, max, scale_bias=None, half=False):
    # f(x) = min(Max, max(Min, x)); Min and Max are FLOATs (float32), truncated and saturated on
    # integer tensors.
    x_np = np.asarray(x)
    if np.issubdtype(x_np.dtype, np.integer):
        lo, hi = int_attr(min, x_np.dtype), int_attr(max, x_np.dtype)
        return [min_num(max_num(g, lo), hi) for g in _int_g(x_np, scale_bias)]
    lo, hi = c_float(min), c_float(max)  # FLOAT16 is compared in FLOAT32, with these bounds
    return [min_num(max_num(g, lo), hi) for g in _float_g(x_np, scale_bias, half)]


def union_value(v, dtype):
    """A DML_SCALAR_UNION value read as ``dtype``: exact ints for integer types; for floats the
    number rounded to the type (FLOAT16 has no union member: the value is a half)."""
    if np.issubdtype(np.dtype(dtype), np.integer):
        return int(v)
    return float(np.asarray(v, np.float64).astype(dtype))


def element_wise_clip1(x, min, max, scale_bias=None, half=False):
    # f(x) = max(Min, min(x, Max)); Min and Max are DML_SCALAR_UNIONs read as the tensor's type.
    x_np = np.asarray(x)
    lo, hi = union_value(min, x_np.dtype), union_value(max, x_np.dtype)
    if np.issubdtype(x_np.dtype, np.integer):
        return [max_num(min_num(g, hi), lo) for g in _int_g(x_np, scale_bias)]
    return [max_num(min_num(g, hi), lo) for g in _float_g(x_np, scale_bias, half)]


# ---------------------------------------------------------------------------------------------
# Gradients (float64), from the *_GRAD pages and SEMANTICS.md section 5.

def clip_grad(g, lo, hi, scale=1.0):
    # CLIP_GRAD / CLIP_GRAD1: "if x <= Min then 0; if x >= Max then 0; else gradient", for the
    # value g(x) the forward pass clipped; the ScaleBias chains in Scale.
    g = np.asarray(g, np.float64)
    with np.errstate(invalid="ignore"):
        blocked = (g <= lo) | (g >= hi)
    return np.where(blocked, 0.0, scale)


def elu_grad(x, alpha=1.0):
    # d/dx on the branch the page's formula selects: x >= 0 -> 1; otherwise Alpha * exp(x).
    x = np.asarray(x, np.float64)
    return np.where(x >= 0, 1.0, c_float(alpha) * np.exp(np.minimum(x, 0.0)))


REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_IDENTITY": element_wise_identity,
    "DML_OPERATOR_ELEMENT_WISE_ADD": element_wise_add,
    "DML_OPERATOR_ELEMENT_WISE_ADD1": element_wise_add1,
    "DML_OPERATOR_ELEMENT_WISE_CLIP": element_wise_clip,
    "DML_OPERATOR_ELEMENT_WISE_CLIP1": element_wise_clip1,
    "DML_OPERATOR_ACTIVATION_ELU": activation_elu,
}
