"""float64 references for the element-wise sign and rounding operators (ABS, SIGN, CEIL, FLOOR,
ROUND), transcribed from the pages (dml_element_wise_*_operator_desc.md in
../shared/spec/operators/, and core/dml_rounding_mode.md for ROUND's modes) and docs/semantics.md;
part of the element_wise_arithmetic family's references.

Each value reference returns a list of acceptable results (float64, or exact Python ints as an
object array): one, or several where a ScaleBias multiply-add may be fused or not. Rounding is
done with Python's exact integer arithmetic on the float64 value (every FLOAT16 and FLOAT32
value is exact in float64), never with the library's or XLA's rounding."""

import math

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import (
    float_g,
    g64,
    int_g,
    is_int,
    scale_value,
    elementwise_vjp,
    read,
    wrap,
)

SB = {"scale_bias": (0.75, -0.5)}  # both exact in FLOAT16 too
SB_ATTRS = (Attrs(), Attrs(SB, half={**SB, "half": True}))


def _each(fn, g):
    """``fn`` on every element of a float64 array (NaN and +-inf passed through unchanged)."""
    g = np.asarray(g, np.float64)
    out = [v if not math.isfinite(v) else fn(v) for v in g.ravel().tolist()]
    return np.array(out, np.float64).reshape(g.shape)


# ---------------------------------------------------------------------------------------------
def _abs(v):
    return math.fabs(v)  # the sign bit cleared: fabs(-0.0) is +0.0


def element_wise_abs(x, scale_bias=None, half=False):
    # f(x) = abs(g(x)). Integers: exact, wrapped to the type (abs(INT_MIN) is INT_MIN).
    x_np = np.asarray(x)
    if is_int(x_np):
        return [wrap([abs(int(v)) for v in g.ravel()], x_np.dtype).reshape(x_np.shape)
                for g in int_g(x_np, scale_bias)]
    return [np.abs(g) for g in float_g(x_np, scale_bias, half)]


def abs_slope(x, scale_bias=None, half=False):
    # d/dg abs(g) = 1 for g > 0, -1 for g < 0, and 0 at the tie g = 0 (strict comparisons).
    g = g64(x, scale_bias)
    with np.errstate(invalid="ignore"):
        return scale_value(scale_bias) * ((g > 0).astype(np.float64) - (g < 0).astype(np.float64))


def _near_zero(x, scale_bias=None, half=False):
    return np.abs(g64(x, scale_bias)) < 1e-2


# ---------------------------------------------------------------------------------------------
def element_wise_sign(x, half=False):
    # f(x) = -1 if x < 0, 1 if x > 0, 0 otherwise (including -0, and NaN: both comparisons are
    # false). A FLOAT32 denormal is read as zero.
    x_np = np.asarray(x)
    if is_int(x_np):
        return [np.array([(int(v) > 0) - (int(v) < 0) for v in x_np.ravel()], dtype=object).reshape(x_np.shape)]
    g = read(x_np)
    with np.errstate(invalid="ignore"):
        return [(g > 0).astype(np.float64) - (g < 0).astype(np.float64)]


# ---------------------------------------------------------------------------------------------
def _ceil(v):
    return math.copysign(float(math.ceil(v)), v)  # the smallest integer >= v, with v's sign at 0


def _floor(v):
    return math.copysign(float(math.floor(v)), v)


def element_wise_ceil(x, scale_bias=None, half=False):
    return [_each(_ceil, g) for g in float_g(np.asarray(x), scale_bias, half)]


def element_wise_floor(x, scale_bias=None, half=False):
    return [_each(_floor, g) for g in float_g(np.asarray(x), scale_bias, half)]


def step_slope(x, scale_bias=None, half=False, mode=None):
    # A step function's derivative: 0 between its jumps (0 at them too, where it does not exist).
    return np.zeros(np.shape(x))


# ---------------------------------------------------------------------------------------------
# DML_ROUNDING_MODE (core/dml_rounding_mode.md), on |v| with v's sign put back (every mode is
# symmetric about zero, and a zero result keeps the input's sign).
def _halves_to_even(a):
    f = math.floor(a)
    frac = a - f  # exact: a and floor(a) share their high bits
    if frac > 0.5 or (frac == 0.5 and f % 2 == 1):
        f += 1
    return f


def _toward_zero(a):
    return math.floor(a)


def _halves_away(a):
    f = math.floor(a)
    return f + 1 if a - f >= 0.5 else f


MODES = {"HALVES_TO_NEAREST_EVEN": _halves_to_even, "TOWARD_ZERO": _toward_zero,
         "TOWARD_INFINITY": _halves_away}


def element_wise_round(x, mode="HALVES_TO_NEAREST_EVEN", half=False):
    rule = MODES[mode]
    return [_each(lambda v: math.copysign(float(rule(abs(v))), v), read(np.asarray(x)))]


def _round_attrs(dt):
    # One set per mode, each spelt another way the attribute accepts: the short name, the full
    # DirectML name, the integer value.
    return (Attrs({"rounding_mode": "HALVES_TO_NEAREST_EVEN"}, {"mode": "HALVES_TO_NEAREST_EVEN"}),
            Attrs({"rounding_mode": "DML_ROUNDING_MODE_TOWARD_ZERO"}, {"mode": "TOWARD_ZERO"}),
            Attrs({"rounding_mode": 2}, {"mode": "TOWARD_INFINITY"}))


# ---------------------------------------------------------------------------------------------
REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_ABS": Reference(
        element_wise_abs,
        attrs=SB_ATTRS,
        grad=elementwise_vjp(abs_slope),
        near_kink=_near_zero,
    ),
    "DML_OPERATOR_ELEMENT_WISE_SIGN": Reference(
        element_wise_sign,
        grad=elementwise_vjp(lambda x: np.zeros(np.shape(x))),
    ),
    "DML_OPERATOR_ELEMENT_WISE_CEIL": Reference(
        element_wise_ceil,
        attrs=SB_ATTRS,
        grad=elementwise_vjp(step_slope),
    ),
    "DML_OPERATOR_ELEMENT_WISE_FLOOR": Reference(
        element_wise_floor,
        attrs=SB_ATTRS,
        grad=elementwise_vjp(step_slope),
    ),
    "DML_OPERATOR_ELEMENT_WISE_ROUND": Reference(
        element_wise_round,
        attrs=_round_attrs,
        grad=elementwise_vjp(step_slope),
    ),
}
