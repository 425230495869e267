"""Histograms pasted from mails: ``COUNT [event:] key=value ...`` lines as weighted events.

Kernel developers often post trace statistics as the output of ``sort | uniq -c`` over the
payloads of one tracepoint (seed 000: ``51305 usec_timeout=500000 usect_delayed=500000
reason=VMSCAN_THROTTLE_NOPROGRESS``). This module turns such text into the same frames as
:mod:`analysis.ingest.ftrace` (columns named after the tracepoint's fields, see
``docs/trace-formats.md`` "Payloads") plus an Int64 ``count`` weight, so every metric
accepts either.

What it tolerates, and counts in :class:`HistogramAccounting`:

- ``> `` quote prefixes (any depth), non-breaking and other Unicode spaces, tabs;
- quoted-printable ``=3D`` and soft line breaks (a line ending in ``=``);
- wrapped lines: a line of only ``key=value`` tokens right after a histogram line continues it;
- the throttle event's real, misspelt key ``usect_delayed`` and archives that "fix" it to
  ``usec_delayed`` (both mean the same field; which one is canonical depends on the event);
- an optional ``[system:]event:`` token; without one, ``reason=VMSCAN_THROTTLE_*`` or
  ``usect_delayed`` identifies ``mm_vmscan_throttled``.

Blocks: consecutive histogram lines form one *group*; a blank or prose line ends it. Every
group gets an id (0, 1, ... in text order), the prose paragraph above it as ``label`` and an
optional user-given ``context`` (``labels={3: "direct"}``), because the mail's prose, not the
data, says which reclaim context a block came from (seed 000: "Kswapd throttle activity ...").
A block of lines without delays (``6624 reason=VMSCAN_THROTTLE_ISOLATED``) is a totals block;
:func:`totals_consistency` checks it against the detailed blocks.

Common trace columns (``comm``, ``pid``, ``ts_ns`` ...) are null here; ``line`` is the 1-based
line in the text where the histogram line starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analysis.errors import InputError, input_file
from analysis.ingest.events import LEGACY_THROTTLE, THROTTLED, polars_fields

__all__ = [
    "Histogram",
    "HistogramAccounting",
    "HistogramGroup",
    "looks_like_histogram",
    "parse_histogram",
    "read",
    "totals_consistency",
]

COMMON_SCHEMA: dict[str, pl.DataType] = {
    "line": pl.Int64(),
    "comm": pl.String(),
    "pid": pl.Int32(),
    "tgid": pl.Int32(),
    "cpu": pl.Int32(),
    "irq_flags": pl.String(),
    "ts_ns": pl.Int64(),
    "epoch_ns": pl.Int64(),
}
HISTOGRAM_SCHEMA: dict[str, pl.DataType] = {
    "group": pl.Int64(),
    "context": pl.String(),
    "count": pl.Int64(),
}
# Field schemas of the events mails carry, so an absent event still yields a frame the
# metrics can select from.
KNOWN_FIELDS: dict[str, dict[str, pl.DataType]] = {
    name: polars_fields(name) for name in (THROTTLED, *LEGACY_THROTTLE)
}

_SPACES = re.compile(r"[\u00a0\u2000-\u200b\u202f\u205f\u3000\t]")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_COUNT_LINE = re.compile(r"^\s*(\d+)\s+(\S.*)$")
_KV = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S+)$")
_EVENT = re.compile(r"^(?:[A-Za-z0-9_]+:)?([A-Za-z0-9_]+):$")
_INT = re.compile(r"^-?\d+$")
# A line in ftrace text layout (`comm-pid [cpu] ... 123.456789: event:`), which a histogram
# never has: used to tell the two apart by content.
_TRACE_LINE = re.compile(r"-\d+\s+(?:\(\s*[-\d]+\)\s+)?\[\d+\]\s.*\d+(?:\.\d+)?:\s+\w+:")


@dataclass(frozen=True)
class HistogramGroup:
    """One block of consecutive histogram lines in the text."""

    group: int
    first_line: int
    last_line: int
    label: str
    context: str | None
    rows: int
    total_count: int
    events: tuple[str, ...]


@dataclass(frozen=True)
class HistogramAccounting:
    """What the parser read, joined, normalised and skipped (nothing is dropped silently)."""

    lines: int
    histogram_lines: int
    continuation_lines: int
    skipped_lines: int
    unidentified_lines: tuple[int, ...]
    respelt_keys: int
    soft_breaks: int


@dataclass(frozen=True)
class Histogram:
    """Weighted events from histogram text; duck-types ``analysis.ingest.ftrace.Trace``."""

    source: Path
    groups: tuple[HistogramGroup, ...]
    accounting: HistogramAccounting
    frames: Mapping[str, pl.DataFrame] = field(repr=False)

    @property
    def event_names(self) -> list[str]:
        return sorted(self.frames)

    @property
    def lost_events_total(self) -> int:
        """Histograms carry no lost-event markers; 0 means "none reported", not "none lost"."""
        return 0

    def events(self, name: str) -> pl.DataFrame:
        if name in self.frames:
            return self.frames[name]
        return pl.DataFrame(
            schema={**COMMON_SCHEMA, **HISTOGRAM_SCHEMA, **KNOWN_FIELDS.get(name, {})}
        )

    def lazy(self, name: str) -> pl.LazyFrame:
        return self.events(name).lazy()


def looks_like_histogram(text: str) -> bool:
    """True when the text has ``COUNT key=value`` lines and no ftrace-layout event lines."""
    has_count_line = False
    for raw in text.splitlines():
        line = _QUOTE.sub("", _SPACES.sub(" ", raw))
        if _TRACE_LINE.search(line):
            return False
        if not has_count_line and _split_count_line(line) is not None:
            has_count_line = True
    return has_count_line


def read(path: str | Path, *, labels: Mapping[int, str] | None = None) -> Histogram:
    """Read histogram text from a file (UTF-8; undecodable bytes are replaced and counted)."""
    path = input_file(path)
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    return parse_histogram(text, source=path, labels=labels)


def _split_count_line(line: str) -> tuple[int, str | None, list[str]] | None:
    """(count, event or None, key=value tokens) if the line is a histogram line."""
    match = _COUNT_LINE.match(line)
    if match is None:
        return None
    tokens = match.group(2).split()
    event = None
    event_match = _EVENT.match(tokens[0])
    if event_match is not None:
        event = event_match.group(1)
        tokens = tokens[1:]
    if not tokens or not all(_KV.match(token) for token in tokens):
        return None
    return int(match.group(1)), event, tokens


def _unfold_quoted_printable(lines: list[str]) -> tuple[list[tuple[int, str]], int]:
    """Join soft line breaks (trailing ``=``) and decode ``=3D``; keep first line numbers."""
    out: list[tuple[int, str]] = []
    soft = 0
    pending: tuple[int, str] | None = None
    for number, text in enumerate(lines, start=1):
        if pending is not None:
            number, text = pending[0], pending[1] + text
            pending = None
        if text.endswith("=") and not text.endswith("=="):
            pending = (number, text[:-1])
            soft += 1
            continue
        out.append((number, text.replace("=3D", "=")))
    if pending is not None:
        out.append((pending[0], pending[1].replace("=3D", "=")))
    return out, soft


def _identify(event: str | None, fields: dict[str, str]) -> str | None:
    """The tracepoint a line belongs to: the named one, or the throttle event by its keys."""
    if event is not None:
        return event
    if "usect_delayed" in fields or fields.get("reason", "").startswith("VMSCAN_THROTTLE"):
        return THROTTLED
    return None


def _canonical_keys(event: str, fields: dict[str, str]) -> tuple[dict[str, str], int]:
    """Spell the delay key as the kernel does for this event (see the module docstring)."""
    wanted, other = (
        ("usect_delayed", "usec_delayed")
        if event == THROTTLED
        else ("usec_delayed", "usect_delayed")
    )
    respelt = 0
    out = dict(fields)
    if other in out and wanted not in out:
        out[wanted] = out.pop(other)
        respelt += 1
    if "usect_timeout" in out and "usec_timeout" not in out:
        out["usec_timeout"] = out.pop("usect_timeout")
        respelt += 1
    return out, respelt


@dataclass
class _Block:
    group: int
    first_line: int
    label: str
    rows: list[dict[str, object]] = field(default_factory=list)
    last_line: int = 0


def _parse_kv(tokens: list[str]) -> dict[str, str]:
    return dict(_KV.match(token).groups() for token in tokens)  # type: ignore[union-attr]


def parse_histogram(
    text: str, *, source: str | Path = "<text>", labels: Mapping[int, str] | None = None
) -> Histogram:
    """Parse ``uniq -c``-style histogram text into weighted event frames, one group per block.

    ``labels`` maps group ids to a context name (``{0: "kswapd", 2: "direct"}``); it fills the
    ``context`` column of that group's rows. Raises :class:`InputError` if no histogram line
    is found, or if a label names a group that does not exist.
    """
    source = Path(source)
    labels = dict(labels or {})
    lines, soft_breaks = _unfold_quoted_printable(text.splitlines())
    blocks: list[_Block] = []
    paragraph: list[str] = []
    paragraph_closed = False
    current: _Block | None = None
    continuation = skipped = respelt = 0
    unidentified: list[int] = []
    for number, raw in lines:
        line = _QUOTE.sub("", _SPACES.sub(" ", raw)).rstrip()
        parsed = _split_count_line(line)
        if parsed is None and current is not None and current.rows and line.strip():
            tokens = line.split()
            if all(_KV.match(token) for token in tokens):
                # A wrapped histogram line: its tail continues the previous row.
                row = current.rows[-1]
                row["fields"].update(_parse_kv(tokens))  # type: ignore[union-attr]
                continuation += 1
                current.last_line = number
                continue
        if parsed is None:
            skipped += 1
            current = None
            # The label is the last prose paragraph above a block: a blank line closes the
            # paragraph, the next prose line starts a new one.
            if line.strip():
                if paragraph_closed:
                    paragraph, paragraph_closed = [], False
                paragraph.append(line.strip())
            else:
                paragraph_closed = True
            continue
        count, event, tokens = parsed
        if current is None:
            current = _Block(group=len(blocks), first_line=number, label=" ".join(paragraph))
            blocks.append(current)
            paragraph, paragraph_closed = [], False
        current.rows.append(
            {"line": number, "count": count, "event": event, "fields": _parse_kv(tokens)}
        )
        current.last_line = number
    unknown = sorted(set(labels) - {block.group for block in blocks})
    if not blocks:
        raise InputError(source, "no histogram lines of the form 'COUNT [event:] key=value ...'")
    if unknown:
        raise InputError(source, f"labels name groups that do not exist: {unknown}")

    per_event: dict[str, list[dict[str, object]]] = {}
    groups = []
    for block in blocks:
        events_seen: set[str] = set()
        total = 0
        context = labels.get(block.group)
        for row in block.rows:
            event = _identify(row["event"], row["fields"])  # type: ignore[arg-type]
            if event is None:
                unidentified.append(row["line"])  # type: ignore[arg-type]
                continue
            fields, n = _canonical_keys(event, row["fields"])  # type: ignore[arg-type]
            respelt += n
            events_seen.add(event)
            total += row["count"]  # type: ignore[operator]
            per_event.setdefault(event, []).append(
                {
                    "line": row["line"],
                    "group": block.group,
                    "context": context,
                    "count": row["count"],
                    **fields,
                }
            )
        groups.append(
            HistogramGroup(
                group=block.group,
                first_line=block.first_line,
                last_line=block.last_line,
                label=block.label,
                context=context,
                rows=len(block.rows),
                total_count=total,
                events=tuple(sorted(events_seen)),
            )
        )
    accounting = HistogramAccounting(
        lines=len(text.splitlines()),
        histogram_lines=sum(len(block.rows) for block in blocks),
        continuation_lines=continuation,
        skipped_lines=skipped,
        unidentified_lines=tuple(unidentified),
        respelt_keys=respelt,
        soft_breaks=soft_breaks,
    )
    frames = {name: _frame(name, rows) for name, rows in per_event.items()}
    return Histogram(source=source, groups=tuple(groups), accounting=accounting, frames=frames)


def _frame(event: str, rows: list[dict[str, object]]) -> pl.DataFrame:
    """One event's rows as a frame: known fields typed as the kernel's, others Int64 if integral."""
    known = KNOWN_FIELDS.get(event, {})
    keys = [
        key for key in dict.fromkeys(k for row in rows for k in row) if key not in HISTOGRAM_SCHEMA
    ]
    schema: dict[str, pl.DataType] = {**COMMON_SCHEMA, **HISTOGRAM_SCHEMA, **known}
    for key in keys:
        if key in schema:
            continue
        values = [row.get(key) for row in rows if row.get(key) is not None]
        schema[key] = pl.Int64() if all(_INT.match(str(v)) for v in values) else pl.String()
    columns: dict[str, list[object]] = {name: [] for name in schema}
    for row in rows:
        for name, dtype in schema.items():
            value = row.get(name)
            if value is not None and dtype == pl.Int64() and name not in ("line", "group", "count"):
                value = int(value) if _INT.match(str(value)) else None
            columns[name].append(value)
    return pl.DataFrame(columns, schema=schema)


def totals_consistency(
    hist: Histogram, event: str = THROTTLED, key: str = "reason"
) -> pl.DataFrame:
    """Check totals blocks (rows without a delay field) against the detailed blocks' sums.

    For every row of a totals block (``6624 reason=VMSCAN_THROTTLE_ISOLATED``) it lists the
    detailed groups whose summed ``count`` for the same ``key`` value equals the total.
    Columns: ``group``, ``<key>``, ``total``, ``matching_groups`` (List[Int64]).
    """
    frame = hist.events(event)
    delay = "usect_delayed" if event == THROTTLED else "usec_delayed"
    if frame.is_empty():
        return pl.DataFrame(
            schema={
                "group": pl.Int64(),
                key: pl.String(),
                "total": pl.Int64(),
                "matching_groups": pl.List(pl.Int64()),
            }
        )
    totals = frame.filter(pl.col(delay).is_null()).select("group", key, total="count")
    detailed = (
        frame.filter(pl.col(delay).is_not_null())
        .group_by("group", key)
        .agg(detail_sum=pl.col("count").sum())
    )
    matched = totals.join(
        detailed, left_on=[key, "total"], right_on=[key, "detail_sum"], how="left"
    )
    return (
        matched.group_by("group", key, "total", maintain_order=True)
        .agg(matching_groups=pl.col("group_right").drop_nulls().sort())
        .sort("group", key)
    )
