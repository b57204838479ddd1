"""float64 references for the element-wise clamps (THRESHOLD, CLIP, CLIP1, MAX, MIN and the
gradients CLIP_GRAD, CLIP_GRAD1), transcribed from the pages (dml_element_wise_*_operator_desc.md
in ../shared/spec/operators/, and CLIP_GRAD / CLIP_GRAD1 for the gradients) and docs/semantics.md; part
of the element_wise_arithmetic family's references.

Each value reference returns a list of acceptable results (float64, or exact Python ints as an
object array): one, or two where a ScaleBias multiply-add may be fused or not."""

import math

import numpy as np

from tests.reference.element_wise_arithmetic._common import SB, _exact_ints
from tests.reference.record import Attrs, Reference
from tests.reference.rules import (
    c_float, elementwise_vjp, float_g, g64, int_attr, int_g, is_int, max_num, min_num, read,
    scale_bias_candidates, scale_value,
)


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
    if is_int(x_np):
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
    return [_max_num_f(g, c_float(min)) for g in float_g(x_np, scale_bias, half)]


def threshold_slope(x, min, scale_bias=None, half=False):
    # The gradient text: Scale where g(x) > Min (nothing at a tie or for NaN); a NaN Min passes
    # everything, as the forward pass returns g(x) then.
    g = g64(x, scale_bias)
    m = c_float(min)
    with np.errstate(invalid="ignore"):
        passes = np.ones(g.shape, bool) if math.isnan(m) else g > m
    return np.where(passes, scale_value(scale_bias), 0.0)


def _threshold_near_kink(x, min, scale_bias=None, half=False):
    return np.abs(g64(x, scale_bias) - c_float(min)) < 1e-2


# ---------------------------------------------------------------------------------------------
def element_wise_clip(x, min, max, scale_bias=None, half=False):
    # f(x) = min(Max, max(Min, x)); Min and Max are FLOATs (float32), truncated and saturated on
    # integer tensors.
    x_np = np.asarray(x)
    if is_int(x_np):
        lo, hi = int_attr(min, x_np.dtype), int_attr(max, x_np.dtype)
        return [min_num(max_num(g, lo), hi) for g in int_g(x_np, scale_bias)]
    lo, hi = c_float(min), c_float(max)  # FLOAT16 is compared in FLOAT32, with these bounds
    return [min_num(max_num(g, lo), hi) for g in float_g(x_np, scale_bias, half)]


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
    if is_int(x_np):
        return [max_num(min_num(g, hi), lo) for g in int_g(x_np, scale_bias)]
    return [max_num(min_num(g, hi), lo) for g in float_g(x_np, scale_bias, half)]


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
        return clip_grad(g64(x, scale_bias), lo, hi, scale_value(scale_bias))
    return slope


def _clip_near_kink(which):
    def near(x, min, max, scale_bias=None, half=False):
        lo, hi = _clip_bounds(x, min, max, which)
        g = g64(x, scale_bias)
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


def _max_min_ref(larger):
    # Direct3D's max/min (IEEE maxNum/minNum): one NaN operand gives the other one, two give NaN.
    # Ties give either operand (equal numbers; the sign of a zero is checked by hand in the tests).
    def fn(a, b):
        a_np, b_np = np.asarray(a), np.asarray(b)
        if is_int(a_np):
            return [_exact_ints(a_np, b_np, max if larger else min)]
        fa, fb = read(a_np), read(b_np)
        with np.errstate(invalid="ignore"):
            pick_b = (fb > fa) if larger else (fb < fa)
        pick_b = pick_b | (np.isnan(fa) & ~np.isnan(fb))
        return [np.where(pick_b, fb, fa)]
    return fn


def _max_min_slopes_ref(larger):
    # The selected operand gets the gradient: B only where it wins strictly or A alone is NaN.
    def slopes(a, b):
        fa, fb = read(a), read(b)
        with np.errstate(invalid="ignore"):
            pick_b = ((fb > fa) if larger else (fb < fa)) | (np.isnan(fa) & ~np.isnan(fb))
        return np.where(pick_b, 0.0, 1.0), np.where(pick_b, 1.0, 0.0)
    return slopes


def _max_min_near_kink(a, b):
    return np.abs(read(a) - read(b)) < 1e-2


def _clip_grad_ref(which):
    # CLIP_GRAD / CLIP_GRAD1: "if x <= Min then 0; if x >= Max then 0; else gradient". x is read
    # as math reads it (FLOAT32 denormals flushed); the gradient passes with its bits (selection).
    def fn(x, gradient, min, max, half=False):
        x_np, dy = np.asarray(x), np.asarray(gradient)
        if is_int(x_np):
            if which == "CLIP":
                lo, hi = int_attr(min, x_np.dtype), int_attr(max, x_np.dtype)
            else:
                lo, hi = union_value(min, x_np.dtype), union_value(max, x_np.dtype)
            passes = np.array([lo < int(v) < hi for v in x_np.ravel()], bool).reshape(x_np.shape)
        else:
            lo, hi = _clip_bounds(x_np, min, max, which)
            passes = clip_grad(read(x_np), lo, hi) != 0
        return [np.where(passes, dy, np.zeros_like(dy))]
    return fn


def _clip_grad_slopes(which):
    # Second order: d/dgradient is the mask, d/dx is 0 (piecewise constant in x).
    def slopes(x, gradient, min, max, half=False):
        return np.zeros(np.shape(x)), (_clip_grad_ref(which)(x, np.ones(np.shape(x)), min, max)[0] != 0) * 1.0
    return slopes


def _clip_grad1_attrs(dt):
    if dt.is_float:
        return (Attrs({"min": -1.25, "max": 2.5}),)
    return (Attrs({"min": -5, "max": 100} if dt.is_signed else {"min": 3, "max": 100}),)


# ---------------------------------------------------------------------------------------------
REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_THRESHOLD": Reference(
        element_wise_threshold,
        attrs=(Attrs({"min": 0.5}), Attrs({"min": -1.25, **SB}, half={"min": -1.25, **SB, "half": True})),
        grad=elementwise_vjp(threshold_slope),
        near_kink=_threshold_near_kink,
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
    "DML_OPERATOR_ELEMENT_WISE_MAX": Reference(
        _max_min_ref(True),
        grad=elementwise_vjp(_max_min_slopes_ref(True)),
        near_kink=_max_min_near_kink,
    ),
    "DML_OPERATOR_ELEMENT_WISE_MIN": Reference(
        _max_min_ref(False),
        grad=elementwise_vjp(_max_min_slopes_ref(False)),
        near_kink=_max_min_near_kink,
    ),
    "DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD": Reference(
        _clip_grad_ref("CLIP"),
        attrs=(Attrs({"min": -1.25, "max": 2.5}),),
        selection=True,
        grad=elementwise_vjp(_clip_grad_slopes("CLIP")),
    ),
    "DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1": Reference(
        _clip_grad_ref("CLIP1"),
        attrs=_clip_grad1_attrs,
        selection=True,
        grad=elementwise_vjp(_clip_grad_slopes("CLIP1")),
    ),
}
