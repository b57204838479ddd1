"""Hand-written edges of GATHER, GATHER_ELEMENTS, GATHER_ND and GATHER_ND1: the pages' examples,
negative and out-of-range indices (0, never a read out of bounds, eager and under jax.jit), index
types (64-bit ones need JAX's 64-bit mode), NaN payloads moved untouched, gradients as
scatter-adds (duplicates add up), and the desc rules' messages. Expected values are the pages'
or by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

F = np.float32


def test_gather_page_examples():
    np.testing.assert_array_equal(dmljax.gather(np.array([11, 12, 13, 14], F), np.array([3, 1, 3, 0, 2], np.uint32),
                                                axis=0, index_dimensions=1), [14, 12, 14, 11, 13])
    x = np.array([[1, 2], [3, 4], [5, 6]], F)
    np.testing.assert_array_equal(dmljax.gather(x, np.array([[0, 1, 1, 2]], np.uint32), axis=0, index_dimensions=1),
                                  [[1, 2], [3, 4], [3, 4], [5, 6]])
    # Example 3 as its rule reads (IndexDimensions 1: its 2 breaks the page's output-rank rule)
    np.testing.assert_array_equal(dmljax.gather(x, np.array([[1, 0]], np.uint32), axis=1, index_dimensions=1),
                                  [[2, 1], [4, 3], [6, 5]])
    x3 = np.arange(1, 10, dtype=F).reshape(1, 3, 3)  # Example 4: leading 1 cropped
    out = dmljax.gather(x3, np.array([[[0, 2]]], np.uint32), axis=2, index_dimensions=2)
    np.testing.assert_array_equal(out, [[[1, 3]], [[4, 6]], [[7, 9]]])
    x5 = np.arange(1, 7, dtype=F).reshape(1, 3, 2)  # Example 5
    out = dmljax.gather(x5, np.array([[[0, 1], [1, 2]]], np.uint32), axis=1, index_dimensions=2)
    np.testing.assert_array_equal(out, [[[1, 2], [3, 4]], [[3, 4], [5, 6]]])


def test_gather_negative_and_out_of_range_indices_give_zero():
    x = np.arange(1, 13, dtype=F).reshape(3, 4)
    idx = np.array([[0, -1, 4, -4, -5, 2**31 - 1, -2**31]], np.int32)
    want = [[1, 4, 0, 1, 0, 0, 0], [5, 8, 0, 5, 0, 0, 0], [9, 12, 0, 9, 0, 0, 0]]
    f = lambda a, i: dmljax.gather(a, i, axis=1, index_dimensions=1)  # noqa: E731
    np.testing.assert_array_equal(f(x, idx), want)
    np.testing.assert_array_equal(jax.jit(f)(x, idx), want)
    u = np.array([[2**32 - 1, 3, 4]], np.uint32)  # unsigned: never negative, huge is out of range
    np.testing.assert_array_equal(f(x, u), [[0, 4, 0], [0, 8, 0], [0, 12, 0]])
    e = dmljax.gather_elements(x, np.array([[-1, 3, -9, 2]], np.int32), axis=0)
    np.testing.assert_array_equal(e, [[9, 0, 0, 12]])
    np.testing.assert_array_equal(jax.jit(lambda a: dmljax.gather_elements(a, np.array([[-1, 3, -9, 2]], np.int32),
                                                                           axis=0))(x), [[9, 0, 0, 12]])


def test_gather_nd_tuples_out_of_range_give_zero_slices():
    x = np.arange(24, dtype=F).reshape(2, 3, 4)
    i = np.array([[[1, 2], [-1, -1], [2, 0], [0, -4]]], np.int32)
    out = dmljax.gather_nd(x, i, input_dimension_count=3, indices_dimension_count=2)
    np.testing.assert_array_equal(out, [[[20, 21, 22, 23], [20, 21, 22, 23], [0, 0, 0, 0], [0, 0, 0, 0]]])
    f = jax.jit(lambda a, b: dmljax.gather_nd(a, b, input_dimension_count=3, indices_dimension_count=2))
    np.testing.assert_array_equal(f(x, i), out)


def test_gather_nd_page_examples():
    x = np.array([[0, 1], [2, 3]], F)
    np.testing.assert_array_equal(dmljax.gather_nd(x, np.array([[1], [0]], np.uint32), input_dimension_count=2,
                                                   indices_dimension_count=2), [[2, 3], [0, 1]])
    x2 = np.arange(8, dtype=F).reshape(1, 2, 2, 2)  # Example 2
    out = dmljax.gather_nd(x2, np.array([[[[0, 1], [1, 0]]]], np.uint32), input_dimension_count=3,
                           indices_dimension_count=2)
    np.testing.assert_array_equal(out, [[[[2, 3], [4, 5]]]])
    x3 = np.arange(12, dtype=F).reshape(1, 3, 2, 2)  # GATHER_ND1's Example 2
    i = np.array([[[[0, 0], [1, 1]], [[1, 1], [0, 0]], [[0, 1], [1, 0]]]], np.uint32)
    out = dmljax.gather_nd1(x3, i, input_dimension_count=3, indices_dimension_count=3, batch_dimension_count=1)
    assert out.shape == (1, 1, 3, 2)
    np.testing.assert_array_equal(out[0, 0], [[0, 3], [7, 4], [9, 10]])
    same = dmljax.gather_nd1(x2, np.array([[[[0, 1], [1, 0]]]], np.uint32), input_dimension_count=3,
                             indices_dimension_count=2, batch_dimension_count=0)
    np.testing.assert_array_equal(same, [[[[2, 3], [4, 5]]]])  # BatchDimensionCount 0 is GATHER_ND


def test_values_move_untouched():
    bits = np.array([0x7FC00001, 0xFFF00002, 0x00000001, 0x80000000], np.uint32)  # NaN payloads, denormal, -0
    x = bits.view(F)
    out = dmljax.gather(x, np.array([3, 2, 1, 0], np.uint32), axis=0, index_dimensions=1)
    np.testing.assert_array_equal(np.asarray(out).view(np.uint32), bits[::-1])
    out = dmljax.gather_elements(x, np.array([1, 0], np.int32), axis=0)
    np.testing.assert_array_equal(np.asarray(out).view(np.uint32), bits[[1, 0]])


@pytest.mark.parametrize("itype", [np.int32, np.uint32, np.int64, np.uint64])
def test_index_types(itype):
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    idx = np.array([[2, 0, 5]], itype)
    if np.dtype(itype).itemsize == 8:
        with pytest.raises(dmljax.ValidationError, match="IndicesTensor .argument `indices`. has DataType "
                                                         f"{np.dtype(itype).name.upper()}, which JAX holds only in its 64-bit mode"):
            dmljax.gather(x, idx, axis=1, index_dimensions=1)
        with jax.enable_x64(True):
            big = np.array([[2, 0, 2**40]], itype)
            np.testing.assert_array_equal(dmljax.gather(x, big, axis=1, index_dimensions=1), [[2, 0, 0], [5, 3, 0]])
    else:
        np.testing.assert_array_equal(dmljax.gather(x, idx, axis=1, index_dimensions=1), [[2, 0, 0], [5, 3, 0]])
    with pytest.raises(dmljax.ValidationError, match="IndicesTensor .* has DataType INT32; supported: UINT32"):
        dmljax.gather(np.zeros((1, 1, 2, 2), F), np.zeros((1, 1, 1, 2), np.int32), axis=3, index_dimensions=1,
                      feature_level="2.1")


def test_gradients_scatter_add():
    x = np.arange(1, 7, dtype=F).reshape(2, 3)
    idx = np.array([[0, 2, 0, 0, 9, -1]], np.int32)  # 0 three times, 2 twice (-1), 9 out of range
    w = jnp.arange(1.0, 7.0)
    g = jax.grad(lambda a: (dmljax.gather(a, idx, axis=1, index_dimensions=1) * w).sum())(x)
    np.testing.assert_array_equal(g, [[1 + 3 + 4, 0, 2 + 6]] * 2)
    gi = jax.grad(lambda a: dmljax.gather_elements(a, np.array([[1, 1, 1], [1, -1, 5]], np.int32), axis=0).sum())(x)
    np.testing.assert_array_equal(gi, [[0, 0, 0], [2, 2, 1]])
    gn = jax.grad(lambda a: dmljax.gather_nd(a, np.array([[1], [1], [4]], np.uint32), input_dimension_count=2,
                                             indices_dimension_count=2).sum())(x)
    np.testing.assert_array_equal(gn, [[0, 0, 0], [2, 2, 2]])
    g_idx = jax.grad(lambda a, i: dmljax.gather(a, i, axis=1, index_dimensions=1).sum(), argnums=1,
                     allow_int=True)(x, idx)
    assert g_idx.dtype == jax.dtypes.float0


def test_desc_rules_messages():
    x = np.zeros((2, 3), F)
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.gather(x, np.zeros((2, 2), np.uint32), axis=0, index_dimensions=1)
    assert ("IndicesTensor (argument `indices`) has Sizes [2, 2] with IndexDimensions 1; sizes of 1 before its "
            "last 1 (the irrelevant leading ones)") in str(e.value)
    with pytest.raises(dmljax.ValidationError, match=r"IndicesTensor \(argument `indices`\) has 1 dimensions "
                                                     r"\(Sizes \[2\]\); the same DimensionCount as InputTensor \(2\)"):
        dmljax.gather(x, np.zeros((2,), np.uint32), axis=0, index_dimensions=1)
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor would have Sizes \[2, 2, 2\]"):
        dmljax.gather(x, np.zeros((2, 2), np.uint32), axis=1, index_dimensions=2)
    with pytest.raises(dmljax.ValidationError, match=r"Axis \(argument `axis`\) is 2 for a 2-dimensional InputTensor"):
        dmljax.gather_elements(x, np.zeros((2, 3), np.uint32), axis=2)
    with pytest.raises(dmljax.ValidationError, match="dimension 1 differs"):
        dmljax.gather_elements(x, np.zeros((5, 2), np.uint32), axis=0)
    with pytest.raises(dmljax.ValidationError, match=r"holds index tuples of 3 coordinates .* at most "
                                                     r"InputDimensionCount - BatchDimensionCount = 2"):
        dmljax.gather_nd(x, np.zeros((1, 3), np.uint32), input_dimension_count=2, indices_dimension_count=1)
    with pytest.raises(dmljax.ValidationError, match=r"has batch Sizes \[3\]; the InputTensor's batch Sizes \[2\]"):
        dmljax.gather_nd1(np.zeros((2, 3, 4), F), np.zeros((3, 2, 1), np.uint32), input_dimension_count=3,
                          indices_dimension_count=3, batch_dimension_count=1)
