"""Which boot of which kernel each iteration ran in: the unit of independent replication.

Iterations of one boot share page cache, slab, LRU and fragmentation state, so they are not
independent runs (Kalibera & Jones, "Rigorous benchmarking in reasonable time", 2013: the
level that varies most between repetitions, here the boot, is the one to replicate). Where
the tree says which boot an iteration ran in, in order of trust:

1. ``boot.json`` of ``mmlab experiment`` (one guest boot per iteration, its boot id);
2. ``vm.json`` beside the iterations of ``mmlab capture --kernel``: every iteration ran in
   that one guest boot (its ``guest_boot_id`` where recorded);
3. ``mmlab.json``'s ``system.boot_id`` (``/proc/sys/kernel/random/boot_id`` at capture);
4. otherwise a capture's or an mmtests run's iterations ran back to back in one boot of
   the machine (neither tool reboots between iterations).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.ingest import capture_meta, mmtests

__all__ = ["Boot", "boot_of", "boots_of_run", "shared_boot_notes"]


@dataclass(frozen=True)
class Boot:
    """One boot: ``key`` is unique across the runs compared; ``source`` says how it is known."""

    key: str
    source: str


def boot_of(run: mmtests.Run, iteration: mmtests.Iteration) -> Boot:
    """The boot ``iteration`` of ``run`` ran in (module docstring for the sources)."""
    boot = capture_meta.read_boot(iteration.path)
    if boot is not None and boot.guest_boot_id:
        return Boot(
            f"guest boot {boot.guest_boot_id}",
            f"{capture_meta.BOOT_JSON}: one guest boot per iteration",
        )
    vm = capture_meta.read_vm(run.path)
    if vm is not None:
        boot_id = vm.guest_boot_id
        key = f"guest boot {boot_id}" if boot_id else f"the one guest boot of {run.path}"
        return Boot(key, f"{capture_meta.VM_JSON}: every iteration ran in one guest boot")
    meta = iteration.metadata
    if meta is not None and meta.system is not None and meta.system.boot_id:
        return Boot(
            f"host boot {meta.system.boot_id}",
            f"{capture_meta.MMLAB_JSON}: the capturing machine's boot id",
        )
    return Boot(
        f"the one boot of {run.path}",
        "no boot id recorded: the run's iterations ran back to back in one boot",
    )


def boots_of_run(run: mmtests.Run) -> dict[str, Boot]:
    """iteration index (as a string, the long table's ``run``) -> its :class:`Boot`."""
    return {str(it.index): boot_of(run, it) for it in run.iterations}


def shared_boot_notes(path: Path) -> list[str]:
    """A sentence per run below ``path`` whose several iterations ran in one boot: what a
    model calibrated or scored over those iterations cannot take for independent runs."""
    notes = []
    for run in mmtests.find_runs(path):
        found = set(boots_of_run(run).values())
        if len(found) == 1 and len(run.iterations) > 1:
            (boot,) = found
            notes.append(
                f"{run.name}: its {len(run.iterations)} iterations ran in one boot "
                f"({boot.source}); their spread is within-boot only, so intervals and runs "
                "needed from it are optimistic (one boot per run: mmlab experiment)"
            )
    return notes
