"""kernels/lab-save.sh keeps a running plan's finished runs for the next session and
kernels/lab.sh puts them back before resuming (no VM: the executor is never reached here)."""

from __future__ import annotations

import json
import os
import subprocess

from tests.conftest import REPO


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_plan_kept_and_restored_is_its_finished_runs_only(tmp_path):
    out = tmp_path / "lab" / "sweep-x"
    (out / "default" / "iter-0").mkdir(parents=True)
    (out / "default" / "iter-0" / "boot.json").write_text(json.dumps({"run_id": "0000-default"}))
    (out / "default" / ".installing-0001-default").mkdir()  # a run being installed
    (out / ".staging" / "0002-wb20-pid9").mkdir(parents=True)  # a run in progress
    for name in ("order.json", "plan.yaml", "journal.jsonl", ".lock"):
        (out / name).write_text("{}\n")
    keep = tmp_path / "keep"
    env = {**os.environ, "LAB_KEEP": str(keep)}
    saved = subprocess.run(["bash", REPO / "kernels/lab-save.sh", tmp_path / "lab", "sweep-x"],
                           env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert "sweep-x: 1 runs kept" in saved.stdout
    assert _tree(keep / "sweep-x") == [
        "default", "default/iter-0", "default/iter-0/boot.json", "journal.jsonl", "order.json",
        "plan.yaml",
    ]  # fmt: skip
    # lab.sh restores into a missing OUT; the executor then fails on the fake plan name,
    # after the copy, which is what is checked.
    fresh = tmp_path / "fresh"
    restored = subprocess.run(["bash", REPO / "kernels/lab.sh", fresh, "sweep-x"], env=env,
                              capture_output=True, text=True)  # fmt: skip
    assert "resuming from the runs kept in" in restored.stdout
    assert _tree(fresh / "sweep-x") == _tree(keep / "sweep-x")
