"""SLICE, SLICE1 and SLICE_GRAD by hand: the pages' examples, the window rules' messages, bits
copied untouched, and SLICE_GRAD as jax.grad of SLICE1."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

X = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)  # the pages' input


def test_page_examples():
    got = dmljax.slice(X, offsets=(0, 0, 1, 2), sizes=(1, 1, 3, 2), strides=(1, 1, 1, 1))
    assert np.asarray(got).tolist() == [[[[7, 8], [11, 12], [15, 16]]]]
    got = dmljax.slice(X, offsets=(0, 0, 1, 0), sizes=(1, 1, 2, 2), strides=(1, 1, 2, 3))
    assert np.asarray(got).tolist() == [[[[5, 8], [13, 16]]]]
    w = dict(input_window_offsets=(0, 0, 0, 1), input_window_sizes=(1, 1, 4, 3))
    assert np.asarray(dmljax.slice1(X, **w, input_window_strides=(1, 1, 2, 2))).tolist() == [[[[2, 4], [10, 12]]]]
    assert np.asarray(dmljax.slice1(X, **w, input_window_strides=(1, 1, -2, 2))).tolist() == [[[[14, 16], [6, 8]]]]
    rev = dmljax.slice1(X[0, 0], input_window_offsets=(1, 0), input_window_sizes=(3, 4), input_window_strides=(-1, -1))
    assert np.asarray(rev).tolist() == X[0, 0, 1:][::-1, ::-1].tolist()


def test_window_rules():
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.slice(X, offsets=(0, 0, 2, 0), sizes=(1, 1, 2, 2), strides=(1, 1, 2, 1))
    assert "reach element 4 of dimension 2, whose size is 4" in str(e.value)
    with pytest.raises(dmljax.ValidationError, match=r"Strides\[3\] \(argument `strides`\) is 0; at least 1"):
        dmljax.slice(X, offsets=(0, 0, 0, 0), sizes=(1, 1, 1, 1), strides=(1, 1, 1, 0))
    with pytest.raises(dmljax.ValidationError, match=r"Offsets \(argument `offsets`\) has 3 entries; DimensionCount \(4\)"):
        dmljax.slice(X, offsets=(0, 0, 0), sizes=(1, 1, 1, 1), strides=(1, 1, 1, 1))
    with pytest.raises(dmljax.ValidationError, match=r"InputWindowStrides\[2\] .* is 0; not 0"):
        dmljax.slice1(X, input_window_offsets=(0,) * 4, input_window_sizes=(1, 1, 2, 2), input_window_strides=(1, 1, 0, 1))
    with pytest.raises(dmljax.ValidationError, match=r"InputWindowOffsets\[i\] \+ InputWindowSizes\[i\] <= InputTensor.Sizes\[i\]"):
        dmljax.slice1(X, input_window_offsets=(0, 0, 1, 0), input_window_sizes=(1, 1, 4, 1), input_window_strides=(1,) * 4)
    with pytest.raises(dmljax.ValidationError, match="supported: 4 to 5"):
        dmljax.slice1(X[0, 0], input_window_offsets=(0, 0), input_window_sizes=(1, 1), input_window_strides=(1, 1),
                      feature_level="2.1")
    with pytest.raises(dmljax.ValidationError, match="DimensionCount is 3, but Offsets has 4"):
        dmljax.compile_operator("SLICE", {"InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]},
                                          "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 1, 1]},
                                          "DimensionCount": 3, "Offsets": [0] * 4, "Sizes": [1] * 4, "Strides": [1] * 4})


def test_bits_are_copied_untouched():
    bits = np.array([0x7FC00123, 0x00000001, 0x80000000, 0xFF800000], np.uint32)
    x = bits.view(np.float32)
    got = dmljax.slice1(x, input_window_offsets=(0,), input_window_sizes=(4,), input_window_strides=(-1,))
    assert np.asarray(got).view(np.uint32).tolist() == bits[::-1].tolist()
    with jax.enable_x64(True):
        i = np.array([2**63 - 1, -(2**63), 5], np.int64)
        assert np.asarray(dmljax.slice(i, offsets=(0,), sizes=(2,), strides=(2,))).tolist() == [2**63 - 1, 5]


def test_slice_grad_is_the_gradient_of_slice1(rng):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    w = dict(input_window_offsets=(1, 2), input_window_sizes=(4, 5), input_window_strides=(-3, 2))
    y = dmljax.slice1(x, **w)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    g = jax.grad(lambda v: jnp.sum(dmljax.slice1(v, **w) * dy))(x)
    own = dmljax.slice_grad(dy, **w, output_gradient_sizes=x.shape)
    assert np.asarray(g).view(np.uint32).tolist() == np.asarray(own).view(np.uint32).tolist()
    assert int((np.asarray(own) != 0).sum()) == dy.size  # each element read once; the rest 0
    g = jax.grad(lambda v: jnp.sum(dmljax.slice(v, offsets=(0, 1), sizes=(2, 3), strides=(2, 2)) * 1.0))(x)
    assert np.asarray(g).sum() == 6 and np.asarray(g)[0, 1] == 1 and np.asarray(g)[1, 1] == 0
    with pytest.raises(dmljax.ValidationError, match=r"InputGradientTensor \(argument `input_gradient`\) has Sizes \[2, 2\]"):
        dmljax.slice_grad(dy[:2, :2], **w, output_gradient_sizes=x.shape)
    gi = jax.grad(lambda v: jnp.sum(dmljax.slice(v, offsets=(0,), sizes=(1,), strides=(1,))).astype(jnp.float32),
                  allow_int=True)(np.ones(3, np.int32))
    assert gi.dtype == jax.dtypes.float0
