"""VALUE_SCALE_2D (a per-channel scale and bias of an image tensor), of the
element_wise_arithmetic family: its page's record, with its formula right below it."""

from __future__ import annotations

import jax.numpy as jnp

from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.errors import Violation
from dmljax._src.numerics import float32_as
from dmljax._src.op import operator
from dmljax._src.ops.factories import elementwise, unary_op
from dmljax._src.spec import ParamSpec, SilentChoice

F32, F16 = DataType.FLOAT32, DataType.FLOAT16

CHANNEL_COUNTS = (1, 3)
"""ChannelCount "must be set to either 1 or 3"."""


def _check_channels(tensors, attrs, level) -> list[Violation]:
    """What the page says beyond the support table: ChannelCount is 1 or 3, it is the size of the
    Bias array, and it matches the Channel dimension of InputTensor { BatchCount, ChannelCount,
    Height, Width }. A ChannelCount left out (None) is the Bias array's length."""
    bias, count = attrs.get("Bias"), attrs.get("ChannelCount")
    if bias is None:  # refused already (or missing)
        return []
    problems = []
    n = len(bias)
    if count is None:
        count = n
        if count not in CHANNEL_COUNTS:
            problems.append(Violation(
                "Bias", "bias", f"has {n} entr{'y' if n == 1 else 'ies'}",
                "ChannelCount (here the Bias array's length) must be either 1 or 3",
                "pass one bias per channel of a 1- or 3-channel NCHW tensor"))
            return problems
    elif count not in CHANNEL_COUNTS:
        problems.append(Violation("ChannelCount", "channel_count", f"is {count}", "must be either 1 or 3"))
        return problems
    elif n != count:
        problems.append(Violation(
            "Bias", "bias", f"has {n} entr{'y' if n == 1 else 'ies'}",
            f"ChannelCount is {count}, the size of the Bias array",
            "pass one bias per channel (or leave channel_count out: it is then len(bias))"))
    info = tensors.get("InputTensor")
    if info is not None and len(info.shape) == 4 and info.shape[1] != count:
        problems.append(Violation(
            "InputTensor", "input", f"has {info.shape[1]} channels (Sizes {list(info.shape)}, "
            "{ BatchCount, ChannelCount, Height, Width })",
            f"ChannelCount is {count}; it must match the size of the Channel dimension"))
    return problems


VALUE_SCALE_2D = unary_op(
    "VALUE_SCALE_2D",
    summary=("Performs an element-wise scale-and-bias function, Output = Scale * Input + Bias. "
             "This operator is similar to using an DML_ELEMENT_WISE_IDENTITY_OPERATOR_DESC with a "
             "scale and bias, except that DML_VALUE_SCALE_2D_OPERATOR_DESC applies a different "
             "bias for each channel, rather than a single bias for the entire tensor."),
    formula="Output = Scale * Input + Bias\n    (Bias[c] for the elements of channel c of { BatchCount, ChannelCount, Height, Width })",
    params=(
        ParamSpec("Scale", "FLOAT", doc="Scale value to be applied to all input values."),
        ParamSpec("ChannelCount", "UINT", default=None, nullable=True,
                  doc=("This field determines the size of the Bias array. This field must be set "
                       "to either 1 or 3, and must also match the size of the Channel dimension of "
                       "the input tensor (None: the length of Bias).")),
        ParamSpec("Bias", "FLOAT[]", doc=("An array of FLOAT values containing the bias term for "
                                          "each channel of the input tensor (a sequence of "
                                          "ChannelCount numbers).")),
    ),
    support=(("1.0", "4", FLOAT32_FLOAT16),),
    in_place=False,
    ulp={F32: 0, F16: 1},
    ulp_half=1,
    gradient=("dX = Scale * dY (the derivative of Scale * x + Bias[c]). Scale and Bias are "
              "attributes: no gradient."),
    notes=("Math: FLOAT32 denormal inputs read as (signed) zero and denormal results are flushed; "
           "FLOAT16 is computed in FLOAT32 and rounded once. The multiply-add may be fused into "
           "one FMA or not, as in DirectML (XLA's CPU backend fuses under jit, its GPU backend "
           "does not): FLOAT32 results are exactly one of the two roundings; a FLOAT16 result "
           "may be 1 ULP from the fused one (a FLOAT32 FMA then a FLOAT16 rounding rounds twice). "
           "ChannelCount may be left out (None), meaning len(Bias) (dmljax's convenience; "
           "DirectML's desc always carries it); given, it must equal len(Bias). A ChannelCount "
           "other than 1 or 3, a Bias of another length or an InputTensor whose Channel "
           "dimension differs is a ValidationError at trace time."),
    extra_checks=(_check_channels,),
    silent=(
        SilentChoice(
            "VALUE_SCALE_2D's ChannelCount in the Python API",
            "optional: None means len(Bias); given, it must equal len(Bias) and the input's C",
            "A desc always carries it; the function can infer it."),
    ),
)


@operator(VALUE_SCALE_2D)
def value_scale_2d(input, *, scale, channel_count, bias, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
        >>> dmljax.value_scale_2d(x, scale=2.0, bias=(0.5, -1.0, 10.0))
        Array([[[[ 0.5,  2.5]],
        <BLANKLINE>
                [[ 3. ,  5. ]],
        <BLANKLINE>
                [[18. , 20. ]]]], dtype=float32)
    """
    def math(g):
        s = float32_as(scale, g.dtype)
        b = float32_as(bias, g.dtype).reshape(1, -1, 1, 1)
        return g * s + b

    def slopes(g):
        return jnp.full_like(g, float32_as(scale, g.dtype))

    return elementwise(math, input, half=allow_half_precision_computation, slopes=slopes)
