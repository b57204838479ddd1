"""Fused activations: the nullable ``const DML_OPERATOR_DESC* FusedActivation`` field of
ELEMENT_WISE_ADD1, CONVOLUTION, GEMM, the normalizations, ... (core/dml-fused-activations.md).

A :class:`FusedActivation` names an activation operator and its attributes; the activation's
InputTensor and OutputTensor are NULL, as the page requires. Validation (the
``DML_OPERATOR_DESC*`` parameter type in validate.py) checks it against the page's lists and
against the activation's own OpSpec, and :func:`apply` runs the activation's own formula on the
host operator's result.

Numerics: the page says that "fused activations produce the same result" as the unfused pair
of operators, so dmljax applies the activation to the host's result *as stored in the output
type* (rounded once, FLOAT32 denormals flushed) and rounds again: ``add1(a, b,
fused_activation=elu)`` equals ``activation_elu(element_wise_add(a, b))`` bit for bit.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

from dmljax._src.dtypes import DataType
from dmljax._src.errors import Violation
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.spec import REQUIRED, OpSpec

__all__ = ["FusedActivation", "FUSION_HOSTS", "FUSABLE", "check", "apply"]

_PREFIX = "DML_OPERATOR_"

# "Operators that support fused activation" (core/dml-fused-activations.md), in the page's order.
FUSION_HOSTS = (
    "DML_OPERATOR_BATCH_NORMALIZATION",
    "DML_OPERATOR_BATCH_NORMALIZATION_TRAINING",
    "DML_OPERATOR_CONVOLUTION",
    "DML_OPERATOR_ELEMENT_WISE_ADD1",
    "DML_OPERATOR_GEMM",
    "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION",
    "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1",
)

# "Activations that are supported for fusion", in the page's order: None where any host may
# fuse it, else the hosts the page restricts it to.
FUSABLE: dict[str, tuple[str, ...] | None] = {
    "DML_OPERATOR_ACTIVATION_LINEAR": None,
    "DML_OPERATOR_ACTIVATION_SIGMOID": None,
    "DML_OPERATOR_ACTIVATION_HARD_SIGMOID": None,
    "DML_OPERATOR_ACTIVATION_TANH": None,
    "DML_OPERATOR_ACTIVATION_SCALED_TANH": None,
    "DML_OPERATOR_ACTIVATION_RELU": None,
    "DML_OPERATOR_ACTIVATION_LEAKY_RELU": None,
    "DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU": None,
    "DML_OPERATOR_ACTIVATION_ELU": None,
    "DML_OPERATOR_ACTIVATION_CELU": None,
    "DML_OPERATOR_ACTIVATION_SCALED_ELU": None,
    "DML_OPERATOR_ACTIVATION_SOFTPLUS": None,
    "DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS": None,
    "DML_OPERATOR_ACTIVATION_SOFTSIGN": None,
    "DML_OPERATOR_ACTIVATION_IDENTITY": None,
    "DML_OPERATOR_ACTIVATION_SHRINK": None,
    "DML_OPERATOR_ACTIVATION_GELU": None,
    # "(For Convolution and GEMM only)"
    "DML_OPERATOR_ELEMENT_WISE_CLIP": ("DML_OPERATOR_CONVOLUTION", "DML_OPERATOR_GEMM"),
}
# "Fused activation may be used only when the output datatype is FLOAT16 or FLOAT32." (ADD1)
FUSED_OUTPUT_TYPES = (DataType.FLOAT32, DataType.FLOAT16)
_NULL_TENSORS = ("InputTensor", "OutputTensor")


def _full_name(type_name: str) -> str:
    key = type_name.strip().upper()
    return key if key.startswith(_PREFIX) else _PREFIX + key


class FusedActivation:
    """A DML_OPERATOR_DESC for a FusedActivation field: an activation type and its attributes.

    ``FusedActivation("ACTIVATION_ELU", alpha=0.5)``; the type may be the full enum name
    (``"DML_OPERATOR_ACTIVATION_ELU"``) or DxDispatch's short form, and attributes may be
    spelled as in DirectML (``Alpha=0.5``) or in Python (``alpha=0.5``). Attributes left out
    take the activation's defaults. Wherever a FusedActivation is accepted, so is DxDispatch's
    JSON form ``{"Type": "DML_OPERATOR_ACTIVATION_ELU", "Desc": {"Alpha": 0.5}}`` (with
    ``"InputTensor": null`` and ``"OutputTensor": null`` allowed in Desc) and a bare type name.

    Immutable and hashable (attributes are static, as in DirectML); what the operator does with
    it is checked when the operator is called, against the activation's page and the host's.
    """

    __slots__ = ("type", "attrs")

    def __init__(self, type: str, /, **attrs: object):
        if not isinstance(type, str):
            raise TypeError(f"FusedActivation type must be an operator name, got {type!r}")
        object.__setattr__(self, "type", _full_name(type))
        object.__setattr__(self, "attrs", tuple(sorted(attrs.items())))

    def __setattr__(self, name, value):
        raise AttributeError("FusedActivation is immutable")

    @property
    def short_name(self) -> str:
        return self.type[len(_PREFIX):]

    def desc(self) -> dict:
        """DxDispatch's JSON form."""
        return {"Type": self.type, "Desc": dict(self.attrs)}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FusedActivation):
            return NotImplemented
        return (self.type, self.attrs) == (other.type, other.attrs)

    def __hash__(self) -> int:
        return hash((self.type, self.attrs))

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.attrs)
        return f"FusedActivation({self.short_name!r}{args})"

    @classmethod
    def coerce(cls, value: object) -> "FusedActivation":
        """A FusedActivation from itself, a type name, or ``{"Type": ..., "Desc": {...}}``.
        Raises TypeError saying what is accepted."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping):
            keys = set(value)
            if "Type" not in keys or not keys <= {"Type", "Desc"}:
                raise TypeError(
                    "a DML_OPERATOR_DESC mapping has the members Type and Desc; got "
                    f"{sorted(map(str, keys))}")
            desc = value.get("Desc") or {}
            if not isinstance(desc, Mapping) or not isinstance(value["Type"], str):
                raise TypeError("expected {'Type': 'DML_OPERATOR_...', 'Desc': {member: value, ...}}")
            return cls(value["Type"], **{str(k): v for k, v in desc.items()})
        raise TypeError(
            "expected dmljax.FusedActivation(...), an activation name or "
            f"{{'Type': ..., 'Desc': {{...}}}}; got {type(value).__name__}")


def _implemented(host: str) -> dict[str, object]:
    """The activations dmljax implements that DirectML can fuse into ``host``."""
    from dmljax._src.op import registry

    return {name: op for name, op in registry().items()
            if name in FUSABLE and (FUSABLE[name] is None or host in FUSABLE[name])}


def check(value: object, host: OpSpec, level: FeatureLevel, tensors, subject: str, arg: str,
          problems: list[Violation]) -> FusedActivation | None:
    """Validate a FusedActivation field of ``host``; return it normalized (full type name, every
    attribute in DML spelling, FLOATs rounded to float32, defaults filled in), or None after
    appending violations."""
    from dmljax._src.validate import _check_param

    try:
        fa = FusedActivation.coerce(value)
    except TypeError as e:
        problems.append(Violation(subject, arg, f"is {value!r}", str(e)))
        return None
    n0 = len(problems)
    fusable = ", ".join(FUSABLE)
    if fa.type not in FUSABLE:
        problems.append(Violation(
            subject, arg, f"is {fa.type}, which DirectML does not support for fused activation",
            f"fusable: {fusable}",
            "apply it as a separate operator after this one"))
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
    implemented = _implemented(host.enum_name)
    op = implemented.get(fa.type)
    if op is None:
        problems.append(Violation(
            subject, arg, f"is {fa.type}, which DirectML can fuse but dmljax does not implement yet",
            "implemented: " + ", ".join(implemented)))
        return None
    act: OpSpec = op.spec
    if level is not None and act.introduced > level:
        problems.append(Violation(
            subject, arg, f"is {fa.type}, which was introduced in {act.introduced.dml_name}",
            tip=f"pass feature_level='{act.introduced.version}' or newer"))
    out = tensors.get(host.outputs[0].dml_name)
    if out is not None and out.data_type not in FUSED_OUTPUT_TYPES:
        problems.append(Violation(
            subject, arg, f"is given but {host.outputs[0].dml_name} has DataType {out.data_type.name}",
            "fused activation may be used only when the output datatype is FLOAT16 or FLOAT32"))
    by_name = {}
    for p in act.params:
        by_name[p.dml_name] = p
        by_name[p.arg] = p
    given: dict[str, object] = {}
    for key, v in fa.attrs:
        if key in _NULL_TENSORS or key in ("input", "output"):
            if v is not None:
                problems.append(Violation(
                    f"{subject}.Desc.{key}", arg, f"is {v!r}",
                    "the fused activation's InputTensor and OutputTensor must be NULL (None)"))
            continue
        p = by_name.get(key)
        if p is None:
            members = ", ".join(p.dml_name for p in act.params) or "none"
            problems.append(Violation(
                f"{subject}.Desc", arg, f"has no member {key!r} for {fa.type}",
                f"members: {members}"))
            continue
        if p.dml_name in given:
            problems.append(Violation(f"{subject}.Desc.{p.dml_name}", arg, "is given twice"))
            continue
        given[p.dml_name] = v
    normalized = {}
    for p in act.params:
        sub: list[Violation] = []
        raw = given.get(p.dml_name, p.default)
        if raw is REQUIRED:
            problems.append(Violation(f"{subject}.Desc.{p.dml_name}", arg, f"is missing for {fa.type}"))
            continue
        normalized[p.dml_name] = _check_param(act, p, raw, {}, sub)
        problems += [dataclasses.replace(s, subject=f"{subject}.Desc.{s.subject}", argument=arg) for s in sub]
    if len(problems) > n0:
        return None
    return FusedActivation(fa.type, **normalized)


def apply(fused: FusedActivation | None, y, allow_half_precision_computation: bool = False):
    """Run a validated fused activation on ``y`` (the host's result, already in the output
    type) through the activation operator's own formula; ``y`` unchanged for None."""
    if fused is None:
        return y
    from dmljax._src.op import get_operator

    op = get_operator(fused.type)
    spec: OpSpec = op.spec
    kwargs = {p.arg: dict(fused.attrs)[p.dml_name] for p in spec.params}
    if spec.math:
        kwargs["allow_half_precision_computation"] = allow_half_precision_computation
    return op.formula(y, **kwargs)
