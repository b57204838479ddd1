"""PADDING, PADDING1 and TILE by hand: the pages' examples in every mode, pads longer than the axis,
modes by feature level, the padding value's conversion, the element limit and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers

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


# The CUDA kernel (dmljax/_src/kernels/padding.py), run here by Pallas's interpreter: every copying mode
# against np.pad (an independent implementation of the same modes), pads longer than the axis
# included, bit for bit; what the CUDA lowering holds; and its gradient's rule (the XLA form's
# transpose) under jax.grad. tests/gpu/kernels.py compiles it on a GPU.
_NP_MODES = {"EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric", "WRAP": "wrap"}
_KERNEL_CASES = [((10,), (3,), (4,)), ((5, 7), (2, 9), (3, 1)), ((3, 4, 5), (1, 0, 2), (2, 3, 0)),
                 ((2, 3, 2, 6), (0, 1, 2, 7), (1, 0, 3, 5))]


@pytest.mark.parametrize("mode", tiers.fast_sample(sorted(_NP_MODES), keep=2, key="pad"))
def test_pad_kernel_equals_np_pad(mode):
    from dmljax._src.enums import PaddingMode
    from dmljax._src.kernels.padding import pad_rows

    rng = np.random.default_rng(5)
    for (shape, s, e), dtype in zip(_KERNEL_CASES, (np.float32, np.float16, np.int8, np.uint16)):
        x = (rng.standard_normal(shape) * 40).astype(dtype)
        want = np.pad(x, list(zip(s, e)), mode=_NP_MODES[mode])
        got = np.asarray(pad_rows(jnp.asarray(x), PaddingMode[mode], s, e, interpret=True))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=f"{shape} {s} {e}")


def test_pad_kernel_under_vmap_and_on_cuda():
    from dmljax._src.enums import PaddingMode
    from dmljax._src.kernels.padding import pad_rows

    x = np.arange(3 * 5 * 7, dtype=np.float32).reshape(3, 5, 7)
    got = jax.vmap(lambda v: pad_rows(v, PaddingMode.SYMMETRIC, (2, 3), (1, 9), interpret=True))(x)
    np.testing.assert_array_equal(got, np.pad(x, ((0, 0), (2, 1), (3, 9)), mode="symmetric"))

    def f(v):
        return dmljax.padding(v, padding_mode="EDGE", padding_value=0.0, start_padding=(0, 1, 2),
                              end_padding=(0, 2, 1))

    cuda = jax.jit(f).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    assert cuda.count("xla.gpu.triton") == 1 and 'name = "dmljax_pad"' in cuda
    assert "xla.gpu.triton" not in jax.jit(f).trace(x).lower(lowering_platforms=("cpu",)).as_text()
    grad = jax.jit(jax.grad(lambda v: jnp.sum(f(v) ** 2))).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    assert grad.count("xla.gpu.triton") == 1  # the forward pass; dY goes back by the XLA transpose
    # and on this backend the gradient is the XLA form's: every output's dY on its source element
    dy = jax.grad(lambda v: jnp.sum(f(v) * jnp.arange(f(v).size, dtype=jnp.float32).reshape(f(v).shape)))(x)
    want = np.zeros_like(x)
    w = np.arange(np.prod(f(x).shape), dtype=np.float32).reshape(f(x).shape)
    rows = np.clip(np.arange(8) - 1, 0, 4)
    cols = np.clip(np.arange(10) - 2, 0, 6)
    for b in range(3):
        for i, r in enumerate(rows):
            for j, c in enumerate(cols):
                want[b, r, c] += w[b, i, j]
    np.testing.assert_array_equal(dy, want)
    # forward mode too (PADDING is linear: the tangent padded the same way)
    t = np.ones_like(x) * 2
    np.testing.assert_array_equal(jax.jvp(f, (x,), (t,))[1], np.pad(t, ((0, 0), (1, 2), (2, 1)), mode="edge"))
