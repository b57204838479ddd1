"""A comparison's report: the entries (one per output file or ONNX node output), written as
Markdown, HTML, JSON and a PNG histogram of ULP distances into a folder, overwriting nothing
unless asked."""

from __future__ import annotations

import dataclasses
import html
import json
import math
import os
from pathlib import Path

import numpy as np

from dmljax._src.compare.distance import HISTOGRAM_EDGES, Comparison
from dmljax._src.compare.errors import CompareError

__all__ = ["Entry", "Report", "REPORT_FILES", "write_report"]

REPORT_FILES = ("report.md", "report.html", "report.json", "ulp_histogram.png")


@dataclasses.dataclass
class Entry:
    """One compared tensor: ``name`` (the file or the ONNX value), ``source`` (the operator or
    node that computed it, as a person would look for it), ``operators`` (the DirectML operators
    whose budget applies), ``shape``; ``comparison`` None when it was not compared, with
    ``note`` saying why; ``note`` also says where the inputs came from. ``reference`` says what
    the distances are taken from: the float64 value of the operator's formula, or dmljax's
    result (and why there is no float64 value)."""

    name: str
    source: str
    operators: tuple[str, ...]
    shape: tuple[int, ...]
    comparison: Comparison | None
    note: str = ""
    reference: str = "dmljax's result"

    @property
    def expected(self) -> str:
        """What the distances were measured from, in a sentence (with the elements where
        dmljax's own result is beyond budget of the float64 value, judged against it instead)."""
        c = self.comparison
        text = f"Expected: {self.reference}"
        if c is not None and c.exact and c.untrusted:
            text += (f"; at {c.untrusted} of the {c.elements} elements dmljax's own result is beyond its budget of "
                     "the float64 value, which is not trusted there: those are judged against dmljax's result")
        return text + "."

    @property
    def status(self) -> str:
        if self.comparison is None:
            return "not compared"
        return "ok" if self.comparison.ok else "BEYOND BUDGET"


@dataclasses.dataclass
class Report:
    """What ``compare`` found: ``kind`` is "DxDispatch" or "ONNX"; ``first_fault`` the first entry
    beyond budget in execution (topological) order, or None; ``notes`` what the reader should know
    about the comparison as a whole."""

    kind: str
    model: str
    reference: str
    budget_scale: float
    versions: str
    entries: list[Entry] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def first_fault(self) -> Entry | None:
        return next((e for e in self.entries if e.status == "BEYOND BUDGET"), None)

    @property
    def ok(self) -> bool:
        return self.first_fault is None

    def summary(self) -> str:
        """The lines the command prints: one per entry, then the verdict."""
        lines = []
        width = max((len(e.name) for e in self.entries), default=4)
        for e in self.entries:
            c = e.comparison
            if c is None:
                lines.append(f"  {e.name:<{width}}  not compared: {e.note}")
                continue
            what = (f"{c.elements} elements, max {_ulp(c.max_ulp)} ULP{' from float64' if c.exact else ''} "
                    f"(budget {_num(c.budget_ulp)})" + (f", {c.max_ulp_dmljax} from dmljax's" if c.exact else "")
                    + f", max abs {c.max_abs:.3g}" + (f"; {c.untrusted} judged against dmljax's" if c.untrusted else ""))
            if c.ok:
                lines.append(f"  {e.name:<{width}}  ok      {what}  [{e.source}]")
            else:
                kinds = ", ".join(f"{n} {k}" for k, n in c.patterns.items())
                lines.append(f"  {e.name:<{width}}  BEYOND  {what}; {c.beyond} beyond budget: {kinds}  [{e.source}]")
        fault = self.first_fault
        if fault is None:
            compared = sum(e.comparison is not None for e in self.entries)
            lines.append(f"All {compared} compared tensors are within their operators' budgets"
                         + (f" (scaled by {_num(self.budget_scale)})" if self.budget_scale != 1 else "") + ".")
        else:
            n = sum(e.status == "BEYOND BUDGET" for e in self.entries)
            lines.append(f"{n} of {len(self.entries)} beyond budget; the first: {fault.name} from {fault.source}"
                         + (f" ({', '.join(fault.operators)})" if fault.operators else "") + ".")
        return "\n".join(lines)

    def to_json(self) -> dict:
        def entry(e: Entry) -> dict:
            d = {"name": e.name, "source": e.source, "operators": list(e.operators), "shape": list(e.shape),
                 "status": e.status, "note": e.note, "reference": e.reference}
            if e.comparison is not None:
                c = dataclasses.asdict(e.comparison)
                for f in c["first"]:
                    f["position"] = list(f["position"])
                    for k in ("found", "expected", "exact"):
                        f[k] = _json_number(f[k])
                    f["inputs"] = {k: _json_number(v) for k, v in f["inputs"].items()}
                c["budget_ulp"] = _json_number(c["budget_ulp"])
                d["comparison"] = c
            return d
        fault = self.first_fault
        return {"kind": self.kind, "model": self.model, "reference": self.reference,
                "budget_scale": self.budget_scale, "versions": self.versions, "ok": self.ok,
                "first_fault": None if fault is None else fault.name,
                "histogram_edges": [_json_number(x) for x in HISTOGRAM_EDGES],
                "notes": self.notes, "entries": [entry(e) for e in self.entries]}

    def markdown(self, png: str | None) -> str:
        out = [f"# dmljax compare: {self.model}", "",
               f"- Reference: `{self.reference}` ({self.kind})",
               "- Budgets: each operator's declared ULP budget"
               + (f", scaled by {_num(self.budget_scale)}" if self.budget_scale != 1 else ""),
               f"- {self.versions}", ""]
        fault = self.first_fault
        out.append("**Verdict:** " + ("every compared tensor is within budget." if fault is None else
                   f"beyond budget, first at `{fault.name}` from {fault.source}."))
        out.append("")
        out += [f"- {n}" for n in self.notes]
        if self.notes:
            out.append("")
        out += ["| Tensor | Computed by | Status | Elements | Measured from | Max ULP | Median ULP | Budget "
                "| Max ULP from dmljax's | Max abs | Beyond |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for e in self.entries:
            c = e.comparison
            if c is None:
                out.append(f"| `{e.name}` | {e.source} | not compared | | | | | | | | |")
            else:
                frm = ("float64" + (f" ({c.untrusted} elements: dmljax)" if c.untrusted else "")) if c.exact else "dmljax"
                out.append(f"| `{e.name}` | {e.source} | {e.status} | {c.elements} | {frm} | {_ulp(c.max_ulp)} "
                           f"| {_ulp(c.median_ulp)} | {_num(c.budget_ulp)} | "
                           f"{c.max_ulp_dmljax if c.exact else _ulp(c.max_ulp)} | {c.max_abs:.3g} | {c.beyond} |")
        for e in self.entries:
            out += ["", f"## `{e.name}`", "", f"Computed by {e.source}"
                    + (f" ({', '.join(e.operators)})" if e.operators else "") + f"; shape {list(e.shape)}."]
            if e.note:
                out += ["", e.note]
            c = e.comparison
            if c is None:
                continue
            out += ["", e.expected]
            out += ["", f"{c.elements} elements of {c.data_type}; ULP distance max {_ulp(c.max_ulp)}, median "
                        f"{_ulp(c.median_ulp)}" + (f" (from dmljax's result: max {c.max_ulp_dmljax})" if c.exact else "")
                        + f"; absolute max {c.max_abs:.6g}, median {c.median_abs:.6g}; "
                        f"budget {_num(c.budget_ulp)} ULP; {c.beyond} beyond."]
            if c.patterns:
                out += ["", "| Pattern | Elements |", "|---|---|"] + [f"| {k} | {n} |" for k, n in c.patterns.items()]
            if c.first and c.exact:
                out += ["", "| Position | Found | Float64 | ULP | dmljax | ULP from dmljax's | Kind | Inputs |",
                        "|---|---|---|---|---|---|---|---|"]
                for f in c.first:
                    ins = ", ".join(f"{k} = {_value(v)}" for k, v in f.inputs.items())
                    out.append(f"| {list(f.position)} | {_value(f.found, c.data_type)} | "
                               f"{'(not trusted)' if f.exact is None else f'{f.exact:.17g}'} | "
                               f"{'' if f.ulp is None else _ulp(f.ulp)} | {_value(f.expected, c.data_type)} | "
                               f"{'' if f.ulp_dmljax is None else f.ulp_dmljax} | {f.kind} | {ins} |")
            elif c.first:
                out += ["", "| Position | Found | Expected | ULP | Kind | Inputs |", "|---|---|---|---|---|---|"]
                for f in c.first:
                    ins = ", ".join(f"{k} = {_value(v)}" for k, v in f.inputs.items())
                    out.append(f"| {list(f.position)} | {_value(f.found, c.data_type)} | "
                               f"{_value(f.expected, c.data_type)} | "
                               f"{'' if f.ulp is None else _ulp(f.ulp)} | {f.kind} | {ins} |")
        if png:
            out += ["", f"![ULP distances]({png})"]
        return "\n".join(out) + "\n"

    def html(self, png: str | None) -> str:
        """The same content as a standalone page (the Markdown's tables as HTML tables)."""
        body = []
        in_table = False
        for line in self.markdown(png).splitlines():
            if line.startswith("|"):
                cells = [c.strip() for c in line.strip("|").split("|")]
                if all(set(c) <= {"-"} for c in cells):
                    continue
                if not in_table:
                    body.append("<table>")
                    in_table, tag = True, "th"
                else:
                    tag = "td"
                body.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>")
                continue
            if in_table:
                body.append("</table>")
                in_table = False
            if line.startswith("# "):
                body.append(f"<h1>{_inline(line[2:])}</h1>")
            elif line.startswith("## "):
                body.append(f"<h2>{_inline(line[3:])}</h2>")
            elif line.startswith("- "):
                body.append(f"<li>{_inline(line[2:])}</li>")
            elif line.startswith("!["):
                body.append(f'<img alt="ULP distances" src="{html.escape(png or "")}">')
            elif line:
                body.append(f"<p>{_inline(line)}</p>")
        if in_table:
            body.append("</table>")
        style = ("body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse}"
                 "td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left}")
        return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>dmljax compare</title>"
                f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _inline(text: str) -> str:
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p.replace("**", "") for i, p in enumerate(parts))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _ulp(x: float) -> str:
    """A distance in ULP: whole, or to two decimals (a distance from a float64 value)."""
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def _value(v, dtype: str | None = None) -> str:
    """A value as its own type prints it (the shortest digits that read back to it), else with
    9 significant digits (enough for a FLOAT32 or FLOAT16 input)."""
    if not isinstance(v, float):
        return str(v)
    if dtype is not None and dtype.startswith("float"):
        return str(getattr(np, dtype)(v))
    return f"{v:.9g}"


def _json_number(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)  # "nan", "inf", "-inf": JSON has no such numbers
    return v


def _histogram_png(report: Report, path: Path) -> str | None:
    """Per compared float tensor, its ULP distances binned (the tensors beyond budget first, at
    most 12); None with the reason when matplotlib is missing."""
    try:
        import matplotlib  # noqa: PLC0415  (a test extra: the report is written without it)
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): the ULP histogram was not drawn"
    entries = [e for e in report.entries if e.comparison is not None and e.comparison.histogram]
    entries.sort(key=lambda e: e.comparison.ok)
    entries = entries[:12]
    if not entries:
        return "no floating-point tensor was compared: there is no ULP histogram to draw"
    labels = [f"{int(a)}" if b == a + 1 else (f"{int(a)}+" if math.isinf(b) else f"{int(a)}-{int(b) - 1}")
              for a, b in zip(HISTOGRAM_EDGES[:-1], HISTOGRAM_EDGES[1:])]
    cols = min(3, len(entries))
    rows = math.ceil(len(entries) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(entries):]:
        ax.set_visible(False)
    for ax, e in zip(axes.flat, entries):
        c = e.comparison
        colors = ["#c0392b" if HISTOGRAM_EDGES[i] > c.budget_ulp else
                  "#e67e22" if HISTOGRAM_EDGES[i + 1] - 1 > c.budget_ulp else "#2e86c1" for i in range(len(labels))]
        ax.bar(range(len(labels)), c.histogram, color=colors)
        ax.set_xticks(range(len(labels)), labels, rotation=60, fontsize=7)
        ax.set_yscale("symlog")
        ax.set_title(f"{e.name[:40]} ({'ok' if c.ok else 'beyond budget'})", fontsize=9)
        ax.set_xlabel(f"ULP distance (budget {_num(c.budget_ulp)}; red: beyond, orange: partly)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return None


def write_report(report: Report, out: str | os.PathLike, force: bool = False) -> list[str]:
    """Write report.md, report.html, report.json and ulp_histogram.png into ``out`` (created if
    missing). Refuses, before writing anything, a folder holding any of them unless ``force``.
    Returns notes for the user (the histogram that could not be drawn)."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise CompareError(str(folder), "--out", "is a file; give a folder for the report")
    if not force:
        taken = [str(folder / n) for n in REPORT_FILES if os.path.lexists(folder / n)]
        if taken:
            raise CompareError(str(folder), "--out", f"{', '.join(taken)} exist{'s' if len(taken) == 1 else ''}; "
                               "dmljax compare overwrites nothing unless --force is given (or give --out a fresh folder)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        png_path = folder / "ulp_histogram.png"
        if force and png_path.exists():
            png_path.unlink()
        problem = _histogram_png(report, png_path)
        png = None if problem else png_path.name
        (folder / "report.md").write_text(report.markdown(png), encoding="utf-8")
        (folder / "report.html").write_text(report.html(png), encoding="utf-8")
        data = report.to_json()
        data["histogram"] = png
        (folder / "report.json").write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise CompareError(str(folder), "--out", f"cannot be written ({e.strerror or e})") from None
    return [problem] if problem else []
