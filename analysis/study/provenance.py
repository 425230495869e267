"""Where each iteration's numbers came from: kernel, HZ, machine, cgroup, workload.

Read from ``mmlab.json`` (written by ``mmlab capture``), else from the plain mmtests files
(``kernel.version``, ``kconfig-*``, ``lscpu.txt``, tests-sysstate's meminfo; see
:class:`~analysis.ingest.mmtests.Machine`) so a third-party run still says what it can.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from analysis.ingest.capture_meta import System
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


def _system(machine: Machine) -> System:
    """``machine`` as mmlab.json's ``system`` says it (no boot id, CONFIG_HZ from kconfig)."""
    return System(
        kernel_release=machine.kernel_release,
        hostname=machine.hostname,
        cpu_model=machine.cpu_model,
        logical_cpus=machine.logical_cpus,
        mem_total_kib=machine.mem_total_kib,
        config_hz=None,
        boot_id=None,
    )


def iteration_provenance(run: Run, iteration: Iteration) -> Provenance:
    """Capture context of ``iteration`` of ``run`` (see :class:`Provenance`)."""
    meta = iteration.metadata
    # A plain mmtests tree has no mmlab.json: its kernel.version, lscpu and meminfo say it.
    system = meta.system if meta and meta.system else _system(iteration.machine)
    machine = ", ".join(
        str(part)
        for part in (
            system.hostname,
            system.cpu_model,
            f"{system.logical_cpus} CPUs" if system.logical_cpus else None,
            "TCG-emulated guest" if run.emulated else None,
        )
        if part
    )
    version = meta.cgroup_version if meta else None
    cg = f"v{version}" if version is not None else ""
    if cg and meta and meta.limit_mb:
        cg += f", limit {meta.limit_mb} MiB"
    return Provenance(
        run=run.name,
        iteration=iteration.index,
        kernel=system.kernel_release or "",
        config_hz=system.config_hz or iteration.config_hz,
        machine=machine,
        memory_kib=system.mem_total_kib,
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
    if meta is None:
        return _kconfig(iteration)
    sysctls = {k: v for k, v in meta.sysctls_before.items() if k not in _BOOT_SIZED}
    settings = sysctls | dict(meta.sysctls_set)
    for name, value in meta.settings().items():
        group, _, key = name.partition(".")
        if group != "cgroup" or _CGROUP_SETTING.fullmatch(key):
            settings[name] = value
    settings = {k: _bytes(k, v) for k, v in settings.items()}
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
