"""Gradients across operators (docs/semantics.md#gradients): float0 for integer inputs, finite differences away
from the kinks, forward mode equal to reverse mode. Each operator's gradient at its kinks is in
tests/ops/<family>/test_<module>.py; the generated gradient cases (jax.grad against each reference's float64
derivative) are in tests/test_catalog.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import dmljax


def test_integer_inputs_get_float0():
    a = np.array([7, -7], np.int32)
    b = np.array([3, 3], np.int32)
    _, vjp = jax.vjp(dmljax.element_wise_modulus_floor, a, b)
    da, db = vjp(np.zeros(2, jax.dtypes.float0))
    assert da.dtype == jax.dtypes.float0 and db.dtype == jax.dtypes.float0
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        jax.grad(lambda v: dmljax.element_wise_threshold(v, min=0).sum())(a)


@pytest.mark.parametrize("name,kwargs,lo,hi", [
    ("DML_OPERATOR_ACTIVATION_SCALED_ELU", {}, -4.0, 4.0),
    ("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", {"min": 0.3, "scale_bias": (1.5, -0.25)}, -3.0, 3.0),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": 2.5, "scale_bias": (0.5, 2.0)}, 0.5, 3.0),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": -3.0}, 0.5, 3.0),
])
def test_unary_finite_differences_away_from_kinks(name, kwargs, lo, hi, rng, x64):
    # FLOAT64 is not a type these operators take, so finite differences run on FLOAT32 inputs
    # with float32-sized steps; points are kept 0.05 away from the kinks.
    op = dmljax.get_operator(name)
    x = rng.uniform(lo, hi, 64).astype(np.float32)
    if "min" in kwargs:
        s, b = kwargs["scale_bias"]
        x = x[np.abs(x * s + b - kwargs["min"]) > 0.05]
    if name.endswith("SCALED_ELU"):
        x = x[np.abs(x) > 0.05]
    check_grads(lambda v: op(v, **kwargs), (jnp.asarray(x),), order=1, modes=("fwd", "rev"),
                eps=1e-2, atol=2e-2, rtol=2e-2)


def test_binary_finite_differences(rng):
    a = jnp.asarray(rng.uniform(-10, 10, 32).astype(np.float32))
    b = jnp.asarray(rng.uniform(1, 3, 32).astype(np.float32))
    q = np.asarray(a) / np.asarray(b)
    keep = np.abs(q - np.round(q)) > 0.05  # away from the jumps of floor(a / b)
    a, b = a[keep], b[keep]
    check_grads(dmljax.element_wise_modulus_floor, (a, b), order=1, modes=("fwd", "rev"), eps=1e-3, atol=2e-2, rtol=2e-2)
    check_grads(dmljax.element_wise_multiply, (a, b), order=1, modes=("fwd", "rev"), eps=1e-2, atol=2e-2, rtol=2e-2)


def test_forward_mode_matches_reverse_mode():
    x = jnp.array([-1.0, 0.5, 2.0], jnp.float32)
    for f in (lambda v: dmljax.activation_scaled_elu(v),
              lambda v: dmljax.element_wise_threshold(v, min=0.5),
              lambda v: dmljax.element_wise_constant_pow(v, exponent=3)):
        fwd = jax.jacfwd(f)(x)
        rev = jax.jacrev(f)(x)
        np.testing.assert_array_equal(fwd, rev)
