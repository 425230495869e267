"""Restore on exit, error and signal, on fake tracefs / sysctl / cgroupfs trees; the trace_pipe
streamer's lost-event accounting; the memory cgroup's v1 and v2 file handling."""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from analysis.capture import run
from analysis.capture.cgroup import MemCgroup, find_memory_hierarchy, parse_flat_keyed
from analysis.capture.run import (
    CaptureConfig,
    Interrupted,
    Restorer,
    machine_lock,
    raise_on_signals,
)
from analysis.capture.sysctl import SysctlChanger
from analysis.capture.tracefs import (
    TraceInstance,
    TraceStreamer,
    count_lost_events,
    reclaim_event_set,
    unknown_events,
)
from analysis.errors import InputError

EVENTS = {
    "vmscan": ["mm_vmscan_throttled", "mm_vmscan_lru_isolate", "mm_vmscan_kswapd_wake"],
    "compaction": ["mm_compaction_begin"],
    "writeback": ["writeback_congestion_wait", "writeback_dirty_page"],
    "kmem": ["mm_page_alloc"],
}


def fake_instance(root: Path) -> TraceInstance:
    """A tracefs instance directory as the kernel lays it out (choice files bracketed)."""
    root.mkdir(parents=True)
    (root / "tracing_on").write_text("1\n")
    (root / "trace_clock").write_text("[local] global counter uptime perf mono\n")
    (root / "buffer_size_kb").write_text("7 (expanded: 1408)\n")
    (root / "set_event").write_text("")
    (root / "set_event_pid").write_text("")
    (root / "trace").write_text("old data\n")
    (root / "options").mkdir()
    (root / "options" / "event-fork").write_text("0\n")
    for system, names in EVENTS.items():
        for name in names:
            d = root / "events" / system / name
            d.mkdir(parents=True)
            (d / "enable").write_text("0\n")
    return TraceInstance(path=root)


def test_reclaim_event_set_on_a_fake_kernel(tmp_path):
    inst = fake_instance(tmp_path / "inst")
    events_dir = inst.path / "events"
    assert reclaim_event_set(events_dir) == [
        "vmscan/mm_vmscan_kswapd_wake",
        "vmscan/mm_vmscan_throttled",
        "compaction/mm_compaction_begin",
        "writeback/writeback_congestion_wait",
    ]
    asked = reclaim_event_set(events_dir, ("mm_vmscan_lru_isolate", "kmem/mm_page_alloc"))
    assert "vmscan/mm_vmscan_lru_isolate" in asked
    assert asked[-1] == "kmem/mm_page_alloc"


def test_unknown_events_are_named(tmp_path):
    events_dir = fake_instance(tmp_path / "inst").path / "events"
    asked = ("mm_vmscan_lru_isolate", "kmem/mm_page_alloc", "mm_page_alloc", "kmem/nope")
    # A bare name is looked up among vmscan and compaction only, as reclaim_event_set does.
    assert unknown_events(events_dir, asked) == ["mm_page_alloc", "kmem/nope"]


def test_preflight_rejects_unknown_events_before_any_change(tmp_path, monkeypatch):
    root = tmp_path / "tracing"
    fake_instance(root)
    monkeypatch.setattr(run.os, "geteuid", lambda: 0)
    monkeypatch.setattr(run, "fs_type", lambda out, mounts: "ext4")
    monkeypatch.setattr(run, "find_memory_hierarchy", lambda mounts: ("v2", tmp_path / "cg"))
    monkeypatch.setattr(run.tracefs, "TRACEFS", root)
    monkeypatch.setattr(run.tracefs, "tracefs_state", lambda: True)
    cfg = CaptureConfig(out=tmp_path / "out", run="x", events_include=("vmscan/mm_nope",))
    with pytest.raises(InputError, match=r"--events.*vmscan/mm_nope"):
        run.preflight(cfg)


def test_configure_then_restore_returns_every_setting(tmp_path):
    inst = fake_instance(tmp_path / "inst")
    before = {p: p.read_text() for p in inst.path.rglob("*") if p.is_file() and p.name != "trace"}
    events = reclaim_event_set(inst.path / "events")
    inst.configure(events, 4096)
    inst.follow([11, 12])
    inst.follow([13])
    assert inst.read("tracing_on") == "0"
    assert inst.read("trace_clock") == "mono"
    assert inst.read("buffer_size_kb") == "4096"
    assert inst.read("options/event-fork") == "1"
    assert (inst.path / "events/vmscan/mm_vmscan_throttled/enable").read_text() == "1"
    assert inst.read("trace") == ""
    inst.restore()
    after = {p: p.read_text() for p in before}
    # Values come back as the kernel accepts them (a bare choice, a bare number).
    assert after[inst.path / "trace_clock"] == "local"
    assert after[inst.path / "buffer_size_kb"] == "7"
    assert after[inst.path / "set_event_pid"] == ""
    for p, text in before.items():
        if p.name not in {"trace_clock", "buffer_size_kb"}:
            assert after[p].strip() == text.strip(), p


def test_restorer_runs_everything_on_sigterm(tmp_path):
    """SIGTERM in the middle of a capture: every change made so far is undone."""
    inst = fake_instance(tmp_path / "inst")
    sysroot = tmp_path / "sys"
    (sysroot / "vm").mkdir(parents=True)
    (sysroot / "vm" / "dirty_ratio").write_text("20\n")
    restorer = Restorer()
    reached = []
    with pytest.raises(Interrupted) as info, raise_on_signals():
        try:
            changer = SysctlChanger(root=sysroot)
            restorer.push("sysctls", changer.restore)
            changer.set("vm.dirty_ratio", "5")
            restorer.push("trace settings", inst.restore)
            inst.configure(reclaim_event_set(inst.path / "events"), 1024)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
            reached.append("after signal")
        finally:
            restorer.run()
    assert info.value.signum == signal.SIGTERM
    assert reached == []
    assert (sysroot / "vm" / "dirty_ratio").read_text() == "20"
    assert inst.read("tracing_on") == "1"
    assert inst.read("trace_clock") == "local"
    assert (inst.path / "events/vmscan/mm_vmscan_throttled/enable").read_text() == "0"
    # The previous SIGTERM handler is back.
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_restorer_keeps_going_past_a_failing_action_and_reports_it():
    done = []
    restorer = Restorer()
    restorer.push("first", lambda: done.append("first"))
    restorer.push("broken", lambda: (_ for _ in ()).throw(OSError("EBUSY")))
    restorer.push("last", lambda: done.append("last"))
    with pytest.raises(RuntimeError, match="restore incomplete: broken: OSError: EBUSY"):
        restorer.run()
    assert done == ["last", "first"]
    assert restorer.actions == []


def test_restorer_holds_a_signal_until_everything_is_restored():
    """A first signal during the restore interrupts nothing: it is raised once every
    action ran (the capture then exits 128+signal with its state restored)."""
    done = []
    restorer = Restorer()
    restorer.push("a", lambda: done.append("a"))
    restorer.push("signal", lambda: os.kill(os.getpid(), signal.SIGINT))
    restorer.push("b", lambda: done.append("b"))
    with pytest.raises(Interrupted) as info, raise_on_signals():
        restorer.run()
    assert done == ["b", "a"] and info.value.signum == signal.SIGINT


def test_a_second_signal_is_only_recorded():
    """After the first signal's Interrupted, later ones (a second Ctrl-C during the
    teardown) never raise: no ``finally`` is cut short."""
    done = []
    with pytest.raises(Interrupted) as info, raise_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        finally:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            done.append("teardown finished")
    assert done == ["teardown finished"] and info.value.signum == signal.SIGTERM


def test_exception_mid_capture_restores(tmp_path):
    sysroot = tmp_path / "sys"
    (sysroot / "vm").mkdir(parents=True)
    (sysroot / "vm" / "swappiness").write_text("60\n")
    restorer = Restorer()
    with pytest.raises(ZeroDivisionError):
        try:
            changer = SysctlChanger(root=sysroot)
            restorer.push("sysctls", changer.restore)
            changer.set("vm.swappiness", "0")
            _ = 1 / 0
        finally:
            restorer.run()
    assert (sysroot / "vm" / "swappiness").read_text() == "60"


@pytest.mark.parametrize(
    ("chunk", "lines", "events"),
    [
        (b"CPU:1 [LOST 123 EVENTS]\n", 1, 123),
        (b"a\nCPU:0 [LOST EVENTS]\nb\nCPU:3 [LOST 7 EVENTS]\n", 2, 7),
        (b"           dd-1 [000] ..... 1.0: mm_vmscan_throttled: nid=0\n", 0, 0),
    ],
)
def test_count_lost_events(chunk, lines, events):
    assert count_lost_events(chunk) == (lines, events)


def test_streamer_copies_everything_and_counts_lost_lines_split_across_reads(tmp_path):
    fifo = tmp_path / "trace_pipe"
    os.mkfifo(fifo)
    sink = io.BytesIO()
    streamer = TraceStreamer(fifo, sink).start()
    pieces = [b"x-1 [000] 1.0: e: a\nCPU:1 [LO", b"ST 40 EVENTS]\ny-2 [001] 2.0: e: b\n"]
    writer = os.open(fifo, os.O_WRONLY)
    for piece in pieces:
        os.write(writer, piece)
        time.sleep(0.3)
    os.write(writer, b"CPU:0 [LOST 2 EVENTS]\n")
    time.sleep(0.3)
    streamer.stop()
    os.close(writer)
    assert sink.getvalue() == b"".join(pieces) + b"CPU:0 [LOST 2 EVENTS]\n"
    assert streamer.bytes_in == len(sink.getvalue())
    assert (streamer.lost_lines, streamer.lost_events) == (2, 42)


def make_cgroup_fs(tmp_path: Path, version: int) -> Path:
    root = tmp_path / f"cg{version}"
    root.mkdir()
    if version == 2:
        (root / "cgroup.controllers").write_text("cpu io memory pids\n")
        (root / "cgroup.subtree_control").write_text("cpu\n")
    return root


def test_v2_create_limit_events(tmp_path):
    root = make_cgroup_fs(tmp_path, 2)
    mounts = f"cgroup2 {root} cgroup2 rw 0 0\ncgroup /x cgroup rw,memory 0 0\n"
    assert find_memory_hierarchy(mounts) == (2, root)
    # On a real cgroupfs the kernel creates the control files; the fake pre-creates one.
    (root / "mmlab-1").mkdir()
    (root / "mmlab-1" / "memory.swap.max").write_text("max\n")
    cg = MemCgroup(2, root / "mmlab-1")
    cg.set_limit(256 << 20)
    assert (root / "mmlab-1" / "memory.max").read_text() == str(256 << 20)
    assert (root / "mmlab-1" / "memory.swap.max").read_text() == "0"
    assert cg.limit_bytes() == 256 << 20
    (cg.path / "memory.events").write_text("low 0\nhigh 0\nmax 1234\noom 2\noom_kill 1\n")
    assert cg.oom_events() == {"low": 0, "high": 0, "max": 1234, "oom": 2, "oom_kill": 1}
    (cg.path / "cgroup.procs").write_text("")
    (cg.path / "cgroup.kill").write_text("0")
    assert cg.pids() == []
    cg.kill_all(timeout_s=0.1)
    assert (cg.path / "cgroup.kill").read_text() == "1"
    settings = cg.settings()
    assert settings["memory.max"] == str(256 << 20)
    assert settings["version"] == 2


def test_v2_create_enables_the_memory_controller(tmp_path):
    root = make_cgroup_fs(tmp_path, 2)
    cg = MemCgroup.create(2, root, "mmlab-2", 64 << 20)
    assert (root / "cgroup.subtree_control").read_text() == "+memory"
    assert cg.limit_bytes() == 64 << 20


def test_v1_files(tmp_path):
    root = make_cgroup_fs(tmp_path, 1)
    assert find_memory_hierarchy(f"cgroup {root} cgroup rw,relatime,memory 0 0\n") == (1, root)
    cg = MemCgroup.create(1, root, "mmlab-3", 128 << 20)
    assert (cg.path / "memory.limit_in_bytes").read_text() == str(128 << 20)
    (cg.path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (cg.path / "memory.failcnt").write_text("30300\n")
    assert cg.oom_events() == {
        "oom_kill_disable": 0,
        "under_oom": 0,
        "oom_kill": 3,
        "failcnt": 30300,
    }


def test_no_limit_is_refused(tmp_path):
    with pytest.raises(InputError, match="limit is mandatory"):
        MemCgroup.create(1, tmp_path, "x", 0)


def test_no_memory_hierarchy():
    assert find_memory_hierarchy("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n") is None


def test_flat_keyed_skips_non_numeric_lines():
    assert parse_flat_keyed("cache 10\nhierarchical x\nbad\nneg -1\n") == {"cache": 10, "neg": -1}


def test_kill_all_on_a_real_v1_cgroup():
    """Forking children inside a real cgroup are all killed, then the cgroup is removed."""
    hierarchy = find_memory_hierarchy(Path("/proc/mounts").read_text())
    if os.geteuid() != 0 or hierarchy is None:
        pytest.skip("needs root and a memory cgroup hierarchy")
    version, root = hierarchy
    cg = MemCgroup.create(version, root, f"mmlab-test-{os.getpid()}", 64 << 20)
    try:
        import subprocess

        proc = subprocess.Popen(
            ["/bin/sh", "-c", f"echo $$ > {cg.procs_file}; sleep 60 & sleep 60 & wait"],
        )
        deadline = time.monotonic() + 5
        while len(cg.pids()) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(cg.pids()) == 3
        threading.Thread(target=proc.wait, daemon=True).start()
        cg.kill_all()
        assert cg.pids() == []
    finally:
        cg.remove()
    assert not cg.path.exists()


def test_a_second_capture_is_refused_while_the_first_holds_the_lock(tmp_path):
    lock = tmp_path / "capture.lock"
    with machine_lock(lock):
        assert lock.read_text() == f"{os.getpid()}\n"
        # flock is per open file: a second open in this process conflicts like another one.
        refused = pytest.raises(InputError, match=rf"another mmlab capture \(pid {os.getpid()}\)")
        with refused, machine_lock(lock):
            pass
    # Released (and the pid cleared) on exit: the next capture may run.
    assert lock.read_text() == ""
    with machine_lock(lock):
        pass
