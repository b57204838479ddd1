"""SCATTER_ELEMENTS (alias SCATTER) and SCATTER_ND (writes at indices), of the indexing family:
each page's record with its formula below it.

The pages leave overlapping writes unordered ("no guarantee of which last write wins"); dmljax
makes the last update in row-major order of the UpdatesTensor win, on every backend. XLA's
assigning scatter does not promise an order either, so the formula never asks it to choose:
a scatter-max of each update's position (1 + its row-major number, 0 for none) into a UINT32
"winner" array of the written cells (max is commutative: no order to depend on), then one
gather of the winning updates and a select against the input. Out-of-range indices drop their
update (they contribute position 0). On the CPU, SCATTER_ELEMENTS's winners are numbered along Axis
in the narrowest type that holds them, and each cell reads its winner at its own coordinates
(``_by_numbers_along_axis``)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT32_FLOAT16, INT64_INT32_UINT64_UINT32, UINT32
from dmljax._src.errors import Violation
from dmljax._src.op import operator
from dmljax._src.ops.indexing.gather import (
    V30, V41, elements_checks, flat_size, nd_checks, nd_layout, nd_shape, position_type, resolve_index, resolve_tuples,
)
from dmljax._src.partition import along_leading_axes
from dmljax._src.spec import OpSpec, PageSlip, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

LAST_WINS = (
    "An index outside [-size, size) (>= size for an unsigned type) drops its update; negative indices of a "
    "signed type count from the end (-1 is the last), as the page says from DML_FEATURE_LEVEL_3_0.")


def _table(level, dims, data, indices):
    return table(level, InputTensor=(dims, data), IndicesTensor=(dims, indices), UpdatesTensor=(dims, data),
                 OutputTensor=(dims, data))


def last_writes(cells: int, target: jnp.ndarray, valid: jnp.ndarray) -> jnp.ndarray:
    """For each of ``cells`` cells, 1 + the row-major number of the last valid update whose
    ``target`` (flat cell number) it is, or 0: a UINT32 scatter-max, so the result does not
    depend on the order the backend applies the updates in."""
    n = flat_size(target.shape)
    number = lax.iota(np.uint32, n).reshape(target.shape) + np.uint32(1)
    number = jnp.where(valid, number, np.uint32(0))
    target = jnp.where(valid, target, jnp.zeros((), target.dtype))
    return jnp.zeros((cells,), np.uint32).at[target.reshape(-1)].max(
        number.reshape(-1), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def take_winners(winner: jnp.ndarray, updates_rows: jnp.ndarray, input_rows: jnp.ndarray) -> jnp.ndarray:
    """Row c of the result: the winning update row ``winner[c] - 1`` where ``winner[c] > 0``,
    else the input's row c."""
    n = updates_rows.shape[0]
    pt = position_type(n)
    which = (jnp.maximum(winner, np.uint32(1)) - np.uint32(1)).astype(pt)
    rows = jnp.take(updates_rows, which, axis=0, mode="clip")
    hit = (winner > np.uint32(0)).reshape((-1,) + (1,) * (input_rows.ndim - 1))
    return jnp.where(hit, rows, input_rows)


_SUMMARY = ("Copies the whole input tensor to the output, then overwrites selected indices with "
            "corresponding values from the updates tensor.")  # both pages' first sentence
_TENSORS = (TensorSpec("InputTensor", "input"), TensorSpec("IndicesTensor", "input"),
            TensorSpec("UpdatesTensor", "input"), TensorSpec("OutputTensor", "output"))
_TABLES_SINCE_2_1 = (
    _table("4.1", "1 to 8", V41, INT64_INT32_UINT64_UINT32),
    _table("3.0", "1 to 8", V30, INT64_INT32_UINT64_UINT32),
    _table("2.1", "4", V30, UINT32),
)
"""Both scatters' tables from DML_FEATURE_LEVEL_2_1 on (the same on both pages)."""


# -------------------------------------------------------------------------------- SCATTER_ELEMENTS
def _elements_checks(tensors, attrs, level) -> list[Violation]:
    return elements_checks(tensors, attrs, ("InputTensor", "IndicesTensor", "UpdatesTensor"), "OutputTensor")


SCATTER_ELEMENTS = OpSpec(
    enum_name=PREFIX + "SCATTER_ELEMENTS",
    summary=_SUMMARY,
    formula="output[index[i, j, k, ...], j, k, ...] = updates[i, j, k, ...] // if axis == 0",
    tensors=_TENSORS,
    support=(
        *_TABLES_SINCE_2_1,
        _table("2.0", "4", FLOAT32_FLOAT16, UINT32),
    ),
    params=(ParamSpec("Axis", "UINT", doc=("The axis dimension to use for indexing in OutputTensor, "
                                           "ranging [0, OutputTensor.DimensionCount).")),),
    constraints=(SameDataType(("InputTensor", "UpdatesTensor", "OutputTensor")),
                 SameSizes(("IndicesTensor", "UpdatesTensor")),
                 SameSizes(("InputTensor", "OutputTensor"))),
    math=False,
    gradient=("dInput = dY where no update landed, 0 where one did; dUpdates = dY at the cell an "
              "update won, 0 for an update that was overwritten or dropped; IndicesTensor: no gradient."),
    notes=(LAST_WINS + " The IndicesTensor's Sizes equal the InputTensor's except along Axis; the "
           "UpdatesTensor's equal the IndicesTensor's. DML_OPERATOR_SCATTER is the same operator (an alias of the enum "
           "value): dmljax.get_operator('SCATTER') returns scatter_elements."),
    extra_checks=(_elements_checks,),
    page_slip=PageSlip(
        levels={"2.0": "1.0"},
        why=("The page's Availability and oldest table say DML_FEATURE_LEVEL_1_0; DirectML.h and the "
             "feature-level history introduce the operator at 2.0, which the record follows.")),
    silent=(
        SilentChoice(
            "SCATTER_ELEMENTS / SCATTER_ND, duplicate indices",
            "the last update in row-major order of UpdatesTensor wins, on every backend",
            "The page: \"no guarantee of which last write wins\"; XLA's scatter order is unspecified too, so "
            "dmljax picks the winner by a max over update numbers.",
            also=("SCATTER_ND",)),
        SilentChoice(
            "SCATTER*, an index out of range",
            "the update (or the tuple's slice) is dropped",
            "Never a write out of bounds.",
            also=("SCATTER_ND",)),
    ),
)


@operator(SCATTER_ELEMENTS)
def scatter_elements(input, indices, updates, *, axis):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([0, 1, 2, 3, 4], np.float32)  # the page's Example 1
        >>> dmljax.scatter_elements(x, np.array([3, 1, 3, 0], np.uint32),
        ...                         np.array([5, 6, 7, 8], np.float32), axis=0)
        Array([8., 6., 2., 7., 4.], dtype=float32)
    """
    lead = axis if indices.shape[:axis] == input.shape[:axis] else 0
    run = functools.partial(_scatter_elements, axis=axis)
    # the axes before Axis are independent where the three tensors share them: split over the
    # devices along them (XLA's partitioner would gather the flattened scatter: dmljax/_src/partition.py)
    return along_leading_axes(run, lead)(input, indices, updates) if lead else run(input, indices, updates)


def _flat_positions(into: tuple, axis: int, along):
    """The flat position in an array of shape ``into`` of each element of ``along``: the
    element's own coordinates, with ``along``'s value as its coordinate along ``axis``."""
    pt = position_type(flat_size(into))
    strides = np.cumprod((1,) + tuple(into)[::-1])[:-1][::-1]
    position = jnp.zeros(along.shape, pt)
    for d in range(len(into)):
        coord = along.astype(pt) if d == axis else lax.broadcasted_iota(pt, along.shape, d)
        position = position + coord * np.asarray(strides[d], pt)
    return position


def _targets(shape, indices, axis: int):
    """(flat cell, valid) of each update: its own coordinates, with the index along Axis."""
    pos, valid = resolve_index(indices, shape[axis])
    return _flat_positions(shape, axis, pos), valid


def _winners(input, indices, axis: int):
    return last_writes(flat_size(input.shape), *_targets(input.shape, indices, axis))


def _by_winners(input, indices, updates, axis: int):
    """The winners' scatter-max, then a gather of the winning updates and a select."""
    out = take_winners(_winners(input, indices, axis), updates.reshape(-1), input.reshape(-1))
    return out.reshape(input.shape)


def _by_numbers_along_axis(input, indices, updates, axis: int):
    """The CPU's form: the winners' scatter-max takes each update's number along Axis (1 + its
    index there: two updates that meet in a cell differ only there, so the later in row-major
    order has the larger), in the narrowest unsigned type that holds them (UINT16 for an axis of
    up to 65,534), and the winning update is read at the cell's own coordinates with that index
    along Axis. The winners' array of flat UINT32 numbers took 1.5-1.7x the twin's assigning
    scatter, and keys of the number and the value's bits in one UINT64 scatter-max up to 2x, at 8
    input sets of 2^20 elements (benchmarks/results/cpu/twins)."""
    target, valid = _targets(input.shape, indices, axis)
    m = indices.shape[axis]
    number_type = next(t for t in (np.uint8, np.uint16, np.uint32) if m <= np.iinfo(t).max)
    number = jnp.where(valid, lax.broadcasted_iota(number_type, indices.shape, axis) + number_type(1), number_type(0))
    won = jnp.zeros((flat_size(input.shape),), number_type).at[jnp.where(valid, target, 0).reshape(-1)].max(
        number.reshape(-1), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS).reshape(input.shape)
    position = _flat_positions(indices.shape, axis, jnp.maximum(won, number_type(1)) - number_type(1))
    value = jnp.take(updates.reshape(-1), position.reshape(-1), mode="clip").reshape(input.shape)
    return jnp.where(won != 0, value, input)


def _scatter_elements(input, indices, updates, *, axis):
    def run(x, i, u):
        return lax.platform_dependent(x, i, u, cpu=lambda *a: _by_numbers_along_axis(*a, axis),
                                      default=lambda *a: _by_winners(*a, axis))

    def fwd(x, i, u):  # the same values, from the winners, which the gradient needs
        winner = _winners(x, i, axis)
        return take_winners(winner, u.reshape(-1), x.reshape(-1)).reshape(x.shape), winner

    def bwd(winner, ct):
        _, pull = jax.vjp(lambda x, u: take_winners(winner, u.reshape(-1), x.reshape(-1)).reshape(x.shape),
                          jnp.zeros(input.shape, ct.dtype), jnp.zeros(updates.shape, ct.dtype))
        dx, du = pull(ct)
        return dx, None, du

    return backward_rule(run, fwd, bwd)(input, indices, updates)


# -------------------------------------------------------------------------------- SCATTER_ND
def _nd_checks(tensors, attrs, level) -> list[Violation]:
    problems = nd_checks(tensors, attrs, updates=True)
    x, upd = tensors.get("InputTensor"), tensors.get("UpdatesTensor")
    if problems or upd is None or x is None or not x.shape or tensors.get("IndicesTensor") is None:
        return problems
    if attrs.get("InputDimensionCount") is None or attrs.get("IndicesDimensionCount") is None:
        return problems
    want = nd_shape(tensors, attrs)
    if upd.shape != want:
        problems.append(Violation("UpdatesTensor", "updates", f"has Sizes {list(upd.shape)}",
                                  f"Sizes {list(want)} (the IndicesTensor's leading Sizes and the "
                                  f"InputTensor's trailing ones, right-aligned)"))
    return problems


SCATTER_ND = OpSpec(
    enum_name=PREFIX + "SCATTER_ND",
    summary=_SUMMARY,
    formula="output[indices[...]] = updates[...]",
    tensors=_TENSORS,
    support=(
        *_TABLES_SINCE_2_1,
    ),
    params=(
        ParamSpec("InputDimensionCount", "UINT",
                  doc=("The number of actual input dimensions within the InputTensor after ignoring any "
                       "irrelevant leading ones (dmljax: 1 to InputTensor.DimensionCount; see the notes).")),
        ParamSpec("IndicesDimensionCount", "UINT",
                  doc=("The number of actual index dimensions within the IndicesTensor after ignoring any "
                       "irrelevant leading ones (dmljax: 1 to IndicesTensor.DimensionCount).")),
    ),
    constraints=(SameDataType(("InputTensor", "UpdatesTensor", "OutputTensor")),
                 SameSizes(("InputTensor", "OutputTensor"))),
    math=False,
    gradient=("dInput = dY where no update landed, 0 where one did; dUpdates = dY's slice where an "
              "update's tuple won, 0 for one overwritten or dropped; IndicesTensor: no gradient."),
    notes=(LAST_WINS.replace("drops its update", "(any coordinate of a tuple) drops its whole slice")
           + " The UpdatesTensor's Sizes are the page's: the IndicesTensor's relevant Sizes without "
           "the last, then the InputTensor's Sizes after the tuple's coordinates, right-aligned with "
           "leading 1s. InputDimensionCount and IndicesDimensionCount may be 1 to DimensionCount: the "
           "page says [1, DimensionCount), which would refuse every call that indexes all dimensions "
           "(GATHER_ND's page allows DimensionCount). The page's example (a 1-D InputTensor with 2-D "
           "indices and FLOAT32 indices) breaks its own tables and DimensionCount rule; read with "
           "tensors of 2 dimensions and UINT32 indices it holds."),
    extra_checks=(_nd_checks,),
)


@operator(SCATTER_ND)
def scatter_nd(input, indices, updates, *, input_dimension_count, indices_dimension_count):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2, 3, 4, 5, 6, 7, 8]], np.float32)  # the page's example, 2-D
        >>> dmljax.scatter_nd(x, np.array([[4], [3], [1], [7]], np.uint32),
        ...                   np.array([[9, 10, 11, 12]], np.float32),
        ...                   input_dimension_count=1, indices_dimension_count=2)
        Array([[ 1., 11.,  3., 10.,  9.,  6.,  7., 12.]], dtype=float32)
    """
    tensors = {"InputTensor": input, "IndicesTensor": indices}
    x_rel, idx_rel, k, _ = nd_layout(tensors, {"InputDimensionCount": input_dimension_count,
                                               "IndicesDimensionCount": indices_dimension_count})
    cells_shape, slice_shape = x_rel[:k], x_rel[k:]
    cells = flat_size(cells_shape)
    pos, valid = resolve_tuples(indices.reshape(idx_rel), cells_shape)
    pt = position_type(cells)
    strides = np.cumprod((1,) + cells_shape[::-1])[:-1][::-1]
    target = jnp.zeros(valid.shape, pt)
    for j in range(k):
        target = target + pos[..., j].astype(pt) * np.asarray(strides[j], pt)
    winner = last_writes(cells, target, valid)
    rows = updates.reshape((flat_size(idx_rel[:-1]),) + slice_shape)
    out = take_winners(winner, rows, input.reshape((cells,) + slice_shape))
    return out.reshape(input.shape)
