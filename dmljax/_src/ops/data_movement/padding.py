"""PADDING, PADDING1 and TILE, of the data_movement family: each page's record, with one index
formula for every DML_PADDING_MODE below them."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, DataType,
)
from dmljax._src.enums import PaddingMode
from dmljax._src.errors import Violation
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.kernel_seam import Route, choose
from dmljax._src.kernels.padding import PADDING_ROWS, pad_rows, source_index
from dmljax._src.numerics import attr_as
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import MAX_ELEMENTS, TensorInfo

_ALL = FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
_THREE = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8
_MODE_LEVELS = {PaddingMode.SYMMETRIC: FeatureLevel.parse("3.0"), PaddingMode.WRAP: FeatureLevel.parse("6.4")}


def _sliced(x, axis: int, s: int, e: int, mode: PaddingMode):
    """The padded axis as slices of x (reversed for the mirrors) around it, as jnp.pad builds
    it, or None where a pad reaches past what one fold gives (REFLECTION: n - 1 elements,
    SYMMETRIC and WRAP: n), which the periodic gather takes."""
    n = x.shape[axis]
    reach = {PaddingMode.REFLECTION: n - 1, PaddingMode.SYMMETRIC: n, PaddingMode.WRAP: n}.get(mode)
    if reach is not None and (s > reach or e > reach):
        return None

    def part(lo, hi, rev=False):
        piece = lax.slice_in_dim(x, lo, hi, axis=axis)
        return lax.rev(piece, (axis,)) if rev else piece

    def edge(i, count):
        piece = lax.slice_in_dim(x, i, i + 1, axis=axis)
        return jnp.broadcast_to(piece, piece.shape[:axis] + (count,) + piece.shape[axis + 1:])

    left = {PaddingMode.EDGE: lambda: edge(0, s), PaddingMode.REFLECTION: lambda: part(1, s + 1, True),
            PaddingMode.SYMMETRIC: lambda: part(0, s, True), PaddingMode.WRAP: lambda: part(n - s, n)}[mode]
    right = {PaddingMode.EDGE: lambda: edge(n - 1, e), PaddingMode.REFLECTION: lambda: part(n - 1 - e, n - 1, True),
             PaddingMode.SYMMETRIC: lambda: part(n - e, n, True), PaddingMode.WRAP: lambda: part(0, e)}[mode]
    return lax.concatenate(([left()] if s else []) + [x] + ([right()] if e else []), axis)


def pad(x, mode: PaddingMode, value, start, end):
    """``x`` padded by ``start``/``end`` elements per dimension in ``mode`` (value: a scalar of
    x's type, for CONSTANT): lax.pad for CONSTANT; EDGE on CUDA, one Pallas kernel that writes
    the padded tensor in one pass (kernels/padding.py, ``PADDING_ROWS``); otherwise, per padded
    dimension, slices of x around it (mirrored where the mode mirrors), or for a pad longer than
    one fold a gather of indices fixed at trace time (kernels/padding.py's ``source_index``, the
    kernels' map, in NumPy)."""
    if mode is PaddingMode.CONSTANT:
        return lax.pad(x, jnp.asarray(value, x.dtype), [(s, e, 0) for s, e in zip(start, end)])
    start, end = tuple(int(s) for s in start), tuple(int(e) for e in end)
    route = choose(PADDING_ROWS, facts=(x.shape, x.dtype, mode, start, end))
    if route.kernel is None:
        return _pad_xla(x, mode, start, end)
    if jnp.issubdtype(x.dtype, jnp.floating):
        return _pad_cuda_differentiable(x, route, mode, start, end)
    return _pad_cuda(x, route, mode, start, end)


def _pad_cuda(x, route: Route, mode, start, end):
    unpadded = next((d for d, (s, e) in enumerate(zip(start, end)) if s or e), x.ndim)  # leading axes not padded
    return route.run(lambda v: _pad_xla(v, mode, start, end), lambda v: pad_rows(v, mode, start, end), x,
                     lead=unpadded)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3, 4))
def _pad_cuda_differentiable(x, route: Route, mode, start, end):
    return _pad_cuda(x, route, mode, start, end)


@_pad_cuda_differentiable.defjvp
def _pad_cuda_jvp(route, mode, start, end, primals, tangents):
    # PADDING is linear: the tangent is the tangent padded, by the XLA formula, which JAX can
    # transpose for reverse mode (dY of every output element added to the element it was read
    # from); the primal stays the kernel's. Forward mode works too, as a custom_vjp would not.
    (x,), (t,) = primals, tangents
    return _pad_cuda(x, route, mode, start, end), _pad_xla(t, mode, start, end)


def _pad_xla(x, mode: PaddingMode, start, end):
    for axis, (s, e) in enumerate(zip(start, end)):
        if s == 0 and e == 0:
            continue
        y = _sliced(x, axis, s, e, mode)
        if y is None:
            n = x.shape[axis]
            index = source_index(np.arange(s + n + e), n, s, mode, np)
            y = jnp.take(x, jnp.asarray(index, np.int32), axis=axis)
        x = y
    return x


def _padding_checks(tensors, attrs, level) -> list[Violation]:
    """StartPadding and EndPadding have DimensionCount entries; a mode exists at the level
    (SYMMETRIC from DML_FEATURE_LEVEL_3_0, WRAP from 6.4, the feature-level history says);
    REFLECTION cannot pad an axis of one element (its period, 2(n - 1), is 0)."""
    x, mode, start, end = (tensors.get("InputTensor"), attrs.get("PaddingMode"), attrs.get("StartPadding"),
                           attrs.get("EndPadding"))
    problems = []
    if mode in _MODE_LEVELS and level < _MODE_LEVELS[mode]:
        problems.append(Violation("PaddingMode", "padding_mode", f"is {mode.dml_name}",
                                  f"a mode of {level.dml_name}: " + ", ".join(
                                      m.name for m in PaddingMode if _MODE_LEVELS.get(m, level) <= level),
                                  f"{mode.name} is accepted from {_MODE_LEVELS[mode].dml_name}"))
    if x is None or start is None or end is None:
        return problems
    n = len(x.shape)
    for name, arr in (("StartPadding", start), ("EndPadding", end)):
        if len(arr) != n:
            problems.append(Violation(name, "start_padding" if name == "StartPadding" else "end_padding",
                                      f"has {len(arr)} entries", f"DimensionCount ({n}) entries, one per dimension"))
    if problems:
        return problems
    if mode is PaddingMode.REFLECTION:
        for i, (s, e) in enumerate(zip(start, end)):
            if x.shape[i] == 1 and (s or e):
                problems.append(Violation(
                    "PaddingMode", "padding_mode", f"is REFLECTION and dimension {i} has one element, padded by "
                    f"{s} and {e}", "an axis of at least 2 elements (a reflection of one element has no values "
                    "to fold: its period, 2(n - 1), is 0)", "use EDGE or SYMMETRIC, which repeat it"))
    return problems


def _padded(tensors, attrs, problems) -> dict:
    """"OutputTensor.Sizes[i] = InputTensor.Sizes[i] + StartPadding[i] + EndPadding[i]"."""
    x = tensors["InputTensor"]
    shape = tuple(s + a + b for s, a, b in zip(x.shape, attrs["StartPadding"], attrs["EndPadding"]))
    if math.prod(shape) > MAX_ELEMENTS:
        problems.append(Violation("OutputTensor", "", f"would have {math.prod(shape)} elements (Sizes {list(shape)})",
                                  "a DirectML tensor holds at most 2^32 - 1 elements"))
    return {"OutputTensor": TensorInfo(shape, x.data_type)}


_PADS = (
    ParamSpec("StartPadding", "UINT[]", count="DimensionCount",
              doc="The sizes of the padding regions to add at the beginning of each dimension."),
    ParamSpec("EndPadding", "UINT[]", count="DimensionCount",
              doc="The sizes of the padding regions to add at the end of each dimension."),
)
_MODE = ParamSpec("PaddingMode", "DML_PADDING_MODE", enum=PaddingMode,
                  doc=("CONSTANT, EDGE, REFLECTION, SYMMETRIC (from DML_FEATURE_LEVEL_3_0) or WRAP (from 6.4) "
                       "(required: the page gives no default)."))
_NOTES = (
    "WRAP (not described on the page; the feature-level history adds it at 6.4) repeats the axis. {value} The output holds at most 2^32 - 1 elements. "
    "Bit-exact data movement: the input's bits are copied, the PaddingValue's written.")
_FORMULA = ("PaddingMode: DML_PADDING_MODE_CONSTANT\n(the page's Example 1: StartPadding {{0, 0, 1, 2}} and "
            "EndPadding {{0, 0, 3, 4}} around a 4 x 4 input give 8 x 10, the padding 9; EDGE repeats the edges, "
            "REFLECTION mirrors without them, SYMMETRIC with them{extra})")

PADDING = OpSpec(
    enum_name=PREFIX + "PADDING",
    summary=("Inflates the input tensor with constant or mirrored values on the edges, and writes the result "
             "to the output."),
    formula=_FORMULA.format(extra=""),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(
        table("5.0", InputTensor=("1 to 8", _ALL), OutputTensor=("1 to 8", _ALL)),
        table("3.1", InputTensor=("1 to 8", _THREE), OutputTensor=("1 to 8", _THREE)),
        table("2.1", InputTensor=("4 to 5", _THREE), OutputTensor=("4 to 5", _THREE)),
        table("1.0", InputTensor=("4 to 5", FLOAT32_FLOAT16), OutputTensor=("4 to 5", FLOAT32_FLOAT16)),
    ),
    params=(_MODE,
            ParamSpec("PaddingValue", "FLOAT", default=0.0, converted_to="InputTensor",
                      doc=("The value CONSTANT pads with (ignored otherwise; default 0, a zeroed desc's); "
                           "for integer tensors truncated toward zero and saturated.")),
            *_PADS),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient=("dInput = dY of the input's own region plus, for EDGE, REFLECTION, SYMMETRIC and WRAP, dY of every "
              "padding element copied from it (the gathers' transpose); integer inputs: none."),
    notes=_NOTES.format(value=("PaddingValue is a FLOAT: for integer tensors it is truncated toward zero and "
                               "saturated (the page: 'might be truncated'); NaN is refused for them.")),
    extra_checks=(_padding_checks,),
    infer_outputs=_padded,
    silent=(
        SilentChoice(
            "PADDING / PADDING1 pads longer than the axis",
            "REFLECTION and SYMMETRIC fold periodically (periods 2(n - 1) and 2n), as the page says such pads "
            "are valid; REFLECTION refuses an axis of one element (period 0)",
            "The page's \"mirror new padding regions periodically\".",
            also=("PADDING1",)),
        SilentChoice(
            "PADDING's PaddingValue and mode",
            "PaddingValue defaults to 0 (a zeroed desc's; only CONSTANT reads it), truncated and saturated for "
            "integer tensors; PaddingMode required; SYMMETRIC from 3.0, WRAP (absent from the pages) from 6.4",
            "The page: the value \"might be truncated\"; the feature-level history for the modes.",
            also=("PADDING1",)),
    ),
)


@operator(PADDING)
def padding(input, *, padding_mode, padding_value, start_padding, end_padding):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
        >>> dmljax.padding(x, padding_mode="REFLECTION", start_padding=(0, 2), end_padding=(0, 4))
        Array([[3., 2., 1., 2., 3., 4., 3., 2., 1., 2.],
               [7., 6., 5., 6., 7., 8., 7., 6., 5., 6.]], dtype=float32)
        >>> dmljax.padding(x.astype(np.int8), padding_mode="CONSTANT", padding_value=-9.7,
        ...                start_padding=(0, 1), end_padding=(0, 0))
        Array([[-9,  1,  2,  3,  4],
               [-9,  5,  6,  7,  8]], dtype=int8)
    """
    value = attr_as(padding_value, DataType.from_dtype(input.dtype))
    return pad(input, padding_mode, value, start_padding, end_padding)


PADDING1 = OpSpec(
    enum_name=PREFIX + "PADDING1",
    summary=("Inflates the input tensor with constant or mirrored values on the edges, and writes the result "
             "to the output."),
    formula=_FORMULA.format(extra="; the PaddingValue a DML_SCALAR_UNION of PaddingValueDataType"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(table("5.0", InputTensor=("1 to 8", _ALL), OutputTensor=("1 to 8", _ALL)),),
    params=(_MODE,
            ParamSpec("PaddingValueDataType", "DML_TENSOR_DATA_TYPE", default=None, converted_to="OutputTensor",
                      doc=("The data type of PaddingValue, which must match OutputTensor.DataType (None: that "
                           "DataType).")),
            ParamSpec("PaddingValue", "DML_SCALAR_UNION", default=0, converted_to="OutputTensor",
                      doc=("The value CONSTANT pads with, read as OutputTensor's DataType and refused unless "
                           "representable in it (ignored otherwise; default 0).")),
            *_PADS),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient=PADDING.gradient,
    notes=_NOTES.format(value=("PaddingValue is a DML_SCALAR_UNION of the tensor's own type: an integer "
                               "tensor's full range (INT64 and UINT64 included) is exact.")),
    extra_checks=(_padding_checks,),
    infer_outputs=_padded,
)


@operator(PADDING1)
def padding1(input, *, padding_mode, padding_value_data_type, padding_value, start_padding, end_padding):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.uint8)
        >>> dmljax.padding1(x, padding_mode="SYMMETRIC", start_padding=(0, 2), end_padding=(0, 4))
        Array([[2, 1, 1, 2, 3, 4, 4, 3, 2, 1],
               [6, 5, 5, 6, 7, 8, 8, 7, 6, 5]], dtype=uint8)
        >>> dmljax.padding1(x, padding_mode="CONSTANT", padding_value=255, start_padding=(1, 0), end_padding=(0, 0))
        Array([[255, 255, 255, 255],
               [  1,   2,   3,   4],
               [  5,   6,   7,   8]], dtype=uint8)
    """
    return pad(input, padding_mode, padding_value.as_numpy(), start_padding, end_padding)


def _tiled(tensors, attrs, problems) -> dict:
    """"OutputTensor.Sizes[i] = InputTensor.Sizes[i] * Repeats[i]"."""
    x, repeats = tensors["InputTensor"], attrs["Repeats"]
    shape = tuple(s * r for s, r in zip(x.shape, repeats))
    if math.prod(shape) > MAX_ELEMENTS:
        problems.append(Violation("OutputTensor", "", f"would have {math.prod(shape)} elements (Sizes {list(shape)})",
                                  "a DirectML tensor holds at most 2^32 - 1 elements"))
    return {"OutputTensor": TensorInfo(shape, x.data_type)}


def _repeats_rules(tensors, attrs, level) -> list[Violation]:
    """RepeatsCount "must be the same as the InputTensor.DimensionCount"; the values "must be
    larger than 0"."""
    x, repeats = tensors.get("InputTensor"), attrs.get("Repeats")
    if x is None or repeats is None:
        return []
    if len(repeats) != len(x.shape):
        return [Violation("Repeats", "repeats", f"has {len(repeats)} entries",
                          f"the InputTensor's DimensionCount ({len(x.shape)}) entries")]
    return [Violation(f"Repeats[{i}]", "repeats", f"is {r}", "larger than 0") for i, r in enumerate(repeats) if r < 1]


TILE = OpSpec(
    enum_name=PREFIX + "TILE",
    summary="Constructs an output tensor by tiling the input tensor.",
    formula=("Repeats: {1, 1, 3, 3}\n(the page's example: a {1, 1, 2, 3} input repeated 3 x 3 gives {1, 1, 6, 9}; "
             "output[i] = input[i mod InputTensor.Sizes])"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(
        table("4.1", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
              OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8)),
        table("3.1", InputTensor=("1 to 8", _THREE), OutputTensor=("1 to 8", _THREE)),
        table("2.1", InputTensor=("4", _THREE), OutputTensor=("4", _THREE)),
        table("1.0", InputTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", FLOAT32_FLOAT16)),
    ),
    params=(ParamSpec("Repeats", "UINT[]", count="RepeatsCount",
                      doc="The number of tiled copies of each dimension, in order; each larger than 0."),),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient="dInput = the sum of dY over every copy (the tiling's transpose); integer inputs: none.",
    notes="Bit-exact data movement; the output holds at most 2^32 - 1 elements.",
    extra_checks=(_repeats_rules,),
    infer_outputs=_tiled,
)


@operator(TILE)
def tile(input, *, repeats):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.tile(np.array([[1, 2, 3], [4, 5, 6]], np.float32), repeats=(2, 2))
        Array([[1., 2., 3., 1., 2., 3.],
               [4., 5., 6., 4., 5., 6.],
               [1., 2., 3., 1., 2., 3.],
               [4., 5., 6., 4., 5., 6.]], dtype=float32)
    """
    return tiled(input, tuple(repeats))


CONCATENATED = 32
"""A dimension repeated up to this many times is its copies concatenated (one XLA concatenation,
which writes at 0.97-0.98 of a copy's bandwidth on the H100 where jnp.tile's broadcast and
reshape write at 0.70-0.83; measured by benchmarks/data_movement/data_movement.py); more repeats
take the broadcast, whose program does not grow with the count."""


def tiled(x, repeats: tuple[int, ...]):
    """``x`` repeated ``repeats[i]`` times along each dimension i (np.tile's result), the last
    dimension first (the outer concatenations then copy whole rows: on the H100 the other order
    wrote at jnp.tile's rate)."""
    for axis in reversed(range(len(repeats))):
        r = repeats[axis]
        if r == 1:
            continue
        if r <= CONCATENATED:
            x = lax.concatenate([x] * r, axis)
        else:
            x = jnp.tile(x, tuple(r if i == axis else 1 for i in range(x.ndim)))
    return x
