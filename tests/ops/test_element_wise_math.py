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


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_SQRT, EXP, LOG, ERF: IEEE special values (eager, and under jax.jit with the input a
# closure constant, where XLA could fold them), FLOAT32 denormal inputs read as zero, and the
# gradients at the singular points (the limit from the defined side, NaN outside the domain).

DENORMAL = 1e-40  # a FLOAT32 denormal: read as +0


def bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want, got.dtype)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (got, want)


@pytest.mark.parametrize("name,xs,want", [
    ("sqrt", [-0.0, 0.0, DENORMAL, -DENORMAL, 4.0, math.inf, -1.0, -math.inf, math.nan],
     [-0.0, 0.0, 0.0, -0.0, 2.0, math.inf, math.nan, math.nan, math.nan]),
    ("log", [0.0, -0.0, DENORMAL, -DENORMAL, 1.0, math.inf, -1.0, -math.inf, math.nan],
     [-math.inf, -math.inf, -math.inf, -math.inf, 0.0, math.inf, math.nan, math.nan, math.nan]),
    ("exp", [0.0, -0.0, 89.0, math.inf, -math.inf, -100.0, math.nan],
     [1.0, 1.0, math.inf, math.inf, 0.0, 0.0, math.nan]),  # exp(-100) is a denormal: flushed
    ("erf", [0.0, -0.0, DENORMAL, -DENORMAL, 10.0, -10.0, math.inf, -math.inf, math.nan],
     [0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 1.0, -1.0, math.nan]),
])
def test_unary_math_special_values(name, xs, want):
    op = getattr(dmljax, f"element_wise_{name}")
    x = np.array(xs, np.float32)
    bits_equal(op(x), np.array(want, np.float32))
    bits_equal(jax.jit(lambda: op(jnp.asarray(x)))(), np.array(want, np.float32))


def test_exp_overflow_float16_and_its_gradient():
    x = jnp.array([11.0, 11.1, 89.0], jnp.float16)
    y = np.asarray(dmljax.element_wise_exp(x))
    assert y[0] == np.float16(math.exp(np.float16(11.0))) and np.isinf(y[1:]).all()
    g = grad_of(dmljax.element_wise_exp, jnp.array([89.0, -math.inf, 0.0], jnp.float32))
    np.testing.assert_array_equal(g, [math.inf, 0.0, 1.0])
    g16 = grad_of(lambda v: dmljax.element_wise_exp(v).astype(jnp.float32), jnp.array([11.1, 0.0], jnp.float16))
    assert np.isinf(g16[0]) and g16[1] == 1.0


@pytest.mark.parametrize("name,xs,want", [
    ("sqrt", [0.0, -0.0, DENORMAL, 4.0, -1.0, math.inf], [math.inf, math.inf, math.inf, 0.25, math.nan, 0.0]),
    ("log", [0.0, -0.0, -DENORMAL, 4.0, -1.0, math.inf], [math.inf, math.inf, math.inf, 0.25, math.nan, 0.0]),
    ("erf", [0.0, -0.0, math.inf, -math.inf, math.nan], [2 / math.sqrt(math.pi)] * 2 + [0.0, 0.0, math.nan]),
])
def test_unary_math_gradient_at_singular_points(name, xs, want):
    op = getattr(dmljax, f"element_wise_{name}")
    g = grad_of(op, jnp.array(xs, jnp.float32))
    bits_equal(g, np.array(want, np.float32))


def test_scale_bias_chains_into_the_gradient():
    # d/dx log(2x + 1) = 2 / (2x + 1); d/dx sqrt(2x) at 0 is +inf; d/dx exp(-x) = -exp(-x)
    x = jnp.array([0.5, 1.5], jnp.float32)
    np.testing.assert_allclose(grad_of(lambda v: dmljax.element_wise_log(v, scale_bias=(2.0, 1.0)), x), [1.0, 0.5])
    g = grad_of(lambda v: dmljax.element_wise_sqrt(v, scale_bias=(2.0, 0.0)), jnp.array([0.0], jnp.float32))
    assert g[0] == math.inf
    np.testing.assert_allclose(grad_of(lambda v: dmljax.element_wise_exp(v, scale_bias=(-1.0, 0.0)), x),
                               -np.exp(-np.array([0.5, 1.5])), rtol=3e-7)


def test_erf_gradient_far_out_is_accurate():
    # exp(-g^2) at g = 9: g*g rounded to FLOAT32 would cost ~40 ULP; the exact split keeps it close
    x = np.array([3.0, 5.5, 7.25, 9.0, -9.0], np.float32)
    g = grad_of(dmljax.element_wise_erf, jnp.asarray(x))
    want = np.array([2 / math.sqrt(math.pi) * math.exp(-(float(v) ** 2)) for v in x])
    np.testing.assert_allclose(g, want, rtol=4 * 2.0**-23)
