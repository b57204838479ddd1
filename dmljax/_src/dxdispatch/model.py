"""DxDispatch's JSON model format (resources, dispatchables, commands), run on the default JAX
device. The reference is DxDispatch's Guide.md.

``Model.load(path)`` reads and checks the whole model before anything runs, in this order:

1. the file: a regular file, UTF-8 JSON (comments and trailing commas allowed), nested at most
   ``MAX_NESTING`` deep;
2. its structure, against ``model_schema.MODEL_SCHEMA`` (every structural problem at once, each
   with its JSON path); operator types come first, so a model using an operator dmljax does not
   implement stops on that;
3. each resource's initializer (values, data type, files) and size, without allocating it;
   each dispatchable's desc (validated through its operator's OpSpec); each command;
4. the memory the model needs (its buffers and what running its dispatches takes) against the
   memory available; only then are the buffers filled and every binding compiled.

Every problem is one ModelError naming the file and the part of the model at fault.

UINT4 and INT4 resources hold their elements packed two a byte, the first in the low nibble
(dml_tensor_data_type.md), as DirectML reads them: an array, constant or sequence initializer's
values are packed (an odd count leaves the last high nibble 0); a raw file's bytes are taken as
they are (two elements a byte); a ``.npy`` file holds one element a byte, as integers (INT8,
UINT8 or wider, in the type's range) or as 1-byte void elements (``|V1``, what ``np.save`` writes
for ml_dtypes' int4 and uint4 arrays: the value's code in the low nibble), and needs
``initialValuesDataType`` INT4 or UINT4 to say so. ``print`` shows the elements the initializer
wrote, ``writeFile`` writes the packed bytes to a raw file and the elements widened to INT8 or
UINT8 to a ``.npy`` file (which loads back with ``initialValuesDataType``). A binding's
``elementOffset`` counts elements, and must fall on a whole byte (an even count).
``Model.run()`` then executes the commands in order; side effects persist between commands, as in
DxDispatch's execution model.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import stat
import sys
import time
import tokenize
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, TextIO

import jax
import ml_dtypes
import numpy as np

from dmljax._src.buffers import BufferBinding, layout_plan
from dmljax._src.compile import CompiledOperator, _get_op, compile_operator
from dmljax._src.dtypes import DataType
from dmljax._src.dxdispatch import images
from dmljax._src.dxdispatch.schema import describe, structure_problems
from dmljax._src.errors import ValidationError
from dmljax._src.feature_level import resolve_feature_level
from dmljax._src.graph import (GRAPH_TYPE, CompiledGraph, DmlGraph, GraphNode, InputEdge, IntermediateEdge,
                               OutputEdge, input_slots)
from dmljax._src.memory import device_available, host_available

__all__ = ["ModelError", "Model", "Resource", "format_values", "load_json", "MAX_NESTING"]

MAX_NESTING = 64  # DxDispatch's own models nest 6 deep; this keeps every reader far from recursion limits
_EXECUTION_FLAGS = ("NONE", "ALLOW_HALF_PRECISION_COMPUTATION", "DISABLE_META_COMMANDS", "DESCRIPTORS_VOLATILE")
_COMPILE_TYPES = ("DmlCompileOp", "DmlCompileGraph")
_COMMAND_TYPES = ("dispatch", "print", "writeFile", "printInitTemporary", "printExecTemporary")
_TEMPORARY = {"printInitTemporary": "initialization", "printExecTemporary": "execution"}
"""DxDispatch's commands that print the temporary resource DirectML asks for at an operator's
initialization or execution (a model in models/other_refs uses them, with ``dataType`` and
``offset``): its contents are DirectML's scratch, which no caller may read as a result. A dmljax
operator asks for none (XLA holds its scratch inside the program), so the command checks its
members and prints that there is none."""
_NON_DML = {"hlsl": "an HLSL compute shader", "onnx": "an ONNX model",
            "dmlserializedgraph": "a DML serialized graph"}
_FLOAT_WORDS = {"nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf}
_JPEG_SPELLING = ".jpeg"  # not an image to DxDispatch (it reads .png and .jpg only): refused
# Memory per byte of model file while it is read, parsed and its arrays converted (measured: 6.4
# to parse an array of floats, and up to as much again, for a moment, to convert it).
_PARSE_FACTOR = 12
_PRINT_CHUNK = 1 << 16  # elements formatted at a time by print


class ModelError(ValueError):
    """A model dmljax cannot run: malformed, using what dmljax does not implement yet, or larger
    than the memory available.

    ``path`` is the model file, ``where`` the part of the model (``dispatchable 'add'``, or a JSON
    path such as ``commands[2].bindings.A``), and ``cause`` the underlying ValidationError when
    there is one.
    """

    def __init__(self, path: str | os.PathLike, where: str, message: str, cause: Exception | None = None):
        self.path = str(path)
        self.where = where
        self.cause = cause
        sep = "\n" if "\n" in message else " "
        super().__init__(f"{self.path}: {where}:{sep}{message}")


# ------------------------------------------------------------------------------------ JSON
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)'  # an unterminated one runs to the end: one linear scan
_COMMENT_OR_STRING = re.compile(_STRING + r"|//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_TRAILING_COMMA_OR_STRING = re.compile(_STRING + r"|,(?=\s*[\]}])", re.S)
_BRACKET_OR_STRING = re.compile(_STRING + r"|[\[\]{}]", re.S)


def _blank(match: re.Match) -> str:
    """A comment or trailing comma as spaces (newlines kept, so JSON errors keep their lines)."""
    text = match.group()
    return text if text.startswith('"') else re.sub(r"[^\n]", " ", text)


def load_json(text: str) -> Any:
    """JSON as DxDispatch reads it: also with // and /* */ comments and trailing commas.

    Raises ``json.JSONDecodeError`` for invalid JSON and for arrays and objects nested more than
    MAX_NESTING deep, and ValueError for an integer of more digits than Python converts.
    """
    if "/" in text:
        text = _COMMENT_OR_STRING.sub(_blank, text)
    if re.search(r",\s*[\]}]", text):
        text = _TRAILING_COMMA_OR_STRING.sub(_blank, text)
    depth = 0
    for m in _BRACKET_OR_STRING.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise json.JSONDecodeError(f"arrays and objects nested more than {MAX_NESTING} deep", text, m.start())
        elif c in "]}":
            depth -= 1
    return json.loads(text)


# ------------------------------------------------------------------------------- resources
@dataclasses.dataclass
class Resource:
    """A buffer resource: its bytes (a 1-D uint8 array, a multiple of 4 long, on the default
    device once the model is loaded) and the DataType of its initializer (None for the list
    initializer), which prints and writes it."""

    name: str
    data: Any  # None until the memory check has passed
    data_type: DataType | None
    initialized_bytes: int
    size_in_bytes: int
    initialized_elements: int | None = None  # 4-bit resources: the elements written, from byte 0


@dataclasses.dataclass
class _Fill:
    """How a resource's initial bytes are written: ``write(target)`` fills ``target``, a uint8
    array of the ``nbytes`` initial bytes at ``offset``; ``extra`` is the memory writing them
    takes beyond the buffer."""

    write: Callable[[np.ndarray], None]
    offset: int = 0
    nbytes: int = 0
    extra: int = 0


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _as_float(v) -> float:
    """A JSON number as a double; integers beyond the double range are infinite, as "1e999" is."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _convert(values: list, dt: DataType, what: str) -> np.ndarray:
    """JSON values as ``dt`` elements (little-endian). Floats: numbers or "nan"/"inf"/"-inf", read
    as a C float first (as DxDispatch's parser does) except for FLOAT64. Integers: integral
    numbers that the type holds; anything else is refused rather than wrapped."""
    le = dt.dtype.newbyteorder("<")
    if dt.is_float:
        out = []
        for v in values:
            if isinstance(v, str) and v.strip().lower() in _FLOAT_WORDS:
                out.append(_FLOAT_WORDS[v.strip().lower()])
            elif _is_number(v):
                out.append(_as_float(v))
            else:
                raise ValueError(f"{what} has {describe(v)}, not a number (or \"nan\", \"inf\", \"-inf\") for {dt.name}"
                                 if not isinstance(v, str) else
                                 f"{what} has {v[:60]!r}, not a number (or \"nan\", \"inf\", \"-inf\") for {dt.name}")
        arr = np.asarray(out, np.float64)
        with np.errstate(over="ignore"):
            if dt is not DataType.FLOAT64:
                arr = arr.astype(np.float32)
            return arr.astype(le)
    info = ml_dtypes.iinfo(dt.dtype)
    out = []
    for v in values:
        if not _is_number(v) or (isinstance(v, float) and not v.is_integer()):
            shown = f"{v[:60]!r}" if isinstance(v, str) else describe(v)
            raise ValueError(f"{what} has {shown}, not an integer, for {dt.name}")
        iv = int(v)
        if not info.min <= iv <= info.max:
            raise ValueError(f"{what} has {describe(v)}, outside {dt.name}'s range {info.min} to {info.max}")
        out.append(iv)
    if dt.bits < 8:
        return pack4(np.asarray(out, np.int64))
    return np.asarray(out, le)


def pack4(values: np.ndarray) -> np.ndarray:
    """4-bit values (integers in the type's range) packed two a byte, the first in the low
    nibble; an odd count leaves the last byte's high nibble 0."""
    codes = (np.asarray(values).reshape(-1).astype(np.int64) & 0xF).astype(np.uint8)
    if len(codes) % 2:
        codes = np.append(codes, np.uint8(0))
    return codes[0::2] | (codes[1::2] << 4)


def unpack4(data: np.ndarray, data_type: DataType) -> np.ndarray:
    """Bytes' nibbles as INT8 (sign-extended, for INT4) or UINT8 values, the low nibble first."""
    data = np.asarray(data, np.uint8)
    codes = np.stack([data & 0xF, data >> 4], axis=-1).reshape(-1)
    if data_type is DataType.INT4:
        return ((codes.astype(np.int8) ^ 8) - 8).astype(np.int8)
    return codes


def _npy_four_bit(values: np.ndarray, dt: DataType, what: str) -> np.ndarray:
    """A .npy file's elements (integers, or 1-byte void elements holding codes) as 4-bit values,
    checked."""
    if values.dtype.kind == "V":
        codes = values.view(np.uint8)
        bad = np.flatnonzero(codes > 0xF)
        if bad.size:
            raise ValueError(f"{what}: element {int(bad[0])} is the byte 0x{int(codes[bad[0]]):02X}, not a 4-bit "
                             "value's code (0x00 to 0x0F, as ml_dtypes stores int4 and uint4)")
        return codes
    info = ml_dtypes.iinfo(dt.dtype)
    bad = np.flatnonzero((values < info.min) | (values > info.max))
    if bad.size:
        raise ValueError(f"{what}: element {int(bad[0])} is {values.reshape(-1)[bad[0]]}, outside {dt.name}'s range "
                         f"{info.min} to {info.max}")
    return values


def _typed(target: np.ndarray, dt: DataType) -> np.ndarray:
    """A uint8 array (a whole number of elements long) viewed as little-endian ``dt`` elements."""
    return target.view(dt.dtype.newbyteorder("<"))


def _file_kind(mode: int) -> str:
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "not a regular file"


def _path_problem(text: str) -> str | None:
    """Why ``text`` cannot name a file on this system, or None."""
    if "\0" in text:
        return "has a NUL character"
    try:
        os.fsencode(text)
    except UnicodeEncodeError as e:  # a lone surrogate, from a JSON escape such as \ud800
        return f"has a character the file system cannot encode ({text[e.start]!r})"
    return None


def _source_file(base: Path, source: str) -> tuple[Path, int]:
    """The regular file ``sourcePath`` names (relative to the model, else to the current
    directory: DxDispatch's rule) and its size. Nothing is opened: a FIFO or a device is refused
    before it could block or never end."""
    what = f"initialValues.sourcePath {source!r}"
    problem = _path_problem(source)
    if problem:
        raise ValueError(f"{what} {problem}")
    for p in (base / source, Path(source).absolute()):
        try:
            st = os.stat(p)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as e:
            raise ValueError(f"{what} cannot be read ({e.strerror or e})") from None
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{what} is {_file_kind(st.st_mode)}; expected a file")
        if st.st_size == 0:
            raise ValueError(f"{what} is an empty file")
        return p, st.st_size
    raise ValueError(f"{what} does not exist (looked beside the model, {base / source}, and in the current directory)")


def _read_into(path: Path, offset: int, target: np.ndarray, what: str) -> None:
    """Exactly ``len(target)`` bytes of ``path`` from ``offset``, read straight into ``target``."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            got = f.readinto(memoryview(target))
    except OSError as e:
        raise ValueError(f"{what} cannot be read ({e.strerror or e})") from None
    if got != len(target):
        raise ValueError(f"{what} changed while it was read: {got} bytes instead of {len(target)}")


def _npy_header(path: Path, file_size: int, what: str) -> tuple[np.dtype, DataType, tuple[int, ...], bool, int]:
    """A .npy file's dtype (and DataType), shape, Fortran order and data offset, read from its
    header only (the data is read later, straight into the buffer), checked against the file's
    size."""
    fmt = np.lib.format
    try:
        # numpy evaluates the header as a Python literal: a corrupt one can also raise a
        # SyntaxWarning (e.g. "invalid escape sequence"), which is no concern of the user's.
        with open(path, "rb") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            version = fmt.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = fmt.read_array_header_2_0(f)
            else:
                raise ValueError(f"format version {version[0]}.{version[1]} is not supported (1.0 and 2.0 are)")
            data_offset = f.tell()
    except OSError as e:
        raise ValueError(f"{what} cannot be read ({e.strerror or e})") from None
    except (ValueError, TypeError, SyntaxError, tokenize.TokenError, EOFError, RecursionError, MemoryError) as e:
        # A .npy header is at most 10,000 bytes of Python literal (numpy tokenizes and evaluates
        # it); whatever its reader raises on a corrupt one means the same thing.
        reason = e.args[0] if isinstance(e, tokenize.TokenError) and e.args else str(e) or type(e).__name__
        raise ValueError(f"{what} is not a readable .npy file ({describe(str(reason), 120)[1:-1]})") from None
    dt = DataType.from_dtype(dtype.newbyteorder("="))
    if dt is None and not (dtype.kind == "V" and dtype.itemsize == 1 and dtype.fields is None):
        raise ValueError(f"{what} holds {dtype}, which is not a DirectML data type")
    count = math.prod(shape)
    if count == 0:
        raise ValueError(f"{what} holds an empty array (shape {shape})")
    nbytes = count * dtype.itemsize
    if data_offset + nbytes > file_size:
        raise ValueError(f"{what} is truncated: its header ({dtype}, shape {shape}) needs {nbytes} bytes of data, "
                         f"the file has {file_size - data_offset}")
    return dtype, dt, tuple(shape), bool(fortran), data_offset


def _plan_resource(name: str, spec: Mapping, base: Path) -> tuple[Resource, _Fill]:
    """A resource's data type, size and how to fill it, checked without allocating the buffer.
    The structure (member names and JSON types) has been checked by the schema."""
    if spec.get("type", "buffer") != "buffer":  # pragma: no cover  (the schema refuses it)
        raise ValueError("only buffers are resources")
    raw_type = spec.get("initialValuesDataType")
    dt: DataType | None = None
    unknown_type = False
    if raw_type is not None:
        if raw_type.upper() in ("UNKNOWN", "DML_TENSOR_DATA_TYPE_UNKNOWN"):
            unknown_type = True
        else:
            try:
                dt = DataType.parse(raw_type)
            except ValueError as e:
                raise ValueError(f"initialValuesDataType: {e}") from None
    init = spec["initialValues"]
    elements = None  # a 4-bit resource's count of initial elements

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
                if not isinstance(item, Mapping) or not {"type", "value"} <= set(item) <= {"type", "value", "name"}:
                    raise ValueError(f"initialValues[{i}] is {describe(item)}; list initializer items are "
                                     "{\"type\": ..., \"value\": ...} objects (and an optional name)")
                try:
                    it = DataType.parse(item["type"]) if isinstance(item["type"], str) else None
                except ValueError as e:
                    raise ValueError(f"initialValues[{i}].type: {e}") from None
                if it is None:
                    raise ValueError(f"initialValues[{i}].type is {describe(item['type'])}; "
                                     "expected a DML_TENSOR_DATA_TYPE name")
                if it.bits < 8:
                    raise ValueError(f"initialValues[{i}].type is {it.name}: a list initializer packs whole bytes, "
                                     "one item after another, and a 4-bit item would leave half of one; give 4-bit "
                                     "values in an array initializer")
                parts.append(_convert([item["value"]], it, f"initialValues[{i}]").view(np.uint8))
            data, dt = np.concatenate(parts), None
        else:
            t = need_type("array")
            if not init:
                raise ValueError("initialValues is an empty array (its size must be larger than 0)")
            data = _convert(init, t, "initialValues").view(np.uint8)
            if t.bits < 8:
                elements = len(init)
        nbytes = len(data)

        def write(target, data=data):
            target[:] = data
        fill = _Fill(write)
    elif isinstance(init, Mapping) and "sourcePath" in init:
        source = init["sourcePath"]
        what = f"initialValues.sourcePath {source!r}"
        suffix = Path(source).suffix.lower()
        if suffix == _JPEG_SPELLING:
            raise ValueError(f"{what}: DxDispatch reads only .png and .jpg files as images (it would read a .jpeg "
                             "file's raw bytes); name the picture .jpg")
        path, file_size = _source_file(base, source)
        if suffix in images.READ_SUFFIXES:
            return _plan_image(name, spec, path, need_type("image"), what)
        if path.suffix.lower() == ".npy":
            four = dt if dt is not None and dt.bits < 8 else None
            dtype, dt, shape, fortran, data_offset = _npy_header(path, file_size, what)
            if four is not None or dt is None:
                return _plan_four_bit_npy(name, spec, four, path, dtype, dt, shape, fortran, data_offset, what)
            nbytes = math.prod(shape) * dtype.itemsize

            def write(target, path=path, dtype=dtype, shape=shape, fortran=fortran, offset=data_offset, what=what):
                _read_into(path, offset, target, what)
                values = target.view(dtype)
                if dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big"):
                    values.byteswap(inplace=True)
                if fortran and len(shape) > 1:  # element order: C order, as NumPy's reshape(-1) gives
                    target[:] = np.ascontiguousarray(values.reshape(shape, order="F")).reshape(-1).view(np.uint8)
            fill = _Fill(write, nbytes if fortran and len(shape) > 1 else 0)
        else:
            if need_type("raw file").bits < 8:
                elements = 2 * file_size
            nbytes = file_size

            def write(target, path=path, what=what):
                _read_into(path, 0, target, what)
            fill = _Fill(write)
    elif isinstance(init, Mapping):
        t = need_type("constant" if "value" in init else "sequence")
        count = init["valueCount"]
        nbytes = (count * t.bits + 7) // 8
        if t.bits < 8:
            elements = count
            fill = _four_bit_fill(init, t, count)
        elif "value" in init:
            v = _convert([init["value"]], t, "initialValues.value")

            def write(target, t=t, v=v):
                _typed(target, t)[:] = v[0]
        else:
            start = _convert([init["valueStart"]], t, "initialValues.valueStart")
            delta = _convert([init["valueDelta"]], t, "initialValues.valueDelta")

            def write(target, t=t, start=start, delta=delta):
                # DxDispatch accumulates in the element type: value += delta, one rounding (or
                # wrap-around) per step, not start + i * delta.
                values = _typed(target, t)
                values[0] = start[0]
                values[1:] = delta[0]
                with np.errstate(over="ignore", invalid="ignore"):
                    np.cumsum(values, out=values)
        if t.bits >= 8:
            fill = _Fill(write)
    elif init == "deferred":
        raise ValueError("initialValues is \"deferred\", which only ONNX dispatchables use; not implemented in dmljax")
    else:
        raise ValueError(f"initialValues is {describe(init)}; expected an array, a constant, sequence or file "
                         "initializer object, or a list initializer")
    if "resampleSize" in spec or "resampleMode" in spec:
        raise ValueError("resampleSize/resampleMode apply only to image initializers (a .png or .jpg sourcePath)")
    return _sized(name, spec, dt, nbytes, fill, elements)


def _four_bit_fill(init: Mapping, t: DataType, count: int) -> _Fill:
    """A 4-bit constant or sequence initializer: its values packed (a sequence accumulates with
    4-bit wrap-around, as in the element type)."""
    def value(key):
        return int(unpack4(_convert([init[key]], t, f"initialValues.{key}"), t)[0])

    start, delta = (value("value"), 0) if "value" in init else (value("valueStart"), value("valueDelta"))

    def write(target, start=start, delta=delta, count=count):
        # start + i * delta has the nibble of i wrapped-around additions
        target[:] = pack4(start + np.arange(count, dtype=np.int64) * delta)
    return _Fill(write, extra=9 * count)


def _plan_four_bit_npy(name, spec, dt, path, dtype, file_dt, shape, fortran, data_offset, what):
    """A .npy file for a 4-bit resource: integers or 1-byte void elements (ml_dtypes' int4 and
    uint4 as np.save writes them), one element a byte, packed two a byte into the buffer."""
    if dt is None:
        raise ValueError(f"{what} holds 1-byte void elements ({dtype.str}), which is what np.save writes for "
                         "ml_dtypes' int4 and uint4 arrays: give initialValuesDataType INT4 or UINT4 to read them")
    if not (dtype.kind == "V" or (file_dt is not None and file_dt.is_integer)):
        raise ValueError(f"{what} holds {dtype}; a {dt.name} resource's .npy file holds integers (in {dt.name}'s "
                         "range) or 1-byte void elements (np.save of an ml_dtypes int4 or uint4 array)")
    count = math.prod(shape)

    def write(target, path=path, dtype=dtype, shape=shape, fortran=fortran, offset=data_offset, what=what):
        raw = np.empty(count * dtype.itemsize, np.uint8)
        _read_into(path, offset, raw, what)
        values = raw.view(dtype)
        if dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big"):
            values = values.byteswap()
        if fortran and len(shape) > 1:  # element order: C order, as NumPy's reshape(-1) gives
            values = np.ascontiguousarray(values.reshape(shape, order="F")).reshape(-1)
        target[:] = pack4(_npy_four_bit(values, dt, what))
    return _sized(name, spec, dt, (count + 1) // 2, _Fill(write, extra=count * (dtype.itemsize + 9)), count)


def _sized(name: str, spec: Mapping, dt: DataType | None, nbytes: int, fill: _Fill,
           elements: int | None = None) -> tuple[Resource, _Fill]:
    """The resource of ``nbytes`` initial bytes, with its offset, sizeInBytes and alignment
    (``elements``: a 4-bit resource's count of initial elements)."""
    offset = spec.get("initialValuesOffsetInBytes", 0)
    needed = offset + nbytes
    size = spec.get("sizeInBytes")
    if size is None:
        size = needed
    elif size < needed:
        raise ValueError(f"sizeInBytes is {size}, smaller than the {needed} bytes of its initial values"
                         + (f" at offset {offset}" if offset else ""))
    size = (size + 3) & ~3  # inflated to DirectML's 4-byte alignment
    fill.offset, fill.nbytes = offset, nbytes
    return Resource(name, None, dt, needed, size, None if elements is None else 2 * offset + elements), fill


def _plan_image(name: str, spec: Mapping, path: Path, dt: DataType, what: str) -> tuple[Resource, _Fill]:
    """An image initializer (``images``): its shape from ``resampleSize`` [1, C, H, W], C 3 (RGB)
    or 4 (RGBA), FLOAT32 or FLOAT16 elements, planar; the file's header is read now, the picture
    when the buffer is filled."""
    if dt not in (DataType.FLOAT32, DataType.FLOAT16):
        raise ValueError(f"{what} is an image; its initialValuesDataType must be FLOAT32 or FLOAT16 (DxDispatch "
                         f"converts pixels to those two), not {dt.name}")
    size = spec.get("resampleSize")
    if size is None:
        raise ValueError(f"{what} is an image: give resampleSize [1, C, H, W], the tensor it fills (C 3 for RGB, "
                         "4 for RGBA; the picture is scaled to H x W)")
    if len(size) != 4 or size[0] != 1:
        raise ValueError(f"resampleSize is {describe(size)}; it must have four dimensions in N,C,H,W order, N being 1")
    _, channels, height, width = size
    if channels not in (3, 4):
        raise ValueError(f"resampleSize's C is {channels}; an image initializer gives 3 channels (RGB) or 4 (RGBA)")
    if height < 1 or width < 1:
        raise ValueError(f"resampleSize {describe(size)} has an empty picture; H and W must be at least 1")
    mode = spec.get("resampleMode", "scale")
    if mode != "scale":
        raise ValueError(f"resampleMode is {describe(mode)}; it must be \"scale\" for image files (DxDispatch's only mode)")
    src_width, src_height = images.image_size(path, what)
    elements = channels * height * width

    def write(target, path=path, c=channels, h=height, w=width, dt=dt, what=what):
        target[:] = images.read_image(path, c, h, w, dt, what).reshape(-1).view(np.uint8)
    # decoded picture, its scaled bytes and their float32 values
    fill = _Fill(write, extra=images.pixel_bytes(src_width, src_height) + 5 * elements)
    return _sized(name, spec, dt, elements * (dt.bits // 8), fill)


def _build(res: Resource, fill: _Fill) -> jax.Array:
    """The resource's bytes, filled on the host and moved to the default device."""
    buf = np.zeros(res.size_in_bytes, np.uint8)
    fill.write(buf[fill.offset:fill.offset + fill.nbytes])
    # Wait for the copy, so that this host buffer is freed before the next one is filled.
    return jax.block_until_ready(jax.device_put(buf))


# -------------------------------------------------------------------------------- memory
def _memory_available() -> tuple[int | None, int | None]:
    """(host bytes, device bytes or None when the device is the host's memory). Tests replace it."""
    return host_available(), device_available()


def _bytes_text(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n} bytes ({n / scale:.1f} {unit})"
    return f"{n} bytes"


# ---------------------------------------------------------------------------------- output
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


# ---------------------------------------------------------------------------------- model
@dataclasses.dataclass
class _Dispatchable:
    name: str
    type: str
    compiled: CompiledOperator | CompiledGraph
    init_bindings: dict[str, tuple[str, int]]
    desc: Any = None
    in_graph: bool = False  # a node of a DML_GRAPH_DESC dispatchable

@dataclasses.dataclass
class _Command:
    index: int
    kind: str
    fields: dict
    where: str  # the command, as messages name it


def _q(name: str) -> str:
    """A name from the model, quoted for a message: control characters escaped, cut at 60."""
    return repr(name if len(name) <= 60 else name[:60] + "...")


_MAX_SHOWN = 20  # structural problems listed in one message


def _structure_error(path: Path, problems: list[tuple[str, str]]) -> ModelError:
    if len(problems) == 1:
        return ModelError(path, *problems[0])
    lines = [f"  {where}: {message}" for where, message in problems[:_MAX_SHOWN]]
    if len(problems) > _MAX_SHOWN:
        lines.append(f"  and {len(problems) - _MAX_SHOWN} more")
    return ModelError(path, f"{len(problems)} problems in the model's structure", "\n".join(lines))


def _read_model(path: Path) -> Any:
    """The parsed JSON of a model file: a regular file, small enough to parse in the memory
    available, UTF-8 (a byte-order mark is allowed), JSON as load_json reads it."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ModelError(path, "file", f"cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ModelError(path, "file", f"is {_file_kind(st.st_mode)}; expected a model's .json file")
    host, _ = _memory_available()
    need = st.st_size * _PARSE_FACTOR
    if host is not None and need > host:
        raise ModelError(path, "memory", f"the file is {_bytes_text(st.st_size)}; reading it needs about "
                         f"{_bytes_text(need)} of memory and {_bytes_text(host)} are available")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ModelError(path, "file", f"cannot be read ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        binary = b"\0" in data[:4096]
        raise ModelError(path, "file", f"is not UTF-8 text (byte 0x{data[e.start]:02X} at offset {e.start})"
                         + ("; it looks like a binary file" if binary else "")) from None
    del data
    try:
        return load_json(text)
    except json.JSONDecodeError as e:
        raise ModelError(path, "file", f"is not valid JSON: {e}") from None
    except ValueError:  # int(): more digits than Python converts (sys.get_int_max_str_digits)
        raise ModelError(path, "file", f"has an integer of more than {sys.get_int_max_str_digits()} digits, "
                         "more than Python reads (and than any size or value of a model needs)") from None


def _is_type_name(t) -> bool:
    if isinstance(t, bool):
        return False
    return isinstance(t, int) or (isinstance(t, str) and re.fullmatch(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*", t) is not None)


class Model:
    """A loaded, checked DxDispatch model (see the module docstring)."""

    out_dir: Path | None = None  # where relative writeFile targets go (load's out_dir)
    overwrite: bool = True

    def target(self, target_path: str) -> Path:
        """Where a writeFile command writes: relative to ``out_dir`` when one is given, else to
        the model file's folder, as DxDispatch resolves it; an absolute path as it is."""
        return (self.out_dir if self.out_dir is not None else self.path.parent) / target_path

    def writes_files(self) -> bool:
        """Whether a command writes a file."""
        return any(c.kind == "writeFile" for c in self.commands)

    def __init__(self, path: Path, resources, dispatchables, commands):
        self.path = path
        self.resources: dict[str, Resource] = resources
        self.dispatchables: dict[str, _Dispatchable] = dispatchables
        self.commands: list[_Command] = commands
        self.notes: list[str] = []  # what loading changed, in words (a graph's edges set right)

    # ---- loading
    @classmethod
    def load(cls, path: str | os.PathLike, *, feature_level=None, out_dir: str | os.PathLike | None = None,
             overwrite: bool = True) -> "Model":
        """Read and check a model. ``out_dir``: the folder a writeFile's relative targetPath is
        resolved in (created, with the target's subfolders, when the first file is written);
        None: the model's folder, as DxDispatch does. ``overwrite=False`` refuses a target that
        exists already."""
        path = Path(path)
        root = _read_model(path)
        problems = structure_problems(root)
        # Operator types first: a model using one dmljax does not implement stops on that.
        if isinstance(root, Mapping) and isinstance(root.get("dispatchables"), Mapping):
            for name, spec in root["dispatchables"].items():
                if isinstance(spec, Mapping) and _is_type_name(spec.get("type")):
                    cls._check_type(path, name, spec["type"], feature_level)
        if problems:
            raise _structure_error(path, problems)
        resources, fills = {}, {}
        for name, spec in root["resources"].items():
            try:
                resources[name], fills[name] = _plan_resource(name, spec, path.parent)
            except ValueError as e:
                raise ModelError(path, f"resource {_q(name)}", str(e)) from None
        dispatchables = {name: cls._load_dispatchable(path, name, spec, resources, feature_level)
                         for name, spec in root["dispatchables"].items() if not _is_graph(spec["type"])}
        notes: list[str] = []
        for name, spec in root["dispatchables"].items():
            if _is_graph(spec["type"]):
                dispatchables[name] = _load_graph(path, name, spec, dispatchables, resources, feature_level, notes)
        dispatchables = {name: dispatchables[name] for name in root["dispatchables"]}  # the file's order
        model = cls(path, resources, dispatchables, [])
        model.notes = notes
        model.out_dir = None if out_dir is None else Path(out_dir)
        model.overwrite = overwrite
        for i, spec in enumerate(root["commands"]):
            model.commands.append(model._load_command(i, spec))
        model._check_memory(fills)
        for name, res in resources.items():
            try:
                res.data = _build(res, fills.pop(name))
            except ValueError as e:  # a source file that changed since, or a picture that does not decode
                raise ModelError(path, f"resource {_q(name)}", str(e)) from None
        model._check_bindings()
        return model

    @staticmethod
    def _check_type(path, name, type_, feature_level) -> None:
        where = f"dispatchable {_q(name)}"
        if _is_graph(type_):
            return
        if isinstance(type_, str) and type_.lower() in _NON_DML:
            raise ModelError(path, where, f"is {_NON_DML[type_.lower()]} ({type_!r}); dmljax runs DirectML operator "
                             "dispatchables only")
        try:
            _get_op(type_, resolve_feature_level(feature_level))
        except ValidationError as e:
            raise ModelError(path, f"{where} ({type_})", str(e), e) from None

    @staticmethod
    def _load_dispatchable(path, name, spec, resources, feature_level) -> _Dispatchable:
        # The schema has checked the members' JSON types, and _check_type the operator type.
        type_ = spec["type"]
        where = f"dispatchable {_q(name)} ({type_})"
        desc = spec["desc"] if "desc" in spec else spec["Desc"]
        ctype = spec.get("dmlCompileType", "DmlCompileOp")
        if ctype not in _COMPILE_TYPES:
            raise ModelError(path, where, f"has dmlCompileType {ctype!r}; valid: {', '.join(_COMPILE_TYPES)}")
        flags = spec.get("executionFlags", [])
        parsed = set()
        for f in [flags] if isinstance(flags, str) else flags:
            key = f.strip().upper()
            if key.startswith("DML_EXECUTION_FLAG_"):
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
        return _Dispatchable(name, str(type_), compiled, _initial_bindings(spec, resources, path, where), desc)

    def _load_command(self, i: int, spec) -> _Command:
        # The schema has checked the members and their JSON types of the three command types.
        path = self.path
        kind = spec["type"]
        where = f"command {i} ({kind if _is_type_name(kind) else _q(kind)})"
        if kind not in _COMMAND_TYPES:
            raise ModelError(path, where, f"is not a command type; valid: {', '.join(_COMMAND_TYPES)}")
        fields = dict(spec)
        if kind == "dispatch":
            dname = spec["dispatchable"]
            if dname not in self.dispatchables:
                known = f"; dispatchables: {', '.join(map(_q, self.dispatchables))}" if self.dispatchables else ""
                raise ModelError(path, where, f"names dispatchable {_q(dname)}, which the model does not define{known}")
            where = f"command {i} (dispatch of {_q(dname)})"
            bindings = {}
            for point, value in spec.get("bindings", {}).items():
                try:
                    bindings.update(_parse_bindings(point, value, self.resources))
                except ValueError as e:
                    raise ModelError(path, f"{where}, binding {_q(point)}", str(e)) from None
            fields["bindings"] = bindings
            return _Command(i, kind, fields, where)
        if kind in _TEMPORARY:
            if "dataType" in spec:
                try:
                    DataType.parse(spec["dataType"])
                except ValueError as e:
                    raise ModelError(path, where, f"dataType: {e}") from None
            return _Command(i, kind, fields, where)
        rname = spec["resource"]
        if rname not in self.resources:
            raise ModelError(path, where, f"names resource {_q(rname)}, which the model does not define")
        res = self.resources[rname]
        if res.data_type is None:
            raise ModelError(path, where, f"resource {_q(rname)} has a list initializer (UNKNOWN type); "
                             "there is no element type to print or write it with")
        if kind == "writeFile":
            target = spec["targetPath"]
            problem = _path_problem(target)
            if problem:
                raise ModelError(path, where, f"targetPath {target!r} {problem}")
            suffix = Path(target).suffix.lower()
            if suffix == _JPEG_SPELLING:
                raise ModelError(path, where, f"targetPath {target!r}: DxDispatch writes images only to .png and .jpg "
                                 "files (a .jpeg file would get the raw bytes); name it .jpg")
            dest = self.target(target)
            inside = self.out_dir is not None and not Path(target).is_absolute()
            if not inside and not dest.parent.is_dir():
                raise ModelError(path, where, f"targetPath {target!r}: the folder {str(dest.parent)!r} does not exist "
                                 "(dmljax creates files, not folders)")
            if not self.overwrite and os.path.lexists(dest):
                raise ModelError(path, where, f"targetPath {target!r}: {str(dest)!r} exists; dmljax run overwrites "
                                 "nothing unless --force is given (or give --out a fresh folder)")
            try:
                mode = os.stat(dest).st_mode
            except OSError:
                mode = None
            if mode is not None and (stat.S_ISDIR(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
                raise ModelError(path, where, f"targetPath {target!r} is {_file_kind(mode)}; expected a file")
            dims = spec.get("dimensions")
            if suffix in images.READ_SUFFIXES:
                problem = _image_output_problem(dims or [], res, suffix)
                if problem:
                    raise ModelError(path, where, f"writes the image {target!r}: {problem}")
            elif dims is not None:
                need = (math.prod(dims) * res.data_type.bits + 7) // 8
                if need > res.size_in_bytes:
                    raise ModelError(path, where, f"dimensions {describe(dims)} need {need} bytes; resource "
                                     f"{_q(rname)} has {res.size_in_bytes}")
        return _Command(i, kind, fields, where)

    def _running_bytes(self, cmd: _Command) -> int:
        """Memory a dispatch takes beyond the buffers: a new buffer for each resource it writes,
        and intermediate tensors, at most every tensor of the operator (plus a gather's indices)."""
        d = self.dispatchables[cmd.fields["dispatchable"]]
        if isinstance(d.compiled, CompiledGraph):
            written = {r for p, (r, _) in cmd.fields["bindings"].items() if p.startswith("out_")}
            return sum(self.resources[n].size_in_bytes for n in written) + d.compiled.running_bytes()
        outputs = {t.dml_name for t in d.compiled.spec.outputs}
        written = {r for p, (r, _) in cmd.fields["bindings"].items() if p in outputs}
        total = sum(self.resources[n].size_in_bytes for n in written)
        for desc in d.compiled.tensor_descs.values():
            if desc is not None:
                total += desc.element_count * max(1, desc.data_type.bits // 8)
                if layout_plan(desc.sizes, desc.effective_strides).kind == "gather":
                    total += 16 * desc.element_count  # int64 indices, on the host and in the program
        return total

    def _check_memory(self, fills: dict[str, _Fill]) -> None:
        """Refuse a model that needs more memory than is available, before allocating anything."""
        buffers = sum(r.size_in_bytes for r in self.resources.values())
        staging = max((r.size_in_bytes + fills[n].extra for n, r in self.resources.items()), default=0)
        running = max((self._running_bytes(c) for c in self.commands if c.kind == "dispatch"), default=0)
        host, device = _memory_available()
        count = f"{len(self.resources)} buffer{'s' if len(self.resources) != 1 else ''}"
        if device is None:  # the device's memory is the host's
            checks = [("", buffers, max(staging, running), host, "MemAvailable")]
        else:
            checks = [("device ", buffers, running, device, f"on {jax.devices()[0].device_kind}"),
                      ("host ", 0, staging, host, "MemAvailable")]
        for kind, held, extra, available, source in checks:
            if available is not None and held + extra > available:
                parts = (f"{held} for its {count} and {extra} more to fill and run them" if held
                         else "to fill its largest buffer")
                raise ModelError(self.path, "memory", f"the model needs {_bytes_text(held + extra)} of {kind}memory: "
                                 f"{parts}; {_bytes_text(available)} are available ({source})")

    def _check_bindings(self) -> None:
        """Every binding checked against its buffer and compiled (DxDispatch's initialization)."""
        def bound(bindings):  # the loaded buffers (the same object for the same resource)
            return {p: BufferBinding(self.resources[r].data, off) for p, (r, off) in bindings.items()}

        dispatched = {c.fields["dispatchable"] for c in self.commands if c.kind == "dispatch"}
        for d in self.dispatchables.values():
            if d.in_graph and d.name not in dispatched:  # its OWNED_BY_DML inputs are the graph's
                continue
            try:
                d.compiled.initialize(bound(d.init_bindings))
            except ValidationError as e:
                where = f"dispatchable {_q(d.name)} ({d.type}), initialization bindings"
                raise ModelError(self.path, where, str(e), e) from None
            finally:
                if isinstance(d.compiled, CompiledOperator):
                    d.compiled._owned_values = None
        for cmd in self.commands:
            if cmd.kind != "dispatch":
                continue
            d = self.dispatchables[cmd.fields["dispatchable"]]
            try:
                d.compiled.initialize(bound(d.init_bindings))
                d.compiled.prepare(bound(cmd.fields["bindings"]))
            except ValidationError as e:
                raise ModelError(self.path, cmd.where, str(e), e) from None
            finally:
                if isinstance(d.compiled, CompiledOperator):
                    d.compiled._owned_values = None  # bound for real when the model runs

    # ---- running
    def run(self, out: TextIO | None = None, *, iterations: int = 1, repeat: int = 1, warmup: int = 1,
            timing_verbosity: int = 0, timing: bool = True) -> None:
        """Run the commands in order, writing what DxDispatch writes to ``out``. The resources
        then hold their final bytes (their loaded arrays are used, and donated, in place)."""
        if iterations < 1 or repeat < 1 or warmup < 0:
            raise ValueError(f"iterations ({iterations}) and repeat ({repeat}) must be at least 1, warmup "
                             f"({warmup}) at least 0")
        out = out or sys.stdout
        device = jax.devices()[0]
        print(f"Running on '{device.device_kind}' ({device.platform})", file=out)
        state = {n: r.data for n, r in self.resources.items()}
        for r in self.resources.values():  # held by ``state`` only, so a replaced buffer is freed at once
            r.data = None
        where = "initialization"
        try:
            dispatched = {c.fields["dispatchable"] for c in self.commands if c.kind == "dispatch"}
            for d in self.dispatchables.values():  # initialization: OWNED_BY_DML tensors copied now
                if d.in_graph and d.name not in dispatched:
                    continue
                d.compiled.initialize({p: BufferBinding(state[r], off) for p, (r, off) in d.init_bindings.items()})
            for cmd in self.commands:
                where = cmd.where
                if cmd.kind == "dispatch":
                    self._dispatch(cmd, state, out, iterations, repeat, warmup, timing_verbosity, timing)
                elif cmd.kind == "print":
                    self._print(cmd, state, out)
                elif cmd.kind in _TEMPORARY:
                    print(f"Temporary resource ({_TEMPORARY[cmd.kind]}): none; dmljax's operators ask for no "
                          "temporary resource", file=out)
                else:
                    self._write(cmd, state, out)
        except jax.errors.JaxRuntimeError as e:
            if "RESOURCE_EXHAUSTED" not in str(e):
                raise
            raise ModelError(self.path, where, "ran out of memory on the device: "
                             + str(e).strip().splitlines()[0][:300]) from None
        finally:
            for n, r in self.resources.items():
                r.data = state[n]

    def _dispatch(self, cmd, state, out, iterations, repeat, warmup, verbosity, timing):
        d = self.dispatchables[cmd.fields["dispatchable"]]
        samples = []
        for _ in range(iterations):
            t0 = time.perf_counter()
            for _ in range(repeat):
                bindings = {p: BufferBinding(state[r], off) for p, (r, off) in cmd.fields["bindings"].items()}
                results = d.compiled(bindings)
                for point, value in results.items():
                    state[cmd.fields["bindings"][point][0]] = value
                jax.block_until_ready(list(results.values()))
            samples.append((time.perf_counter() - t0) * 1000 / repeat)
        if not timing:
            return
        cold_n = min(len(samples) - 1, warmup)
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

    def _elements(self, name, state, nbytes, count=None) -> np.ndarray:
        """The first ``nbytes`` of a resource (whole elements) as its elements, on the host; a
        view of the device buffer where the device is the CPU. 4-bit elements are unpacked to
        INT8 or UINT8 values, the first ``count`` of them (default: two a byte)."""
        res = self.resources[name]
        data = np.asarray(jax.device_get(state[name]))
        if res.data_type.bits < 8:
            return unpack4(data[:nbytes], res.data_type)[:count]
        es = res.data_type.bits // 8
        return _typed(data[: nbytes // es * es], res.data_type)

    def _print(self, cmd, state, out):
        name = cmd.fields["resource"]
        res = self.resources[name]
        values = self._elements(name, state, res.initialized_bytes, res.initialized_elements)
        chunks = range(0, len(values), _PRINT_CHUNK)  # formatted a chunk at a time: memory stays flat
        if not cmd.fields.get("verbose", False):
            out.write(f"Resource '{name}': ")
            for start in chunks:
                out.write((", " if start else "") + ", ".join(format_values(values[start:start + _PRINT_CHUNK])))
            out.write("\n")
            return
        print(f"Resource '{name}':", file=out)
        width = len(str(len(values) - 1)) if len(values) > 1 else 1
        itemsize = values.dtype.itemsize
        raw = values.view(f"<u{itemsize}") if itemsize > 1 else values.view(np.uint8)
        digits = itemsize * 2
        if res.data_type.bits < 8:  # a nibble's code
            raw, digits = raw & 0xF, 1
        for start in chunks:
            texts = format_values(values[start:start + _PRINT_CHUNK])
            for i, (t, r) in enumerate(zip(texts, raw[start:start + _PRINT_CHUNK]), start):
                print(f"[{i:>{width}}] {t} (0x{int(r):>{digits}X})", file=out)

    def _write(self, cmd, state, out):
        name = cmd.fields["resource"]
        res = self.resources[name]
        target = cmd.fields["targetPath"]
        dest = self.target(target)
        try:
            if self.out_dir is not None and not Path(target).is_absolute():
                dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "wb") as f:
                if dest.suffix.lower() in images.READ_SUFFIXES:
                    c, h, w = _image_shape(cmd.fields.get("dimensions") or [])
                    values = self._elements(name, state, c * h * w * (res.data_type.bits // 8))  # FLOAT only
                    images.write_image(f, dest.suffix.lower(), values, c, h, w)
                elif dest.suffix.lower() == ".npy":
                    values = self._elements(name, state, res.size_in_bytes)
                    dims = cmd.fields.get("dimensions")
                    if dims:
                        values = values[: math.prod(dims)].reshape(dims)
                    np.save(f, values, allow_pickle=False)
                else:
                    f.write(memoryview(np.asarray(jax.device_get(state[name]))))
        except (OSError, ValueError) as e:  # ValueError: Pillow's encoders
            raise ModelError(self.path, cmd.where, f"cannot write {target!r} ({getattr(e, 'strerror', None) or e})") from None
        print(f"Resource '{name}' written to '{target}'", file=out)


def _image_shape(dims) -> tuple[int, int, int]:
    """(C, H, W) of the first picture of writeFile's ``dimensions`` [N, C, H, W] (DxDispatch's
    Executor: a missing dimension is 1)."""
    return tuple(int(dims[i]) if len(dims) > i else 1 for i in (1, 2, 3))


def _image_output_problem(dims, res: Resource, suffix: str) -> str | None:
    try:
        images.require_pillow()
    except ValueError as e:
        return str(e)
    if res.data_type not in (DataType.FLOAT32, DataType.FLOAT16):
        return f"the resource holds {res.data_type.name}; pictures are written from FLOAT32 or FLOAT16 values"
    if len(dims) > 4:
        return f"dimensions {describe(dims)} has {len(dims)} entries; a picture's are [N, C, H, W]"
    c, h, w = _image_shape(dims)
    if c not in (1, 3, 4):
        return f"dimensions {describe(dims)} gives {c} channels; a picture has 1 (grey), 3 (RGB) or 4 (RGBA)"
    need = c * h * w * (res.data_type.bits // 8)
    if need > res.size_in_bytes:
        return f"a {c} x {h} x {w} picture needs {need} bytes; the resource has {res.size_in_bytes}"
    if suffix == ".jpg" and max(h, w) > images.JPEG_MAX_SIDE:
        return f"a {h} x {w} picture is larger than a JPEG holds ({images.JPEG_MAX_SIDE} a side); write a .png"
    return None


def _median(samples) -> float:
    """DxDispatch's median: the middle of the sorted samples (the upper one for an even count)."""
    if not samples:
        return 0.0
    s = sorted(samples)
    return s[len(s) // 2]


def _parse_bindings(point: str, value, resources: Mapping[str, Resource]) -> dict[str, tuple[str, int]]:
    """A bind point's bindings: one (a string, an object or a one-item list) as {point: (resource,
    offset)}; several (a list: an array bind point such as JOIN's InputTensors) as
    {"InputTensors[0]": ..., "InputTensors[1]": ...}, which the operator checks against its desc."""
    if isinstance(value, list) and len(value) != 1:
        if not value:
            raise ValueError("binds no resource (an empty list)")
        out = {}
        for i, v in enumerate(value):
            try:
                out[f"{point}[{i}]"] = _parse_binding(v, resources)
            except ValueError as e:
                raise ValueError(f"item {i}: {e}") from None
        return out
    return {point: _parse_binding(value, resources)}


def _parse_binding(value, resources: Mapping[str, Resource]) -> tuple[str, int]:
    """A binding (string, object, or a one-item list; the schema has checked which) as (resource
    name, byte offset)."""
    if isinstance(value, list):
        value = value[0]
    if isinstance(value, str):
        name, offset_el, el_size = value, 0, None
    else:
        if "name" not in value:
            raise ValueError("has no name (the resource to bind)")
        name = value["name"]
        offset_el = value.get("elementOffset", 0)
        el_size = value.get("elementSizeInBytes", value.get("elementStride"))
    if name not in resources:
        raise ValueError(f"names resource {_q(name)}, which the model does not define")
    res = resources[name]
    if el_size is None:
        if res.data_type is None and offset_el:
            raise ValueError(f"resource {_q(name)} has a list initializer: give elementSizeInBytes with elementOffset")
        if res.data_type is not None and res.data_type.bits < 8:
            if offset_el % 2:
                raise ValueError(f"elementOffset {offset_el} of {res.data_type.name} resource {_q(name)} falls inside a "
                                 "byte (two elements a byte); a binding starts at a whole byte: an even elementOffset")
            offset_el, el_size = offset_el // 2, 1
        else:
            el_size = res.data_type.bits // 8 if res.data_type is not None else 1
    offset = offset_el * el_size
    if offset > res.size_in_bytes:
        raise ValueError(f"elementOffset {offset_el} ({offset} bytes) is past the end of resource {_q(name)} "
                         f"({res.size_in_bytes} bytes)")
    return name, offset


# ------------------------------------------------------------------------- graphs
def _is_graph(type_) -> bool:
    return isinstance(type_, str) and type_.strip().upper() == GRAPH_TYPE


def _load_graph(path, name, spec, dispatchables, resources, feature_level, notes) -> _Dispatchable:
    """A DML_GRAPH_DESC dispatchable: its nodes name operator dispatchables of the model; its
    bind points are ``in_i`` and ``out_i``; its own bindings bind inputs once, at initialization."""
    # The schema has checked the desc's members and their JSON types.
    where = f"dispatchable {_q(name)} ({GRAPH_TYPE})"
    desc = spec["desc"]
    nodes = []
    for i, n in enumerate(desc["Nodes"]):
        d = dispatchables.get(n["Name"])
        if d is None:
            known = [k for k, v in dispatchables.items() if isinstance(v.compiled, CompiledOperator)]
            raise ModelError(path, f"{where}, Nodes[{i}]", f"names dispatchable {_q(n['Name'])}, which the model does not "
                             "define as a DirectML operator" + (f"; operators: {', '.join(map(_q, known))}" if known else ""))
        d.in_graph = True
        nodes.append((d, GraphNode(n["Name"], d.compiled.spec.enum_name, d.desc)))
    inputs = [InputEdge(e["GraphInputIndex"], e["ToNodeIndex"], e["ToNodeInputIndex"], e.get("Name", ""))
              for e in desc.get("InputEdges", [])]
    middle = [IntermediateEdge(e["FromNodeIndex"], e["FromNodeOutputIndex"], e["ToNodeIndex"], e["ToNodeInputIndex"],
                               e.get("Name", "")) for e in desc.get("IntermediateEdges", [])]
    middle = _mend_edges(nodes, inputs, middle, where, notes)
    outputs = [OutputEdge(e["FromNodeIndex"], e["FromNodeOutputIndex"], e["GraphOutputIndex"], e.get("Name", ""))
               for e in desc["OutputEdges"]]
    graph = DmlGraph([g for _, g in nodes], inputs, outputs, middle, desc["InputCount"], desc["OutputCount"])
    flags = spec.get("executionFlags", [])
    flags = {f.strip().upper().removeprefix("DML_EXECUTION_FLAG_") for f in ([flags] if isinstance(flags, str) else flags)}
    bad = flags - set(_EXECUTION_FLAGS)
    if bad:
        raise ModelError(path, where, f"has execution flag {sorted(bad)[0]!r}; valid: "
                         + ", ".join("DML_EXECUTION_FLAG_" + x for x in _EXECUTION_FLAGS))
    try:
        compiled = graph.compile(feature_level=feature_level,
                                 allow_half_precision_computation="ALLOW_HALF_PRECISION_COMPUTATION" in flags)
    except ValidationError as e:
        raise ModelError(path, where, str(e), e) from None
    return _Dispatchable(name, GRAPH_TYPE, compiled, _initial_bindings(spec, resources, path, where), desc)


def _initial_bindings(spec: dict, resources, path, where: str) -> dict:
    """A dispatchable's own ``bindings`` (bound once, at initialization), parsed."""
    init = {}
    for point, value in spec.get("bindings", {}).items():
        try:
            init.update(_parse_bindings(point, value, resources))
        except ValueError as e:
            raise ModelError(path, f"{where}, binding {_q(point)}", str(e)) from None
    return init


def _mend_edges(nodes, inputs, middle, where, notes) -> list:
    """DxDispatch's graph sample (models/other_refs/dml_graph_quadratic.json, from a branch in
    progress) feeds one node input twice and leaves another input of the same node unfed.
    Where that is unambiguous (a node with exactly one doubly-fed input and exactly one unfed
    one), the later intermediate edge is taken as feeding the unfed input, and a note says so;
    anything else is left for the graph's own check, which refuses it."""
    fed: dict[tuple[int, int], int] = {}
    for e in inputs:
        fed[(e.to_node, e.to_input)] = fed.get((e.to_node, e.to_input), 0) + 1
    for e in middle:
        fed[(e.to_node, e.to_input)] = fed.get((e.to_node, e.to_input), 0) + 1
    out = list(middle)
    for node, (d, g) in enumerate(nodes):
        slots = input_slots(d.compiled)
        twice = [i for i in range(len(slots)) if fed.get((node, i), 0) == 2]
        unfed = [i for i, m in enumerate(slots) if m is not None and fed.get((node, i), 0) == 0]
        if len(twice) != 1 or len(unfed) != 1 or any(fed.get((node, i), 0) > 2 for i in range(len(slots))):
            continue
        late = [k for k, e in enumerate(out) if (e.to_node, e.to_input) == (node, twice[0])]
        if not late:
            continue
        k = late[-1]
        e = out[k]
        out[k] = dataclasses.replace(e, to_input=unfed[0])
        notes.append(f"{where}: IntermediateEdges[{k}] ({e.name or 'unnamed'}) feeds input {twice[0]} "
                     f"({slots[twice[0]]}) of node {node} ({g.name}), which another edge feeds, and input "
                     f"{unfed[0]} ({slots[unfed[0]]}) has no edge: it is taken as feeding input {unfed[0]} "
                     "(DirectML would refuse the graph as written)")
    return out
