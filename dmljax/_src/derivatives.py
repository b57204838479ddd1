"""Gradient rules written backward, differentiable in both modes.

A DirectML ``*_GRAD`` operator, like most of the gradient rules of SEMANTICS.md section 5, reads
backward: the cotangent of an operator's output in, the cotangents of its inputs out.
``jax.custom_vjp`` takes such a rule but has no forward mode (jax.jvp, jax.jacfwd, jax.linearize,
jax.hessian refuse it). ``backward_rule`` makes the same rule a ``jax.custom_jvp`` instead: the
tangent of the output is the rule's transpose, which JAX derives (``jax.linear_transpose``), and
reverse mode transposes that tangent back into the rule's own operations, so ``jax.grad`` runs
what the rule says (its ties, its FLOAT16 products) and ``jax.jvp`` gives the same derivative.
Second derivatives differentiate the rule itself, so it is written in differentiable code.

A rule reads and writes its cotangents with ``read_cotangent`` and ``write_cotangent``: in the
compute type and rounded once, as ``load`` and ``store`` do, without the flush of FLOAT32
denormals, which is a rule about values (docs/semantics.md section 4: the flush passes gradients
through unchanged) and is not linear, so JAX could not transpose it."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from dmljax._src.dtypes import DataType
from dmljax._src.numerics import compute_dtype


def _differentiable(primal, tangent) -> bool:
    return (not isinstance(tangent, SymbolicZero) and jnp.issubdtype(jnp.result_type(primal), jnp.inexact)
            and jnp.result_type(tangent) != jax.dtypes.float0)


def backward_rule(fun: Callable, fwd: Callable, bwd: Callable) -> Callable:
    """``fun`` (positional arrays in, an array or a tuple of arrays out) with the gradient rule
    ``bwd``, as ``jax.custom_vjp``'s pair would give it, in forward and reverse mode.

    ``fwd(*args)`` returns ``(fun(*args), residuals)``; ``bwd(residuals, ct)`` returns one
    cotangent per argument (``None`` for an argument without one: an integer input, a batch
    index) and must be linear in ``ct``, in operations JAX can transpose (no Pallas kernel, no
    ``custom_vjp``). An input whose tangent is a symbolic zero costs nothing: a ``jax.grad`` by
    one argument transposes only that argument's part of the rule."""

    @jax.custom_jvp
    def run(*args):
        return fun(*args)

    def run_jvp(primals, tangents):
        out, res = fwd(*primals)
        live = [i for i, (p, t) in enumerate(zip(primals, tangents)) if _differentiable(p, t)]
        if not live:
            return out, jax.tree.map(jnp.zeros_like, out)

        def cotangents(ct):
            cts = bwd(res, ct)
            return tuple(jnp.zeros_like(primals[i]) if cts[i] is None else cts[i] for i in live)

        (dout,) = jax.linear_transpose(cotangents, out)(tuple(tangents[i] for i in live))
        return out, dout

    run.defjvp(run_jvp, symbolic_zeros=True)
    return run


def read_cotangent(ct, allow_half: bool = False):
    """A cotangent in the compute type of its tensor's type (FLOAT16 widened unless ``allow_half``)."""
    dt = DataType.from_dtype(ct.dtype)
    return ct.astype(compute_dtype(dt, allow_half))


def write_cotangent(g, data_type: DataType):
    """A gradient computed in the compute type, rounded once to ``data_type``."""
    return g.astype(data_type.dtype)
