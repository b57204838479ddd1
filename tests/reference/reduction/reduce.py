"""float64 (and exact integer) reference of REDUCE, transcribed from its page
(dml_reduce_operator_desc.md) and the DML_REDUCE_FUNCTION page (dml_reduce_function.md), with
docs/semantics.md#minimum-and-maximum and docs/semantics.md#accumulating-operators: each output element folds the N elements of its reduced axes, in
row-major order of the reduced coordinates."""

import math

import numpy as np

from tests.catalog import random_tensor
from tests.reference.record import Attrs, Reference
from tests.reference.rules import is_int, read, wrap

FUNCTIONS = ("ARGMAX", "ARGMIN", "AVERAGE", "L1", "L2", "LOG_SUM", "LOG_SUM_EXP", "MAX", "MIN", "MULTIPLY",
             "SUM", "SUM_SQUARE")


def _name(function):
    f = str(function).upper()
    return f[len("DML_REDUCE_FUNCTION_"):] if f.startswith("DML_REDUCE_FUNCTION_") else f


def _rows(x, axes):
    """(values as float64 flushed, or Python ints) grouped: [lead shape] x [N], and the kept shape."""
    x_np = np.asarray(x)
    vals = x_np.astype(object) if is_int(x_np) else read(x_np)
    axes = sorted(axes)
    keep = [a for a in range(x_np.ndim) if a not in axes]
    moved = np.transpose(vals, keep + axes)
    lead = moved.shape[:len(keep)]
    kept = tuple(1 if a in axes else x_np.shape[a] for a in range(x_np.ndim))
    return moved.reshape(lead + (-1,)), lead, kept, keep + axes


def _above(a, b, larger):
    """Whether b replaces a in max(a, b) (min): strictly beyond it, +0 above -0 (ELEMENT_WISE_MAX)."""
    if a == b:
        return (math.copysign(1.0, b) > math.copysign(1.0, a)) if larger else (math.copysign(1.0, b) < math.copysign(1.0, a))
    return b > a if larger else b < a


def _fold_extreme(row, larger, floats):
    """The page's fold max(max(max(x1, x2), x3), ...): NaN skipped (maxNum), ties keep the earlier
    element; returns (value, index of the element kept)."""
    best, where = row[0], 0
    for i, v in enumerate(row[1:], 1):
        if floats and math.isnan(v):
            continue
        if floats and math.isnan(best):
            best, where = v, i
        elif (_above(best, v, larger) if floats else (v > best if larger else v < best)):
            best, where = v, i
    return best, where


def _arg(row, larger, floats):
    """ARGMAX/ARGMIN: the first index of the extreme, -0 equal to +0, NaN never the extreme."""
    best, where = None, 0
    for i, v in enumerate(row):
        if floats and math.isnan(v):
            continue
        if best is None or (v > best if larger else v < best):
            best, where = v, i
    return where


def _one(row, f, floats):
    n = len(row)
    if f in ("ARGMAX", "ARGMIN"):
        return _arg(row, f == "ARGMAX", floats)
    if f in ("MAX", "MIN"):
        return _fold_extreme(row, f == "MAX", floats)[0]
    if not floats:  # exact integers (wrapped later)
        return {"SUM": sum(row), "MULTIPLY": math.prod(row), "L1": sum(abs(v) for v in row),
                "SUM_SQUARE": sum(v * v for v in row)}[f]
    if any(math.isnan(v) for v in row) and f != "LOG_SUM_EXP":
        return math.nan
    if f == "SUM":
        return math.fsum(row)
    if f == "AVERAGE":
        return math.fsum(row) / n
    if f == "L1":
        return math.fsum(abs(v) for v in row)
    if f == "SUM_SQUARE":
        return math.fsum(v * v for v in row)
    if f == "L2":
        return math.sqrt(math.fsum(v * v for v in row))
    if f == "MULTIPLY":
        return math.prod(row)
    if f == "LOG_SUM":
        s = math.fsum(row)
        return math.nan if s < 0 else (-math.inf if s == 0 else math.log(s))
    if f == "LOG_SUM_EXP":  # log(exp(x1) + ... + exp(xn)), exactly as the limit where infinite
        if any(math.isnan(v) for v in row):
            return math.nan
        m = max(row)
        if math.isinf(m):
            return m
        return m + math.log(math.fsum(math.exp(v - m) for v in row))
    raise AssertionError(f)


def reduce(x, function, axes, output_data_type=None, half=False):
    f = _name(function)
    x_np = np.asarray(x)
    floats = not is_int(x_np)
    rows, lead, kept, _ = _rows(x_np, axes)
    out = np.empty(lead, dtype=object if (not floats or f in ("ARGMAX", "ARGMIN")) else np.float64)
    for idx in np.ndindex(lead):
        out[idx] = _one(list(rows[idx]), f, floats)
    out = out.reshape(kept)
    if not floats and f not in ("ARGMAX", "ARGMIN", "MAX", "MIN"):
        out = wrap(out, x_np.dtype)
    if floats and f in ("MAX", "MIN"):  # the very value selected: a flushed input of the tensor's type
        out = out.astype(np.float64).astype(x_np.dtype)
    return [out]


def _magnitude(x, function, axes, output_data_type=None, half=False):
    """The size of the terms each result is the difference of: the sum of |terms| for SUM and
    AVERAGE (which cancel); LOG_SUM's absolute error is the sum's relative one; LOG_SUM_EXP's
    max + log(sum) terms."""
    f = _name(function)
    x_np = np.asarray(x)
    rows, lead, kept, _ = _rows(x_np, axes)
    out = np.zeros(lead)
    if is_int(x_np):
        return out.reshape(kept)
    for idx in np.ndindex(lead):
        row = [v for v in rows[idx] if not math.isnan(v)]
        total = math.fsum(abs(v) for v in row)
        if f == "SUM":
            out[idx] = total
        elif f == "AVERAGE":
            out[idx] = total / len(rows[idx])
        elif f == "LOG_SUM":
            s = math.fsum(row)
            out[idx] = total / abs(s) + abs(math.log(abs(s))) if s != 0 else 0.0
        elif f == "LOG_SUM_EXP" and row and not math.isinf(max(row)):
            m = max(row)
            out[idx] = abs(m) + abs(math.log(math.fsum(math.exp(v - m) for v in row))) + 1.0
    return out.reshape(kept)


def _grad(dy, x, function, axes, output_data_type=None, half=False):
    """The derivative of each function (SUM dY, AVERAGE dY/N, L1 dY sign(x), SUM_SQUARE 2x dY, L2
    dY x / L2, MULTIPLY dY times the other terms' product, LOG_SUM dY / sum, LOG_SUM_EXP dY
    exp(x - result), MAX/MIN dY to the element the fold keeps); ARGMAX/ARGMIN: 0."""
    f = _name(function)
    x_np = np.asarray(x)
    rows, lead, kept, order = _rows(x_np, axes)
    dy_rows = np.asarray(dy, np.float64).reshape(lead) if lead else np.asarray(dy, np.float64).reshape(())
    g = np.zeros(rows.shape)
    for idx in np.ndindex(lead):
        row = [float(v) for v in rows[idx]]
        d = float(dy_rows[idx])
        n = len(row)
        if f == "SUM":
            g[idx] = d
        elif f == "AVERAGE":
            g[idx] = d / n
        elif f == "L1":
            g[idx] = [d * np.sign(v) for v in row]
        elif f == "SUM_SQUARE":
            g[idx] = [2 * v * d for v in row]
        elif f == "L2":
            norm = math.sqrt(math.fsum(v * v for v in row))
            g[idx] = [d * v / norm if norm > 0 else 0.0 for v in row]
        elif f == "MULTIPLY":
            g[idx] = [d * math.prod(row[:i] + row[i + 1:]) for i in range(n)]
        elif f == "LOG_SUM":
            g[idx] = d / math.fsum(row)
        elif f == "LOG_SUM_EXP":
            lse = _one(row, f, True)
            g[idx] = [d * math.exp(v - lse) if math.isfinite(lse) else 0.0 for v in row]
        elif f in ("MAX", "MIN"):
            _, where = _fold_extreme(row, f == "MAX", True)
            g[idx][where] = d
    # back from [lead] x [reduced, row-major] to the input's layout
    moved_shape = tuple(x_np.shape[a] for a in order)
    return [np.transpose(g.reshape(moved_shape), np.argsort(order))]


def make_inputs(rng, types, shape, function, axes, **_):
    """Values by function: LOG_SUM's terms positive (a negative sum's log is NaN for both sides),
    MULTIPLY's of magnitude 1/2 to 2 (a product of many stays in range), others N(0, 3); integers
    over their whole range and small ones."""
    f = _name(function)
    dt = types["InputTensor"]
    role = {"LOG_SUM": "positive", "MULTIPLY": "factor"}.get(f, "value")
    return [random_tensor(rng, dt, shape, role)]


def _inferred(row):
    """No output_data_type= in the cases but the ARGMAX/ARGMIN sets' own (UINT32): the output
    takes the input's DataType."""
    return (None,)


def _every_axis(shape):
    return {"axes": tuple(range(len(shape)))}


def _sets():
    out = []
    for f in FUNCTIONS:
        arg = {"output_data_type": "UINT32"} if f.startswith("ARG") else {}
        half = {} if f.startswith("ARG") or f in ("MAX", "MIN") else {"half": True}
        out.append(Attrs({"function": f, "axes": (0,), **arg}, half={"function": f, "axes": (0,), **half}))
        out.append(Attrs({"function": f, **arg}, shaped=_every_axis, half={"function": f, **half}))
    return tuple(out)


REFERENCES = {
    "DML_OPERATOR_REDUCE": Reference(
        reduce, attrs=_sets(), magnitude=_magnitude, grad=_grad, pointwise=False, make_inputs=make_inputs,
        output_types=_inferred, accumulates=True),
}
