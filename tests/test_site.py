"""The operator reference site (mkdocs.yml): its navigation names every generated family page and
every hand-written page; in the slow tier, ``mkdocs build --strict`` builds it, with a page per
family and a search index."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dmljax._src import docgen
from dmljax._src.catalog import FAMILIES

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["index.md", "usage.md", "compose.md", "semantics.md", "silent.md", "dxdispatch.md", "onnx.md", "sharding.md",
         "operators.md",
         "operators/index.md", *(f"operators/{f}.md" for f in FAMILIES)]


def test_the_navigation_names_every_page_and_each_exists():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "docs_dir: docs" in config and "- search" in config
    for page in PAGES:
        assert f" {page}\n" in config, page
        assert (ROOT / "docs" / page).is_file(), page
    assert set(docgen.documents()) <= set(PAGES)


@pytest.mark.slow
def test_the_site_builds_strictly_with_a_page_per_family_and_a_search_index(tmp_path):
    pytest.importorskip("mkdocs")
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    for family in FAMILIES:
        assert (site / "operators" / family / "index.html").is_file(), family
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = {doc["location"] for doc in index["docs"]}
    assert "operators/matrix/#gemm" in locations
    assert "semantics/#accumulating-operators" in locations
