"""``dmljax bench``: its options, their checks, and ``main``.

Every bad input ends in one short ``dmljax bench: error: ...`` line on stderr and a non-zero
status (2: the arguments, 1: the run can't happen here, e.g. no size fits in memory), never in a
traceback; ``main`` returns the status instead of exiting, so it can be called in-process. An
operator ``--ops`` asks for that cannot be measured (no layout of its inputs that it validates,
none of the data types) makes the run end with status 1 after the others' results are written.
The chained operators run by default, but not with ``--ops`` unless ``--chain`` is given.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Sequence

from dmljax._src.argtypes import int_at_least
from dmljax._src.dtypes import DataType
from dmljax.bench.plan import BenchError, Options, plan
from dmljax.bench.plots import plot
from dmljax.bench.report import markdown
from dmljax.bench.suite import run_suite

__all__ = ["build_parser", "parse_sizes", "options_from", "write_outputs", "main"]

DESCRIPTION = ("Time dmljax's operators against the jax.numpy formula a user would write, PyTorch, "
               "ONNX Runtime and a device copy, on this machine's default JAX device; writes "
               "results.json, results.md and PNG plots to --out (benchmarks/README.md: the method).")
MAX_EXPONENT = 62


class UsageError(Exception):
    """An argument argparse or a check refused; the message is one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own: usage + exit(2); here one line, returned by main
        raise UsageError(message)


def parse_sizes(text: str) -> list[int]:
    """Element counts from log2 exponents: ``"LO:HI[:STEP]"`` (inclusive, HI always included)
    or ``"a,b,c"``. Raises ValueError with a one-line message.

    >>> parse_sizes("4:8:3"), parse_sizes("3, 5")
    ([16, 128, 256], [8, 32])
    """
    form = 'expected log2 element counts as "LO:HI[:STEP]" (e.g. 10:24:2) or "a,b,c" (e.g. 10,16,20)'
    text = text.strip()
    parts = [p.strip() for p in (text.split(":") if ":" in text else text.split(","))]
    if not text or not all(p.isdigit() and p.isascii() and len(p) <= 4 for p in parts if p) \
            or (":" in text and not 2 <= len(parts) <= 3) or (":" in text and not all(parts)):
        raise ValueError(f"{text[:40]!r}: {form}")
    nums = [int(p) for p in parts if p]
    if not nums:
        raise ValueError(f"{text[:40]!r}: {form}")
    if ":" in text:
        lo, hi = nums[0], nums[1]
        step = nums[2] if len(nums) > 2 else 1
        if step < 1 or lo > hi:
            raise ValueError(f"{text[:40]!r}: " + ("STEP must be 1 or more" if step < 1 else "LO must not exceed HI"))
        exps = list(range(lo, hi + 1, step))
        if exps[-1] != hi:
            exps.append(hi)
    else:
        exps = nums
    if max(exps) > MAX_EXPONENT:
        raise ValueError(f"2^{max(exps)} elements: exponents run from 0 to {MAX_EXPONENT}")
    return [1 << e for e in sorted(set(exps))]


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of seconds") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give a finite number of seconds, 0 or more")
    return v


_count = int_at_least(1)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="dmljax bench", description=DESCRIPTION)
    p.add_argument("--ops", nargs="+", default=None, metavar="NAME",
                   help="operators: DML enum, short or Python name, or an unambiguous end of one "
                        "(SCALED_ELU); default: every registered operator")
    p.add_argument("--dtypes", nargs="+", default=["FLOAT32", "FLOAT16"], metavar="TYPE",
                   help="DirectML data types (default FLOAT32 FLOAT16); an operator is measured in those it "
                        "supports; the 64-bit ones need JAX_ENABLE_X64=1")
    p.add_argument("--sizes", default=None, metavar="SPEC",
                   help='log2 element counts: "LO:HI[:STEP]" or "a,b,c" (default 10:28:2 on GPU, 10:24:2 '
                        "otherwise); a size that doesn't fit in memory is skipped with a note")
    p.add_argument("--out", default="dmljax-bench", metavar="DIR",
                   help="folder for results.json, results.md and PNG plots (default dmljax-bench)")
    p.add_argument("--budget-per-point", type=_seconds, default=0.25, metavar="S",
                   help="seconds of timed calls per measurement (at least 7 repetitions; default 0.25)")
    p.add_argument("--time-budget", type=_seconds, default=None, metavar="S",
                   help="seconds after which the remaining optional measurements and smaller sizes are skipped")
    p.add_argument("--threads", type=_count, default=None, metavar="N",
                   help="ONNX Runtime intra-op threads (default: all CPUs)")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch columns")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    p.add_argument("--no-grad", action="store_true", help="skip forward+backward")
    p.add_argument("--no-chain", action="store_true", help="skip the chained operators")
    p.add_argument("--chain", action="store_true",
                   help="run the chained operators with --ops too (without --ops they run unless --no-chain)")
    p.add_argument("--no-overhead", action="store_true", help="skip trace+compile times and per-call overhead")
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument("--compile-reps", type=_count, default=3, metavar="N",
                   help="repetitions of each trace+compile timing (default 3)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def options_from(ns: argparse.Namespace) -> Options:
    """Options from parsed arguments; UsageError for a bad data type, size or folder name."""
    dtypes = []
    for d in ns.dtypes:
        try:
            dtypes.append(DataType.parse(d).name)
        except ValueError as e:
            raise UsageError(f"--dtypes: {e}") from None
    try:
        sizes = parse_sizes(ns.sizes) if ns.sizes is not None else None
    except ValueError as e:
        raise UsageError(f"--sizes: {e}") from None
    ops = [n for n in ns.ops or []]
    if ns.ops is not None and not all(n.strip() for n in ops):
        raise UsageError("--ops: an empty name")
    if not ns.out or not ns.out.strip():
        raise UsageError("--out: an empty folder name")
    return Options(ops=tuple(ops) if ns.ops else None, dtypes=tuple(dict.fromkeys(dtypes)),
                   sizes=tuple(sizes) if sizes else None, out=ns.out, budget_per_point=ns.budget_per_point,
                   time_budget=ns.time_budget, threads=ns.threads, no_torch=ns.no_torch, no_compile=ns.no_compile,
                   no_ort=ns.no_ort, no_grad=ns.no_grad,
                   no_chain=ns.no_chain or (ns.ops is not None and not ns.chain), no_overhead=ns.no_overhead,
                   compile_reps=ns.compile_reps, quiet=ns.quiet)


def _writable(folder: str) -> None:
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, ".dmljax-bench-write-test")
        with open(probe, "w", encoding="utf-8") as f:
            f.write("")
        os.remove(probe)
    except (OSError, ValueError) as e:
        raise BenchError(f"--out: cannot write to {folder[:200]!r}: {getattr(e, 'strerror', None) or e}", 1) from None


def write_outputs(res: dict, folder: str, plots: bool = True) -> dict[str, str]:
    """Write results.json, results.md and (``plots``) the PNGs to ``folder``; their paths by kind."""
    os.makedirs(folder, exist_ok=True)
    try:
        pngs = plot(res, folder) if plots else []
    except Exception as e:  # noqa: BLE001  (matplotlib is optional and version-dependent: no plot, a note)
        res["notes"].append(f"plots failed: {type(e).__name__}: {str(e)[:200]}")
        pngs = []
    paths = {"json": os.path.join(folder, "results.json"), "md": os.path.join(folder, "results.md")}
    with open(paths["md"], "w", encoding="utf-8") as f:
        f.write(markdown(res) + "\n")
    with open(paths["json"], "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, default=str)
    for p in pngs:
        paths[os.path.basename(p)] = p
    return paths


def _fail(message: str, status: int) -> int:
    text = " ".join(str(message).split())
    print(f"dmljax bench: error: {text[:1200]}", file=sys.stderr)
    if status == 2:
        print("(dmljax bench --help lists the options)", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dmljax bench`` with ``argv`` (default: the command line); returns the exit status."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # before JAX starts its backend
    try:
        ns = build_parser().parse_args(argv)
        options = options_from(ns)
    except UsageError as e:
        return _fail(str(e), 2)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    try:
        p = plan(options)
        _writable(options.out)
        res = run_suite(p)
        paths = write_outputs(res, options.out, plots=not ns.no_plots)
    except BenchError as e:
        return _fail(str(e), e.status)
    except OSError as e:
        return _fail(f"--out: writing the results failed: {e}", 1)
    try:
        print(markdown(res))
        print("\nwritten: " + ", ".join(paths.values()))
    except BrokenPipeError:
        pass
    if p.unmeasured:  # an operator --ops asked for: the results of the others are written, the run failed
        return _fail(f"{len(p.unmeasured)} operator{'s' if len(p.unmeasured) > 1 else ''} asked for could not "
                     f"be measured: {'; '.join(p.unmeasured)}", 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
