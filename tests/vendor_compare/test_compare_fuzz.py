"""`dmljax compare` on results folders a fuzzer fills: every outcome is a report (exit 0 or 1) or
one error line (exit 2), never a traceback, and the results are never changed."""

from __future__ import annotations

import io
import os
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dmljax._src.cli import main
from tests import tiers
from tests.vendor_compare.faults import run_model
from tests.vendor_compare.test_compare_dxdispatch import exp_model

EXAMPLES = int(os.environ.get("DMLJAX_FUZZ_EXAMPLES", "0")) or tiers.by_tier(3, 60)
pytestmark = pytest.mark.fuzz
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

NAMES = st.sampled_from(["y.npy", "y.dat", "z.npy", "y.bin", "sub/y.npy", "x.tensorproto", "y"])
DTYPES = st.sampled_from([np.float32, np.float16, np.int32, np.uint8, np.float64])
SHAPES = st.sampled_from([(64,), (8, 8), (60,), (2, 32), (1,), (65,)])


@st.composite
def result_file(draw):
    name = draw(NAMES)
    kind = draw(st.sampled_from(["npy", "bytes", "nan"]))
    if kind == "bytes":
        return name, draw(st.binary(max_size=300))
    a = np.zeros(draw(SHAPES), draw(DTYPES))
    if kind == "nan" and a.dtype.kind == "f":
        a[...] = np.nan
    buf = io.BytesIO()
    np.save(buf, a)
    return name, buf.getvalue()


@pytest.fixture(scope="module")
def exp(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    model = exp_model(folder)
    return model, run_model(model, folder / "clean")


@SETTINGS
@given(files=st.lists(result_file(), max_size=4), keep=st.sets(st.sampled_from(["y.npy", "y.dat"])),
       scale=st.sampled_from(["1", "0", "2.5", "nan", "-1", "1e300"]))
def test_any_results_folder(exp, files, keep, scale):
    model, clean = exp
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp)
        for name in keep:
            (results / name).write_bytes((clean / name).read_bytes())
        for name, data in files:
            (results / name).parent.mkdir(parents=True, exist_ok=True)
            (results / name).write_bytes(data)
        before = {p: p.read_bytes() for p in results.rglob("*") if p.is_file()}
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            status = main(["compare", str(model), str(results), "--budget-scale", scale])
        assert status in (0, 1, 2)
        assert "Traceback" not in err.getvalue()
        if status == 2:
            assert err.getvalue().startswith("dmljax compare: error: ") and out.getvalue() == ""
        else:
            assert err.getvalue() == "" and "y.npy" in out.getvalue()
        assert {p: p.read_bytes() for p in results.rglob("*") if p.is_file()} == before


onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package (the test extra installs it)")
from tests.vendor_compare.faults import onnx_dump  # noqa: E402
from tests.vendor_compare.test_compare_onnx import X, split_sigmoid_mul  # noqa: E402

ONNX_NAMES = st.sampled_from(["x", "a", "b", "s", "m", "y", "q", "layer_0"])


@st.composite
def reference_file(draw):
    name = draw(ONNX_NAMES)
    suffix = draw(st.sampled_from([".tensorproto", ".npy", ".pb", ".npz"]))
    a = np.zeros(draw(st.sampled_from([(2, 4), (2, 8), (3, 8), (8,), ()])), draw(DTYPES))
    if draw(st.booleans()):
        data = draw(st.binary(max_size=200))
    elif suffix == ".npy":
        buf = io.BytesIO()
        np.save(buf, a)
        data = buf.getvalue()
    elif suffix == ".npz":
        buf = io.BytesIO()
        np.savez(buf, **{name: a})
        data = buf.getvalue()
    else:
        data = onnx.numpy_helper.from_array(a, name).SerializeToString()
    return name + suffix, data


@pytest.fixture(scope="module")
def glu(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz_onnx")
    model = split_sigmoid_mul(folder)
    return model, onnx_dump(model, {"x": X}, folder / "clean")


@SETTINGS
@given(files=st.lists(reference_file(), max_size=4), keep=st.sets(st.sampled_from(["x", "a", "b", "s", "m", "y"])))
def test_any_reference_folder(glu, files, keep):
    model, clean = glu
    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp)
        for name in keep:
            (ref / f"{name}.tensorproto").write_bytes((clean / f"{name}.tensorproto").read_bytes())
        for name, data in files:
            (ref / name).write_bytes(data)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            status = main(["compare", str(model), "--reference", str(ref)])
        assert status in (0, 1, 2) and "Traceback" not in err.getvalue()
        assert (status == 2) == err.getvalue().startswith("dmljax compare: error: ")
