"""The user's own command as a capture's workload (``mmlab capture OUT --run NAME -- CMD``).

A shell joins the capture's memory cgroup and ``exec``s the command (so the command and
everything it starts is charged to the cgroup, under its limit, and traced by pid), in the
directory the capture was started from (``--cwd``), with the environment of the capture
plus :data:`METRICS_ENV`: the path where the command may write its own results, one
``<name> <value> <unit> [higher|lower]`` line each (docs/capture.md "Your own command").
Its stdout and stderr go to ``<iteration>/command/logs/stdout`` and ``stderr``.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "COMMAND_TEST",
    "METRICS_ENV",
    "METRICS_FILE",
    "Ended",
    "describe_status",
    "start_command",
    "wait_child",
]

# The iteration's test name (tests-timestamp, the <test>/logs directory).
COMMAND_TEST = "command"
METRICS_ENV = "MMLAB_METRICS"
METRICS_FILE = "metrics"


@dataclass(frozen=True)
class Ended:
    """How a child the capture waited for ended: its ``Popen.returncode`` (negative: killed
    by that signal), its own and its waited-for children's CPU seconds (``wait4``'s
    rusage), and whether the capture killed it for running past ``timeout_s``."""

    returncode: int
    user_s: float
    system_s: float
    timed_out: bool


def describe_status(returncode: int) -> str:
    """``exit 3`` or the signal's name (``SIGKILL``) of a ``Popen.returncode``."""
    if returncode < 0:
        return signal.Signals(-returncode).name
    return f"exit {returncode}"


def wait_child(proc: subprocess.Popen, timeout_s: float, tick: Callable[[], None]) -> Ended:
    """Wait for ``proc``, calling ``tick`` ~4x/s; SIGKILL its process group after
    ``timeout_s``. Sets ``proc.returncode``."""
    deadline = time.monotonic() + timeout_s
    timed_out = False
    # A pidfd turns readable the moment the child exits: its end time is not rounded up
    # to the next tick (the command's elapsed time is a result).
    pidfd = os.pidfd_open(proc.pid)
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            tick()
            select.select([pidfd], [], [], 0.25)
    finally:
        os.close(pidfd)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Ended(proc.returncode, usage.ru_utime, usage.ru_stime, timed_out)


def start_command(
    procs_file: Path, argv: tuple[str, ...], cwd: Path, logs: Path, metrics: Path
) -> subprocess.Popen:
    """Start ``argv`` in the cgroup whose ``cgroup.procs`` is ``procs_file``; its output
    into ``logs``; :data:`METRICS_ENV` set to ``metrics``."""
    env = {**os.environ, METRICS_ENV: str(metrics)}
    script = 'echo $$ > "$1" && shift && exec "$@"'
    with open(logs / "stdout", "wb") as out, open(logs / "stderr", "wb") as err:
        return subprocess.Popen(
            ["/bin/sh", "-c", script, "sh", str(procs_file), *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
