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

__all__ = ["ulp_distance", "compare", "Comparison", "Finding", "HISTOGRAM_EDGES", "MAX_SHOWN", "exact_chunk"]

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

    With ``b`` float64 and ``a`` FLOAT16 or FLOAT32 (``b`` a near-exact value), the distance is
    fractional, as float64: ``b``'s position among ``a``'s type's values, counted in units of that
    type's ULP where ``b`` lies (the spacing of the binade, ``b`` beyond the largest finite value
    rounding to infinity, which lies one ULP past it). Between values of ``a``'s type it is the
    count above; a result correctly rounded from ``b`` is at most 0.5 from it.

    >>> import numpy as np
    >>> int(ulp_distance(np.float32(1.0), np.nextafter(np.float32(1.0), np.float32(2.0))))
    1
    >>> int(ulp_distance(np.float32(-0.0), np.float32(0.0)))
    0
    >>> float(ulp_distance(np.float32(1.0), 1.0 + 2.5 * 2.0 ** -23))
    2.5
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" and a.dtype.itemsize < 8 and b.dtype == np.float64:
        return np.abs(_position(a) - _exact_position(b, a.dtype))
    if a.dtype != b.dtype or a.dtype.kind != "f":
        raise TypeError(f"ulp_distance takes two arrays of one float type, or a FLOAT16 or FLOAT32 array and a "
                        f"float64 one, not {a.dtype} and {b.dtype}")
    ma, na = _ordered(np.ascontiguousarray(a).reshape(a.shape))
    mb, nb = _ordered(np.ascontiguousarray(b).reshape(b.shape))
    same = na == nb
    return np.where(same, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)  # + across zero: below 2^64


def _position(x: np.ndarray) -> np.ndarray:
    """A FLOAT16 or FLOAT32 array's values as their signed positions among the type's values
    (float64: 0 for both zeros, the largest finite value's position plus one for infinity)."""
    m, neg = _ordered(np.ascontiguousarray(x).reshape(x.shape))
    m = m.astype(np.float64)
    return np.where(neg, -m, m)


def _exact_position(e: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Where float64 values lie among ``dtype``'s values: the position of the value below (toward
    zero) plus the fraction of the ULP there; beyond the largest finite value, infinity's position
    (where rounding takes it); an infinity's own position."""
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    mag = np.abs(e)
    with np.errstate(over="ignore", invalid="ignore"):
        t = mag.astype(dtype)  # rounded to nearest; one value back toward zero where it rounded up
        bits = t.view(_UNSIGNED[dtype.itemsize]).astype(np.int64)
        bits -= t.astype(np.float64) > mag
        below = bits.astype(_UNSIGNED[dtype.itemsize]).view(dtype).astype(np.float64)
        # the ULP of the binade of the value below: 2^(exponent - mantissa bits), the denormals'
        # for exponent field 0
        field = np.maximum(bits >> info.nmant, 1)
        step = np.ldexp(1.0, (field - (info.maxexp - 1) - info.nmant).astype(np.int32))
        frac = np.where(np.isinf(mag), 0.0, (mag - below) / step)
    inf_at = float(_ordered(np.asarray(np.inf, dtype))[0])
    p = np.minimum(bits + frac, inf_at)
    return np.where(np.signbit(e), -p, p)


@dataclasses.dataclass
class Finding:
    """One element beyond budget: its position (in the file's shape), the value found, the value
    expected (dmljax's result), the distance it is judged by, what kind of difference it is and
    the operator's inputs there; with a float64 value, that value (``exact``, None where the
    element is judged against dmljax's result) and the distance from dmljax's result."""

    position: tuple[int, ...]
    found: float | int
    expected: float | int
    ulp: float | None
    kind: str
    inputs: dict[str, float | int] = dataclasses.field(default_factory=dict)
    exact: float | None = None
    ulp_dmljax: int | None = None


@dataclasses.dataclass
class Comparison:
    """One tensor compared: counts, distances and the patterns found.

    ``beyond`` counts the elements past the budget (NaN, infinity and denormal mismatches
    included); ``patterns`` names the kinds of difference found, with their counts
    (``"NaN where a value is expected"``, ``"flushed denormals"``, ...); ``histogram`` counts the
    finite elements per bin of HISTOGRAM_EDGES, by the distance each element is judged by.

    With a float64 value (``exact``): ``max_ulp`` and ``median_ulp`` are fractional distances
    from it (where trusted), ``max_ulp_dmljax`` the largest distance from dmljax's result, and
    ``untrusted`` the elements where dmljax's own result lies beyond its budget of the float64
    value, which are judged against dmljax's result instead."""

    elements: int
    budget_ulp: float
    data_type: str
    max_ulp: float = 0
    median_ulp: float = 0.0
    max_abs: float = 0.0
    median_abs: float = 0.0
    beyond: int = 0
    patterns: dict[str, int] = dataclasses.field(default_factory=dict)
    first: list[Finding] = dataclasses.field(default_factory=list)
    histogram: list[int] = dataclasses.field(default_factory=list)
    exact: bool = False
    max_ulp_dmljax: int = 0
    untrusted: int = 0

    @property
    def ok(self) -> bool:
        return self.beyond == 0


def _scalar(v):
    v = v.item() if hasattr(v, "item") else v
    return float(v) if isinstance(v, float) else v


CHUNK = 1 << 20
"""Elements classified at a time: the masks and distances of one chunk are what ``compare``
allocates beyond one distance array per tensor (4 bytes an element for FLOAT32 and FLOAT16)."""


def exact_chunk() -> int:
    """Elements classified at a time against a float64 value: a quarter of CHUNK, its arithmetic
    taking 8-byte temporaries (and the float64 values of an element-wise operator are evaluated
    this many at a time, exact.Float64Chunks)."""
    return max(1, CHUNK // 4)


ROUNDING = 0.5
"""What a budget of B ULP allows from the float64 value: B ULP from the value rounded once to the
output type (docs/semantics.md#the-reference), which is itself up to half an ULP from it."""


def _range_of(values):
    """``(start, stop) -> values`` at those flattened positions: an array's slice, or a source
    read range by range (its ``range``)."""
    if isinstance(values, np.ndarray):
        flat = values.reshape(-1)
        return lambda start, stop: flat[start:stop]
    return values.range


def compare(found: np.ndarray, expected: np.ndarray, budget_ulp: float,
            inputs_at: Callable[[tuple[int, ...]], dict] | None = None, exact=None,
            trust_budget: float | None = None) -> Comparison:
    """Every element of ``found`` against ``expected`` (dmljax's result: same shape and dtype;
    ``found`` an array or an object reading it range by range, as ``exact`` below).
    Floats: within ``budget_ulp`` ULP; NaN matches NaN (payloads are not compared); an infinity
    must be the same infinity; a zero found where a denormal is expected is a flushed denormal, a
    denormal found where zero is expected one that should have been flushed. Integers and
    booleans: equal. ``inputs_at(position)`` gives the operator's inputs at an element listed
    beyond budget.

    ``exact`` (float64, the shape of ``expected``; FLOAT16 and FLOAT32 results only): the
    operator's float64 value, an array or an object evaluating it range by range
    (exact.Float64Chunks: ``shape``, ``dtype`` and ``range(start, stop)`` of the flattened
    positions, asked for in order, each range once). Each element is then judged by its
    fractional distance from it (``ulp_distance``), within ``budget_ulp`` + 0.5 (ROUNDING), wherever dmljax's own result is
    within ``trust_budget`` (the operator's unscaled budget; default ``budget_ulp``) + 0.5 of it
    and agrees with it on NaN and infinity; elsewhere against ``expected`` as without it.

    Works through the tensors CHUNK elements at a time (``exact_chunk()`` against a float64
    value, whose arithmetic takes 8-byte temporaries); the medians are exact (a selection over
    one array of the finite elements' distances)."""
    found = found if hasattr(found, "range") else np.asarray(found)
    expected = np.asarray(expected)
    if found.shape != expected.shape or found.dtype != expected.dtype:
        raise ValueError(f"compare: {found.dtype}{list(found.shape)} against {expected.dtype}{list(expected.shape)}")
    is_float = found.dtype.kind == "f"
    if exact is not None:
        exact = exact if hasattr(exact, "range") else np.asarray(exact)
        if not is_float or found.dtype.itemsize == 8 or exact.dtype != np.float64 or exact.shape != found.shape:
            raise ValueError(f"compare: a float64 value of shape {list(exact.shape)} ({exact.dtype}) for "
                             f"{found.dtype}{list(found.shape)}")
        trust = float(budget_ulp if trust_budget is None else trust_budget)
    c = Comparison(int(found.size), float(budget_ulp), str(found.dtype), exact=exact is not None)
    flat_e = expected.reshape(-1)
    found_range = _range_of(found)
    exact_range = None if exact is None else _range_of(exact)
    kinds = _FLOAT_KINDS if is_float else ("different values",)
    counts = dict.fromkeys(kinds, 0)
    shown: list[tuple[int, object, str, float | None, tuple | None]] = []
    if is_float:
        wide = found.dtype.itemsize == 8
        ulps = np.empty(found.size, np.float32 if exact is not None else np.uint64 if wide else np.uint32)
        absd = np.empty(found.size, np.float64 if wide else np.float32)
        edges = np.asarray(HISTOGRAM_EDGES[:-1], np.float64)
        hist = np.zeros(len(edges), np.int64)
        tiny = np.finfo(found.dtype).tiny
    else:
        diffs = []
    n_finite = 0
    chunk = CHUNK if exact is None else exact_chunk()  # the float64 value's arithmetic: 8-byte temporaries
    for start in range(0, max(flat_e.size, 1), chunk):
        e = flat_e[start:start + chunk]
        f = found_range(start, start + e.size)
        xc = None if exact_range is None or not f.size else exact_range(start, start + f.size)
        if is_float:
            if exact is None:
                masks, ulp, ad, finite = _classify_floats(f, e, budget_ulp, tiny)
            else:
                masks, ulp, ad, finite, trusted, d_dml = _classify_exact(
                    f, e, xc if xc is not None else np.empty(0), budget_ulp, trust, tiny)
                c.untrusted += int((~trusted).sum())
                c.max_ulp_dmljax = max(c.max_ulp_dmljax, int(d_dml.max()) if d_dml.size else 0)
            k = int(finite.sum())
            fu, fa = ulp[finite], ad[finite]
            ulps[n_finite:n_finite + k] = fu
            absd[n_finite:n_finite + k] = fa
            n_finite += k
            top = fu.max() if k else 0
            if top == 0:
                hist[0] += k
            else:
                c.max_ulp = max(c.max_ulp, float(top) if exact is not None else int(top))
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
            distance = None if ulp is None or kind in _NO_DISTANCE else ulp[i].item()
            extra = None
            if exact is not None:
                x = xc[int(i)]
                both = bool(np.isfinite(f[i]) and np.isfinite(e[i]))
                extra = (float(x) if trusted[i] else None, int(ulp_distance(f[i], e[i])) if both else None)
            shown.append((start + int(i), f[i], kind, distance, extra))
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
    for i, value, kind, distance, extra in shown:
        pos = tuple(int(p) for p in np.unravel_index(i, found.shape)) if found.ndim else ()
        finding = Finding(pos, _scalar(value), _scalar(flat_e[i]), distance, kind,
                          inputs_at(pos) if inputs_at is not None else {})
        if extra is not None:
            finding.exact, finding.ulp_dmljax = extra
        c.first.append(finding)
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


def _classify_exact(f, e, x, budget, trust, tiny):
    """``_classify_floats`` against the float64 value ``x`` where dmljax's result ``e`` is
    trusted (within ``trust`` + ROUNDING of ``x``, NaN where ``x`` is NaN, the same infinity
    where ``x`` is infinite), against ``e`` elsewhere. Also returns the trusted mask and the
    distances from ``e`` (0 where not both finite). A vendor's infinity for a finite float64
    value is measured (infinity lies one ULP past the largest finite value), so that an overflow
    at the edge within budget is not named."""
    nan_f, nan_e, nan_x = np.isnan(f), np.isnan(e), np.isnan(x)
    inf_f, inf_x = np.isinf(f), np.isinf(x)
    limit = budget + ROUNDING
    with np.errstate(invalid="ignore", over="ignore"):
        px = _exact_position(x, f.dtype)
        trusted = np.where(nan_x, nan_e, ~nan_e & np.where(inf_x, e == x, np.abs(_position(e) - px) <= trust + ROUNDING))
        measured = ~nan_f & ~nan_x & ~inf_x
        d = np.where(measured, np.abs(_position(f) - px), 0.0)
        finite = measured & ~inf_f
        ad = np.where(finite, np.abs(f.astype(np.float64) - x), 0.0)
        den_f = (f != 0) & (np.abs(f) < tiny)
        den_x = (x != 0) & (np.abs(x) < tiny)
        both = np.isfinite(f) & np.isfinite(e)
        d_dml = np.where(both, ulp_distance(f, e), 0)
    beyond = measured & (d > limit)
    flushed = beyond & den_x & (f == 0)
    kept = beyond & den_f & (x == 0)
    masks = {"NaN where a value is expected": nan_f & ~nan_x,
             "a value where NaN is expected": ~nan_f & nan_x,
             "infinity mismatches": ~(nan_f | nan_x) & ((inf_x & (f != x)) | (beyond & inf_f)),
             "flushed denormals": flushed,
             "denormals kept where zero is expected": kept,
             "beyond the ULP budget": beyond & ~inf_f & ~flushed & ~kept}
    d = np.where(finite, d, 0.0)
    if not trusted.all():
        old, ulp_old, ad_old, finite_old = _classify_floats(f, e, budget, tiny)
        masks = {k: np.where(trusted, masks[k], old[k]) for k in _FLOAT_KINDS}
        d, ad, finite = np.where(trusted, d, ulp_old), np.where(trusted, ad, ad_old), np.where(trusted, finite, finite_old)
    return masks, d, ad, finite, trusted, d_dml


def _median(values: np.ndarray) -> float:
    """The median of ``values`` (reordered in place: no copy of a large array)."""
    n = values.size
    mid = n // 2
    if n % 2:
        values.partition(mid)
        return float(values[mid])
    values.partition([mid - 1, mid])
    return (float(values[mid - 1]) + float(values[mid])) / 2
