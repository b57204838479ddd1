"""Run an ONNX model in ONNX Runtime with every intermediate tensor kept, and save them all, with
the inputs, in one .npz for `dmljax compare MODEL.onnx --reference FILE.npz`.

On Windows, with the DirectML provider (pip install onnxruntime-directml numpy onnx):

    python ort_dump_intermediates.py model.onnx --inputs inputs.npz --out reference.npz

Every node output becomes a graph output, so the provider must hand each one back; DirectML
still computes each node on the GPU. Without --inputs the inputs are random (seed 0) and saved in
the archive too, so the comparison uses the same ones. --provider CPU runs ONNX Runtime's CPU
provider instead (what a report that "the CPU is right" compares with).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import onnx
import onnxruntime as ort


def with_every_output(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with each node output (that is not a graph output already) added as a graph
    output, typed by ONNX's shape inference."""
    inferred = onnx.shape_inference.infer_shapes(model)
    typed = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    have = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in have:
                model.graph.output.append(typed.get(name) or onnx.helper.make_empty_tensor_value_info(name))
                have.add(name)
    return model


def random_inputs(session: ort.InferenceSession, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    types = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}
    out = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        dtype = types.get(i.type, np.float32)
        out[i.name] = (rng.standard_normal(shape) if np.issubdtype(dtype, np.floating)
                       else rng.integers(0, 4, shape)).astype(dtype)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--inputs", help="an .npz of the model's inputs by name (default: random, seed 0)")
    p.add_argument("--out", default="reference.npz")
    p.add_argument("--provider", default="DML", choices=("DML", "CPU"))
    p.add_argument("--no-optimizations", action="store_true",
                   help="turn ONNX Runtime's graph optimizations off (no fused nodes)")
    args = p.parse_args(argv)
    model = with_every_output(onnx.load(args.model))
    options = ort.SessionOptions()
    options.enable_mem_pattern = False  # the DirectML provider requires these two
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if args.no_optimizations:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    providers = ["DmlExecutionProvider"] if args.provider == "DML" else ["CPUExecutionProvider"]
    if providers[0] not in ort.get_available_providers():
        print(f"{providers[0]} is not available in this onnxruntime ({', '.join(ort.get_available_providers())}); "
              "on Windows: pip install onnxruntime-directml", file=sys.stderr)
        return 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=providers)
    if args.inputs:
        with np.load(args.inputs) as z:
            feeds = {i.name: z[i.name] for i in session.get_inputs()}
    else:
        feeds = random_inputs(session)
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, feeds)
    np.savez(args.out, **feeds, **dict(zip(names, values)))
    print(f"{len(names)} tensors and {len(feeds)} inputs written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
