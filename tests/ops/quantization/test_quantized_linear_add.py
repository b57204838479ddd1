"""ELEMENT_WISE_QUANTIZED_LINEAR_ADD by hand (ONNX has no node test for com.microsoft's QLinearAdd):
every pair of A and B values of every pair of types, into both output types, against the exact
reference; halves and saturation; absent zero points and the output's DataType; one-element
scales and zero points; readable and traced output scales of 0, NaN and inf; the same bits on
every path (eager, jit, vmap: no FMA contraction); gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers
from tests.reference.quantization.quantized_linear_add import element_wise_quantized_linear_add as reference

op = dmljax.element_wise_quantized_linear_add
F32 = np.float32
TYPES = (np.int8, np.uint8)


def one(v, dtype=F32, ndim=2):
    return np.full((1,) * ndim, v, dtype)


def every_pair(ta, tb):
    """Every (A, B) value pair of two 8-bit types, as 256 x 256 tensors."""
    a = np.arange(256).astype(np.uint8).view(ta) if ta is np.int8 else np.arange(256, dtype=np.uint8)
    b = np.arange(256).astype(np.uint8).view(tb) if tb is np.int8 else np.arange(256, dtype=np.uint8)
    return np.ascontiguousarray(np.broadcast_to(a[:, None], (256, 256))), np.ascontiguousarray(np.broadcast_to(b[None, :], (256, 256)))


PARAMETERS = [  # (AScale, AZeroPoint, BScale, BZeroPoint, OutputScale, OutputZeroPoint)
    (0.5, 3, 0.25, -7, 1.0, 0),
    (0.019607844, 100, 0.0392, 20, 0.05, 30),
    (1.0, 0, 1.0, 0, 2.0, 0),  # sums of two integers halved: every half-integer, ties to even
    (3.0, 127, 1 / 3, 0, 0.1, 5),
    (2.0**-20, 0, 2.0**-20, 0, 2.0**-22, 0),
]


@pytest.mark.parametrize("ta", TYPES, ids=lambda t: np.dtype(t).name.upper())
@pytest.mark.parametrize("tb", tiers.fast_sample(TYPES), ids=lambda t: np.dtype(t).name.upper())
@pytest.mark.parametrize("to", tiers.fast_sample(TYPES), ids=lambda t: np.dtype(t).name.upper())
def test_every_pair_of_values(ta, tb, to):
    a, b = every_pair(ta, tb)
    f = jax.jit(op)
    for sa, za, sb, zb, so, zo in PARAMETERS:
        def zp(v, t):  # a zero point of its tensor's type (an INT8 one of 100 stays, a UINT8 one of -7 wraps)
            return one(np.array(v).astype(np.int64).astype(t), t)
        args = (a, one(sa), b, one(sb), one(so), zp(za, ta), zp(zb, tb), zp(zo, to))
        want = reference(*args)[0]
        for got in (op(*args), f(*args)):
            got = np.asarray(got)
            assert got.dtype == to and (got == want).all(), (sa, za, sb, zb, so, zo, int((got != want).sum()))


def test_halves_round_to_even_and_saturate():
    a = np.array([[1, 3, 5, 7, 127, -128]], np.int8)
    b = np.zeros_like(a)
    args = (a, one(1.0), b, one(1.0), one(2.0))
    assert np.asarray(op(*args)).tolist() == [[0, 2, 2, 4, 64, -64]]  # 0.5, 1.5, 2.5, 3.5, 63.5, -64
    assert np.asarray(op(a, one(4.0), a, one(4.0), one(1.0))).tolist() == [[8, 24, 40, 56, 127, -128]]
    assert np.asarray(op(a, one(1.0), b, one(1.0), one(0.5), None, None, one(250, np.uint8))).tolist() == [
        [252, 255, 255, 255, 255, 0]]


def test_absent_zero_points_and_the_output_type():
    a = np.array([[10, 20]], np.uint8)
    b = np.array([[-10, 100]], np.int8)
    out = op(a, one(1.0), b, one(1.0), one(1.0))
    assert out.dtype == np.uint8 and np.asarray(out).tolist() == [[0, 120]]  # ATensor's DataType
    out = op(a, one(1.0), b, one(1.0), one(1.0), output_data_type="INT8")
    assert out.dtype == np.int8 and np.asarray(out).tolist() == [[0, 120]]
    out = op(a, one(1.0), b, one(1.0), one(1.0), one(5, np.uint8), one(-10, np.int8), one(-3, np.int8))
    assert out.dtype == np.int8 and np.asarray(out).tolist() == [[2, 122]]  # 5 + 0 - 3, 15 + 110 - 3
    with pytest.raises(dmljax.ValidationError, match="OutputTensor .* is UINT8, but OutputZeroPointTensor has DataType INT8"):
        op(a, one(1.0), b, one(1.0), one(1.0), None, None, one(0, np.int8), output_data_type="UINT8")
    with pytest.raises(dmljax.ValidationError, match="ATensor .* and AZeroPointTensor .* have DataTypes UINT8, INT8"):
        op(a, one(1.0), b, one(1.0), one(1.0), one(0, np.int8))


def test_scales_and_zero_points_have_one_element():
    a = np.zeros((2, 3), np.uint8)
    with pytest.raises(dmljax.ValidationError) as info:
        op(a, np.ones((2, 3), F32), a, one(1.0, ndim=1), one(1.0), None, np.zeros((1, 3), np.uint8))
    msg = str(info.value)
    assert "AScaleTensor (argument `a_scale`) has Sizes [2, 3]; one element with ATensor's DimensionCount, Sizes [1, 1]" in msg
    assert "BScaleTensor (argument `b_scale`) has Sizes [1]" in msg
    assert "BZeroPointTensor (argument `b_zero_point`) has Sizes [1, 3]" in msg
    with pytest.raises(dmljax.ValidationError, match="they must have the same DimensionCount and Sizes"):
        op(a, one(1.0), np.zeros((3, 2), np.uint8), one(1.0), one(1.0))
    with pytest.raises(dmljax.ValidationError, match="is not available at DML_FEATURE_LEVEL_3_1"):
        op(a, one(1.0), a, one(1.0), one(1.0), feature_level="3.1")


@pytest.mark.parametrize("bad", [0.0, np.nan, np.inf, 1e-40])
def test_a_readable_output_scale_of_zero_nan_or_inf_is_refused(bad):
    a = np.array([[1, 2]], np.uint8)
    with pytest.raises(dmljax.ValidationError, match=r"OutputScaleTensor \(argument `output_scale`\) holds 1 element"):
        op(a, one(1.0), a, one(1.0), one(bad))


def test_traced_scales_give_the_documented_values():
    a = np.array([[3, 0, 0, 200]], np.uint8)
    b = np.array([[0, 0, 5, 0]], np.int8)
    f = jax.jit(lambda so, sa: op(a, sa, b, one(-1.0), so, None, None, one(-3, np.int8)))
    # an output scale of 0: x / 0 saturates (+inf to Max, -inf to Min), 0 / 0 is NaN: Min
    assert np.asarray(f(one(0.0), one(1.0))).tolist() == [[127, -128, -128, 127]]
    assert np.asarray(f(one(np.nan), one(1.0))).tolist() == [[-128] * 4]
    # an AScale of 0 dequantizes to 0; an infinite one to +-inf (NaN where A - AZeroPoint is 0)
    assert np.asarray(f(one(1.0), one(0.0))).tolist() == [[-3, -3, -8, -3]]
    assert np.asarray(f(one(1.0), one(np.inf))).tolist() == [[127, -128, -128, 127]]
    # AScale and BScale are not refused when readable: 0 is a valid dequantization
    assert np.asarray(op(a, one(0.0), b, one(0.0), one(1.0))).tolist() == [[0, 0, 0, 0]]


def test_jit_vmap_and_grad(rng):
    a = rng.integers(0, 256, (4, 5)).astype(np.uint8)
    b = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    args = (a, one(0.3), b, one(0.7), one(0.9), one(7, np.uint8), one(-2, np.int8), one(1, np.uint8))
    eager = np.asarray(op(*args))
    assert (eager == reference(*args)[0]).all()
    assert (np.asarray(jax.jit(op)(*args)) == eager).all()
    batched = jax.vmap(op, in_axes=(0, None, 0, None, None, None, None, None))(
        a[:, None], args[1], b[:, None], *args[3:])
    assert (np.asarray(batched)[:, 0] == eager).all()
    grads = jax.grad(lambda *v: op(*v).astype(F32).sum(), argnums=tuple(range(8)), allow_int=True)(*args)
    for g, x in zip(grads, args):
        if x.dtype == F32:
            assert g.dtype == F32 and not np.asarray(g).any()
        else:
            assert g.dtype == jax.dtypes.float0
    assert jnp.asarray(eager).dtype == np.uint8
