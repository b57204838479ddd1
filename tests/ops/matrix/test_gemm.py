"""GEMM by hand: the DxDispatch example model's values, transposes, batch dimensions, no CTensor,
a fused activation, FLOAT16 accumulated in FLOAT32, FLOAT32 products that TF32 would round, the
gradient against the products transposed, and the shape rules' messages."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from tests import tiers

A = np.array([[1], [2], [3]], np.float32)
B = np.array([[4, 5, 6]], np.float32)


def test_the_example_model_and_its_variants():
    c = np.full((3, 3), 2, np.float32)
    want = A @ B + 2
    np.testing.assert_array_equal(np.asarray(dmljax.gemm(A, B, c)), want)  # dml_gemm.json's values
    np.testing.assert_array_equal(np.asarray(dmljax.gemm(A, B)), A @ B)  # no C: Beta ignored
    np.testing.assert_array_equal(np.asarray(dmljax.gemm(A, B, c, alpha=2.0, beta=-0.5)), 2 * (A @ B) - 1)
    np.testing.assert_array_equal(np.asarray(dmljax.gemm(B, A, trans_a="TRANSPOSE", trans_b="TRANSPOSE")), (A @ B).T)
    np.testing.assert_array_equal(np.asarray(dmljax.gemm(A, A, trans_b="DML_MATRIX_TRANSFORM_TRANSPOSE")), A @ A.T)


def test_batch_dimensions_and_feature_levels():
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (2, 3, 4, 5)).astype(np.float32)
    b = rng.integers(-4, 5, (2, 3, 5, 6)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(dmljax.gemm(a, b, feature_level="1.0")), a @ b)
    np.testing.assert_array_equal(np.asarray(dmljax.gemm(a[0], b[0])), a[0] @ b[0])  # 3-D from 4.0
    with pytest.raises(dmljax.ValidationError, match=r"ATensor \(argument `a`\) has 3 dimensions \(Sizes \[3, 4, 5\]\); supported: 4"):
        dmljax.gemm(a[0], b[0], feature_level="3.0")


def test_fused_activation():
    relu = dmljax.gemm(A, B, alpha=-1.0, fused_activation=dmljax.FusedActivation("ACTIVATION_RELU"))
    assert not np.asarray(relu).any()
    clip = dmljax.gemm(A, B, fused_activation={"Type": "ELEMENT_WISE_CLIP", "Desc": {"Min": 5.0, "Max": 10.0}})
    np.testing.assert_array_equal(np.asarray(clip), np.clip(A @ B, 5, 10))  # CLIP: "for Convolution and GEMM only"
    g = jax.grad(lambda a: dmljax.gemm(a, B, fused_activation=dmljax.FusedActivation("ACTIVATION_RELU")).sum())(-A)
    assert not np.asarray(g).any()  # every output below zero: the ReLU passes no gradient


def test_float16_accumulates_in_float32_and_float32_is_not_tf32():
    a = np.array([[2048, 1, 1]], np.float16)
    b = np.ones((3, 1), np.float16)
    assert float(dmljax.gemm(a, b)[0, 0]) == 2050.0  # FLOAT16 sums after 2048 would lose each 1
    x = np.float32(1 + 2 ** -20)  # TF32 keeps 10 mantissa bits: x * x would round to 1
    got = dmljax.gemm(np.array([[x]], np.float32), np.array([[x]], np.float32))
    assert float(got[0, 0]) == float(np.float32(x) * np.float32(x))


def test_gradient_is_the_products_transposed():
    rng = np.random.default_rng(1)
    a = rng.integers(-3, 4, (2, 3, 4)).astype(np.float32)
    b = rng.integers(-3, 4, (2, 5, 4)).astype(np.float32)  # with TransB: (2, 4, 5) as read
    c = rng.integers(-3, 4, (2, 3, 5)).astype(np.float32)
    dy = rng.integers(-3, 4, (2, 3, 5)).astype(np.float32)
    f = lambda a, b, c: (dmljax.gemm(a, b, c, trans_b="TRANSPOSE", alpha=2.0, beta=3.0) * dy).sum()  # noqa: E731
    da, db, dc = jax.grad(f, argnums=(0, 1, 2))(a, b, c)
    np.testing.assert_array_equal(np.asarray(da), 2 * dy @ b)
    np.testing.assert_array_equal(np.asarray(db), 2 * np.swapaxes(dy, -1, -2) @ a)
    np.testing.assert_array_equal(np.asarray(dc), 3 * dy)


@pytest.mark.parametrize("trans_a, trans_b, alpha", tiers.fast_sample([("NONE", "NONE", 1.0), ("TRANSPOSE", "NONE", -0.75),
                                                      ("NONE", "TRANSPOSE", 3.0), ("TRANSPOSE", "TRANSPOSE", 0.5)], keep=2, key="gemm16"))
def test_float16_gradient_accumulates_in_float32_from_float16_operands(trans_a, trans_b, alpha):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 6, 40)).astype(np.float16)  # as read, with TransA: (2, 40, 6)
    b = rng.standard_normal((2, 40, 5)).astype(np.float16)
    if trans_a == "TRANSPOSE":
        a = np.swapaxes(a, -1, -2).copy()
    if trans_b == "TRANSPOSE":
        b = np.swapaxes(b, -1, -2).copy()
    ta = (lambda m: np.swapaxes(m, -1, -2)) if trans_a == "TRANSPOSE" else (lambda m: m)
    tb = (lambda m: np.swapaxes(m, -1, -2)) if trans_b == "TRANSPOSE" else (lambda m: m)
    dy = rng.standard_normal(np.broadcast_shapes(ta(a).shape[:-1] + (1,), (1, 1, tb(b).shape[-1]))).astype(np.float16)

    def f(a, b):
        return jnp.vdot(dmljax.gemm(a, b, trans_a=trans_a, trans_b=trans_b, alpha=alpha).astype(jnp.float32),
                        dy.astype(np.float32))
    da, db = jax.grad(f, argnums=(0, 1))(a, b)
    assert da.dtype == db.dtype == np.float16
    a64, b64, dy64 = (v.astype(np.float64) for v in (a, b, dy))
    want_a = ta(alpha * dy64 @ np.swapaxes(tb(b64), -1, -2))  # the products transposed, in float64
    want_b = tb(alpha * np.swapaxes(ta(a64), -1, -2) @ dy64)
    for got, want in ((da, want_a), (db, want_b)):
        # one rounding to FLOAT16 of a FLOAT32 sum of exact products: within half an ulp, plus
        # FLOAT32's share (40 terms), of the float64 value
        ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
        assert np.all(np.abs(np.asarray(got, np.float64) - want) <= 0.5 * ulp + 1e-5 * np.abs(want) + 1e-7)
    # and the backward products take FLOAT16 operands (autodiff's transpose widened them to FLOAT32)
    text = jax.jit(jax.grad(f, argnums=(0, 1))).lower(a, b).as_text()
    dots = [ln for ln in text.splitlines() if "dot_general" in ln]
    assert len(dots) == 3 and all("xf32>, tensor" not in ln.split(":")[-1].split("->")[0] for ln in dots), dots


FORMS = [("NONE", "NONE", 1.0, False), ("TRANSPOSE", "TRANSPOSE", -0.5, True)]


def _float16_case(trans_a, trans_b, alpha, with_c):
    """GEMM on FLOAT16 without half-precision computation, its FLOAT32 twin and a squared loss."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4, 3) if trans_a == "TRANSPOSE" else (2, 3, 4)).astype(np.float16)
    b = rng.standard_normal((2, 5, 4) if trans_b == "TRANSPOSE" else (2, 4, 5)).astype(np.float16)
    c = rng.standard_normal((2, 3, 5)).astype(np.float16) if with_c else None
    kw = dict(trans_a=trans_a, trans_b=trans_b, alpha=alpha)

    def g(a, b):
        return dmljax.gemm(a, b, c, **kw)

    def g32(a, b):
        return dmljax.gemm(a, b, None if c is None else c.astype(np.float32), **kw)

    def loss(a, b, g=g):
        return jnp.sum(g(a, b).astype(jnp.float32) ** 2)
    return rng, a, b, g, g32, loss


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
@pytest.mark.parametrize("form", tiers.fast_sample([pytest.param(f, id="-".join(map(str, f))) for f in FORMS]))
def test_float16_gradient_in_forward_mode(form):
    # jax.jvp and jax.linearize against the FLOAT32 product's tangent, jax.jacfwd equal to jax.jacrev
    rng, a, b, g, g32, loss = _float16_case(*form)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    da, db = (rng.standard_normal(v.shape).astype(np.float16) for v in (a, b))
    want = np.asarray(jax.jvp(g32, (a32, b32), (da.astype(np.float32), db.astype(np.float32)))[1])
    for tangent in (jax.jit(lambda a, b: jax.jvp(g, (a, b), (da, db))[1])(a, b), jax.linearize(g, a, b)[1](da, db)):
        assert tangent.dtype == np.float16
        np.testing.assert_allclose(np.asarray(tangent, np.float32), want, rtol=4e-3, atol=4e-3)
    fwd, rev = jax.jacfwd(g, argnums=(0, 1))(a, b), jax.jacrev(g, argnums=(0, 1))(a, b)
    for x, y in zip(fwd, rev):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))  # each element one rounded product


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
def test_float16_hessian_and_vmap_of_grad(form):
    # jax.hessian against FLOAT32's, jax.vmap of jax.grad equal to a loop, under jax.jit
    _, a, b, g, g32, loss = _float16_case(*form)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    hess = jax.jit(jax.hessian(loss, argnums=(0, 1)))(a, b)
    hess32 = jax.hessian(lambda a, b: loss(a, b, g32), argnums=(0, 1))(a32, b32)
    for x, y in zip(jax.tree.leaves(hess), jax.tree.leaves(hess32)):
        np.testing.assert_allclose(np.asarray(x, np.float32), np.asarray(y), rtol=2e-2, atol=2e-2 * float(np.abs(y).max()))
    stacked = np.stack([a, -a])
    batched = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1)), (0, None)))(stacked, b)
    for k in range(2):
        for x, y in zip(batched, jax.grad(loss, argnums=(0, 1))(stacked[k], b)):
            np.testing.assert_array_equal(np.asarray(x[k]), np.asarray(y))


def test_shape_rules():
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(dmljax.ValidationError, match=r"BTensor \(argument `b`\) has Sizes \[2, 5, 6\]: K = 5.*K = 4"):
        dmljax.gemm(x, np.zeros((2, 5, 6), np.float32))
    with pytest.raises(dmljax.ValidationError, match=r"has batch dimensions \[3\]; ATensor's, \[2\]"):
        dmljax.gemm(x, np.zeros((3, 4, 6), np.float32))
    with pytest.raises(dmljax.ValidationError, match=r"CTensor \(argument `c`\) has Sizes \[3, 5\]; the OutputTensor's"):
        dmljax.gemm(x[0], np.zeros((4, 6), np.float32), np.zeros((3, 5), np.float32))
    with pytest.raises(dmljax.ValidationError, match=r"with the same DimensionCount"):
        dmljax.gemm(x, np.zeros((4, 6), np.float32))
    with pytest.raises(dmljax.ValidationError, match=r"have DataTypes FLOAT32, FLOAT16; they must have the same DataType"):
        dmljax.gemm(x, np.zeros((2, 4, 6), np.float16))
    with pytest.raises(dmljax.ValidationError, match=r"ELEMENT_WISE_CLIP"):
        dmljax.element_wise_add1(x, x, fused_activation={"Type": "ELEMENT_WISE_CLIP", "Desc": {"Min": 0.0, "Max": 1.0}})
    assert jnp.asarray(dmljax.gemm(x, np.zeros((2, 4, 6), np.float32))).shape == (2, 3, 6)


def test_float16_products_on_nvidia_gpus_have_float16_results_without_alpha():
    # Lowered for CUDA here (no GPU needed): without Alpha the forward and backward products give
    # FLOAT16 results, which cuBLAS and XLA's Triton GEMMs accumulate in FLOAT32 and round once
    # (tests/gpu/semantics.py holds the GPU to the reference); with Alpha, or on the CPU, FLOAT32 results
    # are scaled, then rounded.
    a = jax.ShapeDtypeStruct((2, 64, 32), jnp.float16)
    b = jax.ShapeDtypeStruct((2, 32, 16), jnp.float16)

    def results(platform, **kw):
        g = jax.grad(lambda a, b: dmljax.gemm(a, b, **kw).astype(jnp.float32).sum(), argnums=(0, 1))
        text = "\n".join(jax.jit(f).trace(a, b).lower(lowering_platforms=(platform,)).as_text()
                         for f in (lambda a, b: dmljax.gemm(a, b, **kw), g))
        return [ln.split("->")[-1].strip() for ln in text.splitlines() if "dot_general" in ln]
    assert results("cuda") and all(r.endswith("xf16>") for r in results("cuda"))
    assert results("cpu") and all(r.endswith("xf32>") for r in results("cpu"))
    assert all(r.endswith("xf32>") for r in results("cuda", alpha=2.0))
