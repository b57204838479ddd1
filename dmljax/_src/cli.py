"""The ``dmljax`` console script.

    dmljax run MODEL.json [-i N] [-r N] [-w N] [-v 0|1|2] [--feature-level X]
    dmljax ops [--feature-level X]
    dmljax bench [--ops ...] [--dtypes ...] [--sizes LO:HI[:STEP]] [--out DIR] (see dmljax/_src/bench.py)

``run`` reads a DxDispatch model and runs it on the default JAX device, printing what DxDispatch
prints (``Resource 'output': 6, 15, 24``) and a timing line per dispatch command. ``ops`` lists the
operators dmljax implements with their introducing feature level and their support table at the
chosen level.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from dmljax._src.dxdispatch import Model, ModelError
from dmljax._src.errors import ValidationError
from dmljax._src.feature_level import FeatureLevel, resolve_feature_level

__all__ = ["main"]


def _level(text: str) -> FeatureLevel:
    try:
        return FeatureLevel.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _non_negative(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} is negative")
    return v


def _positive(text: str) -> int:
    v = _non_negative(text)
    if v == 0:
        raise argparse.ArgumentTypeError("0 is not allowed; give 1 or more")
    return v


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dmljax", description="DirectML operators as exact JAX functions.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a DxDispatch JSON model on the default JAX device",
                         description="Run a DxDispatch model (resources, DirectML operator dispatchables, "
                                     "dispatch/print/writeFile commands). Timing options follow DxDispatch's.")
    run.add_argument("model", help="path to the model's .json file")
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
    run.add_argument("--feature-level", type=_level, default=None, metavar="X",
                     help="DML feature level to validate against (default: $DMLJAX_FEATURE_LEVEL, else the newest)")
    ops = sub.add_parser("ops", help="list the implemented operators and their support tables")
    ops.add_argument("--feature-level", type=_level, default=None, metavar="X",
                     help="show the support table in force at this level (default: the newest)")
    bench = sub.add_parser("bench", help="time dmljax's operators against jax.numpy, PyTorch, ONNX Runtime and a copy",
                           description="Side-by-side timings on this machine's default JAX device; writes "
                                       "results.json, results.md and PNG plots to --out.")
    from dmljax._src import bench as _bench  # noqa: PLC0415  (its heavy imports are lazy)
    _bench.build_parser(bench)
    return p


def _ops(level: FeatureLevel | None) -> int:
    from dmljax._src.docstrings import support_table_text
    from dmljax._src.registry import registry

    level = resolve_feature_level(level)
    ops = registry()
    print(f"{len(ops)} operators implemented; support tables at {level.dml_name}.\n")
    for name, op in ops.items():
        spec = op.spec
        print(f"{name} (value {spec.value}; introduced in {spec.introduced.dml_name}; dmljax.{spec.python_name})")
        if spec.support_at(level) is None:
            print(f"  not available at {level.dml_name}\n")
        else:
            print(support_table_text(spec, level) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 1 the model cannot be run, 2 usage)."""
    args = _parser().parse_args(argv)
    if args.command == "ops":
        return _ops(args.feature_level)
    if args.command == "bench":
        from dmljax._src import bench as _bench  # noqa: PLC0415
        return _bench.main(args=args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    if hasattr(sys.stdout, "reconfigure"):  # names a narrow (e.g. ASCII) console cannot show come out escaped
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        model = Model.load(args.model, feature_level=args.feature_level)
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
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
