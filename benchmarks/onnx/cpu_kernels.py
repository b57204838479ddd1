"""Where an imported model's CPU time goes, and XLA's CPU kernels against ONNX Runtime's, one node
at a time.

    python3 benchmarks/onnx/cpu_kernels.py [--out DIR] [--repeats N] [--skip-models] [--skip-nodes]
        [--skip-kernels] [NAME-FILTER ...]

Two parts, each in one process on the 2-core CPU:

- **models** (tests/onnx/zoo.py's, as ``models.py`` measures them; the name filters pick them):
  the model's time and ONNX Runtime's, medians of ``BLOCK`` calls a side in ``--repeats`` rounds,
  as ``models.py`` takes them; and from ``jax.profiler``'s events of XLA's CPU threads over 10 calls,
  per model call: the calls (thunks) the program makes, *library* ones (into YNNPACK or Eigen:
  ``ynn_fusion``, ``convolution``, ``dot``, ``conv_general_dilated``, ``dot_general``) and the rest,
  and the thread time of the rest, the loops XLA compiles itself (element-wise fusions, pads,
  slices, transposes, reductions; both cores' work added). An event holding others (a loop, a
  branch) is counted by the calls inside it. A library call's work runs in thread pools of its own
  that the profiler does not see, so its time is not given; the profiler adds its own cost to each
  call, so the loops' time of a model of many small calls runs above its unprofiled share.
- **nodes**: one-node ONNX models of each distinct convolution of torchvision's ResNet-18 (batch 1,
  224 x 224): Conv in FLOAT32 and QLinearConv (UINT8 activations, INT8 weights per tensor, as
  ONNX Runtime's static quantization writes them), each loaded by ``dmljax.onnx.load`` and run by
  ONNX Runtime's CPU provider, timed with ``models.measure`` (blocks of calls, the same method as
  the model table), each node as a model's convolutions run (the channels-last program and its
  compiler options, ``onnx/layout.py``, forced here for one convolution); GFLOP/s (GOP/s) from the
  convolution's multiply-adds (2 an element of the filter a position), and the sums weighted by how
  often ResNet-18 has each shape.

- **XLA's own kernels** (``--skip-kernels`` leaves it out): the same shapes as one convolution in a
  program of its own, channels last with the filter {window..., C, O} (the layouts XLA's CPU library
  calls read): FLOAT32 ``lax.conv_general_dilated`` under XLA's default options and under the
  channels-last program's (``layout.compiler_options``), INT8 x INT8 -> INT32 under XLA's default
  options (which hand it to YNNPACK's integer convolution), and the INT8 product of the windows'
  columns that QUANTIZED_LINEAR_CONVOLUTION takes on the CPU (integer_convolution._window_columns);
  the INT8 results are checked against NumPy's exact sums. Each is timed alone (medians of blocks of
  calls), against ONNX Runtime's node of the same run's *nodes* part (or its kept rows): what XLA's
  CPU kernels reach with nothing else in the program.

Writes ``cpu_kernels.md`` and ``cpu_kernels.json`` to ``--out`` or ``benchmarks/results/cpu/onnx/``;
a part left out (``--skip-models``, ``--skip-nodes``, ``--skip-kernels``) keeps its rows of the
folder's earlier ``cpu_kernels.json``, each row naming its commit and date.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402
import models as model_table  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from tests.onnx import zoo  # noqa: E402

LIBRARY = ("ynn_fusion", "convolution", "dot", "conv_general_dilated", "dot_general")
"""Thunk names (their numbered copies included) that are calls into YNNPACK or Eigen."""

RESNET18 = (
    # (input channels, output channels, input size, window, stride, how many ResNet-18 has)
    (3, 64, 224, 7, 2, 1),
    (64, 64, 56, 3, 1, 4),
    (64, 128, 56, 3, 2, 1),
    (128, 128, 28, 3, 1, 3),
    (64, 128, 56, 1, 2, 1),
    (128, 256, 28, 3, 2, 1),
    (256, 256, 14, 3, 1, 3),
    (128, 256, 28, 1, 2, 1),
    (256, 512, 14, 3, 2, 1),
    (512, 512, 7, 3, 1, 3),
    (256, 512, 14, 1, 2, 1),
)


def _kind(name: str) -> str | None:
    base = re.sub(r"\.\d+$", "", name)
    if base.startswith(("end:", "H2D")) or any(w in base for w in ("Thunk", "Listener", "ThreadPool")):
        return None
    return "library" if base in LIBRARY else "generated"


def profile(model, inputs, calls: int = 10) -> dict:
    """Thread time per call by kind (ms) and XLA CPU calls (thunks) per call, from a trace of ``calls`` calls."""
    from jax.profiler import ProfileData  # noqa: PLC0415
    for _ in range(3):
        model_table._block(model(*inputs))
    with tempfile.TemporaryDirectory() as d:
        jax.profiler.start_trace(d)
        for _ in range(calls):
            model_table._block(model(*inputs))
        jax.profiler.stop_trace()
        trace = next(Path(d).rglob("*.xplane.pb"))
        data = ProfileData.from_file(str(trace))
    ns: dict = collections.Counter()
    count: dict = collections.Counter()
    for plane in data.planes:
        for line in plane.lines:
            if not line.name.startswith("tf_XLA"):
                continue
            events = sorted((e for e in line.events if e.duration_ns > 0 and not e.name.startswith("end:")),
                            key=lambda e: e.start_ns)
            for i, ev in enumerate(events):
                kind = _kind(ev.name)
                if i + 1 < len(events) and events[i + 1].start_ns < ev.start_ns + ev.duration_ns:
                    continue  # a loop or a branch: the calls inside it are counted
                if kind is not None:
                    ns[kind] += ev.duration_ns
                    count[kind] += 1
    return {"library_ms": ns["library"] / 1e6 / calls, "generated_ms": ns["generated"] / 1e6 / calls,
            "library_calls": count["library"] / calls, "generated_calls": count["generated"] / calls}


def model_rows(filters, repeats: int) -> list:
    rows = []
    for name, path, inputs, classifier, what, static_inputs in model_table._models():
        if filters and not any(f in name for f in filters):
            continue
        try:
            p = path()
        except zoo.Unavailable as e:
            print(f"{name}: unavailable: {e}", flush=True)
            continue
        row = model_table.measure(name, p, inputs(), classifier, repeats, static_inputs, after=profile)
        if "refused" in row:
            continue
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def _conv_model(c, o, size, k, s, quantized: bool, rng):
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415
    pad = [k // 2] * 4
    out = (size + 2 * (k // 2) - k) // s + 1
    if quantized:
        inits = {"w": rng.integers(-127, 128, (o, c, k, k)).astype(np.int8),
                 "xs": np.array(0.02, np.float32), "xz": np.array(128, np.uint8), "ws": np.array(0.01, np.float32),
                 "wz": np.array(0, np.int8), "ys": np.array(0.5, np.float32), "yz": np.array(128, np.uint8)}
        node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], pads=pad,
                                strides=[s, s])
        kind = TensorProto.UINT8
        x = rng.integers(0, 256, (1, c, size, size)).astype(np.uint8)
    else:
        inits = {"w": (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)}
        node = helper.make_node("Conv", ["x", "w"], ["y"], pads=pad, strides=[s, s])
        kind = TensorProto.FLOAT
        x = rng.standard_normal((1, c, size, size)).astype(np.float32)
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", kind, [1, c, size, size])],
                              [helper.make_tensor_value_info("y", kind, [1, o, out, out])],
                              [numpy_helper.from_array(v, n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, [x], 2 * out * out * o * c * k * k


def node_rows(repeats: int) -> list:
    """Each of ResNet-18's convolutions as a one-node Conv and QLinearConv model, timed as the
    models' convolutions run: the channels-last program, forced for one convolution."""
    import onnx  # noqa: PLC0415
    from dmljax._src.kernel_seam import force_kernels  # noqa: PLC0415  (measuring the models' form)
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as d, force_kernels("channels_last"):
        for quantized in (False, True):
            for c, o, size, k, s, times in RESNET18:
                model, inputs, ops = _conv_model(c, o, size, k, s, quantized, rng)
                name = f"{'QLinearConv' if quantized else 'Conv'} {c}->{o} {size}x{size} {k}x{k} stride {s}"
                path = Path(d) / "node.onnx"
                onnx.save(model, str(path))
                row = model_table.measure(name, path, inputs, False, repeats)
                row.update(ops=ops, times=times, quantized=quantized)
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def _time(fn, args, repeats: int) -> float:
    """Milliseconds a call of the compiled ``fn``: the median of ``repeats`` blocks of
    ``models.BLOCK`` calls, after one uncounted call."""
    jax.block_until_ready(fn(*args))
    blocks = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(model_table.BLOCK):
            jax.block_until_ready(fn(*args))
        blocks.append((time.perf_counter() - start) / model_table.BLOCK * 1e3)
    return float(np.median(blocks))


def kernel_rows(repeats: int) -> list:
    """Each of ResNet-18's convolutions as XLA's CPU kernels compute it alone (the module's
    docstring): FLOAT32 under the default and the channels-last program's options, INT8 through
    YNNPACK's integer convolution and as the windows' columns, in milliseconds."""
    from jax import lax  # noqa: PLC0415
    from dmljax._src.onnx import layout  # noqa: PLC0415
    from dmljax._src.ops.convolution import integer_convolution  # noqa: PLC0415
    from tests.reference.convolution import integer_convolution as integer_reference  # noqa: PLC0415
    rng = np.random.default_rng(0)
    rows = []
    for c, o, size, k, s, times in RESNET18:
        pad = ((k // 2, k // 2),) * 2
        numbers = ("NHWC", "HWIO", "NHWC")

        def conv(x, w, preferred=None, s=s, pad=pad):
            return lax.conv_general_dilated(x, w, (s, s), pad, dimension_numbers=numbers,
                                            preferred_element_type=preferred)
        x8 = rng.integers(-128, 128, (1, size, size, c)).astype(np.int8)
        w8 = rng.integers(-127, 128, (k, k, c, o)).astype(np.int8)
        xf, wf = x8.astype(np.float32) / 64, w8.astype(np.float32) / 64
        integer = jax.jit(lambda x, w: conv(x, w, np.int32))
        g = {"Strides": (s, s), "Dilations": (1, 1), "StartPadding": (k // 2,) * 2, "EndPadding": (k // 2,) * 2}
        # channels last in and out, as the channels-last program runs it: the transposes around it cancel
        columns = jax.jit(lambda x, w, g=g: jnp.moveaxis(
            integer_convolution._window_columns(jnp.moveaxis(x, -1, 1), w, g), 1, -1))
        w8_oihw = np.transpose(w8, (3, 2, 0, 1))
        # the exact sums, in NumPy's INT64 (CONVOLUTION_INTEGER's reference), channels last
        exact = np.transpose(integer_reference.accumulate(
            np.transpose(x8, (0, 3, 1, 2)), None, w8_oihw, None, strides=(s, s), start_padding=(k // 2,) * 2,
            end_padding=(k // 2,) * 2), (0, 2, 3, 1))
        got = np.asarray(integer(x8, w8))
        if not np.array_equal(got, exact) or not np.array_equal(
                np.asarray(columns(x8, w8_oihw)), exact):
            raise AssertionError(f"INT8 convolution {c}->{o} {size}x{size}: not the exact sums")
        row = {"node": f"{c}->{o} {size}x{size} {k}x{k} stride {s}", "times": times,
               "ops": 2 * ((size + 2 * (k // 2) - k) // s + 1) ** 2 * o * c * k * k,
               "float32_default_ms": _time(jax.jit(conv), (xf, wf), repeats),
               "float32_program_options_ms": _time(jax.jit(conv, compiler_options=layout.compiler_options()),
                                                   (xf, wf), repeats),
               "int8_library_ms": _time(integer, (x8, w8), repeats),
               "int8_columns_ms": _time(columns, (x8, w8_oihw), repeats),
               "int8_library_thunks": "ynn" in integer.lower(x8, w8).compile().as_text()}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def markdown(env: dict, repeats: int, models: list, nodes: list, kernels: list = ()) -> str:
    lines = ["# The CPU's time in imported models, and XLA's CPU kernels against ONNX Runtime's", "",
             f"Made by `python3 benchmarks/onnx/cpu_kernels.py` ({env['date']}; commit {env['commit'][:12]}"
             f"{', uncommitted changes' if env['uncommitted changes'] else ''}).", "",
             f"Machine: {env['cpu']}, {env['cores']} cores; jax {env['jax']}, jaxlib {env['jaxlib']}, onnxruntime "
             f"{env['onnxruntime']}. Load averages at the start: {env['load_average_at_start']}; at the end: "
             f"{env['load_average_at_end']}. Times: {repeats} rounds of blocks of calls a side, as "
             "`models.py` takes them (its page gives the method).", ""]

    def measured(rows) -> list:
        kept = sorted({(r.get("commit", ""), r.get("date", "")) for r in rows} - {(env["commit"], env["date"])})
        if not kept:
            return []
        return ["Measured in an earlier run: " + "; ".join(f"commit {c[:12]}, {d}" for c, d in kept) + ".", ""]

    if models:
        lines += ["## Where a model's time goes", ""] + measured(models) + [
                  "*Calls*: the calls (thunks) XLA's CPU program makes a model call, into YNNPACK or Eigen "
                  "(*library*) and in all; *loops ms*: the thread time a model call of the loops XLA compiles "
                  "itself (element-wise fusions, pads, slices, transposes, reductions; both cores' work added, "
                  "under the profiler, which adds its own cost to each call); *loops over ORT*: that time over "
                  "ONNX Runtime's time for the whole model. The goal is a ratio of at most 1.5.", "",
                  "| model | dmljax ms | ORT ms | ratio | library calls | calls | loops ms | loops over ORT |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in models:
            lines.append(f"| {r['model']} | {r['dmljax_ms']:.2f} | {r['ort_ms']:.2f} | {r['ratio']:.2f} | "
                         f"{r['library_calls']:.0f} | {r['library_calls'] + r['generated_calls']:.0f} | "
                         f"{r['generated_ms']:.2f} | {r['generated_ms'] / r['ort_ms']:.2f} |")
        lines.append("")
    if nodes:
        lines += ["## ResNet-18's convolutions, one node at a time", ""] + measured(nodes) + [
                  "Batch 1, each node run as a model's convolutions are (the channels-last program and its "
                  "compiler options, forced for one convolution); GFLOP/s (GOP/s for QLinearConv) from 2 "
                  "operations a multiply-add; *times*: how often ResNet-18 has the shape.", "",
                  "| node | times | dmljax ms | ORT ms | ratio | dmljax G/s | ORT G/s |",
                  "|---|---|---|---|---|---|---|"]
        for r in nodes:
            lines.append(f"| {r['model']} | {r['times']} | {r['dmljax_ms']:.3f} | {r['ort_ms']:.3f} | "
                         f"{r['ratio']:.2f} | "
                         f"{r['ops'] / r['dmljax_ms'] / 1e6:.0f} | {r['ops'] / r['ort_ms'] / 1e6:.0f} |")
        for quantized in (False, True):
            part = [r for r in nodes if r["quantized"] == quantized]
            ours = sum(r["dmljax_ms"] * r["times"] for r in part)
            theirs = sum(r["ort_ms"] * r["times"] for r in part)
            lines += ["", f"ResNet-18's {'QLinearConv' if quantized else 'Conv'} nodes, weighted by how often it has "
                      f"each: dmljax {ours:.2f} ms, ONNX Runtime {theirs:.2f} ms ({ours / theirs:.2f}x)."]
        lines.append("")
    if kernels:
        ort = {(r["model"].split(" ", 1)[1], r["quantized"]): r["ort_ms"] for r in nodes}
        lines += ["## XLA's own kernels, one convolution alone", ""] + measured(kernels) + [
                  "The same shapes (batch 1) as one convolution in a program of its own, channels last, the "
                  "filter {window..., C, O}: FLOAT32 under XLA's default options and under the channels-last "
                  "program's (*program*); INT8 x INT8 -> INT32 as XLA's own convolution (*library*: YNNPACK's "
                  "integer convolution where the compiled program calls it) and as the product of the windows' "
                  "columns that dmljax takes (*columns*); both INT8 forms give the exact sums (checked). "
                  "*ORT*: ONNX Runtime's one-node model of the *nodes* table (Conv; QLinearConv, which also "
                  "requantizes). G/s from 2 operations a multiply-add.", "",
                  "| convolution | times | FLOAT32 default ms | FLOAT32 program ms | ORT Conv ms | INT8 library ms | "
                  "INT8 columns ms | ORT QLinearConv ms | INT8 library G/s | ORT QLinearConv G/s |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in kernels:
            conv_ms, q_ms = ort.get((r["node"], False)), ort.get((r["node"], True))
            conv_text = "-" if conv_ms is None else f"{conv_ms:.3f}"
            q_text = "-" if q_ms is None else f"{q_ms:.3f}"
            q_rate = "-" if q_ms is None else f"{r['ops'] / q_ms / 1e6:.0f}"
            called = "" if r["int8_library_thunks"] else " (no library call)"
            lines.append(f"| {r['node']}{called} | {r['times']} | {r['float32_default_ms']:.3f} | "
                         f"{r['float32_program_options_ms']:.3f} | {conv_text} | {r['int8_library_ms']:.3f} | "
                         f"{r['int8_columns_ms']:.3f} | {q_text} | {r['ops'] / r['int8_library_ms'] / 1e6:.0f} | "
                         f"{q_rate} |")
        totals = {key: sum(r[key] * r["times"] for r in kernels)
                  for key in ("float32_default_ms", "float32_program_options_ms", "int8_library_ms", "int8_columns_ms")}
        text = ", ".join(f"{key[:-3].replace('_', ' ')} {v:.2f} ms" for key, v in totals.items())
        lines += ["", f"Weighted by how often ResNet-18 has each shape: {text}."]
        if all((r["node"], q) in ort for r in kernels for q in (False, True)):
            conv_total = sum(ort[(r["node"], False)] * r["times"] for r in kernels)
            q_total = sum(ort[(r["node"], True)] * r["times"] for r in kernels)
            best_float = sum(min(r["float32_default_ms"], r["float32_program_options_ms"]) * r["times"]
                             for r in kernels)
            best_int8 = sum(min(r["int8_library_ms"], r["int8_columns_ms"]) * r["times"] for r in kernels)
            lines += [f"ONNX Runtime's nodes: Conv {conv_total:.2f} ms, QLinearConv {q_total:.2f} ms. The fastest of "
                      f"XLA's forms for each shape, alone: FLOAT32 {best_float:.2f} ms ({best_float / conv_total:.2f}x "
                      f"ONNX Runtime's), INT8 {best_int8:.2f} ms ({best_int8 / q_total:.2f}x, before any "
                      "requantization)."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="the folder to write cpu_kernels.md and cpu_kernels.json to")
    ap.add_argument("--repeats", type=int, default=9, help="rounds a model or node, each a block of calls a side")
    ap.add_argument("--skip-models", action="store_true",
                    help="measure no model; keep the models' rows of the folder's cpu_kernels.json")
    ap.add_argument("--skip-nodes", action="store_true",
                    help="measure no one-node model; keep their rows of the folder's cpu_kernels.json")
    ap.add_argument("--skip-kernels", action="store_true",
                    help="time no convolution alone; keep those rows of the folder's cpu_kernels.json")
    ap.add_argument("filters", nargs="*", metavar="NAME-FILTER", help="profile the models whose name holds one")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    import onnxruntime  # noqa: PLC0415
    env = common.environment()
    env.update(cpu=common.cpu_name(), cores=os.cpu_count(), onnxruntime=onnxruntime.__version__,
               load_average_at_start=common.load_average())
    folder = Path(args.out) if args.out else common.HERE / "results" / "cpu" / "onnx"
    earlier = json.loads((folder / "cpu_kernels.json").read_text()) if (folder / "cpu_kernels.json").is_file() else {}
    started = time.perf_counter()
    stamp = {"commit": env["commit"], "date": env["date"]}
    models = (earlier.get("models", []) if args.skip_models
              else [dict(r, **stamp) for r in model_rows(args.filters, args.repeats)])
    nodes = earlier.get("nodes", []) if args.skip_nodes else [dict(r, **stamp) for r in node_rows(args.repeats)]
    kernels = (earlier.get("kernels", []) if args.skip_kernels
               else [dict(r, **stamp) for r in kernel_rows(args.repeats)])
    env["load_average_at_end"] = common.load_average()
    env["seconds"] = round(time.perf_counter() - started, 1)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cpu_kernels.json").write_text(json.dumps({"environment": env, "repeats": args.repeats,
                                                         "models": models, "nodes": nodes, "kernels": kernels},
                                                        indent=1) + "\n")
    (folder / "cpu_kernels.md").write_text(markdown(env, args.repeats, models, nodes, kernels))
    print(f"wrote {folder / 'cpu_kernels.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
