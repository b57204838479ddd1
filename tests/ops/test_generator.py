"""FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE and DIAGONAL_MATRIX by hand: the pages' examples, the
union's values per type, integer wraparound, and the rules' messages."""

import jax
import numpy as np
import pytest

import dmljax


def test_fill_value_constant():
    got = dmljax.fill_value_constant(value=13.0, output_data_type="FLOAT32", output_sizes=(1, 1, 2, 4))
    assert got.dtype == np.float32 and np.asarray(got).tolist() == [[[[13.0] * 4] * 2]]  # the page's example
    with jax.enable_x64(True):
        got = dmljax.fill_value_constant(value=2**63 - 1, output_data_type="INT64", output_sizes=(2,))
        assert np.asarray(got).tolist() == [2**63 - 1] * 2  # exact: a DML_SCALAR_UNION of the type
    with pytest.raises(dmljax.ValidationError, match="Value"):
        dmljax.fill_value_constant(value=300, output_data_type="UINT8", output_sizes=(2,))
    with pytest.raises(dmljax.ValidationError, match="ValueDataType .* is INT32; it must match OutputTensor.DataType"):
        dmljax.fill_value_constant(value=1, value_data_type="INT32", output_data_type="FLOAT32", output_sizes=(2,))
    with pytest.raises(TypeError, match="output_data_type"):
        dmljax.fill_value_constant(value=1, output_sizes=(2,))
    with pytest.raises(dmljax.ValidationError, match="supported: 4"):
        dmljax.fill_value_constant(value=1.0, output_data_type="FLOAT32", output_sizes=(2,), feature_level="2.1")


def test_fill_value_sequence_page_examples_and_wraparound():
    got = dmljax.fill_value_sequence(value_start=3, value_delta=2, output_data_type="FLOAT32", output_sizes=(1, 1, 1, 3))
    assert np.asarray(got).tolist() == [[[[3, 5, 7]]]]
    # Example 2 writes ValueDelta -2 for UINT8: the union's bytes of -2, which UINT8 reads as 254
    got = dmljax.fill_value_sequence(value_start=10, value_delta=254, output_data_type="UINT8", output_sizes=(1, 1, 2, 2))
    assert np.asarray(got).tolist() == [[[[10, 8], [6, 4]]]]
    got = dmljax.fill_value_sequence(value_start=10, value_delta={"Bytes": [254, 0, 0, 0, 0, 0, 0, 0]},
                                     output_data_type="UINT8", output_sizes=(4,))
    assert np.asarray(got).tolist() == [10, 8, 6, 4]
    with pytest.raises(dmljax.ValidationError, match="ValueDelta"):
        dmljax.fill_value_sequence(value_start=10, value_delta=-2, output_data_type="UINT8", output_sizes=(4,))
    got = dmljax.fill_value_sequence(value_start=2**31 - 2, value_delta=1, output_data_type="INT32", output_sizes=(4,))
    assert np.asarray(got).tolist() == [2**31 - 2, 2**31 - 1, -(2**31), -(2**31) + 1]  # wraps
    got = dmljax.fill_value_sequence(value_start=0.5, value_delta=0.25, output_data_type="FLOAT16", output_sizes=(2, 3))
    assert np.asarray(got).tolist() == [[0.5, 0.75, 1.0], [1.25, 1.5, 1.75]]  # row-major order
    got = np.asarray(dmljax.fill_value_sequence(value_start=0.0, value_delta=0.1, output_data_type="FLOAT32",
                                                output_sizes=(1000,)), np.float64)
    assert np.max(np.abs(got - np.arange(1000) * float(np.float32(0.1)))) <= 2 * np.spacing(np.float32(100))


def test_diagonal_matrix_page_examples():
    def m(**kw):
        return np.asarray(dmljax.diagonal_matrix(output_data_type="FLOAT32", **kw))[0, 0].tolist()
    assert m(output_sizes=(1, 1, 3, 3)) == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert m(offset=1, output_sizes=(1, 1, 3, 3)) == [[0, 1, 0], [0, 0, 1], [0, 0, 0]]
    assert m(offset=-1, output_sizes=(1, 1, 3, 2)) == [[0, 0], [1, 0], [0, 1]]
    assert m(offset=-3, output_sizes=(1, 1, 3, 2)) == [[0, 0], [0, 0], [0, 0]]
    got = dmljax.diagonal_matrix(value=10.6, output_data_type="INT32", output_sizes=(2, 2))
    assert np.asarray(got).tolist() == [[10, 0], [0, 10]]  # "10.6 will become 10"
    got = dmljax.diagonal_matrix(value=-1e10, output_data_type="INT8", output_sizes=(2, 3, 2, 2))
    assert np.asarray(got)[1, 2].tolist() == [[-128, 0], [0, -128]]  # saturated; every batch the same
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor \(argument `output_sizes`\) has 1 dimension"):
        dmljax.diagonal_matrix(output_data_type="FLOAT32", output_sizes=(3,))
    with pytest.raises(dmljax.ValidationError, match="NaN"):
        dmljax.diagonal_matrix(value=float("nan"), output_data_type="INT32", output_sizes=(2, 2))
