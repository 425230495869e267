"""Lines ftrace cannot have written: two events with the same timestamp, CPU, task, event
and fields (issue 29 item 10). ``cat trace trace`` or a mail pasted twice doubles every
count and narrows every interval by √2; the analysis counts such lines and says so.

A repeat is a line with the same event, timestamp, CPU and pid as a line more than
:data:`NEARBY_LINES` lines before it: ftrace merges its CPUs' buffers in time order, so
lines of one microsecond sit together, and a twin far away is the text repeating (its
fields are then the same too). Those four are hashed per row and the hashes, with their
line numbers, spread over files by timestamp (twins share it), one file per
``ROWS_PER_BUCKET`` rows; each file is then sorted on its own, so memory is one bucket's
worth whatever the trace's length. That count runs only for a trace that goes back in
time: :class:`RepeatScreen` rules repeats out of one in time order as it is read.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from analysis.metrics.pairing import event_blocks, event_scan

__all__ = ["NEARBY_LINES", "ROWS_PER_BUCKET", "Duplicates", "RepeatScreen", "duplicate_lines"]

ROWS_PER_BUCKET = 1 << 20
# ftrace prints microseconds, and a task can log the same event with the same fields twice
# within one (450 times in the 682 MB benchmark capture, each pair within 10 lines);
# a trace written twice or a paste repeated puts the twin a whole trace or paste away.
# So a repeat counts only when its twin is more than this many lines before it.
NEARBY_LINES = 1000
_RECORD = np.dtype([("hash", "<u8"), ("line", "<i8")])


@dataclass(frozen=True)
class Duplicates:
    """``lines`` repeating the event, timestamp, CPU and pid of a line more than
    :data:`NEARBY_LINES` lines before (0: none), the first at ``first_line``."""

    lines: int
    first_line: int | None


class RepeatScreen:
    """Whether a trace can have a repeat at all, from each event's line numbers and
    timestamps fed block by block in file order, without hashing or sorting: a repeat has
    the timestamp of a line of its event more than :data:`NEARBY_LINES` lines before it,
    so the capture is clear when every line's timestamp is later than all of its event's
    lines that far before it, as in any capture ftrace merged in time order. Only a trace
    going back in time (``cat trace trace``) needs :func:`duplicate_lines`.

    Per event it keeps the lines of the last :data:`NEARBY_LINES` before the latest one
    with the running maximum of the timestamps, so memory is that of a few lines."""

    def __init__(self) -> None:
        self.clear = True
        # Per event: line numbers and the running maximum of the timestamps up to each.
        self._tails: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add(self, name: str, lines: np.ndarray, ts_ns: np.ndarray) -> None:
        """One block of event ``name``'s rows with a timestamp, in file order."""
        if not self.clear or not lines.size:
            return
        empty = np.empty(0, dtype=np.int64)
        before, highest = self._tails.get(name, (empty, empty))
        lines = np.concatenate([before, lines.astype(np.int64)])
        if (np.diff(lines) < 0).any():  # not in file order (a hand-built frame): no screen
            self.clear = False
            return
        highest = np.maximum.accumulate(np.concatenate([highest, ts_ns.astype(np.int64)]))
        new = slice(before.size, None)
        # The last row more than NEARBY_LINES lines before each new row, if any.
        far = np.searchsorted(lines, lines[new] - NEARBY_LINES, side="left") - 1
        seen = far >= 0
        if (highest[far[seen]] >= ts_ns[seen]).any():
            self.clear = False
            return
        # Rows further back than the window only matter through their running maximum,
        # which the last of them carries.
        keep = max(0, int(np.searchsorted(lines, lines[-1] - NEARBY_LINES, side="left")) - 1)
        self._tails[name] = (lines[keep:], highest[keep:])


def _salt(name: str) -> int:
    """A per-event constant, so equal fields of two events never look alike."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def duplicate_lines(trace, start: int | None, end: int | None, rows: int) -> Duplicates:
    """:class:`Duplicates` among the events of ``trace`` (``rows`` events with timestamps
    in ``start``..``end``)."""
    if start is None or end is None or not rows:
        return Duplicates(0, None)
    buckets = max(1, -(-rows // ROWS_PER_BUCKET))
    span = end - start + 1
    with tempfile.TemporaryDirectory(prefix="mmlab-dups-") as tmp:
        paths = [Path(tmp) / f"{i}" for i in range(buckets)]
        sinks = [p.open("wb") for p in paths]
        try:
            for name in trace.event_names:
                schema = event_scan(trace, name).collect_schema()
                columns = [c for c in ("line", *_KEY) if c in schema]
                for frames in event_blocks(trace, {name: columns}):
                    _spread(frames[name], _salt(name), start, span, sinks)
        finally:
            for sink in sinks:
                sink.close()
        found, first = 0, None
        for path in paths:
            records = np.fromfile(path, dtype=_RECORD)
            order = np.lexsort((records["line"], records["hash"]))
            hashes, lines = records["hash"][order], records["line"][order]
            # A twin a few lines before is the kernel's: see NEARBY_LINES.
            far = (hashes[1:] == hashes[:-1]) & (lines[1:] - lines[:-1] > NEARBY_LINES)
            if far.any():
                found += int(far.sum())
                line = int(lines[1:][far].min())
                first = line if first is None else min(first, line)
    return Duplicates(found, first)


# What tells two events apart at a glance: the event (in the hash's salt), when, where, who.
_KEY = ("ts_ns", "cpu", "pid")


def _spread(frame: pl.DataFrame, salt: int, start: int, span: int, sinks: list) -> None:
    """Append each row's (hash of its key, line) to its timestamp's bucket file."""
    frame = frame.filter(pl.col("ts_ns").is_not_null())
    if frame.is_empty():
        return
    hashed = frame.select(
        hash=pl.struct(pl.exclude("line")).hash(seed=0) ^ pl.lit(salt, dtype=pl.UInt64),
        line=pl.col("line").cast(pl.Int64),
        bucket=((pl.col("ts_ns") - start) * len(sinks) // span).clip(0, len(sinks) - 1),
    )
    for (bucket,), part in hashed.group_by("bucket"):
        records = np.empty(part.height, dtype=_RECORD)
        records["hash"] = part["hash"].to_numpy()
        records["line"] = part["line"].to_numpy()
        records.tofile(sinks[int(bucket)])
