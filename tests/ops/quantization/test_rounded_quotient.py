"""linear_quantization.rounded_quotient (quantization's round(x / scale) in FLOAT32 alone, taken off
the CPU) against the FLOAT64 path it replaces there, round(divide(x, scale)): bit for bit wherever
that is within +-2047, beyond it a value beyond +-2048 of the same sign, NaN for NaN. Quotients a
hair from every half for many scales, every FLOAT16 input, every FLOAT32 exponent of input and
scale, scales that are 0, infinite, NaN, tiny and huge; traced, constant and broadcast scales; the
saturated results of each 8- and 4-bit type with zero points; one fusion on the CPU."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.linear_quantization import ROUNDED_REACH, divide, integer_range, rounded_quotient
from dmljax._src.dtypes import DataType
from dmljax._src.numerics import flush_denormals, max_num
from tests.tiers import fast_sample

F32, F16 = np.float32, np.float16
TINY = np.finfo(F32).tiny

# scales: ordinary, FLOAT16 ones, the smallest and largest normal FLOAT32 and their neighbours,
# and the ones the computation handles apart (0, -0, infinities, NaN, a FLOAT32 denormal, read as 0)
SCALES = [F32(0.05), F32(-1 / 3), F32(0.019607844), F32(7), F32(1), F32(-2.0 ** -20 * 3), F32(F16(0.0039)),
          F32(2.0 ** -24), F32(1e-30), F32(2.0 ** -100 * 1.75), TINY, np.nextafter(TINY, F32(1)),
          F32(3e-38), F32(1e30), F32(2.0 ** 126 * 1.5), F32(-(2.0 ** 127) * 1.9), np.finfo(F32).max,
          F32(0), F32(-0.0), F32(np.inf), F32(-np.inf), F32(np.nan), F32(1e-40)]


def _old(a, b):
    """The FLOAT64 path: a's denormals flushed, the correctly rounded quotient, rounded halves to even."""
    return jnp.round(divide(flush_denormals(a), b))


def _agree(old, new, signed: bool = True):
    """Where ``new`` may differ from ``old`` (the rounded quotient's contract); [] when it does not."""
    old, new = np.asarray(old), np.asarray(new)
    small = np.abs(old) <= ROUNDED_REACH
    same = (old == new) & ((np.signbit(old) == np.signbit(new)) | (not signed))
    beyond = ~small & (np.abs(new) >= ROUNDED_REACH + 1) & (np.sign(new) == np.sign(old))
    ok = np.where(np.isnan(old), np.isnan(new), np.where(small, same, beyond))
    return np.flatnonzero(~ok)


def _near_halves(rng, s, count: int):
    """Inputs whose quotient by ``s`` is within a few ULP of a half (k + 1/2) * s for k to
    +-(2047 + a few): the products rounded, and their neighbours 1 and 2 ULP away."""
    k = rng.integers(-2060, 2060, count)
    k[:64] = np.arange(-32, 32)
    with np.errstate(over="ignore", invalid="ignore"):
        h = ((k + 0.5) * np.float64(s)).astype(F32)
    near = [h, np.nextafter(h, F32(np.inf)), np.nextafter(h, F32(-np.inf))]
    near += [np.nextafter(near[1], F32(np.inf)), np.nextafter(near[2], F32(-np.inf))]
    with np.errstate(over="ignore", invalid="ignore"):
        ints = (k * np.float64(s)).astype(F32)  # the integers themselves
    return np.concatenate(near + [ints])


def _inputs(rng, s, count: int):
    """Dense normal values at the scale's size, quotients near halves, every special value and
    a few FLOAT32 denormals (read as zeros)."""
    size = np.abs(s) if np.isfinite(s) and np.abs(s) >= TINY else F32(1)
    with np.errstate(over="ignore"):
        dense = (rng.standard_normal(count) * 300 * size).astype(F32)
    special = np.array([0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, 1e-40, -1e-40, np.finfo(F32).max,
                        -np.finfo(F32).max, 0.5, -0.5, 1.5, -2.5, 2047.5, -2047.5, 2048.5, -2048.5], F32)
    with np.errstate(over="ignore"):
        return np.concatenate([dense, _near_halves(rng, s, count), special, special * size])


def _check(a, s, *, signed=True):
    """rounded_quotient against the FLOAT64 path for the scale traced (a full tensor), constant
    (folded by XLA) and a broadcast scalar."""
    old = np.asarray(jax.jit(_old)(a, np.full(a.shape, s)))
    for name, got in [
        ("traced", jax.jit(lambda v, t: rounded_quotient(v, t, signed))(a, np.full(a.shape, s))),
        ("constant", jax.jit(lambda v: rounded_quotient(v, s, signed))(a)),
        ("broadcast", jax.jit(lambda v, t: rounded_quotient(v, jnp.broadcast_to(t, v.shape), signed))(a, s)),
    ]:
        bad = _agree(old, got, signed)
        assert not bad.size, (name, s, a[bad][:4], old[bad][:4], np.asarray(got)[bad][:4])


@pytest.mark.parametrize("s", fast_sample(SCALES, keep=3, key="rounded-quotient"), ids=repr)
def test_rounded_quotient_matches_the_float64_path(rng, s):
    _check(_inputs(rng, s, 1 << 12), s)


@pytest.mark.slow
@pytest.mark.parametrize("s", SCALES, ids=repr)
def test_rounded_quotient_matches_the_float64_path_densely(rng, s):
    a = _inputs(rng, s, 1 << 19)
    _check(a, s)
    _check(a, s, signed=False)  # the zeros' signs aside


@pytest.mark.slow
def test_rounded_quotient_every_float16_input(rng):
    # every FLOAT16 value widened, by FLOAT16 scales (the operators' FLOAT16 path) and FLOAT32 ones
    a = np.arange(1 << 16, dtype=np.uint16).view(F16).astype(F32)
    scales = np.concatenate([np.array([1, 0.5, 3, 0.1, 2.0 ** -24, 65504, 1 / 255], F16).astype(F32),
                             rng.integers(1, 0x7BFF, 48, dtype=np.uint16).view(F16).astype(F32),
                             np.array([0.05, 1 / 3, 7e-3, 2.0 ** -126], F32)])
    for s in scales:
        old = np.asarray(jax.jit(_old)(a, np.full(a.shape, s)))
        got = jax.jit(lambda v, t: rounded_quotient(v, jnp.broadcast_to(t, v.shape)))(a, F32(s))
        bad = _agree(old, got)
        assert not bad.size, (s, a[bad][:4])


@pytest.mark.slow
def test_rounded_quotient_every_exponent(rng):
    # random bits: every normal exponent of input and scale, each element its own scale, so
    # quotients from 2^-253 to 2^253 (the FLOAT64 path is exact across them)
    n = 1 << 20

    def bits(lo, hi):
        e = rng.integers(lo, hi, n)
        return ((rng.integers(0, 2**23, n) | (e << 23) | (rng.integers(0, 2, n) << 31)).astype(np.uint32)).view(F32)

    a, b = bits(0, 256), bits(1, 255)
    old = np.asarray(jax.jit(_old)(a, b))
    bad = _agree(old, jax.jit(rounded_quotient)(a, b))
    assert not bad.size, (a[bad][:4], b[bad][:4])
    # and quotients of a few units: the input at the scale's exponent, give or take 12
    e = ((b.view(np.uint32) >> 23) & 0xFF).astype(np.int64)
    near = ((rng.integers(0, 2**23, n) | (np.clip(e + rng.integers(-3, 12, n), 1, 254) << 23)
             | (rng.integers(0, 2, n) << 31)).astype(np.uint32)).view(F32)
    old = np.asarray(jax.jit(_old)(near, b))
    assert (np.abs(old[np.isfinite(old)]) <= ROUNDED_REACH).mean() > 0.5
    bad = _agree(old, jax.jit(rounded_quotient)(near, b))
    assert not bad.size, (near[bad][:4], b[bad][:4])


@pytest.mark.parametrize("data_type", ["INT8", "UINT8", "INT4", "UINT4"])
def test_saturated_results_are_the_float64_paths(rng, data_type):
    # the FLOAT32 path composed as quantize_values composes it, against the public operator
    # (on the CPU: the FLOAT64 path), zero points at both ends of the type
    dt = DataType[data_type]
    lo, hi = integer_range(dt)
    s = F32(0.05)
    a = _inputs(rng, s, 1 << 11)[: 1 << 13]
    a = a[: a.size // 8 * 8].reshape(-1, 8)
    zp = np.broadcast_to(np.array([lo, hi, 0, lo + 1, hi - 1, 1, lo, hi]).astype(dt.dtype), a.shape)
    scale = np.full(a.shape, s)

    def fast(v, t, z):
        r = rounded_quotient(v, t, False) + z.astype(F32)
        return jax.lax.min(max_num(r, float(lo)), F32(hi)).astype(dt.dtype)

    want = dmljax.quantize(a, [scale, zp], quantization_type="SCALE_ZERO_POINT", output_data_type=data_type)
    got = jax.jit(fast)(a, scale, zp)
    assert np.array_equal(np.asarray(got).astype(np.int32), np.asarray(want).astype(np.int32))


def test_rounded_quotient_has_a_zero_derivative():
    g = jax.jit(jax.grad(lambda u, v: rounded_quotient(u, v).sum(), argnums=(0, 1)))(F32([3, 2.5]), F32([2, 2]))
    assert not np.asarray(g[0]).any() and not np.asarray(g[1]).any()


def _fusions(f, *args) -> int:
    text = jax.jit(f).lower(*args).compile().as_text()
    entry = text[text.index("ENTRY"):]
    return len(re.findall(r"\bfusion\(", entry))


def test_quantization_is_one_fusion_on_the_cpu():
    x = np.zeros((4, 256), F32)
    s, z = np.full((4, 1), 0.05, F32), np.full((4, 1), 3, np.int8)
    assert _fusions(lambda v: dmljax.element_wise_quantize_linear(
        v, jnp.broadcast_to(s, v.shape), jnp.broadcast_to(z, v.shape)), x) == 1
    assert _fusions(lambda v: dmljax.quantize(v, [s, z], quantization_type="SCALE_ZERO_POINT",
                                              output_data_type="INT8"), x) == 1
    assert _fusions(lambda v, t: rounded_quotient(v, jnp.broadcast_to(t, v.shape)), x, s) == 1
