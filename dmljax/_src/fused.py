"""Fused activations: the nullable ``const DML_OPERATOR_DESC* FusedActivation`` field of
ELEMENT_WISE_ADD1, CONVOLUTION, GEMM, the normalizations, ... (core/dml-fused-activations.md).

A :class:`FusedActivation` names an activation operator and its attributes; the activation's
InputTensor and OutputTensor are NULL, as the page requires. This module holds the page's two
lists and the value type; the ``DML_OPERATOR_DESC*`` parameter kind (params.py) validates it
against them and against the activation's own record, and ``ops/_families.apply_fused`` runs the
activation's own formula on the host operator's result.

Numerics: the page says that "fused activations produce the same result" as the unfused pair
of operators, so dmljax applies the activation to the host's result *as stored in the output
type* (rounded once, FLOAT32 denormals flushed) and rounds again: ``add1(a, b,
fused_activation=elu)`` equals ``activation_elu(element_wise_add(a, b))`` bit for bit.
"""

from __future__ import annotations

from typing import Mapping

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import DataType
from dmljax._src.errors import quote
from dmljax._src.registry import entry

__all__ = ["FusedActivation", "FUSION_HOSTS", "FUSABLE", "FUSED_OUTPUT_TYPES", "NULL_TENSORS", "RECURRENT_ACTIVATIONS"]

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
# The activations RNN, LSTM and GRU take in their ActivationDescs: the pages name none, so dmljax
# takes the element-wise activations that any host may fuse (they are the ones with InputTensor and
# OutputTensor alone; ONNX's recurrent activations Relu, Tanh, Sigmoid, Affine (LINEAR), LeakyRelu,
# ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign and Softplus are all among them).
RECURRENT_ACTIVATIONS = tuple(name for name, hosts in FUSABLE.items() if hosts is None)
# "Fused activation may be used only when the output datatype is FLOAT16 or FLOAT32." (ADD1)
FUSED_OUTPUT_TYPES = (DataType.FLOAT32, DataType.FLOAT16)
NULL_TENSORS = ("InputTensor", "OutputTensor")


def _full_name(type_name: str) -> str:
    """The catalog's enum name for any spelling of an operator; otherwise the text in enum form
    (validation then says it is not fusable)."""
    e = entry(type_name)
    if e is not None:
        return e.enum_name
    key = type_name.strip().upper()[:200]
    return key if key.startswith(PREFIX) else PREFIX + key


class FusedActivation:
    """A DML_OPERATOR_DESC for a FusedActivation field: an activation type and its attributes.

    ``FusedActivation("ACTIVATION_ELU", alpha=0.5)``; the type may be the full enum name
    (``"DML_OPERATOR_ACTIVATION_ELU"``) or DxDispatch's short form, and attributes may be
    spelled as in DirectML (``Alpha=0.5``) or in Python (``alpha=0.5``). Attributes left out
    take the activation's defaults. Wherever a FusedActivation is accepted, so is DxDispatch's
    JSON form ``{"Type": "DML_OPERATOR_ACTIVATION_ELU", "Desc": {"Alpha": 0.5}}`` (with
    ``"InputTensor": null`` and ``"OutputTensor": null`` allowed in Desc) and a bare type name.

    The same value is one element of the recurrent operators' ActivationDescs (RNN, LSTM, GRU).

    Immutable and hashable (attributes are static, as in DirectML); what the operator does with
    it is checked when the operator is called, against the activation's page and the host's.
    """

    __slots__ = ("type", "attrs")

    def __init__(self, type: str, /, **attrs: object):
        if not isinstance(type, str):
            raise TypeError(f"FusedActivation type must be an operator name, got {quote(type)}")
        object.__setattr__(self, "type", _full_name(type))
        object.__setattr__(self, "attrs", tuple(sorted(attrs.items())))

    def __setattr__(self, name, value):
        raise AttributeError("FusedActivation is immutable")

    @property
    def short_name(self) -> str:
        return self.type[len(PREFIX):]

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
        args = "".join(f", {k}={quote(v)}" for k, v in self.attrs)
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
                    f"{quote(sorted(map(str, keys)))}")
            desc = value.get("Desc")
            desc = {} if desc is None else desc
            if not isinstance(desc, Mapping) or not isinstance(value["Type"], str):
                raise TypeError("expected {'Type': 'DML_OPERATOR_...', 'Desc': {member: value, ...}}")
            return cls(value["Type"], **{str(k): v for k, v in desc.items()})
        raise TypeError(
            "expected dmljax.FusedActivation(...), an activation name or "
            f"{{'Type': ..., 'Desc': {{...}}}}; got {type(value).__name__}")
