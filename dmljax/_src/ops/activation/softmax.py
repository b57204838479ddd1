"""Activation operators SOFTMAX, SOFTMAX1, LOG_SOFTMAX, LOG_SOFTMAX1, HARDMAX and HARDMAX1: each
page's record, with its formula right below it.

The original three normalize each row of an input whose *effective rank* (its DimensionCount
without the leftmost dimensions of size 1) is at most 2, over the last dimension; the *1 forms
(feature level 5.1) over the dimensions their ``Axes`` name, which "is equivalent to" the original
"when AxisCount == 1, and Axes == {DimensionCount - 1}". One formula serves each pair.
"""

from __future__ import annotations

import math
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.softmax import SOFTMAX_ROWS, softmax_rows
from dmljax._src.numerics import flush_denormals, load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.ops.factories import SUPPORT_ACTIVATION, activation_op, check_axes, first_in_groups
from dmljax._src.spec import ParamSpec, SilentChoice

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
SUPPORT_5_1 = (("5.1", "1 to 8", FLOAT32_FLOAT16),)


# ----------------------------------------------------------------------------------- checks
def effective_rank(sizes: Sequence[int]) -> int:
    """"The DimensionCount of the tensor, excluding leftmost dimensions of size 1"."""
    sizes = list(sizes)
    while sizes and sizes[0] == 1:
        sizes.pop(0)
    return len(sizes)


def _rank_at_most_2(short_name: str):
    def check(tensors, attrs, level) -> list[Violation]:
        info = tensors.get("InputTensor")
        if info is None or effective_rank(info.shape) <= 2:
            return []
        return [Violation(
            "InputTensor", "input", f"has effective rank {effective_rank(info.shape)} (Sizes "
            f"{list(info.shape)})", "an effective rank no greater than 2 (the DimensionCount "
            "without the leftmost dimensions of size 1)",
            f"reshape to {{ BatchCount, Width }}, or use ACTIVATION_{short_name}1 with "
            "Axes=(DimensionCount - 1,) (feature level 5.1)")]
    check.max_effective_rank = 2
    return check


AXES = ParamSpec("Axes", "UINT[]", count="AxisCount",
                 doc=("The axes along which to reduce. Values must be in the range [0, "
                      "InputTensor.DimensionCount - 1] (a tuple; a desc's AxisCount is its length)."))


def _terms(sizes, attrs) -> int:
    axes = attrs.get("Axes")
    if axes is None:  # the original operators: the last dimension
        return sizes[-1] if sizes else 1
    return math.prod(sizes[a] for a in axes if a < len(sizes))


def _growth(sizes, attrs):
    """The sum of n exponentials has a relative error of at most about n FLOAT32 rounding units,
    whatever order a backend adds them in: n FLOAT32 ULP, n / 2^13 FLOAT16 ULP (computed in
    FLOAT32), n FLOAT16 ULP in FLOAT16 arithmetic."""
    n = _terms(sizes, attrs)
    return {F32: n, F16: math.ceil(n / 8192), "half": n}


def _rows(x, axes) -> tuple[int, ...]:
    return tuple(range(x.ndim - 1, x.ndim)) if axes is None else tuple(axes)


# --------------------------------------------------------------------------------- formulas
def normalize(x: jnp.ndarray, axes: tuple[int, ...], log: bool, half: bool) -> jnp.ndarray:
    """Softmax (``log=False``) or log-softmax of ``x`` over ``axes``, under DirectML's rules:
    read in the compute type (FLOAT32 denormals flushed, FLOAT16 widened unless ``half``), the
    row's maximum subtracted, exp summed, rounded once to the tensor's type. A row holding NaN
    or +inf, and a row of -inf only, is NaN (x - max is NaN there)."""
    dt = DataType.from_dtype(x.dtype)
    route = choose(SOFTMAX_ROWS, facts=(x.shape, axes, x.dtype, half))  # long rows on a GPU

    def xla_forward(x):
        xf = load(x, half, float_reads=True)  # read by float operations alone (max, x - max)
        m = jax.lax.stop_gradient(jnp.max(xf, axis=axes, keepdims=True))
        d = xf - m
        e = jnp.exp(d)
        s = jnp.sum(e, axis=axes, keepdims=True)
        return store(d - jnp.log(s) if log else e / s, dt, float_result=True)

    def xla_backward(y, dy):
        # y and dY read by float operations alone, dX a difference or a product: on the CPU the
        # processor's flushes stand for the three explicit ones (LOG_SOFTMAX1's gradient took
        # 1.24-1.28x jax.nn.log_softmax's with them)
        yf, g = load(y, half, float_reads=True), load(dy, half, float_reads=True)
        if log:
            dx = g - jnp.exp(yf) * jnp.sum(g, axis=axes, keepdims=True)
        else:
            dx = yf * (g - jnp.sum(g * yf, axis=axes, keepdims=True))
        return store(dx, DataType.from_dtype(dy.dtype), float_result=True)

    def forward(x):
        return route.run(xla_forward, lambda v: softmax_rows(v, log), x, lead=min(a % x.ndim for a in axes))

    def run_fwd(x):
        y = forward(x)
        return y, y

    def run_bwd(y, dy):
        # softmax: dX = y * (dY - sum(dY * y)); log-softmax: dX = dY - exp(y) * sum(dY), with y
        # the stored output, in the compute type, rounded once. XLA's formula in both modes (JAX
        # transposes it for jax.jvp, as it cannot a Pallas kernel); the forward pass is the
        # kernel's where it applies.
        return (xla_backward(y, dy),)

    out = backward_rule(forward, run_fwd, run_bwd)(x)
    if dt is F32:
        mark_flushed(out)
    return out


def hardmax(x: jnp.ndarray, axes: tuple[int, ...]) -> jnp.ndarray:
    """1 at the first maximum over ``axes`` (row-major order of the reduced coordinates, as
    ARGMAX with DML_AXIS_DIRECTION_INCREASING), 0 elsewhere. Values are compared as math reads
    them (FLOAT32 denormals as zero: they tie with 0); NaN is never a maximum (maxNum), and a row
    of NaN only has its 1 at the first element. No gradient (a step function)."""
    xf = jax.lax.stop_gradient(flush_denormals(x))
    axes = tuple(sorted(a % x.ndim for a in axes))
    if axes != tuple(range(x.ndim - len(axes), x.ndim)):  # not trailing: the CPU finds it in place
        return jax.lax.platform_dependent(xf, cpu=lambda v: _hardmax_in_place(v, axes),
                                          default=lambda v: _hardmax_moved(v, axes))
    return _hardmax_moved(xf, axes)


def _hardmax_in_place(xf, axes):
    """``_hardmax_moved`` without moving the axes: the first hit is the least row-major position
    over the reduced coordinates (on the CPU the transposes there and back took 1.7 to 1.9
    times jax.nn.one_hot of jnp.argmax over a leading axis)."""
    nan = jnp.isnan(xf)
    filled = jnp.where(nan, jnp.array(-jnp.inf, xf.dtype), xf)
    hit = (filled == jnp.max(filled, axis=axes, keepdims=True)) & ~nan
    hit = jnp.where(jnp.all(nan, axis=axes, keepdims=True), jnp.ones_like(hit), hit)
    return first_in_groups(hit, axes).astype(xf.dtype)


def _hardmax_moved(xf, axes):
    x = xf
    keep = tuple(a for a in range(x.ndim) if a not in axes)
    perm = keep + tuple(axes)
    moved = jnp.transpose(xf, perm)
    lead = moved.shape[:len(keep)]
    flat = moved.reshape(lead + (-1,))
    nan = jnp.isnan(flat)
    # maxNum: NaN loses to every number, -inf included: NaN is filled with -inf for the maximum
    # and never counts as a hit; a row of NaN only puts its 1 on the first element.
    filled = jnp.where(nan, jnp.array(-jnp.inf, flat.dtype), flat)
    best = jnp.max(filled, axis=-1, keepdims=True)
    hit = (filled == best) & ~nan
    hit = jnp.where(jnp.all(nan, axis=-1, keepdims=True), jnp.ones_like(hit), hit)
    first = jnp.argmax(hit, axis=-1)  # the first True
    onehot = (jnp.arange(flat.shape[-1]) == first[..., None]).astype(x.dtype)
    out = jnp.transpose(onehot.reshape(moved.shape), np.argsort(perm))
    return out


# ------------------------------------------------------------------------------------ texts
_ROW_NOTES = (
    "The row's maximum is subtracted before exp (docs/semantics.md#accumulating-operators), so no finite input overflows; "
    "FLOAT16 is computed in FLOAT32 and rounded once (the sum too), FLOAT32 denormal inputs read "
    "as zero and denormal results are flushed.")
_ORIGINAL = ("The InputTensor's effective rank (DimensionCount without leftmost dimensions of "
             "size 1) must be at most 2: each row of {BatchCount, Width} is normalized over "
             "Width. ")
_AXES = ("Axes name the dimensions normalized together (every coordinate of the other "
         "dimensions is one group); AxisCount is their number. ")

_SOFTMAX_GRADIENT = ("dX = y * (dY - sum(dY * y)) over the row (the Jacobian-vector product of "
                     "softmax, from the stored output y); NaN only where y or dY is.")
_LOG_SOFTMAX_GRADIENT = ("dX = dY - exp(y) * sum(dY) over the row (y the stored output); NaN only "
                         "where y or dY is.")
_HARDMAX_GRADIENT = "None: a step function; jax.grad gives zeros (as for CEIL or SIGN)."
_HARDMAX_NOTES = (
    "The first maximum gets 1: the first in row-major order of the reduced coordinates (as "
    "ARGMAX with DML_AXIS_DIRECTION_INCREASING). NaN is never the maximum (maxNum, "
    "docs/semantics.md#minimum-and-maximum); a row of NaN only puts its 1 on the first element. -0 ties with +0, and FLOAT32 "
    "denormals are read as zero, so they tie with it too. Outputs are exactly 0 and 1.")

_SOFTMAX_FORMULA = ("For 1-D InputTensor:\n"
                    "// Let x[i] be the current element in the InputTensor, and j be the total number of elements in the InputTensor\n"
                    "f(x[i]) = exp(x[i]) / sum(exp(x[0]), ..., exp(x[j-1]))")
_LOG_SOFTMAX_FORMULA = ("// Let x_i be the current value in the axis, and j be the total number of elements along that axis.\n"
                        "f(x_i) = ln(exp(x_i) / sum(exp(x_0), ..., exp(x_j)))")

_SOFTMAX1_FORMULA = _SOFTMAX_FORMULA.replace("Let x[i] be", "Let x[i] to be")  # the 5.1 page's wording
_LOG_SOFTMAX1_FORMULA = ("For 1-D InputTensor:\n"
                         "// Let x[i] to be the current element in the InputTensor, and j be the total number of elements in the InputTensor\n"
                         "f(x[i]) = ln(exp(x[i]) / sum(exp(x[0]), ..., exp(x[j-1])))")
_HARDMAX1_FORMULA = """reducedTensor = ReduceArgMax(InputTensor, axes = Axes, axisDirection = DML_AXIS_DIRECTION_INCREASING)
broadcastedTensor = Broadcast the `reducedTensor` to `InputTensor`
for each coordinate in OutputTensor
    if broadcastedTensor[coordinate] == reducedIndexOf(coordinate)   // reducedIndexOf(coordinate) is the index of the coordinate within reduced axes `axes`.
        OutputTensor[coordinate] = 1
    else
        OutputTensor[coordinate] = 0
endfor"""
_SOFTMAX_SUMMARY = ("Performs a softmax activation function on InputTensor, placing the result into "
                    "the corresponding element of OutputTensor.")
_LOG_SOFTMAX_SUMMARY = ("Performs a natural log-of-softmax activation function on each element of "
                        "InputTensor, placing the result into the corresponding element of OutputTensor.")
_HARDMAX_SUMMARY = ("Performs a hardmax function on each element of InputTensor, placing the result "
                    "into the corresponding element of OutputTensor.")


def _record(short_name, *, one: bool, summary, formula, gradient, notes, **fields):
    return activation_op(
        short_name + ("1" if one else ""), summary=summary, formula=formula,
        support=SUPPORT_5_1 if one else SUPPORT_ACTIVATION, in_place=False,
        params=(AXES,) if one else (), gradient=gradient,
        notes=(_AXES if one else _ORIGINAL) + notes,
        extra_checks=(check_axes,) if one else (_rank_at_most_2(short_name),), **fields)


def _soft(short_name, *, one, log, silent=()):
    return _record(
        short_name, one=one, summary=_LOG_SOFTMAX_SUMMARY if log else _SOFTMAX_SUMMARY,
        formula=(_LOG_SOFTMAX1_FORMULA if one else _LOG_SOFTMAX_FORMULA) if log else (
            _SOFTMAX1_FORMULA if one else _SOFTMAX_FORMULA),
        gradient=_LOG_SOFTMAX_GRADIENT if log else _SOFTMAX_GRADIENT,
        notes=_ROW_NOTES,
        ulp={F32: 4, F16: 1}, ulp_half=4, ulp_growth=_growth, silent=silent)


# ---------------------------------------------------------------------------------- records
ACTIVATION_SOFTMAX = _soft("SOFTMAX", one=False, log=False, silent=(
    SilentChoice(
        "SOFTMAX / LOG_SOFTMAX, a row holding NaN or +inf",
        "NaN throughout the row",
        "The page's `exp(x) / sum` is inf / inf or NaN there; the row's maximum is subtracted ([Accumulating "
        "operators](semantics.md#accumulating-operators)), so `x - max` is NaN. jax.nn.softmax gives the same.",
        also=("ACTIVATION_LOG_SOFTMAX", "ACTIVATION_SOFTMAX1", "ACTIVATION_LOG_SOFTMAX1")),
    SilentChoice(
        "SOFTMAX / LOG_SOFTMAX, a row of -inf only",
        "NaN (0 / 0); a -inf among numbers gives 0 (LOG_SOFTMAX: -inf)",
        "[Accumulating operators](semantics.md#accumulating-operators); the page's formula.",
        also=("ACTIVATION_LOG_SOFTMAX", "ACTIVATION_SOFTMAX1", "ACTIVATION_LOG_SOFTMAX1")),
    SilentChoice(
        "SOFTMAX's and LOG_SOFTMAX's budgets",
        "4 ULP + n ULP (FLOAT32) or 1 ULP + n / 8192 ULP (FLOAT16) for rows of n elements; LOG_SOFTMAX's "
        "counted in ULP of `|x - max| + |ln(sum)| + 1`",
        "DirectML leaves the order of the sum open ([Accumulating "
        "operators](semantics.md#accumulating-operators)): the bound holds for any order; a log-probability "
        "near 0 carries the sum's absolute error, not a relative one.",
        also=("ACTIVATION_LOG_SOFTMAX", "ACTIVATION_SOFTMAX1", "ACTIVATION_LOG_SOFTMAX1")),
    SilentChoice(
        "SOFTMAX, LOG_SOFTMAX, HARDMAX above effective rank 2",
        "ValidationError, with the *1 operator as the tip",
        "The pages' \"must have an effective rank no greater than 2\".",
        also=("ACTIVATION_LOG_SOFTMAX", "ACTIVATION_HARDMAX")),
    SilentChoice(
        "SOFTMAX/LOG_SOFTMAX over long rows on a GPU",
        "a Pallas kernel reading each row once, for power-of-two rows of 2,048 to 65,536 (FLOAT32, FLOAT16 in "
        "FLOAT32); elsewhere XLA's formula",
        "Same formula; only the sum's order and one rounding of the quotient differ, within the budget "
        "(checked on the H100).",
        also=("ACTIVATION_LOG_SOFTMAX", "ACTIVATION_SOFTMAX1", "ACTIVATION_LOG_SOFTMAX1")),
))
ACTIVATION_SOFTMAX1 = _soft("SOFTMAX", one=True, log=False, silent=(
    SilentChoice(
        "SOFTMAX1 / LOG_SOFTMAX1 / HARDMAX1 with an empty Axes, or an axis named twice",
        "ValidationError",
        "The pages say only that each axis is in range; an empty reduction or a repeated axis has no meaning "
        "to choose for.",
        also=("ACTIVATION_LOG_SOFTMAX1", "ACTIVATION_HARDMAX1")),
))
ACTIVATION_LOG_SOFTMAX = _soft("LOG_SOFTMAX", one=False, log=True)
ACTIVATION_LOG_SOFTMAX1 = _soft("LOG_SOFTMAX", one=True, log=True)
ACTIVATION_HARDMAX = _record("HARDMAX", one=False, summary=_HARDMAX_SUMMARY,
                             formula=("The operator computes the hardmax (1 for the first occurrence of the "
                                      "largest value in the layer, and 0 for all other values) of each row in "
                                      "the given input."),
                             gradient=_HARDMAX_GRADIENT, notes=_HARDMAX_NOTES, math=False,
    silent=(
        SilentChoice(
            "HARDMAX / HARDMAX1 with NaN",
            "NaN is never the maximum (maxNum); a group of NaN only puts its 1 on its first element; -0 ties "
            "with +0 and FLOAT32 denormals with 0 (the first wins)",
            "[Accumulating operators](semantics.md#accumulating-operators) (maxNum for maxima); \"the first "
            "occurrence\" of the page.",
            also=("ACTIVATION_HARDMAX1",)),
        SilentChoice(
            "HARDMAX's gradient",
            "0",
            "A step function, as CEIL or SIGN.",
            also=("ACTIVATION_HARDMAX1",)),
    ),
)
ACTIVATION_HARDMAX1 = _record("HARDMAX", one=True, summary=_HARDMAX_SUMMARY,
                              formula=_HARDMAX1_FORMULA,
                              gradient=_HARDMAX_GRADIENT, notes=_HARDMAX_NOTES, math=False)


@operator(ACTIVATION_SOFTMAX)
def activation_softmax(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_softmax(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, -np.inf]], np.float32))
        Array([[0.09003057, 0.24472848, 0.66524094],
               [0.5       , 0.5       , 0.        ]], dtype=float32)
    """
    return normalize(input, _rows(input, None), False, allow_half_precision_computation)


@operator(ACTIVATION_SOFTMAX1)
def activation_softmax1(input, *, axes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)
        >>> dmljax.activation_softmax1(x, axes=(1,))[0]
        Array([[1.0000000e+00, 1.6701422e-05],
               [0.0000000e+00, 9.9998331e-01]], dtype=float32)
    """
    return normalize(input, tuple(axes), False, allow_half_precision_computation)


@operator(ACTIVATION_LOG_SOFTMAX)
def activation_log_softmax(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_log_softmax(np.array([1.0, 2.0, 3.0], np.float32))
        Array([-2.407606  , -1.4076059 , -0.40760595], dtype=float32)
    """
    return normalize(input, _rows(input, None), True, allow_half_precision_computation)


@operator(ACTIVATION_LOG_SOFTMAX1)
def activation_log_softmax1(input, *, axes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[0.0, 1.0], [2.0, 3.0]], np.float32)
        >>> dmljax.activation_log_softmax1(x, axes=(0, 1))
        Array([[-3.4401896, -2.4401896],
               [-1.4401897, -0.4401897]], dtype=float32)
    """
    return normalize(input, tuple(axes), True, allow_half_precision_computation)


@operator(ACTIVATION_HARDMAX)
def activation_hardmax(input):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_hardmax(np.array([[1.0, 3.0, 3.0], [np.nan, -1.0, -2.0]], np.float32))
        Array([[0., 1., 0.],
               [0., 1., 0.]], dtype=float32)
    """
    return hardmax(input, _rows(input, None))


@operator(ACTIVATION_HARDMAX1)
def activation_hardmax1(input, *, axes):
    """Example:
        >>> import numpy as np, dmljax  # the page's Example 3
        >>> x = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)
        >>> dmljax.activation_hardmax1(x, axes=(0, 2))
        Array([[[0., 0.],
                [0., 1.]],
        <BLANKLINE>
               [[0., 1.],
                [0., 0.]]], dtype=float32)
    """
    return hardmax(input, tuple(axes))
