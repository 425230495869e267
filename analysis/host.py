"""The machine this process runs on, as the kernel describes it: which memory cgroup
hierarchy is mounted. Read by the capture (where to create its cgroup) and by the ftrace
reader (how much memory a container leaves it), so it sits below both."""

from __future__ import annotations

from pathlib import Path

__all__ = ["find_memory_hierarchy"]


def find_memory_hierarchy(mounts_text: str) -> tuple[int, Path] | None:
    """Pick the memory cgroup hierarchy from /proc/mounts text: ``(version, mount point)``.

    v2 is preferred when its root lists ``memory`` in ``cgroup.controllers``; a v1 mount
    whose options include ``memory`` is the fallback. ``None`` when neither exists.
    """
    v1: Path | None = None
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        mount_point, fstype, options = Path(fields[1]), fields[2], fields[3].split(",")
        if fstype == "cgroup2":
            controllers = mount_point / "cgroup.controllers"
            if controllers.is_file() and "memory" in controllers.read_text().split():
                return 2, mount_point
        elif fstype == "cgroup" and "memory" in options:
            v1 = mount_point
    return (1, v1) if v1 is not None else None
