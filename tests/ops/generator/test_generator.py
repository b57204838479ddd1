"""FILL_VALUE_CONSTANT, FILL_VALUE_SEQUENCE, DIAGONAL_MATRIX(1) and RANDOM_GENERATOR by hand: the pages' examples, the
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


# ------------------------------------------------------------------------------ DIAGONAL_MATRIX1
_X = np.array([[4, 7, 3, 7, 9], [1, 2, 8, 6, 9], [9, 4, 1, 8, 7], [4, 3, 4, 2, 4]], np.float32)


def test_diagonal_matrix1_page_examples():
    def m(x=None, **kw):
        return np.asarray(dmljax.diagonal_matrix1(x, **kw)).tolist()
    sized = {"output_data_type": "FLOAT32", "output_sizes": (4, 5)}
    # "Default identity matrix": the page writes Value 7 and shows ones; Value 1 gives what it shows
    assert m(value=1.0, diagonal_fill_begin=0, diagonal_fill_end=1, **sized) == np.eye(4, 5).tolist()
    assert m(**sized) == np.eye(4, 5).tolist()  # the defaults: the identity
    assert m(value=7.0, diagonal_fill_begin=0, diagonal_fill_end=3, **sized) == [
        [7, 7, 7, 0, 0], [0, 7, 7, 7, 0], [0, 0, 7, 7, 7], [0, 0, 0, 7, 7]]
    assert m(_X, value=0.0, diagonal_fill_begin=-2**31, diagonal_fill_end=1) == [
        [0, 7, 3, 7, 9], [0, 0, 8, 6, 9], [0, 0, 0, 8, 7], [0, 0, 0, 0, 4]]
    assert m(_X, value=0.0, diagonal_fill_begin=1, diagonal_fill_end=0) == [
        [4, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 2, 0]]


def test_diagonal_matrix1_equals_diagonal_matrix_and_spans_past_the_matrix():
    # The page's Remarks: DIAGONAL_MATRIX with Offset k is DiagonalFillBegin k, DiagonalFillEnd k + 1
    for k in (-5, -1, 0, 2, 6):
        want = dmljax.diagonal_matrix(offset=k, value=3.0, output_data_type="FLOAT16", output_sizes=(2, 3, 4))
        got = dmljax.diagonal_matrix1(value=3.0, diagonal_fill_begin=k, diagonal_fill_end=k + 1,
                                      output_data_type="FLOAT16", output_sizes=(2, 3, 4))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    full = dmljax.diagonal_matrix1(x, value=-1, diagonal_fill_begin=-2**31, diagonal_fill_end=2**31 - 1)
    assert (np.asarray(full) == -1).all()  # every diagonal inside the span, batches included
    none = dmljax.diagonal_matrix1(x, value=-1, diagonal_fill_begin=2**31 - 1, diagonal_fill_end=2**31 - 1)
    np.testing.assert_array_equal(np.asarray(none), x)  # an empty span: the input
    inverted = dmljax.diagonal_matrix1(x, value=-1, diagonal_fill_begin=2**31 - 1, diagonal_fill_end=-2**31)
    np.testing.assert_array_equal(np.asarray(inverted), x)  # inverted: Value outside [INT32_MIN, INT32_MAX), none
    inverted = dmljax.diagonal_matrix1(x, value=-1, diagonal_fill_begin=1, diagonal_fill_end=-1)
    top_x = np.arange(4)[None, :] - np.arange(3)[:, None]
    np.testing.assert_array_equal(np.asarray(inverted), np.where((top_x >= -1) & (top_x < 1), x, -1))


def test_diagonal_matrix1_output_and_value_checks():
    with pytest.raises(dmljax.ValidationError, match=r"has no DataType and no Sizes without an InputTensor"):
        dmljax.diagonal_matrix1(value=1.0)
    with pytest.raises(dmljax.ValidationError, match=r"`output_sizes`\) is \[2, 2\], but InputTensor has Sizes \[4, 5\]"):
        dmljax.diagonal_matrix1(_X, output_sizes=(2, 2))
    with pytest.raises(dmljax.ValidationError, match=r"is INT8, but InputTensor has DataType FLOAT32"):
        dmljax.diagonal_matrix1(_X, output_data_type="INT8")
    with pytest.raises(dmljax.ValidationError, match=r"Value \(argument `value`\) is 256, outside the range of UINT8"):
        dmljax.diagonal_matrix1(_X.astype(np.uint8), value=256)
    with pytest.raises(dmljax.ValidationError, match=r"has 1 dimension"):
        dmljax.diagonal_matrix1(np.zeros(3, np.float32))
    with pytest.raises(dmljax.ValidationError, match=r"introduced in DML_FEATURE_LEVEL_5_1"):
        dmljax.diagonal_matrix1(_X, feature_level="5.0")
    got = dmljax.diagonal_matrix1(_X, output_data_type="FLOAT32", output_sizes=(4, 5))  # the same: accepted
    assert np.asarray(got).tolist() == np.where(np.eye(4, 5, dtype=bool), 1, _X).tolist()


def test_diagonal_matrix1_gradient_passes_through_what_it_keeps():
    g = jax.grad(lambda x: (dmljax.diagonal_matrix1(x, value=5.0, diagonal_fill_begin=-1, diagonal_fill_end=2)
                            * np.arange(20, dtype=np.float32).reshape(4, 5)).sum())(_X)
    top_x = np.arange(5)[None, :] - np.arange(4)[:, None]
    want = np.where((top_x >= -1) & (top_x < 2), 0, np.arange(20).reshape(4, 5))
    np.testing.assert_array_equal(np.asarray(g), want)


def test_diagonal_matrix1_in_a_desc_with_and_without_its_input():
    desc = {"OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]}, "ValueDataType": "FLOAT32",
            "Value": 2.0, "DiagonalFillBegin": 0, "DiagonalFillEnd": 2}
    op = dmljax.compile_operator("DIAGONAL_MATRIX1", desc)
    got = op(OutputTensor=np.zeros(6, np.float32))["OutputTensor"]
    assert np.asarray(got).reshape(2, 3).tolist() == [[2, 2, 0], [0, 2, 2]]
    desc["InputTensor"] = {"DataType": "FLOAT32", "Sizes": [2, 3]}
    op = dmljax.compile_operator("DIAGONAL_MATRIX1", desc)
    got = op(InputTensor=np.full(6, 9, np.float32), OutputTensor=np.zeros(6, np.float32))["OutputTensor"]
    assert np.asarray(got).reshape(2, 3).tolist() == [[2, 2, 9], [9, 2, 2]]


# ------------------------------------------------------------------------------ RANDOM_GENERATOR
def _state(counter, key):
    return np.array([*counter, *key], np.uint32).reshape(1, 1, 1, 6)


def test_philox_known_answers():
    # Random123's known-answer vectors for philox4x32_10 (counter words, key words -> the 4 outputs)
    kat = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
           ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
           ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for counter, key, want in kat:
        bits, _ = dmljax.random_generator(_state(counter, key), output_sizes=(1, 1, 1, 4))
        assert np.asarray(bits).ravel().tolist() == list(want)


def test_counter_blocks_carries_and_the_output_state():
    state = _state((0xFFFFFFFF, 0xFFFFFFFF, 0, 5), (1, 2))
    bits, new = jax.jit(lambda s: dmljax.random_generator(s, output_sizes=(2, 5)))(state)
    assert bits.shape == (2, 5) and bits.dtype == np.uint32
    # the 128-bit counter + ceil(10 / 4) = + 3, carried into the third word; the key kept
    assert np.asarray(new).ravel().tolist() == [2, 0, 1, 5, 1, 2]
    # block 1 (elements 4 to 7) is block 0 of the counter + 1: the same bits
    nxt, _ = dmljax.random_generator(_state((0, 0, 1, 5), (1, 2)), output_sizes=(4,))
    assert np.asarray(bits).ravel()[4:8].tolist() == np.asarray(nxt).tolist()
    again, _ = dmljax.random_generator(state, output_sizes=(2, 5))
    assert np.array_equal(again, bits)  # deterministic: a pure function of the state
    with pytest.raises(dmljax.ValidationError, match=r"InputStateTensor \(argument `input_state`\) has Sizes \[1, 1, 2, 6\]"):
        dmljax.random_generator(np.zeros((1, 1, 2, 6), np.uint32), output_sizes=(4,))
    with pytest.raises(dmljax.ValidationError, match="supported: UINT32"):
        dmljax.random_generator(np.zeros((1, 1, 1, 6), np.int32), output_sizes=(4,))
    op = dmljax.compile_operator("RANDOM_GENERATOR", {  # the optional OutputStateTensor left out
        "InputStateTensor": {"DataType": "UINT32", "Sizes": [1, 1, 1, 6]},
        "OutputTensor": {"DataType": "UINT32", "Sizes": [1, 1, 1, 4]}, "Type": "PHILOX_4X32_10"})
    out = op(InputStateTensor=np.zeros(6, np.uint32), OutputTensor=np.zeros(4, np.uint32))
    assert list(out) == ["OutputTensor"] and np.asarray(out["OutputTensor"]).tolist()[0] == 0x6627E8D5
