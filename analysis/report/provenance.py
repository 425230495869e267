"""Where each iteration's numbers came from: kernel, HZ, machine, cgroup, workload.

Read from ``mmlab.json`` (written by ``mmlab capture``), else from the plain mmtests files
(``kernel.version``, ``kconfig-*``, ``lscpu.txt``, tests-sysstate's meminfo; see
:class:`~analysis.ingest.mmtests.Machine`) so a third-party run still says what it can.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis.ingest.mmtests import Iteration, Machine, Run

__all__ = ["Provenance", "format_provenance", "iteration_provenance", "run_differences"]


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


def format_provenance(rows: Sequence[Provenance]) -> str:
    """One block per run: what is common to its iterations once, differences per iteration."""
    out: list[str] = []
    for run in dict.fromkeys(r.run for r in rows):
        mine = [r for r in rows if r.run == run]
        out.append(
            f"{run}: {len(mine)} iteration{'s' if len(mine) > 1 else ''} "
            f"({', '.join(f'iter-{r.iteration}' for r in mine)})"
        )
        for label, values in (
            ("kernel", [r.kernel or "unknown" for r in mine]),
            ("CONFIG_HZ", [str(r.config_hz) if r.config_hz else "unknown" for r in mine]),
            ("machine", [r.machine or "not recorded" for r in mine]),
            (
                "memory",
                [f"{r.memory_kib / 1048576:.1f} GiB" if r.memory_kib else "unknown" for r in mine],
            ),
            ("memcg", [r.cgroup or "not recorded" for r in mine]),
            ("tests", [" ".join(r.tests) or "none found" for r in mine]),
        ):
            if len(set(values)) == 1:
                out.append(f"  {label:<10} {values[0]}")
            else:
                out += [
                    f"  {label:<10} iter-{r.iteration}: {v}"
                    for r, v in zip(mine, values, strict=True)
                ]
    return "\n".join(out) + "\n"
