"""Hand-written edges of the element-wise math family (CONSTANT_POW): C99's special values and
the page's negative-base rule, one code path for 3 and 3.0, and the gradient at 0 and for
Exponent 0; against values derived independently (Python's math.pow, by hand). The generated
cases (tests/test_catalog.py) cover the support tables, data types, eager/jit and the reference
gradients away from the kinks."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax


def grad_of(f, x):
    return np.asarray(jax.grad(lambda v: jnp.sum(f(v)))(x))


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_CONSTANT_POW


def c99_pow(x, e):
    """C99's pow via Python's math.pow, with the page's rule for negative bases; math.pow raises
    where C99 returns inf/NaN, so those are spelled out."""
    if e == 0:
        return 1.0
    if x == 1:
        return 1.0
    if math.isnan(x) or math.isnan(e):
        return math.nan
    integral = math.isinf(e) or e == math.floor(e)
    if x < 0 and not integral:
        return math.nan  # the page: also for x = -inf (C99 would say +inf)
    odd = integral and not math.isinf(e) and int(e) % 2 == 1
    if x == 0:
        if e < 0:
            return math.copysign(math.inf, x) if odd else math.inf
        return math.copysign(0.0, x) if odd else 0.0
    if math.isinf(x):
        mag = math.inf if e > 0 else 0.0
        return -mag if (x < 0 and odd) else mag
    try:
        return math.pow(x, e)
    except OverflowError:
        return math.copysign(math.inf, x) if (x < 0 and odd) else math.inf


POW_X = [-math.inf, -3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, math.inf, math.nan]


POW_E = [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.5, -0.5, 2.5, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("e", POW_E, ids=str)
def test_constant_pow_special_values(e):
    x = np.array(POW_X, np.float32)
    out = np.asarray(dmljax.element_wise_constant_pow(x, exponent=e))
    for xi, got in zip(POW_X, out):
        exp = c99_pow(xi, e)
        if math.isnan(exp):
            assert np.isnan(got), (xi, e, got)
        else:
            assert got == np.float32(exp) and np.signbit(got) == (math.copysign(1, exp) < 0), (xi, e, got, exp)


def test_constant_pow_negative_bases_by_parity():
    x = np.array([-2.0, -3.0, -1.5], np.float32)
    np.testing.assert_array_equal(dmljax.element_wise_constant_pow(x, exponent=3), [-8.0, -27.0, -3.375])
    np.testing.assert_array_equal(dmljax.element_wise_constant_pow(x, exponent=2), [4.0, 9.0, 2.25])
    np.testing.assert_array_equal(dmljax.element_wise_constant_pow(x, exponent=-1), [-0.5, -1 / np.float32(3), -1 / np.float32(1.5)])
    assert np.isnan(np.asarray(dmljax.element_wise_constant_pow(x, exponent=1.5))).all()


def test_constant_pow_same_bits_for_3_and_3_point_0(rng):
    x = (rng.standard_normal(4096) * 10).astype(np.float32)
    outs = [np.asarray(dmljax.element_wise_constant_pow(x, exponent=e)).view(np.uint32)
            for e in (3, 3.0, np.float32(3), np.int64(3))]
    for o in outs[1:]:
        np.testing.assert_array_equal(outs[0], o)


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
