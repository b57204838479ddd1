"""LOCAL_RESPONSE_NORMALIZATION and its GRAD, of the normalization family: each page's record with its formula below it.

Sums are accumulated in FLOAT32 (FLOAT16 inputs widened first) and rounded once."""

from __future__ import annotations


import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.errors import Violation
from dmljax._src.numerics import load, store
from dmljax._src.op import operator
from dmljax._src.ops.normalization.batch import stat_growth
from dmljax._src.ops.normalization.mean_variance import HALF_NOTE, flushed_output
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


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


_LRN_NOTES = (HALF_NOTE + " A budget of the region's element count in rounding units, plus the power's.")
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
    silent=(
        SilentChoice(
            "LOCAL_RESPONSE_NORMALIZATION's local region",
            "CrossChannel TRUE: channels max(0, c - floor((LocalSize - 1) / 2)) to min(C - 1, c + "
            "ceil((LocalSize - 1) / 2)); FALSE: that span in Height and in Width (LocalSize x LocalSize of one "
            "channel); clipped at the edges",
            "ONNX's LRN, which ONNX Runtime's DirectML provider maps onto CrossChannel TRUE; the page: \"The "
            "number of elements to sum over per dimension: Width, Height, and optionally Channel\".",
            also=("LOCAL_RESPONSE_NORMALIZATION_GRAD",)),
        SilentChoice(
            "LRN's divisor with CrossChannel FALSE",
            "Alpha / LocalSize, as the page's formula writes it",
            "Caffe's WITHIN_CHANNEL LRN divides by LocalSize^2; the page's formula has LocalSize for both "
            "modes.",
            also=("LOCAL_RESPONSE_NORMALIZATION_GRAD",)),
        SilentChoice(
            "LRN squares beyond FLOAT32's range (|Input| above ~1.8e19)",
            "the squares and their sum are FLOAT32 values: inf, so that element gives 0 (NaN for an infinite "
            "Input; LRN_GRAD likewise) where float64 would give a tiny number",
            "The formula computed as written in FLOAT32, as REDUCE's SUM_SQUARE and LP_POOLING do; the "
            "reference models it (tests/reference/normalization/local_response.py).",
            also=("LOCAL_RESPONSE_NORMALIZATION_GRAD",)),
    ),
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

    def run(x):
        return store(load(x) * jnp.power(_lrn_terms(x, cross_channel, local_size, alpha, bias), np.float32(-beta)), dt)

    def run_fwd(x):
        return run(x), x

    def run_bwd(x, dy):
        return (store(lrn_input_grad(x, load(dy), *args), dt),)

    run = backward_rule(run, run_fwd, run_bwd)
    return flushed_output(run(input), dt)


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
    silent=(
        SilentChoice(
            "LOCAL_RESPONSE_NORMALIZATION_GRAD's formula (the page gives none)",
            "the LRN formula's derivative: dX = dY D^-Beta - (2 Alpha Beta / LocalSize) X sum over the regions "
            "holding X of dY X D^(-Beta-1)",
            "[Gradients](semantics.md#gradients); jax.grad of LRN uses it."),
    ),
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
    return flushed_output(store(lrn_input_grad(input, load(input_gradient), cross_channel, local_size, alpha, beta, bias),
                       dt), dt)
