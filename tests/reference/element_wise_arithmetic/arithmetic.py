"""float64 references for the element-wise arithmetic operators (sums, products, quotients,
moduli, identity, negation here; signs and rounding in rounding.py, clamps in clamp.py,
VALUE_SCALE_2D in value_scale.py), transcribed from the pages (dml_element_wise_*_operator_desc.md
in ../shared/spec/operators/) and docs/semantics.md.

Each value reference returns a list of acceptable results (float64, or exact Python ints as an
object array): one, or two where a ScaleBias multiply-add may be fused or not."""

import math

import numpy as np

from dmljax import FusedActivation
from tests.reference.activation import piecewise as activation
from tests.reference.element_wise_arithmetic._common import SB, _exact_ints
from tests.reference.record import Attrs, Reference
from tests.reference.rules import F32_TINY, elementwise_vjp, float_g, ftz, g64, int_g, is_int, read, scale_value, wrap


EXACT_SB = {"scale_bias": (0.5, 0.25)}


# ---------------------------------------------------------------------------------------------
def element_wise_multiply(a, b):
    # f(a, b) = a * b. Integer products wrap around (two's complement) in the tensor's type.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if is_int(a_np):
        return [wrap([int(x) * int(y) for x, y in zip(a_np.ravel(), b_np.ravel())], a_np.dtype).reshape(a_np.shape)]
    with np.errstate(over="ignore", invalid="ignore"):
        return [read(a_np) * read(b_np)]


# ---------------------------------------------------------------------------------------------
def _python_float_mod(a, b, flush=False):
    # Python's float %, from its definition: r = fmod(a, b); if r and sign(r) != sign(b): r += b;
    # a zero r takes the sign of b. Python raises for b == 0; DirectML's formula gives NaN there.
    # For FLOAT32 the remainder is a math result: a denormal one is flushed (docs/semantics.md#denormals).
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
    if is_int(a_np):
        # Python's int %, exact; DirectML leaves a zero divisor undefined: dmljax gives 0.
        out = [0 if int(y) == 0 else int(x) % int(y) for x, y in zip(a_np.ravel(), b_np.ravel())]
        return [np.array(out, dtype=object).reshape(a_np.shape)]
    fa, fb = read(a_np), read(b_np)
    flush = a_np.dtype == np.float32
    out = [_python_float_mod(x, y, flush) for x, y in zip(fa.ravel(), fb.ravel())]
    return [np.array(out, np.float64).reshape(fa.shape)]


def modulus_floor_slopes(a, b):
    # d/da (a - b * floor(a / b)) = 1; d/db = -floor(a / b) (floor is flat between its jumps);
    # NaN where the result is NaN (a zero divisor, an infinite dividend, a NaN operand).
    fa, fb = read(a), read(b)
    with np.errstate(all="ignore"):
        defined = np.isfinite(fa) & (np.abs(fb) > 0)
        # a / +-inf is a tiny number of a's sign over b's: its floor is -1 where they differ
        q = np.where(np.isinf(fb) & (fa != 0), np.where((fa < 0) != (fb < 0), -1.0, 0.0), np.floor(fa / fb))
        return np.where(defined, 1.0, np.nan), np.where(defined, -q, np.nan)


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
    if is_int(x_np):
        return int_g(x_np, scale_bias)
    return float_g(x_np, scale_bias, half)


# ---------------------------------------------------------------------------------------------
def element_wise_add(a, b):
    # f(a, b) = a + b. Integer sums wrap around (two's complement) in the tensor's type.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if is_int(a_np):
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
def element_wise_negate(x):
    # f(x) = -x. Integers wrap around (two's complement): the most negative value is its own
    # negation. Floats: math, so a FLOAT32 denormal input reads as (signed) zero.
    x_np = np.asarray(x)
    if is_int(x_np):
        return [wrap([-int(v) for v in x_np.ravel()], x_np.dtype).reshape(x_np.shape)]
    return [-read(x_np)]


def _trunc_div(x, y):
    # Integer division truncated toward zero, exactly ("the result is truncated").
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def element_wise_subtract(a, b):
    # f(a, b) = a - b. Integer differences wrap around (two's complement) in the tensor's type.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if is_int(a_np):
        return [wrap(_exact_ints(a_np, b_np, lambda x, y: x - y), a_np.dtype)]
    with np.errstate(over="ignore", invalid="ignore"):
        return [read(a_np) - read(b_np)]


def element_wise_divide(a, b):
    # f(a, b) = a / b. Integers: truncated; a zero divisor gives 0 (dmljax's choice; DirectML leaves
    # it undefined); INT_MIN / -1 wraps to INT_MIN. Floats: IEEE (x / +-0 = +-inf, 0/0 = NaN).
    a_np, b_np = np.asarray(a), np.asarray(b)
    if is_int(a_np):
        q = _exact_ints(a_np, b_np, lambda x, y: 0 if y == 0 else _trunc_div(x, y))
        return [wrap(q, a_np.dtype)]
    with np.errstate(all="ignore"):  # float64 division, then one rounding: innocuous for 2p + 2 bits
        return [read(a_np) / read(b_np)]


def divide_slopes(a, b):
    # d/da = 1 / b, d/db = -a / b^2 (b^2 cannot underflow in float64 for these types); NaN where
    # a / b is NaN.
    fa, fb = read(a), read(b)
    with np.errstate(all="ignore"):
        nan = np.isnan(fa / fb)
        return np.where(nan, np.nan, 1.0 / fb), np.where(nan, np.nan, -fa / (fb * fb))


def _divide_near_kink(a, b):
    return np.abs(read(b)) < 1e-3


def element_wise_recip(x, scale_bias=None, half=False):
    # f(x) = 1 / g(x): IEEE, 1 / +-0 = +-inf.
    with np.errstate(divide="ignore"):
        return [1.0 / g for g in float_g(np.asarray(x), scale_bias, half)]


def recip_slope(x, scale_bias=None, half=False):
    # d/dx = -Scale / g^2 at the g the forward pass computed (rounded once to FLOAT32, the
    # compute type); -inf at g = +-0, the limit from either side.
    g = ftz(g64(x, scale_bias).astype(np.float32), np.float32)
    with np.errstate(divide="ignore"):
        return -scale_value(scale_bias) / (g * g)


def _recip_near_kink(x, scale_bias=None, half=False):
    return np.abs(g64(x, scale_bias)) < 1e-3


def element_wise_difference_square(a, b):
    # f(a, b) = (a - b) * (a - b): the true value (the float64 difference of two FLOAT32s is exact
    # or nearly); integers wrap around in the tensor's type.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if is_int(a_np):
        return [wrap(_exact_ints(a_np, b_np, lambda x, y: (x - y) * (x - y)), a_np.dtype)]
    with np.errstate(over="ignore", invalid="ignore"):
        d = read(a_np) - read(b_np)
        return [d * d]


def difference_square_slopes(a, b):
    with np.errstate(over="ignore", invalid="ignore"):
        d = read(a) - read(b)
        return 2.0 * d, -2.0 * d


def element_wise_mean(a, b):
    # f(a, b) = (a + b) / 2. Integers: the exact mean truncated toward zero (the page is silent;
    # dmljax's choice, as DIVIDE truncates). Floats: the exact mean (float64 a + b of two FLOAT32s
    # or FLOAT16s is the correctly rounded sum, halving is exact), never overflowing.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if is_int(a_np):
        return [_exact_ints(a_np, b_np, lambda x, y: _trunc_div(x + y, 2))]
    with np.errstate(invalid="ignore"):
        return [(read(a_np) + read(b_np)) * 0.5]


def element_wise_modulus_truncate(a, b):
    # f(a, b) = a - b * trunc(a / b), C's % and fmod: the dividend's sign. Integers exact; a zero
    # divisor gives 0 (dmljax's choice). Floats: math.fmod (exact); NaN for a zero divisor or an
    # infinite dividend; a FLOAT32 denormal remainder is flushed, keeping its sign.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if is_int(a_np):
        return [_exact_ints(a_np, b_np, lambda x, y: 0 if y == 0 else x - y * _trunc_div(x, y))]
    fa, fb = read(a_np), read(b_np)
    flush = a_np.dtype == np.float32
    out = []
    for x, y in zip(fa.ravel(), fb.ravel()):
        if y == 0 or math.isnan(x) or math.isnan(y) or math.isinf(x):
            out.append(math.nan)
            continue
        r = math.fmod(x, y)
        out.append(math.copysign(0.0, r) if flush and abs(r) < F32_TINY else r)
    return [np.array(out, np.float64).reshape(fa.shape)]


def modulus_truncate_slopes(a, b):
    # d/da = 1, d/db = -trunc(a / b); NaN where the result is (b = 0 or NaN, a infinite or NaN).
    fa, fb = read(a), read(b)
    with np.errstate(all="ignore"):
        defined = np.isfinite(fa) & (np.abs(fb) > 0)
        return np.where(defined, 1.0, np.nan), np.where(defined, -np.trunc(fa / fb), np.nan)


# ---------------------------------------------------------------------------------------------
REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_MULTIPLY": Reference(
        element_wise_multiply,
        grad=elementwise_vjp(lambda a, b: (read(b), read(a))),
    ),
    "DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR": Reference(
        element_wise_modulus_floor,
        grad=elementwise_vjp(modulus_floor_slopes),
        near_kink=_modulus_near_jump,
    ),
    "DML_OPERATOR_ELEMENT_WISE_IDENTITY": Reference(
        element_wise_identity,
        attrs=(Attrs(selection=True), Attrs(SB, half={**SB, "half": True})),
        grad=elementwise_vjp(lambda x, scale_bias=None, half=False: np.full(np.shape(x), scale_value(scale_bias))),
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
    "DML_OPERATOR_ELEMENT_WISE_NEGATE": Reference(
        element_wise_negate,
        grad=elementwise_vjp(lambda x: np.full(np.shape(x), -1.0)),
    ),
    "DML_OPERATOR_ELEMENT_WISE_SUBTRACT": Reference(
        element_wise_subtract,
        grad=elementwise_vjp(lambda a, b: (np.ones(np.shape(a)), np.full(np.shape(b), -1.0))),
    ),
    "DML_OPERATOR_ELEMENT_WISE_DIVIDE": Reference(
        element_wise_divide,
        grad=elementwise_vjp(divide_slopes),
        near_kink=_divide_near_kink,
    ),
    "DML_OPERATOR_ELEMENT_WISE_RECIP": Reference(
        element_wise_recip,
        # Scale 0.5 is exact: the fused and unfused g(x) are one value, where the gradient is taken.
        attrs=(Attrs(), Attrs(EXACT_SB, half={**EXACT_SB, "half": True})),
        grad=elementwise_vjp(recip_slope),
        near_kink=_recip_near_kink,
    ),
    "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE": Reference(
        element_wise_difference_square,
        grad=elementwise_vjp(difference_square_slopes),
    ),
    "DML_OPERATOR_ELEMENT_WISE_MEAN": Reference(
        element_wise_mean,
        grad=elementwise_vjp(lambda a, b: (np.full(np.shape(a), 0.5), np.full(np.shape(b), 0.5))),
    ),
    "DML_OPERATOR_ELEMENT_WISE_MODULUS_TRUNCATE": Reference(
        element_wise_modulus_truncate,
        grad=elementwise_vjp(modulus_truncate_slopes),
        near_kink=_modulus_near_jump,
    ),
}
