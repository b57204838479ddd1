"""kernels/elementwise_quantization.py in Pallas's interpreter against the XLA formulas on the CPU,
bit for bit: ``quantize_half`` (FLOAT16 to INT8/UINT8 by a per-tensor scale) over every FLOAT16
value and scales of every kind (random ones of both signs, denormals, extremes, 0, +-inf, NaN),
with zero points at the types' ends and without, element counts that fill the last block and
ones that do not; ``dequantize_nibbles`` (INT4/UINT4 by a per-tensor scale) over every 4-bit
value and zero point, FLOAT32 and FLOAT16 scales with specials and a FLOAT32 denormal. The
compiled kernels are checked on a GPU by tests/gpu/kernels.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dmljax._src.dtypes import DataType
from dmljax._src.kernels.elementwise_quantization import (
    DEQUANTIZE_NIBBLES, NIBBLE_BLOCKS, QUANTIZE_HALF, dequantize_nibbles, quantize_half)
from dmljax._src.linear_quantization import dequantize_values, quantize_values
from tests.tiers import fast_sample

F16 = np.float16
EVERY = np.arange(65536, dtype=np.uint16).view(F16)  # every FLOAT16 value: NaNs, infinities, zeros, denormals
FINITE = np.arange(1, 0x7C00, dtype=np.uint16).view(F16)
SPECIAL = [1, 0.5, 3, 6e-8, 2.0 ** -24, 65504, 0.1, 0.05, 1 / 3, 0, -0.0, np.inf, -np.inf, np.nan, -0.05]


def _scales(seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [F16(s) for s in SPECIAL] + [F16(v) for v in rng.choice(FINITE, 3)] + [-F16(rng.choice(FINITE))]


QUANTIZE_CASES = [(t, z) for t, zps in (("INT8", (3, -128, 127, None)), ("UINT8", (0, 255, None))) for z in zps]


@pytest.mark.parametrize("type_name,zero_point", fast_sample(QUANTIZE_CASES, key="quantize_half"))
def test_quantize_half_is_quantize_values(type_name, zero_point):
    dt = DataType[type_name]
    z = None if zero_point is None else jnp.asarray(np.array([zero_point], dt.dtype))
    x = jnp.asarray(EVERY)
    kernel = jax.jit(lambda x, s, z: quantize_half(x, s, z, dt.dtype, interpret=True))
    formula = jax.jit(lambda x, s, z: quantize_values(x, s, z, dt))
    for s in _scales(len(type_name) + abs(zero_point or 0)):
        s = jnp.asarray(np.array([s], F16))
        got, want = kernel(x, s, z), formula(x, s, z)
        assert got.dtype == want.dtype == dt.dtype and got.shape == x.shape
        np.testing.assert_array_equal(np.asarray(got).astype(np.int32), np.asarray(want).astype(np.int32),
                                      err_msg=f"scale {np.asarray(s)[0]!r}")


def test_quantize_half_with_a_ragged_last_block_and_any_shape():
    dt = DataType.UINT8
    rng = np.random.default_rng(3)
    s, z = jnp.asarray(np.array([0.37], F16)), jnp.asarray(np.array([128], np.uint8))
    for shape in ((), (1,), (3, 5), (4097,), (2, 3, 700)):
        x = jnp.asarray((rng.standard_normal(shape) * 60).astype(F16))
        got = jax.jit(lambda x: quantize_half(x, s, z, dt.dtype, interpret=True))(x)
        want = jax.jit(lambda x: quantize_values(x, s, z, dt))(x)
        assert got.shape == x.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_quantize_half_halves_go_to_even():
    s = jnp.asarray(np.array([0.5], F16))
    x = jnp.asarray(np.array([0.25, 0.75, 1.25, -0.25, -0.75, -1.25, 63.25, 63.75], F16))  # quotients k + 1/2
    got = quantize_half(x, s, None, np.int8, interpret=True)
    np.testing.assert_array_equal(np.asarray(got), [0, 2, 2, 0, -2, -2, 126, 127])


NIBBLE_CASES = [(t, z, s) for t, zps in (("INT4", (None, -8, 7, 1)), ("UINT4", (None, 0, 15, 8)))
                for z in zps for s in (np.float32, F16)]


@pytest.mark.parametrize("type_name,zero_point,scale_type", fast_sample(NIBBLE_CASES, key="dequantize_nibbles"))
def test_dequantize_nibbles_is_dequantize_values(type_name, zero_point, scale_type):
    dt = DataType[type_name]
    lo, hi = (-8, 7) if type_name == "INT4" else (0, 15)
    x = jnp.asarray(np.tile(np.arange(lo, hi + 1), NIBBLE_BLOCKS[-1] // 16 * 3).astype(dt.dtype))
    z = None if zero_point is None else jnp.asarray(np.array([zero_point], dt.dtype))
    specials = [0.05, -3.0, 65504.0, np.inf, -np.inf, np.nan, -0.0, 2.0 ** -24]
    if scale_type == np.float32:
        specials += [1e-40, 3e38, 1.1754944e-38]  # a denormal (flushed: zeros), overflow, the smallest normal
    kernel = jax.jit(lambda x, s, z: dequantize_nibbles(x, s, z, interpret=True))
    formula = jax.jit(lambda x, s, z: dequantize_values(x, s, z))
    for s in specials:
        s = jnp.asarray(np.array([s], scale_type))
        got, want = kernel(x, s, z), formula(x, s, z)
        assert got.dtype == want.dtype == np.dtype(scale_type) and got.shape == x.shape
        np.testing.assert_array_equal(np.asarray(got).view(np.uint32 if scale_type == np.float32 else np.uint16),
                                      np.asarray(want).view(np.uint32 if scale_type == np.float32 else np.uint16),
                                      err_msg=f"scale {np.asarray(s)[0]!r}")


def test_the_rules_take_what_the_kernels_do_and_nothing_else():
    f16, f32, i8, i4 = np.float16, np.float32, np.int8, jnp.int4
    assert QUANTIZE_HALF.applies(1 << 20, f16, f16, i8, True, False)
    assert not QUANTIZE_HALF.applies(1 << 20, f16, f16, i8, False, False)  # a scale per element or axis
    assert not QUANTIZE_HALF.applies(1 << 20, f16, f16, i8, True, True)  # half-precision computation
    assert not QUANTIZE_HALF.applies(1 << 20, f32, f32, i8, True, False)
    assert not QUANTIZE_HALF.applies(1 << 20, f16, f16, i4, True, False)  # 4-bit results: XLA's pairs
    assert DEQUANTIZE_NIBBLES.applies(1 << 20, i4, f32, True, False)
    assert DEQUANTIZE_NIBBLES.applies(3 * 1024, jnp.uint4, f16, True, False)
    assert not DEQUANTIZE_NIBBLES.applies(1000, i4, f32, True, False)  # no block divides it
    assert not DEQUANTIZE_NIBBLES.applies(1 << 20, i8, f32, True, False)
    assert not DEQUANTIZE_NIBBLES.applies(1 << 20, i4, f32, False, False)


def test_one_value_for_the_tensor_is_one_element_or_equal_bits_everywhere():
    from dmljax._src.linear_quantization import _one_value

    assert np.asarray(_one_value(jnp.ones((1, 1), F16))).tolist() == [1.0]  # one element, traced or not
    assert np.asarray(_one_value(np.full((3, 4), 0.5, F16))).tolist() == [0.5]
    assert np.isnan(np.asarray(_one_value(np.full((2, 2), np.nan, np.float32)))).all()
    assert np.asarray(_one_value(np.full(4, 3, jnp.int4))).astype(int).tolist() == [3]
    assert _one_value(np.array([0.0, -0.0], np.float32)) is None  # the zeros' signs differ
    assert _one_value(np.array([1, 2], np.int8)) is None
    assert _one_value(None) is None
    assert jax.jit(lambda t: jnp.zeros(()) if _one_value(t) is None else jnp.ones(()))(jnp.ones(4, F16)) == 0  # traced
