"""Float64 references of MULTIHEAD_ATTENTION and MULTIHEAD_ATTENTION1, the textbook formula per head:
Output = softmax(Scale Q K^T + RelativePositionBias + mask) V, K and V the past's rows then the new
ones, query head h reading key/value head h // (QueryHeadCount / KeyValueHeadCount). The mask adds
MaskFilterValue (ONNX Runtime's contrib MultiHeadAttention); with PastSequenceLengthsTensor, ONNX
Runtime's GroupQueryAttention: batch b's present holds its L_b valid past rows, the new rows, then
zeros, and query i (at position L_b + newRows - sequence + i) reads the keys up to its position.
KEY_QUERY_SEQUENCE_LENGTH_START_END is ONNX Runtime's packed layout: the rows of the {batch, sequence}
tensors are tokens one after another; sequence b's queries are the tokens queryStart[b] to
queryStart[b + 1] - 1 and its keys keyStart[b] to keyStart[b + 1] - 1, the first keyLength[b] of
them read, MaskFilterValue added to the others; no other key is in the row's softmax, and a token of
no sequence gives 0. The formula then runs on one batch of all the tokens.
The page's graph holds the biased query/key/value and, for FLOAT16, the softmax result in tensors
of the operator's type: those are rounded to it. The gradient is the formula's derivative, mapped
back through the layouts by the index each element was read from."""

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, read

B, S, SKV, P, DH = 2, 3, 4, 2, 4
INPUTS = ("query", "key", "value", "stacked_query_key", "stacked_key_value", "stacked_query_key_value", "bias",
          "mask", "relative_position_bias", "past_key", "past_value", "past_sequence_lengths")


def _mask_name(m):
    return str(getattr(m, "name", m)).upper().replace("DML_MULTIHEAD_ATTENTION_MASK_TYPE_", "")


def _heads(x, n):
    x = x.reshape(x.shape[-3:])
    b, l, hd = x.shape
    return x.reshape(b, l, n, hd // n).transpose(0, 2, 1, 3)


def _part(x, i):
    return x[:, :, :, i, :].transpose(0, 2, 1, 3)


def _gather(src, h, hkv, lengths):
    """(Q, K, V, Qbias, Kbias, Vbias, pastK, pastV) of the inputs ``src`` (arrays or index arrays, a dict by
    argument name), K and V the present's rows (None where a part is absent)."""
    q_in, k_in, v_in, sqk, skv, sqkv = (src.get(n) for n in INPUTS[:6])
    if sqkv is not None:
        q, k, v = (_part(sqkv, i) for i in range(3))
    elif sqk is not None:
        q, k, v = _part(sqk, 0), _part(sqk, 1), _heads(v_in, hkv)
    else:
        q = _heads(q_in, h)
        if skv is not None:
            k, v = _part(skv, 0), _part(skv, 1)
        elif k_in is not None:
            k, v = _heads(k_in, hkv), _heads(v_in, hkv)
        else:
            k = v = None
    return q, k, v


def _bias_parts(bias, h, hkv, dh, dv):
    b = bias.reshape(-1)
    return (b[: h * dh].reshape(1, h, 1, dh), b[h * dh: (h + hkv) * dh].reshape(1, hkv, 1, dh),
            b[(h + hkv) * dh:].reshape(1, hkv, 1, dv))


def _present(past, new, lengths, fill=0):
    """The present rows: the past then the new (concatenated), or per batch its valid past, the new, then
    ``fill`` (0 for values, -1 for index arrays: no input) with PastSequenceLengths."""
    if past is None:
        return new
    past = past.reshape(past.shape[-4:])
    if new is None:
        return past
    if lengths is None:
        return np.concatenate([past, new], axis=2)
    n = new.shape[2]
    out = np.full(past.shape[:2] + (past.shape[2] + n,) + past.shape[3:], fill, past.dtype)
    for b, length in enumerate(np.asarray(lengths).reshape(-1)):
        out[b, :, :length] = past[b, :, :length]
        out[b, :, length:length + n] = new[b]
    return out


def _tokens(x):
    """[B, H, L, D] as one batch of B * L tokens: [1, H, B * L, D]."""
    return x.transpose(1, 0, 2, 3).reshape(1, x.shape[1], x.shape[0] * x.shape[2], x.shape[3])


def _packed(kw):
    return _mask_name(kw.get("mask_type", "NONE")) == "KEY_QUERY_SEQUENCE_LENGTH_START_END"


def _heads_of(kw):
    h = kw.get("head_count") or kw.get("query_head_count")
    return h, kw.get("head_count") or kw.get("key_value_head_count")


def _setup(args, kw):
    """Everything the formula and its derivative need, with index arrays for the gradient's map."""
    h, hkv = _heads_of(kw)
    given = {n: a for n, a in zip(INPUTS, args) if a is not None}
    floats = [n for n in given if n not in ("mask", "past_sequence_lengths")]
    dt = given["query" if "query" in given else
               ("stacked_query_key" if "stacked_query_key" in given else "stacked_query_key_value")].dtype
    offsets, total = {}, 0
    for n in floats:
        offsets[n] = total
        total += given[n].size
    vals = {n: read(given[n]) for n in floats}
    idx = {n: np.arange(given[n].size).reshape(given[n].shape) + offsets[n] for n in floats}
    lengths = given.get("past_sequence_lengths")
    lengths = None if lengths is None else np.asarray(lengths).reshape(-1)

    def rnd(x):
        return read(np.asarray(x).astype(dt))

    q, k, v = _gather(vals, h, hkv, lengths)
    iq, ik, iv = _gather(idx, h, hkv, lengths)
    dh = q.shape[3]
    dv = v.shape[3] if v is not None else given["past_value"].shape[-1]
    ib = None
    if "bias" in given:
        bq, bk, bv = _bias_parts(vals["bias"], h, hkv, dh, dv)
        ib = _bias_parts(idx["bias"], h, hkv, dh, dv)
        q = rnd(q + bq)
        if k is not None:
            k, v = rnd(k + bk), rnd(v + bv)
    pk, pv = vals.get("past_key"), vals.get("past_value")
    K, V = _present(pk, k, lengths), _present(pv, v, lengths)
    # index arrays of the present (-1: a zero row) and of the new rows' bias
    IK = _present(idx.get("past_key"), None if ik is None else np.broadcast_to(ik, k.shape), lengths, -1)
    IV = _present(idx.get("past_value"), None if iv is None else np.broadcast_to(iv, v.shape), lengths, -1)
    batch, present = q.shape[0], (K, V)
    new = 0 if k is None else k.shape[2]
    if _packed(kw):  # one batch of every token (no past: the operator refuses it with this mask)
        iq = np.broadcast_to(iq, q.shape)
        q, K, V, iq, IK, IV = (_tokens(x) for x in (q, K, V, iq, IK, IV))
        new = K.shape[2]
    return dict(h=h, hkv=hkv, dt=dt, q=q, K=K, V=V, iq=iq, IK=IK, IV=IV, ib=ib, given=given, total=total,
                offsets=offsets, lengths=lengths, new=new, dh=dh, dv=dv, batch=batch, present=present)


def _additive(st, kw):
    """RelativePositionBias + the mask's MaskFilterValue, [B, H, S, T]."""
    g, q, K = st["given"], st["q"], st["K"]
    b, h, s, _ = q.shape
    t = K.shape[2]
    add = np.zeros((b, h, s, t))
    if "relative_position_bias" in g:
        add += read(g["relative_position_bias"]).reshape(b, h, s, t)
    fv = c_float(kw.get("mask_filter_value", -10000.0))
    masked = np.zeros((b, h, s, t), bool)
    j = np.arange(t)
    m = g.get("mask")
    kind = _mask_name(kw.get("mask_type", "NONE"))
    if kind == "KEY_QUERY_SEQUENCE_LENGTH_START_END":
        nb = st["batch"]
        m = np.asarray(m).reshape(-1)
        key_length, q_start, k_start = m[:nb], m[nb:2 * nb + 1], m[2 * nb + 1:]
        out = np.full((s, t), -np.inf)  # keys of no sequence of the row: out of its softmax
        for seq in range(nb):
            rows = np.arange(max(q_start[seq], 0), min(q_start[seq + 1], s))
            keys = np.arange(max(k_start[seq], 0), min(k_start[seq + 1], t))
            out[np.ix_(rows, keys)] = np.where(keys - k_start[seq] >= key_length[seq], fv, 0.0)[None, :]
        return add + out[None, None]
    if kind == "BOOLEAN":
        masked |= np.asarray(m).reshape(b, h, s, t) == 0
    elif kind in ("KEY_SEQUENCE_LENGTH", "KEY_QUERY_SEQUENCE_LENGTH_START_END"):
        length = np.asarray(m).reshape(-1)[:b]
        masked |= (j[None, :] >= length[:, None])[:, None, None, :]
    elif kind == "KEY_SEQUENCE_END_START":
        end, start = np.asarray(m).reshape(2, b)
        masked |= ((j[None, :] >= end[:, None]) | (j[None, :] < start[:, None]))[:, None, None, :]
    if st["lengths"] is not None:
        pos = st["lengths"][:, None] + st["new"] - s + np.arange(s)[None, :]
        masked |= ((j[None, None, :] > pos[:, :, None])
                   | (j[None, None, :] >= (st["lengths"] + st["new"])[:, None, None]))[:, None, :, :]
    return add + np.where(masked, fv, 0.0)


def _forward(st, kw):
    q, K, V, hkv = st["q"], st["K"], st["V"], st["hkv"]
    g = q.shape[1] // hkv
    Kq, Vq = np.repeat(K, g, axis=1), np.repeat(V, g, axis=1)  # query head n reads kv head n // g
    sc = c_float(kw["scale"]) * np.einsum("bhsd,bhtd->bhst", q, Kq) + _additive(st, kw)
    out = np.isneginf(sc)  # keys out of a packed row's softmax; a row of no sequence gives 0
    top = np.where(out.all(-1, keepdims=True), 0.0, sc.max(-1, keepdims=True))
    e = np.where(out, 0.0, np.exp(np.where(out, 0.0, sc - top)))
    total = e.sum(-1, keepdims=True)
    p = e / np.where(total > 0, total, 1.0)
    pr = read(p.astype(np.float16)) if st["dt"] == np.float16 else p
    return p, pr, Kq, Vq, np.einsum("bhst,bhtd->bhsd", pr, Vq)


def _pack(o, batch):
    b, h, s, d = o.shape
    return o.transpose(0, 2, 1, 3).reshape(batch, b * s // batch, h * d)


def attention(*args, scale, mask_filter_value=-10000.0, head_count=None, query_head_count=None,
              key_value_head_count=None, mask_type="NONE", half=False):
    kw = dict(scale=scale, mask_filter_value=mask_filter_value, head_count=head_count,
              query_head_count=query_head_count, key_value_head_count=key_value_head_count, mask_type=mask_type)
    st = _setup(args, kw)
    *_, o = _forward(st, kw)
    return [(_pack(o, st["batch"]), *st["present"])]


def _magnitude(*args, scale, **kw):
    kw["scale"] = scale
    st = _setup(args, kw)
    p, pr, Kq, Vq, o = _forward(st, kw)
    a = abs(c_float(scale)) * np.einsum("bhsd,bhtd->bhst", np.abs(st["q"]), np.abs(Kq)) + 1.0
    if "relative_position_bias" in st["given"]:
        a = a + np.abs(read(st["given"]["relative_position_bias"])).reshape(a.shape)
    spread = np.abs(Vq[:, :, None, :, :] - o[:, :, :, None, :])  # |V_j - O_i|
    m = np.einsum("bhst,bhtd->bhsd", p, np.abs(Vq)) + np.einsum("bhst,bhstd->bhsd", p * a, spread)
    return _pack(m, st["batch"]), np.abs(st["present"][0]), np.abs(st["present"][1])


def _scatter(st, parts):
    """Per input (argument order), the gradient summed from (index array, gradient) ``parts``."""
    flat = np.zeros(st["total"] + 1)
    for index, grad in parts:
        if index is None:
            continue
        index = np.broadcast_to(index, grad.shape)
        keep = index >= 0
        np.add.at(flat, index[keep], grad[keep])
    out = []
    for n in INPUTS:
        a = st["given"].get(n)
        if a is None or n not in st["offsets"]:
            out.append(None)
        else:
            o = st["offsets"][n]
            out.append(flat[o:o + a.size].reshape(a.shape))
    return out


def _backward(dy, args, kw, absolute=False):
    st = _setup(args, kw)
    p, pr, Kq, Vq, o = _forward(st, kw)
    hkv, scale = st["hkv"], c_float(kw["scale"])
    b, h, s, _ = st["q"].shape
    g = h // hkv
    f = np.abs if absolute else (lambda x: x)
    do = f(np.asarray(dy, np.float64)).reshape(b, s, h, -1).transpose(0, 2, 1, 3)  # a packed call's tokens too
    q, vq, kq = f(st["q"]), f(Vq), f(Kq)
    dv = np.einsum("bhst,bhsd->bhtd", pr, do)
    dp = np.einsum("bhsd,bhtd->bhst", do, vq)
    if absolute:
        ds = p * (dp + (p * dp).sum(-1, keepdims=True)) * (1.0 + abs(scale) * np.einsum("bhsd,bhtd->bhst", q, kq))
    else:
        ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = abs(scale) * np.einsum("bhst,bhtd->bhsd", ds, kq) if absolute else scale * np.einsum("bhst,bhtd->bhsd", ds, kq)
    dk = (abs(scale) if absolute else scale) * np.einsum("bhst,bhsd->bhtd", ds, q)
    t = Kq.shape[2]
    dk = dk.reshape(b, hkv, g, t, -1).sum(2)
    dv = dv.reshape(b, hkv, g, t, -1).sum(2)
    parts = [(st["iq"], dq), (st["IK"], dk), (st["IV"], dv)]
    if st["ib"] is not None:
        ibq, ibk, ibv = st["ib"]
        parts.append((ibq, dq))
        n = st["new"]
        if n:
            parts += [(ibk, dk[:, :, -n:] if st["lengths"] is None else _new_rows(dk, st)),
                      (ibv, dv[:, :, -n:] if st["lengths"] is None else _new_rows(dv, st))]
    out = _scatter(st, parts)
    if "relative_position_bias" in st["given"]:
        i = INPUTS.index("relative_position_bias")
        out[i] = ds.reshape(st["given"]["relative_position_bias"].shape)
    return out[: len(args)]


def _new_rows(d, st):
    n = st["new"]
    return np.stack([d[b, :, length:length + n] for b, length in enumerate(st["lengths"])])


def _grad(dy, *args, scale, **kw):
    kw["scale"] = scale
    return _backward(dy, args, kw)


def _grad_magnitude(dy, *args, scale, **kw):
    kw["scale"] = scale
    return _backward(dy, args, kw, absolute=True)


# ------------------------------------------------------------------------------------------ inputs
def _inputs(rng, types, shape, layout="separate", bias=False, rel=False, past=False, lengths=False,
            heads=2, kv_heads=2, dv=DH, mask_type="NONE", **_):
    dt = types["QueryTensor"]
    lead = (1,) * (len(shape) - 3)  # the case's rank: leading 1s

    def val(sizes):
        return (rng.standard_normal(sizes)).astype(dt.dtype)

    out = dict.fromkeys(INPUTS)
    if layout == "stacked_qkv":
        out["stacked_query_key_value"] = val((B, S, heads, 3, DH))
        skv = S
    elif layout == "stacked_qk":
        out["stacked_query_key"] = val((B, S, heads, 2, DH))
        out["value"] = val(lead + (B, S, kv_heads * dv))
        skv = S
    else:
        out["query"] = val(lead + (B, S, heads * DH))
        skv = SKV
        if layout == "stacked_kv":
            out["stacked_key_value"] = val((B, SKV, kv_heads, 2, DH))
        elif layout == "separate":
            out["key"] = val(lead + (B, SKV, kv_heads * DH))
            out["value"] = val(lead + (B, SKV, kv_heads * dv))
        else:  # "past_only": the past holds every key and value
            skv = 0
    vdim = DH if layout in ("stacked_qkv", "stacked_kv") else dv
    p = P if past or layout == "past_only" else 0
    plead = (1,) * max(0, len(shape) - 4)  # the past: 4 dimensions, or 5 with a leading 1
    if p:
        out["past_key"] = val(plead + (B, kv_heads, p, DH))
        out["past_value"] = val(plead + (B, kv_heads, p, vdim))
    t = p + skv
    if bias:
        out["bias"] = val(lead + ((heads + kv_heads) * DH + kv_heads * vdim,))
    if rel:
        out["relative_position_bias"] = val((B, heads, S, t))
    kind = _mask_name(mask_type)
    i32 = np.int32
    if kind == "BOOLEAN":
        m = (rng.random((B, heads, S, t)) < 0.7).astype(i32)
        m[..., 0] = 1  # no row wholly masked (the edge tests take those)
        out["mask"] = m
    elif kind == "KEY_SEQUENCE_LENGTH":
        out["mask"] = rng.integers(2, t + 1, (1, B)).astype(i32)  # two keys at least: a query moves the row
    elif kind == "KEY_SEQUENCE_END_START":
        start = rng.integers(0, t - 1, B)
        out["mask"] = np.stack([rng.integers(start + 2, t + 1), start]).astype(i32)
    elif kind == "KEY_QUERY_SEQUENCE_LENGTH_START_END":  # sequences of a packed layout, not at the batch rows
        def starts(count, most):
            lengths = rng.integers(count, most + 1, B)
            first = rng.integers(0, B * most - lengths.sum() + 1)
            return first + np.concatenate([[0], np.cumsum(lengths)]), lengths
        q_start, _ = starts(1, S)
        k_start, k_count = starts(2, t)
        key_length = rng.integers(np.minimum(2, k_count), k_count + 1)  # two keys at least: a query moves the row
        out["mask"] = np.concatenate([key_length, q_start, k_start]).astype(i32)
    if lengths:
        out["past_sequence_lengths"] = rng.integers(0, p + 1, B).astype(i32)
    n = len(INPUTS) if "PastSequenceLengthsTensor" in types else len(INPUTS) - 1
    return [out[k] for k in INPUTS[:n]]


def _sets(gqa: bool):
    heads = ({"query_head_count": 4, "key_value_head_count": 2} if gqa else {"head_count": 2})
    same = {"query_head_count": 2, "key_value_head_count": 2} if gqa else heads

    def a(inputs, **dml):
        hd = same if inputs.get("layout", "separate") in ("stacked_qkv", "stacked_qk", "stacked_kv") and gqa else heads
        kv = hd.get("key_value_head_count", hd.get("head_count"))
        q = hd.get("query_head_count", hd.get("head_count"))
        return Attrs({"scale": 0.5, **hd, **dml}, inputs={"heads": q, "kv_heads": kv, **inputs})

    sets = [
        a({}),
        a({"layout": "stacked_qkv", "bias": True}, mask_type="BOOLEAN"),
        a({"layout": "stacked_qk", "rel": True}, mask_type="KEY_SEQUENCE_LENGTH", mask_filter_value=-100.0),
        a({"layout": "stacked_kv", "past": True}, mask_type="KEY_SEQUENCE_END_START", scale=0.25),
        a({"bias": True, "dv": 3}, mask_type="KEY_QUERY_SEQUENCE_LENGTH_START_END"),
        a({"past": True, "bias": True, "rel": True, "dv": 3}, mask_type="KEY_SEQUENCE_LENGTH"),
        a({"layout": "past_only", "rel": True}, mask_type="BOOLEAN"),
        a({"past": True, "bias": True}, mask_type="BOOLEAN", scale=1.0),
    ]
    if gqa:
        sets.append(a({"past": True, "lengths": True, "bias": True}))
        sets.append(a({"lengths": True}))
    return tuple(sets)


def _ref(gqa):
    return Reference(attention, attrs=_sets(gqa), make_inputs=_inputs, magnitude=_magnitude, grad=_grad,
                     grad_magnitude=_grad_magnitude, pointwise=False, accumulates=True, null_inputs=True)


REFERENCES = {
    "DML_OPERATOR_MULTIHEAD_ATTENTION": _ref(False),
    "DML_OPERATOR_MULTIHEAD_ATTENTION1": _ref(True),
}
