"""``dmljax compare MODEL.onnx --reference DIR``: an ONNX model's tensors as another runtime
(ONNX Runtime with the DirectML provider, on Windows) computed them, node by node.

The reference is a folder of TensorProto files (what ONNX Runtime's node input/output dump
writes: the value's name with every character that is not a letter or digit made ``_``, then
``.tensorproto``; ``.pb`` is read the same way), ``.npy`` files named after values, or ``.npz``
archives of them (a single ``.npz`` file may also be given). Nodes are evaluated in the graph's
topological order, each on the reference's own values of its inputs where the reference has
them, so that a node is judged on what it was given and an error upstream is never blamed on it;
where the reference lacks an input, dmljax's own value stands in, and the report says so.

Memory: a node's inputs are read from the reference when it runs and dropped once it has run
(read again only for the elements a report lists); the output compared is read from its file
range by range where its values lie raw there (``Reference.open``), and an element-wise
operator's float64 value is evaluated range by range too (exact.Float64Chunks); dmljax's own
value of a tensor is kept only while a later node needs it and the reference has none
(benchmarks/compare/streaming.py measures the peak).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np

from dmljax._src.compare.distance import compare
from dmljax._src.compare.exact import NARROW_FLOATS, Float64Chunks, describe, float64_outputs
from dmljax._src.compare.errors import CompareError
from dmljax._src.compare.report import Entry, Report
from dmljax._src.dtypes import DataType
from dmljax._src.onnx import loader
from dmljax._src.onnx.commands import _inputs as read_inputs
from dmljax._src.onnx.errors import OnnxImportError
from dmljax._src.op import record_calls
from dmljax._src.registry import get_operator

__all__ = ["compare_onnx", "Reference", "ort_file_name", "node_budget"]

TENSORPROTO_SUFFIXES = (".tensorproto", ".pb")


def ort_file_name(name: str) -> str:
    """The file ONNX Runtime's node dump writes a value into: every character that is not an
    ASCII letter or digit replaced by ``_``, then ``.tensorproto``."""
    return "".join(c if c.isascii() and c.isalnum() else "_" for c in name) + ".tensorproto"


class Reference:
    """The tensors of a reference folder or ``.npz`` file, by value name, read on demand.

    ``names`` are the values it holds among ``wanted`` (the model's value names); ``unmatched``
    the files and arrays that match none of them."""

    def __init__(self, path: str | os.PathLike, wanted: Sequence[str]):
        self.path = Path(path)
        self._where: dict[str, tuple] = {}  # value name -> ("proto" | "npy", file) or ("npz", file, key)
        self.unmatched: list[str] = []
        if not self.path.exists():
            raise CompareError(str(self.path), "", "does not exist")
        files = [self.path] if self.path.is_file() else sorted(p for p in self.path.rglob("*") if p.is_file())
        if self.path.is_file() and self.path.suffix.lower() != ".npz":
            raise CompareError(str(self.path), "", "is a file; give a folder of .tensorproto, .pb or .npy files, or "
                               "one .npz archive")
        by_file = {}
        for w in wanted:
            by_file.setdefault(ort_file_name(w)[: -len(".tensorproto")], []).append(w)
        wanted_set = set(wanted)
        for f in files:
            suffix = f.suffix.lower()
            if suffix == ".npz":
                try:
                    with zipfile.ZipFile(f) as z:
                        keys = [n[:-4] for n in z.namelist() if n.endswith(".npy")]
                except (OSError, zipfile.BadZipFile) as e:
                    raise CompareError(str(f), "", f"is not a readable .npz archive ({e})") from None
                for k in keys:
                    self._add(k, ("npz", f, k), wanted_set, by_file, f"{f.name}[{k}]")
            elif suffix in TENSORPROTO_SUFFIXES or suffix == ".npy":
                kind = "npy" if suffix == ".npy" else "proto"
                self._add(f.stem, (kind, f), wanted_set, by_file, f.relative_to(self.path).as_posix()
                          if self.path.is_dir() else f.name)

    def _add(self, stem: str, where: tuple, wanted: set, by_file: dict, label: str) -> None:
        if stem in wanted:
            self._where.setdefault(stem, where)
            return
        candidates = by_file.get(stem, [])
        if len(candidates) == 1:
            self._where.setdefault(candidates[0], where)
        elif len(candidates) > 1 and where[0] == "proto":
            name = _proto(where[1]).name  # ONNX Runtime keeps the exact name inside the file
            if name in wanted:
                self._where.setdefault(name, where)
            else:
                self.unmatched.append(label)
        else:
            self.unmatched.append(label)

    @property
    def names(self) -> set[str]:
        return set(self._where)

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def open(self, name: str) -> np.ndarray | _FileValues:
        """The tensor ``name`` as ``load`` gives it, or, where its values lie raw in a file (a
        TensorProto's raw_data, an uncompressed .npy file), a reader of it range by range."""
        where = self._where[name]
        try:
            if where[0] == "proto":
                layout = _raw_layout(where[1])
                if layout is not None:
                    dt, dims, offset = layout
                    return _FileValues(where[1], dt, dims, offset, dt.newbyteorder("="))
            elif where[0] == "npy":
                with open(where[1], "rb") as f:
                    version = np.lib.format.read_magic(f)
                    header = {(1, 0): np.lib.format.read_array_header_1_0,
                              (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                    shape, fortran, dt = header(f) if header else (None, True, None)
                    offset = f.tell()
                if header and not fortran and not dt.hasobject and offset + int(np.prod(shape, dtype=np.int64)) * dt.itemsize \
                        <= where[1].stat().st_size:
                    return _FileValues(where[1], dt, shape, offset, dt)
        except CompareError:
            raise
        except Exception:  # noqa: BLE001  (load reads it, and names what is wrong)
            pass
        return self.load(name)

    def load(self, name: str) -> np.ndarray:
        where = self._where[name]
        try:
            if where[0] == "npz":
                with np.load(where[1], allow_pickle=False) as z:
                    return np.asarray(z[where[2]])
            if where[0] == "npy":
                return np.load(where[1], allow_pickle=False)
            return _read_tensor(where[1])
        except CompareError:
            raise
        except Exception as e:  # noqa: BLE001  (numpy and protobuf raise many kinds on a corrupt file)
            raise CompareError(str(where[1]), name, f"cannot be read ({type(e).__name__}: {' '.join(str(e).split())[:200]})") from None


def _varint(f) -> int | None:
    shift = result = 0
    while True:
        b = f.read(1)
        if not b:
            return None if shift == 0 else -1
        result |= (b[0] & 0x7F) << shift
        if b[0] < 0x80:
            return result
        shift += 7
        if shift > 63:
            return -1


_RAW_TYPES = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "?", 10: "<f2", 11: "<f8",
              12: "<u4", 13: "<u8"}
"""TensorProto.DataType values whose raw_data is read straight into an array (ONNX's numbering)."""


def _read_tensor(path: Path) -> np.ndarray:
    """A TensorProto file's array. When the values are in ``raw_data`` (as ONNX Runtime's dump
    writes them) only the small fields are parsed and the values are read straight from the
    file into the array, with no copy of the message; otherwise the onnx package parses it."""
    layout = _raw_layout(path)
    if layout is None:
        return _slow_tensor(path)
    dt, dims, offset = layout
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    return np.fromfile(path, dt, count=count, offset=offset).astype(dt.newbyteorder("="), copy=False).reshape(dims)


def _raw_layout(path: Path) -> tuple[np.dtype, list[int], int] | None:
    """(data type, dims, offset of the values) of a TensorProto file whose values are in
    ``raw_data``; None where the onnx package must parse it."""
    dims, dtype, raw = [], None, None
    try:
        with open(path, "rb") as f:
            while True:
                key = _varint(f)
                if key is None:
                    break
                field, wire = key >> 3, key & 7
                if key < 0 or wire not in (0, 1, 2, 5):
                    return None
                if wire == 0:
                    v = _varint(f)
                    if v is None or v < 0:
                        return None
                    if field == 1:
                        dims.append(v)
                    elif field == 2:
                        dtype = v
                elif wire == 2:
                    n = _varint(f)
                    if n is None or n < 0:
                        return None
                    if field == 1:  # packed dims
                        end = f.tell() + n
                        while f.tell() < end:
                            v = _varint(f)
                            if v is None or v < 0:
                                return None
                            dims.append(v)
                    elif field == 9:
                        raw = (f.tell(), n)
                        f.seek(n, 1)
                    elif field in (8, 12, 13, 14):  # name, doc_string, external data, segment...
                        f.seek(n, 1)
                    else:  # typed values (float_data, int64_data...): the onnx package reads them
                        return None
                else:
                    f.seek(8 if wire == 1 else 4, 1)
    except OSError as e:
        raise CompareError(str(path), "", f"cannot be read ({e.strerror or e})") from None
    if raw is None or dtype not in _RAW_TYPES:
        return None
    dt = np.dtype(_RAW_TYPES[dtype])
    count = int(np.prod(dims, dtype=np.int64)) if dims else 1
    if count * dt.itemsize != raw[1] or raw[0] + raw[1] > path.stat().st_size:
        raise CompareError(str(path), "", f"has {raw[1]} bytes of values for {count} elements of {dt} "
                           f"(shape {dims}): the file is truncated or not a TensorProto")
    return dt, dims, raw[0]


class _FileValues:
    """A tensor's values in a file (raw, C order, at ``offset``), read a range of its flattened
    positions at a time: what ``distance.compare`` takes for a reference's output, so that the
    whole of it is never in memory. ``dtype`` is the array's as ``Reference.load`` gives it."""

    def __init__(self, path: Path, stored: np.dtype, shape: Sequence[int], offset: int, dtype: np.dtype):
        self.path, self.stored, self.offset, self.dtype = path, stored, offset, np.dtype(dtype)
        self.shape = tuple(int(d) for d in shape)
        self.ndim, self.size = len(self.shape), int(np.prod(self.shape, dtype=np.int64))

    def range(self, start: int, stop: int) -> np.ndarray:
        stop = min(stop, self.size)
        n = max(0, stop - start)
        try:
            v = np.fromfile(self.path, self.stored, count=n, offset=self.offset + start * self.stored.itemsize)
        except OSError as e:
            raise CompareError(str(self.path), "", f"cannot be read ({e.strerror or e})") from None
        if v.size != n:
            raise CompareError(str(self.path), "", "is shorter than its values: it changed while it was read")
        return v.astype(self.dtype, copy=False)


def _slow_tensor(path: Path) -> np.ndarray:
    return loader.numpy_helper.to_array(_proto(path))


def _proto(path: Path):
    t = loader.onnx.TensorProto()
    try:
        t.ParseFromString(path.read_bytes())
    except Exception as e:  # noqa: BLE001
        raise CompareError(str(path), "", f"is not a TensorProto file ({type(e).__name__})") from None
    return t


def node_budget(dml: Sequence[str], dtype: np.dtype, sizes: tuple[int, ...] | None) -> float:
    """The ULP budget of an ONNX node: the largest of its DirectML operators' budgets for the
    output's data type (FLOAT16: the larger of the FLOAT32-computed and half-precision budgets,
    since a provider may compute in either), with their growth for ``sizes`` (the node's first
    input). 0 for a node with no operator (folded) and for non-float outputs."""
    dt = DataType.from_dtype(np.dtype(dtype))
    if dt is None or not dt.is_float or not dml:
        return 0.0
    best = 0.0
    for name in dml:
        if not name.startswith("DML_OPERATOR_"):  # a desc, not an operator (Reshape, Transpose), or control flow
            continue
        spec = get_operator(name).spec
        b = spec.budget(dt, sizes, {}) if _growth_ok(spec, sizes) else spec.budget(dt)
        if dt is DataType.FLOAT16 and spec.ulp_half is not None:
            b = max(b, spec.budget(dt, sizes, {}, half=True) if _growth_ok(spec, sizes) else spec.budget(dt, half=True))
        best = max(best, float(b))
    return best


def _growth_ok(spec, sizes) -> bool:
    if spec.ulp_growth is None or sizes is None:
        return False
    try:
        spec.ulp_growth(tuple(sizes), {})
    except Exception:  # noqa: BLE001  (a growth rule written for the operator's own desc)
        return False
    return True


def compare_onnx(model_path: str | os.PathLike, reference: str | os.PathLike, *, inputs: Sequence[str] | None = None,
                 budget_scale: float = 1.0, versions: str = "") -> Report:
    """Compare every node output the reference holds with the node evaluated in dmljax on the
    reference's inputs (see the module docstring)."""
    if loader.onnx is None:
        raise CompareError(str(model_path), "", 'ONNX models need the onnx package: pip install "dmljax[onnx]"')
    try:
        model = loader.load(model_path)
    except OnnxImportError as e:
        raise CompareError(str(model_path), "", f"cannot be imported: {e}") from None
    nodes = model.nodes
    graph_inputs = [name for name, _, _ in model.inputs]
    produced = [o for n in nodes for o in n.outputs if o]
    wanted = list(dict.fromkeys(graph_inputs + produced))
    ref = Reference(reference, wanted)
    found = ref.names
    if not found:
        shown = ", ".join(ref.unmatched[:6]) + (" ..." if len(ref.unmatched) > 6 else "")
        raise CompareError(str(reference), "", ("holds no tensor of this model" + (f" (it holds {shown})" if shown else
                           " (it is empty)")) + f"; {Path(model_path).name}'s values are named "
                           f"{', '.join(wanted[:6])}{' ...' if len(wanted) > 6 else ''}: is it the reference of "
                           "another model?")
    notes = []
    if ref.unmatched:
        notes.append(f"{len(ref.unmatched)} reference tensors match no value of the model and were not compared "
                     f"({', '.join(ref.unmatched[:5])}{' ...' if len(ref.unmatched) > 5 else ''}); ONNX Runtime's "
                     "graph optimizations rename fused values: dump with optimizations off (docs/compare.md)")
    own: dict[str, object] = {}
    missing = [n for n in graph_inputs if n not in ref]
    if missing:
        if not inputs:
            other = ""
            if len(ref.unmatched) > len(found):
                other = (f"; it holds more tensors that this model does not name ({', '.join(ref.unmatched[:4])}"
                         f"{' ...' if len(ref.unmatched) > 4 else ''}) than tensors it does: is it the reference of "
                         "another model?")
            raise CompareError(str(reference), "", f"has no value of the model's input{'s' if len(missing) > 1 else ''} "
                               f"{', '.join(missing)}; dump node inputs too (ORT_DEBUG_NODE_IO_DUMP_INPUT_DATA=1), "
                               "save them in the .npz, or give them with --inputs" + other)
        try:
            given = read_inputs(model, inputs)
        except (ValueError, OSError) as e:
            raise CompareError(", ".join(inputs), "--inputs", " ".join(str(e).split())[:400]) from None
        own.update({n: v for n, v in zip(graph_inputs, given) if n in missing})
    for name, dtype, shape in model.inputs:
        if name in ref:
            v = ref.load(name)
            if (dtype is not None and v.dtype != dtype) or (len(shape) != v.ndim) or any(
                    isinstance(d, int) and d != s for d, s in zip(shape, v.shape)):
                raise CompareError(str(reference), name, f"holds {v.dtype} {list(v.shape)}; the model's input is "
                                   f"{dtype} {list(shape)}: is it the reference of another model?")
            del v
    remaining: dict[str, int] = {}
    for n in nodes:
        for i in n.inputs:
            if i:
                remaining[i] = remaining.get(i, 0) + 1
    report = Report("ONNX", str(model_path), str(reference), budget_scale, versions, notes=notes)
    for index, n in enumerate(nodes):
        values, stand_ins = {}, []
        for i in n.inputs:
            if not i or i in values:
                continue
            if i in ref:
                values[i] = ref.load(i)
            elif i in own:
                values[i] = own[i]
                stand_ins.append(i)
        try:
            with record_calls() as calls:
                outs = model.evaluate_node(index, values)
        except Exception as e:  # noqa: BLE001  (a ValidationError or XLA's error on the reference's values)
            raise CompareError(str(model_path), f"node {n.name!r} ({n.op_type})", "cannot be evaluated on the "
                               f"reference's inputs: {' '.join(str(e).split())[:400]}") from None
        first = next((values[i] for i in n.inputs if i and i in values), None)
        sizes = None if first is None else tuple(np.shape(first))
        inputs = _Inputs(ref, values, stand_ins)
        del values, first  # the reference's inputs: dmljax holds its own copies while it needs them
        # the float64 values first: the calls hold the node's inputs as dmljax read them, dropped
        # then, or kept by an element-wise operator's value until its ranges are compared
        exacts = {o: _float64_value(n, v, calls, np.dtype(v.dtype)) for o, v in outs.items() if o in ref}
        calls.clear()
        for o, v in outs.items():
            if o in ref:
                expected = np.asarray(v)
                got = ref.open(o)
                report.entries.append(_entry(n, o, got, expected, inputs, sizes, stand_ins, budget_scale,
                                             exacts.pop(o)))
                del got, expected
            elif remaining.get(o, 0) > 0:
                own[o] = v
        del inputs, outs, calls
        for i in n.inputs:
            if i:
                remaining[i] -= 1
                if remaining[i] == 0:
                    own.pop(i, None)
    compared = sum(e.comparison is not None for e in report.entries)
    if compared < len(produced):
        report.notes.append(f"{len(produced) - compared} of the model's {len(produced)} node outputs are not in the "
                            "reference and were not compared; a node whose inputs are missing from it is judged on "
                            "dmljax's own inputs, so an error before it can show at it (its row says so)")
    return report


def _float64_value(n, value, calls: list, dtype: np.dtype) -> tuple[np.ndarray | Float64Chunks | None, str]:
    """The float64 value of a node's output ``value`` from the operator calls the node made
    (``calls``): where the node is one DirectML operator whose result is the output itself, that
    operator's formula evaluated in float64 (exact.float64_outputs; for an element-wise
    operator, range by range as the comparison reads it); else (None, the reason)."""
    if np.dtype(dtype) not in NARROW_FLOATS:
        return None, "the output is FLOAT64: there is no wider evaluation" if np.dtype(dtype) == np.float64 else ""
    if not n.dml:
        return None, "the node is folded to a constant"
    if len(calls) != 1:
        if not calls:
            return None, "the node made no operator call"
        names = ", ".join(dict.fromkeys(c.spec.enum_name.removeprefix("DML_OPERATOR_") for c in calls))
        return None, (f"the node made {len(calls)} DirectML operator calls ({names}), each rounding its result, "
                      "and its budget is not defined against one float64 value of the whole node")
    call = calls[0]
    outs = call.out if isinstance(call.out, tuple) else (call.out,)
    index = next((i for i, o in enumerate(outs) if o is value), None)
    if index is None:
        return None, f"the node's output is {call.spec.enum_name}'s result reshaped or converted"
    return float64_outputs(call, chunked=True)[index]


class _Inputs:
    """A node's inputs for the elements a report lists: their shapes, dmljax's own values as
    held, the reference's read again from it when first asked for (they are not held while the
    node's outputs are compared)."""

    def __init__(self, ref: Reference, values: dict, stand_ins: Sequence[str]):
        self.ref, self.shapes = ref, {k: tuple(np.shape(v)) for k, v in values.items()}
        self.held = {k: values[k] for k in stand_ins}

    def at(self, pos: tuple[int, ...], shape: tuple[int, ...]) -> dict:
        """Each input of the output's ``shape`` at ``pos``."""
        for k, s in self.shapes.items():
            if s == shape and k not in self.held:
                self.held[k] = self.ref.load(k)
        return {k: np.asarray(self.held[k])[pos].item() for k, s in self.shapes.items() if s == shape}


def _entry(n, name: str, got: np.ndarray, expected: np.ndarray, inputs: _Inputs, sizes, stand_ins, scale,
           exact: tuple[np.ndarray | Float64Chunks | None, str] = (None, "")) -> Entry:
    source = f"node {n.name!r} ({n.op_type})"
    note = ("Inputs not in the reference, computed by dmljax: " + ", ".join(stand_ins)
            + "; an error upstream of this node can show here.") if stand_ins else ""
    if got.shape != expected.shape or got.dtype != expected.dtype:
        raise CompareError(name, source, f"the reference holds {got.dtype} {list(got.shape)}, but the node computes "
                           f"{expected.dtype} {list(expected.shape)} from the reference's inputs: is the reference "
                           "of another model (or of other input shapes)?")
    own = node_budget(n.dml, expected.dtype, sizes)

    def inputs_at(pos):  # for the few elements listed
        return inputs.at(pos, tuple(expected.shape))
    wide, why = exact
    reference = describe(", ".join(n.dml) or n.op_type, wide, why)
    comparison = compare(got, expected, own * scale, inputs_at, wide, None if wide is None else own)
    return Entry(name, source, n.dml, tuple(expected.shape), comparison, note, reference)
