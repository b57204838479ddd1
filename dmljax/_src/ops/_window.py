"""Sliding-window geometry shared by the windowed families (FOLD/UNFOLD, CONVOLUTION, pooling):
how many windows fit a padded axis, and the checks of the per-dimension arrays (Strides,
Dilations, StartPadding, EndPadding, a window's sizes) that every such page declares with
``_Field_size_(DimensionCount)``."""

from __future__ import annotations

from typing import Mapping, Sequence

from dmljax._src.errors import Violation
from dmljax._src.spec import snake_case


def windows_per_dimension(spatial, window, strides, dilations, start, end) -> tuple[int, ...]:
    """The pages' "((SpatialSize[d] + StartPadding[d] + EndPadding[d] - Dilations[d] *
    (WindowSize[d] - 1) - 1) / Strides[d]) + 1" (floor division; a window wider than the padded
    axis gives 0)."""
    return tuple((s + a + b - d * (w - 1) - 1) // t + 1 if s + a + b - d * (w - 1) - 1 >= 0 else 0
                 for s, w, t, d, a, b in zip(spatial, window, strides, dilations, start, end))


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
                   what: str = "a dimension must hold at least one window") -> list[Violation]:
    """A window (dilated) wider than its padded axis: no output position."""
    problems = []
    for i, n in enumerate(windows_per_dimension(spatial, window, strides, dilations, start, end)):
        if n < 1:
            w, d = window[i], dilations[i]
            problems.append(Violation(
                f"{window_name}[{i}]", snake_case(window_name) if window_name[0].isupper() else "",
                f"is {w} with Dilations {d}: the window spans {d * (w - 1) + 1} elements",
                f"at most the padded size of spatial dimension {i}, {spatial[i]} + StartPadding {start[i]} + "
                f"EndPadding {end[i]}", what))
    return problems
