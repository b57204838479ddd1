"""``dmljax compare MODEL.json RESULTS_DIR``: the files a DxDispatch model's ``writeFile``
commands wrote on a Windows machine, against the same model run in dmljax.

Every result file is checked (present, of the resource's data type, shape and length) before
the model runs. The model then runs once, recording, for each ``writeFile``, the dispatch that
last wrote its resource and that dispatch's inputs; the file is compared with dmljax's bytes
for the same command, within the budget of that dispatch's operator
(``OpSpec.budget(data_type, sizes, attrs, half)``, times ``budget_scale``).
"""

from __future__ import annotations

import io
import math
import os
import re
import tempfile
import warnings
from pathlib import Path, PurePosixPath

import jax
import numpy as np

from dmljax._src.compare.distance import compare
from dmljax._src.compare.exact import BIT_EXACT, NARROW_FLOATS, computes, describe, float64_outputs
from dmljax._src.compare.errors import CompareError
from dmljax._src.compare.report import Entry, Report
from dmljax._src.dtypes import DataType
from dmljax._src.dxdispatch import images
from dmljax._src.buffers import BufferBinding
from dmljax._src.dxdispatch.model import Model, ModelError, load_json, unpack4
from dmljax._src.op import record_calls
from dmljax._src.tensor_desc import packed_strides

__all__ = ["compare_dxdispatch", "RESULT_SUFFIXES"]

RESULT_SUFFIXES = (".npy", ".dat", ".bin")
"""What a results folder's files may be: DxDispatch writes .npy with a header, anything else raw."""


def _relative(target: str) -> str:
    """A writeFile targetPath as a path inside the results folder: Windows separators read as
    folders, a drive or root dropped (DxDispatch wrote it somewhere on that machine; the user
    copies the file into the folder)."""
    text = target.replace("\\", "/")
    text = re.sub(r"^[A-Za-z]:", "", text).lstrip("/")
    parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
    if not parts or ".." in parts:
        return PurePosixPath(target.replace("\\", "/")).name or "output"
    return "/".join(parts)


class _Recording(Model):
    """A model run that remembers, for each writeFile command, which dispatch last wrote its
    resource, that dispatch's input elements and the bytes of every resource it bound (host
    copies, taken before it ran), and which commands modified each resource."""

    def _start_recording(self):
        self.last_writer: dict[str, tuple] = {}
        self.writer_of: dict[int, tuple | None] = {}
        self.before: dict[int, dict[str, np.ndarray]] = {}  # dispatch command -> resource -> bytes
        self.modified: dict[str, list[int]] = {}  # resource -> the dispatch commands that wrote it

    def _dispatch(self, cmd, state, *args):
        d = self.dispatchables[cmd.fields["dispatchable"]]
        outputs = {t.dml_name for t in d.compiled.spec.outputs}
        bindings = cmd.fields["bindings"]
        inputs = {}
        for point, (rname, _) in bindings.items():
            if point.split("[")[0] in outputs or self.resources[rname].data_type is None:
                continue
            res = self.resources[rname]
            inputs[f"{point} ({rname})"] = np.array(self._elements(rname, state, res.size_in_bytes))
        self.before[cmd.index] = {r: np.array(jax.device_get(state[r])) for r, _ in bindings.values()}
        super()._dispatch(cmd, state, *args)
        for point, (rname, _) in bindings.items():
            if point.split("[")[0] in outputs:
                self.last_writer[rname] = (cmd, d, point, inputs)
                self.modified.setdefault(rname, []).append(cmd.index)

    def _write(self, cmd, state, out):
        self.writer_of[cmd.index] = self.last_writer.get(cmd.fields["resource"])
        super()._write(cmd, state, out)


def _expected_layout(model: Model, cmd) -> tuple[np.dtype, tuple[int, ...] | None, int]:
    """(element dtype, .npy shape or None for a raw file, raw length) of the file a writeFile
    command writes, as ``Model._write`` writes it."""
    res = model.resources[cmd.fields["resource"]]
    dt: DataType = res.data_type
    if dt.bits < 8:
        dtype, count = np.dtype(np.int8 if dt is DataType.INT4 else np.uint8), 2 * res.size_in_bytes
    else:
        dtype, count = dt.dtype.newbyteorder("<"), res.size_in_bytes // (dt.bits // 8)
    dims = cmd.fields.get("dimensions")
    shape = tuple(int(d) for d in dims) if dims else (count,)
    return dtype, shape, res.size_in_bytes


def _npy_header(path: Path):
    try:
        with open(path, "rb") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            version = np.lib.format.read_magic(f)
            reader = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if reader is None:
                return None, f"is a .npy file of format version {version[0]}.{version[1]} (1.0 and 2.0 are read)"
            shape, _, dtype = reader(f)
            offset = f.tell()
    except (OSError, ValueError, SyntaxError, TypeError, EOFError) as e:
        return None, f"is not a readable .npy file ({' '.join(str(e).split())[:160]})"
    need = math.prod(shape) * dtype.itemsize
    if offset + need > path.stat().st_size:
        return None, f"is truncated: its header ({dtype}, shape {list(shape)}) needs {need} bytes of data"
    return (dtype, tuple(shape)), None


def _read_result(path: Path, dtype: np.dtype, shape, raw_len: int, data_type: DataType) -> np.ndarray:
    if path.suffix.lower() == ".npy":
        return np.load(path, allow_pickle=False)
    data = np.fromfile(path, np.uint8, count=raw_len)
    if data_type.bits < 8:
        return unpack4(data, data_type)
    return data.view(dtype)


def _model_sources(model_path: Path) -> set[Path]:
    """The files the model reads (its initializers' sourcePaths), resolved beside the model."""
    try:
        root = load_json(model_path.read_text(encoding="utf-8-sig"))
        resources = root.get("resources", {}) if isinstance(root, dict) else {}
    except (OSError, ValueError):
        return set()
    out = set()
    for spec in resources.values() if isinstance(resources, dict) else ():
        init = spec.get("initialValues") if isinstance(spec, dict) else None
        if isinstance(init, dict) and isinstance(init.get("sourcePath"), str):
            out.add((model_path.parent / init["sourcePath"]).resolve())
    return out


def compare_dxdispatch(model_path: str | os.PathLike, results_dir: str | os.PathLike, *, budget_scale: float = 1.0,
                       allow_extra: bool = False, feature_level=None, versions: str = "") -> Report:
    """Compare the files a DxDispatch model wrote (``results_dir``) with dmljax's run of it.

    Raises CompareError for a model that does not load, a missing results folder, missing or
    (without ``allow_extra``) extra result files, and files whose data type, shape or length
    differ from what the model's ``writeFile`` commands write."""
    model_path, results = Path(model_path), Path(results_dir)
    if not results.is_dir():
        raise CompareError(str(results), "", "does not exist" if not results.exists() else
                           "is not a folder; give the folder DxDispatch's writeFile outputs were copied into")
    with tempfile.TemporaryDirectory(prefix="dmljax-compare-") as tmp:
        try:
            model = _Recording.load(model_path, feature_level=feature_level, out_dir=tmp, overwrite=True)
        except ModelError as e:
            raise CompareError(str(model_path), "", f"the model cannot be run: {str(e).split(': ', 1)[-1]}") from None
        writes = [c for c in model.commands if c.kind == "writeFile"]
        if not writes:
            raise CompareError(str(model_path), "commands", "has no writeFile command, so there is no result file to "
                               "compare; add a writeFile of each output resource (docs/compare.md)")
        planned, notes, problems = [], [], []
        for cmd in writes:
            rel = _relative(cmd.fields["targetPath"])
            cmd.fields["targetPath"] = rel  # dmljax's own copy goes into the temporary folder
            planned.append((cmd, rel))
        wanted = {rel for _, rel in planned}
        present = {p.relative_to(results).as_posix() for p in results.rglob("*")
                   if p.is_file() and p.suffix.lower() in RESULT_SUFFIXES + images.READ_SUFFIXES}
        sources = _model_sources(model_path)
        present = {p for p in present if (results / p).resolve() not in sources}
        missing = sorted(wanted - present)
        extra = sorted(present - wanted)
        if missing and len(missing) == len(wanted) and extra:
            raise CompareError(str(results), "", f"holds none of the files the model writes ({', '.join(missing[:6])}), "
                               f"but holds {', '.join(extra[:6])}{' ...' if len(extra) > 6 else ''}: are these the "
                               f"results of another model than {model_path.name}?")
        if missing:
            problems.append(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing (the model's "
                            "writeFile commands write them; copy every one back from the Windows machine)")
        if extra and not allow_extra:
            problems.append(f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} not written by any writeFile "
                            "command of this model (pass --allow-extra to compare the rest)")
        elif extra:
            notes.append(f"Not compared (no writeFile of this model writes them): {', '.join(extra)}.")
        layouts = {}
        for cmd, rel in planned:
            path = results / rel
            res = model.resources[cmd.fields["resource"]]
            if path.suffix.lower() in images.READ_SUFFIXES or not path.is_file():
                continue
            dtype, shape, raw_len = _expected_layout(model, cmd)
            layouts[cmd.index] = (dtype, shape, raw_len)
            what = f"resource {cmd.fields['resource']!r} ({res.data_type.name})"
            if path.suffix.lower() == ".npy":
                header, problem = _npy_header(path)
                if problem:
                    problems.append(f"{rel} {problem}")
                    continue
                fdtype, fshape = header
                if fdtype.newbyteorder("<") != dtype and not (fdtype == dtype):
                    problems.append(f"{rel} holds {fdtype}; {what} is written as {dtype}")
                elif fshape != shape:
                    count = math.prod(fshape)
                    problems.append(f"{rel} has shape {list(fshape)} ({count} elements); {what} is written with shape "
                                    f"{list(shape)} ({math.prod(shape)} elements)")
            else:
                size = path.stat().st_size
                if size != raw_len:
                    problems.append(f"{rel} is {size} bytes long; {what} is written raw as {raw_len} bytes "
                                    f"({raw_len * 8 // res.data_type.bits} elements)")
        if problems:
            raise CompareError(str(results), "", "; ".join(problems) if len(problems) == 1 else
                               f"{len(problems)} problems:\n  " + "\n  ".join(problems))
        model._start_recording()
        try:
            model.run(io.StringIO(), timing=False)
        except ModelError as e:
            raise CompareError(str(model_path), "", f"the model cannot be run: {str(e).split(': ', 1)[-1]}") from None
        report = Report("DxDispatch", str(model_path), str(results), budget_scale, versions, notes=notes)
        files = {cmd.index: (cmd, rel) for cmd, rel in planned}
        for cmd, rel in planned:
            report.entries.append(_entry(model, cmd, rel, results, Path(tmp), layouts, files, budget_scale))
    return report


def _vendor_state(model: _Recording, rname: str, at: int, files: dict, results: Path, layouts: dict):
    """The bytes of resource ``rname`` as the vendor had them just before command ``at``, from a
    result file written while the resource held them (no dispatch wrote it in between); None
    when no such file exists or the resource was never computed (its initial values are dmljax's
    too)."""
    mods = model.modified.get(rname, [])
    if not any(m < at for m in mods):
        return None
    base = model.before[at][rname]
    for w, (cmd, rel) in files.items():
        if cmd.fields["resource"] != rname or w not in layouts:
            continue
        lo, hi = (w, at) if w < at else (at, w)
        if any(lo < m < hi for m in mods) or (w > at and at in mods):
            continue  # the resource changed between the file and the dispatch
        res = model.resources[rname]
        if res.data_type.bits < 8:
            continue
        dtype, shape, raw_len = layouts[w]
        values = _read_result(results / rel, dtype, shape, raw_len, res.data_type)
        data = np.ascontiguousarray(values.astype(dtype, copy=False)).reshape(-1).view(np.uint8)
        out = base.copy()
        out[: min(len(data), len(out))] = data[: len(out)]
        return out, rel
    return None


def _redispatch(model: _Recording, wcmd, d, point: str, files: dict, results: Path, layouts: dict):
    """The writing dispatch run again on the vendor's values of the inputs that earlier
    dispatches computed, where result files hold them: (its output resource's bytes, the files
    used, the computed inputs without a file), or None when no input was replaced."""
    outputs = {t.dml_name for t in d.compiled.spec.outputs}
    buffers, used, lacking = {}, [], []
    for p, (rname, _) in wcmd.fields["bindings"].items():
        if rname in buffers:
            continue
        vendor = None if p.split("[")[0] in outputs else _vendor_state(model, rname, wcmd.index, files, results, layouts)
        if vendor is None:
            buffers[rname] = model.before[wcmd.index][rname]
            if p.split("[")[0] not in outputs and any(m < wcmd.index for m in model.modified.get(rname, [])):
                lacking.append(rname)
        else:
            buffers[rname], rel = vendor
            used.append(rel)
    if not used:
        return None
    device = {r: jax.device_put(b) for r, b in buffers.items()}
    bindings = {p: BufferBinding(device[r], off) for p, (r, off) in wcmd.fields["bindings"].items()}
    result = d.compiled(bindings)
    elements = {r: np.asarray(model._elements(r, {r: b}, model.resources[r].size_in_bytes))
                for r, b in buffers.items() if model.resources[r].data_type is not None}
    return np.asarray(jax.device_get(result[point])), used, lacking, elements, buffers


def _float64_value(d, wcmd, point: str, buffers: dict, expected: np.ndarray) -> tuple[np.ndarray | None, str]:
    """The float64 value of the dispatch's output ``point`` as the file holds it (the file's
    shape), from the resources' bytes ``buffers`` it read: the dispatch's operator called again on
    them, outside any trace, its formula then evaluated in float64 (exact.float64_outputs).
    (None, the reason) where there is none; elements of the file beyond the output tensor (a
    resource's padding) keep dmljax's values."""
    compiled = d.compiled
    spec = compiled.spec
    if expected.dtype not in NARROW_FLOATS:
        return None, "the output is FLOAT64: there is no wider evaluation" if expected.dtype == np.float64 else ""
    if not computes(spec):
        return None, BIT_EXACT
    desc = compiled.tensor_descs[point]
    bindings = wcmd.fields["bindings"]
    points = compiled.bind_points
    if any(p not in bindings for p in points):
        return None, "its bindings name tensor-array elements as a list"
    if bindings[point][1] != 0 or tuple(desc.effective_strides) != packed_strides(desc.sizes):
        return None, f"{point} is strided or offset within its resource"
    names = list(dict.fromkeys(bindings[p][0] for p in points))
    layout = tuple((p, names.index(bindings[p][0]), bindings[p][1]) for p in points)
    owned = tuple(compiled._owned_values[n] for n in compiled.owned_by_dml) if compiled.owned_by_dml else ()
    with record_calls() as calls:
        compiled._runner(layout)(owned, *[jax.numpy.asarray(buffers[n]) for n in names])
    if len(calls) != 1:
        return None, f"its dispatch made {len(calls)} operator calls"
    every = [n for t in spec.outputs for n in (
        [e for e in compiled._outputs if e.split("[", 1)[0] == t.dml_name] if t.array else [t.dml_name])]
    wide, why = float64_outputs(calls[0])[every.index(point)]
    if wide is None:
        return None, why
    n = wide.size
    if n > expected.size:
        return None, f"the file holds {expected.size} of the output's {n} elements"
    exact = expected.astype(np.float64).reshape(-1)
    exact[:n] = wide.reshape(-1)
    return exact.reshape(expected.shape), ""


def _as_written(model: _Recording, cmd, data: np.ndarray, layout) -> np.ndarray:
    """A resource's bytes as its writeFile command writes them (Model._write's rule)."""
    dtype, shape, raw_len = layout
    res = model.resources[cmd.fields["resource"]]
    if not cmd.fields["targetPath"].lower().endswith(".npy"):
        return unpack4(data, res.data_type) if res.data_type.bits < 8 else data[:raw_len].view(dtype)
    values = model._elements(cmd.fields["resource"], {cmd.fields["resource"]: data}, res.size_in_bytes)
    return np.asarray(values)[: math.prod(shape)].reshape(shape)


def _entry(model: _Recording, cmd, rel: str, results: Path, tmp: Path, layouts: dict, files: dict,
           scale: float) -> Entry:
    rname = cmd.fields["resource"]
    res = model.resources[rname]
    layout = layouts.get(cmd.index)
    writer = model.writer_of.get(cmd.index)
    redone = None
    buffers = None
    if writer is None:
        source, operators, budget, note, inputs = f"no dispatch (resource {rname!r}'s initial values)", (), 0.0, "", {}
    else:
        wcmd, d, point, inputs = writer
        spec = d.compiled.spec
        desc = d.compiled.tensor_descs[point]
        first_input = next((t for t in spec.inputs if d.compiled.tensor_descs.get(t.dml_name) is not None), None)
        sizes = None if first_input is None else tuple(d.compiled.tensor_descs[first_input.dml_name].sizes)
        half = d.compiled.allow_half_precision_computation and desc.data_type is DataType.FLOAT16
        own_budget = spec.budget(desc.data_type, sizes, d.compiled.attributes, half)
        budget = own_budget * scale
        source = f"dispatch {d.name!r} (command {wcmd.index})"
        operators = (spec.enum_name,)
        note = ""
        if layout is not None:
            redone = _redispatch(model, wcmd, d, point, files, results, layouts)
        if redone is not None:
            _, used, lacking, elements, buffers = redone
            inputs = {n: elements[n.split("(")[-1].rstrip(")")] for n in inputs}
            note = ("Judged on the vendor's own inputs from " + ", ".join(used) + " (the dispatch run again on them)"
                    + (f"; {', '.join(lacking)} computed by dmljax, an error there can show here too." if lacking
                       else "."))
        else:
            buffers = model.before[wcmd.index]
            upstream = [n for n in inputs if any(m < wcmd.index for m in model.modified.get(n.split("(")[-1].rstrip(")"), []))]
            if upstream:
                note = ("Its inputs " + ", ".join(upstream) + " were computed by earlier dispatches: an error there "
                        "shows here too (write those resources as well, and the dispatch is judged on the vendor's "
                        "values of them).")
    if rel.lower().endswith(images.READ_SUFFIXES):
        return Entry(rel, source, operators, (), None, "a picture holds 8-bit pixels, not the resource's values; "
                     "write a .npy or .dat file to compare them")
    dtype, shape, raw_len = layout
    found = _read_result(results / rel, dtype, shape, raw_len, res.data_type)
    if redone is not None:
        expected = _as_written(model, cmd, redone[0], layout)
    else:
        expected = _read_result(tmp / rel, dtype, shape, raw_len, res.data_type)
    found = found.astype(found.dtype.newbyteorder("="), copy=False).reshape(expected.shape)
    expected = expected.astype(expected.dtype.newbyteorder("="), copy=False)
    count = expected.size

    def inputs_at(pos):
        flat = int(np.ravel_multi_index(pos, expected.shape)) if pos else 0
        return {name: (v[flat].item() if v.dtype.kind != "f" else float(v[flat]))
                for name, v in inputs.items() if v.size == count}
    exact, why = (None, "") if writer is None else _float64_value(d, wcmd, point, buffers, expected)
    reference = describe(spec.enum_name, exact, why) if writer is not None else "dmljax's result"
    comparison = compare(found, expected, budget, inputs_at, exact, None if exact is None else own_budget)
    return Entry(rel, source, operators, tuple(expected.shape), comparison, note, reference)
