"""Capture metadata: the machine and kernel, and mmtests' ``tests-timestamp``/``tests-sysstate``.

Pure formatters (``timestamp_lines``, ``sysstate_block``, ``config_hz``) plus readers of
/proc that take their root as an argument so tests can point them at a fake tree.
"""

from __future__ import annotations

import gzip
import os
import platform
from pathlib import Path

from analysis.ingest.kconfig import config_hz

__all__ = [
    "SYSSTATE_FILES",
    "config_hz",
    "cpu_info",
    "kconfig_text",
    "memory_info",
    "sysstate_block",
    "timestamp_lines",
]

SYSSTATE_FILES = ("/proc/vmstat", "/proc/zoneinfo", "/proc/meminfo")


def timestamp_lines(
    test: str, begin_s: float, end_s: float, rc: int, user_s: float, sys_s: float
) -> str:
    """mmtests ``tests-timestamp`` for one test: begin, end with exit status, and ``time ::``.

    ``time ::`` carries the benchmark's user and system CPU seconds and wall-clock elapsed
    seconds (mmtests takes these from /usr/bin/time; here from the workers' rusage).
    """
    return (
        f"test begin :: {test} {begin_s:.0f}\n"
        f"test end :: {test} {end_s:.0f} {rc}\n"
        f"time :: {test} {user_s:.2f} user {sys_s:.2f} system {end_s - begin_s:.2f} elapsed\n"
    )


def sysstate_block(which: str, path: str, text: str) -> str:
    """One ``tests-sysstate`` block: ``file start :: /proc/vmstat`` (or ``end``) then the dump."""
    if which not in ("start", "end"):
        raise ValueError(which)
    if not text.endswith("\n"):
        text += "\n"
    return f"file {which} :: {path}\n{text}"


def snapshot(root: Path = Path("/")) -> dict[str, str]:
    """Read every ``SYSSTATE_FILES`` entry (paths re-rooted at ``root``)."""
    return {p: (root / p.lstrip("/")).read_text() for p in SYSSTATE_FILES}


def kconfig_text(proc: Path = Path("/proc")) -> str | None:
    """The running kernel's config from /proc/config.gz (CONFIG_IKCONFIG_PROC), else None."""
    gz = proc / "config.gz"
    if not gz.is_file():
        return None
    return gzip.decompress(gz.read_bytes()).decode()


def cpu_info(cpuinfo_text: str) -> dict[str, object]:
    """CPU model and logical CPU count from /proc/cpuinfo text."""
    model = ""
    count = 0
    for line in cpuinfo_text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "processor":
            count += 1
        elif key == "model name" and not model:
            model = value.strip()
    return {"model": model, "logical_cpus": count}


def memory_info(meminfo_text: str) -> dict[str, int]:
    """/proc/meminfo's MemTotal, MemAvailable, SwapTotal in KiB (the file's unit)."""
    wanted = {"MemTotal": "mem_total_kib", "MemAvailable": "mem_available_kib"}
    wanted["SwapTotal"] = "swap_total_kib"
    out: dict[str, int] = {}
    for line in meminfo_text.splitlines():
        key, _, value = line.partition(":")
        if key in wanted:
            out[wanted[key]] = int(value.split()[0])
    return out


def system_metadata(root: Path = Path("/")) -> dict[str, object]:
    """Kernel, CPU, memory and THP settings of the capturing machine."""
    proc = root / "proc"
    thp = root / "sys/kernel/mm/transparent_hugepage"
    kconfig = kconfig_text(proc)
    return {
        "kernel_release": platform.release(),
        "kernel_version": (proc / "version").read_text().strip(),
        # Iterations of one boot are not independent runs (analysis.ingest.boots).
        "boot_id": (proc / "sys/kernel/random/boot_id").read_text().strip(),
        "config_hz": config_hz(kconfig),
        "kconfig_available": kconfig is not None,
        "hostname": platform.node(),
        "cpu": cpu_info((proc / "cpuinfo").read_text()),
        "memory": memory_info((proc / "meminfo").read_text()),
        "thp": {
            name: (thp / name).read_text().strip()
            for name in ("enabled", "defrag")
            if (thp / name).is_file()
        },
        "page_size_bytes": os.sysconf("SC_PAGE_SIZE"),
    }
