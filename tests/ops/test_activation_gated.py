"""Hand-written edges of the activations RELU_GRAD (and RELU's gradient, which is RELU_GRAD's
rule), PARAMETERIZED_RELU, HARD_SWISH, SWISH and GELU: exact special values, large inputs, the
gradients at the kinks and saturated, against values derived by hand or from the float64
references (tests/reference/activation/gated.py). The generated cases (tests/test_catalog.py)
cover the support tables, data types, eager/jit and gradients away from the kinks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

NAN, INF = np.nan, np.inf
DENORM = 1e-40  # a FLOAT32 denormal
TINY16 = 6e-8  # FLOAT16's smallest denormal (kept: only FLOAT32 denormals are flushed)


def bits(x):
    x = np.asarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def vjp(fn, dy, *args):
    """The cotangents of every input of ``fn`` for the output cotangent ``dy``."""
    _, pullback = jax.vjp(fn, *args)
    return [np.asarray(g) for g in pullback(dy)]


# ----------------------------------------------------------------------------------------------
# RELU_GRAD, and jax.grad of RELU


def _relu_grad_inputs(dtype):
    # X: every special value, each met by a finite dY, a NaN dY, a -0 dY and a denormal dY.
    tiny = DENORM if dtype == np.float32 else TINY16
    xs = np.array([-0.0, 0.0, tiny, -tiny, NAN, -NAN, INF, -INF, 2.5, -2.5, 1e-3, -1e-3], dtype)
    dys = np.array([3.0, NAN, -0.0, tiny, -7.5], dtype)
    x = np.repeat(xs, len(dys))
    dy = np.tile(dys, len(xs))
    return x, dy


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_jax_grad_of_relu_is_relu_grad_bit_for_bit(dtype):
    x, dy = _relu_grad_inputs(dtype)
    public = np.asarray(dmljax.activation_relu_grad(x, dy))
    for fn in (dmljax.activation_relu, jax.jit(dmljax.activation_relu),
               lambda v: dmljax.activation_relu(v, allow_half_precision_computation=True)):
        (grad,) = vjp(fn, jnp.asarray(dy), jnp.asarray(x))
        assert grad.dtype == dtype
        np.testing.assert_array_equal(bits(grad), bits(public))
    # and the public operator is X > 0 ? dY : 0, by hand: dY's bits where X > 0 (a FLOAT16
    # denormal X is a number above zero; a FLOAT32 one reads as zero), +0 everywhere else.
    passes = np.isin(np.arange(len(x)) // 5, [6, 8, 10] + ([2] if dtype == np.float16 else []))
    expected = np.where(passes, dy, np.zeros_like(dy))
    np.testing.assert_array_equal(bits(public), bits(expected))
    assert np.isnan(public[passes & np.isnan(dy)]).all() and not np.isnan(public[~passes]).any()


def test_relu_grad_under_jit_and_its_own_gradient():
    x = np.array([-1.0, 0.0, DENORM, 2.0, NAN, INF], np.float32)
    dy = np.array([5.0, 5.0, 5.0, -DENORM, 5.0, NAN], np.float32)
    out = np.asarray(jax.jit(dmljax.activation_relu_grad)(x, dy))
    np.testing.assert_array_equal(bits(out), bits(np.array([0, 0, 0, -DENORM, 0, NAN], np.float32)))
    # second order: d/ddY is the mask, d/dX is zero
    gx, gdy = vjp(dmljax.activation_relu_grad, jnp.ones(6, jnp.float32), jnp.asarray(x), jnp.asarray(dy))
    np.testing.assert_array_equal(gx, np.zeros(6, np.float32))
    np.testing.assert_array_equal(gdy, [0, 0, 0, 1, 0, 1])


def test_relu_second_derivative_is_zero():
    x = jnp.array([-1.0, 0.5, 3.0], jnp.float32)
    g2 = jax.grad(lambda v: jax.grad(lambda u: dmljax.activation_relu(u).sum())(v).sum())(x)
    np.testing.assert_array_equal(np.asarray(g2), [0, 0, 0])


def test_relu_grad_integers_exact():
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        x = np.array([info.min, -1, 0, 1, info.max], dtype)
        dy = np.array([info.max, info.min, 7, info.min, -1], dtype)
        out = np.asarray(jax.jit(dmljax.activation_relu_grad)(x, dy))
        assert out.dtype == dtype
        np.testing.assert_array_equal(out, np.array([0, 0, 0, info.min, -1], dtype))
    gx, gdy = jax.grad(lambda a, b: dmljax.activation_relu_grad(a, b).astype(jnp.float32).sum(),
                       argnums=(0, 1), allow_int=True)(x, dy)
    assert gx.dtype == jax.dtypes.float0 and gdy.dtype == jax.dtypes.float0


def test_relu_grad_refused_before_5_1_for_integers_and_before_3_0():
    x = np.zeros(4, np.int32)
    with pytest.raises(dmljax.ValidationError, match="INT32 is supported from DML_FEATURE_LEVEL_5_1"):
        dmljax.activation_relu_grad(x, x, feature_level="5.0")
    f = np.zeros(4, np.float32)
    with pytest.raises(dmljax.ValidationError, match="introduced in DML_FEATURE_LEVEL_3_0"):
        dmljax.activation_relu_grad(f, f, feature_level="2.1")
    with pytest.raises(dmljax.ValidationError, match="InputGradientTensor"):
        dmljax.activation_relu_grad(f, np.zeros(4, np.float16))


def test_relu_record_names_its_grad_operator():
    assert dmljax.activation_relu.spec.grad_operator == dmljax.activation_relu_grad.spec.enum_name
