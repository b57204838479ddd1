"""``dmljax compare``: the command line of the comparison (parser options in cli.py).

Exit statuses: 0 every compared tensor within budget, 1 some tensor beyond budget, 2 a usage
error or input that cannot be compared (one message, no traceback)."""

from __future__ import annotations

import math
import sys

from dmljax._src.compare.dxdispatch import compare_dxdispatch
from dmljax._src.compare.errors import CompareError
from dmljax._src.compare.onnx import compare_onnx
from dmljax._src.compare.report import write_report
from dmljax._src.onnx.commands import is_onnx

__all__ = ["run", "BEYOND_BUDGET", "CANNOT_COMPARE"]

BEYOND_BUDGET = 1
CANNOT_COMPARE = 2


def _error(text: str) -> int:
    print(f"dmljax compare: error: {text}", file=sys.stderr)
    return CANNOT_COMPARE


def run(args, versions: str) -> int:
    """``args``: model, results (positional, optional), reference, inputs, out, force,
    budget_scale, allow_extra, feature_level."""
    scale = args.budget_scale
    if not (math.isfinite(scale) and scale >= 0):
        return _error(f"--budget-scale is {scale}; give a finite number, 0 or more (0: correctly rounded, 2: twice the budgets)")
    onnx_model = is_onnx(args.model)
    if args.results is not None and args.reference is not None:
        return _error("give the results folder once: as RESULTS_DIR or as --reference DIR")
    folder = args.results if args.results is not None else args.reference
    if folder is None:
        return _error("name the folder of results to compare: dmljax compare MODEL.json RESULTS_DIR, or "
                      "dmljax compare MODEL.onnx --reference DIR")
    try:
        if onnx_model:
            if args.allow_extra:
                return _error("--allow-extra applies to DxDispatch models; an ONNX reference may hold any tensors")
            report = compare_onnx(args.model, folder, inputs=args.inputs, budget_scale=scale, versions=versions)
        else:
            if args.inputs is not None:
                return _error("--inputs applies to ONNX models; a DxDispatch model names its own resources")
            report = compare_dxdispatch(args.model, folder, budget_scale=scale, allow_extra=args.allow_extra,
                                        feature_level=args.feature_level, versions=versions)
        notes = write_report(report, args.out, args.force) if args.out is not None else []
    except CompareError as e:
        return _error(str(e))
    print(f"dmljax compare: {args.model} against {folder} ({report.kind})")
    for n in report.notes:
        print(f"note: {n}")
    print(report.summary())
    for n in notes:
        print(f"note: {n}")
    if args.out is not None:
        print(f"Report written to {args.out} (report.md, report.html, report.json"
              + (", ulp_histogram.png" if not notes else "") + ")")
    return 0 if report.ok else BEYOND_BUDGET
