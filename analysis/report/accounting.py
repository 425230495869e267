"""Text of ``mmlab ingest``: where every line of a trace went (the reader's accounting).

The accounting is :meth:`analysis.ingest.ftrace.reader.Accounting.to_json`'s dict, the same
object ``mmlab ingest --json`` prints: events per name, header, blank and stack-trace lines,
lost-event markers (``CPU:N [LOST M EVENTS]``) and unparsed lines with samples.
"""

from __future__ import annotations

from analysis.report.table import Column, Table

__all__ = ["format_accounting"]

# Counts up to 10^11 - 1 with thousands separators.
_COUNT = Column(width=14)


def _counts(rows: list[tuple[int, str]]) -> list[str]:
    return Table([_COUNT, Column(left=True)], [(f"{n:,}", what) for n, what in rows]).text()


def format_accounting(acc: dict) -> str:
    """Human-readable accounting of one ingest: a count per kind of line, most common event
    first, then the lost-event markers and unparsed lines with their line numbers."""
    events = sorted(acc["events"].items(), key=lambda kv: -kv[1])
    lost = acc["lost_events"]
    unknown = ", some counts unknown" if any(x["count"] is None for x in lost) else ""
    out = [f"{acc['source']}: {acc['lines']:,} lines, {acc['bytes'] / 1e6:,.1f} MB"]
    out += _counts(
        [
            *((n, name) for name, n in events),
            (acc["header_lines"], "header lines"),
            (acc["blank_lines"], "blank lines"),
            (acc["stack_lines"], "stack-trace lines"),
            (len(lost), f"lost-event markers ({acc['lost_events_total']:,} events lost{unknown})"),
        ]
    )
    out += [f"{'':18}cpu {x['cpu']} lost {x['count']} before line {x['line']}" for x in lost[:10]]
    out += _counts([(acc["unparsed"], "unparsed lines")])
    for reason, u in acc["unparsed_samples"].items():
        out.append(f"      {u['count']:,} {reason}; lines {', '.join(map(str, u['lines'][:10]))}")
        out.extend(f"        | {sample[:70]}" for sample in u["samples"][:3])
    if acc["invalid_utf8_lines"]:
        out.append(f"  ({acc['invalid_utf8_lines']:,} lines held invalid UTF-8, shown as U+FFFD)")
    if acc["truncated_final_line"]:
        out.append("  (the last line has no newline: truncated capture?)")
    return "\n".join(out)
