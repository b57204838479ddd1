"""CONVOLUTION without its unit spatial dimensions (dmljax/_src/kernels/convolution_squeezed.py): a
convolution of fewer spatial dimensions, against the float64 reference within CONVOLUTION's budget
and against the convolution as written (the form it replaces), bit for bit where the sums are
exact (integers), values and gradients (jax.grad and jax.jvp), over the patterns of two and three
spatial dimensions, both directions and modes, groups (the CPU's taps), Strides and Dilations on
the unit dimensions, BACKWARD with strides (the phases), FLOAT32 and FLOAT16; which calls each kind
covers, and the rule taking the form where it says, on the CPU and (forced) on CUDA."""

import re

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmljax
from dmljax._src.kernel_seam import force_kernels
from dmljax._src.kernels import convolution_squeezed as squeezed
from tests import tiers
from tests.ops.convolution import forms

SWITCH = squeezed.CONVOLUTION_SQUEEZED.name

# (input Sizes, filter Sizes, attributes)
GEOMETRIES = [
    # a 1-D convolution exported as 2-D: a K x 1 window over {N, C, H, 1} (Magika), and 1 x K over
    # {N, C, 1, W} with padding and a stride (Silero VAD)
    ((2, 4, 9, 1), (3, 4, 3, 1), {}),
    ((2, 3, 1, 8), (4, 3, 1, 3), {"strides": (1, 2), "start_padding": (0, 1), "end_padding": (0, 1)}),
    # CONVOLUTION mode, Strides and Dilations on the unit dimension (which change nothing), two groups
    ((1, 4, 7, 1), (6, 2, 3, 1), {"mode": "CONVOLUTION", "strides": (2, 3), "dilations": (1, 4), "group_count": 2}),
    # depthwise (the CPU's taps), and BACKWARD with strides (the phases), in the fewer dimensions
    ((1, 4, 1, 9), (4, 1, 1, 5), {"group_count": 4, "start_padding": (0, 2), "end_padding": (0, 2)}),
    ((2, 4, 5, 1), (4, 3, 4, 1), {"direction": "BACKWARD", "strides": (2, 1), "start_padding": (1, 0),
                                  "end_padding": (1, 0), "output_padding": (1, 0)}),
    # three spatial dimensions: one unit (a 2-D convolution left), two unit (1-D)
    ((1, 3, 1, 5, 4), (2, 3, 1, 3, 2), {"start_padding": (0, 1, 0), "dilations": (1, 1, 2)}),
    ((2, 2, 6, 1, 1), (2, 3, 2, 1, 1), {"direction": "BACKWARD", "mode": "CONVOLUTION"}),
    ((1, 2, 4, 1, 5), (2, 2, 3, 1, 3), {"strides": (1, 1, 2), "end_padding": (1, 0, 1)}),
]


def _ranks(f, *args, platform="cpu", switches=None) -> set[int]:
    """The ranks of the operands of the convolutions in ``f``'s program for ``platform``."""
    with switches or force_kernels():
        text = jax.jit(f).trace(*args).lower(lowering_platforms=(platform,)).as_text()
    return {len(m.split("x")) - 1 for m in re.findall(r"stablehlo\.convolution\(.*?\) .*?: \(tensor<([^>]*)>", text)}


def _check_values(x, w, attrs, dtype):
    forms.check_values(x, w, attrs, dtype, SWITCH)


def _check_exact(x_shape, w_shape, attrs, dtype, seed=0):
    """The squeezed form bit for bit against the written convolution (forms.check_exact), its
    program's convolutions (where a group has several channels: the taps hold none) of fewer
    dimensions."""
    def programs(everything, x, w):
        kept = len(x_shape) - len(squeezed.unit_dimensions(x_shape, w_shape, *(forms.full(attrs, len(x_shape) - 2)[n]
                                                                               for n in ("start_padding", "end_padding",
                                                                                         "output_padding"))))
        assert _ranks(everything, x, w, switches=force_kernels(SWITCH)) <= {kept}
        assert _ranks(everything, x, w, switches=dmljax.use_kernels(False, SWITCH)) <= {len(x_shape)}
    forms.check_exact(x_shape, w_shape, attrs, dtype, SWITCH, seed, programs)


@pytest.mark.parametrize("x_shape,w_shape,attrs,dtype", tiers.fast_sample(
    [(*g, t) for t in (np.float32, np.float16) for g in GEOMETRIES], keep=2, key="squeezed"))
def test_squeezed_matches_the_reference_and_the_written_convolution(x_shape, w_shape, attrs, dtype):
    x, w = forms.inputs(x_shape, w_shape, dtype)
    _check_values(x, w, attrs, dtype)
    _check_exact(x_shape, w_shape, attrs, dtype)


def _facts(x_shape, w_shape, dtype=np.float32, start=None, end=None, output_padding=None, forward=True, groups=1):
    d = len(x_shape) - 2
    zeros = (0,) * d
    return (x_shape, w_shape, dtype, forward, groups, (1,) * d, (1,) * d, start or zeros, end or zeros,
            output_padding or zeros)


def test_kinds():
    kind = squeezed.squeeze_kind
    assert kind(*_facts((2, 256, 512, 1), (512, 256, 5, 1))) == "K x 1"
    assert kind(*_facts((8, 129, 1, 4), (128, 129, 1, 3), start=(0, 1), end=(0, 1))) == "1 x K"
    assert kind(*_facts((1, 2, 1, 5, 1), (2, 2, 1, 3, 1), forward=False)) == "1 x K x 1"
    assert kind(*_facts((1, 2, 3, 1, 5), (2, 2, 3, 1, 3))) == "K x 1 x K"
    # a unit input with a padded or longer window, or OutputPadding, is not a unit dimension
    assert kind(*_facts((1, 2, 5, 1), (2, 2, 3, 1), start=(0, 1))) is None
    assert kind(*_facts((1, 2, 5, 1), (2, 2, 3, 1), output_padding=(0, 1))) is None
    assert kind(*_facts((1, 2, 5, 1), (2, 2, 3, 2), start=(0, 1), end=(0, 0))) is None
    # all dimensions unit (none left), none unit, one spatial dimension, other types
    assert kind(*_facts((1, 8, 1, 1), (4, 8, 1, 1))) is None
    assert kind(*_facts((1, 8, 5, 5), (4, 8, 3, 3))) is None
    assert kind(*_facts((1, 8, 1), (4, 8, 1))) is None
    assert kind(*_facts((1, 8, 5, 1), (4, 8, 3, 1), dtype=np.float64)) is None
    assert squeezed.KINDS == ("K x 1", "1 x K", "K x K x 1", "K x 1 x K", "K x 1 x 1", "1 x K x K", "1 x K x 1",
                              "1 x 1 x K")
    assert set(squeezed.RULE) == {"cpu", "cuda"}
    for platform, rule in squeezed.RULE.items():
        assert {k for k, _ in rule} == set(squeezed.KINDS) and set(rule.values()) <= {"xla", "squeezed"}, platform


def _call(kind):
    """A call of ``kind``: one kept dimension of 6 with a window of 3, the unit ones 1 with a window of 1."""
    spatial = tuple(6 if p == "K" else 1 for p in kind.split(" x "))
    window = tuple(3 if p == "K" else 1 for p in kind.split(" x "))
    return (2, 4) + spatial, (3, 4) + window


@pytest.mark.parametrize("kind", squeezed.KINDS)
def test_the_rule_takes_the_form_where_it_says(kind):
    # lowered for the CPU, a call of each kind holds a convolution of fewer dimensions where
    # RULE["cpu"] says "squeezed" and of all of them where it says "xla"; lowered for CUDA, where
    # RULE["cuda"] says
    x_shape, w_shape = _call(kind)
    kept = 2 + kind.count("K")
    for dtype in (np.float32, np.float16):
        x, w = (jax.ShapeDtypeStruct(s, dtype) for s in (x_shape, w_shape))
        assert squeezed.squeeze_kind(*_facts(x_shape, w_shape, dtype)) == kind
        for platform in ("cpu", "cuda"):
            takes = squeezed.RULE[platform][(kind, np.dtype(dtype).name)] == "squeezed"
            assert _ranks(dmljax.convolution, x, w, platform=platform) == {kept if takes else len(x_shape)}, (
                platform, dtype)


@pytest.mark.parametrize("kind", tiers.fast_sample(squeezed.KINDS, key="squeezed-cuda"))
def test_a_forced_form_on_cuda_and_a_switched_off_one_on_the_cpu(kind):
    x_shape, w_shape = _call(kind)
    x, w = (jax.ShapeDtypeStruct(s, np.float32) for s in (x_shape, w_shape))
    assert _ranks(dmljax.convolution, x, w, platform="cuda", switches=force_kernels(SWITCH)) == {
        2 + kind.count("K")}
    assert _ranks(dmljax.convolution, x, w, platform="cpu", switches=dmljax.use_kernels(False, SWITCH)) == {
        len(x_shape)}


def test_no_unit_dimension_keeps_the_convolution():
    assert not squeezed.CONVOLUTION_SQUEEZED.runs(*_facts((1, 2, 4, 4), (2, 2, 3, 3)))
    x, w = jax.ShapeDtypeStruct((1, 2, 4, 4), np.float32), jax.ShapeDtypeStruct((2, 2, 3, 3), np.float32)
    assert _ranks(dmljax.convolution, x, w, switches=force_kernels(SWITCH)) == {4}


@st.composite
def geometries(draw):
    d = draw(st.integers(2, 3))
    unit = draw(st.sets(st.integers(0, d - 1), min_size=1, max_size=d - 1))
    groups = draw(st.integers(1, 2))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    direction = draw(st.sampled_from(("FORWARD", "BACKWARD")))
    spatial, window, strides, dilations, start, end, output_padding = [], [], [], [], [], [], []
    for i in range(d):
        s, dl = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        strides.append(s)
        dilations.append(dl)
        if i in unit:
            spatial.append(1), window.append(1), start.append(0), end.append(0), output_padding.append(0)
            continue
        k = draw(st.integers(1, 3))
        size = draw(st.integers(2, 6))  # a kept dimension: more than one input element
        span = dl * (k - 1) + 1
        o = draw(st.integers(0, s - 1)) if direction == "BACKWARD" else 0
        if direction == "FORWARD":
            size = max(size, span)
            a, b = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        else:
            full = (size - 1) * s + span
            a = draw(st.integers(0, min(full - 1 + o, 2)))
            b = draw(st.integers(0, min(full - 1 + o - a, 2)))
        spatial.append(size), window.append(k), start.append(a), end.append(b), output_padding.append(o)
    attrs = {"direction": direction, "strides": tuple(strides), "dilations": tuple(dilations),
             "start_padding": tuple(start), "end_padding": tuple(end), "output_padding": tuple(output_padding),
             "group_count": groups, "mode": draw(st.sampled_from(("CROSS_CORRELATION", "CONVOLUTION")))}
    c = groups * cg
    w_shape = ((groups * og, cg) if direction == "FORWARD" else (c, og)) + tuple(window)
    return (draw(st.integers(1, 2)), c) + tuple(spatial), w_shape, attrs


@pytest.mark.slow
@pytest.mark.fuzz
@settings(max_examples=15, derandomize=True, deadline=None, database=None)
@given(geometries(), st.sampled_from((np.float32, np.float16)), st.integers(0, 3))
def test_squeezed_over_random_geometries(geometry, dtype, seed):
    x_shape, w_shape, attrs = geometry
    x, w = forms.inputs(x_shape, w_shape, dtype, seed)
    _check_values(x, w, attrs, dtype)
    _check_exact(x_shape, w_shape, attrs, dtype, seed)
