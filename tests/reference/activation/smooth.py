"""float64 references for the activations SIGMOID, TANH, SCALED_TANH, SOFTPLUS, PARAMETRIC_SOFTPLUS,
CELU, transcribed from their pages (dml_activation_*_operator_desc.md) and SEMANTICS.md.

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
        # ones (6.4 and up) are in tests/ops/test_activation_smooth.py.
        attrs=(Attrs(half={"half": True}),
               Attrs({"steepness": 1.7}, half={"steepness": 1.7, "half": True})),
        grad=elementwise_vjp(softplus_slope),
        # x' + ln(1 + exp(-|s x|)) * (1 / s): a multiply-add that XLA's CPU backend fuses into
        # an FMA under jit and not op by op (both roundings are within the budget)
        multiply_add=True,
    ),
}
