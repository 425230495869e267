"""Text tables (80 columns) and the JSON form of one
:class:`analysis.metrics.trace_analysis.TraceAnalysis`.

The stall distribution follows mmtests' row layout (statistics down, series across); the
throttle table and the ``uniq -c`` view follow seed 000; the summary follows
``trace-vmscan-postprocess.pl``.
"""

from __future__ import annotations

import polars as pl

from analysis.metrics.attribution import NO_MEMCG
from analysis.metrics.throttle import REASON_PREFIX
from analysis.metrics.trace_analysis import TraceAnalysis
from analysis.metrics.trace_rows import benchmark_times, mmtests_trace_rows
from analysis.report.json_output import jsonable
from analysis.report.table import Column, Footnotes, Table
from analysis.report.text import WIDTH, fit
from analysis.report.units import PLAIN, fixed

__all__ = [
    "analysis_json",
    "duplicates_note",
    "format_analysis",
    "format_distributions",
    "format_uniq_c",
    "unparsed_note",
]


def _short(reason: str) -> str:
    return reason.removeprefix(REASON_PREFIX).removeprefix("writeback_")


def _share(value: float | None) -> str:
    """A 0..1 share as a percentage number (the header says %)."""
    return fixed(None if value is None else 100 * value, 2)


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
        columns = [Column(width=20, left=True)]
        columns += [Column(f"{n[0][:18]}\n{n[-1][:18]}", 18) for n in names]
        rows = []
        for stat in stats:
            label = stat.removesuffix("_ms").replace("stalls_", "n ").replace("_", "-")
            label = label.replace("maxms", "max ms").removesuffix("ms").rstrip()
            rows.append([label, *(PLAIN.text(v) for v in block[stat].to_list())])
        out += [*Table(columns, rows).text(), ""]
    return "\n".join(out)


def _short_series(name: str) -> str:
    return name.replace(REASON_PREFIX, "").replace("writeback_", "")


def format_uniq_c(histogram: pl.DataFrame) -> str:
    """The ``sort | uniq -c`` view of throttle delays, one block per group (seed 000's shape).

    Rows at the timeout are right-censored (marked ``>=``: the real wait was at least that).
    Written as ``uniq -c`` prints, not through :func:`~analysis.report.table.render`, so
    the lines compare with the seed's paste character for character.
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
    reports = [s.report for s in a.reclaim.values()] + [a.compaction.report]
    # Columns after count and total_s, in header order.
    tail = ("unpaired_begin", "overwritten_begin", "open_at_end", "unpaired_end")
    tail += ("clock_backwards", "comm_changed", "lost_affected")
    rows = [
        (r.kind, str(r.count), f"{r.total_s:.3f}", *(str(getattr(r, name)) for name in tail))
        for r in reports
        if r.count or r.unpaired_begin or r.unpaired_end
    ]
    headers = [("count", 7), ("total_s", 9), ("unp.beg", 7), ("overwr", 6), ("open", 5)]
    headers += [("unp.end", 7), ("clk<", 4), ("comm", 4), ("lost", 5)]
    columns = [Column("context", 16, left=True), *(Column(h, w) for h, w in headers)]
    return [
        "Reclaim stalls (begin->end per pid)",
        *Table(columns, rows).text(),
        "unp.beg = overwritten (second begin, mmtests keeps it) + open at end; unp.end =\n"
        "end without begin (ignored); clk< = timestamps going backwards for a pid; comm =\n"
        "begin/end comm differ (pid reuse); lost = intervals spanning lost events.",
    ]


def _throttle_lines(a: TraceAnalysis) -> list[str]:
    columns = [
        Column("reason", 17, left=True, limit=18),
        Column("timeout_us", 9),
        Column("context", 10, left=True, limit=10),
        Column("count", 7),
        Column("zero%", 6),
        Column("timeout%", 8),
        Column("mean_us", 10),
    ]
    rows = [
        (
            _short(r["reason"]),
            fixed(r["usec_timeout"], 0),
            r["context"],
            str(r["count"]),
            _share(r["zero_share"]),
            _share(r["timeout_share"]),
            fixed(r["mean_usec"], 0),
        )
        for r in a.throttle.iter_rows(named=True)
    ]
    out = [
        "Throttling (delays at the timeout are right-censored: real wait >= timeout)",
        *Table(columns, rows).text(),
    ]
    hz = a.hz
    if hz.hz is not None:
        config = f"CONFIG_HZ={hz.config_hz}" if hz.config_hz else "no kconfig"
        out.append(
            f"HZ from the delay quantum: jiffy {hz.jiffy_us} us -> HZ {hz.hz:g} ({hz.method}, "
            f"{hz.distinct_delays} distinct delays)"
        )
        out.append(f"  checked against {config}: {hz.verdict}")
        if conflict := hz.conflict():
            out.append(f"  {conflict}")
    return out


def _daemon_lines(a: TraceAnalysis) -> list[str]:
    headers = [("nid", 3), ("wakes", 7), ("rewake", 7), ("sleeps", 6)]
    headers += [("awake_s", 9), ("upper_s", 9)]
    columns = [Column("daemon", 10, left=True), *(Column(h, w) for h, w in headers)]
    columns.append(Column("kind", left=True))
    rows = [
        (
            r.daemon,
            *map(str, (r.nid, r.wakes, r.rewakes, r.sleeps)),
            f"{r.awake_s:.3f}",
            f"{r.awake_upper_s:.3f}",
            r.awake_kind,
        )
        for r in (*a.kswapd, *a.kcompactd)
    ]
    return [
        *Table(columns, rows).text(),
        "lower_bound: no sleep closes an interval; awake_s sums wake -> own last event\n"
        "before the next wake, upper_s runs open intervals to the capture's edge.",
    ]


def _frame_lines(title: str, frame: pl.DataFrame, columns: list[tuple[str, str, int]]) -> list[str]:
    """Rows of ``frame`` under ``title`` with (column, header, width) cells; the first
    column is text, the others numbers (floats with 3 decimals)."""
    if frame.is_empty():
        return []
    spec = [
        # The first column's width includes the space before the next one.
        # Only the name column is abbreviated; a number is never shortened.
        Column(
            header, width if i == 0 else width - 1, left=i == 0, limit=width - 1 if i == 0 else None
        )
        for i, (_, header, width) in enumerate(columns)
    ]
    names = [name for name, _, _ in columns]
    rows = [
        [fixed(v, 3) if isinstance(v, float) or v is None else str(v) for v in row]
        for row in frame.select(names).iter_rows()
    ]
    return [title, *Table(spec, rows).text()]


def _histogram_group_lines(a: TraceAnalysis) -> list[str]:
    columns = [
        Column("group", 5),
        Column("lines", 9, left=True),
        Column("count", 9),
        Column("label", left=True, limit=41),
    ]
    rows = [
        (
            str(g.group),
            f"{g.first_line}-{g.last_line}",
            str(g.total_count),
            g.context or g.label or "-",
        )
        for g in a.histogram_groups
    ]
    title = "Histogram groups (blocks of the text; label = --label or the prose above)"
    return [title, *Table(columns, rows).text(indent=2)]


# Processes the text shows (the JSON has every one).
TOP_PROCESSES = 10


def _attribution_lines(a: TraceAnalysis) -> list[str]:
    """Who paid: the top processes by time stalled, then stalls by order and gfp flags."""
    procs = a.by_process
    if procs.is_empty():
        return []
    shown = procs.head(TOP_PROCESSES).with_columns(
        process=pl.format("{}-{}", "comm", "pid"),
        stall_s=pl.col("stalled_s"),
    )
    out = _frame_lines(
        f"Who paid (top {min(TOP_PROCESSES, procs.height)} of {procs.height} processes by "
        "time stalled; --json has all)",
        shown,
        [
            ("process", "process", 16),
            ("contexts", "ctx", 6),
            ("begins", "begins", 7),
            ("stall_s", "stall_s", 8),
            ("scanned_pages", "scanned", 9),
            ("reclaimed_pages", "reclaimed", 10),
            ("throttled", "thrott", 7),
            ("throttled_s", "thr_s", 7),
            ("compaction_s", "comp_s", 8),
        ],
    )
    for title, frame, key in (
        ("Reclaim stalls by allocation order", a.by_order, ("order", "order", 7)),
        ("Reclaim stalls by gfp flags", a.by_gfp, ("gfp_flags", "gfp_flags", 38)),
    ):
        out += _frame_lines(
            title,
            frame.with_columns(pl.col(key[0]).cast(pl.String)),
            [
                key,
                ("context", "context", 9),
                ("stalls", "stalls", 9),
                ("stalled_s", "stall_s", 10),
                ("processes", "procs", 7),
                ("share", "share", 7),
            ],
        )
    return [*out, fit(f"By memory cgroup: {NO_MEMCG}")]


def _summary_lines(summary: pl.DataFrame) -> list[str]:
    """The script's summary rows; a row whose events are not in the trace says so."""
    notes = Footnotes()
    rows = [
        (
            r["statistic"],
            "not traced"
            if r["value"] is None
            else fixed(r["value"], 3)
            if r["unit"] == "s"
            else str(int(r["value"])),
            f"{r['unit']} {notes.mark(r['note'])}" if r["note"] else r["unit"],
        )
        for r in summary.iter_rows(named=True)
    ]
    columns = [Column(width=44, left=True), Column(width=15), Column(left=True)]
    title = "Summary (trace-vmscan-postprocess.pl; direct reclaim and kswapd, memcg apart)"
    return [title, *Table(columns, rows).text(indent=2), *notes.lines()]


def _mmtests_lines(a: TraceAnalysis) -> list[str]:
    """mmtests' rows (seed 002's vmscan block, seed 003's compaction block) that the summary
    above does not already print under the same name; reasons numbered below."""
    shown = set(a.summary["statistic"]) if not a.summary.is_empty() else set()
    rows = [r for r in mmtests_trace_rows(a, benchmark_times(a.source)) if r.label not in shown]
    if not rows:
        return []
    notes = Footnotes()
    cells = [
        (
            r.label,
            "-"
            if r.value is None
            else fixed(r.value, 2)
            if r.unit in ("s", "ms", "%")
            else str(int(r.value)),
            f"{r.unit} {notes.mark(r.note)}" if r.note else r.unit,
        )
        for r in rows
    ]
    columns = [Column(width=44, left=True), Column(width=15), Column(left=True)]
    title = "mmtests rows (seeds 002, 003; rows of the same name are above)"
    return [title, *Table(columns, cells).text(indent=2), *notes.lines()]


def unparsed_note(a: TraceAnalysis) -> str:
    """``; N unparsed lines (lines 2, 5)`` for a trace (every count, 0 too); empty for a
    mail histogram."""
    if a.input_kind != "trace":
        return ""
    if not a.unparsed:
        return "; 0 unparsed lines"
    more = ", ..." if a.unparsed > len(a.unparsed_lines) else ""
    return f"; {a.unparsed:,} unparsed lines: {', '.join(map(str, a.unparsed_lines))}{more}"


def duplicates_note(a: TraceAnalysis) -> str:
    """``; N DUPLICATED LINES ...`` when some line repeats an earlier one exactly."""
    dups = a.duplicates
    if not dups.lines:
        return ""
    return (
        f"; {dups.lines:,} DUPLICATED LINES (first at line {dups.first_line}): same "
        "timestamp, cpu, task, event and fields, which ftrace does not write (a trace "
        "concatenated or pasted twice?); every count below includes them"
    )


def format_analysis(a: TraceAnalysis) -> str:
    """The full text report of one source, 80 columns wide."""
    span = f", capture {a.capture_s:.3f} s" if a.capture_s is not None else ""
    lost = (
        f"LOST EVENTS: {a.lost_events} (numbers below may be short)"
        if a.lost_events
        else "no lost events"
    )
    what = f"({a.input_kind}{span}; {lost}{unparsed_note(a)}{duplicates_note(a)})"
    # Past 80 columns the path takes its own line: a number keeps its unit beside it.
    head = f"{a.source} {what}"
    out = [head if len(head) <= WIDTH else fit(f"{a.source}\n  {what}"), ""]
    if a.histogram_groups:
        out += [*_histogram_group_lines(a), ""]
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
        # The symbol without its +offset/size (kallsyms' %pS), so no cut lands mid-symbol.
        a.shrinker.sort("scanned_objects", descending=True)
        .head(12)
        .with_columns(pl.col("shrinker").str.replace(r"\+0x[0-9a-f]+/0x[0-9a-f]+", "")),
        [
            ("shrinker", "shrinker", 22),
            ("context", "ctx", 7),
            ("invocations", "calls", 7),
            ("deferred_in_objects", "def.in", 9),
            ("scanned_objects", "scanned", 10),
            ("freed_objects", "freed", 9),
            ("deferred_out_objects", "def.out", 10),
            ("inherited_share", "inh", 6),
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
    out += _attribution_lines(a)
    if not a.summary.is_empty():
        out += _summary_lines(a.summary)
    out += _mmtests_lines(a)
    return "\n".join(out).rstrip() + "\n"


def analysis_json(a: TraceAnalysis) -> dict:
    """JSON-ready dict: ``throttle`` (reason, usec_timeout, context, count, zero_share,
    timeout_share, mean_usec, ...), ``direct_reclaim`` (count, total_s, unpaired_begin,
    unpaired_end, ...), ``kswapd`` per node (wakes, sleeps, awake_s, awake_kind, ...) and the
    rest of the analysis; missing numbers are null."""
    direct = a.reclaim.get("direct")
    return jsonable(
        {
            "source": a.source,
            "input_kind": a.input_kind,
            "lost_events": a.lost_events,
            "unparsed": a.unparsed,
            "unparsed_lines": a.unparsed_lines,
            "capture_s": a.capture_s,
            "duplicate_lines": a.duplicates.lines,
            "duplicate_first_line": a.duplicates.first_line,
            "throttle": a.throttle,
            "hz": a.hz,
            "direct_reclaim": direct.report if direct else None,
            "reclaim": {k: v.report for k, v in a.reclaim.items()},
            "kswapd": a.kswapd,
            "kcompactd": a.kcompactd,
            "compaction": {
                "pairing": a.compaction.report,
                "by_context": a.compaction_time,
                "status": a.compaction_status,
                "try_to_compact_by_order": a.compact_orders,
            },
            "shrinker": a.shrinker,
            "shrinker_work": a.shrinker_work,
            "attribution": {
                "by_process": a.by_process,
                "by_order": a.by_order,
                "by_gfp": a.by_gfp,
                "by_memcg": None,
                "by_memcg_note": NO_MEMCG,
            },
            "lru": a.lru,
            "lru_vs_vmstat": a.lru_check,
            "distributions": a.distributions,
            "summary": a.summary,
            "mmtests_rows": mmtests_trace_rows(a, benchmark_times(a.source)),
            "histogram_groups": a.histogram_groups or None,
        }
    )
