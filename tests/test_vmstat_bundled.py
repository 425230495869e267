"""The bundled real captures under data/: every iteration reads and gives sane Ops rows.

Checks against independent sources in the same capture: the elapsed time from the
benchmark's own `time ::` line against its begin/end stamps, and the tests-sysstate
snapshot pair against the 1 s monitor's first and last samples (taken moments apart).
"""

from __future__ import annotations

import pytest

from analysis.metrics.compare import iteration_report
from analysis.metrics.ops import ops_report
from analysis.study.runs import study_runs
from tests.conftest import CAPTURES, DATA

ITERATIONS = [it for run in study_runs(CAPTURES) for it in run.iterations] if DATA.is_dir() else []


def test_bundled_data_has_two_configurations_with_three_iterations():
    runs = study_runs(CAPTURES)
    assert len(runs) >= 2
    assert all(len(run.iterations) >= 3 for run in runs)


@pytest.mark.parametrize("it", ITERATIONS, ids=lambda it: f"{it.run}-{it.index}")
def test_iteration_ops_are_consistent(it):
    report = iteration_report(it)
    times = it.times["stutterp"]
    assert report.elapsed.source == "tests-timestamp time ::"
    assert report.elapsed.seconds == pytest.approx(times.end_epoch - times.begin_epoch, abs=1.5)
    # cgroup v1 limit reclaim on 6.18: invisible to the global kswapd/direct counters...
    assert report.value("Cgroup-limit pages scanned") > 0
    assert 0 < report.value("Cgroup-limit efficiency %") <= 100
    # ...and the monitor, sampled independently, saw the same reclaim within a few percent.
    monitor = ops_report(it.vmstat_monitor("stutterp"))
    assert monitor.value("Cgroup-limit pages scanned") == pytest.approx(
        report.value("Cgroup-limit pages scanned"), rel=0.1
    )
    assert report.resets == ()
