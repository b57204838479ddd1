"""MEAN_VARIANCE_NORMALIZATION (and 1, 2), LOCAL_RESPONSE_NORMALIZATION (and its GRAD) and
LP_NORMALIZATION, of the normalization family: each page's record with its formula below it
(the batch normalizations are in normalization_batch.py, whose shared pieces these use).

Sums and means are accumulated in FLOAT32 (FLOAT16 inputs widened first) and rounded once."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.errors import Violation
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.numerics import load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.ops.factories import apply_fused, check_axes
from dmljax._src.ops.normalization.batch import (
    EPSILON, FUSED_ACTIVATION, broadcastable, centered_input_grad, moments, same_dimension_count, stat_growth,
    sum_to,
)
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, TensorSpec, table

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
_F32 = np.dtype(np.float32)
_HALF = ("FLOAT16 is read, computed and accumulated in FLOAT32 and rounded once to FLOAT16 (also with "
         "allow_half_precision_computation=True, which permits FLOAT16 arithmetic but does not require it). "
         "FLOAT32 denormals are read as zero and flushed on output.")


def _done(out, dt):
    if dt is F32:
        mark_flushed(out)
    return out


# ------------------------------------------------------------------- MEAN_VARIANCE_NORMALIZATION
def mean_variance_normalize(x, scale, bias, axes, use_mean, use_var, epsilon, fused, half):
    """Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias over ``axes`` (without
    ``use_mean``: Mean 0, Variance the mean of Input^2; without ``use_var``: no division), then
    the fused activation. The gradient is the formula's derivative (centered_input_grad with dY *
    Scale; sums of dY * normalized input and of dY for Scale and Bias)."""
    dt = DataType.from_dtype(x.dtype)
    eps = np.float32(epsilon)
    axes = tuple(sorted(axes))
    has = (scale is not None, bias is not None)

    def normalized(xf):
        mean, var = moments(xf, axes, use_mean)
        xc = xf - mean if use_mean else xf
        return (xc * lax.rsqrt(var + eps) if use_var else xc), mean, var

    @jax.custom_vjp
    def run(v, *sb):
        xhat = normalized(load(v))[0]
        s, b = _split(sb, has)  # (loaded apart: stacking them took a kernel more on an H100, 0.92x -> 0.94x)
        out = xhat if s is None else xhat * load(s)
        return store(out if b is None else out + load(b), dt)

    def run_fwd(v, *sb):
        return run(v, *sb), (v, sb)

    def run_bwd(res, dy):
        v, sb = res
        s, b = _split(sb, has)
        xf, g = load(v), load(dy)
        xhat, mean, var = normalized(xf)
        gs = g if s is None else g * load(s)
        dx = centered_input_grad(xf, gs, mean, var, None, eps, axes, use_mean, use_var)
        grads = [store(dx, dt)]
        if s is not None:
            grads.append(store(sum_to(g * xhat, s.shape), dt))
        if b is not None:
            grads.append(store(sum_to(g, b.shape), dt))
        return tuple(grads)

    run.defvjp(run_fwd, run_bwd)
    out = _done(run(x, *(t for t in (scale, bias) if t is not None)), dt)
    return apply_fused(fused, out, half)


def _split(sb, has):
    it = iter(sb)
    return tuple(next(it) if h else None for h in has)


def _scale_bias_checks(fixed_before_4_0: bool):
    """ScaleTensor and BiasTensor: the InputTensor's DimensionCount, each dimension 1 or the
    InputTensor's (before DML_FEATURE_LEVEL_4_0, with ``fixed_before_4_0``, the ChannelCount
    dimension equal to the InputTensor's); before DML_FEATURE_LEVEL_5_2 each is required when
    the other is given."""
    def check(tensors, attrs, level) -> list[Violation]:
        names = ("ScaleTensor", "BiasTensor")
        problems = same_dimension_count(tensors, names)
        x = tensors.get("InputTensor")
        if not problems and x is not None:
            fixed = (1,) if fixed_before_4_0 and level < FeatureLevel.parse("4.0") and len(x.shape) >= 2 else ()
            problems += broadcastable(tensors, names, fixed=fixed)
            if fixed and problems:
                problems = [Violation(p.subject, p.argument, p.found, p.allowed + " before DML_FEATURE_LEVEL_4_0",
                                      "from DML_FEATURE_LEVEL_4_0 any dimension may be 1") for p in problems]
        given = [n for n in names if n in tensors]
        if len(given) == 1 and level < FeatureLevel.parse("5.2"):
            missing = names[1 - names.index(given[0])]
            problems.append(Violation(
                missing, missing[: -len("Tensor")].lower(), f"is missing while {given[0]} is given",
                "before DML_FEATURE_LEVEL_5_2 ScaleTensor and BiasTensor are given together or not at all",
                "pass both (a Scale of ones, a Bias of zeros), or feature_level='5.2' or newer"))
        return problems
    return check


def _mvn_growth(axes_of):
    """N: the terms of a normalized slice, or of Scale's and Bias's gradient sums where the call's
    attributes give their Sizes (by DML name, as the generated tests do) and they are more."""
    def growth(sizes, attrs) -> dict:
        axes = axes_of(attrs, len(sizes))
        n = math.prod(sizes[a] for a in axes if 0 <= a < len(sizes)) if axes else 1
        return stat_growth(max(n, _sum_terms(sizes, attrs)))
    return growth


def _sum_terms(sizes, attrs) -> int:
    shapes = [attrs.get(t) for t in ("ScaleTensor", "BiasTensor")]
    return max([math.prod(n for n, s in zip(sizes, shape) if s == 1) for shape in shapes
                if isinstance(shape, tuple) and len(shape) == len(sizes)] or [1])


def _cross_axes(attrs, ndim):
    return (1, 2, 3) if attrs.get("CrossChannel") else (2, 3)


def _listed_axes(attrs, ndim):
    axes = attrs.get("Axes")
    return tuple(a for a in axes if isinstance(a, int)) if isinstance(axes, (tuple, list)) else ()


_MVN_ROW4 = ("4", FLOAT32_FLOAT16)
_MVN_TENSORS = (TensorSpec("InputTensor", "input"), TensorSpec("ScaleTensor", "input", optional=True),
                TensorSpec("BiasTensor", "input", optional=True), TensorSpec("OutputTensor", "output"))
_MVN_FORMULA = "Output = FusedActivation(Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias)"
_NORMALIZE_VARIANCE = ParamSpec(
    "NormalizeVariance", "BOOL", default=True,
    doc=("TRUE: divide by sqrt(Variance + Epsilon); FALSE: Output = FusedActivation(Scale * (Input - Mean) + Bias) "
         "(default TRUE, as ONNX's MeanVarianceNormalization)."))
_MVN_GRADIENT = ("The formula's derivative (no MVN_GRAD operator exists): dInput = (g - mean(g) - X * mean(g * X)) / "
                 "sqrt(Variance + Epsilon) with g = dY * Scale and X the normalized input, the means over the "
                 "normalized axes (the Mean and Variance depend on Input: BATCH_NORMALIZATION_TRAINING_GRAD's "
                 "form); dScale = sum(dY * X), dBias = sum(dY) over their broadcast dimensions; dY through the "
                 "fused activation's gradient first.")
_MVN_NOTES = ("Mean and Variance are taken over the normalized axes of each slice; the Variance is the biased "
              "one (divided by the element count) and Epsilon is added to it under the square root. Scale and "
              "Bias are optional (None: 1 and 0), with the InputTensor's DimensionCount, each dimension 1 "
              "(broadcast) or the InputTensor's; before DML_FEATURE_LEVEL_5_2 both or neither. Epsilon defaults to "
              "1e-5 (the page's recommendation). " + _HALF + " The order of the additions is not DirectML's "
              "to promise (SEMANTICS.md 8): a budget of N rounding units of the terms' magnitude, N the element "
              "count of a normalized slice.")

MEAN_VARIANCE_NORMALIZATION = OpSpec(
    enum_name=PREFIX + "MEAN_VARIANCE_NORMALIZATION",
    summary=("Performs a mean variance normalization function on the input tensor. This operator will calculate "
             "the mean and variance of the input tensor to perform normalization."),
    formula=_MVN_FORMULA + "\nover {ChannelCount, Height, Width} with CrossChannel TRUE, {Height, Width} otherwise",
    tensors=_MVN_TENSORS,
    support=(table("1.0", InputTensor=_MVN_ROW4, ScaleTensor=_MVN_ROW4, BiasTensor=_MVN_ROW4,
                   OutputTensor=_MVN_ROW4),),
    params=(
        ParamSpec("CrossChannel", "BOOL", default=False,
                  doc=("TRUE: Mean and Variance over {ChannelCount, Height, Width}; FALSE: over {Height, Width}, "
                       "each channel independent (default FALSE, as ONNX's across_channels=0).")),
        _NORMALIZE_VARIANCE,
        EPSILON,
        FUSED_ACTIVATION,
    ),
    constraints=(SameSizes(("InputTensor", "OutputTensor")),
                 SameDataType(("BiasTensor", "InputTensor", "OutputTensor", "ScaleTensor"))),
    ulp={F32: 4, F16: 1},
    ulp_half=1,
    ulp_growth=_mvn_growth(_cross_axes),
    gradient=_MVN_GRADIENT,
    notes=_MVN_NOTES + " CrossChannel TRUE is MEAN_VARIANCE_NORMALIZATION1's Axes {1, 2, 3}, FALSE its {2, 3}.",
    extra_checks=(_scale_bias_checks(False),),
)


@operator(MEAN_VARIANCE_NORMALIZATION)
def mean_variance_normalization(input, scale=None, bias=None, *, cross_channel, normalize_variance, epsilon,
                                fused_activation, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([0.0, 0.0, 4.0, 4.0], np.float32).reshape(1, 1, 2, 2)  # mean 2, variance 4
        >>> dmljax.mean_variance_normalization(x, epsilon=0.0)[0, 0]
        Array([[-1., -1.],
               [ 1.,  1.]], dtype=float32)
        >>> dmljax.mean_variance_normalization(x, normalize_variance=False)[0, 0]
        Array([[-2., -2.],
               [ 2.,  2.]], dtype=float32)
    """
    return mean_variance_normalize(input, scale, bias, (1, 2, 3) if cross_channel else (2, 3), True,
                                   normalize_variance, epsilon, fused_activation, allow_half_precision_computation)


_AXES = ParamSpec("Axes", "UINT[]", count="AxisCount",
                  doc="The axes along which to calculate the Mean and Variance (each once, below the DimensionCount).")
_MVN1_ROW = ("1 to 8", FLOAT32_FLOAT16)


def _mvn1_record(name: str, summary: str, formula: str, support, params, notes: str) -> OpSpec:
    return OpSpec(
        enum_name=PREFIX + name,
        summary=summary,
        formula=formula,
        tensors=_MVN_TENSORS,
        support=support,
        params=params,
        constraints=(SameSizes(("InputTensor", "OutputTensor")),
                     SameDataType(("BiasTensor", "InputTensor", "OutputTensor", "ScaleTensor"))),
        ulp={F32: 4, F16: 1},
        ulp_half=1,
        ulp_growth=_mvn_growth(_listed_axes),
        gradient=_MVN_GRADIENT,
        notes=notes,
        extra_checks=(check_axes, _scale_bias_checks(True)),
    )


MEAN_VARIANCE_NORMALIZATION1 = _mvn1_record(
    "MEAN_VARIANCE_NORMALIZATION1",
    MEAN_VARIANCE_NORMALIZATION.summary,
    _MVN_FORMULA + "\nover the Axes",
    (table("3.1", InputTensor=_MVN1_ROW, ScaleTensor=_MVN1_ROW, BiasTensor=_MVN1_ROW, OutputTensor=_MVN1_ROW),
     table("2.1", InputTensor=_MVN_ROW4, ScaleTensor=_MVN_ROW4, BiasTensor=_MVN_ROW4, OutputTensor=_MVN_ROW4)),
    (_AXES, _NORMALIZE_VARIANCE, EPSILON, FUSED_ACTIVATION),
    _MVN_NOTES + (" Before DML_FEATURE_LEVEL_4_0 Scale's and Bias's ChannelCount (dimension 1) must equal the "
                  "InputTensor's. Axes {2, 3} is MEAN_VARIANCE_NORMALIZATION's CrossChannel FALSE, {1, 2, 3} its "
                  "TRUE; the Axes must be distinct (the page is silent)."),
)


@operator(MEAN_VARIANCE_NORMALIZATION1)
def mean_variance_normalization1(input, scale=None, bias=None, *, axes, normalize_variance, epsilon,
                                 fused_activation, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1.0, 3.0], [2.0, 6.0]], np.float32)
        >>> dmljax.mean_variance_normalization1(x, axes=(1,), epsilon=0.0)  # a layer normalization of rows
        Array([[-1.,  1.],
               [-1.,  1.]], dtype=float32)
    """
    return mean_variance_normalize(input, scale, bias, axes, True, normalize_variance, epsilon, fused_activation,
                                   allow_half_precision_computation)


MEAN_VARIANCE_NORMALIZATION2 = _mvn1_record(
    "MEAN_VARIANCE_NORMALIZATION2",
    ("Performs a mean variance normalization function on the input tensor (MEAN_VARIANCE_NORMALIZATION1 with "
     "UseMean and UseVariance in place of NormalizeVariance; the page reads TBD)."),
    "The axes along which to calculate the Mean and Variance.\n"
    "Output = FusedActivation(Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias), Mean = mean(Input) if "
    "UseMean else 0,\nVariance = mean((Input - Mean)^2), and without UseVariance no division: "
    "Output = FusedActivation(Scale * (Input - Mean) + Bias)",
    (table("6.3", InputTensor=_MVN1_ROW, ScaleTensor=_MVN1_ROW, BiasTensor=_MVN1_ROW, OutputTensor=_MVN1_ROW),),
    (_AXES,
     ParamSpec("UseMean", "BOOL", default=True,
               doc=("TRUE: subtract the Mean; FALSE: Mean is 0, so Variance is the mean of Input^2 (a root mean "
                    "square normalization, as ONNX Runtime's SimplifiedLayerNormalization uses it). Default TRUE.")),
     ParamSpec("UseVariance", "BOOL", default=True,
               doc="TRUE: divide by sqrt(Variance + Epsilon); FALSE: no division. Default TRUE."),
     EPSILON, FUSED_ACTIVATION),
    _MVN_NOTES + (" The page documents UseMean and UseVariance as TBD: dmljax reads UseMean FALSE as Mean = 0 "
                  "(Variance = mean(Input^2): RMS normalization, how ONNX Runtime's DirectML provider lowers "
                  "SimplifiedLayerNormalization) and UseVariance FALSE as MEAN_VARIANCE_NORMALIZATION1's "
                  "NormalizeVariance FALSE. The Axes must be distinct (the page is silent). The fused-activation "
                  "page's list of hosts predates this operator and does not name it: a FusedActivation is "
                  "refused until that list does."),
)


@operator(MEAN_VARIANCE_NORMALIZATION2)
def mean_variance_normalization2(input, scale=None, bias=None, *, axes, use_mean, use_variance, epsilon,
                                 fused_activation, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[3.0, 4.0]], np.float32)  # mean of squares 12.5
        >>> dmljax.mean_variance_normalization2(x, axes=(1,), use_mean=False, epsilon=0.0) * np.sqrt(12.5)
        Array([[3., 4.]], dtype=float32)
    """
    return mean_variance_normalize(input, scale, bias, axes, use_mean, use_variance, epsilon, fused_activation,
                                   allow_half_precision_computation)


# ------------------------------------------------------------------ LOCAL_RESPONSE_NORMALIZATION
def _window_sum(t, cross: bool, size: int, transposed: bool):
    """The sum over each element's local region: LocalSize channels (CrossChannel) or LocalSize x
    LocalSize of Height x Width, from floor((LocalSize - 1) / 2) before the element to
    ceil((LocalSize - 1) / 2) after it, clipped to the tensor (zeros outside). ``transposed``:
    the regions that hold each element (the pads swapped): what the gradient sums."""
    before = (size - 1) // 2
    after = size - 1 - before
    pad = (after, before) if transposed else (before, after)
    if cross:
        dims, padding = (1, size, 1, 1), ((0, 0), pad, (0, 0), (0, 0))
    else:
        dims, padding = (1, 1, size, size), ((0, 0), (0, 0), pad, pad)
    return lax.reduce_window(t, np.float32(0), lax.add, dims, (1, 1, 1, 1), padding)


def _lrn_terms(x, cross, size, alpha, bias):
    """D = Bias + (Alpha / LocalSize) * sum(Input^2 over the local region), in FLOAT32. ``x`` may
    be the input as it is: the square of a FLOAT32 denormal is 0 with or without the flush (and
    leaving the flush out of the window's taps made the H100's kernel 0.87x of the jnp formula's)."""
    xf = x.astype(np.float32)
    return np.float32(bias) + np.float32(alpha / size) * _window_sum(xf * xf, cross, size, False)


def lrn_input_grad(x, g, cross, size, alpha, beta, bias):
    """dInput = dY * D^-Beta - (2 Alpha Beta / LocalSize) * Input * sum over the regions that hold
    the element of dY * Input * D^(-Beta - 1) (the formula's derivative), in FLOAT32."""
    d = _lrn_terms(x, cross, size, alpha, bias)
    xf = load(x)
    p = jnp.power(d, np.float32(-beta))
    held = _window_sum(g * (xf * (p / d)), cross, size, True)  # (x D^(-Beta-1) first: no inf * 0 where D is inf)
    return g * p - np.float32(2 * alpha * beta / size) * xf * held


def _lrn_checks(tensors, attrs, level) -> list[Violation]:
    """"This value must be at least 1"."""
    size = attrs.get("LocalSize")
    if size is not None and size < 1:
        return [Violation("LocalSize", "local_size", f"is {size}", "at least 1")]
    return []


def _lrn_growth(sizes, attrs) -> dict:
    size = attrs.get("LocalSize")
    size = size if isinstance(size, int) and size >= 1 else 1
    return stat_growth(size if attrs.get("CrossChannel", True) else size * size)


def _lrn_params() -> tuple[ParamSpec, ...]:
    return (
        ParamSpec("CrossChannel", "BOOL", default=True,
                  doc=("TRUE: the local region is LocalSize channels; FALSE: LocalSize x LocalSize of Height x Width "
                       "in each channel (default TRUE, ONNX's LRN).")),
        ParamSpec("LocalSize", "UINT",
                  doc="The number of elements to sum over per dimension of the local region (at least 1)."),
        ParamSpec("Alpha", "FLOAT", default=0.0001, doc="The scaling parameter (default 0.0001, as the page recommends)."),
        ParamSpec("Beta", "FLOAT", default=0.75, doc="The exponent (default 0.75, as the page recommends)."),
        ParamSpec("Bias", "FLOAT", default=1.0, doc="The bias (default 1, as the page recommends)."),
    )


_LRN_NOTES = ("The local region of an element at channel c (CrossChannel TRUE) runs over the channels "
              "max(0, c - floor((LocalSize - 1) / 2)) to min(C - 1, c + ceil((LocalSize - 1) / 2)), as ONNX's LRN, "
              "which ONNX Runtime's DirectML provider maps onto this operator with CrossChannel TRUE; with "
              "CrossChannel FALSE the same span in Height and in Width (LocalSize x LocalSize elements of one "
              "channel). The divisor is LocalSize in both cases, as the page's formula writes it (Caffe's "
              "within-channel LRN divides by LocalSize^2: dmljax follows the page). " + _HALF + " The squares and their "
              "sum are FLOAT32 values, as the formula computes them: beyond FLOAT32's range (|Input| above about "
              "1.8e19) they are inf, and the element's result 0 (NaN for an infinite Input), where float64 would "
              "give a tiny number. A budget of the region's element count in rounding units, plus the power's.")
_LRN_ROW = ("4", FLOAT32_FLOAT16)

LOCAL_RESPONSE_NORMALIZATION = OpSpec(
    enum_name=PREFIX + "LOCAL_RESPONSE_NORMALIZATION",
    summary="Performs a local response normalization (LRN) function on the input.",
    formula="Output = Input / (Bias + (Alpha / LocalSize) * sum(Input^2 for every Input in the local region))^Beta",
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(table("1.0", InputTensor=_LRN_ROW, OutputTensor=_LRN_ROW),),
    params=_lrn_params(),
    constraints=(SameDataType(("InputTensor", "OutputTensor")), SameSizes(("InputTensor", "OutputTensor"))),
    ulp={F32: 8, F16: 1},
    ulp_half=1,
    ulp_growth=_lrn_growth,
    grad_operator=PREFIX + "LOCAL_RESPONSE_NORMALIZATION_GRAD",
    gradient="As DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD (the formula's derivative, in FLOAT32).",
    notes=_LRN_NOTES,
    extra_checks=(_lrn_checks,),
)


@operator(LOCAL_RESPONSE_NORMALIZATION)
def local_response_normalization(input, *, cross_channel, local_size, alpha, beta, bias,
                                 allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([1.0, 2.0, 2.0], np.float32).reshape(1, 3, 1, 1)
        >>> dmljax.local_response_normalization(x, local_size=3, alpha=3.0, beta=1.0, bias=0.0)[:, :, 0, 0]
        Array([[0.2       , 0.22222222, 0.25      ]], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    args = (cross_channel, local_size, alpha, beta, bias)

    @jax.custom_vjp
    def run(x):
        return store(load(x) * jnp.power(_lrn_terms(x, cross_channel, local_size, alpha, bias), np.float32(-beta)), dt)

    def run_fwd(x):
        return run(x), x

    def run_bwd(x, dy):
        return (store(lrn_input_grad(x, load(dy), *args), dt),)

    run.defvjp(run_fwd, run_bwd)
    return _done(run(input), dt)


LOCAL_RESPONSE_NORMALIZATION_GRAD = OpSpec(
    enum_name=PREFIX + "LOCAL_RESPONSE_NORMALIZATION_GRAD",
    summary="Computes backpropagation gradients for local response normalization.",
    formula=("An output tensor containing the backpropagated gradients.\n"
             "OutputGradient = InputGradient * D^-Beta - (2 * Alpha * Beta / LocalSize) * Input * sum(InputGradient * "
             "Input * D^(-Beta - 1) over the local regions that hold the element),\n"
             "D = Bias + (Alpha / LocalSize) * sum(Input^2 for every Input in the local region)"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("InputGradientTensor", "input"),
             TensorSpec("OutputGradientTensor", "output")),
    support=(table("3.1", InputTensor=_LRN_ROW, InputGradientTensor=_LRN_ROW, OutputGradientTensor=_LRN_ROW),),
    params=_lrn_params(),
    constraints=(SameDataType(("InputGradientTensor", "InputTensor", "OutputGradientTensor")),
                 SameSizes(("InputGradientTensor", "InputTensor", "OutputGradientTensor"))),
    ulp={F32: 8, F16: 1},
    ulp_half=1,
    ulp_growth=_lrn_growth,
    gradient="Second order: the derivative of this formula (jax.grad through it), in FLOAT32.",
    notes=("The page gives no formula: dmljax's is the derivative of LOCAL_RESPONSE_NORMALIZATION's (jax.grad of "
           "local_response_normalization uses it). Its LocalSize text contradicts itself (the width and height of "
           "the region with CrossChannel TRUE, the element count with FALSE): dmljax reads LocalSize as the "
           "forward page does. " + _LRN_NOTES),
    extra_checks=(_lrn_checks,),
)


@operator(LOCAL_RESPONSE_NORMALIZATION_GRAD)
def local_response_normalization_grad(input, input_gradient, *, cross_channel, local_size, alpha, beta, bias,
                                      allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.ones((1, 2, 1, 1), np.float32)
        >>> dmljax.local_response_normalization_grad(x, x, local_size=1, alpha=1.0, beta=1.0, bias=0.0)[:, :, 0, 0]
        Array([[-1., -1.]], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    return _done(store(lrn_input_grad(input, load(input_gradient), cross_channel, local_size, alpha, beta, bias),
                       dt), dt)


# ------------------------------------------------------------------------------ LP_NORMALIZATION
def _lp_checks(tensors, attrs, level) -> list[Violation]:
    """Axis below the DimensionCount; P is 1 or 2."""
    problems = []
    axis, x = attrs.get("Axis"), tensors.get("InputTensor")
    if axis is not None and x is not None and axis >= len(x.shape):
        problems.append(Violation("Axis", "axis", f"is {axis} for a {len(x.shape)}-dimensional InputTensor",
                                  f"in the range [0, {len(x.shape) - 1}]"))
    p = attrs.get("P")
    if p is not None and p not in (1, 2):
        problems.append(Violation("P", "p", f"is {p}", "1 or 2 (the order of the normalization)"))
    return problems


def _lp_growth(sizes, attrs) -> dict:
    axis = attrs.get("Axis")
    n = sizes[axis] if isinstance(axis, int) and 0 <= axis < len(sizes) else (math.prod(sizes) if sizes else 1)
    return stat_growth(n)


_LP_ROW = ("1 to 8", FLOAT32_FLOAT16)

LP_NORMALIZATION = OpSpec(
    enum_name=PREFIX + "LP_NORMALIZATION",
    summary="Performs an Lp-normalization function along the specified axis of the input tensor.",
    formula=("Performs an Lp-normalization function along the specified axis of the input tensor.\n"
             "Output = Input / (sum(|Input|^P along Axis) + Epsilon)^(1 / P), P 1 or 2"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(table("3.1", InputTensor=_LP_ROW, OutputTensor=_LP_ROW),
             table("1.0", InputTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", FLOAT32_FLOAT16))),
    params=(
        ParamSpec("Axis", "UINT", doc="The axis on which to apply normalization."),
        ParamSpec("Epsilon", "FLOAT", default=1e-5,
                  doc="The epsilon value to use to avoid division by zero (default 0.00001, as the page recommends)."),
        ParamSpec("P", "UINT", default=2, doc="The order of the normalization, 1 or 2 (default 2, as ONNX's)."),
    ),
    constraints=(SameDataType(("InputTensor", "OutputTensor")), SameSizes(("InputTensor", "OutputTensor"))),
    ulp={F32: 3, F16: 1},
    ulp_half=1,
    ulp_growth=_lp_growth,
    gradient=("The formula's derivative (no LP_NORMALIZATION_GRAD operator exists): dInput = (dY - s * sum(dY * "
              "Output)) / (sum(|Input|^P) + Epsilon)^(1 / P), s = Output for P = 2 and sign(Input) for P = 1 "
              "(0 at 0, as jax's |x|)."),
    notes=("The page gives no formula and does not say where Epsilon goes: dmljax adds it to the sum of |Input|^P, "
           "under the root (P = 2: Input / sqrt(sum(Input^2) + Epsilon); P = 1: Input / (sum(|Input|) + Epsilon)), "
           "as the other normalizations add Epsilon to the Variance. A slice of zeros gives zeros. " + _HALF +
           " A budget of the axis' size in rounding units (SEMANTICS.md 8)."),
    extra_checks=(_lp_checks,),
)


@operator(LP_NORMALIZATION)
def lp_normalization(input, *, axis, epsilon, p, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[3.0, -4.0], [1.0, 1.0]], np.float32)
        >>> dmljax.lp_normalization(x, axis=1, epsilon=0.0)
        Array([[ 0.6       , -0.8       ],
               [ 0.70710677,  0.70710677]], dtype=float32)
        >>> dmljax.lp_normalization(np.array([[1.0, -3.0]], np.float32), axis=1, p=1, epsilon=0.0)
        Array([[ 0.25, -0.75]], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    eps = np.float32(epsilon)

    def norm(xf):
        if p == 1:
            return jnp.sum(jnp.abs(xf), axis=axis, keepdims=True) + eps
        return jnp.sqrt(jnp.sum(xf * xf, axis=axis, keepdims=True) + eps)

    @jax.custom_vjp
    def run(x):
        xf = load(x)
        return store(xf / norm(xf), dt)

    def run_fwd(x):
        return run(x), x

    def run_bwd(x, dy):
        xf, g = load(x), load(dy)
        n = norm(xf)
        y = xf / n
        along = jnp.sum(g * y, axis=axis, keepdims=True)
        s = y if p == 2 else jnp.sign(xf)
        return (store((g - s * along) / n, dt),)

    run.defvjp(run_fwd, run_bwd)
    return _done(run(input), dt)
