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


@pytest.mark.parametrize("tree", ["paths", "demo", "pilot", "sweep-divisor"])
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
