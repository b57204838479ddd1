"""What whole families of operators share: record factories (unary, binary, comparison,
activation), the one ScaleBias member, and the formula helper for element-wise math.

A factory returns a whole OpSpec: the caller gives only what its page says that the family does
not (summary, formula, support rows, attributes, budgets, gradient rule). The page's value,
introducing level, reference page and family come from the catalog by the operator's name.
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_UINT32, FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32, DataType,
)
from dmljax._src.errors import Violation
from dmljax._src.numerics import (
    apply_scale_bias, float_to_int, flush_denormals, is_flushed, load, mark_flushed, store,
)
from dmljax._src.registry import get_operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SupportTable, TensorSpec, table
from dmljax._src.structs import ScaleBias

__all__ = [
    "UNARY_TENSORS", "UNARY_CONSTRAINTS", "unary_table", "unary_op", "activation_op",
    "BINARY_TENSORS", "BINARY_CONSTRAINTS", "binary_table", "binary_op", "comparison_op",
    "SUPPORT_ACTIVATION", "SUPPORT_FLOAT_MATH", "SUPPORT_ADD_MULTIPLY",
    "SCALE_BIAS", "elementwise", "zero_slopes", "int_scale_bias", "scale_of", "apply_fused",
    "check_axes",
]

UNARY_TENSORS = (TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output"))
# "InputTensor and OutputTensor must have the same DataType, DimensionCount, and Sizes."
UNARY_CONSTRAINTS = (
    SameDataType(("InputTensor", "OutputTensor")),
    SameSizes(("InputTensor", "OutputTensor")),
)

BINARY_TENSORS = (
    TensorSpec("ATensor", "input"),
    TensorSpec("BTensor", "input"),
    TensorSpec("OutputTensor", "output"),
)
# "ATensor, BTensor, and OutputTensor must have the same DataType, DimensionCount, and Sizes."
BINARY_CONSTRAINTS = (
    SameDataType(("ATensor", "BTensor", "OutputTensor")),
    SameSizes(("ATensor", "BTensor", "OutputTensor")),
)

SCALE_BIAS = ParamSpec(
    "ScaleBias", "DML_SCALE_BIAS", default=None, nullable=True,
    doc="An optional scale and bias to apply to the input: g(x) = x * scale + bias.")
"""The ``_Maybenull_ const DML_SCALE_BIAS* ScaleBias`` member of the element-wise pages."""

Row = tuple[str, str, tuple[DataType, ...]]  # (feature level, dimension counts, data types)

# Support tables that many pages share word for word (each record is still checked against its
# own page by tests/test_registry.py, so sharing cannot hide a transcription slip).
SUPPORT_ACTIVATION: tuple[Row, ...] = (
    ("3.0", "1 to 8", FLOAT32_FLOAT16),
    ("2.0", "4 to 5", FLOAT32_FLOAT16),
    ("1.0", "4", FLOAT32_FLOAT16),
)
"""The table of most ACTIVATION_* pages (ELU, SCALED_ELU, SIGMOID, TANH, SOFTPLUS, ...)."""
SUPPORT_FLOAT_MATH: tuple[Row, ...] = (
    ("3.0", "1 to 8", FLOAT32_FLOAT16),
    ("1.0", "4", FLOAT32_FLOAT16),
)
"""The table of the float-only element-wise math pages (EXP, LOG, SIN, CONSTANT_POW, ...)."""
SUPPORT_ADD_MULTIPLY: tuple[Row, ...] = (
    ("5.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
    ("4.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32),
    ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_UINT32),
    ("2.1", "4 to 5", FLOAT32_FLOAT16_INT32_UINT32),
    ("1.0", "4 to 5", FLOAT32_FLOAT16),
)
"""The table of the ELEMENT_WISE_ADD and ELEMENT_WISE_MULTIPLY pages."""


def unary_table(level: str, dims: str, types: tuple[DataType, ...]) -> SupportTable:
    """A unary page's table, whose two rows are the same."""
    return table(level, InputTensor=(dims, types), OutputTensor=(dims, types))


def binary_table(level: str, dims: str, types: tuple[DataType, ...]) -> SupportTable:
    """A binary page's table, whose three rows are the same."""
    return table(level, ATensor=(dims, types), BTensor=(dims, types), OutputTensor=(dims, types))


def unary_op(short_name: str, *, support: Sequence[Row], in_place: bool = True, **fields) -> OpSpec:
    """One input, one output of the same DataType and Sizes (``f(x)``). ``support`` lists the
    page's tables newest first as (level, dims, types) rows."""
    return OpSpec(enum_name=PREFIX + short_name, tensors=UNARY_TENSORS, constraints=UNARY_CONSTRAINTS,
                  support=tuple(unary_table(*row) for row in support), in_place=in_place, **fields)


def activation_op(short_name: str, *, support: Sequence[Row] = SUPPORT_ACTIVATION, **fields) -> OpSpec:
    """An element-wise activation: a unary operator (``ACTIVATION_<short_name>``), with the
    activation pages' usual support table unless the page has another."""
    return unary_op("ACTIVATION_" + short_name, support=support, **fields)


def binary_op(short_name: str, *, support: Sequence[Row], in_place: bool = True, **fields) -> OpSpec:
    """Two inputs and an output, all of one DataType and Sizes (``f(a, b)``)."""
    return OpSpec(enum_name=PREFIX + short_name, tensors=BINARY_TENSORS, constraints=BINARY_CONSTRAINTS,
                  support=tuple(binary_table(*row) for row in support), in_place=in_place, **fields)


def comparison_op(short_name: str, *, support: Sequence[tuple[str, str, tuple, tuple]],
                  default_output: DataType = DataType.UINT8, **fields) -> OpSpec:
    """``f(a, b)`` with a boolean result (1 or 0) in an integer OutputTensor whose DataType the
    caller picks (``output_data_type=``): ``support`` rows are (level, dims, input types,
    output types). "ATensor, BTensor, and OutputTensor must have the same DimensionCount and
    Sizes"; "ATensor and BTensor must have the same DataType"."""
    tensors = (TensorSpec("ATensor", "input"), TensorSpec("BTensor", "input"),
               TensorSpec("OutputTensor", "output", default_data_type=default_output))
    tables = tuple(table(level, ATensor=(dims, ins), BTensor=(dims, ins), OutputTensor=(dims, outs))
                   for level, dims, ins, outs in support)
    return OpSpec(enum_name=PREFIX + short_name, tensors=tensors, support=tables, math=False,
                  constraints=(SameSizes(("ATensor", "BTensor", "OutputTensor")),
                               SameDataType(("ATensor", "BTensor"))), **fields)


def first_in_groups(hit: jnp.ndarray, axes: tuple[int, ...]) -> jnp.ndarray:
    """True at the first True of each group over ``axes`` (the least row-major position over the
    reduced coordinates), found in place with two plain reductions, no axis moved; each group
    must hold a True."""
    position, stride = jnp.zeros(hit.shape, np.int32), 1
    for a in reversed(axes):
        position = position + jax.lax.broadcasted_iota(np.int32, hit.shape, a) * np.int32(stride)
        stride *= hit.shape[a]
    at = jnp.where(hit, position, np.int32(stride))
    return at == jnp.min(at, axis=axes, keepdims=True)


def check_axes(tensors, attrs, level) -> list:
    """An ``Axes`` member (SOFTMAX1, ARGMIN, REDUCE, ...): "Values must be in the range [0,
    InputTensor.DimensionCount - 1]"; dmljax also refuses an empty list and an axis named twice
    (the pages are silent)."""
    axes, info = attrs.get("Axes"), tensors.get("InputTensor")
    if axes is None or info is None:
        return []
    n = len(info.shape)
    problems = []
    if not axes:
        problems.append(Violation("Axes", "axes", "is empty", "at least one axis (AxisCount >= 1)",
                                  f"name the dimensions to reduce over, e.g. axes=({n - 1},)"))
    bad = [a for a in axes if a >= n]
    if bad:
        problems.append(Violation("Axes", "axes", f"has {bad} for a {n}-dimensional InputTensor",
                                  f"values in the range [0, {n - 1}]"))
    twice = sorted({a for a in axes if axes.count(a) > 1})
    if twice:
        problems.append(Violation("Axes", "axes", f"names axis {twice[0]} more than once", "each axis at most once"))
    return problems


# -------------------------------------------------------------------------------- formulas
def scale_of(scale_bias: ScaleBias | None, dtype) -> np.generic:
    """ScaleBias's Scale (1 without one) as a scalar of ``dtype``: what chains into a gradient."""
    return np.asarray(1.0 if scale_bias is None else scale_bias.scale, np.float32).astype(dtype)[()]


def int_scale_bias(x: jnp.ndarray, scale_bias: ScaleBias | None, dt: DataType) -> jnp.ndarray:
    """g(x) = x * Scale + Bias on an integer tensor: computed in FLOAT32 (FLOAT64 for the 64-bit
    types, so that their values up to 2**53 survive) and converted back by truncation toward
    zero, saturated; NaN (from an infinite Scale times 0) gives 0."""
    if scale_bias is None:
        return x
    cd = np.float64 if dt.needs_x64 else np.float32
    return float_to_int(apply_scale_bias(x.astype(cd), scale_bias), dt)


def zero_slopes(*g):
    """The slopes of a step function (CEIL, FLOOR, ROUND, SIGN): 0 everywhere, at the jumps and
    for NaN too, as jax.numpy's. Given as ``elementwise(..., slopes=zero_slopes)``, the gradient
    is a constant zero that reads neither the input nor dY (one pass less over memory than a
    computed 0 * dY, which would also turn a NaN dY into NaN)."""
    return tuple(jnp.zeros_like(x) for x in g)


def elementwise(math: Callable, *arrays, half: bool, slopes: Callable | None = None,
                integer: Callable | None = None, scale_bias: ScaleBias | None = None,
                half_native: bool = False, keeps_normals: bool = False, float_reads: bool = False,
                constant_values: bool = False, float_result: bool = False) -> jnp.ndarray:
    """An element-wise operator's result under DirectML's rules; the operator supplies the math.

    Floats: each input is read in its compute type (FLOAT32 denormals flushed; FLOAT16 widened to
    FLOAT32 unless ``half``), ``g(x) = x * Scale + Bias`` is applied when a ScaleBias is given,
    ``math(*g)`` runs, and the result is rounded once to the output type (denormals flushed).
    The gradient is ``slopes(*g)``: one partial derivative per input, on the branch the forward
    pass selects (also flushed: slopes are math), times Scale, under ``jax.custom_jvp`` so that
    the flushing rule itself is never differentiated.

    Integers: ``integer(*arrays)`` on the raw values (after an integer ScaleBias), no gradient.

    ``half_native``: on CUDA, a FLOAT16 tensor without ScaleBias goes to ``math`` as it is, so that
    XLA picks its FLOAT16 form of the function (still computed in FLOAT32 and rounded once, but
    with the cheaper FLOAT32 approximation that FLOAT16's precision allows). Give it only where
    ``tests/gpu/half_precision.py`` found that form within half a FLOAT16 ULP (plus rounding)
    of float64 for every one of the 65,536 inputs on an H100: then the operator's FLOAT16 budget
    holds. Other backends keep the FLOAT32 form. The gradient is unchanged.

    ``keeps_normals``: the operator has shown that ``math`` maps inputs without FLOAT32 denormals
    to a result without one (each of its values is 0, or at least the smallest normal in
    magnitude), so a FLOAT32 result is stored without a flush of its own: the same bits, four
    instructions an element fewer.

    ``float_reads``: ``math`` and ``slopes`` look at the inputs only through float operations
    that XLA's CPU backend runs with denormals read as zero (arithmetic, comparisons, exp, tanh;
    not log or atan2, whose XLA forms read their argument's bits): on the CPU the inputs'
    explicit flush is then left out (``numerics.load``), and a denormal passed on untouched is
    flushed by the output's. Give it only where the operator's tests with denormal inputs pass.
    It needs the output's flush: with ``keeps_normals`` the inputs are flushed as before.

    ``constant_values``: ``math`` returns only constants that are not FLOAT32 denormals (SIGN's
    -1, 0 and 1), never an input's value: the output is not flushed, and ``float_reads`` holds
    without it.

    ``float_result``: every element of ``math``'s FLOAT32 result is the result of a float
    operation, never an input passed on untouched (a select between products, say, with no
    factor that XLA would simplify away): on the CPU the processor flushed it, and the output's
    flush is left out there (``numerics.store``); elsewhere it stays. With ``keeps_normals`` and
    ``float_reads`` too, the CPU flushes neither inputs nor output (its processor does both),
    and elsewhere the inputs are flushed and the output is not, as with ``keeps_normals`` alone.
    """
    dt = DataType.from_dtype(arrays[0].dtype)
    if dt.is_integer:
        return integer(*(int_scale_bias(x, scale_bias, dt) for x in arrays))

    flushed = tuple(is_flushed(x) for x in arrays)  # static: decided on the caller's objects

    def read(xs):
        cpu_flushes = float_reads and (constant_values or not keeps_normals or float_result)
        return [apply_scale_bias(load(x, half, flush=not f, float_reads=cpu_flushes), scale_bias)
                for x, f in zip(xs, flushed)]

    def widened(*xs):
        y = math(*read(xs))
        if constant_values or (keeps_normals and dt is DataType.FLOAT32):
            return y.astype(dt.dtype)
        return store(y, dt, float_result=float_result)

    @jax.custom_jvp
    def run(*xs):
        if half_native and dt is DataType.FLOAT16 and not half and scale_bias is None:
            return jax.lax.platform_dependent(*xs, cuda=math, default=widened)
        return widened(*xs)

    @run.defjvp
    def run_jvp(primals, tangents):
        if slopes is zero_slopes:
            return run(*primals), jnp.zeros_like(tangents[0])
        g = read(primals)
        partials = slopes(*g)
        partials = partials if isinstance(partials, tuple) else (partials,)
        cd = g[0].dtype
        scale = scale_of(scale_bias, cd)
        tangent = None
        for d, t in zip(partials, tangents):
            term = flush_denormals(jnp.asarray(d, cd) * scale) * t.astype(cd)
            tangent = term if tangent is None else tangent + term
        return run(*primals), tangent.astype(tangents[0].dtype)

    out = run(*arrays)
    if dt is DataType.FLOAT32:
        mark_flushed(out)  # stored through store(): no denormal left
    return out


def apply_fused(fused, y, allow_half_precision_computation: bool = False):
    """Run a validated fused activation on ``y`` (the host's result, already in the output
    type) through the activation operator's own formula; ``y`` unchanged for None."""
    if fused is None:
        return y
    op = get_operator(fused.type)
    spec: OpSpec = op.spec
    attrs = dict(fused.attrs)
    kwargs = {p.arg: attrs[p.dml_name] for p in spec.params}
    if spec.math:
        kwargs["allow_half_precision_computation"] = allow_half_precision_computation
    return op.formula(y, **kwargs)
