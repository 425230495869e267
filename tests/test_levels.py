"""The boot as the unit of replication, and warm-up regimes inside a boot.

Known truths: simulated per-iteration statistics with and without a warm-up (labelled
SYNTHETIC), and the bundled guest captures, whose iterations ran in one boot per setting
(data/vm-6.12/*/vm.json) and whose aa1 starts in another regime (issue 28: per-iteration
memcg stalls of 103 and 115 ms, then 0.65-0.79 ms).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.ingest import boots, mmtests
from analysis.stats import levels
from tests.conftest import DATA

SCHEMA = {"kernel": pl.String, "row": pl.String, "run": pl.String, "value": pl.Float64}


def _table(values: dict[str, list[list[float]]], row: str = "r") -> pl.DataFrame:
    """kernel -> per-iteration sample lists, as a long table (SYNTHETIC)."""
    recs = [(k, row, str(i), v) for k, its in values.items()
            for i, samples in enumerate(its) for v in samples]  # fmt: skip
    return pl.DataFrame(recs, schema=SCHEMA, orient="row")


def test_iterations_sharing_boots_are_pooled_per_boot():
    table = _table({"a": [[1.0, 2.0], [3.0], [4.0], [5.0]], "b": [[1.0], [2.0]]})
    shared = {("a", "0"): ("x", "s"), ("a", "1"): ("x", "s"), ("a", "2"): ("y", "s"),
              ("a", "3"): ("y", "s"), ("b", "0"): ("p", "s"), ("b", "1"): ("q", "s")}  # fmt: skip
    rep = levels.replication(table, shared)
    assert rep.unit == {"a": "boot", "b": "boot"}
    a = rep.table.filter(pl.col("kernel") == "a")
    assert a.group_by("run").agg(pl.col("value").sort()).sort("run").rows() == [
        ("boot-0", [1.0, 2.0, 3.0]),
        ("boot-1", [4.0, 5.0]),
    ]
    assert rep.table.filter(pl.col("kernel") == "b")["run"].to_list() == ["0", "1"]
    (note,) = rep.notes
    assert note.startswith("a: 4 iterations in 2 boots, pooled per boot")


def test_one_boot_for_every_iteration_is_said_not_hidden():
    table = _table({"a": [[1.0], [2.0], [3.0]]})
    one = {("a", str(i)): ("x", "vm.json: every iteration ran in one guest boot") for i in range(3)}
    rep = levels.replication(table, one)
    assert rep.unit == {"a": "iteration"} and rep.table.equals(table)
    (note,) = rep.notes
    assert "its 3 iterations ran in one boot (vm.json" in note and "not independent" in note


def _boot_table(first: list[float], rng: np.random.Generator, n: int = 5) -> pl.DataFrame:
    """One kernel, one boot, ``n`` iterations of 50 log-normal samples each, the first
    ones multiplied by ``first`` (SYNTHETIC)."""
    scale = first + [1.0] * (n - len(first))
    run_effect = rng.normal(0, 0.1, n)
    its = [list(np.exp(rng.normal(0, 1, 50) + run_effect[i]) * scale[i]) for i in range(n)]
    return _table({"k": its})


def test_warmup_false_flags_are_rare_without_a_warmup():
    rng = np.random.default_rng(1)
    one = {("k", str(i)): ("b", "s") for i in range(5)}
    flagged = sum(bool(levels.warmups(_boot_table([], rng), one)) for _ in range(400))
    assert flagged / 400 < 0.04  # about 1.7 % expected (WARMUP_ALPHA)


@pytest.mark.parametrize("first", [[100.0], [30.0, 30.0], [0.02, 0.02]])
def test_warmup_of_the_first_iterations_is_found(first):
    rng = np.random.default_rng(2)
    one = {("k", str(i)): ("b", "s") for i in range(5)}
    found = sum(levels.warmups(_boot_table(first, rng), one) != [] for _ in range(50))
    assert found >= 45  # ~97 % expected for the smallest of these shifts (17 sd)
    (w,) = levels.warmups(_boot_table(first, rng), one)
    assert w.iterations == tuple(range(len(first))) and w.of == 5 and w.rows == ("r",)


def test_a_warmup_in_the_middle_is_not_a_warmup():
    rng = np.random.default_rng(3)
    table = _boot_table([1.0, 1.0, 100.0], rng)
    assert levels.warmups(table, {("k", str(i)): ("b", "s") for i in range(5)}) == []


def test_boot_sources_of_the_bundled_trees():
    (aa1,) = mmtests.find_runs(DATA / "vm-6.12" / "aa1")
    found = set(boots.boots_of_run(aa1).values())
    assert len(found) == 1 and next(iter(found)).source.startswith("vm.json")
    (host,) = mmtests.find_runs(DATA / "stutterp-aa1")
    found = set(boots.boots_of_run(host).values())
    assert len(found) == 1  # one capture session: no boot id recorded then


def test_experiment_iterations_are_each_their_own_boot(tmp_path):
    for i in range(3):
        it = tmp_path / "run" / f"iter-{i}"
        it.mkdir(parents=True)
        (it / "kernel.version").write_text("Linux 6.12\n")
        (it / "boot.json").write_text(
            json.dumps({"run_id": f"r{i}", "vm": {"guest_boot_id": f"id-{i}"}})
        )
    (run,) = mmtests.find_runs(tmp_path / "run")
    assert {b.key for b in boots.boots_of_run(run).values()} == {
        f"guest boot id-{i}" for i in range(3)
    }


def test_compare_says_aa1_iterations_share_a_boot_and_start_in_a_warmup():
    out = subprocess.run(
        [sys.executable, "-m", "analysis.cli", "compare", str(DATA / "vm-6.12" / "aa1"),
         str(DATA / "vm-6.12" / "aa2"), "--traces", "--json"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).parent.parent,
    )  # fmt: skip
    rows = {r["row"]: r for r in json.loads(out.stdout)}
    stall = rows["memcg reclaim stall"]
    assert stall["unit_of_replication"] == {"aa1": "iteration", "aa2": "iteration"}
    (warm,) = stall["warmup"]
    assert warm["kernel"] == "aa1" and warm["iterations"] == [0, 1]


def test_pilot_spread_sizes_a_design_from_boot_to_boot_sd(tmp_path):
    """An experiment tree made of bundled iterations (real data, arranged as boots): the
    sizing follows the normal-approximation formula n = 2 (z_.975 + z_.8)^2 sd^2 / ln(1.2)^2
    within the t test's small-sample correction."""
    import shutil

    from scipy import stats as st

    from analysis.study.pilot import pilot_spread

    (run,) = mmtests.find_runs(DATA / "vm-6.12" / "wb20")
    for it in run.iterations:
        shutil.copytree(it.path, tmp_path / "wb20" / f"iter-{it.index}")
    order = {"plan": "pilot", "primary_endpoint": "reclaim_velocity",
             "settings": [{"name": "wb20", "params": {"pressure": "cgroup"}},
                          {"name": "never-ran", "params": {}}]}  # fmt: skip
    (tmp_path / "order.json").write_text(json.dumps(order))
    spread, empty = pilot_spread(tmp_path, effect_pct=20)
    assert empty.sd_log is None and empty.values == ()
    assert len(spread.values) == 5 and spread.left_out == 0
    logs = np.log(spread.values)
    assert spread.sd_log == pytest.approx(logs.std(ddof=1))
    lo, hi = spread.sd_log_ci
    assert lo < spread.sd_log < hi
    z = st.norm.ppf(0.975) + st.norm.ppf(0.8)
    approx = 2 * z**2 * spread.sd_log**2 / np.log(1.2) ** 2
    assert approx <= spread.runs_needed <= approx + 3
    assert spread.runs_needed_at_upper_sd > spread.runs_needed


def test_models_say_their_runs_share_a_boot(capsys):
    """A model calibrated or scored on iterations of one boot says so (text and --json)."""
    from analysis.cli import main

    (note,) = boots.shared_boot_notes(DATA / "vm-6.12" / "aa1")
    assert note.startswith("aa1: its 5 iterations ran in one boot (vm.json")
    assert boots.shared_boot_notes(DATA / "stutterp-aa1")  # host captures: one session
    argv = ["model", "shrinker", str(DATA / "vm-6.12" / "aa1"), "--validate",
            str(DATA / "vm-6.12" / "div1"), "--json"]  # fmt: skip
    assert main(argv) == 0
    notes = json.loads(capsys.readouterr().out)["replication_notes"]
    assert [n.split(":")[0] for n in notes] == ["aa1", "div1"]
