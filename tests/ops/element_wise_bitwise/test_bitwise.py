"""Hand-written edges of the element-wise bitwise family (BIT_AND, BIT_OR, BIT_XOR, BIT_NOT,
BIT_SHIFT_LEFT, BIT_SHIFT_RIGHT, BIT_COUNT): the pages' worked examples, signed types as two's
complement, floats as bit patterns (NaN payloads, -0, FLOAT32 denormals kept), shift counts of
the type's width or more (eager and under jit with constant operands), the shift count's type,
BIT_COUNT's output type, the 64-bit types without JAX's 64-bit mode, and gradients through the
operators. Expected values are written out by hand from the bit patterns. The generated cases
(tests/test_catalog.py) cover the support tables, data types, eager/jit and float0."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

U = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}


def _from_bits(bits, dtype):
    return np.array(bits, U[dtype]).view(dtype)


def _bits(x):
    x = np.asarray(x)
    return x.view(U[x.dtype.type])


def _run(op, *args, jit, **kwargs):
    """The operator on NumPy constants, eagerly or inside a caller's jax.jit that closes over them
    (so that XLA sees constant operands and may fold the operation)."""
    if jit:
        return np.asarray(jax.jit(lambda: op(*args, **kwargs))())
    return np.asarray(op(*args, **kwargs))


# ----------------------------------------------------------------------------------------------
# The pages' examples


def test_not_page_example():
    x = np.array([[0, 128], [42, 255]], np.uint8)
    np.testing.assert_array_equal(dmljax.element_wise_bit_not(x), [[255, 127], [213, 0]])


def test_xor_page_example_is_xor_with_all_ones():
    # The XOR page shows one input (BIT_NOT's example); its outputs are XOR with 0b11111111.
    a = np.array([[0, 128], [42, 255]], np.uint8)
    out = dmljax.element_wise_bit_xor(a, np.full((2, 2), 255, np.uint8))
    np.testing.assert_array_equal(out, [[255, 127], [213, 0]])
    out = dmljax.element_wise_bit_xor(a, np.zeros((2, 2), np.uint8))
    np.testing.assert_array_equal(out, a)


def test_bit_count_page_example_and_output_types():
    x = np.array([[0, 123], [456, 789]], np.uint32)
    out = dmljax.element_wise_bit_count(x)
    assert out.dtype == np.uint32  # UINT32 unless chosen: the page's example's type
    np.testing.assert_array_equal(out, [[0, 6], [4, 5]])
    out = dmljax.element_wise_bit_count(x, output_data_type="UINT8")
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [[0, 6], [4, 5]])
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor \(argument `output_data_type`\) has "
                       r"DataType UINT16; supported: UINT32, UINT8"):
        dmljax.element_wise_bit_count(x, output_data_type="UINT16")


# ----------------------------------------------------------------------------------------------
# Signed types: their two's complement


@pytest.mark.parametrize("jit", [False, True])
def test_bit_count_of_signed_types_counts_twos_complement(jit):
    count = dmljax.element_wise_bit_count
    np.testing.assert_array_equal(_run(count, np.array([-1, -128, 127, 0, -2], np.int8), jit=jit), [8, 1, 7, 0, 7])
    np.testing.assert_array_equal(_run(count, np.array([-1, -32768], np.int16), jit=jit), [16, 1])
    np.testing.assert_array_equal(_run(count, np.array([-1, -2**31, 2**31 - 1], np.int32), jit=jit), [32, 1, 31])


def test_bit_count_of_int64_and_uint64(x64):
    count = dmljax.element_wise_bit_count
    np.testing.assert_array_equal(count(np.array([-1, -2**63, 2**63 - 1], np.int64)), [64, 1, 63])
    out = count(np.array([2**64 - 1, 2**63], np.uint64), output_data_type="UINT8")
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [64, 1])


def test_signed_and_or_xor_not_on_twos_complement():
    a = np.array([-1, -128, -128, 85], np.int8)
    b = np.array([-128, 1, -1, -86], np.int8)  # 85 = 0b01010101, -86 = 0b10101010
    np.testing.assert_array_equal(dmljax.element_wise_bit_and(a, b), [-128, 0, -128, 0])
    np.testing.assert_array_equal(dmljax.element_wise_bit_or(a, b), [-1, -127, -1, -1])
    np.testing.assert_array_equal(dmljax.element_wise_bit_xor(a, b), [127, -127, 127, -1])
    np.testing.assert_array_equal(dmljax.element_wise_bit_not(np.array([0, 127, -128, -1], np.int8)),
                                  [-1, -128, 127, 0])
    i32 = np.array([-2**31, 2**31 - 1, -1], np.int32)
    np.testing.assert_array_equal(dmljax.element_wise_bit_not(i32), [2**31 - 1, -2**31, 0])
    np.testing.assert_array_equal(dmljax.element_wise_bit_and(i32, np.full(3, -2**31, np.int32)),
                                  [-2**31, 0, -2**31])


# ----------------------------------------------------------------------------------------------
# Floats: bit patterns, never values


@pytest.mark.parametrize("jit", [False, True])
def test_float32_and_clears_the_sign_bit_keeping_nan_payloads_and_denormals(jit):
    x = _from_bits([0x80000000, 0xFFC12345, 0x80000001, 0xFF800000, 0xBF800000, 0x00000001], np.float32)
    mask = _from_bits([0x7FFFFFFF] * 6, np.float32)  # itself a NaN pattern
    out = _run(dmljax.element_wise_bit_and, x, mask, jit=jit)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(_bits(out), [0x00000000, 0x7FC12345, 0x00000001, 0x7F800000,
                                               0x3F800000, 0x00000001])


@pytest.mark.parametrize("jit", [False, True])
def test_float16_xor_and_or_on_bits(jit):
    x = _from_bits([0x7E01, 0x0001, 0x0000, 0x3C00], np.float16)  # NaN payload, denormal, +0, 1
    sign = _from_bits([0x8000] * 4, np.float16)  # -0.0
    out = _run(dmljax.element_wise_bit_xor, x, sign, jit=jit)
    np.testing.assert_array_equal(_bits(out), [0xFE01, 0x8001, 0x8000, 0xBC00])
    out = _run(dmljax.element_wise_bit_or, x, sign, jit=jit)
    np.testing.assert_array_equal(_bits(out), [0xFE01, 0x8001, 0x8000, 0xBC00])


def test_float_not_and_bit_count():
    x = _from_bits([0x00000000, 0x80000000, 0x3F800000, 0x7FC00000, 0x00000001, 0xFF800000], np.float32)
    np.testing.assert_array_equal(_bits(dmljax.element_wise_bit_not(x)),
                                  [0xFFFFFFFF, 0x7FFFFFFF, 0xC07FFFFF, 0x803FFFFF, 0xFFFFFFFE, 0x007FFFFF])
    # 0, -0.0, 1.0, the quiet NaN, the smallest denormal (not flushed), -inf
    np.testing.assert_array_equal(dmljax.element_wise_bit_count(x), [0, 1, 7, 9, 1, 9])
    np.testing.assert_array_equal(dmljax.element_wise_bit_count(np.array([1.0, -0.0], np.float16)), [4, 1])


def test_float64_bits_with_x64(x64):
    x = _from_bits([0x3FF0000000000000, 0x0000000000000001, 0xFFF8000000000123], np.float64)
    mask = _from_bits([0x7FFFFFFFFFFFFFFF] * 3, np.float64)
    out = dmljax.element_wise_bit_and(x, mask)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(_bits(out), [0x3FF0000000000000, 0x0000000000000001, 0x7FF8000000000123])
    np.testing.assert_array_equal(dmljax.element_wise_bit_count(x), [10, 1, 17])  # 0xFFF8...0123: 13 + 4


# ----------------------------------------------------------------------------------------------
# Shifts: counts of the type's width or more give 0 (dmljax's choice); logical right shifts

SHIFTS = [
    # dtype, a, counts, a << counts, a >> counts
    (np.uint8, 0xFF, [0, 1, 7, 8, 9, 255], [0xFF, 0xFE, 0x80, 0, 0, 0], [0xFF, 0x7F, 1, 0, 0, 0]),
    (np.uint16, 0xFFFF, [0, 15, 16, 17, 0xFFFF], [0xFFFF, 0x8000, 0, 0, 0], [0xFFFF, 1, 0, 0, 0]),
    (np.uint32, 0xFFFFFFFF, [3, 31, 32, 33, 0xFFFFFFFF],
     [0xFFFFFFF8, 0x80000000, 0, 0, 0], [0x1FFFFFFF, 1, 0, 0, 0]),
]


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("dtype,a,counts,left,right", SHIFTS, ids=lambda v: getattr(v, "__name__", None))
def test_shift_by_width_or_more_gives_zero(dtype, a, counts, left, right, jit):
    a = np.full(len(counts), a, dtype)
    b = np.array(counts, dtype)
    out = _run(dmljax.element_wise_bit_shift_left, a, b, jit=jit)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, np.array(left, dtype))
    np.testing.assert_array_equal(_run(dmljax.element_wise_bit_shift_right, a, b, jit=jit), np.array(right, dtype))


@pytest.mark.parametrize("jit", [False, True])
def test_uint64_shifts(x64, jit):
    b = np.array([0, 1, 63, 64, 65, 2**63, 2**64 - 1], np.uint64)
    ones = np.full(7, 2**64 - 1, np.uint64)
    out = _run(dmljax.element_wise_bit_shift_left, np.ones(7, np.uint64), b, jit=jit)
    np.testing.assert_array_equal(out, np.array([1, 2, 2**63, 0, 0, 0, 0], np.uint64))
    out = _run(dmljax.element_wise_bit_shift_right, ones, b, jit=jit)
    np.testing.assert_array_equal(out, np.array([2**64 - 1, 2**63 - 1, 1, 0, 0, 0, 0], np.uint64))


def test_right_shift_is_logical_and_left_shift_drops_high_bits():
    a = np.array([0x80, 0x81, 0xC3], np.uint8)
    np.testing.assert_array_equal(dmljax.element_wise_bit_shift_right(a, np.array([1, 1, 4], np.uint8)),
                                  [0x40, 0x40, 0x0C])  # zeros come in from the top
    np.testing.assert_array_equal(dmljax.element_wise_bit_shift_left(a, np.array([1, 1, 4], np.uint8)),
                                  [0x00, 0x02, 0x30])


def test_shift_count_has_the_inputs_type_and_shifts_are_unsigned_only():
    with pytest.raises(dmljax.ValidationError, match=r"ATensor \(argument `a`\) and BTensor \(argument `b`\) "
                       r"have DataTypes UINT8, UINT32; they must have the same DataType"):
        dmljax.element_wise_bit_shift_left(np.ones(2, np.uint8), np.ones(2, np.uint32))
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.element_wise_bit_shift_right(np.ones(2, np.int32), np.ones(2, np.int32))
    assert "ATensor (argument `a`) has DataType INT32; supported: UINT64, UINT32, UINT16, UINT8." in str(e.value)


def test_shifts_at_feature_level_2_1_are_4d():
    a = np.full((1, 1, 1, 2), 6, np.uint16)
    b = np.array([1, 2], np.uint16).reshape(1, 1, 1, 2)
    np.testing.assert_array_equal(dmljax.element_wise_bit_shift_right(a, b, feature_level="2.1").ravel(), [3, 1])
    with pytest.raises(dmljax.ValidationError, match=r"has 1 dimension \(Sizes \[2\]\); supported: 4"):
        dmljax.element_wise_bit_shift_left(a.ravel(), b.ravel(), feature_level="2.1")


# ----------------------------------------------------------------------------------------------
# Feature levels and the 64-bit types


def test_signed_and_float_types_from_feature_level_4_1():
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.element_wise_bit_and(np.ones(2, np.float32), np.ones(2, np.float32), feature_level="3.0")
    assert "FLOAT32 is supported from DML_FEATURE_LEVEL_4_1" in str(e.value)
    with pytest.raises(dmljax.ValidationError, match="INT8 is supported from DML_FEATURE_LEVEL_4_1"):
        dmljax.element_wise_bit_count(np.ones(2, np.int8), feature_level="3.0")


@pytest.mark.parametrize("name,dtype", [("bit_and", np.uint64), ("bit_not", np.int64), ("bit_count", np.float64),
                                        ("bit_shift_left", np.uint64)])
def test_64_bit_types_need_x64(name, dtype):
    op = getattr(dmljax, "element_wise_" + name)
    args = [np.ones(2, dtype)] * len(op.spec.inputs)
    with jax.enable_x64(False):
        with pytest.raises(dmljax.ValidationError) as e:
            op(*args)
    tensor = op.spec.inputs[0]
    msg = str(e.value)
    assert (f"{tensor.dml_name} (argument `{tensor.arg}`) has DataType {np.dtype(dtype).name.upper()}, "
            "which JAX holds only in its 64-bit mode") in msg
    assert "jax.config.update('jax_enable_x64', True)" in msg


# ----------------------------------------------------------------------------------------------
# Gradients: none through the bits, float0 for integers


def test_grad_of_a_float_function_of_a_bit_count():
    x = jnp.array([1.0, 2.0, 3.0], jnp.float32)
    n = np.array([-1, 0, 96], np.int8)

    def f(x, n):
        return jnp.sum(x * dmljax.element_wise_bit_count(n).astype(jnp.float32))

    dx, dn = jax.jit(jax.grad(f, argnums=(0, 1), allow_int=True))(x, n)
    np.testing.assert_array_equal(dx, [8.0, 0.0, 2.0])
    assert dn.dtype == jax.dtypes.float0 and dn.shape == n.shape


def test_grad_through_float_bits_is_zero_without_nan():
    x = jnp.array([1.5, -0.0, np.inf, np.nan, 1e-40], jnp.float32)
    mask = _from_bits([0x7FFFFFFF] * 5, np.float32)

    def f(x):
        y = dmljax.element_wise_bit_and(x, mask) + dmljax.element_wise_bit_not(x)
        return jnp.sum(jnp.where(jnp.isfinite(y), y, 0.0)) + jnp.sum(x)

    g = jax.grad(f)(x)
    np.testing.assert_array_equal(g, np.ones(5, np.float32))  # only the sum(x) term: 1 each
    _, tangent = jax.jvp(lambda v: dmljax.element_wise_bit_xor(v, v), (x,), (jnp.ones_like(x),))
    np.testing.assert_array_equal(tangent, np.zeros(5, np.float32))
