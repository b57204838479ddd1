"""Hand-written edges of the element-wise math family (CONSTANT_POW): C99's special values and
the page's negative-base rule, one code path for 3 and 3.0, and the gradient at 0 and for
Exponent 0; against values derived independently (Python's math.pow, by hand). The generated
cases (tests/test_catalog.py) cover the support tables, data types, eager/jit and the reference
gradients away from the kinks."""

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType
from tests.compare import assert_matches


def grad_of(f, x):
    return np.asarray(jax.grad(lambda v: jnp.sum(f(v)))(x))


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_CONSTANT_POW


def c99_pow(x, e):
    """C99's pow via Python's math.pow, with the page's rule for negative bases; math.pow raises
    where C99 returns inf/NaN, so those are spelled out."""
    if e == 0:
        return 1.0
    if x == 1:
        return 1.0
    if math.isnan(x) or math.isnan(e):
        return math.nan
    integral = math.isinf(e) or e == math.floor(e)
    if x < 0 and not integral:
        return math.nan  # the page: also for x = -inf (C99 would say +inf)
    odd = integral and not math.isinf(e) and int(e) % 2 == 1
    if x == 0:
        if e < 0:
            return math.copysign(math.inf, x) if odd else math.inf
        return math.copysign(0.0, x) if odd else 0.0
    if math.isinf(x):
        mag = math.inf if e > 0 else 0.0
        return -mag if (x < 0 and odd) else mag
    try:
        return math.pow(x, e)
    except OverflowError:
        return math.copysign(math.inf, x) if (x < 0 and odd) else math.inf


POW_X = [-math.inf, -3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, math.inf, math.nan]


POW_E = [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.5, -0.5, 2.5, math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("e", POW_E, ids=str)
def test_constant_pow_special_values(e):
    x = np.array(POW_X, np.float32)
    out = np.asarray(dmljax.element_wise_constant_pow(x, exponent=e))
    for xi, got in zip(POW_X, out):
        exp = c99_pow(xi, e)
        if math.isnan(exp):
            assert np.isnan(got), (xi, e, got)
        else:
            assert got == np.float32(exp) and np.signbit(got) == (math.copysign(1, exp) < 0), (xi, e, got, exp)


def test_constant_pow_negative_bases_by_parity():
    x = np.array([-2.0, -3.0, -1.5], np.float32)
    np.testing.assert_array_equal(dmljax.element_wise_constant_pow(x, exponent=3), [-8.0, -27.0, -3.375])
    np.testing.assert_array_equal(dmljax.element_wise_constant_pow(x, exponent=2), [4.0, 9.0, 2.25])
    np.testing.assert_array_equal(dmljax.element_wise_constant_pow(x, exponent=-1), [-0.5, -1 / np.float32(3), -1 / np.float32(1.5)])
    assert np.isnan(np.asarray(dmljax.element_wise_constant_pow(x, exponent=1.5))).all()


def test_constant_pow_same_bits_for_3_and_3_point_0(rng):
    x = (rng.standard_normal(4096) * 10).astype(np.float32)
    outs = [np.asarray(dmljax.element_wise_constant_pow(x, exponent=e)).view(np.uint32)
            for e in (3, 3.0, np.float32(3), np.int64(3))]
    for o in outs[1:]:
        np.testing.assert_array_equal(outs[0], o)


@pytest.mark.parametrize("e,expected", [
    (0.0, 0.0), (1.0, 1.0), (2.0, 0.0), (3.0, 0.0), (0.5, math.inf), (-1.0, -math.inf), (-2.0, -math.inf),
])
def test_constant_pow_gradient_at_zero(e, expected):
    g = grad_of(lambda v: dmljax.element_wise_constant_pow(v, exponent=e), jnp.array([0.0], jnp.float32))
    assert g[0] == expected and (g[0] == 0 or np.sign(g[0]) == np.sign(expected)), (e, g)


def test_constant_pow_gradient_exponent_zero_is_exactly_zero():
    x = jnp.array([0.0, -0.0, 2.0, -3.0, jnp.nan, jnp.inf], jnp.float32)
    g = grad_of(lambda v: dmljax.element_wise_constant_pow(v, exponent=0), x)
    assert (g == 0).all() and not np.isnan(g).any()


def test_constant_pow_gradient_values():
    x = jnp.array([2.0, -2.0, 0.5], jnp.float32)
    g = grad_of(lambda v: dmljax.element_wise_constant_pow(v, exponent=3, scale_bias=(2.0, 0.0)), x)
    # d/dx (2x)^3 = 3 * (2x)^2 * 2
    np.testing.assert_allclose(g, [96.0, 96.0, 6.0], rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_SQRT, EXP, LOG, ERF: IEEE special values (eager, and under jax.jit with the input a
# closure constant, where XLA could fold them), FLOAT32 denormal inputs read as zero, and the
# gradients at the singular points (the limit from the defined side, NaN outside the domain).

DENORMAL = 1e-40  # a FLOAT32 denormal: read as +0


def bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want, got.dtype)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (got, want)


@pytest.mark.parametrize("name,xs,want", [
    ("sqrt", [-0.0, 0.0, DENORMAL, -DENORMAL, 4.0, math.inf, -1.0, -math.inf, math.nan],
     [-0.0, 0.0, 0.0, -0.0, 2.0, math.inf, math.nan, math.nan, math.nan]),
    ("log", [0.0, -0.0, DENORMAL, -DENORMAL, 1.0, math.inf, -1.0, -math.inf, math.nan],
     [-math.inf, -math.inf, -math.inf, -math.inf, 0.0, math.inf, math.nan, math.nan, math.nan]),
    ("exp", [0.0, -0.0, 89.0, math.inf, -math.inf, -100.0, math.nan],
     [1.0, 1.0, math.inf, math.inf, 0.0, 0.0, math.nan]),  # exp(-100) is a denormal: flushed
    ("erf", [0.0, -0.0, DENORMAL, -DENORMAL, 10.0, -10.0, math.inf, -math.inf, math.nan],
     [0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 1.0, -1.0, math.nan]),
])
def test_unary_math_special_values(name, xs, want):
    op = getattr(dmljax, f"element_wise_{name}")
    x = np.array(xs, np.float32)
    bits_equal(op(x), np.array(want, np.float32))
    bits_equal(jax.jit(lambda: op(jnp.asarray(x)))(), np.array(want, np.float32))


def test_exp_overflow_float16_and_its_gradient():
    x = jnp.array([11.0, 11.1, 89.0], jnp.float16)
    y = np.asarray(dmljax.element_wise_exp(x))
    assert y[0] == np.float16(math.exp(np.float16(11.0))) and np.isinf(y[1:]).all()
    g = grad_of(dmljax.element_wise_exp, jnp.array([89.0, -math.inf, 0.0], jnp.float32))
    np.testing.assert_array_equal(g, [math.inf, 0.0, 1.0])
    g16 = grad_of(lambda v: dmljax.element_wise_exp(v).astype(jnp.float32), jnp.array([11.1, 0.0], jnp.float16))
    assert np.isinf(g16[0]) and g16[1] == 1.0


def test_exp_float32_denormal_results_flushed_and_denormal_inputs_read_as_zero():
    # every FLOAT32 x from -104 to -87 (exp(x) among the denormals, or just above them): a zero
    # of exp's sign (+0) where the true value is a denormal, within the budget elsewhere; with a
    # ScaleBias too, whose product reads a denormal x as zero (the CPU leaves both to its processor)
    x = np.arange(np.float32(-87).view(np.uint32), np.float32(-104).view(np.uint32), 7, dtype=np.uint32).view(np.float32)
    tiny = np.finfo(np.float32).tiny
    want = np.exp(x.astype(np.float64))
    for got in (dmljax.element_wise_exp(x), dmljax.element_wise_exp(x / 2, scale_bias=(2.0, 0.0))):
        got = np.asarray(got, np.float64)
        small = want < tiny
        assert (got[small] == 0).all() and not np.signbit(got[small]).any()
        assert (np.abs(got[~small] - want[~small]) <= 2 * np.spacing(want[~small].astype(np.float32))).all()
    d = np.array([1e-40, -1e-40], np.float32)
    assert np.asarray(dmljax.element_wise_exp(d, scale_bias=(1e30, 0.0))).tolist() == [1.0, 1.0]


def test_log_float32_results_near_one_are_normal_and_denormal_inputs_read_as_zero():
    # every FLOAT32 x within 2^-11 of 1 (log(x) at its smallest: no denormal result to flush, as
    # the CPU leaves the output's flush to its processor); denormal inputs are zeros (-inf)
    x = np.arange(np.float32(1 - 2.0**-11).view(np.uint32), np.float32(1 + 2.0**-11).view(np.uint32), dtype=np.uint32)
    x = x.view(np.float32)
    got = np.asarray(dmljax.element_wise_log(x), np.float64)
    want = np.log(x.astype(np.float64))
    assert ((got == 0) == (x == 1)).all() and (np.abs(got[x != 1]) >= np.finfo(np.float32).tiny).all()
    assert (np.abs(got - want) <= 2 * np.spacing(np.abs(want).astype(np.float32))).all()
    d = np.array([1e-40, -1e-40], np.float32)
    assert np.asarray(dmljax.element_wise_log(d)).tolist() == [-math.inf, -math.inf]


def test_erf_float32_denormal_inputs_give_signed_zeros_and_the_smallest_normals_stay_normal():
    # denormal x (every 997th, both signs): a zero of x's sign; the smallest normals: erf(x) =
    # 2x / sqrt(pi), normal (the CPU leaves both flushes to its processor)
    d = np.arange(1, 1 << 23, 997, dtype=np.uint32)
    x = np.concatenate([d, d | np.uint32(1 << 31)]).view(np.float32)
    got = np.asarray(dmljax.element_wise_erf(x))
    assert (got == 0).all() and (np.signbit(got) == np.signbit(x)).all()
    n = np.arange(1 << 23, (1 << 23) + 4096, dtype=np.uint32).view(np.float32)
    got = np.asarray(dmljax.element_wise_erf(np.concatenate([n, -n])), np.float64)
    want = 2 / math.sqrt(math.pi) * np.concatenate([n, -n]).astype(np.float64)
    assert (np.abs(got - want) <= 2 * np.spacing(np.abs(want).astype(np.float32))).all()


@pytest.mark.parametrize("name,xs,want", [
    ("sqrt", [0.0, -0.0, DENORMAL, 4.0, -1.0, math.inf], [math.inf, math.inf, math.inf, 0.25, math.nan, 0.0]),
    ("log", [0.0, -0.0, -DENORMAL, 4.0, -1.0, math.inf], [math.inf, math.inf, math.inf, 0.25, math.nan, 0.0]),
    ("erf", [0.0, -0.0, math.inf, -math.inf, math.nan], [2 / math.sqrt(math.pi)] * 2 + [0.0, 0.0, math.nan]),
])
def test_unary_math_gradient_at_singular_points(name, xs, want):
    op = getattr(dmljax, f"element_wise_{name}")
    g = grad_of(op, jnp.array(xs, jnp.float32))
    bits_equal(g, np.array(want, np.float32))


def test_scale_bias_chains_into_the_gradient():
    # d/dx log(2x + 1) = 2 / (2x + 1); d/dx sqrt(2x) at 0 is +inf; d/dx exp(-x) = -exp(-x)
    x = jnp.array([0.5, 1.5], jnp.float32)
    np.testing.assert_allclose(grad_of(lambda v: dmljax.element_wise_log(v, scale_bias=(2.0, 1.0)), x), [1.0, 0.5])
    g = grad_of(lambda v: dmljax.element_wise_sqrt(v, scale_bias=(2.0, 0.0)), jnp.array([0.0], jnp.float32))
    assert g[0] == math.inf
    np.testing.assert_allclose(grad_of(lambda v: dmljax.element_wise_exp(v, scale_bias=(-1.0, 0.0)), x),
                               -np.exp(-np.array([0.5, 1.5])), rtol=3e-7)


def test_erf_gradient_far_out_is_accurate():
    # exp(-g^2) at g = 9: g*g rounded to FLOAT32 would cost ~40 ULP; the exact split keeps it close
    x = np.array([3.0, 5.5, 7.25, 9.0, -9.0], np.float32)
    g = grad_of(dmljax.element_wise_erf, jnp.asarray(x))
    want = np.array([2 / math.sqrt(math.pi) * math.exp(-(float(v) ** 2)) for v in x])
    np.testing.assert_allclose(g, want, rtol=4 * 2.0**-23)


# ----------------------------------------------------------------------------------------------
# ELEMENT_WISE_POW: the tensor exponent. Expected values from Python's math.pow (c99_pow above,
# with the page's negative-base rule) and exact Python integers; eager and under jax.jit with
# the operands as closure constants (which XLA may fold).

def pow_both(x, e, **kw):
    """The operator eager and under jit with constant operands; both results."""
    eager = np.asarray(dmljax.element_wise_pow(x, e, **kw))
    jitted = np.asarray(jax.jit(lambda: dmljax.element_wise_pow(jnp.asarray(x), jnp.asarray(e), **kw))())
    return eager, jitted


def assert_pow_exact(got, want):
    got = np.asarray(got)
    want = np.asarray(want, np.float64)
    for i, (g, w) in enumerate(zip(got.ravel(), want.ravel())):
        if math.isnan(w):
            assert np.isnan(g), (i, g, w)
        else:
            assert g == w and np.signbit(g) == (math.copysign(1, w) < 0), (i, g, w)


def test_pow_c99_special_values_with_a_tensor_exponent():
    xs, es = np.meshgrid(np.array(POW_X, np.float32), np.array(POW_E, np.float32))
    want = np.array([[c99_pow(float(x), float(e)) for x, e in zip(rx, re)] for rx, re in zip(xs, es)])
    for out in pow_both(xs, es):
        assert_pow_exact(out, want.astype(np.float32))


def test_pow_negative_bases_and_integral_exponents_float_and_integer():
    x = np.array([-2.0, -2.0, -0.0, -0.0, -math.inf, -math.inf, -3.0, -1.0, -2.0, -math.inf], np.float32)
    e = [3, -3, -3, 3, 3, -3, 2, 7, 2, 0]
    want = [-8.0, -0.125, -math.inf, -0.0, -math.inf, -0.0, 9.0, -1.0, 4.0, 1.0]
    for et in (np.float32, np.float16, np.int32, np.int8):
        for out in pow_both(x, np.array(e, et)):
            assert_pow_exact(out, want)
    # non-integral exponents: NaN, -inf included (C99 would give +inf)
    for out in pow_both(np.array([-2.0, -math.inf, -0.5], np.float32), np.array([0.5, 0.5, -1.5], np.float32)):
        assert np.isnan(out).all()


def test_pow_half_negative_infinity_against_every_exponent():
    # A FLOAT16 base computed in FLOAT32 stands -inf in by -2^126, whose powers round to FLOAT16
    # as the page's rule gives -inf's: checked against every FLOAT16 exponent and a FLOAT32 grid
    # (integral values to beyond 2^24, the smallest steps off an integer, infinities, NaN), -inf
    # as an input and as ScaleBias's result; eager and under jit. The reference: C99 (numpy's
    # float64 power) with the page's NaN for a negative base and a non-integral exponent.
    e16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    ints = np.array([2.0 ** p for p in range(25)] + [2.0 ** 24 + 2, 3.0, 5.0, 7.0, 101.0, 2.0 ** 23 + 1], np.float64)
    e32 = np.concatenate([ints, -ints, [0.5, 1.5, np.nextafter(1, 2), np.nextafter(1, 0), -np.nextafter(1, 0),
                                        1e-30, -1e-30, 0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    for e in (e16, e32):
        with np.errstate(all="ignore"):
            integral = np.isinf(e) | (np.floor(e) == e)
            want = np.where(integral, np.power(-np.inf, e.astype(np.float64)), np.nan).astype(np.float16)
        for x, sb in ((np.full(e.shape, -np.inf, np.float16), None),
                      (np.full(e.shape, -65504.0, np.float16), dmljax.ScaleBias(1e38, 0.0))):
            kw = {} if sb is None else {"scale_bias": sb}
            for got in pow_both(x, e, **kw):
                assert got.dtype == np.float16
                assert_pow_exact(got, want.astype(np.float64))


def test_pow_integer_exponent_parity_and_magnitude_beyond_2_24():
    big = [2**24 + 1, 2**31 - 1, -(2**31), -(2**24) - 1, 2**24 + 3]
    for out in pow_both(np.full(5, -1.0, np.float32), np.array(big, np.int32)):
        np.testing.assert_array_equal(out, [-1.0, -1.0, 1.0, -1.0, -1.0])  # float32(2^24 + 1) is even
    for out in pow_both(np.full(3, -1.0, np.float32), np.array([2**32 - 1, 2**24 + 1, 2**32 - 2], np.uint32)):
        np.testing.assert_array_equal(out, [-1.0, -1.0, 1.0])
    # magnitudes against the true values, where the exponent rounded to FLOAT32 would be far off
    base = np.array([1 + 2.0**-23, -(1 + 2.0**-23), 1 - 2.0**-24, 1 + 2.0**-23, 1 - 2.0**-24], np.float32)
    e = np.array([2**24 + 1, 2**24 + 1, 1300000063, 2**26 + 255, -(2**30) - 63], np.int32)
    true, naive = [], []
    for b, k in zip(base.tolist(), e.tolist()):
        sign = -1 if b < 0 and k % 2 else 1
        true.append(sign * math.exp(k * math.log(abs(b))))
        naive.append(sign * math.exp(float(np.float32(k)) * math.log(abs(b))))
    assert abs(naive[2] / true[2] - 1) > 2.0**-20 and abs(naive[4] / true[4] - 1) > 2.0**-20  # the test can fail
    for out in pow_both(base, e):
        np.testing.assert_allclose(out, true, rtol=4 * 2.0**-23)
    for out in pow_both(base[:3].copy(), np.array([2**24 + 1, 2**24 + 1, 1300000063], np.uint32)):
        np.testing.assert_allclose(out, true[:3], rtol=4 * 2.0**-23)


INT_BASES = {np.int8: [0, 1, -1, 2, -2, 3, -3, 6, 7, 127, -128], np.uint8: [0, 1, 2, 3, 6, 15, 255],
             np.int32: [0, 1, -1, 2, -3, 6, 46341, 2**31 - 1, -(2**31)], np.uint16: [0, 1, 2, 3, 6, 257, 65535]}
INT_EXPS = {np.int32: [0, 1, 2, 3, 7, 8, 31, 32, 2**31 - 1, 2**24 + 6, 64, 65, 256, -1, -2, -3, -(2**31)],
            np.uint32: [0, 1, 2, 5, 6, 7, 16, 17, 2**32 - 1, 2**31, 2**31 + 3], np.int8: [0, 1, 3, 127, -1, -2, -128],
            np.uint16: [0, 1, 2, 9, 65535]}


def exact_pow(b, e, dtype):
    info = np.iinfo(dtype)
    bits = np.dtype(dtype).itemsize * 8
    if e < 0:
        r = 1 if b == 1 else ((-1 if e % 2 else 1) if b == -1 else 0)
    else:
        r = pow(b, e, 1 << bits)  # Python's exact integer modulo 2^bits, wrapped below
    return ((r - int(info.min)) % (1 << bits)) + int(info.min)


INT_PAIRS = [(np.int8, np.int32), (np.uint8, np.uint32), (np.int32, np.int8), (np.int32, np.uint32),
             (np.uint16, np.uint16), (np.uint16, np.int32)]


def test_pow_integer_base_and_exponent_is_exact_and_wraps():
    for bt, et in INT_PAIRS:
        es = INT_EXPS[et]
        bs, ee = np.meshgrid(np.array(INT_BASES[bt], bt), np.array(es, et))
        want = np.array([[exact_pow(int(b), int(e), bt) for b, e in zip(rb, re)] for rb, re in zip(bs, ee)])
        for out in pow_both(bs, ee):
            assert out.dtype == np.dtype(bt)
            np.testing.assert_array_equal(out.astype(np.int64), want, err_msg=f"{np.dtype(bt)} ** {np.dtype(et)}")


def test_pow_integer_base_float_exponent_truncates_and_saturates():
    x = np.array([4, 2, -8, 100000, -2, 0, 0, 3, -3, 7], np.int32)
    e = np.array([0.5, 31.0, 1 / 3, 2.0, 3.0, -1.0, 0.0, 0.5, math.nan, -1.0], np.float32)
    want = [2, 2**31 - 1, 0, 2**31 - 1, -8, 2**31 - 1, 1, 1, 0, 0]  # NaN -> 0; 3^0.5 = 1.73 -> 1
    for out in pow_both(x, e):
        np.testing.assert_array_equal(out, want)
    for out in pow_both(np.array([2, 200, 0], np.uint8), np.array([-1.0, 2.0, -0.5], np.float16)):
        np.testing.assert_array_equal(out, [0, 255, 255])
    for out in pow_both(np.array([-2, 2, -128], np.int8), np.array([7.0, 6.5, 3.0], np.float32)):
        np.testing.assert_array_equal(out, [-128, 90, -128])  # -128, 90.5 -> 90, -2097152 saturates


def test_pow_zero_exponents_and_nan():
    x = np.array([math.nan, 0.0, -0.0, -math.inf, math.inf, 1.0, -1.0, 1.0, 2.0, math.nan], np.float32)
    e = np.array([0.0, 0.0, -0.0, -0.0, 0.0, math.nan, math.nan, math.inf, math.nan, 1.0], np.float32)
    want = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, math.nan, 1.0, math.nan, math.nan]
    for out in pow_both(x, e):
        assert_pow_exact(out, want)
    for out in pow_both(np.array([math.nan, 0.0, -math.inf], np.float32), np.zeros(3, np.int32)):
        np.testing.assert_array_equal(out, [1.0, 1.0, 1.0])


def test_pow_mixed_types_output_has_the_input_type():
    # a FLOAT32 exponent's parity is its own, not FLOAT16's (2049 is not a FLOAT16)
    x16 = np.array([-1.0, 2.0], np.float16)
    for out in pow_both(x16, np.array([2049.0, 0.5], np.float32)):
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, np.array([-1.0, math.sqrt(2.0)], np.float16))
    for out in pow_both(np.array([-2.0, 9.0], np.float32), np.array([3.0, 0.5], np.float16)):
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, [-8.0, 3.0])
    for out in pow_both(np.array([-2.0, 1.5], np.float16), np.array([5, 2], np.uint8)):
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, [-32.0, 2.25])


def test_pow_validation_of_exponent_types():
    x = np.ones((1, 1, 1, 4), np.float32)
    assert dmljax.element_wise_pow(x, x.astype(np.float16), feature_level="3.0").dtype == np.float32
    with pytest.raises(dmljax.ValidationError, match=r"InputTensor \(argument `input`\) has DataType INT32"):
        dmljax.element_wise_pow(x.astype(np.int32), x.astype(np.int32), feature_level="2.1")
    with pytest.raises(dmljax.ValidationError, match="must have the same DimensionCount and Sizes"):
        dmljax.element_wise_pow(x, np.ones((1, 1, 1, 3), np.float32))


def test_pow_exponent_type_must_match_before_3_0():
    x = np.ones((1, 1, 1, 4), np.float32)
    with pytest.raises(dmljax.ValidationError, match="until DML_FEATURE_LEVEL_3_0 ExponentTensor must match"):
        dmljax.element_wise_pow(x, x.astype(np.float16), feature_level="2.1")


def pow_grads(x, e, **kw):
    gx, ge = jax.jit(jax.grad(lambda a, b: jnp.sum(dmljax.element_wise_pow(a, b, **kw).astype(jnp.float32)),
                      argnums=(0, 1), allow_int=True))(x, e)
    return np.asarray(gx), np.asarray(ge)


def test_pow_gradient_by_input_at_zero_and_for_zero_exponent():
    x = jnp.zeros(8, jnp.float32)
    e = jnp.array([0.0, 1.0, 2.0, 3.0, 0.5, -1.0, -2.0, -0.5], jnp.float32)
    gx, _ = pow_grads(x, e)
    np.testing.assert_array_equal(gx, [0.0, 1.0, 0.0, 0.0, math.inf, -math.inf, -math.inf, -math.inf])
    gx, _ = pow_grads(jnp.array([math.nan, 0.0, -3.0, math.inf], jnp.float32), jnp.zeros(4, jnp.float32))
    np.testing.assert_array_equal(gx, [0.0, 0.0, 0.0, 0.0])


def test_pow_gradient_by_exponent():
    x = jnp.array([0.0, -0.0, 0.5, 2.0, -2.0, 1.0, -1.0, math.inf, -2.0, 3.0], jnp.float32)
    e = jnp.array([-1.0, 2.0, math.inf, 3.0, 3.0, 5.0, math.inf, -1.0, 2.5, 0.0], jnp.float32)
    _, ge = pow_grads(x, e)
    l2 = float(np.float32(math.log(2.0)))
    want = [0.0, 0.0, 0.0, 8 * l2, -8 * l2, 0.0, 0.0, 0.0, math.nan, float(np.float32(math.log(3.0)))]
    np.testing.assert_allclose(ge, want, rtol=2e-7)
    assert not np.isnan(ge[:8]).any()


def test_pow_gradient_by_input_is_nan_where_the_power_is():
    # A negative base (-inf included) with a non-integral exponent whose e - 1 rounds to an
    # integer in FLOAT32 (1e-30 - 1 = -1, -1 - 2^-23 - 1 = -2): pow(g, e - 1) is NaN by the page's
    # rule, as pow(g, e) is, not C99's pow of the rounded integer (which gave -7.5e-31, -0.375).
    # A NaN base with exponent 1 keeps the formula's slope, 1 * pow(NaN, 0) = 1.
    e = np.array([1e-30, -1 - 2.0 ** -23, -1e-30, 1e-30, 2.5, 1.0, 1.0, 3.0], np.float32)
    x = np.array([-2.0, -2.0, -0.5, -math.inf, -2.0, math.nan, -math.inf, -2.0], np.float32)
    gx, _ = pow_grads(x, e)
    assert np.isnan(gx[:5]).all(), gx
    np.testing.assert_array_equal(gx[5:], [1.0, 1.0, 12.0])
    # the same through a ScaleBias (g = 0.5 x - 0.25 < 0 for x = 0), and for a FLOAT16 base
    gx, _ = pow_grads(jnp.zeros(2, jnp.float32), jnp.asarray(e[:2]), scale_bias=(0.5, -0.25))
    assert np.isnan(gx).all(), gx
    gx, _ = pow_grads(x.astype(np.float16), e)
    assert np.isnan(gx[:5]).all(), gx
    np.testing.assert_array_equal(gx[5:], np.array([1.0, 1.0, 12.0], np.float16))


def test_pow_gradient_by_input_where_e_minus_1_rounds():
    # FLOAT32 base and exponent: the slope e * pow(g, e - 1) where e - 1 is not a float (|e| < 1/2,
    # negative exponents that cross a binade, beyond 2^24 with the base near 1, where the odd
    # power's sign comes back), within the record's budget of the float64 slope (the FLOAT32
    # terms flushed, as DirectML's math reads them). Rounding e - 1 alone is up to 80 ULP off here.
    rng = np.random.default_rng(7)
    n = 4000
    g = np.exp(rng.uniform(-40, 40, n)).astype(np.float32)
    e = np.concatenate([rng.uniform(-0.5, 0.5, n // 4), -rng.uniform(1, 30, n // 4),
                        rng.uniform(-3, 3, n // 2)]).astype(np.float32)
    g[:200] = (1 + rng.uniform(-3e-6, 3e-6, 200)).astype(np.float32) * rng.choice([1, -1], 200)
    e[:200] = (2.0 ** 24 * rng.choice([2, 3, -2, -3, 1.5], 200)).astype(np.float32)
    g[200:400] = -g[200:400]
    e[200:400] = np.round(e[200:400] * 9)  # negative bases take integral exponents
    gx, _ = pow_grads(g, e)
    g64, e64 = g.astype(np.float64), e.astype(np.float64)
    with np.errstate(all="ignore"):
        p = np.power(g64, e64 - 1)
    tiny = np.finfo(np.float32).tiny
    keep = (np.abs(p) >= tiny) & (np.abs(p) < 3e38) & (np.abs(e64 * p) < 3e38)
    assert keep.sum() > 2500 and keep[:200].sum() > 50 and keep[200:400].sum() > 150
    assert_matches(gx[keep], [e64[keep] * p[keep]], DataType.FLOAT32, ulp=4, context="d/dInput")


def test_pow_half_gradients_where_the_float32_terms_are_denormal():
    # A FLOAT16 base and exponent: the slope and ln|g| * pow(g, e) are computed in FLOAT32 and not
    # flushed (a FLOAT32 denormal times a FLOAT16 cotangent rounds to a FLOAT16 zero of the same
    # sign); large exponents skip the odd-power correction (e - 1 is exact in FLOAT32). A FLOAT32
    # denormal pow(g, e) is a zero (flushed), so the exponent's gradient there is exactly 0 (the
    # CPU flushes it itself; the GPU must give the same). The gradients of both inputs against
    # float64 (denormal terms flushed, as DirectML's math reads them), rounded once to FLOAT16:
    # within 1 FLOAT16 ULP, and zeros of the reference's sign.
    g = np.array([2.0 ** -14, -(2.0 ** -14), 2.0 ** -12, 0.5, -0.5, -2.0, 3.0, 60000.0, -1.5], np.float16)
    e = np.array([10.0, 10.0, 11.0, 150.0, 149.0, 127.0, 80.0, 0.5, 2048.0], np.float16)
    gx, ge = pow_grads(g, e)
    g64, e64 = g.astype(np.float64), e.astype(np.float64)
    with np.errstate(all="ignore"):
        y = np.power(g64, e64)
        slope = e64 * np.power(g64, e64 - 1)
        de = y * np.log(np.abs(g64))
    tiny = np.finfo(np.float32).tiny
    de = np.where(np.abs(y) < tiny, 0.0, de)  # pow(g, e) flushed: exactly 0
    slope, de = (np.where(np.abs(v) < tiny, v * 0, v) for v in (slope, de))
    for got, want in ((gx, slope), (ge, de)):
        want16 = want.astype(np.float16)
        assert got.dtype == np.float16
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want16))
        ulps = np.abs(got.view(np.int16).astype(np.int32) - want16.view(np.int16).astype(np.int32))
        assert (ulps <= 1).all(), (got, want16)


@pytest.mark.parametrize("exponent", [1.5, -0.5, 3.0, 0.0])
def test_pow_half_gradient_by_exponent_for_every_base(exponent):
    # A FLOAT16 base without ScaleBias takes ln|g| from a table of every FLOAT16 magnitude: the
    # exponent's gradient pow(g, e) * ln|g| for all 63,488 finite FLOAT16 bases (denormals and
    # -0 included) within 1 FLOAT16 ULP of float64, its zeros of the reference's sign.
    g = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    g = g[np.isfinite(g)]
    e = np.full(g.shape, exponent, np.float16)
    _, ge = pow_grads(g, e)
    g64 = g.astype(np.float64)
    with np.errstate(all="ignore"):
        y = np.power(g64, exponent)
        want = np.where((g64 == 0) | (np.abs(y) < np.finfo(np.float32).tiny), 0.0, y * np.log(np.abs(g64)))
    want16 = want.astype(np.float16)
    nan = np.isnan(want16)
    assert (np.isnan(ge) == nan).all()
    np.testing.assert_array_equal(np.signbit(ge[~nan]), np.signbit(want16[~nan]))
    ulps = np.abs(ge[~nan].view(np.int16).astype(np.int32) - want16[~nan].view(np.int16).astype(np.int32))
    assert ulps.max() <= 1, ulps.max()


def test_pow_gradient_scale_bias_is_the_base_only():
    x, e = jnp.array([0.5, 1.5], jnp.float32), jnp.array([3.0, 0.5], jnp.float32)
    gx, ge = pow_grads(x, e, scale_bias=(2.0, 1.0))
    g = 2 * np.array([0.5, 1.5]) + 1
    np.testing.assert_allclose(gx, np.array([3.0, 0.5]) * g ** (np.array([3.0, 0.5]) - 1) * 2, rtol=3e-7)
    np.testing.assert_allclose(ge, g ** np.array([3.0, 0.5]) * np.log(g), rtol=3e-7)


def test_pow_integer_operands_get_float0():
    gx, ge = pow_grads(jnp.array([2.0, -3.0], jnp.float32), jnp.array([3, 2], jnp.int32))
    assert ge.dtype == jax.dtypes.float0
    np.testing.assert_array_equal(gx, [12.0, -6.0])
    gx, ge = pow_grads(jnp.array([2, 3], jnp.int32), jnp.array([3, 2], jnp.int8))
    assert gx.dtype == jax.dtypes.float0 and ge.dtype == jax.dtypes.float0
    gx, ge = pow_grads(jnp.array([2, 3], jnp.int32), jnp.array([3.0, 2.5], jnp.float32))
    assert gx.dtype == jax.dtypes.float0 and ge.dtype == np.float32 and not ge.any()  # an integer result


@pytest.mark.parametrize("name", ["sqrt", "log", "erf", "tanh"])
def test_float16_takes_xla_float16_function_on_cuda_only(name):
    # half_native (ops/factories.py): on CUDA the FLOAT16 tensor goes to XLA's FLOAT16 function
    # (tests/gpu/half_precision.py: within 0.51 FLOAT16 ULP of float64 for all 65,536 inputs
    # on an H100); the CPU keeps the FLOAT32 function rounded once. With a ScaleBias, or in
    # FLOAT32, nothing changes. Lowered here for CUDA without a GPU.
    op = getattr(dmljax, f"element_wise_{name}")
    mlir = {"sqrt": "sqrt", "log": "log", "erf": "chlo.erf", "tanh": "tanh"}[name]
    x16 = jax.ShapeDtypeStruct((8,), jnp.float16)

    def lowered(platform, **kw):
        return jax.jit(lambda v: op(v, **kw)).trace(x16).lower(lowering_platforms=(platform,)).as_text()

    assert re.search(rf"{mlir}\S* %\S+ : tensor<8xf16>", lowered("cuda"))
    for text in (lowered("cpu"), lowered("cuda", scale_bias=(2.0, 0.0))):
        assert re.search(rf"{mlir}\S* %\S+ : tensor<8xf32>", text) and not re.search(rf"{mlir}\S* %\S+ : tensor<8xf16>", text)
