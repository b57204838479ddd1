"""The windowed max poolings, of the pooling family: MAX_POOLING, MAX_POOLING1, MAX_POOLING2,
MAX_POOLING_GRAD and MAX_UNPOOLING, each page's record with its formula below it; and the window
geometry every windowed pooling shares (average_pooling.py's AVERAGE and LP poolings too).

A window's maximum is exact: XLA's max reduce_window over integer keys in the order the page
and docs/semantics.md#minimum-and-maximum give the values (FLOAT32 denormals as zeros, -0 below +0, NaN below every number,
the padding below all); FLOAT16 windows of 5 positions or more on NVIDIA GPUs take a Pallas kernel
with the same bits (kernels/max_pooling.py, ``MAX_POOLING_VALUES``). Its index (MAX_POOLING1/2,
and the forward pass under jax.grad): one reduce_window over (key, position) pairs, the higher
key first and the lower position at a tie; MAX_POOLING_GRAD adds dY where those indices point
(see ``SPREAD``). No loop runs over windows in Python."""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT8_UINT8, FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    UINT32, UINT64_UINT32, DataType,
)
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.max_pooling import MAX_POOLING_VALUES, max_pool_values
from dmljax._src.numerics import flush_denormals, is_nan, load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, PageSlip, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table
from dmljax._src.validate import MAX_ELEMENTS, TensorInfo
from dmljax._src.window import array_violations, fit_violations, spread_windows, windows_per_dimension

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
_ALL = FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8


# ------------------------------------------------------------------------------ geometry
class Window(NamedTuple):
    """A pooling window, in the order of _window.windows_per_dimension's arguments (Dilations
    all 1 for the pages without them)."""

    size: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]

    def pooled(self, spatial) -> tuple[int, ...]:
        return windows_per_dimension(spatial, *self)

    def reduce_args(self) -> dict:
        """lax.reduce_window's window, strides, padding and window dilation over (N, C, spatial...)."""
        return {"window_dimensions": (1, 1) + self.size, "window_strides": (1, 1) + self.strides,
                "padding": ((0, 0), (0, 0)) + tuple(zip(self.start, self.end)),
                "window_dilation": (1, 1) + self.dilations}



def window_of(attrs) -> Window:
    """The Window of a record's validated attributes (DML names)."""
    n = len(attrs["WindowSize"])
    dil = attrs.get("Dilations")
    return Window(tuple(attrs["WindowSize"]), tuple(attrs["Strides"]), tuple(dil) if dil is not None else (1,) * n,
                  tuple(attrs["StartPadding"]), tuple(attrs["EndPadding"]))


def window_sum(x, w: Window):
    """Each window's sum (the padding adds zeros), in x's dtype. On the CPU, windows that tile the
    input (``tiles``: 2 x 2 every 2) are summed as a reduction over the window's axes of the padded
    input reshaped (N, C, P0, W0, P1, W1, ...), which XLA fuses with what computes the terms (a
    FLOAT16 input widened to FLOAT32, LP's |x|^P); its windowed sum took a pass of its own for them
    (AVERAGE_POOLING of FLOAT16 2.3x, LP_POOLING 1.5x their twins' time, summing in FLOAT16;
    benchmarks/results/cpu/twins). Elsewhere XLA's windowed sum."""
    def windowed(v):
        return lax.reduce_window(v, np.zeros((), v.dtype), lax.add, **w.reduce_args())

    if not tiles(w) or math.prod(w.size) > SPREAD:
        return windowed(x)
    return lax.platform_dependent(x, cpu=lambda v: _tiled_sum(v, w), default=windowed)


def _tiled_sum(x, w: Window):
    """``window_sum`` of tiling windows: the input padded with zeros (and cut after the last whole
    window), reshaped to (N, C, P0, W0, P1, W1, ...) and summed over the W axes."""
    pooled = w.pooled(x.shape[2:])
    config = [(0, 0, 0), (0, 0, 0)] + [(a, p * k - n - a, 0) for n, p, k, a in zip(x.shape[2:], pooled, w.size, w.start)]
    padded = lax.pad(x, np.zeros((), x.dtype), config)
    shape = x.shape[:2] + tuple(v for p, k in zip(pooled, w.size) for v in (p, k))
    grid = padded.reshape(shape)
    total = None
    for ks in itertools.product(*(range(k) for k in w.size)):  # the window's positions, row-major
        index = (slice(None),) * 2 + tuple(v for k in ks for v in (slice(None), k))
        total = grid[index] if total is None else total + grid[index]
    return total


SPREAD = 64
"""Gradients go back to the input elements as one broadcast where the windows tile the input
(``tiles``), else, for windows of up to SPREAD positions, as one padded copy per window position,
summed (window.spread_windows): XLA fuses either into one pass, where the windowed sum's transpose (a
reduce_window over the dilated gradient) first wrote the flushed gradient out and a scatter-add
ran atomics (measured on an H100, 3 x 3 windows every 2: jax.grad of AVERAGE_POOLING 0.84x its jnp
twin's by the transpose, 1.56x by the copies; of MAX_POOLING 1.0x by a scatter-add, 1.3x by the
copies). Larger windows: the transpose (AVERAGE, LP) or one scatter-add (MAX)."""


def tiles(w: Window) -> bool:
    """Whether the windows tile the padded input without overlapping (Strides = WindowSize,
    Dilations 1: 2 x 2 windows every 2, the usual CNN pooling): each element is in one window at
    most, and a gradient is placed by one broadcast."""
    return w.strides == w.size and all(d == 1 for d in w.dilations)


def expand(a):
    """A pooled-shaped (N, C, P0, P1, ...) array as (N, C, P0, 1, P1, 1, ...): room for the window."""
    shape = a.shape[:2] + tuple(v for p in a.shape[2:] for v in (p, 1))
    return a.reshape(shape)


def window_grid(w: Window) -> list:
    """Each spatial dimension's window position k, as int32 arrays broadcastable to (N, C, P0, W0,
    P1, W1, ...)."""
    r = len(w.size)
    out = []
    for d, size in enumerate(w.size):
        shape = [1] * (2 + 2 * r)
        shape[3 + 2 * d] = size
        out.append(lax.broadcasted_iota(np.int32, tuple(shape), 3 + 2 * d))
    return out


def untile(t, spatial, w: Window):
    """A (N, C, P0, W0, P1, W1, ...) array of tiling windows' values placed in an input-shaped one:
    the windows cover the padded input from its start; what lands in the padding, or beyond the
    last window, is dropped (0 where no window reaches)."""
    n, c = t.shape[:2]
    pooled = t.shape[2::2]
    full = t.reshape((n, c) + tuple(p * size for p, size in zip(pooled, w.size)))
    padded = tuple(s + a + b for s, a, b in zip(spatial, w.start, w.end))
    config = [(0, 0, 0), (0, 0, 0)] + [(0, p - f, 0) for p, f in zip(padded, full.shape[2:])]
    full = lax.pad(full, np.zeros((), t.dtype), config)
    return lax.slice(full, (0, 0, *w.start), (n, c, *(a + s for a, s in zip(w.start, spatial))))


def window_sum_transpose(g, spatial, w: Window):
    """The transpose of window_sum for an input of (N, C) + ``spatial``: each input element gets
    the sum of ``g`` over the windows that hold it (in g's dtype)."""
    if tiles(w):
        shape = g.shape[:2] + tuple(v for p, size in zip(g.shape[2:], w.size) for v in (p, size))
        return untile(jnp.broadcast_to(expand(g), shape), spatial, w)
    if math.prod(w.size) <= SPREAD:
        return spread_windows(lambda k, off: g, spatial, *w)
    like = jax.ShapeDtypeStruct(g.shape[:2] + tuple(spatial), g.dtype)
    return jax.linear_transpose(lambda z: window_sum(z, w), like)(g)[0]


def window_counts(spatial, w: Window):
    """How many window positions of each output lie inside the input (the padding left out): the
    product of each dimension's count, as a float32 array broadcastable to (N, C, pooled...)."""
    pooled = w.pooled(spatial)
    total = None
    for d, (s, size, t, dil, a) in enumerate(zip(spatial, w.size, w.strides, w.dilations, w.start)):
        pos = np.arange(pooled[d])[:, None] * t + np.arange(size)[None, :] * dil - a
        count = ((pos >= 0) & (pos < s)).sum(axis=1).astype(np.float32)
        shape = [1] * (len(spatial) + 2)
        shape[d + 2] = pooled[d]
        part = jnp.asarray(count.reshape(shape))
        total = part if total is None else total * part
    return total


def _param_docs(dims_of: str) -> dict[str, str]:
    where = f"DimensionCount entries: {dims_of}'s spatial dimensions, {{ Height, Width }} or {{ Depth, Height, Width }}."
    return {
        "Strides": f"The window's step in each spatial dimension (at least 1). {where}",
        "WindowSize": f"The window's size in each spatial dimension (at least 1). {where}",
        "StartPadding": f"Padding elements before each spatial dimension of {dims_of}. {where}",
        "EndPadding": f"Padding elements after each spatial dimension of {dims_of}. {where}",
        "Dilations": f"The spacing of the window's elements in each spatial dimension (at least 1). {where}",
    }


def window_params(dilations: bool, dims_of: str = "the InputTensor") -> tuple[ParamSpec, ...]:
    """The pages' Strides, WindowSize, StartPadding, EndPadding (and Dilations) members, in the
    structs' order; required, as the pages give no defaults."""
    names = ("Strides", "WindowSize", "StartPadding", "EndPadding") + (("Dilations",) if dilations else ())
    docs = _param_docs(dims_of)
    return tuple(ParamSpec(n, "UINT[]", count="DimensionCount", doc=docs[n]) for n in names)


_ARRAYS = ("WindowSize", "Strides", "Dilations", "StartPadding", "EndPadding")


def geometry_checks(image: str, pooled: str | None = None, pooled_arg: str = ""):
    """The arrays have DimensionCount entries (the ``image`` tensor's spatial dimensions); WindowSize,
    Strides and Dilations are at least 1; every spatial dimension holds a window (the dilated window
    no wider than the padded input); the ``pooled`` tensor, if any (a *_GRAD operator's
    InputGradientTensor), has the pooled Sizes of ``image``."""

    def check(tensors, attrs, level) -> list[Violation]:
        x = tensors.get(image)
        arrays = {n: attrs.get(n) for n in _ARRAYS if n in attrs}
        if x is None or len(x.shape) < 3 or any(v is None for v in arrays.values()):
            return []  # the dimension count (or an array's value) is reported already
        problems = array_violations(image, x.shape, arrays)
        if problems:
            return problems
        w = window_of(attrs)
        spatial = x.shape[2:]
        problems = fit_violations(spatial, *w, window_name="WindowSize",
                                  what="a dimension must hold at least one window")
        dy = tensors.get(pooled) if pooled else None
        if problems or dy is None:
            return problems
        want = tuple(x.shape[:2]) + w.pooled(spatial)
        if tuple(dy.shape) != want:
            problems.append(Violation(
                pooled, pooled_arg, f"has Sizes {list(dy.shape)}",
                f"the pooled Sizes of the {image} (Sizes {list(x.shape)}) for this window, {list(want)}",
                "it is the gradient of the forward operator's OutputTensor"))
        return problems
    return check


def pooled_outputs(*names: str, image: str = "InputTensor"):
    """infer_outputs for a forward pooling: each named output has the pooled Sizes, {N, C,
    windows per dimension...}; the OutputTensor the input's DataType, OutputIndicesTensor the
    caller's (UINT32 by default)."""

    def infer(tensors, attrs, problems) -> dict:
        x = tensors[image]
        shape = tuple(x.shape[:2]) + window_of(attrs).pooled(x.shape[2:])
        if math.prod(shape) > MAX_ELEMENTS:
            problems.append(Violation("OutputTensor", "", f"would have {math.prod(shape)} elements",
                                      "a DirectML tensor holds at most 2^32 - 1 elements"))
        out = {}
        for n in names:
            chosen = tensors.get(n)
            dt = x.data_type if n == "OutputTensor" else (chosen.data_type if chosen else DataType.UINT32)
            out[n] = TensorInfo(shape, dt)
        return out
    return infer


GEOMETRY_NOTE = (
    "The pooled spatial Sizes are ((InputSize + StartPadding + EndPadding - Dilations * (WindowSize - 1) - 1) / "
    "Strides) + 1 (floor division): the pages' (PaddedSize - WindowSizes[i]) / Strides[i] + 1 with the "
    "dilated window's span, the only form in which every window lies inside the padded input (the pages "
    "with Dilations print the undilated formula). A window wider than the padded input is refused, as are "
    "arrays whose length is not DimensionCount (the InputTensor's spatial dimensions: 2 for 4-D, 3 for 5-D) "
    "and a WindowSize, Strides or Dilations of 0.")


# ------------------------------------------------------------------------------ max: keys
_ABSENT = np.int32(np.iinfo(np.int32).min)  # the padding: below everything
_NAN_KEY = np.int32(np.iinfo(np.int32).min + 1)  # NaN: above the padding, below every number


def _keys(x, flush: bool = True):
    """(keys, the padding's key): integers in the order the maximum reads the values. Floats: the
    value as math reads it (FLOAT32 denormals flushed; FLOAT16 through its exact FLOAT32 value), its
    bits made order-preserving (-0 just below +0), NaN above the padding and below -inf.
    Integers: the values themselves, the padding the type's minimum (which a padding position
    never wins at a tie: its position is past every element's). ``flush=False`` keys FLOAT32
    denormals as they are: the flush is monotone, so it commutes with the maximum and the values'
    path flushes the (smaller) result instead."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return x, np.asarray(np.iinfo(x.dtype).min, x.dtype)
    f = (flush_denormals(x) if flush else x) if x.dtype == np.float32 else x.astype(np.float32)
    bits = lax.bitcast_convert_type(f, np.int32)
    key = bits ^ (lax.shift_right_arithmetic(bits, np.int32(31)) & np.int32(0x7FFFFFFF))
    return jnp.where(is_nan(f), _NAN_KEY, key), _ABSENT


def _from_keys(m, dtype):
    """The values of maximum keys (the padding's key: -inf; integers: the keys)."""
    if not jnp.issubdtype(dtype, jnp.floating):
        return m
    bits = m ^ (lax.shift_right_arithmetic(m, np.int32(31)) & np.int32(0x7FFFFFFF))  # its own inverse
    f = lax.bitcast_convert_type(bits, np.float32)
    f = jnp.where(m == _NAN_KEY, np.float32(np.nan), jnp.where(m == _ABSENT, np.float32(-np.inf), f))
    return f.astype(dtype)


def _max_and_position(x, w: Window):
    """Per output, the highest key of its window and the position (row-major over the spatial
    dimensions, int32) of the first element holding it; -1 for a window lying wholly in the
    padding. One reduce_window over (key, position) pairs, keeping the higher key, at equal keys
    the lower position (an order: XLA may combine them in any order)."""
    keys, lowest = _keys(x)
    spatial = x.shape[2:]
    flat = [math.prod(spatial[d + 1:]) for d in range(len(spatial))]
    pos = sum(lax.broadcasted_iota(np.int32, x.shape, d + 2) * np.int32(f) for d, f in enumerate(flat))
    none = np.int32(np.iinfo(np.int32).max)

    def pick(a, b):
        take = (b[0] > a[0]) | ((b[0] == a[0]) & (b[1] < a[1]))
        return jnp.where(take, b[0], a[0]), jnp.where(take, b[1], a[1])
    m, at = lax.reduce_window((keys, pos), (lowest, none), pick, **w.reduce_args())
    return m, jnp.where(at == none, np.int32(-1), at)


def _flat_indices(at, spatial, index_dtype):
    """Within-plane positions as the page's indices: the InputTensor taken as a contiguous
    one-dimensional array (n * C * prod(spatial) + c * prod(spatial) + position); -1 (a window wholly
    in the padding) gives the index type's maximum, which names no element."""
    index_dtype = np.dtype(index_dtype)
    size = math.prod(spatial)
    plane = (lax.broadcasted_iota(index_dtype, at.shape, 0) * index_dtype.type(at.shape[1])
             + lax.broadcasted_iota(index_dtype, at.shape, 1))
    idx = plane * index_dtype.type(size) + jnp.maximum(at, 0).astype(index_dtype)
    return jnp.where(at < 0, np.asarray(np.iinfo(index_dtype).max, index_dtype), idx)


# ------------------------------------------------------------------------------ max: formulas
def _to_positions(at, g, spatial, w: Window):
    """Each output's ``g`` added to the input element at its within-plane position ``at`` (-1: to
    none), overlaps summed in g's dtype: spread_windows of g where ``at`` names each window position
    (small windows), else one scatter-add (XLA's order of the additions)."""
    n, c = g.shape[:2]
    size = math.prod(spatial)
    flat = [math.prod(spatial[d + 1:]) for d in range(len(spatial))]
    if tiles(w):  # each window's element k is where its position equals the window's base + k
        pooled = (1, 1) + g.shape[2:]
        base = sum((lax.broadcasted_iota(np.int32, pooled, d + 2) * np.int32(t) - np.int32(a)) * np.int32(f)
                   for d, (t, a, f) in enumerate(zip(w.strides, w.start, flat)))
        here = expand(base) + sum(k * np.int32(f) for k, f in zip(window_grid(w), flat))
        return untile(jnp.where(expand(at) == here, expand(g), np.zeros((), g.dtype)), spatial, w)
    if math.prod(w.size) <= SPREAD:
        pooled = g.shape[2:]
        # within-plane position of each window's first element (in the padded input's frame)
        base = sum((lax.broadcasted_iota(np.int32, tuple(pooled), d) * np.int32(t) - np.int32(a)) * np.int32(f)
                   for d, (t, a, f) in enumerate(zip(w.strides, w.start, flat)))
        zero = np.zeros((), g.dtype)
        return spread_windows(
            lambda k, off: jnp.where(at == base + np.int32(sum(o * f for o, f in zip(off, flat))), g, zero),
            spatial, *w)
    rows = jnp.arange(n * c, dtype=np.int32)[:, None]
    where = jnp.where(at < 0, np.int32(size), at).reshape(n * c, -1)
    out = jnp.zeros((n * c, size), g.dtype).at[rows, where].add(g.reshape(n * c, -1), mode="drop")
    return out.reshape((n, c) + tuple(spatial))


def _grad_at(at, dy, spatial, w: Window, half: bool):
    """MAX_POOLING_GRAD's sums for the first maxima ``at``: FLOAT16 in FLOAT32, rounded once."""
    dt = DataType.from_dtype(dy.dtype)
    out = store(_to_positions(at, load(dy, half), spatial, w), dt)
    if dt is F32:
        mark_flushed(out)
    return out


def max_pool(x, w: Window, index_dtype=None):
    """The windows' maxima, or (maxima, the page's indices) with an ``index_dtype``. Float inputs
    are differentiable by MAX_POOLING_GRAD's rule: under jax.grad the forward pass finds the maxima
    and their first positions in one pass and the backward pass adds dY there."""
    spatial = x.shape[2:]

    def outputs(m, at):
        values = _from_keys(m, x.dtype)
        return values if index_dtype is None else (values, _flat_indices(at, spatial, index_dtype))

    def xla_values(v):
        keys, lowest = _keys(v, flush=False)
        return flush_denormals(_from_keys(lax.reduce_window(keys, lowest, lax.max, **w.reduce_args()), x.dtype))

    def primal(v):
        # the values by XLA's max reduce_window (its fastest pass; FLOAT16 on NVIDIA GPUs:
        # kernels/max_pooling.py), the indices by a second pass, which XLA drops where they are not used
        route = choose(MAX_POOLING_VALUES, facts=(v.shape, v.dtype, *w))
        values = route.run(xla_values, lambda t: max_pool_values(t, *w), v, lead=2)  # windows span the spatial axes
        if index_dtype is None:
            return values
        return values, _flat_indices(_max_and_position(v, w)[1], spatial, index_dtype)

    if not jnp.issubdtype(x.dtype, jnp.floating):
        return primal(x)

    def run(v):
        return primal(v)

    def fwd(v):
        m, at = _max_and_position(v, w)
        return outputs(m, at), at

    def bwd(at, ct):
        dy = ct if index_dtype is None else ct[0]
        return (_grad_at(at, dy, spatial, w, False),)

    run = backward_rule(run, fwd, bwd)
    out = run(x)
    if x.dtype == np.float32:
        mark_flushed(out if index_dtype is None else out[0])  # keys of flushed values
    return out


def max_pool_grad(x, dy, w: Window, half: bool):
    """MAX_POOLING_GRAD: dY of each window added to its first maximum's element. Its own gradient:
    by dY, the cotangent read back at each window's first maximum; by the input, none (a selection)."""

    def run(v, g):
        return _grad_at(_max_and_position(v, w)[1], g, v.shape[2:], w, half)

    def fwd(v, g):
        at = _max_and_position(v, w)[1]
        return _grad_at(at, g, v.shape[2:], w, half), (at, v)

    def bwd(res, ddx):
        at, v = res
        n, c = at.shape[:2]
        got = jnp.take_along_axis(ddx.reshape(n, c, -1), jnp.maximum(at, 0).reshape(n, c, -1), axis=2)
        return jnp.zeros_like(v), jnp.where(at < 0, np.zeros((), ddx.dtype), got.reshape(at.shape))

    run = backward_rule(run, fwd, bwd)
    return run(x, dy)


# ------------------------------------------------------------------------------ max: records
_INDEX_RULES = "UINT64 indices need JAX's 64-bit mode."
_MAX_GRADIENT = (
    "MAX_POOLING_GRAD's rule (the same function): each window's dY goes to the element its index names (the "
    "first maximum), overlaps summed in FLOAT32 and rounded once; a window wholly in the padding passes "
    "nothing; integer inputs: none.")
_MAX_SUMMARY = "Computes the maximum value across the elements within the sliding window over the input tensor."
_MAX_INDEX_SUMMARY = _MAX_SUMMARY[:-1] + ", and optionally returns the indices of the maximum values selected."
_MAX_FORMULA = ("\n(OutputTensor[n, c, o] = the maximum of InputTensor[n, c, o * Strides - StartPadding + k * Dilations] "
                "over the window positions k that lie inside the InputTensor)")


def _max_tables(*levels, indices: bool):
    """The MAX_POOLING* pages' tables: 4 to 5 dimensions; (level, data types, index types) rows."""
    out = []
    for level, types, index_types in levels:
        rows = {"InputTensor": ("4 to 5", types), "OutputTensor": ("4 to 5", types)}
        if indices:
            rows["OutputIndicesTensor"] = ("4 to 5", index_types)
        out.append(table(level, **rows))
    return tuple(out)


def _max_record(short: str, first: str, dilations: bool, indices: bool, silent: tuple = ()) -> OpSpec:
    tensors = (TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output"))
    if indices:
        tensors += (TensorSpec("OutputIndicesTensor", "output", optional=True, default_data_type=DataType.UINT32),)
    return OpSpec(
        enum_name=PREFIX + short,
        summary=_MAX_INDEX_SUMMARY if indices else _MAX_SUMMARY,
        formula=(_MAX_INDEX_SUMMARY if indices else _MAX_SUMMARY) + _MAX_FORMULA,
        tensors=tensors,
        support=_max_tables(("5.0", _ALL, UINT64_UINT32), ("3.0", FLOAT32_FLOAT16_INT8_UINT8, UINT32),
                            (first, FLOAT32_FLOAT16, UINT32), indices=indices),
        params=window_params(dilations),
        constraints=(SameDataType(("InputTensor", "OutputTensor")),),
        math=False,
        grad_operator=PREFIX + "MAX_POOLING_GRAD",
        gradient=_MAX_GRADIENT,
        notes=" ".join(n for n in (_INDEX_RULES if indices else "", GEOMETRY_NOTE,
                                   "" if dilations else "Dilations are 1 (this version has none).") if n),
        extra_checks=(geometry_checks("InputTensor"),),
        infer_outputs=pooled_outputs("OutputTensor", *(("OutputIndicesTensor",) if indices else ())),
        silent=silent,
    )


MAX_POOLING = _max_record("MAX_POOLING", "1.0", dilations=False, indices=False, silent=(
    SilentChoice(
        "MAX_POOLING* and the padding",
        "padding elements are never selected; a window lying wholly in the padding gives -inf (the type's "
        "minimum for integers) and the index 2^32 - 1 (2^64 - 1 for UINT64 indices), which names no element",
        "The pages never say what the padding holds for a maximum. ONNX's MaxPool, which ONNX Runtime's "
        "DirectML provider maps onto these operators, ignores its padding; -inf is the maximum's identity.",
        also=("MAX_POOLING1", "MAX_POOLING2")),
    SilentChoice(
        "MAX_POOLING* order: NaN, signed zeros, FLOAT32 denormals",
        "NaN below every number (a window's maximum is NaN only when all its elements are NaN); -0 below +0; "
        "FLOAT32 denormals read as zeros of their sign, so a denormal maximum comes out as a zero; the value "
        "is bit-exact (REDUCE's MAX over the window)",
        "[Minimum and maximum](semantics.md#minimum-and-maximum) (maxNum) and 8; -0 below +0 as "
        "ELEMENT_WISE_MAX and REDUCE's MAX.",
        also=("MAX_POOLING1", "MAX_POOLING2")),
))
MAX_POOLING1 = _max_record("MAX_POOLING1", "2.0", dilations=False, indices=True, silent=(
    SilentChoice(
        "MAX_POOLING1/2 ties (\"the first value encountered\")",
        "the lowest index: the first in row-major order of the window; \"equal\" means equal as read (a "
        "FLOAT32 denormal equals the zero of its sign; -0 and +0 are not equal, +0 wins)",
        "The MAX_POOLING_GRAD page says \"the lowest logical element index\", which is also the first in "
        "row-major window order.",
        also=("MAX_POOLING2",)),
    SilentChoice(
        "MAX_POOLING1/2 index layout",
        "n * C * prod(spatial) + c * prod(spatial) + the row-major spatial position: the whole InputTensor as "
        "\"a contiguous one-dimensional array\", N and C included, whatever its strides",
        "The page's words; the MAX_POOLING_GRAD page's example (indices 4, 4, 7, 8 of a 3 x 3 input) counts "
        "so.",
        also=("MAX_POOLING2",)),
    SilentChoice(
        "MAX_POOLING1/2's optional OutputIndicesTensor",
        "the Python function always returns (output, output_indices); a desc without OutputIndicesTensor "
        "(compile_operator) gets the values alone",
        "A Python function returns a fixed tuple; the indices are a second pass (a reduce_window over (key, "
        "position) pairs), which XLA drops inside a caller's jit where they are unused.",
        also=("MAX_POOLING2",)),
))
MAX_POOLING2 = _max_record("MAX_POOLING2", "2.1", dilations=True, indices=True)


@operator(MAX_POOLING)
def max_pooling(input, *, strides, window_size, start_padding, end_padding):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[1, 2, 3], [2, 4, 2], [5, 6, 7]]]], np.float32)  # MAX_POOLING_GRAD's page
        >>> dmljax.max_pooling(x, strides=(1, 1), window_size=(2, 2), start_padding=(0, 0),
        ...                    end_padding=(0, 0))[0, 0]
        Array([[4., 4.],
               [6., 7.]], dtype=float32)
    """
    return max_pool(input, window_of({"Strides": strides, "WindowSize": window_size,
                                      "StartPadding": start_padding, "EndPadding": end_padding}))


@operator(MAX_POOLING1)
def max_pooling1(input, *, strides, window_size, start_padding, end_padding, output_indices_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[1, 2, 3], [2, 4, 2], [5, 6, 7]]]], np.float32)  # MAX_POOLING_GRAD's page
        >>> values, indices = dmljax.max_pooling1(x, strides=(1, 1), window_size=(2, 2),
        ...                                       start_padding=(0, 0), end_padding=(0, 0))
        >>> indices[0, 0]
        Array([[4, 4],
               [7, 8]], dtype=uint32)
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding})
    return max_pool(input, w, output_indices_data_type.dtype)


@operator(MAX_POOLING2)
def max_pooling2(input, *, strides, window_size, start_padding, end_padding, dilations, output_indices_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)[:, :, ::-1]  # rows 12..15 first
        >>> values, indices = dmljax.max_pooling2(x, strides=(1, 1), window_size=(2, 2), start_padding=(0, 0),
        ...                                       end_padding=(0, 0), dilations=(2, 2))
        >>> values[0, 0], indices[0, 0]
        (Array([[14., 15.],
               [10., 11.]], dtype=float32), Array([[2, 3],
               [6, 7]], dtype=uint32))
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding, "Dilations": dilations})
    return max_pool(input, w, output_indices_data_type.dtype)


# ------------------------------------------------------------------------------ MAX_POOLING_GRAD
def _grad_growth(sizes, attrs) -> dict:
    """An input element sums at most prod(WindowSize) window gradients (one per window position)."""
    w = attrs.get("WindowSize")
    n = math.prod(w) if isinstance(w, (tuple, list)) and all(isinstance(v, int) for v in w) else 1
    return {F32: n, F16: math.ceil(n / 8192), "half": n}


MAX_POOLING_GRAD = OpSpec(
    enum_name=PREFIX + "MAX_POOLING_GRAD",
    summary=("Computes backpropagation gradients for max pooling (see DML_MAX_POOLING2_OPERATOR_DESC): "
             "this operator uses the InputTensor to determine the index of the largest element from each "
             "window, and distributes the values of InputGradientTensor into the OutputGradientTensor based on "
             "these indices. Where indices overlap, the values are summed. Any unreferenced output elements are "
             "zeroed."),
    formula=("InputTensor   InputGradientTensor            OutputGradientTensor\n"
             "(the page's example: a 2 x 2 window with stride 1 over [[1, 2, 3], [2, 4, 2], [5, 6, 7]] selects the "
             "indices [[4, 4], [7, 8]]; the InputGradientTensor [[1, 2], [4, 5]] gives [[0, 0, 0], [0, 3, 0], "
             "[0, 4, 5]])"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("InputGradientTensor", "input"),
             TensorSpec("OutputGradientTensor", "output")),
    support=(
        table("4.0", InputTensor=("4 to 5", FLOAT32_FLOAT16), InputGradientTensor=("4 to 5", FLOAT32_FLOAT16),
              OutputGradientTensor=("4 to 5", FLOAT32_FLOAT16)),
        table("3.0", InputTensor=("4", FLOAT32_FLOAT16), InputGradientTensor=("4", FLOAT32_FLOAT16),
              OutputGradientTensor=("4", FLOAT32_FLOAT16)),
    ),
    params=window_params(True),
    constraints=(SameDataType(("InputTensor", "InputGradientTensor", "OutputGradientTensor")),
                 SameSizes(("InputTensor", "OutputGradientTensor"))),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_grad_growth,
    gradient=("Linear in the InputGradientTensor: its gradient is the cotangent read at each window's first "
              "maximum (0 for a window wholly in the padding); the InputTensor only selects: none (zeros)."),
    notes=" ".join((
        "The selection is MAX_POOLING2's (the same function): the padding never selected, values compared as "
        "math reads them, -0 below +0, NaN below every number, and of equal maxima 'the element with the "
        "lowest logical element index'. A window wholly in the padding passes nothing. The InputGradientTensor "
        "must have the pooled Sizes of the InputTensor (the page's 'typically'); the OutputGradientTensor has "
        "the InputTensor's. Overlapping gradients are summed: FLOAT16 in FLOAT32 (unless "
        "allow_half_precision_computation), rounded once; the order of the additions is not DirectML's to "
        "promise (docs/semantics.md#accumulating-operators): a budget of prod(WindowSize) rounding units of the terms' magnitude. "
        "The page's DimensionCount text ('only supports 4D tensors, the only valid value ... is 2') predates its "
        "DML_FEATURE_LEVEL_4_0 table, which adds 5-D: the table is followed.", GEOMETRY_NOTE)),
    extra_checks=(geometry_checks("InputTensor", "InputGradientTensor", "input_gradient"),),
    silent=(
        SilentChoice(
            "MAX_POOLING_GRAD's InputGradientTensor Sizes (\"typically\" the forward output's)",
            "must be the pooled Sizes of the InputTensor (ValidationError otherwise)",
            "No other Sizes has a meaning."),
        SilentChoice(
            "MAX_POOLING_GRAD: NaN and signed zeros",
            "the forward MAX_POOLING2's selection exactly (the same function)",
            "The gradient goes where the forward index points."),
    ),
)


@operator(MAX_POOLING_GRAD)
def max_pooling_grad(input, input_gradient, *, strides, window_size, start_padding, end_padding, dilations,
                     allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[1, 2, 3], [2, 4, 2], [5, 6, 7]]]], np.float32)  # the page's example
        >>> dy = np.array([[[[1, 2], [4, 5]]]], np.float32)
        >>> dmljax.max_pooling_grad(x, dy, strides=(1, 1), window_size=(2, 2), start_padding=(0, 0),
        ...                         end_padding=(0, 0), dilations=(1, 1))[0, 0]
        Array([[0., 0., 0.],
               [0., 3., 0.],
               [0., 4., 5.]], dtype=float32)
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding, "Dilations": dilations})
    return max_pool_grad(input, input_gradient, w, allow_half_precision_computation)


# ------------------------------------------------------------------------------ MAX_UNPOOLING
def _unpooled(tensors, attrs, problems) -> dict:
    """The OutputTensor: the caller's Sizes (output_sizes=), the InputTensor's DataType and
    DimensionCount."""
    x, out = tensors["InputTensor"], tensors["OutputTensor"]
    if len(out.shape) != len(x.shape):
        problems.append(Violation("OutputTensor", "output_sizes", f"has {len(out.shape)} dimensions",
                                  f"the InputTensor's DimensionCount, {len(x.shape)} (the page)"))
    return {"OutputTensor": TensorInfo(out.shape, x.data_type)}


MAX_UNPOOLING = OpSpec(
    enum_name=PREFIX + "MAX_UNPOOLING",
    summary=("Inverts a max-pooling operation by filling the output tensor OutputTensor with the values in the "
             "input tensor InputTensor, as obtained from a max-pooling operation, according to the index values "
             "provided in the IndicesTensor. The elements in the output tensor untouched by this process are "
             "left with zero values."),
    formula=("Inverts a max-pooling operation (see [DML_MAX_POOLING_OPERATOR1_DESC]"
             "(/windows/win32/api/directml/ns-directml-dml_max_pooling1_operator_desc) for details) by filling "
             "the output tensor *OutputTensor* with the values in the input tensor *InputTensor*, as obtained "
             "from a max-pooling operation, according to the index values provided in the *IndicesTensor*. The "
             "elements in the output tensor untouched by this process are left with zero values.\n"
             "(OutputTensor as a contiguous one-dimensional array: element IndicesTensor[i] = InputTensor[i], "
             "every other element 0)"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("IndicesTensor", "input"),
             TensorSpec("OutputTensor", "output", sizes_arg=True)),
    support=(
        table("5.0", InputTensor=("4", _ALL), IndicesTensor=("4", UINT64_UINT32), OutputTensor=("4", _ALL)),
        table("2.0", InputTensor=("4", FLOAT32_FLOAT16), IndicesTensor=("4", UINT32),
              OutputTensor=("4", FLOAT32_FLOAT16)),
    ),
    constraints=(SameDataType(("InputTensor", "OutputTensor")), SameSizes(("InputTensor", "IndicesTensor"))),
    math=False,
    gradient=("dInputTensor[i] = dOutputTensor at IndicesTensor[i] where element i is the one written there "
              "(0 for an index outside the OutputTensor, or one an earlier element took); IndicesTensor: none."),
    notes=(
        "output_sizes= gives the OutputTensor's Sizes (a desc's OutputTensor), 4-D like the InputTensor. Each "
        "index counts the OutputTensor as a contiguous one-dimensional array over all its dimensions, as "
        "MAX_POOLING1/2's OutputIndicesTensor counts their InputTensor. Where the page is silent: an index "
        "naming no element of the OutputTensor (MAX_POOLING's 2^32 - 1 for a window wholly in the padding, or "
        "any index past the end) writes nothing; where several elements name one output element (overlapping "
        "max-pooling windows that chose the same element, so the same value), the first of them in row-major "
        "order of the InputTensor is written, on every backend. Bit-exact data movement: the values' bits "
        "are copied, every other element is +0 (0 for integers)."),
    page_slip=PageSlip(
        levels={"2.0": "3.0"},
        why=("The page's Availability says DML_FEATURE_LEVEL_3_0 and its oldest table is headed 3.0; DirectML.h "
             "and the feature-level history introduce the operator in DML_FEATURE_LEVEL_2_0, which the record "
             "follows with that table.")),
    infer_outputs=_unpooled,
    silent=(
        SilentChoice(
            "MAX_UNPOOLING: an index past the OutputTensor (MAX_POOLING's 2^32 - 1, or any other)",
            "writes nothing",
            "Value checks are opt-in, like DirectML's debug layer; never a crash or a wrapped write."),
        SilentChoice(
            "MAX_UNPOOLING: several input elements with one index",
            "the first in row-major order of the InputTensor is written (and gets the gradient), on every "
            "backend",
            "Overlapping max-pooling windows that chose one element carry the same value; a scatter's \"last "
            "writer\" is not deterministic on a GPU."),
        SilentChoice(
            "MAX_UNPOOLING OutputTensor",
            "output_sizes= (required), 4-D like the InputTensor; N and C free",
            "The page gives only \"the same number of dimensions as the input tensor\"."),
    ),
)


@operator(MAX_UNPOOLING)
def max_unpooling(input, indices, *, output_sizes):
    """Example:
        >>> import numpy as np, dmljax
        >>> values = np.array([[[[4, 4], [6, 7]]]], np.float32)  # MAX_POOLING1 of the grad page's input
        >>> indices = np.array([[[[4, 4], [7, 8]]]], np.uint32)
        >>> dmljax.max_unpooling(values, indices, output_sizes=(1, 1, 3, 3))[0, 0]
        Array([[0., 0., 0.],
               [0., 4., 0.],
               [0., 6., 7.]], dtype=float32)
    """
    total = math.prod(output_sizes)
    count = math.prod(input.shape)
    target = indices.reshape(-1)
    target = jnp.where(target < np.asarray(total, target.dtype), target, np.asarray(total, target.dtype))
    # the first input element naming each output element (count: none), deterministic on every backend
    first = jnp.full((total,), count, np.int32).at[target].min(jnp.arange(count, dtype=np.int32), mode="drop")
    values = jnp.take(input.reshape(-1), jnp.minimum(first, count - 1), axis=0)
    out = jnp.where(first < count, values, np.zeros((), input.dtype))
    return out.reshape(output_sizes)
