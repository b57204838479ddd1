"""What the normalization references share: the statistics layout of the pages (a dimension of
1 in a statistics tensor is broadcast, and statistics are taken over those dimensions), the fused
activations the generated cases use, and reference gradients by complex-step differentiation of
the float64 formulas (exact to float64 rounding, no step-size error), with the size of the terms
each gradient element sums (the budget's magnitude)."""

import numpy as np

from tests.reference.rules import c_float

H = 1e-30  # the complex step: its square vanishes next to any value the formulas meet


def ones_axes(stat_shape, x_shape):
    """The dimensions where a statistics tensor has size 1: what its statistics reduce."""
    return tuple(i for i, s in enumerate(stat_shape) if s == 1 and x_shape[i] != 1)


def reduce_to(t, shape, op=np.sum):
    """``t`` reduced over the dimensions where ``shape`` has size 1 (kept as 1s)."""
    axes = ones_axes(shape, np.shape(t))
    return op(t, axis=axes, keepdims=True) if axes else t


def activation(y, fused=None):
    """A fused activation on the host's result, as the activation's page defines it: ``fused``
    None, "RELU", "SIGMOID" or ("ELU", alpha). Complex-safe (branches chosen on the real part)."""
    if fused is None:
        return y
    if fused == "RELU":
        return np.where(np.real(y) > 0, y, 0.0 * y)
    if fused == "SIGMOID":
        return 1.0 / (1.0 + np.exp(-y))
    name, alpha = fused
    assert name == "ELU"
    y = np.asarray(y)
    with np.errstate(over="ignore", invalid="ignore"):
        em1 = np.exp(y) - 1.0 if np.iscomplexobj(y) else np.expm1(np.minimum(y, 0.0))
    return np.where(np.real(y) >= 0, y, c_float(alpha) * em1)


def _terms(value):
    return value if isinstance(value, tuple) else (value,)


def complex_step(core, inputs, dy):
    """For ``core`` (float64 or complex arrays -> the first output, or a tuple of terms whose sum
    it is; written complex-safe): the gradient of sum(output * dy) by each input (None where an
    input is None), and each element's magnitude, sum over the terms of |J_term|^T |dy| (the
    sizes of what its sum adds, cancellation between the terms included)."""
    base = [None if a is None else np.asarray(a, np.complex128) for a in inputs]
    dy = np.asarray(dy, np.float64)
    grads, sizes = [], []
    for i, a in enumerate(base):
        if a is None:
            grads.append(None)
            sizes.append(None)
            continue
        g, m = np.zeros(a.shape), np.zeros(a.shape)
        for k in np.ndindex(a.shape):
            z = a.copy()
            z[k] += 1j * H
            args = list(base)
            args[i] = z
            with np.errstate(all="ignore"):
                cols = [np.broadcast_to(np.imag(np.asarray(t)) / H, dy.shape) for t in _terms(core(*args))]
            g[k] = sum(np.sum(c * dy) for c in cols)
            m[k] = sum(np.sum(np.abs(c) * np.abs(dy)) for c in cols)
        grads.append(g)
        sizes.append(m)
    return grads, sizes


def slope(fused, y):
    """The fused activation's derivative at the host's result ``y`` (1 without one)."""
    if fused is None:
        return np.ones_like(y)
    with np.errstate(all="ignore"):
        return np.imag(activation(np.asarray(y, np.complex128) + 1j * H, fused)) / H


def centering_sizes(g, x, mean, sigma, axes, use_mean=True):
    """What rounding the normalized input X = (x - mean) / sigma adds to a normalization's gradient
    sizes (dX = (g - mean(g) - X mean(g X)) / sigma, g = dY times the slope and the Scale): X's error
    is of the order of (|x| + |mean|) / sigma ulps, which cancellation in x - mean leaves
    whole. Returns (the dInput term, the per-element term a Scale gradient sums)."""
    cond = (np.abs(x) + (np.abs(mean) if use_mean else 0.0)) / sigma
    k = np.mean(np.abs(g) * cond, axis=axes, keepdims=True) if axes else np.abs(g) * cond
    return (cond + np.abs((x - (mean if use_mean else 0.0)) / sigma)) * k / sigma, np.abs(g) * cond


def total(value):
    """The output a core's terms add up to."""
    terms = _terms(value)
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def stat_shape(shape):
    """The statistics layout the generated cases use: one value per channel (dimension 1) of an
    input of 2 or more dimensions, one for the whole of a 1-D input."""
    return (1, shape[1]) + (1,) * (len(shape) - 2) if len(shape) >= 2 else (1,)


def columns_of(shape):
    """A generated 1-D vector of 16 or more elements as (4, n / 4): with statistics per column
    (stat_shape), four terms to each statistic and many statistics, so that the generated
    directional differences (in the outputs' rounding) resolve their gradients; other shapes
    unchanged."""
    shape = tuple(shape)
    return (4, shape[0] // 4) if len(shape) == 1 and shape[0] >= 16 and shape[0] % 4 == 0 else shape


def rows_of(shape):
    """A generated 4-D vector (1, 1, 1, n) as (1, n / 8, 2, 4): channels and a spatial window to
    normalize over; other shapes unchanged."""
    shape = tuple(shape)
    if len(shape) == 4 and shape[:3] == (1, 1, 1) and shape[3] % 8 == 0:
        return (1, shape[3] // 8, 2, 4)
    return shape


def _sizes(grad):
    return lambda *a, **k: grad(*a, **k, sizes=True)
