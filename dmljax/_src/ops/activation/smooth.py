"""Activation operators SIGMOID, TANH, SCALED_TANH, SOFTPLUS, PARAMETRIC_SOFTPLUS, CELU: each
page's record, with its formula right below it.

Every formula is stable over the whole float range: exp only ever sees a non-positive argument
(or, for CELU with a negative Alpha, one whose overflow is the true value's), so nothing
overflows where the result is finite, and no gradient is NaN where the value is finite.

Where an attribute multiplies the input (SOFTPLUS's Steepness * x, PARAMETRIC_SOFTPLUS's and
SCALED_TANH's Beta * x, CELU's x / Alpha) and the function amplifies that product's rounding
error (exp(t) far in a tail has a relative error of |t| times t's), FLOAT32 tensors carry the
product's exact rounding error (``_two_product``, Dekker's error-free product) into the result;
for a power-of-two attribute the product is exact and nothing is added.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.errors import Violation
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.numerics import float32_as
from dmljax._src.op import operator
from dmljax._src.ops.element_wise_math.trigonometry import _sech2, _tanh_f32, _xla_suffices
from dmljax._src.ops.factories import activation_op, elementwise
from dmljax._src.spec import ParamSpec, SilentChoice

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def _c(value, like):
    """A FLOAT attribute (a float32 value) or constant as a scalar of ``like``'s dtype."""
    return float32_as(value, like.dtype)


def _is_power_of_two(c: float) -> bool:
    """Whether c * x is exact for every float x (barring overflow and underflow)."""
    return math.isfinite(c) and c != 0 and math.frexp(abs(c))[0] == 0.5


def _split_f32(x):
    """x = hi + lo exactly, hi and lo of at most 12 significant bits each (hi: x's top 12 bits
    by masking, so no rounding mode or FMA contraction can change it)."""
    hi = lax.bitcast_convert_type(lax.bitcast_convert_type(x, np.uint32) & np.uint32(0xFFFFF000), np.float32)
    return hi, x - hi


def _two_product(c: float, x, tensor_dtype, residual: float = 0.0):
    """(t, e) with t = fl(c * x) and, for a FLOAT32 tensor, t + e = c * x exactly (Dekker: every
    partial product of the 12-bit halves is exact, so contraction into FMAs changes nothing);
    with ``residual`` (a constant's own rounding: the product wanted is (c + residual) * x),
    e also holds residual * x. e is None where t is exact (c a power of two or 0) or where t's
    error does not matter (a FLOAT16 tensor computed in FLOAT32: 2^-24 |t| is far below
    FLOAT16's half ULP for any |t| where the result is not already zero). e is 0 where |t| >=
    2^100 (the tails are flat there) and for +-inf and NaN."""
    t = _c(c, x) * x
    exact = c == 0 or _is_power_of_two(c) or not math.isfinite(c)
    if np.dtype(tensor_dtype) != np.float32 or x.dtype != np.float32 or (exact and residual == 0):
        return t, None
    e = jnp.zeros_like(t)
    if not exact:
        c_hi = float(np.asarray(np.asarray(c, np.float32).view(np.uint32) & np.uint32(0xFFFFF000)).view(np.float32))
        c_lo = float(np.float32(c) - np.float32(c_hi))
        x_hi, x_lo = _split_f32(x)
        e = (_c(c_hi, x) * x_hi - t) + _c(c_hi, x) * x_lo
        if c_lo != 0:
            e = (e + _c(c_lo, x) * x_hi) + _c(c_lo, x) * x_lo
    if residual != 0:
        e = e + _c(residual, x) * x
    return t, jnp.where(jnp.abs(t) < _c(2.0**100, x), e, jnp.zeros_like(e))


def _signed(e, t):
    """sign(t) * e: how the rounding error e of t moves |t|."""
    return jnp.where(t < 0, -e, e)


def _scaled_input(c: float, x):
    """c * x as the product that a constant c gives at x = +-inf: a zero c (with which f is a
    constant function of x) gives 0 there, not 0 * inf = NaN (the limit)."""
    if c == 0:
        x = jnp.where(jnp.isinf(x), jnp.sign(x), x)
    return x


def _steepness_rules(tensors, attrs, level=None):
    """SOFTPLUS's Steepness: "This value cannot be less than 1" until DML_FEATURE_LEVEL_6_4
    ("Updated DML_OPERATOR_ACTIVATION_SOFTPLUS to allow Steepness < 1", dml-feature-level-
    history.md)."""
    s = attrs.get("Steepness")
    if s is None or level is None or level >= FeatureLevel.FL_6_4 or s >= 1:
        return []
    return [Violation("Steepness", "steepness", f"is {s!r}", f"cannot be less than 1 at {level.dml_name}",
                      "Steepness < 1 is allowed from DML_FEATURE_LEVEL_6_4: pass feature_level='6.4' or newer")]


# --------------------------------------------------------------------------------------------
ACTIVATION_SIGMOID = activation_op(
    "SIGMOID",
    summary=("Performs the sigmoid function on every element in InputTensor, placing the result "
             "into the corresponding element of OutputTensor."),
    formula="f(x) = 1 / (1 + exp(-x))",
    ulp={F32: 4, F16: 1},
    ulp_half=2,
    gradient=("dX = f(x) * (1 - f(x)) * dY, computed as e / (1 + e)^2 with e = exp(-|x|) <= 1: "
              "accurate in both tails (1 - f(x) would cancel for large x), 0 at +-inf, never "
              "NaN for a number."),
    notes=("Evaluated as 1 / (1 + e) for x >= 0 and e / (1 + e) otherwise, e = exp(-|x|): exp "
           "never overflows, so f(-inf) = 0, f(+inf) = 1, f(-0) = 0.5, and large negative x "
           "keep their relative accuracy (down to FLOAT32's normal range; below it the result "
           "is a denormal and flushed). Fusable (dmljax.FusedActivation)."),
)


def _sigmoid(x):
    e = jnp.exp(-jnp.abs(x))  # in [0, 1]
    return jnp.where(x >= 0, jnp.ones_like(x), e) / (_c(1.0, x) + e)


def _sigmoid_slope(x):
    e = jnp.exp(-jnp.abs(x))
    d = _c(1.0, x) + e
    return e / (d * d)


@operator(ACTIVATION_SIGMOID)
def activation_sigmoid(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_sigmoid(np.array([-1.0, 0.0, 2.0, np.inf], np.float32))
        Array([0.26894143, 0.5       , 0.880797  , 1.        ], dtype=float32)
    """
    # every result is a quotient: the CPU's processor flushes it (float_result)
    return elementwise(_sigmoid, input, half=allow_half_precision_computation, slopes=_sigmoid_slope,
                       float_reads=True, float_result=True)


# --------------------------------------------------------------------------------------------
ACTIVATION_TANH = activation_op(
    "TANH",
    summary=("Performs a hyperbolic tangent activation function on every element in InputTensor, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(x) = (1 - exp(-2 * x)) / (1 + exp(-2 * x)).",
    ulp={F32: 6, F16: 1},
    ulp_half=4,
    gradient=("dX = (1 - f(x)^2) * dY, computed as sech(x)^2 = 4e / (1 + e)^2 with e = "
              "exp(-2|x|) (ELEMENT_WISE_TANH's rule): accurate where tanh is near +-1, 0 (not "
              "NaN) far out and at +-inf."),
    notes=("The page's expression is tanh(x); taken literally it overflows (exp(-2x) for x < "
           "-44.4 in FLOAT32 gives inf / inf = NaN), so dmljax evaluates tanh itself: "
           "ELEMENT_WISE_TANH's formula without a ScaleBias, bit for bit the same result "
           "(-expm1(-2|x|) / (2 + expm1(-2|x|)) signed by x; FLOAT16 computed in FLOAT32, and FLOAT32 "
           "on the CPU and on CUDA, use XLA's tanh). tanh(+-inf) = +-1, tanh(-0) = -0. Fusable (dmljax.FusedActivation)."),
    silent=(
        SilentChoice(
            "ACTIVATION_TANH",
            "ELEMENT_WISE_TANH's formula, bit for bit (value, gradient, half precision)",
            "The page's (e^x - e^-x)/(e^x + e^-x) taken literally is inf/inf = NaN beyond |x| ≈ 44."),
    ),
)


@operator(ACTIVATION_TANH)
def activation_tanh(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_tanh(np.array([0.5, -np.inf, -0.0, 20.0], np.float32))
        Array([ 0.46211717, -1.        , -0.        ,  1.        ], dtype=float32)
    """
    # The very call ELEMENT_WISE_TANH makes without a ScaleBias: the two agree bit for bit.
    fast = _xla_suffices(input, allow_half_precision_computation)
    return elementwise(jnp.tanh if fast else _tanh_f32, input, half=allow_half_precision_computation,
                       slopes=_sech2,
                       float_reads=True)


# --------------------------------------------------------------------------------------------
_LIFT_FROM = 64.0
"""|t| from which exp(-|t|) < 1.7e-28: in FLOAT32, 1 + u = 1 and log1p(u) = u there."""


def _exp_tail(t, e, k: float, tensor_dtype):
    """(u, big, ku): u = exp(-|t + e|) (e: t's rounding error, or None), one exp of a
    non-positive argument; and, where a static factor |k| > 1 could lift a FLOAT32 denormal u
    back above 2^-126 (which XLA's CPU backend would have flushed), ``big`` (|t| >= 64) and
    k * u computed there as (k * v) * v, v = exp(-|t| / 2) (the same one exp: its argument is
    halved there, and u is then v, good only where u no longer counts: 1 + u = 1 and log1p(u)
    = u). big and ku are None where no lifting is needed (|k| <= 1, or not a FLOAT32 tensor)."""
    a = jnp.abs(t)
    corr = None if e is None else _c(1.0, t) - _signed(e, t)  # exp(-|t + e|) = exp(-|t|) * corr
    if abs(k) <= 1 or np.dtype(tensor_dtype) != np.float32 or t.dtype != np.float32:
        u = jnp.exp(-a)
        return (u if corr is None else u * corr), None, None
    big = a >= _c(_LIFT_FROM, t)
    w = jnp.exp(-jnp.where(big, a * _c(0.5, t), a))
    ku = (_c(k, t) * w) * w
    if corr is None:
        return w, big, ku
    return w * corr, big, ku * corr


def _softplus_slope(t, e, k: float, tensor_dtype):
    """k * sigmoid(t + e), as k / (1 + u) or k * u / (1 + u) with u = exp(-|t + e|) <= 1: never
    NaN for a number (``_exp_tail`` keeps k * u normal where it is)."""
    u, big, ku = _exp_tail(t, e, k, tensor_dtype)
    kc = _c(k, t)
    out = jnp.where(t >= 0, jnp.full_like(u, kc), kc * u) / (_c(1.0, t) + u)
    return out if big is None else jnp.where(big & (t < 0), ku, out)


ACTIVATION_SOFTPLUS = activation_op(
    "SOFTPLUS",
    summary=("Performs a parametric softplus activation function on every element in InputTensor, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(x) = ln(1 + exp(Steepness * x)) / Steepness",
    params=(ParamSpec("Steepness", "FLOAT", default=1.0,
                      doc=("The steepness value. A typical default for this value is 1.0. This "
                           "value cannot be less than 1 (until DML_FEATURE_LEVEL_6_4, which "
                           "allows Steepness < 1).")),),
    ulp={F32: 4, F16: 1},
    ulp_half=2,
    gradient=("dX = sigmoid(Steepness * x) * dY, computed from e = exp(-|Steepness * x|) <= 1: "
              "never NaN for a number, 1 or 0 (the limits) at +-inf."),
    notes=("Evaluated as x' + ln(1 + exp(-|Steepness * x|)) / Steepness, where x' is x where "
           "Steepness * x > 0 and 0 elsewhere (the exact equal of max(Steepness * x, 0) / "
           "Steepness): exp never overflows, so f(x) = x for large x in every type, f(+inf) = "
           "+inf, f(-inf) = 0 (mirrored for a negative Steepness), and no precision is lost to "
           "1 + exp(...) where f is small. A Steepness that is not a power of two carries the "
           "product's rounding error into exp for FLOAT32 tensors (Dekker's exact product), so "
           "the budget holds in the far negative tail too (without it: 64 ULP measured at "
           "Steepness 1.7). Other than 1, the division by Steepness is a multiplication by 1 / "
           "Steepness (rounded once; XLA makes one of a division by a constant anyway), and x' + "
           "L * (1 / Steepness) a multiply-add that a backend may fuse into one FMA or not. The "
           "page says that Steepness 'cannot be less than 1', and DML_FEATURE_LEVEL_6_4 'allow[s] "
           "Steepness < 1' (the feature level history): below 6.4 a Steepness under 1 (or NaN) is "
           "a ValidationError. Steepness = +-0 (6.4 and up) divides by zero: f is +-inf for "
           "every x but NaN (ln(2) / +-0, the formula's value and its limit for finite x, taken "
           "at +-inf too, where 0 * inf would make it NaN), its gradient sigmoid(0) = 0.5 (the "
           "formula's derivative, sigmoid(Steepness * x), at Steepness = 0). A negative "
           "Steepness follows the formula (f(x) = -ln(1 + exp(|Steepness| * -x)) / |Steepness| "
           "<= 0). Where exp(-|Steepness * x|) is a FLOAT32 denormal but |1 / Steepness| > 1 "
           "brings f back above 2^-126, f is computed as (v / Steepness) * v, v = "
           "exp(-|Steepness * x| / 2), so that no backend's flushing of intermediate denormals "
           "(XLA's CPU backend flushes them) loses it. Fusable (dmljax.FusedActivation)."),
    extra_checks=(_steepness_rules,),
    silent=(
        SilentChoice(
            "SOFTPLUS's Steepness < 1",
            "ValidationError before DML_FEATURE_LEVEL_6_4, allowed from it (fused into ADD1 too)",
            "The page says \"cannot be less than 1\"; dml-feature-level-history.md: 6.4 \"allow[s] Steepness < "
            "1\"."),
        SilentChoice(
            "SOFTPLUS with Steepness ±0 (6.4 and up)",
            "±inf for every number x (NaN for NaN); gradient 0.5",
            "ln(2) / ±0, the formula's value and its limit for finite x."),
        SilentChoice(
            "SOFTPLUS / PARAMETRIC_SOFTPLUS / SIGMOID / SWISH for large |x|",
            "exp only of non-positive arguments: never an overflow where f is finite; far out "
            "PARAMETRIC_SOFTPLUS is (Alpha · Beta) · x",
            "Beta · x alone overflows FLOAT32 where f does not (found on the H100: Alpha -0.5, Beta -1.3 at x "
            "= -3e38).",
            also=("ACTIVATION_PARAMETRIC_SOFTPLUS", "ACTIVATION_SIGMOID", "ACTIVATION_SWISH")),
        SilentChoice(
            "An attribute product that is not exact (Steepness, Beta, 1/Alpha not a power of two)",
            "its rounding error is carried into exp (FLOAT32 tensors)",
            "Without it SOFTPLUS at Steepness 1.7 was 64 ULP off, growing without bound in the tail.",
            also=("ACTIVATION_PARAMETRIC_SOFTPLUS", "ACTIVATION_CELU")),
    ),
)


@operator(ACTIVATION_SOFTPLUS)
def activation_softplus(input, *, steepness, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_softplus(np.array([-100.0, -1.0, 0.0, 2.0, 100.0], np.float32))
        Array([  0.       ,   0.3132617,   0.6931472,   2.126928 , 100.       ],      dtype=float32)
        >>> dmljax.activation_softplus(np.array([0.0, 1.0], np.float32), steepness=2.0)
        Array([0.3465736, 1.063464 ], dtype=float32)
    """
    s = steepness
    r = 1.0 / s if s != 0 else math.copysign(np.inf, s)

    def f(x):
        if s == 0:  # ln(2) / +-0, also at x = +-inf (the limit; 0 * inf would give NaN)
            return jnp.where(jnp.isnan(x), x, jnp.full_like(x, r))
        t, e = _two_product(s, x, input.dtype)
        u, big, ru = _exp_tail(t, e, r, input.dtype)
        # max(s * x, 0) / s, exactly: x itself where s * x > 0
        head = jnp.where(x > 0 if s > 0 else x < 0, x, jnp.zeros_like(x))
        if s == 1:
            return head + jnp.log1p(u)
        # times 1 / Steepness (rounded once): what XLA makes of a division by a constant under
        # jit anyway; written so, op-by-op execution gives the same bits. (x' + L * (1 /
        # Steepness) is a multiply-add that a backend may fuse into one FMA or not, as
        # docs/semantics.md#fused-multiply-add allows: XLA's CPU backend does under jit.)
        tail = jnp.log1p(u) * _c(r, x)
        return head + (tail if big is None else jnp.where(big, ru, tail))

    def slope(x):
        t, e = _two_product(s, _scaled_input(s, x), input.dtype)
        return _softplus_slope(t, e, 1.0, input.dtype)

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True)


# --------------------------------------------------------------------------------------------
ACTIVATION_SCALED_TANH = activation_op(
    "SCALED_TANH",
    summary=("Performs a scaled hyperbolic tangent activation function on every element in "
             "InputTensor, placing the result into the corresponding element of OutputTensor."),
    formula="f(x) = Alpha * tanh(Beta * x)",
    params=(
        ParamSpec("Alpha", "FLOAT", default=1.0, doc="The value of alpha. A typical default for this value is 1.0."),
        ParamSpec("Beta", "FLOAT", default=0.5, doc="The value of beta. A typical default for this value is 0.5."),
    ),
    ulp={F32: 7, F16: 1},
    ulp_half=4,
    gradient=("dX = Alpha * Beta * sech(Beta * x)^2 * dY, sech^2 computed as TANH's (4e / (1 + "
              "e)^2, e = exp(-2|Beta * x|)): 0 (not NaN) far out and at +-inf. sech^2 amplifies "
              "the rounding of Beta * x by 2|Beta * x|: for FLOAT32 tensors its exact error is "
              "carried in, so the budget holds in the tails."),
    notes=("tanh as TANH evaluates it (no overflow; tanh(+-inf) = +-1, the sign of zero kept), times Alpha "
           "(with |Beta| < 1 < |Alpha|, f = (Alpha * Beta) * x where |Beta * x| < 2^-12, tanh's own value "
           "there, so that a FLOAT32 denormal Beta * x is not flushed where f is normal). Infinite attributes "
           "give the formula's IEEE value (inf * 0 = NaN at x = 0). Fusable (dmljax.FusedActivation)."),
    silent=(
        SilentChoice(
            "Zero Beta (SCALED_TANH, PARAMETRIC_SOFTPLUS) or zero Alpha (PARAMETRIC_SOFTPLUS) at x = ±inf",
            "the limit (0, or Alpha · ln 2)",
            "f is constant in x; 0 · inf would be NaN.",
            also=("ACTIVATION_PARAMETRIC_SOFTPLUS",)),
        SilentChoice(
            "PARAMETRIC_SOFTPLUS's and SCALED_TANH's Alpha and Beta",
            "required",
            "The pages document no default.",
            also=("ACTIVATION_PARAMETRIC_SOFTPLUS",)),
    ),
)


def _scaled_sech2(t, k: float, e=None):
    """k * sech(t + e)^2 (e: t's rounding error, or None) as TANH's sech^2 (4u / (1 + u)^2,
    u = exp(-2|t|); from |t| = 20 on (2h)^2, h = exp(-|t|)), with k multiplied in before the
    smallest factor: where k > 1 lifts a result that sech^2 alone would leave among the FLOAT32
    denormals back into the normal range, no denormal appears on the way (XLA's CPU backend
    would flush it). e enters to first order: sech^2(t + e) = sech^2(t) (1 - 2 tanh(t) e), with
    |tanh(t)| taken as 1 (that errs by 2 (1 - tanh|t|) |e| <= 0.56 * 2^-24 relative, the most at
    |t| = 0.6, and saves a division)."""
    a = jnp.abs(t)
    u = jnp.exp(_c(-2.0, t) * a)
    d = _c(1.0, t) + u
    near = (_c(4.0 * k, t) * u) / (d * d)
    h = jnp.exp(-a)
    out = jnp.where(a < _c(20.0, t), near, (_c(4.0 * k, t) * h) * h)
    if e is None:
        return out
    return out * (_c(1.0, t) - _c(2.0, t) * _signed(e, t))


@operator(ACTIVATION_SCALED_TANH)
def activation_scaled_tanh(input, *, alpha, beta, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_scaled_tanh(np.array([-2.0, 0.0, 1.0, np.inf], np.float32))
        Array([-0.7615942 ,  0.        ,  0.46211717,  1.        ], dtype=float32)
        >>> dmljax.activation_scaled_tanh(np.array([1.0], np.float32), alpha=1.7159, beta=2 / 3)
        Array([0.9999973], dtype=float32)
    """
    fast = _xla_suffices(input, allow_half_precision_computation)
    tanh = jnp.tanh if fast else _tanh_f32

    lift = abs(alpha) > 1 > abs(beta) and np.dtype(input.dtype) == np.float32 and not allow_half_precision_computation
    # lifted, every result is a product (Alpha * tanh, |tanh| >= 2^-12: normal; or (Alpha * Beta) *
    # x, a factor other than 1): the CPU's processor flushes it, as it reads x (float_result)
    products = lift and float(np.float32(float(np.float32(alpha)) * float(np.float32(beta)))) != 1.0

    def f(x):
        xs = _scaled_input(beta, x)
        t = _c(beta, x) * xs
        out = _c(alpha, x) * tanh(t)
        if not lift:
            return out
        # |Beta| < 1 < |Alpha|: Beta * x may be a FLOAT32 denormal (flushed by XLA's CPU backend)
        # where Alpha * Beta * x is not; below 2^-12, tanh(t) = t in FLOAT32: (Alpha * Beta) * x
        ab = _c(float(np.float32(alpha)) * float(np.float32(beta)), x)
        return jnp.where(jnp.abs(t) < _c(2.0**-12, x), ab * xs, out)

    def slope(x):
        t, e = _two_product(beta, _scaled_input(beta, x), input.dtype)
        return _scaled_sech2(t, float(np.float32(alpha)) * float(np.float32(beta)), e)

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True, float_result=products)


# --------------------------------------------------------------------------------------------
ACTIVATION_PARAMETRIC_SOFTPLUS = activation_op(
    "PARAMETRIC_SOFTPLUS",
    summary=("Performs a parametric softplus activation function on every element in InputTensor, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(x) = Alpha * ln(1 + exp(Beta * x))",
    params=(ParamSpec("Alpha", "FLOAT", doc="The alpha coefficient."),
            ParamSpec("Beta", "FLOAT", doc="The beta coefficient.")),
    ulp={F32: 4, F16: 1},
    ulp_half=2,
    gradient=("dX = Alpha * Beta * sigmoid(Beta * x) * dY, computed from e = exp(-|Beta * x|) "
              "<= 1 as SOFTPLUS's: never NaN for a number."),
    notes=("Evaluated as Alpha * (max(Beta * x, 0) + ln(1 + exp(-|Beta * x|))): exp never overflows, so f(x) = "
           "Alpha * Beta * x for large Beta * x in every type. A Beta that is not a power of two carries the "
           "product's rounding error into exp for FLOAT32 tensors (as SOFTPLUS). With "
           "allow_half_precision_computation, Beta * x is a FLOAT16 product (it may overflow where f would "
           "not, as any FLOAT16 arithmetic). Where exp(-|Beta * x|) is a FLOAT32 denormal but |Alpha| > 1 "
           "(|Alpha * Beta| > 1 for the gradient) brings the result back above 2^-126, it is computed as "
           "(Alpha * v) * v, v = exp(-|Beta * x| / 2), so that no backend's flushing of intermediate denormals "
           "(XLA's CPU backend flushes them) loses it. Fusable (dmljax.FusedActivation)."),
)


@operator(ACTIVATION_PARAMETRIC_SOFTPLUS)
def activation_parametric_softplus(input, *, alpha, beta, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-4.0, -1.0, 0.0, 2.0, 100.0], np.float32)
        >>> dmljax.activation_parametric_softplus(x, alpha=2.0, beta=0.5)
        Array([  0.253856 ,   0.948154 ,   1.3862944,   2.6265235, 100.       ],      dtype=float32)
    """
    ab = float(np.float32(alpha)) * float(np.float32(beta))  # exact in float64, rounded once below

    def f(x):
        t, e = _two_product(beta, _scaled_input(beta, x), input.dtype)
        u, big, au = _exp_tail(t, e, alpha, input.dtype)
        # Alpha * (max(t, 0) + ln(1 + exp(-|t|))), where t = Beta * x
        out = _c(alpha, x) * _scaled_input(alpha, jnp.where(t > 0, t, jnp.zeros_like(t)) + jnp.log1p(u))
        out = out if big is None else jnp.where(big & (t < 0), au, out)
        if ab == 0 or not math.isfinite(ab):
            return out
        # Far out (the tail is exactly 0) f = Alpha * Beta * x, taken as (Alpha * Beta) * x: Beta * x
        # alone may overflow where f does not (Alpha -0.5, Beta -1.3 at x = -3e38 gave -inf, f is
        # -1.95e38: tests/gpu/semantics.py on the H100).
        far = t > _c(2.0 ** 100 if x.dtype == np.float32 else 2.0 ** 14, x)
        return jnp.where(far, _c(ab, x) * x, out)

    def slope(x):
        t, e = _two_product(beta, _scaled_input(beta, x), input.dtype)
        return _softplus_slope(t, e, float(np.float32(alpha)) * float(np.float32(beta)), input.dtype)

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True)


# --------------------------------------------------------------------------------------------
ACTIVATION_CELU = activation_op(
    "CELU",
    summary=("Performs the continuously differentiable exponential linear unit (CELU) activation "
             "function on every element in InputTensor, placing the result into the "
             "corresponding element of OutputTensor."),
    formula="f(x) = max(0, x) + min(0, Alpha * (exp(x / Alpha) - 1));",
    params=(ParamSpec("Alpha", "FLOAT", default=1.0,
                      doc="The alpha coefficient. A typical default for this value is 1.0."),),
    support=(("3.0", "1 to 8", FLOAT32_FLOAT16),),
    ulp={F32: 4, F16: 1},
    ulp_half=4,
    gradient=("dX = dY for x > 0, exp(x / Alpha) * dY for x < 0, and dY at x = 0 (CELU is "
              "continuously differentiable: both one-sided derivatives are 1); 0 for NaN "
              "(max and min give the constant 0 there). exp only ever sees x / Alpha <= 0 for a "
              "positive Alpha. Alpha = 0 (the limit, RELU): dY for x > 0, 0 otherwise (a kink "
              "at 0, strict: nothing at 0). x / Alpha's exact rounding error is carried into "
              "exp for FLOAT32 tensors."),
    notes=("For any nonzero Alpha the formula is x for x > 0 and Alpha * (exp(x / Alpha) - 1) "
           "for x < 0 (the other term is 0 on each side), and max/min are maxNum/minNum "
           "(docs/semantics.md#minimum-and-maximum): CELU(NaN) = max(0, NaN) + min(0, NaN) = 0, and CELU(-0) = +0 (+0 "
           "+ +0, as RELU). Alpha * (exp(u) - 1) is evaluated as x * (expm1(u) / u) (a series) "
           "for |u| <= 0.35, u = x / Alpha, so small x keep their full precision, and as Alpha * "
           "(exp(u) - 1) beyond; x / Alpha is x * (1 / Alpha) (rounded once; XLA makes one of "
           "a division by a constant anyway). Where the page divides by zero, dmljax takes the "
           "limit: Alpha = 0 (either sign) gives max(0, x), the limit Alpha -> 0+ (from below "
           "it is -inf for every x < 0); an infinite Alpha gives x (the limit Alpha -> +-inf); "
           "a NaN Alpha gives max(0, x) (min(0, NaN) = 0). A negative Alpha follows the formula "
           "(Alpha * (exp(x / Alpha) - 1) for x < 0, which grows like -exp(-x / |Alpha|) and "
           "overflows to -inf where exp(x / Alpha) does). Fusable (dmljax.FusedActivation)."),
    silent=(
        SilentChoice(
            "CELU(NaN), CELU(-0)",
            "0, +0",
            "The page's max/min as maxNum/minNum, as RELU."),
        SilentChoice(
            "CELU with Alpha ±0, ±inf, NaN",
            "max(0, x) (the limit Alpha → 0+); x (Alpha → inf); max(0, x) for NaN (minNum(0, NaN) = 0)",
            "x / Alpha is a division by zero, inf · 0 otherwise."),
        SilentChoice(
            "CELU's gradient at 0; at NaN",
            "1 (both one-sided derivatives); 0 (f is the constant 0 there)",
            "C¹ at 0."),
    ),
)

# expm1(u) / u = 1 + u/2 + u^2/6 + ...: the coefficients of u^1 .. u^8 (truncation below 1e-9
# relative for |u| <= 0.35)
_PHI_TAYLOR = [1 / 2, 1 / 6, 1 / 24, 1 / 120, 1 / 720, 1 / 5040, 1 / 40320, 1 / 362880]


def _celu_kind(alpha: float) -> str:
    """How the formula reads for this Alpha: "relu" (0, NaN, or so small that 1 / Alpha
    overflows FLOAT32), "identity" (+-inf) or "exp"."""
    if math.isnan(alpha) or alpha == 0 or math.isinf(float(np.float32(1.0) / np.float32(alpha))):
        return "relu"
    if math.isinf(alpha):
        return "identity"
    return "exp"


def _celu_u(x, alpha: float, tensor_dtype, with_error=False):
    """u = x / Alpha as x * (1 / Alpha), and its error (x / Alpha - u, or None) for a FLOAT32
    tensor. For |Alpha| > 2^100 as (x * 2^-100) * (2^100 / Alpha), so that the constant is no
    FLOAT32 denormal (a tiny u is harmless: the series keeps x itself)."""
    if abs(alpha) > 2.0**100:
        u = (x * _c(2.0**-100, x)) * _c(2.0**100 / alpha, x)
        return (u, None) if with_error else u
    r = float(np.float32(1.0 / alpha))
    if not with_error:
        return _c(r, x) * x
    return _two_product(r, x, tensor_dtype, residual=1.0 / alpha - r)


def _celu_negative(x, u, e, alpha: float, tensor_dtype):
    """Alpha * (exp(u) - 1) for u = x / Alpha (e: u's rounding error, or None): x * (expm1(u) / u)
    for |u| <= 0.35 (or 2^-10 when a FLOAT16 result is computed in FLOAT32: x * (1 + u / 2) is
    then within 2e-7 relative), and Alpha * (exp(u) - 1) beyond (no cancellation worth the name
    there: |exp(u) - 1| > 0.29)."""
    one = _c(1.0, x)
    if np.dtype(tensor_dtype) == np.float16 and x.dtype == np.float32:
        bound, small = _c(2.0**-10, x), x * (one + _c(0.5, x) * u)
    else:
        p = jnp.full_like(u, _PHI_TAYLOR[-1])
        for c in reversed(_PHI_TAYLOR[:-1]):
            p = p * u + _c(c, x)
        bound, small = _c(0.35, x), x * (one + u * p)
    big = jnp.abs(u) > bound
    exp_u = jnp.exp(jnp.where(big, u, jnp.zeros_like(u)))
    if e is not None:
        exp_u = exp_u * (one + e)
    return jnp.where(big, _c(alpha, x) * (exp_u - one), small)


@operator(ACTIVATION_CELU)
def activation_celu(input, *, alpha, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_celu(np.array([-2.0, -0.0, 1.5, np.nan], np.float32))
        Array([-0.86466473,  0.        ,  1.5       ,  0.        ], dtype=float32)
        >>> dmljax.activation_celu(np.array([-2.0], np.float32), alpha=0.5)
        Array([-0.4908422], dtype=float32)
    """
    kind = _celu_kind(alpha)

    def f(x):
        zero = jnp.zeros_like(x)
        if kind == "relu":
            return jnp.where(x > 0, x, zero)
        if kind == "identity":
            return jnp.where((x > 0) | (x < 0), x, zero)
        xn = jnp.where(x < 0, x, zero)  # x > 0, +-0 and NaN read as +0: their term is +0
        if alpha > 0:  # u <= 0: exp(u) damps u's rounding error
            u, e = _celu_u(xn, alpha, input.dtype), None
        else:  # u >= 0: exp(u) amplifies u's rounding error by u: carry it (FLOAT32)
            u, e = _celu_u(xn, alpha, input.dtype, with_error=True)
        return jnp.where(x > 0, x, _celu_negative(xn, u, e, alpha, input.dtype))

    def slope(x):
        one, zero = jnp.ones_like(x), jnp.zeros_like(x)
        if kind == "relu":
            return jnp.where(x > 0, one, zero)
        if kind == "identity":
            return jnp.where(jnp.isnan(x), zero, one)  # 0 for NaN only
        # exp(x / Alpha) for x <= 0; x > 0 and NaN read as -inf * sign(Alpha), whose exp is 0
        xs = jnp.where(x <= 0, x, jnp.full_like(x, -math.copysign(np.inf, alpha)))
        u, e = _celu_u(xs, alpha, input.dtype, with_error=True)
        d = jnp.exp(u)
        if e is not None:
            d = d * (one + e)
        return jnp.where(x > 0, one, d)

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope)
