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

from dmljax._src.errors import ValidationError, Violation, cap
from dmljax._src.onnx.errors import OnnxImportError, file_error, node_violation
from dmljax._src.onnx.table import FOLDED, Call, Rule, find_rule, rules_for

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
    ``model(*inputs)`` is ``apply(model.params, *inputs)``. ``inputs`` and ``outputs`` name the
    graph's inputs (with their element type and shape, symbolic dimensions as strings) and
    outputs; ``nodes`` says what each node becomes."""

    def __init__(self, proto, name: str, opset: int, nodes: list[_Node], params: dict, consts: dict,
                 inputs: list, outputs: list[str]):
        self.proto = proto
        self.name = name
        self.opset = opset
        self._nodes = nodes
        self.params = params
        self._consts = consts
        self.inputs = inputs
        self.outputs = outputs
        self.apply = jax.jit(self._apply)

    @property
    def nodes(self) -> tuple[NodeInfo, ...]:
        return tuple(NodeInfo(n.name, n.op_type, self.opset, () if n.rule is None else n.rule.dml,
                              inputs=n.inputs, outputs=n.outputs) for n in self._nodes)

    def __call__(self, *inputs):
        return self.apply(self.params, *inputs)

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
        if len(inputs) != len(self.inputs):
            raise TypeError(f"{self.name} takes {len(self.inputs)} inputs ({', '.join(i[0] for i in self.inputs)}); "
                            f"{len(inputs)} given")
        env: dict[str, Any] = dict(self._consts)
        env.update(params)
        env.update({spec[0]: jnp.asarray(x) for spec, x in zip(self.inputs, inputs)})
        for n in self._nodes:
            _run_node(n, env, self.opset)
        return tuple(_to_array(env[o]) for o in self.outputs)


def _to_array(v):
    return jnp.asarray(v) if isinstance(v, (np.ndarray, np.generic)) else v


def _is_static(v) -> bool:
    return v is None or isinstance(v, (np.ndarray, np.generic))


def _run_node(n: _Node, env: dict, opset: int) -> None:
    args = [env[i] if i else None for i in n.inputs]
    if n.op_type == "Shape":
        shape = np.asarray(np.shape(args[0]), np.int64)
        start, end = n.attrs.get("start", 0), n.attrs.get("end")
        env[n.outputs[0]] = shape[slice(start, end)]
        return
    if n.op_type == "Size":
        env[n.outputs[0]] = np.asarray(int(np.prod(np.shape(args[0]), dtype=np.int64)), np.int64)
        return
    if all(_is_static(a) for a in args) and n.op_type != "Dropout":  # folded while tracing
        outs = _fold(n, args, opset)
    else:
        for i in (n.rule.static if n.rule else ()):
            if i < len(args) and not _is_static(args[i]):
                raise OnnxImportError(n.name, [node_violation(n.name, n.op_type, opset,
                                                              f"input {i} ({n.inputs[i]!r}) depends on the model's runtime values",
                                                              "DirectML takes it as an attribute: it must be static")])
        try:
            outs = n.rule.lower(Call(n.op_type, opset, args, n.attrs, sum(1 for o in n.outputs if o)))
        except ValidationError as e:
            e.add_note(f"while lowering ONNX node {n.name!r} ({n.op_type}, ai.onnx opset {opset})")
            raise
    for name, v in zip(n.outputs, outs):
        if name:
            env[name] = v


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


def _static_names(nodes: list[_Node], opset: int, produced_by: dict) -> set[str]:
    """The values that must be known without running the model: the static inputs of every node
    and, backwards, what they are computed from (a Shape or Size node needs only a shape)."""
    need: set[str] = set()
    stack = []
    for n in nodes:
        for i in (n.rule.static if n.rule else ()):
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


def load(source, *, name: str | None = None, static_inputs: dict | None = None) -> OnnxModel:
    """Import an ONNX model (a path, the file's bytes, or an ``onnx.ModelProto``; external data
    is read from beside the file).

    ``static_inputs`` fixes graph inputs to values at load time (name -> array): they leave the
    model's inputs and are folded like initializers, which is how a graph input that DirectML
    takes as an attribute (a Reshape's shape, a ReduceSum's axes) can be given.

    Raises:
        OnnxImportError: the file is not a readable ONNX model, its ai.onnx opset is outside
            MIN_OPSET to max_opset(), or nodes cannot be mapped (all of them listed: node,
            operator, opset, reason).
    """
    _need_onnx()
    where = name or (repr(Path(os.fspath(source)).name) if isinstance(source, (str, os.PathLike)) else "<model>")
    model = _read(source, where)
    g = model.graph
    opset = _default_opset(model)
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
    problems: list[Violation] = []
    nodes: list[_Node] = []
    consts: dict[str, np.ndarray] = {}
    produced_by: dict[str, _Node] = {}
    for i, p in enumerate(g.node):
        node_name = p.name or f"{p.op_type}_{i}"
        attrs = {a.name: _attr_value(a) for a in p.attribute}
        rule = None
        if p.domain not in ("", "ai.onnx"):
            problems.append(node_violation(node_name, p.op_type, opset, f"is in domain {p.domain!r}",
                                           "only ai.onnx operators are mapped"))
        elif p.op_type == "Constant":
            value = _constant(p, attrs)
            if value is None:
                problems.append(node_violation(node_name, p.op_type, opset, "has a value attribute that is not mapped"))
            else:
                consts[p.output[0]] = value
            continue
        elif p.op_type not in FOLDED:
            rule = find_rule(p.op_type, opset)
            if rule is None:
                known = rules_for(p.op_type)
                reason = (f"is mapped for opsets {', '.join(_span(r) for r in known)} only" if known
                          else "has no mapping onto DirectML operators")
                problems.append(node_violation(node_name, p.op_type, opset, reason,
                                               "docs/onnx.md lists the ONNX operators dmljax maps"))
            elif rule.check is not None:
                reason = rule.check(attrs, opset)
                if reason:
                    problems.append(node_violation(node_name, p.op_type, opset, reason))
        n = _Node(node_name, p.op_type, tuple(p.input), tuple(p.output), attrs, rule, p)
        nodes.append(n)
        for o in p.output:
            produced_by[o] = n
    graph_inputs = [i for i in g.input if i.name not in initializers]
    static = _static_names(nodes, opset, produced_by)
    for s in sorted(static):
        if s in {i.name for i in graph_inputs}:
            users = [n for n in nodes if s in n.inputs and n.rule and any(
                n.inputs[k] == s for k in n.rule.static if k < len(n.inputs))]
            who = users[0] if users else nodes[0]
            problems.append(node_violation(who.name, who.op_type, opset,
                                           f"needs graph input {s!r} as a static value",
                                           "DirectML takes it as an attribute: make it an initializer or a constant"))
    if problems:
        raise OnnxImportError(where, problems)
    params, consts_all = {}, dict(consts)
    for k, v in initializers.items():
        if k in static or k in (static_inputs or {}) or not np.issubdtype(v.dtype, np.floating):
            consts_all[k] = v
        else:
            params[k] = jnp.asarray(v)
    inputs = [(i.name, _elem_type(i), _shape(i)) for i in graph_inputs]
    return OnnxModel(model, g.name or where, opset, nodes, params, consts_all, inputs, [o.name for o in g.output])


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

