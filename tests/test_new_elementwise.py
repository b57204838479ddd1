"""ELEMENT_WISE_IDENTITY, ELEMENT_WISE_ADD, ELEMENT_WISE_ADD1 (+ FusedActivation),
ELEMENT_WISE_CLIP, ELEMENT_WISE_CLIP1 (+ DML_SCALAR_UNION) and ACTIVATION_ELU, against the
float64 references in tests/reference/new_elementwise.py. None of these pages has a worked
example; the doctests in the formulas hold the examples."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import dmljax
from dmljax import DataType, FeatureLevel, FusedActivation, ScalarUnion
from dmljax._src.op import TRACE_COUNTS
from tests import catalog
from tests.compare import assert_matches
from tests.reference import new_elementwise as ref

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
SHAPE8 = (2, 3, 1, 2, 1, 1, 2, 1)
NEW_OPS = (
    "DML_OPERATOR_ELEMENT_WISE_IDENTITY",
    "DML_OPERATOR_ELEMENT_WISE_ADD",
    "DML_OPERATOR_ELEMENT_WISE_ADD1",
    "DML_OPERATOR_ELEMENT_WISE_CLIP",
    "DML_OPERATOR_ELEMENT_WISE_CLIP1",
    "DML_OPERATOR_ACTIVATION_ELU",
)
ELU_HALF = FusedActivation("ACTIVATION_ELU", alpha=0.5)


def _clip1_bounds(dt):
    if dt.is_float:
        return {"min": -1.25, "max": 2.5}
    return {"min": -5, "max": 100} if dt.is_signed else {"min": 3, "max": 100}


def attr_sets(name, dt):
    """(kwargs for dmljax, kwargs for the reference) per case."""
    sb = {"scale_bias": (0.75, -0.5)}
    if name.endswith("IDENTITY"):
        return [({}, {}), (sb, sb)]
    if name.endswith("ADD"):
        return [({}, {})]
    if name.endswith("ADD1"):
        return [({}, {}), ({"fused_activation": ELU_HALF}, {"fused": ("ELU", {"alpha": 0.5})}),
                ({"fused_activation": {"Type": "DML_OPERATOR_ACTIVATION_SCALED_ELU", "Desc": {}}},
                 {"fused": ("SCALED_ELU", {})})]
    if name.endswith("CLIP"):
        b = {"min": -1.25, "max": 2.5}
        return [(b, b), ({**b, **sb}, {**b, **sb})]
    if name.endswith("CLIP1"):
        b = _clip1_bounds(dt)
        return [(b, b), ({**b, **sb}, {**b, **sb})]
    return [({}, {}), ({"alpha": 0.3}, {"alpha": 0.3})]


def random_tensor(rng, dt, shape, scale_bias=False):
    if dt.is_float:
        return (rng.standard_normal(shape) * 3.0).astype(dt.dtype)
    info = np.iinfo(dt.dtype)
    vals = rng.integers(int(info.min), int(info.max), size=shape, endpoint=True, dtype=dt.dtype)
    if scale_bias and dt.needs_x64:  # keep x * Scale exact in FLOAT64 (see the reference)
        vals = (vals >> 24).astype(dt.dtype)
    small = rng.integers(max(int(info.min), -5), 6, size=shape).astype(dt.dtype)
    return np.where(rng.random(shape) < 0.5, vals, small)


def positive_cases():
    return [(c.op_name, c.level, c.data_type, c.ndim) for c in catalog.positive_cases(NEW_OPS)]


POSITIVE = positive_cases()


def _id(case):
    name, level, dt, ndim = case
    return f"{name[13:]}-{level.version}-{dt.name}-{ndim}d"


def test_case_counts():
    assert len(POSITIVE) == 77 + 72 + 10 + 64 + 30 + 12


@pytest.mark.parametrize("case", POSITIVE, ids=_id)
def test_matches_reference(case, rng):
    name, level, dt, ndim = case
    op = dmljax.get_operator(name)
    shape = SHAPE8[:ndim]
    with jax.enable_x64(dt.needs_x64):
        for kwargs, ref_kwargs in attr_sets(name, dt):
            args = [random_tensor(rng, dt, shape, "scale_bias" in kwargs) for _ in op.spec.inputs]
            out = op(*args, **kwargs, feature_level=level)
            assert out.shape == shape and out.dtype == dt.dtype
            budget = op.spec.ulp.get(dt, 0)
            if "fused" in ref_kwargs:
                act = dmljax.get_operator("ACTIVATION_" + ref_kwargs["fused"][0])
                budget = act.spec.ulp.get(dt, 0)
            want = ref.REFERENCES[name](*args, **ref_kwargs)
            assert_matches(out, want, dt, budget, context=f"{_id(case)} {kwargs}")
            if name.endswith("IDENTITY") and not kwargs:  # data movement: the very bits
                assert np.asarray(out).tobytes() == args[0].tobytes()


@pytest.mark.parametrize("name", ["ELEMENT_WISE_IDENTITY", "ELEMENT_WISE_ADD", "ELEMENT_WISE_ADD1",
                                  "ELEMENT_WISE_CLIP", "ELEMENT_WISE_CLIP1", "ACTIVATION_ELU"])
def test_half_precision_computation(name, rng):
    op = dmljax.get_operator(name)
    for kwargs, ref_kwargs in attr_sets(op.spec.enum_name, F16):
        if "fused" in ref_kwargs:
            continue
        args = [random_tensor(rng, F16, (64,)) for _ in op.spec.inputs]
        out = op(*args, **kwargs, allow_half_precision_computation=True)
        if name.startswith("ELEMENT_WISE_CLIP"):
            # FLOAT16 compute rounds CLIP's FLOAT bounds to FLOAT16: compare against those.
            ref_kwargs = {k: float(np.float16(v)) if k in ("min", "max") else v for k, v in ref_kwargs.items()}
        if "scale_bias" in kwargs:
            ref_kwargs = {**ref_kwargs, "half": True}
        want = ref.REFERENCES[op.spec.enum_name](*args, **ref_kwargs)
        assert_matches(out, want, F16, op.spec.ulp_half, context=f"{name} half {kwargs}")


# ----------------------------------------------------------------------------------------------
# Edge values

NAN, INF = np.nan, np.inf
DENORM = 1e-40  # a FLOAT32 denormal


def bits(x):
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


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


def test_elu_values():
    x = np.array([-0.0, 0.0, -1e-30, 100.0, -100.0, NAN, -INF, INF, DENORM], np.float32)
    out = np.asarray(dmljax.activation_elu(x, alpha=2.0))
    assert bits(out[0]) == bits(np.float32(-0.0))  # x >= 0 keeps x itself
    assert out[1] == 0 and out[2] == np.float32(-2e-30) and out[3] == 100 and out[4] == -2
    assert np.isnan(out[5]) and out[6] == -2 and out[7] == INF and out[8] == 0
    h = np.array([-20.0, 12.0, -6e-8], np.float16)
    out = np.asarray(dmljax.activation_elu(h))
    assert out[0] == -1 and out[1] == 12 and out[2] == h[2]


# ----------------------------------------------------------------------------------------------
# Fused activations

@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("half", [False, True])
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


def _error(fn):
    with pytest.raises(dmljax.ValidationError) as info:
        fn()
    return str(info.value)


HEAD_ADD1 = "element_wise_add1 (DML_OPERATOR_ELEMENT_WISE_ADD1) at DML_FEATURE_LEVEL_6_4:\n"


@pytest.mark.parametrize("fa,text", [
    ("ACTIVATION_RELU", "  FusedActivation (argument `fused_activation`) is DML_OPERATOR_ACTIVATION_RELU, "
     "which DirectML can fuse but dmljax does not implement yet; implemented: "
     "DML_OPERATOR_ACTIVATION_ELU, DML_OPERATOR_ACTIVATION_SCALED_ELU."),
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
# DML_SCALAR_UNION and MinMaxDataType

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
# Support tables: every edge refused, with the page's numbers in the message.

def negative_cases():
    return [(c.op_name, c.level, c.data_type, c.ndim, what) for c, what in catalog.negative_cases(NEW_OPS)]


NEGATIVE = negative_cases()


@pytest.mark.parametrize("case", NEGATIVE, ids=lambda c: f"{_id(c[:4])}-{c[4]}")
def test_refused_outside_support(case):
    name, level, dt, ndim, what = case
    op = dmljax.get_operator(name)
    spec = op.spec
    shape = SHAPE8[:ndim] if ndim <= 8 else (1,) * ndim
    kw = {"min": 0, "max": 1} if "CLIP" in name else {}
    with jax.enable_x64(True):
        args = [jax.ShapeDtypeStruct(shape, dt.dtype) for _ in spec.inputs]
        with pytest.raises(dmljax.ValidationError) as info:
            jax.eval_shape(lambda *a: op(*a, **kw, feature_level=level), *args)
    msg = str(info.value)
    assert msg.startswith(f"{spec.python_name} ({name}) at {level.dml_name}:"), msg
    t = spec.inputs[-1]
    if what == "dims":
        sup = spec.support_at(level).tensors[t.dml_name]
        assert (f"  {t.dml_name} (argument `{t.arg}`) has {ndim} dimension{'s' if ndim != 1 else ''} "
                f"(Sizes {list(shape)}); supported: {sup.dims_text()}.") in msg, msg
    elif what == "type":
        allowed = ", ".join(d.name for d in spec.support_at(level).tensors[t.dml_name].data_types)
        assert f"  {t.dml_name} (argument `{t.arg}`) has DataType {dt.name}; supported: {allowed}." in msg, msg
        later = spec.lowest_level(t.dml_name, lambda s: dt in s.data_types, level)
        if later is not None:
            assert f"Tip: {dt.name} is supported from {later.dml_name}." in msg, msg
    else:
        assert (f"  The operator is not available at {level.dml_name}; it was introduced in "
                f"{spec.introduced.dml_name}.") in msg, msg


def test_negative_case_count():
    assert len(NEGATIVE) > 150


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
# Gradients: exact at the kinks, finite differences away from them.

def _grad(fn, x):
    return np.asarray(jax.grad(lambda v: fn(v).astype(jnp.float32).sum())(x))


@pytest.mark.parametrize("dt", [np.float32, np.float16])
@pytest.mark.parametrize("which", ["clip", "clip1"])
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


def test_elu_gradient_at_kinks():
    x = np.array([-1.0, -0.0, 0.0, DENORM, 1.0, 100.0, -100.0, 89.0], np.float32)
    got = _grad(lambda v: dmljax.activation_elu(v, alpha=2.0), x)
    assert list(got[1:6]) == [1.0, 1.0, 1.0, 1.0, 1.0]  # x >= 0 selects x, also at 0 and -0
    assert got[0] == pytest.approx(2 * math.exp(-1), rel=1e-6) and got[6] == 0.0 and got[7] == 1.0
    h = np.array([12.0, 20.0, -20.0, -1.0], np.float16)
    got = _grad(lambda v: dmljax.activation_elu(v), h)
    assert np.isfinite(got).all() and list(got[:3]) == [1, 1, 0]
    np.testing.assert_allclose(got, ref.elu_grad(h.astype(np.float64)).astype(np.float16), rtol=1e-3)


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
    want = ref.elu_grad(np.array([-1.0, 0.0, 0.0, 2.0]), alpha=0.5)
    np.testing.assert_allclose(ga, want, rtol=1e-6)
    np.testing.assert_array_equal(ga, gb)


def test_integer_inputs_get_no_gradient():
    x = np.array([1, 2], np.int32)
    g = jax.grad(lambda v: dmljax.element_wise_clip(v, min=0, max=1).astype(jnp.float32).sum(),
                 allow_int=True)(x)
    assert g.dtype == jax.dtypes.float0


def test_finite_differences_away_from_kinks(rng):
    x = rng.uniform(0.2, 2.0, (16,)) * rng.choice([-1.0, 1.0], (16,))
    x = x.astype(np.float32)
    tol = {"atol": 2e-2, "rtol": 2e-2, "eps": 1e-3}
    check_grads(lambda v: dmljax.activation_elu(v, alpha=0.7), (x,), order=2, modes=("fwd", "rev"), **tol)
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
        (lambda v: dmljax.activation_elu(v, alpha=0.3), f),
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


def test_registry_and_exports():
    for name in NEW_OPS:
        op = dmljax.get_operator(name)
        assert getattr(dmljax, op.spec.python_name) is op
        assert op.spec.python_name in dmljax.__all__
        assert "Support::" in op.__doc__ and op.spec.formula.splitlines()[0] in op.__doc__
    assert dmljax.get_operator(153) is dmljax.element_wise_clip1
    assert {"FusedActivation", "ScalarUnion"} <= set(dmljax.__all__)
    assert dmljax.__all__ == sorted(dmljax.__all__)
    assert dmljax.element_wise_clip1.spec.grad_operator == "DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1"
