"""The bundled designed lab (data/vm-6.12-lab/): one boot per run, interleaved blocks,
global pressure that reached kswapd and direct reclaim, shrinker work deferred.

Independent of the analysis code: event names are counted by plain text search of each
decompressed trace, boot ids and positions read from the runs' own boot.json files.
"""

from __future__ import annotations

import json

import pytest
import zstandard

from analysis.capture.design import block_order
from analysis.ingest import boots, mmtests
from tests.conftest import DATA

LAB = DATA / "vm-6.12-lab"


def _boots(tree: str) -> list[dict]:
    return [json.loads(p.read_text()) | {"dir": p.parent}
            for p in sorted((LAB / tree).glob("*/iter-*/boot.json"))]  # fmt: skip


def _text(iteration) -> str:
    raw = (iteration / "ftrace-stutterp.zst").read_bytes()
    return zstandard.ZstdDecompressor().stream_reader(raw).read().decode()


@pytest.mark.parametrize("tree", ["paths", "demo", "pilot", "sweep-divisor", "sweep-throttle"])
def test_every_run_is_its_own_boot_in_the_plans_order(tree):
    found = _boots(tree)
    order = json.loads((LAB / tree / "order.json").read_text())
    assert len(found) == len(order["runs"])
    assert len({b["vm"]["guest_boot_id"] for b in found}) == len(found)  # one boot per run
    assert sorted(b["position"] for b in found) == list(range(len(found)))
    for b in found:  # the run a position names is the setting it ran
        planned = order["runs"][b["position"]]
        assert (planned["run_id"], planned["setting"]) == (b["run_id"], b["setting"])
    # blocks hold every setting once, in the seed's order (recomputed here)
    names = [s["name"] for s in order["settings"]]
    for block in range(order["boots_per_setting"]):
        ran = [b["setting"] for b in sorted(found, key=lambda b: b["position"])
               if b["block"] == block]  # fmt: skip
        assert ran == [names[i] for i in block_order(len(names), order["seed"], block)]
    for run in mmtests.find_runs(LAB / tree):
        keys = {b.key for b in boots.boots_of_run(run).values()}
        assert len(keys) == len(run.iterations)  # compare sees boots, not iterations


def test_the_pilot_reached_global_reclaim_and_deferred_shrinker_work():
    found = _boots("pilot")
    for b in found:
        text = _text(b["dir"])
        if b["params"]["pressure"] == "global":
            assert "mm_vmscan_kswapd_wake:" in text, b["run_id"]
        else:
            assert "mm_vmscan_memcg_reclaim_begin:" in text, b["run_id"]
    global_direct = sum("mm_vmscan_direct_reclaim_begin:" in _text(b["dir"]) for b in found
                        if b["params"]["pressure"] == "global")  # fmt: skip
    assert global_direct >= 1
    for b in found:
        if b["params"]["workload"] == "shrinker":
            assert b["knob_check"]["deferral"]["with_deferred"] > 0, b["run_id"]
            assert b["params"]["negative_dentries"] > 0


def test_the_demo_was_interrupted_twice_and_finished():
    events = [json.loads(line)["event"]
              for line in (LAB / "demo" / "journal.jsonl").read_text().splitlines()]  # fmt: skip
    assert {"interrupted", "abandoned"} <= set(events)
    assert events.count("done") == 4


def _writeback_timeout_us(sysctl: dict, hz: int = 250) -> int:
    """The WRITEBACK timeout a run's kernel slept with: the sysctl in ms (default HZ/10)
    in whole jiffies, rounded up as msecs_to_jiffies() does."""
    ms = int(sysctl.get("vm.reclaim_throttle_writeback_ms", 1000 // 10))
    jiffy_us = 1_000_000 // hz
    return -(-ms * 1000 // jiffy_us) * jiffy_us


def test_the_throttle_sweep_ran_each_timeout_and_global_pressure_throttled_nobody():
    found = _boots("sweep-throttle")
    assert len(found) == 160
    for b in found:
        throttles = b["knob_check"]["throttle"]
        if b["params"]["pressure"] == "global":
            assert throttles == [], b["run_id"]  # no reclaimer slept in reclaim_throttle()
            continue
        writeback = [t for t in throttles if t["reason"] == "VMSCAN_THROTTLE_WRITEBACK"]
        assert writeback and writeback[0]["events"] > 0, b["run_id"]
        assert writeback[0]["seen_us"] == [_writeback_timeout_us(b["params"].get("sysctl", {}))]
    # One block read as text, independently of the capture's own check.
    for b in (b for b in found if b["block"] == 0):
        text = _text(b["dir"])
        if b["params"]["pressure"] == "global":
            assert "mm_vmscan_kswapd_wake:" in text and "mm_vmscan_throttled:" not in text
        else:
            timeout = _writeback_timeout_us(b["params"].get("sysctl", {}))
            assert f"usec_timeout={timeout} " in text, b["run_id"]


@pytest.mark.parametrize("pressure", ["memcg1", "global"])
def test_the_throttle_sweeps_two_default_settings_are_an_aa_with_no_verdict(pressure):
    from analysis.ingest.benchmarks import load_runs
    from analysis.stats.significance import compare_table

    runs = [LAB / "sweep-throttle" / f"{pressure}-{name}" for name in ("default", "default2")]
    table = load_runs(runs).table
    base, new = list(dict.fromkeys(table["kernel"]))
    rows = compare_table(table, base, [new], "p50", 0.05, None, 500, 0)
    assert {r.row for r in rows} == {"mmap-8", "elapsed"}
    for r in rows:  # ten boots a side: no verdict, and every interval covers no change
        assert r.verdict == "no change shown", r
        assert r.change_ci[0] < 0 < r.change_ci[1], r
