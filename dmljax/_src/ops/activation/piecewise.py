"""The piecewise activations (ELU, SCALED_ELU, RELU and RELU_GRAD, LEAKY_RELU, THRESHOLDED_RELU,
HARD_SIGMOID, LINEAR, SOFTSIGN, IDENTITY, SHRINK): each page's record, with its formula right below it.
``relu_grad_rule`` is RELU_GRAD's formula and the rule that jax.grad of RELU uses."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    DataType,
)
from dmljax._src.numerics import (
    F32_TINY, attr_as, expm1_nonpositive, float32_as, float32_product, mark_flushed, max_num, min_num,
)
from dmljax._src.op import operator
from dmljax._src.ops.factories import activation_op, elementwise
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

F32, F16 = DataType.FLOAT32, DataType.FLOAT16

def _non_positive(x):
    """min(x, 0) with XLA's minimum's values (-0 for -0, NaN for NaN) in one compare and select,
    where XLA's CPU code for its NaN-propagating minimum takes three instructions."""
    return jnp.where(x > 0, jnp.zeros_like(x), x)


# --------------------------------------------------------------------------------------------
ACTIVATION_SCALED_ELU = activation_op(
    "SCALED_ELU",
    summary=("Performs a scaled exponential linear unit (ELU) activation function on every "
             "element in InputTensor, placing the result into the corresponding element of "
             "OutputTensor."),
    formula=("f(x) = Gamma * x,                        if x > 0\n"
             "       Gamma * (Alpha * exp(x) - Alpha), otherwise"),
    params=(
        ParamSpec("Alpha", "FLOAT", default=1.6732, doc="A typical default for this value is 1.6732."),
        ParamSpec("Gamma", "FLOAT", default=1.0507, doc="A typical default for this value is 1.0507."),
    ),
    ulp={F32: 8, F16: 1},
    ulp_half=4,
    gradient=("dX = Gamma * dY for x > 0, Gamma * Alpha * exp(x) * dY otherwise; exp only ever "
              "sees min(x, 0), so no NaN or inf appears for large x in any type."),
    notes=("Gamma * (Alpha * exp(x) - Alpha) is evaluated as (Gamma * Alpha) * expm1(x), its exact "
           "equal in real numbers, without the cancellation of exp(x) - 1 near 0 (numerics."
           "expm1_nonpositive: exp below -0.35, a cubic above; within 1 ULP in FLOAT32 above -0.35 and 2 below)."),
    silent=(
        SilentChoice(
            "SCALED_ELU",
            "`(Gamma·Alpha)·expm1(x)` on the non-positive branch",
            "The same real number as the formula, without the cancellation of `exp(x) − 1` near 0; folding the "
            "constants once keeps eager and jit bit-identical."),
    ),
)


@operator(ACTIVATION_SCALED_ELU)
def activation_scaled_elu(input, *, alpha, gamma, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_scaled_elu(np.array([-1.0, 0.0, 2.0], np.float32))
        Array([-1.1112876,  0.       ,  2.1014   ], dtype=float32)
    """
    # Gamma * (Alpha * exp(x) - Alpha) = (Gamma * Alpha) * expm1(x): one product of constants,
    # taken here, so that XLA's reassociation of constant products can't change the bits
    # between eager and jit. The slope's exp sees only min(x, 0), so that no inf meets a zero
    # cotangent; the value's unselected branch may overflow harmlessly.
    ca = float32_product(gamma, alpha)

    def f(x):  # (expm1_nonpositive of x > 0 is never selected: no min(x, 0) needed)
        return jnp.where(x > 0, float32_as(gamma, x.dtype) * x,
                         float32_as(ca, x.dtype) * expm1_nonpositive(x, input.dtype))

    def slope(x):
        return jnp.where(x > 0, float32_as(gamma, x.dtype),
                         float32_as(ca, x.dtype) * jnp.exp(_non_positive(x)))

    # |Gamma| >= 1 and |Gamma * Alpha| >= 1 keep every flushed input's result flushed
    # (_scales_keep_normals); with Gamma other than 1 every result is a product (or expm1's
    # series), so that on the CPU the processor's flushes of inputs and output stand for both
    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       keeps_normals=_scales_keep_normals(gamma, ca), float_reads=True,
                       float_result=float(np.float32(gamma)) != 1.0)


# --------------------------------------------------------------------------------------------
ACTIVATION_ELU = activation_op(
    "ELU",
    summary=("Performs an exponential linear unit (ELU) activation function on every element in "
             "InputTensor, placing the result into the corresponding element of OutputTensor."),
    formula=("f(x) = x,                    if x >= 0\n"
             "       Alpha * (exp(x) - 1), otherwise"),
    params=(ParamSpec("Alpha", "FLOAT", default=1.0,
                      doc="The alpha coefficient. A typical default for this value is 1.0."),),
    ulp={F32: 8, F16: 1},
    ulp_half=4,
    gradient=("dX = dY for x >= 0 (the page's branch, so 1 at x = 0 and -0 whatever Alpha is), "
              "Alpha * exp(x) * dY otherwise; exp only ever sees min(x, 0), so no NaN or inf "
              "appears for large x in any type."),
    notes=("Alpha * (exp(x) - 1) is evaluated as Alpha * expm1(x), its exact equal without "
           "cancellation (numerics.expm1_nonpositive). x >= 0 keeps x itself, so ELU(-0) = -0. Fusable (dmljax.FusedActivation)."),
    silent=(
        SilentChoice(
            "ELU gradient at x = 0",
            "1 (the page's formula selects x for x >= 0); ELU(-0) = -0",
            "The derivative on the branch the forward pass selects (PyTorch and `jax.nn.elu` give Alpha)."),
    ),
)


@operator(ACTIVATION_ELU)
def activation_elu(input, *, alpha, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_elu(np.array([-1.0, -0.0, 2.0], np.float32))
        Array([-0.63212055, -0.        ,  2.        ], dtype=float32)
        >>> dmljax.activation_elu(np.array([-1.0], np.float32), alpha=0.5)
        Array([-0.31606027], dtype=float32)
    """
    def f(x):  # (expm1_nonpositive of x > 0 is never selected: no min(x, 0) needed)
        return jnp.where(x >= 0, x, float32_as(alpha, x.dtype) * expm1_nonpositive(x, input.dtype))

    def slope(x):
        return jnp.where(x >= 0, jnp.ones_like(x),
                         float32_as(alpha, x.dtype) * jnp.exp(_non_positive(x)))

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       keeps_normals=_scales_keep_normals(alpha), float_reads=True)


def _scales_keep_normals(*scales: float) -> bool:
    """Whether c * x and c * expm1(min(x, 0)) hold no FLOAT32 denormal for every flushed x, for
    each constant c of ``scales``: true when every |c| >= 1 (NaN is not). For |x| >= the smallest
    normal, |expm1(x)| is too: below 2^-23 the series' x^2 / 2 term is under half an ULP of x, so
    expm1_nonpositive returns x itself, and above it |expm1(x)| > 2^-24; a product with |c| >= 1
    rounds to at least its other factor's magnitude. 0 stays 0."""
    return all(abs(float(np.float32(c))) >= 1.0 for c in scales)


# --------------------------------------------------------------------------------------------
ACTIVATION_RELU = activation_op(
    "RELU",
    summary=("Performs a rectified linear unit (ReLU) activation function on every element in "
             "InputTensor, placing the result into the corresponding element of OutputTensor."),
    formula="f(x) = max(0, x)",
    support=(
        ("5.1", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16),
        ("2.0", "4 to 5", FLOAT32_FLOAT16),
        ("1.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    grad_operator="DML_OPERATOR_ACTIVATION_RELU_GRAD",
    gradient=("As DML_OPERATOR_ACTIVATION_RELU_GRAD: dX = X > 0 ? dY : 0 (relu_grad_rule,"
              " the operator's own formula): nothing at 0, -0, NaN or a FLOAT32 "
              "denormal, +0 there even for a NaN dY; where X > 0, dY's very bits. Integer inputs: "
              "no gradient."),
    notes=("max is IEEE maxNum (docs/semantics.md#minimum-and-maximum), so RELU(NaN) = 0. FLOAT32 denormal "
           "inputs are flushed (math, as THRESHOLD). Integers are exact."),
    silent=(
        SilentChoice(
            "RELU, HARD_SIGMOID, THRESHOLDED_RELU, SHRINK with a NaN input",
            "0, 1, 0, 0: the pages' max/min under maxNum (as THRESHOLD) and their strict comparisons, false "
            "for NaN, selecting \"otherwise\"",
            "the [min/max rule](semantics.md#minimum-and-maximum); LEAKY_RELU, LINEAR and SOFTSIGN pass NaN "
            "through.",
            also=("ACTIVATION_HARD_SIGMOID", "ACTIVATION_THRESHOLDED_RELU", "ACTIVATION_SHRINK")),
        SilentChoice(
            "RELU(-0); LEAKY_RELU(-0)",
            "+0 (maxNum of equal zeros, as THRESHOLD); -0 (the page's `x >= 0` branch keeps x)",
            "One stated answer each.",
            also=("ACTIVATION_LEAKY_RELU",)),
    ),
)


@jax.custom_jvp
def _relu_float(x):
    # maxNum(0, x) as x > 0 ? x : +0 on x as math reads it (relu_passes): NaN, -0 and FLOAT32
    # denormals give +0; what passes is a number above zero, normal, so nothing needs a flush.
    return jnp.where(relu_passes(x), x, jnp.zeros_like(x))


@_relu_float.defjvp
def _relu_float_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _relu_float(x), relu_grad_rule(x, t)  # RELU_GRAD's formula, the tangent's bits kept


@operator(ACTIVATION_RELU)
def activation_relu(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_relu(np.array([-2.0, -0.0, 3.5, np.nan], np.float32))
        Array([0. , 0. , 3.5, 0. ], dtype=float32)
        >>> dmljax.activation_relu(np.array([-128, 0, 127], np.int8))
        Array([  0,   0, 127], dtype=int8)
    """
    dt = DataType.from_dtype(input.dtype)
    if dt.is_integer:
        return jnp.where(input > 0, input, jnp.zeros_like(input))
    out = _relu_float(input)  # a comparison and a selection: the same bits in any precision
    if dt is DataType.FLOAT32:
        mark_flushed(out)  # no denormal can pass x >= the smallest normal
    return out


# --------------------------------------------------------------------------------------------
# RELU_GRAD: DirectML's backward operator of RELU, public, computing relu_grad_rule, the rule that
# jax.grad of RELU uses (one declaration serves both).

def relu_passes(x):
    """``X > 0`` on the raw InputTensor as math reads it: a FLOAT32 denormal reads as a signed
    zero, so for FLOAT32 this is ``x >= `` the smallest normal (one compare, no flush); NaN
    compares false. Exact for every type (a FLOAT16 compares the same in FLOAT32)."""
    if x.dtype == np.float32:
        return x >= F32_TINY
    return x > jnp.zeros((), x.dtype)


def relu_grad_rule(x, dy):
    """RELU_GRAD's formula ``X > 0 ? dY : 0``, the one declaration of the rule: ``x`` is the raw
    InputTensor (``relu_passes`` reads it), ``dy`` passes with its bits (NaN, -0, FLOAT32
    denormals included) where x > 0, and +0 replaces it elsewhere (at 0, -0, NaN, FLOAT32
    denormals, negative x), even where dY is NaN."""
    return jnp.where(relu_passes(x), dy, jnp.zeros_like(dy))


def _relu_grad_table(level, dims, types):
    return table(level, InputTensor=(dims, types), InputGradientTensor=(dims, types),
                 OutputGradientTensor=(dims, types))


ACTIVATION_RELU_GRAD = OpSpec(
    enum_name="DML_OPERATOR_ACTIVATION_RELU_GRAD",
    summary=("Computes backpropagation gradients for a rectified linear unit (ReLU). This "
             "operator performs the following element-wise computation."),
    formula=("X = InputTensor\n"
             "dY = InputGradientTensor\n"
             "\n"
             "OutputGradientTensor = (X > 0 ? dY : 0)"),
    tensors=(
        TensorSpec("InputTensor", "input"),
        TensorSpec("InputGradientTensor", "input"),
        TensorSpec("OutputGradientTensor", "output"),
    ),
    support=(
        _relu_grad_table("5.1", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8),
        _relu_grad_table("4.0", "1 to 8", FLOAT32_FLOAT16),
        _relu_grad_table("3.0", "1 to 8", FLOAT32_FLOAT16),
    ),
    # "InputGradientTensor, InputTensor, and OutputGradientTensor must have the same DataType,
    # DimensionCount, and Sizes."
    constraints=(
        SameDataType(("InputTensor", "InputGradientTensor", "OutputGradientTensor")),
        SameSizes(("InputTensor", "InputGradientTensor", "OutputGradientTensor")),
    ),
    math=False,
    gradient=("Second order: d/dInputGradientTensor is the same mask (1 where X > 0, else 0); "
              "d/dInputTensor is 0 (the output is piecewise constant in X). Integer inputs: no "
              "gradient."),
    notes=("The rule of jax.grad of ACTIVATION_RELU (with dY as InputGradientTensor, bit for "
           "bit). X is compared as RELU reads it: a FLOAT32 denormal is a zero, so nothing passes "
           "there; NaN compares false, so nothing passes for NaN either; X > 0 is strict, so "
           "nothing passes at +-0. dY passes with its bits (NaN, -0, FLOAT32 denormals: "
           "selection, not math); elsewhere +0, even for a NaN dY. No "
           "allow_half_precision_computation: a comparison and a selection give the same bits in "
           "any precision. Integers (DML_FEATURE_LEVEL_5_1) exact."),
    silent=(
        SilentChoice(
            "RELU_GRAD with a FLOAT32 denormal, ±0 or NaN X",
            "+0 (nothing passes), even for a NaN dY; where X > 0, dY's very bits",
            "X is read as RELU reads it (flushed); X > 0 is strict. It is the rule jax.grad of RELU uses, bit "
            "for bit."),
    ),
)


@operator(ACTIVATION_RELU_GRAD)
def activation_relu_grad(input, input_gradient):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-1.0, 0.0, 1e-40, 2.0, np.nan], np.float32)
        >>> dmljax.activation_relu_grad(x, np.full(5, 3.0, np.float32))
        Array([0., 0., 0., 3., 0.], dtype=float32)
        >>> dmljax.activation_relu_grad(np.array([-5, 0, 7], np.int8), np.array([9, 9, -9], np.int8))
        Array([ 0,  0, -9], dtype=int8)
    """
    return relu_grad_rule(input, input_gradient)


# --------------------------------------------------------------------------------------------
ACTIVATION_LEAKY_RELU = activation_op(
    "LEAKY_RELU",
    summary=("Performs a leaky rectified linear unit (ReLU) activation function on every element "
             "in InputTensor, placing the result into the corresponding element of OutputTensor."),
    formula=("f(x) = x,         if x >= 0\n"
             "       Alpha * x, otherwise"),
    params=(ParamSpec("Alpha", "FLOAT", default=0.01,
                      doc="The alpha coefficient. A typical default for this value is 0.01."),),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient="dX = dY for x >= 0 (also at 0 and -0), Alpha * dY otherwise (NaN included).",
    notes="x >= 0 keeps x itself, so LEAKY_RELU(-0) = -0; NaN gives Alpha * NaN = NaN.",
)


@operator(ACTIVATION_LEAKY_RELU)
def activation_leaky_relu(input, *, alpha, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_leaky_relu(np.array([-2.0, -0.0, 3.5], np.float32))
        Array([-0.02, -0.  ,  3.5 ], dtype=float32)
    """
    def f(x):
        return jnp.where(x >= 0, x, float32_as(alpha, x.dtype) * x)

    def slope(x):
        return jnp.where(x >= 0, jnp.ones_like(x), jnp.full_like(x, float32_as(alpha, x.dtype)))

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope)


# --------------------------------------------------------------------------------------------
ACTIVATION_LINEAR = activation_op(
    "LINEAR",
    summary=("Performs the linear activation function on every element in InputTensor, placing "
             "the result into the corresponding element of OutputTensor."),
    formula="f(x) = Alpha * x + Beta.",
    params=(ParamSpec("Alpha", "FLOAT", doc="The alpha coefficient."),
            ParamSpec("Beta", "FLOAT", doc="The beta coefficient.")),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient="dX = Alpha * dY.",
    notes=("Alpha * x + Beta is a multiply-add that a backend may fuse into one FMA or not "
           "(docs/semantics.md#fused-multiply-add): either rounding is within budget."),
    silent=(
        SilentChoice(
            "LINEAR's Alpha and Beta",
            "required",
            "The page documents no default."),
    ),
)


@operator(ACTIVATION_LINEAR)
def activation_linear(input, *, alpha, beta, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_linear(np.array([-2.0, 0.0, 3.5], np.float32), alpha=2.0, beta=1.0)
        Array([-3.,  1.,  8.], dtype=float32)
    """
    def f(x):
        return float32_as(alpha, x.dtype) * x + float32_as(beta, x.dtype)

    def slope(x):
        return jnp.full_like(x, float32_as(alpha, x.dtype))

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope)


# --------------------------------------------------------------------------------------------
ACTIVATION_IDENTITY = activation_op(
    "IDENTITY",
    summary=("Performs the identity activation, effectively copying every element of "
             "InputTensor to the corresponding element of OutputTensor."),
    formula="f(x) = x",
    math=False,
    gradient="dX = dY.",
    notes=("A copy: every bit is kept (NaN payloads, -0, FLOAT32 denormals), as "
           "ELEMENT_WISE_IDENTITY without a ScaleBias."),
)


@operator(ACTIVATION_IDENTITY)
def activation_identity(input):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_identity(np.array([1.5, -0.0, np.nan], np.float32))
        Array([ 1.5, -0. ,  nan], dtype=float32)
    """
    return input


# --------------------------------------------------------------------------------------------
ACTIVATION_THRESHOLDED_RELU = activation_op(
    "THRESHOLDED_RELU",
    summary=("Performs a thresholded rectified linear unit (ReLU) activation function on every "
             "element in InputTensor, placing the result into the corresponding element of "
             "OutputTensor."),
    formula=("f(x) = x, if x > Alpha\n"
             "       0, otherwise"),
    params=(ParamSpec("Alpha", "FLOAT", default=1.0,
                      doc="The threshold for the function. A typical default for this value is 1.0."),),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dX = x > Alpha ? dY : 0: nothing at x = Alpha or for NaN.",
    notes=("The page's strict x > Alpha: x = Alpha gives +0, and so does NaN (the comparison is "
           "false); a NaN Alpha gives 0 everywhere. FLOAT32 denormal inputs are flushed (math)."),
)


@operator(ACTIVATION_THRESHOLDED_RELU)
def activation_thresholded_relu(input, *, alpha, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_thresholded_relu(np.array([0.5, 1.0, 1.5, np.nan], np.float32))
        Array([0. , 0. , 1.5, 0. ], dtype=float32)
    """
    def passes(x):
        return x > float32_as(alpha, x.dtype)

    def f(x):
        return jnp.where(passes(x), x, jnp.zeros_like(x))

    def slope(x):
        return jnp.where(passes(x), jnp.ones_like(x), jnp.zeros_like(x))

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True)


# --------------------------------------------------------------------------------------------
ACTIVATION_HARD_SIGMOID = activation_op(
    "HARD_SIGMOID",
    summary=("Performs a hard sigmoid function on every element in InputTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(x) = max(0, min(Alpha * x + Beta, 1))",
    params=(
        ParamSpec("Alpha", "FLOAT", default=0.2,
                  doc="The alpha coefficient. A typical default for this value is 0.2."),
        ParamSpec("Beta", "FLOAT", default=0.5,
                  doc="The beta coefficient. A typical default for this value is 0.5."),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient=("dX = Alpha * dY where 0 < Alpha * x + Beta < 1 (strictly), 0 at and beyond the "
              "bounds and for NaN."),
    notes=("min and max are IEEE minNum/maxNum (docs/semantics.md#minimum-and-maximum): a NaN Alpha * x + Beta gives "
           "max(0, min(NaN, 1)) = 1. max(0, -0) is +0. Alpha * x + Beta is a multiply-add that a "
           "backend may fuse or not (either rounding is within budget)."),
    silent=(
        SilentChoice(
            "HARD_SIGMOID's gradient",
            "Alpha strictly inside 0 < g < 1, 0 at both bounds",
            "Strict comparisons at ties."),
    ),
)


@operator(ACTIVATION_HARD_SIGMOID)
def activation_hard_sigmoid(input, *, alpha, beta, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_hard_sigmoid(np.array([-5.0, 0.0, 1.0, 9.0], np.float32))
        Array([0. , 0.5, 0.7, 1. ], dtype=float32)
    """
    def g(x):
        return float32_as(alpha, x.dtype) * x + float32_as(beta, x.dtype)

    def selects(y):
        # the same rule by two compares and selects, which XLA's CPU backend keeps as written
        upper = jnp.where(y < 1, y, jnp.ones_like(y))  # minNum(y, 1): NaN gives 1
        return jnp.where(upper > 0, upper, jnp.zeros_like(upper))  # maxNum(0, .): -0 gives +0

    def f(x):
        # minNum(y, 1) (NaN gives 1), then maxNum(0, .) (-0 gives +0), with explicit NaN tests:
        # XLA's GPU backend turns where(y < 1, y, 1) into its NaN-propagating min (docs/semantics.md#minimum-and-maximum)
        # (on the CPU the NaN tests on the bits made HARD_SIGMOID 2x jnp.clip's time)
        return lax.platform_dependent(g(x), cpu=selects, default=lambda y: max_num(min_num(y, 1.0), 0.0))

    def slope(x):
        y = g(x)
        inside = (y > 0) & (y < 1)
        return jnp.where(inside, jnp.full_like(y, float32_as(alpha, x.dtype)), jnp.zeros_like(y))

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True)


# --------------------------------------------------------------------------------------------
ACTIVATION_SHRINK = activation_op(
    "SHRINK",
    summary=("Performs the shrink activation function on every element in InputTensor, placing "
             "the result into the corresponding element of OutputTensor."),
    formula=("f(x) = x - Bias, if x > Threshold\n"
             "       x + Bias, if x < -Threshold\n"
             "       0,        otherwise"),
    params=(
        ParamSpec("Bias", "FLOAT", default=0.0,
                  doc="The value of the bias. A typical default for this value is 0.0.",
                  converted_to="InputTensor"),
        ParamSpec("Threshold", "FLOAT", default=0.5,
                  doc="The value of the threshold. A typical default for this value is 0.5.",
                  converted_to="InputTensor"),
    ),
    support=(
        ("5.1", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16),
        ("2.0", "4 to 5", FLOAT32_FLOAT16),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient=("dX = dY where x > Threshold or x < -Threshold (strictly), 0 at the thresholds, "
              "between them and for NaN; integer inputs: no gradient."),
    notes=("The page's strict comparisons: x = +-Threshold gives +0, and so does NaN (both "
           "comparisons false). A negative Threshold makes the first two cases overlap: x > "
           "Threshold is tested first, as the page lists it. On integer tensors Bias and "
           "Threshold are truncated toward zero and saturated to the type (docs/semantics.md#attributes), "
           "-Threshold is compared exactly (as a mathematical integer, so no unsigned x is ever "
           "below a positive Threshold's negation), and x - Bias, x + Bias wrap around."),
    silent=(
        SilentChoice(
            "SHRINK on integer tensors",
            "Bias and Threshold truncated toward zero and saturated; `x ± Bias` wraps",
            "[Attributes](semantics.md#attributes); as ADD."),
    ),
)


def _shrink_int(x, bias, threshold, dt):
    t = attr_as(threshold, dt)
    b = attr_as(bias, dt)
    zero = jnp.zeros_like(x)
    above = x > t
    neg_t = -int(t)  # exact, as a Python int
    info = np.iinfo(dt.dtype)
    if neg_t > int(info.max):
        below = jnp.ones(x.shape, bool)
    elif neg_t < int(info.min):
        below = jnp.zeros(x.shape, bool)
    else:
        below = x < np.asarray(neg_t, dt.dtype)
    return jnp.where(above, x - b, jnp.where(below, x + b, zero))


@operator(ACTIVATION_SHRINK)
def activation_shrink(input, *, bias, threshold, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.0, -0.5, 0.25, 0.5, 3.0], np.float32)
        >>> dmljax.activation_shrink(x, bias=0.5, threshold=0.5)
        Array([-1.5,  0. ,  0. ,  0. ,  2.5], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    if dt.is_integer:
        return _shrink_int(input, bias, threshold, dt)

    def cases(x):
        t = float32_as(threshold, x.dtype)
        return x > t, x < -t

    def f(x):
        above, below = cases(x)
        b = float32_as(bias, x.dtype)
        return jnp.where(above, x - b, jnp.where(below, x + b, jnp.zeros_like(x)))

    def slope(x):
        above, below = cases(x)
        return jnp.where(above | below, jnp.ones_like(x), jnp.zeros_like(x))

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True)


# --------------------------------------------------------------------------------------------
ACTIVATION_SOFTSIGN = activation_op(
    "SOFTSIGN",
    summary=("Performs the softsign function on every element in InputTensor, placing the result "
             "into the corresponding element of OutputTensor."),
    formula="f(x) = x / (1 + abs(x))",
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    gradient=("dX = dY / (1 + abs(x))^2, 0 at +-inf (the limit), never NaN for a number."),
    notes=("The page's formula is inf / inf = NaN at +-inf; dmljax gives the limit, +-1 (only a "
           "NaN input gives NaN). Elsewhere the formula as written (two roundings in FLOAT32)."),
    silent=(
        SilentChoice(
            "SOFTSIGN(±inf)",
            "±1, gradient 0",
            "The limit; the formula's inf/inf would be NaN."),
    ),
)


@operator(ACTIVATION_SOFTSIGN)
def activation_softsign(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_softsign(np.array([-3.0, -0.0, 1.0, np.inf], np.float32))
        Array([-0.75, -0.  ,  0.5 ,  1.  ], dtype=float32)
    """
    def f(x):
        infinite = jnp.isinf(x)
        finite_x = jnp.where(infinite, jnp.zeros_like(x), x)  # inf / inf never computed
        return jnp.where(infinite, jnp.sign(x), finite_x / (1 + jnp.abs(finite_x)))

    def slope(x):
        d = 1 + jnp.abs(x)
        return 1 / (d * d)  # 0 at +-inf and wherever d * d overflows

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True)
