"""CONVOLUTION's BACKWARD direction with strides (a transposed convolution) as forward
convolutions of its output's phases, and the measured rules (``RULE``) of where that form is
taken.

BACKWARD's output element q (along one spatial dimension) sums Input[i] * Filter[k] over the i
and window taps k with i * Strides + k * Dilations = q + StartPadding (the transpose of FORWARD;
OutputPadding lengthens the output). XLA's formula spreads the input out by Strides (an
input-dilated convolution, ``lhs_dilation``) and slides the flipped filter over it, most of its
products being with the spread input's zeros. Split the output by the residue r of q +
StartPadding modulo Strides instead ("phases", the sub-pixel decomposition): the positions of
residue r receive only the taps k with k * Dilations = r modulo Strides, a regular subset of the
window (every Strides / gcd(Strides, Dilations)-th tap) reading the undilated input at
neighbouring positions (Dilations / gcd(Strides, Dilations) apart). So each phase is a FORWARD
convolution of the input with the sub-filter of its taps (reversed: a cross-correlation) at unit
strides, and the output interleaves the phases. In several spatial dimensions a phase is one
residue a dimension, its taps the product of theirs; a phase no tap lands on (a window shorter
than the stride, a dilation sharing a factor with it) is zeros. Three kinds of call
(``phase_kind``), by how the form computes them:

- "one product": every phase gets one tap, all read from the same place (in each strided
  dimension a window as long as the stride, without dilation; 1 in the others): one product over
  the channels of the undilated input (the phases' taps side by side as output channels, group
  by group), and a transpose interleaves it;
- "one convolution": every phase gets as many taps from the same place (in each strided
  dimension a window a multiple of the stride, without dilation): one convolution of the phases'
  sub-filters side by side, and a transpose;
- "stacked" (any other: phases of different tap counts or starts, or none): one convolution for
  each combination of tap counts, its phases sliced apart, stacked with the zeros of the empty
  ones and interleaved.

The convolutions go through the operator's own FORWARD formula (``forward``: groups, the CPU's
taps for few channels a group, the sharded grouped convolution) and the products through
``lax.dot_general`` at its precision (``product``).

Exactness: the input-dilated convolution's products but those with its inserted zeros, FLOAT32
at HIGHEST precision (never TF32), FLOAT16 operands accumulated in ``accumulate`` (FLOAT32 for
the operator's FLOAT16), summed in another order (docs/semantics.md#accumulating-operators: the
order is the library's); where an output element holds one product (a window no longer than the
stride, one channel a group) the bits are the same. Where a direction's derivative takes this
form, it is JAX's of the products, convolutions, slices and transposes: the input's gradient a
strided FORWARD convolution computed phase by phase, the filter's the phases' products with the
cotangent's phases, each at unit strides; where it takes XLA's, the input-dilated convolution's
(the input's gradient one strided convolution). Both are the same sums in another order.

Where the form is taken: ``RULE``, per platform, kind, type and direction (the output, the
input's derivative, the filter's), measured by benchmarks/convolution/transposed.py (the CPU,
paired with the input-dilated convolution) and benchmarks/convolution/resnet50.py (CUDA, beside
lax and torch).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Callable

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.kernel_seam import Kernel, disabled_kernels, forced_kernels

__all__ = ["RULE", "GROUPED_ON_CUDA", "KINDS", "DIRECTIONS", "TYPES", "rule_type", "CONVOLUTION_PHASES", "Phase", "Plan", "plan", "phase_kind", "phases",
           "taken"]

KINDS = ("one product", "one convolution", "stacked")
DIRECTIONS = ("fwd", "bwd_data", "bwd_filter")
"""What a rule entry decides: the output itself (``fwd``), the input's derivative (``bwd_data``: its
tangent, and in reverse mode the transpose of that tangent, the input's gradient) and the
filter's (``bwd_filter``). The operator computes each in its own form: the output by one, its
derivative by the others (``convolution._phases``)."""

_CPU_FORMS = {"one product": "phases", "one convolution": "phases", "stacked": "xla"}

TYPES = ("float32", "float16", "float16 sums")
"""The types a rule entry is for: FLOAT32; FLOAT16 operands with a FLOAT16 result (cuDNN
accumulates in FLOAT32 and rounds once: on CUDA a call without a bias, and every gradient);
FLOAT16 operands with FLOAT32 sums (the output of a call with a bias, which is added to the sums
before the one rounding, and the CPU's FLOAT16 output), whose rule has only the output's entry
(the gradients are FLOAT16 results on CUDA, widened to FLOAT32 on the CPU). ``rule_type``."""

RULE: dict[str, dict[tuple[str, str, str], str]] = {
    "cpu": {(kind, t, d): form for kind, form in _CPU_FORMS.items() for t in TYPES for d in DIRECTIONS
            if t != "float16 sums" or d == "fwd"},
    "cuda": {
        ("one product", "float16", "fwd"): "xla", ("one product", "float16", "bwd_data"): "xla",
        ("one product", "float16", "bwd_filter"): "phases", ("one product", "float16 sums", "fwd"): "phases",
        ("one product", "float32", "fwd"): "phases", ("one product", "float32", "bwd_data"): "phases",
        ("one product", "float32", "bwd_filter"): "phases",
        ("one convolution", "float16", "fwd"): "xla", ("one convolution", "float16", "bwd_data"): "xla",
        ("one convolution", "float16", "bwd_filter"): "xla", ("one convolution", "float16 sums", "fwd"): "phases",
        ("one convolution", "float32", "fwd"): "phases", ("one convolution", "float32", "bwd_data"): "xla",
        ("one convolution", "float32", "bwd_filter"): "xla",
        ("stacked", "float16", "fwd"): "xla", ("stacked", "float16", "bwd_data"): "xla",
        ("stacked", "float16", "bwd_filter"): "phases", ("stacked", "float16 sums", "fwd"): "xla",
        ("stacked", "float32", "fwd"): "phases", ("stacked", "float32", "bwd_data"): "xla",
        ("stacked", "float32", "bwd_filter"): "phases",
    },
}
"""platform -> (the kind of call, ``phase_kind``; the type, ``TYPES``; the direction, ``DIRECTIONS``)
-> "phases" (this form) or "xla" (the input-dilated convolution, and its transposes).

The CPU's, measured by benchmarks/convolution/transposed.py (benchmarks/results/cpu/convolution/
transposed_cpu.md: 2-core AMD EPYC, shared; jax 0.10.2; the phase form's time over the
input-dilated convolution's, median of alternating paired repetitions in one process; forward at
batch 1, 4 and 8, forward and both gradients at batch 1; decoders' upsampling shapes, a depthwise,
a 1-D and a 3-D one), the same form in every direction:

- "one product" (2 x 2 at stride 2: 512 -> 256 channels at 28 x 28, 256 -> 128 at 56 x 56; 2 x 2
  x 2 at stride 2, 64 -> 32 at 16^3): phases. Forward 0.57-0.87x in 2-D (FLOAT32 0.66-0.85,
  FLOAT16 0.57-0.87), 0.01-0.02x in 3-D (XLA's 3-D input-dilated convolution took 0.12-1.4 s);
  with the gradients 0.02-0.07x.
- "one convolution" (4 x 4 at stride 2, padding 1: 256 -> 128 at 32 x 32, 128 -> 64 at 64 x 64;
  1-D window 8 at stride 4, padding 2, 256 -> 128 over 1000; depthwise 4 x 4 at stride 2 over 64
  channels at 56 x 56): phases. Forward 0.39-0.91x (dense 2-D 0.39-0.87, 1-D 0.68-0.91), depthwise
  0.01x (its phases take the CPU's taps, depthwise.py, where XLA's grouped input-dilated
  convolution took 49-700 ms); with the gradients 0.02-0.53x.
- "stacked" (3 x 3 at stride 2, padding 1, OutputPadding 1: 256 -> 128 at 28 x 28, 128 -> 64 at
  32 x 32): XLA. Forward 0.79-1.35x (1.35x at batch 4, FLOAT32): interleaving the phases of
  separate convolutions costs more than it saves against XLA's CPU convolution of the spread
  input; with the gradients 0.30-0.85x, which the forward's losses rule out.

CUDA's, measured by benchmarks/convolution/resnet50.py (``--groups transposed --labels " s2"
--batches 128``; benchmarks/results/h200/convolution/transposed_strided.md: NVIDIA H200, jax
0.11.2, device time; the four decoder shapes of 2 x 2 and 4 x 4 windows at stride 2 and one 3 x 3
with OutputPadding, batch 128, NCHW and NHWC memory; the phase form's time over the
input-dilated form's in each direction, forced apart). The FLOAT16 output with a FLOAT16 result
(a call without a bias) from the run of benchmarks/results/h200/convolution/
transposed_strided_float16.md, where XLA compiles the input-dilated form as cuDNN's transposed
convolution (backward-data), as lax's call: at lax's time (1.00x) at all ten points; the FLOAT16
output as FLOAT32 sums (a call with a bias) from the earlier run, where XLA convolves the spread
input (cuDNN's forward convolution; 0.81 ms against lax's 0.37 at 512 -> 256 channels):

- "one product" (2 x 2): the FLOAT16 result 0.89-1.53x (XLA), the FLOAT16 sums 0.53-0.62x
  (phases), FLOAT32 0.23-0.29x (phases); the filter's gradient 0.33-0.61x, 0.13-0.33x: phases.
  The input's gradient: 0.96-2.56x in FLOAT16 (XLA's is cuDNN's plain strided convolution;
  2.10-2.56x with NHWC memory), so XLA; 0.75-0.82x in FLOAT32, phases.
- "one convolution" (4 x 4, padding 1): the output 1.17-2.43x with a FLOAT16 result (XLA),
  0.29-0.95x as FLOAT16 sums and 0.29-0.35x in FLOAT32 (phases); the input's gradient
  1.40-1.81x, 1.36-1.54x and the filter's 1.01-1.25x, 1.01-1.23x: XLA.
- "stacked" (3 x 3, OutputPadding 1): the output 2.50-3.33x with a FLOAT16 result, 1.46x with
  NCHW memory and 0.69x with NHWC as FLOAT16 sums (0.950 against 0.874 ms together): XLA;
  0.43-0.49x in FLOAT32 (phases); the input's gradient 1.83-2.00x, 1.35-1.42x: XLA; the filter's
  0.52-0.59x, 0.54-0.55x: phases.

A grouped call (GroupCount above 1) takes the phases in every direction on CUDA, whatever its
kind (``GROUPED_ON_CUDA``): the filter's gradient of XLA's grouped input-dilated convolution
failed to compile on the H200 (cuDNN: CUDNN_STATUS_BAD_PARAM, 12 groups of 4 channels, 4 x 4 at
stride 2, FLOAT32 and FLOAT16), where the phases' compiled and gave the exact sums
(tests/gpu/kernels.py convolution_phases). Its speed is not measured."""

GROUPED_ON_CUDA = "phases"
"""What a grouped BACKWARD call with strides takes on CUDA in every direction (RULE's note)."""

@dataclasses.dataclass(frozen=True)
class Phase:
    """The output positions q of one spatial dimension with q + StartPadding = ``residue`` +
    Strides * (M0 + m) (m from 0; M0 is StartPadding // Strides): the ``taps`` window taps that
    land on them are ``first``, ``first + step``, ...; phase element m sums Input[m + offset + u *
    dilation] times tap ``first + step * (taps - 1 - u)``, u from 0 to ``taps`` - 1 (none where
    ``taps`` is 0: zeros)."""

    residue: int
    taps: int
    first: int = 0
    step: int = 1
    offset: int = 0
    dilation: int = 1


@dataclasses.dataclass(frozen=True)
class Plan:
    """One spatial dimension of BACKWARD: the output's ``size``; ``count`` positions of each phase
    computed, interleaved (phase r's m-th at r + Strides * m) and cut from ``skip`` (StartPadding
    modulo Strides) to ``skip + size``; the ``Phase`` of each residue 0 to Strides - 1."""

    size: int
    count: int
    skip: int
    phases: tuple[Phase, ...]


def plan(size: int, window: int, stride: int, dilation: int, start: int, end: int, output_padding: int) -> Plan:
    """One spatial dimension of BACKWARD: output element q sums Input[i] * Filter[k] over i * Strides
    + k * Dilations = q + StartPadding, so the taps k * Dilations = r (modulo Strides) serve the
    positions q + StartPadding = r + Strides * M, tap k reading Input[M - (k * Dilations - r) /
    Strides]."""
    out = (size - 1) * stride + dilation * (window - 1) + 1 - start - end + output_padding
    m0 = start // stride
    count = (start + out - 1) // stride - m0 + 1
    common = math.gcd(stride, dilation)
    phases_ = []
    for r in range(stride):
        taps = [k for k in range(window) if k * dilation % stride == r]
        if not taps:
            phases_.append(Phase(r, 0))
            continue
        last = (taps[-1] * dilation - r) // stride
        phases_.append(Phase(r, len(taps), taps[0], stride // common, m0 - last, dilation // common))
    return Plan(out, count, start % stride, tuple(phases_))


def _kind_of(plans) -> str:
    """How the form computes a call of these ``Plan``s: "one product" where every phase of every
    dimension gets one tap, all read from the same offset (a window as long as the stride,
    without dilation); "one convolution" where they all get as many taps from the same offset
    (a window a multiple of the stride, without dilation); "stacked" otherwise (the phases of
    each combination of tap counts by a convolution, sliced apart and stacked)."""
    if all(len({(p.taps, p.offset) for p in pl.phases}) == 1 and pl.phases[0].taps for pl in plans):
        return "one product" if all(pl.phases[0].taps == 1 for pl in plans) else "one convolution"
    return "stacked"


def phase_kind(x_shape, w_shape, dtype, forward: bool, groups: int, strides, dilations, start, end,
               output_padding) -> str | None:
    """The kind (``KINDS``, ``_kind_of``) of a BACKWARD call with a stride above 1 in FLOAT32 or
    FLOAT16; None for any other call."""
    del groups  # the phases' convolutions keep the call's groups
    if forward or np.dtype(dtype) not in (np.float32, np.float16) or len(x_shape) < 3:
        return None
    if all(s == 1 for s in strides):
        return None
    return _kind_of([plan(*args) for args in zip(x_shape[2:], w_shape[2:], strides, dilations, start, end,
                                                   output_padding)])


def rule_type(dtype, sums: bool) -> str:
    """The ``TYPES`` entry of operands of ``dtype``: ``sums`` where FLOAT16 operands' result is
    asked for as FLOAT32 sums."""
    t = np.dtype(dtype).name
    return "float16 sums" if sums and t == "float16" else t


def _takes(platform: str, *facts, sums: bool = False) -> dict[str, bool]:
    kind = phase_kind(*facts)
    if kind is not None and platform == "cuda" and facts[4] > 1:
        return dict.fromkeys(DIRECTIONS, GROUPED_ON_CUDA == "phases")
    t = rule_type(facts[2], sums)
    return {d: kind is not None and RULE[platform].get((kind, t, d), "xla") == "phases" for d in DIRECTIONS}


def _applies_on_cuda(*facts) -> bool:
    return any(any(_takes("cuda", *facts, sums=sums).values()) for sums in (False, True))


def _runs(*facts) -> bool:
    return phase_kind(*facts) is not None


CONVOLUTION_PHASES = Kernel("convolution_phases", _applies_on_cuda, measured="benchmarks/convolution/resnet50.py",
                            runs=_runs)
"""The form's switch, and CUDA's rule (the seam's ``choose``: where the form is taken in any
direction)."""


def taken(platform: str, *facts, sums: bool = False) -> dict[str, bool]:
    """For each of ``DIRECTIONS``, whether a call of these facts (FLOAT16 operands' result asked
    for as FLOAT32 ``sums`` or not: ``rule_type``) computes it by the phase form when lowered for
    ``platform`` ("cpu" or "cuda"): its ``RULE``, under the seam's switches
    (``use_kernels(False, "convolution_phases")`` turns the form off, on the CPU too;
    ``force_kernels`` takes it in every direction wherever it can run)."""
    name = CONVOLUTION_PHASES.name
    if name in disabled_kernels() or not _runs(*facts):
        return dict.fromkeys(DIRECTIONS, False)
    if name in forced_kernels():
        return dict.fromkeys(DIRECTIONS, True)
    return _takes(platform, *facts, sums=sums)


def phases(x, wt, groups: int, strides, dilations, start, end, output_padding, forward: Callable,
           product: Callable):
    """BACKWARD of ``x`` {N, C, spatial...} with ``wt`` {O, C / groups, window...} (the BACKWARD
    filter as the FORWARD filter of the reverse direction, group by group, not flipped:
    Mode CONVOLUTION's flip done by the caller) by its phases; ``forward(a, b, dilations, pads)``
    is the FORWARD cross-correlation of ``groups`` groups at unit strides, ``pads`` a (start, end)
    pair of non-negative zeros a spatial dimension; ``product(a, b, contracting, batch)`` is
    ``lax.dot_general`` at the operator's precision and accumulation type. {N, O, spatial...}."""
    n, o, nd = x.shape[0], wt.shape[0], x.ndim - 2
    plans = [plan(*args) for args in zip(x.shape[2:], wt.shape[2:], strides, dilations, start, end, output_padding)]
    counts = tuple(p.count for p in plans)
    kind = _kind_of(plans)
    combos = list(itertools.product(*(p.phases for p in plans)))
    if kind == "one product":
        # one tap a phase: a product over the channels, {G, phases, O / G, N, counts...}, a transpose
        # away from the interleave
        y = _product(x, wt, groups, combos, counts, product)
        y = y.reshape((groups,) + tuple(strides) + (o // groups, n) + counts)
        y = jnp.transpose(y, (2 + nd, 0, 1 + nd) + tuple(a for i in range(nd) for a in (3 + nd + i, 1 + i)))
    elif kind == "one convolution":
        # one convolution whose phases all start at the same place: its output channels {G, phases,
        # O / G} are the phases in the interleave's order, a transpose away from it
        y = _convolved(x, wt, groups, combos, counts, forward)
        y = y.reshape((n, groups) + tuple(strides) + (o // groups,) + counts)
        y = jnp.transpose(y, (0, 1, 2 + nd) + tuple(a for i in range(nd) for a in (3 + nd + i, 2 + i)))
    else:
        by_taps: dict[tuple[int, ...], list] = {}
        for combo in combos:
            by_taps.setdefault(tuple(ph.taps for ph in combo), []).append(combo)
        results, empty = {}, []
        for taps, same in by_taps.items():
            if 0 in taps:
                empty += same
                continue
            y = _convolved(x, wt, groups, same, counts, forward)
            lo = [min(c[i].offset for c in same) for i in range(nd)]
            y = y.reshape((n, groups, len(same), o // groups) + y.shape[2:])
            for j, combo in enumerate(same):
                part = y[:, :, j].reshape((n, o) + y.shape[4:])
                at = (0, 0) + tuple(ph.offset - low for ph, low in zip(combo, lo))
                results[tuple(ph.residue for ph in combo)] = lax.slice(
                    part, at, tuple(a + c for a, c in zip(at, (n, o) + counts)))
        some = next(iter(results.values()))  # the residue of every dimension's tap 0 gets taps
        zeros = jnp.zeros(some.shape, some.dtype)
        results.update({tuple(ph.residue for ph in combo): zeros for combo in empty})
        y = jnp.stack([results[r] for r in itertools.product(*(range(s) for s in strides))])
        # {s1 x s2 ..., N, O, C1, C2, ...} -> {N, O, C1, s1, C2, s2, ...}
        y = y.reshape(tuple(strides) + (n, o) + counts)
        y = jnp.transpose(y, (nd, nd + 1) + tuple(a for i in range(nd) for a in (nd + 2 + i, i)))
    y = y.reshape((n, o) + tuple(c * s for c, s in zip(counts, strides)))
    return lax.slice(y, (0, 0) + tuple(p.skip for p in plans), (n, o) + tuple(p.skip + p.size for p in plans))


def _convolved(x, wt, groups: int, combos, counts, forward: Callable):
    """The phases ``combos`` (a ``Phase`` a dimension each, all of the same tap counts) by one
    convolution: {N, G x phases x O / G, counts + the spread of the phases' offsets...}, phase j of
    group g in output channels (g x phases + j) x O / G on, from its offset less the least."""
    nd = x.ndim - 2
    og, k = wt.shape[0] // groups, len(combos)
    first = combos[0]
    lo = [min(c[i].offset for c in combos) for i in range(nd)]
    length = [counts[i] + max(c[i].offset for c in combos) - lo[i] for i in range(nd)]
    # the convolution's output e reads the input at e + lo + u * dilation: the input over that reach
    reach = [_reach(lo[i], length[i] + (first[i].taps - 1) * first[i].dilation, size)
             for i, size in enumerate(x.shape[2:])]
    x = lax.slice(x, (0, 0) + tuple(r[0] for r in reach), x.shape[:2] + tuple(r[1] for r in reach))
    pads = [r[2:] for r in reach]
    taps = [lax.rev(wt[(slice(None), slice(None)) + tuple(
        slice(ph.first, ph.first + ph.step * (ph.taps - 1) + 1, ph.step) for ph in combo)], tuple(range(2, 2 + nd)))
        for combo in combos]
    # the phases' filters side by side within each group: {G, phases, O / G} output channels
    w = jnp.stack(taps).reshape((k, groups, og) + taps[0].shape[1:])
    w = jnp.swapaxes(w, 0, 1).reshape((groups * k * og,) + taps[0].shape[1:])
    return forward(x, w, tuple(ph.dilation for ph in first), pads)


def _product(x, wt, groups: int, combos, counts, product: Callable):
    """The phases ``combos``, one tap each in every dimension (all of them, in the interleave's
    order), as one product over the channels: {G, phases, O / G, N, counts...}. Each phase reads
    the input from the same offset (``_kind_of``)."""
    n, c = x.shape[:2]
    og, k, cg = wt.shape[0] // groups, len(combos), c // groups
    # the input from the offset, as far as the phases read it; zeros beyond it added to the result
    reach = [_reach(combos[0][i].offset, counts[i], size) for i, size in enumerate(x.shape[2:])]
    x = lax.slice(x, (0, 0) + tuple(r[0] for r in reach), x.shape[:2] + tuple(r[1] for r in reach))
    w = jnp.stack([wt[(slice(None), slice(None)) + tuple(ph.first for ph in combo)] for combo in combos])
    w = jnp.swapaxes(w.reshape(k, groups, og, cg), 0, 1)  # {G, phases, O / G, C / G}
    x = x.reshape((n, groups, cg) + x.shape[2:])
    y = product(w.reshape(groups, k * og, cg), x, ((2,), (2,)), ((0,), (1,)))  # {G, phases x O / G, N, ...}
    if any(r[2] or r[3] for r in reach):
        y = lax.pad(y, jnp.zeros((), y.dtype), [(0, 0, 0)] * 3 + [(r[2], r[3], 0) for r in reach])
    return y


def _reach(first: int, length: int, size: int) -> tuple[int, int, int, int]:
    """Positions ``first`` to ``first + length`` - 1 of an axis of ``size`` elements as (the slice's
    start, its stop, the zeros before it, the zeros after it)."""
    start = min(max(first, 0), size)
    stop = max(min(first + length, size), start)
    before = max(0, min(first + length, 0) - first)
    return start, stop, before, length - before - (stop - start)
