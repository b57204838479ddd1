"""Partitioning rules for computations XLA's partitioner cannot split by itself.

Under a sharded input (``jax.jit`` with ``NamedSharding``), XLA splits most of an operator's
work by itself, but not a Pallas kernel (a custom call it knows nothing of), and not a few of its
own primitives (jax 0.10's Shardy gathers the whole operand of ``lax.erf``, ``lax.top_k`` and a
grouped convolution onto every device). ``along_leading_axes`` wraps such a computation in
``jax.experimental.custom_partitioning`` with the rule that its leading axes are independent:
each device runs it on its own slice of them, and every other axis is kept whole (gathered, if a
caller sharded it). Differentiation (``jax.custom_jvp``, through the unwrapped function) and
``jax.vmap`` (``jax.custom_batching.custom_vmap``: the mapped axis is one more leading axis) go
through the wrapper. This module is core: it imports nothing of dmljax's.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import jax
from jax.custom_batching import custom_vmap
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec as P

__all__ = ["along_leading_axes"]


def _rule(operand_ranks: Sequence[int], result_ranks: Sequence[int], lead: int,
          whole: Sequence[int] = ()) -> tuple[str, tuple[str, ...]]:
    """A Shardy rule (einsum-like) whose first ``lead`` factors, b0 .. b{lead-1}, are each
    operand's and result's leading axes (not those of the operands in ``whole``); every other
    axis its own factor, to be replicated."""
    batch = [f"b{i}" for i in range(lead)]
    others: list[str] = []

    def axes(rank, tag, n=lead):
        names = [f"{tag}{j}" for j in range(rank - n)]
        others.extend(names)
        return " ".join(batch[:n] + names)

    ins = ", ".join(axes(r, f"x{k}_", 0 if k in whole else lead) for k, r in enumerate(operand_ranks))
    outs = ", ".join(axes(r, f"y{k}_") for k, r in enumerate(result_ranks))
    return f"{ins} -> {outs}", tuple(others)


def _keep_leading(sharding, rank: int, lead: int):
    """``sharding`` with every axis after the first ``lead`` replicated."""
    spec = tuple(sharding.spec) + (None,) * (rank - len(sharding.spec))
    return NamedSharding(sharding.mesh, P(*spec[:lead], *([None] * (rank - lead))))


def along_leading_axes(fn: Callable, lead: int, whole: Sequence[int] = ()) -> Callable:
    """``fn`` (arrays in, an array or a tuple or list of arrays out), partitioned along the first
    ``lead`` axes of every operand and result, which must be the same sizes everywhere: ``fn``
    treats them as independent (a row-wise kernel, an element-wise function). The operands at the
    positions ``whole`` (a convolution's filter) are not split: every device gets all of them.
    Each device runs ``fn`` on its slice; the other axes stay whole."""
    whole = tuple(whole)

    def partitioned(*args):
        # the constants fn's trace holds (NumPy arrays it builds) become whole operands:
        # custom_partitioning traces a function without constants
        closed = jax.make_jaxpr(fn)(*args)
        shapes = [jax.numpy.shape(c) for c in closed.consts]
        consts = [jax.numpy.asarray(c).reshape(-1) if not s else jax.numpy.asarray(c) for c, s in
                  zip(closed.consts, shapes)]  # a scalar as one element: every operand has an axis in the rule
        every = [*consts, *args]
        kept = tuple(range(len(consts))) + tuple(len(consts) + k for k in whole)
        ranks = [a.ndim for a in every]
        out_shapes = jax.eval_shape(fn, *args)
        leaves, tree = jax.tree.flatten(out_shapes)
        out_ranks = [o.ndim for o in leaves]
        rule, others = _rule(ranks, out_ranks, lead, kept)
        cp = custom_partitioning(lambda *a: jax.core.eval_jaxpr(
            closed.jaxpr, [c.reshape(s) for c, s in zip(a[:len(consts)], shapes)], *a[len(consts):]))
        first = next(k for k in range(len(every)) if k not in kept)
        wide = any(jax.numpy.dtype(a.dtype).itemsize == 8 for a in [*every, *leaves])

        def local(*a):
            # XLA calls the partitioner when it compiles, outside the caller's 64-bit mode:
            # a 64-bit operand needs it back, or the slice's program would narrow it
            with jax.enable_x64(wide or jax.config.jax_enable_x64):
                return jax.tree.leaves(fn(*a[len(consts):]))

        def partition(mesh, arg_shapes, result_shape):
            source = arg_shapes[first].sharding
            arg_shardings = tuple(_keep_leading(source, r, 0 if k in kept else lead) for k, r in enumerate(ranks))
            return mesh, local, [_keep_leading(source, r, lead) for r in out_ranks], arg_shardings

        def infer(mesh, arg_shapes, result_shape):
            source = arg_shapes[first].sharding
            return [_keep_leading(source, r, lead) for r in out_ranks]

        cp.def_partition(partition=partition, infer_sharding_from_operands=infer,
                         propagate_user_sharding=lambda mesh, user_shape: user_shape.sharding,
                         sharding_rule=rule, need_replication_factors=others)
        return jax.tree.unflatten(tree, cp(*every))

    mapped = custom_vmap(partitioned)

    @mapped.def_vmap
    def _vmap(axis_size, in_batched, *args):
        # the mapped axis in front of every operand: one more independent leading axis
        args = [a if b else jax.numpy.broadcast_to(a, (axis_size,) + a.shape) for a, b in zip(args, in_batched)]
        out = along_leading_axes(jax.vmap(fn), lead + 1, whole)(*args)
        return out, jax.tree.map(lambda _: True, out)

    @jax.custom_jvp
    def run(*args):
        return mapped(*args)

    @run.defjvp
    def _jvp(primals, tangents):
        return run(*primals), jax.jvp(fn, primals, tangents)[1]

    return functools.wraps(fn)(run)
