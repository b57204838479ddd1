"""CONVOLUTION without its unit spatial dimensions: a convolution of fewer spatial dimensions,
and the measured rules (``RULE``) of where that form is taken.

A spatial dimension whose input is one element, whose window is one element and which has no
padding and no OutputPadding has one output element in either direction (FORWARD: (1 - 1) /
Strides + 1; BACKWARD: (1 - 1) x Strides + 1), and its one product per input channel and tap of
the other dimensions is Input[..., 0, ...] * Filter[..., 0, ...] whatever its Strides and
Dilations: dropping it from the input, the filter and the geometry (a reshape of each) gives a
convolution of one spatial dimension fewer whose output, reshaped, is the same. Such dimensions
are what an exporter leaves when it writes a 1-D convolution as a 2-D one ({N, C, H, 1} with a
K x 1 window: Magika's file-type classifier; {N, C, 1, W} with 1 x K: Silero VAD, RapidOCR's
recogniser).

The kind of a call (``squeeze_kind``) is the pattern of its spatial dimensions, the kept ones
"K" and the unit ones "1" ("K x 1": the last of two dropped). XLA's CPU backend runs a 2-D or 3-D
convolution through YNNPACK and a 1-D one through Eigen's spatial convolution, which differ by
shape: YNNPACK's 2-D convolution of an {N, H, 1, C} input with a K x 1 window took 2-3x Eigen's
1-D convolution of the same sums.

Exactness: the same products as the convolution's (FLOAT32 at HIGHEST precision, never TF32;
FLOAT16 operands accumulated in ``accumulate``), summed in the lower-rank convolution's order
(docs/semantics.md#accumulating-operators: the order is the library's). The derivatives are JAX's
of the reshapes and the lower-rank convolution.

Where the form is taken: ``RULE``, per platform and kind, measured by
benchmarks/convolution/squeezed.py (the CPU, paired with the convolution as written).
"""

from __future__ import annotations

import itertools

import numpy as np

from dmljax._src.kernel_seam import Kernel, disabled_kernels, forced_kernels

__all__ = ["RULE", "KINDS", "CONVOLUTION_SQUEEZED", "unit_dimensions", "squeeze_kind", "squeezed_on_cpu"]

KINDS = tuple(" x ".join(p) for d in (2, 3) for p in itertools.product("K1", repeat=d) if "K" in p and "1" in p)
"""The patterns of two and three spatial dimensions with at least one kept ("K") and one unit ("1")."""

RULE: dict[str, dict[tuple[str, str], str]] = {
    "cpu": {**{(kind, t): "squeezed" for kind in KINDS for t in ("float32", "float16")},
            ("1 x K", "float32"): "xla", ("1 x K", "float16"): "xla", ("K x K x 1", "float16"): "xla"},
    "cuda": {(kind, t): "xla" for kind in KINDS for t in ("float32", "float16")},
}
"""platform -> (the kind of call, ``squeeze_kind``; the operands' type) -> "squeezed" (this form) or
"xla" (the convolution as written).

The CPU's, measured by benchmarks/convolution/squeezed.py (benchmarks/results/cpu/convolution/
squeezed_cpu.md: 2-core Xeon, shared, load averages 2.8-4.9; jax 0.10.2; the squeezed form's time
over the written convolution's through dmljax.convolution, median of alternating paired repetitions
in one process; forward at batch 1 and 4, forward and both gradients at batch 1):

- "K x 1" (Magika's 256 -> 512 channels over 512 x 1 with a 5 x 1 window; 128 -> 128 over 1024,
  3 x 1, padding 1; 64 -> 64 over 4000, 9 x 1, strides 2; a 1 x 1 window, 128 -> 256; a depthwise
  31 x 1; a BACKWARD 8 x 1 at strides 4): squeezed. Forward 0.41-0.79x where a group has many
  channels (Magika's 0.42-0.48x: XLA's CPU backend runs the 2-D one through YNNPACK, the 1-D one
  through Eigen), 0.98-1.07x for the depthwise one (the taps either way) and the BACKWARD one (its
  phases); with the gradients 0.92-1.04x.
- "1 x K" (Silero VAD's 129 -> 128 and 128 -> 64 over 1 x 4 with 1 x 3 windows and its 1 x 256
  window at strides 128, RapidOCR's recogniser's 480 -> 60 over 1 x 40 with 1 x 3 and 60 -> 120 with
  1 x 1, 256 -> 512 over 1 x 512 with 1 x 5): XLA. FLOAT32 forward 0.81-1.22x (geometric mean
  0.98: a gain for the large one alone), FLOAT16 0.78-1.52x (1.2-1.5x for Silero's small ones: XLA's
  2-D convolution of one row does not lose to the 1-D one as K x 1 does).
- The three-dimensional patterns (64 -> 64 over 28 x 28 with a 3 x 3 window and a unit dimension
  first, between or last; 256 -> 256 over 512 with a window of 5 and two unit dimensions): squeezed.
  Forward 0.22-0.31x with one unit dimension (a 2-D convolution left), 0.51-0.67x with two; with the
  gradients 0.91-1.08x, but FLOAT16 "K x K x 1", XLA: its one gradient point took 1.10x (quartiles
  0.88-1.29, at load 3.9), at the rule's limit of 1.1.

CUDA's: the convolution as written, not measured."""


def unit_dimensions(x_shape, w_shape, start, end, output_padding) -> tuple[int, ...]:
    """The spatial dimensions (counted from 0) of one input element, a one-element window, no
    padding and no OutputPadding: those with one output element, which the form drops."""
    return tuple(i for i, (s, k, a, b, o) in enumerate(zip(x_shape[2:], w_shape[2:], start, end, output_padding))
                 if s == 1 and k == 1 and a == 0 and b == 0 and o == 0)


def squeeze_kind(x_shape, w_shape, dtype, forward: bool, groups: int, strides, dilations, start, end,
                 output_padding) -> str | None:
    """The kind (``KINDS``) of a FLOAT32 or FLOAT16 call with some but not all of its spatial
    dimensions unit (``unit_dimensions``); None for any other call."""
    del forward, groups, strides, dilations  # a unit dimension has one output element either way
    if np.dtype(dtype) not in (np.float32, np.float16):
        return None
    unit = unit_dimensions(x_shape, w_shape, start, end, output_padding)
    nd = len(x_shape) - 2
    if not unit or len(unit) == nd:
        return None
    return " x ".join("1" if i in unit else "K" for i in range(nd))


def _rule(platform: str):
    def applies(*facts) -> bool:
        kind = squeeze_kind(*facts)
        return kind is not None and RULE[platform].get((kind, np.dtype(facts[2]).name), "xla") == "squeezed"
    applies.__name__ = applies.__qualname__ = f"applies_on_{platform}"
    return applies


def _runs(*facts) -> bool:
    return squeeze_kind(*facts) is not None


CONVOLUTION_SQUEEZED = Kernel("convolution_squeezed", _rule("cuda"), measured="benchmarks/convolution/squeezed.py",
                              runs=_runs)
"""The form's switch, and CUDA's rule (the seam's ``choose``)."""
_APPLIES_ON_CPU = _rule("cpu")


def squeezed_on_cpu(*facts) -> bool:
    """Whether a call takes the form on the CPU: the CPU's rule (measured by
    benchmarks/convolution/squeezed.py), under the same switches as CUDA's
    (``use_kernels(False, "convolution_squeezed")`` turns it off, ``force_kernels`` forces it
    wherever it can run)."""
    name = CONVOLUTION_SQUEEZED.name
    if name in disabled_kernels():
        return False
    if name in forced_kernels():
        return _runs(*facts)
    return _APPLIES_ON_CPU(*facts)
