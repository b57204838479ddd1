"""docs/semantics.md's rules that hold across operators (FLOAT16 computed in FLOAT32 and rounded
once, FLOAT32 denormals flushed on the input and output of math, half-precision computation within
its budget), each against values derived independently (IEEE bit patterns or the float64
reference). Each operator's own edges live in tests/ops/<family>/test_<module>.py."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType
from tests import tiers
from tests.catalog import references
from tests.compare import assert_matches

F32_DENORMAL = np.float32(1e-40)
REFERENCES = references()


# ----------------------------------------------------------------------------------------------
# FLOAT16, FLOAT32 denormals, precision


def test_float16_is_computed_in_float32_and_rounded_once():
    # x * s + b with x = 1 + 2^-10, s = 1 + 3 * 2^-10, b = -1: exactly 2^-8 + 3 * 2^-20, which
    # rounds once to 2^-8 + 2^-18 in FLOAT16; rounding x * s to FLOAT16 first gives 2^-8.
    x = np.array([1 + 2**-10], np.float16)
    sb = (1 + 3 * 2**-10, -1.0)
    once = np.float16(2**-8 + 2**-18)
    out = dmljax.element_wise_threshold(x, min=-100.0, scale_bias=sb)
    assert out.dtype == np.float16 and out[0] == once
    half = dmljax.element_wise_threshold(x, min=-100.0, scale_bias=sb, allow_half_precision_computation=True)
    assert half.dtype == np.float16
    assert abs(float(half[0]) - float(once)) <= 2**-18  # within the half-precision budget (1 ULP)


@pytest.mark.parametrize("op,kwargs", [
    (dmljax.element_wise_threshold, {"min": -1.0}),
    (dmljax.activation_scaled_elu, {}),
    (dmljax.element_wise_constant_pow, {"exponent": 1.0}),
])
def test_float32_denormal_inputs_are_flushed_sign_preserving(op, kwargs):
    x = np.array([F32_DENORMAL, -F32_DENORMAL], np.float32)
    out = np.asarray(op(x, **kwargs))
    assert (out == 0).all()
    if op is not dmljax.activation_scaled_elu:
        assert list(np.signbit(out)) == [False, True]


# The second operand of the element-wise sums below: their results reach the denormals (1e-37 -
# 9.9e-38). x - 0, which XLA simplifies away under jit, passes a flushed input on untouched (x + 0
# is left out: jit keeps -0 where IEEE gives +0, docs/semantics.md)
_SUMMAND = np.full((4, 6), 0.5, np.float32)
_SUMMAND[1, :2] = [-9.9e-38, 9.6e-38]

_ARITHMETIC_READERS = {  # operators whose FLOAT32 flushes are XLA's arithmetic's own on the CPU
    "add": lambda x: dmljax.element_wise_add(x, _SUMMAND),
    "subtract": lambda x: dmljax.element_wise_subtract(x, -_SUMMAND),
    "subtract zero": lambda x: dmljax.element_wise_subtract(x, np.zeros((4, 6), np.float32)),
    "reduce SUM": lambda x: dmljax.reduce(x, function="SUM", axes=(1,)),
    "reduce L1": lambda x: dmljax.reduce(x, function="L1", axes=(1,)),
    "reduce L2": lambda x: dmljax.reduce(x, function="L2", axes=(1,)),
    "reduce AVERAGE": lambda x: dmljax.reduce(x, function="AVERAGE", axes=(0,)),
    "reduce MULTIPLY": lambda x: dmljax.reduce(x, function="MULTIPLY", axes=(1,)),
    "reduce LOG_SUM_EXP": lambda x: dmljax.reduce(x, function="LOG_SUM_EXP", axes=(1,)),
    "cumulative_summation": lambda x: dmljax.cumulative_summation(x, axis=1),
    "cumulative_summation exclusive": lambda x: dmljax.cumulative_summation(
        x, axis=0, axis_direction="DECREASING", has_exclusive_sum=True),
    "lp_normalization": lambda x: dmljax.lp_normalization(x, axis=1),
    "lp_normalization p=1 epsilon=0": lambda x: dmljax.lp_normalization(x, axis=0, p=1, epsilon=0.0),
    "softmax1": lambda x: dmljax.activation_softmax1(x, axes=(1,)),
    "log_softmax1": lambda x: dmljax.activation_log_softmax1(x, axes=(1,)),
    "mean_variance_normalization1": lambda x: dmljax.mean_variance_normalization1(x, axes=(1,)),
    "mean_variance_normalization2 scaled": lambda x: dmljax.mean_variance_normalization2(
        x, np.full((1, 6), 3e-39, np.float32), np.full((1, 6), -1e-39, np.float32), axes=(1,), use_mean=False),
    "mean_variance_normalization2 neither": lambda x: dmljax.mean_variance_normalization2(
        x, axes=(1,), use_mean=False, use_variance=False),
}


_SLOW_READERS = {"reduce L1", "reduce L2", "reduce AVERAGE", "reduce LOG_SUM_EXP", "log_softmax1",
                 "mean_variance_normalization2 scaled", "lp_normalization p=1 epsilon=0",
                 "cumulative_summation exclusive"}  # 4 s more on 2 cores: the slow tier


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_READERS else n
                                  for n in sorted(_ARITHMETIC_READERS)])
def test_float32_denormals_read_and_stored_as_zero_where_xla_flushes(name):
    # On the CPU these leave the flushes to the processor (numerics.load's float_reads, store's
    # float_result): the same
    # bits as the input flushed beforehand, eager and in jit, and no denormal out
    d = np.float32(3e-39)
    x = np.array([[d, -d, 2 * d, 0.0, -0.0, d], [1e-37, -9.5e-38, d, -d, 0.0, 1.0],
                  [-d, -d, -0.0, -d, -0.0, -d], [1e-20, 1e-20, 1e-19, 2e-20, -d, 5.0]], np.float32)
    flushed = np.where(np.abs(x) < np.finfo(np.float32).tiny, x * np.float32(0), x)
    op = _ARITHMETIC_READERS[name]
    want = np.asarray(op(flushed))
    for got in (np.asarray(op(x)), np.asarray(jax.jit(op)(x))):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        assert not ((np.abs(got) < np.finfo(np.float32).tiny) & (got != 0)).any()
    if name.endswith("neither"):  # the input is the output: its flush is explicit
        assert np.signbit(want[2]).all() and (want[2] == 0).all()


def test_float32_denormal_outputs_are_flushed():
    out = np.asarray(dmljax.element_wise_multiply(np.array([1e-20, -1e-20], np.float32),
                                                  np.array([1e-20, 1e-20], np.float32)))
    assert (out == 0).all() and list(np.signbit(out)) == [False, True]
    # FLOAT16 denormals are kept
    h = np.asarray(dmljax.element_wise_multiply(np.array([2**-20], np.float16), np.array([0.5], np.float16)))
    assert h[0] == np.float16(2**-21) and h[0] != 0


@pytest.mark.parametrize("name,kwargs", [
    ("DML_OPERATOR_ACTIVATION_SCALED_ELU", {}),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": 2.5}),
    ("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", {"min": 0.1, "scale_bias": (1.5, -0.25)}),
])
def test_half_precision_computation_within_its_budget(name, kwargs, rng):
    op = dmljax.get_operator(name)
    x = np.abs(rng.standard_normal(2048) * 3).astype(np.float16)
    out = op(x, **kwargs, allow_half_precision_computation=True)
    assert out.dtype == np.float16
    refs = REFERENCES[name].fn(x, **kwargs)
    # ScaleBias computed in FLOAT16 rounds after the multiply in FLOAT16: add that candidate.
    if "scale_bias" in kwargs:
        s, b = (np.float16(v) for v in kwargs["scale_bias"])
        refs = refs + REFERENCES[name].fn((x * s + b).astype(np.float16), **{k: v for k, v in kwargs.items() if k != "scale_bias"})
    assert_matches(out, refs, DataType.FLOAT16, op.spec.ulp_half, context=name)


# ---------------------------------------------------------------------------------------------
# A value one operator stored (and flushed) is not flushed again by the next operator: same bits
def test_chained_operators_flush_each_intermediate_once():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(256) * 1e-19).astype(np.float32)  # products reach the denormals
    x[:6] = [1e-40, -1e-40, 0.0, -0.0, np.nan, -np.inf]
    s = np.full(256, 1e-19, np.float32)

    def chain(v, w, copy):
        a = dmljax.element_wise_multiply(v, w)  # stored flushed
        a = jnp.array(np.asarray(a)) if copy else a  # a copy is a new object: flushed again
        return dmljax.element_wise_sqrt(dmljax.element_wise_abs(dmljax.element_wise_add(a, v)))

    passed, copied = np.asarray(chain(x, s, False)), np.asarray(chain(x, s, True))
    assert passed.tobytes() == copied.tobytes()
    jitted = np.asarray(jax.jit(lambda v, w: chain(v, w, False))(x, s))
    assert jitted.tobytes() == passed.tobytes()
    # and the flush really is skipped: fewer compares in the program than with the link broken
    # (a + 0.0 is a new value nobody stored), in a program for the GPU (on the CPU the processor
    # flushes what an operator reads: numerics.load's float_reads)
    def lowered(f):
        return jax.jit(f).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    linked = lowered(lambda v: dmljax.element_wise_sqrt(dmljax.element_wise_abs(v)))
    broken = lowered(lambda v: dmljax.element_wise_sqrt(dmljax.element_wise_abs(v) + 0.0))
    assert linked.count("stablehlo.compare") < broken.count("stablehlo.compare")


# ---------------------------------------------------------------------------------------------
# "Fused activations produce the same result" as the operators in turn: every implemented
# activation that DirectML lets ADD1 fuse, with its reference's first attribute set
def _fusable_into_add1():
    from dmljax._src.fused import FUSABLE
    return [n for n, hosts in FUSABLE.items() if n in dmljax.registry() and hosts is None]


@pytest.mark.parametrize("name", tiers.fast_sample(_fusable_into_add1(), keep=6, key="fused"),
                         ids=lambda n: n.removeprefix("DML_OPERATOR_"))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fused_activation_equals_the_separate_operator(name, dtype):
    op = dmljax.get_operator(name)
    attrs = dict(references()[name].attr_sets(DataType.from_dtype(np.dtype(dtype)))[0].dml)
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(512) * 3).astype(dtype)
    b = (rng.standard_normal(512) * 3).astype(dtype)
    a[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40 if dtype == np.float32 else 6e-8]
    fused = dmljax.element_wise_add1(a, b, fused_activation=dmljax.FusedActivation(op.spec.short_name, **attrs))
    separate = op(dmljax.element_wise_add(a, b), **attrs)
    np.testing.assert_array_equal(np.isnan(fused), np.isnan(separate))
    keep = ~np.isnan(np.asarray(separate))
    assert np.asarray(fused)[keep].tobytes() == np.asarray(separate)[keep].tobytes()


def test_fused_activation_meets_its_own_page_rules():
    # A fused activation is checked as the separate operator would be: SOFTPLUS's Steepness
    # "cannot be less than 1" before DML_FEATURE_LEVEL_6_4, fused into ADD1 too.
    a = np.ones(3, np.float32)
    fused = dmljax.FusedActivation("ACTIVATION_SOFTPLUS", Steepness=0.5)
    with pytest.raises(dmljax.ValidationError, match=r"FusedActivation.Desc.Steepness .*cannot be less than 1"):
        dmljax.element_wise_add1(a, a, fused_activation=fused, feature_level="6.3")
    np.testing.assert_array_equal(dmljax.element_wise_add1(a, a, fused_activation=fused),
                                  dmljax.activation_softplus(np.full(3, 2.0, np.float32), steepness=0.5))


def test_every_fusable_activation_is_implemented():
    # core/dml-fused-activations.md's whole list (CLIP for CONVOLUTION and GEMM only) exists, so
    # every FusedActivation DirectML accepts is accepted (test_fused_activation_equals_the_separate
    # _operator runs each one fused into ADD1).
    from dmljax._src.fused import FUSABLE
    assert [n for n in FUSABLE if n not in dmljax.registry()] == []


def test_denormal_scale_bias_members_read_as_zero():
    # A FLOAT32 denormal Scale or Bias reads as zero of its sign, as any math input does: XLA's
    # CPU backend flushed it and its GPU backend did not (2^23 * 2^-149 is the normal 2^-126)
    x = np.array([-8388608.0, 3.0], np.float32)
    got = dmljax.element_wise_identity(x, scale_bias=(-1.401298464324817e-45, 0.0))
    assert np.asarray(got).tolist() == [0.0, 0.0]
    # 0 + (-1e-40) would be the denormal -1e-40, written as -0; the Bias read as -0 gives 0 + -0 = +0
    assert not np.signbit(np.asarray(dmljax.element_wise_identity(np.float32([0.0]), scale_bias=(1.0, -1e-40))))[0]
    got = dmljax.element_wise_threshold(x, min=0.0, scale_bias=(-1.401298464324817e-45, 0.0))
    assert np.asarray(got).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_copy_sign_on_the_bits_equals_jnp_copysign(dtype):
    # numerics.copy_sign (MODULUS_FLOOR's zeros) against jnp.copysign:
    # the same bits for every pair of specials (NaN's sign included), and the same gradient.
    from dmljax._src.numerics import copy_sign

    v = np.array([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, np.nan, -np.nan, 6e-8, -3e-39, 65504.0], dtype)
    x, s = (a.ravel() for a in np.meshgrid(v, v))
    uint = np.uint32 if dtype == np.float32 else np.uint16
    got = np.asarray(jax.jit(copy_sign)(x, s)).view(uint)
    want = np.asarray(jnp.copysign(x, s)).view(uint)
    np.testing.assert_array_equal(got, want)
    fin = np.isfinite(x) & ~np.isnan(s)
    g_got = jax.vmap(jax.grad(lambda a, b: copy_sign(a, b)))(x[fin], s[fin])
    g_want = jax.vmap(jax.grad(lambda a, b: jnp.copysign(a, b)))(x[fin], s[fin])
    np.testing.assert_array_equal(np.asarray(g_got), np.asarray(g_want))


def test_the_flush_keeps_only_the_sign_of_a_zero_exponent_field():
    # the FLOAT32 flush against the rule on the bits: a zero exponent field keeps only the sign;
    # every exponent, both signs, NaN and infinity included
    from dmljax._src.numerics import _flush_select

    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    bits[:512] = (np.arange(512, dtype=np.uint32) << np.uint32(23)) | np.uint32(1)  # each sign and exponent
    bits[512:520] = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00001, 0x807FFFFF, 0x00800000, 0x80800000]
    x = bits.view(np.float32)
    denormal_or_zero = (bits & np.uint32(0x7F800000)) == 0
    want = np.where(denormal_or_zero, bits & np.uint32(0x80000000), bits)
    got = np.asarray(jax.jit(_flush_select)(x)).view(np.uint32)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# A FLOAT attribute beyond FLOAT16's range, computed in FLOAT16, is +-inf (IEEE's conversion),
# with no NumPy warning reaching the user; RANDOM_GENERATOR's key schedule wraps silently too.
@pytest.mark.parametrize("call, want", [
    (lambda x: dmljax.activation_scaled_elu(x, alpha=1.0, gamma=1e6, allow_half_precision_computation=True),
     [np.inf, np.inf]),
    (lambda x: dmljax.activation_hard_swish(x, alpha=1e6, beta=0.0, allow_half_precision_computation=True),
     [0.5, 2.0]),
    (lambda x: dmljax.activation_swish(x, sigmoid_input_scale=1e6, allow_half_precision_computation=True),
     [0.5, 2.0]),
    (lambda x: dmljax.element_wise_threshold(x, min=0.0, scale_bias=dmljax.ScaleBias(scale=1e6, bias=0.0),
                                             allow_half_precision_computation=True), [np.inf, np.inf]),
])
def test_float_attributes_beyond_float16_are_infinite_without_a_warning(call, want):
    x = np.array([0.5, 2.0], np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = np.asarray(call(x))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, np.array(want, np.float16))


def test_attribute_products_overflow_to_infinity_without_a_warning():
    # SCALED_ELU takes Gamma * Alpha once, CONSTANT_POW's gradient Exponent * Scale: float32
    # products of FLOAT attributes, +-inf where they overflow (the page's formula overflows there
    # too at x = -1: 1e30 * (1e10 * exp(-1) - 1e10)), and no NumPy warning.
    x = np.array([-1.0, 2.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        elu = np.asarray(dmljax.activation_scaled_elu(x, alpha=1e10, gamma=1e30))
        slope = np.asarray(jax.grad(lambda v: jnp.sum(dmljax.element_wise_constant_pow(
            v, exponent=3e30, scale_bias=dmljax.ScaleBias(scale=1e10, bias=0.0))))(np.float32([1e-10])))
    np.testing.assert_array_equal(elu, np.float32([-np.inf, 2e30]))
    np.testing.assert_array_equal(slope, np.float32([np.inf]))  # g = 1e-10 * 1e10 = 1: (3e30 * 1e10) * 1


def test_random_generator_op_by_op_wraps_its_key_without_a_warning():
    state = np.array([0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF], np.uint32)
    jitted = np.asarray(dmljax.random_generator(state, output_sizes=[8])[0])
    with warnings.catch_warnings(), jax.disable_jit():
        warnings.simplefilter("error")
        eager = np.asarray(dmljax.random_generator(state, output_sizes=[8])[0])
    np.testing.assert_array_equal(eager, jitted)
