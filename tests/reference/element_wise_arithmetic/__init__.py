"""float64 references for the element-wise arithmetic family (sums, products, quotients, moduli,
clamps, identity, negation here; signs and rounding in rounding.py, VALUE_SCALE_2D in
value_scale.py), transcribed from the pages (dml_element_wise_*_operator_desc.md in
../shared/spec/operators/, and CLIP_GRAD / CLIP_GRAD1 for the gradients) and SEMANTICS.md.

Each value reference returns a list of acceptable results (float64, or exact Python ints as an
object array): one, or two where a ScaleBias multiply-add may be fused or not."""

import math

import numpy as np

from dmljax import FusedActivation
from tests.reference import activation
from tests.reference.element_wise_arithmetic import rounding, value_scale
from tests.reference.record import Attrs, Reference
from tests.reference.rules import (
    F32_TINY, c_float, elementwise_vjp, ftz, int_attr, max_num, min_num, read, scale_bias_candidates,
    wrap,
)

SB = {"scale_bias": (0.75, -0.5)}


def _is_int(x):
    return np.issubdtype(np.asarray(x).dtype, np.integer)


def _scale(scale_bias):
    return 1.0 if scale_bias is None else c_float(scale_bias[0])


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


def _g64(x, scale_bias):
    """g(x) = x * Scale + Bias in float64 (exact up to one rounding): where gradients are taken."""
    x_np = np.asarray(x)
    return scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)[0]


# ---------------------------------------------------------------------------------------------
def element_wise_multiply(a, b):
    # f(a, b) = a * b. Integer products wrap around (two's complement) in the tensor's type.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if _is_int(a_np):
        return [wrap([int(x) * int(y) for x, y in zip(a_np.ravel(), b_np.ravel())], a_np.dtype).reshape(a_np.shape)]
    with np.errstate(over="ignore", invalid="ignore"):
        return [read(a_np) * read(b_np)]


# ---------------------------------------------------------------------------------------------
def _max_num_f(x, m):
    # max(x, Min) under Direct3D's rule: one NaN operand gives the other; a tie gives Min.
    if math.isnan(m):
        return x
    with np.errstate(invalid="ignore"):
        return np.where(x > m, x, m)


def element_wise_threshold(x, min, scale_bias=None, half=False):
    # f(x) = max(g(x), Min), g(x) = x * Scale + Bias when a ScaleBias is given.
    x_np = np.asarray(x)
    if _is_int(x_np):
        m = int_attr(min, x_np.dtype)
        if scale_bias is None:
            return [np.maximum(x_np.astype(object), m)]
        # dmljax's choice: g(x) computed in FLOAT32, truncated toward zero and saturated.
        info = np.iinfo(x_np.dtype)
        outs = []
        x32 = x_np.astype(np.float32).astype(np.float64)  # the input read as FLOAT32
        for g in scale_bias_candidates(x32, scale_bias, np.float32):
            g = g.astype(np.float32).astype(np.float64)  # the FLOAT32 result
            g = np.where(np.isnan(g), 0.0, np.clip(np.trunc(g), float(info.min), float(info.max)))
            outs.append(np.maximum(g.astype(np.int64).astype(object), m))
        return outs
    return [_max_num_f(g, c_float(min)) for g in _float_g(x_np, scale_bias, half)]


def threshold_slope(x, min, scale_bias=None, half=False):
    # The gradient text: Scale where g(x) > Min (nothing at a tie or for NaN); a NaN Min passes
    # everything, as the forward pass returns g(x) then.
    g = _g64(x, scale_bias)
    m = c_float(min)
    with np.errstate(invalid="ignore"):
        passes = np.ones(g.shape, bool) if math.isnan(m) else g > m
    return np.where(passes, _scale(scale_bias), 0.0)


def _threshold_near_kink(x, min, scale_bias=None, half=False):
    return np.abs(_g64(x, scale_bias) - c_float(min)) < 1e-2


# ---------------------------------------------------------------------------------------------
def _python_float_mod(a, b, flush=False):
    # Python's float %, from its definition: r = fmod(a, b); if r and sign(r) != sign(b): r += b;
    # a zero r takes the sign of b. Python raises for b == 0; DirectML's formula gives NaN there.
    # For FLOAT32 the remainder is a math result: a denormal one is flushed (SEMANTICS.md 2).
    if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    r = math.fmod(a, b)
    if flush and abs(r) < F32_TINY:
        r = 0.0
    if r:
        if (b < 0) != (r < 0):
            r += b
    else:
        r = math.copysign(0.0, b)
    return r


def element_wise_modulus_floor(a, b):
    # f(a, b) = a - (b * floor(a / b)), "the same results as the Python modulus".
    a_np, b_np = np.asarray(a), np.asarray(b)
    if _is_int(a_np):
        # Python's int %, exact; DirectML leaves a zero divisor undefined: dmljax gives 0.
        out = [0 if int(y) == 0 else int(x) % int(y) for x, y in zip(a_np.ravel(), b_np.ravel())]
        return [np.array(out, dtype=object).reshape(a_np.shape)]
    fa, fb = read(a_np), read(b_np)
    flush = a_np.dtype == np.float32
    out = [_python_float_mod(x, y, flush) for x, y in zip(fa.ravel(), fb.ravel())]
    return [np.array(out, np.float64).reshape(fa.shape)]


def modulus_floor_slopes(a, b):
    # d/da (a - b * floor(a / b)) = 1; d/db = -floor(a / b) (floor is flat between its jumps).
    fa, fb = read(a), read(b)
    with np.errstate(all="ignore"):
        return np.ones(fa.shape), -np.floor(fa / fb)


def _modulus_near_jump(a, b):
    fa, fb = read(a), read(b)
    with np.errstate(all="ignore"):
        q = fa / fb
        return ~np.isfinite(q) | (np.abs(q - np.round(q)) < 1e-3 * np.maximum(1.0, np.abs(q)))


# ---------------------------------------------------------------------------------------------
def element_wise_identity(x, scale_bias=None, half=False):
    # f(x) = x, with g(x) = x * scale + bias applied first when a ScaleBias is given.
    x_np = np.asarray(x)
    if scale_bias is None:
        return [x_np]  # data movement: the very values, compared bit for bit
    if _is_int(x_np):
        return _int_g(x_np, scale_bias)
    return _float_g(x_np, scale_bias, half)


# ---------------------------------------------------------------------------------------------
def element_wise_add(a, b):
    # f(a, b) = a + b. Integer sums wrap around (two's complement) in the tensor's type.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if _is_int(a_np):
        return [wrap([int(x) + int(y) for x, y in zip(a_np.ravel(), b_np.ravel())], a_np.dtype).reshape(a_np.shape)]
    with np.errstate(over="ignore", invalid="ignore"):
        return [read(a_np) + read(b_np)]


# ---------------------------------------------------------------------------------------------
FUSED = {"ELU": (activation.activation_elu, activation.elu_grad),
         "SCALED_ELU": (activation.activation_scaled_elu, activation.scaled_elu_slope)}


def _stored_sum(a, b):
    s = element_wise_add(a, b)[0]
    dtype = np.asarray(a).dtype
    with np.errstate(over="ignore", invalid="ignore"):
        return ftz(s, dtype).astype(dtype)


def element_wise_add1(a, b, fused=None):
    # f(a, b) = FusedActivation(a + b). "Fused activations produce the same result" as the two
    # operators in turn: the sum is stored in the output type, then the activation reads it.
    s = element_wise_add(a, b)[0]
    if fused is None:
        return [s]
    kind, attrs = fused
    return FUSED[kind][0](_stored_sum(a, b), **attrs)


def add1_slopes(a, b, fused=None):
    # dA = dB = activation'(a + b) (1 without a fused activation).
    if fused is None:
        one = np.ones(np.shape(a))
        return one, one
    kind, attrs = fused
    d = FUSED[kind][1](read(_stored_sum(a, b)), **attrs)
    return d, d


def _add1_near_kink(a, b, fused=None):
    return np.abs(read(a) + read(b)) < 1e-2


# ---------------------------------------------------------------------------------------------
def element_wise_clip(x, min, max, scale_bias=None, half=False):
    # f(x) = min(Max, max(Min, x)); Min and Max are FLOATs (float32), truncated and saturated on
    # integer tensors.
    x_np = np.asarray(x)
    if _is_int(x_np):
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
    if _is_int(x_np):
        return [max_num(min_num(g, hi), lo) for g in _int_g(x_np, scale_bias)]
    return [max_num(min_num(g, hi), lo) for g in _float_g(x_np, scale_bias, half)]


def clip_grad(g, lo, hi, scale=1.0):
    # CLIP_GRAD / CLIP_GRAD1: "if x <= Min then 0; if x >= Max then 0; else gradient", for the
    # value g(x) the forward pass clipped; the ScaleBias chains in Scale.
    g = np.asarray(g, np.float64)
    with np.errstate(invalid="ignore"):
        blocked = (g <= lo) | (g >= hi)
    return np.where(blocked, 0.0, scale)


def _clip_bounds(x, min, max, which):
    if which == "CLIP":
        return c_float(min), c_float(max)
    dtype = np.asarray(x).dtype
    return union_value(min, dtype), union_value(max, dtype)


def _clip_slope(which):
    def slope(x, min, max, scale_bias=None, half=False):
        lo, hi = _clip_bounds(x, min, max, which)
        return clip_grad(_g64(x, scale_bias), lo, hi, _scale(scale_bias))
    return slope


def _clip_near_kink(which):
    def near(x, min, max, scale_bias=None, half=False):
        lo, hi = _clip_bounds(x, min, max, which)
        g = _g64(x, scale_bias)
        return (np.abs(g - lo) < 1e-2) | (np.abs(g - hi) < 1e-2)
    return near


def _clip_attrs(bounds):
    # FLOAT16 computation reads the bounds as FLOAT16 numbers and adds the FLOAT16 multiply-add.
    half_bounds = {k: float(np.float16(v)) for k, v in bounds.items()}
    return (Attrs(bounds, half=half_bounds),
            Attrs({**bounds, **SB}, half={**half_bounds, **SB, "half": True}))


def _clip1_attrs(dt):
    if dt.is_float:
        return _clip_attrs({"min": -1.25, "max": 2.5})
    return _clip_attrs({"min": -5, "max": 100} if dt.is_signed else {"min": 3, "max": 100})


# ---------------------------------------------------------------------------------------------
def element_wise_negate(x):
    # f(x) = -x. Integers wrap around (two's complement): the most negative value is its own
    # negation. Floats: math, so a FLOAT32 denormal input reads as (signed) zero.
    x_np = np.asarray(x)
    if _is_int(x_np):
        return [wrap([-int(v) for v in x_np.ravel()], x_np.dtype).reshape(x_np.shape)]
    return [-read(x_np)]


# ---------------------------------------------------------------------------------------------
ARITHMETIC = {
    "DML_OPERATOR_ELEMENT_WISE_MULTIPLY": Reference(
        element_wise_multiply,
        grad=elementwise_vjp(lambda a, b: (read(b), read(a))),
    ),
    "DML_OPERATOR_ELEMENT_WISE_THRESHOLD": Reference(
        element_wise_threshold,
        attrs=(Attrs({"min": 0.5}), Attrs({"min": -1.25, **SB}, half={"min": -1.25, **SB, "half": True})),
        grad=elementwise_vjp(threshold_slope),
        near_kink=_threshold_near_kink,
    ),
    "DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR": Reference(
        element_wise_modulus_floor,
        grad=elementwise_vjp(modulus_floor_slopes),
        near_kink=_modulus_near_jump,
    ),
    "DML_OPERATOR_ELEMENT_WISE_IDENTITY": Reference(
        element_wise_identity,
        attrs=(Attrs(selection=True), Attrs(SB, half={**SB, "half": True})),
        grad=elementwise_vjp(lambda x, scale_bias=None, half=False: np.full(np.shape(x), _scale(scale_bias))),
    ),
    "DML_OPERATOR_ELEMENT_WISE_ADD": Reference(
        element_wise_add,
        grad=elementwise_vjp(lambda a, b: (np.ones(np.shape(a)), np.ones(np.shape(b)))),
    ),
    "DML_OPERATOR_ELEMENT_WISE_ADD1": Reference(
        element_wise_add1,
        attrs=(
            Attrs(),
            Attrs({"fused_activation": FusedActivation("ACTIVATION_ELU", alpha=0.5)},
                  {"fused": ("ELU", {"alpha": 0.5})}),
            Attrs({"fused_activation": {"Type": "DML_OPERATOR_ACTIVATION_SCALED_ELU", "Desc": {}}},
                  {"fused": ("SCALED_ELU", {})}),
        ),
        grad=elementwise_vjp(add1_slopes),
        near_kink=_add1_near_kink,
    ),
    "DML_OPERATOR_ELEMENT_WISE_CLIP": Reference(
        element_wise_clip,
        attrs=_clip_attrs({"min": -1.25, "max": 2.5}),
        grad=elementwise_vjp(_clip_slope("CLIP")),
        near_kink=_clip_near_kink("CLIP"),
    ),
    "DML_OPERATOR_ELEMENT_WISE_CLIP1": Reference(
        element_wise_clip1,
        attrs=_clip1_attrs,
        grad=elementwise_vjp(_clip_slope("CLIP1")),
        near_kink=_clip_near_kink("CLIP1"),
    ),
    "DML_OPERATOR_ELEMENT_WISE_NEGATE": Reference(
        element_wise_negate,
        grad=elementwise_vjp(lambda x: np.full(np.shape(x), -1.0)),
    ),
}

REFERENCES = {**ARITHMETIC, **rounding.REFERENCES, **value_scale.REFERENCES}
