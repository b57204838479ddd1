"""``docs/operators.md``, the site's family pages ``docs/operators/<family>.md`` and
``docs/silent.md``, generated from the registry and the catalog.

    dmljax docs                 # (re)writes the generated files under docs/ of the current directory
    dmljax docs --check         # exit 1, naming the stale files, when they differ from the registry
    dmljax docs --out DIR       # writes them under DIR instead

Everything here reads ``registry()`` (the implemented operators and their records, their silent
choices included), ``catalog()`` (all of DirectML's operators) and silent_choices.py (the choices
that hold across operators); nothing about an operator is written by hand, so the
page follows the code. The output is deterministic (no dates, no versions of other packages), so
``tests/test_docs.py`` can compare the committed file with a fresh rendering.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
import sys
from pathlib import Path
from typing import Callable, Iterable, Sequence

from dmljax._src.catalog import BY_NAME, FAMILIES, PREFIX, CatalogEntry
from dmljax._src.docstrings import support_table_text
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.onnx import docs as onnx_docs
from dmljax._src.registry import catalog, registry
from dmljax._src.silent_choices import ACROSS_OPERATORS
from dmljax._src.spec import REQUIRED, OpSpec, SilentChoice

__all__ = ["REGENERATE", "documents", "operators_markdown", "family_markdown", "families_index_markdown",
           "operator_markdown", "operator_text", "silent_markdown", "silent_choices", "page_url", "dims_history", "data_type_history", "write",
           "stale", "main"]

REGENERATE = "dmljax docs"
"""The command that regenerates the generated documents (run from the repository root)."""

_SDK_API = "https://learn.microsoft.com/windows/win32/api/directml/ns-directml-"
_AI_DOCS = "https://learn.microsoft.com/windows/ai/directml/api/ns-directml-"
_AI_DOCS_FROM = FeatureLevel.parse("5.1")  # pages of operators from 5.1 on live in windows-ai-docs
_URL_STEMS = {"dml_reverse_subsequences_operator_desc.md": "dml_reverse_subsequences_desc"}


def page_url(e: CatalogEntry) -> str:
    """The operator's reference page on learn.microsoft.com.

    Pages of operators up to feature level 5.0 are in the Win32 API reference (MicrosoftDocs/sdk-api),
    the newer ones in the DirectML docs (MicrosoftDocs/windows-ai-docs); the URL is the page's file
    name (REVERSE_SUBSEQUENCES' page lacks ``_operator`` there)."""
    stem = _URL_STEMS.get(e.page, e.page.removesuffix(".md"))
    return (_AI_DOCS if e.introduced >= _AI_DOCS_FROM else _SDK_API) + stem


def _v(level: FeatureLevel) -> str:
    return level.version


def dims_history(spec: OpSpec, tensor: str, tables=None) -> list[tuple[FeatureLevel, str]]:
    """(level, dimension counts) each time the tensor's dimension counts change, oldest first
    (in ``tables``, default the record's ``support``)."""
    out: list[tuple[FeatureLevel, str]] = []
    for t in reversed(tables or spec.support):
        text = t.tensors[tensor].dims_text()
        if not out or out[-1][1] != text:
            out.append((t.level, text))
    return out


def data_type_history(spec: OpSpec, tensor: str, tables=None) -> list[tuple[FeatureLevel, list[str]]]:
    """The newest table's data types of ``tensor``, grouped by the level from which each has been
    supported without a gap (oldest first; within a group, in the page's order); in ``tables``,
    default the record's ``support``."""
    tables = tables or spec.support
    newest = tables[0].tensors[tensor].data_types
    since: dict[str, FeatureLevel] = {}
    for dt in newest:
        level = tables[0].level
        for t in tables:  # newest first
            if dt not in t.tensors[tensor].data_types:
                break
            level = t.level
        since[dt.name] = level
    groups: dict[FeatureLevel, list[str]] = {}
    for dt in newest:
        groups.setdefault(since[dt.name], []).append(dt.name)
    return sorted(groups.items())


def _dims_cell(spec: OpSpec, tensor: str, tables=None) -> str:
    hist = dims_history(spec, tensor, tables)
    newest_level, newest = hist[-1]
    older = "; ".join(f"{d} from {_v(lv)}" for lv, d in reversed(hist[:-1]))
    return f"{newest} (from {_v(newest_level)}{'; ' + older if older else ''})"


def _types_cell(spec: OpSpec, tensor: str, tables=None) -> str:
    return "; ".join(f"{', '.join(names)} (from {_v(lv)})" for lv, names in data_type_history(spec, tensor, tables))


def _ulp_text(spec: OpSpec) -> str:
    if not spec.ulp:
        return "bit-exact for every data type (no rounding happens)."
    parts = [f"{dt.name} {b:g} ULP" for dt, b in spec.ulp.items()]
    text = "within " + ", ".join(parts) + " of the float64 reference rounded once; other data types bit-exact."
    if spec.math and spec.ulp_half is not None:
        text += f" With `allow_half_precision_computation=True`: FLOAT16 {spec.ulp_half:g} ULP."
    return text


def _default_text(default: object) -> str:
    return "required" if default is REQUIRED else f"default `{default!r}`"


def known_names_text(e: CatalogEntry, code: str = "") -> str:
    """``Known as: ONNX Gelu; PyTorch torch.nn.functional.gelu; ...`` (known_names.py), or empty
    for an operator no other framework names; ``code`` quotes each name (a backquote in Markdown)."""
    parts = [f"{f} {', '.join(code + n + code for n in names)}" for f, names in e.known_names.by_framework()]
    return ("Known as: " + "; ".join(parts) + ".") if parts else ""


def _intro_lines(op: Callable) -> list[str]:
    spec: OpSpec = op.spec
    e = spec.entry
    known = known_names_text(e, "`")
    lines = [
        f"`{spec.enum_name}`: value {spec.value}, introduced in {_v(spec.introduced)}, family "
        f"{spec.family}; reference page [{e.page.removesuffix('.md')}]({page_url(e)}).",
        "",
        *([known, ""] if known else []),
        spec.summary,
        "",
        "```",
        spec.formula.strip("\n"),
        "```",
        "",
        "```python",
        f"dmljax.{spec.python_name}{inspect.signature(op)}",
        "```",
        "",
    ]
    if spec.params:
        lines.append("Attributes (keyword-only, static):")
        lines.append("")
        for p in spec.params:
            doc = f": {p.doc}" if p.doc else ""
            lines.append(f"- `{p.arg}`: {p.dml_name} ({p.type}, {_default_text(p.default)}){doc}")
        lines.append("")
    return lines


def _support_history_lines(spec: OpSpec) -> list[str]:
    if not spec.groups:
        return _history_table(spec, spec.support, "")
    lines = [f"The tables depend on {spec.support_by}, as on the page:", ""]
    for g in spec.groups:
        lines += _history_table(spec, g.support, f"With {spec.support_by} {g.title}: s")
    return lines


def _history_table(spec: OpSpec, tables, lead: str) -> list[str]:
    lines = [
        f"{lead or 'S'}upport from {tables[0].level.dml_name} on (the newest table), with the feature level "
        "from which each dimension count and data type is supported:",
        "",
        "| Tensor | Kind | Dimension counts | Data types |",
        "| ------ | ---- | ---------------- | ---------- |",
    ]
    for t in spec.tensors:
        lines.append(f"| {t.dml_name} | {t.kind.capitalize()} | {_dims_cell(spec, t.dml_name, tables)} "
                     f"| {_types_cell(spec, t.dml_name, tables)} |")
    return lines + [""]


_CITATION = re.compile(r"docs/semantics\.md(#[a-z0-9-]+)?")


def _linked(text: str, up: str) -> str:
    """``text`` with each citation of docs/semantics.md made a link, relative to a page ``up``
    (``""`` for docs/, ``"../"`` for docs/operators/)."""
    return _CITATION.sub(lambda m: f"[{m.group(0)}]({up}semantics.md{m.group(1) or ''})", text)


def silent_choices(spec: OpSpec) -> list[tuple[OpSpec, SilentChoice]]:
    """The choices where the page is silent that apply to the operator, with the record that holds
    each: its own, then those of other records that name it in ``also`` (in the registry's order)."""
    own = [(spec, c) for c in spec.silent]
    return own + _shared_silent_choices(tuple(registry())).get(spec.short_name, [])


@functools.lru_cache(maxsize=1)
def _shared_silent_choices(names: tuple[str, ...]) -> dict[str, list[tuple[OpSpec, SilentChoice]]]:
    """Short name -> the silent choices other records hold for it (``also``), for the registry of
    the operators ``names``."""
    out: dict[str, list[tuple[OpSpec, SilentChoice]]] = {}
    ops = registry()
    for op in (ops[n] for n in names):
        for c in op.spec.silent:
            for name in c.also:
                out.setdefault(name, []).append((op.spec, c))
    return out


def _cell(text: str) -> str:
    """``text`` in a Markdown table cell: a ``|`` outside code spans escaped (one inside a code span
    stays, as Python-Markdown's tables read it)."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def _up(text: str, up: str) -> str:
    """Relative links of a text written for docs/ (``[x](usage.md)``), from a page ``up``."""
    return re.sub(r"\]\((?![a-z]+:|#)", "](" + up, text) if up else text


def _silent_row(c: SilentChoice, up: str, first: str = "") -> str:
    return "| " + first + " | ".join(_cell(_up(t, up)) for t in (c.where, c.choice, c.why)) + " |"


def _silent_lines(spec: OpSpec, markdown: bool, up: str = "") -> list[str]:
    choices = silent_choices(spec)
    if not choices:
        return []
    if not markdown:
        return ["Where the page is silent (docs/silent.md):", "",
                *(f"- {c.where}: {c.choice}. Why: {c.why}" for _, c in choices), ""]
    return ["Where the page is silent ([silent choices](" + up + "silent.md)):", "",
            "| Where | dmljax's choice | Why |", "| --- | --- | --- |",
            *(_silent_row(c, up) for _, c in choices), ""]


def _tail_lines(spec: OpSpec) -> list[str]:
    grad = spec.gradient or "none documented."
    if spec.grad_operator:
        grad += f" (DirectML's backward operator: `{spec.grad_operator}`.)"
    lines = [f"Accuracy: {_ulp_text(spec)}", "", f"Gradient: {grad}", ""]
    if spec.notes:
        lines += [f"Notes: {spec.notes}", ""]
    if spec.page_slip:
        lines += [f"Where the page differs: {spec.page_slip.why}", ""]
    return lines


def operator_markdown(op: Callable, heading: str = "###", up: str = "") -> str:
    """One implemented operator's section of docs/operators.md (and of its family's page): what it
    is, its signature and attributes, the data types and dimension counts at the newest level with
    the level where each extends, its accuracy, its gradient rule and its reference page; citations
    of docs/semantics.md are links relative to a page ``up`` from docs/."""
    spec: OpSpec = op.spec
    lines = [f"{heading} {spec.python_name}", "", *_intro_lines(op), *_support_history_lines(spec),
             *(_linked(line, up) for line in _tail_lines(spec)), *_silent_lines(spec, True, up)]
    return "\n".join(lines)


def operator_text(op: Callable, level: FeatureLevel | None = None) -> str:
    """What ``dmljax ops NAME`` prints for an implemented operator: the section of
    docs/operators.md with every support table (or only the one in force at ``level``) in place
    of the summary of their history."""
    spec: OpSpec = op.spec
    if level is None:
        tables = support_table_text(spec)
    elif spec.support_at(level) is None:
        tables = f"Not available at {level.dml_name} (introduced in {spec.introduced.dml_name})."
    else:
        tables = support_table_text(spec, level)
    lines = [*_intro_lines(op), tables, "", *_tail_lines(spec), *_silent_lines(spec, False)]
    return "\n".join(lines).rstrip("\n")


def _row(e: CatalogEntry) -> str:
    name = f"[`{e.short_name}`](#{e.python_name})" if e.implemented else f"`{e.short_name}`"
    if e.aliases:
        name += " (alias " + ", ".join(f"`{a}`" for a in e.aliases) + ")"
    status = "**implemented**" if e.implemented else "not yet"
    return (f"| {e.value} | {name} | {status} | {_v(e.introduced)} "
            f"| [{e.page.removesuffix('.md')}]({page_url(e)}) |")


def _count_table(title: str, groups: Iterable[tuple[str, Sequence[CatalogEntry]]]) -> list[str]:
    lines = [f"| {title} | Operators | Implemented |", "| --- | ---: | ---: |"]
    total = done = 0
    for name, entries in groups:
        n, k = len(entries), sum(e.implemented for e in entries)
        total, done = total + n, done + k
        lines.append(f"| {name} | {n} | {k} |")
    lines.append(f"| **all** | **{total}** | **{done}** |")
    return lines


def operators_markdown() -> str:
    """The text of docs/operators.md."""
    entries = catalog()
    ops = registry()
    by_family = [(f, [e for e in entries if e.family == f]) for f in FAMILIES]
    levels = sorted({e.introduced for e in entries})
    by_level = [(lv, [e for e in entries if e.introduced == lv]) for lv in levels]
    n_done = sum(e.implemented for e in entries)
    lines = [
        "# DirectML's operators in dmljax",
        "",
        f"<!-- Generated by `{REGENERATE}` (dmljax/_src/docgen.py) from dmljax.registry() and "
        f"dmljax.catalog(): do not edit by hand. tests/test_docs.py fails when this file is stale. -->",
        "",
        f"All {len(entries)} operators of DirectML's `DML_OPERATOR_TYPE` (DirectML.h at "
        f"`DML_TARGET_VERSION` 0x6400, feature levels {_v(levels[0])} to {_v(FeatureLevel.newest())}); "
        + (f"dmljax implements all {n_done}." if n_done == len(entries) else
           f"dmljax implements {n_done}. Calling one that is not implemented yet (`dmljax.get_operator`, "
           "`dmljax.compile_operator`, `dmljax run`) raises `dmljax.OperatorNotImplementedError`."),
        "",
        "The same facts from Python: `dmljax.catalog()` (every row below, as `dmljax.CatalogEntry`) and "
        "`dmljax.registry()` (the implemented operators; `op.spec` is each one's record); from a shell: "
        "`dmljax ops --all` (`--sort family|level|status|name`), `dmljax ops NAME` (any spelling: "
        "`DML_OPERATOR_GEMM`, `GEMM`, `gemm` or `54`) and `dmljax ops` (the implemented operators "
        "with their full support tables, `--feature-level X` for an older level). What \"exact\" "
        "means, accuracy budgets included: [semantics.md](semantics.md).",
        "",
        "Columns: the enum value; the operator (linked to its section below when implemented); "
        "whether dmljax implements it; the feature level that introduced it (the `#if "
        "DML_TARGET_VERSION` block of DirectML.h that declares it); its reference page on "
        "learn.microsoft.com. The family is dmljax's grouping: the module of `dmljax/_src/ops/` "
        "where its record lives (or will), a `*_GRAD` operator beside its forward operator.",
        "",
        "## Summary",
        "",
        *_count_table("Family", [(f"[{f}](#{f}-family)", es) for f, es in by_family]),
        "",
        *_count_table("Introduced in", [(_v(lv), es) for lv, es in by_level]),
        "",
        "## All operators, by family",
        "",
    ]
    for family, es in by_family:
        lines += [f"### {family} family", "",
                  "| Value | Operator | dmljax | Introduced | Reference page |",
                  "| ---: | --- | --- | --- | --- |",
                  *(_row(e) for e in es), ""]
    lines += [
        "## Implemented operators",
        "",
        "Each section gives the Python signature (tensors positional, attributes keyword-only and "
        "static), the support at the newest feature level with the level from which each dimension "
        "count and data type is supported (`dmljax ops NAME` prints every table), the accuracy "
        "budget against the float64 reference, and the gradient rule `jax.grad` follows.",
        "",
    ]
    for op in ops.values():
        lines.append(operator_markdown(op))
    return "\n".join(lines).rstrip("\n") + "\n"


_FAMILY_HEADER = ("<!-- Generated by `{cmd}` (dmljax/_src/docgen.py) from dmljax.registry(): do not edit by "
                  "hand. tests/test_docs.py fails when this file is stale. -->")


def family_markdown(family: str) -> str:
    """The site's page of one operator family, ``docs/operators/<family>.md``: its operators in
    a table, then each implemented one's section as in docs/operators.md."""
    entries = [e for e in catalog() if e.family == family]
    ops = registry()
    lines = [f"# {family}", "", _FAMILY_HEADER.format(cmd=REGENERATE), "",
             f"The {len(entries)} operators of the {family} family. What \"exact\" means, accuracy budgets "
             "included: [semantics](../semantics.md); choices where the pages are silent: "
             "[silent choices](../silent.md).", "",
             "| Value | Operator | dmljax | Introduced | Reference page |",
             "| ---: | --- | --- | --- | --- |", *(_row(e) for e in entries), ""]
    for e in entries:
        if e.implemented:
            lines += [operator_markdown(ops[e.enum_name], "##", up="../"), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def families_index_markdown() -> str:
    """``docs/operators/index.md``: the families, each linked to its page, with their counts."""
    entries = catalog()
    lines = ["# Operators by family", "", _FAMILY_HEADER.format(cmd=REGENERATE), "",
             "One page per family of DirectML's operators, each with every operator's signature, support "
             "tables, accuracy, gradient rule and notes. All of them on one page: "
             "[operators.md](../operators.md).", "",
             *_count_table("Family", [(f"[{f}]({f}.md)", [e for e in entries if e.family == f])
                                      for f in FAMILIES])]
    return "\n".join(lines) + "\n"


_SILENT_INTRO = """\
Each value dmljax had to choose where DirectML's pages say nothing, or contradict themselves, and
why. The rules that hold across operators (NaN, denormals, attributes, gradients, accumulation)
are in [semantics.md](semantics.md); each operator's own notes, gradient rule and page slips are
in its section of [operators.md](operators.md) and of its family's page in the operator reference.
Buffers, strides and DxDispatch's models have their own tables in [dxdispatch.md](dxdispatch.md)."""


def _op_link(short_name: str) -> str:
    e = BY_NAME[PREFIX + short_name]
    return f"[`{short_name}`](operators/{e.family}.md#{e.python_name})"


def silent_markdown() -> str:
    """The text of docs/silent.md: the choices that hold across operators
    (silent_choices.ACROSS_OPERATORS), then each family's, by operator in the registry's order,
    each choice once, in the record that holds it (with the other operators it covers)."""
    ops = registry()
    lines = ["# Where DirectML is silent", "",
             f"<!-- Generated by `{REGENERATE}` (dmljax/_src/docgen.py) from the records' silent choices "
             "(OpSpec.silent) and dmljax/_src/silent_choices.py: do not edit by hand. tests/test_docs.py "
             "fails when this file is stale. -->", "", _SILENT_INTRO, "",
             "## Across operators", "",
             "| Where | dmljax's choice | Why |", "| --- | --- | --- |",
             *(_silent_row(c, "") for c in ACROSS_OPERATORS), ""]
    for family in FAMILIES:
        specs = [op.spec for op in ops.values() if op.spec.family == family and op.spec.silent]
        if not specs:
            continue
        lines += [f"## {family}", "", "| Operator | Where | dmljax's choice | Why |", "| --- | --- | --- | --- |"]
        for spec in specs:
            for c in spec.silent:
                names = ", ".join(_op_link(n) for n in (spec.short_name, *c.also))
                lines.append(_silent_row(c, "", names + " | "))
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def documents() -> dict[str, str]:
    """Every generated document: path under docs/ -> text."""
    docs = {"operators.md": operators_markdown(), "operators/index.md": families_index_markdown(),
            "silent.md": silent_markdown()}
    docs.update({f"operators/{f}.md": family_markdown(f) for f in FAMILIES})
    if onnx_docs.available():  # the onnx extra
        docs["onnx.md"] = onnx_docs.onnx_markdown()
    return docs


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None


def stale(out_dir: str | Path = "docs") -> dict[str, str]:
    """The generated documents under ``out_dir`` that are missing or differ from the registry:
    file path -> a short unified diff (empty for a missing file)."""
    out = {}
    for name, text in documents().items():
        path = Path(out_dir) / name
        old = _read(path)
        if old == text:
            continue
        diff = "" if old is None else "".join(difflib.unified_diff(
            old.splitlines(keepends=True), text.splitlines(keepends=True),
            f"{path} (on disk)", f"{path} (from the registry)", n=1))
        out[str(path)] = diff
    return out


def write(out_dir: str | Path = "docs") -> list[str]:
    """Write every generated document under ``out_dir``; returns the paths that changed."""
    changed = []
    for name, text in documents().items():
        path = Path(out_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if _read(path) != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            changed.append(str(path))
    return changed


def main(out: str = "docs", check: bool = False, max_diff_lines: int = 40) -> int:
    """``dmljax docs``: write (or with ``check``, verify) the generated documents. Returns the exit
    status: 0 written or up to date, 1 stale (``check``)."""
    if check:
        bad = stale(out)
        if not bad:
            print(f"dmljax docs: {', '.join(str(Path(out) / n) for n in documents())} up to date.")
            return 0
        for path, diff in bad.items():
            what = "is missing" if not diff else "is stale"
            how = f"`{REGENERATE}` from the repository root" if out == "docs" else f"`{REGENERATE} --out {out}`"
            print(f"dmljax docs: {path} {what}; regenerate it with {how}.", file=sys.stderr)
            lines = diff.splitlines()
            if lines:
                print("\n".join(lines[:max_diff_lines]), file=sys.stderr)
                if len(lines) > max_diff_lines:
                    print(f"... ({len(lines) - max_diff_lines} more diff lines)", file=sys.stderr)
        return 1
    changed = write(out)
    names = [str(Path(out) / n) for n in documents()]
    print(f"dmljax docs: wrote {', '.join(changed)}." if changed else f"dmljax docs: {', '.join(names)} already up to date.")
    return 0
