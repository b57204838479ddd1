"""Every registered operator under a batch-sharded input: the checks that tests/test_sharding.py
runs, on the suite's 8 virtual CPU devices (tests/conftest.py asks for them).

For an operator, ``calls(name)`` takes its first generated FLOAT32 case (tests/catalog.py; the
first case of any type where it has no FLOAT32 one), four dimensions where its tables allow, and
each attribute set of the reference for that case. The inputs are made as the generated tests
make them, with a leading (batch) dimension of ``BATCH``: the reference's input maker is asked
for that shape; where it makes inputs of its own shapes (a convolution's image and filter), the
inputs whose leading dimension is the main input's are drawn again and joined along it until it
is a multiple of ``BATCH`` (the other inputs, a filter or a bias, come from the first draw).

``check(call)`` then puts each input whose leading dimension is the batch on the devices sharded
along it (``NamedSharding(mesh, P("batch"))``, every other input replicated), runs the operator
under ``jax.jit`` with those inputs and with unsharded ones, and reads the collectives in the
compiled program (``compiled.as_text()``). Whether the operator's semantics mix the batch is not
taken from a list of names: it is measured, by changing batch element 0 of every sharded input
(a fresh draw of it) and seeing whether any other element of an output changes, or whether an
output's leading dimension is not the batch. An operator that keeps the batch independent must
compile to a program without any collective; one whose semantics mix it (a REDUCE over axis 0, a
JOIN along it, a ROI_POOLING whose regions pick their image) may move data, and the result says
which collectives its program holds. Either way the sharded result must equal the unsharded one
bit for bit.
"""

from __future__ import annotations

import dataclasses
import math
import re

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from dmljax._src.dtypes import DataType
from dmljax._src.registry import get_operator
from tests import catalog

BATCH = 8
"""The batch (leading dimension) the checks shard, over the suite's 8 virtual CPU devices."""

COLLECTIVES = ("all-gather", "all-to-all", "collective-permute", "all-reduce", "reduce-scatter")
_COLLECTIVE = re.compile(r"\b(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


def collectives(hlo_text: str) -> tuple[str, ...]:
    """The kinds of collective a compiled program's text holds, sorted (``-start``/``-done``
    pairs of the asynchronous forms counted as their kind)."""
    return tuple(sorted({m.group(1) for m in _COLLECTIVE.finditer(hlo_text)}))


def mesh() -> Mesh:
    """The CPU devices in one axis named "batch"."""
    return Mesh(np.array(jax.devices("cpu")), ("batch",))


@dataclasses.dataclass(frozen=True)
class Call:
    """One call of an operator with batched inputs: ``args`` (arrays, a list for a tensor
    array, None for an input left out), ``kwargs`` (attributes, output type, feature level),
    ``batched`` the positions (into the flattened inputs) that carry the batch, ``alt`` a
    second draw of the inputs (batch element 0 of each batched input is taken from it to see
    whether the operator mixes the batch); ``x64`` whether the types need JAX's 64-bit mode."""

    name: str
    case_id: str
    kwargs: dict
    args: list
    alt: list
    batched: tuple[int, ...]
    batch: int
    x64: bool
    attrs: object = None
    shape: tuple = ()
    note: str = ""

    @property
    def id(self) -> str:
        attrs = {k: v for k, v in self.kwargs.items() if k != "feature_level"}
        return f"{self.case_id} {attrs}"


def first_case(name: str) -> catalog.Case:
    """The operator's first generated FLOAT32 case (any type where it has none), four
    dimensions where its tables allow, else its most."""
    cases = catalog.all_positive_cases(name, catalog.references()[name])
    pick = [c for c in cases if c.data_type == DataType.FLOAT32] or cases
    return min(pick, key=lambda c: (c.ndim != 4, -c.ndim, pick.index(c)))


def _leaves(args) -> list:
    return [a for a in jax.tree.leaves(args, is_leaf=lambda x: x is None) if a is not None]


def _draw(spec, ref, types, shape, attrs, seed):
    return catalog.inputs_for(spec, ref, types, shape, np.random.default_rng(seed), attrs)


def _map_leaves(args, fn):
    """``args`` with each array replaced by ``fn(position, array)`` (positions as ``_leaves``)."""
    counter = iter(range(10**6))

    def one(a):
        return None if a is None else fn(next(counter), a)
    return [[one(x) for x in a] if isinstance(a, list) else one(a) for a in args]


def _refused(op, args, kwargs, x64) -> str:
    """The operator's validation error for ``args`` (traced abstractly), or ""."""
    from dmljax._src.errors import ValidationError

    try:
        with jax.enable_x64(x64):
            jax.eval_shape(lambda *a: op(*a, **kwargs), *args)
    except ValidationError as e:
        return str(e).splitlines()[1].strip() if len(str(e).splitlines()) > 1 else str(e)
    return ""


def _batched(spec, ref, types, shape, attrs, kwargs, x64, op, join: bool):
    """(inputs, second draw, batched positions, batch) with a leading dimension of ``BATCH`` (or
    a multiple): as made for ``shape``, or with ``join``, draws of the case's own shape joined
    along their leading dimension; None where the operator refuses them (and why)."""
    with jax.enable_x64(x64):
        draws = [_draw(spec, ref, types, shape, attrs, seed) for seed in (0, 1)]
        leaves = [np.asarray(a) for a in _leaves(draws[0])]
        main = next((a for a in leaves if a.ndim), None)
        if main is None:
            return None, "no input has a dimension to shard"
        lead = main.shape[0]
        batched = tuple(i for i, a in enumerate(leaves) if a.ndim and a.shape[0] == lead
                        and (lead > 1 or a.shape == main.shape))
        copies = BATCH // math.gcd(lead, BATCH) if lead > 1 else BATCH
        if join and copies > 1:
            more = [_draw(spec, ref, types, shape, attrs, seed) for seed in range(2, 2 * copies)]
            groups = (draws[:1] + more[:copies - 1], draws[1:] + more[copies - 1:])

            def joined(group):
                parts = [[np.asarray(a) for a in _leaves(g)] for g in group]
                return _map_leaves(group[0], lambda i, a: np.concatenate([p[i] for p in parts])
                                   if i in batched else a)
            draws = [joined(g) for g in groups]
        total = np.asarray(_leaves(draws[0])[batched[0]]).shape[0]
    if total % BATCH:
        return None, f"the leading dimension of the inputs is {total}, not a multiple of {BATCH}"
    refused = _refused(get_operator(spec.enum_name), draws[0], kwargs, x64)
    if refused:
        return None, f"the operator refuses a leading dimension of {total}: {refused}"
    return (draws[0], draws[1], batched, total), ""


def calls(name: str) -> list[Call]:
    """The operator's calls with batched inputs, one per attribute set of its first case (a
    Call without batched positions, with the reason in ``kwargs``' place, where the operator's
    tables leave no leading dimension to batch)."""
    op = get_operator(name)
    spec, ref = op.spec, catalog.references()[name]
    case = first_case(name)
    base = catalog.shape_of(case.ndim)
    types = catalog.tensor_types(spec, case.level, case.data_type, case.out_type)
    x64 = catalog.needs_x64(types)
    main_name = catalog.main_tensor(spec)
    out = []
    for grown in (True, False):  # a leading dimension of BATCH asked of the input maker, else joined draws
        shape = ref.case_shape((BATCH, *base[1:]) if grown and base else base)
        found, why = [], ""
        for attrs in ref.attr_sets(case.data_type, shape):
            if not catalog.available(attrs, case.level) or (spec.groups and not any(
                    catalog.in_group(spec, attrs, g) and case.data_type in g.support[0].tensors[main_name].data_types
                    for g in spec.groups)):
                continue
            kwargs = {**attrs.dml, **catalog.output_kwargs(spec, case), "feature_level": case.level}
            made, why = _batched(spec, ref, types, shape, attrs, kwargs, x64, op, join=not grown)
            if made is None:
                found = None
                break
            found.append(Call(name, case.id, kwargs, made[0], made[1], made[2], made[3], x64, attrs, shape))
        if found:
            return found
        out = [Call(name, case.id, {}, [], [], (), 0, x64, None, (), note=why)]
    return out


@dataclasses.dataclass(frozen=True)
class Result:
    """What ``check`` found: ``equal`` (sharded result == unsharded, bit for bit), the
    collectives of the sharded program, ``mixes`` (why the semantics mix the batch, or "" where
    they keep it independent) and ``note`` (no batched input, for instance)."""

    call: Call
    equal: bool
    collectives: tuple[str, ...]
    mixes: str
    note: str = ""

    @property
    def ok(self) -> bool:
        """Bit for bit (or, where the semantics mix the batch, within budget), and no collective
        where they keep it independent."""
        if self.mixes:
            return self.equal or "within the operator's budget" in self.note
        return self.equal and not self.collectives


def _bits(x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype == object or x.dtype.itemsize not in (1, 2, 4, 8):
        return x
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _outputs(out) -> list[np.ndarray]:
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


def _within_budget(call: Call, got: list[np.ndarray]) -> str:
    """Where the sharded result differs from the unsharded one, whether it is within the
    operator's budget of its float64 reference (the generated tests' check): "" if so, else why
    not. A sum over the sharded batch is summed in another order (docs/semantics.md's
    accumulating operators), which DirectML leaves open."""
    from tests.compare import assert_matches

    spec, ref = get_operator(call.name).spec, catalog.references()[call.name]
    attrs = call.attrs
    with jax.enable_x64(call.x64):
        wants = ref.fn(*call.args, **attrs.ref_kwargs)
    several = len(got) > 1
    for k, o in enumerate(got):
        cands = [np.asarray(w[k] if several else w) for w in wants]
        if cands[0].dtype != np.float64:  # indices, selections: the very bits
            if not any(np.array_equal(_bits(o), _bits(c.astype(o.dtype))) for c in cands):
                return f"output {k} differs from the reference"
            continue
        dt = DataType.from_dtype(o.dtype)
        try:
            assert_matches(o, cands, dt, catalog.budget(spec, attrs, dt, sizes=call.shape, args=call.args),
                           context=call.id, flush=not ref.selects(attrs),
                           magnitude=catalog.output_magnitude(ref, call.args, attrs, k))
        except AssertionError as e:
            return str(e).splitlines()[0]
    return ""


def check(call: Call, devices: Mesh | None = None) -> Result:
    """``call`` sharded along its batch over ``devices`` (default: ``mesh()``) against unsharded."""
    op = get_operator(call.name)
    m = devices if devices is not None else mesh()
    if not call.batched:
        return Result(call, True, (), "", note=call.note or "no input has a leading dimension to shard")

    def f(*a):
        return op(*a, **call.kwargs)

    alt = [np.asarray(a) for a in _leaves(call.alt)]

    def changed(at):
        def one(i, a):
            if i not in call.batched:
                return a
            a = np.array(a)
            a[at] = alt[i][at]
            return a
        return _map_leaves(call.args, one)

    with jax.enable_x64(call.x64):
        want = _outputs(jax.jit(f)(*call.args))

        def put(i, a):
            spec = P("batch") if i in call.batched else P()
            return jax.device_put(np.asarray(a), NamedSharding(m, spec))
        sharded = _map_leaves(call.args, put)
        jitted = jax.jit(f)
        got = _outputs(jitted(*sharded))
        found = collectives(jitted.lower(*sharded).compile().as_text())
        others = {at: _outputs(jax.jit(f)(*changed(at))) for at in (0, call.batch - 1)}
    mixes = ""
    for k, w in enumerate(want):
        if not w.ndim or w.shape[0] != call.batch:
            mixes = f"output {k} has Sizes {list(w.shape)}: its leading dimension is not the batch of {call.batch}"
            break
        keep = np.ones(call.batch, bool)
        for at, other in others.items():
            keep[:] = True
            keep[at] = False
            if not np.array_equal(_bits(w[keep]), _bits(other[k][keep])):
                mixes = (f"output {k}: changing batch element {at} of the inputs changes other batch elements")
                break
        if mixes:
            break
    equal = len(got) == len(want) and all(
        g.shape == w.shape and g.dtype == w.dtype and np.array_equal(_bits(g), _bits(w)) for g, w in zip(got, want))
    note = ""
    if not equal and mixes:
        off = _within_budget(call, got)
        note = (f"differs from unsharded, outside the budget: {off}" if off else
                "differs from unsharded in bits, within the operator's budget of its reference "
                "(the batch is summed in another order)")
    return Result(call, equal, found, mixes, note)

