"""Constant per-channel operators after a Conv folded into its weights, as ONNX Runtime folds them.

When ONNX Runtime creates a session, its level-1 rewrite rules (registered for every execution
provider, the CPU and DirectML ones alike: "no filtering on execution provider for L1
optimizations") fold into a Conv the node that reads its output where that node is a
BatchNormalization in inference form, or a Mul or an Add of a constant per-channel tensor: the Conv's
filter and bias are recomputed once and the node is gone (read from its conv_bn_fusion.cc,
conv_mul_fusion.cc, conv_add_fusion.cc and graph_transformer_utils.cc; written here from their rules,
not their code). ``fold`` does the same at load time:

- The Conv (ai.onnx) has one output edge (one input of one node reads it; a subgraph's read counts
  as one), and its output is no graph output. Its filter W, and its bias B where it has one, are
  constants (initializers that no graph input overrides, or Constant nodes), of one floating-point
  type, W of 3 or more dimensions.
- BatchNormalization (opset 7 on): X the Conv's output; scale, B, mean and var constants of W's
  type and one dimension each, of W's output-channel count; no second output (training form). With
  its epsilon (FLOAT32), as ONNX Runtime computes it in the type (each step rounded to it):
  ``std = sqrt(var + epsilon)``, ``alpha = scale / std``, ``W' = W * alpha`` per output channel,
  ``B' = (B - mean) * alpha + bias`` with a Conv bias, else ``B' = bias - mean * alpha``.
- Mul (opset 7 on): the Conv's output times (input 1) a constant of W's type, a scalar or a
  per-channel shape: C x 1 x ... (W's rank less one) or 1 x C x 1 x ... (W's rank).
  ``W' = W * m`` per output channel, ``B' = B * m``.
- Add (opset 7 on): the Conv's output plus (input 1) a constant of W's type and a per-channel
  shape as Mul's (a scalar is not folded). ``B' = B + a``; without a Conv bias, ``a`` becomes it.

A fold leaves the Conv in place of the node, under the node's output name, so a Conv followed by
BatchNormalization, then Mul, then Add folds all three in order. dmljax folds FLOAT32 and FLOAT16
(each FLOAT16 step computed in FLOAT32 and rounded to FLOAT16, as ONNX Runtime's initializer
arithmetic does); FLOAT64 and BFLOAT16 convolutions stay as written. The main graph's nodes are
folded; those inside control-flow subgraphs stay as written, and so does a Conv whose following
node's constant is only computed (ONNX Runtime's constant folding can make one a constant first).

The folded constants equal ONNX Runtime's bit for bit (tests/onnx/test_onnx_folds.py compares them
with the graph ONNX Runtime writes out), so the folded model's outputs are ONNX Runtime's up to the
convolutions' own summation order. They can differ from the graph as written by FLOAT32 (or FLOAT16)
rounding: the product W * alpha and the folded bias are each rounded once before the convolution
sums them, where the graph as written rounds the convolution's result, then the normalization's.
``load(..., fold_conv=False)`` keeps the graph as written."""

from __future__ import annotations

import dataclasses

import numpy as np

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # pragma: no cover  (the `onnx` extra)
    onnx = None

__all__ = ["fold", "Fold", "INTO_CONV"]

INTO_CONV = ("BatchNormalization", "Mul", "Add")
"""The ONNX operators folded into a Conv before them, in the order ONNX Runtime's rules try them."""

_TYPES = (np.dtype(np.float32), np.dtype(np.float16))


@dataclasses.dataclass(frozen=True)
class Fold:
    """One node folded into a Conv: the Conv's name, the folded node's op type and name."""

    conv: str
    op_type: str
    name: str


def _ai_onnx(p) -> bool:
    return p.domain in ("", "ai.onnx")


def _step(dtype, fn, *xs):
    """``fn`` of ``xs`` computed in FLOAT32 and rounded once to ``dtype`` (one of ONNX Runtime's
    initializer operations; for FLOAT32 values that is FLOAT32 arithmetic)."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*(np.asarray(x, np.float32) for x in xs)), np.float32).astype(dtype)


def _per_channel(a: np.ndarray, w: np.ndarray, scalar: bool):
    """``a`` as a vector of W's output channels (a scalar kept as one) where its shape is ONNX
    Runtime's per-channel one (C x 1 x ... of W's rank less one, or 1 x C x 1 x ... of W's rank), else
    None."""
    if a.ndim == 0:
        return a.reshape(()) if scalar else None
    if a.ndim == w.ndim:
        axis = 1
    elif a.ndim == w.ndim - 1:
        axis = 0
    else:
        return None
    if a.shape[axis] != w.shape[0] or any(d != 1 for i, d in enumerate(a.shape) if i != axis):
        return None
    return a.reshape(w.shape[0])


def _channels(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A per-output-channel vector (or scalar) shaped to multiply W."""
    return v.reshape((-1,) + (1,) * (w.ndim - 1)) if v.ndim else v


def _bias_fits(b, w: np.ndarray) -> bool:
    """Whether the Conv's bias (None where it has none) is one the folds rewrite: 1-D, one value an
    output channel, W's type."""
    return b is None or (b.ndim == 1 and b.shape[0] == w.shape[0] and b.dtype == w.dtype)


def _channel_constant(node, w: np.ndarray, const, scalar: bool):
    """A Mul's or Add's input 1 as a per-channel constant of W's type (``_per_channel``), or None."""
    v = const(node.input[1]) if len(node.input) == 2 else None
    if v is None or v.dtype != w.dtype:
        return None
    return _per_channel(v, w, scalar=scalar)


def _fold_bn(node, w, b, const):
    """(W', B') for a BatchNormalization after the Conv, or None where ONNX Runtime leaves it."""
    if len(node.input) < 5 or any(o for o in node.output[1:]):
        return None
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("training_mode", 0):
        return None
    params = [const(x) for x in node.input[1:5]]
    if any(p is None for p in params):
        return None
    scale, bias, mean, var = params
    dt = w.dtype
    if any(p.dtype != dt or p.ndim != 1 or p.shape[0] != w.shape[0] for p in params):
        return None
    if not _bias_fits(b, w):
        return None
    eps = np.float32(attrs.get("epsilon", 1e-5))
    std = _step(dt, np.sqrt, _step(dt, lambda v: v + eps, var))
    alpha = _step(dt, np.divide, scale, std)
    w2 = _step(dt, np.multiply, w, _channels(w, alpha))
    if b is not None:
        b2 = _step(dt, np.add, _step(dt, np.multiply, _step(dt, np.subtract, b, mean), alpha), bias)
    else:
        b2 = _step(dt, np.subtract, bias, _step(dt, np.multiply, mean, alpha))
    return w2, b2


def _fold_mul(node, w, b, const):
    m = _channel_constant(node, w, const, scalar=True)
    if m is None or not _bias_fits(b, w):
        return None
    w2 = _step(w.dtype, np.multiply, w, _channels(w, m))
    b2 = None if b is None else _step(w.dtype, np.multiply, b, m)
    return w2, b2


def _fold_add(node, w, b, const):
    a = _channel_constant(node, w, const, scalar=False)
    if a is None or not _bias_fits(b, w):
        return None
    if b is None:
        return None, a.copy()
    return None, _step(w.dtype, np.add, b, a)


_RULES = {"BatchNormalization": (7, _fold_bn), "Mul": (7, _fold_mul), "Add": (7, _fold_add)}


def fold(nodes, consts: dict, overridable, outputs, sub_reads=frozenset(), opset: int = 13):
    """The main graph's ``nodes`` (NodeProtos, in order) with the nodes that ONNX Runtime folds into a
    Conv before them folded: (the new node list, the new constants by name, the names of constants no
    node reads any more, the Folds). ``consts``: the values known at load (initializers, Constant
    nodes); ``overridable``: the initializers that graph inputs of the same name can replace (not
    constants to ONNX Runtime); ``outputs``: the graph's output names; ``sub_reads``: the values
    that subgraphs read."""
    nodes = list(nodes)
    outputs = set(outputs)
    sub_reads = set(sub_reads)
    if opset < 7 or not any(p.op_type == "Conv" and _ai_onnx(p) for p in nodes):
        return nodes, {}, set(), ()
    values = {k: v for k, v in consts.items() if k not in overridable}
    readers: dict[str, list[int]] = {}
    for i, p in enumerate(nodes):
        for x in p.input:
            if x:
                readers.setdefault(x, []).append(i)

    def const(name):
        return values.get(name) if name else None

    extra: dict = {}
    origin: dict = {}  # a folded value's name -> the Conv input it first replaced
    touched: set = set()
    dropped: set[int] = set()
    folds = []
    for i, p in enumerate(nodes):
        if p.op_type != "Conv" or not _ai_onnx(p) or len(p.output) != 1 or len(p.input) < 2:
            continue
        conv = None
        name = p.name or f"Conv_{i}"
        while True:
            out = (conv or p).output[0]
            ins = list((conv or p).input)
            nxt = readers.get(out, [])
            if len(nxt) != 1 or out in sub_reads or out in outputs or nxt[0] in dropped:
                break
            q = nodes[nxt[0]]
            rule = _RULES.get(q.op_type)
            if rule is None or not _ai_onnx(q) or len(q.output) < 1 or not q.input or q.input[0] != out:
                break
            w = const(ins[1])
            b = None
            if len(ins) > 2:
                b = const(ins[2])
                if b is None:
                    break
            if w is None or w.dtype not in _TYPES or w.ndim <= 2:
                break
            made = rule[1](q, w, b, const)
            if made is None:
                break
            w2, b2 = made  # w2 None: the filter stays
            step = len([f for f in folds if f.conv == name])
            w_name, b_name = f"{name}/W_folded{step}", f"{name}/B_folded{step}"
            if w2 is None:
                w_name = ins[1]
            else:
                extra[w_name] = w2
                values[w_name] = w2
                origin[w_name] = origin.get(ins[1], ins[1])
            new_ins = [ins[0], w_name]
            if b2 is not None:
                extra[b_name] = b2
                values[b_name] = b2
                src = ins[2] if len(ins) > 2 else ins[1]
                origin[b_name] = origin.get(src, src)
                new_ins.append(b_name)
            touched.update(x for x in ins[1:] if x not in new_ins)
            touched.update(x for x in q.input[1:] if x)
            for x in ins[1:]:
                if x not in new_ins:
                    readers[x] = [k for k in readers.get(x, []) if k != i]
            for x in q.input[1:]:
                if x:
                    readers[x] = [k for k in readers.get(x, []) if k != nxt[0]]
            for x in new_ins[1:]:
                if x not in ins:
                    readers.setdefault(x, []).append(i)
            readers.pop(out, None)
            conv = onnx.NodeProto()
            conv.CopyFrom(p)
            del conv.input[:]
            conv.input.extend(new_ins)
            del conv.output[:]
            conv.output.append(q.output[0])
            nodes[i] = conv
            dropped.add(nxt[0])
            folds.append(Fold(name, q.op_type, q.name or f"{q.op_type}_{nxt[0]}"))
    if not folds:
        return nodes, {}, set(), ()
    unread = {k for k in touched if k in consts and not readers.get(k) and k not in outputs and k not in sub_reads}
    extra = {k: v for k, v in extra.items() if readers.get(k)}
    # a folded value whose Conv read a Constant node stays a Constant node (a constant of the program,
    # not a parameter), placed before its Conv
    from_node = {p.output[0] for p in nodes if p.op_type == "Constant" and _ai_onnx(p) and p.output}
    as_node = {k for k, src in origin.items() if k in extra and src in from_node}
    kept = []
    for k, p in enumerate(nodes):
        if k in dropped or (p.op_type == "Constant" and _ai_onnx(p) and p.output[0] in unread):
            continue
        for x in p.input:
            if x in as_node:
                kept.append(helper.make_node("Constant", [], [x], name=x, value=numpy_helper.from_array(extra.pop(x), x)))
        kept.append(p)
    return kept, extra, unread, tuple(folds)
