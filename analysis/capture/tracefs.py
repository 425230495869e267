"""tracefs: mount, a private instance, the reclaim event set, and streaming ``trace_pipe``.

A private instance (``instances/mmlab-<pid>``) has its own buffer, events, clock and
``tracing_on``, so other users of the machine's top-level buffer are left alone. Every
setting changed is saved first and put back by :meth:`TraceInstance.restore`.

The instance's clock is set to ``mono`` (CLOCK_MONOTONIC): a trace timestamp can then be
mapped to wall-clock time exactly from one simultaneous reading of both clocks.
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest.events import LEGACY_THROTTLE, NOISY

__all__ = [
    "TRACE_CLOCK",
    "TraceInstance",
    "TraceStreamer",
    "count_lost_events",
    "mount_tracefs",
    "reclaim_event_set",
    "tracefs_state",
    "unknown_events",
]

TRACEFS = Path("/sys/kernel/tracing")
TRACE_CLOCK = "mono"


def tracefs_state(root: Path = TRACEFS, mounts: Path = Path("/proc/mounts")) -> bool:
    """Whether tracefs is mounted at ``root`` (True) or can be (False: the capture mounts
    it, journalled, and unmounts it at its end); an InputError when the kernel has none."""
    if (root / "instances").is_dir():
        return True
    if "tracefs" not in Path("/proc/filesystems").read_text():
        raise InputError("/proc/filesystems", "kernel has no tracefs (CONFIG_TRACING off?)")
    if str(root) in mounts.read_text():
        raise InputError(root, "tracefs mounted but has no instances directory")
    return False


def mount_tracefs(root: Path = TRACEFS) -> None:
    """Mount tracefs at ``root`` (:func:`tracefs_state` said it is not mounted)."""
    subprocess.run(["mount", "-t", "tracefs", "nodev", str(root)], check=True)
    if not (root / "instances").is_dir():
        raise InputError(root, "tracefs mounted but has no instances directory")


def reclaim_event_set(events_dir: Path, include: tuple[str, ...] = ()) -> list[str]:
    """``system/event`` names to enable: all vmscan, all compaction, legacy writeback waits.

    ``mm_vmscan_lru_isolate`` is left out unless named in ``include``. Only events the
    running kernel has are returned, sorted.
    """
    chosen: list[str] = []
    for system in ("vmscan", "compaction"):
        sysdir = events_dir / system
        if not sysdir.is_dir():
            continue
        for ev in sorted(p.name for p in sysdir.iterdir() if p.is_dir()):
            if ev in NOISY and ev not in include:
                continue
            chosen.append(f"{system}/{ev}")
    for ev in LEGACY_THROTTLE:
        if (events_dir / "writeback" / ev).is_dir():
            chosen.append(f"writeback/{ev}")
    for ev in include:
        if "/" in ev and ev not in chosen and (events_dir / ev).is_dir():
            chosen.append(ev)
    return chosen


def unknown_events(events_dir: Path, include: tuple[str, ...]) -> list[str]:
    """Names in ``include`` (``--events``) that :func:`reclaim_event_set` could not enable:
    a ``system/event`` without a directory under ``events_dir``, or a bare name that is not
    a vmscan or compaction event of the running kernel."""
    return [
        ev
        for ev in include
        if not (
            (events_dir / ev).is_dir()
            if "/" in ev
            else any((events_dir / system / ev).is_dir() for system in ("vmscan", "compaction"))
        )
    ]


@dataclass
class TraceInstance:
    """A tracefs instance directory and the settings saved before this tool changed them."""

    path: Path
    created: bool = False
    saved: dict[str, str] = field(default_factory=dict)
    saved_events: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, tracefs: Path, name: str) -> TraceInstance:
        """mkdir ``instances/<name>``: the kernel populates it with a fresh, empty buffer."""
        path = tracefs / "instances" / name
        path.mkdir()
        return cls(path=path, created=True)

    def read(self, name: str) -> str:
        return (self.path / name).read_text().strip()

    def _set(self, name: str, value: str) -> None:
        """Write a control file, saving its first-seen value for :meth:`restore`."""
        if name not in self.saved:
            self.saved[name] = _current_choice(self.read(name))
        (self.path / name).write_text(value)

    def configure(self, events: list[str], buffer_kb: int) -> None:
        """Stop tracing, set clock and per-CPU buffer size, enable ``events``, clear the buffer."""
        self._set("tracing_on", "0")
        self._set("trace_clock", TRACE_CLOCK)
        self._set("buffer_size_kb", str(buffer_kb))
        for ev in events:
            enable = self.path / "events" / ev / "enable"
            self.saved_events.setdefault(ev, enable.read_text().strip())
            enable.write_text("1")
        (self.path / "trace").write_text("")

    def follow(self, pids: list[int]) -> None:
        """Trace only events of ``pids`` and (with ``options/event-fork``) their descendants.

        Events are system-wide otherwise: other users' workloads doing memcg reclaim in
        their own cgroups would land in this capture. Exited pids leave the list by themselves.
        """
        self._set("options/event-fork", "1")
        self.saved.setdefault("set_event_pid", " ".join(self.read("set_event_pid").split()))
        # O_APPEND adds to the list (no O_TRUNC); Python's "a" mode seeks, which tracefs rejects.
        fd = os.open(self.path / "set_event_pid", os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, " ".join(str(p) for p in pids).encode() + b"\n")
        finally:
            os.close(fd)

    def state(self) -> dict[str, str]:
        """Settings this tool touches plus the enabled-events list, for before/after checks."""
        names = ("tracing_on", "trace_clock", "buffer_size_kb", "options/event-fork")
        out = {n: _current_choice(self.read(n)) for n in names}
        out["set_event_pid"] = " ".join(sorted(self.read("set_event_pid").split()))
        out["set_event"] = "\n".join(sorted(self.read("set_event").splitlines()))
        return out

    def restore(self) -> None:
        """Put back every saved setting (events off first, then tracing_on last)."""
        for ev, value in self.saved_events.items():
            (self.path / "events" / ev / "enable").write_text(value)
        if "set_event_pid" in self.saved:
            # Truncating clears the list; the saved pids (usually none) are added back.
            (self.path / "set_event_pid").write_text(self.saved["set_event_pid"])
        for name in ("options/event-fork", "trace_clock", "buffer_size_kb", "tracing_on"):
            if name in self.saved:
                (self.path / name).write_text(self.saved[name])
        self.saved_events.clear()
        self.saved.clear()

    def remove(self) -> None:
        """Remove the instance if this tool created it (the kernel frees its buffer)."""
        if self.created and self.path.exists():
            self.path.rmdir()

    def overruns(self) -> dict[int, int]:
        """Events lost to ring-buffer overrun per CPU (``per_cpu/cpuN/stats`` ``overrun``)."""
        out: dict[int, int] = {}
        for stats in sorted((self.path / "per_cpu").glob("cpu*/stats")):
            for line in stats.read_text().splitlines():
                if line.startswith("overrun:"):
                    out[int(stats.parent.name[3:])] = int(line.split()[1])
        return out


def reclaim_daemon_pids(proc: Path = Path("/proc")) -> dict[int, str]:
    """Pids of kswapdN and kcompactdN: their reclaim/compaction events belong in the capture."""
    out: dict[int, str] = {}
    for comm_file in proc.glob("[0-9]*/comm"):
        try:
            comm = comm_file.read_text().strip()
        except OSError:
            continue
        if comm.startswith(("kswapd", "kcompactd")):
            out[int(comm_file.parent.name)] = comm
    return out


def _current_choice(text: str) -> str:
    """The selected value of a tracefs choice file: ``[mono]`` in ``local global [mono]``.

    ``buffer_size_kb`` of an instance whose per-CPU sizes differ reads ``X``; it is kept
    as text (writing it back would fail, so callers only restore what they saved).
    """
    if "[" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text.split(" (")[0]


def count_lost_events(chunk: bytes) -> tuple[int, int]:
    """Count ``CPU:N [LOST M EVENTS]`` lines in a trace_pipe chunk: (lines, events lost).

    Since ~5.7 the count can be absent (``[LOST EVENTS]``): that line counts, events do not.
    """
    lines = events = 0
    start = 0
    while (i := chunk.find(b"[LOST ", start)) != -1:
        lines += 1
        end = chunk.find(b"]", i)
        words = chunk[i + 6 : end].split()
        if words and words[0].isdigit():
            events += int(words[0])
        start = end + 1 if end != -1 else i + 6
    return lines, events


class TraceStreamer:
    """Copy ``trace_pipe`` into a compressed file on a thread until :meth:`stop` drains it.

    ``sink`` is a writable binary file (a zstd/gzip stream writer). Lost-event lines are
    kept in the stream and counted (``lost_lines``, ``lost_events``). A chunk may split a
    ``[LOST N EVENTS]`` line; the tail of each chunk is carried over to count it once.
    """

    def __init__(self, pipe: Path, sink) -> None:
        self._fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        self._sink = sink
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trace_pipe", daemon=True)
        self.bytes_in = 0
        self.lost_lines = 0
        self.lost_events = 0
        self.error: BaseException | None = None
        self._carry = b""

    def start(self) -> TraceStreamer:
        self._thread.start()
        return self

    def _consume(self, data: bytes) -> None:
        self._sink.write(data)
        self.bytes_in += len(data)
        cut = data.rfind(b"\n") + 1
        lines, events = count_lost_events(self._carry + data[:cut])
        self.lost_lines += lines
        self.lost_events += events
        self._carry = data[cut:] if cut else self._carry + data

    def _read_available(self) -> bool:
        """Read until the pipe would block; True if anything was read."""
        got = False
        while True:
            try:
                data = os.read(self._fd, 1 << 20)
            except BlockingIOError:
                return got
            if not data:
                return got
            got = True
            self._consume(data)

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                select.select([self._fd], [], [], 0.2)
                self._read_available()
            # Drain: tracing is already off, so what remains is finite.
            deadline = time.monotonic() + 5.0
            while self._read_available() and time.monotonic() < deadline:
                pass
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        """Drain what is left, stop the thread and close the pipe (not the sink)."""
        self._stopping.set()
        self._thread.join(timeout=15)
        os.close(self._fd)
        if self.error is not None:
            raise self.error
