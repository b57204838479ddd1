"""float64 references of MEAN_VARIANCE_NORMALIZATION, MEAN_VARIANCE_NORMALIZATION1 and
MEAN_VARIANCE_NORMALIZATION2, from their pages: Scale * ((Input - Mean) / sqrt(Variance +
Epsilon)) + Bias over the normalized axes (CrossChannel: {1, 2, 3} or {2, 3}; the Axes), Mean and
the biased Variance of each slice; NormalizeVariance / UseVariance FALSE: no division; UseMean
FALSE (dmljax's reading of a TBD page): Mean 0, so Variance = mean(Input^2)."""

import numpy as np

import dmljax
from tests.reference.normalization._common import (
    activation, centering_sizes, complex_step, reduce_to, rows_of, slope, total,
)
from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, read


def _core(axes, use_mean, use_var, eps, fused):
    def core(x, s=None, b=None):
        mean = x.mean(axis=axes, keepdims=True) if use_mean else 0.0
        var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
        y = (x - mean) / np.sqrt(var + eps) if use_var else x - mean
        terms = (y if s is None else s * y,) + (() if b is None else (b,))
        return terms if fused is None else activation(total(terms), fused)
    return core


def _axes(kwargs, ndim):
    if "cross_channel" in kwargs or "axes" not in kwargs:
        return (1, 2, 3) if kwargs.get("cross_channel") else (2, 3)
    return tuple(kwargs["axes"])


def _flags(kwargs):
    use_var = kwargs.get("normalize_variance", kwargs.get("use_variance", True))
    return kwargs.get("use_mean", True), use_var


def _parts(x, scale, bias, kwargs):
    axes = _axes(kwargs, np.ndim(x))
    use_mean, use_var = _flags(kwargs)
    core = _core(axes, use_mean, use_var, c_float(kwargs.get("epsilon", 1e-5)), kwargs.get("fused"))
    return core, [read(x), None if scale is None else read(scale), None if bias is None else read(bias)]


def mean_variance_normalization(x, scale=None, bias=None, **kwargs):
    core, args = _parts(x, scale, bias, kwargs)
    return [total(core(*args))]


def _magnitude(x, scale=None, bias=None, **kwargs):
    _, (xs, s, b) = _parts(x, scale, bias, kwargs)
    axes = _axes(kwargs, xs.ndim)
    use_mean, use_var = _flags(kwargs)
    mean = np.abs(xs.mean(axis=axes, keepdims=True)) if use_mean else 0.0
    size = np.abs(xs) + mean
    if use_var:
        var = ((xs - (xs.mean(axis=axes, keepdims=True) if use_mean else 0.0)) ** 2).mean(axis=axes, keepdims=True)
        size = size / np.sqrt(var + c_float(kwargs.get("epsilon", 1e-5)))
    if s is not None:
        size = size * np.abs(s)
    return size if b is None else size + np.abs(b)


def _grad(dy, x, scale=None, bias=None, sizes=False, **kwargs):
    core, args = _parts(x, scale, bias, kwargs)
    grads, mags = complex_step(core, args, dy)
    use_mean, use_var = _flags(kwargs)
    if not sizes or not use_var:
        return mags if sizes else grads
    # the sizes of the terms, and what the rounding of the normalized input adds (_common.py)
    xs, s, _ = args
    axes = _axes(kwargs, xs.ndim)
    plain = _core(axes, use_mean, use_var, c_float(kwargs.get("epsilon", 1e-5)), None)
    g = np.asarray(dy, np.float64) * slope(kwargs.get("fused"), total(plain(*args)))
    mean = xs.mean(axis=axes, keepdims=True) if use_mean else 0.0
    var = ((xs - mean) ** 2).mean(axis=axes, keepdims=True)
    sigma = np.sqrt(var + c_float(kwargs.get("epsilon", 1e-5)))
    dx, _ = centering_sizes(g if s is None else g * s, xs, mean, sigma, axes, use_mean)
    mags[0] = mags[0] + dx
    if s is not None:  # dScale sums dY X: X's rounding, per element
        _, per = centering_sizes(g, xs, mean, sigma, axes, use_mean)
        mags[1] = mags[1] + reduce_to(per, np.shape(s))
    return mags


def _grad_sizes(*a, **k):
    return _grad(*a, **k, sizes=True)


def _inputs(rng, types, shape, **_):
    from tests.catalog import random_tensor  # (tests.catalog imports the references)
    dt = types["InputTensor"]
    # Scale over everything but the batch dimension (its ChannelCount the input's, as
    # MEAN_VARIANCE_NORMALIZATION1 asks before DML_FEATURE_LEVEL_4_0), Bias per channel
    sshape = (1,) + tuple(shape[1:]) if len(shape) >= 2 else tuple(shape)
    bshape = (1, shape[1]) + (1,) * (len(shape) - 2) if len(shape) >= 2 else (1,)
    return [random_tensor(rng, dt, shape, "factor"), random_tensor(rng, dt, sshape, "factor"),
            rng.uniform(-0.5, 0.5, bshape).astype(dt.dtype)]


_ELU = dmljax.FusedActivation("ACTIVATION_ELU")  # smooth: the generated finite differences cannot cross a kink


def _all_but_first(shape):
    return {"axes": tuple(range(1, len(shape))) if len(shape) > 1 else (0,)}


def _last(shape):
    return {"axes": (max(len(shape) - 1, 0),)}


# few sets (each costs compiles in every generated check), a fused activation never in the first
# (tests/test_dxdispatch_catalog.py writes the first set as a DxDispatch model); the other variants
# are in tests/ops/normalization/test_mean_variance.py
_MVN_SETS = (  # CrossChannel FALSE is MVN1's Axes {2, 3}, NormalizeVariance FALSE is MVN1's: the hand tests
    Attrs({"cross_channel": True, "epsilon": 0.25}, half={"cross_channel": True, "epsilon": 0.25, "half": True}),
)
_MVN1_SETS = (  # NormalizeVariance FALSE: the hand tests
    Attrs({"epsilon": 0.25}, half={"epsilon": 0.25, "half": True}, shaped=_all_but_first),
    Attrs({"epsilon": 0.25, "fused_activation": _ELU}, ref={"epsilon": 0.25, "fused": ("ELU", 1.0)}, shaped=_last),
)
_MVN2_SETS = (  # UseMean TRUE is MVN1's path; UseVariance FALSE: the hand tests
    Attrs({"use_mean": False, "epsilon": 0.25}, half={"use_mean": False, "epsilon": 0.25, "half": True},
          shaped=_last),
)


def _reference(sets):
    return Reference(mean_variance_normalization, attrs=sets, make_inputs=_inputs, magnitude=_magnitude, grad=_grad,
                     grad_magnitude=_grad_sizes, pointwise=False, accumulates=True, shape=rows_of)


REFERENCES = {
    "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION": _reference(_MVN_SETS),
    "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1": _reference(_MVN1_SETS),
    "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2": _reference(_MVN2_SETS),
}
