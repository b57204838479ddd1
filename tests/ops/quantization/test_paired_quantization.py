"""linear_quantization.paired_quantized (values taken in pairs, FLOAT16 ones read as 32-bit words,
and their results written two at a time: what CUDA takes for QUANTIZE and
ELEMENT_WISE_QUANTIZE_LINEAR of FLOAT16 tensors, and of FLOAT32 ones to 4 bits) against
quantize_values on the CPU, bit for bit: every FLOAT16 value against scales of every kind
(random ones of both signs, FLOAT16 denormals and extremes, 0, +-inf, NaN), and FLOAT32 values
with specials and FLOAT32 denormals; each 8- and 4-bit type with zero points at its ends and without;
elements in pairs (an even last axis) and one at a time (an odd one); a scale per element, per
row and per tensor; halves to even."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dmljax._src.dtypes import DataType
from dmljax._src.linear_quantization import paired_quantized, quantize_values
from tests.tiers import fast_sample

F16 = np.float16
EVERY = np.arange(65536, dtype=np.uint16).view(F16)  # every FLOAT16 value: NaNs, infinities, zeros, denormals
FINITE = np.arange(1, 0x7C00, dtype=np.uint16).view(F16)
SPECIAL = np.array([1, 0.5, 3, 6e-8, 2.0 ** -24, 65504, 0.1, 0.05, 1 / 3, 0, -0.0, np.inf, -np.inf, np.nan], F16)


def _scales(n_random: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.choice(FINITE, n_random), -rng.choice(FINITE, n_random // 4 + 1), SPECIAL]).astype(F16)


CASES = [(t, z) for t, zps in (("INT8", (3, -128, 127, None)), ("UINT8", (0, 255, None)), ("INT4", (1, -8, 7, None)),
                               ("UINT4", (0, 15, None))) for z in zps]


@pytest.mark.parametrize("type_name,zero_point", fast_sample(CASES, key="paired_quantized"))
def test_quantized_in_pairs_and_one_at_a_time_is_the_float64_path(type_name, zero_point):
    dt = DataType[type_name]
    scales = _scales(12, seed=1)
    x = np.tile(EVERY, (len(scales), 1))

    def both(x, s, z):
        want = jax.jit(lambda x, s, z: quantize_values(x, s, z, dt))(x, s, z)
        got = jax.jit(lambda x, s, z: paired_quantized(x, s, z, dt))(x, s, z)
        assert got.dtype == want.dtype == dt.dtype and got.shape == want.shape == x.shape
        np.testing.assert_array_equal(np.asarray(got).astype(np.int32), np.asarray(want).astype(np.int32))

    def zp(shape):
        return None if zero_point is None else jnp.asarray(np.full(shape, zero_point, dt.dtype))
    both(jnp.asarray(x), jnp.asarray(np.repeat(scales[:, None], x.shape[1], 1)), zp(x.shape))  # per element, pairs
    both(jnp.asarray(x), jnp.asarray(scales[:, None]), zp((len(scales), 1)))  # per row, pairs
    odd = jnp.asarray(x[:, :-1].reshape(-1, 4369))  # one at a time: 4,369 a row
    both(odd, jnp.asarray(np.float16(0.37)), zp(()))  # per tensor


def test_a_scalar_and_a_single_element():
    dt = DataType.INT8
    s, z = jnp.asarray(F16(0.5)), jnp.asarray(np.int8(1))
    for x in (jnp.asarray(F16(2.5)), jnp.asarray([F16(-7.25)])):
        got = jax.jit(lambda x: paired_quantized(x, s, z, dt))(x)
        want = jax.jit(lambda x: quantize_values(x, s, z, dt))(x)
        assert got.shape == x.shape and np.array_equal(np.asarray(got), np.asarray(want))
    halves = jnp.asarray(np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5], F16))
    assert np.asarray(jax.jit(lambda x: paired_quantized(x, jnp.asarray(F16(1)), None, dt))(halves)).tolist() == \
        [0, 2, 2, 0, -2, -2]  # halves to even


@pytest.mark.parametrize("type_name,zero_point", fast_sample([("INT4", -3), ("UINT4", None), ("INT4", None)],
                                                           key="paired_four_bits"))
def test_float32_to_four_bits_in_pairs_is_the_float64_path(type_name, zero_point):
    dt = DataType[type_name]
    rng = np.random.default_rng(2)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-45, 0.025, 0.075, -0.125, 3e38], np.float32)
    x = np.concatenate([special, (rng.standard_normal(4096 - special.size) * 0.5).astype(np.float32)]).reshape(64, 64)
    for scale in (np.float32(0.05), np.float32(-1 / 3), np.float32(2.0 ** -20)):
        s = jnp.broadcast_to(jnp.asarray(scale), x.shape)
        z = None if zero_point is None else jnp.asarray(np.full(x.shape, zero_point, dt.dtype))
        want = jax.jit(lambda x: quantize_values(x, s, z, dt))(jnp.asarray(x))
        got = jax.jit(lambda x: paired_quantized(x, s, z, dt))(jnp.asarray(x))
        assert got.dtype == dt.dtype and got.shape == x.shape
        np.testing.assert_array_equal(np.asarray(got).astype(np.int32), np.asarray(want).astype(np.int32))
