"""Static checks of one call against its OpSpec, at trace time, before anything is computed.

Every violation is collected and raised once as a ValidationError. Only shapes, dtypes and
Python attribute values are read, so ``jax.eval_shape`` and tracers go through the same checks.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import struct
from typing import Mapping

import jax
import numpy as np

from dmljax._src.dtypes import DataType, x64_enabled
from dmljax._src.errors import ValidationError, Violation, quote
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.params import ParamContext, check_param
from dmljax._src.spec import INFERRED, OpSpec, SameDataType, SameSizes

__all__ = ["TensorInfo", "CheckedCall", "check_call", "describe_tensor", "static_key", "MAX_ELEMENTS"]

X64_TIP = (
    "turn on JAX's 64-bit mode first: jax.config.update('jax_enable_x64', True), or set "
    "JAX_ENABLE_X64=1 before Python starts (dmljax never switches it on for you)"
)
MAX_ELEMENTS = 2**32 - 1  # "may not exceed (2^32 - 1) elements" (dml_buffer_tensor_desc.md)
NO_FLOAT64 = frozenset({"tpu"})
"""Backends (``jax.default_backend()``) whose XLA does not compute FLOAT64 in 64 bits: a FLOAT64
tensor is refused there, since DirectML's FLOAT64 rounding could not be kept."""
FLOAT64_TIP = ("run it on a CPU or GPU (jax.default_device(jax.devices('cpu')[0])), or cast to FLOAT32 "
               "explicitly; dmljax never narrows a type for you")


def default_platform() -> str:
    """The platform operators compile for by default (read at each call)."""
    return jax.default_backend()


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    data_type: DataType


@dataclasses.dataclass(frozen=True)
class CheckedCall:
    """What validation established: every tensor's DataType and Sizes, and the attributes in
    their static, normalized form (FLOATs rounded to float32, ScaleBias as a ScaleBias)."""

    spec: OpSpec
    level: FeatureLevel
    tensors: Mapping[str, TensorInfo]
    attrs: Mapping[str, object]


def _types_text(types) -> str:
    return ", ".join(t.name for t in types)


_ARRAY_TYPES = (jax.Array, jax.core.Tracer, np.ndarray, np.generic, jax.ShapeDtypeStruct)
"""What a tensor argument may be: what JAX takes as it is (and ShapeDtypeStructs, which
compile_operator validates and jax.eval_shape turns into tracers)."""


def _is_tensor(value: object) -> bool:
    return isinstance(value, _ARRAY_TYPES) and not isinstance(value, np.ma.MaskedArray)


def describe_tensor(value: object) -> tuple[tuple[int, ...], np.dtype] | str:
    """(shape, dtype) of an array JAX takes as it is (a JAX array or tracer, a NumPy array or
    scalar, a ShapeDtypeStruct under ``jax.eval_shape``), or a phrase saying why it is not one."""
    kind = quote(type(value).__name__).strip("'")
    if isinstance(value, (bool, int, float, complex, list, tuple)) or value is None:
        return f"is a Python {kind}, not an array"
    if isinstance(value, np.ma.MaskedArray):
        return ("is a NumPy masked array; DirectML tensors have no mask, and JAX would drop it "
                "silently (pass np.ma.getdata(x) or x.filled(value))")
    if not isinstance(value, _ARRAY_TYPES):
        return f"is a {kind}, not an array"
    try:
        shape = tuple(int(d) for d in value.shape)
        dtype = np.dtype(value.dtype)
    except Exception:  # noqa: BLE001  (a symbolic dimension, an extended dtype such as a PRNG key)
        return f"is a {kind} whose shape or dtype is not an array's"
    return shape, dtype


_KEY_DEPTH = 16


_PACK_DOUBLE = struct.Struct("<d").pack
_PLAIN = frozenset({str, int, bool, type(None)})  # hashable, and == tells values of one type apart


def static_key(value: object, _depth: int = 0) -> object:
    """A cache key that tells apart what ``==`` does not: -0.0 from 0.0 (THRESHOLD's Min = -0.0
    returns -0.0 at a tie), True from 1, NaN payloads. Floats by their bits; tuples and slotted
    records (ScaleBias, FusedActivation, ...) member by member.

    Raises TypeError for values that cannot be a key (unhashable, nested deeper than 16, or
    self-referential): callers then skip their cache. (Called on every operator call: the common
    types are tested first, by exact type.)"""
    t = type(value)
    if t in _PLAIN:
        return (t, value)
    if t is float:
        return (float, _PACK_DOUBLE(value))
    if _depth > _KEY_DEPTH:
        raise TypeError("too deeply nested to be a cache key")
    if t is tuple or t is list:
        return (t, *[static_key(v, _depth + 1) for v in value])
    if isinstance(value, np.floating) and np.dtype(value.dtype).itemsize <= 8:
        return (float, _PACK_DOUBLE(float(value)))
    if isinstance(value, (tuple, list)):
        return (t, *[static_key(v, _depth + 1) for v in value])
    slots = getattr(t, "__slots__", None)
    if slots and t.__module__.startswith("dmljax") and not isinstance(value, enum.Enum):
        return (t, *[static_key(getattr(value, s), _depth + 1) for s in slots])
    hash(value)  # TypeError for unhashable values
    return (t, value)


def check_call(
    spec: OpSpec,
    level: FeatureLevel,
    inputs: Mapping[str, object],
    attrs: Mapping[str, object],
    output_types: Mapping[str, object] = {},
    output_sizes: Mapping[str, object] = {},
    python: bool = False,
) -> CheckedCall:
    """Validate a call. ``inputs`` maps input DML names to arrays (or tracers, or
    ShapeDtypeStructs); ``attrs`` maps attribute DML names to raw Python values;
    ``output_types`` maps the outputs whose DataType the caller chooses to raw values, and
    ``output_sizes`` those whose Sizes the caller gives (``TensorSpec.sizes_arg``). ``python``: the
    call comes from Python, not from a desc (params.ParamContext.python)."""
    sigs = []
    for t in spec.inputs:
        value = inputs.get(t.dml_name)
        if not _is_tensor(value):  # only a genuine array's outcome follows from its shape and dtype
            break
        try:
            sigs.append((tuple(map(int, value.shape)), np.dtype(value.dtype)))
        except Exception:  # noqa: BLE001  (see describe_tensor)
            break
    else:
        # Every input is an array: a call seen before (same level, shapes, dtypes, attributes,
        # 64-bit mode) has the same outcome. Unhashable attributes (a dict) skip the cache.
        try:
            key = (spec, level, tuple(sigs), static_key(tuple(attrs.items())),
                   static_key(tuple(output_types.items())), static_key(tuple(output_sizes.items())),
                   x64_enabled(), default_platform(), python)
            hit = _CALLS.get(key)
        except Exception:  # noqa: BLE001  (TypeError for unhashable values; a user __hash__ or __eq__ may raise anything)
            return _check_call(spec, level, inputs, attrs, output_types, output_sizes, python)
        if hit is None:
            if len(_CALLS) >= _CALLS_MAX:
                _CALLS.clear()
            hit = _CALLS[key] = _check_call(spec, level, inputs, attrs, output_types, output_sizes, python)
        return hit
    return _check_call(spec, level, inputs, attrs, output_types, output_sizes, python)


_CALLS: dict = {}
_CALLS_MAX = 4096


def _parse_sizes(t, raw, problems: list[Violation], index: int | None = None) -> tuple[int, ...] | None:
    """The Sizes a caller gives for an output (``output_sizes=``; ``index``: of a tensor array's
    element): a tuple (or list) of positive ints, at most 2^32 - 1 elements in all."""
    fix = "a tuple of positive ints, one per dimension, e.g. (1, 3, 4, 4)"
    name, arg = (t.dml_name, t.sizes_kwarg) if index is None else (f"{t.dml_name}[{index}]", f"{t.sizes_kwarg}[{index}]")
    if not isinstance(raw, (tuple, list)) or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in raw):
        problems.append(Violation(name, arg, f"Sizes {quote(raw)} are invalid", fix))
        return None
    sizes = tuple(int(v) for v in raw)
    if not sizes or min(sizes) < 1:
        problems.append(Violation(name, arg, f"has Sizes {list(sizes)}",
                                  "a DirectML tensor has at least one dimension and its sizes are at least 1 "
                                  "(dml_buffer_tensor_desc.md)"))
        return None
    if math.prod(sizes) > MAX_ELEMENTS:
        problems.append(Violation(name, arg, f"has {math.prod(sizes)} elements (Sizes {list(sizes)})",
                                  "a DirectML tensor holds at most 2^32 - 1 elements"))
        return None
    return sizes


def base_name(name: str) -> str:
    """``InputTensors[2]`` -> ``InputTensors`` (a tensor array's element -> its field)."""
    return name.split("[", 1)[0]


def arg_name(spec: OpSpec, name: str) -> str:
    """The Python argument of a tensor or of a tensor array's element (``inputs[2]``)."""
    return spec.tensor(name).arg + name[len(base_name(name)):]


MAX_ARRAY = 64  # elements of a tensor array dmljax accepts (a sanity bound: no page gives one)


def _elements(t, value, what: str, problems: list[Violation]) -> list | None:
    """A tensor array's value (a list or tuple of 1 to MAX_ARRAY items), or None with a
    Violation."""
    if not isinstance(value, (list, tuple)):
        found = "is a single array" if _is_tensor(value) else f"is a {quote(type(value).__name__).strip(chr(39))}"
        problems.append(Violation(t.dml_name, what, found, "a list or tuple, one item per element of the array",
                                  f"{t.count} is its length"))
        return None
    if not 1 <= len(value) <= MAX_ARRAY:
        problems.append(Violation(t.dml_name, what, f"has {len(value)} elements",
                                  f"1 to {MAX_ARRAY} ({t.count} at least 1)"))
        return None
    return list(value)


def _check_call(spec, level, inputs, attrs, output_types, output_sizes, python) -> CheckedCall:
    problems: list[Violation] = []
    sigs = []
    for t in spec.inputs:
        value = inputs.get(t.dml_name)
        if value is None and t.optional:
            sigs.append((t.dml_name, None))
            continue
        if t.array:
            items = _elements(t, value, t.arg, problems)
            named = [] if items is None else [(f"{t.dml_name}[{i}]", v) for i, v in enumerate(items)]
        else:
            named = [(t.dml_name, value)]
        for name, v in named:
            d = describe_tensor(v)
            if isinstance(d, str):
                problems.append(Violation(
                    name, arg_name(spec, name), d,
                    tip="DirectML tensors carry a DataType: pass a numpy or JAX array "
                        "(e.g. np.asarray(x, np.float32))"))
                sigs.append((name, None))
            else:
                sigs.append((name, (d[0], np.dtype(d[1]))))
    chosen = []
    for t in spec.outputs:
        if t.default_data_type is None:
            continue
        raw = output_types.get(t.dml_name, t.default_data_type)
        if raw is None and t.default_data_type is INFERRED:
            continue  # infer_outputs gives it
        try:
            chosen.append((t.dml_name, DataType.parse(raw)))
        except (ValueError, TypeError) as e:
            problems.append(Violation(t.dml_name, t.data_type_arg, f"DataType {quote(raw)} is invalid", str(e)))
    sized = []
    for t in spec.outputs:
        if t.sizes_arg and t.array:  # SPLIT: one Sizes per output
            items = _elements(t, output_sizes.get(t.dml_name), t.sizes_kwarg, problems) or []
            for i, raw in enumerate(items):
                sizes = _parse_sizes(t, raw, problems, i)
                if sizes is not None:
                    sized.append((f"{t.dml_name}[{i}]", sizes))
        elif t.sizes_arg and t.sizes_default and output_sizes.get(t.dml_name) is None:
            continue  # infer_outputs gives them
        elif t.sizes_arg:
            sizes = _parse_sizes(t, output_sizes.get(t.dml_name), problems)
            if sizes is not None:
                sized.append((t.dml_name, sizes))
    member = _selector(spec, attrs)
    tensor_problems, tensors = _check_tensors(spec, level, tuple(sigs), tuple(chosen), tuple(sized), member,
                                              x64_enabled(), default_platform())
    problems += tensor_problems
    normalized = {}
    ctx = ParamContext(spec, level, tensors, problems, python)
    for p in spec.params:
        normalized[p.dml_name] = check_param(ctx, p, attrs.get(p.dml_name, p.default))
    for extra in spec.extra_checks:
        problems += extra(tensors, normalized, level)
    if spec.infer_outputs is not None and not problems:
        tensors = _inferred(spec, level, tensors, normalized, problems)
    if problems:
        raise ValidationError(spec.python_name, spec.enum_name, level.dml_name, problems)
    return CheckedCall(spec, level, tensors, normalized)


def _selector(spec: OpSpec, attrs: Mapping[str, object]):
    """The member of the attribute that selects the support tables (REDUCE's Function), or None
    (no such attribute, or a value the attribute's own check refuses)."""
    if not spec.support_by:
        return None
    param = next(p for p in spec.params if p.dml_name == spec.support_by)
    try:
        return param.enum.parse(attrs.get(spec.support_by, param.default))
    except (ValueError, TypeError):
        return None


def _supported(spec: OpSpec, member) -> str:
    """"supported", or "supported with Function SUM" where the tables depend on an attribute."""
    return "supported" if member is None else f"supported with {spec.support_by} {member.name}"


def _inferred(spec: OpSpec, level: FeatureLevel, tensors, attrs, problems: list[Violation]) -> dict:
    """``tensors`` with the outputs the record's ``infer_outputs`` computes (REDUCE's kept axes,
    GEMM's M x N, ...), each checked against the support table in force like any tensor."""
    inferred = spec.infer_outputs(tensors, attrs, problems)
    member = _selector(spec, attrs)
    row = spec.support_at(level, member)
    for name, info in inferred.items():
        tspec = spec.tensor(name)
        sup = row.tensors[base_name(name)]
        ndim = len(info.shape)
        if not sup.dims[0] <= ndim <= sup.dims[1]:
            problems.append(Violation(name, "", f"would have {ndim} dimension{'s' if ndim != 1 else ''} "
                                      f"(Sizes {list(info.shape)})", f"{_supported(spec, member)}: {sup.dims_text()}"))
        if info.data_type not in sup.data_types:
            problems.append(Violation(name, tspec.data_type_arg if tspec.default_data_type else "",
                                      f"would have DataType {info.data_type.name}",
                                      f"{_supported(spec, member)}: {_types_text(sup.data_types)}"))
    return {**tensors, **inferred}


@functools.lru_cache(maxsize=4096)
def _check_tensors(spec: OpSpec, level: FeatureLevel, sigs, chosen, sized, member, x64: bool, platform: str = "cpu"):
    problems: list[Violation] = []
    tensors: dict[str, TensorInfo] = {}
    row = spec.support_at(level, member)
    supported = _supported(spec, member)
    if row is None:
        problems.append(Violation(
            "The operator", "", f"is not available at {level.dml_name}",
            f"it was introduced in {spec.introduced.dml_name}",
            tip=f"pass feature_level='{spec.introduced.version}' or newer"))

    for name, sig in sigs:
        if sig is None:
            continue
        shape, dtype = sig
        tspec = spec.tensor(name)
        dt = DataType.from_dtype(dtype)
        allowed = _types_text(row.tensors[base_name(name)].data_types) if row else ""
        if dt is None:
            problems.append(Violation(
                name, arg_name(spec, name), f"has dtype {dtype}, which is not a DirectML data type",
                f"{supported}: {allowed}" if allowed else "",
                "cast it explicitly to a supported type; dmljax never converts for you"))
            continue
        if any(d == 0 for d in shape):
            problems.append(Violation(
                name, arg_name(spec, name), f"has Sizes {list(shape)}, with a zero size",
                "a DirectML tensor's sizes are at least 1 (dml_buffer_tensor_desc.md)"))
        elif math.prod(shape) > MAX_ELEMENTS:
            problems.append(Violation(
                name, arg_name(spec, name), f"has {math.prod(shape)} elements (Sizes {list(shape)})",
                "a DirectML tensor holds at most 2^32 - 1 elements"))
        tensors[name] = TensorInfo(shape, dt)

    # Outputs: DataType from a SameDataType constraint or the caller's choice; Sizes from SameSizes.
    # An output that takes its DataType or Sizes from an input is not reported again for it.
    derived: dict[tuple[str, str], str] = {}
    for name, dt in chosen:
        tensors.setdefault(name, TensorInfo((), dt))
    for name, shape in sized:  # the caller's Sizes; the DataType as chosen, constrained or inferred
        cur = tensors.get(name)
        tensors[name] = TensorInfo(shape, cur.data_type if cur else None)
    sized_names = {name for name, _ in sized}
    chosen_names = {name for name, _ in chosen}
    for c in spec.constraints:
        known = [n for n in _members(c, tensors) if spec.tensor(n).kind == "input"]
        if not known:
            continue
        src = tensors[known[0]]
        outs = [n for n in _members(c, tensors) if spec.tensor(n).kind == "output"]
        outs += [n for n in c.tensors if spec.tensor(n).kind == "output" and not spec.tensor(n).array and n not in outs]
        for n in outs:
            cur = tensors.get(n)
            tspec = spec.tensor(n)
            if isinstance(c, SameDataType):
                if n in chosen_names and cur.data_type is not src.data_type:  # the caller's, differing
                    problems.append(Violation(
                        n, tspec.data_type_arg, f"is {cur.data_type.name}, but {known[0]} has DataType "
                        f"{src.data_type.name}", f"the same DataType as {known[0]}",
                        f"leave {tspec.data_type_arg} out (None) to take {known[0]}'s"))
                tensors[n] = TensorInfo(cur.shape if cur else (), src.data_type)
                derived[(n, "type")] = known[0]
            else:
                if n in sized_names and cur.shape != src.shape:
                    problems.append(Violation(
                        n, tspec.sizes_kwarg, f"is {list(cur.shape)}, but {known[0]} has Sizes {list(src.shape)}",
                        f"the same Sizes as {known[0]}", f"leave {tspec.sizes_kwarg} out (None) to take {known[0]}'s"))
                tensors[n] = TensorInfo(src.shape, cur.data_type if cur else src.data_type)
                derived[(n, "dims")] = known[0]

    reported: set[tuple[str, str]] = set()

    def report(name: str, kind: str, violation: Violation) -> None:
        source = derived.get((name, kind))
        if source is not None and (source, kind) in reported:
            return
        reported.add((name, kind))
        problems.append(violation)

    for name, info in list(tensors.items()):
        tspec = spec.tensor(name)
        if info.data_type is None:  # Sizes from the caller, DataType from infer_outputs (or a refused choice)
            if spec.infer_outputs is None and tspec.default_data_type is None:
                if problems or any(sig is None for _, sig in sigs):
                    continue  # it would come from an input refused already (a bool, a masked array)
                raise TypeError(f"{spec.enum_name}: {name}'s DataType comes from nothing")
            sup = row.tensors[base_name(name)] if row is not None else None
            ndim = len(info.shape)
            if sup is not None and not sup.dims[0] <= ndim <= sup.dims[1]:
                later = spec.lowest_level(base_name(name), lambda s: s.dims[0] <= ndim <= s.dims[1], level, member)
                report(name, "dims", Violation(
                    name, tspec.sizes_kwarg, f"has {ndim} dimension{'s' if ndim != 1 else ''} (Sizes {list(info.shape)})",
                    f"{supported}: {sup.dims_text()}",
                    f"{spec.support_at(later, member).tensors[base_name(name)].dims_text()} dimensions are supported from "
                    f"{later.dml_name}" if later else ""))
            continue
        arg = arg_name(spec, name) if tspec.kind == "input" else (
            tspec.data_type_arg if tspec.default_data_type else "")
        supported_here = row is not None and info.data_type in row.tensors[base_name(name)].data_types
        if info.data_type.needs_x64 and not x64 and (supported_here or row is None):
            report(name, "type", Violation(
                name, arg, f"has DataType {info.data_type.name}, which JAX holds only in its 64-bit mode",
                tip=X64_TIP))
        elif info.data_type is DataType.FLOAT64 and platform in NO_FLOAT64 and (supported_here or row is None):
            report(name, "type", Violation(
                name, arg, f"has DataType FLOAT64, which XLA's {platform.upper()} backend does not compute in 64 bits",
                tip=FLOAT64_TIP))
        if row is None:
            continue
        sup = row.tensors[base_name(name)]
        ndim = len(info.shape)
        lo, hi = sup.dims
        sized = tspec.kind == "input" or (name, "dims") in derived or name in sized_names  # or later
        if sized and not lo <= ndim <= hi:
            later = spec.lowest_level(base_name(name), lambda s: s.dims[0] <= ndim <= s.dims[1], level, member)
            tip = ""
            if later:
                tip = (f"{spec.support_at(later, member).tensors[base_name(name)].dims_text()} dimensions are supported "
                       f"from {later.dml_name}")
            report(name, "dims", Violation(
                name, arg_name(spec, name) if tspec.kind == "input" else (
                    tspec.sizes_kwarg + name[len(base_name(name)):] if name in sized_names else ""),
                f"has {ndim} dimension{'s' if ndim != 1 else ''} (Sizes {list(info.shape)})",
                f"{supported}: {sup.dims_text()}", tip))
        if info.data_type not in sup.data_types:
            later = spec.lowest_level(base_name(name), lambda s: info.data_type in s.data_types, level, member)
            tip = f"{info.data_type.name} is supported from {later.dml_name}" if later else ""
            if not later and tspec.kind == "input" and info.data_type.needs_x64:
                narrower = [t for t in sup.data_types if t.is_float == info.data_type.is_float
                            and t.is_signed == info.data_type.is_signed] or list(sup.data_types)
                tip = (f"cast it to {narrower[0].name} (x.astype(np.{narrower[0].dtype.name})); "
                       "dmljax never narrows a type for you")
            if tspec.kind == "output" and tspec.default_data_type is not None:
                tip = (tip + "; or " if tip else "") + f"pass {tspec.data_type_arg}= one of {_types_text(sup.data_types)}"
            report(name, "type", Violation(
                name, arg, f"has DataType {info.data_type.name}",
                f"{supported}: {_types_text(sup.data_types)}", tip))

    for c in spec.constraints:
        present = [n for n in _members(c, tensors) if spec.tensor(n).kind == "input"]
        if len(present) < 2:
            continue
        if isinstance(c, SameDataType):
            types = {n: tensors[n].data_type for n in present}
            if len(set(types.values())) > 1:
                problems.append(Violation(
                    _names(spec, present), "",
                    "have DataTypes " + ", ".join(t.name for t in types.values()),
                    "they must have the same DataType",
                    "cast explicitly: DirectML never promotes types"))
        elif isinstance(c, SameSizes):
            shapes = {n: tensors[n].shape for n in present}
            if len(set(shapes.values())) > 1:
                problems.append(Violation(
                    _names(spec, present), "",
                    "have Sizes " + ", ".join(str(list(s)) for s in shapes.values()),
                    "they must have the same DimensionCount and Sizes",
                    "broadcast explicitly (jnp.broadcast_to, i.e. zero strides): "
                    "DirectML never broadcasts implicitly"))
    return tuple(problems), tensors


def _members(c, tensors) -> list[str]:
    """The tensors (and tensor arrays' elements) a constraint names, in the order found."""
    return [n for n in tensors if base_name(n) in c.tensors]


def _names(spec: OpSpec, names) -> str:
    parts = [f"{n} (argument `{arg_name(spec, n)}`)" for n in names]
    return ", ".join(parts[:-1]) + " and " + parts[-1]
