"""The shrinker-deferral replay scored against kernels that ran the divisor, on the bundled
patched-kernel sweep (data/vm-6.12, real captures made under TCG emulation): observed
values recomputed from the trace text, the divisor from vm.json, the A/A identity."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import zstandard

from analysis import cli
from analysis.errors import InputError
from analysis.ingest.captures import traces_below
from analysis.models.shrinker import load_invocations
from analysis.models.shrinker_validation import capture_divisor, observed, score_divisor

SWEEP = Path(__file__).resolve().parents[1] / "data" / "vm-6.12"
START = re.compile(
    r"-(\d+)\s+\[\d+\].*mm_shrink_slab_start: \S+ (\w+): nid: \d+ objects to shrink (\d+) "
    r".* total_scan (\d+) priority"
)
END = re.compile(
    r"-(\d+)\s+\[\d+\].*mm_shrink_slab_end: \S+ (\w+): nid: \d+ .* total_scan (\d+) "
    r"last shrinker return val (\d+)"
)


def _regex_run(trace: Path) -> dict[str, float]:
    """Scanned (start total_scan − end total_scan of the same pid and shrinker), freed and
    the mean taken nr_deferred of one trace, by regex over its text."""
    text = zstandard.ZstdDecompressor().decompressobj().decompress(trace.read_bytes()).decode()
    open_calls: dict[tuple[str, str], int] = {}
    taken, scanned, freed = [], 0, 0
    for line in text.splitlines():
        if m := START.search(line):
            pid, ptr, nr, total = m.groups()
            taken.append(int(nr))
            open_calls[(pid, ptr)] = int(total)
        elif (m := END.search(line)) and (m.group(1), m.group(2)) in open_calls:
            pid, ptr, total, ret = m.groups()
            scanned += max(open_calls.pop((pid, ptr)) - int(total), 0)
            freed += int(ret)
    return {"scanned_objects": scanned, "freed_objects": freed, "backlog": np.mean(taken)}


@pytest.fixture(scope="module")
def runs() -> dict[str, list]:
    return {c: [load_invocations(t) for t in traces_below(SWEEP / c)] for c in ("aa1", "div1")}


def test_observed_values_match_the_trace_text(runs):
    for trace, calls in zip(traces_below(SWEEP / "div1"), runs["div1"], strict=True):
        expected = _regex_run(trace)
        got = observed(calls)
        assert got["scanned_objects"] == expected["scanned_objects"]
        assert got["freed_objects"] == expected["freed_objects"]
        assert got["backlog_objects"] == pytest.approx(expected["backlog"])
        # Every call of the sweep is memcg reclaim: no kswapd split to compare.
        assert got["kswapd_share"] == 0.0


def test_divisor_comes_from_the_knob_check(tmp_path):
    assert capture_divisor(SWEEP / "div1") == "1"
    assert capture_divisor(SWEEP / "divprio") == "priority"
    assert capture_divisor(SWEEP / "aa1") == "2^priority"
    checks = [{"deferral": {"divisor": d}} for d in ("1", "priority")]
    (tmp_path / "vm.json").write_text(json.dumps({"knob_check": checks}))
    with pytest.raises(InputError, match="different divisors"):
        capture_divisor(tmp_path)


def test_replay_at_the_capturing_divisor_is_no_change(runs):
    # G3 with 2^priority reproduces every call's total_scan (the README's divisor check), so
    # the A/A replay of aa1 scans what aa1 scanned: the prediction is the no-change baseline.
    scores = {
        s.quantity: s
        for s in score_divisor(runs["aa1"], "2^priority", runs["aa1"], "2^priority", "aa1")
    }
    assert scores["scanned_objects"].predicted == pytest.approx(scores["scanned_objects"].no_change)
    assert scores["scanned_objects"].model_error == pytest.approx(
        scores["scanned_objects"].no_change_error
    )


def test_divisor_1_scores(runs):
    scores = {
        s.quantity: s for s in score_divisor(runs["aa1"], "2^priority", runs["div1"], "1", "div1")
    }
    scanned = scores["scanned_objects"]
    obs = np.array([_regex_run(t)["scanned_objects"] for t in traces_below(SWEEP / "div1")])
    assert scanned.observed == tuple(obs)
    assert scanned.model_error == pytest.approx(np.mean(np.abs(scanned.predicted - obs)))
    # Divisor 1 takes the whole backlog each call: less is left deferred than under 2^priority.
    backlog = scores["backlog_objects"]
    assert backlog.predicted < backlog.no_change
    assert max(backlog.observed) < backlog.no_change
    lo, hi = backlog.interval
    assert backlog.inside == sum(lo <= v <= hi for v in backlog.observed)


def test_command_json(capsys):
    argv = ["model", "shrinker", str(SWEEP / "aa1"), "--json", "--validate", str(SWEEP / "divprio")]
    assert cli.main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["scores"]
    assert [r["quantity"] for r in rows] == [
        "scanned_objects",
        "freed_objects",
        "backlog_objects",
        "kswapd_share",
    ]
    assert {r["divisor"] for r in rows} == {"priority"}
    assert all(len(r["observed_runs"]) == 5 for r in rows)


def test_no_freed_prediction_without_a_scanned_object(runs):
    # Three aa1 iterations (0, 2, 4) scanned nothing: their freed-per-scanned ratio is unknown.
    idle = [c for c in runs["aa1"] if c["scanned_objects"].sum() == 0]
    assert len(idle) == 3
    scores = score_divisor(idle, "2^priority", runs["div1"], "1", "div1")
    assert [s.quantity for s in scores] == ["scanned_objects", "backlog_objects", "kswapd_share"]
