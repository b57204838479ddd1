"""dmljax.dequantize_gemm, DEQUANTIZE then GEMM (a composition, not a DirectML operator), and its
Pallas kernel (dmljax/_src/kernels/dequantize_gemm.py) run in Pallas's interpreter: against a
float64 NumPy reference and the two operators, signed and unsigned weights, with and without zero
points, odd K, several blockings, weights {K, N} and {N, K}, 1 to 16 rows, K in one slice and in
several (split-K, also lowered here for CUDA); the dequantized weights DEQUANTIZE's bit for bit; the
operators' gradients; where the kernel is taken on CUDA (lowered here for CUDA) and where not; a
DirectML graph's DEQUANTIZE that only GEMM reads, fused."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dmljax
from dmljax._src.enums import MatrixTransform
from dmljax._src.feature_level import resolve_feature_level
from dmljax._src.graph import DmlGraph, OutputEdge
from dmljax._src.kernels.dequantize_gemm import (DEQUANTIZE_GEMM, FASTER_UP_TO, LAYOUTS, MIN_WEIGHTS, SETTINGS,
                                                  Settings, dequantize_gemm_rows, slices)
from dmljax._src.ops.quantization.dequantize_gemm import OPERANDS, _program
from tests import tiers
from tests.compare import assert_matches

F16 = dmljax.DataType.FLOAT16
TRITON = "__gpu$xla.gpu.triton"
SMALL = Settings(32, 32)  # the kernel's blocks in the interpreter: ragged tiles and several programs at small sizes
ONE_PROGRAM = Settings(64, 64)  # one program, two ragged iterations over K: the fast tier's case (1.4 s against 2.5)


def _weights(rng, shape, signed: bool):
    lo, hi = (-8, 8) if signed else (0, 16)
    return rng.integers(lo, hi, shape).astype(jnp.int4 if signed else jnp.uint4)


def _dequantized64(w, scale, zero_point):
    """DEQUANTIZE from its formula: (w - zero_point) * scale, each repeated over its blocks, in
    float64, rounded once to FLOAT16."""
    def blocks(t):
        t = np.asarray(t).astype(np.float64)
        return np.repeat(np.repeat(t, w.shape[0] // t.shape[0], 0), w.shape[1] // t.shape[1], 1)
    d = np.asarray(w).astype(np.float64) - (0 if zero_point is None else blocks(zero_point))
    return (d * blocks(scale)).astype(np.float16).astype(np.float64)


def _case(rng, m, k, n, scale_blocks, signed, zero_point, trans_b):
    """X {m, k}, weights {k, n} ({n, k} with trans_b), scale (and zero point) of ``scale_blocks``
    blocks along the weights' two dimensions."""
    shape = (n, k) if trans_b else (k, n)
    w = _weights(rng, shape, signed)
    sshape = tuple(s // b for s, b in zip(shape, scale_blocks))
    scale = (rng.random(sshape) * 0.1 + 0.01).astype(np.float16)
    zp = _weights(rng, sshape, signed) if zero_point else None
    x = rng.standard_normal((m, k)).astype(np.float16)
    return x, w, scale, zp


def _reference(x, w, scale, zp, trans_b):
    d = _dequantized64(w, scale, zp)
    d = d.T if trans_b else d
    xs = np.asarray(x).astype(np.float64)
    return xs @ d, np.abs(xs) @ np.abs(d)


def _operators(x, w, scale, zp, trans_b, **kw):
    q = [scale] + ([] if zp is None else [zp])
    deq = dmljax.dequantize(w, q, quantization_type="SCALE" if zp is None else "SCALE_ZERO_POINT")
    return dmljax.gemm(x, deq, trans_b="TRANSPOSE" if trans_b else "NONE", **kw)


def _budget(k):
    return dmljax.gemm.spec.budget(F16, (1, k))


# (rows, K, N, blocks of the scale along the weights' (rows, columns), signed, zero point, weights {N, K},
# the kernel's blocks)
CASES = [
    (5, 67, 40, (1, 67), True, True, True, ONE_PROGRAM),  # pairs along K, odd K: each row's last high nibble is padding
    (1, 64, 48, (16, 1), False, False, False, SMALL),   # pairs along N, blocks of 16 along K
    (16, 96, 35, (1, 32), False, True, True, SMALL),    # odd N, the scale per row and block
    (16, 33, 37, (11, 37), True, False, False, SMALL),  # odd K and N, blocks of 11 along K, one scale a block of rows
    (5, 50, 64, (64, 5), True, True, True, SMALL),      # blocks of 5 along K (pairs straddle them)
    (1, 128, 32, (128, 32), False, True, False, SMALL),  # per tensor
    (5, 64, 40, (1, 8), False, True, True, SMALL),  # blocks of 8 along K, 4 a tile: each scale repeated
    (16, 64, 64, (1, 32), True, True, True, SMALL),  # whole tiles (no masks), 16 rows
]


@pytest.mark.parametrize("m,k,n,blocks,signed,zero_point,trans_b,tiles", tiers.fast_sample(CASES, key="dequantize_gemm"))
def test_the_kernel_matches_float64_and_the_two_operators(m, k, n, blocks, signed, zero_point, trans_b, tiles, rng):
    x, w, scale, zp = _case(rng, m, k, n, blocks, signed, zero_point, trans_b)
    got = dequantize_gemm_rows(jnp.asarray(x), jnp.asarray(w), jnp.asarray(scale), None if zp is None else jnp.asarray(zp),
                               trans_b=trans_b, out_dtype=jnp.float16, settings=tiles, interpret=True)
    want, size = _reference(x, w, scale, zp, trans_b)
    assert got.shape == (m, n) and got.dtype == np.float16
    assert_matches(got, [want], F16, _budget(k), magnitude=size)
    unfused = _operators(x, w, scale, zp, trans_b)
    assert_matches(got, [np.asarray(unfused).astype(np.float64)], F16, _budget(k), magnitude=size)


# (rows, K, N, blocks of the scale along the weights' (rows, columns), signed, zero point, weights {N, K},
# the kernel's settings, Alpha): K's tiles of 32 in slices side by side (``slices``)
SPLIT_CASES = [
    (1, 96, 37, (32, 37), False, True, False, Settings(64, 32, split_k=2), 2.0),  # 3 tiles as 2 + 1, odd N
    (5, 200, 40, (1, 8), False, True, True, Settings(32, 32, split_k=2), -0.5),  # 7 tiles as 4 + 3, the last ragged
    (16, 128, 64, (16, 1), True, False, False, Settings(32, 32, split_k=4), 1.0),  # 4 slices of one tile
    (3, 67, 35, (1, 67), True, True, True, Settings(32, 32, split_k=16), 1.0),  # 16 asked, 3 tiles: 3 slices
    (4, 66, 40, (11, 1), True, False, False, Settings(32, 32, split_k=3), 1.0),  # blocks of 11 straddle slices
    (2, 128, 64, (1, 32), True, True, True, Settings(32, 32, split_k=2), -1.0),  # whole tiles (no masks)
]


@pytest.mark.slow  # interpreter runs (3 s a case); the fast tier lowers split-K for CUDA (test_split_k_lowers_for_cuda)
@pytest.mark.parametrize("m,k,n,blocks,signed,zero_point,trans_b,tiles,alpha", SPLIT_CASES)
def test_split_k_matches_float64_the_two_operators_and_one_slice(m, k, n, blocks, signed, zero_point, trans_b, tiles,
                                                                alpha, rng):
    # the slices' FLOAT32 sums added by XLA, Alpha applied and rounded once: within GEMM's budget
    # of the float64 product, of the two operators and of the kernel without split-K
    assert slices(k, tiles)[1] > 1
    x, w, scale, zp = _case(rng, m, k, n, blocks, signed, zero_point, trans_b)
    args = [jnp.asarray(v) for v in (x, w, scale)] + [None if zp is None else jnp.asarray(zp)]
    got = dequantize_gemm_rows(*args, trans_b=trans_b, alpha=alpha, out_dtype=jnp.float16, settings=tiles,
                               interpret=True)
    want, size = _reference(x, w, scale, zp, trans_b)
    assert got.shape == (m, n) and got.dtype == np.float16
    assert_matches(got, [alpha * want], F16, _budget(k), magnitude=abs(alpha) * size)
    unfused = _operators(x, w, scale, zp, trans_b, alpha=alpha)
    assert_matches(got, [np.asarray(unfused).astype(np.float64)], F16, _budget(k), magnitude=abs(alpha) * size)
    one = dequantize_gemm_rows(*args, trans_b=trans_b, alpha=alpha, out_dtype=jnp.float32,
                               settings=dataclasses.replace(tiles, split_k=1), interpret=True)
    assert one.dtype == np.float32
    assert_matches(got, [np.asarray(one).astype(np.float64)], F16, _budget(k), magnitude=abs(alpha) * size)


def test_slices_and_settings():
    # K's tiles dealt out in runs, none empty; settings outside the kernel's reach refused, each
    # problem named
    def count(k, bk, split):
        return slices(k, Settings(32, bk, split_k=split))
    assert [count(4096, 256, s) for s in (1, 2, 4, 8, 16, 32)] == [(16, 1), (8, 2), (4, 4), (2, 8), (1, 16), (1, 16)]
    assert count(4096, 512, 16) == (1, 8) and count(200, 32, 2) == (4, 2) and count(160, 32, 2) == (3, 2)
    assert count(67, 32, 16) == (1, 3) and count(1, 32, 4) == (1, 1)
    with pytest.raises(ValueError, match=r"block_n is 24; a power of two, at least 16; .*split_k is 0; .*warps is 3"):
        Settings(24, 256, split_k=0, warps=3)
    with pytest.raises(ValueError, match="block_k is 16; a power of two, at least 32"):
        Settings(32, 16)
    x, w, scale = jnp.zeros((1, 64), jnp.float16), jnp.zeros((64, 64), jnp.int4), jnp.ones((2, 64), jnp.float16)
    with pytest.raises(ValueError, match=r"block_n is 16 with the weights \{K, N\}; at least 32"):
        dequantize_gemm_rows(x, w, scale, trans_b=False, settings=Settings(16, 32))
    assert set(SETTINGS) == set(FASTER_UP_TO) == set(LAYOUTS)


def test_split_k_lowers_for_cuda():
    # Triton's program of a split-K kernel, built here (lowered for CUDA): a second grid axis, the
    # FLOAT32 partial sums {slices x M, N} out of the kernel, their sum XLA's; even and ragged runs
    s = jax.ShapeDtypeStruct
    m, n = 4, 128
    for trans_b, k, split, count in ((True, 1024, 4, 4), (False, 1024, 4, 4), (True, 1024 - 256, 2, 2),
                                     (False, 1024 - 256, 2, 2)):
        shape, sshape = ((n, k), (n, k // 32)) if trans_b else ((k, n), (k // 32, n))
        settings = Settings(32, 128, split_k=split)
        assert slices(k, settings)[1] == count
        text = _lowered_for_cuda(lambda x, w, sc, z, t=trans_b, st=settings: dequantize_gemm_rows(
            x, w, sc, z, trans_b=t, out_dtype=jnp.float16, settings=st),
            s((m, k), jnp.float16), s(shape, jnp.uint4), s(sshape, jnp.float16), s(sshape, jnp.uint4))
        assert TRITON in text and f"tensor<{count * m}x{n}xf32>" in text
        assert "stablehlo.reduce" in text


@pytest.mark.slow  # an interpreter run (1-2 s); the fast tier runs the kernel through test_the_kernel_matches...
@pytest.mark.parametrize("trans_b,tiles", [(True, None), (False, None), (True, Settings(32, 32, split_k=2)),
                                           (False, Settings(32, 32, split_k=2))])
def test_the_dequantized_weights_are_dequantizes_bit_for_bit(trans_b, tiles, rng):
    # One-hot rows pick single weights (K = 4i for row i, in both slices where K is split): each
    # output is one exact product plus zeros, so the kernel's output is its FLOAT16 weight itself (a
    # -0 weight summed with +0 terms gives +0). Scales span FLOAT16's range (denormals, the largest
    # values), and a NaN and an infinite scale; zero points make the difference reach -15 and 15.
    k, n = 64, 34
    shape = (n, k) if trans_b else (k, n)
    w = _weights(rng, shape, False)
    w = np.where(np.arange(w.size).reshape(shape) % 7 == 0, np.uint8(15), w.astype(np.uint8)).astype(jnp.uint4)
    sshape = (n, 2) if trans_b else (2, n)
    scale = np.exp2(rng.integers(-24, 12, sshape)).astype(np.float16) * rng.choice([-1, 1], sshape).astype(np.float16)
    scale.flat[:3] = [np.nan, np.inf, np.float16(3e-8)]
    zp = np.where(rng.random(sshape) < 0.5, 0, 15).astype(np.uint8).astype(jnp.uint4)
    picked = 4 * np.arange(16)
    x = np.zeros((16, k), np.float16)
    x[np.arange(16), picked] = 1
    got = np.asarray(dequantize_gemm_rows(jnp.asarray(x), jnp.asarray(w), jnp.asarray(scale), jnp.asarray(zp),
                                          trans_b=trans_b, out_dtype=jnp.float16, settings=tiles, interpret=True))
    deq = np.asarray(jax.jit(lambda s: dmljax.dequantize(w, [s, zp], quantization_type="SCALE_ZERO_POINT"))(scale))
    full = deq if not trans_b else deq.T  # the {K, N} matrix
    want = full[picked]
    clean = np.isfinite(full).all(axis=0)  # a column holding NaN or inf: the other rows' 0 x it is NaN
    assert 0 < clean.sum() < n
    same_bits = got[:, clean].view(np.uint16) == want[:, clean].view(np.uint16)
    assert (same_bits | (want[:, clean] == 0) & (got[:, clean] == 0)).all()  # a sum with +0 terms: -0 is +0
    assert np.isnan(got[:, ~clean]).any(axis=0).all()


def _run(operand, ta, tb, alpha, beta, zero_point, a, b, q, c, settings=None):
    fn = _program(operand, MatrixTransform.parse(ta), MatrixTransform.parse(tb), alpha, beta,
                  "SCALE_ZERO_POINT" if zero_point else "SCALE", resolve_feature_level(None), interpret=True,
                  settings=settings)
    return fn(a, b, q, c)


SPLIT = Settings(32, 32, split_k=2)  # K = 40: two slices of one tile, the second tile partial

# (operand, TransA, TransB, Alpha, Beta, with C, batch dimensions, the kernel's settings)
FORMS = [
    ("b", "NONE", "TRANSPOSE", 1.0, 1.0, False, (), None),
    ("b", "TRANSPOSE", "NONE", 0.5, -2.0, True, (1,), SPLIT),
    ("a", "NONE", "NONE", 1.0, 1.0, True, (), None),
    ("a", "TRANSPOSE", "TRANSPOSE", -1.5, 1.0, False, (1, 1), SPLIT),
    ("b", "NONE", "TRANSPOSE", -0.5, 2.0, True, (), SPLIT),
]


@pytest.mark.slow  # interpreter runs (1.5-2.5 s each)
@pytest.mark.parametrize("operand,ta,tb,alpha,beta,with_c,batch,settings", FORMS)
def test_the_kernels_path_is_gemm_of_dequantize_within_gemms_budget(operand, ta, tb, alpha, beta, with_c, batch,
                                                                    settings, rng):
    # the composition's route to the kernel (what CUDA takes), in the interpreter: A or B
    # dequantized, transposed or not, Alpha, Beta and C, batch dimensions of 1; split-K's partial
    # sums added with GEMM's epilogue
    m, k, n, rows = 5, 40, 36, 3  # rows: the other operand's (B's N where A is dequantized)
    if operand == "b":
        a_shape, w_shape = ((k, m) if ta == "TRANSPOSE" else (m, k)), ((n, k) if tb == "TRANSPOSE" else (k, n))
        out = (m, n)
    else:
        w_shape, a_shape = ((k, n) if ta == "TRANSPOSE" else (n, k)), ((rows, k) if tb == "TRANSPOSE" else (k, rows))
        out = (n, rows)
    w = _weights(rng, batch + w_shape, True)
    other = rng.standard_normal(batch + a_shape).astype(np.float16)
    sshape = list(batch + w_shape)
    sshape[len(batch) + w_shape.index(k)] //= 8  # blocks of 8 along K (K differs from the other sizes)
    scale = (rng.random(sshape) * 0.1 + 0.01).astype(np.float16)
    zp = _weights(rng, tuple(sshape), True)
    c = rng.standard_normal(batch + out).astype(np.float16) if with_c else None
    a, b = (other, w) if operand == "b" else (w, other)
    got = _run(operand, ta, tb, alpha, beta, True, a, b, [scale, zp], c, settings)
    deq = dmljax.dequantize(w, [scale, zp], quantization_type="SCALE_ZERO_POINT")
    kw = dict(trans_a=ta, trans_b=tb, alpha=alpha, beta=beta)
    want = dmljax.gemm(*((a, deq) if operand == "b" else (deq, b)), c, **kw)
    assert got.shape == want.shape == batch + out and got.dtype == np.float16
    # both within GEMM's budget of the float64 product of the same FLOAT16 operands
    a64 = np.asarray(a if operand == "b" else deq).astype(np.float64).reshape(a.shape[-2:])
    b64 = np.asarray(deq if operand == "b" else b).astype(np.float64).reshape(b.shape[-2:])
    a64, b64 = (a64.T if ta == "TRANSPOSE" else a64), (b64.T if tb == "TRANSPOSE" else b64)
    exact = alpha * (a64 @ b64) + (0 if c is None else beta * np.asarray(c).astype(np.float64).reshape(out))
    size = abs(alpha) * (np.abs(a64) @ np.abs(b64)) + (0 if c is None else abs(beta) * np.abs(np.asarray(c, np.float64)).reshape(out))
    for value in (got, want):
        assert_matches(np.asarray(value).reshape(out), [exact], F16, _budget(k), magnitude=size)


@pytest.mark.slow  # 2.5 s of compiles
def test_gradients_are_the_two_operators(rng):
    # X's and the scale's gradients are the operators' (the pair runs unfused under
    # differentiation), the integer weights and zero points get float0
    x, w, scale, zp = _case(rng, 3, 32, 16, (8, 1), True, True, False)

    def fused(x, w, s, z):
        return jnp.sum(dmljax.dequantize_gemm(x, w, [s, z], quantization_type="SCALE_ZERO_POINT").astype(jnp.float32))

    def unfused(x, w, s, z):
        deq = dmljax.dequantize(w, [s, z], quantization_type="SCALE_ZERO_POINT")
        return jnp.sum(dmljax.gemm(x, deq).astype(jnp.float32))

    got = jax.grad(fused, argnums=(0, 1, 2, 3), allow_int=True)(x, w, scale, zp)
    want = jax.grad(unfused, argnums=(0, 1, 2, 3), allow_int=True)(x, w, scale, zp)
    for g, h in zip(got, want):
        assert g.dtype == h.dtype and g.shape == h.shape
        if g.dtype != jax.dtypes.float0:
            np.testing.assert_array_equal(np.asarray(g), np.asarray(h))
    assert got[1].dtype == got[3].dtype == jax.dtypes.float0
    _, tangent = jax.jvp(lambda v: dmljax.dequantize_gemm(v, w, [scale, zp], quantization_type="SCALE_ZERO_POINT"),
                         (x,), (np.ones_like(x),))
    _, want_t = jax.jvp(lambda v: dmljax.gemm(v, dmljax.dequantize(w, [scale, zp], quantization_type="SCALE_ZERO_POINT")),
                        (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(np.asarray(tangent), np.asarray(want_t))


def _lowered_for_cuda(fn, *args) -> str:
    return jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",)).as_text()


def test_where_cuda_takes_the_kernel():
    # lowered for CUDA here: the kernel where its rule applies (both layouts of the weights, where it
    # measured faster than the two operators: FASTER_UP_TO), the two operators elsewhere and
    # within dmljax.use_kernels(False, "dequantize_gemm"); forced, either layout; on the CPU the
    # operators' bits
    from dmljax._src.kernel_seam import force_kernels

    k = n = 1024
    assert k * n >= MIN_WEIGHTS
    s = jax.ShapeDtypeStruct

    def call(m=4, x_type=jnp.float16, w_type=jnp.int4, trans_b="TRANSPOSE", **kw):
        w_shape = (n, k) if trans_b == "TRANSPOSE" else (k, n)
        s_shape = (n, k // 32) if trans_b == "TRANSPOSE" else (k // 32, n)
        return _lowered_for_cuda(lambda x, w, sc: dmljax.dequantize_gemm(
            x, w, [sc], quantization_type="SCALE", trans_b=trans_b, **kw),
            s((m, k), x_type), s(w_shape, w_type), s(s_shape, x_type))

    assert FASTER_UP_TO == {"{N, K}": 16, "{K, N}": 16}  # the rule below, as measured
    assert TRITON in call() and TRITON in call(m=16, w_type=jnp.uint4) and TRITON in call(m=1)
    assert TRITON in call(trans_b="NONE")
    with dmljax.use_kernels(False, "dequantize_gemm"):
        assert TRITON not in call()
    with force_kernels("dequantize_gemm"):
        assert TRITON in call(m=1, trans_b="NONE")
    assert TRITON not in call(m=17)  # more rows than a tile
    assert TRITON not in call(x_type=jnp.float32)  # FLOAT32: XLA's
    assert TRITON not in call(fused_activation=dmljax.FusedActivation("ACTIVATION_RELU"))
    assert TRITON not in call(allow_half_precision_computation=True)
    with dmljax.use_kernels(False, "dequantize_gemm"):
        assert TRITON not in call()
    assert "dequantize_gemm" in dmljax._src.kernel_seam.kernel_names()
    for m in (1, 4, 16):
        for trans_b, layout in ((True, "{N, K}"), (False, "{K, N}")):
            facts = ((m, k), (n, k) if trans_b else (k, n), np.float16, jnp.uint4, np.float16, False, trans_b)
            assert DEQUANTIZE_GEMM.applies(*facts) == (m <= FASTER_UP_TO[layout]) and DEQUANTIZE_GEMM.runs(*facts)
    assert not DEQUANTIZE_GEMM.applies((4, 64), (64, 64), np.float16, jnp.int4, np.float16, False, True)  # small
    assert DEQUANTIZE_GEMM.runs((4, 64), (64, 64), np.float16, jnp.int4, np.float16, False, True)
    assert not DEQUANTIZE_GEMM.runs((4, 64), (64, 64), np.float16, np.int8, np.float16, False, True)  # 8-bit: XLA's


def test_the_composition_is_the_two_operators_off_cuda(rng):
    x, w, scale, zp = _case(rng, 4, 64, 32, (1, 16), False, True, True)
    got = dmljax.dequantize_gemm(x, w, [scale, zp], quantization_type="SCALE_ZERO_POINT", trans_b="TRANSPOSE")
    want = _operators(x, w, scale, zp, True)
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    jitted = jax.jit(lambda v: dmljax.dequantize_gemm(v, w, [scale, zp], quantization_type="SCALE_ZERO_POINT",
                                                      trans_b="TRANSPOSE"))(x)
    assert np.asarray(jitted).tobytes() == np.asarray(want).tobytes()
    with pytest.raises(dmljax.ValidationError, match="DML_OPERATOR_GEMM"):  # each operator validates its part
        dmljax.dequantize_gemm(x, w, [scale, zp], quantization_type="SCALE_ZERO_POINT")  # K of B is not A's
    with pytest.raises(dmljax.ValidationError, match="DML_OPERATOR_DEQUANTIZE"):  # the scale's rank
        dmljax.dequantize_gemm(x, w, [scale.reshape(-1), zp], quantization_type="SCALE_ZERO_POINT", trans_b="TRANSPOSE")
    bad = scale.copy()
    bad[0, 0] = 0
    with pytest.raises(dmljax.ValidationError, match="DML_OPERATOR_DEQUANTIZE"):  # a scale read now: not 0
        dmljax.dequantize_gemm(x, w, [bad, zp], quantization_type="SCALE_ZERO_POINT", trans_b="TRANSPOSE")
    with pytest.raises(ValueError, match="operand"):
        dmljax.dequantize_gemm(x, w, [scale, zp], quantization_type="SCALE_ZERO_POINT", operand="c")


def _matmul_nbits_graph(rng, k=1024, n=1024, m=4):
    onnx = pytest.importorskip("onnx", reason="the ONNX import needs the onnx package (the test extra)")
    from onnx import TensorProto, helper, numpy_helper

    import dmljax.onnx as dx
    from dmljax._src.onnx.export import to_graph

    blocks = k // 32
    q = rng.integers(0, 16, (n, k)).astype(np.uint8)
    consts = {"B": (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8).reshape(n, blocks, 16),
              "scales": (rng.random(n * blocks) * 0.1 + 0.01).astype(np.float16)}
    node = helper.make_node("MatMulNBits", ["A", "B", "scales"], ["y"], domain="com.microsoft", K=k, N=n, bits=4,
                            block_size=32)
    g = helper.make_graph([node], "nbits", [helper.make_tensor_value_info("A", TensorProto.FLOAT16, (m, k))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, (m, n))],
                          [numpy_helper.from_array(v, name) for name, v in consts.items()])
    model = dx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)]))
    del onnx
    a = rng.standard_normal((m, k)).astype(np.float16)
    graph, _ = to_graph(model, [a])
    return model, graph, a


@pytest.mark.slow  # 1.7 s: an ONNX import, its export and three lowerings
def test_a_graphs_dequantize_that_only_gemm_reads_is_fused(rng):
    # MatMulNBits: the ONNX import takes the composition, its DirectML graph is DEQUANTIZE then
    # GEMM, and the graph runs the two as the composition (the kernel on CUDA); a DEQUANTIZE that
    # is also a graph output is not fused
    model, graph, a = _matmul_nbits_graph(rng)
    assert [nd.type for nd in graph.nodes] == ["DML_OPERATOR_DEQUANTIZE", "DML_OPERATOR_GEMM"]
    compiled = graph.compile()
    assert compiled._fusions == {1: (0, "BTensor")}
    got = compiled.run(a)[0]
    assert np.asarray(got).tobytes() == np.asarray(model(a)[0]).tobytes()
    consts = {i: jnp.asarray(np.ravel(v)) for i, v in graph.constants.items()}
    runtime = [i for i in range(graph.input_count) if i not in graph.constants]

    def evaluate(cg):
        return lambda held, x: cg._evaluate({**{i: (c, 0) for i, c in held.items()}, runtime[0]: (jnp.ravel(x), 0)})
    assert TRITON in _lowered_for_cuda(evaluate(compiled), consts, a)
    assert TRITON in _lowered_for_cuda(lambda x: model(x), a)
    both = dataclasses.replace(graph, output_edges=graph.output_edges + [OutputEdge(0, 0, 1, "weights")],
                               output_count=2, output_names=graph.output_names + ["weights"])
    unfused = both.compile()
    assert unfused._fusions == {}
    assert TRITON not in _lowered_for_cuda(evaluate(unfused), consts, a)
    y, weights = unfused.run(a)
    assert np.asarray(y).tobytes() == np.asarray(got).tobytes() and weights.shape == (1024, 1024)
    assert isinstance(both, DmlGraph)


FUZZ = settings(max_examples=tiers.by_tier(2, 40), derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


@st.composite
def _pairs(draw, kernel_only: bool = False):
    """A DEQUANTIZE + GEMM call: (keyword arguments, a, b, quantizations, c); without
    ``kernel_only``, sometimes one the operators refuse (a K that differs, a scale of another
    type or rank, a zero point of another type)."""
    operand = draw(st.sampled_from(OPERANDS))
    ta, tb = draw(st.sampled_from(["NONE", "TRANSPOSE"])), draw(st.sampled_from(["NONE", "TRANSPOSE"]))
    m, k, n = draw(st.integers(1, 16)), draw(st.integers(1, 40)), draw(st.integers(1, 40))
    wtype = draw(st.sampled_from([jnp.int4, jnp.uint4] + ([] if kernel_only else [np.int8, np.uint8])))
    ftype = np.float16 if kernel_only else draw(st.sampled_from([np.float16, np.float32]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if operand == "b":
        w_shape, o_shape = ((n, k) if tb == "TRANSPOSE" else (k, n)), ((k, m) if ta == "TRANSPOSE" else (m, k))
    else:
        w_shape, o_shape = ((k, m) if ta == "TRANSPOSE" else (m, k)), ((n, k) if tb == "TRANSPOSE" else (k, n))
    divisors = [[d for d in range(1, s + 1) if s % d == 0] for s in w_shape]
    sshape = tuple(s // draw(st.sampled_from(ds)) for s, ds in zip(w_shape, divisors))
    zshape = tuple(s // draw(st.sampled_from(ds)) for s, ds in zip(w_shape, divisors))
    info = jnp.iinfo(wtype)
    w = rng.integers(int(info.min), int(info.max) + 1, w_shape).astype(wtype)
    scale = (rng.random(sshape) * 0.1 + 0.01).astype(ftype)
    zp = rng.integers(int(info.min), int(info.max) + 1, zshape).astype(wtype) if draw(st.booleans()) else None
    other = rng.standard_normal(o_shape).astype(ftype)
    c = rng.standard_normal((m, n)).astype(ftype) if draw(st.booleans()) else None
    if not kernel_only:
        broken = draw(st.sampled_from([None, "k", "scale type", "scale rank", "zero point type"]))
        if broken == "k":
            other = rng.standard_normal((o_shape[0] + 1, o_shape[1] + 1)).astype(ftype)
        elif broken == "scale type":
            scale = scale.astype(np.float32 if ftype == np.float16 else np.float16)
        elif broken == "scale rank":
            scale = scale.reshape(-1)
        elif broken == "zero point type" and zp is not None:
            zp = zp.astype(np.int8 if wtype != np.int8 else np.uint8)
    kw = dict(quantization_type="SCALE_ZERO_POINT" if zp is not None else "SCALE", operand=operand, trans_a=ta,
              trans_b=tb, alpha=draw(st.sampled_from([1.0, -0.5, 3.0])), beta=draw(st.sampled_from([1.0, 2.0])))
    a, b = (other, w) if operand == "b" else (w, other)
    return kw, a, b, [scale] + ([] if zp is None else [zp]), c


def _the_operators(kw, a, b, q, c):
    kw = dict(kw)
    operand, qt = kw.pop("operand"), kw.pop("quantization_type")
    if operand == "b":
        return dmljax.gemm(a, dmljax.dequantize(b, q, quantization_type=qt), c, **kw)
    return dmljax.gemm(dmljax.dequantize(a, q, quantization_type=qt), b, c, **kw)


def _outcome(fn):
    try:
        return np.asarray(fn())
    except dmljax.ValidationError as e:
        return str(e).split("\n")[0]  # the operator and level; the call site differs


@FUZZ
@given(_pairs())
def test_fuzz_the_composition_is_the_two_operators(call):
    # off CUDA, bit for bit, and the same ValidationError's operator where one refuses the call
    kw, a, b, q, c = call
    got = _outcome(lambda: dmljax.dequantize_gemm(a, b, q, c, **kw))
    want = _outcome(lambda: _the_operators(kw, a, b, q, c))
    if isinstance(want, str):
        assert got == want
    else:
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.slow  # interpreter runs, 1.5-3 s an example
@settings(max_examples=8, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(_pairs(kernel_only=True), st.sampled_from([None, Settings(32, 32, split_k=2), Settings(32, 32, split_k=3)]))
def test_fuzz_the_kernels_path_within_gemms_budget(call, tiles):
    kw, a, b, q, c = call
    kw = dict(kw)
    operand, qt = kw.pop("operand"), kw.pop("quantization_type")
    fn = _program(operand, MatrixTransform.parse(kw["trans_a"]), MatrixTransform.parse(kw["trans_b"]),
                  float(np.float32(kw["alpha"])), float(np.float32(kw["beta"])), qt, resolve_feature_level(None),
                  interpret=True, settings=tiles)
    got = np.asarray(fn(a, b, q, c))
    want = np.asarray(_the_operators(dict(kw, operand=operand, quantization_type=qt), a, b, q, c))
    k = (a.shape[0] if kw["trans_a"] == "TRANSPOSE" else a.shape[1])
    deq = dmljax.dequantize(b if operand == "b" else a, q, quantization_type=qt)
    x64, y64 = (np.asarray(v).astype(np.float64) for v in ((a, deq) if operand == "b" else (deq, b)))
    x64 = x64.T if kw["trans_a"] == "TRANSPOSE" else x64
    y64 = y64.T if kw["trans_b"] == "TRANSPOSE" else y64
    size = abs(kw["alpha"]) * (np.abs(x64) @ np.abs(y64)) + (0 if c is None else abs(kw["beta"]) * np.abs(c.astype(np.float64)))
    assert_matches(got, [want.astype(np.float64)], F16, 2 * _budget(k), magnitude=size)
