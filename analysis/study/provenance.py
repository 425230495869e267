"""Where each iteration's numbers came from: kernel, HZ, machine, cgroup, workload.

Read from ``mmlab.json`` (written by ``mmlab capture``), else from the plain mmtests files
(``kernel.version``, ``kconfig-*``, ``lscpu.txt``, tests-sysstate's meminfo; see
:class:`~analysis.ingest.mmtests.Machine`) so a third-party run still says what it can.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from analysis.ingest.mmtests import Iteration, Machine, Run
from analysis.ingest.textfile import read_text

__all__ = [
    "Provenance",
    "capture_settings",
    "iteration_provenance",
    "run_differences",
    "setting_differences",
]


@dataclass(frozen=True)
class Provenance:
    """One iteration's capture context. ``config_hz`` is the kernel's CONFIG_HZ (kconfig);
    ``memory_kib`` is MemTotal; ``cgroup`` is "v1"/"v2" with its limit, "" when none
    recorded. Unknown fields are None / ""."""

    run: str
    iteration: int
    kernel: str
    config_hz: int | None
    machine: str
    memory_kib: int | None
    cgroup: str
    tests: tuple[str, ...]


def _system(machine: Machine) -> dict:
    """``machine`` in the shape of mmlab.json's ``system``."""
    return {
        "kernel_release": machine.kernel_release,
        "hostname": machine.hostname,
        "cpu": {"model": machine.cpu_model, "logical_cpus": machine.logical_cpus},
        "memory": {"mem_total_kib": machine.mem_total_kib},
    }


def iteration_provenance(run: Run, iteration: Iteration) -> Provenance:
    """Capture context of ``iteration`` of ``run`` (see :class:`Provenance`)."""
    meta = iteration.metadata
    # A plain mmtests tree has no mmlab.json: its kernel.version, lscpu and meminfo say it.
    system = meta.get("system") or _system(iteration.machine)
    cpu = system.get("cpu", {})
    machine = ", ".join(
        str(part)
        for part in (
            system.get("hostname"),
            cpu.get("model"),
            f"{cpu['logical_cpus']} CPUs" if cpu.get("logical_cpus") else None,
            "TCG-emulated guest" if run.emulated else None,
        )
        if part
    )
    cgroup = meta.get("cgroup", {})
    limit = meta.get("config", {}).get("limit_mb")
    cg = f"v{cgroup['version']}" if "version" in cgroup else ""
    if cg and limit:
        cg += f", limit {limit} MiB"
    return Provenance(
        run=run.name,
        iteration=iteration.index,
        kernel=system.get("kernel_release") or "",
        config_hz=system.get("config_hz") or iteration.config_hz,
        machine=machine,
        memory_kib=system.get("memory", {}).get("mem_total_kib"),
        cgroup=cg,
        tests=tuple(iteration.tests),
    )


# What, besides the kernel under test, must match for a comparison of runs to mean anything.
_COMPARED = (
    ("machine", lambda r: r.machine or "not recorded"),
    ("memory", lambda r: f"{r.memory_kib / 1048576:.1f} GiB" if r.memory_kib else "unknown"),
    ("CONFIG_HZ", lambda r: str(r.config_hz) if r.config_hz else "unknown"),
    ("memcg", lambda r: r.cgroup or "not recorded"),
    ("tests", lambda r: " ".join(r.tests) or "none found"),
)


def run_differences(rows: Sequence[Provenance]) -> tuple[str, ...]:
    """One line per provenance field (machine, memory, CONFIG_HZ, memcg, tests) whose
    values differ between runs, naming each run's value(s): runs from machines of 80 and
    160 CPUs are not a comparison of kernels, and the report says so before any number."""
    runs = list(dict.fromkeys(r.run for r in rows))
    out = []
    for label, value in _COMPARED:
        per_run = {run: sorted({value(r) for r in rows if r.run == run}) for run in runs}
        if len({tuple(v) for v in per_run.values()}) > 1:
            out.append(
                f"{label}: " + "; ".join(f"{run} {', '.join(v)}" for run, v in per_run.items())
            )
    return tuple(out)


# mmlab.json keys that say where a capture went or what it measured, not what it ran under;
# config.sets is left out because the sysctls it set are compared as they were in effect.
_NOT_SETTINGS = frozenset(
    {
        "config.out",
        "config.run",
        "config.command_line",
        "config.sets",
        "config.iterations",
        "system.hostname",
        "system.cpu.model",
        "system.cpu.logical_cpus",
        "system.memory.mem_total_kib",
        "system.memory.mem_available_kib",
        "system.config_hz",
        "system.kconfig_available",
    }
)
# Sysctls the kernel sizes itself from free memory at boot (mm/util.c init_user_reserve,
# init_admin_reserve): they differ by a few pages between boots, so they are settings only
# when a capture set them.
_BOOT_SIZED = frozenset({"vm.user_reserve_kbytes", "vm.admin_reserve_kbytes"})
# Memory cgroup files that set a limit or policy (v1 and v2); the rest are usage counters.
_CGROUP_SETTING = re.compile(
    r"memory\.((\w+\.)*limit_in_bytes|swappiness|use_hierarchy|move_charge_at_immigrate"
    r"|max|high|low|min|swap\.max|oom\.group)"
)
_KCONFIG_LINE = re.compile(r"^(CONFIG_\w+)=(.*)$|^# (CONFIG_\w+) is not set$")


def _flat(prefix: str, value: object) -> dict[str, str]:
    if isinstance(value, dict):
        return {
            k: v for key, sub in value.items() for k, v in _flat(f"{prefix}.{key}", sub).items()
        }
    if isinstance(value, list):
        return {prefix: " ".join(str(v) for v in value)}
    return {prefix: str(value)}


def _bytes(name: str, value: str) -> str:
    """A ``*_bytes`` setting in MiB, as the capture's README states sizes."""
    if "bytes" in name.rsplit(".", 1)[-1] and value.isdigit() and int(value) >= 1 << 20:
        return f"{int(value) / 1048576:.1f} MiB"
    return value


def _kconfig(iteration: Iteration) -> dict[str, str]:
    """Every ``CONFIG_*`` option of the first ``kconfig-*`` file (``n`` when not set)."""
    for path in sorted(iteration.path.glob("kconfig-*")):
        options = {}
        for line in read_text(path).splitlines():
            if m := _KCONFIG_LINE.match(line):
                options[m[1] or m[3]] = m[2] if m[1] else "n"
        return options
    return {}


def capture_settings(iteration: Iteration) -> dict[str, str]:
    """What ``iteration`` ran under, as ``name → value``: the vm sysctls in effect
    (mmlab.json's ``sysctls_vm_before`` with ``sysctl_changes`` applied), ``mmlab
    capture``'s options (``config.*``), the workload's sizing (``plan[workers].*``),
    kernel build, THP and swap (``system.*``), the memory cgroup's limits (``cgroup.*``),
    the trace setup and every kconfig option. Machine, memory, CONFIG_HZ and the cgroup
    limit are :class:`Provenance` fields (:func:`run_differences`), not repeated here.
    A plain mmtests tree (no mmlab.json) has its kconfig only."""
    meta = iteration.metadata
    changes = meta.get("sysctl_changes", {})
    sysctls = {k: v for k, v in meta.get("sysctls_vm_before", {}).items() if k not in _BOOT_SIZED}
    sysctls |= {name: change["to"] for name, change in changes.items()}
    settings = {**sysctls, **_flat("config", meta.get("config", {}))}
    settings |= _flat("system", meta.get("system", {}))
    cgroup = meta.get("cgroup", {})
    settings |= {f"cgroup.{k}": str(v) for k, v in cgroup.items() if _CGROUP_SETTING.fullmatch(k)}
    trace = meta.get("trace", {})
    for key in ("clock", "events_enabled", "buffer_size_kb_per_cpu"):
        if key in trace:
            settings |= _flat(f"trace.{key}", trace[key])
    for phase in meta.get("phases", []):
        settings |= _flat(f"plan[{phase.get('workers', '')}]", phase.get("plan", {}))
    settings = {k: _bytes(k, v) for k, v in settings.items() if k not in _NOT_SETTINGS}
    return settings | _kconfig(iteration)


def setting_differences(runs: Sequence[Run]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(setting, value per run)`` of every :func:`capture_settings` entry whose values
    differ between ``runs`` (values of one run's iterations joined by ``, ``; ``-`` for an
    iteration that did not record it), among the settings every run recorded: the sysctl
    an A/B changed, and any the experimenter did not mean to change."""
    per_run = [[capture_settings(it) for it in run.iterations] for run in runs]
    # A setting counts where every run recorded it: a plain mmtests tree records no sysctls.
    # In capture_settings' order (sysctls first), not a set's: the report must not vary.
    recorded = [dict.fromkeys(name for s in its for name in s) for its in per_run]
    names = [name for name in recorded[0] if all(name in r for r in recorded)] if runs else []
    out = []
    for name in names:
        values = tuple(
            ", ".join(dict.fromkeys(s.get(name, "-") for s in its)) or "-" for its in per_run
        )
        if len(set(values)) > 1:
            out.append((name, values))
    return tuple(out)
