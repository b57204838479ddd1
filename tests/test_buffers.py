"""DML_BUFFER_TENSOR_DESC validation, DMLCalcBufferTensorSize, and strided views of buffers.

Expected values are computed here by hand or with plain NumPy index arithmetic (offset =
dot(index, strides)), never with the code under test.
"""

import itertools

import jax
import numpy as np
import pytest

import dmljax
from dmljax import TensorDesc, ValidationError
from dmljax._src.buffers import layout_plan, read_view, write_view
from tests import tiers


# ---------------------------------------------------------------- DMLCalcBufferTensorSize
@pytest.mark.parametrize("data_type, sizes, strides, expected", [
    # packed: roundup(prod(sizes) * element size, 4)
    ("FLOAT32", [1, 1, 3, 5], None, 60),
    ("FLOAT16", [5], None, 12),          # 10 bytes -> 12
    ("UINT8", [3], None, 4),             # 3 -> 4
    ("INT8", [2, 2], None, 4),
    ("FLOAT64", [3], None, 24),
    ("UINT16", [1], None, 4),
    # strided: roundup((dot(sizes - 1, strides) + 1) * element size, 4)
    ("FLOAT32", [2, 3], [5, 1], 32),     # last index 1*5 + 2*1 = 7 -> 8 elements
    ("FLOAT32", [2, 3], [0, 1], 12),     # broadcast rows: last index 2
    ("FLOAT16", [2, 3], [1, 2], 12),     # column-major: last index 1 + 4 = 5 -> 6 * 2 bytes
    ("UINT8", [4, 4], [0, 0], 4),        # everything broadcast: 1 byte -> 4
    ("FLOAT32", [1, 1, 3, 5], [15, 1, 5, 1], 60),   # the strides page's NHWC example
    ("INT64", [2, 2], [4, 1], 48),       # last index 5 -> 6 * 8
    ("UINT16", [3], [3], 16),            # last index 6 -> 7 * 2 = 14 bytes -> 16
])
def test_calc_buffer_tensor_size(data_type, sizes, strides, expected):
    assert dmljax.calc_buffer_tensor_size(data_type, sizes, strides) == expected


def test_calc_buffer_tensor_size_rejects_bad_input():
    with pytest.raises(ValidationError, match="one stride per dimension"):
        dmljax.calc_buffer_tensor_size("FLOAT32", [2, 2], [1])
    with pytest.raises(ValidationError, match="zero size"):
        dmljax.calc_buffer_tensor_size("FLOAT32", [2, 0])
    with pytest.raises(ValidationError, match="IndexOfLastElement is a UINT"):
        dmljax.calc_buffer_tensor_size("FLOAT32", [3], [2**31 + 1])


# ---------------------------------------------------------------- TensorDesc validation
def test_desc_defaults_and_api():
    d = TensorDesc("FLOAT32", [2, 3])
    assert d.total_tensor_size_in_bytes == 24
    assert d.flags == dmljax.TensorFlags.NONE and d.guaranteed_base_offset_alignment == 0
    assert d.effective_strides == (3, 1) and d.is_packed and d.dimension_count == 2
    assert hash(d) == hash(TensorDesc("FLOAT32", (2, 3)))
    assert TensorDesc("FLOAT32", [2, 3], flags="OWNED_BY_DML").owned_by_dml
    assert TensorDesc("FLOAT32", [2, 3], flags="DML_TENSOR_FLAG_OWNED_BY_DML").owned_by_dml
    assert TensorDesc("FLOAT32", [2], total_tensor_size_in_bytes=0).total_tensor_size_in_bytes == 8


@pytest.mark.parametrize("kwargs, message", [
    (dict(data_type="FLOAT32", sizes=[2, 2], strides=[1]),
     "Strides (argument `strides`) [1] has 1 entries for 2 dimensions; one stride per dimension"),
    (dict(data_type="FLOAT32", sizes=[2, 0]), "Sizes (argument `sizes`) [2, 0] has a size below 1; a zero size"),
    (dict(data_type="FLOAT32", sizes=[]), "has 0 dimensions"),
    (dict(data_type="FLOAT32", sizes=[1] * 9), "a tensor has 1 to 8 dimensions"),
    (dict(data_type="FLOAT32", sizes=[3], total_tensor_size_in_bytes=8),
     "TotalTensorSizeInBytes (argument `total_tensor_size_in_bytes`) is 8, below the 12 bytes"),
    (dict(data_type="FLOAT32", sizes=[3], total_tensor_size_in_bytes=14), "is 14; it must be a multiple of 4"),
    (dict(data_type="FLOAT32", sizes=[3], guaranteed_base_offset_alignment=24),
     "is 24; 0 (none) or a power of two at least the element size (4 bytes for FLOAT32)"),
    (dict(data_type="FLOAT64", sizes=[3], guaranteed_base_offset_alignment=4), "at least the element size (8 bytes"),
    (dict(data_type="FLOAT32", sizes=[65536, 65536]), "at most 2^32 - 1 elements"),
    (dict(data_type="FLOAT32", sizes=[2], flags="SHARED"), "Flags (argument `flags`) is 'SHARED'"),
    (dict(data_type="BFLOAT16", sizes=[2]), "DataType (argument `data_type`) is 'BFLOAT16'"),
])
def test_desc_validation_messages(kwargs, message):
    with pytest.raises(ValidationError) as e:
        TensorDesc(**kwargs)
    text = str(e.value)
    assert text.startswith("TensorDesc (DML_BUFFER_TENSOR_DESC) at every feature level:\n")
    assert message in text


def test_desc_collects_every_problem():
    with pytest.raises(ValidationError) as e:
        TensorDesc("FLOAT32", [3], total_tensor_size_in_bytes=6, guaranteed_base_offset_alignment=3)
    assert len(e.value.violations) == 3


@pytest.mark.parametrize("sizes, strides, overlaps", [
    ([2, 3], [3, 1], False),
    ([2, 3], [1, 2], False),
    ([2, 3], [8, 2], False),
    ([3, 2], [2, 3], False),    # interleaved but unique: 0, 3, 2, 5, 4, 7
    ([2, 3], [0, 1], True),     # broadcast
    ([3, 3], [1, 1], True),     # sliding window
    ([2, 2], [1, 1], True),
    ([1, 4], [0, 1], False),    # stride of a size-1 dimension is irrelevant
])
def test_output_overlap(sizes, strides, overlaps):
    offsets = [sum(i * t for i, t in zip(idx, strides)) for idx in itertools.product(*map(range, sizes))]
    assert (len(set(offsets)) != len(offsets)) == overlaps  # the test's own premise
    assert (TensorDesc("FLOAT32", sizes, strides).overlap_violation() is not None) == overlaps


# ---------------------------------------------------------------- views
def numpy_view(flat: np.ndarray, sizes, strides, offset_elements=0):
    out = np.empty(sizes, flat.dtype)
    for idx in itertools.product(*map(range, sizes)):
        out[idx] = flat[offset_elements + sum(i * t for i, t in zip(idx, strides))]
    return out


LAYOUTS = [
    ([2, 3], [3, 1]),             # packed
    ([2, 3], [5, 1]),             # padded rows
    ([2, 3], [0, 1]),             # broadcast rows
    ([2, 3], [1, 0]),             # broadcast columns
    ([2, 3], [1, 2]),             # column-major (permutation)
    ([1, 2, 2, 3], [12, 1, 6, 2]),  # NHWC
    ([2, 3], [8, 2]),             # padded and subsampled
    ([3, 2], [2, 3]),             # interleaved: gather
    ([3, 3], [1, 1]),             # overlapping windows (input only): gather
    ([2, 1, 3], [1, 100, 2]),     # size-1 dimension with a big stride
]


@pytest.mark.parametrize("sizes, strides", LAYOUTS)
@pytest.mark.parametrize("offset", tiers.fast_sample([16, 0]))
def test_read_view_matches_index_arithmetic(sizes, strides, offset):
    flat = np.arange(64, dtype=np.float32) * 1.5
    got = np.asarray(read_view(flat, TensorDesc("FLOAT32", sizes, strides), offset))
    np.testing.assert_array_equal(got, numpy_view(flat, sizes, strides, offset // 4))


@pytest.mark.parametrize("sizes, strides", [l for l in LAYOUTS if l[0] != [3, 3] and 0 not in l[1]])
def test_write_view_matches_index_arithmetic(sizes, strides):
    flat = np.arange(64, dtype=np.int32)
    value = -np.arange(1, np.prod(sizes) + 1, dtype=np.int32).reshape(sizes)
    expected = flat.copy()
    for idx in itertools.product(*map(range, sizes)):
        expected[16 // 4 + sum(i * t for i, t in zip(idx, strides))] = value[idx]
    got = np.asarray(write_view(flat, TensorDesc("INT32", sizes, strides), value, 16))
    np.testing.assert_array_equal(got, expected)


def test_write_rejects_overlapping_output():
    with pytest.raises(ValidationError, match="stride 0"):
        write_view(np.zeros(8, np.float32), TensorDesc("FLOAT32", [2, 3], [0, 1]), np.zeros((2, 3), np.float32))


def test_view_past_the_buffer_is_refused():
    with pytest.raises(ValidationError, match="range of 12 bytes"):
        read_view(np.zeros(3, np.float32), TensorDesc("FLOAT32", [4]), 0)


def _primitives(fn, *args):
    jaxpr = jax.make_jaxpr(fn)(*args)
    hlo = jax.jit(fn).lower(*args).as_text()
    return {e.primitive.name for e in jaxpr.eqns}, hlo


@pytest.mark.parametrize("sizes, strides", [
    ([2, 3], None), ([2, 3], [3, 1]),                    # packed
    ([2, 3], [0, 1]), ([4, 3, 2], [0, 2, 0]),           # broadcast
    ([2, 3], [1, 2]), ([1, 2, 2, 3], [12, 1, 6, 2]),    # permuted
    ([2, 3], [5, 1]),                                    # padded
])
def test_simple_layouts_lower_without_gather_or_scatter(sizes, strides):
    flat = np.arange(32, dtype=np.float32)
    d = TensorDesc("FLOAT32", sizes, strides)
    prims, hlo = _primitives(lambda b: read_view(b, d), flat)
    assert not prims & {"gather", "scatter", "scatter-add"}, prims
    assert "gather" not in hlo
    if d.overlap_violation() is None:
        value = np.ones(sizes, np.float32)
        prims, hlo = _primitives(lambda b, v: write_view(b, d, v), flat, value)
        assert not prims & {"gather", "scatter"}, prims
        assert "scatter" not in hlo and "gather" not in hlo
    assert layout_plan(d.sizes, d.effective_strides).kind == "nested"


def test_interleaved_layout_uses_gather():
    d = TensorDesc("FLOAT32", [3, 2], [2, 3])
    prims, _ = _primitives(lambda b: read_view(b, d), np.arange(8, dtype=np.float32))
    assert "gather" in prims


def test_reinterpret_bytes_under_another_type():
    values = np.array([1.0, -2.5, 3.25, 65504.0], np.float32)
    as_u32 = np.asarray(read_view(values, TensorDesc("UINT32", [4])))
    np.testing.assert_array_equal(as_u32, np.frombuffer(values.tobytes(), np.uint32))
    as_f16 = np.asarray(read_view(values, TensorDesc("FLOAT16", [2, 2], [0, 1]), 0))
    halves = np.frombuffer(values.tobytes(), np.float16)
    np.testing.assert_array_equal(as_f16, np.stack([halves[:2], halves[:2]]))
    # bytes in, UINT16 written through a uint8 buffer
    raw = np.arange(16, dtype=np.uint8)
    out = np.asarray(write_view(raw, TensorDesc("UINT16", [2], [2]), np.array([0x0102, 0xA0B0], np.uint16), 0))
    expected = raw.copy()
    expected[0:2] = [0x02, 0x01]
    expected[4:6] = [0xB0, 0xA0]
    np.testing.assert_array_equal(out, expected)


# ---------------------------------------------------------------- 4-bit elements, two a byte
def _nibbles_by_hand(data: bytes, count: int, signed: bool) -> list[int]:
    """Element i of a 4-bit buffer: byte i // 2, its low nibble for even i, high for odd."""
    out = []
    for i in range(count):
        code = (data[i // 2] >> (4 * (i % 2))) & 0xF
        out.append(code - 16 if signed and code >= 8 else code)
    return out


def test_four_bit_packing_matches_the_page_byte_for_byte():
    # dml_tensor_data_type.md: UINT4 [1, 2, 3, 4, 5] is the bytes [0x21, 0x43, 0x05], the tail nibble ignored
    import jax.numpy as jnp

    out = np.asarray(write_view(np.zeros(4, np.uint8), TensorDesc("UINT4", [5]), np.array([1, 2, 3, 4, 5], jnp.uint4)))
    assert out.tolist() == [0x21, 0x43, 0x05, 0x00]
    for tail in (0x05, 0xF5, 0x85):
        got = read_view(np.array([0x21, 0x43, tail, 0x99], np.uint8), TensorDesc("UINT4", [5]))
        assert got.dtype == jnp.uint4 and np.asarray(got).astype(int).tolist() == [1, 2, 3, 4, 5]
    kept = np.asarray(write_view(np.full(4, 0xEE, np.uint8), TensorDesc("UINT4", [5]), np.array([1, 2, 3, 4, 5], jnp.uint4)))
    assert kept.tolist() == [0x21, 0x43, 0xE5, 0xEE]  # the tail nibble and the bytes past the view kept
    signed = np.asarray(write_view(np.zeros(4, np.uint8), TensorDesc("INT4", [5]), np.array([-1, 2, -8, 7, -3], jnp.int4)))
    assert signed.tolist() == [0x2F, 0x78, 0x0D, 0x00]  # two's complement nibbles
    assert calc_size("UINT4", [5]) == 4 and calc_size("INT4", [9]) == 8 and calc_size("UINT4", [2, 3], [4, 1]) == 4


def calc_size(data_type, sizes, strides=None):
    return dmljax.calc_buffer_tensor_size(data_type, sizes, strides)


@pytest.mark.parametrize("data_type", ["UINT4", "INT4"])
@pytest.mark.parametrize("sizes, strides, offset", tiers.fast_sample([
    ((5,), None, 0), ((7,), (1,), 16), ((3, 5), None, 0), ((3, 5), (6, 1), 0), ((2, 3), (1, 2), 0),
    ((2, 3), (0, 1), 0), ((2, 3), (2, 3), 0), ((3,), (3,), 16), ((1, 3, 1), (3, 1, 1), 0), ((2, 2, 3), (1, 6, 2), 0)],
    keep=2, key="four_bit"))
def test_four_bit_views_match_index_arithmetic(data_type, sizes, strides, offset):
    # strides count elements (nibbles) from the bound byte: element i is byte i // 2's low or high nibble
    rng = np.random.default_rng(11)
    raw = rng.integers(0, 256, 64, dtype=np.uint8)
    desc = TensorDesc(data_type, sizes, strides)
    st = desc.effective_strides
    signed = data_type == "INT4"
    values = _nibbles_by_hand(raw[offset:].tobytes(), 64, signed)
    got = np.asarray(read_view(raw, desc, offset)).astype(int)
    for idx in itertools.product(*[range(s) for s in sizes]):
        assert got[idx] == values[sum(i * t for i, t in zip(idx, st))]
    if desc.overlap_violation() is not None:
        return
    new = rng.integers(-8 if signed else 0, 8 if signed else 16, sizes)
    out = np.asarray(write_view(raw, desc, new.astype(desc.data_type.dtype), offset))
    expect = _nibbles_by_hand(raw.tobytes(), 128, signed)
    for idx in itertools.product(*[range(s) for s in sizes]):
        expect[2 * offset + sum(i * t for i, t in zip(idx, st))] = int(new[idx])
    assert _nibbles_by_hand(out.tobytes(), 128, signed) == expect  # every other nibble kept


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_four_bit_buffer_arrays_are_their_packed_bytes():
    import jax.numpy as jnp

    from dmljax._src.buffers import buffer_size_in_bytes, to_bytes

    buf = np.array([1, 2, 3, 4, 5], jnp.uint4)  # a buffer of 5 UINT4 elements: 3 bytes
    assert buffer_size_in_bytes(buf) == 3 and np.asarray(to_bytes(buf)).tolist() == [0x21, 0x43, 0x05]
    assert np.asarray(read_view(buf, TensorDesc("UINT8", [2]))).tolist() == [0x21, 0x43]
    assert np.asarray(read_view(buf, TensorDesc("UINT4", [2], [2]))).astype(int).tolist() == [1, 3]
    out = write_view(buf, TensorDesc("UINT4", [2], [3]), np.array([9, 15], jnp.uint4))
    assert out.dtype == jnp.uint4 and np.asarray(out).astype(int).tolist() == [9, 2, 3, 15, 5]
    out = write_view(buf, TensorDesc("UINT8", [1]), np.array([0xBA], np.uint8))
    assert np.asarray(out).astype(int).tolist() == [10, 11, 3, 4, 5]
    with pytest.raises(ValidationError, match="it must hold the tensor's last element: 4 bytes"):
        read_view(buf, TensorDesc("UINT4", [7]))
