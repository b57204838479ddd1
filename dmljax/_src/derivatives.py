"""Gradient rules written backward, differentiable in both modes.

A DirectML ``*_GRAD`` operator, like most of the gradient rules of docs/semantics.md#gradients, reads
backward: the cotangent of an operator's output in, the cotangents of its inputs out.
``jax.custom_vjp`` takes such a rule but has no forward mode (jax.jvp, jax.jacfwd, jax.linearize,
jax.hessian refuse it). ``backward_rule`` makes the same rule a ``jax.custom_jvp`` instead: the
tangent of the output is the rule's transpose, which JAX derives (``jax.linear_transpose``), and
reverse mode transposes that tangent back into the rule's own operations, so ``jax.grad`` runs
what the rule says (its ties, its FLOAT16 products) and ``jax.jvp`` gives the same derivative.
Second derivatives differentiate the rule itself, so it is written in differentiable code.

The rule is traced under ``numerics.gradient_rule``, which passes FLOAT32 denormals unflushed:
the flush is a rule about values (docs/semantics.md#denormals: it passes gradients through
unchanged) and it is not linear, so JAX could not transpose a rule that flushed its cotangent.
A ``*_GRAD`` operator called as an operator flushes its results as every operator does."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from dmljax._src.numerics import gradient_rule


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
        leaves, tree = jax.tree.flatten(out)
        floats = [jnp.issubdtype(leaf.dtype, jnp.inexact) for leaf in leaves]

        def cotangents(*float_cts):
            given = iter(float_cts)
            cts = [next(given) if f else np.zeros(leaf.shape, jax.dtypes.float0) for leaf, f in zip(leaves, floats)]
            grads = bwd(res, jax.tree.unflatten(tree, cts))
            return tuple(jnp.zeros_like(primals[i]) if grads[i] is None else grads[i] for i in live)

        douts = iter(())
        if live:
            with gradient_rule():
                transposed = jax.linear_transpose(cotangents, *(leaf for leaf, f in zip(leaves, floats) if f))
            douts = iter(transposed(tuple(tangents[i] for i in live)))
        tangent = [(next(douts, None) if f else None) for f in floats]
        tangent = [jnp.zeros_like(leaf) if f and t is None else t if f else np.zeros(leaf.shape, jax.dtypes.float0)
                   for leaf, f, t in zip(leaves, floats, tangent)]
        return out, jax.tree.unflatten(tree, tangent)

    run.defjvp(run_jvp, symbolic_zeros=True)
    return run
