"""What the topic scripts share: the results folder, the environment each result records, the
timer, and the writer of each result's ``.json`` and ``.md`` (``Report``).

A topic script puts this folder and the checkout first on ``sys.path`` (so that it runs the
checkout's dmljax without installing it), then ``import common``. Nothing here is part of dmljax.

Times: ``times`` takes each variant's device time from the profiler's kernel records (CUPTI, the
sum of kernel durations per call over 20 calls, the calls cycling through the input sets:
``dmljax.bench.jax_device_times``); a backend without device records (the CPU) gets host-clock
times instead, the variants timed in turns with their order rotating so that a shared machine's slow
phases fall on all of them alike (``dmljax.bench.time_interleaved``), and the results say which.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import subprocess
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from dmljax.bench import jax_device_times, time_interleaved  # noqa: E402

SMOKE = bool(os.environ.get("SMOKE"))
"""SMOKE=1: small shapes, for a dry run of a script's code on any machine (its figures mean
nothing)."""


def device_name() -> str:
    """The results folder's device name: the GPU's model (``h100``, ``h200``, ...) or the platform
    (``cpu``)."""
    d = jax.devices()[0]
    if d.platform == "cpu":
        return "cpu"
    m = re.search(r"\b([a-z]+\d{2,4}[a-z]?)\b", d.device_kind.lower().replace("nvidia", ""))
    return m.group(1) if m else d.platform


def arguments() -> tuple[str | None, list[str]]:
    """The command line: the folder after ``--out`` (or None), and the other arguments."""
    out, rest, argv = None, [], sys.argv[1:]
    while argv:
        a = argv.pop(0)
        if a == "--out" and argv:
            out = argv.pop(0)
        elif a.startswith("--out="):
            out = a.split("=", 1)[1]
        else:
            rest.append(a)
    return out, rest


def out_dir(topic: str) -> Path:
    """The folder a script writes to: ``--out DIR``, or ``benchmarks/results/<device>/<topic>``."""
    out, _ = arguments()
    path = Path(out) if out else HERE / "results" / device_name() / topic
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def environment() -> dict:
    """The device, its driver and clocks (nvidia-smi, where there is one), the versions and the
    checkout's commit (``BENCH_COMMIT`` where the copy being run has no git history)."""
    import jaxlib

    d = jax.devices()[0]
    env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "device": d.device_kind, "platform": d.platform, "jax": jax.__version__,
           "jaxlib": jaxlib.__version__, "numpy": np.__version__, "python": platform.python_version(),
           "commit": _run(["git", "rev-parse", "HEAD"]) or os.environ.get("BENCH_COMMIT", ""),
           "uncommitted changes": bool(_run(["git", "status", "--porcelain", "--untracked-files=no"]))}
    smi = _run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem", "--format=csv,noheader"])
    if smi:
        env["nvidia-smi"] = smi.splitlines()[0]
    return env


def cpu_name() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), or "unknown CPU", written beside CPU
    figures with the core count."""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            name = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
        if name:
            return name
    return "unknown CPU"


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages: how busy the machine's cores were (other work on them
    slows what is timed, unevenly), written beside CPU figures."""
    return " ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"


def nbytes(tree) -> int:
    """Bytes of every array in ``tree``."""
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


copy = jax.jit(lambda tree: jax.tree.map(lambda v: v.copy(), tree))
"""A device copy of the input: the bandwidth every figure is held against."""


def compiled(fn, *args):
    """``fn`` traced and compiled for ``args`` now: the program it keeps, whatever switch (such as
    ``dmljax.use_kernels``) is in force later."""
    return jax.jit(fn).lower(*args).compile()


def torch_cuda():
    """torch set up for a side-by-side figure on the GPU (cuDNN's benchmark mode, TF32 off, so that
    FLOAT32 is true FLOAT32), or None where torch or a GPU it sees is missing."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def torch_ms(call, calls: int = 10, warmup: int = 3) -> float:
    """Milliseconds per ``call()`` of torch work on CUDA: ``warmup`` calls, then ``calls`` calls
    between two CUDA events (the torch side of a side-by-side figure)."""
    import torch

    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def torch_graph_ms(call, calls: int = 10, warmup: int = 3) -> float:
    """Milliseconds per ``call()`` captured once as a CUDA graph and replayed between two CUDA
    events (``torch_ms``): torch's GPU work without the gaps in which the GPU waits for the host to
    launch each kernel, which ``torch_ms`` of the eager call holds and the JAX figures' device time
    leaves out. For calls without a backward pass (a graph replays fixed buffers)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture, as torch.cuda.graphs asks
        for _ in range(warmup):
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    return torch_ms(graph.replay, calls=calls, warmup=warmup)


def times(groups, n_sets: int = 2) -> dict:
    """Per-call time of each ``(name, call)``: ``{name: {"s", "kernels_per_call", "method"}}``,
    from device records, or from the host clock where the backend has none."""
    got = jax_device_times(groups, n_sets)
    if got:
        return {k: {"s": v["s"], "kernels_per_call": v.get("kernels_per_call"),
                    "method": "device time (CUPTI kernel durations, 20 calls)"} for k, v in got.items()}
    got = time_interleaved(groups, n_sets, jax.block_until_ready, budget_s=(0.05 if SMOKE else 0.5) * len(groups))
    return {k: {"s": t.s, "kernels_per_call": None,
                "method": "host clock (the groups timed in turns, order rotating; medians over the rounds)"}
            for k, t in got.items()}


class Report:
    """Lines printed as they come and points collected, then written as ``<name>.md`` (the lines)
    and ``<name>.json`` (the environment, the method and the points): ``results`` for a script
    without groups; one pair of files a group for a script with groups (``report.group = name``
    before its cases), so that a run of some groups leaves the others' latest files in place."""

    def __init__(self, topic: str, method: str):
        self.out = out_dir(topic)
        self.method = method
        self.env = environment()
        self.group = "results"
        self.points: dict[str, list[dict]] = {}
        self.lines: dict[str, list[str]] = {}
        self.head = (f"{self.env['date']}; {self.env['device']}; jax {self.env['jax']}, jaxlib {self.env['jaxlib']}; "
                     f"commit {self.env['commit'][:12] or 'unknown'}")
        print(self.head, flush=True)

    def line(self, text: str) -> None:
        self.lines.setdefault(self.group, []).append(text)
        print(text, flush=True)

    def point(self, text: str | None = None, **fields) -> None:
        self.points.setdefault(self.group, []).append(fields)
        if text:
            self.line(text)

    def write(self) -> Path:
        for name in sorted(set(self.points) | set(self.lines)):
            (self.out / f"{name}.json").write_text(json.dumps(
                {"environment": self.env, "method": self.method, "points": self.points.get(name, [])},
                indent=1) + "\n")
            (self.out / f"{name}.md").write_text("\n".join([self.head, *self.lines.get(name, [])]) + "\n")
            print(f"written: {self.out / name}.json, .md", flush=True)
        return self.out


def against_jnp(report: Report, groups: dict, chosen) -> None:
    """Each case of each chosen group (``groups[name](rng)`` yields (name, dtype, input sets,
    dmljax's function, the jnp formula's)): the copy's, dmljax's and the formula's time per call,
    their ratio, and dmljax's bandwidth as a fraction of the copy's ((input + output bytes) / time
    against the copy's 2 x input bytes / time). A failing case is reported and the run goes on."""
    rng = np.random.default_rng(0)
    for group in chosen:
        report.group = group
        try:
            for name, dtype, inputs, f_dml, f_jnp in groups[group](rng):
                try:
                    t = times([("copy", lambda i: copy(inputs[i % 2])),
                               ("dmljax", lambda i, f=f_dml: f(inputs[i % 2])),
                               ("jnp", lambda i, f=f_jnp: f(inputs[i % 2]))])
                except Exception:  # noqa: BLE001  (one case's failure is reported, the run goes on)
                    report.line(f"{name}: FAILED {traceback.format_exc(limit=2)[-300:]}")
                    continue
                ms = {k: v["s"] * 1e3 for k, v in t.items()}
                moved_in = nbytes(inputs[0])
                moved = moved_in + nbytes(f_dml(inputs[0]))
                frac = (moved / ms["dmljax"]) / (2 * moved_in / ms["copy"])
                kernels = {k: v["kernels_per_call"] for k, v in t.items()}
                report.point(
                    f"{name:38s} {np.dtype(dtype).name:7s}: copy {ms['copy']:.3f} ms, dmljax {ms['dmljax']:.3f}, "
                    f"jnp {ms['jnp']:.3f}: time(dmljax)/time(jnp) {ms['dmljax'] / ms['jnp']:.3f}, "
                    f"of a copy's bandwidth {frac:.2f}" + (f", kernels {kernels['dmljax']}/{kernels['jnp']}"
                                                              if kernels["dmljax"] is not None else ""),
                    op=name, group=group, dtype=np.dtype(dtype).name, ms=ms, bytes_moved=moved, copy_fraction=frac,
                    kernels=kernels, method=t["copy"]["method"])
        except Exception:  # noqa: BLE001
            report.line(f"group {group}: FAILED {traceback.format_exc(limit=3)[-400:]}")
