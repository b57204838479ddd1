"""The small imported models against the same models written by hand in jax.numpy: what XLA's CPU
runtime itself costs them, beside ONNX Runtime.

    python3 benchmarks/onnx/jax_floor.py [--out DIR] [--repeats N]

Two of tests/onnx/zoo.py's exports take a tenth of a millisecond or less in ONNX Runtime, so that
the runtime around the kernels, not the kernels, sets their time: the LSTM tagger (two LSTM layers,
32 -> 48 -> 48, 24 steps of 2 sequences, a linear head of 5 classes) and the two-layer BERT encoder
(16 tokens, width 64, 4 heads), the encoder also in ONNX Runtime's dynamic quantization. Each is
written here in jax.numpy from the export's own weights (the ONNX initializers, through the graph's
Identity nodes), as a JAX user would write it, with none of DirectML's rules (no denormal flushes,
any fusion XLA likes): the LSTM as ``lax.scan`` over the steps with the input's projection taken
for all steps at once, the encoder as its formulas, its quantized dense layers as ONNX's
DynamicQuantizeLinear and MatMulInteger of their input (``_dense``).
Its outputs are checked against ONNX Runtime's (the largest absolute difference, asserted within
``TOLERANCE``), so that both programs compute the same model. Three sides are then timed in one
process, as ``models.py`` times a model (``BLOCK`` calls a side after one not counted, the order
alternating, ``--repeats`` rounds; medians): dmljax's import (``model(*inputs)``), the hand-written
program (jitted, its weights on the device) and ONNX Runtime's CPU provider.

A third part times one loop of XLA's own at two sizes (the median of ``SPLIT_CALLS`` calls): a
FLOAT32 GELU chain as the encoder's imported operators write it (each operator's output flushed of
denormals: a select of four operations an element), jitted, on 16 x 128 and on 8 x 128 elements,
beside jax.numpy's GELU on 16 x 128. XLA's CPU compiler splits a loop whose cost model says it is large (``flops + 2 x
transcendentals + 10 x bytes`` over 100,000 cycles a thread, parallel_task_assignment.cc) over the
machine's threads; the compiled program's ``outer_dimension_partitions`` say which it split.

Writes ``jax_floor.md`` and ``jax_floor.json`` to ``--out`` or ``benchmarks/results/cpu/onnx/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402
import models as model_table  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from tests.onnx import zoo  # noqa: E402

TOLERANCE = 1e-5
"""The largest absolute difference allowed between a hand-written model's outputs and ONNX
Runtime's (the models' outputs are of order 1; their sums run in other orders)."""


def _values(proto) -> dict:
    """The graph's constant values by name: initializers, Constant nodes and Identity nodes of
    either (the exporter shares equal initializers through Identity nodes)."""
    import onnx  # noqa: PLC0415
    from onnx import numpy_helper  # noqa: PLC0415

    values = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    for n in proto.graph.node:
        if n.op_type == "Constant":
            values[n.output[0]] = onnx.helper.get_attribute_value(n.attribute[0])
            if isinstance(values[n.output[0]], onnx.TensorProto):
                values[n.output[0]] = numpy_helper.to_array(values[n.output[0]])
        elif n.op_type == "Identity" and n.input[0] in values:
            values[n.output[0]] = values[n.input[0]]
    return values


def _constant_input(node, values):
    """The input of ``node`` that is a constant of the graph (a bias beside a product)."""
    return jnp.asarray(values[next(i for i in node.input if i in values)])


def lstm_tagger(proto):
    """The tagger as ``lax.scan``s: (jitted function, its weights)."""
    values = _values(proto)
    layers = []
    for n in proto.graph.node:
        if n.op_type == "LSTM":
            w, r, b = (values[n.input[k]][0] for k in (1, 2, 3))  # one direction; gates i, o, f, c
            layers.append((jnp.asarray(w.T), jnp.asarray(r.T), jnp.asarray(b[: b.size // 2] + b[b.size // 2:])))
    matmul = next(n for n in proto.graph.node if n.op_type == "MatMul")
    add = next(n for n in proto.graph.node if n.op_type == "Add" and matmul.output[0] in n.input)
    head = (jnp.asarray(values[matmul.input[1]]), _constant_input(add, values))

    def tagger(params, x):
        layers, (hw, hb) = params
        for w, r, b in layers:
            hidden = r.shape[0]
            projected = jnp.einsum("tbi,ig->tbg", x, w) + b

            def step(carry, g):
                h, c = carry
                i, o, f, cc = jnp.split(g + h @ r, 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(cc)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), h
            zero = jnp.zeros((x.shape[1], hidden), x.dtype)
            _, x = lax.scan(step, (zero, zero), projected)
        return (x @ hw + hb,)
    return jax.jit(tagger), (layers, head)


def _dynamic_quantized(x):
    """ONNX's DynamicQuantizeLinear: UINT8 values, scale and zero point from x's range (with 0)."""
    low, high = jnp.minimum(jnp.min(x), 0.0), jnp.maximum(jnp.max(x), 0.0)
    scale = (high - low) / np.float32(255)
    zero = jnp.clip(jnp.round(-low / scale), 0, 255)
    return jnp.clip(jnp.round(x / scale) + zero, 0, 255).astype(np.int32), scale, zero.astype(np.int32)


def _dense(x, layer):
    """x times a dense layer's weight plus its bias: a FLOAT32 product, or (an export's dynamic
    quantization: INT8 weight, its scale and zero point) MatMulInteger of x quantized as it comes."""
    if len(layer) == 2:
        return x @ layer[0] + layer[1]
    w8, w_scale, w_zero, bias = layer
    q, scale, zero = _dynamic_quantized(x)
    sums = lax.dot_general(q - zero, w8.astype(np.int32) - w_zero, (((x.ndim - 1,), (0,)), ((), ())),
                           preferred_element_type=np.int32)
    return sums.astype(np.float32) * (scale * w_scale) + bias


def _embedding(values, name):
    """An embedding table, dequantized where the export quantized it (the same values a gather of
    its rows dequantizes)."""
    if name in values:
        return jnp.asarray(values[name])
    scale, zero = values[name + "_scale"], values[name + "_zero_point"]
    return jnp.asarray((values[name + "_quantized"].astype(np.float32) - zero.astype(np.float32)) * scale)


def bert_encoder(proto):
    """The encoder as its formulas: (jitted function, its weights). A dynamically quantized export's
    dense layers are MatMulInteger of their input quantized as it comes (``_dense``)."""
    values = _values(proto)
    nodes = list(proto.graph.node)
    consumer = {i: n for n in nodes for i in n.input}
    roles = {"q": "attention/self/query", "k": "attention/self/key", "v": "attention/self/value",
             "o": "attention/output/dense", "up": "intermediate/dense", "down": "output/dense"}
    named = re.compile(r"layer\.(\d+)/(" + "|".join(map(re.escape, roles.values())) + ")/")
    dense = {}  # (layer, role) -> (weight, bias) or (INT8 weight, scale, zero point, bias)
    for n in nodes:
        if n.op_type == "MatMul" and n.input[1] in values:
            add = consumer[n.output[0]]
            layer = (jnp.asarray(values[n.input[1]]), _constant_input(add, values))
        elif n.op_type == "MatMulInteger":
            weight = n.input[1].removesuffix("_quantized")
            add = consumer[consumer[consumer[n.output[0]].output[0]].output[0]]  # Cast, Mul by the scales, Add
            layer = (jnp.asarray(values[n.input[1]]), jnp.asarray(values[weight + "_scale"]),
                     jnp.asarray(values[n.input[3]].astype(np.int32)), _constant_input(add, values))
        else:
            continue
        where = named.search(n.output[0])
        dense[int(where.group(1)), where.group(2)] = layer
    norms = [(jnp.asarray(values[n.input[1]]), jnp.asarray(values[n.input[2]])) for n in nodes
             if n.op_type == "LayerNormalization"]
    epsilon = float(next(a.f for n in nodes if n.op_type == "LayerNormalization" for a in n.attribute
                         if a.name == "epsilon"))
    embeddings = tuple(_embedding(values, f"bert.embeddings.{k}_embeddings.weight")
                       for k in ("word", "position", "token_type"))
    heads = 4
    layers = [dict({r: dense[i, name] for r, name in roles.items()}, norm1=norms[1 + 2 * i], norm2=norms[2 + 2 * i])
              for i in range(len(dense) // len(roles))]

    def layer_norm(x, g, b):
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(variance + epsilon) * g + b

    def encoder(params, ids, mask, token_types):
        (word, position, token_type), first_norm, layers = params
        s = ids.shape[1]
        x = layer_norm(word[ids] + token_type[token_types] + position[:s][None], *first_norm)
        bias = jnp.where(mask[:, None, None, :] == 0, jnp.finfo(jnp.float32).min, 0.0)
        for p in layers:
            width = x.shape[-1]

            def split(y):
                return y.reshape(y.shape[0], s, heads, width // heads).transpose(0, 2, 1, 3)
            scale = (width // heads) ** -0.25
            q, k, v = (split(_dense(x, p[n])) for n in ("q", "k", "v"))
            a = jax.nn.softmax((q * scale) @ (k * scale).transpose(0, 1, 3, 2) + bias, axis=-1)
            context = (a @ v).transpose(0, 2, 1, 3).reshape(x.shape)
            x = layer_norm(_dense(context, p["o"]) + x, *p["norm1"])
            h = _dense(x, p["up"])
            h = h * (lax.erf(h / np.float32(1.4142135)) + 1) * 0.5
            x = layer_norm(_dense(h, p["down"]) + x, *p["norm2"])
        return (x,)
    return jax.jit(encoder), (embeddings, norms[0], layers)


MODELS = {"lstm.plain": lstm_tagger, "bert_tiny.plain": bert_encoder, "bert_tiny.dynamic": bert_encoder}


def model_rows(repeats: int) -> list:
    import onnx  # noqa: PLC0415

    rows = []
    for name, build in MODELS.items():
        base, form = name.split(".")
        path = zoo.exported(base, form)
        inputs = zoo.exported_inputs(base)
        model, rest = zoo.load_and_run(path, inputs)
        device_inputs = [jax.device_put(x) for x in rest]
        hand, weights = build(onnx.load(path))
        session = zoo.ort_session(path)
        want = zoo.ort_run(session, inputs)
        got = [np.asarray(o) for o in model_table._block(hand(weights, *device_inputs))]
        ours = [np.asarray(o) for o in model_table._block(model(*device_inputs))]
        difference = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
        if not difference <= TOLERANCE:
            raise AssertionError(f"{name}: the hand-written model is {difference:.3g} from ONNX Runtime's outputs")
        per_round = model_table.rounds({"dmljax": lambda: model_table._block(model(*device_inputs)),
                                        "jax": lambda: model_table._block(hand(weights, *device_inputs)),
                                        "ort": lambda: zoo.ort_run(session, inputs)}, repeats)
        ms = {side: 1e3 * statistics.median(seconds) for side, seconds in per_round.items()}
        rows.append({"model": name, "ms": ms, "jax_vs_ort_max_abs": difference,
                     "dmljax_vs_ort_max_abs": max(float(np.max(np.abs(g - w))) for g, w in zip(ours, want))})
        print(name, {k: round(v, 4) for k, v in ms.items()}, flush=True)
    return rows


def _flushed(x):
    return jnp.where(jnp.abs(x) < np.float32(np.finfo(np.float32).tiny), x * np.float32(0), x)


def gelu_chain(x, b):
    """The encoder's GELU as its imported operators compute it: each output flushed."""
    y = _flushed(_flushed(x) + b)
    e = _flushed(lax.erf(_flushed(y / np.float32(1.4142135))) + 1)
    return _flushed(_flushed(y * e) * np.float32(0.5))


SPLIT_CALLS = 2000
"""Calls timed of each loop (the median is reported)."""


def split_rows() -> list:
    rng = np.random.default_rng(0)
    b = jnp.asarray(rng.standard_normal(128).astype(np.float32))
    rows = []
    for what, fn, rows_ in (("the flushed chain", gelu_chain, 16), ("the flushed chain", gelu_chain, 8),
                            ("jax.nn.gelu (erf form)", lambda x, b: jax.nn.gelu(x + b, approximate=False), 16)):
        x = jnp.asarray(rng.standard_normal((rows_, 128)).astype(np.float32))
        compiled = jax.jit(fn).lower(x, b).compile()
        split = '"outer_dimension_partitions":["' in compiled.as_text()
        seconds = []
        for i in range(SPLIT_CALLS + 20):  # 20 not counted
            t = time.perf_counter()
            compiled(x, b).block_until_ready()
            seconds.append(time.perf_counter() - t)
        us = 1e6 * statistics.median(seconds[20:])
        rows.append({"what": what, "shape": [rows_, 128], "split": split, "us": us})
        print(what, rows_, split, round(us, 1), flush=True)
    return rows


def markdown(env: dict, repeats: int, rows: list, splits: list) -> str:
    lines = [
        "# The small models against the same models written in jax.numpy",
        "",
        f"Made by `python3 benchmarks/onnx/jax_floor.py` ({env['date']}; commit {env['commit'][:12]}"
        f"{', uncommitted changes' if env.get('uncommitted changes') else ''}).",
        "",
        f"Machine: {env['cpu']}, {env['cores']} cores; jax {env['jax']}, jaxlib {env['jaxlib']}, onnxruntime "
        f"{env['onnxruntime']}. Load averages at the start: {env['load_average_at_start']}; at the end: "
        f"{env['load_average_at_end']}. Times: {repeats} rounds of blocks of {model_table.BLOCK} calls a side, as "
        "`models.py` takes them (its page gives the method).",
        "",
        "## The models",
        "",
        "*jax*: the model written by hand in jax.numpy from the export's weights, none of DirectML's rules; its "
        f"outputs within {TOLERANCE:g} of ONNX Runtime's (the column gives the largest difference).",
        "",
        "| model | dmljax ms | jax ms | ORT ms | dmljax / ORT | jax / ORT | dmljax / jax | jax vs ORT |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ms = r["ms"]
        lines.append(f"| {r['model']} | {ms['dmljax']:.3f} | {ms['jax']:.3f} | {ms['ort']:.3f} | "
                     f"{ms['dmljax'] / ms['ort']:.2f} | {ms['jax'] / ms['ort']:.2f} | {ms['dmljax'] / ms['jax']:.2f} | "
                     f"{r['jax_vs_ort_max_abs']:.1e} |")
    lines += ["", "## XLA's split of a small loop", "",
              f"One jitted loop (a fusion) a call, the median of {SPLIT_CALLS} calls: *split* says whether XLA's "
              "CPU compiler spread it over the threads.",
              "", "| loop | elements | split | µs a call |", "|---|---|---|---|"]
    for r in splits:
        lines.append(f"| {r['what']} | {r['shape'][0]} x {r['shape'][1]} | {'yes' if r['split'] else 'no'} | "
                     f"{r['us']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--repeats", type=int, default=3 if common.SMOKE else 15)
    args = ap.parse_args()
    out = Path(args.out) if args.out else Path(__file__).resolve().parents[1] / "results" / "cpu" / "onnx"
    out.mkdir(parents=True, exist_ok=True)
    import onnxruntime  # noqa: PLC0415
    env = common.environment()
    env.update(cpu=common.cpu_name(), cores=os.cpu_count(), onnxruntime=onnxruntime.__version__,
               load_average_at_start=common.load_average())
    rows = model_rows(args.repeats)
    splits = split_rows()
    env["load_average_at_end"] = common.load_average()
    (out / "jax_floor.json").write_text(json.dumps({"environment": env, "repeats": args.repeats, "models": rows,
                                                    "split": splits}, indent=1) + "\n")
    (out / "jax_floor.md").write_text(markdown(env, args.repeats, rows, splits))
    print(f"wrote {out / 'jax_floor.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
