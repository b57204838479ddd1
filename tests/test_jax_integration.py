"""Operators under jit, vmap, eval_shape and sharding: eager equals jit, one trace per
configuration, named scopes, no collectives for sharded element-wise work."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import dmljax
from dmljax._src.op import TRACE_COUNTS

UNARY = [
    ("DML_OPERATOR_ACTIVATION_SCALED_ELU", {}),
    ("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", {"min": 0.25}),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": 2.5}),
]


@pytest.mark.parametrize("name,kwargs", UNARY + [("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", {"min": 0.25, "scale_bias": (3.0, 0.5)})])
def test_eager_equals_jit(name, kwargs, rng):
    op = dmljax.get_operator(name)
    x = (rng.standard_normal((4, 5)) * 3).astype(np.float32)
    jitted = np.asarray(jax.jit(lambda v: op(v, **kwargs))(x))
    with jax.disable_jit():
        eager = np.asarray(op(x, **kwargs))
    if "scale_bias" in kwargs:
        # XLA's CPU backend fuses x * Scale + Bias into an FMA under jit, not op by op: DirectML
        # allows either (docs/semantics.md#fused-multiply-add), the record's budget covers it.
        from tests.compare import ulp_distance
        assert ulp_distance(jitted, eager).max() <= op.spec.ulp[dmljax.DataType.FLOAT32]
    else:
        np.testing.assert_array_equal(jitted.view(np.uint32), eager.view(np.uint32))


def test_binary_eager_equals_jit(rng):
    a = (rng.standard_normal(64) * 100).astype(np.float32)
    b = (rng.standard_normal(64) * 3).astype(np.float32)
    for op in (dmljax.element_wise_modulus_floor, dmljax.element_wise_multiply):
        jitted = np.asarray(jax.jit(op)(a, b))
        with jax.disable_jit():
            eager = np.asarray(op(a, b))
        np.testing.assert_array_equal(jitted.view(np.uint32), eager.view(np.uint32))


def test_traced_once_per_configuration():
    name = "DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW"
    x = np.linspace(0.5, 2, 7, dtype=np.float32).reshape(7, 1)
    before = TRACE_COUNTS[name]
    for _ in range(3):
        dmljax.element_wise_constant_pow(x, exponent=3)
    dmljax.element_wise_constant_pow(x, exponent=3.0)  # the same attribute: no new trace
    dmljax.element_wise_constant_pow(x + 1, exponent=np.float32(3))
    assert TRACE_COUNTS[name] - before == 1
    dmljax.element_wise_constant_pow(x, exponent=2)  # a new attribute value is a new compile
    assert TRACE_COUNTS[name] - before == 2
    dmljax.element_wise_constant_pow(x, exponent=2, feature_level="3.0")  # level: validation only
    assert TRACE_COUNTS[name] - before == 2


def test_vmap_validates_per_example():
    x = jnp.ones((3, 1, 2, 2, 2), jnp.float32)  # a batch of 3 four-dimensional tensors
    out = jax.vmap(lambda v: dmljax.element_wise_threshold(v, min=2.0, feature_level="1.0"))(x)
    assert out.shape == x.shape and float(out[0, 0, 0, 0, 0]) == 2.0
    with pytest.raises(dmljax.ValidationError, match="has 3 dimensions"):
        jax.vmap(lambda v: dmljax.element_wise_threshold(v, min=2.0, feature_level="1.0"))(x[:, 0])


def test_eval_shape_validates_without_computing():
    spec = jax.ShapeDtypeStruct((2, 3), jnp.float32)
    out = jax.eval_shape(lambda v: dmljax.element_wise_threshold(v, min=0.0), spec)
    assert out.shape == (2, 3) and out.dtype == jnp.float32
    with pytest.raises(dmljax.ValidationError):
        jax.eval_shape(lambda v: dmljax.element_wise_threshold(v, min=0.0),
                       jax.ShapeDtypeStruct((2, 3), jnp.bfloat16))


def test_nothing_runs_before_validation(monkeypatch):
    calls = []
    op = dmljax.element_wise_threshold
    monkeypatch.setattr(jax, "jit", lambda *a, **k: calls.append(1))  # would break a late jit
    with pytest.raises(dmljax.ValidationError):
        op(np.zeros((2,), np.float64), min=0.0)
    assert calls == []


def test_named_scope_in_jaxpr_and_hlo():
    x = jnp.ones((2, 2), jnp.float32)
    text = jax.jit(lambda v: dmljax.activation_scaled_elu(v)).lower(x).as_text(debug_info=True)
    assert "DML_OPERATOR_ACTIVATION_SCALED_ELU" in text


def test_composes_under_jit_grad_and_vmap():
    def model(w, x):
        h = dmljax.activation_scaled_elu(x * w)
        return jnp.sum(dmljax.element_wise_constant_pow(dmljax.element_wise_threshold(h, min=-0.5), exponent=2))
    w = jnp.float32(0.7)
    xs = jnp.linspace(-2, 2, 12, dtype=jnp.float32).reshape(3, 4)
    g = jax.jit(jax.vmap(jax.grad(model), in_axes=(None, 0)))(w, xs)
    assert g.shape == (3,) and np.isfinite(np.asarray(g)).all()


@pytest.mark.parametrize("name", ["IF", "SCALED_ELU", "MODULUS_FLOOR", "THRESHOLD", "CONSTANT_POW"])
def test_sharded_inputs_keep_sharding_and_need_no_collectives(name):
    devices = jax.devices("cpu")
    assert len(devices) == 8, "conftest.py asks for 8 virtual CPU devices"
    mesh = Mesh(np.array(devices).reshape(4, 2), ("x", "y"))
    sharding = NamedSharding(mesh, P("x", "y"))
    shape = (8, 6)
    x = jax.device_put(jnp.linspace(0.5, 4, 48, dtype=jnp.float32).reshape(shape), sharding)
    c = jax.device_put(jnp.ones(shape, jnp.uint8), sharding)
    f = {
        "IF": lambda: (lambda a, b, cond: dmljax.element_wise_if(cond, a, b), (x, x, c)),
        "SCALED_ELU": lambda: (lambda a: dmljax.activation_scaled_elu(a), (x,)),
        "MODULUS_FLOOR": lambda: (dmljax.element_wise_modulus_floor, (x, x)),
        "THRESHOLD": lambda: (lambda a: dmljax.element_wise_threshold(a, min=1.0), (x,)),
        "CONSTANT_POW": lambda: (lambda a: dmljax.element_wise_constant_pow(a, exponent=2), (x,)),
    }[name]
    fn, args = f()
    jitted = jax.jit(fn)
    out = jitted(*args)
    assert out.sharding.is_equivalent_to(sharding, out.ndim), out.sharding
    hlo = jitted.lower(*args).compile().as_text()
    for collective in ("all-gather", "all-reduce", "collective-permute", "all-to-all", "reduce-scatter"):
        assert collective not in hlo, collective


def test_caches_tell_apart_what_equality_does_not():
    # -0.0 == 0.0 and True == 1 in Python: the validation and executable caches must not mix
    # them up (THRESHOLD returns Min at a tie, so Min's sign shows in the result).
    x = np.array([-0.0, 0.0], np.float32)
    assert list(np.signbit(dmljax.element_wise_threshold(x, min=0.0))) == [False, False]
    assert list(np.signbit(dmljax.element_wise_threshold(x, min=-0.0))) == [True, True]
    assert list(np.signbit(dmljax.element_wise_threshold(x, min=0.0, scale_bias=(1.0, -0.0)))) == [False, False]
    dmljax.element_wise_threshold(x, min=1)
    with pytest.raises(dmljax.ValidationError, match=r"Min \(argument `min`\) is True \(bool\), not a number"):
        dmljax.element_wise_threshold(x, min=True)
