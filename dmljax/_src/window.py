"""Sliding-window geometry shared by the windowed families (FOLD/UNFOLD, CONVOLUTION, pooling):
how many windows fit a padded axis, and the checks of the per-dimension arrays (Strides,
Dilations, StartPadding, EndPadding, a window's sizes) that every such page declares with
``_Field_size_(DimensionCount)``."""

from __future__ import annotations

import itertools
from typing import Callable, Mapping, Sequence

import numpy as np
from jax import lax

from dmljax._src.errors import Violation
from dmljax._src.spec import snake_case


def windows_per_dimension(spatial, window, strides, dilations, start, end) -> tuple[int, ...]:
    """The pages' "((SpatialSize[d] + StartPadding[d] + EndPadding[d] - Dilations[d] *
    (WindowSize[d] - 1) - 1) / Strides[d]) + 1" (floor division; a window wider than the padded
    axis gives 0)."""
    return tuple((s + a + b - d * (w - 1) - 1) // t + 1 if s + a + b - d * (w - 1) - 1 >= 0 else 0
                 for s, w, t, d, a, b in zip(spatial, window, strides, dilations, start, end))


def window_offsets(window, dilations) -> list[tuple[int, ...]]:
    """Each window position's offset in the padded input, in row-major order of the window."""
    return [tuple(k * d for k, d in zip(ks, dilations)) for ks in itertools.product(*(range(w) for w in window))]


def spread_windows(part: Callable, spatial, window, strides, dilations, start, end):
    """An input-shaped (N, C) + ``spatial`` sum over the window positions k (row-major) of
    ``part(k, offset)``: a windows-shaped (N, C, windows...) array for position k, at ``offset``
    in the padded input, each window's value placed at its element k (a pad with Strides - 1
    between); what lands in the padding is dropped. FOLD's columns put back, and the poolings'
    gradients for small windows: XLA fuses the copies into one pass."""
    padded = tuple(s + a + b for s, a, b in zip(spatial, start, end))
    total = None
    for k, off in enumerate(window_offsets(window, dilations)):
        g = part(k, off)
        config = [(0, 0, 0), (0, 0, 0)] + [(o, p - o - (q - 1) * t - 1, t - 1)
                                           for o, p, q, t in zip(off, padded, g.shape[2:], strides)]
        placed = lax.pad(g, np.zeros((), g.dtype), config)
        total = placed if total is None else total + placed
    n, c = total.shape[:2]
    return lax.slice(total, (0, 0, *start), (n, c, *(a + s for a, s in zip(start, spatial))))


def array_violations(tensor: str, shape: Sequence[int], arrays: Mapping[str, Sequence[int] | None],
                     at_least_one: Sequence[str] = ("Strides", "Dilations", "WindowSize", "WindowSizes"),
                     ) -> list[Violation]:
    """Each array has DimensionCount entries, one per spatial dimension of ``tensor`` (its
    dimensions after N and C); those named in ``at_least_one`` hold values of at least 1.
    Arrays given as None are left out (an optional array the caller did not pass)."""
    dims = len(shape) - 2
    problems = []
    for name, arr in arrays.items():
        if arr is not None and len(arr) != dims:
            problems.append(Violation(name, snake_case(name), f"has {len(arr)} entries",
                                      f"DimensionCount ({dims}) entries, one per spatial dimension of the "
                                      f"{tensor} (Sizes {list(shape)})"))
    if problems:
        return problems
    for name, arr in arrays.items():
        if name in at_least_one and arr is not None:
            problems += [Violation(f"{name}[{i}]", snake_case(name), f"is {v}", "at least 1")
                         for i, v in enumerate(arr) if v < 1]
    return problems


def fit_violations(spatial, window, strides, dilations, start, end, window_name: str = "WindowSizes",
                   what: str = "a dimension must hold at least one window", arg: str | None = None,
                   first_index: int = 0) -> list[Violation]:
    """A window (dilated) wider than its padded axis: no output position. The window's entries
    are named ``window_name[first_index + i]`` (CONVOLUTION's FilterTensor.Sizes[2 + i]), the
    argument ``arg`` (default: the snake_case of a member's name)."""
    problems = []
    if arg is None:
        arg = snake_case(window_name) if window_name[0].isupper() else ""
    for i, n in enumerate(windows_per_dimension(spatial, window, strides, dilations, start, end)):
        if n < 1:
            w, d = window[i], dilations[i]
            problems.append(Violation(
                f"{window_name}[{first_index + i}]", arg,
                f"is {w} with Dilations {d}: the window spans {d * (w - 1) + 1} elements",
                f"at most the padded size of spatial dimension {i}, {spatial[i]} + StartPadding {start[i]} + "
                f"EndPadding {end[i]}", what))
    return problems
