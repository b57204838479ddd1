"""DxDispatch's JSON model format (resources, dispatchables, commands), run on the default JAX
device. The reference is DxDispatch's Guide.md and _schema.json.

``Model.load(path)`` reads and checks the whole model: every resource is built, every
dispatchable compiled (validated through its operator's OpSpec) and every command's bindings
checked, so a model that dmljax cannot run stops before anything runs, with one error naming the
file and the part of the model at fault. ``Model.run()`` then executes the commands in order;
side effects persist between commands, as in DxDispatch's execution model.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Mapping, TextIO

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.buffers import BufferBinding
from dmljax._src.compile import CompiledOperator, _get_op, compile_operator
from dmljax._src.feature_level import resolve_feature_level
from dmljax._src.dtypes import DataType
from dmljax._src.errors import ValidationError

__all__ = ["ModelError", "Model", "Resource", "format_values", "load_json"]

_EXECUTION_FLAGS = ("NONE", "ALLOW_HALF_PRECISION_COMPUTATION", "DISABLE_META_COMMANDS", "DESCRIPTORS_VOLATILE")
_COMPILE_TYPES = ("DmlCompileOp", "DmlCompileGraph")
_RESOURCE_MEMBERS = ("type", "initialValues", "initialValuesDataType", "sizeInBytes",
                     "initialValuesOffsetInBytes", "resampleSize", "resampleMode")
_DISPATCHABLE_MEMBERS = ("type", "desc", "Desc", "bindings", "dmlCompileType", "executionFlags")
_BINDING_MEMBERS = ("name", "format", "elementCount", "elementStride", "elementSizeInBytes",
                    "elementOffset", "counter", "counterOffsetBytes", "shape")
_NON_DML = {"hlsl": "an HLSL compute shader", "onnx": "an ONNX model",
            "dmlserializedgraph": "a DML serialized graph", "dml_graph_desc": "a DML_GRAPH_DESC graph"}
_FLOAT_WORDS = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}


class ModelError(ValueError):
    """A model dmljax cannot run: malformed, or using what dmljax does not implement yet.

    ``path`` is the model file, ``where`` the part of the model (``dispatchable 'add'``), and
    ``cause`` the underlying ValidationError when there is one.
    """

    def __init__(self, path: str | os.PathLike, where: str, message: str, cause: Exception | None = None):
        self.path = str(path)
        self.where = where
        self.cause = cause
        sep = "\n" if "\n" in message else " "
        super().__init__(f"{self.path}: {where}:{sep}{message}")


# ------------------------------------------------------------------------------------ JSON
def load_json(text: str) -> Any:
    """JSON as DxDispatch reads it: also with // and /* */ comments and trailing commas."""
    out, i, n = [], 0, len(text)
    in_str = False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_str = False
            i += 1
            continue
        if c == '"':
            in_str = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "]}":
            # drop a trailing comma before a closing bracket
            k = len(out) - 1
            while k >= 0 and out[k].isspace():
                k -= 1
            if k >= 0 and out[k] == ",":
                del out[k]
            out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
    return json.loads("".join(out))


# ------------------------------------------------------------------------------- resources
@dataclasses.dataclass
class Resource:
    """A buffer resource: its bytes (uint8, a multiple of 4 long) and the DataType of its
    initializer (None for the list initializer), which prints and writes it."""

    name: str
    data: Any  # 1-D uint8 (numpy while loading, jax while running)
    data_type: DataType | None
    initialized_bytes: int

    @property
    def size_in_bytes(self) -> int:
        return int(self.data.shape[0])


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _convert(values: list, dt: DataType, what: str) -> np.ndarray:
    """JSON values as ``dt`` elements. Floats: numbers or "nan"/"inf"/"-inf", read as a C float
    first (as DxDispatch's parser does) except for FLOAT64. Integers: integral numbers that the
    type holds; anything else is refused rather than wrapped."""
    if dt.is_float:
        out = []
        for v in values:
            if isinstance(v, str) and v.strip().lower() in _FLOAT_WORDS:
                out.append(_FLOAT_WORDS[v.strip().lower()])
            elif _is_number(v):
                out.append(float(v))
            else:
                raise ValueError(f"{what} has {v!r}, not a number (or \"nan\", \"inf\", \"-inf\") for {dt.name}")
        arr = np.asarray(out, np.float64)
        if dt is not DataType.FLOAT64:
            with np.errstate(over="ignore"):
                arr = arr.astype(np.float32)
        with np.errstate(over="ignore"):
            return arr.astype(dt.dtype)
    if dt.bits < 8:
        raise ValueError(f"{what}: dmljax does not initialize {dt.name} buffers yet")
    info = np.iinfo(dt.dtype)
    out = []
    for v in values:
        if not _is_number(v) or (isinstance(v, float) and not v.is_integer()):
            raise ValueError(f"{what} has {v!r}, not an integer, for {dt.name}")
        iv = int(v)
        if not info.min <= iv <= info.max:
            raise ValueError(f"{what} has {v!r}, outside {dt.name}'s range {info.min} to {info.max}")
        out.append(iv)
    return np.asarray(out, dt.dtype)


def _resolve_input(base: Path, source: str) -> Path:
    """Relative to the model file, else to the current directory (DxDispatch's rule)."""
    p = base / source
    return p if p.exists() else Path(source).absolute()


def _read_npy(path: Path) -> tuple[np.ndarray, DataType]:
    arr = np.load(path, allow_pickle=False)
    dt = DataType.from_dtype(arr.dtype.newbyteorder("=")) if arr.dtype.byteorder not in "=|" else DataType.from_dtype(arr.dtype)
    if dt is None:
        raise ValueError(f"{path.name} holds {arr.dtype}, which is not a DirectML data type")
    return np.ascontiguousarray(arr.astype(dt.dtype.newbyteorder("<"))).reshape(-1), dt


def _build_resource(name: str, spec: Any, base: Path) -> Resource:
    if not isinstance(spec, Mapping):
        raise ValueError(f"is {spec!r}; a resource is an object with initialValues")
    unknown = [k for k in spec if k not in _RESOURCE_MEMBERS]
    if unknown:
        raise ValueError(f"has unknown member {unknown[0]!r}; members: {', '.join(_RESOURCE_MEMBERS)}")
    if spec.get("type", "buffer") != "buffer":
        raise ValueError(f"has type {spec['type']!r}; only buffers are resources (textures are not implemented in DxDispatch either)")
    raw_type = spec.get("initialValuesDataType")
    dt: DataType | None = None
    unknown_type = False
    if raw_type is not None:
        if not isinstance(raw_type, str):
            raise ValueError(f"initialValuesDataType is {raw_type!r}; expected a DML_TENSOR_DATA_TYPE string")
        if raw_type.upper() in ("UNKNOWN", "DML_TENSOR_DATA_TYPE_UNKNOWN"):
            unknown_type = True
        else:
            try:
                dt = DataType.parse(raw_type)
            except ValueError as e:
                raise ValueError(f"initialValuesDataType: {e}") from None
    if "initialValues" not in spec:
        raise ValueError("has no initialValues (a required member)")
    init = spec["initialValues"]

    def need_type(kind):
        if dt is None:
            raise ValueError(f"initialValues is a{'n' if kind[0] in 'aeiou' else ''} {kind} initializer, which needs "
                             "initialValuesDataType (a DML_TENSOR_DATA_TYPE other than UNKNOWN)")
        return dt

    if isinstance(init, list):
        if unknown_type:  # list initializer: mixed types, packed one after the other
            if not init:
                raise ValueError("initialValues is an empty list")
            parts = []
            for i, item in enumerate(init):
                if not isinstance(item, Mapping) or "type" not in item or "value" not in item:
                    raise ValueError(f"initialValues[{i}] is {item!r}; list initializer items are "
                                     "{\"type\": ..., \"value\": ...} objects")
                try:
                    it = DataType.parse(item["type"])
                except ValueError as e:
                    raise ValueError(f"initialValues[{i}].type: {e}") from None
                parts.append(_convert([item["value"]], it, f"initialValues[{i}]").tobytes())
            data, dt = b"".join(parts), None
        else:
            t = need_type("array")
            if not init:
                raise ValueError("initialValues is an empty array (its size must be larger than 0)")
            data = _convert(init, t, "initialValues").tobytes()
    elif isinstance(init, Mapping) and "sourcePath" in init:
        source = init["sourcePath"]
        if not isinstance(source, str):
            raise ValueError(f"initialValues.sourcePath is {source!r}; expected a path string")
        path = _resolve_input(base, source)
        if not path.exists():
            raise ValueError(f"initialValues.sourcePath {source!r} does not exist "
                             f"(looked beside the model, {base / source}, and in the current directory)")
        ext = path.suffix.lower()
        if ext == ".npy":
            arr, dt = _read_npy(path)
            data = arr.tobytes()
        elif ext in (".png", ".jpg", ".jpeg"):
            raise ValueError(f"initialValues.sourcePath {source!r} is an image; image initializers are "
                             "not implemented yet in dmljax")
        else:
            need_type("raw file")
            data = path.read_bytes()
    elif isinstance(init, Mapping) and "valueCount" in init:
        t = need_type("constant" if "value" in init else "sequence")
        count = init["valueCount"]
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise ValueError(f"initialValues.valueCount is {count!r}; it must be an integer larger than 0")
        if "value" in init:
            extra = [k for k in init if k not in ("valueCount", "value")]
            if extra:
                raise ValueError(f"initialValues has unknown member {extra[0]!r} for a constant initializer")
            v = _convert([init["value"]], t, "initialValues.value")
            data = np.repeat(v, count).tobytes()
        else:
            missing = [k for k in ("valueStart", "valueDelta") if k not in init]
            if missing:
                raise ValueError(f"initialValues has no {missing[0]}; a constant initializer has valueCount and "
                                 "value, a sequence initializer valueCount, valueStart and valueDelta")
            extra = [k for k in init if k not in ("valueCount", "valueStart", "valueDelta")]
            if extra:
                raise ValueError(f"initialValues has unknown member {extra[0]!r} for a sequence initializer")
            start = _convert([init["valueStart"]], t, "initialValues.valueStart")
            delta = _convert([init["valueDelta"]], t, "initialValues.valueDelta")
            # DxDispatch accumulates in the element type: value += delta, one rounding (or
            # wrap-around) per step, not start + i * delta.
            steps = np.concatenate([start, np.repeat(delta, count - 1)])
            with np.errstate(over="ignore"):
                data = np.cumsum(steps, dtype=t.dtype).tobytes()
    elif init == "deferred":
        raise ValueError("initialValues is \"deferred\", which only ONNX dispatchables use; not implemented in dmljax")
    else:
        raise ValueError(f"initialValues is {init!r}; expected an array, a constant, sequence or file "
                         "initializer object, or a list initializer")
    if "resampleSize" in spec or "resampleMode" in spec:
        raise ValueError("resampleSize/resampleMode apply to image initializers, which dmljax does not implement yet")
    offset = spec.get("initialValuesOffsetInBytes", 0)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ValueError(f"initialValuesOffsetInBytes is {offset!r}; expected a non-negative integer")
    needed = offset + len(data)
    size = spec.get("sizeInBytes")
    if size is None:
        size = needed
    elif not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"sizeInBytes is {size!r}; expected a non-negative integer")
    elif size < needed:
        raise ValueError(f"sizeInBytes is {size}, smaller than the {needed} bytes of its initial values"
                         + (f" at offset {offset}" if offset else ""))
    size = (size + 3) & ~3  # inflated to DirectML's 4-byte alignment
    buf = np.zeros(size, np.uint8)
    buf[offset:needed] = np.frombuffer(data, np.uint8)
    return Resource(name, buf, dt, needed)


# -------------------------------------------------------------------------------- printing
def _format_float(v: float) -> str:
    """C++ iostream's default float output (precision 6, %g), as DxDispatch prints."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%g" % v


def format_values(values: np.ndarray) -> list[str]:
    """Each element as DxDispatch prints it. FLOAT16 prints through float, as half_float does;
    8-bit integers print as numbers (DxDispatch streams them as characters)."""
    if values.dtype.kind == "f":
        return [_format_float(float(v)) for v in values.astype(np.float64)]
    return [str(int(v)) for v in values]


def _typed(data: np.ndarray, dt: DataType, nbytes: int) -> np.ndarray:
    es = dt.bits // 8
    count = nbytes // es
    return np.frombuffer(data[: count * es].tobytes(), dt.dtype.newbyteorder("<")).astype(dt.dtype)


# ---------------------------------------------------------------------------------- model
@dataclasses.dataclass
class _Dispatchable:
    name: str
    type: str
    compiled: CompiledOperator
    init_bindings: dict[str, tuple[str, int]]


@dataclasses.dataclass
class _Command:
    index: int
    kind: str
    fields: dict


class Model:
    """A loaded, checked DxDispatch model (see the module docstring)."""

    def __init__(self, path: Path, resources, dispatchables, commands):
        self.path = path
        self.resources: dict[str, Resource] = resources
        self.dispatchables: dict[str, _Dispatchable] = dispatchables
        self.commands: list[_Command] = commands

    # ---- loading
    @classmethod
    def load(cls, path: str | os.PathLike, *, feature_level=None) -> "Model":
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ModelError(path, "file", f"cannot be read ({e.strerror or e})") from None
        try:
            root = load_json(text)
        except json.JSONDecodeError as e:
            raise ModelError(path, "file", f"is not valid JSON: {e}") from None
        if not isinstance(root, Mapping):
            raise ModelError(path, "file", "the root is not an object with resources, dispatchables and commands")
        unknown = [k for k in root if k not in ("$schema", "resources", "dispatchables", "commands")]
        if unknown:
            raise ModelError(path, "file", f"has unknown member {unknown[0]!r}; members: resources, dispatchables, commands")
        for k in ("resources", "dispatchables", "commands"):
            if k not in root:
                raise ModelError(path, "file", f"has no {k!r} member")
        if not isinstance(root["resources"], Mapping) or not isinstance(root["dispatchables"], Mapping):
            raise ModelError(path, "file", "resources and dispatchables must be objects (name -> definition)")
        if not isinstance(root["commands"], list):
            raise ModelError(path, "file", "commands must be an array")
        base = path.parent
        # Operator types first: a model using one dmljax does not implement stops on that.
        for name, spec in root["dispatchables"].items():
            cls._check_type(path, name, spec, feature_level)
        resources = {}
        for name, spec in root["resources"].items():
            try:
                resources[name] = _build_resource(name, spec, base)
            except ValueError as e:
                raise ModelError(path, f"resource '{name}'", str(e)) from None
        dispatchables = {}
        for name, spec in root["dispatchables"].items():
            dispatchables[name] = cls._load_dispatchable(path, name, spec, resources, feature_level)
        model = cls(path, resources, dispatchables, [])
        for i, spec in enumerate(root["commands"]):
            model.commands.append(model._load_command(i, spec))
        return model

    @staticmethod
    def _check_type(path, name, spec, feature_level) -> None:
        where = f"dispatchable '{name}'"
        if not isinstance(spec, Mapping) or "type" not in spec:
            raise ModelError(path, where, "has no type")
        type_ = spec["type"]
        if isinstance(type_, str) and type_.lower() in _NON_DML:
            raise ModelError(path, where, f"is {_NON_DML[type_.lower()]} ({type_!r}); dmljax runs DirectML operator "
                             "dispatchables only")
        try:
            _get_op(type_, resolve_feature_level(feature_level))
        except ValidationError as e:
            raise ModelError(path, f"{where} ({type_})", str(e), e) from None

    @staticmethod
    def _load_dispatchable(path, name, spec, resources, feature_level) -> _Dispatchable:
        # _check_type has passed for every dispatchable before any is loaded.
        type_ = spec["type"]
        where = f"dispatchable '{name}' ({type_})"
        unknown = [k for k in spec if k not in _DISPATCHABLE_MEMBERS]
        if unknown:
            raise ModelError(path, where, f"has unknown member {unknown[0]!r}; members: {', '.join(_DISPATCHABLE_MEMBERS)}")
        if "desc" in spec and "Desc" in spec:
            raise ModelError(path, where, "has both desc and Desc")
        desc = spec.get("desc", spec.get("Desc"))
        if desc is None:
            raise ModelError(path, where, "has no desc (or Desc)")
        ctype = spec.get("dmlCompileType", "DmlCompileOp")
        if ctype not in _COMPILE_TYPES:
            raise ModelError(path, where, f"has dmlCompileType {ctype!r}; valid: {', '.join(_COMPILE_TYPES)}")
        flags = spec.get("executionFlags", [])
        flags = [flags] if isinstance(flags, str) else flags
        if not isinstance(flags, list):
            raise ModelError(path, where, f"has executionFlags {flags!r}; expected a string or a list of strings")
        parsed = set()
        for f in flags:
            key = f.strip().upper() if isinstance(f, str) else f
            if isinstance(key, str) and key.startswith("DML_EXECUTION_FLAG_"):
                key = key[len("DML_EXECUTION_FLAG_"):]
            if key not in _EXECUTION_FLAGS:
                raise ModelError(path, where, f"has execution flag {f!r}; valid: "
                                 + ", ".join("DML_EXECUTION_FLAG_" + x for x in _EXECUTION_FLAGS))
            parsed.add(key)
        try:
            compiled = compile_operator(
                type_, desc, feature_level=feature_level,
                allow_half_precision_computation="ALLOW_HALF_PRECISION_COMPUTATION" in parsed)
        except ValidationError as e:
            raise ModelError(path, where, str(e), e) from None
        init = {}
        raw = spec.get("bindings", {})
        if not isinstance(raw, Mapping):
            raise ModelError(path, where, "bindings must be an object (bind point -> resource)")
        for point, value in raw.items():
            try:
                init[point] = _parse_binding(value, resources)
            except ValueError as e:
                raise ModelError(path, f"{where}, binding {point!r}", str(e)) from None
        try:
            compiled.initialize({p: _placeholder(resources, r, off) for p, (r, off) in init.items()})
        except ValidationError as e:
            raise ModelError(path, f"{where}, initialization bindings", str(e), e) from None
        compiled._owned_values = None  # bound for real when the model runs
        return _Dispatchable(name, str(type_), compiled, init)

    def _load_command(self, i: int, spec) -> _Command:
        path = self.path
        if not isinstance(spec, Mapping) or "type" not in spec:
            raise ModelError(path, f"command {i}", "has no type")
        kind = spec["type"]
        where = f"command {i} ({kind})"
        allowed = {"dispatch": ("type", "dispatchable", "bindings", "threadGroupCount"),
                   "print": ("type", "resource", "verbose"),
                   "writeFile": ("type", "resource", "targetPath", "dimensions")}
        if kind not in allowed:
            raise ModelError(path, where, f"is not a command type; valid: {', '.join(allowed)}")
        unknown = [k for k in spec if k not in allowed[kind]]
        if unknown:
            raise ModelError(path, where, f"has unknown member {unknown[0]!r}; members: {', '.join(allowed[kind])}")
        fields = dict(spec)
        if kind == "dispatch":
            dname = spec.get("dispatchable")
            if dname not in self.dispatchables:
                raise ModelError(path, where, f"names dispatchable {dname!r}, which the model does not define"
                                 + (f"; dispatchables: {', '.join(self.dispatchables)}" if self.dispatchables else ""))
            d = self.dispatchables[dname]
            where = f"command {i} (dispatch of '{dname}')"
            raw = spec.get("bindings", {})
            if not isinstance(raw, Mapping):
                raise ModelError(path, where, "bindings must be an object (bind point -> resource)")
            bindings = {}
            for point, value in raw.items():
                try:
                    bindings[point] = _parse_binding(value, self.resources)
                except ValueError as e:
                    raise ModelError(path, f"{where}, binding {point!r}", str(e)) from None
            fields["bindings"] = bindings
            try:
                d.compiled.initialize({p: _placeholder(self.resources, r, off) for p, (r, off) in d.init_bindings.items()})
                d.compiled.prepare({p: _placeholder(self.resources, r, off) for p, (r, off) in bindings.items()})
            except ValidationError as e:
                raise ModelError(path, where, str(e), e) from None
            finally:
                d.compiled._owned_values = None
        else:
            rname = spec.get("resource")
            if rname not in self.resources:
                raise ModelError(path, where, f"names resource {rname!r}, which the model does not define")
            res = self.resources[rname]
            if res.data_type is None:
                raise ModelError(path, where, f"resource '{rname}' has a list initializer (UNKNOWN type); "
                                 "there is no element type to print or write it with")
            if kind == "print" and not isinstance(spec.get("verbose", False), bool):
                raise ModelError(path, where, f"verbose is {spec['verbose']!r}; expected true or false")
            if kind == "writeFile":
                target = spec.get("targetPath")
                if not isinstance(target, str) or not target:
                    raise ModelError(path, where, "has no targetPath")
                if Path(target).suffix.lower() in (".png", ".jpg", ".jpeg"):
                    raise ModelError(path, where, f"writes an image ({target}); image output is not implemented yet in dmljax")
                dims = spec.get("dimensions")
                if dims is not None:
                    if not isinstance(dims, list) or not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in dims):
                        raise ModelError(path, where, f"dimensions is {dims!r}; expected a list of positive integers")
                    need = math.prod(dims) * (res.data_type.bits // 8)
                    if need > res.size_in_bytes:
                        raise ModelError(path, where, f"dimensions {dims} need {need} bytes; resource '{rname}' "
                                         f"has {res.size_in_bytes}")
        return _Command(i, kind, fields)

    # ---- running
    def run(self, out: TextIO | None = None, *, iterations: int = 1, repeat: int = 1, warmup: int = 1,
            timing_verbosity: int = 0, timing: bool = True) -> None:
        """Run the commands in order, writing what DxDispatch writes to ``out``."""
        out = out or sys.stdout
        device = jax.devices()[0]
        print(f"Running on '{device.device_kind}' ({device.platform})", file=out)
        state = {n: jnp.asarray(r.data) for n, r in self.resources.items()}
        for d in self.dispatchables.values():  # initialization: OWNED_BY_DML tensors copied now
            d.compiled.initialize({p: BufferBinding(state[r], off) for p, (r, off) in d.init_bindings.items()})
        for cmd in self.commands:
            if cmd.kind == "dispatch":
                self._dispatch(cmd, state, out, iterations, repeat, warmup, timing_verbosity, timing)
            elif cmd.kind == "print":
                self._print(cmd, state, out)
            else:
                self._write(cmd, state, out)

    def _dispatch(self, cmd, state, out, iterations, repeat, warmup, verbosity, timing):
        d = self.dispatchables[cmd.fields["dispatchable"]]
        samples = []
        for _ in range(max(1, iterations)):
            t0 = time.perf_counter()
            for _ in range(max(1, repeat)):
                bindings = {p: BufferBinding(state[r], off) for p, (r, off) in cmd.fields["bindings"].items()}
                results = d.compiled(bindings)
                for point, value in results.items():
                    state[cmd.fields["bindings"][point][0]] = value
                jax.block_until_ready(list(results.values()))
            samples.append((time.perf_counter() - t0) * 1000 / max(1, repeat))
        if not timing:
            return
        cold_n = min(max(len(samples), 1) - 1, warmup)
        cold, hot = samples[:cold_n], samples[cold_n:]
        name = cmd.fields["dispatchable"]
        if verbosity <= 0:
            print(f"Dispatch '{name}': {len(samples)} iterations, {_median(hot):.4f} ms median (CPU)", file=out)
        else:
            print(f"Dispatch '{name}': {len(samples)} iterations", file=out)
            for label, s in (("(Cold)", cold), ("(Hot) ", hot)):
                if s:
                    print(f"CPU Timings {label} : {len(s)} samples, {sum(s) / len(s):.4f} ms average, "
                          f"{min(s):.4f} ms min, {_median(s):.4f} ms median, {max(s):.4f} ms max", file=out)
        if verbosity >= 2:
            print("The timings of each iteration: ", file=out)
            for i, s in enumerate(samples):
                print(f"iteration {i}: {s:.4f} ms (CPU)", file=out)

    def _bytes(self, name, state) -> np.ndarray:
        return np.asarray(jax.device_get(state[name]))

    def _print(self, cmd, state, out):
        name = cmd.fields["resource"]
        res = self.resources[name]
        values = _typed(self._bytes(name, state), res.data_type, res.initialized_bytes)
        texts = format_values(values)
        if not cmd.fields.get("verbose", False):
            print(f"Resource '{name}': " + ", ".join(texts), file=out)
            return
        print(f"Resource '{name}':", file=out)
        width = len(str(len(values) - 1)) if len(values) > 1 else 1
        digits = values.dtype.itemsize * 2
        raw = values.view(f"<u{values.dtype.itemsize}") if values.dtype.itemsize > 1 else values.view(np.uint8)
        for i, (t, r) in enumerate(zip(texts, raw)):
            print(f"[{i:>{width}}] {t} (0x{int(r):>{digits}X})", file=out)

    def _write(self, cmd, state, out):
        name = cmd.fields["resource"]
        res = self.resources[name]
        target = cmd.fields["targetPath"]
        dest = self.path.parent / target  # relative to the model file, as DxDispatch resolves it
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = self._bytes(name, state)
        if dest.suffix.lower() == ".npy":
            dims = cmd.fields.get("dimensions")
            values = _typed(data, res.data_type, res.size_in_bytes)
            if dims:
                values = values[: math.prod(dims)].reshape(dims)
            np.save(dest, values, allow_pickle=False)
        else:
            dest.write_bytes(data.tobytes())
        print(f"Resource '{name}' written to '{target}'", file=out)


def _median(samples) -> float:
    """DxDispatch's median: the middle of the sorted samples (the upper one for an even count)."""
    if not samples:
        return 0.0
    s = sorted(samples)
    return s[len(s) // 2]


def _parse_binding(value, resources) -> tuple[str, int]:
    """A binding (string, object, or a one-item list) as (resource name, byte offset)."""
    if isinstance(value, list):
        if len(value) != 1:
            raise ValueError(f"binds {len(value)} resources; the bind point holds one tensor "
                             "(array bind points such as InputTensors belong to operators dmljax does not implement yet)")
        value = value[0]
    if isinstance(value, str):
        name, offset_el, el_size = value, 0, None
    elif isinstance(value, Mapping):
        unknown = [k for k in value if k not in _BINDING_MEMBERS]
        if unknown:
            raise ValueError(f"has unknown member {unknown[0]!r}; members: {', '.join(_BINDING_MEMBERS)}")
        if "name" not in value:
            raise ValueError("has no name (the resource to bind)")
        name = value["name"]
        offset_el = value.get("elementOffset", 0)
        el_size = value.get("elementSizeInBytes", value.get("elementStride"))
        for k, v in (("elementOffset", offset_el), ("elementSizeInBytes", el_size)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise ValueError(f"{k} is {v!r}; expected a non-negative integer")
    else:
        raise ValueError(f"is {value!r}; a binding is a resource name, an object with name, or a list")
    if not isinstance(name, str) or name not in resources:
        raise ValueError(f"names resource {name!r}, which the model does not define")
    if el_size is None:
        dt = resources[name].data_type
        if dt is None and offset_el:
            raise ValueError(f"resource '{name}' has a list initializer: give elementSizeInBytes with elementOffset")
        el_size = dt.bits // 8 if dt is not None else 1
    return name, offset_el * el_size


def _placeholder(resources, name, offset) -> BufferBinding:
    """The resource's loading-time bytes, bound for checking (same object for the same resource)."""
    return BufferBinding(resources[name].data, offset)
