"""dmljax.compose's compositions against independent float64 references (tests/compose/
reference.py): values, NumPy's broadcasting and rank rules, FLOAT16 kept FLOAT16, jit, gradients,
and refusals in dmljax's format."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax import compose
from tests import tiers
from tests.compose import compose_reference as ref

f32, f16 = np.float32, np.float16
R = np.random.default_rng(7)


def a(*shape, dtype=f32):
    return R.standard_normal(shape).astype(dtype)


def close(got, want, rtol=2e-6, atol=2e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("sa, sb", tiers.fast_sample([
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((5, 2, 3), (3, 4)), ((7, 1, 5, 3), (2, 3, 4)),
    ((2, 1, 2, 1, 5, 3), (3, 3, 2)), ((3,), (2, 3, 4)), ((2, 5, 3), (2, 3, 4)),
], keep=2, key="matmul"))
def test_matmul_is_numpys(sa, sb):
    x, y = a(*sa), a(*sb)
    got = compose.matmul(x, y)
    want = ref.matmul(x, y)
    assert got.shape == want.shape and got.dtype == f32
    close(got, want)


def test_float16_stays_float16_and_accumulates_in_float32():
    x, y = a(4, 64, dtype=f16), a(64, 3, dtype=f16)
    got = compose.matmul(x, y)
    assert got.dtype == f16
    np.testing.assert_array_equal(got, ref.matmul(x, y).astype(f16))  # one rounding of the exact sum (in budget)


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_linear_is_pytorchs_with_a_broadcast_bias_and_its_gradients():
    x, w, b = a(2, 3, 4), a(5, 4), a(5)
    close(compose.linear(x, w, b), ref.linear(x, w, b))
    close(compose.linear(x[0, 0], w), ref.linear(x[0, 0], w))
    dy = a(2, 3, 5)
    grads = jax.grad(lambda x, w, b: jnp.sum(compose.linear(x, w, b) * dy), argnums=(0, 1, 2))(x, w, b)
    close(grads[0], ref.f64(dy) @ ref.f64(w))
    close(grads[1], np.einsum("bto,bti->oi", ref.f64(dy), ref.f64(x)), rtol=1e-5, atol=1e-5)
    close(grads[2], ref.f64(dy).sum(axis=(0, 1)))


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_layer_norm_over_the_last_axes_with_broadcast_scale_and_bias():
    x, s, b = a(2, 3, 4), a(4), a(3, 1)
    close(compose.layer_norm(x, s, b), ref.layer_norm(x, s, b), rtol=1e-5, atol=1e-5)
    close(compose.layer_norm(x, axes=(-2, -1), epsilon=0.1), ref.layer_norm(x, axes=(-2, -1), epsilon=0.1),
          rtol=1e-5, atol=1e-5)
    g = jax.grad(lambda v: jnp.sum(compose.layer_norm(v, s) * np.arange(24, dtype=f32).reshape(2, 3, 4)))(x)
    want = ref.numeric_grad(lambda v: np.sum(ref.layer_norm(v, s) * np.arange(24).reshape(2, 3, 4)), x)
    close(g, want, rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_embedding_gathers_rows_negative_from_the_end_and_zero_out_of_range():
    table, idx = a(5, 3), np.array([[0, 4, -1], [7, -6, 2]], np.int32)
    got = compose.embedding(table, idx)
    assert got.shape == (2, 3, 3)
    close(got, ref.embedding(table, idx), 0, 0)
    close(compose.embedding(table, np.array(2, np.int32)), table[2], 0, 0)
    g = jax.grad(lambda t: jnp.sum(compose.embedding(t, idx) * np.arange(18, dtype=f32).reshape(2, 3, 3)))(table)
    want = np.zeros((5, 3))
    for i, j in np.ndindex(idx.shape):  # the scatter-add of dY into the rows read; out of range: none
        if -5 <= idx[i, j] < 5:
            want[idx[i, j]] += np.arange(18).reshape(2, 3, 3)[i, j]
    close(g, want, 0, 0)


@pytest.mark.parametrize("kw, pads", tiers.fast_sample([
    (dict(padding="same", stride=2), ((1, 1), (0, 1))),
    (dict(), ((0, 0), (0, 0))),
    (dict(padding=((1, 0), (2, 1)), dilation=(2, 1)), ((1, 0), (2, 1))),
    (dict(padding=1, stride=(1, 2)), ((1, 1), (1, 1))),
], keep=1, key="conv2d"))
def test_conv2d_is_pytorchs(kw, pads):
    x, w, b = a(2, 4, 7, 6), a(6, 2, 3, 2), a(6)
    stride = kw.get("stride", 1)
    stride = stride if isinstance(stride, tuple) else (stride, stride)
    got = compose.conv2d(x, w, b, groups=2, **kw)
    close(got, ref.conv2d(x, w, b, stride, pads, kw.get("dilation", (1, 1)), groups=2), rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_conv2d_takes_an_unbatched_input_and_differentiates():
    x, w = a(2, 5, 5), a(3, 2, 3, 3)
    close(compose.conv2d(x, w, padding="valid"), ref.conv2d(x[None], w)[0], rtol=1e-5, atol=1e-5)
    g = jax.grad(lambda w: jnp.sum(compose.conv2d(x, w) ** 2))(w)
    want = ref.numeric_grad(lambda w: np.sum(ref.conv2d(x[None], w) ** 2), w)
    close(g, want, rtol=1e-3, atol=1e-3)


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_attention_with_heads_a_mask_and_causality():
    b, t, s, h = 2, 3, 4, 2
    q, k, v = a(b, t, h * 3), a(b, s, h * 3), a(b, s, h * 2)
    close(compose.attention(q, k, v, num_heads=h), ref.attention(q, k, v, heads=h), rtol=1e-5, atol=1e-5)
    mask = R.random((b, 1, 1, s)) > 0.3
    mask[..., 0] = True
    causal = np.tril(np.ones((t, s), bool))
    close(compose.attention(q, k, v, mask, num_heads=h, scale=0.3), ref.attention(q, k, v, mask, h, 0.3),
          rtol=1e-5, atol=1e-5)
    close(compose.attention(q, k, v, mask.astype(np.int32) * 5, num_heads=h, causal=True),
          ref.attention(q, k, v, mask & causal, h), rtol=1e-5, atol=1e-5)
    close(compose.attention(q[0], k[0], v[0], num_heads=h), ref.attention(q[:1], k[:1], v[:1], heads=h)[0],
          rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_attention_gradient():
    q, k, v = a(1, 3, 4), a(1, 3, 4), a(1, 3, 4)
    dy = a(1, 3, 4)
    causal = np.tril(np.ones((3, 3), bool))
    g = jax.grad(lambda q: jnp.sum(compose.attention(q, k, v, num_heads=2, causal=True) * dy))(q)
    want = ref.numeric_grad(lambda q: np.sum(ref.attention(q, k, v, causal, 2) * dy), q)
    close(g, want, rtol=1e-4, atol=1e-4)


def test_cross_entropy_and_its_gradient():
    logits, labels = a(4, 5), np.array([0, 4, 2, 2], np.int32)
    got = compose.cross_entropy(logits, labels)
    assert got.shape == ()
    close(got, ref.cross_entropy(logits, labels))
    g = jax.grad(compose.cross_entropy)(logits, labels)
    close(g, (ref.softmax(logits) - np.eye(5)[labels]) / 4, rtol=1e-6, atol=1e-6)  # (softmax - onehot) / N


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_cross_entropy_reductions_and_class_axis():
    logits, labels = a(4, 5), np.array([0, 4, 2, 2], np.int32)
    for reduction in ("sum", "none"):
        close(compose.cross_entropy(logits, labels, reduction=reduction),
              ref.cross_entropy(logits, labels, reduction=reduction))
    close(compose.cross_entropy(logits.T, labels, axis=0), ref.cross_entropy(logits.T, labels, axis=0))


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_activations_arithmetic_and_reductions():
    x, y = a(2, 3), a(3)
    close(compose.gelu(x), ref.gelu(x))
    close(compose.relu(x), np.maximum(ref.f64(x), 0), 0, 0)
    close(compose.softmax(x, axis=0), ref.softmax(x, axis=0))
    close(compose.log_softmax(x), np.log(ref.softmax(x)), rtol=1e-5, atol=1e-6)
    exact = lambda v: v.astype(f32)  # noqa: E731  (correctly rounded: the float64 value rounded once)
    np.testing.assert_array_equal(compose.add(x, y), exact(ref.f64(x) + ref.f64(y)))
    np.testing.assert_array_equal(compose.subtract(y, x), exact(ref.f64(y) - ref.f64(x)))
    np.testing.assert_array_equal(compose.multiply(x, y), exact(ref.f64(x) * ref.f64(y)))
    close(compose.divide(x, y[:1]), ref.f64(x) / ref.f64(y[:1]), rtol=1.2e-7, atol=0)
    close(compose.mean(x, axis=-1, keepdims=True), ref.f64(x).mean(-1, keepdims=True))
    close(compose.sum(x), ref.f64(x).sum())
    assert compose.add(f32(1), f32(2)).shape == ()


@pytest.mark.slow  # compiles several operators forward and backward: seconds on 2 cores
def test_a_transformer_block_is_jittable_and_equals_its_eager_self():
    x, w, b = a(2, 4, 8), a(24, 8), a(24)

    def block(x):
        q, k, v = compose.split(compose.linear(compose.layer_norm(x), w, b), 3, axis=-1)
        return compose.add(x, compose.attention(q, k, v, num_heads=2, causal=True))

    # inside one jit XLA may fuse across the operators and sum in another order (each operator's own
    # budget holds either way): equal within 1e-5 of the block's largest value, a few dozen ULP of it,
    # where a result that cancels (0.18 from terms near 5) moved 5e-6 in a fresh-clone run
    eager = np.asarray(block(x))
    np.testing.assert_allclose(jax.jit(block)(x), eager, rtol=0, atol=1e-5 * np.abs(eager).max())


@pytest.mark.parametrize("fn, message", [
    (lambda: compose.matmul(a(2, 3), a(3, 4, dtype=f16)),
     "compose.matmul (DML_OPERATOR_GEMM):\n  `a` and `b` have DataTypes FLOAT32, FLOAT16; they must have the same "
     "DataType.\n    Tip: cast explicitly: DirectML never promotes types."),
    (lambda: compose.matmul(a(2, 3), a(4, 2)), "`a` (2, 3) and `b` (4, 2) have inner sizes 3 and 4"),
    (lambda: compose.matmul(a(2, 2, 3), a(3, 3, 4)), "`a`'s batch sizes (2,), `b`'s batch sizes (3,) do not broadcast"),
    (lambda: compose.linear(a(2, 3), a(3, 4)), "`x` (2, 3) has 3 features, `weight` (3, 4) takes 4"),
    (lambda: compose.linear(a(2, 3), a(4, 3), a(3)), "`bias` has shape (3,); (4,), one per output"),
    (lambda: compose.add(a(2, 3), 1.0), "`b` is 1.0, which is not an array"),
    (lambda: compose.layer_norm(a(2, 3), a(2)), "`scale` of shape (2,) does not broadcast to `x`'s (2, 3)"),
    (lambda: compose.embedding(a(4, 2), np.array([1.0], f32)), "`indices` has DataType FLOAT32; INT32, UINT32"),
    (lambda: compose.conv2d(a(1, 2, 5, 5), a(3, 2, 3, 3), padding="full"), "`padding` is 'full'; 'valid', 'same'"),
    (lambda: compose.conv2d(a(2, 5, 5, 5, 5), a(3, 2, 3, 3)), "`x` has shape (2, 5, 5, 5, 5); {N, C, H, W}"),
    (lambda: compose.attention(a(1, 3, 4), a(1, 3, 4), a(1, 3, 4), num_heads=3), "Widths 4 and 4 for 3 heads; multiples of num_heads"),
    (lambda: compose.attention(a(1, 3, 4), a(1, 3, 4), a(1, 3, 4), np.ones((2, 3), bool)),
     "`mask` of shape (2, 3) does not broadcast to {B, H, T, S} (1, 1, 3, 3)"),
    (lambda: compose.cross_entropy(a(4, 5), np.zeros(5, np.int32)),
     "`labels` has shape (5,) for `logits` (4, 5); logits' shape without the class axis 1: (4,)"),
    (lambda: compose.cross_entropy(a(4, 5), np.zeros(4, np.int32), reduction="avg"),
     "`reduction` is 'avg'; 'mean', 'sum' or 'none'"),
    (lambda: compose.softmax(a(2, 3), axis=(1, -1)), "`axis` is (1, -1); one or more distinct axes"),
])
def test_a_bad_composition_is_refused_in_dmljaxs_format(fn, message):
    with pytest.raises(dmljax.ValidationError) as info:
        fn()
    assert message in str(info.value)
    assert str(info.value).startswith("compose.")
