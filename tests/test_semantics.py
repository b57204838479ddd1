"""The edge cases of SEMANTICS.md and issue 2 item 5, each against values derived independently
(Python's own arithmetic, IEEE bit patterns, or the float64 reference)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType, INTS
from tests.compare import assert_matches
from tests.reference import seeds as ref

F32_DENORMAL = np.float32(1e-40)
INT_TYPES = sorted((t for t in INTS if t not in (DataType.INT4, DataType.UINT4)), key=lambda t: t.value)


# ---- ELEMENT_WISE_IF ---------------------------------------------------------------------------

def test_if_page_example():
    out = dmljax.element_wise_if(np.array([[1, 0], [1, 1]], np.uint8),
                                 np.array([[1, 2], [3, 4]], np.float32),
                                 np.array([[9, 8], [7, 6]], np.float32))
    np.testing.assert_array_equal(out, np.array([[1, 8], [3, 4]], np.float32))


def test_if_any_nonzero_condition_selects_a():
    cond = np.array([0, 1, 2, 127, 128, 255], np.uint8)
    out = dmljax.element_wise_if(cond, np.full(6, 7, np.int32), np.full(6, -7, np.int32))
    np.testing.assert_array_equal(out, [-7, 7, 7, 7, 7, 7])


@pytest.mark.parametrize("dtype,bits", [
    (np.float32, [0x7FC00001, 0xFFC12345, 0x80000000, 0x00000001, 0x7F800000]),  # NaN payloads, -0, denormal, inf
    (np.float16, [0x7E01, 0xFE55, 0x8000, 0x0001, 0x7C00]),
])
def test_if_keeps_bits_of_selected_values(dtype, bits):
    uint = np.uint32 if dtype == np.float32 else np.uint16
    a = np.array(bits, uint).view(dtype)
    b = np.zeros_like(a)
    out = np.asarray(dmljax.element_wise_if(np.ones(len(bits), np.uint8), a, b))
    np.testing.assert_array_equal(out.view(uint), np.array(bits, uint))
    out = np.asarray(dmljax.element_wise_if(np.zeros(len(bits), np.uint8), b, a))
    np.testing.assert_array_equal(out.view(uint), np.array(bits, uint))


def test_if_selection_is_not_arithmetic_masking():
    # a * c + b * (1 - c) would turn inf * 0 into NaN; selection must not.
    a = np.array([np.inf, 1.0], np.float32)
    b = np.array([2.0, np.inf], np.float32)
    out = dmljax.element_wise_if(np.array([0, 1], np.uint8), a, b)
    np.testing.assert_array_equal(out, [2.0, 1.0])


def test_if_float64_with_x64(x64):
    a = np.array([np.pi, 1e-310], np.float64)  # 1e-310 is a FLOAT64 denormal: kept
    out = dmljax.element_wise_if(np.array([1, 1], np.uint8), a, np.zeros(2))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(out).view(np.uint64), a.view(np.uint64))


def test_if_at_feature_level_2_0_is_float16_4d():
    c = np.ones((1, 1, 2, 2), np.uint8)
    a = np.ones((1, 1, 2, 2), np.float16)
    assert dmljax.element_wise_if(c, a, a, feature_level="2.0").dtype == np.float16
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.element_wise_if(c, a.astype(np.float32), a.astype(np.float32), feature_level="2.0")
    assert "ATensor (argument `a`) has DataType FLOAT32; supported: FLOAT16" in str(e.value)
    assert "FLOAT32 is supported from DML_FEATURE_LEVEL_3_0" in str(e.value)


def test_if_condition_must_be_uint8():
    with pytest.raises(dmljax.ValidationError, match=r"ConditionTensor \(argument `condition`\) has DataType INT32; supported: UINT8"):
        dmljax.element_wise_if(np.ones(2, np.int32), np.ones(2, np.float32), np.ones(2, np.float32))


# ---- THRESHOLD ---------------------------------------------------------------------------------

def test_threshold_nan_gives_min():
    out = dmljax.element_wise_threshold(np.array([np.nan, -np.nan, 1.0, -1.0], np.float32), min=0.25)
    np.testing.assert_array_equal(out, [0.25, 0.25, 1.0, 0.25])


def test_threshold_nan_min_gives_input():
    x = np.array([-3.0, 2.0, np.nan], np.float32)
    out = np.asarray(dmljax.element_wise_threshold(x, min=float("nan")))
    np.testing.assert_array_equal(out[:2], x[:2])
    assert np.isnan(out[2])


def test_threshold_scale_bias_applies_first():
    # g(x) = 2x + 1, then max(g, 0): x = -0.25 -> 0.5 (scale-bias first), not max(-0.25, 0)*2+1 = 1
    out = dmljax.element_wise_threshold(np.array([-0.25, -3.0, 4.0], np.float32), min=0.0,
                                        scale_bias=dmljax.ScaleBias(2.0, 1.0))
    np.testing.assert_array_equal(out, [0.5, 0.0, 9.0])
    out2 = dmljax.element_wise_threshold(np.array([-0.25, -3.0, 4.0], np.float32), min=0.0,
                                         scale_bias={"Scale": 2, "Bias": 1})
    np.testing.assert_array_equal(out, out2)


@pytest.mark.parametrize("dt", [t for t in INT_TYPES if t.bits <= 32], ids=str)
def test_threshold_integer_min_truncates_toward_zero_and_saturates(dt):
    info = np.iinfo(dt.dtype)
    x = np.array([v for v in [info.min, -3, -2, 0, 2, 3, info.max] if v >= info.min], dt.dtype)
    for m in [2.7, -2.7, 2.9999999, 1e10, -1e10, float("inf"), -float("inf")]:
        out = np.asarray(dmljax.element_wise_threshold(x, min=m))
        assert out.dtype == dt.dtype
        f = float(np.float32(m))  # a C float first: 2.9999999 is 3.0f
        mi = info.max if f == math.inf else info.min if f == -math.inf else min(max(math.trunc(f), info.min), info.max)
        expected = [max(int(v), mi) for v in x]
        np.testing.assert_array_equal(out.astype(object), np.array(expected, dtype=object), err_msg=f"{dt} min={m}")


def test_threshold_integer_nan_min_refused():
    with pytest.raises(dmljax.ValidationError, match=r"Min \(argument `min`\) is NaN but InputTensor is INT32"):
        dmljax.element_wise_threshold(np.zeros(3, np.int32), min=float("nan"))


def test_threshold_attribute_is_a_c_float():
    # 16777217 is not a float32: Min is 16777216.0f, so on INT32 it is 16777216.
    out = dmljax.element_wise_threshold(np.array([0, 16777217], np.int32), min=16777217)
    np.testing.assert_array_equal(out, [16777216, 16777217])


def test_threshold_attribute_out_of_float_range_refused():
    with pytest.raises(dmljax.ValidationError, match=r"Min \(argument `min`\) is 1e\+39, outside the range of FLOAT"):
        dmljax.element_wise_threshold(np.zeros(3, np.float32), min=1e39)


def test_threshold_attribute_must_be_static():
    x = jnp.zeros(3, jnp.float32)
    with pytest.raises(dmljax.ValidationError, match=r"Min \(argument `min`\) is an array"):
        jax.jit(lambda m: dmljax.element_wise_threshold(x, min=m))(jnp.float32(1))


def test_threshold_never_promotes_integer_tensor():
    # jnp.maximum(uint8, -1) wraps to 255; THRESHOLD must keep uint8 and saturate Min to 0.
    out = dmljax.element_wise_threshold(np.array([0, 7, 255], np.uint8), min=-1)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [0, 7, 255])
    out = dmljax.element_wise_threshold(np.array([1, 2, 3], np.int32), min=2.5)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [2, 2, 3])


# ---- MODULUS_FLOOR -----------------------------------------------------------------------------

FLOAT_PAIRS = [
    (-7.0, 3.0), (7.0, -3.0), (-7.0, -3.0), (7.0, 3.0), (-4.0, 2.0), (4.0, -2.0), (0.0, -3.0),
    (-0.0, 3.0), (5.0, math.inf), (-5.0, math.inf), (5.0, -math.inf), (-5.0, -math.inf),
    (math.inf, 3.0), (3.0, 0.0), (3.0, -0.0), (0.0, 0.0), (math.nan, 1.0), (1.0, math.nan),
    (1e9, float(np.float32(math.pi))), (-1e9, float(np.float32(math.pi))), (1e30, 7.0),
    (5.5, 2.25), (-1e-30, 1.0),
]


def _python_mod(a, b):
    """Python's own % (the page's promise), with NaN where Python raises (b == 0)."""
    if b == 0 or math.isnan(a) or math.isnan(b):
        return math.nan
    try:
        return a % b
    except ZeroDivisionError:  # pragma: no cover
        return math.nan


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_modulus_floor_is_pythons_modulus(dtype):
    a = np.array([p[0] for p in FLOAT_PAIRS], dtype)
    b = np.array([p[1] for p in FLOAT_PAIRS], dtype)
    out = np.asarray(dmljax.element_wise_modulus_floor(a, b))
    expected = [_python_mod(float(x), float(y)) for x, y in zip(a, b)]
    for got, exp, x, y in zip(out, expected, a, b):
        if math.isnan(exp):
            assert np.isnan(got), (x, y, got)
            continue
        e = np.asarray(exp).astype(dtype)  # Python computes in float64; round once
        assert got == e and np.signbit(got) == np.signbit(e), (x, y, got, exp)


def test_modulus_floor_large_quotient_is_accurate():
    a, b = np.float32(1e9), np.float32(math.pi)
    literal = a - b * np.floor(a / b)  # the page's formula evaluated literally in FLOAT32
    assert literal == np.float32(-64.0)  # ... is far off: the operator must not do this
    out = dmljax.element_wise_modulus_floor(np.array([a]), np.array([b]))
    assert float(out[0]) == float(np.float32(float(a) % float(b)))


def test_modulus_floor_zero_sign_follows_divisor():
    out = np.asarray(dmljax.element_wise_modulus_floor(np.array([-4.0, 4.0], np.float32),
                                                       np.array([2.0, -2.0], np.float32)))
    assert list(np.signbit(out)) == [False, True]  # jnp.mod gives -0.0 for -4 % 2


@pytest.mark.parametrize("dt", INT_TYPES, ids=str)
def test_modulus_floor_integers_match_python(dt, x64):
    info = np.iinfo(dt.dtype)
    vals = sorted(v for v in {int(info.min), int(info.min) + 1, -7, -3, -1, 0, 1, 3, 7,
                              int(info.max) - 1, int(info.max)} if info.min <= v <= info.max)
    a = np.array([x for x in vals for _ in vals], dt.dtype)
    b = np.array([y for _ in vals for y in vals], dt.dtype)
    out = np.asarray(dmljax.element_wise_modulus_floor(a, b))
    assert out.dtype == dt.dtype
    expected = [0 if int(y) == 0 else int(x) % int(y) for x, y in zip(a, b)]
    np.testing.assert_array_equal(out.astype(object), np.array(expected, dtype=object))


def test_modulus_floor_int_min_by_minus_one_and_zero_divisor_under_jit():
    # Constant operands: XLA folds the remainder at compile time, where a zero or overflowing
    # divisor raises SIGFPE and kills the process unless the divisor is guarded.
    f = jax.jit(lambda: dmljax.element_wise_modulus_floor(
        jnp.array([-2**31, 5, -5, 0], jnp.int32), jnp.array([-1, 0, 0, 0], jnp.int32)))
    np.testing.assert_array_equal(f(), [0, 0, 0, 0])
    g = jax.jit(lambda: dmljax.element_wise_modulus_floor(
        jnp.array([5, 0], jnp.uint32), jnp.array([0, 0], jnp.uint32)))
    np.testing.assert_array_equal(g(), [0, 0])


# ---- CONSTANT_POW -------------------------------------------------------------------------------

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


# ---- FLOAT16, FLOAT32 denormals, precision -----------------------------------------------------

def test_float16_is_computed_in_float32_and_rounded_once():
    # x * s + b with x = 1 + 2^-10, s = 1 + 3 * 2^-10, b = -1: exactly 2^-8 + 3 * 2^-20, which
    # rounds once to 2^-8 + 2^-18 in FLOAT16; rounding x * s to FLOAT16 first gives 2^-8.
    x = np.array([1 + 2**-10], np.float16)
    sb = (1 + 3 * 2**-10, -1.0)
    once = np.float16(2**-8 + 2**-18)
    out = dmljax.element_wise_threshold(x, min=-100.0, scale_bias=sb)
    assert out.dtype == np.float16 and out[0] == once
    half = dmljax.element_wise_threshold(x, min=-100.0, scale_bias=sb, allow_half_precision_computation=True)
    assert half.dtype == np.float16
    assert abs(float(half[0]) - float(once)) <= 2**-18  # within the half-precision budget (1 ULP)


@pytest.mark.parametrize("op,kwargs", [
    (dmljax.element_wise_threshold, {"min": -1.0}),
    (dmljax.activation_scaled_elu, {}),
    (dmljax.element_wise_constant_pow, {"exponent": 1.0}),
])
def test_float32_denormal_inputs_are_flushed_sign_preserving(op, kwargs):
    x = np.array([F32_DENORMAL, -F32_DENORMAL], np.float32)
    out = np.asarray(op(x, **kwargs))
    assert (out == 0).all()
    if op is not dmljax.activation_scaled_elu:
        assert list(np.signbit(out)) == [False, True]


def test_float32_denormal_outputs_are_flushed():
    out = np.asarray(dmljax.element_wise_multiply(np.array([1e-20, -1e-20], np.float32),
                                                  np.array([1e-20, 1e-20], np.float32)))
    assert (out == 0).all() and list(np.signbit(out)) == [False, True]
    # FLOAT16 denormals are kept
    h = np.asarray(dmljax.element_wise_multiply(np.array([2**-20], np.float16), np.array([0.5], np.float16)))
    assert h[0] == np.float16(2**-21) and h[0] != 0


def test_less_than_reads_float32_denormals_as_zero():
    a = np.array([F32_DENORMAL, 0.0, -F32_DENORMAL], np.float32)
    b = np.array([0.0, F32_DENORMAL, 0.0], np.float32)
    np.testing.assert_array_equal(dmljax.element_wise_logical_less_than(a, b), [0, 0, 0])


def test_less_than_output_types():
    a, b = np.array([1.0, np.nan], np.float32), np.array([2.0, 1.0], np.float32)
    assert dmljax.element_wise_logical_less_than(a, b).dtype == np.uint8
    out = dmljax.element_wise_logical_less_than(a, b, output_data_type=dmljax.DataType.UINT32)
    assert out.dtype == np.uint32
    np.testing.assert_array_equal(out, [1, 0])
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor \(argument `output_data_type`\) has DataType INT32; supported: UINT32, UINT8"):
        dmljax.element_wise_logical_less_than(a, b, output_data_type="INT32")


def test_leaky_relu_composition_from_the_if_page():
    # LeakyRelu(x) = If(Less(x, 0), Mul(x, alpha), x)
    x = np.array([-2.0, -0.5, 0.0, 3.0], np.float32)
    alpha = np.full_like(x, 0.1)
    cond = dmljax.element_wise_logical_less_than(x, np.zeros_like(x))
    out = dmljax.element_wise_if(cond, dmljax.element_wise_multiply(x, alpha), x)
    np.testing.assert_array_equal(out, np.where(x < 0, x * np.float32(0.1), x))


@pytest.mark.parametrize("name,kwargs", [
    ("DML_OPERATOR_ACTIVATION_SCALED_ELU", {}),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": 2.5}),
    ("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", {"min": 0.1, "scale_bias": (1.5, -0.25)}),
])
def test_half_precision_computation_within_its_budget(name, kwargs, rng):
    op = dmljax.get_operator(name)
    x = np.abs(rng.standard_normal(2048) * 3).astype(np.float16)
    out = op(x, **kwargs, allow_half_precision_computation=True)
    assert out.dtype == np.float16
    refs = ref.REFERENCES[name](x, **kwargs)
    # ScaleBias computed in FLOAT16 rounds after the multiply in FLOAT16: add that candidate.
    if "scale_bias" in kwargs:
        s, b = (np.float16(v) for v in kwargs["scale_bias"])
        refs = refs + ref.REFERENCES[name]((x * s + b).astype(np.float16), **{k: v for k, v in kwargs.items() if k != "scale_bias"})
    assert_matches(out, refs, DataType.FLOAT16, op.spec.ulp_half, context=name)


@pytest.mark.parametrize("name", ["DML_OPERATOR_ACTIVATION_SCALED_ELU", "DML_OPERATOR_ACTIVATION_ELU"])
def test_elu_family_on_every_float16_value(name):
    # All 65536 FLOAT16 bit patterns (the cheaper expm1 for FLOAT16 results must hold everywhere).
    from tests.reference import new_elementwise
    op = dmljax.get_operator(name)
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    refs = (ref.activation_scaled_elu(x) if name.endswith("SCALED_ELU")
            else new_elementwise.REFERENCES[name](x))
    assert_matches(op(x), refs, DataType.FLOAT16, op.spec.ulp[DataType.FLOAT16], name)


def test_modulus_floor_flushes_a_denormal_remainder():
    # fmod(1.5, -3.8577556e-38) is a FLOAT32 denormal: flushed like any math result, so the result
    # is -0.0 (the divisor's sign) on every backend, where Python's float64 % gives -2.78e-38.
    out = np.asarray(dmljax.element_wise_modulus_floor(np.array([1.5], np.float32),
                                                       np.array([-3.8577556e-38], np.float32)))
    assert out[0] == 0 and np.signbit(out[0])
