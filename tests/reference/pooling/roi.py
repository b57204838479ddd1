"""float64 references of the region-of-interest operators (ROI_POOLING, ROI_ALIGN, ROI_ALIGN1,
ROI_ALIGN_GRAD), from their pages, element by element.

ROI_POOLING: the page's integer bins (C's round and integer division), clamped to the input, the
maximum of each bin (maxNum), 0 for an empty bin or a BatchID outside the batch.

ROI_ALIGN1 (ROI_ALIGN: InputPixelOffset 0.5, OutputPixelOffset -0.5, no corners): per region and
axis, samples = clamp(ceil(|scaled size| / output size), Minimum, Maximum), each sample's input
coordinate (sample - OutputPixelOffset) * size / (output size * samples) + scaled start -
InputPixelOffset in FLOAT32 in the page's order (size / (N - 1) with AlignRegionsToCorners, the
centre for a single sample); a sample off the input ([-0.5, size - 0.5]) reads
OutOfBoundsInputValue, otherwise the floor / ceil elements (LINEAR, clamped to the edge) or the
nearest one (ties to even); AVERAGE or MAX (the first maximum in the page's loop order, sampleX
outer) of the samples. The gradient is the derivative of that: each sample's share of dY through
its weights, and through its coordinates to the region's four numbers (ROI_ALIGN_GRAD)."""

import math

import jax
import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import read

F32 = np.float32


# ================================================================================ ROI_POOLING
def _round_c(v):
    """C's round(): halves away from zero (exact: |v| + 0.5 of a FLOAT32 value is exact in float64)."""
    return math.copysign(math.floor(abs(v) + 0.5), v)


def _cdiv(a, b):
    """C's integer division (truncation toward zero), b > 0."""
    q = abs(a) // b
    return q if a >= 0 else -q


def _pool_bins(roi, scale, pooled, h, w):
    """(valid batch index or None, [(hs, he)] per bin row, [(ws, we)] per bin column)."""
    bid = float(roi[0])
    b = None if math.isnan(bid) else math.trunc(bid)
    coords = []
    for v in roi[1:]:
        s = float(F32(F32(v) * F32(scale)))
        r = 0.0 if math.isnan(s) else (math.copysign(2.0**24, s) if math.isinf(s) else _round_c(s))
        coords.append(int(min(max(r, -2.0**24), 2.0**24)))
    x1, y1, x2, y2 = coords
    ph, pw = pooled

    def bins(a, b_, p, extent):
        region = b_ - a + 1
        return [(min(max(_cdiv(i * region, p) + a, 0), extent),
                 min(max(_cdiv((i + 1) * region + p - 1, p) + a, 0), extent)) for i in range(p)]
    return b, bins(y1, y2, ph, h), bins(x1, x2, pw, w)


def _key(v):
    """Order of maxNum among numbers: -0 below +0."""
    return (v, math.copysign(1.0, v))


def _height_width(size):
    """PooledSize, a DML_SIZE_2D, as (Height, Width): its members are Width then Height (a pair
    is (width, height); a mapping names them)."""
    if isinstance(size, dict):
        return size["Height"], size["Width"]
    width, height = size
    return height, width


def _pool_select(x, roi, spatial_scale, pooled_size):
    """Per region, channel and bin: (value, (b, c, h, w) of the first maximum or None)."""
    xs = read(x)
    n, c, h, w = xs.shape
    out = []
    for row in np.asarray(roi, np.float64).reshape(-1, 5):
        b, hb, wb = _pool_bins(row, spatial_scale, _height_width(pooled_size), h, w)
        ok = b is not None and 0 <= b < n
        per = np.zeros((c, len(hb), len(wb)), np.float64)
        where = {}
        for ci in range(c):
            for i, (hs, he) in enumerate(hb):
                for j, (ws, we) in enumerate(wb):
                    if not ok or he <= hs or we <= ws:
                        continue  # an empty bin: 0
                    best = None
                    for yy in range(hs, he):
                        for xx in range(ws, we):
                            v = xs[b, ci, yy, xx]
                            if not math.isnan(v) and (best is None or _key(v) > _key(best[0])):
                                best = (v, (b, ci, yy, xx))
                    per[ci, i, j] = np.nan if best is None else best[0]
                    if best is not None:
                        where[(ci, i, j)] = best[1]
        out.append((per, where))
    return out


def roi_pooling(x, roi, spatial_scale=1.0, pooled_size=(2, 2)):
    return [np.stack([per for per, _ in _pool_select(x, roi, spatial_scale, pooled_size)])]


def _roi_pooling_grad(dy, x, roi, spatial_scale=1.0, pooled_size=(2, 2)):
    dx = np.zeros(np.shape(x), np.float64)
    dy = np.asarray(dy, np.float64)
    for r, (_, where) in enumerate(_pool_select(x, roi, spatial_scale, pooled_size)):
        for (ci, i, j), at in where.items():
            dx[at] += dy[r, ci, i, j]
    return [dx, np.zeros(np.shape(roi))]


def _pooling_inputs(rng, types, shape, spatial_scale=1.0, pooled_size=(2, 2), **_):
    """An image (2, 3, 6, 7) and six regions: inside, across the edges, outside, a point, a
    BatchID of 1.7 (truncated to 1) and one of 2 (outside the batch)."""
    from tests.catalog import random_tensor
    x = random_tensor(rng, types["InputTensor"], (2, 3, 6, 7))
    s = 1.0 / F32(spatial_scale)
    rows = np.array([[0, 1, 1, 4, 3], [1, -2, -1, 3, 8], [0, 9, 7, 12, 9], [1, 2, 3, 2, 3], [1.7, 0, 0, 6, 5],
                     [2, 0, 0, 3, 3]], np.float64)
    rows[:, 1:] = rows[:, 1:] * s + rng.uniform(-0.3, 0.3, (6, 4)) * s
    return [x, rows.reshape(1, 1, 6, 5).astype(types["ROITensor"].dtype)]


# ================================================================================ ROI_ALIGN*
def _settings(kw, one):
    """The members, with ROI_ALIGN's fixed offsets and corners when ``one`` is False."""
    return {
        "reduction": str(kw["reduction_function"]).upper().split("_")[-1],
        "nearest": str(kw["interpolation_mode"]).upper().endswith("NEAREST_NEIGHBOR"),
        "ssx": F32(kw.get("spatial_scale_x", 1.0)), "ssy": F32(kw.get("spatial_scale_y", 1.0)),
        "ipo": F32(kw.get("input_pixel_offset", 0.5) if one else 0.5),
        "opo": F32(kw.get("output_pixel_offset", -0.5) if one else -0.5),
        "oob": float(F32(kw.get("out_of_bounds_input_value", 0.0))),
        "lo": int(kw.get("minimum_samples_per_output", 1)), "hi": int(kw.get("maximum_samples_per_output", 1)),
        "corners": bool(kw.get("align_regions_to_corners", False)) if one else False}


def _axis(r0, r1, ss, out, s):
    """One axis of one region: [(position, dpos/dr0, dpos/dr1) for each sample] per output index,
    positions in FLOAT32 in the page's order, derivatives exact (float64)."""
    start, end = F32(F32(r0) * ss), F32(F32(r1) * ss)
    size = F32(end - start)
    ratio = F32(F32(abs(size)) / F32(out))
    if math.isnan(ratio):
        n = s["lo"]
    elif math.isinf(ratio):
        n = s["hi"]
    else:
        n = min(max(math.ceil(ratio), s["lo"]), s["hi"])
    total = out * n
    ssf = float(ss)
    rows = []
    for o in range(out):
        row = []
        for k in range(n):
            t = F32(F32(o * n + k) - s["opo"])
            if s["corners"] and total == 1:
                p = F32(start + F32(size * F32(0.5)))
                d0 = d1 = 0.5 * ssf
            else:
                den = total - 1 if s["corners"] else total
                p = F32(F32(t * F32(size / F32(den))) + start)
                d0, d1 = ssf * (1 - float(t) / den), ssf * float(t) / den
            row.append((float(F32(p - s["ipo"])), d0, d1))
        rows.append(row)
    return rows


def _taps(p, extent, nearest):
    """[(index, weight)] a coordinate reads, and d(weights)/dp as [(index, slope)]; None off the input."""
    if p < -0.5 or p > extent - 0.5:
        return None
    if math.isnan(p):
        return [(0, math.nan)], [(0, math.nan)]
    clamp = lambda i: min(max(int(i), 0), extent - 1)
    if nearest:
        return [(clamp(np.round(p)), 1.0)], []
    lo, hi = math.floor(p), math.ceil(p)
    f = p - lo
    return [(clamp(lo), 1 - f), (clamp(hi), f)], [(clamp(lo), -1.0), (clamp(hi), 1.0)]


def _samples(img, ok, ys, xs, s, h, w):
    """[(value per channel, reads)] of an output element's samples in the page's loop order
    (sampleX outer): reads = (y taps, x taps, y slopes, x slopes, dpos y, dpos x) or None off the input."""
    out = []
    for px, dx0, dx1 in xs:
        for py, dy0, dy1 in ys:
            ty, tx = _taps(py, h, s["nearest"]), _taps(px, w, s["nearest"])
            if not ok or ty is None or tx is None:
                out.append((np.full(img.shape[0], s["oob"]), None))
                continue
            v = sum(wy * wx * img[:, iy, ix] for iy, wy in ty[0] for ix, wx in tx[0])
            out.append((v, (ty, tx, (dy0, dy1), (dx0, dx1))))
    return out


def _regions(x_shape, rois, batch, out_hw, kw, one):
    """Per region: (batch index, ok, y samples, x samples)."""
    s = _settings(kw, one)
    n = x_shape[0]
    r4 = np.asarray(rois, np.float64).reshape(-1, 4)
    bs = np.asarray(batch).reshape(-1)
    out = []
    for r in range(r4.shape[0]):
        b = int(bs[r])
        ys = _axis(r4[r, 1], r4[r, 3], s["ssy"], out_hw[0], s)
        xs = _axis(r4[r, 0], r4[r, 2], s["ssx"], out_hw[1], s)
        out.append((b if b < n else 0, b < n, ys, xs))
    return s, out


def _chosen(vals, c):
    """The index of MAX's sample for channel c: the first largest number (maxNum), or None."""
    best = None
    for i, (v, _) in enumerate(vals):
        if not math.isnan(v[c]) and (best is None or _key(v[c]) > _key(vals[best][0][c])):
            best = i
    return best


def _forward(values, select, rois, batch, out_hw, kw, one, oob=None):
    """The output (R, C, out_h, out_w) with the samples read from ``values`` (MAX choosing by
    ``select``'s samples), and the magnitude of its terms."""
    s, regions = _regions(values.shape, rois, batch, out_hw, kw, one)
    if oob is not None:
        s["oob"] = oob
    _, c, h, w = values.shape
    out = np.zeros((len(regions), c) + tuple(out_hw))
    size = np.zeros_like(out)
    for r, (b, ok, ys, xs) in enumerate(regions):
        for oy in range(out_hw[0]):
            for ox in range(out_hw[1]):
                vals = _samples(values[b], ok, ys[oy], xs[ox], s, h, w)
                sel = vals if select is values else _samples(select[b], ok, ys[oy], xs[ox], s, h, w)
                mags = []
                for (v, reads), (py, _, _) in zip(vals, [(p, 0, 0) for _ in xs[ox] for p, _, _ in ys[oy]]):
                    if reads is None:
                        mags.append(np.full(c, abs(s["oob"])))
                        continue
                    ty, tx = reads[0], reads[1]
                    terms = sum(abs(wy * wx) * np.abs(values[b][:, iy, ix]) for iy, wy in ty[0] for ix, wx in tx[0])
                    taps = [values[b][:, iy, ix] for iy, _ in ty[0] for ix, _ in tx[0]]
                    spread = np.max(taps, axis=0) - np.min(taps, axis=0)  # a coordinate's rounding moves it by this
                    coord = 2 + abs(py) + max(abs(p) for p, _, _ in xs[ox])
                    mags.append(terms + (0 if s["nearest"] else coord * spread))
                if s["reduction"] == "AVERAGE":
                    out[r, :, oy, ox] = sum(v for v, _ in vals) / len(vals)
                    size[r, :, oy, ox] = sum(mags) / len(vals)
                else:
                    for ci in range(c):
                        i = _chosen(sel, ci)
                        out[r, ci, oy, ox] = np.nan if i is None else vals[i][0][ci]
                        size[r, ci, oy, ox] = max(m[ci] for m in mags)
    return out, size


def _gradients(values, select, dy, rois, batch, kw, one):
    """(dValues, dROI, and their magnitudes): each sample's share of dY back through its weights,
    and through its coordinates to [x1, y1, x2, y2] (slopes read from ``values``)."""
    dy = np.asarray(dy, np.float64)
    s, regions = _regions(values.shape, rois, batch, dy.shape[2:], kw, one)
    _, c, h, w = values.shape
    dx, dxm = np.zeros(values.shape), np.zeros(values.shape)
    droi, droim = np.zeros((len(regions), 4)), np.zeros((len(regions), 4))
    for r, (b, ok, ys, xs) in enumerate(regions):
        for oy in range(dy.shape[2]):
            for ox in range(dy.shape[3]):
                vals = _samples(select[b], ok, ys[oy], xs[ox], s, h, w)
                for ci in range(c):
                    g = dy[r, ci, oy, ox]
                    if s["reduction"] == "AVERAGE":
                        shares = [(i, g / len(vals)) for i in range(len(vals))]
                    else:
                        i = _chosen(vals, ci)
                        shares = [] if i is None else [(i, g)]
                    for i, share in shares:
                        reads = vals[i][1]
                        if reads is None:
                            continue
                        (ty, sy), (tx, sx), (dy0, dy1), (dx0, dx1) = reads
                        img = values[b, ci]
                        for iy, wy in ty:
                            for ix, wx in tx:
                                dx[b, ci, iy, ix] += share * wy * wx
                                dxm[b, ci, iy, ix] += abs(share * wy * wx)
                        slope_y = sum(sl * wx * img[iy, ix] for iy, sl in sy for ix, wx in tx)
                        slope_x = sum(wy * sl * img[iy, ix] for iy, wy in ty for ix, sl in sx)
                        mag_y = sum(abs(sl * wx * img[iy, ix]) for iy, sl in sy for ix, wx in tx)
                        mag_x = sum(abs(wy * sl * img[iy, ix]) for iy, wy in ty for ix, sl in sx)
                        for k, (slope, mag, d) in enumerate(((slope_x, mag_x, dx0), (slope_y, mag_y, dy0),
                                                             (slope_x, mag_x, dx1), (slope_y, mag_y, dy1))):
                            droi[r, k] += share * slope * d
                            droim[r, k] += abs(share * d) * mag
    return dx, droi.reshape(np.shape(rois)), dxm, droim.reshape(np.shape(rois))


def _align_fns(one):
    def fn(x, rois, batch, output_sizes, **kw):
        v = read(x)
        return [_forward(v, v, read(rois), batch, output_sizes[2:], kw, one)[0]]

    def magnitude(x, rois, batch, output_sizes, **kw):
        v = read(x)
        return _forward(v, v, read(rois), batch, output_sizes[2:], kw, one)[1]

    def grad(dy, x, rois, batch, output_sizes, **kw):
        v = read(x)
        dx, droi, _, _ = _gradients(v, v, dy, read(rois), batch, kw, one)
        return [dx, droi, None]

    def grad_magnitude(dy, x, rois, batch, output_sizes, **kw):
        v = read(x)
        _, _, dxm, droim = _gradients(v, v, dy, read(rois), batch, kw, one)
        return [dxm, droim, None]
    return fn, magnitude, grad, grad_magnitude


_B, _C, _H, _W, _R = 2, 2, 5, 6, 5


def _align_inputs(roi_shape, index_shape):
    def make(rng, types, shape, output_sizes=None, **kw):
        """An image (2, 2, 5, 6) of N(0, 3) values and five regions in pixel units (inside, across
        the edges, inverted, a point, outside), with their batch indices."""
        from tests.catalog import random_tensor
        x = random_tensor(rng, types["InputTensor"], (_B, _C, _H, _W))
        return [x, _rois(rng, types["ROITensor"], kw, roi_shape),
                _indices(types["BatchIndicesTensor"]).reshape(index_shape)]
    return make


def _rois(rng, dt, kw, shape=(_R, 4)):
    base = np.array([[0.6, 0.9, 4.3, 3.7], [-1.4, 2.2, 3.1, 6.3], [5.2, 3.6, 1.3, 0.7], [2.35, 1.65, 2.35, 1.65],
                     [6.9, -3.1, 9.2, -1.2]])
    base = base + rng.uniform(-0.1, 0.1, base.shape)
    scale = np.array([kw.get("spatial_scale_x", 1.0), kw.get("spatial_scale_y", 1.0)] * 2)
    return (base / scale).astype(dt.dtype).reshape(shape)


def _indices(dt):
    """The regions' batch indices: UINT64 becomes UINT32 when JAX's 64-bit mode is off (the generated
    gradient and half-precision cases run without it)."""
    wide = np.dtype(dt.dtype) == np.uint64 and not jax.config.jax_enable_x64
    return np.array([0, 1, 1, 0, 1], np.uint32 if wide else dt.dtype)


def _grad_shape(shape):
    return (_R, _C, 3, 2)


def _grad_inputs(rng, types, shape, **kw):
    """For ROI_ALIGN_GRAD: dY > 0 (5, 2, 3, 2), upright regions and an image increasing along
    both axes, so that every term of both gradients has one sign (their sums are then compared
    in ULP); the regions are as the forward's, made upright."""
    from tests.catalog import random_tensor
    dt = types["InputGradientTensor"]
    dy = random_tensor(rng, dt, _grad_shape(None), "positive")
    steps = rng.uniform(0.1, 1.0, (_B, _C, _H, _W))
    x = np.cumsum(np.cumsum(steps, axis=2), axis=3).astype(dt.dtype)
    r = _rois(rng, types["ROITensor"], kw).astype(np.float64)
    r = np.concatenate([np.minimum(r[:, :2], r[:, 2:]), np.maximum(r[:, :2], r[:, 2:])], axis=1)
    return [dy, r.astype(dt.dtype).reshape(1, _R, 4), _indices(types["BatchIndicesTensor"]).reshape(1, _R), x]


def roi_align_grad(dy, rois, batch, x=None, output_gradient_sizes=None, **kw):
    v = read(x)
    dx, droi, _, _ = _gradients(v, v, dy, read(rois), batch, kw, True)
    return [(dx, droi)]


def _grad_magnitude_first(dy, rois, batch, x=None, **kw):
    v = read(x)
    return _gradients(v, v, dy, read(rois), batch, kw, True)[2]


def _second(ct, dy, rois, batch, x=None, output_gradient_sizes=None, **kw):
    """The gradient of sum(OutputGradientTensor * ct): by dY, ROI_ALIGN1 of ct (no out-of-bounds
    value: a sample off the input passes nothing; MAX at the samples x chose); by the regions, their
    gradient with the samples reading ct; by x, 0."""
    v, c = read(x), np.asarray(ct, np.float64)
    d_dy, _ = _forward(c, v, read(rois), batch, np.shape(dy)[2:], kw, True, oob=0.0)
    _, d_roi, _, d_roim = _gradients(c, v, dy, read(rois), batch, kw, True)
    _, size = _forward(np.abs(c), v, read(rois), batch, np.shape(dy)[2:], kw, True, oob=0.0)
    return (d_dy, d_roi, None, np.zeros(np.shape(x))), (size, d_roim, None, None)


def _second_grad(ct, *args, **kw):
    return list(_second(ct, *args, **kw)[0])


def _second_magnitude(ct, *args, **kw):
    return list(_second(ct, *args, **kw)[1])


_OUT = {"output_sizes": (_R, _C, 3, 2)}
_ALIGN_SETS = (
    Attrs({"reduction_function": "AVERAGE", "interpolation_mode": "NEAREST_NEIGHBOR", "minimum_samples_per_output": 1,
           "maximum_samples_per_output": 3, "out_of_bounds_input_value": -1.5, **_OUT}),
)
_ALIGN1_SETS = (
    Attrs({"reduction_function": "MAX", "interpolation_mode": "LINEAR", "input_pixel_offset": 0.0,
           "output_pixel_offset": 0.0, "align_regions_to_corners": True, "spatial_scale_x": 0.5, "spatial_scale_y": 2.0,
           "maximum_samples_per_output": 2, "out_of_bounds_input_value": 0.75, **_OUT}),
)
_GRAD_SETS = (
    Attrs({"reduction_function": "AVERAGE", "interpolation_mode": "LINEAR", "maximum_samples_per_output": 2}),
)

_roi_align = _align_fns(False)
_roi_align1 = _align_fns(True)

# ranks=True leaves out the generated finite differences along random directions: the outputs jump
# where a sample count, a rounding or MAX's choice changes and bend at every integer coordinate, which
# such steps cross; tests/ops/pooling/test_roi.py takes differences where the geometry keeps away from them.
REFERENCES = {
    "DML_OPERATOR_ROI_POOLING": Reference(
        roi_pooling, attrs=(Attrs({"pooled_size": (2, 3), "spatial_scale": 0.5}),),
        make_inputs=_pooling_inputs, shape=lambda s: (2, 3, 6, 7), pointwise=False, grad=_roi_pooling_grad,
        ranks=True),
    "DML_OPERATOR_ROI_ALIGN": Reference(
        _roi_align[0], attrs=_ALIGN_SETS, make_inputs=_align_inputs((_R, 4), (_R,)), shape=lambda s: (_B, _C, _H, _W),
        magnitude=_roi_align[1], grad=_roi_align[2], grad_magnitude=_roi_align[3], pointwise=False,
        accumulates=True, ranks=True),
    "DML_OPERATOR_ROI_ALIGN1": Reference(
        _roi_align1[0], attrs=_ALIGN1_SETS, make_inputs=_align_inputs((1, 1, _R, 4), (1, 1, 1, _R)), shape=lambda s: (_B, _C, _H, _W),
        magnitude=_roi_align1[1], grad=_roi_align1[2], grad_magnitude=_roi_align1[3], pointwise=False,
        accumulates=True, ranks=True),
    "DML_OPERATOR_ROI_ALIGN_GRAD": Reference(
        roi_align_grad, attrs=_GRAD_SETS, make_inputs=_grad_inputs, shape=_grad_shape,
        magnitude=_grad_magnitude_first, grad=_second_grad, grad_magnitude=_second_magnitude, pointwise=False,
        accumulates=True, ranks=True),
}
