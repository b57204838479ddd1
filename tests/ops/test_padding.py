"""PADDING, PADDING1 and TILE by hand: the pages' examples in every mode, pads longer than the axis,
modes by feature level, the padding value's conversion, the element limit and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

X = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4], [5, 6, 7, 8]]]], np.float32)  # the pages' input
PADS = dict(start_padding=(0, 0, 1, 2), end_padding=(0, 0, 3, 4))
PAGE = {  # the pages' Examples 1 to 4, rows of the {1, 1, 8, 10} output
    "CONSTANT": [[9] * 10, [9, 9, 1, 2, 3, 4, 9, 9, 9, 9], [9, 9, 5, 6, 7, 8, 9, 9, 9, 9], [9, 9, 1, 2, 3, 4, 9, 9, 9, 9],
                 [9, 9, 5, 6, 7, 8, 9, 9, 9, 9], [9] * 10, [9] * 10, [9] * 10],
    "EDGE": [[1, 1, 1, 2, 3, 4, 4, 4, 4, 4], [1, 1, 1, 2, 3, 4, 4, 4, 4, 4], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
             [1, 1, 1, 2, 3, 4, 4, 4, 4, 4], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8],
             [5, 5, 5, 6, 7, 8, 8, 8, 8, 8], [5, 5, 5, 6, 7, 8, 8, 8, 8, 8]],
    "REFLECTION": [[7, 6, 5, 6, 7, 8, 7, 6, 5, 6], [3, 2, 1, 2, 3, 4, 3, 2, 1, 2]] * 4,
    "SYMMETRIC": [[2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
                  [2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5],
                  [2, 1, 1, 2, 3, 4, 4, 3, 2, 1], [6, 5, 5, 6, 7, 8, 8, 7, 6, 5]],
}


@pytest.mark.parametrize("mode", list(PAGE))
def test_page_examples(mode):
    for op, value in ((dmljax.padding, 9.0), (dmljax.padding1, 9.0)):
        got = op(X, padding_mode=mode, padding_value=value, **PADS)
        assert np.asarray(got)[0, 0].tolist() == PAGE[mode], (op.__name__, mode)


def test_long_pads_fold_periodically_and_wrap():
    x = np.array([1, 2, 3], np.int32)
    for mode, np_mode in (("REFLECTION", "reflect"), ("SYMMETRIC", "symmetric"), ("EDGE", "edge"), ("WRAP", "wrap")):
        got = dmljax.padding1(x, padding_mode=mode, start_padding=(7,), end_padding=(8,))
        assert np.asarray(got).tolist() == np.pad(x, (7, 8), mode=np_mode).tolist(), mode


def test_modes_by_level_and_one_element_reflection():
    with pytest.raises(dmljax.ValidationError, match="WRAP is accepted from DML_FEATURE_LEVEL_6_4"):
        dmljax.padding1(X, padding_mode="WRAP", feature_level="6.3", **PADS)
    with pytest.raises(dmljax.ValidationError, match="SYMMETRIC is accepted from DML_FEATURE_LEVEL_3_0"):
        dmljax.padding(X, padding_mode="SYMMETRIC", feature_level="2.1", **PADS)
    with pytest.raises(dmljax.ValidationError, match="is REFLECTION and dimension 0 has one element"):
        dmljax.padding(X, padding_mode="REFLECTION", start_padding=(1, 0, 0, 0), end_padding=(0, 0, 0, 0))
    with pytest.raises(TypeError, match="padding_mode"):
        dmljax.padding(X, **PADS)  # no documented default
    with pytest.raises(dmljax.ValidationError, match=r"StartPadding \(argument `start_padding`\) has 3 entries"):
        dmljax.padding(X, padding_mode="EDGE", start_padding=(0, 0, 1), end_padding=(0, 0, 0, 0))


def test_padding_value_per_type():
    i8 = np.array([[1, 2]], np.int8)
    got = dmljax.padding(i8, padding_mode="CONSTANT", padding_value=-9.7, start_padding=(0, 1), end_padding=(0, 1))
    assert np.asarray(got).tolist() == [[-9, 1, 2, -9]]  # truncated toward zero
    got = dmljax.padding(i8, padding_mode="CONSTANT", padding_value=1e6, start_padding=(0, 1), end_padding=(0, 0))
    assert np.asarray(got).tolist() == [[127, 1, 2]]  # saturated
    with pytest.raises(dmljax.ValidationError):
        dmljax.padding(i8, padding_mode="CONSTANT", padding_value=float("nan"), start_padding=(0, 1), end_padding=(0, 0))
    with jax.enable_x64(True):
        i64 = np.array([0], np.int64)
        got = dmljax.padding1(i64, padding_mode="CONSTANT", padding_value=2**62 + 1, start_padding=(1,), end_padding=(0,))
        assert np.asarray(got).tolist() == [2**62 + 1, 0]  # a DML_SCALAR_UNION of the type: exact
    with pytest.raises(dmljax.ValidationError, match="PaddingValue"):
        dmljax.padding1(i8, padding_mode="CONSTANT", padding_value=300, start_padding=(0, 1), end_padding=(0, 0))
    bits = np.array([0x7FC00123, 1], np.uint32).view(np.float32)  # a NaN payload, a denormal: copied
    got = dmljax.padding(bits, padding_mode="EDGE", start_padding=(1,), end_padding=(1,))
    assert np.asarray(got).view(np.uint32).tolist() == [0x7FC00123, 0x7FC00123, 1, 1]


def test_tile_page_example_limits_and_gradients():
    x = np.array([[[[1, 2, 3], [4, 5, 6]]]], np.float32)  # the page's example
    got = np.asarray(dmljax.tile(x, repeats=(1, 1, 3, 3)))
    assert got.shape == (1, 1, 6, 9) and got[0, 0, 3].tolist() == [4, 5, 6, 4, 5, 6, 4, 5, 6]
    with pytest.raises(dmljax.ValidationError, match=r"Repeats\[1\] \(argument `repeats`\) is 0; larger than 0"):
        dmljax.tile(x, repeats=(1, 0, 1, 1))
    big = jax.ShapeDtypeStruct((1, 1, 1 << 16, 1 << 15), np.uint8)  # 2^31 elements: the output 2^32
    with pytest.raises(dmljax.ValidationError, match="would have 4294967296 elements"):
        jax.eval_shape(lambda v: dmljax.tile(v, repeats=(1, 1, 1, 2)), big)
    with pytest.raises(dmljax.ValidationError, match="at most 2\\^32 - 1 elements"):
        jax.eval_shape(lambda v: dmljax.padding(v, padding_mode="EDGE", start_padding=(0, 0, 0, 1 << 15),
                                                end_padding=(0, 0, 0, 0)), big)
    g = jax.grad(lambda v: jnp.sum(dmljax.tile(v, repeats=(3, 2))))(np.ones((2, 2), np.float32))
    assert np.asarray(g).tolist() == [[6, 6], [6, 6]]
    g = jax.grad(lambda v: jnp.sum(dmljax.padding(v, padding_mode="SYMMETRIC", start_padding=(2,), end_padding=(0,))))(
        np.ones(3, np.float32))
    assert np.asarray(g).tolist() == [2, 2, 1]  # [2, 1 | 1, 2, 3]: elements 1 and 2 copied once each
