"""UPSAMPLE_2D, RESAMPLE, RESAMPLE1, RESAMPLE2, RESAMPLE3, RESAMPLE_GRAD and RESAMPLE_GRAD1, of the
resample family: each page's record, with its formula below it, all on one separable rule.

Each axis maps an output coordinate back to the input by the pages' relation
``OutputTensorX = (InputTensorX + InputPixelOffset) * Scale + OutputPixelOffset``, that is
``x = (OutputX - OutputPixelOffset) / Scale - InputPixelOffset`` (RESAMPLE and UPSAMPLE_2D: the
pixel centers, offsets 0.5 and -0.5). Nearest neighbor picks one input element per axis; linear
interpolation weighs the two nearest (RESAMPLE3's antialiasing: all within 1 / Scale), the
coordinate clamped to the input, so that the edges repeat; the axes compose (the output element is
the sum over the product of the per-axis taps). The taps depend only on the sizes and attributes,
which are static: they are computed once per compile, in float64 NumPy, and the formula is a
gather and a weighted sum along one axis at a time. The *_GRAD operators are the transposed sums,
also as gathers (each input element's readers; a scatter-add only past 64 readers)."""

from __future__ import annotations

import dataclasses
import functools
import math
from fractions import Fraction

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.enums import AxisDirection, InterpolationMode
from dmljax._src.errors import Violation
from dmljax._src.numerics import load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import MAX_ELEMENTS, TensorInfo

F32, F16, I8, U8 = DataType.FLOAT32, DataType.FLOAT16, DataType.INT8, DataType.UINT8
_FLOATS_BYTES = (F32, F16, I8, U8)  # the pages' "FLOAT32, FLOAT16, INT8, UINT8"
NEAREST, LINEAR = InterpolationMode.NEAREST_NEIGHBOR, InterpolationMode.LINEAR

# How nearest neighbor rounds a coordinate to an element: RESAMPLE, RESAMPLE1 and UPSAMPLE_2D take
# the nearest pixel center with a tie to the lower index (the RESAMPLE_GRAD page's example, which
# lies on ties: see the notes); RESAMPLE2 and RESAMPLE3 round as their RoundingDirection says.
ROUND_NEAREST, ROUND_FLOOR, ROUND_CEIL = "nearest", "floor", "ceil"
_SORTED_AXES = True  # process shrinking axes first (less to compute after them)
MAX_TAPS = 2**24  # entries of one dimension's table (outputs x taps per output): the host computes it when tracing
_GATHER_TAPS = 64  # a transposed axis whose elements have more readers than this: one scatter-add
_UNROLLED = 4  # taps summed one gather each; more: one gather of all the taps and a sum


# ------------------------------------------------------------------------------ the taps
@dataclasses.dataclass(frozen=True, eq=False)
class Taps:
    """One axis: output element o reads input elements ``index[o, k]`` with weights
    ``weight[o, k]`` (float64, summing to 1; None for nearest neighbor: one tap of weight 1)."""

    n_in: int
    n_out: int
    index: np.ndarray
    weight: np.ndarray | None

    @functools.cached_property
    def identity(self) -> bool:
        return (self.n_in == self.n_out and self.index.shape[1] == 1
                and bool((self.index[:, 0] == np.arange(self.n_out)).all()))


def coordinates(n_out: int, scale: float, input_offset: float, output_offset: float) -> np.ndarray:
    """The pages' relation solved for the input: (OutputX - OutputPixelOffset) / Scale -
    InputPixelOffset, for every output index (float64, from the float32 attributes)."""
    return (np.arange(n_out, dtype=np.float64) - output_offset) / scale - input_offset


def _tri_sum(c, a, lo, hi):
    """Sum over the integers i in [lo, hi] of the triangle 1 - |i - c| / a (0 where lo > hi),
    in closed form (arithmetic series on each side of c): a window of any width costs the same."""
    m = np.floor(c)

    def series(p, q, sign):  # sum over [p, q] of 1 + sign * (i - c) / a
        n = np.maximum(q - p + 1, 0)
        total = (p + q) * n / 2
        return n * (1 - sign * c / a) + sign * total / a
    left = series(lo, np.minimum(hi, m), 1.0)  # i <= c: 1 - (c - i) / a
    right = series(np.maximum(lo, m + 1), hi, -1.0)  # i > c: 1 - (i - c) / a
    return left + right


def _antialiased_taps(n_in, c, a) -> tuple[np.ndarray, np.ndarray]:
    """The triangle filter stretched to half-width ``a`` around each coordinate: every integer
    position i with |i - c| < a weighs 1 - |i - c| / a, normalized by their sum; positions beyond
    the edges read the edge element (their weights summed onto it)."""
    lo = np.floor(c - a) + 1  # the integers strictly inside (c - a, c + a)
    hi = np.ceil(c + a) - 1
    total = _tri_sum(c, a, lo, hi)
    first = np.clip(lo, 0, n_in - 1)
    last = np.clip(hi, 0, n_in - 1)
    k = int((last - first).max()) + 1
    index = first[:, None] + np.arange(k)[None, :]
    live = index <= last[:, None]
    weight = np.where(live, np.maximum(0.0, 1 - np.abs(index - c[:, None]) / a), 0.0)
    edge0 = _tri_sum(c, a, lo, np.minimum(hi, 0))  # positions <= 0 read element 0
    edge1 = _tri_sum(c, a, np.maximum(lo, n_in - 1), hi)  # positions >= n - 1 read element n - 1
    if n_in == 1:
        weight[:, 0] = total
    else:
        weight = np.where(index == 0, edge0[:, None], weight)
        weight = np.where(live & (index == n_in - 1), edge1[:, None], weight)
    index = np.minimum(index, n_in - 1)
    return index.astype(np.int64), weight / total[:, None]


@functools.lru_cache(maxsize=512)
def axis_taps(n_in: int, n_out: int, mode: InterpolationMode, rounding: str, scale: float,
              input_offset: float, output_offset: float, antialiased: bool = False) -> Taps:
    """The taps of one axis from ``n_in`` to ``n_out`` elements (the attributes are float32
    values; ``rounding``: ROUND_NEAREST, ROUND_FLOOR or ROUND_CEIL, for nearest neighbor)."""
    c = coordinates(n_out, scale, input_offset, output_offset)
    if mode is NEAREST:
        c = np.clip(c, -1.0, float(n_in))  # beyond these every rounding clamps the same
        i = {ROUND_NEAREST: np.ceil(c - 0.5), ROUND_FLOOR: np.floor(c), ROUND_CEIL: np.ceil(c)}[rounding]
        return Taps(n_in, n_out, np.clip(i, 0, n_in - 1).astype(np.int64)[:, None], None)
    if antialiased and scale < 0.5:  # "1/Scales > 2" (RESAMPLE3), for linear interpolation
        index, weight = _antialiased_taps(n_in, c, 1.0 / scale)
        return Taps(n_in, n_out, index, weight)
    cc = np.clip(c, 0.0, float(n_in - 1))  # the output edges are clamped: weights (1, 0) there
    f = cc - np.floor(cc)
    i0 = np.clip(np.floor(np.clip(c, -1.0, float(n_in))), 0, n_in - 1)
    if not f.any():
        return Taps(n_in, n_out, i0.astype(np.int64)[:, None], np.ones((n_out, 1)))
    # the second element clamped from floor(x) + 1, not from the clamped coordinate: the same
    # values (its weight is 0 at the edges)
    i1 = np.clip(np.floor(np.clip(c, -1.0, float(n_in))) + 1, 0, n_in - 1)
    index = np.stack([i0, i1], axis=1).astype(np.int64)
    return Taps(n_in, n_out, index, np.stack([1.0 - f, f], axis=1))


@dataclasses.dataclass(frozen=True, eq=False)
class Readers:
    """The transpose of an axis's taps: input element i is read by outputs ``index[i, m]`` with
    weights ``weight[i, m]`` (0: no reader); ``scatter`` when some element has more readers than
    a gather should take (the taps themselves are then scattered)."""

    index: np.ndarray
    weight: np.ndarray
    scatter: bool


@functools.lru_cache(maxsize=512)
def _readers(taps: Taps) -> Readers:
    k = taps.index.shape[1]
    w = np.ones(taps.index.shape) if taps.weight is None else taps.weight
    outs = np.repeat(np.arange(taps.n_out), k)
    ins, ws = taps.index.ravel(), w.ravel()
    keep = ws != 0
    outs, ins, ws = outs[keep], ins[keep], ws[keep]
    order = np.lexsort((outs, ins))  # by input element, then output index
    outs, ins, ws = outs[order], ins[order], ws[order]
    counts = np.bincount(ins, minlength=taps.n_in)
    m = int(counts.max())
    if m > _GATHER_TAPS:
        return Readers(np.zeros((taps.n_in, 0), np.int64), np.zeros((taps.n_in, 0)), True)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(len(ins)) - starts[ins]
    index = np.zeros((taps.n_in, m), np.int64)
    weight = np.zeros((taps.n_in, m))
    index[ins, rank] = outs
    weight[ins, rank] = ws
    return Readers(index, weight, False)


def plan(in_shape, out_shape, mode, rounding, scales, input_offsets, output_offsets, antialiased=False):
    """The axes to resample, as (axis, Taps), in the order the formula runs them (an identity
    axis is left out); the transpose runs them in reverse."""
    steps = []
    for d, (n, m) in enumerate(zip(in_shape, out_shape)):
        t = axis_taps(int(n), int(m), mode, rounding, scales[d], input_offsets[d], output_offsets[d], antialiased)
        if not t.identity:
            steps.append((d, t))
    if _SORTED_AXES:
        steps.sort(key=lambda s: s[1].n_out / s[1].n_in)
    return tuple(steps)


# ------------------------------------------------------------------------------ along one axis
def _shape_along(ndim, axis, n):
    shape = [1] * ndim
    shape[axis] = n
    return tuple(shape)


def gather(x, axis: int, index: np.ndarray, sorted_index: bool = True):
    """``x`` read at ``index`` along ``axis``: a repeat, a strided slice, or a gather. (Slices of
    the edge-padded input interleaved, for a whole upscale's periodic indices, ran 2.8 times slower
    than the gather on the H100: XLA does not fuse the interleave.)"""
    n, m = x.shape[axis], len(index)
    if m % n == 0 and (index == np.arange(m) // (m // n)).all():  # each element k times in a row
        k = m // n
        y = jnp.expand_dims(x, axis + 1)
        y = jnp.broadcast_to(y, x.shape[:axis + 1] + (k,) + x.shape[axis + 1:])
        return y.reshape(x.shape[:axis] + (m,) + x.shape[axis + 1:])
    step = int(index[1] - index[0]) if m > 1 else 1
    if step >= 1 and (index == index[0] + step * np.arange(m)).all():
        return lax.slice_in_dim(x, int(index[0]), int(index[0]) + step * (m - 1) + 1, step, axis)
    return jnp.take(x, jnp.asarray(index, np.int32), axis=axis, mode="clip", indices_are_sorted=sorted_index)


def _weighted(x, axis: int, index: np.ndarray, weight: np.ndarray | None, sorted_index: bool):
    """Sum over k of x[index[:, k]] * weight[:, k] along ``axis``, in x's dtype; a zero weight's
    element is not read at all (an infinity there stays out: 0 * inf would be NaN). Up to
    _UNROLLED taps, one gather each (XLA fuses them with the sum); more (an antialiasing filter,
    a transpose's readers), one gather of them all and a sum over the taps."""
    n_out, k = index.shape
    w = np.ones(index.shape) if weight is None else weight
    live = w != 0
    if k > _UNROLLED:
        g = jnp.take(x, jnp.asarray(index.ravel(), np.int32), axis=axis, mode="clip")
        shape = _shape_along(x.ndim + 1, axis, n_out)
        shape = shape[:axis + 1] + (k,) + shape[axis + 2:]
        g = g.reshape(x.shape[:axis] + (n_out, k) + x.shape[axis + 1:])
        terms = g * jnp.asarray(w.astype(x.dtype).reshape(shape))
        if not live.all():
            terms = jnp.where(jnp.asarray(live.reshape(shape)), terms, jnp.zeros((), x.dtype))
        return jnp.sum(terms, axis=axis + 1)
    shape = _shape_along(x.ndim, axis, n_out)
    out = None
    for j in range(k):
        if not live[:, j].any():
            continue
        term = gather(x, axis, index[:, j], sorted_index)
        if not (w[:, j] == 1).all():
            term = term * jnp.asarray(w[:, j].astype(x.dtype).reshape(shape))
        mask = jnp.asarray(live[:, j].reshape(shape))
        if out is None:
            out = term if live[:, j].all() else jnp.where(mask, term, jnp.zeros((), x.dtype))
        else:
            out = out + term if live[:, j].all() else jnp.where(mask, out + term, out)
    if out is None:  # no output reads any of them (a transposed axis of zero readers)
        out = jnp.zeros(x.shape[:axis] + (n_out,) + x.shape[axis + 1:], x.dtype)
    return out


def resample_axis(x, axis: int, taps: Taps):
    """One axis of the forward formula (x in its compute dtype, or any dtype for nearest neighbor)."""
    if taps.weight is None:
        return gather(x, axis, taps.index[:, 0])
    return _weighted(x, axis, taps.index, taps.weight, True)


def transpose_axis(dy, axis: int, taps: Taps):
    """One axis of the transpose: dy (taps.n_out along ``axis``) to taps.n_in, each input
    element the sum of its readers' dy times their weights."""
    r = _readers(taps)
    if not r.scatter:
        return _weighted(dy, axis, r.index, r.weight, False)
    k = taps.index.shape[1]
    w = np.ones(taps.index.shape) if taps.weight is None else taps.weight
    moved = jnp.moveaxis(dy, axis, 0)
    parts = jnp.repeat(moved, k, axis=0, total_repeat_length=taps.n_out * k)
    parts = parts * jnp.asarray(w.ravel().astype(dy.dtype)).reshape((-1,) + (1,) * (dy.ndim - 1))
    out = jnp.zeros((taps.n_in,) + moved.shape[1:], dy.dtype).at[jnp.asarray(taps.index.ravel(), np.int32)].add(parts)
    return jnp.moveaxis(out, 0, axis)


# ------------------------------------------------------------------------------ the formulas
def values(x, steps, mode, half: bool):
    """The forward formula on ``x``: nearest neighbor moves the elements (bits kept); linear
    interpolation computes in FLOAT32 (FLOAT16 with half-precision computation), rounds once to a
    float type, and to nearest (halves to even) for INT8 and UINT8."""
    dt = DataType.from_dtype(x.dtype)
    if mode is NEAREST:
        for axis, taps in steps:
            x = resample_axis(x, axis, taps)
        return x
    v = load(x, half) if dt.is_float else x.astype(np.float32)
    for axis, taps in steps:
        v = resample_axis(v, axis, taps)
    if dt.is_float:
        out = store(v, dt)
        if dt is F32:
            mark_flushed(out)
        return out
    return jnp.round(v).astype(dt.dtype)  # a weighted average of the type's values: in range


def gradient_values(dy, steps, half: bool, data_type: DataType):
    """The transposed formula (RESAMPLE_GRAD's): dY's sums in FLOAT32 (FLOAT16 with half-precision
    computation), rounded once to ``data_type``."""
    v = load(dy, half)
    for axis, taps in reversed(steps):
        v = transpose_axis(v, axis, taps)
    out = store(v, data_type)
    if data_type is F32:
        mark_flushed(out)
    return out


def differentiable(x, steps, mode, half: bool):
    """The forward formula whose jax.grad is RESAMPLE_GRAD's rule (the same transposed sums, in
    FLOAT32, rounded once to the input's type); integer inputs: the formula alone."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return values(x, steps, mode, half)
    dt = DataType.from_dtype(x.dtype)

    def run(v):
        return values(v, steps, mode, half)

    def run_fwd(v):
        return run(v), None

    def run_bwd(_, dy):
        return (gradient_values(dy, steps, False, dt),)

    run = backward_rule(run, run_fwd, run_bwd)
    out = run(x)
    if mode is LINEAR and dt is F32:
        mark_flushed(out)
    return out


# ------------------------------------------------------------------------------ validation
def _pixel_offsets(input_offsets, output_offsets, n: int):
    """InputPixelOffsets and OutputPixelOffsets, None standing for the pixel centers (0.5, -0.5)."""
    return (tuple(input_offsets) if input_offsets is not None else (0.5,) * n,
            tuple(output_offsets) if output_offsets is not None else (-0.5,) * n)


def _output_size(n: int, scale: float) -> int:
    """floor(InputSize * Scale), exactly (the float32 Scale times the size as rationals)."""
    return math.floor(Fraction(n) * Fraction(scale))


_TINY = 2.0 ** -126  # FLOAT32's smallest normal: a denormal Scale reads as 0


def _array_checks(source: str, arrays: tuple[str, ...], target: str | None, target_arg: str):
    """The arrays have DimensionCount entries, the ``source`` tensor's DimensionCount; Scales are
    positive normal FLOATs, offsets finite; the ``target`` tensor (when the caller gives its
    Sizes) has the same DimensionCount."""

    def check(tensors, attrs, level) -> list[Violation]:
        src = tensors.get(source)
        if src is None:
            return []
        n = len(src.shape)
        problems = []
        for name in arrays:
            arr = attrs.get(name)
            if arr is not None and len(arr) != n:
                problems.append(Violation(name, _ARGS[name], f"has {len(arr)} entr{'y' if len(arr) == 1 else 'ies'}",
                                          f"DimensionCount ({n}) entries, one per dimension of the {source} "
                                          f"(Sizes {list(src.shape)})"))
        for i, s in enumerate(attrs.get("Scales") or ()):
            if not (math.isfinite(s) and s >= _TINY):
                problems.append(Violation(f"Scales[{i}]", "scales", f"is {s!r}",
                                          "a positive, finite FLOAT (a FLOAT32 denormal reads as 0)",
                                          "a scale > 1 scales up, < 1 down"))
        for name in arrays[1:]:
            for i, v in enumerate(attrs.get(name) or ()):
                if not math.isfinite(v):
                    problems.append(Violation(f"{name}[{i}]", _ARGS[name], f"is {v!r}", "a finite FLOAT"))
        out = tensors.get(target) if target else None
        if out is not None and out.shape and len(out.shape) != n:
            problems.append(Violation(target, target_arg, f"has {len(out.shape)} dimensions (Sizes {list(out.shape)})",
                                      f"the {source}'s DimensionCount, {n} (the page: the same DimensionCount)"))
        return problems
    return check


_ARGS = {"Scales": "scales", "InputPixelOffsets": "input_pixel_offsets", "OutputPixelOffsets": "output_pixel_offsets"}


def _resampled(tensors, attrs, problems) -> dict:
    """The OutputTensor: the caller's Sizes (output_sizes=), or floor(InputSize * Scale) per
    dimension."""
    x, out = tensors["InputTensor"], tensors.get("OutputTensor")
    if out is not None and out.shape:
        problems += _table_problems(x.shape, out.shape, attrs, "OutputTensor", "output_sizes")
        return {"OutputTensor": TensorInfo(out.shape, x.data_type)}
    shape = tuple(_output_size(n, s) for n, s in zip(x.shape, attrs["Scales"]))
    if min(shape, default=1) < 1:
        problems.append(Violation("OutputTensor", "output_sizes", f"would have Sizes {list(shape)} "
                                  f"(floor(InputSize * Scale) of Sizes {list(x.shape)})",
                                  "sizes of at least 1", "give output_sizes= (any sizes: the scales need not match "
                                  "them), or larger scales"))
    elif math.prod(shape) > MAX_ELEMENTS:
        problems.append(Violation("OutputTensor", "output_sizes", f"would have {math.prod(shape)} elements "
                                  f"(Sizes {list(shape)})", "a DirectML tensor holds at most 2^32 - 1 elements"))
    else:
        problems += _table_problems(x.shape, shape, attrs, "OutputTensor", "output_sizes")
    return {"OutputTensor": TensorInfo(shape, x.data_type)}


def _gradient_out(tensors, attrs, problems) -> dict:
    dy, out = tensors["InputGradientTensor"], tensors["OutputGradientTensor"]
    problems += _table_problems(out.shape, dy.shape, attrs, "OutputGradientTensor", "output_gradient_sizes")
    return {"OutputGradientTensor": TensorInfo(out.shape, dy.data_type)}


def _table_problems(in_shape, out_shape, attrs, tensor: str, arg: str, scales=None) -> list[Violation]:
    """A dimension whose taps (outputs x taps per output: 1 nearest, 2 linear, up to 2 / Scale + 2
    antialiased) exceed MAX_TAPS: dmljax computes them on the host when it traces the operator."""
    mode, scales = attrs.get("InterpolationMode"), scales or attrs.get("Scales")
    wide = bool(attrs.get("Antialiased"))
    problems = []
    for d, (n, m, s) in enumerate(zip(in_shape, out_shape, scales)):
        k = 1 if mode is NEAREST else min(n, math.floor(2 / s) + 2) if wide and s < 0.5 else 2
        if m * k > MAX_TAPS:
            problems.append(Violation(
                tensor, arg, f"has {m * k} taps in dimension {d} ({n} to {m} elements, {k} per output element)",
                f"at most {MAX_TAPS} per dimension: dmljax computes each dimension's taps on the host when it traces "
                "the operator", "resample the dimension in pieces"))
    return problems


# ------------------------------------------------------------------------------ budgets
def _linear_growth(sizes, attrs) -> dict:
    """Rounding units of the terms' magnitude, summed over the dimensions: linear interpolation
    sums 2 taps per dimension in FLOAT32 (an antialiased one about 2 / Scale), and its transpose
    (jax.grad's rule) sums an element's readers, about 2 x Scale + 2 (Scale + 1 for nearest
    neighbor, whose forward formula is exact)."""
    mode, scales = attrs.get("InterpolationMode"), attrs.get("Scales")
    if not isinstance(scales, (tuple, list)) or not all(isinstance(s, (int, float)) and s > 0 for s in scales):
        return {}
    nearest = str(mode).upper().endswith("NEAREST_NEIGHBOR") or mode == 0
    wide = bool(attrs.get("Antialiased")) and not nearest
    n = sum(max(math.ceil(2 / s) + 1 if wide and s < 0.5 else 2, (1 if nearest else 2) * math.ceil(s) + 2)
            for s in scales)
    return {F32: n, "half": n}


def _gradient_growth(sizes, attrs) -> dict:
    """An input element sums dY over its readers, about 2 x Scale + 2 per axis (Scale + 1 for
    nearest neighbor), in FLOAT32: that many rounding units of the terms' magnitude."""
    scales = attrs.get("Scales")
    if not isinstance(scales, (tuple, list)):
        return {}
    n = sum(2 * math.ceil(s) + 2 if isinstance(s, (int, float)) and s > 0 else 2 for s in scales)
    return {F32: n, F16: math.ceil(n / 8192), "half": n}


# ------------------------------------------------------------------------------ the records
_MODE_DOC = ("NEAREST_NEIGHBOR: the input element nearest to the corresponding pixel center{nn}; LINEAR: the "
             "weighted average of the 2 nearest input elements per dimension (16 for 4 dimensions){aa}.")
_MODE = ParamSpec("InterpolationMode", "DML_INTERPOLATION_MODE", enum=InterpolationMode,
                  doc=_MODE_DOC.format(nn=" (a tie: the lower index)", aa=""))
_MODE2 = dataclasses.replace(_MODE, doc=_MODE_DOC.format(nn=", rounded as RoundingDirection says", aa=""))
_MODE3 = dataclasses.replace(_MODE, doc=_MODE_DOC.format(nn=", rounded as RoundingDirection says",
                                                         aa=" (more with Antialiased)"))
_SCALES_DOC = ("The scale of each dimension (> 1 scales up, < 1 down; positive, finite). They need not be "
               "OutputSize / InputSize: a larger image is cropped to the output, a smaller one's edges are clamped.")
_IN_OFFSETS = ParamSpec("InputPixelOffsets", "FLOAT[]", default=None, nullable=True, count="DimensionCount",
                        doc=("The offset applied to the input pixels before resampling, per dimension; 0.5 uses the "
                             "pixel centers (RESAMPLE's). None: 0.5 in every dimension."))
_OUT_OFFSETS = ParamSpec("OutputPixelOffsets", "FLOAT[]", default=None, nullable=True, count="DimensionCount",
                         doc=("The offset applied to the output pixels after resampling, per dimension; -0.5 uses the "
                              "pixel centers (RESAMPLE's). None: -0.5 in every dimension."))
_ROUNDING = ParamSpec("RoundingDirection", "DML_AXIS_DIRECTION", default=AxisDirection.INCREASING, enum=AxisDirection,
                      doc=("How nearest neighbor rounds a fractional input coordinate: INCREASING (ceil) or "
                           "DECREASING (floor); LINEAR ignores it. Default INCREASING (a zeroed desc's, DirectMLX's)."))
_ANTIALIASED = ParamSpec("Antialiased", "BOOL", default=False,
                         doc=("With LINEAR, an axis whose 1 / Scale > 2 is filtered by the linear (triangle) filter "
                              "stretched to max(1, 1 / Scale), so that more input elements contribute when "
                              "downscaling. Default False."))
_COORDINATES = ("x = (OutputX - OutputPixelOffset) / Scale - InputPixelOffset per dimension (the relation solved "
                "for the input; computed from the float32 attributes to float64 accuracy). NEAREST_NEIGHBOR: element "
                "{nn}, clamped to [0, InputSize - 1]; LINEAR: x clamped to [0, InputSize - 1], then "
                "(1 - frac(x)) * In[floor(x)] + frac(x) * In[floor(x) + 1] per dimension, the dimensions composed "
                "(a zero weight's element is not read: an infinity there stays out).")
_NEAREST_TIE = "round(x) with a tie to the lower index (ceil(x - 0.5))"
_SIZES_NOTE = ("The OutputTensor's Sizes are the caller's (output_sizes=); left out (None), floor(InputSize * Scale) "
               "per dimension, exactly (the page: the scales need not be OutputSize / InputSize; a larger image is "
               "cropped, a smaller one's edges clamped, which the coordinate relation and the clamping do).")
_TIE_NOTE = ("Nearest neighbor takes the input element nearest to the pixel center and, at a tie, the lower index: "
             "the RESAMPLE_GRAD page's example (a RESAMPLE1 scaling 1.5x and 0.5x, whose coordinates lie on ties) "
             "gives [1, 1, 2] only so. (ONNX Runtime's DirectML code says RESAMPLE1 rounds halves up, and RESAMPLE2's "
             "remark, read with InputPixelOffsets, agrees: both against the example; dmljax follows the example.)")
_TYPES_NOTE = ("INT8 and UINT8 (from DML_FEATURE_LEVEL_6_2): nearest neighbor copies the elements; LINEAR computes "
               "in FLOAT32 and rounds to nearest, halves to even (the pages are silent). FLOAT16 is computed in "
               "FLOAT32 and rounded once, unless allow_half_precision_computation=True. Nearest neighbor is bit-exact "
               "data movement; LINEAR is math (FLOAT32 denormals read as 0).")
_BUDGET_NOTE = "LINEAR: a budget of 2 rounding units of the terms' magnitude per interpolated dimension."
_GRAD_NOTE = ("jax.grad is RESAMPLE_GRAD's rule with the same attributes (the same function): each input element "
              "gets the sum of dY over the output elements that read it, times their weights, in FLOAT32, rounded "
              "once; integer inputs: none.")


def _resample_table(level: str, dims: str, types) -> object:
    return table(level, InputTensor=(dims, types), OutputTensor=(dims, types))


_RESAMPLE_SUPPORT = (
    _resample_table("6.2", "1 to 4", _FLOATS_BYTES),
    _resample_table("5.1", "1 to 4", FLOAT32_FLOAT16),
)
_TENSORS = (TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output", sizes_arg=True, sizes_default=True))
_CONSTRAINTS = (SameDataType(("InputTensor", "OutputTensor")),)
_ARRAYS = ("Scales", "InputPixelOffsets", "OutputPixelOffsets")


RESAMPLE = OpSpec(
    enum_name=PREFIX + "RESAMPLE",
    summary=("Resamples elements from the source to the destination tensor, using the scale factors to compute the "
             "destination tensor size. You can use a linear or nearest-neighbor interpolation mode."),
    formula=("Resamples elements from the source to the destination tensor, using the scale factors to compute the "
             "destination tensor size.\nOutputTensorX = (InputTensorX + 0.5) * Scale - 0.5 (RESAMPLE1's relation "
             "with the pixel centers)\n" + _COORDINATES.format(nn=_NEAREST_TIE)),
    tensors=_TENSORS,
    support=(*_RESAMPLE_SUPPORT, _resample_table("2.0", "4", FLOAT32_FLOAT16)),
    params=(_MODE, ParamSpec("Scales", "FLOAT[]", count="ScaleCount", doc=_SCALES_DOC)),
    constraints=_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_linear_growth,
    grad_operator=PREFIX + "RESAMPLE_GRAD",
    gradient="RESAMPLE_GRAD's with InputPixelOffsets 0.5 and OutputPixelOffsets -0.5. " + _GRAD_NOTE,
    notes=" ".join(("RESAMPLE1 with InputPixelOffsets 0.5 and OutputPixelOffsets -0.5 (RESAMPLE1's remark).",
                    _SIZES_NOTE, _TIE_NOTE, _TYPES_NOTE, _BUDGET_NOTE)),
    extra_checks=(_array_checks("InputTensor", ("Scales",), "OutputTensor", "output_sizes"),),
    infer_outputs=_resampled,
    silent=(
        SilentChoice(
            "RESAMPLE / RESAMPLE1 / UPSAMPLE_2D nearest neighbor at a tie (an output pixel center exactly "
            "between two input centers, e.g. every output of a 0.5x downsample)",
            "the lower index: `ceil(x - 0.5)` of the input coordinate `x`",
            "The RESAMPLE_GRAD page's example (a RESAMPLE1 scaling 1.5x and 0.5x of `[[1, 2], [3, 4]]` gives "
            "`[1, 1, 2]`) lies exactly on ties at the pixel centers and is right only so. Against it: ONNX "
            "Runtime's DirectML EP comment \"DML's nearest neighbor mode uses round-halves-up ... via "
            "floor(input.x + 0.5)\", a 2023 WebNN WPT run on Chromium's DirectML backend that picked the "
            "bottom-right elements of a 0.5x downsample, and RESAMPLE2's remark read with InputPixelOffsets. "
            "Owner's call: flipping it is the one line `ROUND_NEAREST` in `axis_taps` (`np.floor(c + 0.5)`) "
            "plus the reference's `rounding == \"nearest\"` branch and two hand tests.",
            also=("RESAMPLE1", "UPSAMPLE_2D")),
        SilentChoice(
            "RESAMPLE's / RESAMPLE1's / RESAMPLE2's OutputTensor Sizes",
            "the caller's (`output_sizes=`); left out, `floor(InputSize * Scale)` per dimension, computed "
            "exactly from the float32 Scale (10 x float32(0.7) gives 6)",
            "The desc's OutputTensor carries them and the pages say the scales need not match them (a larger "
            "image is cropped, a smaller one's edges clamped: the coordinate relation and the clamping do "
            "exactly that); floor is ONNX's and WebNN's rule.",
            also=("RESAMPLE1", "RESAMPLE2")),
        SilentChoice(
            "Scales values",
            "positive, finite, at least FLOAT32's smallest normal (a denormal scale reads as 0); offsets "
            "finite",
            "The relation divides by Scale; the pages give no range.",
            also=("RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1")),
        SilentChoice(
            "Coordinates",
            "`x = (OutputX - OutputPixelOffset) / Scale - InputPixelOffset`, from the float32 attributes to "
            "float64 accuracy, at trace time (NumPy)",
            "The relation the RESAMPLE1/2/3 pages give, solved for the input; DirectML's GPU arithmetic is not "
            "documented.",
            also=("RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1")),
        SilentChoice(
            "INT8 / UINT8 LINEAR (RESAMPLE, RESAMPLE1, RESAMPLE2 from 6.2; RESAMPLE3)",
            "interpolated in FLOAT32, rounded to nearest, halves to even (`[1, 2]` at 0.5x gives 2, `[3, 4]` "
            "gives 4)",
            "The pages list the types and say nothing of rounding; a weighted average of the type's values is "
            "always in range.",
            also=("RESAMPLE1", "RESAMPLE2", "RESAMPLE3")),
    ),
)


@operator(RESAMPLE)
def resample(input, *, interpolation_mode, scales, output_sizes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[1, 2], [3, 4]]]], np.float32)
        >>> dmljax.resample(x, interpolation_mode="LINEAR", scales=(1, 1, 2, 2))[0, 0]
        Array([[1.  , 1.25, 1.75, 2.  ],
               [1.5 , 1.75, 2.25, 2.5 ],
               [2.5 , 2.75, 3.25, 3.5 ],
               [3.  , 3.25, 3.75, 4.  ]], dtype=float32)
        >>> dmljax.resample(x, interpolation_mode="NEAREST_NEIGHBOR", scales=(1, 1, 0.5, 1.5))[0, 0]
        Array([[1., 1., 2.]], dtype=float32)
    """
    n = input.ndim
    steps = plan(input.shape, output_sizes, interpolation_mode, ROUND_NEAREST, scales, (0.5,) * n, (-0.5,) * n)
    return differentiable(input, steps, interpolation_mode, allow_half_precision_computation)


RESAMPLE1 = OpSpec(
    enum_name=PREFIX + "RESAMPLE1",
    summary=RESAMPLE.summary,
    formula="OutputTensorX = (InputTensorX + InputPixelOffset) * Scale + OutputPixelOffset\n" + _COORDINATES.format(
        nn=_NEAREST_TIE),
    tensors=_TENSORS,
    support=(*_RESAMPLE_SUPPORT, _resample_table("2.1", "4", FLOAT32_FLOAT16)),
    params=(_MODE, ParamSpec("Scales", "FLOAT[]", count="DimensionCount", doc=_SCALES_DOC), _IN_OFFSETS, _OUT_OFFSETS),
    constraints=_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_linear_growth,
    grad_operator=PREFIX + "RESAMPLE_GRAD",
    gradient="RESAMPLE_GRAD's. " + _GRAD_NOTE,
    notes=" ".join(("With InputPixelOffsets 0.5 and OutputPixelOffsets -0.5 (the defaults) it is RESAMPLE.",
                    _SIZES_NOTE, _TIE_NOTE, _TYPES_NOTE, _BUDGET_NOTE)),
    extra_checks=(_array_checks("InputTensor", _ARRAYS, "OutputTensor", "output_sizes"),),
    infer_outputs=_resampled,
    silent=(
        SilentChoice(
            "InputPixelOffsets / OutputPixelOffsets left out (RESAMPLE1/2/3, RESAMPLE_GRAD/GRAD1)",
            "0.5 and -0.5 in every dimension (the pixel centers, RESAMPLE's)",
            "The pages name these as the values that give RESAMPLE's behaviour; a desc that gives them is used "
            "as it is.",
            also=("RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1")),
    ),
)


@operator(RESAMPLE1)
def resample1(input, *, interpolation_mode, scales, input_pixel_offsets, output_pixel_offsets, output_sizes,
              allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([1, 2, 3, 4], np.float32)
        >>> dmljax.resample1(x, interpolation_mode="LINEAR", scales=(2,), input_pixel_offsets=(0,),
        ...                  output_pixel_offsets=(0,))  # the top left corners: x = OutputX / 2
        Array([1. , 1.5, 2. , 2.5, 3. , 3.5, 4. , 4. ], dtype=float32)
    """
    ins, outs = _pixel_offsets(input_pixel_offsets, output_pixel_offsets, input.ndim)
    steps = plan(input.shape, output_sizes, interpolation_mode, ROUND_NEAREST, scales, ins, outs)
    return differentiable(input, steps, interpolation_mode, allow_half_precision_computation)


def _rounding(direction: AxisDirection) -> str:
    return ROUND_CEIL if direction is AxisDirection.INCREASING else ROUND_FLOOR


_ROUNDED = _COORDINATES.format(nn="ceil(x) (RoundingDirection INCREASING) or floor(x) (DECREASING)")
_REMARK_NOTE = ("The page's remark (RESAMPLE1 = this with DECREASING and OutputPixelOffsets an additional -0.5) holds "
                "only with InputPixelOffsets an additional -0.5, and then away from ties (see RESAMPLE1's notes): a "
                "page slip.")


RESAMPLE2 = OpSpec(
    enum_name=PREFIX + "RESAMPLE2",
    summary=RESAMPLE.summary,
    formula="OutputTensorX = (InputTensorX + InputPixelOffset) * Scale + OutputPixelOffset\n" + _ROUNDED,
    tensors=_TENSORS,
    support=_RESAMPLE_SUPPORT,
    params=(_MODE2, _ROUNDING, ParamSpec("Scales", "FLOAT[]", count="DimensionCount", doc=_SCALES_DOC),
            _IN_OFFSETS, _OUT_OFFSETS),
    constraints=_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_linear_growth,
    grad_operator=PREFIX + "RESAMPLE_GRAD1",
    gradient="RESAMPLE_GRAD1's. " + _GRAD_NOTE.replace("RESAMPLE_GRAD's", "RESAMPLE_GRAD1's"),
    notes=" ".join(("RoundingDirection rounds the coordinate x toward increasing (ceil) or decreasing (floor) "
                    "indices; LINEAR ignores it.", _SIZES_NOTE, _REMARK_NOTE, _TYPES_NOTE, _BUDGET_NOTE)),
    extra_checks=(_array_checks("InputTensor", _ARRAYS, "OutputTensor", "output_sizes"),),
    infer_outputs=_resampled,
    silent=(
        SilentChoice(
            "RESAMPLE2/3's RoundingDirection left out",
            "INCREASING (ceil)",
            "A zeroed desc's value and DirectMLX's default.",
            also=("RESAMPLE3",)),
    ),
)


@operator(RESAMPLE2)
def resample2(input, *, interpolation_mode, rounding_direction, scales, input_pixel_offsets, output_pixel_offsets,
              output_sizes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2], [3, 4]], np.float32)  # the RESAMPLE_GRAD1 page's example
        >>> dmljax.resample2(x, interpolation_mode="NEAREST_NEIGHBOR", rounding_direction="DECREASING",
        ...                  scales=(0.5, 1.5))
        Array([[1., 1., 2.]], dtype=float32)
    """
    ins, outs = _pixel_offsets(input_pixel_offsets, output_pixel_offsets, input.ndim)
    steps = plan(input.shape, output_sizes, interpolation_mode, _rounding(rounding_direction), scales, ins, outs)
    return differentiable(input, steps, interpolation_mode, allow_half_precision_computation)


RESAMPLE3 = OpSpec(
    enum_name=PREFIX + "RESAMPLE3",
    summary=("Resamples elements from the source to the destination tensor, with antialising where appropriate, "
             "using the scale factors to compute the destination tensor size."),
    formula="OutputTensorX = (InputTensorX + InputPixelOffset) * Scale + OutputPixelOffset\n" + _ROUNDED + (
        "\nAntialiased (LINEAR, 1 / Scale > 2): Out = sum over the integers i with |i - x| < 1 / Scale of "
        "(1 - |i - x| * Scale) * In[clamp(i)], divided by the sum of those weights."),
    tensors=_TENSORS,
    support=(_resample_table("6.4", "1 to 4", _FLOATS_BYTES),),
    params=(_MODE3, _ROUNDING, ParamSpec("Scales", "FLOAT[]", count="DimensionCount", doc=_SCALES_DOC),
            _IN_OFFSETS, _OUT_OFFSETS, _ANTIALIASED),
    constraints=_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_linear_growth,
    gradient=("Without Antialiased, RESAMPLE_GRAD1's with the same attributes; antialiased, the derivative of the "
              "formula by the same rule (the filter's weights transposed). " + _GRAD_NOTE.split(" (the same")[0] + "."),
    notes=" ".join((
        "Antialiased filters an axis only with LINEAR and 1 / Scale > 2, as the page's conditions say (so not "
        "for 0.5 <= Scale < 1, although the filter's stretch max(1, 1 / Scale) would apply there): the linear "
        "filter stretched to 1 / Scale around the unclamped coordinate x, each weight 1 - |i - x| * Scale "
        "normalized by their sum, positions beyond the edges reading the edge element (the page gives no "
        "formula: ONNX's antialiased linear Resize, whose exclude_outside DirectML does not offer). "
        "Without Antialiased it is RESAMPLE2.", _SIZES_NOTE, _TYPES_NOTE,
        "An antialiased axis adds about 2 / Scale rounding units to the budget.")),
    extra_checks=(_array_checks("InputTensor", _ARRAYS, "OutputTensor", "output_sizes"),),
    infer_outputs=_resampled,
    silent=(
        SilentChoice(
            "RESAMPLE3 Antialiased condition",
            "only LINEAR and only a dimension whose `1 / Scale > 2` (Scale < 0.5) is filtered; 0.5 <= Scale < "
            "1 is not, although the page's stretch factor `max(1, 1 / Scale)` would apply there",
            "The page lists exactly these conditions."),
        SilentChoice(
            "RESAMPLE3 antialiasing filter",
            "the linear (triangle) filter stretched to `1 / Scale` around the unclamped coordinate: each "
            "integer `i` with `|i - x| < 1 / Scale` weighs `1 - |i - x| * Scale`, normalized by their sum; "
            "positions beyond the edges read the edge element",
            "The page gives only the stretch; this is ONNX's antialiased linear Resize with `exclude_outside = "
            "0`, which ONNX Runtime maps onto RESAMPLE3 (DirectML offers no exclude_outside)."),
        SilentChoice(
            "RESAMPLE3's gradient with Antialiased",
            "the derivative of the formula (the filter's weights transposed), computed like RESAMPLE_GRAD1",
            "DirectML has no gradient operator for the antialiased filter; without Antialiased jax.grad is "
            "RESAMPLE_GRAD1's rule."),
    ),
)


@operator(RESAMPLE3)
def resample3(input, *, interpolation_mode, rounding_direction, scales, input_pixel_offsets, output_pixel_offsets,
              antialiased, output_sizes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(8, dtype=np.float32)
        >>> dmljax.resample3(x, interpolation_mode="LINEAR", scales=(0.25,))  # the 2 nearest only
        Array([1.5, 5.5], dtype=float32)
        >>> dmljax.resample3(x, interpolation_mode="LINEAR", scales=(0.25,), antialiased=True)
        Array([1.65625, 5.34375], dtype=float32)
    """
    ins, outs = _pixel_offsets(input_pixel_offsets, output_pixel_offsets, input.ndim)
    steps = plan(input.shape, output_sizes, interpolation_mode, _rounding(rounding_direction), scales, ins, outs,
                 antialiased)
    return differentiable(input, steps, interpolation_mode, allow_half_precision_computation)


# ------------------------------------------------------------------------------ the *_GRAD operators
_GRAD_TENSORS = (TensorSpec("InputGradientTensor", "input"), TensorSpec("OutputGradientTensor", "output", sizes_arg=True))
_GRAD_CONSTRAINTS = (SameDataType(("InputGradientTensor", "OutputGradientTensor")),)


def _grad_table(level: str, dims: str):
    return table(level, InputGradientTensor=(dims, FLOAT32_FLOAT16), OutputGradientTensor=(dims, FLOAT32_FLOAT16))


_GRAD_FORMULA = ("OutputGradient[i] = sum over the output elements o that the forward operator computes from input "
                 "element i of InputGradient[o] * the weight o gives i (per dimension, the dimensions composed)")
_GRAD_NOTES = ("output_gradient_sizes= gives the OutputGradientTensor's Sizes (the forward InputTensor's); the "
               "InputGradientTensor is the forward OutputTensor's gradient, of any Sizes of the same DimensionCount "
               "(the page: typically the forward output's). The sums are FLOAT32 (FLOAT16 rounded once, unless "
               "allow_half_precision_computation); each is a gather of the element's readers (the order of the "
               "additions is not DirectML's to promise, docs/semantics.md#accumulating-operators): a budget of about 2 x Scale + 2 rounding "
               "units of the terms' magnitude per dimension. Its own gradient is the forward operator (a linear map).")

RESAMPLE_GRAD = OpSpec(
    enum_name=PREFIX + "RESAMPLE_GRAD",
    summary="Computes backpropagation gradients for Resample (see DML_RESAMPLE1_OPERATOR_DESC).",
    formula="Computes backpropagation gradients for Resample\n" + _GRAD_FORMULA + " (RESAMPLE1's taps)",
    tensors=_GRAD_TENSORS,
    support=(_grad_table("5.1", "1 to 4"), _grad_table("3.0", "4")),
    params=(_MODE, ParamSpec("Scales", "FLOAT[]", count="DimensionCount", doc=_SCALES_DOC), _IN_OFFSETS, _OUT_OFFSETS),
    constraints=_GRAD_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_gradient_growth,
    gradient="Its transpose: dInputGradient = RESAMPLE1 of dY with the same attributes.",
    notes=" ".join(("RESAMPLE1's transpose, also the rule jax.grad of RESAMPLE and RESAMPLE1 uses.", _GRAD_NOTES,
                    _TIE_NOTE.replace("Nearest neighbor takes", "Nearest neighbor (RESAMPLE1's) takes"))),
    extra_checks=(_array_checks("InputGradientTensor", _ARRAYS, "OutputGradientTensor", "output_gradient_sizes"),),
    infer_outputs=_gradient_out,
    silent=(
        SilentChoice(
            "RESAMPLE_GRAD / RESAMPLE_GRAD1 sizes",
            "`output_gradient_sizes=` required (the forward input's Sizes); the InputGradientTensor may have "
            "any Sizes of the same DimensionCount",
            "The page: \"typically\" the forward output's.",
            also=("RESAMPLE_GRAD1",)),
    ),
)


@operator(RESAMPLE_GRAD)
def resample_grad(input_gradient, *, interpolation_mode, scales, input_pixel_offsets, output_pixel_offsets,
                  output_gradient_sizes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dy = np.array([[4, 5, 6]], np.float32)  # the page's example: RESAMPLE1 by 0.5 and 1.5
        >>> dmljax.resample_grad(dy, interpolation_mode="NEAREST_NEIGHBOR", scales=(0.5, 1.5),
        ...                      output_gradient_sizes=(2, 2))
        Array([[9., 6.],
               [0., 0.]], dtype=float32)
    """
    ins, outs = _pixel_offsets(input_pixel_offsets, output_pixel_offsets, input_gradient.ndim)
    steps = plan(output_gradient_sizes, input_gradient.shape, interpolation_mode, ROUND_NEAREST, scales, ins, outs)
    return gradient_values(input_gradient, steps, allow_half_precision_computation,
                           DataType.from_dtype(input_gradient.dtype))


RESAMPLE_GRAD1 = OpSpec(
    enum_name=PREFIX + "RESAMPLE_GRAD1",
    summary="Computes backpropagation gradients for DML_RESAMPLE2_OPERATOR_DESC.",
    formula="Computes backpropagation gradients for\n" + _GRAD_FORMULA + " (RESAMPLE2's taps)",
    tensors=_GRAD_TENSORS,
    support=(_grad_table("5.1", "1 to 4"),),
    params=(_MODE2, _ROUNDING, ParamSpec("Scales", "FLOAT[]", count="DimensionCount", doc=_SCALES_DOC),
            _IN_OFFSETS, _OUT_OFFSETS),
    constraints=_GRAD_CONSTRAINTS,
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_gradient_growth,
    gradient="Its transpose: dInputGradient = RESAMPLE2 of dY with the same attributes.",
    notes=" ".join(("RESAMPLE2's transpose, also the rule jax.grad of RESAMPLE2 (and of RESAMPLE3 without "
                    "Antialiased) uses.", _GRAD_NOTES, _REMARK_NOTE.replace("RESAMPLE1 = this", "RESAMPLE_GRAD = this"))),
    extra_checks=(_array_checks("InputGradientTensor", _ARRAYS, "OutputGradientTensor", "output_gradient_sizes"),),
    infer_outputs=_gradient_out,
)


@operator(RESAMPLE_GRAD1)
def resample_grad1(input_gradient, *, interpolation_mode, rounding_direction, scales, input_pixel_offsets,
                   output_pixel_offsets, output_gradient_sizes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dy = np.array([[4, 5, 6]], np.float32)  # the page's example: RESAMPLE2 by 0.5 and 1.5
        >>> dmljax.resample_grad1(dy, interpolation_mode="NEAREST_NEIGHBOR", rounding_direction="DECREASING",
        ...                       scales=(0.5, 1.5), output_gradient_sizes=(2, 2))
        Array([[9., 6.],
               [0., 0.]], dtype=float32)
    """
    ins, outs = _pixel_offsets(input_pixel_offsets, output_pixel_offsets, input_gradient.ndim)
    steps = plan(output_gradient_sizes, input_gradient.shape, interpolation_mode, _rounding(rounding_direction),
                 scales, ins, outs)
    return gradient_values(input_gradient, steps, allow_half_precision_computation,
                           DataType.from_dtype(input_gradient.dtype))


# ------------------------------------------------------------------------------ UPSAMPLE_2D
def _upsample_checks(tensors, attrs, level) -> list[Violation]:
    """0 < ScaleSize.Height <= UINT_MAX / InputHeight and 0 < ScaleSize.Width <= UINT_MAX / InputWidth."""
    x, size = tensors.get("InputTensor"), attrs.get("ScaleSize")
    if x is None or size is None or len(x.shape) < 2 or 0 in x.shape:
        return []  # (a zero size is refused with the tensor)
    problems = []
    for member, v, n, what in (("Height", size.height, x.shape[-2], "InputHeight"),
                               ("Width", size.width, x.shape[-1], "InputWidth")):
        bound = (2**32 - 1) // n
        if not 0 < v <= bound:
            problems.append(Violation(f"ScaleSize.{member}", "scale_size", f"is {v}",
                                      f"0 < ScaleSize.{member} <= UINT_MAX / {what} = {bound}"))
    return problems


def _upsampled(tensors, attrs, problems) -> dict:
    """{..., InputHeight * HeightScale, InputWidth * WidthScale}."""
    x, size = tensors["InputTensor"], attrs["ScaleSize"]
    shape = x.shape[:-2] + (x.shape[-2] * size.height, x.shape[-1] * size.width)
    if math.prod(shape) > MAX_ELEMENTS:
        problems.append(Violation("OutputTensor", "", f"would have {math.prod(shape)} elements (Sizes {list(shape)})",
                                  "a DirectML tensor holds at most 2^32 - 1 elements"))
    else:
        scales = (1,) * (len(shape) - 2) + (size.height, size.width)
        problems += _table_problems(x.shape, shape, attrs, "OutputTensor", "", scales)
    return {"OutputTensor": TensorInfo(shape, x.data_type)}


UPSAMPLE_2D = OpSpec(
    enum_name=PREFIX + "UPSAMPLE_2D",
    summary="Upsamples the input image, writing the result into the output tensor.",
    formula=("Upsamples the input image, writing the result into the output tensor.\nRESAMPLE with Scales "
             "{1, 1, [1,] ScaleSize.Height, ScaleSize.Width} at the pixel centers (InputPixelOffset 0.5, "
             "OutputPixelOffset -0.5): the height and width only; "
             + _COORDINATES.format(nn="floor(OutputX / Scale) (the nearest pixel center: no ties for whole scales)")),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(table("1.0", InputTensor=("4 to 5", FLOAT32_FLOAT16), OutputTensor=("4 to 5", FLOAT32_FLOAT16)),),
    params=(ParamSpec("ScaleSize", "DML_SIZE_2D",
                      doc=("The width and height scales (UINTs): a dmljax.Size2D(width, height), {'Width': w, "
                           "'Height': h} or a (width, height) pair; 0 < ScaleSize.Height <= UINT_MAX / InputHeight "
                           "and 0 < ScaleSize.Width <= UINT_MAX / InputWidth.")),
            dataclasses.replace(_MODE, doc=("NEAREST_NEIGHBOR: the input element nearest to the pixel center; LINEAR: "
                                            "bilinear over height and width only, even with 5 dimensions."))),
    constraints=_CONSTRAINTS,
    ulp={F32: 4, F16: 1},
    ulp_half=4,
    gradient=("RESAMPLE_GRAD's rule for the equivalent RESAMPLE (Scales 1 but for the last two, pixel centers): the "
              "sum of dY over the output elements that read an input element, times their weights, in FLOAT32, "
              "rounded once."),
    notes=("The OutputTensor is {N, C, [D,] InputHeight * ScaleSize.Height, InputWidth * ScaleSize.Width}. The page "
           "does not say where the samples lie: dmljax takes the pixel centers, as RESAMPLE (which the page names "
           "the more flexible version of this operator): nearest neighbor repeats each element ScaleSize times; "
           "LINEAR is x = (OutputX + 0.5) / Scale - 0.5 clamped to the input (the DxDispatch model "
           "dml_upsample_2d.json gives 1, 1.25, 1.75, 2 for a row 1, 2). FLOAT16 is computed in FLOAT32 and rounded "
           "once; LINEAR is math (FLOAT32 denormals read as 0), nearest neighbor bit-exact data movement."),
    extra_checks=(_upsample_checks,),
    infer_outputs=_upsampled,
    silent=(
        SilentChoice(
            "InterpolationMode",
            "required",
            "The pages give no default, and neither mode is the obvious one.",
            also=("RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1")),
        SilentChoice(
            "LINEAR at the edges",
            "the coordinate clamped to `[0, InputSize - 1]`, so the edge element repeats (\"the output edges "
            "are clamped\")",
            "The pages' words; the same as clamping each tap's index.",
            also=("RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1")),
        SilentChoice(
            "LINEAR where a weight is exactly 0 (an output on an input element)",
            "that element alone is read: an infinity or NaN next to it does not leak in (no `0 * inf`)",
            "The weighted average of the page has only one term there.",
            also=("RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1")),
        SilentChoice(
            "UPSAMPLE_2D sample positions",
            "the pixel centers, as RESAMPLE with Scales `{1, 1, [1,] Height, Width}`: LINEAR of `[[1, 2], [3, "
            "4]]` x2 is `1, 1.25, 1.75, 2, 1.5, ...` (the DxDispatch model dml_upsample_2d.json)",
            "The page says \"nearest to the corresponding pixel center\" for nearest neighbor and names "
            "RESAMPLE its more flexible version; an older version of the page (and ONNX's Upsample-7, which "
            "WinML mapped onto it) used `floor(input * scale)` sizes only, which whole scales give too."),
        SilentChoice(
            "UPSAMPLE_2D ScaleSize in Python",
            "`dmljax.Size2D(width, height)`, `{\"Width\": w, \"Height\": h}` or a `(width, height)` pair "
            "(DML_SIZE_2D's member order)",
            "DML_SIZE_2D is {Width, Height}; the same struct serves ROI_POOLING's PooledSize."),
        SilentChoice(
            "A dimension's taps beyond 2^24 (outputs x taps per output, e.g. a 1-D resample to more than 8M "
            "elements with LINEAR)",
            "ValidationError naming the dimension",
            "dmljax computes each dimension's gather indices and weights on the host when it traces the "
            "operator; a larger table would take gigabytes there (a dmljax limit, not DirectML's).",
            also=("RESAMPLE", "RESAMPLE1", "RESAMPLE2", "RESAMPLE3", "RESAMPLE_GRAD", "RESAMPLE_GRAD1")),
    ),
)


@operator(UPSAMPLE_2D)
def upsample_2d(input, *, scale_size, interpolation_mode, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[1, 2], [3, 4]]]], np.float32)  # the DxDispatch model dml_upsample_2d.json
        >>> dmljax.upsample_2d(x, scale_size={"Width": 2, "Height": 2}, interpolation_mode="LINEAR")[0, 0]
        Array([[1.  , 1.25, 1.75, 2.  ],
               [1.5 , 1.75, 2.25, 2.5 ],
               [2.5 , 2.75, 3.25, 3.5 ],
               [3.  , 3.25, 3.75, 4.  ]], dtype=float32)
        >>> dmljax.upsample_2d(x, scale_size=(3, 1), interpolation_mode="NEAREST_NEIGHBOR")[0, 0]
        Array([[1., 1., 1., 2., 2., 2.],
               [3., 3., 3., 4., 4., 4.]], dtype=float32)
    """
    n = input.ndim
    scales = (1.0,) * (n - 2) + (float(scale_size.height), float(scale_size.width))
    out = input.shape[:-2] + (input.shape[-2] * scale_size.height, input.shape[-1] * scale_size.width)
    steps = plan(input.shape, out, interpolation_mode, ROUND_NEAREST, scales, (0.5,) * n, (-0.5,) * n)
    return differentiable(input, steps, interpolation_mode, allow_half_precision_computation)
