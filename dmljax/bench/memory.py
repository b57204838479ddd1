"""Whether a measurement fits in memory, decided before it runs.

A point's need is counted from its arrays: every input set it cycles through (once more for each
other framework that gets its own copy: PyTorch, ONNX Runtime), the outputs that can be alive at
once, the copy's output and the temporaries of drawing random inputs, with a margin. It is held
against the memory available now: on an accelerator ``memory_stats()``'s ``bytes_limit`` minus
``bytes_in_use``; on the CPU (Linux) ``MemAvailable`` from ``/proc/meminfo``. Where neither can
be read (elsewhere: free pages from sysconf), nothing is refused.
"""

from __future__ import annotations

import jax

from dmljax._src.memory import device_available, host_available

__all__ = ["available", "need", "fits", "human"]

MARGIN = 1.25
SLACK = 64 << 20  # compiled code, the runtime's own buffers


def available() -> tuple[int | None, str]:
    """Bytes the next measurement may use, and where that figure comes from."""
    dev = jax.devices()[0]
    if dev.platform != "cpu":
        free = device_available()
        if free is None:
            return None, "unknown"
        return free, f"{getattr(dev, 'device_kind', dev.platform)} memory_stats(): bytes_limit - bytes_in_use"
    free = host_available()
    return (free, "MemAvailable in /proc/meminfo") if free is not None else (None, "unknown")


def need(n: int, in_bytes_per_element: float, out_bytes_per_element: float, n_sets: int,
         copies: int = 1, outputs_alive: int = 4) -> int:
    """Bytes a measurement of ``n`` elements needs: ``n_sets`` input sets held ``copies`` times,
    ``outputs_alive`` outputs, one copy's output, the float32 temporaries of drawing an input."""
    inputs = n_sets * copies * in_bytes_per_element * n
    outputs = outputs_alive * out_bytes_per_element * n
    drawing = 12 * n  # random bits and their float32 values, for one input at a time
    return int(MARGIN * (inputs + outputs + in_bytes_per_element * n + drawing)) + SLACK


def fits(nbytes: int) -> tuple[bool, str]:
    """Whether ``nbytes`` fit now, and a phrase saying how much is available."""
    free, source = available()
    if free is None:
        return True, "available memory unknown"
    return nbytes <= free, f"{human(max(free, 0))} available ({source})"


def human(nbytes: float) -> str:
    """``19.8 TB``: decimal units, three significant digits.

    >>> human(1536), human(19.8e12)
    ('1.54 kB', '19.8 TB')
    """
    for unit in ("B", "kB", "MB", "GB", "TB", "PB", "EB", "ZB"):
        if abs(nbytes) < 1000 or unit == "ZB":
            return f"{nbytes:.3g} {unit}" if unit != "B" else f"{int(nbytes)} B"
        nbytes /= 1000
    return f"{nbytes:.3g} YB"  # pragma: no cover
