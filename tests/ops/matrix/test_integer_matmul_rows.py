"""One row of A in the integer matrix products (dmljax/_src/kernels/integer_matmul_rows.py): the
two-row form against the product as written and an exact int64 NumPy product, bit for bit, for
every INT8 / UINT8 pair with the extreme values (-128, 127, 0, 255) and zero points, K where FLOAT32
sums would no longer be exact and at the INT32 bound, batch dimensions, the three operators that
share the product; which calls the form covers, and the rule taking it on the CPU."""

import jax
import numpy as np
import pytest

import dmljax
from dmljax._src.kernel_seam import force_kernels
from dmljax._src.kernels import integer_matmul_rows as rows_form
from tests.reference.matrix import integer_matmul as ref
from tests.tiers import fast_sample

SWITCH = rows_form.INTEGER_MATMUL_ROWS.name
I8, U8 = np.int8, np.uint8
MMI = dmljax.matrix_multiply_integer


def _both(fn, *args):
    """``fn(*args)`` jitted with the form forced and switched off."""
    with force_kernels(SWITCH):
        two = np.asarray(jax.jit(fn)(*args))
    with dmljax.use_kernels(False, SWITCH):
        written = np.asarray(jax.jit(fn)(*args))
    return two, written


def _extremes(rng, shape, dtype):
    """Random values of ``dtype`` with its extremes (and 0) over-represented."""
    info = np.iinfo(dtype)
    picks = np.array(sorted({info.min, info.min + 1, 0, 1, info.max - 1, info.max}), np.int64)
    out = rng.integers(info.min, info.max + 1, shape)
    edge = rng.random(shape) < 0.5
    return np.where(edge, rng.choice(picks, shape), out).astype(dtype)


@pytest.mark.parametrize("ta,tb,k", fast_sample([(U8, I8, 1025)] + [
    (ta, tb, k) for ta, tb in [(I8, I8), (I8, U8), (U8, I8), (U8, U8)] for k in (1, 7, 1025, 4099)
    if (ta, tb, k) != (U8, I8, 1025)]), ids=lambda v: np.dtype(v).name if isinstance(v, type) else str(v))
def test_one_row_bit_for_bit(ta, tb, k):
    # K = 1025 and 4099: past where FLOAT32 sums of 8-bit products stay exact (1,024 x 2^14)
    rng = np.random.default_rng(k)
    a, b = _extremes(rng, (1, k), ta), _extremes(rng, (k, 5), tb)
    ia, ib = np.iinfo(ta), np.iinfo(tb)
    zero_points = [(None, None), (np.array([ia.max], ta), np.array([ib.min], tb)),
                   (np.array([ia.min], ta), _extremes(rng, (5,), tb))]
    for za, zb in zero_points:
        two, written = _both(MMI, a, b, za, zb)
        np.testing.assert_array_equal(two, written)
        np.testing.assert_array_equal(two.astype(np.int64), ref.exact_sum(a, b, za, zb))


@pytest.mark.slow  # 3 s
@pytest.mark.parametrize("ta,tb,za,zb,k,total", [
    # the extreme sums the INT32 bound allows: 33,025 x 255 x 255 (UINT8, or a zero point), 131,071 x 128 x 128
    (U8, U8, None, None, 33025, 33025 * 255 * 255),
    (I8, I8, 127, -128, 33025, -33025 * 255 * 255),
    (I8, I8, None, None, 131071, 131071 * 128 * 128),
])
def test_one_row_at_the_int32_bound(ta, tb, za, zb, k, total):
    fill_a = {U8: 255, I8: -128}[ta]
    fill_b = {U8: 255, I8: 127 if za is not None else -128}[tb]
    a, b = np.full((1, k), fill_a, ta), np.full((k, 2), fill_b, tb)
    za = None if za is None else np.array([za], ta)
    zb = None if zb is None else np.array([zb], tb)
    two, written = _both(MMI, a, b, za, zb)
    assert two.tolist() == written.tolist() == [[total, total]]


@pytest.mark.slow  # 3 s
def test_batch_dimensions_and_the_operators_that_share_the_product():
    rng = np.random.default_rng(1)
    a, b = _extremes(rng, (2, 3, 1, 300), U8), _extremes(rng, (2, 3, 300, 17), U8)
    za, zb = np.array([[[[131]]]], U8), _extremes(rng, (1, 1, 1, 17), U8)
    two, written = _both(MMI, a, b, za, zb)
    np.testing.assert_array_equal(two, written)
    np.testing.assert_array_equal(two.astype(np.int64), ref.exact_sum(a, b, za, zb))
    s = np.array([0.0625], np.float32)
    sb = rng.uniform(0.01, 0.1, (1, 1, 1, 17)).astype(np.float32)

    def to_float(*x):
        return dmljax.matrix_multiply_integer_to_float(x[0], s.reshape(1, 1, 1, 1), x[1], sb, za, zb,
                                                       allow_half_precision_computation=False)

    def quantized(*x):
        return dmljax.quantized_linear_matrix_multiply(x[0], s.reshape(1, 1, 1, 1), x[1], sb,
                                                       np.array([[[[0.5]]]], np.float32), za, zb,
                                                       np.array([[[[3]]]], U8), output_data_type="UINT8")
    for fn in (to_float, quantized):
        two, written = _both(fn, a, b)
        np.testing.assert_array_equal(two, written)
    batched = jax.vmap(lambda x, y: MMI(x, y, za[0], zb[0]))(a, b)  # vmapped: a batch dimension of the product
    np.testing.assert_array_equal(np.asarray(batched).astype(np.int64), ref.exact_sum(a, b, za, zb))


def test_which_calls_the_form_covers():
    assert rows_form.rows_kind((1, 64), (64, 8), np.int8) == "one row"
    assert rows_form.rows_kind((4, 2, 1, 64), (4, 2, 64, 8), np.int8) == "one row"
    assert rows_form.rows_kind((2, 64), (64, 8), np.int8) is None
    assert rows_form.rows_kind((1, 64), (64, 8), np.uint8) is None  # the operators read UINT8 as INT8 first


@pytest.mark.parametrize("rows", [1, 2])
def test_the_rule_takes_the_form_for_one_row_on_the_cpu(rows):
    a, b = np.zeros((rows, 40), U8), np.zeros((40, 24), I8)
    za = np.array([7], U8)

    def program():
        return jax.jit(MMI).lower(a, b, za, None).compile().as_text()
    text = program()
    two_rows = "s8[2,40]" in text and "concatenate" in text
    assert two_rows == (rows == 1 and jax.default_backend() == "cpu")
    with dmljax.use_kernels(False, SWITCH):
        assert "concatenate" not in program()
    assert rows_form.RULE["cpu"] == {"one row": "two rows"}
    assert rows_form.RULE["cuda"] == {"one row": "xla"}
