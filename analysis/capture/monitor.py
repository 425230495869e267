"""Periodic monitors in mmtests' ``proc-vmstat`` shape: ``time: <epoch>`` then a full dump.

One thread samples /proc/vmstat into ``proc-vmstat-<test>.gz`` and the capture cgroup's
``memory.stat`` into ``memcg-stat-<test>.gz`` every interval (mmtests' default 1 s).
"""

from __future__ import annotations

import gzip
import threading
import time
from pathlib import Path

__all__ = ["Monitor", "sample_block"]


def sample_block(epoch_s: float, dump: str) -> str:
    """One monitor record: ``time: <epoch seconds>`` line followed by the file's text."""
    if not dump.endswith("\n"):
        dump += "\n"
    return f"time: {epoch_s:.3f}\n{dump}"


class Monitor:
    """Sample each ``source -> output.gz`` pair every ``interval_s`` on a background thread.

    A source that disappears (the cgroup removed while stopping) ends that stream quietly;
    ``samples`` counts records written per output.
    """

    def __init__(self, pairs: list[tuple[Path, Path]], interval_s: float = 1.0) -> None:
        self._pairs = pairs
        self._interval = interval_s
        # Closed in stop(): the files outlive this constructor by design.
        self._outs = [gzip.open(out, "wt", compresslevel=6) for _, out in pairs]  # noqa: SIM115
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="monitor", daemon=True)
        self.samples = [0] * len(pairs)
        self.start_epoch: float | None = None

    def start(self) -> Monitor:
        self.start_epoch = time.time()
        self._thread.start()
        return self

    def sample(self) -> None:
        now = time.time()
        for i, (src, _) in enumerate(self._pairs):
            try:
                text = src.read_text()
            except OSError:
                continue
            self._outs[i].write(sample_block(now, text))
            self.samples[i] += 1

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
