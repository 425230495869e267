"""`mmlab --help` and `mmlab vmstat` must not load the trace reader or numba (only the
shrinker model needs numba; the reader is compiled C), and `mmlab --help` not even polars',
NumPy's or SciPy's (commands import them when they run). A trace ingest loads no numba."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

PROBE = """
import contextlib, io, sys
from analysis.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main({argv!r})
    except SystemExit:
        pass
print(*(name in sys.modules for name in {modules!r}))
"""

READER = ("numba", "analysis.ingest.ftrace.reader")
COMPILED_READER = ("analysis.ingest.ftrace._parse", "numba")
NUMERIC = ("polars", "numpy", "scipy")


def _probe(argv: list[str], modules: tuple[str, ...] = READER) -> list[str]:
    """Is each of ``modules`` loaded after running ``mmlab argv`` in a fresh process?"""
    code = PROBE.format(argv=argv, modules=modules)
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["vmstat", "data/stutterp-dirty20/dirty20/iter-0"]],
    ids=["help", "vmstat"],
)
def test_command_does_not_import_numba(argv):
    assert _probe(argv) == ["False", "False"]


def test_stalls_does_import_the_reader_and_no_jit(tmp_path):
    # The probe can see an import: a trace command really loads the compiled reader, and
    # no JIT (issue 23: the first ingest of an environment must not wait for a compiler).
    trace = "data/stutterp-dirty20/dirty20/iter-0/ftrace-stutterp.zst"
    assert _probe(["stalls", trace], COMPILED_READER) == ["True", "False"]
    argv = ["ingest", trace, "--out", str(tmp_path / "cache")]
    assert _probe(argv, COMPILED_READER) == ["True", "False"]


def test_help_imports_no_numeric_library():
    assert _probe(["--help"], NUMERIC) == ["False"] * len(NUMERIC)


def test_vmstat_does_import_polars():
    # The probe sees numeric imports: a command that reads data really loads polars.
    argv = ["vmstat", "data/stutterp-dirty20/dirty20/iter-0"]
    assert _probe(argv, NUMERIC[:1]) == ["True"]


def test_help_imports_no_yaml():
    # Every command module is imported to list its options; only `mmlab notebook -p`
    # reads YAML (16 ms of every mmlab start-up when imported there).
    assert _probe(["--help"], ("yaml",)) == ["False"]
