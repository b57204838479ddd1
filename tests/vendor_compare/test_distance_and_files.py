"""The pieces under `dmljax compare`: chunked comparison equals one pass, TensorProto files read
straight from disk equal what the onnx package parses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dmljax._src.compare import distance
from dmljax._src.compare.errors import CompareError


def test_chunks_give_the_same_statistics(monkeypatch):
    rng = np.random.default_rng(3)
    e = rng.standard_normal(5000).astype(np.float32)
    f = e.copy()
    f[::7] = np.nextafter(f[::7], np.float32(np.inf))
    f[100:110] = np.nan
    f[4000] = 1e-40
    e[4000] = 0.0
    one = distance.compare(f, e, 0)
    monkeypatch.setattr(distance, "CHUNK", 333)
    many = distance.compare(f, e, 0)
    assert dataclasses.asdict(one) == dataclasses.asdict(many)
    assert one.patterns == {"NaN where a value is expected": 10, "denormals kept where zero is expected": 1,
                            "beyond the ULP budget": 714}  # 715 of every 7th, one of them NaN
    assert one.median_ulp == 0 and one.max_ulp == int(distance.ulp_distance(np.float32(1e-40), np.float32(0)))


def test_integers_are_equal_or_not():
    c = distance.compare(np.array([1, 2, 3], np.int32), np.array([1, 5, 3], np.int32), 10)
    assert (c.beyond, c.max_abs, c.median_abs, c.patterns) == (1, 3.0, 0.0, {"different values": 1})


onnx = pytest.importorskip("onnx", reason="TensorProto files need the onnx package (the test extra installs it)")


@pytest.mark.parametrize("value", [np.arange(12, dtype=np.float32).reshape(3, 4), np.array(3.5, np.float16),
                                   np.array([True, False]), np.arange(5, dtype=np.int64),
                                   np.full((2, 3), np.nan, np.float64)])
def test_tensorproto_read_from_disk(tmp_path, value):
    from dmljax._src.compare.onnx import _read_tensor
    path = tmp_path / "v.tensorproto"
    path.write_bytes(onnx.numpy_helper.from_array(value, "layer/0:out").SerializeToString())
    got = _read_tensor(path)
    assert got.dtype == value.dtype and got.shape == value.shape
    assert got.tobytes() == value.tobytes()
    typed = onnx.helper.make_tensor("t", onnx.TensorProto.FLOAT, [2], [1.5, 2.5])  # float_data, not raw_data
    path.write_bytes(typed.SerializeToString())
    assert _read_tensor(path).tolist() == [1.5, 2.5]


def test_truncated_tensorproto(tmp_path):
    from dmljax._src.compare.onnx import _read_tensor
    path = tmp_path / "v.tensorproto"
    path.write_bytes(onnx.numpy_helper.from_array(np.ones(100, np.float32), "v").SerializeToString()[:-40])
    with pytest.raises(CompareError, match="truncated"):
        _read_tensor(path)


def test_a_reference_read_range_by_range_equals_it_read_whole_and_compares_alike(tmp_path, monkeypatch):
    from dmljax._src.compare.onnx import Reference, _FileValues
    rng = np.random.default_rng(5)
    value = rng.standard_normal((3, 700)).astype(np.float32)
    (tmp_path / "a.tensorproto").write_bytes(onnx.numpy_helper.from_array(value, "a").SerializeToString())
    np.save(tmp_path / "b.npy", value)
    np.save(tmp_path / "c.npy", value.astype(">f4"))  # big-endian: read as stored, as np.load gives it
    np.savez(tmp_path / "d.npz", d=value)
    ref = Reference(tmp_path, ["a", "b", "c", "d"])
    expected = (value * np.float32(1.0000001)).astype(np.float32)
    monkeypatch.setattr(distance, "CHUNK", 500)
    for name in "abcd":
        whole, ranged = ref.load(name), ref.open(name)
        assert isinstance(ranged, _FileValues if name != "d" else np.ndarray), name
        assert (ranged.shape, ranged.dtype) == (whole.shape, whole.dtype)
        if name != "d":
            pieces = [ranged.range(s, s + 500) for s in range(0, whole.size, 500)]
            assert pieces[-1].size == 100 and all(p.dtype == whole.dtype for p in pieces)
            assert b"".join(p.tobytes() for p in pieces) == whole.tobytes()
        if name != "c":
            assert distance.compare(ranged, expected, 0) == distance.compare(whole, expected, 0)
