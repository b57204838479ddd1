"""CONVOLUTION's BACKWARD direction with strides as forward convolutions of its output's phases
(dmljax/_src/kernels/convolution_phases.py): against the float64 reference within CONVOLUTION's
budget and against XLA's input-dilated convolution (the form it replaces), bit for bit where the
sums are exact (integers) or hold one product, values and gradients (jax.grad and jax.jvp), over
1 to 3 spatial dimensions, groups, dilations, paddings, OutputPadding, windows shorter than,
equal to and longer than the stride, and phases no tap lands on; FLOAT32 and FLOAT16; which calls
each kind covers, and the rule taking the form where it says for the output and for each of its
derivatives, on the CPU and on CUDA (and forced)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmljax
from dmljax._src.kernel_seam import force_kernels
from dmljax._src.kernels import convolution_phases as phases
from tests import tiers
from tests.ops.convolution import forms
from tests.reference.convolution.convolution import _grad as reference_grad
from tests.reference.convolution.convolution import _magnitude
from tests.reference.convolution.convolution import convolution as reference

SWITCH = phases.CONVOLUTION_PHASES.name
EPS32 = float(np.finfo(np.float32).eps)

# (input Sizes, BACKWARD filter Sizes {C, O / G, window...}, attributes)
GEOMETRIES = [
    # decoders' upsampling: a 2 x 2 window at stride 2 (one tap a phase), 4 x 4 at stride 2 with padding
    ((2, 4, 3, 4), (4, 3, 2, 2), {"strides": (2, 2)}),
    ((1, 3, 4, 3), (3, 2, 4, 4), {"strides": (2, 2), "start_padding": (1, 1), "end_padding": (1, 1)}),
    # 3 x 3 at stride 2 with OutputPadding (uneven tap counts), CONVOLUTION mode, two groups
    ((2, 4, 3, 3), (4, 1, 3, 3), {"strides": (2, 2), "start_padding": (1, 1), "end_padding": (1, 1),
                                  "output_padding": (1, 1), "mode": "CONVOLUTION", "group_count": 2}),
    # a window shorter than the stride (phases with no tap: zeros), dilated, uneven paddings
    ((1, 2, 4, 3), (2, 3, 2, 1), {"strides": (3, 4), "dilations": (2, 1), "start_padding": (0, 2),
                                  "end_padding": (1, 0), "output_padding": (2, 1)}),
    # a dilation sharing a factor with the stride (every other phase empty), one spatial dimension
    ((2, 3, 5), (3, 2, 3), {"strides": (4,), "dilations": (2,), "start_padding": (1,), "end_padding": (3,)}),
    # depthwise (the CPU's taps for each phase), and three spatial dimensions with one strided
    ((1, 4, 3, 4), (4, 1, 3, 2), {"strides": (2, 3), "start_padding": (2, 0), "group_count": 4}),
    ((1, 2, 2, 3, 2), (2, 2, 2, 3, 1), {"strides": (2, 1, 3), "dilations": (1, 2, 1), "end_padding": (0, 1, 0),
                                        "output_padding": (1, 0, 2)}),
    # StartPadding and OutputPadding past the input: outputs no input element reaches (zeros)
    ((1, 2, 2, 3), (2, 2, 2, 4), {"strides": (2, 2), "start_padding": (6, 5), "end_padding": (0, 1),
                                  "output_padding": (5, 6)}),
]
GEOMETRIES = [(x, w, {"direction": "BACKWARD", **attrs}) for x, w, attrs in GEOMETRIES]


def _function(attrs, form):
    """dmljax.convolution of the attributes, jitted with the phase form forced or switched off."""
    f = jax.jit(lambda a, b: dmljax.convolution(a, b, **attrs))
    if form == "phases":
        def run(*args):
            with force_kernels(SWITCH):
                return f(*args)
    else:
        def run(*args):
            with dmljax.use_kernels(False, SWITCH):
                return f(*args)
    return run


def _input_dilated(f, *args, platform="cpu", switches=None) -> bool:
    """Whether ``f``'s program for ``platform`` holds an input-dilated convolution (XLA's form)."""
    with switches or force_kernels():
        text = jax.jit(f).trace(*args).lower(lowering_platforms=(platform,)).as_text()
    return any(any(int(v) > 1 for v in m.split(",")) for m in re.findall(r"lhs_dilate = \[([\d, ]+)\]", text))


def _check_values(x, w, attrs, dtype):
    forms.check_values(x, w, attrs, dtype, SWITCH)


def _check_exact(x_shape, w_shape, attrs, dtype, seed=0):
    """The phase form bit for bit against the input-dilated convolution (forms.check_exact), its
    program holding no input-dilated convolution."""
    def programs(everything, x, w):
        assert not _input_dilated(everything, x, w, switches=force_kernels(SWITCH))
        assert _input_dilated(everything, x, w, switches=dmljax.use_kernels(False, SWITCH))
    forms.check_exact(x_shape, w_shape, attrs, dtype, SWITCH, seed, programs)


@pytest.mark.parametrize("x_shape,w_shape,attrs,dtype", tiers.fast_sample(
    [(*g, t) for t in (np.float32, np.float16) for g in GEOMETRIES], keep=2, key="phases"))
def test_phases_match_the_reference_and_the_input_dilated_form(x_shape, w_shape, attrs, dtype):
    x, w = forms.inputs(x_shape, w_shape, dtype)
    _check_values(x, w, attrs, dtype)
    _check_exact(x_shape, w_shape, attrs, dtype)


def _bound(magnitude, terms, dtype):
    """(terms + 1) FLOAT32 rounding units of the terms' magnitude, and for FLOAT16 half a unit of
    its one rounding (the operator's growth, docs/semantics.md#accumulating-operators)."""
    bound = (terms + 1) * EPS32 * magnitude
    return bound + np.finfo(np.float16).eps * magnitude if dtype == np.float16 else bound


def _close(got, want, bound, what):
    err = np.abs(np.asarray(got, np.float64) - want)
    assert (err <= bound).all(), f"{what}: worst {err.max():.3g} against {bound.flat[np.argmax(err - bound)]:.3g}"


@pytest.mark.parametrize("geometry,dtype", tiers.fast_sample(
    [(g, t) for g in (0, 2, 4, 6, 7) for t in (np.float32, np.float16)], keep=1, key="phases-grad"))
def test_gradients_match_the_reference(geometry, dtype):
    # jax.grad and jax.jvp of the phase form against the reference's derivatives (the products
    # transposed), within (terms + 1) rounding units of the terms' magnitude
    x_shape, w_shape, attrs = GEOMETRIES[geometry]
    full = forms.full(attrs, len(x_shape) - 2)
    x, w = forms.inputs(x_shape, w_shape, dtype, seed=3)
    y_shape = jax.eval_shape(lambda a, b: dmljax.convolution(a, b, **attrs), x, w).shape
    dy, tx = forms.inputs(y_shape, x_shape, dtype, seed=4)
    _, tw = forms.inputs(x_shape, w_shape, dtype, seed=5)

    def both(a, b):
        y, pull = jax.vjp(lambda p, q: dmljax.convolution(p, q, **attrs), a, b)
        _, t = jax.jvp(lambda p, q: dmljax.convolution(p, q, **attrs), (a, b), (tx, tw))
        return (t,) + pull(jnp.asarray(dy))

    with force_kernels(SWITCH):
        t, dx, dw = jax.jit(both)(x, w)
    want_dx, want_dw = reference_grad(dy, x, w, **full)
    mag_dx, mag_dw = reference_grad(dy, x, w, absolute=True, **full)
    taps = int(np.prod(w_shape[1:]))
    _close(dx, want_dx, _bound(mag_dx, taps, dtype), "input gradient")
    _close(dw, want_dw, _bound(mag_dw, int(np.prod(y_shape)) // y_shape[1], dtype), "filter gradient")
    # the tangent: the operator's values of (tx, w) and (x, tw), each within the sum's budget
    want_t = reference(tx, w, **full)[0] + reference(x, tw, **full)[0]
    mag_t = _magnitude(tx, w, **full) + _magnitude(x, tw, **full)
    _close(t, want_t, _bound(mag_t, 2 * w_shape[0] // full["group_count"] * int(np.prod(w_shape[2:])), dtype),
           "tangent")


ONE_PRODUCT = [  # windows no longer than the strides, without dilation, one channel a group
    ((2, 3, 4, 5), (3, 2, 2, 3), {"strides": (2, 3), "group_count": 3, "start_padding": (1, 0),
                                  "output_padding": (1, 2)}),
    ((1, 2, 3, 2, 3), (2, 3, 1, 2, 2), {"strides": (1, 2, 3), "group_count": 2, "end_padding": (0, 1, 0)}),
    ((2, 1, 7), (1, 2, 3), {"strides": (4,), "start_padding": (2,), "output_padding": (3,)}),
]


@pytest.mark.parametrize("x_shape,w_shape,attrs,dtype", tiers.fast_sample(
    [(*g, t) for g in ONE_PRODUCT for t in (np.float32, np.float16)], key="phases-one-product"))
def test_one_product_an_element_is_bit_equal(x_shape, w_shape, attrs, dtype):
    # each output element is one product (or none), so the phase form's values are the
    # input-dilated convolution's bits: by one product (2-D) or with phases no tap lands on (1-D,
    # 3-D); the derivatives sum several products (checked within budget above)
    attrs = {"direction": "BACKWARD", **attrs}
    x, w = forms.inputs(x_shape, w_shape, dtype, seed=6)
    got = _function(attrs, "phases")(x, w)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(_function(attrs, "xla")(x, w)))


def test_plan_of_each_residue():
    # 3 x 3 at stride 2, StartPadding 1, OutputPadding 1, 4 inputs: 8 outputs, positions q + 1 of
    # residue 0 (q odd) get taps 0 and 2 (the second reading one input back), residue 1 tap 1;
    # 5 of each computed, interleaved, cut from position 1
    p = phases.plan(4, 3, 2, 1, 1, 1, 1)
    assert (p.size, p.count, p.skip) == (8, 5, 1)
    (even, odd) = p.phases
    assert (even.residue, even.taps, even.first, even.step, even.offset) == (0, 2, 0, 2, -1)
    assert (odd.residue, odd.taps, odd.first, odd.offset) == (1, 1, 1, 0)
    # a 1-element window at stride 3: two of three phases get no tap
    assert [p.taps for p in phases.plan(4, 1, 3, 1, 0, 0, 0).phases] == [1, 0, 0]
    # dilation 2 at stride 4: taps 0 and 2 land on residue 0, 1 and 3 on residue 2, a step of 2
    # taps reading the input one apart (2 / gcd(4, 2))
    plan = phases.plan(5, 4, 4, 2, 0, 0, 0).phases
    assert [(p.taps, p.first, p.step, p.dilation) for p in plan if p.taps] == [(2, 0, 2, 1), (2, 1, 2, 1)]
    assert [p.taps for p in plan] == [2, 0, 2, 0]


def _facts(x_shape, w_shape, dtype=np.float32, strides=(2, 2), dilations=(1, 1), start=(0, 0), end=(0, 0),
           output_padding=(0, 0), forward=False, groups=1):
    return (x_shape, w_shape, dtype, forward, groups, strides, dilations, start, end, output_padding)


def test_kinds():
    kind = phases.phase_kind
    assert kind(*_facts((1, 4, 5, 5), (4, 2, 2, 2))) == "one product"
    assert kind(*_facts((1, 4, 5, 5), (4, 2, 2, 3), strides=(2, 3), start=(1, 2))) == "one product"
    assert kind(*_facts((1, 4, 5, 5), (4, 2, 4, 4), start=(1, 1), end=(1, 1))) == "one convolution"
    assert kind(*_facts((1, 4, 9), (4, 2, 8), strides=(4,), dilations=(1,), start=(2,), end=(2,),
                        output_padding=(0,))) == "one convolution"
    assert kind(*_facts((1, 4, 5, 5), (4, 2, 3, 3))) == "stacked"  # 2 taps and 1
    assert kind(*_facts((1, 4, 5, 5), (4, 2, 2, 2), dilations=(2, 1))) == "stacked"  # 2 taps and none
    assert kind(*_facts((1, 4, 5, 5), (4, 2, 2, 2), dilations=(3, 1))) == "stacked"  # 1 tap, 2 offsets
    assert kind(*_facts((1, 4, 5, 5), (4, 2, 1, 1), strides=(2, 1))) == "stacked"  # 1 tap and none
    for refused in (dict(forward=True), dict(strides=(1, 1)), dict(dtype=np.float64)):
        assert kind(*_facts((1, 4, 5, 5), (4, 2, 2, 2), **{"dtype": np.float32, **refused})) is None, refused
    assert set(phases.RULE) == {"cpu", "cuda"}
    every = {(k, t, d) for k in phases.KINDS for t in ("float32", "float16") for d in phases.DIRECTIONS}
    every |= {(k, "float16 sums", "fwd") for k in phases.KINDS}  # the output with a bias
    for platform, rule in phases.RULE.items():
        assert set(rule) == every and set(rule.values()) <= {"xla", "phases"}, platform


# a call of each kind, the facts of its first argument
RULE_CASES = {
    "one product": ((2, 8, 6, 6), (8, 4, 2, 2), {"direction": "BACKWARD", "strides": (2, 2)}),
    "one convolution": ((2, 8, 6, 6), (8, 4, 4, 4), {"direction": "BACKWARD", "strides": (2, 2),
                                                     "start_padding": (1, 1), "end_padding": (1, 1)}),
    "stacked": ((2, 8, 6, 6), (8, 4, 3, 3), {"direction": "BACKWARD", "strides": (2, 2), "start_padding": (1, 1),
                                             "end_padding": (1, 1), "output_padding": (1, 1)}),
}


def _dilated_count(f, *args, platform) -> int:
    """How many input-dilated convolutions (XLA's form) ``f``'s program for ``platform`` holds."""
    text = jax.jit(f).trace(*args).lower(lowering_platforms=(platform,)).as_text()
    return sum(any(int(v) > 1 for v in m.split(",")) for m in re.findall(r"lhs_dilate = \[([\d, ]+)\]", text))


@pytest.mark.parametrize("kind", tiers.fast_sample(phases.KINDS))
def test_the_rule_takes_the_form_where_it_says(kind):
    # lowered for each platform, the output, its tangent in the input and its tangent in the
    # filter each hold the input-dilated convolution where RULE says "xla" for that direction and
    # the phases' convolutions where it says "phases" (a program of the tangent alone: the output
    # it does not need is left out). The rule's type (phases.rule_type): a FLOAT16 call's output
    # with a bias is FLOAT32 sums rounded once after the bias; without one, and in its gradients,
    # CUDA asks for the FLOAT16 result (the CPU's gradients widen the operands to FLOAT32)
    x_shape, w_shape, attrs = RULE_CASES[kind]
    full = forms.full(attrs, 2)
    bias = jax.ShapeDtypeStruct((1, w_shape[1], 1, 1), np.float32)

    def conv(a, b):  # with a bias and without one
        return dmljax.convolution(a, b, jnp.zeros(bias.shape, a.dtype), **attrs)

    def by_input(a, b, t):
        return jax.jvp(lambda p: conv(p, b), (a,), (t,))[1]

    def by_filter(a, b, t):
        return jax.jvp(lambda q: conv(a, q), (b,), (t,))[1]
    for dtype in (np.float32, np.float16):
        x, w = (jax.ShapeDtypeStruct(s, dtype) for s in (x_shape, w_shape))
        assert phases.phase_kind(x_shape, w_shape, dtype, False, 1, full["strides"], full["dilations"],
                                 full["start_padding"], full["end_padding"], full["output_padding"]) == kind
        for platform in ("cpu", "cuda"):
            def xla(d, t):
                return phases.RULE[platform][(kind, t, d)] == "xla"
            gradients = "float32" if platform == "cpu" else phases.rule_type(dtype, sums=False)
            where = (platform, np.dtype(dtype).name)
            assert _dilated_count(conv, x, w, platform=platform) == xla("fwd", phases.rule_type(dtype, sums=True)), where
            assert _dilated_count(by_input, x, w, x, platform=platform) == xla("bwd_data", gradients), where
            assert _dilated_count(by_filter, x, w, w, platform=platform) == xla("bwd_filter", gradients), where
            assert _dilated_count(lambda a, b: dmljax.convolution(a, b, **attrs), x, w, platform=platform) == xla(
                "fwd", phases.rule_type(dtype, sums=platform == "cpu")), where


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_a_grouped_call_takes_the_phases_in_every_direction_on_cuda():
    # XLA's grouped input-dilated convolution's filter gradient failed to compile on the H200;
    # lowered for CUDA, a grouped call's output and both tangents hold no input-dilated
    # convolution (on the CPU its kind's RULE holds)
    attrs = {"direction": "BACKWARD", "strides": (2, 2), "group_count": 4, "start_padding": (1, 1),
             "end_padding": (1, 1)}
    for dtype in (np.float32, np.float16):
        x, w = jax.ShapeDtypeStruct((2, 8, 5, 6), dtype), jax.ShapeDtypeStruct((8, 3, 4, 4), dtype)

        def conv(a, b):
            return dmljax.convolution(a, b, **attrs)
        assert phases.GROUPED_ON_CUDA == "phases"
        assert _dilated_count(conv, x, w, platform="cuda") == 0
        assert _dilated_count(lambda a, b, t: jax.jvp(lambda p: conv(p, b), (a,), (t,))[1], x, w, x, platform="cuda") == 0
        assert _dilated_count(lambda a, b, t: jax.jvp(lambda q: conv(a, q), (b,), (t,))[1], x, w, w, platform="cuda") == 0
        assert _dilated_count(conv, x, w, platform="cpu") == 0  # "one convolution": the CPU's RULE takes the phases
        with dmljax.use_kernels(False, SWITCH):
            assert _dilated_count(conv, x, w, platform="cuda") == 1


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
@pytest.mark.parametrize("mixed", [{"fwd": "phases", "bwd_data": "xla", "bwd_filter": "phases"},
                                   {"fwd": "xla", "bwd_data": "phases", "bwd_filter": "xla"}])
def test_each_direction_in_its_own_form_gives_the_same_sums(mixed, monkeypatch):
    # a rule that takes different forms for the output and its two derivatives: the values, the
    # tangent and both gradients (jax.grad by each argument and by both) equal the input-dilated
    # convolution's bit for bit on integer data, and a gradient by one argument computes no
    # convolution for the other's tangent
    x_shape, w_shape, attrs = RULE_CASES["one convolution"]
    for dtype in (np.float32, np.float16):
        for d, form in mixed.items():
            monkeypatch.setitem(phases.RULE["cpu"], ("one convolution", np.dtype(dtype).name, d), form)
        x, w = forms.inputs(x_shape, w_shape, dtype, integers=True)
        y_shape = jax.eval_shape(lambda a, b: dmljax.convolution(a, b, **attrs), x, w).shape
        dy, tx = forms.inputs(y_shape, x_shape, dtype, 1, integers=True)
        _, tw = forms.inputs(x_shape, w_shape, dtype, 2, integers=True)

        def everything(a, b):
            y, pull = jax.vjp(lambda p, q: dmljax.convolution(p, q, **attrs), a, b)
            _, t = jax.jvp(lambda p, q: dmljax.convolution(p, q, **attrs), (a, b), (tx, tw))
            gx = jax.grad(lambda p: jnp.vdot(dmljax.convolution(p, b, **attrs), dy))(a)
            gw = jax.grad(lambda q: jnp.vdot(dmljax.convolution(a, q, **attrs), dy))(b)
            return (y, t, gx, gw) + pull(jnp.asarray(dy))

        got = jax.jit(everything)(x, w)
        with dmljax.use_kernels(False, SWITCH):
            want = jax.jit(everything)(x, w)
        for name, g, h in zip(("value", "tangent", "grad x", "grad w", "input cotangent", "filter cotangent"), got, want):
            assert g.dtype == h.dtype and g.shape == h.shape, name
            np.testing.assert_array_equal(np.asarray(g), np.asarray(h), err_msg=f"{np.dtype(dtype).name} {name}")
        one = jax.make_jaxpr(lambda p: jax.grad(lambda a: jnp.sum(dmljax.convolution(a, w, **attrs)))(p))(x)
        both = jax.make_jaxpr(lambda p, q: jax.grad(lambda a, b: jnp.sum(dmljax.convolution(a, b, **attrs)),
                                                    argnums=(0, 1))(p, q))(x, w)
        assert str(one).count("conv_general_dilated") < str(both).count("conv_general_dilated")


@pytest.mark.parametrize("kind", tiers.fast_sample(phases.KINDS, key="phases-cuda"))
def test_a_forced_form_on_cuda_and_a_switched_off_one_on_the_cpu(kind):
    x_shape, w_shape, attrs = RULE_CASES[kind]
    x, w = (jax.ShapeDtypeStruct(s, np.float16) for s in (x_shape, w_shape))

    def conv(a, b):
        return dmljax.convolution(a, b, **attrs)
    assert not _input_dilated(conv, x, w, platform="cuda", switches=force_kernels(SWITCH))
    assert _input_dilated(conv, x, w, platform="cpu", switches=dmljax.use_kernels(False, SWITCH))


def test_unit_strides_keep_the_convolution():
    x, w = np.ones((1, 2, 4, 4), np.float32), np.ones((2, 3, 3, 3), np.float32)
    assert not phases.CONVOLUTION_PHASES.runs(*_facts(x.shape, w.shape, strides=(1, 1)))
    with force_kernels(SWITCH):
        text = jax.jit(lambda a, b: dmljax.convolution(a, b, direction="BACKWARD")).lower(x, w).as_text()
    assert "convolution" in text


@st.composite
def geometries(draw):
    d = draw(st.integers(1, 3))
    groups = draw(st.integers(1, 3))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    window = tuple(draw(st.integers(1, 5)) for _ in range(d))
    strides = tuple(draw(st.integers(1, 4)) for _ in range(d))
    strides = strides if max(strides) > 1 else (2,) + strides[1:]
    dilations = tuple(draw(st.integers(1, 3)) for _ in range(d))
    spatial = tuple(draw(st.integers(1, 4)) for _ in range(d))
    start, end, output_padding = [], [], []
    for i, s, k, dl in zip(spatial, strides, window, dilations):
        full = (i - 1) * s + dl * (k - 1) + 1  # the output's size unpadded: paddings leave at least one
        o = draw(st.integers(0, 2 * s))
        a = draw(st.integers(0, min(full - 1 + o, 12)))
        start.append(a)
        end.append(draw(st.integers(0, min(3, full - 1 + o - a))))
        output_padding.append(o)
    attrs = {"direction": "BACKWARD", "strides": strides, "dilations": dilations, "start_padding": tuple(start),
             "end_padding": tuple(end),
             "output_padding": tuple(output_padding), "group_count": groups,
             "mode": draw(st.sampled_from(("CROSS_CORRELATION", "CONVOLUTION")))}
    x_shape = (draw(st.integers(1, 2)), groups * cg) + spatial
    return x_shape, (groups * cg, og) + window, attrs


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=15, derandomize=True, deadline=None, database=None)
@given(geometries(), st.sampled_from((np.float32, np.float16)), st.integers(0, 3))
def test_phases_over_random_geometries(geometry, dtype, seed):
    x_shape, w_shape, attrs = geometry
    x, w = forms.inputs(x_shape, w_shape, dtype, seed)
    _check_values(x, w, attrs, dtype)
    _check_exact(x_shape, w_shape, attrs, dtype, seed)
