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
A ``*_GRAD`` operator called as an operator flushes its results as every operator does.

``custom_transposed`` is the other way round: a tangent written forward whose transpose is given,
not derived, for a route whose reverse mode must run a fused kernel's own backward pass (cuDNN's
attention), which JAX cannot transpose. ``SavedPullback`` splits a function's pullback into the
residuals its forward pass keeps, so that such a transpose applies the forward pass's own residuals
instead of running the forward again."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero
from jax.extend.core import Primitive
from jax._src import dispatch as _jax_dispatch
from jax.interpreters import ad, batching, mlir

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


def _avals(shapes) -> tuple:
    return tuple(jax.core.ShapedArray(s.shape, s.dtype) for s in shapes)


def custom_transposed(forward: Callable, transpose: Callable, residuals: tuple, linear: tuple) -> tuple:
    """``forward(*residuals, *linear)``, a tuple of arrays linear in ``linear``, whose transpose JAX
    takes as ``transpose(*residuals, *cotangents)`` (one array per ``linear``) instead of
    transposing ``forward``'s operations: a tangent that forward mode evaluates with one formula
    and reverse mode transposes into another, such as a fused kernel's own backward pass.

    Unlike ``jax.custom_derivatives.linear_call``, both functions are differentiable in their
    residuals too (second derivatives differentiate ``forward`` as written, so it and ``transpose``
    must be written in differentiable code) and the call batches under ``jax.vmap``."""
    return tuple(_custom_transposed_p.bind(*residuals, *linear, forward=forward, transpose=transpose,
                                           n_res=len(residuals)))


def _transposed_abstract(*avals, forward, transpose, n_res):
    return _avals(jax.eval_shape(forward, *(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals)))


def _transposed_impl(*args, forward, transpose, n_res):
    return tuple(forward(*args))


def _transposed_transpose(cts, *args, forward, transpose, n_res):
    res, lin = args[:n_res], args[n_res:]
    if any(ad.is_undefined_primal(r) for r in res):
        raise ValueError("custom_transposed: a residual is not linear and cannot be transposed")
    cts = tuple(jnp.zeros(ct.aval.shape, ct.aval.dtype) if type(ct) is ad.Zero else ct for ct in cts)
    # the transpose is again such a call, with ``forward`` as its transpose: transposing twice is the identity
    out = custom_transposed(transpose, forward, tuple(res), cts)
    return [None] * n_res + [o if ad.is_undefined_primal(x) else None for o, x in zip(out, lin)]


def _transposed_jvp(primals, tangents, *, forward, transpose, n_res):
    """Linear in ``linear``: its tangent is the call on theirs; the residuals' tangents go through
    ``forward``'s own derivative."""
    out = custom_transposed(forward, transpose, primals[:n_res], primals[n_res:])
    lin_t = tuple(ad.instantiate_zeros(t) for t in tangents[n_res:])
    tangent = custom_transposed(forward, transpose, primals[:n_res], lin_t)
    if any(type(t) is not ad.Zero for t in tangents[:n_res]):
        res_t = tuple(ad.instantiate_zeros(t) for t in tangents[:n_res])
        extra = jax.jvp(lambda *r: tuple(forward(*r, *primals[n_res:])), primals[:n_res], res_t)[1]
        tangent = tuple(a + b for a, b in zip(tangent, extra))
    return out, tangent


def _transposed_batch(args, dims, *, forward, transpose, n_res):
    """vmap: the same call on the functions vmapped, the mapped axis first (linear operands that
    are not mapped are broadcast to it, so that the transpose's results are mapped like its operands)."""
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    res = [a if d is None else jnp.moveaxis(a, d, 0) for a, d in zip(args[:n_res], dims[:n_res])]
    res_axes = tuple(None if d is None else 0 for d in dims[:n_res])
    lin = [jnp.broadcast_to(a, (size,) + a.shape) if d is None else jnp.moveaxis(a, d, 0)
           for a, d in zip(args[n_res:], dims[n_res:])]
    lin_axes = (0,) * len(lin)
    fwd = jax.vmap(lambda *a: tuple(forward(*a)), in_axes=res_axes + lin_axes)
    out_n = len(jax.eval_shape(fwd, *res, *lin))
    tr = jax.vmap(lambda *a: tuple(transpose(*a)), in_axes=res_axes + (0,) * out_n)
    out = custom_transposed(fwd, tr, tuple(res), tuple(lin))
    return out, (0,) * len(out)


class SavedPullback:
    """``fun``'s pullback (``jax.vjp``) kept as arrays, for a backward pass traced apart from its
    forward one (``custom_transposed``'s transpose, another branch of a conditional).

    ``forward(*xs)`` returns ``fun(*xs)`` and ``saved``, the pullback's residuals that are neither
    an argument nor the result (those the caller has already); ``backward(xs, out, saved, ct)``
    rebuilds the pullback from them and applies it to ``ct``. A pullback is a pytree
    (``jax.tree_util.Partial``) whose leaves are its residuals: the backward pass runs on the
    forward pass's own residuals and does not run it again. ``forward`` is traced before
    ``backward`` (the pytree's structure is its trace's); ``shapes(*xs)`` gives ``saved``'s
    shapes and types without computing it."""

    def __init__(self, fun: Callable):
        self.fun = fun
        self._layout = None  # (the pullback's tree, where each leaf comes from: an argument, the result or saved)

    def forward(self, *xs):
        out, pullback = jax.vjp(self.fun, *xs)
        leaves, tree = jax.tree.flatten(pullback)
        given = (*xs, out)
        where = tuple(next((i for i, x in enumerate(given) if leaf is x), None) for leaf in leaves)
        self._layout = (tree, where)
        return out, [leaf for leaf, w in zip(leaves, where) if w is None]

    def shapes(self, *xs) -> list:
        return jax.eval_shape(self.forward, *xs)[1]

    def backward(self, xs, out, saved, ct):
        if self._layout is None:
            raise RuntimeError("SavedPullback.backward: forward was not traced first")
        tree, where = self._layout
        given, rest = (*xs, out), iter(saved)
        return jax.tree.unflatten(tree, [next(rest) if w is None else given[w] for w in where])(ct)


def tangent_zeros(x):
    """A zero tangent for ``x``: zeros of its type, FLOAT0 for an integer or boolean array."""
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return jnp.zeros(x.shape, x.dtype)
    return np.zeros(x.shape, jax.dtypes.float0)


_custom_transposed_p = Primitive("dmljax_custom_transposed")
_custom_transposed_p.multiple_results = True
_custom_transposed_p.def_impl(_transposed_impl)
_custom_transposed_p.def_abstract_eval(_transposed_abstract)
mlir.register_lowering(_custom_transposed_p, mlir.lower_fun(_transposed_impl, multiple_results=True))
ad.primitive_jvps[_custom_transposed_p] = _transposed_jvp
ad.primitive_transposes[_custom_transposed_p] = _transposed_transpose
batching.primitive_batchers[_custom_transposed_p] = _transposed_batch
# its functions are traced only when it is lowered, where they may hold a call that needs the devices
# to lower (cuDNN's attention is custom-partitioned): jit must lower a program holding it with them
_devices_at_lowering = getattr(_jax_dispatch, "prim_requires_devices_during_lowering", None)
if _devices_at_lowering is not None:
    _devices_at_lowering.add(_custom_transposed_p)
