"""Gradients (SEMANTICS.md 5, issue 2 item 6): exact values at the kinks, finite differences away
from them, forward mode too, and float0 for integer and condition inputs."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import dmljax

ALPHA, GAMMA = float(np.float32(1.6732)), float(np.float32(1.0507))


def grad_of(f, x):
    return np.asarray(jax.grad(lambda v: jnp.sum(f(v)))(x))


def test_threshold_gradient_at_tie_below_above_and_nan():
    x = jnp.array([0.5, 0.25, 1.0, jnp.nan, -jnp.inf, jnp.inf], jnp.float32)
    g = grad_of(lambda v: dmljax.element_wise_threshold(v, min=0.5), x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0, 0.0, 0.0, 1.0])


def test_threshold_gradient_carries_scale():
    x = jnp.array([-1.0, 0.0, 2.0], jnp.float32)  # g = 3x - 1 -> [-4, -1, 5]; Min = -1: tie at x=0
    g = grad_of(lambda v: dmljax.element_wise_threshold(v, min=-1.0, scale_bias=(3.0, -1.0)), x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 3.0])


def test_threshold_gradient_nan_min_passes_everything():
    x = jnp.array([-1.0, 2.0], jnp.float32)
    g = grad_of(lambda v: dmljax.element_wise_threshold(v, min=math.nan, scale_bias=(2.0, 0.0)), x)
    np.testing.assert_array_equal(g, [2.0, 2.0])


def test_scaled_elu_gradient_branches():
    x = jnp.array([2.0, 0.0, -0.0, -1.0, 1e-30], jnp.float32)
    g = grad_of(lambda v: dmljax.activation_scaled_elu(v), x)
    expected = [GAMMA, GAMMA * ALPHA, GAMMA * ALPHA, GAMMA * ALPHA * math.exp(-1.0), GAMMA]
    np.testing.assert_allclose(g, np.array(expected, np.float32), rtol=2e-7)


@pytest.mark.parametrize("dtype,big", [(jnp.float32, 100.0), (jnp.float32, 3e38), (jnp.float16, 12.0), (jnp.float16, 60000.0)])
def test_scaled_elu_gradient_no_nan_for_large_inputs(dtype, big):
    x = jnp.array([big, -big], dtype)
    g = grad_of(lambda v: dmljax.activation_scaled_elu(v), x)
    assert np.isfinite(g).all(), g
    assert g[0] == np.asarray(GAMMA, np.float32).astype(dtype)
    slope = GAMMA * ALPHA * math.exp(-big)  # Gamma * Alpha * exp(x) on the selected branch
    np.testing.assert_allclose(float(g[1]), slope, rtol=1e-2, atol=float(jnp.finfo(dtype).tiny))


def test_modulus_floor_gradients():
    a = jnp.array([7.0, -7.0, 5.5], jnp.float32)
    b = jnp.array([3.0, 3.0, -2.0], jnp.float32)
    da, db = jax.grad(lambda x, y: jnp.sum(dmljax.element_wise_modulus_floor(x, y)), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(da, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(db, [-2.0, 3.0, 3.0])  # -floor(a / b): floor(7/3)=2, floor(-7/3)=-3, floor(-2.75)=-3


@pytest.mark.parametrize("e,expected", [
    (0.0, 0.0), (1.0, 1.0), (2.0, 0.0), (3.0, 0.0), (0.5, math.inf), (-1.0, -math.inf), (-2.0, -math.inf),
])
def test_constant_pow_gradient_at_zero(e, expected):
    g = grad_of(lambda v: dmljax.element_wise_constant_pow(v, exponent=e), jnp.array([0.0], jnp.float32))
    assert g[0] == expected and (g[0] == 0 or np.sign(g[0]) == np.sign(expected)), (e, g)


def test_constant_pow_gradient_exponent_zero_is_exactly_zero():
    x = jnp.array([0.0, -0.0, 2.0, -3.0, jnp.nan, jnp.inf], jnp.float32)
    g = grad_of(lambda v: dmljax.element_wise_constant_pow(v, exponent=0), x)
    assert (g == 0).all() and not np.isnan(g).any()


def test_constant_pow_gradient_values():
    x = jnp.array([2.0, -2.0, 0.5], jnp.float32)
    g = grad_of(lambda v: dmljax.element_wise_constant_pow(v, exponent=3, scale_bias=(2.0, 0.0)), x)
    # d/dx (2x)^3 = 3 * (2x)^2 * 2
    np.testing.assert_allclose(g, [96.0, 96.0, 6.0], rtol=1e-6)


def test_if_routes_gradient_and_condition_gets_float0():
    c = np.array([1, 0, 255], np.uint8)
    a = jnp.array([1.0, 2.0, 3.0], jnp.float32)
    b = jnp.array([4.0, 5.0, 6.0], jnp.float32)
    y, vjp = jax.vjp(dmljax.element_wise_if, c, a, b)
    dc, da, db = vjp(jnp.array([10.0, 20.0, 30.0], jnp.float32))
    assert dc.dtype == jax.dtypes.float0
    np.testing.assert_array_equal(da, [10.0, 0.0, 30.0])
    np.testing.assert_array_equal(db, [0.0, 20.0, 0.0])


def test_integer_inputs_get_float0():
    a = np.array([7, -7], np.int32)
    b = np.array([3, 3], np.int32)
    _, vjp = jax.vjp(dmljax.element_wise_modulus_floor, a, b)
    da, db = vjp(np.zeros(2, jax.dtypes.float0))
    assert da.dtype == jax.dtypes.float0 and db.dtype == jax.dtypes.float0
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        jax.grad(lambda v: dmljax.element_wise_threshold(v, min=0).sum())(a)


@pytest.mark.parametrize("name,kwargs,lo,hi", [
    ("DML_OPERATOR_ACTIVATION_SCALED_ELU", {}, -4.0, 4.0),
    ("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", {"min": 0.3, "scale_bias": (1.5, -0.25)}, -3.0, 3.0),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": 2.5, "scale_bias": (0.5, 2.0)}, 0.5, 3.0),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": -3.0}, 0.5, 3.0),
])
def test_unary_finite_differences_away_from_kinks(name, kwargs, lo, hi, rng, x64):
    # FLOAT64 is not a type these operators take, so finite differences run on FLOAT32 inputs
    # with float32-sized steps; points are kept 0.05 away from the kinks.
    op = dmljax.get_operator(name)
    x = rng.uniform(lo, hi, 64).astype(np.float32)
    if "min" in kwargs:
        s, b = kwargs["scale_bias"]
        x = x[np.abs(x * s + b - kwargs["min"]) > 0.05]
    if name.endswith("SCALED_ELU"):
        x = x[np.abs(x) > 0.05]
    check_grads(lambda v: op(v, **kwargs), (jnp.asarray(x),), order=1, modes=("fwd", "rev"),
                eps=1e-2, atol=2e-2, rtol=2e-2)


def test_binary_finite_differences(rng):
    a = jnp.asarray(rng.uniform(-10, 10, 32).astype(np.float32))
    b = jnp.asarray(rng.uniform(1, 3, 32).astype(np.float32))
    q = np.asarray(a) / np.asarray(b)
    keep = np.abs(q - np.round(q)) > 0.05  # away from the jumps of floor(a / b)
    a, b = a[keep], b[keep]
    check_grads(dmljax.element_wise_modulus_floor, (a, b), order=1, modes=("fwd", "rev"), eps=1e-3, atol=2e-2, rtol=2e-2)
    check_grads(dmljax.element_wise_multiply, (a, b), order=1, modes=("fwd", "rev"), eps=1e-2, atol=2e-2, rtol=2e-2)


def test_forward_mode_matches_reverse_mode():
    x = jnp.array([-1.0, 0.5, 2.0], jnp.float32)
    for f in (lambda v: dmljax.activation_scaled_elu(v),
              lambda v: dmljax.element_wise_threshold(v, min=0.5),
              lambda v: dmljax.element_wise_constant_pow(v, exponent=3)):
        fwd = jax.jacfwd(f)(x)
        rev = jax.jacrev(f)(x)
        np.testing.assert_array_equal(fwd, rev)
