"""TOP_K and TOP_K1 (the K largest or smallest elements along an axis, with their indices), of the
reduction family: each page's record, with one formula for both below them."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, UINT32, UINT64_UINT32, DataType,
)
from dmljax._src.enums import AxisDirection
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.top_k import TOP_K_ROWS, top_k_rows
from dmljax._src.kernels.top_k_threshold import TOP_K_THRESHOLD, threshold_rows
from dmljax._src.numerics import F32_TINY, flush_denormals, is_nan
from dmljax._src.op import operator
from dmljax._src.ops.reduction.arg_extreme import _keys, arg_extreme
from dmljax._src.partition import along_leading_axes
from dmljax._src.spec import OpSpec, PageSlip, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

_NEW = FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
_OLD = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8


def _tables(first: str, oldest_types):
    rows = [
        table("5.0", InputTensor=("1 to 8", _NEW), OutputValueTensor=("1 to 8", _NEW),
              OutputIndexTensor=("1 to 8", UINT64_UINT32)),
        table("3.1", InputTensor=("1 to 8", _OLD), OutputValueTensor=("1 to 8", _OLD),
              OutputIndexTensor=("1 to 8", UINT32)),
        table("2.1", InputTensor=("4", _OLD), OutputValueTensor=("4", _OLD), OutputIndexTensor=("4", UINT32)),
    ]
    if oldest_types is not None:
        rows.append(table(first, InputTensor=("4", oldest_types), OutputValueTensor=("4", oldest_types),
                          OutputIndexTensor=("4", UINT32)))
    return tuple(rows)


def _k_rules(tensors, attrs, level) -> list[Violation]:
    """Axis "must be less than the DimensionCount of the InputTensor"; K "must be greater than
    0, but less than the number of elements ... along the dimension specified by Axis" (dmljax
    takes K up to that number: all of them, sorted)."""
    x, axis, k = tensors.get("InputTensor"), attrs.get("Axis"), attrs.get("K")
    if x is None or axis is None or k is None:
        return []
    n = len(x.shape)
    if axis >= n:
        return [Violation("Axis", "axis", f"is {axis} for a {n}-dimensional InputTensor",
                          f"less than the DimensionCount ({n}): 0 to {n - 1}")]
    size = x.shape[axis]
    if not 1 <= k <= size:
        return [Violation("K", "k", f"is {k}", f"1 to {size}, the InputTensor's size along Axis {axis}",
                          "a K larger than the axis has no K elements to select")]
    return []


def _outputs(tensors, attrs, problems) -> dict:
    x, chosen = tensors["InputTensor"], tensors.get("OutputIndexTensor")
    shape = tuple(attrs["K"] if i == attrs["Axis"] else s for i, s in enumerate(x.shape))
    return {"OutputValueTensor": TensorInfo(shape, x.data_type),
            "OutputIndexTensor": TensorInfo(shape, chosen.data_type if chosen else DataType.UINT32)}


# Rows longer than a chunk are cut into chunks, a lax.top_k taken in each, and a lax.top_k taken
# over the chunks' winners (repeated while that shrinks the row by half or more). Exact: the
# winners stay in index order, so ties still go to the lower index. On NVIDIA GPUs, where XLA's
# top_k runs one thread block per row (k <= 16) or sorts the whole row (k > 16), rows are staged
# in chunks of GPU_STAGE_CHUNK: on the H100 (rows of 32,768, 2^26 elements) chunks of 1,024 took
# FLOAT32 k = 32 from 4.96 to 3.44 ms and k = 256 from 4.98 to 4.34 (lax.top_k: 4.66), FLOAT16
# k = 256 from 4.81 to 4.13 (lax.top_k: 6.95). Elsewhere one
# lax.top_k (the CPU's float top_k is one linear pass: chunks of 1,024 took 2.0x the unstaged
# time for k = 8 and 10.4x for k = 256). STAGE_CHUNK, when set, stages on every backend (tests).
GPU_STAGE_CHUNK = 1024
STAGE_CHUNK = None


def _top_k_positions(keys, k: int):
    """``lax.top_k(keys, k)``'s indices, split over the devices along the leading axes of a
    sharded input (XLA's partitioner would gather top_k's whole operand onto each device:
    dmljax/_src/partition.py)."""
    return along_leading_axes(lambda v: lax.top_k(v, k)[1], keys.ndim - 1)(keys)


def _top_k_index(keys, k: int, lowest, chunk=None):
    """The indices (int32) of ``lax.top_k(keys, k)``, ties to the lower index, staged in chunks of
    ``chunk`` (STAGE_CHUNK where set). ``lowest``: a key no element beats (pads a ragged last
    chunk; a pad ties at most with real elements, all before it)."""
    chunk, lead, n = STAGE_CHUNK or chunk, keys.shape[:-1], keys.shape[-1]
    index = None
    while chunk is not None and chunk >= 2 * k and keys.shape[-1] > chunk:
        groups = -(-keys.shape[-1] // chunk)
        extra = groups * chunk - keys.shape[-1]
        if extra:
            keys = jnp.concatenate([keys, jnp.full(lead + (extra,), lowest, keys.dtype)], -1)
            if index is not None:
                index = jnp.concatenate([index, jnp.full(lead + (extra,), n, np.int32)], -1)
        pos = _top_k_positions(keys.reshape(lead + (groups, chunk)), k)
        pos = (pos + (np.arange(groups, dtype=np.int32) * chunk)[:, None]).reshape(lead + (groups * k,))
        keys = jnp.take_along_axis(keys, pos, axis=-1)
        index = pos if index is None else jnp.take_along_axis(index, pos, axis=-1)
    pos = _top_k_positions(keys, k)
    return pos if index is None else jnp.take_along_axis(index, pos, axis=-1)


@functools.partial(jax.custom_jvp, nondiff_argnums=(3,))
def _selected(x, index, values, axis: int):
    """``values``, the elements of ``x`` at ``index`` along ``axis`` as a kernel gathered them, with
    the derivative of that gather (the tangent's elements there; jax.grad scatters the cotangent)."""
    return values


@_selected.defjvp
def _selected_jvp(axis, primals, tangents):
    x, index, values = primals
    return values, jnp.take_along_axis(tangents[0], index, axis=axis)


def top_k_along(x, axis: int, k: int, largest: bool, index_dtype):
    """The ``k`` largest (or smallest) elements along ``axis`` and their indices: ordered by value
    (largest first, or smallest first), ties in ascending index; floats compared as math reads them
    (FLOAT32 denormals as zero, -0 equal to +0) with NaN after every number; the values returned
    are the input's own bits. K = 1 is ARGMAX/ARGMIN's one pass (the first extreme, NaN never
    before a number); over rows on a GPU, two or three Pallas kernels of the same integer keys (a
    threshold, then the elements above it: kernels/top_k_threshold.py, ``TOP_K_THRESHOLD``, K up
    to its MAX_K over rows of 2,048 to 32,768; they also write the values, which _selected
    differentiates) or one (K steps: kernels/top_k.py, ``TOP_K_ROWS``, K up to 16 over rows of
    1,024), with the same indices; otherwise one lax.top_k (its ties go to the lower index) of
    keys in the wanted order."""
    if k == 1:
        index = arg_extreme(x, (axis,), largest, False, np.int32)
        return jnp.take_along_axis(x, index, axis=axis), index.astype(index_dtype)
    v = jnp.moveaxis(jax.lax.stop_gradient(x), axis, -1)

    def xla_index(v, chunk=None):
        def by_integer_keys(t):
            keys = _keys(t, largest)
            if not largest:  # the smallest first: the keys' order reversed (~k never overflows)
                keys = ~keys
            return _top_k_index(keys, k, np.iinfo(keys.dtype).min, chunk)

        if x.dtype == np.float16:
            # FLOAT32 keys with no clash: a FLOAT16 value is a normal FLOAT32 no larger than 65504
            # in size, so its -inf can become -FLT_MAX and NaN -inf, below every number (zeros +0).
            f = v.astype(np.float32)
            f = f if largest else -f
            f = jnp.where(f == 0, jnp.zeros_like(f), f)
            f = jnp.where(f == -np.inf, jnp.full_like(f, -np.finfo(np.float32).max), f)
            return _top_k_index(jnp.where(is_nan(v), jnp.full_like(f, -np.inf), f), k, -np.inf, chunk)
        if jnp.issubdtype(x.dtype, jnp.floating):
            # XLA's top_k has a fast path for floats only (integers sort the whole row: 48x slower
            # for k = 1 on the H100). FLOAT32 keys: the values as math reads them, negated for the
            # smallest, zeros made +0 (XLA orders -0 below +0) and NaN made -inf. That is exact
            # unless a row holds a NaN and a -inf key both (NaN must come after every number): then
            # the integer keys decide, by lax.cond. Both give the same indices, so under a
            # sharded input each device decides for its own rows (along_leading_axes: no
            # all-reduce of the test).
            def by_float_keys(t):
                f = flush_denormals(t)
                f = f if largest else -f
                f = jnp.where(f == 0, jnp.zeros_like(f), f)
                nan = jnp.isnan(f)
                f = jnp.where(nan, jnp.full_like(f, -np.inf), f)
                clash = jnp.any(jnp.any(nan, axis=-1) & jnp.any(f == -np.inf, axis=-1)
                                & jnp.any(~nan & (f == -np.inf), axis=-1))
                return lax.cond(clash, by_integer_keys, lambda u: _top_k_index(f, k, -np.inf, chunk), t)

            def plain_or_keys(t):
                # On the CPU: lax.top_k of the values themselves (negated for the smallest), kept
                # where none of the K it picked in any row is NaN, a zero or a denormal: then the
                # K'th of each row is a number that every zero, denormal and NaN (at either end of
                # XLA's order) lies beyond or at, as under the keys, so the keys pick the same
                # elements in the same order (ties to the lower index in both). Else the keys
                # decide. The keys' pass, the clash test's and the copy of the keys they wrote took
                # 1.3-1.4x the twin's lax.top_k (TOP_K FLOAT32, benchmarks/results/cpu/twins); a
                # test of the input before top_k, 1.2-1.3x.
                u = t if largest else -t
                if chunk is not None or STAGE_CHUNK is not None:
                    return by_float_keys(t)
                picked, index = lax.top_k(u, k)
                special = jnp.any(jnp.isnan(picked) | (jnp.abs(picked) < F32_TINY))
                return lax.cond(special, by_float_keys, lambda _: index, t)
            return lax.platform_dependent(v, cpu=along_leading_axes(plain_or_keys, v.ndim - 1),
                                          default=along_leading_axes(by_float_keys, v.ndim - 1))
        return by_integer_keys(v)

    route = choose(TOP_K_THRESHOLD, TOP_K_ROWS, facts=(x.shape, axis, k, x.dtype))  # rows on a GPU
    if route.kernel is TOP_K_THRESHOLD:  # a threshold, then the elements above it (with the values)
        def gathered(t):
            index = xla_index(t)
            return index.astype(index_dtype), jnp.take_along_axis(t, index, axis=-1)

        def kernels(t):  # the indices written in the caller's type: no conversion after
            return threshold_rows(t, k, largest, index_dtype=index_dtype)
        index, values = route.run(gathered, kernels, v, lead=v.ndim - 1)
        index = jnp.moveaxis(index, -1, axis)
        return _selected(x, index, jnp.moveaxis(values, -1, axis), axis), index
    if route.kernel is TOP_K_ROWS:  # shorter rows, K up to 16: K selection steps
        index = route.run(xla_index, lambda t: top_k_rows(t, k, largest), v, lead=v.ndim - 1)
    elif v.shape[-1] > GPU_STAGE_CHUNK >= 2 * k:  # rows staged in chunks on a GPU
        index = lax.platform_dependent(v, cuda=lambda t: xla_index(t, GPU_STAGE_CHUNK), default=xla_index)
    else:
        index = xla_index(v)
    index = jnp.moveaxis(index, -1, axis)
    values = jnp.take_along_axis(x, index, axis=axis)
    return values, index.astype(index_dtype)


def _record(short: str, summary: str, formula: str, first: str, oldest_types, direction: bool,
            page_slip: PageSlip | None = None, silent: tuple = ()) -> OpSpec:
    params = (
        ParamSpec("Axis", "UINT", doc="The dimension to select elements across; less than the InputTensor's "
                                      "DimensionCount."),
        ParamSpec("K", "UINT", doc="The number of elements to select: 1 to the InputTensor's size along Axis."),
    )
    if direction:
        params += (ParamSpec("AxisDirection", "DML_AXIS_DIRECTION", enum=AxisDirection,
                             doc=("INCREASING: the smallest K, in increasing order; DECREASING: the largest K, "
                                  "in decreasing order (required: the page gives no default).")),)
    return OpSpec(
        enum_name=PREFIX + short,
        summary=summary,
        formula=formula,
        tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputValueTensor", "output"),
                 TensorSpec("OutputIndexTensor", "output", default_data_type=DataType.UINT32)),
        support=_tables(first, oldest_types),
        params=params,
        constraints=(SameDataType(("InputTensor", "OutputValueTensor")),),
        math=False,
        gradient=("OutputValueTensor: dInput = dY at the selected indices, 0 elsewhere (a scatter of the "
                  "cotangent); OutputIndexTensor: none; integer inputs: none."),
        notes=("Returns (values, indices), the page's order. Ties (equal values) come in ascending index, "
               "as the page guarantees" + (", whatever the AxisDirection" if direction else "") + ". Values "
               "are compared as math reads them: -0 equals +0 and FLOAT32 denormals equal zero (so they tie); "
               "NaN is never selected before a number (maxNum/minNum, docs/semantics.md#accumulating-operators): NaNs come after "
               "every number, in ascending index. The values returned are the input's own bits (NaN "
               "payloads, -0 and denormals kept). K may be 1 to the axis's size (the page says 'less than' "
               "the number of elements, which would forbid selecting them all, a plain sort; dmljax allows "
               "it). The indices are UINT32 unless output_index_data_type='UINT64' (from "
               "DML_FEATURE_LEVEL_5_0, JAX's 64-bit mode)."),
        extra_checks=(_k_rules,),
        infer_outputs=_outputs,
        page_slip=page_slip,
        silent=silent,
    )


TOP_K = _record(
    "TOP_K", "Selects the largest K elements from each sequence along an axis of the InputTensor, and "
    "returns the values and indices of those elements in the OutputValueTensor and OutputIndexTensor, "
    "respectively.",
    "[[[[11, 10],\n(the page's Example 1: K 2 along Axis 3 of [[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]] gives "
    "the values [[11, 10], [9, 8], [7, 6]] and the indices [[3, 2], [2, 3], [3, 2]])",
    "1.0", FLOAT32_FLOAT16, False,
    PageSlip(levels={"1.0": "2.0"},
             why=("The page's Availability and oldest table say DML_FEATURE_LEVEL_2_0; DirectML.h declares "
                  "the operator in DML_FEATURE_LEVEL_1_0, which the record follows with that table.")),
    silent=(
        SilentChoice(
            "TOP_K / TOP_K1 over rows on a GPU, and ARGMAX/ARGMIN (TOP_K's K = 1) of FLOAT16 rows",
            "two or three Pallas kernels for power-of-two rows of 2,048 to 32,768 along the last axis and K "
            "from 2 to 1,024 (at most a quarter of the row's groups): the K best groups of 8 to 32 adjacent "
            "elements by a threshold bisected over the keys' bits (FLOAT16's from the common high bits of two "
            "bounds of it), then the K best of their elements by the same bisection, ordered in that kernel up "
            "to K = 32, by a third kernel's ranks up to K = 256 and by XLA's sort of the K beyond; for rows of "
            "1,024 and K of 2 to 16 one kernel (groups of 8 ranked by their best key, then the extreme taken K "
            "times), which also serves K = 1 for FLOAT16 rows of 1,024 to 32,768 (XLA's FLOAT32 pass is as "
            "fast); FLOAT32 and FLOAT16; elsewhere XLA's top_k or arg-reduction of keys",
            "The same integer keys (FLOAT16's in 17 bits, ordered and tied as the 32-bit keys over every "
            "FLOAT16 value) and tie rule: the same indices and values bit for bit (checked compiled on the "
            "H100, `tests/gpu/kernels.py`).",
            also=("TOP_K1", "ARGMAX", "ARGMIN")),
        SilentChoice(
            "TOP_K / TOP_K1 NaN, -0 and denormals",
            "NaN after every number (ascending index among NaNs); -0, +0 and FLOAT32 denormals tie",
            "maxNum/minNum ([Accumulating operators](semantics.md#accumulating-operators)); the page's tie "
            "rule (ascending index) applies to ties.",
            also=("TOP_K1",)),
        SilentChoice(
            "TOP_K's K",
            "1 to the axis size (the page: \"less than\" the number of elements)",
            "K equal to the size is a plain sort, which ports of ONNX/PyTorch top-k use; a larger K is "
            "refused."),
    ),
)
TOP_K1 = _record(
    "TOP_K1", "Selects the largest or smallest K elements from each sequence along an axis of the "
    "InputTensor, and returns the values and indices of those elements in the OutputValueTensor and "
    "OutputIndexTensor, respectively.",
    "[[[[11, 10],\n(the page's Example 1 with AxisDirection DECREASING; INCREASING selects the smallest K, "
    "smallest first)", "2.1", None, True,
    silent=(
        SilentChoice(
            "TOP_K1's AxisDirection",
            "required",
            "The page gives no default, and its two values select opposite ends."),
    ),
)


@operator(TOP_K)
def top_k(input, *, axis, k, output_index_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], np.float32)  # the page's
        >>> values, indices = dmljax.top_k(x, axis=3, k=2)
        >>> values[0, 0], indices[0, 0]
        (Array([[11., 10.],
               [ 9.,  8.],
               [ 7.,  6.]], dtype=float32), Array([[3, 2],
               [2, 3],
               [3, 2]], dtype=uint32))
    """
    return top_k_along(input, axis, k, True, output_index_data_type.dtype)


@operator(TOP_K1)
def top_k1(input, *, axis, k, axis_direction, output_index_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]], np.float32)  # the pages' ties
        >>> dmljax.top_k1(x, axis=1, k=3, axis_direction="DECREASING")[1]
        Array([[3, 1, 2],
               [2, 3, 1],
               [0, 1, 2]], dtype=uint32)
        >>> dmljax.top_k1(x, axis=1, k=2, axis_direction="INCREASING")[0]
        Array([[1., 2.],
               [3., 4.],
               [6., 6.]], dtype=float32)
    """
    return top_k_along(input, axis, k, axis_direction == AxisDirection.DECREASING, output_index_data_type.dtype)
