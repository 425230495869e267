"""`make`'s text report on the bundled data: every run, both sections, 80 columns."""

from __future__ import annotations

from analysis.cli import main
from analysis.report.document import capture_runs
from tests.conftest import DATA


def test_report_covers_every_run_and_iteration(tmp_path):
    out = tmp_path / "report.txt"
    assert main(["report", "--data", str(DATA), "--out", str(out)]) == 0
    text = out.read_text()
    runs = capture_runs(DATA)
    assert "mmtests-ci" not in text
    assert "== Reclaim Ops from /proc/vmstat ==" in text
    assert "== Reclaim stalls from ftrace ==" in text
    for run in runs:
        for it in run.iterations:
            assert f"-- {run.name} iter-{it.index} --" in text
    # Lines naming a path may be long; every table line fits 80 columns.
    long = [line for line in text.splitlines() if len(line) > 80 and str(DATA) not in line]
    assert long == []


def test_report_on_missing_data_is_a_clear_error(tmp_path, capsys):
    assert main(["report", "--data", str(tmp_path), "--out", str(tmp_path / "r.txt")]) == 2
    assert "no mmtests run here" in capsys.readouterr().err
