"""Lp normalization by hand: Epsilon's place under the root, P, the gradients, and the shape rules'
messages."""

import jax
import numpy as np
import pytest

import dmljax
from tests.reference.normalization import lp


def _assert_close(got, want, rtol=2e-6, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- LP_NORMALIZATION
def test_lp_epsilon_under_the_root_and_p():
    x = np.array([[3.0, 4.0], [0.0, 0.0], [-1.0, 3.0]], np.float32)
    _assert_close(dmljax.lp_normalization(x, axis=1, epsilon=11.0), [[0.5, 2 / 3], [0, 0], [-1 / np.sqrt(21),
                                                                                          3 / np.sqrt(21)]])
    _assert_close(dmljax.lp_normalization(x, axis=1, p=1, epsilon=1.0), [[3 / 8, 4 / 8], [0, 0], [-0.2, 0.6]])
    _assert_close(dmljax.lp_normalization(x, axis=0, p=2, epsilon=0.0),
                  x / np.sqrt((x.astype(np.float64) ** 2).sum(axis=0)))
    np.testing.assert_array_equal(np.asarray(dmljax.lp_normalization(x.astype(np.float16), axis=1)).dtype, np.float16)
    with pytest.raises(dmljax.ValidationError, match=r"P \(argument `p`\) is 3; 1 or 2"):
        dmljax.lp_normalization(x, axis=1, p=3)
    with pytest.raises(dmljax.ValidationError, match=r"Axis \(argument `axis`\) is 2 for a 2-dimensional InputTensor; "
                       r"in the range \[0, 1\]"):
        dmljax.lp_normalization(x, axis=2)
    with pytest.raises(dmljax.ValidationError, match=r"supported: 4\.\n    Tip: 1 to 8 dimensions are supported from"):
        dmljax.lp_normalization(x, axis=1, feature_level="3.0")


@pytest.mark.parametrize("p", [1, 2])
def test_lp_gradient_is_the_formulas(p):
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 5)).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    got = jax.grad(lambda x: (dmljax.lp_normalization(x, axis=1, p=p, epsilon=0.5) * dy).sum())(x)
    _assert_close(got, lp._lp_grad(dy, x, axis=1, p=p, epsilon=0.5)[0], rtol=1e-5, atol=1e-6)
