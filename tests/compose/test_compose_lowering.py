"""Each composition lowers to DirectML operators only: its jaxpr holds the operators it names in
its docstring (each under its DML enum's named scope) and otherwise only data movement (views)."""

import re
from pathlib import Path

import jax
import numpy as np
import pytest

import dmljax
from dmljax import compose
from tests.compose.lowering import dml_operators

f32 = np.float32
R = np.random.default_rng(0)


def a(*shape, dtype=f32):
    return R.standard_normal(shape).astype(dtype)


CASES = {
    "broadcast_to": (lambda x: compose.broadcast_to(x, (3, 2, 4)), (a(2, 1),), []),
    "transpose": (lambda x: compose.transpose(x, (1, 0)), (a(2, 3),), []),
    "reshape": (lambda x: compose.reshape(x, (3, -1)), (a(2, 3),), []),
    "slice": (lambda x: compose.slice(x, [1], [None], [-1], axes=[1]), (a(2, 3),), ["SLICE1"]),
    "concatenate": (lambda x: compose.concatenate([x, x], axis=-1), (a(2, 3),), ["JOIN"]),
    "split": (lambda x: compose.split(x, 3, axis=1), (a(2, 3),), ["SPLIT"]),
    "add": (compose.add, (a(2, 3), a(3)), ["ELEMENT_WISE_ADD"]),
    "mean": (lambda x: compose.mean(x, axis=-1), (a(2, 3),), ["REDUCE"]),
    "softmax": (compose.softmax, (a(2, 3),), ["ACTIVATION_SOFTMAX1"]),
    "gelu": (compose.gelu, (a(2, 3),), ["ACTIVATION_GELU"]),
    "matmul": (compose.matmul, (a(4, 1, 2, 3), a(5, 3, 2)), ["GEMM"]),
    "linear": (compose.linear, (a(4, 2, 3), a(5, 3), a(5)), ["GEMM"]),
    "layer_norm": (compose.layer_norm, (a(2, 3), a(3), a(3)), ["MEAN_VARIANCE_NORMALIZATION1"]),
    "embedding": (compose.embedding, (a(5, 3), np.array([[0, 4]], np.int32)), ["GATHER"]),
    "conv2d": (lambda x, w, b: compose.conv2d(x, w, b, padding="same"), (a(1, 2, 4, 4), a(3, 2, 3, 3), a(3)),
               ["CONVOLUTION"]),
    "attention": (lambda q, k, v: compose.attention(q, k, v, num_heads=2), (a(1, 3, 4), a(1, 3, 4), a(1, 3, 4)),
                  ["MULTIHEAD_ATTENTION"]),
    "attention, causal and a bool mask": (
        lambda q, k, v, m: compose.attention(q, k, v, m, num_heads=2, causal=True),
        (a(1, 3, 4), a(1, 3, 4), a(1, 3, 4), np.ones((1, 1, 1, 3), bool)),
        ["ELEMENT_WISE_LOGICAL_AND", "CAST", "MULTIHEAD_ATTENTION"]),
    "cross_entropy": (compose.cross_entropy, (a(2, 5), np.array([1, 4], np.int32)),
                      ["ACTIVATION_LOG_SOFTMAX1", "GATHER_ELEMENTS", "REDUCE", "ELEMENT_WISE_NEGATE"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_composition_calls_directml_operators_and_moves_data_otherwise(name):
    fn, args, expected = CASES[name]
    assert dml_operators(fn, *args) == [f"DML_OPERATOR_{o}" for o in expected]


def test_each_docstring_names_the_operators_its_composition_lowers_to():
    for name, (fn, args, expected) in CASES.items():
        public = getattr(compose, name.split(",")[0])
        doc = public.__doc__ or ""
        for op in expected:
            assert f"DML_OPERATOR_{op}" in doc or f"{op}" in doc, (name, op)
        if not expected:
            assert re.search(r"desc|stride", doc), name


def test_the_checker_finds_arithmetic_outside_an_operator():
    with pytest.raises(AssertionError, match="add runs outside any DirectML operator"):
        dml_operators(lambda x: compose.gelu(x) + 1.0, a(2, 3))


def test_the_compose_page_lists_every_public_name_and_the_module_exports_them_sorted():
    page = (Path(__file__).resolve().parents[2] / "docs" / "compose.md").read_text(encoding="utf-8")
    for name in compose.__all__:
        assert f"`{name}(" in page or f"`{name}`" in page or f", `{name}" in page, name
        assert getattr(compose, name).__doc__, name
    assert compose.__all__ == sorted(compose.__all__)


@pytest.mark.parametrize("name", list(CASES))
def test_float16_in_is_float16_out_and_a_mixed_call_is_refused(name):
    fn, args, _ = CASES[name]
    half = [x.astype(np.float16) if x.dtype == f32 else x for x in args]
    outs = jax.tree_util.tree_leaves(jax.eval_shape(fn, *half))
    assert outs and all(o.dtype == np.float16 for o in outs), outs
    floats = [i for i, x in enumerate(args) if x.dtype == f32]
    if len(floats) > 1:  # one float16 operand among float32 ones: refused, never promoted
        mixed = list(args)
        mixed[floats[-1]] = args[floats[-1]].astype(np.float16)
        with pytest.raises(dmljax.ValidationError, match=r"have DataTypes FLOAT32, FLOAT16|FLOAT16; they must"):
            fn(*mixed)
