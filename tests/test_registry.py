"""The records against their pages: support tables, enum values and levels read from the spec
folder, so a transcription slip fails here; and __all__, the registry and the docs agree."""

import inspect
import re
from pathlib import Path

import pytest

import dmljax
from dmljax._src.docstrings import support_table_text
from dmljax._src.registry import registry
from dmljax._src.spec import PageSlip
from tests import tiers

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec"
needs_spec = tiers.needs_shared


def page_level(page: str) -> str:
    """The introducing level the page's Availability section states ("2.1")."""
    text = (SPEC / "operators" / page).read_text()
    m = re.search(r"This operator was introduced in [`*]*DML_FEATURE_LEVEL_(\d+)_(\d+)", text)
    return f"{m.group(1)}.{m.group(2)}"


def page_levels(page: str) -> set[str]:
    """Every introducing level the page states: LOGICAL_LESS_THAN_OR_EQUAL's page has two
    Availability sections (1.0 and 3.0; DirectML.h and INDEX.md say 3.0)."""
    text = (SPEC / "operators" / page).read_text()
    return {f"{a}.{b}" for a, b in re.findall(r"This operator was introduced in [`*]*DML_FEATURE_LEVEL_(\d+)_(\d+)", text)}


def page_tables(page: str, groups: bool = False):
    """{level version: {tensor: (dims text, [types])}} parsed from a page's Tensor support section.
    A page with one table and no level heading has it from the introducing level. With
    ``groups``, for a page whose tables depend on an attribute ("### MIN and MAX" headings above
    the level headings, as REDUCE's): {heading: {level version: ...}}."""
    text = (SPEC / "operators" / page).read_text()
    # "## Tensor support" (CONVOLUTION_INTEGER's page has "# Tensor support")
    section = text.split("# Tensor support", 1)[1].split("\n## ", 1)[0]
    level = None if "### DML_FEATURE_LEVEL_" in section else page_level(page)
    tables = {level: {}} if level else {}
    by_group = {}
    for line in section.splitlines():
        m = re.match(r"#{3,}\s+DML_FEATURE_LEVEL_(\d+)_(\d+) and above", line)
        if m:
            level = f"{m.group(1)}.{m.group(2)}"
            tables[level] = {}
            continue
        g = re.match(r"###\s+(?!DML_FEATURE_LEVEL_)(.+)", line)
        if g and groups:
            tables = by_group[g.group(1).strip()] = {}
            level = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if level and len(cells) in (4, 5) and cells[0] not in ("Tensor", "") and not cells[0].startswith("-"):
            # a fifth column (NONZERO_COORDINATES' "Dimensions", {1, M, N}) comes before the last two
            tables[level][cells[0]] = (cells[-2], [t.strip() for t in cells[-1].split(",")])
    return by_group if groups else tables


OPS = list(registry().values())

def page_slip(spec):
    """Where the record says its page contradicts DirectML.h or itself (``OpSpec.page_slip``): the
    records hold each difference, with the reason, once; an empty one where the page is followed."""
    return spec.page_slip or PageSlip(why="")


SLIPPED = [op for op in OPS if op.spec.page_slip]


@pytest.mark.parametrize("op", SLIPPED, ids=lambda o: o.spec.short_name)
def test_a_page_slip_names_what_the_record_has(op):
    slip, spec = op.spec.page_slip, op.spec
    assert slip.why and (slip.levels or slip.types or slip.blank_types)
    levels = {t.level.version for t in spec.support}
    assert set(slip.levels) <= levels, f"{spec.short_name}: page_slip.levels names no table of the record"
    for tensor, (_, record_types) in slip.types.items():
        assert all([d.name for d in t.tensors[tensor].data_types] == list(record_types) for t in spec.support)
    assert slip.why in op.__doc__  # the docstring says it


@needs_spec
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.spec.short_name)
def test_support_tables_match_the_page(op):
    spec = op.spec

    def rows(tables):
        return {t.level.version: {n: (s.dims_text(), [d.name for d in s.data_types]) for n, s in t.tensors.items()}
                for t in tables}
    if spec.groups:  # REDUCE: a group of tables per heading, each naming its Function values
        expected = page_tables(spec.page, groups=True)
        assert {g.title: rows(g.support) for g in spec.groups} == expected
        for g in spec.groups:
            named = re.findall(r"[A-Z][A-Z0-9_]+", g.title)
            assert sorted(named) == sorted(m.name for m in g.members), g.title
    else:
        slip = page_slip(spec)
        ours = {slip.levels.get(k, k): v for k, v in rows(spec.support).items()}
        if slip.blank_types:
            ours = {level: {n: (dims, [""]) for n, (dims, _) in row.items()} for level, row in ours.items()}
        for tensor, (page_types, record_types) in slip.types.items():
            for row in ours.values():
                assert row[tensor][1] == list(record_types)
                row[tensor] = (row[tensor][0], list(page_types))
        assert ours == page_tables(spec.page)


@needs_spec
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.spec.short_name)
def test_enum_value_and_level_match_the_index(op):
    spec = op.spec
    index = (SPEC / "INDEX.md").read_text()
    m = re.search(rf"^\| {spec.enum_name}(?: \(alias: [A-Z0-9_]+\))? \| (\d+) \| [^|]+ \| ([\d.]+) \|", index, re.M)
    assert m, spec.enum_name
    assert int(m.group(1)) == spec.value
    assert m.group(2) == spec.introduced.version
    page_level = page_slip(spec).levels.get(spec.introduced.version, spec.introduced.version)
    assert page_level in page_levels(spec.page)
    page = (SPEC / "operators" / spec.page).read_text()
    assert spec.formula.split("\n")[0].strip() in page  # the formula is the page's


def test_all_is_sorted_and_exports_every_operator():
    assert dmljax.__all__ == sorted(dmljax.__all__)
    for op in OPS:
        assert op.spec.python_name in dmljax.__all__
        assert getattr(dmljax, op.spec.python_name) is op
        for alias in op.spec.entry.aliases:  # DML_OPERATOR_SCATTER: dmljax.scatter is scatter_elements
            assert getattr(dmljax, alias.lower()) is op and alias.lower() in dmljax.__all__
    for name in dmljax.__all__:
        assert hasattr(dmljax, name)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.spec.short_name)
def test_lookup_by_every_name(op):
    spec = op.spec
    for key in (spec.enum_name, spec.short_name, spec.python_name, spec.value, spec.enum_name.lower()):
        assert dmljax.get_operator(key) is op


def test_unknown_operator_suggests_close_names():
    with pytest.raises(ValueError, match="did you mean DML_OPERATOR_ELEMENT_WISE_THRESHOLD"):
        dmljax.get_operator("ELEMENT_WISE_TRESHOLD")


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.spec.short_name)
def test_docstring_and_signature_come_from_the_record(op):
    spec = op.spec
    doc = op.__doc__
    assert doc.startswith(f"{spec.enum_name} (enum value {spec.value}; introduced in {spec.introduced.dml_name}).")
    assert support_table_text(spec).splitlines()[0] in doc
    assert "Example:" in doc and ">>> " in doc
    if spec.gradient:
        assert "Gradient:" in doc
    for c in spec.silent:  # the choices where the page is silent
        assert f"    - {c.where}: {c.choice}. Why: {c.why}" in doc
    sig = inspect.signature(op)
    for p in spec.params:
        param = sig.parameters[p.arg]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY
        if p.default is not spec.params[0].__class__.__dataclass_fields__["default"].default:
            assert param.default == p.default
    assert list(sig.parameters)[-1] == "feature_level"
    assert [t.arg for t in spec.inputs] == list(sig.parameters)[: len(spec.inputs)]


def test_seed_signatures_as_the_issue_names_them():
    s = inspect.signature
    assert str(s(dmljax.element_wise_if)) == "(condition, a, b, *, feature_level=None)"
    assert str(s(dmljax.activation_scaled_elu)) == (
        "(input, *, alpha=1.6732, gamma=1.0507, allow_half_precision_computation=False, feature_level=None)")
    assert str(s(dmljax.element_wise_threshold)) == (
        "(input, *, min, scale_bias=None, allow_half_precision_computation=False, feature_level=None)")
    assert str(s(dmljax.element_wise_constant_pow)) == (
        "(input, *, exponent, scale_bias=None, allow_half_precision_computation=False, feature_level=None)")
    assert str(s(dmljax.element_wise_logical_less_than)) == "(a, b, *, output_data_type='UINT8', feature_level=None)"


def test_every_operator_is_exported_and_documented():
    for op in OPS:
        assert getattr(dmljax, op.spec.python_name) is op
        assert op.spec.python_name in dmljax.__all__
        assert "Support::" in op.__doc__ and op.spec.formula.splitlines()[0] in op.__doc__
    assert dmljax.get_operator(153) is dmljax.element_wise_clip1
    assert {"FusedActivation", "ScalarUnion"} <= set(dmljax.__all__)
    assert dmljax.__all__ == sorted(dmljax.__all__)
    assert dmljax.element_wise_clip1.spec.grad_operator == "DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1"


def test_every_operator_has_a_row_of_known_names():
    from dmljax._src.known_names import KNOWN_NAMES
    assert list(KNOWN_NAMES) == [e.short_name for e in dmljax.catalog()]
    assert dmljax.catalog()[53].known_names.onnx == ("Gemm", "MatMul")  # value 54
    for e in dmljax.catalog():
        for name in e.known_names:
            assert name == name.strip() and name, (e.short_name, name)


@pytest.mark.parametrize("name, best", [
    ("layernorm", "MEAN_VARIANCE_NORMALIZATION2"), ("LayerNormalization", "MEAN_VARIANCE_NORMALIZATION2"),
    ("torch.nn.functional.layer_norm", "MEAN_VARIANCE_NORMALIZATION2"), ("matmul", "GEMM"), ("linear", "GEMM"),
    ("embedding", "GATHER"), ("softmax", "ACTIVATION_SOFTMAX1"), ("gelu", "ACTIVATION_GELU"),
    ("conv", "CONVOLUTION"), ("attention", "MULTIHEAD_ATTENTION1"), ("lstm", "LSTM"),
    ("MVN", "MEAN_VARIANCE_NORMALIZATION2"),
])
def test_find_operators_ranks_exact_and_known_names_first(name, best):
    found = dmljax.find_operators(name)
    assert found[0].entry.short_name == best
    assert found[0].rank == (0 if name == "lstm" else 1)
    assert [m.rank for m in found] == sorted(m.rank for m in found)


def test_get_operator_takes_a_known_name_that_leads_to_one_operator():
    assert dmljax.get_operator("gelu") is dmljax.activation_gelu
    assert dmljax.get_operator("torch.matmul") is dmljax.gemm
    assert dmljax.get_operator("nn.Embedding") is dmljax.gather
    with pytest.raises(dmljax.UnknownOperatorError) as e:
        dmljax.get_operator("softmax")
    assert str(e.value) == (
        "dmljax (DML_OPERATOR_TYPE):\n"
        "  'softmax' is not a DirectML operator type; it is the name of 2 DirectML operators elsewhere; pick one: "
        "DML_OPERATOR_ACTIVATION_SOFTMAX1 (ONNX Softmax; PyTorch torch.softmax, torch.nn.functional.softmax; "
        "JAX jax.nn.softmax; WebNN softmax); DML_OPERATOR_ACTIVATION_SOFTMAX (ONNX Softmax).\n"
        "    Tip: `dmljax ops NAME` shows what each one computes.")
    with pytest.raises(dmljax.UnknownOperatorError, match="did you mean DML_OPERATOR_ACTIVATION_SOFTMAX1"):
        dmljax.canonical_name("softmax")  # DxDispatch models name operators as DirectML does
