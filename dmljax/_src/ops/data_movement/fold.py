"""FOLD and UNFOLD, of the data_movement family: each page's record, with the sliding-window
geometry both share and the two formulas, each other's transpose, below them.

UNFOLD copies every window of a (N, C, spatial...) tensor into a column of an (N, C x prod(W),
BlockCount) tensor; FOLD adds such columns back into place, summing where windows overlap."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, DataType
from dmljax._src.errors import Violation
from dmljax._src.numerics import load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, PageSlip, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import MAX_ELEMENTS, TensorInfo
from dmljax._src.window import array_violations, fit_violations, spread_windows, window_offsets
from dmljax._src.window import windows_per_dimension as blocks_per_dimension

_ALL = FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
_WINDOW = ("WindowSizes", "Strides", "Dilations", "StartPadding", "EndPadding")
_SLICED = 64  # windows of up to this many positions: one strided slice (or pad) each; more: one gather


def _gather_index(padded, window, strides, dilations, blocks) -> np.ndarray:
    """The flat index (into the padded spatial block) of window position k of block l: (K, L)."""
    grids = np.meshgrid(*[np.arange(b) * t for b, t in zip(blocks, strides)], indexing="ij")
    starts = np.ravel_multi_index([g.ravel() for g in grids], padded) if grids else np.zeros(1, np.int64)
    offs = np.array([np.ravel_multi_index(o, padded) for o in window_offsets(window, dilations)], np.int64)
    return offs[:, None] + starts[None, :]


def columns(x, window, strides, dilations, start, end):
    """UNFOLD's core: (N, C, spatial...) -> (N, C * prod(window), BlockCount), zeros outside."""
    n, c, *spatial = x.shape
    blocks = blocks_per_dimension(spatial, window, strides, dilations, start, end)
    xp = lax.pad(x, jnp.zeros((), x.dtype), [(0, 0, 0), (0, 0, 0)] + [(a, b, 0) for a, b in zip(start, end)])
    k, count = math.prod(window), math.prod(blocks)
    if k <= _SLICED:
        parts = [lax.slice(xp, (0, 0, *o), (n, c, *(oi + (b - 1) * t + 1 for oi, b, t in zip(o, blocks, strides))),
                           (1, 1, *strides)) for o in window_offsets(window, dilations)]
        cols = jnp.stack(parts, axis=2)  # (N, C, K, blocks...)
    else:
        idx = _gather_index(xp.shape[2:], window, strides, dilations, blocks)
        cols = jnp.take(xp.reshape(n, c, -1), jnp.asarray(idx, np.int32), axis=2)  # (N, C, K, L)
    return cols.reshape(n, c * k, count)


def places(cols, spatial, window, strides, dilations, start, end):
    """FOLD's core: (N, C * prod(window), BlockCount) -> (N, C, spatial...), overlaps added (in
    the columns' own dtype: the caller chose the accumulation type)."""
    n, ck, _ = cols.shape
    k = math.prod(window)
    c = ck // k
    blocks = blocks_per_dimension(spatial, window, strides, dilations, start, end)
    if k <= _SLICED:
        parts = cols.reshape(n, c, k, *blocks)
        return spread_windows(lambda i, _: parts[:, :, i], spatial, window, strides, dilations, start, end)
    padded = tuple(s + a + b for s, a, b in zip(spatial, start, end))
    idx = _gather_index(padded, window, strides, dilations, blocks)
    flat = jnp.zeros((n, c, math.prod(padded)), cols.dtype)
    total = flat.at[:, :, jnp.asarray(idx.ravel(), np.int32)].add(cols.reshape(n, c, -1), mode="promise_in_bounds")
    total = total.reshape(n, c, *padded)
    return lax.slice(total, (0, 0, *start), (n, c, *(a + s for a, s in zip(start, spatial))))


# ------------------------------------------------------------------------------ validation
def _geometry_checks(spatial_tensor: str, columns_tensor: str):
    """The five arrays have DimensionCount entries, the spatial tensor's dimensions past N and C
    (1 to 6); window sizes, strides and dilations are at least 1; every dimension holds at least
    one block; the columns tensor is (N, C x prod(WindowSizes), BlockCount), leading 1s allowed
    (the page asks both tensors for the same DimensionCount, its examples do not give it)."""

    def check(tensors, attrs, level) -> list[Violation]:
        sp, cols = tensors.get(spatial_tensor), tensors.get(columns_tensor)
        arrays = {n: attrs.get(n) for n in _WINDOW}
        if sp is None or not sp.shape or any(v is None for v in arrays.values()):
            return []
        dims = len(sp.shape) - 2
        if not 1 <= dims <= 6:
            return [Violation(spatial_tensor, "", f"has {len(sp.shape)} dimensions (Sizes {list(sp.shape)})",
                              "N, C and 1 to 6 spatial dimensions (DimensionCount 1 to 6)")]
        problems = array_violations(spatial_tensor, sp.shape, arrays)
        if problems:
            return problems
        spatial = sp.shape[2:]
        blocks = blocks_per_dimension(spatial, *(arrays[n] for n in _WINDOW))
        problems = fit_violations(spatial, *(arrays[n] for n in _WINDOW), what="a dimension must hold at least one block")
        if problems or cols is None or not cols.shape:
            return problems
        want = (sp.shape[0], sp.shape[1] * math.prod(arrays["WindowSizes"]), math.prod(blocks))
        if not (3 <= len(cols.shape) and cols.shape[-3:] == want and all(s == 1 for s in cols.shape[:-3])):
            problems.append(Violation(
                columns_tensor, "input" if columns_tensor == "InputTensor" else "output_sizes",
                f"has Sizes {list(cols.shape)}",
                f"(N, C x prod(WindowSizes), BlockCount) = {list(want)} for the {spatial_tensor}'s Sizes "
                f"{list(sp.shape)} (leading 1s allowed)"))
        return problems
    return check


def _unfolded(tensors, attrs, problems) -> dict:
    """UNFOLD's OutputTensor: (N, C x prod(WindowSizes), BlockCount), or the caller's Sizes with
    leading 1s (checked above)."""
    x, out = tensors["InputTensor"], tensors.get("OutputTensor")
    if out is not None and out.shape:
        return {"OutputTensor": TensorInfo(out.shape, x.data_type)}
    blocks = blocks_per_dimension(x.shape[2:], *(attrs[n] for n in _WINDOW))
    shape = (x.shape[0], x.shape[1] * math.prod(attrs["WindowSizes"]), math.prod(blocks))
    if math.prod(shape) > MAX_ELEMENTS:
        problems.append(Violation("OutputTensor", "", f"would have {math.prod(shape)} elements (Sizes {list(shape)})",
                                  "a DirectML tensor holds at most 2^32 - 1 elements"))
    return {"OutputTensor": TensorInfo(shape, x.data_type)}


def _params(dims: str) -> tuple[ParamSpec, ...]:
    docs = {"WindowSizes": "The size of the sliding window in each spatial dimension.",
            "Strides": "The window's step in each spatial dimension (at least 1; not the tensors' strides).",
            "Dilations": "The spacing of the window's elements in each spatial dimension (at least 1).",
            "StartPadding": "Implicit zeros before each spatial dimension of the image-shaped tensor.",
            "EndPadding": "Implicit zeros after each spatial dimension of the image-shaped tensor."}
    return tuple(ParamSpec(n, "UINT[]", count="DimensionCount", doc=f"{docs[n]} DimensionCount is {dims}.")
                 for n in _WINDOW)


_GEOMETRY = ("BlocksPerDimension[d] = ((SpatialSize[d] + StartPadding[d] + EndPadding[d] - Dilations[d] * "
             "(WindowSizes[d] - 1) - 1) / stride[d]) + 1 (floor division), BlockCount their product; "
             "DimensionCount is the number of spatial dimensions (the five arrays' length), 1 to 6.")
_TYPES = ("The page's table leaves the data types blank: the record takes the eleven types of the other "
          "DML_FEATURE_LEVEL_6_4 data-movement tables (FLOAT64 to UINT8).")

UNFOLD = OpSpec(
    enum_name=PREFIX + "UNFOLD",
    summary="Extracts sliding local blocks from a batched input tensor.",
    formula=("BlocksPerDimension[d] = ( ( SpatialSize[d] + StartPadding[d] + EndPadding[d] - Dilations[d] * "
             "(WindowSizes[d] - 1) - 1 ) / stride[d] ) + 1\nOutputTensor[n, c * prod(WindowSizes) + k, l] = "
             "padded InputTensor[n, c, start(l) + offset(k) * Dilations] (0 in the padding)"),
    tensors=(TensorSpec("InputTensor", "input"),
             TensorSpec("OutputTensor", "output", sizes_arg=True, sizes_default=True)),
    support=(table("6.4", InputTensor=("3 to 8", _ALL), OutputTensor=("3 to 8", _ALL)),),
    params=_params("the InputTensor's dimensions after N and C"),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient=("dInputTensor = FOLD of dOutputTensor with the same window (every copy of an element adds its "
              "gradient), accumulated in FLOAT32 for FLOAT16 and rounded once; integer inputs: none."),
    notes=" ".join((_GEOMETRY,
                    "Bit-exact data movement: each element's bits are copied, the padding writes zeros.")),
    extra_checks=(_geometry_checks("InputTensor", "OutputTensor"),),
    infer_outputs=_unfolded,
    page_slip=PageSlip(
        blank_types=True,
        why=_TYPES),
)


@operator(UNFOLD)
def unfold(input, *, window_sizes, strides, dilations, start_padding, end_padding, output_sizes):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
        >>> dmljax.unfold(x, window_sizes=(2, 2), strides=(1, 1), dilations=(1, 1),
        ...               start_padding=(0, 0), end_padding=(0, 0))
        Array([[[0., 1., 3., 4.],
                [1., 2., 4., 5.],
                [3., 4., 6., 7.],
                [4., 5., 7., 8.]]], dtype=float32)
    """
    geometry = (window_sizes, strides, dilations, start_padding, end_padding)
    spatial = input.shape[2:]

    def run(x):
        return columns(x, *geometry)

    def run_fwd(x):
        return run(x), None

    def run_bwd(_, dy):
        dt = DataType.from_dtype(dy.dtype)
        return (store(places(load(dy, flush=False), spatial, *geometry), dt),)

    run = backward_rule(run, run_fwd, run_bwd)
    out = columns(input, *geometry) if not jnp.issubdtype(input.dtype, jnp.floating) else run(input)
    return out.reshape(output_sizes)


FOLD = OpSpec(
    enum_name=PREFIX + "FOLD",
    summary="Combines an array of patches formed from a sliding window into a large containing tensor.",
    formula=("BlocksPerDimension[d] = ( ( SpatialSize[d] + StartPadding[d] + EndPadding[d] - Dilations[d] * "
             "(WindowSizes[d] - 1) - 1 ) / stride[d] ) + 1\nOutputTensor[n, c, p] = sum over the (k, l) whose "
             "window element lands on p of InputTensor[n, c * prod(WindowSizes) + k, l] (the padding dropped)"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output", sizes_arg=True)),
    support=(table("6.4", InputTensor=("3 to 8", _ALL), OutputTensor=("3 to 8", _ALL)),),
    params=_params("the OutputTensor's dimensions after N and C"),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    ulp={DataType.FLOAT64: 1, DataType.FLOAT32: 1, DataType.FLOAT16: 1},
    ulp_half=1,
    ulp_growth=lambda sizes, attrs: _fold_growth(attrs),
    math=True,
    gradient=("dInputTensor = UNFOLD of dOutputTensor with the same window (each column element's gradient is "
              "the output element it was added to); integer inputs: none."),
    notes=" ".join((_GEOMETRY, "The OutputTensor's Sizes (N, C, spatial...) are the caller's (output_sizes=), "
                    "as the desc's OutputTensor gives them; the InputTensor must be (N, C x prod(WindowSizes), "
                    "BlockCount) for them.",
                    "Overlapping values are summed: FLOAT16 in FLOAT32 (unless allow_half_precision_computation), "
                    "rounded once; integers wrap around, as two's complement sums do; the order of the additions "
                    "is not DirectML's to promise (docs/semantics.md#accumulating-operators): a budget of prod(WindowSizes) rounding units "
                    "of the terms' magnitude.")),
    extra_checks=(_geometry_checks("OutputTensor", "InputTensor"),),
    page_slip=PageSlip(
        blank_types=True,
        why=_TYPES),
    silent=(
        SilentChoice(
            "FOLD / UNFOLD's data types and column tensor",
            "the eleven types FLOAT64 to UINT8; the column tensor is (N, C x prod(WindowSizes), BlockCount), "
            "row c * prod(WindowSizes) + window position (row-major), column the block (row-major), and may "
            "carry leading 1s; UNFOLD's `output_sizes=` is optional (the 3-D Sizes)",
            "The pages' tables leave the data types blank. Their text and examples give a 3-D column tensor "
            "beside a 4-D image, where the constraints ask for the same DimensionCount: both readings are "
            "accepted.",
            also=("UNFOLD",)),
        SilentChoice(
            "FOLD's sums",
            "FLOAT16 in FLOAT32, rounded once (FLOAT16 arithmetic with "
            "`allow_half_precision_computation=True`); integers wrap; a budget of prod(WindowSizes) rounding "
            "units of the terms' magnitude",
            "[Accumulating operators](semantics.md#accumulating-operators): the order of the additions is not "
            "documented."),
    ),
)


def _fold_growth(attrs) -> dict:
    """An output element sums at most prod(WindowSizes) terms (docs/semantics.md#accumulating-operators, as REDUCE's)."""
    w = attrs.get("WindowSizes")
    n = math.prod(w) if isinstance(w, (tuple, list)) and all(isinstance(v, int) for v in w) else 1
    return {DataType.FLOAT64: n, DataType.FLOAT32: n, DataType.FLOAT16: math.ceil(n / 8192), "half": n}


@operator(FOLD)
def fold(input, *, window_sizes, strides, dilations, start_padding, end_padding, output_sizes,
         allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> cols = np.ones((1, 4, 4), np.float32)  # four 2 x 2 windows of ones over a 3 x 3 image
        >>> dmljax.fold(cols, window_sizes=(2, 2), strides=(1, 1), dilations=(1, 1), start_padding=(0, 0),
        ...             end_padding=(0, 0), output_sizes=(1, 1, 3, 3))[0, 0]
        Array([[1., 2., 1.],
               [2., 4., 2.],
               [1., 2., 1.]], dtype=float32)
    """
    geometry = (window_sizes, strides, dilations, start_padding, end_padding)
    spatial = tuple(output_sizes[2:])
    k = math.prod(window_sizes)
    n, c = output_sizes[0], output_sizes[1]
    x = input.reshape(n, c * k, -1)
    dt = DataType.from_dtype(input.dtype)
    if dt.is_integer:
        return places(x, spatial, *geometry)

    def run(v):
        return store(places(load(v, allow_half_precision_computation), spatial, *geometry), dt)

    def run_fwd(v):
        return run(v), None

    def run_bwd(_, dy):
        return (columns(dy, *geometry),)

    run = backward_rule(run, run_fwd, run_bwd)
    out = run(x)
    if dt is DataType.FLOAT32:
        mark_flushed(out)
    return out
