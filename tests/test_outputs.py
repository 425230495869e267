"""Outputs appear whole or not at all: ``analysis/outputs.py`` and the commands using it."""

from __future__ import annotations

import pytest

from analysis.cli import main
from analysis.outputs import replace_text, staged_dir
from analysis.report.paper import build


def test_staged_dir_moves_everything_on_success_and_keeps_other_files(tmp_path):
    out = tmp_path / "paper"
    out.mkdir()
    (out / "main.pdf").write_text("latex's")  # not ours: kept
    (out / "macros.tex").write_text("old")
    with staged_dir(out) as stage:
        (stage / "macros.tex").write_text("new")
        (stage / "tables").mkdir()
        (stage / "tables" / "ops.tex").write_text("ops")
        assert not (out / "tables").exists()  # nothing visible before the end
    assert (out / "macros.tex").read_text() == "new"
    assert (out / "tables" / "ops.tex").read_text() == "ops"
    assert (out / "main.pdf").read_text() == "latex's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["paper"]


def test_staged_dir_changes_nothing_when_the_block_fails(tmp_path):
    out = tmp_path / "deep" / "paper"
    with pytest.raises(RuntimeError), staged_dir(out) as stage:
        (stage / "macros.tex").write_text("half")
        raise RuntimeError("a section failed")
    assert list(tmp_path.iterdir()) == []


def test_replace_text_leaves_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "report.txt"
    replace_text(target, "old\n")
    with pytest.raises(TypeError):
        replace_text(target, None)  # type: ignore[arg-type]
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.txt"]


def test_a_failing_paper_section_leaves_no_output(tmp_path, monkeypatch, capsys):
    # The sections run after macros.tex and the tables are written (to the staging folder).
    def fail(data, out):
        raise OSError(28, "No space left on device", str(out / "sections"))

    monkeypatch.setitem(build.SECTION_HOOKS, "fits", fail)
    # Runs without traces leave the trace sections out: here every section must run.
    monkeypatch.setattr(build, "NEEDS_TRACES", ())
    monkeypatch.setattr(build, "paper_values", lambda data, cmp: {"runs": "2"})
    monkeypatch.setattr(build.Study, "ops", None)
    monkeypatch.setattr(build.Study, "stalls", None)
    for name in ("ops_table", "throttle_table", "stall_table", "_throttle"):
        monkeypatch.setattr(build, name, lambda *a: "")
    monkeypatch.setattr(build, "_figures", lambda data, out: [])
    out = tmp_path / "paper"
    with pytest.raises(OSError, match="No space"):
        build.build_inputs(build.Study(()), out)
    assert list(tmp_path.iterdir()) == []


def test_report_out_is_not_created_when_the_report_fails(tmp_path, capsys):
    out = tmp_path / "report.txt"
    assert main(["report", str(tmp_path / "no-such-run"), "--out", str(out)]) == 2
    assert not out.exists()
    assert "no such file or directory" in capsys.readouterr().err


def test_stages_say_what_is_done_and_what_is_left(capsys):
    """Issue 29 item 24: long commands said nothing for minutes. One stderr line per stage,
    counted against the stages announced (here 2, then 1 more found on the way)."""
    from analysis.outputs import Stages

    stages = Stages("paper", 2)
    stages.done("sweep data/vm-6.12")
    stages.expect(1)
    stages.done("dirty5 iter-0 traces")
    stages.done("3 files written")
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "mmlab paper: [1/2] sweep data/vm-6.12 done, 1 left",
        "mmlab paper: [2/3] dirty5 iter-0 traces done, 1 left",
        "mmlab paper: [3/3] 3 files written done",
    ]


def test_a_long_command_reports_progress_on_stderr_only(tmp_path, capsys, monkeypatch):
    """``report --json`` of one real iteration: stdout is the JSON alone, stderr a line per
    stage (its traces, the latency comparison, the Ops rows, the fits)."""
    import json
    import shutil

    from tests.conftest import DATA

    monkeypatch.chdir(tmp_path)
    run = tmp_path / "dirty5"
    shutil.copytree(DATA / "stutterp-dirty5" / "dirty5" / "iter-0", run / "iter-0")
    assert main(["report", str(run), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["runs"][0]["name"] == "dirty5"
    lines = err.splitlines()
    # In the order the output asks for them; counted 1..4, with 3..0 left.
    stages = ["1 iterations' traces", "latency comparison", "vmstat Ops rows"]
    stages.append("throttle delay fits")
    assert len(lines) == 4
    for k, line in enumerate(lines, 1):
        left = f", {4 - k} left" if k < 4 else ""
        assert line.startswith(f"mmlab report: [{k}/4] ") and line.endswith(f" done{left}")
    assert sorted(ln.split("] ")[1].split(" done")[0] for ln in lines) == sorted(stages)
