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


def _recorded(fn, *arrays, **attrs):
    """The operator call ``fn(*arrays, **attrs)`` as recorded outside a trace."""
    from dmljax._src.op import record_calls
    with record_calls() as calls:
        fn(*arrays, **attrs)
    (call,) = calls
    return call


def test_which_operators_are_element_wise_comes_from_their_records():
    import dmljax
    from dmljax._src.compare.exact import element_wise
    from dmljax._src.registry import registry
    specs = {op.spec.short_name: op.spec for op in registry().values()}
    assert set(specs) == {e.short_name for e in dmljax.catalog() if e.implemented}
    from dmljax._src.compare.exact import computes
    wise = {name for name, spec in specs.items() if element_wise(spec)}
    families = {name for name, spec in specs.items() if computes(spec) and (
        spec.family.startswith("element_wise_") or spec.family == "activation")}
    assert families - wise == {"ACTIVATION_SOFTMAX", "ACTIVATION_SOFTMAX1", "ACTIVATION_LOG_SOFTMAX",
                               "ACTIVATION_LOG_SOFTMAX1", "VALUE_SCALE_2D"}
    for name in ("ELEMENT_WISE_ADD", "ELEMENT_WISE_EXP", "ELEMENT_WISE_CLIP_GRAD", "ELEMENT_WISE_ADD1",
                 "ACTIVATION_SIGMOID", "ACTIVATION_PARAMETERIZED_RELU", "ACTIVATION_GELU"):
        assert name in wise, name
    assert not wise & {"ACTIVATION_HARDMAX", "ACTIVATION_HARDMAX1", "REDUCE", "GEMM", "CAST", "CONVOLUTION"}


@pytest.mark.parametrize("case", ["sigmoid", "pow", "elu"])
def test_an_element_wise_float64_value_in_ranges_equals_the_whole_tensor_s_and_compares_alike(case, monkeypatch):
    import dmljax
    from dmljax._src.compare import distance
    from dmljax._src.compare.exact import Float64Chunks, float64_outputs
    monkeypatch.setattr(distance, "CHUNK", 4 * 1000)  # ranges of 1,000 elements: 6, the last of 250
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((7, 3, 250)) * 6).astype(np.float32)
    call = {"sigmoid": lambda: _recorded(dmljax.activation_sigmoid, x),
            "pow": lambda: _recorded(dmljax.element_wise_pow, np.abs(x), (x / 4).astype(np.float32)),
            "elu": lambda: _recorded(dmljax.activation_elu, x, alpha=0.7)}[case]()
    ((whole, why),) = float64_outputs(call)
    ((ranged, why_ranged),) = float64_outputs(call, chunked=True)
    assert (why, why_ranged) == ("", "") and isinstance(whole, np.ndarray) and isinstance(ranged, Float64Chunks)
    parts = [ranged.range(s, s + 1000) for s in range(0, x.size, 1000)]
    assert len(parts) == 6 and parts[-1].size == 250
    assert np.concatenate(parts).view(np.uint64).tolist() == whole.reshape(-1).view(np.uint64).tolist()
    own = np.asarray(call.out)
    vendor = own.copy().reshape(-1)
    hit = rng.choice(x.size, 40, replace=False)
    vendor[hit] = _steps(vendor[hit], rng.integers(-9, 10, hit.size))
    vendor[hit[:3]] = np.float32(1e30)
    vendor = vendor.reshape(own.shape)
    budget = 2
    by_whole = compare(vendor, own, budget, exact=whole)
    by_ranges = compare(vendor, own, budget, exact=float64_outputs(call, chunked=True)[0][0])
    assert by_whole.beyond > 3 and by_whole.first and all(f.exact is not None for f in by_whole.first)
    assert by_ranges == by_whole


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
