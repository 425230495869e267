"""Record a real reclaim trace for the ingest benchmark when ``mmlab capture`` is unavailable.

A private tracefs instance (never the shared top-level buffer) records every vmscan and
compaction event, including ``mm_vmscan_lru_isolate`` for volume, while a file writer
(``dd``) and an anonymous-memory hog run inside a memory cgroup with a hard limit, so
only that cgroup is under pressure. ``trace_pipe`` is streamed to disk until the file
reaches the requested size. The instance uses the ``mono`` trace clock, so the ``.start``
file can hold both the epoch (line 1) and the trace clock at that instant (line 2).
Instance and cgroup are removed afterwards, whatever happens: like ``mmlab capture`` it
holds the machine lock, first removes what dead captures left, names its instance, cgroup and
scratch directory ``mmlab-<pid>`` / ``.mmlab-work-<pid>`` (so a killed benchmark's leftovers
are removed by the next capture or ``mmlab capture --recover``) and unwinds on SIGINT,
SIGTERM, SIGHUP and SIGQUIT.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from analysis.capture.cgroup import MemCgroup
from analysis.capture.run import (
    WORK_PREFIX,
    machine_lock,
    preflight_machine,
    raise_on_signals,
    recover,
)

EVENTS = ("vmscan", "compaction")

# Anonymous hog: keeps ~500 MB resident and re-touches it, so reclaim must keep
# evicting the writer's page cache while the hog's pages (no swap) stay pinned.
HOG = (
    "import mmap, time\n"
    "m = mmap.mmap(-1, 500 << 20)\n"
    "while True:\n"
    "    for i in range(0, len(m), 4096):\n"
    "        m[i] = (m[i] + 1) % 256\n"
    "    time.sleep(0.05)\n"
)


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def record(out: Path, *, target_bytes: int, limit_mb: int = 768, timeout_s: float = 900) -> Path:
    """Record ``trace_pipe`` text to ``out`` until it holds ``target_bytes``; return ``out``."""
    pre = preflight_machine()
    with raise_on_signals(), machine_lock():
        recover(pre, [out.parent])
        return _record(pre, out, target_bytes, limit_mb, timeout_s)


def _record(pre: dict, out: Path, target_bytes: int, limit_mb: int, timeout_s: float) -> Path:
    name = f"mmlab-{os.getpid()}"
    instance = pre["tracefs"] / "instances" / name
    scratch = out.parent / f"{WORK_PREFIX}{os.getpid()}"
    out.parent.mkdir(parents=True, exist_ok=True)
    cg = MemCgroup.create(pre["cgroup_version"], pre["cgroup_root"], name, limit_mb << 20)
    instance.mkdir()
    procs: list[subprocess.Popen] = []
    try:
        _write(instance / "buffer_size_kb", "65536")
        _write(instance / "trace_clock", "mono")
        for system in EVENTS:
            _write(instance / "events" / system / "enable", "1")
        # Line 1 epoch seconds, line 2 the mono trace clock (ns) at the same instant.
        start = out.with_name(out.name + ".start")
        start.write_text(f"{time.time():.6f}\n{time.clock_gettime_ns(time.CLOCK_MONOTONIC)}\n")
        with out.open("wb") as sink:
            reader = subprocess.Popen(["cat", str(instance / "trace_pipe")], stdout=sink)
            procs.append(reader)
            join = f"echo $$ > {cg.procs_file} && exec "
            procs.append(subprocess.Popen(["sh", "-c", join + f"{sys.executable} -c '{HOG}'"]))
            time.sleep(2)
            writer = (
                f"mkdir -p {scratch}; while true; do "
                f"dd if=/dev/zero of={scratch}/x bs=1M count=4000 status=none; done"
            )
            procs.append(subprocess.Popen(["sh", "-c", join + f"sh -c '{writer}'"]))
            deadline = time.monotonic() + timeout_s
            while out.stat().st_size < target_bytes and time.monotonic() < deadline:
                time.sleep(1)
    finally:
        for system in EVENTS:
            with contextlib.suppress(OSError):
                _write(instance / "events" / system / "enable", "0")
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
            proc.wait()
        # dd and its shell may outlive the killed wrapper: remove kills what is left.
        cg.remove()
        instance.rmdir()
        shutil.rmtree(scratch, ignore_errors=True)
    return out


if __name__ == "__main__":
    record(Path(sys.argv[1]), target_bytes=int(sys.argv[2]) << 20)
