"""BATCH_NORMALIZATION, BATCH_NORMALIZATION_TRAINING and their *_GRAD operators, of the
normalization family: each page's record with its formula below it, and the pieces that the mean
variance normalizations (mean_variance.py) share with them.

Broadcasting is the pages': a dimension of 1 in a statistics tensor (Mean, Variance, Scale, Bias)
is broadcast over the InputTensor's; the statistics of the training operators are taken over the
dimensions where ScaleTensor (MeanTensor for the *_GRAD operators) has size 1. Statistics are
accumulated in FLOAT32 (FLOAT16 inputs widened first) and rounded once, in two passes: the mean,
then the mean of the squared deviations (the biased variance, divided by the element count)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.errors import Violation
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.numerics import load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.ops.factories import apply_fused
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, snake_case, table

__all__ = [
    "EPSILON", "FUSED_ACTIVATION", "broadcastable", "centered_input_grad", "load_together", "moments",
    "same_dimension_count", "stat_axes", "stat_growth", "stat_terms", "sum_to",
]

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
_F32 = np.dtype(np.float32)


# ------------------------------------------------------------------------------------ shared
def stat_axes(stat_shape, x_shape) -> tuple[int, ...]:
    """The dimensions a statistics tensor of ``stat_shape`` reduces (size 1 there, more in the
    input): the pages' "the set of dimensions for which ... sizes equal one"."""
    return tuple(i for i, (s, n) in enumerate(zip(stat_shape, x_shape)) if s == 1 and n != 1)


def sum_to(g, shape) -> jnp.ndarray:
    """``g`` summed over the dimensions where ``shape`` has size 1 (a gradient of a broadcast
    operand), kept as dimensions of 1."""
    axes = stat_axes(shape, g.shape)
    return jnp.sum(g, axis=axes, keepdims=True) if axes else g


def moments(x, axes, use_mean: bool = True):
    """(mean or None, variance) of FLOAT32 ``x`` over ``axes`` (kept as 1s), in two passes: the
    mean, then the mean of (x - mean)^2 (the biased variance: divided by the element count). With
    ``use_mean=False`` the "variance" is the mean of x^2 (MEAN_VARIANCE_NORMALIZATION2's UseMean
    FALSE)."""
    if not axes:
        return (x if use_mean else None), jnp.zeros_like(x) if use_mean else x * x
    mean = jnp.mean(x, axis=axes, keepdims=True) if use_mean else None
    xc = x - mean if use_mean else x
    return mean, jnp.mean(xc * xc, axis=axes, keepdims=True)


def centered_input_grad(x, dy, mean, var, scale, eps, axes, use_mean: bool = True, use_var: bool = True):
    """BATCH_NORMALIZATION_TRAINING_GRAD's OutputGradient, in FLOAT32:
    Scale * Coef0 * (InputGradientCentered - InputCentered * mean(Coef1) / (Variance + Epsilon)),
    Coef0 = 1 / sqrt(Variance + Epsilon), Coef1 = InputGradient * InputCentered, InputCentered =
    Input - Mean, InputGradientCentered = InputGradient - mean(InputGradient), the means over
    ``axes``. ``scale`` None: 1. Without ``use_mean`` nothing is centered (Mean is 0); without
    ``use_var`` there is no division (Coef0 = 1, no Coef1 term): the derivatives of the mean
    variance normalizations' variants."""
    def mean_of(t):
        return jnp.mean(t, axis=axes, keepdims=True) if axes else t
    xc = x - mean if use_mean else x
    t = dy - mean_of(dy) if use_mean else dy
    if use_var:
        k = mean_of(dy * xc) / (var + eps)  # statistics-shaped: mean(Coef1) / (Variance + Epsilon)
        coef0 = lax.rsqrt(var + eps)
        t = t - xc * k
        factor = coef0 if scale is None else scale * coef0
    else:
        factor = scale
    return t if factor is None else t * factor


def same_dimension_count(tensors, names, reference="InputTensor") -> list[Violation]:
    """"... must have the same DimensionCount": each of ``names`` against ``reference``."""
    ref = tensors.get(reference)
    if ref is None:
        return []
    out = []
    for n in names:
        info = tensors.get(n)
        if info is not None and len(info.shape) != len(ref.shape):
            out.append(Violation(n, snake_case(n), f"has {len(info.shape)} dimensions (Sizes {list(info.shape)})",
                                 f"the same DimensionCount as {reference} ({len(ref.shape)})",
                                 "add dimensions of 1 (a dimension of 1 is broadcast)"))
    return out


def broadcastable(tensors, names, reference="InputTensor", fixed: tuple[int, ...] = ()) -> list[Violation]:
    """Each dimension of each of ``names`` is 1 or the ``reference``'s ("Any dimension ... can be
    set to 1, and be automatically broadcast to match InputTensor, but otherwise must equal the
    corresponding dimension's size"); the dimensions in ``fixed`` must equal it (not broadcast).
    Tensors whose DimensionCount differs are left to same_dimension_count."""
    ref = tensors.get(reference)
    if ref is None:
        return []
    out = []
    for n in names:
        info = tensors.get(n)
        if info is None or len(info.shape) != len(ref.shape):
            continue
        bad = [i for i, (s, r) in enumerate(zip(info.shape, ref.shape)) if s != r and (s != 1 or i in fixed)]
        if bad:
            allowed = (f"each dimension 1 or the {reference}'s" if not fixed else
                       f"dimension{'s' if len(fixed) > 1 else ''} {', '.join(map(str, fixed))} equal to the "
                       f"{reference}'s, the others 1 or the {reference}'s")
            out.append(Violation(n, snake_case(n), f"has Sizes {list(info.shape)} (dimension {bad[0]} is "
                                 f"{info.shape[bad[0]]})", f"{allowed} (Sizes {list(ref.shape)})",
                                 "a dimension of 1 is broadcast; DirectML never broadcasts any other size"))
    return out


def stat_growth(terms) -> dict:
    """A statistic of N terms (docs/semantics.md#accumulating-operators): N rounding units of the terms' magnitude in
    FLOAT32; FLOAT16, accumulated in FLOAT32 and rounded once, N / 2^13 FLOAT16 ULP more."""
    n = max(int(terms), 1)
    extra = math.ceil(n / 8192)
    return {F32: n, F16: extra, "half": extra}


def stat_terms(*tensors: str):
    """``ulp_growth`` for statistics over the dimensions where these tensors have size 1: N is
    the most terms one of them sums, from their Sizes where the call's attributes give them (by
    DML name, as the generated tests do), else the InputTensor's element count (the most a
    statistic can have)."""
    def growth(sizes, attrs) -> dict:
        counts = [math.prod(n for n, s in zip(sizes, shape) if s == 1) for shape in (attrs.get(t) for t in tensors)
                  if isinstance(shape, tuple) and len(shape) == len(sizes)]
        return stat_growth(max(counts) if counts else (math.prod(sizes) if sizes else 1))
    return growth


def load_together(*arrays):
    """``load`` of several statistics tensors, those of one Sizes stacked and read in one pass: on
    an H100, XLA gave each small tensor's flush a kernel of its own (5 kernels where the jnp formula
    took 2, 0.90x its speed; stacked, 3 kernels and 0.97x)."""
    out = list(arrays)
    by_shape: dict = {}
    for i, a in enumerate(arrays):
        by_shape.setdefault(tuple(a.shape), []).append(i)
    for idx in by_shape.values():
        if len(idx) == 1:
            out[idx[0]] = load(arrays[idx[0]])
            continue
        stacked = load(jnp.stack([arrays[i] for i in idx]))
        for k, i in enumerate(idx):
            out[i] = stacked[k]
    return out


def _zero_or(ct):
    return None if isinstance(ct, SymbolicZero) else ct


EPSILON = ParamSpec("Epsilon", "FLOAT", default=1e-5,
                    doc=("The epsilon value to use to avoid division by zero (default 1e-5: the 0.00001 the "
                         "mean variance normalization pages recommend; ONNX's default too)."))
FUSED_ACTIVATION = ParamSpec(
    "FusedActivation", "DML_OPERATOR_DESC*", default=None, nullable=True,
    doc=("An optional fused activation applied after the normalization: a dmljax.FusedActivation, e.g. "
         "FusedActivation('ACTIVATION_RELU'), or {'Type': ..., 'Desc': {...}}."))

_HALF = ("FLOAT16 is read, computed and accumulated in FLOAT32 and rounded once to FLOAT16 (also with "
         "allow_half_precision_computation=True, which permits FLOAT16 arithmetic but does not require it: "
         "these operators keep FLOAT32 throughout). FLOAT32 denormals are read as zero and flushed on output.")
_ORDER = ("The order of the additions is not DirectML's to promise (docs/semantics.md#accumulating-operators): a budget of N rounding "
          "units of the terms' magnitude, N the terms of a statistic (the InputTensor's element count where only "
          "its Sizes are known).")


# ------------------------------------------------------------------------- BATCH_NORMALIZATION
_BN = ("InputTensor", "MeanTensor", "VarianceTensor", "ScaleTensor", "BiasTensor")


def _bn_checks(tensors, attrs, level) -> list[Violation]:
    """Same DimensionCount; each statistics dimension 1 or the InputTensor's; before
    DML_FEATURE_LEVEL_4_0, Spatial FALSE requires MeanTensor's and VarianceTensor's Height and
    Width (the last two dimensions) not to be broadcast."""
    problems = same_dimension_count(tensors, _BN[1:])
    if problems:
        return problems
    x = tensors.get("InputTensor")
    spatial_fixed = ()
    if x is not None and attrs.get("Spatial") is False and level < FeatureLevel.parse("4.0"):
        spatial_fixed = tuple(range(max(len(x.shape) - 2, 0), len(x.shape)))
    problems += broadcastable(tensors, ("MeanTensor", "VarianceTensor"), fixed=spatial_fixed)
    problems += broadcastable(tensors, ("ScaleTensor", "BiasTensor"))
    if spatial_fixed and any(p.subject in ("MeanTensor", "VarianceTensor") for p in problems):
        problems = [p if p.subject not in ("MeanTensor", "VarianceTensor") else Violation(
            p.subject, p.argument, p.found, p.allowed + " with Spatial FALSE before DML_FEATURE_LEVEL_4_0",
            "pass spatial=True (deprecated from DML_FEATURE_LEVEL_4_0, where it has no effect), or a later "
            "feature level") for p in problems]
    return problems


_STATS_TABLE = ("1 to 8", FLOAT32_FLOAT16)

_OTHER_NORMALIZATIONS = ("BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING",
                         "BATCH_NORMALIZATION_TRAINING_GRAD", "MEAN_VARIANCE_NORMALIZATION",
                         "MEAN_VARIANCE_NORMALIZATION1", "MEAN_VARIANCE_NORMALIZATION2",
                         "LOCAL_RESPONSE_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION_GRAD", "LP_NORMALIZATION")
"""The normalizations beside BATCH_NORMALIZATION that its shared silent choices also cover."""

BATCH_NORMALIZATION = OpSpec(
    enum_name=PREFIX + "BATCH_NORMALIZATION",
    summary="Performs a batch normalization on the input.",
    formula="Output = FusedActivation(Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias)",
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("MeanTensor", "input"),
             TensorSpec("VarianceTensor", "input"), TensorSpec("ScaleTensor", "input"),
             TensorSpec("BiasTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(
        table("3.1", **{n: _STATS_TABLE for n in _BN}, OutputTensor=_STATS_TABLE),
        table("1.0", **{n: ("4", FLOAT32_FLOAT16) for n in _BN}, OutputTensor=("4", FLOAT32_FLOAT16)),
    ),
    params=(
        ParamSpec("Spatial", "BOOL", default=True,
                  doc=("TRUE: locations are spatial. FALSE requires the Width and Height dimensions of MeanTensor "
                       "and VarianceTensor not to be broadcast; deprecated in DML_FEATURE_LEVEL_4_0, where it "
                       "has no effect (default TRUE, ONNX's spatial=1). The values computed are the same.")),
        EPSILON,
        FUSED_ACTIVATION,
    ),
    constraints=(SameDataType(("BiasTensor", "InputTensor", "MeanTensor", "OutputTensor", "ScaleTensor",
                               "VarianceTensor")),
                 SameSizes(("InputTensor", "OutputTensor"))),
    ulp={F32: 4, F16: 1},
    ulp_half=1,
    ulp_growth=stat_terms(*_BN[1:]),
    grad_operator=PREFIX + "BATCH_NORMALIZATION_GRAD",
    gradient=("As DML_OPERATOR_BATCH_NORMALIZATION_GRAD, with dY through the fused activation's gradient first: "
              "dInput = dY * Scale / sqrt(Variance + Epsilon), dScale = sum(dY * (Input - Mean) / sqrt(Variance "
              "+ Epsilon)), dBias = sum(dY), each sum over the dimensions where that tensor has size 1. The GRAD "
              "page gives no Mean and Variance gradients: dmljax gives the formula's derivatives, dMean = "
              "-sum(dY * Scale / sqrt(Variance + Epsilon)) and dVariance = -sum(dY * Scale * (Input - Mean)) / "
              "(2 (Variance + Epsilon)^1.5)."),
    notes=("Computed as (Input - Mean) * (Scale / sqrt(Variance + Epsilon)) + Bias in FLOAT32 (rounding "
           "differences from the page's order are within the budget of 4 ULP of the terms' magnitude), then "
           "rounded once, then the fused activation with its own rules. " + _HALF),
    extra_checks=(_bn_checks,),
    silent=(
        SilentChoice(
            "Defaults of Epsilon, Spatial, CrossChannel, NormalizeVariance, UseMean, UseVariance, P, Alpha, "
            "Beta, Bias (the BATCH_NORMALIZATION pages give none)",
            "Epsilon 1e-5 everywhere; Spatial TRUE; CrossChannel FALSE for MEAN_VARIANCE_NORMALIZATION, TRUE "
            "for LRN; NormalizeVariance, UseMean, UseVariance TRUE; P 2; LRN Alpha 0.0001, Beta 0.75, Bias 1; "
            "LocalSize, Axes and Axis required",
            "The MVN, LRN and LP pages recommend 0.00001, 0.0001, 0.75 and 1; the rest are ONNX's defaults "
            "(BatchNormalization epsilon, MeanVarianceNormalization, LRN, LpNormalization p = 2).",
            also=_OTHER_NORMALIZATIONS),
        SilentChoice(
            "jax.grad of BATCH_NORMALIZATION by Mean and Variance (BATCH_NORMALIZATION_GRAD has no such "
            "outputs)",
            "the formula's derivatives: dMean = -sum(dY Scale / sqrt(V + eps)), dVariance = -sum(dY Scale (X - "
            "Mean)) / (2 (V + eps)^1.5)",
            "[Gradients](semantics.md#gradients): where the GRAD operator is silent, the derivative of the "
            "documented formula. dInput, dScale, dBias are BATCH_NORMALIZATION_GRAD's."),
        SilentChoice(
            "Statistics tensors' layout",
            "each dimension 1 (broadcast) or the InputTensor's; the statistics and gradient sums run over the "
            "dimensions of size 1; the same DimensionCount as the InputTensor",
            "The pages' \"Any dimension ... can be set to 1, and be automatically broadcast ... but otherwise "
            "must equal\". BATCH_NORMALIZATION's Mean, Variance, Scale and Bias may each have their own "
            "layout.",
            also=("BATCH_NORMALIZATION_GRAD", "BATCH_NORMALIZATION_TRAINING",
                  "BATCH_NORMALIZATION_TRAINING_GRAD")),
        SilentChoice(
            "BATCH_NORMALIZATION's Spatial",
            "FALSE before DML_FEATURE_LEVEL_4_0 refuses a MeanTensor or VarianceTensor broadcast in its last "
            "two dimensions (Height, Width); from 4.0 it is accepted and ignored; the values never depend on "
            "it",
            "The page: FALSE \"will require the Width and Height dimensions of MeanTensor and VarianceTensor "
            "to not be broadcast\"; \"deprecated in DML_FEATURE_LEVEL_4_0, and has no effect\"."),
        SilentChoice(
            "allow_half_precision_computation on the normalizations",
            "accepted; FLOAT16 still computed and accumulated in FLOAT32 and rounded once",
            "The flag permits FLOAT16 arithmetic, it does not require it; these operators are memory-bound, "
            "and FLOAT16 statistics of long reductions would be poor.",
            also=_OTHER_NORMALIZATIONS),
        SilentChoice(
            "Budgets of the accumulating normalizations",
            "N rounding units of the terms' magnitude (N the terms of a statistic or gradient sum: from the "
            "statistics tensors' Sizes where known, else the InputTensor's element count) plus 4 (LRN 8, LP 3) "
            "in FLOAT32; FLOAT16 1 + ceil(N / 8192) ULP",
            "[Accumulating operators](semantics.md#accumulating-operators), as GEMM and REDUCE.",
            also=_OTHER_NORMALIZATIONS),
    ),
)


def _bn_grads(xf, g, mf, vf, sf, eps, shapes):
    """dInput, dMean, dVariance, dScale, dBias of BATCH_NORMALIZATION in FLOAT32 (g: dY through
    the fused activation), each reduced to its tensor's ``shapes``."""
    inv = lax.rsqrt(vf + eps)
    xhat = (xf - mf) * inv
    gs = g * (sf * inv)
    dx = jnp.broadcast_to(gs, xf.shape)
    return (dx, -sum_to(dx, shapes[1]), sum_to(np.float32(-0.5) * gs * xhat * inv, shapes[2]),
            sum_to(g * xhat, shapes[3]), sum_to(g, shapes[4]))


@operator(BATCH_NORMALIZATION)
def batch_normalization(input, mean, variance, scale, bias, *, spatial, epsilon, fused_activation,
                        allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[1.0, 3.0]], [[2.0, 6.0]]]], np.float32)  # N=1, C=2, H=1, W=2
        >>> m = np.array([2.0, 4.0], np.float32).reshape(1, 2, 1, 1)
        >>> v = np.array([1.0, 4.0], np.float32).reshape(1, 2, 1, 1)
        >>> one, zero = np.ones((1, 2, 1, 1), np.float32), np.zeros((1, 2, 1, 1), np.float32)
        >>> dmljax.batch_normalization(x, m, v, one, zero, epsilon=0.0)[0, :, 0]
        Array([[-1.,  1.],
               [-1.,  1.]], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    eps = np.float32(epsilon)
    shapes = [a.shape for a in (input, mean, variance, scale, bias)]

    def run(x, m, v, s, b):
        mf, vf, sf, bf = load_together(m, v, s, b)
        return store(sf * ((load(x) - mf) * lax.rsqrt(vf + eps)) + bf, dt)

    def run_fwd(x, m, v, s, b):
        return run(x, m, v, s, b), (x, m, v, s)

    def run_bwd(res, dy):
        xf, mf, vf, sf = (load(a) for a in res)
        grads = _bn_grads(xf, load(dy), mf, vf, sf, eps, shapes)
        return tuple(store(d, dt) for d in grads)

    run = backward_rule(run, run_fwd, run_bwd)
    out = run(input, mean, variance, scale, bias)
    if dt is F32:
        mark_flushed(out)
    return apply_fused(fused_activation, out, allow_half_precision_computation)


# -------------------------------------------------------------------- BATCH_NORMALIZATION_GRAD
_GRAD_IN = ("InputTensor", "InputGradientTensor", "MeanTensor", "VarianceTensor", "ScaleTensor")
_GRAD_OUT = ("OutputGradientTensor", "OutputScaleGradientTensor", "OutputBiasGradientTensor")


def _grad_checks(tensors, attrs, level) -> list[Violation]:
    """MeanTensor (and with it VarianceTensor, ScaleTensor: the same Sizes) has the InputTensor's
    DimensionCount, each dimension 1 or the InputTensor's."""
    return same_dimension_count(tensors, ("MeanTensor",)) or broadcastable(tensors, ("MeanTensor",))


def _grad_record(name: str, level: str, summary: str, formula: str, gradient: str, notes: str, silent: tuple = ()) -> OpSpec:
    row = ("1 to 8", FLOAT32_FLOAT16)
    return OpSpec(
        enum_name=PREFIX + name,
        summary=summary,
        formula=formula,
        tensors=tuple(TensorSpec(n, "input") for n in _GRAD_IN) + tuple(TensorSpec(n, "output") for n in _GRAD_OUT),
        support=(table(level, **{n: row for n in _GRAD_IN + _GRAD_OUT}),),
        params=(ParamSpec("Epsilon", "FLOAT", default=1e-5,
                          doc="A small value added to the variance to avoid zero (default 1e-5, as the forward's)."),),
        constraints=(
            SameDataType(("InputGradientTensor", "InputTensor", "MeanTensor", "OutputBiasGradientTensor",
                          "OutputGradientTensor", "OutputScaleGradientTensor", "ScaleTensor", "VarianceTensor")),
            SameSizes(("MeanTensor", "OutputBiasGradientTensor", "OutputScaleGradientTensor", "ScaleTensor",
                       "VarianceTensor")),
            SameSizes(("InputGradientTensor", "InputTensor", "OutputGradientTensor")),
        ),
        ulp={F32: 4, F16: 1},
        ulp_half=1,
        ulp_growth=stat_terms("MeanTensor"),
        gradient=gradient,
        notes=notes,
        extra_checks=(_grad_checks,),
        silent=silent,
    )


_GRAD_SECOND = ("Second order: the derivative of these formulas (jax.grad through them), accumulated in FLOAT32 "
                "and rounded once to each input's type.")
_SUMS = ("OutputScaleGradient and OutputBiasGradient are sums over the dimensions where MeanTensor, ScaleTensor "
         "and VarianceTensor (one Sizes) have size 1, the InputTensor's larger.")

BATCH_NORMALIZATION_GRAD = _grad_record(
    "BATCH_NORMALIZATION_GRAD", "3.1",
    "Computes backpropagation gradients for batch normalization.",
    "OutputGradient = InputGradient * (Scale / sqrt(Variance + Epsilon))\n"
    "OutputScaleGradient = sum(InputGradient * (Input - Mean) / sqrt(Variance + Epsilon))\n"
    "OutputBiasGradient = sum(InputGradient)",
    _GRAD_SECOND,
    " ".join(("The gradients of BATCH_NORMALIZATION's Input, Scale and Bias (jax.grad of batch_normalization "
              "uses these formulas).", _SUMS, "Outputs returned as a tuple in the page's order: (output_gradient, "
              "output_scale_gradient, output_bias_gradient).", _HALF, _ORDER)),
)


@operator(BATCH_NORMALIZATION_GRAD)
def batch_normalization_grad(input, input_gradient, mean, variance, scale, *, epsilon,
                             allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1.0, 3.0], [2.0, 6.0]], np.float32)  # C=2 rows, statistics per row
        >>> dy = np.ones((2, 2), np.float32)
        >>> m, v = np.array([[2.0], [4.0]], np.float32), np.array([[1.0], [4.0]], np.float32)
        >>> dx, dscale, dbias = dmljax.batch_normalization_grad(x, dy, m, v, np.ones((2, 1), np.float32),
        ...                                                     epsilon=0.0)
        >>> dx, dscale[:, 0], dbias[:, 0]
        (Array([[1. , 1. ],
               [0.5, 0.5]], dtype=float32), Array([0., 0.], dtype=float32), Array([2., 2.], dtype=float32))
    """
    dt = DataType.from_dtype(input.dtype)
    eps = np.float32(epsilon)
    xf, g, mf, vf, sf = (load(a) for a in (input, input_gradient, mean, variance, scale))
    inv = lax.rsqrt(vf + eps)
    dx = g * (sf * inv)
    dscale = sum_to(g * ((xf - mf) * inv), mean.shape)
    dbias = sum_to(g, mean.shape)
    outs = tuple(store(d, dt) for d in (dx, dscale, dbias))
    if dt is F32:
        for o in outs:
            mark_flushed(o)
    return outs


# ---------------------------------------------------------------- BATCH_NORMALIZATION_TRAINING
def _training_checks(tensors, attrs, level) -> list[Violation]:
    """ScaleTensor (and BiasTensor, the same Sizes) has the InputTensor's DimensionCount, each
    dimension 1 or the InputTensor's."""
    return same_dimension_count(tensors, ("ScaleTensor",)) or broadcastable(tensors, ("ScaleTensor",))


_TRAINING_ROW = ("1 to 8", FLOAT32_FLOAT16)

BATCH_NORMALIZATION_TRAINING = OpSpec(
    enum_name=PREFIX + "BATCH_NORMALIZATION_TRAINING",
    summary=("Performs a batch normalization on the input; MeanTensor and VarianceTensor are computed on the "
             "input across the set of dimensions for which ScaleTensor and BiasTensor sizes equal one."),
    formula=("Output = FusedActivation(Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias + FusedAdd)\n"
             "OutputMean = Mean = mean(Input), OutputVariance = Variance = mean((Input - Mean)^2), over the "
             "dimensions where ScaleTensor has size 1"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("ScaleTensor", "input"), TensorSpec("BiasTensor", "input"),
             TensorSpec("FusedAddTensor", "input", optional=True), TensorSpec("OutputTensor", "output"),
             TensorSpec("OutputMeanTensor", "output"), TensorSpec("OutputVarianceTensor", "output")),
    support=(table("4.1", InputTensor=_TRAINING_ROW, ScaleTensor=_TRAINING_ROW, BiasTensor=_TRAINING_ROW,
                   FusedAddTensor=_TRAINING_ROW, OutputTensor=_TRAINING_ROW, OutputMeanTensor=_TRAINING_ROW,
                   OutputVarianceTensor=_TRAINING_ROW),),
    params=(EPSILON, FUSED_ACTIVATION),
    constraints=(
        SameDataType(("BiasTensor", "FusedAddTensor", "InputTensor", "OutputMeanTensor", "OutputTensor",
                      "OutputVarianceTensor", "ScaleTensor")),
        SameSizes(("BiasTensor", "OutputMeanTensor", "OutputVarianceTensor", "ScaleTensor")),
        SameSizes(("FusedAddTensor", "InputTensor", "OutputTensor")),
    ),
    ulp={F32: 4, F16: 1},
    ulp_half=1,
    ulp_growth=stat_terms("ScaleTensor"),
    grad_operator=PREFIX + "BATCH_NORMALIZATION_TRAINING_GRAD",
    gradient=("As DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD (with this call's Mean and Variance), with dY "
              "through the fused activation's gradient first; dFusedAdd = dY. Cotangents of OutputMean and "
              "OutputVariance (when a caller differentiates them) add their derivatives, dMean / N and "
              "dVariance * 2 (Input - Mean) / N, to dInput (N: the element count of a statistic)."),
    notes=("Scale and Bias (one Sizes) have the InputTensor's DimensionCount, each dimension 1 or the "
           "InputTensor's; OutputMean and OutputVariance have their Sizes. The variance is the biased one (the "
           "mean of the squared deviations, divided by N, not N - 1): the derivative of the formula is then "
           "exactly BATCH_NORMALIZATION_TRAINING_GRAD's. Epsilon is added to the Variance under the square root "
           "in the Output and does not enter OutputVariance. The outputs are returned as a tuple in the page's "
           "order: (output, output_mean, output_variance); the Output uses the FLOAT32 statistics, not the "
           "rounded ones. " + _HALF + " " + _ORDER),
    extra_checks=(_training_checks,),
    silent=(
        SilentChoice(
            "BATCH_NORMALIZATION_TRAINING's variance",
            "the biased one: mean((Input - Mean)^2), divided by N",
            "The page only says \"computed on the input\"; the TRAINING_GRAD page's formula is exactly the "
            "derivative with the biased variance. Epsilon is added under the square root in the Output and "
            "never enters OutputVariance."),
        SilentChoice(
            "jax.grad through BATCH_NORMALIZATION_TRAINING's OutputMean and OutputVariance",
            "their derivatives are added to dInput (dMean / N, dVariance 2 (X - Mean) / N); with no cotangent "
            "on them (the usual case) nothing is added and dInput is exactly "
            "BATCH_NORMALIZATION_TRAINING_GRAD's",
            "The GRAD page covers the Output only; a training loop may differentiate through the running "
            "statistics."),
    ),
)


@operator(BATCH_NORMALIZATION_TRAINING)
def batch_normalization_training(input, scale, bias, fused_add=None, *, epsilon, fused_activation,
                                 allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1.0, 3.0], [2.0, 6.0]], np.float32).T  # N=2, C=2: statistics per column
        >>> one, zero = np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32)
        >>> y, mean, var = dmljax.batch_normalization_training(x, one, zero, epsilon=0.0)
        >>> y, mean, var
        (Array([[-1., -1.],
               [ 1.,  1.]], dtype=float32), Array([[2., 4.]], dtype=float32), Array([[1., 4.]], dtype=float32))
    """
    dt = DataType.from_dtype(input.dtype)
    eps = np.float32(epsilon)
    axes = stat_axes(scale.shape, input.shape)
    n = math.prod(input.shape[a] for a in axes)
    has_add = fused_add is not None

    def forward(x, s, b, fa):
        # x is read by arithmetic alone and every output element is a sum: on the CPU the
        # processor's flushes of both stand for DirectML's (numerics.load's float_reads, store's
        # float_result; each a pass of its own there, 1.26-1.3x the jnp twin's time with them)
        xf = load(x, float_reads=True)
        mean, var = moments(xf, axes)
        sf, bf = load_together(s, b)
        out = (xf - mean) * (sf * lax.rsqrt(var + eps)) + bf
        if fa is not None:
            out = out + load(fa)
        return (store(out, dt, float_result=True), store(jnp.broadcast_to(mean, scale.shape), dt),
                store(jnp.broadcast_to(var, scale.shape), dt)), (mean, var)

    def run(x, s, b, *fa):
        return forward(x, s, b, fa[0] if fa else None)[0]

    def run_fwd(x, s, b, *fa):
        fa = fa[0] if fa else None
        outs, (mean, var) = forward(x, s, b, fa)
        return outs, (x, s, mean, var)

    def run_bwd(res, cts):
        x, s, mean, var = res
        dy, dmean, dvar = (_zero_or(c) for c in cts)
        xf, sf = load(x), load(s)
        if dy is None:
            dx, ds, db = jnp.zeros(x.shape, _F32), jnp.zeros(scale.shape, _F32), jnp.zeros(scale.shape, _F32)
        else:
            g = load(dy)
            dx = centered_input_grad(xf, g, mean, var, sf, eps, axes)
            ds = sum_to(g * ((xf - mean) * lax.rsqrt(var + eps)), scale.shape)
            db = sum_to(g, scale.shape)
        if dmean is not None:
            dx = dx + load(dmean) * np.float32(1 / n)
        if dvar is not None:
            dx = dx + (xf - mean) * (load(dvar) * np.float32(2 / n))
        grads = (store(dx, dt), store(ds, dt), store(db, dt))
        if has_add:
            grads += (store(jnp.zeros(x.shape, _F32) if dy is None else load(dy), dt),)
        return grads

    run = backward_rule(run, run_fwd, run_bwd)
    out, mean, var = run(input, scale, bias, *((fused_add,) if has_add else ()))
    if dt is F32:
        for o in (out, mean, var):
            mark_flushed(o)
    return apply_fused(fused_activation, out, allow_half_precision_computation), mean, var


BATCH_NORMALIZATION_TRAINING_GRAD = _grad_record(
    "BATCH_NORMALIZATION_TRAINING_GRAD", "4.1",
    "Computes backpropagation gradients for batch normalization training.",
    "OutputGradient = Scale * Coef0 * (InputGradientCentered - InputCentered * mean(Coef1) / (Variance + Epsilon))\n"
    "Coef0 = 1.0f / sqrt(Variance + Epsilon), Coef1 = InputGradient * (Input - Mean),\n"
    "InputGradientCentered = InputGradient - mean(InputGradient), InputCentered = Input - Mean\n"
    "OutputScaleGradient = sum(InputGradient * (Input - Mean) / sqrt(Variance + Epsilon))\n"
    "OutputBiasGradient = sum(InputGradient)",
    _GRAD_SECOND,
    " ".join((
        "The gradients of BATCH_NORMALIZATION_TRAINING's Input, Scale and Bias (jax.grad of "
        "batch_normalization_training uses these formulas). The page writes mean(Input) in Coef1 and "
        "InputCentered (and a typo, InputCentered = InputCentered - mean(InputCentered)): dmljax reads "
        "mean(Input) as the MeanTensor, which the forward pass returned as mean(Input), as the page's "
        "OutputScaleGradient does; the means (mean(InputGradient), mean(Coef1)) are over the same dimensions "
        "as the sums.", _SUMS, "Outputs returned as a tuple in the page's order: (output_gradient, "
        "output_scale_gradient, output_bias_gradient).", _HALF, _ORDER)),
    silent=(
        SilentChoice(
            "BATCH_NORMALIZATION_TRAINING_GRAD's `mean(Input)` (Coef1, InputCentered)",
            "the MeanTensor",
            "The operator takes the forward pass's Mean as an input and the page's own OutputScaleGradient "
            "uses it; jax.grad of the forward then equals the GRAD operator bit for bit."),
    ),
)


@operator(BATCH_NORMALIZATION_TRAINING_GRAD)
def batch_normalization_training_grad(input, input_gradient, mean, variance, scale, *, epsilon,
                                      allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1.0], [3.0]], np.float32)  # one channel of two elements: Mean 2, Variance 1
        >>> dy = np.array([[1.0], [0.0]], np.float32)
        >>> m, v, s = (np.array([[t]], np.float32) for t in (2.0, 1.0, 1.0))
        >>> dx, dscale, dbias = dmljax.batch_normalization_training_grad(x, dy, m, v, s, epsilon=0.0)
        >>> dx[:, 0], dscale, dbias
        (Array([0., 0.], dtype=float32), Array([[-1.]], dtype=float32), Array([[1.]], dtype=float32))
    """
    dt = DataType.from_dtype(input.dtype)
    eps = np.float32(epsilon)
    axes = stat_axes(mean.shape, input.shape)
    xf, g, mf, vf, sf = (load(a) for a in (input, input_gradient, mean, variance, scale))
    dx = centered_input_grad(xf, g, mf, vf, sf, eps, axes)
    dscale = sum_to(g * ((xf - mf) * lax.rsqrt(vf + eps)), mean.shape)
    dbias = sum_to(g, mean.shape)
    outs = tuple(store(d, dt) for d in (dx, dscale, dbias))
    if dt is F32:
        for o in outs:
            mark_flushed(o)
    return outs
