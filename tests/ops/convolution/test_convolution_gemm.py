"""CONVOLUTION as a matrix product (dmljax/_src/kernels/convolution_gemm.py): each form against XLA's
convolution (the path it replaces) and the float64 products, forward and both gradients, NCHW and
NHWC memory, FLOAT16 accumulated in FLOAT32 and FLOAT32 at HIGHEST precision, under jit and vmap;
the programs the forms give (dots, no transposes where the memory suits the form); which calls
each kind covers; and the operator taking a form on CUDA only where the rule or a forced switch
says (force_kernels), every other platform keeping XLA's convolution bit for bit."""

import functools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import dmljax
from dmljax._src.enums import ConvolutionDirection
from dmljax._src.kernel_seam import choose, force_kernels
from dmljax._src.kernels import convolution_gemm as gemm
from dmljax._src.ops.convolution import convolution as conv_op
from tests import tiers

HI = lax.Precision.HIGHEST
FORMS = {"rows": gemm.gemm_rows, "columns": gemm.gemm_columns}
NAMES = {"rows": gemm.CONVOLUTION_GEMM_ROWS.name, "columns": gemm.CONVOLUTION_GEMM_COLUMNS.name}
# (kind, FORWARD, strides, input Sizes, filter Sizes)
KINDS = [("pointwise", True, (1, 1), (3, 6, 5, 4), (4, 6, 1, 1)),
         ("pointwise strided", True, (2, 2), (3, 6, 5, 4), (4, 6, 1, 1)),
         ("pointwise backward", False, (1, 1), (3, 6, 5, 4), (6, 4, 1, 1))]


def _geometry(strides):
    zeros = (0,) * len(strides)
    return {"Strides": strides, "Dilations": (1,) * len(strides), "StartPadding": zeros, "EndPadding": zeros,
            "OutputPadding": zeros}


def _xla(x, w, forward, strides, precision, accumulate):
    direction = ConvolutionDirection.FORWARD if forward else ConvolutionDirection.BACKWARD
    return conv_op._xla(x, w, direction, False, 1, _geometry(strides), precision, accumulate)


def _reference(x, w, forward, strides):
    """float64: the products over the channels at the strided positions."""
    x = np.asarray(x, np.float64)[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    w = np.asarray(w, np.float64).reshape(w.shape[:2])
    return np.einsum("nc...,oc->no...", x, w if forward else w.T)


def _close(got, want, bound, what):
    err = np.abs(np.asarray(got, np.float64) - want)
    assert (err <= bound).all(), f"{what}: worst {err.max():.3g} against a bound of {bound.flat[np.argmax(err - bound)]:.3g}"


def _bound(terms_magnitude, k, out_dtype):
    """(k + 1) FLOAT32 rounding units of the terms' magnitude, plus half a unit of the output's
    type where it is narrower (one rounding)."""
    bound = (k + 1) * np.finfo(np.float32).eps * terms_magnitude
    if np.dtype(out_dtype) == np.float16:
        bound = bound + np.finfo(np.float16).eps * np.abs(terms_magnitude)
    return bound


def _data(dtype, x_shape, w_shape, forward, strides, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = (rng.standard_normal(w_shape) / np.sqrt(x_shape[1])).astype(dtype)
    dy = rng.standard_normal(_reference(x, w, forward, strides).shape).astype(dtype)
    return x, w, dy


CASES = [pytest.param(form, *kind, dtype, memory, id=f"{form}-{kind[0]}-{np.dtype(dtype).name}-{memory}")
         for form in FORMS for kind in KINDS for dtype in (np.float16, np.float32) for memory in ("NCHW", "NHWC")]


@pytest.mark.parametrize("form,kind,forward,strides,x_shape,w_shape,dtype,memory",
                         tiers.fast_sample(CASES, keep=1, key="convolution_gemm"))
def test_form_matches_the_products_and_xla(form, kind, forward, strides, x_shape, w_shape, dtype, memory):
    # the forward as the operator takes it (FLOAT16 operands accumulated in FLOAT32, FLOAT32 at
    # HIGHEST), the gradients as its rules take them (FLOAT16 cotangents in FLOAT16 results,
    # _half_operands' narrow branch), against float64 and against XLA's convolution
    x, w, dy = _data(dtype, x_shape, w_shape, forward, strides)
    half = dtype == np.float16
    precision, accumulate = (None, np.float32) if half else (HI, np.float32)
    to_memory = (lambda a: jnp.transpose(a, (0, 2, 3, 1))) if memory == "NHWC" else (lambda a: a)
    from_memory = (lambda a: jnp.transpose(a, (0, 3, 1, 2))) if memory == "NHWC" else (lambda a: a)

    def run(f, acc):
        # the caller's memory seen as logical NCHW around the call, in one jit (as the benchmark's NHWC)
        return jax.jit(lambda m, b: to_memory(f(from_memory(m), b, forward, strides, precision, acc)))

    xm = to_memory(x)
    y = from_memory(run(FORMS[form], accumulate)(xm, w))
    assert y.dtype == np.float32
    c = x.shape[1] if forward else w.shape[0]
    magnitude = _reference(np.abs(x), np.abs(w), forward, strides)
    _close(y, _reference(x, w, forward, strides), _bound(magnitude, c, np.float32), "forward")
    _close(y, np.asarray(from_memory(run(_xla, accumulate)(xm, w)), np.float64), 2 * _bound(magnitude, c, np.float32),
           "forward against XLA's convolution")

    out = None if half else accumulate  # the gradient rules' products: in the operands' type
    _, pull = jax.vjp(run(FORMS[form], out), xm, w)
    dxm, dw = pull(to_memory(dy))
    dx = from_memory(dxm)
    assert dx.dtype == dtype and dw.dtype == dtype
    w2 = np.asarray(w, np.float64).reshape(w.shape[:2])
    w2 = w2 if forward else w2.T  # {O, C}
    want_dx_strided = np.einsum("no...,oc->nc...", dy.astype(np.float64), w2)
    mag_dx = np.einsum("no...,oc->nc...", np.abs(dy.astype(np.float64)), np.abs(w2))
    want_dx, mag = np.zeros(x.shape), np.zeros(x.shape)
    at = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)
    want_dx[at], mag[at] = want_dx_strided, mag_dx
    o = w2.shape[0]
    _close(dx, want_dx, _bound(mag, o, dtype), "input gradient")
    xs = np.asarray(x, np.float64)[at]
    positions = dy.shape[0] * int(np.prod(dy.shape[2:]))
    dy3, xs3 = dy.astype(np.float64).reshape(dy.shape[:2] + (-1,)), xs.reshape(xs.shape[:2] + (-1,))
    want_dw = np.einsum("nop,ncp->oc", dy3, xs3)
    mag_dw = np.einsum("nop,ncp->oc", np.abs(dy3), np.abs(xs3))
    got_dw = np.asarray(dw, np.float64).reshape(w.shape[:2])
    _close(got_dw if forward else got_dw.T, want_dw, _bound(mag_dw, positions, dtype), "filter gradient")


@pytest.mark.slow
@pytest.mark.parametrize("form", list(FORMS))
def test_form_under_vmap_jvp_and_second_derivatives(form):
    x, w, dy = _data(np.float32, (2, 3, 4, 3), (5, 3, 1, 1), True, (1, 1), seed=1)
    f = FORMS[form]

    def conv(a, b):
        return f(a, b, True, (1, 1), HI, np.float32)

    stacked = np.stack([x, 2 * x])
    got = jax.vmap(conv, (0, None))(stacked, w)
    np.testing.assert_allclose(np.asarray(got[1]), 2 * np.asarray(conv(x, w)), rtol=1e-6)
    _, tangent = jax.jvp(conv, (x, w), (x, w))
    np.testing.assert_allclose(np.asarray(tangent), 2 * np.asarray(conv(x, w)), rtol=1e-6)  # bilinear
    # the filter gradient's derivative by the input: d/dx <dW(x), v> = the product of dy with v
    v = np.ones_like(w)

    def filter_gradient_dot(a):
        return jnp.vdot(jax.vjp(conv, a, w)[1](jnp.asarray(dy))[1], v)
    want = np.einsum("nohw,oc->nchw", dy, v.reshape(5, 3))
    np.testing.assert_allclose(np.asarray(jax.grad(filter_gradient_dot)(x)), want, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_columns_filter_gradient_takes_the_product_that_moves_fewer_bytes():
    # few positions and many channels: one product over images and positions; else per image,
    # summed over the images in FLOAT32 (FLOAT16 operands: one rounding of the FLOAT32 sum)
    for x_shape, w_shape in (((3, 64, 2, 2), (64, 64, 1, 1)), ((3, 4, 8, 8), (4, 4, 1, 1))):
        x, w, dy = _data(np.float16, x_shape, w_shape, True, (1, 1), seed=2)
        _, pull = jax.vjp(lambda a, b: gemm.gemm_columns(a, b, True, (1, 1), None, None), x, w)
        dw = np.asarray(pull(jnp.asarray(dy))[1], np.float64).reshape(w.shape[:2])
        want = np.einsum("nohw,nchw->oc", dy.astype(np.float64), x.astype(np.float64))
        mag = np.einsum("nohw,nchw->oc", np.abs(dy.astype(np.float64)), np.abs(x.astype(np.float64)))
        _close(dw, want, _bound(mag, 3 * x_shape[2] * x_shape[3], np.float16), f"filter gradient {x_shape}")


@pytest.mark.parametrize("method", gemm.FILTER_GRADIENTS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_each_filter_gradient_method_gives_the_sums(method, dtype, monkeypatch):
    # every method the columns form's filter gradient can take, forced: the sum over images and
    # positions within the accumulation bound (FLOAT16: FLOAT32 sums rounded once), 2-D and 1-D
    monkeypatch.setattr(gemm, "FORCED_FILTER_GRADIENT", method)
    precision = None if dtype == np.float16 else HI
    for x_shape, w_shape in (((3, 8, 5, 4), (6, 8, 1, 1)), ((2, 4, 7), (5, 4, 1))):
        x, w, dy = _data(dtype, x_shape, w_shape, True, (1,) * (len(x_shape) - 2), seed=3)
        _, pull = jax.vjp(lambda a, b: gemm.gemm_columns(a, b, True, (1,) * (a.ndim - 2), precision, None), x, w)
        dw = pull(jnp.asarray(dy))[1]
        assert dw.dtype == dtype and dw.shape == w.shape
        dy3 = dy.astype(np.float64).reshape(dy.shape[:2] + (-1,))
        x3 = x.astype(np.float64).reshape(x.shape[:2] + (-1,))
        want = np.einsum("nop,ncp->oc", dy3, x3)
        mag = np.einsum("nop,ncp->oc", np.abs(dy3), np.abs(x3))
        _close(np.asarray(dw, np.float64).reshape(w.shape[:2]), want, _bound(mag, x3.shape[0] * x3.shape[2], dtype),
               f"{method} filter gradient {x_shape}")


def test_the_filter_gradient_rule_and_its_default():
    # below every entry of FILTER_GRADIENT, and for a type it does not list, the method that moves
    # fewer bytes; a forced method wins over both
    assert gemm.filter_gradient_method(np.float64, 64, 64, 4) == "product"
    assert gemm.filter_gradient_method(np.float64, 4, 4, 64) == "partials"
    for dtype, entries in gemm.FILTER_GRADIENT.items():
        for least, method in entries:
            got = gemm.filter_gradient_method(dtype, 4, 4, least)
            assert got == (gemm._fewer_bytes(4, 4, least) if method == "fewer bytes" else method)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(gemm, "FORCED_FILTER_GRADIENT", "xla")
        assert gemm.filter_gradient_method(np.float16, 64, 64, 4) == "xla"


def _ops(f, *args) -> str:
    return jax.jit(f).lower(*args).compile().as_text()


def test_each_form_is_a_product_without_transposes_in_its_memory():
    # compiled here (XLA's CPU pipeline): columns on NCHW memory and rows on NHWC memory are one
    # dot between bitcasts, no transpose or copy of the input or the output
    x = jnp.ones((4, 16, 7, 7), np.float16)
    w = jnp.ones((8, 16, 1, 1), np.float16)
    columns = _ops(lambda a, b: gemm.gemm_columns(a, b, True, (1, 1), None, np.float32), x, w)
    rows = _ops(lambda a, b: jnp.transpose(gemm.gemm_rows(jnp.transpose(a, (0, 3, 1, 2)), b, True, (1, 1), None,
                                                          np.float32), (0, 2, 3, 1)), jnp.transpose(x, (0, 2, 3, 1)), w)
    for name, text in (("columns", columns), ("rows", rows)):
        assert " dot(" in text and " convolution(" not in text, name
        assert " transpose(" not in text and " copy(" not in text, (name, text)


def test_kinds():
    def kind(x_shape, w_shape, dtype=np.float32, forward=True, groups=1, strides=(1, 1), start=(0, 0), end=(0, 0),
             output_padding=(0, 0)):
        return gemm.pointwise_kind(x_shape, w_shape, dtype, forward, groups, strides, (3, 3), start, end,
                                   output_padding)
    assert kind((2, 8, 5, 5), (4, 8, 1, 1)) == "pointwise"
    assert kind((2, 8, 5, 5), (4, 8, 1, 1), np.float16, strides=(2, 1)) == "pointwise strided"
    assert kind((2, 8, 5, 5), (8, 4, 1, 1), forward=False) == "pointwise backward"
    assert kind((2, 8, 5), (4, 8, 1)) == "pointwise"
    for refused in (dict(w_shape=(4, 8, 3, 3)), dict(groups=2, w_shape=(4, 4, 1, 1)), dict(start=(1, 0)),
                    dict(end=(0, 1)), dict(output_padding=(1, 0)), dict(forward=False, strides=(2, 2)),
                    dict(dtype=np.float64)):
        args = {"x_shape": (2, 8, 5, 5), "w_shape": (4, 8, 1, 1), **refused}
        assert kind(**args) is None, refused
    assert {k for k, _ in gemm.RULE} == {"pointwise", "pointwise strided", "pointwise backward"}
    assert set(gemm.RULE.values()) <= {"xla", *gemm.FORMS}
    for entries in gemm.PACKED_RULE.values():  # largest size first, down to every size
        assert [n for n, _ in entries] == sorted({n for n, _ in entries}, reverse=True) and entries[-1][0] == 0
        assert {f for _, f in entries} <= {"xla", *gemm.FORMS}


def _cuda_text(f, *args) -> str:
    return jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


@pytest.mark.parametrize("dtype", tiers.fast_sample([np.float32, np.float16], key="convolution_gemm_operator"))
def test_the_operator_takes_a_forced_form_on_cuda_only(dtype):
    x, w, dy = _data(dtype, (2, 6, 4, 4), (3, 6, 1, 1), True, (2, 2), seed=3)

    def program():
        def both(a, b):  # the forward and both gradients
            y, pull = jax.vjp(lambda p, q: dmljax.convolution(p, q, strides=(2, 2)), a, b)
            return y, pull(jnp.asarray(dy))
        return _cuda_text(both, x, w), dmljax.convolution(x, w, strides=(2, 2))

    with dmljax.use_kernels(False, *NAMES.values()):
        xla_text, want = program()
    assert "stablehlo.convolution" in xla_text and "stablehlo.dot_general" not in xla_text
    for form, name in NAMES.items():
        with force_kernels(name):
            text, got = program()
        # a product in every direction, but the columns form's filter gradient where FILTER_GRADIENT
        # takes XLA's (FLOAT16 at these 4 positions)
        xla_filter_gradient = form == "columns" and gemm.filter_gradient_method(dtype, 3, 6, 4) == "xla"
        assert "stablehlo.dot_general" in text, form
        assert text.count("stablehlo.convolution") == int(xla_filter_gradient), form
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))  # here (CPU): XLA's convolution


def test_the_rule_picks_the_form_by_kind_type_memory_and_size():
    facts = ((2, 8, 5, 5), (4, 8, 1, 1), np.float32, True, 1, (1, 1), (1, 1), (0, 0), (0, 0), (0, 0))
    kernels = (gemm.CONVOLUTION_GEMM_COLUMNS, gemm.CONVOLUTION_GEMM_ROWS)
    want = {"rows": gemm.CONVOLUTION_GEMM_ROWS, "columns": gemm.CONVOLUTION_GEMM_COLUMNS, "xla": None}
    assert choose(*kernels, facts=facts).kernel is want[gemm.RULE[("pointwise", "float32")]]
    half = (facts[0], facts[1], np.float16) + facts[3:]
    assert choose(*kernels, facts=half).kernel is want[gemm.RULE[("pointwise", "float16")]]
    with dmljax.packed_memory():  # NCHW memory as written: by the output's positions an image
        for (kind, dname), entries in gemm.PACKED_RULE.items():
            stride = 1 if kind == "pointwise" else 2
            for least, form in entries:
                for positions in {least, least + 1} - {0}:
                    sized = ((2, 8, 1, stride * positions), facts[1], np.dtype(dname), True, 1, (1, stride)) + facts[6:]
                    assert choose(*kernels, facts=sized).kernel is want[form], (kind, dname, positions)
            if entries[0][0] > 1:  # just below the largest entry's size: the next entry
                below = ((2, 8, 1, stride * (entries[0][0] - 1)), facts[1], np.dtype(dname), True, 1,
                         (1, stride)) + facts[6:]
                assert choose(*kernels, facts=below).kernel is want[entries[1][1]], (kind, dname)
        backward = ((2, 8, 5, 5), (8, 4, 1, 1), np.float16, False) + facts[4:]
        assert choose(*kernels, facts=backward).kernel is want[gemm.RULE[("pointwise backward", "float16")]]
        with dmljax.packed_memory(False):
            assert choose(*kernels, facts=half).kernel is want[gemm.RULE[("pointwise", "float16")]]
    with force_kernels(gemm.CONVOLUTION_GEMM_COLUMNS.name):
        assert choose(*kernels, facts=facts).kernel is gemm.CONVOLUTION_GEMM_COLUMNS
        three = ((2, 8, 5, 5), (4, 8, 3, 3)) + facts[2:]
        assert choose(*kernels, facts=three).kernel is None  # forced only where it can run


def _cuda_program(f, *args) -> str:
    text = _cuda_text(f, *args)
    return "columns" if "stablehlo.dot_general" in text and "stablehlo.convolution" not in text else (
        "xla" if "stablehlo.convolution" in text else "other")


def test_packed_memory_takes_columns_in_a_users_program_on_cuda():
    # NCHW FLOAT16 at 14 x 14: XLA's convolution where XLA orders memory, the per-image product
    # within packed_memory (the forward and the input's gradient; the filter's gradient is XLA's
    # there: FILTER_GRADIENT), the same values here (the CPU); at 56 x 56 all three are products
    x, w, dy = _data(np.float16, (2, 8, 14, 14), (4, 8, 1, 1), True, (1, 1), seed=5)

    def both(a, b, dy=dy):
        y, pull = jax.vjp(lambda p, q: dmljax.convolution(p, q), a, b)
        return y, pull(jnp.asarray(dy))
    assert _cuda_program(both, x, w) == "xla"
    want = jax.jit(both)(x, w)
    with dmljax.packed_memory():
        text = _cuda_text(both, x, w)
        assert "stablehlo.dot_general" in text and text.count("stablehlo.convolution") == 1
        got = jax.jit(both)(x, w)
        large, _, dy_large = _data(np.float16, (1, 8, 56, 56), (4, 8, 1, 1), True, (1, 1), seed=5)
        assert _cuda_program(functools.partial(both, dy=dy_large), large, w) == "columns"
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(TypeError, match="packed_memory: packed is 'yes'; expected True or False"):
        with dmljax.packed_memory("yes"):
            pass


def test_a_call_outside_any_trace_and_a_packed_compiled_operator_assume_packed_memory(monkeypatch):
    # a program of the operator alone reads and writes the caller's arrays as they lie: the rule
    # is asked in packed memory; a compiled operator is, where its descs are all packed. Each
    # call has its own batch size, so that each is traced here (13 x 17 positions an image)
    seen = []
    rule_form = gemm.rule_form

    def spy(*facts):
        seen.append(gemm.memory())
        return rule_form(*facts)
    monkeypatch.setattr(gemm, "rule_form", spy)
    w = np.ones((4, 8, 1, 1), np.float16)
    dmljax.convolution(np.ones((5, 8, 13, 17), np.float16), w)
    assert set(seen) == {"packed"}
    seen.clear()
    jax.jit(lambda a, b: dmljax.convolution(a, b))(np.ones((6, 8, 13, 17), np.float16), w)
    assert set(seen) == {"xla"}

    def compiled(n, strides):
        desc = {"InputTensor": {"DataType": "FLOAT16", "Sizes": [n, 8, 13, 17], "Strides": strides},
                "FilterTensor": {"DataType": "FLOAT16", "Sizes": [4, 8, 1, 1]},
                "OutputTensor": {"DataType": "FLOAT16", "Sizes": [n, 4, 13, 17]},
                "Mode": "CONVOLUTION", "Direction": "FORWARD", "DimensionCount": 2, "Strides": [1, 1],
                "Dilations": [1, 1], "StartPadding": [0, 0], "EndPadding": [0, 0], "OutputPadding": [0, 0],
                "GroupCount": 1}
        seen.clear()
        out = dmljax.compile_operator("CONVOLUTION", desc)(
            InputTensor=np.ones(n * 8 * 13 * 17, np.float16), FilterTensor=w.ravel(),
            OutputTensor=np.zeros(n * 4 * 13 * 17, np.float16))["OutputTensor"]
        np.testing.assert_array_equal(np.asarray(out), np.full(n * 4 * 13 * 17, 8, np.float16))
        return set(seen)
    assert compiled(7, None) == {"packed"}
    assert compiled(9, [8 * 13 * 17, 1, 17 * 8, 8]) == {"xla"}  # NHWC memory through the strides


def test_the_packed_rule_is_what_the_committed_measurements_give():
    # benchmarks/results/h200/convolution/packed.json (resnet50.py --rule-from): at every output
    # size measured with NCHW memory, PACKED_RULE takes the fastest form over the three directions
    path = Path(__file__).resolve().parents[3] / "benchmarks/results/h200/convolution/packed.json"
    points = json.loads(path.read_text())["points"]
    assert {(p["kind"], p["dtype"]) for p in points} == set(gemm.PACKED_RULE)
    for p in points:
        facts = ((2, 8, 1, p["positions"]), (4, 8, 1, 1), np.dtype(p["dtype"]), True, 1,
                 (1, 1) if p["kind"] == "pointwise" else (1, 2), (1, 1), (0, 0), (0, 0), (0, 0))
        if p["kind"] != "pointwise":
            facts = ((2, 8, 1, 2 * p["positions"]),) + facts[1:]
        assert gemm.pointwise_kind(*facts) == p["kind"]
        with dmljax.packed_memory():
            assert gemm.rule_form(*facts) == p["fastest"], p


def test_the_filter_gradient_rule_is_what_the_committed_measurements_give():
    # benchmarks/results/h200/convolution/filter_gradient.json (resnet50.py --rule-from of runs with
    # each method forced): at every output size the columns form takes, FILTER_GRADIENT takes the
    # method whose worst ratio to lax's time is least, and it is never slower than lax's
    path = Path(__file__).resolve().parents[3] / "benchmarks/results/h200/convolution/filter_gradient.json"
    points = json.loads(path.read_text())["points"]
    assert {p["dtype"] for p in points} == set(gemm.FILTER_GRADIENT)
    for p in points:
        assert set(p["ranges_over_lax"]) == set(gemm.FILTER_GRADIENTS)
        assert gemm.filter_gradient_method(np.dtype(p["dtype"]), 4, 4, p["positions"]) == p["method"], p
        assert p["ranges_over_lax"][p["method"]][1] <= 1.02, p  # within the runs' spread of lax's own time
