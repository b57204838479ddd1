"""Exact references of TOP_K and TOP_K1, from their pages (dml_top_k_operator_desc.md,
dml_top_k1_operator_desc.md) and docs/semantics.md#accumulating-operators: per sequence along Axis, the K largest (or
smallest) values sorted that way, ties in ascending index; values compared as math reads them
(-0 equals +0, FLOAT32 denormals equal zero), NaN after every number."""

import math

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import is_int, read


def _select(x, axis, k, largest):
    x = np.asarray(x)
    vals = x.astype(object) if is_int(x) else read(x)
    moved = np.moveaxis(vals, axis, -1)
    raw = np.moveaxis(x, axis, -1)
    lead = moved.shape[:-1]
    out_v = np.empty(lead + (k,), x.dtype)
    out_i = np.empty(lead + (k,), np.uint64)
    for idx in np.ndindex(lead):
        row = list(moved[idx])

        def order(i):
            v = row[i]
            nan = (not is_int(x)) and math.isnan(v)
            return (1 if nan else 0, 0 if nan else (-v if largest else v), i)
        picked = sorted(range(len(row)), key=order)[:k]
        out_i[idx] = picked
        out_v[idx] = [raw[idx][i] for i in picked]
    return np.moveaxis(out_v, -1, axis), np.moveaxis(out_i, -1, axis)


def _direction(axis_direction):
    return str(axis_direction).upper().endswith("DECREASING") or axis_direction == 1


def top_k(x, axis, k, output_index_data_type="UINT32"):
    v, i = _select(x, axis, k, True)
    return [(v, i.astype(np.uint64 if str(output_index_data_type).endswith("64") else np.uint32))]


def top_k1(x, axis, k, axis_direction, output_index_data_type="UINT32"):
    v, i = _select(x, axis, k, _direction(axis_direction))
    return [(v, i.astype(np.uint64 if str(output_index_data_type).endswith("64") else np.uint32))]


def _grad(largest):
    def grad(dy, x, axis, k, axis_direction=None, output_index_data_type="UINT32"):
        big = largest if axis_direction is None else _direction(axis_direction)
        _, i = _select(x, axis, k, big)
        g = np.zeros(np.shape(x))
        np.put_along_axis(g, i.astype(np.int64), np.asarray(dy, np.float64), axis=axis)
        return [g]
    return grad


def _shaped(shape):
    axis = int(np.argmax(shape)) if shape else 0
    return {"axis": axis, "k": max(1, (shape[axis] + 1) // 2) if shape else 1}


def _every(row):
    return row


REFERENCES = {
    "DML_OPERATOR_TOP_K": Reference(top_k, attrs=(Attrs(shaped=_shaped),), selection=True, grad=_grad(True),
                                    pointwise=False, output_types=_every, output_type_arg=True, ranks=True),
    "DML_OPERATOR_TOP_K1": Reference(
        top_k1, attrs=(Attrs({"axis_direction": "DECREASING"}, shaped=_shaped),
                       Attrs({"axis_direction": "INCREASING"}, shaped=_shaped)),
        selection=True, grad=_grad(None), pointwise=False, output_types=_every, output_type_arg=True, ranks=True),
}
