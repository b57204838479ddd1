"""Operator declarations: one OpSpec per DML_OPERATOR_*, transcribed from its page.

Validation (validate.py), the public signature and docstring (op.py), ``dmljax ops`` and the
generated tests all read these records; nothing about an operator is written twice.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Callable, Mapping

from dmljax._src.catalog import BY_NAME, CatalogEntry
from dmljax._src.dtypes import DataType
from dmljax._src.feature_level import FeatureLevel

__all__ = [
    "REQUIRED",
    "INFERRED",
    "TensorSpec",
    "ParamSpec",
    "PageSlip",
    "SilentChoice",
    "TensorSupport",
    "SupportTable",
    "SupportGroup",
    "SameDataType",
    "SameSizes",
    "OpSpec",
    "table",
    "snake_case",
]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()


class _Inferred:
    def __repr__(self) -> str:
        return "INFERRED"


INFERRED = _Inferred()
"""An output's ``default_data_type`` when the record's ``infer_outputs`` gives the DataType
unless the caller chooses one (REDUCE: the input's, or UINT32 for ARGMAX/ARGMIN)."""


@functools.lru_cache(maxsize=None)
def snake_case(name: str) -> str:
    """DirectML member spelling to Python: ``ScaleBias`` -> ``scale_bias``, ``ATensor`` -> ``a``,
    ``InputTensors`` -> ``inputs`` (a tensor array)."""
    if name.endswith("Tensors"):
        name = name[: -len("Tensors")] + "s"
    elif name.endswith("Tensor"):
        name = name[: -len("Tensor")]
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """A tensor field of the desc.

    default_data_type: for an output whose DataType no constraint fixes, the caller chooses it
        with ``<arg>_data_type=`` (``output_data_type=``), defaulting to this DataType, or
        ``REQUIRED`` when the page gives none (CAST's OutputTensor), or ``INFERRED`` when
        ``infer_outputs`` gives it unless the caller chooses (the keyword's default is None).
    sizes_arg: for an output whose Sizes only the desc gives (SLICE_GRAD's OutputGradientTensor,
        ONE_HOT's depth, a generator's OutputTensor): the caller gives them as ``<arg>_sizes=``
        (``output_sizes=``, a tuple of positive ints), checked against the support table's
        dimension counts; the record's extra_checks check the rest.
    sizes_default: with sizes_arg, the keyword may be left out (None): the record's infer_outputs
        then gives the Sizes (NONZERO_COORDINATES' worst-case coordinates).
    count: for a tensor array (JOIN's InputTensors, SPLIT's OutputTensors), the desc's member that
        holds its length (``InputCount``): the Python argument is a sequence of arrays (an array
        output: a tuple returned, its Sizes a sequence given as ``<arg>_sizes=``); validation
        names each element ``InputTensors[i]`` (argument ``inputs[i]``).
    """

    dml_name: str
    kind: str  # "input" | "output"
    optional: bool = False
    default_data_type: DataType | _Required | _Inferred | None = None
    sizes_arg: bool = False
    sizes_default: bool = False
    count: str | None = None

    @property
    def array(self) -> bool:
        return self.count is not None

    @property
    def arg(self) -> str:
        return snake_case(self.dml_name)

    @property
    def data_type_arg(self) -> str:
        return f"{self.arg}_data_type"

    @property
    def sizes_kwarg(self) -> str:
        return f"{self.arg}_sizes"


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """A non-tensor field of the desc.

    type: DirectML's C type, which selects the checker (params.PARAM_KINDS): ``FLOAT``,
        ``UINT``, ``INT``, ``BOOL``, ``UINT[]``, ``INT[]``, ``FLOAT[]``, ``DML_SCALE_BIAS``, ``DML_SIZE_2D``,
        ``DML_SCALAR_UNION``, ``DML_TENSOR_DATA_TYPE``, ``DML_OPERATOR_DESC*`` (a fused
        activation), or an enum's name (``DML_ROUNDING_MODE``) with ``enum`` set.
    converted_to: for a FLOAT that meets a tensor's values (THRESHOLD's Min), that tensor: the
        value is converted to its DataType (truncation toward zero, saturated, for integers).
    enum: the DmlEnum class of an enum-typed member.
    count: for an array member, the desc's member that holds its length (``AxisCount`` for
        ``Axes``): a desc may give it, and it must then equal the array's length; the Python
        function takes the array alone.
    """

    dml_name: str
    type: str
    default: object = REQUIRED
    nullable: bool = False
    doc: str = ""
    converted_to: str | None = None
    enum: type | None = None
    count: str | None = None

    @property
    def arg(self) -> str:
        return snake_case(self.dml_name)


@dataclasses.dataclass(frozen=True)
class TensorSupport:
    dims: tuple[int, int]  # inclusive
    data_types: tuple[DataType, ...]  # in the page's order

    def dims_text(self) -> str:
        lo, hi = self.dims
        return str(lo) if lo == hi else f"{lo} to {hi}"


@dataclasses.dataclass(frozen=True)
class SupportTable:
    """One "DML_FEATURE_LEVEL_x_y and above" table of a page."""

    level: FeatureLevel
    tensors: Mapping[str, TensorSupport]


def _parse_dims(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"\s*(\d+)(?:\s*to\s*(\d+))?\s*", text)
    if not m:
        raise ValueError(f"bad dimension count text {text!r}")
    lo = int(m.group(1))
    return lo, int(m.group(2) or lo)


def table(level: str, **tensors: tuple[str, tuple[DataType, ...]]) -> SupportTable:
    """A support table written as the page has it:
    ``table("3.0", InputTensor=("1 to 8", FLOAT32_FLOAT16), ...)`` (the type lists are the named
    constants of dtypes.py, in the page's order)."""
    rows = {}
    for name, (dims, types) in tensors.items():
        if not isinstance(types, tuple) or not all(isinstance(t, DataType) for t in types):
            raise TypeError(f"{name}: data types must be a tuple of DataType (dtypes.py's named lists)")
        rows[name] = TensorSupport(_parse_dims(dims), types)
    return SupportTable(FeatureLevel.parse(level), rows)


@dataclasses.dataclass(frozen=True)
class SupportGroup:
    """The tables a page gives for some values of one attribute (REDUCE's "Tensor support
    according to function": a group per heading, e.g. "MIN and MAX")."""

    title: str  # the page's heading
    members: tuple  # the attribute's enum members the heading names
    support: tuple[SupportTable, ...]  # newest first, as OpSpec.support


def _union(groups: tuple[SupportGroup, ...]) -> tuple[SupportTable, ...]:
    """Per level at which any group has a table, each tensor's widest support over the groups
    (their tables in force there): what some value of the attribute allows."""
    levels = sorted({t.level for g in groups for t in g.support}, reverse=True)
    out = []
    for level in levels:
        rows = [next(t for t in g.support if t.level <= level) for g in groups
                if any(t.level <= level for t in g.support)]
        tensors = {}
        for name in rows[0].tensors:
            los, his, types = [], [], []
            for r in rows:
                sup = r.tensors[name]
                los.append(sup.dims[0])
                his.append(sup.dims[1])
                types += [d for d in sup.data_types if d not in types]
            order = list(DataType)
            tensors[name] = TensorSupport((min(los), max(his)), tuple(sorted(types, key=order.index)))
        out.append(SupportTable(level, tensors))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class SameDataType:
    """"X and Y must have the same DataType"."""

    tensors: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class SameSizes:
    """"X and Y must have the same DimensionCount and Sizes"."""

    tensors: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class PageSlip:
    """Where an operator's reference page contradicts DirectML.h or its own text, and the record
    follows the other source. The registry's tests hold each record against its page with these
    differences, so a page that is mended, or a record that drifts, fails there.

    levels: the record's support-table level -> the page's, where the page dates a table (and the
        operator's introduction) otherwise than DirectML.h does.
    types: tensor -> (the page's cell, the record's types), where a table cell contradicts the
        field's own text.
    blank_types: the page's tables leave the data types blank; the record chooses them.
    why: the difference in words, for the docs.
    """

    why: str
    levels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    types: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = dataclasses.field(default_factory=dict)
    blank_types: bool = False


@dataclasses.dataclass(frozen=True)
class SilentChoice:
    """A value dmljax chose where DirectML's page says nothing, or contradicts itself: a row of
    docs/silent.md ("Where DirectML is silent") and of the operator's section in the reference.

    where: what the choice is about (a case, an attribute, a formula); choice: dmljax's answer;
    why: the reason (the source followed, what the alternative would break). Plain text that
    Markdown reads (code spans, links relative to docs/); a ``|`` needs no escape.
    also: the short names (``ELEMENT_WISE_CLIP1``) of the other operators the same choice covers;
        the record that holds it is the first, and each of them shows it in its section.
    """

    where: str
    choice: str
    why: str
    also: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """Everything the page says about one operator that code needs.

    ulp: the float budget per output DataType against the float64 reference (docs/semantics.md#the-reference);
        types not listed are bit-exact.
    ulp_half: the FLOAT16 budget when allow_half_precision_computation=True.
    ulp_growth: for an accumulating operator (docs/semantics.md#accumulating-operators), ``(sizes, attrs) -> {DataType or
        "half": extra ULP}``: what a call's descriptor adds to ``ulp`` / ``ulp_half`` (a softmax's
        row length); ``budget()`` gives the total.
    math: whether the result depends on the compute precision, so that the operator offers
        allow_half_precision_computation (FLOAT16 is computed in FLOAT32 otherwise). False for
        selection, data movement and comparisons.
    gradient: the gradient rule in words (a *_GRAD operator's, or the derivative on the branch
        the forward pass selects), or why there is none; grad_operator: the *_GRAD enum name.
    extra_checks: functions ``(tensors, attrs, level) -> [Violation, ...]`` for what the page's
        constraints say beyond same DataType / same Sizes (``level``: the FeatureLevel checked).
    value_checks: functions ``(values, attrs, level) -> [Violation, ...]`` for what a tensor's
        values must be where they can be read before anything runs (a quantization scale that is
        not 0, NaN or infinite): ``values`` maps each input's DML name to its concrete value (a
        NumPy array, or a list of them for a tensor array) or None where the caller passes a
        tracer (inside the caller's jax.jit, grad or vmap), whose values are unknown until run
        time; the record's notes say what such a value gives. Called after the static checks.
    infer_outputs: for operators whose outputs' Sizes or DataType no constraint gives (REDUCE's
        kept axes, GEMM's M x N, CAST's chosen type...): ``(tensors, attrs, problems) ->
        {output name: TensorInfo}`` from the validated inputs and attributes, appending
        Violations for what cannot be computed; the result is checked against the support table
        like any tensor.
    support_by, groups: for a page whose tables depend on an attribute (REDUCE's Function):
        that attribute's DML name and the page's groups; ``support`` is then their union (what
        some value allows, computed), and ``support_at(level, value)`` gives the group's.
    page_slip: where the page contradicts DirectML.h or itself and the record does not follow it.
    silent: what dmljax chose where the page is silent (SilentChoice rows, docs/silent.md); notes
        keep what is not such a choice.
    The value, introducing level, page and family are the catalog's (``entry``), not repeated.
    """

    enum_name: str
    summary: str
    formula: str
    tensors: tuple[TensorSpec, ...]
    support: tuple[SupportTable, ...] = ()
    params: tuple[ParamSpec, ...] = ()
    constraints: tuple[SameDataType | SameSizes, ...] = ()
    ulp: Mapping[DataType, float] = dataclasses.field(default_factory=dict)
    ulp_half: float | None = None
    ulp_growth: Callable | None = None
    grad_operator: str | None = None
    gradient: str = ""
    in_place: bool = False
    math: bool = True
    notes: str = ""
    extra_checks: tuple[Callable, ...] = ()
    value_checks: tuple[Callable, ...] = ()
    infer_outputs: Callable | None = None
    support_by: str | None = None
    groups: tuple[SupportGroup, ...] = ()
    page_slip: PageSlip | None = None
    silent: tuple[SilentChoice, ...] = ()

    def __post_init__(self):
        e = BY_NAME.get(self.enum_name)
        if e is None or e.enum_name != self.enum_name:
            raise ValueError(f"{self.enum_name} is not a DirectML operator's enum name")
        for c in self.silent:
            for name in c.also:
                other = BY_NAME.get("DML_OPERATOR_" + name)
                if other is None or other.short_name != name or name == e.short_name:
                    raise ValueError(f"{self.enum_name}: silent choice {c.where!r} names {name!r} in also, "
                                     "which is not another operator's short name")
        if bool(self.support_by) != bool(self.groups) or (self.groups and self.support):
            raise ValueError(f"{self.enum_name}: give either support, or support_by with groups")
        if self.groups:
            param = next((p for p in self.params if p.dml_name == self.support_by), None)
            members = [m for g in self.groups for m in g.members]
            if param is None or param.enum is None or sorted(members) != sorted(param.enum):
                raise ValueError(f"{self.enum_name}: the groups must name each {self.support_by} value once")
            object.__setattr__(self, "support", _union(self.groups))
        names = {t.dml_name for t in self.tensors}
        for tables in [self.support] + [g.support for g in self.groups]:
            levels = [t.level for t in tables]
            if levels != sorted(levels, reverse=True):
                raise ValueError(f"{self.enum_name}: support tables must be listed newest first")
            if not tables or min(levels) != self.introduced:
                raise ValueError(f"{self.enum_name}: the oldest support table must be the introducing level")
            for t in tables:
                if set(t.tensors) != names:
                    raise ValueError(f"{self.enum_name}: table {t.level} does not list {sorted(names)}")

    def budget(self, data_type: DataType, sizes: tuple[int, ...] | None = None,
               attrs: Mapping[str, object] | None = None, half: bool = False) -> float:
        """The ULP budget of one call: ``ulp[data_type]`` (``ulp_half`` with half-precision
        computation) plus what ``ulp_growth`` adds for the input ``sizes`` and the attributes
        (DML names). Without ``sizes`` only the flat part (for a growing budget, a lower bound)."""
        flat = (self.ulp_half or 0) if half else self.ulp.get(data_type, 0)
        if self.ulp_growth is None or sizes is None:
            return flat
        extra = self.ulp_growth(tuple(sizes), dict(attrs or {}))
        return flat + extra.get("half" if half else data_type, 0)

    def __hash__(self) -> int:  # records are compared by identity: one per operator
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other

    @property
    def entry(self) -> CatalogEntry:
        """The operator's row of DirectML's catalog (value, introducing level, family, page)."""
        return BY_NAME[self.enum_name]

    @property
    def value(self) -> int:
        return self.entry.value

    @property
    def introduced(self) -> FeatureLevel:
        return self.entry.introduced

    @property
    def page(self) -> str:
        return self.entry.page

    @property
    def family(self) -> str:
        return self.entry.family

    @property
    def short_name(self) -> str:
        """``ELEMENT_WISE_IF``: the enum name without ``DML_OPERATOR_``."""
        return self.entry.short_name

    @property
    def python_name(self) -> str:
        return self.short_name.lower()

    @functools.cached_property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return tuple(t for t in self.tensors if t.kind == "input")

    @functools.cached_property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return tuple(t for t in self.tensors if t.kind == "output")

    def tensor(self, dml_name: str) -> TensorSpec:
        """The tensor field named ``dml_name`` (an element of a tensor array, ``InputTensors[2]``,
        gives its array's field)."""
        base = dml_name.split("[", 1)[0]
        for t in self.tensors:
            if t.dml_name == base:
                return t
        raise KeyError(dml_name)

    def group(self, value: object) -> SupportGroup | None:
        """The group whose tables hold for ``value`` of the ``support_by`` attribute (a member,
        or any spelling its enum parses), or None (no groups, or not a valid value)."""
        if not self.groups:
            return None
        enum = next(p.enum for p in self.params if p.dml_name == self.support_by)
        try:
            member = enum.parse(value)
        except (ValueError, TypeError):
            return None
        return next(g for g in self.groups if member in g.members)

    def tables(self, value: object = None) -> tuple[SupportTable, ...]:
        """The tables for ``value`` of the ``support_by`` attribute (its group's), or ``support``."""
        g = self.group(value) if value is not None else None
        return g.support if g is not None else self.support

    def support_at(self, level: FeatureLevel, value: object = None) -> SupportTable | None:
        """The table in force at ``level``: the newest one at or below it (None before the
        operator was introduced); with ``value`` of the ``support_by`` attribute, its group's."""
        for t in self.tables(value):
            if t.level <= level:
                return t
        return None

    def lowest_level(self, tensor: str, predicate: Callable[[TensorSupport], bool],
                     above: FeatureLevel, value: object = None) -> FeatureLevel | None:
        """The lowest table level above ``above`` whose row for ``tensor`` satisfies ``predicate``
        (with ``value``: in that value's group)."""
        for t in reversed(self.tables(value)):
            if t.level > above and predicate(t.tensors[tensor]):
                return t.level
        return None
