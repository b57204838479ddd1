"""float64 references for the element-wise math family, transcribed from the pages
(dml_element_wise_*_operator_desc.md in ../shared/spec/operators/) and SEMANTICS.md: powers,
exponentials and logarithms here, trigonometric and hyperbolic functions in trigonometry.py
(dmljax/_src/ops/element_wise_math.py and element_wise_trigonometry.py hold their records).
``REFERENCES`` is the whole family's."""

import math

import numpy as np

from tests.reference.element_wise_math import trigonometry
from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, elementwise_vjp, read, scale_bias_candidates


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
    s = 1.0 if scale_bias is None else c_float(scale_bias[0])
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


POWERS = {
    "DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW": Reference(
        element_wise_constant_pow,
        attrs=(
            Attrs({"exponent": 3}, known_issues={"eager_equals_jit": (
                "XLA's algebraic simplifier turns pow(x, 3.0) with a constant exponent into "
                "x * x * x when the operator is compiled, while op by op (jax.disable_jit) pow "
                "runs: up to 1 FLOAT32 ULP apart, each within the budget (reported)")}),
            Attrs({"exponent": 0.5, "scale_bias": (2.0, 1.0)}),
        ),
        grad=elementwise_vjp(constant_pow_slope),
        near_kink=_pow_near_kink,
    ),
}

REFERENCES = {**POWERS, **trigonometry.REFERENCES}
