"""What POW's kernels do on a GPU, by Nsight Compute: each form of benchmarks/pow_variants_gpu.py
(FLOAT32 forward and forward+backward: jnp's, dmljax's and the probes) run once at 2^24 elements,
one fused kernel each, in the order printed; run under ncu, which reports each kernel's registers
a thread, launch shape, achieved occupancy, warp instructions executed and time:

    ncu --csv --metrics launch__registers_per_thread,launch__block_size,launch__grid_size,\\
        sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,\\
        gpu__time_duration.sum python benchmarks/pow_ncu_gpu.py > pow_ncu.csv

Whether the forms' times (pow_variants_gpu.py) follow their instruction counts or their registers.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import pow_variants_gpu as pv  # noqa: E402

N = 2 ** 24


def main():
    rng = np.random.default_rng(0)
    x = jax.device_put(rng.uniform(0.25, 8, N).astype(np.float32))
    e = jax.device_put(rng.uniform(-3, 3, N).astype(np.float32))
    dy = jax.device_put(np.ones(N, np.float32))
    forms = [(f"forward {k}", f, (x, e)) for k, f in pv.FORWARD.items()]
    forms += [(f"grad {k}", f, (x, e, dy)) for k, f in {**pv.GRAD, **pv.FLOAT_GRAD}.items()]
    compiled = [(name, jax.jit(f).lower(*args).compile(), args) for name, f, args in forms]
    jax.block_until_ready(x)
    for i, (name, c, args) in enumerate(compiled):
        print(f"FORM {i:2d} {name}", file=sys.stderr, flush=True)
        jax.block_until_ready(c(*args))


if __name__ == "__main__":
    main()
