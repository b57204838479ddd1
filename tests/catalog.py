"""Cases generated from the registry and the references, for every registered operator.

An operator's record (dmljax/_src/ops/<family>/<module>.py) gives its support tables,
constraints, budgets and attributes; its reference (a ``Reference`` in the ``REFERENCES`` of
tests/reference/<family>/<module>.py, the module of the same name) gives the float64 function, the
attribute sets, input roles and the gradient. The references are found by walking the tree: every
family's package, every module in it whose name does not start with an underscore. From the two:

- positive cases: every support table x data type of the main tensor x {fewest, most, 4}
  dimensions (x each output DataType the caller may choose) x attribute set of the reference,
  sampled per operator with a fixed seed under ``CAP`` (the sample covers every table, data type,
  dimension count and attribute set it can) for the fast tier; the slow tier (tests/tiers.py) runs
  the rest (``tiered_cases``);
- negative cases, all of them (``jax.eval_shape`` only): one dimension too few and too many, each
  DataType the main tensor's row does not list, the level below the operator's introduction;
- ``completeness()``: what a registered operator lacks (reference, generated case, gradient rule
  or the reason for none), which references name no registered operator, and what in
  tests/reference is out of its place (``stray_reference_modules``); ``unmatched_reference_modules``
  checks that the references' tree mirrors the library's.

No operator is named here: whatever differs between operators lives in its record or reference.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import pkgutil
import zlib
from pathlib import Path
from typing import Mapping

import jax
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.fused import FusedActivation
from dmljax._src.registry import entry, get_operator, registry
from dmljax._src.spec import INFERRED, REQUIRED, OpSpec, SameDataType
from tests import tiers
from tests.reference.record import KNOWN_ISSUES, ROLES, Attrs, Reference

CAP = 2
"""Positive cases per operator in the fast tier: every support table and attribute set first,
then as many data types, dimension counts and output types as the cap allows (the widest tables
have 11 types). Two keep the README's command under six minutes on a 2-core machine at 177
operators (three came to 369 s of pytest in a fresh clone on a quiet 2-core Xeon, with the rest
of the fast tier; four, 682 cases, to 350-380 s as the operators' CPU forms grew; five took 756
and 383 s, six 862 and 370 s: the machine is shared and noisy); the slow tier runs every case."""
FILL = 0
"""Random cases added after the covering ones (within the cap): combinations the coverage alone
would not pick. None in the fast tier, which must finish within the README's 6 minutes on a
2-core machine (two gave 1,414 cases at 161 operators, the covering ones alone 1,216): the slow
tier runs every case."""
FULL = tiers.slow()
"""The slow tier: every generated case, not only the sample (``positive_cases``'s default)."""

SHAPE8 = (2, 3, 1, 2, 1, 1, 2, 1)
ALL_TYPES = tuple(DataType)
REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
LIBRARY_DIR = Path(dmljax.__file__).resolve().parent / "_src" / "ops"
SHARED_MODULES = ("record", "rules")  # tests/reference's top-level modules, which are not families


def shape_of(ndim):
    return SHAPE8[:ndim] if ndim <= 8 else (1,) * ndim


def vector_shape(dims, n=64):
    """``n`` elements in the fewest dimensions a row allows (at least 1): (64,) or (1, 1, 1, 64)."""
    ndim = max(dims[0], 1)
    return (1,) * (ndim - 1) + (n,)


# ---------------------------------------------------------------------------------- references
def families() -> tuple[str, ...]:
    """The operator families of DirectML's catalog (dmljax.catalog()), in first-seen order."""
    return tuple(dict.fromkeys(e.family for e in dmljax.catalog()))


def unimplemented(index: int = 0):
    """The ``index``-th (0 or 1) of the two operators the ``unimplemented`` fixture hides from the
    registry: the tests' example of a DirectML operator without an implementation. dmljax
    implements all 177, so the example is made by hiding the catalog's last two for one test, and
    the paths that name a missing operator (``dmljax ops``, ``get_operator``, the bench, DxDispatch
    models) stay tested."""
    return dataclasses.replace(dmljax.catalog()[-2:][index], implemented=False)


def home(family: str, module: str | None = None) -> str:
    """Where references live: a family's package, tests/reference/<family>/, or with ``module``
    one module of it, tests/reference/<family>/<module>.py (named as the library's
    dmljax/_src/ops/<family>/<module>.py)."""
    return f"tests/reference/{family}/" if module is None else f"tests/reference/{family}/{module}.py"


def library_module(name: str) -> str | None:
    """The module of an operator's record in its family's package ("gated" for a record in
    dmljax/_src/ops/activation/gated.py), or None for a record outside one."""
    op = get_operator(name)
    package = f"dmljax._src.ops.{op.spec.family}."
    module = op.__module__
    return module[len(package):] if module.startswith(package) and "." not in module[len(package):] else None


def reference_modules() -> dict[str, object]:
    """Every reference module, imported, by its path in tests/reference without ".py"
    ("activation/piecewise"): each module of each family's package (pkgutil) whose name does not
    start with an underscore (those hold what the family's modules share)."""
    modules = {}
    for family in families():
        if not (REFERENCE_DIR / family / "__init__.py").is_file():
            continue  # stray_reference_modules() reports a family that is not a package
        package = importlib.import_module(f"tests.reference.{family}")
        for m in pkgutil.iter_modules(package.__path__):
            if not m.name.startswith("_"):
                modules[f"{family}/{m.name}"] = importlib.import_module(f"{package.__name__}.{m.name}")
    return modules


def _is_docstring_only(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return len(body) <= 1 and all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
                                  and isinstance(n.value.value, str) for n in body)


def stray_reference_modules(root: Path = REFERENCE_DIR) -> list[str]:
    """What in tests/reference the discovery does not read as it should, each as a sentence: a
    top-level module or folder that is neither a family's package nor a shared module (a misspelt
    family, a family written as one module, a folder without __init__.py), and a family's
    __init__.py that holds more than a docstring (a family's references live in its modules)."""
    fams = set(families())
    problems = []
    for path in sorted(root.iterdir()):
        if path.name.startswith((".", "__")):
            continue  # __init__.py, __pycache__
        rel = f"tests/reference/{path.name}" + ("/" if path.is_dir() else "")
        if path.is_dir() and path.name in fams and (path / "__init__.py").is_file():
            if not _is_docstring_only(path / "__init__.py"):
                problems.append(f"{rel}__init__.py holds more than a docstring: the family's references "
                                f"live in its modules ({rel}<module>.py), which tests/catalog.py finds")
            continue
        if path.suffix == ".py" and path.stem in SHARED_MODULES:
            continue
        if path.is_dir() or path.suffix == ".py":
            problems.append(f"{rel} is neither a family's package (tests/reference/<family>/ with an "
                            f"__init__.py, <family> one of dmljax.catalog()'s families) nor a shared "
                            f"module ({', '.join(m + '.py' for m in SHARED_MODULES)})")
    return problems


def unmatched_reference_modules(library: Path = LIBRARY_DIR, module_of=library_module) -> list[str]:
    """Where the references' tree and the library's differ, each as a sentence: a reference module
    without a library module of its name (dmljax/_src/ops/<family>/<module>.py under
    ``library``), and an operator whose reference is in another module than its record
    (``module_of(name)``: the record's module in its family's package, as ``library_module``)."""
    problems = []
    for key, module in reference_modules().items():
        family, name = key.split("/")
        if not (library / family / f"{name}.py").is_file():
            problems.append(f"tests/reference/{key}.py has no library module of its name "
                            f"(dmljax/_src/ops/{key}.py)")
        for op in getattr(module, "REFERENCES", {}):
            if op in registry() and module_of(op) != name:
                where = module_of(op)
                record = (f"dmljax/_src/ops/{family}/{where}.py" if where is not None
                          else f"{get_operator(op).__module__}, outside dmljax/_src/ops/{family}/")
                problems.append(f"{op}: its reference is in tests/reference/{key}.py; its record "
                                f"is in {record}")
    return problems


def collect_references(modules: Mapping[str, object]) -> tuple[dict[str, Reference], list[str]]:
    """Every module's REFERENCES merged, and the problems found: a module without a REFERENCES
    dict, an entry that is not a Reference, an operator filed under another family's module,
    an operator in two modules. ``modules`` are keyed by their path in tests/reference without
    ".py" ("activation/piecewise"), as ``reference_modules()`` gives them."""
    refs: dict[str, Reference] = {}
    problems = []
    for key, module in modules.items():
        family, where = key.split("/")[0], f"tests/reference/{key}.py"
        table = getattr(module, "REFERENCES", None)
        if not isinstance(table, dict):
            problems.append(f"{where} has no REFERENCES dict")
            continue
        for name, ref in table.items():
            if not isinstance(ref, Reference):
                problems.append(f"{name}: its REFERENCES entry in {where} is "
                                f"{type(ref).__name__}, not a Reference record")
                continue
            e = entry(name)
            if e is not None and e.enum_name == name and e.family != family:
                problems.append(f"{name}: its reference is in {where}; its family "
                                f"is {e.family} ({home(e.family)})")
            if name in refs:
                problems.append(f"{name}: referenced twice")
            refs[name] = ref
    return refs, problems


@functools.lru_cache(maxsize=None)
def _loaded():
    return collect_references(reference_modules())


def references() -> dict[str, Reference]:
    """Every operator's Reference, from all the family modules."""
    return dict(_loaded()[0])


# ---------------------------------------------------------------------------------- cases
@dataclasses.dataclass(frozen=True)
class Case:
    op_name: str
    level: FeatureLevel
    data_type: DataType
    ndim: int
    out_type: DataType | None = None  # for an output whose DataType the caller chooses
    attrs: int = 0  # which of the reference's attribute sets (for this data type) the case runs
    n_attrs: int = 1  # how many the reference has
    attrs_type: DataType | None = None  # whose attribute sets ``attrs`` indexes (None: data_type's)

    @property
    def id(self):
        out = f"-{self.out_type.name}" if self.out_type else ""
        attrs = f"-attrs{self.attrs}" if self.n_attrs > 1 else ""
        return (f"{self.op_name[len('DML_OPERATOR_'):]}-{self.level.version}-{self.data_type.name}-"
                f"{self.ndim}d{out}{attrs}")


def main_tensor(spec: OpSpec) -> str:
    """The tensor whose DataType a case varies: the first input that must share an output's
    DataType, else the first input; for an operator without inputs (a generator), its first
    output."""
    outputs = {t.dml_name for t in spec.outputs}
    for t in spec.inputs:
        for c in spec.constraints:
            if isinstance(c, SameDataType) and t.dml_name in c.tensors and outputs & set(c.tensors):
                return t.dml_name
    return spec.inputs[0].dml_name if spec.inputs else spec.outputs[0].dml_name


def chosen_output(spec: OpSpec):
    """The output whose DataType the caller chooses (``output_data_type=``), or None."""
    return next((t for t in spec.outputs if t.default_data_type is not None), None)


def tensor_types(spec: OpSpec, level: FeatureLevel, data_type: DataType,
                 out_type: DataType | None = None) -> dict[str, DataType]:
    """Each tensor's DataType in a case: the main tensor's and those the constraints tie to it
    get ``data_type``; a caller-chosen output gets ``out_type``; any other tensor ``data_type``
    too where its row lists it, else the first type of its row (ConditionTensor: UINT8)."""
    main = main_tensor(spec)
    tied = {main}
    for c in spec.constraints:
        if isinstance(c, SameDataType) and main in c.tensors:
            tied |= set(c.tensors)
    table = spec.support_at(level) or spec.support[-1]
    chosen = chosen_output(spec)
    types = {}
    for t in spec.tensors:
        if t.dml_name in tied:
            types[t.dml_name] = data_type
        elif chosen is not None and t is chosen:
            row = table.tensors[t.dml_name].data_types
            default = t.default_data_type
            if default in (INFERRED, REQUIRED) and data_type in row:
                default = data_type
            elif default in (INFERRED, REQUIRED):  # a row without the case's type (an integer output of float inputs)
                default = row[0]
            types[t.dml_name] = out_type or default
        elif data_type in table.tensors[t.dml_name].data_types:  # POW's ExponentTensor: the same
            types[t.dml_name] = data_type
        else:
            types[t.dml_name] = table.tensors[t.dml_name].data_types[0]
    return types


def output_type(spec: OpSpec, types: Mapping[str, DataType], attrs: Attrs) -> DataType:
    """The first output's DataType in a case: its attribute set's ``<arg>_data_type`` where the
    set chooses it (REDUCE's ARGMAX sets), else the case's."""
    t = spec.outputs[0]
    chosen = attrs.dml.get(t.data_type_arg) if t.default_data_type is not None else None
    return DataType.parse(chosen) if chosen is not None else types[t.dml_name]


def needs_x64(types: Mapping[str, DataType]) -> bool:
    return any(t.needs_x64 for t in types.values())


def output_kwargs(spec: OpSpec, case: Case) -> dict:
    """The case's ``<output>_data_type=``: its output type, or for a generator whose output is
    the main tensor (DIAGONAL_MATRIX), the case's DataType."""
    chosen = chosen_output(spec)
    if chosen is not None and chosen.dml_name == main_tensor(spec):
        return {chosen.data_type_arg: case.data_type}
    if chosen is not None and case.out_type is None and chosen.default_data_type is REQUIRED:
        return {chosen.data_type_arg: tensor_types(spec, case.level, case.data_type)[chosen.dml_name]}
    return {} if chosen is None or case.out_type is None else {chosen.data_type_arg: case.out_type}


def groups(spec: OpSpec) -> list:
    """The operator's support groups (REDUCE's per Function), or [None] for one set of tables."""
    return list(spec.groups) or [None]


def in_group(spec: OpSpec, attrs: Attrs, group) -> bool:
    """Whether an attribute set selects ``group``'s tables (always, for one set of tables)."""
    if group is None:
        return True
    param = next(p for p in spec.params if p.dml_name == spec.support_by)
    return spec.group(attrs.dml.get(param.arg, param.default)) is group


def newest_sets(spec: OpSpec, ref: Reference, data_type: DataType, shape=None) -> tuple[Attrs, ...]:
    """The reference's attribute sets for ``data_type`` (resolved for ``shape`` if given) that the
    newest table accepts it with: all of them, or, where the tables depend on an attribute
    (REDUCE's Function), those whose group's newest table lists it."""
    sets = ref.attr_sets(data_type, shape)
    required = {t.data_type_arg: tensor_types(spec, spec.support[0].level, data_type)[t.dml_name].name
                for t in spec.outputs if t.default_data_type is REQUIRED}
    if required:  # CAST's output_data_type, which has no default: the case's type where the table allows
        sets = tuple(dataclasses.replace(a, dml={**required, **a.dml}) for a in sets)
    if not spec.groups:
        return sets
    main = main_tensor(spec)
    return tuple(a for a, raw in zip(sets, ref.attr_sets(data_type))
                 if any(in_group(spec, raw, g) and data_type in g.support[0].tensors[main].data_types
                        for g in spec.groups))


def available(attrs: Attrs, level: FeatureLevel) -> bool:
    """Whether an attribute set's values exist at ``level`` (``Attrs.since``)."""
    return attrs.since is None or FeatureLevel.parse(attrs.since) <= level


def all_positive_cases(name: str, ref: Reference | None = None) -> list[Case]:
    """Every table x data type x {fewest, most, 4} dimensions (x chosen output type) x attribute
    set of one operator, in table order (for an operator whose tables depend on an attribute,
    each group's tables with the attribute sets that select it); data types whose attribute
    sets are empty are left out."""
    spec = get_operator(name).spec
    ref = ref if ref is not None else references().get(name)
    main = main_tensor(spec)
    chosen = chosen_output(spec)
    cases = []
    for group in groups(spec):
        for table in (group.support if group else spec.support):
            sup = table.tensors[main]
            lo, hi = sup.dims
            outs = [None]
            if chosen is not None and chosen.dml_name != main:  # a generator's output type is the case's
                row = table.tensors[chosen.dml_name].data_types
                outs = list(ref.output_types(row)) if ref is not None and ref.output_types else [row[0]]
            for dt in sup.data_types:
                sets = ref.attr_sets(dt) if ref is not None else (Attrs(),)
                picked = [i for i, a in enumerate(sets) if in_group(spec, a, group) and available(a, table.level)]
                for ndim in sorted({lo, hi, 4} & set(range(lo, hi + 1))):
                    for out in outs:
                        cases += [Case(name, table.level, dt, ndim, out, i, len(sets)) for i in picked]
    return cases


def sample(cases: list[Case], cap: int, seed_key: str) -> list[Case]:
    """At most ``cap`` cases, the same ones on every run (the seed is the operator's name, so
    adding an operator changes no other operator's sample): greedily the case that brings the
    most tables, data types, dimension counts, output types and attribute sets not yet covered,
    then up to ``FILL`` random ones, in the original order. A new support table or attribute set
    outweighs any number of new types, dimension counts and output types: each table and each
    attribute set is covered first, past ``cap`` where an operator has more of them than that."""
    if len(cases) <= cap:
        return list(cases)
    rng = np.random.default_rng(zlib.crc32(seed_key.encode()))
    order = [int(i) for i in rng.permutation(len(cases))]

    def features(c):
        return {("level", c.level), ("type", c.data_type), ("ndim", c.ndim), ("out", c.out_type),
                ("attrs", c.attrs)}

    def weight(new):
        return sum(100 if kind in ("level", "attrs") else 1 for kind, _ in new)

    chosen, seen = [], set()
    while len(chosen) < len(cases):
        best = max((i for i in order if i not in chosen), key=lambda i: weight(features(cases[i]) - seen))
        new = features(cases[best]) - seen
        if not new or (len(chosen) >= cap and weight(new) < 100):  # past the cap: tables and attribute sets only
            break
        chosen.append(best)
        seen |= features(cases[best])
    limit = min(cap, len(chosen) + FILL)
    for i in order:
        if len(chosen) >= limit:
            break
        if i not in chosen:
            chosen.append(i)
    return [cases[i] for i in sorted(chosen)]


def cap_of(name: str, cap: int = CAP) -> int:
    """An operator's cap: ``cap`` per group of support tables (REDUCE's five Function groups)."""
    return cap * (len(get_operator(name).spec.groups) or 1)


def positive_cases(names=None, full: bool | None = None, cap: int = CAP) -> list[Case]:
    """The positive cases the suite runs: for each operator (default: every registered one)
    its sample under ``cap``, or all of them (``full``; default: in the slow tier)."""
    full = FULL if full is None else full
    refs = references()
    out = []
    for name in names or registry():
        if name not in refs:
            continue  # completeness() reports it
        cases = all_positive_cases(name, refs[name])
        out += cases if full else sample(cases, cap_of(name, cap), name)
    return out


def tiered_cases(names=None) -> list:
    """Every positive case as a parameter list: the sample first, plain (the fast tier), then the
    rest marked ``slow``, so that ``pytest --slow -m slow`` runs only what the fast tier left out."""
    sampled = positive_cases(names, full=False)
    fast = set(sampled)
    # (outside the slow tier the rest would only be collected to be left out)
    rest = [c for c in positive_cases(names, full=True) if c not in fast] if tiers.slow() else []
    return [*sampled, *(pytest.param(c, marks=pytest.mark.slow, id=c.id) for c in rest)]


def negative_cases(names=None):
    """(case, what) pairs just outside a table: one dimension too few/many, and each data type
    the main tensor's row does not list; plus the level just below the operator's introduction."""
    out = []
    refs = references()
    for name in names or registry():
        spec = get_operator(name).spec
        main = main_tensor(spec)
        ref = refs.get(name)
        for group in groups(spec):
            for table in (group.support if group else spec.support):
                sup = table.tensors[main]
                lo, hi = sup.dims
                dt0 = sup.data_types[0]
                # the first attribute set of the row's first type that selects this group
                sets = ref.attr_sets(dt0) if ref is not None else (Attrs(),)
                i = next((k for k, a in enumerate(sets) if in_group(spec, a, group) and available(a, table.level)), None)
                if i is None:
                    continue
                kw = dict(attrs=i, n_attrs=len(sets), attrs_type=dt0 if group is not None else None)
                if lo - 1 >= 0:
                    out.append((Case(name, table.level, dt0, lo - 1, **kw), "dims"))
                out.append((Case(name, table.level, dt0, hi + 1, **kw), "dims"))
                for dt in ALL_TYPES:
                    if dt not in sup.data_types:
                        out.append((Case(name, table.level, dt, lo, **kw), "type"))
        below = [lv for lv in FeatureLevel if lv < spec.introduced]
        if below:
            t = spec.support[-1].tensors[main]
            out.append((Case(name, below[-1], t.data_types[0], t.dims[0]), "level"))
    return out


# ---------------------------------------------------------------------------------- budgets
def _fused_specs(spec: OpSpec, attrs: Attrs):
    for p in spec.params:
        value = attrs.dml.get(p.arg)
        if p.type == "DML_OPERATOR_DESC*" and value is not None:
            yield get_operator(FusedActivation.coerce(value).type).spec


def budget(spec: OpSpec, attrs: Attrs, data_type: DataType, half: bool = False, sizes=None, args=None) -> float:
    """The record's ULP budget for ``data_type`` (``ulp_half`` with half-precision computation)
    for a call on inputs of ``sizes`` (``OpSpec.budget``: an accumulating operator's grows with
    its terms; ``args``, the call's inputs, give it every input's Sizes by tensor name, as
    CONVOLUTION's filter); with a fused activation, the larger of the host's and the activation's."""
    dml = {p.dml_name: attrs.dml.get(p.arg) for p in spec.params}
    for t, a in zip(spec.inputs, args or ()):
        if a is not None and not t.array:
            dml[t.dml_name] = tuple(np.shape(a))
    specs = [spec, *_fused_specs(spec, attrs)]
    return max(s.budget(data_type, sizes, dml, half) for s in specs)


def output_magnitude(ref, args, attrs: Attrs, output: int = 0):
    """``ref.magnitude`` for output ``output``: its array for the first output (None for the
    others), or its entry where it gives a tuple, one per output."""
    if ref.magnitude is None:
        return None
    size = ref.magnitude(*args, **attrs.ref_kwargs)
    if isinstance(size, tuple):
        return size[output]
    return size if output == 0 else None


def fusable(spec: OpSpec, attrs: Attrs) -> bool:
    """Whether the call holds a multiply-add (a ScaleBias, or a formula that is one, as its
    reference says: ``Reference.multiply_add``) that a backend may fuse into an FMA or not
    (docs/semantics.md#fused-multiply-add): then results may differ by more than bits between jit and eager."""
    ref = references().get(spec.enum_name)
    if ref is not None and ref.multiply_add:
        return True
    return any(p.type == "DML_SCALE_BIAS" and attrs.dml.get(p.arg) is not None for p in spec.params)


# ---------------------------------------------------------------------------------- inputs
def random_tensor(rng, data_type, shape, role="value"):
    """Random values of ``data_type`` for an input of ``role`` (record.ROLES)."""
    if role == "condition":
        return rng.choice(np.array([0, 1, 2, 255], data_type.dtype), size=shape)
    if data_type.is_float:
        if role == "positive":
            return rng.uniform(0.25, 8.0, shape).astype(data_type.dtype)
        if role == "factor":
            sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
            return (sign * np.exp2(rng.uniform(-1.0, 1.0, shape))).astype(data_type.dtype)
        x = rng.standard_normal(shape) * 3.0
        if role == "nonzero":
            x = np.where(np.abs(x) < 0.5, np.copysign(0.5, x) + x, x)
        return x.astype(data_type.dtype)
    info = np.iinfo(data_type.dtype)
    lo = 1 if role == "positive" else int(info.min)
    if data_type in (DataType.INT4, DataType.UINT4):
        x = rng.integers(lo, int(info.max) + 1, size=shape).astype(data_type.dtype)
    else:
        vals = rng.integers(lo, int(info.max), size=shape, endpoint=True, dtype=data_type.dtype)
        small = rng.integers(max(lo, -5), 6, size=shape).astype(data_type.dtype)
        x = np.where(rng.random(shape) < 0.5, vals, small)
    if role == "nonzero":
        x = np.where(x == 0, np.ones_like(x), x)
    return x


def inputs_for(spec: OpSpec, ref: Reference, types: Mapping[str, DataType], shape, rng, attrs: Attrs | None = None):
    """The inputs of a case: the reference's ``make_inputs`` (given the attribute set's
    keywords), or random values of ``shape`` for every input tensor, each of its case type and
    its reference role."""
    if ref.make_inputs is not None:
        return list(ref.make_inputs(rng, types, tuple(shape), **({**attrs.dml, **attrs.inputs} if attrs is not None else {})))
    return [[random_tensor(rng, types[t.dml_name], shape, ref.role(t.dml_name)) for _ in range(2)] if t.array
            else random_tensor(rng, types[t.dml_name], shape, ref.role(t.dml_name)) for t in spec.inputs]


def leaves_out(args, ref: Reference | None = None) -> bool:
    """Whether a case leaves an optional input out (None: DIAGONAL_MATRIX1 without its
    InputTensor), so that there is nothing to differentiate; with a reference whose cases leave
    inputs out by design (``Reference.null_inputs``), only when no input is given."""
    if ref is not None and ref.null_inputs:
        return all(a is None for a in args)
    return any(a is None for a in args)


def first_output(out):
    """The first output of an operator's result (an operator with several returns a tuple)."""
    return out[0] if isinstance(out, tuple) else out


def abstract_inputs(spec: OpSpec, types: Mapping[str, DataType], shape):
    """Shapes without values for every input (a tensor array: two of them)."""
    return [[jax.ShapeDtypeStruct(shape, types[t.dml_name].dtype)] * 2 if t.array
            else jax.ShapeDtypeStruct(shape, types[t.dml_name].dtype) for t in spec.inputs]


def newest_types(spec: OpSpec) -> tuple[DataType, ...]:
    return spec.support[0].tensors[main_tensor(spec)].data_types


# ---------------------------------------------------------------------------------- completeness
def completeness(ops: Mapping[str, object] | None = None, refs: Mapping[str, Reference] | None = None,
                 load_problems: list[str] | None = None) -> dict[str, list[str]]:
    """What each operator lacks, by enum name (an empty list: complete): every registered
    operator needs a Reference, at least one generated case, and a gradient reference or a
    written reason for none; every Reference must name a registered operator. ``ops`` and
    ``refs`` default to the registry and the reference modules (tests pass altered copies)."""
    ops = registry() if ops is None else ops
    if refs is None:
        refs, loaded = _loaded()
        load_problems = list(loaded) + stray_reference_modules()
    report: dict[str, list[str]] = {name: [] for name in ops}
    report[""] = list(load_problems or [])
    for name, op in ops.items():
        spec = op.spec
        ref = refs.get(name)
        if ref is None:
            report[name].append(f"{name}: no reference (a Reference in the REFERENCES of "
                                f"{home(spec.family, library_module(name))})")
            continue
        if not all_positive_cases(name, ref):
            report[name].append(f"{name}: no generated case (its attribute sets give none for any data type)")
        if ref.grad is None and not ref.no_grad.strip():
            report[name].append(f"{name}: no gradient reference (Reference.grad) and no written "
                                "reason for none (Reference.no_grad)")
        if ref.grad is not None and ref.no_grad.strip():
            report[name].append(f"{name}: both a gradient reference and a reason for none")
        tensors = {t.dml_name for t in spec.inputs}
        for tensor, role in ref.roles.items():
            if tensor not in tensors:
                report[name].append(f"{name}: role for {tensor}, which is not one of its inputs {sorted(tensors)}")
            if role not in ROLES:
                report[name].append(f"{name}: role {role!r} for {tensor}; roles: {', '.join(ROLES)}")
        for dt in sorted({c.data_type for c in all_positive_cases(name, ref)}, key=lambda t: t.value):
            for attrs in ref.attr_sets(dt):
                for check in attrs.known_issues:
                    if check not in KNOWN_ISSUES:
                        report[name].append(f"{name}: known issue for {check!r}, which is not a "
                                            f"generated check ({', '.join(KNOWN_ISSUES)})")
        if chosen_output(spec) is not None and ref.output_types is None:
            report[name].append(f"{name}: {chosen_output(spec).dml_name}'s DataType is the caller's "
                                "choice: say which ones the cases use (Reference.output_types)")
    for name in refs:
        if name not in ops:
            e = entry(name)
            what = ("a DirectML operator that is not registered" if e is not None and e.enum_name == name
                    else "not a DirectML operator's enum name")
            report.setdefault(name, []).append(f"{name}: REFERENCES names it, but it is {what}")
    return report
