"""What a run measures: the operators (by name, from the registry), the data types each one takes
and validates in, the chain's types, and the sizes that fit in memory; and the optional
frameworks found. ``plan`` raises BenchError, with a one-line message, when nothing at all can
run; everything it skips otherwise is in the plan's notes.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from dmljax._src.dtypes import DataType
from dmljax._src.validate import MAX_ELEMENTS
from dmljax.bench import chain as chains
from dmljax.bench import memory
from dmljax.bench.cases import Case, select
from dmljax.bench.frameworks import load_ort, load_torch
from dmljax.bench.inputs import LAYOUTS, RECIPE_LAYOUT, input_kinds, input_sets, input_structs, unsupported

__all__ = ["Options", "BenchError", "Pair", "Plan", "plan", "point_need", "cache_bytes", "DEFAULT_EXPONENTS",
           "short_error", "pow2", "copies"]

DEFAULT_EXPONENTS = {"gpu": range(10, 29, 2), "cpu": range(10, 25, 2)}  # log2 sizes when --sizes is not given
_PROBE = 64  # elements per input when a layout is checked (8 x 8 in the square ones)


@dataclasses.dataclass(frozen=True)
class Options:
    """What to run (``dmljax bench``'s options, already checked by cli.py)."""

    ops: tuple[str, ...] | None = None  # operator names; None: every registered one
    dtypes: tuple[str, ...] = ("FLOAT32", "FLOAT16")
    sizes: tuple[int, ...] | None = None  # element counts; None: DEFAULT_EXPONENTS
    out: str | None = "dmljax-bench"
    budget_per_point: float = 0.25
    time_budget: float | None = None
    threads: int | None = None
    no_torch: bool = False
    no_compile: bool = False
    no_ort: bool = False
    no_grad: bool = False
    no_chain: bool = False
    no_overhead: bool = False
    compile_reps: int = 3
    quiet: bool = False


class BenchError(Exception):
    """A run that can't start; ``status`` is the exit status (2: usage, 1: can't run here)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass
class Pair:
    """An operator in one data type that validates: its bytes per element and input kinds."""

    case: Case
    dtype: str
    kinds: tuple[str, ...]
    in_bpe: int  # bytes per element of all inputs
    out_bpe: int  # of all outputs
    last_bpe: int  # of the last input (what the copy moves)
    layout: str = "flat"  # how its inputs are shaped (inputs.LAYOUTS)


@dataclasses.dataclass
class ChainPlan:
    """One chain that can run: its operators as cases and the types it runs in."""

    chain: chains.Chain
    cases: list[Case]
    dtypes: list[str]


@dataclasses.dataclass
class Plan:
    """What a run measures, and the optional frameworks it found (None: absent or disabled)."""

    options: Options
    platform: str
    pairs: list[Pair]
    sizes: list[int]
    dtypes: list[str]
    chains: list[ChainPlan]
    notes: list[str]
    torch: object = None
    ort: object = None
    unmeasured: list[str] = dataclasses.field(default_factory=list)  # why each operator --ops asked for has no pair


def _platform() -> str:
    p = jax.devices()[0].platform
    return "gpu" if p in ("gpu", "cuda", "rocm") else p


def short_error(e: BaseException, limit: int = 240) -> str:
    """``Type: the first lines of the message``, cut to ``limit`` characters (for a note)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    text = " ".join(lines[:3]) if lines else ""
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def pow2(n: int) -> str:
    """``2^10`` for 1024."""
    return f"2^{n.bit_length() - 1}"


def copies(case: Case, torch, ort) -> int:
    """How many times the input sets are held: JAX's, and PyTorch's and ONNX Runtime's copies."""
    return 1 + int(torch is not None and case.recipe.torch is not None) + int(ort is not None and case.recipe.onnx is not None)


def cache_bytes(platform_name: str) -> int:
    """The last-level cache the input sets together must exceed (a generous guess per platform)."""
    return 50 << 20 if platform_name == "gpu" else 64 << 20


def point_need(pair: Pair, n: int, platform_name: str, torch=None, ort=None) -> int:
    """Bytes one throughput point needs (memory.need)."""
    sets = input_sets(pair.in_bpe * n, cache_bytes(platform_name))
    return memory.need(n, pair.in_bpe, pair.out_bpe, sets, copies(pair.case, torch, ort))


def plan(options: Options) -> Plan:
    """Check what can run: names, types (64-bit mode), each operator's support and validation in
    each type, the chain's types, and which sizes fit in memory. Raises BenchError when nothing
    can run; everything skipped otherwise is in ``notes``."""
    platform_name = _platform()
    try:
        selected, notes = select(options.ops)
    except ValueError as e:
        raise BenchError(f"--ops: {e}", 2) from None
    wide = [d for d in options.dtypes if DataType.parse(d).needs_x64]
    if wide and not jax.config.jax_enable_x64:
        raise BenchError(
            f"--dtypes: {', '.join(wide)} need{'s' if len(wide) == 1 else ''} JAX's 64-bit mode, which is off; without it JAX would "
            "silently narrow them to 32 bits. Tip: run with JAX_ENABLE_X64=1 in the environment "
            "(dmljax bench does not switch it on for you).", 2)
    pairs, untyped, unmeasured = [], {}, {}
    for case in selected:
        for d in options.dtypes:
            if unsupported(case, d) is not None:
                untyped.setdefault(d, []).append(case.short_name)
                continue
            kinds = input_kinds(case, d)
            first_error = None
            layouts = (RECIPE_LAYOUT,) if case.recipe.shapes is not None else LAYOUTS
            for layout in layouts:  # the first way of shaping the inputs that the record validates
                probe = input_structs(case, _PROBE, d, kinds, layout)
                try:
                    out = jax.eval_shape(case.dmljax(d), *probe)
                except Exception as e:  # noqa: BLE001  (dmljax refuses the call: the next layout)
                    first_error = first_error or e
                    continue
                break
            else:
                why = f"{case.short_name} {d}: not measured: dmljax refuses the benchmark's call in every layout of " \
                      f"its inputs ({', '.join(layouts)}); {layouts[0]}: {short_error(first_error)}"
                notes.append(why + ".")
                unmeasured.setdefault(case.short_name, []).append(why)
                continue
            outs = out if isinstance(out, (tuple, list)) else (out,)
            def bytes_of(arrays):
                return sum(np.dtype(a.dtype).itemsize * math.prod(a.shape) for a in arrays)
            largest = max(math.prod(a.shape) for a in probe) or 1  # bytes per element of the largest input
            pairs.append(Pair(case, d, kinds, in_bpe=max(1, math.ceil(bytes_of(probe) / largest)),
                              out_bpe=max(1, math.ceil(bytes_of(outs) / largest)),
                              last_bpe=np.dtype(probe[-1].dtype).itemsize, layout=layout))
    notes += [f"{d}: skipped for {', '.join(names)} (not in {'its' if len(names) == 1 else 'their'} support "
              f"table{'s' if len(names) > 1 else ''})." for d, names in untyped.items()]
    chain_plans = []
    for chain in () if options.no_chain else chains.CHAINS:
        chain_cases, why = chains.chain_cases(chain)
        if chain_cases is None:
            notes.append(f"chain of {chain.name}: skipped: {why}.")
            continue
        dtypes = []
        for d in options.dtypes:
            why = chains.unsupported(chain, chain_cases, d)
            if why:
                notes.append(f"chain of {chain.name} {d}: skipped: {why}.")
            else:
                dtypes.append(d)
        if dtypes:
            chain_plans.append(ChainPlan(chain, chain_cases, dtypes))
    measured = {p.case.short_name for p in pairs}
    asked = [] if options.ops is None else [c for c in selected if c.short_name not in measured]
    missing = [f"{c.short_name}: " + ("; ".join(w.split(": ", 1)[1] for w in unmeasured[c.short_name])
                                      if c.short_name in unmeasured else
                                      f"none of {', '.join(options.dtypes)} is in its support table")
               for c in asked]
    if not pairs and not chain_plans:
        raise BenchError("nothing to measure: " + " ".join(notes or ["no operator selected."]), 1)
    torch, torch_note = (None, "torch disabled (--no-torch).") if options.no_torch else load_torch(platform_name)
    ort, ort_note = (None, "ONNX Runtime disabled (--no-ort).") if options.no_ort else load_ort(platform_name)
    notes += [n for n in (torch_note, ort_note) if n]
    if ort is not None:
        notes += [f"{c.short_name}: {c.recipe.onnx_note}" for c in selected if c.recipe.onnx_note]
    counts = options.sizes or [1 << e for e in DEFAULT_EXPONENTS.get(platform_name, DEFAULT_EXPONENTS["cpu"])]
    sizes, refused = [], []
    free, source = memory.available()
    for n in sorted(set(counts)):
        problems = []
        if n > MAX_ELEMENTS:
            problems.append("more elements than a DirectML tensor may hold (2^32 - 1)")
        if pairs:
            smallest = min(pairs, key=lambda p: point_need(p, n, platform_name, torch, ort))
            least = point_need(smallest, n, platform_name, torch, ort)
            if free is not None and least > free:
                problems.append(f"{smallest.case.short_name} {smallest.dtype} needs {memory.human(least)}, "
                                f"{memory.human(max(free, 0))} available ({source})")
        if problems:
            refused.append(f"{pow2(n)} elements: {'; '.join(problems)}")
        else:
            sizes.append(n)
    if not sizes:
        raise BenchError("--sizes: no size can run here: " + "; ".join(refused)
                         + ". Tip: give smaller --sizes (log2 element counts).", 1)
    notes += [f"size {r} (skipped)." for r in refused]
    return Plan(options, platform_name, pairs, sizes, list(options.dtypes), chain_plans, notes,
                torch, ort, missing)
