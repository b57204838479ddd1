"""DxDispatch models: the shared example models, every initializer, bindings, commands, and the
error messages of malformed models.

The shared folder (../shared next to the repository, as CI has it) holds DxDispatch's own example
models. For those whose operators dmljax implements, the expected output is computed here from
the model by the operators' float64 references (tests/reference: the desc's members given by the
records' names, each result rounded once to the tensor type) and printed with C++'s default stream
format (%g, 6 significant digits).
"""

import inspect
import io
import json
import math
import os
import shutil
from pathlib import Path
from unittest import mock

import jax
import numpy as np
import pytest

import dmljax
from dmljax._src.cli import main
from dmljax._src.dxdispatch import model as dxdispatch
from dmljax._src.dxdispatch.model import Model, ModelError, load_json
from tests import catalog, compare, tiers
from tests.reference.record import Attrs

SHARED = Path(__file__).resolve().parents[2] / "shared"
MODELS = SHARED / "dxdispatch" / "models"
MODEL_FILES = sorted(MODELS.glob("*.json")) if MODELS.is_dir() else []
needs_shared = tiers.needs_shared


# --------------------------------------------------------------- an independent NumPy reader
def np_type(name):
    name = name.replace("DML_TENSOR_DATA_TYPE_", "")
    return np.dtype({"FLOAT32": np.float32, "FLOAT16": np.float16, "UINT32": np.uint32, "INT32": np.int32,
                     "UINT8": np.uint8, "INT8": np.int8, "UINT16": np.uint16, "INT16": np.int16}[name])


def np_initial(res, base):
    init = res["initialValues"]
    if isinstance(init, dict) and "sourcePath" in init:
        p = base / init["sourcePath"]
        if p.suffix == ".npy":
            return np.load(p)
        return np.fromfile(p, np_type(res["initialValuesDataType"]))
    dt = np_type(res["initialValuesDataType"])
    if isinstance(init, list):
        return np.array([float(v) for v in init]).astype(dt)
    if "value" in init:
        return np.full(init["valueCount"], init["value"], np.float64).astype(dt)
    out, v = [], dt.type(init["valueStart"])
    for _ in range(init["valueCount"]):
        out.append(v)
        v = dt.type(v + dt.type(init["valueDelta"]))
    return np.array(out, dt)


def c_format(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%g" % v


def _json_value(value, type_=None):
    """A desc member's JSON value as the references take it: a ScaleBias {"Scale", "Bias"} as
    (Scale, Bias), a list as a tuple; numbers, enums in their DML_* spelling and other structures
    (DML_SIZE_2D's {"Width", "Height"}) as they are."""
    if type_ == "DML_SCALE_BIAS" and isinstance(value, dict):
        return (value["Scale"], value["Bias"])
    if isinstance(value, list):
        return tuple(_json_value(v) for v in value)
    return value


def _reference_kwargs(spec, desc, fn):
    """The reference's keyword arguments for a desc, by the record's names (each attribute
    member's Python argument; each output's Sizes and caller-chosen DataType where the caller
    gives them and the reference takes them). A member the reference does not take must be one it
    implies: a DataType that Min and Max are converted to a tensor's (CLIP1's MinMaxDataType) is
    that tensor's. Fused activations are left out: ``expected_outputs`` applies them after."""
    params = inspect.signature(fn).parameters
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {}
    for p in spec.params:
        if p.type == "DML_OPERATOR_DESC*" or desc.get(p.dml_name) is None:
            continue
        if takes_all or p.arg in params:
            kwargs[p.arg] = _json_value(desc[p.dml_name], p.type)
        else:
            assert p.type == "DML_TENSOR_DATA_TYPE" and p.converted_to is not None and np_type(
                desc[p.dml_name]) == np_type(desc[p.converted_to]["DataType"]), f"the reference takes no {p.arg}"
    for t in spec.outputs:
        d = desc.get(t.dml_name)
        if d is None:
            continue  # an optional output the desc leaves out (LSTM's OutputSequenceTensor)
        if t.sizes_arg and (takes_all or f"{t.arg}_sizes" in params):
            kwargs[f"{t.arg}_sizes"] = [tuple(e["Sizes"]) for e in d] if t.array else tuple(d["Sizes"])
        if t.default_data_type is not None and not t.array and (takes_all or t.data_type_arg in params):
            kwargs[t.data_type_arg] = d["DataType"]
    return kwargs


def _fused(value):
    """A fused activation's type and members (DxDispatch writes them flat, or under "Desc")."""
    members = value.get("Desc", {k: v for k, v in value.items() if k != "Type"})
    return value["Type"], members or {}


def expected_outputs(type_, desc, inputs):
    """The acceptable results of one dispatch, from the float64 reference of its operator
    (tests/reference, through tests/catalog.py): a list of candidates, each a tuple of one array
    per output element (a tensor array's elements in turn), rounded once to its desc's DataType.
    A fused activation is the activation's own reference on the host's stored result, as DirectML
    defines it ("the same result as the two operators in turn")."""
    spec = dmljax.get_operator(type_).spec
    ref = catalog.references()[spec.enum_name]
    given = [desc.get(t.dml_name) is not None for t in spec.outputs]  # optional outputs may be left out
    out_types = [np_type(d["DataType"]) for t in spec.outputs if desc.get(t.dml_name) is not None
                 for d in (desc[t.dml_name] if t.array else [desc[t.dml_name]])]
    candidates = []
    for result in ref.fn(*inputs, **_reference_kwargs(spec, desc, ref.fn)):
        parts = result if isinstance(result, tuple) else (result,)
        parts = parts if len(parts) != len(given) or all(given) else [y for y, g in zip(parts, given) if g]
        candidates.append(tuple(np.asarray(y).astype(dt) for y, dt in zip(parts, out_types, strict=True)))
    fused = [p for p in spec.params if p.type == "DML_OPERATOR_DESC*" and desc.get(p.dml_name)]
    for p in fused:  # one output: the activation reads it and writes it
        name, members = _fused(desc[p.dml_name])
        act = dmljax.get_operator(name).spec
        act_ref = catalog.references()[act.enum_name].fn
        act_desc = {**members, **{t.dml_name: desc[spec.outputs[0].dml_name] for t in act.tensors}}
        candidates = [(np.asarray(y).astype(out_types[0]),) for (host,) in candidates
                      for y in act_ref(host, **_reference_kwargs(act, act_desc, act_ref))]
    return candidates


def _bound(state, binding, count):
    """The ``count`` elements a binding (a resource name, or an object with an elementOffset)
    gives, as DxDispatch's guide describes bindings."""
    if isinstance(binding, str):
        return state[binding][:count]
    start = binding.get("elementOffset", 0)
    return state[binding["name"]][start:start + count]


def _elements(tensor_desc):
    return int(np.prod(tensor_desc["Sizes"]))


def _binding_names(binding):
    return [b if isinstance(b, str) else b["name"] for b in (binding if isinstance(binding, list) else [binding])]


def expected_prints(model_path):
    """Each print command's acceptable lines (one for each candidate result of the dispatch that
    last wrote the resource; later dispatches read the first)."""
    m = json.loads(model_path.read_text())
    if not any(cmd["type"] == "print" for cmd in m["commands"]):
        return []  # image_io.json: its written picture is checked in test_dxdispatch_images.py
    state = {k: np_initial(v, model_path.parent) for k, v in m["resources"].items()}
    written = {}  # resource -> its candidate values
    lines = []
    for cmd in m["commands"]:
        if cmd["type"] == "dispatch":
            d = m["dispatchables"][cmd["dispatchable"]]
            desc = d.get("desc", d.get("Desc"))
            binds = {**d.get("bindings", {}), **cmd["bindings"]}
            spec = dmljax.get_operator(d["type"]).spec
            inputs = []
            for t in spec.inputs:
                if binds.get(t.dml_name) is None or desc.get(t.dml_name) is None:
                    inputs.append(None)  # an optional tensor left out
                    continue
                tds = desc[t.dml_name] if t.array else [desc[t.dml_name]]
                bs = binds[t.dml_name] if isinstance(binds[t.dml_name], list) else [binds[t.dml_name]]
                arrays = [_bound(state, b, _elements(td)).astype(np_type(td["DataType"])).reshape(td["Sizes"])
                          for b, td in zip(bs, tds)]
                inputs.append(arrays if t.array else arrays[0])
            candidates = expected_outputs(d["type"], desc, inputs)
            names = [n for t in spec.outputs if desc.get(t.dml_name) is not None
                     for n in _binding_names(binds[t.dml_name])]
            for i, name in enumerate(names):
                written[name] = [c[i].ravel() for c in candidates]
                state[name] = written[name][0]
        elif cmd["type"] == "print":
            values = written.get(cmd["resource"], [state[cmd["resource"]]])
            lines.append({f"Resource '{cmd['resource']}': " + ", ".join(c_format(v) for v in vs) for vs in values})
    return lines


def model_ops(path):
    m = json.loads(path.read_text())
    return [d["type"] for d in m["dispatchables"].values()]


def implemented(type_):
    key = type_ if type_.startswith("DML_OPERATOR_") else "DML_OPERATOR_" + type_
    return key in dmljax.registry()


def run_cli(argv, capsys):
    argv = list(map(str, argv))
    if argv[:1] == ["run"] and "--out" not in argv:  # files beside the model, as DxDispatch writes them
        argv += ["--out", str(Path(argv[1]).parent), "--force"]
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# --------------------------------------------------------------- the shared models
@needs_shared
@pytest.mark.parametrize("path", tiers.fast_sample(MODEL_FILES, keep=6, key="shared"), ids=[p.name for p in MODEL_FILES])
def test_shared_model(path, tmp_path, capsys):
    # Copy the folder: writeFile targets are relative to the model, and shared/ stays untouched.
    work = tmp_path / "models"
    shutil.copytree(MODELS, work, ignore=shutil.ignore_patterns("other_refs"))
    model = work / path.name
    ops = model_ops(path)
    status, out, err = run_cli(["run", model, "--no-timing"], capsys)
    if all(implemented(t) for t in ops):  # image_io.json's picture: test_dxdispatch_images.py
        assert status == 0, err
        printed = [ln for ln in out.splitlines() if ln.startswith("Resource '") and "written to" not in ln]
        expected = expected_prints(path)
        assert len(printed) == len(expected) and all(p in e for p, e in zip(printed, expected)), (printed, expected)
    else:
        missing = next(t for t in ops if not implemented(t))
        name = next(n for n, d in json.loads(path.read_text())["dispatchables"].items() if d["type"] == missing)
        assert status == 1 and out == ""
        full = missing if missing.startswith("DML_OPERATOR_") else "DML_OPERATOR_" + missing
        assert f"{model}: dispatchable '{name}' ({missing}):" in err
        assert f"{full} is not implemented yet in dmljax" in err


@needs_shared
def test_multihead_attention_model_of_other_refs(tmp_path, capsys):
    """models/other_refs/dml_mha.json: MULTIHEAD_ATTENTION on a FLOAT16 stacked query/key/value, its
    optional tensors left out, half-precision computation allowed, then the two commands that print
    DirectML's temporary resources. The output is held against the float64 reference within the
    record's half-precision budget (not bit for bit: the budget is what the record promises), and
    the temporary-resource commands say there is none."""
    model = tmp_path / "dml_mha.json"
    shutil.copy(MODELS / "other_refs" / "dml_mha.json", model)
    status, out, err = run_cli(["run", model, "--no-timing"], capsys)
    assert status == 0, err
    printed = [ln for ln in out.splitlines() if ln.startswith("Resource 'output': ")]
    assert len(printed) == 1, out
    got = np.array([float(v) for v in printed[0].split(": ", 1)[1].split(", ")]).astype(np.float16)
    assert [ln for ln in out.splitlines() if ln.startswith("Temporary resource")] == [
        "Temporary resource (initialization): none; dmljax's operators ask for no temporary resource",
        "Temporary resource (execution): none; dmljax's operators ask for no temporary resource"]

    m = json.loads(model.read_text())
    d = m["dispatchables"]["mha"]
    desc = d["desc"]
    spec = dmljax.get_operator(d["type"]).spec
    qkv = np_initial(m["resources"]["stackedQueryKeyValue"], tmp_path)
    qkv = qkv[:_elements(desc["StackedQueryKeyValueTensor"])].reshape(desc["StackedQueryKeyValueTensor"]["Sizes"])
    args = [qkv if t.dml_name == "StackedQueryKeyValueTensor" else None for t in spec.inputs]
    candidates = [c[0] for c in expected_outputs(d["type"], desc, args)]
    ref = catalog.references()[spec.enum_name]
    kwargs = _reference_kwargs(spec, desc, ref.fn)
    attrs = Attrs(kwargs)
    magnitude = catalog.output_magnitude(ref, args, attrs)
    budget = catalog.budget(spec, attrs, dmljax.DataType.FLOAT16, half=True, sizes=qkv.shape, args=args)
    assert got.size == 128 and np.isfinite(got).all()
    compare.assert_matches(got.reshape(candidates[0].shape), candidates, dmljax.DataType.FLOAT16, ulp=budget,
                           context="dml_mha.json", magnitude=magnitude)


@needs_shared
def test_guide_examples_by_hand(tmp_path, capsys):
    """Values worked out by hand for the element-wise models (not by any code)."""
    expected = {
        "dml_element_wise_add.json": ["Resource 'Out': 6, 10, -2"],
        "dml_owned_tensors.json": ["Resource 'Out': 6, 10, -2"],
        "dml_element_wise_identity.json": ["Resource 'Out': 12, 14, 16"],
        "dml_element_wise_clip.json": ["Resource 'A': -2.5, -2.5, -2, -1, 0, 1, 2, 2.5, 2.5"],
        "dml_scalar_union_fp16.json": ["Resource 'output': 2, 2, 3, 4, 4"],
        "dml_element_wise_add1.json": ["Resource 'Out': 6, 10, -0.432332"],  # 0.5 * (e^-2 - 1)
        "dml_cumulative_product.json": ["Resource 'Out': 2, 8, 64, 192"],  # 2, 2*4, 2*4*8, 2*4*8*3
    }
    for name, lines in expected.items():
        if not all(implemented(t) for t in model_ops(MODELS / name)):
            continue
        status, out, err = run_cli(["run", MODELS / name, "--no-timing"], capsys)
        assert status == 0, err
        assert [ln for ln in out.splitlines() if ln.startswith("Resource")] == lines


@needs_shared
def test_npy_model_writes_files(tmp_path, capsys, monkeypatch):
    shutil.copytree(MODELS, tmp_path / "m", ignore=shutil.ignore_patterns("*.jpg", "other_refs"))
    model = tmp_path / "m" / "dml_element_wise_add_npy.json"
    status, out, err = run_cli(["run", model, "--out", tmp_path / "o"], capsys)
    assert status == 0, err
    assert "Resource 'Out': 2, 4, 6, 8, 10, 12" in out
    assert "Resource 'Out' written to 'dml_element_wise_add_output.npy'" in out
    got = np.load(tmp_path / "o" / "dml_element_wise_add_output.npy")
    assert got.dtype == np.float32 and got.shape == (6,)
    np.testing.assert_array_equal(got, [2, 4, 6, 8, 10, 12])
    raw = np.fromfile(tmp_path / "o" / "dml_element_wise_add_output.dat", np.float32)
    np.testing.assert_array_equal(raw, [2, 4, 6, 8, 10, 12])
    assert not (tmp_path / "m" / "dml_element_wise_add_output.npy").exists()  # nothing beside the model
    # nothing is overwritten without --force: refused before anything runs
    status, out, err = run_cli(["run", model, "--out", tmp_path / "o"], capsys)
    assert status == 1 and out == ""
    target = tmp_path / "o" / "dml_element_wise_add_output.npy"
    assert err == (f"dmljax run: error: {model}: command 2 (writeFile): targetPath 'dml_element_wise_add_output.npy': "
                   f"{str(target)!r} exists; dmljax run overwrites nothing unless --force is given (or give --out a "
                   "fresh folder)\n")
    assert run_cli(["run", model, "--out", tmp_path / "o", "--force"], capsys)[0] == 0
    # without --out: a fresh folder in the working directory, a new one each run
    monkeypatch.chdir(tmp_path)
    for folder in ("dml_element_wise_add_npy-outputs", "dml_element_wise_add_npy-outputs-2"):
        status = main(["run", str(model)])  # not run_cli, which names the model's folder
        out, err = capsys.readouterr()
        assert status == 0, err
        assert out.splitlines()[-1] == f"writeFile outputs are in {folder!r}"
        np.testing.assert_array_equal(np.load(tmp_path / folder / "dml_element_wise_add_output.npy"), [2, 4, 6, 8, 10, 12])


# --------------------------------------------------------------- writing small models
def write_model(tmp_path, resources, dispatchables, commands, name="m.json"):
    p = tmp_path / name
    p.write_text(json.dumps({"resources": resources, "dispatchables": dispatchables, "commands": commands}))
    return p


def identity(sizes, dt="FLOAT32", in_extra=None, out_extra=None, out_dt=None, **attrs):
    return {"type": "ELEMENT_WISE_IDENTITY", "desc": {
        "InputTensor": {"DataType": dt, "Sizes": sizes, **(in_extra or {})},
        "OutputTensor": {"DataType": out_dt or dt, "Sizes": sizes, **(out_extra or {})}, **attrs}}


def printed(out):
    return [ln for ln in out.splitlines() if ln.startswith("Resource")]


def run_model(tmp_path, capsys, resources, dispatchables, commands, *args):
    p = write_model(tmp_path, resources, dispatchables, commands)
    return run_cli(["run", p, "--no-timing", *args], capsys)


def test_initializers(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.array([[1, -2], [3, 4]], np.int16))
    np.array([1.5, 2.5], np.float64).tofile(tmp_path / "y.bin")
    resources = {
        "const": {"initialValuesDataType": "INT8", "initialValues": {"valueCount": 3, "value": -7}},
        "arr": {"initialValuesDataType": "FLOAT16", "initialValues": [65504, -65504, 4, "nan", "inf", "-inf", 0.1]},
        "seq": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4, "valueStart": 1, "valueDelta": 2.5}},
        "wrap": {"initialValuesDataType": "UINT8", "initialValues": {"valueCount": 4, "valueStart": 254, "valueDelta": 1}},
        "h": {"initialValuesDataType": "FLOAT16", "initialValues": {"valueCount": 3, "valueStart": 2048, "valueDelta": 1}},
        "npy": {"initialValues": {"sourcePath": "x.npy"}},
        "bin": {"initialValuesDataType": "DML_TENSOR_DATA_TYPE_FLOAT64", "initialValues": {"sourcePath": "y.bin"}},
        "padded": {"initialValuesDataType": "UINT16", "initialValues": [1, 2, 3], "sizeInBytes": 9},
        "off": {"initialValuesDataType": "UINT32", "initialValues": [7], "initialValuesOffsetInBytes": 4},
    }
    commands = [{"type": "print", "resource": r} for r in resources]
    status, out, err = run_model(tmp_path, capsys, resources, {}, commands)
    assert status == 0, err
    assert printed(out) == [
        "Resource 'const': -7, -7, -7",
        "Resource 'arr': 65504, -65504, 4, nan, inf, -inf, 0.0999756",  # 0.1 as FLOAT16
        "Resource 'seq': 1, 3.5, 6, 8.5",
        "Resource 'wrap': 254, 255, 0, 1",      # accumulated in UINT8
        "Resource 'h': 2048, 2048, 2048",       # 2048 + 1 rounds back to 2048 in FLOAT16
        "Resource 'npy': 1, -2, 3, 4",
        "Resource 'bin': 1.5, 2.5",
        "Resource 'padded': 1, 2, 3",           # 6 bytes printed; the buffer is 12
        "Resource 'off': 0, 7",
    ]
    model = Model.load(write_model(tmp_path, resources, {}, commands))
    assert model.resources["padded"].size_in_bytes == 12
    assert model.resources["seq"].size_in_bytes == 16


def test_print_verbose(tmp_path, capsys):
    resources = {"a": {"initialValuesDataType": "INT16", "initialValues": [1, -1, 300]}}
    status, out, err = run_model(tmp_path, capsys, resources, {}, [{"type": "print", "resource": "a", "verbose": True}])
    assert status == 0, err
    assert out.splitlines()[1:] == ["Resource 'a':", "[0] 1 (0x   1)", "[1] -1 (0xFFFF)", "[2] 300 (0x 12C)"]


def test_json_comments_and_trailing_commas():
    assert load_json('{"a": [1, 2,], // note\n "b": "x//y", /* c */ "c": {"d": 1,},}') == {
        "a": [1, 2], "b": "x//y", "c": {"d": 1}}


def test_strided_broadcast_and_padded_descs_equal_packed(tmp_path, capsys):
    resources = {
        "row": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3]},
        "padded": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 0, 4, 5, 6, 0]},
        "packed": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3, 4, 5, 6]},
        "o1": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 6, "value": 0}},
        "o2": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 6, "value": 0}},
        "o3": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 8, "value": -1}},
        "o4": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 6, "value": 0}},
    }
    sb = {"ScaleBias": {"Scale": 2, "Bias": 1}}
    dispatchables = {
        "bcast": identity([2, 3], in_extra={"Strides": [0, 1]}, **sb),
        "pad_in": identity([2, 3], in_extra={"Strides": [4, 1]}, **sb),
        "pad_out": identity([2, 3], out_extra={"Strides": [4, 1]}, **sb),
        "packed": identity([2, 3], **sb),
    }
    commands = [
        {"type": "dispatch", "dispatchable": "bcast", "bindings": {"InputTensor": "row", "OutputTensor": "o1"}},
        {"type": "dispatch", "dispatchable": "pad_in", "bindings": {"InputTensor": "padded", "OutputTensor": "o2"}},
        {"type": "dispatch", "dispatchable": "pad_out", "bindings": {"InputTensor": "packed", "OutputTensor": "o3"}},
        {"type": "dispatch", "dispatchable": "packed", "bindings": {"InputTensor": "packed", "OutputTensor": "o4"}},
    ] + [{"type": "print", "resource": r} for r in ("o1", "o2", "o3", "o4")]
    status, out, err = run_model(tmp_path, capsys, resources, dispatchables, commands)
    assert status == 0, err
    assert printed(out) == [
        "Resource 'o1': 3, 5, 7, 3, 5, 7",
        "Resource 'o2': 3, 5, 7, 9, 11, 13",
        "Resource 'o3': 3, 5, 7, -1, 9, 11, 13, -1",
        "Resource 'o4': 3, 5, 7, 9, 11, 13",
    ]


def test_in_place_equals_out_of_place_and_repeats_with_iterations(tmp_path, capsys):
    resources = {"a": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2]},
                 "b": {"initialValuesDataType": "FLOAT32", "initialValues": [10, 20]},
                 "c": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2]},
                 "out": {"initialValuesDataType": "FLOAT32", "initialValues": [0, 0]}}
    add = {"type": "DML_OPERATOR_ELEMENT_WISE_ADD", "Desc": {
        t: {"DataType": "FLOAT32", "Sizes": [2]} for t in ("ATensor", "BTensor", "OutputTensor")}}
    commands = [
        {"type": "dispatch", "dispatchable": "add", "bindings": {"ATensor": "a", "BTensor": "b", "OutputTensor": "a"}},
        {"type": "dispatch", "dispatchable": "add", "bindings": {"ATensor": "c", "BTensor": "b", "OutputTensor": "out"}},
        {"type": "print", "resource": "a"}, {"type": "print", "resource": "out"}]
    status, out, err = run_model(tmp_path, capsys, resources, {"add": add}, commands)
    assert status == 0, err
    assert printed(out) == ["Resource 'a': 11, 22", "Resource 'out': 11, 22"]
    # -i 3: every iteration runs, so the in-place accumulation happens three times (DxDispatch's model)
    status, out, err = run_model(tmp_path, capsys, resources, {"add": add}, commands, "-i", "3")
    assert printed(out) == ["Resource 'a': 31, 62", "Resource 'out': 11, 22"]


def test_reinterpreting_bytes(tmp_path, capsys):
    values = [1.0, -2.5, 3.25]
    resources = {"f": {"initialValuesDataType": "FLOAT32", "initialValues": values},
                 "u": {"initialValuesDataType": "UINT32", "initialValues": {"valueCount": 3, "value": 0}}}
    # The FLOAT32 bytes are bound as UINT32 and copied; the output prints as UINT32.
    dispatchables = {"copy": identity([3], dt="UINT32")}
    commands = [{"type": "dispatch", "dispatchable": "copy", "bindings": {"InputTensor": "f", "OutputTensor": "u"}},
                {"type": "print", "resource": "u"}]
    status, out, err = run_model(tmp_path, capsys, resources, dispatchables, commands)
    assert status == 0, err
    bits = np.array(values, np.float32).view(np.uint32)
    assert printed(out) == ["Resource 'u': " + ", ".join(str(int(b)) for b in bits)]


def test_binding_objects_and_execution_options(tmp_path, capsys):
    resources = {"a": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 8, "valueStart": 1, "valueDelta": 1}},
                 "out": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 8, "value": 0}}}
    d = identity([4])
    d.update({"dmlCompileType": "DmlCompileGraph",
              "executionFlags": ["DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION", "DESCRIPTORS_VOLATILE"]})
    commands = [{"type": "dispatch", "dispatchable": "id", "threadGroupCount": [1, 1, 1], "bindings": {
        "InputTensor": [{"name": "a", "elementOffset": 4, "elementCount": 4}],
        "OutputTensor": {"name": "out", "elementOffset": 2, "elementSizeInBytes": 8}}},
        {"type": "print", "resource": "out"}]
    status, out, err = run_model(tmp_path, capsys, resources, {"id": d}, commands)
    assert status == 0, err
    assert printed(out) == ["Resource 'out': 0, 0, 0, 0, 5, 6, 7, 8"]
    model = Model.load(write_model(tmp_path, resources, {"id": d}, commands))
    assert model.dispatchables["id"].compiled.allow_half_precision_computation is True


# --------------------------------------------------------------- malformed models
BASE_RES = {"A": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3]},
            "Out": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 3, "value": 0}}}


def _bad(tmp_path, resources=None, dispatchables=None, commands=None):
    p = write_model(tmp_path, resources if resources is not None else BASE_RES,
                    dispatchables if dispatchables is not None else {"id": identity([3])},
                    commands if commands is not None else [
                        {"type": "dispatch", "dispatchable": "id", "bindings": {"InputTensor": "A", "OutputTensor": "Out"}}])
    with pytest.raises(ModelError) as e:
        Model.load(p)
    return str(e.value), p


@pytest.mark.parametrize("case, fragments", [
    ("missing resource", ["command 0 (dispatch of 'id'), binding 'InputTensor'",
                          "names resource 'Nope', which the model does not define"]),
    ("buffer too small", ["command 0 (dispatch of 'id')", "OutputTensor is bound to a range of 4 bytes",
                          "it must hold TotalTensorSizeInBytes: 12 bytes"]),
    ("unknown member", ["dispatchable 'id' (ELEMENT_WISE_IDENTITY)", "Scale is not a member of ELEMENT_WISE_IDENTITY's desc"]),
    ("unimplemented operator", [f"dispatchable 'g' ({catalog.unimplemented().short_name})",
                                f"{catalog.unimplemented().enum_name} is not implemented yet in dmljax"]),
    ("wrong type", ["dispatchable 'id' (ACTIVATION_ELU)", "InputTensor (argument `input`) has DataType INT32",
                    "supported: "]),
    ("wrong value", ["resource 'A'", "initialValues has 'one', not a number"]),
    ("int out of range", ["resource 'A'", "initialValues has 300, outside UINT8's range 0 to 255"]),
    ("size too small", ["resource 'A'", "sizeInBytes is 8, smaller than the 12 bytes of its initial values"]),
    ("missing data type", ["resource 'A'", "needs initialValuesDataType"]),
    ("missing file", ["resource 'A'", "initialValues.sourcePath 'none.npy' does not exist"]),
    ("unknown dispatchable", ["command 0 (dispatch)", "names dispatchable 'other', which the model does not define"]),
    ("owned bound at dispatch", ["command 0 (dispatch of 'id')", "InputTensor is flagged OWNED_BY_DML: it is bound once"]),
    ("bad flag", ["dispatchable 'id' (ELEMENT_WISE_IDENTITY)", "has execution flag 'FAST'; valid: DML_EXECUTION_FLAG_NONE"]),
    ("bad command", ["command 1 (printf)", "is not a command type; valid: dispatch, print, writeFile, printInitTemporary, "
                                    "printExecTemporary"]),
    ("bad temporary type", ["command 1 (printExecTemporary)", "dataType: "]),
    ("misaligned offset", ["OutputTensor is bound at byte offset 4; the offset must be a multiple of 16"]),
    ("hlsl", ["dispatchable 'id'", "is an HLSL compute shader ('hlsl'); dmljax runs DirectML operator dispatchables only"]),
])
def test_malformed_model_messages(tmp_path, case, fragments, request):
    if case == "unimplemented operator":
        request.getfixturevalue("unimplemented")  # hides catalog.unimplemented() from the registry
    res, disp, cmds = dict(BASE_RES), {"id": identity([3])}, None
    dispatch = {"type": "dispatch", "dispatchable": "id", "bindings": {"InputTensor": "A", "OutputTensor": "Out"}}
    if case == "missing resource":
        cmds = [{**dispatch, "bindings": {"InputTensor": "Nope", "OutputTensor": "Out"}}]
    elif case == "buffer too small":
        res["Out"] = {"initialValuesDataType": "FLOAT32", "initialValues": [0]}
    elif case == "unknown member":
        disp = {"id": identity([3], Scale=2)}
    elif case == "unimplemented operator":
        disp = {"id": identity([3]), "g": {"type": catalog.unimplemented().short_name, "desc": {}}}
    elif case == "wrong type":
        disp = {"id": {"type": "ACTIVATION_ELU", "desc": {"InputTensor": {"DataType": "INT32", "Sizes": [3]},
                                                          "OutputTensor": {"DataType": "INT32", "Sizes": [3]},
                                                          "Alpha": 1.0}}}
    elif case == "wrong value":
        res["A"] = {"initialValuesDataType": "FLOAT32", "initialValues": [1, "one", 3]}
    elif case == "int out of range":
        res["A"] = {"initialValuesDataType": "UINT8", "initialValues": [1, 300]}
    elif case == "size too small":
        res["A"] = {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2, 3], "sizeInBytes": 8}
    elif case == "missing data type":
        res["A"] = {"initialValues": [1, 2, 3]}
    elif case == "missing file":
        res["A"] = {"initialValues": {"sourcePath": "none.npy"}}
    elif case == "unknown dispatchable":
        cmds = [{**dispatch, "dispatchable": "other"}]
    elif case == "owned bound at dispatch":
        disp = {"id": identity([3], in_extra={"Flags": "OWNED_BY_DML"})}
        disp["id"]["bindings"] = {"InputTensor": "A"}
    elif case == "bad flag":
        disp = {"id": {**identity([3]), "executionFlags": "FAST"}}
    elif case == "bad command":
        cmds = [dispatch, {"type": "printf", "resource": "A"}]
    elif case == "bad temporary type":
        cmds = [dispatch, {"type": "printExecTemporary", "dataType": "FLOAT128", "offset": 0}]
    elif case == "misaligned offset":
        res["Out"] = {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 8, "value": 0}}
        cmds = [{**dispatch, "bindings": {"InputTensor": "A", "OutputTensor": {"name": "Out", "elementOffset": 1}}}]
    elif case == "hlsl":
        disp = {"id": {"type": "hlsl", "sourcePath": "x.hlsl"}}
    message, path = _bad(tmp_path, res, disp, cmds)
    assert message.startswith(f"{path}: ")
    for f in fragments:
        assert f in message, message


def test_unimplemented_operator_stops_before_anything_runs(tmp_path, capsys, unimplemented):
    missing = unimplemented[0].enum_name
    p = write_model(tmp_path, BASE_RES, {"id": identity([3]), "r": {"type": missing, "desc": {}}},
                    [{"type": "print", "resource": "A"}])
    status, out, err = run_cli(["run", p], capsys)
    assert status == 1 and out == ""
    assert err.count("not implemented yet") == 1 and f"dispatchable 'r' ({missing})" in err


# --------------------------------------------------------------- files, structure and memory
def load_error(path) -> str:
    with pytest.raises(ModelError) as e:
        Model.load(path)
    return str(e.value)


def test_model_files_that_cannot_be_read(tmp_path):
    (tmp_path / "bin.json").write_bytes(b"\x00\x01\xff" * 10)
    (tmp_path / "latin1.json").write_bytes('{"resources": {"caf\xe9": 1}}'.encode("latin-1"))
    (tmp_path / "deep.json").write_text("[" * 1000 + "]" * 1000)
    (tmp_path / "digits.json").write_text('{"resources": {"a": {"initialValues": [' + "9" * 5000 + "]}}}")
    (tmp_path / "dir.json").mkdir()
    assert load_error(tmp_path / "bin.json").endswith("bin.json: file: is not UTF-8 text (byte 0xFF at offset 2); "
                                                      "it looks like a binary file")
    assert load_error(tmp_path / "latin1.json").endswith("latin1.json: file: is not UTF-8 text (byte 0xE9 at offset 19)")
    assert "file: is not valid JSON: arrays and objects nested more than 64 deep: line 1 column 65" in load_error(
        tmp_path / "deep.json")
    assert "file: has an integer of more than 4300 digits" in load_error(tmp_path / "digits.json")
    assert load_error(tmp_path / "dir.json").endswith("dir.json: file: is a directory; expected a model's .json file")
    assert "missing.json: file: cannot be read (No such file or directory)" in load_error(tmp_path / "missing.json")


def test_byte_order_mark_is_accepted(tmp_path):
    p = tmp_path / "m.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"resources": BASE_RES, "dispatchables": {}, "commands": []}).encode())
    assert set(Model.load(p).resources) == {"A", "Out"}


def test_structural_errors_name_their_json_path(tmp_path):
    dispatch = {"type": "dispatch", "dispatchable": "id", "bindings": {"InputTensor": "A", "OutputTensor": "Out"}}
    message, _ = _bad(tmp_path, commands=[dispatch, dispatch, {**dispatch, "bindings": {"InputTensor": 5}}])
    assert message.endswith(": commands[2].bindings.InputTensor: expected a resource name, a binding object or a "
                            "list of them, got 5")
    message, path = _bad(tmp_path, resources={"A": {"initialValues": None, "sizeInBytes": -4}},
                         commands=[{"type": "print", "resource": ["A"], "verbose": 1}, 7])
    assert message == "\n".join([
        f"{path}: 5 problems in the model's structure:",
        "  resources.A.initialValues: expected an array of values, an initializer object or a list initializer, got null",
        "  resources.A.sizeInBytes: is -4; expected an integer from 0 to 2^64 - 1",
        "  commands[0].resource: expected a name (a non-empty string), got [\"A\"]",
        "  commands[0].verbose: expected true or false, got 1",
        "  commands[1]: expected an object with type, got 7"])
    message, _ = _bad(tmp_path, resources={"A": {"initialValues": [1], "initialValuesDataType": "FLOAT32", "size": 4}})
    assert message.endswith(": resources.A: has unknown member \"size\"; members: type, initialValues, "
                            "initialValuesDataType, sizeInBytes, initialValuesOffsetInBytes, resampleSize, resampleMode")
    message, _ = _bad(tmp_path, dispatchables={"id": {"type": "ELEMENT_WISE_IDENTITY", "bindings": []}})
    assert "dispatchables.id.bindings: expected an object (bind point -> resource), got []" in message
    assert "dispatchables.id: has no desc (or Desc)" in message


def test_memory_is_checked_before_anything_is_allocated(tmp_path, capsys):
    for spec, size in (({"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 2**40, "value": 0}}, 2**42),
                       ({"initialValuesDataType": "FLOAT32", "initialValues": [1], "sizeInBytes": 2**40}, 2**40)):
        p = write_model(tmp_path, {"big": spec}, {}, [{"type": "print", "resource": "big"}])
        status, out, err = run_cli(["run", p], capsys)  # this machine's memory, whatever its device
        assert status == 1 and out == "" and f"{p}: memory: the model needs " in err, err
        with mock.patch.object(dxdispatch, "_memory_available", return_value=(64 << 30, None)):  # a CPU device
            status, out, err = run_cli(["run", p], capsys)
        assert status == 1 and out == ""
        # the buffer, and as much again while it is filled on the host before it moves to the device
        assert err == (f"dmljax run: error: {p}: memory: the model needs {2 * size} bytes ({2 * size / 2**40:.1f} TiB) "
                       f"of memory: {size} for its 1 buffer and {size} more to fill and run them; 68719476736 bytes "
                       "(64.0 GiB) are available (MemAvailable)\n")
    host, device = dxdispatch._memory_available()
    assert host > 0 and (device is None or device > 0)
    # What running takes counts too: 2 buffers of 1 MiB fit in 3 MiB, but the dispatch's output
    # buffer and its intermediate tensors do not.
    n = 1 << 18
    resources = {"A": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": n, "value": 1}},
                 "Out": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": n, "value": 0}}}
    commands = [{"type": "dispatch", "dispatchable": "id", "bindings": {"InputTensor": "A", "OutputTensor": "Out"}}]
    p = write_model(tmp_path, resources, {"id": identity([n])}, commands)
    with mock.patch.object(dxdispatch, "_memory_available", return_value=(3 << 20, None)):
        message = load_error(p)
    assert message == (f"{p}: memory: the model needs 5242880 bytes (5.0 MiB) of memory: 2097152 for its 2 buffers "
                       "and 3145728 more to fill and run them; 3145728 bytes (3.0 MiB) are available (MemAvailable)")
    with mock.patch.object(dxdispatch, "_memory_available", return_value=(8 << 20, 3 << 20)):  # an accelerator
        message = load_error(p)
    assert "the model needs 5242880 bytes (5.0 MiB) of device memory: 2097152 for its 2 buffers" in message
    assert message.endswith(f"3145728 bytes (3.0 MiB) are available (on {jax.devices()[0].device_kind})")
    with mock.patch.object(dxdispatch, "_memory_available", return_value=(6 << 20, None)):
        assert Model.load(p).resources["Out"].size_in_bytes == 4 * n


def test_source_files_that_are_not_data(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "empty.npy").write_bytes(b"")
    (tmp_path / "text.npy").write_text("not a npy file")
    (tmp_path / "corrupt.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': 5}    \n")
    np.save(tmp_path / "object.npy", np.array([1, "a"], object), allow_pickle=True)
    np.save(tmp_path / "short.npy", np.zeros(4, np.float32))
    (tmp_path / "short.npy").write_bytes((tmp_path / "short.npy").read_bytes()[:-4])
    np.save(tmp_path / "none.npy", np.zeros(0, np.float32))
    os.mkfifo(tmp_path / "fifo.dat")
    cases = {
        "folder": "initialValues.sourcePath 'folder' is a directory; expected a file",
        "fifo.dat": "initialValues.sourcePath 'fifo.dat' is a FIFO; expected a file",
        "/dev/zero": "initialValues.sourcePath '/dev/zero' is a character device; expected a file",
        "empty.npy": "initialValues.sourcePath 'empty.npy' is an empty file",
        "text.npy": "initialValues.sourcePath 'text.npy' is not a readable .npy file (",
        "corrupt.npy": "initialValues.sourcePath 'corrupt.npy' is not a readable .npy file (",
        "object.npy": "initialValues.sourcePath 'object.npy' holds object, which is not a DirectML data type",
        "short.npy": "initialValues.sourcePath 'short.npy' is truncated: its header (float32, shape (4,)) needs 16 "
                     "bytes of data, the file has 12",
        "none.npy": "initialValues.sourcePath 'none.npy' holds an empty array (shape (0,))",
        "a\0b": "initialValues.sourcePath 'a\\x00b' has a NUL character",
    }
    for source, fragment in cases.items():
        message, _ = _bad(tmp_path, resources={**BASE_RES, "A": {"initialValuesDataType": "FLOAT32",
                                                                  "initialValues": {"sourcePath": source}}})
        assert ": resource 'A': " + fragment in message, message


def test_npy_byte_order_and_fortran_order(tmp_path, capsys):
    np.save(tmp_path / "big.npy", np.array([1.5, -2, 3], ">f4"))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3)))
    resources = {"big": {"initialValues": {"sourcePath": "big.npy"}},
                 "fortran": {"initialValues": {"sourcePath": "fortran.npy"}}}
    status, out, err = run_model(tmp_path, capsys, resources, {}, [{"type": "print", "resource": r} for r in resources])
    assert status == 0, err
    assert printed(out) == ["Resource 'big': 1.5, -2, 3", "Resource 'fortran': 0, 1, 2, 3, 4, 5"]


def test_write_file_into_a_missing_folder_is_refused_before_anything_runs(tmp_path, capsys):
    target = str(tmp_path / "nope" / "a.dat")  # an absolute path: --out creates only folders inside it
    p = write_model(tmp_path, BASE_RES, {}, [{"type": "print", "resource": "A"},
                                            {"type": "writeFile", "resource": "A", "targetPath": target}])
    status, out, err = run_cli(["run", p], capsys)
    assert status == 1 and out == ""
    assert err == (f"dmljax run: error: {p}: command 1 (writeFile): targetPath {target!r}: the folder "
                   f"'{tmp_path / 'nope'}' does not exist (dmljax creates files, not folders)\n")
    assert not (tmp_path / "nope").exists()
    (tmp_path / "dir.npy").mkdir()
    message, _ = _bad(tmp_path, commands=[{"type": "writeFile", "resource": "A", "targetPath": "dir.npy"}])
    assert "command 0 (writeFile): targetPath 'dir.npy' is a directory; expected a file" in message


def test_write_file_keeps_the_name_given(tmp_path, capsys):
    p = write_model(tmp_path, BASE_RES, {}, [{"type": "writeFile", "resource": "A", "targetPath": "A.NPY"}])
    status, out, err = run_cli(["run", p], capsys)
    assert status == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "A.NPY"), [1, 2, 3])


def test_sizes_and_offsets_that_overflow(tmp_path):
    dispatch = {"type": "dispatch", "dispatchable": "id",
                "bindings": {"InputTensor": {"name": "A", "elementOffset": 2**40}, "OutputTensor": "Out"}}
    message, _ = _bad(tmp_path, commands=[dispatch])
    assert message.endswith("command 0 (dispatch of 'id'), binding 'InputTensor': elementOffset 1099511627776 "
                            "(4398046511104 bytes) is past the end of resource 'A' (12 bytes)")
    dispatch["bindings"]["InputTensor"]["elementOffset"] = 2**70
    message, _ = _bad(tmp_path, commands=[dispatch])
    assert message.endswith("commands[0].bindings.InputTensor.elementOffset: is 1180591620717411303424; expected "
                            "an integer from 0 to 2^64 - 1")
    message, _ = _bad(tmp_path, commands=[{"type": "writeFile", "resource": "A", "targetPath": "a.npy",
                                           "dimensions": [2**64 - 1, 2**64 - 1]}])
    assert "command 0 (writeFile): dimensions [18446744073709551615, 18446744073709551615] need " in message
    message, _ = _bad(tmp_path, resources={**BASE_RES, "A": {"initialValuesDataType": "FLOAT32",
                                                             "initialValues": [1, 10**400]}})
    assert "resource 'A'" not in message  # a float beyond the double range is infinite, as 1e999 is


def test_print_streams_large_resources(tmp_path, capsys, monkeypatch):
    resources = {"s": {"initialValuesDataType": "INT32", "initialValues": {"valueCount": 10, "valueStart": 0, "valueDelta": 1}}}
    monkeypatch.setattr(dxdispatch, "_PRINT_CHUNK", 3)
    commands = [{"type": "print", "resource": "s"}, {"type": "print", "resource": "s", "verbose": True}]
    status, out, err = run_model(tmp_path, capsys, resources, {}, commands)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[1] == "Resource 's': 0, 1, 2, 3, 4, 5, 6, 7, 8, 9"
    assert lines[3:] == [f"[{i}] {i} (0x{i:>8X})" for i in range(10)]


def test_run_leaves_the_final_bytes_in_the_resources(tmp_path):
    p = write_model(tmp_path, BASE_RES, {"id": identity([3], ScaleBias={"Scale": 2, "Bias": 0})}, [
        {"type": "dispatch", "dispatchable": "id", "bindings": {"InputTensor": "A", "OutputTensor": "Out"}}])
    model = Model.load(p)
    model.run(io.StringIO())
    np.testing.assert_array_equal(np.asarray(model.resources["Out"].data).view(np.float32), [2, 4, 6])
    with pytest.raises(ValueError, match="iterations"):
        model.run(io.StringIO(), iterations=0)


def test_json_errors_keep_their_lines_and_unterminated_strings_stay_linear():
    with pytest.raises(json.JSONDecodeError, match="line 3 column 11"):
        load_json('{\n/* a\nb */ "x": }')
    with pytest.raises(json.JSONDecodeError, match="Unterminated string starting at: line 1 column 7"):
        load_json('{"a": "' + 'x\\"' * 200_000)  # one scan, not one per escaped quote
    assert load_json('{"a": "b\\"c//d", // x\n "e": [1, 2,], /* y */ "f": "/*",}') == {
        "a": 'b"c//d', "e": [1, 2], "f": "/*"}


# --------------------------------------------------------------- 4-bit resources, two elements a byte
def test_four_bit_initializers_print_and_write(tmp_path, capsys):
    import jax.numpy as jnp

    np.save(tmp_path / "i8.npy", np.array([[-8, 7, -1], [0, 3, -2]], np.int8))  # values, one a byte
    np.save(tmp_path / "v1.npy", np.array([1, 15, 0, 9, 4], jnp.uint4))  # np.save of ml_dtypes: |V1 codes
    np.array([0x21, 0x43, 0x05], np.uint8).tofile(tmp_path / "raw.dat")  # the page's packed bytes
    resources = {
        "arr": {"initialValuesDataType": "UINT4", "initialValues": [1, 2, 3, 4, 5]},
        "const": {"initialValuesDataType": "INT4", "initialValues": {"valueCount": 3, "value": -3}},
        "seq": {"initialValuesDataType": "UINT4", "initialValues": {"valueCount": 5, "valueStart": 13, "valueDelta": 1}},
        "sseq": {"initialValuesDataType": "INT4", "initialValues": {"valueCount": 4, "valueStart": 6, "valueDelta": 1}},
        "i8": {"initialValuesDataType": "INT4", "initialValues": {"sourcePath": "i8.npy"}},
        "v1": {"initialValuesDataType": "UINT4", "initialValues": {"sourcePath": "v1.npy"}},
        "raw": {"initialValuesDataType": "UINT4", "initialValues": {"sourcePath": "raw.dat"}},
    }
    commands = [{"type": "print", "resource": r} for r in resources]
    commands += [{"type": "writeFile", "resource": "arr", "targetPath": "arr.dat"},
                 {"type": "writeFile", "resource": "arr", "targetPath": "arr.npy", "dimensions": [5]},
                 {"type": "writeFile", "resource": "i8", "targetPath": "i8_out.npy", "dimensions": [2, 3]},
                 {"type": "print", "resource": "arr", "verbose": True}]
    status, out, err = run_model(tmp_path, capsys, resources, {}, commands)
    assert status == 0, err
    assert printed(out)[:7] == [
        "Resource 'arr': 1, 2, 3, 4, 5",  # the elements written: not the tail nibble
        "Resource 'const': -3, -3, -3",
        "Resource 'seq': 13, 14, 15, 0, 1",  # accumulated in UINT4: wraps around
        "Resource 'sseq': 6, 7, -8, -7",
        "Resource 'i8': -8, 7, -1, 0, 3, -2",
        "Resource 'v1': 1, 15, 0, 9, 4",
        "Resource 'raw': 1, 2, 3, 4, 5, 0",  # a raw file's bytes: two elements each
    ]
    assert out.splitlines()[-6:] == ["Resource 'arr':", "[0] 1 (0x1)", "[1] 2 (0x2)", "[2] 3 (0x3)", "[3] 4 (0x4)",
                                     "[4] 5 (0x5)"]
    assert (tmp_path / "arr.dat").read_bytes() == bytes([0x21, 0x43, 0x05, 0x00])  # the packed buffer
    got = np.load(tmp_path / "arr.npy")
    assert got.dtype == np.uint8 and got.tolist() == [1, 2, 3, 4, 5]  # widened, one element a byte
    got = np.load(tmp_path / "i8_out.npy")
    assert got.dtype == np.int8 and got.tolist() == [[-8, 7, -1], [0, 3, -2]]
    model = Model.load(write_model(tmp_path, resources, {}, []))
    assert [model.resources[r].initialized_bytes for r in ("arr", "const", "seq", "i8", "v1", "raw")] == [3, 2, 3, 3, 3, 3]
    assert np.asarray(model.resources["arr"].data).tolist() == [0x21, 0x43, 0x05, 0x00]
    assert np.asarray(model.resources["i8"].data).tolist() == [0x78, 0x0F, 0xE3, 0x00]


def test_four_bit_operator_through_a_model(tmp_path, capsys):
    # DEQUANTIZE of a UINT4 tensor bound at elementOffset 32 (byte 16), its output quantized back to INT4
    resources = {
        "q": {"initialValuesDataType": "UINT4", "initialValues": [15] * 32 + [1, 2, 3, 4, 5, 0]},
        "s": {"initialValuesDataType": "FLOAT32", "initialValues": [0.5]},
        "z": {"initialValuesDataType": "UINT4", "initialValues": [3]},
        "f": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 5, "value": 0}},
        "o": {"initialValuesDataType": "INT4", "initialValues": {"valueCount": 5, "value": 0}},
    }
    dispatchables = {
        "deq": {"type": "DEQUANTIZE", "desc": {
            "InputTensor": {"DataType": "UINT4", "Sizes": [5]}, "QuantizationType": "SCALE_ZERO_POINT",
            "QuantizationTensors": [{"DataType": "FLOAT32", "Sizes": [1]}, {"DataType": "UINT4", "Sizes": [1]}],
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [5]}}},
        "q": {"type": "DML_OPERATOR_QUANTIZE", "desc": {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [5]}, "QuantizationType": "SCALE",
            "QuantizationTensorCount": 1, "QuantizationTensors": [{"DataType": "FLOAT32", "Sizes": [1]}],
            "OutputTensor": {"DataType": "INT4", "Sizes": [5]}}},
    }
    commands = [
        {"type": "dispatch", "dispatchable": "deq",
         "bindings": {"InputTensor": {"name": "q", "elementOffset": 32}, "QuantizationTensors": ["s", "z"],
                      "OutputTensor": "f"}},
        {"type": "dispatch", "dispatchable": "q",
         "bindings": {"InputTensor": "f", "QuantizationTensors": ["s"], "OutputTensor": "o"}},
        {"type": "print", "resource": "f"}, {"type": "print", "resource": "o"}]
    status, out, err = run_model(tmp_path, capsys, resources, dispatchables, commands)
    assert status == 0, err
    assert printed(out) == ["Resource 'f': -1, -0.5, 0, 0.5, 1", "Resource 'o': -2, -1, 0, 1, 2"]
    commands[0]["bindings"]["InputTensor"]["elementOffset"] = 33
    status, out, err = run_model(tmp_path, capsys, resources, dispatchables, commands)
    assert status == 1
    assert "elementOffset 33 of UINT4 resource 'q' falls inside a byte (two elements a byte)" in err


@pytest.mark.parametrize("resource, file, fragment", [
    ({"initialValuesDataType": "INT4", "initialValues": [8]}, None, "initialValues has 8, outside INT4's range -8 to 7"),
    ({"initialValuesDataType": "UINT4", "initialValues": [-1]}, None, "outside UINT4's range 0 to 15"),
    ({"initialValuesDataType": "UNKNOWN", "initialValues": [{"type": "INT4", "value": 1}]}, None,
     "initialValues[0].type is INT4: a list initializer packs whole bytes"),
    ({"initialValues": {"sourcePath": "v.npy"}}, "v1", "holds 1-byte void elements (|V1), which is what np.save writes"),
    ({"initialValuesDataType": "INT4", "initialValues": {"sourcePath": "v.npy"}}, "big",
     "element 1 is 9, outside INT4's range -8 to 7"),
    ({"initialValuesDataType": "UINT4", "initialValues": {"sourcePath": "v.npy"}}, "float",
     "holds float32; a UINT4 resource's .npy file holds integers"),
    ({"initialValuesDataType": "UINT4", "initialValues": {"sourcePath": "v.npy"}}, "bytes",
     "element 0 is the byte 0x21, not a 4-bit value's code"),
])
def test_four_bit_resources_refused(tmp_path, capsys, resource, file, fragment):
    import jax.numpy as jnp

    arrays = {"v1": np.array([1, 2], jnp.uint4), "big": np.array([1, 9], np.int16),
              "float": np.array([1.0], np.float32), "bytes": np.array([0x21], np.uint8).view("V1")}
    if file is not None:
        np.save(tmp_path / "v.npy", arrays[file])
    status, out, err = run_model(tmp_path, capsys, {"r": resource}, {}, [{"type": "print", "resource": "r"}])
    assert status == 1 and fragment in err, err
