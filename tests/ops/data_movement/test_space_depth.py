"""SPACE_TO_DEPTH(1) and DEPTH_TO_SPACE(1) by hand: the pages' examples in both orders, the round
trip, the divisibility rules and the gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

DEPTH = np.array([[[[0, 1, 2], [3, 4, 5]], [[9, 10, 11], [12, 13, 14]], [[18, 19, 20], [21, 22, 23]],
                   [[27, 28, 29], [30, 31, 32]], [[36, 37, 38], [39, 40, 41]], [[45, 46, 47], [48, 49, 50]],
                   [[54, 55, 56], [57, 58, 59]], [[63, 64, 65], [66, 67, 68]]]], np.uint32)  # {1, 8, 2, 3}
SPACE_DCR = np.array([[[[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56], [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
                       [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65], [12, 30, 13, 31, 14, 32],
                        [48, 66, 49, 67, 50, 68]]]], np.uint32)  # the pages' Example 1
SPACE_CRD = np.array([[[[0, 9, 1, 10, 2, 11], [18, 27, 19, 28, 20, 29], [3, 12, 4, 13, 5, 14], [21, 30, 22, 31, 23, 32]],
                       [[36, 45, 37, 46, 38, 47], [54, 63, 55, 64, 56, 65], [39, 48, 40, 49, 41, 50],
                        [57, 66, 58, 67, 59, 68]]]], np.uint32)  # the pages' Example 2


def test_page_examples_both_orders_and_both_directions():
    assert np.array_equal(dmljax.depth_to_space(DEPTH, block_size=2), SPACE_DCR)
    assert np.array_equal(dmljax.depth_to_space1(DEPTH, block_size=2, order="DEPTH_COLUMN_ROW"), SPACE_DCR)
    assert np.array_equal(dmljax.depth_to_space1(DEPTH, block_size=2, order="COLUMN_ROW_DEPTH"), SPACE_CRD)
    assert np.array_equal(dmljax.space_to_depth(SPACE_DCR, block_size=2), DEPTH)
    assert np.array_equal(dmljax.space_to_depth1(SPACE_DCR, block_size=2, order="DEPTH_COLUMN_ROW"), DEPTH)
    assert np.array_equal(dmljax.space_to_depth1(SPACE_CRD, block_size=2, order="COLUMN_ROW_DEPTH"), DEPTH)


def test_round_trip_rules_and_gradient(rng):
    x = rng.standard_normal((2, 18, 2, 3)).astype(np.float32)
    for order in ("DEPTH_COLUMN_ROW", "COLUMN_ROW_DEPTH"):
        y = dmljax.depth_to_space1(x, block_size=3, order=order)
        assert y.shape == (2, 2, 6, 9)
        assert np.array_equal(dmljax.space_to_depth1(y, block_size=3, order=order), x)
    with pytest.raises(dmljax.ValidationError, match=r"has 8 channels .*; a multiple of BlockSize \* BlockSize \(9\)"):
        dmljax.depth_to_space(DEPTH, block_size=3)
    with pytest.raises(dmljax.ValidationError, match=r"has width 6 .*; a multiple of BlockSize \(4\)"):
        dmljax.space_to_depth(SPACE_DCR, block_size=4)
    with pytest.raises(dmljax.ValidationError, match=r"BlockSize \(argument `block_size`\) is 0; at least 1"):
        dmljax.space_to_depth(SPACE_DCR, block_size=0)
    with pytest.raises(TypeError, match="order"):
        dmljax.depth_to_space1(DEPTH, block_size=2)  # no documented default
    dy = rng.standard_normal((2, 2, 6, 9)).astype(np.float32)
    g = jax.grad(lambda v: jnp.sum(dmljax.depth_to_space1(v, block_size=3, order="COLUMN_ROW_DEPTH") * dy))(x)
    assert np.array_equal(g, dmljax.space_to_depth1(dy, block_size=3, order="COLUMN_ROW_DEPTH"))
