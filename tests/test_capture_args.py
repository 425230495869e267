"""Bad ``mmlab capture`` arguments are refused before anything on the machine changes.

Issue 8's list: ``--workers`` 1 or 2, ``--duration`` 0 or negative, ``--limit-mb`` 0 or
above half of MemAvailable, an output directory that exists and is not empty, one that
cannot be created. No test here runs a capture: the machine-changing steps are replaced
by functions that fail the test if they are ever reached.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analysis import cli
from analysis.capture import checks, run
from analysis.capture.metadata import memory_info
from analysis.capture.plan import MIB
from analysis.capture.run import CaptureConfig
from analysis.errors import InputError


@pytest.fixture(autouse=True)
def no_capture(monkeypatch):
    """Reaching preflight (root, tracefs, cgroups) or the machine lock fails the test."""

    def reached(*args, **kwargs):
        raise AssertionError("the capture went past argument checking")

    monkeypatch.setattr(run, "preflight", reached)
    monkeypatch.setattr(run, "machine_lock", reached)


def capture_cli(capsys, out: Path, *extra: str) -> tuple[int, str]:
    argv = ["capture", str(out), "--run", "x", "--iterations", "1", *extra]
    rc = cli.main(argv)
    err = capsys.readouterr().err
    return rc, err


def mem_available_mib() -> int:
    meminfo = memory_info(Path("/proc/meminfo").read_text())
    return meminfo["mem_available_kib"] * 1024 // MIB


@pytest.mark.parametrize(
    ("extra", "named", "reason"),
    [
        (["--workers", "1", "--limit-mb", "256"], "--workers", "must be >= 3"),
        (["--workers", "2", "--limit-mb", "256"], "--workers", "must be >= 3"),
        (["--workers", "4,2", "--limit-mb", "256"], "--workers", "got 2"),
        (["--workers", "3", "--duration", "0", "--limit-mb", "256"], "--duration", "> 0"),
        (["--workers", "3", "--duration", "-5", "--limit-mb", "256"], "--duration", "got -5"),
        (["--workers", "3", "--duration", "nan", "--limit-mb", "256"], "--duration", "finite"),
        (["--workers", "3", "--limit-mb", "0"], "--limit-mb", ">= 1, got 0"),
        (["--workers", "3", "--limit-mb", "-1"], "--limit-mb", "got -1"),
        (["--workers", "3", "--iterations", "0", "--limit-mb", "256"], "--iterations", "got 0"),
        (["--workers", "64", "--limit-mb", "64"], "--workers/--limit-mb", "raise --limit-mb"),
    ],
)
def test_bad_numbers_exit_2_with_one_line(capsys, tmp_path, extra, named, reason):
    rc, err = capture_cli(capsys, tmp_path / "out", *extra)
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith(f"mmlab capture: {named}: ")
    assert reason in err
    assert not (tmp_path / "out").exists(), "OUT is created only once the arguments are good"


def test_limit_above_half_of_mem_available(capsys, tmp_path):
    # The machine's MemAvailable itself: far enough above half that other jobs freeing
    # memory meanwhile cannot make it fit (the exact bound is checked below).
    too_big = mem_available_mib()
    rc, err = capture_cli(capsys, tmp_path / "out", "--workers", "3", "--limit-mb", str(too_big))
    assert rc == 2
    assert f"--limit-mb: {too_big} MiB is above half of MemAvailable" in err


def test_limit_cap_is_half_of_mem_available():
    cfg = CaptureConfig(out=Path("unused"), run="x", workers=(3,), limit_mb=512)
    (plan,) = checks.check_arguments(cfg, mem_available_bytes=1024 * MIB, dirty_ratio=20)
    assert (plan.workers, plan.writers, plan.hogs) == (3, 1, 1)
    with pytest.raises(InputError, match="above half of MemAvailable"):
        checks.check_arguments(cfg, mem_available_bytes=1024 * MIB - 2, dirty_ratio=20)


def test_dirty_ratio_from_set_or_proc(tmp_path):
    (tmp_path / "vm").mkdir()
    (tmp_path / "vm" / "dirty_ratio").write_text("20\n")
    (tmp_path / "vm" / "dirty_bytes").write_text("0\n")
    avail = 1000 * MIB
    assert checks.dirty_ratio_for((), avail, tmp_path) == 20
    assert checks.dirty_ratio_for((("vm.dirty_ratio", "5"),), avail, tmp_path) == 5
    with pytest.raises(InputError, match="must be an integer"):
        checks.dirty_ratio_for((("vm.dirty_ratio", "lots"),), avail, tmp_path)
    # vm.dirty_bytes in force (the kernel zeroed dirty_ratio): 50 MiB of 1000 MiB is 5 %,
    # 50 MiB + 1 byte rounds up to 6 %; the last --set of the pair wins, as in the kernel.
    sets = (("vm.dirty_ratio", "5"), ("vm.dirty_bytes", str(50 * MIB + 1)))
    assert checks.dirty_ratio_for(sets, avail, tmp_path) == 6
    assert checks.dirty_ratio_for(sets[::-1], avail, tmp_path) == 5
    (tmp_path / "vm" / "dirty_ratio").write_text("0\n")
    (tmp_path / "vm" / "dirty_bytes").write_text(f"{50 * MIB}\n")
    assert checks.dirty_ratio_for((), avail, tmp_path) == 5


def test_out_not_empty(capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    rc, err = capture_cli(capsys, out, "--workers", "3", "--limit-mb", "256")
    assert rc == 2
    assert f"mmlab capture: {out}: is not empty" in err and "notes.txt" in err


def test_out_run_exists(capsys, tmp_path):
    out = tmp_path / "out"
    (out / "x" / "iter-0").mkdir(parents=True)
    rc, err = capture_cli(capsys, out, "--workers", "3", "--limit-mb", "256")
    assert rc == 2
    assert f"{out / 'x'}: already exists" in err


def test_out_may_hold_other_runs(tmp_path):
    """mmtests keeps runs side by side (compare-vmstat OUT/a OUT/b): that is not "not empty"."""
    out = tmp_path / "out"
    (out / "dirty20" / "iter-0").mkdir(parents=True)
    checks.check_out(out, "dirty5")
    assert out.is_dir()


@pytest.mark.parametrize("where", ["under a file", "is a file"])
def test_out_cannot_be_created(capsys, tmp_path, where):
    blocker = tmp_path / "file"
    blocker.write_text("x\n")
    out = blocker / "out" if where == "under a file" else blocker
    rc, err = capture_cli(capsys, out, "--workers", "3", "--limit-mb", "256")
    assert rc == 2
    reason = "cannot be created: " if out != blocker else "is not a directory"
    assert f"mmlab capture: {out}: " in err and reason in err


@pytest.mark.parametrize("name", ["", "..", "a/b"])
def test_run_name_must_be_plain(tmp_path, name):
    with pytest.raises(InputError, match="plain directory name"):
        checks.check_out(tmp_path / "out", name)


def test_no_traceback_from_the_command(tmp_path):
    """The installed entry point: one line, status 2 (the only test that runs a process)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "analysis.cli",
            "capture",
            str(tmp_path / "o"),
            "--run",
            "x",
            "--workers",
            "2",
            "--limit-mb",
            "256",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "--workers: each worker count must be >= 3" in proc.stderr
