"""A real ~8 s capture on this kernel: the tree parses, holds reclaim events and vmstat deltas,
and tracing, sysctl and cgroup state afterwards equal the state before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from analysis.capture import sysctl
from analysis.capture.cgroup import find_memory_hierarchy
from analysis.capture.run import CaptureConfig, capture, lock_holder
from analysis.ingest.textfile import read_text

TRACEFS = Path("/sys/kernel/tracing")


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root"
    if not (TRACEFS / "instances").is_dir():
        return f"no tracefs at {TRACEFS}"
    if find_memory_hierarchy(Path("/proc/mounts").read_text()) is None:
        return "no memory cgroup controller mounted"
    if holder := lock_holder():
        # Running alongside would change its sysctls and mix our reclaim into its vmstat.
        return f"another mmlab capture (pid {holder}) is running"
    return None


def _machine_state() -> dict[str, object]:
    """What a capture may touch: top-level tracing, instances, vm sysctls, memory cgroups."""
    _version, root = find_memory_hierarchy(Path("/proc/mounts").read_text())
    return {
        "tracing_on": (TRACEFS / "tracing_on").read_text(),
        "trace_clock": (TRACEFS / "trace_clock").read_text(),
        "buffer_size_kb": (TRACEFS / "buffer_size_kb").read_text(),
        "set_event": sorted((TRACEFS / "set_event").read_text().splitlines()),
        "mmlab_instances": sorted(
            p.name for p in (TRACEFS / "instances").iterdir() if p.name.startswith("mmlab-")
        ),
        "vm": sysctl.read_tree("vm"),
        "mmlab_cgroups": sorted(p.name for p in root.glob("mmlab-*")),
    }


@pytest.mark.capture
def test_real_capture_round_trip(tmp_path):
    reason = _why_not()
    if reason:
        print(f"skipping real capture: {reason}")
        pytest.skip(reason)
    # A disk-backed directory: file writers need writeback, which tmpfs lacks.
    out = Path(__file__).resolve().parent.parent / "build" / f"test-capture-{os.getpid()}"
    dirty = int(Path("/proc/sys/vm/dirty_ratio").read_text())
    cfg = CaptureConfig(
        out=out,
        run="itest",
        iterations=1,
        workers=(4,),
        duration_s=5.0,
        limit_mb=160,
        sets=(("vm.dirty_ratio", str(dirty - 1)),),
        warmup_s=0.5,
        probe_s=1.0,
    )
    before = _machine_state()
    try:
        (meta,) = capture(cfg)
        after = _machine_state()
        assert after == before
        # The change was in force during the capture and the plan used it.
        assert meta.dirty_ratio_used == dirty - 1
        assert meta.document["sysctl_changes"] == {
            "vm.dirty_ratio": {"from": str(dirty), "to": str(dirty - 1)}
        }

        from analysis.ingest import mmtests

        (run,) = mmtests.find_runs(out)
        (it,) = run.iterations
        assert it.tests == ["stutterp"]
        assert it.times["stutterp"].rc == 0
        deltas = it.vmstat("stutterp").frame
        assert len(deltas) == 2
        # The cgroup's file pages were faulted in and written: global counters moved.
        assert deltas["pgpgout"][1] > deltas["pgpgout"][0]
        assert deltas["pgfault"][1] > deltas["pgfault"][0]
        memcg = it.path / "memcg-stat-stutterp.gz"
        text = read_text(memcg)
        failcnt = meta.document["phases"][0]["cgroup_events_after"].get("failcnt", 0)
        assert "time: " in text and failcnt > 0, "the workload never hit the cgroup limit"

        trace = it.path / "ftrace-stutterp.zst"
        assert (it.path / "ftrace-stutterp.start").read_text().count("\n") == 2
        try:
            from analysis.ingest import ftrace
        except ImportError:
            ftrace = None
        if ftrace is not None and hasattr(ftrace, "read"):
            counts = ftrace.read(trace).accounting.events
        else:
            lines = read_text(trace).splitlines()
            counts = {"mm_vmscan_": sum("mm_vmscan_" in ln for ln in lines)}
        vmscan = sum(n for name, n in counts.items() if name.startswith("mm_vmscan_"))
        assert vmscan > 0, f"no vmscan events in {trace}: {counts}"

        latency = it.path / "stutterp" / "logs" / "mmap-latency-4.log"
        rows = [ln.split() for ln in latency.read_text().splitlines() if not ln.startswith("#")]
        assert len(rows) > 10
        assert all(float(r[1]) > 0 for r in rows)
        assert meta.document["probe"]["unit"] == "us"
        assert not list(out.glob(".mmlab-work-*")), "writer files left behind"
    finally:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
