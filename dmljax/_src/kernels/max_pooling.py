"""A Pallas kernel for MAX_POOLING's values of FLOAT16 (N, C, H, W) tensors on NVIDIA GPUs: each
output element gathers its window from the input and keeps the largest, in one pass.

XLA's path (ops/pooling/max_pooling.py) ranks the values by order-preserving integer keys in one
max reduce_window: exact, but for FLOAT16 the keys are 4 bytes an element where
lax.reduce_window's own float max works on 2 (H100, 3 x 3 windows every 2 over 32 x 64 x 112 x
112: the keys 0.0386 ms, 0.83x lax's speed; the kernel 0.0327 ms, 0.98x). Here the values are
compared as they are, with the page's order kept as follows:

- NaN below every number (maxNum: a window's maximum is NaN only when all its elements are), and
  the padding below NaN: a padding position is loaded as NaN, so it is passed over like one, and
  a window lying wholly in the padding (known from its position alone) gives -inf;
- -0 below +0 (ELEMENT_WISE_MAX's order): Triton's float max (maxNum) may answer either zero at a
  tie, so the window's smallest bit pattern is kept beside its maximum, and a zero maximum is +0
  where that pattern is +0's (all zero bits).

Output elements are taken BLOCK at a time in row-major order over (plane, row, column), so a
program's lanes hold consecutive outputs (those past the end of the last block are masked) and
the stores are contiguous; each window position is one gathered load at a fixed offset from the
window's first element, masked where it falls in the padding.

Exactness: bit for bit the XLA path's result, the maximum's own bits (NaN written as the XLA
path writes it): the kernel compares values exactly and mends the zeros' and NaN's order after.
The tests run the kernel in Pallas's interpreter; tests/gpu/kernels.py checks it compiled on a
GPU on windows of NaN, infinities and signed zeros. ``MAX_POOLING_VALUES`` says where the kernel
applies.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.kernel_seam import Kernel
from dmljax._src.numerics import flush_values
from dmljax._src.window import windows_per_dimension

__all__ = ["MAX_POOLING_VALUES", "max_pool_values", "BLOCK", "WARPS", "MAX_WINDOW"]

BLOCK = 256
WARPS = 4
"""Output elements per program, and its warps: two outputs a thread. H100, FLOAT16 3 x 3 windows
every 2 over 32 x 64 x 112 x 112: 0.0327 ms against lax.reduce_window's 0.0321; one output a
thread took 0.0380, four 0.0332 to 0.0412, eight 0.0692. Timed at this setting by
benchmarks/pooling/pooling.py."""
MIN_WINDOW = 5
MAX_WINDOW = 64
"""Windows of MIN_WINDOW to MAX_WINDOW positions take the kernel (one gathered load each,
unrolled). Smaller ones stay with XLA's reduce_window of keys, the faster there (H100, FLOAT16
2 x 2 windows every 2: the keys 0.0228 ms, the kernel 0.0246; 3 x 3: the keys 0.0386, the
kernel 0.0327). Measured by benchmarks/pooling/pooling.py."""
DTYPES = (np.float16,)
"""The types that take the kernel. FLOAT32's integer keys are no wider than its values, and XLA's
path takes the same time as the kernel there (H100, 3 x 3 windows: 0.0464 ms against 0.0462).
Measured by benchmarks/pooling/pooling.py."""



def _applies(shape: tuple[int, ...], dtype, size, strides, dilations, start, end) -> bool:
    """Whether a MAX_POOLING's values can take the kernel: a 4-D tensor of a type in DTYPES, a
    window of MIN_WINDOW to MAX_WINDOW positions, at least one output, and fewer than 2^31
    elements in and out, the output's last block included (int32 offsets)."""
    if len(shape) != 4 or np.dtype(dtype) not in DTYPES:
        return False
    if not MIN_WINDOW <= int(np.prod(size)) <= MAX_WINDOW:
        return False
    pooled = windows_per_dimension(shape[2:], size, strides, dilations, start, end)
    if min(pooled) < 1 or min(shape) < 1:
        return False
    # (lanes run to whole blocks: the last lane's number must fit too)
    return int(np.prod(shape, dtype=np.int64)) < 2**31 and shape[0] * shape[1] * int(np.prod(pooled)) + BLOCK <= 2**31


MAX_POOLING_VALUES = Kernel("max_pooling", _applies, measured="benchmarks/pooling/pooling.py")


def _kernel(x_ref, o_ref, *, planes, spatial, pooled, size, strides, dilations, start, whole_blocks, interpret):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as pl_triton

    (h, w), (oh_n, ow_n) = spatial, pooled
    o = pl.program_id(0) * BLOCK + jax.lax.broadcasted_iota(jnp.int32, (BLOCK,), 0)
    live = o < planes * oh_n * ow_n
    ow = o % ow_n
    oh = (o // ow_n) % oh_n
    plane = o // (ow_n * oh_n)
    r0 = oh * strides[0] - start[0]  # the window's first row and column (may lie in the padding)
    c0 = ow * strides[1] - start[1]
    base = plane * (h * w) + r0 * w + c0
    rows_in = [(r0 + i * dilations[0] >= 0) & (r0 + i * dilations[0] < h) for i in range(size[0])]
    cols_in = [(c0 + j * dilations[1] >= 0) & (c0 + j * dilations[1] < w) for j in range(size[1])]
    nan = np.asarray(np.nan, x_ref.dtype)
    bits = jnp.uint16 if x_ref.dtype == jnp.float16 else jnp.uint32
    # maxNum: Triton's float max on a GPU; Pallas's interpreter takes XLA's max, which returns NaN
    larger = jnp.fmax if interpret else jnp.maximum
    m = low = None
    for i in range(size[0]):
        for j in range(size[1]):
            inside = live & rows_in[i] & cols_in[j]
            at = base + (i * dilations[0] * w + j * dilations[1])
            if interpret:  # a GPU's masked lanes load nothing; the interpreter gathers every lane
                at = jnp.where(inside, at, 0)
            v = pl_triton.load(x_ref.at[at], mask=inside, other=nan)  # the padding: passed over as NaN
            if x_ref.dtype == jnp.float32:  # denormals as zeros of their sign (MAX_POOLING's order)
                v = flush_values(v)
            u = jax.lax.bitcast_convert_type(v, bits)  # +0 is the smallest bit pattern
            m, low = (v, u) if m is None else (larger(m, v), jnp.minimum(low, u))
    # a zero maximum: +0 if the window holds a +0 (float max answers either zero at a tie); NaN
    # as the XLA path writes it (the GPU's max gives its own NaN pattern)
    m = jnp.where((m == 0) & (low == 0), np.zeros((), x_ref.dtype), m)
    m = jnp.where(m != m, np.asarray(np.float32(np.nan), x_ref.dtype), m)
    any_row = functools.reduce(jnp.logical_or, rows_in)
    any_col = functools.reduce(jnp.logical_or, cols_in)
    m = jnp.where(any_row & any_col, m, np.asarray(-np.inf, x_ref.dtype))  # wholly in the padding: -inf
    if whole_blocks:  # every lane has its own slot in this program's block: no store is masked
        o_ref[...] = m
    else:  # lanes past the end are masked (the interpreter's output is padded to whole blocks, so
        # that their indices stay in bounds and apart: it writes a masked lane's old value back)
        pl_triton.store(o_ref.at[o], m, mask=live)


def max_pool_values(x: jnp.ndarray, size, strides, dilations, start, end, interpret: bool = False) -> jnp.ndarray:
    """Each window's maximum of the (N, C, H, W) ``x`` in MAX_POOLING's order, by the kernel
    (``MAX_POOLING_VALUES`` must apply; ``interpret=True`` runs it on any backend)."""
    from jax.experimental import pallas as pl

    n, c = x.shape[:2]
    spatial = tuple(int(s) for s in x.shape[2:])
    pooled = windows_per_dimension(spatial, size, strides, dilations, start, end)
    total = n * c * pooled[0] * pooled[1]
    params = None
    if not interpret:
        from jax.experimental.pallas import triton as pl_triton
        params = pl_triton.CompilerParams(num_warps=WARPS, num_stages=1)
    # Output of whole blocks: each program stores its block. Otherwise each lane stores at its own
    # position, the last block's lanes past the end masked, so that on a GPU the output is exactly
    # ``total`` long and no slice copies it after (in the interpreter it is rounded up to whole
    # blocks). On the H100 the masked store took 1.025x the block store's time where both apply
    # (FLOAT16 3 x 3 windows), hence the two.
    whole_blocks = total % BLOCK == 0
    kernel = functools.partial(_kernel, planes=n * c, spatial=spatial, pooled=pooled, size=tuple(size),
                               strides=tuple(strides), dilations=tuple(dilations), start=tuple(start),
                               whole_blocks=whole_blocks, interpret=interpret)
    flat = x.reshape(-1)
    blocks = pl.cdiv(total, BLOCK)
    out = (blocks * BLOCK if interpret else total,)
    y = pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct(out, x.dtype), grid=(blocks,),
        in_specs=[pl.BlockSpec(flat.shape, lambda i: (0,))],
        out_specs=pl.BlockSpec((BLOCK,), lambda i: (i,)) if whole_blocks else pl.BlockSpec(out, lambda i: (0,)),
        compiler_params=params, interpret=interpret, name="dmljax_max_pool")(flat)
    return y[:total].reshape((n, c) + pooled)
