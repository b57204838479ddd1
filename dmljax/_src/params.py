"""Attribute (non-tensor desc member) checkers: a table from DirectML's member type to the
function that validates a Python value for it and returns its static, normalized form.

Every checker takes the raw value as the user gave it (a Python or NumPy scalar, a sequence, a
mapping from a DxDispatch model, anything at all) and either returns the normalized value or
appends Violations and returns None. None of them raises for a bad value: a call with a bad
attribute always ends in one ValidationError naming the operator.

Kinds: FLOAT, UINT, INT, BOOL, UINT[], INT[], FLOAT[], DML_SCALE_BIAS, DML_SIZE_2D, DML_SCALAR_UNION,
DML_TENSOR_DATA_TYPE, DML_OPERATOR_DESC* (a fused activation), DML_OPERATOR_DESC[] (an array of
activation descs: the recurrent operators' ActivationDescs), and every DirectML enum
(``ParamSpec(..., type="DML_ROUNDING_MODE", enum=RoundingMode)``).

A call from Python (``ParamContext.python``) also takes what is unambiguous there and that a
DirectML desc cannot say: a negative ``Axis``/``Axes`` entry counts from the end of the first
input's dimensions, a bare integer is a one-entry array, and False/True are the values 0/1 of an
enum in BOOLEAN_ENUMS (MatrixTransform NONE/TRANSPOSE). A desc (compile_operator, DxDispatch) is
read as DirectML reads it. A traced value (an attribute passed through ``jax.jit``) is refused
with the two ways to make it static.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from typing import Callable, Mapping

import jax
import numpy as np

from dmljax._src.dtypes import DataType, round_to_float
from dmljax._src.enums import BOOLEAN_ENUMS
from dmljax._src.errors import Violation, quote
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.fused import (FUSABLE, FUSED_OUTPUT_TYPES, FUSION_HOSTS, NULL_TENSORS, RECURRENT_ACTIVATIONS,
                               FusedActivation)
from dmljax._src.registry import implemented
from dmljax._src.spec import REQUIRED, OpSpec, ParamSpec
from dmljax._src.structs import ScalarUnion, ScaleBias, Size2D

__all__ = ["ParamContext", "PARAM_KINDS", "check_param", "round_float_attr", "F32_MAX"]

F32_MAX = float(np.finfo(np.float32).max)
_UINT32_MAX = 2**32 - 1
_INT32 = (-(2**31), 2**31 - 1)
_MAX_ARRAY = 64  # an array attribute (Axes, Strides, ...) has at most this many entries
_MAX_UNKNOWN = 8  # unknown members reported one by one; the rest are counted


@dataclasses.dataclass
class ParamContext:
    """What a checker may read: the operator's record, the level, the tensors validated so far
    (DataType and Sizes by DML name) and the list problems are appended to."""

    spec: OpSpec
    level: FeatureLevel | None
    tensors: Mapping[str, object]
    problems: list[Violation]
    python: bool = False  # a call from Python, not a desc: see the module's docstring

    def refuse(self, p: ParamSpec, found: str, allowed: str = "", tip: str = "") -> None:
        self.problems.append(Violation(p.dml_name, p.arg, found, allowed, tip))


def _has(value: object, name: str) -> bool:
    try:  # hasattr lets any exception but AttributeError through (a property that raises)
        getattr(value, name)
    except Exception:  # noqa: BLE001
        return False
    return True


def _is_array(value: object) -> bool:
    if isinstance(value, np.generic):
        return False
    return isinstance(value, np.ndarray) or (_has(value, "shape") and _has(value, "dtype"))


def _kind(value: object) -> str:
    return quote(type(value).__name__).strip("'")


def round_float_attr(value: object) -> tuple[float | None, str]:
    """A FLOAT attribute rounded to float32, as a Python float; or (None, reason).

    Accepts Python and NumPy real numbers only (not bool, str, complex or arrays), rounded once
    (a long double or a large int is not rounded to float64 first); a finite value beyond
    float32's range is refused rather than made infinite."""
    if _is_array(value):
        return None, (
            f"is an array ({_kind(value)}); attributes are fixed when the operator is "
            "created, so they must be Python numbers")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None, f"is {quote(value)} ({_kind(value)}), not a number"
    try:
        return round_to_float(value, np.float32), ""
    except OverflowError:
        return None, f"is {quote(value)}, outside the range of FLOAT (float32, largest {F32_MAX:.7g})"
    except (TypeError, ValueError):
        return None, f"is {quote(value)} ({_kind(value)}), not a number"


def _exact_int(value: object) -> int | None:
    """An integer value as a Python int (Python/NumPy integers, and floats that are integral in
    their own precision); None for anything else (bool included)."""
    if isinstance(value, (bool, np.bool_)) or _is_array(value):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, np.floating):  # a long double may hold 2**60 + 0.5: not via float
        return int(value) if np.isfinite(value) and value == np.floor(value) else None
    if isinstance(value, numbers.Rational):
        return int(value) if value.denominator == 1 else None
    if isinstance(value, numbers.Real):
        try:
            f = float(value)
        except (OverflowError, ValueError, TypeError):
            return None
        if math.isfinite(f) and f == math.floor(f):
            return int(f)
    return None


# ----------------------------------------------------------------------------------- kinds
def _float(ctx: ParamContext, p: ParamSpec, value: object):
    r, why = round_float_attr(value)
    if r is None:
        ctx.refuse(p, why, "expected a FLOAT (a Python number)")
        return None
    target = _typed(ctx, p)
    if target is not None and target.data_type.is_integer and math.isnan(r):
        ctx.refuse(p, f"is NaN but {p.converted_to} is {target.data_type.name}",
                   "an integer tensor has no NaN to compare with", "pass a number, or use a float tensor")
    return r


_AXES = ("Axis", "Axes")  # members whose entries name a dimension of the first input


def _rank(ctx: ParamContext) -> int | None:
    """The dimension count of the operator's first input (a tensor array's first element), when
    it was validated."""
    if not ctx.spec.inputs:
        return None
    first = ctx.spec.inputs[0].dml_name
    for name, info in ctx.tensors.items():
        if name.split("[", 1)[0] == first:
            shape = getattr(info, "shape", None)
            return None if shape is None else len(shape)
    return None


def _integer(lo: int, hi: int, c_type: str):
    def check(ctx: ParamContext, p: ParamSpec, value: object):
        i = _exact_int(value)
        if i is None:
            ctx.refuse(p, f"is {quote(value)} ({_kind(value)})", f"expected an integer ({c_type})")
            return None
        axis = p.dml_name.split("[", 1)[0] in _AXES
        if axis and i < 0 and lo == 0:
            n = _rank(ctx)
            if ctx.python and n is not None and i >= -n:
                return i + n  # counted from the end, as in NumPy
            first = ctx.spec.inputs[0].dml_name if ctx.spec.inputs else "the input"
            if ctx.python and n is not None:
                ctx.refuse(p, f"is {quote(i)}", f"{first} has {n} dimensions: an axis is {-n} to {n - 1}")
            else:
                ctx.refuse(p, f"is {quote(i)}", f"a {c_type} is {lo} to {hi}",
                           "DirectML counts axes from 0; in a desc, the last axis is the dimension "
                           "count - 1 (a call from Python also takes -1)")
            return None
        if not lo <= i <= hi:
            ctx.refuse(p, f"is {quote(i)}", f"a {c_type} is {lo} to {hi}")
            return None
        return i
    return check


def _traced(value: object) -> bool:
    """Whether an attribute is, or holds, a JAX tracer (passed through jax.jit, vmap, grad)."""
    if isinstance(value, jax.core.Tracer):
        return True
    return isinstance(value, (list, tuple)) and len(value) <= _MAX_ARRAY and any(
        isinstance(v, jax.core.Tracer) for v in value)


def _refuse_traced(ctx: ParamContext, p: ParamSpec, value: object) -> None:
    shown = next((v for v in (value if isinstance(value, (list, tuple)) else [value])
                  if isinstance(v, jax.core.Tracer)), value)
    ctx.refuse(p, f"is a traced value ({quote(shown)})",
               "attributes are fixed when the operator is created, so they must be Python values, and "
               "jax.jit traces every argument of the function it compiles that is not static",
               f"make it static: jax.jit(f, static_argnames=(\"{p.arg}\",)) where f takes it as "
               f"`{p.arg}` (a tuple, not a list), or bind it first: "
               f"jax.jit(functools.partial(dmljax.{ctx.spec.python_name}, {p.arg}=...))")


def _bool(ctx: ParamContext, p: ParamSpec, value: object):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    ctx.refuse(p, f"is {quote(value)} ({_kind(value)})", "expected True or False (a BOOL)")
    return None


def _array(element: Callable, c_type: str):
    def check(ctx: ParamContext, p: ParamSpec, value: object):
        if ctx.python and c_type != "FLOAT" and _exact_int(value) is not None and not _is_array(value):
            value = (value,)  # axes=2 is axes=(2,)
        if not isinstance(value, (list, tuple, np.ndarray)) or isinstance(value, np.ma.MaskedArray) or (
                isinstance(value, np.ndarray) and value.ndim != 1):
            example = "(2,)" if p.dml_name in _AXES else "(1, 2)"
            ctx.refuse(p, f"is {quote(value)} ({_kind(value)})", f"expected a sequence of {c_type}",
                       f"pass a tuple: {p.arg}={example}" if ctx.python else "")
            return None
        if len(value) > _MAX_ARRAY:
            ctx.refuse(p, f"has {len(value)} entries", f"at most {_MAX_ARRAY}")
            return None
        out, n0 = [], len(ctx.problems)
        for i, v in enumerate(value):
            out.append(element(ctx, dataclasses.replace(p, dml_name=f"{p.dml_name}[{i}]"), v))
        return tuple(out) if len(ctx.problems) == n0 else None
    return check


_F32_TINY = 2.0 ** -126  # FLOAT32's smallest normal


def _typed(ctx: ParamContext, p: ParamSpec):
    """The tensor a member is read as (``converted_to``), when its DataType is known (not when the
    caller's choice of it was refused: that is reported already)."""
    target = ctx.tensors.get(p.converted_to) if p.converted_to else None
    return target if target is not None and target.data_type is not None else None


def _scale_bias(ctx: ParamContext, p: ParamSpec, value: object):
    try:
        sb = ScaleBias.coerce(value)
    except (TypeError, ValueError) as e:
        ctx.refuse(p, f"is {quote(value)}", str(e))
        return None
    out = []
    for member, v in zip(("Scale", "Bias"), sb):
        r, why = round_float_attr(v)
        if r is None:
            ctx.problems.append(Violation(f"{p.dml_name}.{member}", p.arg, why, "expected a FLOAT"))
        elif r != 0 and abs(r) < _F32_TINY:
            r = math.copysign(0.0, r)  # a FLOAT32 denormal reads as zero in math, on every backend
        out.append(r)
    return ScaleBias(*out) if None not in out else None


def _size_2d(ctx: ParamContext, p: ParamSpec, value: object):
    try:
        size = Size2D.coerce(value)
    except (TypeError, ValueError) as e:
        ctx.refuse(p, f"is {quote(value)}", str(e))
        return None
    out = []
    for member, v in zip(("Width", "Height"), size):
        i = _exact_int(v)
        if i is None or not 0 <= i <= _UINT32_MAX:
            found = f"is {quote(v)} ({_kind(v)})" if i is None else f"is {quote(i)}"
            ctx.problems.append(Violation(f"{p.dml_name}.{member}", p.arg, found, f"a UINT, 0 to {_UINT32_MAX}"))
        out.append(i)
    return Size2D(*out) if all(i is not None and 0 <= i <= _UINT32_MAX for i in out) else None


def _scalar_union(ctx: ParamContext, p: ParamSpec, value: object):
    # Read as the DataType of the tensor named by converted_to (CLIP1: "MinMaxDataType ...
    # must match OutputTensor.DataType"); unknown while that tensor is invalid.
    target = _typed(ctx, p)
    if target is None:
        return None
    try:
        return ScalarUnion.coerce(value, target.data_type)
    except (ValueError, TypeError, ArithmeticError) as e:
        ctx.refuse(p, str(e), f"a DML_SCALAR_UNION read as {target.data_type.name} ({p.converted_to}'s DataType)",
                   "pass a value that the tensor's type holds exactly (integers in range for "
                   "integer types); dmljax never wraps or saturates it")
        return None


def _tensor_data_type(ctx: ParamContext, p: ParamSpec, value: object):
    # A DataType field that must equal a tensor's (CLIP1's MinMaxDataType); None: that type.
    target = _typed(ctx, p)
    if value is None:
        return target.data_type if target is not None else None
    try:
        dt = DataType.parse(value)
    except (ValueError, TypeError) as e:
        ctx.refuse(p, f"is {quote(value)}", str(e))
        return None
    if target is not None and dt is not target.data_type:
        ctx.refuse(p, f"is {dt.name}", f"it must match {p.converted_to}.DataType, {target.data_type.name}",
                   "leave it out (None) to take the tensor's DataType")
        return None
    return dt


def _enum(ctx: ParamContext, p: ParamSpec, value: object):
    if isinstance(value, (bool, np.bool_)) and p.enum in BOOLEAN_ENUMS and ctx.python:
        return p.enum(int(value))  # trans_b=True is DML_MATRIX_TRANSFORM_TRANSPOSE
    try:
        return p.enum.parse(value)
    except Exception:  # noqa: BLE001  (ValueError; a user object's repr may raise anything)
        valid = ", ".join(f"{m.dml_name} ({m.value})" for m in p.enum)
        tip = ""
        if isinstance(value, (bool, np.bool_)):
            example = list(p.enum)[-1]
            tip = (f"{p.type} is an enum, not a BOOL: pass a member or its name, e.g. "
                   f"{p.arg}='{example.name}'")
        ctx.refuse(p, f"is {quote(value)}", f"valid: {valid}", tip)
        return None


def _fusable_hint(name: str) -> str:
    """The fusable activation a mistyped name most likely means (``ELU`` -> ACTIVATION_ELU)."""
    short = [n[len("DML_OPERATOR_"):] for n in FUSABLE]
    key = name[len("DML_OPERATOR_"):] if name.startswith("DML_OPERATOR_") else name
    ends = [s for s in short if s.endswith("_" + key)]
    close = ends or difflib.get_close_matches(key, short, n=1, cutoff=0.6)
    return f"did you mean {close[0]}?" if close else ""


def _coerce_activation(problems: list, subject: str, arg: str, value: object) -> FusedActivation | None:
    """A DML_OPERATOR_DESC value as a FusedActivation (not yet checked against any record), or
    None after appending a Violation."""
    if isinstance(value, Mapping) and not isinstance(value.get("Desc"), (Mapping, type(None))):
        problems.append(Violation(subject, arg, f"is {quote(value)}",
                                  "expected {'Type': 'DML_OPERATOR_...', 'Desc': {member: value, ...}}"))
        return None
    try:
        return FusedActivation.coerce(value)
    except (TypeError, ValueError) as e:  # ValueError: e.g. a Desc that has no truth value
        problems.append(Violation(subject, arg, f"is {quote(value)}", str(e)))
        return None


def _activation_members(ctx: ParamContext, subject: str, arg: str, fa: FusedActivation, out) -> FusedActivation | None:
    """An activation desc's members checked against the activation's own record (its level, each
    member's kind and default, NULL tensors, its page's extra rules with ``out`` as its
    InputTensor and OutputTensor); the normalized desc, or None after appending Violations."""
    problems = ctx.problems
    n0 = len(problems)
    op = implemented(fa.type)
    act: OpSpec = op.spec
    if ctx.level is not None and act.introduced > ctx.level:
        problems.append(Violation(
            subject, arg, f"is {fa.type}, which was introduced in {act.introduced.dml_name}",
            tip=f"pass feature_level='{act.introduced.version}' or newer"))
    by_name = {}
    for q in act.params:
        by_name[q.dml_name] = q
        by_name[q.arg] = q
    given: dict[str, object] = {}
    unknown = 0
    for key, v in fa.attrs:
        if key in NULL_TENSORS or key in ("input", "output"):
            if v is not None:
                problems.append(Violation(
                    f"{subject}.Desc.{key}", arg, f"is {quote(v)}",
                    f"the {'fused ' if subject == 'FusedActivation' else ''}activation's InputTensor and "
                    "OutputTensor must be NULL (None)"))
            continue
        q = by_name.get(key)
        if q is None:
            unknown += 1
            if unknown <= _MAX_UNKNOWN:
                members = ", ".join(q.dml_name for q in act.params) or "none"
                problems.append(Violation(f"{subject}.Desc", arg, f"has no member {quote(key)} for {fa.type}",
                                          f"members: {members}"))
            continue
        if q.dml_name in given:
            problems.append(Violation(f"{subject}.Desc.{q.dml_name}", arg, "is given twice"))
            continue
        given[q.dml_name] = v
    if unknown > _MAX_UNKNOWN:
        problems.append(Violation(f"{subject}.Desc", arg, f"has {unknown - _MAX_UNKNOWN} more members that "
                                                          f"{fa.type} lacks"))
    normalized = {}
    for q in act.params:
        raw = given.get(q.dml_name, q.default)
        if raw is REQUIRED:
            problems.append(Violation(f"{subject}.Desc.{q.dml_name}", arg, f"is missing for {fa.type}"))
            continue
        sub = ParamContext(act, ctx.level, {}, [])
        normalized[q.dml_name] = check_param(sub, q, raw)
        problems += [dataclasses.replace(s, subject=f"{subject}.Desc.{s.subject}", argument=arg) for s in sub.problems]
    if len(problems) > n0:
        return None
    # What the activation's page says beyond its tables (SOFTPLUS's Steepness before 6.4): its
    # InputTensor and OutputTensor are the host's output.
    seen = {} if out is None else {"InputTensor": out, "OutputTensor": out}
    for check in act.extra_checks:
        problems += [dataclasses.replace(s, subject=f"{subject}.Desc.{s.subject}", argument=arg)
                     for s in check(seen, normalized, ctx.level)]
    if len(problems) > n0:
        return None
    return FusedActivation(fa.type, **normalized)


def _fused_activation(ctx: ParamContext, p: ParamSpec, value: object):
    subject, arg, problems, host = p.dml_name, p.arg, ctx.problems, ctx.spec
    fa = _coerce_activation(problems, subject, arg, value)
    if fa is None:
        return None
    if fa.type not in FUSABLE:
        hint = _fusable_hint(fa.type)
        problems.append(Violation(
            subject, arg, f"is {fa.type}, which DirectML does not support for fused activation",
            "fusable: " + ", ".join(FUSABLE),
            hint or "apply it as a separate operator after this one"))
        return None
    hosts = FUSABLE[fa.type]
    if host.enum_name not in FUSION_HOSTS:
        problems.append(Violation(subject, arg, f"is given but {host.enum_name} supports no fused activation"))
        return None
    if hosts is not None and host.enum_name not in hosts:
        problems.append(Violation(
            subject, arg, f"is {fa.type}, which DirectML fuses only into {' and '.join(hosts)}",
            tip=f"apply {fa.short_name.lower()} as a separate operator after this one"))
        return None
    if implemented(fa.type) is None:
        available = [n for n in FUSABLE if implemented(n) is not None and (FUSABLE[n] is None or host.enum_name in FUSABLE[n])]
        problems.append(Violation(
            subject, arg, f"is {fa.type}, which DirectML can fuse but dmljax does not implement yet",
            "implemented: " + ", ".join(available)))
        return None
    out = ctx.tensors.get(host.outputs[0].dml_name)
    if out is not None and out.data_type not in FUSED_OUTPUT_TYPES:
        problems.append(Violation(
            subject, arg, f"is given but {host.outputs[0].dml_name} has DataType {out.data_type.name}",
            "fused activation may be used only when the output datatype is FLOAT16 or FLOAT32"))
    return _activation_members(ctx, subject, arg, fa, out)


def _activation_descs(ctx: ParamContext, p: ParamSpec, value: object):
    """An array of activation DML_OPERATOR_DESCs (the recurrent operators' ActivationDescs): each
    one an element-wise activation (RECURRENT_ACTIVATIONS) with its own record's members."""
    if isinstance(value, (str, Mapping, FusedActivation)) or not isinstance(value, (list, tuple)):
        ctx.refuse(p, f"is {quote(value)} ({_kind(value)})",
                   "expected a sequence of activation descs (dmljax.FusedActivation, a name or "
                   "{'Type': ..., 'Desc': {...}})")
        return None
    if len(value) > _MAX_ARRAY:
        ctx.refuse(p, f"has {len(value)} entries", f"at most {_MAX_ARRAY}")
        return None
    out, n0 = [], len(ctx.problems)
    for i, v in enumerate(value):
        subject = f"{p.dml_name}[{i}]"
        fa = _coerce_activation(ctx.problems, subject, p.arg, v)
        if fa is None:
            continue
        if fa.type not in RECURRENT_ACTIVATIONS or implemented(fa.type) is None:
            ctx.problems.append(Violation(
                subject, p.arg, f"is {fa.type}, which is not an element-wise activation dmljax implements",
                "allowed: " + ", ".join(n for n in RECURRENT_ACTIVATIONS if implemented(n) is not None)))
            continue
        out.append(_activation_members(ctx, subject, p.arg, fa, None))
    return tuple(out) if len(ctx.problems) == n0 else None


PARAM_KINDS: dict[str, Callable[[ParamContext, ParamSpec, object], object]] = {
    "FLOAT": _float,
    "UINT": _integer(0, _UINT32_MAX, "UINT"),
    "INT": _integer(*_INT32, "INT"),
    "BOOL": _bool,
    "UINT[]": _array(_integer(0, _UINT32_MAX, "UINT"), "UINT"),
    "INT[]": _array(_integer(*_INT32, "INT"), "INT"),
    "FLOAT[]": _array(_float, "FLOAT"),
    "DML_SCALE_BIAS": _scale_bias,
    "DML_SIZE_2D": _size_2d,
    "DML_SCALAR_UNION": _scalar_union,
    "DML_TENSOR_DATA_TYPE": _tensor_data_type,
    "DML_OPERATOR_DESC*": _fused_activation,
    "DML_OPERATOR_DESC[]": _activation_descs,
}
"""DirectML member type -> checker. Enum-typed members (``ParamSpec.enum`` set) use the enum
checker whatever their type name."""


def kind_of(p: ParamSpec) -> Callable[[ParamContext, ParamSpec, object], object]:
    """The checker for a member (raises KeyError for a record naming an unknown kind: a bug in
    the record, found when the operator is declared)."""
    return _enum if p.enum is not None else PARAM_KINDS[p.type]


def check_param(ctx: ParamContext, p: ParamSpec, value: object) -> object:
    """``value`` for member ``p`` validated and normalized (None after appending violations, or
    for a nullable member left out)."""
    if value is None and p.nullable:
        return None
    if value is None and p.type == "DML_TENSOR_DATA_TYPE":
        return _tensor_data_type(ctx, p, value)
    if value is None or value is REQUIRED:
        ctx.refuse(p, "is missing" if value is REQUIRED else "is None", f"a required {p.type}")
        return None
    if _traced(value):
        _refuse_traced(ctx, p, value)
        return None
    return kind_of(p)(ctx, p, value)
