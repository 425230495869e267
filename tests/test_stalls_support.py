"""Hand-built event frames of the trace contract's shape, for the stall-metric tests.

``frame(rows, fields)`` turns ``(line, comm, pid, ts_ns, *field values)`` tuples into an event
frame; ``FakeTrace`` holds several such frames behind the ``Trace`` interface the metrics use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

COMMON = {"line": pl.Int64, "comm": pl.String, "pid": pl.Int32, "ts_ns": pl.Int64}


def frame(rows: list[tuple], fields: dict[str, pl.DataType] | None = None) -> pl.DataFrame:
    schema = {**COMMON, **(fields or {})}
    return pl.DataFrame(rows, schema=schema, orient="row")


@dataclass(frozen=True)
class Lost:
    cpu: int
    count: int
    line: int


@dataclass(frozen=True)
class Accounting:
    lost_events: tuple[Lost, ...] = ()


@dataclass(frozen=True)
class FakeTrace:
    frames: dict[str, pl.DataFrame]
    accounting: Accounting = field(default_factory=Accounting)
    source: Path = Path("hand-built")

    @property
    def event_names(self) -> list[str]:
        return sorted(self.frames)

    @property
    def lost_events_total(self) -> int:
        return sum(lost.count for lost in self.accounting.lost_events)

    def events(self, name: str) -> pl.DataFrame:
        return self.frames.get(name, frame([]))


def test_frame_builder_keeps_contract_types():
    built = frame([(1, "a", 5, 100, 3)], {"order": pl.Int64})
    assert built.schema == pl.Schema(
        {"line": pl.Int64, "comm": pl.String, "pid": pl.Int32, "ts_ns": pl.Int64, "order": pl.Int64}
    )
    trace = FakeTrace({"x": built}, Accounting((Lost(0, 7, 2),)))
    assert (trace.event_names, trace.lost_events_total, trace.events("y").height) == (["x"], 7, 0)
