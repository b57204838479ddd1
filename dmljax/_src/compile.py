"""``dmljax.compile_operator``: an operator created from a desc written with DirectML's member names
(the JSON form DxDispatch uses), run on buffers bound by member name.

    op = dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2], "Strides": [0, 1]},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2]},
        "Min": 0.5})
    outputs = op(InputTensor=in_buffer, OutputTensor=out_buffer)   # {"OutputTensor": new buffer}

Everything static is checked when the operator is compiled (through the operator's OpSpec, at the
chosen feature level) and when buffers are bound (sizes, offsets, aliasing); nothing runs before.
Each binding layout is traced and compiled by ``jax.jit`` once. An output bound to the very buffer
(and range) of an input runs in place: the buffer is donated to XLA, so the array passed in must
not be used afterwards; use the returned one.
"""

from __future__ import annotations

import difflib
import math
import numbers
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.buffers import BufferBinding, binding_violations, buffer_size_in_bytes, read_view, write_view
from dmljax._src.dtypes import DataType, x64_enabled
from dmljax._src.catalog import CATALOG
from dmljax._src.errors import UnknownOperatorError, ValidationError, Violation, cap, quote
from dmljax._src.feature_level import ENV_VAR, FeatureLevel, resolve_feature_level
from dmljax._src.kernel_seam import packed_memory, switches
from dmljax._src.registry import canonical_name, entry, implemented, not_implemented_error
from dmljax._src.spec import INFERRED, REQUIRED, OpSpec
from dmljax._src.tensor_desc import TensorDesc, TensorFlags, whole_number
from dmljax._src.validate import MAX_ARRAY, X64_TIP, check_call

__all__ = ["compile_operator", "CompiledOperator",
           "parse_tensor_desc", "TENSOR_DESC_MEMBERS"]

TENSOR_DESC_MEMBERS = ("Type", "Desc", "DataType", "Flags", "DimensionCount", "Sizes", "Strides",
                       "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment")
_FLOAT_STRINGS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "+inf": math.inf}
_OPERATOR_DESC_TYPES = ("DML_OPERATOR_DESC", "DML_OPERATOR_DESC*", "FUSED_ACTIVATION", "FusedActivation")


def _get_op(type_: object, level: FeatureLevel) -> Callable:
    """The operator a desc names, or the ValidationError saying it is not DirectML's or not
    implemented yet (with the level the desc is checked at)."""
    if isinstance(type_, numbers.Integral) and not isinstance(type_, bool) and not -(2**63) <= type_ < 2**63:
        # canonical_name would format the whole number (past 4300 digits, str() itself raises)
        raise UnknownOperatorError("dmljax", "DML_OPERATOR_TYPE", None, [Violation(
            "", "", f"{quote(type_)} is not a DML_OPERATOR_TYPE value (1 to {len(CATALOG)})")])
    enum_name = canonical_name(type_)
    op = implemented(enum_name)
    if op is None:
        raise not_implemented_error(enum_name, level)
    return op


def _parse_float(value):
    if isinstance(value, str) and value.strip().lower() in _FLOAT_STRINGS:
        return _FLOAT_STRINGS[value.strip().lower()]
    return value


def parse_tensor_desc(member: str, value: object, problems: list[Violation]) -> TensorDesc | None:
    """A DML_TENSOR_DESC written as DxDispatch's JSON: flattened buffer fields or the long form
    ``{"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": {...}}``. Problems are appended with the member
    name as subject (``InputTensor.Strides``)."""
    if isinstance(value, TensorDesc):
        return value
    if not isinstance(value, Mapping):
        problems.append(Violation(member, "", f"is {quote(value)}",
                                  "a tensor desc is an object with DataType and Sizes"))
        return None
    fields = dict(value)
    if "Desc" in fields or "Type" in fields:
        ttype = fields.pop("Type", "BUFFER")
        if not isinstance(ttype, str) or ttype.strip().upper() not in ("BUFFER", "DML_TENSOR_TYPE_BUFFER"):
            problems.append(Violation(f"{member}.Type", "", f"is {quote(ttype)}",
                                      "DML_TENSOR_TYPE_BUFFER is the only tensor type"))
            return None
    if "Desc" in fields:
        inner = fields.pop("Desc")
        if fields:
            problems.append(Violation(member, "", f"has {_keys(fields)} beside Type and Desc",
                                      "the long form holds only Type and Desc"))
        if not isinstance(inner, Mapping):
            problems.append(Violation(f"{member}.Desc", "", f"is {quote(inner)}", "expected an object"))
            return None
        fields = dict(inner)
    unknown = [k for k in fields if k not in TENSOR_DESC_MEMBERS or k in ("Type", "Desc")]
    if unknown:
        for k in unknown[:8]:
            problems.append(Violation(
                f"{member}.{_key(k)}", "", "is not a member of DML_BUFFER_TENSOR_DESC",
                "valid: " + ", ".join(m for m in TENSOR_DESC_MEMBERS if m not in ("Type", "Desc"))))
        if len(unknown) > 8:
            problems.append(Violation(member, "", f"has {len(unknown) - 8} more members that DML_BUFFER_TENSOR_DESC lacks"))
        return None
    missing = [k for k in ("DataType", "Sizes") if k not in fields]
    if missing:
        problems.append(Violation(member, "", f"has no {' and no '.join(missing)}",
                                  "DataType and Sizes are required"))
        return None
    sizes = fields["Sizes"]
    if not isinstance(sizes, (list, tuple)):
        problems.append(Violation(f"{member}.Sizes", "", f"is {quote(sizes)}", "expected a list of integers"))
        return None
    if "DimensionCount" in fields:
        count = fields["DimensionCount"]
        if whole_number(count) != len(sizes):
            problems.append(Violation(f"{member}.DimensionCount", "", f"is {quote(count)}",
                                      f"it must equal the length of Sizes ({len(sizes)})"))
            return None
    try:
        return TensorDesc(
            fields["DataType"], sizes, fields.get("Strides"),
            flags=fields.get("Flags", TensorFlags.NONE),
            total_tensor_size_in_bytes=fields.get("TotalTensorSizeInBytes"),
            guaranteed_base_offset_alignment=fields.get("GuaranteedBaseOffsetAlignment", 0))
    except ValidationError as e:
        for v in e.violations:
            problems.append(Violation(f"{member}.{v.subject}" if v.subject else member, "",
                                      v.found, v.allowed, v.tip))
        return None


def _buffer_problem(buf: object) -> str:
    """Why ``buf`` cannot be a buffer (empty if it can): a 1-D NumPy array (not masked) or JAX
    array, or a tracer of one."""
    if isinstance(buf, np.ma.MaskedArray):
        return "is bound to a NumPy masked array (a buffer has no mask)"
    if not isinstance(buf, (np.ndarray, jax.Array, jax.core.Tracer)):
        return f"is bound to {cap(_type_name(buf), 40)}"
    try:
        shape = tuple(buf.shape)
        np.dtype(buf.dtype)
    except Exception:  # noqa: BLE001  (an extended dtype such as a PRNG key)
        return f"is bound to {cap(_type_name(buf), 40)} whose dtype is not an array's"
    if len(shape) != 1:
        return f"is bound to {cap(_type_name(buf), 40)} of shape {shape}"
    return ""


def _type_name(value: object) -> str:
    return getattr(type(value), "__name__", "object")


def _key(k: object) -> str:
    """A desc's member name for a message (JSON keys are strings; anything else is quoted)."""
    return cap(k, 80) if isinstance(k, str) else quote(k)


def _keys(fields) -> str:
    return quote(sorted(_key(k) for k in fields))


def _count_problems(p, count: object, array: object) -> list[Violation]:
    """A desc's count member (``AxisCount``) against the array it counts (``Axes``)."""
    if isinstance(count, bool) or not isinstance(count, numbers.Integral):
        return [Violation(p.count, "", f"is {quote(count)}", f"a whole number: the length of {p.dml_name}")]
    if isinstance(array, (list, tuple)) and int(count) != len(array):
        return [Violation(p.count, "", f"is {cap(int(count), 20)}, but {p.dml_name} has {len(array)} "
                          f"entr{'y' if len(array) == 1 else 'ies'}", f"the length of {p.dml_name}")]
    return []


def element_names(t, descs: Mapping[str, Any]) -> list[str]:
    """The desc's tensors of field ``t`` that are present: ``[name]``, a tensor array's elements
    ``name[0]``, ``name[1]``, ... in order, or none."""
    if not t.array:
        return [t.dml_name] if descs.get(t.dml_name) is not None else []
    names, i = [], 0
    while f"{t.dml_name}[{i}]" in descs:
        names.append(f"{t.dml_name}[{i}]")
        i += 1
    return names if all(descs[n] is not None for n in names) else []


def _fused_activation_value(value):
    """A nested operator desc, flattened (``{"Type": "ACTIVATION_ELU", "Alpha": 0.5}``) or in long
    form (``{"Type": ..., "Desc": {...}}``), in the long form that ``fused.FusedActivation``
    takes."""
    if value is None or not isinstance(value, Mapping) or "Type" not in value:
        return value
    fields = dict(value)
    t = fields.pop("Type")
    if set(fields) == {"Desc"}:
        return {"Type": t, "Desc": fields["Desc"]}
    e = entry(t)
    return {"Type": e.enum_name if e is not None else t, "Desc": fields}


class CompiledOperator:
    """An operator compiled from a desc, called with buffers bound by DML member name.

    ``compiled(InputTensor=buf, OutputTensor=out)`` (or a dict) returns ``{"OutputTensor":
    new_out}``: every output buffer with the output written into it, as an array of the bound
    buffer's shape and dtype. A binding is a 1-D array (bytes or elements of any DirectML type),
    a ``dmljax.BufferBinding(buffer, offset_in_bytes)`` or a ``(buffer, offset_in_bytes)`` pair.

    Inputs flagged OWNED_BY_DML are bound once with ``initialize(...)`` (their values are copied
    then, as DirectML copies them into its persistent resource) and never at execution.
    """

    def __init__(self, op: Callable, level: FeatureLevel, descs: Mapping[str, TensorDesc | None],
                 attrs: Mapping[str, Any], output_types: Mapping[str, DataType], allow_half: bool):
        self.operator = op
        self.spec: OpSpec = op.spec
        self.feature_level = level
        self.tensor_descs = dict(descs)
        self.attributes = dict(attrs)
        self._output_types = dict(output_types)
        self.allow_half_precision_computation = allow_half
        self._owned_values: dict[str, jax.Array] | None = None
        self._jits: dict = {}
        self.trace_count = 0

    def __repr__(self) -> str:
        return f"<CompiledOperator {self.spec.enum_name} at {self.feature_level.dml_name}>"

    @property
    def owned_by_dml(self) -> tuple[str, ...]:
        return tuple(n for n, d in self.tensor_descs.items() if d is not None and d.owned_by_dml)

    @property
    def bind_points(self) -> tuple[str, ...]:
        """The members bound at execution (present tensors, less the OWNED_BY_DML ones)."""
        return tuple(n for n, d in self.tensor_descs.items() if d is not None and not d.owned_by_dml)

    def _error(self, problems) -> ValidationError:
        return ValidationError(self.spec.python_name, self.spec.enum_name, self.feature_level.dml_name, problems)

    def _resolve(self, bindings, kwargs, allowed: tuple[str, ...], phase: str):
        if bindings is not None and not isinstance(bindings, Mapping):
            raise self._error([Violation("", "", f"the bindings are {quote(bindings)}",
                                         "bindings are a mapping from member name to buffer")])
        merged = dict(bindings or {})
        merged.update(kwargs)
        for t in self.spec.tensors:  # a tensor array's bind point takes a list: InputTensors[i] each
            if t.array and isinstance(merged.get(t.dml_name), list):
                for i, b in enumerate(merged.pop(t.dml_name)):
                    merged[f"{t.dml_name}[{i}]"] = b
            elif t.array and t.dml_name in merged and len(element_names(t, self.tensor_descs)) == 1:
                # an array of one (a DxDispatch binding of a one-item list is its item)
                merged[f"{t.dml_name}[0]"] = merged.pop(t.dml_name)
        problems, resolved = [], {}
        for name, b in merged.items():
            if name not in allowed:
                if name in self.tensor_descs and self.tensor_descs[name] is not None:
                    why = ("is flagged OWNED_BY_DML: it is bound once, at initialization"
                           if phase == "execution" else "is not flagged OWNED_BY_DML: it is bound at execution")
                elif name in self.tensor_descs:
                    why = "is an optional tensor the desc leaves out"
                else:
                    why = f"is not a bind point of {self.spec.enum_name}"
                problems.append(Violation(_key(name), "", why, "bind points " + (
                    f"at {phase}: " + ", ".join(allowed) if allowed else f"at {phase}: none")))
                continue
            buf, off = (b.buffer, b.offset_in_bytes) if isinstance(b, BufferBinding) else (
                (b[0], b[1]) if isinstance(b, tuple) and len(b) == 2 else (b, 0))
            why = _buffer_problem(buf)
            if why:
                problems.append(Violation(name, "", why, "a buffer is a 1-D array (bytes or elements)"))
                continue
            dt = DataType.from_dtype(buf.dtype)
            if dt is None:
                problems.append(Violation(name, "", f"is bound to a buffer of dtype {cap(buf.dtype, 40)}",
                                          "a buffer's dtype is uint8 or another DirectML type"))
                continue
            if dt.needs_x64 and not x64_enabled():
                problems.append(Violation(name, "", f"is bound to a buffer of DataType {dt.name}, which JAX holds "
                                          "only in its 64-bit mode", tip=f"{X64_TIP}; or bind its bytes (x.view(np.uint8))"))
                continue
            if isinstance(off, (bool, np.bool_)) or not isinstance(off, (int, np.integer)):
                problems.append(Violation(name, "", f"is bound at offset {quote(off)}",
                                          "an offset is a whole number of bytes"))
                continue
            if not -(2**64) < off < 2**64:
                problems.append(Violation(name, "", f"is bound at offset {quote(int(off))}",
                                          "an offset is a UINT64 number of bytes"))
                continue
            problems += binding_violations(self.tensor_descs[name], buffer_size_in_bytes(buf), int(off), name)
            resolved[name] = (buf, int(off))
        for name in allowed:
            if name not in merged:
                problems.append(Violation(name, "", "is not bound", f"bind every one of: {', '.join(allowed)}"))
        return resolved, problems

    def initialize(self, bindings: Mapping[str, Any] | None = None, /, **kwargs) -> "CompiledOperator":
        """Bind the OWNED_BY_DML inputs (their current values are kept). Returns self."""
        owned = self.owned_by_dml
        resolved, problems = self._resolve(bindings, kwargs, owned, "initialization")
        if problems:
            raise self._error(problems)
        self._owned_values = {n: read_view(jnp.asarray(b), self.tensor_descs[n], off)
                              for n, (b, off) in resolved.items()}
        return self

    def _prepare(self, bindings, kwargs):
        """Validate a binding and return (executable, arguments) without running anything."""
        points = self.bind_points
        resolved, problems = self._resolve(bindings, kwargs, points, "execution")
        if self.owned_by_dml and self._owned_values is None:
            problems.append(Violation(", ".join(self.owned_by_dml), "", "flagged OWNED_BY_DML, were never bound",
                                      tip="call .initialize(" + ", ".join(f"{n}=buffer" for n in self.owned_by_dml) + ") first"))
        if problems:
            raise self._error(problems)
        # Distinct buffers, by identity: the same object bound twice is one buffer (aliasing).
        buffers, index = [], {}
        for name in points:
            buf = resolved[name][0]
            if id(buf) not in index:
                index[id(buf)] = len(buffers)
                buffers.append(buf)
        layout = tuple((name, index[id(resolved[name][0])], resolved[name][1]) for name in points)
        problems, donate = self._aliasing(layout)
        if problems:
            raise self._error(problems)
        owned = tuple(self._owned_values[n] for n in self.owned_by_dml) if self.owned_by_dml else ()
        arrays = [b if isinstance(b, jax.Array) else jnp.asarray(b) for b in buffers]
        avals = tuple((tuple(a.shape), np.dtype(a.dtype)) for a in arrays)
        key = (layout, donate, avals, switches())
        exe = self._jits.get(key)
        if exe is None:
            exe = jax.jit(self._runner(layout), donate_argnums=donate).lower(owned, *arrays).compile()
            self._jits[key] = exe
        return exe, (owned, *arrays)

    def prepare(self, bindings: Mapping[str, Any] | None = None, /, **kwargs) -> None:
        """Check a binding and compile for it, without running (DxDispatch's initialization)."""
        self._prepare(bindings, kwargs)

    def __call__(self, bindings: Mapping[str, Any] | None = None, /, **kwargs) -> dict[str, jax.Array]:
        exe, args = self._prepare(bindings, kwargs)
        results = exe(*args)
        return dict(zip(self._outputs, results))

    @property
    def _outputs(self) -> list[str]:
        """The outputs the desc has, a tensor array's elements (OutputTensors[i]) in order."""
        return [n for t in self.spec.outputs for n in element_names(t, self.tensor_descs)]

    def _aliasing(self, layout):
        problems, donate = [], set()
        outs = self._outputs
        ins = [n for t in self.spec.inputs for n in element_names(t, self.tensor_descs)
               if not self.tensor_descs[n].owned_by_dml]
        where = {name: (bi, off) for name, bi, off in layout}

        def span(name):
            bi, off = where[name]
            return bi, off, off + self.tensor_descs[name].total_tensor_size_in_bytes

        for i, o in enumerate(outs):
            ob, o0, o1 = span(o)
            for other in outs[i + 1:]:
                b, s0, s1 = span(other)
                if b == ob and s0 < o1 and o0 < s1:
                    problems.append(Violation(f"{o} and {other}", "", "are bound to overlapping ranges of one buffer",
                                              "outputs may not alias each other"))
            for name in ins:
                b, s0, s1 = span(name)
                if b != ob or not (s0 < o1 and o0 < s1):
                    continue
                di, do = self.tensor_descs[name], self.tensor_descs[o]
                if not self.spec.in_place:
                    problems.append(Violation(
                        f"{o} and {name}", "", "are bound to overlapping ranges of one buffer",
                        f"{self.spec.enum_name} does not support in-place execution",
                        f"bind {o} to another buffer"))
                elif not (s0 == o0 and di.sizes == do.sizes and di.effective_strides == do.effective_strides
                          and di.data_type.bits == do.data_type.bits):
                    problems.append(Violation(
                        f"{o} and {name}", "", "overlap without being the same elements",
                        "in-place execution needs the output bound at the input's offset with the same "
                        "Sizes and Strides"))
                else:
                    donate.add(ob + 1)  # argument 0 is the OWNED_BY_DML values
        return problems, tuple(sorted(donate))

    def _kwargs(self) -> dict:
        """The operator's keyword arguments: attributes, output types and sizes, the level."""
        spec, descs = self.spec, self.tensor_descs
        kwargs = {p.arg: self.attributes[p.dml_name] for p in spec.params}
        for t in spec.outputs:
            if t.default_data_type is not None:
                kwargs[t.data_type_arg] = self._output_types[t.dml_name].name
            if t.sizes_arg and t.array:
                kwargs[t.sizes_kwarg] = [tuple(descs[n].sizes) for n in element_names(t, descs)]
            elif t.sizes_arg and descs.get(t.dml_name) is not None:
                kwargs[t.sizes_kwarg] = tuple(descs[t.dml_name].sizes)
        if spec.math:
            kwargs["allow_half_precision_computation"] = self.allow_half_precision_computation
        kwargs["feature_level"] = self.feature_level
        return kwargs

    def apply(self, tensors: Mapping[str, Any]) -> dict[str, jax.Array]:
        """The operator on tensors (not buffers) by member name, each of its desc's Sizes and
        DataType: its outputs by member name (a tensor array's as ``OutputTensors[i]``). A
        DirectML graph (graph.py) runs its nodes through this."""
        spec, descs = self.spec, self.tensor_descs
        args = {}
        for t in spec.inputs:
            names = element_names(t, descs)
            if not names:
                args[t.arg] = None
            elif t.array:
                args[t.arg] = [tensors[n] for n in names]
            else:
                args[t.arg] = tensors[names[0]]
        result = self.operator(**args, **self._kwargs())
        result = result if isinstance(result, tuple) else (result,)
        every = [n for t in spec.outputs for n in (element_names(t, descs) if t.array else [t.dml_name])]
        by_name = dict(zip(every, result))
        return {n: by_name[n] for n in self._outputs}

    def _runner(self, layout):
        spec = self.spec
        descs = self.tensor_descs
        owned_names = self.owned_by_dml
        where = {name: (bi, off) for name, bi, off in layout}
        op = self.operator
        kwargs = self._kwargs()
        outputs = self._outputs
        # the operator's arrays lie in the bound buffers as the descs' strides say: where every
        # desc is packed, the program's memory is (kernel_seam.packed_memory)
        packed = all(d is None or d.is_packed for d in descs.values())

        def read(name, owned_map, buffers):
            if name in owned_map:
                return owned_map[name]
            bi, off = where[name]
            return read_view(buffers[bi], descs[name], off)

        def run(owned, *buffers):
            self.trace_count += 1
            owned_map = dict(zip(owned_names, owned))
            args = {}
            for t in spec.inputs:
                names = element_names(t, descs)
                if not names:
                    args[t.arg] = None
                elif t.array:
                    args[t.arg] = [read(n, owned_map, buffers) for n in names]
                else:
                    args[t.arg] = read(names[0], owned_map, buffers)
            with packed_memory(packed):
                result = op(**args, **kwargs)
            result = result if isinstance(result, tuple) else (result,)
            # the operator returns every output; the desc may leave optional ones out (LSTM's
            # OutputSequenceTensor), so results are matched to the record's outputs by name
            every = [n for t in spec.outputs for n in (element_names(t, descs) if t.array else [t.dml_name])]
            by_name = dict(zip(every, result))
            current = list(buffers)
            for name in outputs:
                bi, off = where[name]
                current[bi] = write_view(current[bi], descs[name], by_name[name], off)
            return tuple(current[where[name][0]] for name in outputs)

        return run


def compile_operator(type: str | int, desc: Mapping[str, Any], *, feature_level=None,
                     allow_half_precision_computation: bool = False) -> CompiledOperator:
    """Create an operator from ``type`` (``"DML_OPERATOR_ELEMENT_WISE_CLIP"`` or DxDispatch's
    ``"ELEMENT_WISE_CLIP"``) and ``desc``, a mapping with DML's member names (tensor descs as
    DxDispatch writes them), validated at ``feature_level`` (default: as for any call).

    Returns a CompiledOperator, called with buffers bound by member name. Raises ValidationError
    listing every problem: unknown or missing members, invalid tensor descs, what the operator's
    page forbids at that level, an OutputTensor whose DataType or Sizes differ from what the
    operator produces, or an operator dmljax does not implement yet.

    >>> import numpy as np, dmljax
    >>> op = dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", {
    ...     "InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2], "Strides": [0, 1]},
    ...     "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2]},
    ...     "Min": 0.5})
    >>> op(InputTensor=np.array([0.0, 2.0], np.float32),
    ...    OutputTensor=np.zeros(4, np.float32))["OutputTensor"]
    Array([0.5, 2. , 0.5, 2. ], dtype=float32)
    """
    try:
        level = resolve_feature_level(feature_level)
    except ValueError as e:
        op = None
        try:
            op = _get_op(type, FeatureLevel.newest())
        except ValidationError:
            pass
        names = (op.spec.python_name, op.spec.enum_name) if op is not None else ("dmljax", "DML_OPERATOR_TYPE")
        subject = "feature_level" if feature_level is not None else ENV_VAR
        raise ValidationError(*names, None, [Violation(subject, "", str(e))]) from None
    op = _get_op(type, level)
    spec: OpSpec = op.spec
    problems: list[Violation] = []
    if not isinstance(allow_half_precision_computation, bool):
        problems.append(Violation("allow_half_precision_computation", "",
                                  f"is {quote(allow_half_precision_computation)}", "expected True or False"))
    if not isinstance(desc, Mapping):
        problems.append(Violation(
            "", "", f"the desc is a {cap(_type_name(desc), 40)}", "a desc is a mapping of DML member names"))
        raise ValidationError(spec.python_name, spec.enum_name, level.dml_name, problems)
    valid = [t.dml_name for t in spec.tensors] + [p.dml_name for p in spec.params] + [
        p.count for p in spec.params if p.count] + [t.count for t in spec.tensors if t.count]
    unknown = [k for k in desc if k not in valid]
    for k in unknown[:8]:
        close = difflib.get_close_matches(_key(k), valid, n=1) if isinstance(k, str) else []
        problems.append(Violation(
            _key(k), "", f"is not a member of {spec.enum_name[len('DML_OPERATOR_'):]}'s desc "
                         "(or one dmljax does not implement yet)",
            "members: " + ", ".join(valid), f"the closest member is {close[0]}" if close else ""))
    if len(unknown) > 8:
        problems.append(Violation("", "", f"the desc has {len(unknown) - 8} more members that "
                                          f"{spec.enum_name[len('DML_OPERATOR_'):]}'s desc lacks"))
    descs: dict[str, TensorDesc | None] = {}  # a tensor array's elements as InputTensors[i]
    bad_arrays = set()
    for t in spec.tensors:
        if t.dml_name not in desc or desc[t.dml_name] is None:
            if not t.optional:
                problems.append(Violation(t.dml_name, "", "is missing", "a required member"))
            descs[t.dml_name] = None
            continue
        entries = [(t.dml_name, desc[t.dml_name])]
        if t.array:
            value = desc[t.dml_name]
            if not isinstance(value, list) or not 1 <= len(value) <= MAX_ARRAY:
                problems.append(Violation(t.dml_name, "", f"is {'a ' + _type_name(value) if not isinstance(value, list) else f'a list of {len(value)}'}",
                                          f"a list of 1 to {MAX_ARRAY} tensor descs ({t.count} of them)"))
                bad_arrays.add(t.dml_name)
                continue
            count = desc.get(t.count, len(value))
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) or int(count) != len(value):
                problems.append(Violation(t.count, "", f"is {quote(count)}, but {t.dml_name} has {len(value)} descs",
                                          f"the length of {t.dml_name}"))
            entries = [(f"{t.dml_name}[{i}]", v) for i, v in enumerate(value)]
        for name, value in entries:
            d = parse_tensor_desc(name, value, problems)
            descs[name] = d
            if d is None:
                bad_arrays.add(t.dml_name)
                continue
            if t.kind == "output":
                if d.owned_by_dml:
                    problems.append(Violation(f"{name}.Flags", "", "is OWNED_BY_DML",
                                              "the flag can only be used on input tensors"))
                ov = d.overlap_violation()
                if ov is not None:
                    problems.append(Violation(f"{name}.Strides", "", ov.found, ov.allowed, ov.tip))
    attrs = {}
    for p in spec.params:
        if p.dml_name not in desc or (desc[p.dml_name] is None and p.nullable):
            if not p.nullable:
                problems.append(Violation(p.dml_name, "", "is missing",
                                          f"a required member ({p.type})"))
            attrs[p.dml_name] = None
            continue
        v = desc[p.dml_name]
        if p.type in ("FLOAT", "DML_SCALAR_UNION"):
            v = _parse_float(v)
        elif p.type in _OPERATOR_DESC_TYPES or p.dml_name == "FusedActivation":
            v = _fused_activation_value(v)
        elif p.type == "DML_OPERATOR_DESC[]" and isinstance(v, list):  # the recurrent ActivationDescs
            v = [_fused_activation_value(a) for a in v]
        attrs[p.dml_name] = v
        if p.count and p.count in desc:
            problems += _count_problems(p, desc[p.count], v)
    output_types, output_sizes = {}, {}
    for t in spec.outputs:
        d = descs.get(t.dml_name)
        if t.array:
            elements = [descs[n] for n in element_names(t, descs)]
            if t.sizes_arg and elements and t.dml_name not in bad_arrays:
                output_sizes[t.dml_name] = [tuple(e.sizes) for e in elements]
            continue
        if t.default_data_type is not None and (d is not None or t.default_data_type not in (REQUIRED, INFERRED)):
            output_types[t.dml_name] = d.data_type if d is not None else t.default_data_type
        if t.sizes_arg and d is not None:
            output_sizes[t.dml_name] = tuple(d.sizes)
    bad_inputs = bool(bad_arrays) or any(
        not element_names(t, descs) and not t.optional for t in spec.inputs) or any(
        t.dml_name in desc and not element_names(t, descs) for t in spec.tensors)
    if not bad_inputs and not any(p.subject in [pp.dml_name for pp in spec.params] and p.found == "is missing"
                                  for p in problems):
        inputs = {}
        for t in spec.inputs:
            structs = [jax.ShapeDtypeStruct(descs[n].sizes, descs[n].data_type.dtype) for n in element_names(t, descs)]
            if structs:
                inputs[t.dml_name] = structs if t.array else structs[0]
        try:
            call = check_call(spec, level, inputs, attrs, output_types, output_sizes)
        except ValidationError as e:
            problems += list(e.violations)
        except NotImplementedError as e:
            problems.append(Violation("", "", f"a member's type is not implemented yet in dmljax ({e})"))
        else:
            for t in spec.outputs:
                for name in element_names(t, descs):
                    d, info = descs[name], call.tensors.get(name)
                    if info is None:
                        continue
                    if d.data_type != info.data_type:
                        problems.append(Violation(
                            f"{name}.DataType", "", f"is {d.data_type.name}",
                            f"the operator produces {info.data_type.name} here"))
                    if d.sizes != tuple(info.shape):
                        problems.append(Violation(
                            f"{name}.Sizes", "", f"are {list(d.sizes)}",
                            f"the operator produces Sizes {list(info.shape)} here"))
    if problems:
        raise ValidationError(spec.python_name, spec.enum_name, level.dml_name, problems)
    return CompiledOperator(op, level, descs, attrs, output_types, allow_half_precision_computation)

