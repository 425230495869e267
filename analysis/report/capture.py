"""Text ``mmlab capture`` prints when it is done, from each iteration's ``mmlab.json``.

Keys are those :func:`analysis.capture.run.capture` writes (``probe.idle_overhead``,
``trace``, ``oom_kills``, epoch times); see :mod:`analysis.capture.metadata`.
"""

from __future__ import annotations

__all__ = ["format_capture"]


def format_capture(metas: list[dict]) -> str:
    """Probe overhead, then per iteration: duration, trace size, lost events, OOM kills."""
    lines: list[str] = []
    if metas:
        lines += [f"WARNING: {line}" for line in metas[0].get("stale_leftovers", [])]
        ov = metas[0]["probe"]["idle_overhead"]
        lines.append(
            f"probe overhead on idle cgroup ({ov['map_bytes'] // 1024} KiB mappings, "
            f"{ov['mappings']} samples): median {ov['idle_latency_median_us']:.1f} us per "
            f"mapping, p99 {ov['idle_latency_p99_us']:.1f} us; Python page loop alone "
            f"{ov['loop_overhead_median_us']:.1f} us"
        )
    for m in metas:
        t = m["trace"]
        lines.append(
            f"iter-{m['iteration']}: {m['end_epoch_s'] - m['start_epoch_s']:.1f} s, trace "
            f"{t['bytes_uncompressed'] / 2**20:.2f} MiB raw / {t['bytes_compressed'] / 2**20:.2f} "
            f"MiB {t['file']}, lost events {t['lost_events']} in {t['lost_event_lines']} lines, "
            f"OOM kills {m['oom_kills']}"
        )
        if m["oom_kills"]:
            lines.append(
                f"  WARNING: the cgroup's OOM killer fired {m['oom_kills']} time(s) in "
                f"iter-{m['iteration']} (see mmlab.json phases[].cgroup_events_after)"
            )
    return "\n".join(lines)
