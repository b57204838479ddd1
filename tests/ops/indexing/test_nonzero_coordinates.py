"""Hand-written edges of NONZERO_COORDINATES: the page's example, the worst-case output shape,
zeros, NaN, denormals and integers, jit, and the rules' messages. Expected values are the page's
or by hand."""

import jax
import numpy as np
import pytest

import dmljax


# ------------------------------------------------------------------------ NONZERO_COORDINATES
def test_nonzero_coordinates_page_example_and_worst_case_shape():
    x = np.array([[[[1.0, 0.0, 0.0, 2.0], [-0.0, 3.5, 0.0, -5.2]]]], np.float32)  # the page's example
    count, coords = dmljax.nonzero_coordinates(x, output_count_sizes=(1, 1, 1, 1), output_coordinates_sizes=(1, 1, 8, 3))
    assert count.dtype == np.uint32 and np.asarray(count).tolist() == [[[[4]]]]
    assert np.asarray(coords[0, 0]).tolist() == [[0, 0, 0], [0, 0, 3], [0, 1, 1], [0, 1, 3]] + [[0, 0, 0]] * 4
    count, coords = dmljax.nonzero_coordinates(x)  # left out: the count all 1s, N = DimensionCount
    assert count.shape == (1, 1, 1, 1) and coords.shape == (1, 1, 8, 4)
    assert np.asarray(coords[0, 0, :4]).tolist() == [[0, 0, 0, 0], [0, 0, 0, 3], [0, 0, 1, 1], [0, 0, 1, 3]]


def test_nonzero_coordinates_zero_nan_integers_and_jit():
    x = np.array([0.0, -0.0, 1e-40, np.nan, -np.inf, 2.0], np.float32)  # a FLOAT32 denormal is zero
    count, coords = jax.jit(dmljax.nonzero_coordinates)(x)
    assert int(count[0]) == 3 and np.asarray(coords).ravel().tolist() == [3, 4, 5, 0, 0, 0]
    h = np.array([[6e-8, 0.0], [-0.0, -1.0]], np.float16)  # FLOAT16 denormals are not
    assert int(dmljax.nonzero_coordinates(h)[0].ravel()[0]) == 2
    i = np.array([[0, -128], [127, 0]], np.int8)
    count, coords = dmljax.nonzero_coordinates(i)
    assert int(count.ravel()[0]) == 2 and np.asarray(coords).tolist() == [[0, 1], [1, 0], [0, 0], [0, 0]]
    none = dmljax.nonzero_coordinates(np.zeros((3,), np.uint8))
    assert int(none[0][0]) == 0 and not np.asarray(none[1]).any()


def test_nonzero_coordinates_rules():
    x = np.zeros((1, 1, 3, 4), np.float32)
    with pytest.raises(dmljax.ValidationError, match=r"N from the InputTensor's effective rank \(2\) to its DimensionCount \(4\)"):
        dmljax.nonzero_coordinates(x, output_coordinates_sizes=(1, 1, 12, 1))
    with pytest.raises(dmljax.ValidationError, match="one row per input element"):
        dmljax.nonzero_coordinates(x, output_coordinates_sizes=(1, 1, 11, 2))
    with pytest.raises(dmljax.ValidationError, match="a scalar: every size 1"):
        dmljax.nonzero_coordinates(x, output_count_sizes=(1, 2))
    assert dmljax.nonzero_coordinates(x, output_coordinates_sizes=(1, 1, 12, 2))[1].shape == (1, 1, 12, 2)
    with pytest.raises(dmljax.ValidationError, match="supported: 4 to 5"):
        dmljax.nonzero_coordinates(np.zeros((3, 4), np.float32), feature_level="3.0")
