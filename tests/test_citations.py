"""Citations in code, tests and notebooks point at pages and sections that exist in the
repository, and nothing reads outside the clone (no ``../shared``)."""

from __future__ import annotations

import re

from tests.conftest import REPO

SCANNED = ("analysis", "tests", "notebooks", "benchmarks", "README.md", "Makefile")
DOC = re.compile(r"docs/([\w-]+\.md)`*(?:\s+\"([^\"]+)\")?")
GONE = ("trace-contract", "../shared", "shared/seeds")


def _texts() -> dict[str, str]:
    paths = []
    for name in SCANNED:
        path = REPO / name
        paths += (
            sorted(p for p in path.rglob("*") if p.suffix in (".py", ".md"))
            if path.is_dir()
            else [path]
        )
    return {str(p.relative_to(REPO)): p.read_text() for p in paths if p.name != "test_citations.py"}


def _headings(page: str) -> set[str]:
    text = (REPO / "docs" / page).read_text()
    return {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}


def test_cited_pages_and_sections_exist():
    broken = []
    for name, text in _texts().items():
        for page, section in DOC.findall(text):
            if not (REPO / "docs" / page).is_file():
                broken.append(f"{name}: docs/{page}")
            elif section and section not in _headings(page):
                broken.append(f'{name}: docs/{page} "{section}"')
    assert broken == []


def test_the_scan_finds_citations():
    cited = {cite for text in _texts().values() for cite in DOC.findall(text)}
    assert {page for page, _ in cited} >= {"trace-formats.md", "shrinker-deferral.md"}
    assert ("trace-formats.md", "Line layouts") in cited


def test_nothing_cites_what_is_not_in_the_repository():
    found = [f"{name}: {gone}" for name, text in _texts().items() for gone in GONE if gone in text]
    assert found == []
