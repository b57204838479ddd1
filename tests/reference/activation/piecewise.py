"""float64 references for the piecewise activations (ELU, HARD_SIGMOID, IDENTITY, LEAKY_RELU,
LINEAR, RELU and its RELU_GRAD, SCALED_ELU, SHRINK, SOFTSIGN, THRESHOLDED_RELU), transcribed from
their pages (dml_activation_*_operator_desc.md in ../shared/spec/operators/) and docs/semantics.md."""

import numpy as np

from tests.reference.activation._common import _near_zero
from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, elementwise_vjp, float_g, int_attr, is_int, read, wrap


# ---------------------------------------------------------------------------------------------
def activation_scaled_elu(x, alpha=1.6732, gamma=1.0507):
    # f(x) = Gamma * x if x > 0, Gamma * (Alpha * exp(x) - Alpha) otherwise.
    # Alpha * exp(x) - Alpha is the same real number as Alpha * expm1(x); expm1 avoids float64's
    # own cancellation for |x| < 1e-8, which would make the reference, not the operator, wrong.
    a, g = c_float(alpha), c_float(gamma)
    x = read(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return [np.where(x > 0, g * x, g * (a * np.expm1(np.minimum(x, 0.0))))]


def scaled_elu_slope(x, alpha=1.6732, gamma=1.0507):
    # d/dx on the branch the formula selects: Gamma for x > 0, Gamma * Alpha * exp(x) otherwise.
    a, g = c_float(alpha), c_float(gamma)
    x = read(x)
    return np.where(x > 0, g, g * a * np.exp(np.minimum(x, 0.0)))


# ---------------------------------------------------------------------------------------------
def activation_elu(x, alpha=1.0):
    # f(x) = x if x >= 0, Alpha * (exp(x) - 1) otherwise. exp(x) - 1 is written expm1(x): the
    # same real number, without float64's own cancellation for tiny |x|.
    a = c_float(alpha)
    x = read(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return [np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0.0)))]


def elu_grad(x, alpha=1.0):
    # d/dx on the branch the page's formula selects: x >= 0 -> 1; otherwise Alpha * exp(x).
    x = np.asarray(x, np.float64)
    return np.where(x >= 0, 1.0, c_float(alpha) * np.exp(np.minimum(x, 0.0)))


# ---------------------------------------------------------------------------------------------
# Attribute sets run on FLOAT32 and FLOAT16 alike; those with integer rows must give integer
# inputs the whole range (tests/catalog.py draws them).

def activation_relu(x):
    # f(x) = max(0, x), max being IEEE maxNum (docs/semantics.md#minimum-and-maximum): NaN gives 0; dmljax chose +0 for -0.
    if is_int(x):
        return [wrap([v if v > 0 else 0 for v in np.asarray(x).ravel()], np.asarray(x).dtype).reshape(np.shape(x))]
    x = read(x)
    with np.errstate(invalid="ignore"):
        return [np.where(x > 0, x, 0.0)]


def relu_slope(x):
    # RELU_GRAD's rule: X > 0 ? dY : 0.
    return np.where(read(x) > 0, 1.0, 0.0)


# ---------------------------------------------------------------------------------------------
def activation_relu_grad(x, gradient):
    # OutputGradientTensor = (X > 0 ? dY : 0). X is read as math reads it (a FLOAT32 denormal is
    # a zero) and compared strictly (NaN compares false); dY passes with its bits (a selection).
    x_np, dy = np.asarray(x), np.asarray(gradient)
    if is_int(x_np):
        passes = np.array([int(v) > 0 for v in x_np.ravel()], bool).reshape(x_np.shape)
    else:
        with np.errstate(invalid="ignore"):
            passes = read(x_np) > 0
    return [np.where(passes, dy, np.zeros_like(dy))]


def relu_grad_slopes(x, gradient):
    # Second order: the output is piecewise constant in X (0 away from X = 0) and dY times the
    # mask X > 0.
    with np.errstate(invalid="ignore"):
        return np.zeros(np.shape(x)), np.where(read(x) > 0, 1.0, 0.0)


def activation_leaky_relu(x, alpha=0.01):
    # f(x) = x if x >= 0, Alpha * x otherwise.
    a, x = c_float(alpha), read(x)
    with np.errstate(invalid="ignore"):
        return [np.where(x >= 0, x, a * x)]


def leaky_relu_slope(x, alpha=0.01):
    with np.errstate(invalid="ignore"):
        return np.where(read(x) >= 0, 1.0, c_float(alpha))


def _alpha_x_beta(x, alpha, beta, half=False):
    # Alpha * x + Beta: a multiply-add, fused or not (both DirectML-legal), in FLOAT32; with
    # allow_half_precision_computation also in FLOAT16 arithmetic.
    return float_g(np.asarray(x), (alpha, beta), half)


def activation_linear(x, alpha, beta, half=False):
    return _alpha_x_beta(x, alpha, beta, half)


def activation_identity(x):
    return [np.asarray(x)]  # a copy: the same bits


def activation_thresholded_relu(x, alpha=1.0):
    # f(x) = x if x > Alpha, 0 otherwise (strict; NaN compares false).
    a, x = c_float(alpha), read(x)
    with np.errstate(invalid="ignore"):
        return [np.where(x > a, x, 0.0)]


def thresholded_relu_slope(x, alpha=1.0):
    with np.errstate(invalid="ignore"):
        return np.where(read(x) > c_float(alpha), 1.0, 0.0)


def activation_hard_sigmoid(x, alpha=0.2, beta=0.5, half=False):
    # f(x) = max(0, min(Alpha * x + Beta, 1)) with minNum/maxNum: NaN -> min gives 1.
    out = []
    for g in _alpha_x_beta(x, alpha, beta, half):
        with np.errstate(invalid="ignore"):
            upper = np.where(np.isnan(g), 1.0, np.minimum(g, 1.0))
            out.append(np.where(upper > 0, upper, 0.0))
    return out


def hard_sigmoid_slope(x, alpha=0.2, beta=0.5, half=False):
    g = _alpha_x_beta(x, alpha, beta)[0]
    with np.errstate(invalid="ignore"):
        return np.where((g > 0) & (g < 1), c_float(alpha), 0.0)


def hard_sigmoid_near_kink(x, alpha=0.2, beta=0.5, half=False):
    g = _alpha_x_beta(x, alpha, beta)[0]
    return (np.abs(g) < 1e-2) | (np.abs(g - 1) < 1e-2)


def activation_shrink(x, bias=0.0, threshold=0.5):
    # f(x) = x - Bias if x > Threshold; x + Bias if x < -Threshold; 0 otherwise.
    x_np = np.asarray(x)
    if is_int(x_np):
        # Integers: Bias and Threshold truncated toward zero, saturated (docs/semantics.md#attributes); the
        # comparisons exact, the sums wrapped.
        b, t = int_attr(bias, x_np.dtype), int_attr(threshold, x_np.dtype)
        vals = [v - b if v > t else (v + b if v < -t else 0) for v in (int(u) for u in x_np.ravel())]
        return [wrap(vals, x_np.dtype).reshape(x_np.shape)]
    b, t, x = c_float(bias), c_float(threshold), read(x_np)
    with np.errstate(invalid="ignore"):
        return [np.where(x > t, x - b, np.where(x < -t, x + b, 0.0))]


def shrink_slope(x, bias=0.0, threshold=0.5):
    t, x = c_float(threshold), read(x)
    with np.errstate(invalid="ignore"):
        return np.where((x > t) | (x < -t), 1.0, 0.0)


def activation_softsign(x):
    # f(x) = x / (1 + abs(x)); at +-inf the limit +-1 (dmljax's choice: the formula is inf/inf).
    x = read(x)
    with np.errstate(invalid="ignore"):
        return [np.where(np.isinf(x), np.sign(x), x / (1.0 + np.abs(x)))]


def softsign_slope(x):
    x = read(x)
    return 1.0 / (1.0 + np.abs(x)) ** 2


def _near(*points):
    def near(x, threshold=None, alpha=None, **_):
        v = read(x)
        cs = [c_float(p) for p in points]
        if threshold is not None:
            cs = [c_float(threshold), -c_float(threshold)]
        if alpha is not None:
            cs = [c_float(alpha)]
        return np.any([np.abs(v - c) < 1e-2 for c in cs], axis=0)
    return near


REFERENCES = {
    "DML_OPERATOR_ACTIVATION_SCALED_ELU": Reference(
        activation_scaled_elu,
        attrs=(Attrs(), Attrs({"alpha": 1.0, "gamma": 2.0})),
        grad=elementwise_vjp(scaled_elu_slope),
        near_kink=_near_zero,
    ),
    "DML_OPERATOR_ACTIVATION_ELU": Reference(
        activation_elu,
        attrs=(Attrs(), Attrs({"alpha": 0.3})),
        grad=elementwise_vjp(lambda x, alpha=1.0: elu_grad(read(x), alpha)),
        near_kink=_near_zero,
    ),
    "DML_OPERATOR_ACTIVATION_RELU": Reference(
        activation_relu,
        grad=elementwise_vjp(relu_slope),
        near_kink=_near_zero,
    ),
    "DML_OPERATOR_ACTIVATION_RELU_GRAD": Reference(
        activation_relu_grad,
        selection=True,
        grad=elementwise_vjp(relu_grad_slopes),
        near_kink=_near_zero,
    ),
    "DML_OPERATOR_ACTIVATION_LEAKY_RELU": Reference(
        activation_leaky_relu,
        attrs=(Attrs(), Attrs({"alpha": 0.3}), Attrs({"alpha": -1.7})),
        grad=elementwise_vjp(leaky_relu_slope),
        near_kink=_near_zero,
    ),
    "DML_OPERATOR_ACTIVATION_LINEAR": Reference(
        activation_linear,
        attrs=tuple(Attrs(a, half={**a, "half": True})
                    for a in ({"alpha": 0.3, "beta": -1.1}, {"alpha": -2.5, "beta": 0.0})),
        grad=elementwise_vjp(lambda x, alpha, beta: np.full(np.shape(x), c_float(alpha))),
        multiply_add=True,
    ),
    "DML_OPERATOR_ACTIVATION_IDENTITY": Reference(
        activation_identity,
        selection=True,
        grad=elementwise_vjp(lambda x: np.ones(np.shape(x))),
    ),
    "DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU": Reference(
        activation_thresholded_relu,
        attrs=(Attrs(), Attrs({"alpha": -0.5})),
        grad=elementwise_vjp(thresholded_relu_slope),
        near_kink=_near(1.0),
    ),
    "DML_OPERATOR_ACTIVATION_HARD_SIGMOID": Reference(
        activation_hard_sigmoid,
        attrs=(Attrs(half={"half": True}),
               Attrs({"alpha": -0.7, "beta": 0.1}, half={"alpha": -0.7, "beta": 0.1, "half": True})),
        grad=elementwise_vjp(hard_sigmoid_slope),
        near_kink=hard_sigmoid_near_kink,
        multiply_add=True,
    ),
    "DML_OPERATOR_ACTIVATION_SHRINK": Reference(
        activation_shrink,
        attrs=(Attrs(), Attrs({"bias": 1.5, "threshold": 2.0}), Attrs({"bias": -3.0, "threshold": -1.0})),
        grad=elementwise_vjp(shrink_slope),
        near_kink=_near(0.5),
    ),
    "DML_OPERATOR_ACTIVATION_SOFTSIGN": Reference(
        activation_softsign,
        grad=elementwise_vjp(softsign_slope),
    ),
}
