"""ONE_HOT (one-hot encoding along an axis) and NONZERO_COORDINATES, of the indexing family: each
page's record with its formula below it."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, INT64_INT32_UINT64_UINT32, UINT32, DataType,
)
from dmljax._src.errors import Violation
from dmljax._src.numerics import flush_denormals
from dmljax._src.op import operator
from dmljax._src.ops.indexing.gather import V30, V41, flat_size, resolve_index, same_dimension_count
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, TensorSpec, table
from dmljax._src.validate import TensorInfo


def _table(level, dims, indices, values):
    return table(level, IndicesTensor=(dims, indices), ValuesTensor=(dims, values), OutputTensor=(dims, values))


def _one_hot_checks(tensors, attrs, level) -> list[Violation]:
    problems = same_dimension_count(tensors, ("IndicesTensor", "ValuesTensor"))
    idx, values, out, axis = (tensors.get("IndicesTensor"), tensors.get("ValuesTensor"), tensors.get("OutputTensor"),
                              attrs.get("Axis"))
    if values is not None and flat_size(values.shape) < 2:
        problems.append(Violation("ValuesTensor", "values", f"has {flat_size(values.shape)} element (Sizes "
                                  f"{list(values.shape)})", "at least two elements (OffValue, then OnValue)"))
    if idx is None or axis is None or not idx.shape:
        return problems
    d = len(idx.shape)
    if axis >= d:
        return problems + [Violation("Axis", "axis", f"is {axis} for a {d}-dimensional IndicesTensor",
                                     f"less than the IndicesTensor's DimensionCount: 0 to {d - 1}")]
    if idx.shape[axis] != 1:
        problems.append(Violation("IndicesTensor", "indices", f"has size {idx.shape[axis]} along Axis {axis} "
                                  f"(Sizes {list(idx.shape)})", "size 1 along Axis"))
    if out is None or not out.shape:
        return problems
    if len(out.shape) != d:
        problems.append(Violation("OutputTensor", "output_sizes", f"has {len(out.shape)} dimensions (Sizes "
                                  f"{list(out.shape)})", f"the IndicesTensor's DimensionCount ({d})"))
    elif any(out.shape[k] != idx.shape[k] for k in range(d) if k != axis):
        want = list(idx.shape)
        want[axis] = "depth"
        problems.append(Violation("OutputTensor", "output_sizes", f"has Sizes {list(out.shape)} for IndicesTensor "
                                  f"Sizes {list(idx.shape)}", f"the IndicesTensor's Sizes except along Axis: "
                                  f"{want}".replace("'depth'", "depth")))
    return problems


ONE_HOT = OpSpec(
    enum_name=PREFIX + "ONE_HOT",
    summary=("Produces a tensor filled with one-hot encoded values."),
    formula="[[[[1, 0, 0, 0],    // The one-hot encoding is formed across the rows\n"
            "(the page's Example 1: indices [0, 3, 2] along Axis 3 of Sizes {1,1,3,4}, OffValue 0, OnValue 1)",
    tensors=(TensorSpec("IndicesTensor", "input"), TensorSpec("ValuesTensor", "input"),
             TensorSpec("OutputTensor", "output", sizes_arg=True)),
    support=(
        _table("4.1", "1 to 8", INT64_INT32_UINT64_UINT32, V41),
        _table("3.0", "1 to 8", INT64_INT32_UINT64_UINT32, V30),
        _table("2.1", "4", UINT32, V30),
        _table("2.0", "4", UINT32, FLOAT32_FLOAT16),
    ),
    params=(ParamSpec("Axis", "UINT", doc=("The index of the dimension to produce one-hot encoded "
                                           "sequences along; less than the IndicesTensor's DimensionCount.")),),
    constraints=(SameDataType(("ValuesTensor", "OutputTensor")),),
    math=False,
    gradient=("dValues[0] (OffValue) = the sum of dY over the off elements, dValues[1] (OnValue) = "
              "the sum over the on elements, 0 for the other elements of ValuesTensor; IndicesTensor: "
              "no gradient."),
    notes=("The OutputTensor's Sizes are the caller's (output_sizes=): the IndicesTensor's with the "
           "depth along Axis. OffValue is the ValuesTensor's first element and OnValue its second in "
           "row-major order (the page: 'the 1st element along the fastest-changing dimension of size "
           ">1', which is the second element of a packed tensor); further elements are unused. An "
           "index outside [-depth, depth) (>= depth for an unsigned type) sets its whole sequence to "
           "OffValue, as the page documents; negative indices of a signed type count from the end. "
           "The values move untouched (NaN payloads, FLOAT32 denormals)."),
    extra_checks=(_one_hot_checks,),
)


@operator(ONE_HOT)
def one_hot(indices, values, *, axis, output_sizes):
    """Example:
        >>> import numpy as np, dmljax
        >>> i = np.array([-3, 100, 3], np.int32).reshape(1, 1, 3, 1)  # the page's Example 4
        >>> dmljax.one_hot(i, np.array([[[[0, 1]]]], np.float32), axis=3, output_sizes=(1, 1, 3, 4))[0, 0]
        Array([[0., 1., 0., 0.],
               [0., 0., 0., 0.],
               [0., 0., 0., 1.]], dtype=float32)
    """
    depth = output_sizes[axis]
    flat = values.reshape(-1)
    off, on = flat[0], flat[1]
    pos, valid = resolve_index(indices, depth)
    hit = valid & (pos == lax.broadcasted_iota(pos.dtype, tuple(output_sizes), axis))
    return jnp.where(hit, on, off)


# --------------------------------------------------------------------------------------------
def _effective_rank(shape) -> int:
    """"The DimensionCount of that tensor excluding leading dimensions of size 1"."""
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return len(shape) - lead


def _worst_case(tensors, attrs, problems) -> dict:
    """Both outputs' Sizes when the caller leaves them out: the count all 1s with the input's
    DimensionCount; the coordinates {1, ..., M, N}, M the input's elements and N its
    DimensionCount (the widest the page allows), with the input's DimensionCount (at least 2)."""
    x = tensors["InputTensor"]
    r = len(x.shape)
    given = {k: tensors[k].shape for k in ("OutputCountTensor", "OutputCoordinatesTensor") if k in tensors}
    count = given.get("OutputCountTensor", (1,) * r)
    coords = given.get("OutputCoordinatesTensor", (1,) * (max(r, 2) - 2) + (flat_size(x.shape), r))
    return {"OutputCountTensor": TensorInfo(count, DataType.UINT32),
            "OutputCoordinatesTensor": TensorInfo(coords, DataType.UINT32)}


def _nonzero_checks(tensors, attrs, level) -> list[Violation]:
    """The page's rules for the outputs' Sizes (when the caller gives them)."""
    x, count, coords = (tensors.get("InputTensor"), tensors.get("OutputCountTensor"),
                        tensors.get("OutputCoordinatesTensor"))
    problems = []
    if x is None:
        return problems
    if count is not None and any(s != 1 for s in count.shape):
        problems.append(Violation("OutputCountTensor", "output_count_sizes", f"has Sizes {list(count.shape)}",
                                  "a scalar: every size 1"))
    if coords is not None and coords.shape:
        m, r = flat_size(x.shape), len(x.shape)
        lo = _effective_rank(x.shape)
        *lead, rows, n = coords.shape if len(coords.shape) >= 2 else (None, None)
        if rows is not None and (any(s != 1 for s in lead) or rows != m or not lo <= n <= r):
            want = (1,) * (len(coords.shape) - 2) + (m,)
            problems.append(Violation(
                "OutputCoordinatesTensor", "output_coordinates_sizes", f"has Sizes {list(coords.shape)}",
                f"{{{', '.join(map(str, want))}, N}}: one row per input element ({m}), N from the InputTensor's "
                f"effective rank ({lo}) to its DimensionCount ({r})",
                "leave output_coordinates_sizes out for the worst case with N = DimensionCount"))
    return problems


_NZ_TYPES = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8

NONZERO_COORDINATES = OpSpec(
    enum_name=PREFIX + "NONZERO_COORDINATES",
    summary="Computes the N-dimensional coordinates of all non-zero elements of the input tensor.",
    formula=("OutputCountTensor: (Sizes:{1,1,1,1}, DataType:UINT32)\n"
             "(the page's example: {1,1,2,4} [[1, 0, 0, 2], [-0, 3.5, 0, -5.2]] gives the count 4 and the "
             "coordinates [0,0,0], [0,0,3], [0,1,1], [0,1,3] in ascending element order, N = 3 of the last "
             "dimensions, then rows the count does not cover)"),
    tensors=(TensorSpec("InputTensor", "input"),
             TensorSpec("OutputCountTensor", "output", sizes_arg=True, sizes_default=True),
             TensorSpec("OutputCoordinatesTensor", "output", sizes_arg=True, sizes_default=True)),
    support=(
        table("4.0", InputTensor=("1 to 8", _NZ_TYPES), OutputCountTensor=("1 to 8", UINT32),
              OutputCoordinatesTensor=("2 to 8", UINT32)),
        table("3.0", InputTensor=("4 to 5", _NZ_TYPES), OutputCountTensor=("4 to 5", UINT32),
              OutputCoordinatesTensor=("4 to 5", UINT32)),
    ),
    math=False,
    gradient="None: both outputs are integer tensors (a count and coordinates).",
    notes=("Returns (count, coordinates), the page's order. The coordinates are sized for the worst "
           "case, every element non-zero, so the call has static shapes under jit: rows past the count "
           "are 0 (the page leaves them undefined; dmljax writes zeros on every backend). Each row holds "
           "the coordinates in the last N dimensions of the InputTensor (the page's example), in "
           "ascending element index. Zero means -0.0 and +0.0 and, as in dmljax's comparisons, FLOAT32 "
           "denormals (math reads them as zero); NaN is non-zero. output_count_sizes and "
           "output_coordinates_sizes are the desc's Sizes: left out, the count is all 1s of the input's "
           "DimensionCount and the coordinates {1, ..., M, N} of the input's DimensionCount (at least 2) "
           "with N = that DimensionCount."),
    extra_checks=(_nonzero_checks,),
    infer_outputs=_worst_case,
)


@operator(NONZERO_COORDINATES)
def nonzero_coordinates(input, *, output_count_sizes, output_coordinates_sizes):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[1.0, 0.0, 0.0, 2.0], [-0.0, 3.5, 0.0, -5.2]]]], np.float32)  # the page's
        >>> count, coords = dmljax.nonzero_coordinates(x, output_coordinates_sizes=(1, 1, 8, 3))
        >>> count.ravel(), coords[0, 0, :5]
        (Array([4], dtype=uint32), Array([[0, 0, 0],
               [0, 0, 3],
               [0, 1, 1],
               [0, 1, 3],
               [0, 0, 0]], dtype=uint32))
    """
    m, n = output_coordinates_sizes[-2], output_coordinates_sizes[-1]
    x = input
    if jnp.issubdtype(x.dtype, jnp.floating):
        x = flush_denormals(x)  # FLOAT32 denormals are zero here, as in the comparisons
    flat = (x != 0).reshape(-1)  # NaN != 0; -0.0 == 0
    count = jnp.sum(flat, dtype=jnp.uint32)
    (where,) = jnp.nonzero(flat, size=m, fill_value=0)
    dims = input.shape[len(input.shape) - n:] if n <= len(input.shape) else (1,) * (n - len(input.shape)) + input.shape
    coords = []
    rest = where.astype(jnp.uint32)
    for size in reversed(dims):  # row-major: the last dimension varies fastest
        coords.append(rest % jnp.uint32(size))
        rest = rest // jnp.uint32(size)
    coords = jnp.stack(coords[::-1], axis=-1)
    live = (jnp.arange(m, dtype=jnp.uint32) < count)[:, None]
    coords = jnp.where(live, coords, jnp.zeros((), jnp.uint32))
    return count.reshape(output_count_sizes), coords.reshape(output_coordinates_sizes)
