"""Peak memory of `dmljax compare` on an ONNX model with about 1 GiB of intermediate tensors.

The model is a chain of element-wise nodes (Sigmoid, Mul, Add, Abs, Neg in turn) on one FLOAT32
tensor of ELEMENTS values (64 MiB at the default 16 Mi), NODES of them (16: 1 GiB of
intermediates). The reference is written as ONNX Runtime's node dump writes it, one
`.tensorproto` file per value, computed by dmljax node by node (in its own process). Then, each in
a fresh process, and each process's peak resident memory (ru_maxrss) taken:

  run       `dmljax run MODEL.onnx --inputs x.npy`: dmljax's own run of the model
  compare   `dmljax compare MODEL.onnx --reference DIR`

and the difference is set against one tensor's size. Usage:

    python benchmarks/compare/streaming.py [--out DIR] [--elements N] [--nodes K] [--work DIR]

Writes DIR/streaming.json (default benchmarks/results/cpu/compare/) with the machine and the
versions. SMOKE=1 runs it on 64 Ki elements and 4 nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OPS = ("Sigmoid", "Mul", "Add", "Abs", "Neg")


def build_model(path: Path, elements: int, nodes: int) -> None:
    import onnx
    from onnx import TensorProto, helper
    inits = [helper.make_tensor("c", TensorProto.FLOAT, [], [0.75])]
    graph_nodes, prev = [], "x"
    for i in range(nodes):
        op, out = OPS[i % len(OPS)], f"t{i}"
        ins = [prev, "c"] if op in ("Mul", "Add") else [prev]
        graph_nodes.append(helper.make_node(op, ins, [out], name=f"n{i}_{op.lower()}"))
        prev = out
    g = helper.make_graph(graph_nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [elements])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


DUMP = """
import sys, numpy as np
from pathlib import Path
from dmljax._src.onnx import loader
from dmljax._src.compare.onnx import ort_file_name
model, out = loader.load(sys.argv[1]), Path(sys.argv[2])
x = np.load(sys.argv[3])
def write(name, v):
    (out / ort_file_name(name)).write_bytes(loader.numpy_helper.from_array(np.asarray(v), name).SerializeToString())
write("x", x)
prev = {"x": x}
for i, n in enumerate(model.nodes):
    outs = model.evaluate_node(i, {k: prev[k] for k in n.inputs if k in prev})
    prev = outs
    for k, v in outs.items():
        write(k, v)
"""


def peak_rss(argv: list[str]) -> tuple[int, float, str]:
    """(peak resident bytes, seconds, stdout) of one command in a fresh process (Linux: ru_maxrss in KiB)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "JAX_PLATFORMS": "cpu"}
    t0 = time.perf_counter()
    code = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(p.stdout[-3000:]); print(p.stderr[-2000:], file=sys.stderr); "
            "print('MAXRSS', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(p.returncode)")
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{argv[:4]} failed ({p.returncode}): {p.stderr[-2000:]}")
    kib = int(p.stdout.rsplit("MAXRSS", 1)[1].split()[0])
    return kib * 1024, seconds, p.stdout.rsplit("MAXRSS", 1)[0]


def main(argv=None) -> int:
    smoke = os.environ.get("SMOKE", "") not in ("", "0")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--elements", type=int, default=(1 << 16) if smoke else (1 << 24))
    p.add_argument("--nodes", type=int, default=4 if smoke else 16)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cpu" / "compare"))
    p.add_argument("--work", default=None, help="folder for the model and its dump (default: a temporary one)")
    args = p.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="dmljax-compare-bench-"))
    try:
        model, ref = work / "chain.onnx", work / "reference"
        ref.mkdir(parents=True, exist_ok=True)
        build_model(model, args.elements, args.nodes)
        x = np.random.default_rng(0).standard_normal(args.elements).astype(np.float32)
        np.save(work / "x.npy", x)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
        subprocess.run([sys.executable, "-c", DUMP, str(model), str(ref), str(work / "x.npy")], check=True, env=env)
        dump_bytes = sum(f.stat().st_size for f in ref.iterdir())
        tensor = args.elements * 4
        run_rss, run_s, _ = peak_rss([sys.executable, "-m", "dmljax._src.cli", "run", str(model), "--inputs",
                                      str(work / "x.npy")])
        cmp_rss, cmp_s, cmp_out = peak_rss([sys.executable, "-m", "dmljax._src.cli", "compare", str(model),
                                            "--reference", str(ref)])
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    import jax
    import jaxlib
    import onnx
    result = {
        "what": "peak resident memory (ru_maxrss) of dmljax run and dmljax compare on a chain of element-wise nodes",
        "elements": args.elements, "nodes": args.nodes, "tensor_bytes": tensor,
        "intermediates_bytes": tensor * args.nodes, "dump_bytes_on_disk": dump_bytes,
        "run_peak_rss_bytes": run_rss, "compare_peak_rss_bytes": cmp_rss,
        "compare_minus_run_bytes": cmp_rss - run_rss,
        "compare_minus_run_in_tensors": round((cmp_rss - run_rss) / tensor, 2),
        "run_seconds": round(run_s, 1), "compare_seconds": round(cmp_s, 1),
        "compare_verdict": cmp_out.strip().splitlines()[-1] if cmp_out.strip() else "",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        "versions": {"python": platform.python_version(), "jax": jax.__version__,
                     "jaxlib": getattr(jaxlib, "__version__", "?"), "numpy": np.__version__, "onnx": onnx.__version__},
        "smoke": smoke,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "streaming.json").write_text(json.dumps(result, indent=1) + "\n")
    mib = 1 << 20
    print(f"{args.nodes} nodes of {tensor / mib:.0f} MiB ({tensor * args.nodes / mib:.0f} MiB of intermediates, "
          f"{dump_bytes / mib:.0f} MiB dumped)")
    print(f"dmljax run:     peak {run_rss / mib:.0f} MiB, {run_s:.1f} s")
    print(f"dmljax compare: peak {cmp_rss / mib:.0f} MiB, {cmp_s:.1f} s: {cmp_rss - run_rss:+.0f} B = "
          f"{(cmp_rss - run_rss) / tensor:+.2f} tensors beyond the run")
    print(f"written to {out / 'streaming.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
