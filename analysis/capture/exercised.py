"""Did a guest run exercise what it was run for? Checks on one finished iteration.

A run that never reclaimed, or whose trace contradicts its knobs, or a global-pressure run
in which neither kswapd nor a direct reclaimer ran, measured nothing of what the setting is
about: it is a failed run (left out of analyses, with the reason), not a quiet zero.
Reasons are sentences naming what was (not) seen, so the failure says what to change.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from analysis.ingest.capture_meta import VmRecord
from analysis.ingest.mmtests import FAILED

__all__ = ["FAILED", "EventCounts", "event_counts", "mark_failed", "problems", "trace_problems"]


# Events whose presence shows that reclaim ran, of any kind.
RECLAIM_EVENTS = (
    "mm_vmscan_memcg_reclaim_begin",
    "mm_vmscan_direct_reclaim_begin",
    "mm_vmscan_kswapd_wake",
    "mm_vmscan_lru_shrink_inactive",
)
# What only global (node) pressure brings: kswapd woken, or an allocator reclaiming itself.
GLOBAL_EVENTS = ("mm_vmscan_kswapd_wake", "mm_vmscan_direct_reclaim_begin")

EventCounts = dict[str, int]


def event_counts(trace: Path) -> EventCounts:
    """Events per name in ``trace`` (through the ingest cache)."""
    from analysis.ingest import ftrace

    read = ftrace.read(trace)
    return {
        name: int(read.lazy(name).select(pl.len()).collect().item()) for name in read.event_names
    }


def trace_problems(counts: EventCounts, pressure: str) -> list[str]:
    """What the trace lacks for a run under ``pressure`` (``cgroup`` or ``global``)."""
    found = []
    if not any(counts.get(e, 0) for e in RECLAIM_EVENTS):
        found.append(
            "no reclaim in the trace (no " + ", ".join(RECLAIM_EVENTS) + "): the workload "
            "never reached its limit; give it a larger working set or a smaller limit"
        )
    elif pressure == "global" and not any(counts.get(e, 0) for e in GLOBAL_EVENTS):
        found.append(
            "global pressure, but neither kswapd woke nor a task entered direct reclaim "
            "(only memcg reclaim was traced)"
        )
    return found


def _knob_problems(check: dict) -> list[str]:
    """Disagreements in one iteration's knob check (:func:`analysis.capture.knobs.check_iteration`):
    events that printed another timeout or another deferral target than the knobs claim.
    A reason with no throttle event is no disagreement: the knob changes how long a
    throttle lasts, not whether one happens, so its absence is an outcome to analyse."""
    found = []
    for t in check.get("throttle", []):
        if t.get("events", 0) and not t.get("agrees"):
            found.append(
                f"{t.get('reason')}: the trace shows usec_timeout {t.get('seen_us')} where the "
                f"knobs give {t.get('expected_us')}"
            )
    deferral = check.get("deferral", {})
    if deferral.get("calls", 0) and deferral.get("matching") != deferral.get("calls"):
        calls, matching = deferral["calls"], deferral.get("matching", 0)
        found.append(
            f"shrinker divisor {deferral.get('divisor')}: {calls - matching} of {calls} "
            "mm_shrink_slab_start calls disagree with it"
        )
    return found


def problems(iteration: Path, knob_check: dict | str, pressure: str) -> list[str]:
    """Every reason ``iteration`` (a guest capture's ``iter-N``) failed to exercise its
    setting; empty when it did."""
    from analysis.ingest.captures import traces_below

    found = []
    for trace in traces_below(iteration):
        found += trace_problems(event_counts(trace), pressure)
    if isinstance(knob_check, dict):
        found += _knob_problems(knob_check)
    return found


def mark_failed(run_dir: Path, vm: VmRecord, pressure: str) -> dict[str, str]:
    """Judge every iteration of a guest capture's ``run_dir`` (:func:`problems`, with the
    knob checks of its ``vm.json``, ``vm``) and write :data:`FAILED` with the reason into
    each one that did not exercise its setting, so that analyses leave it out. Returns
    iteration -> reason."""
    checks = {c.get("iteration"): c for c in vm.knob_checks}
    failed = {}
    for iteration in sorted(p for p in run_dir.glob("iter-*") if p.is_dir()):
        reasons = problems(iteration, checks.get(iteration.name, {}), pressure)
        if reasons:
            failed[iteration.name] = "; ".join(reasons)
            (iteration / FAILED).write_text(failed[iteration.name] + "\n")
    return failed
