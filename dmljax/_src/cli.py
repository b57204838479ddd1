"""The ``dmljax`` console script.

    dmljax run MODEL.json [-i N] [-r N] [-w N] [-v 0|1|2] [--feature-level X] [--out DIR] [--force]
    dmljax run MODEL.onnx [--inputs x.npz|a.npy ...] [--out DIR] [--force] [--as-written]
    dmljax onnx info MODEL.onnx [--as-written]
    dmljax onnx export-dxdispatch MODEL.onnx OUT.json [--inputs x.npz|a.npy ...] [--force] [--as-written]
    dmljax compare MODEL.json RESULTS_DIR | MODEL.onnx --reference DIR [--out DIR] [--force] [--budget-scale X]
    dmljax ops [--feature-level X] | dmljax ops --all [--sort KEY] | dmljax ops NAME...
    dmljax docs [--check] [--out DIR]
    dmljax --version
    dmljax bench [--ops ...] [--dtypes ...] [--sizes LO:HI[:STEP]] [--out DIR] (dmljax/bench/cli.py)

``run`` reads a DxDispatch model and runs it on the default JAX device, printing what DxDispatch
prints (``Resource 'output': 6, 15, 24``) and a timing line per dispatch command; writeFile
commands write into ``--out DIR`` (default: a fresh ``MODEL-outputs`` folder in the working
directory) and overwrite nothing without ``--force``. ``ops`` lists the
operators dmljax implements with their introducing feature level and their support table at the
chosen level; ``ops --all`` lists DirectML's whole catalog with dmljax's status, ``ops NAME`` one
operator in full: NAME is any DirectML spelling, or a name the operator goes by in ONNX,
PyTorch, JAX or WebNN (``layernorm``, ``torch.matmul``), which lists the operators it leads to
(registry.find_operators) and shows it in full when it leads to one. ``run MODEL.onnx`` imports an
ONNX model (the file's suffix or its first byte says which kind of model it is) and writes its
outputs as .npy files; ``onnx info`` lists its nodes and what each becomes. ``compare`` holds another runtime's
results (DxDispatch's writeFile outputs, ONNX Runtime's node dumps) against dmljax's within each
operator's budget (compare/command.py). ``docs`` regenerates docs/operators.md, the family pages and
docs/silent.md (docgen.py). ``main`` turns a closed stdout and Ctrl-C into exit statuses (141,
130) without a traceback, for every subcommand.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import os
import platform
import signal
import sys
from typing import Sequence

import jax
import jaxlib

from dmljax._src import docgen
from dmljax._src.argtypes import int_at_least
from dmljax._src.catalog import FAMILIES, CatalogEntry
from dmljax._src.compare import command as compare_command
from dmljax._src.docstrings import support_table_text
from dmljax._src.dxdispatch.model import Model, ModelError
from dmljax._src.errors import UnknownOperatorError, ValidationError
from dmljax._src.feature_level import FeatureLevel, resolve_feature_level
from dmljax._src.onnx import commands as onnx_commands
from dmljax._src.registry import OperatorMatch, canonical_name, catalog, entry, find_operators, implemented, registry
from dmljax._src.version import __version__
from dmljax.bench.cli import main as bench_main

__all__ = ["main"]


def _level(text: str) -> FeatureLevel:
    try:
        return FeatureLevel.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


_non_negative, _positive = int_at_least(0), int_at_least(1)


def version_text() -> str:
    """``dmljax X.Y.Z (jax A.B.C, jaxlib A.B.C; Python X.Y.Z)``: what ``dmljax --version`` prints."""
    jaxlib_version = getattr(jaxlib, "__version__", None) or importlib.metadata.version("jaxlib")
    return f"dmljax {__version__} (jax {jax.__version__}, jaxlib {jaxlib_version}; Python {platform.python_version()})"


class _VersionAction(argparse.Action):
    """``--version``: argparse's own action would re-wrap the text; this prints it as is."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


_SORTS = ("value", "name", "family", "level", "status")


_AS_WRITTEN_HELP = ("ONNX models: keep the graph as written, without the rewrites ONNX Runtime makes when it "
                    "creates a session (QDQ groups fused into quantized operators; BatchNormalization, Mul and Add "
                    "folded into a Conv) and dmljax's exact one (a MatMul of one-hot rows read as a gather): "
                    "docs/onnx.md")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dmljax", description="DirectML operators as exact JAX functions.")
    p.add_argument("--version", action=_VersionAction, help="print the versions of dmljax, jax and jaxlib and exit")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a DxDispatch JSON model on the default JAX device",
                         description="Run a DxDispatch model (resources, DirectML operator dispatchables, "
                                     "dispatch/print/writeFile commands). Timing options follow DxDispatch's.")
    run.add_argument("model", help="path to the model: a DxDispatch .json file or an ONNX model (.onnx)")
    run.add_argument("--inputs", nargs="+", default=None, metavar="FILE",
                     help="ONNX models: the inputs, as one .npz (by input name) or .npy files in input order "
                          "(default: random values of the declared shapes)")
    run.add_argument("-i", "--dispatch_iterations", type=_positive, default=1, metavar="N",
                     help="iterations of each dispatch command, timed one by one (default 1); every "
                          "iteration runs, so side effects repeat as in DxDispatch")
    run.add_argument("-r", "--dispatch_repeat", type=_positive, default=1, metavar="N",
                     help="dispatches per iteration; a sample is the iteration's time divided by N (default 1)")
    run.add_argument("-w", "--warmup_samples", type=_non_negative, default=1, metavar="N",
                     help="at most N first samples are cold and left out of the median (default 1; "
                          "at least one sample is always hot)")
    run.add_argument("-v", "--timing_verbosity", type=int, choices=(0, 1, 2), default=0,
                     help="0: median only; 1: cold/hot statistics; 2: also every iteration")
    run.add_argument("--no-timing", action="store_true", help="print no Dispatch timing lines")
    run.add_argument("--out", default=None, metavar="DIR",
                     help="DxDispatch models: the folder for the files writeFile commands write (relative "
                          "targetPaths; created if missing), default a fresh folder MODEL-outputs in the working "
                          "directory; ONNX models: the folder to write the outputs into as NAME.npy (default: "
                          "print a summary)")
    run.add_argument("--force", action="store_true", help="overwrite files that exist (default: refuse before running)")
    run.add_argument("--as-written", action="store_true", help=_AS_WRITTEN_HELP)
    run.add_argument("--feature-level", type=_level, default=None, metavar="X",
                     help="DML feature level to validate against (default: $DMLJAX_FEATURE_LEVEL, else the newest)")
    ops = sub.add_parser("ops", help="list DirectML's operators: the implemented ones with their support tables, "
                                     "all of them (--all), or one in full (NAME)",
                         description="Without arguments: the operators dmljax implements, each with its support "
                                     "table at the feature level. --all: DirectML's whole catalog with dmljax's "
                                     "status. NAME: one operator in full, implemented or not (any spelling: "
                                     "DML_OPERATOR_GEMM, GEMM, gemm or 54), or the operators a name from "
                                     "ONNX, PyTorch, JAX or WebNN leads to (softmax, matmul, layernorm).")
    ops.add_argument("names", nargs="*", metavar="NAME", help="operators to show in full")
    ops.add_argument("--all", action="store_true",
                     help="list all of DirectML's operators: enum value, name, introducing level, family, status")
    ops.add_argument("--sort", choices=_SORTS, default=None,
                     help="order of --all (default: value); family, level and status also group the rows")
    ops.add_argument("--feature-level", type=_level, default=None, metavar="X",
                     help="show the support table in force at this level (default: the newest); with --all, "
                          "list only the operators that exist at this level")
    docs = sub.add_parser("docs", help="write docs/operators.md, docs/operators/ and docs/silent.md from the "
                                       "registry (or --check them)",
                          description="Generate the operator documentation (operators.md, the family pages and "
                                      "silent.md) from dmljax's registry "
                                      "and catalog; run it from the repository root after changing an operator.")
    docs.add_argument("--out", default="docs", metavar="DIR",
                      help="folder to write into (default: docs, under the current directory)")
    docs.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 and name the files that are missing or stale")
    cmp = sub.add_parser("compare", help="compare DirectML results from Windows (DxDispatch's writeFile files, ONNX "
                                         "Runtime's node dumps) with dmljax, within each operator's ULP budget",
                         description="DxDispatch: `dmljax compare MODEL.json RESULTS_DIR` compares the files the "
                                     "model's writeFile commands wrote with dmljax's run. ONNX: `dmljax compare "
                                     "MODEL.onnx --reference DIR` evaluates each node on the reference's own inputs "
                                     "and names the first node beyond its operators' budget. Exit status 0: within "
                                     "budget; 1: beyond budget; 2: the inputs cannot be compared.")
    cmp.add_argument("model", help="a DxDispatch .json model or an ONNX model (.onnx)")
    cmp.add_argument("results", nargs="?", default=None, metavar="RESULTS_DIR",
                     help="the folder holding the result files (the same as --reference)")
    cmp.add_argument("--reference", default=None, metavar="DIR",
                     help="the folder (or one .npz) of reference tensors: .tensorproto/.pb files of ONNX Runtime's "
                          "node dump, .npy files named after values, or .npz archives")
    cmp.add_argument("--inputs", nargs="+", default=None, metavar="FILE",
                     help="ONNX models whose reference lacks the graph inputs: one .npz (by input name) or .npy "
                          "files in input order")
    cmp.add_argument("--out", default=None, metavar="DIR",
                     help="write report.md, report.html, report.json and ulp_histogram.png into DIR (created if "
                          "missing; default: print the summary only)")
    cmp.add_argument("--force", action="store_true", help="overwrite report files that exist in --out")
    cmp.add_argument("--budget-scale", type=float, default=1.0, metavar="X",
                     help="multiply every operator's ULP budget by X (default 1; 0: correctly rounded, within half an "
                          "ULP of the float64 value, bit-exact where measured from dmljax's result; 2: twice the "
                          "budgets)")
    cmp.add_argument("--allow-extra", action="store_true",
                     help="DxDispatch: compare although RESULTS_DIR holds files no writeFile of the model writes")
    cmp.add_argument("--feature-level", type=_level, default=None, metavar="X",
                     help="DxDispatch: the DML feature level to validate against (default: as for `dmljax run`)")
    onnx_p = sub.add_parser("onnx", help="ONNX models: `dmljax onnx info MODEL.onnx` lists operators, opset, each "
                                         "node's DirectML mapping and anything unsupported")
    onnx_sub = onnx_p.add_subparsers(dest="onnx_command", required=True)
    info = onnx_sub.add_parser("info", help="what an ONNX model's nodes become")
    info.add_argument("model", help="path to the .onnx file")
    info.add_argument("--as-written", action="store_true", help=_AS_WRITTEN_HELP)
    export = onnx_sub.add_parser(
        "export-dxdispatch", help="write an ONNX model's DirectML form as a DxDispatch model (a DML_GRAPH_DESC)",
        description="Trace the model for its inputs, write its DirectML operator calls as a DxDispatch model: one "
                    "DML_GRAPH_DESC dispatchable whose nodes are the operators, the inputs and weights as resources, "
                    "one dispatch and a writeFile of each output (NAME.npy). DxDispatch runs it on a Windows GPU; "
                    "`dmljax run OUT.json` runs it here.")
    export.add_argument("model", help="path to the .onnx file")
    export.add_argument("out", help="the DxDispatch .json file to write")
    export.add_argument("--inputs", nargs="+", default=None, metavar="FILE",
                        help="the inputs, as one .npz (by input name) or .npy files in input order (default: random "
                             "values of the declared shapes, symbolic dimensions 1)")
    export.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    export.add_argument("--as-written", action="store_true", help=_AS_WRITTEN_HELP)
    # listed for --help only: _main hands `dmljax bench ...` to dmljax/bench/cli.py, which parses it
    sub.add_parser("bench", add_help=False,
                   help="time dmljax's operators against jax.numpy, PyTorch, ONNX Runtime and a copy "
                        "(dmljax bench --help)")
    return p


def _ops(args: argparse.Namespace) -> int:
    if args.names and args.all:
        print("dmljax ops: error: give NAMEs or --all, not both", file=sys.stderr)
        return 2
    if args.sort is not None and not args.all:
        print("dmljax ops: error: --sort orders the list of --all; add --all", file=sys.stderr)
        return 2
    if args.names:
        return _ops_named(args.names, args.feature_level)
    if args.all:
        return _ops_all(args.sort or "value", args.feature_level)
    level = resolve_feature_level(args.feature_level)
    ops = registry()
    print(f"{len(ops)} operators implemented; support tables at {level.dml_name}.\n")
    for name, op in ops.items():
        spec = op.spec
        print(f"{name} (value {spec.value}; introduced in {spec.introduced.dml_name}; dmljax.{spec.python_name})")
        if spec.support_at(level) is None:
            print(f"  not available at {level.dml_name}\n")
        else:
            print(support_table_text(spec, level) + "\n")
    print(f"`dmljax ops --all` lists all {len(catalog())} DirectML operators; `dmljax ops NAME` shows one in full.")
    return 0


_GROUP = {  # --sort KEY: (sort key, group heading or None)
    "value": (lambda e: e.value, None),
    "name": (lambda e: e.short_name, None),
    "family": (lambda e: (FAMILIES.index(e.family), e.value), lambda e: f"family {e.family}"),
    "level": (lambda e: (e.introduced, e.value), lambda e: f"introduced in {e.introduced.dml_name}"),
    "status": (lambda e: (not e.implemented, e.value),
               lambda e: "implemented" if e.implemented else "not implemented yet"),
}


def _ops_all(sort: str, level_arg: FeatureLevel | None) -> int:
    entries = catalog()
    done = sum(e.implemented for e in entries)
    if level_arg is None:
        head = (f"{len(entries)} DirectML operators (DML_TARGET_VERSION 0x6400); dmljax implements "
                + ("all of them." if done == len(entries) else f"{done}, {len(entries) - done} not yet."))
    else:
        level = resolve_feature_level(level_arg)
        entries = tuple(e for e in entries if e.introduced <= level)
        done = sum(e.implemented for e in entries)
        head = (f"{len(entries)} of DirectML's {len(catalog())} operators exist at {level.dml_name}; "
                f"dmljax implements {done} of them.")
    key, group = _GROUP[sort]
    rows = sorted(entries, key=key)
    print(head + "\n")
    print(f"{'Value':>5}  {'Operator':<42}  {'Introduced':<10}  {'Family':<23}  dmljax")
    current = None
    for e in rows:
        if group is not None and group(e) != current:
            current = group(e)
            members = [r for r in rows if group(r) == current]
            count = (f"{len(members)} operators" if sort == "status"
                     else f"{sum(r.implemented for r in members)} of {len(members)} implemented")
            print(f"\n{current}: {count}")
        print(_catalog_row(e))
    return 0


def _catalog_row(e: CatalogEntry) -> str:
    status = "implemented" if e.implemented else "not yet"
    alias = f"  (alias {', '.join(e.aliases)})" if e.aliases else ""
    return f"{e.value:>5}  {e.short_name:<42}  {e.introduced.version:<10}  {e.family:<23}  {status}{alias}"


def _lookup(name: str) -> CatalogEntry | str | list[OperatorMatch]:
    """The catalog entry NAME denotes; else the operators it leads to by the names they go by
    elsewhere (registry.find_operators), best first; else the one-line reason it denotes none."""
    key: object = int(name) if name.strip().isdigit() else name
    e = entry(key)
    if e is not None:
        return dataclasses.replace(e, implemented=implemented(e.enum_name) is not None)
    found = [m for m in find_operators(key) if m.rank <= 2]
    if found and found[0].rank == 1:  # a known name; parts of names and close spellings are only suggested
        return found
    try:
        canonical_name(key)
    except UnknownOperatorError as err:
        v = err.violations[0]
        return v.found + (f"; {v.allowed}" if v.allowed else "")
    raise AssertionError(name)  # pragma: no cover  (entry and canonical_name agree)


_MAX_RELATED = 6  # operators listed as "part of their names" under a known name's best matches


def _leads_to(name: str, found: list[OperatorMatch]) -> tuple[CatalogEntry | None, list[str]]:
    """What ``dmljax ops NAME`` says of a name that is not DirectML's: the lines naming the
    operators it leads to, and the one operator to show in full when the best of them is alone."""
    best = [m for m in found if m.rank == 1]
    related = [m for m in found if m.rank != 1][:_MAX_RELATED]
    if len(best) == 1:
        lines = [f"{name!r} is not a DirectML name; it is a name of {best[0].label}."]
    else:
        lines = [f"{name!r} is not a DirectML name; it is a name of {len(best)} DirectML operators "
                 "(`dmljax ops NAME` shows one in full):"]
        lines += [f"  {m.label}" + ("" if implemented(m.entry.enum_name) else "  [not implemented yet]")
                  for m in best]
    if related:
        lines.append("Related (part of their names): " + ", ".join(m.entry.enum_name for m in related) + ".")
    return (best[0].entry if len(best) == 1 else None), lines


def _ops_named(names: Sequence[str], level_arg: FeatureLevel | None) -> int:
    found = [_lookup(n) for n in names]
    unknown = [f for f in found if isinstance(f, str)]
    for reason in unknown:
        print(f"dmljax ops: error: {reason}. `dmljax ops --all` lists DirectML's operators.", file=sys.stderr)
    if unknown:
        return 2
    level = None if level_arg is None else resolve_feature_level(level_arg)
    for i, (name, e) in enumerate(zip(names, found)):
        if i:
            print()
        if isinstance(e, list):
            e, lines = _leads_to(name, e)
            print("\n".join(lines))
            if e is None:
                continue
            print()
            e = dataclasses.replace(e, implemented=implemented(e.enum_name) is not None)
        _ops_one(e, level)
    return 0


def _ops_one(e: CatalogEntry, level: FeatureLevel | None) -> None:
    op = implemented(e.enum_name)
    if op is not None:
        print(f"{e.enum_name} (value {e.value}; introduced in {e.introduced.dml_name}; dmljax.{e.python_name})")
        if e.aliases:
            print(f"  also named {', '.join('DML_OPERATOR_' + a for a in e.aliases)}")
        print()
        print(docgen.operator_text(op, level))
        return
    print(f"{e.enum_name} (value {e.value}; introduced in {e.introduced.dml_name}; family {e.family})")
    if e.aliases:
        print(f"  also named {', '.join('DML_OPERATOR_' + a for a in e.aliases)}")
    known = docgen.known_names_text(e)
    if known:
        print(f"  {known}")
    print(f"  reference page: {docgen.page_url(e)}")
    print(f"  not implemented yet in dmljax (`dmljax ops` lists the {len(registry())} that are).")


PIPE_CLOSED = 128 + getattr(signal, "SIGPIPE", 13)
"""Exit status when stdout is closed early (``dmljax ops | head -n 1``): 141, what a shell reports
for a process that SIGPIPE ended, as ``cat`` or ``yes`` would give."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 the model cannot be run or the docs are
    stale, 2 usage, 130 interrupted with Ctrl-C, 141 stdout closed early).

    A closed stdout is handled as the signal module's "Note on SIGPIPE" recommends: flushed inside
    the try, then pointed at os.devnull so that Python's final flush does not raise again; no
    traceback either way."""
    try:
        try:
            status = _main(argv)
        except SystemExit:  # --help, --version and usage errors: their output is flushed here too
            sys.stdout.flush()
            raise
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _stdout_to_devnull()
        return PIPE_CLOSED
    except KeyboardInterrupt:
        print("dmljax: interrupted", file=sys.stderr)
        return 130


def _stdout_to_devnull() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's stream): replace the object
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (lives until the process ends)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:  # the benchmark parses its own options (dmljax/bench/cli.py)
        return bench_main(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "ops":
        return _ops(args)
    if args.command == "docs":
        return docgen.main(out=args.out, check=args.check)
    if args.command == "onnx" and args.onnx_command == "export-dxdispatch":
        return onnx_commands.export_dxdispatch(args.model, args.out, args.inputs, args.force, args.as_written)
    if args.command == "onnx":
        return onnx_commands.info(args.model, args.as_written)
    if args.command == "compare":
        return compare_command.run(args, version_text())
    if onnx_commands.is_onnx(args.model):
        return onnx_commands.run(args.model, args.inputs, args.out, args.force, args.as_written)
    if args.inputs is not None:
        print("dmljax run: error: --inputs applies to ONNX models; a DxDispatch model names its own resources",
              file=sys.stderr)
        return 2
    if args.as_written:
        print("dmljax run: error: --as-written applies to ONNX models; a DxDispatch model runs as it is written",
              file=sys.stderr)
        return 2
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    for stream in (sys.stdout, sys.stderr):  # what a narrow (e.g. ASCII) console cannot show comes out escaped
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        out_dir = args.out if args.out is not None else _fresh_folder(args.model)
        model = Model.load(args.model, feature_level=args.feature_level, out_dir=out_dir, overwrite=args.force)
        for note in model.notes:
            print(f"dmljax run: note: {note}", file=sys.stderr)
        model.run(sys.stdout, iterations=args.dispatch_iterations, repeat=args.dispatch_repeat,
                  warmup=args.warmup_samples, timing_verbosity=args.timing_verbosity, timing=not args.no_timing)
    except ModelError as e:
        print(f"dmljax run: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        raise
    except (ValidationError, OSError, MemoryError) as e:
        # Last resort: every malformed model should have stopped at its own check with its own
        # message; this keeps an unforeseen case to one short paragraph instead of a traceback.
        text = " ".join(str(e).split())[:500] or "no details"
        print(f"dmljax run: error: {args.model}: {type(e).__name__} while loading or running: {text}", file=sys.stderr)
        return 1
    if model.writes_files() and args.out is None:  # a folder the user did not name: say which
        print(f"writeFile outputs are in {str(out_dir)!r}")
    return 0


def _fresh_folder(model: str) -> str:
    """``NAME-outputs`` in the working directory for a model NAME.json, or ``NAME-outputs-2``, ...:
    the first that does not exist (created only when a file is written)."""
    stem = os.path.splitext(os.path.basename(model))[0] or "model"
    base = f"{stem}-outputs"
    n = 1
    while os.path.lexists(base if n == 1 else f"{base}-{n}"):
        n += 1
    return base if n == 1 else f"{base}-{n}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
