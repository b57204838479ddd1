"""ROI_POOLING, ROI_ALIGN, ROI_ALIGN1 and ROI_ALIGN_GRAD by hand: the ROI_ALIGN_GRAD page's example
verbatim (forward and backward), the pages' rules (bins, sample counts, offsets, corners, inverted
and empty regions, regions off the input), the choices where the pages are silent, FLOAT16 in
FLOAT32, ROI_ALIGN_GRAD as jax.grad's rule (they agree; its second order is a generated case),
finite differences where the geometry keeps away from the kinks, TensorFlow's CropAndResize(GradBoxes) for tensorflow-directml's
settings, and the validation messages."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.op import TRACE_COUNTS
from tests import tiers

_PAGE_X = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
_PAGE_ROIS = np.array([[0, 0, 2, 2], [2, 0, 4, 2], [0, 2, 2, 4], [2, 2, 4, 4]], np.float32)
_ZEROS4 = np.zeros(4, np.uint32)
_NEAREST = {"reduction_function": "AVERAGE", "interpolation_mode": "NEAREST_NEIGHBOR"}
_LINEAR = {"reduction_function": "AVERAGE", "interpolation_mode": "LINEAR"}


def _msg(info):
    return str(info.value)


# ================================================================================ ROI_POOLING
def _pool(x, rows, **kw):
    return np.asarray(dmljax.roi_pooling(x, np.asarray(rows, x.dtype).reshape(1, 1, -1, 5), **kw))


def test_roi_pooling_bins_follow_the_pages_integer_formula():
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    # RegionHeight 5 into 2 bins: [0, 3) and [2, 5) (Start = 0 * 5 / 2, End = (5 + 2 - 1) / 2 = 3; 5 / 2 = 2,
    # (10 + 1) / 2 = 5): the bins overlap on row 2
    out = _pool(x, [[0, 0, 0, 4, 4]], pooled_size=(2, 2))[0, 0]
    np.testing.assert_array_equal(out, [[12, 14], [22, 24]])
    # a 1 x 1 region pooled 3 x 3: every bin is that element
    np.testing.assert_array_equal(_pool(x, [[0, 2, 1, 2, 1]], pooled_size=(3, 3))[0, 0], np.full((3, 3), 7))
    # SpatialScale, then C's round (halves away from zero): 0.75 * 2 = 1.5 -> 2, 2.25 * 2 = 4.5 -> 5 (clamped)
    np.testing.assert_array_equal(_pool(x, [[0, 0.75, 0.75, 2.25, 2.25]], pooled_size=(1, 1), spatial_scale=2.0),
                                  [[[[24]]]])
    # -0.25 * 2 = -0.5 rounds to -1 (away from zero), clamped to the input: the region [-1, 0] is row 0
    np.testing.assert_array_equal(_pool(x, [[0, -0.25, -0.25, -0.25, -0.25]], pooled_size=(1, 1),
                                        spatial_scale=2.0), [[[[0]]]])


def test_roi_pooling_where_the_page_is_silent():
    x = np.arange(32, dtype=np.float32).reshape(2, 1, 4, 4)
    x[0, 0, 0, 1] = np.nan
    x[0, 0, 1, 1] = -0.0
    x[0, 0, 1, 0] = 0.0
    rows = [[0, 5, 5, 7, 7],      # off the input: every bin empty -> 0
            [2, 0, 0, 3, 3],      # BatchID outside the batch -> 0
            [1.9, 0, 0, 0, 0],    # BatchID truncated to 1
            [0, 1, 0, 1, 0],      # a bin of NaN only -> NaN
            [0, 0, 0, 1, 1],      # NaN skipped (maxNum): max(0, NaN, +0, -0)... of [[0, NaN], [0, -0]] -> +0
            [0, 0, 1, 1, 1]]      # -0 and +0: +0 wins, whatever the order
    x[0, 0, 0, 0] = -1.0
    out = _pool(x, rows, pooled_size=(1, 1))[:, 0, 0, 0]
    assert out[0] == 0 and out[1] == 0 and out[2] == 16 and np.isnan(out[3])
    assert out[4] == 0 and not np.signbit(out[4]) and out[5] == 0 and not np.signbit(out[5])
    # empty bins of a region that reaches past the input: rows 3 to 6 in 4 bins, [3, 4), [4, 5), ... clamped
    # to the 4 rows: [3, 4) and three empty bins
    out = _pool(x, [[1, 0, 3, 0, 6]], pooled_size=(1, 4))[0, 0, :, 0]
    np.testing.assert_array_equal(out, [28, 0, 0, 0])


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_roi_pooling_gradient_first_maximum_and_float16_sums():
    x = np.zeros((1, 1, 2, 3), np.float32)  # ties everywhere: the first (row-major) element of a bin gets dY
    rows = np.array([[[[0, 0, 0, 2, 1], [0, 1, 0, 2, 1]]]], np.float32)

    def loss(v, r):
        return jnp.sum(dmljax.roi_pooling(v, r, pooled_size=(2, 1)) * jnp.array([1.0, 10.0]))
    gx, gr = jax.grad(loss, argnums=(0, 1))(x, rows)
    # region 0 (width 3): column bins [0, 2) and [1, 3) -> elements (0, 0) and (0, 1); region 1 (width 2):
    # [1, 2) and [2, 3) -> (0, 1) and (0, 2); rows [0, 2) each
    np.testing.assert_array_equal(np.asarray(gx)[0, 0], [[1, 11, 10], [0, 0, 0]])
    assert not np.asarray(gr).any()
    # FLOAT16: an element shared by three bins gets 2048 + 1 + 1, summed in FLOAT32 (2050), not 2048
    h = np.zeros((1, 1, 1, 1), np.float16)
    rows = np.zeros((1, 1, 3, 5), np.float16)
    dy = np.array([2048, 1, 1], np.float16).reshape(3, 1, 1, 1)
    _, vjp = jax.vjp(lambda v: dmljax.roi_pooling(v, rows, pooled_size=(1, 1)), h)
    assert float(vjp(dy)[0][0, 0, 0, 0]) == 2050.0


def test_roi_pooling_messages():
    x = np.zeros((1, 2, 4, 4), np.float32)
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.roi_pooling(x, np.zeros((1, 1, 3, 4), np.float32), pooled_size=(2, 2, 2))
    msg = _msg(info)
    assert "ROITensor (argument `roi`) has Sizes [1, 1, 3, 4]; {1, 1, NumROIs, 5}: [BatchID, x1, y1, x2, y2] " \
           "per region." in msg
    assert ("PooledSize (argument `pooled_size`) is (2, 2, 2); expected dmljax.Size2D(width, height), a (width, "
            "height) pair or {'Width': ..., 'Height': ...}; got tuple.") in msg
    with pytest.raises(dmljax.ValidationError, match=r"PooledSize \(argument `pooled_size`\) is Size2D\(width=0, height=2\); "
                                                     r"Width and Height from 1 to 46340"):
        dmljax.roi_pooling(x, np.zeros((1, 1, 3, 5), np.float32), pooled_size=(0, 2))
    with pytest.raises(dmljax.ValidationError, match="must have the same DataType"):
        dmljax.roi_pooling(x, np.zeros((1, 1, 3, 5), np.float16), pooled_size=(1, 2))


# ================================================================================ ROI_ALIGN*
@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_roi_align_grad_page_example_forward_and_backward():
    out = dmljax.roi_align1(_PAGE_X, _PAGE_ROIS, _ZEROS4, output_sizes=(4, 1, 1, 3), **_NEAREST)
    np.testing.assert_array_equal(np.asarray(out)[:, 0, 0], [[1, 1, 2], [3, 3, 4], [9, 9, 10], [11, 11, 12]])
    dy = np.arange(1, 13, dtype=np.float32).reshape(4, 1, 1, 3)
    want = [[3, 3, 9, 6], [0, 0, 0, 0], [15, 9, 21, 12], [0, 0, 0, 0]]
    dx, droi = dmljax.roi_align_grad(dy, _PAGE_ROIS, _ZEROS4, _PAGE_X, **_NEAREST)
    np.testing.assert_array_equal(np.asarray(dx)[0, 0], want)
    assert not np.asarray(droi).any()  # nearest neighbour: piecewise constant in the coordinates
    # the same through jax.grad of ROI_ALIGN (whose offsets the example's are) and without the InputTensor
    g = jax.grad(lambda v: jnp.sum(dmljax.roi_align(v, _PAGE_ROIS, _ZEROS4, output_sizes=(4, 1, 1, 3), **_NEAREST)
                                   * dy))(_PAGE_X)
    np.testing.assert_array_equal(np.asarray(g)[0, 0], want)
    dx, droi = dmljax.roi_align_grad(dy, _PAGE_ROIS, _ZEROS4, output_gradient_sizes=(1, 1, 4, 4), **_NEAREST)
    np.testing.assert_array_equal(np.asarray(dx)[0, 0], want)
    assert np.isnan(np.asarray(droi)).all()  # no InputTensor: no ROI gradient (DirectML would omit it)


def test_roi_align_is_roi_align1_with_its_offsets():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    rois = (rng.uniform(-1, 6, (4, 4)) * np.array([1, 1, 1, 1])).astype(np.float32)
    b = np.array([0, 1, 1, 0], np.uint32)
    kw = {"reduction_function": "MAX", "interpolation_mode": "LINEAR", "spatial_scale_x": 0.75,
          "out_of_bounds_input_value": -2.0, "maximum_samples_per_output": 3, "output_sizes": (4, 3, 2, 3)}
    a = dmljax.roi_align(x, rois, b, **kw)
    c = dmljax.roi_align1(x, rois.reshape(1, 1, 4, 4), b.reshape(1, 4), input_pixel_offset=0.5,
                          output_pixel_offset=-0.5, align_regions_to_corners=False, **kw)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(c))


def test_identity_region_and_half_pixel_alignment():
    # A region covering the input exactly, at the input's size, one sample each: every sample lands on a
    # pixel centre ((s + 0.5) * 1 + 0 - 0.5 = s), so the output is the input (Mask R-CNN's alignment).
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 5)).astype(np.float32)
    out = dmljax.roi_align(x, np.array([[0, 0, 5, 4]], np.float32), np.zeros(1, np.uint32),
                           output_sizes=(1, 2, 4, 5), **_LINEAR)
    np.testing.assert_array_equal(np.asarray(out), x)
    # OutputPixelOffset 0 and InputPixelOffset 0 (no half pixels): the samples start on the region's corner
    out = dmljax.roi_align1(x, np.array([[1, 1, 3, 3]], np.float32), np.zeros(1, np.uint32), input_pixel_offset=0.0,
                            output_pixel_offset=0.0, output_sizes=(1, 2, 2, 2), **_LINEAR)
    np.testing.assert_array_equal(np.asarray(out)[0], x[0, :, 1:3, 1:3])


def _table(text, shape):
    return np.array(text.split(), np.float32).reshape(shape)


def test_onnx_roialign_conformance_case_through_the_directml_provider_mapping():
    # ONNX's backend test "roialign" (output_half_pixel, sampling_ratio 2, 4 digits), with ONNX Runtime's
    # DirectML mapping: ROI_ALIGN1, InputPixelOffset 0 (0.5 for half_pixel), OutputPixelOffset -0.5,
    # Minimum = Maximum = sampling_ratio, OutOfBoundsInputValue 0, LINEAR.
    x = _table("""0.2764 0.7150 0.1958 0.3416 0.4638 0.0259 0.2963 0.6518 0.4856 0.7250
        0.9637 0.0895 0.2919 0.6753 0.0234 0.6132 0.8085 0.5324 0.8992 0.4467
        0.3265 0.8479 0.9698 0.2471 0.9336 0.1878 0.4766 0.4308 0.3400 0.2162
        0.0206 0.1720 0.2155 0.4394 0.0653 0.3406 0.7724 0.3921 0.2541 0.5799
        0.4062 0.2194 0.4473 0.4687 0.7109 0.9327 0.9815 0.6320 0.1728 0.6119
        0.3097 0.1283 0.4984 0.5068 0.4279 0.0173 0.4388 0.0430 0.4671 0.7119
        0.1011 0.8477 0.4726 0.1777 0.9923 0.4042 0.1869 0.7795 0.9946 0.9689
        0.1366 0.3671 0.7011 0.6234 0.9867 0.5585 0.6985 0.5609 0.8788 0.9928
        0.5697 0.8511 0.6711 0.9406 0.8751 0.7496 0.1650 0.1049 0.1559 0.2514
        0.7012 0.4056 0.7879 0.3461 0.0415 0.2998 0.5094 0.3727 0.5482 0.0502""", (1, 1, 10, 10))
    want = _table("""0.4664 0.4466 0.3405 0.5688 0.6068 0.3714 0.4296 0.3835 0.5562 0.3510
        0.2768 0.4883 0.5222 0.5528 0.4171 0.4713 0.4844 0.6904 0.4920 0.8774 0.6239 0.7125 0.6289 0.3355 0.3495
        0.3022 0.4305 0.4696 0.3978 0.5423 0.3656 0.7050 0.5165 0.3172 0.7015
        0.2912 0.5059 0.6476 0.6235 0.8299 0.5916 0.7389 0.7048 0.8372 0.8893 0.6227 0.6153 0.7097 0.6154 0.4585
        0.2384 0.3379 0.3717 0.6100 0.7601 0.3767 0.3785 0.7147 0.9243 0.9727
        0.5749 0.5826 0.5709 0.7619 0.8770 0.5355 0.2566 0.2141 0.2796 0.3600 0.4365 0.3504 0.2887 0.3661 0.2349""",
                  (3, 1, 5, 5))
    rois = np.array([[0, 0, 9, 9], [0, 5, 4, 9], [5, 5, 9, 9]], np.float32)
    out = dmljax.roi_align1(x, rois, np.zeros(3, np.uint32), input_pixel_offset=0.0, minimum_samples_per_output=2,
                            maximum_samples_per_output=2, output_sizes=(3, 1, 5, 5), **_LINEAR)
    np.testing.assert_allclose(np.asarray(out), want, atol=1e-4)


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_samples_per_output_are_the_clamped_ceiling():
    # A 1 x 6 row image, a region of width 6 (-0.5 .. 5.5 after the offsets) into 2 outputs: ceil(6 / 2) = 3
    # samples each, at pixel centres 0, 1, 2 and 3, 4, 5; Maximum 2 takes 2 (at 0.5 and 2, then 3.5 and 5).
    x = np.array([[[[1, 2, 4, 8, 16, 32]]]], np.float32)
    roi = np.array([[0, 0, 6, 1]], np.float32)
    one = np.zeros(1, np.uint32)
    avg = lambda **kw: np.asarray(dmljax.roi_align(x, roi, one, output_sizes=(1, 1, 1, 2), **_LINEAR, **kw))[0, 0, 0]
    np.testing.assert_allclose(avg(maximum_samples_per_output=8), [7 / 3, 56 / 3], rtol=1e-6)
    np.testing.assert_array_equal(avg(maximum_samples_per_output=2), [(1.25 + 3.5) / 2, (10 + 28) / 2])  # 0.25 ... 4.75
    np.testing.assert_array_equal(avg(maximum_samples_per_output=1), [2, 16])  # at 1 and 4
    # Minimum raises the count of a small region: width 1 into 2 outputs wants 1; Minimum 2 takes 2, at
    # 1.625, 1.875 | 2.125, 2.375
    small = np.asarray(dmljax.roi_align(x, np.array([[2, 0, 3, 1]], np.float32), one, output_sizes=(1, 1, 1, 2),
                                        minimum_samples_per_output=2, maximum_samples_per_output=4, **_LINEAR))
    np.testing.assert_array_equal(small[0, 0, 0], [(3.25 + 3.75) / 2, (4.5 + 5.5) / 2])


def test_max_reduction_and_nan():
    x = np.array([[[[1, 9, 3, np.nan, 2, 0]]]], np.float32)
    roi = np.array([[0, 0, 6, 1]], np.float32)
    out = dmljax.roi_align(x, roi, np.zeros(1, np.uint32), reduction_function="MAX",
                           interpolation_mode="NEAREST_NEIGHBOR", maximum_samples_per_output=3,
                           output_sizes=(1, 1, 1, 2))
    np.testing.assert_array_equal(np.asarray(out)[0, 0, 0], [9, 2])  # NaN skipped (maxNum)
    x[0, 0, 0, 3:] = np.nan
    out = dmljax.roi_align(x, roi, np.zeros(1, np.uint32), reduction_function="MAX",
                           interpolation_mode="NEAREST_NEIGHBOR", maximum_samples_per_output=3,
                           output_sizes=(1, 1, 1, 2))
    assert np.isnan(np.asarray(out)[0, 0, 0, 1])  # only NaN samples


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_regions_off_the_input_empty_and_inverted():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 1, 5, 6)).astype(np.float32)
    kw = dict(out_of_bounds_input_value=7.5, maximum_samples_per_output=2, **_LINEAR)
    one = np.zeros(1, np.uint32)
    # wholly off the input: every sample reads OutOfBoundsInputValue; a batch index past the batch likewise
    off = dmljax.roi_align(x, np.array([[20, 20, 30, 30]], np.float32), one, output_sizes=(1, 1, 2, 2), **kw)
    np.testing.assert_array_equal(np.asarray(off), np.full((1, 1, 2, 2), 7.5))
    bad = dmljax.roi_align(x, np.array([[0, 0, 3, 3]], np.float32), np.array([2], np.uint32),
                           output_sizes=(1, 1, 2, 2), **kw)
    np.testing.assert_array_equal(np.asarray(bad), np.full((1, 1, 2, 2), 7.5))
    # the bounds are the outer edges of the outermost pixels: -0.5 is on the input (the edge pixel), below is off
    edge = lambda lo: np.asarray(dmljax.roi_align1(
        x, np.array([[lo, 0, lo, 0]], np.float32), one, input_pixel_offset=0.0, output_pixel_offset=0.0,
        output_sizes=(1, 1, 1, 1), **kw))[0, 0, 0, 0]
    assert edge(-0.5) == x[0, 0, 0, 0] and edge(-0.5000001) == 7.5 and edge(5.5) == x[0, 0, 0, 5] and edge(5.51) == 7.5
    # empty: every output reads the one coordinate (here 2.25, 1.75 -> bilinear of pixels 1-2 x 1-2)
    pt = dmljax.roi_align(x, np.array([[2.75, 2.25, 2.75, 2.25]], np.float32), one, output_sizes=(1, 1, 3, 2), **kw)
    want = sum(wy * wx * x[0, 0, iy, ix] for iy, wy in ((1, 0.25), (2, 0.75)) for ix, wx in ((2, 0.75), (3, 0.25)))
    np.testing.assert_allclose(np.asarray(pt), np.full((1, 1, 3, 2), want), rtol=1e-6)
    # inverted: the mirror image of the upright region (the sample counts use |size|)
    up = dmljax.roi_align(x, np.array([[0.3, 0.8, 5.1, 4.4]], np.float32), one, output_sizes=(1, 1, 3, 4), **kw)
    inv = dmljax.roi_align(x, np.array([[5.1, 4.4, 0.3, 0.8]], np.float32), one, output_sizes=(1, 1, 3, 4), **kw)
    np.testing.assert_allclose(np.asarray(inv), np.asarray(up)[..., ::-1, ::-1], rtol=1e-5, atol=1e-6)


def test_nearest_neighbour_ties_go_to_even():
    x = np.array([[[[10, 11, 12, 13]]]], np.float32)
    one = np.zeros(1, np.uint32)
    at = lambda c: float(np.asarray(dmljax.roi_align1(
        x, np.array([[c, 0, c, 0]], np.float32), one, input_pixel_offset=0.0, output_pixel_offset=0.0,
        output_sizes=(1, 1, 1, 1), **_NEAREST))[0, 0, 0, 0])
    assert [at(0.5), at(1.5), at(2.5), at(1.4999999), at(2.5000002)] == [10, 12, 12, 11, 13]


def test_float16_is_averaged_in_float32_and_rounded_once():
    # Four nearest samples read 2048, 1, 1 and 1 (a region of width 4 into 1 output, Minimum 4): FLOAT32
    # sums 2051 and divides, 512.75, rounded once to FLOAT16: 513 (a tie, to even); FLOAT16 arithmetic
    # would lose every 1 (2048 + 1 = 2048) and give 512.
    x = np.array([[[[2048, 1, 1, 1]]]], np.float16)
    kw = dict(minimum_samples_per_output=4, maximum_samples_per_output=4, output_sizes=(1, 1, 1, 1), **_NEAREST)
    roi, one = np.array([[0, 0, 4, 1]], np.float16), np.zeros(1, np.uint32)
    assert float(dmljax.roi_align(x, roi, one, **kw)[0, 0, 0, 0]) == 513.0
    assert float(dmljax.roi_align(x, roi, one, allow_half_precision_computation=True, **kw)[0, 0, 0, 0]) in (512, 513)


def _tf_crop_and_resize(image, boxes, crop):
    """TensorFlow's CropAndResize (bilinear), NCHW, boxes [y1, x1, y2, x2] normalized, from its kernel."""
    _, c, h, w = image.shape
    out = np.zeros((len(boxes), c) + crop)
    for b, (y1, x1, y2, x2) in enumerate(boxes):
        for y in range(crop[0]):
            iy = y1 * (h - 1) + y * (y2 - y1) * (h - 1) / (crop[0] - 1) if crop[0] > 1 else 0.5 * (y1 + y2) * (h - 1)
            for xx in range(crop[1]):
                ix = x1 * (w - 1) + xx * (x2 - x1) * (w - 1) / (crop[1] - 1) if crop[1] > 1 else 0.5 * (x1 + x2) * (w - 1)
                t, bt, le, r = math.floor(iy), math.ceil(iy), math.floor(ix), math.ceil(ix)
                ly, lx = iy - t, ix - le
                top = image[0, :, t, le] + (image[0, :, t, r] - image[0, :, t, le]) * lx
                bottom = image[0, :, bt, le] + (image[0, :, bt, r] - image[0, :, bt, le]) * lx
                out[b, :, y, xx] = top + (bottom - top) * ly
    return out


def _tf_grad_boxes(grads, image, boxes, crop):
    """TensorFlow's CropAndResizeGradBoxes (bilinear), from its kernel: d/d[y1, x1, y2, x2]."""
    _, c, h, w = image.shape
    out = np.zeros((len(boxes), 4))
    for b, (y1, x1, y2, x2) in enumerate(boxes):
        hr = (h - 1) / (crop[0] - 1) if crop[0] > 1 else 0
        wr = (w - 1) / (crop[1] - 1) if crop[1] > 1 else 0
        for y in range(crop[0]):
            iy = y1 * (h - 1) + y * (y2 - y1) * hr if crop[0] > 1 else 0.5 * (y1 + y2) * (h - 1)
            for xx in range(crop[1]):
                ix = x1 * (w - 1) + xx * (x2 - x1) * wr if crop[1] > 1 else 0.5 * (x1 + x2) * (w - 1)
                t, bt, le, r = math.floor(iy), math.ceil(iy), math.floor(ix), math.ceil(ix)
                ly, lx = iy - t, ix - le
                for d in range(c):
                    tl, tr, bl, br = image[0, d, t, le], image[0, d, t, r], image[0, d, bt, le], image[0, d, bt, r]
                    gy = ((1 - lx) * (bl - tl) + lx * (br - tr)) * grads[b, d, y, xx]
                    gx = ((1 - ly) * (tr - tl) + ly * (br - bl)) * grads[b, d, y, xx]
                    if crop[0] > 1:
                        out[b, 0] += gy * (h - 1 - y * hr)
                        out[b, 2] += gy * y * hr
                    else:
                        out[b, 0] += gy * 0.5 * (h - 1)
                        out[b, 2] += gy * 0.5 * (h - 1)
                    if crop[1] > 1:
                        out[b, 1] += gx * (w - 1 - xx * wr)
                        out[b, 3] += gx * xx * wr
                    else:
                        out[b, 1] += gx * 0.5 * (w - 1)
                        out[b, 3] += gx * 0.5 * (w - 1)
    return out


@pytest.mark.parametrize("crop", tiers.fast_sample([pytest.param((3, 4)), pytest.param((1, 2))]))
def test_align_regions_to_corners_is_tensorflows_crop_and_resize(crop):
    # tensorflow-directml's CropAndResize: ROI_ALIGN1 with the boxes reordered to [x1, y1, x2, y2],
    # SpatialScale (W - 1, H - 1), offsets 0, one sample, AlignRegionsToCorners TRUE (boxes inside [0, 1]).
    rng = np.random.default_rng(3)
    image = rng.standard_normal((1, 2, 5, 6)).astype(np.float32)
    boxes = np.array([[0.11, 0.23, 0.87, 0.71], [0.62, 0.07, 0.31, 0.93], [0.43, 0.37, 0.43, 0.37]], np.float32)
    rois = boxes[:, [1, 0, 3, 2]]
    kw = {"reduction_function": "AVERAGE", "interpolation_mode": "LINEAR", "spatial_scale_x": 5.0, "spatial_scale_y": 4.0,
              "input_pixel_offset": 0.0, "output_pixel_offset": 0.0, "align_regions_to_corners": True}
    b = np.zeros(3, np.uint32)
    out = dmljax.roi_align1(image, rois, b, output_sizes=(3, 2) + crop, **kw)
    want = _tf_crop_and_resize(image.astype(np.float64), boxes.astype(np.float64), crop)
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-6, atol=2e-6)
    dy = rng.standard_normal((3, 2) + crop).astype(np.float32)
    _, droi = dmljax.roi_align_grad(dy, rois, b, image, **kw)
    want = _tf_grad_boxes(dy.astype(np.float64), image.astype(np.float64), boxes.astype(np.float64), crop)
    np.testing.assert_allclose(np.asarray(droi), want[:, [1, 0, 3, 2]], rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------------------ gradients
_CONFIGS = [
    {"reduction_function": "AVERAGE", "interpolation_mode": "LINEAR", "maximum_samples_per_output": 3,
     "out_of_bounds_input_value": 1.5},
    {"reduction_function": "MAX", "interpolation_mode": "LINEAR", "minimum_samples_per_output": 2,
     "maximum_samples_per_output": 2, "spatial_scale_y": 0.5},
]


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
@pytest.mark.parametrize("kw", _CONFIGS, ids=["average-linear", "max-linear"])  # nearest: the page's example
def test_jax_grad_uses_roi_align_grad(kw):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 2, 5, 6)).astype(np.float32)
    rois = np.array([[0.3, 0.6, 4.2, 3.9], [-1.2, 1.7, 2.9, 6.4], [5.3, 3.1, 1.1, 0.4]], np.float32)
    b = np.array([1, 0, 1], np.uint32)
    dy = rng.standard_normal((3, 2, 3, 2)).astype(np.float32)
    # (ROI_ALIGN_GRAD has no OutOfBoundsInputValue: it stands for a forward pass whose value is 0 where MAX
    # chooses among samples; AVERAGE's gradients do not depend on it)
    grad_kw = {k: v for k, v in kw.items() if k != "out_of_bounds_input_value"}
    f = lambda v, r: jnp.sum(dmljax.roi_align1(v, r, b, output_sizes=(3, 2, 3, 2), **kw) * dy)
    gx, gr = jax.grad(f, argnums=(0, 1))(x, rois)
    dx, droi = dmljax.roi_align_grad(dy, rois, b, x, **grad_kw)
    np.testing.assert_array_equal(np.asarray(gx), np.asarray(dx))
    np.testing.assert_array_equal(np.asarray(gr), np.asarray(droi))
    assert np.asarray(gx).any() and np.asarray(gr).any()


@pytest.mark.slow  # 12 s of finite differences; the kinks and the GRAD operator stay in the fast tier
def test_gradients_by_finite_differences_away_from_the_kinks():
    # Samples on quarter pixels (0.25 or 0.75 past a pixel centre: far from the floor/ceil switches and the
    # input's edges), one count per axis (Minimum = Maximum): the output is smooth in the regions' numbers
    # across the steps taken, and linear in the input.
    rng = np.random.default_rng(6)
    rois = np.array([[1.0, 0.5, 5.0, 3.5], [5.0, 4.5, 1.0, 1.5]], np.float64)  # samples every 1/2, on .25 and .75
    b = np.zeros(2, np.uint32)
    with jax.enable_x64(True):  # (MAX's gradient: the generated cases and test_jax_grad_uses_roi_align_grad)
        x = jnp.asarray(rng.standard_normal((1, 2, 6, 7)))
        dy = jnp.asarray(rng.standard_normal((2, 2, 3, 4)))

        def loss(v, r):
            out = dmljax.roi_align(v.astype(np.float32), r.astype(np.float32), b, reduction_function="AVERAGE",
                                   interpolation_mode="LINEAR", minimum_samples_per_output=2,
                                   maximum_samples_per_output=2, output_sizes=(2, 2, 3, 4))
            return jnp.sum(out.astype(np.float64) * dy)
        gx, gr = jax.grad(loss, argnums=(0, 1))(x, jnp.asarray(rois))
        for i in range(4):
            step = np.zeros_like(rois)
            step[:, i] = 0.01
            fd = (loss(x, rois + step) - loss(x, rois - step)) / 0.02
            np.testing.assert_allclose(float(fd), float(np.sum(np.asarray(gr)[:, i])), rtol=2e-3, atol=2e-3)
        v = jnp.asarray(rng.standard_normal(x.shape))
        fd = (loss(x + 0.01 * v, rois) - loss(x - 0.01 * v, rois)) / 0.02
        np.testing.assert_allclose(float(fd), float(jnp.sum(gx * v)), rtol=2e-3, atol=2e-3)


# ------------------------------------------------------------------------------ shapes, types, jit
@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_roi_and_index_shapes_uint64_and_one_trace():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 1, 4, 4)).astype(np.float32)
    rois = rng.uniform(0, 4, (3, 4)).astype(np.float32)
    kw = dict(output_sizes=(3, 1, 2, 2), maximum_samples_per_output=4, **_LINEAR)
    want = np.asarray(dmljax.roi_align(x, rois, np.array([1, 0, 1], np.uint32), **kw))
    for r_shape, b_shape in (((1, 3, 4), (1, 3)), ((1, 1, 3, 4), (1, 1, 1, 3))):
        got = dmljax.roi_align(x, rois.reshape(r_shape), np.array([1, 0, 1], np.uint32).reshape(b_shape), **kw)
        np.testing.assert_array_equal(np.asarray(got), want)
    with jax.enable_x64(True):
        got = dmljax.roi_align(x, rois, np.array([1, 0, 1], np.uint64), **kw)
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(dmljax.ValidationError, match="UINT64; supported: UINT32"), jax.enable_x64(True):
        dmljax.roi_align(x, rois, np.array([1, 0, 1], np.uint64), feature_level="4.1", **kw)
    # the sample counts depend on the values: one trace serves every region (the bound is static)
    f = jax.jit(lambda r: dmljax.roi_align(x, r, np.array([1, 0, 1], np.uint32), **kw))
    before = TRACE_COUNTS["DML_OPERATOR_ROI_ALIGN"]
    for scale in (0.1, 1.0, 10.0):
        f(rois * np.float32(scale))
    assert TRACE_COUNTS["DML_OPERATOR_ROI_ALIGN"] - before <= 1


def test_roi_align_messages():
    x = np.zeros((1, 2, 4, 4), np.float32)
    rois, b = np.zeros((3, 4), np.float32), np.zeros(3, np.uint32)
    base = {"reduction_function": "AVERAGE", "interpolation_mode": "LINEAR", "output_sizes": (3, 2, 2, 2)}
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.roi_align(x, rois, b, **{**base, "maximum_samples_per_output": 100})
    assert ("MaximumSamplesPerOutput (argument `maximum_samples_per_output`) is 100; at most 64: the samples per "
            "output element depend on the ROI values, so dmljax computes MaximumSamplesPerOutput of them per axis "
            "(a static bound under jit).\n    Tip: pass the largest count your regions need") in _msg(info)
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.roi_align(x, rois, b, **{**base, "minimum_samples_per_output": 0, "reduction_function": "SUM"})
    msg = _msg(info)
    assert ("ReductionFunction (argument `reduction_function`) is DML_REDUCE_FUNCTION_SUM; "
            "DML_REDUCE_FUNCTION_AVERAGE or DML_REDUCE_FUNCTION_MAX (the page's two).") in msg
    assert "MinimumSamplesPerOutput (argument `minimum_samples_per_output`) is 0; at least 1" in msg
    with pytest.raises(dmljax.ValidationError, match=r"is 3, above MaximumSamplesPerOutput \(2\)"):
        dmljax.roi_align(x, rois, b, minimum_samples_per_output=3, maximum_samples_per_output=2, **base)
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.roi_align(x, np.zeros((2, 3, 4), np.float32), np.zeros((2, 3), np.uint32), **base)
    msg = _msg(info)
    assert ("ROITensor (argument `roi`) has Sizes [2, 3, 4]; {NumROIs, 4}, {1, NumROIs, 4} or {1, 1, NumROIs, 4}: "
            "[x1, y1, x2, y2] per region.") in msg
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.roi_align(x, rois, np.zeros((2, 3), np.uint32), **{**base, "output_sizes": (3, 1, 2, 2)})
    msg = _msg(info)
    assert ("BatchIndicesTensor (argument `batch_indices`) has Sizes [2, 3]; {NumROIs} = [3] with up to three "
            "leading 1s, one index per region.") in msg
    assert ("OutputTensor (argument `output_sizes`) has Sizes [3, 1, 2, 2]; {NumROIs, ChannelCount, OutputHeight, "
            "OutputWidth}: [3, 2, OutputHeight, OutputWidth].") in msg
    with pytest.raises(dmljax.ValidationError, match="introduced in DML_FEATURE_LEVEL_4_0"):
        dmljax.roi_align1(x, rois, b, feature_level="3.1", **base)


def test_roi_align_grad_messages():
    dy, rois, b = np.zeros((3, 2, 2, 2), np.float32), np.zeros((3, 4), np.float32), np.zeros(3, np.uint32)
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.roi_align_grad(dy, rois, b, reduction_function="MAX", interpolation_mode="LINEAR")
    msg = _msg(info)
    assert ("InputTensor (argument `input`) is missing with ReductionFunction MAX; the forward input: MAX's "
            "gradient goes to the sample the forward pass chose.") in msg
    assert ("OutputGradientTensor (argument `output_gradient_sizes`) has no Sizes; output_gradient_sizes= (the "
            "forward input's Sizes) when there is no InputTensor.") in msg
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.roi_align_grad(dy, rois, b, np.zeros((1, 3, 4, 4), np.float32), output_gradient_sizes=(1, 3, 4, 5),
                              **_LINEAR)
    msg = _msg(info)
    assert ("OutputGradientTensor (argument `output_gradient_sizes`) has Sizes [1, 3, 4, 5]; the InputTensor's, "
            "[1, 3, 4, 4].") in msg
    assert ("InputGradientTensor (argument `input_gradient`) has Sizes [3, 2, 2, 2]; the forward output's "
            "{NumROIs, ChannelCount, OutputHeight, OutputWidth}: [3, 3, OutputHeight, OutputWidth].") in msg
