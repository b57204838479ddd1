"""A Pallas kernel for CONVOLUTION's FLOAT32 forward on NVIDIA GPUs: true FLOAT32 products with
DirectML's denormal flushes in its loads and stores, where cuDNN's FLOAT32 convolution needs a
flush pass before it and another after.

On the H100 (batch 32, 64 -> 64 channels, 56 x 56, 3 x 3, padding 1, NHWC memory) the kernel
takes 0.234 ms with both flushes, 1.19x lax's speed; cuDNN's true FLOAT32 convolution between
the two flush passes takes 0.312 ms (0.89x).

The kernel is an implicit product over the filter's taps. One program computes BLOCK
consecutive output positions (counted over all the images, row by row), all output channels:
for each tap (i, j), the (BLOCK, C) block of the input at the positions that tap reads (row *
Strides[0] + i * Dilations[0] - StartPadding[0], and likewise for columns; NHWC, so each
position's C channels are contiguous; outside the image masked to zero: the padding) times the
tap's (C, O) filter, accumulated in FLOAT32 by Triton's FLOAT32 product (FMA instructions, never
TF32). The input and filter blocks are flushed as they are loaded, the sums as they are stored.

Exactness: within the operator's budget, not bit for bit: the products are the same FLOAT32
products, summed in another order than cuDNN's (docs/semantics.md#accumulating-operators: the order is the library's).
``CONVOLUTION_TAPS`` says which convolutions take the kernel.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.kernel_seam import Kernel
from dmljax._src.numerics import flush_values
from dmljax._src.window import windows_per_dimension

__all__ = ["CONVOLUTION_TAPS", "convolve_taps", "BLOCK", "WARPS", "STAGES", "CHANNELS", "MAX_WINDOW", "MAX_STRIDE"]

BLOCK = 64
"""Output positions a program. H100, 64 -> 64 channels, 56 x 56, 3 x 3: 64 positions with 8 warps
and 2 stages 0.227 ms; 32 with 4 warps 0.241; 64 with 4 warps 0.277; 128 with 8 warps 0.313 (4
warps: 1.54). Timed at this setting by benchmarks/convolution/convolution.py."""
WARPS = 8
STAGES = 2
"""Triton's pipelining stages of the taps' loop (3: 0.230 ms, 4: 0.257, 1 with 4 warps: 0.480)."""
CHANNELS = (16, 32, 64)
"""Input and output channel counts that take the kernel. H100, batch 32, 3 x 3, NHWC memory, lax's
time over dmljax's: 16 -> 16 at 112 x 112 1.27x, 32 -> 32 at 112 x 112 and 56 x 56 1.13x and
1.12x, 16 -> 64 1.53x, 64 -> 32 1.05x, 64 -> 64 at 28 x 28 1.08x. Every (C, O) tap of the filter
is staged in shared memory whole: 128 channels spilled (1.28 ms against cuDNN's 0.167 at 28 x 28)
and 256 overflowed it (656 KB asked, 232 KB on the H100), where cuDNN's FLOAT32 convolution runs
at 37-44 TFLOP/s anyway. Measured by benchmarks/convolution/convolution.py."""
MAX_WINDOW = 3
"""The largest window side that takes the kernel: cuDNN takes a 5 x 5 FLOAT32 convolution by a
faster algorithm than direct products (H100, 64 -> 64 channels at 56 x 56: 0.347 ms, 59 TFLOP/s
counted as direct products, against this kernel's 0.620). Measured by
benchmarks/convolution/convolution.py."""
MAX_STRIDE = 2
"""The largest stride that takes the kernel (measured: 1 and 2). H100, batch 32, NHWC memory,
lax's time over dmljax's: 64 -> 64 at 56 x 56 with stride 2 1.48x, 32 -> 64 at 112 1.52x,
16 -> 32 at 112 unpadded 1.66x, 64 -> 64 unpadded 1.19x, where cuDNN's path with the flush
passes takes 0.76-0.91x. Measured by benchmarks/convolution/convolution.py."""


def _applies(x_shape, w_shape, dtype, forward: bool, groups: int, strides, dilations, start, end,
               output_padding) -> bool:
    """Whether a convolution can take the kernel: FLOAT32, two spatial dimensions, FORWARD, one
    group, strides of at most MAX_STRIDE, no OutputPadding, a window of more than one element
    and at most MAX_WINDOW a side, input and output channels in CHANNELS, an output of at least
    one element, and fewer than 2^31 elements in and out (int32 offsets)."""
    if np.dtype(dtype) != np.float32 or len(x_shape) != 4 or not forward or groups != 1:
        return False
    n, c, h, w = x_shape
    o, c_w, kh, kw = w_shape
    if max(strides) > MAX_STRIDE or any(output_padding) or c != c_w:
        return False
    if kh * kw == 1 or max(kh, kw) > MAX_WINDOW:
        return False
    if c not in CHANNELS or o not in CHANNELS or min(n, h, w) < 1:
        return False
    out_h, out_w = windows_per_dimension((h, w), (kh, kw), strides, dilations, start, end)
    return min(out_h, out_w) >= 1 and n * c * h * w < 2**31 and n * o * out_h * out_w < 2**31


CONVOLUTION_TAPS = Kernel("convolution", _applies, measured="benchmarks/convolution/convolution.py")


def _kernel(x_ref, w_ref, y_ref, *, total, out_size, h, w, kw, strides, dil, start):
    from jax.experimental import pallas as pl  # imported where a kernel is built: dmljax's import stays light
    from jax.experimental.pallas import triton as pl_triton

    c, o = w_ref.shape[1], w_ref.shape[2]
    g = pl.program_id(0) * BLOCK + jnp.arange(BLOCK, dtype=jnp.int32)  # output positions of all images
    live = g < total
    n, p = g // (out_size[0] * out_size[1]), g % (out_size[0] * out_size[1])
    top = p // out_size[1] * strides[0] - start[0]  # the window's first input row and column
    left = p % out_size[1] * strides[1] - start[1]
    channel = jnp.arange(c, dtype=jnp.int32)[None, :]

    def tap(t, acc):
        r = top + lax.div(t, kw) * dil[0]  # lax's div and rem: jnp's lower to Triton only for arrays
        q = left + lax.rem(t, kw) * dil[1]
        inside = live & (r >= 0) & (r < h) & (q >= 0) & (q < w)
        # each position's input row, in bounds also where masked (the interpreter reads it)
        source = jnp.where(inside, (n * h + r) * w + q, 0)
        at = (jnp.broadcast_to(source[:, None], (BLOCK, c)), jnp.broadcast_to(channel, (BLOCK, c)))
        a = pl_triton.load(x_ref.at[at], mask=jnp.broadcast_to(inside[:, None], (BLOCK, c)), other=0.0)
        return acc + jnp.dot(flush_values(a), flush_values(w_ref[t]), precision=lax.Precision.HIGHEST,
                             preferred_element_type=jnp.float32)

    acc = lax.fori_loop(0, w_ref.shape[0], tap, jnp.zeros((BLOCK, o), jnp.float32))
    # positions past the end are masked (the interpreter's output is padded to whole blocks, so
    # that their indices stay in bounds and apart)
    pl_triton.store(y_ref.at[jnp.broadcast_to(g[:, None], (BLOCK, o)),
                             jnp.broadcast_to(jnp.arange(o, dtype=jnp.int32)[None, :], (BLOCK, o))],
                    flush_values(acc), mask=jnp.broadcast_to(live[:, None], (BLOCK, o)))


def convolve_taps(x: jnp.ndarray, w: jnp.ndarray, strides, dilations, start, end,
                  interpret: bool = False) -> jnp.ndarray:
    """The FORWARD cross-correlation of ``x`` {N, C, H, W} with ``w`` {O, C, KH, KW} (FLOAT32, a
    geometry ``CONVOLUTION_TAPS`` applies to), FLOAT32 denormals of both read as zeros and of the result
    written as zeros: {N, O, out rows, out columns}. The kernel reads NHWC: the transposes here
    cancel against a caller's whose memory is NHWC (XLA drops a transpose of a transpose)."""
    from jax.experimental import pallas as pl

    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    out_h, out_w = windows_per_dimension((h, wd), (kh, kw), strides, dilations, start, end)
    rows = jnp.transpose(x, (0, 2, 3, 1)).reshape(n * h * wd, c)
    taps = jnp.transpose(w, (2, 3, 1, 0)).reshape(kh * kw, c, o)
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=WARPS, num_stages=STAGES)
    total = n * out_h * out_w
    blocks = -(-total // BLOCK)
    kernel = functools.partial(_kernel, total=total, out_size=(out_h, out_w), h=h, w=wd, kw=kw,
                               strides=tuple(strides), dil=tuple(dilations), start=tuple(start))
    out = (blocks * BLOCK if interpret else total, o)
    y = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(out, jnp.float32), grid=(blocks,),
                       in_specs=[pl.BlockSpec(rows.shape, lambda i: (0, 0)),
                                 pl.BlockSpec(taps.shape, lambda i: (0, 0, 0))],
                       out_specs=pl.BlockSpec(out, lambda i: (0, 0)),
                       compiler_params=params, interpret=interpret, name="dmljax_convolution_taps")(rows, taps)
    y = y[:total]
    return jnp.transpose(y.reshape(n, out_h, out_w, o), (0, 3, 1, 2))
