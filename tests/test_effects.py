"""Per-run endpoints of an executed plan and the block-adjusted effects of its factor, on
the bundled pilot (real guest runs: data/vm-6.12-lab/pilot), each number checked against a
computation from the raw files that shares no code with mmlab's."""

from __future__ import annotations

import math
import re
import statistics
import subprocess
import sys

import numpy as np
import pytest
import zstandard

from analysis.ingest import mmtests
from analysis.ingest.capture_meta import ExperimentSetting, read_order
from analysis.metrics.endpoints import endpoint_value
from analysis.study.effects import experiment_effects, run_values, same_as_reference
from tests.conftest import REPO

PILOT = REPO / "data" / "vm-6.12-lab" / "pilot"


def _iteration(setting: str, k: int = 0):
    (run,) = mmtests.find_runs(PILOT / setting)
    return run.iterations[k]


def test_throttle_sleep_is_the_traced_delays_summed():
    it = _iteration("memcg1-stutterp")
    text = zstandard.ZstdDecompressor().stream_reader(
        (it.path / "ftrace-stutterp.zst").open("rb")
    ).read().decode()  # fmt: skip
    delays = [int(m) for m in re.findall(r"mm_vmscan_throttled: .*usect_delayed=(\d+)", text)]
    assert delays and endpoint_value(it, "throttle_stall", "cgroup") == pytest.approx(
        sum(delays) / 1e6
    )


def test_a_global_run_nobody_throttled_slept_zero_seconds_not_unknown():
    """The capture enabled mm_vmscan_throttled (mmlab.json) and none fired: 0, a value."""
    it = _iteration("global-shrinker")
    assert "vmscan/mm_vmscan_throttled" in it.metadata.trace.events_enabled
    assert endpoint_value(it, "throttle_stall", "global") == 0.0


def test_probe_latency_and_system_cpu_come_from_the_workloads_own_files():
    it = _iteration("global-stutterp", 1)
    log = (it.path / "stutterp" / "logs" / "mmap-latency-8.log").read_text().splitlines()
    assert "unit: microseconds" in log[0]
    us = [float(line.split()[1]) for line in log if not line.startswith("#")]
    assert endpoint_value(it, "probe_latency", "global") == pytest.approx(
        statistics.median(us) / 1e3
    )
    timing = (it.path / "tests-timestamp").read_text()
    system = float(re.search(r"time :: stutterp \S+ user (\S+) system", timing)[1])
    assert endpoint_value(it, "system_cpu", "global") == pytest.approx(system)


def test_the_pilot_workload_effect_is_the_mean_log_ratio_over_its_complete_blocks():
    """The pilot ran every setting once per block, so with two levels the block-adjusted
    contrast is the mean over blocks of log(shrinker / stutterp)."""
    result = experiment_effects(PILOT, factor="workload", endpoints=("reclaim_efficiency",))
    assert result.reference == "stutterp" and result.runs_done == result.runs_planned == 16
    assert not result.aa_controls
    assert [dict(f.stratum)["pressure"] for f in result.families] == ["memcg1", "global"]
    order = {s.name: s for s in read_order(PILOT).settings}
    for family, pressure in zip(result.families, ("memcg1", "global"), strict=True):
        per_block = {}
        for workload in ("stutterp", "shrinker"):
            v = run_values(PILOT, order[f"{pressure}-{workload}"], ("reclaim_efficiency",))
            per_block[workload] = dict(zip(v["block"], v["reclaim_efficiency"], strict=True))
        d = [math.log(per_block["shrinker"][b] / per_block["stutterp"][b]) for b in range(4)]
        (effect,) = family.effects.levels
        assert family.effects.blocks == 4 and family.effects.runs == 8
        assert effect.estimate == pytest.approx(math.expm1(np.mean(d)))


def test_a_level_running_what_the_reference_runs_is_an_aa_control():
    def setting(pressure, knob, params):
        return ExperimentSetting(f"{pressure}-{knob}", {"pressure": pressure, "knob": knob}, params)

    settings = [
        setting("memcg1", "default", {"limit_mb": 256}),
        setting("memcg1", "default2", {"limit_mb": 256}),
        setting("memcg1", "wb20", {"limit_mb": 256, "sysctl": {"w": 20}}),
        setting("global", "default", {"limit_mb": 0}),
        setting("global", "default2", {"limit_mb": 0}),
        setting("global", "wb20", {"limit_mb": 0, "sysctl": {"w": 20}}),
    ]
    assert same_as_reference(settings, "knob", "default2", "default")
    assert not same_as_reference(settings, "knob", "wb20", "default")


def test_the_command_prints_the_primary_endpoint_first_and_what_a_verdict_needs():
    out = subprocess.run(
        [sys.executable, "-m", "analysis.cli", "experiment", "effects", str(PILOT),
         "--factor", "workload", "--endpoint", "elapsed", "--endpoint", "reclaim_velocity"],
        capture_output=True, text=True, check=True, cwd=REPO,
    ).stdout  # fmt: skip
    families = [line for line in out.splitlines() if line.startswith("pressure=")]
    assert families[0] == "pressure=memcg1: reclaim_velocity (pages/s) [primary]"
    assert "a verdict needs q < 0.05" in out and "MDE" in out
