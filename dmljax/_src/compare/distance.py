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


CHUNK = 1 << 20
"""Elements classified at a time: the masks and distances of one chunk are what ``compare``
allocates beyond one distance array per tensor (4 bytes an element for FLOAT32 and FLOAT16)."""


def compare(found: np.ndarray, expected: np.ndarray, budget_ulp: float,
            inputs_at: Callable[[tuple[int, ...]], dict] | None = None) -> Comparison:
    """Every element of ``found`` against ``expected`` (same shape and dtype). Floats: within
    ``budget_ulp`` ULP; NaN matches NaN (payloads are not compared); an infinity must be the same
    infinity; a zero found where a denormal is expected is a flushed denormal, a denormal found
    where zero is expected one that should have been flushed. Integers and booleans: equal.
    ``inputs_at(position)`` gives the operator's inputs at an element listed beyond budget.

    Works through the tensors CHUNK elements at a time; the medians are exact (a selection over
    one array of the finite elements' distances)."""
    found, expected = np.asarray(found), np.asarray(expected)
    if found.shape != expected.shape or found.dtype != expected.dtype:
        raise ValueError(f"compare: {found.dtype}{list(found.shape)} against {expected.dtype}{list(expected.shape)}")
    c = Comparison(int(found.size), float(budget_ulp), str(found.dtype))
    flat_f, flat_e = found.reshape(-1), expected.reshape(-1)
    is_float = found.dtype.kind == "f"
    kinds = _FLOAT_KINDS if is_float else ("different values",)
    counts = dict.fromkeys(kinds, 0)
    shown: list[tuple[int, str, int | None]] = []
    if is_float:
        wide = found.dtype.itemsize == 8
        ulps = np.empty(found.size, np.uint64 if wide else np.uint32)
        absd = np.empty(found.size, np.float64 if wide else np.float32)
        edges = np.asarray(HISTOGRAM_EDGES[:-1], np.float64)
        hist = np.zeros(len(edges), np.int64)
        tiny = np.finfo(found.dtype).tiny
    else:
        diffs = []
    n_finite = 0
    for start in range(0, max(flat_f.size, 1), CHUNK):
        f, e = flat_f[start:start + CHUNK], flat_e[start:start + CHUNK]
        if is_float:
            masks, ulp, ad, finite = _classify_floats(f, e, budget_ulp, tiny)
            k = int(finite.sum())
            fu, fa = ulp[finite], ad[finite]
            ulps[n_finite:n_finite + k] = fu
            absd[n_finite:n_finite + k] = fa
            n_finite += k
            top = int(fu.max()) if k else 0
            if top == 0:
                hist[0] += k
            else:
                c.max_ulp = max(c.max_ulp, top)
                c.max_abs = max(c.max_abs, float(fa.max()))
                hist += np.bincount(np.searchsorted(edges, fu.astype(np.float64), side="right") - 1,
                                    minlength=len(edges))
        else:
            masks, ulp = {"different values": f != e}, None
            if masks["different values"].any():
                d = np.abs(f.astype(np.float64) - e.astype(np.float64))
                c.max_abs = max(c.max_abs, float(d.max()))
                diffs.append(d[masks["different values"]])
        bad = np.zeros(f.shape, bool)
        for kind in kinds:
            m = masks[kind]
            counts[kind] += int(m.sum())
            bad |= m
        for i in np.flatnonzero(bad)[:MAX_SHOWN - len(shown)]:
            kind = next(kd for kd in kinds if masks[kd][i])
            distance = None if ulp is None or kind in _NO_DISTANCE else int(ulp[i])
            shown.append((start + int(i), kind, distance))
    if is_float:
        if n_finite:
            c.median_ulp = _median(ulps[:n_finite])
            c.median_abs = _median(absd[:n_finite])
        c.histogram = hist.tolist()
    elif diffs:
        d = np.concatenate(diffs)  # equal elements are at distance 0
        c.median_abs = _median(np.concatenate([d, np.zeros(found.size - d.size)]))
    c.patterns = {k: n for k, n in counts.items() if n}
    c.beyond = sum(c.patterns.values())
    for i, kind, distance in shown:
        pos = tuple(int(p) for p in np.unravel_index(i, found.shape)) if found.ndim else ()
        c.first.append(Finding(pos, _scalar(flat_f[i]), _scalar(flat_e[i]), distance, kind,
                               inputs_at(pos) if inputs_at is not None else {}))
    return c


_FLOAT_KINDS = ("NaN where a value is expected", "a value where NaN is expected", "infinity mismatches",
                "flushed denormals", "denormals kept where zero is expected", "beyond the ULP budget")
_NO_DISTANCE = ("NaN where a value is expected", "a value where NaN is expected", "infinity mismatches")


def _classify_floats(f, e, budget, tiny):
    """One chunk's masks by kind (each element beyond budget in exactly one), its ULP and
    absolute distances (0 where not both finite) and its mask of finite pairs."""
    if np.array_equal(f.view(_UNSIGNED[f.dtype.itemsize]), e.view(_UNSIGNED[e.dtype.itemsize])):  # the same bits
        finite = np.isfinite(f)
        none = np.zeros(f.shape, bool)
        return ({k: none for k in _FLOAT_KINDS}, np.zeros(f.shape, np.uint64), np.zeros(f.shape, np.float64),
                finite)
    nan_f, nan_e = np.isnan(f), np.isnan(e)
    inf_f, inf_e = np.isinf(f), np.isinf(e)
    finite = ~(nan_f | nan_e | inf_f | inf_e)
    with np.errstate(invalid="ignore", over="ignore"):
        den_f = (f != 0) & (np.abs(f) < tiny)
        den_e = (e != 0) & (np.abs(e) < tiny)
        ad = np.abs(f.astype(np.float64) - e.astype(np.float64))
    ulp = ulp_distance(f, e)
    ulp[~finite] = 0
    ad[~finite] = 0.0
    beyond = finite & (ulp > budget)
    flushed = beyond & den_e & (f == 0)
    kept = beyond & den_f & (e == 0)
    return {"NaN where a value is expected": nan_f & ~nan_e,
            "a value where NaN is expected": ~nan_f & nan_e,
            "infinity mismatches": ~(nan_f | nan_e) & (inf_f | inf_e) & (f != e),
            "flushed denormals": flushed,
            "denormals kept where zero is expected": kept,
            "beyond the ULP budget": beyond & ~flushed & ~kept}, ulp, ad, finite


def _median(values: np.ndarray) -> float:
    """The median of ``values`` (reordered in place: no copy of a large array)."""
    n = values.size
    mid = n // 2
    if n % 2:
        values.partition(mid)
        return float(values[mid])
    values.partition([mid - 1, mid])
    return (float(values[mid - 1]) + float(values[mid])) / 2
