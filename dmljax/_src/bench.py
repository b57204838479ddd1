"""``dmljax bench``: side-by-side timings of dmljax's operators.

For each operator x data type x size, in one process and on the same random inputs: the dmljax
operator inside a user's ``jax.jit`` and called directly; the plain ``jax.numpy`` formula a user
would write (jitted); PyTorch eager and ``torch.compile`` (when torch imports); the one-node ONNX
graph in ONNX Runtime (when onnxruntime imports, CPU only); and a device copy, the bandwidth
floor. Also forward+backward, the five seed operators chained in one jit (kernels counted from the
compiled HLO), trace+compile time and small-size per-call overhead.

Method (benchmarks/README.md says more): warm-up and compilation are excluded; every figure is
the median over many repetitions; each repetition runs ``inner`` back-to-back calls cycling
through several input sets (so large sizes don't measure the cache) and synchronises once at the
end (``block_until_ready``; ``torch.cuda.synchronize``). On a GPU, device-side times are taken as
well: CUDA events for PyTorch and the profiler's kernel durations (CUPTI, through
``jax.profiler``) for JAX, at the largest size.

Only dmljax, JAX and NumPy are required; torch, onnxruntime, matplotlib and tqdm are optional
(``pip install dmljax[bench]`` for the last two): a missing one skips its column with a note.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from typing import Callable, Sequence

import numpy as np

__all__ = ["main", "Case", "cases", "hlo_kernel_count", "jax_device_times", "run_suite", "write_outputs"]

SEEDS = (
    "DML_OPERATOR_ELEMENT_WISE_IF",
    "DML_OPERATOR_ACTIVATION_SCALED_ELU",
    "DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR",
    "DML_OPERATOR_ELEMENT_WISE_THRESHOLD",
    "DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW",
)
VARIANTS = ("dmljax_jit", "dmljax_call", "jnp_jit", "torch_eager", "torch_compile", "ort", "copy")
LABELS = {
    "dmljax_jit": "dmljax (in jit)", "dmljax_call": "dmljax (direct call)", "jnp_jit": "jnp formula (jit)",
    "torch_eager": "torch eager", "torch_compile": "torch.compile", "ort": "ONNX Runtime",
    "copy": "device copy", "jax_copy": "jax copy",
}


# ------------------------------------------------------------------------------------------
# What to run for each operator
@dataclasses.dataclass(frozen=True)
class Case:
    """How to benchmark one operator: its attributes and the formulas to compare it with.

    ``jnp``/``torch`` take the same positional arrays as the dmljax operator (``torch`` gets the
    torch module first); ``onnx`` is ``(op_type, node attributes, constant inputs)`` with the
    constants as Python floats appended after the tensors; ``inputs`` draws special inputs."""

    enum_name: str
    attrs: dict = dataclasses.field(default_factory=dict)
    jnp: Callable | None = None
    torch: Callable | None = None
    onnx: tuple | None = None
    inputs: Callable | None = None  # (key, n, dtype) -> list of arrays
    note: str = ""


def _jnp():
    import jax.numpy as jnp
    return jnp


def _divisor(key, n, dtype):
    import jax
    ka, kb, ks = jax.random.split(key, 3)
    a = 4.0 * jax.random.normal(ka, (n,), np.float32)
    mag = jax.random.uniform(kb, (n,), np.float32, 0.5, 2.0)
    b = jax.numpy.where(jax.random.bernoulli(ks, 0.5, (n,)), mag, -mag)
    return [a.astype(dtype), b.astype(dtype)]


ALPHA, GAMMA = 1.6732, 1.0507  # SCALED_ELU's defaults, float32 values


def _known() -> dict[str, Case]:
    jnp = _jnp()

    def selu_j(x):
        return jnp.where(x > 0, GAMMA * x, GAMMA * (ALPHA * jnp.exp(x) - ALPHA))

    def selu_t(t, x):
        return t.where(x > 0, GAMMA * x, GAMMA * (ALPHA * t.exp(x) - ALPHA))

    def elu_j(x):
        return jnp.where(x > 0, x, 1.0 * (jnp.exp(x) - 1.0))

    known = [
        Case("DML_OPERATOR_ELEMENT_WISE_IF",
             jnp=lambda c, a, b: jnp.where(c != 0, a, b),
             torch=lambda t, c, a, b: t.where(c != 0, a, b),
             onnx=("Where", {}, ()),
             note="ORT's Where takes a bool condition: it is fed the UINT8 condition cast to bool."),
        Case("DML_OPERATOR_ACTIVATION_SCALED_ELU", jnp=selu_j, torch=selu_t,
             onnx=("Selu", {"alpha": ALPHA, "gamma": GAMMA}, ())),
        Case("DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR", inputs=_divisor,
             jnp=lambda a, b: jnp.mod(a, b),
             torch=lambda t, a, b: t.remainder(a, b),
             onnx=("Mod", {"fmod": 0}, ())),
        Case("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", attrs={"min": 0.0},
             jnp=lambda x: jnp.maximum(x, 0.0),
             torch=lambda t, x: t.clamp_min(x, 0.0),
             onnx=("Max", {}, (0.0,))),
        Case("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", attrs={"exponent": 3.0},
             jnp=lambda x: x ** 3.0,
             torch=lambda t, x: t.pow(x, 3.0),
             onnx=("Pow", {}, (3.0,))),
        Case("DML_OPERATOR_ELEMENT_WISE_MULTIPLY",
             jnp=lambda a, b: a * b, torch=lambda t, a, b: a * b, onnx=("Mul", {}, ())),
        Case("DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN",
             jnp=lambda a, b: (a < b).astype(np.uint8),
             torch=lambda t, a, b: (a < b).to(t.uint8),
             onnx=("Less", {}, ()),
             note="ORT's Less writes bool, dmljax UINT8 (same bytes)."),
        Case("DML_OPERATOR_ELEMENT_WISE_IDENTITY",
             jnp=lambda x: jnp.copy(x), torch=lambda t, x: x.clone(), onnx=("Identity", {}, ())),
        Case("DML_OPERATOR_ELEMENT_WISE_ADD",
             jnp=lambda a, b: a + b, torch=lambda t, a, b: a + b, onnx=("Add", {}, ())),
        Case("DML_OPERATOR_ELEMENT_WISE_ADD1",
             jnp=lambda a, b: a + b, torch=lambda t, a, b: a + b, onnx=("Add", {}, ())),
        Case("DML_OPERATOR_ELEMENT_WISE_CLIP", attrs={"min": -0.5, "max": 0.5},
             jnp=lambda x: jnp.clip(x, -0.5, 0.5),
             torch=lambda t, x: t.clamp(x, -0.5, 0.5),
             onnx=("Clip", {}, (-0.5, 0.5))),
        Case("DML_OPERATOR_ELEMENT_WISE_CLIP1", attrs={"min": -0.5, "max": 0.5},
             jnp=lambda x: jnp.clip(x, -0.5, 0.5),
             torch=lambda t, x: t.clamp(x, -0.5, 0.5),
             onnx=("Clip", {}, (-0.5, 0.5))),
        Case("DML_OPERATOR_ACTIVATION_ELU", attrs={"alpha": 1.0}, jnp=elu_j,
             torch=lambda t, x: t.nn.functional.elu(x, 1.0),
             onnx=("Elu", {"alpha": 1.0}, ())),
    ]
    return {c.enum_name: c for c in known}


def _resolve(name: str):
    """``get_operator``, also accepting an unambiguous end of the name ("IF", "SCALED_ELU")."""
    from dmljax._src.registry import get_operator, registry
    try:
        return get_operator(name)
    except ValueError:
        tail = "_" + str(name).strip().upper()
        hits = [op for enum, op in registry().items() if enum.endswith(tail)]
        if len(hits) == 1:
            return hits[0]
        raise


def cases(names: Sequence[str] | None = None) -> tuple[list[Case], list[str]]:
    """The cases for ``names`` (default: every registered operator), and notes on skipped ones."""
    from dmljax._src.registry import registry
    from dmljax._src.spec import REQUIRED

    known = _known()
    ops = registry() if not names else {op.spec.enum_name: op for op in (_resolve(n) for n in names)}
    out, notes = [], []
    for enum, op in ops.items():
        case = known.get(enum)
        if case is None:
            required = [p.dml_name for p in op.spec.params if p.default is REQUIRED]
            if required:
                notes.append(f"{enum}: skipped (no benchmark recipe; required attributes {required}).")
                continue
            case = Case(enum, note="no jnp/torch/ORT recipe yet: dmljax and copy only.")
        out.append(case)
    return out, notes


# ------------------------------------------------------------------------------------------
# Inputs
def _supported_types(op, tensor_name):
    t = op.spec.support[0].tensors.get(tensor_name)
    return tuple(dt.name for dt in t.data_types) if t else ()


def make_inputs(op, case: Case, n: int, dtype_name: str, seed: int):
    """Random inputs for ``op`` with ``n`` elements each (None if the type is unsupported)."""
    import jax
    import jax.numpy as jnp

    from dmljax._src.dtypes import DataType

    dt = DataType.parse(dtype_name).dtype
    key = jax.random.PRNGKey(seed)
    if case.inputs is not None:
        if any(dtype_name not in _supported_types(op, t.dml_name) for t in op.spec.inputs):
            return None
        arrs = case.inputs(key, n, dt)
    else:
        arrs = []
        for i, t in enumerate(op.spec.inputs):
            if t.optional:
                break
            k = jax.random.fold_in(key, i)
            types = _supported_types(op, t.dml_name)
            if dtype_name in types:
                arrs.append(jax.random.normal(k, (n,), np.float32).astype(dt))
            elif "UINT8" in types:
                arrs.append(jax.random.bernoulli(k, 0.5, (n,)).astype(jnp.uint8))
            else:
                return None
    return jax.block_until_ready(arrs)


# ------------------------------------------------------------------------------------------
# Timing
def _jax_sync(out):
    import jax
    jax.block_until_ready(out)


@dataclasses.dataclass
class Timing:
    s: float  # median seconds per call
    p25: float
    p75: float
    reps: int
    inner: int
    method: str

    def asdict(self):
        return dataclasses.asdict(self)


def time_calls(call: Callable[[int], object], n_sets: int, sync: Callable, *, budget_s: float,
               min_reps: int = 7, max_reps: int = 100, target_rep_s: float = 2e-3,
               events=None) -> Timing:
    """Median per-call time of ``call(i)`` (i cycles through the input sets).

    Warm-up: one call per input set, synchronised. Then repetitions of ``inner`` back-to-back
    calls with one synchronisation at the end; ``events`` (a torch.cuda module) times each
    repetition with CUDA events instead of the host clock."""
    out = None
    for i in range(n_sets):
        out = call(i)
    sync(out)
    t0 = time.perf_counter()
    sync(call(0))
    one = max(time.perf_counter() - t0, 1e-7)
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
    for call in (call_a, call_b):
        out = None
        for i in range(n_sets):
            out = call(i)
        sync(out)
    t0 = time.perf_counter()
    sync(call_a(0))
    sync(call_b(0))
    both = max(time.perf_counter() - t0, 1e-7)
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


def jax_device_times(groups: Sequence[tuple[str, Callable[[int], object]]], n_sets: int,
                     n_calls: int = 20, gap_s: float = 0.03) -> dict:
    """Per-call GPU time of each ``(name, call)`` from the profiler's kernel records (CUPTI),
    all groups in one trace: each group runs ``n_calls`` calls back to back, then the host
    sleeps ``gap_s``; the device records are split at the largest idle gaps. Per group: the sum
    of kernel durations per call ("s"), first-start-to-last-end per call ("span_s") and kernels
    per call. Empty where the trace holds no device plane (CPU)."""
    import jax
    from jax.profiler import ProfileData

    for _, call in groups:
        out = None
        for i in range(n_sets):
            out = call(i)
        _jax_sync(out)
    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d)
        try:
            for _, call in groups:
                for i in range(n_calls):
                    out = call(i % n_sets)
                _jax_sync(out)
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


# ------------------------------------------------------------------------------------------
# HLO
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\(")
_FREE = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}


def hlo_kernel_count(hlo_text: str) -> tuple[int, list[str]]:
    """Instructions of the ENTRY computation of an optimised HLO module that do work (fusions,
    copies, custom calls...; parameters, constants, tuples and bitcasts excluded): on a GPU, one
    per kernel launch."""
    lines = hlo_text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith("ENTRY"))
    except StopIteration:
        return 0, []
    ops = []
    for ln in lines[start + 1:]:
        if ln.startswith("}"):
            break
        m = _INSTR.match(ln)
        if m and m.group(1) not in _FREE:
            name = ln.split("=")[0].replace("ROOT", "").strip().lstrip("%")
            ops.append(f"{m.group(1)}:{name}")
    return len(ops), ops


# ------------------------------------------------------------------------------------------
# Optional frameworks
def _try_torch(platform_name: str):
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        return None, f"torch not importable ({type(e).__name__}: {e}): torch columns skipped."
    if platform_name == "gpu" and not torch.cuda.is_available():
        return None, "torch has no CUDA here: torch columns skipped."
    return torch, None


def _try_ort(platform_name: str):
    if platform_name != "cpu":
        return None, ("ONNX Runtime skipped on the GPU: host<->device copies would dominate a "
                      "one-node graph fed from numpy (no IO binding in this harness).")
    try:
        import onnx  # noqa: F401
        import onnxruntime
    except Exception as e:  # noqa: BLE001
        return None, f"onnxruntime/onnx not importable ({type(e).__name__}): ORT column skipped."
    return onnxruntime, None


_ONNX_TYPES = {"float32": 1, "uint8": 2, "float16": 10, "bool": 9}


def _ort_session(ort, case: Case, arrays, threads: int):
    from onnx import helper, numpy_helper

    op_type, node_attrs, consts = case.onnx
    feeds_np = [np.asarray(a) for a in arrays]
    if op_type == "Where":
        feeds_np[0] = feeds_np[0].astype(bool)
    ins = [helper.make_tensor_value_info(f"in{i}", _ONNX_TYPES[str(a.dtype)], [a.shape[0]])
           for i, a in enumerate(feeds_np)]
    inits, names = [], [f"in{i}" for i in range(len(feeds_np))]
    fdt = next(a.dtype for a in feeds_np if a.dtype.kind == "f")
    for j, c in enumerate(consts):
        inits.append(numpy_helper.from_array(np.asarray(c, fdt), f"c{j}"))
        names.append(f"c{j}")
    out_dt = "bool" if op_type == "Less" else str(fdt)
    outs = [helper.make_tensor_value_info("out", _ONNX_TYPES[out_dt], [feeds_np[0].shape[0]])]
    node = helper.make_node(op_type, names, ["out"], **node_attrs)
    model = helper.make_model(helper.make_graph([node], "g", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess, feeds_np


# ------------------------------------------------------------------------------------------
# The suite
def _bar(total: int, enabled: bool, desc: str):
    class _Null:
        def update(self, n=1): pass
        def set_postfix_str(self, s): pass
        def close(self): pass
    if not enabled:
        return _Null()
    try:
        from tqdm.auto import tqdm
        return tqdm(total=total, desc=desc, file=sys.stderr, dynamic_ncols=True)
    except ImportError:
        pass
    try:
        from rich.progress import Progress

        class _Rich:
            def __init__(self):
                self.p = Progress(transient=False)
                self.p.start()
                self.t = self.p.add_task(desc, total=total)
            def update(self, n=1): self.p.advance(self.t, n)
            def set_postfix_str(self, s): self.p.update(self.t, description=f"{desc} {s}")
            def close(self): self.p.stop()
        return _Rich()
    except ImportError:
        return _Null()


def _meta(platform_name, torch, ort, args) -> dict:
    import jax
    import jaxlib

    import dmljax
    dev = jax.devices()[0]
    meta = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "platform": platform_name,
        "device": getattr(dev, "device_kind", str(dev)),
        "devices": len(jax.devices()),
        "host": platform.node(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
        "python": platform.python_version(), "numpy": np.__version__,
        "jax": jax.__version__, "jaxlib": jaxlib.__version__, "dmljax": dmljax.__version__,
        "torch": getattr(torch, "__version__", None),
        "torch_cuda": getattr(getattr(torch, "version", None), "cuda", None),
        "onnxruntime": getattr(ort, "__version__", None),
        "args": vars(args) if args is not None else None,
        "method": ("median per-call time over repetitions; each repetition = `inner` back-to-back "
                   "calls over rotating random input sets, one synchronisation at the end "
                   "(block_until_ready / torch.cuda.synchronize); warm-up and compilation excluded. "
                   "On GPU also device-side: CUDA events (torch) and profiler kernel durations "
                   "(JAX, CUPTI) at the largest size. GB/s = (bytes of every input + output) / time."),
    }
    try:
        meta["jax_env"] = jax.print_environment_info(return_string=True)
    except Exception:  # noqa: BLE001
        pass
    if platform_name == "gpu":
        try:
            import subprocess
            meta["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,"
                 "clocks.mem,power.limit,temperature.gpu", "--format=csv"],
                capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:  # noqa: BLE001
            pass
        try:
            from jax._src.lib import cuda_versions
            if cuda_versions is not None:
                meta["cuda_runtime"] = cuda_versions.cuda_runtime_get_version()
                meta["cuda_driver"] = cuda_versions.cuda_driver_get_version()
                meta["cudnn"] = cuda_versions.cudnn_get_version()
        except Exception:  # noqa: BLE001
            pass
    return meta


class Suite:
    def __init__(self, args):
        import jax
        self.args = args
        self.jax = jax
        self.platform = jax.devices()[0].platform
        self.platform = "gpu" if self.platform in ("gpu", "cuda", "rocm") else self.platform
        self.notes: list[str] = []
        self.torch, note = (None, "torch disabled (--no-torch).") if args.no_torch else _try_torch(self.platform)
        if note:
            self.notes.append(note)
        self.ort, note = (None, "ONNX Runtime disabled (--no-ort).") if args.no_ort else _try_ort(self.platform)
        if note:
            self.notes.append(note)
        self.tdev = "cuda" if self.platform == "gpu" else "cpu"
        if self.torch is not None:
            dyn = self.torch._dynamo.config
            for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
                if hasattr(dyn, k):
                    setattr(dyn, k, max(getattr(dyn, k), 512))
        self.events = self.torch.cuda if (self.torch is not None and self.platform == "gpu") else None
        self.cache_bytes = 50 << 20 if self.platform == "gpu" else 64 << 20
        self.t_start = time.perf_counter()
        self.meta = _meta(self.platform, self.torch, self.ort, args)
        self.records: list[dict] = []
        self.extras: dict = {}
        self._compiled: dict = {}

    # -- helpers
    def n_sets(self, bytes_per_set: int) -> int:
        return int(min(8, max(2, math.ceil(3 * self.cache_bytes / max(bytes_per_set, 1)))))

    def over_budget(self) -> bool:
        return self.args.time_budget is not None and time.perf_counter() - self.t_start > self.args.time_budget

    def tsync(self, out):
        if self.tdev == "cuda":
            self.torch.cuda.synchronize()

    def to_torch(self, arrays):
        # Own copies: tensors that borrow JAX's buffers through DLPack made torch.compile's calls
        # ~10x slower on CPU (measured); the values are the same.
        return [self.torch.from_dlpack(a).clone() for a in arrays]

    def torch_compiled(self, case: Case, dtype: str, static: bool):
        key = (case.enum_name, dtype, static)
        if key not in self._compiled:
            # Dynamo caches by code object, so these wrappers share one cache: the recompile
            # limits are raised in __init__ (functools.partial measured 50x slower on CPU).
            torch, fn = self.torch, case.torch
            self._compiled[key] = torch.compile(lambda *xs: fn(torch, *xs), dynamic=False if static else True)
        return self._compiled[key]

    # -- one operator, one type, one size
    def throughput(self, op, case: Case, dtype: str, n: int, largest: bool) -> dict | None:
        jax = self.jax
        first = make_inputs(op, case, 8, dtype, 0)
        if first is None:
            return None
        per_set = sum(a.nbytes for a in first) // 8 * n
        n_sets = self.n_sets(per_set)
        sets = [make_inputs(op, case, n, dtype, s) for s in range(n_sets)]
        shape = jax.eval_shape(lambda *x: op(*x, **case.attrs), *sets[0])
        outs = shape if isinstance(shape, (tuple, list)) else (shape,)
        out_bytes = sum(np.dtype(o.dtype).itemsize * n for o in outs)
        nbytes = per_set + out_bytes
        rec = {"op": op.spec.enum_name, "dtype": dtype, "n": n, "bytes": int(nbytes), "input_sets": n_sets,
               "variants": {}, "device": {}, "notes": []}
        budget = self.args.budget_per_point
        V = rec["variants"]

        def put(name, timing: Timing, b=nbytes):
            d = timing.asdict()
            d["gbps"] = b / timing.s / 1e9
            V[name] = d

        attrs = case.attrs
        user = jax.jit(lambda *xs: op(*xs, **attrs))
        put("dmljax_jit", time_calls(lambda i: user(*sets[i]), n_sets, _jax_sync, budget_s=budget))
        put("dmljax_call", time_calls(lambda i: op(*sets[i], **attrs), n_sets, _jax_sync, budget_s=budget))
        jfn = None
        if case.jnp is not None:
            jfn = jax.jit(case.jnp)
            put("jnp_jit", time_calls(lambda i: jfn(*sets[i]), n_sets, _jax_sync, budget_s=budget))
        if jfn is not None:
            rec["paired"] = {"dmljax_jit/jnp_jit_time": time_paired(
                lambda i: user(*sets[i]), lambda i: jfn(*sets[i]), n_sets, _jax_sync, budget_s=2 * budget)}
        copy_sets = [s[-1] for s in sets]
        cbytes = 2 * copy_sets[0].nbytes
        jcopy = jax.jit(lambda x: x.copy())
        put("jax_copy", time_calls(lambda i: jcopy(copy_sets[i]), n_sets, _jax_sync, budget_s=budget), cbytes)
        torch = self.torch
        if torch is not None:
            tsets = [self.to_torch(s) for s in sets]
            dst = torch.empty_like(tsets[0][-1])
            put("copy", time_calls(lambda i: dst.copy_(tsets[i][-1]), n_sets, self.tsync, budget_s=budget,
                                   events=self.events), cbytes)
            if case.torch is not None:
                fn = case.torch
                try:
                    put("torch_eager", time_calls(lambda i: fn(torch, *tsets[i]), n_sets, self.tsync,
                                                  budget_s=budget, events=self.events))
                except Exception as e:  # noqa: BLE001
                    rec["notes"].append(f"torch eager failed: {type(e).__name__}: {str(e)[:200]}")
                if not self.args.no_compile:
                    try:
                        cf = self.torch_compiled(case, dtype, static=largest)
                        put("torch_compile", time_calls(lambda i: cf(*tsets[i]), n_sets, self.tsync,
                                                        budget_s=budget, events=self.events))
                        V["torch_compile"]["shapes"] = "static" if largest else "dynamic"
                    except Exception as e:  # noqa: BLE001
                        rec["notes"].append(f"torch.compile failed: {type(e).__name__}: {str(e)[:200]}")
        else:
            V["copy"] = dict(V["jax_copy"])
        if self.ort is not None and case.onnx is not None:
            try:
                built = [_ort_session(self.ort, case, s, self.args.threads or os.cpu_count()) for s in sets]
                sess = built[0][0]
                names = [i.name for i in sess.get_inputs()]
                feeds = [dict(zip(names, f)) for _, f in built]
                put("ort", time_calls(lambda i: sess.run(None, feeds[i]), n_sets, lambda o: None, budget_s=budget))
            except Exception as e:  # noqa: BLE001
                rec["notes"].append(f"ONNX Runtime refused {case.onnx[0]}: {type(e).__name__}: {str(e)[:160]}")
        if self.platform == "gpu" and largest:
            groups = [("dmljax_jit", lambda i: user(*sets[i]))]
            if jfn is not None:
                groups.append(("jnp_jit", lambda i: jfn(*sets[i])))
            groups.append(("jax_copy", lambda i: jcopy(copy_sets[i])))
            try:
                for name, d in jax_device_times(groups, n_sets).items():
                    d["gbps"] = (cbytes if name == "jax_copy" else nbytes) / d["s"] / 1e9
                    rec["device"][name] = d
            except Exception as e:  # noqa: BLE001
                rec["notes"].append(f"profiler failed: {type(e).__name__}: {str(e)[:160]}")
        # kernels in the compiled HLO of each jitted JAX variant
        rec["hlo_kernels"], rec["hlo_ops"] = {}, {}
        for name, f in (("dmljax_jit", user), ("jnp_jit", jfn)):
            if f is not None:
                rec["hlo_kernels"][name], rec["hlo_ops"][name] = hlo_kernel_count(f.lower(*sets[0]).compile().as_text())
        del sets
        if torch is not None:
            del tsets
            if self.tdev == "cuda":
                torch.cuda.empty_cache()
        return rec

    # -- extras
    def fwd_bwd(self, op, case: Case, dtype: str, n: int) -> dict | None:
        jax = self.jax
        if case.jnp is None:
            return None
        probe = make_inputs(op, case, 8, dtype, 0)
        if probe is None:
            return None
        fl = [i for i, a in enumerate(probe) if np.dtype(a.dtype).kind == "f"]
        if not fl:
            return None
        n_sets = self.n_sets(sum(a.nbytes for a in probe) // 8 * n * 3)
        sets = [make_inputs(op, case, n, dtype, 100 + s) for s in range(n_sets)]
        cts = [jax.random.normal(jax.random.PRNGKey(7 + s), (n,), np.float32).astype(sets[0][fl[0]].dtype)
               for s in range(n_sets)]

        def vjp_of(f):
            def g(*args):
                *xs, ct = args

                def h(*fx):
                    full = list(xs)
                    for i, v in zip(fl, fx):
                        full[i] = v
                    return f(*full)
                _, pull = jax.vjp(h, *[xs[i] for i in fl])
                return pull(ct)
            return jax.jit(g)

        attrs = case.attrs
        gd = vjp_of(lambda *xs: op(*xs, **attrs))
        gj = vjp_of(case.jnp)
        budget = self.args.budget_per_point
        rec = {"op": op.spec.enum_name, "dtype": dtype, "n": n, "wrt": fl, "variants": {}, "device": {}}
        rec["variants"]["dmljax_jit"] = time_calls(lambda i: gd(*sets[i], cts[i]), n_sets, _jax_sync, budget_s=budget).asdict()
        rec["variants"]["jnp_jit"] = time_calls(lambda i: gj(*sets[i], cts[i]), n_sets, _jax_sync, budget_s=budget).asdict()
        rec["hlo_kernels"] = {"dmljax_jit": hlo_kernel_count(gd.lower(*sets[0], cts[0]).compile().as_text())[0],
                              "jnp_jit": hlo_kernel_count(gj.lower(*sets[0], cts[0]).compile().as_text())[0]}
        if self.platform == "gpu":
            try:
                rec["device"] = jax_device_times([("dmljax_jit", lambda i: gd(*sets[i], cts[i])),
                                                  ("jnp_jit", lambda i: gj(*sets[i], cts[i]))], n_sets)
            except Exception as e:  # noqa: BLE001
                rec.setdefault("notes", []).append(f"profiler failed: {type(e).__name__}: {str(e)[:160]}")
        torch = self.torch
        if torch is not None and case.torch is not None:
            tsets = [self.to_torch(s) for s in sets]
            tcts = self.to_torch(cts)
            fn = case.torch

            def tg(i):
                xs = list(tsets[i])
                leaves = []
                for j in fl:
                    xs[j] = xs[j].detach().requires_grad_(True)
                    leaves.append(xs[j])
                y = fn(torch, *xs)
                return torch.autograd.grad(y, leaves, tcts[i])
            try:
                rec["variants"]["torch_eager"] = time_calls(tg, n_sets, self.tsync, budget_s=budget,
                                                            events=self.events).asdict()
            except Exception as e:  # noqa: BLE001
                rec.setdefault("notes", []).append(f"torch autograd failed: {type(e).__name__}: {e}")
            del tsets, tcts
        return rec

    def chain(self, dtype: str, n: int) -> dict | None:
        import dmljax
        from dmljax._src.registry import registry
        jax, jnp = self.jax, _jnp()
        if not all(s in registry() for s in SEEDS):
            return None
        known = _known()
        j = {k: known[k].jnp for k in SEEDS}
        t = {k: known[k].torch for k in SEEDS}
        IF, ELU, MOD, THR, POW = SEEDS

        def dml(x, b, c):
            y = dmljax.activation_scaled_elu(x)
            y = dmljax.element_wise_threshold(y, min=-0.5)
            y = dmljax.element_wise_constant_pow(y, exponent=3.0)
            y = dmljax.element_wise_modulus_floor(y, b)
            return dmljax.element_wise_if(c, y, x)

        def plain(x, b, c):
            y = j[ELU](x)
            y = jnp.maximum(y, -0.5)
            y = j[POW](y)
            y = j[MOD](y, b)
            return j[IF](c, y, x)

        def tplain(torch, x, b, c):
            y = t[ELU](torch, x)
            y = torch.clamp_min(y, -0.5)
            y = t[POW](torch, y)
            y = t[MOD](torch, y, b)
            return t[IF](torch, c, y, x)

        def inputs(seed):
            k = jax.random.PRNGKey(1000 + seed)
            a, b = _divisor(k, n, np.dtype(dtype.lower()))
            c = jax.random.bernoulli(jax.random.fold_in(k, 1), 0.5, (n,)).astype(jnp.uint8)
            return jax.block_until_ready([a, b, c])
        per = n * (2 * np.dtype(dtype.lower()).itemsize + 1)
        n_sets = self.n_sets(per)
        sets = [inputs(s) for s in range(n_sets)]
        nbytes = per + n * np.dtype(dtype.lower()).itemsize
        fd, fj = jax.jit(dml), jax.jit(plain)
        budget = self.args.budget_per_point
        rec = {"dtype": dtype, "n": n, "bytes": int(nbytes), "variants": {}, "device": {}, "notes": []}
        for name, f in (("dmljax_jit", fd), ("jnp_jit", fj)):
            tm = time_calls(lambda i: f(*sets[i]), n_sets, _jax_sync, budget_s=budget)
            rec["variants"][name] = dict(tm.asdict(), gbps=nbytes / tm.s / 1e9)
            text = f.lower(*sets[0]).compile().as_text()
            count, names = hlo_kernel_count(text)
            rec[f"hlo_kernels_{name}"] = count
            rec[f"hlo_ops_{name}"] = names
            rec[f"hlo_text_{name}"] = text[:40000]
        if self.platform == "gpu":
            try:
                rec["device"] = jax_device_times([("dmljax_jit", lambda i: fd(*sets[i])),
                                                  ("jnp_jit", lambda i: fj(*sets[i]))], n_sets)
                for d in rec["device"].values():
                    d["gbps"] = nbytes / d["s"] / 1e9
            except Exception as e:  # noqa: BLE001
                rec["notes"].append(f"profiler failed: {type(e).__name__}: {str(e)[:160]}")
        torch = self.torch
        if torch is not None:
            tsets = [self.to_torch(s) for s in sets]
            for name, fn in (("torch_eager", lambda *xs: tplain(torch, *xs)),
                             ("torch_compile", None if self.args.no_compile else
                              torch.compile(lambda *xs: tplain(torch, *xs), dynamic=False))):
                if fn is None:
                    continue
                try:
                    tm = time_calls(lambda i: fn(*tsets[i]), n_sets, self.tsync, budget_s=budget, events=self.events)
                    rec["variants"][name] = dict(tm.asdict(), gbps=nbytes / tm.s / 1e9)
                except Exception as e:  # noqa: BLE001
                    rec["notes"].append(f"{name} failed: {type(e).__name__}: {str(e)[:200]}")
            del tsets
        return rec

    def compile_times(self, op, case: Case, n: int, reps: int = 3) -> dict | None:
        jax = self.jax
        args = make_inputs(op, case, n, "FLOAT32", 3)
        if args is None:
            return None
        attrs = case.attrs
        out = {"op": op.spec.enum_name, "n": n}

        def med(fn):
            ts = []
            for _ in range(reps):
                jax.clear_caches()
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            return statistics.median(ts)
        out["dmljax_jit_lower_compile_s"] = med(lambda: jax.jit(lambda *x: op(*x, **attrs)).lower(*args).compile())
        out["dmljax_first_call_s"] = med(lambda: jax.block_until_ready(op(*args, **attrs)))
        if case.jnp is not None:
            out["jnp_jit_lower_compile_s"] = med(lambda: jax.jit(case.jnp).lower(*args).compile())
            out["jnp_first_call_s"] = med(lambda: jax.block_until_ready(jax.jit(case.jnp)(*args)))
        return out

    def overhead(self, op, case: Case, n: int) -> dict | None:
        jax = self.jax
        sets = [make_inputs(op, case, n, "FLOAT32", 50 + s) for s in range(4)]
        if sets[0] is None:
            return None
        attrs = case.attrs
        user = jax.jit(lambda *xs: op(*xs, **attrs))
        rec = {"op": op.spec.enum_name, "n": n, "dispatch_us": {}, "latency_us": {}}
        variants = [("dmljax_call", lambda i: op(*sets[i], **attrs)), ("dmljax_jit", lambda i: user(*sets[i]))]
        if case.jnp is not None:
            jfn = jax.jit(case.jnp)
            variants += [("jnp_jit", lambda i: jfn(*sets[i])), ("jnp_eager", lambda i: case.jnp(*sets[i]))]
        b = min(self.args.budget_per_point, 0.1)
        for name, f in variants:
            rec["dispatch_us"][name] = time_calls(f, 4, _jax_sync, budget_s=b).s * 1e6
            rec["latency_us"][name] = time_calls(lambda i, f=f: jax.block_until_ready(f(i)), 4, _jax_sync,
                                                 budget_s=b, target_rep_s=0).s * 1e6
        if self.torch is not None and case.torch is not None:
            tsets = [self.to_torch(s) for s in sets]
            fn, torch = case.torch, self.torch
            rec["dispatch_us"]["torch_eager"] = time_calls(lambda i: fn(torch, *tsets[i]), 4, self.tsync, budget_s=b).s * 1e6
        return rec


def _sizes(spec: str) -> list[int]:
    """"10:24:2" (powers of two, inclusive, with a step) or "10,16,20" (exponents)."""
    if ":" in spec:
        parts = [int(p) for p in spec.split(":")]
        lo, hi = parts[0], parts[1]
        step = parts[2] if len(parts) > 2 else 1
        exps = list(range(lo, hi + 1, step))
        if exps[-1] != hi:
            exps.append(hi)
    else:
        exps = [int(p) for p in spec.split(",") if p.strip()]
    return [1 << e for e in sorted(set(exps))]


def run_suite(args) -> dict:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    from dmljax._src.registry import get_operator

    suite = Suite(args)
    sel, notes = cases(args.ops)
    suite.notes += notes
    for c in sel:
        if c.note:
            suite.notes.append(f"{c.enum_name}: {c.note}")
    if args.sizes:
        sizes = _sizes(args.sizes)
    else:
        sizes = _sizes("10:28:2" if suite.platform == "gpu" else "10:24:2")
    dtypes = [d.upper() for d in args.dtypes]
    largest = sizes[-1]
    work = [(c, d, n) for n in reversed(sizes) for c in sel for d in dtypes]
    extras = len(dtypes) + (len(sel) * len(dtypes) if not args.no_grad else 0) + 2 * len(sel)
    bar = _bar(len(work) + extras, not args.quiet, "dmljax bench")
    done = 0

    # usable cases (the call must validate)
    ok = []
    for c in sel:
        op = get_operator(c.enum_name)
        try:
            probe = make_inputs(op, c, 4, "FLOAT32", 0) or make_inputs(op, c, 4, "FLOAT16", 0)
            if probe is None:
                raise ValueError("no FLOAT32/FLOAT16 inputs")
            op(*probe, **c.attrs)
            ok.append(c)
        except Exception as e:  # noqa: BLE001
            suite.notes.append(f"{c.enum_name}: skipped ({type(e).__name__}: {str(e)[:200]}).")
    okn = {c.enum_name for c in ok}

    def step(label):
        nonlocal done
        done += 1
        bar.set_postfix_str(label)
        bar.update(1)

    def rest(cond):
        return [w for w in work if w[0].enum_name in okn and cond(w)]

    for c, d, n in rest(lambda w: w[2] == largest):
        r = suite.throughput(get_operator(c.enum_name), c, d, n, largest=True)
        if r:
            suite.records.append(r)
        step(f"{c.enum_name[13:]} {d} 2^{n.bit_length() - 1}")
    def checkpoint():
        if args.out:
            try:
                part = {"meta": suite.meta, "sizes": sizes, "dtypes": dtypes, "throughput": suite.records,
                        **suite.extras, "notes": suite.notes + ["partial results (checkpoint)"]}
                os.makedirs(args.out, exist_ok=True)
                with open(os.path.join(args.out, "results.json"), "w") as f:
                    json.dump(part, f, indent=1, default=str)
            except Exception:  # noqa: BLE001
                pass

    checkpoint()
    seeds_first = sorted(ok, key=lambda c: c.enum_name not in SEEDS)
    suite.extras["chain"] = []
    for d in dtypes:
        r = suite.chain(d, largest)
        if r:
            suite.extras["chain"].append(r)
        step(f"chain {d}")
    suite.extras["fwd_bwd"] = []
    checkpoint()
    if not args.no_grad:
        for c in seeds_first:
            for d in dtypes:
                if suite.over_budget():
                    step("skipped (time budget)")
                    suite.notes.append(f"fwd+bwd {c.enum_name} {d}: skipped (time budget).")
                    continue
                r = suite.fwd_bwd(get_operator(c.enum_name), c, d, largest)
                if r:
                    suite.extras["fwd_bwd"].append(r)
                step(f"grad {c.enum_name[13:]} {d}")
    suite.extras["compile"], suite.extras["overhead"] = [], []
    small = sizes[0]
    checkpoint()
    for c in seeds_first:
        op = get_operator(c.enum_name)
        if suite.over_budget():
            step("skipped (time budget)")
            step("skipped (time budget)")
            suite.notes.append(f"compile/overhead {c.enum_name}: skipped (time budget).")
            continue
        r = suite.compile_times(op, c, min(1 << 20, largest), reps=args.compile_reps)
        if r:
            suite.extras["compile"].append(r)
        step(f"compile {c.enum_name[13:]}")
        r = suite.overhead(op, c, small)
        if r:
            suite.extras["overhead"].append(r)
        step(f"overhead {c.enum_name[13:]}")
    checkpoint()
    skipped = 0
    smaller = rest(lambda w: w[2] != largest)
    smaller.sort(key=lambda w: (w[0].enum_name not in SEEDS, -w[2]))
    for c, d, n in smaller:
        if suite.over_budget():
            skipped += 1
            step("skipped (time budget)")
            continue
        r = suite.throughput(get_operator(c.enum_name), c, d, n, largest=False)
        if r:
            suite.records.append(r)
        step(f"{c.enum_name[13:]} {d} 2^{n.bit_length() - 1}")
    bar.close()
    if skipped:
        suite.notes.append(f"{skipped} smaller size points skipped: --time-budget {args.time_budget}s reached.")
    suite.records.sort(key=lambda r: (r["op"], r["dtype"], r["n"]))
    result = {"meta": suite.meta, "sizes": sizes, "dtypes": dtypes, "throughput": suite.records,
              **suite.extras, "notes": suite.notes}
    result["meta"]["wall_s"] = time.perf_counter() - suite.t_start
    result["targets"] = evaluate_targets(result)
    return result


# ------------------------------------------------------------------------------------------
# Targets, table, plots
def _best_time(rec: dict, name: str) -> tuple[float | None, str]:
    """A variant's per-call time: device-side where taken, else the host figure."""
    if name in rec.get("device", {}):
        return rec["device"][name]["s"], "device"
    v = rec["variants"].get(name)
    if v is None:
        return None, ""
    return v["s"], ("device" if v.get("method") == "cuda-events" else "host")


def evaluate_targets(res: dict) -> list[dict]:
    """Issue 4's targets, each met or missed with the ratio."""
    out = []
    gpu = res["meta"]["platform"] == "gpu"
    largest = res["sizes"][-1]

    def add(what, value, limit, ok, how):
        out.append({"target": what, "value": value, "limit": limit, "met": bool(ok), "basis": how})

    for rec in res["throughput"]:
        if rec["n"] != largest:
            continue
        td, bd = _best_time(rec, "dmljax_jit")
        tj, bj = _best_time(rec, "jnp_jit")
        name = f"{rec['op'][13:]} {rec['dtype']}"
        if gpu:
            if tj:
                add(f"{name}: dmljax/jnp throughput", tj / td, 0.97, tj / td >= 0.97, f"{bd}/{bj}")
            tc, bc = _best_time(rec, "torch_compile")
            if tc:
                add(f"{name}: dmljax/torch.compile throughput", tc / td, 0.97, tc / td >= 0.97, f"{bd}/{bc}")
            tcopy, bcopy = _best_time(rec, "copy")
            if tcopy:
                copy_gbps = 2 * rec["n"] * np.dtype(rec["dtype"].lower()).itemsize / tcopy / 1e9
                frac = rec["bytes"] / td / 1e9 / copy_gbps
                add(f"{name}: dmljax / copy bandwidth", frac, 0.90, frac >= 0.90, f"{bd}/{bcopy}")
        elif "paired" in rec:
            pr = rec["paired"]["dmljax_jit/jnp_jit_time"]
            add(f"{name}: dmljax time / jnp time (CPU)", pr["ratio"], 1.05, pr["ratio"] <= 1.05,
                f"paired (quartiles {pr['p25']:.2f}-{pr['p75']:.2f})")
        elif tj:
            add(f"{name}: dmljax time / jnp time (CPU)", td / tj, 1.05, td / tj <= 1.05, f"{bd}/{bj}")
    for rec in res.get("chain", []):
        k = rec.get("hlo_kernels_dmljax_jit")
        if gpu:
            add(f"chain {rec['dtype']}: kernels in compiled HLO", k, 1, k == 1, "HLO")
            single = next((r for r in res["throughput"] if r["op"] == SEEDS[0] and r["dtype"] == rec["dtype"]
                           and r["n"] == rec["n"]), None)
            if single:
                tc, bc = _best_time(rec, "dmljax_jit")
                ts, bs = _best_time(single, "dmljax_jit")
                add(f"chain {rec['dtype']}: time / ELEMENT_WISE_IF time", tc / ts, 1.15, tc / ts <= 1.15, f"{bc}/{bs}")
    if gpu:
        for rec in res.get("fwd_bwd", []):
            td, bd = _best_time(rec, "dmljax_jit")
            tj, bj = _best_time(rec, "jnp_jit")
            add(f"{rec['op'][13:]} {rec['dtype']}: fwd+bwd time / jnp autodiff", td / tj, 1.1, td / tj <= 1.1, f"{bd}/{bj}")
    return out


def _fmt(x, nd=None):
    if x is None:
        return "-"
    if nd is None:
        nd = 0 if abs(x) >= 100 else (1 if abs(x) >= 10 else 2)
    return f"{x:,.{nd}f}"


def _size_tables(res, ops, cell) -> list[str]:
    """One Markdown table per data type: an operator a row, a size a column, ``cell(record)``."""
    L = []
    for d in res["dtypes"]:
        L.append(f"| {d} | " + " | ".join(f"2^{n.bit_length() - 1}" for n in res["sizes"]) + " |")
        L.append("|---|" + "---|" * len(res["sizes"]))
        for op in ops:
            cells = []
            for n in res["sizes"]:
                rec = next((r for r in res["throughput"] if r["op"] == op and r["dtype"] == d and r["n"] == n), None)
                cells.append("-" if rec is None else cell(rec))
            L.append(f"| {op[13:]} | " + " | ".join(cells) + " |")
        L.append("")
    return L


def markdown(res: dict) -> str:
    m = res["meta"]
    gpu = m["platform"] == "gpu"
    largest = res["sizes"][-1]
    L = [f"# dmljax bench: {m['device']} ({m['platform']})", "",
         f"{m['date']}; jax {m['jax']}, jaxlib {m['jaxlib']}, dmljax {m['dmljax']}, numpy {m['numpy']}, "
         f"torch {m['torch'] or 'absent'}" + (f" (CUDA {m['torch_cuda']})" if m.get("torch_cuda") else "")
         + f", onnxruntime {m['onnxruntime'] or 'absent/unused'}, python {m['python']}, {m['cpu_count']} CPUs.", "",
         f"Method: {m['method']}", ""]
    L += [f"## Throughput at 2^{largest.bit_length() - 1} elements, GB/s (bytes read + written / time)", ""]
    if gpu:
        L += ["JAX columns: device time from profiler kernel durations; torch and copy: CUDA events. "
              "`dmljax (call)` is host-timed.", ""]
    cols = ["dmljax_jit", "dmljax_call", "jnp_jit", "torch_eager", "torch_compile", "ort", "copy"]
    L.append("| operator | type | " + " | ".join(LABELS[c] for c in cols) + " | dmljax/jnp | dmljax/torch.compile | dmljax/copy |")
    L.append("|" + "---|" * (len(cols) + 5))
    for rec in res["throughput"]:
        if rec["n"] != largest:
            continue
        g = {}
        for c in cols:
            t, _ = _best_time(rec, c) if c != "dmljax_call" else (rec["variants"].get(c, {}).get("s"), "")
            b = rec["bytes"] if c != "copy" else 2 * rec["n"] * np.dtype(rec["dtype"].lower()).itemsize
            g[c] = b / t / 1e9 if t else None
        r = lambda a, b: (f"{g[a] / g[b]:.3f}" if g[a] and g[b] else "-")  # noqa: E731
        pr = rec.get("paired", {}).get("dmljax_jit/jnp_jit_time") if not gpu else None
        vs_jnp = f"{1 / pr['ratio']:.3f} (paired)" if pr else r("dmljax_jit", "jnp_jit")
        L.append(f"| {rec['op'][13:]} | {rec['dtype']} | " + " | ".join(_fmt(g[c]) for c in cols)
                 + f" | {vs_jnp} | {r('dmljax_jit', 'torch_compile')} | {r('dmljax_jit', 'copy')} |")
    L += ["", "## Throughput over sizes (dmljax in jit / jnp formula, host-timed GB/s)", ""]
    ops = sorted({r["op"] for r in res["throughput"]})

    def throughput_cell(rec):
        a = rec["variants"]["dmljax_jit"]["gbps"]
        b = rec["variants"].get("jnp_jit", {}).get("gbps")
        return f"{_fmt(a)} / {_fmt(b)}" if b else _fmt(a)

    def paired_cell(rec):
        pr = rec.get("paired", {}).get("dmljax_jit/jnp_jit_time")
        return f"{pr['ratio']:.2f}" if pr else "-"

    L += _size_tables(res, ops, throughput_cell)
    if any("paired" in r for r in res["throughput"]):
        L += ["## dmljax / jnp time ratio over sizes (paired, side by side; < 1 means dmljax is faster)", ""]
        L += _size_tables(res, ops, paired_cell)
    if res.get("chain"):
        L += ["## The five seed operators chained in one jit", "",
              "| type | variant | GB/s | per call (ms) | kernels (HLO) | kernels (profile) |", "|---|---|---|---|---|---|"]
        for rec in res["chain"]:
            for v in rec["variants"]:
                t, how = _best_time(rec, v)
                k = rec.get(f"hlo_kernels_{v}", "-")
                kp = rec.get("device", {}).get(v, {}).get("kernels_per_call", "-")
                L.append(f"| {rec['dtype']} | {LABELS.get(v, v)} ({how}) | {_fmt(rec['bytes'] / t / 1e9)} | {t * 1e3:.3f} | {k} | {kp} |")
        L.append("")
    if res.get("fwd_bwd"):
        L += [f"## Forward + backward (vjp with a random cotangent), 2^{largest.bit_length() - 1} elements, ms per call", "",
              "| operator | type | dmljax (jit) | jnp autodiff (jit) | torch autograd (eager) | dmljax/jnp time |", "|---|---|---|---|---|---|"]
        for rec in res["fwd_bwd"]:
            ts = {v: _best_time(rec, v)[0] for v in ("dmljax_jit", "jnp_jit", "torch_eager")}
            ratio = f"{ts['dmljax_jit'] / ts['jnp_jit']:.3f}" if ts["jnp_jit"] else "-"
            L.append(f"| {rec['op'][13:]} | {rec['dtype']} | " + " | ".join(
                f"{ts[v] * 1e3:.3f}" if ts[v] else "-" for v in ts) + f" | {ratio} |")
        L.append("")
    if res.get("compile"):
        L += [f"## Trace + compile (FLOAT32, caches cleared, median of {m['args']['compile_reps'] if m.get('args') else 3}), ms", "",
              "| operator | dmljax in jit: lower+compile | jnp: lower+compile | dmljax first direct call | jnp jit first call |",
              "|---|---|---|---|---|"]
        for r in res["compile"]:
            g = lambda k: _fmt(r.get(k, None) and r[k] * 1e3, 1)  # noqa: E731
            L.append(f"| {r['op'][13:]} | {g('dmljax_jit_lower_compile_s')} | {g('jnp_jit_lower_compile_s')} | "
                     f"{g('dmljax_first_call_s')} | {g('jnp_first_call_s')} |")
        L.append("")
    if res.get("overhead"):
        n = res["overhead"][0]["n"]
        L += [f"## Per-call overhead at 2^{n.bit_length() - 1} elements (FLOAT32), µs per call", "",
              "dispatch = back-to-back calls, one sync at the end; latency = sync after every call.", "",
              "| operator | dmljax direct: dispatch / latency | jit(dmljax) | jit(jnp) | jnp eager (op by op) | torch eager dispatch |",
              "|---|---|---|---|---|---|"]
        for r in res["overhead"]:
            d, lt = r["dispatch_us"], r["latency_us"]
            f = lambda k: f"{_fmt(d.get(k), 1)} / {_fmt(lt.get(k), 1)}"  # noqa: E731
            L.append(f"| {r['op'][13:]} | {f('dmljax_call')} | {f('dmljax_jit')} | {f('jnp_jit')} | {f('jnp_eager')} | "
                     f"{_fmt(d.get('torch_eager'), 1)} |")
        L.append("")
    if res.get("targets"):
        L += ["## Targets (issue 4)", "", "| target | value | limit | met | basis |", "|---|---|---|---|---|"]
        for t in res["targets"]:
            v = t["value"]
            L.append(f"| {t['target']} | {v:.3f} | {t['limit']} | {'yes' if t['met'] else '**no**'} | {t['basis']} |"
                     if isinstance(v, float) else f"| {t['target']} | {v} | {t['limit']} | {'yes' if t['met'] else '**no**'} | {t['basis']} |")
        L.append("")
    if res.get("notes") or any(r.get("notes") for r in res["throughput"]):
        L += ["## Notes", ""] + [f"- {n}" for n in res["notes"]]
        seen = {}
        for rec in res["throughput"]:
            for n in rec.get("notes", []):
                seen.setdefault((rec["op"], n[:60]), (n, []))[1].append(f"{rec['dtype']} 2^{rec['n'].bit_length() - 1}")
        for (op, _), (n, where) in seen.items():
            L.append(f"- {op[13:]} ({', '.join(where)}): {n}")
        L.append("")
    return "\n".join(L)


def plot(res: dict, folder: str) -> list[str]:
    """One PNG per data type: GB/s against size, one panel per operator."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        res["notes"].append("matplotlib not importable: no plots (pip install dmljax[bench]).")
        return []
    paths = []
    ops = sorted({r["op"] for r in res["throughput"]})
    styles = {"dmljax_jit": ("C0", "-", "o"), "dmljax_call": ("C0", ":", "."), "jnp_jit": ("C1", "--", "s"),
              "torch_eager": ("C2", ":", "v"), "torch_compile": ("C2", "-", "^"), "ort": ("C4", "-.", "d"),
              "copy": ("k", "-", None)}
    for d in res["dtypes"]:
        recs = [r for r in res["throughput"] if r["dtype"] == d]
        if not recs:
            continue
        cols = min(3, len(ops))
        rows = math.ceil(len(ops) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False, sharey=True)
        for ax, op in zip(axes.flat, ops):
            mine = sorted((r for r in recs if r["op"] == op), key=lambda r: r["n"])
            for v, (c, ls, mk) in styles.items():
                xs = [r["n"] for r in mine if v in r["variants"]]
                ys = [r["variants"][v]["gbps"] for r in mine if v in r["variants"]]
                if xs:
                    ax.plot(xs, ys, color=c, linestyle=ls, marker=mk, ms=3, label=LABELS[v])
            ax.set_xscale("log", base=2)
            ax.set_title(op[13:], fontsize=9)
            ax.grid(alpha=0.3)
            ax.set_xlabel("elements")
        for ax in axes.flat[len(ops):]:
            ax.axis("off")
        axes[0][0].set_ylabel("GB/s (host-timed)")
        h, lab = axes[0][0].get_legend_handles_labels()
        fig.legend(h, lab, loc="lower center", ncol=len(lab), fontsize=8)
        fig.suptitle(f"{res['meta']['device']}: {d}, jax {res['meta']['jax']}", fontsize=10)
        fig.tight_layout(rect=(0, 0.05, 1, 0.96))
        p = os.path.join(folder, f"throughput_{d}.png")
        fig.savefig(p, dpi=90)
        plt.close(fig)
        paths.append(p)
    return paths


def write_outputs(res: dict, folder: str) -> dict[str, str]:
    os.makedirs(folder, exist_ok=True)
    pngs = plot(res, folder)
    md = markdown(res)
    paths = {"json": os.path.join(folder, "results.json"), "md": os.path.join(folder, "results.md")}
    with open(paths["md"], "w") as f:
        f.write(md + "\n")
    with open(paths["json"], "w") as f:
        json.dump(res, f, indent=1, default=str)
    for p in pngs:
        paths[os.path.basename(p)] = p
    return paths


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    p = parser or argparse.ArgumentParser(prog="dmljax bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", nargs="*", default=None,
                   help="operators (DML enum, short or Python name); default: every registered one")
    p.add_argument("--dtypes", nargs="*", default=["FLOAT32", "FLOAT16"], help="data types (default FLOAT32 FLOAT16)")
    p.add_argument("--sizes", default=None,
                   help='log2 element counts: "LO:HI[:STEP]" or "a,b,c" (default 10:28:2 on GPU, 10:24:2 on CPU)')
    p.add_argument("--out", default="dmljax-bench", help="folder for results.json, results.md and PNG plots")
    p.add_argument("--budget-per-point", type=float, default=0.25,
                   help="seconds of timed calls per measurement (at least 7 repetitions)")
    p.add_argument("--time-budget", type=float, default=None,
                   help="seconds after which the remaining smaller sizes are skipped")
    p.add_argument("--threads", type=int, default=None, help="ONNX Runtime intra-op threads (default: all CPUs)")
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch columns")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    p.add_argument("--no-grad", action="store_true", help="skip forward+backward")
    p.add_argument("--compile-reps", type=int, default=3, help="repetitions of each trace+compile timing")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: Sequence[str] | None = None, args: argparse.Namespace | None = None) -> int:
    if args is None:
        args = build_parser().parse_args(argv)
    res = run_suite(args)
    paths = write_outputs(res, args.out)
    md = markdown(res)
    print(md)
    print("\nwritten: " + ", ".join(paths.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
