"""A capture's arguments checked against this machine before anything on it is changed.

Every check here reads only (``/proc/meminfo``, ``vm.dirty_ratio``, the output path), so a
mistake in the command line is one clear :class:`~analysis.errors.InputError` before any
sysctl, cgroup or tracefs instance is touched, and before the machine lock is taken.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

from analysis.capture.metadata import memory_info
from analysis.capture.plan import MIB, PhasePlan, PlanParams, max_limit_bytes, phase_plan
from analysis.errors import InputError

__all__ = [
    "GLOBAL_RESERVE_BYTES",
    "cgroup_limit_bytes",
    "check_arguments",
    "check_command",
    "check_global_pressure",
    "check_machine",
    "check_out",
    "dirty_ratio_for",
    "global_budget_mb",
    "make_out",
    "plans_for",
]

# stutterp's smallest worker set (plan.split_workers).
MIN_WORKERS = 3
# (option, config attribute, smallest allowed value, whether that value is allowed)
_POSITIVE = (
    ("--iterations", "iterations", 1, True),
    ("--duration", "duration_s", 0, False),
    ("--interval", "interval_s", 0, False),
    ("--warmup", "warmup_s", 0, True),
    ("--probe-seconds", "probe_s", 0, False),
    ("--buffer-kb", "buffer_kb", 1, True),
    ("--limit-mb", "limit_mb", 1, True),
    ("--slab-files", "slab_files", 0, True),
    ("--negative-dentries", "negative_dentries", 0, True),
)


def check_arguments(
    cfg, mem_available_bytes: int, dirty_ratio: int, *, for_guest: bool = False
) -> list[PhasePlan]:
    """Numbers in range, ``--limit-mb`` within half of MemAvailable, a feasible plan per
    worker count (:func:`~analysis.capture.plan.phase_plan`, ``vm.dirty_ratio`` mirrored
    by ``dirty_ratio``). Returns the plans. ``for_guest``: the host checking a guest's
    capture against the guest's memory before booting it."""
    auto = cfg.pressure == "global" and cfg.limit_mb == 0
    for option, name, low, inclusive in _POSITIVE:
        value = getattr(cfg, name)
        if auto and name == "limit_mb":
            continue
        if not math.isfinite(value) or value < low or (value == low and not inclusive):
            bound = f">= {low}" if inclusive else f"> {low}"
            raise InputError(option, f"must be a finite number {bound}, got {value}")
    if cfg.command:
        check_command(cfg.command, cfg.command_cwd, cfg.command_timeout_s)
    if cfg.command and not cfg.beside:  # the user's command alone: no worker plan
        _check_limit(cfg, mem_available_bytes, for_guest)
        return []
    if too_few := [n for n in cfg.workers if n < MIN_WORKERS]:
        raise InputError(
            "--workers",
            f"each worker count must be >= {MIN_WORKERS} (the latency probe, a file writer "
            f"and an anon hog), got {too_few[0]}",
        )
    _check_limit(cfg, mem_available_bytes, for_guest)
    if auto:  # sized in the guest, from its MemAvailable (global_budget_mb)
        return []
    plans = plans_for(cfg, dirty_ratio)
    if cfg.pressure == "global":
        _check_global_footprint(plans, mem_available_bytes)
    return plans


def _check_limit(cfg, mem_available_bytes: int, for_guest: bool = False) -> None:
    """Half of MemAvailable at most, or under global pressure (a guest's only) the budget
    :func:`check_global_pressure` allows."""
    if cfg.pressure == "global":
        check_global_pressure(cfg, mem_available_bytes, for_guest)
        return
    cap = max_limit_bytes(mem_available_bytes)
    if cfg.limit_mb * MIB > cap:
        raise InputError(
            "--limit-mb",
            f"{cfg.limit_mb} MiB is above half of MemAvailable ({cap // MIB} MiB): refusing "
            "to risk pressure outside the cgroup",
        )


def check_command(argv: tuple[str, ...], cwd: Path, timeout_s: float | None) -> None:
    """The command after ``--`` can run: ``cwd`` is a directory, the program is found (on
    PATH, or as a path from ``cwd``) and executable, ``--timeout`` is positive."""
    if not cwd.is_dir():
        raise InputError("--cwd", f"{cwd} is not a directory")
    program = argv[0]
    found = cwd / program if "/" in program else shutil.which(program, path=os.environ.get("PATH"))
    if found is None or not os.access(found, os.X_OK) or Path(found).is_dir():
        raise InputError(program, "no such executable (the command after '--')")
    if timeout_s is not None and not (math.isfinite(timeout_s) and timeout_s > 0):
        raise InputError("--timeout", f"must be a finite number > 0, got {timeout_s}")


# What global pressure leaves the guest's kernel, page tables and the capture itself.
GLOBAL_RESERVE_BYTES = 96 * MIB
GLOBAL_SLACK_MB = 16


def check_global_pressure(cfg, mem_available_bytes: int, for_guest: bool = False) -> None:
    """``--pressure global`` only in a guest (:data:`~analysis.capture.guest.IN_GUEST`, set
    by the guest side of ``--kernel``): the workload then outgrows the machine's memory, and
    on a host that machine is shared. ``--limit-mb`` is then the working set's budget (0:
    the guest's MemAvailable, :func:`global_budget_mb`), at most MemAvailable.
    ``for_guest``: the host's check of a guest's budget against the guest's memory, before
    booting it."""
    from analysis.capture.guest import IN_GUEST

    if not for_guest and os.environ.get(IN_GUEST) != "1":
        raise InputError(
            "--pressure global",
            "only inside a guest (give --kernel): it puts the whole machine under pressure",
        )
    if cfg.limit_mb * MIB > mem_available_bytes:
        raise InputError(
            "--limit-mb",
            f"{cfg.limit_mb} MiB budget under global pressure is above MemAvailable "
            f"({mem_available_bytes // MIB} MiB); 0 sizes it from the guest's MemAvailable",
        )


def _check_global_footprint(plans: list[PhasePlan], mem_available_bytes: int) -> None:
    """What cannot be reclaimed (no swap: the hogs' anon, the probe, the processes) must leave
    :data:`GLOBAL_RESERVE_BYTES` of MemAvailable to the kernel: only file pages are to be
    reclaimed, and an OOM kill would end the run, not measure it."""
    for plan in plans:
        fixed = plan.anon_total_bytes + plan.probe_map_bytes + plan.overhead_bytes
        if fixed > mem_available_bytes - GLOBAL_RESERVE_BYTES:
            raise InputError(
                "--limit-mb",
                f"{plan.workers} workers' anon {fixed // MIB} MiB under global pressure leaves "
                f"less than {GLOBAL_RESERVE_BYTES // MIB} MiB of MemAvailable "
                f"({mem_available_bytes // MIB} MiB) to the kernel",
            )


def global_budget_mb(meminfo: Path = Path("/proc/meminfo")) -> int:
    """``--limit-mb 0`` under global pressure: the guest's MemAvailable when the capture
    starts, so that the working set (the budget plus the dirty share, stutterp's 100 +
    dirty_ratio %) outgrows it by the dirty share and kswapd and direct reclaim run."""
    # Less a little: MemAvailable moves between this read and the capture's own check.
    return memory_info(meminfo.read_text())["mem_available_kib"] // 1024 - GLOBAL_SLACK_MB


def cgroup_limit_bytes(cfg, meminfo: Path = Path("/proc/meminfo")) -> int:
    """The capture cgroup's hard limit: ``--limit-mb``, or under global pressure the
    machine's MemTotal (a limit that never binds: the workload's cgroup still holds and
    accounts it, while reclaim is the whole guest's)."""
    if cfg.pressure == "global":
        return memory_info(meminfo.read_text())["mem_total_kib"] * 1024
    return cfg.limit_mb * MIB


def plans_for(cfg, dirty_ratio: int) -> list[PhasePlan]:
    """The share-out per worker count; an impossible one is an InputError."""
    params = PlanParams(
        limit_bytes=cfg.limit_mb * MIB,
        dirty_ratio=dirty_ratio,
        probe_map_bytes=cfg.probe_map_mib * MIB,
    )
    try:
        return [phase_plan(params, n) for n in cfg.workers]
    except ValueError as exc:
        raise InputError("--workers/--limit-mb", str(exc)) from None


def _is_run(path: Path) -> bool:
    """A run directory of an mmtests-style tree (``RUN/iter-N/``), as capture writes."""
    return path.is_dir() and any(p.name.startswith("iter-") for p in path.iterdir())


def check_out(out: Path, run: str) -> None:
    """``OUT/RUN`` must be new; ``OUT`` may hold other runs only (mmtests keeps runs side
    by side for comparison) and must be creatable: its nearest existing ancestor is a
    writable directory. Creates nothing (:func:`make_out` does, under the machine lock, so
    a refused capture leaves no OUT behind)."""
    if not run or run in {".", ".."} or "/" in run:
        raise InputError("--run", f"must be a plain directory name, got {run!r}")
    if out.exists() and not out.is_dir():
        raise InputError(out, "exists and is not a directory")
    if (out / run).exists():
        raise InputError(out / run, "already exists; choose another --run or OUT")
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir() if not _is_run(p))
        if other:
            raise InputError(
                out,
                f"is not empty and holds more than capture runs ({', '.join(other[:3])}); "
                "give a new or empty directory",
            )
    existing = next(p for p in (out.absolute(), *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise InputError(out, f"cannot be created: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(
            out,
            "is not writable"
            if existing == out.absolute()
            else f"cannot be created: {existing} is not writable",
        )


def make_out(out: Path) -> None:
    """Create ``OUT`` (checked by :func:`check_out`)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(out, f"cannot be created: {exc.strerror}") from None


def dirty_ratio_for(
    sets: tuple[tuple[str, str], ...],
    mem_available_bytes: int,
    proc_sys: Path = Path("/proc/sys"),
) -> int:
    """The ``vm.dirty_ratio`` the plan assumes: a ``--set`` of it, else the current value;
    when ``vm.dirty_bytes`` is in force instead (``--set``, or the machine's, which reads
    ``dirty_ratio`` 0: the kernel zeroes the twin), the percentage of MemAvailable those
    bytes are (the kernel divides by its dirtyable memory, which MemAvailable estimates),
    rounded up and kept within 1..99."""
    # The last --set of the pair wins, as in the kernel (writing one zeroes the other).
    chosen = [(n, v) for n, v in sets if n in ("vm.dirty_ratio", "vm.dirty_bytes")]
    if chosen:
        (name, text), option = chosen[-1], "--set"
    else:
        name, option = "vm.dirty_ratio", str(proc_sys / "vm")
        text = (proc_sys / "vm" / "dirty_ratio").read_text().strip()
        if text == "0":
            name, text = "vm.dirty_bytes", (proc_sys / "vm" / "dirty_bytes").read_text().strip()
    try:
        value = int(text)
    except ValueError:
        raise InputError(option, f"{name} must be an integer, got {text!r}") from None
    if name == "vm.dirty_bytes":
        return min(99, max(1, math.ceil(value * 100 / mem_available_bytes)))
    return value


def check_machine(cfg) -> list[PhasePlan]:
    """:func:`check_arguments` with this machine's MemAvailable and dirty ratio, then
    :func:`check_out`; returns the plans."""
    meminfo = memory_info(Path("/proc/meminfo").read_text())
    available = meminfo["mem_available_kib"] * 1024
    plans = check_arguments(cfg, available, dirty_ratio_for(cfg.sets, available))
    check_out(cfg.out, cfg.run)
    return plans
