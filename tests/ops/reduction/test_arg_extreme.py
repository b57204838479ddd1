"""Hand-written edges of ARGMIN and ARGMAX: the pages' examples, the tie rule in each
AxisDirection, NaN, signed zeros and denormals, several axes (in any order), output types, and
the desc rules (Axes, AxisCount, output Sizes). Expected values are the pages' or by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers

X = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)  # the pages' input


@pytest.mark.parametrize("axes,argmax,argmin", [
    ((0,), [[1, 2, 1]], [[0, 1, 2]]),      # Example 1
    ((1,), [[2], [2], [1]], [[0], [1], [0]]),  # Example 2
    ((0, 1), [[7]], [[4]]),                # Example 3
    ((1, 0), [[7]], [[4]]),                # the same axes in another order: the same row-major index
])
def test_page_examples(axes, argmax, argmin):
    for dtype in (np.float32, np.float16, np.int32, np.uint8):
        np.testing.assert_array_equal(dmljax.argmax(X.astype(dtype), axes=axes), np.array(argmax, np.uint32))
        np.testing.assert_array_equal(dmljax.argmin(X.astype(dtype), axes=axes), np.array(argmin, np.uint32))


def test_ties_follow_axis_direction():
    a = np.array([3, 2, 1, 2, 3], np.float32)  # the pages' own tie examples
    assert int(dmljax.argmax(a, axes=(0,))[0]) == 0
    assert int(dmljax.argmax(a, axes=(0,), axis_direction="DECREASING")[0]) == 4
    b = np.array([1, 2, 3, 2, 1], np.float32)
    assert int(dmljax.argmin(b, axes=(0,))[0]) == 0
    assert int(dmljax.argmin(b, axes=(0,), axis_direction="DML_AXIS_DIRECTION_DECREASING")[0]) == 4


def test_nan_zeros_and_denormals():
    x = np.array([[np.nan, -1.0, np.nan, -1.0],      # NaN never wins
                  [np.nan, np.nan, np.nan, np.nan],  # NaN only: first (last) index
                  [-0.0, 0.0, -1.0, 0.0],            # -0 ties with +0
                  [0.0, 1e-40, -1e-40, -np.inf],     # denormals read as zero: ties
                  [-np.inf, np.nan, -np.inf, -np.inf]], np.float32)
    np.testing.assert_array_equal(dmljax.argmax(x, axes=(1,))[:, 0], [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(dmljax.argmax(x, axes=(1,), axis_direction="DECREASING")[:, 0], [3, 3, 3, 2, 3])
    np.testing.assert_array_equal(dmljax.argmin(x, axes=(1,))[:, 0], [1, 0, 2, 3, 0])
    np.testing.assert_array_equal(jax.jit(lambda v: dmljax.argmin(v, axes=(1,)))(x)[:, 0], [1, 0, 2, 3, 0])


def test_output_types_and_integer_extremes():
    x = np.array([[-128, 127, 127], [0, -128, 5]], np.int8)
    for t in ("INT32", "UINT32"):
        out = dmljax.argmax(x, axes=(1,), output_data_type=t)
        assert out.dtype == np.dtype(t.lower()) and out.shape == (2, 1)
        np.testing.assert_array_equal(out[:, 0], [1, 2])
    with pytest.raises(dmljax.ValidationError, match="64-bit mode"):
        dmljax.argmax(x, axes=(1,), output_data_type="INT64")
    with jax.enable_x64(True):
        assert dmljax.argmin(x, axes=(0, 1), output_data_type="UINT64").dtype == np.uint64
    with pytest.raises(dmljax.ValidationError, match="OutputTensor .*FLOAT32"):
        dmljax.argmax(x, axes=(1,), output_data_type="FLOAT32")


def test_no_gradient_reaches_the_input():
    g = jax.grad(lambda v: jnp.sum(dmljax.argmax(v, axes=(0,)).astype(jnp.float32)))(X)
    np.testing.assert_array_equal(g, np.zeros_like(X))


@pytest.mark.parametrize("axes,match", [
    ((), "Axes .argument `axes`. is empty"),
    ((2,), r"has \[2\] for a 2-dimensional InputTensor"),
    ((0, 0), "names axis 0 more than once"),
])
def test_bad_axes(axes, match):
    with pytest.raises(dmljax.ValidationError, match=match):
        dmljax.argmin(X, axes=axes)


def test_desc_output_sizes_and_axis_count():
    t = {"DataType": "FLOAT32", "Sizes": [3, 3]}
    op = dmljax.compile_operator("ARGMAX", {"InputTensor": t, "OutputTensor": {"DataType": "UINT32", "Sizes": [1, 3]},
                                            "AxisCount": 1, "Axes": [0], "AxisDirection": "DML_AXIS_DIRECTION_INCREASING"})
    out = op(InputTensor=X.ravel(), OutputTensor=np.zeros(3, np.uint32))["OutputTensor"]
    np.testing.assert_array_equal(out, [1, 2, 1])
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor.Sizes .*are \[3, 3\].*produces Sizes \[1, 3\]"):
        dmljax.compile_operator("ARGMAX", {"InputTensor": t, "OutputTensor": {"DataType": "UINT32", "Sizes": [3, 3]},
                                           "AxisCount": 1, "Axes": [0], "AxisDirection": "DML_AXIS_DIRECTION_INCREASING"})


# ---------------------------------------------------------------------------------- the GPU kernel
@pytest.mark.parametrize("larger", tiers.fast_sample([True, False]))
@pytest.mark.parametrize("last", tiers.fast_sample([False, True]))
def test_float16_rows_take_the_top_k_kernel_with_the_xla_paths_index(larger, last):
    # FLOAT16 rows on a GPU take the TOP_K kernel with K = 1 (dmljax/_src/kernels/top_k.py); run
    # in Pallas's interpreter, it must give the XLA path's index bit for bit, in both directions:
    # ties, -0 tied with +0, a row of NaN (its first or last index), NaN beside -inf.
    from dmljax._src.ops.reduction.arg_extreme import _arg_extreme_xla
    from dmljax._src.kernels.top_k import ARG_EXTREME_ROWS, top_k_rows
    rng = np.random.default_rng(3)
    x = (rng.integers(-20, 20, (8, 1024)) * 0.5).astype(np.float16)
    x[0, :5] = [np.nan, -np.inf, np.nan, 0.0, -0.0]
    x[2, :], x[3, :] = np.nan, -0.0
    x[4, :], x[4, 7] = np.nan, -np.inf
    assert ARG_EXTREME_ROWS.applies(x.shape, (1,), np.float16) and not ARG_EXTREME_ROWS.applies(x.shape, (1,), np.float32)
    assert not ARG_EXTREME_ROWS.applies(x.shape, (0,), np.float16) and not ARG_EXTREME_ROWS.applies(x.shape, (0, 1), np.float16)
    got = top_k_rows(jnp.asarray(x), 1, larger, last, interpret=True)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(_arg_extreme_xla(jnp.asarray(x), (1,), larger, last)))


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
@pytest.mark.parametrize("larger", [True, False])
@pytest.mark.parametrize("last", [False, True])
def test_float16_columns_take_the_column_kernel_with_the_xla_paths_index(larger, last):
    # FLOAT16 over an axis with elements after it takes the column kernel on a GPU
    # (extreme_columns.arg_columns); in Pallas's interpreter it must give the XLA path's index bit
    # for bit: ties across the row blocks it walks, -0 tied with +0, a column of NaN, NaN beside
    # -inf, and a leading axis kept.
    from dmljax._src.ops.reduction.arg_extreme import _arg_extreme_xla
    from dmljax._src.kernels.extreme_columns import EXTREME_COLUMNS, arg_columns
    rng = np.random.default_rng(4)
    x = (rng.integers(-3, 3, (2, 96, 2, 256)) * 0.5).astype(np.float16)  # many ties
    x[0, :, 0, 0], x[1, :, 1, 5] = np.nan, -0.0
    x[0, :, 1, 3], x[0, 70, 1, 3] = np.nan, -np.inf
    x[1, 40:, 0, 9] = 7.0  # a tie spanning row blocks
    assert EXTREME_COLUMNS.applies(x.shape, (1,), np.float16) and not EXTREME_COLUMNS.applies(x.shape, (1,), np.float32)
    assert not EXTREME_COLUMNS.applies(x.shape, (3,), np.float16) and not EXTREME_COLUMNS.applies((2, 90, 512), (1,), np.float16)
    got = arg_columns(jnp.asarray(x), 1, larger, last, interpret=True)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(_arg_extreme_xla(jnp.asarray(x), (1,), larger, last)))


def test_float16_first_axis_lowers_to_the_column_kernel():
    f = jax.jit(lambda v: dmljax.argmax(v, axes=(0,)))
    text = f.trace(jax.ShapeDtypeStruct((512, 1024), jnp.float16)).lower(lowering_platforms=("cuda",)).as_text()
    assert 'name = "dmljax_column_arg"' in text
    # XLA reduces only the segments' winners (int32), never the FLOAT16 input
    assert all("f16" not in ln for ln in text.splitlines() if "stablehlo.reduce" in ln)
