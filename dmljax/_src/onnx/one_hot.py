"""A product of one-hot rows read as a gather of the products' rows, bit for bit.

Exporters write an embedding lookup as one-hot rows times a weight matrix: an integer tensor X
whose last dimension is 1, broadcast by Expand along that dimension, compared by Equal with the
constant K values V = v0, v0 + 1, ..., v0 + K - 1 (of shape 1 x ... x 1 x K), the booleans Cast to
the weights' type and multiplied by MatMul with the constant or parameter weights W {K, N} (Magika
reads its 2,048 bytes so: K = 257). GEMM then computes N sums of K products for every row, though
each row holds a single 1 (or none, for a value of X outside V). ``rewrite`` replaces the product
with what it computes:

    table = MatMul(R, W)                      R {K + 1, K}: the K one-hot rows and a row of zeros
    index = Where(X < v0 or X >= v0 + K, K, X - v0)
    Y     = Expand(Gather(table, Squeeze(index, -1)), Shape(Equal's input)[:-1] ++ [N])

``table`` is the same GEMM (DirectML's, as the MatMul maps) of the K + 1 rows that one-hot rows
can be, so each output row is the GEMM's row for that input, bit for bit for any weights:
infinities and NaNs (0 x inf), zeros' signs, and FLOAT32 denormals come out as the product's
would, since a row's sums read that row alone. On the CPU, ``model(*inputs)`` computes the
table once, from the parameters (onnx/prepare.py); ``apply`` and its gradients compute it on
every call (K + 1 rows, not one per position), so a weight replaced or differentiated is read
through the table as through the product.

A match: MatMul (ai.onnx, opset 11 on: Squeeze with negative axes) of a Cast of an Equal, with
weights W a constant or an initializer of two dimensions; the Cast to W's floating-point type;
one Equal operand a constant (not overridable by a graph input) of an integer type, shape
1 x ... x 1 x K, holding v0 to v0 + K - 1 in order, of at most as many dimensions as the other;
the other operand Expand's output, of two or more dimensions, whose input X has last dimension 1
(ONNX's shape inference) and V's type. Nodes of the main graph only; the Equal and Cast stay
where another node (or a subgraph, or the graph's outputs) reads them. ``load(...,
gather_one_hot=False)`` keeps the graph as written.

Measured on the 2-core CPU (Magika: the product of 2,048 one-hot rows of 257 by {257, 64}): 1.86 ms
as written against 0.26 ms for the gather of a computed table."""

from __future__ import annotations

import dataclasses

import numpy as np

from dmljax._src.onnx.folds import _ai_onnx
from dmljax._src.onnx.qdq import _attrs

try:
    import onnx
    from onnx import helper, numpy_helper
except ImportError:  # pragma: no cover  (the `onnx` extra)
    onnx = None

__all__ = ["rewrite", "OneHotProduct", "MIN_OPSET"]

MIN_OPSET = 11
"""Squeeze takes a negative axis from opset 11 on (and Where, Not, Or, Slice's inputs from 9 or 10)."""

_FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_ONNX_TYPE = {np.dtype(np.float16): 10, np.dtype(np.float32): 1, np.dtype(np.float64): 11}


@dataclasses.dataclass(frozen=True)
class OneHotProduct:
    """One MatMul of one-hot rows read as a gather: its name, the one-hot length K, the weights' name."""

    matmul: str
    k: int
    weights: str


def _last_dims(model) -> dict[str, tuple[int, int | None]]:
    """Value name -> (rank, last dimension or None) from ONNX's shape inference, where the rank is known."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001  (inference is a help: a model it cannot read keeps its products)
        inferred = model.graph
    out = {}
    for vi in list(inferred.input) + list(inferred.value_info) + list(inferred.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            dims = t.shape.dim
            last = int(dims[-1].dim_value) if dims and dims[-1].HasField("dim_value") else None
            out[vi.name] = (len(dims), last)
    return out


def _values(v: np.ndarray) -> tuple[int, int] | None:
    """(v0, K) where ``v`` is an integer constant 1 x ... x 1 x K holding v0, v0 + 1, ... in order."""
    if v.ndim < 1 or not np.issubdtype(v.dtype, np.integer) or any(d != 1 for d in v.shape[:-1]) or v.shape[-1] < 1:
        return None
    flat = v.reshape(-1).astype(np.int64)
    v0 = int(flat[0])
    if not np.array_equal(flat, np.arange(v0, v0 + flat.size, dtype=np.int64)):
        return None
    if v0 + flat.size > np.iinfo(v.dtype).max:  # v0 + K must be a value of the type
        return None
    return v0, int(flat.size)


def rewrite(model, nodes, consts: dict, overridable, outputs, sub_reads=frozenset(), opset: int = 13):
    """The main graph's ``nodes`` with each product of one-hot rows (the module's match) read as a
    gather: (the new node list, the OneHotProducts). ``consts``: the values known at load
    (initializers and Constant nodes); ``overridable``: the initializers graph inputs can replace;
    ``model``: for ONNX's shape inference of X's last dimension."""
    nodes = list(nodes)
    if opset < MIN_OPSET or not any(p.op_type == "MatMul" and _ai_onnx(p) for p in nodes):
        return nodes, ()
    made_by = {o: i for i, p in enumerate(nodes) for o in p.output if o}
    readers: dict[str, int] = {}
    for p in nodes:
        for x in p.input:
            if x:
                readers[x] = readers.get(x, 0) + 1
    keep = set(outputs) | set(sub_reads)

    def producer(name, op_type):
        i = made_by.get(name)
        if i is None or nodes[i].op_type != op_type or not _ai_onnx(nodes[i]):
            return None
        return nodes[i]

    candidates = []
    for i, m in enumerate(nodes):
        if m.op_type != "MatMul" or not _ai_onnx(m) or len(m.input) != 2 or len(m.output) != 1:
            continue
        cast = producer(m.input[0], "Cast")
        equal = producer(cast.input[0], "Equal") if cast is not None else None
        if equal is None or len(equal.input) != 2:
            continue
        w = consts.get(m.input[1])
        if w is None or w.ndim != 2 or w.dtype not in _FLOATS or _attrs(cast).get("to") != _ONNX_TYPE[w.dtype]:
            continue
        for v_name, e_name in ((equal.input[1], equal.input[0]), (equal.input[0], equal.input[1])):
            v = consts.get(v_name) if v_name not in overridable else None
            expand = producer(e_name, "Expand")
            found = _values(np.asarray(v)) if v is not None else None
            if found is not None and expand is not None and found[1] == w.shape[0]:
                candidates.append((i, m, cast, equal, expand, v_name, np.asarray(v), found))
                break
    if not candidates:
        return nodes, ()
    ranks = _last_dims(model)
    rewritten: dict[int, list] = {}
    dropped: set[int] = set()
    done = []
    for i, m, cast, equal, expand, v_name, v, (v0, k) in candidates:
        x_name, e_name = expand.input[0], expand.output[0]
        x_rank, x_last = ranks.get(x_name, (None, None))
        e_rank, _ = ranks.get(e_name, (None, None))
        if x_last != 1 or e_rank is None or e_rank < max(2, v.ndim):  # (Equal gives X V's type)
            continue
        n_out = int(consts[m.input[1]].shape[1])
        base = f"{m.name or 'MatMul'}/one_hot_{i}"  # the node's index: unique where names repeat
        dtype = consts[m.input[1]].dtype
        rows = np.concatenate([np.eye(k, dtype=dtype), np.zeros((1, k), dtype)])

        def const(name, value):
            return helper.make_node("Constant", [], [f"{base}/{name}"], name=f"{base}/{name}",
                                    value=numpy_helper.from_array(np.asarray(value), f"{base}/{name}"))
        it = v.dtype
        made = [
            const("rows", rows),
            helper.make_node("MatMul", [f"{base}/rows", m.input[1]], [f"{base}/table"], name=f"{base}/table"),
            const("low", np.array(v0, it)), const("high", np.array(v0 + k, it)), const("k", np.array(k, it)),
            helper.make_node("Less", [x_name, f"{base}/low"], [f"{base}/below"], name=f"{base}/below"),
            helper.make_node("Less", [x_name, f"{base}/high"], [f"{base}/under_high"], name=f"{base}/under_high"),
            helper.make_node("Not", [f"{base}/under_high"], [f"{base}/above"], name=f"{base}/above"),
            helper.make_node("Or", [f"{base}/below", f"{base}/above"], [f"{base}/outside"], name=f"{base}/outside"),
            helper.make_node("Sub", [x_name, f"{base}/low"], [f"{base}/shifted"], name=f"{base}/shifted"),
            helper.make_node("Where", [f"{base}/outside", f"{base}/k", f"{base}/shifted"], [f"{base}/index"],
                             name=f"{base}/index"),
        ]
        if opset >= 13:
            made += [const("last_axis", np.array([-1], np.int64)),
                     helper.make_node("Squeeze", [f"{base}/index", f"{base}/last_axis"], [f"{base}/rows_index"],
                                      name=f"{base}/rows_index")]
        else:
            made.append(helper.make_node("Squeeze", [f"{base}/index"], [f"{base}/rows_index"], axes=[-1],
                                         name=f"{base}/rows_index"))
        made += [
            helper.make_node("Gather", [f"{base}/table", f"{base}/rows_index"], [f"{base}/gathered"], axis=0,
                             name=f"{base}/gathered"),
            helper.make_node("Shape", [e_name], [f"{base}/shape"], name=f"{base}/shape"),
            const("start", np.array([0], np.int64)), const("end", np.array([-1], np.int64)),
            helper.make_node("Slice", [f"{base}/shape", f"{base}/start", f"{base}/end"], [f"{base}/lead"],
                             name=f"{base}/lead"),
            const("columns", np.array([n_out], np.int64)),
            helper.make_node("Concat", [f"{base}/lead", f"{base}/columns"], [f"{base}/target"], axis=0,
                             name=f"{base}/target"),
            helper.make_node("Expand", [f"{base}/gathered", f"{base}/target"], [m.output[0]], name=m.name or base),
        ]
        rewritten[i] = made
        readers[m.input[0]] -= 1
        if readers[m.input[0]] == 0 and cast.output[0] not in keep:
            dropped.add(made_by[cast.output[0]])
            readers[cast.input[0]] -= 1
            if readers[cast.input[0]] == 0 and equal.output[0] not in keep:
                dropped.add(made_by[equal.output[0]])
        done.append(OneHotProduct(m.name or f"MatMul_{i}", k, m.input[1]))
    if not done:
        return nodes, ()
    out = []
    for i, p in enumerate(nodes):
        if i in dropped:
            continue
        out.extend(rewritten.get(i, [p]))
    return out, tuple(done)
