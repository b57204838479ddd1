"""Forward mode and batching, generated from the registry for every operator with a float input:
jax.jvp against the float64 reference derivative, jax.jacfwd equal to jax.jacrev, and jax.vmap
(over axis 0 and over a later axis) equal to a loop of single calls. An operator without a float
input is left out by its record (its support tables), not by a list; the completeness check fails
when a registered operator with a float type has no forward-mode case."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dmljax import DataType
from dmljax._src.registry import get_operator, registry
from tests import catalog, tiers
from tests.compare import ulp_distance
from tests.test_catalog import F32, GRADS, REFS, _plain_inputs, _short, cotangent

OPS = list(registry())
FORWARD = [n for n, dt in GRADS if dt is F32]  # the operators with a FLOAT32 type and a reference
VMAP = [n for n in OPS if n in REFS and _plain_inputs(n)]


def _sample(params, key):
    """A twenty-eighth of the operators in the fast tier (fixed by ``key``), every one in the slow tier."""
    return tiers.slow_transformations(tiers.fast_sample(params, keep=max(1, len(params) // 28), key=key))


def _first_type(name):
    """FLOAT32 where the operator takes it, else its first type that needs no 64-bit mode."""
    types = catalog.newest_types(get_operator(name).spec)
    return F32 if F32 in types else next(t for t in types if t.dtype.itemsize < 8)


def _case(name, rng, n=8, dt=F32):
    """The operator, its first attribute set and inputs of type ``dt``, its float inputs' positions."""
    op = get_operator(name)
    spec, ref = op.spec, REFS[name]
    # the newest table whose types need no 64-bit mode (MAX_UNPOOLING's newest indices are UINT64)
    table = next((t for t in spec.support
                  if all(d.dtype.itemsize < 8 for d in catalog.tensor_types(spec, t.level, dt).values())),
                 spec.support[0])
    types = catalog.tensor_types(spec, table.level, dt)
    shape = ref.case_shape(catalog.vector_shape(table.tensors[catalog.main_tensor(spec)].dims, n))
    attrs = catalog.newest_sets(spec, ref, dt, shape)[0]
    args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
    floats = [i for i, t in enumerate(spec.inputs) if types[t.dml_name].is_float and args[i] is not None]
    return op, ref, attrs, args, floats


def _along(op, attrs, args, i):
    def f(v):
        return catalog.first_output(op(*[v if k == i else a for k, a in enumerate(args)], **attrs.dml))
    return f


@pytest.mark.parametrize("name", _sample(FORWARD, "jvp"), ids=_short)
def test_jvp_matches_reference_derivative(name, rng):
    # <jvp(v), dY> against <v, the float64 reference gradient(dY)>, along random directions v of
    # each float input in turn: the reference's derivative read forward.
    op, ref, attrs, args, floats = _case(name, rng, 16)
    out = jax.eval_shape(_along(op, attrs, args, floats[0]), args[floats[0]])
    if not jnp.issubdtype(out.dtype, jnp.floating):
        return  # an index output (REDUCE's ARGMAX): its tangent is float0, checked by jacfwd below
    y = np.asarray(_along(op, attrs, args, floats[0])(args[floats[0]]), np.float64)
    dy = np.where(np.isfinite(y), cotangent(out.shape, False), 0.0)  # outside the domain: NaN, no derivative
    want = None if ref.grad is None else ref.grad(dy, *args, **attrs.ref_kwargs)
    for i in floats:
        v = rng.standard_normal(args[i].shape).astype(np.float32)
        _, t = jax.jvp(_along(op, attrs, args, i), (args[i],), (jnp.asarray(v, args[i].dtype),))
        t = np.asarray(t, np.float64)
        got = float(np.sum(np.where(dy != 0, t, 0.0) * dy))
        assert np.isfinite(got), name
        if want is None:
            assert got == 0.0, f"{_short(name)}: {ref.no_grad}, yet a tangent flows"
            continue
        if want[i] is None:
            continue
        w = np.asarray(want[i], np.float64)
        w = np.where(np.isfinite(w), w, 0.0)
        expect, scale = float(np.sum(w * v)), float(np.sum(np.abs(w * v))) + 1e-3
        assert abs(got - expect) <= 2e-3 * scale, f"{_short(name)} {attrs} d/d{op.spec.inputs[i].arg}: {got} != {expect}"


CRASHES = {"DML_OPERATOR_ROI_ALIGN1": "XLA's CPU backend (jax 0.10.2) dies of a segmentation fault running jax.jacfwd "
                                     "(vmap of the JVP) of its MAX case; jax.jvp, jax.jacrev and jax.vmap pass"}
"""Operators whose jacfwd this suite cannot run, and why."""


@pytest.mark.parametrize("name", _sample(FORWARD, "jacfwd"), ids=_short)
def test_jacfwd_equals_jacrev(name, rng):
    # Each float input's Jacobian block, forward against reverse mode; all inputs in one jacfwd and
    # one jacrev (argnums), so an operator of several float inputs compiles two programs, not two
    # per input.
    if name in CRASHES:
        pytest.skip(CRASHES[name])
    op, _, attrs, args, floats = _case(name, rng)
    assert floats, f"{_short(name)}: a forward-mode case without a float input"

    def f(*vs):
        full = list(args)
        for i, v in zip(floats, vs):
            full[i] = v
        return catalog.first_output(op(*full, **attrs.dml))
    primals = [args[i] for i in floats]
    argnums = tuple(range(len(floats)))
    fwds = jax.jacfwd(f, argnums=argnums)(*primals)
    if not jnp.issubdtype(jax.eval_shape(f, *primals).dtype, jnp.floating):
        for fwd in fwds:
            assert fwd.dtype == jax.dtypes.float0 or not np.asarray(fwd).any(), f"{_short(name)}: an integer output"
        return  # jacrev takes float outputs only
    revs = jax.jacrev(f, argnums=argnums)(*primals)
    for i, fwd, rev in zip(floats, fwds, revs):
        fwd, rev = np.asarray(fwd, np.float64), np.asarray(rev, np.float64)
        both = np.isfinite(fwd) & np.isfinite(rev)  # NaN * 0 is NaN: a NaN slope spreads along a row or a column
        assert both.any(), f"{_short(name)}: no finite Jacobian element"
        np.testing.assert_allclose(fwd[both], rev[both], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{_short(name)} {attrs} d/d{op.spec.inputs[i].arg}")


def _stack(args, axis):
    """Two calls' inputs along a new axis ``axis`` (clipped to each input's rank); the second's a
    permutation of the first's elements, so the two calls differ."""
    out = []
    for a in args:
        if a is None:  # an optional input the case leaves out
            out.append(None)
            continue
        a = np.asarray(a)
        b = a.reshape(-1)[::-1].reshape(a.shape) if np.issubdtype(a.dtype, np.floating) else a
        out.append(np.stack([a, b], axis=min(axis, a.ndim)))
    return out


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("name", _sample(VMAP, "vmap"), ids=_short)
def test_vmap_equals_a_loop(name, axis, rng):
    op, _, attrs, args, _ = _case(name, rng, dt=_first_type(name))
    batched = _stack(args, axis)
    axes = tuple(None if a is None else min(axis, np.ndim(a)) for a in args)
    got = jax.vmap(lambda *a: op(*a, **attrs.dml), in_axes=axes)(*batched)
    for k in range(2):
        one = op(*[None if b is None else np.take(b, k, axis=ax) for b, ax in zip(batched, axes)], **attrs.dml)
        for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(one)):
            g, w = np.asarray(g)[k], np.asarray(w)
            # a batched call may take XLA's other vectorised code (ATAN: 1 ULP apart): within the budget
            budget = op.spec.ulp.get(DataType.from_dtype(w.dtype), 0) if w.dtype.kind == "f" else 0
            if budget:
                same = (ulp_distance(g, w) <= budget) | (np.isnan(g) & np.isnan(w))
                assert same.all(), f"{_short(name)} {attrs} call {k}: beyond {budget} ULP of the single call"
            else:
                np.testing.assert_array_equal(g, w, err_msg=f"{_short(name)} {attrs} call {k}")


def test_every_differentiable_operator_has_a_forward_mode_case():
    # derived from the records: an operator with a FLOAT32 or FLOAT16 type and plain inputs
    for name in OPS:
        if not _plain_inputs(name):
            continue
        types = catalog.newest_types(get_operator(name).spec)
        if F32 in types:
            assert name in FORWARD, f"{name} has a FLOAT32 type but no forward-mode case (no reference?)"
        assert name in VMAP, f"{name} has no vmap case"
