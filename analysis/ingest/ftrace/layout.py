"""Line layouts of trace text: split a block of bytes into lines and classify each one.

Compiled ahead of time in C (``_parse.c``, built with the package) because per-line
Python (or capture-group regexes) cannot keep up with hundreds of MB of trace, and a JIT
would make every new environment's first ingest wait for its compiler (issue 23). One
pass over the bytes gives, per line, its kind
(event, header, blank, lost-events marker, stack-trace line, unparsed with a reason)
and for events the spans of comm, irq flags, event name and payload plus pid, tgid,
cpu and the timestamp. Layouts accepted (``docs/trace-formats.md`` "Line layouts"):

- ftrace ``trace``/``trace_pipe``: ``<comm>-<pid> [(<tgid>)] [<cpu>] [<flags>] <ts>: <event>: ...``
  comm split from pid at the last ``-`` before the pid digits (comm may hold spaces, ``-``,
  ``/``, ``:``, be ``<...>`` or empty); tgid ``(%7d)``/``(-------)``; 0, 4 or 5 flag chars.
- ``trace-cmd report``: same without flags; its preamble (``version = 6``, ``cpus=2``,
  ``CPU 1 is empty``) counts as header lines. A recording into a named buffer
  (``record -B NAME``), or several input files, prefixes each line with ``NAME: ``
  (right-aligned): kept as the line's ``instance``. ``report -l``:
  ``<comm>-<pid> <cpu><flags> <ts>: <event>: ...`` (comm cut to 8 characters), and its
  ``CPU:N [M EVENTS DROPPED]`` markers.
- ``perf script``: ``<comm> <tid> [<cpu>] <ts>: [<system>:]<event>: ...`` (also ``pid/tid``).
- mail-reformatted ``<ts> <comm>-<pid> <event>: ...`` (no cpu column).
- ``> `` quote prefixes (any depth) are removed first; a trailing ``\\r`` is dropped.
- Timestamps ``secs.frac`` become ns; a bare integer (counter/TSC clock) is kept raw.
"""

from __future__ import annotations

import numpy as np

from analysis.ingest.ftrace import _parse

__all__ = [
    "BLANK",
    "COMM_END",
    "COMM_START",
    "COUNTER_CLOCK",
    "CPU",
    "EVENT",
    "FNV_OFFSET",
    "FNV_PRIME",
    "HEADER",
    "INSTANCE_END",
    "IRQ_END",
    "IRQ_START",
    "KINDS",
    "LOST",
    "NAME_END",
    "NAME_HASH",
    "NAME_START",
    "PAYLOAD_START",
    "PID",
    "REASON",
    "REASONS",
    "SCAN_COLUMNS",
    "STACK",
    "TGID",
    "TS",
    "UNPARSED",
    "find_lines",
    "fnv1a",
    "group_hashes",
    "scan_lines",
    "text_shape",
]

# Line kinds, the codes scan_lines stores (defined by _parse.c).
EVENT, HEADER, BLANK, LOST, STACK, UNPARSED = (
    _parse.EVENT,
    _parse.HEADER,
    _parse.BLANK,
    _parse.LOST,
    _parse.STACK,
    _parse.UNPARSED,
)
KINDS = ("event", "header", "blank", "lost", "stack", "unparsed")
# Unparsed reasons, indexed by the code scan_lines stores (1-3) or the reader sets (4, 5).
REASONS = (
    "",
    "no trace line layout matched",
    "bad timestamp",
    "bad event name",
    "truncated final line",
    "field value not a number",  # set by the reader (columns.field_failures)
)

# Columns of the int64[n, SCAN_COLUMNS] array scan_lines fills, one row per line.
COMM_START, COMM_END = _parse.COMM_START, _parse.COMM_END  # comm span
# tgid and cpu -1 when the layout has none; cpu of a lost marker
PID, TGID, CPU = _parse.PID, _parse.TGID, _parse.CPU
TS = _parse.TS  # ns (or a raw counter clock); a lost marker's count (-1 unknown)
NAME_START, NAME_END = _parse.NAME_START, _parse.NAME_END  # event-name span
PAYLOAD_START = _parse.PAYLOAD_START  # the payload ends at the line end
REASON = _parse.REASON  # index into REASONS for unparsed lines
COUNTER_CLOCK = _parse.COUNTER_CLOCK  # 1 when the timestamp is a bare counter
IRQ_START, IRQ_END = _parse.IRQ_START, _parse.IRQ_END  # irq-flags span (-1 none)
# The ":" ending a trace-cmd buffer/file name (0: none); the name is the word before it.
INSTANCE_END = _parse.INSTANCE_END
NAME_HASH = _parse.NAME_HASH  # FNV-1a of the event name (its uint64 bits): lines grouped by event
SCAN_COLUMNS = _parse.SCAN_COLUMNS

FNV_OFFSET = 14695981039346656037
FNV_PRIME = 1099511628211


def fnv1a(text: bytes) -> int:
    """64-bit FNV-1a hash of ``text``, as _parse.c hashes event names and payload keys."""
    h = FNV_OFFSET
    for c in text:
        h = ((h ^ c) * FNV_PRIME) & 0xFFFF_FFFF_FFFF_FFFF
    return h


def text_shape(data) -> tuple[int, bool]:
    """(lines, ascii): the number of lines in ``data`` (its newlines, plus one for an
    unterminated last line) and whether every byte is ASCII, in one pass."""
    return _parse.text_shape(data)


def find_lines(data) -> tuple[np.ndarray, np.ndarray]:
    """Start/end byte offsets of every line in ``data`` (end excludes ``\\n`` and ``\\r``)."""
    starts, ends = _parse.lines(data)
    return np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64)


def scan_lines(data, lines: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split ``data`` into its ``lines`` lines (:func:`text_shape`'s count; counted here
    when not given) and classify every one: (starts, ends, kind int8[n], fields int64[n,
    SCAN_COLUMNS]), all writable.

    ``fields`` columns are named by the constants above (``COMM_START`` ... ``NAME_HASH``);
    a row holds only what its kind defines (events: all but ``REASON``; lost markers:
    ``CPU``, ``TS``, ``INSTANCE_END``; unparsed: ``REASON``), the rest is not initialised.
    An event line's end is moved back over trailing blanks (its payload ends there).
    """
    starts, ends, kind, fields = _parse.scan(data, lines)
    return (
        np.frombuffer(starts, np.int64),
        np.frombuffer(ends, np.int64),
        np.frombuffer(kind, np.int8),
        np.frombuffer(fields, np.int64).reshape(-1, SCAN_COLUMNS),
    )


def group_hashes(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(hashes, return_index=True, return_inverse=True)[1:]``: the first position
    of each distinct value, in ascending value order, and each position's index in that
    order. A block's event lines carry a few distinct name hashes (:data:`NAME_HASH`), so
    a hash table groups them in one pass and only the distinct values are sorted."""
    first, ids = _parse.group_hashes(np.ascontiguousarray(hashes, np.uint64))
    return np.frombuffer(first, np.int64), np.frombuffer(ids, np.int64)
