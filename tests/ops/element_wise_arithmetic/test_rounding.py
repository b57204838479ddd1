"""Hand-written edges of the sign and rounding operators (ABS, SIGN, CEIL, FLOOR, ROUND): halves in
every DML_ROUNDING_MODE, values at 2^23/2^24 (FLOAT32) and 2^10/2^11 (FLOAT16) where every value is
already an integer, the sign of zero results, NaN and infinities, FLOAT32 denormals read as zero,
integer extremes, attribute forms, and gradients at the kinks. Expected values are written out
by hand (IEEE bit patterns, the DML_ROUNDING_MODE page's table) or come from the float64
references in tests/reference/element_wise_arithmetic/rounding.py. The generated cases
(tests/test_catalog.py) cover the support tables, data types, eager/jit and the reference
gradients away from the kinks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax import DataType, RoundingMode
from tests.reference.element_wise_arithmetic import rounding as ref

NAN, INF = np.nan, np.inf
DENORM = 1e-40  # a FLOAT32 denormal
F16_DENORM = 2.0**-24  # the smallest FLOAT16 denormal (kept: only FLOAT32 denormals are flushed)
SIGNED = [DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64]
UNSIGNED = [DataType.UINT8, DataType.UINT64]  # the narrowest and the widest: the formula is one


def bits(x):
    x = np.asarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def assert_same_bits(got, want):
    """Equal values with equal signs of zero; NaN as 'is NaN' (its payload is not the point)."""
    got, want = np.asarray(got), np.asarray(want, dtype=np.asarray(got).dtype)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(bits(got)[~nan], bits(want)[~nan])


def both(fn, x):
    """``fn(x)`` called directly and inside jax.jit with x a closure constant (which XLA may
    fold at compile time): the two must agree bit for bit, NaN as 'is NaN' (folding on the
    host gave another NaN payload than the H100's kernel); returns the direct one."""
    direct = np.asarray(fn(x))
    assert_same_bits(np.asarray(jax.jit(lambda: fn(x))()), direct)
    return direct


def grad(fn, x):
    return np.asarray(jax.grad(lambda v: jnp.sum(fn(v).astype(jnp.float32)))(x))


# ----------------------------------------------------------------------------------------------
# ROUND: DML_ROUNDING_MODE has three members (core/enum-values.md; there is no round-up or
# round-down mode: CEIL and FLOOR are those).

def test_round_has_only_directmls_three_modes():
    assert [(m.name, m.value) for m in RoundingMode] == [
        ("HALVES_TO_NEAREST_EVEN", 0), ("TOWARD_ZERO", 1), ("TOWARD_INFINITY", 2)]


def test_round_page_table():
    # The table of core/dml_rounding_mode.md, row by row.
    x = np.array([-2.5, -1.75, -1.5, -1.25, 0, 1.25, 1.5, 1.75, 2.5], np.float32)
    table = {
        RoundingMode.HALVES_TO_NEAREST_EVEN: [-2, -2, -2, -1, 0, 1, 2, 2, 2],
        RoundingMode.TOWARD_ZERO: [-2, -1, -1, -1, 0, 1, 1, 1, 2],
        RoundingMode.TOWARD_INFINITY: [-3, -2, -2, -1, 0, 1, 2, 2, 3],
    }
    for mode, want in table.items():
        for dtype in (np.float32, np.float16):
            out = dmljax.element_wise_round(x.astype(dtype), rounding_mode=mode)
            np.testing.assert_array_equal(np.asarray(out), np.array(want, dtype), err_msg=str(mode))


F32_HALVES = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.4, -0.0, 0.49999997, -0.49999997, 0.50000006,
                       4194304.5, 8388607.5, -8388607.5, 8388609, 16777215, -16777216, 16777218,
                       3.4028235e38, NAN, INF, -INF, DENORM, -DENORM], np.float32)
ROUNDED_F32 = {
    "HALVES_TO_NEAREST_EVEN": [0.0, 2, 2, -0.0, -2, -0.0, -0.0, 0.0, -0.0, 1, 4194304, 8388608,
                               -8388608, 8388609, 16777215, -16777216, 16777218, 3.4028235e38,
                               NAN, INF, -INF, 0.0, -0.0],
    "TOWARD_ZERO": [0.0, 1, 2, -0.0, -2, -0.0, -0.0, 0.0, -0.0, 0.0, 4194304, 8388607, -8388607,
                    8388609, 16777215, -16777216, 16777218, 3.4028235e38, NAN, INF, -INF, 0.0, -0.0],
    "TOWARD_INFINITY": [1.0, 2, 3, -1, -3, -0.0, -0.0, 0.0, -0.0, 1, 4194305, 8388608, -8388608,
                        8388609, 16777215, -16777216, 16777218, 3.4028235e38, NAN, INF, -INF, 0.0, -0.0],
}


@pytest.mark.parametrize("mode", list(ROUNDED_F32))
def test_round_float32_halves_signs_and_large_values(mode):
    # Halves, the float just below 0.5 (where floor(x + 0.5) would give 1), values at 2^22..2^24
    # where the spacing is 0.5, 1 and 2, signs of zero results (round(-0.4) is -0.0), NaN, inf,
    # and denormals read as signed zero. Also with x a constant folded under jit.
    out = both(lambda v: dmljax.element_wise_round(v, rounding_mode=mode), F32_HALVES)
    assert_same_bits(out, np.array(ROUNDED_F32[mode], np.float32))
    assert_same_bits(out, ref.element_wise_round(F32_HALVES, mode)[0].astype(np.float32))


F16_HALVES = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.4, 0.49975586, -0.49975586, 511.5, -1023.5,
                       1024, 1025, 2047, -2048, 2050, 65504, F16_DENORM, -F16_DENORM], np.float16)
ROUNDED_F16 = {
    "HALVES_TO_NEAREST_EVEN": [0.0, 2, 2, -0.0, -2, -0.0, 0.0, -0.0, 512, -1024, 1024, 1025, 2047,
                               -2048, 2050, 65504, 0.0, -0.0],
    "TOWARD_ZERO": [0.0, 1, 2, -0.0, -2, -0.0, 0.0, -0.0, 511, -1023, 1024, 1025, 2047, -2048,
                    2050, 65504, 0.0, -0.0],
    "TOWARD_INFINITY": [1.0, 2, 3, -1, -3, -0.0, 0.0, -0.0, 512, -1024, 1024, 1025, 2047, -2048,
                        2050, 65504, 0.0, -0.0],
}


@pytest.mark.parametrize("mode", list(ROUNDED_F16))
@pytest.mark.parametrize("half", [False, True])
def test_round_float16_halves_and_large_values(mode, half):
    # FLOAT16: halves, the half just below 0.5, 2^9..2^11 where the spacing is 0.5, 1 and 2, the
    # largest FLOAT16, and denormals (kept, so they round to a signed zero), computed in FLOAT32
    # or, with allow_half_precision_computation, in FLOAT16.
    out = both(lambda v: dmljax.element_wise_round(
        v, rounding_mode=mode, allow_half_precision_computation=half), F16_HALVES)
    assert_same_bits(out, np.array(ROUNDED_F16[mode], np.float16))


@pytest.mark.parametrize("mode", [RoundingMode.TOWARD_ZERO, "DML_ROUNDING_MODE_TOWARD_ZERO", "TOWARD_ZERO", 1])
def test_round_mode_spellings(mode):
    out = dmljax.element_wise_round(np.array([1.5, -2.7], np.float32), rounding_mode=mode)
    np.testing.assert_array_equal(np.asarray(out), np.array([1.0, -2.0], np.float32))


def test_round_default_mode_is_halves_to_nearest_even():
    out = dmljax.element_wise_round(np.array([0.5, 1.5, 2.5], np.float32))
    np.testing.assert_array_equal(np.asarray(out), np.array([0.0, 2.0, 2.0], np.float32))


@pytest.mark.parametrize("mode", ["HALVES_UP", 3, "TOWARD_POSITIVE_INFINITY", None])
def test_round_refuses_modes_directml_lacks(mode):
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.element_wise_round(np.array([0.5], np.float32), rounding_mode=mode)
    msg = str(info.value)
    assert msg.startswith("element_wise_round (DML_OPERATOR_ELEMENT_WISE_ROUND) at "), msg
    assert "RoundingMode (argument `rounding_mode`)" in msg, msg
    if mode is not None:
        assert ("valid: DML_ROUNDING_MODE_HALVES_TO_NEAREST_EVEN (0), DML_ROUNDING_MODE_TOWARD_ZERO (1), "
                "DML_ROUNDING_MODE_TOWARD_INFINITY (2)") in msg, msg


# ----------------------------------------------------------------------------------------------
# CEIL and FLOOR

def test_ceil_floor_float32_edges():
    x = np.array([-0.5, 0.5, -0.0, 0.0, -1.5, 1.5, 8388607.5, -8388607.5, 16777217.0 - 1, 2.0**24 + 2,
                  NAN, INF, -INF, DENORM, -DENORM], np.float32)
    ceil = np.array([-0.0, 1, -0.0, 0.0, -1, 2, 8388608, -8388607, 16777216, 2.0**24 + 2,
                     NAN, INF, -INF, 0.0, -0.0], np.float32)
    floor = np.array([-1.0, 0.0, -0.0, 0.0, -2, 1, 8388607, -8388608, 16777216, 2.0**24 + 2,
                      NAN, INF, -INF, 0.0, -0.0], np.float32)
    # ceil(1e-40) is +0.0, not 1: the denormal is read as zero; floor(-1e-40) is -0.0, not -1.
    assert_same_bits(both(dmljax.element_wise_ceil, x), ceil)
    assert_same_bits(both(dmljax.element_wise_floor, x), floor)


@pytest.mark.parametrize("half", [False, True])
def test_ceil_floor_float16_edges(half):
    x = np.array([-0.5, 0.5, 1023.5, -1023.5, 2047, 65504, -65504, F16_DENORM, -F16_DENORM], np.float16)
    ceil = np.array([-0.0, 1, 1024, -1023, 2047, 65504, -65504, 1, -0.0], np.float16)
    floor = np.array([-1.0, 0.0, 1023, -1024, 2047, 65504, -65504, 0.0, -1], np.float16)
    kw = {"allow_half_precision_computation": half}
    assert_same_bits(both(lambda v: dmljax.element_wise_ceil(v, **kw), x), ceil)
    assert_same_bits(both(lambda v: dmljax.element_wise_floor(v, **kw), x), floor)


def test_ceil_floor_scale_bias():
    # g(x) = x * Scale + Bias first: ceil(-1 * 0.5 + 0) is -0.0, floor(3 * 0.5 - 0.25) is 1.
    x = np.array([-1.0, 3.0, 2.0], np.float32)
    sb = (0.5, -0.25)
    np.testing.assert_array_equal(np.asarray(dmljax.element_wise_floor(x, scale_bias=sb)), [-1.0, 1.0, 0.0])
    np.testing.assert_array_equal(np.asarray(dmljax.element_wise_ceil(x, scale_bias=sb)), [-0.0, 2.0, 1.0])
    assert_same_bits(dmljax.element_wise_ceil(np.array([-1.0], np.float32), scale_bias=(0.5, 0.0)),
                     np.array([-0.0], np.float32))


@pytest.mark.parametrize("op", [dmljax.element_wise_ceil, dmljax.element_wise_floor,
                                lambda v: dmljax.element_wise_round(v, rounding_mode="TOWARD_INFINITY")])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_step_gradients_are_zero_at_and_between_jumps(op, dtype):
    # The derivative of a step: 0 between the jumps and, by choice, 0 at them (at integers for
    # CEIL/FLOOR, at halves for ROUND) and for NaN, as jax.numpy's: a constant zero.
    x = np.array([-2.0, -1.5, -0.5, -0.0, 0.0, 0.25, 1.0, 2.5, INF, NAN], dtype)
    g = grad(op, x)
    assert g.dtype == dtype
    np.testing.assert_array_equal(g, np.zeros(10, dtype))
    # a NaN cotangent stays out too: the gradient reads neither x nor dY
    _, vjp = jax.vjp(op, x)
    np.testing.assert_array_equal(vjp(np.full(10, NAN, dtype))[0], np.zeros(10, dtype))


def test_step_gradient_with_scale_bias_is_zero():
    x = np.array([-1.0, 0.3, 2.0], np.float32)
    np.testing.assert_array_equal(grad(lambda v: dmljax.element_wise_floor(v, scale_bias=(-2.0, 0.5)), x),
                                  np.zeros(3, np.float32))


# ----------------------------------------------------------------------------------------------
# ABS

def test_abs_float_edges():
    x = np.array([-0.0, 0.0, NAN, -INF, INF, DENORM, -DENORM, -1.5, -3.4028235e38], np.float32)
    want = np.array([0.0, 0.0, NAN, INF, INF, 0.0, 0.0, 1.5, 3.4028235e38], np.float32)
    assert_same_bits(both(dmljax.element_wise_abs, x), want)
    h = np.array([-0.0, -F16_DENORM, -65504, NAN], np.float16)
    assert_same_bits(both(dmljax.element_wise_abs, h), np.array([0.0, F16_DENORM, 65504, NAN], np.float16))


@pytest.mark.parametrize("dt", SIGNED, ids=lambda t: t.name)
def test_abs_integer_extremes_wrap(dt):
    # Two's complement: abs(INT_MIN) is INT_MIN, as the hardware's negation gives.
    info = np.iinfo(dt.dtype)
    x = np.array([info.min, info.min + 1, -1, 0, 1, info.max], dt.dtype)
    want = np.array([info.min, info.max, 1, 0, 1, info.max], dt.dtype)
    with jax.enable_x64(dt.needs_x64):
        out = both(dmljax.element_wise_abs, x)
    assert out.dtype == dt.dtype
    np.testing.assert_array_equal(out, want)


def test_abs_integer_scale_bias():
    # g(x) computed in FLOAT32, truncated toward zero and saturated, then abs: -127 - 1 is -128,
    # whose abs wraps to -128; -100 * 2 saturates to -128; -7 * 0.5 truncates to -3.
    x = np.array([-127, -100, -7, 5], np.int8)
    assert np.asarray(dmljax.element_wise_abs(x[:1], scale_bias=(1.0, -1.0))).tolist() == [-128]
    assert np.asarray(dmljax.element_wise_abs(x, scale_bias=(2.0, 0.0))).tolist() == [-128, -128, 14, 10]
    assert np.asarray(dmljax.element_wise_abs(x, scale_bias=(0.5, 0.0))).tolist() == [63, 50, 3, 2]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_abs_gradient_at_zero_is_zero(dtype):
    # abs is x for x > 0 and -x for x < 0; at the tie 0 neither side passes (strict comparisons,
    # where jax.grad(jnp.abs)(0.0) is 1). NaN for NaN; +-1 at the infinities.
    x = np.array([-2.0, -0.0, 0.0, 3.0, -INF, INF, NAN], dtype)
    g = grad(dmljax.element_wise_abs, x)
    assert g.dtype == dtype
    np.testing.assert_array_equal(g[:6], np.array([-1, 0, 0, 1, -1, 1], dtype))
    assert np.isnan(g[6])


def test_abs_gradient_with_scale_bias():
    # g = -2x + 1: x = 0.5 is the kink (0), x = 0 gives g = 1 (slope -2), x = 1 gives g = -1 (+2).
    x = np.array([0.5, 0.0, 1.0], np.float32)
    np.testing.assert_array_equal(grad(lambda v: dmljax.element_wise_abs(v, scale_bias=(-2.0, 1.0)), x),
                                  np.array([0.0, -2.0, 2.0], np.float32))


# ----------------------------------------------------------------------------------------------
# SIGN

@pytest.mark.parametrize("half", [False, True])
def test_sign_float_edges(half):
    # The page: -1 if x < 0, 1 if x > 0, 0 otherwise ("this includes negative zero"): +0.0 for
    # -0.0, and 0 for NaN (both comparisons are false). FLOAT32 denormals read as zero; FLOAT16
    # denormals are numbers.
    x = np.array([-2.5, -0.0, 0.0, 3.0, NAN, -INF, INF, DENORM, -DENORM], np.float32)
    want = np.array([-1, 0.0, 0.0, 1, 0.0, -1, 1, 0.0, 0.0], np.float32)
    kw = {"allow_half_precision_computation": half}
    assert_same_bits(both(lambda v: dmljax.element_wise_sign(v, **kw), x), want)
    h = np.array([-0.0, NAN, F16_DENORM, -F16_DENORM, -65504], np.float16)
    assert_same_bits(both(lambda v: dmljax.element_wise_sign(v, **kw), h),
                     np.array([0.0, 0.0, 1, -1, -1], np.float16))
    assert_same_bits(want, ref.element_wise_sign(x)[0].astype(np.float32))


@pytest.mark.parametrize("dt", SIGNED + UNSIGNED, ids=lambda t: t.name)
def test_sign_integer_extremes(dt):
    info = np.iinfo(dt.dtype)
    x = np.array([info.min, 0, 1, info.max], dt.dtype)
    want = np.array([-1 if dt.is_signed else 0, 0, 1, 1], dt.dtype)
    with jax.enable_x64(dt.needs_x64):
        out = both(dmljax.element_wise_sign, x)
        assert out.dtype == dt.dtype
        np.testing.assert_array_equal(out, want)
        g = jax.grad(lambda v: jnp.sum(dmljax.element_wise_sign(v).astype(jnp.float32)), allow_int=True)(x)
        assert g.dtype == jax.dtypes.float0


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_sign_gradient_is_zero(dtype):
    x = np.array([-1.0, -0.0, 0.0, 1.0, NAN, INF], dtype)
    np.testing.assert_array_equal(grad(dmljax.element_wise_sign, x), np.zeros(6, dtype))
