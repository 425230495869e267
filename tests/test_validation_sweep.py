"""``mmlab sweep throttle-validation`` / ``shrinker-validation``: the validation tables as
sweep rows, checked against the raw trace text of the bundled patched-kernel sweep
(data/vm-6.12, real captures made under TCG emulation)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from analysis.cli import main
from analysis.ingest.captures import traces_below
from tests.test_shrinker_validation import _regex_run
from tests.test_throttle_validation import SWEEP, _regex_runs


def _sweep(tmp_path, capsys, model: str, grid: str) -> list[dict]:
    path = tmp_path / "grid.yaml"
    path.write_text(grid)
    assert main(["sweep", model, "--grid", str(path), "--out", str(tmp_path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def test_throttle_validation_rows(tmp_path, capsys):
    grid = f"calibration: [{SWEEP / 'aa1'}]\ntarget: [{SWEEP / 'wb20'}]\nwait: empirical\n"
    (row,) = _sweep(tmp_path, capsys, "throttle-validation", grid)
    shares = [v[1] for v in _regex_runs("wb20").values()]
    assert row["tau_us"] == 20_000 and row["calibration_tau_us"] == 100_000
    assert row["p_timeout_observed_mean"] == pytest.approx(np.mean(shares))
    assert row["p_timeout_observed_sd"] == pytest.approx(np.std(shares, ddof=1))
    assert row["p_timeout_no_change"] == pytest.approx(
        np.mean([v[1] for v in _regex_runs("aa1").values()])
    )
    # Errors in percentage points of the share, recomputed from the runs.
    expected = np.mean(np.abs(row["p_timeout_predicted"] - np.array(shares))) * 100
    assert row["p_timeout_model_error_pp"] == pytest.approx(expected)
    low, high = row["p_timeout_pi_low"], row["p_timeout_pi_high"]
    assert row["p_timeout_inside"] == sum(low <= v <= high for v in shares)
    # At a shorter timeout nothing is extrapolated: no Kaplan-Meier column, no bounds.
    assert row["extrapolated"] == 0 and row["p_timeout_kaplan_meier"] is None
    assert 0 < row["p_timeout_change_p"] <= 1
    assert row["velocity_pps_given_writeback_error_rel"] > 0


def test_shrinker_validation_rows(tmp_path, capsys):
    grid = f"calibration: [{SWEEP / 'aa1'}]\ntarget: [{SWEEP / 'div1'}, {SWEEP / 'aa2'}]\n"
    rows = {r["target"]: r for r in _sweep(tmp_path, capsys, "shrinker-validation", grid)}
    div1 = rows[str(SWEEP / "div1")]
    scanned = [_regex_run(t)["scanned_objects"] for t in traces_below(SWEEP / "div1")]
    assert div1["scanned_objects_observed_mean"] == pytest.approx(np.mean(scanned))
    assert div1["scanned_objects_model_error_objects"] == pytest.approx(
        np.mean(np.abs(div1["scanned_objects_predicted"] - np.array(scanned)))
    )
    assert (
        div1["scanned_objects_depleted_error_objects"] < div1["scanned_objects_model_error_objects"]
    )
    # Permutation over 5 + 5 runs: the smallest attainable p is 2/252.
    assert div1["scanned_objects_change_p"] == pytest.approx(2 / 252)
    aa = rows[str(SWEEP / "aa2")]
    assert aa["scanned_objects_predicted"] == pytest.approx(aa["scanned_objects_no_change"])
    assert aa["kswapd_share_depleted"] is None


def test_scores_frame_has_the_model_no_change_and_every_run():
    from analysis.models.shrinker_validation import ShrinkerScore
    from analysis.report.charts.validation import scores_frame

    score = ShrinkerScore(
        "data/vm-6.12/div1", "scanned_objects", "1", "2^priority", 100.0, (10.0, 190.0),
        (90.0, 120.0, 80.0), 3, 10.0, 50.0, 46.7, 0.1,
    )  # fmt: skip
    frame = scores_frame([score])
    assert frame.height == 2 + 3
    model = frame.filter(frame["series"] == "model").row(0, named=True)
    assert (model["capture"], model["value"], model["low"], model["high"]) == (
        "div1", 100.0, 10.0, 190.0,
    )  # fmt: skip
    runs = frame.filter(frame["series"] == "observed run")["value"].to_list()
    assert runs == [90.0, 120.0, 80.0]
