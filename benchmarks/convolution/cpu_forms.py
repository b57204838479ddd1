"""What the CPU benchmarks of CONVOLUTION's forms share (transposed.py: the phase form; squeezed.py:
the convolution without its unit spatial dimensions): each a way of computing the same convolution
that a measured rule takes, switched by its kernel-seam name, timed in pairs against the form
switched off, and the CPU entries of its module's RULE that the figures give."""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import common
import dmljax
from dmljax._src.kernel_seam import force_kernels  # (measuring the rule's forms)
from dmljax.bench.timing import time_calls, time_paired


def options(ap, batches: str):
    """The options both benchmarks take: batches (forward; ``train``'s apart), types, directions and
    the seconds of paired timing a point."""
    ap.add_argument("--batches", default="1" if common.SMOKE else batches)
    ap.add_argument("--train-batches", default="1")
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--directions", default="fwd,train")
    ap.add_argument("--budget-s", type=float, default=3.0, help="seconds of paired timing a point")


def sweep(report, args, cases, run_case, group: str, name: str, kept=lambda c: True):
    """``run_case`` for every type, direction, batch and kept case, then the CPU rule of form
    ``name`` from the group's points, with the load averages at the start and the end."""
    report.group = group
    report.line(f"load averages (1, 5, 15 minutes) at the start: {common.load_average()}")
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for dtype in args.dtypes.split(","):
        for direction in args.directions.split(","):
            batches = args.batches if direction == "fwd" else args.train_batches
            for batch in (int(b) for b in batches.split(",")):
                for c in cases():
                    if kept(c):
                        run_case(report, c, batch, np.dtype(dtype).type, direction, args.budget_s, rng)
    report.group = group
    write_rule(report, name, report.points.get(group, []))
    report.line(f"load averages at the end: {common.load_average()}; {time.perf_counter() - start:.0f} s; "
                f"{os.cpu_count()} CPUs")


def compiled(fn, args, switch: str, forced: bool):
    """``fn`` compiled for ``args`` with the form forced (``force_kernels``) or switched off."""
    with force_kernels(switch) if forced else dmljax.use_kernels(False, switch):
        return common.compiled(fn, *args)


def call(attrs, direction: str):
    """dmljax.convolution of the attributes: its value (``fwd``), or its value and both gradients
    (``train``: jax.vjp by the input and the filter, the cotangent a third argument)."""
    def conv(x, w):
        return dmljax.convolution(x, w, **attrs)
    if direction == "fwd":
        return conv

    def train(x, w, dy):
        y, pull = jax.vjp(conv, x, w)
        return y, pull(dy)
    return train


def time_point(report, name: str, switch: str, attrs, x_shape, w_shape, w_fan_in: int, dtype, direction: str,
               budget_s: float, rng, **fields):
    """Two input sets, the form forced and off compiled, their first results compared, XLA's time alone
    and the paired ratio (``time_paired``: alternating repetitions, median and quartiles); one report
    point ("<name> / xla"), with ``fields`` (its label, batch, kind, ...) and the load."""
    sets = []
    for _ in range(2):
        x = rng.standard_normal(x_shape, dtype=np.float32).astype(dtype)
        w = (rng.standard_normal(w_shape, dtype=np.float32) / np.sqrt(w_fan_in)).astype(dtype)
        y = jax.eval_shape(call(attrs, "fwd"), x, w)
        dy = rng.standard_normal(y.shape, dtype=np.float32).astype(dtype)
        sets.append(tuple(map(jnp.asarray, (x, w) if direction == "fwd" else (x, w, dy))))
    fn = call(attrs, direction)
    f_form, f_xla = (compiled(fn, sets[0], switch, forced) for forced in (True, False))
    a, b = (np.asarray(jax.tree.leaves(f(*sets[0]))[0], np.float64) for f in (f_form, f_xla))
    difference = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))
    at = common.load_average()
    xla_ms = time_calls(lambda i: f_xla(*sets[i]), 2, jax.block_until_ready, budget_s=0.05).s * 1e3
    r = time_paired(lambda i: f_form(*sets[i]), lambda i: f_xla(*sets[i]), 2, jax.block_until_ready,
                    budget_s=0.2 if common.SMOKE else budget_s)
    dname = np.dtype(dtype).name
    report.point(f"{dname} b{fields['batch']} {direction:5s} {fields['shape']:36s} [{fields['kind']}] xla "
                 f"{xla_ms:8.3f} ms; {name} / xla {r['ratio']:.2f} (quartiles {r['p25']:.2f}-{r['p75']:.2f}, "
                 f"{r['reps']} pairs); max |{name} - xla| / max |xla| {difference:.1e}; load {at}",
                 dtype=dname, direction=direction, xla_ms=xla_ms, ratio=r["ratio"], p25=r["p25"], p75=r["p75"],
                 reps=r["reps"], difference=difference, load=at, method=r["method"], **fields)


def write_rule(report, name: str, points):
    """Per (kind, type): the ratios' range and geometric mean, and ``name`` (the form) where the mean
    is below 1 and no ratio above 1.1 (a tie within the machine's noise), else "xla"."""
    by = {}
    for p in points:
        by.setdefault((p["kind"], p["dtype"]), []).append(p["ratio"])
    for key in sorted(by):
        ratios = by[key]
        mean = float(np.exp(np.mean(np.log(ratios))))
        form = name if mean < 1 and max(ratios) <= 1.1 else "xla"
        report.point(f"RULE['cpu'][{key!r}] = {form!r}   # {name} / xla {min(ratios):.2f}-{max(ratios):.2f}, "
                     f"geometric mean {mean:.2f} ({len(ratios)} points)", kind=key[0], dtype=key[1], form=form,
                     ratios=ratios, mean=mean)
