"""Hypothesis properties: arbitrary inputs (specials included) against the float64 reference and
against laws the pages state (results signed like the divisor, selection by condition, ...)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import dmljax
from dmljax import DataType
from tests import tiers
from tests.compare import assert_matches
from tests.reference.activation import piecewise as activation
from tests.reference.element_wise_arithmetic import arithmetic, clamp
from tests.reference.element_wise_logical import logical
from tests.reference.element_wise_math import exp_log_pow as emath
from tests.reference.rules import read

SETTINGS = settings(max_examples=tiers.by_tier(8, 50), deadline=None)
pytestmark = pytest.mark.fuzz
shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)
f32 = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)
f16 = st.floats(width=16, allow_nan=True, allow_infinity=True)
attr = st.floats(-1e6, 1e6, width=32)


def arrays(dtype, elements):
    return shapes.flatmap(lambda s: hnp.arrays(dtype, s, elements=elements))


@SETTINGS
@given(arrays(np.float32, f32), attr, st.none() | st.tuples(attr, attr))
def test_threshold_matches_reference(x, m, sb):
    out = dmljax.element_wise_threshold(x, min=m, scale_bias=sb)
    assert_matches(out, clamp.element_wise_threshold(x, m, sb), DataType.FLOAT32, 1, f"min={m} sb={sb}")


@SETTINGS
@given(arrays(np.float16, f16), st.floats(-4, 4, width=32))
def test_scaled_elu_matches_reference_float16(x, alpha):
    out = dmljax.activation_scaled_elu(x, alpha=alpha)
    assert_matches(out, activation.activation_scaled_elu(x, alpha), DataType.FLOAT16, 1, f"alpha={alpha}")


@SETTINGS
@given(arrays(np.float32, st.floats(-80, 80, width=32)))
def test_scaled_elu_matches_reference_float32(x):
    out = dmljax.activation_scaled_elu(x)
    assert_matches(out, activation.activation_scaled_elu(x), DataType.FLOAT32,
                   dmljax.activation_scaled_elu.spec.ulp[DataType.FLOAT32])


@SETTINGS
@given(arrays(np.float32, f32), st.sampled_from([0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 1.5, 7.0, -3.0, math.inf, math.nan]))
def test_constant_pow_matches_reference(x, e):
    out = dmljax.element_wise_constant_pow(x, exponent=e)
    assert_matches(out, emath.element_wise_constant_pow(x, e), DataType.FLOAT32,
                   dmljax.element_wise_constant_pow.spec.ulp[DataType.FLOAT32], f"e={e}")


@SETTINGS
@given(shapes.flatmap(lambda s: st.tuples(hnp.arrays(np.float32, s, elements=f32), hnp.arrays(np.float32, s, elements=f32))))
def test_modulus_floor_matches_python_and_takes_the_divisors_sign(ab):
    a, b = ab
    out = np.asarray(dmljax.element_wise_modulus_floor(a, b))
    assert_matches(out, arithmetic.element_wise_modulus_floor(a, b), DataType.FLOAT32, 1)
    fb = read(b)  # denormals read as zero
    finite = np.isfinite(out) & np.isfinite(fb) & (fb != 0)
    assert (np.signbit(out[finite]) == np.signbit(fb[finite])).all()
    assert (np.abs(out[finite]) <= np.abs(fb[finite])).all()


@SETTINGS
@given(shapes.flatmap(lambda s: st.tuples(hnp.arrays(np.int8, s), hnp.arrays(np.int8, s))))
def test_modulus_floor_int8_matches_python(ab):
    a, b = ab
    out = dmljax.element_wise_modulus_floor(a, b)
    assert_matches(out, arithmetic.element_wise_modulus_floor(a, b), DataType.INT8)


@SETTINGS
@given(shapes.flatmap(lambda s: st.tuples(hnp.arrays(np.uint8, s), hnp.arrays(np.int32, s), hnp.arrays(np.int32, s))))
def test_if_is_selection(cab):
    c, a, b = cab
    out = np.asarray(dmljax.element_wise_if(c, a, b))
    np.testing.assert_array_equal(out, np.where(c != 0, a, b))


def f16_bits(shape):
    """Every FLOAT16 bit pattern (NaNs, infinities, denormals) without hypothesis's float
    filtering, which can trip its filter_too_much health check."""
    return hnp.arrays(np.uint16, shape).map(lambda u: u.view(np.float16))


@SETTINGS
@given(shapes.flatmap(lambda s: st.tuples(f16_bits(s), f16_bits(s))))
def test_less_than_and_multiply_float16(ab):
    a, b = ab
    assert_matches(dmljax.element_wise_logical_less_than(a, b), logical.element_wise_logical_less_than(a, b), DataType.UINT8)
    assert_matches(dmljax.element_wise_multiply(a, b), arithmetic.element_wise_multiply(a, b), DataType.FLOAT16, 0)
