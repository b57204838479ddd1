"""Generated documentation: docs/operators.md, the family pages docs/operators/ and docs/silent.md
are what ``dmljax docs`` makes from the registry and the catalog (this test fails, naming the
command, when they are stale); each silent choice is on docs/silent.md once and in the section of
each operator it covers; the page lists all of DirectML's operators and each implemented one's section;
``dmljax docs`` and ``--check``; every citation of docs/semantics.md names a heading that exists
there, and every relative link of README.md and docs/ a file (and heading) that exists; the README
gives the set-up commands, the test extras and the links to the docs."""

import difflib
import re
import tomllib
import unicodedata
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


def test_silent_md_is_up_to_date():
    committed = (DOCS / "silent.md").read_text(encoding="utf-8")
    fresh = docgen.silent_markdown()
    if committed != fresh:
        diff = "".join(list(difflib.unified_diff(committed.splitlines(True), fresh.splitlines(True),
                                                 "docs/silent.md", "from the records", n=1))[:40])
        pytest.fail("docs/silent.md is stale: regenerate it with `dmljax docs` (run from the repository root) "
                    f"and commit it.\n{diff}", pytrace=False)


def test_every_silent_choice_is_on_the_page_once_and_in_each_operator_section_it_covers():
    from dmljax._src.silent_choices import ACROSS_OPERATORS
    page = docgen.silent_markdown()
    text = docgen.operators_markdown()
    ops = dmljax.registry()
    count = 0
    for c in ACROSS_OPERATORS:
        assert page.count(docgen._silent_row(c, "")) == 1, c.where
    for op in ops.values():
        spec = op.spec
        for c in spec.silent:
            count += 1
            row = docgen._silent_row(c, "")
            assert page.count(row[1:]) == 1, c.where  # once, after its operators' cell
            for name in (spec.short_name, *c.also):
                section = text.split(f"\n### {name.lower()}\n")[1].split("\n### ")[0]
                assert row in section, (name, c.where)
    assert count + len(ACROSS_OPERATORS) > 200
    # a row's operators cell links each operator's section on its family's page
    assert "| [`ELEMENT_WISE_CLIP`](operators/element_wise_arithmetic.md#element_wise_clip), " \
           "[`ELEMENT_WISE_CLIP1`](operators/element_wise_arithmetic.md#element_wise_clip1) | CLIP / CLIP1 gradients |" in page
    # an absolute value's bars are escaped outside code spans, kept inside them
    assert "(\\|Input\\| above ~1.8e19)" in page and "`|x - max| + |ln(sum)| + 1`" in page


def test_a_silent_choice_names_other_operators_by_their_short_names():
    from dmljax._src.spec import OpSpec, SilentChoice, TensorSpec, table
    from dmljax._src.dtypes import FLOAT32_FLOAT16
    for bad in ("CLIP", "DML_OPERATOR_ELEMENT_WISE_CLIP", "ELEMENT_WISE_ABS"):
        with pytest.raises(ValueError, match=f"names '{bad}' in also"):
            OpSpec(enum_name="DML_OPERATOR_ELEMENT_WISE_ABS", summary="", formula="",
                   tensors=(TensorSpec("InputTensor", "input"),),
                   support=(table("1.0", InputTensor=("4", FLOAT32_FLOAT16)),),
                   silent=(SilentChoice("w", "c", "y", also=(bad,)),))


def test_onnx_md_is_up_to_date():
    pytest.importorskip("onnx", reason="docs/onnx.md is generated from the onnx package's schemas (the test extra)")
    committed = (DOCS / "onnx.md").read_text(encoding="utf-8")
    fresh = docgen.documents()["onnx.md"]
    if committed != fresh:
        diff = "".join(list(difflib.unified_diff(committed.splitlines(True), fresh.splitlines(True),
                                                 "docs/onnx.md", "from the mapping table", n=1))[:40])
        pytest.fail("docs/onnx.md is stale: regenerate it with `dmljax docs` (run from the repository root) "
                    f"and commit it.\n{diff}", pytrace=False)
    assert "| Gemm | 1+ | `GEMM` |" in fresh and "| MaxRoiPool | | not supported | not mapped |" in fresh
    assert "| NonZero | | not supported | its output's shape depends on the input's values" in fresh


def test_every_generated_document_is_up_to_date():
    bad = docgen.stale(DOCS)
    if bad:
        pytest.fail(f"{', '.join(bad)} stale: regenerate with `dmljax docs` (run from the repository "
                    "root) and commit.\n" + "".join(bad.values())[:3000], pytrace=False)


def test_documents_are_exactly_the_docs_folder_generated_files():
    from dmljax._src.catalog import FAMILIES
    assert set(docgen.documents()) - {"onnx.md"} == {"operators.md", "operators/index.md", "silent.md",
                                       *(f"operators/{f}.md" for f in FAMILIES)}
    for page in ("semantics.md", "usage.md", "dxdispatch.md", "index.md"):
        assert (DOCS / page).is_file()  # written by hand, not generated


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


def test_readme_sets_up_in_two_commands_and_links_to_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../shared" in readme  # the skipped tests' folder, named once
    assert "pip install . && python examples/quickstart.py\n" in readme
    assert 'pip install ".[test]" && python3 -m pytest\n' in readme
    assert "--slow" in readme and "one summary line" in readme and "dmljax bench" in readme
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = [re.match(r"[\w-]+", req).group(0) for req in extras["test"]]
    assert "(" + ", ".join(names[:-1]) + " and " + names[-1] + ")" in " ".join(readme.split()), names
    for link in ("docs/usage.md", "docs/semantics.md", "docs/operators.md", "docs/silent.md",
                 "docs/dxdispatch.md", "benchmarks/README.md", "examples/"):
        assert f"]({link})" in readme and (ROOT / link).exists(), link
    assert len(readme.splitlines()) < 100


# Citations of docs/semantics.md, and relative links, in the repository's code and docs.
_WHERE = ["dmljax", "tests", "benchmarks", "examples", "README.md", "docs"]
_SUFFIXES = {".py", ".md", ".json", ".sh", ".yml", ".toml"}
_OUTSIDE = "SEMANTICS" + ".md"  # a file outside the repository: never cited
_CITE = re.compile(r"([\w./-]*semantics\.md)(#[\w-]*)?( +(?:section|§)? *\d)?")
_LINK = re.compile(r"\]\(([^()\s]+)\)")


def _slug(heading: str) -> str:
    """The anchor MkDocs (markdown's toc) and GitHub give a heading of plain words."""
    text = re.sub(r"[`*]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} +(.+?) *$", text, re.M)}


def _anchors_of(path: Path, seen: dict[Path, set[str]]) -> set[str]:
    """_anchors, read once a file for a test."""
    if path not in seen:
        seen[path] = _anchors(path)
    return seen[path]


def _files():
    for where in _WHERE:
        p = ROOT / where
        yield from ([p] if p.is_file() else sorted(f for f in p.rglob("*") if f.suffix in _SUFFIXES
                                                  and "__pycache__" not in f.parts))


def _resolve(source: Path, target: str) -> Path | None:
    """From the citing file's folder, the repository root, or (code that writes pages) the docs."""
    for base in (source.parent, ROOT, DOCS, DOCS / "operators"):
        if (base / target).exists():
            return (base / target).resolve()
    return None


def test_every_citation_of_the_semantics_names_a_file_and_heading_that_exist():
    problems, count = [], 0
    anchors: dict[Path, set[str]] = {}
    for f in _files():
        text = f.read_text(encoding="utf-8", errors="replace")
        rel = f.relative_to(ROOT)
        if _OUTSIDE in text:
            problems.append(f"{rel}: cites {_OUTSIDE}, which the repository does not hold")
        for m in _CITE.finditer(text):
            count += 1
            path, anchor, number = m.groups()
            target = _resolve(f, path)
            if target is None:
                problems.append(f"{rel}: {m.group(0)!r}: no such file")
                continue
            if number:
                problems.append(f"{rel}: {m.group(0)!r}: cite a heading's anchor, not a number")
            if anchor and anchor[1:] not in _anchors_of(target, anchors):
                problems.append(f"{rel}: {m.group(0)!r}: no such heading in {path}")
    assert count > 100
    assert not problems, "\n".join(problems)


def test_every_relative_link_of_the_readme_and_docs_resolves():
    problems = []
    anchors: dict[Path, set[str]] = {}  # silent.md alone links each operator's section
    for f in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", f.read_text(encoding="utf-8"), flags=re.S)
        for target in _LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (f.parent / path).resolve() if path else f
            if not dest.exists():
                problems.append(f"{f.relative_to(ROOT)}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors_of(dest, anchors):
                problems.append(f"{f.relative_to(ROOT)}: {target}: no such heading")
    assert not problems, "\n".join(problems)
