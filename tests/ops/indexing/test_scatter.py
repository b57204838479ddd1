"""Hand-written edges of SCATTER_ELEMENTS (alias SCATTER) and SCATTER_ND: the pages' examples,
duplicate indices (the last update in row-major order wins, eager and under jax.jit, on many
duplicates), negative and out-of-range indices (dropped), gradients (the winners get dY, the
overwritten input cells 0), and the desc rules' messages. Expected values are the pages' or by
hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

F = np.float32


def test_page_examples():
    out = dmljax.scatter_elements(np.arange(5, dtype=F), np.array([3, 1, 3, 0], np.uint32),
                                  np.array([5, 6, 7, 8], F), axis=0)
    np.testing.assert_array_equal(out, [8, 6, 2, 7, 4])  # Example 1: index 3 twice, the last (7) wins
    out = dmljax.scatter_elements(np.zeros((3, 3), F), np.array([[1, 0, 2], [0, 2, 1]], np.uint32),
                                  np.array([[10, 11, 12], [20, 21, 22]], F), axis=0)
    np.testing.assert_array_equal(out, [[20, 11, 0], [10, 0, 22], [0, 21, 12]])  # Example 2 (Input 3 x 3)
    out = dmljax.scatter_nd(np.arange(1, 9, dtype=F)[None], np.array([[4], [3], [1], [7]], np.uint32),
                            np.array([[9, 10, 11, 12]], F), input_dimension_count=1, indices_dimension_count=2)
    np.testing.assert_array_equal(out, [[1, 11, 3, 10, 9, 6, 7, 12]])


def test_alias():
    assert dmljax.get_operator("SCATTER") is dmljax.scatter_elements
    assert dmljax.get_operator("DML_OPERATOR_SCATTER") is dmljax.scatter_elements


def test_duplicates_last_in_row_major_order_wins():
    # 4096 updates onto 7 cells: each cell's value must be its last update, whatever order the
    # backend applies them in.
    rng = np.random.default_rng(0)
    idx = rng.integers(-7, 9, size=(64, 64)).astype(np.int32)  # 7, 8 and -8 fall outside
    upd = rng.standard_normal((64, 64)).astype(F)
    x = np.full((7, 64), -1.0, F)
    want = x.copy()
    for r in range(64):  # by hand, in row-major order of the updates
        for c in range(64):
            i = idx[r, c] + 7 if idx[r, c] < 0 else idx[r, c]
            if 0 <= i < 7:
                want[i, c] = upd[r, c]
    f = lambda a, i, u: dmljax.scatter_elements(a, i, u, axis=0)  # noqa: E731
    np.testing.assert_array_equal(f(x, idx, upd), want)
    np.testing.assert_array_equal(jax.jit(f)(x, idx, upd), want)
    # SCATTER_ND: whole rows, the last tuple wins
    rows = np.array([[2], [0], [2], [-1], [9], [0]], np.int32)
    u = np.arange(18, dtype=F).reshape(6, 3)
    out = dmljax.scatter_nd(np.zeros((4, 3), F), rows, u, input_dimension_count=2, indices_dimension_count=2)
    np.testing.assert_array_equal(out, [[15, 16, 17], [0, 0, 0], [6, 7, 8], [9, 10, 11]])
    g = jax.jit(lambda a, i, v: dmljax.scatter_nd(a, i, v, input_dimension_count=2, indices_dimension_count=2))
    np.testing.assert_array_equal(g(np.zeros((4, 3), F), rows, u), out)


def test_duplicates_in_every_number_width():
    # On the CPU the winners are numbered along Axis in UINT8, UINT16 or UINT32 by the axis's
    # length (axes of 200, 300 and 70,000 here) and read back at each cell's coordinates: the last
    # update along the axis wins in each, -0.0 and NaN payloads kept, an index out of range dropped.
    for n, dtype in ((70000, np.float16), (300, np.int8), (200, F)):
        idx = (np.arange(n) % 3).astype(np.int32)  # cells 0, 1, 2 over and over
        idx[-1] = 5  # dropped
        upd = (np.arange(n) % 1000).astype(dtype)
        bits = {1: np.uint8, 2: np.uint16, 4: np.uint32}[np.dtype(dtype).itemsize]
        if np.dtype(dtype).kind == "f":
            upd[n - 4] = -0.0
            upd.view(bits)[n - 3] = np.asarray(0x7E01 if dtype == np.float16 else 0x7FC00001, bits)
        out = np.asarray(jax.jit(lambda a, i, u: dmljax.scatter_elements(a, i, u, axis=0))(
            np.ones(4, dtype), idx, upd))
        want = np.ones(4, dtype)  # cell 3 untouched
        for k in range(n - 4, n - 1):  # the last update of each cell
            want[k % 3] = upd[k]
        np.testing.assert_array_equal(out.view(bits), want.view(bits), err_msg=f"{n} {dtype}")


def test_out_of_range_updates_are_dropped():
    x = np.arange(4, dtype=np.int8)
    out = dmljax.scatter_elements(x, np.array([4, -5, 2**31 - 1, -2**31, -1], np.int32),
                                  np.array([9, 9, 9, 9, 7], np.int8), axis=0)
    np.testing.assert_array_equal(out, [0, 1, 2, 7])
    out = dmljax.scatter_elements(x, np.array([2**32 - 1, 1], np.uint32), np.array([9, 5], np.int8), axis=0)
    np.testing.assert_array_equal(out, [0, 5, 2, 3])
    with jax.enable_x64(True):
        out = dmljax.scatter_nd(np.zeros((2, 2), np.uint64), np.array([[2**40, 0], [1, -1]], np.int64),
                                np.array([[5, 6]], np.uint64), input_dimension_count=2, indices_dimension_count=2)
        np.testing.assert_array_equal(out, [[0, 0], [0, 6]])


def test_values_move_untouched():
    bits = np.array([0x7FC00001, 0xFFF00002, 0x00000001, 0x80000000], np.uint32)
    out = dmljax.scatter_elements(np.zeros(4, F), np.array([3, 2, 1, 0], np.uint32), bits.view(F), axis=0)
    np.testing.assert_array_equal(np.asarray(out).view(np.uint32), bits[::-1])


def test_gradients():
    x = np.zeros(5, F)
    idx = np.array([1, 3, 1, -1, 7], np.int32)  # cell 1 twice (update 2 wins), -1 is cell 4, 7 dropped
    u = np.arange(1.0, 6.0, dtype=F)
    w = jnp.array([10.0, 20.0, 30.0, 40.0, 50.0])
    gx, gu = jax.grad(lambda a, v: (dmljax.scatter_elements(a, idx, v, axis=0) * w).sum(), argnums=(0, 1))(x, u)
    np.testing.assert_array_equal(gx, [10, 0, 30, 0, 0])
    np.testing.assert_array_equal(gu, [0, 40, 20, 50, 0])
    rows = np.array([[1], [1], [3]], np.uint32)
    gx, gu = jax.grad(lambda a, v: dmljax.scatter_nd(a, rows, v, input_dimension_count=2,
                                                     indices_dimension_count=2).sum(), argnums=(0, 1))(
        np.zeros((3, 2), F), np.ones((3, 2), F))
    np.testing.assert_array_equal(gx, [[1, 1], [0, 0], [1, 1]])
    np.testing.assert_array_equal(gu, [[0, 0], [1, 1], [0, 0]])


def test_desc_rules_messages():
    x = np.zeros((2, 3), F)
    with pytest.raises(dmljax.ValidationError, match=r"IndicesTensor \(argument `indices`\) and UpdatesTensor "
                                                     r"\(argument `updates`\) have Sizes \[2, 3\], \[2, 2\]"):
        dmljax.scatter_elements(x, np.zeros((2, 3), np.uint32), np.zeros((2, 2), F), axis=0)
    with pytest.raises(dmljax.ValidationError, match="dimension 1 differs"):
        dmljax.scatter_elements(x, np.zeros((2, 2), np.uint32), np.zeros((2, 2), F), axis=0)
    with pytest.raises(dmljax.ValidationError, match=r"UpdatesTensor \(argument `updates`\) has Sizes \[2, 3\]; "
                                                     r"Sizes \[1, 3\]"):
        dmljax.scatter_nd(x, np.zeros((1, 1), np.uint32), np.zeros((2, 3), F), input_dimension_count=2,
                          indices_dimension_count=2)
    with pytest.raises(dmljax.ValidationError, match="have DataTypes FLOAT32, FLOAT16"):
        dmljax.scatter_elements(x, np.zeros((2, 3), np.uint32), np.zeros((2, 3), np.float16), axis=0)
