"""MEAN_VARIANCE_NORMALIZATION (and 1, 2), of the normalization family: each page's record with its
formula below it (batch.py holds the pieces it shares with the batch normalizations; local_response.py
and lp.py take HALF_NOTE and flushed_output from here).

Sums and means are accumulated in FLOAT32 (FLOAT16 inputs widened first) and rounded once."""

from __future__ import annotations

import math

import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
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
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

__all__ = ["HALF_NOTE", "flushed_output", "mean_variance_normalize"]

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
_F32 = np.dtype(np.float32)
HALF_NOTE = ("FLOAT16 is read, computed and accumulated in FLOAT32 and rounded once to FLOAT16 (also with "
         "allow_half_precision_computation=True, which permits FLOAT16 arithmetic but does not require it). "
         "FLOAT32 denormals are read as zero and flushed on output.")


def flushed_output(out, dt):
    """``out``, marked as flushed where it is FLOAT32 (stored through ``store``)."""
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

    # Centered or scaled, every value is read by arithmetic and the result is arithmetic's: on
    # the CPU the FLOAT32 flushes are the processor's (numerics.load's float_reads, store's
    # float_result); neither, the input is
    # the output (before Scale and Bias) and the flushes stay.
    floats = use_mean or use_var

    def run(v, *sb):
        xhat = normalized(load(v, float_reads=floats))[0]
        s, b = _split(sb, has)  # (loaded apart: stacking them took a kernel more on an H100, 0.92x -> 0.94x)
        out = xhat if s is None else xhat * load(s, float_reads=floats)
        return store(out if b is None else out + load(b, float_reads=floats), dt, float_result=floats)

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

    run = backward_rule(run, run_fwd, run_bwd)
    out = flushed_output(run(x, *(t for t in (scale, bias) if t is not None)), dt)
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
              "(broadcast) or the InputTensor's; before DML_FEATURE_LEVEL_5_2 both or neither. " + HALF_NOTE + " The order of the additions is not DirectML's "
              "to promise (docs/semantics.md#accumulating-operators): a budget of N rounding units of the terms' magnitude, N the element "
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
    silent=(
        SilentChoice(
            "MVN gradients (there is no MVN_GRAD)",
            "the formula's derivative, BATCH_NORMALIZATION_TRAINING_GRAD's form with dY * Scale (Scale need "
            "not be constant over the axes); UseMean FALSE drops the mean(dY) term, UseVariance FALSE the "
            "Coef1 term and the division",
            "[Gradients](semantics.md#gradients).",
            also=("MEAN_VARIANCE_NORMALIZATION1", "MEAN_VARIANCE_NORMALIZATION2")),
    ),
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


def _mvn1_record(name: str, summary: str, formula: str, support, params, notes: str, silent: tuple = ()) -> OpSpec:
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
        silent=silent,
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
    silent=(
        SilentChoice(
            "Axes of MVN1/MVN2",
            "distinct, in range, at least one",
            "The pages are silent; check_axes, as SOFTMAX1/REDUCE.",
            also=("MEAN_VARIANCE_NORMALIZATION2",)),
    ),
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
    _MVN_NOTES,
    silent=(
        SilentChoice(
            "MEAN_VARIANCE_NORMALIZATION2's UseMean and UseVariance (the page: \"TBD\")",
            "UseMean FALSE: Mean = 0, so Variance = mean(Input^2) (RMS normalization); UseVariance FALSE: no "
            "division (MVN1's NormalizeVariance FALSE)",
            "ONNX Runtime's DirectML provider lowers SimplifiedLayerNormalization (RMSNorm) to MVN2 with "
            "UseMean FALSE and UseVariance TRUE."),
        SilentChoice(
            "MEAN_VARIANCE_NORMALIZATION2 with a FusedActivation",
            "refused (\"supports no fused activation\")",
            "Its struct has the member, but the fused-activation page's host list (which predates it) does not "
            "name it; dmljax.fused.FUSION_HOSTS transcribes that list. To accept it, add the operator there "
            "(see the page slips)."),
    ),
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
