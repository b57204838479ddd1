"""Docstrings and Markdown support tables generated from an operator's record."""

from __future__ import annotations

import textwrap

from dmljax._src.feature_level import FeatureLevel
from dmljax._src.spec import INFERRED, REQUIRED, OpSpec

__all__ = ["support_table_text", "docstring", "HALF_ARG"]

HALF_ARG = "allow_half_precision_computation"


def support_table_text(spec: OpSpec, level: FeatureLevel | None = None) -> str:
    """The support tables as Markdown (only the one in force at ``level`` if given); for an
    operator whose tables depend on an attribute (REDUCE's Function), each group's under its
    page heading."""
    if spec.groups:
        parts = []
        for g in spec.groups:
            tables = g.support if level is None else [t for t in g.support if t.level <= level][:1]
            if tables:
                parts.append(f"With {spec.support_by} {g.title}:\n\n" + _tables_text(spec, tables))
        return "\n\n".join(parts)
    tables = spec.support if level is None else [t for t in [spec.support_at(level)] if t]
    return _tables_text(spec, tables)


def _tables_text(spec: OpSpec, tables) -> str:
    out = []
    for t in tables:
        out.append(f"{t.level.dml_name} and above:\n")
        out.append("| Tensor | Kind | Supported dimension counts | Supported data types |")
        out.append("| ------ | ---- | -------------------------- | -------------------- |")
        for name, sup in t.tensors.items():
            kind = spec.tensor(name).kind.capitalize()
            out.append(f"| {name} | {kind} | {sup.dims_text()} | {', '.join(d.name for d in sup.data_types)} |")
        out.append("")
    return "\n".join(out).rstrip()


def docstring(spec: OpSpec, extra: str) -> str:
    lines = [
        f"{spec.enum_name} (enum value {spec.value}; introduced in {spec.introduced.dml_name}).",
        "",
        spec.summary,
        "",
        "Formula, as on the page::",
        "",
        *("    " + ln for ln in spec.formula.strip("\n").splitlines()),
        "",
        "Args:",
    ]
    for t in spec.inputs:
        lines.append(f"    {t.arg}: {t.dml_name}{' (optional)' if t.optional else ''}.")
    for p in spec.params:
        dflt = "required" if p.default is REQUIRED else f"default {p.default!r}"
        lines.append(f"    {p.arg}: {p.dml_name} ({p.type}, {dflt}, static). {p.doc}".rstrip())
    for t in spec.outputs:
        if t.default_data_type is REQUIRED:
            lines.append(f"    {t.data_type_arg}: the DataType of {t.dml_name} (required).")
        elif t.default_data_type is INFERRED:
            lines.append(f"    {t.data_type_arg}: the DataType of {t.dml_name} (default None: as the notes say).")
        elif t.default_data_type is not None:
            lines.append(f"    {t.data_type_arg}: the DataType of {t.dml_name} (default {t.default_data_type.name}).")
        if t.sizes_arg:
            when = "default None: as the notes say" if t.sizes_default else "required"
            lines.append(f"    {t.sizes_kwarg}: the Sizes of {t.dml_name}, a tuple of positive ints ({when}).")
    if spec.math:
        lines.append(f"    {HALF_ARG}: compute FLOAT16 in FLOAT16, as"
                     " DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION (default: in FLOAT32).")
    lines += [
        "    feature_level: the DML_FEATURE_LEVEL to validate against (default: the",
        "        ``dmljax.feature_level`` block, else $DMLJAX_FEATURE_LEVEL, else the newest).",
        "",
        "Returns:",
        "    " + ", ".join(t.dml_name for t in spec.outputs) + ".",
        "",
        "Raises:",
        "    ValidationError: the call breaks the page's rules at the feature level (all problems listed).",
    ]
    if extra.strip():
        head, _, body = extra.strip("\n").partition("\n")
        lines += ["", head.strip()]
        lines += ["    " + ln if ln.strip() else "" for ln in textwrap.dedent(body).splitlines()]
    if spec.gradient:
        lines += ["", "Gradient:", "    " + spec.gradient]
    if spec.notes:
        lines += ["", "Notes:", "    " + spec.notes]
    if spec.page_slip:
        lines += ["", "Where the page differs:", "    " + spec.page_slip.why]
    if spec.silent:  # the record's own; docs/silent.md and ``dmljax ops NAME`` add those shared with it
        lines += ["", "Where the page is silent (docs/silent.md):"]
        lines += [f"    - {c.where}: {c.choice}. Why: {c.why}" for c in spec.silent]
    lines += ["", "Support::", ""]
    lines += ["    " + ln if ln else "" for ln in support_table_text(spec).splitlines()]
    return "\n".join(lines) + "\n"
