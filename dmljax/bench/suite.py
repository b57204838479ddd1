"""The measurements, run over a plan (plan.py).

For each operator x data type x size, in one process and on the same random inputs: the dmljax
operator inside a user's ``jax.jit`` and called directly; the jax.numpy formula (jitted), with
the ratio of the two also measured side by side; PyTorch eager and ``torch.compile`` (when torch
imports); the one-node ONNX graph in ONNX Runtime (CPU); and a device copy. At the largest size
on a GPU, device-side times too. Then, at the largest size: the chain of chain.py,
forward+backward; and trace+compile time and per-call overhead at small sizes.

Nothing here raises for an operator, a type or a size it can't measure: that point is skipped
with a note.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import statistics
import time

import jax
import numpy as np

import dmljax
from dmljax._src.dtypes import DataType
from dmljax.bench import chain as chains
from dmljax.bench import memory
from dmljax.bench.cases import resolve
from dmljax.bench.frameworks import ort_session
from dmljax.bench.hlo import compiled_kernels, hlo_kernel_count
from dmljax.bench.inputs import draw_all, input_sets, kind_type, make_inputs
from dmljax.bench.plan import (
    Options,
    Pair,
    Plan,
    cache_bytes,
    copies,
    plan,
    point_need,
    pow2,
    short_error,
)
from dmljax.bench.progress import progress_bar
from dmljax.bench.ratios import paired_key
from dmljax.bench.targets import evaluate_targets
from dmljax.bench.timing import (
    Timing,
    jax_device_times,
    jax_sync,
    time_calls,
    time_paired,
)

__all__ = ["run_suite", "Suite", "METHOD"]

METHOD = ("median per-call time over repetitions; each repetition = `inner` back-to-back calls over "
          "rotating random input sets, one synchronisation at the end (block_until_ready / "
          "torch.cuda.synchronize); warm-up and compilation excluded. dmljax/jnp also measured side by "
          "side (paired). On GPU also device-side: CUDA events (torch) and profiler kernel durations "
          "(JAX, CUPTI) at the largest size. GB/s = (bytes of every input + output) / time.")

_jax_copy = jax.jit(lambda x: x.copy())  # one function for every point: compiled once per shape


def _meta(platform_name, torch, ort, options: Options) -> dict:
    import jaxlib  # noqa: PLC0415  (only for its version)

    dev = jax.devices()[0]
    meta = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "platform": platform_name,
        "device": getattr(dev, "device_kind", str(dev)),
        "devices": len(jax.devices()),
        "host": platform.node(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
        "python": platform.python_version(), "numpy": np.__version__,
        "jax": jax.__version__, "jaxlib": jaxlib.__version__, "dmljax": dmljax.__version__,
        "x64": bool(jax.config.jax_enable_x64),
        "torch": getattr(torch, "__version__", None),
        "torch_cuda": getattr(getattr(torch, "version", None), "cuda", None),
        "onnxruntime": getattr(ort, "__version__", None),
        "args": dataclasses.asdict(options),
        "method": METHOD,
    }
    try:
        meta["jax_env"] = jax.print_environment_info(return_string=True)
    except Exception:  # noqa: BLE001
        pass
    if platform_name == "gpu":
        try:
            import subprocess  # noqa: PLC0415
            meta["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,"
                 "clocks.mem,power.limit,temperature.gpu", "--format=csv"],
                capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception:  # noqa: BLE001
            pass
        try:
            from jax._src.lib import cuda_versions  # noqa: PLC0415
            if cuda_versions is not None:
                meta["cuda_runtime"] = cuda_versions.cuda_runtime_get_version()
                meta["cuda_driver"] = cuda_versions.cuda_driver_get_version()
                meta["cudnn"] = cuda_versions.cudnn_get_version()
        except Exception:  # noqa: BLE001
            pass
    return meta


class Suite:
    """The measurements, each returning a JSON-ready record (or None when there is nothing to
    measure); the frameworks loaded once."""

    def __init__(self, p: Plan):
        self.plan = p
        self.options = o = p.options
        self.platform = p.platform
        self.notes: list[str] = list(p.notes)
        self.torch, self.ort = p.torch, p.ort
        self.tdev = "cuda" if self.platform == "gpu" else "cpu"
        if self.torch is not None:
            dyn = self.torch._dynamo.config
            for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit", "accumulated_recompile_limit"):
                if hasattr(dyn, k):
                    setattr(dyn, k, max(getattr(dyn, k), 512))
        self.events = self.torch.cuda if (self.torch is not None and self.platform == "gpu") else None
        self.cache_bytes = cache_bytes(self.platform)
        self.t_start = time.perf_counter()
        self.meta = _meta(self.platform, self.torch, self.ort, o)
        self._compiled: dict = {}

    # -- helpers
    def n_sets(self, bytes_per_set: int) -> int:
        return input_sets(bytes_per_set, self.cache_bytes)

    def over_budget(self) -> bool:
        b = self.options.time_budget
        return b is not None and time.perf_counter() - self.t_start > b

    def fits(self, what: str, nbytes: int) -> bool:
        ok, have = memory.fits(nbytes)
        if not ok:
            self.notes.append(f"{what}: skipped: needs {memory.human(nbytes)}, {have}.")
        return ok

    def tsync(self, out):
        if self.tdev == "cuda":
            self.torch.cuda.synchronize()

    def to_torch(self, arrays):
        # Own copies: tensors that borrow JAX's buffers through DLPack made torch.compile's calls
        # ~10x slower on CPU (measured); the values are the same.
        return [self.torch.from_dlpack(a).clone() for a in arrays]

    def torch_compiled(self, key, fn, static: bool):
        if key not in self._compiled:
            # Dynamo caches by code object, so these wrappers share one cache: the recompile
            # limits are raised in __init__ (functools.partial measured 50x slower on CPU).
            self._compiled[key] = self.torch.compile(lambda *xs: fn(*xs), dynamic=not static)
        return self._compiled[key]

    # -- one operator, one type, one size
    def throughput(self, pair: Pair, n: int, largest: bool) -> dict | None:
        case, dtype = pair.case, pair.dtype
        per_set = pair.in_bpe * n
        n_sets = self.n_sets(per_set)
        if not self.fits(f"{case.short_name} {dtype} {pow2(n)}", point_need(pair, n, self.platform, self.torch, self.ort)):
            return None
        sets = [make_inputs(case, n, dtype, s, pair.kinds, pair.layout) for s in range(n_sets)]
        nbytes = per_set + pair.out_bpe * n
        copy_sets = [s[-1] for s in sets]
        cbytes = 2 * pair.last_bpe * n
        rec = {"op": case.enum_name, "dtype": dtype, "n": n, "bytes": int(nbytes), "copy_bytes": int(cbytes),
               "input_sets": n_sets, "variants": {}, "device": {}, "notes": []}
        budget = self.options.budget_per_point
        V = rec["variants"]

        def put(name, timing: Timing, b=nbytes):
            V[name] = dict(timing.asdict(), gbps=b / timing.s / 1e9)

        def attempt(what, fn):
            try:
                fn()
            except Exception as e:  # noqa: BLE001  (one variant failing leaves the others)
                rec["notes"].append(f"{what} failed: {short_error(e, 200)}")

        user = jax.jit(case.dmljax(dtype))
        put("dmljax_jit", time_calls(lambda i: user(*sets[i]), n_sets, jax_sync, budget_s=budget))
        call = case.dmljax(dtype)
        put("dmljax_call", time_calls(lambda i: call(*sets[i]), n_sets, jax_sync, budget_s=budget))
        jfn = None
        if case.recipe.jnp is not None:
            def jnp_variant():
                nonlocal jfn
                f = jax.jit(case.jnp(dtype))
                put("jnp_jit", time_calls(lambda i: f(*sets[i]), n_sets, jax_sync, budget_s=budget))
                rec["paired"] = {paired_key("dmljax_jit", "jnp_jit"): time_paired(
                    lambda i: user(*sets[i]), lambda i: f(*sets[i]), n_sets, jax_sync, budget_s=2 * budget)}
                jfn = f
            attempt("jnp formula", jnp_variant)
        jcopy = _jax_copy
        put("jax_copy", time_calls(lambda i: jcopy(copy_sets[i]), n_sets, jax_sync, budget_s=budget), cbytes)
        torch, tsets = self.torch, None
        if torch is not None:
            tsets = [self.to_torch(s) for s in sets]
            dst = torch.empty_like(tsets[0][-1])
            put("copy", time_calls(lambda i: dst.copy_(tsets[i][-1]), n_sets, self.tsync, budget_s=budget,
                                   events=self.events), cbytes)
            fn = case.torch(torch, dtype)
            if fn is not None:
                attempt("torch eager", lambda: put("torch_eager", time_calls(
                    lambda i: fn(*tsets[i]), n_sets, self.tsync, budget_s=budget, events=self.events)))
                if not self.options.no_compile:
                    def compiled():
                        cf = self.torch_compiled((case.enum_name, dtype, largest), fn, static=largest)
                        put("torch_compile", time_calls(lambda i: cf(*tsets[i]), n_sets, self.tsync,
                                                        budget_s=budget, events=self.events))
                        V["torch_compile"]["shapes"] = "static" if largest else "dynamic"
                    attempt("torch.compile", compiled)
        else:
            V["copy"] = dict(V["jax_copy"])
        node = case.onnx(dtype) if self.ort is not None else None
        if node is not None:
            def ort_variant():
                built = [ort_session(self.ort, node, s, self.options.threads or os.cpu_count()) for s in sets]
                sess = built[0][0]
                names = [i.name for i in sess.get_inputs()]
                feeds = [dict(zip(names, f)) for _, f in built]
                put("ort", time_calls(lambda i: sess.run(None, feeds[i]), n_sets, lambda o: None, budget_s=budget))
            attempt(f"ONNX Runtime {node.op_type}", ort_variant)
        if self.platform == "gpu" and largest:
            groups = [("dmljax_jit", lambda i: user(*sets[i]))]
            if jfn is not None:
                groups.append(("jnp_jit", lambda i: jfn(*sets[i])))
            groups.append(("jax_copy", lambda i: jcopy(copy_sets[i])))

            def device_times():
                for name, d in jax_device_times(groups, n_sets).items():
                    d["gbps"] = (cbytes if name == "jax_copy" else nbytes) / d["s"] / 1e9
                    rec["device"][name] = d
                if torch is None and "jax_copy" in rec["device"]:
                    rec["device"]["copy"] = dict(rec["device"]["jax_copy"])
            attempt("profiler", device_times)
        rec["hlo_kernels"], rec["hlo_ops"] = {}, {}
        for name, f in (("dmljax_jit", user), ("jnp_jit", jfn)):
            if f is not None:
                rec["hlo_kernels"][name], rec["hlo_ops"][name] = compiled_kernels(f, *sets[0])
        sets = copy_sets = tsets = None  # freed before the next point (the closures above hold these cells)
        if torch is not None and self.tdev == "cuda":
            torch.cuda.empty_cache()
        return rec

    # -- extras
    def fwd_bwd(self, pair: Pair, n: int) -> dict | None:
        case, dtype = pair.case, pair.dtype
        if case.recipe.jnp is None or not DataType.parse(dtype).is_float:
            return None
        fl = [i for i, k in enumerate(pair.kinds) if kind_type(k) is None]  # the float inputs
        if not fl:
            return None
        n_sets = self.n_sets(pair.in_bpe * n * 3)
        grad_bpe = pair.in_bpe + DataType.parse(dtype).dtype.itemsize  # inputs and the cotangent
        if not self.fits(f"forward+backward {case.short_name} {dtype} {pow2(n)}",
                         memory.need(n, grad_bpe, pair.in_bpe + pair.out_bpe, n_sets, copies(case, self.torch, None))):
            return None
        sets = [make_inputs(case, n, dtype, 100 + s, pair.kinds, pair.layout) for s in range(n_sets)]
        cts = [jax.random.normal(jax.random.PRNGKey(7 + s), sets[0][fl[0]].shape, np.float32).astype(sets[0][fl[0]].dtype)
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

        gd = vjp_of(case.dmljax(dtype))
        gj = vjp_of(case.jnp(dtype))
        budget = self.options.budget_per_point
        rec = {"op": case.enum_name, "dtype": dtype, "n": n, "wrt": fl, "variants": {}, "device": {}, "notes": []}
        rec["variants"]["dmljax_jit"] = time_calls(lambda i: gd(*sets[i], cts[i]), n_sets, jax_sync, budget_s=budget).asdict()
        rec["variants"]["jnp_jit"] = time_calls(lambda i: gj(*sets[i], cts[i]), n_sets, jax_sync, budget_s=budget).asdict()
        rec["paired"] = {paired_key("dmljax_jit", "jnp_jit"): time_paired(
            lambda i: gd(*sets[i], cts[i]), lambda i: gj(*sets[i], cts[i]), n_sets, jax_sync, budget_s=2 * budget)}
        rec["hlo_kernels"] = {"dmljax_jit": compiled_kernels(gd, *sets[0], cts[0])[0],
                              "jnp_jit": compiled_kernels(gj, *sets[0], cts[0])[0]}
        if self.platform == "gpu":
            try:
                rec["device"] = jax_device_times([("dmljax_jit", lambda i: gd(*sets[i], cts[i])),
                                                  ("jnp_jit", lambda i: gj(*sets[i], cts[i]))], n_sets)
            except Exception as e:  # noqa: BLE001
                rec["notes"].append(f"profiler failed: {short_error(e, 160)}")
        torch = self.torch
        fn = case.torch(torch, dtype) if torch is not None else None
        if fn is not None:
            tsets = [self.to_torch(s) for s in sets]
            tcts = self.to_torch(cts)

            def tg(i):
                xs = list(tsets[i])
                leaves = []
                for j in fl:
                    xs[j] = xs[j].detach().requires_grad_(True)
                    leaves.append(xs[j])
                return torch.autograd.grad(fn(*xs), leaves, tcts[i])
            try:
                rec["variants"]["torch_eager"] = time_calls(tg, n_sets, self.tsync, budget_s=budget,
                                                            events=self.events).asdict()
            except Exception as e:  # noqa: BLE001
                rec["notes"].append(f"torch autograd failed: {short_error(e, 200)}")
            del tsets, tcts
        return rec

    def chain(self, cp, dtype: str, n: int) -> dict | None:
        chain, ccases = cp.chain, cp.cases
        item = DataType.parse(dtype).dtype.itemsize
        in_bpe = sum(1 if k == "condition" else item for k in chain.inputs.values())
        n_sets = self.n_sets(in_bpe * n)
        if not self.fits(f"chain of {chain.name} {dtype} {pow2(n)}", memory.need(n, in_bpe, 3 * item, n_sets, 1 + int(self.torch is not None))):
            return None
        dt = DataType.parse(dtype)

        def inputs(seed):
            kinds = tuple(chain.inputs.values())
            return jax.block_until_ready(draw_all(np.uint32(1000 + seed), kinds=kinds, shapes=((n,),) * len(kinds), dtype=dt))
        sets = [inputs(s) for s in range(n_sets)]
        nbytes = (in_bpe + item) * n
        budget = self.options.budget_per_point
        rec = {"chain": chain.name, "dtype": dtype, "n": n, "bytes": int(nbytes), "steps": chain.describe(),
               "compare_to": resolve(chain.compare_to).spec.enum_name,
               "limit_vs_one": chain.limit_vs_one, "limit_vs_jnp": chain.limit_vs_jnp,
               "variants": {}, "device": {}, "notes": []}
        jitted = {}
        for name in ("dmljax", "jnp"):
            fn = chains.program(chain, ccases, dtype, name)
            if fn is None:
                rec["notes"].append(f"no {name} chain: an operator has no {name} formula.")
                continue
            f = jitted[f"{name}_jit"] = jax.jit(fn)
            tm = time_calls(lambda i, f=f: f(*sets[i]), n_sets, jax_sync, budget_s=budget)
            rec["variants"][f"{name}_jit"] = dict(tm.asdict(), gbps=nbytes / tm.s / 1e9)
            text = f.lower(*sets[0]).compile().as_text()
            rec[f"hlo_kernels_{name}_jit"], rec[f"hlo_ops_{name}_jit"] = hlo_kernel_count(text)
            rec[f"hlo_text_{name}_jit"] = text[:40000]
        if len(jitted) == 2:
            fd, fj = jitted["dmljax_jit"], jitted["jnp_jit"]
            rec["paired"] = {paired_key("dmljax_jit", "jnp_jit"): time_paired(
                lambda i: fd(*sets[i]), lambda i: fj(*sets[i]), n_sets, jax_sync, budget_s=2 * budget)}
        if self.platform == "gpu" and jitted:
            try:
                rec["device"] = jax_device_times([(k, lambda i, f=f: f(*sets[i])) for k, f in jitted.items()], n_sets)
                for d in rec["device"].values():
                    d["gbps"] = nbytes / d["s"] / 1e9
            except Exception as e:  # noqa: BLE001
                rec["notes"].append(f"profiler failed: {short_error(e, 160)}")
        torch = self.torch
        tfn = chains.program(chain, ccases, dtype, "torch", torch) if torch is not None else None
        if tfn is not None:
            tsets = [self.to_torch(s) for s in sets]
            variants = [("torch_eager", tfn)]
            if not self.options.no_compile:
                variants.append(("torch_compile", torch.compile(lambda *xs: tfn(*xs), dynamic=False)))
            for name, fn in variants:
                try:
                    tm = time_calls(lambda i, fn=fn: fn(*tsets[i]), n_sets, self.tsync, budget_s=budget,
                                    events=self.events)
                    rec["variants"][name] = dict(tm.asdict(), gbps=nbytes / tm.s / 1e9)
                except Exception as e:  # noqa: BLE001
                    rec["notes"].append(f"{name} failed: {short_error(e, 200)}")
            del tsets
        return rec if rec["variants"] else None

    def compile_times(self, pair: Pair, n: int, reps: int) -> dict | None:
        case, dtype = pair.case, pair.dtype
        args = make_inputs(case, n, dtype, 3, pair.kinds, pair.layout)
        out = {"op": case.enum_name, "dtype": dtype, "n": n}

        def med(fn):
            ts = []
            for _ in range(reps):
                jax.clear_caches()
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            return statistics.median(ts)
        dml = case.dmljax(dtype)
        out["dmljax_jit_lower_compile_s"] = med(lambda: jax.jit(case.dmljax(dtype)).lower(*args).compile())
        out["dmljax_first_call_s"] = med(lambda: jax.block_until_ready(dml(*args)))
        if case.recipe.jnp is not None:
            jf = case.jnp(dtype)
            try:
                out["jnp_jit_lower_compile_s"] = med(lambda: jax.jit(jf).lower(*args).compile())
                out["jnp_first_call_s"] = med(lambda: jax.block_until_ready(jax.jit(jf)(*args)))
            except Exception:  # noqa: BLE001  (the formula's own failure is noted by throughput)
                pass
        return out

    def overhead(self, pair: Pair, n: int) -> dict | None:
        case, dtype = pair.case, pair.dtype
        sets = [make_inputs(case, n, dtype, 50 + s, pair.kinds, pair.layout) for s in range(4)]
        user = jax.jit(case.dmljax(dtype))
        call = case.dmljax(dtype)
        rec = {"op": case.enum_name, "dtype": dtype, "n": n, "dispatch_us": {}, "latency_us": {}}
        variants = [("dmljax_call", lambda i: call(*sets[i])), ("dmljax_jit", lambda i: user(*sets[i]))]
        if case.recipe.jnp is not None:
            eager = case.jnp(dtype)
            jfn = jax.jit(eager)
            variants += [("jnp_jit", lambda i: jfn(*sets[i])), ("jnp_eager", lambda i: eager(*sets[i]))]
        b = min(self.options.budget_per_point, 0.1)
        for name, f in variants:
            try:
                rec["dispatch_us"][name] = time_calls(f, 4, jax_sync, budget_s=b).s * 1e6
                rec["latency_us"][name] = time_calls(lambda i, f=f: jax.block_until_ready(f(i)), 4, jax_sync,
                                                     budget_s=b, target_rep_s=0).s * 1e6
            except Exception:  # noqa: BLE001  (noted by throughput)
                pass
        fn = case.torch(self.torch, dtype) if self.torch is not None else None
        if fn is not None:
            tsets = [self.to_torch(s) for s in sets]
            try:
                rec["dispatch_us"]["torch_eager"] = time_calls(lambda i: fn(*tsets[i]), 4, self.tsync, budget_s=b).s * 1e6
            except Exception:  # noqa: BLE001
                pass
        return rec


def run_suite(p: Plan | Options) -> dict:
    """Run a plan (or plan ``Options`` first) and return the results (JSON-ready)."""
    if isinstance(p, Options):
        p = plan(p)
    o = p.options
    suite = Suite(p)
    sizes, dtypes, largest = p.sizes, p.dtypes, p.sizes[-1]
    extras: dict = {"chain": [], "fwd_bwd": [], "compile": [], "overhead": []}
    records: list[dict] = []
    grads = [] if o.no_grad else [q for q in p.pairs if q.case.recipe.jnp is not None and DataType.parse(q.dtype).is_float
                                  and not any(t.default_data_type for t in q.case.spec.outputs)]  # no integer results
    once: dict = {}  # each operator once, in its first type
    for q in [] if o.no_overhead else p.pairs:
        once.setdefault(q.case.enum_name, q)
    total = len(p.pairs) * len(sizes) + sum(len(cp.dtypes) for cp in p.chains) + len(grads) + 2 * len(once)
    bar = progress_bar(total, not o.quiet, "dmljax bench")

    def step(label):
        bar.set_postfix_str(label)
        bar.update(1)

    def guarded(label, fn, *args):
        """Run one measurement; a failure becomes a note."""
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001  (one point failing must not end the run)
            suite.notes.append(f"{label}: failed: {short_error(e)}.")
            return None
        finally:
            step(label)

    def checkpoint():
        if not o.out:
            return
        try:
            part = {"meta": suite.meta, "sizes": sizes, "dtypes": dtypes, "throughput": records, **extras,
                    "notes": suite.notes + ["partial results (checkpoint)"]}
            os.makedirs(o.out, exist_ok=True)
            with open(os.path.join(o.out, "results.json"), "w", encoding="utf-8") as f:
                json.dump(part, f, indent=1, default=str)
        except (OSError, TypeError, ValueError):
            pass

    for i, q in enumerate(p.pairs, 1):
        r = guarded(f"{q.case.short_name} {q.dtype} {pow2(largest)}", suite.throughput, q, largest, True)
        if r:
            records.append(r)
        if i % 16 == 0:
            checkpoint()  # a run cut short keeps what it measured
    checkpoint()
    for cp in p.chains:
        for d in cp.dtypes:
            r = guarded(f"chain of {cp.chain.name} {d} {pow2(largest)}", suite.chain, cp, d, largest)
            if r:
                extras["chain"].append(r)
    checkpoint()
    for q in grads:
        if suite.over_budget():
            suite.notes.append(f"forward+backward {q.case.short_name} {q.dtype}: skipped (time budget).")
            step("skipped (time budget)")
            continue
        r = guarded(f"forward+backward {q.case.short_name} {q.dtype}", suite.fwd_bwd, q, largest)
        if r:
            extras["fwd_bwd"].append(r)
    checkpoint()
    # overhead first: the compile timings clear JAX's caches
    for kind, fn, size, extra in (("overhead", suite.overhead, sizes[0], ()),
                                  ("compile", suite.compile_times, min(1 << 20, largest), (o.compile_reps,))):
        for q in once.values():
            if suite.over_budget():
                suite.notes.append(f"{kind} {q.case.short_name}: skipped (time budget).")
                step("skipped (time budget)")
                continue
            r = guarded(f"{kind} {q.case.short_name}", fn, q, size, *extra)
            if r:
                extras[kind].append(r)
    checkpoint()
    skipped = 0
    for n in reversed(sizes[:-1]):
        for q in p.pairs:
            if suite.over_budget():
                skipped += 1
                step("skipped (time budget)")
                continue
            r = guarded(f"{q.case.short_name} {q.dtype} {pow2(n)}", suite.throughput, q, n, False)
            if r:
                records.append(r)
    bar.close()
    if skipped:
        suite.notes.append(f"{skipped} smaller size points skipped: --time-budget {o.time_budget}s reached.")
    records.sort(key=lambda r: (r["op"], r["dtype"], r["n"]))
    result = {"meta": suite.meta, "sizes": sizes, "dtypes": dtypes, "throughput": records, **extras,
              "notes": suite.notes}
    result["meta"]["wall_s"] = time.perf_counter() - suite.t_start
    result["targets"] = evaluate_targets(result)
    return result
