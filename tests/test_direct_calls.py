"""Direct (eager) operator calls: the cache that lets a repeated call skip binding and validation
must never let a call through that validation would refuse, nor run another call's program; and
a chain of operators flushes each FLOAT32 value once, at the operator that stored it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src import numerics
from dmljax._src.errors import ValidationError
from dmljax._src.kernel_seam import use_kernels


def _f32(*values):
    return jnp.asarray(np.array(values, np.float32))


def test_a_repeated_call_gives_its_own_attributes_result():
    x = _f32(-1.0, 0.0, 2.0)
    assert np.array_equal(dmljax.element_wise_threshold(x, min=0.5), [0.5, 0.5, 2.0])
    assert np.array_equal(dmljax.element_wise_threshold(x, min=1.5), [1.5, 1.5, 2.0])
    # -0.0 and 0.0 are equal keys to ==, not to the cache: a tie returns Min, with its sign
    neg = dmljax.element_wise_threshold(_f32(0.0), min=-0.0)
    pos = dmljax.element_wise_threshold(_f32(-0.0), min=0.0)
    assert np.signbit(np.asarray(neg))[0] and not np.signbit(np.asarray(pos))[0]


def test_a_cached_call_is_still_refused_where_validation_refuses():
    x = _f32(1.0, 2.0)
    dmljax.element_wise_clip1(x, min=0.0, max=1.0)
    dmljax.element_wise_clip1(x, min=0.0, max=1.0)
    with dmljax.feature_level("4_0"), pytest.raises(ValidationError, match="CLIP1"):
        dmljax.element_wise_clip1(x, min=0.0, max=1.0)
    with pytest.raises(ValidationError):
        dmljax.element_wise_clip1(x, min=0.0, max=1.0, feature_level="4_0")
    with pytest.raises(ValidationError):
        dmljax.element_wise_clip1(x, min="zero", max=1.0)
    dmljax.element_wise_add(x, x)
    with pytest.raises(ValidationError):
        dmljax.element_wise_add(x, _f32(1.0, 2.0, 3.0))


def test_values_are_read_at_every_call_where_the_operator_checks_them():
    x = np.array([1.0, 2.0], np.float32)
    scale = np.full(2, 0.5, np.float32)
    assert np.array_equal(dmljax.element_wise_quantize_linear(x, scale), [2, 4])
    scale[...] = 0.0  # same shape and dtype: only the value tells the calls apart
    with pytest.raises(ValidationError):
        dmljax.element_wise_quantize_linear(x, scale)


def test_a_numpy_input_changed_in_place_is_read_again():
    x = np.array([1.0, 4.0], np.float32)
    first = np.asarray(dmljax.element_wise_sqrt(x))
    x[...] = [9.0, 16.0]
    assert np.array_equal(first, [1.0, 2.0])
    assert np.array_equal(dmljax.element_wise_sqrt(x), [3.0, 4.0])


def test_a_call_with_kernels_off_runs_the_xla_formula():
    x = _f32(*range(8))
    on = dmljax.cumulative_summation(x, axis=0)
    with use_kernels(False):
        off = dmljax.cumulative_summation(x, axis=0)
    assert np.array_equal(on, off)


def _flushes(text: str) -> int:
    return text.count("1.17549435E-38")


CHAIN = (
    lambda y, b: dmljax.element_wise_threshold(y, min=-0.5),
    lambda y, b: dmljax.element_wise_constant_pow(y, exponent=3.0),
    lambda y, b: dmljax.element_wise_modulus_floor(y, b),
    lambda y, b: dmljax.element_wise_abs(y),
    lambda y, b: dmljax.element_wise_exp(y),
    lambda y, b: dmljax.activation_scaled_elu(y),
    lambda y, b: dmljax.element_wise_sqrt(y),
)


def _lowered(fns):
    def run(x, b):
        for f in fns:
            x = f(x, b)
        return x
    arg = jax.ShapeDtypeStruct((16,), jnp.float32)
    # lowered for CUDA, where a flush is the select that compares with the smallest normal (the
    # CPU's form works on the bits)
    return jax.jit(run).trace(arg, arg).lower(lowering_platforms=("cuda",)).as_text()


def test_a_chain_flushes_each_value_once():
    # Alone, each operator flushes what it reads and what it stores; in the chain, what an
    # operator reads from the one before it was stored flushed already.
    alone = [_flushes(_lowered([f])) for f in CHAIN]
    assert _flushes(_lowered(CHAIN)) == sum(alone) - (len(CHAIN) - 1)


def test_skipping_a_flush_keeps_every_bit(monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4096).astype(np.float32) * np.float32(1e-36)  # denormals on the way
    x[:64] = np.float32(1e-40)
    b = np.where(rng.random(4096) < 0.5, -1, 1).astype(np.float32) * rng.uniform(0.5, 2, 4096).astype(np.float32)

    def run(x, b):
        for f in CHAIN:
            x = f(x, b)
        return x

    once = np.asarray(jax.jit(run)(x, b))
    monkeypatch.setattr(numerics, "is_flushed", lambda x: False)
    import dmljax._src.op as op_module
    monkeypatch.setattr(op_module, "is_flushed", lambda x: False)
    twice = np.asarray(jax.jit(run)(x, b))
    assert _flushes(_lowered(CHAIN)) == sum(_flushes(_lowered([f])) for f in CHAIN)
    np.testing.assert_array_equal(once.view(np.uint32), twice.view(np.uint32))
