"""Time a per-node reclaim/compaction daemon was awake: kswapd and kcompactd.

Sources (mm/vmscan.c ``kswapd()``, mm/compaction.c ``kcompactd()``), both emitted by the daemon
itself, so the events' pid is the daemon's:

- ``mm_vmscan_kswapd_wake`` (``nid [zid] order``) each time ``kswapd()`` goes round its loop
  after ``kswapd_try_to_sleep()`` returns; ``mm_vmscan_kswapd_sleep`` (``nid``) only when it
  really goes to sleep (``schedule()``) after the node was balanced.
- ``mm_compaction_kcompactd_wake`` (``nid order classzone_idx``) / ``_kcompactd_sleep`` (``nid``).

Policy, per node: a wake while awake is a *re-wake* (counted, the interval continues, as in
mmtests); a sleep closes the interval. Under sustained pressure kswapd naps briefly inside
``kswapd_try_to_sleep()`` without the sleep event and is woken again, so a 6.x capture can hold
thousands of wakes and no sleep. Then the awake time is *bounded*, never 0 and never silently
the whole capture:

- ``awake_s`` (lower bound): closed intervals, plus for an open interval, for every wake, the
  time from that wake to the daemon's last traced event before the next wake (it was certainly
  running then; the gaps may be naps);
- ``awake_upper_s`` (upper bound): closed intervals plus open ones run to the capture's edge
  (its first event for a sleep with no wake before it, its last event for a wake with no sleep).

kcompactd also emits its sleep event each time its periodic timeout (HZ/2, for proactive
compaction) expires without work, so a run of sleeps without wakes is normal there: those
count as ``unpaired_sleeps`` and add no awake time.

``awake_kind`` says which: ``exact`` (every interval closed inside the capture, so both bounds
are equal) or ``lower_bound`` (``awake_s`` is the activity lower bound above). A node whose
daemon shows activity but no wake or sleep event at all is ``lower_bound`` with the span of
its activity as the lower bound and the whole capture as the upper one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

__all__ = ["DAEMONS", "AwakeReport", "awake_time", "daemon_awake"]

# daemon -> (wake event, sleep event, comm pattern giving the node id)
DAEMONS: dict[str, tuple[str, str, str]] = {
    "kswapd": ("mm_vmscan_kswapd_wake", "mm_vmscan_kswapd_sleep", r"^kswapd(\d+)$"),
    "kcompactd": (
        "mm_compaction_kcompactd_wake",
        "mm_compaction_kcompactd_sleep",
        r"^kcompactd(\d+)$",
    ),
}


@dataclass(frozen=True)
class AwakeReport:
    """Awake accounting for one daemon on one node (see the module docstring)."""

    daemon: str
    nid: int
    pid: int | None
    wakes: int
    rewakes: int
    sleeps: int
    unpaired_sleeps: int
    awake_s: float
    awake_upper_s: float
    awake_kind: str
    open_at_end: bool
    started_awake: bool
    lost_events: int


def _activity_lower_bound(wakes: Sequence[int], activity: np.ndarray, stop: int) -> int:
    """Σ over wakes of (last activity before the next wake or ``stop``) − wake, in ns."""
    total = 0
    # Strictly before the next wake (that wake is itself an event of the pid); up to and
    # including ``stop`` for the last one.
    bounds = [*wakes[1:], stop + 1]
    for wake, nxt in zip(wakes, bounds, strict=True):
        idx = np.searchsorted(activity, nxt, side="left") - 1
        if idx >= 0 and activity[idx] >= wake:
            total += int(activity[idx]) - wake
    return total


def awake_time(
    kinds: Sequence[str],
    ts_ns: Sequence[int],
    activity_ns: Sequence[int],
    capture_start_ns: int,
    capture_end_ns: int,
) -> tuple[dict[str, int | bool], int, int]:
    """Walk one node's ordered ``wake``/``sleep`` events; return (counts, lower ns, upper ns).

    ``activity_ns`` are the timestamps of every event of the daemon's pid (any tracepoint).
    """
    activity = np.sort(np.asarray(activity_ns, dtype=np.int64))
    counts: dict[str, int | bool] = dict(
        wakes=0, rewakes=0, sleeps=0, unpaired_sleeps=0, started_awake=False, open_at_end=False
    )
    lower = upper = 0
    awake_since: int | None = None
    segment_wakes: list[int] = []
    for index, (kind, ts) in enumerate(zip(kinds, ts_ns, strict=True)):
        if kind == "wake":
            counts["wakes"] += 1
            if awake_since is None:
                awake_since, segment_wakes = ts, [ts]
            else:
                counts["rewakes"] += 1
                segment_wakes.append(ts)
            continue
        counts["sleeps"] += 1
        if awake_since is not None:
            lower += ts - awake_since
            upper += ts - awake_since
            awake_since = None
        elif index == 0:
            # The capture began while the daemon was awake.
            counts["started_awake"] = True
            first = activity[0] if activity.size else ts
            lower += ts - min(first, ts)
            upper += ts - capture_start_ns
        else:
            counts["unpaired_sleeps"] += 1
    if awake_since is not None:
        counts["open_at_end"] = True
        lower += _activity_lower_bound(segment_wakes, activity, capture_end_ns)
        upper += capture_end_ns - awake_since
    return counts, lower, upper


def _node_events(frame: pl.DataFrame, kind: str) -> pl.DataFrame:
    """``nid``, ``pid``, ``ts_ns``, ``line``, ``kind`` of wake or sleep events; an absent
    event (an empty frame without the event's fields) gives an empty typed frame."""
    if "nid" not in frame.columns:
        frame = frame.with_columns(nid=pl.lit(None, dtype=pl.Int64))
    return frame.select(
        pl.col("nid").cast(pl.Int64),
        pl.col("pid").cast(pl.Int32),
        pl.col("ts_ns").cast(pl.Int64),
        pl.col("line").cast(pl.Int64),
        kind=pl.lit(kind),
    )


def daemon_awake(
    wake: pl.DataFrame,
    sleep: pl.DataFrame,
    activity: pl.DataFrame,
    *,
    daemon: str,
    capture_start_ns: int,
    capture_end_ns: int,
    lost_events: int = 0,
) -> list[AwakeReport]:
    """Awake accounting per node for ``daemon`` (``kswapd`` or ``kcompactd``).

    ``wake``/``sleep`` are the daemon's event frames (``nid``, ``pid``, ``ts_ns``, ``line``);
    ``activity`` is ``pid``, ``comm``, ``ts_ns`` of every event in the capture. Nodes come from
    the events' ``nid`` and from comms like ``kswapd1`` seen in ``activity``. ``lost_events``
    is the source's lost-event count, carried so readers can discount the numbers.
    """
    pattern = DAEMONS[daemon][2]
    events = pl.concat(
        [_node_events(wake, "wake"), _node_events(sleep, "sleep")],
        how="vertical_relaxed",
    ).sort("ts_ns", "line")
    by_comm = (
        activity.filter(pl.col("comm").str.contains(pattern))
        .group_by("comm")
        .agg(pl.col("pid").first())
        .with_columns(nid=pl.col("comm").str.extract(pattern, 1).cast(pl.Int64))
    )
    nids = sorted(set(events["nid"].drop_nulls().to_list()) | set(by_comm["nid"].to_list()))
    reports = []
    for nid in nids:
        node = events.filter(pl.col("nid") == nid)
        pids = (
            node["pid"].drop_nulls().unique().to_list()
            or by_comm.filter(pl.col("nid") == nid)["pid"].to_list()
        )
        own = activity.filter(pl.col("pid").is_in(pids))["ts_ns"].to_numpy()
        if node.is_empty():
            # Busy all capture long without a wake or sleep event: only activity bounds it.
            span = int(own.max() - own.min()) if own.size else 0
            counts = dict(
                wakes=0,
                rewakes=0,
                sleeps=0,
                unpaired_sleeps=0,
                started_awake=True,
                open_at_end=True,
            )
            lower, upper = span, capture_end_ns - capture_start_ns
        else:
            counts, lower, upper = awake_time(
                node["kind"].to_list(),
                node["ts_ns"].to_list(),
                own,
                capture_start_ns,
                capture_end_ns,
            )
        bounded = counts["open_at_end"] or counts["started_awake"]
        reports.append(
            AwakeReport(
                daemon=daemon,
                nid=int(nid),
                pid=int(pids[0]) if pids else None,
                awake_s=lower / 1e9,
                awake_upper_s=upper / 1e9,
                awake_kind="lower_bound" if bounded else "exact",
                lost_events=lost_events,
                **counts,  # type: ignore[arg-type]
            )
        )
    return reports
