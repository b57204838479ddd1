"""Element-wise arithmetic (sums, products, quotients, moduli, means, identity, negation): each
page's record, with its formula right below it (clamps, MAX and MIN: clamp.py)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, FLOAT32_FLOAT16_INT32_UINT32,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8, FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, DataType,
)
from dmljax._src.numerics import (
    F32_TINY, apply_scale_bias, bits_type, is_nan, load, store,
)
from dmljax._src.op import operator
from dmljax._src.ops.factories import (
    SCALE_BIAS, SUPPORT_ADD_MULTIPLY, apply_fused, binary_op, elementwise, int_scale_bias, scale_of, unary_op,
)
from dmljax._src.spec import ParamSpec, SilentChoice

F32, F16, F64 = DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64

# --------------------------------------------------------------------------------------------
ELEMENT_WISE_MULTIPLY = binary_op(
    "ELEMENT_WISE_MULTIPLY",
    summary=("Computes the product of each pair of corresponding elements of the input tensors, "
             "placing the result into the corresponding element of OutputTensor."),
    formula="f(a, b) = a * b",
    support=SUPPORT_ADD_MULTIPLY,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dA = b * dY, dB = a * dY (integer inputs: no gradient).",
    notes="Integer products wrap around (two's complement), as integer hardware does.",
)


@operator(ELEMENT_WISE_MULTIPLY)
def element_wise_multiply(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_multiply(np.array([1.5, -2.0], np.float32), np.array([2.0, 3.0], np.float32))
        Array([ 3., -6.], dtype=float32)
    """
    # The product keeps its explicit flush on the CPU too (no float_result, unlike ADD and
    # SUBTRACT): without it XLA's CPU backend contracts the product with a sum that follows it into
    # one FMA, one rounding where DirectML rounds each operator's output
    return elementwise(lambda x, y: x * y, a, b, half=allow_half_precision_computation,
                       slopes=lambda x, y: (y, x), integer=lambda x, y: x * y)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_MODULUS_FLOOR = binary_op(
    "ELEMENT_WISE_MODULUS_FLOOR",
    summary=("Computes the modulus, with the same results as the Python modulus, for each pair of "
             "corresponding elements from the input tensors. Because the quotient is rounded "
             "towards -inf, the result will have the same sign as the divisor."),
    formula="f(a, b) = a - (b * floor(a / b))",
    support=(
        ("6.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient=("dA = dY, dB = -floor(a / b) * dY; where the result is NaN (b = 0 or NaN, a infinite "
              "or NaN) both are NaN. Integer inputs: no gradient."),
    notes=("Floats give Python's a % b: computed from the exact fmod, so large quotients stay "
           "accurate; the sign of a zero result is the divisor's; a zero divisor gives NaN; "
           "+-inf divisors give a, or +-inf where the signs differ. Integers: a zero divisor "
           "gives 0 (dmljax's choice), INT_MIN % -1 is 0; neither can crash the process."),
    silent=(
        SilentChoice(
            "Integer MODULUS_FLOOR by zero",
            "0, on every backend, never a crash",
            "Integers have no NaN; 0 is what NumPy's integer `%` gives. XLA would raise SIGFPE for a constant "
            "zero divisor under jit, so the divisor is guarded."),
        SilentChoice(
            "Integer MODULUS_FLOOR `INT_MIN % -1`",
            "0",
            "The exact result (Python gives 0); the hardware division overflows, so `-1` divisors are guarded "
            "too."),
        SilentChoice(
            "Float MODULUS_FLOOR by ±0",
            "NaN",
            "What the page's formula gives (Python raises instead)."),
        SilentChoice(
            "Float MODULUS_FLOOR with a FLOAT32 denormal remainder",
            "flushed, like any math result: `1.5 % -3.8577556e-38` gives -0.0, where Python's float64 `%` "
            "gives -2.78e-38",
            "the [denormal rule](semantics.md#denormals); XLA's CPU backend flushes it by itself and its GPU "
            "backend does not, so dmljax flushes it explicitly."),
        SilentChoice(
            "Float MODULUS_FLOOR",
            "Python's `%`, from the exact `fmod`",
            "The page promises Python's results; its literal formula loses them for large quotients (1e9 mod π "
            "in FLOAT32 gives -64)."),
        SilentChoice(
            "MODULUS_FLOOR gradient with an infinite divisor",
            "`floor(a / ±inf)` taken as the true quotient's (-1 where the signs differ: `2 % -inf = -inf = a + "
            "b`, so dB = 1)",
            "`a / -inf` rounds to -0, whose floor would say 0."),
    ),
)


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _modulus_floor_float(a, b, wide: bool):
    # C fmod: exact, sign of a. A FLOAT32 denormal remainder is flushed like any math result
    # (XLA's CPU backend does so by itself, its GPU backend does not). ``wide``: FLOAT16 operands
    # read in FLOAT32, whose remainder (a multiple of 2^-24, exact) and r + b are never FLOAT32
    # denormals: no flush to pay for.
    # The remainder moved to b's side where it lies on the other (their sign bits differ), and a
    # zero one (or a FLOAT32 denormal, flushed: the test takes |r| below the smallest normal) is the
    # zero of b's sign; a NaN remainder fails both tests and stays. In a fused chain on a GPU each
    # operation counts: the flush, the three compares of the sides and the copy of b's sign as a
    # select took 13 operations where these take 7 (the five-operator chain on an H200).
    r = lax.rem(a, b)
    zero = (jnp.abs(r) < np.asarray(F32_TINY, r.dtype)) if not wide and r.dtype == np.float32 else (r == 0)
    uint = bits_type(r.dtype)
    rb, bb = lax.bitcast_convert_type(r, uint), lax.bitcast_convert_type(b, uint)
    sign = np.asarray(1 << (8 * np.dtype(uint).itemsize - 1), uint)
    r = jnp.where(((rb ^ bb) & sign) != 0, r + b, r)
    return jnp.where(zero, lax.bitcast_convert_type(bb & sign, r.dtype), r)


@_modulus_floor_float.defjvp
def _modulus_floor_float_jvp(wide, primals, tangents):
    # Both partials are NaN where the result is (b = 0, a infinite, a NaN operand), as for
    # MODULUS_TRUNCATE. The select also makes dA a value of the backward fusion rather than the
    # cotangent itself, which a jitted gradient would otherwise have to copy out (a whole extra
    # pass over memory, measured as 1.16-1.18x jnp autodiff on an H100).
    (a, b), (ta, tb) = primals, tangents
    defined = jnp.isfinite(a) & (jnp.abs(b) > 0)  # False for NaN too
    # floor(a / b) with a / b's exact sign: a / +-inf rounds to a signed zero, whose floor is -0
    # where the true quotient is a tiny negative number with floor -1 (2 % -inf = -inf = a + b).
    q = jnp.floor(a / b)
    q = jnp.where(jnp.isinf(b) & (a != 0) & ((a < 0) != (b < 0)), -jnp.ones_like(q), q)
    nan = jnp.full_like(q, np.nan)
    da, db = jnp.where(defined, jnp.ones_like(q), nan), jnp.where(defined, -q, nan)  # slopes: linear in t
    return _modulus_floor_float(a, b, wide), da * ta + db * tb


def _safe_divisor(b, signed: bool):
    """An integer divisor XLA may divide by: 0 (undefined in DirectML) and, for signed types, -1
    (INT_MIN / -1 overflows) replaced by 1; callers fix those results up. XLA raises SIGFPE for a
    constant zero divisor under jit, so it must never see one."""
    guard = (b == 0) | (b == -1) if signed else (b == 0)
    return jnp.where(guard, jnp.ones_like(b), b)


def _modulus_floor_int(a, b, signed: bool):
    # b == 0 is undefined in DirectML and b == -1 overflows for INT_MIN; both give 0 here, and
    # the divisor XLA sees is never 0 (XLA raises SIGFPE for a constant zero divisor under jit).
    safe = _safe_divisor(b, signed)
    r = lax.rem(a, safe)
    if signed:
        r = jnp.where((r != 0) & ((r < 0) != (safe < 0)), r + safe, r)
    return r


@operator(ELEMENT_WISE_MODULUS_FLOOR)
def element_wise_modulus_floor(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([-7.0, 7.0, -4.0, 1e9], np.float32)
        >>> b = np.array([3.0, -3.0, 2.0, np.pi], np.float32)
        >>> dmljax.element_wise_modulus_floor(a, b)
        Array([ 2.      , -2.      ,  0.      ,  1.024195], dtype=float32)
        >>> dmljax.element_wise_modulus_floor(np.array([-7, 7, 5], np.int32), np.array([3, -3, 0], np.int32))
        Array([ 2, -2,  0], dtype=int32)
    """
    dt = DataType.from_dtype(a.dtype)
    if dt.is_integer:
        return _modulus_floor_int(a, b, dt.is_signed)
    half = allow_half_precision_computation
    return store(_modulus_floor_float(load(a, half), load(b, half), dt is DataType.FLOAT16 and not half), dt)


# Float math runs inside a custom_jvp that covers load and store too, so that the gradient is
# the derivative of the page's formula (taken on the branch the forward pass selects), not of
# dmljax's FLOAT32 denormal flushing.

# --------------------------------------------------------------------------------------------
ELEMENT_WISE_IDENTITY = unary_op(
    "ELEMENT_WISE_IDENTITY",
    summary=("Computes the identity for each element of InputTensor, placing the result into the "
             "corresponding element of OutputTensor."),
    formula="f(x) = x",
    params=(SCALE_BIAS,),
    support=(
        ("4.1", "1 to 8", FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.1", "4 to 5", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("1.0", "4 to 5", FLOAT32_FLOAT16),
    ),
    ulp={F32: 1, F16: 1, F64: 1},
    ulp_half=1,
    gradient="dX = Scale * dY (dY without a ScaleBias); integer inputs: no gradient.",
    notes=("Without a ScaleBias this is data movement: every bit is kept (NaN payloads, -0, "
           "FLOAT32 denormals). With one it is math: FLOAT32 denormals are flushed, FLOAT16 is "
           "computed in FLOAT32, and integer tensors compute g(x) in FLOAT32 (FLOAT64 for INT64 "
           "and UINT64) and convert back by truncation toward zero, saturated (NaN gives 0)."),
    silent=(
        SilentChoice(
            "IDENTITY without / with ScaleBias",
            "data movement (every bit kept) / math (denormals flushed, FLOAT16 computed in FLOAT32)",
            "The page's formula is the identity unless a ScaleBias is given."),
    ),
)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _identity_float(x, scale_bias, half):
    return store(apply_scale_bias(load(x, half), scale_bias), DataType.from_dtype(x.dtype))


@_identity_float.defjvp
def _identity_float_jvp(scale_bias, half, primals, tangents):
    (x,), (t,) = primals, tangents
    return _identity_float(x, scale_bias, half), t * scale_of(scale_bias, t.dtype)


@operator(ELEMENT_WISE_IDENTITY)
def element_wise_identity(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([1.5, -0.0, np.nan], np.float32)
        >>> dmljax.element_wise_identity(x)
        Array([ 1.5, -0. ,  nan], dtype=float32)
        >>> dmljax.element_wise_identity(x, scale_bias=(2.0, 1.0))
        Array([ 4.,  1., nan], dtype=float32)
        >>> dmljax.element_wise_identity(np.array([7, -7], np.int8), scale_bias=(0.5, 0.0))
        Array([ 3, -3], dtype=int8)
    """
    dt = DataType.from_dtype(input.dtype)
    if scale_bias is None:
        return input
    if dt.is_integer:
        return int_scale_bias(input, scale_bias, dt)
    return _identity_float(input, scale_bias, allow_half_precision_computation)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ADD = binary_op(
    "ELEMENT_WISE_ADD",
    summary=("Adds every element in ATensor to its corresponding element in BTensor, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(a, b) = a + b",
    support=SUPPORT_ADD_MULTIPLY,
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dA = dY, dB = dY (integer inputs: no gradient).",
    notes=("A float sum is correctly rounded (0 ULP; FLOAT16 through FLOAT32 is too: double "
           "rounding is harmless for a sum when the wider type has 2p + 2 bits). Integer sums "
           "wrap around (two's complement), as integer hardware does."),
)


def _add(a, b, half):
    # float_result (ADD, SUBTRACT): on the CPU the operation's own rounding flushes a denormal (the
    # processor's); where XLA simplifies it away (x - 0), what passes is an input flushed as it was
    # read. DIVIDE keeps its flush, as MULTIPLY does: under jit XLA's CPU backend takes a quotient
    # by a constant as a product by its reciprocal, which a following sum would contract.
    return elementwise(lambda x, y: x + y, a, b, half=half, slopes=lambda x, y: (1.0, 1.0),
                       integer=lambda x, y: x + y, float_result=True)


@operator(ELEMENT_WISE_ADD)
def element_wise_add(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_add(np.array([1.5, -2.0], np.float32), np.array([2.0, 3.0], np.float32))
        Array([3.5, 1. ], dtype=float32)
        >>> dmljax.element_wise_add(np.array([250], np.uint8), np.array([10], np.uint8))
        Array([4], dtype=uint8)
    """
    return _add(a, b, allow_half_precision_computation)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_ADD1 = binary_op(
    "ELEMENT_WISE_ADD1",
    summary=("Adds every element in ATensor to its corresponding element in BTensor and places "
             "the result into the corresponding element of OutputTensor, with the option for "
             "fused activation."),
    formula="f(a, b) = FusedActivation(a + b)",
    params=(ParamSpec(
        "FusedActivation", "DML_OPERATOR_DESC*", default=None, nullable=True,
        doc=("An optional fused activation layer to apply after the addition: a "
             "dmljax.FusedActivation, e.g. FusedActivation('ACTIVATION_ELU', alpha=1.0), or "
             "{'Type': 'DML_OPERATOR_ACTIVATION_ELU', 'Desc': {'Alpha': 1.0}}. Fused activation "
             "may be used only when the output datatype is FLOAT16 or FLOAT32.")),),
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16),
        ("2.0", "4 to 5", FLOAT32_FLOAT16),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=("dA = dB = dY chained through the fused activation's own gradient "
              "(dA = dB = activation'(a + b) * dY)."),
    notes=("The sum alone is correctly rounded. A fused activation gives the same result as the "
           "two operators one after the other (core/dml-fused-activations.md: \"fused activations "
           "produce the same result\"): the sum is rounded to the output type, then the "
           "activation runs with its own rules and budget. Fusable and implemented: ELU, SCALED_ELU."),
    silent=(
        SilentChoice(
            "ADD1 with a FusedActivation",
            "the sum rounded to the output type, then the activation: bit-identical to the two operators in "
            "turn",
            "The fused-activations page says fusing produces the same result."),
    ),
)


@operator(ELEMENT_WISE_ADD1)
def element_wise_add1(a, b, *, fused_activation, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> a, b = np.array([1.0, -3.0], np.float32), np.array([0.5, 1.0], np.float32)
        >>> dmljax.element_wise_add1(a, b)
        Array([ 1.5, -2. ], dtype=float32)
        >>> dmljax.element_wise_add1(a, b, fused_activation=dmljax.FusedActivation("ACTIVATION_ELU", alpha=1.0))
        Array([ 1.5       , -0.86466473], dtype=float32)
    """
    half = allow_half_precision_computation
    return apply_fused(fused_activation, _add(a, b, half), half)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_NEGATE = unary_op(
    "ELEMENT_WISE_NEGATE",
    summary=("Negates each element of InputTensor, storing the result into the corresponding "
             "element of OutputTensor."),
    formula="f(x) = -x",
    support=(("5.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8),),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dX = -dY (integer inputs: no gradient).",
    notes=("Math, not data movement: FLOAT32 denormals are flushed (-(1e-40) is -0.0), -0.0 gives 0.0 and NaN "
           "stays NaN."),
    silent=(
        SilentChoice(
            "ELEMENT_WISE_NEGATE on integers",
            "wraps around: the most negative value is its own negation (`-(-128)` is -128 in INT8)",
            "The page does not say; two's-complement hardware wraps, and so do integer ADD and MULTIPLY in "
            "dmljax."),
    ),
)


@operator(ELEMENT_WISE_NEGATE)
def element_wise_negate(input, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_negate(np.array([1.5, -0.0, np.inf], np.float32))
        Array([-1.5,  0. , -inf], dtype=float32)
        >>> dmljax.element_wise_negate(np.array([5, -128], np.int8))
        Array([  -5, -128], dtype=int8)
    """
    return elementwise(lambda x: -x, input, half=allow_half_precision_computation,
                       slopes=lambda x: -1.0, integer=lambda x: -x)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_SUBTRACT = binary_op(
    "ELEMENT_WISE_SUBTRACT",
    summary=("Subtracts each element of BTensor from the corresponding element of ATensor, placing "
             "the result into the corresponding element of OutputTensor."),
    formula="f(a, b) = a - b",
    support=(
        ("5.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("4.1", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_UINT32),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_UINT32),
        ("1.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient="dA = dY, dB = -dY (integer inputs: no gradient).",
    notes=("A float difference is correctly rounded (FLOAT16 through FLOAT32 too, as for ADD). "
           "Integer differences wrap around (two's complement), as integer hardware does."),
)


@operator(ELEMENT_WISE_SUBTRACT)
def element_wise_subtract(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_subtract(np.array([1.5, np.inf], np.float32), np.array([2.0, np.inf], np.float32))
        Array([-0.5,  nan], dtype=float32)
        >>> dmljax.element_wise_subtract(np.array([3], np.uint8), np.array([10], np.uint8))
        Array([249], dtype=uint8)
    """
    return elementwise(lambda x, y: x - y, a, b, half=allow_half_precision_computation,
                       slopes=lambda x, y: (1.0, -1.0), integer=lambda x, y: x - y, float_result=True)


# --------------------------------------------------------------------------------------------
# Integer division and remainder: DirectML leaves a zero divisor undefined; dmljax gives 0, and
# INT_MIN / -1 wraps to INT_MIN (INT_MIN % -1 is 0). The divisor XLA sees is never 0 or -1 (XLA
# raises SIGFPE for a constant zero divisor, or INT_MIN / -1, when it folds them under jit).

def _divide_int(a, b, signed: bool):
    q = lax.div(a, _safe_divisor(b, signed))  # truncates toward zero
    if signed:
        q = jnp.where(b == -1, -a, q)  # two's complement: -INT_MIN is INT_MIN
    return jnp.where(b == 0, jnp.zeros_like(q), q)


def _divide_slopes(x, y):
    # d/da = 1 / b, d/db = -a / b^2 computed as -(a / b) / b: a / b overflows only where a / b^2
    # does too, where b^2 alone would underflow (flushed to 0: -inf) for |b| < 1e-19 in FLOAT32.
    # Where the quotient is NaN (0/0, inf/inf) both partials are NaN. The select between the two
    # divisions also keeps XLA's simplifier from rewriting (a / b) / b into a / (b * b).
    q = x / y
    nan = is_nan(q)
    q = jnp.where(nan, jnp.full_like(q, np.nan), q)
    return jnp.where(nan, q, 1 / y), -(q / y)


def _recip_slope(g):
    # -1 / g^2 as -(1 / g) / g: g * g would underflow (flushed: -inf) for |g| < 1e-19 in FLOAT32,
    # where 1 / g^2 is finite. XLA's simplifier rewrites (1 / g) / g into 1 / (g * g): the select
    # between the divisions (a NaN g gives a NaN reciprocal either way) keeps it from doing so.
    r = 1 / g
    r = jnp.where(is_nan(g), g, r)
    return -(r / g)


ELEMENT_WISE_DIVIDE = binary_op(
    "ELEMENT_WISE_DIVIDE",
    summary=("Computes the quotient of each element of ATensor over the corresponding element of "
             "BTensor, placing the result into the corresponding element of OutputTensor."),
    formula="f(a, b) = a / b",
    support=(
        ("6.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("5.1", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_UINT32),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_UINT32),
        ("1.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 2, F16: 1},
    ulp_half=1,
    gradient=("dA = dY / b, dB = -(a / b) / b * dY (no overflow or underflow that a / b^2 itself "
              "avoids); at b = +-0: dA = +-inf, dB = -sign(a) * inf; where a / b is NaN (0/0, "
              "inf/inf, a NaN operand) both are NaN. Integer inputs: no gradient."),
    notes=("Floats: IEEE division (x / +-0 = +-inf, 0/0 = NaN; a FLOAT32 denormal divisor reads "
           "as a signed zero; a denormal quotient is flushed). XLA's CPU backend rounds the "
           "FLOAT32 quotient correctly (0 ULP measured); its GPU backend's division is not (37 of "
           "65,536 quotients 2 ULP off on an H100), hence 2 ULP for FLOAT32, inside Direct3D's "
           "2.5 ULP for a division. FLOAT16 is computed in FLOAT32 and rounded once. "
           "Integers truncate toward zero (\"for integer divisions, the result is truncated\"); a "
           "zero divisor gives 0 and INT_MIN / -1 gives INT_MIN (dmljax's choices, as two's "
           "complement wraps), never a crash, also under jit with constant operands."),
    silent=(
        SilentChoice(
            "Integer DIVIDE and MODULUS_TRUNCATE by zero; `INT_MIN / -1`",
            "0 (quotient and remainder, as MODULUS_FLOOR); `INT_MIN / -1` is INT_MIN (two's complement wrap, "
            "as NEGATE), `INT_MIN % -1` is 0; never a crash, also under jit with constant operands",
            "DirectML leaves both undefined; the divisor XLA sees is guarded (SIGFPE otherwise).",
            also=("ELEMENT_WISE_MODULUS_TRUNCATE",)),
        SilentChoice(
            "FLOAT32 DIVIDE budget",
            "2 ULP",
            "XLA's GPU division is not correctly rounded (37 of 65,536 quotients outside 1 ULP on an H100); "
            "the CPU's is. Direct3D allows 2.5 ULP."),
        SilentChoice(
            "Gradients where the forward value is NaN (DIVIDE 0/0, MODULUS_* by 0 or of inf, "
            "SQRT/LOG/ACOSH/ATANH outside their domain)",
            "NaN",
            "The derivative does not exist there; no finite value would be honest. SUBTRACT and MEAN keep "
            "their constant slopes (as ADD).",
            also=("ELEMENT_WISE_MODULUS_FLOOR", "ELEMENT_WISE_MODULUS_TRUNCATE", "ELEMENT_WISE_SQRT",
                  "ELEMENT_WISE_LOG", "ELEMENT_WISE_ACOSH", "ELEMENT_WISE_ATANH")),
    ),
)


@operator(ELEMENT_WISE_DIVIDE)
def element_wise_divide(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_divide(np.array([1.0, -1.0, 0.0], np.float32), np.array([4.0, 0.0, 0.0], np.float32))
        Array([0.25, -inf,  nan], dtype=float32)
        >>> dmljax.element_wise_divide(np.array([-7, 7, -128, 5], np.int8), np.array([2, -2, -1, 0], np.int8))
        Array([  -3,   -3, -128,    0], dtype=int8)
    """
    dt = DataType.from_dtype(a.dtype)
    return elementwise(lambda x, y: x / y, a, b, half=allow_half_precision_computation,
                       slopes=_divide_slopes, integer=lambda x, y: _divide_int(x, y, dt.is_signed))


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_RECIP = unary_op(
    "ELEMENT_WISE_RECIP",
    summary=("Computes the reciprocal for each element of the input tensor, placing the result "
             "into the corresponding element of the output tensor."),
    formula="f(x) = 1 / x",
    params=(SCALE_BIAS,),
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16),
        ("1.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    gradient=("dX = Scale * -(1 / g) / g * dY, g = x * Scale + Bias: -inf at g = +-0 (the "
              "limit from either side), -0 at g = +-inf, NaN for NaN."),
    notes=("IEEE: RECIP(+-0) = +-inf, RECIP(+-inf) = +-0; a FLOAT32 denormal reads as a signed "
           "zero (+-inf), a denormal result (|g| > 2^126) is flushed. The reciprocal itself is "
           "correctly rounded (0 ULP measured); the 1 ULP budget is the gradient's, which rounds "
           "twice."),
)


@operator(ELEMENT_WISE_RECIP)
def element_wise_recip(input, *, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_recip(np.array([4.0, -0.0, np.inf, 0.5], np.float32))
        Array([0.25, -inf, 0.  , 2.  ], dtype=float32)
    """
    return elementwise(lambda g: 1 / g, input, half=allow_half_precision_computation,
                       slopes=_recip_slope, scale_bias=scale_bias)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_DIFFERENCE_SQUARE = binary_op(
    "ELEMENT_WISE_DIFFERENCE_SQUARE",
    summary=("Subtracts each element of BTensor from the corresponding element of ATensor, "
             "multiplies the result by itself, and places the result into the corresponding "
             "element of OutputTensor."),
    formula="f(a, b) = (a - b) * (a - b)",
    support=(("3.1", "1 to 8", FLOAT32_FLOAT16_INT32_UINT32),),
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    gradient="dA = 2 * (a - b) * dY, dB = -2 * (a - b) * dY (integer inputs: no gradient).",
    notes=("Floats: the page's two operations, each rounded (a - b, then its square). Integers "
           "wrap around (two's complement, modulo 2^32 for INT32 and UINT32), as the page's "
           "integer subtraction and multiplication do on integer hardware."),
    silent=(
        SilentChoice(
            "DIFFERENCE_SQUARE, integers",
            "wrap around",
            "As ADD and MULTIPLY."),
    ),
)


def _difference_square(x, y):
    d = x - y
    return d * d


@operator(ELEMENT_WISE_DIFFERENCE_SQUARE)
def element_wise_difference_square(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_difference_square(np.array([1.5, -2.0], np.float32), np.array([4.0, 1.0], np.float32))
        Array([6.25, 9.  ], dtype=float32)
        >>> dmljax.element_wise_difference_square(np.array([0], np.int32), np.array([65536], np.int32))
        Array([0], dtype=int32)
    """
    def slopes(x, y):
        d2 = (x - y) * 2
        return d2, -d2

    return elementwise(_difference_square, a, b, half=allow_half_precision_computation,
                       slopes=slopes, integer=_difference_square)


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_MEAN = binary_op(
    "ELEMENT_WISE_MEAN",
    summary=("Averages each pair of corresponding elements of the input tensors, placing the "
             "result into the corresponding element of OutputTensor."),
    formula="f(a, b) = (a + b) / 2",
    support=(
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_UINT32),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_UINT32),
        ("1.0", "4", FLOAT32_FLOAT16),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=1,
    gradient="dA = dY / 2, dB = dY / 2 (integer inputs: no gradient).",
    notes=("Floats: the exact mean rounded once, and finite wherever the mean is (a + b may "
           "overflow: then a / 2 + b / 2 is used; FLOAT32 3e38 and 3e38 average to 3e38). A "
           "denormal FLOAT32 mean is flushed. Integers: the exact mean truncated toward zero "
           "(the page is silent; truncation as DIVIDE's page says for integer division), "
           "computed in the type without overflow (INT32 2^31-1 and 2^31-1 average to 2^31-1)."),
    silent=(
        SilentChoice(
            "MEAN",
            "integers: the exact mean truncated toward zero, without overflow; floats: correctly rounded and "
            "finite wherever the mean is (inputs halved by their exponent where `a + b` would overflow)",
            "The page is silent; DIVIDE's page truncates. XLA rewrites `a*0.5 + b*0.5` into `(a + b)*0.5`, "
            "which overflows."),
    ),
)


_MANTISSA_BITS = {np.dtype(np.float16): 10, np.dtype(np.float32): 23, np.dtype(np.float64): 52}


def _half_of_large(x):
    # x / 2 by the exponent field: exact for finite x far from the denormals. Not x * 0.5: XLA's
    # simplifier turns x * 0.5 + y * 0.5 back into (x + y) * 0.5, which overflows.
    uint = bits_type(x.dtype)
    step = np.asarray(1 << _MANTISSA_BITS[np.dtype(x.dtype)], uint)
    return lax.bitcast_convert_type(lax.bitcast_convert_type(x, uint) - step, x.dtype)


def _mean_float(x, y):
    s = x + y  # rounded once; halving is exact where the mean is not a denormal (flushed anyway)
    # a + b overflows only where both are finite, of one sign and above half the type's ULP at its
    # maximum (2^103 in FLOAT32): there, a / 2 + b / 2 is exact halves rounded once.
    overflow = jnp.isinf(s) & jnp.isfinite(x) & jnp.isfinite(y)
    return jnp.where(overflow, _half_of_large(x) + _half_of_large(y), s * np.asarray(0.5, x.dtype))


def _mean_int(x, y, signed: bool):
    one = jnp.ones_like(x)
    floor = (x >> one) + (y >> one) + (x & y & one)  # floor((a + b) / 2), without overflow
    if not signed:
        return floor
    odd = ((x ^ y) & one) != 0  # the exact sum is odd: floor and truncation differ below 0
    return floor + ((floor < 0) & odd).astype(x.dtype)


@operator(ELEMENT_WISE_MEAN)
def element_wise_mean(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_mean(np.array([1.0, 3e38], np.float32), np.array([2.0, 3e38], np.float32))
        Array([1.5e+00, 3.0e+38], dtype=float32)
        >>> dmljax.element_wise_mean(np.array([-3, 2147483647], np.int32), np.array([0, 2147483647], np.int32))
        Array([        -1, 2147483647], dtype=int32)
    """
    dt = DataType.from_dtype(a.dtype)
    return elementwise(_mean_float, a, b, half=allow_half_precision_computation,
                       slopes=lambda x, y: (0.5, 0.5), integer=lambda x, y: _mean_int(x, y, dt.is_signed))


# --------------------------------------------------------------------------------------------
ELEMENT_WISE_MODULUS_TRUNCATE = binary_op(
    "ELEMENT_WISE_MODULUS_TRUNCATE",
    summary=("Computes the C modulus operator for each pair of corresponding elements of the input "
             "tensors, placing the result into the corresponding element of OutputTensor. Because "
             "the quotient is rounded towards 0, the result will have the same sign as the "
             "dividend."),
    formula="f(a, b) = a - (b * trunc(a / b))",
    support=(
        ("6.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
        ("3.0", "1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
    ),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=("dA = dY, dB = -trunc(a / b) * dY (trunc is flat between its jumps); where the "
              "result is NaN (b = 0 or NaN, a infinite or NaN) both are NaN. Integer inputs: no "
              "gradient."),
    notes=("Floats: C's fmod, exact (the page's formula evaluated literally loses accuracy when "
           "a / b is large), with the dividend's sign (also a zero result: fmod(-4, 2) = -0); a "
           "zero divisor or an infinite dividend gives NaN, an infinite divisor gives a; a FLOAT32 "
           "denormal remainder is flushed. Integers: exact; a zero divisor gives 0 and "
           "INT_MIN % -1 gives 0 (dmljax's choices), never a crash, also under jit."),
)


def _modulus_truncate_int(a, b, signed: bool):
    return lax.rem(a, _safe_divisor(b, signed))  # a % 1 = 0 for the guarded divisors


def _modulus_truncate_slopes(x, y):
    defined = jnp.isfinite(x) & (jnp.abs(y) > 0)  # False for NaN, a zero divisor, inf dividend
    nan = jnp.full_like(x, np.nan)
    return jnp.where(defined, jnp.ones_like(x), nan), jnp.where(defined, -jnp.trunc(x / y), nan)


@operator(ELEMENT_WISE_MODULUS_TRUNCATE)
def element_wise_modulus_truncate(a, b, *, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.element_wise_modulus_truncate(np.array([-7.0, 7.0, -4.0, 1.0], np.float32),
        ...                                      np.array([3.0, -3.0, 2.0, 0.0], np.float32))
        Array([-1.,  1., -0., nan], dtype=float32)
        >>> dmljax.element_wise_modulus_truncate(np.array([-7, 7, 5], np.int32), np.array([3, -3, 0], np.int32))
        Array([-1,  1,  0], dtype=int32)
    """
    dt = DataType.from_dtype(a.dtype)
    return elementwise(lax.rem, a, b, half=allow_half_precision_computation, slopes=_modulus_truncate_slopes,
                       integer=lambda x, y: _modulus_truncate_int(x, y, dt.is_signed))
