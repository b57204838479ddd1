"""ELEMENT_WISE_QUANTIZE_LINEAR by hand: ONNX's backend node tests for QuantizeLinear mapped onto the
operator as ONNX Runtime's DirectML provider maps them (per-axis and per-block scales broadcast to
the input's shape); every FLOAT16 input and a sweep of FLOAT32 and INT32 ones against the exact
reference; halves, saturation, NaN and infinities; scales of 0, NaN and inf read at call time
(refused) and traced (the documented values); zero points per tensor, per axis and per block, and
absent; the shared division's correct rounding; jit, grad and vmap."""

import importlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.linear_quantization import divide
from tests.reference.quantization.quantize_linear import element_wise_quantize_linear as reference

op = dmljax.element_wise_quantize_linear
F32, F16 = np.float32, np.float16


def _onnx_cases(op_type: str, module: str) -> list:
    """ONNX's node tests of ``op_type``, built offline from ONNX's own case module (importing the
    one module registers its cases, in a third of a second; collect_testcases builds every
    operator's, in seconds): the single-node models."""
    onnx_node = pytest.importorskip("onnx.backend.test.case.node")
    importlib.import_module(f"{onnx_node.__name__}.{module}")
    cases = getattr(onnx_node, "_NodeTestCases", None)
    if cases is None:  # an ONNX without the registry: the slower public way
        cases = onnx_node.collect_testcases(op_type)
    return [c for c in cases if [n.op_type for n in c.model.graph.node] == [op_type]]


def _attrs(node) -> dict:
    import onnx
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _per_element(v, shape, axis, block_size):
    """An ONNX scale or zero point as DirectML takes it: broadcast to the input's shape (a scalar
    or one element: per tensor; 1-D of the axis' length: per axis; the input's rank with the axis
    divided in blocks: per block, each repeated over its block)."""
    v = np.asarray(v)
    axis = axis % len(shape)
    if v.size == 1:
        return np.broadcast_to(v.reshape(()), shape)
    if v.ndim == 1:
        return np.broadcast_to(v.reshape([-1 if i == axis else 1 for i in range(len(shape))]), shape)
    return np.repeat(v, block_size, axis=axis).take(np.arange(shape[axis]), axis=axis)


def _onnx_type(value_info) -> str:
    """An ONNX graph input's or output's element type (ONNX's names: FLOAT is FLOAT32)."""
    import onnx
    return onnx.TensorProto.DataType.Name(value_info.type.tensor_type.elem_type)


def _why_not(case) -> str:
    """Why an ONNX case cannot be a DirectML call (the tables' types), or ''."""
    graph = case.model.graph
    x, scale, out = _onnx_type(graph.input[0]), _onnx_type(graph.input[1]), _onnx_type(graph.output[0])
    if out not in ("INT8", "UINT8"):
        return f"an output of {out}, where the tables list INT8 and UINT8"
    if x not in ("FLOAT", "FLOAT16", "INT32"):
        return f"an input of {x}, where the tables list FLOAT32, FLOAT16 and INT32"
    want = "FLOAT" if x == "INT32" else x
    if scale != want:
        return f"a {scale} scale for a {x} input, where ScaleTensor must be {'FLOAT32' if want == 'FLOAT' else want}"
    return ""


QUANTIZE_CASES = _onnx_cases("QuantizeLinear", "quantizelinear")


@pytest.mark.parametrize("case", QUANTIZE_CASES,
                         ids=lambda c: c.name + (f" (not DirectML: {_why_not(c)})" if _why_not(c) else ""))
def test_onnx_node_tests(case):
    reason = _why_not(case)
    if reason:
        pytest.skip(f"{case.name} is not a DirectML call: {reason}")
    (inputs, outputs), = case.data_sets
    node = case.model.graph.node[0]
    attrs = _attrs(node)
    x = np.asarray(inputs[0])
    axis, block = attrs.get("axis", 1), attrs.get("block_size", 0)
    scale = np.ascontiguousarray(_per_element(inputs[1], x.shape, axis, block))
    zp = None
    if len(inputs) > 2:
        zp = np.ascontiguousarray(_per_element(inputs[2], x.shape, axis, block))
    want = np.asarray(outputs[0])
    got = op(x, scale, zp, output_data_type=None if zp is not None else want.dtype.name.upper())
    np.testing.assert_array_equal(np.asarray(got), want, err_msg=case.name)
    assert got.dtype == want.dtype


def test_onnx_node_tests_are_found():
    names = {c.name for c in QUANTIZE_CASES}
    assert {"test_quantizelinear", "test_quantizelinear_axis", "test_quantizelinear_blocked_asymmetric"} <= names
    assert sum(not _why_not(c) for c in QUANTIZE_CASES) >= 3


# ---------------------------------------------------------------------------------- sweeps
ALL_F16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(F16)


@pytest.mark.parametrize("out", ["INT8", "UINT8"])
@pytest.mark.parametrize("half", [False, True], ids=["float32-computation", "half-computation"])
def test_every_float16_input(out, half):
    x = ALL_F16
    for s in (1.0, 0.5, 3.0, 1 / 3, 2.0**-10, 1000.0, 6e-5):
        for z in ((0, -128, 127, -3) if out == "INT8" else (0, 255, 128, 7)):
            scale = np.full(x.shape, s, F16)
            zp = np.full(x.shape, z, np.dtype(out.lower()))
            got = np.asarray(op(x, scale, zp, allow_half_precision_computation=half))
            want = reference(x, scale, zp, half=half)[0]
            bad = got != want
            assert not bad.any(), (s, z, x[bad][:5], got[bad][:5], want[bad][:5])


def test_float32_sweep(rng):
    # random bit patterns (every exponent), and values a hair either side of each half-integer
    bits = rng.integers(0, 2**32, 1 << 18, dtype=np.uint64).astype(np.uint32).view(F32)
    k = np.arange(-300, 300).astype(F32) + F32(0.5)
    for s in (F32(1), F32(0.1), F32(3), F32(1 / 3), F32(0.019607844), F32(2.0**-20), F32(7e3)):
        near = (k * s).astype(F32)
        x = np.concatenate([bits, near, np.nextafter(near, F32(np.inf)), np.nextafter(near, F32(-np.inf))])
        for zt, z in ((np.int8, -5), (np.uint8, 128)):
            scale, zp = np.full(x.shape, s, F32), np.full(x.shape, z, zt)
            got = np.asarray(op(x, scale, zp))
            with np.errstate(invalid="ignore"):  # NaN payloads read in float64
                want = reference(x, scale, zp)[0]
            assert (got == want).all(), (s, z, x[got != want][:5], got[got != want][:5], want[got != want][:5])


def test_int32_inputs_are_rounded_to_float32_first():
    x = np.array([0, 1, -1, 255, 2**24, 2**24 + 1, 2**24 + 3, -(2**31), 2**31 - 1, 383, 385, 384], np.int32)
    s = np.full(x.shape, 2**17, F32)
    got = np.asarray(op(x, s, np.zeros(x.shape, np.int8)))
    assert got.tolist() == reference(x, s, np.zeros(x.shape, np.int8))[0].tolist()
    # 2^24 + 1 is 2^24 in FLOAT32, 2^24 / 2^17 = 128 saturates; 383 / 2^17 is under a half: 0
    assert got[[4, 5, 9]].tolist() == [127, 127, 0]
    h = np.asarray(op(np.array([3, 5, -3, 7], np.int32), np.full(4, 2, F32), np.zeros(4, np.uint8)))
    assert h.tolist() == [2, 2, 0, 4]  # halves to even; -1.5 -> -2 saturates to 0


# ---------------------------------------------------------------------------------- edges
def test_halves_round_to_even_and_saturate():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, -128.5, -129.5, 1e9, -1e9], F32)
    one = np.ones(x.shape, F32)
    assert np.asarray(op(x, one, np.zeros(x.shape, np.int8))).tolist() == [
        0, 2, 2, 0, -2, -2, 126, 127, -128, -128, 127, -128]
    assert np.asarray(op(x, one, np.full(x.shape, 100, np.uint8))).tolist() == [
        100, 102, 102, 100, 98, 98, 226, 228, 0, 0, 255, 0]


def test_nan_and_infinite_inputs():
    x = np.array([np.nan, np.inf, -np.inf, -np.nan, 0.0, -0.0], F32)
    one = np.ones(x.shape, F32)
    assert np.asarray(op(x, one, np.full(x.shape, 5, np.int8))).tolist() == [-128, 127, -128, -128, 5, 5]
    assert np.asarray(op(x.astype(F16), one.astype(F16), np.full(x.shape, 5, np.uint8))).tolist() == [
        0, 255, 0, 0, 5, 5]


@pytest.mark.parametrize("bad,what", [(0.0, "are 0"), (np.nan, "are NaN"), (np.inf, "are infinite"),
                                      (-np.inf, "are infinite"), (1e-40, "are 0")])
def test_a_readable_scale_of_zero_nan_or_inf_is_refused(bad, what):
    x = np.ones(4, F32)
    s = np.array([1, bad, bad, 2], F32)
    with pytest.raises(dmljax.ValidationError) as info:
        op(x, s, np.zeros(4, np.uint8))
    msg = str(info.value)
    assert msg.startswith("element_wise_quantize_linear (DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR) at")
    assert f"ScaleTensor (argument `scale`) holds 2 elements that {what}, the first" in msg and "at [1]" in msg
    if bad == 1e-40:
        assert "a FLOAT32 denormal, which math reads as 0" in msg
    with pytest.raises(dmljax.ValidationError):
        op(x, jnp.asarray(s), np.zeros(4, np.uint8))  # a JAX array outside a trace is read too


def test_a_traced_scale_gives_the_documented_values():
    x = np.array([3.0, -3.0, 0.0, np.nan, np.inf], F32)
    zp = np.full(x.shape, 10, np.uint8)
    f = jax.jit(lambda s: op(x, s, zp))
    # x / 0: +-inf saturates to Max or Min; 0 / 0 and NaN: Min
    assert np.asarray(f(np.zeros(x.shape, F32))).tolist() == [255, 0, 0, 0, 255]
    assert np.asarray(f(np.full(x.shape, np.nan, F32))).tolist() == [0] * 5
    # an infinite scale: x / inf = +-0 gives the zero point; inf / inf is NaN: Min
    assert np.asarray(f(np.full(x.shape, np.inf, F32))).tolist() == [10, 10, 10, 0, 0]
    # a FLOAT32 denormal scale reads as 0
    assert np.asarray(f(np.full(x.shape, 1e-40, F32))).tolist() == [255, 0, 0, 0, 255]


def test_zero_points_per_tensor_axis_and_block(rng):
    x = (rng.standard_normal((2, 6, 4)) * 40).astype(F32)
    per_axis_scale = np.array([0.5, 1, 2, 4, 0.25, 3], F32).reshape(1, 6, 1)
    per_axis_zp = np.array([0, 10, -10, 127, -128, 3], np.int8).reshape(1, 6, 1)
    block_scale = np.repeat(np.array([0.5, 2, 7], F32).reshape(1, 3, 1), 2, axis=1)
    block_zp = np.repeat(np.array([1, -1, 50], np.int8).reshape(1, 3, 1), 2, axis=1)
    for scale, zp in ((np.float32(1.5), np.int8(-7)), (per_axis_scale, per_axis_zp), (block_scale, block_zp)):
        s, z = np.broadcast_to(scale, x.shape), np.broadcast_to(zp, x.shape)  # zero strides
        got = np.asarray(op(x, s, z))
        assert (got == reference(x, s, z)[0]).all()
        # the same broadcast made inside a caller's jit (XLA sees the broadcast divisor)
        jitted = jax.jit(lambda v, sc, zz: op(v, jnp.broadcast_to(sc, v.shape), jnp.broadcast_to(zz, v.shape)))
        assert (np.asarray(jitted(x, np.asarray(scale), np.asarray(zp))) == got).all()


def test_the_zero_point_is_optional_from_6_2():
    x = np.array([-2.0, 0.0, 2.0, 300.0], F32)
    s = np.ones(4, F32)
    assert np.asarray(op(x, s)).tolist() == [0, 0, 2, 255]  # UINT8 by default, zero point 0
    out = op(x, s, output_data_type="INT8")
    assert out.dtype == np.int8 and np.asarray(out).tolist() == [-2, 0, 2, 127]
    assert op(x, s, feature_level="6.2").dtype == np.uint8
    with pytest.raises(dmljax.ValidationError, match=r"ZeroPointTensor \(argument `zero_point`\) is missing; "
                       r"required before DML_FEATURE_LEVEL_6_2"):
        op(x, s, feature_level="6.1")
    with pytest.raises(dmljax.ValidationError, match="OutputTensor .* is INT8, but ZeroPointTensor has DataType UINT8"):
        op(x, s, np.zeros(4, np.uint8), output_data_type="INT8")


def test_types_by_level():
    x4 = np.ones((1, 1, 2, 2), F32)
    assert op(x4, np.ones_like(x4), np.zeros(x4.shape, np.uint8), feature_level="1.0").dtype == np.uint8
    with pytest.raises(dmljax.ValidationError, match="ZeroPointTensor .* has DataType INT8; supported: UINT8"):
        op(x4, np.ones_like(x4), np.zeros(x4.shape, np.int8), feature_level="1.0")
    with pytest.raises(dmljax.ValidationError, match="InputTensor .* has DataType INT32; supported: FLOAT32"):
        op(x4.astype(np.int32), np.ones_like(x4), np.zeros(x4.shape, np.uint8), feature_level="2.0")
    with pytest.raises(dmljax.ValidationError, match="has 2 dimensions"):
        op(np.ones((2, 2), F32), np.ones((2, 2), F32), np.zeros((2, 2), np.uint8), feature_level="2.1")
    with pytest.raises(dmljax.ValidationError, match="FLOAT16 is supported from DML_FEATURE_LEVEL_6_0"):
        op(x4.astype(F16), x4.astype(F16), np.zeros(x4.shape, np.uint8), feature_level="3.0")
    # the scale's DataType follows the input's (FLOAT32 for INT32)
    with pytest.raises(dmljax.ValidationError, match="ScaleTensor .* has DataType FLOAT32 for an InputTensor of "
                       "FLOAT16; FLOAT16"):
        op(x4.astype(F16), x4, np.zeros(x4.shape, np.uint8))
    with pytest.raises(dmljax.ValidationError, match="ScaleTensor .* has DataType FLOAT16 for an InputTensor of INT32"):
        op(x4.astype(np.int32), x4.astype(F16), np.zeros(x4.shape, np.uint8))
    # INT4 and UINT4 are not in this operator's tables
    import ml_dtypes
    with pytest.raises(dmljax.ValidationError, match="ZeroPointTensor .* has DataType INT4; supported: INT8, UINT8"):
        op(np.ones(3, F32), np.ones(3, F32), np.zeros(3, ml_dtypes.int4))


# ---------------------------------------------------------------------------------- transformations
@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_jit_grad_and_vmap(rng):
    x = (rng.standard_normal((3, 5)) * 50).astype(F32)
    s = np.full(x.shape, 0.7, F32)
    z = np.full(x.shape, 3, np.int8)
    eager = np.asarray(op(x, s, z))
    assert (np.asarray(jax.jit(op)(x, s, z)) == eager).all()
    assert (np.asarray(jax.vmap(op)(x, s, z)) == eager).all()
    assert (np.asarray(jax.vmap(op, in_axes=(1, 1, 1), out_axes=1)(x, s, z)) == eager).all()
    # an integer output: zeros for the float inputs, float0 for the zero point
    gx, gs, gz = jax.grad(lambda *a: op(*a).astype(F32).sum(), argnums=(0, 1, 2), allow_int=True)(x, s, z)
    assert not np.asarray(gx).any() and not np.asarray(gs).any() and gz.dtype == jax.dtypes.float0
    _, vjp = jax.vjp(op, x, s, z)
    dx, ds, dz = vjp(np.zeros(x.shape, jax.dtypes.float0))
    assert dz.dtype == jax.dtypes.float0 and not np.asarray(dx).any()


# ---------------------------------------------------------------------------------- the division
def test_the_shared_division_is_correctly_rounded(rng):
    # XLA rewrites a division by a constant or a broadcast scalar into a product with the
    # reciprocal (two roundings), and its GPU division is approximate: divide() is neither
    n = 1 << 14

    def bits(lo, hi):
        e = rng.integers(lo, hi, n)
        return ((rng.integers(0, 2**23, n) | (e << 23) | (rng.integers(0, 2, n) << 31)).astype(np.uint32)).view(F32)

    a, b = bits(1, 255), bits(1, 255)  # every normal exponent: overflow to inf and denormal quotients too

    def same(got, want):
        """Equal, but for a denormal quotient, which the backend may flush to 0."""
        tiny = np.abs(want) < np.finfo(F32).tiny
        return (got[~tiny] == want[~tiny]).all() and ((got[tiny] == want[tiny]) | (got[tiny] == 0)).all()

    with np.errstate(over="ignore", under="ignore"):
        want = a / b
        assert same(np.asarray(jax.jit(divide)(a, b)), want)
        assert np.isinf(want).any() and (np.abs(want) < np.finfo(F32).tiny).any()
        for s in (F32(0.019607844), F32(255)):  # a broadcast scalar, a constant
            assert same(np.asarray(jax.jit(lambda v: divide(v, s))(a)), a / s)
            # unbatched under vmap, the scale is broadcast after divide() sees it
            assert same(np.asarray(jax.vmap(lambda v: divide(v, s))(a.reshape(4, -1))).ravel(), a / s)
    s = F32(0.019607844)
    assert float(jax.jit(lambda v: divide(v, s))(F32(-2.5))) == F32(-2.5) / s == F32(-127.49999)
    g = jax.grad(lambda u, v: divide(u, v), argnums=(0, 1))(F32(3), F32(2))
    assert [float(g[0]), float(g[1])] == [0.5, -0.75]


def test_the_division_widens_a_per_tensor_scale_before_it_broadcasts():
    # On the CPU the quotient's FLOAT64 divisor is the scale widened, then broadcast: an imported
    # model's call (onnx/prepare.py) then keeps one FLOAT64 number, not a FLOAT64 copy of the
    # activations' shape, and its fused program computes the broadcast.
    x = np.zeros((16, 64), F32)
    text = jax.jit(lambda v, s: divide(v, s)).trace(x, F32(0.05)).lower(lowering_platforms=("cpu",)).as_text()
    widened = re.findall(r"stablehlo.convert %\S+ : \(tensor<([0-9x]*)f32>\) -> tensor<[0-9x]*f64>", text)
    assert sorted(widened) == ["", "16x64x"], widened  # the scale, then the activations
