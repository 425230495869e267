"""The stutterp-style workload plan: who runs, how much memory each touches (pure arithmetic).

stutterp (mmtests ``pagereclaim-stutterp-noreaders``, seed 000) runs, per worker count N,
one anon-latency probe, X file writers and Z anon hogs with ``1 + X + Z == N``. Its stated
working set is ``(100 + dirty_ratio)%`` of memory: anon hogs take ``(100 - dirty_ratio)%``
and the files twice the dirty share, so file pages must be reclaimed while dirty and
writeback pages sit at the LRU tail. Here "memory" is the capture cgroup's limit.

This machine class has no swap, so anon pages cannot be reclaimed: the hogs are sized as
``limit - dirty share - probe - margin - process overhead`` so that only file pages can make
room and the cgroup reclaims rather than OOMs. Each hog maps its share once and keeps it
resident for the whole phase (``workload.run_hog``), so this anon footprint is permanent and
the files and the probe live in what is left. The files take what the margin leaves plus
twice the dirty share, so the working set is ``limit + dirty share`` whatever the margin.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = [
    "MIB",
    "PAGE_BYTES",
    "PhasePlan",
    "PlanParams",
    "max_limit_bytes",
    "page_align",
    "phase_plan",
    "split_workers",
]

MIB = 1 << 20
PAGE_BYTES = 4096


@dataclass(frozen=True)
class PhasePlan:
    """One worker count's share-out of the cgroup limit (all sizes in bytes)."""

    workers: int
    writers: int
    hogs: int
    probe_map_bytes: int
    file_bytes_per_writer: int
    anon_bytes_per_hog: int
    file_total_bytes: int
    anon_total_bytes: int
    overhead_bytes: int
    limit_bytes: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class PlanParams:
    """Inputs to the share-out.

    ``dirty_ratio`` mirrors ``vm.dirty_ratio`` (percent); ``margin_bytes`` is headroom the
    hogs leave unused. Python's own memory is charged to the cgroup like the hogs': the
    launcher (``launcher_overhead_bytes``, interpreter start-up) and each forked worker
    (``process_overhead_bytes``, pages copied on write). Defaults measured on kernel 6.18 with
    Python 3.11 from the cgroup's ``memory.usage_in_bytes``: 6.5-10.8 MiB for the launcher,
    0.8-1.2 MiB per worker.
    """

    limit_bytes: int
    dirty_ratio: int
    probe_map_bytes: int = 1 * MIB
    margin_bytes: int = 24 * MIB
    launcher_overhead_bytes: int = 12 * MIB
    process_overhead_bytes: int = 5 * MIB // 4
    file_share_factor: int = 2


def split_workers(workers: int) -> tuple[int, int]:
    """Split ``workers - 1`` non-probe workers into (writers, hogs); hogs get the odd one.

    >>> split_workers(4)
    (1, 2)
    """
    if workers < 3:
        raise ValueError(f"stutterp needs at least 3 workers (probe, writer, hog), got {workers}")
    rest = workers - 1
    writers = rest // 2
    return writers, rest - writers


def page_align(nbytes: int) -> int:
    """Round down to a whole number of 4 KiB pages (mmap and fault granularity)."""
    return nbytes // PAGE_BYTES * PAGE_BYTES


def phase_plan(params: PlanParams, workers: int) -> PhasePlan:
    """Share the limit out between probe, writers and hogs for ``workers`` workers.

    Hogs fill ``limit - dirty share - probe - margin - overhead``; files total
    ``file_share_factor * dirty share + margin``, so probe, hogs, overhead and files add up to
    ``limit + (file_share_factor - 1) * dirty share``. Raises ``ValueError`` when nothing is
    left for the hogs (limit too small for that many workers).
    """
    if not 0 < params.dirty_ratio < 100:
        raise ValueError(f"dirty_ratio must be in 1..99, got {params.dirty_ratio}")
    writers, hogs = split_workers(workers)
    dirty_share = params.limit_bytes * params.dirty_ratio // 100
    file_total = dirty_share * params.file_share_factor + params.margin_bytes
    overhead = params.launcher_overhead_bytes + workers * params.process_overhead_bytes
    anon_total = (
        params.limit_bytes - dirty_share - params.probe_map_bytes - params.margin_bytes - overhead
    )
    per_hog = page_align(anon_total // hogs) if anon_total > 0 else 0
    if per_hog < PAGE_BYTES:
        raise ValueError(
            f"limit {params.limit_bytes // MIB} MiB leaves no room for {hogs} anon hogs with "
            f"{workers} workers (dirty share {dirty_share // MIB} MiB, overhead "
            f"{overhead // MIB} MiB); raise --limit-mb or lower --workers"
        )
    per_writer = page_align(file_total // writers)
    return PhasePlan(
        workers=workers,
        writers=writers,
        hogs=hogs,
        probe_map_bytes=page_align(params.probe_map_bytes),
        file_bytes_per_writer=per_writer,
        anon_bytes_per_hog=per_hog,
        file_total_bytes=per_writer * writers,
        anon_total_bytes=per_hog * hogs,
        overhead_bytes=overhead,
        limit_bytes=params.limit_bytes,
    )


def max_limit_bytes(mem_available_bytes: int, fraction: float = 0.5) -> int:
    """Largest cgroup limit allowed: ``fraction`` of /proc/meminfo MemAvailable.

    The machine is shared and has no swap; a limit above this could push the rest of the
    machine into reclaim when the cgroup fills.
    """
    return int(mem_available_bytes * fraction)
