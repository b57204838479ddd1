"""The Markdown report of a suite's results. Every ratio comes from ratios.py and its column says
what it divides."""

from __future__ import annotations

from dmljax.bench.ratios import Ratio, copy_fraction, gbps, time_ratio, variant_time
from dmljax.bench.targets import LIMITS, evaluate_targets, twin_ratios

__all__ = ["LABELS", "short", "markdown"]

LABELS = {
    "dmljax_jit": "dmljax (in jit)", "dmljax_call": "dmljax (direct call)", "jnp_jit": "jnp formula (jit)",
    "torch_eager": "torch eager", "torch_compile": "torch.compile", "ort": "ONNX Runtime",
    "copy": "device copy", "jax_copy": "jax copy",
}
THROUGHPUT_COLUMNS = ("dmljax_jit", "dmljax_call", "jnp_jit", "torch_eager", "torch_compile", "ort", "copy")
BASES = {"device": "device-side times", "paired": "paired, measured side by side", "host": "host-clock medians"}


def short(enum_name: str) -> str:
    """``ELEMENT_WISE_IF`` for ``DML_OPERATOR_ELEMENT_WISE_IF``."""
    return enum_name.removeprefix("DML_OPERATOR_")


def _fmt(x, nd=None) -> str:
    if x is None:
        return "-"
    if nd is None:
        nd = 0 if abs(x) >= 100 else (1 if abs(x) >= 10 else 2)
    return f"{x:,.{nd}f}"


def _pow2(n: int) -> str:
    return f"2^{n.bit_length() - 1}"


def _ratio_column(ratios: list[Ratio | None], digits: int = 3) -> tuple[list[str], str]:
    """Cells for a column of ratios and a sentence naming their basis: one basis for the whole
    column is said once, mixed bases are written in each cell."""
    bases = {r.basis for r in ratios if r is not None}
    mixed = len(bases) > 1
    cells = ["-" if r is None else r.text(digits, basis=mixed) for r in ratios]
    said = "" if mixed or not bases else BASES[next(iter(bases))]
    return cells, said


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def _by_key(res: dict) -> dict:
    return {(r["op"], r["dtype"], r["n"]): r for r in res["throughput"]}


def _header(res: dict) -> list[str]:
    m = res["meta"]
    versions = (f"{m['date']}; jax {m['jax']}, jaxlib {m['jaxlib']}, dmljax {m['dmljax']}, numpy {m['numpy']}, "
                f"torch {m['torch'] or 'absent'}" + (f" (CUDA {m['torch_cuda']})" if m.get("torch_cuda") else "")
                + f", onnxruntime {m['onnxruntime'] or 'absent or unused'}, python {m['python']}, "
                f"{m['cpu_count']} CPUs.")
    return [f"# dmljax bench: {m['device']} ({m['platform']})", "", versions, "",
            "How to read it: every ratio is a time ratio, `time(A) / time(B)`; below 1, A is faster. "
            "Each is computed once (dmljax/bench/ratios.py): from device-side times where both have "
            "them, else from the pair measured side by side, else from host-clock medians; each "
            "table says which.", "",
            f"Method: {m['method']}", ""]


def _throughput(res: dict) -> list[str]:
    largest = res["sizes"][-1]
    recs = [r for r in res["throughput"] if r["n"] == largest]
    if not recs:
        return []
    rows, clocks = [], set()
    ratio_cols = {"jnp": [], "torch": [], "copy": []}
    for rec in recs:
        row = [short(rec["op"]), rec["dtype"]]
        for c in THROUGHPUT_COLUMNS:
            g, clock = gbps(rec, c, "host" if c == "dmljax_call" else None)
            if g is not None:
                clocks.add((c, clock))
            row.append(_fmt(g))
        rows.append(row)
        ratio_cols["jnp"].append(time_ratio(rec, "dmljax_jit", "jnp_jit"))
        ratio_cols["torch"].append(time_ratio(rec, "dmljax_jit", "torch_compile"))
        ratio_cols["copy"].append(copy_fraction(rec))
    said = []
    for key, title in (("jnp", "time(dmljax in jit) / time(jnp formula in jit)"),
                       ("torch", "time(dmljax in jit) / time(torch.compile)"),
                       ("copy", "bandwidth(dmljax in jit) / bandwidth(device copy)")):
        cells, basis = _ratio_column(ratio_cols[key])
        for row, cell in zip(rows, cells):
            row.append(cell)
        if basis and any(c != "-" for c in cells):
            said.append(f"`{title}`: {basis}")
    device = sorted({LABELS[c] for c, clock in clocks if clock == "device"})
    L = [f"## Throughput at {_pow2(largest)} elements", "",
         "GB/s = (bytes of every input and output) / time per call; the device copy moves each byte "
         "of one input once each way. "
         + (f"Device-side times for: {', '.join(device)}; the others host-clock. " if device else
            "All host-clock. ")
         + ("Ratios: " + "; ".join(said) + "." if said else ""), ""]
    header = ["operator", "type"] + [LABELS[c] for c in THROUGHPUT_COLUMNS] + [
        "time(dmljax in jit) / time(jnp formula in jit)", "time(dmljax in jit) / time(torch.compile)",
        "bandwidth(dmljax in jit) / bandwidth(device copy)"]
    return L + _table(header, rows) + [""]


def _size_tables(res: dict, cell) -> list[str]:
    """One table per data type: an operator a row, a size a column, ``cell(record)``."""
    by = _by_key(res)
    ops = sorted({r["op"] for r in res["throughput"]})
    L = []
    for d in res["dtypes"]:
        if not any(r["dtype"] == d for r in res["throughput"]):
            continue
        rows = [[short(op)] + ["-" if by.get((op, d, n)) is None else cell(by[(op, d, n)]) for n in res["sizes"]]
                for op in ops if any((op, d, n) in by for n in res["sizes"])]
        L += _table([d] + [_pow2(n) for n in res["sizes"]], rows) + [""]
    return L


def _over_sizes(res: dict) -> list[str]:
    if not res["throughput"]:
        return []

    def bandwidths(rec):
        a, _ = gbps(rec, "dmljax_jit", "host")
        b, _ = gbps(rec, "jnp_jit", "host")
        return f"{_fmt(a)} / {_fmt(b)}" if b else _fmt(a)

    ratios = {id(r): time_ratio(r, "dmljax_jit", "jnp_jit") for r in res["throughput"]}
    _, basis = _ratio_column(list(ratios.values()))
    L = ["## Throughput over sizes: GB/s of dmljax (in jit) / GB/s of the jnp formula (jit), host clock", ""]
    L += _size_tables(res, bandwidths)
    if any(ratios.values()):
        L += ["## time(dmljax in jit) / time(jnp formula in jit) over sizes", "",
              f"Below 1, dmljax is faster. {basis.capitalize() + '.' if basis else 'Basis in each cell.'} "
              "The same figures as the throughput table and the targets.", ""]
        L += _size_tables(res, lambda rec: "-" if ratios[id(rec)] is None else ratios[id(rec)].text(
            3, basis=not basis))
    return L


def _chain(res: dict) -> list[str]:
    out = []
    recs_all = res.get("chain") or []
    for name in dict.fromkeys(r.get("chain", "") for r in recs_all):
        out += _one_chain([r for r in recs_all if r.get("chain", "") == name], res)
    return out


def _one_chain(recs: list[dict], res: dict) -> list[str]:
    steps = recs[0].get("steps", "")
    ref = recs[0].get("compare_to", "DML_OPERATOR_ELEMENT_WISE_IF")
    title = f"Chain of {recs[0]['chain']}" if recs[0].get("chain") else "Operators chained"
    L = [f"## {title} in one jit{': ' + steps if steps else ''}", "",
         "Kernels: launches in the ENTRY computation of the compiled HLO, and kernels per call in the "
         "profile (GPU).", ""]
    by = _by_key(res)
    rows = []
    for rec in recs:
        single = by.get((ref, rec["dtype"], rec["n"]))
        for v in rec["variants"]:
            t, how = variant_time(rec, v)
            g, _ = gbps(rec, v)
            vs_jnp = time_ratio(rec, v, "jnp_jit") if v != "jnp_jit" else None
            vs_one = time_ratio(rec, v, "dmljax_jit", single) if single is not None and v == "dmljax_jit" else None
            rows.append([rec["dtype"], LABELS.get(v, v), how, _fmt(g), f"{t * 1e3:.3f}",
                         str(rec.get(f"hlo_kernels_{v}", "-")),
                         str(rec.get("device", {}).get(v, {}).get("kernels_per_call", "-")),
                         "-" if vs_jnp is None else vs_jnp.text(3, basis=True),
                         "-" if vs_one is None else vs_one.text(3, basis=True)])
    header = ["type", "variant", "clock", "GB/s", "ms per call", "kernels (HLO)", "kernels (profile)",
              "time(variant) / time(jnp chain)", f"time(dmljax chain) / time(dmljax {short(ref)} alone)"]
    return L + _table(header, rows) + [""]


def _fwd_bwd(res: dict) -> list[str]:
    recs = res.get("fwd_bwd") or []
    if not recs:
        return []
    n = recs[0]["n"]
    rows = []
    for rec in recs:
        ts = [variant_time(rec, v)[0] for v in ("dmljax_jit", "jnp_jit", "torch_eager")]
        r = time_ratio(rec, "dmljax_jit", "jnp_jit")
        rows.append([short(rec["op"]), rec["dtype"]] + [f"{t * 1e3:.3f}" if t else "-" for t in ts]
                    + ["-" if r is None else r.text(3, basis=True)])
    header = ["operator", "type", "dmljax (jit), ms", "jnp autodiff (jit), ms", "torch autograd (eager), ms",
              "time(dmljax) / time(jnp autodiff)"]
    return [f"## Forward + backward (vjp with a random cotangent), {_pow2(n)} elements", ""] + _table(header, rows) + [""]


def _compile(res: dict) -> list[str]:
    recs = res.get("compile") or []
    if not recs:
        return []
    reps = (res["meta"].get("args") or {}).get("compile_reps", 3)
    rows = []
    for r in recs:
        def g(k, r=r):
            return _fmt(r[k] * 1e3, 1) if r.get(k) is not None else "-"
        rows.append([short(r["op"]), r.get("dtype", "FLOAT32"), g("dmljax_jit_lower_compile_s"),
                     g("jnp_jit_lower_compile_s"), g("dmljax_first_call_s"), g("jnp_first_call_s")])
    header = ["operator", "type", "dmljax in jit: lower+compile", "jnp: lower+compile", "dmljax: first direct call",
              "jnp: first jitted call"]
    return [f"## Trace + compile, ms (caches cleared, median of {reps})", ""] + _table(header, rows) + [""]


def _overhead(res: dict) -> list[str]:
    recs = res.get("overhead") or []
    if not recs:
        return []
    rows = []
    for r in recs:
        d, lt = r["dispatch_us"], r["latency_us"]

        def f(k, d=d, lt=lt):
            return f"{_fmt(d.get(k), 1)} / {_fmt(lt.get(k), 1)}"
        rows.append([short(r["op"]), r.get("dtype", "FLOAT32"), f("dmljax_call"), f("dmljax_jit"), f("jnp_jit"),
                     f("jnp_eager"), _fmt(d.get("torch_eager"), 1)])
    header = ["operator", "type", "dmljax direct call", "jit(dmljax)", "jit(jnp formula)", "jnp eager (op by op)",
              "torch eager (dispatch)"]
    return [f"## Per-call overhead at {_pow2(recs[0]['n'])} elements, µs per call", "",
            "Each cell: dispatch / latency. Dispatch = back-to-back calls, one synchronisation at the end; "
            "latency = a synchronisation after every call.", ""] + _table(header, rows) + [""]


def _twins(res: dict) -> list[str]:
    """The CPU goal for every operator with a jnp/lax twin: time(dmljax in jit) / time(twin), one
    row per operator and type, those over the goal in bold and listed again at the end."""
    rows = twin_ratios(res)
    if not rows:
        return []
    limit = LIMITS["cpu_time_vs_twin"]
    cells, basis = _ratio_column([r for _, _, r, _ in rows])
    body = []
    for (op, dtype, r, over), cell in zip(rows, cells):
        spread = f"{r.p25:.3f}-{r.p75:.3f}" if r.p25 is not None and r.p75 is not None else "-"
        body.append([op, dtype, f"**{cell}**" if over else cell, spread, "**over**" if over else "within"])
    over = [f"{op} {dtype} ({r.value:.3f})" for op, dtype, r, o in rows if o]
    clear = [f"{op} {dtype}" for op, dtype, r, o in rows if o and r.p25 is not None and r.p25 > limit]
    L = [f"## Against the jnp/lax twin: time(dmljax in jit) / time(twin in jit), goal <= {limit:.2f}", "",
         f"The formula a JAX user would write for each operator (dmljax/bench/cases.py), jitted, at "
         f"{_pow2(res['sizes'][-1])} elements. {basis.capitalize() + '.' if basis else 'Basis in each cell.'} "
         "p25-p75: the spread of the paired repetitions' ratios; \"over\" where the median is above the "
         "goal, \"over, p25 too\" where a quarter of the repetitions at least are.", ""]
    for row, (_, _, r, o) in zip(body, rows):
        if o and r.p25 is not None and r.p25 > limit:
            row[-1] = "**over, p25 too**"
    L += _table(["operator", "type", "time(dmljax in jit) / time(twin)", "p25-p75", f"goal <= {limit:.2f}"], body)
    L += ["", f"{len(over)} of {len(rows)} over the goal" + (": " + ", ".join(over) + "." if over else ".")]
    if over:
        L += [f"Of those, {len(clear)} with p25 over it too" + (": " + ", ".join(clear) + "." if clear else ".")]
    return L + [""]


def _targets(res: dict) -> list[str]:
    ts = evaluate_targets(res)  # from the figures, so that results written by older versions read alike
    if not ts:
        return []
    rows = []
    for t in ts:
        v = t["value"]
        rows.append([t["target"], f"{v:.3f}" if isinstance(v, float) else str(v), str(t["limit"]),
                     "yes" if t["met"] else "**no**", t["basis"]])
    return (["## Performance targets", "",
             "dmljax's goals for its cost over the plain formulas (benchmarks/README.md); the values "
             "are the tables' own ratios.", ""]
            + _table(["target", "value", "limit", "met", "basis"], rows) + [""])


def _notes(res: dict) -> list[str]:
    lines = list(res.get("notes", []))
    seen: dict = {}
    for rec in res["throughput"]:
        for n in rec.get("notes", []):
            seen.setdefault((rec["op"], n[:60]), (n, []))[1].append(f"{rec['dtype']} {_pow2(rec['n'])}")
    lines += [f"{short(op)} ({', '.join(where)}): {n}" for (op, _), (n, where) in seen.items()]
    for rec in res.get("chain", []) + res.get("fwd_bwd", []):
        what = short(rec["op"]) if "op" in rec else f"chain of {rec.get('chain', '')}".rstrip()
        lines += [f"{what} {rec['dtype']}: {n}" for n in rec.get("notes", [])]
    return ["## Notes", ""] + [f"- {n}" for n in lines] + [""] if lines else []


def markdown(res: dict) -> str:
    """The report: header and method, then one section per measurement that has results."""
    L = _header(res)
    if res["sizes"]:
        L += _throughput(res) + _over_sizes(res)
    L += _twins(res) + _chain(res) + _fwd_bwd(res) + _compile(res) + _overhead(res) + _targets(res) + _notes(res)
    return "\n".join(L)

