"""The mapping of ONNX operators (ai.onnx, by opset range) onto dmljax's DirectML operators.

``TABLE`` is the data: one ``Rule`` a row, naming the ONNX operator, the opsets it covers, the
DirectML operators it becomes, which inputs are static (folded at load or trace time and passed
as DirectML attributes), a check of the node's attributes (the reason it cannot be mapped, or
None) and its restrictions in words; docs/onnx.md is generated from it. Each row's ``lower``
builds the node's outputs from dmljax operators, following ONNX Runtime's DirectML execution
provider (its ``DmlOperator*`` classes): ranks padded as DirectML requires, broadcasts made
explicit (a zero stride in DirectML, ``jnp.broadcast_to`` here), reshapes as plain reshapes (a
desc in DirectML, not an operator).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.errors import ValidationError, Violation
from dmljax._src.enums import AxisDirection, ConvolutionDirection, DepthSpaceOrder
from dmljax._src.enums import MultiheadAttentionMaskType as MaskType
from dmljax._src.fused import FusedActivation
from dmljax._src.ops import OPERATORS
from dmljax._src.ops.quantization.dequantize_gemm import dequantize_gemm

__all__ = ["Rule", "Call", "TABLE", "PREVIEW", "CONTROL_FLOW", "UNROLL", "rules_for", "find_rule", "DML"]

DML = OPERATORS
"""dmljax's operators by Python name."""


@dataclasses.dataclass
class Call:
    """One node being lowered: its inputs (arrays, static NumPy values, or None where an optional
    input is left out), its attributes (Python values), how many outputs the graph uses and the
    node's output names ("" for one left out; empty where a row builds a Call itself)."""

    op_type: str
    opset: int
    inputs: list
    attrs: dict
    output_count: int
    outputs: tuple[str, ...] = ()

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, i: int):
        return self.inputs[i] if i < len(self.inputs) else None

    def static(self, i: int, default: Any = None):
        """Input ``i`` as a NumPy value (the loader made sure it is static), or ``default``."""
        v = self.input(i)
        return default if v is None else np.asarray(v)


@dataclasses.dataclass(frozen=True)
class Rule:
    """One row of the mapping table."""

    op_type: str
    since: int
    until: int | None
    dml: tuple[str, ...]
    lower: Callable[[Call], Sequence]
    static: tuple[int, ...] = ()
    check: Callable[[dict, int], str | None] | None = None
    restrictions: str = ""
    domain: str = ""
    """The operator's domain: "" for ai.onnx, "com.microsoft" for ONNX Runtime's contrib operators
    (``since`` and ``until`` then count that domain's opsets)."""
    check_io: Callable[[dict, int, tuple, tuple], str | None] | None = None
    """A check that also reads which inputs and outputs the node wires (their names, "" for one left
    out): the reason it cannot be mapped, or None."""
    check_shapes: Callable[[dict, int, tuple, tuple], str | None] | None = None
    """A check of the node's input shapes, run at load where the model declares them static: it reads
    the inputs' names ("" for one left out) and their shapes (a tuple of sizes, or None where the
    shape is unknown or symbolic); the reason it cannot be mapped, or None. Where the shapes are not
    static, the lowering refuses the same at the first call."""

    def covers(self, opset: int) -> bool:
        return self.since <= opset and (self.until is None or opset <= self.until)


# ----------------------------------------------------------------------------------------------
# helpers

def _dml(name: str) -> Callable:
    return DML[name]


def _arr(x):
    """A value as an array for a DirectML operator: static 64-bit integers become 32-bit ones
    when JAX's 64-bit mode is off (DirectML's INT64 needs it)."""
    if isinstance(x, (np.ndarray, np.generic)) and not jax.config.jax_enable_x64:
        if x.dtype == np.int64:
            return jnp.asarray(x.astype(np.int32))
        if x.dtype == np.uint64:
            return jnp.asarray(x.astype(np.uint32))
        if x.dtype == np.float64:
            return jnp.asarray(x.astype(np.float32))
    return jnp.asarray(x)


def _bcast(*xs):
    xs = [_arr(x) for x in xs]
    shape = np.broadcast_shapes(*(x.shape for x in xs))
    return [jnp.broadcast_to(x, shape) for x in xs]


def _axis(axis: int, rank: int) -> int:
    return int(axis) + rank if int(axis) < 0 else int(axis)


def _is_bool(x) -> bool:
    return jnp.asarray(x).dtype == jnp.bool_


def _u8(x):
    x = _arr(x)
    return x.astype(jnp.uint8) if x.dtype == jnp.bool_ else x


def _scalars(lower: Callable[[Call], Sequence]) -> Callable[[Call], Sequence]:
    """An element-wise rule on scalars: DirectML's tensors have at least one dimension, so 0-D
    inputs are taken as 1-D tensors of one element (a desc, as ONNX Runtime's DirectML provider
    does) and the outputs made 0-D again."""
    def wrapped(c: Call):
        xs = [x for x in c.inputs if x is not None]
        if not xs or any(jnp.ndim(x) for x in xs):
            return lower(c)
        inner = dataclasses.replace(c, inputs=[None if x is None else np.reshape(x, (1,)) if isinstance(
            x, (np.ndarray, np.generic)) else jnp.reshape(_arr(x), (1,)) for x in c.inputs])  # static stays static
        return [jnp.reshape(y, ()) for y in lower(inner)]
    return wrapped


def _unary(fn: str, **fixed) -> Callable[[Call], Sequence]:
    @_scalars
    def lower(c: Call):
        return [_dml(fn)(_arr(c.inputs[0]), **fixed)]
    return lower


def _activation(fn: str, **attr_map) -> Callable[[Call], Sequence]:
    """An activation whose attributes are ONNX attributes: ``attr_map`` maps the dmljax keyword
    onto (ONNX attribute, ONNX default)."""
    @_scalars
    def lower(c: Call):
        kw = {k: float(c.attr(onnx_name, default)) for k, (onnx_name, default) in attr_map.items()}
        return [_dml(fn)(_arr(c.inputs[0]), **kw)]
    return lower


def _legacy(c: Call, b):
    """Before opset 7, ``broadcast=1`` aligns B with A at ``axis`` (default: the trailing axes)."""
    if c.opset >= 7 or not c.attr("broadcast", 0):
        return b
    a_rank, b = jnp.ndim(c.inputs[0]), _arr(b)
    axis = c.attr("axis")
    axis = a_rank - b.ndim if axis is None else _axis(axis, a_rank)
    return b.reshape(b.shape + (1,) * (a_rank - axis - b.ndim))


def _binary(fn: str) -> Callable[[Call], Sequence]:
    @_scalars
    def lower(c: Call):
        a, b = _bcast(c.inputs[0], _legacy(c, c.inputs[1]))
        return [_dml(fn)(a, b)]
    return lower


def _variadic(fn: str) -> Callable[[Call], Sequence]:
    @_scalars
    def lower(c: Call):
        xs = _bcast(*[x for x in c.inputs if x is not None])
        out = xs[0]
        for x in xs[1:]:
            out = _dml(fn)(out, x)
        return [out]
    return lower


@_scalars
def _mean(c: Call):
    xs = _bcast(*[x for x in c.inputs if x is not None])
    if len(xs) == 2:
        return [_dml("element_wise_mean")(*xs)]
    out = xs[0]
    for x in xs[1:]:
        out = _dml("element_wise_add")(out, x)
    return [_dml("element_wise_identity")(out, scale_bias=(1.0 / len(xs), 0.0))]


def _compare(fn: str) -> Callable[[Call], Sequence]:
    @_scalars
    def lower(c: Call):
        a, b = _bcast(c.inputs[0], _legacy(c, c.inputs[1]))
        return [_dml(fn)(_u8(a), _u8(b)).astype(jnp.bool_)]
    return lower


def _logical(fn: str) -> Callable[[Call], Sequence]:
    @_scalars
    def lower(c: Call):
        xs = _bcast(*[x for x in c.inputs if x is not None])
        return [_dml(fn)(*[_u8(x) for x in xs]).astype(jnp.bool_)]
    return lower


def _data_type(np_dtype) -> str:
    return {np.dtype(np.float32): "FLOAT32", np.dtype(np.float16): "FLOAT16", np.dtype(np.float64): "FLOAT64",
            np.dtype(np.int8): "INT8", np.dtype(np.uint8): "UINT8", np.dtype(np.int16): "INT16",
            np.dtype(np.uint16): "UINT16", np.dtype(np.int32): "INT32", np.dtype(np.uint32): "UINT32",
            np.dtype(np.int64): "INT64", np.dtype(np.uint64): "UINT64"}[np.dtype(np_dtype)]


def _onnx_dtype(code: int):
    return {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64,
            9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}.get(int(code))


def _runtime_dtype(dtype):
    dtype = np.dtype(dtype)
    if not jax.config.jax_enable_x64:
        dtype = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32),
                 np.dtype(np.float64): np.dtype(np.float32)}.get(dtype, dtype)
    return dtype


# ----------------------------------------------------------------------------------------------
# element-wise

@_scalars
def _pow(c: Call):
    x, e = _bcast(c.inputs[0], _legacy(c, c.inputs[1]))
    if e.dtype != x.dtype:
        e = _dml("cast")(e, output_data_type=_data_type(x.dtype))
    return [_dml("element_wise_pow")(x, e)]


def _clip_bounds(c: Call):
    if c.opset < 11:
        return c.attr("min", -np.inf), c.attr("max", np.inf)
    lo, hi = c.static(1), c.static(2)
    return (None if lo is None else lo.item()), (None if hi is None else hi.item())


@_scalars
def _clip(c: Call):
    x = _arr(c.inputs[0])
    lo, hi = _clip_bounds(c)
    if jnp.issubdtype(x.dtype, jnp.floating):
        lo = -np.inf if lo is None else float(np.float32(lo))
        hi = np.inf if hi is None else float(np.float32(hi))
        return [_dml("element_wise_clip")(x, min=lo, max=hi)]
    info = jnp.iinfo(x.dtype)
    lo = info.min if lo is None else int(lo)
    hi = info.max if hi is None else int(hi)
    return [_dml("element_wise_clip1")(x, min=lo, max=hi)]


@_scalars
def _mod(c: Call):
    a, b = _bcast(c.inputs[0], c.inputs[1])
    fn = "element_wise_modulus_truncate" if c.attr("fmod", 0) else "element_wise_modulus_floor"
    return [_dml(fn)(a, b)]


@_scalars
def _where(c: Call):
    cond, a, b = _bcast(c.inputs[0], c.inputs[1], c.inputs[2])
    return [_dml("element_wise_if")(_u8(cond), a, b)]


def _prelu(c: Call):
    slope = _arr(c.inputs[1])
    if c.opset < 7 and slope.ndim == 1 and jnp.ndim(c.inputs[0]) > 2 and slope.size > 1:
        slope = slope.reshape(-1, *([1] * (jnp.ndim(c.inputs[0]) - 2)))  # one slope a channel
    x, slope = _bcast(c.inputs[0], slope)
    return [_dml("activation_parameterized_relu")(x, slope)]


@_scalars
def _is_inf(c: Call):
    neg, pos = c.attr("detect_negative", 1), c.attr("detect_positive", 1)
    mode = "EITHER" if neg and pos else ("POSITIVE" if pos else "NEGATIVE")
    if not neg and not pos:
        return [jnp.zeros(jnp.shape(c.inputs[0]), jnp.bool_)]
    return [_dml("element_wise_is_infinity")(_arr(c.inputs[0]), infinity_mode=mode).astype(jnp.bool_)]


@_scalars
def _is_nan(c: Call):
    return [_dml("element_wise_is_nan")(_arr(c.inputs[0])).astype(jnp.bool_)]


@_scalars
def _not(c: Call):
    return [_dml("element_wise_logical_not")(_u8(c.inputs[0])).astype(jnp.bool_)]


@_scalars
def _bit_shift(c: Call):
    a, b = _bcast(c.inputs[0], c.inputs[1])
    fn = "element_wise_bit_shift_left" if c.attr("direction", b"LEFT") in (b"LEFT", "LEFT") else "element_wise_bit_shift_right"
    return [_dml(fn)(a, b)]


@_scalars
def _round(c: Call):
    return [_dml("element_wise_round")(_arr(c.inputs[0]), rounding_mode="HALVES_TO_NEAREST_EVEN")]


@_scalars
def _gelu(c: Call):
    """approximate='none': ACTIVATION_GELU (the erf form); 'tanh': 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715
    x^3))) by MULTIPLY, IDENTITY's ScaleBias, ADD and TANH."""
    x = _arr(c.inputs[0])
    if _text(c.attr("approximate"), "none") != "tanh":
        return [_dml("activation_gelu")(x)]
    mul = _dml("element_wise_multiply")
    cube = _dml("element_wise_identity")(mul(mul(x, x), x), scale_bias=(0.044715, 0.0))
    t = _dml("activation_tanh")(_dml("element_wise_identity")(_dml("element_wise_add")(x, cube),
                                                               scale_bias=(float(np.sqrt(2 / np.pi)), 0.0)))
    return [mul(_dml("element_wise_identity")(x, scale_bias=(0.5, 0.0)),
                _dml("element_wise_identity")(t, scale_bias=(1.0, 1.0)))]


@_scalars
def _hard_swish(c: Call):
    return [_dml("activation_hard_swish")(_arr(c.inputs[0]), alpha=1.0 / 6.0, beta=0.5)]


def _softmax(fn: str, fn1: str) -> Callable[[Call], Sequence]:
    def lower(c: Call):
        x = _arr(c.inputs[0])
        if c.opset < 13:  # coerced to 2-D at `axis` (default 1)
            axis = _axis(c.attr("axis", 1), x.ndim)
            rows = int(np.prod(x.shape[:axis], dtype=np.int64))
            y = _dml(fn1)(x.reshape(rows, -1), axes=(1,))
            return [y.reshape(x.shape)]
        return [_dml(fn1)(x, axes=(_axis(c.attr("axis", -1), x.ndim),))]
    return lower


# ----------------------------------------------------------------------------------------------
# matrix multiplication and convolution

def _gemm(c: Call):
    a, b = _arr(c.inputs[0]), _arr(c.inputs[1])
    ta, tb = c.attr("transA", 0), c.attr("transB", 0)
    m = a.shape[1] if ta else a.shape[0]
    n = b.shape[0] if tb else b.shape[1]
    cc = c.input(2)
    cc = None if cc is None else jnp.broadcast_to(_arr(cc), (m, n))
    return [_dml("gemm")(a, b, cc, trans_a="TRANSPOSE" if ta else "NONE", trans_b="TRANSPOSE" if tb else "NONE",
                         alpha=float(c.attr("alpha", 1.0)), beta=float(c.attr("beta", 1.0)))]


def _matmul_shapes(a, b):
    """ONNX MatMul's operands as GEMM's: 1-D operands made matrices, batch dimensions broadcast,
    ranks padded to the same count; returns them and the output's ONNX shape."""
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        a = a.reshape(1, -1)
    if b_vec:
        b = b.reshape(-1, 1)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = jnp.broadcast_to(a, (*batch, *a.shape[-2:]))
    b = jnp.broadcast_to(b, (*batch, *b.shape[-2:]))
    out = (*batch, *([] if a_vec else [a.shape[-2]]), *([] if b_vec else [b.shape[-1]]))
    return a, b, out


def _matmul(c: Call):
    a, b, out = _matmul_shapes(_arr(c.inputs[0]), _arr(c.inputs[1]))
    if a.ndim < 2 or a.ndim > 4:
        lead = int(np.prod(a.shape[:-2], dtype=np.int64))
        a, b = a.reshape(lead, *a.shape[-2:]), b.reshape(lead, *b.shape[-2:])
    return [_dml("gemm")(a, b).reshape(out)]


def _conv_geometry(c: Call, x_shape, w_spatial, transpose: bool = False):
    nd = len(w_spatial)
    strides = tuple(int(s) for s in c.attr("strides", [1] * nd))
    dilations = tuple(int(d) for d in c.attr("dilations", [1] * nd))
    pads = [int(p) for p in c.attr("pads", [0] * (2 * nd))]
    auto_pad = c.attr("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    start, end = pads[:nd], pads[nd:]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        start, end = [], []
        for i in range(nd):
            size = x_shape[2 + i]
            k = (w_spatial[i] - 1) * dilations[i] + 1
            if transpose:
                total = max(0, strides[i] * (size - 1) + int(c.attr("output_padding", [0] * nd)[i]) + k - size * strides[i])
            else:
                out = -(-size // strides[i])
                total = max(0, (out - 1) * strides[i] + k - size)
            lo = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            start.append(lo)
            end.append(total - lo)
    elif auto_pad == "VALID":
        start, end = [0] * nd, [0] * nd
    return strides, dilations, tuple(start), tuple(end)


def _pad_1d(x, w=None):
    """A 1-D convolution or pooling as a 2-D one (DirectML takes 4 or 5 dimensions)."""
    return x[:, :, None, :], (None if w is None else w[:, :, None, :])


def _conv(c: Call):
    x, w = _arr(c.inputs[0]), _arr(c.inputs[1])
    bias = c.input(2)
    strides, dilations, start, end = _conv_geometry(c, x.shape, w.shape[2:])
    one_d = x.ndim == 3
    if one_d:
        x, w = _pad_1d(x, w)
        strides, dilations, start, end = (1, *strides), (1, *dilations), (0, *start), (0, *end)
    b = None if bias is None else _arr(bias).reshape(1, -1, *([1] * (x.ndim - 2)))
    y = _dml("convolution")(x, w, b, strides=strides, dilations=dilations, start_padding=start, end_padding=end,
                            group_count=int(c.attr("group", 1)))
    return [y[:, :, 0, :] if one_d else y]


def _conv_transpose(c: Call):
    x, w = _arr(c.inputs[0]), _arr(c.inputs[1])
    bias = c.input(2)
    nd = w.ndim - 2
    strides, dilations, start, end = _conv_geometry(c, x.shape, w.shape[2:], transpose=True)
    out_pad = tuple(int(p) for p in c.attr("output_padding", [0] * nd))
    if c.attr("output_shape") is not None:  # the pads follow from the requested shape
        shape = [int(s) for s in c.attr("output_shape")][-nd:]
        start, end = [], []
        for i in range(nd):
            k = (w.shape[2 + i] - 1) * dilations[i] + 1
            total = strides[i] * (x.shape[2 + i] - 1) + out_pad[i] + k - shape[i]
            lo = total // 2 if c.attr("auto_pad", b"NOTSET") != b"SAME_LOWER" else total - total // 2
            if total < 0:  # a larger output than the pads give: DirectML's OutputPadding
                out_pad = tuple(p - total if j == i else p for j, p in enumerate(out_pad))
                lo, total = 0, 0
            start.append(lo)
            end.append(total - lo)
        start, end = tuple(start), tuple(end)
    group = int(c.attr("group", 1))
    one_d = x.ndim == 3
    if one_d:
        x, w = _pad_1d(x, w)
        strides, dilations, start, end, out_pad = (1, *strides), (1, *dilations), (0, *start), (0, *end), (0, *out_pad)
    # ONNX's filter is (C_in, C_out / group, k...); DirectML's backward convolution takes it in the
    # forward layout (C_out / group per group ... ): regroup as ONNX Runtime does.
    b = None if bias is None else _arr(bias).reshape(1, -1, *([1] * (x.ndim - 2)))
    y = _dml("convolution")(x, w, b, direction=ConvolutionDirection.BACKWARD, strides=strides, dilations=dilations,
                            start_padding=start, end_padding=end, output_padding=out_pad, group_count=group)
    return [y[:, :, 0, :] if one_d else y]


# ----------------------------------------------------------------------------------------------
# pooling

def _pool_geometry(c: Call, x_shape):
    kernel = tuple(int(k) for k in c.attr("kernel_shape"))
    strides, dilations, start, end = _conv_geometry(c, x_shape, kernel)
    if c.attr("ceil_mode", 0):  # the last window may start inside the end padding: pad the end more
        end = list(end)
        for i, size in enumerate(x_shape[2:]):
            k = (kernel[i] - 1) * dilations[i] + 1
            span = size + start[i] + end[i] - k
            floor_out, ceil_out = span // strides[i] + 1, -(-span // strides[i]) + 1
            if ceil_out > floor_out and (ceil_out - 1) * strides[i] < size + start[i]:
                end[i] += (ceil_out - 1) * strides[i] + k - (size + start[i] + end[i])
        end = tuple(end)
    return kernel, strides, dilations, start, end


def _pool(kind: str) -> Callable[[Call], Sequence]:
    def lower(c: Call):
        x = _arr(c.inputs[0])
        kernel, strides, dilations, start, end = _pool_geometry(c, x.shape)
        one_d = x.ndim == 3
        if one_d:
            x = x[:, :, None, :]
            kernel, strides, dilations, start, end = ((1, *kernel), (1, *strides), (1, *dilations), (0, *start),
                                                      (0, *end))
        kw = dict(strides=strides, window_size=kernel, start_padding=start, end_padding=end, dilations=dilations)
        if kind == "max":
            if c.output_count > 1:
                y, idx = _dml("max_pooling2")(x, **kw, output_indices_data_type="UINT32")
                return [y[:, :, 0] if one_d else y, _max_pool_indices(c, idx, x.shape)]
            y = _dml("max_pooling2")(x, **kw)
            y = y[0] if isinstance(y, tuple) else y
        elif kind == "average":
            y = _dml("average_pooling1")(x, **kw, include_padding=bool(c.attr("count_include_pad", 0)))
        else:
            y = _dml("lp_pooling1")(x, **kw, p=int(c.attr("p", 2)))
        return [y[:, :, 0] if one_d else y]
    return lower


def _max_pool_indices(c: Call, idx, shape):
    """MAX_POOLING2's flat row-major indices; storage_order=1 (column-major within each plane:
    base + w * H + h) by MODULUS_FLOOR, DIVIDE, MULTIPLY and ADD."""
    if c.attr("storage_order", 0) and len(shape) != 4:
        raise ValidationError("max_pooling2", "DML_OPERATOR_MAX_POOLING2", None, [Violation(
            "OutputIndicesTensor", "storage_order", "is column-major (storage_order=1) for a 3-D pooling",
            "storage_order=1 for 1-D and 2-D pooling")])
    if c.attr("storage_order", 0):
        h, w = shape[2], shape[3]
        full = lambda v: jnp.full(idx.shape, v, idx.dtype)  # noqa: E731
        within = _dml("element_wise_modulus_floor")(idx, full(h * w))
        row = _dml("element_wise_divide")(within, full(w))
        col = _dml("element_wise_modulus_floor")(within, full(w))
        base = _dml("element_wise_subtract")(idx, within)
        idx = _dml("element_wise_add")(_dml("element_wise_add")(base, _dml("element_wise_multiply")(col, full(h))), row)
    return idx.astype(_runtime_dtype(np.int64))


def _global_pool(kind: str) -> Callable[[Call], Sequence]:
    def lower(c: Call):
        x = _arr(c.inputs[0])
        axes = tuple(range(2, x.ndim))
        if kind == "lp":
            p = int(c.attr("p", 2))
            y = _dml("lp_pooling1")(x, strides=(1,) * len(axes), window_size=x.shape[2:], start_padding=(0,) * len(axes),
                                    end_padding=(0,) * len(axes), dilations=(1,) * len(axes), p=p)
            return [y]
        return [_dml("reduce")(x, function="AVERAGE" if kind == "average" else "MAX", axes=axes)]
    return lower


# ----------------------------------------------------------------------------------------------
# normalization

def _channel(v, rank: int):
    return _arr(v).reshape(1, -1, *([1] * (rank - 2)))


def _batch_norm(c: Call):
    if c.opset >= 14 and c.attr("training_mode", 0):
        return _batch_norm_training(c)
    x = _arr(c.inputs[0])
    scale, bias, mean, var = (_channel(c.inputs[i], x.ndim) for i in (1, 2, 3, 4))
    shape = (1, x.shape[1], *([1] * (x.ndim - 2)))
    if x.ndim < 3:  # DirectML's tensors need a spatial dimension
        y = _dml("batch_normalization")(x.reshape(*x.shape, 1, 1), *(t.reshape(*shape, 1, 1) for t in (mean, var, scale, bias)),
                                        epsilon=float(c.attr("epsilon", 1e-5)))
        return [y.reshape(x.shape)]
    return [_dml("batch_normalization")(x, mean, var, scale, bias, epsilon=float(c.attr("epsilon", 1e-5)))]


def _batch_norm_training(c: Call):
    """training_mode=1: BATCH_NORMALIZATION_TRAINING's batch statistics, and the running ones as
    input * momentum + batch * (1 - momentum) (IDENTITY's ScaleBias and an ADD)."""
    x = _arr(c.inputs[0])
    squeeze = x.ndim < 3  # DirectML's tensors need a spatial dimension
    x4 = x.reshape(*x.shape, 1, 1) if squeeze else x
    scale, bias = (_channel(c.inputs[i], x4.ndim) for i in (1, 2))
    y, mean, var = _dml("batch_normalization_training")(x4, scale, bias, epsilon=float(c.attr("epsilon", 1e-5)))
    m = float(c.attr("momentum", 0.9))
    running = [_dml("element_wise_add")(_dml("element_wise_identity")(_arr(c.inputs[i]), scale_bias=(m, 0.0)),
                                        _dml("element_wise_identity")(v.reshape(-1), scale_bias=(1.0 - m, 0.0)))
               for i, v in ((3, mean), (4, var))]
    return [y.reshape(x.shape), *running][:max(c.output_count, 1)]


def _batch_norm_check(attrs: dict, opset: int) -> str | None:
    return None


def _instance_norm(c: Call):
    x = _arr(c.inputs[0])
    scale, bias = _channel(c.inputs[1], x.ndim), _channel(c.inputs[2], x.ndim)
    return [_dml("mean_variance_normalization1")(x, jnp.broadcast_to(scale, (1, x.shape[1], *([1] * (x.ndim - 2)))),
                                                  bias, axes=tuple(range(2, x.ndim)),
                                                  epsilon=float(c.attr("epsilon", 1e-5)))]


def _layer_norm(c: Call):
    x = _arr(c.inputs[0])
    axis = _axis(c.attr("axis", -1), x.ndim)
    scale = jnp.broadcast_to(_arr(c.inputs[1]), (1,) * axis + x.shape[axis:])
    bias = c.input(2)
    bias = None if bias is None else jnp.broadcast_to(_arr(bias), (1,) * axis + x.shape[axis:])
    if bias is None:
        bias = jnp.zeros_like(scale)
    axes, eps = tuple(range(axis, x.ndim)), float(c.attr("epsilon", 1e-5))
    outs = [_dml("mean_variance_normalization1")(x, scale, bias, axes=axes, epsilon=eps)]
    if c.output_count > 1:  # Mean and InvStdDev: REDUCE AVERAGE of x and of (x - mean)^2
        mean = _dml("reduce")(x, function="AVERAGE", axes=axes)
        centered = _dml("element_wise_subtract")(x, jnp.broadcast_to(mean, x.shape))
        var = _dml("reduce")(_dml("element_wise_multiply")(centered, centered), function="AVERAGE", axes=axes)
        inv = _dml("element_wise_recip")(_dml("element_wise_sqrt")(var, scale_bias=(1.0, eps)))
        outs += [mean, inv]
    return outs


def _layer_norm_check(attrs: dict, opset: int) -> str | None:
    return None


def _mvn(c: Call):
    x = _arr(c.inputs[0])
    axes = tuple(_axis(a, x.ndim) for a in c.attr("axes", [0, 2, 3]))
    return [_dml("mean_variance_normalization1")(x, axes=axes, epsilon=1e-9)]


def _lrn(c: Call):
    return [_dml("local_response_normalization")(_arr(c.inputs[0]), cross_channel=True, local_size=int(c.attr("size")),
                                                 alpha=float(c.attr("alpha", 1e-4)), beta=float(c.attr("beta", 0.75)),
                                                 bias=float(c.attr("bias", 1.0)))]


def _lp_norm(c: Call):
    x = _arr(c.inputs[0])
    return [_dml("lp_normalization")(x, axis=_axis(c.attr("axis", -1), x.ndim), p=int(c.attr("p", 2)), epsilon=0.0)]


# ----------------------------------------------------------------------------------------------
# reduction

_REDUCE = {"ReduceSum": "SUM", "ReduceMean": "AVERAGE", "ReduceMax": "MAX", "ReduceMin": "MIN",
           "ReduceProd": "MULTIPLY", "ReduceL1": "L1", "ReduceL2": "L2", "ReduceLogSum": "LOG_SUM",
           "ReduceLogSumExp": "LOG_SUM_EXP", "ReduceSumSquare": "SUM_SQUARE"}
_AXES_AS_INPUT = {"ReduceSum": 13}  # the others take axes as an input from opset 18


def _reduce(c: Call):
    x = _arr(c.inputs[0])
    if c.opset >= _AXES_AS_INPUT.get(c.op_type, 18):
        axes = c.static(1)
        axes = None if axes is None or axes.size == 0 else [int(a) for a in axes.reshape(-1)]
    else:
        axes = c.attr("axes")
    if axes is None:
        if c.attr("noop_with_empty_axes", 0):
            return [x]
        axes = range(x.ndim)
    axes = tuple(sorted({_axis(a, x.ndim) for a in axes}))
    if x.ndim == 0:
        return [x]
    if x.dtype == jnp.bool_ and c.op_type in ("ReduceMax", "ReduceMin"):  # booleans as UINT8 0 and 1
        y = _dml("reduce")(_u8(x), function=_REDUCE[c.op_type], axes=axes).astype(jnp.bool_)
    else:
        y = _dml("reduce")(x, function=_REDUCE[c.op_type], axes=axes)
    if not c.attr("keepdims", 1):
        y = y.reshape([s for i, s in enumerate(x.shape) if i not in axes])
    return [y]


def _arg(fn: str) -> Callable[[Call], Sequence]:
    def lower(c: Call):
        x = _arr(c.inputs[0])
        axis = _axis(c.attr("axis", 0), x.ndim)
        direction = AxisDirection.DECREASING if c.attr("select_last_index", 0) else AxisDirection.INCREASING
        y = _dml(fn)(x, axes=(axis,), axis_direction=direction)
        y = y.astype(_runtime_dtype(np.int64))
        if not c.attr("keepdims", 1):
            y = y.reshape([s for i, s in enumerate(x.shape) if i != axis])
        return [y]
    return lower


# ----------------------------------------------------------------------------------------------
# shape and data movement (reshapes are descs in DirectML: plain reshapes here)

def _reshape(c: Call):
    x = _arr(c.inputs[0])
    shape = [int(s) for s in c.static(1).reshape(-1)] if c.opset >= 5 else list(c.attr("shape"))
    if not c.attr("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return [x.reshape(shape)]


def _flatten(c: Call):
    x = _arr(c.inputs[0])
    axis = _axis(c.attr("axis", 1), x.ndim)
    return [x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1 if x.size else 0)]


def _axes_arg(c: Call, index: int, opset_from: int):
    if c.opset >= opset_from:
        v = c.static(index)
        return None if v is None else [int(a) for a in v.reshape(-1)]
    return c.attr("axes")


def _squeeze(c: Call):
    x = _arr(c.inputs[0])
    axes = _axes_arg(c, 1, 13)
    if axes is None:
        return [x.reshape([s for s in x.shape if s != 1])]
    axes = {_axis(a, x.ndim) for a in axes}
    return [x.reshape([s for i, s in enumerate(x.shape) if i not in axes])]


def _unsqueeze(c: Call):
    x = _arr(c.inputs[0])
    axes = _axes_arg(c, 1, 13)
    rank = x.ndim + len(axes)
    axes = sorted(_axis(a, rank) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return [x.reshape(shape)]


def _transpose(c: Call):
    x = _arr(c.inputs[0])
    perm = c.attr("perm")
    return [jnp.transpose(x, None if perm is None else tuple(int(p) for p in perm))]


def _identity(c: Call):
    return [_arr(c.inputs[0])]


def _dropout(c: Call):
    x = _arr(c.inputs[0])
    outs = [x]
    if c.output_count > 1:
        outs.append(jnp.ones(x.shape, jnp.bool_))
    return outs


def _concat(c: Call):
    xs = [_arr(x) for x in c.inputs if x is not None]
    axis = _axis(c.attr("axis"), xs[0].ndim)
    xs = [x for x in xs if x.shape[axis] != 0] or xs[:1]
    return [_dml("join")(xs, axis=axis) if len(xs) > 1 else xs[0]]


def _split(c: Call):
    x = _arr(c.inputs[0])
    axis = _axis(c.attr("axis", 0), x.ndim)
    if c.opset >= 13:
        sizes = c.static(1)
        sizes = None if sizes is None else [int(s) for s in sizes.reshape(-1)]
    else:
        sizes = c.attr("split")
    if sizes is None:
        parts = c.attr("num_outputs", c.output_count)
        chunk = -(-x.shape[axis] // parts)
        sizes = [chunk] * (parts - 1) + [x.shape[axis] - chunk * (parts - 1)]
    shapes = tuple(x.shape[:axis] + (int(s),) + x.shape[axis + 1:] for s in sizes)
    if len(shapes) == 1:
        return [x]
    return list(_dml("split")(x, axis=axis, outputs_sizes=shapes))


def _slice(c: Call):
    x = _arr(c.inputs[0])
    if c.opset >= 10:
        starts, ends = c.static(1).reshape(-1), c.static(2).reshape(-1)
        axes = c.static(3)
        steps = c.static(4)
    else:
        starts, ends = np.asarray(c.attr("starts")), np.asarray(c.attr("ends"))
        axes, steps = c.attr("axes"), None
        axes = None if axes is None else np.asarray(axes)
    axes = range(len(starts)) if axes is None else [_axis(a, x.ndim) for a in np.asarray(axes).reshape(-1)]
    steps = [1] * len(starts) if steps is None else [int(s) for s in np.asarray(steps).reshape(-1)]
    offsets, sizes, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    for a, s, e, st in zip(axes, starts, ends, steps):
        dim = x.shape[a]
        begin, stop, step = slice(int(max(min(s, 2**62), -2**62)), int(max(min(e, 2**62), -2**62)), int(st)).indices(dim)
        idx = range(begin, stop, step)
        if len(idx) == 0:
            sizes[a] = 0
            continue
        lo, hi = min(idx[0], idx[-1]), max(idx[0], idx[-1])
        offsets[a], sizes[a], strides[a] = lo, hi - lo + 1, step
    if 0 in sizes:
        return [jnp.zeros([len(range(*slice(o, o + s, abs(t)).indices(10**18))) if s else 0
                           for o, s, t in zip(offsets, sizes, strides)], x.dtype)]
    return [_dml("slice1")(x, input_window_offsets=tuple(offsets), input_window_sizes=tuple(sizes),
                           input_window_strides=tuple(strides))]


def _gather(c: Call):
    x, idx = _arr(c.inputs[0]), _arr(c.inputs[1])
    axis = _axis(c.attr("axis", 0), x.ndim)
    out_shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    # DirectML: input and output of one rank, indices padded with leading ones (DmlOperatorGather)
    rank = max(x.ndim, len(out_shape), 1)
    pad = rank - x.ndim
    xr = x.reshape((1,) * pad + x.shape)
    ir = idx.reshape((1,) * (rank - max(idx.ndim, 1)) + (idx.shape or (1,)))
    boolean = xr.dtype == jnp.bool_  # BOOL data gathered as UINT8 bytes (ONNX Runtime's BOOL tensors)
    y = _dml("gather")(_u8(xr), ir, axis=axis + pad, index_dimensions=idx.ndim)
    return [(y.astype(jnp.bool_) if boolean else y).reshape(out_shape)]


def _gather_elements(c: Call):
    x, idx = _arr(c.inputs[0]), _arr(c.inputs[1])
    return [_dml("gather_elements")(x, idx, axis=_axis(c.attr("axis", 0), x.ndim))]


def _gather_nd(c: Call):
    x, idx = _arr(c.inputs[0]), _arr(c.inputs[1])
    b = int(c.attr("batch_dims", 0))
    out_shape = idx.shape[:-1] + x.shape[b + idx.shape[-1]:]
    rank = max(x.ndim, idx.ndim)
    pad = lambda t: t.reshape((1,) * (rank - t.ndim) + t.shape)  # noqa: E731  (leading ones: irrelevant)
    xr, ir = pad(x), pad(idx)
    y = _dml("gather_nd1")(xr, ir, input_dimension_count=x.ndim, indices_dimension_count=idx.ndim,
                           batch_dimension_count=b)
    return [y.reshape(out_shape)]


def _scatter_elements(c: Call):
    x, idx, upd = _arr(c.inputs[0]), _arr(c.inputs[1]), _arr(c.inputs[2])
    return [_dml("scatter_elements")(x, idx, upd, axis=_axis(c.attr("axis", 0), x.ndim))]


def _scatter_check(attrs: dict, opset: int) -> str | None:
    red = attrs.get("reduction", b"none")
    return None if red in (b"none", "none") else f"reduction={red.decode() if isinstance(red, bytes) else red!r} has no DirectML operator"


def _scatter_nd(c: Call):
    x, idx, upd = _arr(c.inputs[0]), _arr(c.inputs[1]), _arr(c.inputs[2])
    rank = max(x.ndim, idx.ndim, upd.ndim)
    pad = lambda t: t.reshape((1,) * (rank - t.ndim) + t.shape)  # noqa: E731
    y = _dml("scatter_nd")(pad(x), pad(idx), pad(upd), input_dimension_count=x.ndim, indices_dimension_count=idx.ndim)
    return [y.reshape(x.shape)]


_PAD_MODES = {"constant": "CONSTANT", "reflect": "REFLECTION", "edge": "EDGE", "wrap": "WRAP"}


def _pad(c: Call):
    x = _arr(c.inputs[0])
    mode = c.attr("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if c.opset >= 11:
        pads = [int(p) for p in c.static(1).reshape(-1)]
        value = c.static(2)
        value = 0 if value is None or value.size == 0 else value.reshape(-1)[0].item()
        axes = c.static(3)
    else:
        pads = [int(p) for p in c.attr("pads", c.attr("paddings"))]
        value, axes = float(c.attr("value", 0.0)), None
    axes = range(x.ndim) if axes is None else [_axis(a, x.ndim) for a in axes.reshape(-1)]
    axes = list(axes)
    start, end = [0] * x.ndim, [0] * x.ndim
    for i, a in enumerate(axes):
        start[a], end[a] = pads[i], pads[len(axes) + i]
    if min(start + end) < 0:  # negative pads crop
        crop = tuple(slice(max(-s, 0), x.shape[i] - max(-e, 0)) for i, (s, e) in enumerate(zip(start, end)))
        x = x[crop]
        start, end = [max(s, 0) for s in start], [max(e, 0) for e in end]
    if jnp.issubdtype(x.dtype, jnp.floating):
        value = float(value)
    else:
        value = int(value)
    return [_dml("padding1")(x, padding_mode=_PAD_MODES[mode], padding_value=value, start_padding=tuple(start),
                             end_padding=tuple(end))]


def _expand(c: Call):
    x = _arr(c.inputs[0])
    shape = np.broadcast_shapes(x.shape, tuple(int(s) for s in c.static(1).reshape(-1)))
    return [jnp.broadcast_to(x, shape)]


def _tile(c: Call):
    x = _arr(c.inputs[0])
    reps = tuple(int(r) for r in c.static(1).reshape(-1))
    if 0 in reps or x.ndim == 0:
        return [jnp.tile(x, reps)]
    return [_dml("tile")(x, repeats=reps)]


@_scalars
def _cast(c: Call):
    x = _arr(c.inputs[0])
    to = _onnx_dtype(c.attr("to"))
    if to == np.bool_ and x.dtype == jnp.bool_:
        return [x]
    if to == np.bool_:
        return [_dml("element_wise_logical_not")(_dml("element_wise_logical_equals")(
            x, jnp.zeros_like(x))).astype(jnp.bool_)]
    to = _runtime_dtype(to)
    if x.dtype == jnp.bool_:
        x = x.astype(jnp.uint8)
    if x.dtype == to:
        return [x]
    return [_dml("cast")(x, output_data_type=_data_type(to))]


def _cast_check(attrs: dict, opset: int) -> str | None:
    return None if _onnx_dtype(attrs.get("to", 1)) is not None else f"to={attrs.get('to')} is not a DirectML data type"


def _depth_space(fn: str) -> Callable[[Call], Sequence]:
    def lower(c: Call):
        mode = c.attr("mode", b"DCR")
        order = DepthSpaceOrder.COLUMN_ROW_DEPTH if mode in (b"CRD", "CRD") else DepthSpaceOrder.DEPTH_COLUMN_ROW
        return [_dml(fn)(_arr(c.inputs[0]), block_size=int(c.attr("blocksize")), order=order)]
    return lower


def _top_k(c: Call):
    x = _arr(c.inputs[0])
    k = int(c.static(1).reshape(-1)[0]) if c.opset >= 10 else int(c.attr("k"))
    axis = _axis(c.attr("axis", -1), x.ndim)
    direction = AxisDirection.DECREASING if c.attr("largest", 1) else AxisDirection.INCREASING
    values, indices = _dml("top_k1")(x, axis=axis, k=k, axis_direction=direction)
    return [values, indices.astype(_runtime_dtype(np.int64))]


def _cumsum(c: Call):
    x = _arr(c.inputs[0])
    axis = _axis(int(c.static(1).reshape(-1)[0]), x.ndim)
    direction = AxisDirection.DECREASING if c.attr("reverse", 0) else AxisDirection.INCREASING
    return [_dml("cumulative_summation")(x, axis=axis, axis_direction=direction,
                                         has_exclusive_sum=bool(c.attr("exclusive", 0)))]


def _one_hot(c: Call):
    idx, values = _arr(c.inputs[0]), _arr(c.inputs[2])
    if not jnp.issubdtype(idx.dtype, jnp.integer):  # ONNX casts other indices to integers
        idx = _dml("cast")(idx, output_data_type="INT32")
    values = values.reshape((1,) * idx.ndim + (values.size,))  # ValuesTensor's rank is the output's
    depth = int(c.static(1).reshape(-1)[0])
    axis = _axis(c.attr("axis", -1), idx.ndim + 1)
    out_shape = idx.shape[:axis] + (depth,) + idx.shape[axis:]
    ir = idx.reshape(idx.shape[:axis] + (1,) + idx.shape[axis:])
    return [_dml("one_hot")(ir, values, axis=axis, output_sizes=out_shape)]


def _constant_of_shape(c: Call):
    shape = tuple(int(s) for s in c.static(0).reshape(-1))
    value = c.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    return [np.full(shape, value[0], value.dtype)]


def _range(c: Call):
    start, limit, delta = (c.static(i).reshape(()) for i in range(3))
    n = max(int(np.ceil((limit - start) / delta)), 0)
    return [(start + np.arange(n) * delta).astype(start.dtype)]


# ----------------------------------------------------------------------------------------------
# resampling

def _resize_modes(attrs: dict, opset: int) -> str | None:
    mode = attrs.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("nearest", "linear", "bilinear"):
        return f"mode={mode!r} (DirectML's RESAMPLE has NEAREST_NEIGHBOR and LINEAR)"
    ctm = attrs.get("coordinate_transformation_mode", b"half_pixel" if opset >= 11 else b"asymmetric")
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    if attrs.get("antialias", 0):
        return "antialias=1 is not mapped"
    return None


def _resize(c: Call):
    x = _arr(c.inputs[0])
    if c.op_type == "Upsample":
        scales = c.attr("scales") if c.opset < 9 else c.static(1).reshape(-1)
        sizes = None
        ctm = "asymmetric"
    else:
        if c.opset < 11:
            scales, sizes = c.static(1), None
        else:
            scales, sizes = c.static(2), c.static(3)
        ctm = c.attr("coordinate_transformation_mode", b"half_pixel" if c.opset >= 11 else b"asymmetric")
        ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    axes = c.attr("axes")
    axes = list(range(x.ndim)) if axes is None else [_axis(a, x.ndim) for a in axes]
    full_scales = [1.0] * x.ndim
    out_sizes = list(x.shape)
    if sizes is not None and sizes.size:
        for a, s in zip(axes, sizes.reshape(-1)):
            out_sizes[a] = int(s)
            full_scales[a] = float(np.float32(int(s) / x.shape[a]))
        policy = c.attr("keep_aspect_ratio_policy", b"stretch")
        policy = policy.decode() if isinstance(policy, bytes) else policy
        if policy != "stretch":  # one scale for every axis: the smallest (not_larger) or largest (not_smaller)
            pick = min if policy == "not_larger" else max
            one = pick(float(np.float32(int(s) / x.shape[a])) for a, s in zip(axes, sizes.reshape(-1)))
            for a in axes:
                full_scales[a], out_sizes[a] = one, int(one * x.shape[a] + 0.5)
    else:
        for a, s in zip(axes, np.asarray(scales, np.float32).reshape(-1)):
            full_scales[a] = float(s)
            out_sizes[a] = int(np.floor(x.shape[a] * np.float32(s)))
    mode = c.attr("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    interp = "NEAREST_NEIGHBOR" if mode == "nearest" else "LINEAR"
    in_off, out_off = [0.5] * x.ndim, [-0.5] * x.ndim  # half_pixel
    for a in range(x.ndim):
        if ctm == "asymmetric":
            in_off[a], out_off[a] = 0.0, 0.0
        elif ctm == "align_corners":
            # ONNX: x_original = x_resized * (length_original - 1) / (length_resized - 1), with the
            # resized length unrounded (length_original * scale) where scales are given
            in_off[a], out_off[a] = 0.0, 0.0
            resized = out_sizes[a] if sizes is not None and sizes.size else x.shape[a] * full_scales[a]
            if out_sizes[a] > 1 and x.shape[a] > 1:
                full_scales[a] = (resized - 1) / (x.shape[a] - 1)
        elif ctm == "pytorch_half_pixel" and out_sizes[a] == 1:
            in_off[a], out_off[a] = 0.0, 0.0  # ONNX: x_original = 0 when the output length is 1
            full_scales[a] = 1.0 / x.shape[a] if x.shape[a] else 1.0
        elif ctm == "tf_crop_and_resize":
            # ONNX: x_original = start * (L - 1) + x_resized * (end - start) * (L - 1) / (O - 1), start and end
            # from the static roi; coordinates outside the input clamp to its edge (RESAMPLE2 has no
            # extrapolation value)
            roi = c.static(1).reshape(-1).astype(np.float64)
            k = axes.index(a) if a in axes else None
            start, end = (0.0, 1.0) if k is None or roi.size == 0 else (roi[k], roi[len(axes) + k])
            span = (end - start) * (x.shape[a] - 1)
            in_off[a], out_off[a] = -start * (x.shape[a] - 1), 0.0
            full_scales[a] = (out_sizes[a] - 1) / span if out_sizes[a] > 1 and span else 1.0
        elif ctm == "tf_half_pixel_for_nn":
            in_off[a], out_off[a] = 0.0, -0.5
        elif ctm == "half_pixel_symmetric":
            # ONNX: x_original = offset + (x_resized + 0.5) / scale - 0.5, offset = length_original / 2 *
            # (1 - length_resized_int / (length_original * scale)): InputPixelOffset 0.5 - offset
            width = x.shape[a] * full_scales[a]
            offset = x.shape[a] / 2 * (1 - out_sizes[a] / width) if width else 0.0
            in_off[a] = 0.5 - offset
    nearest = c.attr("nearest_mode", b"round_prefer_floor")
    nearest = nearest.decode() if isinstance(nearest, bytes) else nearest
    if c.op_type == "Upsample" or c.opset < 11:
        nearest = "floor"
    direction = AxisDirection.INCREASING
    if interp == "NEAREST_NEIGHBOR":
        # RESAMPLE2 takes ceil(x) (INCREASING) or floor(x) (DECREASING) of the input coordinate
        # x = (OutputX - OutputPixelOffset) / Scale - InputPixelOffset; ONNX's rounding to the nearest
        # is ceil(x - 0.5) (ties down) or floor(x + 0.5) (ties up): half a pixel more or less of
        # InputPixelOffset, which shifts x itself (OutputPixelOffset would shift it by 0.5 / Scale)
        if nearest in ("floor",):
            direction = AxisDirection.DECREASING
        elif nearest == "ceil":
            direction = AxisDirection.INCREASING
        elif nearest == "round_prefer_floor":
            direction = AxisDirection.INCREASING
            in_off = [o + 0.5 for o in in_off]
        elif nearest == "round_prefer_ceil":
            direction = AxisDirection.DECREASING
            in_off = [o - 0.5 for o in in_off]
    y = _dml("resample2")(x, interpolation_mode=interp, rounding_direction=direction, scales=tuple(full_scales),
                          input_pixel_offsets=tuple(in_off), output_pixel_offsets=tuple(out_off),
                          output_sizes=tuple(out_sizes))
    if ctm == "tf_crop_and_resize":  # outside the input: extrapolation_value, by a constant mask and IF
        outside = np.zeros(tuple(out_sizes), bool)
        for a in range(x.ndim):
            pos = (np.arange(out_sizes[a]) - out_off[a]) / full_scales[a] - in_off[a]
            bad = (pos < 0) | (pos > x.shape[a] - 1)
            outside |= bad.reshape([-1 if i == a else 1 for i in range(x.ndim)])
        if outside.any():
            fill = jnp.full(y.shape, float(c.attr("extrapolation_value", 0.0)), y.dtype)
            y = _dml("element_wise_if")(jnp.asarray(outside.astype(np.uint8)), fill, y)
    return [y]


# ----------------------------------------------------------------------------------------------
# quantization

def _per_axis(v, x_shape, axis: int, block: int = 0):
    """A scale or zero point broadcast to the input (zero strides): per tensor, per ``axis``, or per
    block of ``block`` elements along ``axis`` (each value repeated over its block)."""
    v = _arr(v)
    if block:
        v = jnp.repeat(v, block, axis=axis)
        return jax.lax.slice_in_dim(v, 0, x_shape[axis], axis=axis)
    if v.ndim == 0 or v.size == 1:
        return jnp.broadcast_to(v.reshape(()), x_shape)
    shape = [1] * len(x_shape)
    shape[axis] = -1
    return jnp.broadcast_to(v.reshape(shape), x_shape)


def _quantize(c: Call):
    x = _arr(c.inputs[0])
    shape, x = x.shape, x.reshape(x.shape or (1,))  # a scalar as one element (DirectML's tensors have 1 to 8 dimensions)
    axis = _axis(c.attr("axis", 1), max(x.ndim, 1))
    block = int(c.attr("block_size", 0))
    scale = _per_axis(c.inputs[1], x.shape, axis, block)
    zp = c.input(2)
    if zp is None:
        return [_dml("element_wise_quantize_linear")(x, scale, output_data_type="UINT8").reshape(shape)]
    return [_dml("element_wise_quantize_linear")(x, scale, _per_axis(zp, x.shape, axis, block)).reshape(shape)]


def _dequantize(c: Call):
    x = _arr(c.inputs[0])
    shape, x = x.shape, x.reshape(x.shape or (1,))
    axis = _axis(c.attr("axis", 1), max(x.ndim, 1))
    block = int(c.attr("block_size", 0))
    scale = _per_axis(c.inputs[1], x.shape, axis, block)
    zp = c.input(2)
    y = _dml("element_wise_dequantize_linear")(x, scale, None if zp is None else _per_axis(zp, x.shape, axis, block))
    return [y.reshape(shape)]


def _quant_check(attrs: dict, opset: int) -> str | None:
    if attrs.get("output_dtype", 0) not in (0, 2, 3):
        return "output_dtype other than UINT8/INT8 is not mapped"
    return None


def _per_row(v, rank: int, axis: int):
    """A quantization tensor per tensor ({..., 1, 1}) or per row/column ({..., M, 1} / {..., 1, N})."""
    v = _arr(v)
    if v.size == 1:
        return v.reshape((1,) * rank)
    shape = [1] * rank
    shape[axis] = -1
    return v.reshape(shape)


def _matmul_integer(c: Call):
    a, b = _arr(c.inputs[0]), _arr(c.inputs[1])
    a, b, out = _matmul_shapes(a, b)
    a_zp, b_zp = c.input(2), c.input(3)
    a_zp = None if a_zp is None else _per_row(a_zp, a.ndim, -2)
    b_zp = None if b_zp is None else _per_row(b_zp, b.ndim, -1)
    return [_dml("matrix_multiply_integer")(a, b, a_zp, b_zp).reshape(out)]


def _qlinear_matmul(c: Call):
    a, b = _arr(c.inputs[0]), _arr(c.inputs[3])
    a, b, out = _matmul_shapes(a, b)
    r = a.ndim
    y = _dml("quantized_linear_matrix_multiply")(
        a, _per_row(c.inputs[1], r, -2), b, _per_row(c.inputs[4], r, -1), _per_row(c.inputs[6], r, -1),
        _per_row(c.inputs[2], r, -2), _per_row(c.inputs[5], r, -1), _per_row(c.inputs[7], r, -1))
    return [y.reshape(out)]


def _conv_integer(c: Call):
    x, w = _arr(c.inputs[0]), _arr(c.inputs[1])
    strides, dilations, start, end = _conv_geometry(c, x.shape, w.shape[2:])
    xz = c.input(2)
    xz = jnp.zeros((), x.dtype) if xz is None else _arr(xz)
    wz = c.input(3)
    wz = None if wz is None else _arr(wz) if _arr(wz).size > 1 else _arr(wz).reshape((1,) * w.ndim)
    xz = xz.reshape((1,) * x.ndim)
    if wz is not None and wz.size > 1:
        wz = wz.reshape(1, -1, *([1] * (w.ndim - 2)))  # one a output channel: dimension 1
    return [_dml("convolution_integer")(x, xz, w, wz,
                                        strides=strides, dilations=dilations, start_padding=start, end_padding=end,
                                        group_count=int(c.attr("group", 1)))]


def _qlinear_conv(c: Call):
    x, w = _arr(c.inputs[0]), _arr(c.inputs[3])
    strides, dilations, start, end = _conv_geometry(c, x.shape, w.shape[2:])
    one = (1,) * x.ndim
    per_channel = lambda v: _arr(v).reshape(-1, *([1] * (w.ndim - 1))) if _arr(v).size > 1 else _arr(v).reshape(one)  # noqa: E731
    bias = c.input(8)
    y = _dml("quantized_linear_convolution")(
        x, _arr(c.inputs[1]).reshape(one), _arr(c.inputs[2]).reshape(one), w,
        per_channel(c.inputs[4]).reshape((1, -1) + (1,) * (x.ndim - 2)) if _arr(c.inputs[4]).size > 1 else _arr(c.inputs[4]).reshape(one),
        per_channel(c.inputs[5]).reshape((1, -1) + (1,) * (x.ndim - 2)) if _arr(c.inputs[5]).size > 1 else _arr(c.inputs[5]).reshape(one),
        None if bias is None else _arr(bias).reshape((1, -1) + (1,) * (x.ndim - 2)),
        _arr(c.inputs[6]).reshape(one), _arr(c.inputs[7]).reshape(one),
        strides=strides, dilations=dilations, start_padding=start, end_padding=end, group_count=int(c.attr("group", 1)))
    return [y]


def _dynamic_quantize(c: Call):
    y, scale, zero_point = _dml("dynamic_quantize_linear")(_arr(c.inputs[0]))
    return [y, scale.reshape(()), zero_point.reshape(())]  # ONNX's scale and zero point are scalars


# ----------------------------------------------------------------------------------------------
# recurrent networks

_ACTIVATIONS = {"Sigmoid": "ACTIVATION_SIGMOID", "Tanh": "ACTIVATION_TANH", "Relu": "ACTIVATION_RELU",
                "Affine": "ACTIVATION_LINEAR", "LeakyRelu": "ACTIVATION_LEAKY_RELU",
                "ThresholdedRelu": "ACTIVATION_THRESHOLDED_RELU", "ScaledTanh": "ACTIVATION_SCALED_TANH",
                "HardSigmoid": "ACTIVATION_HARD_SIGMOID", "Elu": "ACTIVATION_ELU", "Softsign": "ACTIVATION_SOFTSIGN",
                "Softplus": "ACTIVATION_SOFTPLUS"}
_DEFAULT_ACTIVATIONS = {"RNN": ("Tanh",), "GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh")}


def _rnn_check(attrs: dict, opset: int) -> str | None:
    for a in attrs.get("activations", []) or []:
        name = a.decode() if isinstance(a, bytes) else a
        if name not in _ACTIVATIONS:
            return f"activation {name!r} has no DirectML activation"
    if attrs.get("input_forget", 0):
        return "input_forget=1 is not mapped"
    return None


def _activation_descs(c: Call, directions: int):
    names = c.attr("activations")
    per = _DEFAULT_ACTIVATIONS[c.op_type]
    names = [n.decode() if isinstance(n, bytes) else n for n in names] if names else list(per) * directions
    alphas, betas = list(c.attr("activation_alpha", []) or []), list(c.attr("activation_beta", []) or [])
    descs = []
    for n in names:
        kw = {}
        if n in ("Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu"):
            if alphas:
                kw["alpha"] = float(alphas.pop(0))
            if n in ("Affine", "ScaledTanh", "HardSigmoid") and betas:
                kw["beta"] = float(betas.pop(0))
        descs.append(FusedActivation(_ACTIVATIONS[n], **kw))
    return tuple(descs)


def _recurrent(c: Call):
    """layout=1 (batch-major) as transposes of the inputs and outputs: permuted tensor descs."""
    if not c.attr("layout", 0):
        return _recurrent_seq_major(c)
    swap = lambda t: None if t is None else jnp.swapaxes(_arr(t), 0, 1)  # noqa: E731
    inputs = list(c.inputs)
    for i in (0, 5, 6):
        if i < len(inputs):
            inputs[i] = swap(inputs[i])
    outs = _recurrent_seq_major(dataclasses.replace(c, inputs=inputs))
    return [jnp.transpose(outs[0], (2, 0, 1, 3)), *(swap(o) for o in outs[1:])]


def _recurrent_seq_major(c: Call):
    x, w, r = _arr(c.inputs[0]), _arr(c.inputs[1]), _arr(c.inputs[2])
    direction = c.attr("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    dirs = 2 if direction == "bidirectional" else 1
    seq, batch = x.shape[0], x.shape[1]
    hidden = r.shape[-1]
    four = lambda t: None if t is None else _arr(t).reshape(1, *_arr(t).shape)  # noqa: E731
    bias, seq_lens, h0 = c.input(3), c.input(4), c.input(5)
    kw = dict(activation_descs=_activation_descs(c, dirs),
              direction={"forward": "FORWARD", "reverse": "BACKWARD", "bidirectional": "BIDIRECTIONAL"}[direction])
    args = [x.reshape(1, *x.shape), four(w), four(r), None if bias is None else _arr(bias).reshape(1, 1, dirs, -1),
            four(h0)]
    if seq_lens is not None:
        seq_lens = _arr(seq_lens).astype(jnp.uint32).reshape(1, 1, 1, batch)
    if c.op_type == "LSTM":
        c0, peep = c.input(6), c.input(7)
        args += [four(c0), seq_lens, None if peep is None else _arr(peep).reshape(1, 1, dirs, -1)]
        clip = c.attr("clip")
        kw.update(use_clip_threshold=clip is not None, clip_threshold=float(clip or 0.0))
        outs = _dml("lstm")(*args, **kw)
    elif c.op_type == "GRU":
        args += [seq_lens]
        outs = _dml("gru")(*args, linear_before_reset=bool(c.attr("linear_before_reset", 0)), **kw)
    else:
        args += [seq_lens]
        outs = _dml("rnn")(*args, **kw)
    outs = outs if isinstance(outs, tuple) else (outs,)
    y = outs[0].reshape(seq, dirs, batch, hidden)
    result = [y, outs[1].reshape(dirs, batch, hidden)]
    if c.op_type == "LSTM":
        result.append(outs[2].reshape(dirs, batch, hidden))
    return result


# ----------------------------------------------------------------------------------------------
# com.microsoft: the contrib operators that ONNX Runtime's quantizer and optimizers emit

def _q_param(v, shape):
    """A per-tensor scale or zero point broadcast over ``shape`` (zero strides in DirectML)."""
    return None if v is None else jnp.broadcast_to(_arr(v).reshape(()), shape)


def _dequant(x, scale, zp):
    x = _arr(x)
    shape, x = x.shape, x.reshape(x.shape or (1,))
    return _dml("element_wise_dequantize_linear")(x, _q_param(scale, x.shape), _q_param(zp, x.shape)).reshape(shape)


def _quant(y, scale, zp):
    shape, y = y.shape, y.reshape(y.shape or (1,))
    if zp is None:
        q = _dml("element_wise_quantize_linear")(y, _q_param(scale, y.shape), output_data_type="UINT8")
    else:
        q = _dml("element_wise_quantize_linear")(y, _q_param(scale, y.shape), _q_param(zp, y.shape))
    return q.reshape(shape)


def _qlinear_add(c: Call):
    a, b = _bcast(c.inputs[0], c.inputs[3])
    one = (1,) * a.ndim  # per-tensor: all-1 sizes, which DirectML broadcasts itself
    zp = lambda i: None if c.input(i) is None else _arr(c.inputs[i]).reshape(one)  # noqa: E731
    out_zp = c.input(7)
    kw = {} if out_zp is not None else {"output_data_type": "UINT8"}
    return [_dml("element_wise_quantized_linear_add")(a, zp(1), b, zp(4), zp(6), zp(2), zp(5), zp(7), **kw)]


def _qlinear_through_float(fn: Callable, inputs: tuple[int, ...], out: int) -> Callable[[Call], Sequence]:
    """A quantized operator that DirectML has no operator for: its inputs (x, scale, zero point at
    positions ``i, i+1, i+2``) dequantized, ``fn`` in FLOAT32, the result quantized with the scale
    and zero point at ``out, out+1``: ELEMENT_WISE_DEQUANTIZE_LINEAR, the float operators,
    ELEMENT_WISE_QUANTIZE_LINEAR."""
    def lower(c: Call):
        xs = [_dequant(c.inputs[i], c.inputs[i + 1], c.input(i + 2)) for i in inputs]
        return [_quant(fn(c, *xs), c.inputs[out], c.input(out + 1))]
    return lower


def _q_mul(c: Call, a, b):
    a, b = _bcast(a, b)
    return _dml("element_wise_multiply")(a, b)


def _q_sigmoid(c: Call, x):
    return _dml("activation_sigmoid")(x)


def _q_leaky_relu(c: Call, x):
    return _dml("activation_leaky_relu")(x, alpha=float(c.attr("alpha", 0.01)))


def _q_softmax(c: Call, x):
    opset = int(c.attr("opset", 13))
    if opset < 13:
        axis = _axis(c.attr("axis", 1), x.ndim)
        rows = int(np.prod(x.shape[:axis], dtype=np.int64))
        return _dml("activation_softmax1")(x.reshape(rows, -1), axes=(1,)).reshape(x.shape)
    return _dml("activation_softmax1")(x, axes=(_axis(c.attr("axis", -1), x.ndim),))


def _qlinear_concat(c: Call):
    xs = [_dequant(c.inputs[i], c.inputs[i + 1], c.inputs[i + 2]) for i in range(2, len(c.inputs), 3)]
    y = _dml("join")(xs, axis=_axis(c.attr("axis"), xs[0].ndim))
    return [_quant(y, c.inputs[0], c.input(1))]


def _qlinear_pool(global_: bool) -> Callable[[Call], Sequence]:
    def lower(c: Call):
        x = _arr(c.inputs[0])
        last = bool(c.attr("channels_last", 0))
        if last:  # NHWC: a permuted tensor desc
            x = jnp.moveaxis(x, -1, 1)
        nd = x.ndim - 2
        if global_:
            kernel, strides, dilations, start, end = x.shape[2:], (1,) * nd, (1,) * nd, (0,) * nd, (0,) * nd
            include = False
        else:
            kernel, strides, dilations, start, end = _pool_geometry(c, x.shape)
            include = bool(c.attr("count_include_pad", 0))
        one_d = nd == 1
        if one_d:
            x = x[:, :, None, :]
            kernel, strides, dilations, start, end = ((1, *kernel), (1, *strides), (1, *dilations), (0, *start),
                                                      (0, *end))
        one = (1,) * x.ndim
        p = lambda i: None if c.input(i) is None else _arr(c.inputs[i]).reshape(one)  # noqa: E731
        kw = {} if c.input(4) is not None else {"output_data_type": "UINT8"}
        y = _dml("quantized_linear_average_pooling")(
            x, p(1), p(2), p(3), p(4), strides=tuple(strides), window_size=tuple(kernel), start_padding=tuple(start),
            end_padding=tuple(end), dilations=tuple(dilations), include_padding=include, **kw)
        y = y[:, :, 0] if one_d else y
        return [jnp.moveaxis(y, 1, -1) if last else y]
    return lower


def _int_matmul_operands(c: Call, a, b):
    if c.attr("transA", 0):
        a = a.T
    if c.attr("transB", 0):
        b = b.T
    return a, b


def _column_scale(v, n: int):
    v = _arr(v)
    return v.reshape(1, 1) if v.size == 1 else v.reshape(1, n)


def _qgemm(c: Call):
    """QGemm: MATRIX_MULTIPLY_INTEGER's INT32 accumulator plus the INT32 bias, CAST to FLOAT32 and
    scaled by alpha * a_scale * b_scale (per column for a per-channel b_scale), then quantized with
    y_scale and y_zero_point (or left in FLOAT32 when y_scale is absent), as ONNX Runtime's
    requantization does."""
    a, b = _int_matmul_operands(c, _arr(c.inputs[0]), _arr(c.inputs[3]))
    n = b.shape[1]
    a_zp = c.input(2)
    b_zp = c.input(5)
    acc = _dml("matrix_multiply_integer")(a, b, None if a_zp is None else _arr(a_zp).reshape(1, 1),
                                          None if b_zp is None else _column_scale(b_zp, n))
    bias = c.input(6)
    if bias is not None:
        acc = _dml("element_wise_add")(*_bcast(acc, _arr(bias).astype(jnp.int32)))
    y = _dml("cast")(acc, output_data_type="FLOAT32")
    scale = _dml("element_wise_multiply")(*_bcast(_arr(c.inputs[1]).reshape(1, 1), _column_scale(c.inputs[4], n)))
    scale = _dml("element_wise_identity")(scale, scale_bias=(float(c.attr("alpha", 1.0)), 0.0))
    y = _dml("element_wise_multiply")(*_bcast(y, scale))
    if c.input(7) is None:
        return [y]
    return [_quant(y, c.inputs[7], c.input(8))]


def _int_to_float_matmul(a, a_scale, b, b_scale, a_zp, b_zp, bias):
    a, b, out = _matmul_shapes(a, b)
    r = a.ndim
    a_zp = None if a_zp is None else _per_row(a_zp, r, -2)
    b_zp = None if b_zp is None else _per_row(b_zp, r, -1)
    if a.dtype != b.dtype:  # UINT8 by INT8: DirectML wants one type for A, B and their zero points: INT16 holds both
        i16 = lambda v: None if v is None else _dml("cast")(v, output_data_type="INT16")  # noqa: E731
        a, b, a_zp, b_zp = i16(a), i16(b), i16(a_zp), i16(b_zp)
    y = _dml("matrix_multiply_integer_to_float")(
        a, _per_row(a_scale, r, -2), b, _per_row(b_scale, r, -1), a_zp, b_zp,
        None if bias is None else jnp.broadcast_to(_arr(bias), a.shape[:-1] + (b.shape[-1],)))
    return y.reshape(out)


def _matmul_integer_to_float(c: Call):
    return [_int_to_float_matmul(_arr(c.inputs[0]), c.inputs[2], _arr(c.inputs[1]), c.inputs[3], c.input(4),
                                 c.input(5), c.input(6))]


def _dynamic_quantize_matmul(c: Call):
    a, a_scale, a_zp = _dml("dynamic_quantize_linear")(_arr(c.inputs[0]))
    return [_int_to_float_matmul(a, a_scale, _arr(c.inputs[1]), c.inputs[2], a_zp, c.input(3), c.input(4))]


# com.microsoft DynamicQuantizeLSTM: ONNX's LSTM whose two products take a dynamically quantized A, composed as
# ONNX Runtime's CPU kernel computes it (contrib_ops/cpu/quantization/dynamic_quantize_lstm.cc over
# providers/cpu/rnn/uni_directional_lstm.cc and the quantized ComputeGemm of rnn_helpers.cc).

_DQ_LSTM_ACTIVATIONS = {
    "sigmoid": ("activation_sigmoid", ()), "tanh": ("activation_tanh", ()), "relu": ("activation_relu", ()),
    "affine": ("activation_linear", (("alpha", 0.0), ("beta", 0.0))),
    "leakyrelu": ("activation_leaky_relu", (("alpha", 0.01),)),
    "thresholdedrelu": ("activation_thresholded_relu", (("alpha", 0.0),)),
    "scaledtanh": ("activation_scaled_tanh", (("alpha", 0.0), ("beta", 0.0))),
    "hardsigmoid": ("activation_hard_sigmoid", (("alpha", 0.2), ("beta", 0.5))),
    "elu": ("activation_elu", (("alpha", 1.0),)), "softsign": ("activation_softsign", ()),
    "softplus": ("activation_softplus", ()),
}
"""ONNX Runtime's recurrent activations (its names, case-insensitive): the DirectML activation and the
alpha and beta each reads, with ONNX Runtime's defaults where the node gives too few (rnn_helpers.cc)."""

_DQ_LSTM_DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}

_DQ_LSTM_RESTRICTIONS = (
    "ONNX Runtime's DirectML provider does not run it: composed as its CPU kernel computes it, in lax.scan (both "
    "directions in one loop, a reverse one by "
    "REVERSE_SUBSEQUENCES): X quantized to UINT8 as one matrix (DYNAMIC_QUANTIZE_LINEAR; steps past the longest "
    "sequence_lens read as 0), each step's Ht-1 by batch row where ONNX Runtime splits the batch across its "
    "threads (more than 4 rows, or 2 or more with hidden_size <= 256; its answer then depends on its thread "
    "count, and dmljax's is that of at least batch-size threads) and whole otherwise; the INT8 or UINT8 weights "
    "multiplied exactly in INT32 (MATRIX_MULTIPLY_INTEGER), CAST and scaled by A's scale times W's or R's (per "
    "tensor or per column), the gates added, clipped and activated in ONNX Runtime's order (its activation names "
    "and alpha/beta defaults; h's input unclipped); W_zero_point and R_zero_point initializers of one value a "
    "direction (per column: one value, 0 for INT8, as ONNX Runtime requires); refused: layout=1")


def _dq_lstm_batch_rows(batch: int, hidden: int) -> int:
    """How many batch rows of Ht-1 ONNX Runtime quantizes together: the whole batch, unless it splits the
    batch across its threads (more than 4 rows, or 2 or more with hidden_size <= 256), each thread
    quantizing its own ceil(batch / threads) rows; dmljax takes one row a thread (threads >= batch)."""
    return 1 if batch > 4 or (batch >= 2 and hidden <= 256) else batch


def _dq_lstm_check(attrs: dict, opset: int) -> str | None:
    direction = _text(attrs.get("direction"), "forward")
    if direction not in _DQ_LSTM_DIRECTIONS:
        return f"direction {direction!r}: one of 'forward', 'reverse', 'bidirectional'"
    if int(attrs.get("hidden_size", 0) or 0) <= 0:
        return "hidden_size is required, a positive number"
    names = [_text(n, "") for n in attrs.get("activations") or []]
    dirs = _DQ_LSTM_DIRECTIONS[direction]
    if names and len(names) != 3 * dirs:
        return f"{len(names)} activations; 3 a direction (f, g, h): {3 * dirs}"
    unknown = [n for n in names if n.lower() not in _DQ_LSTM_ACTIVATIONS]
    if unknown:
        return f"activation {unknown[0]!r} is not one of ONNX Runtime's recurrent activations"
    clip = attrs.get("clip")
    if clip is not None and not float(clip) > 0:
        return f"clip {clip} is not positive"
    if attrs.get("layout", 0):
        return "layout=1 (batch-major) is not mapped (ONNX Runtime's kernel refuses it too)"
    return None


def _dq_lstm_check_io(attrs: dict, opset: int, inputs: tuple, outputs: tuple) -> str | None:
    missing = [name for i, name in ((8, "W_scale"), (9, "W_zero_point"), (10, "R_scale"), (11, "R_zero_point"))
               if not _used(inputs, i)]
    return f"{', '.join(missing)} left out (required)" if missing else None


def _dq_lstm_shape_problems(attrs: dict, shapes: tuple) -> list[str]:
    """What ONNX Runtime's kernel refuses in the inputs' shapes (None where a shape is unknown)."""
    dirs = _DQ_LSTM_DIRECTIONS.get(_text(attrs.get("direction"), "forward"), 1)
    h = int(attrs.get("hidden_size", 0) or 0)
    shape = lambda i: shapes[i] if i < len(shapes) else None  # noqa: E731
    x = shape(0)
    seq_in = x[2] if x is not None and len(x) == 3 else None
    batch = x[1] if x is not None and len(x) == 3 else None
    problems = [] if x is None or len(x) == 3 else [f"X has shape {list(x)}; [seq_length, batch_size, input_size]"]
    want = {1: ("W", (dirs, seq_in, 4 * h)), 2: ("R", (dirs, h, 4 * h)), 3: ("B", (dirs, 8 * h)),
            4: ("sequence_lens", (batch,)), 5: ("initial_h", (dirs, batch, h)), 6: ("initial_c", (dirs, batch, h)),
            7: ("P", (dirs, 3 * h))}
    for i, (name, dims) in want.items():
        s = shape(i)
        if s is not None and (len(s) != len(dims) or any(d is not None and d != e for d, e in zip(dims, s))):
            expected = ", ".join("?" if d is None else str(d) for d in dims)
            problems.append(f"{name} has shape {list(s)}; [{expected}]")
    for i, name in ((8, "W_scale"), (9, "W_zero_point"), (10, "R_scale"), (11, "R_zero_point")):
        s = shape(i)
        if s is not None and s not in ((dirs,), (dirs, 4 * h)):
            problems.append(f"{name} has shape {list(s)}; [{dirs}] (per tensor) or [{dirs}, {4 * h}] (per column)")
    return problems


def _dq_lstm_shapes(attrs: dict, opset: int, inputs: tuple, shapes: tuple) -> str | None:
    return "; ".join(_dq_lstm_shape_problems(attrs, shapes)) or None


def _dq_lstm_error(found: str, allowed: str = "") -> ValidationError:
    return ValidationError("DynamicQuantizeLSTM", "com.microsoft DynamicQuantizeLSTM", None,
                           [Violation("DynamicQuantizeLSTM (com.microsoft)", "", found, allowed)])


def _dq_lstm_zero_point(c: Call, i: int, name: str, d: int, dirs: int):
    """Direction ``d``'s zero point as ONNX Runtime reads it: the direction's first value, one for the whole
    matrix (a per-column zero point must hold one value, 0 for INT8, as its kernel requires)."""
    zp = c.static(i)
    if zp.ndim == 2 and (zp.any() if zp.dtype == np.int8 else (zp != zp.flat[0]).any()):
        raise _dq_lstm_error(f"{name} per column holds {np.unique(zp).size} values",
                             "a single value (0 for INT8), as ONNX Runtime's kernel requires")
    return _arr(zp.reshape(dirs, -1)[d, :1].reshape(1, 1))


def _dq_gemm(a, a_scale, a_zp, b, b_scale, b_zp, acc=None):
    """ONNX Runtime's quantized recurrent GEMM: A's UINT8 values times B's 8-bit ones exactly in INT32
    (MATRIX_MULTIPLY_INTEGER, which takes UINT8 by INT8), CAST to FLOAT32, times the product of the scales (A's
    per tensor or per row, B's per tensor or per column; that product rounded first, as ONNX Runtime's scale
    multiplier), plus ``acc`` (its accumulate mode) by ELEMENT_WISE_ADD."""
    p = _dml("cast")(_dml("matrix_multiply_integer")(a, b, a_zp, b_zp), output_data_type="FLOAT32")
    y = _dml("element_wise_multiply")(*_bcast(p, _dml("element_wise_multiply")(*_bcast(a_scale, b_scale))))
    return y if acc is None else _dml("element_wise_add")(acc, y)


def _dq_lstm_recurrent(h, acc, r, r_scale, r_zp, rows: int):
    """One direction's Xt*W + Ht-1*R: Ht-1 [batch, hidden] quantized by DYNAMIC_QUANTIZE_LINEAR whole (``rows``
    the batch) or one batch row at a time (a DYNAMIC_QUANTIZE_LINEAR a row: vmapped), then ``_dq_gemm``."""
    if rows == 1:
        q, s, z = jax.vmap(_dml("dynamic_quantize_linear"))(h[:, None, :])
        q, s, z = q[:, 0], s[:, 0], z[:, 0]  # [batch, hidden], [batch, 1], [batch, 1]: per row
    else:
        q, s, z = _dml("dynamic_quantize_linear")(h)
    return _dq_gemm(q, s, z, r, r_scale, r_zp, acc)


def _dq_lstm_activations(c: Call, dirs: int) -> list:
    """Each direction's f, g, h as callables, alphas and betas consumed in order as ONNX Runtime's
    ActivationFuncs consumes them (a function that reads one takes the next, or its default)."""
    names = [_text(n, "") for n in c.attr("activations") or []] or ["Sigmoid", "Tanh", "Tanh"] * dirs
    alphas, betas = list(c.attr("activation_alpha") or []), list(c.attr("activation_beta") or [])
    out = []
    for n in names:
        op, params = _DQ_LSTM_ACTIVATIONS[n.lower()]
        kw = {}
        for key, default in params:
            given = alphas if key == "alpha" else betas
            kw[key] = float(given.pop(0)) if given else default
        out.append(functools.partial(_dml(op), **kw))
    return out


def _dynamic_quantize_lstm(c: Call):
    """com.microsoft DynamicQuantizeLSTM as ONNX Runtime's CPU kernel computes it, from DirectML operators in
    lax.scan. The input projection X*W for every step at once: X [seq, batch, input] quantized as one matrix by
    DYNAMIC_QUANTIZE_LINEAR (UINT8; with sequence_lens the steps past the longest read as 0, which the widened
    range holds anyway: ONNX Runtime quantizes the first max(sequence_lens) steps), times each direction's W
    [input, 4 hidden] by ``_dq_gemm``; a reverse direction's rows reversed within each sequence's length
    (REVERSE_SUBSEQUENCES). Each step: Ht-1 quantized by DYNAMIC_QUANTIZE_LINEAR (``_dq_lstm_batch_rows``: by
    batch row or whole), times R by ``_dq_gemm`` accumulating onto the step's projection; then ONNX's LSTM in ONNX
    Runtime's order of roundings: (gates + Ct-1 (.) Pi/Pf) + (Wb + Rb), clipped (ELEMENT_WISE_CLIP, where clip is
    given), f and g; Ct = Ct-1 (.) ft + it (.) ct (ft = 1 - it by IDENTITY's ScaleBias with input_forget); (o
    gate + Ct (.) Po) + bias, f; Ht = h(Ct) (.) ot (h's input unclipped, as ONNX Runtime's kernel). Past a
    sequence's length the states hold (ELEMENT_WISE_IF) and Y is 0; Y_h and Y_c are 0 for a length of 0."""
    problems = _dq_lstm_shape_problems(c.attrs, tuple(None if v is None else tuple(np.shape(v)) for v in c.inputs))
    if problems:
        raise _dq_lstm_error("; ".join(problems))
    x = _arr(c.inputs[0])
    seq, batch, _ = x.shape
    hid = int(c.attr("hidden_size"))
    direction = _text(c.attr("direction"), "forward")
    dirs = _DQ_LSTM_DIRECTIONS[direction]
    backward = [direction == "reverse" or d == 1 for d in range(dirs)]
    acts = _dq_lstm_activations(c, dirs)
    add, mul, cond = _dml("element_wise_add"), _dml("element_wise_multiply"), _dml("element_wise_if")
    w, r = _arr(c.inputs[1]), _arr(c.inputs[2])

    def per_column(i: int, d: int):  # direction d's scale: [1, 1] per tensor or [1, 4 hidden] per column
        return _arr(c.inputs[i]).reshape(dirs, -1)[d].reshape(1, -1)

    w_zp = [_dq_lstm_zero_point(c, 9, "W_zero_point", d, dirs) for d in range(dirs)]
    r_zp = [_dq_lstm_zero_point(c, 11, "R_zero_point", d, dirs) for d in range(dirs)]
    lens = c.input(4)
    if lens is not None:
        lens = _arr(lens)
        lens = lens if lens.dtype == jnp.int32 else _dml("cast")(lens, output_data_type="INT32")
    xa = x
    if lens is not None:
        longest = _dml("reduce")(lens, function="MAX", axes=(0,))
        steps = np.arange(seq, dtype=np.int32).reshape(seq, 1, 1)
        keep = _dml("element_wise_logical_less_than")(jnp.broadcast_to(steps, x.shape),
                                                      jnp.broadcast_to(longest.reshape(1, 1, 1), x.shape))
        xa = cond(keep, x, jnp.zeros_like(x))
    xq, xs, xz = _dml("dynamic_quantize_linear")(xa.reshape(seq * batch, -1))
    rev_lens = np.uint32(seq) if lens is None else _dml("cast")(lens, output_data_type="UINT32").reshape(1, batch, 1)
    rev_lens = jnp.broadcast_to(rev_lens, (1, batch, 4 * hid))  # REVERSE_SUBSEQUENCES' lengths, zero strides
    proj = []
    for d in range(dirs):
        p = _dq_gemm(xq, xs, xz, w[d], per_column(8, d), w_zp[d]).reshape(seq, batch, 4 * hid)
        proj.append(_dml("reverse_subsequences")(p, rev_lens, axis=0) if backward[d] else p)
    proj = proj[0][:, None] if dirs == 1 else _dml("join")([p[:, None] for p in proj], axis=1)  # [seq, dirs, batch, 4h]

    zeros = jnp.zeros((dirs, batch, hid), x.dtype)
    h0 = zeros if c.input(5) is None else _arr(c.inputs[5])
    c0 = zeros if c.input(6) is None else _arr(c.inputs[6])
    bias = c.input(3)
    if bias is not None:
        bias = _arr(bias).reshape(dirs, 2, 4 * hid)
        bias = add(bias[:, 0], bias[:, 1])  # Wb + Rb, as ONNX Runtime adds them once
        bias = [jnp.broadcast_to(bias[:, None, k * hid:(k + 1) * hid], (dirs, batch, hid)) for k in range(4)]
    peep = c.input(7)
    if peep is not None:  # Pi, Po, Pf
        peep = [jnp.broadcast_to(_arr(peep)[:, None, k * hid:(k + 1) * hid], (dirs, batch, hid)) for k in range(3)]
    clip = c.attr("clip")
    rows = _dq_lstm_batch_rows(batch, hid)
    wired = not c.outputs or bool(c.outputs[0])
    # ONNX Runtime reads Ht-1 from Y where Y is wired: a sequence ended before the last step gives 0 rows there,
    # which matter where rows are quantized together (elsewhere a sequence's own quantization is not read back);
    # without Y it reads Y_h, where an ended sequence holds its last state and one of length 0 memory ONNX Runtime
    # leaves unset (measured: other values each run, inf among them), for which dmljax holds initial_h
    ended_reads_zero = lens is not None and wired and rows > 1
    shape3 = (dirs, batch, hid)
    lens3 = None if lens is None else jnp.broadcast_to(lens.reshape(1, batch, 1), shape3)

    def act(k: int, v):  # activation k (f, g, h) of each direction
        fns = [acts[3 * d + k] for d in range(dirs)]
        if all(f.func is fns[0].func and f.keywords == fns[0].keywords for f in fns):
            return fns[0](v)
        return _dml("join")([fn(v[d:d + 1]) for d, fn in enumerate(fns)], axis=0)

    def pre(v, k: int):  # a gate's input: plus its bias, clipped
        v = v if bias is None else add(v, bias[k])
        return v if clip is None else _dml("element_wise_clip")(v, min=-float(clip), max=float(clip))

    def step(carry, inputs):
        h, cell = carry
        xw, t = inputs
        t3 = jnp.broadcast_to(t, shape3)
        a = h
        if ended_reads_zero:
            a = cond(_dml("element_wise_logical_less_than_or_equal")(t3, lens3), h, zeros)
        gates = [_dq_lstm_recurrent(a[d], xw[d], r[d], per_column(10, d), r_zp[d], rows) for d in range(dirs)]
        g = gates[0][None] if dirs == 1 else _dml("join")([v[None] for v in gates], axis=0)
        gi, go, gf, gc = (g[..., k * hid:(k + 1) * hid] for k in range(4))
        if peep is not None:
            gi, gf = add(gi, mul(cell, peep[0])), add(gf, mul(cell, peep[2]))
        i = act(0, pre(gi, 0))
        if c.attr("input_forget", 0):
            f = _dml("element_wise_identity")(i, scale_bias=(-1.0, 1.0))
        else:
            f = act(0, pre(gf, 2))
        cn = add(mul(cell, f), mul(i, act(1, pre(gc, 3))))
        if peep is not None:
            go = add(go, mul(cn, peep[1]))
        hn = mul(act(2, cn), act(0, pre(go, 1)))
        if lens3 is None:
            return (hn, cn), hn
        valid = _dml("element_wise_logical_less_than")(t3, lens3)
        hn, cn = cond(valid, hn, h), cond(valid, cn, cell)
        return (hn, cn), cond(valid, hn, zeros)

    (h, cell), ys = jax.lax.scan(step, (h0, c0), (proj, jnp.arange(seq, dtype=jnp.int32)))
    if any(backward):  # the reversed steps back in place
        rev = jnp.broadcast_to(rev_lens[..., :1], (1, batch, hid))
        ys = _dml("join")([(_dml("reverse_subsequences")(ys[:, d], rev, axis=0) if backward[d] else ys[:, d])[:, None]
                           for d in range(dirs)], axis=1)
    if lens3 is not None:
        ran = _dml("element_wise_logical_greater_than")(lens3, jnp.zeros_like(lens3))
        h, cell = cond(ran, h, zeros), cond(ran, cell, zeros)
    return [ys, h, cell]


def _skip_layer_norm(c: Call):
    """SkipLayerNormalization: input + skip (+ bias) by ELEMENT_WISE_ADD, normalized over the last
    axis by MEAN_VARIANCE_NORMALIZATION1 with gamma and beta; the optional outputs as
    LayerNormalization's (mean, inverse standard deviation) and the sum."""
    x, skip = _bcast(c.inputs[0], c.inputs[1])
    s = _dml("element_wise_add")(x, skip)
    if c.input(4) is not None:
        s = _dml("element_wise_add")(*_bcast(s, c.inputs[4]))
    norm = _layer_norm(Call("LayerNormalization", 17, [s, c.inputs[2], c.input(3)],
                            {"axis": -1, "epsilon": c.attr("epsilon", 1e-12)}, 3))
    return [*norm, s]  # what the graph leaves unused, XLA leaves out


def _bias_gelu(c: Call):
    return [_dml("activation_gelu")(_dml("element_wise_add")(*_bcast(c.inputs[0], c.inputs[1])))]


def _quick_gelu(c: Call):
    x = _arr(c.inputs[0])
    gate = _dml("activation_sigmoid")(_dml("element_wise_identity")(x, scale_bias=(float(c.attr("alpha", 1.702)), 0.0)))
    return [_dml("element_wise_multiply")(x, gate)]


def _fused_matmul(c: Call):
    a, b = _arr(c.inputs[0]), _arr(c.inputs[1])
    if c.attr("transA", 0):
        a = jnp.swapaxes(a, -1, -2)
    if c.attr("transB", 0):
        b = jnp.swapaxes(b, -1, -2)
    a, b, out = _matmul_shapes(a, b)
    if a.ndim < 2 or a.ndim > 4:
        lead = int(np.prod(a.shape[:-2], dtype=np.int64))
        a, b = a.reshape(lead, *a.shape[-2:]), b.reshape(lead, *b.shape[-2:])
    return [_dml("gemm")(a, b, alpha=float(c.attr("alpha", 1.0))).reshape(out)]


def _fused_matmul_check(attrs: dict, opset: int) -> str | None:
    if attrs.get("transBatchA", 0) or attrs.get("transBatchB", 0):
        return "transBatchA/transBatchB are not mapped"
    return None


# com.microsoft attention: MultiHeadAttention, Attention and GroupQueryAttention onto MULTIHEAD_ATTENTION(1),
# as ONNX Runtime's DirectML provider maps them (DmlOperatorMultiHeadAttention, DmlOperatorAttention,
# DmlOperatorGroupQueryAttention), with the forms it leaves to other providers (past state, unidirectional)
# where DirectML can express them.

_MHA = ("multihead_attention", "DML_OPERATOR_MULTIHEAD_ATTENTION")


def _attention_error(c: Call, op: tuple[str, str], tensor: str, found: str, allowed: str):
    return ValidationError(op[0], op[1], None, [Violation(f"{c.op_type} (com.microsoft) {tensor}", "", found,
                                                          allowed)])


def _used(names, i: int) -> bool:
    return i < len(names) and bool(names[i])


def _mask_problem(shape: tuple, b: int, h: int, s: int, t: int) -> tuple[str, str] | None:
    """Why a key_padding_mask / mask_index of ``shape`` is not a form DirectML's MaskTensor can read
    (found, allowed), or None: the shape rule of ``_attention_mask``, for the load-time check too."""
    shape = tuple(int(d) for d in shape)
    if len(shape) == 1 and shape[0] in (b, 2 * b):
        return None
    if len(shape) == 4 and shape[2] != s and shape[2] == shape[3] and shape[2] >= t and t == s:
        shape = shape[:2] + (s, t)
    if (2 <= len(shape) <= 4 and shape[0] == b and shape[-1] == t and (len(shape) == 2 or shape[-2] == s)
            and (len(shape) < 4 or shape[1] in (1, h))):
        return None
    return (f"has shape {list(shape)}",
            f"{{{b}}} key lengths, {{{2 * b}}} ends and starts, {{{b}, {t}}} or {{{b}, {s}, {t}}} "
            "(batch, sequence, total sequence): the forms DirectML's MaskTensor can read "
            "({3 * batch + 2} packed bounds have no past, bias or unidirectional rule here)")


def _bias_problem(shape: tuple, b: int, h: int, s: int, t: int) -> tuple[str, str] | None:
    """Why an attention_bias of ``shape`` cannot be RelativePositionBias (found, allowed), or None."""
    if len(shape) == 4 and shape[0] in (1, b) and shape[1] in (1, h) and tuple(shape[2:]) == (s, t):
        return None
    return (f"has shape {list(shape)}", f"{{{b} or 1, {h} or 1, {s}, {t}}} (batch, heads, sequence, total sequence)")


def _attention_mask(c: Call, mask, b: int, h: int, s: int, t: int):
    """A key_padding_mask / mask_index as MULTIHEAD_ATTENTION's MaskTensor and MaskType: {batch}
    key lengths as KEY_SEQUENCE_LENGTH {1, batch}, {2 * batch} ends then starts as
    KEY_SEQUENCE_END_START {2, batch}; {batch, total}, {batch, sequence, total} (and Attention's
    {batch, 1, max, max}, its top-left corner) as BOOLEAN, broadcast to {batch, heads, sequence,
    total} by zero strides (the provider's descs)."""
    m = _arr(mask)
    problem = _mask_problem(m.shape, b, h, s, t)
    if problem is not None:
        raise _attention_error(c, _MHA, "mask", *problem)
    if m.dtype != jnp.int32:
        m = _dml("cast")(m, output_data_type="INT32")
    if m.ndim == 1:
        kind = MaskType.KEY_SEQUENCE_LENGTH if m.shape[0] == b else MaskType.KEY_SEQUENCE_END_START
        return m.reshape(-1, b), kind
    if m.ndim == 4 and m.shape[2] != s:
        m = _dml("slice1")(m, input_window_offsets=(0, 0, 0, 0), input_window_sizes=(m.shape[0], m.shape[1], s, t),
                           input_window_strides=(1, 1, 1, 1))
    m = m.reshape((b,) + (1,) * (4 - m.ndim) + m.shape[1:])
    return jnp.broadcast_to(m, (b, h, s, t)), MaskType.BOOLEAN


def _causal_bias(c: Call, bias, b: int, h: int, s: int, t: int, dt):
    """unidirectional=1: the float's lowest value where key j lies after query i's position (past + i), as
    ONNX Runtime's CPU kernels; a constant ADDed to the attention bias (or the relative position bias alone)."""
    i, j = np.arange(s).reshape(-1, 1), np.arange(t).reshape(1, -1)
    const = np.where(j > t - s + i, np.finfo(dt).min, 0).astype(dt)
    const = jnp.broadcast_to(jnp.asarray(const), (b, h, s, t))
    return const if bias is None else _dml("element_wise_add")(bias, const)


def _attention_bias(c: Call, bias, b: int, h: int, s: int, t: int):
    """attention_bias {batch or 1, heads or 1, sequence, total}: broadcast (zero strides) to RelativePositionBias."""
    if bias is None:
        return None
    x = _arr(bias)
    problem = _bias_problem(x.shape, b, h, s, t)
    if problem is not None:
        raise _attention_error(c, _MHA, "attention_bias", *problem)
    return jnp.broadcast_to(x, (b, h, s, t))


def _mha_call(c: Call, op: str, q, k, v, sqkv, skv, bias, mask, rel, past_k, past_v, heads: int, head_size: int,
              b: int, s: int, t: int, kv_heads: int | None = None, past_lengths=None):
    dt = np.dtype(next(x for x in (q, sqkv) if x is not None).dtype)
    m, kind = (None, MaskType.NONE) if mask is None else _attention_mask(c, mask, b, heads, s, t)
    rel = _attention_bias(c, rel, b, heads, s, t)
    if c.attr("unidirectional", 0):
        rel = _causal_bias(c, rel, b, heads, s, t, dt)
    scale = c.attr("scale")
    scale = float(np.float32(1.0 / np.sqrt(head_size))) if not scale else float(scale)
    kw = dict(scale=scale, mask_filter_value=float(c.attr("mask_filter_value", -10000.0)), mask_type=kind)
    if op == "multihead_attention":
        return _dml(op)(q, k, v, None, skv, sqkv, bias, m, rel, past_k, past_v, head_count=heads, **kw)
    return _dml(op)(q, k, v, None, skv, sqkv, bias, m, rel, past_k, past_v, past_lengths, query_head_count=heads,
                    key_value_head_count=kv_heads, **kw)


def _com_multihead_attention(c: Call):
    """com.microsoft MultiHeadAttention onto MULTIHEAD_ATTENTION: a {batch, sequence, heads, 3, head} query
    as StackedQueryKeyValueTensor, a {batch, kvSequence, heads, 2, head} key as StackedKeyValueTensor, a
    4-dimensional key and value (already {batch, heads, kvSequence, head}) as the past with no new keys; the
    bias, mask and attention_bias as the provider binds them; unidirectional as a constant bias."""
    q, k, v = (None if c.input(i) is None else _arr(c.inputs[i]) for i in range(3))
    bias, mask, rel, past_k, past_v = (c.input(i) for i in (3, 4, 5, 6, 7))
    heads = int(c.attr("num_heads"))
    sqkv = skv = None
    if q.ndim == 5:
        sqkv, q = q, None
        b, s, head_size = sqkv.shape[0], sqkv.shape[1], sqkv.shape[4]
    else:
        b, s, head_size = q.shape[0], q.shape[1], q.shape[2] // heads
    if k is not None and k.ndim == 5:
        skv, k = k, None
        kv_len = skv.shape[1]
    elif k is not None and k.ndim == 4:
        if past_k is not None:
            raise _attention_error(c, _MHA, "key", "is 4-dimensional (the past's layout) with past_key given",
                                   "a 4-dimensional key and value, or past_key and past_value")
        past_k, past_v, k, v = k, v, None, None
        kv_len = 0
    elif k is not None:
        kv_len = k.shape[1]
    else:
        kv_len = s if sqkv is not None else 0
    past = 0 if past_k is None else int(np.shape(past_k)[2])
    t = past + kv_len
    bias = None if bias is None else _arr(bias)
    pk, pv = (None if x is None else _arr(x) for x in (past_k, past_v))
    out, present_k, present_v = _mha_call(c, "multihead_attention", q, k, v, sqkv, skv, bias, mask, rel, pk, pv,
                                          heads, head_size, b, s, t)
    return [out, present_k, present_v]


def _com_multihead_attention_check(attrs: dict, opset: int, inputs: tuple, outputs: tuple) -> str | None:
    if _used(inputs, 8) or _used(inputs, 9):
        return ("past_sequence_length and cache_indirection (a shared past buffer and beam search) are not mapped: "
                "MULTIHEAD_ATTENTION's past is the past key and value whole")
    if _used(outputs, 3):
        return "the qk output is not mapped: MULTIHEAD_ATTENTION returns no scores"
    return None


def _shape_problems(shapes: tuple, dims, mask_at: int, bias_at: int) -> str | None:
    """The load-time form of the mask and attention_bias checks: ``dims`` (batch, heads, sequence,
    total sequence) from the static shapes, or None where one of them is not static."""
    if dims is None:
        return None
    reasons = []
    for i, name, rule in ((mask_at, "mask", _mask_problem), (bias_at, "attention_bias", _bias_problem)):
        shape = shapes[i] if i < len(shapes) else None
        problem = None if shape is None else rule(shape, *dims)
        if problem is not None:
            reasons.append(f"{name} {problem[0]}; supported: {problem[1]}")
    return "; ".join(reasons) or None


def _known(inputs: tuple, shapes: tuple, i: int) -> bool:
    """Whether input ``i`` is left out or has a static shape (False: wired, its shape unknown)."""
    return not _used(inputs, i) or shapes[i] is not None


def _com_multihead_attention_shapes(attrs: dict, opset: int, inputs: tuple, shapes: tuple) -> str | None:
    if not all(_known(inputs, shapes, i) for i in (0, 1, 6)):
        return None
    q, k, past_k = shapes[0], shapes[1] if _used(inputs, 1) else None, shapes[6] if _used(inputs, 6) else None
    b, s = q[0], q[1]
    if k is not None and len(k) == 4:
        past_k, kv_len = k, 0
    elif k is not None:
        kv_len = k[1]
    else:
        kv_len = s if len(q) == 5 else 0
    past = 0 if past_k is None else past_k[2]
    return _shape_problems(shapes, (b, int(attrs.get("num_heads", 1)), s, past + kv_len), 4, 5)


def _com_attention_shapes(attrs: dict, opset: int, inputs: tuple, shapes: tuple) -> str | None:
    if not all(_known(inputs, shapes, i) for i in (0, 4)):
        return None
    b, s = shapes[0][0], shapes[0][1]
    past = shapes[4][3] if _used(inputs, 4) else 0
    return _shape_problems(shapes, (b, int(attrs.get("num_heads", 1)), s, s + past), 3, 5)


def _com_attention(c: Call):
    """com.microsoft Attention: the input projection by one GEMM (weights and bias broadcast over the batch by
    zero strides), query, key and value as SLICE1 windows of its output, the past {2, batch, heads, past,
    head} as PastKeyTensor and PastValueTensor, then MULTIHEAD_ATTENTION; the present is JOINed from its present
    key and value."""
    x, w = _arr(c.inputs[0]), _arr(c.inputs[1])
    heads = int(c.attr("num_heads"))
    sizes = c.attr("qkv_hidden_sizes")
    d, _, dv = [int(n) for n in sizes] if sizes else [w.shape[1] // 3] * 3
    b, s = x.shape[0], x.shape[1]
    bias = c.input(2)
    cc = None if bias is None else jnp.broadcast_to(_arr(bias), (b, s, w.shape[1]))
    proj = _dml("gemm")(x, jnp.broadcast_to(w, (b,) + w.shape), cc, trans_a="NONE", trans_b="NONE", alpha=1.0,
                        beta=1.0)
    q, k, v = _slice_last(proj, 0, d), _slice_last(proj, d, 2 * d), _slice_last(proj, 2 * d, 2 * d + dv)
    past = c.input(4)
    pk = pv = None
    if past is not None:
        past = _arr(past)
        pk, pv = (_dml("slice1")(past, input_window_offsets=(i, 0, 0, 0, 0), input_window_sizes=(1,) + past.shape[1:],
                                 input_window_strides=(1,) * 5).reshape(past.shape[1:]) for i in (0, 1))
    t = s + (0 if past is None else past.shape[3])
    out, present_k, present_v = _mha_call(c, "multihead_attention", q, k, v, None, None, None, c.input(3),
                                          c.input(5), pk, pv, heads, d // heads, b, s, t)
    if c.output_count < 2:
        return [out]
    return [out, _dml("join")([present_k[None], present_v[None]], axis=0)]


def _com_attention_check(attrs: dict, opset: int, inputs: tuple, outputs: tuple) -> str | None:
    sizes = attrs.get("qkv_hidden_sizes")
    if attrs.get("do_rotary", 0):
        return "do_rotary=1 is not mapped (ONNX Runtime's DirectML provider refuses it too)"
    if attrs.get("past_present_share_buffer", 0) or _used(inputs, 6):
        return ("past_present_share_buffer and past_sequence_length (a shared past buffer) are not mapped: "
                "MULTIHEAD_ATTENTION's past is the past key and value whole")
    if sizes and (len(sizes) != 3 or sizes[0] != sizes[1]):
        return (f"qkv_hidden_sizes {list(sizes)}: MULTIHEAD_ATTENTION needs the query's and the key's hidden sizes "
                "equal (as ONNX Runtime's DirectML provider)")
    if sizes and len(sizes) == 3 and sizes[2] != sizes[0] and _used(outputs, 1):
        return f"the present output with qkv_hidden_sizes {list(sizes)}: one tensor holds the key's and the value's"
    if _used(outputs, 2):
        return "the qk output is not mapped: MULTIHEAD_ATTENTION returns no scores"
    return None


def _com_group_query_attention(c: Call):
    """com.microsoft GroupQueryAttention onto MULTIHEAD_ATTENTION1: PastSequenceLengthsTensor is
    seqlens_k + 1 - sequence (ELEMENT_WISE_ADD; zeros on the first prompt, sequence == total_sequence_length,
    as the provider), so the present holds each batch's valid past, the new keys, then zeros, and the
    attention is causal from each batch's position; do_rotary rotates query and key at those positions (ai.onnx
    RotaryEmbedding's operators); a packed query (no key, no value) is split by SLICE1; FLOAT16 is CAST to FLOAT32 and back (the provider's graph)."""
    q = _arr(c.inputs[0])
    heads, kv_heads = int(c.attr("num_heads")), int(c.attr("kv_num_heads"))
    k, v = c.input(1), c.input(2)
    if k is None:
        head_size = q.shape[2] // (heads + 2 * kv_heads)
        d, dkv = heads * head_size, kv_heads * head_size
        q, k, v = _slice_last(q, 0, d), _slice_last(q, d, d + dkv), _slice_last(q, d + dkv, d + 2 * dkv)
    else:
        k, v = _arr(k), _arr(v)
        head_size = q.shape[2] // heads
    dt = q.dtype
    f16 = dt == jnp.float16
    cast = lambda x: None if x is None else _dml("cast")(x, output_data_type="FLOAT32")  # noqa: E731
    pk, pv = (None if c.input(i) is None else _arr(c.inputs[i]) for i in (3, 4))
    if pk is not None and pk.shape[2] == 0:
        pk = pv = None
    if f16:
        q, k, v, pk, pv = (cast(x) for x in (q, k, v, pk, pv))
    b, s = q.shape[0], q.shape[1]
    total = int(c.static(6).reshape(()))
    past = 0 if pk is None else pk.shape[2]
    lengths = _arr(c.inputs[5]).reshape(b)
    if lengths.dtype != jnp.int32:
        lengths = _dml("cast")(lengths, output_data_type="INT32")
    if s == total:  # the first prompt: no past (the provider's rule)
        lengths = jnp.zeros((b,), jnp.int32)
    else:
        lengths = _dml("element_wise_add")(lengths, jnp.full((b,), 1 - s, jnp.int32))
    if c.attr("do_rotary", 0):  # positions past + 0, 1, ... of each batch: as ai.onnx RotaryEmbedding
        pos = _dml("element_wise_add")(jnp.broadcast_to(lengths.reshape(b, 1), (b, s)),
                                       jnp.broadcast_to(jnp.arange(s, dtype=jnp.int32), (b, s)))
        cos, sin = (cast(_arr(c.inputs[i])) if f16 else _arr(c.inputs[i]) for i in (7, 8))
        rotary = {"interleaved": int(c.attr("rotary_interleaved", 0)), "rotary_embedding_dim": 2 * cos.shape[1]}
        q, k = (_rotary_embedding(Call("RotaryEmbedding", 23, [x, cos, sin, pos], {**rotary, "num_heads": n}, 1))[0]
                for x, n in ((q, heads), (k, kv_heads)))
    t = past + k.shape[1]
    window, cap = int(c.attr("local_window_size", -1)), float(c.attr("softcap", 0.0) or 0.0)
    allowed = None if window < 0 and cap == 0 else _gqa_allowed(lengths, window, b, s, t)
    out, present_k, present_v = _mha_call(c, "multihead_attention1", q, k, v, None, None, None,
                                          allowed if cap == 0 else None, None, pk, pv, heads, head_size, b, s, t,
                                          kv_heads, lengths)
    if cap != 0:  # the scores are needed: composed on MULTIHEAD_ATTENTION1's present
        out = _gqa_softcapped(c, q, present_k, present_v, allowed, heads, kv_heads, head_size, cap)
    keep = max(past, total)
    if present_k.shape[2] > keep:
        present_k, present_v = (_slice_axis2(p, keep) for p in (present_k, present_v))
    if f16:
        out, present_k, present_v = (_dml("cast")(x, output_data_type="FLOAT16") for x in (out, present_k, present_v))
    return [out, present_k, present_v]


def _gqa_allowed(lengths, window: int, b: int, s: int, t: int):
    """The keys each query may read, as an INT32 {batch, sequence, total} mask (1: read): query i of batch
    b sits at position p = lengths[b] + i of the present (its valid past, then the new keys) and reads key
    j where j <= p (causal) and, with local_window_size W, j > p - W (the last W keys up to its own, as
    ONNX Runtime's CPU kernel): comparisons (LOGICAL_LESS_THAN_OR_EQUAL, LOGICAL_GREATER_THAN) of the
    constant j - i with lengths[b] and lengths[b] - W broadcast by zero strides, LOGICAL_AND, CAST."""
    shape = (b, s, t)
    rel = jnp.broadcast_to(jnp.asarray((np.arange(t)[None, :] - np.arange(s)[:, None]).astype(np.int32)), shape)
    at = lambda n: jnp.broadcast_to(n.reshape(b, 1, 1), shape)  # noqa: E731
    allowed = _dml("element_wise_logical_less_than_or_equal")(rel, at(lengths))
    if window >= 0:
        start = _dml("element_wise_add")(lengths, jnp.full((b,), -window, jnp.int32))
        allowed = _dml("element_wise_logical_and")(allowed, _dml("element_wise_logical_greater_than")(rel, at(start)))
    return _dml("cast")(allowed, output_data_type="INT32")


def _gqa_softcapped(c: Call, q, present_k, present_v, allowed, heads: int, kv_heads: int, head_size: int,
                    cap: float):
    """softcap: MULTIHEAD_ATTENTION1 has no step between its product and its softmax, so the attention is
    composed on its present key and value (ONNX Runtime's CPU kernel's order): Scale Q K^T by GEMM (the
    key/value heads broadcast to the query heads by zero strides), softcap * tanh(scores / softcap) by
    IDENTITY, TANH and IDENTITY, the keys a query may not read set to -inf by IF, SOFTMAX1 over the keys,
    GEMM with V."""
    b, s = q.shape[0], q.shape[1]
    t = present_k.shape[2]
    qh = jnp.transpose(q.reshape(b, s, heads, head_size), (0, 2, 1, 3))
    reps = heads // kv_heads
    kh, vh = (jnp.broadcast_to(x[:, :, None], (b, kv_heads, reps) + x.shape[2:]).reshape((b, heads) + x.shape[2:])
              for x in (present_k, present_v))
    scale = c.attr("scale")
    scale = float(np.float32(1.0 / np.sqrt(head_size))) if not scale else float(scale)
    scores = _dml("gemm")(qh, kh, None, trans_a="NONE", trans_b="TRANSPOSE", alpha=scale, beta=0.0)
    scores = _dml("element_wise_identity")(_dml("activation_tanh")(
        _dml("element_wise_identity")(scores, scale_bias=(1.0 / cap, 0.0))), scale_bias=(cap, 0.0))
    shape = scores.shape
    keep = jnp.broadcast_to(_dml("cast")(allowed, output_data_type="UINT8").reshape(b, 1, s, t), shape)
    scores = _dml("element_wise_if")(keep, scores, jnp.broadcast_to(jnp.full((1,), -np.inf, scores.dtype), shape))
    probs = _dml("activation_softmax1")(scores, axes=(3,))
    y = _dml("gemm")(probs, vh, None, trans_a="NONE", trans_b="NONE", alpha=1.0, beta=0.0)
    return jnp.transpose(y, (0, 2, 1, 3)).reshape(b, s, heads * y.shape[3])


def _slice_axis2(x, n: int):
    return _dml("slice1")(x, input_window_offsets=(0,) * x.ndim, input_window_sizes=x.shape[:2] + (n,) + x.shape[3:],
                          input_window_strides=(1,) * x.ndim)


def _com_group_query_attention_check(attrs: dict, opset: int, inputs: tuple, outputs: tuple) -> str | None:
    reasons = []
    window = int(attrs.get("local_window_size", -1))
    if window == 0 or window < -1:
        reasons.append(f"local_window_size {window}: -1 (no window) or a positive number of keys")
    if float(attrs.get("softcap", 0.0) or 0.0) < 0.0:
        reasons.append(f"softcap {attrs.get('softcap')}: 0 (none) or positive")
    if attrs.get("smooth_softmax", 0) or _used(inputs, 11):
        reasons.append("smooth_softmax and head_sink (an extra softmax term) are not mapped")
    if attrs.get("qk_output", 0) or _used(outputs, 3):
        reasons.append("the qk output is not mapped: MULTIHEAD_ATTENTION1 returns no scores")
    if attrs.get("do_rotary", 0) and not (_used(inputs, 7) and _used(inputs, 8)):
        reasons.append("do_rotary=1 without cos_cache and sin_cache")
    if any(_used(inputs, i) for i in (9, 10)) or any(_used(inputs, i) for i in range(12, 16)):
        reasons.append("position_ids, attention_bias and q/k norm weights are not mapped (as ONNX Runtime's "
                       "DirectML provider)")
    return "; ".join(reasons) or None


def _nibbles(packed: np.ndarray, rows: int, count: int) -> np.ndarray:
    """Bytes {rows, ...} holding 4-bit codes two a byte, the first in the low nibble, as UINT4
    codes {rows, count} (each row's last high nibble, where count is odd, dropped)."""
    b = np.asarray(packed, np.uint8).reshape(rows, -1)
    return np.stack([b & 15, b >> 4], axis=-1).reshape(rows, -1)[:, :count].astype(jnp.uint4)


def _matmul_nbits(c: Call):
    """com.microsoft MatMulNBits (4 bits) as ONNX Runtime's DirectML provider runs it: B {N, K} as
    UINT4 codes, DEQUANTIZE with the scales {N, K / block_size} and the zero points (8 without
    them), GEMM with TransB and the bias as C (zero strides); A's leading dimensions folded into
    GEMM's rows. ``dmljax.dequantize_gemm``: the fused kernel on NVIDIA GPUs."""
    k, n, block = int(c.attr("K")), int(c.attr("N")), int(c.attr("block_size"))
    a = _arr(c.inputs[0])
    blocks = k // block
    w = _nibbles(c.static(1), n, k)
    scale = _arr(c.inputs[2]).reshape(n, blocks)
    zp = c.input(3)
    if zp is None:
        zero_point = jnp.asarray(np.full((1, 1), 8, jnp.uint4))
    elif np.asarray(zp).dtype != np.uint8:
        raise ValidationError("dequantize", "DML_OPERATOR_DEQUANTIZE", None, [Violation(
            "MatMulNBits (com.microsoft) zero_points", "", f"has type {np.asarray(zp).dtype}",
            "packed UINT8 zero points: DEQUANTIZE's zero point has the weights' DataType (UINT4)")])
    else:
        zero_point = jnp.asarray(_nibbles(c.static(3), n, blocks))
    rows = a.reshape(-1, k)
    bias = c.input(5)
    cc = None if bias is None else jnp.broadcast_to(_arr(bias).reshape(1, n), (rows.shape[0], n))
    y = dequantize_gemm(rows, w, [scale, zero_point], cc, quantization_type="SCALE_ZERO_POINT", trans_b="TRANSPOSE")
    return [y.reshape(a.shape[:-1] + (n,))]


def _matmul_nbits_check(attrs: dict, opset: int, inputs: tuple, outputs: tuple) -> str | None:
    reasons = []
    if attrs.get("bits", 4) != 4:
        reasons.append(f"bits={attrs.get('bits')} is not mapped (4 bits: DEQUANTIZE's UINT4)")
    k, block = attrs.get("K"), attrs.get("block_size")
    if k is None or attrs.get("N") is None or not block:
        reasons.append("K, N and block_size are required")
    elif k % block:
        reasons.append(f"K={k} is not a multiple of block_size={block}: DEQUANTIZE's blocks are whole")
    if _used(inputs, 4):
        reasons.append("g_idx (an act-order permutation of K) is not mapped")
    return "; ".join(reasons) or None


_ATTENTION_DML = ("DML_OPERATOR_MULTIHEAD_ATTENTION", "DML_OPERATOR_CAST", "DML_OPERATOR_SLICE1",
                  "DML_OPERATOR_ELEMENT_WISE_ADD")


_MS = "com.microsoft"
_THROUGH_FLOAT = ("ONNX Runtime's DirectML provider does not run it: dequantized, computed in FLOAT32 and "
                  "quantized again")

CONTRIB: tuple[Rule, ...] = (
    Rule("QLinearAdd", 1, None, ("DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD",), _qlinear_add,
         restrictions="per-tensor scales and zero points; broadcasts as zero strides", domain=_MS),
    Rule("QLinearMul", 1, None, ("DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR", "DML_OPERATOR_ELEMENT_WISE_MULTIPLY",
                                 "DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR"),
         _qlinear_through_float(_q_mul, (0, 3), 6), restrictions=_THROUGH_FLOAT, domain=_MS),
    Rule("QLinearSigmoid", 1, None, ("DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR", "DML_OPERATOR_ACTIVATION_SIGMOID",
                                     "DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR"),
         _qlinear_through_float(_q_sigmoid, (0,), 3), restrictions="dequantized, SIGMOID, quantized (as ONNX "
         "Runtime's DirectML provider does)", domain=_MS),
    Rule("QLinearLeakyRelu", 1, None, ("DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR",
                                       "DML_OPERATOR_ACTIVATION_LEAKY_RELU", "DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR"),
         _qlinear_through_float(_q_leaky_relu, (0,), 3), restrictions=_THROUGH_FLOAT, domain=_MS),
    Rule("QLinearSoftmax", 1, None, ("DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR", "DML_OPERATOR_ACTIVATION_SOFTMAX1",
                                     "DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR"),
         _qlinear_through_float(_q_softmax, (0,), 3), restrictions=_THROUGH_FLOAT, domain=_MS),
    Rule("QLinearConcat", 1, None, ("DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR", "DML_OPERATOR_JOIN",
                                    "DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR"), _qlinear_concat,
         restrictions="dequantized, JOIN, quantized (as ONNX Runtime's DirectML provider does)", domain=_MS),
    Rule("QLinearGlobalAveragePool", 1, None, ("DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING",), _qlinear_pool(True),
         restrictions="a window of the whole spatial extent; channels_last=1 as a permuted tensor desc", domain=_MS),
    Rule("QLinearAveragePool", 1, None, ("DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING",), _qlinear_pool(False),
         restrictions="ceil_mode adds end padding; channels_last=1 as a permuted tensor desc", domain=_MS),
    Rule("QGemm", 1, None, ("DML_OPERATOR_MATRIX_MULTIPLY_INTEGER", "DML_OPERATOR_ELEMENT_WISE_ADD",
                            "DML_OPERATOR_CAST", "DML_OPERATOR_ELEMENT_WISE_MULTIPLY",
                            "DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR"), _qgemm,
         restrictions="ONNX Runtime's DirectML provider does not run it: the INT32 product plus the bias, scaled in "
                      "FLOAT32 and quantized (FLOAT32 out without y_scale)", domain=_MS),
    Rule("MatMulIntegerToFloat", 1, None, ("DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT", "DML_OPERATOR_CAST"),
         _matmul_integer_to_float,
         restrictions="per-tensor A scale; per-tensor or per-column B scale; UINT8 by INT8 as INT16 operands "
                      "(CAST), DirectML taking one type", domain=_MS),
    Rule("DynamicQuantizeMatMul", 1, None, ("DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR", "DML_OPERATOR_CAST",
                                            "DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT"), _dynamic_quantize_matmul,
         restrictions="A quantized to UINT8 per tensor; with an INT8 B both as INT16 (CAST)", domain=_MS),
    Rule("DynamicQuantizeLSTM", 1, None, ("DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR",
                                          "DML_OPERATOR_MATRIX_MULTIPLY_INTEGER",
                                          "DML_OPERATOR_CAST", "DML_OPERATOR_ELEMENT_WISE_MULTIPLY",
                                          "DML_OPERATOR_ELEMENT_WISE_ADD", "DML_OPERATOR_REVERSE_SUBSEQUENCES",
                                          "DML_OPERATOR_JOIN", "DML_OPERATOR_ACTIVATION_SIGMOID",
                                          "DML_OPERATOR_ACTIVATION_TANH", "DML_OPERATOR_ELEMENT_WISE_CLIP",
                                          "DML_OPERATOR_ELEMENT_WISE_IDENTITY", "DML_OPERATOR_ELEMENT_WISE_IF",
                                          "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN",
                                          "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL",
                                          "DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN", "DML_OPERATOR_REDUCE"),
         _dynamic_quantize_lstm, static=(9, 11), check=_dq_lstm_check, check_io=_dq_lstm_check_io,
         check_shapes=_dq_lstm_shapes, restrictions=_DQ_LSTM_RESTRICTIONS, domain=_MS),
    Rule("SkipLayerNormalization", 1, None, ("DML_OPERATOR_ELEMENT_WISE_ADD",
                                             "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1"), _skip_layer_norm,
         restrictions="normalized over the last axis; the optional mean and inverse standard deviation as "
                      "LayerNormalization's, the sum output as the ADD's", domain=_MS),
    Rule("Gelu", 1, None, ("DML_OPERATOR_ACTIVATION_GELU",), _unary("activation_gelu"), domain=_MS),
    Rule("BiasGelu", 1, None, ("DML_OPERATOR_ELEMENT_WISE_ADD", "DML_OPERATOR_ACTIVATION_GELU"), _bias_gelu,
         restrictions="the bias broadcasts as zero strides", domain=_MS),
    Rule("QuickGelu", 1, None, ("DML_OPERATOR_ELEMENT_WISE_IDENTITY", "DML_OPERATOR_ACTIVATION_SIGMOID",
                                "DML_OPERATOR_ELEMENT_WISE_MULTIPLY"), _quick_gelu,
         restrictions="x * sigmoid(alpha * x): alpha as the IDENTITY's ScaleBias", domain=_MS),
    Rule("MatMulNBits", 1, None, ("DML_OPERATOR_DEQUANTIZE", "DML_OPERATOR_GEMM"), _matmul_nbits, static=(1, 3),
         check_io=_matmul_nbits_check,
         restrictions="4 bits, K a multiple of block_size; B and zero_points initializers, B as UINT4 {N, K}, the "
                      "zero points unpacked (8 without them); DEQUANTIZE then GEMM (TransB, the bias as C), which "
                      "take dmljax's fused kernel on NVIDIA GPUs (dmljax.dequantize_gemm); refused: g_idx, FLOAT "
                      "zero points", domain=_MS),
    Rule("FusedMatMul", 1, None, ("DML_OPERATOR_GEMM",), _fused_matmul, check=_fused_matmul_check,
         restrictions="alpha as GEMM's Alpha, transA/transB as permuted tensor descs; transBatchA/B not mapped",
         domain=_MS),
    Rule("MultiHeadAttention", 1, None, ("DML_OPERATOR_MULTIHEAD_ATTENTION", "DML_OPERATOR_CAST",
                                         "DML_OPERATOR_ELEMENT_WISE_ADD"), _com_multihead_attention,
         check_io=_com_multihead_attention_check, check_shapes=_com_multihead_attention_shapes,
         restrictions="as ONNX Runtime's DirectML provider: packed QKV {batch, sequence, heads, 3, head} as "
                      "StackedQueryKeyValueTensor, packed KV as StackedKeyValueTensor, a 4-D key and value as the "
                      "past; key_padding_mask {batch} as KEY_SEQUENCE_LENGTH, {2 * batch} as KEY_SEQUENCE_END_START, "
                      "{batch, total} and {batch, sequence, total} as BOOLEAN (zero strides); attention_bias as "
                      "RelativePositionBias; unidirectional=1 as a constant bias (the float's lowest value), added "
                      "to it; refused: a {3 * batch + 2} mask, past_sequence_length, cache_indirection, the qk output",
         domain=_MS),
    Rule("Attention", 1, None, ("DML_OPERATOR_GEMM",) + _ATTENTION_DML + ("DML_OPERATOR_JOIN",), _com_attention,
         check_io=_com_attention_check, check_shapes=_com_attention_shapes,
         restrictions="the projection by GEMM (weights and bias broadcast over the batch), query, key and value "
                      "as SLICE1 windows of it, then MULTIHEAD_ATTENTION; mask_index as MultiHeadAttention's "
                      "key_padding_mask (and {batch, 1, max, max}: its top-left corner, without past); past "
                      "{2, batch, heads, past, head} as PastKeyTensor and PastValueTensor, the present JOINed; "
                      "unidirectional=1 as a constant bias; refused: do_rotary, past_present_share_buffer, "
                      "past_sequence_length, qkv_hidden_sizes with unequal query and key sizes", domain=_MS),
    Rule("GroupQueryAttention", 1, None, ("DML_OPERATOR_MULTIHEAD_ATTENTION1",) + _ATTENTION_DML[1:] + (
        "DML_OPERATOR_GATHER", "DML_OPERATOR_ELEMENT_WISE_MULTIPLY", "DML_OPERATOR_ELEMENT_WISE_SUBTRACT",
        "DML_OPERATOR_JOIN", "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL",
        "DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN", "DML_OPERATOR_ELEMENT_WISE_LOGICAL_AND", "DML_OPERATOR_GEMM",
        "DML_OPERATOR_ELEMENT_WISE_IDENTITY", "DML_OPERATOR_ACTIVATION_TANH", "DML_OPERATOR_ELEMENT_WISE_IF",
        "DML_OPERATOR_ACTIVATION_SOFTMAX1"),
         _com_group_query_attention, static=(6,), check_io=_com_group_query_attention_check,
         restrictions="QueryHeadCount num_heads, KeyValueHeadCount kv_num_heads; PastSequenceLengthsTensor "
                      "seqlens_k + 1 - sequence (0 on the first prompt: sequence == total_sequence_length, which "
                      "must be static); the present sliced (SLICE1) to max(past, total_sequence_length); a packed query "
                      "split by SLICE1; FLOAT16 CAST to FLOAT32 and back (the provider's graph); "
                      "MaskFilterValue -10000; do_rotary as RotaryEmbedding's operators (GATHER of the caches at each "
                      "batch's positions, SLICE1, MULTIPLY, SUBTRACT, ADD, JOIN) on query and key; local_window_size W as "
                      "a BOOLEAN MaskTensor (each query reads the last W keys up to its position: comparisons of "
                      "a constant with seqlens_k, LOGICAL_AND, CAST); softcap composed on MULTIHEAD_ATTENTION1's "
                      "present (GEMM, IDENTITY, TANH, IF, SOFTMAX1, GEMM); refused: smooth_softmax, "
                      "head_sink, position_ids, attention_bias, the qk output", domain=_MS),
)
"""ONNX Runtime's contrib operators (domain com.microsoft) that its quantizer and graph optimizers
write into models."""


# ----------------------------------------------------------------------------------------------
# operators that ONNX Runtime's DirectML provider does not map but DirectML can express

def _cast_like(c: Call):
    to = {np.dtype(v): k for k, v in {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
                                      7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
                                      13: np.uint64}.items()}.get(np.dtype(jnp.asarray(c.inputs[1]).dtype))
    if to is None:
        raise ValidationError("cast", "DML_OPERATOR_CAST", None, [Violation(
            "OutputTensor", "target_type", f"has type {jnp.asarray(c.inputs[1]).dtype}", "a DirectML data type")])
    return _cast(dataclasses.replace(c, inputs=c.inputs[:1], attrs={**c.attrs, "to": to}))


def _eye_like(c: Call):
    x = _arr(c.inputs[0])
    dtype = _onnx_dtype(c.attr("dtype")) if c.attr("dtype") is not None else x.dtype
    k = int(c.attr("k", 0))
    return [_dml("diagonal_matrix1")(output_data_type=_data_type(_runtime_dtype(dtype)), value=1,
                                     diagonal_fill_begin=k, diagonal_fill_end=k + 1, output_sizes=tuple(x.shape))]


def _reverse_sequence(c: Call):
    x, lens = _arr(c.inputs[0]), _arr(c.inputs[1])
    lens = _dml("cast")(lens, output_data_type="UINT32" if lens.dtype.itemsize <= 4 else "UINT64")
    time_axis, batch_axis = int(c.attr("time_axis", 0)), int(c.attr("batch_axis", 1))
    shape = [1] * x.ndim
    shape[batch_axis] = x.shape[batch_axis]
    lens = jnp.broadcast_to(lens.reshape(shape), tuple(x.shape[i] if i != time_axis else 1 for i in range(x.ndim)))
    return [_dml("reverse_subsequences")(x, lens, axis=time_axis)]


def _cumprod(c: Call):
    x = _arr(c.inputs[0])
    axis = _axis(int(c.static(1).reshape(-1)[0]), x.ndim)
    direction = AxisDirection.DECREASING if c.attr("reverse", 0) else AxisDirection.INCREASING
    return [_dml("cumulative_product")(x, axis=axis, axis_direction=direction,
                                       has_exclusive_product=bool(c.attr("exclusive", 0)))]


@_scalars
def _swish(c: Call):
    return [_dml("activation_swish")(_arr(c.inputs[0]), sigmoid_input_scale=float(c.attr("alpha", 1.0)))]


@_scalars
def _mish(c: Call):
    x = _arr(c.inputs[0])
    t = _dml("activation_tanh")(_dml("activation_softplus")(x, steepness=1.0))
    return [_dml("element_wise_multiply")(x, t)]


def _group_norm(c: Call):
    x = _arr(c.inputs[0])
    n, ch, groups = x.shape[0], x.shape[1], int(c.attr("num_groups"))
    grouped = x.reshape(n, groups, -1)
    y = _dml("mean_variance_normalization1")(grouped, axes=(2,), epsilon=float(c.attr("epsilon", 1e-5)))
    y = y.reshape(x.shape)
    scale, bias = (_arr(c.inputs[i]) for i in (1, 2))
    if c.opset < 21:  # one scale and bias a group
        scale, bias = (jnp.repeat(v, ch // groups) for v in (scale, bias))
    scale, bias = (jnp.broadcast_to(_channel(v, x.ndim), x.shape) for v in (scale, bias))
    return [_dml("element_wise_add")(_dml("element_wise_multiply")(y, scale), bias)]


def _rms_norm(c: Call):
    x = _arr(c.inputs[0])
    axis = _axis(c.attr("axis", -1), x.ndim)
    scale = jnp.broadcast_to(_arr(c.inputs[1]), (1,) * axis + x.shape[axis:]).astype(x.dtype)
    return [_dml("mean_variance_normalization2")(x, scale, axes=tuple(range(axis, x.ndim)), use_mean=False,
                                                 use_variance=True, epsilon=float(c.attr("epsilon", 1e-5)))]


def _trilu(c: Call):
    x = _arr(c.inputs[0])
    k = 0 if c.input(1) is None else int(c.static(1).reshape(-1)[0])
    rows, cols = x.shape[-2:]
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    keep = (j - i >= k) if c.attr("upper", 1) else (j - i <= k)
    mask = jnp.broadcast_to(jnp.asarray(keep.astype(np.uint8)), x.shape)
    return [_dml("element_wise_if")(mask, x, jnp.zeros_like(x))]


def _max_unpool(c: Call):
    """The indices address the pooled input's shape (from the kernel, strides and pads); a larger
    output_shape pads the end with zeros (PADDING1), as ONNX's reference does."""
    x, idx = _arr(c.inputs[0]), _arr(c.inputs[1])
    kernel = [int(k) for k in c.attr("kernel_shape")]
    strides = [int(v) for v in c.attr("strides", [1] * len(kernel))]
    pads = [int(v) for v in c.attr("pads", [0] * 2 * len(kernel))]
    n = len(kernel)
    out = x.shape[:2] + tuple((x.shape[2 + i] - 1) * strides[i] - pads[i] - pads[n + i] + kernel[i] for i in range(n))
    idx = _dml("cast")(idx, output_data_type="UINT32" if idx.dtype.itemsize <= 4 else "UINT64")
    y = _dml("max_unpooling")(x, idx, output_sizes=out)
    if c.input(2) is not None:
        want = tuple(int(v) for v in c.static(2).reshape(-1))
        if want != out:
            y = _dml("padding1")(y, padding_mode="CONSTANT", padding_value=0, start_padding=(0,) * y.ndim,
                                 end_padding=tuple(w - o for w, o in zip(want, out)))
    return [y]


def _window(kind: str) -> Callable[[Call], Sequence]:
    """A window function of a static size: a constant (as Range), 0.5 - 0.5 cos for Hann,
    25/46 - 21/46 cos for Hamming, 0.42 - 0.5 cos + 0.08 cos(2x) for Blackman."""
    def lower(c: Call):
        size = int(c.static(0).reshape(-1)[0])
        denom = size if c.attr("periodic", 1) else size - 1
        t = 2 * np.pi * np.arange(size) / denom
        w = {"hann": 0.5 - 0.5 * np.cos(t), "hamming": 25 / 46 - 21 / 46 * np.cos(t),
             "blackman": 0.42 - 0.5 * np.cos(t) + 0.08 * np.cos(2 * t)}[kind]
        return [w.astype(_runtime_dtype(_onnx_dtype(c.attr("output_datatype", 1))))]
    return lower


def _col2im(c: Call):
    x = _arr(c.inputs[0])
    image, block = (tuple(int(v) for v in c.static(i).reshape(-1)) for i in (1, 2))
    n = len(image)
    strides = tuple(int(v) for v in c.attr("strides", [1] * n))
    dilations = tuple(int(v) for v in c.attr("dilations", [1] * n))
    pads = [int(v) for v in c.attr("pads", [0] * 2 * n)]
    channels = x.shape[1] // int(np.prod(block))
    return [_dml("fold")(x, window_sizes=block, strides=strides, dilations=dilations, start_padding=tuple(pads[:n]),
                         end_padding=tuple(pads[n:]), output_sizes=(x.shape[0], channels, *image))]


def _center_crop_pad(c: Call):
    x = _arr(c.inputs[0])
    shape = [int(v) for v in c.static(1).reshape(-1)]
    axes = [_axis(a, x.ndim) for a in c.attr("axes", list(range(x.ndim)))]
    offsets, sizes = [0] * x.ndim, list(x.shape)
    start, end = [0] * x.ndim, [0] * x.ndim
    for a, target in zip(axes, shape):
        if x.shape[a] > target:
            offsets[a], sizes[a] = (x.shape[a] - target) // 2, target
        else:
            start[a] = (target - x.shape[a]) // 2
            end[a] = target - x.shape[a] - start[a]
    if sizes != list(x.shape):
        x = _dml("slice1")(x, input_window_offsets=tuple(offsets), input_window_sizes=tuple(sizes),
                           input_window_strides=(1,) * x.ndim)
    if any(start) or any(end):
        x = _dml("padding1")(x, padding_mode="CONSTANT", padding_value=0, start_padding=tuple(start),
                             end_padding=tuple(end))
    return [x]


def _roi_align(c: Call):
    x, rois, batch = _arr(c.inputs[0]), _arr(c.inputs[1]), _arr(c.inputs[2])
    mode = c.attr("mode", b"avg")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    ctm = c.attr("coordinate_transformation_mode", b"half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    ratio = int(c.attr("sampling_ratio", 0))
    scale = float(c.attr("spatial_scale", 1.0))
    oh, ow = int(c.attr("output_height", 1)), int(c.attr("output_width", 1))
    batch = _dml("cast")(batch, output_data_type="UINT32" if batch.dtype.itemsize <= 4 else "UINT64")
    return [_dml("roi_align1")(x, rois, batch, reduction_function="MAX" if mode == "max" else "AVERAGE",
                               interpolation_mode="LINEAR", spatial_scale_x=scale, spatial_scale_y=scale,
                               input_pixel_offset=0.5 if ctm == "half_pixel" else 0.0, output_pixel_offset=-0.5,
                               minimum_samples_per_output=ratio if ratio else 1,
                               maximum_samples_per_output=ratio if ratio else 0xFFFFFFFF,
                               output_sizes=(rois.shape[0], x.shape[1], oh, ow))]


def _nll(log_prob, target, weight, ignore_index, reduction: str):
    """NegativeLogLikelihoodLoss: GATHER_ELEMENTS of -log_prob at the target class; the class
    weights by GATHER_ELEMENTS of their broadcast (zero strides); an ignored target (IF) reads class 0
    with weight 0; 'sum' and 'mean' by REDUCE SUM (mean: over the weights' sum)."""
    x, t = _arr(log_prob), _arr(target)
    t1 = t.reshape(t.shape[0], 1, *t.shape[1:])
    keep = None
    if ignore_index is not None:
        ignored = _dml("element_wise_logical_equals")(t1, jnp.full(t1.shape, int(ignore_index), t1.dtype))
        t1 = _dml("element_wise_if")(ignored, jnp.zeros(t1.shape, t1.dtype), t1)
        keep = _dml("element_wise_if")(ignored, jnp.zeros(t1.shape, x.dtype), jnp.ones(t1.shape, x.dtype))
    picked = _dml("element_wise_negate")(_dml("gather_elements")(x, t1, axis=1))
    w = None
    if weight is not None:
        wb = jnp.broadcast_to(_arr(weight).reshape(1, -1, *([1] * (x.ndim - 2))), x.shape)
        w = _dml("gather_elements")(wb, t1, axis=1)
    if keep is not None:
        w = keep if w is None else _dml("element_wise_multiply")(w, keep)
    loss = picked if w is None else _dml("element_wise_multiply")(picked, w)
    if reduction == "none":
        return loss.reshape(t.shape)
    axes = tuple(range(x.ndim))
    total = _dml("reduce")(loss, function="SUM", axes=axes).reshape(())
    if reduction == "sum":
        return total
    if w is None:
        return _dml("element_wise_identity")(total.reshape(1), scale_bias=(1.0 / t.size, 0.0)).reshape(())
    return _dml("element_wise_divide")(total.reshape(1), _dml("reduce")(w, function="SUM", axes=axes).reshape(1)).reshape(())


def _text(v, default: str) -> str:
    v = default if v is None else v
    return v.decode() if isinstance(v, bytes) else v


def _nll_loss(c: Call):
    return [_nll(c.inputs[0], c.inputs[1], c.input(2), c.attr("ignore_index"), _text(c.attr("reduction"), "mean"))]


def _softmax_cross_entropy(c: Call):
    x = _arr(c.inputs[0])
    log_prob = _dml("activation_log_softmax1")(x, axes=(1,))
    loss = _nll(log_prob, c.inputs[1], c.input(2), c.attr("ignore_index"), _text(c.attr("reduction"), "mean"))
    return [loss, log_prob][:max(c.output_count, 1)]


def _swiglu(c: Call):
    a, b = _arr(c.inputs[0]), _arr(c.inputs[1])
    swish = _dml("activation_swish")(a, sigmoid_input_scale=float(c.attr("alpha", 1.0)))
    return [_dml("element_wise_multiply")(swish, b)]


def _slice_last(x, start: int, stop: int, step: int = 1):
    """x[..., start:stop:step] by SLICE1 (its window spans stop - start input elements)."""
    return _dml("slice1")(x, input_window_offsets=(0,) * (x.ndim - 1) + (start,),
                          input_window_sizes=x.shape[:-1] + (stop - start,), input_window_strides=(1,) * (x.ndim - 1) + (step,))


def _rotary_embedding(c: Call):
    """RotaryEmbedding: the caches gathered at position_ids (GATHER), the rotated half (or the
    interleaved pairs) by SLICE1, MULTIPLY, SUBTRACT, ADD and JOIN; reshapes and transposes are descs."""
    x, cos, sin = _arr(c.inputs[0]), _arr(c.inputs[1]), _arr(c.inputs[2])
    shape = x.shape
    if x.ndim == 4:
        x = jnp.transpose(x, (0, 2, 1, 3))
    else:
        heads = int(c.attr("num_heads", 0))
        x = x.reshape(shape[0], shape[1], heads, shape[2] // heads)
    head = x.shape[3]
    dim = int(c.attr("rotary_embedding_dim", 0)) or head
    pos = c.input(3)
    if pos is not None:
        cos, sin = (_gather(Call("Gather", c.opset, [t, pos], {"axis": 0}, 1))[0] for t in (cos, sin))
    b, seq = x.shape[0], x.shape[1]
    cos, sin = (jnp.broadcast_to(t.reshape(-1 if t.ndim == 3 else 1, seq, 1, dim // 2), (b, seq, x.shape[2], dim // 2))
                for t in (cos, sin))
    rot = _slice_last(x, 0, dim) if dim < head else x
    if c.attr("interleaved", 0):
        x1, x2 = _slice_last(rot, 0, dim, 2), _slice_last(rot, 1, dim, 2)
    else:
        x1, x2 = _slice_last(rot, 0, dim // 2), _slice_last(rot, dim // 2, dim)
    mul, add, sub = _dml("element_wise_multiply"), _dml("element_wise_add"), _dml("element_wise_subtract")
    real = sub(mul(cos, x1), mul(sin, x2))
    imag = add(mul(sin, x1), mul(cos, x2))
    if c.attr("interleaved", 0):
        rot = _dml("join")([real[..., None], imag[..., None]], axis=4).reshape(rot.shape)
    else:
        rot = _dml("join")([real, imag], axis=3)
    out = _dml("join")([rot, _slice_last(x, dim, head)], axis=3) if dim < head else rot
    return [out.reshape(shape) if len(shape) == 3 else jnp.transpose(out, (0, 2, 1, 3))]


def _affine_grid(c: Call):
    """AffineGrid: the normalized grid of the static size is a constant (x, y[, z], 1) a point; one
    GEMM a batch against theta transposed (a desc)."""
    theta = _arr(c.inputs[0])
    size = [int(v) for v in c.static(1).reshape(-1)]
    spatial = size[2:]
    axes = []
    for n in spatial:
        if c.attr("align_corners", 0):
            axes.append(np.arange(-1, 1 + 0.0001, 2.0 / (n - 1)) if n > 1 else np.array([-1.0]))
        else:
            axes.append(np.arange(-1 + 1.0 / n, 1, 2.0 / n))
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack([m.reshape(-1) for m in reversed(mesh)] + [np.ones(mesh[0].size)], axis=1)
    base = jnp.broadcast_to(jnp.asarray(base.astype(theta.dtype)), (theta.shape[0],) + base.shape)
    grid = _matmul(Call("MatMul", c.opset, [base, jnp.swapaxes(theta, 1, 2)], {}, 1))[0]
    return [grid.reshape(theta.shape[0], *spatial, len(spatial))]


def _einsum_labels(equation: str, ranks: list[int]):
    """The inputs' labels and the output's, with '...' spelled as capital letters."""
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    ell = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t), default=0)
    fill = lambda t, r: t.replace("...", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[ell - (r - len(t) + 3):ell]) if "..." in t else t  # noqa: E731
    terms = [fill(t, r) for t, r in zip(terms, ranks)]
    if "->" not in eq:
        counts = {ch: "".join(terms).count(ch) for ch in "".join(terms)}
        rhs = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:ell] + "".join(sorted(ch for ch, n in counts.items() if n == 1 and ch.islower()))
    else:
        rhs = rhs.replace("...", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:ell])
    return terms, rhs


def _einsum_reduce(x, labels: str, keep: str):
    """Repeated labels as diagonals (a strided desc), labels not in ``keep`` summed (REDUCE SUM)."""
    while any(labels.count(ch) > 1 for ch in labels):
        ch = next(ch for ch in labels if labels.count(ch) > 1)
        i, j = labels.index(ch), labels.index(ch, labels.index(ch) + 1)
        x = jnp.moveaxis(jnp.diagonal(x, axis1=i, axis2=j), -1, i)
        labels = labels[:j] + labels[j + 1:]
    gone = [i for i, ch in enumerate(labels) if ch not in keep]
    if gone:
        x = _dml("reduce")(x, function="SUM", axes=tuple(gone)).reshape(
            tuple(n for i, n in enumerate(x.shape) if i not in gone))
        labels = "".join(ch for ch in labels if ch in keep)
    return x, labels


def _einsum(c: Call):
    """Einsum of one or two operands: diagonals and summed labels first, then one GEMM over the
    shared labels (batch labels as GEMM's batch), transposes and reshapes being descs."""
    xs = [_arr(x) for x in c.inputs]
    terms, out = _einsum_labels(_text(c.attr("equation"), ""), [x.ndim for x in xs])
    if len(xs) == 1:
        x, labels = _einsum_reduce(xs[0], terms[0], out)
        if x.ndim == 0:
            return [_dml("element_wise_identity")(x.reshape(1)).reshape(())]
        return [_dml("element_wise_identity")(jnp.transpose(x, [labels.index(ch) for ch in out]))]
    (a, la), (b, lb) = (_einsum_reduce(x, t, out + other) for x, t, other in ((xs[0], terms[0], terms[1]),
                                                                                (xs[1], terms[1], terms[0])))
    batch = [ch for ch in la if ch in lb and ch in out]
    inner = [ch for ch in la if ch in lb and ch not in out]
    left = [ch for ch in la if ch not in lb]
    right = [ch for ch in lb if ch not in la]
    size = dict(zip(la, a.shape)) | dict(zip(lb, b.shape))
    prod = lambda chs: int(np.prod([size[ch] for ch in chs], dtype=np.int64))  # noqa: E731
    a3 = jnp.transpose(a, [la.index(ch) for ch in batch + left + inner]).reshape(prod(batch), prod(left), prod(inner))
    b3 = jnp.transpose(b, [lb.index(ch) for ch in batch + inner + right]).reshape(prod(batch), prod(inner), prod(right))
    y = _matmul(Call("MatMul", c.opset, [a3, b3], {}, 1))[0]
    labels = batch + left + right
    y = y.reshape(tuple(size[ch] for ch in labels))
    return [jnp.transpose(y, [labels.index(ch) for ch in out]) if labels else y.reshape(())]


def _tensor_scatter(c: Call):
    """TensorScatter: the update's positions along ``axis`` are write_indices[batch] + 0, 1, ...
    (ADD of a constant ramp; circular: MODULUS_FLOOR by the cache length), then SCATTER_ELEMENTS."""
    cache, update = _arr(c.inputs[0]), _arr(c.inputs[1])
    axis = _axis(c.attr("axis", -2), cache.ndim)
    ramp = np.arange(update.shape[axis], dtype=np.int32).reshape([-1 if i == axis else 1 for i in range(update.ndim)])
    idx = jnp.broadcast_to(jnp.asarray(ramp), update.shape)
    w = c.input(2)
    if w is not None:
        w = _dml("cast")(_arr(w), output_data_type="INT32")
        idx = _dml("element_wise_add")(idx, jnp.broadcast_to(w.reshape((-1,) + (1,) * (update.ndim - 1)), update.shape))
    if _text(c.attr("mode"), "linear") == "circular":
        idx = _dml("element_wise_modulus_floor")(idx, jnp.full(update.shape, cache.shape[axis], jnp.int32))
    return [_dml("scatter_elements")(cache, idx, update, axis=axis)]


def _heads(t, heads: int):
    """(batch, sequence, heads * size) as (batch, heads, sequence, size): a reshape and a transpose."""
    return jnp.transpose(t.reshape(t.shape[0], t.shape[1], heads, t.shape[2] // heads), (0, 2, 1, 3))


def _attn_mask_problem(shape: tuple, scores: tuple) -> tuple[str, str] | None:
    """Why an attn_mask of ``shape`` cannot be broadcast (zero strides) to the scores {batch, query heads,
    query sequence, total sequence} after its last axis is padded to the total (found, allowed), or None."""
    padded = tuple(shape[:-1]) + (scores[3],) if shape and shape[-1] <= scores[3] else tuple(shape)
    if 1 <= len(shape) <= 4 and all(d in (1, w) for d, w in zip(padded[::-1], scores[::-1])):
        return None
    return (f"has shape {list(shape)}", f"a shape that broadcasts to {list(scores)} (batch, query heads, query "
            "sequence, total sequence), its last axis at most the total (padded as masked)")


def _attention_shapes(attrs: dict, opset: int, inputs: tuple, shapes: tuple) -> str | None:
    if not _used(inputs, 3) or not all(_known(inputs, shapes, i) for i in (0, 1, 3, 4)):
        return None
    q, k = shapes[0], shapes[1]
    heads = int(attrs.get("q_num_heads", 1)) if len(q) == 3 else q[1]
    seq_q, seq_k = (q[1], k[1]) if len(q) == 3 else (q[2], k[2])
    past = shapes[4][2] if _used(inputs, 4) else 0
    problem = _attn_mask_problem(shapes[3], (q[0], heads, seq_q, past + seq_k))
    return None if problem is None else f"attn_mask {problem[0]}; supported: {problem[1]}"


def _attention(c: Call):
    """Attention (ai.onnx): the masks as one additive bias (0 or -inf): attn_mask (IF for a boolean
    one, PADDING1 to the keys' length), the causal and sliding-window frontiers as constants (or,
    against nonpad_kv_seqlen, as comparisons with it), the padding of nonpad_kv_seqlen; Q and K each
    scaled by sqrt(scale) (IDENTITY), QK^T by GEMM, softcap by IDENTITY and TANH, SOFTMAX1 over the
    keys, rows whose bias is all -inf set to 0 (REDUCE MAX, IS_INFINITY, IF), then GEMM with V.
    Shared key/value heads are broadcast (zero strides) to the query heads."""
    q, k, v = (_arr(c.inputs[i]) for i in range(3))
    mask, past_k, past_v, nonpad = (c.input(i) for i in (3, 4, 5, 6))
    rank3 = q.ndim == 3
    if rank3:
        kvh = int(c.attr("kv_num_heads"))
        q, k, v = _heads(q, int(c.attr("q_num_heads"))), _heads(k, kvh), _heads(v, kvh)
    dt = q.dtype
    if past_k is not None:
        k = _dml("join")([_arr(past_k), k], axis=2)
        v = _dml("join")([_arr(past_v), v], axis=2)
    present_k, present_v = k, v
    batch, qh, sq = q.shape[0], q.shape[1], q.shape[2]
    skv = k.shape[2]
    neg = jnp.full((1,), -np.inf, dt)
    shape = (batch, qh, sq, skv)

    def bias_of(allowed):  # a UINT8 mask as 0 / -inf
        allowed = jnp.broadcast_to(allowed, shape)
        return _dml("element_wise_if")(allowed, jnp.zeros(shape, dt), jnp.broadcast_to(neg, shape))

    bias = jnp.zeros(shape, dt)
    if mask is not None:
        m = _arr(mask)
        problem = _attn_mask_problem(m.shape, shape)
        if problem is not None:
            raise ValidationError("element_wise_add", "DML_OPERATOR_ELEMENT_WISE_ADD", None,  # the mask's bias
                                  [Violation("Attention (ai.onnx) attn_mask", "", *problem)])
        if m.shape[-1] < skv:
            m = _dml("padding1")(m.astype(jnp.uint8) if m.dtype == jnp.bool_ else m, padding_mode="CONSTANT",
                                 padding_value=0 if m.dtype == jnp.bool_ else float("-inf"),
                                 start_padding=(0,) * m.ndim, end_padding=(0,) * (m.ndim - 1) + (skv - m.shape[-1],))
        m = m.reshape((1,) * (4 - m.ndim) + m.shape)
        m = bias_of(_u8(m)) if m.dtype in (jnp.bool_, jnp.uint8) else jnp.broadcast_to(m.astype(dt), shape)
        bias = m
    i = np.arange(sq).reshape(-1, 1)
    j = np.arange(skv).reshape(1, -1)
    left, right = int(c.attr("left_window_size", -1)), int(c.attr("right_window_size", -1))
    causal = bool(c.attr("is_causal", 0))
    add = _dml("element_wise_add")
    if nonpad is None:
        offset = 0 if past_k is None else _arr(past_k).shape[2]
        diff = i + offset - j
        allowed = np.ones((sq, skv), bool)
        if causal:
            allowed &= diff >= 0
        if left >= 0:
            allowed &= diff <= left
        if right >= 0:
            allowed &= -diff <= right
        if not allowed.all():
            bias = add(bias, bias_of(jnp.asarray(allowed.astype(np.uint8))))
    else:  # a frontier per batch: the conditions compare nonpad_kv_seqlen with constants
        n = jnp.broadcast_to(_dml("cast")(_arr(nonpad), output_data_type="INT32").reshape(-1, 1, 1, 1), shape)
        ge, le = _dml("element_wise_logical_greater_than_or_equal"), _dml("element_wise_logical_less_than_or_equal")
        const = lambda a: jnp.broadcast_to(jnp.asarray(np.asarray(a, np.int32)), shape)  # noqa: E731
        rel = i - j - sq  # diff = rel + nonpad
        conds = [_dml("element_wise_logical_greater_than")(n, const(j + 0 * i))]  # the padding: j < nonpad
        if causal:
            conds.append(ge(n, const(-rel)))
        if left >= 0:
            conds.append(le(n, const(left - rel)))
        if right >= 0:
            conds.append(ge(n, const(-rel - right)))
        allowed = conds[0]
        for cond in conds[1:]:
            allowed = _dml("element_wise_logical_and")(allowed, cond)
        bias = add(bias, bias_of(allowed))
    if qh != k.shape[1]:  # shared key and value heads
        reps = qh // k.shape[1]
        k, v = (jnp.broadcast_to(t[:, :, None], (t.shape[0], t.shape[1], reps) + t.shape[2:]).reshape(
            t.shape[0], qh, *t.shape[2:]) for t in (k, v))
    scale = c.attr("scale")
    scale = 1 / np.sqrt(q.shape[3]) if scale is None else float(scale)
    root = float(np.sqrt(scale).astype(dt))
    qs = _dml("element_wise_identity")(q, scale_bias=(root, 0.0))
    ks = _dml("element_wise_identity")(k, scale_bias=(root, 0.0))
    qk = _matmul(Call("MatMul", c.opset, [qs, jnp.swapaxes(ks, 2, 3)], {}, 1))[0]
    cap = c.attr("softcap")
    if cap is not None and float(cap) > 0:
        qk = _dml("element_wise_identity")(_dml("activation_tanh")(
            _dml("element_wise_identity")(qk, scale_bias=(1.0 / float(cap), 0.0))), scale_bias=(float(cap), 0.0))
    with_bias = add(qk, bias)
    mode = int(c.attr("qk_matmul_output_mode", 0))
    qk_out = with_bias if mode == 2 else qk
    precision = c.attr("softmax_precision")
    soft_in = with_bias
    if precision is not None and _onnx_dtype(precision) is not None and np.dtype(_onnx_dtype(precision)) != dt:
        soft_in = _dml("cast")(with_bias, output_data_type=_data_type(_runtime_dtype(_onnx_dtype(precision))))
    soft = _dml("activation_softmax1")(soft_in, axes=(3,))
    if soft.dtype != dt:
        soft = _dml("cast")(soft, output_data_type=_data_type(dt))
    row_max = _dml("reduce")(bias, function="MAX", axes=(3,))
    masked = jnp.broadcast_to(_dml("element_wise_is_infinity")(row_max, infinity_mode="NEGATIVE"), shape)
    soft = _dml("element_wise_if")(masked, jnp.zeros(shape, dt), soft)
    if mode == 3:
        qk_out = soft
    y = _matmul(Call("MatMul", c.opset, [soft, v], {}, 1))[0]
    if rank3:
        y = jnp.transpose(y, (0, 2, 1, 3)).reshape(y.shape[0], y.shape[2], -1)
    return [y, present_k, present_v, qk_out]


def _causal_conv_with_state(c: Call):
    """CausalConvWithState: the past state (or zeros: PADDING1) JOINed before the input, a
    depthwise CONVOLUTION (as Conv), SWISH for 'silu'; the present state is the last k - 1 steps
    (SLICE1)."""
    x, w = _arr(c.inputs[0]), _arr(c.inputs[1])
    k = w.shape[2]
    past = c.input(3)
    if past is None:
        padded = _dml("padding1")(x, padding_mode="CONSTANT", padding_value=0, start_padding=(0, 0, k - 1),
                                  end_padding=(0, 0, 0)) if k > 1 else x
    else:
        padded = _dml("join")([_arr(past), x], axis=2)
    y = _conv(Call("Conv", 11, [padded, w, c.input(2)], {"group": x.shape[1], "kernel_shape": [k]}, 1))[0]
    if _text(c.attr("activation"), "none") in ("silu", "swish"):
        y = _dml("activation_swish")(y)
    return [y, _slice_last(padded, padded.shape[2] - (k - 1), padded.shape[2])]


def _mel_weight_matrix(c: Call):
    """MelWeightMatrix of static inputs, folded to a constant (as the window functions): the band edges
    evenly spaced on mel(f) = 2595 log10(1 + f / 700) from lower_edge_hertz in num_mel_bins + 2 steps (as
    ONNX's reference steps), as DFT bins floor((dft_length + 1) f / sample_rate), and each mel bin's
    triangle rising from its left edge to 1 at its centre and falling to 0 at its right edge."""
    bins, dft, rate = (int(c.static(i).reshape(())) for i in range(3))
    low, high = (c.static(i).reshape(())[()] for i in (3, 4))  # the inputs' own float type, as the reference
    mel_low, mel_high = (2595 * np.log1p(f / 700) / np.log(10) for f in (low, high))
    steps = np.arange(bins + 2) * ((mel_high - mel_low) / (bins + 2)) + mel_low
    edges = (((dft + 1) * (700 * np.expm1(steps / 2595 * np.log(10)))) // rate).astype(np.int64)
    left, centre, right = edges[:-2][None, :], edges[1:-1][None, :], edges[2:][None, :]
    j = np.arange(dft // 2 + 1)[:, None]
    rising = np.where(centre > left, (j - left) / np.maximum(centre - left, 1), 1.0)
    rising = np.where((j >= left) & (j <= centre), rising, 0.0)
    falling = (right - j) / np.maximum(right - centre, 1)
    out = np.where((j >= centre) & (j < right), falling, rising)
    return [out.astype(_runtime_dtype(_onnx_dtype(c.attr("output_datatype", 1))))]


def _adam_error(found: str, allowed: str) -> ValidationError:
    return ValidationError("adam_optimizer", "DML_OPERATOR_ADAM_OPTIMIZER", None,
                           [Violation("Adam (ai.onnx.preview.training)", "", found, allowed)])


def _adam(c: Call):
    """Adam (ai.onnx.preview.training) onto ADAM_OPTIMIZER, each optimized tensor as a {1, 1, 1, n} desc:
    R as LearningRate (static), alpha as Beta1, beta as Beta2, epsilon as Epsilon, T (INT64) CAST to its
    UINT32 TrainingStepTensor; norm_coefficient's gradient term by IDENTITY (ScaleBias) and ADD,
    norm_coefficient_post by IDENTITY. ONNX leaves out the bias correction where T <= 0, which ADAM_OPTIMIZER
    computes for T = 1 with LearningRate R (1 - alpha) / sqrt(1 - beta): its factor sqrt(1 - beta) / (1 -
    alpha) then cancels; a T known only at run time selects between the two by IF on LOGICAL_GREATER_THAN."""
    rate = float(c.static(0).reshape(()))
    alpha, beta = float(c.attr("alpha", 0.9)), float(c.attr("beta", 0.999))
    eps, norm, post = float(c.attr("epsilon", 1e-6)), float(c.attr("norm_coefficient", 0.0)), float(
        c.attr("norm_coefficient_post", 0.0))
    n = (len(c.inputs) - 2) // 4
    step = c.input(1)
    static_step = isinstance(step, (np.ndarray, np.generic))
    if static_step and int(np.asarray(step).reshape(())) > 0:
        forms = [(np.asarray(step).reshape(1, 1, 1, 1).astype(np.uint32), rate)]
    else:
        if alpha >= 1.0 or beta >= 1.0:
            raise _adam_error(f"has alpha {alpha} and beta {beta} with a step T that may be 0 or less",
                              "alpha and beta below 1: without the bias correction the step is ADAM_OPTIMIZER's at "
                              "T = 1 with LearningRate R (1 - alpha) / sqrt(1 - beta)")
        forms = [(np.ones((1, 1, 1, 1), np.uint32), rate * (1.0 - alpha) / np.sqrt(1.0 - beta))]
        if not static_step:
            t = _arr(step).reshape(1, 1, 1, 1)
            forms.append((_dml("cast")(t, output_data_type="UINT32"), rate))
            later = _dml("element_wise_logical_greater_than")(t, jnp.zeros((1, 1, 1, 1), t.dtype))
    xs, vs, hs = [], [], []
    for i in range(n):
        x, g, v, h = (_arr(c.inputs[2 + i + k * n]) for k in range(4))
        flat = [a.reshape(1, 1, 1, max(1, a.size)) for a in (x, g, v, h)]
        if norm:
            flat[1] = _dml("element_wise_add")(_dml("element_wise_identity")(flat[0], scale_bias=(norm, 0.0)),
                                               flat[1])
        outs = [_dml("adam_optimizer")(flat[0], flat[2], flat[3], flat[1], t, learning_rate=float(r), beta1=alpha,
                                       beta2=beta, epsilon=eps) for t, r in forms]
        new = outs[0]
        if len(outs) == 2:
            pick = jnp.broadcast_to(later, flat[0].shape)
            new = [_dml("element_wise_if")(pick, b, a) for a, b in zip(outs[0], outs[1])]
        xn, vn, hn = new
        if post:
            xn = _dml("element_wise_identity")(xn, scale_bias=(1.0 - post, 0.0))
        xs.append(xn.reshape(x.shape))
        vs.append(vn.reshape(x.shape))
        hs.append(hn.reshape(x.shape))
    return xs + vs + hs


UNROLL = 256
"""The most iterations a Loop is unrolled to (when its body needs the iteration number static), and the
most tokens LinearAttention's recurrence is unrolled to."""


def _to_f32(x):
    return x if x.dtype == jnp.float32 else _dml("cast")(x, output_data_type="FLOAT32")


def _linear_attention(c: Call):
    """LinearAttention as its recurrence over the sequence, one step's operators a token (each token's slice
    by SLICE1, the outputs JOINed; past UNROLL tokens, lax.scan around the step), in FLOAT32 (CAST in and
    out, as ONNX's reference): the decay by EXP and MULTIPLY (broadcast by
    zero strides over the state's value axis); the delta rule's S^T k by GEMM (TransA), beta (v - S^T k) by
    SUBTRACT and MULTIPLY; the write S + k v^T by one GEMM (the state as C, Beta 1); the read Scale q^T S by
    GEMM (Alpha), the key/value heads' states broadcast to the query heads by zero strides."""
    hq, hkv = int(c.attr("q_num_heads")), int(c.attr("kv_num_heads"))
    rule = _text(c.attr("update_rule"), "gated_delta")
    q, k, v = (_arr(c.inputs[i]) for i in range(3))
    past, decay, beta = (c.input(i) for i in (3, 4, 5))
    dt = q.dtype
    b, t = q.shape[0], q.shape[1]
    dk, dv = q.shape[2] // hq, v.shape[2] // hkv
    qh, kh, vh = _heads(_to_f32(q), hq), _heads(_to_f32(k), hkv), _heads(_to_f32(v), hkv)
    state = jnp.zeros((b, hkv, dk, dv), jnp.float32) if past is None else _to_f32(_arr(past))
    xs = {"q": qh, "k": kh, "v": vh}
    if rule in ("gated", "gated_delta"):
        g = _to_f32(_arr(decay))
        g = _heads(g, hkv) if g.shape[2] == hkv * dk else jnp.transpose(g.reshape(b, t, hkv, 1), (0, 2, 1, 3))
        xs["g"] = _dml("element_wise_exp")(g)
    if rule in ("delta", "gated_delta"):
        r = _to_f32(_arr(beta))
        xs["beta"] = jnp.broadcast_to(jnp.transpose(r.reshape(b, t, r.shape[2], 1), (0, 2, 1, 3)), (b, hkv, t, 1))
    scale = float(c.attr("scale", 0.0) or 0.0) or float(1.0 / np.sqrt(dk))
    gemm = _dml("gemm")
    reps = hq // hkv

    def one(s, x):
        if "g" in x:
            s = _dml("element_wise_multiply")(s, jnp.broadcast_to(x["g"][..., None], s.shape))
        kt, vt = x["k"][..., None], x["v"][:, :, None, :]  # {b, hkv, dk, 1}, {b, hkv, 1, dv}
        if "beta" in x:
            read = gemm(kt, s, None, trans_a="TRANSPOSE", trans_b="NONE", alpha=1.0, beta=0.0)  # {b, hkv, 1, dv}
            vt = _dml("element_wise_multiply")(jnp.broadcast_to(x["beta"][..., None], vt.shape),
                                               _dml("element_wise_subtract")(vt, read))
        s = gemm(kt, vt, s, trans_a="NONE", trans_b="NONE", alpha=1.0, beta=1.0)
        shared = jnp.broadcast_to(s[:, :, None], (b, hkv, reps, dk, dv)).reshape(b, hq, dk, dv)
        o = gemm(x["q"][:, :, None, :], shared, None, trans_a="NONE", trans_b="NONE", alpha=scale, beta=0.0)
        return s, o[:, :, 0, :]

    if t <= UNROLL:  # a DirectML graph has no loop: one step's operators a token, each token's slice by SLICE1
        outs = []
        for i in range(t):
            state, o = one(state, {key: _token(val, i) for key, val in xs.items()})
            outs.append(o[:, :, None])
        y = outs[0] if t == 1 else _dml("join")(outs, axis=2)  # {b, hq, t, dv}
    else:
        state, outs = jax.lax.scan(one, state, {key: jnp.moveaxis(val, 2, 0) for key, val in xs.items()})
        y = jnp.moveaxis(outs, 0, 2)
    y = jnp.transpose(y, (0, 2, 1, 3)).reshape(b, t, hq * dv)
    out_dt = dt if past is None else _arr(past).dtype
    y = y if dt == jnp.float32 else _dml("cast")(y, output_data_type=_data_type(dt))
    state = state if out_dt == jnp.float32 else _dml("cast")(state, output_data_type=_data_type(out_dt))
    return [y, state]


def _token(x, i: int):
    """Token ``i`` of a {b, heads, t, ...} tensor, the token axis dropped: a SLICE1 window of one."""
    sizes = x.shape[:2] + (1,) + x.shape[3:]
    return _dml("slice1")(x, input_window_offsets=(0, 0, i) + (0,) * (x.ndim - 3), input_window_sizes=sizes,
                          input_window_strides=(1,) * x.ndim).reshape(x.shape[:2] + x.shape[3:])


def _linear_attention_check(attrs: dict, opset: int, inputs: tuple, outputs: tuple) -> str | None:
    rule = _text(attrs.get("update_rule"), "gated_delta")
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        return f"update_rule {rule!r}: one of 'linear', 'gated', 'delta', 'gated_delta'"
    if (rule in ("gated", "gated_delta")) != _used(inputs, 4):
        return f"update_rule {rule!r} {'needs' if rule in ('gated', 'gated_delta') else 'forbids'} the decay input"
    if (rule in ("delta", "gated_delta")) != _used(inputs, 5):
        return f"update_rule {rule!r} {'needs' if rule in ('delta', 'gated_delta') else 'forbids'} the beta input"
    if "q_num_heads" not in attrs or "kv_num_heads" not in attrs:
        return "q_num_heads and kv_num_heads are required"
    return None


def _flex_attention(c: Call):
    """FlexAttention (ai.onnx.preview): Scale Q K^T by GEMM (Alpha; shared key/value heads broadcast to the
    query heads by zero strides), CAST to the softmax precision (FLOAT32 for FLOAT16 inputs), score_mod's
    subgraph, SOFTMAX1 over the keys, prob_mod's subgraph, GEMM with V (CAST to that precision), CAST back
    to V's type. The subgraphs' nodes are mapped like the main graph's."""
    q, k, v = (_arr(c.inputs[i]) for i in range(3))
    dt = q.dtype
    precision = c.attr("softmax_precision")
    if precision is not None:
        compute = np.dtype(_runtime_dtype(_onnx_dtype(precision)))
    else:
        compute = np.dtype(np.float32) if dt == jnp.float16 else np.dtype(dt)
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:  # query head h reads key/value head h // (hq / hkv)
        k, v = (jnp.broadcast_to(x[:, :, None], (x.shape[0], hkv, hq // hkv) + x.shape[2:]).reshape(
            (x.shape[0], hq) + x.shape[2:]) for x in (k, v))
    scale = c.attr("scale")
    scale = float(1.0 / np.sqrt(q.shape[3])) if scale is None else float(scale)
    scores = _dml("gemm")(q, k, None, trans_a="NONE", trans_b="TRANSPOSE", alpha=scale, beta=0.0)
    cast = lambda x: x if x.dtype == compute else _dml("cast")(x, output_data_type=_data_type(compute))  # noqa: E731
    scores = cast(scores)
    if c.attr("score_mod") is not None:
        scores = cast(_arr(c.attr("score_mod")(scores)))
    probs = _dml("activation_softmax1")(scores, axes=(3,))
    if c.attr("prob_mod") is not None:
        probs = cast(_arr(c.attr("prob_mod")(probs)))
    y = _dml("gemm")(probs, cast(v), None, trans_a="NONE", trans_b="NONE", alpha=1.0, beta=0.0)
    return [y if y.dtype == v.dtype else _dml("cast")(y, output_data_type=_data_type(v.dtype))]


PREVIEW: tuple[Rule, ...] = (
    Rule("Adam", 1, None, ("DML_OPERATOR_ADAM_OPTIMIZER", "DML_OPERATOR_CAST", "DML_OPERATOR_ELEMENT_WISE_IDENTITY",
                           "DML_OPERATOR_ELEMENT_WISE_ADD", "DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN",
                           "DML_OPERATOR_ELEMENT_WISE_IF"), _adam, static=(0,),
         restrictions="R must be static (LearningRate is an attribute); T <= 0 (no bias correction) as T = 1 with "
                      "LearningRate R (1 - alpha) / sqrt(1 - beta), a runtime T choosing by IF; norm_coefficient by "
                      "IDENTITY and ADD, norm_coefficient_post by IDENTITY; FLOAT32 and FLOAT16 (ADAM_OPTIMIZER's "
                      "types)", domain="ai.onnx.preview.training"),
    Rule("FlexAttention", 1, None, ("DML_OPERATOR_GEMM", "DML_OPERATOR_CAST", "DML_OPERATOR_ACTIVATION_SOFTMAX1"),
         _flex_attention,
         restrictions="score_mod and prob_mod are subgraphs mapped node by node like the main graph; "
                      "softmax_precision as CASTs around SOFTMAX1 (FLOAT32 for FLOAT16 inputs)",
         domain="ai.onnx.preview"),
)
"""ONNX's preview domains (ai.onnx.preview.training, ai.onnx.preview): operators that ONNX defines
outside ai.onnx, mapped like the ai.onnx ones; opsets count their domain's."""


# ----------------------------------------------------------------------------------------------
# the table

def _r(op_type, since, until, dml, lower, static=(), check=None, restrictions="", domain="", check_shapes=None):
    return Rule(op_type, since, until, tuple(dml), lower, tuple(static), check, restrictions, domain,
                check_shapes=check_shapes)


_UNARY = [("Abs", 1, "element_wise_abs"), ("Acos", 7, "element_wise_acos"), ("Acosh", 9, "element_wise_acosh"),
          ("Asin", 7, "element_wise_asin"), ("Asinh", 9, "element_wise_asinh"), ("Atan", 7, "element_wise_atan"),
          ("Atanh", 9, "element_wise_atanh"), ("Ceil", 1, "element_wise_ceil"), ("Cos", 7, "element_wise_cos"),
          ("Cosh", 9, "element_wise_cosh"), ("Erf", 9, "element_wise_erf"), ("Exp", 1, "element_wise_exp"),
          ("Floor", 1, "element_wise_floor"), ("Log", 1, "element_wise_log"), ("Neg", 1, "element_wise_negate"),
          ("Reciprocal", 1, "element_wise_recip"), ("Sign", 9, "element_wise_sign"), ("Sin", 7, "element_wise_sin"),
          ("Sinh", 9, "element_wise_sinh"), ("Sqrt", 1, "element_wise_sqrt"), ("Tan", 7, "element_wise_tan"),
          ("Tanh", 1, "activation_tanh"), ("Sigmoid", 1, "activation_sigmoid"), ("Relu", 1, "activation_relu"),
          ("Softsign", 1, "activation_softsign"), ("BitwiseNot", 18, "element_wise_bit_not")]
_BINARY = [("Add", 1, "element_wise_add"), ("Sub", 1, "element_wise_subtract"), ("Mul", 1, "element_wise_multiply"),
           ("Div", 1, "element_wise_divide"), ("BitwiseAnd", 18, "element_wise_bit_and"),
           ("BitwiseOr", 18, "element_wise_bit_or"), ("BitwiseXor", 18, "element_wise_bit_xor")]
_COMPARE = [("Equal", 1, "element_wise_logical_equals"), ("Greater", 1, "element_wise_logical_greater_than"),
            ("Less", 1, "element_wise_logical_less_than"),
            ("GreaterOrEqual", 12, "element_wise_logical_greater_than_or_equal"),
            ("LessOrEqual", 12, "element_wise_logical_less_than_or_equal")]
_VARIADIC = [("Max", 6, "element_wise_max"), ("Min", 6, "element_wise_min"), ("Sum", 6, "element_wise_add")]

_DML_NAME = lambda f: "DML_OPERATOR_" + f.upper()  # noqa: E731
_RESHAPE = ("(a reshape: a tensor desc, no operator)",)

TABLE: tuple[Rule, ...] = (
    *(_r(op, since, None, [_DML_NAME(fn)], _unary(fn)) for op, since, fn in _UNARY),
    *(_r(op, since, None, [_DML_NAME(fn)], _binary(fn), restrictions="broadcasts as zero strides")
      for op, since, fn in _BINARY),
    *(_r(op, since, None, [_DML_NAME(fn)], _compare(fn)) for op, since, fn in _COMPARE),
    *(_r(op, since, None, [_DML_NAME(fn)], _variadic(fn), restrictions="n inputs as n - 1 pairwise operators")
      for op, since, fn in _VARIADIC),
    _r("Mean", 6, None, ["DML_OPERATOR_ELEMENT_WISE_MEAN", "DML_OPERATOR_ELEMENT_WISE_ADD",
                         "DML_OPERATOR_ELEMENT_WISE_IDENTITY"], _mean,
       restrictions="2 inputs: ELEMENT_WISE_MEAN; more: ADDs and an IDENTITY with ScaleBias 1/n"),
    _r("And", 1, None, ["DML_OPERATOR_ELEMENT_WISE_LOGICAL_AND"], _logical("element_wise_logical_and")),
    _r("Or", 1, None, ["DML_OPERATOR_ELEMENT_WISE_LOGICAL_OR"], _logical("element_wise_logical_or")),
    _r("Xor", 1, None, ["DML_OPERATOR_ELEMENT_WISE_LOGICAL_XOR"], _logical("element_wise_logical_xor")),
    _r("Not", 1, None, ["DML_OPERATOR_ELEMENT_WISE_LOGICAL_NOT"], _not),
    _r("Pow", 1, None, ["DML_OPERATOR_ELEMENT_WISE_POW"], _pow,
       restrictions="an exponent of another type is CAST to the base's type first"),
    _r("Mod", 10, None, ["DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR", "DML_OPERATOR_ELEMENT_WISE_MODULUS_TRUNCATE"], _mod,
       restrictions="fmod=1: MODULUS_TRUNCATE; fmod=0: MODULUS_FLOOR"),
    _r("Round", 11, None, ["DML_OPERATOR_ELEMENT_WISE_ROUND"], _round),
    _r("IsNaN", 9, None, ["DML_OPERATOR_ELEMENT_WISE_IS_NAN"], _is_nan),
    _r("IsInf", 10, None, ["DML_OPERATOR_ELEMENT_WISE_IS_INFINITY"], _is_inf),
    _r("BitShift", 11, None, ["DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_LEFT", "DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_RIGHT"],
       _bit_shift),
    _r("Where", 9, None, ["DML_OPERATOR_ELEMENT_WISE_IF"], _where),
    _r("Clip", 1, 10, ["DML_OPERATOR_ELEMENT_WISE_CLIP"], _clip),
    _r("Clip", 11, None, ["DML_OPERATOR_ELEMENT_WISE_CLIP", "DML_OPERATOR_ELEMENT_WISE_CLIP1"], _clip, static=(1, 2),
       restrictions="min and max must be static (CLIP's Min and Max are attributes); integers use CLIP1"),
    _r("LeakyRelu", 1, None, ["DML_OPERATOR_ACTIVATION_LEAKY_RELU"],
       _activation("activation_leaky_relu", alpha=("alpha", 0.01))),
    _r("Elu", 1, None, ["DML_OPERATOR_ACTIVATION_ELU"], _activation("activation_elu", alpha=("alpha", 1.0))),
    _r("Selu", 1, None, ["DML_OPERATOR_ACTIVATION_SCALED_ELU"],
       _activation("activation_scaled_elu", alpha=("alpha", 1.67326319217681884765625),
                   gamma=("gamma", 1.05070102214813232421875))),
    _r("Celu", 12, None, ["DML_OPERATOR_ACTIVATION_CELU"], _activation("activation_celu", alpha=("alpha", 1.0))),
    _r("HardSigmoid", 1, None, ["DML_OPERATOR_ACTIVATION_HARD_SIGMOID"],
       _activation("activation_hard_sigmoid", alpha=("alpha", 0.2), beta=("beta", 0.5))),
    _r("ThresholdedRelu", 10, None, ["DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU"],
       _activation("activation_thresholded_relu", alpha=("alpha", 1.0))),
    _r("Softplus", 1, None, ["DML_OPERATOR_ACTIVATION_SOFTPLUS"], _unary("activation_softplus", steepness=1.0)),
    _r("Shrink", 9, None, ["DML_OPERATOR_ACTIVATION_SHRINK"],
       _activation("activation_shrink", bias=("bias", 0.0), threshold=("lambd", 0.5))),
    _r("Gelu", 20, None, ["DML_OPERATOR_ACTIVATION_GELU", "DML_OPERATOR_ACTIVATION_TANH"], _gelu,
       restrictions="approximate='tanh' composed of MULTIPLY, IDENTITY, ADD and TANH"),
    _r("HardSwish", 14, None, ["DML_OPERATOR_ACTIVATION_HARD_SWISH"], _hard_swish),
    _r("PRelu", 1, None, ["DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU"], _prelu,
       restrictions="the slope broadcasts as zero strides"),
    _r("Softmax", 1, None, ["DML_OPERATOR_ACTIVATION_SOFTMAX1"], _softmax("activation_softmax", "activation_softmax1"),
       restrictions="before opset 13 the input is coerced to 2-D at `axis`"),
    _r("LogSoftmax", 1, None, ["DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1"],
       _softmax("activation_log_softmax", "activation_log_softmax1"),
       restrictions="before opset 13 the input is coerced to 2-D at `axis`"),
    _r("Hardmax", 1, None, ["DML_OPERATOR_ACTIVATION_HARDMAX1"], _softmax("activation_hardmax", "activation_hardmax1"),
       restrictions="before opset 13 the input is coerced to 2-D at `axis`"),
    _r("Gemm", 1, None, ["DML_OPERATOR_GEMM"], _gemm, restrictions="C broadcasts to (M, N) as zero strides"),
    _r("MatMul", 1, None, ["DML_OPERATOR_GEMM"], _matmul,
       restrictions="1-D operands become matrices, batch dimensions broadcast, ranks above 4 folded into one batch"),
    _r("Conv", 1, None, ["DML_OPERATOR_CONVOLUTION"], _conv,
       restrictions="1-D convolutions run as 2-D ones; auto_pad resolved at trace time"),
    _r("ConvTranspose", 1, None, ["DML_OPERATOR_CONVOLUTION"], _conv_transpose,
       restrictions="Direction BACKWARD; output_shape becomes pads"),
    _r("MaxPool", 1, None, ["DML_OPERATOR_MAX_POOLING2"], _pool("max"),
       restrictions="ceil_mode adds end padding; the Indices output is DirectML's (flat, row-major); storage_order=1 "
                    "(2-D) recomputes them column-major by element-wise operators"),
    _r("AveragePool", 1, None, ["DML_OPERATOR_AVERAGE_POOLING1"], _pool("average"),
       restrictions="ceil_mode adds end padding"),
    _r("LpPool", 2, None, ["DML_OPERATOR_LP_POOLING1"], _pool("lp")),
    _r("GlobalAveragePool", 1, None, ["DML_OPERATOR_REDUCE"], _global_pool("average"),
       restrictions="REDUCE AVERAGE over the spatial axes"),
    _r("GlobalMaxPool", 1, None, ["DML_OPERATOR_REDUCE"], _global_pool("max"),
       restrictions="REDUCE MAX over the spatial axes"),
    _r("GlobalLpPool", 2, None, ["DML_OPERATOR_LP_POOLING1"], _global_pool("lp")),
    _r("BatchNormalization", 1, None, ["DML_OPERATOR_BATCH_NORMALIZATION"], _batch_norm, check=_batch_norm_check,
       restrictions="training_mode=1: BATCH_NORMALIZATION_TRAINING, the running statistics by IDENTITY and ADD"),
    _r("InstanceNormalization", 1, None, ["DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1"], _instance_norm),
    _r("LayerNormalization", 17, None, ["DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1"], _layer_norm,
       check=_layer_norm_check, restrictions="the Mean and InvStdDev outputs are not produced"),
    _r("MeanVarianceNormalization", 9, None, ["DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1"], _mvn),
    _r("LRN", 1, None, ["DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION"], _lrn),
    _r("LpNormalization", 1, None, ["DML_OPERATOR_LP_NORMALIZATION"], _lp_norm),
    *(_r(op, 1, None, ["DML_OPERATOR_REDUCE"], _reduce, static=(1,),
         restrictions=f"Function {fn}; axes must be static") for op, fn in _REDUCE.items()),
    _r("ArgMax", 1, None, ["DML_OPERATOR_ARGMAX"], _arg("argmax"),
       restrictions="select_last_index=1: AxisDirection DECREASING"),
    _r("ArgMin", 1, None, ["DML_OPERATOR_ARGMIN"], _arg("argmin"),
       restrictions="select_last_index=1: AxisDirection DECREASING"),
    _r("Reshape", 1, None, _RESHAPE, _reshape, static=(1,), restrictions="the shape must be static"),
    _r("Flatten", 1, None, _RESHAPE, _flatten),
    _r("Squeeze", 1, None, _RESHAPE, _squeeze, static=(1,)),
    _r("Unsqueeze", 1, None, _RESHAPE, _unsqueeze, static=(1,)),
    _r("Transpose", 1, None, ("(a permuted tensor desc, no operator)",), _transpose),
    _r("Identity", 1, None, ("(no operator)",), _identity),
    _r("Dropout", 1, None, ("(no operator: inference)",), _dropout, static=(1, 2),
       restrictions="inference: the input passes through, the mask is all true"),
    _r("Concat", 1, None, ["DML_OPERATOR_JOIN"], _concat),
    _r("Split", 2, None, ["DML_OPERATOR_SPLIT"], _split, static=(1,), restrictions="split sizes must be static"),
    _r("Slice", 1, None, ["DML_OPERATOR_SLICE1"], _slice, static=(1, 2, 3, 4),
       restrictions="starts, ends, axes and steps must be static; negative steps as negative InputWindowStrides"),
    _r("Gather", 1, None, ["DML_OPERATOR_GATHER"], _gather,
       restrictions="ranks padded with leading ones as DirectML requires"),
    _r("GatherElements", 11, None, ["DML_OPERATOR_GATHER_ELEMENTS"], _gather_elements),
    _r("GatherND", 11, None, ["DML_OPERATOR_GATHER_ND1"], _gather_nd),
    _r("ScatterElements", 11, None, ["DML_OPERATOR_SCATTER_ELEMENTS"], _scatter_elements, check=_scatter_check,
       restrictions="reduction='none' only"),
    _r("ScatterND", 11, None, ["DML_OPERATOR_SCATTER_ND"], _scatter_nd, check=_scatter_check,
       restrictions="reduction='none' only"),
    _r("Pad", 2, None, ["DML_OPERATOR_PADDING1"], _pad, static=(1, 2, 3),
       restrictions="pads, constant_value and axes must be static; negative pads crop first"),
    _r("Expand", 8, None, ("(a broadcast: zero strides, no operator)",), _expand, static=(1,)),
    _r("Tile", 6, None, ["DML_OPERATOR_TILE"], _tile, static=(1,)),
    _r("Cast", 6, None, ["DML_OPERATOR_CAST"], _cast, check=_cast_check,
       restrictions="to BOOL: NOT(EQUALS(x, 0)); 64-bit types need JAX's 64-bit mode (else 32-bit)"),
    _r("DepthToSpace", 1, None, ["DML_OPERATOR_DEPTH_TO_SPACE1"], _depth_space("depth_to_space1")),
    _r("SpaceToDepth", 1, None, ["DML_OPERATOR_SPACE_TO_DEPTH1"], _depth_space("space_to_depth1")),
    _r("TopK", 1, None, ["DML_OPERATOR_TOP_K1"], _top_k, static=(1,),
       restrictions="K must be static; the output is always sorted"),
    _r("CumSum", 11, None, ["DML_OPERATOR_CUMULATIVE_SUMMATION"], _cumsum, static=(1,)),
    _r("OneHot", 9, None, ["DML_OPERATOR_ONE_HOT"], _one_hot, static=(1,)),
    _r("ConstantOfShape", 9, None, ["DML_OPERATOR_FILL_VALUE_CONSTANT"], _constant_of_shape, static=(0,),
       restrictions="folded to a constant"),
    _r("Range", 11, None, ["DML_OPERATOR_FILL_VALUE_SEQUENCE"], _range, static=(0, 1, 2),
       restrictions="folded to a constant"),
    _r("Resize", 10, None, ["DML_OPERATOR_RESAMPLE2", "DML_OPERATOR_ELEMENT_WISE_IF"], _resize, static=(1, 2, 3),
       check=_resize_modes,
       restrictions="nearest/linear; coordinate modes as InputPixelOffsets/OutputPixelOffsets, nearest modes as "
                    "RoundingDirection; roi, scales and sizes must be static; tf_crop_and_resize's "
                    "extrapolation_value by IF over a constant mask"),
    _r("Upsample", 7, 9, ["DML_OPERATOR_RESAMPLE2"], _resize, static=(1,), check=_resize_modes),
    _r("QuantizeLinear", 10, None, ["DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR"], _quantize, check=_quant_check,
       restrictions="UINT8/INT8 outputs; scale and zero point broadcast along `axis`"),
    _r("DequantizeLinear", 10, None, ["DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR"], _dequantize, check=_quant_check),
    _r("DynamicQuantizeLinear", 11, None, ["DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR"], _dynamic_quantize),
    _r("MatMulInteger", 10, None, ["DML_OPERATOR_MATRIX_MULTIPLY_INTEGER"], _matmul_integer),
    _r("QLinearMatMul", 10, None, ["DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY"], _qlinear_matmul),
    _r("ConvInteger", 10, None, ["DML_OPERATOR_CONVOLUTION_INTEGER"], _conv_integer),
    _r("QLinearConv", 10, None, ["DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION"], _qlinear_conv),
    _r("CastLike", 15, None, ["DML_OPERATOR_CAST"], _cast_like,
       restrictions="as Cast, to the second input's type"),
    _r("Scatter", 9, 10, ["DML_OPERATOR_SCATTER_ELEMENTS"], _scatter_elements),
    _r("EyeLike", 9, None, ["DML_OPERATOR_DIAGONAL_MATRIX1"], _eye_like,
       restrictions="DiagonalFillBegin k, DiagonalFillEnd k + 1"),
    _r("ReverseSequence", 10, None, ["DML_OPERATOR_REVERSE_SUBSEQUENCES"], _reverse_sequence,
       restrictions="the lengths broadcast along the time axis as zero strides"),
    _r("CumProd", 26, None, ["DML_OPERATOR_CUMULATIVE_PRODUCT"], _cumprod, static=(1,)),
    _r("Swish", 24, None, ["DML_OPERATOR_ACTIVATION_SWISH"], _swish, restrictions="alpha as SigmoidInputScale"),
    _r("Mish", 18, None, ["DML_OPERATOR_ACTIVATION_SOFTPLUS", "DML_OPERATOR_ACTIVATION_TANH",
                          "DML_OPERATOR_ELEMENT_WISE_MULTIPLY"], _mish,
       restrictions="x * tanh(softplus(x)): DirectML has no Mish activation"),
    _r("GroupNormalization", 18, None, ["DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1", "DML_OPERATOR_ELEMENT_WISE_MULTIPLY",
                                        "DML_OPERATOR_ELEMENT_WISE_ADD"], _group_norm,
       restrictions="the channels reshaped to (groups, channels / groups); scale and bias per channel"),
    _r("RMSNormalization", 23, None, ["DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2"], _rms_norm,
       restrictions="UseMean false, UseVariance true"),
    _r("Trilu", 14, None, ["DML_OPERATOR_ELEMENT_WISE_IF"], _trilu, static=(1,),
       restrictions="k must be static: the triangle is a constant mask"),
    _r("MaxUnpool", 9, None, ["DML_OPERATOR_MAX_UNPOOLING"], _max_unpool, static=(2,),
       restrictions="output_shape must be static"),
    *(_r(op, 17, None, ["DML_OPERATOR_FILL_VALUE_CONSTANT"], _window(kind), static=(0,),
         restrictions="the size must be static: folded to a constant")
      for op, kind in (("HannWindow", "hann"), ("HammingWindow", "hamming"), ("BlackmanWindow", "blackman"))),
    _r("Col2Im", 18, None, ["DML_OPERATOR_FOLD"], _col2im, static=(1, 2),
       restrictions="image_shape and block_shape must be static"),
    _r("CenterCropPad", 18, None, ["DML_OPERATOR_SLICE1", "DML_OPERATOR_PADDING1"], _center_crop_pad, static=(1,),
       restrictions="the shape must be static"),
    _r("RoiAlign", 16, None, ["DML_OPERATOR_ROI_ALIGN1"], _roi_align,
       restrictions="sampling_ratio 0: MinimumSamplesPerOutput 1, MaximumSamplesPerOutput unbounded"),
    _r("NegativeLogLikelihoodLoss", 12, None, ["DML_OPERATOR_GATHER_ELEMENTS", "DML_OPERATOR_ELEMENT_WISE_NEGATE",
                                               "DML_OPERATOR_ELEMENT_WISE_MULTIPLY", "DML_OPERATOR_ELEMENT_WISE_IF",
                                               "DML_OPERATOR_REDUCE"], _nll_loss,
       restrictions="the weights gathered from their broadcast; an ignored target weighs 0"),
    _r("SoftmaxCrossEntropyLoss", 12, None, ["DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1", "DML_OPERATOR_GATHER_ELEMENTS",
                                             "DML_OPERATOR_ELEMENT_WISE_MULTIPLY", "DML_OPERATOR_REDUCE"],
       _softmax_cross_entropy, restrictions="LOG_SOFTMAX1 over the classes, then as NegativeLogLikelihoodLoss"),
    _r("SwiGLU", 28, None, ["DML_OPERATOR_ACTIVATION_SWISH", "DML_OPERATOR_ELEMENT_WISE_MULTIPLY"], _swiglu,
       restrictions="alpha as SigmoidInputScale"),
    _r("RotaryEmbedding", 23, None, ["DML_OPERATOR_GATHER", "DML_OPERATOR_SLICE1", "DML_OPERATOR_ELEMENT_WISE_MULTIPLY",
                                     "DML_OPERATOR_ELEMENT_WISE_SUBTRACT", "DML_OPERATOR_ELEMENT_WISE_ADD",
                                     "DML_OPERATOR_JOIN"], _rotary_embedding),
    _r("AffineGrid", 20, None, ["DML_OPERATOR_GEMM"], _affine_grid, static=(1,),
       restrictions="the size must be static: the base grid is a constant"),
    _r("Einsum", 12, None, ["DML_OPERATOR_GEMM", "DML_OPERATOR_REDUCE", "DML_OPERATOR_ELEMENT_WISE_IDENTITY"], _einsum,
       restrictions="one or two operands: repeated labels as diagonal descs, summed labels by REDUCE SUM, the "
                    "contraction by one GEMM"),
    _r("TensorScatter", 24, None, ["DML_OPERATOR_ELEMENT_WISE_ADD", "DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR",
                                   "DML_OPERATOR_SCATTER_ELEMENTS"], _tensor_scatter,
       restrictions="the positions as write_indices plus a constant ramp"),
    _r("Attention", 23, None, ["DML_OPERATOR_GEMM", "DML_OPERATOR_ACTIVATION_SOFTMAX1", "DML_OPERATOR_ELEMENT_WISE_IF",
                               "DML_OPERATOR_ELEMENT_WISE_ADD", "DML_OPERATOR_ELEMENT_WISE_IDENTITY",
                               "DML_OPERATOR_REDUCE", "DML_OPERATOR_JOIN"], _attention, check_shapes=_attention_shapes,
       restrictions="composed as ONNX's function body: one additive mask, GEMMs, SOFTMAX1; fully masked rows give 0"),
    _r("CausalConvWithState", 27, None, ["DML_OPERATOR_JOIN", "DML_OPERATOR_PADDING1", "DML_OPERATOR_CONVOLUTION",
                                         "DML_OPERATOR_ACTIVATION_SWISH", "DML_OPERATOR_SLICE1"],
       _causal_conv_with_state, restrictions="a depthwise 1-D CONVOLUTION over the state and the input"),
    _r("MelWeightMatrix", 17, None, ["DML_OPERATOR_FILL_VALUE_CONSTANT"], _mel_weight_matrix, static=(0, 1, 2, 3, 4),
       restrictions="every input must be static: folded to a constant"),
    Rule("LinearAttention", 27, None, ("DML_OPERATOR_GEMM", "DML_OPERATOR_ELEMENT_WISE_EXP",
                                       "DML_OPERATOR_ELEMENT_WISE_MULTIPLY", "DML_OPERATOR_ELEMENT_WISE_SUBTRACT",
                                       "DML_OPERATOR_SLICE1", "DML_OPERATOR_JOIN", "DML_OPERATOR_CAST"),
         _linear_attention, check_io=_linear_attention_check,
         restrictions="the recurrence unrolled, one step's operators a token (SLICE1, the outputs JOINed; past "
                      f"{UNROLL} tokens lax.scan around the step), in FLOAT32; the state's write k v^T and the "
                      "read q^T S by GEMM; chunk_size (a tuning hint) has no effect"),
    _r("RNN", 7, None, ["DML_OPERATOR_RNN"], _recurrent, check=_rnn_check),
    _r("GRU", 7, None, ["DML_OPERATOR_GRU"], _recurrent, check=_rnn_check),
    _r("LSTM", 7, None, ["DML_OPERATOR_LSTM"], _recurrent, check=_rnn_check),
    *CONTRIB,
    *PREVIEW,
)

def _control_flow(c: Call):
    raise AssertionError(f"dmljax bug: {c.op_type} is run by the loader (its subgraphs), not lowered")


CONTROL_FLOW = (
    _r("If", 1, None, ("lax.cond around the branches' operators",), _control_flow,
       restrictions="a static condition folds to its branch; otherwise both branches give outputs of one shape and "
                    "type"),
    _r("Loop", 1, None, ("lax.scan or lax.while_loop around the body's operators",), _control_flow,
       restrictions="a static trip count with a condition that stays true: lax.scan (reverse-differentiable); a "
                    "runtime condition: lax.while_loop, without scan outputs; a body that needs its iteration "
                    f"number as a static value is unrolled (at most {UNROLL} iterations); carried values keep "
                    "their shapes"),
    _r("Scan", 8, None, ("lax.scan around the body's operators",), _control_flow,
       restrictions="opset 8: sequence_lens left out (every sequence whole), batches as jax.vmap"),
)
"""The control-flow operators: the loader maps their subgraphs node by node and wraps them in
JAX's structured control flow; they have no DirectML operator of their own."""

TABLE = TABLE + CONTROL_FLOW

FOLDED = ("Shape", "Size", "Constant")
"""Operators that the loader evaluates itself: static by nature, they never reach DirectML."""


def _domain(domain: str) -> str:
    return "" if domain == "ai.onnx" else domain


def rules_for(op_type: str, domain: str = "") -> tuple[Rule, ...]:
    return tuple(r for r in TABLE if r.op_type == op_type and r.domain == _domain(domain))


def find_rule(op_type: str, opset: int, domain: str = "") -> Rule | None:
    """The row for ``op_type`` of ``domain`` at that domain's ``opset``, or None."""
    for r in TABLE:
        if r.op_type == op_type and r.domain == _domain(domain) and r.covers(opset):
            return r
    return None


