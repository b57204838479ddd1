"""Hand-written edges of the trigonometric and hyperbolic operators (element_wise_math family):
special values (NaN, +-inf, +-0, FLOAT32 denormals, the ends of each domain) eager and under
jit with constant operands, ATAN_YX's C99 special values bit for bit, large arguments (SIN/COS/
TAN far out, SINH/COSH next to overflow, ASINH/ACOSH up to 3e38), and the gradients at the
singular points, far out, and at the origin of ATAN_YX. Expected values come from Python's math
module (the C library), never from dmljax. The generated cases (tests/test_catalog.py) cover
the support tables, data types, ScaleBias, eager/jit and the reference gradients elsewhere."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType
from tests.compare import assert_matches
from tests import tiers

INF, NAN = math.inf, math.nan
F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def _domain(fn, x, outside=NAN):
    try:
        return fn(x)
    except ValueError:
        return outside
    except OverflowError:
        return math.copysign(INF, x) if fn is not math.cosh else INF


def _atanh(x):
    if abs(x) == 1:
        return math.copysign(INF, x)
    return _domain(math.atanh, x)


PY = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "asinh": math.asinh, "acosh": math.acosh, "atanh": _atanh,
}

# Special values: the operands any of them handles specially, and a FLOAT32 denormal (read as a
# signed zero: the FLOAT32 rule).
SPECIALS = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-40, -1e-40, 1e-30]


def _expected(name, xs, dt):
    out = []
    for x in xs:
        if dt is F32 and 0 < abs(x) < 1.1754944e-38:
            x = math.copysign(0.0, x)  # FLOAT32 denormals are read as signed zeros
        x = float(np.asarray(x, dt.dtype))
        if math.isnan(x):
            out.append(NAN)
        elif name in ("sin", "cos", "tan") and math.isinf(x):
            out.append(NAN)
        else:
            out.append(_domain(PY[name], x))
    return np.array(out, np.float64)


def _op(name):
    return getattr(dmljax, "element_wise_" + name)


def _same_zeros_and_specials(got, want, context):
    """Zeros with their signs, infinities and NaN exactly (the budget covers only finite,
    non-zero values)."""
    got = np.asarray(got, np.float64)
    for g, w in zip(got, want):
        if math.isnan(w):
            assert math.isnan(g), (context, g, w)
        elif w == 0 or math.isinf(w):
            assert g == w and math.copysign(1, g) == math.copysign(1, w), (context, g, w)


@pytest.mark.parametrize("dt", [F32, F16], ids=lambda d: d.name)
@pytest.mark.parametrize("name", tiers.fast_sample(list(PY), keep=6, key="special"))
def test_special_values(name, dt):
    xs = [x for x in SPECIALS if dt is F32 or abs(x) >= 1e-7 or x == 0 or math.isnan(x)]
    x = np.array(xs, dt.dtype)
    want = _expected(name, xs, dt)
    op = _op(name)
    budget = op.spec.ulp[dt]
    for got, how in ((op(x), "eager"), (jax.jit(lambda: op(x))(), "jit, constant operand")):
        context = f"{name} {dt.name} {how}"
        _same_zeros_and_specials(got, want, context)
        assert_matches(got, [want], dt, budget, context=context)


def test_domain_edges():
    x = np.array([1.0, -1.0, 1.0000001, -1.0000001, INF, -INF], np.float32)
    np.testing.assert_array_equal(dmljax.element_wise_atanh(x)[:2], [INF, -INF])
    for name in ("asin", "acos", "atanh"):
        assert np.isnan(np.asarray(_op(name)(x)[2:])).all(), name
    acosh = np.asarray(dmljax.element_wise_acosh(np.array([1.0, 0.99999994, -1.0, -INF, INF], np.float32)))
    assert acosh[0] == 0 and not np.signbit(acosh[0]) and np.isnan(acosh[1:4]).all() and acosh[4] == INF
    assert np.asarray(dmljax.element_wise_acos(np.array([1.0], np.float32)))[0] == 0.0


# ------------------------------------------------------------------------------ large arguments
HUGE = [1e4, -1e4, 12345.678, 65504.0, 1e6, -7.5e7, 1e10, 1e20, -1e30, 3e38, -3e38]


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_large_arguments_are_reduced_exactly(name):
    x = np.array(HUGE, np.float32)
    want = np.array([PY[name](float(v)) for v in x])
    op = _op(name)
    assert_matches(op(x), [want], F32, op.spec.ulp[F32], context=name)
    assert_matches(jax.jit(lambda: op(x))(), [want], F32, op.spec.ulp[F32], context=f"{name} jit")


def test_sinh_cosh_up_to_overflow():
    x = np.array([80.0, 88.0, 88.7, 89.0, 89.4, 89.41, 89.42, 100.0, -89.4, -100.0], np.float32)
    # FLOAT32's largest is 3.4028235e38: sinh and cosh of 89.4159... reach it.
    want_sinh = np.array([_domain(math.sinh, float(v)) for v in x])
    want_cosh = np.array([_domain(math.cosh, float(v)) for v in x])
    s, c = dmljax.element_wise_sinh(x), dmljax.element_wise_cosh(x)
    assert np.isfinite(np.asarray(s)[:6]).all() and np.isfinite(np.asarray(c)[:6]).all()
    assert_matches(s, [want_sinh], F32, dmljax.element_wise_sinh.spec.ulp[F32], context="sinh")
    assert_matches(c, [want_cosh], F32, dmljax.element_wise_cosh.spec.ulp[F32], context="cosh")
    np.testing.assert_array_equal(np.asarray(s)[[7, 9]], [INF, -INF])
    h = np.array([10.0, 11.0, 11.77, 11.8, -11.77], np.float16)  # FLOAT16: finite up to 11.78
    want = np.array([math.sinh(float(v)) for v in h])
    assert_matches(dmljax.element_wise_sinh(h), [want], F16, 1, context="sinh FLOAT16")
    assert_matches(dmljax.element_wise_sinh(h, allow_half_precision_computation=True), [want], F16,
                   dmljax.element_wise_sinh.spec.ulp_half, context="sinh FLOAT16 half")


def test_tanh_saturates():
    x = np.array([9.0, 10.0, 20.0, 1e30, -20.0, -INF], np.float32)
    np.testing.assert_array_equal(dmljax.element_wise_tanh(x)[1:], [1.0, 1.0, 1.0, -1.0, -1.0])
    assert_matches(dmljax.element_wise_tanh(x)[:1], [np.array([math.tanh(9.0)])], F32, 6)


def test_asinh_acosh_far_out_without_overflow():
    x = np.array([1e10, 1.9e19, 1e20, 1e30, 3e38, 3.4028235e38], np.float32)
    for name in ("asinh", "acosh"):
        op = _op(name)
        want = np.array([PY[name](float(v)) for v in x])
        assert_matches(op(x), [want], F32, op.spec.ulp[F32], context=name)
    assert_matches(dmljax.element_wise_asinh(-x), [-np.array([math.asinh(float(v)) for v in x])], F32,
                   dmljax.element_wise_asinh.spec.ulp[F32], context="asinh negative")


# ------------------------------------------------------------------------------ ATAN_YX
ZS = [0.0, -0.0, INF, -INF, 1.0, -1.0, 2.5, -2.5, NAN, 1e-40, -1e-40]


def test_atan_yx_special_values_exactly():
    # C99 atan2, which Python's math.atan2 is: atan2(+-0, -0) = +-pi, atan2(+-0, +0) = +-0,
    # atan2(+-inf, +-inf) = +-pi/4 or +-3pi/4, atan2(+-y, -inf) = +-pi, ...; a = y, b = x.
    ys, xs = np.meshgrid(np.array(ZS, np.float32), np.array(ZS, np.float32), indexing="ij")
    y, x = ys.ravel(), xs.ravel()

    def read(v):  # FLOAT32 denormals are read as signed zeros
        return math.copysign(0.0, v) if 0 < abs(v) < 1.1754944e-38 else float(v)

    want64 = np.array([math.atan2(read(a), read(b)) for a, b in zip(y, x)])
    want = want64.astype(np.float32)
    special = np.array([read(a) == 0 or read(b) == 0 or not (math.isfinite(a) and math.isfinite(b))
                        for a, b in zip(y, x)])
    assert special.sum() == 105
    budget = dmljax.element_wise_atan_yx.spec.ulp[F32]
    for got, how in ((dmljax.element_wise_atan_yx(y, x), "eager"),
                     (jax.jit(lambda: dmljax.element_wise_atan_yx(y, x))(), "jit, constant operands")):
        got = np.asarray(got)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same[special].all(), [(a, b, g, w, how) for a, b, g, w, s, sp in
                                     zip(y, x, got, want, same, special) if sp and not s]
        assert_matches(got[~special], [want64[~special]], F32, budget, context=how)


def test_atan_yx_argument_order():
    y = np.array([1.0], np.float32)
    x = np.array([0.0], np.float32)
    assert np.asarray(dmljax.element_wise_atan_yx(y, x))[0] == np.float32(math.pi / 2)
    assert np.asarray(dmljax.element_wise_atan_yx(a=x, b=y))[0] == 0.0


def _grads2(f, *args):
    return [np.asarray(g) for g in jax.jit(jax.grad(lambda *v: jnp.sum(f(*v)), argnums=tuple(range(len(args)))))(*args)]


def test_atan_yx_gradient_without_overflow_and_at_the_origin():
    # dA = x / (x^2 + y^2), dB = -y / (x^2 + y^2): far out (where x^2 overflows FLOAT32) and
    # near 0 (where it underflows) from float64; at the origin 0 (dmljax's choice), with an
    # infinite operand 0, NaN in -> NaN.
    y = np.array([1e30, 3e38, -2e-30, 1e-19, 3.0, 1e20, 1.0, 0.0, -0.0, 0.0, -0.0, INF, 1.0, NAN], np.float32)
    x = np.array([2e30, -1e38, 1e-30, -1e-19, 4.0, 1.0, 1e20, 0.0, 0.0, -0.0, -0.0, 1.0, -INF, 1.0], np.float32)
    gy, gx = _grads2(dmljax.element_wise_atan_yx, y, x)
    n = 7
    y64, x64 = y[:n].astype(np.float64), x[:n].astype(np.float64)
    r2 = x64 * x64 + y64 * y64
    budget = dmljax.element_wise_atan_yx.spec.ulp[F32]
    assert_matches(gy[:n], [x64 / r2], F32, budget, context="d/da")
    assert_matches(gx[:n], [-y64 / r2], F32, budget, context="d/db")
    np.testing.assert_array_equal(gy[n:-1], 0.0)
    np.testing.assert_array_equal(gx[n:-1], 0.0)
    assert np.isnan(gy[-1]) and np.isnan(gx[-1])
    h = np.array([200.0, 3e-5, 0.0], np.float16), np.array([-300.0, 1e-4, 0.0], np.float16)
    hy, hx = _grads2(dmljax.element_wise_atan_yx, *h)
    assert np.isfinite(hy).all() and np.isfinite(hx).all() and hy[2] == 0 and hx[2] == 0


# ------------------------------------------------------------------------------ gradients
def _grad(name, x, **kw):
    op = _op(name)
    return np.asarray(jax.jit(jax.grad(lambda v: jnp.sum(op(v, **kw))))(x))


def test_gradients_at_the_ends_of_the_domains():
    # The limit from inside the domain, never a NaN made inside the formula; NaN outside.
    x = np.array([1.0, -1.0], np.float32)
    np.testing.assert_array_equal(_grad("asin", x), [INF, INF])
    np.testing.assert_array_equal(_grad("acos", x), [-INF, -INF])
    np.testing.assert_array_equal(_grad("atanh", x), [INF, INF])
    assert _grad("acosh", np.array([1.0], np.float32))[0] == INF
    out = np.array([2.0, -1.5, INF], np.float32)
    for name in ("asin", "acos", "atanh"):
        assert np.isnan(_grad(name, out)).all(), name
    assert np.isnan(_grad("acosh", np.array([0.5, -2.0, -INF], np.float32))).all()
    for dt in (np.float32, np.float16):  # just inside: finite and steep
        near = np.array([np.nextafter(dt(1), dt(0))], dt)
        assert np.isfinite(_grad("asin", near)).all() and _grad("atanh", near)[0] > 1000


def test_gradients_far_out():
    x = np.array([10.0, 20.0, 50.0, 1e30, INF, -INF], np.float32)
    t = _grad("tanh", x)  # sech^2, not 1 - tanh^2 (which is 0 once tanh rounds to 1)
    assert not np.isnan(t).any() and (t >= 0).all() and t[4] == 0 and t[5] == 0
    want = np.array([1 / math.cosh(10.0) ** 2, 1 / math.cosh(20.0) ** 2])
    assert_matches(t[:2], [want], F32, dmljax.element_wise_tanh.spec.ulp[F32], context="tanh'")
    big = np.array([1e10, 1e20, 1e30, 3e38], np.float32)  # 1 / sqrt(x^2 +- 1): x^2 overflows
    for name in ("asinh", "acosh"):
        assert_matches(_grad(name, big), [1 / big.astype(np.float64)], F32, _op(name).spec.ulp[F32], context=name)
    assert_matches(_grad("atan", big[:2]), [1 / big[:2].astype(np.float64) ** 2], F32, 4, context="atan'")
    np.testing.assert_array_equal(_grad("atan", np.array([INF, -INF, 3e38], np.float32)), 0.0)
    c = _grad("sinh", np.array([89.0, 100.0, -INF], np.float32))  # cosh: finite, then inf, not NaN
    assert np.isfinite(c[0]) and c[1] == INF and c[2] == INF
    s = _grad("cosh", np.array([89.0, -100.0, -0.0], np.float32))  # sinh
    assert np.isfinite(s[0]) and s[1] == -INF and s[2] == 0 and np.signbit(s[2])
    assert np.isfinite(_grad("tan", np.array([1.5707963, -1.5707964, 1e4], np.float32))).all()


def test_gradients_chain_scale_and_flush():
    # g = x * Scale + Bias: the slope at g times Scale; FLOAT32 denormal inputs read as 0.
    x = np.array([0.3, 1e-40], np.float32)
    got = _grad("sin", x, scale_bias=(2.0, 0.5))
    want = 2.0 * np.cos(np.float32(0.3) * 2.0 + 0.5), 2.0 * np.cos(0.5)
    assert_matches(got, [np.array(want)], F32, dmljax.element_wise_sin.spec.ulp[F32], context="sin'")
    np.testing.assert_array_equal(_grad("tanh", np.array([1e-40, -1e-40], np.float32)), [1.0, 1.0])


def _float32_sweep(stride: int, lo: float = 0.0, hi: float = math.inf) -> np.ndarray:
    """Every ``stride``-th FLOAT32 bit pattern with lo <= |x| <= hi, both signs (denormals and
    zeros included where lo is 0)."""
    a, b = (int(np.float32(v).view(np.uint32)) for v in (lo, hi))
    m = np.arange(a, b + 1, stride, dtype=np.uint32)
    return np.concatenate([m, m | np.uint32(0x80000000)]).view(np.float32)


def _tanh_within_budget(x, context):
    # against float64 tanh of the input as read (a FLOAT32 denormal is a signed zero), rounded
    # once; the budget in ULP of FLOAT32, zeros and their signs exactly
    from dmljax._src.compare.distance import ulp_distance
    budget = dmljax.element_wise_tanh.spec.ulp[F32]
    read = np.where(np.abs(x) < np.finfo(np.float32).tiny, x * np.float32(0), x)
    want = np.tanh(read.astype(np.float64)).astype(np.float32)
    for op in (dmljax.element_wise_tanh, dmljax.activation_tanh):
        got = np.asarray(op(x))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=context)
        worst = ulp_distance(got, want).max()
        assert worst <= budget, (op.spec.short_name, context, int(worst))


def test_tanh_float32_sweep_within_budget():
    # TANH in FLOAT32 (XLA's own tanh on the CPU, numerics' formula elsewhere): every 16411th
    # FLOAT32 value, and every one from 4 to 4.0625 (inside tanh's slow approach to 1)
    _tanh_within_budget(_float32_sweep(16411), "every 16411th")
    _tanh_within_budget(_float32_sweep(1, 4.0, 4.0625), "[4, 4.0625]")


@pytest.mark.slow
def test_tanh_float32_dense_sweep_within_budget():
    # every FLOAT32 value from 0.5 to 9.1 (where tanh nears +-1 and the result's ULP is 2^-24:
    # XLA's CPU tanh is 5 ULP off at most there), every 61st elsewhere; in blocks of 2^22
    for lo, hi, stride in ((0.0, 0.5, 61), (0.5, 9.1, 1), (9.1, math.inf, 61)):
        a, b = (int(np.float32(v).view(np.uint32)) for v in (lo, hi))
        for start in range(a, b + 1, stride << 22):
            m = np.arange(start, min(start + (stride << 22), b + 1), stride, dtype=np.uint32)
            x = np.concatenate([m, m | np.uint32(0x80000000)]).view(np.float32)
            _tanh_within_budget(x, f"from {x[0]!r}")
