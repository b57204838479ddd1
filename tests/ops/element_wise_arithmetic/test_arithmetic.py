"""Hand-written edges of the element-wise arithmetic family (IDENTITY, ADD, ADD1 with its fused
activations, CLIP, CLIP1 with DML_SCALAR_UNION bounds, THRESHOLD, MODULUS_FLOOR, MULTIPLY, NEGATE):
NaN, infinities, signed zeros, denormals, ties, integer wraparound and saturation, attribute forms
and their refusals, gradients at the kinks; against values derived independently (the float64
references in tests/reference/element_wise_arithmetic/, Python's own arithmetic, IEEE bit
patterns). The generated cases (tests/test_catalog.py) cover the support tables, data types,
eager/jit and the reference gradients away from the kinks. None of these pages has a worked
example; the doctests in the formulas hold the examples."""

import inspect
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import dmljax
from dmljax import DataType, FusedActivation, ScalarUnion
from dmljax._src.dtypes import INTS
from dmljax._src.fused import FUSABLE
from dmljax._src.op import TRACE_COUNTS
from tests.compare import assert_matches
from tests.reference.activation import piecewise as activation_ref
from tests.reference.element_wise_arithmetic import clamp as ref
from tests import tiers

NAN, INF = np.nan, np.inf
DENORM = 1e-40  # a FLOAT32 denormal
INT_TYPES = sorted((t for t in INTS if t not in (DataType.INT4, DataType.UINT4)), key=lambda t: t.value)


ELU_HALF = FusedActivation("ACTIVATION_ELU", alpha=0.5)


def bits(x):
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _error(fn):
    with pytest.raises(dmljax.ValidationError) as info:
        fn()
    return str(info.value)


def _grad(fn, x):
    return np.asarray(jax.grad(lambda v: fn(v).astype(jnp.float32).sum())(x))


def grad_of(f, x):
    return np.asarray(jax.grad(lambda v: jnp.sum(f(v)))(x))


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_IDENTITY


def test_identity_moves_bits():
    payload_nan = np.array([0x7FC01234, 0xFFC00001], np.uint32).view(np.float32)
    x = np.concatenate([payload_nan, np.array([DENORM, -DENORM, -0.0, INF], np.float32)])
    np.testing.assert_array_equal(bits(dmljax.element_wise_identity(x)), bits(x))
    np.testing.assert_array_equal(bits(jax.jit(dmljax.element_wise_identity)(x)), bits(x))
    h = np.array([6e-8, -6e-8, -0.0], np.float16)  # FLOAT16 denormals
    np.testing.assert_array_equal(bits(dmljax.element_wise_identity(h)), bits(h))


def test_identity_scale_bias_is_math():
    x = np.array([DENORM, -DENORM, 1.0, NAN], np.float32)
    out = np.asarray(dmljax.element_wise_identity(x, scale_bias=(1.0, 0.0)))
    np.testing.assert_array_equal(bits(out[:3]), bits(np.array([0.0, -0.0, 1.0], np.float32)))
    assert np.isnan(out[3])
    # A denormal result is flushed too (sign kept).
    out = dmljax.element_wise_identity(np.array([1.0, -1.0], np.float32), scale_bias=(1e-39, 0.0))
    np.testing.assert_array_equal(bits(out), bits(np.array([0.0, -0.0], np.float32)))
    # FLOAT16 denormals survive math.
    h = np.array([6e-8], np.float16)
    assert dmljax.element_wise_identity(h, scale_bias=(1.0, 0.0))[0] == h[0]


def test_identity_integer_scale_bias_saturates_and_truncates():
    x8 = np.array([100, -100, 7, -7, 0], np.int8)
    np.testing.assert_array_equal(dmljax.element_wise_identity(x8, scale_bias=(3.0, 0.0)),
                                  np.array([127, -128, 21, -21, 0], np.int8))
    np.testing.assert_array_equal(dmljax.element_wise_identity(x8, scale_bias=(0.5, 0.0)),
                                  np.array([50, -50, 3, -3, 0], np.int8))
    u8 = np.array([0, 1, 200], np.uint8)
    np.testing.assert_array_equal(dmljax.element_wise_identity(u8, scale_bias=(-1.0, 0.0)),
                                  np.array([0, 0, 0], np.uint8))
    # An infinite Scale: 0 * inf is NaN -> 0; 1 * inf saturates.
    np.testing.assert_array_equal(dmljax.element_wise_identity(u8, scale_bias=(np.inf, 0.0)),
                                  np.array([0, 255, 255], np.uint8))


def test_identity_int64_scale_bias_keeps_53_bits(x64):
    x = np.array([2**52 + 1, -(2**52) - 1], np.int64)  # not representable in FLOAT32
    out = dmljax.element_wise_identity(x, scale_bias=(1.0, 0.0))
    np.testing.assert_array_equal(np.asarray(out), x)


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_ADD


def test_add_edges():
    a = np.array([INF, INF, 1.5e-38, -0.0, NAN, 3e38], np.float32)
    b = np.array([-INF, 1.0, -1.4e-38, -0.0, 1.0, 3e38], np.float32)
    out = np.asarray(dmljax.element_wise_add(a, b))
    assert np.isnan(out[0]) and out[1] == INF and np.isnan(out[4]) and out[5] == INF
    assert out[2] == 0.0  # 1e-39 is a denormal result: flushed
    assert bits(out[3]) == bits(np.float32(-0.0))  # -0 + -0 = -0
    assert dmljax.element_wise_add(np.array([DENORM], np.float32), np.array([1.0], np.float32))[0] == 1.0
    h = np.array([2.0**-24, 65504.0], np.float16)
    out = np.asarray(dmljax.element_wise_add(h, h))
    assert out[0] == np.float16(2.0**-23) and out[1] == INF  # FLOAT16 denormals kept


@pytest.mark.parametrize("dtype,a,b,want", [
    (np.int8, 127, 1, -128), (np.uint8, 250, 10, 4), (np.int16, -32768, -1, 32767),
    (np.uint32, 2**32 - 1, 2, 1), (np.int32, 2**31 - 1, 1, -(2**31))])
def test_add_integer_wraps(dtype, a, b, want):
    out = dmljax.element_wise_add(np.array([a], dtype), np.array([b], dtype))
    assert out.dtype == dtype and int(out[0]) == want


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_ADD1 and fused activations


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("half", tiers.fast_sample([False, True]))
def test_add1_fused_equals_the_two_operators(dt, half, rng):
    a = (rng.standard_normal((5, 7)) * 3).astype(dt)
    b = (rng.standard_normal((5, 7)) * 3).astype(dt)
    a[0, :3] = [NAN, INF, -INF]
    kw = {"allow_half_precision_computation": half}
    s = dmljax.element_wise_add(a, b, **kw)
    for fa, act in [(ELU_HALF, lambda y: dmljax.activation_elu(y, alpha=0.5, **kw)),
                    ("ACTIVATION_SCALED_ELU", lambda y: dmljax.activation_scaled_elu(y, **kw))]:
        got = dmljax.element_wise_add1(a, b, fused_activation=fa, **kw)
        np.testing.assert_array_equal(bits(got), bits(act(s)))
    np.testing.assert_array_equal(bits(dmljax.element_wise_add1(a, b, **kw)), bits(s))


def test_fused_activation_forms_share_one_trace():
    a = np.ones((2, 2), np.float32)
    forms = [FusedActivation("ACTIVATION_ELU", alpha=0.5),
             FusedActivation("DML_OPERATOR_ACTIVATION_ELU", Alpha=0.5),
             FusedActivation("activation_elu", alpha=np.float64(0.5)),
             {"Type": "DML_OPERATOR_ACTIVATION_ELU", "Desc": {"Alpha": 0.5}},
             {"Type": "ACTIVATION_ELU", "Desc": {"InputTensor": None, "OutputTensor": None, "Alpha": 0.5}}]
    before = TRACE_COUNTS["DML_OPERATOR_ELEMENT_WISE_ADD1"]
    outs = [dmljax.element_wise_add1(-a, -a, fused_activation=f) for f in forms]
    assert TRACE_COUNTS["DML_OPERATOR_ELEMENT_WISE_ADD1"] - before == 1
    for o in outs:
        np.testing.assert_array_equal(o, outs[0])
    assert float(outs[0][0, 0]) == pytest.approx(0.5 * math.expm1(-2.0), rel=1e-6)
    # Defaults fill in: ELU's Alpha is 1.0.
    np.testing.assert_array_equal(dmljax.element_wise_add1(-a, -a, fused_activation="ACTIVATION_ELU"),
                                  dmljax.activation_elu(np.full((2, 2), -2.0, np.float32)))


def test_fused_activation_value():
    fa = FusedActivation("ACTIVATION_ELU", alpha=0.5)
    assert fa == FusedActivation("DML_OPERATOR_ACTIVATION_ELU", alpha=0.5)
    assert hash(fa) == hash(FusedActivation("DML_OPERATOR_ACTIVATION_ELU", alpha=0.5))
    assert fa.type == "DML_OPERATOR_ACTIVATION_ELU" and fa.short_name == "ACTIVATION_ELU"
    assert repr(fa) == "FusedActivation('ACTIVATION_ELU', alpha=0.5)"
    assert fa.desc() == {"Type": "DML_OPERATOR_ACTIVATION_ELU", "Desc": {"alpha": 0.5}}
    with pytest.raises(AttributeError):
        fa.type = "x"
    with pytest.raises(TypeError, match="members Type and Desc"):
        FusedActivation.coerce({"Kind": "ELU"})


HEAD_ADD1 = "element_wise_add1 (DML_OPERATOR_ELEMENT_WISE_ADD1) at DML_FEATURE_LEVEL_6_4:\n"


# A fusable activation dmljax does not implement yet, and those it does that ADD1 may fuse (the
# message lists them)
_NOT_YET = next((n for n in FUSABLE if n not in dmljax.registry()), None)
_FUSABLE_NOW = ", ".join(n for n, hosts in FUSABLE.items() if n in dmljax.registry()
                         and (hosts is None or "DML_OPERATOR_ELEMENT_WISE_ADD1" in hosts))


@pytest.mark.parametrize("fa,text", [
    pytest.param(_NOT_YET, f"  FusedActivation (argument `fused_activation`) is {_NOT_YET}, "
                 f"which DirectML can fuse but dmljax does not implement yet; implemented: {_FUSABLE_NOW}.",
                 marks=pytest.mark.skipif(_NOT_YET is None, reason="every fusable activation is implemented"),
                 id="not-implemented-yet"),
    ("ACTIVATION_SOFTMAX", "  FusedActivation (argument `fused_activation`) is DML_OPERATOR_ACTIVATION_SOFTMAX, "
     "which DirectML does not support for fused activation; fusable: DML_OPERATOR_ACTIVATION_LINEAR, "),
    ("ELEMENT_WISE_CLIP", "  FusedActivation (argument `fused_activation`) is DML_OPERATOR_ELEMENT_WISE_CLIP, "
     "which DirectML fuses only into DML_OPERATOR_CONVOLUTION and DML_OPERATOR_GEMM.\n"
     "    Tip: apply element_wise_clip as a separate operator after this one."),
    (FusedActivation("ACTIVATION_ELU", beta=1.0), "  FusedActivation.Desc (argument `fused_activation`) has "
     "no member 'beta' for DML_OPERATOR_ACTIVATION_ELU; members: Alpha."),
    (FusedActivation("ACTIVATION_ELU", alpha=1e39), "  FusedActivation.Desc.Alpha (argument `fused_activation`) "
     "is 1e+39, outside the range of FLOAT (float32, largest 3.402823e+38)"),
    (FusedActivation("ACTIVATION_ELU", alpha=1.0, Alpha=2.0), "  FusedActivation.Desc.Alpha (argument "
     "`fused_activation`) is given twice."),
    (FusedActivation("ACTIVATION_ELU", InputTensor=1), "  FusedActivation.Desc.InputTensor (argument "
     "`fused_activation`) is 1; the fused activation's InputTensor and OutputTensor must be NULL (None)."),
    (7, "  FusedActivation (argument `fused_activation`) is 7; expected dmljax.FusedActivation(...), "
     "an activation name or {'Type': ..., 'Desc': {...}}; got int."),
])
def test_fused_activation_refused(fa, text):
    a = np.ones((2, 2), np.float32)
    msg = _error(lambda: dmljax.element_wise_add1(a, a, fused_activation=fa))
    assert msg.startswith(HEAD_ADD1) and text in msg, msg


def test_fused_activation_at_old_levels():
    a = np.ones((1, 1, 2, 2), np.float32)
    out = dmljax.element_wise_add1(a, -a * 2, fused_activation=ELU_HALF, feature_level="2.0")
    # ELU's float64 value, within ELU's FLOAT32 budget (exp differs by a ULP between backends)
    assert_matches(out[0, 0, 0, :1], [np.array([0.5 * math.expm1(-1.0)])], DataType.FLOAT32,
                   dmljax.activation_elu.spec.ulp[DataType.FLOAT32])


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_CLIP and ELEMENT_WISE_CLIP1 (DML_SCALAR_UNION and MinMaxDataType)


def test_clip_nan_inf_and_order():
    x = np.array([NAN, INF, -INF, 0.5], np.float32)
    np.testing.assert_array_equal(dmljax.element_wise_clip(x, min=0.0, max=1.0), [0.0, 1.0, 0.0, 0.5])
    # CLIP1's order, max(Min, min(x, Max)): a NaN input gives Max.
    np.testing.assert_array_equal(dmljax.element_wise_clip1(x, min=0.0, max=1.0), [1.0, 1.0, 0.0, 0.5])
    # Min > Max is not refused by either page; the formulas give Max (CLIP) and Min (CLIP1).
    np.testing.assert_array_equal(dmljax.element_wise_clip(x, min=1.0, max=0.0), [0.0] * 4)
    np.testing.assert_array_equal(dmljax.element_wise_clip1(x, min=1.0, max=0.0), [1.0] * 4)
    # A NaN bound bounds nothing (maxNum/minNum return the other operand).
    # CLIP(NaN) with a NaN Min: max(NaN, NaN) is NaN, then min(Max, NaN) is Max.
    np.testing.assert_array_equal(dmljax.element_wise_clip(x, min=NAN, max=1.0), [1.0, 1.0, -INF, 0.5])
    np.testing.assert_array_equal(dmljax.element_wise_clip1(x, min=0.0, max=NAN), [0.0, INF, 0.0, 0.5])
    out = np.asarray(dmljax.element_wise_clip(x, min=NAN, max=NAN))
    assert np.isnan(out[0]) and list(out[1:]) == [INF, -INF, 0.5]


def test_clip_ties_return_the_bound_and_flush():
    x = np.array([-0.0, DENORM, -DENORM], np.float32)
    out = dmljax.element_wise_clip(x, min=0.0, max=1.0)
    np.testing.assert_array_equal(bits(out), bits(np.zeros(3, np.float32)))  # +0: the bound
    out = dmljax.element_wise_clip1(np.array([0.0], np.float32), min=-1.0, max=-0.0)
    assert bits(out)[0] == bits(np.float32(-0.0))


def test_clip_integer_bounds():
    x = np.array([-128, -8, -7, 0, 100, 127], np.int8)
    np.testing.assert_array_equal(dmljax.element_wise_clip(x, min=-7.9, max=100.5),
                                  [-7, -7, -7, 0, 100, 100])  # truncation toward zero
    np.testing.assert_array_equal(dmljax.element_wise_clip(x, min=-1e10, max=1e10), x)  # saturated
    u = np.array([0, 1, 255], np.uint8)
    np.testing.assert_array_equal(dmljax.element_wise_clip(u, min=-3.5, max=np.inf), u)
    np.testing.assert_array_equal(dmljax.element_wise_clip(u, min=2.0, max=-np.inf), [0, 0, 0])


def test_clip1_64_bit_bounds_are_exact(x64):
    big = 2**62 + 1  # no FLOAT (float32) holds it; the union does
    x = np.array([2**62, 2**62 + 1, 2**62 + 2, -(2**63)], np.int64)
    out = dmljax.element_wise_clip1(x, min=big, max=big)
    np.testing.assert_array_equal(np.asarray(out), [big] * 4)
    u = np.array([0, 2**64 - 1], np.uint64)
    out = dmljax.element_wise_clip1(u, min=1, max=2**64 - 2)
    np.testing.assert_array_equal(np.asarray(out), np.array([1, 2**64 - 2], np.uint64))


def test_clip1_float16_bounds_are_halves():
    # 0.1 is read as the FLOAT16 0.0999755859375; CLIP's FLOAT 0.1 (float32) is a bit larger.
    x = np.array([0.0999755859375, 0.1], np.float16)
    out1 = dmljax.element_wise_clip1(x, min=0.1, max=1.0)
    np.testing.assert_array_equal(bits(out1), bits(np.array([0.1, 0.1], np.float16)))
    assert dmljax.element_wise_clip1(x, min={"Bytes": [0, 60, 0, 0, 0, 0, 0, 0]}, max=2.0)[0] == 1.0


def test_clip1_union_forms_share_one_trace():
    x = np.arange(4, dtype=np.uint8)
    before = TRACE_COUNTS["DML_OPERATOR_ELEMENT_WISE_CLIP1"]
    outs = [dmljax.element_wise_clip1(x, min=m, max=2) for m in
            (1, 1.0, {"UInt8": 1}, ScalarUnion("UINT8", 1), np.uint8(1), {"Bytes": b"\x01" + b"\0" * 7})]
    dmljax.element_wise_clip1(x, min=1, max=2, min_max_data_type="DML_TENSOR_DATA_TYPE_UINT8")
    for o in outs:
        np.testing.assert_array_equal(o, [1, 1, 2, 2])
    assert TRACE_COUNTS["DML_OPERATOR_ELEMENT_WISE_CLIP1"] - before == 1
    # NaN bounds hash and compare by their bytes, so they do not retrace either.
    f = np.array([1.0, NAN], np.float32)
    before = TRACE_COUNTS["DML_OPERATOR_ELEMENT_WISE_CLIP1"]
    for _ in range(2):
        dmljax.element_wise_clip1(f, min=NAN, max=0.5)
    assert TRACE_COUNTS["DML_OPERATOR_ELEMENT_WISE_CLIP1"] - before == 1


HEAD_CLIP1 = "element_wise_clip1 (DML_OPERATOR_ELEMENT_WISE_CLIP1) at DML_FEATURE_LEVEL_6_4:\n"


UNION_TIP = ("    Tip: pass a value that the tensor's type holds exactly (integers in range for integer "
             "types); dmljax never wraps or saturates it.")


@pytest.mark.parametrize("dtype,kw,text", [
    (np.uint8, {"min": -1, "max": 2}, "  Min (argument `min`) is -1, outside the range of UINT8 (0 to 255); "
     "a DML_SCALAR_UNION read as UINT8 (OutputTensor's DataType).\n" + UNION_TIP),
    (np.int8, {"min": 0, "max": 128}, "  Max (argument `max`) is 128, outside the range of INT8 (-128 to 127)"),
    (np.int32, {"min": 0, "max": 2.5}, "  Max (argument `max`) is 2.5, which is not an integer, so INT32 cannot hold it"),
    (np.int16, {"min": NAN, "max": 1}, "  Min (argument `min`) is nan, which is not an integer, so INT16 cannot hold it"),
    (np.float32, {"min": -1e39, "max": 1}, "  Min (argument `min`) is -1e+39, outside the range of FLOAT32 "
     "(largest 3.402823e+38)"),
    (np.float16, {"min": 0, "max": 70000}, "  Max (argument `max`) is 70000, outside the range of FLOAT16 (largest 65504)"),
    (np.float32, {"min": True, "max": 1}, "  Min (argument `min`) is True (bool), not a number"),
    (np.uint8, {"min": {"Int8": 1}, "max": 2}, "  Min (argument `min`) sets member Int8 but the union is read as UINT8"),
    (np.uint8, {"min": {"Int9": 1}, "max": 2}, "  Min (argument `min`) names member 'Int9'; DML_SCALAR_UNION members: Bytes, Int8,"),
    (np.uint8, {"min": ScalarUnion("INT8", 1), "max": 2}, "  Min (argument `min`) is a INT8 ScalarUnion but the union is read as UINT8"),
    (np.uint8, {"min": 1, "max": 2, "min_max_data_type": "INT8"}, "  MinMaxDataType (argument `min_max_data_type`) "
     "is INT8; it must match OutputTensor.DataType, UINT8.\n    Tip: leave it out (None) to take the tensor's DataType."),
    (np.uint8, {"min": 1, "max": 2, "min_max_data_type": "FLOAT8"}, "  MinMaxDataType (argument `min_max_data_type`) "
     "is 'FLOAT8'; 'FLOAT8' is not a DirectML data type"),
])
def test_clip1_union_refused(dtype, kw, text):
    x = np.zeros((3,), dtype)
    msg = _error(lambda: dmljax.element_wise_clip1(x, **kw))
    assert msg.startswith(HEAD_CLIP1) and text in msg, msg


def test_clip_float_attributes_refused():
    x = np.zeros((1, 1, 1, 3), np.uint8)
    msg = _error(lambda: dmljax.element_wise_clip(x, min=NAN, max=jnp.ones(())))
    assert "  Min (argument `min`) is NaN but InputTensor is UINT8; an integer tensor has no NaN to compare with." in msg
    assert "  Max (argument `max`) is an array (ArrayImpl); attributes are fixed when the operator is created" in msg
    with pytest.raises(TypeError, match="missing a required argument: 'max'"):
        dmljax.element_wise_clip(x, min=0.0)


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_THRESHOLD


def test_threshold_nan_gives_min():
    out = dmljax.element_wise_threshold(np.array([np.nan, -np.nan, 1.0, -1.0], np.float32), min=0.25)
    np.testing.assert_array_equal(out, [0.25, 0.25, 1.0, 0.25])


def test_threshold_nan_min_gives_input():
    x = np.array([-3.0, 2.0, np.nan], np.float32)
    out = np.asarray(dmljax.element_wise_threshold(x, min=float("nan")))
    np.testing.assert_array_equal(out[:2], x[:2])
    assert np.isnan(out[2])


def test_threshold_scale_bias_applies_first():
    # g(x) = 2x + 1, then max(g, 0): x = -0.25 -> 0.5 (scale-bias first), not max(-0.25, 0)*2+1 = 1
    out = dmljax.element_wise_threshold(np.array([-0.25, -3.0, 4.0], np.float32), min=0.0,
                                        scale_bias=dmljax.ScaleBias(2.0, 1.0))
    np.testing.assert_array_equal(out, [0.5, 0.0, 9.0])
    out2 = dmljax.element_wise_threshold(np.array([-0.25, -3.0, 4.0], np.float32), min=0.0,
                                         scale_bias={"Scale": 2, "Bias": 1})
    np.testing.assert_array_equal(out, out2)


@pytest.mark.parametrize("dt", tiers.fast_sample([t for t in INT_TYPES if t.bits <= 32], keep=3, key="threshold"), ids=str)
def test_threshold_integer_min_truncates_toward_zero_and_saturates(dt):
    info = np.iinfo(dt.dtype)
    x = np.array([v for v in [info.min, -3, -2, 0, 2, 3, info.max] if v >= info.min], dt.dtype)
    for m in [2.7, -2.7, 2.9999999, 1e10, -1e10, float("inf"), -float("inf")]:
        out = np.asarray(dmljax.element_wise_threshold(x, min=m))
        assert out.dtype == dt.dtype
        f = float(np.float32(m))  # a C float first: 2.9999999 is 3.0f
        mi = info.max if f == math.inf else info.min if f == -math.inf else min(max(math.trunc(f), info.min), info.max)
        expected = [max(int(v), mi) for v in x]
        np.testing.assert_array_equal(out.astype(object), np.array(expected, dtype=object), err_msg=f"{dt} min={m}")


def test_threshold_integer_nan_min_refused():
    with pytest.raises(dmljax.ValidationError, match=r"Min \(argument `min`\) is NaN but InputTensor is INT32"):
        dmljax.element_wise_threshold(np.zeros(3, np.int32), min=float("nan"))


def test_threshold_attribute_is_a_c_float():
    # 16777217 is not a float32: Min is 16777216.0f, so on INT32 it is 16777216.
    out = dmljax.element_wise_threshold(np.array([0, 16777217], np.int32), min=16777217)
    np.testing.assert_array_equal(out, [16777216, 16777217])


def test_threshold_attribute_out_of_float_range_refused():
    with pytest.raises(dmljax.ValidationError, match=r"Min \(argument `min`\) is 1e\+39, outside the range of FLOAT"):
        dmljax.element_wise_threshold(np.zeros(3, np.float32), min=1e39)


def test_threshold_attribute_must_be_static():
    x = jnp.zeros(3, jnp.float32)
    with pytest.raises(dmljax.ValidationError, match=r"Min \(argument `min`\) is a traced value(?s:.*)static_argnames"):
        jax.jit(lambda m: dmljax.element_wise_threshold(x, min=m))(jnp.float32(1))


def test_threshold_never_promotes_integer_tensor():
    # jnp.maximum(uint8, -1) wraps to 255; THRESHOLD must keep uint8 and saturate Min to 0.
    out = dmljax.element_wise_threshold(np.array([0, 7, 255], np.uint8), min=-1)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [0, 7, 255])
    out = dmljax.element_wise_threshold(np.array([1, 2, 3], np.int32), min=2.5)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [2, 2, 3])


def test_threshold_gradient_at_tie_below_above_and_nan():
    x = jnp.array([0.5, 0.25, 1.0, jnp.nan, -jnp.inf, jnp.inf], jnp.float32)
    g = grad_of(lambda v: dmljax.element_wise_threshold(v, min=0.5), x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0, 0.0, 0.0, 1.0])


def test_threshold_gradient_carries_scale():
    x = jnp.array([-1.0, 0.0, 2.0], jnp.float32)  # g = 3x - 1 -> [-4, -1, 5]; Min = -1: tie at x=0
    g = grad_of(lambda v: dmljax.element_wise_threshold(v, min=-1.0, scale_bias=(3.0, -1.0)), x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 3.0])


def test_threshold_gradient_nan_min_passes_everything():
    x = jnp.array([-1.0, 2.0], jnp.float32)
    g = grad_of(lambda v: dmljax.element_wise_threshold(v, min=math.nan, scale_bias=(2.0, 0.0)), x)
    np.testing.assert_array_equal(g, [2.0, 2.0])


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_MODULUS_FLOOR


FLOAT_PAIRS = [
    (-7.0, 3.0), (7.0, -3.0), (-7.0, -3.0), (7.0, 3.0), (-4.0, 2.0), (4.0, -2.0), (0.0, -3.0),
    (-0.0, 3.0), (5.0, math.inf), (-5.0, math.inf), (5.0, -math.inf), (-5.0, -math.inf),
    (math.inf, 3.0), (3.0, 0.0), (3.0, -0.0), (0.0, 0.0), (math.nan, 1.0), (1.0, math.nan),
    (1e9, float(np.float32(math.pi))), (-1e9, float(np.float32(math.pi))), (1e30, 7.0),
    (5.5, 2.25), (-1e-30, 1.0),
]


def _python_mod(a, b):
    """Python's own % (the page's promise), with NaN where Python raises (b == 0)."""
    if b == 0 or math.isnan(a) or math.isnan(b):
        return math.nan
    try:
        return a % b
    except ZeroDivisionError:  # pragma: no cover
        return math.nan


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_modulus_floor_is_pythons_modulus(dtype):
    a = np.array([p[0] for p in FLOAT_PAIRS], dtype)
    b = np.array([p[1] for p in FLOAT_PAIRS], dtype)
    out = np.asarray(dmljax.element_wise_modulus_floor(a, b))
    expected = [_python_mod(float(x), float(y)) for x, y in zip(a, b)]
    for got, exp, x, y in zip(out, expected, a, b):
        if math.isnan(exp):
            assert np.isnan(got), (x, y, got)
            continue
        e = np.asarray(exp).astype(dtype)  # Python computes in float64; round once
        assert got == e and np.signbit(got) == np.signbit(e), (x, y, got, exp)


def test_modulus_floor_large_quotient_is_accurate():
    a, b = np.float32(1e9), np.float32(math.pi)
    literal = a - b * np.floor(a / b)  # the page's formula evaluated literally in FLOAT32
    assert literal == np.float32(-64.0)  # ... is far off: the operator must not do this
    out = dmljax.element_wise_modulus_floor(np.array([a]), np.array([b]))
    assert float(out[0]) == float(np.float32(float(a) % float(b)))


def test_modulus_floor_zero_sign_follows_divisor():
    out = np.asarray(dmljax.element_wise_modulus_floor(np.array([-4.0, 4.0], np.float32),
                                                       np.array([2.0, -2.0], np.float32)))
    assert list(np.signbit(out)) == [False, True]  # jnp.mod gives -0.0 for -4 % 2


@pytest.mark.parametrize("dt", INT_TYPES, ids=str)
def test_modulus_floor_integers_match_python(dt, x64):
    info = np.iinfo(dt.dtype)
    vals = sorted(v for v in {int(info.min), int(info.min) + 1, -7, -3, -1, 0, 1, 3, 7,
                              int(info.max) - 1, int(info.max)} if info.min <= v <= info.max)
    a = np.array([x for x in vals for _ in vals], dt.dtype)
    b = np.array([y for _ in vals for y in vals], dt.dtype)
    out = np.asarray(dmljax.element_wise_modulus_floor(a, b))
    assert out.dtype == dt.dtype
    expected = [0 if int(y) == 0 else int(x) % int(y) for x, y in zip(a, b)]
    np.testing.assert_array_equal(out.astype(object), np.array(expected, dtype=object))


def test_modulus_floor_int_min_by_minus_one_and_zero_divisor_under_jit():
    # Constant operands: XLA folds the remainder at compile time, where a zero or overflowing
    # divisor raises SIGFPE and kills the process unless the divisor is guarded.
    f = jax.jit(lambda: dmljax.element_wise_modulus_floor(
        jnp.array([-2**31, 5, -5, 0], jnp.int32), jnp.array([-1, 0, 0, 0], jnp.int32)))
    np.testing.assert_array_equal(f(), [0, 0, 0, 0])
    g = jax.jit(lambda: dmljax.element_wise_modulus_floor(
        jnp.array([5, 0], jnp.uint32), jnp.array([0, 0], jnp.uint32)))
    np.testing.assert_array_equal(g(), [0, 0])


def test_modulus_floor_flushes_a_denormal_remainder():
    # fmod(1.5, -3.8577556e-38) is a FLOAT32 denormal: flushed like any math result, so the result
    # is -0.0 (the divisor's sign) on every backend, where Python's float64 % gives -2.78e-38.
    out = np.asarray(dmljax.element_wise_modulus_floor(np.array([1.5], np.float32),
                                                       np.array([-3.8577556e-38], np.float32)))
    assert out[0] == 0 and np.signbit(out[0])


def test_modulus_floor_gradients():
    a = jnp.array([7.0, -7.0, 5.5], jnp.float32)
    b = jnp.array([3.0, 3.0, -2.0], jnp.float32)
    da, db = jax.grad(lambda x, y: jnp.sum(dmljax.element_wise_modulus_floor(x, y)), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(da, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(db, [-2.0, 3.0, 3.0])  # -floor(a / b): floor(7/3)=2, floor(-7/3)=-3, floor(-2.75)=-3
    # where the result is NaN (a zero divisor, an infinite dividend, a NaN), so is the gradient
    a = jnp.array([1.0, INF, NAN, 1.0, 2.0], jnp.float32)
    b = jnp.array([0.0, 2.0, 1.0, NAN, -INF], jnp.float32)
    y, vjp = jax.vjp(dmljax.element_wise_modulus_floor, a, b)
    da, db = vjp(jnp.ones(5, jnp.float32))
    np.testing.assert_array_equal(np.isnan(y), [True, True, True, True, False])
    np.testing.assert_array_equal(da, [NAN, NAN, NAN, NAN, 1.0])
    # 2 % -inf = -inf = a + b: floor(2 / -inf) is -1 (a tiny negative quotient), not floor(-0.0)
    np.testing.assert_array_equal(db, [NAN, NAN, NAN, NAN, 1.0])


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_NEGATE (f(x) = -x)


def test_negate_values():
    x = np.array([1.5, -0.0, 0.0, INF, -INF, 3.4028235e38], np.float32)
    want = np.array([-1.5, 0.0, -0.0, -INF, INF, -3.4028235e38], np.float32)
    np.testing.assert_array_equal(bits(dmljax.element_wise_negate(x)), bits(want))  # -(-0) is +0
    # Math, not data movement: a FLOAT32 denormal input reads as a signed zero, then negates.
    out = dmljax.element_wise_negate(np.array([DENORM, -DENORM], np.float32))
    np.testing.assert_array_equal(bits(out), bits(np.array([-0.0, 0.0], np.float32)))
    assert np.isnan(np.asarray(dmljax.element_wise_negate(np.array([NAN], np.float32)))).all()
    h = np.array([6e-8, -6e-8, -0.0, 65504.0, -INF], np.float16)  # FLOAT16 denormals are kept
    np.testing.assert_array_equal(bits(dmljax.element_wise_negate(h)), bits(-h))
    np.testing.assert_array_equal(bits(dmljax.element_wise_negate(h, allow_half_precision_computation=True)), bits(-h))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_negate_integers_wrap(dtype, x64):
    # Two's complement: the most negative value is its own negation (-(-128) is -128 in INT8).
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, -1, 0, 1, info.max], dtype)
    out = dmljax.element_wise_negate(x)
    assert out.dtype == dtype
    np.testing.assert_array_equal(np.asarray(out), np.array([info.min, info.max, 1, 0, -1, info.min + 1], dtype))


def test_negate_gradient_is_minus_dy_everywhere():
    x = np.array([1.5, -0.0, 0.0, INF, -INF, DENORM, NAN], np.float32)
    np.testing.assert_array_equal(_grad(dmljax.element_wise_negate, x), np.full(7, -1.0, np.float32))
    h = np.array([6e-8, -2.0, 65504.0], np.float16)
    got = _grad(dmljax.element_wise_negate, h)
    assert got.dtype == np.float16 and list(got) == [-1.0, -1.0, -1.0]
    i = np.array([-128, 5], np.int8)
    g = jax.grad(lambda v: dmljax.element_wise_negate(v).astype(jnp.float32).sum(), allow_int=True)(i)
    assert g.dtype == jax.dtypes.float0


def test_negate_table_edges():
    u8 = jax.ShapeDtypeStruct((2, 2), np.uint8)
    msg = _error(lambda: jax.eval_shape(dmljax.element_wise_negate, u8))
    assert ("InputTensor (argument `input`) has DataType UINT8; supported: FLOAT32, FLOAT16, INT64, "
            "INT32, INT16, INT8.") in msg
    f = jax.ShapeDtypeStruct((2, 2), np.float32)
    msg = _error(lambda: jax.eval_shape(lambda v: dmljax.element_wise_negate(v, feature_level="4.1"), f))
    assert "it was introduced in DML_FEATURE_LEVEL_5_0." in msg
    assert dmljax.element_wise_negate.spec.in_place  # "supports in-place execution"


# ----------------------------------------------------------------------------------------------
# Support tables: edges the page states, with the page's numbers in the message


def test_specific_table_edges():
    # ADD: INT16 from 5.1, INT64 from 4.1; ADD1 never takes integers; IDENTITY's FLOAT64 from 4.1.
    i16 = jax.ShapeDtypeStruct((2, 2), np.int16)
    msg = _error(lambda: jax.eval_shape(lambda a: dmljax.element_wise_add(a, a, feature_level="5.0"), i16))
    assert "Tip: INT16 is supported from DML_FEATURE_LEVEL_5_1." in msg
    msg = _error(lambda: jax.eval_shape(lambda a: dmljax.element_wise_add1(a, a), i16))
    assert "ATensor (argument `a`) has DataType INT16; supported: FLOAT32, FLOAT16." in msg
    with jax.enable_x64(True):
        f64 = jax.ShapeDtypeStruct((2, 2), np.float64)
        msg = _error(lambda: jax.eval_shape(lambda a: dmljax.element_wise_identity(a, feature_level="4.0"), f64))
        assert "Tip: FLOAT64 is supported from DML_FEATURE_LEVEL_4_1." in msg
        assert jax.eval_shape(lambda a: dmljax.element_wise_identity(a, feature_level="4.1"), f64).dtype == np.float64
    # CLIP at 2.1 takes exactly 4 dimensions; 3.0 opens 1 to 8.
    x5 = jax.ShapeDtypeStruct((1,) * 5, np.float32)
    msg = _error(lambda: jax.eval_shape(lambda a: dmljax.element_wise_clip(a, min=0, max=1, feature_level="2.1"), x5))
    assert "has 5 dimensions (Sizes [1, 1, 1, 1, 1]); supported: 4.\n    Tip: 1 to 8 dimensions are supported from DML_FEATURE_LEVEL_3_0." in msg
    # Mismatched inputs: DirectML never broadcasts or promotes.
    msg = _error(lambda: dmljax.element_wise_add(np.ones(3, np.float32), np.ones(3, np.float16)))
    assert "have DataTypes FLOAT32, FLOAT16; they must have the same DataType" in msg
    msg = _error(lambda: dmljax.element_wise_add(np.ones(3, np.float32), np.ones(1, np.float32)))
    assert "have Sizes [3], [1]; they must have the same DimensionCount and Sizes" in msg


# ----------------------------------------------------------------------------------------------
# Gradients: exact at the kinks, finite differences away from them


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("which", tiers.fast_sample(["clip", "clip1"]))
@pytest.mark.parametrize("sb", [None, (2.0, 0.5)])
def test_clip_gradient_at_kinks(dt, which, sb):
    lo, hi = -1.0, 1.5
    op = dmljax.element_wise_clip if which == "clip" else dmljax.element_wise_clip1
    s, b = sb or (1.0, 0.0)
    g = np.array([-3.0, lo, -0.999, 0.0, 1.499, hi, 4.0, NAN])  # g(x) at and around the bounds
    x = ((g - b) / s).astype(dt)
    got = _grad(lambda v: op(v, min=lo, max=hi, scale_bias=sb), x)
    g_read = np.asarray(x, np.float64) * s + b
    want = ref.clip_grad(g_read, lo, hi, s)
    np.testing.assert_array_equal(got, want.astype(dt))
    assert list(got[[1, 5]]) == [0, 0] and got[2] == s and got[7] == s  # ties blocked; NaN passes
    # Min > Max: the output is constant, and CLIP_GRAD blocks every number (NaN still passes).
    np.testing.assert_array_equal(_grad(lambda v: op(v, min=1.0, max=-1.0), x), [0] * 7 + [1])


def test_add_and_identity_gradients_exact():
    a = np.array([DENORM, 3e38, -1.0, NAN], np.float32)
    b = np.array([DENORM, 3e38, 1.0, 0.0], np.float32)
    ga, gb = jax.grad(lambda p, q: dmljax.element_wise_add(p, q).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, np.ones(4, np.float32))
    np.testing.assert_array_equal(gb, np.ones(4, np.float32))
    g = jax.grad(lambda p: dmljax.element_wise_identity(p, scale_bias=(-3.0, 7.0)).sum())(a)
    np.testing.assert_array_equal(g, np.full(4, -3.0, np.float32))
    g = jax.grad(lambda p: dmljax.element_wise_identity(p).sum())(a)
    np.testing.assert_array_equal(g, np.ones(4, np.float32))


def test_add1_gradient_chains_through_activation():
    a = np.array([-3.0, 1.0, -0.5, 2.0], np.float32)
    b = np.array([2.0, -1.0, 0.5, 0.0], np.float32)  # a + b = -1, 0, 0, 2
    ga, gb = jax.grad(lambda p, q: dmljax.element_wise_add1(p, q, fused_activation=ELU_HALF).sum(),
                      argnums=(0, 1))(a, b)
    want = activation_ref.elu_grad(np.array([-1.0, 0.0, 0.0, 2.0]), alpha=0.5)
    np.testing.assert_allclose(ga, want, rtol=1e-6)
    np.testing.assert_array_equal(ga, gb)


def test_integer_inputs_get_no_gradient():
    x = np.array([1, 2], np.int32)
    g = jax.grad(lambda v: dmljax.element_wise_clip(v, min=0, max=1).astype(jnp.float32).sum(),
                 allow_int=True)(x)
    assert g.dtype == jax.dtypes.float0


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_finite_differences_away_from_kinks(rng):
    x = rng.uniform(0.2, 2.0, (16,)) * rng.choice([-1.0, 1.0], (16,))
    x = x.astype(np.float32)
    tol = {"atol": 2e-2, "rtol": 2e-2, "eps": 1e-3}
    check_grads(lambda v: dmljax.element_wise_clip(v * 0.5, min=-0.5, max=0.55, scale_bias=(1.5, 0.25)),
                (x,), order=1, modes=("fwd", "rev"), **tol)
    check_grads(lambda v: dmljax.element_wise_clip1(v, min=-0.1, max=0.1), (x,), order=1, **tol)
    y = rng.uniform(-0.1, 0.1, (16,)).astype(np.float32)
    check_grads(lambda p, q: dmljax.element_wise_add1(p, q, fused_activation=ELU_HALF), (x, y), order=2, **tol)
    check_grads(lambda p, q: dmljax.element_wise_add(p, q), (x, y), order=1, **tol)
    check_grads(lambda v: dmljax.element_wise_identity(v, scale_bias=(1.5, -1.0)), (x,), order=1, **tol)


# ----------------------------------------------------------------------------------------------
# Transformations


def _calls(rng):
    f = (rng.standard_normal((3, 8)) * 3).astype(np.float32)
    i = rng.integers(-100, 100, (3, 8)).astype(np.int16)
    sb = (0.7, 0.3)
    return [
        (lambda v: dmljax.element_wise_identity(v), f),
        (lambda v: dmljax.element_wise_identity(v, scale_bias=sb), f),
        (lambda v: dmljax.element_wise_identity(v, scale_bias=sb), i),
        (lambda v: dmljax.element_wise_add(v, v[..., ::-1]), f),
        (lambda v: dmljax.element_wise_add(v, v[..., ::-1]), i),
        (lambda v: dmljax.element_wise_add1(v, v[..., ::-1], fused_activation=ELU_HALF), f),
        (lambda v: dmljax.element_wise_clip(v, min=-1, max=2, scale_bias=sb), f),
        (lambda v: dmljax.element_wise_clip(v, min=-10, max=20, scale_bias=sb), i),
        (lambda v: dmljax.element_wise_clip1(v, min=-1.5, max=2), f),
        (lambda v: dmljax.element_wise_clip1(v, min=-10, max=20), i),
    ]


def test_eager_equals_jit_and_vmap(rng):
    for k, (fn, x) in enumerate(_calls(rng)):
        eager = np.asarray(fn(x))
        np.testing.assert_array_equal(bits(np.asarray(jax.jit(fn)(x))), bits(eager), err_msg=str(k))
        np.testing.assert_array_equal(bits(np.asarray(jax.vmap(fn)(x))), bits(eager), err_msg=str(k))


def test_traced_once_per_attributes():
    x = np.ones((13, 1), np.float32)  # a shape no other test uses
    before = TRACE_COUNTS["DML_OPERATOR_ELEMENT_WISE_CLIP"]
    for _ in range(3):
        dmljax.element_wise_clip(x, min=0, max=1.0)
    dmljax.element_wise_clip(x, min=0.0, max=1, scale_bias=None)
    assert TRACE_COUNTS["DML_OPERATOR_ELEMENT_WISE_CLIP"] - before == 1


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_SUBTRACT, DIVIDE, RECIP, DIFFERENCE_SQUARE, MAX, MIN, MEAN, MODULUS_TRUNCATE,
# CLIP_GRAD, CLIP_GRAD1: expected values from IEEE rules, Python's exact integers and C's fmod.

F32_MAX = float(np.finfo(np.float32).max)


def _same_floats(got, want, dtype):
    """Bit for bit (signed zeros included), NaN as "is NaN"."""
    got, want = np.asarray(got), np.asarray(want, dtype)
    assert got.dtype == dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(bits(got[keep]), bits(want[keep]))


def _int_pairs(dt):
    info = np.iinfo(dt.dtype)
    vals = sorted(v for v in {int(info.min), int(info.min) + 1, -7, -2, -1, 0, 1, 2, 7,
                              int(info.max) - 1, int(info.max)} if info.min <= v <= info.max)
    a = np.array([x for x in vals for _ in vals], dt.dtype)
    b = np.array([y for _ in vals for y in vals], dt.dtype)
    return a, b


def _wrapped(values, dtype):
    info = np.iinfo(dtype)
    span = 1 << (8 * np.dtype(dtype).itemsize)
    return np.array([(v - int(info.min)) % span + int(info.min) for v in values], dtype=object)


def _c_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def test_subtract_edges():
    a = np.array([INF, -0.0, 0.0, 1.0, DENORM, 3e38], np.float32)
    b = np.array([INF, 0.0, 0.0, 1.0, 0.0, -3e38], np.float32)
    _same_floats(dmljax.element_wise_subtract(a, b), [NAN, -0.0, 0.0, 0.0, 0.0, INF], np.float32)
    i = np.array([-2**31, 0], np.int32)
    np.testing.assert_array_equal(dmljax.element_wise_subtract(i, np.array([1, -2**31], np.int32)),
                                  [2**31 - 1, -2**31])  # wraps both ways
    ga, gb = jax.grad(lambda p, q: dmljax.element_wise_subtract(p, q).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, np.ones(6, np.float32))
    np.testing.assert_array_equal(gb, -np.ones(6, np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_divide_float_specials(dtype):
    a = np.array([1.0, -1.0, 1.0, 0.0, INF, -INF, 6.0, NAN], dtype)
    b = np.array([0.0, 0.0, -0.0, 0.0, INF, 2.0, -4.0, 1.0], dtype)
    want = [INF, -INF, -INF, NAN, NAN, -INF, -1.5, NAN]
    _same_floats(dmljax.element_wise_divide(a, b), want, dtype)
    _same_floats(dmljax.element_wise_divide(a, b, allow_half_precision_computation=True), want, dtype)


def test_divide_float32_denormals_flushed():
    # A denormal divisor reads as a signed zero; a denormal quotient is written as one.
    out = dmljax.element_wise_divide(np.array([1.0, 1.0, 1e-30, -1e-30], np.float32),
                                     np.array([DENORM, -DENORM, 1e10, 1e10], np.float32))
    _same_floats(out, [INF, -INF, 0.0, -0.0], np.float32)


@pytest.mark.parametrize("dt", INT_TYPES, ids=str)
def test_divide_and_modulus_truncate_integers_exact(dt, x64):
    # Truncation toward zero (C), a zero divisor gives 0, INT_MIN / -1 wraps to INT_MIN and
    # INT_MIN % -1 is 0; every pair of the type's edge values against Python's exact integers.
    a, b = _int_pairs(dt)
    pairs = list(zip(map(int, a), map(int, b)))
    q = np.asarray(dmljax.element_wise_divide(a, b))
    r = np.asarray(dmljax.element_wise_modulus_truncate(a, b))
    assert q.dtype == r.dtype == dt.dtype
    np.testing.assert_array_equal(q.astype(object), _wrapped([0 if y == 0 else _c_div(x, y) for x, y in pairs], dt.dtype))
    np.testing.assert_array_equal(r.astype(object), np.array([0 if y == 0 else x - y * _c_div(x, y) for x, y in pairs],
                                                             dtype=object))


def test_integer_zero_divisor_and_int_min_by_minus_one_under_jit(x64):
    # Constant operands: XLA folds the division at compile time, where a zero divisor or
    # INT_MIN / -1 raises SIGFPE and kills the process unless the divisor is guarded.
    for dtype in (np.int8, np.int32, np.int64):
        lo = int(np.iinfo(dtype).min)
        a, b = np.array([lo, 5, -5, 0, lo], dtype), np.array([-1, 0, 0, 0, 1], dtype)
        q = jax.jit(lambda: dmljax.element_wise_divide(jnp.asarray(a), jnp.asarray(b)))()
        r = jax.jit(lambda: dmljax.element_wise_modulus_truncate(jnp.asarray(a), jnp.asarray(b)))()
        np.testing.assert_array_equal(q, np.array([lo, 0, 0, 0, lo], dtype))
        np.testing.assert_array_equal(r, np.zeros(5, dtype))
    u = jnp.array([5, 0], jnp.uint32), jnp.array([0, 0], jnp.uint32)
    np.testing.assert_array_equal(jax.jit(lambda: dmljax.element_wise_divide(*u))(), [0, 0])
    np.testing.assert_array_equal(jax.jit(lambda: dmljax.element_wise_modulus_truncate(*u))(), [0, 0])


def test_divide_gradient_at_zero_and_without_needless_overflow():
    a = np.array([1.0, -1.0, 0.0, 1e-30, 3.0, 0.0, INF], np.float32)
    b = np.array([0.0, 0.0, 0.0, 1e-20, -2.0, 5.0, INF], np.float32)
    da, db = jax.grad(lambda p, q: dmljax.element_wise_divide(p, q).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(da, [INF, INF, NAN, 1e20, -0.5, 0.2, NAN], rtol=1e-6)
    # -a / b^2: b^2 = 1e-40 would underflow (flushed: -inf); -(a / b) / b is -1e10.
    np.testing.assert_allclose(db, [-INF, INF, NAN, -1e10, -0.75, -0.0, NAN], rtol=1e-6)
    assert np.signbit(db[5])


def test_recip_specials_and_flushing():
    x = np.array([0.0, -0.0, INF, -INF, DENORM, -DENORM, NAN, 2.0, 1e38], np.float32)
    want = [INF, -INF, 0.0, -0.0, INF, -INF, NAN, 0.5, 0.0]  # 1e-38 is a denormal: flushed
    _same_floats(dmljax.element_wise_recip(x), want, np.float32)
    h = np.array([0.0, -0.0, INF, 6e-8, 4.0, NAN], np.float16)  # a FLOAT16 denormal is kept: 1/6e-8 overflows
    for half in (False, True):
        _same_floats(dmljax.element_wise_recip(h, allow_half_precision_computation=half),
                     [INF, -INF, 0.0, INF, 0.25, NAN], np.float16)
    _same_floats(dmljax.element_wise_recip(np.array([-0.5, 1.5], np.float32), scale_bias=(2.0, 1.0)),
                 [INF, 0.25], np.float32)  # 1 / (2x + 1): g = +0 at x = -0.5


def test_recip_gradient():
    x = np.array([0.0, -0.0, INF, -INF, 2.0, 1e-19, NAN], np.float32)
    g = _grad(dmljax.element_wise_recip, x)
    _same_floats(g[:5], [-INF, -INF, -0.0, -0.0, -0.25], np.float32)  # recip'(+-0) = -inf
    np.testing.assert_allclose(g[5], -1e38, rtol=1e-6)  # x * x would underflow: -(1/x)/x does not
    assert np.isnan(g[6])
    g = _grad(lambda v: dmljax.element_wise_recip(v, scale_bias=(2.0, 1.0)), np.array([-0.5, 0.5], np.float32))
    np.testing.assert_array_equal(g, [-INF, -0.5])  # Scale * -1/g^2
    assert _grad(dmljax.element_wise_recip, np.array([4.0], np.float16)).dtype == np.float16


def _fmod_or_nan(a, b):
    if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    return math.fmod(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_modulus_truncate_is_c_fmod(dtype):
    a = np.array([p[0] for p in FLOAT_PAIRS] + [-4.0, 4.0, -0.0], dtype)
    b = np.array([p[1] for p in FLOAT_PAIRS] + [2.0, -2.0, 3.0], dtype)
    want = [_fmod_or_nan(float(x), float(y)) for x, y in zip(a, b)]  # exact: one rounding is none
    _same_floats(dmljax.element_wise_modulus_truncate(a, b), want, dtype)
    _same_floats(dmljax.element_wise_modulus_truncate(a, b, allow_half_precision_computation=True), want, dtype)


def test_modulus_truncate_flushes_a_denormal_remainder_keeping_the_dividends_sign():
    out = dmljax.element_wise_modulus_truncate(np.array([1.5, -1.5], np.float32),
                                               np.array([-3.8577556e-38, 3.8577556e-38], np.float32))
    _same_floats(out, [0.0, -0.0], np.float32)


def test_modulus_truncate_gradients():
    a = np.array([7.0, -7.0, 5.5, 1.0, INF, 2.0], np.float32)
    b = np.array([3.0, 3.0, -2.0, 0.0, 2.0, INF], np.float32)
    da, db = jax.grad(lambda p, q: dmljax.element_wise_modulus_truncate(p, q).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(da, [1.0, 1.0, 1.0, NAN, NAN, 1.0])  # NaN where the result is
    np.testing.assert_array_equal(db, [-2.0, 2.0, 2.0, NAN, NAN, -0.0])  # -trunc(a / b)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("half", [False, True])
def test_max_min_nan_and_signed_zeros(dtype, half):
    a = np.array([NAN, 1.0, NAN, -0.0, 0.0, -0.0, 0.0, 2.0, -INF, 3.0], dtype)
    b = np.array([1.0, NAN, NAN, 0.0, -0.0, -0.0, 0.0, 2.0, -2.0, INF], dtype)
    kw = {"allow_half_precision_computation": half}
    for f in (lambda p, q: dmljax.element_wise_max(p, q, **kw), jax.jit(lambda p, q: dmljax.element_wise_max(p, q, **kw))):
        _same_floats(f(a, b), [1.0, 1.0, NAN, 0.0, 0.0, -0.0, 0.0, 2.0, -2.0, INF], dtype)
    for f in (lambda p, q: dmljax.element_wise_min(p, q, **kw), jax.jit(lambda p, q: dmljax.element_wise_min(p, q, **kw))):
        _same_floats(f(a, b), [1.0, 1.0, NAN, -0.0, -0.0, -0.0, 0.0, 2.0, -INF, 3.0], dtype)


def test_max_min_float32_denormals_read_as_zeros():
    a, b = np.array([DENORM, -DENORM], np.float32), np.array([-0.0, 0.0], np.float32)
    _same_floats(dmljax.element_wise_max(a, b), [0.0, 0.0], np.float32)
    _same_floats(dmljax.element_wise_min(a, b), [-0.0, -0.0], np.float32)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.uint64])
def test_max_min_integers_exact(dtype, x64):
    info = np.iinfo(dtype)
    top = int(info.max)
    a = np.array([top, top - 1, int(info.min), 0], dtype)  # 2**63 - 1 against 2**63 - 2: a float would tie
    b = np.array([top - 1, top, int(info.min) + 1, 0], dtype)
    np.testing.assert_array_equal(dmljax.element_wise_max(a, b), np.array([top, top, int(info.min) + 1, 0], dtype))
    np.testing.assert_array_equal(dmljax.element_wise_min(a, b), np.array([top - 1, top - 1, int(info.min), 0], dtype))


def test_max_min_gradient_goes_to_the_selected_operand():
    a = np.array([1.0, 2.0, 2.0, NAN, 1.0, NAN, -0.0, 0.0], np.float32)
    b = np.array([2.0, 1.0, 2.0, 1.0, NAN, NAN, 0.0, -0.0], np.float32)
    grads = jax.grad(lambda p, q: dmljax.element_wise_max(p, q).sum(), argnums=(0, 1))
    da, db = grads(a, b)
    # B only where it wins strictly or A alone is NaN; ties (and both NaN) go to A.
    np.testing.assert_array_equal(da, [0, 1, 1, 0, 1, 1, 1, 1])
    np.testing.assert_array_equal(db, [1, 0, 0, 1, 0, 0, 0, 0])
    da, db = jax.grad(lambda p, q: dmljax.element_wise_min(p, q).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(da, [1, 0, 1, 0, 1, 1, 1, 1])
    np.testing.assert_array_equal(db, [0, 1, 0, 1, 0, 0, 0, 0])


def test_mean_never_overflows():
    a = np.array([3e38, -3.4e38, F32_MAX, 1.0, INF, INF, 1e-38, 3.0], np.float32)
    b = np.array([3e38, -3.4e38, 1e37, 2.0, -INF, 1.0, 1e-38, -3.0], np.float32)
    exact = (a.astype(np.float64) + b.astype(np.float64)) / 2
    want = np.where(np.abs(exact) < 1.1754944e-38, 0.0, exact)  # a denormal mean is flushed
    _same_floats(dmljax.element_wise_mean(a, b), want, np.float32)
    # Inside a caller's jit too (XLA's simplifier would turn a * 0.5 + b * 0.5 into (a + b) * 0.5).
    _same_floats(jax.jit(lambda p, q: dmljax.element_wise_mean(p, q) * np.float32(1))(a, b), want, np.float32)
    h = np.array([65504.0, -65504.0, 6e-8], np.float16)
    for half in (False, True):
        _same_floats(dmljax.element_wise_mean(h, h, allow_half_precision_computation=half), h, np.float16)
    ga, gb = jax.grad(lambda p, q: dmljax.element_wise_mean(p, q).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(ga, np.full(8, 0.5, np.float32))
    np.testing.assert_array_equal(gb, ga)


@pytest.mark.parametrize("dt", [DataType.INT32, DataType.UINT32], ids=str)
def test_mean_integers_truncate_toward_zero_without_overflow(dt):
    a, b = _int_pairs(dt)
    out = np.asarray(dmljax.element_wise_mean(a, b))
    want = [_c_div(int(x) + int(y), 2) for x, y in zip(a, b)]  # exact; -3 and 0 give -1
    np.testing.assert_array_equal(out.astype(object), np.array(want, dtype=object))


def test_difference_square_edges():
    i = np.array([0, -2**31, 5], np.int32), np.array([65536, 2**31 - 1, 5], np.int32)
    want = _wrapped([(int(x) - int(y)) ** 2 for x, y in zip(*i)], np.int32)
    np.testing.assert_array_equal(np.asarray(dmljax.element_wise_difference_square(*i)).astype(object), want)
    u = np.array([0, 7], np.uint32), np.array([1, 2**32 - 1], np.uint32)
    np.testing.assert_array_equal(dmljax.element_wise_difference_square(*u), [1, 64])
    a = np.array([INF, 1e20, 3.0, -0.0], np.float32)
    b = np.array([INF, -1e20, 1.0, 0.0], np.float32)
    _same_floats(dmljax.element_wise_difference_square(a, b), [NAN, INF, 4.0, 0.0], np.float32)
    da, db = jax.grad(lambda p, q: dmljax.element_wise_difference_square(p, q).sum(), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(da, np.array([NAN, 4e20, 4.0, -0.0], np.float32))  # 2 (a - b)
    np.testing.assert_array_equal(db, -da)


def test_new_binary_operators_finite_differences(rng):
    a = rng.uniform(-4, 4, 16).astype(np.float32)
    b = rng.uniform(0.5, 3, 16).astype(np.float32) * rng.choice([-1, 1], 16).astype(np.float32)
    q = a / b
    keep = (np.abs(q - np.round(q)) > 0.05) & (np.abs(a - b) > 0.05)  # away from the jumps and ties
    a, b = jnp.asarray(a[keep]), jnp.asarray(b[keep])
    tol = {"eps": 1e-3, "atol": 2e-2, "rtol": 2e-2}
    # The operators whose derivative is not a constant or a selection (those the generated
    # reference gradients pin down exactly).
    for f in (dmljax.element_wise_divide, dmljax.element_wise_modulus_truncate):
        check_grads(f, (a, b), order=1, modes=("rev",), **tol)
    check_grads(lambda v: dmljax.element_wise_recip(v, scale_bias=(0.5, 0.25)), (b,), order=1, modes=("fwd",), **tol)


# CLIP_GRAD / CLIP_GRAD1 and jax.grad of CLIP / CLIP1: one rule, bit for bit.

def _clip_points(dtype, lo, hi):
    lo_t, hi_t = np.asarray(lo, dtype), np.asarray(hi, dtype)
    near = [np.nextafter(v, d) for v in (lo_t, hi_t) for d in (np.asarray(-INF, dtype), np.asarray(INF, dtype))]
    special = [lo, hi, *near, NAN, INF, -INF, 0.0, -0.0, 6e-8, -3.0, 0.5, 4.0]
    if dtype == np.float32:
        special += [DENORM, -DENORM]
    return np.array(special + list(np.linspace(-3, 3, 41)), dtype)


@pytest.mark.parametrize("dtype,half,lo,hi", tiers.fast_sample([
    (np.float32, False, -1.0, 1.5), (np.float32, False, 0.0, 0.1), (np.float32, False, 1.0, -1.0),
    (np.float16, False, 0.0, 0.1), (np.float16, True, 0.0, 0.1), (np.float16, True, -1.0, 1.5),
], keep=3, key="clip_grad"))  # 0.1 is not a FLOAT16 number: CLIP's float32 bound and CLIP1's FLOAT16 one differ; Min > Max
def test_clip_grad_is_jax_grad_of_clip(dtype, half, lo, hi, rng):
    x = _clip_points(dtype, lo, hi)
    dy = (rng.standard_normal(x.shape) * 2).astype(dtype)
    dy[:4] = np.array([6e-8, -0.0, INF, NAN], dtype)  # the gradient passes with its bits
    kw = {"allow_half_precision_computation": half}
    # CLIP's FLOAT bounds are float32 values (FLOAT16 ones when computing in FLOAT16); CLIP1's
    # are values of the tensor's type.
    as_clip = np.float16 if half and dtype == np.float16 else np.float32
    for clip, grad_op, extra, bound_type in (
            (dmljax.element_wise_clip, dmljax.element_wise_clip_grad, {}, as_clip),
            (dmljax.element_wise_clip1, dmljax.element_wise_clip_grad1, {"min_max_data_type": None}, dtype)):
        _, vjp = jax.vjp(lambda v: clip(v, min=lo, max=hi, **kw), x)
        got = np.asarray(grad_op(x, dy, min=lo, max=hi, **extra, **kw))
        np.testing.assert_array_equal(bits(vjp(dy)[0]), bits(got), err_msg=str(grad_op))
        ones = np.asarray(grad_op(x, np.ones_like(x), min=lo, max=hi, **extra, **kw))
        # The page's rule, from the float64 reference: blocked at and beyond the bounds, NaN passes.
        read = np.where(np.abs(x.astype(np.float64)) < 1.1754944e-38, 0.0, x)  # a denormal reads as 0
        want = ref.clip_grad(read, float(bound_type(lo)), float(bound_type(hi)))
        np.testing.assert_array_equal(ones, want.astype(dtype), err_msg=str(grad_op))


def test_clip_grad_second_order_and_integers(x64):
    x = np.array([-2.0, -1.0, 0.0, 1.5, 3.0, NAN], np.float32)
    dy = np.full(6, 2.0, np.float32)
    dx, ddy = jax.grad(lambda p, q: dmljax.element_wise_clip_grad(p, q, min=-1.0, max=1.5).sum(), argnums=(0, 1))(x, dy)
    np.testing.assert_array_equal(dx, np.zeros(6, np.float32))  # piecewise constant in x
    np.testing.assert_array_equal(ddy, [0, 0, 1, 0, 0, 1])  # the mask
    # Integer tensors: CLIP_GRAD's FLOAT bounds truncated toward zero (-2.5 -> -2, 3.7 -> 3), as CLIP's.
    i = np.array([-3, -2, -1, 0, 2, 3, 4], np.int8)
    np.testing.assert_array_equal(dmljax.element_wise_clip_grad(i, np.full(7, 5, np.int8), min=-2.5, max=3.7),
                                  [0, 0, 5, 5, 5, 0, 0])
    # CLIP_GRAD1's bounds are exact values of the type, 64-bit included.
    big = np.array([2**62, 2**62 + 1, 2**62 + 2], np.int64)
    out = dmljax.element_wise_clip_grad1(big, np.array([7, 7, 7], np.int64), min=2**62, max=2**62 + 2)
    np.testing.assert_array_equal(out, [0, 7, 0])
    g = jax.grad(lambda v: dmljax.element_wise_clip_grad(v, v, min=0, max=1).astype(jnp.float32).sum(),
                 allow_int=True)(i)
    assert g.dtype == jax.dtypes.float0


def test_clip_grad_signatures_and_refusals():
    s = inspect.signature
    assert str(s(dmljax.element_wise_clip_grad)) == (
        "(input, input_gradient, *, min, max, allow_half_precision_computation=False, feature_level=None)")
    assert str(s(dmljax.element_wise_clip_grad1)) == (
        "(input, input_gradient, *, min_max_data_type=None, min, max, allow_half_precision_computation=False, "
        "feature_level=None)")
    assert dmljax.element_wise_clip.spec.grad_operator == dmljax.element_wise_clip_grad.spec.enum_name
    f32 = np.ones(3, np.float32)
    msg = _error(lambda: dmljax.element_wise_clip_grad(f32, f32.astype(np.float16), min=0, max=1))
    assert "must have the same DataType" in msg
    msg = _error(lambda: dmljax.element_wise_clip_grad(f32, f32, min=0, max=1, feature_level="3.0"))
    assert "it was introduced in DML_FEATURE_LEVEL_3_1." in msg
    msg = _error(lambda: dmljax.element_wise_clip_grad1(f32, f32, min_max_data_type="FLOAT16", min=0, max=1))
    assert "it must match OutputGradientTensor.DataType, FLOAT32" in msg
