"""README.md is for a user: short, with one example of every subcommand; the depth is in
docs/, whose index (docs/README.md) lists every page (docs/developing.md "Tests")."""

from __future__ import annotations

import argparse
import re

from analysis.cli import build_parser
from tests.conftest import REPO

README_MAX_WORDS = 1200


def test_the_readme_is_short():
    # Words as `wc -w` counts them: runs of non-whitespace.
    words = len((REPO / "README.md").read_text().split())
    assert words <= README_MAX_WORDS, f"README.md has {words} words; move depth to docs/"


def test_every_subcommand_has_an_example_in_the_readme():
    parser = build_parser()
    (subparsers,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    examples = set(re.findall(r"^mmlab ([\w-]+)", (REPO / "README.md").read_text(), re.M))
    assert set(subparsers.choices) - examples == set()


def test_the_docs_index_lists_every_page():
    index = (REPO / "docs" / "README.md").read_text()
    listed = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    assert listed == pages
