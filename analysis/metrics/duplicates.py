"""Lines ftrace cannot have written: two events with the same timestamp, CPU, task, event
and fields (issue 29 item 10). ``cat trace trace`` or a mail pasted twice doubles every
count and narrows every interval by √2; the analysis counts such lines and says so.

Every event row is hashed (its columns but the line number) and the hashes, with their
line numbers, are spread over files by timestamp (a line and its duplicate have the same
timestamp), one file per ``ROWS_PER_BUCKET`` rows; each file is then sorted on its own.
Memory is one bucket's worth, whatever the trace's length.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from analysis.metrics.pairing import event_blocks, event_scan

__all__ = ["ROWS_PER_BUCKET", "Duplicates", "duplicate_lines"]

ROWS_PER_BUCKET = 1 << 20
_RECORD = np.dtype([("hash", "<u8"), ("line", "<i8")])


@dataclass(frozen=True)
class Duplicates:
    """``lines`` repeating an earlier line exactly (0: none), the first at ``first_line``."""

    lines: int
    first_line: int | None


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
                columns = [c for c in event_scan(trace, name).collect_schema() if c != "epoch_ns"]
                for frames in event_blocks(trace, {name: columns}):
                    _spread(frames[name], _salt(name), start, span, sinks)
        finally:
            for sink in sinks:
                sink.close()
        found, first = 0, None
        for path in paths:
            records = np.fromfile(path, dtype=_RECORD)
            records.sort(order=("hash", "line"))
            repeat = records["hash"][1:] == records["hash"][:-1]
            if repeat.any():
                found += int(repeat.sum())
                line = int(records["line"][1:][repeat].min())
                first = line if first is None else min(first, line)
    return Duplicates(found, first)


def _spread(frame: pl.DataFrame, salt: int, start: int, span: int, sinks: list) -> None:
    """Append each row's (hash, line) to the file of its timestamp's bucket."""
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
