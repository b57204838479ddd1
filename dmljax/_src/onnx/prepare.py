"""An imported model's call split in two: what depends on its parameters alone, computed once,
and the rest, computed on every call.

``OnnxModel.apply`` is one jitted program, so whatever its operators compute from the weights
alone (a quantized filter widened and split, a filter transposed into the layout XLA's CPU
convolution reads, a DequantizeLinear of constant weights) is computed again on every call:
in ONNX Runtime's terms, nothing is pre-packed. For ResNet-18 on the 2-core CPU, those per-call
filter transposes and conversions took 70 ms of its 150 ms (plain) and 245 ms of 400 ms
(QOperator). ``Prepared`` traces the call to a jaxpr, inlines its calls (jit, custom_jvp and
custom_vjp calls, and each ``lax.platform_dependent`` branch of the platform the model runs on),
and marks as prepared every operation with a parameter or a prepared value among its operands and
only those, constants and literals besides, except broadcasts and the large element-wise
operations on them (the flush of a broadcast scalar as large as the activations: ``ENLARGED``);
they would materialize large arrays where a fused program reads a few values, so the call computes
them again from the prepared values under them. Operations on constants alone stay in
the call, where XLA folds them as it does in ``apply`` (a zero point of 0 drops its correction). The prepared values are
computed once by one jitted program and passed to a second, jitted program of the remaining
operations: the same primitives on the same values, so integer results are the same bits, and
float results are the same operations, rounded the same way, except where XLA fuses a multiply
and an add across the split differently (docs/semantics.md#fused-multiply-add).

On the CPU the call's program runs channels last between its convolutions where onnx/layout.py's
rule takes it (the same primitives on transposed arrays).

The inlined custom_jvp and custom_vjp calls lose their derivative rules, so the split is for
evaluation only: ``OnnxModel.__call__`` takes it on concrete inputs and parameters, and
``apply`` (and a call under any JAX transformation) keeps the one program with every rule."""

from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend import core as jcore

from dmljax._src.kernel_seam import switches
from dmljax._src.onnx import layout

ON = frozenset({"cpu"})
"""The backends whose calls take the split: it was measured on the CPU (whose convolutions read
filters transposed, and whose integer products read them widened), and a GPU program holds calls
(Pallas kernels, cuDNN's custom-partitioned attention) that the split's inlining is not checked on;
elsewhere ``model(*inputs)`` is ``apply``."""

ENLARGING = frozenset({"broadcast_in_dim", "iota"})
"""Operations left to the call with the element-wise ones on their results: prepared, a broadcast
would be read from memory where the call's fusion computes it from a few values."""

ENLARGED = 1 << 16
"""An element-wise operation on a broadcast is left to the call where its result has more elements
than this and than every value it is computed from. Measured on the 2-core CPU, the call's time
with such operations in it over its time with them prepared (paired): Magika, whose flushed
broadcasts of 262,144 to 520,192 FLOAT32 elements had been 18 MB of prepared values, 0.86-0.98x;
the two-layer encoders, of 1,024 and 2,048 elements, 0.76-0.88x (QDQ) but 1.14-1.17x (dynamically
quantized)."""

PACKED = 64
"""Prepared values of at most this many elements are passed to the call packed, one array a type."""

_CALLS = frozenset({"jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                    "custom_vjp_call_jaxpr", "remat2"})
"""The calls inlined; ``remat2`` is ``jax.checkpoint`` (an open jaxpr; inlined, it loses its policy
as the custom derivatives their rules): the recurrent operators' network, whose weights' layouts
are then prepared (ONNX's exported LSTM: 0.84-0.96x the call's time, paired)."""


class _Value:
    """A value of the flattened program: known (a parameter, a constant or computed from them
    only) or not; ``value`` holds a constant's or a literal's array."""
    __slots__ = ("aval", "known", "value", "literal")

    def __init__(self, aval, known=False, value=None, literal=False):
        self.aval, self.known, self.value, self.literal = aval, known, value, literal


def _branch(platforms, platform: str):
    """The branch of a ``platform_index``'s ``platforms`` that ``platform`` takes."""
    default = None
    for i, names in enumerate(platforms):
        if names is None:
            default = i
        elif platform in names:
            return i
    return default


def _sub_jaxpr(eqn):
    if eqn.primitive.name not in _CALLS:
        return None
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        sub = eqn.params.get(key)
        if sub is not None:
            return sub
    return None


def _flatten(closed, inputs: list[_Value], platform: str):
    """The primitive operations of ``closed`` in order, calls inlined, as (eqn, operands, results)
    of _Values; and the program's outputs."""
    ops: list[tuple[Any, list[_Value], list[_Value]]] = []

    def inline(jaxpr, consts: list[_Value], args: list[_Value]) -> list[_Value]:
        env: dict[Any, _Value] = dict(zip(jaxpr.constvars, consts))
        env.update(zip(jaxpr.invars, args))

        def read(atom):
            if isinstance(atom, jcore.Literal):
                return _Value(atom.aval, True, atom.val, literal=True)
            return env[atom]

        for eqn in jaxpr.eqns:
            operands = [read(a) for a in eqn.invars]
            name = eqn.primitive.name
            sub = _sub_jaxpr(eqn)
            if name == "platform_index":
                index = _branch(eqn.params["platforms"], platform)
                results = [_Value(eqn.outvars[0].aval, True, np.int32(index), literal=True)]
            elif name == "cond" and operands[0].literal:
                branch = eqn.params["branches"][int(operands[0].value)]
                results = inline(branch.jaxpr, _constants(branch), operands[1:])
            elif sub is not None and hasattr(sub, "jaxpr"):
                results = inline(sub.jaxpr, _constants(sub), operands)
            elif isinstance(sub, jcore.Jaxpr):  # an open jaxpr (jax.checkpoint's): no constants
                results = inline(sub, [], operands)
            else:
                results = [_Value(v.aval) for v in eqn.outvars]
                ops.append((eqn, operands, results))
            for var, value in zip(eqn.outvars, results):
                if not isinstance(var, jcore.DropVar):
                    env[var] = value
        return [read(a) for a in jaxpr.outvars]

    outputs = inline(closed.jaxpr, _constants(closed), inputs)
    return ops, outputs


def _shape(v: _Value) -> tuple[int, ...]:
    return tuple(v.aval.shape if v.aval is not None else np.shape(v.value))


def _elements(v: _Value) -> int:
    """The element count of a value (a constant's from its array)."""
    return math.prod(_shape(v))


def _element_wise(operands: list[_Value], results: list[_Value]) -> bool:
    """Whether an operation is element-wise by its shapes: one result, every operand of its shape
    or a scalar (a widening, a bitcast to narrower elements, or an outer product of size-1
    dimensions is not)."""
    return len(results) == 1 and all(_shape(v) in ((), _shape(results[0])) for v in operands)


def _constants(closed) -> list[_Value]:
    return [_Value(getattr(c, "aval", None), True, c) for c in closed.consts]


def _evaluate(ops, env: dict[int, Any]) -> Callable[[_Value], Any]:
    def read(v: _Value):
        return env[id(v)] if id(v) in env else v.value

    for eqn, operands, results in ops:
        params = eqn.primitive.get_bind_params(eqn.params)
        with eqn.ctx.manager:
            out = eqn.primitive.bind(*[read(v) for v in operands], **params)
        for v, o in zip(results, out if eqn.primitive.multiple_results else [out]):
            env[id(v)] = o
    return read


class Split:
    """One input signature's split: ``prepare(known)`` (jitted) gives the prepared values,
    ``run(prepared, *inputs)`` (jitted) the outputs."""

    def __init__(self, fn: Callable, known, inputs, platform: str):
        closed = jax.make_jaxpr(fn)(known, *inputs)
        count = len(jax.tree.leaves(known))
        values = [_Value(v.aval, i < count) for i, v in enumerate(closed.jaxpr.invars)]
        ops, outputs = _flatten(closed, values, platform)
        # the known values that come from parameters: prepared ones (kept for the call) and
        # enlarged ones (a broadcast, and an element-wise operation on one that is larger than
        # every value it is computed from and than ENLARGED; computed again wherever used, from the
        # prepared values under them), each enlarged one with the element count of its largest source
        prepared_ids = {id(v) for v in values[:count]}
        sources: dict[int, int] = {}
        early, late = [], []
        for op in ops:
            eqn, operands, results = op
            known_op = all(v.known for v in operands) and not eqn.effects
            for v in results:
                v.known = known_op
            if not known_op:
                late.append(op)
                continue
            if not any(id(v) in prepared_ids or id(v) in sources for v in operands):
                # constants alone (left for XLA to fold as in ``apply``: a zero point of 0 drops
                # its correction): computed on both sides, never kept
                early.append(op)
                late.append(op)
                continue
            source = max(sources.get(id(v), _elements(v)) for v in operands)
            early.append(op)
            if eqn.primitive.name in ENLARGING or (_element_wise(operands, results) and any(
                    id(v) in sources for v in operands) and _elements(results[0]) > max(source, ENLARGED)):
                # kept, it would be read from memory where the call's fusion computes it from a
                # few values (the flush of a broadcast scalar: as large as the activations)
                late.append(op)
                sources.update((id(v), source) for v in results)
            else:
                prepared_ids.update(id(v) for v in results)
        needed: dict[int, _Value] = {}
        for v in [v for _, operands, _ in late for v in operands] + outputs:
            if id(v) in prepared_ids:
                needed[id(v)] = v
        self.prepared_values = list(needed.values())
        self.channels_last = layout.taken(late)
        self.early_count, self.late_count = len(early), len(late)
        known_inputs, other_inputs = values[:count], values[count:]
        kept = self.prepared_values
        # the small values packed into one array a type: a call's arguments cost time each (a
        # two-layer encoder had 399 prepared values, most of them scalars)
        large = [v for v in kept if math.prod(v.aval.shape) > PACKED]
        packs: dict[Any, list[_Value]] = {}
        for v in kept:
            if math.prod(v.aval.shape) <= PACKED:
                packs.setdefault(v.aval.dtype, []).append(v)
        packs_list = list(packs.values())
        # channels last, the operands of products passed as the CPU's product reads them
        self.layouts = layout.operand_layouts(late, {id(v) for v in large}) if self.channels_last else {}

        def prepare(known_leaves):
            read = _evaluate(early, {id(v): x for v, x in zip(known_inputs, known_leaves)})
            return ([lax.transpose(read(v), self.layouts[id(v)]) if id(v) in self.layouts else read(v) for v in large],
                    [jnp.concatenate([jnp.reshape(read(v), (-1,)) for v in group]) for group in packs_list])

        def run(prepared, *args):
            env = {id(v): x for v, x in zip(large, prepared[0])}
            for group, pack in zip(packs_list, prepared[1]):
                start = 0
                for v in group:
                    size = math.prod(v.aval.shape)
                    env[id(v)] = lax.slice(pack, (start,), (start + size,)).reshape(v.aval.shape)
                    start += size
            env.update({id(v): x for v, x in zip(other_inputs, args)})
            read = layout.evaluate(late, env, self.layouts) if self.channels_last else _evaluate(late, env)
            return tuple(read(v) for v in outputs)

        self.prepare = jax.jit(prepare)
        self.run = jax.jit(run, compiler_options=layout.compiler_options() if self.channels_last else None)


class Prepared:
    """``fn(known, *inputs)`` split per input signature (shapes and types), the prepared values
    kept while ``known``'s leaves are the same objects (a replaced parameter prepares again)."""

    def __init__(self, fn: Callable):
        self._fn = fn
        self._splits: dict[tuple, tuple[Split, list, list]] = {}

    def __call__(self, known, *inputs):
        """The outputs, or None where the call may not take the split: off the CPU (``ON``), or on
        arrays that are not concrete (``_concrete``)."""
        if jax.default_backend() not in ON or not all(map(_array_like, inputs)):
            return None  # a sequence or an absent optional input takes the one program
        leaves = jax.tree.leaves(known)
        key = (tuple((np.shape(x), x.dtype if hasattr(x, "dtype") else np.result_type(x)) for x in inputs),
               switches())
        entry = self._splits.get(key)
        fresh = entry is None or len(entry[1]) != len(leaves) or any(a is not b for a, b in zip(entry[1], leaves))
        if not _concrete(inputs) or (fresh and not _concrete(leaves)):
            return None
        if fresh:
            split = entry[0] if entry is not None else Split(self._fn, known, inputs, jax.default_backend())
            entry = (split, leaves, split.prepare(leaves))
            self._splits[key] = entry
        split, _, prepared = entry
        return split.run(prepared, *inputs)


def _array_like(x) -> bool:
    """Whether an input is one array (a NumPy or JAX array, or a scalar), not a pytree."""
    return isinstance(x, (jax.Array, np.ndarray, np.generic, bool, int, float, complex))


def _concrete(arrays) -> bool:
    """Whether a call may take the split: concrete arrays (no JAX transformation around the call),
    each on one device (the parameters checked when they are new)."""
    for x in arrays:
        if isinstance(x, jax.core.Tracer):
            return False
        if isinstance(x, jax.Array) and len(x.sharding.device_set) != 1:
            return False
    return True
