"""Float64 references of RNN, LSTM and GRU: a step-by-step loop per batch entry and direction,
written from ONNX's equations (the DirectML pages' equations are images), with ONNX Runtime's rules
for sequence lengths (zeros past each sequence's end; the last state is the last step run's; a
length of 0 gives zero states). Activations are their own references (tests/reference/activation).
The gradient is the reference's derivative taken numerically in float64 (central differences,
step 1e-6 relative), which is accurate to about 1e-9: far inside any FLOAT32 budget."""

import hashlib

import numpy as np

from tests import tiers
from tests.reference.record import Attrs, Reference
from tests.reference.rules import read

_T, _B, _I, _H = 3, 2, 3, 4
_GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}
_DEFAULTS = {"RNN": ("TANH",), "LSTM": ("SIGMOID", "TANH", "TANH"), "GRU": ("SIGMOID", "TANH")}


def _name(a):
    """An activation desc's short name and its members (a FusedActivation, a name, or a dict)."""
    if isinstance(a, str):
        return a.upper().replace("DML_OPERATOR_", "").replace("ACTIVATION_", ""), {}
    if isinstance(a, dict):
        t = a["Type"]
        members = a.get("Desc", {k: v for k, v in a.items() if k != "Type"}) or {}
        return _name(t)[0], dict(members)
    return _name(a.type)[0], dict(a.attrs)


def _f32(v):
    return float(np.float32(v))


def activation(a, x):
    """The activation's definition in float64 (each activation page's formula)."""
    kind, m = _name(a)
    m = {k.lower(): v for k, v in m.items()}
    al, be = m.get("alpha"), m.get("beta")
    if kind == "SIGMOID":
        return 1.0 / (1.0 + np.exp(-x))
    if kind == "TANH":
        return np.tanh(x)
    if kind == "RELU":
        return np.where(x > 0, x, 0.0)
    if kind == "SCALED_TANH":
        return _f32(1.0 if al is None else al) * np.tanh(_f32(0.5 if be is None else be) * x)
    if kind == "LINEAR":
        return _f32(al) * x + _f32(be)
    if kind == "LEAKY_RELU":
        return np.where(x >= 0, x, _f32(0.01 if al is None else al) * x)
    if kind == "THRESHOLDED_RELU":
        return np.where(x > _f32(1.0 if al is None else al), x, 0.0)
    if kind == "HARD_SIGMOID":
        return np.clip(_f32(0.2 if al is None else al) * x + _f32(0.5 if be is None else be), 0.0, 1.0)
    if kind == "ELU":
        return np.where(x >= 0, x, _f32(1.0 if al is None else al) * np.expm1(np.minimum(x, 0)))
    if kind == "SOFTSIGN":
        return x / (1 + np.abs(x))
    if kind == "SOFTPLUS":
        return np.logaddexp(0.0, x)
    raise NotImplementedError(kind)


def _dirs(direction):
    d = str(direction).upper()
    return ("BACKWARD",) if d.endswith("BACKWARD") or d == "1" else (
        ("FORWARD", "BACKWARD") if d.endswith("BIDIRECTIONAL") or d == "2" else ("FORWARD",))


def network(short, x, w, r, b=None, h0=None, c0=None, lengths=None, p=None, activation_descs=None,
            direction="FORWARD", clip_threshold=0.0, use_clip_threshold=False, couple_input_forget=False,
            linear_before_reset=False):
    """(Y {seq, dirs, batch, hidden}, Y_h {1, dirs, batch, hidden}[, Y_c]) in float64."""
    x, w, r = read(x)[0], read(w)[0], read(r)[0]
    seq, batch, _ = x.shape
    dirs = _dirs(direction)
    g = _GATES[short]
    hid = w.shape[1] // g
    n = len(_DEFAULTS[short])
    descs = list(activation_descs) if activation_descs is not None else list(_DEFAULTS[short]) * len(dirs)
    lens = np.full(batch, seq) if lengths is None else np.minimum(np.asarray(lengths).reshape(-1).astype(np.int64), seq)
    clip = _f32(clip_threshold) if use_clip_threshold else None
    y = np.zeros((seq, len(dirs), batch, hid))
    yh = np.zeros((1, len(dirs), batch, hid))
    yc = np.zeros((1, len(dirs), batch, hid))
    for d, dname in enumerate(dirs):
        f, gg, hh = (descs[d * n:(d + 1) * n] + [None, None])[:3]

        def act(a, v):
            if clip is not None:
                v = np.minimum(np.maximum(v, -clip), clip)
            return activation(a, v)
        W, R = w[d], r[d]
        Wb = np.zeros(g * hid) if b is None else read(b)[0, 0, d, :g * hid]
        Rb = np.zeros(g * hid) if b is None else read(b)[0, 0, d, g * hid:]
        P = np.zeros(3 * hid) if p is None else read(p)[0, 0, d]
        for n_ in range(batch):
            H = np.zeros(hid) if h0 is None else read(h0)[0, d, n_].copy()
            C = np.zeros(hid) if c0 is None else read(c0)[0, d, n_].copy()
            L = int(lens[n_])
            steps = range(L) if dname == "FORWARD" else range(L - 1, -1, -1)
            for t in steps:
                xt = x[t, n_]
                if short == "RNN":
                    H = act(f, W @ xt + R @ H + Wb + Rb)
                elif short == "GRU":
                    sl = [slice(k * hid, (k + 1) * hid) for k in range(3)]
                    z = act(f, W[sl[0]] @ xt + R[sl[0]] @ H + Wb[sl[0]] + Rb[sl[0]])
                    rr = act(f, W[sl[1]] @ xt + R[sl[1]] @ H + Wb[sl[1]] + Rb[sl[1]])
                    if linear_before_reset:
                        ht = act(gg, W[sl[2]] @ xt + rr * (R[sl[2]] @ H + Rb[sl[2]]) + Wb[sl[2]])
                    else:
                        ht = act(gg, W[sl[2]] @ xt + R[sl[2]] @ (rr * H) + Rb[sl[2]] + Wb[sl[2]])
                    H = (1 - z) * ht + z * H
                else:
                    sl = [slice(k * hid, (k + 1) * hid) for k in range(4)]  # i, o, f, c
                    pi, po, pf = P[:hid], P[hid:2 * hid], P[2 * hid:]
                    pre = [W[s] @ xt + R[s] @ H + Wb[s] + Rb[s] for s in sl]
                    i = act(f, pre[0] + pi * C)
                    fg = 1 - i if couple_input_forget else act(f, pre[2] + pf * C)
                    c_ = act(gg, pre[3])
                    C = fg * C + i * c_
                    o = act(f, pre[1] + po * C)
                    H = o * act(hh, C)
                y[t, d, n_] = H
            if L > 0:
                yh[0, d, n_] = H
                yc[0, d, n_] = C
    return (y, yh, yc) if short == "LSTM" else (y, yh)


def _call(short, args, kw):
    """The network on the operator's inputs in the page's order (RNN and GRU have no CellMemInit
    and no Peephole)."""
    if short == "LSTM":
        return network(short, *args, **kw)
    x, w, r, b, h0, lengths = (list(args) + [None] * 6)[:6]
    return network(short, x, w, r, b, h0, None, lengths, None, **kw)


def _fn(short):
    def fn(*args, **kw):
        return [_call(short, args, kw)]
    return fn


def numeric_grad(fn, dy, args, step=1e-6):
    """d(sum(dy * fn(*args)[0]))/d(each float input) by float64 central differences."""
    out = []
    for k, a in enumerate(args):
        if a is None or not np.issubdtype(np.asarray(a).dtype, np.floating):
            out.append(None)
            continue
        base = read(a)
        g = np.zeros(base.shape)
        for idx in np.ndindex(base.shape):
            h = step * max(1.0, abs(base[idx]))
            vals = []
            for s in (h, -h):
                moved = base.copy()
                moved[idx] += s
                new = list(args)
                new[k] = moved
                vals.append(np.sum(np.asarray(dy, np.float64) * fn(*new)[0]))
            g[idx] = (vals[0] - vals[1]) / (2 * h)
        out.append(g)
    return out


_GRADS: dict = {}
"""The last few numeric gradients, by their operator, attributes and the bytes of dY and the inputs:
a test that asks for the gradient and then for its magnitude (``_grad_magnitude``) takes the
central differences once."""


def _digest(a):
    if a is None:
        return None
    a = np.ascontiguousarray(a)
    return a.dtype.str, a.shape, hashlib.sha1(a.tobytes()).hexdigest()


def _network_grad(short, dy, args, kw):
    key = (short, repr(sorted(kw.items())), _digest(np.asarray(dy)), *map(_digest, args))
    if key not in _GRADS:
        if len(_GRADS) >= 4:
            _GRADS.clear()
        _GRADS[key] = numeric_grad(lambda *a: _call(short, a, kw), dy, args)
    return _GRADS[key]


def _grad(short):
    def grad(dy, *args, **kw):
        return _network_grad(short, dy, args, kw)
    return grad


def _magnitude(short):
    """The largest |value| of each output (at least 1): the budget is in ULP of it, since an
    error carried through the steps is relative to the states' scale, not to each element."""
    def size(*args, **kw):
        outs = _call(short, args, kw)
        return tuple(np.full(o.shape, max(1.0, float(np.max(np.abs(o))))) for o in outs)
    return size


def _grad_magnitude(short):
    def size(dy, *args, **kw):
        gs = _network_grad(short, dy, args, kw)
        return [None if g_ is None else np.full(g_.shape, max(1.0, float(np.max(np.abs(g_))))) for g_ in gs]
    return size


def make_inputs(short):
    """X, W, R, B, initial states, sequence lengths (and peepholes) of seq_length 3, batch 2,
    input 3, hidden 4, for the case's direction; weights scaled so that the gates are neither
    saturated nor linear."""
    def inputs(rng, types, shape, direction="FORWARD", **_):
        dt = types["InputTensor"].dtype
        d = len(_dirs(direction))
        g = _GATES[short]

        def u(*s, scale=0.5):
            return (rng.uniform(-1, 1, s) * scale).astype(dt)
        args = [u(1, _T, _B, _I, scale=1.0), u(1, d, g * _H, _I), u(1, d, g * _H, _H), u(1, 1, d, 2 * g * _H),
                u(1, d, _B, _H)]
        if short == "LSTM":
            args.append(u(1, d, _B, _H))
        args.append(np.array([_T, _T - 1][:_B], np.uint32).reshape(1, 1, 1, _B))
        if short == "LSTM":
            args.append(u(1, 1, d, 3 * _H))
        return args
    return inputs


def _sets(short):
    """Each direction, with and without sequence lengths' effect (the inputs give lengths 3 and 2),
    activations with attributes, and each operator's options."""
    base = [Attrs({}), Attrs({"direction": "BACKWARD"}), Attrs({"direction": "BIDIRECTIONAL"})]
    if short == "RNN":
        base += [Attrs({"activation_descs": [{"Type": "ACTIVATION_SCALED_TANH", "Desc": {"Alpha": 1.5, "Beta": 0.75}}]}),
                 Attrs({"direction": "BIDIRECTIONAL",
                        "activation_descs": ["ACTIVATION_SOFTSIGN", {"Type": "ACTIVATION_LINEAR",
                                                                     "Desc": {"Alpha": 0.5, "Beta": 0.25}}]})]
    if short == "LSTM":
        base += [Attrs({"use_clip_threshold": True, "clip_threshold": 0.4}),
                 Attrs({"couple_input_forget": True, "direction": "BIDIRECTIONAL"}),
                 Attrs({"activation_descs": [{"Type": "ACTIVATION_HARD_SIGMOID", "Desc": {"Alpha": 0.25, "Beta": 0.5}},
                                             {"Type": "ACTIVATION_SCALED_TANH", "Desc": {"Alpha": 1.25, "Beta": 0.5}},
                                             "ACTIVATION_SOFTSIGN"]})]
    if short == "GRU":
        base += [Attrs({"linear_before_reset": True}),
                 Attrs({"linear_before_reset": True, "direction": "BIDIRECTIONAL",
                        "activation_descs": ["ACTIVATION_SIGMOID", "ACTIVATION_TANH",
                                             {"Type": "ACTIVATION_HARD_SIGMOID", "Desc": {"Alpha": 0.3, "Beta": 0.5}},
                                             "ACTIVATION_SOFTSIGN"]})]
    return tuple(base)


_FAST = {
    "RNN": Attrs({"direction": "BIDIRECTIONAL",
                  "activation_descs": ["ACTIVATION_SOFTSIGN", {"Type": "ACTIVATION_SCALED_TANH",
                                                               "Desc": {"Alpha": 1.5, "Beta": 0.75}}]}),
    "LSTM": Attrs({"direction": "BIDIRECTIONAL", "use_clip_threshold": True, "clip_threshold": 0.4,
                   "activation_descs": ["ACTIVATION_SIGMOID", "ACTIVATION_TANH", "ACTIVATION_TANH",
                                        {"Type": "ACTIVATION_HARD_SIGMOID", "Desc": {"Alpha": 0.25, "Beta": 0.5}},
                                        "ACTIVATION_SOFTSIGN", "ACTIVATION_TANH"]}),
    "GRU": Attrs({"direction": "BIDIRECTIONAL", "linear_before_reset": True}),
}
"""The fast tier's one set an operator (each compile of a scan costs about a second on two
cores): both directions at once, with different activations and the options that change the
step; the slow tier runs every set."""


def _reference(short):
    return Reference(_fn(short), attrs=(_FAST[short],) + (_sets(short) if tiers.slow() else ()), make_inputs=make_inputs(short), magnitude=_magnitude(short),
                     grad=_grad(short), grad_magnitude=_grad_magnitude(short), pointwise=False, accumulates=True)


REFERENCES = {
    "DML_OPERATOR_RNN": _reference("RNN"),
    "DML_OPERATOR_LSTM": _reference("LSTM"),
    "DML_OPERATOR_GRU": _reference("GRU"),
}
