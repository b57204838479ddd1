"""The resample family by hand: the RESAMPLE_GRAD and RESAMPLE_GRAD1 pages' example verbatim (forward
and backward), each *_GRAD operator as the rule jax.grad of its forward operators uses, the pages'
remarks (RESAMPLE1 = RESAMPLE at the pixel centers, RESAMPLE3 = RESAMPLE2 without antialiasing, and
RESAMPLE2's remark, which holds only as dmljax reads it), ties, rounding directions, the Scales
against the output Sizes (cropped, clamped), antialiasing's condition, FLOAT16 in FLOAT32,
INT8/UINT8 rounding, infinities, UPSAMPLE_2D and its DxDispatch model, and the messages."""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.cli import main
from dmljax._src.ops.resample import resample as module
from tests import tiers
from tests.reference.resample import resample as ref

MODEL = Path(__file__).resolve().parents[4] / "shared" / "dxdispatch" / "models" / "dml_upsample_2d.json"
NN, LIN = "NEAREST_NEIGHBOR", "LINEAR"


def _arr(x):
    return np.asarray(x)


# ------------------------------------------------------------------------------ the pages' example
def test_resample_grad_page_example():
    # "a DML_RESAMPLE1_OPERATOR_DESC that performs a nearest-neighbor scaling of 1.5x in the width,
    # and 0.5x in the height": [[1, 2], [3, 4]] -> [1, 1, 2]; ResampleGrad [4, 5, 6] -> [[9, 6], [0, 0]]
    x = np.array([[1, 2], [3, 4]], np.float32)
    dy = np.array([[4, 5, 6]], np.float32)
    want_y, want_dx = [[1, 1, 2]], [[9, 6], [0, 0]]
    y = dmljax.resample1(x, interpolation_mode=NN, scales=(0.5, 1.5))
    np.testing.assert_array_equal(_arr(y), want_y)
    np.testing.assert_array_equal(_arr(dmljax.resample(x, interpolation_mode=NN, scales=(0.5, 1.5))), want_y)
    got = dmljax.resample_grad(dy, interpolation_mode=NN, scales=(0.5, 1.5), output_gradient_sizes=(2, 2))
    np.testing.assert_array_equal(_arr(got), want_dx)
    _, vjp = jax.vjp(lambda v: dmljax.resample1(v, interpolation_mode=NN, scales=(0.5, 1.5)), x)
    np.testing.assert_array_equal(_arr(vjp(dy)[0]), want_dx)
    # RESAMPLE_GRAD1's page: the same example for RESAMPLE2 (its coordinates (0.5 and 0.5) rounded down)
    y2 = dmljax.resample2(x, interpolation_mode=NN, rounding_direction="DECREASING", scales=(0.5, 1.5))
    np.testing.assert_array_equal(_arr(y2), want_y)
    got = dmljax.resample_grad1(dy, interpolation_mode=NN, rounding_direction="DECREASING", scales=(0.5, 1.5),
                                output_gradient_sizes=(2, 2))
    np.testing.assert_array_equal(_arr(got), want_dx)
    # rounded up instead, the other elements are chosen
    y2 = dmljax.resample2(x, interpolation_mode=NN, rounding_direction="INCREASING", scales=(0.5, 1.5))
    np.testing.assert_array_equal(_arr(y2), [[3, 4, 4]])


# ------------------------------------------------------------------------------ *_GRAD is jax.grad's rule
_FORWARDS = [  # (forward, its keywords, its *_GRAD, that one's keywords, the DataType tried)
    ("resample", {}, "resample_grad", {}, np.float32),
    ("resample1", {"input_pixel_offsets": (0.25, -0.5, 0.0), "output_pixel_offsets": (0.0, 0.3, -0.5)},
     "resample_grad", {"input_pixel_offsets": (0.25, -0.5, 0.0), "output_pixel_offsets": (0.0, 0.3, -0.5)}, np.float16),
    ("resample2", {"rounding_direction": "DECREASING"}, "resample_grad1", {"rounding_direction": "DECREASING"},
     np.float32),
    ("resample3", {"rounding_direction": "INCREASING", "antialiased": False}, "resample_grad1",
     {"rounding_direction": "INCREASING"}, np.float16),
]


@pytest.mark.parametrize("mode", [NN, LIN])
@pytest.mark.parametrize("fwd,fkw,grad,gkw,dtype", tiers.fast_sample(_FORWARDS, keep=2, key="grad"),
                         ids=[f[0] for f in _FORWARDS])
def test_jax_grad_is_the_grad_operator(fwd, fkw, grad, gkw, dtype, mode, rng):
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    scales = (2.5, 0.5, 1.5)
    f = getattr(dmljax, fwd)
    y, vjp = jax.vjp(lambda v: f(v, interpolation_mode=mode, scales=scales, **fkw), x)
    dy = rng.standard_normal(y.shape).astype(dtype)
    want = getattr(dmljax, grad)(dy, interpolation_mode=mode, scales=scales, output_gradient_sizes=x.shape, **gkw)
    got = vjp(dy)[0]
    assert got.dtype == dtype
    np.testing.assert_array_equal(_arr(got).view(np.uint8), _arr(want).view(np.uint8))  # the same bits


@pytest.mark.parametrize("mode", [NN, LIN])
def test_upsample_2d_gradient_is_resample_grads(mode, rng):
    x = rng.standard_normal((1, 2, 2, 3, 4)).astype(np.float32)
    y, vjp = jax.vjp(lambda v: dmljax.upsample_2d(v, scale_size=(3, 2), interpolation_mode=mode), x)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    # RESAMPLE_GRAD for the 4-D view (the depth folded into the channels): scales 1, 1, 2, 3
    want = dmljax.resample_grad(dy.reshape(1, 4, 6, 12), interpolation_mode=mode, scales=(1, 1, 2, 3),
                                output_gradient_sizes=(1, 4, 3, 4))
    np.testing.assert_array_equal(_arr(vjp(dy)[0]), _arr(want).reshape(x.shape))


@pytest.mark.parametrize("mode", [NN, LIN])
def test_grad_operators_are_linear_and_their_gradient_is_the_forward(mode, rng):
    dy = rng.standard_normal((6, 3)).astype(np.float32)
    kw = dict(interpolation_mode=mode, scales=(1.5, 0.75))
    g, vjp = jax.vjp(lambda v: dmljax.resample_grad(v, output_gradient_sizes=(4, 4), **kw), dy)
    cot = rng.standard_normal(g.shape).astype(np.float32)
    np.testing.assert_allclose(_arr(vjp(cot)[0]), _arr(dmljax.resample1(cot, output_sizes=(6, 3), **kw)),
                               rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------ the remarks
@pytest.mark.parametrize("mode", tiers.fast_sample([LIN, NN]))
def test_resample1_at_the_pixel_centers_is_resample(mode, rng):
    x = rng.standard_normal((2, 3, 7, 5)).astype(np.float32)
    for scales in [(1, 1, 2, 2), (1.0, 0.5, 0.3, 3.7)]:
        a = dmljax.resample(x, interpolation_mode=mode, scales=scales)
        b = dmljax.resample1(x, interpolation_mode=mode, scales=scales, input_pixel_offsets=(0.5,) * 4,
                             output_pixel_offsets=(-0.5,) * 4)
        c = dmljax.resample1(x, interpolation_mode=mode, scales=scales)  # the defaults
        np.testing.assert_array_equal(_arr(a), _arr(b))
        np.testing.assert_array_equal(_arr(a), _arr(c))


@pytest.mark.parametrize("mode", [NN, LIN])
@pytest.mark.parametrize("direction", tiers.fast_sample(["INCREASING", "DECREASING"]))
def test_resample3_without_antialiasing_is_resample2(mode, direction, rng):
    x = rng.standard_normal((3, 9, 6)).astype(np.float32)
    kw = dict(interpolation_mode=mode, rounding_direction=direction, scales=(0.6, 0.3, 1.7),
              input_pixel_offsets=(0.5, 0.25, 0.0), output_pixel_offsets=(-0.5, 0.0, 0.1))
    a = dmljax.resample2(x, **kw)
    np.testing.assert_array_equal(_arr(dmljax.resample3(x, **kw)), _arr(a))
    # antialiasing: LINEAR only, and only where 1 / Scale > 2 (here the second axis)
    aa = _arr(dmljax.resample3(x, antialiased=True, **kw))
    if mode == NN:
        np.testing.assert_array_equal(aa, _arr(a))
    else:
        assert not np.array_equal(aa, _arr(a))
        kw["scales"] = (0.6, 0.5, 1.7)  # 1 / 0.5 = 2: not above 2, so no filter at all
        np.testing.assert_array_equal(_arr(dmljax.resample3(x, antialiased=True, **kw)), _arr(dmljax.resample2(x, **kw)))


def test_resample2_remark_holds_with_input_offsets_only():
    # RESAMPLE1's nearest element (a tie to the lower index) is RESAMPLE2 rounding up from
    # InputPixelOffsets + 0.5 exactly; DECREASING from InputPixelOffsets - 0.5 is it away from ties.
    # The remark's own words (DECREASING, OutputPixelOffsets an additional -0.5) pick an element
    # that is not the nearest once the scale is not 1: a page slip.
    x = np.arange(40, dtype=np.float32)
    for s in (0.5, 0.7, 1.5):
        r1 = _arr(dmljax.resample1(x, interpolation_mode=NN, scales=(s,)))
        up = dmljax.resample2(x, interpolation_mode=NN, rounding_direction="INCREASING", scales=(s,),
                              input_pixel_offsets=(1.0,))
        np.testing.assert_array_equal(_arr(up), r1)
        down = _arr(dmljax.resample2(x, interpolation_mode=NN, rounding_direction="DECREASING", scales=(s,),
                                     input_pixel_offsets=(0.0,)))
        coord = (np.arange(len(r1)) + 0.5) / np.float64(np.float32(s)) - 0.5
        ties = coord % 1 == 0.5  # exactly (0.7's float32 value puts output 3 just past 4.5)
        np.testing.assert_array_equal(down[~ties], r1[~ties])
        assert (down[ties] == r1[ties] + 1).all()
    literal = _arr(dmljax.resample2(x[:10], interpolation_mode=NN, rounding_direction="DECREASING", scales=(0.3,),
                                    output_pixel_offsets=(-1.0,)))
    # output 0's center maps to 1.17 in the input's: element 1 is nearest; the literal remark takes 2
    assert _arr(dmljax.resample1(x[:10], interpolation_mode=NN, scales=(0.3,)))[0] == 1 and literal[0] == 2


# ------------------------------------------------------------------------------ ties and rounding
def test_nearest_ties_and_rounding_directions():
    x = np.array([10, 11, 12, 13], np.float32)
    # scale 0.5 at the pixel centers: outputs at 0.5 and 2.5, both ties
    np.testing.assert_array_equal(_arr(dmljax.resample(x, interpolation_mode=NN, scales=(0.5,))), [10, 12])
    for direction, want in (("DECREASING", [10, 12]), ("INCREASING", [11, 13])):
        got = dmljax.resample2(x, interpolation_mode=NN, rounding_direction=direction, scales=(0.5,))
        np.testing.assert_array_equal(_arr(got), want)
    # not a tie: the nearest (0.4 at the pixel centers: output 0 at 0.75)
    np.testing.assert_array_equal(_arr(dmljax.resample(x, interpolation_mode=NN, scales=(0.5,),
                                                       output_sizes=(1,))), [10])
    np.testing.assert_array_equal(_arr(dmljax.resample(x[:3], interpolation_mode=NN, scales=(0.4,))), [11])
    # upsampling by whole factors has no ties: each element repeated
    np.testing.assert_array_equal(_arr(dmljax.resample(x, interpolation_mode=NN, scales=(3.0,))), np.repeat(x, 3))


def test_rounding_direction_defaults_to_increasing():
    x = np.array([10, 11, 12, 13], np.float32)
    a = dmljax.resample2(x, interpolation_mode=NN, scales=(0.5,))
    np.testing.assert_array_equal(_arr(a), [11, 13])
    assert module.RESAMPLE2.params[1].default is dmljax.AxisDirection.INCREASING


# ------------------------------------------------------------------------------ Scales and output Sizes
def test_output_sizes_crop_and_clamp():
    x = np.array([1, 2, 3], np.float32)
    full = _arr(dmljax.resample(x, interpolation_mode=LIN, scales=(2.0,)))
    np.testing.assert_array_equal(full, [1, 1.25, 1.75, 2.25, 2.75, 3])
    # a smaller output: cropped (the same coordinates); a larger one: the edge clamped
    np.testing.assert_array_equal(_arr(dmljax.resample(x, interpolation_mode=LIN, scales=(2.0,), output_sizes=(4,))),
                                  full[:4])
    np.testing.assert_array_equal(_arr(dmljax.resample(x, interpolation_mode=LIN, scales=(2.0,), output_sizes=(9,))),
                                  np.concatenate([full, [3, 3, 3]]))
    # the scale, not the sizes, places the samples
    np.testing.assert_array_equal(_arr(dmljax.resample(x, interpolation_mode=NN, scales=(1.0,), output_sizes=(6,))),
                                  [1, 2, 3, 3, 3, 3])


def test_default_output_sizes_are_floor_of_size_times_scale():
    x = np.zeros((10, 3, 7), np.float32)
    # 10 * float32(0.7) = 6.99999988...: 6; 3 * float32(1/3) = 1.0000000298: 1; 7 * 2.5 = 17.5: 17
    assert dmljax.resample(x, interpolation_mode=NN, scales=(0.7, 1 / 3, 2.5)).shape == (6, 1, 17)
    assert module._output_size(3, float(np.float32(2 / 3))) == 2


def test_resample_at_scale_one_is_the_identity():
    tiny = np.float32(1e-40)  # a FLOAT32 denormal
    x = np.array([tiny, -2.5, np.inf, np.nan, -0.0], np.float32)
    nn = _arr(dmljax.resample(x, interpolation_mode=NN, scales=(1.0,)))
    np.testing.assert_array_equal(nn.view(np.uint32), x.view(np.uint32))  # data movement: bits kept
    lin = _arr(dmljax.resample(x, interpolation_mode=LIN, scales=(1.0,)))
    np.testing.assert_array_equal(lin[1:3], x[1:3])
    assert np.isnan(lin[3]) and lin[0] == 0 and np.signbit(lin[4])  # math: the denormal reads as 0


def test_infinities_stay_where_they_are_read():
    x = np.array([1, np.inf, 3, 4], np.float32)
    # an output exactly on an element reads it alone (no 0 * inf = NaN from its neighbour)
    y = _arr(dmljax.resample1(x, interpolation_mode=LIN, scales=(2.0,), input_pixel_offsets=(0,),
                              output_pixel_offsets=(0,)))
    np.testing.assert_array_equal(y, [1, np.inf, np.inf, np.inf, 3, 3.5, 4, 4])
    y = _arr(dmljax.resample(x, interpolation_mode=LIN, scales=(0.5,)))  # (1 + inf) / 2, (3 + 4) / 2
    np.testing.assert_array_equal(y, [np.inf, 3.5])


# ------------------------------------------------------------------------------ antialiasing
def test_antialiasing_by_hand_and_against_the_reference(rng):
    x = np.arange(8, dtype=np.float32)
    # x = 1.5 for output 0 at Scale 0.25: |i - 1.5| < 4, weights 1 - |i - 1.5| / 4 (sum 4), i < 0 read x[0]
    got = _arr(dmljax.resample3(x, interpolation_mode=LIN, scales=(0.25,), antialiased=True))
    w = 1 - np.abs(np.arange(-2, 6) - 1.5) / 4
    want0 = float(np.sum(w * np.clip(np.arange(-2, 6), 0, 7))) / 4
    assert got[0] == want0 == 1.65625
    flat = dmljax.resample3(np.full(50, 5, np.float32), interpolation_mode=LIN, scales=(0.1,), antialiased=True)
    np.testing.assert_array_max_ulp(_arr(flat), np.full(5, 5, np.float32), maxulp=2)  # normalized weights
    # wide filters, far beyond the edges: the edge weights are summed in closed form
    for n, s, size in ((300, 0.01, 7), (1, 0.2, 3)):
        v = rng.standard_normal(n).astype(np.float32)
        got = dmljax.resample3(v, interpolation_mode=LIN, scales=(s,), antialiased=True, output_sizes=(size,),
                               input_pixel_offsets=(0.3,), output_pixel_offsets=(-1.25,))
        want = ref.resample3(v, LIN, (s,), antialiased=True, output_sizes=(size,), input_pixel_offsets=(0.3,),
                             output_pixel_offsets=(-1.25,))[0]
        np.testing.assert_allclose(_arr(got), want, rtol=2e-6, atol=1e-6)


# ------------------------------------------------------------------------------ types
def test_float16_is_computed_in_float32_and_rounded_once():
    x = np.array([1.0, 1.0 + 2.0 ** -10], np.float16)
    # output 3 is (2/3) * 1 + (1/3) * (1 + 2^-10) = 1.000651...: rounded once, 1 + 2^-10
    y = _arr(dmljax.resample(x, interpolation_mode=LIN, scales=(3.0,)))
    np.testing.assert_array_equal(y, np.array([1, 1, 1, 1.0009765625, 1.0009765625, 1.0009765625], np.float16))
    half = _arr(dmljax.resample(x, interpolation_mode=LIN, scales=(3.0,), allow_half_precision_computation=True))
    assert half.dtype == np.float16 and half[3] == 1.0  # FLOAT16 arithmetic: allowed to differ


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_integer_linear_rounds_halves_to_even(dtype):
    sign = -1 if dtype == np.int8 else 1
    x = (sign * np.array([1, 2, 3, 4, 100, 127])).astype(dtype)
    y = _arr(dmljax.resample(x, interpolation_mode=LIN, scales=(0.5,)))
    assert y.dtype == dtype
    np.testing.assert_array_equal(y, sign * np.array([2, 4, 114]))  # 1.5 -> 2, 3.5 -> 4, 113.5 -> 114
    nn = _arr(dmljax.resample(x, interpolation_mode=NN, scales=(1.5,)))
    np.testing.assert_array_equal(nn, x[[0, 0, 1, 2, 2, 3, 4, 4, 5]])


def test_integer_types_need_feature_level_6_2():
    x = np.zeros((2, 3, 4, 5), np.uint8)
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.resample2(x, interpolation_mode=LIN, scales=(1, 1, 1, 1), feature_level="5.1")
    assert ("  InputTensor (argument `input`) has DataType UINT8; supported: FLOAT32, FLOAT16.\n"
            "    Tip: UINT8 is supported from DML_FEATURE_LEVEL_6_2.") in str(e.value)
    assert dmljax.resample2(x, interpolation_mode=LIN, scales=(1, 1, 1, 1), feature_level="6.2").dtype == np.uint8
    with pytest.raises(dmljax.ValidationError, match="has DataType UINT8; supported: FLOAT32, FLOAT16"):
        dmljax.resample_grad(x, interpolation_mode=LIN, scales=(1, 1, 1, 1), output_gradient_sizes=x.shape)


# ------------------------------------------------------------------------------ the formula's paths
def test_gather_patterns_and_the_scatter_fallback(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    # a repeat (NN x3), a strided slice (NN x0.5 rounded down), a general gather (NN x0.7)
    for scales, direction in (((3.0, 1.0), "INCREASING"), ((1.0, 0.5), "DECREASING"), ((0.7, 1.3), "DECREASING")):
        got = dmljax.resample2(x, interpolation_mode=NN, rounding_direction=direction, scales=scales)
        np.testing.assert_array_equal(_arr(got), ref.resample3(x, NN, scales, rounding_direction=direction)[0])
    # more than 64 readers per element: the transpose scatters
    dy = rng.standard_normal((2, 300)).astype(np.float32)
    got = dmljax.resample_grad(dy, interpolation_mode=LIN, scales=(1.0, 100.0), output_gradient_sizes=(2, 3))
    assert module._readers(module.axis_taps(3, 300, dmljax.InterpolationMode.LINEAR, "nearest", 100.0, 0.5,
                                            -0.5)).scatter
    want = ref.resample_grad(dy, LIN, (1.0, 100.0), (2, 3))[0]
    np.testing.assert_allclose(_arr(got), want, rtol=1e-5)


def test_jit_and_vmap(rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    f = lambda v: dmljax.resample(v, interpolation_mode=LIN, scales=(1.0, 2.0, 0.6))  # noqa: E731
    np.testing.assert_array_equal(_arr(jax.jit(f)(x)), _arr(f(x)))
    g = lambda v: dmljax.resample(v, interpolation_mode=LIN, scales=(2.0, 0.6))  # noqa: E731
    np.testing.assert_array_equal(_arr(jax.vmap(g)(x)), _arr(f(x)))


# ------------------------------------------------------------------------------ UPSAMPLE_2D
_MODEL_VALUES = [1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4]


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_upsample_2d_values():
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    for size in ({"Width": 2, "Height": 2}, (2, 2), dmljax.Size2D(2, 2), dmljax.Size2D(width=2, height=2)):
        y = _arr(dmljax.upsample_2d(x, scale_size=size, interpolation_mode=LIN))
        np.testing.assert_array_equal(y.ravel(), _MODEL_VALUES)
    y = _arr(dmljax.upsample_2d(x, scale_size=(1, 3), interpolation_mode=NN))  # width 1, height 3
    np.testing.assert_array_equal(y[0, 0], [[1, 2], [1, 2], [1, 2], [3, 4], [3, 4], [3, 4]])
    # five dimensions: the depth is never interpolated
    x5 = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 2, 2)
    y5 = _arr(dmljax.upsample_2d(x5, scale_size=(2, 2), interpolation_mode=LIN))
    assert y5.shape == (1, 1, 2, 4, 4)
    for d in range(2):
        np.testing.assert_array_equal(y5[0, 0, d], _arr(dmljax.upsample_2d(x5[:, :, d], scale_size=(2, 2),
                                                                           interpolation_mode=LIN))[0, 0])


@tiers.needs_shared
def test_upsample_2d_dxdispatch_model(capsys):
    status = main(["run", str(MODEL), "--no-timing"])
    out = capsys.readouterr().out
    assert status == 0
    line = "Resource 'output': " + ", ".join("%g" % v for v in _MODEL_VALUES)
    assert line in out.splitlines()


def test_upsample_2d_from_a_desc():
    op = dmljax.compile_operator("UPSAMPLE_2D", {
        "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 6]},
        "ScaleSize": {"Width": 3, "Height": 2}, "InterpolationMode": "DML_INTERPOLATION_MODE_NEAREST_NEIGHBOR"})
    assert op is not None
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor.Sizes are \[1, 1, 4, 4\]; the operator produces "
                                                     r"Sizes \[1, 1, 4, 6\] here"):
        dmljax.compile_operator("UPSAMPLE_2D", {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 2, 2]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 1, 4, 4]},
            "ScaleSize": {"Width": 3, "Height": 2}, "InterpolationMode": "NEAREST_NEIGHBOR"})


def test_resample2_from_a_desc_with_counts():
    desc = {"InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4, 2]},
            "InterpolationMode": "LINEAR", "RoundingDirection": "DML_AXIS_DIRECTION_DECREASING",
            "DimensionCount": 2, "Scales": [2.0, 0.5], "InputPixelOffsets": [0.5, 0.5],
            "OutputPixelOffsets": [-0.5, -0.5]}
    op = dmljax.compile_operator("RESAMPLE2", desc)
    x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    out = op(InputTensor=x.ravel(), OutputTensor=jnp.zeros(8, jnp.float32))["OutputTensor"]
    want = dmljax.resample2(x, interpolation_mode=LIN, scales=(2.0, 0.5), output_sizes=(4, 2))
    np.testing.assert_array_equal(_arr(out).ravel(), _arr(want).ravel())
    with pytest.raises(dmljax.ValidationError, match="DimensionCount is 3, but Scales has 2 entries"):
        dmljax.compile_operator("RESAMPLE2", {**desc, "DimensionCount": 3})


# ------------------------------------------------------------------------------ messages
def _message(fn, *args, **kwargs):
    with pytest.raises(dmljax.ValidationError) as e:
        fn(*args, **kwargs)
    return str(e.value)


def test_messages():
    x = np.zeros((2, 3), np.float32)
    head = "resample1 (DML_OPERATOR_RESAMPLE1) at DML_FEATURE_LEVEL_"
    msg = _message(dmljax.resample1, x, interpolation_mode=LIN, scales=(1.0,))
    assert msg.startswith(head)
    assert ("  Scales (argument `scales`) has 1 entry; DimensionCount (2) entries, one per dimension of the "
            "InputTensor (Sizes [2, 3]).") in msg
    msg = _message(dmljax.resample1, x, interpolation_mode=LIN, scales=(0.0, float(np.float32(1e-45))),
                   input_pixel_offsets=(0.5, float("nan")))
    assert ("  Scales[0] (argument `scales`) is 0.0; a positive, finite FLOAT (a FLOAT32 denormal reads as 0).\n"
            "    Tip: a scale > 1 scales up, < 1 down.") in msg
    assert "  Scales[1] (argument `scales`) is 1.401298464324817e-45; a positive, finite FLOAT" in msg
    assert "  InputPixelOffsets[1] (argument `input_pixel_offsets`) is nan; a finite FLOAT." in msg
    msg = _message(dmljax.resample1, x, interpolation_mode=LIN, scales=(1.0, 1.0), output_sizes=(2, 3, 1))
    assert ("  OutputTensor (argument `output_sizes`) has 3 dimensions (Sizes [2, 3, 1]); the InputTensor's "
            "DimensionCount, 2 (the page: the same DimensionCount).") in msg
    msg = _message(dmljax.resample, x, interpolation_mode=NN, scales=(0.4, 1.0))
    assert ("  OutputTensor (argument `output_sizes`) would have Sizes [0, 3] (floor(InputSize * Scale) of Sizes "
            "[2, 3]); sizes of at least 1.\n    Tip: give output_sizes= (any sizes: the scales need not match them), "
            "or larger scales.") in msg
    assert dmljax.resample(x, interpolation_mode=NN, scales=(0.4, 1.0), output_sizes=(1, 3)).shape == (1, 3)
    msg = _message(dmljax.resample2, x, interpolation_mode="CUBIC", rounding_direction="UP", scales=(1.0, 1.0))
    assert ("  InterpolationMode (argument `interpolation_mode`) is 'CUBIC'; valid: DML_INTERPOLATION_MODE_NEAREST_"
            "NEIGHBOR (0), DML_INTERPOLATION_MODE_LINEAR (1).") in msg
    assert ("  RoundingDirection (argument `rounding_direction`) is 'UP'; valid: DML_AXIS_DIRECTION_INCREASING (0), "
            "DML_AXIS_DIRECTION_DECREASING (1).") in msg
    msg = _message(dmljax.resample_grad, x, interpolation_mode=LIN, scales=(1.0, 1.0), output_gradient_sizes=(2,))
    assert ("  OutputGradientTensor (argument `output_gradient_sizes`) has 1 dimensions (Sizes [2]); the "
            "InputGradientTensor's DimensionCount, 2 (the page: the same DimensionCount).") in msg
    with pytest.raises(TypeError, match="output_gradient_sizes"):
        dmljax.resample_grad(x, interpolation_mode=LIN, scales=(1.0, 1.0))


def test_upsample_2d_messages():
    x = np.zeros((1, 1, 2, 3), np.float32)
    msg = _message(dmljax.upsample_2d, x, scale_size=(0, 2), interpolation_mode=LIN)
    assert "  ScaleSize.Width (argument `scale_size`) is 0; 0 < ScaleSize.Width <= UINT_MAX / InputWidth = 1431655765." in msg
    msg = _message(dmljax.upsample_2d, x, scale_size=(1, 2**31), interpolation_mode=LIN)
    assert ("  ScaleSize.Height (argument `scale_size`) is 2147483648; 0 < ScaleSize.Height <= UINT_MAX / "
            "InputHeight = 2147483647.") in msg
    msg = _message(dmljax.upsample_2d, x, scale_size=(-1, 2.5), interpolation_mode=LIN)
    assert "  ScaleSize.Width (argument `scale_size`) is -1; a UINT, 0 to 4294967295." in msg
    assert "  ScaleSize.Height (argument `scale_size`) is 2.5 (float); a UINT, 0 to 4294967295." in msg
    msg = _message(dmljax.upsample_2d, x, scale_size={"Width": 2}, interpolation_mode=LIN)
    assert "ScaleSize (argument `scale_size`) is {'Width': 2}; a DML_SIZE_2D mapping has exactly the members" in msg
    msg = _message(dmljax.upsample_2d, np.zeros((2, 3, 4), np.float32), scale_size=(2, 2), interpolation_mode=LIN)
    assert "InputTensor (argument `input`) has 3 dimensions (Sizes [2, 3, 4]); supported: 4 to 5." in msg
