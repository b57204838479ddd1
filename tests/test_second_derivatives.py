"""Second derivatives, generated from the registry: for every element-wise and activation operator
(the catalog's families element_wise_arithmetic, element_wise_math and activation) with a FLOAT32
type and a reference derivative, jax.jvp of jax.grad (each float input's second partials, mixed
ones included) against the central differences of the float64 reference's derivative, away
from its kinks. An operator with no derivative (integer output, its reason in the reference) has no
reference ``grad`` and is left out by it; the completeness check fails when an operator of these
families with one has no case."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dmljax._src.registry import get_operator
from tests import catalog, tiers
from tests.test_catalog import F32, GRADS, REFS, _short, cotangent

FAMILIES = ("element_wise_arithmetic", "element_wise_math", "activation")


def _twice(name) -> bool:
    return get_operator(name).spec.family in FAMILIES and REFS[name].grad is not None


SECOND = [n for n, dt in GRADS if dt is F32 and _twice(n)]
STEP = 1e-3  # relative to |x| (and to ScaleBias's Scale)


def _sample(names):
    """A fixed covering sample in the fast tier: tiers.fast_sample of each family's element-wise
    operators and of those whose outputs mix their inputs (its first and a tenth); every operator
    in the slow tier."""
    groups: dict = {}
    for n in names:
        groups.setdefault((get_operator(n).spec.family, REFS[n].pointwise), []).append(n)
    return [p for (family, pointwise), group in groups.items()
            for p in tiers.fast_sample(group, keep=max(1, len(group) // 10), key=f"second {family} {pointwise}")]


def _hessian_diagonals(op, kwargs, args, floats):
    """For each pair (i, j) of float inputs (i <= j), d/dx_j of d(sum y)/dx_i at each element: one
    jax.jvp of jax.grad, along all-ones tangents of x_j, under one jax.jit."""
    def first(i):
        def loss(*a):
            return jnp.sum(catalog.first_output(op(*a, **kwargs)).astype(jnp.float32))
        return jax.grad(loss, argnums=i)

    def all_pairs(*a):
        out = {}
        for i, j in itertools.combinations_with_replacement(floats, 2):
            tangents = tuple(jnp.ones_like(v) if k == j else jnp.zeros_like(v) if k in floats else None
                             for k, v in enumerate(a))

            def along(xj, i=i, j=j):
                return first(i)(*[xj if k == j else v for k, v in enumerate(a)])
            out[i, j] = jax.jvp(along, (a[j],), (tangents[j],))[1]
        return out
    return jax.jit(all_pairs)(*args)


def _reference_second(ref, kwargs, args, i, j, h):
    """The float64 reference derivative's central difference: d/dx_j of d(sum y)/dx_i per element
    (the reference's values themselves round intermediates to FLOAT32 as DirectML does, too
    coarse for a second difference; its derivative, a first difference of it, is not)."""
    def grad_i(d):
        x = [None if a is None else np.asarray(a, np.float64) for a in args]
        x[j] = x[j] + d * h[j]
        with np.errstate(all="ignore"):
            return np.asarray(ref.grad(np.ones(np.shape(x[j])), *x, **kwargs)[i], np.float64)
    with np.errstate(all="ignore"):
        return (grad_i(1) - grad_i(-1)) / (2 * h[j])


def _check_directional(op, ref, attrs, args, floats, out_shape, rng):
    """An operator whose outputs mix its inputs (a softmax's row): v^T H v of L(x) = sum(f(x) * dY)
    along a random direction v, by jax.jvp of jax.grad against the float64 reference's second
    central difference of v^T grad L along v (at steps t and t / 2, which must agree)."""
    dy = cotangent(out_shape, False)
    v = {k: rng.standard_normal(np.shape(args[k])) for k in floats}

    def loss(*a):
        return jnp.sum(catalog.first_output(op(*a, **attrs.dml)).astype(jnp.float32) * dy.astype(np.float32))

    def grads(*xs):
        return jax.grad(lambda *x: loss(*[x[floats.index(k)] if k in floats else a for k, a in enumerate(args)]),
                        argnums=tuple(range(len(xs))))(*xs)
    primals = tuple(args[k] for k in floats)
    _, hv = jax.jit(lambda p, t: jax.jvp(grads, p, t))(primals, tuple(v[k].astype(np.float32) for k in floats))
    got = sum(float(np.sum(np.asarray(h, np.float64) * v[k])) for h, k in zip(hv, floats))

    def along(t):
        x = [None if a is None else np.asarray(a, np.float64) for a in args]
        for k in floats:
            x[k] = x[k] + t * v[k]
        g = ref.grad(dy, *x, **attrs.ref_kwargs)
        return sum(float(np.sum(np.asarray(g[k], np.float64) * v[k])) for k in floats)
    want, half = ((along(t) - along(-t)) / (2 * t) for t in (1e-3, 5e-4))
    tol = 2e-3 * (abs(got) + abs(want)) + 1e-4
    assert abs(want - half) <= tol / 3, f"{_short(op.spec.enum_name)} {attrs}: the reference's differences disagree"
    assert abs(got - want) <= tol, f"{_short(op.spec.enum_name)} {attrs}: v^T H v {got} against the reference's {want}"


@pytest.mark.parametrize("name", _sample(SECOND), ids=_short)
def test_second_derivatives_match_reference(name, rng):
    op = get_operator(name)
    spec, ref = op.spec, REFS[name]
    types = catalog.tensor_types(spec, spec.support[0].level, F32)
    shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims))
    for attrs in catalog.newest_sets(spec, ref, F32, shape):
        args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
        if catalog.leaves_out(args, ref):
            continue
        out_shape = catalog.first_output(jax.eval_shape(lambda *a: op(*a, **attrs.dml), *args)).shape
        floats = [k for k, t in enumerate(spec.inputs)
                  if types[t.dml_name].is_float and args[k] is not None and np.shape(args[k]) == out_shape]
        if not floats:
            continue
        scale = max(1.0, abs(float((attrs.ref_kwargs.get("scale_bias") or (1.0,))[0])))
        if scale > 50:
            continue  # a large Scale: the FLOAT32 argument's own rounding, times Scale^2, swamps the comparison
        if not ref.pointwise:
            _check_directional(op, ref, attrs, args, floats, out_shape, rng)
            continue
        h = {k: STEP * np.maximum(1.0, np.abs(np.asarray(args[k], np.float64))) / scale for k in floats}
        got = _hessian_diagonals(op, attrs.dml, args, floats)
        context = f"{_short(name)} {attrs}"
        kink = np.zeros(out_shape, bool)
        if ref.near_kink is not None:  # a kink anywhere in the steps' span
            for steps in itertools.product(np.linspace(-1.0, 1.0, 5), repeat=len(floats)):
                v = list(args)
                for k, s in zip(floats, steps):
                    v[k] = np.asarray(args[k], np.float64) + s * 2 * h[k]
                with np.errstate(all="ignore"):
                    kink |= np.asarray(ref.near_kink(*v, **attrs.ref_kwargs), bool)
        with np.errstate(all="ignore"):  # outside the domain (NaN): no derivative
            value = np.asarray(catalog.first_output(ref.fn(*args, **attrs.ref_kwargs)[0]), np.float64)
        for (i, j), g in got.items():
            g = np.asarray(g, np.float64)
            want = _reference_second(ref, attrs.ref_kwargs, args, i, j, h)
            half = _reference_second(ref, attrs.ref_kwargs, args, i, j, {k: v / 2 for k, v in h.items()})
            with np.errstate(all="ignore"):
                tol = 2e-3 * (np.abs(g) + np.abs(want)) + 1e-4
                inside = ~kink & np.isfinite(g) & np.isfinite(value)
                ok = inside & np.isfinite(want) & np.isfinite(half) & (np.abs(want - half) <= tol / 3)
            assert ok.sum() >= max(4, inside.sum() // 2), f"{context} d2/d{i}d{j}: too few points to compare ({ok.sum()})"
            bad = ok & ~(np.abs(g - want) <= tol)
            assert not bad.any(), (f"{context} d2/d{spec.inputs[i].arg} d{spec.inputs[j].arg}: {g[bad][:4]} against "
                                   f"the reference's {want[bad][:4]} at {[np.asarray(a)[bad][:4] for a in args if a is not None]}")


def test_every_operator_of_the_families_has_a_case_or_a_reason():
    # derived from the records: each operator of these families with a FLOAT32 type has a case,
    # or its reference says why it has no derivative
    names = {n for n, dt in GRADS if dt is F32 and get_operator(n).spec.family in FAMILIES}
    assert names and set(SECOND) <= names
    for name in names - set(SECOND):
        assert REFS[name].no_grad, f"{name} has neither a second-derivative case nor a reason for none"
