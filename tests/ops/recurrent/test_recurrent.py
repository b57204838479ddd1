"""RNN, LSTM and GRU: ONNX's backend node tests mapped the way ONNX Runtime's DirectML provider maps
them, the page's constraints and their messages, sequence lengths, forward against reverse mode,
the memory of reverse mode, and (slow tier) every option combination against the float64
reference and finite differences."""

import contextlib
import functools
import importlib
import io
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.ad_checkpoint import print_saved_residuals
from jax.test_util import check_grads

import dmljax
from dmljax._src.ops.recurrent import recurrent as recurrent_module
from tests import tiers
from tests.reference.recurrent import recurrent as ref

OPS = {"RNN": dmljax.rnn, "LSTM": dmljax.lstm, "GRU": dmljax.gru}
GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}
ONNX_ACTIVATIONS = {  # ONNX's activation names -> DirectML's activation operators
    "Relu": "ACTIVATION_RELU", "Tanh": "ACTIVATION_TANH", "Sigmoid": "ACTIVATION_SIGMOID",
    "Affine": "ACTIVATION_LINEAR", "LeakyRelu": "ACTIVATION_LEAKY_RELU", "ThresholdedRelu": "ACTIVATION_THRESHOLDED_RELU",
    "ScaledTanh": "ACTIVATION_SCALED_TANH", "HardSigmoid": "ACTIVATION_HARD_SIGMOID", "Elu": "ACTIVATION_ELU",
    "Softsign": "ACTIVATION_SOFTSIGN", "Softplus": "ACTIVATION_SOFTPLUS",
}


# ------------------------------------------------------------------------------------ ONNX node tests
@functools.lru_cache(maxsize=None)
def _onnx_cases():
    """ONNX's node tests of RNN, LSTM and GRU: importing their modules registers them."""
    node = pytest.importorskip("onnx.backend.test.case.node")
    for m in ("rnn", "lstm", "gru"):
        importlib.import_module(f"onnx.backend.test.case.node.{m}")
    return {c.name: c for c in node._NodeTestCases if c.model.graph.node[0].op_type in OPS}


ONNX_NODE_TESTS = (
    "test_simple_rnn_defaults", "test_simple_rnn_with_initial_bias", "test_rnn_seq_length", "test_simple_rnn_batchwise",
    "test_simple_rnn_reverse", "test_simple_rnn_bidirectional", "test_lstm_defaults", "test_lstm_with_initial_bias",
    "test_lstm_with_peepholes", "test_lstm_batchwise", "test_lstm_reverse", "test_lstm_bidirectional",
    "test_gru_defaults", "test_gru_with_initial_bias", "test_gru_seq_length", "test_gru_batchwise", "test_gru_reverse",
    "test_gru_bidirectional",
)


def onnx_to_dml(node, values):
    """An ONNX RNN/LSTM/GRU node and its inputs as DirectML's call, as ONNX Runtime's DirectML
    provider maps it: 3-D tensors get a leading 1 ({1, seq, batch, input}; B {1, 1, dirs, 2 G
    hidden} holds [Wb, Rb] as ONNX's B does), sequence_lens becomes UINT32 {1, 1, 1, batch},
    activations go by name with activation_alpha/activation_beta in order, clip sets
    UseClipThreshold, input_forget CoupleInputForget. ``layout`` 1 (batch-major X and Y) is a
    transposed view, which a DirectML desc expresses by its strides. Returns (function, args,
    kwargs, layout)."""
    attrs = {a.name: onnx_attr(a) for a in node.attribute}
    layout = attrs.get("layout", 0)
    x = dict(zip(node.input, values))
    X = x["X"] if layout == 0 else np.swapaxes(x["X"], 0, 1)

    def opt(name, lead):
        v = x.get(name)
        return None if v is None or name not in node.input else v.reshape(lead + v.shape)
    hidden = opt("initial_h", (1,))
    if hidden is not None and layout:
        hidden = np.swapaxes(hidden, 1, 2)
    args = [X[None], x["W"][None], x["R"][None], opt("B", (1, 1)), hidden]
    if node.op_type == "LSTM":
        c = opt("initial_c", (1,))
        args.append(np.swapaxes(c, 1, 2) if c is not None and layout else c)
    lens = x.get("sequence_lens")
    args.append(None if lens is None else lens.astype(np.uint32).reshape(1, 1, 1, -1))
    if node.op_type == "LSTM":
        args.append(opt("P", (1, 1)))
    kwargs = {"direction": {"forward": "FORWARD", "reverse": "BACKWARD",
                            "bidirectional": "BIDIRECTIONAL"}[attrs.get("direction", "forward")]}
    if "activations" in attrs:
        alphas, betas = list(attrs.get("activation_alpha", [])), list(attrs.get("activation_beta", []))
        descs = []
        for name in attrs["activations"]:
            members = {}
            if name in ("Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu") and alphas:
                members["Alpha"] = alphas.pop(0)
            if name in ("Affine", "ScaledTanh", "HardSigmoid") and betas:
                members["Beta"] = betas.pop(0)
            descs.append({"Type": ONNX_ACTIVATIONS[name], "Desc": members})
        kwargs["activation_descs"] = descs
    if "clip" in attrs:
        kwargs.update(use_clip_threshold=True, clip_threshold=attrs["clip"])
    if attrs.get("input_forget"):
        kwargs["couple_input_forget"] = True
    if attrs.get("linear_before_reset"):
        kwargs["linear_before_reset"] = True
    return OPS[node.op_type], args, kwargs, layout


def onnx_attr(a):
    import onnx
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode()
    return [e.decode() if isinstance(e, bytes) else e for e in v] if isinstance(v, list) else v


def test_onnx_node_tests_are_the_ones_listed():
    assert set(_onnx_cases()) == set(ONNX_NODE_TESTS)  # a new node test: list it (and map it)


@pytest.mark.parametrize("name", tiers.fast_sample(list(ONNX_NODE_TESTS), keep=3, key="recurrent-onnx"))
def test_onnx_node_tests(name):
    # (about a second each on two cores: three in the fast tier, all of them in the slow one)
    case = _onnx_cases()[name]
    node = case.model.graph.node[0]
    (inputs, outputs), = case.data_sets
    op, args, kwargs, layout = onnx_to_dml(node, [np.asarray(v) for v in inputs])
    got = op(*args, **kwargs)
    present = [o for o in node.output]
    for k, (oname, want) in enumerate(zip([o for o in present if o], outputs)):
        index = present.index(oname)
        g = np.asarray(got[index])
        if index == 0:  # Y {seq, dirs, batch, hidden}; layout 1: {batch, seq, dirs, hidden}
            g = np.transpose(g, (2, 0, 1, 3)) if layout else g
        else:  # Y_h, Y_c {dirs, batch, hidden}; layout 1: {batch, dirs, hidden}
            g = np.swapaxes(g[0], 0, 1) if layout else g[0]
        want = np.asarray(want)
        assert g.shape == want.shape, (oname, g.shape, want.shape)
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg=f"{name} {oname}")


# ------------------------------------------------------------------------------------ constraints
def _inputs(short, dirs=1, t=3, b=2, i=3, h=4, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    g = GATES[short]

    def u(*s):
        return (rng.uniform(-1, 1, s) * 0.5).astype(dtype)
    args = [u(1, t, b, i) * 2, u(1, dirs, g * h, i), u(1, dirs, g * h, h), u(1, 1, dirs, 2 * g * h), u(1, dirs, b, h)]
    if short == "LSTM":
        args.append(u(1, dirs, b, h))
    args.append(None)
    if short == "LSTM":
        args.append(u(1, 1, dirs, 3 * h))
    return args


def test_shapes_and_activation_count_refused_with_the_pages_sizes():
    x, w, r, b, h0, c0, _, p = _inputs("LSTM")
    with pytest.raises(dmljax.ValidationError) as info:
        dmljax.lstm(x, w, r[:, :, :, :3], b[..., :30], h0, c0, None, p, direction="FORWARD",
                    activation_descs=["ACTIVATION_SIGMOID"])
    msg = str(info.value)
    assert "lstm (DML_OPERATOR_LSTM)" in msg
    assert ("ActivationDescCount (argument `activation_descs`) is 1 with Direction "
            "DML_RECURRENT_NETWORK_DIRECTION_FORWARD; 3: f(), g(), h() for the direction") in msg
    assert ("RecurrenceTensor (argument `recurrence`) has Sizes [1, 1, 16, 3]; {1, num_directions, 4 * hidden_size, "
            "hidden_size} = [1, 1, 16, 4]") in msg
    assert "BiasTensor (argument `bias`) has Sizes [1, 1, 1, 30]; {1, 1, num_directions, 8 * hidden_size}" in msg
    with pytest.raises(dmljax.ValidationError, match=r"WeightTensor \(argument `weight`\) has Sizes \[1, 1, 16, 3\]; "
                       r"\{1, num_directions, 4 \* hidden_size, input_size\} = \[1, 2, 16, 3\]"):
        dmljax.lstm(x, w, r, direction="BIDIRECTIONAL")
    with pytest.raises(dmljax.ValidationError, match="SequenceLengthsTensor .* holds 4; 0 to seq_length = 3"):
        dmljax.gru(*_inputs("GRU")[:5], np.array([4, 1], np.uint32).reshape(1, 1, 1, 2))
    with pytest.raises(dmljax.ValidationError, match=r"ActivationDescs\[0\] .*ELEMENT_WISE_ADD, which is not an element-wise activation"):
        dmljax.rnn(*_inputs("RNN")[:3], activation_descs=["ELEMENT_WISE_ADD"])
    with pytest.raises(dmljax.ValidationError, match="HiddenInitTensor .* must have the same DataType|DataType"):
        args = _inputs("RNN")
        dmljax.rnn(*args[:4], args[4].astype(np.float16))


def test_activation_members_are_checked_against_the_activations_record():
    args = _inputs("RNN")[:3]
    with pytest.raises(dmljax.ValidationError, match=r"ActivationDescs\[0\]\.Desc .* no member 'Gamma'"):
        dmljax.rnn(*args, activation_descs=[{"Type": "ACTIVATION_ELU", "Desc": {"Gamma": 1.0}}])
    out = dmljax.rnn(*args, activation_descs=[dmljax.FusedActivation("ACTIVATION_ELU", alpha=0.5)])
    want = ref.network("RNN", *args, activation_descs=[{"Type": "ELU", "Desc": {"Alpha": 0.5}}])
    np.testing.assert_allclose(out[0], want[0], rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------ sequence lengths
@pytest.mark.parametrize("direction", ["BIDIRECTIONAL", *(pytest.param(d, marks=pytest.mark.slow)
                                                          for d in ("FORWARD", "BACKWARD"))])
def test_sequence_lengths_zeros_past_the_end_and_last_valid_state(direction):
    dirs = 2 if direction == "BIDIRECTIONAL" else 1
    args = _inputs("LSTM", dirs=dirs, t=4, b=3)
    args[6] = np.array([4, 2, 0], np.uint32).reshape(1, 1, 1, 3)
    seq, h, c = dmljax.lstm(*args, direction=direction)
    want = ref.network("LSTM", *args, direction=direction)
    for g, w in zip((seq, h, c), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert not np.asarray(seq)[2:, :, 1].any() and not np.asarray(seq)[:, :, 2].any()
    assert not np.asarray(h)[:, :, 2].any() and not np.asarray(c)[:, :, 2].any()  # length 0: zero states
    last = 0 if direction == "BACKWARD" else 1  # batch entry 1 (length 2): its last step run
    np.testing.assert_array_equal(np.asarray(h)[0, 0, 1], np.asarray(seq)[last, 0, 1])


# ------------------------------------------------------------------------------------ transformations
@pytest.mark.parametrize("short", ["RNN", pytest.param("LSTM", marks=pytest.mark.slow),
                                   pytest.param("GRU", marks=pytest.mark.slow)])
def test_forward_mode_equals_reverse_mode(short):
    args = _inputs(short, dirs=2)
    x, w, r = (jnp.asarray(a) for a in args[:3])

    def f(x, w, r):
        out = OPS[short](x, w, r, *args[3:], direction="BIDIRECTIONAL")
        return out[0].sum() + (out[1] * out[-1]).sum()
    rev = jax.jit(jax.grad(f, argnums=(0, 1, 2)))(x, w, r)
    rng = np.random.default_rng(0)
    v = tuple(jnp.asarray(rng.standard_normal(a.shape), jnp.float32) for a in (x, w, r))
    fwd = jax.jit(lambda p, t: jax.jvp(f, p, t)[1])((x, w, r), v)
    np.testing.assert_allclose(fwd, sum(jnp.sum(g * t) for g, t in zip(rev, v)), rtol=2e-5, atol=1e-5)


def test_reverse_mode_keeps_only_the_forward_states():
    # A 4,096-step LSTM (batch 8, input 16, hidden 32): what reverse mode saves is the inputs
    # and each step's carried states H and C, no more (the gates and the input projection are
    # recomputed going back). Traced only, never run.
    t, b, i, h = 4096, 8, 16, 32
    x = jax.ShapeDtypeStruct((1, t, b, i), np.float32)
    w, r = jax.ShapeDtypeStruct((1, 1, 4 * h, i), np.float32), jax.ShapeDtypeStruct((1, 1, 4 * h, h), np.float32)
    bias = jax.ShapeDtypeStruct((1, 1, 1, 8 * h), np.float32)

    def loss(x, w, r, bias):
        seq, hn, cn = dmljax.lstm(x, w, r, bias)
        return seq.sum() + cn.sum()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):  # one line per residual: "f32[4096,1,8,32] ..."
        print_saved_residuals(loss, x, w, r, bias)
    lines = text.getvalue().splitlines()
    sizes = [int(np.prod([int(d) for d in m.group(1).split(",") if d])) for m in
             (re.match(r"\w+\[([\d,]*)\]", ln) for ln in lines) if m]
    assert len(sizes) == len(lines) and lines
    inputs = sum(int(np.prod(a.shape)) for a in (x, w, r, bias))
    states = 2 * t * b * h  # H and C at every step
    assert sum(sizes) <= inputs + states + 4 * b * h, lines


PRODUCTS = ("dot_general", "dmljax_half_precision_operand_dot")
"""The primitives of a product: JAX's, and GEMM's FLOAT16 product that FLOAT16 networks use."""


def _inner(values):
    """The jaxprs among ``values`` (an equation's parameters' values, or a cond's branches)."""
    for v in values:
        for x in v if isinstance(v, (tuple, list)) else (v,):
            if isinstance(x, jax.extend.core.ClosedJaxpr):
                yield x.jaxpr
            elif isinstance(x, jax.extend.core.Jaxpr):
                yield x


def _scan_products(jaxpr) -> list[list[tuple]]:
    """For each ``scan`` in ``jaxpr`` (nested ones included), the shapes of the products
    (``PRODUCTS``) its body computes at every step."""
    def products(jaxpr):
        for e in jaxpr.eqns:
            if e.primitive.name in PRODUCTS:
                yield tuple(e.outvars[0].aval.shape)
            if e.primitive.name == "cond":  # lax.platform_dependent: one platform's branch runs
                each = [sorted(products(b.jaxpr)) for b in e.params["branches"]]
                assert all(b == each[0] for b in each), each
                yield from each[0]
                continue
            for sub in _inner(e.params.values()):
                yield from products(sub)

    found = []
    for e in jaxpr.eqns:
        if e.primitive.name == "scan":
            found.append(sorted(products(e.params["jaxpr"].jaxpr)))
        else:
            for sub in _inner(e.params.values()):
                found += _scan_products(sub)
    return found


@pytest.mark.parametrize("short,direction", tiers.fast_sample([
    ("LSTM", "BIDIRECTIONAL"), ("GRU", "BIDIRECTIONAL"), ("RNN", "BIDIRECTIONAL"), *((s, "FORWARD") for s in ("LSTM", "GRU", "RNN"))],
    keep=2, key="one loop"))
def test_reverse_mode_runs_one_loop_each_way_with_the_steps_products_only(short, direction):
    # The gradient runs the steps forward once and back once; going back, a step multiplies its
    # gates' cotangent by RecurrenceTensor and nothing else: the gates are recomputed from the
    # kept states and RecurrenceTensor's gradient is taken over every step at once, outside the
    # loops (no second forward loop, no product of a step's states by its gates' cotangent). One
    # direction's products have no directions axis. Traced only, never run.
    t, b, i, h = 16, 2, 3, 4
    dirs = 2 if direction == "BIDIRECTIONAL" else 1
    g = GATES[short]
    x = jax.ShapeDtypeStruct((1, t, b, i), np.float32)
    w, r = jax.ShapeDtypeStruct((1, dirs, g * h, i), np.float32), jax.ShapeDtypeStruct((1, dirs, g * h, h), np.float32)

    def loss(x, w, r):
        return sum(o.sum() for o in OPS[short](x, w, r, direction=direction))
    loops = _scan_products(jax.make_jaxpr(jax.grad(loss, argnums=(0, 1, 2)))(x, w, r).jaxpr)
    d = (dirs,) if dirs == 2 else ()
    step = {"RNN": [d + (b, h)], "LSTM": [d + (b, 4 * h)], "GRU": [d + (b, h), d + (b, 2 * h)]}[short]
    back = {"RNN": [d + (b, h)], "LSTM": [d + (b, h)], "GRU": [d + (b, h), d + (b, h)]}[short]
    assert loops == [step, back], loops


@pytest.mark.parametrize("short", ["LSTM", "GRU"])
def test_one_direction_runs_the_plain_products_of_a_users_scan(short):
    # One direction (FORWARD or BACKWARD) carries no directions axis: each step's product is
    # [batch, hidden] x [G hidden, hidden]^T, the product of the lax.scan a user writes, not one
    # batched over an axis of size 1, and the loop reads the input projection (one product before
    # it) as the product writes it, not transposed; the only transposes are the CPU's R^T, once
    # before the loop (COLUMNS_FROM_ROWS). Traced only, never run.
    t, b, i, h = 16, 2, 3, 4
    g = GATES[short]
    x = jax.ShapeDtypeStruct((1, t, b, i), np.float16)
    w, r = jax.ShapeDtypeStruct((1, 1, g * h, i), np.float16), jax.ShapeDtypeStruct((1, 1, g * h, h), np.float16)
    for direction in ("FORWARD", "BACKWARD"):
        jaxpr = jax.make_jaxpr(lambda x, w, r: OPS[short](x, w, r, direction=direction)[0])(x, w, r).jaxpr

        def eqns(jaxpr, in_loop=False):  # (equation, whether a scan's body holds it), one branch of a cond
            for e in jaxpr.eqns:
                yield e, in_loop
                branches = e.params.get("branches") if e.primitive.name == "cond" else None
                for sub in _inner(branches[:1] if branches else e.params.values()):
                    yield from eqns(sub, in_loop or e.primitive.name == "scan")
        products = [(tuple(e.outvars[0].aval.shape), e.invars[0].aval.ndim)
                    for e, _ in eqns(jaxpr) if e.primitive.name in PRODUCTS]
        step = [(b, g * h)] if short == "LSTM" else [(b, h), (b, 2 * h)]
        assert sorted(products) == sorted([((t * b, g * h), 2)] + [(s, 2) for s in step]), products
        assert _scan_products(jaxpr) == [sorted(step)]
        # the only transposes are of RecurrenceTensor's blocks, once, before the loop (COLUMNS_FROM_ROWS)
        transposed = sorted((tuple(e.invars[0].aval.shape), loop) for e, loop in eqns(jaxpr) if e.primitive.name == "transpose")
        assert transposed == sorted(((s[1], h), False) for s in step), (direction, transposed)


# ------------------------------------------------------------------------------------ slow: every option
def _grid(short):
    acts = {"RNN": [None, [{"Type": "ACTIVATION_SCALED_TANH", "Desc": {"Alpha": 1.5, "Beta": 0.75}}]],
            "LSTM": [None, [{"Type": "ACTIVATION_HARD_SIGMOID", "Desc": {"Alpha": 0.25, "Beta": 0.5}},
                            "ACTIVATION_SOFTSIGN", {"Type": "ACTIVATION_SCALED_TANH",
                                                     "Desc": {"Alpha": 1.25, "Beta": 0.5}}]],
            "GRU": [None, ["ACTIVATION_SIGMOID", {"Type": "ACTIVATION_LINEAR", "Desc": {"Alpha": 0.5, "Beta": 0.1}}]]}
    extra = {"RNN": [{}], "GRU": [{}, {"linear_before_reset": True}],
             "LSTM": [dict(zip(("use_clip_threshold", "couple_input_forget"), v), clip_threshold=0.5)
                      for v in itertools.product((False, True), repeat=2)]}
    for direction, act, opts, lengths, optional in itertools.product(
            ("FORWARD", "BACKWARD", "BIDIRECTIONAL"), acts[short], extra[short], (False, True), (False, True)):
        yield short, direction, act, opts, lengths, optional


GRID = [pytest.param(*c, marks=pytest.mark.slow) for s in OPS for c in _grid(s)]


@pytest.mark.parametrize("short,direction,act,opts,lengths,optional", GRID)
def test_every_option_against_the_reference(short, direction, act, opts, lengths, optional):
    dirs = 2 if direction == "BIDIRECTIONAL" else 1
    args = _inputs(short, dirs=dirs, t=5, b=3, seed=hash((short, direction)) % 1000)
    k = 6 if short == "LSTM" else 5
    if lengths:
        args[k] = np.array([5, 3, 0], np.uint32).reshape(1, 1, 1, 3)
    if not optional:  # every optional input left out
        args = args[:3] + [None] * (len(args) - 3)
    kw = dict(direction=direction, **opts)
    if act is not None:
        kw["activation_descs"] = act * dirs
    got = OPS[short](*args, **kw)
    want = ref.network(short, *(args if short == "LSTM" else args[:5] + [None] + args[5:6] + [None]), **kw)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=2e-5, atol=2e-6)
    if optional and not lengths and not opts.get("use_clip_threshold"):  # finite differences of 1e-2 would cross the clip's kinks
        # reverse mode is the transpose of the networks' own JVP (recurrent._Steps.jvp), so its
        # check against finite differences checks that linear map too: forward mode's own run is
        # checked where both directions run (each direction's code, in one call). With every
        # optional input given, their derivatives are checked beside the three tensors' (the
        # derivatives without them are those of the same code at zero bias and states)
        modes = ("fwd", "rev") if direction == "BIDIRECTIONAL" else ("rev",)
        floats = [i for i, a in enumerate(args) if a is not None]

        def f(*vals):
            a = list(args)
            for i, v in zip(floats, vals):
                a[i] = v
            return OPS[short](*a, **kw)[0]
        check_grads(f, tuple(jnp.asarray(args[i]) for i in floats), order=1, modes=modes,
                    eps=1e-2, atol=3e-2, rtol=3e-2)


@pytest.mark.slow
def test_long_sequence_float16_within_budget():
    args = _inputs("LSTM", t=256, b=4, i=8, h=16, dtype=np.float16)
    got = dmljax.lstm(*args)
    want = ref.network("LSTM", *args)
    spec = dmljax.lstm.spec
    budget = spec.budget(dmljax.DataType.FLOAT16, args[0].shape, {"RecurrenceTensor": args[2].shape})
    ulp = np.spacing(np.float16(max(1.0, np.abs(want[0]).max()))).astype(np.float64)
    assert np.max(np.abs(np.asarray(got[0], np.float64) - want[0])) <= budget * ulp


@pytest.mark.parametrize("batch", [1, 2])
def test_the_cpu_loop_multiplies_by_r_transposed_before_it_from_two_rows(batch):
    # From COLUMNS_FROM_ROWS rows of Ht-1 on, the CPU's loop multiplies by R^T laid out before the
    # loop (contracted on its first axis; as written, YNNPACK lays R out again on every step); a
    # single row keeps R as written. The compiled program of one direction shows which.
    assert recurrent_module.COLUMNS_FROM_ROWS == 2
    t, i, h = 6, 3, 8
    x = np.zeros((1, t, batch, i), np.float32)
    w, r = np.zeros((1, 1, 4 * h, i), np.float32), np.zeros((1, 1, 4 * h, h), np.float32)
    text = jax.jit(lambda x, w, r: dmljax.lstm(x, w, r)[0]).lower(x, w, r).compile().as_text()
    body = [line for line in text.splitlines() if f"= f32[{batch},{4 * h}]{{1,0}} dot(" in line]
    assert body, text
    assert all(f"rhs_contracting_dims={{{0 if batch >= 2 else 1}}}" in line for line in body), body


@pytest.mark.parametrize("short", ["LSTM", "GRU", "RNN"])
def test_float16_reverse_mode_runs_float16_products(short):
    # FLOAT16 networks multiply through GEMM's FLOAT16 product: reverse mode rounds each product's
    # cotangent to FLOAT16 and runs FLOAT16 x FLOAT16 products (the step's product by R, and R's,
    # W's and X's gradients over every step), never a FLOAT32 product of a widened FLOAT16 operand.
    # Traced only, never run.
    t, b, i, h = 8, 2, 3, 4
    g = GATES[short]
    x = jax.ShapeDtypeStruct((1, t, b, i), np.float16)
    w, r = jax.ShapeDtypeStruct((1, 2, g * h, i), np.float16), jax.ShapeDtypeStruct((1, 2, g * h, h), np.float16)

    def loss(x, w, r):
        return sum(o.astype(np.float32).sum() for o in OPS[short](x, w, r, direction="BIDIRECTIONAL"))

    def operand_types(jaxpr):
        for e in jaxpr.eqns:
            if e.primitive.name in PRODUCTS:
                yield tuple(str(v.aval.dtype) for v in e.invars)
            for sub in _inner(e.params.values()):
                yield from operand_types(sub)
    types = list(operand_types(jax.make_jaxpr(jax.grad(loss, argnums=(0, 1, 2)))(x, w, r).jaxpr))
    assert len(types) >= 5 and set(types) == {("float16", "float16")}, types
