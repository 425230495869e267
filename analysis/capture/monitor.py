"""Periodic monitors: mmtests' ``proc-vmstat`` shape, and PSI files copied verbatim.

One thread samples every source of an iteration each interval (mmtests' default 1 s):

- /proc/vmstat into ``proc-vmstat-<test>.gz`` and the capture cgroup's ``memory.stat``
  into ``memcg-stat-<test>.gz``: a ``time: <epoch seconds>`` line, then the file's text;
- /proc/pressure/memory into ``psi-memory`` and the cgroup's ``memory.pressure`` into
  ``cgroup-memory.pressure`` (plain text): a ``# t=<CLOCK_MONOTONIC seconds>`` line (the
  trace's clock), then the kernel's text verbatim (docs/capture.md "PSI files").
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CGROUP_PSI_FILE",
    "PSI_FILE",
    "PSI_MEMORY",
    "Monitor",
    "Stream",
    "psi_block",
    "sample_block",
]

PSI_MEMORY = Path("/proc/pressure/memory")
# Names of the PSI monitor files in an iteration directory (read by analysis.ingest).
PSI_FILE = "psi-memory"
CGROUP_PSI_FILE = "cgroup-memory.pressure"


def _ended(dump: str) -> str:
    return dump if dump.endswith("\n") else dump + "\n"


def sample_block(epoch_s: float, dump: str) -> str:
    """One monitor record: ``time: <epoch seconds>`` line followed by the file's text."""
    return f"time: {epoch_s:.3f}\n{_ended(dump)}"


def psi_block(mono_s: float, dump: str) -> str:
    """One PSI record: ``# t=<CLOCK_MONOTONIC seconds>`` then the kernel's text as read."""
    return f"# t={mono_s:.6f}\n{_ended(dump)}"


@dataclass(frozen=True)
class Stream:
    """One monitored file: samples of ``source`` appended to ``output`` (gzip if it ends
    ``.gz``), as :func:`psi_block` records if ``psi`` else :func:`sample_block`; ``key``
    names its sample count."""

    key: str
    source: Path
    output: Path
    psi: bool = False


class Monitor:
    """Sample each :class:`Stream` every ``interval_s`` on a background thread.

    A source that disappears (the cgroup removed while stopping) ends that stream quietly;
    ``samples`` counts records written per stream key.
    """

    def __init__(self, streams: list[Stream], interval_s: float = 1.0) -> None:
        self._streams = streams
        self._interval = interval_s
        # Closed in stop(): the files outlive this constructor by design.
        self._outs = [
            gzip.open(s.output, "wt", compresslevel=6)  # noqa: SIM115
            if s.output.suffix == ".gz"
            else open(s.output, "w")  # noqa: SIM115
            for s in streams
        ]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="monitor", daemon=True)
        self.samples = {s.key: 0 for s in streams}
        self.start_epoch: float | None = None

    def start(self) -> Monitor:
        self.start_epoch = time.time()
        self._thread.start()
        return self

    def sample(self) -> None:
        now = time.time()
        for stream, out in zip(self._streams, self._outs, strict=True):
            mono = time.clock_gettime(time.CLOCK_MONOTONIC)
            try:
                text = stream.source.read_text()
            except OSError:
                continue
            out.write(psi_block(mono, text) if stream.psi else sample_block(now, text))
            self.samples[stream.key] += 1

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stopping.is_set():
            self.sample()
            next_t += self._interval
            self._stopping.wait(max(0.0, next_t - time.monotonic()))

    def stop(self) -> None:
        """Take a last sample so the series ends at the stop time, then close the files."""
        self._stopping.set()
        self._thread.join(timeout=10)
        self.sample()
        for out in self._outs:
            out.close()
