"""float64 references of BATCH_NORMALIZATION, BATCH_NORMALIZATION_TRAINING and their *_GRAD
operators, transcribed from their pages (../shared/spec/operators/dml_batch_normalization*.md):

    Output = FusedActivation(Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias [+ FusedAdd])

with the training operator's Mean and Variance computed over the dimensions where Scale has size
1 (the variance divided by the element count: the biased one), and the GRAD pages' formulas term
by term. Gradients by complex-step differentiation of these formulas (_common.py)."""

import numpy as np

import dmljax
from tests.reference.normalization._common import (
    activation, centering_sizes, columns_of, complex_step, ones_axes, reduce_to, slope, stat_shape, total,
)
from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, read


def _rand(rng, dt, shape, role="value"):
    from tests.catalog import random_tensor  # (tests.catalog imports the references)
    return random_tensor(rng, dt, shape, role)


def _uniform(rng, dt, shape, lo, hi):
    return rng.uniform(lo, hi, shape).astype(dt.dtype)


# -------------------------------------------------------------------------- BATCH_NORMALIZATION
def _fused(terms, fused):
    """The terms of the host's result, or (with a fused activation) the activation of their sum."""
    return terms if fused is None else activation(total(terms), fused)


def _bn_core(eps, fused):
    def core(x, m, v, s, b):
        return _fused((s * ((x - m) / np.sqrt(v + eps)), b), fused)
    return core


def batch_normalization(x, mean, variance, scale, bias, epsilon=1e-5, spatial=True, fused=None, half=False):
    args = [read(a) for a in (x, mean, variance, scale, bias)]
    return [total(_bn_core(c_float(epsilon), fused)(*args))]


def _bn_magnitude(x, mean, variance, scale, bias, epsilon=1e-5, **_):
    x, m, v, s, b = (read(a) for a in (x, mean, variance, scale, bias))
    return np.abs(s) * (np.abs(x) + np.abs(m)) / np.sqrt(v + c_float(epsilon)) + np.abs(b)


def _bn_grad(dy, x, mean, variance, scale, bias, epsilon=1e-5, spatial=True, fused=None, half=False, sizes=False):
    args = [read(a) for a in (x, mean, variance, scale, bias)]
    grads, mags = complex_step(_bn_core(c_float(epsilon), fused), args, dy)
    return mags if sizes else grads


def _bn_inputs(rng, types, shape, **_):
    dt = types["InputTensor"]
    st = stat_shape(shape)
    # Mean, Scale, Bias per channel, Variance at least 0.5; the Variance by another layout when
    # it can be (each dimension 1 or the input's)
    # (moderate values: the generated directional differences compare with outputs rounded to
    # FLOAT16, whose noise grows with the outputs)
    vshape = (1,) * (len(shape) - 1) + shape[-1:] if len(shape) >= 2 else st
    return [_rand(rng, dt, shape, "factor"), _uniform(rng, dt, st, -0.5, 0.5), _uniform(rng, dt, vshape, 1.0, 4.0),
            _rand(rng, dt, st, "factor"), _uniform(rng, dt, st, -0.5, 0.5)]


# ----------------------------------------------------------------- BATCH_NORMALIZATION_TRAINING
def _moments(x, scale_shape):
    axes = ones_axes(scale_shape, x.shape)
    mean = x.mean(axis=axes, keepdims=True) if axes else x
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True) if axes else 0.0 * x
    return mean, var


def _training_core(eps, fused, scale_shape):
    def core(x, s, b, fa=None):
        mean, var = _moments(x, scale_shape)
        terms = (s * ((x - mean) / np.sqrt(var + eps)), b) + (() if fa is None else (fa,))
        return _fused(terms, fused)
    return core


def batch_normalization_training(x, scale, bias, fused_add=None, epsilon=1e-5, fused=None, half=False):
    xs, s, b = read(x), read(scale), read(bias)
    fa = None if fused_add is None else read(fused_add)
    mean, var = _moments(xs, s.shape)
    out = total(_training_core(c_float(epsilon), fused, s.shape)(xs, s, b, fa))
    return [(out, np.broadcast_to(mean, s.shape), np.broadcast_to(var, s.shape))]


def _training_magnitude(x, scale, bias, fused_add=None, epsilon=1e-5, **_):
    # Output: its terms' sizes; OutputMean: mean(|x|); OutputVariance: the squared deviations'
    # sizes, with what the subtraction x - mean can lose (|x - mean| * (|x| + |mean|))
    xs, s, b = read(x), read(scale), read(bias)
    mean, var = _moments(xs, s.shape)
    size = np.abs(s) * (np.abs(xs) + np.abs(mean)) / np.sqrt(var + c_float(epsilon)) + np.abs(b)
    size = size if fused_add is None else size + np.abs(read(fused_add))
    dev = np.abs(xs - mean) * (np.abs(xs) + np.abs(mean))
    return (size, np.broadcast_to(reduce_to(np.abs(xs), s.shape, np.mean), s.shape),
            np.broadcast_to(var + 2 * reduce_to(dev, s.shape, np.mean), s.shape))


def _training_grad(dy, x, scale, bias, fused_add=None, epsilon=1e-5, fused=None, half=False, sizes=False):
    args = [read(x), read(scale), read(bias), None if fused_add is None else read(fused_add)]
    eps = c_float(epsilon)
    grads, mags = complex_step(_training_core(eps, fused, np.shape(scale)), args, dy)
    if not sizes:
        return grads
    # the sizes of the terms, and what the rounding of the normalized input adds (_common.py)
    xs, s = args[0], args[1]
    mean, var = _moments(xs, s.shape)
    sigma = np.sqrt(var + eps)
    g = np.asarray(dy, np.float64) * slope(fused, total(_training_core(eps, None, s.shape)(*args)))
    dx, per = centering_sizes(g, xs, mean, sigma, ones_axes(s.shape, xs.shape))
    mags[0] = mags[0] + np.abs(s) * dx
    mags[1] = mags[1] + reduce_to(per, s.shape)
    return mags


def _training_inputs(rng, types, shape, **_):
    # positive inputs: OutputMean and OutputVariance are compared in ULP of themselves (only the
    # first output has a magnitude), so their sums must not cancel
    dt = types["InputTensor"]
    st = stat_shape(shape)
    return [_uniform(rng, dt, shape, 1.0, 3.0), _rand(rng, dt, st, "factor"), _uniform(rng, dt, st, -0.5, 0.5),
            _uniform(rng, dt, shape, -0.5, 0.5)]


# ------------------------------------------------------------------------------ the GRAD pages
def batch_normalization_grad(x, dy, mean, variance, scale, epsilon=1e-5, half=False):
    # OutputGradient = InputGradient * (Scale / sqrt(Variance + Epsilon))
    # OutputScaleGradient = sum(InputGradient * (Input - Mean) / sqrt(Variance + Epsilon))
    # OutputBiasGradient = sum(InputGradient)
    x, g, m, v, s = (read(a) for a in (x, dy, mean, variance, scale))
    return [_grad_outputs(x, g, m, v, s, c_float(epsilon), lambda *a: total(_bn_grad_core(*a)))]


def _bn_grad_core(x, g, m, v, s, eps):
    return g * (s / np.sqrt(v + eps))


def batch_normalization_training_grad(x, dy, mean, variance, scale, epsilon=1e-5, half=False):
    x, g, m, v, s = (read(a) for a in (x, dy, mean, variance, scale))
    return [_grad_outputs(x, g, m, v, s, c_float(epsilon), lambda *a: total(_training_grad_core(*a)))]


def _training_grad_core(x, g, m, v, s, eps):
    # Coef0 = 1 / sqrt(Variance + Epsilon); Coef1 = InputGradient * (Input - mean(Input));
    # InputGradientCentered = InputGradient - mean(InputGradient); InputCentered = Input - mean(Input);
    # OutputGradient = Scale * Coef0 * (InputGradientCentered - InputCentered * mean(Coef1) / (Variance + Epsilon)),
    # mean(Input) being the MeanTensor, the means over the dimensions where MeanTensor has size 1
    def mean_of(t):
        return reduce_to(t, np.shape(m), np.mean)
    coef0 = 1.0 / np.sqrt(v + eps)
    coef1 = g * (x - m)
    # (as terms: InputGradient, its mean and the Coef1 term, whose sum the OutputGradient is)
    return (s * coef0 * g, -s * coef0 * mean_of(g), -s * coef0 * (x - m) * mean_of(coef1) / (v + eps))


def _grad_outputs(x, g, m, v, s, eps, core):
    return (core(x, g, m, v, s, eps), reduce_to(g * (x - m) / np.sqrt(v + eps), np.shape(m)),
            reduce_to(g, np.shape(m)))


def _sum_magnitudes(x, g, m, v, eps):
    """The sizes of the terms of OutputScaleGradient and OutputBiasGradient."""
    return reduce_to(np.abs(g * (x - m)) / np.sqrt(v + eps), np.shape(m)), reduce_to(np.abs(g), np.shape(m))


def _bn_grad_magnitude(x, dy, mean, variance, scale, epsilon=1e-5, **_):
    x, g, m, v, s = (read(a) for a in (x, dy, mean, variance, scale))
    eps = c_float(epsilon)
    return (np.abs(g * s) / np.sqrt(v + eps), *_sum_magnitudes(x, g, m, v, eps))


def _training_grad_magnitude(x, dy, mean, variance, scale, epsilon=1e-5, **_):
    x, g, m, v, s = (read(a) for a in (x, dy, mean, variance, scale))
    eps = c_float(epsilon)
    def mean_abs(t):
        return reduce_to(np.abs(t), np.shape(m), np.mean)
    size = np.abs(s) / np.sqrt(v + eps) * (np.abs(g) + mean_abs(g) + np.abs(x - m) * mean_abs(g * (x - m)) / (v + eps))
    return (size, *_sum_magnitudes(x, g, m, v, eps))


def _second_order(core):
    def grad(dy2, x, dy, mean, variance, scale, epsilon=1e-5, half=False, sizes=False):
        args = [read(a) for a in (x, dy, mean, variance, scale)]
        eps = c_float(epsilon)
        grads, mags = complex_step(lambda *a: core(*a, eps), args, dy2)
        return mags if sizes else grads
    return grad


def _grad_inputs(rng, types, shape, **_):
    # Input above Mean and InputGradient positive: OutputScaleGradient and OutputBiasGradient (no
    # magnitude of their own in the generated comparison) are sums without cancellation
    dt = types["InputTensor"]
    st = stat_shape(shape)
    return [_uniform(rng, dt, shape, 0.25, 2.0), _uniform(rng, dt, shape, 0.25, 1.0),
            _uniform(rng, dt, st, -1.0, 0.0), _uniform(rng, dt, st, 1.0, 2.0), _rand(rng, dt, st, "factor")]


def _sizes_of(grad):
    return lambda *a, **k: grad(*a, **k, sizes=True)


# few sets: each costs compiles in every generated check. The fused activation is a smooth one (the
# generated finite differences cannot step across a kink; RELU is in the hand tests), and not in
# the first set (tests/test_dxdispatch_catalog.py writes the first set as a DxDispatch model)
_ELU = dmljax.FusedActivation("ACTIVATION_ELU")
_BN_SETS = (Attrs({"epsilon": 0.5}, half={"epsilon": 0.5, "half": True}),)
_TRAINING_SETS = (Attrs({"epsilon": 0.5}, half={"epsilon": 0.5, "half": True}),
                  Attrs({"epsilon": 1e-3, "fused_activation": _ELU}, ref={"epsilon": 1e-3, "fused": ("ELU", 1.0)}))
_GRAD_SETS = (Attrs({"epsilon": 0.25}, half={"epsilon": 0.25, "half": True}),)

REFERENCES = {
    "DML_OPERATOR_BATCH_NORMALIZATION": Reference(
        batch_normalization, attrs=_BN_SETS, make_inputs=_bn_inputs, magnitude=_bn_magnitude, grad=_bn_grad,
        grad_magnitude=_sizes_of(_bn_grad), pointwise=False, accumulates=True, shape=columns_of),
    "DML_OPERATOR_BATCH_NORMALIZATION_TRAINING": Reference(
        batch_normalization_training, attrs=_TRAINING_SETS, make_inputs=_training_inputs, magnitude=_training_magnitude,
        grad=_training_grad, grad_magnitude=_sizes_of(_training_grad), pointwise=False, accumulates=True, shape=columns_of),
    "DML_OPERATOR_BATCH_NORMALIZATION_GRAD": Reference(
        batch_normalization_grad, attrs=_GRAD_SETS, make_inputs=_grad_inputs, magnitude=_bn_grad_magnitude,
        grad=_second_order(_bn_grad_core), grad_magnitude=_sizes_of(_second_order(_bn_grad_core)),
        pointwise=False, accumulates=True, shape=columns_of),
    "DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD": Reference(
        batch_normalization_training_grad, attrs=_GRAD_SETS, make_inputs=_grad_inputs,
        magnitude=_training_grad_magnitude, grad=_second_order(_training_grad_core),
        grad_magnitude=_sizes_of(_second_order(_training_grad_core)), pointwise=False, accumulates=True, shape=columns_of),
}
