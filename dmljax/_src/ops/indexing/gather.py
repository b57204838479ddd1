"""GATHER, GATHER_ELEMENTS, GATHER_ND and GATHER_ND1 (reads at indices), of the indexing family:
each page's record with its formula below it, and the index rules the scatters and ONE_HOT share
(negative indices count from the end; an index out of range is never read, never a crash).

Every formula is one XLA gather of in-range positions plus element-wise work: the index made
non-negative (signed types), a validity mask, and a select that gives 0 where the index was out
of range. The gradient is jax.vjp's transpose of that gather: a scatter-add (duplicates add up;
an out-of-range index passes nothing).

The gather reads the values' bits (``exact_gather``): where the gathered axis is sharded over
several devices, XLA partitions a gather into a masked gather on each device and an all-reduce
sum of the pieces, and a sum of floats would turn -0.0 into +0.0 (and may quiet a NaN); a sum of
the bits as unsigned integers adds zeros only, so the values move exactly, as DirectML moves them."""

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
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, INT64_INT32_UINT64_UINT32, UINT32,
)
from dmljax._src.errors import Violation
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

V41 = FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
V30 = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8

OUT_OF_RANGE_GATHER = (
    "An index outside [-size, size) (or >= size for an unsigned type) reads nothing and gives 0 "
    "for the element (the slice) it selects, on every backend, eagerly and under jax.jit; "
    "negative indices of a signed type count from the end (-1 is the last), as the page says "
    "from DML_FEATURE_LEVEL_3_0 (signed index types exist only from there).")


# -------------------------------------------------------------------------------- shared rules
@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _moved_bits(move, x, *index):
    bits = jnp.dtype(f"uint{8 * x.dtype.itemsize}")
    return lax.bitcast_convert_type(move(lax.bitcast_convert_type(x, bits), *index), x.dtype)


@_moved_bits.defjvp
def _moved_bits_jvp(move, primals, tangents):
    x, *index = primals
    # a gather is linear in x: its tangent is the same gather of dx (whose transpose, for
    # reverse mode, is the scatter-add)
    return _moved_bits(move, x, *index), move(tangents[0], *index)


def exact_move(move, x, *index):
    """``move(x, *index)`` (a gather: linear in ``x``) applied to ``x``'s bits where ``x`` is a
    float (see the module's docstring: a sharded gather's all-reduce must not add floats)."""
    if jnp.issubdtype(x.dtype, jnp.floating):
        return _moved_bits(move, x, *index)
    return move(x, *index)


def exact_gather(x, pos, dnums, slice_sizes):
    """``lax.gather(x, pos, dnums, slice_sizes)`` of in-range positions, moving ``x``'s bits (see
    the module's docstring: a sharded gather's all-reduce must not add floats)."""
    return exact_move(functools.partial(lax.gather, dimension_numbers=dnums, slice_sizes=tuple(slice_sizes),
                                        mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS), x, pos)


def position_type(n: int):
    """The integer type that holds positions 0 .. n - 1 (n <= 2^32 - 1): int32, else uint32."""
    return np.int32 if n <= np.iinfo(np.int32).max else np.uint32


def resolve_index(i: jnp.ndarray, n: int) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(position, valid) for indices ``i`` into an axis of size ``n``: a negative index of a
    signed type counts from the end; ``valid`` says the index lands in [0, n); ``position`` is
    the landed index where valid, else 0, in ``position_type(n)``. Every comparison is made in
    the index's own type, so no index wraps into range."""
    dt = np.dtype(i.dtype)
    info = np.iinfo(dt)
    n_in_type = np.asarray(min(n, int(info.max)), dt)
    if info.min < 0:
        # -n .. -1 -> 0 .. n-1; an index below -n stays negative (invalid); no sum overflows
        i = jnp.where(i < np.asarray(0, dt), i + n_in_type, i)
        valid = i >= np.asarray(0, dt)
        if n <= info.max:  # else every index of the type is below the size
            valid = valid & (i < n_in_type)
    else:
        valid = i < n_in_type if n <= info.max else jnp.ones(i.shape, bool)
    pos = jnp.where(valid, i, np.asarray(0, dt)).astype(position_type(n))
    return pos, valid


def resolve_tuples(i: jnp.ndarray, sizes: tuple[int, ...]) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(positions, valid) for index tuples along ``i``'s last axis (one entry per axis of
    ``sizes``): positions as ``resolve_index`` gives them; valid where every entry is in range."""
    cols = [resolve_index(i[..., j], n) for j, n in enumerate(sizes)]
    ptype = np.result_type(*[c[0].dtype for c in cols])
    pos = jnp.stack([c[0].astype(ptype) for c in cols], axis=-1)
    valid = cols[0][1]
    for c in cols[1:]:
        valid = valid & c[1]
    return pos, valid


def same_dimension_count(tensors, names) -> list[Violation]:
    """"<names> must have the same DimensionCount": one Violation per tensor that differs from
    the first."""
    infos = [(n, tensors.get(n)) for n in names]
    if any(info is None for _, info in infos):
        return []
    first, ref = infos[0]
    out = []
    for n, info in infos[1:]:
        if len(info.shape) != len(ref.shape):
            arg = n[: -len("Tensor")].lower() if n.endswith("Tensor") else n
            out.append(Violation(n, _ARGS.get(n, arg), f"has {len(info.shape)} dimensions (Sizes {list(info.shape)})",
                                 f"the same DimensionCount as {first} ({len(ref.shape)})"))
    return out


_ARGS = {"InputTensor": "input", "IndicesTensor": "indices", "UpdatesTensor": "updates", "ValuesTensor": "values"}


def axis_check(name: str, tensor: str, what: str):
    """Axis: "ranging [0, <tensor>.DimensionCount)"."""
    def check(tensors, attrs, level) -> list[Violation]:
        axis, info = attrs.get(name), tensors.get(tensor)
        if axis is None or info is None or axis < len(info.shape):
            return []
        n = len(info.shape)
        return [Violation(name, "axis", f"is {axis} for a {n}-dimensional {tensor}",
                          f"{what} in the range [0, {n - 1}]" if n else f"{what} in the range [0, DimensionCount)")]
    return check


def leading_ones(sizes, count: int) -> bool:
    """Whether every size before the last ``count`` is 1 (the "irrelevant leading ones")."""
    return all(s == 1 for s in sizes[: len(sizes) - count])


def right_aligned(sizes, ndim: int):
    """``sizes`` right-aligned to ``ndim`` dimensions: leading 1s prepended, or leading 1s
    cropped where there are too many; None if a size other than 1 would have to go."""
    sizes = tuple(sizes)
    if len(sizes) <= ndim:
        return (1,) * (ndim - len(sizes)) + sizes
    extra = len(sizes) - ndim
    if any(s != 1 for s in sizes[:extra]):
        return None
    return sizes[extra:]


def masked(values: jnp.ndarray, valid: jnp.ndarray) -> jnp.ndarray:
    """``values`` where ``valid`` (broadcast over trailing dimensions), else 0 of their type."""
    valid = valid.reshape(valid.shape + (1,) * (values.ndim - valid.ndim))
    return jnp.where(valid, values, jnp.zeros((), values.dtype))


# -------------------------------------------------------------------------------- GATHER
def _gather_shape(tensors, attrs, problems: list[Violation] | None = None):
    """GATHER's OutputTensor.Sizes: {Input.Sizes[0..Axis], Indices.Sizes[D - IndexDimensions ..
    D], Input.Sizes[Axis+1 .. D]}, right-aligned to D (leading 1s cropped), or None."""
    x, idx = tensors["InputTensor"].shape, tensors["IndicesTensor"].shape
    axis, k = attrs["Axis"], attrs["IndexDimensions"]
    return right_aligned(x[:axis] + idx[len(idx) - k:] + x[axis + 1:], len(x))


def _gather_checks(tensors, attrs, level) -> list[Violation]:
    problems = same_dimension_count(tensors, ("InputTensor", "IndicesTensor"))
    x, idx = tensors.get("InputTensor"), tensors.get("IndicesTensor")
    axis, k = attrs.get("Axis"), attrs.get("IndexDimensions")
    if problems or x is None or idx is None or axis is None or k is None or not x.shape:
        return problems
    d = len(x.shape)
    if axis >= d:
        return [Violation("Axis", "axis", f"is {axis} for a {d}-dimensional InputTensor", f"in the range [0, {d - 1}]")]
    if k > d:
        return [Violation("IndexDimensions", "index_dimensions", f"is {k} for {d}-dimensional IndicesTensor",
                          f"in the range [0, {d}]")]
    if not leading_ones(idx.shape, k):
        problems.append(Violation(
            "IndicesTensor", "indices", f"has Sizes {list(idx.shape)} with IndexDimensions {k}",
            f"sizes of 1 before its last {k} (the irrelevant leading ones)",
            "raise index_dimensions to count every index dimension of size > 1"))
    elif _gather_shape(tensors, attrs) is None:
        whole = x.shape[:axis] + idx.shape[d - k:] + x.shape[axis + 1:]
        problems.append(Violation(
            "OutputTensor", "", f"would have Sizes {list(whole)} ({len(whole)} dimensions)",
            f"at most {d} dimensions after cropping leading 1s (InputTensor's original rank + "
            f"IndexDimensions - 1 <= DimensionCount)",
            "pad the tensors with leading 1s (a larger DimensionCount) or lower index_dimensions"))
    return problems


def _gather_outputs(tensors, attrs, problems) -> dict:
    return {"OutputTensor": TensorInfo(_gather_shape(tensors, attrs), tensors["InputTensor"].data_type)}


def _indices_table(level, dims, data, indices):
    return table(level, InputTensor=(dims, data), IndicesTensor=(dims, indices), OutputTensor=(dims, data))


GATHER_TENSORS = (TensorSpec("InputTensor", "input"), TensorSpec("IndicesTensor", "input"),
                  TensorSpec("OutputTensor", "output"))
GATHER_TABLES_SINCE_2_1 = (
    _indices_table("4.1", "1 to 8", V41, INT64_INT32_UINT64_UINT32),
    _indices_table("3.0", "1 to 8", V30, INT64_INT32_UINT64_UINT32),
    _indices_table("2.1", "4", V30, UINT32),
)
"""The gathers' tables from DML_FEATURE_LEVEL_2_1 on (each page's newest three, the same)."""


def elements_checks(tensors, attrs, same_count: tuple[str, ...], axis_of: str) -> list[Violation]:
    """GATHER_ELEMENTS' and SCATTER_ELEMENTS' rules: the tensors ``same_count`` have one
    DimensionCount, Axis is one of its dimensions (of ``axis_of``, as each page words its range),
    and the IndicesTensor's Sizes equal the InputTensor's in every dimension but Axis."""
    problems = same_dimension_count(tensors, same_count)
    x, idx, axis = tensors.get("InputTensor"), tensors.get("IndicesTensor"), attrs.get("Axis")
    if problems or x is None or idx is None or axis is None or not x.shape:
        return problems
    if axis >= len(x.shape):
        return [Violation("Axis", "axis", f"is {axis} for a {len(x.shape)}-dimensional {axis_of}",
                          f"in the range [0, {len(x.shape) - 1}]")]
    bad = [d for d in range(len(x.shape)) if d != axis and x.shape[d] != idx.shape[d]]
    if bad:
        problems.append(Violation(
            "IndicesTensor", "indices", f"has Sizes {list(idx.shape)} for InputTensor Sizes {list(x.shape)}",
            f"the InputTensor's Sizes in every dimension except Axis ({axis}); dimension {bad[0]} differs"))
    return problems


GATHER = OpSpec(
    enum_name=PREFIX + "GATHER",
    summary=("Gathers elements from the input tensor along Axis, using IndicesTensor to remap "
             "indices."),
    formula="output[...] = input[..., indices[...], ...]",
    tensors=GATHER_TENSORS,
    support=(
        *GATHER_TABLES_SINCE_2_1,
        _indices_table("1.0", "4", FLOAT32_FLOAT16, UINT32),
    ),
    params=(
        ParamSpec("Axis", "UINT", doc="The axis dimension of InputTensor to gather on, ranging [0, "
                                      "InputTensor.DimensionCount)."),
        ParamSpec("IndexDimensions", "UINT",
                  doc=("The number of actual index dimensions within the IndicesTensor after ignoring "
                       "any irrelevant leading ones (dmljax accepts 0 to IndicesTensor.DimensionCount: "
                       "see the notes).")),
    ),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient=("dInput = the scatter-add of dY at the gathered positions (an element gathered twice "
              "gets both); out-of-range indices pass nothing; IndicesTensor: no gradient."),
    notes=(OUT_OF_RANGE_GATHER + " The page says invalid indices 'yield incorrect outputs' with reads "
           "clamped within the tensor: 0 is dmljax's one defined value for them. IndexDimensions may be "
           "0 to IndicesTensor.DimensionCount: the page says [0, DimensionCount), but its own Example 1 "
           "(1-D tensors, IndexDimensions 1) needs DimensionCount itself, and the output rule (original "
           "rank + IndexDimensions - 1 <= DimensionCount) bounds it anyway. The IndicesTensor's sizes "
           "before its last IndexDimensions must be 1. The OutputTensor's Sizes follow the page's rule, "
           "right-aligned: leading 1s cropped or prepended. The page's Example 3 (IndexDimensions 2 "
           "with 2-D tensors and Sizes {3,2} out) breaks that rule: with IndexDimensions 1 it holds."),
    extra_checks=(_gather_checks,),
    infer_outputs=_gather_outputs,
    silent=(
        SilentChoice(
            "GATHER / GATHER_ELEMENTS / GATHER_ND(1), an index out of range",
            "0 for the element or slice (a tuple with any coordinate out of range: the whole slice), never "
            "read",
            "GATHER's page: invalid indices \"yield incorrect outputs\"; 0 is one defined value, on every "
            "backend and under jit.",
            also=("GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1")),
        SilentChoice(
            "GATHER*, negative indices",
            "count from the end (-1 the last), for signed index types (from FL 3.0)",
            "The pages say so.",
            also=("GATHER_ELEMENTS", "GATHER_ND", "GATHER_ND1")),
        SilentChoice(
            "GATHER's IndexDimensions; GATHER_ND/SCATTER_ND's dimension counts",
            "accepted up to the DimensionCount (the pages say [0, D) or [1, D))",
            "The pages' own examples need D; the output-size rules bound them anyway.",
            also=("GATHER_ND", "GATHER_ND1", "SCATTER_ND")),
    ),
)


@operator(GATHER)
def gather(input, indices, *, axis, index_dimensions):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2], [3, 4], [5, 6]], np.float32)  # the page's Example 2
        >>> dmljax.gather(x, np.array([[0, 1, 1, 2]], np.uint32), axis=0, index_dimensions=1)
        Array([[1., 2.],
               [3., 4.],
               [3., 4.],
               [5., 6.]], dtype=float32)
        >>> dmljax.gather(np.array([11, 12, 13, 14], np.int32), np.array([3, -1, 4], np.int32),
        ...               axis=0, index_dimensions=1)  # -1: the last; 4: out of range, 0
        Array([14, 14,  0], dtype=int32)
    """
    d = input.ndim
    rel = indices.reshape(indices.shape[d - index_dimensions:])
    pos, valid = resolve_index(rel, input.shape[axis])
    r = pos.ndim
    dnums = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(axis)) + tuple(range(axis + r, d + r - 1)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    out = exact_gather(input, pos[..., None], dnums, input.shape[:axis] + (1,) + input.shape[axis + 1:])
    valid = valid.reshape((1,) * axis + valid.shape + (1,) * (d - axis - 1))
    out = jnp.where(valid, out, jnp.zeros((), input.dtype))
    return out.reshape(right_aligned(out.shape, d))


# -------------------------------------------------------------------------------- GATHER_ELEMENTS
def _elements_checks(tensors, attrs, level) -> list[Violation]:
    return elements_checks(tensors, attrs, ("InputTensor", "IndicesTensor"), "InputTensor")


def _elements_outputs(tensors, attrs, problems) -> dict:
    return {"OutputTensor": TensorInfo(tensors["IndicesTensor"].shape, tensors["InputTensor"].data_type)}


GATHER_ELEMENTS = OpSpec(
    enum_name=PREFIX + "GATHER_ELEMENTS",
    summary=("Gathers elements from the input tensor along the given axis using the indices tensor "
             "to remap into the input."),
    formula="output[i, j, k, ...] = input[index[i, j, k, ...], j, k, ...] // if axis == 0",
    tensors=GATHER_TENSORS,
    support=(
        *GATHER_TABLES_SINCE_2_1,
    ),
    params=(ParamSpec("Axis", "UINT", doc=("The axis dimension of InputTensor to gather along, ranging "
                                           "[0, InputTensor.DimensionCount).")),),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient=("dInput = the scatter-add of dY at the gathered positions (duplicates add up); "
              "out-of-range indices pass nothing; IndicesTensor: no gradient."),
    notes=(OUT_OF_RANGE_GATHER + " The page is silent on indices out of range: 0 is dmljax's choice. "
           "The IndicesTensor's Sizes equal the InputTensor's except along Axis, where any size is "
           "allowed; the OutputTensor's Sizes are the IndicesTensor's."),
    extra_checks=(_elements_checks,),
    infer_outputs=_elements_outputs,
)


@operator(GATHER_ELEMENTS)
def gather_elements(input, indices, *, axis):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(1, 10, dtype=np.float32).reshape(3, 3)  # the page's example
        >>> dmljax.gather_elements(x, np.array([[1, 2, 0], [2, 0, 0]], np.uint32), axis=0)
        Array([[4., 8., 3.],
               [7., 2., 3.]], dtype=float32)
    """
    pos, valid = resolve_index(indices, input.shape[axis])
    out = exact_move(functools.partial(jnp.take_along_axis, axis=axis, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS),
                     input, pos)
    return jnp.where(valid, out, jnp.zeros((), input.dtype))


# -------------------------------------------------------------------------------- GATHER_ND, GATHER_ND1
def nd_layout(tensors, attrs):
    """(input's relevant Sizes, indices' relevant Sizes, tuple size k, batch count b) of a
    GATHER_ND/GATHER_ND1/SCATTER_ND call, from InputDimensionCount and IndicesDimensionCount."""
    x, idx = tensors["InputTensor"].shape, tensors["IndicesTensor"].shape
    m, q, b = attrs["InputDimensionCount"], attrs["IndicesDimensionCount"], attrs.get("BatchDimensionCount", 0)
    x_rel, idx_rel = x[len(x) - m:], idx[len(idx) - q:]
    return x_rel, idx_rel, idx_rel[-1], b


def nd_checks(tensors, attrs, updates: bool = False) -> list[Violation]:
    """The rules GATHER_ND, GATHER_ND1 and SCATTER_ND share: the counts in range, the irrelevant
    leading sizes 1, the index tuples no longer than the input's relevant dimensions (after the
    batch ones), the batch sizes equal, and the result (GATHER_ND's output, SCATTER_ND's
    UpdatesTensor) no larger than the DimensionCount."""
    names = ("InputTensor", "IndicesTensor") + (("UpdatesTensor",) if updates else ())
    problems = same_dimension_count(tensors, names)
    x, idx = tensors.get("InputTensor"), tensors.get("IndicesTensor")
    m, q = attrs.get("InputDimensionCount"), attrs.get("IndicesDimensionCount")
    b = attrs.get("BatchDimensionCount", 0)
    if problems or x is None or idx is None or m is None or q is None or b is None or not x.shape:
        return problems
    d = len(x.shape)
    for name, arg, v in (("InputDimensionCount", "input_dimension_count", m),
                         ("IndicesDimensionCount", "indices_dimension_count", q)):
        if not 1 <= v <= d:
            problems.append(Violation(name, arg, f"is {v} for {d}-dimensional tensors", f"in the range [1, {d}]"))
    if problems:
        return problems
    for name, arg, sizes, count, what in (("InputTensor", "input", x.shape, m, "InputDimensionCount"),
                                          ("IndicesTensor", "indices", idx.shape, q, "IndicesDimensionCount")):
        if not leading_ones(sizes, count):
            problems.append(Violation(name, arg, f"has Sizes {list(sizes)} with {what} {count}",
                                      f"sizes of 1 before its last {count} (the irrelevant leading ones)",
                                      f"raise {snake(what)} to count every dimension of size > 1"))
    if problems:
        return problems
    x_rel, idx_rel, k, b = nd_layout(tensors, attrs)
    if b >= min(m, q) and b:
        problems.append(Violation("BatchDimensionCount", "batch_dimension_count",
                                  f"is {b} with InputDimensionCount {m} and IndicesDimensionCount {q}",
                                  f"less than both (at most {min(m, q) - 1})"))
        return problems
    if b + k > m:
        problems.append(Violation(
            "IndicesTensor", "indices", f"holds index tuples of {k} coordinates (its last size)",
            f"at most InputDimensionCount - BatchDimensionCount = {m - b} coordinates"))
        return problems
    if x_rel[:b] != idx_rel[:b]:
        problems.append(Violation("IndicesTensor", "indices", f"has batch Sizes {list(idx_rel[:b])}",
                                  f"the InputTensor's batch Sizes {list(x_rel[:b])}"))
        return problems
    whole = idx_rel[:-1] + x_rel[b + k:]
    if right_aligned(whole, d) is None:
        problems.append(Violation("UpdatesTensor" if updates else "OutputTensor", "updates" if updates else "",
                                  f"would have Sizes {list(whole)} ({len(whole)} dimensions)",
                                  f"at most {d} dimensions"))
    return problems


def snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def nd_shape(tensors, attrs) -> tuple[int, ...]:
    """{1..., Indices' relevant Sizes without the last, Input's relevant Sizes after the batch
    dimensions and the tuple}, right-aligned to the DimensionCount."""
    x_rel, idx_rel, k, b = nd_layout(tensors, attrs)
    return right_aligned(idx_rel[:-1] + x_rel[b + k:], len(tensors["InputTensor"].shape))


def _gather_nd_checks(tensors, attrs, level) -> list[Violation]:
    return nd_checks(tensors, attrs)


def _gather_nd_outputs(tensors, attrs, problems) -> dict:
    return {"OutputTensor": TensorInfo(nd_shape(tensors, attrs), tensors["InputTensor"].data_type)}


def gather_nd_core(x, indices, m: int, q: int, b: int) -> jnp.ndarray:
    """out[batch, t..., rest...] = x_rel[batch, indices[batch, t..., :], rest...] (0 where an
    index tuple is out of range), right-aligned to the DimensionCount."""
    d = x.ndim
    x_rel = x.reshape(x.shape[d - m:])
    idx_rel = indices.reshape(indices.shape[d - q:])
    k = idx_rel.shape[-1]
    pos, valid = resolve_tuples(idx_rel, x_rel.shape[b:b + k])
    dnums = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(q - 1, q - 1 + m - b - k)),
        collapsed_slice_dims=tuple(range(b, b + k)),
        start_index_map=tuple(range(b, b + k)),
        operand_batching_dims=tuple(range(b)),
        start_indices_batching_dims=tuple(range(b)))
    out = exact_gather(x_rel, pos, dnums, (1,) * (b + k) + x_rel.shape[b + k:])
    out = masked(out, valid)
    return out.reshape(right_aligned(out.shape, d))


_ND_PARAMS = (
    ParamSpec("InputDimensionCount", "UINT",
              doc=("The number of actual input dimensions within the InputTensor after ignoring any "
                   "irrelevant leading ones, ranging [1, InputTensor.DimensionCount].")),
    ParamSpec("IndicesDimensionCount", "UINT",
              doc=("The number of actual index dimensions within the IndicesTensor after ignoring any "
                   "irrelevant leading ones, ranging [1, IndicesTensor.DimensionCount].")),
)

_ND_NOTES = (OUT_OF_RANGE_GATHER.replace("the element (the slice) it selects", "the whole slice its tuple selects")
             + " A tuple with any coordinate out of range gives 0 for its whole slice (the page is "
             "silent: dmljax's choice). The sizes before the last InputDimensionCount (IndicesDimensionCount) "
             "must be 1; the index tuples (the IndicesTensor's last size) may not be longer than the "
             "InputTensor's relevant dimensions{batch}.")

GATHER_ND = OpSpec(
    enum_name=PREFIX + "GATHER_ND",
    summary=("Gathers elements from the input tensor, using the indices tensor to remap indices to "
             "entire subblocks of the input."),
    formula="output[...] = input[indices[...]]",
    tensors=GATHER_TENSORS,
    support=(
        *GATHER_TABLES_SINCE_2_1,
    ),
    params=_ND_PARAMS,
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient=("dInput = the scatter-add of dY's slices at the gathered positions (duplicates add up); "
              "out-of-range tuples pass nothing; IndicesTensor: no gradient."),
    notes=_ND_NOTES.format(batch=""),
    extra_checks=(_gather_nd_checks,),
    infer_outputs=_gather_nd_outputs,
)


@operator(GATHER_ND)
def gather_nd(input, indices, *, input_dimension_count, indices_dimension_count):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[0, 1], [2, 3]], np.float32)  # the page's Example 1
        >>> dmljax.gather_nd(x, np.array([[1], [0]], np.uint32), input_dimension_count=2,
        ...                  indices_dimension_count=2)
        Array([[2., 3.],
               [0., 1.]], dtype=float32)
    """
    return gather_nd_core(input, indices, input_dimension_count, indices_dimension_count, 0)


GATHER_ND1 = OpSpec(
    enum_name=PREFIX + "GATHER_ND1",
    summary=("Gathers elements from the input tensor, using the indices tensor to remap indices to "
             "entire subblocks of the input."),
    formula="output[batch, ...] = input[batch, indices[batch, ...], ...]",
    tensors=GATHER_TENSORS,
    support=(
        _indices_table("4.1", "1 to 8", V41, INT64_INT32_UINT64_UINT32),
        _indices_table("3.0", "1 to 8", V30, INT64_INT32_UINT64_UINT32),
    ),
    params=_ND_PARAMS + (
        ParamSpec("BatchDimensionCount", "UINT",
                  doc=("The number of dimensions within each tensor that are considered independent "
                       "batches: the first ones of the relevant dimensions of InputTensor and "
                       "IndicesTensor, with equal sizes.")),
    ),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient=("dInput = the scatter-add of dY's slices at the gathered positions within each batch "
              "(duplicates add up); out-of-range tuples pass nothing; IndicesTensor: no gradient."),
    notes=_ND_NOTES.format(batch=" after the batch ones") + (
        " The batch dimensions are the first BatchDimensionCount of the relevant dimensions (the "
        "page's example: IndicesTensor {1,3,4,5,6,7}, IndicesDimensionCount 5, batches {3,4}); their "
        "sizes must be equal in both tensors, and BatchDimensionCount below both dimension counts. "
        "BatchDimensionCount is required (a zero-initialized desc gives 0: GATHER_ND)."),
    extra_checks=(_gather_nd_checks,),
    infer_outputs=_gather_nd_outputs,
)


@operator(GATHER_ND1)
def gather_nd1(input, indices, *, input_dimension_count, indices_dimension_count, batch_dimension_count):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)  # the page's Example 2
        >>> i = np.array([[[[0, 0], [1, 1]], [[1, 1], [0, 0]], [[0, 1], [1, 0]]]], np.uint32)
        >>> dmljax.gather_nd1(x, i, input_dimension_count=3, indices_dimension_count=3,
        ...                   batch_dimension_count=1)[0, 0]
        Array([[ 0.,  3.],
               [ 7.,  4.],
               [ 9., 10.]], dtype=float32)
    """
    return gather_nd_core(input, indices, input_dimension_count, indices_dimension_count, batch_dimension_count)


def flat_size(shape) -> int:
    return int(math.prod(shape))


