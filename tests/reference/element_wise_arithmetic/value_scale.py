"""float64 reference for VALUE_SCALE_2D, transcribed from its page
(dml_value_scale_2d_operator_desc.md in ../shared/spec/operators/) and docs/semantics.md; part of the
element_wise_arithmetic family's references.

Output = Scale * Input + Bias[c] on an NCHW tensor: a multiply-add that a backend may fuse into an
FMA or not (docs/semantics.md#fused-multiply-add), so the reference returns both roundings (and, with FLOAT16 computed
in FLOAT16, the FLOAT16 one)."""

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, elementwise_vjp, read, scale_bias_candidates

# Scale and Bias exact in FLOAT16 too, so that FLOAT16 computation has one candidate more, not a
# different Scale. Three channels: the generated cases' NCHW shapes have C = 3 (Reference.shape).
ATTRS = {"scale": 0.75, "bias": (0.5, -1.25, 2.0)}
ATTRS_COUNTED = {"scale": -1.5, "channel_count": 3, "bias": (-0.5, 0.0, 3.0)}


def value_scale_2d(x, scale, bias, channel_count=None, half=False):
    # Output = Scale * Input + Bias, Bias[c] for channel c (dimension 1 of { N, C, H, W }).
    x_np = np.asarray(x)
    assert x_np.ndim == 4 and x_np.shape[1] == len(bias) and channel_count in (None, len(bias))
    x64 = read(x_np)
    per_channel = [scale_bias_candidates(x64[:, c], (scale, b), x_np.dtype) for c, b in enumerate(bias)]
    cands = [np.stack([cs[i] for cs in per_channel], axis=1) for i in range(len(per_channel[0]))]
    if half:
        s = np.float16(c_float(scale))
        b = np.array([c_float(v) for v in bias], np.float32).astype(np.float16).reshape(1, -1, 1, 1)
        with np.errstate(over="ignore", invalid="ignore"):
            cands.append((x_np.astype(np.float16) * s + b).astype(np.float64))
    return cands


def value_scale_slope(x, scale, bias, channel_count=None, half=False):
    # d/dx (Scale * x + Bias[c]) = Scale.
    return np.full(np.shape(x), c_float(scale))


def nchw_with_three_channels(shape):
    """The generated cases' 4-D shapes with C = 3 (Bias has three entries)."""
    return shape[:1] + (3,) + shape[2:] if len(shape) == 4 else shape


REFERENCES = {
    "DML_OPERATOR_VALUE_SCALE_2D": Reference(
        value_scale_2d,
        attrs=(Attrs(ATTRS, half={**ATTRS, "half": True}),
               Attrs(ATTRS_COUNTED, half={**ATTRS_COUNTED, "half": True})),
        grad=elementwise_vjp(value_scale_slope),
        multiply_add=True,
        shape=nchw_with_three_channels,
    ),
}
