"""``dmljax onnx info MODEL.onnx`` and ``dmljax run MODEL.onnx``: one clear message and exit
status 1 for a file that cannot be imported, never a traceback."""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from dmljax._src.errors import ValidationError
from dmljax._src.onnx import export, loader
from dmljax._src.onnx.errors import OnnxImportError

__all__ = ["is_onnx", "info", "run", "export_dxdispatch"]


def is_onnx(path: str) -> bool:
    """An .onnx file, or a file whose first byte is not JSON's (a ModelProto starts with field 1,
    ir_version: byte 0x08)."""
    if str(path).lower().endswith(".onnx"):
        return True
    if not os.path.isfile(path):  # a FIFO or a device would block or never end: the DxDispatch path names it
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(1)
    except OSError:
        return False
    return head == b"\x08"


def _error(command: str, text: str) -> int:
    print(f"dmljax {command}: error: {text}", file=sys.stderr)
    return 1


def _read(path: str, as_written: bool):
    """``load(path)``; ``as_written``: without ONNX Runtime's session-time rewrites and dmljax's
    exact one (load's fuse_qdq, fold_conv and gather_one_hot off)."""
    return loader.load(path, fuse_qdq=not as_written, fold_conv=not as_written, gather_one_hot=not as_written)


def _load(command: str, path: str, as_written: bool = False):
    """The model loaded (``_read``), or None and the exit status of the one message."""
    if loader.onnx is None:
        return None, _error(command, 'ONNX models need the onnx package: pip install "dmljax[onnx]"')
    try:
        return _read(path, as_written), 0
    except OnnxImportError as e:
        return None, _error(command, str(e))


def info(path: str, as_written: bool = False) -> int:
    """Print the model's opset, operators, the rewrites load made as ONNX Runtime makes them (none
    with ``as_written``) and each node's mapping; exit 1 (after listing every node) when some
    cannot be mapped."""
    if loader.onnx is None:
        return _error("onnx info", 'ONNX models need the onnx package: pip install "dmljax[onnx]"')
    try:
        model = _read(path, as_written)
        problems = ""
    except OnnxImportError as e:
        if not any(v.subject.startswith("node ") for v in e.violations):
            return _error("onnx info", str(e))
        problems, model = str(e), None
    if model is None:
        print(problems)
        return 1
    every = list(_flat(model.nodes))
    counts = collections.Counter(n.op_type for n in every)
    inner = len(every) - len(model.nodes)
    print(f"{Path(path).name}: graph {model.name!r}, ai.onnx opset {model.opset}, {len(model.nodes)} nodes"
          + (f" (and {inner} in control-flow subgraphs)" if inner else "") + f", {len(model.params)} parameters")
    for name, dtype, shape in model.inputs:
        print(f"  input {name}: {dtype} {list(shape)}")
    print(f"  outputs: {', '.join(model.outputs)}")
    print("operators: " + ", ".join(f"{op} x{n}" for op, n in sorted(counts.items())))
    if as_written:
        print("rewritten at load: nothing (--as-written)")
    else:
        if model.fused_qdq or model.folded_conv:
            made = [f"{len(model.fused_qdq)} QDQ groups fused into quantized operators"] if model.fused_qdq else []
            made += [f"{len(model.folded_conv)} nodes folded into a Conv's filter and bias"] if model.folded_conv else []
            print(f"rewritten at load as ONNX Runtime does (docs/onnx.md; --as-written keeps the graph as written): "
                  f"{', '.join(made)}")
        if model.gathered_one_hot:
            print(f"rewritten at load, the same outputs bit for bit (docs/onnx.md; --as-written keeps the graph as "
                  f"written): {len(model.gathered_one_hot)} MatMul of one-hot rows read as a gather of its rows")
    _print_nodes(model.nodes, "  ")
    print("unsupported: none")
    return 0


def _flat(nodes):
    for n in nodes:
        yield n
        for _, sub in n.subgraphs:
            yield from _flat(sub)


def _print_nodes(nodes, indent: str, scope: str = "") -> None:
    """Each node and what it becomes; a control-flow node's subgraphs below it, indented (their
    nodes by their own names: messages name them ``node/attribute/subnode``)."""
    for n in nodes:
        name = n.name.removeprefix(scope)
        print(f"{indent}{name} ({n.op_type}): {', '.join(n.dml) if n.dml else '(folded)'}")
        for attr, sub in n.subgraphs:
            print(f"{indent}  {attr}: {len(sub)} node{'s' if len(sub) != 1 else ''}")
            _print_nodes(sub, indent + "    ", f"{n.name}/{attr}/")


def _inputs(model, files: Sequence[str] | None) -> list:
    if not files:
        return loader.random_inputs(model)
    if len(files) == 1 and files[0].endswith(".npz"):
        with np.load(files[0]) as z:
            missing = [n for n, _, _ in model.inputs if n not in z.files]
            if missing:
                raise ValueError(f"{files[0]} has no array named {', '.join(missing)} (its arrays: {', '.join(z.files)})")
            return [z[n] for n, _, _ in model.inputs]
    if len(files) != len(model.inputs):
        raise ValueError(f"the model takes {len(model.inputs)} inputs ({', '.join(n for n, _, _ in model.inputs)}); "
                         f"{len(files)} files given")
    return [np.load(f, allow_pickle=False) for f in files]


def run(path: str, inputs: Sequence[str] | None, out: str | None, force: bool = False,
        as_written: bool = False) -> int:
    model, status = _load("run", path, as_written)
    if model is None:
        return status
    if out is not None and not force:
        taken = [str(Path(out) / f"{_safe(name)}.npy") for name in model.outputs
                 if (Path(out) / f"{_safe(name)}.npy").exists()]
        if taken:
            return _error("run", f"{path}: {', '.join(taken)} exists; pass --force to overwrite, or another --out")
    try:
        values = _inputs(model, inputs)
        results = model(*values)
    except (ValueError, OSError, TypeError, ValidationError) as e:
        return _error("run", f"{path}: {' '.join(str(e).split())[:600]}")
    if out is not None:
        os.makedirs(out, exist_ok=True)
    for name, value in zip(model.outputs, results):
        value = np.asarray(value)
        if out is not None:
            target = Path(out) / f"{_safe(name)}.npy"
            np.save(target, value)
            print(f"Output '{name}': {value.dtype} {list(value.shape)} -> {target}")
        else:
            print(f"Output '{name}': {value.dtype} {list(value.shape)}")
    return 0


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "output"


def export_dxdispatch(path: str, out: str, inputs: Sequence[str] | None, force: bool = False,
                      as_written: bool = False) -> int:
    """Write the model's DirectML graph as a DxDispatch model; exit 1 with one message (every
    step with no DirectML form named) when it has none."""
    model, status = _load("onnx export-dxdispatch", path, as_written)
    if model is None:
        return status
    if os.path.lexists(out) and not force:
        return _error("onnx export-dxdispatch", f"{out} exists; pass --force to overwrite it")
    try:
        values = _inputs(model, inputs)
        graph, runtime = export.to_graph(model, values)
        shapes = [np.shape(y) for y in model(*values)]
        document = export.to_dxdispatch(graph, runtime, shapes)
    except OnnxImportError as e:
        return _error("onnx export-dxdispatch", f"{path}: the model has no DirectML graph form:\n{e}")
    except (ValueError, OSError, TypeError, ValidationError) as e:
        return _error("onnx export-dxdispatch", f"{path}: {' '.join(str(e).split())[:600]}")
    try:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=1)
            f.write("\n")
    except OSError as e:
        return _error("onnx export-dxdispatch", f"cannot write {out} ({e.strerror or e})")
    print(f"{out}: {len(graph.nodes)} DirectML operators in one DML_GRAPH_DESC, {graph.input_count} graph inputs "
          f"({len(graph.constants)} constant), {graph.output_count} outputs; `dmljax run {out}` runs it")
    return 0
