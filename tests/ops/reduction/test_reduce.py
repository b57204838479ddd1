"""REDUCE's edges, by hand: the page's examples (the docstring's doctest), the tables that depend on
the Function, every function's edge values, exact integers, the accumulation of FLOAT16 in
FLOAT32, and the gradients at ties and zeros."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers

X = np.array([[1, 2, 3], [3, 0, 4], [2, 4, 2]], np.float32)  # the page's input


def _bits(x):
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def test_page_examples_every_function_and_axis_order():
    assert np.asarray(dmljax.reduce(X, function="SUM", axes=(0,))).tolist() == [[6, 6, 9]]
    assert np.asarray(dmljax.reduce(X, function="SUM", axes=(1,))).tolist() == [[6], [7], [8]]
    assert np.asarray(dmljax.reduce(X, function="DML_REDUCE_FUNCTION_SUM", axes=(0, 1))).tolist() == [[21]]
    # Axes in any order name the same reduction; the reduced axes are kept as 1
    y = dmljax.reduce(X[None], function="MULTIPLY", axes=(2, 0))
    assert y.shape == (1, 3, 1) and np.asarray(y).ravel().tolist() == [6, 0, 16]
    cols = {"AVERAGE": [2, 2, 3], "L1": [6, 6, 9], "SUM_SQUARE": [14, 20, 29], "MAX": [3, 4, 4], "MIN": [1, 0, 2],
            "MULTIPLY": [6, 0, 24], "ARGMAX": [1, 2, 1], "ARGMIN": [0, 1, 2]}
    for f, want in cols.items():
        assert np.asarray(dmljax.reduce(X, function=f, axes=(0,))).ravel().tolist() == want, f
    np.testing.assert_allclose(dmljax.reduce(X, function="L2", axes=(0,)).ravel(), np.sqrt([14, 20, 29]), rtol=1e-7)
    np.testing.assert_allclose(dmljax.reduce(X, function="LOG_SUM", axes=(0,)).ravel(), np.log([6, 6, 9]), rtol=1e-7)
    lse = np.log(np.exp(X.astype(np.float64)).sum(0))
    np.testing.assert_allclose(dmljax.reduce(X, function="LOG_SUM_EXP", axes=(0,)).ravel(), lse, rtol=1e-7)


def test_tables_depend_on_the_function():
    i8 = np.zeros((2, 2), np.int8)
    assert dmljax.reduce(i8, function="MAX", axes=(0,)).dtype == np.int8  # MIN and MAX: INT8 from 3.0
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.reduce(i8, function="SUM", axes=(0,))
    assert ("InputTensor (argument `input`) has DataType INT8; supported with Function SUM: FLOAT32, FLOAT16, "
            "INT64, INT32, UINT64, UINT32.") in str(e.value)
    i32 = np.zeros((2, 2), np.int32)
    with pytest.raises(dmljax.ValidationError, match="supported with Function AVERAGE: FLOAT32, FLOAT16"):
        dmljax.reduce(i32, function="AVERAGE", axes=(0,))
    with pytest.raises(dmljax.ValidationError, match="INT32 is supported from DML_FEATURE_LEVEL_5_0"):
        dmljax.reduce(i32, function="L1", axes=(0,), feature_level="4.1")
    assert dmljax.reduce(i32, function="L1", axes=(0,), feature_level="5.0").dtype == np.int32
    x4 = np.zeros((1, 1, 2, 2), np.float32)  # 4 dimensions only before 3.0
    assert dmljax.reduce(x4, function="SUM", axes=(3,), feature_level="1.0").shape == (1, 1, 2, 1)
    with pytest.raises(dmljax.ValidationError, match="supported with Function SUM: 4.\n    Tip: 1 to 8 dimensions"):
        dmljax.reduce(np.zeros((2, 2), np.float32), function="SUM", axes=(0,), feature_level="2.1")
    with pytest.raises(dmljax.ValidationError, match="Function \\(argument `function`\\) is 'MEAN'; valid: DML_REDUCE_FUNCTION_ARGMAX \\(0\\)"):
        dmljax.reduce(X, function="MEAN", axes=(0,))
    with pytest.raises(TypeError, match="function"):
        dmljax.reduce(X, axes=(0,))  # the page gives no default


def test_output_data_type():
    # The input's DataType, except ARGMAX/ARGMIN: UINT32, or another index type from 3.0
    assert dmljax.reduce(X, function="ARGMAX", axes=(0,)).dtype == np.uint32
    assert dmljax.reduce(X, function="ARGMIN", axes=(0,), output_data_type="INT32").dtype == np.int32
    with pytest.raises(dmljax.ValidationError, match="supported with Function ARGMAX: UINT32"):
        dmljax.reduce(X[None, None], function="ARGMAX", axes=(3,), output_data_type="INT32", feature_level="2.1")
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.reduce(X, function="SUM", axes=(0,), output_data_type="FLOAT16")
    assert ("OutputTensor (argument `output_data_type`) is FLOAT16; the InputTensor's DataType (FLOAT32) with "
            "Function SUM.") in str(e.value)
    assert dmljax.reduce(X, function="SUM", axes=(0,), output_data_type="FLOAT32").dtype == np.float32
    with jax.enable_x64(False), pytest.raises(dmljax.ValidationError, match="64-bit mode"):
        dmljax.reduce(X, function="ARGMAX", axes=(0,), output_data_type="INT64")


def test_axes_are_checked():
    with pytest.raises(dmljax.ValidationError, match="Axes \\(argument `axes`\\) is empty"):
        dmljax.reduce(X, function="SUM", axes=())
    with pytest.raises(dmljax.ValidationError, match=r"has \[2\] for a 2-dimensional InputTensor"):
        dmljax.reduce(X, function="SUM", axes=(2,))
    with pytest.raises(dmljax.ValidationError, match="names axis 0 more than once"):
        dmljax.reduce(X, function="SUM", axes=(0, 0))
    with pytest.raises(dmljax.ValidationError, match="AxisCount"):
        dmljax.compile_operator("DML_OPERATOR_REDUCE", {
            "Function": "SUM", "AxisCount": 2, "Axes": [0],
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [3, 3]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 3]}})


def test_max_min_nan_zeros_and_denormals_like_element_wise_max():
    nan, tiny = np.float32(np.nan), np.float32(1e-40)
    x = np.array([[nan, 1.0, nan], [nan, nan, nan], [-0.0, 0.0, -0.0], [0.0, -0.0, 0.0], [-tiny, -0.0, -5.0]], np.float32)
    mx = np.asarray(dmljax.reduce(x, function="MAX", axes=(1,))).ravel()
    mn = np.asarray(dmljax.reduce(x, function="MIN", axes=(1,))).ravel()
    assert mx[0] == 1.0 and math.isnan(mx[1]) and math.isnan(mn[1])  # maxNum; a group of NaN: NaN
    assert _bits(mx[2:4]).tolist() == [0, 0]  # a tie of zeros: +0 for MAX, whatever the order
    assert _bits(mn[2:4]).tolist() == [0x80000000] * 2  # -0 for MIN
    # the denormal reads as -0 (its sign kept), so the row is {-0, -0, -5}: MAX gives -0
    assert _bits(mx[4]) == 0x80000000 and mn[4] == -5
    # each agrees with folding ELEMENT_WISE_MAX / MIN over the row
    for row in x:
        acc_max, acc_min = row[:1], row[:1]
        for v in row[1:]:
            acc_max = dmljax.element_wise_max(acc_max, np.array([v]))
            acc_min = dmljax.element_wise_min(acc_min, np.array([v]))
        got = dmljax.reduce(row[None], function="MAX", axes=(1,)).ravel()
        assert _bits(got).tolist() == _bits(acc_max).tolist() or (np.isnan(got).all() and np.isnan(acc_max).all())
        got = dmljax.reduce(row[None], function="MIN", axes=(1,)).ravel()
        assert _bits(got).tolist() == _bits(acc_min).tolist() or (np.isnan(got).all() and np.isnan(acc_min).all())
    h = np.array([[np.nan, -65504, 6e-8]], np.float16)  # FLOAT16 denormals are kept
    assert _bits(dmljax.reduce(h, function="MAX", axes=(1,))).tolist() == [[_bits(np.float16(6e-8))]]
    i = np.array([[-128, 127, 0]], np.int8)
    assert np.asarray(dmljax.reduce(i, function="MIN", axes=(1,))).tolist() == [[-128]]


def test_log_sum_exp_is_stable_and_log_sum_follows_log():
    big = np.array([[1e30, 1e30, -1e30]], np.float32)
    np.testing.assert_allclose(dmljax.reduce(big, function="LOG_SUM_EXP", axes=(1,)).ravel(), [1e30 + 0], rtol=1e-7)
    lo = np.array([[-1000.0, -1000.0]], np.float32)  # exp underflows to 0 unless the max is subtracted
    np.testing.assert_allclose(dmljax.reduce(lo, function="LOG_SUM_EXP", axes=(1,)).ravel(), [-1000 + math.log(2)],
                               rtol=1e-7)
    inf = np.float32(np.inf)
    edge = np.array([[-inf, -inf], [inf, 1.0], [np.nan, 1.0], [-inf, 2.0]], np.float32)
    got = np.asarray(dmljax.reduce(edge, function="LOG_SUM_EXP", axes=(1,))).ravel()
    assert got[0] == -inf and got[1] == inf and math.isnan(got[2]) and got[3] == 2.0
    ls = np.asarray(dmljax.reduce(np.array([[1.0, -1.0], [1.0, -3.0], [np.e, 0.0]], np.float32),
                                  function="LOG_SUM", axes=(1,))).ravel()
    assert ls[0] == -inf and math.isnan(ls[1]) and abs(ls[2] - 1) < 1e-7


def test_float16_accumulates_in_float32():
    ones = np.ones((1, 4096), np.float16)
    assert float(dmljax.reduce(ones, function="SUM", axes=(1,))[0, 0]) == 4096.0  # FLOAT16 sums stall at 2048
    big = np.full((1, 8), 60000, np.float16)
    assert float(dmljax.reduce(big, function="AVERAGE", axes=(1,))[0, 0]) == 60000.0  # no overflow on the way
    l2 = dmljax.reduce(np.full((1, 4), 30000, np.float16), function="L2", axes=(1,))
    assert float(l2[0, 0]) == 60000.0  # the squares (9e8) overflow FLOAT16 but not the FLOAT32 accumulator
    # with half-precision computation FLOAT16 arithmetic is allowed: the budget grows with N
    half = dmljax.reduce(ones, function="SUM", axes=(1,), allow_half_precision_computation=True)
    assert half.dtype == np.float16


def test_long_float32_sum_within_its_growing_budget(rng):
    x = rng.standard_normal((3, 1 << 15)).astype(np.float32)
    got = np.asarray(dmljax.reduce(x, function="SUM", axes=(1,)), np.float64).ravel()
    for g, row in zip(got, x):
        exact = math.fsum(map(float, row))
        size = math.fsum(abs(float(v)) for v in row)
        assert abs(g - exact) <= (1 << 15) * np.spacing(np.float32(size)), (g, exact)


def test_integers_are_exact_and_wrap():
    i32 = np.array([[2**31 - 1, 1, 5], [-(2**31), -1, 0]], np.int32)
    assert np.asarray(dmljax.reduce(i32, function="SUM", axes=(1,))).ravel().tolist() == [-(2**31) + 5, 2**31 - 1]
    assert np.asarray(dmljax.reduce(i32, function="L1", axes=(1,))).ravel().tolist() == [-(2**31) + 5, -(2**31) + 1]
    m = np.array([[65536, 65536, 3]], np.int32)
    assert np.asarray(dmljax.reduce(m, function="MULTIPLY", axes=(1,))).tolist() == [[0]]  # 3 * 2^32 wraps to 0
    u = np.array([[2**32 - 1, 2]], np.uint32)
    assert np.asarray(dmljax.reduce(u, function="SUM_SQUARE", axes=(1,))).tolist() == [[(1 + 4) % 2**32]]
    with jax.enable_x64(True):
        i64 = np.array([[2**62, 2**62, 1]], np.int64)
        assert np.asarray(dmljax.reduce(i64, function="SUM", axes=(1,))).tolist() == [[-(2**63) + 1]]
    with jax.enable_x64(False), pytest.raises(dmljax.ValidationError, match="64-bit mode"):
        dmljax.reduce(np.zeros((2, 2), np.uint64), function="MAX", axes=(0,))


def test_argmax_function_equals_the_argmax_operator(rng):
    x = rng.integers(-3, 4, (4, 5, 6)).astype(np.float32)  # many ties
    for axes in [(0,), (2,), (0, 2), (0, 1, 2)]:
        for f, op in [("ARGMAX", dmljax.argmax), ("ARGMIN", dmljax.argmin)]:
            a = dmljax.reduce(x, function=f, axes=axes)
            b = op(x, axes=axes)
            assert np.array_equal(a, b), (f, axes)


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_gradients_at_ties_zeros_and_saturation():
    g = jax.grad(lambda v: dmljax.reduce(v, function="MAX", axes=(1,)).sum())(np.array([[1, 4, 4], [0, -0.0, 0]],
                                                                                       np.float32))
    # dY to the element the fold keeps: the first 4; for zeros +0 beats -0 strictly, and a later +0
    # ties with it, so the first +0 (index 0) keeps it
    assert np.asarray(g).tolist() == [[0, 1, 0], [1, 0, 0]]
    g = jax.grad(lambda v: dmljax.reduce(v, function="MIN", axes=(0, 1)).sum())(np.array([[3, 1], [1, np.nan]],
                                                                                        np.float32))
    assert np.asarray(g).tolist() == [[0, 1], [0, 0]]
    z = np.zeros((2, 3), np.float32)
    for f in ("L2", "L1", "LOG_SUM_EXP", "SUM_SQUARE"):
        gz = np.asarray(jax.grad(lambda v, f=f: dmljax.reduce(v, function=f, axes=(1,)).sum())(z))
        assert not np.isnan(gz).any(), f
    gz = jax.grad(lambda v: dmljax.reduce(v, function="LOG_SUM_EXP", axes=(1,)).sum())(np.full((1, 2), -np.inf, np.float32))
    assert np.asarray(gz).tolist() == [[0, 0]]
    gp = jax.grad(lambda v: dmljax.reduce(v, function="MULTIPLY", axes=(1,)).sum())(np.array([[0, 2, 3], [0, 2, 0]],
                                                                                            np.float32))
    assert np.asarray(gp).tolist() == [[6, 0, 0], [0, 0, 0]]
    ga = jax.grad(lambda v: dmljax.reduce(v, function="AVERAGE", axes=(0, 1)).sum())(np.ones((2, 2), np.float16))
    assert ga.dtype == np.float16 and np.asarray(ga).tolist() == [[0.25, 0.25], [0.25, 0.25]]
    gi = jax.grad(lambda v: dmljax.reduce(v, function="SUM", axes=(0,)).astype(jnp.float32).sum(),
                  allow_int=True)(np.ones((2, 2), np.int32))
    assert gi.dtype == jax.dtypes.float0


def test_composes_under_jit_and_vmap(rng):
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    f = jax.jit(lambda v: dmljax.reduce(v, function="LOG_SUM_EXP", axes=(1,)))
    np.testing.assert_array_equal(f(x), dmljax.reduce(x, function="LOG_SUM_EXP", axes=(1,)))
    v = jax.vmap(lambda r: dmljax.reduce(r, function="SUM", axes=(0,)))(x)
    assert v.shape == (4, 1, 5)
    np.testing.assert_allclose(v, x.sum(1, keepdims=True), rtol=1e-6)


def test_multiply_has_no_intermediate_overflow(rng):
    # 1e30 * 1e30 overflows FLOAT32 whatever comes after; the product's value, 1e30, does not
    x = np.array([[1e30, 1e30, 1e-30], [1e-30, 1e-30, 1e30]], np.float32)
    got = np.asarray(dmljax.reduce(x, function="MULTIPLY", axes=(1,))).ravel()
    np.testing.assert_allclose(got, [1e30, 1e-30], rtol=1e-6)
    # 2^16 terms of magnitude 1/2 to 2: the partial products wander far out of range
    f = (np.where(rng.random(1 << 16) < 0.5, -1, 1) * np.exp2(rng.uniform(-1, 1, 1 << 16))).astype(np.float32)
    exact = math.prod(map(float, f))
    got = float(dmljax.reduce(f, function="MULTIPLY", axes=(0,))[0])
    if abs(exact) > np.finfo(np.float32).max:
        assert math.isinf(got) and np.sign(got) == np.sign(exact)
    elif abs(exact) < np.finfo(np.float32).tiny:
        assert got == 0
    else:
        assert abs(got - exact) <= (1 << 16) * np.spacing(np.float32(abs(exact)))
    edge = np.array([[0.0, np.inf], [np.nan, 1.0], [-0.0, 2.0]], np.float32)
    e = np.asarray(dmljax.reduce(edge, function="MULTIPLY", axes=(1,))).ravel()
    assert math.isnan(e[0]) and math.isnan(e[1]) and e[2] == 0 and math.copysign(1, e[2]) == -1


def test_float32_multiply_edges_of_the_range_and_special_values():
    # the CPU's FLOAT64 blocks and the exponents-apart FLOAT32 form (the GPU's) give the same
    # values at the edges of FLOAT32's range: exact products at the largest and smallest normal,
    # one beyond each (inf; a denormal, flushed to a zero of the product's sign), a denormal term
    # (read as zero), zeros' signs, inf times zero, NaN; and over axes that are not adjacent
    from dmljax._src.ops.reduction.reduce import _product
    p = np.exp2
    rows = [
        ([p(100), p(27), 1.5, p(-10), p(10)], 1.5 * p(127)),
        ([p(100), p(28)], np.inf),
        ([-p(100), p(28), -1.0], np.inf),
        ([p(-100), p(-26)], p(-126)),
        ([p(-100), p(-27)], 0.0),
        ([-p(-100), p(-27)], -0.0),
        ([1e-40, p(100)], 0.0),
        ([-1e-40, p(100)], -0.0),
        ([-0.0, 5.0], -0.0),
        ([np.inf, -2.0], -np.inf),
        ([0.0, np.inf], np.nan),
        ([np.nan, 1.0], np.nan),
        ([-p(-126), -p(127), 3.0], 3.0 * 2.0),
    ]
    width = max(len(r) for r, _ in rows)
    x = np.array([r + [1.0] * (width - len(r)) for r, _ in rows], np.float32)
    want = np.array([w for _, w in rows], np.float32)
    for got in (jax.jit(lambda v: dmljax.reduce(v, function="MULTIPLY", axes=(1,)))(x),
                jax.jit(lambda v: dmljax.reduce(v[:, ::-1], function="MULTIPLY", axes=(1,)))(x)):
        got = np.asarray(got).ravel()
        nan = np.isnan(want)
        assert np.isnan(got[nan]).all() and _bits(got[~nan]).tolist() == _bits(want[~nan]).tolist()
    xs = np.asarray(x)
    xs[np.abs(xs) < np.finfo(np.float32).tiny] *= 0  # _product reads flushed terms
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda v: _product(v, (1,)))(xs)).ravel()[:4], want[:4])
    v = (np.where(np.arange(60) % 3, -1, 1) * np.exp2(np.linspace(-9, 9, 60))).astype(np.float32).reshape(3, 4, 5)
    got = np.asarray(dmljax.reduce(v, function="MULTIPLY", axes=(0, 2)), np.float64)
    exact = np.prod(v.astype(np.float64), axis=(0, 2), keepdims=True)
    assert (np.abs(got - exact) <= np.spacing(np.abs(exact).astype(np.float32))).all()


@pytest.mark.parametrize("larger", tiers.fast_sample([True, False]))
def test_float16_columns_take_the_column_kernel_with_the_xla_paths_keys(larger):
    # REDUCE MAX/MIN of FLOAT16 over an axis with elements after it take the column kernel on a
    # GPU (top_k_kernel.max_key_columns, MIN's keys complemented); in Pallas's interpreter the
    # keys must be the XLA path's bit for bit: NaN columns, NaN beside -inf, -0 and +0 (+0 above),
    # a column of -0, ties across the row blocks.
    from dmljax._src.numerics import is_nan
    from dmljax._src.ops.reduction.reduce import _order_keys
    from dmljax._src.kernels.extreme_columns import EXTREME_COLUMNS, max_key_columns
    rng = np.random.default_rng(5)
    x = (rng.integers(-3, 3, (2, 96, 2, 256)) * 0.5).astype(np.float16)
    x[0, :, 0, 0], x[0, :, 1, 3], x[0, 70, 1, 3] = np.nan, np.nan, -np.inf
    x[1, :, 1, 5], x[1, 3, 1, 5], x[1, :, 0, 7] = -0.0, 0.0, -0.0
    assert EXTREME_COLUMNS.applies(x.shape, (1,), np.float16)
    never = np.int32(np.iinfo(np.int32).min if larger else np.iinfo(np.int32).max)

    def keys(v):
        return jnp.where(is_nan(v), never, _order_keys(v))
    got = max_key_columns(jnp.asarray(x), 1, keys if larger else (lambda v: ~keys(v)), interpret=True)
    got = got if larger else ~got
    want = (jnp.max if larger else jnp.min)(keys(jnp.asarray(x)), axis=1, keepdims=True)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("function", ["MAX", "MIN"])
def test_float16_first_axis_max_min_lower_to_the_column_kernel(function):
    f = jax.jit(lambda v: dmljax.reduce(v, function=function, axes=(0,)))
    text = f.trace(jax.ShapeDtypeStruct((512, 1024), jnp.float16)).lower(lowering_platforms=("cuda",)).as_text()
    assert 'name = "dmljax_column_max"' in text
    assert all("f16" not in ln for ln in text.splitlines() if "stablehlo.reduce" in ln)


def _doubtful_rows(rng, n):
    """FLOAT32 rows of n where XLA's own maximum on the CPU goes astray or its result's bits
    are the order's: a NaN after the extreme and before it, every element NaN, a tie of zeros
    of both signs, denormals of both signs as the extreme, +-inf, and plain rows around them."""
    x = rng.standard_normal((10, n)).astype(np.float32)
    x[0, n // 2] = np.nan                                      # NaN in the middle of a long row
    x[1, :] = np.nan                                           # a group of NaN: NaN
    x[2, :] = -np.abs(x[2]); x[2, ::2] = 0.0; x[2, 1::2] = -0.0  # a tie of zeros: MAX +0
    x[3, :] = -np.abs(x[3]) - 1; x[3, 5] = -1e-40; x[3, 7] = -0.0  # denormal and -0 as MAX
    x[4, :] = np.abs(x[4]) + 1; x[4, 3] = 1e-40; x[4, 9] = -1e-40  # denormals as MIN: +-0 tie
    x[5, :] = -np.inf; x[5, 0] = np.nan                        # NaN beside -inf
    x[6, 0] = np.inf; x[6, 1] = -np.inf                        # inf - inf: a NaN sum, no NaN
    x[7, -1] = np.nan; x[7, 0] = 100.0                         # the extreme first, NaN last
    return x


@pytest.mark.slow  # 4 s of the float64 fold on 2 cores; the short rows above stay in the fast tier
@pytest.mark.parametrize("function", ["MAX", "MIN"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_max_min_on_long_rows_equal_the_fold(function, dtype, rng):
    # the CPU takes XLA's vectorized maximum where its result is the fold's, the fold elsewhere
    from tests.reference.reduction.reduce import reduce as reference
    x = _doubtful_rows(rng, 2048).astype(dtype)  # (FLOAT16: the denormals are zeros, kept signs)
    for axis, t in ((1, x), (0, np.ascontiguousarray(x.T))):
        got = np.asarray(jax.jit(lambda v: dmljax.reduce(v, function=function, axes=(axis,)))(t))
        want = reference(t, function, (axis,))[0]
        assert np.array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        assert _bits(got[ok]).tolist() == _bits(want[ok]).tolist()
    # the plain rows alone (no doubt anywhere): the vectorized maximum's value
    plain = x[8:]
    got = dmljax.reduce(plain, function=function, axes=(1,))
    assert _bits(got).tolist() == _bits(reference(plain, function, (1,))[0]).tolist()


@pytest.mark.slow  # 5 s of the float64 product on 2 cores; test_multiply_has_no_intermediate_overflow stays fast
@pytest.mark.parametrize("shape,axes", [((3, 4100), (1,)), ((130, 2, 3), (0,)), ((5, 70, 3, 9), (1, 3))])
def test_float32_multiply_out_of_range_partials_within_budget(shape, axes, rng):
    # partial products far outside FLOAT32's range, whatever their grouping; zeros, infinities,
    # NaN and -0 in some groups; on the CPU the groups of a plain product out of range take the
    # frexp split in chunks
    from tests.reference.reduction.reduce import reduce as reference
    u = rng.uniform(-8, 8, shape)  # exponents that cancel within each group: a product near 1 (partials
    # wander past FLOAT32's range, not float64's)
    x = (np.where(rng.random(shape) < 0.5, -1, 1) * np.exp2(u - u.mean(axis=axes, keepdims=True))).astype(np.float32)
    flat = x.reshape(-1)
    flat[:4] = [0.0, np.inf, np.nan, -0.0]
    got = np.asarray(jax.jit(lambda v: dmljax.reduce(v, function="MULTIPLY", axes=axes))(x), np.float64)
    want = reference(x, "MULTIPLY", axes)[0].astype(np.float64)
    n = math.prod(shape[a] for a in axes)
    f32 = np.finfo(np.float32)
    clipped = np.where(np.abs(want) > f32.max, np.sign(want) * np.inf, np.where(np.abs(want) < f32.tiny, 0 * want, want))
    assert np.array_equal(np.isnan(got), np.isnan(clipped))
    ok = ~np.isnan(clipped)
    assert np.array_equal(np.signbit(got[ok]), np.signbit(clipped[ok]))
    finite = ok & np.isfinite(clipped) & (clipped != 0)
    assert np.array_equal(np.isinf(got[ok]), np.isinf(clipped[ok])) and (got[ok & (clipped == 0)] == 0).all()
    assert (np.abs(got[finite] - clipped[finite]) <= n * np.spacing(np.abs(clipped[finite]).astype(np.float32))).all()
    assert finite.sum() > 0


@pytest.mark.parametrize("function,axes", [("MAX", (0,)), ("MAX", (0, 2)), ("MIN", (1,))])
def test_max_min_gradient_goes_to_the_folds_element_over_any_axes(function, axes, rng):
    # ties of equal values and of -0 with +0, NaN, a group of NaN: the gradient reaches the one
    # element the fold keeps (the CPU finds it by position over axes that are not trailing)
    from tests.reference.reduction.reduce import _grad as reference_grad
    x = rng.integers(-2, 3, (6, 5, 4)).astype(np.float32)  # many ties
    x[0, 0, :] = 0.0
    x[1, :, 1] = -0.0
    x[2, 1, :] = np.nan
    x[:, 3, 2] = np.nan
    kept = tuple(1 if a in axes else s for a, s in enumerate(x.shape))
    dy = rng.standard_normal(kept).astype(np.float32)
    f = jax.jit(lambda v, d: jax.vjp(lambda t: dmljax.reduce(t, function=function, axes=axes), v)[1](d)[0])
    got = np.asarray(f(x, dy))
    want = reference_grad(dy, x, function, axes)[0].astype(np.float32)
    np.testing.assert_array_equal(got, want)
