"""``perf trace`` text of tracepoints → trace lines the reader parses (docs/trace-formats.md
"Other producers").

``perf trace -e vmscan:... -- CMD`` prints one line per event::

    17.620 dd/25377 vmscan:mm_vmscan_throttled(usec_timeout: 100000, usec_delayed: 12000, reason: 1)

milliseconds since the start (absolute with ``-T``), ``comm/tid``, the event and its
stored fields (raw values and names, as ``trace-cmd report -R`` prints them: mapped to the
printed form by :mod:`analysis.ingest.raw_text`), **leaving out every field whose value is
0** (tools/perf/builtin-trace.c prints no zero argument). A field printed on some line of
an event exists on that kernel, so where another line of the same event lacks it, it was
0 and is written back as 0; a field no line printed stays absent (null): zero or not in
this kernel, the text cannot say. Other lines (syscalls, perf's own messages) are kept as
they are and counted as unparsed by the reader.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["convert", "looks_like_perf_trace"]

_EVENT_LINE = re.compile(r"^\s*(\d+\.\d+)\s+(.+)/(\d+)\s+(\w+):(\w+)\((.*)\)\s*$")
_FIELD = re.compile(r"^(\w+): (.*)$")


def looks_like_perf_trace(head: str) -> bool:
    """True when the first non-blank line is a ``perf trace`` tracepoint line."""
    first = next((line for line in head.splitlines() if line.strip()), "")
    return _EVENT_LINE.match(first) is not None


def _fields(args: str) -> list[tuple[str, str]] | None:
    out = []
    for part in args.split(", ") if args else []:
        match = _FIELD.match(part)
        if match is None:
            return None
        out.append((match.group(1), match.group(2).replace(" ", "_")))
    return out


def convert(source: Path, out: Path) -> None:
    """Write ``perf trace`` text ``source`` as ``comm tid secs: event: key=value`` lines
    (perf script's per-thread layout) to ``out``, line for line, zeros restored."""
    lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
    parsed: list[tuple | None] = []
    printed: dict[str, list[str]] = {}
    for line in lines:
        match = _EVENT_LINE.match(line)
        fields = _fields(match.group(6)) if match else None
        if match is None or fields is None:
            parsed.append(None)
            continue
        keys = printed.setdefault(match.group(5), [])
        keys.extend(k for k, _ in fields if k not in keys)
        parsed.append((match, dict(fields)))
    with out.open("w", encoding="utf-8") as sink:
        for line, item in zip(lines, parsed, strict=True):
            if item is None:
                sink.write(line + "\n")
                continue
            match, fields = item
            ms, comm, tid, _, event = match.groups()[:5]
            payload = " ".join(f"{k}={fields.get(k, '0')}" for k in printed[event])
            secs = float(ms) / 1000
            sink.write(f"{comm} {tid} {secs:.6f}: {event}: {payload}\n")
