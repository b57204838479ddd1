"""ROI_POOLING, ROI_ALIGN, ROI_ALIGN1 and ROI_ALIGN_GRAD, the region-of-interest operators of the
pooling family: each page's record, with its formula below it.

ROI_POOLING max-pools integer bins of each region. ROI_ALIGN and ROI_ALIGN1 resample each region
to the OutputTensor's last two sizes, reducing (AVERAGE or MAX) several interpolated samples per
output element; ROI_ALIGN is ROI_ALIGN1 with InputPixelOffset 0.5, OutputPixelOffset -0.5 and
AlignRegionsToCorners FALSE, as ROI_ALIGN1's page says. ``align_grad`` is ROI_ALIGN_GRAD's formula
and the rule jax.grad of ROI_ALIGN and ROI_ALIGN1 uses.

The number of samples per output element depends on the ROI values (DirectML computes it per
region); under jit every shape must be static. dmljax takes MaximumSamplesPerOutput as the static
bound: per region and axis it computes MaximumSamplesPerOutput sample positions and masks off
those past the region's own count, which is exact for every count the descriptor allows. The
bound must be at most MAX_SAMPLES_PER_OUTPUT (a ValidationError says so otherwise). AVERAGE sums
the separable samples axis by axis (work linear in the bound); MAX needs every sample pair (work
quadratic in it)."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT32_FLOAT16, UINT32, UINT64_UINT32, DataType
from dmljax._src.enums import InterpolationMode, ReduceFunction
from dmljax._src.errors import Violation
from dmljax._src.numerics import (
    compute_dtype,
    float32_as,
    flush_denormals,
    is_nan,
    load,
    mark_flushed,
    store,
)
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

__all__ = ["MAX_SAMPLES_PER_OUTPUT", "align_grad"]

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
MAX_SAMPLES_PER_OUTPUT = 64
"""The largest MaximumSamplesPerOutput dmljax accepts: the static bound of the samples per output
element along each axis (MAX reduces bound^2 samples per output element)."""
_MAX_POOLED = 46340  # PooledSize entries: ph * (RegionHeight mod PooledHeight) stays in int32
_COORD_LIMIT = 2.0**24  # ROI_POOLING's rounded coordinates: float32 holds every integer up to here
_INT32_MIN = np.int32(-(2**31))


# ------------------------------------------------------------------------------ shared checks
def _leading_ones(shape, tail: int) -> bool:
    return all(d == 1 for d in shape[:-tail]) if len(shape) > tail else True


def _regions(tensors, roi_name: str, width: int) -> int | None:
    """NumROIs from a ROITensor of Sizes {..., NumROIs, width} with leading 1s, or None."""
    r = tensors.get(roi_name)
    if r is None or len(r.shape) < 2 or r.shape[-1] != width or not _leading_ones(r.shape, 2):
        return None
    return r.shape[-2]


def _roi_violation(tensors, width: int, allowed: str) -> list[Violation]:
    r = tensors.get("ROITensor")
    if r is None or not r.shape or _regions(tensors, "ROITensor", width) is not None:
        return []
    return [Violation("ROITensor", "roi", f"has Sizes {list(r.shape)}", allowed)]


# ================================================================================ ROI_POOLING
def _pooling_checks(tensors, attrs, level) -> list[Violation]:
    """The ROITensor is {1, 1, NumROIs, 5}; PooledSize's Width and Height are each at least 1."""
    problems = _roi_violation(tensors, 5, "{1, 1, NumROIs, 5}: [BatchID, x1, y1, x2, y2] per region")
    size = attrs.get("PooledSize")
    if size is not None and not all(1 <= v <= _MAX_POOLED for v in size):
        problems.append(Violation("PooledSize", "pooled_size", f"is {size}",
                                  f"Width and Height from 1 to {_MAX_POOLED} (dmljax's bound: the bins' "
                                  "integer arithmetic stays in INT32)"))
    return problems


def _pooled(tensors, attrs, problems) -> dict:
    x = tensors["InputTensor"]
    size = attrs["PooledSize"]
    return {"OutputTensor": TensorInfo((_regions(tensors, "ROITensor", 5), x.shape[1], size.height, size.width),
                                       x.data_type)}


ROI_POOLING = OpSpec(
    enum_name=PREFIX + "ROI_POOLING",
    summary=("Performs a MaxPool function across the input tensor (according to regions of interest, or "
             "ROIs)."),
    formula=("x1 = round(RoiX1 * SpatialScale)\nx2 = round(RoiX2 * SpatialScale)\n"
             "y1 = round(RoiY1 * SpatialScale)\ny2 = round(RoiY2 * SpatialScale)\n\n"
             "RegionHeight = y2 - y1 + 1\nRegionWidth = x2 - x1 + 1\n\n"
             "StartY = (OutputIndices.Y * RegionHeight) / PooledSize.Height + y1\n"
             "StartX = (OutputIndices.X * RegionWidth) / PooledSize.Width + x1\n\n"
             "EndY = ((OutputIndices.Y + 1) * RegionHeight + PooledSize.Height - 1) / PooledSize.Height + y1\n"
             "EndX = ((OutputIndices.X + 1) * RegionWidth + PooledSize.Width - 1) / PooledSize.Width + x1\n"
             "(OutputTensor[r, c, Y, X] = max of InputTensor[BatchID, c, StartY..EndY-1, StartX..EndX-1], "
             "Start and End clamped to the input)"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("ROITensor", "input"),
             TensorSpec("OutputTensor", "output")),
    support=(table("1.0", InputTensor=("4", FLOAT32_FLOAT16), ROITensor=("4", FLOAT32_FLOAT16),
                   OutputTensor=("4", FLOAT32_FLOAT16)),),
    params=(
        ParamSpec("SpatialScale", "FLOAT", default=1.0,
                  doc="Multiplies the ROI coordinates into the input's scale (default 1.0)."),
        ParamSpec("PooledSize", "DML_SIZE_2D",
                  doc=("The DML_SIZE_2D of each region's output, the OutputTensor's last two Sizes: a "
                       "dmljax.Size2D(width, height), a (width, height) pair or {'Width': w, 'Height': h}.")),
    ),
    constraints=(SameDataType(("InputTensor", "OutputTensor", "ROITensor")),),
    math=False,
    gradient=("InputTensor: dY to the first maximum of each bin (row-major: the lowest y, then the lowest "
              "x; NaN never selected), summed where bins share an element, in FLOAT32 for FLOAT16; nothing "
              "from an empty bin. ROITensor: 0 (its coordinates are rounded: the output is piecewise "
              "constant in them)."),
    notes=("ROITensor is {1, 1, NumROIs, 5}, each row [BatchID, x1, y1, x2, y2] in the tensors' DataType; "
           "OutputTensor is {NumROIs, ChannelCount, PooledSize.Height, PooledSize.Width}. round() is C's, "
           "halves away from zero, on the FLOAT32 product; the divisions are C's integer divisions "
           "(truncation toward zero); a bin is [Start, End) after Start and End are clamped to [0, size]. "
           "Where the page is silent: an empty bin (End <= Start after clamping) gives 0, as Caffe's and "
           "ONNX's MaxRoiPool; a BatchID is truncated toward zero and one outside [0, BatchCount) (or NaN) "
           "reads nothing: every bin of that region is 0; the maximum is maxNum's (NaN skipped, a bin of "
           "NaN only gives NaN, +0 above -0), the element's own value (exact; FLOAT32 denormals read as 0). "
           "Rounded coordinates are clamped to +-2^24 (float32's exact integers) and PooledSize entries "
           "to 46340, so the integer bin arithmetic is exact in INT32."),
    extra_checks=(_pooling_checks,),
    infer_outputs=_pooled,
    silent=(
        SilentChoice(
            "ROI_POOLING's round() and divisions",
            "C's: round halves away from zero (on the FLOAT32 product), integer division truncates toward "
            "zero; a bin is [Start, End) after clamping both to [0, size]",
            "The page's pseudo-code is C-like; Caffe's and ONNX's MaxRoiPool do the same."),
        SilentChoice(
            "ROI_POOLING empty bin, BatchID outside the batch",
            "0 (BatchID truncated toward zero first; NaN is outside)",
            "Caffe's and ONNX's MaxRoiPool give 0 for an empty bin; a region reading nothing is all empty "
            "bins."),
        SilentChoice(
            "ROI_POOLING maximum and gradient",
            "maxNum (NaN skipped, all NaN gives NaN, +0 above -0), the element's own value; dY to the first "
            "maximum in row-major order (lowest y, then x), summed where bins overlap (FLOAT16 in FLOAT32); "
            "the ROI gets 0",
            "[Minimum and maximum](semantics.md#minimum-and-maximum), [Gradients](semantics.md#gradients) and "
            "[Accumulating operators](semantics.md#accumulating-operators). The coordinates are rounded: the "
            "output is piecewise constant in them."),
        SilentChoice(
            "ROI_POOLING bounds of the integer arithmetic",
            "rounded coordinates clamped to ±2^24; PooledSize entries at most 46340 (ValidationError above)",
            "float32 holds every integer up to 2^24; the bins' INT32 arithmetic is then exact."),
    ),
)


def _order_key(v):
    """A FLOAT32 value's bits as an int32 in the value's order (-0 just below +0)."""
    bits = lax.bitcast_convert_type(v.astype(np.float32), np.int32)
    return bits ^ (lax.shift_right_arithmetic(bits, np.int32(31)) & np.int32(0x7FFFFFFF))


def _first(hit, axis: int = -1):
    """True at the first True along ``axis`` (and nowhere if none is)."""
    index = jnp.argmax(hit, axis=axis, keepdims=True).astype(np.int32)
    return hit & (lax.broadcasted_iota(np.int32, hit.shape, hit.ndim + axis if axis < 0 else axis) == index)


def _first_max(key, cand, axis: int = -1):
    """The first maximum of the ``cand`` entries of ``key`` (int32 order keys) along ``axis``:
    (a mask true there, the maximum key, whether any entry is a candidate)."""
    masked = jnp.where(cand, key, _INT32_MIN)
    best = jnp.max(masked, axis=axis, keepdims=True)
    return _first(cand & (masked == best), axis), jnp.squeeze(best, axis), jnp.any(cand, axis=axis)


def _pick(mask, v, axis: int = -1):
    """The one entry of ``v`` where ``mask`` is true along ``axis``, exactly (the others are -0, which
    an addition leaves unchanged: x + -0 = x, also for +0 and -0), differentiably (dY goes there)."""
    return jnp.sum(jnp.where(mask, v, jnp.asarray(-0.0, v.dtype)), axis=axis)


def _maxnum_keys(v):
    """Order keys of ``v`` (FLOAT32 denormals as zero, -0 below +0) and which entries are numbers."""
    return _order_key(flush_denormals(v.astype(np.float32))), ~is_nan(v)


def _round_away(v):
    """C's round(): halves away from zero, exactly (no v + 0.5 rounding)."""
    t = jnp.trunc(v)
    return t + jnp.where(jnp.abs(v - t) >= np.float32(0.5), jnp.sign(v), jnp.zeros_like(v))


def _trunc_div(m, region, c, p):
    """C's (m * region + c) / p (truncation toward zero) in INT32 without overflow, for m in
    [0, p], c in [0, p), |region| <= 2^25 + 1 and p <= 46340: with region = q p + r, 0 <= r < p,
    it is m q + (m r + c) / p, the last term's numerator in [0, p^2 + p)."""
    q = lax.div(region - jnp.where(region < 0, p - 1, 0), p)  # floor(region / p)
    rest = m * (region - q * p) + c
    floor = m * q + lax.div(rest, p)
    return floor + ((floor < 0) & (lax.rem(rest, p) != 0)).astype(np.int32)


def _bins(coords, pooled, extent):
    """[Start, End) of each bin along y and x, clamped to the input: two (R, pooled) pairs. The two
    axes are computed as one array (bins past an axis's count are dropped after), so that op by op
    (jax.disable_jit) the formula compiles each step once."""
    p = np.asarray(pooled, np.int32)[None, :, None]  # (1, 2, 1): PooledSize.Height, .Width
    a, b = coords[:, (1, 0)], coords[:, (3, 2)]  # (R, 2): y1 x1, y2 x2
    region = (b - a + 1)[:, :, None]
    idx = lax.broadcasted_iota(np.int32, (1, 2, max(pooled)), 2)
    start = _trunc_div(idx, region, 0, p) + a[:, :, None]
    end = _trunc_div(idx + 1, region, p - 1, p) + a[:, :, None]
    top = np.asarray(extent, np.int32)[None, :, None]
    start, end = jnp.clip(start, 0, top), jnp.clip(end, 0, top)
    return [(start[:, i, :n], end[:, i, :n]) for i, n in enumerate(pooled)]


def _inside(start, end, extent: int):
    """(R, bins, extent): the positions in [start, end)."""
    i = lax.iota(np.int32, extent)
    return (i >= start[..., None]) & (i < end[..., None])


@operator(ROI_POOLING)
def roi_pooling(input, roi, *, spatial_scale, pooled_size):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> rois = np.array([[[[0, 0, 0, 3, 3], [0, 1, 1, 2, 2]]]], np.float32)
        >>> dmljax.roi_pooling(x, rois, pooled_size=dmljax.Size2D(width=2, height=2))[:, 0]
        Array([[[ 5.,  7.],
                [13., 15.]],
        <BLANKLINE>
               [[ 5.,  6.],
                [ 9., 10.]]], dtype=float32)
    """
    x = load(input)  # FLOAT16 widened exactly; FLOAT32 denormals read as zero
    n, _, height, width = x.shape
    ph, pw = pooled_size.height, pooled_size.width
    r = load(roi).astype(np.float32).reshape(-1, 5)
    bid = jnp.trunc(r[:, 0])
    ok = (bid >= 0) & (bid < n)
    coords = jnp.clip(_round_away(r[:, 1:] * np.float32(spatial_scale)), -_COORD_LIMIT, _COORD_LIMIT)
    coords = jnp.where(jnp.isnan(coords), 0, coords).astype(np.int32)
    (hs, he), (ws, we) = _bins(coords, (ph, pw), (height, width))
    img = jnp.take(x, jnp.where(ok, bid, 0).astype(np.int32), axis=0, mode="clip")  # (R, C, H, W)
    key, num = _maxnum_keys(img)
    # each row's first maximum inside each bin's columns, then the first row holding the bin's maximum
    cand = num[:, :, :, None, :] & _inside(ws, we, width)[:, None, None]  # (R, C, H, PW, W)
    first, row_key, row_any = _first_max(key[:, :, :, None, :], cand)
    row_value = _pick(first, img[:, :, :, None, :])  # (R, C, H, PW)
    t = lambda v: jnp.swapaxes(v, 2, 3)[:, :, None]
    cand = t(row_any) & _inside(hs, he, height)[:, None, :, None, :]  # (R, C, PH, PW, H)
    first, _, any_num = _first_max(t(row_key), cand)
    value = _pick(first, t(row_value))  # (R, C, PH, PW)
    nonempty = (ok[:, None, None] & (he > hs)[:, :, None] & (we > ws)[:, None, :])[:, None]
    out = jnp.where(any_num & nonempty, value, jnp.where(nonempty, np.float32(np.nan), np.float32(0)))
    return store(out, DataType.from_dtype(input.dtype))


# ================================================================================ ROI_ALIGN*
@dataclasses.dataclass(frozen=True)
class _Align:
    """The static settings of one ROI_ALIGN / ROI_ALIGN1 / ROI_ALIGN_GRAD call."""

    reduction: ReduceFunction
    nearest: bool
    scale_x: float
    scale_y: float
    input_offset: float
    output_offset: float
    out_of_bounds: float
    lo: int
    hi: int
    corners: bool
    out_h: int
    out_w: int


@dataclasses.dataclass(frozen=True)
class _Axis:
    """One axis's samples for every region: (R, out, K) positions, masks and taps."""

    pos: jnp.ndarray  # the input coordinate of each sample (float32)
    count: jnp.ndarray  # (R,) samples per output element along the axis (int32)
    valid: jnp.ndarray  # sample k < count
    inside: jnp.ndarray  # the coordinate lies on the input: in [-0.5, size - 0.5]
    index: jnp.ndarray  # (R, out, K, taps) element indices, clamped to [0, size - 1]
    weight: jnp.ndarray  # (R, out, K, taps) interpolation weights (float32)


def _geometry(rois, height: int, width: int, s: _Align) -> tuple[_Axis, _Axis]:
    """ROI_ALIGN1's page, along y and x: the samples of each output element and their taps, for
    every region (ROIs (R, 4) FLOAT32: x1, y1, x2, y2).

    inputSamplesPerOutputSample = clamp(ceil(|scaledRegionSize| / outputSize), Minimum, Maximum)
    outputSampleToInputScale = scaledRegionSize / (outputSize * samples)      [- 1 with corners]
    input = (sample - OutputPixelOffset) * outputSampleToInputScale + scaledRegionStart - InputPixelOffset
    for sample = outputIndex * samples + k, k in [0, samples): all in FLOAT32, in the page's order.
    The two axes are one array (axis 1: y, x; output indices past an axis's size dropped after), so
    that op by op (jax.disable_jit) each step compiles once."""
    scale = np.asarray([s.scale_y, s.scale_x], np.float32)
    start, end = rois[:, (1, 0)] * scale, rois[:, (3, 2)] * scale  # (R, 2)
    out = np.asarray([s.out_h, s.out_w], np.int32)
    extent = np.asarray([height, width], np.float32)[None, :, None, None]
    size = end - start
    ratio = jnp.abs(size) / out.astype(np.float32)
    n = jnp.clip(jnp.ceil(ratio), np.float32(s.lo), np.float32(s.hi))
    n = jnp.where(jnp.isnan(ratio), np.float32(s.lo), n).astype(np.int32)  # (R, 2)
    total = n * out
    grid = (1, 2, max(s.out_h, s.out_w), s.hi)
    k = lax.broadcasted_iota(np.int32, grid, 3)
    t = (lax.broadcasted_iota(np.int32, grid, 2) * n[:, :, None, None] + k).astype(np.float32)
    t = t - np.float32(s.output_offset)
    if s.corners:  # the first sample on the region's start, the last on its end (one sample: its centre)
        step = size / jnp.maximum(total - 1, 1).astype(np.float32)
        centre = start + size * np.float32(0.5)
        pos = jnp.where((total == 1)[:, :, None, None], centre[:, :, None, None],
                        t * step[:, :, None, None] + start[:, :, None, None])
    else:
        step = size / total.astype(np.float32)
        pos = t * step[:, :, None, None] + start[:, :, None, None]
    pos = pos - np.float32(s.input_offset)  # (R, 2, out, K)
    inside = ~((pos < np.float32(-0.5)) | (pos > extent - np.float32(0.5)))  # NaN stays "inside": it propagates
    if s.nearest:  # the element nearest the coordinate: ties to even (0.5 -> 0, 2.5 -> 2, as the GRAD page's example)
        index = jnp.round(pos)[..., None]
        weight = jnp.where(jnp.isnan(pos), np.float32(np.nan), np.float32(1))[..., None]
    else:  # the GRAD page's taps: floor and ceil, weighted by the fraction
        lower = jnp.floor(pos)
        frac = pos - lower
        index = jnp.stack([lower, jnp.ceil(pos)], axis=-1)
        weight = jnp.stack([1 - frac, frac], axis=-1)
    index = jnp.where(jnp.isnan(index), 0, jnp.clip(index, 0, extent[..., None] - 1)).astype(np.int32)
    valid = k < n[:, :, None, None]
    return tuple(_Axis(pos[:, i, :o], n[:, i], valid[:, i, :o], inside[:, i, :o], index[:, i, :o], weight[:, i, :o])
                 for i, o in enumerate((s.out_h, s.out_w)))


def _batch(batch, count: int):
    """Batch indices as int32 (those outside [0, BatchCount) replaced by 0) and which are valid."""
    b = batch.reshape(-1)
    ok = b < np.asarray(count, b.dtype)
    return jnp.where(ok, b, 0).astype(np.int32), ok


def _rows(x, b, ys: _Axis, ct):
    """The input rows each y sample reads, per tap: (R, out_h, K, taps, C, W)."""
    return x[b[:, None, None, None], :, ys.index, :], ys.weight.astype(ct)[..., None, None]


def _columns(t, xs: _Axis):
    """``t[r, ..., W]`` at each x sample's taps: (R, ..., out_w, K, taps)."""
    return jax.vmap(lambda v, j: v[..., j])(t, xs.index)


def _average(x, rois, b, ok, s: _Align, ct):
    """AVERAGE: the mean of the valid samples, a sample off the input reading OutOfBoundsInputValue.
    Bilinear (or nearest) taps are separable, so the y samples are summed first, then the x ones."""
    _, _, height, width = x.shape
    ys, xs = _geometry(rois, height, width, s)
    rows, wy = _rows(x, b, ys, ct)
    use_y = ys.valid & ys.inside & ok[:, None, None]  # (R, out_h, K)
    ty = jnp.where(use_y[..., None, None, None], wy * rows, 0).sum(axis=(2, 3))  # (R, out_h, C, W)
    cols = _columns(ty, xs)  # (R, out_h, C, out_w, K, taps)
    use_x = xs.valid & xs.inside  # (R, out_w, K)
    wx = xs.weight.astype(ct)[:, None, None]
    total = jnp.where(use_x[:, None, None, :, :, None], wx * cols, 0).sum(axis=(4, 5))  # (R, out_h, C, out_w)
    total = jnp.swapaxes(total, 1, 2)  # (R, C, out_h, out_w)
    count = (ys.count * xs.count)[:, None, None]
    outside = count - use_y.sum(-1, dtype=np.int32)[:, :, None] * use_x.sum(-1, dtype=np.int32)[:, None, :]  # (R, out_h, out_w)
    if s.out_of_bounds != 0:
        oob = float32_as(s.out_of_bounds, ct)
        total = total + jnp.where(outside > 0, oob * outside.astype(ct), 0)[:, None]
    return total / count.astype(ct)[:, None]


def _samples(x, rois, b, ok, s: _Align, ct):
    """Every sample's value, (R, C, out_h, out_w, Kx * Ky) in the page's loop order (sampleX outer,
    sampleY inner), and which are valid."""
    _, _, height, width = x.shape
    ys, xs = _geometry(rois, height, width, s)
    rows, wy = _rows(x, b, ys, ct)
    ry = (wy * rows).sum(axis=3)  # (R, out_h, Ky, C, W)
    v = (xs.weight.astype(ct)[:, None, None, None] * _columns(ry, xs)).sum(-1)  # (R, out_h, Ky, C, out_w, Kx)
    inside = (ys.inside[:, :, :, None, None, None] & xs.inside[:, None, None, None]
              & ok[:, None, None, None, None, None])
    v = jnp.where(inside, v, float32_as(s.out_of_bounds, ct))
    valid = ys.valid[:, :, :, None, None, None] & xs.valid[:, None, None, None]
    order = (0, 3, 1, 4, 5, 2)  # (R, C, out_h, out_w, Kx, Ky)
    shape = v.shape[:1] + v.shape[3:4] + v.shape[1:2] + v.shape[4:5] + (-1,)
    valid = jnp.broadcast_to(valid, v.shape)
    return v.transpose(order).reshape(shape), valid.transpose(order).reshape(shape)


def _chosen(v, valid):
    """MAX's sample per output element, as a mask along the last axis: the first largest valid number
    (maxNum: NaN skipped), and whether there is one."""
    key, num = _maxnum_keys(lax.stop_gradient(v))
    mask, _, found = _first_max(key, valid & num)
    return mask, found


def _maximum(x, rois, b, ok, s: _Align, ct, chosen=None):
    """MAX: the first largest valid sample (all NaN gives NaN). With ``chosen`` (the samples the
    forward pass chose) that sample's value: what the gradient follows."""
    v, valid = _samples(x, rois, b, ok, s, ct)
    if chosen is not None:
        return _pick(chosen, v)
    mask, found = _chosen(v, valid)
    return jnp.where(found, _pick(mask, v), np.asarray(np.nan, ct))


def align_grad(x, dy, rois, batch, s: _Align, half: bool, input_sizes):
    """ROI_ALIGN_GRAD's formula: (OutputGradientTensor, OutputROIGradientTensor) in the compute type,
    the transpose of the forward samples applied to dY, and the derivative of the forward output
    with respect to the four coordinates of each region (through every sample's position) applied
    to dY. ``x`` may be None (AVERAGE): the ROI gradient, which needs the input's values, is NaN."""
    ct = compute_dtype(DataType.from_dtype(dy.dtype), half)
    values = load(x, half) if x is not None else jnp.zeros(input_sizes, ct)
    r = load(rois).astype(np.float32).reshape(-1, 4)
    b, ok = _batch(batch, input_sizes[0])
    g = load(dy, half)
    if s.reduction is ReduceFunction.MAX:
        chosen = _chosen(*_samples(lax.stop_gradient(values), r, b, ok, s, ct))[0]
        f = lambda v, q: _maximum(v, q, b, ok, s, ct, chosen)
    else:
        f = lambda v, q: _average(v, q, b, ok, s, ct)
    _, vjp = jax.vjp(f, values, r)
    dx, droi = vjp(g)
    if x is None:
        droi = jnp.full_like(droi, np.nan)
    return dx, droi.reshape(rois.shape)


def _align(input, roi, batch_indices, s: _Align, half: bool):
    """ROI_ALIGN / ROI_ALIGN1's output, rounded once, with align_grad as its gradient rule."""
    dt = DataType.from_dtype(input.dtype)
    ct = compute_dtype(dt, half)

    def forward(x, rois, batch):
        b, ok = _batch(batch, x.shape[0])
        reduce = _average if s.reduction is ReduceFunction.AVERAGE else _maximum
        return store(reduce(load(x, half), load(rois).astype(np.float32).reshape(-1, 4), b, ok, s, ct), dt)

    def run(x, rois, batch):
        return forward(x, rois, batch)

    def run_fwd(x, rois, batch):
        return forward(x, rois, batch), (x, rois, batch)

    def run_bwd(res, dy):
        x, rois, batch = res
        dx, droi = align_grad(x, dy, rois, batch, s, half, x.shape)
        return store(dx, dt), store(droi, DataType.from_dtype(rois.dtype)), None

    run = backward_rule(run, run_fwd, run_bwd)
    out = run(input, roi, batch_indices)
    if dt is F32:
        mark_flushed(out)
    return out


# ------------------------------------------------------------------------------ validation
def _sample_checks(attrs) -> list[Violation]:
    """ReductionFunction AVERAGE or MAX; 1 <= MinimumSamplesPerOutput <= MaximumSamplesPerOutput
    <= MAX_SAMPLES_PER_OUTPUT (the static bound)."""
    problems = []
    f = attrs.get("ReductionFunction")
    if f is not None and f not in (ReduceFunction.AVERAGE, ReduceFunction.MAX):
        problems.append(Violation("ReductionFunction", "reduction_function", f"is {f.dml_name}",
                                  "DML_REDUCE_FUNCTION_AVERAGE or DML_REDUCE_FUNCTION_MAX (the page's two)"))
    lo, hi = attrs.get("MinimumSamplesPerOutput"), attrs.get("MaximumSamplesPerOutput")
    if lo is not None and lo < 1:
        problems.append(Violation(
            "MinimumSamplesPerOutput", "minimum_samples_per_output", "is 0",
            "at least 1 (an empty region still samples its one point, as the page says)"))
    if hi is not None and hi > MAX_SAMPLES_PER_OUTPUT:
        problems.append(Violation(
            "MaximumSamplesPerOutput", "maximum_samples_per_output", f"is {hi}",
            f"at most {MAX_SAMPLES_PER_OUTPUT}: the samples per output element depend on the ROI values, so "
            "dmljax computes MaximumSamplesPerOutput of them per axis (a static bound under jit)",
            "pass the largest count your regions need, ceil(largest scaled region size / output size)"))
    if lo is not None and hi is not None and 1 <= lo and lo > hi:
        problems.append(Violation("MinimumSamplesPerOutput", "minimum_samples_per_output",
                                  f"is {lo}, above MaximumSamplesPerOutput ({hi})",
                                  "MinimumSamplesPerOutput <= MaximumSamplesPerOutput"))
    return problems


def _indices_violation(tensors, regions: int | None) -> list[Violation]:
    """BatchIndicesTensor is {NumROIs} with up to three leading 1s."""
    bi = tensors.get("BatchIndicesTensor")
    if bi is None or not bi.shape or regions is None:
        return []
    if bi.shape[-1] == regions and _leading_ones(bi.shape, 1):
        return []
    return [Violation("BatchIndicesTensor", "batch_indices", f"has Sizes {list(bi.shape)}",
                      f"{{NumROIs}} = [{regions}] with up to three leading 1s, one index per region")]


_ROI_SIZES = "{NumROIs, 4}, {1, NumROIs, 4} or {1, 1, NumROIs, 4}: [x1, y1, x2, y2] per region"


def _shared_checks(tensors, attrs) -> tuple[list[Violation], int | None]:
    """The ROITensor's and BatchIndicesTensor's Sizes and the sample counts; NumROIs (or None)."""
    regions = _regions(tensors, "ROITensor", 4)
    return _roi_violation(tensors, 4, _ROI_SIZES) + _sample_checks(attrs) + _indices_violation(tensors, regions), regions


def _align_checks(tensors, attrs, level) -> list[Violation]:
    """``_shared_checks``; the OutputTensor is {NumROIs, ChannelCount, OutputHeight, OutputWidth}."""
    problems, regions = _shared_checks(tensors, attrs)
    x, out = tensors.get("InputTensor"), tensors.get("OutputTensor")
    shapes = x is not None and out is not None and regions is not None and len(x.shape) == len(out.shape) == 4
    if shapes and out.shape[:2] != (regions, x.shape[1]):
        problems.append(Violation("OutputTensor", "output_sizes", f"has Sizes {list(out.shape)}",
                                  f"{{NumROIs, ChannelCount, OutputHeight, OutputWidth}}: [{regions}, {x.shape[1]}, "
                                  "OutputHeight, OutputWidth]"))
    return problems


def _align_params(one: bool, oob: bool = True) -> tuple[ParamSpec, ...]:
    params = [
        ParamSpec("ReductionFunction", "DML_REDUCE_FUNCTION", enum=ReduceFunction,
                  doc="AVERAGE or MAX: how the samples of an output element are reduced (required)."),
        ParamSpec("InterpolationMode", "DML_INTERPOLATION_MODE", enum=InterpolationMode,
                  doc="NEAREST_NEIGHBOR or LINEAR (bilinear): how a sample reads the input (required)."),
        ParamSpec("SpatialScaleX", "FLOAT", default=1.0, doc="Multiplies the ROI's x coordinates (default 1.0)."),
        ParamSpec("SpatialScaleY", "FLOAT", default=1.0, doc="Multiplies the ROI's y coordinates (default 1.0)."),
    ]
    if one:
        params += [
            ParamSpec("InputPixelOffset", "FLOAT", default=0.5,
                      doc="The offset from (0, 0) of the input coordinates to the top-left pixel centre "
                          "(default 0.5: ROI_ALIGN's behaviour)."),
            ParamSpec("OutputPixelOffset", "FLOAT", default=-0.5,
                      doc="The offset from the top-left pixel centre to (0, 0) of the output coordinates "
                          "(default -0.5: ROI_ALIGN's behaviour)."),
        ]
    if oob:
        params.append(ParamSpec("OutOfBoundsInputValue", "FLOAT", default=0.0,
                                doc="What a sample off the input reads (default 0.0)."))
    params += [
        ParamSpec("MinimumSamplesPerOutput", "UINT", default=1,
                  doc="The fewest samples per output element along each axis (default 1; at least 1)."),
        ParamSpec("MaximumSamplesPerOutput", "UINT", default=1,
                  doc=f"The most samples per output element along each axis (default 1; at most "
                      f"{MAX_SAMPLES_PER_OUTPUT}, dmljax's static bound)."),
    ]
    if one:
        params.append(ParamSpec("AlignRegionsToCorners", "BOOL", default=False,
                                doc="Stretch the samples to the region's very corners (default False: "
                                    "ROI_ALIGN's behaviour)."))
    return tuple(params)


def _align_tables(first: str):
    return (
        table("5.0", InputTensor=("4", FLOAT32_FLOAT16), ROITensor=("2 to 4", FLOAT32_FLOAT16),
              BatchIndicesTensor=("1 to 4", UINT64_UINT32), OutputTensor=("4", FLOAT32_FLOAT16)),
        table(first, InputTensor=("4", FLOAT32_FLOAT16), ROITensor=("2 to 4", FLOAT32_FLOAT16),
              BatchIndicesTensor=("1 to 4", UINT32), OutputTensor=("4", FLOAT32_FLOAT16)),
    )


def _growth(sizes, attrs) -> dict:
    """Each output element averages up to Maximum^2 samples of 2 x 2 taps: 4 Maximum^2 rounding
    units of the terms' magnitude in FLOAT32 (docs/semantics.md#accumulating-operators); FLOAT16 computed in FLOAT32 adds a
    fraction of a FLOAT16 ULP."""
    hi = attrs.get("MaximumSamplesPerOutput")
    k = hi if isinstance(hi, int) and 0 < hi <= MAX_SAMPLES_PER_OUTPUT else 1
    terms = 4 * k * k
    return {F32: terms, F16: math.ceil(terms / 8192), "half": terms}


_SAMPLING = (
    "AVERAGE divides the sum of the samples by their count. MaximumSamplesPerOutput is the static bound of the "
    f"samples (at most {MAX_SAMPLES_PER_OUTPUT}); MinimumSamplesPerOutput is at least 1. FLOAT16 is computed in "
    "FLOAT32 and rounded once. output_sizes gives the OutputTensor's Sizes {NumROIs, ChannelCount, OutputHeight, "
    "OutputWidth}, as the desc's OutputTensor does.")

_ALIGN_GRADIENT = (
    "ROI_ALIGN_GRAD's rule (align_grad): InputTensor: each sample's share of dY (1 / samples for "
    "AVERAGE, all of it to the chosen sample for MAX) through its interpolation weights, summed in "
    "FLOAT32; ROITensor: the derivative of the output with respect to [x1, y1, x2, y2] through every "
    "sample's coordinate (0 for NEAREST_NEIGHBOR, off the input and at integer coordinates, where the "
    "floor and ceil taps meet); BatchIndicesTensor: none.")

_ALIGN_TENSORS = (TensorSpec("InputTensor", "input"), TensorSpec("ROITensor", "input"),
                  TensorSpec("BatchIndicesTensor", "input"), TensorSpec("OutputTensor", "output", sizes_arg=True))
_ALIGN_ACCURACY_AND_GRADIENT = dict(
    constraints=(SameDataType(("InputTensor", "OutputTensor", "ROITensor")),),
    ulp={F32: 8, F16: 1},
    ulp_half=8,
    ulp_growth=_growth,
    grad_operator=PREFIX + "ROI_ALIGN_GRAD",
    gradient=_ALIGN_GRADIENT,
)
"""What ROI_ALIGN and ROI_ALIGN1 declare alike: the constraint, the budgets, the gradient rule."""

ROI_ALIGN = OpSpec(
    enum_name=PREFIX + "ROI_ALIGN",
    summary=("Performs an ROI align operation, as described in the Mask R-CNN paper. In summary, the "
             "operation extracts crops from the input image tensor and resizes them to a common output size "
             "specified by the last 2 dimensions of OutputTensor using the specified InterpolationMode."),
    formula=("In summary, the operation extracts crops from the input image tensor and resizes them to a common "
             "output size specified by the last 2 dimensions of *OutputTensor* using the specified "
             "*InterpolationMode*.\n(ROI_ALIGN1's formula with InputPixelOffset 0.5, OutputPixelOffset -0.5 "
             "and AlignRegionsToCorners FALSE, which its page calls ROI_ALIGN's behaviour)"),
    tensors=_ALIGN_TENSORS,
    support=_align_tables("3.0"),
    params=_align_params(False),
    **_ALIGN_ACCURACY_AND_GRADIENT,
    notes="ROI_ALIGN1 with InputPixelOffset 0.5, OutputPixelOffset -0.5, AlignRegionsToCorners FALSE. " + _SAMPLING,
    extra_checks=(_align_checks,),
    silent=(
        SilentChoice(
            "ROI_ALIGN/ROI_ALIGN1 samples per output element (the page: `clamp(scaledRegionSize / outputSize, "
            "Minimum, Maximum)`)",
            "`clamp(ceil(|scaledRegionSize| / outputSize), MinimumSamplesPerOutput, MaximumSamplesPerOutput)` "
            "per region and axis",
            "A count must be an integer: the ceiling is ONNX's and Caffe2's adaptive count, which ONNX "
            "Runtime's DirectML provider maps to Minimum 1 / Maximum UINT32_MAX; the magnitude makes an "
            "inverted region the exact mirror of the upright one, as the page promises.",
            also=("ROI_ALIGN1", "ROI_ALIGN_GRAD")),
        SilentChoice(
            "ROI_ALIGN/ROI_ALIGN1 under jit (the count depends on the ROI values)",
            "MaximumSamplesPerOutput is the static bound: that many sample positions per axis, those past the "
            "region's count masked off (exact for every count the descriptor allows); MaximumSamplesPerOutput "
            "above 64 is a ValidationError naming the bound, with the tip to pass the largest count the "
            "regions need",
            "Shapes must be static under jit. AVERAGE is summed axis by axis (work linear in the bound), MAX "
            "compares every sample pair (quadratic). ONNX Runtime's \"adaptive\" UINT32_MAX has no static "
            "equivalent.",
            also=("ROI_ALIGN1",)),
        SilentChoice(
            "MinimumSamplesPerOutput 0, or above MaximumSamplesPerOutput",
            "ValidationError",
            "\"Regions can be empty, meaning that all output pixels come from the single input coordinate\": "
            "at least one sample.",
            also=("ROI_ALIGN1",)),
        SilentChoice(
            "ROI_ALIGN coordinate arithmetic",
            "FLOAT32 in the page's order (scaled = ROI * SpatialScale, size = scaled2 - scaled1, count, scale "
            "= size / (outputSize * count), input = (sample - OutputPixelOffset) * scale + scaled1 - "
            "InputPixelOffset); FLOAT16 ROIs widened; the interpolation and reduction in FLOAT32 (FLOAT16 "
            "rounded once)",
            "The members are C floats; DirectML's shaders compute coordinates in float32. The one multiply-add "
            "may be fused or not ([Fused multiply-add](semantics.md#fused-multiply-add)): the reference's "
            "coordinate term in the budget covers it.",
            also=("ROI_ALIGN1", "ROI_ALIGN_GRAD")),
        SilentChoice(
            "A ROI_ALIGN sample off the input (OutOfBoundsInputValue)",
            "a sample whose coordinate is below -0.5 or above size - 0.5 (the outer edges of the outermost "
            "pixels) reads OutOfBoundsInputValue, whole; inside, LINEAR reads the floor and ceil elements "
            "clamped to the edge",
            "The page: \"the value to read ... when the ROIs are outside the bounds ... bigger than InputWidth "
            "and InputHeight\" (in ROI_ALIGN's half-pixel coordinates, the bounds [0, Width]); ROI_ALIGN_GRAD "
            "has no OutOfBoundsInputValue, so reading it per element (blended at the edges) would make its ROI "
            "gradient depend on a value it is not given; ONNX's conformance samples at -0.05 read the edge "
            "pixel. TensorFlow's CropAndResize extrapolates from [0, size - 1] instead: the half-pixel bands "
            "differ.",
            also=("ROI_ALIGN1",)),
        SilentChoice(
            "ROI_ALIGN LINEAR taps",
            "floor and ceil of the coordinate (one element at an integer coordinate), weighted by the fraction",
            "ROI_ALIGN_GRAD's pseudo-code (topYIndex = floor, bottomYIndex = ceil); so the ROI gradient is 0 "
            "at integer coordinates, as there.",
            also=("ROI_ALIGN1", "ROI_ALIGN_GRAD")),
        SilentChoice(
            "ROI_ALIGN NEAREST_NEIGHBOR ties",
            "to even (HLSL's round)",
            "The ROI_ALIGN_GRAD page's example needs 0.5 -> 0 and 2.5 -> 2, which rules out halves up and away "
            "from zero; halves down would fit it too.",
            also=("ROI_ALIGN1", "ROI_ALIGN_GRAD")),
        SilentChoice(
            "ROI_ALIGN MAX: ties, NaN",
            "the first largest sample in the page's loop order (sampleX outer, sampleY inner) gets the "
            "gradient; NaN samples skipped (maxNum), all NaN gives NaN",
            "[Minimum and maximum](semantics.md#minimum-and-maximum) and [Gradients](semantics.md#gradients): "
            "strict comparisons, maxNum.",
            also=("ROI_ALIGN1", "ROI_ALIGN_GRAD")),
        SilentChoice(
            "ROI_ALIGN batch index outside [0, BatchCount) (\"undefined\")",
            "every sample of the region reads OutOfBoundsInputValue; no gradient",
            "Reading outside the InputTensor is what OutOfBoundsInputValue is for; never a crash or a wrapped "
            "read.",
            also=("ROI_ALIGN1", "ROI_ALIGN_GRAD")),
        SilentChoice(
            "ROI_ALIGN NaN / infinite coordinates or SpatialScale",
            "NaN coordinates give NaN (not \"out of bounds\"); infinite ones are off the input",
            "NaN propagates rather than being hidden by OutOfBoundsInputValue.",
            also=("ROI_ALIGN1", "ROI_ALIGN_GRAD")),
        SilentChoice(
            "ROI_ALIGN/ROI_ALIGN1 defaults (the pages give none)",
            "ReductionFunction and InterpolationMode required; SpatialScaleX/Y 1.0; OutOfBoundsInputValue 0.0 "
            "(ONNX Runtime's); Minimum = Maximum = 1; InputPixelOffset 0.5, OutputPixelOffset -0.5, "
            "AlignRegionsToCorners FALSE (\"the same behavior as ROI_ALIGN\")",
            "A zeroed desc's Maximum 0 is not a valid count.",
            also=("ROI_ALIGN1",)),
    ),
)


def _settings(reduction_function, interpolation_mode, scale_x, scale_y, input_offset, output_offset, oob, lo, hi,
              corners, output_sizes) -> _Align:
    return _Align(reduction_function, interpolation_mode is InterpolationMode.NEAREST_NEIGHBOR, scale_x, scale_y,
                  input_offset, output_offset, oob, lo, hi, corners, output_sizes[2], output_sizes[3])


@operator(ROI_ALIGN)
def roi_align(input, roi, batch_indices, *, reduction_function, interpolation_mode, spatial_scale_x,
              spatial_scale_y, out_of_bounds_input_value, minimum_samples_per_output, maximum_samples_per_output,
              output_sizes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> rois = np.array([[0, 0, 4, 4], [1, 1, 3, 3]], np.float32)
        >>> batch = np.array([0, 0], np.uint32)
        >>> dmljax.roi_align(x, rois, batch, reduction_function="AVERAGE", interpolation_mode="LINEAR",
        ...                  output_sizes=(2, 1, 2, 2))[:, 0]
        Array([[[ 2.5,  4.5],
                [10.5, 12.5]],
        <BLANKLINE>
               [[ 5. ,  6. ],
                [ 9. , 10. ]]], dtype=float32)
    """
    s = _settings(reduction_function, interpolation_mode, spatial_scale_x, spatial_scale_y, 0.5, -0.5,
                  out_of_bounds_input_value, minimum_samples_per_output, maximum_samples_per_output, False,
                  output_sizes)
    return _align(input, roi, batch_indices, s, allow_half_precision_computation)


ROI_ALIGN1 = OpSpec(
    enum_name=PREFIX + "ROI_ALIGN1",
    summary=("Performs an ROI align operation, as described in the Mask R-CNN paper: extracts cropped windows "
             "from the input image tensor and resizes them to a common output size specified by the last 2 "
             "dimensions of OutputTensor using the specified InterpolationMode."),
    formula=("for every region roiIndex\n"
             "    scaledRegionX1 = ROITensor[roiIndex, 0] * SpatialScaleX  (and Y1, X2, Y2)\n"
             "    inputSamplesPerOutputSampleX = clamp(scaledRegionSizeX / outputSizeX, MinimumSamplesPerOutput, "
             "MaximumSamplesPerOutput)\n"
             "    outputSampleToInputScaleX = scaledRegionSizeX / outputSampleSizeX\n"
             "for every output element: for each of its samples\n"
             "    inputTensorX = (sampleX - OutputPixelOffset) * outputSampleToInputScaleX + scaledRegionX1 - "
             "InputPixelOffset\n"
             "    inputValue = interpolate2D(InputTensor, BatchIndicesTensor[roiIndex], channel, inputTensorX, "
             "inputTensorY)\n"
             "    outputValue = either average or maximum with inputValue"),
    tensors=_ALIGN_TENSORS,
    support=_align_tables("4.0"),
    params=_align_params(True),
    **_ALIGN_ACCURACY_AND_GRADIENT,
    notes=(_SAMPLING + " The page's outputSampleToInputScaleY divides scaledRegionSizeX by outputSampleSizeX "
           "(a slip): dmljax uses the Y sizes. With AlignRegionsToCorners the scale divides by "
           "outputSampleSize - 1, so that with OutputPixelOffset 0 the first and last samples sit on the "
           "region's corners (TensorFlow's CropAndResize, which tensorflow-directml maps to this operator); "
           "a single sample along an axis then sits at the region's centre, as CropAndResize's crop of 1."),
    extra_checks=(_align_checks,),
    silent=(
        SilentChoice(
            "ROI_ALIGN1's sample loop (\"for sampleX from outputTensorSampleX to <= outputTensorSampleX + "
            "inputSamplesPerOutputSampleX\")",
            "samples `o * samples + k`, `k < samples`",
            "The inclusive bound takes one sample of the next output element, which the ROI_ALIGN_GRAD page's "
            "example rules out (its outputs would mix rows).",
            also=("ROI_ALIGN", "ROI_ALIGN_GRAD")),
        SilentChoice(
            "ROI_ALIGN1 AlignRegionsToCorners (no formula on the page)",
            "the page's formula with outputSampleToInputScale = size / (outputSize * samples - 1); a single "
            "sample along an axis sits at the region's centre",
            "\"Stretched out to the very corners of the region\": with OutputPixelOffset 0 the first and last "
            "samples land on the corners. It is TensorFlow's CropAndResize (crop of 1: the centre), which "
            "tensorflow-directml maps onto ROI_ALIGN1 with these settings; tests/ops/pooling/test_roi.py "
            "checks both values and box gradients against TensorFlow's kernels."),
    ),
)


@operator(ROI_ALIGN1)
def roi_align1(input, roi, batch_indices, *, reduction_function, interpolation_mode, spatial_scale_x,
               spatial_scale_y, input_pixel_offset, output_pixel_offset, out_of_bounds_input_value,
               minimum_samples_per_output, maximum_samples_per_output, align_regions_to_corners, output_sizes,
               allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax  # the ROI_ALIGN_GRAD page's forward example: 1.5x by 0.5x crops
        >>> x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> rois = np.array([[0, 0, 2, 2], [2, 0, 4, 2], [0, 2, 2, 4], [2, 2, 4, 4]], np.float32)
        >>> out = dmljax.roi_align1(x, rois, np.zeros(4, np.uint32), reduction_function="AVERAGE",
        ...                         interpolation_mode="NEAREST_NEIGHBOR", output_sizes=(4, 1, 1, 3))
        >>> out[:, 0, 0]
        Array([[ 1.,  1.,  2.],
               [ 3.,  3.,  4.],
               [ 9.,  9., 10.],
               [11., 11., 12.]], dtype=float32)
    """
    s = _settings(reduction_function, interpolation_mode, spatial_scale_x, spatial_scale_y, input_pixel_offset,
                  output_pixel_offset, out_of_bounds_input_value, minimum_samples_per_output,
                  maximum_samples_per_output, align_regions_to_corners, output_sizes)
    return _align(input, roi, batch_indices, s, allow_half_precision_computation)


# ------------------------------------------------------------------------------ ROI_ALIGN_GRAD
def _grad_checks(tensors, attrs, level) -> list[Violation]:
    """The forward's checks, for the InputGradientTensor as its output; the InputTensor (when given) has
    the OutputGradientTensor's Sizes; MAX needs the InputTensor, and so does no OutputGradientTensor."""
    problems, regions = _shared_checks(tensors, attrs)
    x, dy, out = tensors.get("InputTensor"), tensors.get("InputGradientTensor"), tensors.get("OutputGradientTensor")
    if x is None and attrs.get("ReductionFunction") is ReduceFunction.MAX:
        problems.append(Violation("InputTensor", "input", "is missing with ReductionFunction MAX",
                                  "the forward input: MAX's gradient goes to the sample the forward pass chose"))
    if x is not None and out is not None and out.shape and out.shape != x.shape:
        problems.append(Violation("OutputGradientTensor", "output_gradient_sizes", f"has Sizes {list(out.shape)}",
                                  f"the InputTensor's, {list(x.shape)}", "leave output_gradient_sizes out (None)"))
    image = out if out is not None and out.shape else x
    if x is None and not (out is not None and out.shape):
        problems.append(Violation("OutputGradientTensor", "output_gradient_sizes", "has no Sizes",
                                  "output_gradient_sizes= (the forward input's Sizes) when there is no InputTensor"))
    shapes = dy is not None and image is not None and regions is not None and len(dy.shape) == len(image.shape) == 4
    if shapes and dy.shape[:2] != (regions, image.shape[1]):
        problems.append(Violation("InputGradientTensor", "input_gradient", f"has Sizes {list(dy.shape)}",
                                  f"the forward output's {{NumROIs, ChannelCount, OutputHeight, OutputWidth}}: "
                                  f"[{regions}, {image.shape[1]}, OutputHeight, OutputWidth]"))
    return problems


def _grad_outputs(tensors, attrs, problems) -> dict:
    x, out, r = tensors.get("InputTensor"), tensors.get("OutputGradientTensor"), tensors["ROITensor"]
    dt = tensors["InputGradientTensor"].data_type
    image = out.shape if out is not None and out.shape else x.shape
    return {"OutputGradientTensor": TensorInfo(image, dt), "OutputROIGradientTensor": TensorInfo(r.shape, dt)}


def _grad_growth(sizes, attrs) -> dict:
    """An input element or a region coordinate sums the samples of many output elements: up to
    4 Maximum^2 x OutputHeight x OutputWidth x max(NumROIs, ChannelCount) terms (``sizes``: the
    InputGradientTensor's), all of one sign when dY and the image's slopes are."""
    base = _growth(sizes, attrs)[F32]
    more = sizes[2] * sizes[3] * max(sizes[0], sizes[1]) if len(sizes) == 4 else 1
    terms = base * more
    return {F32: terms, F16: math.ceil(terms / 8192), "half": terms}


ROI_ALIGN_GRAD = OpSpec(
    enum_name=PREFIX + "ROI_ALIGN_GRAD",
    summary="Computes backpropagation gradients for ROI_ALIGN and ROI_ALIGN1.",
    formula=("for each region of interest (ROI):\n"
             "    for each inputGradientCoordinate: for each inputCoordinate that contributed to it:\n"
             "        imageGradY = (1 - xLerp) * (bottomLeft - topLeft) + xLerp * (bottomRight - topRight)\n"
             "        imageGradX = (1 - yLerp) * (topRight - topLeft) + yLerp * (bottomRight - bottomLeft)\n"
             "        OutputROIGradientTensor[roiIndex] += imageGrad * inputGradientWeight * d(inputCoordinate) / "
             "d[x1, y1, x2, y2]\n"
             "(OutputGradientTensor: each InputGradientTensor element spread back over the input elements its "
             "samples read, with their interpolation weights, as a RESAMPLE_GRAD per region)"),
    tensors=(TensorSpec("InputGradientTensor", "input"), TensorSpec("ROITensor", "input"),
             TensorSpec("BatchIndicesTensor", "input"), TensorSpec("InputTensor", "input", optional=True),
             TensorSpec("OutputGradientTensor", "output", sizes_arg=True, sizes_default=True),
             TensorSpec("OutputROIGradientTensor", "output")),
    support=(table("4.1", InputGradientTensor=("4", FLOAT32_FLOAT16), ROITensor=("2 to 4", FLOAT32_FLOAT16),
                   BatchIndicesTensor=("1 to 4", UINT32), InputTensor=("4", FLOAT32_FLOAT16),
                   OutputGradientTensor=("4", FLOAT32_FLOAT16), OutputROIGradientTensor=("2 to 4", FLOAT32_FLOAT16)),),
    params=_align_params(True, oob=False),
    constraints=(SameDataType(("InputGradientTensor", "InputTensor", "OutputGradientTensor",
                               "OutputROIGradientTensor", "ROITensor")),),
    ulp={F32: 8, F16: 1},
    ulp_half=8,
    ulp_growth=_grad_growth,
    gradient=("Second order, the derivative of the formula: OutputGradientTensor is linear in the "
              "InputGradientTensor (its derivative there is ROI_ALIGN1 of the cotangent, MAX at the samples the "
              "InputTensor chose), constant in the InputTensor (0), and moves with the ROI coordinates through "
              "the interpolation weights; BatchIndicesTensor: none."),
    notes=("Returns (output_gradient, output_roi_gradient), the page's order: the gradients of ROI_ALIGN1 with "
           "the same members (ROI_ALIGN's: InputPixelOffset 0.5, OutputPixelOffset -0.5, AlignRegionsToCorners "
           "FALSE) with respect to its InputTensor and its ROITensor, at dY = InputGradientTensor; jax.grad of "
           "ROI_ALIGN and ROI_ALIGN1 is this function. The page's OutputROIGradientTensor pseudo-code (for one "
           "sample) multiplies the image slopes by '(inputWidth - inputGradientCoordinate.x)' and "
           "'inputGradientCoordinate.x', which leave out the scales; dmljax uses the exact derivative of the "
           "sample coordinates, d/dx1 = SpatialScaleX * (1 - t / N), d/dx2 = SpatialScaleX * t / N with t = "
           "sample - OutputPixelOffset and N the samples across the region (N - 1 with AlignRegionsToCorners), "
           "which is TensorFlow's CropAndResizeGradBoxes for tensorflow-directml's settings. Without an "
           "OutOfBoundsInputValue member the gradients cannot depend on it: samples off the input pass "
           "nothing, and MAX chooses among the samples as a forward pass whose OutOfBoundsInputValue is 0 "
           "(jax.grad of ROI_ALIGN and ROI_ALIGN1 uses the forward's own value). DirectML may omit either output; dmljax returns both: the InputTensor is optional "
           "(AVERAGE only; output_gradient_sizes= then gives the OutputGradientTensor's Sizes) and without it "
           "the OutputROIGradientTensor, which needs the input's values, is NaN. " + _SAMPLING),
    extra_checks=(_grad_checks,),
    infer_outputs=_grad_outputs,
    silent=(
        SilentChoice(
            "ROI_ALIGN_GRAD's optional outputs",
            "both are returned, (output_gradient, output_roi_gradient); without the InputTensor (AVERAGE only) "
            "output_gradient_sizes= gives the OutputGradientTensor's Sizes and the OutputROIGradientTensor is "
            "NaN",
            "A Python function returns a fixed tuple; the ROI gradient needs the input's values (the page "
            "requires the InputTensor when that output is supplied); NaN is never mistaken for a gradient."),
        SilentChoice(
            "ROI_ALIGN_GRAD's OutputROIGradientTensor",
            "the exact derivative of the forward output with respect to [x1, y1, x2, y2] through every "
            "sample's coordinate: d/dx1 = SpatialScaleX (1 - t / N), d/dx2 = SpatialScaleX t / N (t = sample - "
            "OutputPixelOffset, N the samples across the region, N - 1 with corners)",
            "The page's pseudo-code is a summary for one sample whose factors \"(inputWidth - "
            "inputGradientCoordinate.x)\" and \"inputGradientCoordinate.x\" leave out the scales; the "
            "derivative is TensorFlow's CropAndResizeGradBoxes for tensorflow-directml's settings."),
        SilentChoice(
            "ROI_ALIGN_GRAD with MAX (no OutOfBoundsInputValue member)",
            "MAX chooses among the samples as a forward pass whose OutOfBoundsInputValue is 0; jax.grad of "
            "ROI_ALIGN/ROI_ALIGN1 uses the forward's own value",
            "The choice decides which sample gets dY where a sample off the input could be the largest."),
    ),
)


@operator(ROI_ALIGN_GRAD)
def roi_align_grad(input_gradient, roi, batch_indices, input=None, *, reduction_function, interpolation_mode,
                   spatial_scale_x, spatial_scale_y, input_pixel_offset, output_pixel_offset,
                   minimum_samples_per_output, maximum_samples_per_output, align_regions_to_corners,
                   output_gradient_sizes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax  # the page's example: nearest-neighbour crops of a 4 x 4 input
        >>> rois = np.array([[0, 0, 2, 2], [2, 0, 4, 2], [0, 2, 2, 4], [2, 2, 4, 4]], np.float32)
        >>> dy = np.arange(1, 13, dtype=np.float32).reshape(4, 1, 1, 3)
        >>> dx, droi = dmljax.roi_align_grad(dy, rois, np.zeros(4, np.uint32), reduction_function="AVERAGE",
        ...                                  interpolation_mode="NEAREST_NEIGHBOR",
        ...                                  output_gradient_sizes=(1, 1, 4, 4))
        >>> dx[0, 0]
        Array([[ 3.,  3.,  9.,  6.],
               [ 0.,  0.,  0.,  0.],
               [15.,  9., 21., 12.],
               [ 0.,  0.,  0.,  0.]], dtype=float32)
    """
    dt = DataType.from_dtype(input_gradient.dtype)
    sizes = tuple(output_gradient_sizes) if output_gradient_sizes is not None else tuple(input.shape)
    s = _settings(reduction_function, interpolation_mode, spatial_scale_x, spatial_scale_y, input_pixel_offset,
                  output_pixel_offset, 0.0, minimum_samples_per_output, maximum_samples_per_output,
                  align_regions_to_corners, (0, 0) + input_gradient.shape[2:])
    dx, droi = align_grad(input, input_gradient, roi, batch_indices, s, allow_half_precision_computation, sizes)
    return store(dx, dt), store(droi, dt)
