"""LP_NORMALIZATION, of the normalization family: each page's record with its formula below it.

Sums are accumulated in FLOAT32 (FLOAT16 inputs widened first) and rounded once."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

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
    notes=(HALF_NOTE +
           " A budget of the axis' size in rounding units (docs/semantics.md#accumulating-operators)."),
    extra_checks=(_lp_checks,),
    silent=(
        SilentChoice(
            "LP_NORMALIZATION's formula and Epsilon's place (the page gives neither)",
            "Input / (sum(|Input|^P) + Epsilon)^(1/P): P = 2 Input / sqrt(sum(Input^2) + Epsilon), P = 1 Input "
            "/ (sum(|Input|) + Epsilon); a slice of zeros gives zeros",
            "As the other normalizations add Epsilon to the Variance, under the root. ONNX's LpNormalization "
            "has no epsilon; ONNX Runtime passes 1e-5."),
        SilentChoice(
            "LP_NORMALIZATION gradient at Input = 0 with P = 1",
            "sign(0) = 0",
            "jax's convention for |x|; [Gradients](semantics.md#gradients)."),
    ),
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

    def run(x):
        xf = load(x, float_reads=True)  # read by float operations alone, the result a quotient
        return store(xf / norm(xf), dt, float_result=True)

    def run_fwd(x):
        return run(x), x

    def run_bwd(x, dy):
        xf, g = load(x), load(dy)
        n = norm(xf)
        y = xf / n
        along = jnp.sum(g * y, axis=axis, keepdims=True)
        s = y if p == 2 else jnp.sign(xf)
        return (store((g - s * along) / n, dt),)

    run = backward_rule(run, run_fwd, run_bwd)
    return flushed_output(run(input), dt)
