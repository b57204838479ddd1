"""``load``: an ONNX model as a pytree of parameters and one jitted function of them.

At load time the file is read (external data included), the opset checked, every node matched
to a row of the mapping table (table.py) and every input that DirectML takes as an attribute
(shapes, axes, K, pads, scales) traced back to initializers, Constant nodes and Shape nodes; every
node that cannot be mapped is reported in one OnnxImportError. At call time the whole graph is
traced into one jitted program: nodes whose inputs are all static (shape computations, constant
subgraphs) are evaluated by ONNX's reference evaluator while tracing, the others become dmljax
operators; symbolic dimensions are specialised per call (jit retraces for new shapes).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.errors import ValidationError, Violation, cap
from dmljax._src.onnx import folds, one_hot, prepare, qdq
from dmljax._src.onnx.errors import OnnxImportError, file_error, node_violation
from dmljax._src.onnx.table import (CONTROL_FLOW, FOLDED, TABLE, UNROLL, Call, Rule, _runtime_dtype, find_rule,
                                    rules_for)

try:
    import onnx
    from onnx import numpy_helper
except ImportError:  # pragma: no cover  (the `onnx` extra)
    onnx = None

__all__ = ["load", "OnnxModel", "NodeInfo", "MIN_OPSET", "max_opset"]

MIN_OPSET = 1
"""The oldest ai.onnx opset imported (each row of the table says from which opset it maps its
operator)."""


def max_opset() -> int:
    """The newest ai.onnx opset imported: the installed onnx package's."""
    return onnx.defs.onnx_opset_version()


def _need_onnx() -> None:
    if onnx is None:
        raise ImportError('dmljax.onnx needs the onnx package: pip install "dmljax[onnx]"')


@dataclasses.dataclass(frozen=True)
class NodeInfo:
    """One node and what it becomes: ``dml`` is the DirectML operators (empty for a folded one),
    ``reason`` why it cannot be mapped (empty if it can); ``inputs`` and ``outputs`` name its
    values ("" for an optional one left out)."""

    name: str
    op_type: str
    opset: int
    dml: tuple[str, ...]
    reason: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    subgraphs: tuple = ()
    """A control-flow node's subgraphs: (attribute name, the subgraph's NodeInfos) pairs; its
    ``inputs`` then end with the enclosing graph's values that the subgraphs read (ONNX's
    implicit inputs)."""


@dataclasses.dataclass(frozen=True)
class _Node:
    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict
    rule: Rule | None
    proto: Any
    cache: dict = dataclasses.field(default_factory=dict)  # the node's reference evaluator, by opset
    subgraphs: dict = dataclasses.field(default_factory=dict)  # a control-flow node's, by attribute name


@dataclasses.dataclass(frozen=True)
class _Subgraph:
    """A control-flow node's graph attribute: its nodes (in order), constants (initializers and
    Constant nodes), input and output names. Names it uses but does not define are the enclosing
    graphs' values."""

    nodes: list
    consts: dict
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


_CONTROL = {r.op_type for r in CONTROL_FLOW}
_GRAPH_ATTRS = {"If": ("then_branch", "else_branch"), "Loop": ("body",), "Scan": ("body",),
                "FlexAttention": ("score_mod", "prob_mod")}
"""The graph attributes whose subgraphs are mapped: the control-flow nodes', run by the loader, and
those of operators whose row calls its subgraphs as functions (FlexAttention's modifiers)."""


def _info(n: "_Node", opset: int) -> "NodeInfo":
    if not n.subgraphs:
        return NodeInfo(n.name, n.op_type, opset, () if n.rule is None else n.rule.dml,
                        inputs=n.inputs, outputs=n.outputs)
    subs = tuple((k, tuple(_info(m, opset) for m in g.nodes)) for k, g in n.subgraphs.items())
    used: list[str] = []
    for _, infos in subs:
        for i in _flat(infos):
            used += [d for d in i.dml if d.startswith("DML_OPERATOR_") and d not in used]
    implicit = tuple(x for x in _outer_names(n) if x not in n.inputs)
    return NodeInfo(n.name, n.op_type, opset, n.rule.dml + tuple(used), inputs=n.inputs + implicit,
                    outputs=n.outputs, subgraphs=subs)


def _outer_names(n: "_Node") -> list[str]:
    """The values of enclosing graphs that a control-flow node's subgraphs read, in order."""
    out: list[str] = []
    for g in n.subgraphs.values():
        defined = set(g.inputs) | set(g.consts) | {o for m in g.nodes for o in m.outputs if o}
        for m in g.nodes:
            for x in list(m.inputs) + _outer_names(m):
                if x and x not in defined and x not in out:
                    out.append(x)
        out += [o for o in g.outputs if o not in defined and o not in out]
    return out


def _flat(infos):
    for i in infos:
        yield i
        for _, sub in i.subgraphs:
            yield from _flat(sub)


def _attr_value(a) -> Any:
    v = onnx.helper.get_attribute_value(a)
    if a.type == onnx.AttributeProto.TENSOR:
        return numpy_helper.to_array(v)
    if isinstance(v, list):
        return tuple(v)
    return v


def _read(source, where: str):
    """The ModelProto of a path, bytes or ModelProto, external data loaded."""
    if isinstance(source, onnx.ModelProto):
        model = source
        base = None
    elif isinstance(source, (bytes, bytearray, memoryview)):
        try:
            model = onnx.load_model_from_string(bytes(source))
        except Exception as e:  # noqa: BLE001  (protobuf raises its own DecodeError and more)
            raise file_error(where, f"cannot be read as an ONNX model ({type(e).__name__}: {cap(e, 200)})",
                             "the bytes are not an ONNX ModelProto, or are truncated") from None
        base = None
    else:
        path = Path(os.fspath(source))
        if not path.is_file():
            raise file_error(where, "does not exist" if not path.exists() else "is not a file")
        try:
            model = onnx.load(str(path), load_external_data=False)
        except Exception as e:  # noqa: BLE001
            raise file_error(where, f"cannot be read as an ONNX model ({type(e).__name__}: {cap(e, 200)})",
                             "the file is not an ONNX ModelProto, or is truncated") from None
        base = path.parent
    if not model.HasField("graph") or not model.ir_version:
        raise file_error(where, "is not an ONNX model (no graph or no IR version)",
                         "the file parsed, but as an empty or foreign protobuf message")
    if base is not None or isinstance(source, onnx.ModelProto):
        missing = []
        for t in _external_tensors(model):
            location = {e.key: e.value for e in t.external_data}.get("location", "")
            if base is None:
                if not t.raw_data:
                    missing.append(f"{t.name!r} ({location})")
                continue
            if not (base / location).is_file():
                missing.append(f"{t.name!r} ({base / location})")
        if missing:
            raise file_error(where, f"has external data that is missing: {', '.join(missing[:5])}"
                             + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""),
                             "keep the data files beside the model, at the locations it names")
        if base is not None:
            try:
                onnx.external_data_helper.load_external_data_for_model(model, str(base))
            except Exception as e:  # noqa: BLE001
                raise file_error(where, f"has external data that cannot be read ({type(e).__name__}: {cap(e, 200)})") from None
    try:
        onnx.checker.check_model(model)
    except Exception as e:  # noqa: BLE001  (onnx's checker raises its ValidationError and others)
        raise file_error(where, f"is not a valid ONNX model: {cap(' '.join(str(e).split()), 300)}") from None
    return model


def _external_tensors(model) -> list:
    out = []
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            out.append(t)
    for n in model.graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_location == onnx.TensorProto.EXTERNAL:
                out.append(a.t)
    return out


def _default_opset(model) -> int | None:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return None


class OnnxModel:
    """An imported ONNX model.

    ``params``: the model's floating-point initializers (those not folded into attributes), a
    dict name -> array: a pytree to differentiate and train. ``apply(params, *inputs)``: the
    graph as one jitted function, returning a tuple of the graph's outputs in order.
    ``model(*inputs)`` gives ``apply(model.params, *inputs)``'s outputs, on the CPU computing what
    depends on the parameters alone once (onnx/prepare.py: on concrete inputs; under a JAX
    transformation, and on other backends, it is ``apply``), channels last between convolutions
    (onnx/layout.py). ``inputs`` and ``outputs`` name the
    graph's inputs (with their element type and shape, symbolic dimensions as strings) and
    outputs; ``nodes`` says what each node becomes; ``fused_qdq`` lists the QDQ groups load fused
    into quantized operators (onnx/qdq.py; empty with ``fuse_qdq=False``); ``folded_conv`` lists the
    BatchNormalization, Mul and Add nodes load folded into the Conv before them (onnx/folds.py; empty
    with ``fold_conv=False``); ``gathered_one_hot`` lists the MatMul nodes of one-hot rows load reads
    as gathers (onnx/one_hot.py; empty with ``gather_one_hot=False``)."""

    def __init__(self, proto, name: str, opset: int, nodes: list[_Node], params: dict, consts: dict,
                 inputs: list, outputs: list[str], buffers: dict | None = None, fused_qdq: tuple = (),
                 folded_conv: tuple = (), gathered_one_hot: tuple = ()):
        self.proto = proto
        self.fused_qdq = tuple(fused_qdq)
        self.folded_conv = tuple(folded_conv)
        self.gathered_one_hot = tuple(gathered_one_hot)
        self.name = name
        self.opset = opset
        self._nodes = nodes
        self.params = params
        self._consts = consts
        self.inputs = inputs
        self.outputs = outputs
        self._buffers = dict(buffers or {})
        self.apply = _Apply(jax.jit(self._apply_buffers), self._buffers)
        self._prepared = prepare.Prepared(lambda known, *xs: self._apply_buffers(known[0], known[1], *xs))

    @property
    def nodes(self) -> tuple[NodeInfo, ...]:
        return tuple(_info(n, self.opset) for n in self._nodes)

    def __call__(self, *inputs):
        out = self._prepared((self.params, self._buffers), *inputs)
        return self.apply(self.params, *inputs) if out is None else out

    def __repr__(self) -> str:
        return (f"OnnxModel({self.name!r}, opset {self.opset}, {len(self._nodes)} nodes, "
                f"{len(self.params)} parameters, inputs {[i[0] for i in self.inputs]}, outputs {self.outputs})")

    def evaluate_node(self, index: int, values: dict) -> dict:
        """Evaluate one node (``index`` into the graph's nodes, in topological order) on the
        given input values (name -> array; initializers and Constant outputs need not be given)
        and return its outputs by name. The node runs as in ``apply``: its DirectML operators
        each as a jitted call, or folded by ONNX's reference evaluator when every input is a
        static value (a constant, or a shape computed from constants and Shape nodes); given
        values are static where the model would have them static. Used by ``dmljax compare``
        to judge a node on another runtime's inputs."""
        n = self._nodes[index]
        static = self._static_values()
        env: dict[str, Any] = dict(self._consts)
        env.update(self._buffers)
        env.update(self.params)
        for name, v in values.items():
            if name not in self._consts:
                env[name] = np.asarray(v) if name in static else jnp.asarray(v)
        _run_node(n, env, self.opset)
        return {o: env[o] for o in n.outputs if o}

    def _static_values(self) -> set:
        """The names whose values are static in ``apply``: constants and what Shape and Size
        nodes, and nodes of static inputs only, compute from them."""
        if getattr(self, "_static", None) is None:
            static = set(self._consts)
            for n in self._nodes:
                ins = [i for i in n.inputs if i]
                if n.op_type in ("Shape", "Size") or (n.op_type != "Dropout" and all(i in static for i in ins)):
                    static.update(o for o in n.outputs if o)
            self._static = static
        return self._static

    def _apply(self, params, *inputs):
        return self._apply_buffers(params, self._buffers, *inputs)

    def _apply_buffers(self, params, buffers, *inputs):
        if len(inputs) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} inputs ({', '.join(i[0] for i in self.inputs)}); "
                            f"{len(inputs)} given")
        env: dict[str, Any] = dict(self._consts)
        env.update(buffers)
        env.update(params)
        env.update({spec[0]: jnp.asarray(x) for spec, x in zip(self.inputs, inputs)})
        for n in self._nodes:
            _run_node(n, env, self.opset)
        return tuple(_to_array(env[o]) for o in self.outputs)


class _Apply:
    """``apply(params, *inputs)``: the model's one jitted function, its large integer initializers
    (``buffers``) passed along as arguments; ``lower`` as jax.jit's."""

    def __init__(self, jitted, buffers: dict):
        self._jitted = jitted
        self._buffers = buffers

    def __call__(self, params, *inputs):
        return self._jitted(params, self._buffers, *inputs)

    def lower(self, params, *inputs):
        return self._jitted.lower(params, self._buffers, *inputs)


def _to_array(v):
    return jnp.asarray(v) if isinstance(v, (np.ndarray, np.generic)) else v


def _is_static(v) -> bool:
    return v is None or isinstance(v, (np.ndarray, np.generic))


def _run_node(n: _Node, env: dict, opset: int) -> None:
    args = [env[i] if i else None for i in n.inputs]
    if n.op_type in _CONTROL:
        outs = _CONTROL_RUN[n.op_type](n, args, env, opset)
        for name, v in zip(n.outputs, outs):
            if name:
                env[name] = v
        return
    if n.op_type == "Shape":
        shape = np.asarray(np.shape(args[0]), np.int64)
        start, end = n.attrs.get("start", 0), n.attrs.get("end")
        env[n.outputs[0]] = shape[slice(start, end)]
        return
    if n.op_type == "Size":
        env[n.outputs[0]] = np.asarray(int(np.prod(np.shape(args[0]), dtype=np.int64)), np.int64)
        return
    if all(_is_static(a) for a in args) and n.op_type != "Dropout" and n.proto.domain in ("", "ai.onnx"):  # folded
        try:
            outs = _fold(n, args, opset)
        except Exception as fold_error:  # noqa: BLE001  (ONNX's reference evaluator cannot run every node:
            if n.rule is None:  # GatherElements along a row longer than 64 fails in np.choose); the node's own
                raise  # rule, run now on the constants, folds it
            try:
                with jax.ensure_compile_time_eval():
                    outs = [np.asarray(o) for o in _lower(n, args, opset, env)]
            except Exception as e:
                raise e from fold_error
    else:
        for i in (n.rule.static if n.rule else ()):
            if i < len(args) and not _is_static(args[i]):
                raise OnnxImportError(n.name, [node_violation(n.name, n.op_type, opset,
                                                              f"input {i} ({n.inputs[i]!r}) depends on the model's runtime values",
                                                              "DirectML takes it as an attribute: it must be static")])
        outs = _lower(n, args, opset, env)
    for name, v in zip(n.outputs, outs):
        if name:
            env[name] = v


def _lower(n: _Node, args: list, opset: int, env: dict | None = None) -> list:
    """A node's outputs by its table row: the DirectML operators it becomes. A subgraph attribute reaches
    the row as a function of the subgraph's inputs, returning its one output (its nodes' operators, run in
    the enclosing scope ``env``)."""
    attrs = n.attrs
    if n.subgraphs:
        attrs = dict(attrs)
        for key, sg in n.subgraphs.items():
            attrs[key] = lambda *values, sg=sg: _run_subgraph(sg, env or {}, list(values), opset)[0]
    try:
        return n.rule.lower(Call(n.op_type, opset, args, attrs, sum(1 for o in n.outputs if o), tuple(n.outputs)))
    except ValidationError as e:
        e.add_note(f"while lowering ONNX node {n.name!r} ({n.op_type}, ai.onnx opset {opset})")
        raise


def _fold(n: _Node, args: list, opset: int) -> list:
    """A node of static inputs, evaluated by ONNX's reference evaluator (exact integer shape
    arithmetic, no trace)."""
    from onnx.reference import ReferenceEvaluator  # noqa: PLC0415  (heavy; imported on first fold)
    ev = n.cache.get(opset)
    if ev is None:
        h = onnx.helper
        graph = h.make_graph([n.proto], "fold", [h.make_empty_tensor_value_info(i) for i in n.inputs if i],
                             [h.make_empty_tensor_value_info(o) for o in n.outputs if o])
        ev = ReferenceEvaluator(h.make_model(graph, opset_imports=[h.make_opsetid("", opset)]))
        n.cache[opset] = ev
    feeds = {name: np.asarray(a) for name, a in zip(n.inputs, args) if name}
    return [np.asarray(o) for o in ev.run(None, feeds)]


def _static_inputs(n: _Node) -> tuple[int, ...]:
    """The inputs of a node that must be static: its row's, and a Loop's trip count and
    condition where it has scan outputs (whose length they decide)."""
    if n.op_type == "Loop" and "body" in n.subgraphs:
        body = n.subgraphs["body"]
        if len(body.outputs) - 1 - (len(n.inputs) - 2) > 0:
            return (0, 1)
    return n.rule.static if n.rule else ()


def _static_names(nodes: list[_Node], opset: int, produced_by: dict) -> set[str]:
    """The values that must be known without running the model: the static inputs of every node
    and, backwards, what they are computed from (a Shape or Size node needs only a shape)."""
    need: set[str] = set()
    stack = []
    for n in nodes:
        for i in _static_inputs(n):
            if i < len(n.inputs) and n.inputs[i]:
                stack.append(n.inputs[i])
    while stack:
        name = stack.pop()
        if name in need:
            continue
        need.add(name)
        p = produced_by.get(name)
        if p is not None and p.op_type not in ("Shape", "Size"):
            stack.extend(i for i in p.inputs if i)
    return need


def _subgraph_reads(g) -> set[str]:
    """The names that control-flow nodes' subgraphs (at any depth) read."""
    out: set[str] = set()
    for p in g.node:
        for a in p.attribute:
            for sub in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                out.update(x for m in sub.node for x in m.input if x)
                out |= _subgraph_reads(sub)
    return out


def load(source, *, name: str | None = None, static_inputs: dict | None = None, fuse_qdq: bool = True,
         fold_conv: bool = True, gather_one_hot: bool = True) -> OnnxModel:
    """Import an ONNX model (a path, the file's bytes, or an ``onnx.ModelProto``; external data
    is read from beside the file).

    ``static_inputs`` fixes graph inputs to values at load time (name -> array): they leave the
    model's inputs and are folded like initializers, which is how a graph input that DirectML
    takes as an attribute (a Reshape's shape, a ReduceSum's axes) can be given.

    ``fuse_qdq`` (default True) fuses QDQ groups (DequantizeLinear -> Conv -> QuantizeLinear and the
    like) into quantized operators (QLinearConv onto QUANTIZED_LINEAR_CONVOLUTION, ...), as ONNX
    Runtime's CPU provider does when it creates a session: an integer accumulation requantized once,
    where the graph as written computes in FLOAT32 and can round a value to the neighbouring
    quantization step (onnx/qdq.py lists the rules). ``fuse_qdq=False`` keeps the graph as written.

    ``fold_conv`` (default True) folds a BatchNormalization in inference form, or a Mul or Add of a
    constant per-channel tensor, that reads a Conv's output into the Conv's constant filter and bias,
    as ONNX Runtime's level-1 rewrite rules do for every execution provider when it creates a
    session: the folded constants are ONNX Runtime's bit for bit, and can differ from the graph as
    written by FLOAT32 rounding (onnx/folds.py lists the rules). ``fold_conv=False`` keeps the graph
    as written.

    ``gather_one_hot`` (default True) reads a MatMul of one-hot rows (Equal of an expanded integer
    tensor and the constants v0 to v0 + K - 1, Cast, MatMul by {K, N} weights: an exported embedding
    lookup) as a gather of the product's K + 1 possible rows, computed by the same GEMM: the same
    outputs bit for bit (onnx/one_hot.py). ``gather_one_hot=False`` keeps the graph as written.

    Raises:
        OnnxImportError: the file is not a readable ONNX model, its ai.onnx opset is outside
            MIN_OPSET to max_opset(), or nodes cannot be mapped (all of them listed: node,
            operator, opset, reason).
    """
    _need_onnx()
    where = name or (repr(Path(os.fspath(source)).name) if isinstance(source, (str, os.PathLike)) else "<model>")
    bad = [Violation("Option", k, f"is {cap(repr(v), 80)}", "True or False")
           for k, v in (("fuse_qdq", fuse_qdq), ("fold_conv", fold_conv), ("gather_one_hot", gather_one_hot))
           if not isinstance(v, (bool, np.bool_))]
    if bad:
        raise OnnxImportError(where, bad)
    model = _read(source, where)
    g = model.graph
    opset = _default_opset(model)
    if opset is None and all(p.domain not in ("", "ai.onnx") for p in g.node):
        opset = max_opset()  # a graph of other domains' operators only (an ai.onnx.preview.training step)
    if opset is None:
        raise file_error(where, "imports no ai.onnx opset")
    if not MIN_OPSET <= opset <= max_opset():
        raise file_error(where, f"uses ai.onnx opset {opset}; supported: {MIN_OPSET} to {max_opset()}",
                         "convert it with onnx.version_converter.convert_version")
    initializers = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    graph_input_names = {i.name for i in g.input}
    for k, v in (static_inputs or {}).items():
        if k not in graph_input_names:
            raise file_error(where, f"has no graph input {k!r} to fix (static_inputs)",
                             f"its inputs: {', '.join(sorted(graph_input_names - set(initializers)))}")
        initializers[k] = np.asarray(v)
    domains = {o.domain: int(o.version) for o in model.opset_import}
    graph = g
    fusions: tuple = ()
    conv_folds: tuple = ()
    one_hot_products: tuple = ()
    overridable = (set(initializers) & graph_input_names) - set(static_inputs or {}) if model.ir_version >= 4 else set()
    if fold_conv:
        folded, extra, unread, conv_folds = folds.fold(g.node, qdq.const_values(g, initializers), overridable,
                                                       [o.name for o in g.output], _subgraph_reads(g), opset)
        if conv_folds:
            graph = onnx.helper.make_graph(folded, g.name, [], [])
            for k in unread - graph_input_names:
                initializers.pop(k, None)
            initializers.update(extra)
    if fuse_qdq:
        input_types = {i.name: _elem_type(i) for i in g.input if i.name not in initializers}
        fused, extra, fusions = qdq.fuse(graph.node, qdq.const_values(graph, initializers), input_types,
                                         [o.name for o in g.output], _subgraph_reads(g), opset)
        if fusions or extra:
            graph = onnx.helper.make_graph(fused, g.name, [], [])
            initializers.update(extra)
            domains.setdefault(qdq.MS, 1)
    if gather_one_hot:
        rewritten, one_hot_products = one_hot.rewrite(model, graph.node, qdq.const_values(graph, initializers),
                                                      overridable, [o.name for o in g.output], _subgraph_reads(g),
                                                      opset)
        if one_hot_products:
            graph = onnx.helper.make_graph(rewritten, g.name, [], [])
    problems: list[Violation] = []
    nodes, consts = _map_nodes(graph, opset, problems, domains=domains, shapes=_static_shapes(model, initializers))
    produced_by: dict[str, _Node] = {}
    for n in _all_nodes(nodes):
        for o in n.outputs:
            produced_by[o] = n
    graph_inputs = [i for i in g.input if i.name not in initializers]
    static = _static_names(list(_all_nodes(nodes)), opset, produced_by)
    for s in sorted(static):
        if s in {i.name for i in graph_inputs}:
            users = [n for n in _all_nodes(nodes) if s in n.inputs and n.rule and any(
                n.inputs[k] == s for k in _static_inputs(n) if k < len(n.inputs))]
            who = users[0] if users else nodes[0]
            problems.append(node_violation(who.name, who.op_type, opset,
                                           f"needs graph input {s!r} as a static value",
                                           "DirectML takes it as an attribute: make it an initializer or a constant"))
    if problems:
        raise OnnxImportError(where, problems)
    params, consts_all, buffers = {}, dict(consts), {}
    for k, v in initializers.items():
        if k in static or k in (static_inputs or {}):
            consts_all[k] = v
        elif np.issubdtype(v.dtype, np.floating):
            params[k] = jnp.asarray(v)
        elif v.size > _BUFFER_SIZE:
            buffers[k] = jnp.asarray(v)
        else:
            consts_all[k] = v
    inputs = [(i.name, _elem_type(i), _shape(i)) for i in graph_inputs]
    return OnnxModel(model, g.name or where, opset, nodes, params, consts_all, inputs, [o.name for o in g.output],
                     buffers, fusions, conv_folds, one_hot_products)


_BUFFER_SIZE = 1024
"""Integer initializers larger than this (quantized weights) are passed to the jitted function as
arguments rather than baked in as constants: XLA would otherwise fold the integer arithmetic on
them at compile time, which took a minute for a quantized ResNet-18."""


def _static_shapes(model, initializers: dict) -> dict:
    """The static shapes of the main graph's values (name -> sizes) where a row checks shapes at load:
    the graph's inputs, its initializers (and static_inputs) and what ONNX's shape inference finds;
    symbolic or unknown shapes are left out."""
    checked = {(r.op_type, r.domain) for r in TABLE if r.check_shapes is not None}
    if not any((p.op_type, "" if p.domain == "ai.onnx" else p.domain) in checked for p in model.graph.node):
        return {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001  (inference is a help here: a model it cannot read keeps the call-time check)
        inferred = model.graph
    out = {}
    for vi in list(inferred.input) + list(inferred.value_info):
        t = vi.type.tensor_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            out[vi.name] = tuple(int(d.dim_value) for d in t.shape.dim)
    out.update({k: tuple(np.shape(v)) for k, v in initializers.items()})
    return out


def _map_nodes(g, opset: int, problems: list, scope: str = "", domains: dict | None = None,
               shapes: dict | None = None) -> tuple[list[_Node], dict]:
    """A graph's nodes matched to the table (every problem appended to ``problems``) and its
    Constant nodes' values; a control-flow node's subgraphs mapped the same way, their nodes
    named ``node/attribute/subnode`` in messages. ``shapes``: the static shapes of the graph's
    values, for the rows that check shapes at load."""
    nodes: list[_Node] = []
    consts: dict[str, np.ndarray] = {}
    for i, p in enumerate(g.node):
        node_name = scope + (p.name or f"{p.op_type}_{i}")
        attrs = {a.name: _attr_value(a) for a in p.attribute}
        rule = None
        subgraphs = {}
        domain = "" if p.domain == "ai.onnx" else p.domain
        node_opset = (domains or {}).get(domain, 1) if domain else opset

        def refused(reason, tip=""):
            problems.append(node_violation(node_name, p.op_type, node_opset, reason, tip, domain))
        if domain and not rules_for(p.op_type, domain):
            refused(f"is in domain {p.domain!r}",
                    "ai.onnx operators and the com.microsoft and ONNX preview ones docs/onnx.md lists are mapped")
        elif not domain and p.op_type == "Constant":
            value = _constant(p, attrs)
            if value is None:
                refused("has a value attribute that is not mapped")
            else:
                consts[p.output[0]] = value
            continue
        elif domain or p.op_type not in FOLDED:
            rule = find_rule(p.op_type, node_opset, domain)
            if rule is None:
                known = rules_for(p.op_type)
                reason = (f"is mapped for opsets {', '.join(_span(r) for r in known)} only" if known
                          else "has no mapping onto DirectML operators")
                refused(reason, "docs/onnx.md lists the ONNX operators dmljax maps")
            else:
                reason = rule.check(attrs, opset) if rule.check is not None else None
                if reason is None and rule.check_io is not None:
                    reason = rule.check_io(attrs, opset, tuple(p.input), tuple(p.output))
                if reason is None and rule.check_shapes is not None and shapes:
                    reason = rule.check_shapes(attrs, opset, tuple(p.input), tuple(shapes.get(i) for i in p.input))
                if reason:
                    refused(reason)
            if p.op_type in _GRAPH_ATTRS:
                graphs = {a.name: a.g for a in p.attribute if a.type == onnx.AttributeProto.GRAPH}
                for key in _GRAPH_ATTRS[p.op_type]:
                    if key in graphs:
                        subgraphs[key] = _map_subgraph(graphs[key], opset, problems, f"{node_name}/{key}/", domains)
        nodes.append(_Node(node_name, p.op_type, tuple(p.input), tuple(p.output), attrs, rule, p,
                           subgraphs=subgraphs))
    return nodes, consts


def _map_subgraph(g, opset: int, problems: list, scope: str, domains: dict | None = None) -> _Subgraph:
    sub_nodes, consts = _map_nodes(g, opset, problems, scope, domains)
    for t in g.initializer:
        consts[t.name] = numpy_helper.to_array(t)
    return _Subgraph(sub_nodes, consts, tuple(i.name for i in g.input), tuple(o.name for o in g.output))


def _all_nodes(nodes):
    """Nodes and, depth first, their subgraphs' nodes."""
    for n in nodes:
        yield n
        for sg in n.subgraphs.values():
            yield from _all_nodes(sg.nodes)


# ------------------------------------------------------------------------- control flow
def _run_subgraph(sg: _Subgraph, outer: dict, values, opset: int) -> list:
    """A subgraph's outputs for its inputs ``values``; names it does not define are read from
    ``outer``, the enclosing scope (static values stay static, traced ones are closed over)."""
    env = dict(outer)
    env.update(sg.consts)
    env.update(zip(sg.inputs, values))
    for m in sg.nodes:
        _run_node(m, env, opset)
    return [env[o] for o in sg.outputs]


def _control_error(n: _Node, opset: int, reason: str, tip: str = "") -> OnnxImportError:
    return OnnxImportError(n.name, [node_violation(n.name, n.op_type, opset, reason, tip)])


def _runtime(v):
    """A value as the array a traced program holds (64-bit types 32-bit unless JAX's 64-bit mode
    is on)."""
    if v is None:
        return None
    if isinstance(v, (np.ndarray, np.generic)):
        return jnp.asarray(np.asarray(v).astype(_runtime_dtype(np.asarray(v).dtype)))
    return v


def _like(v, ref, n, opset, what):
    """``v`` as an array of ``ref``'s type; its shape must be ``ref``'s (a carried value keeps
    its shape from one iteration to the next)."""
    v = _runtime(v)
    if tuple(jnp.shape(v)) != tuple(jnp.shape(ref)):
        raise _control_error(n, opset, f"{what} has shape {list(jnp.shape(v))} after an iteration and "
                             f"{list(jnp.shape(ref))} before", "JAX's loops carry values of one shape")
    return jnp.asarray(v).astype(jnp.result_type(ref))


def _truth(v) -> bool:
    return bool(np.asarray(v).reshape(-1)[0])


def _run_if(n: _Node, args: list, env: dict, opset: int) -> list:
    cond = args[0]
    then_g, else_g = n.subgraphs["then_branch"], n.subgraphs["else_branch"]
    if _is_static(cond):  # folded: only the branch taken is traced
        return _run_subgraph(then_g if _truth(cond) else else_g, env, [], opset)

    def branch(g, key):
        def run():
            try:
                return tuple(_runtime(v) for v in _run_subgraph(g, env, [], opset))
            except ValidationError as e:
                first = next((v.format().strip().rstrip(".") for v in e.violations), str(e))
                first = f"{e.operator} ({e.enum_name}): {first}"
                raise _control_error(n, opset, f"has a condition known only at run time, and its {key} cannot run on "
                                     f"these inputs: {' '.join(first.split())[:300]}",
                                     "lax.cond traces both branches; give the inputs that decide the condition "
                                     "(a sample rate, a mode) to load as static_inputs, and only the branch taken "
                                     "is traced") from None
        return run
    try:
        return list(lax.cond(jnp.reshape(cond, ()).astype(jnp.bool_), branch(then_g, "then_branch"),
                             branch(else_g, "else_branch")))
    except TypeError as e:
        raise _control_error(n, opset, "has branches whose outputs differ in shape or type: "
                             + " ".join(str(e).split())[:300],
                             "lax.cond needs one shape and type for each output of both branches") from None


class _NotAlwaysTrue(Exception):
    """A Loop body's condition output is a runtime value: the loop is a lax.while_loop."""


def _run_loop(n: _Node, args: list, env: dict, opset: int) -> list:
    body = n.subgraphs["body"]
    args = args + [None] * (2 - len(args))
    trip, cond0, carried = args[0], args[1], [_runtime(v) for v in args[2:]]
    k = len(carried)
    scans = len(body.outputs) - 1 - k
    i_type = _runtime_dtype(np.int64)
    static_trip = trip is not None and _is_static(trip)
    cond_true = cond0 is None or (_is_static(cond0) and _truth(cond0))

    def step(i, cond, vs):
        outs = _run_subgraph(body, env, [i, cond, *vs], opset)
        return outs[0], [_like(v, r, n, opset, f"loop-carried value {body.outputs[1 + j]!r}")
                         for j, (v, r) in enumerate(zip(outs[1:1 + k], vs))], outs[1 + k:]

    if static_trip and cond_true:
        m = int(np.asarray(trip).reshape(-1)[0])
        try:
            def scan_step(vs, i):
                c, vs, ys = step(i, np.asarray(True), vs)
                if not (_is_static(c) and _truth(c)):
                    raise _NotAlwaysTrue
                return vs, tuple(_runtime(y) for y in ys)
            final, ys = lax.scan(scan_step, carried, jnp.arange(m, dtype=i_type))
            return [*final, *ys]
        except _NotAlwaysTrue:
            pass
        except OnnxImportError as e:
            if "depends on the model's runtime values" not in str(e):
                raise
            if m > UNROLL:
                raise _control_error(n, opset, f"has a body that needs a static value computed from its "
                                     f"iteration number, and {m} iterations", f"at most {UNROLL} are unrolled") from None
            return _unroll(step, m, carried, scans)
    if scans:
        raise _control_error(n, opset, "has scan outputs and a condition known only at run time (their length "
                             "would depend on runtime values)", "a static trip count with a condition that stays "
                             "true runs as lax.scan")

    def cond_fn(state):
        i, c, _ = state
        keep = c
        if trip is not None:
            keep = jnp.logical_and(keep, i < jnp.reshape(_runtime(trip), ()).astype(i_type))
        return keep

    def body_fn(state):
        i, c, vs = state
        c2, vs2, _ = step(i, c, vs)
        return i + 1, jnp.reshape(_runtime(c2), ()).astype(jnp.bool_), vs2

    c0 = jnp.asarray(True) if cond0 is None else jnp.reshape(_runtime(cond0), ()).astype(jnp.bool_)
    _, _, final = lax.while_loop(cond_fn, body_fn, (jnp.asarray(0, i_type), c0, carried))
    return list(final)


def _unroll(step, m: int, carried: list, scans: int) -> list:
    """A Loop run iteration by iteration while tracing (the iteration number static)."""
    vs, ys = carried, [[] for _ in range(scans)]
    for i in range(m):
        c, vs, y = step(np.asarray(i, np.int64), np.asarray(True), vs)
        for acc, v in zip(ys, y):
            acc.append(_runtime(v))
        if _is_static(c) and not _truth(c):
            break
        if not _is_static(c):
            raise OnnxImportError("Loop", [Violation("Loop", "", "unrolled, but its condition is a runtime value")])
    return [*vs, *(jnp.stack(acc) for acc in ys)]


def _run_scan(n: _Node, args: list, env: dict, opset: int) -> list:
    body = n.subgraphs["body"]
    m = int(n.attrs["num_scan_inputs"])
    if opset < 9:  # a batch axis first, and sequence_lens
        if args[0] is not None:
            raise _control_error(n, opset, "has sequence_lens (opset 8)", "leave it out: every sequence is whole")
        states, xs = args[1:len(args) - m], args[len(args) - m:]
        dirs = tuple(n.attrs.get("directions", (0,) * m))

        def one(states, xs):
            return tuple(_scan(n, body, env, opset, list(states), list(xs), (0,) * m, dirs,
                               (0,) * (len(body.outputs) - len(states)), (0,) * (len(body.outputs) - len(states))))
        return list(jax.vmap(one)(tuple(_runtime(v) for v in states), tuple(_runtime(v) for v in xs)))
    states, xs = args[:len(args) - m], args[len(args) - m:]
    k = len(body.outputs) - len(states)
    return _scan(n, body, env, opset, states, xs, tuple(n.attrs.get("scan_input_axes", (0,) * m)),
                 tuple(n.attrs.get("scan_input_directions", (0,) * m)),
                 tuple(n.attrs.get("scan_output_axes", (0,) * k)),
                 tuple(n.attrs.get("scan_output_directions", (0,) * k)))


def _scan(n, body, env, opset, states, xs, in_axes, in_dirs, out_axes, out_dirs) -> list:
    states = [_runtime(v) for v in states]
    seq = []
    for x, axis, d in zip(xs, in_axes, in_dirs):
        x = jnp.moveaxis(_runtime(x), int(axis) % jnp.ndim(x), 0)
        seq.append(jnp.flip(x, 0) if d else x)

    def step(vs, slices):
        outs = _run_subgraph(body, env, [*vs, *slices], opset)
        new = [_like(v, r, n, opset, f"state {body.outputs[j]!r}") for j, (v, r) in enumerate(zip(outs, vs))]
        return new, tuple(_runtime(y) for y in outs[len(vs):])
    final, ys = lax.scan(step, states, tuple(seq))
    out = []
    for y, axis, d in zip(ys, out_axes, out_dirs):
        y = jnp.flip(y, 0) if d else y
        out.append(jnp.moveaxis(y, 0, int(axis) % jnp.ndim(y)))
    return [*final, *out]


_CONTROL_RUN = {"If": _run_if, "Loop": _run_loop, "Scan": _run_scan}


def _span(r: Rule) -> str:
    return f"{r.since} to {r.until}" if r.until is not None else f"{r.since} and later"


def _constant(p, attrs: dict):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in attrs:
            v = attrs[key]
            if key == "value":
                return np.asarray(v)
            dtype = np.float32 if "float" in key else np.int64
            return np.asarray(v, dtype)
    return None


def _elem_type(vi) -> np.dtype | None:
    t = vi.type.tensor_type
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type))
    except Exception:  # noqa: BLE001
        return None


def _shape(vi) -> tuple:
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return ()
    return tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim)


def random_inputs(model: OnnxModel, seed: int = 0, dims: dict | None = None) -> list[np.ndarray]:
    """Inputs of the declared shapes and types (symbolic dimensions 1 unless ``dims`` names them)."""
    rng = np.random.default_rng(seed)
    out = []
    for _, dtype, shape in model.inputs:
        shape = tuple(d if isinstance(d, int) else (dims or {}).get(d, 1) for d in shape)
        dtype = np.dtype(np.float32) if dtype is None else dtype
        if np.issubdtype(dtype, np.floating):
            out.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        else:
            out.append(rng.integers(0, 4, shape).astype(dtype))
    return out

