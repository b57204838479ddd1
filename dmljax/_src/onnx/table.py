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
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.enums import AxisDirection, ConvolutionDirection, DepthSpaceOrder
from dmljax._src.fused import FusedActivation
from dmljax._src.ops import OPERATORS

__all__ = ["Rule", "Call", "TABLE", "CONTROL_FLOW", "UNROLL", "rules_for", "find_rule", "DML"]

DML = OPERATORS
"""dmljax's operators by Python name."""


@dataclasses.dataclass
class Call:
    """One node being lowered: its inputs (arrays, static NumPy values, or None where an optional
    input is left out), its attributes (Python values), how many outputs the graph uses."""

    op_type: str
    opset: int
    inputs: list
    attrs: dict
    output_count: int

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
        inner = dataclasses.replace(c, inputs=[None if x is None else jnp.reshape(_arr(x), (1,)) for x in c.inputs])
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


def _mod(c: Call):
    a, b = _bcast(c.inputs[0], c.inputs[1])
    fn = "element_wise_modulus_truncate" if c.attr("fmod", 0) else "element_wise_modulus_floor"
    return [_dml(fn)(a, b)]


def _where(c: Call):
    cond, a, b = _bcast(c.inputs[0], c.inputs[1], c.inputs[2])
    return [_dml("element_wise_if")(_u8(cond), a, b)]


def _prelu(c: Call):
    slope = _arr(c.inputs[1])
    if c.opset < 7 and slope.ndim == 1 and jnp.ndim(c.inputs[0]) > 2 and slope.size > 1:
        slope = slope.reshape(-1, *([1] * (jnp.ndim(c.inputs[0]) - 2)))  # one slope a channel
    x, slope = _bcast(c.inputs[0], slope)
    return [_dml("activation_parameterized_relu")(x, slope)]


def _is_inf(c: Call):
    neg, pos = c.attr("detect_negative", 1), c.attr("detect_positive", 1)
    mode = "EITHER" if neg and pos else ("POSITIVE" if pos else "NEGATIVE")
    if not neg and not pos:
        return [jnp.zeros(jnp.shape(c.inputs[0]), jnp.bool_)]
    return [_dml("element_wise_is_infinity")(_arr(c.inputs[0]), infinity_mode=mode).astype(jnp.bool_)]


def _is_nan(c: Call):
    return [_dml("element_wise_is_nan")(_arr(c.inputs[0])).astype(jnp.bool_)]


def _not(c: Call):
    return [_dml("element_wise_logical_not")(_u8(c.inputs[0])).astype(jnp.bool_)]


def _bit_shift(c: Call):
    a, b = _bcast(c.inputs[0], c.inputs[1])
    fn = "element_wise_bit_shift_left" if c.attr("direction", b"LEFT") in (b"LEFT", "LEFT") else "element_wise_bit_shift_right"
    return [_dml(fn)(a, b)]


def _round(c: Call):
    return [_dml("element_wise_round")(_arr(c.inputs[0]), rounding_mode="HALVES_TO_NEAREST_EVEN")]


def _gelu_check(attrs: dict, opset: int) -> str | None:
    approx = attrs.get("approximate", b"none")
    return None if approx in (b"none", "none") else "approximate='tanh' has no DirectML operator (ACTIVATION_GELU is the erf form)"


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
    idx = idx.astype(_runtime_dtype(np.int64))
    if c.attr("storage_order", 0):
        raise ValueError("storage_order=1")
    return idx


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
    x = _arr(c.inputs[0])
    scale, bias, mean, var = (_channel(c.inputs[i], x.ndim) for i in (1, 2, 3, 4))
    shape = (1, x.shape[1], *([1] * (x.ndim - 2)))
    if x.ndim < 3:  # DirectML's tensors need a spatial dimension
        y = _dml("batch_normalization")(x.reshape(*x.shape, 1, 1), *(t.reshape(*shape, 1, 1) for t in (mean, var, scale, bias)),
                                        epsilon=float(c.attr("epsilon", 1e-5)))
        return [y.reshape(x.shape)]
    return [_dml("batch_normalization")(x, mean, var, scale, bias, epsilon=float(c.attr("epsilon", 1e-5)))]


def _batch_norm_check(attrs: dict, opset: int) -> str | None:
    if attrs.get("training_mode", 0):
        return "training_mode=1 (running statistics as outputs) is not mapped"
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
    pad = lambda t: t.reshape(t.shape[:b] + (1,) * (rank - t.ndim) + t.shape[b:])  # noqa: E731
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
    if ctm == "tf_crop_and_resize":
        return "coordinate_transformation_mode='tf_crop_and_resize' is not mapped"
    if attrs.get("antialias", 0):
        return "antialias=1 is not mapped"
    if attrs.get("keep_aspect_ratio_policy", b"stretch") not in (b"stretch", "stretch"):
        return "keep_aspect_ratio_policy other than 'stretch' is not mapped"
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
    return [_dml("resample2")(x, interpolation_mode=interp, rounding_direction=direction, scales=tuple(full_scales),
                              input_pixel_offsets=tuple(in_off), output_pixel_offsets=tuple(out_off),
                              output_sizes=tuple(out_sizes))]


# ----------------------------------------------------------------------------------------------
# quantization

def _per_axis(v, x_shape, axis: int):
    v = _arr(v)
    if v.ndim == 0 or v.size == 1:
        return jnp.broadcast_to(v.reshape(()), x_shape)
    shape = [1] * len(x_shape)
    shape[axis] = -1
    return jnp.broadcast_to(v.reshape(shape), x_shape)


def _quantize(c: Call):
    x = _arr(c.inputs[0])
    shape, x = x.shape, x.reshape(x.shape or (1,))  # a scalar as one element (DirectML's tensors have 1 to 8 dimensions)
    axis = _axis(c.attr("axis", 1), max(x.ndim, 1))
    scale = _per_axis(c.inputs[1], x.shape, axis)
    zp = c.input(2)
    if zp is None:
        return [_dml("element_wise_quantize_linear")(x, scale, output_data_type="UINT8").reshape(shape)]
    return [_dml("element_wise_quantize_linear")(x, scale, _per_axis(zp, x.shape, axis)).reshape(shape)]


def _dequantize(c: Call):
    x = _arr(c.inputs[0])
    shape, x = x.shape, x.reshape(x.shape or (1,))
    axis = _axis(c.attr("axis", 1), max(x.ndim, 1))
    scale = _per_axis(c.inputs[1], x.shape, axis)
    zp = c.input(2)
    y = _dml("element_wise_dequantize_linear")(x, scale, None if zp is None else _per_axis(zp, x.shape, axis))
    return [y.reshape(shape)]


def _quant_check(attrs: dict, opset: int) -> str | None:
    if attrs.get("block_size", 0):
        return "blocked quantization (block_size) is not mapped"
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
        wz = wz.reshape(-1, *([1] * (w.ndim - 1)))
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
    return list(_dml("dynamic_quantize_linear")(_arr(c.inputs[0])))


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
    if attrs.get("layout", 0):
        return "layout=1 (batch-major tensors) is not mapped"
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
    Rule("FusedMatMul", 1, None, ("DML_OPERATOR_GEMM",), _fused_matmul, check=_fused_matmul_check,
         restrictions="alpha as GEMM's Alpha, transA/transB as permuted tensor descs; transBatchA/B not mapped",
         domain=_MS),
)
"""ONNX Runtime's contrib operators (domain com.microsoft) that its quantizer and graph optimizers
write into models."""


# ----------------------------------------------------------------------------------------------
# the table

def _r(op_type, since, until, dml, lower, static=(), check=None, restrictions="", domain=""):
    return Rule(op_type, since, until, tuple(dml), lower, tuple(static), check, restrictions, domain)


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
    _r("Gelu", 20, None, ["DML_OPERATOR_ACTIVATION_GELU"], _unary("activation_gelu"), check=_gelu_check,
       restrictions="approximate='none' only"),
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
    _r("MaxPool", 1, None, ["DML_OPERATOR_MAX_POOLING2"], _pool("max"), check=lambda a, o: (
        "storage_order=1 is not mapped" if a.get("storage_order", 0) else None),
       restrictions="ceil_mode adds end padding; the Indices output is DirectML's (flat, row-major)"),
    _r("AveragePool", 1, None, ["DML_OPERATOR_AVERAGE_POOLING1"], _pool("average"),
       restrictions="ceil_mode adds end padding"),
    _r("LpPool", 2, None, ["DML_OPERATOR_LP_POOLING1"], _pool("lp")),
    _r("GlobalAveragePool", 1, None, ["DML_OPERATOR_REDUCE"], _global_pool("average"),
       restrictions="REDUCE AVERAGE over the spatial axes"),
    _r("GlobalMaxPool", 1, None, ["DML_OPERATOR_REDUCE"], _global_pool("max"),
       restrictions="REDUCE MAX over the spatial axes"),
    _r("GlobalLpPool", 2, None, ["DML_OPERATOR_LP_POOLING1"], _global_pool("lp")),
    _r("BatchNormalization", 1, None, ["DML_OPERATOR_BATCH_NORMALIZATION"], _batch_norm, check=_batch_norm_check,
       restrictions="inference only (training_mode=0)"),
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
    _r("Resize", 10, None, ["DML_OPERATOR_RESAMPLE2"], _resize, static=(1, 2, 3), check=_resize_modes,
       restrictions="nearest/linear; coordinate modes as InputPixelOffsets/OutputPixelOffsets, nearest modes as "
                    "RoundingDirection; scales and sizes must be static"),
    _r("Upsample", 7, 9, ["DML_OPERATOR_RESAMPLE2"], _resize, static=(1,), check=_resize_modes),
    _r("QuantizeLinear", 10, None, ["DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR"], _quantize, check=_quant_check,
       restrictions="UINT8/INT8 outputs; scale and zero point broadcast along `axis`"),
    _r("DequantizeLinear", 10, None, ["DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR"], _dequantize, check=_quant_check),
    _r("DynamicQuantizeLinear", 11, None, ["DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR"], _dynamic_quantize),
    _r("MatMulInteger", 10, None, ["DML_OPERATOR_MATRIX_MULTIPLY_INTEGER"], _matmul_integer),
    _r("QLinearMatMul", 10, None, ["DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY"], _qlinear_matmul),
    _r("ConvInteger", 10, None, ["DML_OPERATOR_CONVOLUTION_INTEGER"], _conv_integer),
    _r("QLinearConv", 10, None, ["DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION"], _qlinear_conv),
    _r("RNN", 7, None, ["DML_OPERATOR_RNN"], _recurrent, check=_rnn_check),
    _r("GRU", 7, None, ["DML_OPERATOR_GRU"], _recurrent, check=_rnn_check),
    _r("LSTM", 7, None, ["DML_OPERATOR_LSTM"], _recurrent, check=_rnn_check),
    *CONTRIB,
)

def _control_flow(c: Call):
    raise AssertionError(f"dmljax bug: {c.op_type} is run by the loader (its subgraphs), not lowered")


UNROLL = 256
"""The most iterations a Loop is unrolled to (when its body needs the iteration number static)."""

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


