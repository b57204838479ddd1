"""REDUCE, ARGMAX/ARGMIN, CUMULATIVE_SUMMATION/CUMULATIVE_PRODUCT and TOP_K against the formula a
jax.numpy user would write, side by side in one run.

    python benchmarks/reductions/reductions.py [--out DIR] [GROUP ...]   (SMOKE=1: small shapes, any machine)

Groups (default: all): ``reduce`` (SUM, MAX, AVERAGE, MIN, L2 over the last and the first axis
against jnp.sum, jnp.max, ...), ``arg`` (ARGMAX over rows and columns, ARGMIN DECREASING, against
jnp.argmax), ``cumulative`` (every direction and exclusivity over rows of 128 to 65,536 against
jnp.cumsum / jnp.cumprod), ``top_k`` (K = 1 to 256 over rows of 32,768 and K = 8 over rows of
1,024 against lax.top_k). FLOAT32 and FLOAT16 tensors of 2^28 elements (TOP_K: 2^26). Where a
Pallas kernel serves a case on a GPU, the same call with the kernels off
(``dmljax.use_kernels(False)``: XLA's formula) is timed as well.

For each case: the time per call of a device copy of the input, dmljax's operator and the jnp
formula, each in jit (device time where the backend records it: benchmarks/common.py), their
ratio, and dmljax's bandwidth as a fraction of the copy's: (bytes read + written) / time against
the copy's 2 x input bytes / time, so a reduction, which writes almost nothing, reports its read
bandwidth against the card's whole memory bandwidth. Writes <group>.json and <group>.md
for each group run to DIR (default: benchmarks/results/<device>/reductions).
"""

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

TOTAL = 2 ** 16 if common.SMOKE else 2 ** 28
LONG = 4096 if common.SMOKE else 32768
"""TOP_K's long rows."""


def _off(fn, x):
    """``fn`` compiled with every kernel off: XLA's formula."""
    with dmljax.use_kernels(False):
        return common.compiled(fn, x)


def reduce_cases(rng):
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(rng.standard_normal((TOTAL // 1024, 1024), dtype=np.float32).astype(dtype)) for _ in range(2)]
        for axis in (1, 0):
            for f, jf in (("SUM", jnp.sum), ("MAX", jnp.max), ("AVERAGE", jnp.mean), ("MIN", jnp.min),
                          ("L2", lambda x, axis, keepdims: jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims)))):
                yield (f"REDUCE {f} axis {axis}", dtype, xs,
                       jax.jit(lambda x, f=f, a=axis: dmljax.reduce(x, function=f, axes=(a,))),
                       jax.jit(lambda x, jf=jf, a=axis: jf(x, axis=a, keepdims=True)))


def arg_cases(rng):
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(rng.standard_normal((TOTAL // 1024, 1024), dtype=np.float32).astype(dtype)) for _ in range(2)]
        for axis, where in ((1, "rows of 1024"), (0, "first axis")):
            f = lambda x, a=axis: dmljax.argmax(x, axes=(a,))  # noqa: E731
            twin = jax.jit(lambda x, a=axis: jnp.argmax(x, axis=a, keepdims=True).astype(jnp.uint32))
            yield f"ARGMAX {where}", dtype, xs, jax.jit(f), twin
            yield f"ARGMAX {where}, kernels off", dtype, xs, _off(f, xs[0]), twin
        yield ("ARGMIN first axis, DECREASING", dtype, xs,
               jax.jit(lambda x: dmljax.argmin(x, axes=(0,), axis_direction="DECREASING")),
               jax.jit(lambda x: (x.shape[0] - 1 - jnp.argmin(x[::-1], axis=0, keepdims=True)).astype(jnp.uint32)))


def cumulative_cases(rng):
    for dtype in (np.float32, np.float16):
        shape = (TOTAL // 1024, 1024)
        xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
        ps = [jnp.asarray(np.exp2(rng.uniform(-0.01, 0.01, shape)).astype(dtype)) for _ in range(2)]
        for name, op, exclusive_name, scan, ins in (
                ("CUMULATIVE_SUMMATION", dmljax.cumulative_summation, "has_exclusive_sum", jnp.cumsum, xs),
                ("CUMULATIVE_PRODUCT", dmljax.cumulative_product, "has_exclusive_product", jnp.cumprod, ps)):
            forward = jax.jit(lambda x, scan=scan: scan(x, axis=1))
            reverse = jax.jit(lambda x, scan=scan: scan(x[:, ::-1], axis=1)[:, ::-1])
            for direction, exclusive in ((0, False), (1, False), (0, True), (1, True)):
                label = f"{'reverse' if direction else 'forward'}{' exclusive' if exclusive else ''}"
                yield (f"{name} rows of 1024 {label}", dtype, ins,
                       jax.jit(lambda x, op=op, d=direction, e=exclusive, k=exclusive_name: op(
                           x, axis=1, axis_direction=d, **{k: e})), reverse if direction else forward)
            yield (f"{name} rows of 1024, kernels off", dtype, ins, _off(lambda x, op=op: op(x, axis=1), ins[0]),
                   forward)
            for n in (128, 8192, 65536):
                if TOTAL % n or TOTAL // n < 2:
                    continue
                rows = [x.reshape(-1, n) for x in ins]
                yield f"{name} rows of {n}", dtype, rows, jax.jit(lambda x, op=op: op(x, axis=1)), forward
                if n > 1024:
                    yield (f"{name} rows of {n} reverse", dtype, rows,
                           jax.jit(lambda x, op=op: op(x, axis=1, axis_direction=1)), reverse)


def top_k_cases(rng):
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(rng.standard_normal((TOTAL // LONG // 4, LONG), dtype=np.float32).astype(dtype))
              for _ in range(2)]
        for k in (1, 8, 16, 32, 256):
            twin = jax.jit(lambda x, k=k: jax.lax.top_k(x, k))
            f = lambda x, k=k: dmljax.top_k(x, axis=1, k=k)  # noqa: E731
            yield f"TOP_K rows of {LONG}, K {k}", dtype, xs, jax.jit(f), twin
            if k in (8, 256):
                yield f"TOP_K rows of {LONG}, K {k}, kernels off", dtype, xs, _off(f, xs[0]), twin
        ys = [x.reshape(-1, 1024) for x in xs]
        yield ("TOP_K rows of 1024, K 8", dtype, ys, jax.jit(lambda x: dmljax.top_k(x, axis=1, k=8)),
               jax.jit(lambda x: jax.lax.top_k(x, 8)))


GROUPS = {"reduce": reduce_cases, "arg": arg_cases, "cumulative": cumulative_cases, "top_k": top_k_cases}


def main():
    chosen = [a for a in common.arguments()[1] if a in GROUPS] or list(GROUPS)
    report = common.Report("reductions", "per-call time (benchmarks/common.py), two input sets; 2^28 elements "
                           "(TOP_K 2^26); bandwidth = (input + output bytes) / time against the copy's "
                           "2 x input bytes / time")
    common.against_jnp(report, GROUPS, chosen)
    report.write()


if __name__ == "__main__":
    main()
