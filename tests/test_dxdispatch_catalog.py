"""Every registered operator runs from a DxDispatch model (`dmljax run`) and gives the very bits
its function gives.

For each operator, one generated case (tests/catalog.py: its newest support table, a 32-bit or
narrower type, the reference's first attribute set) becomes a model file: the inputs are .npy
resources, the attributes are written with DirectML's member names and JSON spellings (a
ScaleBias as ``{"Scale", "Bias"}``, an enum by its DML_* name, a fused activation as ``{"Type",
"Desc"}``, a caller-chosen output type as the output desc's DataType), and every output is written
back to a .npy file by the model's own ``writeFile`` command. The expected bits are the operator's
function on the same arrays: this checks the DxDispatch path (schema, desc parsing, bindings,
files), while the values themselves are checked against the float64 references elsewhere.

An operator whose tables list UINT4 or INT4 also runs a case with UINT4 (else INT4) as its main
tensor's or its chosen output's type: 4-bit inputs are .npy files of ml_dtypes' int4/uint4 arrays
(one element a byte, np.save's ``|V1``) read with their initialValuesDataType, packed two a byte
into their buffers; 4-bit outputs are written back widened to INT8/UINT8."""

from __future__ import annotations

import enum
import json
import math

import jax
import numpy as np
import pytest

import dmljax
from dmljax._src.cli import main
from dmljax._src.dtypes import DataType
from dmljax._src.fused import FusedActivation
from dmljax._src.spec import REQUIRED
from dmljax._src.structs import ScaleBias
from tests import catalog, tiers

OPS = sorted(dmljax.registry())
FOUR_BIT = (DataType.UINT4, DataType.INT4)


def _json_value(value):
    """A Python attribute value in the JSON spelling a DxDispatch desc uses."""
    if isinstance(value, FusedActivation):
        return {"Type": value.type, "Desc": {k: _json_value(v) for k, v in dict(value.attrs).items()}}
    if isinstance(value, ScaleBias):
        return {"Scale": float(value.scale), "Bias": float(value.bias)}
    if isinstance(value, enum.Enum):
        return value.name if isinstance(value, DataType) else getattr(value, "dml_name", value.name)
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_json_value(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _finite(value) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def _cases(name):
    """The generated cases of ``name`` at its newest level in types JAX holds without x64."""
    ref = catalog.references()[name]
    cases = [c for c in catalog.all_positive_cases(name, ref) if not c.data_type.needs_x64
             and (c.out_type is None or not c.out_type.needs_x64)]
    newest = max(c.level for c in cases)
    return ref, [c for c in cases if c.level == newest]


def _case(name):
    """The first generated case of ``name`` at its newest level in a type JAX holds without x64."""
    ref, cases = _cases(name)
    return ref, cases[0]


def _four_bit_case(name):
    """The first case whose main type or chosen output type is UINT4, else INT4 (None if none)."""
    ref, cases = _cases(name)
    for dt in FOUR_BIT:
        case = next((c for c in cases if dt in (c.data_type, c.out_type)), None)
        if case is not None:
            return ref, case
    return None


FOUR_BIT_OPS = [n for n in OPS if _four_bit_case(n) is not None]


# A twelfth of the operators in the fast tier (each model is written, parsed, run and read back:
# 81 s of CPU for all 161), every one in the slow tier.
@pytest.mark.parametrize("name", tiers.fast_sample(OPS, keep=len(OPS) // 12, key="dxdispatch"),
                         ids=lambda n: n.removeprefix("DML_OPERATOR_"))
def test_every_operator_runs_from_a_dxdispatch_model(name, tmp_path, capsys):
    op = dmljax.get_operator(name)
    spec = op.spec
    ref, case = _case(name)
    types = catalog.tensor_types(spec, case.level, case.data_type, case.out_type)
    with jax.enable_x64(catalog.needs_x64(types)):  # 64-bit indices (GATHER's INT64): the mode on
        _run_model(name, op, spec, ref, case, types, tmp_path, capsys)


@pytest.mark.parametrize("name", FOUR_BIT_OPS, ids=lambda n: n.removeprefix("DML_OPERATOR_"))
def test_four_bit_operators_run_from_a_dxdispatch_model(name, tmp_path, capsys):
    op = dmljax.get_operator(name)
    ref, case = _four_bit_case(name)
    types = catalog.tensor_types(op.spec, case.level, case.data_type, case.out_type)
    _run_model(name, op, op.spec, ref, case, types, tmp_path, capsys)


def _run_model(name, op, spec, ref, case, types, tmp_path, capsys):
    shape = ref.case_shape(catalog.shape_of(case.ndim))
    attrs = ref.attr_sets(case.data_type, shape)[case.attrs]
    kwargs = {**attrs.dml, **catalog.output_kwargs(spec, case)}
    rng = np.random.default_rng(7)
    arrays = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
    expected = op(*arrays, **kwargs)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)

    desc, resources, commands = {}, {}, []
    bindings = {}
    for t, a in zip(spec.inputs, arrays):
        if a is None:  # an optional tensor the case leaves out (Reference.null_inputs): left out of the desc
            continue
        items = list(a) if t.array else [a]  # a tensor array: one resource, desc and binding each
        names = [f"{t.dml_name}{i}" for i in range(len(items))] if t.array else [t.dml_name]
        descs = []
        for n, item in zip(names, items):
            np.save(tmp_path / f"{n}.npy", np.asarray(item))
            dt = DataType.from_dtype(np.asarray(item).dtype)  # a tensor array's items may differ
            resources[n] = {"initialValues": {"sourcePath": f"{n}.npy"}}
            if dt in FOUR_BIT:  # np.save writes them as 1-byte void elements: the type says what they are
                resources[n]["initialValuesDataType"] = dt.name
            descs.append({"DataType": dt.name, "Sizes": list(np.shape(item))})
        desc[t.dml_name] = descs if t.array else descs[0]
        bindings[t.dml_name] = names if t.array else names[0]
        if t.array:
            desc[t.count] = len(items)
    outs = []  # (field, resource name, value)
    for t in spec.outputs:
        if t.array:  # SPLIT: the function returned a tuple of its elements
            outs += [(t, f"{t.dml_name}{i}", y) for i, y in enumerate(expected)]
        else:
            outs.append((t, t.dml_name, expected[len(outs)]))
    for t in spec.outputs:
        mine = [(n, y) for f, n, y in outs if f is t]
        descs = []
        for n, y in mine:
            dt = DataType.from_dtype(np.asarray(y).dtype)
            descs.append({"DataType": dt.name, "Sizes": list(np.shape(y))})
            resources[n] = {"initialValuesDataType": dt.name,
                            "initialValues": {"valueCount": int(np.size(y)), "value": 0}}
            commands.append({"type": "writeFile", "targetPath": f"out_{n}.npy", "resource": n,
                             "dimensions": list(np.shape(y))})
        desc[t.dml_name] = descs if t.array else descs[0]
        bindings[t.dml_name] = [n for n, _ in mine] if t.array else mine[0][0]
        if t.array:
            desc[t.count] = len(mine)
    for p in spec.params:  # every member a desc has, the function's defaults written out
        value = kwargs.get(p.arg, p.default)
        if value is None and p.type == "DML_TENSOR_DATA_TYPE":  # CLIP1's MinMaxDataType: the tensor's
            value = types[p.converted_to]
        if value is not REQUIRED and value is not None:
            desc[p.dml_name] = _json_value(value)
    if not _finite(desc):
        pytest.skip("this attribute set holds a non-finite FLOAT, which JSON cannot write")
    flags = ["DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION"] if kwargs.get(
        "allow_half_precision_computation") else []
    model = {"resources": resources,
             "dispatchables": {"op": {"type": name, "desc": desc, "executionFlags": flags}},
             "commands": [{"type": "dispatch", "dispatchable": "op", "bindings": bindings}] + commands}
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))
    status = main(["run", str(path), "--no-timing", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 0, err
    for _, n, y in outs:
        got = np.load(tmp_path / f"out_{n}.npy")
        want = np.asarray(y)
        if DataType.from_dtype(want.dtype) in FOUR_BIT:  # written back widened, one element a byte
            want = want.astype(np.int8 if want.dtype == DataType.INT4.dtype else np.uint8)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), f"{n}: the model's bits differ from the function's"
