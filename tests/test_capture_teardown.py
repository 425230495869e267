"""Issue 29 items 14-16, 18, 19: the capture leaves nothing behind. A second signal during
the teardown (real SIGINTs sent to a real capture process on the fake machine of
tests/fake_machine.py); coupled dirty sysctls; absolute journal paths; ``--set`` refused
before anything exists; tracefs unmounted (a real tracefs mount, as root)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.capture import journal, run, sysctl
from analysis.capture.journal import Journal, replay
from analysis.capture.run import CaptureConfig, Restorer
from analysis.errors import InputError
from analysis.ingest import mmtests
from tests.fake_machine import fake_machine, leftovers

REPO = Path(__file__).resolve().parent.parent

SIGNALLED_CAPTURE = """
import sys
from pathlib import Path
from analysis import cli
from tests.fake_machine import fake_machine
root = Path(sys.argv[1])
with fake_machine(root, slow_rmdir_s=0.3):
    argv = ["capture", str(root / "out"), "--run", "x", "--limit-mb", "64", "--interval",
            "0.1", "--set", "vm.swappiness=10", "--cwd", str(root), "--", "sleep", "600"]
    sys.exit(cli.main(argv))
"""


@pytest.mark.parametrize("second_after_s", [0.0, 0.1, 0.3, 0.7])
def test_a_second_ctrl_c_during_teardown_leaves_nothing(tmp_path, second_after_s):
    """SIGINT once the iteration runs, a second one ``second_after_s`` later (the fake's
    rmdirs take 0.3 s each, so the teardown is still going): everything is undone, the
    journal is gone, the iteration is marked, exit 130 naming it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGNALLED_CAPTURE, str(tmp_path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    it = tmp_path / "out" / "x" / "iter-0"
    deadline = time.monotonic() + 30
    while not (it / "command" / "logs" / "stdout").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # the sleep is running in the fake cgroup
    proc.send_signal(signal.SIGINT)
    time.sleep(second_after_s)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"interrupted by SIGINT; state restored; {it} is incomplete" in err
    assert leftovers(tmp_path) == []
    assert (tmp_path / "sys" / "vm" / "swappiness").read_text().strip() == "60"
    assert (it / mmtests.INCOMPLETE).exists()


def test_a_coupled_pair_is_restored_as_one(tmp_path):
    """vm.dirty_bytes set: the kernel zeroed dirty_ratio; restore writes dirty_ratio back
    (writing dirty_bytes=0 would be refused) and both originals return."""
    vm = tmp_path / "sys" / "vm"
    with fake_machine(tmp_path):
        changer = sysctl.SysctlChanger(root=tmp_path / "sys")
        changer.set("vm.dirty_bytes", str(64 << 20))
        assert (vm / "dirty_ratio").read_text().strip() == "0"
        changer.set("vm.dirty_ratio", "5")  # the twin again: the first originals stay
        changer.restore()
        with pytest.raises(OSError):  # what the old restore did
            (vm / "dirty_bytes").write_text("0")
    assert [(vm / n).read_text().strip() for n in ("dirty_ratio", "dirty_bytes")] == ["20", "0"]


def test_after_sigkill_the_journal_restores_a_coupled_pair(tmp_path):
    """The journal holds the pair; replay restores it (before: --recover failed every
    time, writing 0 to dirty_background_bytes, and every later capture refused to run)."""
    vm = tmp_path / "sys" / "vm"
    with fake_machine(tmp_path):
        jr = Journal(tmp_path / "journal", 1, "boot-1", proc_sys=tmp_path / "sys")
        jr.start()
        changer = sysctl.SysctlChanger(root=tmp_path / "sys", before_first_change=jr.sysctl)
        changer.set("vm.dirty_background_bytes", str(8 << 20))  # then SIGKILL: no restore
        lines: list[str] = []
        assert replay(tmp_path / "journal", lines.append, "boot-1", proc_sys=tmp_path / "sys")
    assert (vm / "dirty_background_ratio").read_text().strip() == "10"
    assert (vm / "dirty_background_bytes").read_text().strip() == "0"
    assert "restored vm.dirty_background_bytes/vm.dirty_background_ratio to 0/10" in lines[1]
    assert not (tmp_path / "journal").exists()


def test_the_journal_holds_absolute_paths(tmp_path, monkeypatch):
    """OUT given relative, the capture SIGKILLed, --recover run from another directory:
    the work directory is found and removed."""
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    jr = Journal(tmp_path / "journal", 1, "boot-1")
    jr.start()
    work = Path("out") / ".mmlab-work-1"
    jr.work_dir(work)
    work.mkdir(parents=True)
    (work / "writer-0").write_bytes(b"x" * 4096)
    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    replay(tmp_path / "journal", lines.append, "boot-1")
    assert not (tmp_path / "a" / "out" / ".mmlab-work-1").exists()
    assert f"removed work directory {tmp_path / 'a' / 'out' / '.mmlab-work-1'}" in lines[1]


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("vm.swappiness=999", "--set: vm.swappiness=999: the kernel refused it (Invalid argument)"),
        ("vm.swappiness=lots", "--set: vm.swappiness=lots: expected an integer (it holds 60)"),
        ("vm.read_only=1", "--set: vm.read_only is read-only"),
        ("vm.nope=1", "--set: no such sysctl vm.nope"),
        ("vm.dirty_bytes=0", "--set: vm.dirty_bytes=0: the kernel refuses 0"),
    ],
)
def test_a_set_the_kernel_refuses_creates_nothing(tmp_path, assignment, message):
    """A bad --set is one error naming the sysctl; OUT is never created, no journal is
    left, and the --set before it is restored."""
    with fake_machine(tmp_path):
        ro = tmp_path / "sys" / "vm" / "read_only"
        ro.write_text("1\n")
        ro.chmod(0o444)
        # Through capture() itself (the fake's preflight checks nothing), then the CLI.
        cfg = CaptureConfig(
            out=tmp_path / "out",
            run="x",
            limit_mb=64,
            sets=(("vm.dirty_ratio", "5"), sysctl.parse_assignment(assignment)),
            command=("true",),
            command_cwd=tmp_path,
        )
        with pytest.raises(InputError) as info:
            run.capture(cfg)
        assert str(info.value).startswith(message)
        assert leftovers(tmp_path) == [] and not cfg.out.exists()
        assert (tmp_path / "sys" / "vm" / "dirty_ratio").read_text().strip() == "20"


def test_the_sets_are_checked_in_preflight_before_the_lock(tmp_path, monkeypatch):
    (tmp_path / "vm").mkdir()
    (tmp_path / "vm" / "min_free_kbytes").write_text("67584\n")
    (tmp_path / "vm" / "min_free_kbytes").chmod(0o444)
    monkeypatch.setattr(sysctl, "PROC_SYS", tmp_path)
    with pytest.raises(InputError, match=r"vm\.min_free_kbytes is read-only"):
        sysctl.check_assignment("vm.min_free_kbytes", "1", sysctl.PROC_SYS)


@pytest.fixture
def tracefs_mountpoint(tmp_path):
    if os.geteuid() != 0 or "tracefs" not in Path("/proc/filesystems").read_text():
        pytest.skip("needs root and tracefs")
    point = tmp_path / "tracing"
    point.mkdir()
    yield point
    if journal.is_mounted(point):
        subprocess.run(["umount", str(point)], check=False)


def test_tracefs_the_capture_mounted_is_unmounted(tmp_path, tracefs_mountpoint):
    """A real tracefs mount (a second mount point of the kernel's tracefs): mounted by
    _prepare under the journal, unmounted by the teardown; after a SIGKILL, by replay."""
    point = tracefs_mountpoint
    pre = {"tracefs": point, "tracefs_mounted": False}
    cfg = CaptureConfig(out=tmp_path / "out", run="x")
    for how in ("teardown", "replay"):
        jr = Journal(tmp_path / "journal", os.getpid(), "boot-1")
        jr.start()
        restorer = Restorer()
        run._prepare(cfg, pre, restorer, jr)
        assert journal.is_mounted(point) and (point / "instances").is_dir()
        if how == "teardown":
            run._teardown(restorer, jr)
        else:  # as if SIGKILLed: nothing ran but the journal
            lines: list[str] = []
            replay(tmp_path / "journal", lines.append, "boot-1")
            assert f"unmounted tracefs at {point}" in lines[-1]
        assert not journal.is_mounted(point) and not (tmp_path / "journal").exists()
