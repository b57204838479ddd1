"""Activation operators: each page's record, with its formula right below it."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from dmljax._src.dtypes import DataType
from dmljax._src.numerics import expm1_nonpositive
from dmljax._src.op import operator
from dmljax._src.ops._families import activation_op, elementwise
from dmljax._src.spec import ParamSpec

F32, F16 = DataType.FLOAT32, DataType.FLOAT16

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
           "expm1_nonpositive: exp below -0.35, a Taylor series above; 1 ULP in FLOAT32)."),
)


def _f32(value, dtype):
    return np.asarray(value, np.float32).astype(dtype)


@operator(ACTIVATION_SCALED_ELU)
def activation_scaled_elu(input, *, alpha, gamma, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.activation_scaled_elu(np.array([-1.0, 0.0, 2.0], np.float32))
        Array([-1.1112876,  0.       ,  2.1014   ], dtype=float32)
    """
    # Gamma * (Alpha * exp(x) - Alpha) = (Gamma * Alpha) * expm1(x): one product of constants,
    # taken here, so that XLA's reassociation of constant products can't change the bits
    # between eager and jit. exp and expm1 only ever see min(x, 0): the unselected branch never
    # overflows.
    ca = np.float32(gamma) * np.float32(alpha)

    def f(x):
        negative = jnp.minimum(x, jnp.zeros_like(x))
        return jnp.where(x > 0, _f32(gamma, x.dtype) * x, _f32(ca, x.dtype) * expm1_nonpositive(negative, input.dtype))

    def slope(x):
        return jnp.where(x > 0, _f32(gamma, x.dtype), _f32(ca, x.dtype) * jnp.exp(jnp.minimum(x, jnp.zeros_like(x))))

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope)


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
    def f(x):
        negative = jnp.minimum(x, jnp.zeros_like(x))  # the unselected branch never overflows
        return jnp.where(x >= 0, x, _f32(alpha, x.dtype) * expm1_nonpositive(negative, input.dtype))

    def slope(x):
        return jnp.where(x >= 0, jnp.ones_like(x), _f32(alpha, x.dtype) * jnp.exp(jnp.minimum(x, jnp.zeros_like(x))))

    return elementwise(f, input, half=allow_half_precision_computation, slopes=slope)
