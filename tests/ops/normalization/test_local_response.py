"""Local response normalization by hand: the LRN region and its clipping, across channels and
within them, jax.grad of LRN equal to LRN_GRAD, and the shape rules' messages."""

import jax
import numpy as np
import pytest

import dmljax
from tests.reference.normalization import local_response


def _assert_close(got, want, rtol=2e-6, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


# --------------------------------------------------------------- LOCAL_RESPONSE_NORMALIZATION
def test_lrn_regions_cross_channel_and_within():
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 4, 1, 2) / 4
    # channels c - 1 .. c + 1 (LocalSize 3), clipped: sum of squares, Alpha / 3, Bias 1, Beta 1
    x64 = x.astype(np.float64)
    sq = x64 ** 2
    sums = np.stack([sq[:, max(0, c - 1):c + 2].sum(axis=1) for c in range(4)], axis=1)
    _assert_close(dmljax.local_response_normalization(x, local_size=3, alpha=3.0, beta=1.0), x64 / (1 + sums))
    # LocalSize 2: the channel and the next one (floor(1/2) = 0 before, ceil(1/2) = 1 after)
    sums2 = np.stack([sq[:, c:c + 2].sum(axis=1) for c in range(4)], axis=1)
    _assert_close(dmljax.local_response_normalization(x, local_size=2, alpha=1.0, beta=0.5, bias=2.0),
                  x64 / np.sqrt(2 + 0.5 * sums2), rtol=1e-5)
    # LocalSize 9 over 4 channels: every channel, Alpha / 9
    _assert_close(dmljax.local_response_normalization(x, local_size=9, alpha=9.0, beta=1.0),
                  x64 / (1 + sq.sum(axis=1, keepdims=True)))
    # within each channel: LocalSize x LocalSize of Height x Width, Alpha / LocalSize
    y = rng_image = np.random.default_rng(3).normal(size=(2, 2, 3, 4)).astype(np.float32)
    want = local_response.local_response_normalization(rng_image, cross_channel=False, local_size=2, alpha=0.5, beta=0.75,
                                              bias=1.0)[0]
    y = dmljax.local_response_normalization(rng_image, cross_channel=False, local_size=2, alpha=0.5)
    _assert_close(y, want, rtol=1e-5)
    win = rng_image[0, 0, 0:2, 0:2].astype(np.float64)  # element (0, 0): rows 0-1, columns 0-1
    _assert_close(y[0, 0, 0, 0], rng_image[0, 0, 0, 0] / (1 + 0.25 * (win ** 2).sum()) ** 0.75, rtol=1e-5)


def test_lrn_gradient_is_its_grad_operator():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 5, 3, 3)).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    for kw in ({"local_size": 3, "alpha": 0.5}, {"local_size": 2, "cross_channel": False, "alpha": 1.0, "bias": 2.0}):
        g = jax.grad(lambda x, kw=kw: (dmljax.local_response_normalization(x, **kw) * dy).sum())(x)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(dmljax.local_response_normalization_grad(x, dy, **kw)))
        # the reference LRN_GRAD (the derivative written out) is the complex-step derivative of the LRN
        want = local_response.local_response_normalization_grad(x, dy, **kw)[0]
        _assert_close(g, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(want, local_response._lrn_grad(dy, x, **kw)[0], rtol=1e-12, atol=1e-14)


def test_lrn_rules():
    x = np.ones((1, 2, 2, 2), np.float32)
    with pytest.raises(dmljax.ValidationError, match=r"LocalSize \(argument `local_size`\) is 0; at least 1"):
        dmljax.local_response_normalization(x, local_size=0)
    with pytest.raises(dmljax.ValidationError, match=r"has 3 dimensions \(Sizes \[2, 2, 2\]\); supported: 4"):
        dmljax.local_response_normalization(x[0], local_size=1)
    with pytest.raises(dmljax.ValidationError, match=r"have Sizes \[1, 2, 2, 2\], \[1, 2, 2, 1\]"):
        dmljax.local_response_normalization_grad(x, x[..., :1], local_size=1)
    with pytest.raises(dmljax.ValidationError, match="it was introduced in DML_FEATURE_LEVEL_3_1"):
        dmljax.local_response_normalization_grad(x, x, local_size=1, feature_level="3.0")


