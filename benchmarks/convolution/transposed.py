"""CONVOLUTION's BACKWARD direction with strides (transposed convolutions) on the CPU: the phase
form (dmljax/_src/kernels/convolution_phases.py) against XLA's input-dilated convolution, timed
in pairs in one process, and the CPU entries of that module's RULE the figures give.

    python benchmarks/convolution/transposed.py [--out DIR] [--batches 1,4,8] [--train-batches 1]
        [--dtypes float32,float16] [--directions fwd,train] [--budget-s 3]
    (SMOKE=1: small shapes)

Cases: the strided shapes of benchmarks/convolution/resnet50.py's transposed group (decoders'
upsampling: 2 x 2 windows at stride 2, 4 x 4 at stride 2 with padding 1), a 3 x 3 window at
stride 2 with padding 1 and OutputPadding 1 (phases of uneven tap counts), a depthwise 4 x 4 at
stride 2, a 1-D upsampling by 4 (window 8, padding 2) and a 3-D one (2 x 2 x 2 at stride 2), at
each batch. Directions: ``fwd`` dmljax.convolution's value (at ``--batches``); ``train`` its value
and both gradients (jax.vjp by the input and the filter; at ``--train-batches``: XLA's gradients
of the input-dilated convolution take seconds a call here). Each variant is jitted with the form forced
(``force_kernels``, a private switch for measuring the rule) or switched off
(``dmljax.use_kernels(False, "convolution_phases")``); ``dmljax.bench.timing.time_paired`` times
them in alternating repetitions (the machine is shared: a slow spell hits both) and reports the
median ratio of the phase form's time to XLA's with its quartiles. The rule: "phases" for a kind
and type where the points' ratios (both directions) have a geometric mean below 1 and none is
above 1.1 (a tie within the machine's noise), else "xla". Writes
transposed_cpu.json and .md (default benchmarks/results/<device>/convolution).
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402
from dmljax._src.kernel_seam import force_kernels  # noqa: E402  (measuring the rule's forms)
from dmljax._src.kernels import convolution_phases as phases  # noqa: E402
from dmljax.bench.timing import time_calls, time_paired  # noqa: E402

SWITCH = phases.CONVOLUTION_PHASES.name


def _case(label, cin, cout, spatial, k, stride, pad=0, output_padding=0, groups=1):
    d = len(spatial)
    return {"label": label, "cin": cin, "cout": cout, "spatial": tuple(spatial), "window": (k,) * d,
            "strides": (stride,) * d, "pads": (pad,) * d, "output_padding": (output_padding,) * d, "groups": groups}


def cases():
    """resnet50.py's strided transposed shapes, and the other geometries the rule's kinds cover."""
    from resnet50 import _transposed  # the GPU benchmark's transposed group (its strided shapes)

    out = [_case(c["label"], c["cin"], c["cout"], (c["size"],) * 2, c["k"], c["stride"], c["pad"])
           for c in _transposed() if c["stride"] > 1]
    out += [_case("up 128->64 32 3x3 s2 p1 op1", 128, 64, (32, 32), 3, 2, 1, 1),
            _case("depthwise 64 56 4x4 s2 p1", 64, 64, (56, 56), 4, 2, 1, groups=64),
            _case("1-D 256->128 1000 k8 s4 p2", 256, 128, (1000,), 8, 4, 2),
            _case("3-D 64->32 16 2x2x2 s2", 64, 32, (16, 16, 16), 2, 2)]
    if common.SMOKE:
        out = [dict(c, cin=max(c["cin"] // 32, 2), cout=max(c["cout"] // 32, 2),
                    groups=1 if c["groups"] == 1 else max(c["cin"] // 32, 2),
                    spatial=tuple(min(s, 8) for s in c["spatial"])) for c in out]
    return out


def _attrs(c):
    return dict(direction="BACKWARD", strides=c["strides"], start_padding=c["pads"], end_padding=c["pads"],
                output_padding=c["output_padding"], group_count=c["groups"])


def _call(c, direction):
    kw = _attrs(c)

    def conv(x, w):
        return dmljax.convolution(x, w, **kw)
    if direction == "fwd":
        return conv

    def train(x, w, dy):
        y, pull = jax.vjp(conv, x, w)
        return y, pull(dy)
    return train


def _compiled(fn, args, form):
    if form == "phases":
        with force_kernels(SWITCH):
            return common.compiled(fn, *args)
    with dmljax.use_kernels(False, SWITCH):
        return common.compiled(fn, *args)


def run_case(report, c, batch, dtype, direction, budget_s, rng):
    x_shape = (batch, c["cin"]) + c["spatial"]
    w_shape = (c["cin"], c["cout"] // c["groups"]) + c["window"]
    facts = (x_shape, w_shape, np.dtype(dtype), False, c["groups"], c["strides"], (1,) * len(c["strides"]),
             c["pads"], c["pads"], c["output_padding"])
    kind = phases.phase_kind(*facts)
    sets = []
    for _ in range(2):
        x = rng.standard_normal(x_shape, dtype=np.float32).astype(dtype)
        w = (rng.standard_normal(w_shape, dtype=np.float32) / np.sqrt(w_shape[0] // c["groups"] * np.prod(c["window"]))
             ).astype(dtype)
        y = jax.eval_shape(_call(c, "fwd"), x, w)
        dy = rng.standard_normal(y.shape, dtype=np.float32).astype(dtype)
        sets.append(tuple(map(jnp.asarray, (x, w) if direction == "fwd" else (x, w, dy))))
    fn = _call(c, direction)
    f_phases, f_xla = (_compiled(fn, sets[0], form) for form in ("phases", "xla"))
    a, b = (np.asarray(jax.tree.leaves(f(*sets[0]))[0], np.float64) for f in (f_phases, f_xla))
    difference = float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-30))
    xla_ms = time_calls(lambda i: f_xla(*sets[i]), 2, jax.block_until_ready, budget_s=0.05).s * 1e3
    r = time_paired(lambda i: f_phases(*sets[i]), lambda i: f_xla(*sets[i]), 2, jax.block_until_ready,
                    budget_s=0.2 if common.SMOKE else budget_s)
    dname = np.dtype(dtype).name
    report.point(f"{dname} b{batch} {direction:5s} {c['label']:30s} [{kind}] xla {xla_ms:8.2f} ms; phases / xla "
                 f"{r['ratio']:.2f} (quartiles {r['p25']:.2f}-{r['p75']:.2f}, {r['reps']} pairs); max |phases - xla| / "
                 f"max |xla| {difference:.1e}", dtype=dname, batch=batch, direction=direction, shape=c["label"],
                 kind=kind, xla_ms=xla_ms, ratio=r["ratio"], p25=r["p25"], p75=r["p75"], reps=r["reps"],
                 difference=difference, method=r["method"])


def write_rule(report, points):
    """Per (kind, type): the ratios' range and geometric mean, and "phases" where the mean is below 1
    and no ratio above 1.1."""
    report.group = "transposed_cpu"
    by = {}
    for p in points:
        by.setdefault((p["kind"], p["dtype"]), []).append(p["ratio"])
    for key in sorted(by):
        ratios = by[key]
        mean = float(np.exp(np.mean(np.log(ratios))))
        form = "phases" if mean < 1 and max(ratios) <= 1.1 else "xla"
        report.point(f"RULE['cpu'][{key!r}] = {form!r}   # phases / xla {min(ratios):.2f}-{max(ratios):.2f}, "
                     f"geometric mean {mean:.2f} ({len(ratios)} points)", kind=key[0], dtype=key[1], form=form,
                     ratios=ratios, mean=mean)


def main():
    _, rest = common.arguments()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="1" if common.SMOKE else "1,4,8")
    ap.add_argument("--train-batches", default="1")
    ap.add_argument("--dtypes", default="float32,float16")
    ap.add_argument("--directions", default="fwd,train")
    ap.add_argument("--budget-s", type=float, default=3.0, help="seconds of paired timing a point")
    args = ap.parse_args(rest)
    report = common.Report("convolution", "paired with XLA's input-dilated convolution (dmljax.bench.timing."
                                          "time_paired: alternating repetitions, median ratio), host clock")
    report.group = "transposed_cpu"
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for dtype in args.dtypes.split(","):
        for direction in args.directions.split(","):
            batches = args.batches if direction == "fwd" else args.train_batches
            for batch in (int(b) for b in batches.split(",")):
                for c in cases():
                    run_case(report, c, batch, np.dtype(dtype).type, direction, args.budget_s, rng)
    write_rule(report, report.points.get("transposed_cpu", []))
    report.line(f"{time.perf_counter() - start:.0f} s; {os.cpu_count()} CPUs")
    report.write()


if __name__ == "__main__":
    main()
