"""float64 references for the activations SIGMOID, TANH, SCALED_TANH, SOFTPLUS, PARAMETRIC_SOFTPLUS,
CELU, transcribed from their pages (dml_activation_*_operator_desc.md) and docs/semantics.md.

Each is the page's formula evaluated to float64 accuracy on the inputs as read (FLOAT32 denormals
flushed) with the attributes as C floats: products of an attribute and x are exact in float64
(24 + 24 bits), and the formulas are written where float64 itself would lose digits (logaddexp
for ln(1 + exp(t)), 1 / cosh^2 for 1 - tanh^2, expm1 for exp(u) - 1)."""

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, elementwise_vjp, read


def _sigmoid(t):
    # 1 / (1 + exp(-t)), with exp of a non-positive argument only (float64 itself would
    # overflow exp(-t) for t < -709)
    e = np.exp(-np.abs(t))
    return np.where(t >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _sech2(t):
    # 1 - tanh(t)^2 without its cancellation; 0 where cosh overflows, and at +-inf
    with np.errstate(over="ignore"):
        return 1.0 / np.cosh(t) ** 2


def _half_product(c, x):
    """c * x as FLOAT16 arithmetic computes it (allow_half_precision_computation): the attribute
    rounded to FLOAT16, the product rounded to FLOAT16 (a legal rounding of the formula's
    explicit product, as a ScaleBias's g)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.float16(c_float(c)) * np.asarray(x, np.float16)).astype(np.float64)


# ---------------------------------------------------------------------------------------------
def activation_sigmoid(x):
    # f(x) = 1 / (1 + exp(-x))
    return [_sigmoid(read(x))]


def sigmoid_slope(x):
    # f'(x) = exp(-x) / (1 + exp(-x))^2, written with exp(-|x|) (it is even in x)
    x = read(x)
    e = np.exp(-np.abs(x))
    return e / (1.0 + e) ** 2


# ---------------------------------------------------------------------------------------------
def activation_tanh(x):
    # f(x) = (1 - exp(-2 * x)) / (1 + exp(-2 * x)), which is tanh(x)
    return [np.tanh(read(x))]


def tanh_slope(x):
    return _sech2(read(x))


# ---------------------------------------------------------------------------------------------
def _softplus_value(t, s):
    # ln(1 + exp(t)) / Steepness; logaddexp(0, t) is ln(1 + exp(t)) without overflow
    with np.errstate(invalid="ignore"):
        return np.logaddexp(0.0, t) / s


def activation_softplus(x, steepness=1.0, half=False):
    # f(x) = ln(1 + exp(Steepness * x)) / Steepness. With half-precision computation the
    # product Steepness * x may also be a FLOAT16 rounding (a second candidate).
    s, x = c_float(steepness), read(x)
    with np.errstate(invalid="ignore"):
        out = [_softplus_value(s * x, s)]
    if half:
        # ln(1 + exp(t)) = max(t, 0) + ln(1 + exp(-|t|)), the rounded product in the second term
        t16 = _half_product(s, x)
        with np.errstate(invalid="ignore"):
            head = np.where(s * x > 0, x, 0.0)
            out.append(head + np.log1p(np.exp(-np.abs(t16))) / s)
    return out


def softplus_slope(x, steepness=1.0, half=False):
    # d/dx ln(1 + exp(s x)) / s = sigmoid(s x)
    s = c_float(steepness)
    return _sigmoid(s * read(x))


# ---------------------------------------------------------------------------------------------
def _constant_at_inf(c, x):
    # c * x for an attribute c that multiplies x: with c = 0 the formula is constant in x, and
    # its value at +-inf is the limit (dmljax's choice), not 0 * inf = NaN
    if c == 0:
        return np.where(np.isinf(x), 0.0, c * x)
    with np.errstate(invalid="ignore"):
        return c * x


def activation_scaled_tanh(x, alpha=1.0, beta=0.5):
    # f(x) = Alpha * tanh(Beta * x)
    a, b = c_float(alpha), c_float(beta)
    return [a * np.tanh(_constant_at_inf(b, read(x)))]


def scaled_tanh_slope(x, alpha=1.0, beta=0.5):
    # Alpha * Beta * (1 - tanh(Beta * x)^2)
    a, b = c_float(alpha), c_float(beta)
    return a * b * _sech2(_constant_at_inf(b, read(x)))


# ---------------------------------------------------------------------------------------------
def activation_parametric_softplus(x, alpha, beta, half=False):
    # f(x) = Alpha * ln(1 + exp(Beta * x)); with half-precision computation Beta * x may also be a
    # FLOAT16 rounding (a second candidate)
    a, b, x = c_float(alpha), c_float(beta), read(x)
    ts = [_constant_at_inf(b, x)] + ([_half_product(b, x)] if half else [])
    out = []
    for t in ts:
        with np.errstate(invalid="ignore"):
            v = np.logaddexp(0.0, t)
        out.append(_constant_at_inf(a, v))
    return out


def parametric_softplus_slope(x, alpha, beta, half=False):
    # Alpha * Beta * sigmoid(Beta * x)
    a, b = c_float(alpha), c_float(beta)
    return a * b * _sigmoid(_constant_at_inf(b, read(x)))


# ---------------------------------------------------------------------------------------------
def activation_celu(x, alpha=1.0):
    # f(x) = max(0, x) + min(0, Alpha * (exp(x / Alpha) - 1)), max/min being maxNum/minNum:
    # x for x > 0, Alpha * expm1(x / Alpha) for x < 0 (the other term is 0), 0 for +-0 and NaN
    # (0 + 0). Alpha = 0 and NaN: max(0, x) (the limit Alpha -> 0+; min(0, NaN) = 0); an
    # infinite Alpha: x (the limit). expm1 is exp(u) - 1 without float64's own cancellation.
    a, x = c_float(alpha), read(x)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if np.isnan(a) or a == 0:
            neg = np.zeros_like(x)
        elif np.isinf(a):
            neg = x
        else:
            neg = a * np.expm1(np.where(x < 0, x, 0.0) / a)
        return [np.where(x > 0, x, np.where(x < 0, neg, 0.0))]


def celu_slope(x, alpha=1.0):
    # 1 for x > 0, exp(x / Alpha) for x < 0, 1 at x = 0 (both one-sided derivatives are 1), 0 for
    # NaN (the value is the constant 0 there)
    a, x = c_float(alpha), read(x)
    with np.errstate(invalid="ignore", over="ignore"):
        neg = np.exp(np.where(x <= 0, x, 0.0) / a)
        return np.where(x > 0, 1.0, np.where(x <= 0, neg, 0.0))


REFERENCES = {
    "DML_OPERATOR_ACTIVATION_SIGMOID": Reference(
        activation_sigmoid,
        grad=elementwise_vjp(sigmoid_slope),
    ),
    "DML_OPERATOR_ACTIVATION_TANH": Reference(
        activation_tanh,
        grad=elementwise_vjp(tanh_slope),
    ),
    "DML_OPERATOR_ACTIVATION_SOFTPLUS": Reference(
        activation_softplus,
        # Steepness >= 1 at every level the cases run (1.0 to 6.4); Steepness < 1 and negative
        # ones (6.4 and up) are in tests/ops/activation/test_smooth.py.
        attrs=(Attrs(half={"half": True}),
               Attrs({"steepness": 1.7}, half={"steepness": 1.7, "half": True})),
        grad=elementwise_vjp(softplus_slope),
        # x' + ln(1 + exp(-|s x|)) * (1 / s): a multiply-add that XLA's CPU backend fuses into
        # an FMA under jit and not op by op (both roundings are within the budget)
        multiply_add=True,
    ),
    "DML_OPERATOR_ACTIVATION_SCALED_TANH": Reference(
        activation_scaled_tanh,
        attrs=(Attrs(), Attrs({"alpha": 1.7159, "beta": 2 / 3})),  # LeCun's scaled tanh
        grad=elementwise_vjp(scaled_tanh_slope),
    ),
    "DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS": Reference(
        activation_parametric_softplus,
        attrs=tuple(Attrs(a, half={**a, "half": True})
                    for a in ({"alpha": 1.7, "beta": 2.3}, {"alpha": -0.5, "beta": -1.3})),
        grad=elementwise_vjp(parametric_softplus_slope),
    ),
    "DML_OPERATOR_ACTIVATION_CELU": Reference(
        activation_celu,
        attrs=(Attrs(), Attrs({"alpha": 0.5}), Attrs({"alpha": 2.5})),
        grad=elementwise_vjp(celu_slope),
    ),
}
