"""float64 references of CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT, transcribed from their
pages (dml_cumulative_summation_operator_desc.md, dml_cumulative_product_operator_desc.md in
../shared/spec/operators/) and docs/semantics.md#accumulating-operators."""

import math

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.reduction._common import _axis_first, _direction
from tests.reference.rules import is_int, read, wrap


def _moved(x, axis):
    return np.moveaxis(np.asarray(x), axis, -1)


def _tally_rows(rows, reverse, exclusive, product, combine=None):
    """Running tallies of each row (last axis) as the page's examples define them: INCREASING
    adds index 0, 1, ...; DECREASING index n-1, n-2, ...; exclusive leaves the current element out
    (the first written value is the identity, the last total is never written)."""
    out = np.empty(rows.shape, dtype=object if rows.dtype == object else np.float64)
    n = rows.shape[-1]
    order = range(n - 1, -1, -1) if reverse else range(n)
    for idx in np.ndindex(rows.shape[:-1]):
        acc = 1 if product else 0
        for i in order:
            v = rows[idx + (i,)]
            if exclusive:
                out[idx + (i,)] = acc
                acc = acc * v if product else acc + v
            else:
                acc = acc * v if product else acc + v
                out[idx + (i,)] = acc
    return out


def _cumulative(product):
    def reference(x, axis, axis_direction=0, has_exclusive_sum=False, has_exclusive_product=False, half=False):
        exclusive = has_exclusive_product if product else has_exclusive_sum
        reverse = _direction(axis_direction)
        x_np = np.asarray(x)
        if is_int(x_np):
            rows = np.vectorize(int, otypes=[object])(_moved(x_np, axis))
            out = _tally_rows(rows, reverse, exclusive, product)
            return [wrap(np.moveaxis(out, -1, axis), x_np.dtype)]
        with np.errstate(all="ignore"):
            out = _tally_rows(_moved(read(x_np), axis), reverse, exclusive, product)
        return [np.moveaxis(out, -1, axis)]
    return reference


def _sum_magnitude(x, axis, axis_direction=0, has_exclusive_sum=False, half=False):
    # the running sum of |x|: a sum that cancels keeps the terms' absolute error
    return _cumulative(False)(np.abs(read(np.asarray(x))), axis, axis_direction, has_exclusive_sum)[0] + 0.0


def _sum_grad(dy, x, axis, axis_direction=0, has_exclusive_sum=False, half=False):
    # dX[k] = the sum of dY[i] over the outputs i whose tally holds x[k]
    return (_grad(dy, x, axis, axis_direction, has_exclusive_sum, product=False),)


def _sum_grad_size(dy, x, axis, axis_direction=0, has_exclusive_sum=False, half=False):
    return (_grad(np.abs(dy), x, axis, axis_direction, has_exclusive_sum, product=False),)


def _product_grad(dy, x, axis, axis_direction=0, has_exclusive_product=False, half=False):
    return (_grad(dy, x, axis, axis_direction, has_exclusive_product, product=True),)


def _product_grad_size(dy, x, axis, axis_direction=0, has_exclusive_product=False, half=False):
    return (_grad(np.abs(dy), np.abs(read(np.asarray(x))), axis, axis_direction, has_exclusive_product,
                  product=True),)


def _grad(dy, x, axis, axis_direction, exclusive, product):
    """By brute force: the tally i holds the indices S_i; d tally_i / d x_k is 1 (sum) or the
    product of x over S_i without k (product), for k in S_i."""
    xs = _moved(read(np.asarray(x)), axis)
    g = _moved(np.asarray(dy, np.float64), axis)
    n = xs.shape[-1]
    reverse = _direction(axis_direction)
    out = np.zeros(xs.shape)
    for idx in np.ndindex(xs.shape[:-1]):
        row, grow = xs[idx], g[idx]
        for i in range(n):
            held = [j for j in range(n) if (j > i if reverse else j < i) or (j == i and not exclusive)]
            for k in held:
                with np.errstate(all="ignore"):
                    part = math.prod(float(row[j]) for j in held if j != k) if product else 1.0
                    out[idx + (k,)] += grow[i] * part
    return np.moveaxis(out, -1, axis)


_SUM_SETS = (
    Attrs({"axis": 0}, half={"axis": 0, "half": True}),
    Attrs({"axis": 0, "axis_direction": "DECREASING", "has_exclusive_sum": True},
          ref={"axis": 0, "axis_direction": 1, "has_exclusive_sum": True},
          half={"axis": 0, "axis_direction": 1, "has_exclusive_sum": True, "half": True}),
)

_PRODUCT_SETS = (
    Attrs({"axis": 0}, half={"axis": 0, "half": True}),
    Attrs({"axis": 0, "axis_direction": "DECREASING", "has_exclusive_product": True},
          ref={"axis": 0, "axis_direction": 1, "has_exclusive_product": True},
          half={"axis": 0, "axis_direction": 1, "has_exclusive_product": True, "half": True}),
)

REFERENCES = {
    "DML_OPERATOR_CUMULATIVE_SUMMATION": Reference(
        _cumulative(False), attrs=_SUM_SETS, magnitude=_sum_magnitude, grad=_sum_grad,
        grad_magnitude=_sum_grad_size, pointwise=False, shape=_axis_first),
    "DML_OPERATOR_CUMULATIVE_PRODUCT": Reference(
        _cumulative(True), attrs=_PRODUCT_SETS, roles={"InputTensor": "factor"}, grad=_product_grad,
        grad_magnitude=_product_grad_size, pointwise=False, shape=_axis_first),
}
