"""MATRIX_MULTIPLY_INTEGER, MATRIX_MULTIPLY_INTEGER_TO_FLOAT and QUANTIZED_LINEAR_MATRIX_MULTIPLY by
hand: ONNX's backend node tests of MatMulInteger and QLinearMatMul, every INT8 / UINT8 value pair
through one-element products against the references, zero points per tensor / row / column and
their layouts, the INT32 bound, halves and saturation, scales of 0, NaN and infinity (known at the
call and traced), the output's DataType, the float path of MATRIX_MULTIPLY_INTEGER_TO_FLOAT, and
jit, grad and vmap."""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType
from tests import tiers
from tests.compare import assert_matches
from tests.reference.matrix import integer_matmul as ref

I8, U8 = np.int8, np.uint8
TYPES = [(I8, I8), (I8, U8), (U8, I8), (U8, U8)]
MMI = dmljax.matrix_multiply_integer
I2F = dmljax.matrix_multiply_integer_to_float
QLM = dmljax.quantized_linear_matrix_multiply


def every(dtype):
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1).astype(dtype)


def f32(*v):
    return np.array(v, np.float32)


def exact(got, want):
    got = np.asarray(got)
    np.testing.assert_array_equal(got.astype(np.int64), np.asarray(want).astype(np.int64))


# ------------------------------------------------------------------------------------ ONNX node tests
_HALF_SCALES = ("FLOAT16 scales: QUANTIZED_LINEAR_MATRIX_MULTIPLY's tables have FLOAT32 scales only (ONNX Runtime's "
                "DirectML provider cannot map these nodes onto it)")
ONNX_NODE_TESTS = {  # ONNX's backend node tests of MatMulInteger and QLinearMatMul: "" or why DirectML cannot run it
    "test_matmulinteger": "",
    **{f"test_qlinearmatmul_{d}_{q}_float32": "" for d in ("2D", "3D") for q in ("uint8", "int8")},
    **{f"test_qlinearmatmul_{d}_{q}_float16": _HALF_SCALES for d in ("2D", "3D") for q in ("uint8", "int8")},
}


@functools.lru_cache(maxsize=None)
def _onnx_cases():
    """ONNX's node tests of MatMulInteger and QLinearMatMul, by name: built once per process, at
    their first use (the collection builds every node test, a few seconds)."""
    onnx_node = pytest.importorskip("onnx.backend.test.case.node")
    with warnings.catch_warnings():  # the collection builds every node test; some warn (overflow, log(0))
        warnings.simplefilter("ignore")
        built = onnx_node.collect_testcases(None)
    return {c.name: c for c in built if {n.op_type for n in c.model.graph.node} & {"MatMulInteger", "QLinearMatMul"}}


@pytest.mark.slow  # builds every ONNX node test (10 s); tests/onnx runs them too
def test_onnx_node_tests_are_the_ones_listed():
    assert set(_onnx_cases()) == set(ONNX_NODE_TESTS)  # a new node test: list it (and map it below)


@pytest.mark.slow  # the first case builds every ONNX node test (5 s); the fast tier keeps the generated cases
@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.skip(reason=why), id=f"{n}-skipped-{why.split(':')[0].replace(' ', '-')}")
    if why else n for n, why in ONNX_NODE_TESTS.items()])
def test_onnx_node_tests(name):
    case = _onnx_cases()[name]
    node = case.model.graph.node[0]
    (inputs, outputs), = case.data_sets
    x = dict(zip(node.input, (np.asarray(v) for v in inputs)))
    if node.op_type == "MatMulInteger":  # A, B, a_zero_point, b_zero_point: as DirectML's tensors
        got = MMI(x["A"], x["B"], x.get("a_zero_point"), x.get("b_zero_point"))
    else:  # a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
        got = QLM(x["a"], x["a_scale"], x["b"], x["b_scale"], x["y_scale"], x["a_zero_point"], x["b_zero_point"],
                  x["y_zero_point"])
    want = np.asarray(outputs[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


# ------------------------------------------------------------------------------------ exhaustive
@pytest.mark.parametrize("ta,tb", tiers.fast_sample(TYPES, keep=2, key="pairs"), ids=lambda t: np.dtype(t).name)
def test_every_value_pair(ta, tb):
    # Every A value as a row (M = 256, K = 1) against every B value as a column (N = 256): 65,536
    # one-element products, without zero points, with zero points per tensor at the types'
    # extremes, and per row / per column.
    a, b = every(ta)[:, None], every(tb)[None, :]
    exact(MMI(a, b), ref.exact_sum(a, b))
    for za, zb in ((np.iinfo(ta).max, np.iinfo(tb).min), (np.iinfo(ta).min, np.iinfo(tb).max), (0, 1)):
        za, zb = np.array([za], ta), np.array([zb], tb)
        exact(MMI(a, b, za, zb), ref.exact_sum(a, b, za, zb))
    za, zb = every(ta)[::-1].copy(), np.roll(every(tb), 7)  # per row, per column: 1-D, {M} and {N}
    exact(MMI(a, b, za, zb), ref.exact_sum(a, b, za, zb))


@pytest.mark.slow
@pytest.mark.parametrize("ta,tb", TYPES, ids=lambda t: np.dtype(t).name)
def test_every_value_and_zero_point(ta, tb):
    # Every (a, za) pair of A's type as a row with its per-row zero point, against every b with a
    # per-column zero point: all 2^16 x 2^8 (a - za) * (b - zb) products.
    pairs = np.stack(np.meshgrid(every(ta), every(ta), indexing="ij"), -1).reshape(-1, 2)
    a, za = pairs[:, :1], pairs[:, 1:]
    b, zb = every(tb)[None, :], np.roll(every(tb), 101)[None, :]
    exact(MMI(a, b, za, zb), (a.astype(np.int64) - za) * (b.astype(np.int64) - zb))


@pytest.mark.parametrize("ta,tb", tiers.fast_sample(TYPES, keep=2, key="requantized"), ids=lambda t: np.dtype(t).name)
def test_requantization_of_every_value_pair(ta, tb):
    # Scales 1, 1 and 2: a * b / 2 lands on every half, rounded to even; scales that saturate;
    # scales per row and column with the output's zero point per row.
    a, b = every(ta)[:, None], every(tb)[None, :]
    for sa, sb, sy, zy in ((1.0, 1.0, 2.0, 0), (1.0, 1.0, 2.0, 3), (0.5, 0.25, 0.125, -7), (0.01, 0.02, 0.07, 5),
                           (1.0, 1.0, 0.75, 0)):
        for out in (I8, U8):
            zero = np.array([np.clip(zy, *[np.iinfo(out).min, np.iinfo(out).max])], out)
            got = QLM(a, f32(sa), b, f32(sb), f32(sy), None, None, zero)
            want, = ref.quantized_linear_matrix_multiply(a, f32(sa), b, f32(sb), f32(sy), None, None, zero)
            exact(got, want)
    halves = QLM(a, f32(1), b, f32(1), f32(2), output_data_type="INT8")
    q = (a.astype(np.int64) * b) / 2
    exact(halves, np.clip(np.round(q), -128, 127))  # NumPy's round is halves to even too
    assert (np.abs(q - np.floor(q) - 0.5) < 1e-9).sum() > 10000  # half of the products are odd
    za, zb = np.array([[3]], ta), np.array([[np.iinfo(tb).max]], tb)  # all six of one DimensionCount
    sa = np.linspace(0.01, 0.02, 256, dtype=np.float32)[:, None]
    sb = np.linspace(0.03, 0.01, 256, dtype=np.float32)[None, :]
    sy, zy = np.linspace(0.1, 1.0, 256, dtype=np.float32)[:, None], np.arange(256).astype(I8)[:, None]
    got = QLM(a, sa, b, sb, sy, za, zb, zy)
    want, = ref.quantized_linear_matrix_multiply(a, sa, b, sb, sy, za, zb, zy)
    exact(got, want)


@pytest.mark.parametrize("t", [I8, U8], ids=lambda t: np.dtype(t).name)
def test_to_float_of_every_value_pair(t):
    # A and B share one type here; scales of 1 make each output the exact product.
    a, b = every(t)[:, None], every(t)[None, :]
    got = I2F(a, f32(1), b, f32(1))
    np.testing.assert_array_equal(np.asarray(got), a.astype(np.float32) * b)
    za, zb = np.array([np.iinfo(t).max], t), np.array([np.iinfo(t).min], t)
    got = I2F(a, f32(0.5), b, f32(0.25), za, zb, jnp.full((256, 256), 1.0, jnp.float32))
    want, = ref.matrix_multiply_integer_to_float(a, f32(0.5), b, f32(0.25), za, zb, np.ones((256, 256), np.float32))
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.float32))
    half = I2F(a, np.array([1], np.float16), b, np.array([1], np.float16))
    assert half.dtype == np.float16
    np.testing.assert_array_equal(np.asarray(half), (a.astype(np.float64) * b).astype(np.float16))


# ------------------------------------------------------------------------------------ zero points
@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_zero_point_layouts():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (2, 3, 4, 5)).astype(I8)
    b = rng.integers(0, 256, (2, 3, 5, 6)).astype(U8)
    want = ref.exact_sum(a, b, np.arange(4).astype(I8), np.arange(6).astype(U8))
    for za, zb in ((np.arange(4).astype(I8), np.arange(6).astype(U8)),  # {M}, {N}
                   (np.arange(4).astype(I8)[:, None], np.arange(6).astype(U8)[None, :]),  # {M, 1}, {1, N}
                   (np.arange(4).astype(I8).reshape(1, 1, 4, 1), np.arange(6).astype(U8).reshape(1, 1, 1, 6))):
        exact(MMI(a, b, za, zb), want)
        exact(MMI(a, b, za), ref.exact_sum(a, b, za))
        exact(MMI(a, b, b_zero_point=zb), ref.exact_sum(a, b, None, zb))
    exact(MMI(a, b, np.array([[[[5]]]], I8), np.array([9], U8)), ref.exact_sum(a, b, np.array([5]), np.array([9])))
    exact(MMI(a, b, feature_level="2.1"), ref.exact_sum(a, b))
    with pytest.raises(dmljax.ValidationError) as e:
        MMI(a, b, np.arange(4).astype(I8)[None, :], np.arange(6).astype(U8)[:, None])
    msg = str(e.value)
    assert ("AZeroPointTensor (argument `a_zero_point`) has Sizes [1, 4]; per tensor or per row: "
            "{..., 1, 1, 1}, {..., 1, M, 1} with M = 4, ones elsewhere.") in msg, msg
    assert "BZeroPointTensor (argument `b_zero_point`) has Sizes [6, 1]; per tensor or per column" in msg, msg
    with pytest.raises(dmljax.ValidationError, match=r"AZeroPointTensor \(argument `a_zero_point`\) has Sizes \[2, 1, 4, 1\]"):
        MMI(a, b, np.zeros((2, 1, 4, 1), I8))  # per batch: not one of the page's layouts
    with pytest.raises(dmljax.ValidationError, match=r"ATensor \(argument `a`\) and AZeroPointTensor \(argument `a_zero_point`\) have DataTypes INT8, UINT8"):
        MMI(a, b, np.zeros(4, U8))  # A's zero point has A's type
    # BZeroPointTensor with one dimension: from DML_FEATURE_LEVEL_5_2 (2 to 4 at 4.0)
    with pytest.raises(dmljax.ValidationError, match=r"BZeroPointTensor \(argument `b_zero_point`\) has 1 dimension"):
        MMI(a, b, None, np.zeros(6, U8), feature_level="4.0")
    exact(MMI(a, b, None, np.zeros((1, 6), U8), feature_level="4.0"), ref.exact_sum(a, b))


def test_shape_rules():
    a, b = np.ones((2, 3, 4, 5), I8), np.ones((2, 3, 5, 6), I8)
    with pytest.raises(dmljax.ValidationError, match=r"BTensor \(argument `b`\) has Sizes \[2, 3, 4, 6\]: K = 4; "
                       r"K = 5, as ATensor's Sizes \[2, 3, 4, 5\] give it"):
        MMI(a, np.ones((2, 3, 4, 6), I8))
    with pytest.raises(dmljax.ValidationError, match=r"BTensor \(argument `b`\) has batch dimensions \[1, 3\]; "
                       r"ATensor's, \[2, 3\]"):
        MMI(a, np.ones((1, 3, 5, 6), I8))
    with pytest.raises(dmljax.ValidationError, match=r"BTensor \(argument `b`\) has ATensor: 4 dimensions, "
                       r"BTensor: 3 dimensions"):
        MMI(a, b[0])
    with pytest.raises(dmljax.ValidationError, match=r"ATensor \(argument `a`\) has 3 dimensions .*supported: 4"):
        MMI(a[0], b[0], feature_level="3.0")
    bias = np.zeros((2, 3, 4, 1), np.float32)
    with pytest.raises(dmljax.ValidationError, match=r"BiasTensor \(argument `bias`\) has Sizes \[2, 3, 4, 1\]; "
                       r"the OutputTensor's"):
        I2F(a, f32(1), b, f32(1), bias=bias)
    with pytest.raises(dmljax.ValidationError, match=r"AZeroPointTensor, BScaleTensor.* with the same DimensionCount"):
        I2F(a, f32(1), b, np.ones((1, 1), np.float32), np.zeros(1, I8))
    with pytest.raises(dmljax.ValidationError, match=r"ATensor \(argument `a`\) and BTensor \(argument `b`\) have DataTypes INT8, UINT8; they must have the same DataType"):
        I2F(a, f32(1), b.astype(U8), f32(1))


# ------------------------------------------------------------------------------------ INT32 bound
@pytest.mark.parametrize("ta,tb,zero_points,limit", [
    (I8, I8, False, 131071), (I8, I8, True, 33025), (U8, U8, False, 33025), (I8, U8, False, 65793),
    (U8, I8, True, 33025)])
def test_int32_bound(ta, tb, zero_points, limit):
    # The most products an INT32 sum holds whatever the values: K up to it is accepted, one more
    # refused at trace time, with the bound and the fix in the message (jax.eval_shape: no data).
    mi = np.iinfo(ta)
    want = (2**31 - 1) // ((255 if zero_points or mi.min == 0 else 128) * (255 if zero_points or np.iinfo(tb).min == 0 else 128))
    assert limit == want

    def call(k):
        a = jax.ShapeDtypeStruct((1, k), ta)
        b = jax.ShapeDtypeStruct((k, 1), tb)
        zps = (jax.ShapeDtypeStruct((1,), ta), jax.ShapeDtypeStruct((1,), tb)) if zero_points else (None, None)
        return jax.eval_shape(lambda a, b, *z: MMI(a, b, *z), a, b, *[z for z in zps if z is not None])

    assert call(limit).shape == (1, 1)
    with pytest.raises(dmljax.ValidationError) as e:
        call(limit + 1)
    msg = str(e.value)
    assert f"ATensor (argument `a`) makes each output a sum of {limit + 1} products" in msg, msg
    assert f"at most {limit} products" in msg, msg
    assert f"split the product along K into pieces of at most {limit}" in msg, msg


def test_exact_at_the_bound():
    # The extreme sums the bound allows come out exact: 33025 * 255 * 255 and 131071 * 128 * 128.
    k = 33025
    got = MMI(np.full((1, k), 255, U8), np.full((k, 1), 255, U8))
    assert int(got[0, 0]) == k * 255 * 255 == 2147450625
    got = MMI(np.full((1, k), -128, I8), np.full((k, 1), 127, I8), np.array([127], I8), np.array([-128], I8))
    assert int(got[0, 0]) == -k * 255 * 255
    k = 131071
    got = MMI(np.full((1, k), -128, I8), np.full((k, 1), -128, I8))
    assert int(got[0, 0]) == k * 128 * 128 == 2147467264
    got = QLM(np.full((1, k), -128, I8), f32(1), np.full((k, 1), -128, I8), f32(1), f32(2**24), output_data_type="UINT8")
    assert int(got[0, 0]) == 128  # 2147467264 -> FLOAT32 2^31 exactly; / 2^24 = 128


def test_to_float_past_the_bound_and_wide_types():
    # Past the INT32 bound, and for 16- and 32-bit types, MATRIX_MULTIPLY_INTEGER_TO_FLOAT sums in
    # FLOAT32 instead: no overflow, within its budget of the float64 reference.
    rng = np.random.default_rng(3)
    spec = I2F.spec
    for t, k in ((U8, 33026), (np.int16, 64), (np.uint16, 64), (np.int32, 16), (np.uint32, 16)):
        info = np.iinfo(t)
        a = rng.integers(info.min, int(info.max) + 1, (3, k), dtype=np.int64).astype(t)
        b = rng.integers(info.min, int(info.max) + 1, (k, 2), dtype=np.int64).astype(t)
        za, zb = np.array([info.max], t), np.array([info.min], t)
        sa, sb = f32(2.0 ** -20), f32(2.0 ** -21)
        got = I2F(a, sa, b, sb, za, zb)
        want = ref.matrix_multiply_integer_to_float(a, sa, b, sb, za, zb)
        size = ref._to_float_magnitude(a, sa, b, sb, za, zb)
        assert_matches(got, want, DataType.FLOAT32, spec.budget(DataType.FLOAT32, a.shape), context=str(t),
                       magnitude=size)
    a = np.full((1, 40000), 255, U8)  # the INT32 sum would be 2.6e9
    got = I2F(a, f32(1), a.T.copy(), f32(1))
    assert float(got[0, 0]) == float(np.float32(40000 * 65025))


# ------------------------------------------------------------------------------------ scales
def test_undefined_scales_known_at_the_call():
    a, b = np.ones((2, 3), I8), np.ones((3, 2), I8)
    for bad, what in ((0.0, "is 0, the first 0.0"), (np.nan, "is NaN, the first nan"), (np.inf, "is infinite, the first inf"),
                      (-np.inf, "is infinite, the first -inf"), (1e-40, "is 0, the first 9.99994610111476e-41")):
        for position in range(3):
            scales = [f32(1), f32(1), f32(1)]
            scales[position] = f32(1, bad)[1:]
            with pytest.raises(dmljax.ValidationError) as e:
                QLM(a, scales[0], b, scales[1], scales[2])
            name = ("AScaleTensor", "BScaleTensor", "OutputScaleTensor")[position]
            arg = ("a_scale", "b_scale", "output_scale")[position]
            assert f"{name} (argument `{arg}`) holds 1 element that {what} at [0]" in str(e.value), str(e.value)
            assert "a scale is finite and not 0" in str(e.value)
    with pytest.raises(dmljax.ValidationError, match=r"OutputScaleTensor \(argument `output_scale`\) holds 1 element "
                       r"that is 0, the first 0.0 at \[1\]"):
        QLM(a, f32(1), b, f32(1), jnp.asarray(f32(1, 0)))  # a JAX array outside a trace is read too


def test_traced_scales_get_the_documented_values():
    a = np.array([[3, -2, 0]], I8).T.copy()  # products 3, -2, 0 against b = 1
    b = np.ones((1, 1), I8)
    zy = np.array([5], I8)
    run = jax.jit(lambda sa, sb, sy: QLM(a, sa, b, sb, sy, None, None, zy))
    exact(run(f32(0), f32(1), f32(1)), [[5], [5], [5]])  # the output zero point
    exact(run(f32(1), f32(1), f32(0)), [[127], [-128], [-128]])  # +inf, -inf, 0 / 0 = NaN -> Min
    exact(run(f32(np.inf), f32(1), f32(1)), [[127], [-128], [-128]])  # inf * 0 = NaN -> Min
    exact(run(f32(1), f32(1), f32(np.nan)), [[-128], [-128], [-128]])
    # MATRIX_MULTIPLY_INTEGER_TO_FLOAT: IEEE arithmetic's results, nothing refused
    got = I2F(a, f32(0), b, f32(np.inf))
    assert np.isnan(np.asarray(got)).all()
    got = I2F(a, f32(np.inf), b, f32(1))
    assert list(np.asarray(got)[:, 0]) [:2] == [np.inf, -np.inf] and np.isnan(got[2, 0])


def test_output_data_type():
    a, b = np.ones((2, 3), U8), np.full((3, 2), 100, U8)
    assert QLM(a, f32(1), b, f32(1), f32(1)).dtype == np.uint8  # ATensor's (ONNX's reference evaluator)
    got = QLM(a, f32(1), b, f32(1), f32(1), output_data_type="INT8")
    assert got.dtype == np.int8 and int(got[0, 0]) == 127
    assert QLM(a, f32(1), b, f32(1), f32(1), None, None, np.array([0], I8)).dtype == np.int8
    with pytest.raises(dmljax.ValidationError, match="OutputTensor \\(argument `output_data_type`\\) is UINT8, but "
                       "OutputZeroPointTensor has DataType INT8"):
        QLM(a, f32(1), b, f32(1), f32(1), None, None, np.array([0], I8), output_data_type="UINT8")


# ------------------------------------------------------------------------------------ transformations
@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_jit_vmap_and_float0():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (6, 3, 4)).astype(U8)
    b = rng.integers(-128, 128, (6, 4, 5)).astype(I8)
    za, zb = np.array([7], U8), np.arange(5).astype(I8)
    want = MMI(a, b, za, zb)
    exact(jax.jit(MMI)(a, b, za, zb), want)
    exact(jax.vmap(MMI, in_axes=(0, 0, None, None))(a, b, za, zb), want)  # vmap over the batch = batch dimension
    _, vjp = jax.vjp(MMI, a, b, za, zb)
    for g in vjp(np.zeros((6, 3, 5), jax.dtypes.float0)):
        assert g.dtype == jax.dtypes.float0
    sa, sb, sy = f32(0.02), np.linspace(0.01, 0.03, 5, dtype=np.float32), f32(0.5)
    q = QLM(a, sa, b, sb, sy, za, zb, np.array([3], I8))
    exact(jax.vmap(lambda x, y: QLM(x, sa, y, sb, sy, za, zb, np.array([3], I8)))(a, b), q)
    grads = jax.grad(lambda s: QLM(a, s, b, sb, sy, za, zb).astype(jnp.float32).sum(), allow_int=True)(sa)
    assert not np.asarray(grads).any()  # an integer output passes its scales nothing


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_to_float_gradient():
    rng = np.random.default_rng(6)
    a = rng.integers(-128, 128, (2, 3, 4)).astype(I8)
    b = rng.integers(-128, 128, (2, 4, 5)).astype(I8)
    za, zb = np.arange(3).astype(I8)[:, None], np.array([[2]], I8)
    sa, sb = rng.uniform(0.5, 1, (3, 1)).astype(np.float32), np.array([[0.25]], np.float32)
    bias = rng.standard_normal((2, 3, 5)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 5))

    def f(sa, sb, bias):
        return (I2F(a, sa, b, sb, za, zb, bias) * dy.astype(np.float32)).sum()

    got = jax.grad(f, argnums=(0, 1, 2))(sa, sb, bias)
    want = ref._to_float_grad(dy, a, sa, b, sb, za, zb, bias)
    np.testing.assert_allclose(got[0], want[1], rtol=1e-5)
    np.testing.assert_allclose(got[1], want[3], rtol=1e-5)
    np.testing.assert_allclose(got[2], want[6], rtol=1e-6)
    fwd = jax.jvp(lambda s: I2F(a, s, b, sb, za, zb, bias), (sa,), (np.ones_like(sa),))[1]
    np.testing.assert_allclose(fwd, ref.exact_sum(a, b, za, zb).astype(np.float64) * 0.25, rtol=1e-6)
    batched = jax.vmap(lambda x, y, c: I2F(x, sa, y, sb, za, zb, c))(a, b, bias)
    np.testing.assert_array_equal(batched, I2F(a, sa, b, sb, za, zb, bias))


@pytest.mark.parametrize("k", [1, 5, 7, 8])
def test_the_integer_product_takes_whole_words_of_k(k):
    # XLA's GPU backend computes INT8 x INT8 -> INT32 products wrongly where K is not a multiple
    # of 4 (an H200 with jax 0.11.2: every element of a 3 x 5 by 5 x 4 product): K is padded with
    # zeros, which the lowered product shows, and the result stays exact.
    rng = np.random.default_rng(k)
    a = rng.integers(-128, 128, (3, k)).astype(np.int8)
    b = rng.integers(0, 256, (k, 4)).astype(np.uint8)
    za, zb = np.full((3, 1), -7, np.int8), np.full((1, 4), 200, np.uint8)
    f = jax.jit(dmljax.matrix_multiply_integer)
    text = f.lower(a, b, za, zb).as_text()
    padded = k + (-k % 4)
    assert f"tensor<3x{padded}xi8>" in text and f"tensor<{padded}x4xi8>" in text
    want = (a.astype(np.int64) + 7) @ (b.astype(np.int64) - 200)
    np.testing.assert_array_equal(np.asarray(f(a, b, za, zb)), want)


@pytest.mark.parametrize("platform", ["cpu", "cuda"])
def test_a_uint8_operand_is_flipped_byte_wise_on_the_cpu(platform):
    # Off the CPU the flip of a UINT8 operand runs on four bytes at a time through a UINT32 view;
    # on the CPU byte-wise, which XLA's CPU backend vectorizes with what computes the bytes (its
    # UINT32 view packs them with shifts and a reduction). The same INT8 values either way.
    a, b = np.zeros((4, 8), U8), np.zeros((8, 4), I8)
    text = jax.jit(MMI).trace(a, b).lower(lowering_platforms=(platform,)).as_text()
    assert ("tensor<8xui32>" in text) == (platform == "cuda")  # A's 32 bytes as 8 words
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 256, (5, 12)).astype(U8), rng.integers(-128, 128, (12, 3)).astype(I8)
    exact(jax.jit(MMI)(a, b), a.astype(np.int64) @ b.astype(np.int64))
