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

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from analysis.errors import InputError, input_file
from analysis.ingest.events import EVENTS, THROTTLED, polars_fields
from analysis.ingest.raw_text import printed_form
from analysis.ingest.textfile import read_text

__all__ = [
    "BINNED_SCHEMA",
    "Binned",
    "Histogram",
    "HistogramAccounting",
    "HistogramGroup",
    "is_hist_trigger",
    "looks_like_binned",
    "looks_like_histogram",
    "parse_binned",
    "parse_histogram",
    "quantile_bins",
    "read",
    "read_binned",
    "read_hist_trigger_events",
    "to_us",
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
KNOWN_FIELDS: dict[str, dict[str, pl.DataType]] = {name: polars_fields(name) for name in EVENTS}

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


# --- Binned latency histograms: bpftrace hist()/lhist() (text and -f json), ftrace hist
# triggers (docs/inputs.md "Binned histograms"). Each bin [lo, hi) holds integer values
# lo <= v < hi; an open end is ±inf.

BINNED_SCHEMA: dict[str, pl.DataType] = {
    "series": pl.String(),
    "lo": pl.Float64(),
    "hi": pl.Float64(),
    "count": pl.Int64(),
    "unit": pl.String(),
    "line": pl.Int64(),
}
# bpftrace prints log2 bounds with binary suffixes (src/output.cpp hist_index_label).
_SUFFIX = {
    "": 1,
    "K": 1 << 10,
    "M": 1 << 20,
    "G": 1 << 30,
    "T": 1 << 40,
    "P": 1 << 50,
    "E": 1 << 60,
}
_BT_NAME = re.compile(r"^(@[A-Za-z0-9_]*(?:\[.*\])?):\s*$")
_BT_NUM = r"-?\d+[KMGTPE]?"
_BT_BIN = re.compile(
    rf"^(?:\[({_BT_NUM}), ({_BT_NUM}|\.\.\.)\)|\[({_BT_NUM})\]|\(\.\.\., ({_BT_NUM})\))"
    r"\s+(\d+)\s+\|[@ ]*\|$"
)
# A unit is read only from a series name that states it (vmscan.bt-style ``@..._ns``).
_UNIT_SUFFIX = re.compile(r"(?:_|\b)(ns|us|usecs|ms|msecs)(?:\[.*\])?$")
_UNIT_NAMES = {"ns": "ns", "us": "us", "usecs": "us", "ms": "ms", "msecs": "ms"}
_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3}
_HIST_KEY = re.compile(r"^\{\s*(.*?)\s*\}\s+hitcount:\s+(\d+)(.*)$")


@dataclass(frozen=True)
class Binned:
    """Binned histograms of one file: a row per bin (:data:`BINNED_SCHEMA`).

    ``producer``: ``bpftrace``, ``bpftrace-json`` or ``ftrace-hist``; ``unit`` per series
    from its name (``_ns``, ``_us``, ``_ms``) or null when the name does not say it.
    """

    source: Path
    producer: str
    frame: pl.DataFrame = field(repr=False)
    skipped_lines: int

    @property
    def series(self) -> list[str]:
        return self.frame["series"].unique(maintain_order=True).to_list()


def _bt_number(text: str) -> float:
    """``8K`` → 8192: bpftrace's binary suffixes."""
    suffix = text[-1] if text[-1] in "KMGTPE" else ""
    return float(int(text[: len(text) - len(suffix)]) * _SUFFIX[suffix])


def _unit(series: str) -> str | None:
    match = _UNIT_SUFFIX.search(series.lstrip("@"))
    return _UNIT_NAMES[match.group(1)] if match else None


def _bpftrace_text(lines: list[str], source: Path) -> tuple[list[dict], int]:
    rows: list[dict] = []
    series: str | None = None
    skipped = 0
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if match := _BT_NAME.match(line):
            series = match.group(1)
            continue
        match = _BT_BIN.match(line)
        if match is None:
            # Probe banners ("Attaching 8 probes..."), count maps, blank lines: not bins.
            series = series if not line else None
            skipped += 1
            continue
        if series is None:
            raise InputError(source, "a histogram bin without its '@name:' line", line=number)
        lo_text, hi_text, single, below, count = match.groups()
        if single is not None:
            lo = _bt_number(single)
            hi = lo + 1
        elif below is not None:
            lo, hi = -math.inf, _bt_number(below)
        else:
            lo = _bt_number(lo_text)
            hi = math.inf if hi_text == "..." else _bt_number(hi_text)
        rows.append(_bin(series, lo, hi, int(count), number))
    return rows, skipped


def _bin(series: str, lo: float, hi: float, count: int, line: int) -> dict:
    return {
        "series": series,
        "lo": lo,
        "hi": hi,
        "count": count,
        "unit": _unit(series),
        "line": line,
    }


def _bpftrace_json(lines: list[str], source: Path) -> tuple[list[dict], int]:
    rows: list[dict] = []
    skipped = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(source, f"not bpftrace JSON: {exc.msg}", line=number) from None
        if record.get("type") != "hist":
            skipped += 1
            continue
        for name, value in record["data"].items():
            entries = value.items() if isinstance(value, dict) else [("", value)]
            for key, bins in entries:
                series = f"{name}[{key}]" if key else name
                for b in bins:
                    lo = float(b["min"]) if "min" in b else -math.inf
                    hi = float(b["max"]) + 1 if "max" in b else math.inf
                    rows.append(_bin(series, lo, hi, int(b["count"]), number))
    return rows, skipped


def _log2_or_bucket(value: str) -> tuple[float, float] | None:
    """A hist-trigger key printed as ``~ 2^k`` (``.log2``: roundup_pow_of_two(v) = 2^k) or
    ``~ a-b`` (``.buckets``): the bin [lo, hi) of the values it stands for."""
    value = value.strip()
    if match := re.fullmatch(r"~ 2\^(\d+)", value):
        k = int(match.group(1))
        return (2.0 ** (k - 1) + 1, 2.0**k + 1) if k else (0.0, 2.0)
    if match := re.fullmatch(r"~ (\d+)-(\d+)", value):
        return float(match.group(1)), float(match.group(2)) + 1
    return None


def _ftrace_hist(
    lines: list[str], source: Path, event: str | None
) -> tuple[list[dict], list[dict], int]:
    """(binned rows, exact-key rows as ``COUNT key=value`` fields, skipped lines)."""
    binned: list[dict] = []
    exact: list[dict] = []
    skipped = 0
    for number, raw in enumerate(lines, start=1):
        match = _HIST_KEY.match(raw.strip())
        if match is None:
            skipped += 1  # '#' headers, 'Totals:', 'Hits:', 'Entries:', 'Dropped:'
            continue
        keys = [part.split(":", 1) for part in match.group(1).split(",")]
        if any(len(k) != 2 for k in keys):
            raise InputError(source, "a hist-trigger key that is not 'name: value'", line=number)
        count = int(match.group(2))
        ranges = [(name.strip(), _log2_or_bucket(value)) for name, value in keys]
        ranged = [(name, r) for name, r in ranges if r is not None]
        if ranged:
            if len(ranged) != 1:
                raise InputError(source, "more than one log2/bucket key in one entry", line=number)
            name, (lo, hi) = ranged[0]
            others = ",".join(f"{k.strip()}={v.strip()}" for k, v in keys if k.strip() != name)
            series = f"{event or 'hist'}.{name}" + (f"[{others}]" if others else "")
            binned.append(_bin(series, lo, hi, count, number))
        else:
            fields = {k.strip(): " ".join(v.split()) for k, v in keys}
            exact.append({"line": number, "count": count, "fields": fields})
    return binned, exact, skipped


def is_hist_trigger(text: str) -> bool:
    """True for an ftrace hist-trigger file (``events/<system>/<event>/hist``)."""
    return text.lstrip().startswith("# event histogram")


def looks_like_binned(text: str) -> bool:
    """True for bpftrace hist output (text or JSON) or an ftrace hist-trigger file."""
    head = text[:4096]
    return (
        is_hist_trigger(head)
        or '"type": "hist"' in head
        or any(_BT_BIN.match(line.strip()) for line in head.splitlines())
    )


def parse_binned(text: str, source: str | Path = "<text>", event: str | None = None) -> Binned:
    """Parse bpftrace hist text or JSON, or an ftrace hist-trigger file, into bins.

    ``event``: the tracepoint of a hist-trigger file (by default its directory's name,
    ``events/<system>/<event>/hist``). A hist trigger keyed on exact values of a known
    event (``hist:keys=reason,usec_timeout,usec_delayed``) is not binned data but counted
    events: :func:`read_hist_trigger_events` gives them. InputError when nothing is read.
    """
    source = Path(source)
    lines = text.splitlines()
    if is_hist_trigger(text):
        rows, _, skipped = _ftrace_hist(lines, source, event)
        producer = "ftrace-hist"
    elif text.lstrip().startswith("{"):
        rows, skipped = _bpftrace_json(lines, source)
        producer = "bpftrace-json"
    else:
        rows, skipped = _bpftrace_text(lines, source)
        producer = "bpftrace"
    if not rows:
        raise InputError(source, f"no histogram bins ({producer} output)")
    return Binned(source, producer, pl.DataFrame(rows, schema=BINNED_SCHEMA), skipped)


def _hist_event(path: Path, event: str | None) -> str | None:
    return event or (path.parent.name if path.name == "hist" else None)


def read_binned(path: str | Path, *, event: str | None = None) -> Binned:
    """:func:`parse_binned` of a file (plain or compressed)."""
    path = input_file(path)
    return parse_binned(read_text(path), source=path, event=_hist_event(path, event))


def read_hist_trigger_events(path: str | Path, *, event: str | None = None) -> Histogram:
    """The exact-key entries of an ftrace hist-trigger file as weighted events of ``event``
    (a :class:`Histogram`, one group), the keys' stored values given their printed form
    (:func:`analysis.ingest.raw_text.printed_form`: ``reason: 1`` is
    ``VMSCAN_THROTTLE_WRITEBACK``), so ``mmlab stalls`` and ``mmlab fit`` take them as
    they take a mail histogram."""
    path = input_file(path)
    name = _hist_event(path, event)
    if name is None:
        raise InputError(path, "which event's hist file this is is not known: pass event=")
    text = read_text(path)
    _, exact, skipped = _ftrace_hist(text.splitlines(), path, name)
    if not exact:
        raise InputError(path, "no exact-key hist-trigger entries ('{ key: value } hitcount: N')")
    rows = [
        {"line": e["line"], "group": 0, "context": None, "count": e["count"], **e["fields"]}
        for e in exact
    ]
    frame = printed_form(name, _frame(name, rows).lazy()).collect()
    group = HistogramGroup(
        0,
        rows[0]["line"],
        rows[-1]["line"],
        "",
        None,
        len(rows),
        int(frame["count"].sum()),
        (name,),
    )
    accounting = HistogramAccounting(
        lines=len(text.splitlines()),
        histogram_lines=len(rows),
        continuation_lines=0,
        skipped_lines=skipped,
        unidentified_lines=(),
        respelt_keys=0,
        soft_breaks=0,
    )
    return Histogram(path, (group,), accounting, {name: frame})


def to_us(binned: Binned, series: str, unit: str | None = None) -> pl.DataFrame:
    """One series' bins in µs (``lo_us``, ``hi_us``, ``count``); ``unit`` overrides the one
    its name states. InputError when neither says the unit: it is never guessed."""
    rows = binned.frame.filter(pl.col("series") == series)
    if rows.is_empty():
        raise InputError(binned.source, f"no series {series!r} (have {binned.series})")
    unit = unit or rows["unit"][0]
    if unit not in _TO_US:
        raise InputError(
            binned.source,
            f"the unit of {series} is not known: its name does not end in _ns/_us/_ms; "
            "give the unit",
        )
    scale = _TO_US[unit]
    return rows.select(
        lo_us=pl.col("lo") * scale, hi_us=pl.col("hi") * scale, count=pl.col("count")
    )


def quantile_bins(bins: pl.DataFrame, quantiles: tuple[float, ...] = (0.5, 0.9, 0.99)) -> dict:
    """The bin [lo, hi) holding each quantile of a series (:func:`to_us` rows): what binned
    data says exactly; where inside the bin the data cannot tell."""
    ordered = bins.filter(pl.col("count") > 0).sort("lo_us")
    cumulative = ordered["count"].cum_sum().to_list()
    total = cumulative[-1] if cumulative else 0
    out = {}
    for q in quantiles:
        at = next(i for i, c in enumerate(cumulative) if c >= q * total) if total else None
        out[q] = None if at is None else (ordered["lo_us"][at], ordered["hi_us"][at])
    return out
