"""``mmlab capture OUT --run NAME -- CMD`` (issue 30 item 1) and a failed workload (issue 29
item 17), on the fake machine of tests/fake_machine.py: the command is a real ``sh``
line; its exit status, elapsed time and metrics file reach ``mmlab compare``; a command
or a worker that fails makes a failed iteration, left out of analyses with its reason."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis import cli
from analysis.capture import run, workload
from analysis.capture.run import CaptureConfig, WorkloadFailed
from analysis.ingest import benchmarks, mmtests
from tests.fake_machine import fake_machine, leftovers


def config(root: Path, name: str, script: str, **kw) -> CaptureConfig:
    return CaptureConfig(
        out=root / "out",
        run=name,
        limit_mb=64,
        interval_s=0.1,
        command=("sh", "-c", script),
        command_cwd=root,
        **kw,
    )


def test_a_command_run_is_captured_and_compared(tmp_path, monkeypatch, capsys):
    """Two runs of a command that sleeps 0.2 s and 0.6 s: compare reads their elapsed
    times (within scheduling noise of the sleeps) and the metric each wrote."""
    monkeypatch.setenv(mmtests.INCLUDE_INCOMPLETE, "0")
    line = 'sleep {s}; printf "# mine\\nrate {r} MB/s higher\\n" > "$MMLAB_METRICS"'
    with fake_machine(tmp_path) as root:
        fast = run.capture(config(root, "fast", line.format(s=0.2, r=30), iterations=3))
        slow = run.capture(config(root, "slow", line.format(s=0.6, r=10), iterations=3))
        assert leftovers(root) == []
    for metas, sleep in ((fast, 0.2), (slow, 0.6)):
        for m in metas:
            (ph,) = m.document["phases"]
            assert (ph["exit_status"], ph["ended"], m.document["failed"]) == (0, "exit 0", [])
            assert sleep <= ph["elapsed_s"] < sleep + 0.5
            assert ph["metrics_file"] == "command/logs/metrics"
    loaded = benchmarks.load_runs([tmp_path / "out" / "fast", tmp_path / "out" / "slow"])
    rows = loaded.table.group_by("kernel", "row").agg("value", "unit").sort("kernel", "row")
    got = {(k, r): (sorted(v), u[0]) for k, r, v, u in rows.iter_rows()}
    assert got[("fast", "rate")] == ([30.0] * 3, "MB/s")
    assert got[("slow", "rate")] == ([10.0] * 3, "MB/s")
    # tests-timestamp has two decimals: elapsed agrees with mmlab.json within 0.01 s.
    json_elapsed = sorted(m.phases[0].elapsed_s for m in slow)
    assert all(
        abs(a - b) <= 0.01 for a, b in zip(got[("slow", "elapsed")][0], json_elapsed, strict=True)
    )
    out = tmp_path / "out"
    capsys.readouterr()
    assert cli.main(["compare", str(out / "fast"), str(out / "slow"), "--json"]) == 0
    compared = {r["row"]: r for r in json.loads(capsys.readouterr().out)}
    assert compared["rate"]["higher_is_better"] and not compared["elapsed"]["higher_is_better"]
    assert compared["rate"]["change"] == pytest.approx(100 * (10 / 30 - 1))
    # 3 runs each of 0.2 s against 0.6 s sleeps: the slow run's elapsed is about 3x.
    elapsed = compared["elapsed"]
    assert 2 < elapsed["estimate"]["estimate"] / elapsed["base_estimate"]["estimate"] < 3.5


def test_a_failing_command_fails_its_iteration_and_the_capture(tmp_path, monkeypatch, capsys):
    """The second iteration's command exits 3: capture stops, exit 1 naming it, state
    restored; the iteration stays, marked, and analyses leave it out saying why."""
    monkeypatch.setenv(mmtests.INCLUDE_INCOMPLETE, "0")
    script = "[ -e flag ] && exit 3; touch flag"
    with fake_machine(tmp_path) as root:
        cfg = config(root, "x", script, iterations=3)
        with pytest.raises(WorkloadFailed) as info:
            run.capture(cfg)
        assert leftovers(root) == []
        assert info.value.reasons == ["the command ended exit 3"]
        (root / "flag").unlink()
        argv = ["capture", str(root / "out"), "--run", "y", "--limit-mb", "64", "--iterations"]
        assert cli.main([*argv, "2", "--cwd", str(root), "--", "sh", "-c", script]) == 1
        assert leftovers(root) == []
    err = capsys.readouterr().err
    assert "iter-1: the workload failed: the command ended exit 3; state restored" in err
    it = tmp_path / "out" / "x" / "iter-1"
    assert (it / mmtests.INCOMPLETE).read_text().startswith(mmtests.FAILED_PREFIX)
    assert json.loads((it / "mmlab.json").read_text())["workload_rc"] == 3
    assert not (tmp_path / "out" / "x" / "iter-2").exists()
    (found,) = mmtests.find_runs(tmp_path / "out" / "x")
    assert [i.index for i in found.iterations] == [0]
    err = capsys.readouterr().err
    assert f"left out {it}: its workload failed (the command ended exit 3" in err


FULL_DISK_WORKER = """
import os, sys
from analysis.capture import workload
def fill():
    with open("/dev/full", "wb", buffering=0) as f:
        f.write(b"x" * 4096)
pid = workload._fork(fill)
_, status = os.waitpid(pid, 0)
print(pid, os.waitstatus_to_exitcode(status))
"""


def test_a_writer_dying_of_enospc_is_a_failure_with_its_reason():
    """A real forked worker writing to /dev/full (ENOSPC, as a full OUT gives): it exits 1
    and says why on stderr, which the capture turns into the failure's reason."""
    proc = subprocess.run(
        [sys.executable, "-c", FULL_DISK_WORKER], capture_output=True, text=True, check=True
    )
    pid, code = proc.stdout.split()
    errors = workload.worker_errors(proc.stderr)
    assert code == "1" and "No space left on device" in errors[pid]
    phase = {
        "workers": 4,
        "workers_ended": [
            {"pid": int(pid), "role": "writer", "ended": "exit 1"},
            {"pid": 7, "role": "hog", "ended": "exit 0"},
            {"pid": 8, "role": "probe", "ended": "SIGKILL"},  # OOM-killed: a warning
        ],
        "worker_errors": errors,
        "launcher_rc": 0,
    }
    (reason,) = run.workload_failures([phase])
    assert reason.startswith(f"4 workers: writer pid {pid} ended exit 1 (OSError: [Errno 28]")
    assert run.workload_failures([{**phase, "workers_ended": phase["workers_ended"][1:]}]) == []
    crashed = {**phase, "workers_ended": [], "launcher_rc": 1, "launcher_stderr": "KeyError: 'x'"}
    assert run.workload_failures([crashed]) == [
        "4 workers: the launcher ended exit 1 (KeyError: 'x')"
    ]


def test_the_command_after_double_dash_is_parsed_whole(tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(run, "capture", lambda cfg, *a: seen.update(cfg=cfg) or [])
    argv = ["capture", str(tmp_path / "o"), "--run", "x", "--limit-mb", "64", "--"]
    assert cli.main([*argv, "python3", "-c", "print(1)", "--limit-mb", "5", "--", "-x"]) == 0
    cfg = seen["cfg"]
    assert cfg.command == ("python3", "-c", "print(1)", "--limit-mb", "5", "--", "-x")
    assert cfg.limit_mb == 64 and cfg.command_cwd == Path.cwd()


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--", "no-such-program-mmlab"], "no-such-program-mmlab: no such executable"),
        (["--timeout", "0", "--", "true"], "--timeout: must be a finite number > 0"),
        (["--cwd", "/nonexistent-mmlab", "--", "true"], "--cwd: /nonexistent-mmlab is not"),
        (["--timeout", "5"], "--cwd/--timeout/--beside: apply to a command"),
    ],
)
def test_a_bad_command_is_refused_before_anything(tmp_path, capsys, monkeypatch, argv, named):
    monkeypatch.setattr(run, "preflight", lambda cfg: pytest.fail("went past the checks"))
    base = ["capture", str(tmp_path / "o"), "--run", "x", "--limit-mb", "64"]
    assert cli.main([*base, *argv]) == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_psi_files_are_copied_verbatim_with_the_monotonic_time(tmp_path):
    """The PSI monitor's format (docs/capture.md "PSI files"): '# t=<CLOCK_MONOTONIC s>'
    then the kernel's text as read."""
    from analysis.capture.monitor import Monitor, Stream

    src = tmp_path / "memory"
    text = (
        "some avg10=1.00 avg60=0.50 avg300=0.10 total=123\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=4\n"
    )
    src.write_text(text)
    t0 = time.clock_gettime(time.CLOCK_MONOTONIC)
    mon = Monitor([Stream("psi", src, tmp_path / "psi-memory", psi=True)], 0.05).start()
    time.sleep(0.2)
    mon.stop()
    t1 = time.clock_gettime(time.CLOCK_MONOTONIC)
    lines = (tmp_path / "psi-memory").read_text().splitlines()
    stamps = [float(ln.removeprefix("# t=")) for ln in lines[::3]]
    assert len(lines) == 3 * mon.samples["psi"] and mon.samples["psi"] >= 4
    assert all(t0 <= t <= t1 for t in stamps) and stamps == sorted(stamps)
    assert all("\n".join(lines[i + 1 : i + 3]) + "\n" == text for i in range(0, len(lines), 3))


def test_command_metrics_file_lines_that_are_not_metrics_are_named(tmp_path):
    from analysis.ingest.mmtests_logs import command_logs

    (tmp_path / "metrics").write_text("# c\nrate 3 MB/s higher\nlat 2.5 ms\nbad x ms\nnan nan s\n")
    got = command_logs(tmp_path)
    assert [(r, v, d.unit, d.higher_is_better) for r, v, d in got.samples] == [
        ("rate", 3.0, "MB/s", True),
        ("lat", 2.5, "ms", False),
    ]
    assert [n.split(": ")[0] for n in got.notes] == [
        f"{tmp_path}/metrics:4",
        f"{tmp_path}/metrics:5",
    ]


FAKE_LAUNCHER = 'echo $$ > "$1"; sleep 0.4; echo \'{"children": []}\''


def test_beside_runs_the_built_in_phases_while_the_command_runs(tmp_path, monkeypatch):
    """--beside: the built-in workload's phase (here a stand-in launcher in the fake
    cgroup: no memory is allocated outside a real limit) runs while the command runs;
    the phase's cleanup spares the command, and both tests are timed."""

    def launch(cg, spec, spec_path):
        return subprocess.Popen(
            ["/bin/sh", "-c", FAKE_LAUNCHER, "sh", str(cg.procs_file)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    monkeypatch.setattr(run, "launch", launch)
    monkeypatch.setattr(run.Session, "idle_probe", lambda self: {})
    with fake_machine(tmp_path) as root:
        cfg = config(
            root,
            "x",
            "sleep 0.8",
            workers=(3,),
            duration_s=0.4,
            probe_s=0.1,
            beside=True,
            iterations=1,
        )
        (meta,) = run.capture(cfg)
        assert leftovers(root) == []
    stutterp, command = meta.document["phases"]
    assert command["ended"] == "exit 0" and command["elapsed_s"] >= 0.8
    assert command["start_epoch_s"] < stutterp["start_epoch_s"] < command["end_epoch_s"]
    assert stutterp["end_epoch_s"] < command["end_epoch_s"]
    (found,) = mmtests.find_runs(tmp_path / "out" / "x")
    (it,) = found.iterations
    assert it.tests == ["stutterp", "command"]
    assert it.times["command"].elapsed_s == pytest.approx(command["elapsed_s"], abs=0.01)
