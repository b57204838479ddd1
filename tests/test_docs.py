"""Generated documentation: docs/operators.md is what ``dmljax docs`` makes from the registry and
the catalog (this test fails, naming the command, when it is stale); the page lists all of
DirectML's operators and each implemented one's section; ``dmljax docs`` and ``--check``;
docs/semantics.md exists and the README points to it."""

import difflib
import re
from pathlib import Path

import pytest

import dmljax
from dmljax._src import docgen
from dmljax._src.cli import main
from tests import tiers

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SPEC = ROOT.parent / "shared" / "spec" / "operators"


def test_operators_md_is_up_to_date():
    committed = (DOCS / "operators.md").read_text(encoding="utf-8")
    fresh = docgen.operators_markdown()
    if committed != fresh:
        diff = "".join(list(difflib.unified_diff(committed.splitlines(True), fresh.splitlines(True),
                                                 "docs/operators.md", "from the registry", n=1))[:40])
        pytest.fail("docs/operators.md is stale: regenerate it with `dmljax docs` (run from the "
                    f"repository root) and commit it.\n{diff}", pytrace=False)


def test_documents_are_exactly_the_docs_folder_generated_files():
    assert set(docgen.documents()) == {"operators.md"}
    assert (DOCS / "semantics.md").is_file()  # written by hand, not generated


def test_every_operator_listed_once_and_every_implemented_one_has_a_section():
    text = docgen.operators_markdown()
    entries = dmljax.catalog()
    assert len(entries) == 177
    rows = re.findall(r"^\| (\d+) \| (.+?) \| (\*\*implemented\*\*|not yet) \| (\d\.\d) \| \[(\w+)\]\((\S+)\) \|$",
                      text, re.M)
    assert [int(r[0]) for r in sorted(rows, key=lambda r: int(r[0]))] == list(range(1, 178))
    by_value = {int(r[0]): r for r in rows}
    for e in entries:
        value, name, status, level, page, url = by_value[e.value]
        assert f"`{e.short_name}`" in name
        assert status == ("**implemented**" if e.implemented else "not yet")
        assert level == e.introduced.version and page + ".md" == e.page and url == docgen.page_url(e)
        assert (f"](#{e.python_name})" in name) == e.implemented
    for name, op in dmljax.registry().items():
        spec = op.spec
        assert f"\n### {spec.python_name}\n" in text
        section = text.split(f"\n### {spec.python_name}\n")[1].split("\n### ")[0]
        assert f"`{name}`: value {spec.value}, introduced in {spec.introduced.version}" in section
        assert f"Gradient: {spec.gradient}" in section
        for t in spec.tensors:
            assert f"| {t.dml_name} | {t.kind.capitalize()} | " in section
    assert f"dmljax implements all {len(dmljax.registry())}." in text


@pytest.mark.parametrize("name", list(dmljax.registry()))
def test_support_history_agrees_with_the_tables(name):
    spec = dmljax.registry()[name].spec
    newest = spec.support[0]
    for tensor, sup in newest.tensors.items():
        dims = docgen.dims_history(spec, tensor)
        assert dims[0][0] == spec.introduced and dims[-1][1] == sup.dims_text()
        groups = docgen.data_type_history(spec, tensor)
        assert sorted(n for _, names in groups for n in names) == sorted(d.name for d in sup.data_types)
        for level, names in groups:  # every table from `level` on has each type; the one below lacks it
            for t in spec.support:
                have = {d.name for d in t.tensors[tensor].data_types}
                if t.level >= level:
                    assert set(names) <= have, (tensor, t.level, names)
                else:
                    assert not set(names) & have, (tensor, t.level, names)
                    break


def test_data_type_history_of_element_wise_add():
    spec = dmljax.element_wise_add.spec
    assert [(lv.version, names) for lv, names in docgen.data_type_history(spec, "ATensor")][0] == \
        ("1.0", ["FLOAT32", "FLOAT16"])
    assert [(lv.version, d) for lv, d in docgen.dims_history(spec, "ATensor")] == [("1.0", "4 to 5"), ("3.0", "1 to 8")]


@tiers.needs_shared
def test_page_urls_follow_where_each_page_comes_from():
    for e in dmljax.catalog():
        head = (SPEC / e.page).read_text(encoding="utf-8").split("\n", 1)[0]
        source = re.search(r"(MicrosoftDocs/[\w-]+), \S*?/ns-directml-(\w+)\.md", head)
        assert source, (e.page, head)
        repo, stem = source.groups()
        prefix = ("https://learn.microsoft.com/windows/ai/directml/api/" if repo == "MicrosoftDocs/windows-ai-docs"
                  else "https://learn.microsoft.com/windows/win32/api/directml/")
        assert docgen.page_url(e) == f"{prefix}ns-directml-{stem}", e.short_name


def test_docs_command_writes_and_checks(tmp_path, capsys):
    out = tmp_path / "docs"
    assert main(["docs", "--check", "--out", str(out)]) == 1
    assert "operators.md is missing; regenerate it with `dmljax docs --out" in capsys.readouterr().err
    assert main(["docs", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert (out / "operators.md").read_text(encoding="utf-8") == docgen.operators_markdown()
    assert main(["docs", "--check", "--out", str(out)]) == 0
    assert "up to date" in capsys.readouterr().out
    (out / "operators.md").write_text("stale\n", encoding="utf-8")
    assert main(["docs", "--check", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "operators.md is stale" in err and "-stale" in err
    assert (out / "operators.md").read_text(encoding="utf-8") == "stale\n"  # --check writes nothing


def test_readme_points_to_the_docs_not_to_the_steering_material():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../shared" not in readme
    for link in ("docs/semantics.md", "docs/operators.md"):
        assert f"]({link})" in readme and (ROOT / link).is_file()
