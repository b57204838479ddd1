"""A DirectML graph, as ``DML_GRAPH_DESC`` describes one: operator nodes (each an operator type and
its desc, with DirectML's member names in DxDispatch's JSON spelling), the edges between them
(graph input -> node input, node output -> node input, node output -> graph output) and the
graph inputs that hold constants.

Both front ends build this one type: the DxDispatch reader from a ``DML_GRAPH_DESC``
dispatchable (``dmljax run``), the ONNX importer from the DirectML operator calls a model makes
(``dmljax onnx export-dxdispatch``), and ``to_dxdispatch`` writes one back out as a DxDispatch
model.

A node's inputs and outputs are numbered as DirectML numbers them: its desc's tensors in the
operator's order (``ToNodeInputIndex``), an optional tensor the desc leaves out keeping its
number, a tensor array (JOIN's ``InputTensors``) counting one number an element. An edge carries
memory, not a shape: the consumer reads the producer's output buffer through its own tensor desc
(Sizes and Strides), which is how DirectML expresses a reshape, a broadcast (stride 0) or a
transpose between two operators without an operator. ``CompiledGraph`` runs the nodes in
dependency order inside one ``jax.jit``.

Where one node's only output feeds one input of another and nothing else, and a fusion is
registered for the pair of operators (``register_fusion``: DEQUANTIZE into GEMM's A or B), the two
run as that fusion, as DirectML's graph compiler fuses them; a fusion that declines a call (it
returns None) leaves the two nodes to run one after the other.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.buffers import BufferBinding, buffer_size_in_bytes, read_view, write_view
from dmljax._src.compile import CompiledOperator, compile_operator, element_names
from dmljax._src.dtypes import DataType
from dmljax._src.errors import ValidationError, Violation
from dmljax._src.feature_level import resolve_feature_level
from dmljax._src.fused import FusedActivation
from dmljax._src.structs import ScalarUnion, ScaleBias, Size2D
from dmljax._src.tensor_desc import TensorDesc

__all__ = ["GraphNode", "InputEdge", "OutputEdge", "IntermediateEdge", "DmlGraph", "CompiledGraph",
           "NODE_TYPE", "GRAPH_TYPE", "json_value", "register_fusion", "Fusion"]

GRAPH_TYPE = "DML_GRAPH_DESC"
NODE_TYPE = "DML_GRAPH_NODE_TYPE_OPERATOR"


Fusion = Callable[[CompiledOperator, Mapping[str, Any], CompiledOperator, Mapping[str, Any], str],
                  "dict[str, jax.Array] | None"]
"""``fusion(producer, producer_tensors, consumer, consumer_tensors, member)``: the consumer's
outputs by member name, computed from the producer's inputs (``producer_tensors``) and the
consumer's other inputs, ``member`` naming the consumer input that the producer's output feeds;
or None where it does not take the call."""

_FUSIONS: dict[tuple[str, str], Fusion] = {}


def register_fusion(producer: str, consumer: str, fusion: Fusion) -> None:
    """Run a ``producer`` node (a DML_OPERATOR_* name) whose only output feeds only one input of a
    ``consumer`` node through ``fusion`` (an operator module registers its fusions on import)."""
    _FUSIONS[(producer, consumer)] = fusion


@dataclasses.dataclass(frozen=True)
class GraphNode:
    """One operator call: ``type`` its DML_OPERATOR_* name, ``desc`` its desc (DirectML's member
    names; tensor descs as ``{"DataType", "Sizes", "Strides", "Flags"}``), ``name`` what the
    graph calls it."""

    name: str
    type: str
    desc: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class InputEdge:
    graph_input: int
    to_node: int
    to_input: int
    name: str = ""


@dataclasses.dataclass(frozen=True)
class OutputEdge:
    from_node: int
    from_output: int
    graph_output: int
    name: str = ""


@dataclasses.dataclass(frozen=True)
class IntermediateEdge:
    from_node: int
    from_output: int
    to_node: int
    to_input: int
    name: str = ""


@dataclasses.dataclass
class DmlGraph:
    """A DML_GRAPH_DESC. ``input_names``/``output_names`` name the graph's inputs and outputs
    (``in_i``/``out_i`` where nothing better is known); ``constants`` maps a graph input's index
    to the values it always holds (weights: bound once, at initialization)."""

    nodes: list[GraphNode]
    input_edges: list[InputEdge]
    output_edges: list[OutputEdge]
    intermediate_edges: list[IntermediateEdge]
    input_count: int
    output_count: int
    input_names: list[str] = dataclasses.field(default_factory=list)
    output_names: list[str] = dataclasses.field(default_factory=list)
    constants: dict[int, np.ndarray] = dataclasses.field(default_factory=dict)
    unsupported: list[str] = dataclasses.field(default_factory=list)
    """What the graph could not express (a front end's steps with no DirectML form), in words."""

    def compile(self, *, feature_level=None, allow_half_precision_computation: bool = False) -> "CompiledGraph":
        return CompiledGraph(self, feature_level=feature_level,
                             allow_half_precision_computation=allow_half_precision_computation)

    def desc(self) -> dict:
        """The DML_GRAPH_DESC as DxDispatch's JSON writes it (nodes by name)."""
        return {
            "InputCount": self.input_count,
            "OutputCount": self.output_count,
            "Nodes": [{"Type": NODE_TYPE, "Name": n.name} for n in self.nodes],
            "InputEdges": [{"GraphInputIndex": e.graph_input, "ToNodeIndex": e.to_node,
                            "ToNodeInputIndex": e.to_input, **({"Name": e.name} if e.name else {})}
                           for e in self.input_edges],
            "OutputEdges": [{"FromNodeIndex": e.from_node, "FromNodeOutputIndex": e.from_output,
                             "GraphOutputIndex": e.graph_output, **({"Name": e.name} if e.name else {})}
                            for e in self.output_edges],
            "IntermediateEdges": [{"FromNodeIndex": e.from_node, "FromNodeOutputIndex": e.from_output,
                                   "ToNodeIndex": e.to_node, "ToNodeInputIndex": e.to_input,
                                   **({"Name": e.name} if e.name else {})}
                                  for e in self.intermediate_edges],
        }


def input_slots(compiled: CompiledOperator) -> list[str | None]:
    """A node's inputs in DirectML's numbering: member names, None where the desc leaves an
    optional tensor out."""
    out: list[str | None] = []
    for t in compiled.spec.inputs:
        if t.array:
            out += element_names(t, compiled.tensor_descs)
        else:
            out.append(t.dml_name if compiled.tensor_descs.get(t.dml_name) is not None else None)
    return out


def output_slots(compiled: CompiledOperator) -> list[str | None]:
    out: list[str | None] = []
    for t in compiled.spec.outputs:
        if t.array:
            out += element_names(t, compiled.tensor_descs)
        else:
            out.append(t.dml_name if compiled.tensor_descs.get(t.dml_name) is not None else None)
    return out


class CompiledGraph:
    """A DmlGraph whose nodes are compiled (every desc checked through its operator's OpSpec)
    and whose edges are checked: every edge's indices in range, every node input fed once and
    every required one fed, every graph output fed once, no cycle.

    ``run(*inputs)`` takes the graph's non-constant inputs as arrays (each read, as a packed
    buffer, through the desc of the node input it feeds) and returns the outputs as arrays of
    their producers' Sizes. The DxDispatch form: ``initialize(bindings)`` binds the constant
    inputs (``in_i``), ``__call__(bindings)`` the others and the outputs (``out_i``), buffers as
    ``BufferBinding``; it returns the new output buffers by bind point."""

    def __init__(self, graph: DmlGraph, *, feature_level=None, allow_half_precision_computation: bool = False):
        self.graph = graph
        self.feature_level = resolve_feature_level(feature_level)
        level = self.feature_level.dml_name
        problems: list[Violation] = []
        self.ops: list[CompiledOperator | None] = []
        for i, n in enumerate(graph.nodes):
            try:
                self.ops.append(compile_operator(n.type, n.desc, feature_level=self.feature_level,
                                                 allow_half_precision_computation=allow_half_precision_computation))
            except ValidationError as e:
                problems.append(Violation(f"Nodes[{i}] ({n.name}, {n.type})", "", " ".join(str(e).split())[:600]))
                self.ops.append(None)
        if problems:
            raise ValidationError("dml_graph", GRAPH_TYPE, level, problems)
        ins = [input_slots(op) for op in self.ops]
        outs = [output_slots(op) for op in self.ops]
        feeds: dict[tuple[int, int], tuple] = {}  # (node, input) -> ("in", i) or ("node", n, o)
        sent: dict[int, tuple[int, int]] = {}

        def node_input(where, node, index, source):
            if not 0 <= node < len(self.ops):
                problems.append(Violation(where, "", f"ToNodeIndex is {node}", f"0 to {len(self.ops) - 1}"))
            elif not 0 <= index < len(ins[node]) or ins[node][index] is None:
                present = [k for k, m in enumerate(ins[node]) if m is not None]
                problems.append(Violation(where, "", f"ToNodeInputIndex is {index}",
                                          f"{graph.nodes[node].name}'s inputs: "
                                          + ", ".join(f"{k} ({ins[node][k]})" for k in present)))
            elif (node, index) in feeds:
                problems.append(Violation(where, "", f"feeds input {index} ({ins[node][index]}) of node {node} "
                                          f"({graph.nodes[node].name}), which another edge feeds already",
                                          "each node input has one edge"))
            else:
                feeds[(node, index)] = source

        def node_output(where, node, index) -> bool:
            if not 0 <= node < len(self.ops):
                problems.append(Violation(where, "", f"FromNodeIndex is {node}", f"0 to {len(self.ops) - 1}"))
                return False
            if not 0 <= index < len(outs[node]) or outs[node][index] is None:
                present = [k for k, m in enumerate(outs[node]) if m is not None]
                problems.append(Violation(where, "", f"FromNodeOutputIndex is {index}",
                                          f"{graph.nodes[node].name}'s outputs: "
                                          + ", ".join(f"{k} ({outs[node][k]})" for k in present)))
                return False
            return True

        for k, e in enumerate(graph.input_edges):
            where = f"InputEdges[{k}]"
            if not 0 <= e.graph_input < graph.input_count:
                problems.append(Violation(where, "", f"GraphInputIndex is {e.graph_input}",
                                          f"0 to {graph.input_count - 1} (InputCount {graph.input_count})"))
                continue
            node_input(where, e.to_node, e.to_input, ("in", e.graph_input))
        for k, e in enumerate(graph.intermediate_edges):
            where = f"IntermediateEdges[{k}]"
            if node_output(where, e.from_node, e.from_output):
                node_input(where, e.to_node, e.to_input, ("node", e.from_node, e.from_output))
        for k, e in enumerate(graph.output_edges):
            where = f"OutputEdges[{k}]"
            if not 0 <= e.graph_output < graph.output_count:
                problems.append(Violation(where, "", f"GraphOutputIndex is {e.graph_output}",
                                          f"0 to {graph.output_count - 1} (OutputCount {graph.output_count})"))
            elif e.graph_output in sent:
                problems.append(Violation(where, "", f"feeds graph output {e.graph_output}, which another edge "
                                          "feeds already", "each graph output has one edge"))
            elif node_output(where, e.from_node, e.from_output):
                sent[e.graph_output] = (e.from_node, e.from_output)
        for node, slots in enumerate(ins):
            for index, member in enumerate(slots):
                if member is not None and (node, index) not in feeds:
                    problems.append(Violation(f"Nodes[{node}] ({graph.nodes[node].name})", "",
                                              f"input {index} ({member}) has no edge", "every input the desc has is fed"))
        for o in range(graph.output_count):
            if o not in sent:
                problems.append(Violation("OutputEdges", "", f"feed no edge to graph output {o}",
                                          f"one edge for each of the OutputCount ({graph.output_count}) outputs"))
        used = {src[1] for src in feeds.values() if src[0] == "in"}
        for i in range(graph.input_count):
            if i not in used:
                problems.append(Violation("InputEdges", "", f"feed graph input {i} to no node",
                                          f"each of the InputCount ({graph.input_count}) inputs feeds a node"))
        order = self._order(feeds, problems) if not problems else []
        if problems:
            raise ValidationError("dml_graph", GRAPH_TYPE, level, problems)
        self._ins, self._outs, self._feeds, self._sent, self._order_ = ins, outs, feeds, sent, order
        self.input_descs: dict[int, TensorDesc] = {}  # a graph input's first consumer's desc
        for (node, index), src in sorted(feeds.items()):
            if src[0] == "in" and src[1] not in self.input_descs:
                self.input_descs[src[1]] = self.ops[node].tensor_descs[ins[node][index]]
        self.output_descs = [self.ops[n].tensor_descs[outs[n][o]] for n, o in (sent[i] for i in range(graph.output_count))]
        self._fusions = self._fusable(ins, outs, feeds, sent)
        self._init: dict[int, tuple[jax.Array, int]] = {}  # graph inputs bound at initialization
        self._run_constants: dict[int, jax.Array] | None = None
        self._jits: dict = {}

    def _fusable(self, ins, outs, feeds, sent) -> dict[int, tuple[int, str]]:
        """consumer node -> (producer node, consumer member) for each pair a fusion is registered
        for: the producer has one output, which feeds one consumer input through the same view
        (Sizes, Strides, DataType) and no graph output."""
        readers: dict[int, list[tuple[int, int]]] = {}
        for (node, index), src in feeds.items():
            if src[0] == "node":
                readers.setdefault(src[1], []).append((node, index))
        out_fed = {n for n, _ in sent.values()}
        found = {}
        for p, read_by in readers.items():
            if len(read_by) != 1 or p in out_fed or sum(m is not None for m in outs[p]) != 1:
                continue
            (m, index), = read_by
            if (self.graph.nodes[p].type, self.graph.nodes[m].type) not in _FUSIONS or m in found:
                continue
            made = self.ops[p].tensor_descs[outs[p][feeds[(m, index)][2]]]
            read = self.ops[m].tensor_descs[ins[m][index]]
            if (made.sizes, made.effective_strides, made.data_type) == (read.sizes, read.effective_strides,
                                                                         read.data_type):
                found[m] = (p, ins[m][index])
        return found

    def _order(self, feeds, problems) -> list[int]:
        deps = {n: set() for n in range(len(self.ops))}
        for (node, _), src in feeds.items():
            if src[0] == "node":
                deps[node].add(src[1])
        order, done = [], set()
        ready = [n for n in deps if not deps[n]]
        while ready:
            n = ready.pop(0)
            order.append(n)
            done.add(n)
            ready += [m for m in deps if m not in done and m not in ready and deps[m] <= done]
        if len(order) < len(self.ops):
            left = [self.graph.nodes[n].name for n in deps if n not in done]
            problems.append(Violation("IntermediateEdges", "", f"make a cycle through {', '.join(left[:6])}",
                                      "a graph's edges run one way"))
        return order

    # ------------------------------------------------------------------------ running
    def _evaluate(self, graph_inputs: Mapping[int, tuple[Any, int]]) -> list[jax.Array]:
        """Every node, in order, inside the caller's trace: graph input i is (buffer, byte
        offset); the graph's outputs as tensors of their producers' descs."""
        values: dict[tuple[int, int], jax.Array] = {}
        buffers: dict[tuple[int, int], jax.Array] = {}
        fused_into = {p: m for m, (p, _) in self._fusions.items()}
        held: dict[int, dict[str, jax.Array]] = {}  # a fused producer's inputs, until its consumer runs

        def produced_buffer(n, o):
            if (n, o) not in buffers:
                desc = self.ops[n].tensor_descs[self._outs[n][o]]
                es = max(1, desc.data_type.bits // 8)
                zeros = jnp.zeros(-(-desc.total_tensor_size_in_bytes // es), desc.data_type.dtype)
                buffers[(n, o)] = write_view(zeros, desc, values[(n, o)], 0)
            return buffers[(n, o)]

        for n in self._order_:
            op = self.ops[n]
            tensors = {}
            for index, member in enumerate(self._ins[n]):
                if member is None:
                    continue
                desc = op.tensor_descs[member]
                src = self._feeds[(n, index)]
                if src[0] == "in":
                    buf, off = graph_inputs[src[1]]
                    tensors[member] = read_view(buf, desc, off)
                    continue
                if src[1] in held:  # the fused producer's output: the fusion computes it
                    continue
                producer = self.ops[src[1]].tensor_descs[self._outs[src[1]][src[2]]]
                if (producer.sizes == desc.sizes and producer.effective_strides == desc.effective_strides
                        and producer.data_type == desc.data_type):
                    tensors[member] = values[(src[1], src[2])]
                else:  # another view of the producer's memory: through its buffer
                    tensors[member] = read_view(produced_buffer(src[1], src[2]), desc, 0)
            if n in fused_into:
                held[n] = tensors
                continue
            results = None
            if n in self._fusions:
                p, member = self._fusions[n]
                fusion = _FUSIONS[(self.graph.nodes[p].type, self.graph.nodes[n].type)]
                results = fusion(self.ops[p], held[p], op, tensors, member)
                if results is None:  # declined: the producer runs, then this node
                    made = self.ops[p].apply(held[p])
                    for o, name in enumerate(self._outs[p]):
                        if name is not None:
                            values[(p, o)] = made[name]
                    tensors[member] = values[self._feeds[(n, self._ins[n].index(member))][1:]]  # same view
            if results is None:
                results = op.apply(tensors)
            for o, member in enumerate(self._outs[n]):
                if member is not None:
                    values[(n, o)] = results[member]
        return [values[self._sent[i]] for i in range(self.graph.output_count)]

    def run(self, *inputs) -> tuple[jax.Array, ...]:
        """The graph on arrays: one a non-constant graph input, in index order; the outputs as
        tensors of their producers' output descs."""
        runtime = [i for i in range(self.graph.input_count) if i not in self.graph.constants]
        if len(inputs) != len(runtime):
            raise TypeError(f"the graph takes {len(runtime)} inputs; {len(inputs)} given")
        key = ("run", tuple((np.shape(x), str(np.asarray(x).dtype) if not isinstance(x, jax.Array) else str(x.dtype))
                            for x in inputs))
        fn = self._jits.get(key)
        if fn is None:
            def fn(consts, *xs):  # constants are arguments: XLA folding them could round differently
                bound = {i: (jnp.ravel(x), 0) for i, x in zip(runtime, xs)}
                bound.update({i: (c, 0) for i, c in consts.items()})
                return tuple(self._evaluate(bound))
            fn = self._jits[key] = jax.jit(fn)
        if self._run_constants is None:
            self._run_constants = {i: jnp.asarray(np.ravel(v)) for i, v in self.graph.constants.items()}
        return fn(self._run_constants, *[jnp.asarray(x) for x in inputs])

    # ----------------------------------------------------------- DxDispatch's bindings
    @property
    def bind_points(self) -> tuple[str, ...]:
        return tuple(f"in_{i}" for i in range(self.graph.input_count)) + tuple(
            f"out_{i}" for i in range(self.graph.output_count))

    def _resolve(self, bindings: Mapping[str, Any], allowed: Sequence[str], phase: str, required: bool = True):
        problems, resolved = [], {}
        for point, b in bindings.items():
            if point not in allowed:
                problems.append(Violation(point, "", f"is not a bind point at {phase}",
                                          "bind points: " + (", ".join(allowed) or "none")))
                continue
            buf, off = (b.buffer, b.offset_in_bytes) if isinstance(b, BufferBinding) else (b, 0)
            desc = self.input_descs[int(point[3:])] if point.startswith("in_") else self.output_descs[int(point[4:])]
            need = off + desc.total_tensor_size_in_bytes
            have = buffer_size_in_bytes(buf)
            if need > have:
                problems.append(Violation(point, "", f"is bound to {have} bytes from offset {off}",
                                          f"its tensor desc needs {desc.total_tensor_size_in_bytes} bytes"))
            resolved[point] = (buf, int(off))
        for point in allowed if required else ():
            if point not in bindings:
                problems.append(Violation(point, "", "is not bound", f"bind every one of: {', '.join(allowed)}"))
        if problems:
            raise ValidationError("dml_graph", GRAPH_TYPE, self.feature_level.dml_name, problems)
        return resolved

    def _points(self, phase: str) -> list[str]:
        if phase == "initialization":
            return [f"in_{i}" for i in range(self.graph.input_count)]
        return [p for p in self.bind_points if not (p.startswith("in_") and int(p[3:]) in self._init)]

    def initialize(self, bindings: Mapping[str, Any] | None = None) -> "CompiledGraph":
        """Bind graph inputs once (``in_i``, the graph dispatchable's own bindings in DxDispatch):
        their current values are kept, as DirectML keeps an OWNED_BY_DML input's; the others
        are bound at each call."""
        bindings = dict(bindings or {})
        allowed = self._points("initialization")
        resolved = self._resolve(bindings, allowed, "initialization", required=False)
        self._init = {int(p[3:]): (jnp.asarray(b), off) for p, (b, off) in resolved.items()}
        return self

    def _prepare(self, bindings):
        points = self._points("execution")
        resolved = self._resolve(dict(bindings or {}), points, "execution")
        layout = tuple((p, resolved[p][1]) for p in points)
        args = [jnp.asarray(resolved[p][0]) for p in points]
        init = dict(self._init)
        key = (layout, tuple(sorted((i, off) for i, (_, off) in init.items())),
               tuple((a.shape, str(a.dtype)) for a in args))
        fn = self._jits.get(key)
        if fn is None:
            offsets = dict(layout)
            init_offsets = {i: off for i, (_, off) in init.items()}

            def fn(held, *bufs):
                by_point = dict(zip(points, bufs))
                bound = {i: (by_point[f"in_{i}"], offsets[f"in_{i}"]) for i in range(self.graph.input_count)
                         if f"in_{i}" in by_point}
                bound.update({i: (b, init_offsets[i]) for i, b in held.items()})
                outs = self._evaluate(bound)
                return tuple(write_view(by_point[f"out_{i}"], self.output_descs[i], v, offsets[f"out_{i}"])
                             for i, v in enumerate(outs))
            fn = self._jits[key] = jax.jit(fn)
        return fn, ({i: b for i, (b, _) in init.items()}, *args)

    def prepare(self, bindings: Mapping[str, Any] | None = None) -> None:
        self._prepare(bindings)

    def __call__(self, bindings: Mapping[str, Any] | None = None) -> dict[str, jax.Array]:
        fn, args = self._prepare(bindings)
        return {f"out_{i}": v for i, v in enumerate(fn(*args))}

    def running_bytes(self) -> int:
        """Memory a dispatch takes besides its buffers: every node's tensors, at most."""
        total = 0
        for op in self.ops:
            for d in op.tensor_descs.values():
                if d is not None:
                    total += d.element_count * max(1, d.data_type.bits // 8)
        return total + sum(d.total_tensor_size_in_bytes for d in self.output_descs)


# ------------------------------------------------------------------------- writing
def json_value(value):
    """A Python attribute value in the JSON spelling a DxDispatch desc uses."""
    if isinstance(value, FusedActivation):
        return {"Type": value.type, "Desc": {k: json_value(v) for k, v in dict(value.attrs).items()}}
    if isinstance(value, ScaleBias):
        return {"Scale": float(value.scale), "Bias": float(value.bias)}
    if isinstance(value, Size2D):
        return {"Width": int(value.width), "Height": int(value.height)}
    if isinstance(value, ScalarUnion):  # its 8 bytes: exact for every type, NaN included
        return {"Bytes": list(value.bytes)}
    if isinstance(value, enum.Enum):
        return value.name if isinstance(value, DataType) else getattr(value, "dml_name", value.name)
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [json_value(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def desc_json(desc: TensorDesc) -> dict:
    """A tensor desc as DxDispatch writes it."""
    out = {"DataType": desc.data_type.name, "Sizes": list(desc.sizes)}
    if desc.strides is not None:
        out["Strides"] = list(desc.strides)
    if desc.owned_by_dml:
        out["Flags"] = "OWNED_BY_DML"
    return out
