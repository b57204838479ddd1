"""How far one tensor lies from another: distances in units in the last place (ULP) and in
absolute terms, and the element patterns a vendor's fault leaves (NaN and infinity mismatches,
denormals flushed or kept), judged against an operator's ULP budget
(docs/semantics.md#the-reference).

``ulp_distance`` counts the representable values between two floats of one type (+0 and -0 are
one value); ``compare`` classifies every element of a result against the expected tensor and
keeps the statistics and the first few elements beyond the budget.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

__all__ = ["ulp_distance", "compare", "Comparison", "Finding", "HISTOGRAM_EDGES", "MAX_SHOWN"]

MAX_SHOWN = 5
"""Elements beyond budget listed with their positions and inputs (all of them are counted)."""

HISTOGRAM_EDGES = (0, 1, 2, 3, 5, 9, 17, 65, 257, 1025, 2 ** 16 + 1, 2 ** 24 + 1, np.inf)
"""Bins of the ULP-distance histogram: [0, 1), [1, 2), [2, 3), [3, 5), ... (0 is equal)."""

_UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _ordered(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(magnitude bits, negative?) of a float array: sign-magnitude, so that the distance is a
    difference of magnitudes on one side of zero and a sum across it."""
    u = x.view(_UNSIGNED[x.dtype.itemsize])
    sign = u.dtype.type(1) << u.dtype.type(8 * x.dtype.itemsize - 1)
    return (u & ~sign).astype(np.uint64), (u & sign) != 0


def ulp_distance(a, b) -> np.ndarray:
    """The number of representable values of their common float type between ``a`` and ``b``
    (elementwise, as uint64; +0 and -0 count as one value; NaN operands give an undefined count,
    which ``compare`` never reads).

    >>> import numpy as np
    >>> int(ulp_distance(np.float32(1.0), np.nextafter(np.float32(1.0), np.float32(2.0))))
    1
    >>> int(ulp_distance(np.float32(-0.0), np.float32(0.0)))
    0
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.dtype.kind != "f":
        raise TypeError(f"ulp_distance takes two arrays of one float type, not {a.dtype} and {b.dtype}")
    ma, na = _ordered(np.ascontiguousarray(a).reshape(a.shape))
    mb, nb = _ordered(np.ascontiguousarray(b).reshape(b.shape))
    same = na == nb
    return np.where(same, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)  # + across zero: below 2^64


@dataclasses.dataclass
class Finding:
    """One element beyond budget: its position (in the file's shape), the value found, the value
    expected, the distance, what kind of difference it is and the operator's inputs there."""

    position: tuple[int, ...]
    found: float | int
    expected: float | int
    ulp: int | None
    kind: str
    inputs: dict[str, float | int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Comparison:
    """One tensor compared: counts, distances and the patterns found.

    ``beyond`` counts the elements past the budget (NaN, infinity and denormal mismatches
    included); ``patterns`` names the kinds of difference found, with their counts
    (``"NaN where a value is expected"``, ``"flushed denormals"``, ...); ``histogram`` counts the
    finite elements per bin of HISTOGRAM_EDGES."""

    elements: int
    budget_ulp: float
    data_type: str
    max_ulp: int = 0
    median_ulp: float = 0.0
    max_abs: float = 0.0
    median_abs: float = 0.0
    beyond: int = 0
    patterns: dict[str, int] = dataclasses.field(default_factory=dict)
    first: list[Finding] = dataclasses.field(default_factory=list)
    histogram: list[int] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.beyond == 0


def _scalar(v):
    v = v.item() if hasattr(v, "item") else v
    return float(v) if isinstance(v, float) else v


def compare(found: np.ndarray, expected: np.ndarray, budget_ulp: float,
            inputs_at: Callable[[tuple[int, ...]], dict] | None = None) -> Comparison:
    """Every element of ``found`` against ``expected`` (same shape and dtype). Floats: within
    ``budget_ulp`` ULP; NaN matches NaN (payloads are not compared); an infinity must be the same
    infinity; a zero found where a denormal is expected is a flushed denormal, a denormal found
    where zero is expected one that should have been flushed. Integers and booleans: equal.
    ``inputs_at(position)`` gives the operator's inputs at an element listed beyond budget."""
    found, expected = np.asarray(found), np.asarray(expected)
    if found.shape != expected.shape or found.dtype != expected.dtype:
        raise ValueError(f"compare: {found.dtype}{list(found.shape)} against {expected.dtype}{list(expected.shape)}")
    c = Comparison(int(found.size), float(budget_ulp), str(found.dtype))
    flat_f, flat_e = found.reshape(-1), expected.reshape(-1)
    kinds: dict[str, np.ndarray] = {}
    if found.dtype.kind == "f":
        nan_f, nan_e = np.isnan(flat_f), np.isnan(flat_e)
        inf_f, inf_e = np.isinf(flat_f), np.isinf(flat_e)
        finite = ~(nan_f | nan_e | inf_f | inf_e)
        tiny = np.finfo(found.dtype).tiny
        with np.errstate(invalid="ignore"):
            den_f = (flat_f != 0) & (np.abs(flat_f) < tiny)
            den_e = (flat_e != 0) & (np.abs(flat_e) < tiny)
        ulp = ulp_distance(flat_f, flat_e)
        ulp[~finite] = 0
        with np.errstate(invalid="ignore", over="ignore"):
            absd = np.abs(flat_f.astype(np.float64) - flat_e.astype(np.float64))
        absd[~finite] = 0.0
        beyond_finite = finite & (ulp > budget_ulp)
        kinds["NaN where a value is expected"] = nan_f & ~nan_e
        kinds["a value where NaN is expected"] = ~nan_f & nan_e
        kinds["infinity mismatches"] = ~(nan_f | nan_e) & (inf_f | inf_e) & (flat_f != flat_e)
        kinds["flushed denormals"] = beyond_finite & den_e & (flat_f == 0)
        kinds["denormals kept where zero is expected"] = beyond_finite & den_f & (flat_e == 0)
        other = beyond_finite & ~kinds["flushed denormals"] & ~kinds["denormals kept where zero is expected"]
        kinds["beyond the ULP budget"] = other
        if finite.any():
            fu, fa = ulp[finite], absd[finite]
            c.max_ulp, c.median_ulp = int(fu.max()), float(np.median(fu))
            c.max_abs, c.median_abs = float(fa.max()), float(np.median(fa))
            edges = np.asarray(HISTOGRAM_EDGES[:-1], np.float64)
            bins = np.searchsorted(edges, fu.astype(np.float64), side="right") - 1
            c.histogram = np.bincount(bins, minlength=len(edges)).tolist()
        else:
            c.histogram = [0] * (len(HISTOGRAM_EDGES) - 1)
    else:
        diff = flat_f != flat_e
        kinds["different values"] = diff
        if diff.any():
            d = np.abs(flat_f.astype(np.float64) - flat_e.astype(np.float64))
            c.max_abs, c.median_abs = float(d.max()), float(np.median(d))
        ulp = None
        c.histogram = []
    bad = np.zeros(flat_f.shape, bool)
    for kind, mask in kinds.items():
        n = int(mask.sum())
        if n:
            c.patterns[kind] = n
            bad |= mask
    c.beyond = int(bad.sum())
    for i in np.flatnonzero(bad)[:MAX_SHOWN]:
        pos = tuple(int(p) for p in np.unravel_index(int(i), found.shape)) if found.ndim else ()
        kind = next(k for k, m in kinds.items() if m[i])
        c.first.append(Finding(pos, _scalar(flat_f[i]), _scalar(flat_e[i]),
                               None if ulp is None or kind.startswith(("NaN", "a value", "infinity")) else int(ulp[i]),
                               kind, inputs_at(pos) if inputs_at is not None else {}))
    return c
