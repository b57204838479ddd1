"""QUANTIZE and DEQUANTIZE by hand: ONNX's own QuantizeLinear/DequantizeLinear node tests mapped
onto DirectML's descs, every INT8/UINT8/INT4/UINT4 value against the float64 reference, the
edges (scales of 0, NaN and infinity, saturation, halves, zero points per tensor, axis and block,
odd INT4 sizes), the refusals' messages, and jit, grad and vmap (the tensor array keeps these
operators out of the generated gradient checks)."""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import dmljax
from dmljax._src.dtypes import DataType
from tests import tiers
from tests.compare import assert_matches
from tests.reference.quantization.quantize import (
    _dequantize_grad, blocked, dequantize as ref_dequantize, integer_range, quantize as ref_quantize,
)

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
INTS = (DataType.INT8, DataType.UINT8, DataType.INT4, DataType.UINT4)
ZP = "SCALE_ZERO_POINT"


def q(values, dt: DataType):
    return np.asarray(values).astype(np.int64).astype(dt.dtype)


# ------------------------------------------------------------------------------ ONNX node tests
def _node_cases():
    """ONNX's QuantizeLinear and DequantizeLinear node tests: importing their two modules runs
    their exports, which append to the node package's case list (collect_testcases imports every
    operator's module, seconds instead of a fraction of one)."""
    node = importlib.import_module("onnx.backend.test.case.node")
    for name in ("quantizelinear", "dequantizelinear"):
        importlib.import_module(f"onnx.backend.test.case.node.{name}")
    cases = [c for c in node._NodeTestCases if c.model.graph.node[0].op_type in ("QuantizeLinear", "DequantizeLinear")]
    return sorted({c.name: c for c in cases}.values(), key=lambda c: c.name)


def _value(v):
    return numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else np.asarray(v)


def _attrs(case) -> dict:
    n = case.model.graph.node[0]
    return {a.name: helper.get_attribute_value(a) for a in n.attribute}


def _types_of(case):
    """(x, scale, zero point or None, y) element types of a node test, as NumPy dtypes."""
    ins = [_value(v) for v in case.data_sets[0][0]]
    y = _value(case.data_sets[0][1][0])
    zp = ins[2] if len(ins) > 2 else None
    return ins[0].dtype, ins[1].dtype, None if zp is None else zp.dtype, y.dtype


def _why_not(case) -> str | None:
    """Why DirectML cannot express a node test (a type the tables lack), or None."""
    op = case.model.graph.node[0].op_type
    x, scale, zp, y = _types_of(case)
    names = {np.dtype(t.dtype): t.name for t in DataType}
    ints, floats = [np.dtype(t.dtype) for t in INTS], [np.dtype(np.float32), np.dtype(np.float16)]
    integer, real = (y, x) if op == "QuantizeLinear" else (x, y)
    if integer not in ints:
        return f"{names.get(integer, integer)} is not in the tables (INT8, INT4, UINT8, UINT4)"
    if real not in floats or scale != real:
        return f"{names.get(scale, scale)} scale with {names.get(real, real)} values (one FLOAT32 or FLOAT16 type)"
    return None


def _parameter(p, x_shape, axis, block):
    """An ONNX scale or zero point as ONNX Runtime's DirectML provider binds it: per-tensor and
    per-axis ones broadcast to the input's Sizes (zero strides), blocked ones with the input's
    rank and ceil(D / block) along the axis (repeated to the input's size where the last block is
    smaller: DirectML has whole blocks only)."""
    rank = len(x_shape)
    axis %= rank
    if p.size == 1 and p.ndim <= 1:
        return np.broadcast_to(p.reshape(()), x_shape)
    if block:
        if x_shape[axis] % block:
            return np.repeat(p, block, axis=axis).take(range(x_shape[axis]), axis=axis)
        return p
    shape = [1] * rank
    shape[axis] = p.size
    return np.broadcast_to(p.reshape(shape), x_shape)


NODE_CASES = _node_cases()


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.name if _why_not(c) is None else f"{c.name}-not-expressible: {_why_not(c)}",
                 marks=[] if _why_not(c) is None else [pytest.mark.skip(reason=_why_not(c))])
    for c in NODE_CASES])
def test_onnx_node_tests(case):
    op = case.model.graph.node[0].op_type
    attrs = _attrs(case)
    ins = [_value(v) for v in case.data_sets[0][0]]
    want = _value(case.data_sets[0][1][0])
    x = ins[0]
    axis, block = attrs.get("axis", 1), attrs.get("block_size", 0)
    quantizations = [_parameter(p, x.shape, axis, block) for p in ins[1:]]
    kind = ZP if len(quantizations) > 1 else "SCALE"
    if op == "QuantizeLinear":
        out_dt = DataType.from_dtype(want.dtype)
        got = dmljax.quantize(x, quantizations, quantization_type=kind, output_data_type=out_dt)
        ref = ref_quantize(x, quantizations, kind, out_dt.name)[0]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want.astype(np.int64))
        np.testing.assert_array_equal(ref, want.astype(np.int64))
    else:
        got = dmljax.dequantize(x, quantizations, quantization_type=kind)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)
        assert_matches(got, ref_dequantize(x, quantizations, kind), DataType.from_dtype(want.dtype))


def test_node_tests_cover_the_4_bit_and_blocked_cases():
    run = {c.name for c in NODE_CASES if _why_not(c) is None}
    assert {"test_quantizelinear", "test_quantizelinear_axis", "test_quantizelinear_int4", "test_quantizelinear_uint4",
            "test_quantizelinear_blocked_asymmetric", "test_dequantizelinear", "test_dequantizelinear_axis",
            "test_dequantizelinear_int4", "test_dequantizelinear_uint4", "test_dequantizelinear_blocked"} <= run


# ------------------------------------------------------------------------------ exhaustive sweeps
def _all_values(dt: DataType) -> np.ndarray:
    lo, hi = integer_range(dt)
    return np.arange(lo, hi + 1)


@pytest.mark.parametrize("dt", tiers.fast_sample(INTS, keep=2, key="dequantize"), ids=lambda d: d.name)
@pytest.mark.parametrize("scale_dt", [F32, F16], ids=lambda d: d.name)
def test_dequantize_every_value_and_zero_point(dt, scale_dt):
    # every input value against every zero point (all pairs), with a per-tensor and a per-axis scale
    v = _all_values(dt)
    x = q(np.broadcast_to(v[:, None], (len(v), len(v))), dt)
    zp = q(v[None, :], dt)  # per axis along dimension 1
    for scale in (np.full((1, 1), 0.1, scale_dt.dtype), np.linspace(-3, 7, len(v)).reshape(1, -1).astype(scale_dt.dtype),
                  np.full((1, 1), 2.0 ** -14, scale_dt.dtype)):
        for quantizations, kind in (([scale, zp], ZP), ([scale], "SCALE")):
            got = dmljax.dequantize(x, quantizations, quantization_type=kind)
            assert got.dtype == scale_dt.dtype and got.shape == x.shape
            assert_matches(got, ref_dequantize(x, quantizations, kind), scale_dt, 0, context=f"{dt.name} {kind}")


@pytest.mark.parametrize("dt", tiers.fast_sample(INTS, keep=2, key="quantize"), ids=lambda d: d.name)
@pytest.mark.parametrize("x_dt", [F32, F16], ids=lambda d: d.name)
def test_quantize_every_output_value_and_zero_point(dt, x_dt):
    # every zero point of the type, against quotients from past -Max - |Min| to past Max + |Min|
    # in steps of 1/2 (halves included), so that every output value and both saturations appear
    lo, hi = integer_range(dt)
    span = hi - lo + 2
    t = np.arange(-2 * span, 2 * span + 1) / 2
    v = _all_values(dt)
    for scale_value in (0.25, 0.1):
        scale = np.full((1, 1), scale_value, x_dt.dtype)
        x = (t[:, None] * np.float64(scale_value)).astype(x_dt.dtype) * np.ones((1, len(v)), x_dt.dtype)
        zp = q(v[None, :], dt)
        got = dmljax.quantize(x, [scale, zp], quantization_type=ZP)
        want = ref_quantize(x, [scale, zp], ZP)[0]
        assert got.dtype == dt.dtype
        np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want)
        assert set(np.asarray(got).astype(np.int64).ravel()) == set(range(lo, hi + 1))
    got = dmljax.quantize(x[:, :1], [scale], quantization_type="SCALE", output_data_type=dt)
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64), ref_quantize(x[:, :1], [scale], "SCALE", dt.name)[0])


def test_quantize_half_precision_computation():
    # the quotient rounded to FLOAT16 first: 2049 / 1 stays 2049 in FLOAT32 and becomes 2048
    x = np.array([[2049.0, 0.3, -1.5, 300.0]], np.float16)
    scale = np.array([[1.0, 0.1, 1.0, 1.0]], np.float16)
    for half in (False, True):
        got = dmljax.quantize(x, [scale], quantization_type="SCALE", output_data_type="INT8",
                              allow_half_precision_computation=half)
        want = ref_quantize(x, [scale], "SCALE", "INT8", half=half)[0]
        np.testing.assert_array_equal(np.asarray(got).astype(np.int64), want)
    x = np.arange(-40, 41, dtype=np.float16).reshape(1, -1) * np.float16(0.3)
    scale = np.full((1, 1), 0.7, np.float16)
    got = dmljax.quantize(x, [scale], quantization_type="SCALE", output_data_type="INT8",
                          allow_half_precision_computation=True)
    np.testing.assert_array_equal(np.asarray(got).astype(np.int64),
                                  ref_quantize(x, [scale], "SCALE", "INT8", half=True)[0])


# ------------------------------------------------------------------------------ edges
def test_halves_round_to_even_and_saturate():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, -128.5, -129.5, 1e30, -1e30], np.float32)
    one = np.ones(1, np.float32)
    got = dmljax.quantize(x, [one], quantization_type="SCALE", output_data_type="INT8")
    assert np.asarray(got).tolist() == [0, 2, 2, 0, -2, -2, 126, 127, -128, -128, 127, -128]
    got = dmljax.quantize(x, [one, np.array([3], np.int8)], quantization_type=ZP)
    assert np.asarray(got).tolist() == [3, 5, 5, 3, 1, 1, 127, 127, -125, -127, 127, -128]
    got = dmljax.quantize(x[:6], [one, np.array([7], jnp.uint4)], quantization_type=ZP)
    assert np.asarray(got).astype(int).tolist() == [7, 9, 9, 7, 5, 5]
    got = dmljax.quantize(np.array([7.5, 8.5, -8.5, 100.0], np.float32), [one], quantization_type="SCALE",
                          output_data_type="INT4")
    assert np.asarray(got).astype(int).tolist() == [7, 7, -8, 7]
    got = dmljax.quantize(np.array([-0.4, 15.5, 14.5], np.float32), [one], quantization_type="SCALE",
                          output_data_type="UINT4")
    assert np.asarray(got).astype(int).tolist() == [0, 15, 14]


def test_default_output_type_and_zero_point_type():
    x = np.array([1.0, 300.0], np.float32)
    s = np.ones(1, np.float32)
    assert dmljax.quantize(x, [s], quantization_type="SCALE").dtype == np.uint8  # ONNX's default
    assert dmljax.quantize(x, [s, np.zeros(1, jnp.int4)], quantization_type=ZP).dtype == jnp.int4
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.quantize(x, [s, np.zeros(1, np.int8)], quantization_type=ZP, output_data_type="UINT8")
    assert ("QuantizationTensors[1] (argument `quantizations[1]`) has DataType INT8; the DataType of OutputTensor, "
            "UINT8 (output_data_type).\n    Tip: leave output_data_type out (None) to take the zero point's.") in str(e.value)


def test_zero_points_per_tensor_axis_and_block():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 4)).astype(np.float32) * 4
    scale = np.array([0.5, 0.25, 1.0], np.float32).reshape(1, 3, 1)  # blocks of 2 along dimension 1
    for zp_shape in [(1, 1, 1), (2, 1, 1), (1, 3, 2), (2, 6, 4)]:
        zp = q(rng.integers(-8, 8, zp_shape), DataType.INT4)
        got = dmljax.quantize(x, [scale, zp], quantization_type=ZP)
        np.testing.assert_array_equal(np.asarray(got).astype(np.int64), ref_quantize(x, [scale, zp], ZP)[0])
        # the same as the blocks written out: a broadcast (zero-stride) zero point of the input's Sizes
        full = np.asarray(blocked(zp, x.shape)).astype(jnp.int4)
        np.testing.assert_array_equal(got, dmljax.quantize(x, [blocked(scale, x.shape), full], quantization_type=ZP))
        y = dmljax.dequantize(got, [scale, zp], quantization_type=ZP)
        assert_matches(y, ref_dequantize(got, [scale, zp], ZP), F32)


def test_blocked_scales_as_onnx_runtimes_directml_provider_binds_them():
    # MatMulNBits: weights [N, K] in UINT4 and a scale of Sizes [N, K / block]
    rng = np.random.default_rng(4)
    n, k, block = 3, 32, 16
    w = q(rng.integers(0, 16, (n, k)), DataType.UINT4)
    scale = rng.uniform(0.01, 0.1, (n, k // block)).astype(np.float16)
    zp = q(rng.integers(0, 16, (n, k // block)), DataType.UINT4)
    got = dmljax.dequantize(w, [scale, zp], quantization_type=ZP)
    want = (w.astype(np.float64) - np.repeat(zp.astype(np.float64), block, 1)) * np.repeat(scale.astype(np.float64), block, 1)
    assert_matches(got, [want], F16)


def test_odd_int4_sizes():
    rng = np.random.default_rng(5)
    for shape in [(1,), (3,), (5, 7), (3, 1, 5)]:
        x = rng.standard_normal(shape).astype(np.float32) * 3
        s = np.full((1,) * len(shape), 0.7, np.float32)
        y = dmljax.quantize(x, [s], quantization_type="SCALE", output_data_type="INT4")
        assert y.shape == shape and y.dtype == jnp.int4
        np.testing.assert_array_equal(np.asarray(y).astype(np.int64), ref_quantize(x, [s], "SCALE", "INT4")[0])
        z = dmljax.dequantize(y, [s], quantization_type="SCALE")
        assert_matches(z, ref_dequantize(y, [s], "SCALE"), F32)


def test_readable_scales_of_zero_nan_inf_are_refused():
    x = np.ones((1, 4), np.float32)
    for bad, what in [(0.0, "0"), (np.nan, "NaN"), (np.inf, "infinite"), (-np.inf, "infinite"),
                      (1e-40, "0, the first 9.99994610111476e-41 at [0, 2] (a FLOAT32 denormal, which math reads as 0)")]:
        s = np.array([[1.0, 2.0, bad, 1.0]], np.float32)
        for call in (lambda: dmljax.quantize(x, [s], quantization_type="SCALE"),
                     lambda: dmljax.dequantize(np.ones((1, 4), np.int8), [s], quantization_type="SCALE"),
                     lambda: dmljax.quantize(x, [jnp.asarray(s)], quantization_type="SCALE")):
            with pytest.raises(dmljax.ValidationError) as e:
                call()
            msg = str(e.value)
            assert "QuantizationTensors[0] (argument `quantizations[0]`) holds 1 element that is " in msg, msg
            assert what in msg, msg
            assert "a scale is finite and not 0" in msg
    with pytest.raises(dmljax.ValidationError, match="holds 4 elements that are 0"):
        dmljax.quantize(x, [np.zeros((1, 4), np.float32)], quantization_type="SCALE")
    s16 = np.array([[np.float16(6e-8)]], np.float16)  # a FLOAT16 denormal is a scale like any other
    dmljax.quantize(x.astype(np.float16), [s16], quantization_type="SCALE")


def test_traced_scales_give_the_documented_values():
    x = np.array([[-2.0, 0.0, 3.0]], np.float32)
    quantize = jax.jit(lambda v, s, z: dmljax.quantize(v, [s, z], quantization_type=ZP))
    dequantize = jax.jit(lambda v, s, z: dmljax.dequantize(v, [s, z], quantization_type=ZP))
    zp = np.full((1, 1), 5, np.int8)
    # a scale of 0: Max or Min by the sign (0 / 0 is NaN: Min); infinite: the zero point; NaN: Min
    assert np.asarray(quantize(x, np.zeros((1, 1), np.float32), zp)).tolist() == [[-128, -128, 127]]
    assert np.asarray(quantize(x, np.full((1, 1), np.inf, np.float32), zp)).tolist() == [[5, 5, 5]]
    assert np.asarray(quantize(x, np.full((1, 1), np.nan, np.float32), zp)).tolist() == [[-128, -128, -128]]
    assert np.asarray(quantize(x, np.full((1, 1), 1e-40, np.float32), zp)).tolist() == [[-128, -128, 127]]
    v = np.array([[3, 5, 9]], np.int8)
    y = np.asarray(dequantize(v, np.zeros((1, 1), np.float32), zp))
    assert y.tolist() == [[0, 0, 0]] and np.signbit(y).tolist() == [[True, False, False]]
    assert np.asarray(dequantize(v, np.full((1, 1), np.inf, np.float32), zp)).tolist()[0][::2] == [-np.inf, np.inf]
    assert np.isnan(np.asarray(dequantize(v, np.full((1, 1), np.inf, np.float32), zp))[0, 1])
    assert np.isnan(np.asarray(dequantize(v, np.full((1, 1), np.nan, np.float32), zp))).all()


def test_refusals_name_the_page_and_the_remedy():
    x = np.ones((2, 6), np.float32)
    s = np.ones((1, 1), np.float32)

    def message(f, *a, **k):
        with pytest.raises(dmljax.ValidationError) as e:
            f(*a, **k)
        return str(e.value)

    msg = message(dmljax.quantize, x, [s], quantization_type="NONE")
    assert msg.startswith("quantize (DML_OPERATOR_QUANTIZE) at DML_FEATURE_LEVEL_6_4:")
    assert ("QuantizationType (argument `quantization_type`) is DML_QUANTIZATION_TYPE_NONE; "
            "DML_QUANTIZATION_TYPE_SCALE or DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT: the page leaves NONE undefined") in msg
    msg = message(dmljax.quantize, x, [s], quantization_type=ZP)
    assert ("QuantizationTensors (argument `quantizations`) has 1 tensor with QuantizationType "
            "DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT; 2: the scale, then the zero point.") in msg
    msg = message(dmljax.dequantize, np.ones((2, 6), np.int8), [s, s], quantization_type="SCALE")
    assert "has 2 tensors with QuantizationType DML_QUANTIZATION_TYPE_SCALE; 1: the scale." in msg
    msg = message(dmljax.quantize, x, [np.ones((1, 4), np.float32)], quantization_type="SCALE")
    assert ("QuantizationTensors[0] (argument `quantizations[0]`) has Sizes [1, 4]; along each dimension "
            "InputTensor's size or a divisor of it (InputTensor has Sizes [2, 6]): blocks of whole size; dimension 1 "
            "has 4 blocks of 6 elements.\n    Tip: for ONNX's blocked quantization with a smaller last block, repeat") in msg
    msg = message(dmljax.quantize, x, [np.ones(1, np.float32)], quantization_type="SCALE")
    assert ("QuantizationTensors[0] (argument `quantizations[0]`) has 1 dimensions (Sizes [1]); InputTensor's "
            "DimensionCount, 2 (the page's constraint)") in msg
    msg = message(dmljax.quantize, x, [s.astype(np.float16)], quantization_type="SCALE")
    assert ("QuantizationTensors[0] (argument `quantizations[0]`) has DataType FLOAT16; the DataType of InputTensor, "
            "FLOAT32") in msg
    msg = message(dmljax.dequantize, np.ones((2, 6), jnp.uint4), [s, np.ones((1, 1), jnp.int4)], quantization_type=ZP)
    assert "QuantizationTensors[1] (argument `quantizations[1]`) has DataType INT4; the DataType of InputTensor, UINT4" in msg
    msg = message(dmljax.dequantize, np.ones((2, 6), np.int8), [np.ones((1, 1), np.int8)], quantization_type="SCALE")
    assert "QuantizationTensors[0] (argument `quantizations[0]`) has DataType INT8; the scale is FLOAT32 or FLOAT16" in msg
    msg = message(dmljax.quantize, x, [s], quantization_type="SCALE", feature_level="6.2")
    assert "The operator is not available at DML_FEATURE_LEVEL_6_2; it was introduced in DML_FEATURE_LEVEL_6_3." in msg
    msg = message(dmljax.dequantize, np.ones((2, 6), np.int16), [s], quantization_type="SCALE")
    assert "InputTensor (argument `input`) has DataType INT16; supported: INT8, INT4, UINT8, UINT4." in msg
    msg = message(dmljax.quantize, x, [s], quantization_type="SCALE", output_data_type="INT16")
    assert "supported: INT8, INT4, UINT8, UINT4" in msg


# ------------------------------------------------------------------------------ transformations
def test_jit_equals_eager_and_vmap():
    # (op by op under jax.disable_jit: the generated test_eager_equals_jit)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 2, 8)).astype(np.float32) * 3
    s = rng.uniform(0.2, 1.0, (3, 2, 2)).astype(np.float32)
    zp = q(rng.integers(0, 16, (3, 1, 1)), DataType.UINT4)

    def quant(v, a, b):
        return dmljax.quantize(v, [a, b], quantization_type=ZP)

    own = quant(x, s, zp)
    np.testing.assert_array_equal(jax.jit(quant)(x, s, zp), own)
    np.testing.assert_array_equal(own.astype(np.int64), ref_quantize(x, [s, zp], ZP)[0])
    batched = jax.vmap(quant)(x, s, zp)  # each row's own 2-D call, blocks of 4 along the last axis
    for i in range(3):
        np.testing.assert_array_equal(batched[i], quant(x[i], s[i], zp[i]))
    deq = jax.vmap(lambda v, a, b: dmljax.dequantize(v, [a, b], quantization_type=ZP))(own, s, zp)
    for i in range(3):
        assert_matches(deq[i], ref_dequantize(own[i], [s[i], zp[i]], ZP), F32)


def test_gradients():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 8)).astype(np.float32) * 3
    s = rng.uniform(0.2, 1.0, (2, 2)).astype(np.float32)
    zp = q(rng.integers(-8, 8, (1, 8)), DataType.INT4)
    # QUANTIZE: an integer output; its cotangent is float0 and the float inputs get zeros
    y, vjp = jax.vjp(lambda v, a: dmljax.quantize(v, [a, zp], quantization_type=ZP), x, s)
    dx, ds = vjp(np.zeros(y.shape, jax.dtypes.float0))
    assert dx.dtype == np.float32 and ds.dtype == np.float32 and not np.asarray(dx).any() and not np.asarray(ds).any()
    g = jax.grad(lambda v, a: dmljax.quantize(v, [a], quantization_type="SCALE",
                                              output_data_type="INT8").astype(jnp.float32).sum(), argnums=(0, 1))(x, s)
    assert not np.asarray(g[0]).any() and not np.asarray(g[1]).any()
    # DEQUANTIZE: dScale is each block's sum of (input - zero_point) * dY; the integers get float0
    v = q(rng.integers(-8, 8, (2, 8)), DataType.INT4)
    dy = rng.standard_normal((2, 8)).astype(np.float32)
    for scale in (s, s[:, :1], np.broadcast_to(s[:, :1], (2, 8))):
        _, vjp = jax.vjp(lambda a: dmljax.dequantize(v, [a, zp], quantization_type=ZP), scale)
        (got,) = vjp(dy)
        want = _dequantize_grad(dy, v, [scale, zp], ZP)[1][0]
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6, atol=1e-5)
    grads = jax.grad(lambda a, b, c: dmljax.dequantize(a, [b, c], quantization_type=ZP).sum(),
                     argnums=(0, 1, 2), allow_int=True)(v, s, zp)
    assert grads[0].dtype == jax.dtypes.float0 and grads[2].dtype == jax.dtypes.float0
    check_grads(lambda a: dmljax.dequantize(v, [a, zp], quantization_type=ZP), (s,), order=1,
                              modes=("fwd", "rev"), eps=1e-3, atol=1e-2, rtol=1e-2)


def test_compile_operator_with_4_bit_buffers():
    # the page's packing end to end: a UINT4 input of 5 elements in 3 bytes, an odd INT4 output
    op = dmljax.compile_operator("DEQUANTIZE", {
        "InputTensor": {"DataType": "UINT4", "Sizes": [1, 5]},
        "QuantizationType": "DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT",
        "QuantizationTensors": [{"DataType": "FLOAT32", "Sizes": [1, 1]},
                                {"DataType": "UINT4", "Sizes": [1, 5], "Strides": [0, 0]}],
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 5]}})
    out = op(InputTensor=np.array([0x21, 0x43, 0x05, 0xFF], np.uint8),
             QuantizationTensors=[np.array([0.5], np.float32), np.array([0x03, 0, 0, 0], np.uint8)],
             OutputTensor=np.zeros(5, np.float32))["OutputTensor"]
    assert np.asarray(out).tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    op = dmljax.compile_operator("QUANTIZE", {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [5]},
        "QuantizationType": "SCALE",
        "QuantizationTensors": [{"DataType": "FLOAT32", "Sizes": [1]}],
        "OutputTensor": {"DataType": "INT4", "Sizes": [5]}})
    out = op(InputTensor=np.array([1, 2, 3, -4, -5], np.float32), QuantizationTensors=[np.ones(1, np.float32)],
             OutputTensor=np.full(4, 0xEE, np.uint8))["OutputTensor"]
    assert [hex(b) for b in np.asarray(out)] == ["0x21", "0xc3", "0xeb", "0xee"]  # the tail nibble kept
