"""Nothing in the package reads a repository path: ``mmlab`` installed from a wheel has no
checkout around it (docs/developing.md "Layers"). Package data is found beside the
module that reads it; the captures and data the Makefile and tests use are passed in."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from tests.conftest import REPO

# A path climbing out of the package (``Path(__file__).parents[2]``), the repository's
# ``data/`` folder, or a repository root constant.
REPOSITORY_PATH = re.compile(r"""parents\[|["']data/|REPO_ROOT""")


def repository_paths(files: dict[str, str]) -> list[str]:
    """``file:line: text`` of every line of ``files`` (name → source) naming a repository
    path."""
    return [
        f"{name}:{number}: {line.strip()}"
        for name, text in files.items()
        for number, line in enumerate(text.splitlines(), start=1)
        if REPOSITORY_PATH.search(line)
    ]


def test_no_package_module_names_a_repository_path():
    sources = {str(p.relative_to(REPO)): p.read_text() for p in (REPO / "analysis").rglob("*.py")}
    assert repository_paths(sources) == []


def test_the_scan_finds_a_repository_path():
    found = repository_paths({
        "a.py": 'ROOT = Path(__file__).resolve().parents[2]\nx = 1\n',
        "b.py": 'REAL = ("data/stutterp-aa1",)\n',
        "c.py": "cwd=REPO_ROOT\nHERE = Path(__file__).resolve().parent\n",
    })  # fmt: skip
    assert [f.split(":")[:2] for f in found] == [["a.py", "1"], ["b.py", "1"], ["c.py", "1"]]


def test_the_capture_finds_the_package_where_it_is_installed(tmp_path):
    """A copy of the package outside any checkout (as a wheel installs it into
    site-packages): the launcher's PYTHONPATH and the guest's working directory are that
    copy's parent."""
    site = tmp_path / "site-packages"
    shutil.copytree(REPO / "analysis", site / "analysis",
                    ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.md"))  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(site)}
    code = "from analysis.capture import PACKAGE_PARENT; print(PACKAGE_PARENT)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == str(site.resolve())
