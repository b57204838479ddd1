"""CONVOLUTION_INTEGER and QUANTIZED_LINEAR_CONVOLUTION by hand: ONNX's backend node tests for
ConvInteger and QLinearConv, every INT8/UINT8 value pair through a 1 x 1 convolution against the
exact reference, the padding with a zero point, groups, per-channel zero points and scales, the
INT32 bound, saturation and halves, scales of 0, NaN and inf, the lowered HLO's one integer
convolution, the pieces that keep cuDNN's FLOAT32 sums exact, and jit, grad and vmap."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.ops.convolution import integer_convolution as ic
from tests import tiers
from tests.reference.convolution.integer_convolution import accumulate, quantized_linear_convolution as reference

TYPES = (np.int8, np.uint8)


def _range(t):
    i = np.iinfo(t)
    return np.arange(int(i.min), int(i.max) + 1)


def _ones(shape=(1, 1, 1, 1), value=1.0):
    return np.full(shape, value, np.float32)


# ---------------------------------------------------------------------------------- ONNX's node tests
@functools.lru_cache(maxsize=None)
def _node_cases(op_type):
    """ONNX's backend node tests of ``op_type`` (every node test is built once per process: the
    collection imports them all, about 5 s)."""
    import warnings

    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():  # other operators' cases compute infinities on the way
        warnings.simplefilter("ignore", RuntimeWarning)
        cases = collect_testcases(None)
    return tuple(c for c in cases if c.model.graph.node[0].op_type == op_type)


def _onnx_call(node, arrays):
    """An ONNX ConvInteger or QLinearConv node as ONNX Runtime's DirectML provider maps it:
    scalars and 1-D per-channel tensors as {1, C, 1, 1} (per tensor: all sizes 1), pads as
    StartPadding and EndPadding, the attributes by name."""
    import onnx
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    ins = dict(zip(node.input, arrays))
    x = ins[node.input[0]]
    d = x.ndim - 2
    kw = {"group_count": attrs.get("group", 1)}
    if "pads" in attrs:
        kw["start_padding"], kw["end_padding"] = tuple(attrs["pads"][:d]), tuple(attrs["pads"][d:])
    for name, key in (("strides", "strides"), ("dilations", "dilations")):
        if name in attrs:
            kw[key] = tuple(attrs[name])
    assert attrs.get("auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET")

    def channels(name):
        v = ins.get(name)
        return None if v is None else np.asarray(v).reshape((1, -1) + (1,) * d)

    names = list(node.input) + [""] * 9
    if node.op_type == "ConvInteger":
        return dmljax.convolution_integer(x, channels(names[2] or None), ins[names[1]], channels(names[3] or None), **kw)
    bias = ins.get(names[8]) if names[8] else None
    return dmljax.quantized_linear_convolution(
        x, channels(names[1]), channels(names[2]), ins[names[3]], channels(names[4]), channels(names[5]),
        None if bias is None else bias.reshape((1, -1) + (1,) * d), channels(names[6]), channels(names[7]), **kw)


@pytest.mark.slow  # 7 s each on 2 cores; the fast tier checks both operators by their generated cases
@pytest.mark.parametrize("op_type", ["ConvInteger", "QLinearConv"])
def test_onnx_node_tests(op_type):
    cases = _node_cases(op_type)
    assert cases, f"ONNX has no node test of {op_type}"
    for case in cases:
        node = case.model.graph.node[0]
        for inputs, outputs in case.data_sets:
            got = np.asarray(_onnx_call(node, [np.asarray(a) for a in inputs]))
            want = np.asarray(outputs[0])
            assert got.dtype == want.dtype and got.shape == want.shape, case.name
            np.testing.assert_array_equal(got, want, err_msg=case.name)


# ---------------------------------------------------------------------------------- every value pair
def _pairs(tx, tw):
    """Every input value against every filter value: the input's values along a spatial
    dimension, one output channel per filter value (a 1 x 1 filter)."""
    x = _range(tx).astype(tx).reshape(1, 1, -1)
    w = _range(tw).astype(tw).reshape(-1, 1, 1)
    return x, w


@pytest.mark.parametrize("tw", tiers.fast_sample(TYPES), ids=lambda t: t.__name__)
@pytest.mark.parametrize("tx", TYPES, ids=lambda t: t.__name__)
def test_every_value_pair_is_exact(tx, tw):
    x, w = _pairs(tx, tw)
    rng = np.random.default_rng(3)
    for xz, wz in [(None, None), (_range(tx)[-1], None), (None, _range(tw)[0]), ("random", "random")]:
        xz = None if xz is None else np.asarray(rng.choice(_range(tx)) if xz == "random" else xz, tx).reshape(1, 1, 1)
        wz = None if wz is None else (rng.choice(_range(tw), 256).astype(tw).reshape(1, 256, 1) if isinstance(wz, str)
                                      else np.asarray(wz, tw).reshape(1, 1, 1))
        got = np.asarray(dmljax.convolution_integer(x, xz, w, wz))
        np.testing.assert_array_equal(got, accumulate(x, xz, w, wz))
        # the value pairs themselves: (x - xz) * (w - wz) for every x and w
        want = (_range(tw)[:, None] - (0 if wz is None else wz.reshape(-1, 1).astype(int))) * (
            _range(tx)[None, :] - (0 if xz is None else int(xz.reshape(()))))
        np.testing.assert_array_equal(got[0], want)


@pytest.mark.parametrize("tx,tw,ty", tiers.fast_sample(
    [pytest.param(tx, tw, ty, id=f"{tx.__name__}-{tw.__name__}-{ty.__name__}")
     for tx in TYPES for tw in TYPES for ty in TYPES], keep=3, key="requantized"))
def test_every_value_pair_requantized(tx, tw, ty):
    # Every pair's product requantized by a multiplier of 1/64 (exact halves among them), by a
    # per-channel one of no simple form, with and without zero points: bit for bit.
    x, w = _pairs(tx, tw)
    rng = np.random.default_rng(5)
    yz = np.asarray(rng.choice(_range(ty)), ty).reshape(1, 1, 1)
    xz = np.asarray(rng.choice(_range(tx)), tx).reshape(1, 1, 1)
    wz = rng.choice(_range(tw), 256).astype(tw).reshape(1, 256, 1)
    per_channel = np.exp2(rng.uniform(-9, -5, (1, 256, 1))).astype(np.float32)
    for args in [(_ones((1, 1, 1), 0.5), None, _ones((1, 1, 1), 0.25), None, _ones((1, 1, 1), 8.0), yz),
                 (_ones((1, 1, 1), 0.1), xz, per_channel, wz, _ones((1, 1, 1), 0.7), yz),
                 (_ones((1, 1, 1), 3e-3), xz, _ones((1, 1, 1), 0.02), None, _ones((1, 1, 1), 1e-4), None)]:
        xs, xz_, ws, wz_, ys, yz_ = args
        kw = {} if yz_ is not None else {"output_data_type": np.dtype(ty).name.upper()}
        got = np.asarray(dmljax.quantized_linear_convolution(x, xs, xz_, w, ws, wz_, None, ys, yz_, **kw))
        assert got.dtype == ty
        np.testing.assert_array_equal(got, reference(x, xs, xz_, w, ws, wz_, None, ys, yz_, **kw)[0])


# ---------------------------------------------------------------------------------- padding, groups
def test_padding_adds_nothing_whatever_the_zero_point():
    # An input equal to its zero point everywhere gives 0 everywhere, the padded windows too; and a
    # window half in the padding sums its inside taps only.
    x = np.full((1, 2, 3, 3), 200, np.uint8)
    w = np.arange(1, 37, dtype=np.int8).reshape(2, 2, 3, 3)
    zp = np.full((1, 1, 1, 1), 200, np.uint8)
    pads = dict(start_padding=(2, 1), end_padding=(1, 2))
    np.testing.assert_array_equal(np.asarray(dmljax.convolution_integer(x, zp, w, **pads)), 0)
    x = np.full((1, 1, 3, 3), 7, np.int8)
    got = np.asarray(dmljax.convolution_integer(x, np.full((1, 1, 1, 1), 5, np.int8), np.ones((1, 1, 3, 3), np.int8),
                                                start_padding=(1, 1), end_padding=(1, 1)))
    # (7 - 5) times the inside taps: 4 at the corners, 6 at the edges, 9 in the middle
    np.testing.assert_array_equal(got[0, 0], 2 * np.array([[4, 6, 4], [6, 9, 6], [4, 6, 4]]))


@pytest.mark.parametrize("groups,channels", tiers.fast_sample([(3, 6), (2, 4), (4, 4)]))
def test_groups_and_per_channel_zero_points(groups, channels, rng):
    x = rng.integers(0, 256, (2, channels, 6, 5)).astype(np.uint8)
    o = 2 * channels
    w = rng.integers(-128, 128, (o, channels // groups, 3, 2)).astype(np.int8)
    xz = np.full((1, 1, 1, 1), 131, np.uint8)
    wz = rng.integers(-128, 128, (1, o, 1, 1)).astype(np.int8)
    kw = dict(strides=(2, 1), dilations=(1, 2), start_padding=(1, 2), end_padding=(2, 0), group_count=groups)
    np.testing.assert_array_equal(np.asarray(dmljax.convolution_integer(x, xz, w, wz, **kw)),
                                  accumulate(x, xz, w, wz, **kw))
    # the same per-channel zero point as a 1-dimensional tensor (the page's { [1], C, [1], [1] }, 4.0)
    np.testing.assert_array_equal(np.asarray(dmljax.convolution_integer(x, xz.reshape(1), w, wz.reshape(o), **kw)),
                                  accumulate(x, xz, w, wz, **kw))


def test_one_spatial_dimension(rng):
    x = rng.integers(-128, 128, (2, 3, 9)).astype(np.int8)
    w = rng.integers(0, 256, (4, 3, 3)).astype(np.uint8)
    wz = np.full((1, 1, 1), 128, np.uint8)
    kw = dict(strides=(2,), dilations=(2,), start_padding=(3,), end_padding=(1,))
    np.testing.assert_array_equal(np.asarray(dmljax.convolution_integer(x, None, w, wz, **kw)),
                                  accumulate(x, None, w, wz, **kw))
    with pytest.raises(dmljax.ValidationError, match=r"InputTensor .argument `input`. has 3 dimensions \(Sizes \[2, 3, 9\]\); supported: 4"):
        dmljax.convolution_integer(x, None, w, wz, feature_level="3.0", **kw)


# ---------------------------------------------------------------------------------- the INT32 bound
def test_the_int32_bound_is_refused_at_trace_time():
    def shape_of(c, xz, wz, tx=np.uint8, tw=np.uint8):
        s = jax.ShapeDtypeStruct
        return jax.eval_shape(lambda *a: dmljax.convolution_integer(*a), s((1, c, 1, 1), tx),
                              s((1, 1, 1, 1), tx) if xz else None, s((1, c, 1, 1), tw),
                              s((1, 1, 1, 1), tw) if wz else None)

    assert shape_of(33025, True, True).shape == (1, 1, 1, 1)  # 33025 * 255 * 255 <= 2^31 - 1
    with pytest.raises(dmljax.ValidationError) as info:
        shape_of(33026, True, True)
    assert ("FilterTensor (argument `filter`) makes each output a sum of 33026 products (FilterChannelCount x "
            "the window's positions) of up to 255 x 255; at most 33025 products, so that 33025 x 255 x 255 <= "
            "2^31 - 1: the INT32 accumulator cannot pass its range.") in str(info.value)
    # INT8 without zero points: |x| <= 128, so 131,071 products
    assert shape_of(131071, False, False, np.int8, np.int8).shape == (1, 1, 1, 1)
    with pytest.raises(dmljax.ValidationError, match="at most 131071 products"):
        shape_of(131072, False, False, np.int8, np.int8)
    with pytest.raises(dmljax.ValidationError, match="at most 33025 products"):  # the window counts too
        jax.eval_shape(lambda x, w: dmljax.convolution_integer(x, None, w, None), jax.ShapeDtypeStruct(
            (1, 3670, 3, 3), np.uint8), jax.ShapeDtypeStruct((1, 3670, 3, 3), np.uint8))


def test_the_worst_case_at_the_bound_is_exact():
    c = 33025
    x = np.full((1, c, 1, 1), 255, np.uint8)
    w = np.zeros((1, c, 1, 1), np.uint8)
    wz = np.full((1, 1, 1, 1), 255, np.uint8)
    got = int(np.asarray(dmljax.convolution_integer(x, np.zeros((1, 1, 1, 1), np.uint8), w, wz)).reshape(()))
    assert got == -c * 255 * 255 == -2147450625
    x8 = np.full((1, c, 1, 1), -128, np.int8)
    got = int(np.asarray(dmljax.convolution_integer(x8, np.full((1, 1, 1, 1), 127, np.int8), x8,
                                                    np.full((1, 1, 1, 1), 127, np.int8))).reshape(()))
    assert got == c * 255 * 255


@pytest.mark.parametrize("terms", tiers.fast_sample([1025, 1024, 8738, 8739, 18725, 43691], keep=2, key="pieces"))
def test_the_pieces_keep_float32_sums_exact(terms):
    # cuDNN gives INT8 convolutions FLOAT32 results, and the CPU convolves FLOAT32 operands: the
    # filter is split so that each piece's sums stay within 2^24. Run here through XLA's FLOAT32
    # results (INT8 and FLOAT32 operands), at the worst case (-128 everywhere) and at random values.
    bits, count = ic._pieces(terms)
    assert terms * 128 * max(2 ** (8 - bits * (count - 1) - 1), 2 ** bits - 1 if count > 1 else 0) <= 2**24
    g = ic.geometry(1, {"StartPadding": (1,)})
    rng = np.random.default_rng(terms)
    for worst in (True, False):
        x = np.full((1, terms, 2), -128, np.int8) if worst else rng.integers(-128, 128, (1, terms, 2)).astype(np.int8)
        w = np.full((3, terms, 1), -128, np.int8) if worst else rng.integers(-128, 128, (3, terms, 1)).astype(np.int8)
        for operand in (np.int8, np.float32):
            got = np.asarray(ic._float_sums(jnp.asarray(x), jnp.asarray(w), g, 1, operand))
            np.testing.assert_array_equal(got, accumulate(x, None, w, None, start_padding=(1,)))


def test_depthwise_cuda_sums_take_float16_operands(rng):
    x = rng.integers(-128, 128, (2, 6, 5, 5)).astype(np.int8)
    w = rng.integers(-128, 128, (12, 1, 3, 3)).astype(np.int8)
    g = ic.geometry(2, {"StartPadding": (1, 1), "EndPadding": (1, 0)})
    np.testing.assert_array_equal(np.asarray(ic._cuda_sums(jnp.asarray(x), jnp.asarray(w), g, 6)),
                                  accumulate(x, None, w, None, start_padding=(1, 1), end_padding=(1, 0), group_count=6))


# ---------------------------------------------------------------------------------- requantization
def _q(x, w, xs=1.0, ws=1.0, ys=1.0, yz=None, bias=None, out=None, **kw):
    d = x.ndim - 2
    one = (1,) * (d + 2)
    return np.asarray(dmljax.quantized_linear_convolution(
        x, _ones(one, xs), None, w, _ones(one, ws) if np.ndim(ws) == 0 else ws, None, bias, _ones(one, ys), yz,
        **({"output_data_type": out} if out else {}), **kw))


def test_halves_round_to_even_and_saturation():
    x = np.arange(-6, 7, dtype=np.int8).reshape(1, 1, 13)
    w = np.ones((1, 1, 1), np.int8)
    # M = 0.5: -3, -2.5, ..., 3: halves to even
    np.testing.assert_array_equal(_q(x, w, ws=0.5)[0, 0], [-3, -2, -2, -2, -1, 0, 0, 0, 1, 2, 2, 2, 3])
    # M = 64: saturated at both ends of INT8 and of UINT8 (with the zero point added first)
    np.testing.assert_array_equal(_q(x, w, ws=64.0)[0, 0], [-128] * 4 + [-128, -64, 0, 64, 127, 127] + [127] * 3)
    yz = np.full((1, 1, 1), 10, np.uint8)
    np.testing.assert_array_equal(_q(x, w, ws=64.0, yz=yz)[0, 0], [0] * 6 + [10, 74, 138, 202, 255, 255, 255])


def test_the_bias_is_added_exactly_beyond_int32():
    # An accumulator of 16384 plus a bias of 2^31 - 1: the sum needs 33 bits. Exact, then rounded
    # once to FLOAT32 (2^31 + 16384), where INT32 arithmetic would wrap to a negative number.
    x = np.full((1, 1, 1), -128, np.int8)
    bias = np.full((1, 1, 1), 2**31 - 1, np.int32)
    assert _q(x, x, ws=2.0**-33, bias=bias).reshape(()) == 0  # 0.25 + 2^-19
    assert _q(x, x, ws=2.0**-24, bias=bias).reshape(()) == 127  # 128.0009...: saturated, not -128
    assert _q(x, x, ws=2.0**-24, bias=-bias - 1).reshape(()) == -128  # -2^31 + 16384 -> -128 + 2^-10
    for ws in (2.0**-33, 2.0**-24):
        np.testing.assert_array_equal(_q(x, x, ws=ws, bias=bias), reference(
            x, _ones((1, 1, 1)), None, x, _ones((1, 1, 1), ws), None, bias, _ones((1, 1, 1)), None)[0])


def test_the_multiplier_is_a_true_division():
    # M = 1.5762712 / 12 correctly rounded, where XLA would multiply by the reciprocal of a
    # broadcast divisor (M one ULP off): 118 * M rounds to 15 either side of 15.5, here to 16.
    x = np.array([[[10, 246]]], np.uint8)  # 10 - 128 and 246 - 128: accumulators of -118 and 118
    w = np.ones((2, 1, 1), np.int8)
    ws = np.full((1, 2, 1), 1.5762712, np.float32)  # per channel: the division meets a broadcast
    args = (x, _ones((1, 1, 1)), np.full((1, 1, 1), 128, np.uint8), w, ws, None, None, _ones((1, 1, 1), 12.0))
    got = np.asarray(dmljax.quantized_linear_convolution(*args))
    np.testing.assert_array_equal(got, reference(*args)[0])
    m = np.float32(1.5762712) / np.float32(12)
    assert np.round(np.float32(118) * m) != np.round(np.float32(118) * (np.float32(1.5762712) * (1 / np.float32(12))))


def test_output_type_choice():
    x = np.full((1, 1, 1, 1), 3, np.int8)
    w = np.ones((1, 1, 1, 1), np.int8)
    assert _q(x, w).dtype == np.int8  # the input's without an output zero point
    assert _q(x, w, out="UINT8").dtype == np.uint8
    assert _q(x, w, yz=np.zeros((1, 1, 1, 1), np.uint8)).dtype == np.uint8
    with pytest.raises(dmljax.ValidationError, match="OutputTensor .argument `output_data_type`. is INT8, but "
                                                     "OutputZeroPointTensor has DataType UINT8"):
        _q(x, w, yz=np.zeros((1, 1, 1, 1), np.uint8), out="INT8")


# ---------------------------------------------------------------------------------- scales of 0, NaN, inf
@pytest.mark.parametrize("bad", [0.0, np.nan, np.inf, -np.inf, 1e-40])
@pytest.mark.parametrize("which", ["input_scale", "filter_scale", "output_scale"])
def test_known_bad_scales_are_refused(which, bad):
    x, w = np.ones((1, 1, 2, 2), np.int8), np.ones((2, 1, 1, 1), np.int8)
    scales = {"input_scale": _ones(), "filter_scale": np.array([1.0, bad], np.float32).reshape(1, 2, 1, 1),
              "output_scale": _ones()}
    if which != "filter_scale":
        scales[which] = _ones(value=bad)
        scales["filter_scale"] = _ones()
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.quantized_linear_convolution(x, scales["input_scale"], None, w, scales["filter_scale"], None, None,
                                            scales["output_scale"])
    name = "".join(p.title() for p in which.split("_")) + "Tensor"
    assert re.search(rf"{name} \(argument `{which}`\) holds 1 element that is .*; a scale is finite and not 0",
                     str(info.value)), str(info.value)


def test_traced_bad_scales_give_the_documented_values():
    x = np.array([[[-2, 0, 3]]], np.int8)
    w = np.ones((1, 1, 1), np.int8)
    one = _ones((1, 1, 1))

    @jax.jit
    def run(xs, ys):
        return dmljax.quantized_linear_convolution(x, xs, None, w, one, None, None, ys, np.full((1, 1, 1), 5, np.int8))

    np.testing.assert_array_equal(run(one * 0, one)[0, 0], [5, 5, 5])  # M = 0: the zero point
    np.testing.assert_array_equal(run(one, one * 0)[0, 0], [-128, -128, 127])  # M = inf: -inf, NaN (0 * inf), inf
    np.testing.assert_array_equal(run(one * np.nan, one)[0, 0], [-128, -128, -128])  # NaN: Min
    np.testing.assert_array_equal(run(one, one * np.inf)[0, 0], [5, 5, 5])  # M = 0


def test_shape_messages():
    x, w = np.ones((1, 4, 3, 3), np.uint8), np.ones((6, 2, 1, 1), np.uint8)
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.convolution_integer(x, np.ones((1, 4, 1, 1), np.uint8), w, None, group_count=2)
    assert ("InputZeroPointTensor (argument `input_zero_point`) has Sizes [1, 4, 1, 1]; every size 1 (per tensor, "
            "[1, 1, 1, 1]).") in str(info.value)
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.convolution_integer(x, None, w, np.ones((1, 4, 1, 1), np.uint8), group_count=2)
    assert ("FilterZeroPointTensor (argument `filter_zero_point`) has Sizes [1, 4, 1, 1]; every size 1 (per tensor, "
            "[1, 1, 1, 1]) or [1, 6, 1, 1] (per output channel: the count 6 in dimension 1).") in str(info.value)
    with pytest.raises(dmljax.ValidationError, match="FilterZeroPointTensor .argument `filter_zero_point`. has 1 "
                                                     "dimensions; the InputZeroPointTensor's DimensionCount, 4"):
        dmljax.convolution_integer(x, np.ones((1, 1, 1, 1), np.uint8), w, np.ones((6,), np.uint8), group_count=2)
    with pytest.raises(dmljax.ValidationError, match="GroupCount .argument `group_count`. is 3; a divisor of "
                                                     "InputChannelCount 4"):
        dmljax.convolution_integer(x, None, w, group_count=3)
    with pytest.raises(dmljax.ValidationError, match=r"BiasTensor \(argument `bias`\) has Sizes \[1, 6, 1, 2\]; "
                                                     r"\{1, OutputChannelCount, 1...\} = \[1, 6, 1, 1\]"):
        dmljax.quantized_linear_convolution(x.astype(np.int8), _ones(), None, w.astype(np.int8), _ones(), None,
                                            np.ones((1, 6, 1, 2), np.int32), _ones(), group_count=2)
    with pytest.raises(dmljax.ValidationError, match=r"BiasTensor \(argument `bias`\) has 3 dimensions; the "
                                                     r"InputTensor's DimensionCount, 4"):
        dmljax.quantized_linear_convolution(x.astype(np.int8), _ones(), None, w.astype(np.int8), _ones(), None,
                                            np.ones((1, 6, 1), np.int32), _ones(), group_count=2)
    with pytest.raises(TypeError, match="missing a required argument: 'filter'"):
        dmljax.convolution_integer(x, None)


# ---------------------------------------------------------------------------------- the lowered HLO
def _convolutions(fn, *args):
    text = jax.jit(fn).lower(*args).compile().as_text()
    return [line for line in text.splitlines() if re.search(r"\bconvolution\(", line)]


def test_one_integer_product_in_the_lowered_hlo(rng):
    # UINT8 input with a zero point, INT8 filter with per-channel ones, padding: on the CPU one
    # INT8 x INT8 -> INT32 product of the windows' columns (2 x 6 x 6 rows, 3 x 3 x 8 columns) and
    # no convolution, the corrections around it in INT32; with few channels a group, the window's taps
    # (no convolution either); with more, one convolution (FLOAT32 sums of the INT8 values, exact
    # below 2^24: 144 terms need no split)
    x = rng.integers(0, 256, (2, 8, 6, 6)).astype(np.uint8)
    w = rng.integers(-128, 128, (4, 8, 3, 3)).astype(np.int8)
    xz, wz = np.full((1, 1, 1, 1), 3, np.uint8), rng.integers(-5, 5, (1, 4, 1, 1)).astype(np.int8)
    pads = dict(start_padding=(1, 1), end_padding=(1, 1))
    for fn, args in [(lambda *a: dmljax.convolution_integer(*a, **pads), (x, xz, w, wz)),
                     (lambda *a: dmljax.quantized_linear_convolution(*a, **pads),
                      (x, _ones(), xz, w, _ones((1, 4, 1, 1), 0.5), wz, np.zeros((1, 4, 1, 1), np.int32), _ones(),
                       np.zeros((1, 1, 1, 1), np.uint8)))]:
        text = jax.jit(fn).lower(*args).compile().as_text()
        assert not _convolutions(fn, *args)
        dots = [line for line in text.splitlines() if re.search(r"= s32\[72,4\][^ ]* dot\(", line)]
        assert len(dots) == 1, dots
        assert re.search(r"s8\[72,72\][^ ]* parameter", text) and re.search(r"s8\[72,4\][^ ]* parameter", text)
    w2 = rng.integers(-128, 128, (4, 4, 3, 3)).astype(np.int8)
    assert not _convolutions(lambda *a: dmljax.convolution_integer(*a, group_count=2, **pads), x, xz, w2, None)
    x16 = rng.integers(0, 256, (2, 32, 6, 6)).astype(np.uint8)
    w16 = rng.integers(-128, 128, (4, 16, 3, 3)).astype(np.int8)
    convs = _convolutions(lambda *a: dmljax.convolution_integer(*a, group_count=2, **pads), x16, xz, w16, None)
    assert len(convs) == 1 and re.search(r"= f32\[2,6,6,4\][^ ]* convolution\(", convs[0]), convs


@pytest.mark.parametrize("case", [
    dict(shape=(2, 8, 7, 6), window=(3, 3), strides=(2, 1), dilations=(1, 2), start=(1, 2), end=(0, 1)),
    pytest.param(dict(shape=(1, 5, 9), window=(4,), strides=(3,), dilations=(2,), start=(3,), end=(2,)),
                 marks=pytest.mark.slow),  # 0.5-1 s a case: the fast tier keeps the 2-D one
    pytest.param(dict(shape=(1, 130, 4, 4), window=(3, 3), strides=(1, 1), dilations=(1, 1), start=(1, 1),
                      end=(1, 1)), marks=pytest.mark.slow),
])
def test_window_columns_are_exact(rng, case):
    # the CPU's one-group form: INT8 x INT8 -> INT32 products of the windows' columns, exact for any
    # geometry, and for 130 x 9 = 1,170 terms of -128 x -128 (past FLOAT32's 2^24)
    d = len(case["window"])
    g = ic.geometry(d, {"Strides": case["strides"], "Dilations": case["dilations"], "StartPadding": case["start"],
                        "EndPadding": case["end"]})
    for worst in (False, True):
        c = case["shape"][1]
        x = (np.full(case["shape"], -128, np.int8) if worst
             else rng.integers(-128, 128, case["shape"]).astype(np.int8))
        w = (np.full((3, c) + case["window"], -128, np.int8) if worst
             else rng.integers(-128, 128, (3, c) + case["window"]).astype(np.int8))
        got = np.asarray(jax.jit(lambda a, b: ic._window_columns(a, b, g))(x, w))
        np.testing.assert_array_equal(got, accumulate(x, None, w, None, strides=case["strides"],
                                                      dilations=case["dilations"], start_padding=case["start"],
                                                      end_padding=case["end"]))


# ---------------------------------------------------------------------------------- jit, grad, vmap
def _qargs(rng):
    x = rng.integers(0, 256, (2, 4, 5, 5)).astype(np.uint8)
    w = rng.integers(-128, 128, (6, 4, 3, 3)).astype(np.int8)
    return [x, _ones(value=0.02), np.full((1, 1, 1, 1), 120, np.uint8), w, _ones((1, 6, 1, 1), 0.01),
            None, rng.integers(-99, 99, (1, 6, 1, 1)).astype(np.int32), _ones(value=0.3),
            np.full((1, 1, 1, 1), -3, np.int8)]


_KW = dict(start_padding=(1, 1), end_padding=(1, 0))


def test_jit_and_vmap(rng):
    args = _qargs(rng)
    want = np.asarray(dmljax.quantized_linear_convolution(*args, **_KW))
    np.testing.assert_array_equal(
        np.asarray(jax.jit(lambda *a: dmljax.quantized_linear_convolution(*a, **_KW))(*args)), want)
    # vmap over a batch of inputs: each slice as its own call
    xs = np.stack([args[0], args[0][::-1]])
    out = jax.vmap(lambda v: dmljax.quantized_linear_convolution(v, *args[1:], **_KW))(xs)
    np.testing.assert_array_equal(np.asarray(out[0]), want)
    np.testing.assert_array_equal(np.asarray(out[1]), reference(args[0][::-1], *args[1:], **_KW)[0])


def test_grad_float0_for_integers_zeros_for_scales(rng):
    args = _qargs(rng)
    present = [i for i, a in enumerate(args) if a is not None]

    def loss(*vals):
        full = list(args)
        for i, v in zip(present, vals):
            full[i] = v
        return jnp.sum(dmljax.quantized_linear_convolution(*full, **_KW).astype(jnp.float32))

    grads = jax.grad(loss, argnums=tuple(range(len(present))), allow_int=True)(*[args[i] for i in present])
    for i, g in zip(present, grads):
        if np.issubdtype(args[i].dtype, np.floating):
            assert g.dtype == np.float32 and not np.asarray(g).any()
        else:
            assert g.dtype == jax.dtypes.float0
    x, w = args[0], args[3]
    gx, gw = jax.grad(lambda a, b: jnp.sum(dmljax.convolution_integer(a, None, b).astype(jnp.float32)),
                      argnums=(0, 1), allow_int=True)(x, w)
    assert gx.dtype == gw.dtype == jax.dtypes.float0
