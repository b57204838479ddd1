"""float64 references for the activation family, transcribed from the pages
(dml_activation_*_operator_desc.md in ../shared/spec/operators/) and SEMANTICS.md."""

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, elementwise_vjp, read


def _near_zero(x, **_):
    return np.abs(read(x)) < 1e-2


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
}
