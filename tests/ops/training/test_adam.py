"""ADAM_OPTIMIZER by hand: the page's pseudocode over several steps against the textbook Adam
written here in float64, the in-place-style loop of a training run, step 0's 0 / 0, FLOAT16
rounded once per output, no gradient through it, and its shape and type rules."""

import jax
import numpy as np
import pytest

import dmljax


def _textbook(x, g_seq, lr, b1, b2, eps):
    """Kingma & Ba's Algorithm 1 with the "efficient" step of their section 2:
    alpha_t = lr * sqrt(1 - b2^t) / (1 - b1^t), x -= alpha_t * m / (sqrt(v) + eps)."""
    m = v = np.zeros_like(x)
    for t, g in enumerate(g_seq, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        x = x - lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (np.sqrt(v) + eps)
    return x, m, v


def test_steps_against_the_textbook():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    grads = [rng.standard_normal(x.shape).astype(np.float32) for _ in range(5)]
    p, m, v = x, np.zeros_like(x), np.zeros_like(x)
    for t, g in enumerate(grads, start=1):
        p, m, v = dmljax.adam_optimizer(p, m, v, g, np.full((1, 1, 1, 1), t, np.uint32), learning_rate=0.01)
    b1, b2 = float(np.float32(0.9)), float(np.float32(0.999))
    want = _textbook(x.astype(np.float64), [g.astype(np.float64) for g in grads], float(np.float32(0.01)), b1, b2,
                     float(np.float32(1e-8)))
    for got, w in zip((p, m, v), want):
        np.testing.assert_allclose(np.asarray(got), w, rtol=2e-5, atol=1e-6)


def test_step_zero_is_the_pages_zero_over_zero():
    one = np.ones((1, 1, 1, 1), np.float32)
    x, m, v = dmljax.adam_optimizer(one, one, one, one, np.zeros((1, 1, 1, 1), np.uint32), learning_rate=0.1)
    assert np.isnan(np.asarray(x)).all()  # Alpha = sqrt(1 - 1) / (1 - 1)
    assert float(m[0, 0, 0, 0]) == 1.0 and float(v[0, 0, 0, 0]) == 1.0  # the moments are still updated


def test_float16_rounds_each_output_once_and_nothing_is_differentiated():
    rng = np.random.default_rng(1)
    x, g = (rng.standard_normal((1, 1, 4, 8)).astype(np.float16) for _ in range(2))
    m, v = np.zeros_like(x), np.zeros_like(x)
    step = np.full((1, 1, 1, 1), 3, np.uint32)
    got = dmljax.adam_optimizer(x, m, v, g, step, learning_rate=0.125, beta1=0.5, beta2=0.75)
    wide = dmljax.adam_optimizer(*(a.astype(np.float32) for a in (x, m, v, g)), step, learning_rate=0.125,
                                 beta1=0.5, beta2=0.75)
    for h, f in zip(got, wide):
        assert h.dtype == np.float16
        np.testing.assert_array_equal(np.asarray(h), np.asarray(f).astype(np.float16))
    dx = jax.grad(lambda x: dmljax.adam_optimizer(x, m, v, g, step, learning_rate=0.1)[0].astype(np.float32).sum())(x)
    assert not np.asarray(dx).any()


def test_rules():
    x = np.zeros((1, 1, 2, 2), np.float32)
    step = np.ones((1, 1, 1, 1), np.uint32)
    with pytest.raises(dmljax.ValidationError, match=r"TrainingStepTensor \(argument `training_step`\) has Sizes "
                                                     r"\[1, 1, 1, 2\]; a scalar"):
        dmljax.adam_optimizer(x, x, x, x, np.ones((1, 1, 1, 2), np.uint32), learning_rate=0.1)
    with pytest.raises(dmljax.ValidationError, match=r"TrainingStepTensor .* has DataType FLOAT32"):
        dmljax.adam_optimizer(x, x, x, x, step.astype(np.float32), learning_rate=0.1)
    with pytest.raises(dmljax.ValidationError, match=r"\[1, 1, 2, 3\]; they must have the same DimensionCount and Sizes"):
        dmljax.adam_optimizer(x, x, x, np.zeros((1, 1, 2, 3), np.float32), step, learning_rate=0.1)
    with pytest.raises(dmljax.ValidationError, match=r"has 2 dimensions .*supported: 4"):
        dmljax.adam_optimizer(x[0, 0], x[0, 0], x[0, 0], x[0, 0], step, learning_rate=0.1)
    with pytest.raises(TypeError, match="learning_rate"):
        dmljax.adam_optimizer(x, x, x, x, step)
