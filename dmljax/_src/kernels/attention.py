"""cuDNN's fused attention (``jax.nn.dot_product_attention(..., implementation="cudnn")``) for
MULTIHEAD_ATTENTION and MULTIHEAD_ATTENTION1 on NVIDIA GPUs, where it can express the call.

cuDNN computes the scores in FLOAT32 from FLOAT16 operands, the softmax in FLOAT32, rounds the
probabilities to FLOAT16 for the second product and accumulates it in FLOAT32: the blockwise XLA
formula's arithmetic (ops/attention/multihead_attention.py), within the operator's budget, in
another order. It takes no additive mask without a [sequence, sequence] bias tensor, and its
sequence lengths exclude keys where DirectML adds MaskFilterValue: a KEY_SEQUENCE_LENGTH mask takes
it where a runtime check shows the two agree (``_fused`` there), calls with another mask, a
relative position bias or past sequence lengths stay with XLA. ``ATTENTION_CUDNN`` says where it
applies; benchmarks/attention/attention.py times both paths.
"""

from __future__ import annotations

import contextlib

import jax
import numpy as np

from dmljax._src.kernel_seam import Kernel

__all__ = ["ATTENTION_CUDNN", "cudnn_attention", "HEAD_SIZES"]

HEAD_SIZES = (64, 128)
"""Head sizes the fused kernel is taken for (the benchmark's; cuDNN's flash attention supports
multiples of 8 up to 128 and 256 on newer versions)."""


def _applies(dtype, head_size: int, value_head_size: int, plain: bool, half: bool, gpu: bool) -> bool:
    """FLOAT16 computed in FLOAT32 (DirectML's default), equal query and value head sizes the kernel
    takes, no mask / relative position bias / past sequence lengths (``plain``), a CUDA backend."""
    return (gpu and plain and not half and np.dtype(dtype) == np.float16 and head_size == value_head_size
            and head_size in HEAD_SIZES)


def _runs(dtype, head_size: int, value_head_size: int, plain: bool, half: bool, gpu: bool) -> bool:
    """Where ``force_kernels`` takes the route on any backend: off CUDA its program holds only the
    blockwise formula (``Route.run``'s platform choice), so the CPU tests the route's derivatives."""
    return _applies(dtype, head_size, value_head_size, plain, half, True)


ATTENTION_CUDNN = Kernel("attention_cudnn", _applies, measured="benchmarks/attention/attention.py", runs=_runs)


def cudnn_attention(q, k, v, scale: float, key_lengths=None):
    """q [B, S, H, D], k and v [B, T, Hkv, D] (FLOAT16, the layout cuDNN reads): softmax(scale q k^T) v,
    cuDNN's own FLOAT16 result [B, S, H, D], over each batch's first ``key_lengths`` (INT32 [B], 1 to
    T) keys where given. Off CUDA, where ``Route.run`` traces this branch without lowering it
    (``force_kernels`` on the CPU), JAX's XLA implementation of the same call stands in: cuDNN is
    looked for when it is traced."""
    gpu = jax.default_backend() == "gpu"
    with contextlib.nullcontext() if gpu else jax.numpy_dtype_promotion("standard"):  # the stand-in mixes types
        return jax.nn.dot_product_attention(q, k, v, scale=float(scale), key_value_seq_lengths=key_lengths,
                                            implementation="cudnn" if gpu else "xla")
