"""NONZERO_COORDINATES (the coordinates of the nonzero elements, and their count), of the indexing
family: the page's record with its formula below it."""

from __future__ import annotations

import jax.numpy as jnp

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, UINT32, DataType
from dmljax._src.errors import Violation
from dmljax._src.numerics import flush_denormals
from dmljax._src.op import operator
from dmljax._src.ops.indexing.gather import flat_size
from dmljax._src.spec import OpSpec, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo


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
    silent=(
        SilentChoice(
            "NONZERO_COORDINATES' rows past the count",
            "0",
            "The page leaves them undefined; zeros are the same on every backend. The coordinates are sized "
            "for the worst case, so shapes are static under jit; left out, the output Sizes are the widest the "
            "page allows."),
        SilentChoice(
            "NONZERO_COORDINATES, FLOAT32 denormals",
            "zero (as dmljax's comparisons read them)",
            "Math reads FLOAT32 denormals as zero ([Denormals](semantics.md#denormals)); the page names only "
            "-0.0 and +0.0."),
    ),
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
