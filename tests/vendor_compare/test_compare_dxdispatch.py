"""`dmljax compare MODEL.json RESULTS_DIR`: silent on dmljax's own files, naming the operator of
each injected fault, one message for each kind of bad input, nothing overwritten."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from dmljax._src.cli import main
from dmljax._src.compare.distance import compare, ulp_distance
from dmljax._src.compare.dxdispatch import compare_dxdispatch
from tests.vendor_compare.faults import edit_npy, run_model, ulp_step, write_model

F32 = "FLOAT32"


def _tensor(dt, sizes):
    return {"DataType": dt, "Sizes": list(sizes)}


def exp_model(folder: Path) -> Path:
    x = np.linspace(-20, 20, 64, dtype=np.float32).tolist()
    return write_model(folder, "exp", {
        "x": {"initialValuesDataType": F32, "initialValues": x},
        "y": {"initialValuesDataType": F32, "initialValues": {"valueCount": 64, "value": 0}},
    }, {"exp": {"type": "DML_OPERATOR_ELEMENT_WISE_EXP", "desc": {
        "InputTensor": _tensor(F32, [64]), "OutputTensor": _tensor(F32, [64])}}},
        [{"type": "dispatch", "dispatchable": "exp", "bindings": {"InputTensor": "x", "OutputTensor": "y"}},
         {"type": "writeFile", "resource": "y", "targetPath": "y.npy", "dimensions": [8, 8]},
         {"type": "writeFile", "resource": "y", "targetPath": "y.dat"}])


def chain_model(folder: Path) -> Path:
    """mask ? x : y (ELEMENT_WISE_IF), then that times 3 (MULTIPLY), each result written."""
    n = 16
    return write_model(folder, "chain", {
        "mask": {"initialValuesDataType": "UINT8", "initialValues": [i % 2 for i in range(n)]},
        "x": {"initialValuesDataType": F32, "initialValues": [float(i) + 0.25 for i in range(n)]},
        "y": {"initialValuesDataType": F32, "initialValues": {"valueCount": n, "value": -1.5}},
        "three": {"initialValuesDataType": F32, "initialValues": {"valueCount": n, "value": 3}},
        "sel": {"initialValuesDataType": F32, "initialValues": {"valueCount": n, "value": 0}},
        "out": {"initialValuesDataType": F32, "initialValues": {"valueCount": n, "value": 0}},
    }, {"if": {"type": "DML_OPERATOR_ELEMENT_WISE_IF", "desc": {
            "ConditionTensor": _tensor("UINT8", [n]), "ATensor": _tensor(F32, [n]), "BTensor": _tensor(F32, [n]),
            "OutputTensor": _tensor(F32, [n])}},
        "mul": {"type": "DML_OPERATOR_ELEMENT_WISE_MULTIPLY", "desc": {
            "ATensor": _tensor(F32, [n]), "BTensor": _tensor(F32, [n]), "OutputTensor": _tensor(F32, [n])}}},
        [{"type": "dispatch", "dispatchable": "if",
          "bindings": {"ConditionTensor": "mask", "ATensor": "x", "BTensor": "y", "OutputTensor": "sel"}},
         {"type": "dispatch", "dispatchable": "mul", "bindings": {"ATensor": "sel", "BTensor": "three", "OutputTensor": "out"}},
         {"type": "writeFile", "resource": "sel", "targetPath": "sel.npy"},
         {"type": "writeFile", "resource": "out", "targetPath": "out.npy"}])


def half_model(folder: Path, name: str, x, scale_bias=None, op="DML_OPERATOR_ELEMENT_WISE_IDENTITY") -> Path:
    n = len(x)
    desc = {"InputTensor": _tensor("FLOAT16", [n]), "OutputTensor": _tensor("FLOAT16", [n])}
    if scale_bias:
        desc["ScaleBias"] = scale_bias
    return write_model(folder, name, {
        "x": {"initialValuesDataType": "FLOAT16", "initialValues": [float(v) for v in x]},
        "y": {"initialValuesDataType": "FLOAT16", "initialValues": {"valueCount": n, "value": 0}},
    }, {"op": {"type": op, "desc": desc}},
        [{"type": "dispatch", "dispatchable": "op", "bindings": {"InputTensor": "x", "OutputTensor": "y"}},
         {"type": "writeFile", "resource": "y", "targetPath": "y.npy"}])


def _compare(capsys, *args):
    status = main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


# ------------------------------------------------------------------ distances
def test_ulp_distance_counts_across_zero_and_keeps_signed_zeros_equal():
    one = np.float32(1.0)
    assert int(ulp_distance(ulp_step(np.array([one]), 3), np.array([one]))[0]) == 3
    tiny = np.array([np.finfo(np.float32).smallest_subnormal], np.float32)
    assert int(ulp_distance(tiny, -tiny)[0]) == 2
    assert int(ulp_distance(np.float32(0.0), np.float32(-0.0))) == 0
    assert int(ulp_distance(np.float16(65504), np.float16(-65504))) == 2 * 0x7BFF


def test_compare_names_each_pattern():
    exp = np.array([1.0, np.nan, np.inf, 1e-40, 0.0, 2.0], np.float32)
    got = np.array([1.0, 5.0, -np.inf, 0.0, 1e-40, 2.0], np.float32)
    c = compare(got, exp, 2)
    assert c.patterns == {"a value where NaN is expected": 1, "infinity mismatches": 1, "flushed denormals": 1,
                          "denormals kept where zero is expected": 1}
    assert c.beyond == 4 and [f.position for f in c.first] == [(1,), (2,), (3,), (4,)]
    assert compare(exp, exp, 0).ok  # NaN is NaN, an infinity itself


# ------------------------------------------------------------ clean and faulty
def test_clean_files_are_silent(tmp_path, capsys):
    model = exp_model(tmp_path)
    results = run_model(model, tmp_path / "results")
    status, out, err = _compare(capsys, model, results)
    assert (status, err) == (0, "")
    assert "BEYOND" not in out and "All 2 compared tensors are within" in out


@pytest.mark.parametrize("beyond", [1, pytest.param(3, marks=pytest.mark.slow)])
def test_exp_a_few_ulp_beyond_its_budget_is_named(tmp_path, capsys, beyond):
    model = exp_model(tmp_path)
    results = run_model(model, tmp_path / "results")
    budget = 3  # ELEMENT_WISE_EXP's FLOAT32 budget

    exact = np.exp(np.linspace(-20, 20, 64, dtype=np.float32).astype(np.float64))
    ref = exact.astype(np.float32)  # the float64 value rounded once: the budget counts from it

    def fault(a):
        a.reshape(-1)[[5, 40]] = ulp_step(ref[[5, 40]], budget + beyond)
        a.reshape(-1)[[6, 41]] = ulp_step(ref[[6, 41]], budget)  # within budget: not reported
        return a
    edit_npy(results / "y.npy", fault)
    status, out, _ = _compare(capsys, model, results, "--out", tmp_path / "report")
    assert status == 1
    line = next(x for x in out.splitlines() if x.strip().startswith("y.npy"))
    assert "BEYOND" in line and "2 beyond budget" in line and "dispatch 'exp'" in line
    assert "y.dat  ok" in out
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    entry = data["entries"][0]
    assert data["first_fault"] == "y.npy" and entry["operators"] == ["DML_OPERATOR_ELEMENT_WISE_EXP"]
    assert [f["position"] for f in entry["comparison"]["first"]] == [[0, 5], [5, 0]]
    moved = ulp_step(ref[[5, 40]], budget + beyond)
    assert entry["comparison"]["max_ulp"] == pytest.approx(float(ulp_distance(moved, exact[[5, 40]]).max()), abs=1e-6)
    assert entry["comparison"]["max_ulp"] > budget + 0.5  # measured from the float64 value
    x5 = np.linspace(-20, 20, 64, dtype=np.float32)[5]
    assert entry["comparison"]["first"][0]["inputs"] == {"InputTensor (x)": float(x5)}
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| [0, 5] |" in md and "ulp_histogram.png" in md
    assert (tmp_path / "report" / "ulp_histogram.png").read_bytes()[:4] == b"\x89PNG"
    assert "<table>" in (tmp_path / "report" / "report.html").read_text()


@pytest.mark.slow
def test_budget_scale_loosens_and_tightens(tmp_path, capsys):
    model = exp_model(tmp_path)
    results = run_model(model, tmp_path / "results")
    edit_npy(results / "y.npy", lambda a: ulp_step(a, 5))
    assert _compare(capsys, model, results, "--budget-scale", "2")[0] == 0
    assert _compare(capsys, model, results)[0] == 1
    clean = run_model(model, tmp_path / "clean")
    status, out, _ = _compare(capsys, model, clean, "--budget-scale", "0")
    # 0 asks for correctly rounded results: dmljax's own exp is named where it is not
    own = np.load(clean / "y.npy").reshape(-1)
    rounded = np.exp(np.linspace(-20, 20, 64, dtype=np.float32).astype(np.float64)).astype(np.float32)
    assert status == (1 if (own != rounded).any() else 0), out
    assert _compare(capsys, model, results, "--budget-scale", "-1")[0] == 2


def test_flushed_float16_denormals_are_named(tmp_path, capsys):
    # FLOAT16 keeps denormals (docs/semantics.md#denormals): x * 2^-10 of small x gives some
    x = np.array([0.001, 0.002, 0.5, 0.03, 1.0, 0.0004], np.float16)
    model = half_model(tmp_path, "scale", x, {"Scale": 2.0 ** -10, "Bias": 0.0})
    results = run_model(model, tmp_path / "results")
    y = np.load(results / "y.npy")
    den = (y != 0) & (np.abs(y) < np.finfo(np.float16).tiny)
    assert den.sum() >= 3
    edit_npy(results / "y.npy", lambda a: np.where(den, np.float16(0), a).astype(np.float16))
    status, out, _ = _compare(capsys, model, results)
    assert status == 1 and f"{int(den.sum())} flushed denormals" in out and "dispatch 'op'" in out


def test_float16_multiply_add_rounded_twice_is_named(tmp_path, capsys):
    # ScaleBias x * Scale + Bias of FLOAT16 is computed in FLOAT32 and rounded once; a runtime
    # that rounds the product to FLOAT16 first loses bits that the cancellation then shows.
    rng = np.random.default_rng(0)
    x = (1 + rng.integers(1, 1023, 32) / 1024).astype(np.float16)
    scale, bias = 1.0 + 2.0 ** -10 + 2.0 ** -9, -1.0
    model = half_model(tmp_path, "fma", x, {"Scale": scale, "Bias": bias})
    results = run_model(model, tmp_path / "results")
    twice = ((x.astype(np.float32) * np.float32(scale)).astype(np.float16).astype(np.float32) + np.float32(bias))
    np.save(results / "y.npy", twice.astype(np.float16))
    status, out, _ = _compare(capsys, model, results)
    assert status == 1 and "dispatch 'op'" in out and "beyond the ULP budget" in out


def test_nan_for_a_masked_value_names_the_selection_not_its_consumer_s_inputs(tmp_path, capsys):
    model = chain_model(tmp_path)
    results = run_model(model, tmp_path / "results")
    mask = np.arange(16) % 2 == 0  # IF picks y (-1.5) where the mask is 0

    def nan_sel(a):
        a[mask] = np.nan
        return a
    edit_npy(results / "sel.npy", nan_sel)
    edit_npy(results / "out.npy", nan_sel)  # NaN * 3: the consumer is right on what it was given
    status, out, _ = _compare(capsys, model, results)
    assert status == 1
    assert "1 of 2 beyond budget; the first: sel.npy from dispatch 'if' (command 0) (DML_OPERATOR_ELEMENT_WISE_IF)" in out
    assert "8 NaN where a value is expected" in out


def glu_model(folder: Path) -> Path:
    """out = a * sigmoid(b), in two dispatches (the pattern an AMD driver fused wrongly)."""
    n = 32
    rng = np.random.default_rng(2)
    res = {k: {"initialValuesDataType": F32, "initialValues": rng.standard_normal(n).astype(np.float32).tolist()}
           for k in ("a", "b")}
    res.update({k: {"initialValuesDataType": F32, "initialValues": {"valueCount": n, "value": 0}} for k in ("s", "out")})
    return write_model(folder, "glu", res, {
        "sigmoid": {"type": "DML_OPERATOR_ACTIVATION_SIGMOID", "desc": {
            "InputTensor": _tensor(F32, [n]), "OutputTensor": _tensor(F32, [n])}},
        "mul": {"type": "DML_OPERATOR_ELEMENT_WISE_MULTIPLY", "desc": {
            "ATensor": _tensor(F32, [n]), "BTensor": _tensor(F32, [n]), "OutputTensor": _tensor(F32, [n])}}},
        [{"type": "dispatch", "dispatchable": "sigmoid", "bindings": {"InputTensor": "b", "OutputTensor": "s"}},
         {"type": "dispatch", "dispatchable": "mul", "bindings": {"ATensor": "a", "BTensor": "s", "OutputTensor": "out"}},
         {"type": "writeFile", "resource": "s", "targetPath": "s.npy"},
         {"type": "writeFile", "resource": "out", "targetPath": "out.dat"}])


def test_a_sigmoid_of_the_wrong_operand_names_the_multiply(tmp_path, capsys):
    model = glu_model(tmp_path)
    results = run_model(model, tmp_path / "results")
    spec = json.loads(model.read_text())["resources"]
    a = np.array(spec["a"]["initialValues"], np.float32)
    (results / "out.dat").write_bytes((a * (1 / (1 + np.exp(-a)))).astype(np.float32).tobytes())
    status, out, _ = _compare(capsys, model, results)
    assert status == 1
    assert "1 of 2 beyond budget; the first: out.dat from dispatch 'mul' (command 1)" in out
    entry = compare_dxdispatch(model, results).entries[1]
    assert entry.note.startswith("Judged on the vendor's own inputs from s.npy")
    s = np.load(results / "s.npy")
    i = entry.comparison.first[0].position[0]
    assert entry.comparison.first[0].inputs == {"ATensor (a)": float(a[i]), "BTensor (s)": float(s[i])}


@pytest.mark.slow
def test_a_faulty_sigmoid_is_not_blamed_on_the_multiply_that_used_it(tmp_path, capsys):
    model = glu_model(tmp_path)
    results = run_model(model, tmp_path / "results")
    spec = json.loads(model.read_text())["resources"]
    a = np.array(spec["a"]["initialValues"], np.float32)
    s = ulp_step(np.load(results / "s.npy"), 4 + 2)  # ACTIVATION_SIGMOID's budget is 4
    np.save(results / "s.npy", s)
    (results / "out.dat").write_bytes((a * s).astype(np.float32).tobytes())  # the multiply is right on its inputs
    status, out, _ = _compare(capsys, model, results)
    assert status == 1 and "1 of 2 beyond budget; the first: s.npy from dispatch 'sigmoid'" in out


# ------------------------------------------------------------------ bad input
@pytest.fixture
def exp_results(tmp_path):
    model = exp_model(tmp_path)
    return model, run_model(model, tmp_path / "results")


def _error(capsys, *args) -> str:
    status, out, err = _compare(capsys, *args)
    assert status == 2 and out == "" and "Traceback" not in err
    assert err.startswith("dmljax compare: error: ")
    return err


def test_missing_file(exp_results, capsys):
    model, results = exp_results
    (results / "y.dat").unlink()
    assert "y.dat is missing" in _error(capsys, model, results)


@pytest.mark.slow
def test_extra_file(exp_results, capsys):
    model, results = exp_results
    np.save(results / "z.npy", np.zeros(3, np.float32))
    assert "z.npy is not written by any writeFile command of this model (pass --allow-extra" in _error(capsys, model, results)
    status, out, _ = _compare(capsys, model, results, "--allow-extra")
    assert status == 0 and "Not compared" in out and "z.npy" in out


def test_wrong_data_type_shape_and_length_all_at_once(exp_results, capsys):
    model, results = exp_results
    with np.errstate(over="ignore"):
        np.save(results / "y.npy", np.load(results / "y.npy").astype(np.float16))
    (results / "y.dat").write_bytes((results / "y.dat").read_bytes()[:-4])
    err = _error(capsys, model, results)
    assert "2 problems" in err
    assert "y.npy holds float16; resource 'y' (FLOAT32) is written as float32" in err
    assert "y.dat is 252 bytes long; resource 'y' (FLOAT32) is written raw as 256 bytes (64 elements)" in err


@pytest.mark.slow
def test_wrong_shape_and_element_count(exp_results, capsys):
    model, results = exp_results
    np.save(results / "y.npy", np.load(results / "y.npy").reshape(-1)[:60])
    assert "y.npy has shape [60] (60 elements); resource 'y' (FLOAT32) is written with shape [8, 8] (64 elements)" \
        in _error(capsys, model, results)


def test_a_model_that_does_not_parse(exp_results, capsys, tmp_path):
    _, results = exp_results
    bad = tmp_path / "bad.json"
    bad.write_text("{ \"resources\": ")
    assert "bad.json: the model cannot be run: file: is not valid JSON" in _error(capsys, bad, results)


@pytest.mark.slow
def test_results_of_another_model(exp_results, capsys, tmp_path):
    model, _ = exp_results
    other = chain_model(tmp_path)
    other_results = run_model(other, tmp_path / "other")
    err = _error(capsys, model, other_results)
    assert "holds none of the files the model writes (y.dat, y.npy), but holds out.npy, sel.npy" in err
    assert "results of another model than exp.json" in err


def test_no_results_folder(exp_results, capsys, tmp_path):
    model, _ = exp_results
    assert "nowhere: does not exist" in _error(capsys, model, tmp_path / "nowhere")


def test_the_report_overwrites_nothing(exp_results, capsys, tmp_path):
    model, results = exp_results
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").write_text("mine")
    err = _error(capsys, model, results, "--out", out)
    assert "report.md exists; dmljax compare overwrites nothing unless --force" in err
    assert (out / "report.md").read_text() == "mine" and not (out / "report.json").exists()
    assert _compare(capsys, model, results, "--out", out, "--force")[0] == 0
    assert (out / "report.md").read_text().startswith("# dmljax compare")


@pytest.mark.slow
def test_the_results_are_not_touched(exp_results, capsys):
    model, results = exp_results
    before = {p.name: p.read_bytes() for p in results.iterdir()}
    _compare(capsys, model, results)
    assert {p.name: p.read_bytes() for p in results.iterdir()} == before


@pytest.mark.slow
def test_shared_model_compares_clean(tmp_path, capsys):
    shared = Path(__file__).resolve().parents[3] / "shared" / "dxdispatch" / "models"
    if not shared.is_dir():
        pytest.skip("needs ../shared (DxDispatch's example models beside the checkout)")
    for f in ("dml_element_wise_add_npy.json", "dml_element_wise_add_input.npy", "dml_element_wise_add_input.dat"):
        shutil.copy(shared / f, tmp_path / f)
    model = tmp_path / "dml_element_wise_add_npy.json"
    results = run_model(model, tmp_path / "results")
    status, out, _ = _compare(capsys, model, results)
    assert status == 0 and "All 2 compared" in out


def test_usage_errors(exp_results, capsys, tmp_path):
    model, results = exp_results
    assert "name the folder of results to compare" in _error(capsys, model)
    assert "give the results folder once" in _error(capsys, model, results, "--reference", results)
    assert "--inputs applies to ONNX models" in _error(capsys, model, results, "--inputs", "x.npy")
    assert "--budget-scale is nan" in _error(capsys, model, results, "--budget-scale", "nan")
    nowrites = tmp_path / "nowrites.json"
    spec = json.loads(model.read_text())
    spec["commands"] = spec["commands"][:1]
    nowrites.write_text(json.dumps(spec))
    assert "has no writeFile command" in _error(capsys, nowrites, results)
