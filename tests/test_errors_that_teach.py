"""What a newcomer runs into first, and the message or the result it gets: an attribute traced by
jax.jit names both ways to make it static; negative axes count from the end; a bare integer is a
one-entry array; False/True are MatrixTransform's NONE/TRANSPOSE; a bool for another enum, an
axis out of range and a desc's negative axis get a tip with the accepted form; a refused call
names the caller's line. Messages are part of the contract: they are compared whole."""

import functools

import jax
import numpy as np
import pytest

import dmljax
from dmljax import ValidationError

X = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) / 60


def message(fn) -> str:
    with pytest.raises(ValidationError) as e:
        fn()
    return str(e.value)


def test_a_traced_attribute_names_static_argnames_and_partial():
    text = message(lambda: jax.jit(dmljax.activation_softmax1)(X, axes=(2,)))
    assert text == (
        "activation_softmax1 (DML_OPERATOR_ACTIVATION_SOFTMAX1) at DML_FEATURE_LEVEL_6_4:\n"
        "  Axes (argument `axes`) is a traced value (JitTracer(~int32[])); attributes are fixed when the "
        "operator is created, so they must be Python values, and jax.jit traces every argument of the "
        "function it compiles that is not static.\n"
        "    Tip: make it static: jax.jit(f, static_argnames=(\"axes\",)) where f takes it as `axes` (a tuple, "
        "not a list), or bind it first: jax.jit(functools.partial(dmljax.activation_softmax1, axes=...)).")
    # both remedies work
    want = dmljax.activation_softmax1(X, axes=(2,))
    np.testing.assert_array_equal(jax.jit(dmljax.activation_softmax1, static_argnames=("axes",))(X, axes=(2,)), want)
    np.testing.assert_array_equal(jax.jit(functools.partial(dmljax.activation_softmax1, axes=(2,)))(X), want)
    # a scalar attribute too
    text = message(lambda: jax.jit(dmljax.activation_elu)(X, alpha=0.5))
    assert "Alpha (argument `alpha`) is a traced value (JitTracer(~float32[]))" in text
    assert 'static_argnames=("alpha",)' in text


def test_negative_axes_count_from_the_end():
    np.testing.assert_array_equal(dmljax.activation_softmax1(X, axes=(-1,)), dmljax.activation_softmax1(X, axes=(3,)))
    np.testing.assert_array_equal(dmljax.reduce(X, function="SUM", axes=(-2, -1)), dmljax.reduce(X, function="SUM", axes=(2, 3)))
    values, _ = dmljax.top_k(X, axis=-1, k=2)
    np.testing.assert_array_equal(values, dmljax.top_k(X, axis=3, k=2)[0])
    assert message(lambda: dmljax.activation_softmax1(X, axes=(-5,))) == (
        "activation_softmax1 (DML_OPERATOR_ACTIVATION_SOFTMAX1) at DML_FEATURE_LEVEL_6_4:\n"
        "  Axes[0] (argument `axes[0]`) is -5; InputTensor has 4 dimensions: an axis is -4 to 3.")


def test_a_desc_reads_axes_as_directml_does():
    desc = {"InputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 3]}, "Axes": [-1]}
    assert message(lambda: dmljax.compile_operator("ACTIVATION_SOFTMAX1", desc)) == (
        "activation_softmax1 (DML_OPERATOR_ACTIVATION_SOFTMAX1) at DML_FEATURE_LEVEL_6_4:\n"
        "  Axes[0] (argument `axes[0]`) is -1; a UINT is 0 to 4294967295.\n"
        "    Tip: DirectML counts axes from 0; in a desc, the last axis is the dimension count - 1 "
        "(a call from Python also takes -1).")


def test_a_bare_integer_is_a_one_entry_array():
    np.testing.assert_array_equal(dmljax.activation_softmax1(X, axes=2), dmljax.activation_softmax1(X, axes=(2,)))
    np.testing.assert_array_equal(dmljax.activation_softmax1(X, axes=-1), dmljax.activation_softmax1(X, axes=(3,)))
    assert message(lambda: dmljax.activation_softmax1(X, axes="2")) == (
        "activation_softmax1 (DML_OPERATOR_ACTIVATION_SOFTMAX1) at DML_FEATURE_LEVEL_6_4:\n"
        "  Axes (argument `axes`) is '2' (str); expected a sequence of UINT.\n"
        "    Tip: pass a tuple: axes=(2,).")


def test_booleans_for_matrix_transform_and_a_tip_for_other_enums():
    a = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)
    np.testing.assert_array_equal(dmljax.gemm(a, a, trans_b=True), dmljax.gemm(a, a, trans_b="TRANSPOSE"))
    np.testing.assert_array_equal(dmljax.gemm(a, a.reshape(1, 1, 3, 2), trans_b=False), dmljax.gemm(a, a.reshape(1, 1, 3, 2)))
    x, w = np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 1, 1), np.float32)
    assert message(lambda: dmljax.convolution(x, w, mode=True)) == (
        "convolution (DML_OPERATOR_CONVOLUTION) at DML_FEATURE_LEVEL_6_4:\n"
        "  Mode (argument `mode`) is True; valid: DML_CONVOLUTION_MODE_CONVOLUTION (0), "
        "DML_CONVOLUTION_MODE_CROSS_CORRELATION (1).\n"
        "    Tip: DML_CONVOLUTION_MODE is an enum, not a BOOL: pass a member or its name, e.g. mode='CROSS_CORRELATION'.")


def _model(a, b):
    c = dmljax.element_wise_multiply(a, a)
    return dmljax.element_wise_add(c, b)  # the line the note names


def test_mixed_float16_and_float32_names_the_call():
    with pytest.raises(ValidationError) as e:
        jax.jit(_model)(np.ones(3, np.float16), np.ones(3, np.float32))
    assert str(e.value) == (
        "element_wise_add (DML_OPERATOR_ELEMENT_WISE_ADD) at DML_FEATURE_LEVEL_6_4:\n"
        "  ATensor (argument `a`) and BTensor (argument `b`) have DataTypes FLOAT16, FLOAT32; they must have "
        "the same DataType.\n"
        "    Tip: cast explicitly: DirectML never promotes types.")
    line = _model.__code__.co_firstlineno + 2
    assert e.value.__notes__[0] == (  # JAX adds its own note after it
        f"The call: {__file__}:{line}, in _model: return dmljax.element_wise_add(c, b)  # the line the note names")
