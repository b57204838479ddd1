"""Hand-written edges of CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT: the pages' examples, every
direction and exclusivity, integers that wrap, FLOAT16 computed in FLOAT32, NaN and infinities,
products with zeros (gradient without division), the Axis rule and the desc. Expected values are
the pages' or worked out by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers

PAGE_X = np.array([[[[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]]]], np.float32)  # both pages' input


@pytest.mark.parametrize("kwargs,want", [
    ({"axis": 3}, [[2, 3, 6, 11], [3, 11, 18, 21], [9, 15, 17, 21]]),                       # Example 1
    ({"axis": 3, "has_exclusive_sum": True}, [[0, 2, 3, 6], [0, 3, 11, 18], [0, 9, 15, 17]]),  # 2
    ({"axis": 3, "axis_direction": "DECREASING"}, [[11, 9, 8, 5], [21, 18, 10, 3], [21, 12, 6, 4]]),  # 3
    ({"axis": 2}, [[2, 1, 3, 5], [5, 9, 10, 8], [14, 15, 12, 12]]),                          # 4
    ({"axis": 3, "axis_direction": "DECREASING", "has_exclusive_sum": True},
     [[9, 8, 5, 0], [18, 10, 3, 0], [12, 6, 4, 0]]),
])
def test_summation_page_examples(kwargs, want):
    for dtype in (np.float32, np.float16, np.int32, np.uint32):
        out = dmljax.cumulative_summation(PAGE_X.astype(dtype), **kwargs)
        assert out.dtype == dtype
        np.testing.assert_array_equal(out[0, 0], np.array(want, dtype))


@pytest.mark.parametrize("kwargs,want", [
    ({"axis": 3}, [[2, 2, 6, 30], [3, 24, 168, 504], [9, 54, 108, 432]]),                      # Example 1
    ({"axis": 3, "has_exclusive_product": True}, [[1, 2, 2, 6], [1, 3, 24, 168], [1, 9, 54, 108]]),  # 2
    ({"axis": 3, "axis_direction": "DECREASING"}, [[30, 15, 15, 5], [504, 168, 21, 3], [432, 48, 8, 4]]),
    ({"axis": 3, "axis_direction": "DECREASING", "has_exclusive_product": True},
     [[15, 15, 5, 1], [168, 21, 3, 1], [48, 8, 4, 1]]),
])
def test_product_page_examples(kwargs, want):
    for dtype in (np.float32, np.float16, np.int32):
        out = dmljax.cumulative_product(PAGE_X.astype(dtype), **kwargs)
        np.testing.assert_array_equal(out[0, 0], np.array(want, dtype))


def test_integers_wrap_around():
    x = np.array([2**31 - 1, 1, 1], np.int32)
    np.testing.assert_array_equal(dmljax.cumulative_summation(x, axis=0), np.array([2**31 - 1, -2**31, -2**31 + 1], np.int32))
    u = np.array([2**31, 2, 3], np.uint32)
    np.testing.assert_array_equal(dmljax.cumulative_product(u, axis=0), np.array([2**31, 0, 0], np.uint32))


def test_float16_is_tallied_in_float32_and_rounded_once():
    # 4097 ones: a FLOAT16 running sum sticks at 2048 (2048 + 1 rounds back to 2048); in FLOAT32
    # each partial sum is exact and rounded once to FLOAT16.
    out = np.asarray(dmljax.cumulative_summation(np.ones(4097, np.float16), axis=0), np.float64)
    np.testing.assert_array_equal(out, np.arange(1, 4098).astype(np.float16).astype(np.float64))
    half = np.asarray(dmljax.cumulative_summation(np.ones(4097, np.float16), axis=0,
                                                  allow_half_precision_computation=True), np.float64)
    assert half[-1] <= 4096  # FLOAT16 arithmetic is allowed to lose it (its budget says how much)


def test_nan_and_infinities_run_on():
    x = np.array([1.0, np.nan, 2.0, np.inf, -np.inf], np.float32)
    s = np.asarray(dmljax.cumulative_summation(x, axis=0))
    assert s[0] == 1 and np.isnan(s[1:]).all()
    y = np.array([1.0, np.inf, -2.0, 0.0, 3.0], np.float32)
    np.testing.assert_array_equal(dmljax.cumulative_summation(y, axis=0), [1, np.inf, np.inf, np.inf, np.inf])
    p = np.asarray(dmljax.cumulative_product(y, axis=0))
    assert p[:3].tolist() == [1, np.inf, -np.inf] and np.isnan(p[3:]).all()  # inf * 0


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_product_gradient_with_zeros_has_no_division():
    # d/dx_k of the running product: the product of the other factors, also where x_k = 0.
    x = np.array([2.0, 0.0, 3.0, 0.5], np.float32)
    g = np.asarray(jax.grad(lambda v: dmljax.cumulative_product(v, axis=0).sum())(x))
    # outputs: 2, 0, 0, 0; d/dx0 = 1 + 0 + 0 + 0; d/dx1 = 2 + 2*3 + 2*3*0.5 = 11; d/dx2 = 0 + 0 = 0
    np.testing.assert_array_equal(g, [1.0, 11.0, 0.0, 0.0])
    ge = np.asarray(jax.grad(lambda v: dmljax.cumulative_product(v, axis=0, has_exclusive_product=True).sum())(x))
    # exclusive outputs: 1, 2, 0, 0; d/dx0 = 1 + 0 + 0 = 1; d/dx1 = 2 + 2*3 = 8; d/dx2 = 0; d/dx3 = 0
    np.testing.assert_array_equal(ge, [1.0, 8.0, 0.0, 0.0])


def test_summation_gradient_is_the_other_way_tally():
    x = np.zeros(4, np.float32)
    w = np.array([1.0, 2.0, 4.0, 8.0], np.float32)
    for kwargs, want in [({}, [15, 14, 12, 8]), ({"has_exclusive_sum": True}, [14, 12, 8, 0]),
                         ({"axis_direction": "DECREASING"}, [1, 3, 7, 15]),
                         ({"axis_direction": "DECREASING", "has_exclusive_sum": True}, [0, 1, 3, 7])]:
        g = jax.grad(lambda v, kw=kwargs: jnp.sum(dmljax.cumulative_summation(v, axis=0, **kw) * w))(x)
        np.testing.assert_array_equal(g, np.array(want, np.float32), err_msg=str(kwargs))


def test_axis_out_of_range_is_refused():
    with pytest.raises(dmljax.ValidationError, match=r"Axis \(argument `axis`\) is 2 for a 2-dimensional InputTensor"):
        dmljax.cumulative_summation(np.zeros((2, 3), np.float32), axis=2)
    with pytest.raises(dmljax.ValidationError, match="AxisDirection"):
        dmljax.cumulative_product(np.zeros((2, 3), np.float32), axis=0, axis_direction="SIDEWAYS")


def test_desc_with_the_pages_members():
    t = {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 4]}
    op = dmljax.compile_operator("CUMULATIVE_PRODUCT", {
        "InputTensor": t, "OutputTensor": t, "Axis": 3,
        "AxisDirection": "DML_AXIS_DIRECTION_INCREASING", "HasExclusiveProduct": False})
    out = op(InputTensor=np.array([2, 4, 8, 3], np.float32), OutputTensor=np.zeros(4, np.float32))["OutputTensor"]
    np.testing.assert_array_equal(out, [2, 8, 64, 192])  # DxDispatch's dml_cumulative_product.json


def test_product_partials_never_overflow_where_the_prefix_does_not():
    # XLA's scan reassociates: on the H100 3e38 * (0.47 * ...) came out inf where the prefix
    # product is 1.4e38. The result is redone with exponents apart when a 0, inf or NaN appears
    # where no term is one; true overflow and underflow stay.
    x = np.array([3e38, 0.47, 2.0, 0.5, 4.0, 0.25], np.float32)
    want = np.cumprod(x.astype(np.float64))
    got = np.asarray(dmljax.cumulative_product(x, axis=0), np.float64)
    finite = want < np.finfo(np.float32).max
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6)
    assert np.isinf(got[~finite]).all()
    big = np.array([[1e30, 1e30, 1e-30, 1e-30]], np.float32)
    got = np.asarray(jax.jit(lambda v: dmljax.cumulative_product(v, axis=1))(big), np.float64).ravel()
    assert got[0] == np.float32(1e30) and np.isinf(got[1]) and abs(got[2] / 1e30 - 1) < 1e-6 and abs(got[3] - 1) < 1e-6
    rev = np.asarray(dmljax.cumulative_product(big, axis=1, axis_direction="DECREASING", has_exclusive_product=True))
    assert rev.ravel()[1] == 0 and rev.ravel()[3] == 1  # 1e-60 underflows for real; the empty product is 1
    with_zero = np.array([3e38, 0.47, 0.0, 2.0], np.float32)  # a zero term: zeros after it are true
    got = np.asarray(dmljax.cumulative_product(with_zero, axis=0), np.float64)
    assert abs(got[1] / 1.41e38 - 1) < 1e-2 and got[2] == 0 and got[3] == 0


@pytest.mark.parametrize("reverse, exclusive", tiers.fast_sample([(False, False), (True, True), (False, True), (True, False)],
                                                          keep=2, key="far"))
def test_product_prefixes_far_beyond_float64_come_back(reverse, exclusive):
    # On the CPU the product is taken in FLOAT64 blocks of 8 terms, the blocks' totals as
    # (mantissa, exponent) pairs, renormalized every 256 blocks (cumulative._product_in_blocks):
    # rows of 4,100 (padded to blocks of 8; three groups of 256 blocks) whose prefixes climb to
    # 2^1500 (past FLOAT64) and come back to 1 across a block's and a group's edge, a long run of
    # halves whose prefix passes 2^-1074 and comes back, and signed zeros. The values are powers
    # of two: every expected prefix is exact.
    n = 4100
    x = np.ones((2, n), np.float32)
    x[0, 2040:2055] = 2.0 ** 100  # up to 2^1500 ...
    x[0, 2055:2070] = 2.0 ** -100  # ... and back to 1, across the group's edge at 2,048
    x[1, 5:1205] = 0.5  # down to 2^-1200 ...
    x[1, 1205:2405] = 2.0  # ... and back
    x[1, 3000], x[1, 3001] = -0.0, -4.0  # a zero's sign is the product's
    got = np.asarray(dmljax.cumulative_product(x, axis=1, axis_direction=int(reverse), has_exclusive_product=exclusive))
    logs = np.log2(np.abs(np.where(x == 0, 1, x))).astype(np.int64)  # exact for these powers of two
    order = slice(None, None, -1) if reverse else slice(None)
    acc = np.cumsum(logs[:, order], axis=1)[:, order]
    signs = np.cumprod(np.where(np.signbit(x), -1, 1)[:, order], axis=1)[:, order]
    zeros = np.cumsum((x == 0)[:, order], axis=1)[:, order] > 0
    if exclusive:  # the terms before each: the inclusive tally one step back, 1 first
        shift = (lambda a, first: np.concatenate([a[:, 1:], first], 1)) if reverse else \
            (lambda a, first: np.concatenate([first, a[:, :-1]], 1))
        acc, signs = shift(acc, np.zeros((2, 1), np.int64)), shift(signs, np.ones((2, 1), np.int64))
        zeros = shift(zeros, np.zeros((2, 1), bool))
    with np.errstate(over="ignore"):
        want = np.where(acc > 127, np.inf, np.where(acc < -126, 0.0, np.exp2(acc.clip(-126, 127).astype(np.float64))))
    want = (np.where(zeros, 0.0, want) * signs).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


# ---------------------------------------------------------------------------------- the GPU kernel
_MODES = [(False, False), (False, True), (True, False), (True, True)]


@pytest.mark.parametrize("dtype, reverse, exclusive, max_row", tiers.fast_sample([
    pytest.param(dtype, *mode, max_row) for max_row in (8192, 64) for mode in _MODES
    for dtype in (np.float32, np.float16)], keep=4, key="rows"))
def test_row_kernel_matches_the_reference(dtype, reverse, exclusive, max_row, monkeypatch):
    # Rows on a GPU take a Pallas kernel (dmljax/_src/kernels/cumulative.py); run here in Pallas's
    # interpreter, it must give what the operator's reference gives within the operator's budget,
    # NaN, infinities and FLOAT32 denormals included (the H100 run checks the compiled kernel:
    # tests/gpu/kernels.py, tests/gpu/semantics.py): whole rows in a block, and rows longer than
    # MAX_ROW (64 here: four blocks a row, the sum carried across).
    from dmljax._src.kernels import cumulative as cumulative_kernel
    from dmljax._src.kernels.cumulative import (CUMULATIVE_SUMMATION_ROWS,
                                                scan_rows)
    monkeypatch.setattr(cumulative_kernel, "MAX_ROW", max_row)
    from tests.compare import assert_matches
    from tests.reference.reduction.cumulative import (_cumulative,
                                                      _sum_magnitude)
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((4, 3, 256)) * 4).astype(dtype)
    x[0, 0, 3], x[1, 2, 9], x[2, 1, 0] = np.nan, np.inf, -np.inf
    x[3, 1, 60:68] = [50.0, 50.0, -50.0, 1.0, -50.0, 2.0, 3.0, 4.0]  # larger terms across a block edge
    if dtype == np.float32:
        x[3, 0, :4] = [1e-40, -1e-40, 1e-39, 0.0]
        x[3, 0, 126:130] = [1e-40, -1e-40, 1e-39, 0.0]
    assert CUMULATIVE_SUMMATION_ROWS.applies(x.shape, 2, dtype, False) and not CUMULATIVE_SUMMATION_ROWS.applies(x.shape, 2, dtype, True)
    assert not CUMULATIVE_SUMMATION_ROWS.applies(x.shape, 1, dtype, False) and not CUMULATIVE_SUMMATION_ROWS.applies((4, 3, 200), 2, dtype, False)
    assert not CUMULATIVE_SUMMATION_ROWS.applies((3, 64), 1, dtype, False)  # 64 elements a program: XLA
    kwargs = {"axis": 2, "axis_direction": int(reverse), "has_exclusive_sum": exclusive}
    got = scan_rows(jnp.asarray(x), reverse, exclusive, interpret=True)
    dt = dmljax.DataType.from_dtype(np.dtype(dtype))
    budget = dmljax.get_operator("CUMULATIVE_SUMMATION").spec.budget(dt, x.shape, {"Axis": 2})
    assert_matches(got, _cumulative(False)(x, **kwargs), dt, budget, magnitude=_sum_magnitude(x, **kwargs))


# The defaults' two paths (whole rows in a block; longer rows by sub-blocks) in every mode and
# type; the pair scan of every element of a long row (PRODUCT_SUB 0, kept for the benchmarks'
# comparisons) in two. Three of them in the fast tier (each takes seconds in the interpreter).
@pytest.mark.parametrize("block, sub, reverse, exclusive, dtype", tiers.fast_sample([
    pytest.param(block, sub, *mode, dtype) for block, sub in ((1024, 0), (64, 8)) for mode in _MODES
    for dtype in (np.float32, np.float16)] + [pytest.param(64, 0, False, False, np.float32),
                                              pytest.param(64, 0, True, True, np.float16)], keep=3, key="product"))
def test_product_row_kernel_matches_the_reference(dtype, reverse, exclusive, block, sub, monkeypatch):
    # CUMULATIVE_PRODUCT's rows take the pair scan kernel on a GPU (cumulative_kernel.product_rows):
    # in Pallas's interpreter it must give the reference within the budget, with partial products
    # beyond FLOAT32's range whose prefixes are in it, true overflow and underflow, a prefix that
    # comes back into range, zeros, NaN, infinities and FLOAT32 denormals; whole rows in a block,
    # and rows longer than PRODUCT_BLOCK (64 here: four blocks a row, the product carried across,
    # the extremes placed across the blocks' edges), by the pair scan of every element (sub 0) and
    # by sub-blocks of 8 (the tile kernel: extremes also across a sub-block's edge inside a block).
    from dmljax._src.kernels import cumulative as cumulative_kernel
    from dmljax._src.kernels.cumulative import (CUMULATIVE_PRODUCT_ROWS,
                                                product_rows)
    monkeypatch.setattr(cumulative_kernel, "PRODUCT_BLOCK", block)
    monkeypatch.setattr(cumulative_kernel, "PRODUCT_SUB", sub)
    from tests.compare import assert_matches, round_to
    from tests.reference.reduction.cumulative import _cumulative
    rng = np.random.default_rng(8)
    x = np.exp(rng.standard_normal((4, 3, 256)) * 0.3).astype(np.float32) * rng.choice([-1, 1], (4, 3, 256))
    x[0, 0, 3], x[1, 2, 9], x[2, 1, 0], x[2, 2, 5] = np.nan, np.inf, -np.inf, 0.0
    if dtype == np.float32:
        x[3, 0, :6] = [3e38, 0.47, 2.0, 0.5, 4.0, 0.25]  # partials past the range, prefixes in it
        x[3, 1, :4] = [1e30, 1e30, 1e-30, 1e-30]  # a true overflow, then back to 1e30 and 1
        x[3, 2, :4] = [1e-40, 2.0, -1e-39, 3.0]  # denormals read as zeros
        x[1, 0, 62:68] = [3e38, 0.47, 2.0, 0.5, 4.0, 0.25]  # the same across a block's edge
        x[1, 1, 126:130] = [1e30, 1e30, 1e-30, 1e-30]
        x[2, 0, 5:11] = [3e38, 0.47, 2.0, 0.5, 4.0, 0.25]  # across a sub-block's edge (8)
    else:  # FLOAT16: ten 60,000s (6e47, past FLOAT32), then back to 1 by ten 1 / 60,000s (denormal)
        x[3, 0, 2:22] = [60000.0] * 10 + [1 / 60000.0] * 10
        x[2, 0, 100:140] = [60000.0] * 20 + [1 / 60000.0] * 20  # across blocks' and sub-blocks' edges
    x[0, 1, 191:193] = [np.inf, 0.0]  # inf * 0 across an edge: NaN on
    x[1, 2, 20] = -0.0  # zeros of either sign on, the sign carried across sub-blocks and blocks
    x = x.astype(dtype)
    assert CUMULATIVE_PRODUCT_ROWS.applies(x.shape, 2, dtype, False) and not CUMULATIVE_PRODUCT_ROWS.applies(x.shape, 2, dtype, True)
    assert not CUMULATIVE_PRODUCT_ROWS.applies(x.shape, 1, dtype, False) and not CUMULATIVE_PRODUCT_ROWS.applies((4, 3, 200), 2, dtype, False)
    kwargs = {"axis": 2, "axis_direction": int(reverse), "has_exclusive_product": exclusive}
    got = product_rows(jnp.asarray(x), reverse, exclusive, interpret=True)
    dt = dmljax.DataType.from_dtype(np.dtype(dtype))
    budget = dmljax.get_operator("CUMULATIVE_PRODUCT").spec.budget(dt, x.shape, {"Axis": 2})
    candidates = _cumulative(True)(x, **kwargs)
    assert_matches(got, candidates, dt, budget)
    # assert_matches takes +0 for -0: the zeros' signs (the product's signs) are checked here
    got, ref = np.asarray(got), round_to(np.asarray(candidates[0]), dt)
    zero = (got == 0) & (ref == 0)
    assert zero.any() and (np.signbit(got[zero]) == np.signbit(ref[zero])).all()


def test_product_rows_lower_to_one_triton_kernel():
    # What the GPU compiles (lowered here for CUDA without a GPU): one Triton kernel for the rows,
    # and no XLA scan; the H100 run compiles and checks it (tests/gpu/kernels.py).
    f = jax.jit(lambda v: dmljax.cumulative_product(v, axis=1, has_exclusive_product=True))
    text = f.trace(jax.ShapeDtypeStruct((64, 1024), jnp.float16)).lower(lowering_platforms=("cuda",)).as_text()
    assert text.count("xla.gpu.triton") == 1 and 'name = "dmljax_row_cumprod"' in text
    assert "reduce_window" not in text and "while" not in text
    # rows longer than PRODUCT_BLOCK (and the sum's MAX_ROW): the same one kernel, its loop over
    # the blocks inside it
    text = f.trace(jax.ShapeDtypeStruct((4, 65536), jnp.float16)).lower(lowering_platforms=("cuda",)).as_text()
    assert text.count("xla.gpu.triton") == 1 and 'name = "dmljax_row_cumprod"' in text
    assert "reduce_window" not in text and "stablehlo.while" not in text
    f = jax.jit(lambda v: dmljax.cumulative_summation(v, axis=1, axis_direction="DECREASING"))
    text = f.trace(jax.ShapeDtypeStruct((4, 65536), jnp.float16)).lower(lowering_platforms=("cuda",)).as_text()
    assert text.count("xla.gpu.triton") == 1 and 'name = "dmljax_row_cumsum"' in text
    assert "reduce_window" not in text and "stablehlo.while" not in text


@pytest.mark.parametrize("reverse", [0, 1])
def test_product_zeros_keep_their_sign_where_the_scan_is_redone(reverse):
    # A row with a true overflow whose prefix comes back into range makes the XLA path redo the
    # tensor's scan with the exponents apart, an associative scan; JAX's own associative scan
    # interleaves by adding zero-padded arrays, which made -0.0 +0.0. A product's zero has its
    # factors' sign (IEEE), as float64's cumprod gives it.
    x = np.ones((3, 8), np.float32)
    x[0, :4] = [1e30, 1e30, 1e-30, 1e-30] if not reverse else [1e-30, 1e-30, 1e30, 1e30]
    x[1] = [1.5, -2.0, 0.0, 3.0, -1.0, 1.0, 0.5, -2.0]
    x[2] = [-0.0, 2.0, -1.0, 1.0, -3.0, 1.0, 1.0, 1.0]
    got = np.asarray(dmljax.cumulative_product(x, axis=1, axis_direction=reverse))
    wide = x.astype(np.float64)
    ref = np.cumprod(wide[:, ::-1], axis=1)[:, ::-1] if reverse else np.cumprod(wide, axis=1)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(got, ref.astype(np.float32), rtol=1e-6)  # 1e60: inf; back to 1e30 and 1
    zero = ref == 0
    assert zero.sum() >= 4 and (np.signbit(got[zero]) == np.signbit(ref[zero])).all()
