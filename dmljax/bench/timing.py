"""Timers: per-call medians over repetitions, paired ratios measured side by side, and device-side
kernel times from JAX's profiler.

A repetition runs ``inner`` back-to-back calls cycling through the input sets and synchronises
once at the end (``block_until_ready``; ``torch.cuda.synchronize``), so that dispatch overlaps
execution as in a real program; warm-up (one call per input set) and compilation are excluded;
a figure is the median over repetitions, with its quartiles.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import tempfile
import time
from typing import Callable, Sequence

import jax
import numpy as np

__all__ = ["Timing", "time_calls", "time_paired", "time_interleaved", "jax_device_times", "jax_sync"]


def jax_sync(out):
    """Wait for a JAX result (or a list of them)."""
    jax.block_until_ready(out)


@dataclasses.dataclass
class Timing:
    """A median per-call time and how it was taken."""

    s: float  # median seconds per call
    p25: float
    p75: float
    reps: int
    inner: int
    method: str

    def asdict(self):
        return dataclasses.asdict(self)


def _warm(call: Callable[[int], object], n_sets: int, sync: Callable) -> float:
    """Warm-up (one call per input set, synchronised), then one synchronised call: its seconds."""
    out = None
    for i in range(n_sets):
        out = call(i)
    sync(out)
    t0 = time.perf_counter()
    sync(call(0))
    return max(time.perf_counter() - t0, 1e-7)


def time_calls(call: Callable[[int], object], n_sets: int, sync: Callable, *, budget_s: float,
               min_reps: int = 7, max_reps: int = 100, target_rep_s: float = 2e-3,
               events=None) -> Timing:
    """Median per-call time of ``call(i)`` (i cycles through the input sets).

    Warm-up: one call per input set, synchronised. Then repetitions of ``inner`` back-to-back
    calls with one synchronisation at the end; ``events`` (a torch.cuda module) times each
    repetition with CUDA events instead of the host clock."""
    one = _warm(call, n_sets, sync)
    inner = int(min(max(target_rep_s / one, 1), 200))
    reps = int(min(max(budget_s / (one * inner), min_reps), max_reps))
    k = 0
    samples = []
    for _ in range(reps):
        if events is not None:
            start, end = events.Event(enable_timing=True), events.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        for _ in range(inner):
            out = call(k % n_sets)
            k += 1
        if events is not None:
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e-3 / inner)
        else:
            sync(out)
            samples.append((time.perf_counter() - t0) / inner)
    q = np.percentile(samples, [25, 50, 75])
    method = "cuda-events" if events is not None else "host-clock, sync per repetition"
    return Timing(float(q[1]), float(q[0]), float(q[2]), reps, inner, method)


def time_paired(call_a: Callable[[int], object], call_b: Callable[[int], object], n_sets: int,
                sync: Callable, *, budget_s: float, min_reps: int = 9, max_reps: int = 60,
                target_rep_s: float = 2e-3) -> dict:
    """Time ratio a/b measured side by side: each repetition times ``inner`` calls of a and of b
    back to back (alternating which goes first), so slow phases of a noisy machine hit both; the
    median of the per-repetition ratios is returned with its quartiles."""
    both = _warm(call_a, n_sets, sync) + _warm(call_b, n_sets, sync)
    inner = int(min(max(target_rep_s / both, 1), 200))
    reps = int(min(max(budget_s / (both * inner), min_reps), max_reps))
    ratios, k = [], 0
    for r in range(reps):
        dt = {}
        for name, call in ((("a", call_a), ("b", call_b)) if r % 2 == 0 else (("b", call_b), ("a", call_a))):
            t0 = time.perf_counter()
            for j in range(inner):
                out = call((k + j) % n_sets)
            sync(out)
            dt[name] = time.perf_counter() - t0
        k += inner
        ratios.append(dt["a"] / dt["b"])
    q = np.percentile(ratios, [25, 50, 75])
    return {"ratio": float(q[1]), "p25": float(q[0]), "p75": float(q[2]), "reps": reps, "inner": inner,
            "method": "paired, alternating order, host clock"}


def time_interleaved(groups: Sequence[tuple[str, Callable[[int], object]]], n_sets: int, sync: Callable, *,
                     budget_s: float, min_reps: int = 7, max_reps: int = 60,
                     target_rep_s: float = 2e-3) -> dict[str, Timing]:
    """Per-call time of each ``(name, call)``, the groups measured in turns: each round times
    ``inner`` calls of every group (its own ``inner``: about ``target_rep_s`` a turn), the order
    rotating from round to round, so that a slow phase of a shared machine falls on every group
    alike (``time_calls`` times one group's repetitions, then the next's). ``budget_s`` bounds the
    whole measurement; the median and quartiles are taken per group over the rounds."""
    inner = {name: int(min(max(target_rep_s / _warm(call, n_sets, sync), 1), 200)) for name, call in groups}
    t0 = time.perf_counter()
    samples: dict[str, list] = {name: [] for name, _ in groups}
    order = list(groups)
    rounds, k = 0, 0
    while rounds < max_reps and (rounds < min_reps or time.perf_counter() - t0 < budget_s):
        shift = rounds % len(order)
        for name, call in order[shift:] + order[:shift]:
            start = time.perf_counter()
            for j in range(inner[name]):
                out = call((k + j) % n_sets)
            sync(out)
            samples[name].append((time.perf_counter() - start) / inner[name])
        k += 1
        rounds += 1
    out_times = {}
    for name, _ in groups:
        q = np.percentile(samples[name], [25, 50, 75])
        out_times[name] = Timing(float(q[1]), float(q[0]), float(q[2]), rounds, inner[name],
                                 "host clock, the groups in turns, order rotating")
    return out_times


def jax_device_times(groups: Sequence[tuple[str, Callable[[int], object]]], n_sets: int,
                     n_calls: int = 20, gap_s: float = 0.03) -> dict:
    """Per-call GPU time of each ``(name, call)`` from the profiler's kernel records (CUPTI),
    all groups in one trace: each group runs ``n_calls`` calls back to back, then the host
    sleeps ``gap_s``; the device records are split at the largest idle gaps. Per group: the sum
    of kernel durations per call ("s"), first-start-to-last-end per call ("span_s") and kernels
    per call. Empty where the trace holds no device plane (CPU)."""
    from jax.profiler import ProfileData  # noqa: PLC0415  (only where device times are taken)

    for _, call in groups:
        out = None
        for i in range(n_sets):
            out = call(i)
        jax_sync(out)
    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d)
        try:
            for _, call in groups:
                for i in range(n_calls):
                    out = call(i % n_sets)
                jax_sync(out)
                time.sleep(gap_s)
        finally:
            jax.profiler.stop_trace()
        paths = glob.glob(os.path.join(d, "**", "*.xplane.pb"), recursive=True)
        if not paths:
            return {}
        pd = ProfileData.from_file(paths[0])
        by_line: dict[str, list] = {}
        for plane in pd.planes:
            if not plane.name.startswith("/device:GPU"):
                continue
            for line in plane.lines:
                by_line[line.name] = [(ev.start_ns, ev.duration_ns, ev.name) for ev in line.events]
    streams = [k for k in by_line if k.lower().startswith("stream")]
    use = streams or [k for k in by_line if not any(w in k for w in ("XLA", "Step", "Launch", "Source"))]
    events = sorted(e for k in use for e in by_line[k])
    if len(events) < len(groups):
        return {}
    gaps = sorted(range(1, len(events)),
                  key=lambda i: events[i][0] - (events[i - 1][0] + events[i - 1][1]))[-(len(groups) - 1):] \
        if len(groups) > 1 else []
    cuts = [0] + sorted(gaps) + [len(events)]
    out = {}
    for (name, _), lo, hi in zip(groups, cuts[:-1], cuts[1:]):
        seg = events[lo:hi]
        total = sum(e[1] for e in seg) * 1e-9
        span = (max(e[0] + e[1] for e in seg) - seg[0][0]) * 1e-9
        out[name] = {"s": total / n_calls, "span_s": span / n_calls, "kernels_per_call": len(seg) / n_calls,
                     "kernel_names": sorted({e[2] for e in seg})[:6], "calls": n_calls,
                     "method": "profiler kernel durations (CUPTI via jax.profiler)", "lines": use[:4]}
    return out
