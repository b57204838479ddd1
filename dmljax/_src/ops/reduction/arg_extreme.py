"""ARGMIN and ARGMAX (the index of the extreme value over one or more axes), of the reduction
family: each page's record, with one formula for both below them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    INT64_INT32_UINT64_UINT32, DataType,
)
from dmljax._src.enums import AxisDirection
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.extreme_columns import EXTREME_COLUMNS, arg_columns
from dmljax._src.kernels.top_k import ARG_EXTREME_ROWS, top_k_rows
from dmljax._src.numerics import flush_denormals, is_nan
from dmljax._src.op import operator
from dmljax._src.ops.factories import check_axes
from dmljax._src.spec import OpSpec, ParamSpec, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo


def _kept_dims(tensors, attrs, problems) -> dict:
    """"Sizes must match InputTensor.Sizes, except for dimensions included in the reduced Axes,
    which must be size 1"; the DataType is the caller's (output_data_type=)."""
    x, out = tensors["InputTensor"], tensors["OutputTensor"]
    axes = set(attrs["Axes"])
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    return {"OutputTensor": TensorInfo(shape, out.data_type)}


def _keys(x, larger: bool):
    """Integers in the order of ``x``'s values, for an exact arg-extreme: floats flushed (a FLOAT32
    denormal reads as zero) and -0 made +0 (they tie), their bits made order-preserving, and NaN
    given the key that never wins (maxNum/minNum); integers as they are."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x
    if x.dtype == np.float16:  # exact and order-preserving; 32-bit keys (16-bit integer work is slow on GPUs)
        x = x.astype(np.float32)
    sint = {np.dtype(np.float32): np.int32, np.dtype(np.float16): np.int16,
            np.dtype(np.float64): np.int64}[np.dtype(x.dtype)]
    f = flush_denormals(x)
    f = jnp.where(f == 0, jnp.zeros_like(f), f)  # -0 ties with +0
    bits = lax.bitcast_convert_type(f, sint)
    width = np.dtype(sint).itemsize * 8
    key = bits ^ (lax.shift_right_arithmetic(bits, np.asarray(width - 1, sint)) & np.asarray((1 << (width - 1)) - 1, sint))
    info = np.iinfo(sint)
    return jnp.where(is_nan(x), np.asarray(info.min if larger else info.max, sint), key)


def arg_extreme(x, axes, larger: bool, last: bool, out_dtype) -> jnp.ndarray:
    """The index of the first (``last``: the last) maximum (``larger``) or minimum over ``axes``,
    counted in row-major order of the reduced coordinates, as ``out_dtype``. Floats are compared
    as math reads them (FLOAT32 denormals as zero, -0 equal to +0); NaN is never the extreme
    (maxNum/minNum), and a group of NaN only gives its first (last) index. One pass: XLA's
    arg-reduction of order-preserving integer keys, whose ties go to the first index; FLOAT16
    rows on a GPU, the TOP_K kernel with K = 1, and FLOAT16 columns (an axis with elements after
    it) the column kernel (the same keys, the same index)."""
    axes = tuple(sorted(axes))
    route = choose(ARG_EXTREME_ROWS, EXTREME_COLUMNS, facts=(x.shape, axes, x.dtype))  # FLOAT16 on a GPU
    if route.kernel is None:
        return _arg_extreme_xla(x, axes, larger, last).astype(out_dtype)
    if route.kernel is ARG_EXTREME_ROWS:  # the TOP_K kernel with K = 1
        def kernel(v):
            return top_k_rows(v, 1, larger, last)
    else:
        def kernel(v):
            return arg_columns(v, axes[0], larger, last)
    return route.run(lambda v: _arg_extreme_xla(v, axes, larger, last), kernel,
                     jax.lax.stop_gradient(x), lead=axes[0]).astype(out_dtype)


def _arg_extreme_xla(x, axes, larger: bool, last: bool) -> jnp.ndarray:
    """arg_extreme by XLA's arg-reduction of the keys, as int32 (kept dimensions of 1)."""
    keep = tuple(a for a in range(x.ndim) if a not in axes)
    keys = _keys(jax.lax.stop_gradient(x), larger)
    if len(axes) == 1:
        axis = axes[0]
        n = x.shape[axis]
    else:  # the reduced coordinates flattened, in row-major order, last
        moved = jnp.transpose(keys, keep + axes)
        keys = moved.reshape(moved.shape[:len(keep)] + (-1,))
        axis, n = keys.ndim - 1, keys.shape[-1]
    if last:
        keys = lax.rev(keys, (axis,))
    index = (lax.argmax if larger else lax.argmin)(keys, axis, np.int32)
    if last:
        index = np.int32(n - 1) - index
    kept = tuple(1 if a in axes else x.shape[a] for a in range(x.ndim))
    return index.reshape(kept)


def _record(short: str, word: str, example: str, silent: tuple = ()) -> OpSpec:
    ins = (FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8)
    return OpSpec(
        enum_name=PREFIX + short,
        summary=(f"Outputs the indices of the {word}-valued elements within one or more dimensions of the "
                 "input tensor."),
        formula=example,
        tensors=(TensorSpec("InputTensor", "input"),
                 TensorSpec("OutputTensor", "output", default_data_type=DataType.UINT32)),
        support=(table("4.1", InputTensor=("1 to 8", ins[0]), OutputTensor=("1 to 8", INT64_INT32_UINT64_UINT32)),
                 table("3.0", InputTensor=("1 to 8", ins[1]), OutputTensor=("1 to 8", INT64_INT32_UINT64_UINT32))),
        params=(
            ParamSpec("Axes", "UINT[]", count="AxisCount",
                      doc=("The axes along which to reduce. Values must be in the range [0, "
                           "InputTensor.DimensionCount - 1] (a tuple; a desc's AxisCount is its length).")),
            ParamSpec("AxisDirection", "DML_AXIS_DIRECTION", default=AxisDirection.INCREASING, enum=AxisDirection,
                      doc=(f"Which index to select when several elements have the {word} value: "
                           "INCREASING the first, DECREASING the last (default INCREASING, the enum's 0).")),
        ),
        math=False,
        gradient="None: the output is an integer tensor of indices.",
        notes=("The reduced axes are kept with size 1. INT64/UINT64 output types need JAX's 64-bit mode. An "
               "empty Axes or an axis named twice is refused."),
        extra_checks=(check_axes,),
        infer_outputs=_kept_dims,
        silent=silent,
    )


ARGMAX = _record("ARGMAX", "maximum", "argmax({3,2,1,2,3}) = 0\n(DML_AXIS_DIRECTION_INCREASING: the first "
                 "maximum; DECREASING: argmax({3,2,1,2,3}) = 4, the last)")
ARGMIN = _record("ARGMIN", "minimum", "argmin({1,2,3,2,1}) = 0\n(DML_AXIS_DIRECTION_INCREASING: the first "
                 "minimum; DECREASING: argmin({1,2,3,2,1}) = 4, the last)",
    silent=(
        SilentChoice(
            "ARGMIN / ARGMAX with NaN",
            "NaN is never the extreme (maxNum/minNum); a group of NaN only gives its first index (DECREASING: "
            "its last)",
            "[Accumulating operators](semantics.md#accumulating-operators); the tie rule applied to a group "
            "with no number.",
            also=("ARGMAX",)),
        SilentChoice(
            "ARGMIN / ARGMAX index over several axes",
            "row-major order of the tensor's own dimensions, whatever order Axes lists them in",
            "The page's Example 3 (all axes of 3 x 3: 0 to 8) and \"each output index is with respect to the "
            "provided input axes\".",
            also=("ARGMAX",)),
        SilentChoice(
            "ARGMIN / ARGMAX output type",
            "the caller's (`output_data_type=`), default UINT32 as the page's examples",
            "The desc's OutputTensor carries it.",
            also=("ARGMAX",)),
        SilentChoice(
            "ARGMIN / ARGMAX, -0 against +0 and FLOAT32 denormals",
            "equal: the tie rule picks the first (DECREASING: last)",
            "Values compared as math reads them.",
            also=("ARGMAX",)),
    ),
)


@operator(ARGMAX)
def argmax(input, *, axes, axis_direction, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)  # the page's examples
        >>> dmljax.argmax(x, axes=(0,))
        Array([[1, 2, 1]], dtype=uint32)
        >>> dmljax.argmax(x, axes=(0, 1))
        Array([[7]], dtype=uint32)
        >>> dmljax.argmax(np.array([3, 2, 1, 2, 3], np.int32), axes=(0,), axis_direction="DECREASING")
        Array([4], dtype=uint32)
    """
    return arg_extreme(input, axes, True, axis_direction == AxisDirection.DECREASING, output_data_type.dtype)


@operator(ARGMIN)
def argmin(input, *, axes, axis_direction, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)  # the page's examples
        >>> dmljax.argmin(x, axes=(0,))
        Array([[0, 1, 2]], dtype=uint32)
        >>> dmljax.argmin(np.array([1, 2, 3, 2, 1], np.int8), axes=(0,), axis_direction="DECREASING")
        Array([4], dtype=uint32)
    """
    return arg_extreme(input, axes, False, axis_direction == AxisDirection.DECREASING, output_data_type.dtype)
