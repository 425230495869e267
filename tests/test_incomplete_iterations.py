"""An iteration a capture did not finish is left out of every analysis unless forced
(issue 17): real iterations of ``data/stutterp-dirty20`` copied, one then marked as cut
short the two ways a capture leaves it (``mmlab-incomplete`` kept, or no ``mmlab.json``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis import cli
from analysis.errors import InputError
from analysis.ingest import mmtests

DATA = Path(__file__).resolve().parent.parent / "data" / "stutterp-dirty20" / "dirty20"


@pytest.fixture
def run_dir(tmp_path) -> Path:
    out = tmp_path / "dirty20"
    shutil.copytree(DATA, out)
    return out


@pytest.mark.parametrize("how", ["marker", "no mmlab.json"])
def test_a_cut_iteration_is_left_out_and_named(run_dir, capsys, monkeypatch, how):
    monkeypatch.setenv(mmtests.INCLUDE_INCOMPLETE, "0")  # restored after, even if cli sets it
    if how == "marker":
        (run_dir / "iter-2" / mmtests.INCOMPLETE).write_text("capture pid 1 began\n")
    else:
        (run_dir / "iter-2" / "mmlab.json").unlink()
    (run,) = mmtests.find_runs(run_dir)
    assert [it.index for it in run.iterations] == [0, 1]
    err = capsys.readouterr().err
    assert f"left out {run_dir / 'iter-2'}" in err and "--include-incomplete" in err
    # Forced: all three count again.
    monkeypatch.setenv(mmtests.INCLUDE_INCOMPLETE, "1")
    (run,) = mmtests.find_runs(run_dir)
    assert [it.index for it in run.iterations] == [0, 1, 2]


def test_a_run_with_only_cut_iterations_is_an_error(run_dir, monkeypatch):
    monkeypatch.setenv(mmtests.INCLUDE_INCOMPLETE, "0")  # restored after, even if cli sets it
    for it in run_dir.glob("iter-*"):
        (it / mmtests.INCOMPLETE).write_text("cut\n")
    with pytest.raises(InputError, match="every iteration is incomplete"):
        mmtests.find_runs(run_dir)
    with pytest.raises(InputError, match="every iteration is incomplete"):
        mmtests.find_runs(run_dir / "iter-0")


def test_commands_leave_it_out_unless_include_incomplete(run_dir, capsys, monkeypatch):
    monkeypatch.setenv(mmtests.INCLUDE_INCOMPLETE, "0")  # restored after, even if cli sets it
    (run_dir / "iter-2" / mmtests.INCOMPLETE).write_text("cut\n")
    assert cli.main(["compare-vmstat", str(run_dir), "--json"]) == 0
    assert "left out" in capsys.readouterr().err
    assert cli.main(["--include-incomplete", "compare-vmstat", str(run_dir), "--json"]) == 0
    assert "left out" not in capsys.readouterr().err
