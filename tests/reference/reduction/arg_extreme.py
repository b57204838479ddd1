"""float64 references of ARGMAX and ARGMIN, transcribed from their pages
(dml_argmax_operator_desc.md, dml_argmin_operator_desc.md in ../shared/spec/operators/) and
docs/semantics.md."""

import math

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.reduction._common import _axis_first, _direction
from tests.reference.rules import is_int, read


def _arg_extreme(larger):
    def reference(x, axes, axis_direction=0):
        # The index, in row-major order of the reduced coordinates, of the first (DECREASING:
        # last) extreme; NaN never wins (maxNum/minNum), a group of NaN only gives its first
        # (last) index; FLOAT32 denormals read as zero; the reduced axes kept with size 1.
        x_np = np.asarray(x)
        vals = x_np.astype(object) if is_int(x_np) else read(x_np)
        axes = sorted(axes)
        keep = [a for a in range(x_np.ndim) if a not in axes]
        moved = np.transpose(vals, keep + axes)
        lead = moved.shape[:len(keep)]
        flat = moved.reshape(lead + (-1,))
        last = _direction(axis_direction)
        out = np.empty(lead, dtype=object)
        for idx in np.ndindex(lead):
            row = list(flat[idx])
            order = range(len(row) - 1, -1, -1) if last else range(len(row))
            best, where = None, (len(row) - 1 if last else 0)
            for i in order:
                v = row[i]
                if not is_int(x_np) and math.isnan(v):
                    continue
                if best is None or (v > best if larger else v < best):
                    best, where = v, i
            out[idx] = where
        kept = tuple(1 if a in axes else x_np.shape[a] for a in range(x_np.ndim))
        return [out.reshape(kept)]
    return reference


def _each(types):
    return types


_ARG_SETS = (Attrs({"axes": (0,)}),
             Attrs({"axes": (0,), "axis_direction": "DECREASING"}, ref={"axes": (0,), "axis_direction": 1}))

REFERENCES = {
    "DML_OPERATOR_ARGMAX": Reference(
        _arg_extreme(True), attrs=_ARG_SETS, output_types=_each, no_grad="integer output (indices)",
        pointwise=False, shape=_axis_first),
    "DML_OPERATOR_ARGMIN": Reference(
        _arg_extreme(False), attrs=_ARG_SETS, output_types=_each, no_grad="integer output (indices)",
        pointwise=False, shape=_axis_first),
}
