"""The INT8 x INT8 -> INT32 products of MATRIX_MULTIPLY_INTEGER (and of MATRIX_MULTIPLY_INTEGER_TO_FLOAT
and QUANTIZED_LINEAR_MATRIX_MULTIPLY, which share it) with few rows on the CPU: the two-row form of
one row (dmljax/_src/kernels/integer_matmul_rows.py) against the product as written, timed in pairs
in one process, and the CPU entry of that module's RULE the figures give; beside it, for 1 to 64
rows, an exact FLOAT32 form (the INT8 values as FLOAT32, K in slices of 1,024 whose sums stay within
2^24, each converted to INT32 and added) against XLA's INT8 product, which the rule does not take.

    python benchmarks/quantization/integer_rows.py [--out DIR] [--rows 1,2,4,16,64]
        [--sizes 64x64,256x1024,...] [--budget-s 0.6]
    (SMOKE=1: small shapes)

Points: ``dmljax.matrix_multiply_integer`` of a UINT8 A {rows, K} with a zero point (a dynamically
quantized activation: DynamicQuantizeLSTM's Ht-1, a QGemm's input) by an INT8 B {K, N} with a zero
point, jitted with the form forced (``force_kernels``, a private switch for measuring the rule) or
switched off (``dmljax.use_kernels(False, "integer_matmul_rows")``), one row only (the form's
calls); and for every row count, ``lax.dot_general`` of INT8 operands into INT32 against the FLOAT32
slices (defined here). ``dmljax.bench.timing.time_paired`` times each pair in alternating
repetitions and reports the median ratio with its quartiles; each pair's results are checked equal
first. The rule: "two rows" where the one-row points' ratios have a geometric mean below 1 and none
is above 1.1, else "xla". Writes integer_rows.json and .md (default
benchmarks/results/<device>/quantization), the load averages beside the figures.
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
from jax import lax  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402
from dmljax._src.kernel_seam import force_kernels  # noqa: E402  (measuring the rule's forms)
from dmljax._src.kernels import integer_matmul_rows as rows_form  # noqa: E402
from dmljax.bench.timing import time_calls, time_paired  # noqa: E402

SWITCH = rows_form.INTEGER_MATMUL_ROWS.name
SIZES = "64x64,256x256,128x512,256x1024,1024x1024,1024x4096,4096x1024,4096x4096"
SLICE = 1024
"""K a FLOAT32 slice: 1,024 products of INT8 values (each at most 2^14 in size) sum within 2^24."""


def int8_product(x, y):
    return lax.dot_general(x, y, (((1,), (0,)), ((), ())), preferred_element_type=np.int32)


def float32_slices(x, y):
    """The same INT32 sums from FLOAT32 products: K in slices of SLICE, each slice's sums exact."""
    (m, k), n = x.shape, y.shape[1]
    s = -(-k // SLICE)
    width = min(k, SLICE)
    pad = s * width - k
    xf = jnp.pad(x, ((0, 0), (0, pad))).astype(np.float32).reshape(m, s, width)
    yf = jnp.pad(y, ((0, pad), (0, 0))).astype(np.float32).reshape(s, width, n)
    p = lax.dot_general(xf, yf, (((2,), (1,)), ((1,), (0,))), precision=lax.Precision.HIGHEST)
    return jnp.sum(p.astype(np.int32), axis=0)


def operator(a, b, za, zb):
    return dmljax.matrix_multiply_integer(a, b, za, zb)


def _compiled(fn, args, form):
    if form == "two rows":
        with force_kernels(SWITCH):
            return common.compiled(fn, *args)
    with dmljax.use_kernels(False, SWITCH):
        return common.compiled(fn, *args)


def _pair(fa, fb, sets, budget_s):
    a, b = (np.asarray(f(*sets[0])) for f in (fa, fb))
    if not np.array_equal(a, b):
        raise AssertionError("the two forms' INT32 sums differ")
    base = time_calls(lambda i: fb(*sets[i]), 2, jax.block_until_ready, budget_s=0.05).s * 1e3
    r = time_paired(lambda i: fa(*sets[i]), lambda i: fb(*sets[i]), 2, jax.block_until_ready, budget_s=budget_s)
    return base, r


def run_point(report, rows, k, n, budget_s, rng):
    u8 = [tuple(map(jnp.asarray, (rng.integers(0, 256, (rows, k), dtype=np.uint8),
                                 rng.integers(-128, 128, (k, n), dtype=np.int8),
                                 rng.integers(0, 256, (1,), dtype=np.uint8),
                                 rng.integers(-128, 128, (1,), dtype=np.int8)))) for _ in range(2)]
    if rows == 1:
        fa, fb = (_compiled(operator, u8[0], form) for form in ("two rows", "xla"))
        base, r = _pair(fa, fb, u8, budget_s)
        report.point(f"rows {rows:2d} K {k:4d} N {n:4d}  uint8 x int8, zero points: xla {base:7.3f} ms; two rows / "
                     f"xla {r['ratio']:.2f} (quartiles {r['p25']:.2f}-{r['p75']:.2f}, {r['reps']} pairs); load "
                     f"{common.load_average()}", what="two rows / xla", rows=rows, k=k, n=n, xla_ms=base, ratio=r["ratio"],
                     p25=r["p25"], p75=r["p75"], reps=r["reps"], load=common.load_average(), method=r["method"])
    i8 = [(jnp.asarray(rng.integers(-128, 128, (rows, k), dtype=np.int8)),
           jnp.asarray(rng.integers(-128, 128, (k, n), dtype=np.int8))) for _ in range(2)]
    fa, fb = (common.compiled(f, *i8[0]) for f in (float32_slices, int8_product))
    base, r = _pair(fa, fb, i8, budget_s)
    report.point(f"rows {rows:2d} K {k:4d} N {n:4d}  int8 x int8 dot:             int8 {base:7.3f} ms; float32 slices "
                 f"/ int8 {r['ratio']:.2f} (quartiles {r['p25']:.2f}-{r['p75']:.2f}, {r['reps']} pairs); load "
                 f"{common.load_average()}", what="float32 slices / int8", rows=rows, k=k, n=n, xla_ms=base, ratio=r["ratio"],
                 p25=r["p25"], p75=r["p75"], reps=r["reps"], load=common.load_average(), method=r["method"])


def write_rule(report, points):
    """The one-row points' ratios: their range and geometric mean, and "two rows" where the mean is
    below 1 and no ratio above 1.1."""
    ratios = [p["ratio"] for p in points if p["what"] == "two rows / xla"]
    if not ratios:
        return
    mean = float(np.exp(np.mean(np.log(ratios))))
    form = "two rows" if mean < 1 and max(ratios) <= 1.1 else "xla"
    report.point(f"RULE['cpu']['one row'] = {form!r}   # two rows / xla {min(ratios):.2f}-{max(ratios):.2f}, "
                 f"geometric mean {mean:.2f} ({len(ratios)} points)", kind="one row", form=form, ratios=ratios,
                 mean=mean)


def main():
    _, rest = common.arguments()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1,2" if common.SMOKE else "1,2,4,16,64")
    ap.add_argument("--sizes", default="64x64,128x256" if common.SMOKE else SIZES, help="KxN, comma-separated")
    ap.add_argument("--budget-s", type=float, default=0.6, help="seconds of paired timing a point")
    args = ap.parse_args(rest)
    report = common.Report("quantization", "paired with the product as written (dmljax.bench.timing.time_paired: "
                                           "alternating repetitions, median ratio), host clock")
    report.group = "integer_rows"
    report.line(f"load averages (1, 5, 15 minutes) at the start: {common.load_average()}")
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for rows in (int(r) for r in args.rows.split(",")):
        for size in args.sizes.split(","):
            k, n = map(int, size.split("x"))
            run_point(report, rows, k, n, args.budget_s, rng)
    write_rule(report, report.points.get("integer_rows", []))
    report.line(f"load averages at the end: {common.load_average()}; {time.perf_counter() - start:.0f} s; {os.cpu_count()} CPUs")
    report.write()


if __name__ == "__main__":
    main()
