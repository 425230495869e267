"""Reclaim stall intervals: ``mm_vmscan_*_reclaim_begin`` → ``*_end`` per pid, with an explicit
pairing policy.

Contexts and their tracepoints (include/trace/events/vmscan.h):

- ``direct``: ``mm_vmscan_direct_reclaim_begin/end`` (``try_to_free_pages``),
- ``memcg``: ``mm_vmscan_memcg_reclaim_begin/end`` (``try_to_free_mem_cgroup_pages``, a
  cgroup's limit),
- ``memcg_softlimit``: ``mm_vmscan_memcg_softlimit_reclaim_begin/end``,
- ``node``: ``mm_vmscan_node_reclaim_begin/end`` (``node_reclaim``, ~5.2+).

Pairing policy (the same as mmtests where mmtests has one, and every case is counted):

- events of one pid are ordered by timestamp (ties by line), because ``trace_pipe`` merges CPUs
  slightly out of order; fed block by block (:class:`Pairing`, the ingest's 32 MB blocks),
  within each block, and a pid whose next block starts before its last event (a trace
  concatenated after another, or CPU clocks disagreeing exactly at a block boundary) has
  that event closed as at the end of a capture and starts again, counted in
  ``clock_backwards``;
- a begin followed by an end of the same pid is one interval;
- a begin followed by another begin of the same pid is *overwritten* (mmtests keeps the second);
- an end not preceded by a begin is an *unpaired end* (capture started mid-reclaim, or the begin
  was lost), and is ignored for durations as in mmtests;
- a begin with nothing after it is *open at the end* of the capture: kept in the interval frame
  (for context lookup) but not in durations;
- a pid whose timestamps go backwards in file order counts in ``clock_backwards`` (per-CPU
  clocks disagreeing when a task migrates);
- an interval whose begin and end ``comm`` differ counts in ``comm_changed`` (pid reuse or an
  exec in between);
- an interval with a ``CPU:N [LOST M EVENTS]`` marker between its begin and end lines is
  flagged ``lost_events_inside``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from analysis.ingest.ftrace.cache import event_parts
from analysis.ingest.raw_text import printed_form
from analysis.metrics.deferred import Deferred

__all__ = [
    "BEGIN_FIELDS",
    "END_FIELDS",
    "KEY_COLUMNS",
    "PARTS_PER_BLOCK",
    "RECLAIM_EVENTS",
    "Labeller",
    "Pairing",
    "PairingReport",
    "StallIntervals",
    "all_intervals",
    "event_blocks",
    "event_columns",
    "event_scan",
    "label_context",
    "pair_intervals",
    "reclaim_intervals",
]

# context -> (begin event, end event)
RECLAIM_EVENTS: dict[str, tuple[str, str]] = {
    "direct": ("mm_vmscan_direct_reclaim_begin", "mm_vmscan_direct_reclaim_end"),
    "memcg": ("mm_vmscan_memcg_reclaim_begin", "mm_vmscan_memcg_reclaim_end"),
    "memcg_softlimit": (
        "mm_vmscan_memcg_softlimit_reclaim_begin",
        "mm_vmscan_memcg_softlimit_reclaim_end",
    ),
    "node": ("mm_vmscan_node_reclaim_begin", "mm_vmscan_node_reclaim_end"),
}

# What pairing reads of every event: who, when and where in the file.
KEY_COLUMNS = ("pid", "ts_ns", "line", "comm")


def event_scan(trace, name: str) -> pl.LazyFrame:
    """Event ``name`` of ``trace`` as a lazy frame: an ingested trace's Parquet parts are
    then read only for the columns and rows a statistic asks for (hand-built traces that
    only have ``events`` are wrapped)."""
    lazy = getattr(trace, "lazy", None)
    return lazy(name) if lazy is not None else trace.events(name).lazy()


# Ingest blocks (Parquet parts) read as one block of the analysis: every polars call of the
# analysis costs per block as well as per row, and a capture's 3 M lines cost a third less
# CPU in blocks of 96 MB of text than of 32 MB (benchmarks/stalls.md), for ~100 MB more.
PARTS_PER_BLOCK = 3


def event_blocks(trace, columns: Mapping[str, Sequence[str]]) -> Iterator[dict[str, pl.DataFrame]]:
    """The ``columns`` of each named event, :data:`PARTS_PER_BLOCK` ingest blocks at a time
    in file order (the Parquet parts of every event cut from the same 32 MB of text);
    one block of whole frames for a trace held in memory. Every block's frame of an
    event has the same columns and types (those of the whole event)."""
    directory = getattr(trace, "directory", None)
    if directory is None:
        yield {name: event_columns(trace, name, wanted) for name, wanted in columns.items()}
        return
    schemas: dict[str, dict[str, pl.DataType]] = {}
    parts: dict[str, dict[int, list[Path]]] = {}
    for name, wanted in columns.items():
        schema = event_scan(trace, name).collect_schema()
        schemas[name] = {c: schema[c] for c in wanted if c in schema}
        parts[name] = {}
        for path in event_parts(directory, name):  # in block order
            block = int(path.stem.split("-")[1]) // PARTS_PER_BLOCK
            parts[name].setdefault(block, []).append(path)
    # No part of any of them: one block of empty frames, so every pairing sees a block.
    for block in sorted(set().union(*parts.values())) or [-1]:
        yield {name: _parts(name, parts[name].get(block, []), schemas[name]) for name in columns}


def _parts(name: str, paths: list[Path], schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Parquet parts of event ``name`` one after the other in ``schema`` (a column a part
    lacks is null), ``trace-cmd report -R`` rows in their printed form as the whole-event
    frames have them (:func:`analysis.ingest.raw_text.printed_form`); empty without one."""
    frames = [pl.DataFrame(schema=dict(schema))]
    for path in paths:
        scan = printed_form(name, pl.scan_parquet(path))
        have = scan.collect_schema()
        frames.append(
            scan.select(
                pl.col(c).cast(t) if c in have else pl.lit(None, dtype=t).alias(c)
                for c, t in schema.items()
            ).collect()
        )
    return pl.concat(frames, how="vertical", rechunk=True) if len(frames) > 2 else frames[-1]


def event_columns(trace, name: str, columns: Sequence[str]) -> pl.DataFrame:
    """The ``columns`` of event ``name`` that it has (a field an older kernel does not print
    is left out, as the whole frame would lack it), in file order."""
    scan = event_scan(trace, name)
    present = set(scan.collect_schema().names())
    return scan.select([c for c in columns if c in present]).collect()


@dataclass(frozen=True)
class PairingReport:
    """How begin/end events of one interval kind were paired (see the module docstring).

    ``count`` closed intervals totalling ``total_s`` seconds; ``unpaired_begin`` =
    ``overwritten_begin`` + ``open_at_end``.
    """

    kind: str
    count: int
    total_s: float
    unpaired_begin: int
    overwritten_begin: int
    open_at_end: int
    unpaired_end: int
    clock_backwards: int
    comm_changed: int
    lost_events: int
    lost_affected: int


@dataclass(frozen=True)
class StallIntervals(Deferred):
    """Paired intervals (``intervals`` frame) and the pairing report; a long trace's
    ``intervals`` are read from the analysis cache when first used."""

    intervals: pl.DataFrame
    report: PairingReport


def _lost_between(
    begin_line: np.ndarray, end_line: np.ndarray, lost_lines: Sequence[int]
) -> np.ndarray:
    """True where a lost-event marker line lies strictly between begin and end lines."""
    marks = np.sort(np.asarray(lost_lines, dtype=np.int64))
    return np.searchsorted(marks, end_line, side="left") > np.searchsorted(
        marks, begin_line, side="right"
    )


class Pairing:
    """Begin/end pairing of one interval kind fed block by block in file order (policy in
    the module docstring); the same intervals and report as pairing the whole trace at once.

    Each pid's last event of a block is held back (its successor may be in a later block)
    and paired with the next block's events; :meth:`finish` decides what is still held.
    Counts over the events seen are kept, not the events: memory is one block's events.
    Only the key columns are sorted; a kept begin's and its end's other columns are
    gathered from the begin and end frames.
    """

    def __init__(
        self,
        kind: str,
        *,
        begin_fields: Sequence[str] = (),
        end_fields: Sequence[str] = (),
        lost_lines: Sequence[int] = (),
    ) -> None:
        self.kind = kind
        self.begin_fields = tuple(begin_fields)
        self.end_fields = tuple(end_fields)
        self.lost_lines = tuple(lost_lines)
        # The held events' keys (``_b``: the row of a held begin in ``_held_begins``).
        self._held: pl.DataFrame | None = None
        self._held_begins: pl.DataFrame | None = None
        self._end_template: pl.DataFrame | None = None
        self._counts = dict.fromkeys(
            ("closed", "total_ns", "overwritten", "open", "unpaired_end", "clock_backwards"), 0
        )
        self._counts.update(comm_changed=0, lost_affected=0)

    def add(self, begin: pl.DataFrame, end: pl.DataFrame) -> pl.DataFrame:
        """Pair one block's events; return the intervals they decide (see the frame
        columns of :func:`pair_intervals`)."""
        begin, end = self._sides(begin, end)
        restarted = self._restart(begin, end)
        intervals = self._step(begin, end, False)
        return pl.concat([restarted, intervals]) if restarted is not None else intervals

    def finish(self) -> pl.DataFrame:
        """The intervals of the events still held back (open at the end of the capture);
        after at least one :meth:`add`."""
        assert self._held is not None, "finish() before any add()"
        return self._step(self._held_begins.clear(), self._end_template.clear(), True)

    def _sides(self, begin: pl.DataFrame, end: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The key columns and carried fields of each side; at the first block, the empty
        held state and the end frame's shape (for :meth:`finish`)."""
        begin = begin.select(*KEY_COLUMNS, *(f for f in self.begin_fields if f in begin.columns))
        end = end.select(*KEY_COLUMNS, *(f for f in self.end_fields if f in end.columns))
        if self._held is None:
            self._held_begins, self._end_template = begin.clear(), end.clear()
            self._held = _keys(begin.clear(), True, 0).with_columns(_held=pl.lit(True))
        return begin, end

    def _step(self, begin: pl.DataFrame, end: pl.DataFrame, final: bool) -> pl.DataFrame:
        counts = self._counts
        block = pl.concat([_keys(begin, True, self._held_begins.height), _keys(end, False, 0)])
        begins = pl.concat([self._held_begins, begin])
        keys = pl.concat([self._held, block.with_columns(_held=pl.lit(False))])
        # In file order. A held event (one per pid, from earlier lines) never counts:
        # :meth:`_restart` makes a block's first event of a pid no earlier than it.
        in_file_order = _sorted_by(keys, "pid", "line")
        backwards = int(
            in_file_order.select(
                ((pl.col("ts_ns") < pl.col("ts_ns").shift(1)) & _same_pid(1)).sum()
            ).item()
            or 0
        )
        counts["clock_backwards"] += backwards
        # Where no pid steps back in time and every event has a time, file order is the
        # time order (ties by line): sorting by time again would move no row.
        timed = not backwards and not keys["ts_ns"].null_count()
        order = (in_file_order if timed else _sorted_by(keys, "pid", "ts_ns", "line")).with_columns(
            _prev=pl.when(_same_pid(1)).then(pl.col("_begin").shift(1)),
            _next=pl.when(_same_pid(-1)).then(pl.col("_begin").shift(-1)),
            _partner=pl.when(_same_pid(-1)).then(pl.col("_e").shift(-1)),
        )
        is_begin = pl.col("_begin")
        # A held event's predecessor was counted in its own block.
        counts["unpaired_end"] += order.filter(
            ~pl.col("_held") & ~is_begin & pl.col("_prev").is_null().or_(~pl.col("_prev"))
        ).height
        if not final:
            last = pl.col("_next").is_null()
            self._hold(order.filter(last), begins)
            order = order.filter(~last)
        counts["overwritten"] += order.filter(is_begin & pl.col("_next")).height
        kept = order.filter(is_begin & pl.col("_next").is_null().or_(~pl.col("_next")))
        closed = kept["_next"].is_not_null()
        intervals = self._intervals(
            begins.select(pl.all().gather(kept["_b"])),
            end.select(pl.all().gather(kept["_partner"])),
            closed,
        )
        done = intervals.filter(pl.col("status") == "closed")
        counts["closed"] += done.height
        counts["open"] += intervals.height - done.height
        counts["total_ns"] += int(done["duration_ns"].sum() or 0)
        counts["comm_changed"] += int(done["comm_changed"].sum())
        counts["lost_affected"] += int(done["lost_events_inside"].sum())
        return intervals

    def _hold(self, last: pl.DataFrame, begins: pl.DataFrame) -> None:
        """Hold back each pid's last event ``last`` (``begins``: the begin rows its ``_b``
        points into): a begin with its columns, an end as the predecessor it will be."""
        is_begin = pl.col("_begin")
        self._held_begins = begins.select(pl.all().gather(last.filter(is_begin)["_b"]))
        self._held = last.select(
            "pid",
            "ts_ns",
            "line",
            "_begin",
            _b=pl.when(is_begin).then((is_begin.cast(pl.UInt32).cum_sum() - 1).cast(pl.UInt32)),
            _e=pl.lit(None, dtype=pl.UInt32),
            _held=pl.lit(True),
        )

    def _restart(self, begin: pl.DataFrame, end: pl.DataFrame) -> pl.DataFrame | None:
        """Close the held events of pids that go back in time across the block boundary
        (:func:`_restarted`) as the end of a capture would, so that pairing starts again
        for them; their intervals, or None. Each such pid counts once in
        ``clock_backwards``."""
        held = self._held
        pids = _restarted(
            pl.concat([begin.select("pid", "ts_ns"), end.select("pid", "ts_ns")]), held
        )
        if pids.is_empty():
            return None
        back = pl.col("pid").is_in(pids.implode())
        self._held = held.filter(back)
        closed = self._step(self._held_begins.clear(), self._end_template.clear(), True)
        self._held = held.filter(~back)
        self._counts["clock_backwards"] += pids.len()
        return closed

    def _intervals(
        self, begins: pl.DataFrame, ends: pl.DataFrame, closed: pl.Series
    ) -> pl.DataFrame:
        """Interval rows of kept begins and their ends (null rows for open intervals)."""
        intervals = pl.DataFrame(
            {
                "kind": pl.Series([self.kind] * begins.height, dtype=pl.String),
                "pid": begins["pid"],
                "comm": begins["comm"],
                "begin_ts_ns": begins["ts_ns"],
                "end_ts_ns": ends["ts_ns"],
                "duration_ns": ends["ts_ns"] - begins["ts_ns"],
                "begin_line": begins["line"],
                "end_line": ends["line"],
                "status": pl.Series(["open", "closed"]).gather(closed.cast(pl.UInt32)),
                "comm_changed": (closed & (begins["comm"] != ends["comm"])).fill_null(False),
            }
        )
        lost = _lost_between(
            intervals["begin_line"].to_numpy(),
            intervals["end_line"].fill_null(np.iinfo(np.int64).max).to_numpy(),
            self.lost_lines,
        )
        return pl.concat(
            [
                intervals,
                begins.drop(KEY_COLUMNS),
                ends.drop(KEY_COLUMNS).select(pl.all().name.prefix("end_")),
                pl.DataFrame({"lost_events_inside": pl.Series(lost, dtype=pl.Boolean)}),
            ],
            how="horizontal",
        )

    @property
    def report(self) -> PairingReport:
        """The report of every event added so far (complete after :meth:`finish`)."""
        c = self._counts
        return PairingReport(
            kind=self.kind,
            count=c["closed"],
            total_s=float(c["total_ns"]) / 1e9,
            unpaired_begin=c["overwritten"] + c["open"],
            overwritten_begin=c["overwritten"],
            open_at_end=c["open"],
            unpaired_end=c["unpaired_end"],
            clock_backwards=c["clock_backwards"],
            comm_changed=c["comm_changed"],
            lost_events=len(self.lost_lines),
            lost_affected=c["lost_affected"],
        )


def _keys(events: pl.DataFrame, begin: bool, offset: int) -> pl.DataFrame:
    """What pairing sorts of one side's events: ``pid``, ``ts_ns``, ``line``, ``_begin``,
    and the row among the begins (``_b``, from ``offset``) or the ends (``_e``)."""
    row = pl.int_range(pl.len(), dtype=pl.UInt32)
    none = pl.lit(None, dtype=pl.UInt32)
    return events.select(
        "pid",
        "ts_ns",
        "line",
        _begin=pl.lit(begin),
        _b=(row + offset).cast(pl.UInt32) if begin else none,
        _e=none if begin else row,
    )


def _sorted_by(frame: pl.DataFrame, *keys: str) -> pl.DataFrame:
    """``frame`` sorted by ``keys`` (nulls first), as one stable sort per key from the last:
    a multi-key sort costs several times more on a block's integer keys."""
    for key in reversed(keys):
        frame = frame.sort(key, maintain_order=True)
    return frame


def _same_pid(offset: int) -> pl.Expr:
    """True where the row ``offset`` away (1: the one before) has the same pid, in a
    frame sorted by pid: a shift within the pid, as ``.over("pid")`` would, without
    grouping."""
    return (pl.col("pid").shift(offset) == pl.col("pid")).fill_null(False)


def _restarted(events: pl.DataFrame, held: pl.DataFrame) -> pl.Series:
    """The pids whose events in ``events`` start before their held (latest) event: a pid
    going back in time across a block boundary (the text goes on with another capture,
    ``cat trace trace``, or two CPUs' clocks disagree as a task migrates exactly there).
    Equal timestamps keep file order, as a whole-trace sort would."""
    first = events.group_by("pid").agg(pl.col("ts_ns").min().alias("_first"))
    late = held.select("pid", "ts_ns").join(first, on="pid")
    return late.filter(pl.col("_first") < pl.col("ts_ns"))["pid"]


def pair_intervals(
    begin: pl.DataFrame,
    end: pl.DataFrame,
    *,
    kind: str,
    begin_fields: Sequence[str] = (),
    end_fields: Sequence[str] = (),
    lost_lines: Sequence[int] = (),
) -> StallIntervals:
    """Pair begin/end events of one pid into intervals (policy in the module docstring).

    ``begin``/``end`` are event frames of the trace contract (``pid``, ``ts_ns``, ``line``,
    ``comm``, event fields). ``begin_fields`` (e.g. ``order``, ``gfp_flags``) and
    ``end_fields`` (e.g. ``nr_reclaimed``) are carried into the interval frame, the latter
    prefixed ``end_``. ``lost_lines`` are the lines of ``LOST EVENTS`` markers.

    Interval frame columns: ``kind``, ``pid``, ``comm``, ``begin_ts_ns``, ``end_ts_ns`` (null if
    open), ``duration_ns`` (null if open), ``begin_line``, ``end_line``, ``status``
    (``closed``/``open``), ``comm_changed``, ``lost_events_inside``, then the carried fields;
    ordered by pid, begin timestamp and line.
    """
    pairing = Pairing(kind, begin_fields=begin_fields, end_fields=end_fields, lost_lines=lost_lines)
    intervals = pairing._step(*pairing._sides(begin, end), True)
    return StallIntervals(intervals=intervals, report=pairing.report)


BEGIN_FIELDS = ("nid", "order", "gfp_flags")
END_FIELDS = ("nr_reclaimed",)


def reclaim_intervals(trace, *, lost_lines: Sequence[int] = ()) -> dict[str, StallIntervals]:
    """Stall intervals of ``direct`` reclaim and every other context present in ``trace``.

    Carries ``order`` and ``gfp_flags`` from the begin (``nid`` too for node reclaim) and
    ``nr_reclaimed`` (pages) from the end. ``trace`` is anything with ``events(name)`` and
    ``event_names`` (an ``analysis.ingest.ftrace.Trace``).
    """
    names = set(trace.event_names)
    out = {}
    for context, (begin_name, end_name) in RECLAIM_EVENTS.items():
        # Direct reclaim is always reported (zero stalls is an answer); other contexts only
        # when the trace has their events.
        if context != "direct" and begin_name not in names and end_name not in names:
            continue
        out[context] = pair_intervals(
            event_columns(trace, begin_name, (*KEY_COLUMNS, *BEGIN_FIELDS)),
            event_columns(trace, end_name, (*KEY_COLUMNS, *END_FIELDS)),
            kind=context,
            begin_fields=BEGIN_FIELDS,
            end_fields=END_FIELDS,
            lost_lines=lost_lines,
        )
    return out


def all_intervals(by_context: dict[str, StallIntervals]) -> pl.DataFrame:
    """Every context's intervals (closed and open) stacked, for :func:`label_context`."""
    frames = [
        s.intervals.select("kind", "pid", "begin_ts_ns", "end_ts_ns") for s in by_context.values()
    ]
    if not frames:
        return pl.DataFrame(
            schema={
                "kind": pl.String(),
                "pid": pl.Int32(),
                "begin_ts_ns": pl.Int64(),
                "end_ts_ns": pl.Int64(),
            }
        )
    return pl.concat(frames, how="vertical")


def label_context(events: pl.DataFrame, intervals: pl.DataFrame) -> pl.DataFrame:
    """Add a ``context`` column: who was reclaiming when the event fired.

    ``kswapd`` if ``comm`` starts with ``kswapd`` (the per-node reclaim thread); otherwise the
    kind (``direct``, ``memcg``, ``node`` ...) of the same pid's reclaim interval enclosing the
    event's ``ts_ns`` (open intervals extend to the end of the capture); otherwise ``other``.
    Histogram rows (null ``pid``) keep their user-given ``context`` or get ``group N``.
    """
    if "group" in events.columns and events["pid"].null_count() == events.height:
        given = pl.col("context") if "context" in events.columns else pl.lit(None, pl.String)
        return events.with_columns(context=given.fill_null(pl.format("group {}", pl.col("group"))))
    left = events.select("pid", "ts_ns").with_row_index("_row").sort("ts_ns")
    right = intervals.with_columns(pl.col("pid").cast(left.schema["pid"])).sort("begin_ts_ns")
    # Both sides are sorted on the asof keys just above; polars cannot verify it per group.
    joined = left.join_asof(
        right, left_on="ts_ns", right_on="begin_ts_ns", by="pid", check_sortedness=False
    )
    inside = pl.col("kind").is_not_null() & (
        pl.col("end_ts_ns").is_null() | (pl.col("ts_ns") <= pl.col("end_ts_ns"))
    )
    # One row per event (an as-of join keeps every left row once), back in their order.
    found = joined.sort("_row").select(
        pl.when(inside).then(pl.col("kind").cast(pl.String)).otherwise(pl.lit("other"))
    )
    return events.with_columns(
        context=pl.when(pl.col("comm").str.starts_with("kswapd"))
        .then(pl.lit("kswapd"))
        .otherwise(found.to_series())
    )


# A step back in time this large within one frame is a seam between two captures.
RESTART_NS = 1_000_000_000


class Labeller:
    """:func:`label_context` against one interval frame for many event frames (a trace's
    blocks, in file order): each frame is joined with only the intervals its time range can
    meet, those beginning inside it and each pid's last one beginning before it, which
    are the only candidates for "the pid's latest interval beginning at or before the
    event" (the label is the same as against all intervals)."""

    def __init__(self, intervals: pl.DataFrame, *, ordered: bool = False) -> None:
        self._sorted = (
            intervals if ordered else intervals.sort("begin_ts_ns", "pid", maintain_order=True)
        )
        self._begins = self._sorted["begin_ts_ns"].to_numpy()
        self._upto = 0
        self._last = self._sorted.clear()

    def fork(self) -> Labeller:
        """Another labeller of the same intervals with a state of its own, for event frames
        fed on another thread."""
        return Labeller(self._sorted, ordered=True)

    def _before(self, index: int) -> pl.DataFrame:
        """Each pid's last interval among the first ``index`` (by begin), kept as the
        frames advance; recomputed when a frame starts earlier than the one before."""
        if index < self._upto:
            self._upto, self._last = 0, self._sorted.clear()
        if index > self._upto:
            new = self._sorted.slice(self._upto, index - self._upto)
            self._last = (
                pl.concat([self._last, new], how="vertical")
                .group_by("pid", maintain_order=True)
                .agg(pl.all().last())
                .select(self._sorted.columns)
            )
            self._upto = index
        return self._last

    def __call__(self, events: pl.DataFrame) -> pl.DataFrame:
        if "ts_ns" not in events.columns or events["ts_ns"].drop_nulls().is_empty():
            return label_context(events, self._sorted)
        # Where the text goes back in time by a second or more (a trace concatenated after
        # another), each run of lines is labelled on its own: one window each, not one
        # spanning both captures.
        back = (events["ts_ns"].diff() < -RESTART_NS).fill_null(False)
        if back.any():
            cuts = [0, *back.arg_true().to_list(), events.height]
            runs = [events.slice(a, b - a) for a, b in itertools.pairwise(cuts)]
            return pl.concat([self._window(run) for run in runs], how="vertical")
        return self._window(events)

    def _window(self, events: pl.DataFrame) -> pl.DataFrame:
        ts = events["ts_ns"].drop_nulls()
        if ts.is_empty():
            return label_context(events, self._sorted)
        lo = int(np.searchsorted(self._begins, ts.min(), side="left"))
        hi = int(np.searchsorted(self._begins, ts.max(), side="right"))
        window = pl.concat([self._before(lo), self._sorted.slice(lo, hi - lo)], how="vertical")
        return label_context(events, window)
