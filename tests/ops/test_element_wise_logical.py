"""Hand-written edges of the element-wise logical family (IF, LOGICAL_LESS_THAN): the IF page's
worked example and composition, bits kept by selection, feature-level and type edges, FLOAT32
denormals in comparisons, output types, and gradient routing; against values derived
independently. The generated cases (tests/test_catalog.py) cover the support tables, data types,
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
