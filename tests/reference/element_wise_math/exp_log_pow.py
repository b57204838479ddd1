"""float64 references for the element-wise powers, exponentials and logarithms (EXP, LOG, POW,
CONSTANT_POW, SQRT, ERF), transcribed from the pages (dml_element_wise_*_operator_desc.md in
../shared/spec/operators/) and docs/semantics.md; part of the element_wise_math family's references
(trigonometric and hyperbolic functions in trigonometry.py)."""

import math

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, elementwise_vjp, ftz, read, scale_bias_candidates, wrap, sb_float


# ---------------------------------------------------------------------------------------------
def _pow(g, e):
    # pow(x, Exponent): "Negative bases are supported for integral exponents, otherwise this
    # operator returns NaN." Elsewhere C99 (Annex F) special values, which numpy's float64 power
    # follows: pow(x, 0) = 1, pow(1, y) = 1, pow(+-0, y < 0 odd) = +-inf, pow(-1, +-inf) = 1, ...
    with np.errstate(all="ignore"):
        out = np.power(g, e)
    if math.isnan(e) or not (math.isinf(e) or e == math.floor(e)):  # non-integral: negative base -> NaN
        out = np.where(g < 0, np.nan, out)
    return out


def element_wise_constant_pow(x, exponent, scale_bias=None):
    x_np = np.asarray(x)
    e = c_float(exponent)
    return [_pow(g, e) for g in scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)]


def constant_pow_slope(x, exponent, scale_bias=None):
    # d/dx pow(g(x), Exponent) = Exponent * pow(g(x), Exponent - 1) * Scale, with the same pow
    # rules; exactly 0 for Exponent 0.
    x_np = np.asarray(x)
    e = c_float(exponent)
    s = 1.0 if scale_bias is None else sb_float(scale_bias[0])
    g = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)[0]
    if e == 0:
        return np.zeros(g.shape)
    with np.errstate(all="ignore"):
        return e * _pow(g, e - 1.0) * s


def _pow_near_kink(x, exponent, scale_bias=None):
    # pow and its derivative are steep (or singular) next to g(x) = 0.
    x_np = np.asarray(x)
    g = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)[0]
    return np.abs(g) < 1e-2


# ---------------------------------------------------------------------------------------------
# Square root, exponential, logarithm, erf: f(g) with g = x * Scale + Bias (fused or not), in
# float64; the derivative f'(g) * Scale at g, as the family's rules say: the limit from the
# defined side at a singular point, NaN outside the domain.

def _g(x, scale_bias, half=False):
    """g(x) candidates: fused and unfused in the compute type; with ``half`` (FLOAT16 computed in
    FLOAT16) also the multiply-add in FLOAT16, fused or not, Scale and Bias rounded to FLOAT16."""
    x_np = np.asarray(x)
    cands = scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)
    if scale_bias is not None:
        # The fused candidate rounded once to the compute type (FLOAT32 for FLOAT32 and FLOAT16
        # tensors), which is where DirectML evaluates f: exp and erf amplify g's rounding.
        with np.errstate(all="ignore"):
            cands.insert(0, ftz(cands[0].astype(np.float32).astype(np.float64), np.float32))
    if half and scale_bias is not None and x_np.dtype == np.float16:
        s, b = np.float16(sb_float(scale_bias[0])), np.float16(sb_float(scale_bias[1]))
        with np.errstate(all="ignore"):
            x64 = x_np.astype(np.float64)
            cands.append((x64 * float(s) + float(b)).astype(np.float16).astype(np.float64))
            cands.append(((x_np * s).astype(np.float16) + b).astype(np.float16).astype(np.float64))
    return cands


def _unary(f):
    def reference(x, scale_bias=None, half=False):
        with np.errstate(all="ignore"):
            return [f(g) for g in _g(x, scale_bias, half)]
    return reference


def _slope(df):
    def slope(x, scale_bias=None, half=False):
        s = 1.0 if scale_bias is None else sb_float(scale_bias[0])
        with np.errstate(all="ignore"):
            return df(_g(x, scale_bias)[0]) * s
    return slope


def _sqrt(g):
    return np.sqrt(g)  # IEEE: sqrt(-0) = -0, NaN below 0


def _sqrt_slope(g):
    # 1 / (2 sqrt(g)); +inf at +-0 (the limit from g > 0); NaN for g < 0.
    return np.where(g == 0, np.inf, 0.5 / np.sqrt(np.where(g == 0, 1.0, g)))


def _log(g):
    # "If x is negative, then this function returns indefinite. If x is 0, then this function
    # returns -INF" (+-0 both).
    return np.where(g == 0, -np.inf, np.log(np.where(g == 0, 1.0, g)))


def _log_slope(g):
    return np.where(g == 0, np.inf, np.where(g < 0, np.nan, 1.0 / np.where(g == 0, 1.0, g)))


def _erf(g):
    return np.array([math.erf(v) for v in np.ravel(g).tolist()]).reshape(np.shape(g))


def _erf_slope(g):
    return 2.0 / math.sqrt(math.pi) * np.exp(-(g * g))


def _near_zero(x, scale_bias=None, half=False):
    # 1/g and 1/sqrt(g) are steep next to g = 0.
    return np.abs(_g(x, scale_bias)[0]) < 1e-2


POSITIVE_SB = {"scale_bias": (0.5, 0.25)}  # keeps a positive input positive
ANY_SB = {"scale_bias": (0.75, -0.5)}


def _sb(kwargs):
    return Attrs(kwargs, half={**kwargs, "half": True})


ROOTS_EXP_LOG = {
    "DML_OPERATOR_ELEMENT_WISE_SQRT": Reference(
        _unary(_sqrt), attrs=(Attrs(), _sb(POSITIVE_SB)), roles={"InputTensor": "positive"},
        grad=elementwise_vjp(_slope(_sqrt_slope)), near_kink=_near_zero,
    ),
    "DML_OPERATOR_ELEMENT_WISE_EXP": Reference(
        _unary(np.exp), attrs=(Attrs(), _sb(ANY_SB)), grad=elementwise_vjp(_slope(np.exp)),
    ),
    "DML_OPERATOR_ELEMENT_WISE_LOG": Reference(
        _unary(_log), attrs=(Attrs(), _sb(POSITIVE_SB)), roles={"InputTensor": "positive"},
        grad=elementwise_vjp(_slope(_log_slope)), near_kink=_near_zero,
    ),
    "DML_OPERATOR_ELEMENT_WISE_ERF": Reference(
        _unary(_erf), attrs=(Attrs(), _sb(ANY_SB)), grad=elementwise_vjp(_slope(_erf_slope)),
    ),
}

# ---------------------------------------------------------------------------------------------
# POW with a tensor exponent. Float base: C99 pow (numpy's float64 power) on the exact exponent
# value (an integer exponent's float64 value is exact, so its parity is too), with the page's
# rule: a negative base with a non-integral exponent is NaN. Integer base and exponent: exact
# Python ints, wrapped to the base's type. Integer base, float exponent: computed in FLOAT32
# (the base rounded to FLOAT32, the true pow rounded to FLOAT32, within the FLOAT32 budget),
# then truncated toward zero, saturated, NaN to 0.

def _pow_tensor(g, e):
    g, e = np.broadcast_arrays(np.asarray(g, np.float64), np.asarray(e, np.float64))
    with np.errstate(all="ignore"):
        out = np.power(g, e)
        integral = np.isinf(e) | (np.floor(e) == e)  # C99: infinities are even integers
        return np.where((g < 0) & ~integral, np.nan, out)


def _is_int(a):
    return np.issubdtype(np.asarray(a).dtype, np.integer)


def _int_base(x_np, scale_bias):
    """An integer base after ScaleBias: computed in FLOAT32, truncated toward zero, saturated,
    NaN to 0 (the family's rule for integer tensors), as exact ints."""
    info = np.iinfo(x_np.dtype)
    if scale_bias is None:
        return [np.array([int(v) for v in x_np.ravel()], dtype=object).reshape(x_np.shape)]
    outs = []
    xf = x_np.astype(np.float32).astype(np.float64)
    for g in scale_bias_candidates(xf, scale_bias, np.float32):
        with np.errstate(all="ignore"):
            g = g.astype(np.float32).astype(np.float64)
        outs.append(np.array([_trunc_sat(v, info) for v in g.ravel()], dtype=object).reshape(x_np.shape))
    return outs


def _trunc_sat(v, info):
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return int(info.max) if v > 0 else int(info.min)
    return min(max(math.trunc(v), int(info.min)), int(info.max))


def _int_pow(b, e, dtype):
    bits = np.dtype(dtype).itemsize * 8
    if e >= 0:
        return pow(b, e, 1 << bits)  # wrapped below
    if b == 1:
        return 1
    if b == -1:
        return -1 if e % 2 else 1
    return 0  # |b| > 1: 1 / b^|e| truncates to 0; b = 0: the family's division-by-zero choice


def element_wise_pow(x, e, scale_bias=None, half=False):
    x_np, e_np = np.asarray(x), np.asarray(e)
    if _is_int(x_np):
        info = np.iinfo(x_np.dtype)
        outs = []
        for b in _int_base(x_np, scale_bias):
            if _is_int(e_np):
                vals = [_int_pow(int(bv), int(ev), x_np.dtype) for bv, ev in zip(b.ravel(), e_np.ravel())]
                outs.append(wrap(np.array(vals, dtype=object).reshape(x_np.shape), x_np.dtype))
                continue
            gf = np.array([float(np.float32(int(v))) for v in b.ravel()]).reshape(x_np.shape)
            r = _pow_tensor(gf, read(e_np)).astype(np.float32)
            # the FLOAT32 pow may be any value within 2 ULP of the true one before truncation
            cands = [r]
            for direction in (np.inf, -np.inf):
                c = r
                for _ in range(2):
                    c = np.nextafter(c, np.float32(direction))
                    cands.append(c)
            for c in cands:
                vals = [_trunc_sat(float(v), info) for v in c.astype(np.float64).ravel()]
                outs.append(np.array(vals, dtype=object).reshape(x_np.shape))
        return outs
    ev = e_np.astype(np.float64) if _is_int(e_np) else read(e_np)
    return [_pow_tensor(g, ev) for g in _g(x_np, scale_bias, half)]


def pow_slopes(x, e, scale_bias=None, half=False):
    # d/dx = e * pow(g, e - 1) * Scale (exactly 0 for e = 0); d/de = pow(g, e) * ln|g|, exactly 0
    # where g = 0 or pow(g, e) = 0; an integer exponent has no gradient.
    x_np, e_np = np.asarray(x), np.asarray(e)
    ev = e_np.astype(np.float64) if _is_int(e_np) else read(e_np)
    s = 1.0 if scale_bias is None else sb_float(scale_bias[0])
    g = _g(x_np, scale_bias)[0]
    with np.errstate(all="ignore"):
        dx = np.where(ev == 0, 0.0, ev * _pow_tensor(g, ev - 1.0) * s)
        y = _pow_tensor(g, ev)
        de = np.where((g == 0) | (y == 0), 0.0, y * np.log(np.abs(np.where(g == 0, 1.0, g))))
    return dx, (None if _is_int(e_np) else de)


def _pow_tensor_near_kink(x, e, scale_bias=None, half=False):
    return np.abs(_g(x, scale_bias)[0]) < 1e-2


POWERS = {
    "DML_OPERATOR_ELEMENT_WISE_POW": Reference(
        element_wise_pow,
        attrs=(Attrs(), _sb({"scale_bias": (0.5, 0.25)})),
        roles={"InputTensor": "positive"},
        grad=elementwise_vjp(pow_slopes),
        near_kink=_pow_tensor_near_kink,
    ),
    "DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW": Reference(
        element_wise_constant_pow,
        attrs=(
            Attrs({"exponent": 3}, known_issues={"eager_equals_jit": (
                "XLA's algebraic simplifier turns pow(x, 3.0) with a constant exponent into "
                "x * x * x when the operator is compiled, while op by op (jax.disable_jit) pow "
                "runs: up to 1 FLOAT32 ULP apart, each within the budget (reported)")}),
            Attrs({"exponent": 0.5, "scale_bias": (2.0, 1.0)}),
            Attrs({"exponent": -7.4}),  # Exponent - 1 is not exact in float32
        ),
        grad=elementwise_vjp(constant_pow_slope),
        near_kink=_pow_near_kink,
    ),
}

REFERENCES = {**ROOTS_EXP_LOG, **POWERS}
