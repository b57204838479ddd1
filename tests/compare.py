"""Comparing an operator's output with reference candidates: exact for integers, within the
record's ULP budget (in the output type) for floats, NaN as "is NaN"."""

import numpy as np

from dmljax._src.compare.distance import ulp_distance
from dmljax._src.dtypes import DataType
from tests.reference.rules import ftz


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
