"""An imported ONNX model as a DirectML graph (``DmlGraph``), and that graph as a DxDispatch model
(``dmljax onnx export-dxdispatch MODEL.onnx OUT.json``), which DxDispatch runs on a Windows GPU and
``dmljax run`` here.

The model is traced once for example inputs, with every DirectML operator call recorded (its
record, Sizes, DataTypes and attributes: op.record_calls). Each call becomes a node. What the
mapping table does between operators in jax.numpy becomes what DirectML has for it, as ONNX
Runtime's DirectML provider does: a reshape, a squeeze, a transpose or a broadcast is the
consumer's tensor desc (Sizes and Strides over the producer's memory: stride 0 broadcasts); a
change of type is a CAST node; a view that cannot be expressed as strides (a reshape of a
transposed tensor) is copied packed by an ELEMENT_WISE_IDENTITY node first. Initializers and
constants are graph inputs bound once, at initialization (OWNED_BY_DML in their consumers'
descs). Anything else between operators (arithmetic in jax.numpy, control flow that did not fold)
has no DirectML form: the export refuses the model, naming each such step.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import numpy as np
from jax.extend.core import Literal

from dmljax._src.dtypes import DataType
from dmljax._src.errors import Violation
from dmljax._src.graph import (DmlGraph, GraphNode, InputEdge, IntermediateEdge, OutputEdge, desc_json,
                               json_value)
from dmljax._src.onnx.errors import OnnxImportError
from dmljax._src.op import OperatorCall, output_names, record_calls
from dmljax._src.spec import INFERRED
from dmljax._src.tensor_desc import TensorDesc, packed_strides

__all__ = ["to_graph", "to_dxdispatch"]

_ALIASES = ("copy", "copy_p", "optimization_barrier")
_CONTROL = {"cond": "lax.cond (an If whose condition is known only at run time)",
            "while": "lax.while_loop (a Loop whose condition is known only at run time)",
            "scan": "lax.scan (a Loop of a static trip count, or a Scan)"}


@dataclasses.dataclass(frozen=True)
class _View:
    """A value as DirectML sees it: elements of ``base`` (a graph input ("in", i) or a node
    output ("node", n, o)) at ``strides`` (in elements) for ``sizes``."""

    base: tuple
    data_type: DataType
    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def packed(self) -> bool:
        return self.strides == packed_strides(self.sizes)


def _data_type(dtype) -> DataType | None:
    dtype = np.dtype(dtype)
    return DataType.UINT8 if dtype == np.bool_ else DataType.from_dtype(dtype)


class _Builder:
    def __init__(self, calls: list[OperatorCall]):
        self.calls = list(calls)
        self.next_call = 0
        self.nodes: list[GraphNode] = []
        self.input_edges: list[InputEdge] = []
        self.middle: list[IntermediateEdge] = []
        self.input_values: list[np.ndarray | None] = []  # a graph input's constant values (None: runtime)
        self.input_names: list[str] = []
        self.constants: dict[int, int] = {}  # id of a constant's array -> graph input
        self.unsupported: list[str] = []

    # ---- graph inputs
    def graph_input(self, name: str, value=None, aval=None) -> _View | None:
        dtype = value.dtype if value is not None else aval.dtype
        shape = tuple(np.shape(value)) if value is not None else tuple(aval.shape)
        dt = _data_type(dtype)
        if dt is None:
            self.unsupported.append(f"input {name!r} is of type {np.dtype(dtype)}, which DirectML has no type for")
            return None
        if value is not None:
            key = id(value)
            if key in self.constants:
                i = self.constants[key]
                return _View(("in", i), dt, shape, packed_strides(shape))
            value = np.asarray(value)
            if value.dtype == np.bool_:
                value = value.astype(np.uint8)
        i = len(self.input_values)
        self.input_values.append(value)
        self.input_names.append(name)
        if value is not None:
            self.constants[key] = i
        return _View(("in", i), dt, shape, packed_strides(shape))

    # ---- nodes
    def feed(self, node: int, slot: int, view: _View) -> None:
        if view.base[0] == "in":
            self.input_edges.append(InputEdge(view.base[1], node, slot, self.input_names[view.base[1]]))
        else:
            self.middle.append(IntermediateEdge(view.base[1], view.base[2], node, slot))

    def in_desc(self, view: _View, data_type: DataType, sizes) -> dict:
        sizes = tuple(sizes) or (1,)
        strides = view.strides if view.sizes else (1,)
        desc = TensorDesc(data_type, sizes, None if strides == packed_strides(sizes) else strides,
                          "OWNED_BY_DML" if view.base[0] == "in" and self.input_values[view.base[1]] is not None else 0)
        return desc_json(desc)

    def add(self, type_: str, desc: dict, feeds: list[tuple[int, _View]], label: str) -> int:
        n = len(self.nodes)
        self.nodes.append(GraphNode(f"node_{n}_{label}", type_, desc))
        for slot, view in feeds:
            self.feed(n, slot, view)
        return n

    def identity(self, view: _View) -> _View:
        """A packed copy of a view (ELEMENT_WISE_IDENTITY)."""
        sizes = view.sizes or (1,)
        desc = {"InputTensor": self.in_desc(view, view.data_type, sizes),
                "OutputTensor": {"DataType": view.data_type.name, "Sizes": list(sizes)}}
        n = self.add("DML_OPERATOR_ELEMENT_WISE_IDENTITY", desc, [(0, view)], "copy")
        return _View(("node", n, 0), view.data_type, view.sizes, packed_strides(view.sizes))

    def cast(self, view: _View, to: DataType) -> _View:
        sizes = view.sizes or (1,)
        desc = {"InputTensor": self.in_desc(view, view.data_type, sizes),
                "OutputTensor": {"DataType": to.name, "Sizes": list(sizes)}}
        n = self.add("DML_OPERATOR_CAST", desc, [(0, view)], "cast")
        return _View(("node", n, 0), to, view.sizes, packed_strides(view.sizes))

    def operator(self, eqn, views: list) -> list:
        if self.next_call >= len(self.calls):
            raise AssertionError("dmljax bug: more operator calls traced than recorded")
        rec = self.calls[self.next_call]
        self.next_call += 1
        spec, call = rec.spec, rec.call
        desc: dict[str, Any] = {}
        feeds = []
        leaves = iter(views)
        slot = 0
        for t in spec.inputs:
            names = [n for n in call.tensors if n.split("[", 1)[0] == t.dml_name]
            if t.array:
                names = sorted(names, key=lambda n: int(n.split("[")[1][:-1]))
                descs = []
                for name in names:
                    v = next(leaves)
                    if v is None:
                        return [None] * len(eqn.outvars)
                    descs.append(self.in_desc(v, call.tensors[name].data_type, call.tensors[name].shape))
                    feeds.append((slot, v))
                    slot += 1
                if descs:
                    desc[t.dml_name] = descs
                continue
            if t.dml_name in call.tensors:
                v = next(leaves)
                if v is None:
                    return [None] * len(eqn.outvars)
                info = call.tensors[t.dml_name]
                if v.data_type.bits != info.data_type.bits:
                    self.unsupported.append(f"{spec.enum_name}'s {t.dml_name} reads {v.data_type.name} memory as "
                                            f"{info.data_type.name}")
                    return [None] * len(eqn.outvars)
                desc[t.dml_name] = self.in_desc(v, info.data_type, info.shape)
                feeds.append((slot, v))
            slot += 1
        outs = output_names(call)
        for t in spec.outputs:
            mine = [n for n in outs if n.split("[", 1)[0] == t.dml_name]
            descs = [{"DataType": call.tensors[n].data_type.name, "Sizes": list(call.tensors[n].shape)} for n in mine]
            if descs:
                desc[t.dml_name] = descs if t.array else descs[0]
        for p in spec.params:
            value = call.attrs.get(p.dml_name)
            if value is not None and value is not INFERRED:
                desc[p.dml_name] = json_value(value)
        n = self.add(spec.enum_name, desc, feeds, spec.enum_name.removeprefix("DML_OPERATOR_").lower())
        return [_View(("node", n, k), call.tensors[name].data_type, tuple(call.tensors[name].shape),
                      packed_strides(call.tensors[name].shape)) for k, name in enumerate(outs)]

    # ---- glue
    def glue(self, eqn, views: list) -> list | None:
        """What jax.numpy did between operators, in DirectML's terms; None if it has none."""
        prim = eqn.primitive.name
        v = views[0] if views else None
        out_aval = eqn.outvars[0].aval
        if prim in _ALIASES:
            return views
        if v is None:
            return None
        if prim == "convert_element_type":
            to = _data_type(eqn.params["new_dtype"])
            if to is None:
                return None
            if to == v.data_type:
                return [v]
            return [self.cast(v, to)]
        if prim == "broadcast_in_dim":
            shape, dims = tuple(eqn.params["shape"]), tuple(eqn.params["broadcast_dimensions"])
            strides = [0] * len(shape)
            for i, d in enumerate(dims):
                strides[d] = v.strides[i] if v.sizes[i] == shape[d] else 0
            return [_View(v.base, v.data_type, shape, tuple(strides))]
        if prim == "transpose":
            perm = eqn.params["permutation"]
            return [_View(v.base, v.data_type, tuple(v.sizes[p] for p in perm), tuple(v.strides[p] for p in perm))]
        if prim == "squeeze":
            drop = {d % len(v.sizes) for d in eqn.params["dimensions"]}
            keep = [i for i in range(len(v.sizes)) if i not in drop]
            return [_View(v.base, v.data_type, tuple(v.sizes[i] for i in keep), tuple(v.strides[i] for i in keep))]
        if prim == "reshape":
            if eqn.params.get("dimensions") not in (None, ()):
                return None
            shape = tuple(out_aval.shape)
            kept = [(s, st) for s, st in zip(v.sizes, v.strides) if s != 1]
            new_kept = [s for s in shape if s != 1]
            if [s for s, _ in kept] == new_kept:  # only size-1 dimensions come or go: strides carry over
                it = iter(st for _, st in kept)
                return [_View(v.base, v.data_type, shape, tuple(next(it) if s != 1 else 0 for s in shape))]
            if not v.packed:
                v = self.identity(v)
            return [_View(v.base, v.data_type, shape, packed_strides(shape))]
        return None

    def walk(self, jaxpr, env: dict, where: str) -> None:
        for eqn in jaxpr.eqns:
            views = [self.read(x, env) for x in eqn.invars]
            prim = eqn.primitive.name
            if prim in ("jit", "pjit") and eqn.params.get("name") == "run":
                outs = self.operator(eqn, views)
            elif prim in ("jit", "pjit", "closed_call", "core_call"):
                inner = eqn.params.get("jaxpr") or eqn.params.get("call_jaxpr")
                sub = dict(zip(inner.jaxpr.invars, views))
                sub.update(zip(inner.jaxpr.constvars, [("value", c) for c in inner.consts]))
                self.walk(inner.jaxpr, sub, where)
                outs = [self.read(o, sub) for o in inner.jaxpr.outvars]
            elif prim in ("custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr"):
                inner = eqn.params.get("call_jaxpr") or eqn.params.get("fun_jaxpr")
                sub = dict(zip(inner.jaxpr.invars, views))
                sub.update(zip(inner.jaxpr.constvars, [("value", c) for c in inner.consts]))
                self.walk(inner.jaxpr, sub, where)
                outs = [self.read(o, sub) for o in inner.jaxpr.outvars]
            else:
                outs = self.glue(eqn, views) if all(v is not None for v in views) else None
                if outs is None:
                    if prim in _CONTROL:
                        self.unsupported.append(f"{_CONTROL[prim]}: DirectML has no control flow (a graph runs "
                                                "every node once)")
                    elif all(v is not None for v in views):
                        shapes = ", ".join(str(x.aval) for x in eqn.invars)
                        self.unsupported.append(f"{prim} on {shapes} ({where}): jax.numpy work between operators "
                                                "that has no DirectML form")
                    outs = [None] * len(eqn.outvars)
            for var, view in zip(eqn.outvars, outs):
                env[var] = view

    def read(self, x, env: dict):
        if isinstance(x, Literal):
            return self.graph_input(f"literal_{len(self.input_values)}", np.asarray(x.val, x.aval.dtype))
        v = env.get(x)
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "value":  # a constant, made a graph input when first read
            view = self.graph_input(f"constant_{len(self.input_values)}", np.asarray(v[1]))
            env[x] = view
            return view
        return v


def to_graph(model, inputs) -> tuple[DmlGraph, list[np.ndarray]]:
    """``model`` (an OnnxModel) as a DirectML graph for inputs of these shapes and types, and the
    values of the graph's runtime inputs (the model's inputs, in the graph's order).

    Raises OnnxImportError naming every step between operators that DirectML cannot express."""
    inputs = [np.asarray(x) for x in inputs]
    with record_calls() as calls:  # a new function: a trace JAX cached for model.apply would run no operator
        closed = jax.make_jaxpr(lambda params, *xs: model._apply(params, *xs))(model.params, *inputs)
    b = _Builder(calls)
    jaxpr = closed.jaxpr
    leaves, _ = jax.tree_util.tree_flatten(model.params)
    names = sorted(model.params)  # a dict's leaves come in sorted key order
    env: dict = {}
    for var, name, value in zip(jaxpr.invars, names, leaves):
        env[var] = b.graph_input(name, np.asarray(value))
    runtime = []
    for var, (name, _, _), x in zip(jaxpr.invars[len(leaves):], model.inputs, inputs):
        env[var] = b.graph_input(name, aval=var.aval)
        runtime.append(x)
    for var, c in zip(jaxpr.constvars, closed.consts):
        env[var] = ("value", c)
    b.walk(jaxpr, env, "the model's graph")
    outputs = []
    for o, name in zip(jaxpr.outvars, model.outputs):
        v = b.read(o, env)
        if v is None:
            b.unsupported.append(f"output {name!r} depends on the steps above")
            outputs.append(None)
            continue
        count = math.prod(v.sizes)
        if v.base[0] == "in" or not v.packed or count != _node_output_count(b, v):
            v = b.identity(v)
        outputs.append(v)
    if b.unsupported:
        raise OnnxImportError(model.name, [Violation("DirectML graph", "", u) for u in dict.fromkeys(b.unsupported)])
    # runtime inputs that no node reads are left out (a DirectML graph input feeds a node)
    used = {e.graph_input for e in b.input_edges}
    keep = [i for i in range(len(b.input_values)) if i in used]
    index = {old: new for new, old in enumerate(keep)}
    graph = DmlGraph(
        b.nodes,
        [dataclasses.replace(e, graph_input=index[e.graph_input]) for e in b.input_edges],
        [OutputEdge(v.base[1], v.base[2], k, name) for k, (v, name) in enumerate(zip(outputs, model.outputs))],
        b.middle, len(keep), len(outputs),
        input_names=[b.input_names[i] for i in keep], output_names=list(model.outputs),
        constants={index[i]: b.input_values[i] for i in keep if b.input_values[i] is not None})
    runtime_names = [n for n, _, _ in model.inputs]
    values = [runtime[runtime_names.index(b.input_names[i])] for i in keep if b.input_values[i] is None]
    return graph, values


def _node_output_count(b: _Builder, v: _View) -> int:
    node = b.nodes[v.base[1]]
    outs = [d for key, d in node.desc.items() if isinstance(d, (dict, list)) and key.startswith("Output")]
    flat = [d for x in outs for d in (x if isinstance(x, list) else [x])]
    return math.prod(flat[v.base[2]]["Sizes"]) if v.base[2] < len(flat) else -1


def to_dxdispatch(graph: DmlGraph, inputs, output_shapes) -> dict:
    """A DxDispatch model that runs ``graph``: its inputs as resources (constants bound in the
    graph dispatchable's own bindings, at initialization; ``inputs`` the runtime ones' values),
    its nodes as operator dispatchables, one dispatch, and a writeFile command for each output
    (``NAME.npy`` beside the model's outputs folder)."""
    resources: dict[str, dict] = {}
    used: set[str] = set()

    def name_for(text: str, kind: str) -> str:
        base = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text) or kind
        out, k = base, 2
        while out in used:
            out, k = f"{base}_{k}", k + 1
        used.add(out)
        return out

    def values_resource(value: np.ndarray) -> dict:
        value = np.asarray(value)
        if value.dtype == np.bool_:
            value = value.astype(np.uint8)
        dt = DataType.from_dtype(value.dtype)
        flat = value.ravel()
        items = [json_value(float(x)) for x in flat] if np.issubdtype(value.dtype, np.floating) else [int(x) for x in flat]
        return {"initialValuesDataType": dt.name, "initialValues": items or [0]}

    compiled = graph.compile()
    init, bind = {}, {}
    runtime = iter(inputs)
    for i in range(graph.input_count):
        rname = name_for(graph.input_names[i] if i < len(graph.input_names) else f"in_{i}", "input")
        value = graph.constants[i] if i in graph.constants else next(runtime)
        resources[rname] = values_resource(value)
        (init if i in graph.constants else bind)[f"in_{i}"] = rname
    commands = []
    writes = []
    for o in range(graph.output_count):
        desc = compiled.output_descs[o]
        rname = name_for(graph.output_names[o] if o < len(graph.output_names) else f"out_{o}", "output")
        resources[rname] = {"initialValuesDataType": desc.data_type.name,
                            "initialValues": {"valueCount": desc.element_count, "value": 0}}
        bind[f"out_{o}"] = rname
        dims = [int(d) for d in output_shapes[o]] or [1]
        writes.append({"type": "writeFile", "resource": rname, "targetPath": f"{rname}.npy", "dimensions": dims})
    dispatchables = {n.name: {"type": n.type, "desc": n.desc} for n in graph.nodes}
    dispatchables["graph"] = {"type": "DML_GRAPH_DESC", "desc": graph.desc(), **({"bindings": init} if init else {})}
    commands.append({"type": "dispatch", "dispatchable": "graph", "bindings": bind})
    commands += writes
    return {"resources": resources, "dispatchables": dispatchables, "commands": commands}
