"""The one place each comparison is computed, so that a comparison reads the same in every table.

Every ratio is a **time** ratio, ``time(numerator) / time(denominator)``: below 1, the numerator
is faster. Its figures are chosen by one rule, in this order:
1. ``device``: both variants have device-side times (GPU: profiler kernel durations for JAX,
   CUDA events for PyTorch and the copy);
2. ``paired``: the two were measured side by side for this record (``time_paired``), the
   median of per-repetition ratios, robust to a noisy machine;
3. ``host``: the two host-clock medians.
Bandwidths are bytes moved over the same chosen time; the copy's bytes are its own (every byte
read and written once).
"""

from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["Ratio", "paired_key", "variant_time", "time_ratio", "gbps", "copy_fraction"]


@dataclasses.dataclass(frozen=True)
class Ratio:
    value: float
    basis: str  # "device" | "paired" | "host"
    p25: float | None = None
    p75: float | None = None

    def text(self, digits: int = 3, basis: bool = False) -> str:
        s = f"{self.value:.{digits}f}"
        return s + (f" ({self.basis})" if basis else "")


def paired_key(a: str, b: str) -> str:
    """The key of a record's ``paired`` entry for time(a)/time(b)."""
    return f"{a}/{b}_time"


def variant_time(rec: dict, name: str, clock: str | None = None) -> tuple[float | None, str]:
    """A variant's seconds per call and its clock ("device" or "host"): the device-side figure
    where one was taken, else the variant's median (device-side itself when taken with CUDA
    events). ``clock="host"`` asks for the host figure only."""
    if clock != "host" and name in rec.get("device", {}):
        return rec["device"][name]["s"], "device"
    v = rec.get("variants", {}).get(name)
    if v is None:
        return None, ""
    how = "device" if v.get("method") == "cuda-events" else "host"
    if clock == "host" and how != "host":
        return None, ""
    return v["s"], how


def time_ratio(num: dict, a: str, b: str, den: dict | None = None) -> Ratio | None:
    """time(variant ``a`` of record ``num``) / time(variant ``b`` of record ``den``, default the
    same record), by the module's rule; None where a figure is missing."""
    den = num if den is None else den
    ta, ca = variant_time(num, a)
    tb, cb = variant_time(den, b)
    if ta and tb and ca == cb == "device":
        return Ratio(ta / tb, "device")
    pr = num.get("paired", {}).get(paired_key(a, b)) if den is num else None
    if pr:
        return Ratio(pr["ratio"], "paired", pr.get("p25"), pr.get("p75"))
    ta, _ = variant_time(num, a, "host")
    tb, _ = variant_time(den, b, "host")
    if ta and tb:
        return Ratio(ta / tb, "host")
    return None


def _copy_bytes(rec: dict) -> int:
    if "copy_bytes" in rec:
        return rec["copy_bytes"]
    return 2 * rec["n"] * np.dtype(rec["dtype"].lower()).itemsize  # records written before copy_bytes


def gbps(rec: dict, name: str, clock: str | None = None) -> tuple[float | None, str]:
    """A variant's bandwidth in GB/s (bytes of every input and output once, over its time) and
    the clock; the copy variants count their own bytes."""
    t, how = variant_time(rec, name, clock)
    if not t:
        return None, ""
    nbytes = _copy_bytes(rec) if name in ("copy", "jax_copy") else rec["bytes"]
    return nbytes / t / 1e9, how


def copy_fraction(rec: dict) -> Ratio | None:
    """bandwidth(dmljax in jit) / bandwidth(device copy), both figures by the module's rule."""
    r = time_ratio(rec, "dmljax_jit", "copy")
    return None if r is None else Ratio(rec["bytes"] / _copy_bytes(rec) / r.value, r.basis)
