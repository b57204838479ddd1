"""The windowed poolings by hand: the pages' worked examples verbatim (MAX_POOLING_GRAD's and
AVERAGE_POOLING_GRAD's), jax.grad of each forward operator equal to its *_GRAD operator, MAX's
tie, NaN, signed-zero and denormal rules and its index layout, windows lying wholly in the
padding, IncludePadding's divisor, FLOAT16 sums in FLOAT32, LP's P = 1 and P = 3, MAX_UNPOOLING's
repeated and out-of-range indices, every path of the gradients (one broadcast for tiling windows,
padded copies, the large windows' fallbacks), descs, and the geometry's messages."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.ops.pooling import max_pooling as pooling
from tests import tiers
from tests.reference.pooling import average_pooling as average_ref
from tests.reference.pooling import max_pooling as max_ref

PLAIN = {"strides": (1, 1), "window_size": (2, 2), "start_padding": (0, 0), "end_padding": (0, 0)}
PAGE_X = np.array([[[[1, 2, 3], [2, 4, 2], [5, 6, 7]]]], np.float32)  # MAX_POOLING_GRAD's example


def _close(got, want, size, units):
    """Within ``units`` FLOAT32 rounding units (2^-24) of the terms' magnitude ``size``."""
    err = np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64))
    assert (err <= units * 2.0**-24 * np.asarray(size)).all(), err.max()


def _bits(x):
    x = np.asarray(x)
    return x.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


# ------------------------------------------------------------------------------ the pages' examples
def test_max_pooling_grad_page_example():
    values, indices = dmljax.max_pooling2(PAGE_X, **PLAIN, dilations=(1, 1))
    np.testing.assert_array_equal(np.asarray(values)[0, 0], [[4, 4], [6, 7]])
    np.testing.assert_array_equal(np.asarray(indices)[0, 0], [[4, 4], [7, 8]])
    dy = np.array([[[[1, 2], [4, 5]]]], np.float32)
    got = dmljax.max_pooling_grad(PAGE_X, dy, **PLAIN, dilations=(1, 1))
    np.testing.assert_array_equal(np.asarray(got)[0, 0], [[0, 0, 0], [0, 3, 0], [0, 4, 5]])
    back = dmljax.max_unpooling(values, indices, output_sizes=(1, 1, 3, 3))  # the page's inverse
    np.testing.assert_array_equal(np.asarray(back)[0, 0], [[0, 0, 0], [0, 4, 0], [0, 6, 7]])


def test_average_pooling_grad_page_example():
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    np.testing.assert_array_equal(np.asarray(dmljax.average_pooling(x, **PLAIN))[0, 0], [[3, 4], [6, 7]])
    dy = np.array([[[[1, 2], [3, 4]]]], np.float32)
    got = dmljax.average_pooling_grad(dy, **PLAIN, output_gradient_sizes=(1, 1, 3, 3))
    np.testing.assert_array_equal(np.asarray(got)[0, 0], [[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]])


# ------------------------------------------------------------------------------ *_GRAD = jax.grad
GEOMETRY = {"strides": (2, 1), "window_size": (3, 2), "start_padding": (1, 1), "end_padding": (2, 0)}


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_jax_grad_of_max_pooling_is_max_pooling_grad(dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, (2, 3, 7, 5)).astype(dtype)  # many ties: the first maximum takes dY
    y = dmljax.max_pooling(x, **GEOMETRY)
    dy = rng.integers(-4, 5, y.shape).astype(dtype)
    want = dmljax.max_pooling_grad(x, dy, **GEOMETRY, dilations=(1, 1))
    np.testing.assert_array_equal(np.asarray(want), max_ref._max_grad(dy, x, **GEOMETRY)[0].astype(dtype))

    def loss(f):
        return jax.jit(jax.grad(lambda v: (f(v).astype(jnp.float32) * dy.astype(np.float32)).sum()))

    forwards = [lambda v: dmljax.max_pooling(v, **GEOMETRY), lambda v: dmljax.max_pooling1(v, **GEOMETRY)[0]]
    for f in forwards if dtype == np.float32 else forwards[:1]:  # MAX_POOLING2's: below, with Dilations
        np.testing.assert_array_equal(np.asarray(loss(f)(x)), np.asarray(want))
    if dtype == np.float16:
        return
    dilated = {**GEOMETRY, "dilations": (1, 2), "end_padding": (2, 1)}
    y2 = dmljax.max_pooling2(x, **dilated)[0]
    dy2 = rng.integers(-4, 5, y2.shape).astype(dtype)
    g = jax.grad(lambda v: (dmljax.max_pooling2(v, **dilated)[0] * dy2).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.asarray(dmljax.max_pooling_grad(x, dy2, **dilated)))


def test_jax_grad_of_average_pooling_is_average_pooling_grad():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 7, 5)).astype(np.float32)
    for include in (False, True):
        y = dmljax.average_pooling(x, **GEOMETRY, include_padding=include)
        dy = rng.integers(-4, 5, y.shape).astype(np.float32)
        want = dmljax.average_pooling_grad(dy, **GEOMETRY, include_padding=include, output_gradient_sizes=x.shape)
        size = average_ref._spread(dy, x.shape, GEOMETRY, include, magnitude=True)  # sum |dY| / divisor: 6 terms at most
        for f in (lambda v: dmljax.average_pooling(v, **GEOMETRY, include_padding=include),
                  lambda v: dmljax.average_pooling1(v, **GEOMETRY, dilations=(1, 1), include_padding=include)):
            g = jax.jit(jax.grad(lambda v: (f(v) * dy).sum()))(x)
            # the same function; XLA may compile its sums differently inside another jit (it moved a
            # division by a scalar divisor across the padded copies here): within the budget
            _close(g, want, size, 4)
        _close(want, average_ref._spread(dy, x.shape, GEOMETRY, include), size, 4)


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_the_grad_operators_own_gradients():
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (1, 2, 5, 5)).astype(np.float32)
    dy = rng.standard_normal((1, 2, 3, 5)).astype(np.float32)
    ddx = rng.standard_normal(x.shape).astype(np.float32)
    gx, gdy = jax.grad(lambda a, b: (dmljax.max_pooling_grad(a, b, **GEOMETRY, dilations=(1, 1)) * ddx).sum(),
                       argnums=(0, 1))(x, dy)
    assert not np.asarray(gx).any()  # the input only selects
    want = max_ref._max_pooling_grad_grad(ddx, x, dy, **GEOMETRY, dilations=(1, 1))[1]
    np.testing.assert_array_equal(np.asarray(gdy), want.astype(np.float32))
    g = jax.grad(lambda b: (dmljax.average_pooling_grad(b, **GEOMETRY, output_gradient_sizes=x.shape) * ddx).sum())(dy)
    size = average_ref._average64(np.abs(ddx.astype(np.float64)), GEOMETRY, False)  # the average's terms' magnitude
    _close(g, dmljax.average_pooling(ddx, **GEOMETRY), size, 8)


@pytest.mark.parametrize("geometry", [
    {"strides": (1, 2), "window_size": (2, 3), "start_padding": (1, 2), "end_padding": (1, 0), "dilations": (2, 1)},
    {"strides": (2, 3), "window_size": (2, 3), "start_padding": (1, 0), "end_padding": (0, 2), "dilations": (1, 1)},
], ids=["overlapping", "tiling"])
@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_the_gradient_paths_agree(monkeypatch, geometry):
    # padded copies per window position (small windows), one broadcast (windows that tile the input),
    # and the large windows' scatter-add and windowed-sum transpose
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (1, 2, 6, 7)).astype(np.float32)
    undilated = {k: v for k, v in geometry.items() if k != "dilations"}
    dy = rng.integers(-3, 4, dmljax.max_pooling2(x, **geometry)[0].shape).astype(np.float32)
    da = rng.integers(-3, 4, dmljax.average_pooling(x, **undilated).shape).astype(np.float32)
    runs = iter(["6.4", "6.3", "6.2"])  # another level: another compile, which reads the switches again

    def run():  # the three gradients
        level = next(runs)
        return [np.asarray(dmljax.max_pooling_grad(x, dy, **geometry, feature_level=level)),
                np.asarray(jax.grad(lambda v: (dmljax.lp_pooling1(v, **geometry, p=3, feature_level=level)
                                               * dy).sum())(x)),
                np.asarray(dmljax.average_pooling_grad(da, **undilated, output_gradient_sizes=x.shape,
                                                       feature_level=level))]
    first = run()
    monkeypatch.setattr(pooling, "tiles", lambda w: False)  # the padded copies
    copies = run()
    monkeypatch.setattr(pooling, "SPREAD", 0)  # a scatter-add, the windowed sum's transpose
    fallback = run()
    for other in (copies, fallback):
        np.testing.assert_array_equal(other[0], first[0])  # small integers: every sum exact
        np.testing.assert_allclose(other[1], first[1], rtol=1e-6)
        np.testing.assert_allclose(other[2], first[2], rtol=1e-6)
    np.testing.assert_array_equal(first[0], max_ref._max_grad(dy, x, **geometry)[0])


# ------------------------------------------------------------------------------ the maximum's rules
ROW = {"strides": (1, 1), "window_size": (1, 2), "start_padding": (0, 0), "end_padding": (0, 0)}


def _pairs(*values, dtype=np.float32):
    """Windows of two along a row: (a, b) for each pair."""
    x = np.array([v for pair in values for v in pair], dtype).reshape(1, 1, 1, -1)
    v, i = dmljax.max_pooling1(x, strides=(1, 2), window_size=(1, 2), start_padding=(0, 0), end_padding=(0, 0))
    return np.asarray(v)[0, 0, 0], np.asarray(i)[0, 0, 0] % 2  # the maximum, and which of the two


def test_ties_nan_signed_zeros_and_denormals():
    nan, tiny = np.float32(np.nan), np.float32(1e-40)  # a FLOAT32 denormal
    v, which = _pairs((3, 3), (nan, 2), (2, nan), (nan, nan), (-np.inf, nan), (-0.0, 0.0), (0.0, -0.0), (-0.0, -0.0),
                      (tiny, 0.0), (0.0, tiny), (-tiny, 0.0), (-tiny, -0.0), (np.inf, np.inf))
    assert which.tolist() == [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0]  # ties: the first; NaN loses; +0 beats -0
    assert np.isnan(v[3]) and v[4] == -np.inf and v[0] == 3 and v[1] == 2 and v[2] == 2
    signs = np.signbit(v[[5, 6, 7, 8, 9, 10, 11]]).tolist()
    assert signs == [False, False, True, False, False, False, True] and not v[5:12].any()  # denormals read as zeros
    v16, which16 = _pairs((np.float16(6e-8), 0.0), (-0.0, 0.0), dtype=np.float16)  # FLOAT16 keeps denormals
    assert which16.tolist() == [0, 1] and v16[0] == np.float16(6e-8)
    assert (_bits(dmljax.max_pooling(np.array([[[[tiny, 5]]]], np.float32), **ROW)) == _bits(np.float32(5))).all()


def test_indices_count_the_whole_tensor_and_their_types(x64):
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)[..., ::-1]  # each row descends
    v, i = dmljax.max_pooling1(x, strides=(2, 2), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0),
                               output_indices_data_type="UINT64")
    assert i.dtype == np.uint64 and i.shape == v.shape == (2, 3, 2, 2)
    # n * C * H * W + c * H * W + row * W + column, the first maximum of each window (row 1, its first column)
    want = np.array([[[[n * 60 + c * 20 + (2 * r + 1) * 5 + 2 * q for q in range(2)] for r in range(2)]
                      for c in range(3)] for n in range(2)])
    np.testing.assert_array_equal(np.asarray(i), want)
    np.testing.assert_array_equal(np.asarray(v), x.reshape(-1)[want])


def test_windows_wholly_in_the_padding(x64):
    geometry = {"strides": (1, 1), "window_size": (1, 2), "start_padding": (0, 2), "end_padding": (0, 0)}
    x = np.array([[[[5, 1, 7]]]], np.float32)
    v, i = dmljax.max_pooling1(x, **geometry)
    assert np.asarray(v).tolist() == [[[[-np.inf, 5, 5, 7]]]]
    assert np.asarray(i).tolist() == [[[[2**32 - 1, 0, 0, 2]]]]  # names no element
    assert np.asarray(dmljax.max_pooling2(x, **geometry, dilations=(1, 1), output_indices_data_type="UINT64")[1])[
        0, 0, 0, 0] == 2**64 - 1
    ints = np.array([[[[0, 3, 0]]]], np.uint8)  # 0 is the type's minimum, which the padding also holds
    v, i = dmljax.max_pooling1(ints, **geometry)
    assert np.asarray(v).tolist() == [[[[0, 0, 3, 3]]]] and np.asarray(i).tolist() == [[[[2**32 - 1, 0, 1, 1]]]]
    big = np.array([[[[-(2**63), 7]]]], np.int64)
    assert np.asarray(dmljax.max_pooling(big, **geometry)).tolist() == [[[[-(2**63), -(2**63), 7]]]]
    dy = np.array([[[[10, 1, 2, 4]]]], np.float32)  # the first window's gradient goes nowhere
    assert np.asarray(dmljax.max_pooling_grad(x, dy, **geometry, dilations=(1, 1))).tolist() == [[[[3, 0, 4]]]]
    for include, first in ((False, np.nan), (True, 0.0)):
        avg = np.asarray(dmljax.average_pooling(x, **geometry, include_padding=include))[0, 0, 0]
        np.testing.assert_array_equal(avg, [first, 2.5 if include else 5, 3, 4])  # 0 / 0 without the padding
    lp = dmljax.lp_pooling(x, **geometry)  # the padding adds |0|^P
    np.testing.assert_allclose(np.asarray(lp)[0, 0, 0], [0, 5, np.hypot(5, 1), np.hypot(1, 7)], rtol=1e-6)


def test_integer_maxima_are_exact_in_every_type(x64):
    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        info = np.iinfo(dt)
        x = np.array([[[[info.min, info.max, info.max, 0, info.min, info.min]]]], dt)
        v, i = dmljax.max_pooling1(x, **ROW)
        assert np.asarray(v).tolist() == [[[[int(info.max), int(info.max), int(info.max), 0, int(info.min)]]]], dt
        assert np.asarray(i).tolist() == [[[[1, 1, 2, 3, 4]]]], dt


# ------------------------------------------------------------------------------ sums
def test_float16_sums_in_float32():
    x = np.array([[[[2048, 1, 1, 0]]]], np.float16)
    row = {"strides": (1, 1), "window_size": (1, 4), "start_padding": (0, 0), "end_padding": (0, 0)}
    assert float(dmljax.average_pooling(x, **row)[0, 0, 0, 0]) == 512.5  # FLOAT16 sums would stop at 2048
    half = float(dmljax.average_pooling(x, **row, allow_half_precision_computation=True)[0, 0, 0, 0])
    assert half in (512.0, 512.5)
    assert float(dmljax.lp_pooling(x, **row, p=1)[0, 0, 0, 0]) == 2050.0


def test_include_padding_divisor():
    x = np.ones((1, 1, 3, 3), np.float32)
    geometry = {"strides": (2, 2), "window_size": (2, 2), "start_padding": (1, 1), "end_padding": (1, 1)}
    np.testing.assert_array_equal(np.asarray(dmljax.average_pooling(x, **geometry))[0, 0], np.ones((2, 2)))
    np.testing.assert_array_equal(np.asarray(dmljax.average_pooling(x, **geometry, include_padding=True))[0, 0],
                                  [[0.25, 0.5], [0.5, 1]])  # 1, 2 and 4 of the window's 4 elements inside
    dy = np.ones((1, 1, 2, 2), np.float32)
    got = dmljax.average_pooling_grad(dy, **geometry, include_padding=False, output_gradient_sizes=(1, 1, 3, 3))
    np.testing.assert_array_equal(np.asarray(got)[0, 0], [[1, 0.5, 0.5], [0.5, 0.25, 0.25], [0.5, 0.25, 0.25]])
    got = dmljax.average_pooling_grad(dy, **geometry, include_padding=True, output_gradient_sizes=(1, 1, 3, 3))
    np.testing.assert_array_equal(np.asarray(got)[0, 0], np.full((3, 3), 0.25))


def test_lp_norms_and_their_gradients():
    x = np.array([[[[3, -4, 0, 0]]]], np.float32)
    row = {"strides": (1, 2), "window_size": (1, 2), "start_padding": (0, 0), "end_padding": (0, 0)}
    assert np.asarray(dmljax.lp_pooling(x, **row)).tolist() == [[[[5, 0]]]]  # the norm: |x|, not x
    assert np.asarray(dmljax.lp_pooling(x, **row, p=1)).tolist() == [[[[7, 0]]]]
    np.testing.assert_allclose(np.asarray(dmljax.lp_pooling(x, **row, p=3)), [[[[(27 + 64) ** (1 / 3), 0]]]],
                               rtol=1e-6)
    g = jax.grad(lambda v: dmljax.lp_pooling(v, **row).sum())(x)  # x / y, and 0 (not NaN) where y = 0
    np.testing.assert_allclose(np.asarray(g), [[[[0.6, -0.8, 0, 0]]]], rtol=1e-6)
    g1 = jax.grad(lambda v: dmljax.lp_pooling(v, **row, p=1).sum())(x)
    assert np.asarray(g1).tolist() == [[[[1, -1, 0, 0]]]]  # sign(x), 0 at 0
    g3 = jax.grad(lambda v: dmljax.lp_pooling(v, **row, p=3).sum())(x)
    want = average_ref._lp_grad(np.ones((1, 1, 1, 2)), x, **row, p=3)[0]
    np.testing.assert_allclose(np.asarray(g3), want, rtol=1e-5)


# ------------------------------------------------------------------------------ MAX_UNPOOLING
def test_max_unpooling_repeats_and_stray_indices(x64):
    values = np.array([[[[1.5, 2.5, 3.5, -0.0]]]], np.float32)
    indices = np.array([[[[5, 5, 2**32 - 1, 0]]]], np.uint32)  # a repeat (the first is written), one past the end
    out = dmljax.max_unpooling(values, indices, output_sizes=(1, 1, 2, 3))
    assert np.asarray(out).tolist() == [[[[0, 0, 0], [0, 0, 1.5]]]]
    assert np.signbit(np.asarray(out)[0, 0, 0, 0])  # the value's own bits: -0
    dy = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 2, 3)
    g = jax.grad(lambda v: (dmljax.max_unpooling(v, indices, output_sizes=(1, 1, 2, 3)) * dy).sum())(values)
    assert np.asarray(g).tolist() == [[[[6, 0, 0, 1]]]]
    wide = dmljax.max_unpooling(values.astype(np.int64), indices.astype(np.uint64), output_sizes=(1, 1, 2, 3))
    assert wide.dtype == np.int64 and np.asarray(wide).tolist() == [[[[0, 0, 0], [0, 0, 1]]]]


# ------------------------------------------------------------------------------ descs and messages
def test_descs():
    desc = {"InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 3, 3]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
            "DimensionCount": 2, "Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0]}
    out = dmljax.compile_operator("MAX_POOLING1", desc)(InputTensor=PAGE_X.ravel(), OutputTensor=np.zeros(4, np.float32))
    assert list(out) == ["OutputTensor"] and np.asarray(out["OutputTensor"]).tolist() == [4, 4, 6, 7]
    desc["OutputIndicesTensor"] = {"DataType": "UINT32", "Sizes": [1, 1, 2, 2]}
    out = dmljax.compile_operator("MAX_POOLING1", desc)(InputTensor=PAGE_X.ravel(), OutputTensor=np.zeros(4, np.float32),
                                                        OutputIndicesTensor=np.zeros(4, np.uint32))
    assert np.asarray(out["OutputIndicesTensor"]).tolist() == [4, 4, 7, 8]
    with pytest.raises(dmljax.ValidationError, match=r"DimensionCount"):
        dmljax.compile_operator("MAX_POOLING", {**desc, "DimensionCount": 3, "OutputIndicesTensor": None})


def _refused(fn, *args, match, **kwargs):
    with pytest.raises(dmljax.ValidationError, match=match):
        fn(*args, **kwargs)


def test_geometry_messages():
    x = np.zeros((1, 2, 5, 5), np.float32)
    _refused(dmljax.max_pooling, x, **{**PLAIN, "strides": (1,)},
             match=r"Strides \(argument `strides`\) has 1 entries; DimensionCount \(2\) entries, one per spatial "
                   r"dimension of the InputTensor \(Sizes \[1, 2, 5, 5\]\)")
    _refused(dmljax.average_pooling, x, **{**PLAIN, "strides": (1, 0)},
             match=r"Strides\[1\] \(argument `strides`\) is 0; at least 1")
    _refused(dmljax.max_pooling2, x, **PLAIN, dilations=(5, 1),
             match=r"WindowSize\[0\] \(argument `window_size`\) is 2 with Dilations 5: the window spans 6 elements; "
                   r"at most the padded size of spatial dimension 0, 5 \+ StartPadding 0 \+ EndPadding 0")
    _refused(dmljax.lp_pooling, x, **PLAIN, p=0, match=r"P \(argument `p`\) is 0; at least 1")
    _refused(dmljax.max_pooling_grad, x, np.zeros((1, 2, 4, 5), np.float32), **PLAIN, dilations=(1, 1),
             match=r"InputGradientTensor \(argument `input_gradient`\) has Sizes \[1, 2, 4, 5\]; the pooled Sizes of "
                   r"the InputTensor \(Sizes \[1, 2, 5, 5\]\) for this window, \[1, 2, 4, 4\]")
    _refused(dmljax.average_pooling_grad, np.zeros((1, 2, 4, 4), np.float32), **PLAIN, output_gradient_sizes=(1, 2, 6, 5),
             match=r"the pooled Sizes of the OutputGradientTensor \(Sizes \[1, 2, 6, 5\]\) for this window, \[1, 2, 5, 4\]")
    _refused(dmljax.max_unpooling, x, np.zeros((1, 2, 5, 4), np.uint32), output_sizes=(1, 2, 10, 10),
             match=r"InputTensor \(argument `input`\) and IndicesTensor \(argument `indices`\) have Sizes")
    _refused(dmljax.max_unpooling, x, np.zeros((1, 2, 5, 5), np.uint32), output_sizes=(2, 10, 10),
             match=r"OutputTensor \(argument `output_sizes`\) has 3 dimensions")
    _refused(dmljax.max_pooling_grad, x[:, :, None], np.zeros((1, 2, 1, 4, 4), np.float32),
             strides=(1, 1, 1), window_size=(1, 2, 2), start_padding=(0, 0, 0), end_padding=(0, 0, 0),
             dilations=(1, 1, 1), feature_level="3.0", match=r"supported: 4\.\n    Tip: 4 to 5 dimensions are supported "
                                                              r"from DML_FEATURE_LEVEL_4_0")


# ------------------------------------------------------------------------------ the GPU kernel
@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
@pytest.mark.parametrize("dtype", tiers.fast_sample([np.float16, np.float32]))
def test_max_pool_kernel_gives_the_xla_paths_bits(dtype, monkeypatch):
    # FLOAT16 MAX_POOLING's values on NVIDIA GPUs take pool_kernel.py (float max of the gathered
    # window, the page's order kept by NaN for the padding, a +0 test of the window's smallest bit
    # pattern and -inf for windows wholly in the padding); run here in Pallas's interpreter, it must
    # give the XLA path's bits (integer keys) for windows of NaN only, NaN beside -inf, -0 beside +0
    # in either order, ties, FLOAT32 denormals (the kernel's FLOAT32 form, not taken by default),
    # strides, dilations, padding on each side and windows wholly in it.
    from dmljax._src.kernels import max_pooling as pool_kernel
    monkeypatch.setattr(pool_kernel, "DTYPES", (np.float16, np.float32))
    monkeypatch.setattr(pool_kernel, "MIN_WINDOW", 1)  # the kernel's own rules for every window
    rng = np.random.default_rng(3)
    x = (rng.integers(-4, 4, (2, 3, 9, 10)) * 0.5).astype(dtype)  # many ties, zeros among them
    x[0, 0, :2, :] = np.nan  # windows of NaN only
    x[0, 1, 0, :4] = [np.nan, -np.inf, -0.0, 0.0]
    x[0, 2, :, :] = -0.0
    x[0, 2, 3::2, 1::3] = 0.0  # +0 beside -0 in either order
    x[1, 0, :, :] = -np.inf
    x[1, 0, 4, 4] = np.nan
    if dtype == np.float32:
        x[1, 1, 0, :4] = [1e-40, -1e-40, -0.0, -1e-40]
    geometries = [
        ((3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
        ((2, 2), (2, 2), (1, 1), (0, 0), (0, 0)),
        ((2, 3), (1, 2), (2, 1), (0, 2), (1, 0)),
        ((1, 2), (1, 1), (1, 1), (0, 3), (2, 4)),  # windows wholly in the padding
        ((8, 8), (1, 2), (1, 1), (0, 0), (0, 0)),  # MAX_WINDOW positions
    ]
    for size, strides, dilations, start, end in geometries:
        assert pool_kernel.MAX_POOLING_VALUES.applies(x.shape, dtype, size, strides, dilations, start, end)
        got = pool_kernel.max_pool_values(jnp.asarray(x), size, strides, dilations, start, end, interpret=True)
        want = dmljax.max_pooling2(x, strides=strides, window_size=size, start_padding=start, end_padding=end,
                                   dilations=dilations)[0]
        np.testing.assert_array_equal(_bits(got), _bits(want))
    # outputs of whole blocks (24 x 8 x 8 = 6 blocks of 256: each program stores its block; above,
    # the last block is masked)
    y = np.tile(x[:, :, :8, :8], (2, 2, 2, 2))
    got = pool_kernel.max_pool_values(jnp.asarray(y), (3, 3), (2, 2), (1, 1), (1, 1), (0, 0), interpret=True)
    want = dmljax.max_pooling2(y, strides=(2, 2), window_size=(3, 3), start_padding=(1, 1), end_padding=(0, 0),
                               dilations=(1, 1))[0]
    assert got.size == 6 * pool_kernel.BLOCK
    np.testing.assert_array_equal(_bits(got), _bits(want))
    assert not pool_kernel.MAX_POOLING_VALUES.applies((2, 3, 9), np.float16, (3,), (1,), (1,), (0,), (0,))  # 3-D: XLA's
    assert not pool_kernel.MAX_POOLING_VALUES.applies(x.shape, np.float16, (9, 9), (1, 1), (1, 1), (0, 0), (0, 0))  # 81 positions
    monkeypatch.undo()
    assert not pool_kernel.MAX_POOLING_VALUES.applies(x.shape, np.float16, (2, 2), (2, 2), (1, 1), (0, 0), (0, 0))  # 4: XLA's
    assert not pool_kernel.MAX_POOLING_VALUES.applies(x.shape, np.float32, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))
    assert pool_kernel.MAX_POOLING_VALUES.applies(x.shape, np.float16, (3, 3), (2, 2), (1, 1), (1, 1), (1, 1))


def test_max_pool_kernel_lowers_for_nvidia_gpus_only():
    # FLOAT16 MAX_POOLING lowers to the kernel for CUDA and keeps the reduce_window of keys on the CPU;
    # FLOAT32 and the gradient's forward pass (which needs the positions) keep the reduce_window.
    geometry = {"strides": (2, 2), "window_size": (3, 3), "start_padding": (1, 1), "end_padding": (1, 1)}
    like = jax.ShapeDtypeStruct((2, 4, 16, 16), jnp.float16)

    def text(f, platform, a=like):
        return jax.jit(f).trace(a).lower(lowering_platforms=(platform,)).as_text()
    pool = lambda v: dmljax.max_pooling(v, **geometry)  # noqa: E731
    assert "dmljax_max_pool" in text(pool, "cuda") and "reduce_window" not in text(pool, "cuda")
    assert "dmljax_max_pool" not in text(pool, "cpu")
    assert "dmljax_max_pool" not in text(pool, "cuda", jax.ShapeDtypeStruct((2, 4, 16, 16), jnp.float32))
    # 15 x 8 x 8 = 960 outputs, 3.75 blocks: the kernel writes exactly those (its last block masked),
    # and no slice copies them after
    odd = text(pool, "cuda", jax.ShapeDtypeStruct((3, 5, 16, 16), jnp.float16))
    assert "tensor<960xf16>" in odd and "tensor<1024xf16>" not in odd and "stablehlo.slice" not in odd
    grad = jax.grad(lambda v: jnp.sum(pool(v).astype(jnp.float32)))
    assert "dmljax_max_pool" not in text(grad, "cuda")


@pytest.mark.parametrize("geometry", tiers.fast_sample([
    {"strides": (2, 3), "window_size": (2, 3), "start_padding": (1, 0), "end_padding": (0, 2)},  # padded, cut
    {"strides": (2, 2, 1), "window_size": (2, 2, 1), "start_padding": (0, 1, 0), "end_padding": (1, 0, 0)},
]))
def test_tiling_windows_are_sums_of_the_windows_positions(geometry):
    # On the CPU, windows that tile the input are summed position by position from the padded
    # input reshaped into windows (max_pooling._tiled_sum), XLA's windowed sum elsewhere: the
    # reference within the budget, with padding on either side, a last partial window dropped,
    # FLOAT16 summed in FLOAT32 (2048 + 1 + 1 would stop at 2048), NaN and inf in a window.
    from tests.compare import assert_matches
    rng = np.random.default_rng(3)
    spatial = (7, 8) if len(geometry["strides"]) == 2 else (5, 4, 3)
    for dtype in (np.float32, np.float16):
        x = rng.standard_normal((2, 3) + spatial).astype(dtype)
        x[0, 0, 1, 0:2], x[0, 0, 2, 0:2] = 2048, 1
        x[1, 2, 3, 3], x[1, 1, 4, 1] = np.nan, np.inf
        dt = dmljax.DataType.from_dtype(np.dtype(dtype))
        for include in (False, True):
            got = dmljax.average_pooling(x, **geometry, include_padding=include)
            kw = {**geometry, "include_padding": include}
            assert_matches(got, average_ref.average_pooling(x, **kw), dt, 1,
                           magnitude=average_ref._average_magnitude(x, **kw) * 8)
        for p in (1, 2, 3):
            got = dmljax.lp_pooling(x, **geometry, p=p)
            assert_matches(got, average_ref.lp_pooling(x, **geometry, p=p), dt, 4)
