"""An on-disk journal of what a capture changed, so a capture killed by SIGKILL is undone.

A capture writes one JSON line here *before* each change to the machine: the original value
of a sysctl (and of its coupled twin, :data:`~analysis.capture.sysctl.COUPLED`) before
``--set`` writes it, the mount point of tracefs before it mounts it, the absolute path of
its memory cgroup, trace instance and work directory before it creates them. A capture
that ends in any way Python sees (normal exit, exception, SIGINT/SIGTERM/SIGHUP/SIGQUIT)
undoes everything itself and deletes the journal. After SIGKILL (or an OOM kill, or a lost
container) the journal stays; the next capture, or ``mmlab capture --recover``, replays it
under the machine lock: sysctls (a coupled pair as one) get their original values back,
the cgroup's processes are killed and the cgroup, instance and work directory removed,
tracefs unmounted if the capture mounted it, each step reported as it happens. Until every
step has succeeded the journal is kept and no new capture starts.

The boot id is recorded: after a reboot the sysctls, cgroups and trace instances of the
journal no longer exist (the kernel started afresh), so only the work directory, which is
on disk, is still removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from analysis.capture.cgroup import MemCgroup
from analysis.capture.sysctl import coupled_group, restore_group, sysctl_path
from analysis.errors import InputError

__all__ = ["JOURNAL_PATH", "Journal", "boot_id", "is_mounted", "replay", "undo", "unmount_tracefs"]

# On disk (not /run): a work directory left on disk must still be found after a reboot.
JOURNAL_PATH = Path("/var/lib/mmlab/capture.journal")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# Kinds that the kernel forgets on reboot.
_VOLATILE = {"sysctl", "cgroup", "instance", "mount"}


def boot_id(path: Path = BOOT_ID) -> str:
    """This boot's random id (``/proc/sys/kernel/random/boot_id``)."""
    return path.read_text().strip()


@dataclass(frozen=True)
class Journal:
    """The journal file of the running capture (``pid``) in this boot (``boot``)."""

    path: Path
    pid: int
    boot: str
    proc_sys: Path = Path("/proc/sys")

    def start(self) -> None:
        """Create the journal (the previous one must have been replayed: :func:`replay`)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._append({"kind": "start", "pid": self.pid, "boot_id": self.boot}, mode="w")

    def _append(self, entry: dict, mode: str = "a") -> None:
        with open(self.path, mode) as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def sysctl(self, name: str) -> None:
        """Record ``name``'s value as it is now, before it is changed, with its coupled
        twin's (writing one zeroes the other)."""
        values = {
            n: sysctl_path(n, self.proc_sys).read_text().strip()
            for n in coupled_group(name)
            if sysctl_path(n, self.proc_sys).is_file()
        }
        original = values.pop(name)
        self._append({"kind": "sysctl", "name": name, "original": original, "coupled": values})

    def cgroup(self, version: int, path: Path) -> None:
        """Record a memory cgroup about to be created."""
        self._append({"kind": "cgroup", "version": version, "path": str(path.absolute())})

    def instance(self, path: Path) -> None:
        """Record a tracefs instance about to be created."""
        self._append({"kind": "instance", "path": str(path.absolute())})

    def work_dir(self, path: Path) -> None:
        """Record the work directory (the writers' files) about to be created: absolute,
        so a ``--recover`` run from another directory finds it."""
        self._append({"kind": "work_dir", "path": str(path.absolute())})

    def mount(self, path: Path) -> None:
        """Record tracefs about to be mounted at ``path`` (unmounted again at the end)."""
        self._append({"kind": "mount", "path": str(path.absolute())})

    def finish(self) -> None:
        """Everything was undone: the journal is no longer needed."""
        self.path.unlink(missing_ok=True)


def _entries(path: Path) -> list[dict]:
    entries = []
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            raise InputError(path, "unreadable journal line; undo it by hand", lineno) from None
    return entries


def undo(entry: dict, proc_sys: Path = Path("/proc/sys")) -> str | None:
    """Undo one journal entry (also used for leftovers found by name, see
    :func:`analysis.capture.run.remove_stale`); the line to report, or None when nothing
    was left to undo."""
    kind, where = entry["kind"], Path(entry.get("path", "."))
    if kind == "sysctl":
        return restore_group(
            {entry["name"]: entry["original"], **entry.get("coupled", {})}, proc_sys
        )
    if kind == "mount":
        return unmount_tracefs(where)
    if not where.exists():
        return None
    if kind == "cgroup":
        cg = MemCgroup(entry["version"], where)
        killed = cg.pids()
        cg.remove()
        return f"removed memory cgroup {where}" + (
            f" after killing its processes {' '.join(map(str, killed))}" if killed else ""
        )
    if kind == "instance":
        with contextlib.suppress(OSError):
            (where / "tracing_on").write_text("0")
        where.rmdir()
        return f"removed trace instance {where}"
    if kind == "work_dir":
        shutil.rmtree(where)
        return f"removed work directory {where}"
    raise InputError(where, f"unknown journal entry kind {kind!r}")


def is_mounted(path: Path, mounts: Path = Path("/proc/mounts")) -> bool:
    """Whether a tracefs is mounted at ``path``."""
    return any(
        fields[1] == str(path) and fields[2] == "tracefs"
        for line in mounts.read_text().splitlines()
        if len(fields := line.split()) > 2
    )


def unmount_tracefs(path: Path) -> str | None:
    """Unmount the tracefs a capture mounted at ``path``; None if it is no longer mounted."""
    if not is_mounted(path):
        return None
    proc = subprocess.run(["umount", str(path)], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise OSError(f"umount {path}: {proc.stderr.strip() or f'exit {proc.returncode}'}")
    return f"unmounted tracefs at {path}"


def replay(
    path: Path,
    report: Callable[[str], None],
    this_boot: str,
    proc_sys: Path = Path("/proc/sys"),
) -> bool:
    """Undo what the capture that wrote the journal at ``path`` left (see the module
    docstring), newest change first, calling ``report`` with one line per thing undone as it
    is done. True if there was a journal. A step that fails is an InputError naming it; the
    journal is then kept, so the next attempt tries again."""
    if not path.exists():
        return False
    entries = _entries(path)
    header = entries[0] if entries and entries[0].get("kind") == "start" else {}
    who = f"capture pid {header.get('pid', '?')}"
    rebooted = header.get("boot_id") != this_boot
    report(f"mmlab capture: {path}: {who} did not finish; undoing what it left")
    for entry in reversed(entries[1:]):
        if rebooted and entry["kind"] in _VOLATILE:
            continue
        try:
            done = undo(entry, proc_sys)
        except (OSError, TimeoutError) as exc:
            raise InputError(
                path,
                f"cannot undo {entry['kind']} {entry.get('name') or entry.get('path')} "
                f"left by {who}: {exc}; fix it and run mmlab capture --recover",
            ) from None
        if done:
            report(f"mmlab capture: {done}, left by {who}")
    path.unlink()
    return True
