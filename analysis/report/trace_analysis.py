"""Text tables (80 columns) and JSON for :class:`analysis.metrics.trace_analysis.TraceAnalysis`.

The stall distribution follows mmtests' row layout (statistics down, series across); the
throttle table and the ``uniq -c`` view follow seed 000; the summary follows
``trace-vmscan-postprocess.pl``.
"""

from __future__ import annotations

import math
import textwrap

import polars as pl

from analysis.metrics.trace_analysis import TraceAnalysis
from analysis.metrics.trace_rows import benchmark_times, mmtests_trace_rows

__all__ = ["as_json", "format_analysis", "format_distributions", "format_uniq_c"]

_REASON_PREFIX = "VMSCAN_THROTTLE_"


def _short(reason: str) -> str:
    return reason.removeprefix(_REASON_PREFIX).removeprefix("writeback_")


def _num(value: float | int | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def format_distributions(dist: pl.DataFrame, per_block: int = 3) -> str:
    """mmtests-shaped stall tables: statistic rows, up to ``per_block`` series per block."""
    if dist.is_empty():
        return "Stall distributions: no closed intervals or throttle delays\n"
    stats = [c for c in dist.columns if c != "series"]
    out = ["Stall distributions (ms; Pct = mmtests nearest rank, no interpolation)"]
    for start in range(0, dist.height, per_block):
        block = dist.slice(start, per_block)
        # Two header lines: what (e.g. "throttle NOPROGRESS") over the context.
        names = [_short_series(n).rsplit(" ", 1) for n in block["series"].to_list()]
        out.append(f"{'':<20}" + "".join(f"{n[0][:18]:>19}" for n in names))
        out.append(f"{'':<20}" + "".join(f"{n[-1][:18]:>19}" for n in names))
        for stat in stats:
            values = block[stat].to_list()
            label = stat.removesuffix("_ms").replace("stalls_", "n ").replace("_", "-")
            label = label.replace("maxms", "max ms").removesuffix("ms").rstrip()
            out.append(f"{label:<20}" + "".join(f"{_num(v):>19}" for v in values))
        out.append("")
    return "\n".join(out)


def _short_series(name: str) -> str:
    return name.replace(_REASON_PREFIX, "").replace("writeback_", "")


def format_uniq_c(histogram: pl.DataFrame) -> str:
    """The ``sort | uniq -c`` view of throttle delays, one block per group (seed 000's shape).

    Rows at the timeout are right-censored (marked ``>=``: the real wait was at least that).
    """
    out = []
    for key, rows in histogram.group_by(
        "event", "context", "reason", "usec_timeout", maintain_order=True
    ):
        event, context, reason, timeout = key
        out.append(f"{event} {reason if reason != event else ''} [{context}]".replace("  ", " "))
        delay_key = "usect_delayed" if event == "mm_vmscan_throttled" else "usec_delayed"
        for row in rows.iter_rows(named=True):
            mark = " >=" if row["at_timeout"] else ""
            tail = f" reason={reason}" if reason != event else ""
            delay = f"{delay_key}={row['delay_us']}"
            out.append(f"{row['count']:>7} usec_timeout={timeout} {delay}{tail}{mark}")
        out.append("")
    return "\n".join(out)


def _pairing_lines(a: TraceAnalysis) -> list[str]:
    out = [
        "Reclaim stalls (begin->end per pid)",
        f"{'context':<16}{'count':>8}{'total_s':>10}{'unp.beg':>8}{'overwr':>7}{'open':>6}"
        f"{'unp.end':>8}{'clk<':>5}{'comm':>5}{'lost':>6}",
    ]
    reports = [s.report for s in a.reclaim.values()] + [a.compaction.report]
    for r in reports:
        if r.count == 0 and r.unpaired_begin == 0 and r.unpaired_end == 0:
            continue
        out.append(
            f"{r.kind:<16}{r.count:>8}{r.total_s:>10.3f}{r.unpaired_begin:>8}"
            f"{r.overwritten_begin:>7}{r.open_at_end:>6}{r.unpaired_end:>8}"
            f"{r.clock_backwards:>5}{r.comm_changed:>5}{r.lost_affected:>6}"
        )
    out.append(
        "unp.beg = overwritten (second begin, mmtests keeps it) + open at end; unp.end =\n"
        "end without begin (ignored); clk< = timestamps going backwards for a pid; comm =\n"
        "begin/end comm differ (pid reuse); lost = intervals spanning lost events."
    )
    return out


def _throttle_lines(a: TraceAnalysis) -> list[str]:
    out = [
        "Throttling (delays at the timeout are right-censored: real wait >= timeout)",
        f"{'reason':<18}{'timeout_us':>10} {'context':<10}{'count':>8}{'zero%':>7}"
        f"{'timeout%':>9}{'mean_us':>11}",
    ]
    for r in a.throttle.iter_rows(named=True):
        out.append(
            f"{_short(r['reason'])[:18]:<18}{_num(r['usec_timeout']):>10} {r['context'][:10]:<10}"
            f"{r['count']:>8}{_pct(r['zero_share']):>7}{_pct(r['timeout_share']):>9}"
            f"{_num(r['mean_usec'], 0):>11}"
        )
    hz = a.hz
    if hz.hz is not None:
        config = f"CONFIG_HZ={hz.config_hz}" if hz.config_hz else "no kconfig"
        out.append(
            f"HZ from the delay quantum: jiffy {hz.jiffy_us} us -> HZ {hz.hz:g} ({hz.method}, "
            f"{hz.distinct_delays} distinct delays)"
        )
        out.append(f"  checked against {config}: {hz.verdict}")
    return out


def _daemon_lines(a: TraceAnalysis) -> list[str]:
    out = [
        f"{'daemon':<10}{'nid':>4}{'wakes':>8}{'rewake':>8}{'sleeps':>7}{'awake_s':>10}"
        f"{'upper_s':>10}  kind"
    ]
    for r in (*a.kswapd, *a.kcompactd):
        out.append(
            f"{r.daemon:<10}{r.nid:>4}{r.wakes:>8}{r.rewakes:>8}{r.sleeps:>7}"
            f"{r.awake_s:>10.3f}{r.awake_upper_s:>10.3f}  {r.awake_kind}"
        )
    out.append(
        "lower_bound: no sleep closes an interval; awake_s sums wake -> own last event\n"
        "before the next wake, upper_s runs open intervals to the capture's edge."
    )
    return out


def _frame_lines(title: str, frame: pl.DataFrame, columns: list[tuple[str, str, int]]) -> list[str]:
    """Rows of ``frame`` under ``title`` with (column, header, width) cells."""
    if frame.is_empty():
        return []
    out = [title, "".join(f"{h:>{w}}" if i else f"{h:<{w}}" for i, (_, h, w) in enumerate(columns))]
    for row in frame.iter_rows(named=True):
        cells = []
        for i, (col, _, w) in enumerate(columns):
            v = row[col]
            text = _num(v, 3) if isinstance(v, float) or v is None else str(v)
            cells.append(f"{text[: w - 1]:>{w}}" if i else f"{text[: w - 1]:<{w}}")
        out.append("".join(cells))
    return out


def _mmtests_lines(a: TraceAnalysis) -> list[str]:
    """mmtests' rows (seed 002's vmscan block, seed 003's compaction block) that the summary
    above does not already print under the same name; reasons numbered below."""
    shown = set(a.summary["statistic"]) if not a.summary.is_empty() else set()
    rows = [r for r in mmtests_trace_rows(a, benchmark_times(a.source)) if r.label not in shown]
    notes = list(dict.fromkeys(r.note for r in rows if r.note))
    out = ["mmtests rows (seeds 002, 003; rows of the same name are above)"] if rows else []
    for r in rows:
        mark = f" [{notes.index(r.note) + 1}]" if r.note else ""
        timed = r.unit in ("s", "ms", "%")
        value = "-" if r.value is None else _num(r.value, 2) if timed else str(int(r.value))
        out.append(f"  {r.label:<44}{value:>16} {r.unit}{mark}")
    for i, note in enumerate(notes, start=1):
        out += textwrap.wrap(f"[{i}] {note}", 80, subsequent_indent="    ")
    return out


def format_analysis(a: TraceAnalysis) -> str:
    """The full text report of one source, 80 columns wide."""
    span = f", capture {a.capture_s:.3f} s" if a.capture_s is not None else ""
    lost = (
        f"LOST EVENTS: {a.lost_events} (numbers below may be short)"
        if a.lost_events
        else "no lost events"
    )
    out = [f"{a.source} ({a.input_kind}{span}; {lost})", ""]
    if a.histogram_groups:
        out.append("Histogram groups (blocks of the text; label = the prose above)")
        for g in a.histogram_groups:
            label = g.context or (g.label[:41] if g.label else "-")
            lines = f"{g.first_line}-{g.last_line}"
            out.append(f"  group {g.group:<3} lines {lines:<10}{g.total_count:>9}  {label}")
        out.append("")
    if a.input_kind == "trace":
        out += [*_pairing_lines(a), ""]
    if not a.throttle.is_empty():
        out += [*_throttle_lines(a), ""]
    if a.kswapd or a.kcompactd:
        out += [*_daemon_lines(a), ""]
    out.append(format_distributions(a.distributions))
    out += _frame_lines(
        "Compaction by context",
        a.compaction_time,
        [
            ("context", "context", 12),
            ("count", "count", 9),
            ("total_s", "total_s", 11),
            ("mean_ms", "mean_ms", 11),
            ("max_ms", "max_ms", 11),
        ],
    )
    out += _frame_lines(
        "Shrinkers (objects)",
        a.shrinker.sort("scanned_objects", descending=True).head(12),
        [
            ("shrinker", "shrinker", 22),
            ("context", "ctx", 7),
            ("invocations", "calls", 7),
            ("deferred_in_objects", "def.in", 10),
            ("scanned_objects", "scanned", 10),
            ("freed_objects", "freed", 9),
            ("deferred_out_objects", "def.out", 10),
            ("inherited_share", "inh", 5),
        ],
    )
    out += _frame_lines(
        "LRU (pages, mm_vmscan_lru_shrink_inactive)",
        a.lru,
        [
            ("context", "context", 9),
            ("lru", "lru", 5),
            ("scanned_pages", "scanned", 11),
            ("reclaimed_pages", "reclaimed", 11),
            ("dirty_pages", "dirty", 9),
            ("writeback_pages", "writeback", 10),
            ("immediate_pages", "immed", 9),
            ("activated_pages", "activated", 10),
        ],
    )
    if a.lru_check is not None and not a.lru_check.is_empty():
        out.append(
            "vmstat counts the whole machine over the iteration; a trace filtered to one\n"
            "cgroup, or shorter than the iteration, covers less (diff < 0)."
        )
        out += _frame_lines(
            "LRU trace vs /proc/vmstat deltas (pages)",
            a.lru_check,
            [
                ("counter", "counter", 36),
                ("vmstat_pages", "vmstat", 11),
                ("trace_pages", "trace", 11),
                ("diff_pages", "diff", 10),
                ("diff_share", "share", 8),
            ],
        )
    if not a.summary.is_empty():
        out.append("Summary (trace-vmscan-postprocess.pl)")
        for r in a.summary.iter_rows(named=True):
            value = _num(r["value"], 3) if r["unit"] == "s" else str(int(r["value"]))
            out.append(f"  {r['statistic']:<44}{value:>16} {r['unit']}")
    out += _mmtests_lines(a)
    return "\n".join(out).rstrip() + "\n"


def _records(frame: pl.DataFrame) -> list[dict]:
    def clean(v):
        return None if isinstance(v, float) and math.isnan(v) else v

    return [{k: clean(v) for k, v in row.items()} for row in frame.iter_rows(named=True)]


def as_json(a: TraceAnalysis) -> dict:
    """JSON-ready dict: ``throttle`` (reason, usec_timeout, context, count, zero_share,
    timeout_share, mean_usec, ...), ``direct_reclaim`` (count, total_s, unpaired_begin,
    unpaired_end, ...), ``kswapd`` per node (wakes, sleeps, awake_s, awake_kind, ...) and the
    rest of the analysis."""

    def pairing(name: str) -> dict | None:
        s = a.reclaim.get(name)
        return s.report.__dict__ if s else None

    return {
        "source": a.source,
        "input_kind": a.input_kind,
        "lost_events": a.lost_events,
        "capture_s": a.capture_s,
        "throttle": _records(a.throttle),
        "hz": a.hz.__dict__,
        "direct_reclaim": pairing("direct"),
        "reclaim": {k: v.report.__dict__ for k, v in a.reclaim.items()},
        "kswapd": [r.__dict__ for r in a.kswapd],
        "kcompactd": [r.__dict__ for r in a.kcompactd],
        "compaction": {
            "pairing": a.compaction.report.__dict__,
            "by_context": _records(a.compaction_time),
            "status": _records(a.compaction_status),
            "try_to_compact_by_order": _records(a.compact_orders),
        },
        "shrinker": _records(a.shrinker),
        "shrinker_work": _records(a.shrinker_work),
        "lru": _records(a.lru),
        "lru_vs_vmstat": _records(a.lru_check) if a.lru_check is not None else None,
        "distributions": _records(a.distributions),
        "summary": _records(a.summary),
        "mmtests_rows": [r.__dict__ for r in mmtests_trace_rows(a, benchmark_times(a.source))],
        "histogram_groups": [g.__dict__ | {"events": list(g.events)} for g in a.histogram_groups]
        if a.histogram_groups
        else None,
    }
