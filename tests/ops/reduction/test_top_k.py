"""TOP_K and TOP_K1 by hand: the pages' three examples, the tie rule in both directions, NaN, -0
and denormals, the K and Axis rules, index types, and the gradient of the values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers

X = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], np.float32)  # the pages' input
T = np.array([[[[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]]], np.float32)  # Example 3's ties


def _lists(pair):
    return [np.asarray(a).tolist() for a in pair]


def test_page_examples():
    assert _lists(dmljax.top_k(X, axis=3, k=2)) == [[[[[11, 10], [9, 8], [7, 6]]]], [[[[3, 2], [2, 3], [3, 2]]]]]
    assert _lists(dmljax.top_k(X, axis=2, k=2)) == [[[[[4, 5, 10, 11], [3, 2, 9, 8]]]], [[[[2, 2, 0, 0], [1, 1, 1, 1]]]]]
    assert _lists(dmljax.top_k(T, axis=3, k=3)) == [[[[[3, 2, 2], [5, 5, 4], [6, 6, 6]]]],
                                                    [[[[3, 1, 2], [2, 3, 1], [0, 1, 2]]]]]
    for f in (lambda x, **kw: dmljax.top_k1(x, **kw, axis_direction="DECREASING"), dmljax.top_k):
        assert _lists(f(X, axis=3, k=2)) == _lists(dmljax.top_k(X, axis=3, k=2))
    # INCREASING: the smallest, smallest first; ties still in ascending index
    assert _lists(dmljax.top_k1(T, axis=3, k=3, axis_direction="INCREASING")) == [
        [[[[1, 2, 2], [3, 4, 5], [6, 6, 6]]]], [[[[0, 1, 2], [0, 1, 2], [0, 1, 2]]]]]


def test_nan_zeros_and_denormals():
    bits = np.array([0x7FC00123, 0x3F800000, 0x80000000, 0x00000000, 0x00000001, 0xBF800000], np.uint32)
    x = bits.view(np.float32)  # NaN (a payload), 1, -0, +0, a denormal, -1
    v, i = dmljax.top_k1(x, axis=0, k=6, axis_direction="DECREASING")
    # 1; then -0, +0 and the denormal tie (all zero to math) in ascending index; -1; NaN last
    assert np.asarray(i).tolist() == [1, 2, 3, 4, 5, 0]
    assert np.asarray(v).view(np.uint32).tolist() == bits[[1, 2, 3, 4, 5, 0]].tolist()  # the input's own bits
    v, i = dmljax.top_k1(x, axis=0, k=6, axis_direction="INCREASING")
    assert np.asarray(i).tolist() == [5, 2, 3, 4, 1, 0]
    assert np.asarray(dmljax.top_k(np.array([np.nan, np.nan, 2.0], np.float32), axis=0, k=3)[1]).tolist() == [2, 0, 1]


def test_picks_of_numbers_past_nan_zeros_and_denormals():
    # On the CPU lax.top_k of the values themselves stands where none of the K it picks is NaN, a
    # zero or a denormal (rows 0 and 1: NaN of either sign, zeros, denormals and -inf further
    # down); else the keys decide (row 2 picks a -0, row 3 a NaN or a denormal, by direction).
    x = np.array([[5, np.nan, -0.0, 3, 1e-40, -np.nan, 7, -np.inf, 0.0, 4],
                  [-1, 2, 2, np.nan, 9, 0.0, 2, -5e-41, 8, -2],
                  [-3, -0.0, -1, np.nan, -2, 0.0, -4, -1, -5, -6],
                  [1e-39, 3, np.nan, 2, -1e-39, 5, 4, 6, 1, 8]], np.float32)
    for largest in (True, False):
        for k in (4,):
            values, index = dmljax.top_k1(x, axis=1, k=k, axis_direction="DECREASING" if largest else "INCREASING")
            for row, got in zip(x, np.asarray(index)):
                key = np.where(np.abs(row) < np.finfo(np.float32).tiny, 0.0, row) * (1 if largest else -1)
                want = sorted(range(row.size), key=lambda i: (np.isnan(key[i]), -np.nan_to_num(key[i], nan=0.0), i))[:k]
                assert got.tolist() == want, (row, largest, k)
            np.testing.assert_array_equal(np.asarray(values).view(np.uint32), np.take_along_axis(x, np.asarray(index), 1).view(np.uint32))


def test_rules_and_index_types():
    with pytest.raises(dmljax.ValidationError, match=r"K \(argument `k`\) is 5; 1 to 4, the InputTensor's size along Axis 3"):
        dmljax.top_k(X, axis=3, k=5)
    with pytest.raises(dmljax.ValidationError, match="K .* is 0; 1 to 4"):
        dmljax.top_k(X, axis=3, k=0)
    with pytest.raises(dmljax.ValidationError, match=r"Axis \(argument `axis`\) is 4 for a 4-dimensional InputTensor"):
        dmljax.top_k(X, axis=4, k=1)
    assert _lists(dmljax.top_k(X, axis=3, k=4))[1] == [[[[3, 2, 1, 0], [2, 3, 0, 1], [3, 2, 1, 0]]]]  # K = all: a sort
    with pytest.raises(TypeError, match="axis_direction"):
        dmljax.top_k1(X, axis=3, k=1)  # no documented default
    with pytest.raises(dmljax.ValidationError, match="UINT64 is supported from DML_FEATURE_LEVEL_5_0"):
        with jax.enable_x64(True):
            dmljax.top_k(X, axis=3, k=1, output_index_data_type="UINT64", feature_level="4.1")
    with jax.enable_x64(True):
        assert dmljax.top_k(X, axis=3, k=1, output_index_data_type="UINT64")[1].dtype == np.uint64
    with pytest.raises(dmljax.ValidationError, match="supported: 4"):
        dmljax.top_k(X[0, 0], axis=1, k=1, feature_level="3.0")
    i8 = np.array([[-128, 127, 0, -128]], np.int8)
    assert _lists(dmljax.top_k1(i8, axis=1, k=3, axis_direction="INCREASING")) == [[[-128, -128, 0]], [[0, 3, 2]]]


def test_gradient_goes_to_the_selected_elements(rng):
    x = rng.permutation(12).astype(np.float32).reshape(3, 4)
    dy = rng.standard_normal((3, 2)).astype(np.float32)
    g = jax.grad(lambda v: jnp.sum(dmljax.top_k(v, axis=1, k=2)[0] * dy))(x)
    idx = np.argsort(-x, axis=1)[:, :2]
    want = np.zeros_like(x)
    np.put_along_axis(want, idx, dy, axis=1)
    assert np.array_equal(np.asarray(g), want)
    gi = jax.grad(lambda v: jnp.sum(dmljax.top_k(v, axis=0, k=1)[0]).astype(jnp.float32), allow_int=True)(
        np.ones(3, np.int32))
    assert gi.dtype == jax.dtypes.float0
    assert jax.jit(lambda v: dmljax.top_k(v, axis=1, k=2))(x)[1].shape == (3, 2)


def test_nan_after_infinities_on_the_fast_path_and_off_it():
    # FLOAT32 keys make NaN -inf; a row holding both takes the integer keys, where NaN comes last
    x = np.array([[np.nan, -np.inf, 1, np.nan, -np.inf], [3, 1, 2, 0, -1]], np.float32)
    v, i = dmljax.top_k(x, axis=1, k=5)
    assert np.asarray(i).tolist() == [[2, 1, 4, 0, 3], [0, 2, 1, 3, 4]]
    v, i = jax.jit(lambda t: dmljax.top_k1(t, axis=1, k=5, axis_direction="INCREASING"))(-x)
    assert np.asarray(i).tolist() == [[2, 1, 4, 0, 3], [0, 2, 1, 3, 4]]
    h = np.array([np.inf, np.nan, 1, -0.0, 0.0], np.float16)
    assert np.asarray(dmljax.top_k1(h, axis=0, k=5, axis_direction="INCREASING")[1]).tolist() == [3, 4, 2, 0, 1]
    # FLOAT16's -inf becomes -FLT_MAX in its FLOAT32 keys (no clash with NaN there): below -65504, above NaN
    h = np.array([np.nan, -np.inf, -65504, np.nan, -np.inf, 65504, np.inf], np.float16)
    assert np.asarray(dmljax.top_k(h, axis=0, k=7)[1]).tolist() == [6, 5, 2, 1, 4, 0, 3]
    assert np.asarray(dmljax.top_k1(h, axis=0, k=7, axis_direction="INCREASING")[1]).tolist() == [1, 4, 2, 5, 6, 0, 3]


def test_k_one_is_the_first_extreme():
    # K = 1 takes ARGMAX/ARGMIN's one pass: the first of tied extremes, NaN only where a row holds nothing else
    x = np.array([[2, 5, 5, 1], [np.nan, -np.inf, np.nan, -np.inf], [np.nan, np.nan, np.nan, np.nan],
                  [-0.0, 0.0, np.float32(1e-40), -1]], np.float32)
    assert np.asarray(dmljax.top_k(x, axis=1, k=1)[1]).ravel().tolist() == [1, 1, 0, 0]
    assert np.asarray(dmljax.top_k1(x, axis=1, k=1, axis_direction="INCREASING")[1]).ravel().tolist() == [3, 1, 0, 3]
    v, i = dmljax.top_k1(x.T, axis=0, k=1, axis_direction="DECREASING")
    assert v.shape == (1, 4) and np.asarray(i).ravel().tolist() == [1, 1, 0, 0]
    assert np.asarray(v).view(np.uint32).ravel().tolist() == x[[0, 1, 2, 3], [1, 1, 0, 0]].view(np.uint32).tolist()


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_staged_selection_is_exact(monkeypatch, rng):
    # chunks of 8 over rows of 45 (a ragged last chunk; three stages for k = 2), ties, -0, NaN with and
    # without -inf in the row (the FLOAT32 keys and the integer keys), integers
    from dmljax._src.ops.reduction import top_k as module
    from tests.reference.reduction.top_k import _select
    pool = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 1, -1, 2], np.float32)
    rows = np.stack([rng.choice(pool, 45), rng.choice(pool[1:], 45), rng.integers(0, 5, 45).astype(np.float32)])
    monkeypatch.setattr(module, "STAGE_CHUNK", 8)
    for x, k, largest in ((rows, 2, True), (rows[1:], 3, False), (rows, 4, False), (rows.astype(np.int8)[1:], 2, True)):
        got = jax.jit(lambda t: module.top_k_along(t, 1, k, largest, np.uint32))(x)  # a new trace: STAGE_CHUNK read
        want = _select(x, 1, k, largest)  # the NumPy reference
        assert np.array_equal(np.asarray(got[1]), want[1]), (x.dtype, k, largest)
        assert np.asarray(got[0]).tobytes() == want[0].tobytes()


# ---------------------------------------------------------------------------------- the GPU kernel
@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
@pytest.mark.parametrize("dtype, largest, group, n", tiers.fast_sample([
    pytest.param(dtype, largest, group, n) for largest in (True, False) for dtype in (np.float32, np.float16)
    for group, n in ((0, 1024), (8, 1024), (32, 1024))], keep=3, key="rows"))
def test_row_kernel_gives_the_xla_paths_indices(dtype, largest, group, n, monkeypatch):
    # Short selections of rows on a GPU take a Pallas kernel (dmljax/_src/kernels/top_k.py); run
    # here in Pallas's interpreter, in each form (with and without ranking groups first), it must
    # give the XLA path's indices bit for bit: ties (half the row repeats a value) to the
    # lower index, -0 tied with +0, FLOAT32 denormals with zero,
    # NaN after every number (a row of NaN with one -inf, a row of -0 only).
    from dmljax._src.kernels import top_k as top_k_kernel
    from dmljax._src.kernels.top_k import TOP_K_ROWS, top_k_rows
    monkeypatch.setattr(top_k_kernel, "GROUP", group)  # 0: K passes over the row; else groups first
    rng = np.random.default_rng(5)
    x = (rng.integers(-20, 20, (8, n)) * 0.5).astype(dtype)
    x[0, :5] = [np.nan, -np.inf, np.nan, 0.0, -0.0]
    x[1, 10:14] = [np.inf, -np.inf, np.nan, -np.nan]
    x[2, :], x[2, 100] = np.nan, -np.inf
    x[4, :] = -0.0
    if dtype == np.float32:
        x[3, :6] = [1e-40, -1e-40, 0.0, -0.0, 1e-39, 5.0]
    assert TOP_K_ROWS.applies(x.shape, 1, 16, dtype) and not TOP_K_ROWS.applies(x.shape, 1, 17, dtype)
    assert not TOP_K_ROWS.applies(x.shape, 0, 4, dtype) and not TOP_K_ROWS.applies((8, 1000), 1, 4, dtype)
    assert not TOP_K_ROWS.applies((8, 2048), 1, 4, dtype)  # longer rows: the threshold kernels
    assert not TOP_K_ROWS.applies(x.shape, 1, 1, dtype)  # K = 1: ARGMAX's one pass
    for k in (2, 5, 16):
        got = np.asarray(top_k_rows(jnp.asarray(x), k, largest, interpret=True))
        if largest:
            want = dmljax.top_k(x, axis=1, k=k)[1]
        else:
            want = dmljax.top_k1(x, axis=1, k=k, axis_direction="INCREASING")[1]
        np.testing.assert_array_equal(got, np.asarray(want).astype(np.int32))


def test_long_selections_are_staged_on_nvidia_gpus_only():
    # Lowered here for each platform: on CUDA rows longer than GPU_STAGE_CHUNK are cut into
    # chunks of it (XLA's top_k sorts a whole row for k > 16 there); the CPU keeps one top_k.
    # (rows of 30,000: not a power of two, so not the threshold kernels' either)
    f = jax.jit(lambda v: dmljax.top_k(v, axis=1, k=256))

    def top_k_inputs(platform):
        text = f.trace(jax.ShapeDtypeStruct((4, 30000), jnp.float32)).lower(lowering_platforms=(platform,)).as_text()
        return [ln.split(":")[-1].split("->")[0].strip() for ln in text.splitlines() if "chlo.top_k" in ln]
    assert top_k_inputs("cuda")[0] == "tensor<4x30x1024xf32>"
    assert "tensor<4x30000xf32>" in top_k_inputs("cpu") and not any("x1024x" in s for s in top_k_inputs("cpu"))


@pytest.mark.slow  # 18 s in the interpreter; the row kernel's test covers TOP_K's kernels in the fast tier
@pytest.mark.parametrize("dtype, largest", [(np.float32, True), (np.float16, False)])
def test_threshold_kernels_give_the_xla_paths_indices(dtype, largest, monkeypatch):
    # K from 17 over rows of 2,048 or more on a GPU take two Pallas kernels
    # (dmljax/_src/kernels/top_k_threshold.py: the K best groups by a bisected threshold, then the K best
    # of their elements); run here in Pallas's interpreter, they must give the XLA path's indices
    # bit for bit: ties across the threshold (values of a few levels, so the K-th value repeats in
    # many groups) to the lower index, -0 tied with +0, FLOAT32 denormals with zero, NaN after every
    # number (a row of NaN with one -inf, a row of -0 only), and K up to a quarter of the groups;
    # the K ordered in the second kernel (their ranks: of the candidates at or above the best groups'
    # threshold where few reach it, else of the K after a bisection), in a third and by XLA's sort.
    from dmljax._src.kernels import top_k_threshold as threshold_kernel
    from dmljax._src.kernels.top_k_threshold import (TOP_K_THRESHOLD,
                                                     threshold_rows)
    rng = np.random.default_rng(7)
    n = 2048
    x = (rng.integers(-20, 20, (8, n)) * 0.5).astype(dtype)
    x[0, :5] = [np.nan, -np.inf, np.nan, 0.0, -0.0]
    x[1, 10:14] = [np.inf, -np.inf, np.nan, -np.nan]
    x[2, :], x[2, 100] = np.nan, -np.inf
    x[4, :] = -0.0
    x[5] = rng.standard_normal(n).astype(dtype)
    x[6] = rng.integers(0, 3, n).astype(dtype)  # three levels: the threshold's ties span the row
    x[6, 64:96], x[6, 8::32] = np.nan, np.nan  # a group of NaN only; a NaN in many groups
    x[7] = np.sort(rng.standard_normal(n))[::-1].astype(dtype)  # descending: the best groups first
    if dtype == np.float32:
        x[3, :6] = [1e-40, -1e-40, 0.0, -0.0, 1e-39, 5.0]
    assert TOP_K_THRESHOLD.applies(x.shape, 1, 2, dtype) and TOP_K_THRESHOLD.applies(x.shape, 1, 64, dtype)
    assert not TOP_K_THRESHOLD.applies(x.shape, 1, 1, dtype) and not TOP_K_THRESHOLD.applies(x.shape, 1, 65, dtype)  # 2048 / 8 / 4
    assert not TOP_K_THRESHOLD.applies(x.shape, 0, 17, dtype) and not TOP_K_THRESHOLD.applies((7, 3000), 1, 17, dtype)
    assert not TOP_K_THRESHOLD.applies(x.shape, 1, 17, np.int32)
    # DIRECT_MAX 1: every row's K-th key bisected; 256 (K * GROUP here): every row's candidates ranked
    # directly; narrow: the bisection from two bounds' common bits (NARROW_DTYPES), else over every bit;
    # K > ORDER_MAX: ordered by the third kernel's ranks up to RANK_MAX, beyond by XLA's sort
    for k, order_max, direct_max, narrow, rank_max in (
            (2, 32, 64, True, 256), (17, 32, 64, True, 256), (17, 32, 1, True, 256), (17, 32, 1, False, 256),
            (17, 32, 256, True, 256), (50, 64, 64, True, 256), (64, 32, 64, False, 256), (40, 32, 64, True, 256),
            (50, 32, 64, True, 32)):
        monkeypatch.setattr(threshold_kernel, "RANK_MAX", rank_max)
        monkeypatch.setattr(threshold_kernel, "ORDER_MAX", order_max)
        monkeypatch.setattr(threshold_kernel, "DIRECT_MAX", direct_max)
        monkeypatch.setattr(threshold_kernel, "NARROW_DTYPES", (dtype,) if narrow else ())
        got, values = (np.asarray(a) for a in threshold_rows(jnp.asarray(x), k, largest, interpret=True))
        if largest:
            want = dmljax.top_k(x, axis=1, k=k)[1]
        else:
            want = dmljax.top_k1(x, axis=1, k=k, axis_direction="INCREASING")[1]
        np.testing.assert_array_equal(got, np.asarray(want).astype(np.int32))
        bits = np.uint32 if dtype == np.float32 else np.uint16  # the values: the input's own bits
        np.testing.assert_array_equal(values.view(bits), np.take_along_axis(x, got, axis=1).view(bits))


def test_threshold_kernels_lower_for_nvidia_gpus_only():
    # Lowered here for each platform: on CUDA a K of 256 over rows of 32,768 is the two kernels
    # (and the sort of the K, not a top_k); the CPU keeps one top_k of the whole row.
    f = jax.jit(lambda v: dmljax.top_k1(v, axis=1, k=256, axis_direction="INCREASING"))

    def text(platform):
        return f.trace(jax.ShapeDtypeStruct((4, 32768), jnp.float16)).lower(lowering_platforms=(platform,)).as_text()
    cuda, cpu = text("cuda"), text("cpu")
    assert "dmljax_row_top_k_groups" in cuda and "dmljax_row_top_k_pick" in cuda and "chlo.top_k" not in cuda
    assert "dmljax_row_top_k" not in cpu and "chlo.top_k" in cpu


@pytest.mark.parametrize("largest", [True, False])
def test_threshold_kernels_half_keys_order_as_argmaxs(largest):
    # The threshold kernels rank FLOAT16 by 17-bit keys of their own (fewer bisection steps): over
    # every FLOAT16 bit pattern they must order, and tie, exactly as ARGMAX's 32-bit keys do (-0 with
    # +0, every NaN together below every number).
    from dmljax._src.kernels.top_k import keys_of
    from dmljax._src.kernels.top_k_threshold import _key_range, _keys
    v = jnp.asarray(np.arange(1 << 16, dtype=np.uint16).view(np.float16))
    short, wide = np.asarray(_keys(v, largest)).astype(np.int64), np.asarray(keys_of(v, largest, False)).astype(np.int64)
    order = np.argsort(wide, kind="stable")
    assert np.all(np.diff(short[order]) >= 0)
    assert np.array_equal(np.diff(short[order]) == 0, np.diff(wide[order]) == 0)
    lowest, bits = _key_range(np.float16)
    assert short.min() >= lowest and short.max() < lowest + 2 ** bits


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_values_of_the_threshold_path_differentiate_as_a_gather():
    # Where the threshold kernels may run (rows of 2,048 on a GPU) the values come with the
    # selection (threshold_kernel gathers them in its second kernel) and get their derivative from
    # top_k's _selected: the cotangent scattered to the selected elements (jax.grad), the tangent's
    # elements there (jax.jvp), also under vmap; here on the CPU the same rule wraps XLA's gather.
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 2048)).astype(np.float32)
    w = rng.standard_normal((3, 20)).astype(np.float32)
    f = lambda t: jnp.sum(dmljax.top_k(t, axis=1, k=20)[0] * w)  # noqa: E731
    idx = np.asarray(dmljax.top_k(x, axis=1, k=20)[1])
    want = np.zeros_like(x)
    np.put_along_axis(want, idx.astype(np.int64), w, axis=1)
    np.testing.assert_array_equal(np.asarray(jax.grad(f)(x)), want)
    dx = rng.standard_normal(x.shape).astype(np.float32)
    _, tangent = jax.jvp(lambda t: dmljax.top_k(t, axis=1, k=20)[0], (x,), (dx,))
    np.testing.assert_array_equal(np.asarray(tangent), np.take_along_axis(dx, idx.astype(np.int64), axis=1))
    batched = jax.vmap(jax.grad(f))(np.stack([x, -x]))
    np.testing.assert_array_equal(np.asarray(batched[0]), want)
    text = jax.jit(jax.grad(f)).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    assert "dmljax_row_top_k_pick" in text  # on a GPU the gradient's forward pass runs the kernels
