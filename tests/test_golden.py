"""Golden-file tests: the text and JSON of ``mmlab stalls``, ``mmlab vmstat`` and the report.

The expected outputs live in ``tests/golden/`` and were first written by the code before the
package was restructured, so a diff here is a presentation (or behaviour) change to review.
Regenerate them deliberately with ``MMLAB_REGEN_GOLDEN=1 pytest tests/test_golden.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from analysis.cli import main
from analysis.report.document import build_report

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
ITER = "data/stutterp-dirty20/dirty20/iter-0"
RUNS = ("stutterp-dirty20", "stutterp-dirty5")

CASES = {
    "stalls-trace.txt": ["stalls", f"{ITER}/ftrace-stutterp.zst", "--uniq"],
    "stalls-iteration.json": ["stalls", ITER, "--json"],
    "vmstat-iteration.txt": ["vmstat", ITER],
    "vmstat-iteration.json": ["vmstat", ITER, "--json"],
    "vmstat-run.txt": ["vmstat", "data/stutterp-dirty5/dirty5"],
    "compare-vmstat.json": ["compare-vmstat", *(f"data/{r}" for r in RUNS), "--json"],
}


def _check(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("MMLAB_REGEN_GOLDEN"):
        path.write_text(actual)
    assert actual == path.read_text(), f"{name} differs from the golden file"


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_output_matches_golden(name, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(CASES[name]) == 0
    _check(name, capsys.readouterr().out)


def test_report_matches_golden(tmp_path, monkeypatch):
    # Only the runs the golden file was made from: data/ may gain captures later.
    (tmp_path / "data").mkdir()
    for run in RUNS:
        shutil.copytree(REPO / "data" / run, tmp_path / "data" / run)
    monkeypatch.chdir(tmp_path)
    _check("report.txt", build_report([Path("data")]))
