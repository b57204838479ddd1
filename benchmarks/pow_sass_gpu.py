"""What POW's kernels are made of on a GPU: for each form of benchmarks/pow_variants_gpu.py
(FLOAT32 forward and forward+backward, dmljax's, jnp's and the probes), the registers a thread of
XLA's fused kernel uses (ptxas -v on the PTX XLA writes), the occupancy they allow, and the
kernel's SASS instructions counted by kind (cuobjdump -sass): whether the forms' times follow their
instruction counts or their registers.

    python benchmarks/pow_sass_gpu.py [OUT]

Needs ptxas and cuobjdump (CUDA's toolkit) on PATH or under /usr/local/cuda/bin. Compiles at 2^20
elements (the kernel's code does not depend on the size); times nothing.
"""

from __future__ import annotations

import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

DUMP = tempfile.mkdtemp(prefix="pow_sass_")
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={DUMP} --xla_dump_hlo_as_text --xla_gpu_dump_llvmir"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import pow_variants_gpu as pv  # noqa: E402

jax.config.update("jax_enable_compilation_cache", False)  # a cached executable writes no PTX

N = 2 ** 20
TOOLS = [os.environ.get("CUDA_BIN", "/usr/local/cuda/bin"), ""]


def tool(name):
    for d in TOOLS:
        p = os.path.join(d, name) if d else shutil.which(name)
        if p and os.path.exists(p):
            return p
    raise SystemExit(f"{name} not found")


def kernel_stats(ptx_path, workdir):
    """(registers, SASS counts by opcode, total) of the PTX file's largest kernel."""
    cubin = os.path.join(workdir, os.path.basename(ptx_path) + ".cubin")
    r = subprocess.run([tool("ptxas"), "-arch=sm_90", "-v", ptx_path, "-o", cubin], capture_output=True, text=True)
    regs = [int(m) for m in re.findall(r"Used (\d+) registers", r.stderr)]
    sass = subprocess.run([tool("cuobjdump"), "-sass", cubin], capture_output=True, text=True).stdout
    counts = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.]+)?", line)
        if m and m.group(1) != "NOP":
            counts[m.group(1)] += 1
    return (max(regs) if regs else -1), counts


def occupancy(regs):
    """Resident threads an SM allows at ``regs`` registers a thread (64K registers, allocated per
    warp in units of 256; at most 2,048 threads), as a fraction of 2,048."""
    per_warp = -(-regs * 32 // 256) * 256
    warps = min(64, 65536 // per_warp)
    return warps * 32 / 2048


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.25, 8, N).astype(np.float32)
    e = rng.uniform(-3, 3, N).astype(np.float32)
    dy = np.ones(N, np.float32)
    forms = [(f"forward {k}", f, (x, e)) for k, f in pv.FORWARD.items()]
    forms += [(f"grad {k}", f, (x, e, dy)) for k, f in {**pv.GRAD, **pv.FLOAT_GRAD}.items()]
    rows = []
    for i, (name, f, args) in enumerate(forms):
        before = set(glob.glob(os.path.join(DUMP, "**"), recursive=True))
        jax.jit(f).lower(*args).compile()
        written = sorted(set(glob.glob(os.path.join(DUMP, "**"), recursive=True)) - before)
        new = [p for p in written if p.endswith(".ptx")]
        if not new:
            rows.append((name, "no PTX written; new files: " + " ".join(
                os.path.relpath(p, DUMP) for p in written if not p.endswith(".txt"))))
            continue
        best = None
        for p in new:
            regs, counts = kernel_stats(p, DUMP)
            total = sum(counts.values())
            if best is None or total > best[2]:
                best = (regs, counts, total, p)
        regs, counts, total, p = best
        shutil.copy(p, os.path.join(out, f"form_{i:02d}.ptx"))
        top = " ".join(f"{k}:{v}" for k, v in counts.most_common(12))
        rows.append((name, f"{regs:3d} regs, occupancy {occupancy(regs):.2f}, {total:4d} SASS ({top}) form_{i:02d}.ptx"))
    print(f"jax {jax.__version__}; {jax.devices()[0]}")
    for name, text in rows:
        print(f"{name:52s} {text}")


if __name__ == "__main__":
    main()
