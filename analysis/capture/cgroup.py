"""The capture's memory cgroup: find the controller, create, limit, kill, read OOM events, remove.

cgroup v2 (``memory.max``, ``memory.events``, ``cgroup.kill`` from 5.14) is used when the
unified hierarchy has the memory controller; otherwise the v1 memory hierarchy
(``memory.limit_in_bytes``, ``memory.oom_control``, ``tasks``). Both expose
``memory.stat``. Every path is relative to a root passed in, so tests run on a fake tree.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import InputError
from analysis.host import find_memory_hierarchy

__all__ = ["MemCgroup", "find_memory_hierarchy", "parse_flat_keyed"]


def parse_flat_keyed(text: str) -> dict[str, int]:
    """Parse a cgroup "flat keyed" file (``memory.stat``, ``memory.events``, ``oom_control``).

    Lines are ``key value``; values are integers (bytes or counts, per key).
    """
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


@dataclass(frozen=True)
class MemCgroup:
    """A memory cgroup this tool created at ``path`` (cgroup ``version`` 1 or 2)."""

    version: int
    path: Path

    @classmethod
    def create(cls, version: int, root: Path, name: str, limit_bytes: int) -> MemCgroup:
        """Create ``root/name`` with a hard memory limit; refuses a non-positive limit."""
        if limit_bytes <= 0:
            raise InputError(root / name, "a memory cgroup limit is mandatory")
        path = root / name
        if version == 2:
            _enable_memory_controller(root)
        path.mkdir()
        cg = cls(version, path)
        try:
            cg.set_limit(limit_bytes)
        except OSError:
            path.rmdir()
            raise
        return cg

    @property
    def procs_file(self) -> Path:
        """File a process writes its pid to in order to join (``cgroup.procs`` in both)."""
        return self.path / "cgroup.procs"

    @property
    def stat_file(self) -> Path:
        """``memory.stat``: per-cgroup page counts (v1 bytes keys like ``cache``/``rss``)."""
        return self.path / "memory.stat"

    def set_limit(self, limit_bytes: int) -> None:
        """Write the hard limit: v2 ``memory.max`` (``memory.swap.max`` 0), v1 limit_in_bytes."""
        if self.version == 2:
            (self.path / "memory.max").write_text(str(limit_bytes))
            swap_max = self.path / "memory.swap.max"
            if swap_max.exists():
                swap_max.write_text("0")
        else:
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))

    def limit_bytes(self) -> int:
        """The limit as the kernel rounded it (v1 rounds to pages; v2 prints ``max`` if unset)."""
        name = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        text = (self.path / name).read_text().strip()
        return -1 if text == "max" else int(text)

    def settings(self) -> dict[str, object]:
        """Every readable ``memory.*`` control file of the cgroup, as text, for metadata."""
        out: dict[str, object] = {"version": self.version, "path": str(self.path)}
        for f in sorted(self.path.glob("memory.*")):
            if f.name in {"memory.stat", "memory.numa_stat", "memory.kmem.slabinfo"}:
                continue
            try:
                out[f.name] = f.read_text().strip()
            except OSError:
                continue
        return out

    def oom_events(self) -> dict[str, int]:
        """OOM counters: v2 ``memory.events`` (oom, oom_kill, max, ...), v1 ``oom_control``.

        v1 ``memory.oom_control`` has ``oom_kill_disable``, ``under_oom`` and (4.13+)
        ``oom_kill``; ``memory.failcnt`` (times the limit was hit) is added as ``failcnt``.
        """
        if self.version == 2:
            return parse_flat_keyed((self.path / "memory.events").read_text())
        events = parse_flat_keyed((self.path / "memory.oom_control").read_text())
        events["failcnt"] = int((self.path / "memory.failcnt").read_text())
        return events

    def pids(self) -> list[int]:
        """Processes in the cgroup."""
        return [int(p) for p in self.procs_file.read_text().split()]

    def kill_all(self, timeout_s: float = 10.0) -> None:
        """SIGKILL every process in the cgroup and wait until it is empty.

        v2 since 5.14 has ``cgroup.kill``; otherwise (and on v1) the pids are killed one by
        one until none remain (a forking process may add pids between reads).
        """
        kill_file = self.path / "cgroup.kill"
        if self.version == 2 and kill_file.exists():
            kill_file.write_text("1")
        deadline = time.monotonic() + timeout_s
        while pids := self.pids():
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.path}: processes {pids} survive SIGKILL")
            time.sleep(0.05)

    def remove(self) -> None:
        """Kill what is left inside and remove the cgroup directory."""
        if not self.path.exists():
            return
        self.kill_all()
        # rmdir can fail with EBUSY briefly while the last task's exit is being accounted.
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.05)
        self.path.rmdir()


def _enable_memory_controller(root: Path) -> None:
    """v2 children get the memory controller only if the parent's subtree_control lists it."""
    control = root / "cgroup.subtree_control"
    if "memory" not in control.read_text().split():
        control.write_text("+memory")
