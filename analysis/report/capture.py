"""Text ``mmlab capture`` prints when it is done, from each iteration's ``mmlab.json``
(:class:`~analysis.ingest.capture_meta.IterationMeta`: probe overhead, trace, OOM kills,
epoch times, the user's command's phase)."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.ingest.capture_meta import MMLAB_JSON, IterationMeta
from analysis.report.text import fit
from analysis.report.units import common_scale

__all__ = ["format_capture"]


def format_capture(metas: Sequence[IterationMeta]) -> str:
    """Probe overhead (built-in workload), then per iteration: duration, trace size, lost
    events, OOM kills, and the user's command's exit and times; lines wrapped to 80 columns."""
    lines: list[str] = []
    if metas:
        lines += [f"WARNING: {line}" for line in metas[0].stale_leftovers]
    if metas and (ov := metas[0].probe_overhead) is not None:
        lines.append(
            f"probe overhead on idle cgroup ({ov.map_bytes // 1024} KiB mappings, "
            f"{ov.mappings} samples): median {ov.idle_latency_median_us:.1f} us per "
            f"mapping, p99 {ov.idle_latency_p99_us:.1f} us; Python page loop alone "
            f"{ov.loop_overhead_median_us:.1f} us"
        )
    for m in metas:
        t = m.trace
        # Raw and compressed sizes in one unit (units.common_scale), three digits each.
        sizes = (t.bytes_uncompressed, t.bytes_compressed)
        scale = common_scale(sizes, "B")
        raw, packed = (f"{scale.text(float(b))} {scale.unit}" for b in sizes)
        lines.append(
            f"iter-{m.iteration}: {m.end_epoch_s - m.start_epoch_s:.1f} s, trace "
            f"{raw} raw / {packed} {t.file}, lost events {t.lost_events} in "
            f"{t.lost_event_lines} lines, OOM kills {m.oom_kills}"
        )
        for ph in m.phases:
            if ph.command is not None:
                lines.append(
                    f"  command {ph.ended} after {ph.elapsed_s:.2f} s "
                    f"({ph.user_s:.2f} s user, {ph.system_s:.2f} s system)"
                )
        if m.oom_kills:
            lines.append(
                f"  WARNING: the cgroup's OOM killer fired {m.oom_kills} time(s) in "
                f"iter-{m.iteration} (see {MMLAB_JSON} phases[].cgroup_events_after)"
            )
    return fit("\n".join(lines))
