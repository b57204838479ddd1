"""Result files as a vendor's DirectML would write them: dmljax's own outputs with a controlled
fault injected (denormals flushed, a few ULP off, two roundings, a wrong operand, NaN)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from dmljax._src.compare.onnx import ort_file_name
from dmljax._src.dxdispatch.model import Model
from dmljax._src.onnx import loader

UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def write_model(folder: Path, name: str, resources: dict, dispatchables: dict, commands: list) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"resources": resources, "dispatchables": dispatchables, "commands": commands}))
    return path


def run_model(model: Path, out: Path) -> Path:
    """dmljax's own result files of a DxDispatch model, in ``out``."""
    Model.load(model, out_dir=out, overwrite=False).run(io.StringIO(), timing=False)
    return out


def ulp_step(values: np.ndarray, steps: int) -> np.ndarray:
    """Each value moved ``steps`` representable values away from zero (same sign)."""
    u = values.view(UNSIGNED[values.dtype.itemsize])
    return (u + u.dtype.type(steps)).view(values.dtype)


def edit_npy(path: Path, edit) -> None:
    a = np.load(path)
    a = edit(a.copy())
    np.save(path, a)


def onnx_dump(model_path: Path, inputs: dict, folder: Path, kind: str = "tensorproto", edit: dict | None = None) -> Path:
    """Every value of an ONNX model as dmljax computes it node by node, written as ONNX Runtime's
    node dump writes it (``kind="tensorproto"``: one file per value, named by ort_file_name) or as
    one .npz; ``edit`` maps a value name to a function of (value, values so far) that replaces it
    as a faulty runtime would, its consumers then computed from the faulty value."""
    model = loader.load(model_path)
    values = {k: np.asarray(v) for k, v in inputs.items()}
    for i, n in enumerate(model.nodes):
        outs = model.evaluate_node(i, {k: values[k] for k in n.inputs if k in values})
        for o, v in outs.items():
            values[o] = np.asarray(v)
            if edit and o in edit:
                values[o] = edit[o](values[o], values)
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "npz":
        np.savez(folder / "reference.npz", **values)
    else:
        for name, v in values.items():
            t = loader.numpy_helper.from_array(v, name)
            (folder / ort_file_name(name)).write_bytes(t.SerializeToString())
    return folder
