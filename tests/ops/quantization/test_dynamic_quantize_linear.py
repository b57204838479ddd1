"""DYNAMIC_QUANTIZE_LINEAR by hand: ONNX's backend node tests for DynamicQuantizeLinear; every FLOAT16
value within several ranges and random FLOAT32 tensors against the exact reference, for UINT8 and
INT8; the range widened to 0, constant, all-zero, NaN, infinite and tiny inputs; the zero point's
halves; the scale's gradient; jit and vmap."""

import importlib

import jax
import numpy as np
import pytest

import dmljax
from tests import tiers
from tests.reference.quantization.dynamic_quantize_linear import dynamic_quantize_linear as reference
from tests.reference.quantization.dynamic_quantize_linear import scale_grad

op = dmljax.dynamic_quantize_linear
F32, F16 = np.float32, np.float16


def _onnx_cases(op_type: str, module: str) -> list:
    """ONNX's node tests of ``op_type``, built offline from ONNX's own case module (importing the
    one module registers its cases, in a third of a second; collect_testcases builds every
    operator's, in seconds): the single-node models (the ``_expanded`` ones run ONNX's function
    body on the same data)."""
    onnx_node = pytest.importorskip("onnx.backend.test.case.node")
    importlib.import_module(f"{onnx_node.__name__}.{module}")
    cases = getattr(onnx_node, "_NodeTestCases", None)
    if cases is None:
        cases = onnx_node.collect_testcases(op_type)
    return [c for c in cases if [n.op_type for n in c.model.graph.node] == [op_type]]


CASES = _onnx_cases("DynamicQuantizeLinear", "dynamicquantizelinear")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_onnx_node_tests(case):
    (inputs, outputs), = case.data_sets
    y, scale, zero_point = (np.asarray(o) for o in op(np.asarray(inputs[0])))
    want_y, want_scale, want_zp = (np.asarray(o) for o in outputs)
    np.testing.assert_array_equal(y, want_y, err_msg=case.name)
    assert scale.shape == (1,) * y.ndim and zero_point.shape == (1,) * y.ndim  # ONNX's are scalars
    assert scale.reshape(()).view(np.uint32) == want_scale.astype(F32).view(np.uint32), case.name
    assert zero_point.reshape(()) == want_zp and zero_point.dtype == want_zp.dtype


def test_onnx_node_tests_are_found():
    assert {c.name for c in CASES} >= {"test_dynamicquantizelinear", "test_dynamicquantizelinear_max_adjusted",
                                       "test_dynamicquantizelinear_min_adjusted"}


def _check(x, out="UINT8"):
    got = op(x, output_data_type=out)
    (want,) = reference(x, output_data_type=out)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, k
        assert (np.asarray(g).view(np.uint8 if g.dtype.itemsize == 1 else np.uint32)
                == w.view(np.uint8 if w.dtype.itemsize == 1 else np.uint32)).all(), (k, out, x.ravel()[:8])
    return got


# ---------------------------------------------------------------------------------- sweeps
ALL_F16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(F16)


RANGES = [(-1.0, 1.0), (0.0, 3.0), (-2.5, 0.0), (-100.0, 7.0), (-0.001, 60000.0)]


@pytest.mark.parametrize("out", tiers.fast_sample(["UINT8", "INT8"]))
def test_every_float16_value_in_a_range(out):
    # one tensor per range: every FLOAT16 value from lo to hi (padded with lo, which changes no
    # extreme), quantized on its own (vmap: one compile); a FLOAT16 input is its FLOAT32 widening
    with np.errstate(invalid="ignore"):
        rows = [ALL_F16[(ALL_F16 >= lo) & (ALL_F16 <= hi)] for lo, hi in RANGES]
    n = max(len(r) for r in rows) + 1
    x = np.stack([np.concatenate([r, np.full(n - len(r), lo, F16)]) for r, (lo, hi) in zip(rows, RANGES)])
    for xs in (x, x.astype(F32)):
        ys, ss, zs = jax.vmap(lambda v: op(v, output_data_type=out))(xs)
        for i in range(len(RANGES)):
            (want,) = reference(xs[i], out)
            assert (np.asarray(ys[i]) == want[0]).all(), RANGES[i]
            assert np.asarray(ss[i]).view(np.uint32) == want[1].view(np.uint32) and np.asarray(zs[i]) == want[2]


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
@pytest.mark.parametrize("out", ["UINT8", "INT8"])
def test_random_float32_tensors(out, rng):
    # 48 tensors of magnitudes 2^-20 to 2^20, a quarter all positive (InputMin widened to 0) and a
    # quarter all negative (InputMax widened to 0), each quantized on its own (vmap: one compile)
    x = (rng.standard_normal((48, 3, 4)) * np.exp2(rng.uniform(-20, 20, (48, 1, 1)))).astype(F32)
    x[1::4], x[2::4] = np.abs(x[1::4]), -np.abs(x[2::4])
    ys, ss, zs = jax.vmap(lambda v: op(v, output_data_type=out))(x)
    for i in range(len(x)):
        (want,) = reference(x[i], out)
        assert (np.asarray(ys[i]) == want[0]).all(), i
        assert np.asarray(ss[i]).view(np.uint32) == want[1].view(np.uint32) and np.asarray(zs[i]) == want[2], i
    _check(x[0], out)


# ---------------------------------------------------------------------------------- edges
@pytest.mark.parametrize("out,lo,hi", [("UINT8", 0, 255), ("INT8", -128, 127)])
def test_empty_range_gives_scale_one(out, lo, hi):
    for x in ([0.0] * 4, [0.0, -0.0, 0.0, -0.0], [np.nan] * 4, [1e-40, -1e-40, 0.0, 0.0]):  # denormals read as 0
        y, s, z = _check(np.array(x, F32), out)
        assert float(s.reshape(())) == 1.0 and int(z.reshape(())) == lo and (np.asarray(y) == lo).all()
    # a range whose scale is below FLOAT32's normal numbers is empty too (no NaN, no infinity)
    tiny = np.array([3.0e-37, 0.0, 0.0, 1e-38], F32)
    y, s, z = _check(tiny, out)
    assert float(s.reshape(())) == 1.0 and (np.asarray(y) == lo).all()


@pytest.mark.parametrize("out,lo,hi", [("UINT8", 0, 255), ("INT8", -128, 127)])
def test_a_constant_input_spans_zero_to_it(out, lo, hi):
    y, s, z = _check(np.full(5, 2.55, F32), out)  # [0, 2.55]: scale 0.01, zero point Min, values Max
    assert int(z.reshape(())) == lo and (np.asarray(y) == hi).all()
    y, s, z = _check(np.full(5, -2.55, F32), out)  # [-2.55, 0]: zero point Max, values Min
    assert int(z.reshape(())) == hi and (np.asarray(y) == lo).all()


@pytest.mark.parametrize("out,zp", [("UINT8", 2), ("INT8", -126)])
def test_the_zero_point_rounds_halves_to_even(out, zp):
    # InputMin = -0.15625 and a range of 255/16: the scale is 1/16 exactly and Min - InputMin /
    # OutputScale is Min + 2.5, which rounds to the even Min + 2
    x = np.array([-0.15625, 15.78125, 1.0], F32)
    y, s, z = _check(x, out)
    assert float(s.reshape(())) == 0.0625 and int(z.reshape(())) == zp


def test_nan_is_skipped_and_infinity_saturates():
    x = np.array([np.nan, -1.0, 1.0, np.nan], F32)
    y, s, z = _check(x)
    assert float(s.reshape(())) == np.float32(2) / np.float32(255)  # the range of -1 and 1
    assert np.asarray(y)[[0, 3]].tolist() == [0, 0]  # NaN elements quantize to Min
    for x in (np.array([np.inf, 1.0, -1.0], F32), np.array([-np.inf, 1.0], F32), np.array([3e38, -3e38], F32)):
        y, s, z = _check(x, "INT8")
        assert float(s.reshape(())) == np.inf and int(z.reshape(())) == -128 and (np.asarray(y) == -128).all()


def test_refused_before_4_0_and_outside_the_table():
    with pytest.raises(dmljax.ValidationError, match="is not available at DML_FEATURE_LEVEL_3_1"):
        op(np.ones(3, F32), feature_level="3.1")
    with pytest.raises(dmljax.ValidationError, match="OutputTensor .* has DataType INT16; supported: INT8, UINT8"):
        op(np.ones(3, F32), output_data_type="INT16")
    with pytest.raises(dmljax.ValidationError, match="InputTensor .* has DataType INT32"):
        op(np.ones(3, np.int32))


# ---------------------------------------------------------------------------------- transformations
X = np.array([[0.5, -3.0, 2.0], [2.0, -3.0, 1.0]], F32)  # ties: the first maximum and the first minimum


@pytest.mark.parametrize("out", ["UINT8", "INT8"])
def test_the_scale_gradient(out):
    grad = jax.jit(jax.grad(lambda v: op(v, output_data_type=out)[1].sum()))
    for x in (X, np.abs(X), -np.abs(X), 0 * X):
        np.testing.assert_allclose(np.asarray(grad(x)), scale_grad(1.0, x, out), rtol=1e-6, atol=0)
    g = np.asarray(grad(X))
    assert g[0, 2] == pytest.approx(1 / 255) and g[0, 1] == pytest.approx(-1 / 255) and np.count_nonzero(g) == 2


def test_the_scale_gradient_in_forward_mode():
    t = jax.jvp(lambda v: op(v)[1], (X,), (np.ones_like(X),))[1]
    assert float(np.asarray(t).sum()) == pytest.approx(float(scale_grad(1.0, X).sum()), abs=1e-7)


@pytest.mark.slow  # 9 s of gradient traces
def test_the_integer_outputs_pass_nothing_back():
    gy = jax.grad(lambda v: op(v)[0].astype(F32).sum() + op(v)[2].astype(F32).sum())(X)
    assert not np.asarray(gy).any()


def test_a_float16_input_gets_a_float16_gradient():
    assert jax.grad(lambda v: op(v)[1].sum())(X.astype(F16)).dtype == F16


def test_jit(rng):
    x = (rng.standard_normal((4, 6)) * 3).astype(F32)
    eager = op(x, output_data_type="INT8")
    jitted = jax.jit(lambda v: op(v, output_data_type="INT8"))(x)
    for a, b in zip(eager, jitted):
        assert (np.asarray(a) == np.asarray(b)).all()


def test_the_forward_pass_takes_the_range_by_reductions():
    # The forward program finds InputMax and InputMin by two reductions: no arg-max (a reduction
    # of value and index pairs) and no gather of the element it found (the derivative's, which
    # test_the_scale_gradient checks).
    x = np.zeros((2, 48), F32)
    text = jax.jit(op).lower(x).compile().as_text()
    assert "gather(" not in text and not any("(f32[], s32[])" in line for line in text.splitlines() if "reduce" in line)
