"""QDQ groups fused into quantized operators, as ONNX Runtime's CPU provider fuses them.

A QDQ model (ONNX Runtime's quantizer in its QDQ format, PyTorch's and TensorFlow's exports) writes
a quantized convolution as DequantizeLinear(x), DequantizeLinear(w), DequantizeLinear(bias) -> Conv
-> QuantizeLinear: read as written, each convolution is a FLOAT32 one of dequantized values. ONNX
Runtime does not run it so: at session creation its QDQ transformer replaces each such group by one
quantized operator, an integer accumulation requantized once. ``fuse`` does the same at load time,
with the rules of ONNX Runtime's selectors for its CPU provider (read from its qdq_selectors.cc and
qdq_selector_action_transformer.cc; written here from their rules, not their code):

- Conv: DequantizeLinear on X and W (and on B, which must then be INT32) -> Conv -> one QuantizeLinear
  -> QLinearConv; X and Y of one type, UINT8 (INT8 activations stay unfused on x86, as ONNX Runtime
  leaves them), W INT8 or UINT8.
- MatMul: both inputs dequantized -> MatMul -> one QuantizeLinear -> QLinearMatMul; types as Conv's.
- Gemm: every input dequantized (C INT32, beta 1) -> Gemm -> one QuantizeLinear or none -> QGemm
  (com.microsoft; without a QuantizeLinear its output stays FLOAT32); an INT8 A needs an INT8 B.
- Add, Mul: both inputs dequantized -> one QuantizeLinear -> QLinearAdd, QLinearMul (com.microsoft),
  the three types equal.
- AveragePool, GlobalAveragePool, LeakyRelu, Sigmoid, Softmax: the input dequantized -> one
  QuantizeLinear of the same type -> their QLinear form (com.microsoft).

Common to all: the target node's every input (counted as ONNX Runtime counts them) comes from a
DequantizeLinear and its one output goes to QuantizeLinear nodes only (exactly one edge) and is no
graph output; 16-bit and 4-bit types stay unfused. A DequantizeLinear read by other nodes too is
shared (ONNX Runtime duplicates it first: EnsureUniqueDQForNodeUnit). A Relu, or a Clip of constant
bounds, between the target and its QuantizeLinear is dropped where the quantization already clips
as it does (a Relu before a zero point at the type's minimum; ONNX Runtime's redundant-clip rule).
A FLOAT32 constant bias of a Conv or Gemm whose X and W are dequantized is first quantized as ONNX
Runtime's bias quantization does it: INT32 round(bias / (x_scale * w_scale)) behind a new
DequantizeLinear. The bias's DequantizeLinear is not read past its INT32 values: ONNX Runtime takes them as
QLinearConv's and QGemm's bias, in units of x_scale * w_scale, whatever its scale says.

dmljax fuses only where the quantized operator can read the group's parameters: scales and zero
points constant (initializers or Constant nodes), per tensor except W's scale per output channel
(Conv: axis 0; MatMul: a 2-D B's last axis; Gemm: B's N axis) and no block_size. A zero point left
out becomes a constant 0 of the value's type. The main graph's groups are fused; those inside
control-flow subgraphs stay as written.

The fused integer result can differ from the unfused FLOAT32 path by a quantization step: the FLOAT32
convolution rounds its sum of products and its bias, and the fused one requantizes the exact
INT32 accumulator once, so where the unfused value lies within a rounding error of a half step the
two round to neighbouring integers (docs/onnx.md, "QDQ models"; the model tests measure it). ``load(..., fuse_qdq=False)`` keeps the graph as written."""

from __future__ import annotations

import dataclasses

import numpy as np

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # pragma: no cover  (the `onnx` extra)
    onnx = None

__all__ = ["fuse", "Fusion", "FUSED"]

MS = "com.microsoft"

FUSED = {"Conv": ("QLinearConv", ""), "MatMul": ("QLinearMatMul", ""), "Gemm": ("QGemm", MS),
         "Add": ("QLinearAdd", MS), "Mul": ("QLinearMul", MS), "AveragePool": ("QLinearAveragePool", MS),
         "GlobalAveragePool": ("QLinearGlobalAveragePool", MS), "LeakyRelu": ("QLinearLeakyRelu", MS),
         "Sigmoid": ("QLinearSigmoid", MS), "Softmax": ("QLinearSoftmax", MS)}
"""The ONNX operators whose QDQ groups are fused, and the quantized operator (and its domain) each becomes."""

_UNARY = ("AveragePool", "GlobalAveragePool", "LeakyRelu", "Sigmoid", "Softmax")
_NARROW = (np.dtype(np.int8), np.dtype(np.uint8))
_RANGE = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255)}


@dataclasses.dataclass(frozen=True)
class Fusion:
    """One fused group: the target node's name and op type, what it became, and the nodes it replaced
    (the DequantizeLinear nodes read, a dropped Relu or Clip, the QuantizeLinear)."""

    name: str
    op_type: str
    fused: str
    replaced: tuple[str, ...]


def _attrs(p) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in p.attribute}


def _q_type(p, consts: dict):
    """A QuantizeLinear's output type: output_dtype, else its zero point's, else UINT8."""
    out = _attrs(p).get("output_dtype", 0)
    if out:
        return np.dtype(helper.tensor_dtype_to_np_dtype(out))
    if len(p.input) > 2 and p.input[2]:
        zp = consts.get(p.input[2])
        return None if zp is None else zp.dtype
    return np.dtype(np.uint8)


class _Graph:
    """The main graph's nodes with who produces and who reads each value."""

    def __init__(self, nodes, consts: dict, input_types: dict, outputs: set, sub_reads: set):
        self.nodes = list(nodes)
        self.consts = consts
        self.outputs = outputs
        self.producer = {o: i for i, p in enumerate(self.nodes) for o in p.output if o}
        self.readers: dict[str, list[int]] = {}
        for i, p in enumerate(self.nodes):
            for x in p.input:
                if x:
                    self.readers.setdefault(x, []).append(i)
        self.sub_reads = sub_reads  # values a control-flow node's subgraph reads (an edge ONNX Runtime counts)
        self.types = dict(input_types)
        self.types.update({k: v.dtype for k, v in consts.items()})
        for p in self.nodes:
            if p.op_type == "QuantizeLinear" and p.domain in ("", "ai.onnx"):
                self.types[p.output[0]] = _q_type(p, consts)

    def edges(self, name: str) -> int:
        return len(self.readers.get(name, ())) + (name in self.sub_reads)

    def made_by(self, name: str, op_type: str):
        i = self.producer.get(name)
        if i is None:
            return None
        p = self.nodes[i]
        return p if p.op_type == op_type and p.domain in ("", "ai.onnx") else None

    def only_reader(self, name: str):
        if self.edges(name) != 1 or name in self.outputs or not self.readers.get(name):
            return None
        return self.nodes[self.readers[name][0]]

    def const(self, name: str):
        return self.consts.get(name) if name else None


def _params(g: _Graph, p, per_axis=None):
    """A DequantizeLinear's or QuantizeLinear's (scale, zero point) as constants, and its axis; None where
    not constant, blocked, or per axis where ``per_axis`` (a function of size and axis) refuses it."""
    scale = g.const(p.input[1])
    zp = g.const(p.input[2]) if len(p.input) > 2 and p.input[2] else None
    if scale is None or scale.dtype != np.float32 or (len(p.input) > 2 and p.input[2] and zp is None):
        return None
    a = _attrs(p)
    if a.get("block_size", 0):
        return None
    axis = int(a.get("axis", 1))
    if scale.size != 1 or (zp is not None and zp.size != 1):
        if per_axis is None or not per_axis(scale.size, axis) or (zp is not None and zp.size != scale.size):
            return None
    return scale, zp, axis


def _redundant_clip(g: _Graph, clip, q) -> bool:
    """Whether QuantizeLinear ``q`` already clips as Relu or Clip ``clip`` does (ONNX Runtime's rule)."""
    scale = g.const(q.input[1])
    if scale is None or scale.ndim != 0:
        return False
    zp = g.const(q.input[2]) if len(q.input) > 2 and q.input[2] else np.zeros((), _q_type(q, g.consts))
    if zp is None or zp.ndim != 0 or zp.dtype not in _RANGE:
        return False
    lo, hi = _RANGE[zp.dtype]
    z = int(zp.reshape(()))
    if clip.op_type == "Relu":
        return z == lo
    a = _attrs(clip)
    bounds = [a.get("min", float(np.finfo(np.float32).min)), a.get("max", float(np.finfo(np.float32).max))]
    for k in (1, 2):
        if len(clip.input) > k and clip.input[k]:
            v = g.const(clip.input[k])
            if v is None:
                return False
            bounds[k - 1] = float(np.asarray(v).reshape(()))
    scale = float(scale)
    q_min = int(np.rint(np.float32(bounds[0]) / np.float32(scale))) + z if np.isfinite(bounds[0] / scale) else -2**31
    q_max = int(np.rint(np.float32(bounds[1]) / np.float32(scale))) + z if np.isfinite(bounds[1] / scale) else 2**31
    return q_min <= lo and q_max >= hi


def _group(g: _Graph, i: int):
    """The QDQ group around node ``i``: (DequantizeLinear per input, dropped clip or None, QuantizeLinear
    or None), or None where ONNX Runtime's common checks refuse it."""
    p = g.nodes[i]
    actual = [x for x in p.input if x]
    dqs = [g.made_by(x, "DequantizeLinear") for x in actual]
    if len(p.output) != 1 or any(d is None for d in dqs):
        return None
    if p.op_type in _UNARY and len(dqs) != 1:
        return None
    out = p.output[0]
    clip = None
    nxt = g.only_reader(out)
    if nxt is not None and nxt.op_type in ("Relu", "Clip") and nxt.domain in ("", "ai.onnx") and len(nxt.output) == 1:
        if g.edges(nxt.output[0]) == 1 and nxt.output[0] not in g.outputs:
            clip = nxt
    last = clip.output[0] if clip is not None else out
    qs = [g.nodes[k] for k in g.readers.get(last, ()) if g.nodes[k].op_type == "QuantizeLinear"
          and g.nodes[k].domain in ("", "ai.onnx")]
    if clip is not None and (len(qs) != 1 or not _redundant_clip(g, clip, qs[0])):
        return None
    if not qs:  # QGemm with a FLOAT32 output: allowed for Gemm alone
        return (dqs, None, None) if p.op_type == "Gemm" and clip is None else None
    if len(qs) != 1 or g.edges(out) != 1 or g.edges(last) != 1 or out in g.outputs:
        return None
    return dqs, clip, qs[0]


def _type_in(g: _Graph, dq):
    return g.types.get(dq.input[0])


def _zero(name: str, dtype, extra: dict) -> str:
    extra[name] = np.zeros((), dtype)
    return name


def _q_inputs(g: _Graph, p, dtype, key: str, extra: dict) -> list[str]:
    """A DequantizeLinear's or QuantizeLinear's (scale, zero point) names, a zero point left out made a
    constant 0 of ``dtype``."""
    zp = p.input[2] if len(p.input) > 2 and p.input[2] else _zero(key, dtype, extra)
    return [p.input[1], zp]


def _match(g: _Graph, i: int, extra: dict):
    """The fused node for node ``i``, or None."""
    p = g.nodes[i]
    if p.domain not in ("", "ai.onnx") or p.op_type not in FUSED:
        return None
    grouped = _group(g, i)
    if grouped is None:
        return None
    dqs, clip, q = grouped
    types = [_type_in(g, d) for d in dqs]
    y_type = None if q is None else g.types.get(q.output[0])
    if any(t is None for t in types) or (q is not None and y_type is None):
        return None
    x_type = types[0]
    if x_type not in _NARROW or (y_type is not None and y_type != x_type):
        return None
    op = p.op_type
    attrs = _attrs(p)
    weight = g.const(dqs[1].input[0]) if len(dqs) > 1 else None
    scalar = lambda d: _params(g, d)  # noqa: E731
    if op in ("Conv", "MatMul"):
        if len(dqs) < 2 or x_type == np.int8 or types[1] not in _NARROW:
            return None
        if op == "Conv" and len(dqs) == 3 and types[2] != np.int32:
            return None
        if op == "MatMul" and len(dqs) != 2:
            return None
        if op == "Conv":
            per = lambda size, axis: (axis == 0 or (weight is not None and axis == -weight.ndim)) and (  # noqa: E731
                weight is None or size == weight.shape[0])
        else:
            per = lambda size, axis: (weight is not None and weight.ndim == 2  # noqa: E731
                                      and axis % 2 == 1 and size == weight.shape[1])
    elif op == "Gemm":
        if types[1] not in _NARROW or (x_type == np.int8 and types[1] != np.int8):
            return None
        if len(dqs) == 3 and (float(attrs.get("beta", 1.0)) != 1.0 or types[2] != np.int32):
            return None
        n_axis = 0 if attrs.get("transB", 0) else 1
        per = lambda size, axis: (weight is not None and weight.ndim == 2  # noqa: E731
                                  and axis % 2 == n_axis and size == weight.shape[n_axis])
    elif op in ("Add", "Mul"):
        if len(dqs) != 2 or types[1] != x_type:
            return None
        per = None
    else:
        per = None
    x_params = scalar(dqs[0])
    w_params = _params(g, dqs[1], per) if len(dqs) > 1 else None
    y_params = None if q is None else scalar(q)
    if x_params is None or (len(dqs) > 1 and w_params is None) or (q is not None and y_params is None):
        return None
    name = p.name or f"{op}_{i}"
    x_in = [dqs[0].input[0], *_q_inputs(g, dqs[0], x_type, f"{name}/x_zero_point", extra)]
    y_in = [] if q is None else _q_inputs(g, q, y_type, f"{name}/y_zero_point", extra)
    new_type, domain = FUSED[op]
    if op in _UNARY:
        inputs = x_in + y_in
        if op == "Softmax":
            attrs["opset"] = g.opset
    else:
        w_in = [dqs[1].input[0], *_q_inputs(g, dqs[1], types[1], f"{name}/w_zero_point", extra)]
        if op == "Gemm":
            inputs = x_in + w_in + [dqs[2].input[0] if len(dqs) == 3 else ""] + y_in
            attrs = {k: v for k, v in attrs.items() if k in ("alpha", "transA", "transB")}
        elif op == "Conv":
            inputs = x_in + w_in + y_in + ([dqs[2].input[0]] if len(dqs) == 3 else [])
        else:
            inputs = x_in + w_in + y_in
    out = q.output[0] if q is not None else p.output[0]
    fused = helper.make_node(new_type, inputs, [out], name=name, domain=domain, **attrs)
    replaced = tuple(d.name for d in dqs) + ((clip.name,) if clip is not None else ()) + ((q.name,) if q else ())
    return fused, (clip, q), Fusion(name, op, new_type, replaced)


def _quantized_biases(nodes, consts: dict, extra: dict) -> list:
    """ONNX Runtime's bias quantization, which runs before the fusion: a Conv's or Gemm's constant
    FLOAT32 bias of one dimension, the node's first two inputs dequantized (the first per tensor, the
    second per tensor or per output channel along Conv's axis 0, Gemm's N axis, no block_size
    attribute), becomes DequantizeLinear(INT32 round(bias / (x_scale * w_scale)), x_scale * w_scale):
    FLOAT32 products and quotients, halves rounded to even. The new constants go to ``extra``."""
    producer = {o: p for p in nodes for o in p.output if o}
    out = []
    for i, p in enumerate(nodes):
        dqs = [producer.get(x) for x in p.input[:2]]
        bias = consts.get(p.input[2]) if len(p.input) > 2 and p.input[2] else None
        if (p.op_type not in ("Conv", "Gemm") or p.domain not in ("", "ai.onnx") or bias is None or bias.ndim != 1
                or bias.dtype != np.float32 or len(dqs) < 2
                or any(d is None or d.op_type != "DequantizeLinear" or d.domain not in ("", "ai.onnx") for d in dqs)):
            out.append(p)
            continue
        xs, ws = consts.get(dqs[0].input[1]), consts.get(dqs[1].input[1])
        a = _attrs(dqs[1])
        if p.op_type == "Gemm":
            want_axis = 0 if _attrs(p).get("transB", 0) else 1
        else:
            want_axis = 0
        per_tensor = ws is not None and ws.size == 1 and ws.ndim <= 1
        if (xs is None or ws is None or xs.size != 1 or xs.ndim > 1 or xs.dtype != np.float32 or ws.dtype != np.float32
                or (not per_tensor and (ws.ndim != 1 or ws.size != bias.size or "block_size" in a
                                        or int(a.get("axis", 1)) != want_axis))):
            out.append(p)
            continue
        name = p.name or f"{p.op_type}_{i}"
        scale = np.asarray(xs.reshape(()) * (ws.reshape(()) if per_tensor else ws), np.float32)
        with np.errstate(all="ignore"):
            q = np.round(bias / scale).astype(np.int32)
        extra[f"{name}/bias_int32"] = q
        extra[f"{name}/bias_scale"] = scale
        dq = helper.make_node("DequantizeLinear", [f"{name}/bias_int32", f"{name}/bias_scale"], [f"{name}/bias"],
                              name=f"{name}/bias_dq", **({} if per_tensor else {"axis": 0}))
        out.append(dq)
        fixed = onnx.NodeProto()
        fixed.CopyFrom(p)
        fixed.input[2] = f"{name}/bias"
        out.append(fixed)
    return out


def fuse(nodes, consts: dict, input_types: dict, outputs, sub_reads=frozenset(), opset: int = 13):
    """The main graph's ``nodes`` (NodeProtos, in order) with its QDQ groups fused: (the new node list,
    the constants it adds (zero points left out), the Fusions). ``consts``: the values known at load
    (initializers, Constant nodes); ``input_types``: the graph inputs' element types; ``outputs``: the
    graph's output names; ``sub_reads``: the values that subgraphs read."""
    extra: dict = {}
    nodes = _quantized_biases(list(nodes), consts, extra)
    consts = {**consts, **extra}
    g = _Graph(nodes, consts, input_types, set(outputs), set(sub_reads))
    g.opset = opset
    replace: dict[int, object] = {}
    drop: set[int] = set()
    fusions = []
    for i in range(len(g.nodes)):
        if i in drop:
            continue
        m = _match(g, i, extra)
        if m is None:
            continue
        fused, (clip, q), info = m
        replace[i] = fused
        for n in (clip, q):
            if n is not None:
                drop.add(g.producer[n.output[0]])
        fusions.append(info)
    if not fusions and not extra:
        return list(nodes), {}, ()
    kept = [replace.get(i, p) for i, p in enumerate(g.nodes) if i not in drop]
    # DequantizeLinear nodes that nothing reads any more
    while True:
        read = {x for p in kept for x in p.input if x} | set(outputs) | set(sub_reads)
        dead = [p for p in kept if p.op_type == "DequantizeLinear" and p.domain in ("", "ai.onnx")
                and p.output[0] not in read]
        if not dead:
            break
        kept = [p for p in kept if not any(p is d for d in dead)]
    return kept, extra, tuple(fusions)


def const_values(g, initializers: dict) -> dict:
    """The graph's initializers and Constant nodes' values (ai.onnx Constant with a tensor ``value``)."""
    out = dict(initializers)
    for p in g.node:
        if p.op_type == "Constant" and p.domain in ("", "ai.onnx"):
            for a in p.attribute:
                if a.name == "value":
                    out[p.output[0]] = numpy_helper.to_array(a.t)
    return out
