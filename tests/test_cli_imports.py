"""`mmlab --help` and `mmlab vmstat` must not pay numba's start-up (only trace ingest needs it)."""

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
print("numba" in sys.modules, "analysis.ingest.ftrace.reader" in sys.modules)
"""


def _probe(argv: list[str]) -> list[str]:
    """``numba`` and the trace reader loaded? after running ``mmlab argv`` in a fresh process."""
    code = PROBE.format(argv=argv)
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


def test_stalls_does_import_the_reader():
    # The probe can see an import: a trace command really loads the compiled reader.
    argv = ["stalls", "data/stutterp-dirty20/dirty20/iter-0/ftrace-stutterp.zst"]
    assert _probe(argv) == ["True", "True"]
