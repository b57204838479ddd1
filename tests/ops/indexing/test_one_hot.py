"""Hand-written edges of ONE_HOT: the page's four examples, OffValue/OnValue from ValuesTensor of
other shapes, index types, gradients to OffValue and OnValue, and the desc rules' messages.
Expected values are the page's or by hand."""

import jax
import numpy as np
import pytest

import dmljax

F = np.float32
V01 = np.array([0, 1], F).reshape(1, 1, 1, 2)


def test_page_examples():
    i = np.array([0, 3, 2], np.uint32).reshape(1, 1, 3, 1)
    np.testing.assert_array_equal(dmljax.one_hot(i, V01, axis=3, output_sizes=(1, 1, 3, 4))[0, 0],
                                  [[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])
    j = np.array([0, 2, 1, 0], np.uint32).reshape(1, 1, 1, 4)
    np.testing.assert_array_equal(dmljax.one_hot(j, V01, axis=2, output_sizes=(1, 1, 3, 4))[0, 0],
                                  [[1, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0]])
    v = np.array([4, 2, 9], F).reshape(1, 1, 3, 1)  # Example 3: off 4, on 2, 9 unused
    np.testing.assert_array_equal(dmljax.one_hot(i, v, axis=3, output_sizes=(1, 1, 3, 4))[0, 0],
                                  [[2, 4, 4, 4], [4, 4, 4, 2], [4, 4, 2, 4]])
    k = np.array([-3, 100, 3], np.int32).reshape(1, 1, 3, 1)  # Example 4
    f = lambda a: dmljax.one_hot(a, V01, axis=3, output_sizes=(1, 1, 3, 4))  # noqa: E731
    want = [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]
    np.testing.assert_array_equal(f(k)[0, 0], want)
    np.testing.assert_array_equal(jax.jit(f)(k)[0, 0], want)


def test_index_types_and_extremes():
    for itype in (np.int32, np.uint32):
        info = np.iinfo(itype)
        i = np.array([int(info.max), int(info.min), 1], itype).reshape(3, 1)
        out = dmljax.one_hot(i, np.array([[7, 8]], np.int16), axis=1, output_sizes=(3, 3))
        np.testing.assert_array_equal(out, [[7, 7, 7], [8, 7, 7] if itype is np.uint32 else [7, 7, 7], [7, 8, 7]])
    with pytest.raises(dmljax.ValidationError, match="64-bit mode"):
        dmljax.one_hot(np.zeros((2, 1), np.int64), np.array([[0, 1]], F), axis=1, output_sizes=(2, 3))
    with jax.enable_x64(True):
        out = dmljax.one_hot(np.array([[-1], [2**40]], np.int64), np.array([[0, 1]], np.float64), axis=1,
                             output_sizes=(2, 3))
        np.testing.assert_array_equal(out, [[0, 0, 1], [0, 0, 0]])


def test_gradient_to_off_and_on():
    i = np.array([0, 3, 9], np.int32).reshape(3, 1)  # 9: the whole row off
    v = np.array([[2.0, 5.0, 1.0]], F)
    g = jax.grad(lambda a: (dmljax.one_hot(i, a, axis=1, output_sizes=(3, 4)) * np.arange(12.0).reshape(3, 4)).sum())(v)
    # on at (0, 0) and (1, 3): 0 + 7; off: the rest, 66 - 7
    np.testing.assert_array_equal(g, [[59, 7, 0]])


def test_desc_rules_messages():
    with pytest.raises(dmljax.ValidationError, match=r"ValuesTensor \(argument `values`\) has 1 element"):
        dmljax.one_hot(np.zeros((2, 1), np.uint32), np.zeros((1, 1), F), axis=1, output_sizes=(2, 3))
    with pytest.raises(dmljax.ValidationError, match=r"IndicesTensor \(argument `indices`\) has size 2 along Axis 1"):
        dmljax.one_hot(np.zeros((2, 2), np.uint32), np.zeros((1, 2), F), axis=1, output_sizes=(2, 3))
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor \(argument `output_sizes`\) has Sizes \[3, 3\] "
                                                     r"for IndicesTensor Sizes \[2, 1\]"):
        dmljax.one_hot(np.zeros((2, 1), np.uint32), np.zeros((1, 2), F), axis=1, output_sizes=(3, 3))
    with pytest.raises(TypeError, match="output_sizes"):
        dmljax.one_hot(np.zeros((2, 1), np.uint32), np.zeros((1, 2), F), axis=1)
