"""Fake quantization for training: ``quantize_dequantize``, a composition of two DirectML operators
with a straight-through gradient. It is not a DirectML operator (it has no record and no
``DML_OPERATOR_*``): its values are ELEMENT_WISE_DEQUANTIZE_LINEAR(ELEMENT_WISE_QUANTIZE_LINEAR(x))
bit for bit, and only its gradient is its own."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.dtypes import DataType
from dmljax._src.linear_quantization import divide, integer_range, unsaturated_values
from dmljax._src.numerics import is_nan, load
from dmljax._src.ops.quantization.dequantize_linear import element_wise_dequantize_linear
from dmljax._src.ops.quantization.quantize_linear import element_wise_quantize_linear

__all__ = ["quantize_dequantize", "SCALE_GRADIENTS"]

SCALE_GRADIENTS = ("none", "lsq")
"""The scale gradients ``quantize_dequantize`` offers: none (the scale is a constant of the
quantization), or LSQ's (Esser et al., "Learned Step Size Quantization", 2020)."""


def quantize_dequantize(input, scale, zero_point=None, data_type=None, *, scale_gradient="none",
                        allow_half_precision_computation=False, feature_level=None):
    """Fake quantization: ``element_wise_dequantize_linear(element_wise_quantize_linear(input))``,
    with the straight-through estimator as its gradient. A composition for quantization-aware
    training, not a DirectML operator.

    Its value is the two DirectML operators' in turn, bit for bit::

        q = clamp(round(input / scale) + zero_point, Min, Max)     ELEMENT_WISE_QUANTIZE_LINEAR
        output = (q - zero_point) * scale                           ELEMENT_WISE_DEQUANTIZE_LINEAR

    (their records say how each step rounds), so a model trained through it computes what the
    two operators compute at inference. The gradient is not the formula's (round's derivative is
    0 almost everywhere) but the straight-through estimator's:

    - dInput = dY where ``round(input / scale) + zero_point`` lies in [Min, Max] before the
      saturation (both ends included), 0 where it saturates or is NaN (a NaN input, or 0 / 0);
      an INT32 input gets float0, as every integer input;
    - dScale, with ``scale_gradient="none"`` (the default): 0, the scale a constant of the
      quantization; with ``"lsq"``, LSQ's rule (Esser et al. 2020): dY * (round(v) - v) inside,
      with v = input / scale as the forward pass divides it, dY * (Min - zero_point) where the
      value saturates at Min (NaN included) and dY * (Max - zero_point) at Max. LSQ's gradient
      scale 1 / sqrt(N * Max) is the caller's to apply (it depends on the layer);
    - the zero point is an integer: float0.

    Args:
        input: FLOAT32, FLOAT16 or INT32, as ELEMENT_WISE_QUANTIZE_LINEAR takes it.
        scale: the scale, of the input's DataType (FLOAT32 for an INT32 input), broadcast to the
            input's shape for a per-axis or per-block quantization (jnp.broadcast_to).
        zero_point: INT8 or UINT8, or None (0, from DML_FEATURE_LEVEL_6_2 on).
        data_type: the quantized DataType, INT8 or UINT8 (None: the zero point's, else UINT8).
        scale_gradient: "none" or "lsq" (static).
        allow_half_precision_computation: as the two operators take it.
        feature_level: as the two operators take it; their ValidationErrors name them.

    Returns:
        The dequantized values, of the scale's DataType.

    Example:
        >>> import numpy as np, jax, dmljax
        >>> x = np.array([-1.0, 0.26, 0.3, 2.0], np.float32)
        >>> s, z = np.full(4, 0.1, np.float32), np.full(4, 0, np.int8)
        >>> dmljax.quantize_dequantize(x, s, z)
        Array([-1. ,  0.3,  0.3,  2. ], dtype=float32)
        >>> jax.grad(lambda v: dmljax.quantize_dequantize(v, s, z).sum())(x * 10)  # 20 / 0.1 saturates
        Array([1., 1., 1., 0.], dtype=float32)
    """
    if scale_gradient not in SCALE_GRADIENTS:
        raise ValueError(f"quantize_dequantize: scale_gradient is {scale_gradient!r}; one of "
                         f"{', '.join(map(repr, SCALE_GRADIENTS))}")
    name = None if data_type is None else DataType.parse(data_type).name
    q = element_wise_quantize_linear(input, scale, zero_point, output_data_type=name,
                                     allow_half_precision_computation=allow_half_precision_computation,
                                     feature_level=feature_level)
    y = element_wise_dequantize_linear(q, scale, zero_point,
                                       allow_half_precision_computation=allow_half_precision_computation,
                                       feature_level=feature_level)
    dt = DataType.from_dtype(np.dtype(q.dtype))
    return _straight_through(dt, scale_gradient, allow_half_precision_computation)(input, scale, zero_point, y)


@functools.lru_cache(maxsize=None)
def _straight_through(data_type: DataType, scale_gradient: str, half: bool):
    """``(x, scale, zero_point, y) -> y`` whose derivative is the straight-through estimator's
    for a quantization to ``data_type`` (``y``, the two operators' result, computed outside it so
    that they read concrete arguments' values; its own tangent is not used)."""

    @jax.custom_jvp
    def passed(x, scale, zero_point, y):
        return y

    @passed.defjvp
    def straight_through(primals, tangents):
        x, scale, zero_point, y = primals
        dx, dscale, _, _ = tangents
        lo, hi = integer_range(data_type)
        r = unsaturated_values(x, scale, zero_point, allow_half=half)
        inside = (r >= lo) & (r <= hi)  # False for NaN
        dy = jnp.zeros(y.shape, y.dtype)
        if jnp.issubdtype(x.dtype, jnp.floating):
            dy = jnp.where(inside, dx.astype(y.dtype), dy)
        if scale_gradient == "lsq":
            ct = r.dtype
            zp = jnp.zeros((), ct) if zero_point is None else zero_point.astype(ct)
            value = x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(np.float32)
            v = divide(load(value, half).astype(ct), load(scale, half).astype(ct))
            clipped = jnp.where(r > hi, np.asarray(hi, ct) - zp, np.asarray(lo, ct) - zp)
            term = jnp.where(inside, jnp.round(v) - v, clipped)
            term = jnp.where(is_nan(term), jnp.zeros((), ct), term)
            dy = dy + (term * dscale.astype(ct)).astype(y.dtype)
        return y, dy

    return passed
