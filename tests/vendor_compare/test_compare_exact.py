"""`dmljax compare` measures a vendor's result from the operator's formula evaluated in float64,
the value each budget is defined against: a correct vendor on the far side of that value from
dmljax's own result is silent, one ULP more is named, and where there is no float64 value (or
dmljax's own result is beyond its budget of it) the report says what it measured from."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dmljax._src.compare.distance import compare, ulp_distance
from tests.vendor_compare.faults import edit_npy, run_model
from tests.vendor_compare.test_compare_dxdispatch import _compare, exp_model

BUDGET = 3  # ELEMENT_WISE_EXP's FLOAT32 budget
X = np.linspace(-20, 20, 64, dtype=np.float32)


def test_ulp_distance_from_a_float64_value():
    one = np.float32(1.0)
    assert float(ulp_distance(one, 1.0 + 0.25 * 2.0 ** -23)) == 0.25
    assert float(ulp_distance(np.float32(2.0), 2.0 - 2.0 ** -24)) == 0.5  # the ULP below 2 is half the one above
    top = np.finfo(np.float32).max
    assert float(ulp_distance(np.float32(np.inf), 1e39)) == 0.0  # rounds to infinity
    assert float(ulp_distance(top, 1e39)) == 1.0
    assert float(ulp_distance(np.float32(-2.0 ** -149), 2.0 ** -150)) == 1.5  # across zero
    assert float(ulp_distance(np.float16(1.0), 1.0 + 2.0 ** -11)) == 0.5
    # a vendor NaN or infinity against a finite value: judged as patterns, not distances
    c = compare(np.array([np.nan, np.inf], np.float32), np.array([1.0, 2.0], np.float32), 3,
                exact=np.array([1.0, 2.0]))
    assert c.patterns == {"NaN where a value is expected": 1, "infinity mismatches": 1}


def _steps(v: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Each float32 value moved n[i] representable values (negative: toward -inf)."""
    out = v.copy()
    for i in range(v.size):
        for _ in range(abs(int(n[i]))):
            out[i] = np.nextafter(out[i], np.float32(np.inf if n[i] > 0 else -np.inf))
    return out


def _vendor(own: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """exp's float64 value rounded once and moved ``steps`` ULP away from dmljax's side of it."""
    exact = np.exp(X.astype(np.float64))
    ref = exact.astype(np.float32)
    side = np.where(own.astype(np.float64) >= exact, -1, 1)  # away from dmljax
    return _steps(ref, side * steps), exact


def test_a_correct_vendor_on_the_far_side_of_the_float64_value_is_silent_and_one_more_ulp_is_named(tmp_path, capsys):
    model = exp_model(tmp_path)
    results = run_model(model, tmp_path / "results")
    own = np.load(results / "y.npy").reshape(-1)
    vendor, exact = _vendor(own, BUDGET)
    assert (ulp_distance(vendor, exact) <= BUDGET + 0.5).all()  # within budget of the reference...
    assert (ulp_distance(vendor, own) > BUDGET).any()  # ...yet beyond it from dmljax's result
    edit_npy(results / "y.npy", lambda a: vendor.reshape(a.shape))
    vendor.tofile(results / "y.dat")
    status, out, err = _compare(capsys, model, results, "--out", tmp_path / "report")
    assert (status, err) == (0, ""), out
    assert "from float64 (budget 3)" in out
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    c = data["entries"][0]["comparison"]
    assert c["exact"] and c["max_ulp"] <= BUDGET + 0.5 and c["max_ulp_dmljax"] > BUDGET
    assert data["entries"][0]["reference"] == "the float64 value of DML_OPERATOR_ELEMENT_WISE_EXP's formula"

    beyond, _ = _vendor(own, BUDGET + 1)
    edit_npy(results / "y.npy", lambda a: beyond.reshape(a.shape))
    status, out, _ = _compare(capsys, model, results)
    assert status == 1
    line = next(x for x in out.splitlines() if x.strip().startswith("y.npy"))
    assert "BEYOND" in line and "64 beyond budget: 64 beyond the ULP budget" in line


def test_dmljax_s_own_result_beyond_budget_of_the_float64_value_is_not_trusted(tmp_path, capsys):
    # exp(-100) is a FLOAT32 denormal, which DirectML flushes to 0: the float64 value keeps it, so
    # dmljax's 0 is far from it; there the vendor is judged against dmljax's result, and says so
    x = np.array([-100.0, -101.0, 0.5, 1.0], np.float32)
    own = np.array([0.0, 0.0, np.exp(np.float32(0.5)), np.exp(np.float32(1.0))], np.float32)
    exact = np.exp(x.astype(np.float64))
    c = compare(own.copy(), own, BUDGET, exact=exact)
    assert c.ok and c.untrusted == 2
    kept = own.copy()
    kept[0] = np.float32(exact[0])  # a denormal kept where DirectML flushes
    c = compare(kept, own, BUDGET, exact=exact)
    assert c.patterns == {"denormals kept where zero is expected": 1}
    assert c.first[0].exact is None and c.first[0].ulp_dmljax is not None


def test_an_output_without_a_float64_value_falls_back_and_says_why(tmp_path, capsys):
    # EXP writing into the second half of its resource: the file's elements are not the tensor's
    n = 8
    from tests.vendor_compare.faults import write_model
    model = write_model(tmp_path, "offset", {
        "x": {"initialValuesDataType": "FLOAT32", "initialValues": [float(v) for v in range(n)]},
        "y": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 2 * n, "value": 0}},
    }, {"exp": {"type": "DML_OPERATOR_ELEMENT_WISE_EXP", "desc": {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [n]}, "OutputTensor": {"DataType": "FLOAT32", "Sizes": [n]}}}},
        [{"type": "dispatch", "dispatchable": "exp",
          "bindings": {"InputTensor": "x", "OutputTensor": {"name": "y", "elementOffset": n}}},
         {"type": "writeFile", "resource": "y", "targetPath": "y.npy"}])
    results = run_model(model, tmp_path / "results")
    status, out, err = _compare(capsys, model, results, "--out", tmp_path / "report")
    assert (status, err) == (0, ""), out
    md = (tmp_path / "report" / "report.md").read_text()
    assert ("Expected: dmljax's result (no float64 evaluation for DML_OPERATOR_ELEMENT_WISE_EXP: OutputTensor is "
            "strided or offset within its resource).") in md


onnx = pytest.importorskip("onnx", reason="ONNX models need the onnx package (the test extra installs it)")


def test_onnx_single_operator_nodes_get_float64_and_a_node_of_several_falls_back(tmp_path, capsys):
    from onnx import TensorProto, helper
    from tests.vendor_compare.faults import onnx_dump
    nodes = [helper.make_node("Exp", ["x"], ["e"], name="exp"),
             helper.make_node("Sum", ["e", "x", "x"], ["y"], name="sum3")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
    x = np.linspace(-3, 3, 16, dtype=np.float32).reshape(2, 8)
    ref = onnx_dump(model, {"x": x}, tmp_path / "ref")
    status, out, err = _compare(capsys, model, "--reference", ref, "--out", tmp_path / "report")
    assert (status, err) == (0, ""), out
    data = {e["name"]: e for e in json.loads((tmp_path / "report" / "report.json").read_text())["entries"]}
    assert data["e"]["reference"] == "the float64 value of DML_OPERATOR_ELEMENT_WISE_EXP's formula"
    assert data["e"]["comparison"]["exact"]
    assert data["y"]["reference"].startswith("dmljax's result (no float64 evaluation for DML_OPERATOR_ELEMENT_WISE_ADD: "
                                             "the node made 2 DirectML operator calls")
    assert not data["y"]["comparison"]["exact"]


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.floats(width=32, allow_nan=False), st.floats(allow_nan=False, allow_infinity=False))
def test_ulp_distance_from_float64_agrees_with_the_count_and_rounding(a, b):
    a32 = np.float32(a)
    # between two FLOAT32 values it is the count of values between them
    assert float(ulp_distance(a32, np.float64(a32))) == 0.0
    if np.isfinite(a32) and a32 < np.finfo(np.float32).max:
        up = np.nextafter(a32, np.float32(np.inf))
        assert float(ulp_distance(up, np.float64(a32))) == float(ulp_distance(up, a32))
    # a float64 value rounded once to FLOAT32 is at most half an ULP from it (infinity included)
    with np.errstate(over="ignore"):
        r = np.float32(b)
    assert float(ulp_distance(r, np.float64(b))) <= 0.5
