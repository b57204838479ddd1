"""JOIN and SPLIT by hand: the pages' examples, bit-exact copies, the constraints' messages, tensor
arrays through compile_operator, and gradients (JOIN's tensor array is differentiated here; the
generated gradient checks take one array per input)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax

A = np.array([[[[1, 2], [3, 4]]]], np.float32)  # the pages' Example 2 inputs
B = np.array([[[[5, 6], [7, 8]]]], np.float32)
C = np.array([[[[9, 10], [11, 12]]]], np.float32)


def test_join_page_examples():
    a = np.array([[[[1, 2, 3], [4, 5, 6]]]], np.float32)
    b = np.array([[[[7, 8, 9, 10], [11, 12, 13, 14]]]], np.float32)
    assert np.asarray(dmljax.join([a, b], axis=3)).tolist() == [[[[1, 2, 3, 7, 8, 9, 10], [4, 5, 6, 11, 12, 13, 14]]]]
    assert np.asarray(dmljax.join((A, B, C), axis=1)).tolist() == [[[[1, 2], [3, 4]], [[5, 6], [7, 8]],
                                                                    [[9, 10], [11, 12]]]]
    assert np.asarray(dmljax.join([A, B, C], axis=2)).reshape(-1).tolist() == list(range(1, 13))
    assert np.asarray(dmljax.join([A, B, C], axis=3)).tolist() == [[[[1, 2, 5, 6, 9, 10], [3, 4, 7, 8, 11, 12]]]]
    assert dmljax.join([A], axis=0).shape == A.shape  # InputCount 1


def test_split_page_examples_and_round_trip():
    x = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 6, 2)
    parts = dmljax.split(x, axis=2, outputs_sizes=[(1, 1, 2, 2), (1, 1, 1, 2), (1, 1, 3, 2)])
    assert [np.asarray(p).tolist() for p in parts] == [[[[[1, 2], [3, 4]]]], [[[[5, 6]]]], [[[[7, 8], [9, 10], [11, 12]]]]]
    halves = dmljax.split(x, axis=3, outputs_sizes=[[1, 1, 6, 1]] * 2)
    assert np.asarray(halves[0]).ravel().tolist() == [1, 3, 5, 7, 9, 11]
    np.testing.assert_array_equal(dmljax.join(list(parts), axis=2), x)


def test_bits_are_copied_untouched():
    bits = np.array([0x7FC00123, 0x00000001, 0x80000000, 0xFF800000], np.uint32)  # a NaN payload, a denormal, -0
    x = bits.view(np.float32).reshape(1, 4)
    joined = dmljax.join([x, x[:, ::-1].copy()], axis=0)
    assert np.asarray(joined).view(np.uint32)[0].tolist() == bits.tolist()
    left, right = dmljax.split(x, axis=1, outputs_sizes=[(1, 1), (1, 3)])
    assert np.asarray(right).view(np.uint32).ravel().tolist() == bits[1:].tolist()
    i8 = np.array([[-128, 127]], np.int8)
    assert np.asarray(dmljax.join([i8, i8], axis=1)).tolist() == [[-128, 127, -128, 127]]


def test_constraints_are_checked():
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.join([A, B[..., :1]], axis=2)
    assert ("InputTensors[1] (argument `inputs[1]`) has Sizes [1, 1, 2, 1]; the Sizes of InputTensors[0] "
            "([1, 1, 2, 2]) except along Axis 2.") in str(e.value)
    with pytest.raises(dmljax.ValidationError, match="have DataTypes FLOAT32, INT32; they must have the same DataType"):
        dmljax.join([A, B.astype(np.int32)], axis=0)
    with pytest.raises(dmljax.ValidationError, match=r"Axis \(argument `axis`\) is 4 for 4-dimensional tensors"):
        dmljax.join([A, B], axis=4)
    with pytest.raises(dmljax.ValidationError, match=r"InputTensors \(argument `inputs`\) is a single array"):
        dmljax.join(A, axis=0)
    with pytest.raises(dmljax.ValidationError, match="has 0 elements; 1 to 64"):
        dmljax.join([], axis=0)
    with pytest.raises(dmljax.ValidationError, match=r"InputTensors\[1\] \(argument `inputs\[1\]`\) has 3 dimensions"):
        dmljax.join([A, B[0]], axis=0)
    with pytest.raises(dmljax.ValidationError, match="supported: 4 to 5"):
        dmljax.join([A[0], B[0]], axis=0, feature_level="3.0")
    x = np.zeros((2, 6), np.float32)
    with pytest.raises(dmljax.ValidationError, match="add up to 5 along Axis 1; the InputTensor's size there"):
        dmljax.split(x, axis=1, outputs_sizes=[(2, 2), (2, 3)])
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensors\[1\] \(argument `outputs_sizes\[1\]`\) has Sizes \[1, 3\]"):
        dmljax.split(x, axis=1, outputs_sizes=[(2, 3), (1, 3)])
    with pytest.raises(dmljax.ValidationError, match=r"outputs_sizes\[0\]`\) has Sizes \[0, 6\]"):
        dmljax.split(x, axis=0, outputs_sizes=[(0, 6), (2, 6)])


def test_tensor_arrays_through_compile_operator():
    op = dmljax.compile_operator("JOIN", {
        "Axis": 0, "InputCount": 2,
        "InputTensors": [{"DataType": "FLOAT32", "Sizes": [2]}, {"DataType": "FLOAT32", "Sizes": [3]}],
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [5]}})
    buf = np.arange(8, dtype=np.float32)
    out = op(InputTensors=[buf, (buf, 16)], OutputTensor=np.zeros(5, np.float32))["OutputTensor"]
    assert np.asarray(out).tolist() == [0, 1, 4, 5, 6]
    with pytest.raises(dmljax.ValidationError, match="InputCount is 3, but InputTensors has 2 descs"):
        dmljax.compile_operator("JOIN", {"Axis": 0, "InputCount": 3, "InputTensors": [
            {"DataType": "FLOAT32", "Sizes": [2]}] * 2, "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]}})
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor.Sizes are \[5\]; the operator produces Sizes \[4\]"):
        dmljax.compile_operator("JOIN", {"Axis": 0, "InputTensors": [
            {"DataType": "FLOAT32", "Sizes": [2]}] * 2, "OutputTensor": {"DataType": "FLOAT32", "Sizes": [5]}})
    sp = dmljax.compile_operator("SPLIT", {
        "Axis": 0, "OutputCount": 2, "InputTensor": {"DataType": "FLOAT32", "Sizes": [5]},
        "OutputTensors": [{"DataType": "FLOAT32", "Sizes": [1]}, {"DataType": "FLOAT32", "Sizes": [4]}]})
    res = sp(InputTensor=buf[:5], OutputTensors=[np.zeros(1, np.float32), np.zeros(4, np.float32)])
    assert [np.asarray(res[k]).tolist() for k in ("OutputTensors[0]", "OutputTensors[1]")] == [[0], [1, 2, 3, 4]]


def test_gradients_are_the_transposes(rng):
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    got = jax.grad(lambda u, v: jnp.sum(dmljax.join([u, v], axis=0) * w), argnums=(0, 1))(a, b)
    assert np.array_equal(got[0], w[:2]) and np.array_equal(got[1], w[2:])
    g = jax.grad(lambda x: jnp.sum(dmljax.split(x, axis=0, outputs_sizes=[(2, 3), (4, 3)])[1] * w[2:]))(w)
    assert np.array_equal(g[:2], np.zeros((2, 3))) and np.array_equal(g[2:], w[2:])
    gi = jax.grad(lambda u: jnp.sum(dmljax.join([u, u], axis=0)).astype(jnp.float32), allow_int=True)(np.ones(2, np.int32))
    assert gi.dtype == jax.dtypes.float0


def test_composes_under_jit_and_vmap(rng):
    a, b = rng.standard_normal((5, 2, 3)).astype(np.float32), rng.standard_normal((5, 2, 1)).astype(np.float32)
    j = jax.jit(lambda u, v: dmljax.join([u, v], axis=2))(a, b)
    assert np.array_equal(j, np.concatenate([a, b], axis=2))
    v = jax.vmap(lambda u, w: dmljax.join([u, w], axis=1))(a, b)
    assert v.shape == (5, 2, 4) and np.array_equal(v, np.concatenate([a, b], axis=2))
