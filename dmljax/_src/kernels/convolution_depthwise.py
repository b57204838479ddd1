"""Pallas kernels for CONVOLUTION's FLOAT32 depthwise convolutions on NVIDIA GPUs (GroupCount =
input channels, each group one channel in and a multiplier of channels out), forward and
backward, with DirectML's denormal flushes in their loads and stores.

A depthwise convolution reads and writes as much memory as it computes: XLA's (cuDNN's) FLOAT32
depthwise convolution between a flush pass over the input and another over the output moves the
data twice more (on the H200, batch 128, MobileNetV2's 3 x 3 shapes: 1.15-1.42x lax's time forward
and backward-filter with NCHW memory, 1.58-3.01x with NHWC; backward-data, whose cotangent is not
flushed, at lax's time).

``depthwise_forward``: one program computes a block of BLOCK_POSITIONS output positions (counted
over all the images, row by row) by BLOCK_CHANNELS output channels. For each tap (i, j) of the
window (unrolled) it loads the input at the positions that tap reads (row * Strides[0] + i *
Dilations[0] - StartPadding[0], likewise for columns; NHWC, so each position's channels are
contiguous; outside the image masked to zero: the padding) for each output channel's input channel
(output channel o reads input channel o / multiplier), times the tap's weight of each channel,
added to a FLOAT32 sum: an element-wise multiply-add, no matrix product. The backward-data of a
depthwise convolution at unit strides (one output channel a channel) is the same kernel on the
cotangent with the window reversed and the paddings mirrored.

``depthwise_filter``: the filter's gradient, for each output channel and tap the sum over the
images and output positions of the input at the position the tap reads times the cotangent. One
program sums a chunk of POSITIONS_PER_PROGRAM positions (fewer where the call has fewer;
BLOCK_POSITIONS at a time) for a block of BLOCK_CHANNELS channels into one partial sum a tap, and
XLA adds the chunks' partial sums.

Each kernel flushes what its caller says (``flush``): the operator's output flushes its input,
filter and result; its derivative reads the input and the filter flushed, the cotangent and the
gradients never (docs/semantics.md#gradients), so the filter's gradient flushes the input as it
loads it and the input's gradient flushes nothing (its filter is flushed before, a small pass).

Exactness: the same FLOAT32 products (a multiply-add may be one FMA, whose product is exact),
summed in another order than cuDNN's (docs/semantics.md#accumulating-operators: the order is the
library's): an output of one product is that product rounded once, bit for bit.
``CONVOLUTION_DEPTHWISE``, ``CONVOLUTION_DEPTHWISE_DATA`` and ``CONVOLUTION_DEPTHWISE_FILTER``
say which calls take the kernels in each direction (one switch, ``convolution_depthwise``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.kernel_seam import Kernel
from dmljax._src.numerics import flush_values
from dmljax._src.window import windows_per_dimension

__all__ = ["CONVOLUTION_DEPTHWISE", "CONVOLUTION_DEPTHWISE_DATA", "CONVOLUTION_DEPTHWISE_FILTER",
           "depthwise_forward", "depthwise_filter", "data_geometry", "BLOCK_POSITIONS", "BLOCK_CHANNELS", "WARPS",
           "POSITIONS_PER_PROGRAM", "MAX_WINDOW", "MAX_STRIDE", "MIN_STRIDE", "MIN_CHANNELS", "MAX_MULTIPLIER", "BACKWARD_DATA",
           "BACKWARD_FILTER"]

BLOCK_POSITIONS = 64
"""Output positions a program (a power of two). Swept with BLOCK_CHANNELS and WARPS on the H200
(the forward alone, NHWC memory, batch 128, 3 x 3: 32 channels at 112 x 112, 144 at 56 x 56 with
strides 2 and 1, 384 at 14 x 14; 32, 64 or 128 positions and channels, 4 or 8 warps; over lax's
time): this setting 1.12x, 1.49x, 1.29x and 1.33x, the best of the sweep 1.12x, 1.35x, 1.29x and
1.19x (benchmarks/convolution/depthwise_blocks.py; results/h200/convolution/depthwise_blocks.txt)."""
BLOCK_CHANNELS = 32
"""Channels a program (a power of two: 32 FLOAT32 values, 128 contiguous bytes of each NHWC
position; MobileNetV2's 144 channels take five blocks, the last half masked). 64 and 128 were never
the fastest in BLOCK_POSITIONS's sweep."""
WARPS = 4
"""Triton warps a program (BLOCK_POSITIONS's sweep: 8 were the fastest at stride 2 only, 1.35x
against 1.40x with 32 positions)."""
POSITIONS_PER_PROGRAM = 2048
"""Output positions whose products one program of the filter's gradient sums (a multiple of
BLOCK_POSITIONS; batch 128 at 112 x 112: 784 chunks a block of channels). The only setting timed."""
MAX_WINDOW = 5
"""The largest window side the kernels take (each tap is unrolled; 3 x 3 windows timed)."""
MAX_STRIDE = 2
"""The largest stride the kernels take."""
MIN_STRIDE = 1
"""The smallest stride (the largest of the call's) the forward's rule takes: every stride the
kernels run. H200, batch 128, MobileNetV2's 3 x 3 shapes (32 channels at 112 x 112, 144 at 56 x 56
with strides 1 and 2, 384 at 14 x 14, 960 at 7 x 7), the kernel's time over XLA's formula (cuDNN's
depthwise convolution between the flush passes), forced apart: 0.84-0.92x with NCHW memory,
0.47-0.59x with NHWC; over lax's convolution, without DirectML's flushes, 1.05-1.19x and
1.12-1.52x, where XLA's formula took 1.21-1.42x and 1.98-2.96x
(results/h200/convolution/mobilenet_v2_float32_depthwise_kernel.md)."""
MIN_CHANNELS = 16
"""The fewest input channels the rule takes (fewer leave most of a block of BLOCK_CHANNELS
masked; not timed)."""
MAX_MULTIPLIER = 1
"""The largest channel multiplier (output channels per input channel) the rule takes; the kernels
run any (``force_kernels``; not timed)."""
BACKWARD_DATA = False
"""Whether the rule takes the input's gradient (unit strides, no multiplier) by the kernel: no.
XLA's runs at lax's time there (its cotangent is not flushed); the kernel took 1.05x its total
time, 1.16x at worst (H200, the shapes of MIN_STRIDE)."""
BACKWARD_FILTER = False
"""Whether the rule takes the filter's gradient by the kernel, which flushes the input as it
loads it where XLA's pays a flush pass over the input first: no. The kernel took 0.82-0.95x XLA's
time at stride 2 (one shape) but 1.43-4.56x at stride 1 (H200, the shapes of MIN_STRIDE): its
chunks' partial sums a tap, added by XLA, cost more than the flush pass saves."""


def _runs(x_shape, w_shape, dtype, forward: bool, groups: int, strides, dilations, start, end,
          output_padding) -> bool:
    """Where the kernels can run: FLOAT32, two spatial dimensions, FORWARD, GroupCount = input
    channels (each group one channel in, output channels a multiple of it), strides of at most
    MAX_STRIDE, windows of more than one element and at most MAX_WINDOW a side, no
    OutputPadding, an output of at least one element, fewer than 2^31 elements in and out."""
    if np.dtype(dtype) != np.float32 or len(x_shape) != 4 or not forward:
        return False
    n, c, h, w = x_shape
    o, c_w, kh, kw = w_shape
    if groups != c or c_w != 1 or o % c or any(output_padding) or max(strides) > MAX_STRIDE:
        return False
    if kh * kw == 1 or max(kh, kw) > MAX_WINDOW or min(n, h, w) < 1:
        return False
    out_h, out_w = windows_per_dimension((h, w), (kh, kw), strides, dilations, start, end)
    return min(out_h, out_w) >= 1 and n * c * h * w < 2**31 and n * o * out_h * out_w < 2**31


def _applies(*facts) -> bool:
    """The forward's rule: where the kernels run, a stride of at least MIN_STRIDE, at least
    MIN_CHANNELS channels, a multiplier of at most MAX_MULTIPLIER."""
    if not _runs(*facts):
        return False
    x_shape, w_shape, strides = facts[0], facts[1], facts[5]
    return (max(strides) >= MIN_STRIDE and x_shape[1] >= MIN_CHANNELS
            and w_shape[0] // x_shape[1] <= MAX_MULTIPLIER)


def _data_runs(*facts) -> bool:
    """The input's gradient by the forward kernel: unit strides, one output channel a channel."""
    x_shape, w_shape, strides = facts[0], facts[1], facts[5]
    return _runs(*facts) and max(strides) == 1 and w_shape[0] == x_shape[1]


def _data_applies(*facts) -> bool:
    """The input's gradient's rule: BACKWARD_DATA where the forward's rule applies and the kernel runs."""
    return BACKWARD_DATA and _applies(*facts) and _data_runs(*facts)


def _filter_applies(*facts) -> bool:
    """The filter's gradient's rule: BACKWARD_FILTER where the forward's rule applies."""
    return BACKWARD_FILTER and _applies(*facts)


MEASURED = "benchmarks/convolution/resnet50.py"
CONVOLUTION_DEPTHWISE = Kernel("convolution_depthwise", _applies, measured=MEASURED, runs=_runs)
CONVOLUTION_DEPTHWISE_DATA = Kernel("convolution_depthwise", _data_applies, measured=MEASURED, runs=_data_runs)
CONVOLUTION_DEPTHWISE_FILTER = Kernel("convolution_depthwise", _filter_applies, measured=MEASURED, runs=_runs)


def data_geometry(window, dilations, start, end) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (start, end) paddings of the unit-stride FORWARD convolution, by the reversed window,
    that is the input's gradient of a unit-stride one: each side's padding mirrored, span - 1 -
    padding (negative: that much of the cotangent cropped)."""
    spans = [d * (k - 1) + 1 for k, d in zip(window, dilations)]
    return (tuple(s - 1 - a for s, a in zip(spans, start)), tuple(s - 1 - b for s, b in zip(spans, end)))


CLAMP = False
"""Whether the kernels clamp their masked channel indices in bounds on a GPU too, as they must in
Pallas's interpreter: no. A clamped index is no longer a plain range of channels, which Triton
can load as wide vectors (not read off the compiled code). H200, the forward alone over lax's
time (benchmarks/convolution/depthwise_blocks.py's shapes, BLOCK_POSITIONS's setting): clamped
1.85x, 1.63x, 2.08x and 1.86x, the plain range 1.12x, 1.49-1.54x, 1.29-1.30x and 1.33-1.34x
(two runs)."""


def _compiler_params(interpret: bool):
    if interpret:
        return None
    from jax.experimental.pallas import triton as pl_triton  # imported where a kernel is built: dmljax's import stays light

    return pl_triton.CompilerParams(num_warps=WARPS, num_stages=1)


def _reads(g, live, *, out_size, h, w, strides, start):
    """Each output position's image, its window's first input row and column."""
    n, p = g // (out_size[0] * out_size[1]), g % (out_size[0] * out_size[1])
    return n, p // out_size[1] * strides[0] - start[0], p % out_size[1] * strides[1] - start[1]


def _tap_rows(n, top, left, live, i, j, *, h, w, dil):
    """The input rows (NHWC: one a position) that tap (i, j) reads, in bounds also where masked
    (the interpreter reads them), and where they lie inside the image."""
    r, q = top + i * dil[0], left + j * dil[1]
    inside = live & (r >= 0) & (r < h) & (q >= 0) & (q < w)
    return jnp.where(inside, (n * h + r) * w + q, 0), inside


def _forward_kernel(x_ref, w_ref, y_ref, *, total, outputs, out_size, h, w, window, strides, dil, start,
                    multiplier, flush, clamp):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as pl_triton

    bp, bc = BLOCK_POSITIONS, BLOCK_CHANNELS
    g = pl.program_id(0) * bp + jnp.arange(bp, dtype=jnp.int32)  # output positions of all images
    o = pl.program_id(1) * bc + jnp.arange(bc, dtype=jnp.int32)  # output channels
    live, open_ = g < total, o < outputs
    # channels past the end: masked; clamped in bounds only for the interpreter, which reads them
    # (CLAMP: the plain range measured faster on a GPU)
    channel = jnp.where(open_, o, 0) if clamp else o
    source_channel = (channel // multiplier if multiplier > 1 else channel)[None, :]
    n, top, left = _reads(g, live, out_size=out_size, h=h, w=w, strides=strides, start=start)
    read_x, read_w, write = (flush_values if f else (lambda v: v) for f in flush)
    acc = jnp.zeros((bp, bc), jnp.float32)
    for t in range(window[0] * window[1]):
        rows, inside = _tap_rows(n, top, left, live, t // window[1], t % window[1], h=h, w=w, dil=dil)
        mask = inside[:, None] & open_[None, :]
        a = pl_triton.load(x_ref.at[jnp.broadcast_to(rows[:, None], (bp, bc)), jnp.broadcast_to(source_channel, (bp, bc))],
                           mask=mask, other=0.0)
        k = pl_triton.load(w_ref.at[jnp.full((bc,), t, jnp.int32), channel], mask=open_, other=0.0)
        acc = acc + read_x(a) * read_w(k)[None, :]
    # positions and channels past the end are masked (the interpreter's output is padded to whole
    # blocks, so that their indices stay in bounds and apart)
    pl_triton.store(y_ref.at[jnp.broadcast_to(g[:, None], (bp, bc)), jnp.broadcast_to(o[None, :], (bp, bc))],
                    write(acc), mask=live[:, None] & open_[None, :])


def _rows(x):
    """{N, C, H, W} as NHWC rows {N * H * W, C} (the transposes cancel against a caller's whose
    memory is NHWC: XLA drops a transpose of a transpose)."""
    n, c, h, w = x.shape
    return jnp.transpose(x, (0, 2, 3, 1)).reshape(n * h * w, c)


def _blocks(total: int, block: int) -> int:
    return -(-total // block)


def depthwise_forward(x: jnp.ndarray, w: jnp.ndarray, strides, dilations, start, end,
                      flush=(True, True, True), interpret: bool = False) -> jnp.ndarray:
    """The FORWARD depthwise cross-correlation of ``x`` {N, C, H, W} with ``w`` {C * M, 1, KH, KW}
    (FLOAT32; output channel o reads input channel o / M; a geometry ``_runs`` takes, but paddings
    may be negative: crops): {N, C * M, out rows, out columns}. ``flush``: whether the input's, the
    filter's and the result's FLOAT32 denormals are read or written as zeros."""
    from jax.experimental import pallas as pl

    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    out_h, out_w = (tuple((s + a + b - d * (k - 1) - 1) // t + 1 for s, k, t, d, a, b in
                          zip((h, wd), (kh, kw), strides, dilations, start, end)))
    total = n * out_h * out_w
    grid = (_blocks(total, BLOCK_POSITIONS), _blocks(o, BLOCK_CHANNELS))
    taps = w.reshape(o, kh * kw).T  # {taps, O}: each tap's weights of every channel contiguous
    kernel = functools.partial(_forward_kernel, total=total, outputs=o, out_size=(out_h, out_w), h=h, w=wd,
                               window=(kh, kw), strides=tuple(strides), dil=tuple(dilations), start=tuple(start),
                               multiplier=o // c, flush=tuple(flush), clamp=interpret or CLAMP)
    out = ((grid[0] * BLOCK_POSITIONS, grid[1] * BLOCK_CHANNELS) if interpret else (total, o))
    rows = _rows(x)
    y = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(out, jnp.float32), grid=grid,
                       in_specs=[pl.BlockSpec(rows.shape, lambda i, j: (0, 0)),
                                 pl.BlockSpec(taps.shape, lambda i, j: (0, 0))],
                       out_specs=pl.BlockSpec(out, lambda i, j: (0, 0)),
                       compiler_params=_compiler_params(interpret), interpret=interpret,
                       name="dmljax_convolution_depthwise")(rows, taps)
    return jnp.transpose(y[:total, :o].reshape(n, out_h, out_w, o), (0, 3, 1, 2))


def _filter_kernel(x_ref, dy_ref, out_ref, *, total, chunk_size, outputs, out_size, h, w, window, strides, dil,
                   start, multiplier, flush_input, clamp):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as pl_triton

    bp, bc = BLOCK_POSITIONS, BLOCK_CHANNELS
    taps = window[0] * window[1]
    chunk = pl.program_id(0)
    o = pl.program_id(1) * bc + jnp.arange(bc, dtype=jnp.int32)
    open_ = o < outputs
    channel = jnp.where(open_, o, 0) if clamp else o  # as _forward_kernel's
    source_channel = (channel // multiplier if multiplier > 1 else channel)[None, :]
    read_x = flush_values if flush_input else (lambda v: v)
    wide = (bp, bc)

    def step(s, sums):
        g = chunk * chunk_size + s * bp + jnp.arange(bp, dtype=jnp.int32)
        live = g < total
        n, top, left = _reads(g, live, out_size=out_size, h=h, w=w, strides=strides, start=start)
        dy = pl_triton.load(dy_ref.at[jnp.broadcast_to(jnp.where(live, g, 0)[:, None], wide),
                                      jnp.broadcast_to(channel[None, :], wide)],
                            mask=live[:, None] & open_[None, :], other=0.0)
        out = []
        for t in range(taps):
            rows, inside = _tap_rows(n, top, left, live, t // window[1], t % window[1], h=h, w=w, dil=dil)
            a = pl_triton.load(x_ref.at[jnp.broadcast_to(rows[:, None], wide), jnp.broadcast_to(source_channel, wide)],
                               mask=inside[:, None] & open_[None, :], other=0.0)
            out.append(sums[t] + jnp.sum(read_x(a) * dy, axis=0))
        return tuple(out)

    sums = jax.lax.fori_loop(0, chunk_size // bp, step,
                             tuple(jnp.zeros((bc,), jnp.float32) for _ in range(taps)))
    for t in range(taps):
        pl_triton.store(out_ref.at[jnp.full((bc,), chunk * taps + t, jnp.int32), o], sums[t], mask=open_)


def depthwise_filter(x: jnp.ndarray, dy: jnp.ndarray, window, strides, dilations, start, end,
                     flush_input: bool = True, interpret: bool = False) -> jnp.ndarray:
    """The gradient {O, 1, KH, KW} (``window`` = (KH, KW)) of the FORWARD depthwise
    cross-correlation of ``x`` {N, C, H, W} (O = C * M output channels) by its filter, for the
    cotangent ``dy`` {N, O, out rows, out columns}: for each output channel o and tap, the sum over
    the images and output positions of the input channel o / M at the position the tap reads times
    ``dy``, FLOAT32. ``flush_input``: whether the input's denormals are read as zeros (the
    cotangent's never are, nor the sums')."""
    from jax.experimental import pallas as pl

    n, c, h, wd = x.shape
    _, o, out_h, out_w = dy.shape
    kh, kw = window
    total = n * out_h * out_w
    chunk_size = min(POSITIONS_PER_PROGRAM, _blocks(total, BLOCK_POSITIONS) * BLOCK_POSITIONS)
    chunks = _blocks(total, chunk_size)
    grid = (chunks, _blocks(o, BLOCK_CHANNELS))
    kernel = functools.partial(_filter_kernel, total=total, chunk_size=chunk_size, outputs=o, out_size=(out_h, out_w), h=h, w=wd,
                               window=(kh, kw), strides=tuple(strides), dil=tuple(dilations), start=tuple(start),
                               multiplier=o // c, flush_input=flush_input, clamp=interpret or CLAMP)
    out = (chunks * kh * kw, grid[1] * BLOCK_CHANNELS if interpret else o)
    rows, cot = _rows(x), _rows(dy)
    partial = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(out, jnp.float32), grid=grid,
                             in_specs=[pl.BlockSpec(rows.shape, lambda i, j: (0, 0)),
                                       pl.BlockSpec(cot.shape, lambda i, j: (0, 0))],
                             out_specs=pl.BlockSpec(out, lambda i, j: (0, 0)),
                             compiler_params=_compiler_params(interpret), interpret=interpret,
                             name="dmljax_convolution_depthwise_filter")(rows, cot)
    sums = partial[:, :o].reshape(chunks, kh * kw, o).sum(axis=0)  # the chunks' partial sums, by XLA
    return sums.T.reshape(o, 1, kh, kw)
