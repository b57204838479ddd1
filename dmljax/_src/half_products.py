"""FLOAT16 products accumulated in FLOAT32 whose gradients are FLOAT16 products: GEMM's FLOAT16
product without half-precision computation, which the recurrent operators' products share.

``half_dot`` is a JAX primitive, not a ``custom_vjp``: it is bilinear, so its JVP is two products
of its own and its transposes (reverse mode) are FLOAT16 products too, each cotangent rounded to
FLOAT16 (the tensors' type) first; forward mode, ``jax.vmap`` and higher derivatives work on it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

__all__ = ["half_dot", "half_dot_dims"]

# The three layouts of a FLOAT16 product over leading batch dimensions, by the dimensions they
# contract: x [..., M, K] with y [..., K, N] ("NN"), with y [..., N, K] ("NT"), x [..., K, M] with
# y [..., K, N] ("TN"). Each one's transposes are products of the three.
_CONTRACT = {"NN": (1, 0), "NT": (1, 1), "TN": (0, 0)}


def half_dot_dims(form: str, nb: int):
    """``lax.dot_general``'s dimension numbers of ``form``'s product over ``nb`` leading batch dimensions."""
    cx, cy = _CONTRACT[form]
    batch = tuple(range(nb))
    return ((nb + cx,), (nb + cy,)), (batch, batch)


def _half_dot_impl(x, y, *, form: str, alpha: float, half: bool):
    """``alpha * x y`` in ``form``'s layout for FLOAT16 ``x`` and ``y``, accumulated in FLOAT32
    (FLOAT16 products are exact in FLOAT32; widening the operands first would make XLA skip the
    tensor cores: 51 TFLOP/s against 686 on the H100), and rounded once to FLOAT16 when ``half``,
    else left in FLOAT32. Rounded to FLOAT16 without Alpha, on NVIDIA GPUs, it is the product with
    a FLOAT16 result: cuBLAS and XLA's Triton GEMMs accumulate FLOAT16 in FLOAT32 and round once
    (the same values; 774 TFLOP/s against 686 with a FLOAT32 result on the H100)."""
    dims = half_dot_dims(form, x.ndim - 2)

    def wide(p, q):
        v = lax.dot_general(p, q, dims, preferred_element_type=np.float32)
        v = v if alpha == 1.0 else np.float32(alpha) * v
        return v.astype(np.float16) if half else v
    if alpha != 1.0 or not half:
        return wide(x, y)
    return lax.platform_dependent(x, y, cuda=lambda p, q: lax.dot_general(p, q, dims), default=wide)


def _half_dot_shape(x, y, *, form: str, alpha: float, half: bool):
    m = x.shape[-1] if form == "TN" else x.shape[-2]
    n = y.shape[-2] if form == "NT" else y.shape[-1]
    return jax.core.ShapedArray(x.shape[:-2] + (m, n), np.float16 if half else np.float32)


def _half_dot_transposes(form: str):
    """The cotangents of x and y from the output's ``ct``, as ``_half_dot`` products: FLOAT16
    operands (GEMM's cotangent holds FLOAT16 values, that of its FLOAT16 output, widened by the
    rounding's transpose where a CTensor is added in FLOAT32, so it goes back to FLOAT16 exactly; a
    recurrent network's gates' cotangent is a FLOAT32 value, rounded once here), accumulated in
    FLOAT32, scaled by Alpha, rounded once to FLOAT16, the inputs' type. JAX's own
    transpose of a FLOAT32-accumulated product takes the FLOAT32 cotangent and widens the other
    operand to FLOAT32, so both backward products would run as FLOAT32 matrix products."""
    def dx(ct, x, y, *, alpha, **_):
        ct = ct.astype(np.float16)
        if form == "NN":
            return _half_dot_p.bind(ct, y, form="NT", alpha=alpha, half=True)  # dY x B^T
        if form == "NT":
            return _half_dot_p.bind(ct, y, form="NN", alpha=alpha, half=True)  # dY x B
        return _half_dot_p.bind(y, ct, form="NT", alpha=alpha, half=True)  # (dY x B^T)^T = B x dY^T

    def dy(ct, x, y, *, alpha, **_):
        ct = ct.astype(np.float16)
        if form == "NN":
            return _half_dot_p.bind(x, ct, form="TN", alpha=alpha, half=True)  # A^T x dY
        if form == "NT":
            return _half_dot_p.bind(ct, x, form="TN", alpha=alpha, half=True)  # (A^T x dY)^T = dY^T x A
        return _half_dot_p.bind(x, ct, form="NN", alpha=alpha, half=True)  # A x dY
    return dx, dy


def _half_dot_lhs(ct, x, y, *, form, **params):
    return _half_dot_transposes(form)[0](ct, x, y, **params)


def _half_dot_rhs(ct, x, y, *, form, **params):
    return _half_dot_transposes(form)[1](ct, x, y, **params)


def _half_dot_batch(args, dims, **params):
    """vmap: the mapped dimension becomes a leading batch dimension of both operands (an
    unmapped operand is broadcast to it)."""
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    x, y = (jnp.broadcast_to(a, (size,) + a.shape) if d is None else jnp.moveaxis(a, d, 0)
            for a, d in zip(args, dims))
    return _half_dot_p.bind(x, y, **params), 0


# A primitive, not a custom_vjp: its JVP is two products of its own (it is bilinear), its
# transposes are the FLOAT16 products above, so jax.grad runs them, and forward mode (jax.jvp,
# jax.jacfwd, jax.linearize, jax.hessian) and vmap work, which a custom_vjp's would not.
_half_dot_p = Primitive("dmljax_half_precision_operand_dot")
_half_dot_p.def_impl(_half_dot_impl)
_half_dot_p.def_abstract_eval(_half_dot_shape)
mlir.register_lowering(_half_dot_p, mlir.lower_fun(_half_dot_impl, multiple_results=False))
ad.defbilinear(_half_dot_p, _half_dot_lhs, _half_dot_rhs)
batching.primitive_batchers[_half_dot_p] = _half_dot_batch


def half_dot(x, y, *, form: str, alpha: float = 1.0, half: bool = False):
    """``alpha * x y`` for FLOAT16 ``x`` [..., M, K] (``form`` "TN": [..., K, M]) and ``y`` in
    ``form``'s layout ("NN" [..., K, N], "NT" [..., N, K], "TN" [..., K, N]) over their leading
    batch dimensions, accumulated in FLOAT32: rounded once to FLOAT16 with ``half``, else FLOAT32.
    Its derivatives are the same products transposed (``_half_dot_transposes``)."""
    return _half_dot_p.bind(x, y, form=form, alpha=float(alpha), half=bool(half))
