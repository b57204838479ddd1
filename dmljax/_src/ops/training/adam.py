"""ADAM_OPTIMIZER, of the training family: the page's record, with its formula below it, line by
line as the page writes it.

M = Beta1 * M + (1 - Beta1) * G;  V = Beta2 * V + (1 - Beta2) * G * G;
Alpha = sqrt(1 - pow(Beta2, T)) / (1 - pow(Beta1, T));  X -= LearningRate * Alpha * M / (sqrt(V) + Epsilon)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32_FLOAT16, UINT32, DataType
from dmljax._src.errors import Violation
from dmljax._src.numerics import load, store
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, PageSlip, ParamSpec, SameDataType, SameSizes, SilentChoice, TensorSpec, table

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
_SAME = ("InputParametersTensor", "InputFirstMomentTensor", "InputSecondMomentTensor", "GradientTensor",
         "OutputParametersTensor", "OutputFirstMomentTensor", "OutputSecondMomentTensor")


def _scalar_step(tensors, attrs, level) -> list[Violation]:
    """"This tensor must be a scalar (that is, all Sizes equal to 1)"."""
    t = tensors.get("TrainingStepTensor")
    if t is not None and any(s != 1 for s in t.shape):
        return [Violation("TrainingStepTensor", "training_step", f"has Sizes {list(t.shape)}",
                          "a scalar: all Sizes equal to 1, {1, 1, 1, 1}")]
    return []


ADAM_OPTIMIZER = OpSpec(
    enum_name=PREFIX + "ADAM_OPTIMIZER",
    summary=("Computes updated weights (parameters) using the supplied gradients, based on the Adam (ADAptive "
             "Moment estimation) algorithm."),
    formula=("M = Beta1 * M + (1.0 - Beta1) * G\nV = Beta2 * V + (1.0 - Beta2) * G * G\n"
             "Alpha = sqrt(1.0 - pow(Beta2, T)) / (1.0 - pow(Beta1, T))\n"
             "X -= LearningRate * Alpha * M / (sqrt(V) + Epsilon)"),
    tensors=(TensorSpec("InputParametersTensor", "input"), TensorSpec("InputFirstMomentTensor", "input"),
             TensorSpec("InputSecondMomentTensor", "input"), TensorSpec("GradientTensor", "input"),
             TensorSpec("TrainingStepTensor", "input"), TensorSpec("OutputParametersTensor", "output"),
             TensorSpec("OutputFirstMomentTensor", "output"), TensorSpec("OutputSecondMomentTensor", "output")),
    support=(table("3.0", InputParametersTensor=("4", FLOAT32_FLOAT16), InputFirstMomentTensor=("4", FLOAT32_FLOAT16),
                   InputSecondMomentTensor=("4", FLOAT32_FLOAT16), GradientTensor=("4", FLOAT32_FLOAT16),
                   TrainingStepTensor=("4", UINT32), OutputParametersTensor=("4", FLOAT32_FLOAT16),
                   OutputFirstMomentTensor=("4", FLOAT32_FLOAT16), OutputSecondMomentTensor=("4", FLOAT32_FLOAT16)),),
    params=(
        ParamSpec("LearningRate", "FLOAT", doc="The step size."),
        ParamSpec("Beta1", "FLOAT", default=0.9,
                  doc="The first moment's exponential decay rate, between 0.0 and 1.0 (default 0.9, the page's typical value)."),
        ParamSpec("Beta2", "FLOAT", default=0.999,
                  doc="The second moment's exponential decay rate, between 0.0 and 1.0 (default 0.999, the page's typical value)."),
        ParamSpec("Epsilon", "FLOAT", default=1e-8,
                  doc="Added to sqrt(V) against a division by zero (default 1e-8, the page's typical value)."),
    ),
    constraints=(SameDataType(_SAME), SameSizes(_SAME)),
    ulp={F32: 4, F16: 1},
    ulp_half=8,
    gradient="none: an optimizer step (its outputs are new parameters and moments, not differentiated).",
    notes=("Returns (OutputParametersTensor, OutputFirstMomentTensor, OutputSecondMomentTensor). "
           "The arithmetic is FLOAT32 (FLOAT16 inputs widened, each "
           "output rounded once), pow(Beta, T) in FLOAT32; M and V are the updated moments the parameter "
           "update uses; its multiply-adds may be fused into FMAs or not "
           "(docs/semantics.md#fused-multiply-add), on which the compiled and op-by-op results may differ in "
           "the last bit."),
    extra_checks=(_scalar_step,),
    page_slip=PageSlip(
        types={"TrainingStepTensor": (("FLOAT32", "FLOAT16"), ("UINT32",))},
        why=("The page's table gives TrainingStepTensor FLOAT32, FLOAT16 (the other rows' types), where its "
             "field's text says it must have data type DML_TENSOR_DATA_TYPE_UINT32, which the record follows.")),
    math=True,
    silent=(
        SilentChoice(
            "ADAM_OPTIMIZER's TrainingStepTensor and defaults",
            "a UINT32 scalar {1, 1, 1, 1} (the field's text), T used as the pseudocode writes it: step 0 gives "
            "Alpha = 0 / 0 and NaN parameters, so count from 1; Beta1, Beta2, Epsilon default to the page's "
            "typical 0.9, 0.999, 1e-8, LearningRate is required; FLOAT32 arithmetic, each output rounded once; "
            "its multiply-adds may be fused into FMAs; no gradient flows through it",
            "The page's table gives TrainingStepTensor FLOAT32, FLOAT16 (the other rows' types) where its text "
            "says UINT32, and says the step \"typically starts at 0\", where its own formula divides 0 by 0."),
    ),
)


@operator(ADAM_OPTIMIZER)
def adam_optimizer(input_parameters, input_first_moment, input_second_moment, gradient, training_step, *,
                   learning_rate, beta1, beta2, epsilon, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x, g = np.full((1, 1, 1, 2), 1.0, np.float32), np.array([[[[0.5, -2.0]]]], np.float32)
        >>> zeros, step = np.zeros_like(x), np.ones((1, 1, 1, 1), np.uint32)
        >>> x, m, v = dmljax.adam_optimizer(x, zeros, zeros, g, step, learning_rate=0.1)
        >>> np.asarray(x).round(6)  # the first step: about LearningRate against each gradient's sign
        array([[[[0.9, 1.1]]]], dtype=float32)
    """
    half = allow_half_precision_computation
    dt = DataType.from_dtype(input_parameters.dtype)
    # an optimizer step is not differentiated: no gradient flows back through it
    x, m, v, g = (load(lax.stop_gradient(t), half)
                  for t in (input_parameters, input_first_moment, input_second_moment, gradient))
    ct = x.dtype
    b1, b2 = np.asarray(beta1, ct), np.asarray(beta2, ct)
    one = np.asarray(1.0, ct)
    m = b1 * m + (one - b1) * g
    v = b2 * v + (one - b2) * g * g
    t = training_step.reshape(()).astype(ct)
    alpha = jnp.sqrt(one - jnp.power(b2, t)) / (one - jnp.power(b1, t))
    x = x - np.asarray(learning_rate, ct) * alpha * m / (jnp.sqrt(v) + np.asarray(epsilon, ct))
    return store(x, dt), store(m, dt), store(v, dt)
