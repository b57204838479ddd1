"""float64 references for the activations GELU, SWISH, HARD_SWISH, PARAMETERIZED_RELU, transcribed from their pages and docs/semantics.md."""

import math

import numpy as np

from tests.reference.activation._common import _near_zero
from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, elementwise_vjp, float_g, is_int, read, wrap


# ---------------------------------------------------------------------------------------------
def activation_parameterized_relu(x, slope):
    # f(x, slope) = x if x >= 0, slope * x otherwise. Integers: exact, the product wrapped.
    x_np, s_np = np.asarray(x), np.asarray(slope)
    if is_int(x_np):
        vals = [v if v >= 0 else s * v for v, s in zip((int(u) for u in x_np.ravel()), (int(u) for u in s_np.ravel()))]
        return [wrap(vals, x_np.dtype).reshape(x_np.shape)]
    fx, fs = read(x_np), read(s_np)
    with np.errstate(invalid="ignore", over="ignore"):
        return [np.where(fx >= 0, fx, fs * fx)]


def parameterized_relu_slopes(x, slope):
    # d/dx = 1 on the x >= 0 branch, slope otherwise; d/dslope = 0 on the x >= 0 branch, x otherwise.
    fx, fs = read(x), read(slope)
    with np.errstate(invalid="ignore"):
        passes = fx >= 0
    return np.where(passes, 1.0, fs), np.where(passes, 0.0, fx)


# ---------------------------------------------------------------------------------------------
HARD_SWISH_ALPHA = 1 / 6  # the page: "0.166667 (1/6)"


def _hard_sigmoid(g):
    # max(0, min(g, 1)) with minNum/maxNum (NaN g: min gives 1).
    with np.errstate(invalid="ignore"):
        upper = np.where(np.isnan(g), 1.0, np.minimum(g, 1.0))
        return np.where(upper > 0, upper, 0.0)


def activation_hard_swish(x, alpha=HARD_SWISH_ALPHA, beta=0.5, half=False):
    # f(x) = x * HardSigmoid(x, Alpha, Beta); Alpha * x + Beta is a multiply-add, fused or not
    # (float_g's candidates; with half, FLOAT16 arithmetic too). Where HardSigmoid is 0 the
    # product is x * 0: +-0 with x's sign, and its limit at +-inf (dmljax's choice).
    x_np = np.asarray(x)
    fx = read(x_np)
    out = []
    for g in float_g(x_np, (alpha, beta), half):
        hs = _hard_sigmoid(g)
        with np.errstate(invalid="ignore"):
            out.append(np.where(hs > 0, fx * hs, np.copysign(0.0, fx)))
    return out


def hard_swish_slope(x, alpha=HARD_SWISH_ALPHA, beta=0.5, half=False):
    # d/dx x * (Alpha * x + Beta) = 2 * Alpha * x + Beta strictly inside 0 < g < 1; outside,
    # HardSigmoid is constant (0 or 1) and the derivative is that constant.
    a, b = c_float(alpha), c_float(beta)
    fx = read(x)
    g = a * fx + b
    with np.errstate(invalid="ignore"):
        inside = (g > 0) & (g < 1)
    return np.where(inside, 2 * a * fx + b, _hard_sigmoid(g))


def hard_swish_near_kink(x, alpha=HARD_SWISH_ALPHA, beta=0.5, half=False):
    g = c_float(alpha) * read(x) + c_float(beta)
    return (np.abs(g) < 1e-2) | (np.abs(g - 1) < 1e-2)


def _with_half(*sets):
    return tuple(Attrs(a, half={**a, "half": True}) for a in sets)


# ---------------------------------------------------------------------------------------------
SWISH_Z0 = -1.2784645427610738  # the zero of 1 + z + exp(z) (mpmath.findroot), where f' = 0


def _swish_z(x, scale, half=False):
    # z = SigmoidInputScale * x rounded to the compute type (dmljax's choice: DirectML's float
    # math computes the product; exact for 1.0 and powers of two): FLOAT32, or FLOAT16 with half.
    x_np = np.asarray(x)
    cd = np.float16 if half else np.float32
    with np.errstate(over="ignore", invalid="ignore"):
        z = (read(x_np).astype(cd) * cd(c_float(scale))).astype(np.float64)
    return read(x_np), z


def _sigmoid(z):
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1 / (1 + e), e / (1 + e))


def activation_swish(x, sigmoid_input_scale=1.0, half=False):
    # f(x) = x * Sigmoid(SigmoidInputScale * x); at x = +-inf the limit (x * 0 gives x's signed
    # zero where Sigmoid vanishes).
    fx, z = _swish_z(x, sigmoid_input_scale, half)
    s = _sigmoid(z)
    with np.errstate(invalid="ignore"):
        y = fx * s
    return [np.where(np.isinf(fx) & (s == 0), np.copysign(0.0, fx), y)]


def swish_slope(x, sigmoid_input_scale=1.0, half=False):
    # d/dx x * Sigmoid(b * x) = s + z s (1 - s) with z = b * x (as the forward rounds it),
    # s = Sigmoid(z): for z < 0 exp(z) (1 + z + exp(z)) / (1 + exp(z))^2, whose factor
    # 1 + z + exp(z) is written around its zero z0 as (z - z0) + exp(z0) expm1(z - z0).
    _, z = _swish_z(x, sigmoid_input_scale, half)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(-np.abs(z))
        d = z - SWISH_Z0
        h = d + np.exp(SWISH_Z0) * np.expm1(d)
        pos = (1 + e + z * e) / (1 + e) ** 2
        neg = e * h / (1 + e) ** 2
    return np.where(np.isinf(z), np.where(z > 0, 1.0, 0.0), np.where(z >= 0, pos, neg))


# ---------------------------------------------------------------------------------------------
def _phi_cdf(x):
    # 0.5 * (1 + erf(x / sqrt(2))) to float64 accuracy: 0.5 * erfc(-x / sqrt(2)) (math.erfc),
    # which does not cancel for negative x as 1 + erf does.
    return np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in np.ravel(x)], np.float64).reshape(np.shape(x))


def activation_gelu(x, half=False):
    # f(x) = 0.5 * x * (1 + erf(x / sqrt(2))) = x * Phi(x); at x = -inf the limit -0 (the
    # formula's -inf * 0).
    fx = read(x)
    with np.errstate(invalid="ignore"):
        y = fx * _phi_cdf(fx)
    return [np.where(np.isneginf(fx), -0.0, y)]


def gelu_slope(x, half=False):
    # d/dx x Phi(x) = Phi(x) + x exp(-x^2 / 2) / sqrt(2 pi); the limits 1 and 0 at +-inf.
    fx = read(x)
    with np.errstate(over="ignore", invalid="ignore"):
        d = _phi_cdf(fx) + fx * np.exp(-0.5 * fx * fx) / math.sqrt(2 * math.pi)
    return np.where(np.isinf(fx), np.where(fx > 0, 1.0, 0.0), d)


REFERENCES = {
    "DML_OPERATOR_ACTIVATION_GELU": Reference(
        activation_gelu,
        attrs=(Attrs(half={"half": True}),),
        grad=elementwise_vjp(gelu_slope),
    ),
    "DML_OPERATOR_ACTIVATION_SWISH": Reference(
        activation_swish,
        attrs=_with_half({}, {"sigmoid_input_scale": 1.702}, {"sigmoid_input_scale": -0.5}),
        grad=elementwise_vjp(swish_slope),
    ),
    "DML_OPERATOR_ACTIVATION_HARD_SWISH": Reference(
        activation_hard_swish,
        attrs=_with_half({}, {"alpha": 0.2, "beta": 0.5}, {"alpha": -0.7, "beta": 0.1}),
        grad=elementwise_vjp(hard_swish_slope),
        near_kink=hard_swish_near_kink,
        multiply_add=True,
    ),
    "DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU": Reference(
        activation_parameterized_relu,
        grad=elementwise_vjp(parameterized_relu_slopes),
        near_kink=_near_zero,
    ),
}
