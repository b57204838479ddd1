"""Generated from the registry and the references (tests/catalog.py), for every registered
operator: sampled cases against the float64 reference, half-precision computation within its
budget, every edge of every support table refused, eager equal to jit, gradients against the
reference derivative, float0 for integer inputs; and the completeness checks that fail when an
operator lacks a reference, a generated case or a gradient rule (with proof that each can fail)."""

import dataclasses
import functools
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType
from dmljax._src.registry import get_operator, registry
from dmljax._src.validate import static_key
from tests import catalog, tiers
from tests.compare import assert_matches

REFS = catalog.references()
OPS = list(registry())
POSITIVE = catalog.positive_cases(full=False)  # the fast tier's sample
NEGATIVE = catalog.negative_cases()
F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def _fast_share(params, key):
    """A transformation check's operators: a twentieth of them in the fast tier (a fixed hash of
    ``key`` and the position picks them, so each run of the README's command checks the same ones),
    every one in the slow tier. Every operator's values are checked in the fast tier anyway, by
    test_matches_reference's covering sample."""
    return tiers.slow_transformations(tiers.fast_sample(params, keep=max(1, len(params) // 20), key=key))


def _short(name):
    return name[len("DML_OPERATOR_"):]


def _with_ref(names):
    return [n for n in names if n in REFS]


def _bits(x):
    x = np.asarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _grad_types(name):
    spec = get_operator(name).spec
    return [dt for dt in (F32, F16) if dt in catalog.newest_types(spec)]


def _int_type(name):
    spec = get_operator(name).spec
    return next((dt for dt in catalog.newest_types(spec) if dt.is_integer), None)


# ---------------------------------------------------------------------------------- completeness
@functools.cache
def _completeness() -> dict[str, list[str]]:
    return catalog.completeness()  # one report for the whole catalog, read by each operator's case


@pytest.mark.parametrize("name", OPS, ids=_short)
def test_registered_operator_is_complete(name):
    problems = _completeness()[name]
    assert not problems, "\n".join(problems)


def test_references_name_registered_operators_and_sit_in_family_modules():
    report = catalog.completeness()
    problems = report[""] + [p for name, ps in report.items() if name not in OPS and name for p in ps]
    assert not problems, "\n".join(problems)


def test_reference_modules_are_the_catalogs_families():
    mods = catalog.reference_modules()
    fams = {key.split("/")[0] for key in mods}
    assert fams <= set(catalog.families())
    assert {"element_wise_arithmetic", "element_wise_math", "element_wise_logical", "activation"} <= fams
    for key, module in mods.items():
        assert all(get_operator(n).spec.family == key.split("/")[0] for n in module.REFERENCES), key
    assert "activation/piecewise" in mods and "pooling/_common" not in mods  # helpers are not read
    assert catalog.stray_reference_modules() == []
    assert catalog.home("activation") == "tests/reference/activation/"
    assert catalog.home("activation", "gated") == "tests/reference/activation/gated.py"


def test_stray_reference_modules_are_reported(tmp_path):
    (tmp_path / "__init__.py").write_text('"""docstring"""\n')
    for name in ("record.py", "rules.py", "activation.py", "activaton/__init__.py", "pooling/roi.py",
                 "reduction/__init__.py", "reduction/top_k.py", "indexing/__init__.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "indexing" / "__init__.py").write_text('"""The family."""\n\nREFERENCES = {}\n')
    assert catalog.stray_reference_modules(tmp_path) == [
        "tests/reference/activation.py is neither a family's package (tests/reference/<family>/ with an "
        "__init__.py, <family> one of dmljax.catalog()'s families) nor a shared module (record.py, rules.py)",
        "tests/reference/activaton/ is neither a family's package (tests/reference/<family>/ with an "
        "__init__.py, <family> one of dmljax.catalog()'s families) nor a shared module (record.py, rules.py)",
        "tests/reference/indexing/__init__.py holds more than a docstring: the family's references live in "
        "its modules (tests/reference/indexing/<module>.py), which tests/catalog.py finds",
        "tests/reference/pooling/ is neither a family's package (tests/reference/<family>/ with an "
        "__init__.py, <family> one of dmljax.catalog()'s families) nor a shared module (record.py, rules.py)"]
    problems = catalog.stray_reference_modules(tmp_path)
    assert _problems(load_problems=problems) == problems


def test_unmatched_reference_modules_are_reported(tmp_path):
    # A library tree with a module for every reference module but one, and its records where
    # their references are but one.
    mods = catalog.reference_modules()
    module_of = {name: key.split("/")[1] for key, module in mods.items() for name in module.REFERENCES}
    for key in mods:
        (tmp_path / key).parent.mkdir(exist_ok=True)
        (tmp_path / f"{key}.py").write_text("")
    assert catalog.unmatched_reference_modules(tmp_path, module_of.get) == []
    (tmp_path / "reduction" / "top_k.py").unlink()
    elu = "DML_OPERATOR_ACTIVATION_ELU"
    module_of[elu] = "smooth"
    assert catalog.unmatched_reference_modules(tmp_path, module_of.get) == [
        f"{elu}: its reference is in tests/reference/activation/piecewise.py; its record is in "
        "dmljax/_src/ops/activation/smooth.py",
        "tests/reference/reduction/top_k.py has no library module of its name (dmljax/_src/ops/reduction/top_k.py)"]


def test_reference_modules_mirror_the_library_modules():
    problems = catalog.unmatched_reference_modules()
    assert not problems, "\n".join(problems)


def _problems(refs=None, ops=None, load_problems=()):
    report = catalog.completeness(ops or registry(), REFS if refs is None else refs, list(load_problems))
    return [p for ps in report.values() for p in ps]


def test_completeness_reports_a_missing_reference():
    name = "DML_OPERATOR_ELEMENT_WISE_NEGATE"
    refs = dict(REFS)
    del refs[name]
    where = catalog.home("element_wise_arithmetic", catalog.library_module(name))
    assert _problems(refs) == [f"{name}: no reference (a Reference in the REFERENCES of {where})"]
    assert _problems() == []


def test_completeness_reports_a_reference_for_no_registered_operator():
    # NEGATE's reference against a registry without NEGATE (every operator will be registered).
    refs = dict(REFS)
    refs["DML_OPERATOR_ELEMENT_WISE_SQRTT"] = REFS["DML_OPERATOR_ELEMENT_WISE_NEGATE"]
    ops = {n: op for n, op in registry().items() if n != "DML_OPERATOR_ELEMENT_WISE_NEGATE"}
    assert _problems(refs, ops) == [
        "DML_OPERATOR_ELEMENT_WISE_NEGATE: REFERENCES names it, but it is a DirectML operator that is not registered",
        "DML_OPERATOR_ELEMENT_WISE_SQRTT: REFERENCES names it, but it is not a DirectML operator's enum name"]


def test_completeness_reports_a_missing_gradient_rule():
    name = "DML_OPERATOR_ACTIVATION_ELU"
    refs = {**REFS, name: dataclasses.replace(REFS[name], grad=None)}
    assert _problems(refs) == [f"{name}: no gradient reference (Reference.grad) and no written reason "
                               "for none (Reference.no_grad)"]
    refs = {**REFS, name: dataclasses.replace(REFS[name], grad=None, no_grad="  ")}
    assert len(_problems(refs)) == 1
    refs = {**REFS, name: dataclasses.replace(REFS[name], no_grad="integer output")}
    assert _problems(refs) == [f"{name}: both a gradient reference and a reason for none"]
    less = "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN"
    assert REFS[less].grad is None and REFS[less].no_grad  # a written reason is enough


def test_completeness_reports_an_operator_without_generated_cases():
    name = "DML_OPERATOR_ELEMENT_WISE_CLIP1"
    refs = {**REFS, name: dataclasses.replace(REFS[name], attrs=lambda dt: () if dt.is_integer else
                                              REFS[name].attr_sets(dt))}
    assert _problems(refs) == []  # integer types dropped: cases remain
    refs = {**REFS, name: dataclasses.replace(REFS[name], attrs=())}
    assert _problems(refs) == [f"{name}: no generated case (its attribute sets give none for any data type)"]


def test_completeness_reports_roles_and_output_choices():
    name = "DML_OPERATOR_ELEMENT_WISE_IF"
    refs = {**REFS, name: dataclasses.replace(REFS[name], roles={"CondTensor": "condition",
                                                                 "ATensor": "bits"})}
    problems = _problems(refs)
    assert problems[0].startswith(f"{name}: role for CondTensor, which is not one of its inputs")
    assert problems[1] == f"{name}: role 'bits' for ATensor; roles: value, condition, nonzero, positive, factor"
    less = "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN"
    refs = {**REFS, less: dataclasses.replace(REFS[less], output_types=None)}
    assert _problems(refs) == [f"{less}: OutputTensor's DataType is the caller's choice: say which ones "
                               "the cases use (Reference.output_types)"]


def test_completeness_reports_misfiled_and_duplicate_references():
    class Module:
        def __init__(self, refs):
            self.REFERENCES = refs

    elu = REFS["DML_OPERATOR_ACTIVATION_ELU"]
    refs, problems = catalog.collect_references({
        "element_wise_math/exp_log_pow": Module({"DML_OPERATOR_ACTIVATION_ELU": elu}),
        "activation/piecewise": Module({"DML_OPERATOR_ACTIVATION_ELU": elu,
                                        "DML_OPERATOR_ACTIVATION_SCALED_ELU": print}),
        "reduction/reduce": object(),
    })
    assert problems == [
        "DML_OPERATOR_ACTIVATION_ELU: its reference is in tests/reference/element_wise_math/exp_log_pow.py; "
        "its family is activation (tests/reference/activation/)",
        "DML_OPERATOR_ACTIVATION_ELU: referenced twice",
        "DML_OPERATOR_ACTIVATION_SCALED_ELU: its REFERENCES entry in tests/reference/activation/piecewise.py is "
        "builtin_function_or_method, not a Reference record",
        "tests/reference/reduction/reduce.py has no REFERENCES dict"]
    assert list(refs) == ["DML_OPERATOR_ACTIVATION_ELU"]
    assert _problems(load_problems=problems) == problems


# ---------------------------------------------------------------------------------- counts
def test_generated_counts():
    # The generator must not silently produce nothing: every operator gets sampled cases that
    # cover its support tables and data types, and the negative cases all run.
    per_op = {n: [c for c in POSITIVE if c.op_name == n] for n in OPS}
    for name, cases in per_op.items():
        full = catalog.all_positive_cases(name)
        cap = catalog.cap_of(name)
        covering = len({c.level for c in full} | {c.attrs for c in full})  # what the sample covers past the cap
        assert 0 < len(cases) <= min(max(cap, covering), len(full)), name
        if len(full) > cap:
            # every support table and attribute set is covered, and every data type where the
            # cap leaves room for them after the tables
            types, levels = {c.data_type for c in full}, {c.level for c in full}
            if len(types) + len(levels) - 1 <= cap:
                assert {c.data_type for c in cases} == types, name
            assert {c.level for c in cases} == levels, name
            assert {c.attrs for c in cases} == {c.attrs for c in full}, name
    full = catalog.positive_cases(full=True)
    assert len(full) > 150
    assert len(NEGATIVE) > 150
    assert {c.op_name for c, _ in NEGATIVE} == set(OPS)


def _shapes(name):
    return {(c.level, c.data_type, c.ndim) for c in catalog.all_positive_cases(name)}


def test_full_case_counts():
    # Every table x data type x {fewest, most, 4} dimensions, for operators whose counts were
    # written down when they were added (a change in the generator or a record shows here);
    # each of those runs every attribute set of the reference.
    counts = {"IDENTITY": 77, "ADD": 72, "ADD1": 10, "CLIP": 64, "CLIP1": 30}
    for short, n in counts.items():
        assert len(_shapes("DML_OPERATOR_ELEMENT_WISE_" + short)) == n, short
    assert len(_shapes("DML_OPERATOR_ACTIVATION_ELU")) == 12
    full = {n: len(catalog.all_positive_cases(n)) for n in OPS}
    assert full["DML_OPERATOR_ELEMENT_WISE_IDENTITY"] == 77 * 2 and full["DML_OPERATOR_ELEMENT_WISE_ADD1"] == 10 * 3
    # LESS_THAN's output type is a case dimension: UINT8 and UINT32 from 2.0, UINT32 at 1.0.
    less = catalog.all_positive_cases("DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN")
    assert len(less) == 130 and {c.out_type for c in less if c.level.version == "1.0"} == {DataType.UINT32}


def test_sampling_is_fixed_and_covering():
    cases = catalog.all_positive_cases("DML_OPERATOR_ELEMENT_WISE_IDENTITY")
    a = catalog.sample(cases, 12, "DML_OPERATOR_ELEMENT_WISE_IDENTITY")
    assert a == catalog.sample(cases, 12, "DML_OPERATOR_ELEMENT_WISE_IDENTITY")  # a fixed seed
    assert len(a) <= 12 and len(set(a)) == len(a) and a == [c for c in cases if c in a]  # in order
    assert {c.data_type for c in a} == {c.data_type for c in cases}  # 11 types within 12
    assert {c.ndim for c in a} == {c.ndim for c in cases}
    assert catalog.sample(cases, 1000, "x") == cases
    assert catalog.positive_cases(["DML_OPERATOR_ELEMENT_WISE_IDENTITY"], full=True) == cases


def test_tiers_split_the_cases_without_loss_or_repetition():
    # the fast tier's sample plain, every other case marked slow: together exactly all of them
    with mock.patch.object(tiers, "slow", lambda: True):
        params = catalog.tiered_cases(["DML_OPERATOR_ELEMENT_WISE_IDENTITY", "DML_OPERATOR_GEMM"])
    fast = [p for p in params if not hasattr(p, "marks")]
    slow = [p.values[0] for p in params if hasattr(p, "marks")]
    assert all(m.name == "slow" for p in params if hasattr(p, "marks") for m in p.marks)
    assert fast == catalog.positive_cases(["DML_OPERATOR_ELEMENT_WISE_IDENTITY", "DML_OPERATOR_GEMM"], full=False)
    everything = catalog.positive_cases(["DML_OPERATOR_ELEMENT_WISE_IDENTITY", "DML_OPERATOR_GEMM"], full=True)
    assert sorted(fast + slow, key=everything.index) == everything and len(fast) < len(everything)


def test_random_tensor_roles(rng):
    for dt in (F32, DataType.INT8, DataType.UINT16):
        x = catalog.random_tensor(rng, dt, (4096,), "nonzero")
        assert x.dtype == dt.dtype and (x != 0).all()
        if dt.is_float:
            assert (np.abs(x) >= 0.5).all()
        assert (catalog.random_tensor(rng, dt, (4096,), "positive") > 0).all()
    c = catalog.random_tensor(rng, DataType.UINT8, (4096,), "condition")
    assert set(np.unique(c)) == {0, 1, 2, 255}


# ---------------------------------------------------------------------------------- positive
@pytest.mark.parametrize("case", catalog.tiered_cases(), ids=lambda c: c.id)
def test_matches_reference(case, rng):
    op = get_operator(case.op_name)
    spec, ref = op.spec, REFS[case.op_name]
    shape = ref.case_shape(catalog.shape_of(case.ndim))
    types = catalog.tensor_types(spec, case.level, case.data_type, case.out_type)
    attrs = ref.attr_sets(case.data_type, shape)[case.attrs]
    out_dt = catalog.output_type(spec, types, attrs)
    with jax.enable_x64(catalog.needs_x64(types)):
        args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
        chosen = catalog.output_kwargs(spec, case)
        out = op(*args, **attrs.dml, **chosen, feature_level=case.level)
        want = ref.fn(*args, **attrs.ref_kwargs, **({k: v.name for k, v in chosen.items()} if ref.output_type_arg else {}))
    _check_outputs(spec, ref, attrs, out, want, out_dt, shape, args, f"{case.id} {attrs}")


def _check_outputs(spec, ref, attrs, out, want, out_dt, shape, args, context):
    """The operator's result against the reference's acceptable results: the first output by
    the record's budget (bit for bit for selection and data movement), further outputs (TOP_K's
    indices) bit for bit where the reference gives them in their own type."""
    array = any(t.array for t in spec.outputs)  # SPLIT: a tuple of its OutputTensors
    several = len(spec.outputs) > 1 or array
    outs = out if several else (out,)
    wants = [w if several else (w,) for w in want]
    assert isinstance(outs, tuple) and (array or len(outs) == len(spec.outputs)), context
    assert all(len(w) == len(outs) for w in wants), context
    for k, o in enumerate(outs):
        ctx = f"{context} output {k}" if several else context
        w = [np.asarray(v[k]) if not isinstance(v[k], np.ndarray) else v[k] for v in wants]
        # the input's Sizes, or the reference's (a reduction keeps its reduced axes as 1)
        assert o.shape == np.shape(w[0]), (ctx, o.shape, np.shape(w[0]))
        if k == 0:
            assert o.dtype == out_dt.dtype, ctx
        exact = ref.selects(attrs) if k == 0 else w[0].dtype != np.float64
        if exact:  # selection, data movement, indices: the very bits
            assert w[0].dtype == o.dtype, ctx
            np.testing.assert_array_equal(_bits(o), _bits(w[0]), err_msg=ctx)
            if k > 0:
                continue
        dt = out_dt if k == 0 else DataType.from_dtype(o.dtype)
        assert_matches(o, w, dt, catalog.budget(spec, attrs, dt, sizes=shape, args=args), context=ctx,
                       magnitude=_magnitude(ref, args, attrs, k), flush=not exact)


HALF = [n for n in _with_ref(OPS) if get_operator(n).spec.math and F16 in catalog.newest_types(get_operator(n).spec)]


@pytest.mark.parametrize("name", _fast_share(HALF, "half"), ids=_short)
def test_half_precision_computation(name, rng):
    op = get_operator(name)
    spec, ref = op.spec, REFS[name]
    types = catalog.tensor_types(spec, spec.support[0].level, F16)
    shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims))
    for attrs in catalog.newest_sets(spec, ref, F16, shape):
        if catalog.output_type(spec, types, attrs) is not F16:
            continue  # REDUCE's ARGMAX sets: indices
        args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
        out = catalog.first_output(op(*args, **attrs.dml, allow_half_precision_computation=True))
        want = [catalog.first_output(w) if len(spec.outputs) > 1 else w for w in ref.fn(*args, **attrs.half_kwargs)]
        assert_matches(out, want, F16, catalog.budget(spec, attrs, F16, half=True, sizes=shape, args=args),
                       context=f"{_short(name)} half {attrs}", magnitude=_magnitude(ref, args, attrs, 0))


# ---------------------------------------------------------------------------------- negative
@pytest.mark.parametrize("case,what", tiers.fast_sample(NEGATIVE, keep=len(NEGATIVE) // 8, key="negative"), ids=lambda c: c.id if hasattr(c, "id") else c)
def test_refused_outside_support(case, what):
    op = get_operator(case.op_name)
    spec = op.spec
    shape = catalog.shape_of(case.ndim)
    types = catalog.tensor_types(spec, case.level, case.data_type)
    ref = REFS.get(case.op_name)
    sets = ref.attr_sets(case.attrs_type or case.data_type, shape) if ref else ()
    attrs = sets[case.attrs].dml if sets else {}
    member = None  # the attribute value that selects the tables (REDUCE's Function), if any
    if spec.support_by:
        param = next(p for p in spec.params if p.dml_name == spec.support_by)
        member = param.enum.parse(attrs.get(param.arg, param.default))
    supported = "supported" if member is None else f"supported with {spec.support_by} {member.name}"
    with jax.enable_x64(True):
        args = catalog.abstract_inputs(spec, types, shape)
        with pytest.raises(dmljax.ValidationError) as info:
            jax.eval_shape(lambda *a: op(*a, **attrs, **catalog.output_kwargs(spec, case),
                                         feature_level=case.level), *args)
    msg = str(info.value)
    assert msg.startswith(f"{spec.python_name} ({spec.enum_name}) at {case.level.dml_name}:"), msg
    field = catalog.main_tensor(spec)
    main = spec.tensor(field)
    # a generator's main tensor is its output: its Sizes and DataType are the caller's keywords
    dims_arg = main.arg if main.kind == "input" else main.sizes_kwarg
    type_arg = main.arg if main.kind == "input" else main.data_type_arg
    if main.array:  # JOIN's InputTensors: its first element is reported
        main = dataclasses.replace(main, dml_name=main.dml_name + "[0]")
        dims_arg, type_arg = dims_arg + "[0]", type_arg + "[0]"
    if what == "dims" and main.kind == "output" and case.ndim == 0:  # output_sizes=(): no tensor at all
        assert f"{main.dml_name} (argument `{dims_arg}`) has Sizes []; a DirectML tensor has at least one" in msg, msg
    elif what == "dims":
        sup = spec.support_at(case.level, member).tensors[field]
        assert f"{main.dml_name} (argument `{dims_arg}`) has {case.ndim} dimension" in msg, msg
        assert (f"  {main.dml_name} (argument `{dims_arg}`) has {case.ndim} dimension{'s' if case.ndim != 1 else ''} "
                f"(Sizes {list(shape)}); {supported}: {sup.dims_text()}.") in msg, msg
    elif what == "type" and main.kind == "output" and main.default_data_type is None:
        assert f"DataType {case.data_type.name}" in msg, msg  # FILL_VALUE_*: the ValueDataType's check
    elif what == "type":
        allowed = ", ".join(d.name for d in spec.support_at(case.level, member).tensors[field].data_types)
        assert (f"  {main.dml_name} (argument `{type_arg}`) has DataType {case.data_type.name}; "
                f"{supported}: {allowed}.") in msg, msg
        later = spec.lowest_level(field, lambda s: case.data_type in s.data_types, case.level, member)
        if later is not None:
            end = "." if main.kind == "input" else ""  # an output's tip goes on: "; or pass output_data_type= ..."
            assert f"Tip: {case.data_type.name} is supported from {later.dml_name}{end}" in msg, msg
        else:
            assert "is supported from" not in msg.split(main.dml_name, 2)[1].split("\n  ")[0]
    else:
        assert (f"  The operator is not available at {case.level.dml_name}; "
                f"it was introduced in {spec.introduced.dml_name}.") in msg, msg
        assert f"pass feature_level='{spec.introduced.version}' or newer" in msg


@pytest.mark.parametrize("dtype", ["bfloat16", "bool", "complex64", "float8_e4m3fn"])
def test_non_directml_dtypes_refused(dtype):
    x = jax.ShapeDtypeStruct((2, 2), np.dtype(dtype) if dtype != "bfloat16" else jax.numpy.bfloat16)
    with pytest.raises(dmljax.ValidationError, match=f"InputTensor \\(argument `input`\\) has dtype {dtype}, "
                       "which is not a DirectML data type; supported: FLOAT32, FLOAT16"):
        jax.eval_shape(lambda v: dmljax.activation_scaled_elu(v), x)


@pytest.mark.parametrize("name", ["INT64", "UINT64", "FLOAT64"])
def test_64_bit_types_need_x64(name):
    dt = DataType[name]
    x = np.zeros((2, 2), dt.dtype)  # a numpy array: JAX would silently narrow it without x64
    cond = np.ones((2, 2), np.uint8)
    with jax.enable_x64(False):
        with pytest.raises(dmljax.ValidationError) as info:
            dmljax.element_wise_if(cond, x, x)
    msg = str(info.value)
    assert f"ATensor (argument `a`) has DataType {name}, which JAX holds only in its 64-bit mode" in msg
    assert "jax.config.update('jax_enable_x64', True)" in msg
    with jax.enable_x64(True):
        out = dmljax.element_wise_if(cond, x, x)
        assert out.dtype == dt.dtype


# ---------------------------------------------------------------------------------- transformations
def _jit_types(name):
    # A float type (else an integer one); the integer one too in the slow tier.
    types = catalog.newest_types(get_operator(name).spec)
    return [t for t in [next((t for t in types if t.is_float), None), _int_type(name)] if t is not None]


EAGER_SLOW = {"DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION"}
"""Operators whose op-by-op run under jax.disable_jit takes seconds (the CPU's integer convolution
as the window's columns: 6 s), left to the slow tier whole."""
JIT = [pytest.param(n, dt, marks=() if i == 0 and n not in EAGER_SLOW else pytest.mark.slow)
       for n in _with_ref(OPS) for i, dt in enumerate(_jit_types(n))]


@pytest.mark.parametrize("name,dt", _fast_share(JIT, "jit"), ids=lambda v: _short(v) if isinstance(v, str) else v.name)
def test_eager_equals_jit(name, dt, rng):
    # The operator's own call, the same inside a caller's jax.jit, and op by op under
    # jax.disable_jit: the same bits, except that a ScaleBias multiply-add may be fused into an
    # FMA by one and not another (docs/semantics.md#fused-multiply-add): then each is checked against the reference.
    # An accumulating operator: its own call and the caller's jit, the same bits, within budget.
    op = get_operator(name)
    spec, ref = op.spec, REFS[name]
    level = spec.support[0].level
    types = catalog.tensor_types(spec, level, dt)
    shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims, 24))
    with jax.enable_x64(catalog.needs_x64(types)):
        for attrs in catalog.newest_sets(spec, ref, dt, shape):
            out_dt = catalog.output_type(spec, types, attrs)
            args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
            own = _numpy(op(*args, **attrs.dml))
            jitted = _numpy(jax.jit(lambda *a: op(*a, **attrs.dml))(*args))
            context = f"{_short(name)} {dt.name} {attrs}"
            if ref.accumulates:
                # the order of a sum is XLA's, compiled or op by op (docs/semantics.md#accumulating-operators): op by op would
                # only be held to the budget test_matches_reference holds the compiled call to, at
                # a compilation per primitive (a quarter of this test's time at 160 operators)
                _check_outputs(spec, ref, attrs, own, ref.fn(*args, **attrs.ref_kwargs), out_dt, shape, args, context)
                _same_bits(jitted, own, context)
                continue
            with jax.disable_jit():
                eager = _numpy(op(*args, **attrs.dml))
            issue = attrs.known_issues.get("eager_equals_jit")
            if catalog.fusable(spec, attrs) or issue:
                want = ref.fn(*args, **attrs.ref_kwargs)
                for out in (own, jitted, eager):
                    _check_outputs(spec, ref, attrs, out, want, out_dt, shape, args, context)
            if issue:  # the issue must still show, or its entry goes
                _same_bits(jitted, own, context)
                assert (_bits(catalog.first_output(eager)) != _bits(catalog.first_output(own))).any(), \
                    f"{context}: fixed? {issue}"
            elif not catalog.fusable(spec, attrs):
                _same_bits(jitted, own, context)
                _same_bits(eager, own, context)


def _numpy(out):
    return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)


def _same_bits(a, b, context):
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        np.testing.assert_array_equal(_bits(x), _bits(y), err_msg=context)


# ---------------------------------------------------------------------------------- gradients
def _plain_inputs(name) -> bool:
    # Generators have no inputs to differentiate; JOIN's tensor array is differentiated by hand
    # (tests/ops/data_movement/test_join_split.py): these checks take one array per input.
    spec = get_operator(name).spec
    return bool(spec.inputs) and not any(t.array for t in spec.inputs)


GRADS = [(n, dt) for n in _with_ref(OPS) for dt in _grad_types(n) if _plain_inputs(n)]


def _magnitude(ref, args, attrs, output=0):
    """The reference's term sizes for output ``output``: its one array for the first output, or
    one per output where it gives a tuple (ADAM_OPTIMIZER's parameters and moments)."""
    return catalog.output_magnitude(ref, args, attrs, output)


def cotangent(shape, pointwise: bool = True):
    """dY for the generated gradient tests: 1 for a point-wise operator; otherwise a fixed
    pattern of +-1/2, +-1 and +-2 (exact in every type), since dY = 1 is degenerate for an
    operator whose row sums to a constant (softmax's gradient is then 0)."""
    if pointwise:
        return np.ones(shape)
    n = int(np.prod(shape))
    return np.resize(np.array([1.0, -0.5, 2.0, -1.0, 0.5, -2.0, 1.0]), n).reshape(shape)


_GRADIENTS: dict = {}  # (operator, attributes, dY given): its jitted gradient, shared by the tests


def _grad_all(op, kwargs, args, dy=None):
    """jax.grad of sum(output * dY) (dY = 1 unless given) by every input, integer ones included
    (float0), under one jax.jit: a compiled backward pass costs a fifth of one run primitive by
    primitive. Inside a caller's jit the caller's compiler options apply (README): this one keeps
    every FLOAT16 rounding, as the operator's own compile does (XLA's GPU backend drops them
    otherwise). The jitted function is kept per operator, attribute set and whether dY is given
    (dY is its argument), so that the gradient tests of one case (reference, finite differences,
    float0) compile it once in a process, not once each."""
    try:  # the operators' own cache key: -0.0 apart from 0.0, floats by their bits
        key = (op.spec.enum_name, static_key(tuple(kwargs.items())), dy is None)
    except TypeError:  # an attribute that cannot be a key: compiled afresh
        key = object()
    fn = _GRADIENTS.get(key)
    if fn is None:
        first = catalog.first_output
        if dy is None:
            def loss(w, *a):
                return jnp.sum(first(op(*a, **kwargs)).astype(jnp.float32))
        else:
            def loss(w, *a):
                return jnp.sum(first(op(*a, **kwargs)).astype(jnp.float32) * w)
        grad = jax.grad(loss, argnums=tuple(range(1, len(args) + 1)), allow_int=True)
        fn = _GRADIENTS[key] = jax.jit(grad, compiler_options={"xla_allow_excess_precision": False})
    return fn(jnp.float32(1) if dy is None else jnp.asarray(dy, jnp.float32), *args)


@pytest.mark.parametrize("name,dt", _fast_share(GRADS, "grads"), ids=lambda v: _short(v) if isinstance(v, str) else v.name)
def test_gradient_matches_reference(name, dt, rng):
    # jax.grad against the float64 reference derivative (dY = 1), away from the kinks, within
    # the record's budget; inputs that are not floats (a condition) get float0. An operator with
    # no gradient (its reason written in the reference) passes nothing to its float inputs.
    op = get_operator(name)
    spec, ref = op.spec, REFS[name]
    types = catalog.tensor_types(spec, spec.support[0].level, dt)
    shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims))
    for attrs in catalog.newest_sets(spec, ref, dt, shape):
        args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
        if catalog.leaves_out(args, ref):
            continue
        out_shape = catalog.first_output(jax.eval_shape(lambda *a: op(*a, **attrs.dml), *args)).shape
        dy = cotangent(out_shape, ref.pointwise)
        grads = _grad_all(op, attrs.dml, args, None if ref.pointwise else dy)
        context = f"{_short(name)} {dt.name} {attrs}"
        floats = [i for i, t in enumerate(spec.inputs) if types[t.dml_name].is_float and args[i] is not None]
        for i, g in enumerate(grads):
            if args[i] is None:  # a null desc (Reference.null_inputs): no gradient
                assert g is None, context
            elif i not in floats:
                assert g.dtype == jax.dtypes.float0, context
        if ref.grad is None:
            for i in floats:
                assert not np.asarray(grads[i]).any(), f"{context}: {ref.no_grad}, yet a gradient flows"
            continue
        want = ref.grad(dy, *args, **attrs.ref_kwargs)
        sizes = None if ref.grad_magnitude is None else ref.grad_magnitude(dy, *args, **attrs.ref_kwargs)
        keep = None  # near_kink is output-shaped: for element-wise operators, whose inputs share it
        if ref.near_kink is not None:
            keep = ~np.asarray(ref.near_kink(*args, **attrs.ref_kwargs), bool)
            assert keep.mean() > 0.5, f"{context}: most points are near a kink; widen the inputs"
        for i in floats:
            g = np.asarray(grads[i])
            mask = np.ones(g.shape, bool) if keep is None else keep  # per input: scatter's updates differ in shape
            assert g.dtype == args[i].dtype and want[i] is not None, context
            assert_matches(g[mask], [np.asarray(want[i])[mask]], types[spec.inputs[i].dml_name],
                           catalog.budget(spec, attrs, dt, sizes=shape, args=args), context=f"{context} d/d{spec.inputs[i].arg}",
                           magnitude=None if sizes is None or sizes[i] is None else np.asarray(sizes[i])[mask])


def _element_wise(name) -> bool:
    spec = get_operator(name).spec
    return all(t.kind for t in spec.tensors) and REFS[name].grad is not None and REFS[name].pointwise


FD = [(n, dt) for n, dt in GRADS if _element_wise(n)]
ROW_FD = [(n, dt) for n, dt in GRADS if REFS[n].grad is not None and not REFS[n].pointwise and not REFS[n].ranks]
FD_STEP = {F32: 1e-3, F16: 3e-2}  # relative steps: far above the type's rounding, small for curvature


@pytest.mark.parametrize("name,dt", _fast_share(FD, "fd"), ids=lambda v: _short(v) if isinstance(v, str) else v.name)
def test_gradient_matches_finite_differences(name, dt, rng):
    # An independent check of jax.grad (and of the reference derivative it is compared with
    # above): central differences of the operator's own values, in the tensor's own type, one
    # input at a time; each element's output depends on that element's inputs only, so one
    # perturbed call gives every element's partial. The step is relative to |x| and to the
    # ScaleBias's Scale (a step in g = x * Scale + Bias). Points with a kink anywhere in
    # [x - h, x + h] (the reference's near_kink, sampled across it), and points where the
    # differences at h, h/2 and h/4 disagree (curvature too high for the step, or a jump inside
    # it), are left out; half the
    # points inside the domain must remain. FLOAT32 differences resolve a slope to about 1%;
    # FLOAT16's (3 significant digits) to about 10%: there they catch gross errors (a wrong sign,
    # factor or branch, a NaN), and test_gradient_matches_reference the ULPs.
    op = get_operator(name)
    spec, ref = op.spec, REFS[name]
    types = catalog.tensor_types(spec, spec.support[0].level, dt)
    shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims))
    for attrs in catalog.newest_sets(spec, ref, dt, shape):
        scale = abs(float((attrs.ref_kwargs.get("scale_bias") or (1.0,))[0]))
        if scale * FD_STEP[dt] > 0.05:
            continue  # a large Scale: too few representable steps of x for differences (the unscaled sets run)
        args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
        if catalog.leaves_out(args, ref):
            continue
        grads = _grad_all(op, attrs.dml, args)
        f = jax.jit(lambda *a, kw=attrs.dml: catalog.first_output(op(*a, **kw)))
        context = f"{_short(name)} {dt.name} {attrs}"
        for i, t in enumerate(spec.inputs):
            if not types[t.dml_name].is_float or args[i] is None:
                continue
            x = np.asarray(args[i], np.float64)
            h = FD_STEP[dt] * np.maximum(1.0, np.abs(x)) / max(1.0, scale)

            def at(v, i=i):
                return [a if j != i else np.asarray(v).astype(args[i].dtype) for j, a in enumerate(args)]

            def difference(step, at=at):
                xp, xm = at(x + step)[i], at(x - step)[i]
                width = xp.astype(np.float64) - xm.astype(np.float64)  # the steps actually taken
                with np.errstate(all="ignore"):
                    yp = np.asarray(f(*at(xp)), np.float64)
                    ym = np.asarray(f(*at(xm)), np.float64)
                    return (yp - ym) / width, (np.abs(yp) + np.abs(ym)) / width
            fd, size = difference(h)
            fd2, _ = difference(h / 2)
            fd4, _ = difference(h / 4)
            kink = np.zeros(x.shape, bool)
            if ref.near_kink is not None:
                for k in np.linspace(-1.0, 1.0, 9):
                    with np.errstate(all="ignore"):
                        kink |= np.asarray(ref.near_kink(*at(x + k * h), **attrs.ref_kwargs), bool)
            g = np.asarray(grads[i], np.float64)
            info = np.finfo(args[i].dtype)
            eps = float(info.eps)
            quantum = float(info.tiny if dt is F32 else info.smallest_subnormal)
            with np.errstate(all="ignore"):
                # + the values' rounding: relative, and near zero the type's smallest step (FLOAT32's
                # smallest normal, as denormals flush; FLOAT16's smallest denormal)
                tol = 2e-2 * (np.abs(g) + np.abs(fd)) + 1.5 * eps * size + 2 * quantum / np.abs(h)
                inside = ~kink & np.isfinite(g) & np.isfinite(np.asarray(f(*args), np.float64))
                ok = (inside & np.isfinite(fd) & np.isfinite(fd2) & np.isfinite(fd4)
                      & (np.abs(fd - fd2) <= tol / 3) & (np.abs(fd2 - fd4) <= tol / 3))
            assert ok.sum() >= max(4, inside.sum() // 2), f"{context} d/d{t.arg}: too few points to compare ({ok.sum()})"
            bad = ok & ~(np.abs(g - fd) <= tol)
            assert not bad.any(), (f"{context} d/d{t.arg}: jax.grad {g[bad][:4]} against finite differences "
                                   f"{fd[bad][:4]} at {x[bad][:4]}")


@pytest.mark.parametrize("name,dt", _fast_share(ROW_FD, "row_fd"), ids=lambda v: _short(v) if isinstance(v, str) else v.name)
def test_gradient_matches_directional_differences(name, dt, rng):
    # For an operator whose outputs mix its inputs (a softmax's row): the derivative of
    # L(x) = sum(f(x) * dY) along random directions v, by central differences of the operator's
    # own values in FLOAT32 (FLOAT16 inputs widened only to take the steps), against
    # sum(jax.grad(L) * v). Independent of the float64 reference derivative.
    op = get_operator(name)
    spec, ref = op.spec, REFS[name]
    types = catalog.tensor_types(spec, spec.support[0].level, dt)
    shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims, 16))
    for attrs in catalog.newest_sets(spec, ref, dt, shape):
        if not catalog.output_type(spec, types, attrs).is_float:
            continue  # REDUCE's ARGMAX sets: indices, a step function (their gradient is checked as 0)
        args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
        f = jax.jit(lambda *a, kw=attrs.dml: catalog.first_output(op(*a, **kw)))
        out_shape = jax.eval_shape(f, *args).shape
        dy = cotangent(out_shape, False)
        grads = _grad_all(op, attrs.dml, args, dy)
        for i, t in enumerate(spec.inputs):
            if not types[t.dml_name].is_float or args[i] is None:
                continue
            for trial in range(3):
                v = rng.standard_normal(args[i].shape)
                h = FD_STEP[dt] * max(1.0, float(np.abs(np.asarray(args[i], np.float64)).max()))

                def loss(step, i=i, v=v):
                    a = list(args)
                    a[i] = (np.asarray(args[i], np.float64) + step * v).astype(args[i].dtype)
                    width = a[i].astype(np.float64) - np.asarray(args[i], np.float64)
                    return float(np.sum(np.asarray(f(*a), np.float64) * dy)), width

                (lp, wp), (lm, wm) = loss(h), loss(-h)
                want = float(np.sum(np.asarray(grads[i], np.float64) * (wp - wm))) / (2 * h)
                fd = (lp - lm) / (2 * h)
                scale = float(np.sum(np.abs(np.asarray(grads[i], np.float64) * v))) + 1e-3
                tol = (2e-2 if dt is F32 else 1.5e-1) * scale
                assert abs(fd - want) <= tol, (f"{_short(name)} {dt.name} {attrs} d/d{t.arg} trial {trial}: "
                                               f"differences {fd} against jax.grad {want} (tolerance {tol})")


FLOAT0 = [n for n in _with_ref(OPS) if _int_type(n) is not None and _plain_inputs(n)]


@pytest.mark.parametrize("name", _fast_share(FLOAT0, "float0"), ids=_short)
def test_integer_inputs_get_float0(name, rng):
    op = get_operator(name)
    spec, ref = op.spec, REFS[name]
    dt = _int_type(name)
    types = catalog.tensor_types(spec, spec.support[0].level, dt)
    shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims, 8))
    with jax.enable_x64(catalog.needs_x64(types)):
        for attrs in catalog.newest_sets(spec, ref, dt, shape):
            args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
            if catalog.leaves_out(args, ref):
                continue
            grads = _grad_all(op, attrs.dml, args)
            for g, a in zip(grads, args):
                assert g.shape == a.shape
                if np.issubdtype(a.dtype, np.inexact):  # a float input beside integer ones (POW's
                    # exponent with an integer base): an integer result passes it nothing
                    assert g.dtype == a.dtype and not np.asarray(g).any(), (name, dt, attrs)
                else:
                    assert g.dtype == jax.dtypes.float0, (name, dt, attrs)


def test_generated_transformation_coverage():
    # Every operator that has a float type gets gradient cases; every one with an integer type
    # a float0 case; every one an eager-versus-jit case. Except, named here, the operators
    # whose inputs these checks cannot take: generators (none) and those with a tensor array,
    # whose gradients their own tests check: JOIN (tests/ops/data_movement/test_join_split.py),
    # QUANTIZE and DEQUANTIZE (tests/ops/quantization/test_quantize.py).
    by_hand = {n for n in OPS if not _plain_inputs(n)}
    assert {n for n in by_hand if get_operator(n).spec.inputs} <= {
        "DML_OPERATOR_JOIN", "DML_OPERATOR_QUANTIZE", "DML_OPERATOR_DEQUANTIZE"}
    for name in OPS:
        if name in by_hand:
            continue
        types = catalog.newest_types(get_operator(name).spec)
        assert (name in {n for n, _ in GRADS}) == any(t in (F32, F16) for t in types), name
        assert (name in FLOAT0) == any(t.is_integer for t in types), name
    for name in OPS:
        assert name in {p.values[0] for p in JIT}, name
