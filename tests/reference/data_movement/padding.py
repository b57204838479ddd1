"""Exact references of PADDING, PADDING1 and TILE, from their pages, by NumPy's own np.pad modes
(constant, edge, reflect, symmetric, wrap: the same foldings the page describes, periodic for pads
longer than the axis) and np.tile; gradients add dY up over every copy of an element."""

import numpy as np

from dmljax._src.dtypes import DataType
from tests.reference.record import Attrs, Reference
from tests.reference.rules import int_attr

_NP_MODE = {"CONSTANT": "constant", "EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric",
            "WRAP": "wrap"}


def _mode(m):
    m = str(m).upper()
    return _NP_MODE[m[len("DML_PADDING_MODE_"):] if m.startswith("DML_PADDING_MODE_") else m]


def _pad(x, mode, value, start, end):
    widths = list(zip(start, end))
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=np.asarray(value, x.dtype))
    return np.pad(x, widths, mode=mode)


def padding(x, padding_mode, start_padding, end_padding, padding_value=0.0):
    x = np.asarray(x)
    v = padding_value if x.dtype.kind == "f" else int_attr(padding_value, x.dtype)  # truncated, saturated
    return [_pad(x, _mode(padding_mode), v, start_padding, end_padding)]


def padding1(x, padding_mode, start_padding, end_padding, padding_value=0, padding_value_data_type=None):
    x = np.asarray(x)
    return [_pad(x, _mode(padding_mode), padding_value, start_padding, end_padding)]


def _copies_grad(index_of):
    """dX[k] = the sum of dY over the output positions that copy input element k."""
    def grad(dy, x, **kw):
        x = np.asarray(x)
        src = index_of(np.arange(x.size).reshape(x.shape), **kw)
        g = np.zeros(x.size)
        keep = src >= 0
        np.add.at(g, src[keep], np.asarray(dy, np.float64)[keep])
        return [g.reshape(x.shape)]
    return grad


def _pad_index(idx, padding_mode, start_padding, end_padding, **_):
    return _pad(idx, _mode(padding_mode), -1, start_padding, end_padding)


def tile(x, repeats):
    return [np.tile(np.asarray(x), tuple(repeats))]


def _pads(shape):
    return {"start_padding": tuple(1 if s > 1 else 0 for s in shape),
            "end_padding": tuple(3 if s > 1 else 0 for s in shape)}


_SINCE = {"SYMMETRIC": "3.0", "WRAP": "6.4"}  # the feature-level history


def _padding_sets(dt):
    value = 2.5 if dt.is_float else -7.9  # integers: truncated to -7 (saturated for unsigned: 0)
    return tuple(Attrs({"padding_mode": m, "padding_value": value}, shaped=_pads, since=_SINCE.get(m))
                 for m in ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP"))


def _padding1_sets(dt):
    value = 2.5 if dt.is_float else (7 if dt is not DataType.INT64 else -(2**62))
    return tuple(Attrs({"padding_mode": m, "padding_value": value}, shaped=_pads, since=_SINCE.get(m))
                 for m in ("CONSTANT", "EDGE", "REFLECTION", "SYMMETRIC", "WRAP"))


def _repeats(shape):
    return {"repeats": tuple(2 if i < 2 else 1 for i in range(len(shape)))}


REFERENCES = {
    "DML_OPERATOR_PADDING": Reference(padding, attrs=_padding_sets, selection=True, pointwise=False,
                                      grad=_copies_grad(_pad_index)),
    "DML_OPERATOR_PADDING1": Reference(padding1, attrs=_padding1_sets, selection=True, pointwise=False,
                                       grad=_copies_grad(_pad_index)),
    "DML_OPERATOR_TILE": Reference(tile, attrs=(Attrs(shaped=_repeats),), selection=True, pointwise=False,
                                   grad=_copies_grad(lambda idx, repeats: np.tile(idx, tuple(repeats)))),
}
