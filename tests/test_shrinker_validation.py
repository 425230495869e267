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
from analysis.models import shrinker_kernel
from analysis.models.shrinker import Variant, divisor_sweep, load_invocations, model_trace
from analysis.models.shrinker_validation import (
    capture_divisor,
    divisor_capture,
    divisor_patch,
    observed,
    score_divisor,
)

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
    (tmp_path / "vm.json").write_text(
        json.dumps({"tool": "mmlab capture --kernel", "knob_check": checks})
    )
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


def _two_calls(depletion: float) -> tuple[np.ndarray, np.ndarray]:
    """Scanned objects and next_deferred of two G3 calls of one shrinker at divisor 1,
    batch 128: take A, hand back A, take B, hand back B; 1000 objects deferred before A;
    the trace saw neither call scan anything."""
    *_, scanned, next_deferred, _, _ = shrinker_kernel.replay(
        2, True, np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1]), np.array([0, 0]),
        np.array([1000]), np.array([True, True]), np.array([2000, 600]), np.array([100, 100]),
        np.array([12, 12]), np.ones(13, dtype=np.int64), np.array([128, 128]),
        np.array([False, False]), depletion, np.array([0.0, 0.0]),
    )  # fmt: skip
    return scanned, next_deferred


def test_depletion_by_hand():
    # A: total_scan = min(1000 + 100, 4000) = 1100, 8 batches = 1024 scanned, 76 deferred.
    # Without depletion B counts 600: min(76 + 100, 1200) = 176, one batch of 128, 48 left.
    assert [list(v) for v in _two_calls(0.0)] == [[1024, 128], [76, 48]]
    # At 0.5 freed per scanned, A freed 512 objects more than the trace's A: B counts
    # 600 - 512 = 88, delta 100 x 88 // 600 = 14, total_scan min(76 + 14, 176) = 90, and
    # the loop takes the 90 in one go (90 >= 88 freeable): 90 scanned, nothing left.
    assert [list(v) for v in _two_calls(0.5)] == [[1024, 90], [76, 0]]


def test_depletion_cuts_the_scanned_overshoot_on_div1(runs):
    # Real kernels: replayed from aa1 under divisor 1, the plain replay scans 3x what div1
    # scanned; with depletion the error falls below no change's, and the A/A replay is
    # unchanged (the capturing rule scans what the trace scanned: nothing extra freed).
    div1 = {s.quantity: s for s in score_divisor(runs["aa1"], "2^priority", runs["div1"], "1", "d")}
    scanned = div1["scanned_objects"]
    assert scanned.predicted > 2.5 * np.mean(scanned.observed)
    assert scanned.depleted_error < scanned.no_change_error < scanned.model_error
    assert scanned.depleted < scanned.predicted
    aa = score_divisor(runs["aa1"], "2^priority", runs["aa1"], "2^priority", "aa1")
    assert all(s.depleted == pytest.approx(s.predicted) for s in aa if s.depleted is not None)


def test_an_unpatched_capture_is_told_so_and_still_replays():
    """A stock kernel (the host captures data/stutterp-*, 6.18 without kernels/patches/) has
    no vm.shrinker_deferred_divisor: scoring against it is refused in plain words (notebook
    05 skips that section), while the replay and the divisor sweep, which need only the
    trace's shrinker calls, run on it."""
    stock = SWEEP.parent / "stutterp-dirty5"
    assert not divisor_patch(stock)
    assert divisor_patch(SWEEP / "div1") and divisor_patch(SWEEP / "aa1")
    with pytest.raises(InputError, match="does not have the divisor patch"):
        divisor_capture(stock)
    calls = load_invocations(traces_below(stock)[0])
    assert calls.height > 0
    replayed = model_trace(calls, Variant("G3"), trace=traces_below(stock)[0])
    # The stock kernel runs mainline's rule (G3, divisor 2^priority): the replay reproduces
    # every printed total_scan, as on the patched kernel at its default.
    assert replayed.replay_agreement.share == 1.0
    sweep = divisor_sweep(calls, [1, 4096], generation="G3")
    assert sweep.height == 2
