"""CONVOLUTION_INTEGER and QUANTIZED_LINEAR_CONVOLUTION, of the convolution family: each page's
record with its formula below it, and the exact INT32 accumulation both share.

Both sum, for each output element, the products (Input - InputZeroPoint) * (Filter -
FilterZeroPoint) over the window positions inside the input and the group's input channels: a
position in the padding adds nothing (the integer input is padded with its zero point, as ONNX's
ConvInteger and QLinearConv and ONNX Runtime compute it). The operands stay eight bits wide into
one integer convolution, and the zero points come in afterwards as INT32 corrections:

    sum (x - a)(w - b) = sum x w - a * sum w - b * sum x + a * b * count

over the valid positions: ``sum x w`` is the convolution with zero padding, ``sum w`` the
filter's taps at the positions inside the input (a constant per channel where no window reaches
the padding), ``sum x`` each window's input sum over the group's channels (a windowed sum), and
``count`` the valid positions (constants). A UINT8 operand enters the convolution as INT8, its
values and zero point less 128 (x ^ 0x80), so that mixed INT8 x UINT8 operands take the same
convolution. INT32 arithmetic wraps, so the corrections are exact whenever the result fits, which
the records' bound makes sure of.

XLA's CUDA backend (cuDNN) gives INT8 convolutions FLOAT32 results only, and XLA's CPU backend
convolves into INT32 in a plain loop, 30 times slower than its FLOAT32 convolution; FLOAT32 sums
are exact integers while every partial sum stays within 2^24, so a filter whose reduction could pass that is split into pieces of fewer bits (4 + 4 up to
8,738 terms: one convolution with twice the output channels), each piece's sums exact, recombined
in INT32 (``_pieces``); groups of fewer than DEPTHWISE_CHANNELS input channels take the same
integers as FLOAT16 operands, for which cuDNN's depthwise convolutions are faster. On the CPU, a
convolution of one group is instead one INT8 x INT8 -> INT32 matrix product of the windows'
columns (``_window_columns``), exact with no split, which XLA's CPU backend runs as an integer
GEMM at about twice the speed of its FLOAT32 convolution."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32, INT8_UINT8, DataType
from dmljax._src.errors import Violation
from dmljax._src.linear_quantization import (
    accumulation_violations, difference_reach, divide, per_channel_violations, quantize_values, scale_violations,
)
from dmljax._src.numerics import load, store
from dmljax._src.op import operator
from dmljax._src.ops.convolution.convolution import grouped, xla_convolution
from dmljax._src.ops.convolution import depthwise
from dmljax._src.ops.convolution.depthwise import tap_slice
from dmljax._src.spec import INFERRED, OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, snake_case, table
from dmljax._src.validate import MAX_ELEMENTS, TensorInfo
from dmljax._src.window import array_violations, fit_violations, windows_per_dimension

I32 = DataType.INT32
INT32 = (I32,)
_ARRAYS = ("Strides", "Dilations", "StartPadding", "EndPadding")
_UNSET = {"Strides": 1, "Dilations": 1, "StartPadding": 0, "EndPadding": 0}


# ------------------------------------------------------------------------------ geometry and checks
def geometry(spatial_dims: int, attrs) -> dict[str, tuple[int, ...]]:
    """The four arrays, a None filled in with all 1 (Strides, Dilations) or all 0 (paddings)."""
    return {n: tuple(attrs[n]) if attrs.get(n) is not None else (_UNSET[n],) * spatial_dims for n in _ARRAYS}


def integer_checks(zero_points, per_channel: tuple[str, ...], scales=(), bias: bool = False):
    """The checks both records share: the tensors' DimensionCount, the arrays (DimensionCount
    entries, Strides and Dilations at least 1), GroupCount dividing the channels, the filter's
    channels those of a group, the window inside the padded input, the scales' and zero points'
    Sizes (``per_channel`` those that may hold one value per output channel), the bias {1,
    OutputChannelCount, 1...}, and the INT32 accumulator's bound (``zero_points``: (operand,
    its zero point) pairs)."""

    def check(tensors, attrs, level) -> list[Violation]:
        x, f = tensors.get("InputTensor"), tensors.get("FilterTensor")
        groups = attrs.get("GroupCount")
        if x is None or f is None or groups is None or len(x.shape) < 3:
            return []
        problems = []
        if len(f.shape) != len(x.shape):
            problems.append(Violation("FilterTensor", "filter", f"has {len(f.shape)} dimensions",
                                      f"the InputTensor's DimensionCount, {len(x.shape)} (the page)"))
        b = tensors.get("BiasTensor") if bias else None
        if b is not None and len(b.shape) != len(x.shape):
            problems.append(Violation("BiasTensor", "bias", f"has {len(b.shape)} dimensions",
                                      f"the InputTensor's DimensionCount, {len(x.shape)} (the page)"))
        problems += array_violations("InputTensor", x.shape, {n: attrs.get(n) for n in _ARRAYS},
                                     at_least_one=("Strides", "Dilations"))
        if groups < 1:
            problems.append(Violation("GroupCount", "group_count", f"is {groups}", "at least 1"))
        if problems:
            return problems
        c, o = x.shape[1], f.shape[0]
        if c % groups or o % groups:
            what = f"InputChannelCount {c}" if c % groups else f"FilterBatchCount (the OutputChannelCount) {o}"
            return [Violation("GroupCount", "group_count", f"is {groups}", f"a divisor of {what}",
                              "depthwise convolution: GroupCount = InputChannelCount")]
        if f.shape[1] != c // groups:
            return [Violation("FilterTensor", "filter", f"has Sizes {list(f.shape)}: FilterChannelCount {f.shape[1]}",
                              f"InputChannelCount / GroupCount = {c} / {groups} = {c // groups}, for the "
                              f"InputTensor's Sizes {list(x.shape)}",
                              "filters are {OutputChannelCount, InputChannelCount / GroupCount, spatial...}")]
        g = geometry(len(x.shape) - 2, attrs)
        problems += fit_violations(x.shape[2:], f.shape[2:], *(g[n] for n in _ARRAYS),
                                   window_name="FilterTensor.Sizes", arg="filter", first_index=2,
                                   what="a spatial dimension must hold at least one output")
        for name in [z for _, z in zero_points] + list(scales):
            t = tensors.get(name)
            if t is not None:
                problems += per_channel_violations(t.shape, name, snake_case(name), o if name in per_channel else None)
        if b is not None and b.shape != (1, o) + (1,) * (len(x.shape) - 2):
            problems.append(Violation("BiasTensor", "bias", f"has Sizes {list(b.shape)}",
                                      f"{{1, OutputChannelCount, 1...}} = {[1, o] + [1] * (len(x.shape) - 2)}"))
        if problems:
            return problems
        (xn, xz), (wn, wz) = zero_points
        if not (tensors[xn].data_type.is_integer and tensors[wn].data_type.is_integer):
            return []  # the type is refused already
        reach = [difference_reach(tensors[n].data_type, z in tensors) for n, z in ((xn, xz), (wn, wz))]
        return accumulation_violations(f.shape[1] * math.prod(f.shape[2:]), *reach, "FilterTensor", "filter",
                                       "FilterChannelCount x the window's positions")

    return check


def same_rank(first: str, second: str):
    """The page's "must have the same DimensionCount" for two optional tensors."""

    def check(tensors, attrs, level) -> list[Violation]:
        a, b = tensors.get(first), tensors.get(second)
        if a is None or b is None or len(a.shape) == len(b.shape):
            return []
        return [Violation(second, snake_case(second), f"has {len(b.shape)} dimensions",
                          f"the {first}'s DimensionCount, {len(a.shape)} (the page)")]

    return check


def output_sizes(tensors, attrs) -> tuple[int, ...]:
    x, f = tensors["InputTensor"], tensors["FilterTensor"]
    g = geometry(len(x.shape) - 2, attrs)
    return (x.shape[0], f.shape[0]) + windows_per_dimension(x.shape[2:], f.shape[2:], *(g[n] for n in _ARRAYS))


def _inferred(data_type_of):
    def infer(tensors, attrs, problems) -> dict:
        shape = output_sizes(tensors, attrs)
        if math.prod(shape) > MAX_ELEMENTS:
            problems.append(Violation("OutputTensor", "", f"would have {math.prod(shape)} elements (Sizes "
                                      f"{list(shape)})", "a DirectML tensor holds at most 2^32 - 1 elements"))
        return {"OutputTensor": TensorInfo(shape, data_type_of(tensors))}

    return infer


def _array(name, doc):
    return ParamSpec(name, "UINT[]", default=None, nullable=True, count="DimensionCount",
                     doc=f"{doc} DimensionCount entries (the spatial dimensions); None: all {_UNSET[name]}.")


PARAMS = (
    _array("Strides", "The window's step in each spatial dimension (at least 1; not the tensors' strides)."),
    _array("Dilations", "The spacing of the filter's elements in each spatial dimension (at least 1)."),
    _array("StartPadding", "Padding before each spatial dimension (the input's zero point: adds nothing)."),
    _array("EndPadding", "Padding after each spatial dimension (the input's zero point: adds nothing)."),
    ParamSpec("GroupCount", "UINT", default=1,
              doc="The number of groups the channels are divided into (default 1; InputChannelCount: depthwise)."),
)

ACCUMULATION_NOTE = (
    "The products (Input - InputZeroPoint) * (Filter - FilterZeroPoint) are summed exactly in INT32 over the "
    "window positions inside the input and the group's channels; a position in the padding adds nothing: the "
    "integer input is padded with its zero point (ONNX's ConvInteger and QLinearConv, and ONNX Runtime, which "
    "maps them onto these operators, compute it so; the page's 'mathematically equivalent to dequantizing the "
    "inputs, convolving' says the same for the quantized one). A call whose sum could pass INT32's range "
    "is refused at trace time, naming the bound: FilterChannelCount x prod(window) x R_input x R_filter must "
    "be at most 2^31 - 1, where R is the largest |value - zero point| of the tensor's type (255 with a zero "
    "point; without one 128 for INT8, 255 for UINT8), so up to 33,025 products with both zero points. A "
    "missing zero point is 0. The zero points are per tensor (every size 1), the filter's also per output "
    "channel: {1, OutputChannelCount, 1, 1} (the channel count in dimension 1, or dimension 0 of a "
    "1-dimensional tensor), DirectML's broadcast tensor; in dmljax an array of those Sizes (a value repeated "
    "over the output's channels is a jnp.broadcast_to of it). Strides, Dilations and the paddings default to "
    "all 1 and all 0 (DirectMLX's defaults; the page gives none), GroupCount to 1. The page's 'Only a value of "
    "2 is supported' for DimensionCount predates its DML_FEATURE_LEVEL_4_0 table, whose 3-dimensional "
    "tensors have one spatial dimension: DimensionCount is the tensors' spatial dimensions.")

INTEGER_GRADIENT = ("An integer output: no gradient; the integer inputs get float0 cotangents, as any integer "
                    "input in JAX.")


# ------------------------------------------------------------------------------ the accumulation
def as_int8(x, zero_point):
    """An INT8 or UINT8 operand as INT8 values, with its zero point as INT32 (None for an INT8
    operand without one): a UINT8 one less 128 (x ^ 0x80, its zero point less 128), which leaves
    every difference x - zero_point as it is."""
    if zero_point is not None:
        zero_point = zero_point.astype(np.int32)
    if x.dtype == np.int8:
        return x, zero_point
    shifted = lax.bitcast_convert_type(x ^ np.uint8(0x80), np.int8)
    return shifted, (np.int32(-128) if zero_point is None else zero_point - np.int32(128))


def _conv(x, w, g, groups, preferred):
    pads = list(zip(g["StartPadding"], g["EndPadding"]))
    return grouped(lambda a, b: xla_convolution(a, b, g["Strides"], pads, rhs_dilation=g["Dilations"], groups=groups,
                                                preferred_element_type=preferred), x, w, groups)


EXACT_FLOAT32 = 2**24
"""Integers of FLOAT32 are exact up to 2^24: a convolution whose every partial sum stays within it
gives exact FLOAT32 integers in any order of addition."""


def _pieces(terms: int) -> tuple[int, int]:
    """(bits B of each low piece, pieces P) of the split of an INT8 filter that keeps each piece's
    sums over ``terms`` products with INT8 input values (at most 128 in size) within 2^24: the
    low pieces hold B bits (0 to 2^B - 1), the top one the remaining 8 - B(P - 1) bits with the
    sign. B = 8 (no split) up to 1,024 terms, 4 up to 8,738, 3 up to 18,724, 2 up to 43,690,
    1 beyond (every bound the records allow)."""
    for bits in (8, 4, 3, 2, 1):
        count = -(-8 // bits)
        top = 8 - bits * (count - 1)
        largest = max(2 ** (top - 1), (2 ** bits - 1) if count > 1 else 0)
        if terms * 128 * largest <= EXACT_FLOAT32:
            return bits, count
    return 1, 8


def _float_sums(x8, w8, g, groups, operand):
    """The convolution of INT8 values as FLOAT32 sums (cuDNN's INT8 convolution, or FLOAT16
    operands), exact by ``_pieces``, as INT32."""
    terms = w8.shape[1] * math.prod(w8.shape[2:])
    bits, count = _pieces(terms)
    if count == 1:
        return _conv(x8.astype(operand), w8.astype(operand), g, groups, np.float32).astype(np.int32)
    wide = w8.astype(np.int32)
    mask = np.int32(2**bits - 1)
    parts = [(wide >> np.int32(bits * k)) & mask for k in range(count - 1)] + [wide >> np.int32(bits * (count - 1))]
    og = w8.shape[0] // groups
    # each group's pieces next to each other, so that the groups keep their output channels
    w = jnp.stack([p.reshape((groups, og) + w8.shape[1:]) for p in parts], axis=1).reshape(
        (groups * count * og,) + w8.shape[1:])
    y = _conv(x8.astype(operand), w.astype(operand), g, groups, np.float32).astype(np.int32)
    y = y.reshape((y.shape[0], groups, count, og) + y.shape[2:])
    total = y[:, :, count - 1]
    for k in range(count - 2, -1, -1):
        total = (total << np.int32(bits)) + y[:, :, k]
    return total.reshape((y.shape[0], groups * og) + y.shape[4:])


DEPTHWISE_CHANNELS = 4
"""cuDNN's INT8 convolutions with fewer input channels per group than this take FLOAT16 operands
(the same integers, exactly) instead: a depthwise INT8 convolution ran at 0.57 ms where FLOAT16
took 0.084 ms on the H200 (batch 32, 256 channels, 28 x 28, 3 x 3; measured with lax directly)."""


def _cuda_sums(x8, w8, g, groups):
    operand = np.float16 if x8.shape[1] // groups < DEPTHWISE_CHANNELS else np.int8
    return _float_sums(x8, w8, g, groups, operand)


def _int8_product(a, b):
    """An INT8 x INT8 matrix product into INT32 (exact; XLA's CPU backend runs it as an integer
    GEMM)."""
    return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.int32)


def _window_columns(x8, w8, g):
    """sum x w of one group's INT8 operands as one matrix product: each window position's strided
    slice of the zero-padded, channels-last input side by side (columns: window positions x
    channels) times the filter as {window x C, O}."""
    n, c = x8.shape[:2]
    o, window = w8.shape[0], w8.shape[2:]
    x = jnp.moveaxis(x8, 1, -1)
    x = lax.pad(x, np.int8(0), [(0, 0, 0)] + [(a, b, 0) for a, b in zip(g["StartPadding"], g["EndPadding"])]
                + [(0, 0, 0)])
    out = windows_per_dimension(x8.shape[2:], window, *(g[k] for k in _ARRAYS))
    columns = [tap_slice(x, k, g["Dilations"], g["Strides"], out, lead=1, trail=1) for k in np.ndindex(*window)]
    patches = columns[0] if len(columns) == 1 else jnp.concatenate(columns, axis=-1)
    taps = math.prod(window) * c
    filt = jnp.transpose(w8, tuple(range(2, w8.ndim)) + (1, 0)).reshape(taps, o)
    y = _int8_product(patches.reshape(-1, taps), filt)
    return jnp.moveaxis(y.reshape((n,) + out + (o,)), -1, 1)


def _grouped_taps(x8, w8, g, groups):
    """A grouped convolution of few channels a group (depthwise.applies) as FLOAT32 sums over the
    window's taps (depthwise.taps), exact: at most depthwise.TAPS products of INT8 values a sum, within
    2^24. XLA writes the padded FLOAT32 input out once (the pad ends a fusion), with the requantization
    that makes it, and every tap's slice reads it."""
    pads = tuple(zip(g["StartPadding"], g["EndPadding"]))
    return depthwise.taps(x8, w8, groups, g["Strides"], pads, g["Dilations"], np.float32).astype(np.int32)


def product_sums(x8, w8, g, groups):
    """sum x w of the INT8 operands over each window (zero padding) and the group's channels, as
    INT32: FLOAT32 sums of the pieces (``_float_sums``), with INT8 operands on CUDA and FLOAT32 ones
    elsewhere, except on the CPU one group: an INT8 x INT8 -> INT32 matrix product of the windows
    (``_window_columns``), which XLA's CPU backend runs as an integer GEMM; and few channels a group:
    the window's taps (``_grouped_taps``). XLA's CPU convolution
    into INT32 is a plain loop: 456 ms where the FLOAT32 pieces take 23 ms (batch 4, 256 -> 256
    channels, 14 x 14, 3 x 3, two cores); the windows' product took 4.5 ms where a FLOAT32
    convolution of the same sizes took 8.6 ms (1 x 256 x 14 x 14, 3 x 3; 8.3 / 22 ms for 512
    channels of 7 x 7)."""
    def cpu(a, b):
        if groups == 1:
            return _window_columns(a, b, g)
        if depthwise.applies(a.shape, b.shape, groups):
            return _grouped_taps(a, b, g, groups)
        return _float_sums(a, b, g, groups, np.float32)

    def cuda(a, b):
        return _cuda_sums(a, b, g, groups)

    return lax.platform_dependent(x8, w8, cuda=cuda, rocm=cuda, default=cpu)


def _valid_taps(spatial, window, g) -> list[np.ndarray]:
    """Per spatial dimension, a (outputs, window) 0/1 array: whether tap k of output p lies
    inside the input."""
    out = windows_per_dimension(spatial, window, *(g[n] for n in _ARRAYS))
    valid = []
    for d, (size, k) in enumerate(zip(spatial, window)):
        pos = (np.arange(out[d])[:, None] * g["Strides"][d] - g["StartPadding"][d]
               + np.arange(k)[None, :] * g["Dilations"][d])
        valid.append(((pos >= 0) & (pos < size)).astype(np.int32))
    return valid


def _filter_sums(w8, valid):
    """sum w over the valid taps and the group's channels, (O, outputs...) INT32; (O,) where every
    tap of every output lies inside the input."""
    t = jnp.sum(w8.astype(np.int32), axis=1)  # (O, window...)
    if all(v.all() for v in valid):
        return jnp.sum(t, axis=tuple(range(1, t.ndim)))
    for d, v in enumerate(valid):
        # t: (O, outputs of 0..d-1, taps of d.., ...): the taps of d summed where valid
        t = jnp.expand_dims(t, 1 + d)
        shape = [1] * t.ndim
        shape[1 + d], shape[2 + d] = v.shape
        t = jnp.sum(t * jnp.asarray(v.reshape(shape)), axis=2 + d)
    return t


def _input_sums(x8, window, g, groups):
    """sum x over each window (zero padding) and the group's channels: (N, G, outputs...) INT32."""
    n, c = x8.shape[:2]
    s = jnp.sum(x8.reshape((n, groups, c // groups) + x8.shape[2:]).astype(np.int32), axis=2)
    return lax.reduce_window(s, np.int32(0), lax.add, (1, 1) + tuple(window), (1, 1) + g["Strides"],
                             ((0, 0), (0, 0)) + tuple(zip(g["StartPadding"], g["EndPadding"])),
                             window_dilation=(1, 1) + g["Dilations"])


def _channels(v, o, ndim):
    """A zero point as INT32: a scalar, or (1, O, 1...) for a per-channel one."""
    if v is None or np.ndim(v) == 0:
        return v
    v = v.reshape(-1) if v.size > 1 else v.reshape(())
    return v if v.ndim == 0 else v.reshape((1, o) + (1,) * (ndim - 2))


def accumulate(x, x_zero_point, w, w_zero_point, g, groups):
    """sum (x - x_zero_point)(w - w_zero_point) over the valid taps and the group's channels: the
    exact INT32 accumulator of both operators, (N, O, outputs...)."""
    x8, a = as_int8(x, x_zero_point)
    w8, b = as_int8(w, w_zero_point)
    o, ndim = w.shape[0], x.ndim
    a = None if a is None else jnp.reshape(a, ())
    b = _channels(b, o, ndim)
    acc = product_sums(x8, w8, g, groups)
    valid = _valid_taps(x.shape[2:], w.shape[2:], g)
    if a is not None:
        sw = _filter_sums(w8, valid)
        sw = sw.reshape((1, o) + (1,) * (ndim - 2)) if sw.ndim == 1 else sw[None]
        acc = acc - a * sw
    if b is not None:
        sx = _input_sums(x8, w.shape[2:], g, groups)  # (N, G, outputs...)
        n, og = x.shape[0], o // groups
        sx = jnp.broadcast_to(sx[:, :, None], (n, groups, og) + sx.shape[2:]).reshape((n, o) + sx.shape[2:])
        acc = acc - b * sx
        if a is not None:
            count = np.full((), x.shape[1] // groups, np.int32)  # the valid (channel, tap) pairs
            for d, v in enumerate(valid):
                shape = [1] * ndim
                shape[2 + d] = v.shape[0]
                count = count * v.sum(axis=1).astype(np.int32).reshape(shape)
            acc = acc + a * b * jnp.asarray(count)
    return acc


# ------------------------------------------------------------------------------ CONVOLUTION_INTEGER
CONVOLUTION_INTEGER = OpSpec(
    enum_name=PREFIX + "CONVOLUTION_INTEGER",
    summary=("Performs a convolution of the FilterTensor with the InputTensor. This operator performs forward "
             "convolution on integer data. Optional zero point tensors can also be used to subtract zero point "
             "values from the input and filter tensor."),
    formula=("Performs a convolution of the *FilterTensor* with the *InputTensor*.\n"
             "OutputTensor[n, o, p] = sum over the channels c of o's group and the window positions k inside the "
             "input of (InputTensor[n, c, p * Strides + k * Dilations - StartPadding] - InputZeroPoint) * "
             "(FilterTensor[o, c, k] - FilterZeroPoint[o]), exact in INT32"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("InputZeroPointTensor", "input", optional=True),
             TensorSpec("FilterTensor", "input"), TensorSpec("FilterZeroPointTensor", "input", optional=True),
             TensorSpec("OutputTensor", "output")),
    support=(
        table("4.0", InputTensor=("3 to 4", INT8_UINT8), InputZeroPointTensor=("1 to 4", INT8_UINT8),
              FilterTensor=("3 to 4", INT8_UINT8), FilterZeroPointTensor=("1 to 4", INT8_UINT8),
              OutputTensor=("3 to 4", INT32)),
        table("2.1", InputTensor=("4", INT8_UINT8), InputZeroPointTensor=("4", INT8_UINT8),
              FilterTensor=("4", INT8_UINT8), FilterZeroPointTensor=("4", INT8_UINT8), OutputTensor=("4", INT32)),
    ),
    params=PARAMS,
    # "FilterZeroPointTensor and InputZeroPointTensor must have the same DimensionCount. FilterTensor,
    # InputTensor, and OutputTensor must have the same DimensionCount. InputTensor and
    # InputZeroPointTensor must have the same DataType. FilterTensor and FilterZeroPointTensor must
    # have the same DataType."
    constraints=(SameDataType(("InputTensor", "InputZeroPointTensor")),
                 SameDataType(("FilterTensor", "FilterZeroPointTensor"))),
    math=False,
    gradient=INTEGER_GRADIENT,
    notes=(ACCUMULATION_NOTE + " InputTensor {N, C, spatial...} and FilterTensor {OutputChannelCount, C / "
           "GroupCount, window...} may be INT8 and UINT8 in any combination; OutputTensor {N, OutputChannelCount, "
           "(Input + StartPadding + EndPadding - Dilations * (Window - 1) - 1) / Strides + 1 (floor)...} is INT32, "
           "bit-exact."),
    extra_checks=(same_rank("InputZeroPointTensor", "FilterZeroPointTensor"),
                  integer_checks((("InputTensor", "InputZeroPointTensor"), ("FilterTensor", "FilterZeroPointTensor")),
                                 per_channel=("FilterZeroPointTensor",))),
    infer_outputs=_inferred(lambda tensors: I32),
    silent=(
        SilentChoice(
            "CONVOLUTION_INTEGER / QUANTIZED_LINEAR_CONVOLUTION padding with a non-zero input zero point",
            "a padded position adds nothing (it reads as the zero point)",
            "ONNX's ConvInteger/QLinearConv and ONNX Runtime; \"equivalent to dequantizing\" on the pages.",
            also=("QUANTIZED_LINEAR_CONVOLUTION",)),
    ),
)


@operator(CONVOLUTION_INTEGER)
def convolution_integer(input, input_zero_point, filter, filter_zero_point=None, *, strides, dilations,
                        start_padding, end_padding, group_count):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(2, 11, dtype=np.uint8).reshape(1, 1, 3, 3)  # ONNX's ConvInteger example
        >>> dmljax.convolution_integer(x, np.ones((1, 1, 1, 1), np.uint8), np.ones((1, 1, 2, 2), np.uint8))
        Array([[[[12, 16],
                 [24, 28]]]], dtype=int32)
        >>> dmljax.convolution_integer(x, np.ones((1, 1, 1, 1), np.uint8), np.ones((1, 1, 2, 2), np.uint8),
        ...                            start_padding=(1, 1), end_padding=(1, 1))[0, 0, 0]  # padding adds 0
        Array([1, 3, 5, 3], dtype=int32)
    """
    g = geometry(input.ndim - 2, {"Strides": strides, "Dilations": dilations, "StartPadding": start_padding,
                                  "EndPadding": end_padding})
    return accumulate(input, input_zero_point, filter, filter_zero_point, g, group_count)


# ------------------------------------------------------------------------------ QUANTIZED_LINEAR_CONVOLUTION
def exact_float32_sum(a, b):
    """``a + b`` of two INT32 tensors, exactly (it can need 33 bits), rounded once to FLOAT32: the
    high halves' sum times 2^16 plus the low halves' sum, two terms FLOAT32 holds exactly."""
    high = (a >> np.int32(16)) + (b >> np.int32(16))
    low = (a & np.int32(0xFFFF)) + (b & np.int32(0xFFFF))
    return high.astype(np.float32) * np.float32(65536) + low.astype(np.float32)


def _scale_checks(values, attrs, level) -> list[Violation]:
    return [v for name in ("InputScaleTensor", "FilterScaleTensor", "OutputScaleTensor")
            for v in scale_violations(values.get(name), name, snake_case(name))]


def _output_type(tensors) -> DataType:
    """The caller's output_data_type, else the OutputZeroPointTensor's DataType (the constraint
    gives it), else the InputTensor's."""
    out = tensors.get("OutputTensor")
    return out.data_type if out is not None and out.data_type is not None else tensors["InputTensor"].data_type


def _qlinear_table(level, scales, filter_scale, dims, bias):
    return table(level, InputTensor=(dims, INT8_UINT8), InputScaleTensor=(scales, FLOAT32),
                 InputZeroPointTensor=(scales, INT8_UINT8), FilterTensor=(dims, INT8_UINT8),
                 FilterScaleTensor=(filter_scale, FLOAT32), FilterZeroPointTensor=(scales, INT8_UINT8),
                 BiasTensor=(bias, INT32), OutputScaleTensor=(scales, FLOAT32),
                 OutputZeroPointTensor=(scales, INT8_UINT8), OutputTensor=(dims, INT8_UINT8))


QUANTIZED_LINEAR_CONVOLUTION = OpSpec(
    enum_name=PREFIX + "QUANTIZED_LINEAR_CONVOLUTION",
    summary=("Performs a convolution of the FilterTensor with the InputTensor. This operator performs forward "
             "convolution on quantized data. This operator is mathematically equivalent to dequantizing the "
             "inputs, convolving, and then quantizing the output."),
    formula=("f(Input, Scale, ZeroPoint) = clamp(round(Input / Scale) + ZeroPoint, Min, Max)\n"
             "(the quantize function, applied as OutputTensor = clamp(round(FLOAT32(Accumulator + Bias) * M) + "
             "OutputZeroPoint, Min, Max) with M = InputScale * FilterScale / OutputScale in FLOAT32, where "
             "Accumulator is CONVOLUTION_INTEGER's sum of (Input - InputZeroPoint) * (Filter - FilterZeroPoint))"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("InputScaleTensor", "input"),
             TensorSpec("InputZeroPointTensor", "input", optional=True), TensorSpec("FilterTensor", "input"),
             TensorSpec("FilterScaleTensor", "input"), TensorSpec("FilterZeroPointTensor", "input", optional=True),
             TensorSpec("BiasTensor", "input", optional=True), TensorSpec("OutputScaleTensor", "input"),
             TensorSpec("OutputZeroPointTensor", "input", optional=True),
             TensorSpec("OutputTensor", "output", default_data_type=INFERRED)),
    support=(
        _qlinear_table("5.2", "1 to 4", "1 to 4", "3 to 4", "3 to 4"),
        _qlinear_table("4.0", "1 to 4", "3 to 4", "3 to 4", "3 to 4"),
        _qlinear_table("2.1", "4", "4", "4", "4"),
    ),
    params=PARAMS,
    # "BiasTensor, FilterTensor, InputTensor, and OutputTensor must have the same DimensionCount.
    # OutputTensor and OutputZeroPointTensor must have the same DataType. InputTensor and
    # InputZeroPointTensor must have the same DataType. FilterTensor and FilterZeroPointTensor must
    # have the same DataType."
    constraints=(SameDataType(("OutputTensor", "OutputZeroPointTensor")),
                 SameDataType(("InputTensor", "InputZeroPointTensor")),
                 SameDataType(("FilterTensor", "FilterZeroPointTensor"))),
    math=False,
    gradient=(INTEGER_GRADIENT + " The scales get zeros: the output is a step function of them (the "
              "rounding's derivative is 0 wherever it exists)."),
    notes=(ACCUMULATION_NOTE + " The requantization is fused, as ONNX Runtime's QLinearConv computes it: the "
           "INT32 accumulator plus the INT32 bias (added exactly: the sum can need 33 bits) is converted to FLOAT32 "
           "(rounded once, to nearest even), multiplied by the FLOAT32 multiplier M = (InputScale * FilterScale) / "
           "OutputScale (each step rounded once in FLOAT32, FLOAT32 denormals flushed), and the product quantized "
           "as the page's quantize function with a scale of 1: rounded halves to even, plus the output zero point, "
           "saturated to the output type (linear_quantization.quantize_values). The bias is {1, "
           "OutputChannelCount, 1, 1}, in the accumulator's units (scale InputScale * FilterScale, zero point 0, "
           "as ONNX's QLinearConv asks). InputScaleTensor and OutputScaleTensor are per tensor; FilterScaleTensor "
           "per tensor or per output channel, with the filter's zero point's Sizes. The OutputTensor's DataType "
           "is output_data_type= where given, else the OutputZeroPointTensor's, else the InputTensor's. The page "
           "leaves a scale of 0 undefined: a scale of 0, NaN or inf (or a FLOAT32 denormal, which reads as 0) "
           "whose values are known at the call is refused; a traced one gives M's IEEE value (0, inf or NaN), "
           "and the product's NaN becomes Min, +-inf Max and Min (quantize_values' minNum/maxNum). M's FLOAT32 "
           "division is correctly rounded on every backend (linear_quantization.divide: XLA's own would multiply by "
           "the reciprocal of a broadcast divisor on the CPU and approximate on a GPU), so the output is bit-exact "
           "everywhere."),
    extra_checks=(integer_checks((("InputTensor", "InputZeroPointTensor"), ("FilterTensor", "FilterZeroPointTensor")),
                                 per_channel=("FilterZeroPointTensor", "FilterScaleTensor"),
                                 scales=("InputScaleTensor", "FilterScaleTensor", "OutputScaleTensor",
                                         "OutputZeroPointTensor"), bias=True),),
    infer_outputs=_inferred(_output_type),
    value_checks=(_scale_checks,),
)


def _scalar(v):
    return None if v is None else v.reshape(())


@operator(QUANTIZED_LINEAR_CONVOLUTION)
def quantized_linear_convolution(input, input_scale, input_zero_point, filter, filter_scale, filter_zero_point,
                                 bias, output_scale, output_zero_point=None, *, strides, dilations, start_padding,
                                 end_padding, group_count, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[0, 64, 128, 255]]]], np.uint8)
        >>> one = np.ones((1, 1, 1, 1), np.float32)
        >>> dmljax.quantized_linear_convolution(x, one * 0.5, np.full((1, 1, 1, 1), 128, np.uint8),
        ...     np.full((1, 1, 1, 1), 3, np.int8), one * 0.25, None, None, one, np.zeros((1, 1, 1, 1), np.int8))
        Array([[[[-48, -24,   0,  48]]]], dtype=int8)
    """
    g = geometry(input.ndim - 2, {"Strides": strides, "Dilations": dilations, "StartPadding": start_padding,
                                  "EndPadding": end_padding})
    acc = accumulate(input, input_zero_point, filter, filter_zero_point, g, group_count)
    value = acc.astype(np.float32) if bias is None else exact_float32_sum(acc, bias.astype(np.int32))
    o = filter.shape[0]
    ws = load(filter_scale).reshape(-1)
    ws = ws.reshape(()) if ws.size == 1 else ws.reshape((1, o) + (1,) * (input.ndim - 2))
    product = store(load(_scalar(input_scale)) * ws, DataType.FLOAT32)
    m = store(divide(product, load(_scalar(output_scale))), DataType.FLOAT32)  # correctly rounded
    value = store(value * m, DataType.FLOAT32)
    return quantize_values(value, np.float32(1), _scalar(output_zero_point), output_data_type)
