"""UNFOLD and FOLD by hand: the pages' five examples verbatim, the two as each other's transpose
(gradients included), both code paths (strided slices and the gather for large windows), FLOAT16
sums in FLOAT32, integer wraparound, the column tensor's leading 1s, and the geometry's messages."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.ops.data_movement import fold as fold_module
from tests import tiers

_PLAIN = {"window_sizes": (3, 3), "strides": (1, 1), "dilations": (1, 1)}


def _rows(text):
    return np.array([[float(v) for v in row.replace("[", " ").replace("]", " ").replace(",", " ").split()]
                     for row in text.strip().splitlines()], np.float32)


def test_unfold_page_examples():
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    got = dmljax.unfold(x, start_padding=(0, 0), end_padding=(0, 0), **_PLAIN)
    want = _rows("""
        [ 0.,  1.,  2.,  5.,  6.,  7., 10., 11., 12.],
        [ 1.,  2.,  3.,  6.,  7.,  8., 11., 12., 13.],
        [ 2.,  3.,  4.,  7.,  8.,  9., 12., 13., 14.],
        [ 5.,  6.,  7., 10., 11., 12., 15., 16., 17.],
        [ 6.,  7.,  8., 11., 12., 13., 16., 17., 18.],
        [ 7.,  8.,  9., 12., 13., 14., 17., 18., 19.],
        [10., 11., 12., 15., 16., 17., 20., 21., 22.],
        [11., 12., 13., 16., 17., 18., 21., 22., 23.],
        [12., 13., 14., 17., 18., 19., 22., 23., 24.]""")
    np.testing.assert_array_equal(np.asarray(got), want[None])
    got = dmljax.unfold(x, start_padding=(1, 0), end_padding=(1, 0), **_PLAIN)
    want = _rows("""
        [ 0.,  0.,  0.,  0.,  1.,  2.,  5.,  6.,  7., 10., 11., 12., 15., 16., 17.],
        [ 0.,  0.,  0.,  1.,  2.,  3.,  6.,  7.,  8., 11., 12., 13., 16., 17., 18.],
        [ 0.,  0.,  0.,  2.,  3.,  4.,  7.,  8.,  9., 12., 13., 14., 17., 18., 19.],
        [ 0.,  1.,  2.,  5.,  6.,  7., 10., 11., 12., 15., 16., 17., 20., 21., 22.],
        [ 1.,  2.,  3.,  6.,  7.,  8., 11., 12., 13., 16., 17., 18., 21., 22., 23.],
        [ 2.,  3.,  4.,  7.,  8.,  9., 12., 13., 14., 17., 18., 19., 22., 23., 24.],
        [ 5.,  6.,  7., 10., 11., 12., 15., 16., 17., 20., 21., 22.,  0.,  0., 0.],
        [ 6.,  7.,  8., 11., 12., 13., 16., 17., 18., 21., 22., 23.,  0.,  0., 0.],
        [ 7.,  8.,  9., 12., 13., 14., 17., 18., 19., 22., 23., 24.,  0.,  0., 0.]""")
    np.testing.assert_array_equal(np.asarray(got), want[None])


def test_fold_page_examples():
    got = dmljax.fold(np.arange(36, dtype=np.float32).reshape(1, 9, 4), start_padding=(0, 0), end_padding=(0, 0),
                      output_sizes=(1, 1, 4, 4), **_PLAIN)
    np.testing.assert_array_equal(np.asarray(got)[0, 0], _rows("""
        [  0.,   5.,  13.,   9.],
        [ 14.,  38.,  54.,  32.],
        [ 38.,  86., 102.,  56.],
        [ 26.,  57.,  65.,  35.]"""))
    first = _rows("""
        [ 26.,  70., 102.,  60.],
        [ 78., 183., 231., 129.],
        [ 84., 195., 243., 135.],
        [ 82., 182., 214., 116.]""")
    got = dmljax.fold(np.arange(72, dtype=np.float32).reshape(1, 9, 8), start_padding=(1, 0), end_padding=(1, 0),
                      output_sizes=(1, 1, 4, 4), **_PLAIN)
    np.testing.assert_array_equal(np.asarray(got)[0, 0], first)
    got = dmljax.fold(np.arange(144, dtype=np.float32).reshape(1, 18, 8), start_padding=(1, 0), end_padding=(1, 0),
                      output_sizes=(1, 2, 4, 4), **_PLAIN)
    np.testing.assert_array_equal(np.asarray(got)[0, 0], first)
    np.testing.assert_array_equal(np.asarray(got)[0, 1], _rows("""
        [170., 358., 390., 204.],
        [294., 615., 663., 345.],
        [300., 627., 675., 351.],
        [226., 470., 502., 260.]"""))


_GEOMETRIES = [
    ((2, 3, 7, 6), {"window_sizes": (3, 2), "strides": (2, 1), "dilations": (1, 2), "start_padding": (1, 0),
                    "end_padding": (2, 1)}),
    ((1, 2, 9), {"window_sizes": (4,), "strides": (3,), "dilations": (2,), "start_padding": (2,), "end_padding": (0,)}),
    ((1, 1, 12, 11), {"window_sizes": (9, 8), "strides": (1, 1), "dilations": (1, 1), "start_padding": (0, 1),
                      "end_padding": (0, 0)}),  # 72 window positions: the gather path
]


@pytest.mark.parametrize("shape, geometry", tiers.fast_sample(_GEOMETRIES, keep=2, key="fold"))
def test_fold_is_unfolds_transpose_and_each_ones_gradient(shape, geometry):
    rng = np.random.default_rng(0)
    x = rng.integers(-4, 5, shape).astype(np.float32)  # small integers: every sum exact
    cols = np.asarray(dmljax.unfold(x, **geometry))
    y = rng.integers(-4, 5, cols.shape).astype(np.float32)
    back = np.asarray(dmljax.fold(y, output_sizes=shape, **geometry))
    assert float((cols * y).sum()) == float((x * back).sum())  # <unfold x, y> = <x, fold y>
    g = jax.grad(lambda v: (dmljax.unfold(v, **geometry) * y).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), back)
    g = jax.grad(lambda v: (dmljax.fold(v, output_sizes=shape, **geometry) * x).sum())(y)
    np.testing.assert_array_equal(np.asarray(g), cols)


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_the_gather_path_equals_the_sliced_path(monkeypatch):
    shape, geometry = _GEOMETRIES[0]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    sliced = np.asarray(fold_module.columns(jnp.asarray(x), *geometry.values()))
    monkeypatch.setattr(fold_module, "_SLICED", 0)
    gathered = np.asarray(fold_module.columns(jnp.asarray(x), *geometry.values()))
    np.testing.assert_array_equal(gathered, sliced)
    y = np.random.default_rng(2).integers(-9, 9, sliced.shape).astype(np.float32)
    added = np.asarray(fold_module.places(jnp.asarray(y), shape[2:], *geometry.values()))
    monkeypatch.setattr(fold_module, "_SLICED", 64)
    np.testing.assert_array_equal(added, np.asarray(fold_module.places(jnp.asarray(y), shape[2:], *geometry.values())))


def test_fold_sums_float16_in_float32_and_wraps_integers():
    window = {"window_sizes": (4,), "strides": (1,), "dilations": (1,), "start_padding": (3,), "end_padding": (3,)}
    cols = np.zeros((1, 4, 7), np.float16)  # 7 blocks of a 4-wide window; output 0 gets (k, l) = (0, 3), (1, 2), ...
    cols[0, 0, 3], cols[0, 1, 2], cols[0, 2, 1] = 2048, 1, 1
    got = np.asarray(dmljax.fold(cols, output_sizes=(1, 1, 4), **window))
    assert got[0, 0, 0] == 2050  # in FLOAT32, rounded once; FLOAT16 arithmetic from 2048 on gives 2048
    half = np.asarray(dmljax.fold(cols, output_sizes=(1, 1, 4), allow_half_precision_computation=True, **window))
    assert half[0, 0, 0] in (2048, 2050)  # in FLOAT16 the order of the additions shows
    ints = np.full((1, 4, 7), 100, np.int8)
    got = np.asarray(dmljax.fold(ints, output_sizes=(1, 1, 4), **window))
    assert got.tolist() == [[[np.int8(-112)] * 4]]  # 4 x 100 = 400 wraps to -112


def test_the_column_tensor_may_have_leading_ones():
    x = np.arange(2 * 3 * 16, dtype=np.int32).reshape(2, 3, 4, 4)
    geometry = {"window_sizes": (2, 2), "strides": (2, 2), "dilations": (1, 1), "start_padding": (0, 0),
                "end_padding": (0, 0)}
    cols = dmljax.unfold(x, **geometry)
    assert cols.shape == (2, 12, 4)
    four = dmljax.unfold(x, output_sizes=(1, 2, 12, 4), **geometry)
    np.testing.assert_array_equal(np.asarray(four)[0], np.asarray(cols))
    back = dmljax.fold(four, output_sizes=(2, 3, 4, 4), **geometry)  # non-overlapping: the input again
    np.testing.assert_array_equal(np.asarray(back), x)


def _refused(fn, *args, match, **kwargs):
    with pytest.raises(dmljax.ValidationError, match=match):
        fn(*args, **kwargs)


def test_geometry_messages():
    x = np.zeros((1, 2, 5, 5), np.float32)
    g = {"window_sizes": (3, 3), "strides": (1, 1), "dilations": (1, 1), "start_padding": (0, 0), "end_padding": (0, 0)}
    _refused(dmljax.unfold, x, **{**g, "strides": (1,)},
             match=r"Strides \(argument `strides`\) has 1 entries; DimensionCount \(2\) entries")
    _refused(dmljax.unfold, x, **{**g, "strides": (1, 0)}, match=r"Strides\[1\] \(argument `strides`\) is 0; at least 1")
    _refused(dmljax.unfold, x, **{**g, "dilations": (3, 1)},
             match=r"WindowSizes\[0\] .* is 3 with Dilations 3: the window spans 7 elements; at most the padded "
                   r"size of spatial dimension 0, 5")
    _refused(dmljax.unfold, np.zeros((1, 2), np.float32), **g, match=r"has 2 dimensions")
    _refused(dmljax.unfold, x, **g, output_sizes=(1, 18, 8),
             match=r"OutputTensor \(argument `output_sizes`\) has Sizes \[1, 18, 8\]; \(N, C x prod\(WindowSizes\), "
                   r"BlockCount\) = \[1, 18, 9\]")
    _refused(dmljax.fold, np.zeros((1, 18, 8), np.float32), **g, output_sizes=(1, 2, 5, 5),
             match=r"InputTensor \(argument `input`\) has Sizes \[1, 18, 8\]; .* = \[1, 18, 9\]")
    with pytest.raises(TypeError, match=r"fold: missing a required argument: 'output_sizes'"):
        dmljax.fold(np.zeros((1, 18, 9), np.float32), **g)  # a Python signature's error, as for any call
    _refused(dmljax.fold, np.zeros((1, 18, 9), np.float32), **g, output_sizes=(1, 2, 5, 5), feature_level="6.3",
             match=r"introduced in DML_FEATURE_LEVEL_6_4")


def test_fold_and_unfold_in_descs():
    desc = {"InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 9, 4]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]},
            "DimensionCount": 2, "WindowSizes": [3, 3], "Strides": [1, 1], "Dilations": [1, 1],
            "StartPadding": [0, 0], "EndPadding": [0, 0]}
    op = dmljax.compile_operator("FOLD", desc)
    got = op(InputTensor=np.arange(36, dtype=np.float32), OutputTensor=np.zeros(16, np.float32))["OutputTensor"]
    assert np.asarray(got).reshape(4, 4)[1].tolist() == [14, 38, 54, 32]
    desc["InputTensor"], desc["OutputTensor"] = ({"DataType": "FLOAT32", "Sizes": [1, 1, 5, 5]},
                                                 {"DataType": "FLOAT32", "Sizes": [1, 9, 9]})
    op = dmljax.compile_operator("UNFOLD", desc)
    got = op(InputTensor=np.arange(25, dtype=np.float32), OutputTensor=np.zeros(81, np.float32))["OutputTensor"]
    assert np.asarray(got).reshape(9, 9)[1].tolist() == [1, 2, 3, 6, 7, 8, 11, 12, 13]
