"""dmljax.quantize_dequantize, the fake quantization for training (a composition, not a DirectML
operator): its values are ELEMENT_WISE_QUANTIZE_LINEAR then ELEMENT_WISE_DEQUANTIZE_LINEAR bit for
bit; its gradient is the straight-through estimator (at the range's ends included, beyond them and
at NaN 0), the scale's none or LSQ's; forward and reverse mode agree; jit and vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

qdq = dmljax.quantize_dequantize
F32, F16 = np.float32, np.float16


def _two_operators(x, s, z=None, **kw):
    data_type = kw.pop("data_type", None)
    q = dmljax.element_wise_quantize_linear(x, s, z, output_data_type=data_type, **kw)
    return dmljax.element_wise_dequantize_linear(q, s, z, **kw)


def _bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


ALL_F16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(F16)


def test_its_values_are_the_two_operators_bit_for_bit(rng):
    x32 = np.concatenate([(rng.standard_normal(4096) * 60).astype(F32),
                          np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 12.5, -12.5], F32)])
    per_axis = np.broadcast_to(np.array([0.1, 0.5, 2.0, 7.0], F32).reshape(4, 1), (4, 1026)).reshape(-1)
    cases = [
        (x32, np.full(x32.shape, 0.25, F32), np.full(x32.shape, -3, np.int8), {}),
        (x32, per_axis, np.full(x32.shape, 200, np.uint8), {}),
        (x32, np.full(x32.shape, 0.3, F32), None, {"data_type": "INT8"}),
        (ALL_F16, np.full(ALL_F16.shape, 0.125, F16), np.full(ALL_F16.shape, 10, np.uint8), {}),
        (ALL_F16, np.full(ALL_F16.shape, 0.3, F16), np.full(ALL_F16.shape, 10, np.int8),
         {"allow_half_precision_computation": True}),
        (np.arange(-600, 600, 7).astype(np.int32), np.full(172, 2.5, F32), np.full(172, 1, np.int8), {}),
    ]
    for x, s, z, kw in cases:
        want = _two_operators(x, s, z, **dict(kw))
        got = qdq(x, s, z, **kw)
        assert got.dtype == want.dtype and (_bits(got) == _bits(want)).all(), kw
    x, s, z, kw = cases[1]  # inside a caller's jit: the operators' own bits
    assert (_bits(jax.jit(qdq)(x, s, z)) == _bits(_two_operators(x, s, z))).all()


X = np.array([-12.9, -12.8, -12.75, -12.7, 0.0, 0.3, 12.7, 12.75, 12.8, np.nan, np.inf, -np.inf], F32)
S = np.full(X.shape, 0.1, F32)
Z = np.zeros(X.shape, np.int8)
# round(x / 0.1): -129 (below -128), -128, -128 (-127.5 to even), -127, 0, 3, 127, 128 (127.5 to
# even: beyond 127), 128, NaN, +inf, -inf
INSIDE = np.array([0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], F32)


def test_the_gradient_is_straight_through():
    g = np.asarray(jax.grad(lambda v: qdq(v, S, Z).sum())(X))
    assert g.tolist() == INSIDE.tolist()
    dy = np.arange(1, 13).astype(F32)
    _, vjp = jax.vjp(lambda v: qdq(v, S, Z), X)
    assert np.asarray(vjp(dy)[0]).tolist() == (INSIDE * dy).tolist()
    # the zero point shifts the window: [-128, 127] - 100 in units of the scale
    g = np.asarray(jax.grad(lambda v: qdq(v, S, np.full(X.shape, 100, np.uint8)).sum())(X))
    assert g.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0]


def test_forward_mode_equals_reverse_mode():
    f = lambda v: qdq(v, S, Z)  # noqa: E731
    ones = np.ones(X.shape, F32)
    tangent = np.asarray(jax.jvp(f, (X,), (ones,))[1])
    cotangent = np.asarray(jax.vjp(f, X)[1](ones)[0])
    assert tangent.tolist() == cotangent.tolist() == INSIDE.tolist()


def test_the_scale_gradient():
    none = jax.grad(lambda s: qdq(X, s, Z).sum())(S)
    assert not np.asarray(none).any()  # "none": the scale is a constant of the quantization
    lsq = np.asarray(jax.grad(lambda s: qdq(X, s, Z, scale_gradient="lsq").sum())(S))
    v = (X.astype(np.float64) / 0.1).astype(F32)
    with np.errstate(invalid="ignore"):
        inside = np.round(v) - v
    want = np.where(INSIDE == 1, inside, np.where(np.nan_to_num(v, nan=-np.inf) > 0, 127.0, -128.0))
    np.testing.assert_allclose(lsq, want, rtol=1e-6, atol=1e-6)
    assert lsq[-3] == -128.0  # NaN saturates to Min in the forward pass: LSQ's rule at Min
    # the integer zero point and an INT32 input: float0
    gx, gz = jax.grad(lambda x, z: qdq(x, np.full(3, 2.0, F32), z).sum(), argnums=(0, 1), allow_int=True)(
        np.array([1, 2, 3], np.int32), np.zeros(3, np.int8))
    assert gx.dtype == jax.dtypes.float0 and gz.dtype == jax.dtypes.float0


def test_float16():
    x = np.array([[0.5, 1.5, 300.0], [-0.5, -300.0, 2.5]], F16)
    g = jax.grad(lambda v: qdq(v, jnp.ones_like(v)).sum())(x)  # UINT8 without a zero point: [0, 255]
    assert g.dtype == F16 and np.asarray(g).tolist() == [[1, 1, 0], [1, 0, 1]]


def test_vmap():
    x = np.array([[0.5, 1.5, 300.0], [-0.5, -300.0, 2.5]], F32)
    s = np.ones_like(x)
    gv = jax.vmap(jax.grad(lambda v, t: qdq(v, t, None, "INT8").sum()))(x, s)
    assert np.asarray(gv).tolist() == [[1, 1, 0], [1, 0, 1]]
    rows = jax.vmap(lambda v, t: qdq(v, t, None, "INT8"))(x, s)
    assert (_bits(rows) == _bits(qdq(x, s, None, "INT8"))).all()


def test_refusals():
    with pytest.raises(ValueError, match="scale_gradient is 'pact'; one of 'none', 'lsq'"):
        qdq(X, S, Z, scale_gradient="pact")
    with pytest.raises(dmljax.ValidationError, match="(?s)element_wise_quantize_linear .*OutputTensor .* is UINT8, "
                       "but ZeroPointTensor has DataType INT8"):
        qdq(X, S, Z, "UINT8")
    with pytest.raises(dmljax.ValidationError, match="ScaleTensor .* holds 1 element that is 0"):
        qdq(X[:2], np.array([1.0, 0.0], F32), Z[:2])
    with pytest.raises(dmljax.ValidationError, match="ZeroPointTensor .* is missing"):
        qdq(X, S, feature_level="6.1")
    assert "quantize_dequantize" in dmljax.__all__ and "not a DirectML operator" in qdq.__doc__
    assert jnp.asarray(qdq(X, S, Z)).dtype == F32
