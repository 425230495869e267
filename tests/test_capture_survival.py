"""A capture that dies in any way leaves nothing behind once the next capture (or
``mmlab capture --recover``) has run, and says so (issue 17). Fake tracefs, cgroupfs and
/proc/sys trees stand in for the machine; the processes killed are real ``sleep``s started
here; SIGKILL is a real SIGKILL of a real child process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from analysis import cli
from analysis.capture import journal, run
from analysis.capture.cgroup import MemCgroup
from analysis.capture.journal import Journal, replay
from analysis.capture.run import (
    SIGNALS,
    CaptureConfig,
    Interrupted,
    Progress,
    Restorer,
    lock_holder,
    machine_lock,
    raise_on_signals,
    remove_stale,
)
from analysis.capture.tracefs import TraceInstance
from analysis.errors import InputError
from analysis.ingest import mmtests
from tests.fake_machine import pid_running


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    """What the kernel does on cgroupfs/tracefs that a plain directory does not: rmdir of a
    cgroup or instance takes its control files with it, and a task that exits (or is a
    zombie) leaves ``cgroup.procs``. Returns the list of fake procs files to keep current."""
    real_rmdir = Path.rmdir

    def rmdir(self):
        if self.is_relative_to(tmp_path):
            for f in self.iterdir():
                if f.is_file():
                    f.unlink()
        real_rmdir(self)

    monkeypatch.setattr(Path, "rmdir", rmdir)
    procs_files: list[Path] = []
    stop = threading.Event()

    def account() -> None:
        while not stop.is_set():
            for f in list(procs_files):
                if f.exists():
                    left = [p for p in f.read_text().split() if pid_running(p)]
                    f.write_text("".join(f"{p}\n" for p in left))
            time.sleep(0.02)

    thread = threading.Thread(target=account, daemon=True)
    thread.start()
    yield procs_files
    stop.set()
    thread.join()


def fake_sysctls(root: Path, **values: str) -> Path:
    (root / "vm").mkdir(parents=True)
    for name, value in values.items():
        (root / "vm" / name).write_text(f"{value}\n")
    return root


def sleeper() -> subprocess.Popen:
    """A stand-in worker: a process that would run for ten minutes."""
    return subprocess.Popen(["sleep", "600"], start_new_session=True)


@pytest.mark.parametrize("signum", SIGNALS)
def test_every_ending_signal_restores(tmp_path, signum):
    """SIGINT, SIGTERM, SIGHUP (an ssh drop) and SIGQUIT all unwind through ``finally``."""
    sysroot = fake_sysctls(tmp_path / "sys", dirty_ratio="20")
    before = signal.getsignal(signum)
    restorer = Restorer()
    with pytest.raises(Interrupted) as info, raise_on_signals():
        try:
            changer = run.sysctl.SysctlChanger(root=sysroot)
            restorer.push("sysctls", changer.restore)
            changer.set("vm.dirty_ratio", "5")
            os.kill(os.getpid(), signum)
            time.sleep(1)
        finally:
            restorer.run()
    assert info.value.signum == signum
    assert (sysroot / "vm" / "dirty_ratio").read_text() == "20"
    assert signal.getsignal(signum) is before


@pytest.mark.parametrize("signum", SIGNALS)
def test_the_command_exits_128_plus_the_signal_and_names_the_cut_iteration(
    tmp_path, capsys, monkeypatch, signum
):
    cut = tmp_path / "out" / "x" / "iter-1"

    def interrupted(cfg, tick, report):
        exc = Interrupted(signum)
        exc.incomplete = cut
        raise exc

    monkeypatch.setattr(run, "capture", interrupted)
    rc = cli.main(["capture", str(tmp_path / "out"), "--run", "x", "--limit-mb", "64"])
    err = capsys.readouterr().err
    assert rc == 128 + signum  # SIGTERM 143, SIGHUP 129, not 130 for all
    assert f"interrupted by {signal.Signals(signum).name}" in err
    assert f"{cut} is incomplete" in err


def fake_pre(tmp_path: Path) -> dict[str, object]:
    """preflight's answer for fake trees, with what capture's _prepare adds (no --set)."""
    (tmp_path / "tracing" / "instances").mkdir(parents=True)
    (tmp_path / "memory").mkdir()
    return {
        "tracefs": tmp_path / "tracing",
        "tracefs_mounted": True,
        "cgroup_version": 1,
        "cgroup_root": tmp_path / "memory",
        "sysctls_vm_before": {},
        "sysctls": run.sysctl.SysctlChanger(root=tmp_path / "no-sysctls"),
    }


@pytest.mark.parametrize("stage", ["cgroup", "instance"])
def test_a_signal_while_creating_is_undone(tmp_path, monkeypatch, kernel, stage):
    """SIGTERM between the mkdir and the registration of its undo (before, a cgroup with
    no limit or a tracing instance was left while "state restored" was printed)."""
    pre = fake_pre(tmp_path)
    cfg = CaptureConfig(out=tmp_path / "out", run="x", workers=(3,), limit_mb=64)
    real_set_limit, real_create = MemCgroup.set_limit, TraceInstance.create

    def set_limit(self, limit_bytes):
        (self.path / "cgroup.procs").write_text("")  # the kernel makes it on mkdir
        if stage == "cgroup":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
        real_set_limit(self, limit_bytes)

    def create(tracefs, name):
        inst = real_create(tracefs, name)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        return inst

    monkeypatch.setattr(MemCgroup, "set_limit", set_limit)
    monkeypatch.setattr(TraceInstance, "create", staticmethod(create))
    jr = Journal(tmp_path / "journal", os.getpid(), "boot")
    jr.start()
    restorer = Restorer()
    with pytest.raises(Interrupted), raise_on_signals():
        try:
            run._capture(cfg, pre, restorer, Progress(), lambda p: None, jr, [])
        finally:
            restorer.run()
    assert not list((tmp_path / "memory").iterdir())
    assert not list((tmp_path / "tracing" / "instances").iterdir())


KILLED_CAPTURE = """
import os, sys
from pathlib import Path
from analysis.capture.journal import Journal
from analysis.capture.sysctl import SysctlChanger
tmp = Path(sys.argv[1])
jr = Journal(tmp / "journal", os.getpid(), "boot-1", proc_sys=tmp / "sys")
jr.start()
changer = SysctlChanger(root=tmp / "sys", before_first_change=jr.sysctl)
changer.set("vm.dirty_ratio", "15")
changer.set("vm.dirty_ratio", "14")
work = tmp / "out" / f".mmlab-work-{os.getpid()}"
jr.work_dir(work)
work.mkdir(parents=True)
(work / "writer-0").write_bytes(b"x" * 4096)
os.kill(os.getpid(), 9)
"""


def killed_capture(tmp_path: Path) -> subprocess.CompletedProcess:
    fake_sysctls(tmp_path / "sys", dirty_ratio="20")
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_CAPTURE, str(tmp_path)], capture_output=True, check=False
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return proc


def test_after_sigkill_the_journal_restores_the_original_sysctl(tmp_path):
    killed_capture(tmp_path)
    # The leak the issue saw: the next capture would take 14 as its baseline.
    assert (tmp_path / "sys" / "vm" / "dirty_ratio").read_text() == "14"
    lines: list[str] = []
    assert replay(tmp_path / "journal", lines.append, "boot-1", proc_sys=tmp_path / "sys")
    assert (tmp_path / "sys" / "vm" / "dirty_ratio").read_text() == "20"
    assert not list((tmp_path / "out").iterdir())
    assert not (tmp_path / "journal").exists()
    assert "did not finish" in lines[0]
    assert any("removed work directory" in ln for ln in lines)
    assert any("restored vm.dirty_ratio to 20 (was left at 14)" in ln for ln in lines)
    # Replayed once: a second look finds nothing.
    assert not replay(tmp_path / "journal", lines.append, "boot-1", proc_sys=tmp_path / "sys")


def test_after_a_reboot_only_the_work_directory_is_removed(tmp_path):
    killed_capture(tmp_path)
    (tmp_path / "sys" / "vm" / "dirty_ratio").write_text("30")  # what the new boot set
    lines: list[str] = []
    replay(tmp_path / "journal", lines.append, "boot-2", proc_sys=tmp_path / "sys")
    assert (tmp_path / "sys" / "vm" / "dirty_ratio").read_text() == "30"
    assert not list((tmp_path / "out").iterdir())


def test_a_step_that_cannot_be_undone_refuses_and_keeps_the_journal(tmp_path):
    killed_capture(tmp_path)
    (tmp_path / "sys" / "vm" / "dirty_ratio").unlink()
    with pytest.raises(InputError, match=r"cannot undo sysctl vm.dirty_ratio.*--recover"):
        replay(tmp_path / "journal", print, "boot-1", proc_sys=tmp_path / "sys")
    assert (tmp_path / "journal").exists()


KILLED_IN_WORKLOAD = """
import os, subprocess, sys
from pathlib import Path
from analysis.capture.journal import Journal
tmp = Path(sys.argv[1])
jr = Journal(tmp / "journal", os.getpid(), "boot-1", proc_sys=tmp / "sys")
jr.start()
cg, inst = tmp / "memory" / f"mmlab-{os.getpid()}", tmp / "instances" / f"mmlab-{os.getpid()}"
jr.cgroup(1, cg)
cg.mkdir(parents=True)
# Not on our stdout: the test reads it to its end, which would wait for the orphans.
quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "start_new_session": True}
workers = [subprocess.Popen(["sleep", "600"], **quiet) for _ in range(2)]
(cg / "cgroup.procs").write_text("".join(f"{w.pid}\\n" for w in workers))
jr.instance(inst)
inst.mkdir(parents=True)
print(cg, flush=True)
os.kill(os.getpid(), 9)
"""


def test_sigkill_mid_workload_leaves_nothing_once_replayed(tmp_path, kernel):
    """The dead capture's workers (now orphans) are killed: its cgroup proves they are its."""
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_IN_WORKLOAD, str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    cg = Path(proc.stdout.strip())
    kernel.append(cg / "cgroup.procs")
    orphans = [int(p) for p in (cg / "cgroup.procs").read_text().split()]
    lines: list[str] = []
    try:
        assert len(orphans) == 2 and all(Path(f"/proc/{p}").exists() for p in orphans)
        replay(tmp_path / "journal", lines.append, "boot-1", proc_sys=tmp_path / "sys")
    finally:  # never leave a sleep behind, whatever failed (and never kill a reused pid)
        for pid in orphans:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x00600\x00":
                    os.kill(pid, signal.SIGKILL)
    assert not cg.exists() and not list((tmp_path / "instances").iterdir())
    for pid in orphans:  # gone, or a zombie its new parent has not reaped yet
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().split()[2] == "Z"
    killed = next(ln for ln in lines if "removed memory cgroup" in ln)
    assert all(str(p) in killed for p in orphans)


def test_orphaned_workers_are_killed_and_every_leftover_reported_as_removed(tmp_path, kernel):
    instances, memory, out = tmp_path / "instances", tmp_path / "memory", tmp_path / "out"
    (instances / "mmlab-11").mkdir(parents=True)
    (instances / "mmlab-22").mkdir()  # its capture still runs
    (out / ".mmlab-work-11").mkdir(parents=True)
    (out / ".mmlab-work-11" / "writer-3").write_bytes(b"y" * 100)
    workers = [sleeper(), sleeper()]
    cg = memory / "mmlab-11"
    cg.mkdir(parents=True)
    (cg / "cgroup.procs").write_text("".join(f"{w.pid}\n" for w in workers))
    (cg / "memory.limit_in_bytes").write_text("67108864\n")
    kernel.append(cg / "cgroup.procs")
    reported: list[str] = []
    done = remove_stale(instances, (1, memory), [out], reported.append, alive=lambda p: p == 22)
    assert [w.wait(timeout=5) for w in workers] == [-signal.SIGKILL] * 2
    assert done == reported and len(done) == 3
    assert f"removed trace instance {instances / 'mmlab-11'}" in done[0]
    assert f"removed memory cgroup {cg} after killing its processes" in done[1]
    assert str(workers[0].pid) in done[1] and "pid 11 (no longer runs)" in done[1]
    assert f"removed work directory {out / '.mmlab-work-11'}" in done[2]
    assert sorted(p.name for p in instances.iterdir()) == ["mmlab-22"]
    assert not cg.exists() and not list(out.iterdir())


def test_a_leftover_that_cannot_go_refuses_after_reporting_what_went(tmp_path, kernel):
    instances, memory = tmp_path / "instances", tmp_path / "memory"
    (instances / "mmlab-11").mkdir(parents=True)
    (memory / "mmlab-12" / "child").mkdir(parents=True)  # a child cgroup: rmdir fails
    (memory / "mmlab-12" / "cgroup.procs").write_text("")
    reported: list[str] = []
    with pytest.raises(InputError, match=r"mmlab-12: left by capture pid 12.*remove it by hand"):
        remove_stale(instances, (1, memory), [], reported.append, alive=lambda p: False)
    assert len(reported) == 1 and "removed trace instance" in reported[0]


def test_a_dead_holders_pid_is_cleared(tmp_path):
    lock = tmp_path / "capture.lock"
    lock.write_text("999999\n")  # SIGKILLed holder: the kernel dropped its flock
    assert lock_holder(lock) is None
    assert lock.read_text() == ""
    with machine_lock(lock):
        assert lock_holder(lock) == str(os.getpid())
    assert lock_holder(tmp_path / "none.lock") is None


def test_out_is_created_only_once_the_lock_is_held(tmp_path, monkeypatch):
    lock = tmp_path / "capture.lock"
    monkeypatch.setattr(run, "preflight", lambda cfg: fake_pre(tmp_path))
    monkeypatch.setattr(run, "machine_lock", lambda: machine_lock(lock))
    cfg = CaptureConfig(out=tmp_path / "out", run="x", workers=(3,), limit_mb=64)
    with machine_lock(lock), pytest.raises(InputError, match="another mmlab capture"):
        run.capture(cfg)
    assert not cfg.out.exists()


def test_recover_replays_the_journal_then_removes_leftovers(tmp_path, monkeypatch, capsys, kernel):
    killed_capture(tmp_path)
    pre = fake_pre(tmp_path)
    (tmp_path / "tracing" / "instances" / "mmlab-999999").mkdir()
    monkeypatch.setattr(journal, "JOURNAL_PATH", tmp_path / "journal")
    monkeypatch.setattr(journal, "boot_id", lambda: "boot-1")
    monkeypatch.setattr(run.sysctl, "PROC_SYS", tmp_path / "sys")
    monkeypatch.setattr(run, "preflight_machine", lambda: pre)
    monkeypatch.setattr(run, "machine_lock", lambda: machine_lock(tmp_path / "lock"))
    assert cli.main(["capture", "--recover"]) == 0
    out, err = capsys.readouterr()
    assert out == "mmlab capture: recovered\n"
    assert "restored vm.dirty_ratio to 20" in err and "mmlab-999999" in err
    assert (tmp_path / "sys" / "vm" / "dirty_ratio").read_text() == "20"
    assert cli.main(["capture", "--recover"]) == 0
    assert capsys.readouterr().out == "mmlab capture: nothing to recover\n"


def test_the_benchmark_capture_takes_the_same_lock_and_naming(tmp_path, monkeypatch):
    """make bench's own capture: refused while a capture holds the machine lock, before
    it creates anything."""
    from benchmarks import ftrace_capture

    lock = tmp_path / "capture.lock"
    pre = fake_pre(tmp_path)
    monkeypatch.setattr(ftrace_capture, "preflight_machine", lambda: pre)
    monkeypatch.setattr(ftrace_capture, "machine_lock", lambda: machine_lock(lock))
    out = tmp_path / "work" / "capture.trace"
    with machine_lock(lock), pytest.raises(InputError, match="another mmlab capture"):
        ftrace_capture.record(out, target_bytes=1)
    assert not out.parent.exists()
    assert not list((tmp_path / "memory").iterdir())


def test_an_undo_that_fails_keeps_the_journal_and_says_so(tmp_path, monkeypatch):
    """A restore that cannot finish is one InputError naming the journal, which stays for
    --recover (not a traceback, not "state restored")."""
    monkeypatch.setattr(run, "check_machine", lambda cfg: None)
    monkeypatch.setattr(run, "preflight", lambda cfg: fake_pre(tmp_path))
    monkeypatch.setattr(run, "machine_lock", lambda: machine_lock(tmp_path / "lock"))
    monkeypatch.setattr(journal, "JOURNAL_PATH", tmp_path / "journal")
    monkeypatch.setattr(journal, "boot_id", lambda: "boot-1")

    def dies(cfg, pre, restorer, progress, tick, jr, stale):
        restorer.push("sysctls", lambda: (_ for _ in ()).throw(OSError("EBUSY")))
        raise Interrupted(signal.SIGHUP)

    monkeypatch.setattr(run, "_capture", dies)
    cfg = CaptureConfig(out=tmp_path / "out", run="x", workers=(3,), limit_mb=64)
    with pytest.raises(InputError, match=r"restore incomplete: sysctls: OSError: EBUSY.*--recover"):
        run.capture(cfg)
    assert (tmp_path / "journal").exists()


def test_an_interrupted_iteration_keeps_its_marker_and_is_named(tmp_path, monkeypatch):
    """The real capture_iteration on a fake instance and cgroup: SIGTERM during the first
    worker count leaves iter-0 marked incomplete (no mmlab.json), and capture() names it."""
    inst = tmp_path / "instance"
    inst.mkdir()
    for name in ("trace", "tracing_on"):
        (inst / name).write_text("")
    os.mkfifo(inst / "trace_pipe")
    cg = tmp_path / "memory" / "mmlab-1"
    cg.mkdir(parents=True)
    (cg / "memory.stat").write_text("cache 0\n")
    (cg / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    (cg / "memory.failcnt").write_text("0\n")
    cfg = CaptureConfig(out=tmp_path / "out", run="x", workers=(3,), limit_mb=64, interval_s=0.1)

    def launcher(self, spec, duration_s):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)

    monkeypatch.setattr(run.Session, "run_launcher", launcher)
    session = run.Session(
        cfg, MemCgroup(1, cg), TraceInstance(inst), tmp_path, [], Progress(), lambda p: None
    )
    plans = run.plans_for(cfg, 20)
    with pytest.raises(Interrupted), raise_on_signals():
        run.capture_iteration(session, plans, 0, {})
    it = cfg.out / "x" / "iter-0"
    assert (it / mmtests.INCOMPLETE).exists() and not (it / "mmlab.json").exists()
    assert (inst / "tracing_on").read_text() == "0"  # tracing stopped on the way out

    def interrupted(cfg_, pre, restorer, progress, tick, jr, stale):
        raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr(run, "check_machine", lambda c: None)
    monkeypatch.setattr(run, "preflight", lambda c: fake_pre(tmp_path / "machine"))
    monkeypatch.setattr(run, "machine_lock", lambda: machine_lock(tmp_path / "lock"))
    monkeypatch.setattr(journal, "JOURNAL_PATH", tmp_path / "journal")
    monkeypatch.setattr(journal, "boot_id", lambda: "boot-1")
    monkeypatch.setattr(run, "_capture", interrupted)
    with pytest.raises(Interrupted) as info:
        run.capture(cfg)
    assert info.value.incomplete == it
