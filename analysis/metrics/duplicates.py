"""Lines ftrace cannot have written: two events with the same timestamp, CPU, task, event
and fields (issue 29 item 10). ``cat trace trace`` or a mail pasted twice doubles every
count and narrows every interval by √2; the analysis counts such lines and says so.

Rows are hashed and the hashes, with their line numbers, spread over files by timestamp
(a line and its duplicate have the same timestamp), one file per ``ROWS_PER_BUCKET``
rows; each file is then sorted on its own, so memory is one bucket's worth whatever the
trace's length. The first hash covers the integers that tell events apart cheaply
(event, timestamp, CPU, pid); only rows sharing one are hashed whole.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from analysis.metrics.pairing import event_blocks, event_scan

__all__ = ["NEARBY_LINES", "ROWS_PER_BUCKET", "Duplicates", "duplicate_lines"]

ROWS_PER_BUCKET = 1 << 20
# ftrace prints microseconds, and a task can log the same event with the same fields twice
# within one (450 times in the 682 MB benchmark capture, each pair within 10 lines);
# a trace written twice or a paste repeated puts the twin a whole trace or paste away.
# So a repeat counts only when its twin is more than this many lines before it.
NEARBY_LINES = 1000
_RECORD = np.dtype([("hash", "<u8"), ("line", "<i8")])


@dataclass(frozen=True)
class Duplicates:
    """``lines`` repeating an earlier line exactly, more than :data:`NEARBY_LINES` lines
    after it (0: none), the first at ``first_line``."""

    lines: int
    first_line: int | None


def _salt(name: str) -> int:
    """A per-event constant, so equal fields of two events never look alike."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def duplicate_lines(trace, start: int | None, end: int | None, rows: int) -> Duplicates:
    """:class:`Duplicates` among the events of ``trace`` (``rows`` events with timestamps
    in ``start``..``end``).

    Two passes keep it cheap: rows are first keyed by event, timestamp, CPU and pid alone
    (integers, quick to read); only the lines whose key repeats are then read whole and
    compared on every field."""
    if start is None or end is None or not rows:
        return Duplicates(0, None)
    candidates = _repeats(trace, start, end, rows, _KEY, members=True)
    if not candidates.size:
        return Duplicates(0, None)
    repeats = _repeats(trace, start, end, candidates.size, None, lines=candidates)
    if not repeats.size:
        return Duplicates(0, None)
    return Duplicates(int(repeats.size), int(repeats.min()))


_KEY = ("ts_ns", "cpu", "pid")


def _repeats(
    trace,
    start: int,
    end: int,
    rows: int,
    key: tuple[str, ...] | None,
    *,
    lines: np.ndarray | None = None,
    members: bool = False,
) -> np.ndarray:
    """Line numbers of rows repeating an earlier row's ``key`` columns (every column but
    the line number when None), among ``lines`` when given; with ``members``, the rows
    they repeat too (every row of a repeated key). Sorted."""
    buckets = max(1, -(-rows // ROWS_PER_BUCKET))
    span = end - start + 1
    with tempfile.TemporaryDirectory(prefix="mmlab-dups-") as tmp:
        paths = [Path(tmp) / f"{i}" for i in range(buckets)]
        sinks = [p.open("wb") for p in paths]
        try:
            for name in trace.event_names:
                schema = event_scan(trace, name).collect_schema()
                wanted = key or [c for c in schema if c != "epoch_ns"]
                columns = [c for c in ("line", *wanted) if c in schema]
                for frames in event_blocks(trace, {name: columns}):
                    frame = frames[name]
                    if lines is not None:
                        frame = frame.filter(pl.col("line").is_in(pl.Series(lines).implode()))
                    _spread(frame, _salt(name), start, span, sinks)
        finally:
            for sink in sinks:
                sink.close()
        found = []
        for path in paths:
            records = np.fromfile(path, dtype=_RECORD)
            order = np.lexsort((records["line"], records["hash"]))
            hashes, numbers = records["hash"][order], records["line"][order]
            repeat = hashes[1:] == hashes[:-1]
            if members:
                found += [numbers[1:][repeat], numbers[:-1][repeat]]
            else:
                # A twin a few lines before is the kernel's: see NEARBY_LINES.
                far = repeat & (numbers[1:] - numbers[:-1] > NEARBY_LINES)
                found.append(numbers[1:][far])
    return np.unique(np.concatenate(found))


def _spread(frame: pl.DataFrame, salt: int, start: int, span: int, sinks: list) -> None:
    """Append each row's (hash of all but the line, line) to its timestamp's bucket file."""
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
