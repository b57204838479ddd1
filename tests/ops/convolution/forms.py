"""What the tests of CONVOLUTION's forms share (a form: a way of computing the same convolution
that a measured rule takes, switched by its kernel-seam name): the attributes spelled out, inputs,
the forced form against the float64 reference, and against the form switched off bit for bit where
the sums are exact, values and derivatives."""

import jax
import jax.numpy as jnp
import numpy as np

import dmljax
from dmljax import DataType
from dmljax._src.kernel_seam import force_kernels
from dmljax._src.ops.convolution.convolution import CONVOLUTION
from tests import catalog
from tests.compare import assert_matches
from tests.reference.convolution.convolution import _magnitude
from tests.reference.convolution.convolution import convolution as reference
from tests.reference.record import Attrs


def full(attrs, d):
    """The attributes with every array spelled out for ``d`` spatial dimensions (the reference's)."""
    out = {"direction": attrs.get("direction", "FORWARD"), "mode": attrs.get("mode", "CROSS_CORRELATION"),
           "group_count": attrs.get("group_count", 1)}
    for name, unset in (("strides", 1), ("dilations", 1), ("start_padding", 0), ("end_padding", 0),
                        ("output_padding", 0)):
        out[name] = tuple(attrs.get(name, (unset,) * d))
    return out


def inputs(x_shape, w_shape, dtype, seed=0, integers=False):
    """An input and a filter: small integers (exact sums in any order), or normal values scaled by
    the filter's fan-in."""
    rng = np.random.default_rng(seed)
    if integers:
        return (rng.integers(-4, 5, x_shape).astype(dtype), rng.integers(-4, 5, w_shape).astype(dtype))
    x = rng.standard_normal(x_shape).astype(dtype)
    return x, (rng.standard_normal(w_shape) / np.sqrt(np.prod(w_shape[1:]))).astype(dtype)


def switched(switch: str, forced: bool):
    """The context that forces the form (``force_kernels``) or switches it off (``use_kernels``)."""
    return force_kernels(switch) if forced else dmljax.use_kernels(False, switch)


def check_values(x, w, attrs, dtype, switch: str):
    """The forced form against the float64 reference within the operator's budget."""
    spelled = full(attrs, x.ndim - 2)
    with switched(switch, True):
        got = jax.jit(lambda a, b: dmljax.convolution(a, b, **attrs))(x, w)
    budget = catalog.budget(CONVOLUTION, Attrs(attrs), DataType.from_dtype(dtype), sizes=x.shape, args=(x, w))
    want = reference(x, w, **spelled)[0]
    assert got.shape == want.shape
    assert_matches(np.asarray(got), [want], DataType.from_dtype(dtype), budget, f"{switch} vs reference",
                   magnitude=_magnitude(x, w, **spelled))


def check_exact(x_shape, w_shape, attrs, dtype, switch: str, seed=0, programs=None):
    """Exact integer sums: the forced form's values, tangents (jax.jvp) and input and filter
    gradients (jax.vjp) equal those with the form off, bit for bit. ``programs(f, x, w)``, where
    given, checks the two programs of ``f`` (the form forced and off) before they run."""
    x, w = inputs(x_shape, w_shape, dtype, seed, integers=True)
    y_shape = jax.eval_shape(lambda a, b: dmljax.convolution(a, b, **attrs), x, w).shape
    dy, tx = inputs(y_shape, x_shape, dtype, seed + 1, integers=True)
    _, tw = inputs(x_shape, w_shape, dtype, seed + 2, integers=True)

    def everything(a, b):
        y, pull = jax.vjp(lambda p, q: dmljax.convolution(p, q, **attrs), a, b)
        _, t = jax.jvp(lambda p, q: dmljax.convolution(p, q, **attrs), (a, b), (tx, tw))
        return (y, t) + pull(jnp.asarray(dy))

    if programs is not None:
        programs(everything, x, w)
    with switched(switch, True):
        got = jax.jit(everything)(x, w)
    with switched(switch, False):
        want = jax.jit(everything)(x, w)
    for name, g, h in zip(("value", "tangent", "input gradient", "filter gradient"), got, want):
        assert g.dtype == dtype and g.shape == h.shape, name
        np.testing.assert_array_equal(np.asarray(g), np.asarray(h), err_msg=name)
