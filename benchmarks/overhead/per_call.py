"""Per-call overhead: a direct (eager) dmljax call against the same operator inside a user's
``jax.jit`` and against a jitted jax.numpy formula, on 2^10 FLOAT32 elements, where the time is
all dispatch.

    python benchmarks/overhead/per_call.py [--out DIR]      (any machine; the CPU's figures are in the README)

Operators: ELEMENT_WISE_ADD (``a + b``), ELEMENT_WISE_THRESHOLD (``jnp.maximum(x, 0)``),
ACTIVATION_ELU (``jax.nn.elu``) and ELEMENT_WISE_IF (``jnp.where``). Each figure is the minimum and
the median over 50 repetitions of 200 back-to-back calls with one synchronisation at the end,
in microseconds per call; the first call (tracing and compilation) is excluded. Writes
per_call.json and per_call.md to DIR (default: benchmarks/results/<device>/overhead).
"""

import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

CALLS, REPS = (20, 5) if common.SMOKE else (200, 50)


def per_call_us(f) -> float:
    t0 = time.perf_counter()
    for _ in range(CALLS):
        r = f()
    jax.block_until_ready(r)
    return (time.perf_counter() - t0) / CALLS * 1e6


def main():
    report = common.Report("overhead", f"2^10 FLOAT32 elements; minimum and median over {REPS} repetitions of "
                           f"{CALLS} back-to-back calls, one synchronisation at the end; host clock")
    report.group = "per_call"
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal(1024).astype(np.float32))
    y = jnp.asarray(rng.standard_normal(1024).astype(np.float32))
    c = jnp.asarray(rng.integers(0, 2, 1024).astype(np.uint8))
    cases = {
        "ELEMENT_WISE_ADD": (lambda: dmljax.element_wise_add(x, y), jax.jit(dmljax.element_wise_add), (x, y),
                             jax.jit(lambda a, b: a + b)),
        "ELEMENT_WISE_THRESHOLD": (lambda: dmljax.element_wise_threshold(x, min=0.0),
                                   jax.jit(lambda a: dmljax.element_wise_threshold(a, min=0.0)), (x,),
                                   jax.jit(lambda a: jnp.maximum(a, 0.0))),
        "ACTIVATION_ELU": (lambda: dmljax.activation_elu(x), jax.jit(dmljax.activation_elu), (x,), jax.jit(jax.nn.elu)),
        "ELEMENT_WISE_IF": (lambda: dmljax.element_wise_if(c, x, y), jax.jit(dmljax.element_wise_if), (c, x, y),
                            jax.jit(lambda k, a, b: jnp.where(k != 0, a, b))),
    }
    for name, (direct, in_jit, args, twin) in cases.items():
        variants = {"dmljax direct call": direct, "jit(dmljax)": lambda f=in_jit: f(*args),
                    "jit(jnp formula)": lambda f=twin: f(*args)}
        for f in variants.values():
            per_call_us(f)  # warm-up: tracing, compilation, caches
        samples = {k: [] for k in variants}
        for _ in range(REPS):
            for k, f in variants.items():
                samples[k].append(per_call_us(f))
        fig = {k: {"min_us": float(min(v)), "median_us": float(np.median(v))} for k, v in samples.items()}
        report.point(f"{name:24s} " + ", ".join(f"{k} {v['min_us']:.1f} us (median {v['median_us']:.1f})"
                                                for k, v in fig.items()), op=name, us=fig)
    report.write()


if __name__ == "__main__":
    main()
