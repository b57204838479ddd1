"""The gated activations, GELU, SWISH, HARD_SWISH and PARAMETERIZED_RELU: each page's record, with
its formula right below it."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.dtypes import FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8, DataType
from dmljax._src.numerics import float32_as
from dmljax._src.op import operator
from dmljax._src.ops.factories import activation_op, elementwise
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


# --------------------------------------------------------------------------------------------
def _prelu_table(level, dims, types):
    return table(level, InputTensor=(dims, types), SlopeTensor=(dims, types), OutputTensor=(dims, types))


ACTIVATION_PARAMETERIZED_RELU = OpSpec(
    enum_name="DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU",
    summary=("Performs a parameterized rectified linear unit (ReLU) activation function on every "
             "element in InputTensor, placing the result into the corresponding element of "
             "OutputTensor."),
    formula=("f(x, slope) = x,         if x >= 0\n"
             "              slope * x, otherwise"),
    tensors=(
        TensorSpec("InputTensor", "input"),
        TensorSpec("SlopeTensor", "input"),
        TensorSpec("OutputTensor", "output"),
    ),
    support=(
        _prelu_table("5.1", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8),
        _prelu_table("3.0", "1 to 8", FLOAT32_FLOAT16),
        _prelu_table("2.0", "4 to 5", FLOAT32_FLOAT16),
        _prelu_table("1.0", "4", FLOAT32_FLOAT16),
    ),
    # "InputTensor, OutputTensor, and SlopeTensor must have the same DataType, DimensionCount,
    # and Sizes."
    constraints=(
        SameDataType(("InputTensor", "OutputTensor", "SlopeTensor")),
        SameSizes(("InputTensor", "OutputTensor", "SlopeTensor")),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=("The derivative on the branch the forward pass selects: dX = dY where x >= 0 (also "
              "at 0 and -0), slope * dY otherwise (NaN x included); dSlope = x * dY where x < 0 "
              "(and for NaN x, whose branch is slope * x), 0 * dY where x >= 0 (IEEE's product: "
              "a NaN dY gives NaN). Integer inputs: no gradient."),
    in_place=True,
    notes=("x >= 0 keeps x itself, so f(-0, slope) = -0; a NaN x takes the page's otherwise "
           "branch, slope * NaN = NaN. One product, rounded once: exact to the rounding in FLOAT32 "
           "and in FLOAT16 (whose product is exact in FLOAT32). FLOAT32 denormals of either input "
           "are flushed (math). The page's tensors are the same Sizes: a slope shared along an "
           "axis (PReLU's per-channel slope) is a SlopeTensor with zero strides in its "
           "DML_BUFFER_TENSOR_DESC (compile_operator), or a broadcast array (jnp.broadcast_to). "
           "Integers (DML_FEATURE_LEVEL_5_1) exact: slope * x wraps around (two's complement)."),
    silent=(
        SilentChoice(
            "PARAMETERIZED_RELU's slope broadcast",
            "a SlopeTensor with zero strides (compile_operator) or a broadcast array",
            "The page requires the same Sizes; strides are DirectML's broadcast."),
    ),
)


def _prelu(x, s):
    return jnp.where(x >= 0, x, s * x)


def _prelu_slopes(x, s):
    passes = x >= 0
    return jnp.where(passes, jnp.ones_like(x), s), jnp.where(passes, jnp.zeros_like(x), x)


@operator(ACTIVATION_PARAMETERIZED_RELU)
def activation_parameterized_relu(input, slope, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[-2.0, 3.0], [-2.0, -0.0]], np.float32)
        >>> dmljax.activation_parameterized_relu(x, np.array([[0.5, 0.5], [0.25, 0.25]], np.float32))
        Array([[-1. ,  3. ],
               [-0.5, -0. ]], dtype=float32)
        >>> dmljax.activation_parameterized_relu(np.array([-100, 5], np.int8), np.array([3, 3], np.int8))
        Array([-44,   5], dtype=int8)
    """
    return elementwise(_prelu, input, slope, half=allow_half_precision_computation,
                       slopes=_prelu_slopes, integer=_prelu)


# --------------------------------------------------------------------------------------------
SUPPORT_6_2: tuple = (("6.2", "1 to 8", FLOAT32_FLOAT16),)
"""The one table of the SWISH and HARD_SWISH pages (introduced in DML_FEATURE_LEVEL_6_2)."""


def _scaled_offset(x, scale: float, root: float):
    """``scale * (x - root)`` for static float64 constants, with the relative precision of the
    result where it crosses zero: root = hi + lo in two ``x.dtype`` values, x - hi is exact near
    the root, and scale * lo is taken in float64. (Written as a product minus a constant: XLA
    folds (x - hi) - lo into x - (hi + lo), which drops lo.)"""
    hi = np.asarray(root, np.float64).astype(x.dtype)
    lo = np.asarray(scale * (root - float(hi)), np.float64).astype(x.dtype)
    return np.asarray(scale, np.float64).astype(x.dtype) * (x - hi) - lo


ACTIVATION_HARD_SWISH = activation_op(
    "HARD_SWISH",
    summary=("Performs a hard swish activation function on every element in InputTensor, placing "
             "the result into the corresponding element of OutputTensor."),
    formula="f(x) = x * HardSigmoid(x, Alpha, Beta)",
    params=(
        ParamSpec("Alpha", "FLOAT", default=1 / 6,
                  doc="The scale coefficient. A typical default for this value is 0.166667 (1/6)."),
        ParamSpec("Beta", "FLOAT", default=0.5,
                  doc="The bias coefficient. A typical default for this value is 0.5."),
    ),
    support=SUPPORT_6_2,
    ulp={F32: 2, F16: 1},
    ulp_half=1,
    gradient=("dX = (HardSigmoid(x) + Alpha * x) * dY = (2 * Alpha * x + Beta) * dY where 0 < "
              "Alpha * x + Beta < 1 (strictly), HardSigmoid(x) * dY (0 or 1) at and beyond the "
              "bounds (the clamped branch, as HARD_SIGMOID's gradient) and for NaN. 2 * Alpha * x "
              "+ Beta is evaluated as 2 * Alpha * (x - x0), x0 = -Beta / (2 * Alpha) held as two "
              "floats, so that it keeps its relative precision where it crosses zero (x = -1.5 "
              "for the defaults); never NaN for an infinite x."),
    notes=("HardSigmoid(x, Alpha, Beta) is HARD_SIGMOID's max(0, min(Alpha * x + Beta, 1)) with IEEE "
           "minNum/maxNum (a NaN Alpha * x + Beta gives 1, so NaN stays NaN); Alpha * x + Beta is a "
           "multiply-add that a backend may fuse or not (either rounding is within budget). Where HardSigmoid "
           "is 0, x * 0 is +-0 with x's sign, and at x = -inf (or +inf for a negative Alpha) the limit -0 "
           "(+0), where the formula's inf * 0 would be NaN."),
    silent=(
        SilentChoice(
            "HARD_SWISH's default Alpha",
            "float32(1/6)",
            "The page prints \"0.166667 (1/6)\"; 1/6 is the value meant."),
        SilentChoice(
            "HARD_SWISH where HardSigmoid is 0, and at x = -inf",
            "x · 0 signed as x; the limit -0",
            "The formula's inf · 0."),
    ),
)


def _hard_sigmoid(x, alpha, beta):
    g = float32_as(alpha, x.dtype) * x + float32_as(beta, x.dtype)
    upper = jnp.where(g < 1, g, jnp.ones_like(g))  # minNum(g, 1): NaN gives 1
    return g, jnp.where(upper > 0, upper, jnp.zeros_like(upper))  # maxNum(0, .): -0 gives +0


@operator(ACTIVATION_HARD_SWISH)
def activation_hard_swish(input, *, alpha, beta, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_hard_swish(np.array([-4.0, -1.5, 0.0, 1.5, 3.0, -np.inf], np.float32))
        Array([-0.   , -0.375,  0.   ,  1.125,  3.   , -0.   ], dtype=float32)
    """
    def f(x):
        _, hs = _hard_sigmoid(x, alpha, beta)
        # x * 0 keeps x's sign, and is its limit (not inf * 0 = NaN) at +-inf
        return jnp.where(hs > 0, x * hs, jnp.sign(x) * jnp.zeros_like(x))

    def slope(x):
        g, hs = _hard_sigmoid(x, alpha, beta)
        if alpha == 0.0:
            return hs  # HardSigmoid is the constant clamp(Beta): d/dx (x * hs) = hs
        a2 = float(np.float32(alpha)) * 2  # exact, as the float32 Alpha times 2
        inside = (g > 0) & (g < 1)
        return jnp.where(inside, _scaled_offset(x, a2, -float(np.float32(beta)) / a2), hs)

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True)


# --------------------------------------------------------------------------------------------
ACTIVATION_SWISH = activation_op(
    "SWISH",
    summary=("Performs a swish activation function on every element in InputTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(x) = x * Sigmoid(SigmoidInputScale * x)",
    params=(ParamSpec("SigmoidInputScale", "FLOAT", default=1.0,
                      doc="The constant coefficient. A typical default for this value is 1.0."),),
    support=SUPPORT_6_2,
    ulp={F32: 8, F16: 1},
    ulp_half=4,
    gradient=("dX = (s + z * s * (1 - s)) * dY with z = SigmoidInputScale * x, s = Sigmoid(z): "
              "from exp(-|z| / 2) only (never overflowing), 1 at +inf and -0 at -inf (the limits), "
              "never NaN for a number. Its zero (z = -1.27846..., where 1 + z + exp(z) = 0) is "
              "taken from a Taylor polynomial around it, so that the gradient keeps its relative "
              "precision there."),
    notes=("Sigmoid(z) = 1 / (1 + exp(-z)), evaluated without overflow for any z as x / (1 + w) "
           "for z >= 0 and x * w / (1 + w) for z < 0, w = exp(-|z|) (one exp; far out, where w "
           "would be a FLOAT32 denormal that XLA's CPU flushes and its GPU keeps, x * w is taken "
           "as x * u * u with u = exp(-|z| / 2), so that a normal result stays normal). z = SigmoidInputScale * x is "
           "rounded to the compute type (exact for the default 1.0 and for powers of two), as "
           "DirectML's float math computes it; the rest is within budget of the exact value for "
           "that z. At x = -inf (the formula's -inf * 0) the limit -0; SigmoidInputScale 0 gives x "
           "/ 2 (also at +-inf, where 0 * inf would be NaN). FLOAT16 tensors (computed in FLOAT32) take "
           "the plain x * Sigmoid(z) and its plain derivative, from one exp: within 1 FLOAT16 ULP "
           "for every FLOAT16 input (tested on all of them), and as fast as jnp's formula."),
    silent=(
        SilentChoice(
            "SWISH at x = -inf (positive SigmoidInputScale)",
            "-0, the limit",
            "The formula's -inf · 0."),
        SilentChoice(
            "SWISH on FLOAT16",
            "computed in FLOAT32, the plain formula (one exp): within 1 FLOAT16 ULP of every FLOAT16 input, "
            "tested on all 65,536",
            "FLOAT32's error is far below FLOAT16's half ULP."),
    ),
)

_SWISH_Z0 = -1.2784645427610738  # the zero of 1 + z + exp(z): where swish's derivative is zero
_SWISH_Z0_RADIUS = 0.5  # |z - z0| below which the Taylor polynomial of 1 + z + exp(z) is used
_SWISH_Z0_DEGREE = 10  # its truncation: 0.28 * 0.5^11 / 11! / 0.6 below 1e-11 relative


def _swish_taylor(hi: float) -> list[float]:
    """1 + z + exp(z) around z = hi: coefficients c0..cN in float64 (c0 = h(hi) is tiny)."""
    e = math.exp(hi)
    return [1 + hi + e, 1 + e] + [e / math.factorial(k) for k in range(2, _SWISH_Z0_DEGREE + 1)]


def _swish_parts(x, scale: float):
    """z = SigmoidInputScale * x; w = exp(-|z|) = v * m and d = 1 + w, from one exp: v = exp(-|z|)
    and m = 1 where |z| <= T, v = exp(-|z| / 2) = m beyond, so that x * v * m keeps a normal
    result normal where exp(-|z|) alone would be a denormal (which XLA's CPU flushes in FLOAT32
    and its GPU keeps; a FLOAT16 denormal has few bits): T = 64 in FLOAT32, 8 in FLOAT16 (half-
    precision computation), where exp(-T) is still normal."""
    cd = x.dtype
    z = x if scale == 1.0 else float32_as(scale, cd) * x
    a = jnp.abs(z)
    tail = a > np.asarray(8 if cd == np.float16 else 64, cd)
    v = jnp.exp(jnp.where(tail, a * np.asarray(-0.5, cd), -a))
    m = jnp.where(tail, v, jnp.ones_like(v))
    w = v * m
    return z, v, m, w, np.asarray(1, cd) + w


_F32_MAX = np.float32(np.finfo(np.float32).max)


def _swish_float16(input, scale: float):
    """SWISH of a FLOAT16 tensor computed in FLOAT32: FLOAT32's error (a few units of 2^-24) is
    far below FLOAT16's half ULP, so the plain formula x * Sigmoid(z), and its derivative
    s (1 + z (1 - s)), both from one exp (XLA's logistic), are within 1 FLOAT16 ULP of the
    float64 values for every FLOAT16 input (tests/ops/activation/test_gated.py checks all of
    them): the careful FLOAT32 formula costs time here that FLOAT16 cannot show (measured on the
    H100: 1.23x jnp's forward+backward, this one 1.0x). x is bounded to FLOAT32's largest value
    (an infinite x times Sigmoid = 0 gives the limit +-0, not NaN), z to +-100 in the derivative."""
    def f(x):
        z = x if scale == 1.0 else float32_as(scale, x.dtype) * x
        return jnp.clip(x, -_F32_MAX, _F32_MAX) * jax.nn.sigmoid(z)

    def slope(x):
        z = x if scale == 1.0 else float32_as(scale, x.dtype) * x
        zc = jnp.clip(z, np.float32(-100), np.float32(100))
        sg = jax.nn.sigmoid(zc)
        return sg * (np.float32(1) + zc * (np.float32(1) - sg))

    return elementwise(f, input, half=False, slopes=slope)


@operator(ACTIVATION_SWISH)
def activation_swish(input, *, sigmoid_input_scale, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_swish(np.array([-1.0, 0.0, 2.0, np.inf, -np.inf], np.float32))
        Array([-0.26894143,  0.        ,  1.761594  ,         inf, -0.        ],      dtype=float32)
    """
    scale = sigmoid_input_scale
    if input.dtype == np.float16 and not allow_half_precision_computation and scale != 0.0:
        return _swish_float16(input, scale)

    def f(x):
        if scale == 0.0:
            return x * np.asarray(0.5, x.dtype)  # Sigmoid(0) = 1/2, also for infinite x
        z, v, m, _, d = _swish_parts(x, scale)
        # z >= 0 (and NaN): x * Sigmoid(z) = x / (1 + exp(-z)); z < 0: x * exp(z) / (1 + exp(z)),
        # where an infinite x (negative for a positive scale, positive for a negative one) is
        # bounded to the largest finite value: times v * m = 0 it gives the limit, +-0, not NaN
        big = np.asarray(np.finfo(x.dtype).max, x.dtype)
        bounded = jnp.maximum(x, -big) if scale > 0 else jnp.minimum(x, big)
        return jnp.where(z < 0, (bounded * v) * m, x) / d

    def slope(x):
        cd = x.dtype
        if scale == 0.0:
            return jnp.full_like(x, np.asarray(0.5, cd))
        z, v, m, w, d = _swish_parts(x, scale)
        big = np.asarray(200, cd)  # exp(-100) underflows: the limits, never inf * 0
        zc = jnp.clip(z, -big, big)
        # s + z s (1 - s) = (1 + w + z w) / d^2 for z >= 0 and w (1 + z + w) / d^2 for z < 0;
        # 1 + z + w vanishes at z0: near it, its Taylor polynomial in z - hi (hi = z0 in cd,
        # z - hi exact there), whose constant term h(hi) is added last.
        hi = float(np.asarray(_SWISH_Z0, cd))
        delta = zc - np.asarray(hi, cd)
        coeffs = _swish_taylor(hi)
        p = jnp.full_like(delta, np.asarray(coeffs[-1], cd))
        for c in reversed(coeffs[1:-1]):
            p = p * delta + np.asarray(c, cd)
        near = p * delta + np.asarray(coeffs[0], cd)
        h = jnp.where(jnp.abs(delta) < np.asarray(_SWISH_Z0_RADIUS, cd), near, (np.asarray(1, cd) + zc) + w)
        num = jnp.where(z >= 0, d + zc * w, (h * v) * m)
        return num / (d * d)

    # every result is a quotient by d = 1 + w (or x * 1/2): the CPU's processor flushes it
    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True, float_result=True)


# --------------------------------------------------------------------------------------------
ACTIVATION_GELU = activation_op(
    "GELU",
    summary=("Performs the gaussian error linear unit (GELU) activation function on every element "
             "in InputTensor, placing the result into the corresponding element of OutputTensor."),
    formula="f(x) = 0.5 * x * (1.0 + erf(x / sqrt(2)))",
    support=(("5.1", "1 to 8", FLOAT32_FLOAT16),),
    ulp={F32: 8, F16: 1},
    ulp_half=8,
    gradient=("dX = (0.5 * (1 + erf(x / sqrt(2))) + x * exp(-x^2 / 2) / sqrt(2 * pi)) * dY, from "
              "the same exp(-x^2 / 2) as the forward pass: 1 at +inf and -0 at -inf (the limits), "
              "never NaN for a number; its zero (x = -0.75179..., GELU's minimum) is factored out "
              "of the polynomial, so the gradient keeps its relative precision there."),
    notes=("The exact erf form, evaluated to FLOAT32 accuracy over the whole range: 0.5 * (1 + "
           "erf(x / sqrt(2))) = Phi(x) cancels to nothing in FLOAT32 below x = -4 (1 + erf is "
           "1e-6 there; the literal formula is millions of ULP off), so dmljax computes f(x) = "
           "x * Phi(-|x|) for x <= 0 and x - x * Phi(-|x|) for x > 0, with Phi(-a) = F(a) * "
           "exp(-a^2 / 2): F a polynomial in (a - 2) / (a + 2) over a / (a + 2) (relative error "
           "3e-9 for a <= 16), exp(-a^2 / 2) from a^2 split exactly (n^2 / 2 with n a multiple "
           "of 1/256, times a Taylor polynomial of the rest). One exp and one division per "
           "element; FLOAT16 results use shorter polynomials and exp(-a^2 / 2) directly. "
           "f(-0) = -0; f(-inf) = -0 and f(+inf) = +inf, the limits (the formula's -inf * 0 is "
           "NaN). Fusable (dmljax.FusedActivation)."),
    silent=(
        SilentChoice(
            "GELU",
            "the exact erf form to FLOAT32 accuracy over the whole range: x · Φ(-|x|) below 0 and x - x · "
            "Φ(-|x|) above, Φ(-a) = F(a) · exp(-a²/2)",
            "The literal 0.5 · (1 + erf(x/√2)) cancels to nothing below x = -4 in FLOAT32 (millions of ULP "
            "off); GELU(±inf) = +inf / -0, the limits."),
    ),
)

_GELU_K = 2.0  # q = (a - K) / (a + K) maps a in [0, inf) to [-1, 1)
_GELU_A_MAX = 16.0  # exp(-a^2 / 2) underflows beyond: f(x) is x or -0 there
_GELU_A0 = 0.7517915246935645  # where F(a) = a / sqrt(2 pi): the zero of GELU's derivative at -a0
_GELU_INV_SQRT_2PI = 0.3989422804014327

# Phi(-a) * exp(a^2 / 2) * (a + K) as a polynomial in q (least squares, relative weight, fitted
# in float64 from mpmath's erfc): relative error 3.3e-9 for a in [0, 16] (FLOAT32 results).
_GELU_F = (  # c0 .. c11
    0.6724079847335815, -0.3314044773578644, 0.02879732847213745, 0.03671932965517044,
    -0.00046917182044126093, -0.0067339506931602955, -0.0019542663358151913,
    0.0008213906548917294, 0.0008417707867920399, 0.0001371577673126012,
    -0.00015274033648893237, -6.853142258478329e-05,
)
# (Phi(-a) * exp(a^2 / 2) - a / sqrt(2 pi)) / (a - a0) as a polynomial in q: the derivative's
# factor with its zero taken out; relative error 2.5e-9 for a in [0, 16].
_GELU_M = (  # c0 .. c10
    -0.5045492053031921, 0.13737647235393524, -0.029664890840649605, -0.005158608313649893,
    0.0023388841655105352, 0.0010429322719573975, -9.387412865180522e-05,
    -0.00021847314201295376, -5.5519441957585514e-05, 2.529414814489428e-05,
    1.4205361367203295e-05,
)
# The same for FLOAT16 results (a in [0, 8]; beyond, f is below FLOAT16's smallest denormal):
# relative errors 2e-5 and 1.3e-6, a twentieth of FLOAT16's ULP.
_GELU_A_MAX_HALF = 8.0
_GELU_F_HALF = (  # c0 .. c5
    0.6724030375480652, -0.33129972219467163, 0.028916042298078537, 0.035648636519908905,
    -0.0012610345147550106, -0.0043108812533319,
)
_GELU_M_HALF = (  # c0 .. c5
    -0.5045494437217712, 0.13737304508686066, -0.0296517051756382, -0.005116832908242941,
    0.002261461690068245, 0.0008829571888782084,
)


def _horner(coeffs, q):
    cd = q.dtype
    p = jnp.full_like(q, np.asarray(coeffs[-1], cd))
    for c in reversed(coeffs[:-1]):
        p = p * q + np.asarray(c, cd)
    return p


def _gelu_parts(x, result_dtype, scaled: bool = False):
    """a = |x| (at most A_MAX), r = 1 / (a + K), q = (a - K) * r and E = exp(-a^2 / 2), for
    FLOAT32 results from a^2 / 2 = n^2 / 2 + t exactly (n = a rounded to a multiple of 1/256:
    n^2 is exact; t = (a - n) (a + n) / 2 is below 0.032 and exp(-t) its Taylor polynomial), so
    that E keeps its relative precision where a^2 / 2 is large; for FLOAT16 results directly.

    ``scaled``: E as (E * e^16, e^-16) beyond a = 12 (16 - n^2 / 2 is exact), for a product that
    is normal where E is a FLOAT32 denormal (XLA's CPU flushes one, its GPU keeps it)."""
    cd = x.dtype
    full = np.dtype(result_dtype) != np.float16  # FLOAT32 (and the float64 evaluation of dmljax compare)
    a_max = _GELU_A_MAX if full else _GELU_A_MAX_HALF
    a = jnp.minimum(jnp.abs(x), np.asarray(a_max, cd))  # NaN is kept by x itself, below
    r = np.asarray(1, cd) / (a + np.asarray(_GELU_K, cd))
    q = (a - np.asarray(_GELU_K, cd)) * r
    half = np.asarray(0.5, cd)
    if not full:
        return a, r, q, jnp.exp(-(a * a) * half), None
    n = jnp.round(a * np.asarray(256, cd)) * np.asarray(1 / 256, cd)
    t = (a - n) * (a + n) * half
    exp_t = _horner((1.0, -1.0, 1 / 2, -1 / 6, 1 / 24), t)  # exp(-t) within 3e-10
    arg = -(n * n) * half
    if not scaled:
        return a, r, q, jnp.exp(arg) * exp_t, None
    far = a > np.asarray(12, cd)
    e = jnp.exp(jnp.where(far, arg + np.asarray(16, cd), arg)) * exp_t
    return a, r, q, e, jnp.where(far, np.asarray(math.exp(-16), cd), np.asarray(1, cd))


@operator(ACTIVATION_GELU)
def activation_gelu(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_gelu(np.array([-3.0, -1.0, 0.0, 1.0, 3.0], np.float32))
        Array([-0.00404969, -0.15865526,  0.        ,  0.8413447 ,  2.9959502 ],      dtype=float32)
        >>> dmljax.activation_gelu(np.array([-10.0, -np.inf, np.inf], np.float32))
        Array([-7.619853e-23, -0.000000e+00,           inf], dtype=float32)
    """
    full = input.dtype != np.float16

    def f(x, scale=None):
        a, r, q, e, _ = _gelu_parts(x, input.dtype)
        # x * Phi(-|x|), as ((x * P(q)) * r) * E: a normal result is never an intermediate
        # denormal. x is taken as sign(x) * a: the same up to A_MAX, and +-A_MAX beyond, where E
        # is 0 (the limit at +-inf, not inf * 0); sign(NaN) keeps NaN on every backend.
        x_bounded = jnp.sign(x) * a
        if scale is not None:
            x_bounded, x = x_bounded * scale, x * scale
        hs = ((x_bounded * _horner(_GELU_F if full else _GELU_F_HALF, q)) * r) * e
        return jnp.where(x > 0, x - hs, hs)  # x Phi(x) = x - x Phi(-x) for x > 0

    def f_cpu(x):
        # XLA's CPU backend flushes every denormal an operation makes: for 0 < x < 2^-125,
        # x Phi(-x) would become 0 and x - 0 = x, twice the true value. |x| < 1 is scaled by 2^24
        # first (exactly: the same roundings, a power of two apart) and back once at the end.
        if x.dtype != np.float32:
            return f(x)
        small = jnp.abs(x) < 1
        scale = jnp.where(small, np.float32(2.0**24), np.float32(1))
        return f(x, scale) * jnp.where(small, np.float32(2.0**-24), np.float32(1))

    def math_(x):
        return jax.lax.platform_dependent(x, cpu=f_cpu, default=f)

    def slope(x):
        cd = x.dtype
        a, r, q, e, unscale = _gelu_parts(x, input.dtype, scaled=True)
        # Phi(x) + x phi(x) = E * K(a) for x <= 0 and 1 - E * K(a) for x > 0, with K(a) = F(a) -
        # a / sqrt(2 pi) = (a - a0) * M(q), a - a0 as (a - hi) - lo (exact near a0; M * lo is
        # subtracted last, since XLA would fold the two constants of (a - hi) - lo into one)
        m = _horner(_GELU_M if full else _GELU_M_HALF, q)
        hi = np.asarray(_GELU_A0, cd)
        lo = np.asarray(_GELU_A0 - float(hi), cd)
        k = m * (a - hi) - m * lo
        d = e * k if unscale is None else (e * k) * unscale
        return jnp.where(x > 0, np.asarray(1, cd) - d, d)

    # on the CPU every FLOAT32 result is f_cpu's last product, which the processor flushes
    return elementwise(math_, input, half=allow_half_precision_computation, slopes=slope,
                       float_reads=True, float_result=True)
