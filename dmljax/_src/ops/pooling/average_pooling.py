"""The windowed summing poolings, of the pooling family: AVERAGE_POOLING, AVERAGE_POOLING1,
AVERAGE_POOLING_GRAD, LP_POOLING and LP_POOLING1, each page's record with its formula below it
(the window geometry is window.py's).

Each window's sum is one lax.reduce_window (XLA's windowed sum; the padding adds zeros; on the
CPU, windows that tile the input are added position by position: max_pooling.window_sum), in
FLOAT32 for FLOAT16 tensors, then divided (AVERAGE) or rooted (LP) and rounded once. Gradients
add each window's share back to its elements (pooling.window_sum_transpose: a broadcast for
windows that tile the input, padded copies for small windows, else the windowed sum's transpose)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.errors import Violation
from dmljax._src.numerics import flush_denormals, load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.ops.pooling.max_pooling import (
    GEOMETRY_NOTE, Window, geometry_checks, pooled_outputs, window_counts, window_of, window_params, window_sum,
    window_sum_transpose,
)
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def _terms_of(attrs) -> int:
    w = attrs.get("WindowSize")
    return math.prod(w) if isinstance(w, (tuple, list)) and all(isinstance(v, int) for v in w) else 1


def _tables(level: str, first: str = "InputTensor", second: str = "OutputTensor"):
    return (table(level, **{first: ("4 to 5", FLOAT32_FLOAT16), second: ("4 to 5", FLOAT32_FLOAT16)}),)


def _finish(out, dt: DataType):
    if dt is F32:
        mark_flushed(out)  # stored through store(): no denormal left
    return out


# ------------------------------------------------------------------------------ average
def _divisor(spatial, w: Window, include_padding: bool, dtype):
    """prod(WindowSize) with IncludePadding (every window lies inside the padded input) or without
    padding; else each window's positions inside the InputTensor (0 for a window wholly in the
    padding)."""
    if include_padding or not (any(w.start) or any(w.end)):
        return np.asarray(math.prod(w.size), dtype)
    return window_counts(spatial, w).astype(dtype)


def average_pool_grad(dy, spatial, w: Window, include_padding: bool, half: bool):
    """AVERAGE_POOLING_GRAD: each window's dY / divisor added to the elements it holds."""
    dt = DataType.from_dtype(dy.dtype)
    g = load(dy, half)
    d = _divisor(spatial, w, include_padding, g.dtype)
    share = g / d if d.ndim == 0 else jnp.where(d > 0, g / jnp.where(d > 0, d, 1), np.zeros((), g.dtype))
    return _finish(store(window_sum_transpose(share, spatial, w), dt), dt)


def average_pool(x, w: Window, include_padding: bool, half: bool):
    dt = DataType.from_dtype(x.dtype)
    spatial = x.shape[2:]

    def run(v):
        c = load(v, half)
        return store(window_sum(c, w) / _divisor(spatial, w, include_padding, c.dtype), dt)

    def fwd(v):
        return run(v), None

    def bwd(_, dy):
        return (average_pool_grad(dy, spatial, w, include_padding, half),)

    run = backward_rule(run, fwd, bwd)
    return _finish(run(x), dt)


def _average_growth(sizes, attrs) -> dict:
    """N = prod(WindowSize) terms summed, then one division: N rounding units of the terms'
    magnitude (sum |x| / divisor) in FLOAT32; N / 2^13 FLOAT16 ULP computed in FLOAT32."""
    n = _terms_of(attrs)
    return {F32: n, F16: math.ceil(n / 8192), "half": n}


_INCLUDE = ParamSpec(
    "IncludePadding", "BOOL", default=False,
    doc=("Whether the padding elements count in the divisor: TRUE divides by prod(WindowSize), FALSE by the "
         "window's elements inside the InputTensor (default FALSE: a zeroed desc's, and ONNX's "
         "count_include_pad)."))
_AVERAGE_NOTES = (
    "The padding elements are zeros in the sum; IncludePadding FALSE divides by the number of the window's "
    "positions inside the InputTensor. Floats are read as math reads them (FLOAT32 denormals as "
    "zero); FLOAT16 is summed and divided in FLOAT32 and rounded once, unless "
    "allow_half_precision_computation. DirectML does not document the order of the additions "
    "(docs/semantics.md#accumulating-operators): a budget of prod(WindowSize) + 1 rounding units of the terms' magnitude (sum |x| / divisor).")
_AVERAGE_GRADIENT = (
    "AVERAGE_POOLING_GRAD's rule (the same function): each window's dY / divisor added to every element of "
    "the window inside the InputTensor, in FLOAT32 for FLOAT16, rounded once.")
_AVERAGE_FORMULA = ("\n(OutputTensor[n, c, o] = the sum of the padded InputTensor[n, c, o * Strides - StartPadding + "
                    "k * Dilations] over the window positions k, divided by prod(WindowSize) with IncludePadding, else "
                    "by the number of those positions inside the InputTensor)")


def _average_record(short: str, dilations: bool, silent: tuple = ()) -> OpSpec:
    return OpSpec(
        enum_name=PREFIX + short,
        summary="Averages values across the elements within the sliding window over the input tensor.",
        formula="Averages values across the elements within the sliding window over the input tensor." + _AVERAGE_FORMULA,
        tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
        support=_tables("6.2" if dilations else "1.0"),
        params=window_params(dilations) + (_INCLUDE,),
        constraints=(SameDataType(("InputTensor", "OutputTensor")),),
        ulp={F32: 1, F16: 1},
        ulp_half=1,
        ulp_growth=_average_growth,
        grad_operator=PREFIX + "AVERAGE_POOLING_GRAD",
        gradient=_AVERAGE_GRADIENT + (" With Dilations, the same rule over the dilated window (AVERAGE_POOLING_GRAD "
                                      "itself has no Dilations)." if dilations else ""),
        notes=" ".join((_AVERAGE_NOTES, GEOMETRY_NOTE) + (() if dilations else ("Dilations are 1 (this version has none).",))),
        extra_checks=(geometry_checks("InputTensor"),),
        infer_outputs=pooled_outputs("OutputTensor"),
        silent=silent,
    )


AVERAGE_POOLING = _average_record("AVERAGE_POOLING", False, silent=(
    SilentChoice(
        "AVERAGE_POOLING* with IncludePadding FALSE and a window wholly in the padding",
        "0 / 0 = NaN (with IncludePadding TRUE: 0)",
        "The divisor counts the elements inside the input, of which there are none; the quotient the formula "
        "gives. AVERAGE_POOLING_GRAD sends such a window's gradient nowhere.",
        also=("AVERAGE_POOLING1", "AVERAGE_POOLING_GRAD")),
    SilentChoice(
        "AVERAGE_POOLING*'s divisor with IncludePadding TRUE",
        "prod(WindowSize)",
        "Every window lies inside the padded input.",
        also=("AVERAGE_POOLING1", "AVERAGE_POOLING_GRAD")),
    SilentChoice(
        "IncludePadding's default",
        "FALSE",
        "A zeroed desc's, and ONNX's count_include_pad.",
        also=("AVERAGE_POOLING1", "AVERAGE_POOLING_GRAD", "QUANTIZED_LINEAR_AVERAGE_POOLING")),
    SilentChoice(
        "FLOAT16 AVERAGE/LP/MAX_POOLING_GRAD sums",
        "in FLOAT32, rounded once (allow_half_precision_computation: FLOAT16)",
        "[Accumulating operators](semantics.md#accumulating-operators); budgets grow with prod(WindowSize) "
        "(AVERAGE: prod + 1 units of sum |x| / divisor; LP: 3 + ceil((prod + 2) / P) ULP; MAX_POOLING_GRAD: "
        "prod units of sum |dY|).",
        also=("AVERAGE_POOLING1", "AVERAGE_POOLING_GRAD", "LP_POOLING", "LP_POOLING1", "MAX_POOLING_GRAD")),
    SilentChoice(
        "Order of the additions (AVERAGE, LP, the *_GRAD sums)",
        "XLA's; jax.grad and the *_GRAD operator are the same function but may round 1 ULP apart when compiled "
        "into different programs (XLA moved a division by a scalar divisor across the sums)",
        "DirectML does not document the order ([Accumulating operators](semantics.md#accumulating-operators)): "
        "within the budget.",
        also=("AVERAGE_POOLING1", "AVERAGE_POOLING_GRAD", "LP_POOLING", "LP_POOLING1", "MAX_POOLING_GRAD")),
    SilentChoice(
        "Arrays' defaults (Strides, WindowSize, StartPadding, EndPadding, Dilations)",
        "required",
        "The pages give none and the arrays are not `_Maybenull_`.",
        also=("AVERAGE_POOLING1", "LP_POOLING", "LP_POOLING1", "MAX_POOLING", "MAX_POOLING1", "MAX_POOLING2",
              "AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD", "QUANTIZED_LINEAR_AVERAGE_POOLING")),
))
AVERAGE_POOLING1 = _average_record("AVERAGE_POOLING1", True)


@operator(AVERAGE_POOLING)
def average_pooling(input, *, strides, window_size, start_padding, end_padding, include_padding,
                    allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)  # AVERAGE_POOLING_GRAD's page
        >>> dmljax.average_pooling(x, strides=(1, 1), window_size=(2, 2), start_padding=(0, 0),
        ...                        end_padding=(0, 0))[0, 0]
        Array([[3., 4.],
               [6., 7.]], dtype=float32)
        >>> dmljax.average_pooling(x, strides=(2, 2), window_size=(2, 2), start_padding=(0, 0),
        ...                        end_padding=(1, 1), include_padding=True)[0, 0]
        Array([[3.  , 2.25],
               [3.75, 2.25]], dtype=float32)
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding})
    return average_pool(input, w, include_padding, allow_half_precision_computation)


@operator(AVERAGE_POOLING1)
def average_pooling1(input, *, strides, window_size, start_padding, end_padding, dilations, include_padding,
                     allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> dmljax.average_pooling1(x, strides=(1, 1), window_size=(2, 2), start_padding=(0, 0),
        ...                         end_padding=(0, 0), dilations=(2, 2))[0, 0]
        Array([[ 5.,  6.],
               [ 9., 10.]], dtype=float32)
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding, "Dilations": dilations})
    return average_pool(input, w, include_padding, allow_half_precision_computation)


AVERAGE_POOLING_GRAD = OpSpec(
    enum_name=PREFIX + "AVERAGE_POOLING_GRAD",
    summary=("Computes backpropagation gradients for average pooling (see DML_AVERAGE_POOLING_OPERATOR_DESC): the "
             "values in the OutputGradientTensor represent the weighted contributions of that element to the "
             "OutputTensor during the original DML_AVERAGE_POOLING_OPERATOR_DESC operator."),
    formula=("InputGradientTensor            OutputGradientTensor\n"
             "(the page's example: a 2 x 2 window with stride 1 over a 3 x 3 input; the InputGradientTensor [[1, 2], "
             "[3, 4]] gives [[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]]: each window's dY / divisor added "
             "to the elements it averaged)"),
    tensors=(TensorSpec("InputGradientTensor", "input"),
             TensorSpec("OutputGradientTensor", "output", sizes_arg=True)),
    support=_tables("3.0", "InputGradientTensor", "OutputGradientTensor"),
    params=window_params(False, "the OutputGradientTensor") + (_INCLUDE,),
    constraints=(SameDataType(("InputGradientTensor", "OutputGradientTensor")),),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_average_growth,
    gradient=("Linear in the InputGradientTensor: its gradient is AVERAGE_POOLING of the cotangent (each window's "
              "average, the same divisor)."),
    notes=" ".join((
        "output_gradient_sizes= gives the OutputGradientTensor's Sizes (the forward InputTensor's, which the "
        "pooled Sizes do not determine); the InputGradientTensor must have their pooled Sizes. Each window's dY / "
        "divisor (AVERAGE_POOLING's divisor for IncludePadding) is added to the window's elements inside the "
        "OutputGradientTensor; a window wholly in the padding (divisor 0 without IncludePadding) adds nothing. "
        "FLOAT16 in FLOAT32 (unless allow_half_precision_computation), rounded once; an element sums at most "
        "prod(WindowSize) shares: a budget of prod(WindowSize) + 1 rounding units of their magnitude.",
        GEOMETRY_NOTE.replace("InputTensor's spatial", "OutputGradientTensor's spatial"))),
    extra_checks=(geometry_checks("OutputGradientTensor", "InputGradientTensor", "input_gradient"),),
)


@operator(AVERAGE_POOLING_GRAD)
def average_pooling_grad(input_gradient, *, strides, window_size, start_padding, end_padding, include_padding,
                         output_gradient_sizes, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dy = np.array([[[[1, 2], [3, 4]]]], np.float32)  # the page's example
        >>> dmljax.average_pooling_grad(dy, strides=(1, 1), window_size=(2, 2), start_padding=(0, 0),
        ...                             end_padding=(0, 0), output_gradient_sizes=(1, 1, 3, 3))[0, 0]
        Array([[0.25, 0.75, 0.5 ],
               [1.  , 2.5 , 1.5 ],
               [0.75, 1.75, 1.  ]], dtype=float32)
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding})
    return average_pool_grad(input_gradient, tuple(output_gradient_sizes[2:]), w, include_padding,
                             allow_half_precision_computation)


# ------------------------------------------------------------------------------ lp
def _terms(a, p: int):
    """|x|^P of the values' magnitudes ``a``: exact multiplications for P of 1 and 2, pow beyond."""
    if p == 1:
        return a
    if p == 2:
        return a * a
    return jnp.power(a, np.asarray(float(p), a.dtype))


def _root(s, p: int):
    """s^(1/P) within a few ULP: for P beyond 2, pow(s, 1/P) (whose exponent 1/P is rounded, an
    error that grows with |log s|: up to 45 / P ULP at the ends of FLOAT32's range) and one
    Newton step, y + (s / y^(P-1) - y) / P, which leaves under 1 ULP (measured). A FLOAT32 sum
    below the normal range reads as zero (as XLA's CPU backend reads it in pow; the GPU's would
    not), where y^(P-1) would underflow the step is left out; 0, inf and NaN give themselves."""
    if p == 1:
        return s
    if p == 2:
        return jnp.sqrt(s)
    s = flush_denormals(s)
    y = jnp.power(s, np.asarray(1.0 / p, s.dtype))
    den = jnp.power(y, np.asarray(float(p - 1), s.dtype))
    inf = np.asarray(np.inf, s.dtype)
    ok = (den > 0) & (den < inf) & (y < inf)
    step = (s / jnp.where(ok, den, np.ones((), s.dtype)) - y) / np.asarray(p, s.dtype)
    return jnp.where(ok, y + step, y)


def _power(c, p: int):
    """sign(x) |x|^(P-1): the derivative of |x|^P / P."""
    if p == 1:
        return jnp.sign(c)
    if p == 2:
        return c
    return jnp.sign(c) * jnp.power(jnp.abs(c), np.asarray(float(p - 1), c.dtype))


def lp_pool(x, w: Window, p: int, half: bool):
    dt = DataType.from_dtype(x.dtype)
    spatial = x.shape[2:]

    def value(c):
        return _root(window_sum(_terms(jnp.abs(c), p), w), p)

    def run(v):
        return store(value(load(v, half)), dt)

    def fwd(v):
        return run(v), v

    def bwd(v, dy):
        c = load(v, half)
        y = value(c)
        g = load(dy, half).astype(c.dtype)
        if p == 1:
            coef = g
        else:
            scale = y if p == 2 else jnp.power(y, np.asarray(float(p - 1), y.dtype))
            coef = jnp.where(y > 0, g / jnp.where(y > 0, scale, 1), np.zeros((), g.dtype))
        return (store(window_sum_transpose(coef, spatial, w) * _power(c, p), dt),)

    run = backward_rule(run, fwd, bwd)
    return _finish(run(x), dt)


def _lp_growth(sizes, attrs) -> dict:
    """N = prod(WindowSize) positive terms |x|^P summed, then the P-th root, which divides the sum's
    relative error by P: ceil((N + 2) / P) more FLOAT32 ULP; in FLOAT16 arithmetic the same in
    FLOAT16 ULP."""
    p = attrs.get("P")
    p = p if isinstance(p, int) and p >= 1 else 1
    n = math.ceil((_terms_of(attrs) + 2) / p)
    return {F32: n, F16: math.ceil((n + 3) / 8192), "half": n}


def _p_rule(tensors, attrs, level) -> list[Violation]:
    """P = 0 would take the 0th root (1/P): refused."""
    if attrs.get("P") == 0:
        return [Violation("P", "p", "is 0", "at least 1 (Y = (X1^P + ... + Xn^P) ^ (1/P) divides by P)",
                          "P is 1 for the L1 norm, 2 for the L2 norm")]
    return []


_P = ParamSpec("P", "UINT", default=2,
               doc=("The P of Y = (|X1|^P + ... + |Xn|^P) ^ (1/P), at least 1: 1 the L1 norm, 2 the L2 norm (default 2, "
                    "ONNX's LpPool's; a zeroed desc's 0 is refused)."))
_LP_NOTES = (
    "The padding elements are zeros (|0|^P adds nothing), so a window wholly in the padding gives 0. Floats "
    "are read as math reads them (FLOAT32 denormals as zero); FLOAT16 is computed in FLOAT32 and rounded once, "
    "unless allow_half_precision_computation. The terms |x|^P are computed in that type, as the formula is, so "
    "they overflow to inf beyond its range (large values or a large P) where the root would not. DirectML does "
    "not document the order of the additions (docs/semantics.md#accumulating-operators): a budget of 3 + "
    "ceil((prod(WindowSize) + 2) / P) ULP (all terms are positive, and the root divides their sum's relative "
    "error by P).")
_LP_GRADIENT = (
    "The derivative of the formula: dX = the sum over the windows holding X of dY * sign(X) * |X|^(P-1) / "
    "Y^(P-1) (0 where Y = 0, and at X = 0 for P = 1), in FLOAT32 for FLOAT16, rounded once. DirectML has no "
    "LP_POOLING_GRAD.")


def _lp_record(short: str, dilations: bool, silent: tuple = ()) -> OpSpec:
    return OpSpec(
        enum_name=PREFIX + short,
        summary=("Computes the Lp-normalized value across the elements within the sliding window over the input "
                 "tensor."),
        formula=("`Y = (X1^P + X2^P + ... + Xn^P) ^ (1/P)`, where `X1` to `Xn` representing each of the values "
                 "within the sliding window.\n(with |Xi|, the norm: see the notes)")
        if not dilations else
        ("`Y = (X1^P + X2^P + ... + Xn^P) ^ (1/P)` where `X1` to `Xn` representing each of the values within the "
         "sliding window.\n(with |Xi|, the norm: see the notes)"),
        tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
        support=_tables("6.2" if dilations else "1.0"),
        params=window_params(dilations) + (_P,),
        constraints=(SameDataType(("InputTensor", "OutputTensor")),),
        ulp={F32: 3, F16: 1},
        ulp_half=3,
        ulp_growth=_lp_growth,
        gradient=_LP_GRADIENT,
        notes=" ".join((_LP_NOTES, GEOMETRY_NOTE) + (() if dilations else ("Dilations are 1 (this version has none).",))),
        extra_checks=(geometry_checks("InputTensor"), _p_rule),
        infer_outputs=pooled_outputs("OutputTensor"),
        silent=silent,
    )


LP_POOLING = _lp_record("LP_POOLING", False, silent=(
    SilentChoice(
        "LP_POOLING's formula `Y = (X1^P + ... + Xn^P) ^ (1/P)`",
        "read with absolute values, (|X1|^P + ... + |Xn|^P)^(1/P)",
        "The page calls it \"the Lp-normalized value\", \"the L1 or L2 normalization\"; ONNX's LpPool (which "
        "ONNX Runtime's DirectML provider maps onto it) is the norm. The literal formula would be a plain sum "
        "for P = 1 and NaN for an odd P over a negative sum.",
        also=("LP_POOLING1",)),
    SilentChoice(
        "LP_POOLING P = 0",
        "ValidationError",
        "1/P.",
        also=("LP_POOLING1",)),
    SilentChoice(
        "LP_POOLING P's default",
        "2",
        "ONNX's LpPool; a zeroed desc's 0 is refused.",
        also=("LP_POOLING1",)),
    SilentChoice(
        "LP_POOLING gradient (DirectML has no LP_POOLING_GRAD)",
        "dX = sum over the windows holding X of dY sign(X) (|X| / Y)^(P-1); 0 where Y = 0 and at X = 0 for P = "
        "1",
        "The derivative of the norm, NaN-free.",
        also=("LP_POOLING1",)),
))
LP_POOLING1 = _lp_record("LP_POOLING1", True)


@operator(LP_POOLING)
def lp_pooling(input, *, strides, window_size, start_padding, end_padding, p, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[3, -4], [0, 12]]]], np.float32)
        >>> dmljax.lp_pooling(x, strides=(1, 1), window_size=(2, 2), start_padding=(0, 0), end_padding=(0, 0))
        Array([[[[13.]]]], dtype=float32)
        >>> dmljax.lp_pooling(x, strides=(1, 1), window_size=(1, 2), start_padding=(0, 0), end_padding=(0, 0), p=1)
        Array([[[[ 7.],
                 [12.]]]], dtype=float32)
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding})
    return lp_pool(input, w, p, allow_half_precision_computation)


@operator(LP_POOLING1)
def lp_pooling1(input, *, strides, window_size, start_padding, end_padding, dilations, p,
                allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[3, 6, -4, 8]]]], np.float32)
        >>> dmljax.lp_pooling1(x, strides=(1, 1), window_size=(1, 2), start_padding=(0, 0), end_padding=(0, 0),
        ...                    dilations=(1, 2))
        Array([[[[ 5., 10.]]]], dtype=float32)
    """
    w = window_of({"Strides": strides, "WindowSize": window_size, "StartPadding": start_padding,
                   "EndPadding": end_padding, "Dilations": dilations})
    return lp_pool(input, w, p, allow_half_precision_computation)
