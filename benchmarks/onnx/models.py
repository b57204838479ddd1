"""Whole ONNX models: dmljax's import against ONNX Runtime's CPU provider, in one process.

    python3 benchmarks/onnx/models.py [--out DIR] [--repeats N] [--update] [NAME-FILTER ...]   (--help)

Each model of tests/onnx/zoo.py (the torchvision, transformers and PyTorch exports in their plain
and ONNX Runtime-quantized forms, and the third-party models shipped in registry wheels) is loaded
by ``dmljax.onnx.load`` and by an ``onnxruntime.InferenceSession`` (CPUExecutionProvider, default
session options: all graph optimizations, ONNX Runtime's default thread pool). Reported per model:

- accuracy: the largest absolute difference and the largest in FLOAT32 ULP over all outputs, and
  for a classifier the share of rows whose top-1 agrees (the first call's outputs);
- compile: the seconds of ``load`` and of the first call (trace, XLA compile and one run), and the
  seconds ONNX Runtime's session takes to build;
- speed: ``--repeats`` (default 15) rounds on the same inputs, each a block of calls for each side
  (which goes first alternates): one call that is not counted, then ``BLOCK`` counted ones, each
  timed with the host clock around a call that blocks until its outputs are ready; a side's
  value in a round is the median of its counted calls, and the row gives the medians of those and
  the median of the rounds' ratios. The uncounted call settles each side after the other's:
  ONNX Runtime's default thread pool keeps its threads spinning on the cores for a while after a
  run, which slowed a dmljax call made right after it (Magika on this 2-core CPU: 14.2-17.1 ms
  after a default session, 9.7-9.8 ms after one with ``session.intra_op.allow_spinning`` 0), so
  one call a side in turns charged dmljax for ONNX Runtime's spinning.

Models that cannot be had (no torch to export, no network for a wheel) or that load refuses are
listed with the reason. Writes ``models.md`` and ``models.json`` to ``--out`` or
``benchmarks/results/cpu/onnx/``. With ``--update`` (and name filters), the models measured
replace their rows in the folder's ``models.json`` and the others keep theirs; each row records
the commit, date and machine it was measured at, and the page lists the rows of an earlier run
with theirs (the page's "Machine" line is the latest run's).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from tests.onnx import zoo  # noqa: E402


def _models():
    for name in zoo.EXPORTED_NAMES:
        for form in zoo.forms(name):
            yield (f"{name}.{form}", lambda n=name, f=form: zoo.exported(n, f),
                   lambda n=name: zoo.exported_inputs(n), name in zoo.EXPORTED_CLASSIFIERS,
                   f"{name} export, {form}", ())
    for name, tp in zoo.THIRD_PARTY.items():
        yield (name, lambda n=name: zoo.third_party(n), lambda tp=tp: tp.inputs(np.random.default_rng(0)),
               tp.classifier, f"{tp.package} {tp.version} ({tp.license}): {tp.what}"
               + (f"; load's static_inputs: {', '.join(tp.static_inputs)}" if tp.static_inputs else ""),
               tp.static_inputs)


BLOCK = 3
"""Calls a side makes in a row, after one that is not counted."""
METHOD = "blocks"
"""The timing method a row records: "blocks" (``BLOCK`` counted calls a side in a row, after one
that is not), where rows measured before record none ("turns": one call a side in turns, each
dmljax call right after an ONNX Runtime call)."""


def _block(outs):
    for o in outs:
        jax.block_until_ready(o)
    return outs


def rounds(calls: dict, repeats: int) -> dict:
    """Each side's seconds a call in each of ``repeats`` rounds: in a round, a block of calls for
    each side (which goes first alternates), the median of ``BLOCK`` counted calls after one that
    is not (the module's docstring)."""
    got: dict = {name: [] for name in calls}
    names = list(calls)
    for i in range(repeats):
        for name in (names if i % 2 == 0 else names[::-1]):
            seconds = []
            for _ in range(BLOCK + 1):
                t = time.perf_counter()
                calls[name]()
                seconds.append(time.perf_counter() - t)
            got[name].append(statistics.median(seconds[1:]))  # the first settles after the other side's calls
    return got


def measure(name, path, inputs, classifier, repeats: int, static_inputs=(), after=None) -> dict:
    """A model's row: accuracy, compile and speed against ONNX Runtime (the module's docstring);
    ``after(model, device_inputs)``, where given, adds its dict to the row, on the model loaded and
    compiled here."""
    row: dict = {"model": name}
    t = time.perf_counter()
    try:
        model, rest = zoo.load_and_run(path, inputs, static_inputs)
    except dx.OnnxImportError as e:
        row["refused"] = " ".join(str(e).split())[:400]
        return row
    row["load_s"] = time.perf_counter() - t
    t = time.perf_counter()
    got = [np.asarray(o) for o in _block(model(*rest))]
    row["first_call_s"] = time.perf_counter() - t
    t = time.perf_counter()
    session = zoo.ort_session(path)
    row["ort_session_s"] = time.perf_counter() - t
    want = zoo.ort_run(session, inputs)
    c = zoo.compare(got, want, classifier)
    row.update(max_abs=c.max_abs, max_ulp=c.max_ulp, top1=c.top1, largest_reference=c.largest_reference)
    device_inputs = [jax.device_put(x) for x in rest]
    _block(model(*device_inputs))
    zoo.ort_run(session, inputs)
    per_round = rounds({"dml": lambda: _block(model(*device_inputs)), "ort": lambda: zoo.ort_run(session, inputs)},
                       repeats)
    ours, theirs = per_round["dml"], per_round["ort"]
    ratios = [a / b for a, b in zip(ours, theirs)]
    row.update(dmljax_ms=1e3 * statistics.median(ours), ort_ms=1e3 * statistics.median(theirs),
               ratio=statistics.median(ratios), method=METHOD)
    if after is not None:
        row.update(after(model, device_inputs))
    return row


def _fmt(v, spec):
    return "" if v is None else format(v, spec)


def markdown(rows: list, env: dict, repeats: int) -> str:
    lines = ["# Whole ONNX models: dmljax against ONNX Runtime's CPU provider", "",
             f"Made by `python3 benchmarks/onnx/models.py` ({env['date']}; commit {env['commit'][:12]}"
             f"{', uncommitted changes' if env['uncommitted changes'] else ''}).", "",
             f"Machine: {env['cpu']}, {env['cores']} cores; Python {env['python']}, jax {env['jax']}, jaxlib "
             f"{env['jaxlib']}, onnxruntime {env['onnxruntime']}, onnx {env['onnx']}, numpy {env['numpy']}. "
             f"Load averages (1, 5, 15 minutes) at the start: {env['load_average_at_start']}; at the end: "
             f"{env['load_average_at_end']} (other processes shared the cores: a ratio is more telling than "
             "either time).", "",
             f"Method (rows marked \"blocks\" in the last column): {repeats} rounds a model in one process on the same "
             f"inputs, each a block of calls for each side (alternating which goes first): one uncounted call, then "
             f"{BLOCK} counted, host clock around each call until its outputs are ready; the medians of the rounds and "
             "the median of the rounds' ratios (dmljax / ONNX Runtime; the goal is at most 1.5). Rows without the "
             "mark (\"turns\") were measured as one call a side in turns, each dmljax call right after an ONNX "
             "Runtime call, whose default thread pool keeps spinning on the cores after a run and slows that call "
             "(the module's docstring). "
             "ONNX Runtime: CPUExecutionProvider, default session options (all graph optimizations, its default "
             "threads). Compile: `dmljax.onnx.load`, then the first call (trace, XLA compile, one run). "
             "Accuracy: over all outputs of the first call, the largest absolute difference and the largest in "
             "FLOAT32 ULP (a sign change near zero counts the whole distance through zero); top-1: the share of "
             "rows (all axes but the last) whose arg-max agrees, for classifiers.", "",
             "| model | max abs diff | max ULP | top-1 | dmljax ms | ORT ms | ratio | load s | first call s | "
             "ORT session s | method |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "refused" in r or "unavailable" in r:
            continue
        lines.append(f"| {r['model']} | {r['max_abs']:.3g} | {r['max_ulp']} | {_fmt(r['top1'], '.0%')} | "
                     f"{r['dmljax_ms']:.2f} | {r['ort_ms']:.2f} | {r['ratio']:.2f} | {r['load_s']:.2f} | "
                     f"{r['first_call_s']:.1f} | {r['ort_session_s']:.2f} | {r.get('method', 'turns')} |")
    other = [r for r in rows if "refused" in r or "unavailable" in r]
    if other:
        lines += ["", "Not compared:", ""]
        lines += [f"- {r['model']}: " + (f"refused by load: {r['refused']}" if "refused" in r
                                         else f"unavailable: {r['unavailable']}") for r in other]
    kept = [r for r in rows if r.get("commit", env["commit"]) != env["commit"] or r.get("date", env["date"]) != env["date"]]
    if kept:
        lines += ["", "Rows of an earlier run (`--update` re-measured the others): "
                  + "; ".join(f"{r['model']} ({r['date']}, commit {r['commit'][:12]}"
                              + (f", {r['machine']}" if r.get("machine") else "") + ")" for r in kept) + "."]
    lines += ["", "Models:", ""] + [f"- {r['model']}: {r['what']}" for r in rows]
    return "\n".join(lines) + "\n"


def parse(argv=None):
    """The command line (``--out`` is read by ``common.arguments``): repeats, update, name filters."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="the folder to write models.md and models.json to")
    ap.add_argument("--repeats", type=int, default=15, help="rounds a model, each a block of calls a side (default 15)")
    ap.add_argument("--update", action="store_true",
                    help="measure the models the filters name, keep the other rows of the folder's models.json")
    ap.add_argument("filters", nargs="*", metavar="NAME-FILTER", help="measure the models whose name holds one")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    return args


def main() -> int:
    args = parse()
    out, repeats, update, rest = args.out, args.repeats, args.update, args.filters
    import onnx  # noqa: PLC0415
    import onnxruntime  # noqa: PLC0415
    env = common.environment()
    env.update(cpu=common.cpu_name(), cores=os.cpu_count(), onnxruntime=onnxruntime.__version__,
               onnx=onnx.__version__, load_average_at_start=common.load_average())
    machine = f"{env['cpu']}, {env['cores']} cores"
    folder = Path(out) if out else common.HERE / "results" / "cpu" / "onnx"
    earlier = {}
    if update and (folder / "models.json").is_file():
        old = json.loads((folder / "models.json").read_text())
        for r in old["models"]:
            r.setdefault("commit", old["environment"]["commit"])
            r.setdefault("date", old["environment"]["date"])
            r.setdefault("machine", f"{old['environment'].get('cpu', 'unknown CPU')}, "
                                    f"{old['environment'].get('cores', '?')} cores")
            earlier[r["model"]] = r
    rows = []
    for name, path, inputs, classifier, what, static_inputs in _models():
        if update and rest and not any(f in name for f in rest) and name in earlier:
            rows.append(earlier[name])
            continue
        if rest and not any(f in name for f in rest):
            continue
        try:
            p = path()
        except zoo.Unavailable as e:
            rows.append({"model": name, "unavailable": str(e), "what": what})
            print(f"{name}: unavailable: {e}", flush=True)
            continue
        row = measure(name, p, inputs(), classifier, repeats, static_inputs)
        row.update(what=what, commit=env["commit"], date=env["date"], machine=machine)
        rows.append(row)
        print(json.dumps(row), flush=True)
    env["load_average_at_end"] = common.load_average()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.json").write_text(json.dumps({"environment": env, "repeats": repeats, "models": rows},
                                                   indent=1) + "\n")
    (folder / "models.md").write_text(markdown(rows, env, repeats))
    print(f"wrote {folder / 'models.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
