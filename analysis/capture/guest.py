"""The guest side of ``mmlab capture --kernel``: run inside the virtme-ng guest, as root.

``python -m analysis.capture.guest SPEC.json`` (the host's :mod:`analysis.capture.vm`
writes the spec into the shared directory). In order: note the guest's uptime (the boot
time) and boot id, format the one virtio-blk disk (ext4 or XFS) and mount it, mount the
memory cgroup hierarchy asked for, set the knobs and read every ``vm.*`` sysctl back, run
the ordinary ``mmlab capture`` with its output on the disk, and copy the finished tree into
the shared directory. ``result.json`` there says what happened; the host reads it after the guest
powers off. The guest is discarded afterwards, so nothing set here is restored.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from analysis.capture import sysctl
from analysis.errors import InputError

__all__ = ["IN_GUEST", "find_virtio_disk", "main", "mount_memory_cgroup", "set_knobs"]

# Set for the capture the guest side runs: only there may it let the workload outgrow the
# machine's memory (``--pressure global``: the guest's RAM is the limit).
IN_GUEST = "MMLAB_IN_GUEST"

SYS_BLOCK = Path("/sys/block")
# mkfs per file system: quiet, and forced over whatever an image held before.
MKFS = {"ext4": ["mkfs.ext4", "-q", "-F"], "xfs": ["mkfs.xfs", "-q", "-f"]}


def find_virtio_disk(sys_block: Path = SYS_BLOCK) -> str:
    """``/dev/vdX`` of the single virtio-blk disk; RuntimeError unless exactly one exists."""
    disks = sorted(p.name for p in sys_block.glob("vd*"))
    if len(disks) != 1:
        raise RuntimeError(f"expected one virtio-blk disk in {sys_block}, found {disks}")
    return f"/dev/{disks[0]}"


def mount_memory_cgroup(version: int, mounts_text: str) -> str:
    """Mount the memory controller: v1 on its own hierarchy (binding it there takes it off
    the unified one, so the capture picks v1), v2 where virtme-ng's init did not mount
    cgroup2. Returns the mount point."""
    if version == 1:
        point = "/run/mmlab-memcg"
        os.makedirs(point, exist_ok=True)
        subprocess.run(["mount", "-t", "cgroup", "-o", "memory", "mmlab", point], check=True)
        return point
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            return fields[1]
    point = "/sys/fs/cgroup"
    subprocess.run(["mount", "-t", "cgroup2", "none", point], check=True)
    return point


def set_knobs(pairs: list[list[str]], root: Path = sysctl.PROC_SYS) -> dict[str, dict[str, str]]:
    """Set each sysctl and read it back (a millisecond knob reads back rounded to jiffies)."""
    changer = sysctl.SysctlChanger(root, option="--sysctl")
    out = {}
    for name, value in pairs:
        changer.set(name, value)
        back = " ".join(sysctl.sysctl_path(name, root).read_text().split())
        out[name] = {"from": changer.saved[name], "requested": value, "read_back": back}
    return out


def _uptime_s() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


# The kernel log lines kept with a failed capture's result (an OOM report is ~40 lines).
DMESG_LINES = 80


def _dmesg_tail() -> list[str]:
    """The last :data:`DMESG_LINES` lines of the guest kernel's log (``dmesg``), or why not."""
    try:
        proc = subprocess.run(["dmesg"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        return [f"dmesg not read: {exc}"]
    return proc.stdout.splitlines()[-DMESG_LINES:]


def main(argv: list[str]) -> int:
    spec_path = Path(argv[0])
    spec = json.loads(spec_path.read_text())
    share = Path(spec["share"])
    result: dict[str, object] = {
        "boot_s": _uptime_s(),
        "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
        "uname": platform.uname()._asdict(),
    }
    rc = 1
    try:
        disk = find_virtio_disk()
        mount = Path(spec["disk_mount"])
        mount.mkdir(parents=True, exist_ok=True)
        fs = spec.get("filesystem", "ext4")
        subprocess.run([*MKFS[fs], disk], check=True)
        subprocess.run(["mount", "-t", fs, disk, str(mount)], check=True)
        result["disk"] = {"device": disk, "fs": fs, "mount": str(mount)}
        point = mount_memory_cgroup(spec["cgroup"], Path("/proc/mounts").read_text())
        result["cgroup"] = {"version": spec["cgroup"], "mount": point}
        result["sysctls_read_back"] = set_knobs(spec["sysctls"])
        out = mount / "out"
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "analysis.cli", "capture", str(out), *spec["capture_argv"]],
            capture_output=True,
            text=True,
            env={**os.environ, IN_GUEST: "1"},
        )
        result["capture_s"] = time.monotonic() - t0
        result["capture_rc"] = rc = proc.returncode
        result["stdout"] = proc.stdout[-4000:]
        result["stderr"] = proc.stderr[-4000:]
        if rc != 0:  # why a worker died (the OOM killer, a fault) is in the kernel's log
            result["dmesg_tail"] = _dmesg_tail()
        # Copied whatever the capture's exit: a failed iteration's files are the evidence
        # of why it failed (the host keeps them beside the failed run).
        run = spec["capture_argv"][spec["capture_argv"].index("--run") + 1]
        if (out / run).is_dir():
            shutil.copytree(out / run, share / "out" / run)
    except (OSError, RuntimeError, InputError, subprocess.CalledProcessError) as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        (share / "result.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
