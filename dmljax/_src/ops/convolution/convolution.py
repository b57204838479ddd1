"""CONVOLUTION, of the convolution family: the page's record, with its formula below it.

FORWARD: Output[n, o, p] = Bias[o] + sum over the group's input channels c and the window
positions k of padded Input[n, c, p * Strides + k * Dilations] * Filter'[o, c, k], where Filter'
is the filter (CROSS_CORRELATION) or the filter flipped along every spatial dimension
(CONVOLUTION). BACKWARD is the transpose (adjoint) of FORWARD with the same Strides, Dilations
and paddings: the "transposed convolution" of deep-learning libraries (ONNX's ConvTranspose).
OutputPadding lengthens the output at the end of each spatial dimension. FLOAT32 products are
FLOAT32 products (never TF32); FLOAT16 accumulates in FLOAT32 and rounds once.

The formula is XLA's convolution (``_xla``: BACKWARD as an input-dilated convolution), or another
form of it where a measured rule takes the call: a 1 x 1 window as a matrix product on CUDA
(kernels/convolution_gemm.py), the convolution without its unit spatial dimensions on the CPU
(kernels/convolution_squeezed.py: ``_squeezed``), BACKWARD with strides as forward convolutions of
its output's phases (kernels/convolution_phases.py: ``_phases``, on the CPU by its rule there), few
channels a group on the CPU as sums over the window's taps (depthwise.py), and FLOAT32 Pallas
kernels on CUDA (kernels/convolution.py; kernels/convolution_depthwise.py for depthwise calls,
forward and backward)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule, custom_transposed
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.enums import ConvolutionDirection, ConvolutionMode
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import Route, choose
from dmljax._src.kernels.convolution import CONVOLUTION_TAPS, convolve_taps
from dmljax._src.kernels.convolution_depthwise import (CONVOLUTION_DEPTHWISE, CONVOLUTION_DEPTHWISE_DATA,
                                                       CONVOLUTION_DEPTHWISE_FILTER, data_geometry, depthwise_filter,
                                                       depthwise_forward)
from dmljax._src.kernels.convolution_gemm import CONVOLUTION_GEMM_COLUMNS, CONVOLUTION_GEMM_ROWS, gemm_columns, gemm_rows
from dmljax._src.kernels.convolution_phases import CONVOLUTION_PHASES, DIRECTIONS, phases, taken
from dmljax._src.kernels.convolution_squeezed import CONVOLUTION_SQUEEZED, squeezed_on_cpu, unit_dimensions
from dmljax._src.numerics import compute_dtype, load, store
from dmljax._src.op import operator
from dmljax._src.ops.convolution import depthwise
from dmljax._src.ops.factories import apply_fused
from dmljax._src.partition import along_leading_axes
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, snake_case, table
from dmljax._src.validate import MAX_ELEMENTS, TensorInfo
from dmljax._src.window import array_violations, fit_violations, windows_per_dimension

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
_ARRAYS = ("Strides", "Dilations", "StartPadding", "EndPadding", "OutputPadding")
_UNSET = {"Strides": 1, "Dilations": 1, "StartPadding": 0, "EndPadding": 0, "OutputPadding": 0}


def geometry(spatial_dims: int, attrs) -> dict[str, tuple[int, ...]]:
    """The five arrays, with the defaults of a None (all 1 for Strides and Dilations, all 0 for
    the paddings) filled in for ``spatial_dims`` spatial dimensions."""
    return {n: tuple(attrs[n]) if attrs.get(n) is not None else (_UNSET[n],) * spatial_dims for n in _ARRAYS}


def output_spatial(spatial, window, direction, g) -> tuple[int, ...]:
    """FORWARD: the windows that fit the padded input, plus OutputPadding; BACKWARD: the size
    whose FORWARD windows are the input's, (Input - 1) * Strides + Dilations * (Window - 1) + 1
    - StartPadding - EndPadding + OutputPadding."""
    if direction is ConvolutionDirection.FORWARD:
        fit = windows_per_dimension(spatial, window, g["Strides"], g["Dilations"], g["StartPadding"], g["EndPadding"])
        return tuple(f + o for f, o in zip(fit, g["OutputPadding"]))
    return tuple((i - 1) * s + d * (w - 1) + 1 - a - b + o for i, w, s, d, a, b, o in
                 zip(spatial, window, *(g[n] for n in _ARRAYS)))


def _channels(x, f, direction, groups) -> tuple[int, int]:
    """(input channels per group the filter must have, output channels)."""
    if direction is ConvolutionDirection.FORWARD:
        return x.shape[1] // groups, f.shape[0]
    return x.shape[1], f.shape[1] * groups


def _checks(tensors, attrs, level) -> list[Violation]:
    """The page's "same DimensionCount"; the arrays' lengths (DimensionCount: the tensors' spatial
    dimensions); Strides and Dilations of at least 1; GroupCount dividing the channels; the
    filter's channels those of a group; the bias {1, OutputChannelCount, 1...}; an output of at
    least one element per spatial dimension."""
    x, f, b = tensors.get("InputTensor"), tensors.get("FilterTensor"), tensors.get("BiasTensor")
    direction, groups = attrs.get("Direction"), attrs.get("GroupCount")
    if x is None or f is None or direction is None or groups is None or len(x.shape) < 3:
        return []
    ranks = {n: len(t.shape) for n, t in (("InputTensor", x), ("FilterTensor", f), ("BiasTensor", b)) if t is not None}
    if len(set(ranks.values())) > 1:
        other = next(n for n in ranks if ranks[n] != ranks["InputTensor"])
        return [Violation(other, snake_case(other.removesuffix("Tensor")),
                          "has " + ", ".join(f"{n}: {r} dimensions" for n, r in ranks.items()),
                          "InputTensor, FilterTensor, BiasTensor and OutputTensor with the same DimensionCount "
                          "(the page)")]
    problems = array_violations("InputTensor", x.shape, {n: attrs.get(n) for n in _ARRAYS},
                                at_least_one=("Strides", "Dilations"))
    if groups < 1:
        problems.append(Violation("GroupCount", "group_count", f"is {groups}", "at least 1"))
    if problems:
        return problems
    forward = direction is ConvolutionDirection.FORWARD
    split = x.shape[1] if forward else f.shape[0]  # the channels the groups divide on the input side
    if x.shape[1] % groups or (forward and f.shape[0] % groups):
        what = (f"InputChannelCount {x.shape[1]}" if x.shape[1] % groups else
                f"FilterBatchCount (the OutputChannelCount) {f.shape[0]}")
        return [Violation("GroupCount", "group_count", f"is {groups}", f"a divisor of {what}",
                          "depthwise convolution: GroupCount = InputChannelCount")]
    if forward and f.shape[1] != split // groups:
        problems.append(Violation(
            "FilterTensor", "filter", f"has Sizes {list(f.shape)}: FilterChannelCount {f.shape[1]}",
            f"InputChannelCount / GroupCount = {x.shape[1]} / {groups} = {split // groups}, for the InputTensor's "
            f"Sizes {list(x.shape)}", "FORWARD filters are {OutputChannelCount, InputChannelCount / GroupCount, "
            "spatial...}"))
    if not forward and f.shape[0] != x.shape[1]:
        problems.append(Violation(
            "FilterTensor", "filter", f"has Sizes {list(f.shape)}: FilterBatchCount {f.shape[0]}",
            f"the InputTensor's channels, {x.shape[1]} (Sizes {list(x.shape)})",
            "BACKWARD filters are {InputChannelCount, OutputChannelCount / GroupCount, spatial...}: the FORWARD "
            "convolution's filter, whose gradient this is"))
    if problems:
        return problems
    _, out_c = _channels(x, f, direction, groups)
    if b is not None and b.shape != (1, out_c) + (1,) * (len(x.shape) - 2):
        problems.append(Violation("BiasTensor", "bias", f"has Sizes {list(b.shape)}",
                                  f"{{1, OutputChannelCount, 1...}} = {[1, out_c] + [1] * (len(x.shape) - 2)}"))
    g = geometry(len(x.shape) - 2, attrs)
    window, spatial = f.shape[2:], x.shape[2:]
    what = "a spatial dimension must hold at least one output"
    if forward:
        return problems + fit_violations(spatial, window, *(g[n] for n in _ARRAYS[:4]), what=what,
                                         window_name="FilterTensor.Sizes", arg="filter", first_index=2)
    for i, size in enumerate(output_spatial(spatial, window, direction, g)):
        if size < 1:
            span = g["Dilations"][i] * (window[i] - 1) + 1
            problems.append(Violation(
                f"FilterTensor.Sizes[{i + 2}]", "filter",
                f"is {window[i]} with Dilations {g['Dilations'][i]}: the window spans {span} elements",
                f"an output size of at least 1: (Input - 1) * Strides + span - StartPadding - EndPadding + "
                f"OutputPadding = {size}", what))
    return problems


def _output(tensors, attrs, problems) -> dict:
    x, f = tensors["InputTensor"], tensors["FilterTensor"]
    direction, groups = attrs["Direction"], attrs["GroupCount"]
    g = geometry(len(x.shape) - 2, attrs)
    shape = (x.shape[0], _channels(x, f, direction, groups)[1]) + output_spatial(x.shape[2:], f.shape[2:], direction, g)
    if math.prod(shape) > MAX_ELEMENTS:
        problems.append(Violation("OutputTensor", "", f"would have {math.prod(shape)} elements (Sizes {list(shape)})",
                                  "a DirectML tensor holds at most 2^32 - 1 elements"))
    return {"OutputTensor": TensorInfo(shape, x.data_type)}


def _growth(sizes, attrs) -> dict:
    """An output element sums (FilterChannelCount x the window) products in FORWARD and at most
    (InputChannelCount / GroupCount x the window) in BACKWARD (docs/semantics.md#accumulating-operators): that many rounding
    units of the terms' magnitude, as GEMM's K. The filter's Sizes come as ``attrs['FilterTensor']``
    where the caller knows them; otherwise ``sizes`` (the InputTensor's) bound it by the channels
    alone, for a 1 x 1 window."""
    f = attrs.get("FilterTensor")
    groups = attrs.get("GroupCount") or 1
    if f is not None and len(f) >= 3:
        forward = attrs.get("Direction") in (None, ConvolutionDirection.FORWARD, 0, "FORWARD",
                                             "DML_CONVOLUTION_DIRECTION_FORWARD")
        k = (f[1] if forward else max(f[0] // groups, 1)) * math.prod(f[2:])
    else:
        k = max(sizes[1] // groups, 1) if len(sizes) >= 2 else 1
    return {F32: k + 1, F16: math.ceil((k + 1) / 8192), "half": k + 1}


def _array(name, doc):
    return ParamSpec(name, "UINT[]", default=None, nullable=True, count="DimensionCount",
                     doc=f"{doc} DimensionCount entries (the spatial dimensions); None: all {_UNSET[name]}.")


CONVOLUTION = OpSpec(
    enum_name=PREFIX + "CONVOLUTION",
    summary=("Performs a convolution of the FilterTensor with the InputTensor: forward and backward (transposed) "
             "convolution by Direction and Mode, depth-wise convolution by GroupCount; the bias is broadcast "
             "over the output and added."),
    formula=("perform the convolution into the output tensor; reshape the bias to the same dimension sizes as the "
             "output tensor; add the reshaped bias tensor to the output tensor.\n"
             "FORWARD: Output[n, o, p] = Bias[o] + sum_{c in o's group, k} Input'[n, c, p * Strides + k * "
             "Dilations - StartPadding] * Filter'[o, c, k] (Input' 0 outside the input; Filter' the filter, "
             "flipped along each spatial dimension in CONVOLUTION mode); BACKWARD: the transpose of FORWARD with "
             "the same Strides, Dilations and paddings; then FusedActivation"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("FilterTensor", "input"),
             TensorSpec("BiasTensor", "input", optional=True), TensorSpec("OutputTensor", "output")),
    support=(
        table("4.0", InputTensor=("3 to 5", FLOAT32_FLOAT16), FilterTensor=("3 to 5", FLOAT32_FLOAT16),
              BiasTensor=("3 to 5", FLOAT32_FLOAT16), OutputTensor=("3 to 5", FLOAT32_FLOAT16)),
        table("1.0", InputTensor=("4 to 5", FLOAT32_FLOAT16), FilterTensor=("4 to 5", FLOAT32_FLOAT16),
              BiasTensor=("4 to 5", FLOAT32_FLOAT16), OutputTensor=("4 to 5", FLOAT32_FLOAT16)),
    ),
    params=(
        ParamSpec("Mode", "DML_CONVOLUTION_MODE", default=ConvolutionMode.CROSS_CORRELATION, enum=ConvolutionMode,
                  doc=("CROSS_CORRELATION (the filter as it is, default: what deep-learning libraries call "
                       "convolution) or CONVOLUTION (the filter flipped along each spatial dimension).")),
        ParamSpec("Direction", "DML_CONVOLUTION_DIRECTION", default=ConvolutionDirection.FORWARD,
                  enum=ConvolutionDirection,
                  doc=("FORWARD (default) or BACKWARD: the transpose of FORWARD with the same geometry (a transposed "
                       "convolution, the gradient of FORWARD with respect to its input).")),
        _array("Strides", "The window's step in each spatial dimension (at least 1; not the tensors' strides)."),
        _array("Dilations", "The spacing of the filter's elements in each spatial dimension (at least 1)."),
        _array("StartPadding", "Implicit zeros before each spatial dimension (BACKWARD: crops the start)."),
        _array("EndPadding", "Implicit zeros after each spatial dimension (BACKWARD: crops the end)."),
        _array("OutputPadding", "Output elements added at the end of each spatial dimension."),
        ParamSpec("GroupCount", "UINT", default=1,
                  doc="The number of groups the channels are divided into (default 1; InputChannelCount: depthwise)."),
        ParamSpec("FusedActivation", "DML_OPERATOR_DESC*", default=None, nullable=True,
                  doc=("An optional fused activation applied after the convolution and the bias: a "
                       "dmljax.FusedActivation, e.g. FusedActivation('ACTIVATION_RELU').")),
    ),
    constraints=(SameDataType(("InputTensor", "FilterTensor", "BiasTensor", "OutputTensor")),),
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    ulp_growth=_growth,
    gradient=("dInput = the convolution of the other Direction with the same filter and geometry applied to dY' "
              "(FORWARD's input gradient is BACKWARD, and the reverse), dFilter = the products of the input's "
              "windows and dY' summed over the batch and the output positions, dBias = dY' summed over all but "
              "the channels, where dY' is dY through the fused activation's gradient; FLOAT32 products, FLOAT16 "
              "accumulated in FLOAT32 and rounded once to each input's type (JAX's transposes of the same "
              "convolution)."),
    notes=("InputTensor {N, C, spatial...}; FORWARD FilterTensor {OutputChannelCount, InputChannelCount / "
           "GroupCount, window...}, BACKWARD FilterTensor {InputChannelCount, OutputChannelCount / GroupCount, "
           "window...} (the FORWARD convolution's filter, as ONNX's ConvTranspose has it); BiasTensor "
           "(optional) {1, OutputChannelCount, 1...}."),
    extra_checks=(_checks,),
    infer_outputs=_output,
    silent=(
        SilentChoice(
            "CONVOLUTION's BACKWARD direction, OutputPadding and defaults",
            "BACKWARD is the transpose (adjoint) of FORWARD with the same Strides, Dilations and paddings, its "
            "FilterTensor {InputChannelCount, OutputChannelCount / GroupCount, window...} (the FORWARD filter, "
            "as ONNX's ConvTranspose); spatial output sizes FORWARD (Input + StartPadding + EndPadding - "
            "Dilations x (Window - 1) - 1) / Strides + 1 + OutputPadding, BACKWARD (Input - 1) x Strides + "
            "Dilations x (Window - 1) + 1 - StartPadding - EndPadding + OutputPadding, every element computed "
            "by the direction's formula (FORWARD windows past the end padding read zeros); Mode CONVOLUTION "
            "flips the filter in either direction; Mode, Direction, GroupCount default to CROSS_CORRELATION, "
            "FORWARD, 1 and the five arrays to ones (Strides, Dilations) and zeros (paddings), DirectMLX's; "
            "FLOAT32 products are FLOAT32 (never TF32) and the FLOAT32 convolution is written (its denormals "
            "flushed) before the bias is added, FLOAT16 accumulates in FLOAT32 and adds the bias before its "
            "one rounding; a budget of (channels x window + 1) rounding units of the terms' magnitude",
            "The page describes OutputPadding as \"a zero padding\" of the result and gives neither the "
            "BACKWARD filter layout nor any output-size formula or defaults; its Mode interactions table holds "
            "with these choices (a transposed convolution's kernel is flipped exactly when one of CONVOLUTION "
            "and BACKWARD is chosen). jax.grad of FORWARD with respect to the input equals BACKWARD (tested)."),
        SilentChoice(
            "CONVOLUTION FLOAT32 forward on a GPU",
            "a Pallas kernel (`dmljax/_src/kernels/convolution.py`) for two spatial dimensions, one group, "
            "strides of 1 or 2, windows of 2 to 9 elements at most 3 a side, 16, 32 or 64 channels in and out, "
            "any padding and dilation, no OutputPadding: an implicit product over the taps with the flushes in "
            "its loads and stores; elsewhere XLA's convolution (cuDNN) between the flush passes",
            "The same FLOAT32 products (never TF32) and flushes; only the order of the additions differs, "
            "within the budget (checked compiled on the H100, `tests/gpu/kernels.py`); 1.05-1.66x lax's speed "
            "where it applies"),
        SilentChoice(
            "CONVOLUTION FLOAT32 depthwise on a GPU",
            "Pallas kernels (`dmljax/_src/kernels/convolution_depthwise.py`) for two spatial dimensions, GroupCount "
            "equal to the input channels (one filter channel a group; its rule: no channel multiplier, at least 16 "
            "channels), strides of 1 or 2, windows of 2 to 25 elements at most 5 a side, any padding and dilation, "
            "no OutputPadding: element-wise multiply-adds over the taps with the flushes in their loads and stores, "
            "for the output (the filter's and the input's gradients have kernels too, which the measured rule does "
            "not take); elsewhere XLA's convolution (cuDNN) between the flush passes",
            "The same FLOAT32 products and flushes; only the order of the additions differs, within the budget "
            "(tested in Pallas's interpreter against float64 and bit for bit against XLA's grouped convolution on "
            "integers, `tests/ops/convolution/test_convolution_depthwise_kernel.py`; on a GPU by "
            "`tests/gpu/kernels.py`); the derivatives are the XLA formula's"),
        SilentChoice(
            "CONVOLUTION's BACKWARD direction with strides",
            "where its measured rule takes the call (`dmljax/_src/kernels/convolution_phases.py`, per platform, "
            "kind, type and direction: the output, the input's derivative and the filter's each in its form; "
            "on the CPU windows a multiple of the strides along them, without dilation; on CUDA, from an H200 "
            "run, most outputs and some filters' gradients, and grouped calls in every direction), the "
            "output's phases (its positions of each residue modulo Strides) as FORWARD convolutions of the "
            "undilated input with the sub-filter of the window taps that land on each, interleaved, FLOAT32 at "
            "HIGHEST precision and FLOAT16 accumulated in FLOAT32; elsewhere XLA's convolution of the input "
            "spread out by Strides",
            "The same products but those of the spread input's zeros; only the order of the additions differs, "
            "within the budget (tested against the input-dilated convolution and float64, "
            "`tests/ops/convolution/test_convolution_phases.py`)"),
        SilentChoice(
            "CONVOLUTION with unit spatial dimensions on the CPU",
            "where its measured rule takes the call (`dmljax/_src/kernels/convolution_squeezed.py`: on the CPU, "
            "the spatial dimensions of one input element, a one-element window and no padding or OutputPadding "
            "dropped where another is kept, as a 1-D convolution exported as 2-D with a K x 1 window over "
            "{N, C, H, 1}), the convolution of the remaining spatial dimensions, FLOAT32 at HIGHEST precision "
            "and FLOAT16 accumulated in FLOAT32; elsewhere XLA's convolution of all of them",
            "The same products; only the order of the additions differs, within the budget (tested against the "
            "convolution as written and float64, `tests/ops/convolution/test_convolution_squeezed.py`)"),
        SilentChoice(
            "CONVOLUTION of a 1 x 1 window on a GPU",
            "one group, no padding or OutputPadding (FORWARD at any strides, BACKWARD at unit strides): a matrix "
            "product over the channels (`dmljax/_src/kernels/convolution_gemm.py`: the positions as rows, or one "
            "product an image) where its measured rule takes the call, by the memory order the program keeps "
            "(NCHW as written for a call outside any trace, a compiled operator of packed descs or "
            "`dmljax.packed_memory()`; else XLA's), FLOAT32 at HIGHEST precision and FLOAT16 accumulated in "
            "FLOAT32; elsewhere XLA's convolution",
            "The same products; only the order of the additions differs, within the budget (tested against the "
            "convolution and float64, `tests/ops/convolution/test_convolution_gemm.py`)"),
    ),
)


def _spatial_flip(w):
    return lax.rev(w, tuple(range(2, w.ndim)))


def _transposed_filter(w, groups):
    """{C_in, C_out / G, window...} (a FORWARD filter of the reverse direction) as the
    {C_out, C_in / G, window...} filter of a forward convolution, group by group."""
    c_in, c_out_g = w.shape[:2]
    w = w.reshape((groups, c_in // groups, c_out_g) + w.shape[2:])
    w = jnp.swapaxes(w, 1, 2)
    return w.reshape((groups * c_out_g, c_in // groups) + w.shape[3:])


def _gemm(x, w, direction, mode, groups, g, precision, accumulate):
    """The convolution as a matrix product on CUDA, where kernels/convolution_gemm.py's rule takes
    one of its forms for the call (a 1 x 1 window: products over the channels alone; the other
    forms elsewhere); else None."""
    forward = direction is ConvolutionDirection.FORWARD
    route = choose(CONVOLUTION_GEMM_COLUMNS, CONVOLUTION_GEMM_ROWS, facts=(
        x.shape, w.shape, x.dtype, forward, groups, g["Strides"], g["Dilations"], g["StartPadding"], g["EndPadding"],
        g["OutputPadding"]))
    if route.kernel is None:
        return None
    form = gemm_columns if route.kernel is CONVOLUTION_GEMM_COLUMNS else gemm_rows
    return lax.platform_dependent(
        x, w, cuda=lambda a, b: form(a, b, forward, g["Strides"], precision, accumulate),
        default=lambda a, b: _other_forms(a, b, direction, mode, groups, g, precision, accumulate))


def xla_convolution(x, w, strides, pads, *, lhs_dilation=None, rhs_dilation=None, groups=1, precision=None,
                    preferred_element_type=None):
    """``lax.conv_general_dilated`` of ``x`` {N, C, spatial...} and ``w`` {O, C / groups,
    window...}; on the CPU with the filter transposed to {window..., C / groups, O} first, the
    layout XLA's CPU convolution reads: XLA would transpose the filter inside the program on
    every call, and as its own operation a transpose of the filter alone is computed once where
    the filter is a model's parameter (dmljax/_src/onnx/prepare.py). Its derivatives are XLA's
    convolution's, on every platform (``tangent``)."""
    n = w.ndim

    def conv(a, b, dimension_numbers=None):
        return lax.conv_general_dilated(a, b, strides, pads, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                                        dimension_numbers=dimension_numbers, feature_group_count=groups,
                                        precision=precision, preferred_element_type=preferred_element_type)

    def cpu(a, b):
        spatial = tuple(range(2, n))
        numbers = lax.ConvDimensionNumbers(tuple(range(n)), (n - 1, n - 2) + tuple(range(n - 2)), tuple(range(n)))
        return conv(a, jnp.transpose(b, spatial + (1, 0)), numbers)

    @jax.custom_jvp
    def convolution(a, b):
        return lax.platform_dependent(a, b, cpu=cpu, default=conv)

    def tangent(primals, tangents):
        # The convolution is bilinear: its tangent is conv(da, w) + conv(x, dw), here by XLA's
        # convolution as written, with no choice of platform. JAX would otherwise transpose the
        # platform's branch inside a conditional whose index the forward pass hands to the
        # backward one; XLA's CPU compiler folds that conditional only after it has put its
        # convolutions in the layout its library reads, and ran the gradients' convolutions as
        # plain loops (a 3 x 3 filter gradient at 14 x 14, 256 channels, batch 4: 53 ms where lax
        # takes 2.9; 3.1 ms this way; the input's gradient 32 ms, now 2.4, lax 2.3).
        (a, b), (da, db) = primals, tangents
        terms = [conv(t, b) for t in (da,) if not isinstance(t, SymbolicZero)]
        terms += [conv(a, t) for t in (db,) if not isinstance(t, SymbolicZero)]
        y = convolution(a, b)
        return y, sum(terms[1:], terms[0]) if terms else jnp.zeros(y.shape, y.dtype)

    convolution.defjvp(tangent, symbolic_zeros=True)
    return convolution(x, w)


def grouped(conv, x, w, groups):
    """``conv(x, w)``, a convolution of ``groups`` groups: where there are several, split over
    the devices along the batch of a sharded input, the filter whole on each (XLA's partitioner
    would gather a grouped convolution's whole input onto each device:
    dmljax/_src/partition.py)."""
    return conv(x, w) if groups == 1 else along_leading_axes(conv, 1, whole=(1,))(x, w)


def convolve(x, w, direction, mode, groups, g, precision, accumulate):
    """The convolution without bias or activation, accumulated in ``accumulate``."""
    y = _gemm(x, w, direction, mode, groups, g, precision, accumulate)
    return _other_forms(x, w, direction, mode, groups, g, precision, accumulate) if y is None else y


def _other_forms(x, w, direction, mode, groups, g, precision, accumulate):
    """The convolution by the forms after the matrix product: without its unit spatial dimensions,
    by its output's phases, or by XLA's convolution."""
    y = _squeezed(x, w, direction, mode, groups, g, precision, accumulate)
    if y is None:
        y = _unsqueezed(x, w, direction, mode, groups, g, precision, accumulate)
    return y


def _unsqueezed(x, w, direction, mode, groups, g, precision, accumulate):
    y = _phases(x, w, direction, mode is ConvolutionMode.CONVOLUTION, groups, g, precision, accumulate)
    if y is not None:
        return y
    return _xla(x, w, direction, mode is ConvolutionMode.CONVOLUTION, groups, g, precision, accumulate)


def _squeezed(x, w, direction, mode, groups, g, precision, accumulate):
    """The convolution without its unit spatial dimensions (kernels/convolution_squeezed.py: a
    convolution of fewer spatial dimensions, by the forms that rank takes), where that module's
    rules take the call on the platform the program is lowered for; else None."""
    facts = (x.shape, w.shape, x.dtype, direction is ConvolutionDirection.FORWARD, groups, g["Strides"],
             g["Dilations"], g["StartPadding"], g["EndPadding"], g["OutputPadding"])
    on_cuda = choose(CONVOLUTION_SQUEEZED, facts=facts).kernel is not None
    on_cpu = squeezed_on_cpu(*facts)
    if not (on_cuda or on_cpu):
        return None
    unit = unit_dimensions(x.shape, w.shape, g["StartPadding"], g["EndPadding"], g["OutputPadding"])
    kept = [i for i in range(x.ndim - 2) if i not in unit]

    def squeezed(a, b):
        less = {n: tuple(v[i] for i in kept) for n, v in g.items()}
        y = convolve(a.reshape(a.shape[:2] + tuple(a.shape[2 + i] for i in kept)),
                     b.reshape(b.shape[:2] + tuple(b.shape[2 + i] for i in kept)), direction, mode, groups, less,
                     precision, accumulate)
        at = iter(y.shape[2:])
        return y.reshape(y.shape[:2] + tuple(1 if i in unit else next(at) for i in range(x.ndim - 2)))

    def written(a, b):
        return _unsqueezed(a, b, direction, mode, groups, g, precision, accumulate)

    return lax.platform_dependent(x, w, cpu=squeezed if on_cpu else written, cuda=squeezed if on_cuda else written,
                                  default=written)


def _forward(x, w, strides, pads, dilations, groups, precision, accumulate):
    """A FORWARD cross-correlation of ``x`` with ``w`` {O, C / groups, window...}, ``pads`` a (start,
    end) pair a spatial dimension: XLA's convolution, or on the CPU the taps where a group has few
    channels (depthwise.on_cpu)."""
    return depthwise.on_cpu(lambda p, q: grouped(lambda a, b: xla_convolution(
        a, b, strides, pads, rhs_dilation=dilations, groups=groups, precision=precision,
        preferred_element_type=accumulate), p, q, groups), x, w, groups, strides, pads, dilations, accumulate)


def _phases(x, w, direction, flip, groups, g, precision, accumulate):
    """BACKWARD with strides as the forward convolutions of its output's phases
    (kernels/convolution_phases.py), where that module's rules take the call in some direction on
    the platform the program is lowered for (the CPU's, or CUDA's through the seam); else None.

    The rules choose per direction: the output by one form, its tangent in the input by another,
    in the filter by a third (a custom_jvp: the convolution is bilinear, so the tangent is two
    convolutions, each in its own form, and reverse mode transposes each; on the H200 the output
    of a 2 x 2 window at stride 2 takes the phases and the input's FLOAT16 gradient cuDNN's plain
    strided convolution, each the faster there)."""
    facts = (x.shape, w.shape, x.dtype, direction is ConvolutionDirection.FORWARD, groups, g["Strides"],
             g["Dilations"], g["StartPadding"], g["EndPadding"], g["OutputPadding"])
    sums = accumulate is not None  # FLOAT16 operands: FLOAT32 sums, or (None) a FLOAT16 result
    on_cuda = (taken("cuda", *facts, sums=sums) if choose(CONVOLUTION_PHASES, facts=facts).kernel is not None
               else dict.fromkeys(DIRECTIONS, False))
    on_cpu = taken("cpu", *facts, sums=sums)
    if not (any(on_cuda.values()) or any(on_cpu.values())):
        return None

    def phased(a, b):
        wt = _transposed_filter(_spatial_flip(b) if flip else b, groups)
        return phases(a, wt, groups, g["Strides"], g["Dilations"], g["StartPadding"], g["EndPadding"],
                      g["OutputPadding"], lambda p, q, dilations, pads: _forward(
                          p, q, (1,) * (p.ndim - 2), pads, dilations, groups, precision, accumulate),
                      lambda p, q, contracting, batch: lax.dot_general(
                          p, q, (contracting, batch), precision=precision, preferred_element_type=accumulate))

    def dilated(a, b):
        return _xla(a, b, direction, flip, groups, g, precision, accumulate)

    def form(d):
        if on_cuda[d] == on_cpu[d]:
            return phased if on_cpu[d] else dilated
        return lambda a, b: lax.platform_dependent(a, b, cpu=phased if on_cpu[d] else dilated,
                                                   cuda=phased if on_cuda[d] else dilated, default=dilated)

    if on_cuda == {d: on_cuda["fwd"] for d in DIRECTIONS} and on_cpu == {d: on_cpu["fwd"] for d in DIRECTIONS}:
        return form("fwd")(x, w)  # one form in every direction: JAX's own derivative of it

    @jax.custom_jvp
    def conv(a, b):
        return form("fwd")(a, b)

    def conv_jvp(primals, tangents):
        a, b = primals
        da, db = tangents
        # each tangent by JAX's derivative of its direction's form (the forms' own pieces, such
        # as the sharded grouped convolution, differentiate and transpose by their rules)
        terms = [t for t in (None if isinstance(da, SymbolicZero) else jax.jvp(
                                 lambda p: form("bwd_data")(p, b), (a,), (da,))[1],
                             None if isinstance(db, SymbolicZero) else jax.jvp(
                                 lambda q: form("bwd_filter")(a, q), (b,), (db,))[1]) if t is not None]
        y = conv(a, b)
        return y, sum(terms[1:], terms[0]) if terms else jnp.zeros_like(y)

    conv.defjvp(conv_jvp, symbolic_zeros=True)
    return conv(x, w)


def _xla(x, w, direction, flip, groups, g, precision, accumulate):
    """The convolution by XLA's convolution."""
    if direction is ConvolutionDirection.FORWARD:
        w = _spatial_flip(w) if flip else w
        # OutputPadding: the padded input extended by OutputPadding more windows' steps
        pads = [(a, b + o * s) for a, b, o, s in zip(g["StartPadding"], g["EndPadding"], g["OutputPadding"],
                                                     g["Strides"])]
        return _forward(x, w, g["Strides"], pads, g["Dilations"], groups, precision, accumulate)
    # BACKWARD: the input spread out by Strides, slid over by the transposed filter flipped
    # (CROSS_CORRELATION; the flips cancel in CONVOLUTION mode). The flip is the filter's last
    # operation: XLA's GPU rewrite of an input-dilated convolution into cuDNN's transposed
    # convolution (backward-data) looks for a reversed filter feeding it, and otherwise convolves
    # the spread input (the H200 compiled dmljax's FLOAT16 call, the flip first and its result
    # asked for in FLOAT16, as cuDNN's forward convolution: 0.83 ms where lax's, flip last, took
    # 0.37; not yet measured with the flip last).
    w = _transposed_filter(w, groups)
    w = w if flip else _spatial_flip(w)
    spans = [d * (k - 1) + 1 for d, k in zip(g["Dilations"], w.shape[2:])]
    pads = [(span - 1 - a, span - 1 - b + o) for span, a, b, o in
            zip(spans, g["StartPadding"], g["EndPadding"], g["OutputPadding"])]
    return grouped(lambda a, b: xla_convolution(
        a, b, (1,) * (a.ndim - 2), pads, lhs_dilation=g["Strides"], rhs_dilation=g["Dilations"],
        groups=groups, precision=precision, preferred_element_type=accumulate), x, w, groups)


def _half_operands(x, w, geometry_, narrow: bool = False):
    """FLOAT16 operands to the product as they are, accumulated in FLOAT32 (FLOAT16 products are
    exact in FLOAT32; widening them first would make XLA skip the tensor cores, as with GEMM).

    ``narrow`` (a BACKWARD call without a bias, whose sums are rounded to FLOAT16 and nothing
    else): on CUDA the result is asked for in FLOAT16, which cuDNN accumulates in FLOAT32 and
    rounds once, the same values. XLA then compiles an input-dilated convolution as cuDNN's
    transposed convolution (backward-data), as lax's FLOAT16 call; asked for FLOAT32 sums, it
    convolved the spread input (H200, batch 128, 512 -> 256 channels at 28 x 28, 2 x 2 at stride
    2: 0.81 ms against lax's 0.37; benchmarks/results/h200/convolution/transposed_strided.md).

    Its gradient is written out because autodiff's is slow: the cotangent of the FLOAT32 result
    is FLOAT32, so JAX's transposed convolutions would widen the filter and the input and run
    FLOAT32 convolutions (1.75x lax's forward+backward time on the H100). The cotangent holds
    FLOAT16 values (it is the cotangent of the FLOAT16 output, widened by the rounding's
    transpose), so it goes back to FLOAT16 exactly, and the transposed convolutions take FLOAT16
    operands: on a GPU with FLOAT16 results, which cuDNN accumulates in FLOAT32 and rounds once;
    elsewhere (the CPU's FLOAT16 convolution may accumulate in FLOAT16) widened to FLOAT32
    products at HIGHEST, rounded once to each input's type."""

    def conv(a, b, accumulate):
        return convolve(a, b, *geometry_, None, accumulate)

    def run(a, b):
        if not narrow:
            return conv(a, b, np.float32)
        # widened back to FLOAT32 exactly; the store's rounding to FLOAT16 cancels it
        return lax.platform_dependent(a, b, cuda=lambda p, q: conv(p, q, None).astype(np.float32),
                                      default=lambda p, q: conv(p, q, np.float32))

    def run_fwd(a, b):
        return run(a, b), (a, b)

    def run_bwd(res, dy):
        a, b = res
        dy16 = dy.astype(np.float16)

        def narrow(a, b, dy16):
            return jax.vjp(lambda p, q: conv(p, q, None), a, b)[1](dy16)

        def wide(a, b, dy16):
            def widened(p, q):
                return convolve(p.astype(np.float32), q.astype(np.float32), *geometry_, lax.Precision.HIGHEST,
                                np.float32)
            return jax.vjp(widened, a, b)[1](dy16.astype(np.float32))

        return tuple(lax.platform_dependent(a, b, dy16, cpu=wide, default=narrow))

    run = backward_rule(run, run_fwd, run_bwd)
    return run(x, w)


def _taps_route(x, w, geometry_) -> Route:
    """Whether a FLOAT32 convolution takes the taps kernel on CUDA (``_taps``)."""
    direction, _, groups, g = geometry_
    return choose(CONVOLUTION_TAPS, facts=(x.shape, w.shape, x.dtype, direction is ConvolutionDirection.FORWARD,
                                           groups, g["Strides"], g["Dilations"], g["StartPadding"],
                                           g["EndPadding"], g["OutputPadding"]))


def written_float32(x, w, geometry_):
    """A FLOAT32 convolution by XLA's convolution, written to FLOAT32: the inputs' denormals read
    as zeros, the result's written as zeros (``_taps``'s branch off CUDA, and every FLOAT32
    convolution the kernel does not take)."""
    return store(convolve(load(x), load(w), *geometry_, lax.Precision.HIGHEST, np.float32), F32)


def _taps(x, w, geometry_, route: Route):
    """A FLOAT32 convolution written to FLOAT32 (denormals of the inputs read as zeros, of the
    result written as zeros), where ``CONVOLUTION_TAPS`` applies: on CUDA by
    kernels/convolution.py's kernel, which flushes in its loads and stores, elsewhere by the XLA
    formula. The derivative is the XLA formula's (the flushes' derivative being the identity):
    the convolution is bilinear, so its tangent is two convolutions JAX can transpose for reverse
    mode, and forward mode works as a custom_vjp's would not."""
    direction, mode, groups, g = geometry_

    def conv(a, b):
        return convolve(a, b, *geometry_, lax.Precision.HIGHEST, np.float32)

    def xla(a, b):
        return written_float32(a, b, geometry_)

    def kernel(a, b):
        b = _spatial_flip(b) if mode is ConvolutionMode.CONVOLUTION else b
        return convolve_taps(a, b, g["Strides"], g["Dilations"], g["StartPadding"], g["EndPadding"])

    @jax.custom_jvp
    def run(a, b):
        return route.run(xla, kernel, a, b, lead=1, whole=(1,))

    return _bilinear(run, lambda a, b, da: conv(da, load(b)), lambda a, b, db: conv(load(a), db))(x, w)


def _bilinear(run, along_a, along_b):
    """``run``, a ``jax.custom_jvp`` function of two operands that is bilinear in them, given its
    tangent ``along_a(a, b, da) + along_b(a, b, db)``; a tangent that is a symbolic zero costs
    nothing (a jax.grad by one argument computes one term). Returns ``run``."""
    def run_jvp(primals, tangents):
        (a, b), (da, db) = primals, tangents
        y = run(a, b)
        terms = [f(a, b, t) for f, t in ((along_a, da), (along_b, db)) if not isinstance(t, SymbolicZero)]
        return y, sum(terms[1:], terms[0]) if terms else jnp.zeros_like(y)

    run.defjvp(run_jvp, symbolic_zeros=True)
    return run


def _depthwise_routes(x, w, geometry_) -> tuple[Route, Route, Route] | None:
    """The routes of a FLOAT32 depthwise convolution's output, input gradient and filter gradient
    (kernels/convolution_depthwise.py), or None where none takes a kernel."""
    direction, _, groups, g = geometry_
    facts = (x.shape, w.shape, x.dtype, direction is ConvolutionDirection.FORWARD, groups, g["Strides"],
             g["Dilations"], g["StartPadding"], g["EndPadding"], g["OutputPadding"])
    routes = tuple(choose(k, facts=facts) for k in (CONVOLUTION_DEPTHWISE, CONVOLUTION_DEPTHWISE_DATA,
                                                    CONVOLUTION_DEPTHWISE_FILTER))
    return routes if any(r.kernel is not None for r in routes) else None


def _by_kernel(route: Route, xla, kernel, a, b, *, lead: int):
    """``route.run(xla, kernel, a, b)`` for a bilinear ``xla`` that ``kernel`` computes on CUDA,
    differentiated as ``xla`` (JAX differentiates no Pallas call)."""
    if route.kernel is None:
        return xla(a, b)

    @jax.custom_jvp
    def run(p, q):
        return route.run(xla, kernel, p, q, lead=lead, whole=(1,) if lead else ())

    return _bilinear(run, lambda p, q, dp: jax.jvp(lambda t: xla(t, q), (p,), (dp,))[1],
                     lambda p, q, dq: jax.jvp(lambda t: xla(p, t), (q,), (dq,))[1])(a, b)


def _depthwise(x, w, geometry_, routes):
    """A FLOAT32 depthwise convolution written to FLOAT32 (denormals of the inputs read as zeros,
    of the result written as zeros), where a route of ``_depthwise_routes`` takes a kernel: on CUDA
    the output, and by their rules the input's and the filter's gradients, by
    kernels/convolution_depthwise.py's kernels, which flush in their loads and stores, elsewhere
    by the XLA formula. The derivative is the XLA formula's (as ``_taps``'s): the tangent is two
    convolutions, by XLA's formula in forward mode, whose transposes reverse mode takes by the
    kernels where their rules do (``custom_transposed``), by JAX's transposes of XLA's otherwise;
    the cotangent and the gradients are not flushed, the input the filter's gradient reads is."""
    direction, mode, groups, g = geometry_
    if mode is ConvolutionMode.CONVOLUTION:  # the flip, then a cross-correlation (JAX transposes the flip)
        w = _spatial_flip(w)
        geometry_ = (direction, ConvolutionMode.CROSS_CORRELATION, groups, g)
    output, data, filter_ = routes
    strides, dilations, start, end = g["Strides"], g["Dilations"], g["StartPadding"], g["EndPadding"]

    def conv(a, b):
        return convolve(a, b, *geometry_, lax.Precision.HIGHEST, np.float32)

    def data_xla(ct, b):  # JAX's transpose of the tangent (at zeros: it is linear; the primal is dead code)
        return jax.vjp(lambda t: conv(t, b), jnp.zeros(x.shape, x.dtype))[1](ct)[0]

    def data_kernel(ct, b):
        mirrored = data_geometry(b.shape[2:], dilations, start, end)
        return depthwise_forward(ct, _spatial_flip(b), (1, 1), dilations, *mirrored, flush=(False, False, False))

    def filter_xla(a, ct):
        return jax.vjp(lambda t: conv(load(a), t), jnp.zeros(w.shape, w.dtype))[1](ct)[0]

    def filter_kernel(a, ct):
        return depthwise_filter(a, ct, w.shape[2:], strides, dilations, start, end, flush_input=True)

    @jax.custom_jvp
    def run(a, b):
        return output.run(lambda p, q: written_float32(p, q, geometry_),
                          lambda p, q: depthwise_forward(p, q, strides, dilations, start, end), a, b,
                          lead=1, whole=(1,))

    def along_input(a, b, da):
        return custom_transposed(lambda q, t: (conv(t, q),), lambda q, ct: (_by_kernel(
            data, data_xla, data_kernel, ct, q, lead=1),), (load(b),), (da,))[0]

    def along_filter(a, b, db):
        return custom_transposed(lambda p, t: (conv(load(p), t),), lambda p, ct: (_by_kernel(
            filter_, filter_xla, filter_kernel, p, ct, lead=0),), (a,), (db,))[0]

    return _bilinear(run, along_input, along_filter)(x, w)


@operator(CONVOLUTION)
def convolution(input, filter, bias=None, *, mode, direction, strides, dilations, start_padding, end_padding,
                output_padding, group_count, fused_activation, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)  # dml_convolution_2d.json
        >>> dmljax.convolution(x, np.full((1, 1, 2, 2), 0.5, np.float32))
        Array([[[[ 6.,  8.],
                 [12., 14.]]]], dtype=float32)
        >>> dmljax.convolution(np.ones((1, 1, 2, 2), np.float32), np.ones((1, 1, 3, 3), np.float32),
        ...                    direction="BACKWARD", strides=(2, 2))[0, 0]  # transposed: windows spread out
        Array([[1., 1., 2., 1., 1.],
               [1., 1., 2., 1., 1.],
               [2., 2., 4., 2., 2.],
               [1., 1., 2., 1., 1.],
               [1., 1., 2., 1., 1.]], dtype=float32)
    """
    half = allow_half_precision_computation
    dt = DataType.from_dtype(input.dtype)
    ct = compute_dtype(dt, half)
    attrs = {"Strides": strides, "Dilations": dilations, "StartPadding": start_padding, "EndPadding": end_padding,
             "OutputPadding": output_padding}
    g = geometry(input.ndim - 2, attrs)
    geometry_ = (direction, mode, group_count, g)
    if dt is F32:  # the convolution written to the output (denormals flushed), then the bias added to it
        route = _taps_route(input, filter, geometry_)
        depthwise_routes = _depthwise_routes(input, filter, geometry_) if route.kernel is None else None
        if route.kernel is not None:
            out = _taps(input, filter, geometry_, route)
        elif depthwise_routes is not None:
            out = _depthwise(input, filter, geometry_, depthwise_routes)
        else:
            out = written_float32(input, filter, geometry_)
        if bias is not None:
            out = store(out + load(bias), dt)
        return apply_fused(fused_activation, out, half)
    if dt is F16 and not half:
        out = _half_operands(input, filter, geometry_,
                             narrow=bias is None and direction is ConvolutionDirection.BACKWARD)
    else:
        out = convolve(load(input, half), load(filter, half), *geometry_, None, ct)
    if bias is not None:  # FLOAT16: added to the FLOAT32 sums, rounded once
        out = out + load(bias, half)
    return apply_fused(fused_activation, store(out, dt), half)
