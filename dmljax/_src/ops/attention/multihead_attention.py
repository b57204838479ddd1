"""MULTIHEAD_ATTENTION and MULTIHEAD_ATTENTION1, of the attention family: each page's record, with
the formula below them.

[Add Bias] -> GEMM(Query, Transposed(Key)) * Scale -> [Add RelativePositionBias] -> [Add Mask] ->
Softmax -> GEMM(SoftmaxResult, Value), per head. The formula never builds the sequence x sequence
matrix: it walks the keys in blocks (``KEY_BLOCK``) with an online softmax (a running maximum, sum
and weighted sum per query row, flash attention's recurrence) under ``lax.scan``, each step under
``jax.checkpoint`` so that the backward pass recomputes a block instead of keeping it. Products take
FLOAT16 operands and accumulate in FLOAT32 (FLOAT32 ones at HIGHEST precision: never TF32); the
softmax runs in FLOAT32. On CUDA, a FLOAT16 call without mask and relative position bias forwards
through cuDNN's fused attention (``jax.nn.dot_product_attention``); forward mode differentiates the
blockwise formula and reverse mode transposes that tangent into cuDNN's backward pass (``_fused``)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import SavedPullback, custom_transposed, tangent_zeros
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.enums import MultiheadAttentionMaskType as MaskType
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.attention import ATTENTION_CUDNN, cudnn_attention
from dmljax._src.numerics import load, store
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, PageSlip, ParamSpec, SameDataType, SilentChoice, TensorSpec, snake_case, table
from dmljax._src.validate import TensorInfo

F32, F16, I32 = DataType.FLOAT32, DataType.FLOAT16, DataType.INT32
KEY_BLOCK = 512
"""Keys per step of the blockwise formula: a step holds [batch, heads, sequence, KEY_BLOCK] scores."""

_FLOATS = ("QueryTensor", "KeyTensor", "ValueTensor", "StackedQueryKeyTensor", "StackedKeyValueTensor",
           "StackedQueryKeyValueTensor", "BiasTensor", "RelativePositionBiasTensor", "PastKeyTensor",
           "PastValueTensor", "OutputTensor", "OutputPresentKeyTensor", "OutputPresentValueTensor")
_EXCLUSIVE = {  # the page: "This tensor is mutually exclusive with ..."
    "QueryTensor": ("StackedQueryKeyTensor", "StackedQueryKeyValueTensor"),
    "KeyTensor": ("StackedQueryKeyTensor", "StackedKeyValueTensor", "StackedQueryKeyValueTensor"),
    "ValueTensor": ("StackedKeyValueTensor", "StackedQueryKeyValueTensor"),
    "StackedQueryKeyTensor": ("StackedKeyValueTensor", "StackedQueryKeyValueTensor"),
    "StackedKeyValueTensor": ("StackedQueryKeyValueTensor",),
}
_MASK_SIZES = {
    MaskType.BOOLEAN: "{batchSize, headCount, sequenceLength, totalSequenceLength}",
    MaskType.KEY_SEQUENCE_LENGTH: "{1, batchSize}",
    MaskType.KEY_SEQUENCE_END_START: "{2, batchSize}",
    MaskType.KEY_QUERY_SEQUENCE_LENGTH_START_END: "{batchSize * 3 + 2}",
}


def _arg(name: str) -> str:
    return snake_case(name)


def _core(t, n: int):
    """A tensor's Sizes without leading 1s down to ``n`` dimensions ("can also have 4 or 5
    dimensions, as long as the leading dimensions are 1's"), or None."""
    s = tuple(t.shape)
    if len(s) < n or any(d != 1 for d in s[: len(s) - n]):
        return None
    return s[len(s) - n:]


def geometry(tensors, attrs, problems: list) -> dict | None:
    """The call's sizes from its tensors and head counts: B, S (query rows), Skv (new keys), P
    (past keys), T = P + Skv, H and Hkv (query and key/value heads), Dh and Dv (head sizes), and
    which tensors hold query, key and value; Violations appended for every rule broken."""
    def bad(name, found, allowed, tip=""):
        problems.append(Violation(name, _arg(name), found, allowed, tip))

    h = attrs.get("HeadCount", attrs.get("QueryHeadCount"))
    hkv = attrs.get("HeadCount", attrs.get("KeyValueHeadCount"))
    if not isinstance(h, int) or not isinstance(hkv, int):
        return None
    count_names = ("HeadCount",) if "HeadCount" in attrs else ("QueryHeadCount", "KeyValueHeadCount")
    ok = True
    for name, v in zip(count_names, (h, hkv)):
        if v < 1:
            problems.append(Violation(name, _arg(name), f"is {v}", "at least 1"))
            ok = False
    if ok and h % hkv:
        problems.append(Violation("KeyValueHeadCount", "key_value_head_count", f"is {hkv}",
                                  f"a divisor of QueryHeadCount ({h}): query head n reads key/value head "
                                  f"n // (QueryHeadCount / KeyValueHeadCount)"))
        ok = False
    if not ok:
        return None
    given = {n for n in tensors if tensors.get(n) is not None}
    if any(len(tensors[n].shape) != 5 for n in given if n.startswith("Stacked")):
        return None  # the support table's check reports it
    for a, others in _EXCLUSIVE.items():
        for b in others:
            if a in given and b in given:
                bad(b, f"is given with {a}", f"one of them: {b} is mutually exclusive with {a} (the page)")
    if problems:
        return None
    q_src = [n for n in ("QueryTensor", "StackedQueryKeyTensor", "StackedQueryKeyValueTensor") if n in given]
    k_src = [n for n in ("KeyTensor", "StackedQueryKeyTensor", "StackedKeyValueTensor", "StackedQueryKeyValueTensor")
             if n in given]
    v_src = [n for n in ("ValueTensor", "StackedKeyValueTensor", "StackedQueryKeyValueTensor") if n in given]
    past = [n for n in ("PastKeyTensor", "PastValueTensor") if n in given]
    if not q_src:
        bad("QueryTensor", "is null, and so are StackedQueryKeyTensor and StackedQueryKeyValueTensor",
            "exactly one query: QueryTensor, StackedQueryKeyTensor or StackedQueryKeyValueTensor")
        return None
    if bool(k_src) != bool(v_src):
        missing = "ValueTensor" if k_src else "KeyTensor"
        bad(missing, "is null while the " + ("key" if k_src else "value") + " is given",
            "a key and a value, or neither (then PastKeyTensor and PastValueTensor hold every key and value)")
        return None
    if len(past) == 1:
        missing = "PastValueTensor" if past[0] == "PastKeyTensor" else "PastKeyTensor"
        bad(missing, f"is null while {past[0]} is given", "PastKeyTensor and PastValueTensor together")
        return None
    if not k_src and not past:
        bad("KeyTensor", "is null, and no StackedKeyValueTensor, stacked query or PastKeyTensor holds keys",
            "exactly one key (KeyTensor, StackedQueryKeyTensor, StackedKeyValueTensor or "
            "StackedQueryKeyValueTensor), or PastKeyTensor and PastValueTensor alone")
        return None
    g = {"H": h, "Hkv": hkv, "q": q_src[0], "k": k_src[0] if k_src else None, "v": v_src[0] if v_src else None}
    q = q_src[0]
    if q == "QueryTensor":
        s = _core(tensors[q], 3)
        if s is None:
            bad(q, f"has Sizes {list(tensors[q].shape)}", "{batchSize, sequenceLength, hiddenSize}, with 4 or 5 "
                "dimensions only leading 1s")
            return None
        if s[2] % h:
            bad(q, f"has hiddenSize {s[2]}", f"a multiple of the query head count ({h}): hiddenSize = "
                "headCount * headSize")
            return None
        g.update(B=s[0], S=s[1], Dh=s[2] // h)
    else:
        s = tuple(tensors[q].shape)
        n = 3 if q == "StackedQueryKeyValueTensor" else 2
        if s[2] != h or s[3] != n or h != hkv:
            bad(q, f"has Sizes {list(s)}", f"{{batchSize, sequenceLength, headCount, {n}, headSize}} with "
                f"headCount {h}" + ("" if h == hkv else " and equal query and key/value head counts"))
            return None
        g.update(B=s[0], S=s[1], Dh=s[4])
    B, S, Dh = g["B"], g["S"], g["Dh"]
    Skv, Dv = S, Dh
    k, v = g["k"], g["v"]
    if k == "KeyTensor":
        s = _core(tensors[k], 3)
        if s is None or s[0] != B or s[2] != hkv * Dh:
            bad(k, f"has Sizes {list(tensors[k].shape)}", f"{{batchSize, keyValueSequenceLength, hiddenSize}} "
                f"with batchSize {B} and hiddenSize {hkv * Dh} (key/value heads {hkv} x headSize {Dh}); 4 or 5 "
                "dimensions only with leading 1s")
            return None
        Skv = s[1]
    elif k == "StackedKeyValueTensor":
        s = tuple(tensors[k].shape)
        if s[0] != B or s[2] != hkv or s[3] != 2 or s[4] != Dh:
            bad(k, f"has Sizes {list(s)}", f"{{batchSize, keyValueSequenceLength, headCount, 2, headSize}} = "
                f"{{{B}, *, {hkv}, 2, {Dh}}}")
            return None
        Skv = s[1]
    if v == "ValueTensor":
        s = _core(tensors[v], 3)
        if s is None or s[0] != B or s[1] != Skv or s[2] % hkv:
            bad(v, f"has Sizes {list(tensors[v].shape)}", f"{{batchSize, keyValueSequenceLength, "
                f"valueHiddenSize}} with batchSize {B}, keyValueSequenceLength {Skv} and valueHiddenSize a "
                f"multiple of {hkv} heads; 4 or 5 dimensions only with leading 1s")
            return None
        Dv = s[2] // hkv
    if not k:
        Skv = 0
        pv = _core(tensors["PastValueTensor"], 4)
        Dv = pv[3] if pv is not None else Dh
    P = 0
    if past:
        pk, pv = _core(tensors["PastKeyTensor"], 4), _core(tensors["PastValueTensor"], 4)
        if pk is None or pk[0] != B or pk[1] != hkv or pk[3] != Dh:
            bad("PastKeyTensor", f"has Sizes {list(tensors['PastKeyTensor'].shape)}",
                f"{{batchSize, headCount, pastSequenceLength, headSize}} = {{{B}, {hkv}, *, {Dh}}}")
            return None
        P = pk[2]
        if pv is None or pv[:3] != (B, hkv, P) or pv[3] != Dv:
            bad("PastValueTensor", f"has Sizes {list(tensors['PastValueTensor'].shape)}",
                f"{{batchSize, headCount, pastSequenceLength, valueHeadSize}} = {{{B}, {hkv}, {P}, {Dv}}}")
            return None
    g.update(Skv=Skv, Dv=Dv, P=P, T=P + Skv)
    T = P + Skv
    if "BiasTensor" in given:
        s = _core(tensors["BiasTensor"], 1)
        want = h * Dh + hkv * Dh + hkv * Dv
        if s is None or s[0] != want:
            bad("BiasTensor", f"has Sizes {list(tensors['BiasTensor'].shape)}",
                f"{{hiddenSize + hiddenSize + valueHiddenSize}} = {{{want}}}, with more dimensions only leading 1s")
    if "RelativePositionBiasTensor" in given:
        s = _core(tensors["RelativePositionBiasTensor"], 4)
        if s != (B, h, S, T):
            bad("RelativePositionBiasTensor", f"has Sizes {list(tensors['RelativePositionBiasTensor'].shape)}",
                f"{{batchSize, headCount, sequenceLength, totalSequenceLength}} = {[B, h, S, T]} (a broadcast "
                "is a desc's zero strides: jnp.broadcast_to)")
    mt = attrs.get("MaskType")
    if isinstance(mt, MaskType):
        if mt is MaskType.NONE and "MaskTensor" in given:
            bad("MaskTensor", "is given with MaskType NONE", "no MaskTensor, or a MaskType that says how to read it")
        elif mt is not MaskType.NONE and "MaskTensor" not in given:
            bad("MaskTensor", f"is null with MaskType {mt.name}", "a MaskTensor, or MaskType NONE")
        elif mt is not MaskType.NONE:
            want = {MaskType.BOOLEAN: (B, h, S, T), MaskType.KEY_SEQUENCE_LENGTH: (1, B),
                    MaskType.KEY_SEQUENCE_END_START: (2, B),
                    MaskType.KEY_QUERY_SEQUENCE_LENGTH_START_END: (3 * B + 2,)}[mt]
            if _core(tensors["MaskTensor"], len(want)) != want:
                bad("MaskTensor", f"has Sizes {list(tensors['MaskTensor'].shape)}",
                    f"{_MASK_SIZES[mt]} = {list(want)} for MaskType {mt.name}, with more dimensions only leading 1s")
    if mt is MaskType.KEY_QUERY_SEQUENCE_LENGTH_START_END:
        for name in ("PastKeyTensor", "RelativePositionBiasTensor", "PastSequenceLengthsTensor"):
            if name in given:
                bad(name, "is given with MaskType KEY_QUERY_SEQUENCE_LENGTH_START_END",
                    f"no {name} with that mask: it reads the tensors as a packed layout of tokens, which has no "
                    "past and no [batch, heads, sequence, totalSequence] bias (ONNX Runtime's packed attention)")
    if "PastSequenceLengthsTensor" in given and _core(tensors["PastSequenceLengthsTensor"], 1) != (B,):
        bad("PastSequenceLengthsTensor", f"has Sizes {list(tensors['PastSequenceLengthsTensor'].shape)}",
            f"{{batchSize}} = {{{B}}}, with more dimensions only leading 1s")
    return g


def _checks(tensors, attrs, level) -> list[Violation]:
    problems: list[Violation] = []
    geometry(tensors, attrs, problems)
    return problems


def _outputs(tensors, attrs, problems) -> dict:
    g = geometry(tensors, attrs, [])
    dt = tensors[g["q"]].data_type
    return {"OutputTensor": TensorInfo((g["B"], g["S"], g["H"] * g["Dv"]), dt),
            "OutputPresentKeyTensor": TensorInfo((g["B"], g["Hkv"], g["T"], g["Dh"]), dt),
            "OutputPresentValueTensor": TensorInfo((g["B"], g["Hkv"], g["T"], g["Dv"]), dt)}


def _sizes(attrs, name, n):
    s = attrs.get(name)
    if not isinstance(s, tuple) or len(s) < n:
        return None
    return s[len(s) - n:]


def _growth(sizes, attrs) -> dict:
    """Each output element is two sums (docs/semantics.md#accumulating-operators): headSize products per score, and
    totalSequenceLength softmax-weighted values per output; in ULP of the terms' magnitude
    (the reference's sum of p * |v| and the scores' sum |q k|), 2 (Dh + T) in FLOAT32; in FLOAT16,
    whose softmax result is rounded to FLOAT16 before the second product (the page's graph),
    one unit more and (Dh + T) / 2^12."""
    dh, t = 1, 1
    q, sqkv = _sizes(attrs, "QueryTensor", 1), _sizes(attrs, "StackedQueryKeyValueTensor", 5)
    k = _sizes(attrs, "KeyTensor", 2) or _sizes(attrs, "StackedKeyValueTensor", 5)
    heads = attrs.get("HeadCount") or attrs.get("QueryHeadCount") or 1
    if sqkv is not None:
        dh, t = sqkv[4], sqkv[1]
    elif _sizes(attrs, "StackedQueryKeyTensor", 5) is not None:
        s = _sizes(attrs, "StackedQueryKeyTensor", 5)
        dh, t = s[4], s[1]
    elif q is not None and isinstance(heads, int) and heads > 0:
        dh = max(q[0] // heads, 1)
    if k is not None:
        t = k[1] if len(k) == 5 else k[0]
    past = _sizes(attrs, "PastKeyTensor", 4)
    if past is not None:
        t += past[2]
    n = dh + t
    return {F32: 2 * n, F16: 1 + math.ceil(n / 4096), "half": 2 * n}


_MASK_DOC = ("How MaskTensor (INT32) is read: NONE (no mask, the default), BOOLEAN ({batch, heads, sequence, "
             "totalSequence}: 0 adds MaskFilterValue, any other value nothing), KEY_SEQUENCE_LENGTH ({1, batch}: "
             "keys at and after the length), KEY_SEQUENCE_END_START ({2, batch}: the end (exclusive) row, then "
             "the start (inclusive) row; keys outside), KEY_QUERY_SEQUENCE_LENGTH_START_END ({3 * batch + 2}: "
             "keyLength[batch], queryStart[batch] and queryEnd, keyStart[batch] and keyEnd, ONNX Runtime's packed "
             "layout: the tensors' rows are tokens, sequence b's queries the tokens queryStart[b] to "
             "queryStart[b + 1] - 1, its keys keyStart[b] to keyStart[b + 1] - 1, of which the first keyLength[b] "
             "are read and the others masked).")
_NOTES = (
    "Query {batch, sequence, heads * headSize}, Key {batch, keyValueSequence, kvHeads * headSize}, Value "
    "{batch, keyValueSequence, kvHeads * valueHeadSize}, with 4 or 5 dimensions only as leading 1s; the "
    "stacked forms {batch, sequence, heads, 2 or 3, headSize}, stacked on the fourth dimension in the order "
    "query, key, value. Exactly one query; a key and a value, or neither when PastKeyTensor and "
    "PastValueTensor hold them all (ONNX Runtime's DirectML provider passes a 4-dimensional key as the past "
    "so); past key and value together. BiasTensor {hiddenSize + hiddenSize + valueHiddenSize} (more dimensions "
    "only as leading 1s) is added to query, key and value, each rounded to the tensors' type before the "
    "products, and the present key and value hold the biased key and value. RelativePositionBiasTensor and a "
    "BOOLEAN MaskTensor are {batch, heads, sequence, totalSequence} (totalSequence = pastSequence + "
    "keyValueSequence); a broadcast is a desc's zero strides (jnp.broadcast_to), as ONNX Runtime's provider "
    "makes them. The output is 3-dimensional, {batch, sequence, heads * valueHeadSize}; the present key and "
    "value {batch, kvHeads, totalSequence, headSize}, returned always (unused ones cost nothing inside a "
    "caller's jax.jit). FLOAT16: products of FLOAT16 operands accumulated in FLOAT32, the softmax in FLOAT32, "
    "its result rounded to FLOAT16 for the second product (the page's graph holds it in a tensor of the "
    "operator's type), the output rounded once; FLOAT32 products never TF32. The blockwise formula (online "
    "softmax over blocks of KEY_BLOCK keys) never holds a sequence x sequence matrix. With "
    "allow_half_precision_computation=True, FLOAT16 calls accumulate both products in FLOAT16 (the bias "
    "additions too); the softmax and the blockwise recurrence (running maximum, sum and output) stay FLOAT32, "
    "since they are rescaled at every block of keys and FLOAT16 there would compound per block; the budget is "
    "ulp_half plus 2 (headSize + totalSequence) ULP of the terms' magnitude. "
    "KEY_QUERY_SEQUENCE_LENGTH_START_END reads the mask as ONNX Runtime's contrib MultiHeadAttention does for "
    "its {3 * batch + 2} key_padding_mask (its packed layout: query, key and value rows are tokens one after "
    "another, batch after batch, viewed as one sequence of batch * sequence tokens): sequence b's queries are "
    "the tokens queryStart[b] to queryStart[b + 1] - 1 (queryEnd closing the last), its keys and values "
    "keyStart[b] to keyStart[b + 1] - 1, of which the first keyLength[b] are read and the others get "
    "MaskFilterValue added (the other mask types' rule; ONNX Runtime skips them, the same result but for a row "
    "with no key read); no key of another sequence is in a row's softmax; a query token of no sequence gives "
    "0; the output's rows are the query's tokens. The packed layout has no past and no [batch, heads, "
    "sequence, totalSequence] bias: PastKeyTensor, RelativePositionBiasTensor and PastSequenceLengthsTensor "
    "are refused with it. Scale and MaskFilterValue are C floats.")
_NOTES1 = (
    " The page is 'TBD' for the operator, PastSequenceLengthsTensor, QueryHeadCount and KeyValueHeadCount: the "
    "record follows ONNX Runtime's GroupQueryAttention, which its DirectML provider maps onto this operator. "
    "Query head n reads key/value head n // (QueryHeadCount / KeyValueHeadCount) (grouped-query attention); the "
    "stacked forms need equal head counts. PastSequenceLengthsTensor is INT32 {batch} (the page's table says "
    "FLOAT32 and FLOAT16; ONNX Runtime binds INT32 and the 'same DataType' constraint does not hold for it): "
    "with it, batch b's past holds L_b = PastSequenceLengths[b] valid keys (L_b <= pastSequence), the present "
    "holds them, then the new keys at L_b to L_b + keyValueSequence - 1, then zeros; and attention is causal as "
    "GroupQueryAttention's: query i (at position L_b + keyValueSequence - sequence + i) reads the keys at and "
    "before its position, the others get MaskFilterValue added like masked ones. Without it, as "
    "MULTIHEAD_ATTENTION (concatenation, no causal mask).")

_GRADIENT = ("The derivative of the formula (no *_GRAD operator exists): dV = P^T dO, dP = dO V^T, dS = P * (dP - "
             "rowsum(P * dP)), dQ = Scale dS K, dK = Scale dS^T Q, dRelativePositionBias = dS, dBias the sums "
             "over batch and sequence, the past's from the keys it supplied, grouped heads summed; by the same "
             "blockwise formula (jax.checkpoint per block), in reverse and forward mode, except that on CUDA "
             "a call on the cuDNN route (FLOAT16, head size 64 or 128, no mask or a KEY_SEQUENCE_LENGTH mask "
             "the route takes) runs cuDNN's fused backward pass in reverse mode: the same derivative in "
             "another order, within the forward pass's budget; MaskTensor and PastSequenceLengthsTensor "
             "(INT32) get none.")


def _tensors(gqa: bool):
    ins = ["QueryTensor", "KeyTensor", "ValueTensor", "StackedQueryKeyTensor", "StackedKeyValueTensor",
           "StackedQueryKeyValueTensor", "BiasTensor", "MaskTensor", "RelativePositionBiasTensor", "PastKeyTensor",
           "PastValueTensor"] + (["PastSequenceLengthsTensor"] if gqa else [])
    return (tuple(TensorSpec(n, "input", optional=True) for n in ins)
            + (TensorSpec("OutputTensor", "output"), TensorSpec("OutputPresentKeyTensor", "output", optional=True),
               TensorSpec("OutputPresentValueTensor", "output", optional=True)))


def _table(level: str, gqa: bool):
    rows = dict(QueryTensor=("3 to 5", FLOAT32_FLOAT16), KeyTensor=("3 to 5", FLOAT32_FLOAT16),
                ValueTensor=("3 to 5", FLOAT32_FLOAT16), StackedQueryKeyTensor=("5", FLOAT32_FLOAT16),
                StackedKeyValueTensor=("5", FLOAT32_FLOAT16), StackedQueryKeyValueTensor=("5", FLOAT32_FLOAT16),
                BiasTensor=("1 to 5", FLOAT32_FLOAT16), MaskTensor=("1 to 5", (I32,)),
                RelativePositionBiasTensor=("4 to 5", FLOAT32_FLOAT16), PastKeyTensor=("4 to 5", FLOAT32_FLOAT16),
                PastValueTensor=("4 to 5", FLOAT32_FLOAT16))
    if gqa:
        rows["PastSequenceLengthsTensor"] = ("1 to 5", (I32,))
    rows.update(OutputTensor=("3 to 5", FLOAT32_FLOAT16), OutputPresentKeyTensor=("4 to 5", FLOAT32_FLOAT16),
                OutputPresentValueTensor=("4 to 5", FLOAT32_FLOAT16))
    return (table(level, **rows),)


def _params(gqa: bool):
    heads = ((ParamSpec("QueryHeadCount", "UINT", doc="The query's heads (the page: TBD; GroupQueryAttention's "
                                                      "num_heads)."),
              ParamSpec("KeyValueHeadCount", "UINT", doc="The key's and value's heads, a divisor of QueryHeadCount "
                                                         "(the page: TBD; GroupQueryAttention's kv_num_heads)."))
             if gqa else (ParamSpec("HeadCount", "UINT", doc="Number of attention heads."),))
    return (ParamSpec("Scale", "FLOAT", doc="Multiplies the QxK product before the softmax; usually 1/sqrt(headSize)."),
            ParamSpec("MaskFilterValue", "FLOAT", default=-10000.0,
                      doc="Added to the masked scores (default -10000.0, ONNX Runtime's)."),
            *heads,
            ParamSpec("MaskType", "DML_MULTIHEAD_ATTENTION_MASK_TYPE", default=MaskType.NONE, enum=MaskType,
                      doc=_MASK_DOC))


_SUMMARY = ("Performs a multi-head attention operation (for more info, see Attention is all you need). Exactly one "
            "Query, Key and Value tensor must be present, whether or not they're stacked.")
_FORMULA = ("[Add Bias to query/key/value] -> GEMM(Query, Transposed(Key)) * Scale -> [Add RelativePositionBias] -> "
            "[Add Mask] -> Softmax -> GEMM(SoftmaxResult, Value);")

MULTIHEAD_ATTENTION = OpSpec(
    enum_name=PREFIX + "MULTIHEAD_ATTENTION",
    summary=_SUMMARY,
    formula=_FORMULA + "\n(per head h and query row i: Output[i] = sum_j softmax_j(Scale Q[i] . K[j] + "
                       "RelativePositionBias[i, j] + mask[i, j]) V[j], K and V the past's keys then the new ones)",
    tensors=_tensors(False),
    support=_table("6.1", False),
    params=_params(False),
    constraints=(SameDataType(_FLOATS),),
    ulp={F32: 8, F16: 2},
    ulp_half=4,
    ulp_growth=_growth,
    gradient=_GRADIENT,
    notes=_NOTES,
    extra_checks=(_checks,),
    infer_outputs=_outputs,
    silent=(
        SilentChoice(
            "MULTIHEAD_ATTENTION's mask: \"set to\" MaskFilterValue (three places) or \"added\" (two)",
            "added to the masked scores",
            "ONNX Runtime's contrib MultiHeadAttention, which the operator implements, adds it; a fully masked "
            "row is then the softmax of its scores + MaskFilterValue: with -10000 the unmasked softmax (ONNX "
            "Runtime's result), with -inf NaN."),
        SilentChoice(
            "MULTIHEAD_ATTENTION's BOOLEAN mask and relative position bias shapes",
            "{batch, heads, sequence, totalSequence}; a broadcast is a desc's zero strides (jnp.broadcast_to)",
            "ONNX Runtime's DirectML provider broadcasts its masks to that shape; DirectML never broadcasts "
            "implicitly."),
        SilentChoice(
            "MULTIHEAD_ATTENTION's KEY_QUERY_SEQUENCE_LENGTH_START_END mask ({3 * batch + 2}: key lengths, "
            "query starts and end, key starts and end)",
            "ONNX Runtime's packed layout: the tensors' rows are tokens one after another; sequence b's "
            "queries are the tokens queryStart[b] to queryStart[b + 1] - 1, its keys keyStart[b] to keyStart[b "
            "+ 1] - 1, the first keyLength[b] read and the others get MaskFilterValue added; other sequences' "
            "keys are out of the row's softmax; a token of no sequence gives 0; no past or relative position "
            "bias with it",
            "ONNX Runtime's contrib MultiHeadAttention defines the mask so (its memory-efficient kernel reads "
            "the starts as cumulative token offsets and the lengths as the keys read); the page lists the "
            "values and not their layout."),
        SilentChoice(
            "MULTIHEAD_ATTENTION's gradient on CUDA's fused route (FLOAT16, head size 64 or 128, no mask or a "
            "KEY_SEQUENCE_LENGTH mask the route takes)",
            "reverse mode runs cuDNN's fused backward pass; forward mode and every derivative past the first "
            "are the blockwise formula's",
            "the page defines no gradient (no *_GRAD operator); both are the formula's derivative, in another "
            "order, within its budget, and the fused backward takes 0.98-1.01x cuDNN's time where the blockwise "
            "formula's transpose took 6.7-7.9x (benchmarks/results/h200/attention/backward.md).",
            also=("MULTIHEAD_ATTENTION1",)),
        SilentChoice(
            "MULTIHEAD_ATTENTION with allow_half_precision_computation (FLOAT16)",
            "both products accumulate in FLOAT16; the softmax and the blockwise recurrence stay FLOAT32",
            "the recurrence rescales its running sums at every block of keys, so FLOAT16 there would compound "
            "per block; the record's half budget holds either way."),
        SilentChoice(
            "MULTIHEAD_ATTENTION with neither key nor value",
            "allowed when PastKeyTensor and PastValueTensor are given (they hold every key and value)",
            "ONNX Runtime's DirectML provider passes a 4-dimensional key as the past so."),
        SilentChoice(
            "Attention's MaskFilterValue and MaskType defaults",
            "-10000.0 and NONE (Scale and the head counts are required)",
            "ONNX Runtime's defaults; the page gives none.",
            also=("MULTIHEAD_ATTENTION1",)),
        SilentChoice(
            "FLOAT16 attention's softmax result",
            "computed in FLOAT32, rounded to FLOAT16 for the second product",
            "the page's graph holds it in a tensor of the operator's type; cuDNN's fused attention does the "
            "same.",
            also=("MULTIHEAD_ATTENTION1",)),
    ),
)

MULTIHEAD_ATTENTION1 = OpSpec(
    enum_name=PREFIX + "MULTIHEAD_ATTENTION1",
    summary=_SUMMARY + " Grouped-query attention (QueryHeadCount query heads over KeyValueHeadCount key/value "
                       "heads) and per-batch past sequence lengths.",
    formula="TBD\n" + _FORMULA + " (per query head, with its key/value head, and GroupQueryAttention's causal "
                                 "rule where PastSequenceLengthsTensor is given)",
    tensors=_tensors(True),
    support=_table("6.3", True),
    params=_params(True),
    constraints=(SameDataType(_FLOATS),),
    ulp={F32: 8, F16: 2},
    ulp_half=4,
    ulp_growth=_growth,
    gradient=_GRADIENT,
    notes=_NOTES + _NOTES1,
    page_slip=PageSlip(
        types={"PastSequenceLengthsTensor": (("FLOAT32", "FLOAT16"), ("INT32",))},
        why=("The page's table types PastSequenceLengthsTensor FLOAT32 and FLOAT16 and its constraint ties it to "
             "the float tensors; they are lengths, and ONNX Runtime's DirectML provider binds them as INT32: the "
             "record takes INT32 and leaves it out of the same-DataType constraint.")),
    extra_checks=(_checks,),
    infer_outputs=_outputs,
    silent=(
        SilentChoice(
            "MULTIHEAD_ATTENTION1 (page: TBD): PastSequenceLengthsTensor, QueryHeadCount, KeyValueHeadCount",
            "INT32 {batch} (the table says FLOAT32 / FLOAT16); grouped-query heads; with the lengths, "
            "GroupQueryAttention's present (valid past, new rows, zeros) and causal rule",
            "ONNX Runtime's GroupQueryAttention, which its DirectML provider maps onto the operator with INT32 "
            "lengths."),
    ),
)


# ------------------------------------------------------------------------------------------ formula
def _heads(x, n):
    """[B, L, n * D] -> [B, n, L, D]."""
    b, l, hd = x.shape
    return x.reshape(b, l, n, hd // n).transpose(0, 2, 1, 3)


def _stacked(x, i):
    """Part ``i`` of a stacked {B, L, heads, n, D} tensor as [B, heads, L, D]."""
    return x[:, :, :, i, :].transpose(0, 2, 1, 3)


def _squeeze(x, n):
    return None if x is None else x.reshape(x.shape[x.ndim - n:])


def _product(a, b, contract, batch, f16: bool, half: bool = False):
    """A product: FLOAT16 operands accumulate in FLOAT32 (in FLOAT16 with half-precision computation,
    the result then widened), FLOAT32 ones at HIGHEST."""
    if f16 and half:
        return lax.dot_general(a, b, (contract, batch), preferred_element_type=np.float16).astype(np.float32)
    return lax.dot_general(a, b, (contract, batch), preferred_element_type=np.float32,
                           precision=None if f16 else lax.Precision.HIGHEST)


def _mask_penalty(mask_type, mask, b, j, filter_value):
    """MaskFilterValue where a key-length mask excludes key position ``j`` ([blk]) of each batch: [B, blk], or None."""
    if mask_type in (MaskType.NONE, MaskType.BOOLEAN):
        return None
    if mask_type is MaskType.KEY_SEQUENCE_END_START:
        end, start = mask[0], mask[1]
        out = (j[None, :] >= end[:, None]) | (j[None, :] < start[:, None])
    elif mask_type is MaskType.KEY_SEQUENCE_LENGTH:  # {1, B}: row 0
        out = j[None, :] >= mask[0][:, None]
    else:  # KEY_QUERY_SEQUENCE_LENGTH_START_END: packed tokens, the ``packed`` argument of blockwise_attention
        return None
    return jnp.where(out, np.float32(filter_value), np.float32(0))


def blockwise_attention(q, k, v, *, scale, filter_value, rel_bias=None, bool_mask=None, mask_type=MaskType.NONE,
                        length_mask=None, past_lengths=None, new_keys=0, packed=None, half=False,
                        key_block=KEY_BLOCK):
    """softmax(Scale Q K^T + RelativePositionBias + mask) V without the [S, T] matrix.

    q [B, H, S, Dh], k [B, Hkv, T, Dh], v [B, Hkv, T, Dv] (FLOAT16 or FLOAT32); rel_bias [B, H, S, T] and
    bool_mask (INT32) [B, H, S, T] or None; length_mask: the INT32 key-length mask of ``mask_type``;
    past_lengths: INT32 [B] (GroupQueryAttention's causal rule, with ``new_keys`` the keys each call appends);
    packed: (first key, end key, key length, row valid), INT32 or bool [S] per query row of a packed
    layout (``_packed``): the row reads keys first to end - 1, MaskFilterValue added from first + length
    on, and no other key; a row of no sequence (no key) gives 0. half: FLOAT16 operands' products
    accumulate in FLOAT16 (half-precision computation); the softmax and the recurrence stay FLOAT32.
    Returns FLOAT32 [B, H, S, Dv]."""
    B, H, S, Dh = q.shape
    Hkv, T, Dv = k.shape[1], k.shape[2], v.shape[3]
    G = H // Hkv
    f16 = q.dtype == np.float16
    blk = min(key_block, T)
    nb = -(-T // blk)
    pad = nb * blk - T
    qg = q.reshape(B, Hkv, G, S, Dh)

    def blocks(x, axis, fill):
        if pad:
            widths = [(0, 0)] * x.ndim
            widths[axis] = (0, pad)
            x = jnp.pad(x, widths, constant_values=fill)
        shape = x.shape[:axis] + (nb, blk) + x.shape[axis + 1:]
        return jnp.moveaxis(x.reshape(shape), axis, 0)

    xs = {"k": blocks(k, 2, 0), "v": blocks(v, 2, 0), "j0": jnp.arange(nb, dtype=np.int32) * blk}
    if rel_bias is not None:
        xs["rel"] = blocks(rel_bias.reshape(B, Hkv, G, S, T), 4, 0)
    if bool_mask is not None:
        xs["mask"] = blocks(bool_mask.reshape(B, Hkv, G, S, T), 4, 1)
    fv = np.float32(filter_value)
    rows = jnp.arange(S, dtype=np.int32)
    causal_offset = np.int32(new_keys - S)

    def step(carry, x):
        m, l, acc = carry
        j = x["j0"] + jnp.arange(blk, dtype=np.int32)
        s = _product(qg, x["k"], ((4,), (3,)), ((0, 1), (0, 1)), f16, half) * np.float32(scale)  # [B, Hkv, G, S, blk]
        if "rel" in x:
            s = s + x["rel"].astype(np.float32)
        if "mask" in x:
            s = s + jnp.where(x["mask"] == 0, fv, np.float32(0))
        pen = _mask_penalty(mask_type, length_mask, B, j, filter_value)
        if pen is not None:
            s = s + pen[:, None, None, None, :]
        if past_lengths is not None:  # causal from each batch's past length; keys after the present's end
            pos = past_lengths[:, None] + (causal_offset + rows)[None, :]  # [B, S]
            out = (j[None, None, :] > pos[:, :, None]) | (j[None, None, :] >= (past_lengths + np.int32(new_keys))[:, None, None])
            s = s + jnp.where(out, fv, np.float32(0))[:, None, None, :, :]
        if packed is not None:
            lo, hi, length, valid = (a[:, None] for a in packed)  # [S, 1]
            inside = (j[None, :] >= lo) & (j[None, :] < hi) & valid
            s = jnp.where(inside, s + jnp.where(j[None, :] - lo >= length, fv, np.float32(0)), -jnp.inf)
        s = jnp.where(j < T, s, -jnp.inf)  # the padding past the last block's end
        m_new = lax.stop_gradient(jnp.maximum(m, jnp.max(s, axis=-1)))
        base = jnp.where(jnp.isfinite(m_new), m_new, np.float32(0))
        alpha = jnp.exp(m - base)
        p = jnp.exp(s - base[..., None])
        l = l * alpha + jnp.sum(p, axis=-1)
        pv = _product(p.astype(v.dtype) if f16 else p, x["v"], ((4,), (2,)), ((0, 1), (0, 1)), f16, half)
        return (m_new, l, acc * alpha[..., None] + pv), None

    init = (jnp.full((B, Hkv, G, S), -jnp.inf, np.float32), jnp.zeros((B, Hkv, G, S), np.float32),
            jnp.zeros((B, Hkv, G, S, Dv), np.float32))
    (m, l, acc), _ = lax.scan(jax.checkpoint(step), init, xs)
    if packed is not None:  # a row that reads no key: 0 (l is 0 only there)
        some = l > 0
        return jnp.where(some[..., None], acc / jnp.where(some, l, np.float32(1))[..., None], 0).reshape(B, H, S, Dv)
    return (acc / l[..., None]).reshape(B, H, S, Dv)


def _packed(q, k, v, mask, **kw):
    """KEY_QUERY_SEQUENCE_LENGTH_START_END ({3 * batch + 2}: keyLength[B], queryStart[B] then queryEnd,
    keyStart[B] then keyEnd), as ONNX Runtime's contrib MultiHeadAttention reads it: the tensors' rows are
    a packed layout of tokens, batch after batch (q [B, H, S, Dh] as B * S query tokens, k and v as
    B * Skv key tokens); sequence b's queries are the tokens queryStart[b] to queryStart[b + 1] - 1 (the
    last end is queryEnd) and its keys keyStart[b] to keyStart[b + 1] - 1, of which the first keyLength[b]
    are read and the others get MaskFilterValue added; a query token of no sequence gives 0."""
    B, H, S, _ = q.shape
    lengths, qs, ks = mask[:B], mask[B:2 * B + 1], mask[2 * B + 1:]

    def tokens(x):
        return x.transpose(1, 0, 2, 3).reshape(1, x.shape[1], B * x.shape[2], x.shape[3])

    r = jnp.arange(B * S, dtype=np.int32)
    rb = jnp.clip(jnp.sum(r[:, None] >= qs[None, 1:B], axis=1), 0, B - 1).astype(np.int32)  # the row's sequence
    valid = (r >= qs[rb]) & (r < qs[rb + 1])
    out = blockwise_attention(tokens(q), tokens(k), tokens(v), packed=(ks[rb], ks[rb + 1], lengths[rb], valid), **kw)
    return out.reshape(H, B, S, -1).transpose(1, 0, 2, 3)



MASKED_EXP_LIMIT = -110.0
"""exp of a FLOAT32 argument below this is 0 (exp(-104) is already below half the smallest FLOAT32
denormal): a key whose score plus MaskFilterValue lies that far below its row's largest score adds
exactly nothing to the softmax."""


def score_reach(q, k, scale):
    """A bound on |Scale q . k| over every query and key (Cauchy-Schwarz: |Scale| times the largest
    query norm times the largest key norm, widened by 2^-10 for the norms' own rounding), FLOAT32 [].
    The head size is the last axis of both."""
    def largest_norm(x):
        return jnp.sqrt(jnp.max(jnp.sum(jnp.square(x.astype(np.float32)), axis=-1)))
    return np.float32(abs(scale) * (1 + 2.0**-10)) * largest_norm(q) * largest_norm(k)


def flat_cond(pred, true_fun, false_fun, *operands):
    """``lax.cond(pred, true_fun, false_fun, *operands)`` for arrays in and a tuple of arrays out,
    each crossing the conditional as a 1-D array and given its shape again inside.

    XLA lays a conditional's operands and results out once for both branches, after one of them:
    where that branch is the blockwise formula's, cuDNN's branch transposes its operands and its
    result into that layout and the code after the conditional transposes them back (on the H200,
    batch 8, 16 heads of 64, 1,024 tokens with a KEY_SEQUENCE_LENGTH mask: 2 transposes of
    16 MiB in the forward pass, 9 in the forward and backward, 11.3-11.6 us each). A 1-D array has
    one layout, and reshaping a row-major array to it and back costs nothing."""
    shapes = [jnp.shape(x) for x in operands]
    result_shapes: list = []  # the branches' results' shapes, as lax.cond traces them (the same in both)

    def flat(fun):
        def branch(*xs):  # the barrier keeps XLA from moving the reshapes out of the branches
            xs = lax.optimization_barrier(xs)
            ys = fun(*(jnp.reshape(x, s) for x, s in zip(xs, shapes)))
            result_shapes[:] = [jnp.shape(y) for y in ys]
            return tuple(jnp.reshape(y, (-1,)) for y in ys)
        return branch
    out = lax.cond(pred, flat(true_fun), flat(false_fun), *(jnp.reshape(x, (-1,)) for x in operands))
    return tuple(jnp.reshape(y, s) for y, s in zip(out, result_shapes))


def _fused(q, k, v, scale, key_lengths=None, filter_value=0.0):
    """Attention without a mask or bias, or with a KEY_SEQUENCE_LENGTH mask (``key_lengths``, INT32
    [B]), through cuDNN on CUDA where ``ATTENTION_CUDNN`` applies, the blockwise formula elsewhere.

    DirectML adds MaskFilterValue to the scores of keys at or past a batch's length, where cuDNN's
    sequence lengths drop those keys: the same softmax when every row keeps a key and the penalty
    puts every dropped score more than ``-MASKED_EXP_LIMIT`` below the row's largest (each dropped
    exp is then exactly 0 in FLOAT32). A runtime check (``score_reach``: any score lies within
    [-R, R], so a dropped key's lies at least MaskFilterValue + 2R below the row's largest kept one)
    takes cuDNN where it holds and the blockwise formula, MaskFilterValue added, where it does not.

    Derivatives: forward mode (jax.jvp, jacfwd, and every derivative past the first) is the
    blockwise formula's; reverse mode transposes that tangent into cuDNN's own backward pass on the
    cuDNN route (``derivatives.custom_transposed``), the same formula's gradient in another order.
    The backward pass reads the forward pass's residuals (``derivatives.SavedPullback``): the check's
    result, cuDNN's output and softmax statistics; with a mask, one conditional runs the forward
    pass (cuDNN's, or the blockwise formula's keeping nothing) and one the backward pass (cuDNN's,
    or the blockwise formula's, which runs its forward again)."""
    masked = key_lengths is not None

    def xla(q, k, v, *lengths):
        if not masked:
            return blockwise_attention(q, k, v, scale=scale, filter_value=0.0)
        return blockwise_attention(q, k, v, scale=scale, filter_value=filter_value,
                                   mask_type=MaskType.KEY_SEQUENCE_LENGTH, length_mask=lengths[0][None])
    operands = (q, k, v, key_lengths) if masked else (q, k, v)

    gpu = jax.default_backend() == "gpu"
    route = choose(ATTENTION_CUDNN, facts=(q.dtype, q.shape[-1], v.shape[-1], True, False, gpu))
    if route.kernel is None:
        return xla(*operands)

    n = len(operands)
    keys = np.int32(k.shape[2])

    def swap(*xs):  # [B, H, S, D] <-> [B, S, H, D]: the layout cuDNN reads
        return tuple(x.transpose(0, 2, 1, 3) for x in xs)

    def fallback(qs, ks, vs, lengths):  # the blockwise formula in cuDNN's layout, FLOAT16 like cuDNN's result
        return swap(xla(*swap(qs, ks, vs), lengths).astype(np.float16))[0]
    # cuDNN's forward in its training form, keeping what its backward pass reads
    cudnn = SavedPullback(lambda qs, ks, vs, *kept: cudnn_attention(qs, ks, vs, scale, *kept))

    def forward(ops, train: bool):
        """cuDNN's route: (output FLOAT32 [B, H, S, D],) and, with ``train``, what the backward pass
        reads: the check's result (with a mask), cuDNN's FLOAT16 [B, S, H, D] output and the rest of
        its residuals."""
        qs, ks, vs = swap(*ops[:3])
        if not masked:
            if not train:
                return (swap(cudnn_attention(qs, ks, vs, scale))[0].astype(np.float32),)
            out, saved = cudnn.forward(qs, ks, vs)
            return (swap(out)[0].astype(np.float32), out, *saved)
        lengths = ops[3]
        exact = (jnp.min(lengths) >= 1) & (np.float32(filter_value) + 2 * score_reach(qs, ks, scale)
                                           < np.float32(MASKED_EXP_LIMIT))
        kept = jnp.minimum(lengths, keys)
        if train:
            blank = cudnn.shapes(qs, ks, vs, kept)

            def cudnn_branch(qs, ks, vs, lengths):
                out, saved = cudnn.forward(qs, ks, vs, kept)
                return (out, *saved)

            def xla_branch(qs, ks, vs, lengths):  # nothing kept: its backward pass runs it again
                return (fallback(qs, ks, vs, lengths), *(jnp.zeros(b.shape, b.dtype) for b in blank))
        else:
            def cudnn_branch(qs, ks, vs, lengths):
                return (cudnn_attention(qs, ks, vs, scale, kept),)

            def xla_branch(qs, ks, vs, lengths):
                return (fallback(qs, ks, vs, lengths),)
        # The results stay FLOAT16, which the operator's output rounds to anyway (the
        # conditional's result is a buffer of its own, not fused into the output's store).
        out, *saved = flat_cond(exact, cudnn_branch, xla_branch, qs, ks, vs, lengths)
        return (swap(out)[0].astype(np.float32),) + ((exact, out, *saved) if train else ())

    def backward(*args):
        """(*operands, *what ``forward`` kept, cotangent) -> the operands' cotangents, cuDNN's pullback."""
        ops, kept_by_forward, ct = args[:n], args[n:-1], args[-1]
        qs, ks, vs = swap(*ops[:3])
        cts = swap(ct.astype(np.float16))[0]
        if not masked:
            out, *saved = kept_by_forward
            return swap(*cudnn.backward((qs, ks, vs), out, saved, cts)[:3])
        lengths = ops[3]
        exact, out, *saved = kept_by_forward

        def cudnn_branch(qs, ks, vs, lengths, out, *residuals_and_ct):
            *residuals, ct16 = residuals_and_ct
            return cudnn.backward((qs, ks, vs, jnp.minimum(lengths, keys)), out, residuals, ct16)[:3]

        def xla_branch(qs, ks, vs, lengths, out, *residuals_and_ct):
            return jax.vjp(lambda *x: fallback(*x, lengths), qs, ks, vs)[1](residuals_and_ct[-1])
        return swap(*flat_cond(exact, cudnn_branch, xla_branch, qs, ks, vs, lengths, out, *saved, cts))

    def xla_vjp(*args):  # the blockwise formula's, reading no residual
        ops, ct = args[:n], args[-1]
        return jax.vjp(lambda *qkv: xla(*qkv, *ops[3:]), *ops[:3])[1](ct)

    def blank_forward(*ops):  # off CUDA: the blockwise formula, and zeros where cuDNN's route keeps residuals
        return (xla(*ops), *(jnp.zeros(b.shape, b.dtype) for b in jax.eval_shape(lambda *o: forward(o, True), *ops)[1:]))

    @jax.custom_jvp
    def trained(*ops):  # (output, *residuals): the forward pass whose residuals cuDNN's backward reads
        return route.run(blank_forward, lambda *ops: forward(ops, True), *ops)

    @trained.defjvp
    def trained_jvp(primals, tangents):
        outs = trained(*primals)
        return outs, (jax.jvp(xla, primals, tangents)[1], *map(tangent_zeros, outs[1:]))

    @jax.custom_jvp
    def cudnn_vjp(*args):
        return backward(*args)

    cudnn_vjp.defjvp(lambda primals, tangents: jax.jvp(xla_vjp, primals, tangents))

    @jax.custom_jvp
    def run(*ops):
        return route.run(xla, lambda *ops: forward(ops, False)[0], *ops)

    @run.defjvp
    def run_jvp(primals, tangents):
        out, *kept_by_forward = trained(*primals)
        res = (*primals, *kept_by_forward)

        def tangent(*args):  # (*res, tq, tk, tv) -> the output's tangent, the blockwise formula's
            return (jax.jvp(lambda *qkv: xla(*qkv, *args[3:n]), args[:3], args[len(res):])[1],)

        def transposed(*args):  # (*res, ct) -> (dq, dk, dv)
            return tuple(route.run(xla_vjp, cudnn_vjp, *args))
        return out, custom_transposed(tangent, transposed, res, tuple(tangents[:3]))[0]

    return run(*operands)


def _biased(x, bias, dt: DataType, half: bool):
    """Query, key or value plus its part of BiasTensor, rounded to the tensors' type (the page's graph)."""
    if bias is None:
        return x
    return store(load(x, half) + load(bias, half), dt)


def attention(q_in, k_in, v_in, sqk, skv, sqkv, bias, mask, rel, past_k, past_v, past_lengths, *,
              scale, mask_filter_value, heads, kv_heads, mask_type, half):
    """Both operators' formula: unpack, add the bias, join the past, attend, pack."""
    x = next(t for t in (q_in, sqk, sqkv) if t is not None)
    dt = DataType.from_dtype(x.dtype)
    if sqkv is not None:
        q, k, v = (_stacked(sqkv, i) for i in range(3))
    elif sqk is not None:
        q, k = _stacked(sqk, 0), _stacked(sqk, 1)
        v = _heads(_squeeze(v_in, 3), kv_heads)
    else:
        q = _heads(_squeeze(q_in, 3), heads)
        if skv is not None:
            k, v = _stacked(skv, 0), _stacked(skv, 1)
        elif k_in is not None:
            k, v = _heads(_squeeze(k_in, 3), kv_heads), _heads(_squeeze(v_in, 3), kv_heads)
        else:
            k = v = None
    B, H, S, Dh = q.shape
    if bias is not None:
        b = _squeeze(bias, 1)
        dv = (b.shape[0] - (H + kv_heads) * Dh) // kv_heads
        bq, bk, bv = (b[: H * Dh].reshape(H, 1, Dh), b[H * Dh: (H + kv_heads) * Dh].reshape(kv_heads, 1, Dh),
                      b[(H + kv_heads) * Dh:].reshape(kv_heads, 1, dv))
        q = _biased(q, bq, dt, half)
        if k is not None:
            k, v = _biased(k, bk, dt, half), _biased(v, bv, dt, half)
    pk, pv = _squeeze(past_k, 4), _squeeze(past_v, 4)
    lengths = None if past_lengths is None else _squeeze(past_lengths, 1)
    if pk is not None and k is not None and lengths is not None:
        # GroupQueryAttention's present: each batch's valid past, its new keys, then zeros
        n = k.shape[2]
        T = pk.shape[2] + n

        def place(past, new, length):
            full = jnp.concatenate([past, jnp.zeros(past.shape[:1] + (n,) + past.shape[2:], past.dtype)], axis=1)
            full = lax.dynamic_update_slice(full, new, (np.int32(0), length, np.int32(0)))
            j = jnp.arange(T, dtype=np.int32)[None, :, None]
            return jnp.where(j < length + n, full, jnp.zeros((), full.dtype))

        k, v = jax.vmap(place)(pk, k, lengths), jax.vmap(place)(pv, v, lengths)
    elif pk is not None:
        k = pk if k is None else jnp.concatenate([pk, k], axis=2)
        v = pv if v is None else jnp.concatenate([pv, v], axis=2)
    new_keys = k.shape[2] - (0 if pk is None else pk.shape[2])
    mask4 = _squeeze(mask, 4) if mask_type is MaskType.BOOLEAN else None
    length_mask = None
    if mask is not None and mask_type not in (MaskType.BOOLEAN, MaskType.KEY_QUERY_SEQUENCE_LENGTH_START_END):
        length_mask = _squeeze(mask, 2)
    qc, kc, vc = (load(t, True) for t in (q, k, v))  # FLOAT16 stays FLOAT16 for the products
    rel4 = None if rel is None else load(_squeeze(rel, 4), half)
    if mask is not None and mask_type is MaskType.KEY_QUERY_SEQUENCE_LENGTH_START_END:
        out = _packed(qc, kc, vc, _squeeze(mask, 1), scale=scale, filter_value=mask_filter_value, half=half)
    elif rel4 is None and mask is None and lengths is None and not half:
        out = _fused(qc, kc, vc, scale)
    elif rel4 is None and mask_type is MaskType.KEY_SEQUENCE_LENGTH and lengths is None and not half:
        out = _fused(qc, kc, vc, scale, length_mask[0], mask_filter_value)
    else:
        out = blockwise_attention(qc, kc, vc, scale=scale, filter_value=mask_filter_value, rel_bias=rel4,
                                  bool_mask=mask4, mask_type=mask_type, length_mask=length_mask,
                                  past_lengths=lengths, new_keys=new_keys, half=half)
    out = out.transpose(0, 2, 1, 3).reshape(B, S, -1)
    return store(out, dt), k, v


@operator(MULTIHEAD_ATTENTION)
def multihead_attention(query, key, value, stacked_query_key, stacked_key_value, stacked_query_key_value, bias, mask,
                        relative_position_bias, past_key, past_value, *, scale, mask_filter_value, head_count,
                        mask_type, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> q = np.array([[[1, 0]]], np.float32)                  # batch 1, one query, one head of size 2
        >>> k = np.array([[[1, 0], [0, 1]]], np.float32)          # two keys
        >>> v = np.array([[[10, 0], [0, 10]]], np.float32)
        >>> out, present_key, present_value = dmljax.multihead_attention(q, k, v, scale=np.log(3.0), head_count=1)
        >>> out.round(4), present_key.shape                      # softmax([ln 3, 0]) = [3/4, 1/4]
        (Array([[[7.5, 2.5]]], dtype=float32), (1, 1, 2, 2))
    """
    return attention(query, key, value, stacked_query_key, stacked_key_value, stacked_query_key_value, bias, mask,
                     relative_position_bias, past_key, past_value, None, scale=scale,
                     mask_filter_value=mask_filter_value, heads=head_count, kv_heads=head_count,
                     mask_type=mask_type, half=allow_half_precision_computation)


@operator(MULTIHEAD_ATTENTION1)
def multihead_attention1(query, key, value, stacked_query_key, stacked_key_value, stacked_query_key_value, bias,
                         mask, relative_position_bias, past_key, past_value, past_sequence_lengths, *, scale,
                         mask_filter_value, query_head_count, key_value_head_count, mask_type,
                         allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> q = np.ones((1, 1, 4), np.float32)                   # 2 query heads of size 2
        >>> k = np.ones((1, 3, 2), np.float32)                   # 1 key/value head, 3 keys
        >>> v = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
        >>> out, _, _ = dmljax.multihead_attention1(q, k, v, scale=1.0, query_head_count=2, key_value_head_count=1)
        >>> out                                                  # both heads share the values: their mean
        Array([[[2., 3., 2., 3.]]], dtype=float32)
    """
    return attention(query, key, value, stacked_query_key, stacked_key_value, stacked_query_key_value, bias, mask,
                     relative_position_bias, past_key, past_value, past_sequence_lengths, scale=scale,
                     mask_filter_value=mask_filter_value, heads=query_head_count, kv_heads=key_value_head_count,
                     mask_type=mask_type, half=allow_half_precision_computation)
