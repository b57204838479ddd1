"""Element-wise math (powers, exponentials, logarithms, trigonometry): each page's record, with
its formula right below it."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.dtypes import (
    DataType,
)
from dmljax._src.numerics import (
    apply_scale_bias, flush_denormals, load, pow_c99, store,
)
from dmljax._src.op import operator
from dmljax._src.ops._families import (
    SUPPORT_FLOAT_MATH,
    SCALE_BIAS, unary_op,
)
from dmljax._src.spec import ParamSpec

F32, F16, F64 = DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64

# --------------------------------------------------------------------------------------------
ELEMENT_WISE_CONSTANT_POW = unary_op(
    "ELEMENT_WISE_CONSTANT_POW",
    summary=("Raises each element of InputTensor to the power of Exponent, placing the result "
             "into the corresponding element of OutputTensor. Negative bases are supported for "
             "integral exponents, otherwise this operator returns NaN."),
    formula="f(x) = pow(x, Exponent)",
    params=(
        ParamSpec("Exponent", "FLOAT", doc="The exponent that all inputs will be raised to."),
        SCALE_BIAS,
    ),
    support=SUPPORT_FLOAT_MATH,
    ulp={F32: 4, F16: 1},
    ulp_half=4,
    gradient=("dX = Exponent * g(x)^(Exponent - 1) * Scale * dY, with the same pow rules; exactly 0 "
              "for Exponent 0 (also at g(x) = 0). At g(x) = 0: Scale*dY for Exponent 1, 0 for "
              "Exponent > 1, +-inf for Exponent < 1 (sign by parity of Exponent - 1)."),
    notes=("C99 pow special values (0^0 = 1, 0^-1 = inf, (-0)^-1 = -inf, 1^NaN = 1, NaN^0 = 1); "
           "an infinite Exponent counts as an even integer, as in C99; a negative base with a "
           "non-integral Exponent is NaN, -inf included (the page's rule, where C99 gives +inf)."),
)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _constant_pow(x, exponent, scale_bias):
    return pow_c99(apply_scale_bias(x, scale_bias), exponent)


@_constant_pow.defjvp
def _constant_pow_jvp(exponent, scale_bias, primals, tangents):
    (x,), (t,) = primals, tangents
    g = apply_scale_bias(x, scale_bias)
    y = pow_c99(g, exponent)
    if exponent == 0.0:
        return y, jnp.zeros_like(t)
    e1 = float(np.float32(exponent) - np.float32(1.0))
    scale = 1.0 if scale_bias is None else scale_bias.scale
    k = np.asarray(np.float32(exponent) * np.float32(scale), np.float32).astype(x.dtype)
    return y, flush_denormals(k * pow_c99(g, e1)) * t  # the slope is math: denormals flushed


@operator(ELEMENT_WISE_CONSTANT_POW)
def element_wise_constant_pow(input, *, exponent, scale_bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([-2.0, 0.0, 3.0], np.float32)
        >>> dmljax.element_wise_constant_pow(x, exponent=3)
        Array([-8.,  0., 27.], dtype=float32)
        >>> dmljax.element_wise_constant_pow(x, exponent=0.5)
        Array([      nan, 0.       , 1.7320508], dtype=float32)
    """
    dt = DataType.from_dtype(input.dtype)
    x = load(input, allow_half_precision_computation)
    return store(_constant_pow(x, exponent, scale_bias), dt)


