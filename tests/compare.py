"""Comparing an operator's output with reference candidates: exact for integers, within the
record's ULP budget (in the output type) for floats, NaN as "is NaN"."""

import numpy as np

from dmljax._src.dtypes import DataType
from tests.reference.rules import ftz


def _ordered(bits, nbits):
    sign = np.int64(1) << (nbits - 1)
    bits = bits.astype(np.int64)
    return np.where(bits & sign, -(bits & (sign - 1)), bits)


def ulp_distance(x, y):
    """Distance in units in the last place between two arrays of one float type (+0 == -0)."""
    x, y = np.asarray(x), np.asarray(y)
    assert x.dtype == y.dtype
    nbits = x.dtype.itemsize * 8
    ui = {16: np.uint16, 32: np.uint32, 64: np.uint64}[nbits]
    if nbits == 64:
        xb = x.view(np.int64).astype(object)
        yb = y.view(np.int64).astype(object)
        conv = lambda b: -(b & ((1 << 63) - 1)) if b < 0 else b  # noqa: E731
        return np.array([abs(conv(a) - conv(b)) for a, b in zip(xb.ravel(), yb.ravel())],
                        dtype=object).reshape(x.shape)
    return np.abs(_ordered(x.view(ui), nbits) - _ordered(y.view(ui), nbits))


def round_to(ref, data_type: DataType, flush=True):
    """A float64 reference rounded once to the output type (FLOAT32 denormals flushed, unless the
    operator only selects or moves data)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.asarray(ref, np.float64).astype(data_type.dtype)
    if flush and data_type is DataType.FLOAT32:
        out = ftz(out, np.float32).astype(np.float32)
    return out


def assert_matches(actual, candidates, data_type: DataType, ulp=0, context="", flush=True, magnitude=None):
    """Every element equals one of the candidates (exactly, or within ``ulp`` for floats).
    ``flush=False`` for selection and data movement, which keep FLOAT32 denormals. ``magnitude``
    (output-shaped, float64): the size of the terms whose difference the result is; a float
    result also passes within ``ulp`` units in the last place of that size."""
    actual = np.asarray(actual)
    assert actual.dtype == data_type.dtype, (actual.dtype, data_type, context)
    ok = np.zeros(actual.shape, bool)
    for cand in candidates:
        if data_type.is_float:
            c = round_to(cand, data_type, flush)
            same_nan = np.isnan(actual) & np.isnan(c)
            both = ~np.isnan(actual) & ~np.isnan(c)
            inf_eq = (np.isinf(actual) | np.isinf(c)) & (actual == c)
            finite = both & np.isfinite(actual) & np.isfinite(c)
            d = np.zeros(actual.shape, object)
            d[finite] = ulp_distance(actual[finite], c[finite])
            ok |= same_nan | inf_eq | (finite & (d <= ulp).astype(bool))
            if magnitude is not None:
                size = np.abs(np.broadcast_to(np.asarray(magnitude, np.float64), actual.shape)).astype(data_type.dtype)
                with np.errstate(all="ignore"):
                    err = np.abs(actual.astype(np.float64) - c.astype(np.float64))
                    ok |= finite & (err <= ulp * np.spacing(size).astype(np.float64))
        else:
            c = np.asarray(cand, dtype=object)
            ok |= np.asarray(actual.astype(object) == c, bool)
    if not ok.all():
        idx = np.argwhere(~ok)[:5]
        rows = [f"  at {tuple(i)}: got {actual[tuple(i)]!r}, candidates "
                f"{[np.asarray(c)[tuple(i)] for c in candidates]}" for i in idx]
        raise AssertionError(
            f"{context}: {int((~ok).sum())} of {ok.size} elements outside {ulp} ULP\n" + "\n".join(rows))
