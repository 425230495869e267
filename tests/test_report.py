"""`make`'s text report on the bundled data: every run, both sections, 80 columns."""

from __future__ import annotations

import json
import shutil

from analysis.cli import main
from analysis.report.document import capture_runs
from tests.conftest import DATA
from tests.test_golden import GOLDEN, RUNS


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


def test_report_json_agrees_with_the_commands_golden_json(tmp_path, monkeypatch, capsys):
    # The same runs as tests/golden: the report's JSON holds what compare-vmstat --json and
    # stalls --json print for them (their golden files), plus where each analysis belongs.
    (tmp_path / "data").mkdir()
    for run in RUNS:
        shutil.copytree(DATA / run, tmp_path / "data" / run)
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--data", "data", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["iterations"]) for r in report["runs"]] == [("dirty20", 3), ("dirty5", 3)]
    assert report["vmstat"] == json.loads((GOLDEN / "compare-vmstat.json").read_text())
    first = report["stalls"][0]
    assert (first.pop("run"), first.pop("iteration")) == ("dirty20", 0)
    assert [first] == json.loads((GOLDEN / "stalls-iteration.json").read_text())
    assert len(report["stalls"]) == 6
