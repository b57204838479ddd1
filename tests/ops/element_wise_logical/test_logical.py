"""Hand-written edges of the element-wise logical family (IF, the comparisons, LOGICAL_AND/OR/XOR/
NOT, IS_NAN, IS_INFINITY): the IF page's worked example and composition, bits kept by selection,
feature-level and type edges, NaN, signed zeros and FLOAT32 denormals in comparisons, 64-bit
integers compared exactly, output types per feature level, non-zero as true, each
DML_IS_INFINITY_MODE, and gradient routing; against values derived independently. The generated cases (tests/test_catalog.py) cover the support tables, data types,
eager/jit and the reference gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

F32_DENORMAL = np.float32(1e-40)


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_IF


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


def test_if_routes_gradient_and_condition_gets_float0():
    c = np.array([1, 0, 255], np.uint8)
    a = jnp.array([1.0, 2.0, 3.0], jnp.float32)
    b = jnp.array([4.0, 5.0, 6.0], jnp.float32)
    y, vjp = jax.vjp(dmljax.element_wise_if, c, a, b)
    dc, da, db = vjp(jnp.array([10.0, 20.0, 30.0], jnp.float32))
    assert dc.dtype == jax.dtypes.float0
    np.testing.assert_array_equal(da, [10.0, 0.0, 30.0])
    np.testing.assert_array_equal(db, [0.0, 20.0, 0.0])


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_LOGICAL_LESS_THAN


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


# ----------------------------------------------------------------------------------------------
# Both: the IF page's composition


def test_leaky_relu_composition_from_the_if_page():
    # LeakyRelu(x) = If(Less(x, 0), Mul(x, alpha), x)
    x = np.array([-2.0, -0.5, 0.0, 3.0], np.float32)
    alpha = np.full_like(x, 0.1)
    cond = dmljax.element_wise_logical_less_than(x, np.zeros_like(x))
    out = dmljax.element_wise_if(cond, dmljax.element_wise_multiply(x, alpha), x)
    np.testing.assert_array_equal(out, np.where(x < 0, x * np.float32(0.1), x))


# ----------------------------------------------------------------------------------------------
# The comparisons: EQUALS, GREATER_THAN, GREATER_THAN_OR_EQUAL, LESS_THAN, LESS_THAN_OR_EQUAL

NAN, INF = np.nan, np.inf
COMPARISONS = {  # name -> the relation, written out for the values below
    "equals": lambda x, y: x == y,
    "greater_than": lambda x, y: x > y,
    "greater_than_or_equal": lambda x, y: x >= y,
    "less_than": lambda x, y: x < y,
    "less_than_or_equal": lambda x, y: x <= y,
}


def compare(name, a, b, **kw):
    return getattr(dmljax, f"element_wise_logical_{name}")(a, b, **kw)


# (a, b, expected for equals, greater_than, greater_than_or_equal, less_than, less_than_or_equal)
FLOAT_EDGES = [
    (NAN, NAN, 0, 0, 0, 0, 0),
    (NAN, 1.0, 0, 0, 0, 0, 0),
    (1.0, NAN, 0, 0, 0, 0, 0),
    (-NAN, -INF, 0, 0, 0, 0, 0),
    (INF, NAN, 0, 0, 0, 0, 0),
    (-0.0, 0.0, 1, 0, 1, 0, 1),
    (0.0, -0.0, 1, 0, 1, 0, 1),
    (INF, INF, 1, 0, 1, 0, 1),
    (-INF, INF, 0, 0, 0, 1, 1),
    (INF, 65504.0, 0, 1, 1, 0, 0),  # the largest finite FLOAT16
    (1.0, 2.0, 0, 0, 0, 1, 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("use_jit", [False, True], ids=["eager", "jit_constants"])
def test_comparisons_nan_signed_zeros_and_infinities(dtype, use_jit):
    a = np.array([e[0] for e in FLOAT_EDGES], dtype)
    b = np.array([e[1] for e in FLOAT_EDGES], dtype)
    for i, name in enumerate(COMPARISONS):
        if use_jit:  # the inputs are constants of the traced function: XLA may fold them
            out = jax.jit(lambda: compare(name, jnp.asarray(a), jnp.asarray(b)))()
        else:
            out = compare(name, a, b)
        assert out.dtype == np.uint8
        np.testing.assert_array_equal(out, [e[2 + i] for e in FLOAT_EDGES], err_msg=name)


def test_comparisons_read_float32_denormals_as_zero():
    d = F32_DENORMAL
    a = np.array([d, d, -d, 0.0, d], np.float32)
    b = np.array([0.0, -d, 0.0, d, np.float32(2e-40)], np.float32)
    expected = {  # every value above reads as +-0: equal to each other
        "equals": [1, 1, 1, 1, 1], "greater_than": [0, 0, 0, 0, 0],
        "greater_than_or_equal": [1, 1, 1, 1, 1], "less_than": [0, 0, 0, 0, 0],
        "less_than_or_equal": [1, 1, 1, 1, 1],
    }
    f32_tiny = np.finfo(np.float32).tiny  # the smallest normal: not flushed
    for name, want in expected.items():
        np.testing.assert_array_equal(compare(name, a, b), want, err_msg=name)
        np.testing.assert_array_equal(jax.jit(lambda x, y: compare(name, x, y))(a, b), want, err_msg=name)
        got = compare(name, np.array([f32_tiny], np.float32), np.array([0.0], np.float32))
        assert int(got[0]) == COMPARISONS[name](1, 0), name


def test_comparisons_keep_float16_denormals():
    d = np.float16(6e-8)  # a FLOAT16 denormal: FLOAT16 keeps them
    a, b = np.array([d, -d], np.float16), np.array([0.0, 0.0], np.float16)
    np.testing.assert_array_equal(compare("equals", a, b), [0, 0])
    np.testing.assert_array_equal(compare("greater_than", a, b), [1, 0])
    np.testing.assert_array_equal(compare("less_than_or_equal", a, b), [0, 1])


@pytest.mark.parametrize("dtype,pairs", [
    # neighbours that a float32 (or float64) conversion would make equal
    (np.int32, [(2**31 - 1, 2**31 - 2), (-2**31, -2**31 + 1), (16777217, 16777216)]),
    (np.uint32, [(2**32 - 1, 2**32 - 2), (0, 1), (16777217, 16777216)]),
    (np.int8, [(-128, 127), (127, 127)]),
    (np.uint16, [(65535, 65534), (0, 65535)]),
])
def test_comparisons_are_exact_on_integers(dtype, pairs):
    a = np.array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    for name, rel in COMPARISONS.items():
        want = [int(rel(int(x), int(y))) for x, y in pairs]
        np.testing.assert_array_equal(compare(name, a, b), want, err_msg=name)


@pytest.mark.parametrize("dtype,pairs", [
    (np.int64, [(2**53 + 1, 2**53), (2**63 - 1, 2**63 - 2), (-2**63, -2**63 + 1), (-2**63, 2**63 - 1)]),
    (np.uint64, [(2**53 + 1, 2**53), (2**64 - 1, 2**64 - 2), (2**63, 2**63 - 1), (0, 2**64 - 1)]),
])
def test_comparisons_are_exact_on_64_bit_integers(x64, dtype, pairs):
    a = np.array([p[0] for p in pairs], dtype)
    b = np.array([p[1] for p in pairs], dtype)
    for name, rel in COMPARISONS.items():
        want = [int(rel(int(x), int(y))) for x, y in pairs]
        np.testing.assert_array_equal(compare(name, a, b, output_data_type="UINT32"), want, err_msg=name)
        got = jax.jit(lambda: compare(name, jnp.asarray(a), jnp.asarray(b)))()
        np.testing.assert_array_equal(got, want, err_msg=f"{name} under jit")


@pytest.mark.parametrize("name", ["equals", "greater_than"])
def test_comparison_output_types_per_feature_level(name):
    a = np.ones((1, 1, 1, 2), np.float32)
    # FL 1.0 allows only UINT32: the default UINT8 is refused there, with a tip.
    out = compare(name, a, a, output_data_type="UINT32", feature_level="1.0")
    assert out.dtype == np.uint32
    with pytest.raises(dmljax.ValidationError) as e:
        compare(name, a, a, feature_level="1.0")
    assert "OutputTensor (argument `output_data_type`) has DataType UINT8; supported: UINT32" in str(e.value)
    assert "UINT8 is supported from DML_FEATURE_LEVEL_2_0" in str(e.value)
    assert compare(name, a, a, feature_level="2.0").dtype == np.uint8
    # integers from FL 2.1, 64-bit integers from FL 4.1
    i = np.ones((1, 1, 1, 2), np.int32)
    with pytest.raises(dmljax.ValidationError, match="INT32 is supported from DML_FEATURE_LEVEL_2_1"):
        compare(name, i, i, feature_level="2.0")
    np.testing.assert_array_equal(compare(name, i, i, feature_level="2.1"), [[[[name == "equals"] * 2]]])


@pytest.mark.parametrize("name", ["greater_than_or_equal", "less_than_or_equal"])
def test_or_equal_comparisons_start_at_feature_level_3_0(name):
    a = np.ones((1, 1, 1, 2), np.float32)
    with pytest.raises(dmljax.ValidationError, match="DML_FEATURE_LEVEL_3_0"):
        compare(name, a, a, feature_level="2.1")
    out = compare(name, a, a, output_data_type=dmljax.DataType.UINT32, feature_level="3.0")
    assert out.dtype == np.uint32 and np.all(np.asarray(out) == 1)
    with pytest.raises(dmljax.ValidationError, match=r"INT32; supported: UINT32, UINT8"):
        compare(name, a, a, output_data_type="INT32")


def test_comparison_inputs_must_share_a_data_type():
    with pytest.raises(dmljax.ValidationError, match="DataType"):
        compare("equals", np.ones(2, np.float32), np.ones(2, np.float16))


@pytest.mark.parametrize("name", list(COMPARISONS))
def test_comparisons_pass_no_gradient_even_at_ties_and_nan(name):
    a = jnp.array([1.0, 2.0, np.nan, 0.0], jnp.float32)
    b = jnp.array([1.0, 1.0, 1.0, -0.0], jnp.float32)
    ga, gb = jax.grad(lambda x, y: jnp.sum(compare(name, x, y).astype(jnp.float32) * x), (0, 1))(a, b)
    # d/dx of mask * x is the mask itself (the mask is a constant): 0 or 1, never NaN
    want = [COMPARISONS[name](float(x), float(y)) for x, y in zip(a, b)]
    np.testing.assert_array_equal(ga, np.array(want, np.float32))
    np.testing.assert_array_equal(gb, np.zeros(4, np.float32))


# ----------------------------------------------------------------------------------------------
# LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR, LOGICAL_NOT: non-zero is true, the result 1 or 0

TRUTHY = {np.uint8: [0, 1, 2, 128, 255], np.uint32: [0, 1, 256, 2**31, 2**32 - 1]}  # 256: low byte 0


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32])
def test_logic_reads_every_non_zero_value_as_true(dtype):
    values = TRUTHY[dtype]
    a = np.array([x for x in values for _ in values], dtype)
    b = np.array([y for _ in values for y in values], dtype)
    rules = {"and": lambda x, y: x != 0 and y != 0, "or": lambda x, y: x != 0 or y != 0,
             "xor": lambda x, y: (x != 0) != (y != 0)}
    for name, rule in rules.items():
        out = getattr(dmljax, f"element_wise_logical_{name}")(a, b)
        assert out.dtype == dtype, name
        np.testing.assert_array_equal(out, [int(rule(int(x), int(y))) for x, y in zip(a, b)], err_msg=name)
    out = dmljax.element_wise_logical_not(np.array(values, dtype))
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, [1, 0, 0, 0, 0])


def test_logical_xor_is_not_bitwise():
    a, b = np.array([1, 2, 255], np.uint8), np.array([2, 1, 1], np.uint8)
    np.testing.assert_array_equal(dmljax.element_wise_logical_xor(a, b), [0, 0, 0])
    np.testing.assert_array_equal(dmljax.element_wise_logical_and(a, b), [1, 1, 1])  # 1 & 2 is 0 bitwise


def test_logic_types_and_feature_levels():
    u8 = np.ones((1, 1, 1, 2), np.uint8)
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.element_wise_logical_or(u8, u8, feature_level="1.0")
    assert "ATensor (argument `a`) has DataType UINT8; supported: UINT32" in str(e.value)
    assert "UINT8 is supported from DML_FEATURE_LEVEL_2_0" in str(e.value)
    assert dmljax.element_wise_logical_not(u8.astype(np.uint32), feature_level="1.0").dtype == np.uint32
    with pytest.raises(dmljax.ValidationError, match=r"has DataType INT32; supported: UINT32, UINT8"):
        dmljax.element_wise_logical_and(np.ones(2, np.int32), np.ones(2, np.int32))
    with pytest.raises(dmljax.ValidationError, match=r"has DataType FLOAT32; supported: UINT32, UINT8"):
        dmljax.element_wise_logical_not(np.ones(2, np.float32))
    with pytest.raises(dmljax.ValidationError, match="DataType"):
        dmljax.element_wise_logical_xor(np.ones(2, np.uint8), np.ones(2, np.uint32))


# ----------------------------------------------------------------------------------------------
# IS_NAN and IS_INFINITY

F32_BITS = {  # name -> FLOAT32 bits
    "qnan": 0x7FC00000, "-qnan": 0xFFC00000, "snan": 0x7F800001, "nan_payload": 0x7FC12345,
    "inf": 0x7F800000, "-inf": 0xFF800000, "max": 0x7F7FFFFF, "-max": 0xFF7FFFFF,
    "zero": 0x00000000, "-zero": 0x80000000, "denormal": 0x00000001, "-denormal": 0x807FFFFF,
    "one": 0x3F800000,
}
F16_BITS = {
    "qnan": 0x7E00, "-qnan": 0xFE00, "snan": 0x7C01, "nan_payload": 0x7E55,
    "inf": 0x7C00, "-inf": 0xFC00, "max": 0x7BFF, "-max": 0xFBFF,
    "zero": 0x0000, "-zero": 0x8000, "denormal": 0x0001, "-denormal": 0x83FF,
    "one": 0x3C00,
}
NANS = {"qnan", "-qnan", "snan", "nan_payload"}


def _class_values(dtype):
    bits = F32_BITS if dtype == np.float32 else F16_BITS
    uint = np.uint32 if dtype == np.float32 else np.uint16
    return list(bits), np.array(list(bits.values()), uint).view(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("out_type", ["UINT8", "UINT32"])
def test_is_nan_of_every_class(dtype, out_type):
    names, x = _class_values(dtype)
    want = [int(n in NANS) for n in names]
    out = dmljax.element_wise_is_nan(x, output_data_type=out_type)
    assert out.dtype == np.dtype(out_type.lower())
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(jax.jit(lambda: dmljax.element_wise_is_nan(jnp.asarray(x)))(), want)


def test_is_nan_types_and_levels():
    with pytest.raises(dmljax.ValidationError, match=r"InputTensor \(argument `input`\) has DataType INT32; supported: FLOAT32, FLOAT16"):
        dmljax.element_wise_is_nan(np.ones(2, np.int32))
    x = np.ones((1, 1, 1, 2), np.float32)
    with pytest.raises(dmljax.ValidationError, match="DML_FEATURE_LEVEL_2_0"):
        dmljax.element_wise_is_nan(x, feature_level="1.0")
    assert dmljax.element_wise_is_nan(x, feature_level="2.0").dtype == np.uint8


IS_INF_EXPECTED = {
    "EITHER": {"inf", "-inf"},
    "POSITIVE": {"inf"},
    "NEGATIVE": {"-inf"},
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("mode", list(IS_INF_EXPECTED))
def test_is_infinity_in_each_mode(dtype, mode):
    names, x = _class_values(dtype)
    want = [int(n in IS_INF_EXPECTED[mode]) for n in names]  # NaN, max, zeros, denormals: 0
    out = dmljax.element_wise_is_infinity(x, infinity_mode=mode)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, want)
    got = jax.jit(lambda: dmljax.element_wise_is_infinity(jnp.asarray(x), infinity_mode=mode))()
    np.testing.assert_array_equal(got, want)


def test_is_infinity_mode_spellings_and_default():
    x = np.array([np.inf, -np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(dmljax.element_wise_is_infinity(x), [1, 1, 0])  # EITHER
    for mode in (dmljax.IsInfinityMode.POSITIVE, "DML_IS_INFINITY_MODE_POSITIVE", "positive", 1):
        np.testing.assert_array_equal(dmljax.element_wise_is_infinity(x, infinity_mode=mode), [1, 0, 0])
    np.testing.assert_array_equal(dmljax.element_wise_is_infinity(x, infinity_mode=2), [0, 1, 0])
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.element_wise_is_infinity(x, infinity_mode=3)
    assert "InfinityMode (argument `infinity_mode`) is 3" in str(e.value)
    assert "DML_IS_INFINITY_MODE_EITHER (0), DML_IS_INFINITY_MODE_POSITIVE (1), DML_IS_INFINITY_MODE_NEGATIVE (2)" in str(e.value)


def test_is_infinity_output_is_uint8_only():
    x = np.ones((1, 1, 1, 2), np.float16)
    with pytest.raises(dmljax.ValidationError, match=r"has DataType UINT32; supported: UINT8"):
        dmljax.element_wise_is_infinity(x, output_data_type="UINT32")
    with pytest.raises(dmljax.ValidationError, match="DML_FEATURE_LEVEL_2_1"):
        dmljax.element_wise_is_infinity(x, feature_level="2.0")
    assert dmljax.element_wise_is_infinity(x, feature_level="2.1").dtype == np.uint8


@pytest.mark.parametrize("fn", [dmljax.element_wise_is_nan, dmljax.element_wise_is_infinity])
def test_float_tests_pass_no_gradient(fn):
    x = jnp.array([np.inf, np.nan, 1.0], jnp.float32)
    g = jax.grad(lambda v: jnp.sum(fn(v).astype(jnp.float32)))(x)
    np.testing.assert_array_equal(g, np.zeros(3, np.float32))
