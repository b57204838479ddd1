"""ONE_HOT (one-hot encoding along an axis), of the indexing family: the page's record with its
formula below it."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32_FLOAT16, INT64_INT32_UINT64_UINT32, UINT32
from dmljax._src.errors import Violation
from dmljax._src.op import operator
from dmljax._src.ops.indexing.gather import V30, V41, flat_size, resolve_index, same_dimension_count
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table


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
    silent=(
        SilentChoice(
            "ONE_HOT, an index out of range",
            "the whole sequence is OffValue",
            "The page's Example 4."),
    ),
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
