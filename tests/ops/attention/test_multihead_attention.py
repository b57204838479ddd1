"""MULTIHEAD_ATTENTION and MULTIHEAD_ATTENTION1 by hand: no sequence x sequence intermediate in the
blockwise formula (jit and grad, read off the jaxpr), fully masked rows (ONNX Runtime's result),
forward and reverse mode, vmap, grouped heads against repeated ones, the layouts against one another, the
shape rules' messages, and ONNX's backend node tests for Attention (opset 23) mapped as ONNX
Runtime's DirectML provider maps attention onto these operators."""

import inspect
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests.reference.attention.multihead_attention import attention as reference
from tests.tiers import slow

R = np.random.default_rng(7)


def _qkv(b=2, s=5, t=6, h=2, d=4, dt=np.float32):
    return (R.standard_normal((b, s, h * d)).astype(dt), R.standard_normal((b, t, h * d)).astype(dt),
            R.standard_normal((b, t, h * d)).astype(dt))


def _shapes(jaxpr):
    """Every variable's shape in a jaxpr and the jaxprs inside it (scan, remat, pjit, custom_jvp)."""
    out = []
    for eqn in jaxpr.eqns:
        out += [tuple(v.aval.shape) for v in eqn.outvars if hasattr(v.aval, "shape")]
        for p in eqn.params.values():
            for sub in (p if isinstance(p, (list, tuple)) else (p,)):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    out += _shapes(inner)
    return out


@pytest.mark.parametrize("mask_type", ["NONE", "KEY_SEQUENCE_LENGTH"])
def test_no_sequence_by_sequence_intermediate(mask_type):
    n, d = 4096, 8
    q = jax.ShapeDtypeStruct((1, n, d), jnp.float16)
    mask = jax.ShapeDtypeStruct((1, 1), jnp.int32) if mask_type != "NONE" else None

    def f(q, k, v, m):
        return dmljax.multihead_attention(q, k, v, mask=m, scale=0.3, head_count=1, mask_type=mask_type)[0]

    def loss(q, k, v, m):
        return jnp.sum(f(q, k, v, m).astype(jnp.float32))

    for fn in (jax.jit(f), jax.jit(jax.grad(loss, argnums=(0, 1, 2)))):
        shapes = _shapes(jax.make_jaxpr(fn)(q, q, q, mask).jaxpr)
        assert shapes, "no equations read"
        biggest = max(int(np.prod(s)) for s in shapes)
        assert biggest < n * n // 4, (biggest, [s for s in shapes if int(np.prod(s)) == biggest][:2])


def test_fully_masked_rows_are_onnx_runtimes():
    # the mask adds MaskFilterValue: a row masked everywhere is the softmax of its scores shifted by it,
    # with the usual -10000 the unmasked softmax (ONNX Runtime's MultiHeadAttention), with -inf NaN
    q, k, v = _qkv(b=1, s=3, t=4, h=1)
    mask = np.ones((1, 1, 3, 4), np.int32)
    mask[0, 0, 1] = 0  # row 1 wholly masked
    out = np.asarray(dmljax.multihead_attention(q, k, v, mask=mask, scale=0.5, head_count=1, mask_type="BOOLEAN")[0])
    plain = np.asarray(dmljax.multihead_attention(q, k, v, scale=0.5, head_count=1)[0])
    np.testing.assert_allclose(out[0, 1], plain[0, 1], rtol=2e-3, atol=2e-3)  # -10000 + s rounds s in FLOAT32
    want = reference(q, k, v, None, None, None, None, mask, scale=0.5, head_count=1, mask_type="BOOLEAN")[0][0]
    np.testing.assert_allclose(out, want, rtol=2e-3, atol=2e-3)
    inf = np.asarray(dmljax.multihead_attention(q, k, v, mask=mask, scale=0.5, head_count=1, mask_type="BOOLEAN",
                                                mask_filter_value=-np.inf)[0])
    assert np.isnan(inf[0, 1]).all() and not np.isnan(inf[0, [0, 2]]).any()


def test_key_lengths_dropped_where_the_penalty_rounds_them_away(rng):
    # cuDNN's sequence lengths drop the keys a KEY_SEQUENCE_LENGTH mask penalises: the CUDA route is
    # taken where score_reach shows MaskFilterValue puts every dropped score more than 110 below its
    # row's largest, which makes each dropped exp exactly 0 in FLOAT32; checked here against the
    # float64 softmax over the kept keys alone (and the bound against every score)
    from dmljax._src.ops.attention.multihead_attention import MASKED_EXP_LIMIT, score_reach
    b, s, t, d = 3, 5, 7, 8
    q = rng.standard_normal((b, s, d)).astype(np.float32)
    k = rng.standard_normal((b, t, d)).astype(np.float32)
    v = rng.standard_normal((b, t, d)).astype(np.float32)
    scale = 0.35
    scores = scale * np.einsum("bsd,btd->bst", q.astype(np.float64), k.astype(np.float64))
    reach = float(score_reach(jnp.asarray(q)[:, None], jnp.asarray(k)[:, None], scale))
    assert np.abs(scores).max() <= reach < 1.01 * scale * np.linalg.norm(q, axis=-1).max() * np.linalg.norm(k, axis=-1).max()
    lengths = np.array([[1, 4, 7]], np.int32)
    kept = np.arange(t)[None, None, :] < lengths[0][:, None, None]
    dropped = np.where(kept, scores, -np.inf)
    p = np.exp(dropped - dropped.max(-1, keepdims=True))
    want = np.einsum("bst,btd->bsd", p / p.sum(-1, keepdims=True), v.astype(np.float64))
    filter_value = -10000.0
    assert filter_value + 2 * reach < MASKED_EXP_LIMIT  # the route's condition holds
    got = np.asarray(dmljax.multihead_attention(q, k, v, mask=lengths, scale=scale, head_count=1,
                                                mask_type="KEY_SEQUENCE_LENGTH", mask_filter_value=filter_value)[0])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # a mild penalty: the masked keys still count, the condition fails and the result is not the dropped one
    mild = np.asarray(dmljax.multihead_attention(q, k, v, mask=lengths, scale=scale, head_count=1,
                                                 mask_type="KEY_SEQUENCE_LENGTH", mask_filter_value=-1.0)[0])
    assert -1.0 + 2 * reach >= MASKED_EXP_LIMIT and np.abs(mild - want).max() > 1e-3


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_forward_and_reverse_mode_agree():
    q, k, v = _qkv()
    f = lambda q, k, v: dmljax.multihead_attention(q, k, v, scale=0.5, head_count=2)[0]  # noqa: E731
    tq, tk, tv = (R.standard_normal(x.shape).astype(np.float32) for x in (q, k, v))
    _, jvp = jax.jvp(f, (q, k, v), (tq, tk, tv))
    _, vjp = jax.vjp(f, q, k, v)
    dy = R.standard_normal(jvp.shape).astype(np.float32)
    # <dy, J t> = <J^T dy, t>: forward and reverse mode agree
    lhs = float(np.sum(np.asarray(jvp, np.float64) * dy))
    rhs = sum(float(np.sum(np.asarray(g, np.float64) * t)) for g, t in zip(vjp(jnp.asarray(dy)), (tq, tk, tv)))
    assert abs(lhs - rhs) <= 1e-4 * (abs(lhs) + 1)


@pytest.mark.slow
def test_vmap():
    q, k, v = _qkv()
    f = lambda q, k, v: dmljax.multihead_attention(q, k, v, scale=0.5, head_count=2)[0]  # noqa: E731
    batched = jax.vmap(f)(np.stack([q, q[::-1]]), np.stack([k, k]), np.stack([v, v]))
    np.testing.assert_allclose(np.asarray(batched[1]), np.asarray(f(q[::-1], k, v)), rtol=1e-6, atol=1e-6)


@pytest.mark.slow  # the fast tier's generated MULTIHEAD_ATTENTION1 cases read grouped heads (4 over 2)
def test_grouped_heads_read_their_key_value_head():
    q, k, v = _qkv(h=4)
    k2, v2 = k[:, :, :8], v[:, :, :8]  # 2 key/value heads
    out = dmljax.multihead_attention1(q, k2, v2, scale=0.5, query_head_count=4, key_value_head_count=2)[0]
    rep = lambda x: np.repeat(x.reshape(2, 6, 2, 4), 2, axis=2).reshape(2, 6, 16)  # noqa: E731
    want = dmljax.multihead_attention(q, rep(k2), rep(v2), scale=0.5, head_count=4)[0]
    np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_stacked_layouts_equal_separate_tensors():
    x = R.standard_normal((2, 5, 2, 3, 4)).astype(np.float32)
    flat = [x[:, :, :, i, :].reshape(2, 5, 8) for i in range(3)]
    want = np.asarray(dmljax.multihead_attention(*flat, scale=0.5, head_count=2)[0])
    for kw in ({"stacked_query_key_value": x}, {"stacked_query_key": x[:, :, :, :2], "value": flat[2]},
               {"query": flat[0], "stacked_key_value": x[:, :, :, 1:]}):
        got = dmljax.multihead_attention(**kw, scale=0.5, head_count=2)[0]
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_packed_sequences_are_separate_calls():
    # KEY_QUERY_SEQUENCE_LENGTH_START_END: the rows are tokens; each sequence attends to its own keys,
    # the first keyLength of them, as a call on that sequence alone with its keys cut there does
    q, k, v = _qkv(b=2, s=4, t=5, h=2)
    key_length, q_start, k_start = [2, 3], [1, 3, 7], [2, 4, 8]
    mask = np.array(key_length + q_start + k_start, np.int32)
    out = np.asarray(dmljax.multihead_attention(q, k, v, mask=mask, scale=0.5, head_count=2,
                                                mask_type="KEY_QUERY_SEQUENCE_LENGTH_START_END")[0]).reshape(8, -1)
    qt, kt, vt = (x.reshape(-1, x.shape[-1]) for x in (q, k, v))
    for seq in range(2):
        rows = slice(q_start[seq], q_start[seq + 1])
        keys = slice(k_start[seq], k_start[seq] + key_length[seq])
        want = dmljax.multihead_attention(qt[None, rows], kt[None, keys], vt[None, keys], scale=0.5, head_count=2)[0]
        np.testing.assert_allclose(out[rows], np.asarray(want)[0], rtol=1e-5, atol=1e-6)
    assert not out[[0, 7]].any()  # tokens of no sequence
    with pytest.raises(dmljax.ValidationError, match=r"PastKeyTensor .* is given with MaskType "
                                                     r"KEY_QUERY_SEQUENCE_LENGTH_START_END"):
        past = np.zeros((2, 2, 1, 4), np.float32)
        dmljax.multihead_attention(q, k, v, mask=mask, past_key=past, past_value=past, scale=0.5, head_count=2,
                                   mask_type="KEY_QUERY_SEQUENCE_LENGTH_START_END")


def test_past_sequence_lengths_place_the_new_rows():
    q, k, v = _qkv(b=2, s=1, t=1, h=2)
    past = R.standard_normal((2, 2, 3, 4)).astype(np.float32)
    lengths = np.array([1, 3], np.int32)
    _, pk, _ = dmljax.multihead_attention1(q, k, v, past_key=past, past_value=past, past_sequence_lengths=lengths,
                                           scale=0.5, query_head_count=2, key_value_head_count=2)
    pk = np.asarray(pk)
    np.testing.assert_array_equal(pk[0, :, 0], past[0, :, 0])
    np.testing.assert_array_equal(pk[0, :, 1], k[0, 0].reshape(2, 4))
    assert not pk[0, :, 2:].any()
    np.testing.assert_array_equal(pk[1, :, 3], k[1, 0].reshape(2, 4))


def test_shape_rules_messages():
    q, k, v = _qkv()
    with pytest.raises(dmljax.ValidationError, match=r"StackedQueryKeyValueTensor \(argument `stacked_query_key_value`\) "
                                                     r"is given with QueryTensor"):
        dmljax.multihead_attention(q, k, v, stacked_query_key_value=np.zeros((2, 5, 2, 3, 4), np.float32),
                                   scale=1.0, head_count=2)
    with pytest.raises(dmljax.ValidationError, match=r"MaskTensor \(argument `mask`\) is null with MaskType BOOLEAN"):
        dmljax.multihead_attention(q, k, v, scale=1.0, head_count=2, mask_type="BOOLEAN")
    with pytest.raises(dmljax.ValidationError, match=r"KeyValueHeadCount .* is 3; a divisor of QueryHeadCount"):
        dmljax.multihead_attention1(q, k, v, scale=1.0, query_head_count=2, key_value_head_count=3)
    with pytest.raises(dmljax.ValidationError, match=r"MaskTensor .* has Sizes \[2\]; \{1, batchSize\}"):
        dmljax.multihead_attention(q, k, v, mask=np.ones(2, np.int32), scale=1.0, head_count=2,
                                   mask_type="KEY_SEQUENCE_LENGTH")


# ------------------------------------------------------------------------------ ONNX's node tests
def _onnx_cases():
    onnx_attention = pytest.importorskip("onnx.backend.test.case.node.attention")
    cases = []

    def capture(node, inputs, outputs, name, **_):
        cases.append((name, node, inputs, outputs))

    saved = onnx_attention.expect
    onnx_attention.expect = capture
    try:
        for n, fn in inspect.getmembers(onnx_attention.Attention, inspect.isfunction):
            if n.startswith("export"):
                try:
                    fn()
                except Exception:  # noqa: BLE001  (an exporter that needs a newer onnx than installed)
                    pass
    finally:
        onnx_attention.expect = saved
    return cases


def _map(node, inputs):
    """The call ONNX Runtime's DirectML provider would make, or the reason there is none."""
    import onnx
    a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
    if a.get("softcap", 0.0):
        return "softcap: DirectML's attention has no soft cap"
    if any(k for k in a if k not in ("is_causal", "kv_num_heads", "q_num_heads", "scale", "qk_matmul_output_mode",
                                     "softmax_precision")):
        return f"attributes {sorted(a)}: no DirectML counterpart (a local window)"
    if len(node.input) > 6 and node.input[6]:
        return "nonpad_kv_seqlen (opset 24): no DirectML counterpart"
    q, k, v = inputs[:3]
    if q.dtype not in (np.float32, np.float16):
        return f"{q.dtype}: not a DirectML type"
    given = dict(zip([n for n in node.input if n], inputs))  # ONNX gives the inputs the node names
    names = list(node.input) + [""] * 6
    mask, past_k, past_v = (given.get(names[i]) if names[i] else None for i in (3, 4, 5))
    if q.ndim == 4:
        hq, hkv = q.shape[1], k.shape[1]
        q, k, v = (x.transpose(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1) for x in (q, k, v))
    else:
        hq, hkv = a["q_num_heads"], a["kv_num_heads"]
    b, s = q.shape[:2]
    t = k.shape[1] + (0 if past_k is None else past_k.shape[2])
    kw = dict(scale=float(a.get("scale", 1.0 / np.sqrt(q.shape[2] // hq))), past_key=past_k, past_value=past_v)
    keep = np.ones((b, hq, s, t), bool)
    if a.get("is_causal", 0):
        keep &= np.tril(np.ones((s, t), bool), t - k.shape[1])  # ONNX: j <= i + pastSequenceLength
    if mask is not None and mask.dtype == bool:
        keep &= np.broadcast_to(mask, (b, hq, s, t))
    elif mask is not None:
        kw["relative_position_bias"] = np.ascontiguousarray(np.broadcast_to(mask, (b, hq, s, t))).astype(q.dtype)
    if not keep.all():
        if not keep.any(-1).all():
            return "a fully masked row: ONNX excludes masked keys, DirectML adds MaskFilterValue (see the edge test)"
        kw.update(mask=keep.astype(np.int32), mask_type="BOOLEAN")
    if hq == hkv:
        return dmljax.multihead_attention(q, k, v, head_count=hq, **kw)
    return dmljax.multihead_attention1(q, k, v, query_head_count=hq, key_value_head_count=hkv, **kw)


ONNX_CASES = _onnx_cases()
FAST = {"test_attention_3d"}


@pytest.mark.parametrize("name,node,inputs,outputs", [
    c if c[0] in FAST else pytest.param(*c, marks=pytest.mark.slow) for c in ONNX_CASES], ids=[c[0] for c in ONNX_CASES])
def test_onnx_attention_node(name, node, inputs, outputs):
    got = _map(node, inputs)
    if isinstance(got, str):
        pytest.skip(got)  # the reason there is no DirectML mapping, written in _map
    dt = inputs[0].dtype
    tol = 2e-2 if dt == np.float16 else 1e-4
    y = np.asarray(got[0], np.float64)
    want = np.asarray(outputs[0], np.float64)
    if want.ndim == 4:
        want = want.transpose(0, 2, 1, 3).reshape(y.shape)
    np.testing.assert_allclose(y, want, rtol=tol, atol=tol, err_msg=name)
    named = [n for n in node.output if n]  # ONNX gives the outputs the node names, in order
    for o, n in zip(got[1:], list(node.output[1:3]) + [""] * 2):
        if not n or named.index(n) >= len(outputs):
            continue  # an output the case names but gives no expected value for
        w = outputs[named.index(n)]
        np.testing.assert_allclose(np.asarray(o, np.float64), np.asarray(w, np.float64), rtol=tol, atol=tol)


def test_the_onnx_cases_were_read():
    assert len(ONNX_CASES) >= 20 or slow() is None


def _cuda_program(fun, *args):
    """``fun`` with the cuDNN route forced, lowered for CUDA (the route's branch, cuDNN's XLA stand-in
    in it: ``cudnn_attention``) and compiled for this machine's CPU, which runs it: (StableHLO text,
    the executable's results)."""
    from jax._src.lib import xla_client  # the one way to compile a module lowered for another platform

    from dmljax._src.kernel_seam import force_kernels
    with force_kernels("attention_cudnn"):
        text = jax.jit(fun).trace(*args).lower(lowering_platforms=("cuda",)).as_text()
    client = jax.devices("cpu")[0].client
    compile_ = getattr(client, "compile_and_load", None)
    exe = (compile_(text, client.devices()[:1], xla_client.CompileOptions()) if compile_
           else client.compile(text, xla_client.CompileOptions()))
    return text, [np.asarray(x) for x in exe.execute([jax.device_put(a) for a in jax.tree.leaves(args)])]


def _conditionals(text: str) -> int:
    """The conditionals of a StableHLO program less ``lax.platform_dependent``'s (a case choosing the
    platform's index from constants, and the case on that index)."""
    index = set(re.findall(r'(%\w+) = "stablehlo\.case"\(%c\w*\)', text))
    return sum(1 for op in re.findall(r'= "stablehlo\.case"\((%[\w#]+)\)', text)
               if not op.startswith("%c") and op not in index)


def _route_case(masked, filter_value=-10000.0):
    q, k, v = (x.astype(np.float16) for x in _qkv(b=2, s=3, t=5, h=1, d=64))
    kw = dict(scale=0.125, head_count=1)
    if masked:
        kw.update(mask=np.array([[2, 5]], np.int32), mask_type="KEY_SEQUENCE_LENGTH", mask_filter_value=filter_value)

    def f(q, k, v):
        return dmljax.multihead_attention(q, k, v, **kw)[0].astype(np.float32)

    def loss(q, k, v):
        return jnp.sum(f(q, k, v) * jnp.arange(64, dtype=np.float32))
    return (q, k, v), f, loss


def _close(got, want, name):
    """Within 4e-3 of the largest value: the two routes round cotangents and results to FLOAT16 in
    different places (tests/gpu/kernels.py's measure)."""
    for a, e in zip(got, want):
        a, e = np.asarray(a, np.float64), np.asarray(e, np.float64)
        err = np.abs(a - e).max() / max(np.abs(e).max(), 1e-30)
        assert np.all(np.isfinite(a)) and err <= 4e-3, f"{name}: largest difference {err:.2e} of the largest value"


@pytest.mark.parametrize("pred", [True, False])
def test_flat_cond_crosses_the_conditional_as_1d_arrays(pred):
    # the route's conditionals: lax.cond's values and shapes, with every operand and result a 1-D
    # array at the conditional (XLA then cannot give them a layout that only one branch wants)
    from dmljax._src.ops.attention.multihead_attention import flat_cond
    x = jnp.asarray(R.standard_normal((2, 3, 4)).astype(np.float32))
    n = jnp.asarray([3, 1], np.int32)

    def first(x, n):
        return jnp.swapaxes(x, 0, 1) * 2, n + 1

    def second(x, n):
        return jnp.swapaxes(x, 0, 1) - 1, n * 3

    got = jax.jit(lambda p, x, n: flat_cond(p, first, second, x, n))(pred, x, n)
    want = jax.lax.cond(pred, first, second, x, n)
    for a, e in zip(got, want):
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))
    text = jax.jit(lambda p, x, n: flat_cond(p, first, second, x, n)).lower(pred, x, n).as_text()
    results = re.findall(r"\}\) : \(tensor<i32>\) -> \((.*)\)", text)
    assert results == ["tensor<24xf32>, tensor<2xi32>"], results
    assert re.findall(r"stablehlo.optimization_barrier %\S+, %\S+ : (.*)", text) == ["tensor<24xf32>, tensor<2xi32>"] * 2


def test_cudnn_route_backward_reads_the_forward_residuals():
    # reverse mode applies cuDNN's pullback to the forward pass's own residuals
    # (derivatives.SavedPullback): the gradient's program holds the forward pass once, so the value
    # and the gradient together cost what the gradient alone does; with a key-length mask, one
    # conditional for the forward pass and one for the backward (the slow tier runs the programs)
    from dmljax._src.kernel_seam import force_kernels
    args, _, loss = _route_case(True)
    with force_kernels("attention_cudnn"):
        grad_text, both_text = (jax.jit(g(loss, argnums=(0, 1, 2))).trace(*args).lower(lowering_platforms=("cuda",))
                                .as_text() for g in (jax.grad, jax.value_and_grad))
    assert _conditionals(grad_text) == _conditionals(both_text) == 2
    assert grad_text.count("stablehlo.dot_general") == both_text.count("stablehlo.dot_general")


@pytest.mark.slow  # several programs compiled, each for a few seconds
@pytest.mark.parametrize("masked,filter_value", [(False, 0.0), (True, -10000.0), (True, -1.0)])
def test_cudnn_route_branch_runs_every_mode(masked, filter_value):
    # the route's own branch (lowered for CUDA, run on the CPU with cuDNN's stand-in): the forward,
    # jax.grad, jax.jvp, a Hessian-vector product and jax.grad under vmap equal the blockwise
    # formula's; with a mild MaskFilterValue the check fails and the conditionals take the
    # blockwise formula in both passes; the value with the gradient holds the forward pass once
    (q, k, v), f, loss = _route_case(masked, filter_value)
    tq, tk, tv = (jnp.asarray(R.standard_normal(x.shape).astype(np.float16)) for x in (q, k, v))
    runs = {
        "forward": (f, (q, k, v)),
        "grad": (jax.grad(loss, argnums=(0, 1, 2)), (q, k, v)),
        "jvp": (lambda *a: jax.jvp(f, a[:3], a[3:])[1], (q, k, v, tq, tk, tv)),
        "hessian-vector": (lambda *a: jax.jvp(jax.grad(loss), a[:3], a[3:])[1], (q, k, v, tq, tk, tv)),
        "grad under vmap": (jax.vmap(jax.grad(loss), in_axes=(0, None, None)), (np.stack([q, q[::-1]]), k, v)),
    }
    both = jax.value_and_grad(loss, argnums=(0, 1, 2))
    runs["value and grad"] = (both, (q, k, v))
    for name, (run, args) in runs.items():
        text, got = _cuda_program(run, *args)
        _close(got, jax.tree.leaves(jax.jit(run)(*args)), name)
        if name == "value and grad":  # the forward pass once: what the gradient alone holds
            grad_text, _ = _cuda_program(runs["grad"][0], q, k, v)
            assert _conditionals(grad_text) == _conditionals(text) == (2 if masked else 0)
            assert grad_text.count("stablehlo.dot_general") == text.count("stablehlo.dot_general")


@pytest.mark.slow  # 4-8 s a case: every mode compiled twice
@pytest.mark.parametrize("masked", [False, True])
def test_cudnn_route_derivatives(masked):
    # the cuDNN route (forced: off CUDA its program holds the blockwise formula) gives reverse mode
    # through derivatives.custom_transposed, whose transpose is the fused kernel's backward pass on
    # CUDA: every mode must give the blockwise formula's derivatives, and jax.grad must reach it
    from dmljax._src.kernel_seam import force_kernels
    q, k, v = (x.astype(np.float16) for x in _qkv(b=2, s=3, t=5, h=1, d=64))
    lengths = np.array([[2, 5]], np.int32)
    kw = dict(scale=0.125, head_count=1)
    if masked:
        kw.update(mask=lengths, mask_type="KEY_SEQUENCE_LENGTH", mask_filter_value=-10000.0)

    def f(q, k, v):
        return dmljax.multihead_attention(q, k, v, **kw)[0].astype(np.float32)

    def loss(q, k, v):
        return jnp.sum(f(q, k, v) * jnp.arange(64, dtype=np.float32))

    tq, tk, tv = (jnp.asarray(R.standard_normal(x.shape).astype(np.float16)) for x in (q, k, v))
    hvp = lambda q, k, v: jax.jvp(jax.grad(loss), (q, k, v), (tq, tk, tv))[1]  # noqa: E731
    runs = {
        "forward": lambda: f(q, k, v),
        "grad": lambda: jax.grad(loss, argnums=(0, 1, 2))(q, k, v),
        "jvp": lambda: jax.jvp(f, (q, k, v), (tq, tk, tv))[1],
        "hessian-vector": lambda: hvp(q, k, v),
        "grad under vmap": lambda: jax.vmap(jax.grad(loss), in_axes=(0, None, None))(np.stack([q, q[::-1]]), k, v),
    }
    with force_kernels("attention_cudnn"):
        forced = {name: jax.jit(run)() for name, run in runs.items()}
        grad_program = str(jax.make_jaxpr(jax.grad(loss))(q, k, v))
    assert "dmljax_custom_transposed" in grad_program
    for name, run in runs.items():
        for got, want in zip(jax.tree.leaves(forced[name]), jax.tree.leaves(jax.jit(run)())):
            np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=2e-3,
                                       atol=2e-3, err_msg=name)
