"""A fake machine for captures (synthetic; used by tests and by the child processes they
signal): tracefs, a v1 memory cgroup root and /proc/sys as plain directories, with what
the kernel does that a directory does not: a new instance or cgroup is populated, an
exited task leaves ``cgroup.procs``, rmdir takes the control files with it, writing a
coupled dirty sysctl zeroes its twin and 0 is refused for a ``*_bytes``. Patches
``analysis.capture.run`` so ``run.capture`` works on it; the workload is a real command
(a ``sleep``, a ``sh`` line), never a memory hog (the fake cgroup has no limit).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from analysis.capture import journal, run, sysctl
from analysis.capture.cgroup import MemCgroup
from analysis.capture.tracefs import TraceInstance

_INSTANCE_FILES = {
    "tracing_on": "1\n",
    "trace_clock": "[local] global counter uptime perf mono\n",
    "buffer_size_kb": "7 (expanded: 1408)\n",
    "set_event": "",
    "set_event_pid": "",
    "trace": "",
    "options/event-fork": "0\n",
    "events/vmscan/mm_vmscan_throttled/enable": "0\n",
}
_CGROUP_FILES = {
    "cgroup.procs": "",
    "memory.stat": "cache 0\nrss 0\n",
    "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
    "memory.failcnt": "0\n",
}
SYSCTLS = {
    "dirty_ratio": "20",
    "dirty_bytes": "0",
    "dirty_background_ratio": "10",
    "dirty_background_bytes": "0",
    "swappiness": "60",
}
# What the fake kernel refuses (errno EINVAL), as the real one does for these values.
REFUSED = {("swappiness", "999"), ("dirty_bytes", "0"), ("dirty_background_bytes", "0")}


def pid_running(pid: str) -> bool:
    """Whether process ``pid`` runs (a zombie does not): what a cgroup's procs file lists."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _populate(path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)


@contextmanager
def fake_machine(root: Path, slow_rmdir_s: float = 0.0):
    """Patch the capture onto fake trees under ``root``; yields ``root``. ``slow_rmdir_s``
    makes each rmdir of the fake take that long (a teardown long enough to be signalled)."""
    tracing, memory, proc_sys = root / "tracing", root / "memory", root / "sys"
    (tracing / "instances").mkdir(parents=True)
    memory.mkdir()
    (proc_sys / "vm").mkdir(parents=True)
    for name, value in SYSCTLS.items():
        (proc_sys / "vm" / name).write_text(f"{value}\n")
    saved = {
        "Path.rmdir": Path.rmdir,
        "Path.write_text": Path.write_text,
        "MemCgroup.create": MemCgroup.__dict__["create"],
        "TraceInstance.create": TraceInstance.__dict__["create"],
        "run.preflight": run.preflight,
        "run.machine_lock": run.machine_lock,
        "journal.JOURNAL_PATH": journal.JOURNAL_PATH,
        "journal.boot_id": journal.boot_id,
        "sysctl.PROC_SYS": sysctl.PROC_SYS,
    }
    real_rmdir, real_write = Path.rmdir, Path.write_text
    real_inst_create = TraceInstance.create.__func__

    def rmdir(self):
        if self.is_relative_to(root):
            time.sleep(slow_rmdir_s)
            for f in sorted(self.rglob("*"), reverse=True):
                if f.is_dir():
                    real_rmdir(f)
                else:
                    f.unlink()
        real_rmdir(self)

    def write_text(self, data, *args, **kwargs):
        if self.is_relative_to(proc_sys / "vm"):
            if (self.name, data.strip()) in REFUSED:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            twin = sysctl.COUPLED.get(f"vm.{self.name}")
            if twin:
                real_write(proc_sys / "vm" / twin.split(".")[1], "0\n")
        return real_write(self, data, *args, **kwargs)

    def cg_create(cls, version, croot, name, limit_bytes):
        (croot / name).mkdir()
        _populate(croot / name, _CGROUP_FILES)
        cg = cls(version, croot / name)
        cg.set_limit(limit_bytes)
        return cg

    def inst_create(tfs, name):
        inst = real_inst_create(TraceInstance, tfs, name)
        _populate(inst.path, _INSTANCE_FILES)
        os.mkfifo(inst.path / "trace_pipe")
        return inst

    stop = threading.Event()

    def account() -> None:
        while not stop.is_set():
            for f in list(memory.glob("*/cgroup.procs")):
                try:
                    pids = f.read_text().split()
                    left = [p for p in pids if pid_running(p)]
                    if left != pids:
                        real_write(f, "".join(f"{p}\n" for p in left))
                except OSError:
                    pass
            time.sleep(0.02)

    Path.rmdir = rmdir
    Path.write_text = write_text
    MemCgroup.create = classmethod(cg_create)
    TraceInstance.create = staticmethod(inst_create)
    run.preflight = lambda cfg: {
        "tracefs": tracing,
        "tracefs_mounted": True,
        "cgroup_version": 1,
        "cgroup_root": memory,
        "fs": "ext4",
    }
    run.machine_lock = lambda: saved["run.machine_lock"](root / "lock")
    journal.JOURNAL_PATH = root / "journal"
    journal.boot_id = lambda: "boot-1"
    sysctl.PROC_SYS = proc_sys
    thread = threading.Thread(target=account, daemon=True)
    thread.start()
    try:
        yield root
    finally:
        stop.set()
        thread.join()
        Path.rmdir = saved["Path.rmdir"]
        Path.write_text = saved["Path.write_text"]
        MemCgroup.create = saved["MemCgroup.create"]
        TraceInstance.create = saved["TraceInstance.create"]
        run.preflight = saved["run.preflight"]
        run.machine_lock = saved["run.machine_lock"]
        journal.JOURNAL_PATH = saved["journal.JOURNAL_PATH"]
        journal.boot_id = saved["journal.boot_id"]
        sysctl.PROC_SYS = saved["sysctl.PROC_SYS"]


def leftovers(root: Path) -> list[str]:
    """What a capture on the fake machine left: instances, cgroups, journal, work dirs."""
    found = [str(p) for p in (root / "tracing" / "instances").iterdir()]
    found += [str(p) for p in (root / "memory").iterdir()]
    found += [str(p) for p in root.glob("out/.mmlab-work-*")]
    if (root / "journal").exists():
        found.append(str(root / "journal"))
    return found
