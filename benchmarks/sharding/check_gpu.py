"""dmljax's Pallas kernels under a batch-sharded input, on the GPUs of one host: for each call of
tests/lowered_hlo.py's ``kernel_calls`` (the shapes and types that take a kernel on CUDA), the
leading axis split over all the devices where it divides, the call compiled with ``jax.jit``:

- whether the compiled program holds a kernel (a Triton custom call) at all,
- whether the sharded result equals the unsharded one (on one device) bit for bit,
- the collectives the sharded program holds (a kernel with a partitioning rule, Route.run's
  ``lead``, runs on each device's slice: none where the split axis is one the operator keeps
  independent).

    python benchmarks/sharding/check_gpu.py [--only REGEX]

from the repository root, on a machine with 2 or more CUDA GPUs (nvidia-h200-x2). Prints one
markdown row per call and a summary line; exit status 1 if any sharded result differs or any
call whose split axis is independent gathers. ``--cpu-devices N`` runs the code on N virtual CPU
devices (no kernel is taken there: XLA's formula against itself).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=None, help="only the calls whose id matches this regular expression")
    parser.add_argument("--cpu-devices", type=int, default=None)
    args = parser.parse_args(argv)
    import jax

    if args.cpu_devices:
        jax.config.update("jax_num_cpu_devices", args.cpu_devices)
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    import dmljax
    import models
    from tests.lowered_hlo import kernel_calls

    devices = jax.devices()
    mesh = Mesh(np.array(devices), ("batch",))
    rng = np.random.default_rng(0)
    rows, bad = [], 0
    for call in kernel_calls():
        if args.only and not re.search(args.only, call.key):
            continue
        op = getattr(dmljax, call.function)
        specs = [a for a in call.args]
        values = [None if s is None else (rng.standard_normal(s.shape) * 3).astype(s.dtype)
                  if np.issubdtype(s.dtype, np.floating) else
                  rng.integers(-100, 100, s.shape).astype(s.dtype) for s in specs]

        def f(*a, _op=op, _kw=call.kwargs):
            return _op(*a, **_kw)

        lead = next((v.shape[0] for v in values if v is not None and v.ndim), 0)
        if not lead or lead % len(devices):
            rows.append([call.key, "-", "-", f"leading dimension {lead} does not split over {len(devices)}", "-"])
            continue
        want = jax.jit(f)(*[None if v is None else jax.device_put(v, devices[0]) for v in values])
        sharded = [None if v is None else jax.device_put(
            v, NamedSharding(mesh, P("batch") if v.ndim and v.shape[0] == lead else P())) for v in values]
        jitted = jax.jit(f)
        got = jitted(*sharded)
        text = jitted.lower(*sharded).compile().as_text()
        kernels = sum(1 for line in text.splitlines() if "custom-call(" in line and "triton" in line.lower())
        equal = all(np.array_equal(np.asarray(g).view(np.uint8), np.asarray(w).view(np.uint8))
                    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)))
        found = sorted({m for m in ("all-gather", "all-to-all", "collective-permute", "all-reduce", "reduce-scatter")
                        if re.search(rf"\b{m}(-start)?\(", text)})
        # the split (leading) axis is independent unless the call works along axis 0
        along_0 = any(call.kwargs.get(k) in (0, (0,)) for k in ("axis", "axes")) or \
            (isinstance(call.kwargs.get("axes"), tuple) and 0 in call.kwargs["axes"])
        wrong = not equal or bool(found and not along_0)
        bad += wrong
        rows.append([call.key, kernels, "yes" if equal else "NO", ", ".join(found) or "none",
                     "works along the split axis" if along_0 else ("FAIL" if wrong else "ok")])
    models.table("Pallas kernels under a batch-sharded input",
                 ["call", "Triton kernels in the program", "sharded == unsharded", "collectives", "verdict"], rows)
    print(f"{len(rows)} calls, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
