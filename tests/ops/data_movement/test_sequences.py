"""REVERSE_SUBSEQUENCES by hand: the page's two examples, lengths of 0, 1 and beyond the axis,
bits copied untouched, the lengths' Sizes rule, and the gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

X = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)  # the page's input


def test_page_examples():
    got = dmljax.reverse_subsequences(X, np.array([2, 4, 3], np.uint32).reshape(1, 1, 3, 1), axis=3)
    assert np.asarray(got)[0, 0].tolist() == [[2, 1, 3, 4], [8, 7, 6, 5], [11, 10, 9, 12]]
    got = dmljax.reverse_subsequences(X, np.array([[[[2, 3, 1, 0]]]], np.uint32), axis=2)
    assert np.asarray(got)[0, 0].tolist() == [[5, 10, 3, 4], [1, 6, 7, 8], [9, 2, 11, 12]]


def test_lengths_beyond_the_axis_bits_rules_and_gradient():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int8)
    lengths = np.array([[4_000_000_000], [0]], np.uint32)  # clamped to 3; 0 changes nothing
    got = jax.jit(lambda a, b: dmljax.reverse_subsequences(a, b, axis=1))(x, lengths)
    assert np.asarray(got).tolist() == [[3, 2, 1], [4, 5, 6]]
    bits = np.array([[0x7FC00123, 1, 0x80000000]], np.uint32).view(np.float32)
    got = dmljax.reverse_subsequences(bits, np.array([[3]], np.uint32), axis=1)
    assert np.asarray(got).view(np.uint32).tolist() == [[0x80000000, 1, 0x7FC00123]]
    with pytest.raises(dmljax.ValidationError, match=r"SequenceLengthsTensor \(argument `sequence_lengths`\) has Sizes \[2, 3\]"):
        dmljax.reverse_subsequences(x, np.zeros((2, 3), np.uint32), axis=1)
    with pytest.raises(dmljax.ValidationError, match=r"Axis \(argument `axis`\) is 2 for a 2-dimensional InputTensor"):
        dmljax.reverse_subsequences(x, lengths, axis=2)
    with pytest.raises(dmljax.ValidationError, match="has DataType INT32; supported: UINT64, UINT32"):
        dmljax.reverse_subsequences(x, lengths.astype(np.int32), axis=1)
    f = np.array([[1.0, 2.0, 3.0]], np.float32)
    dy = np.array([[10.0, 20.0, 30.0]], np.float32)
    g = jax.grad(lambda a: jnp.sum(dmljax.reverse_subsequences(a, np.array([[2]], np.uint32), axis=1) * dy))(f)
    assert np.asarray(g).tolist() == [[20, 10, 30]]
