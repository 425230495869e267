"""Reclaim throttling: ``mm_vmscan_throttled`` (5.16+) and the legacy writeback waits.

Sources (include/trace/events/vmscan.h, writeback.h):

- ``mm_vmscan_throttled``: ``nid usec_timeout usect_delayed reason`` (the kernel's own typo in
  ``usect_delayed``). Emitted by ``reclaim_throttle()`` *after* the sleep, so its timestamp is
  the wake time. ``usect_delayed = jiffies_to_usecs(timeout - remaining)``: quantised to one
  jiffy; 0 means woken within the first jiffy.
- ``writeback_congestion_wait`` (until ~5.18) and ``writeback_wait_iff_congested`` (until 5.16):
  ``usec_timeout usec_delayed``; they have no reason, so the event name stands in for it.

Censoring: a delay equal to its timeout means the sleep ran out, and the wait for the wake
condition was *at least* the timeout (right-censored). ``timeout_share`` counts those; the
``mean_usec`` here is the mean of the recorded delays and therefore a lower bound of the mean
wait whenever ``timeout_share > 0``. Legacy ``congestion_wait`` can record more than its timeout
(seed 000: 104000 us at a 100000 us timeout): those count as reaching the timeout too.

Every row is weighted by ``count`` when the frame has one (histograms from mails).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce

import polars as pl

from analysis.errors import InputError
from analysis.ingest.events import EVENTS, LEGACY_THROTTLE, THROTTLED
from analysis.ingest.ftrace.tokenizer import COMMON_SCHEMA
from analysis.ingest.histogram import Histogram
from analysis.ingest.kconfig import config_hz
from analysis.metrics.pairing import KEY_COLUMNS, event_columns, label_context

__all__ = [
    "GROUP_KEYS",
    "REASON_PREFIX",
    "HzEstimate",
    "check_fields",
    "config_hz",
    "delay_histogram",
    "infer_hz",
    "short_reason",
    "throttle_columns",
    "throttle_events",
    "throttle_events_of",
    "throttle_frame",
    "throttle_rows",
    "throttle_table",
]

# Values of CONFIG_HZ that Kconfig offers (kernel/Kconfig.hz), for inferring HZ when the delay
# quantum does not divide a second (HZ=300: jiffies_to_usecs rounds 3333.3 us).
KCONFIG_HZ = (100, 250, 300, 1000)
GROUP_KEYS = ("event", "context", "reason", "usec_timeout")

# Every throttle reason the kernel prints starts so (include/trace/events/vmscan.h).
REASON_PREFIX = "VMSCAN_THROTTLE_"


def short_reason(reason: str) -> str:
    """``VMSCAN_THROTTLE_WRITEBACK`` -> ``WRITEBACK``: the reason as tables print it."""
    return reason.removeprefix(REASON_PREFIX)


def _weight(frame: pl.DataFrame) -> pl.Expr:
    return pl.col("count") if "count" in frame.columns else pl.lit(1, dtype=pl.Int64)


_SCHEMA = {
    "event": pl.String(),
    "reason": pl.String(),
    "usec_timeout": pl.Int64(),
    "delay_us": pl.Int64(),
    "count": pl.Int64(),
    "context": pl.String(),
    "ts_ns": pl.Int64(),
    "pid": pl.Int32(),
    "comm": pl.String(),
    "line": pl.Int64(),
}


def throttle_events_of(trace) -> list[tuple[str, str]]:
    """(event, delay field) of every throttle event ``trace`` has, in reporting order."""
    names = set(trace.event_names)
    known = ((THROTTLED, "usect_delayed"), *((n, "usec_delayed") for n in LEGACY_THROTTLE))
    return [(name, delay) for name, delay in known if name in names]


def throttle_columns(delay: str) -> tuple[str, ...]:
    """What :func:`throttle_rows` reads of a throttle event (a mail histogram's rows carry
    their weight, block and user-given context)."""
    return (*KEY_COLUMNS, "reason", "usec_timeout", delay, "count", "group", "context")


def check_fields(trace, name: str, raw: pl.DataFrame, delay: str) -> None:
    """InputError at the first line of event ``name`` that lacks a field every kernel
    prints (a renamed field: a patched or future kernel), naming the fields that line has
    instead (read from the whole event only then); kept, it would be a throttle event with
    no delay or no reason. A mail histogram's rows may count a reason alone: not checked."""
    if isinstance(trace, Histogram) or raw.is_empty():
        return
    needed = ["usec_timeout", delay, *(["reason"] if name == THROTTLED else [])]
    missing = [f for f in needed if f not in raw.columns or raw[f].null_count()]
    if not missing:
        return
    field = missing[0]
    lacking = raw.filter(pl.col(field).is_null()) if field in raw.columns else raw
    line = lacking["line"][0] if "line" in lacking.columns else None
    whole = trace.events(name)
    row = (whole.filter(pl.col("line") == line) if line is not None else whole).row(0, named=True)
    known = {*EVENTS[name].field_names, *COMMON_SCHEMA, "context", "count"}
    other = [k for k, v in row.items() if k not in known and v is not None]
    instead = f"; it prints {', '.join(other)} instead (renamed?)" if other else ""
    raise InputError(trace.source, f"{name} without its {field} field{instead}", line=line)


def throttle_rows(labelled: pl.DataFrame, name: str, delay: str) -> pl.DataFrame:
    """Rows of :func:`throttle_events` from event ``name``'s frame with its ``context``
    (checked first: :func:`check_fields`)."""
    reason = pl.col("reason") if "reason" in labelled.columns else pl.lit(name)
    return labelled.select(
        pl.lit(name).alias("event"),
        reason.alias("reason"),
        pl.col("usec_timeout").cast(pl.Int64),
        pl.col(delay).cast(pl.Int64).alias("delay_us"),
        _weight(labelled).cast(pl.Int64).alias("count"),
        "context",
        "ts_ns",
        pl.col("pid").cast(pl.Int32),
        "comm",
        "line",
    )


def throttle_frame(rows: list[pl.DataFrame]) -> pl.DataFrame:
    """:func:`throttle_rows` frames in one (empty with the schema when there are none)."""
    if not rows:
        return pl.DataFrame(schema=_SCHEMA)
    return pl.concat(rows, how="vertical_relaxed")


def throttle_events(trace, intervals: pl.DataFrame) -> pl.DataFrame:
    """All throttle events of ``trace`` in one frame with their reclaim context.

    Columns: ``event``, ``reason`` (the event name for legacy events), ``usec_timeout``,
    ``delay_us`` (``usect_delayed`` or ``usec_delayed``), ``count`` (1 per traced event),
    ``context`` (see :func:`analysis.metrics.pairing.label_context`), ``ts_ns``, ``pid``,
    ``comm``, ``line``. ``intervals`` is :func:`analysis.metrics.pairing.all_intervals`.
    """
    rows = []
    for name, delay in throttle_events_of(trace):
        labelled = label_context(event_columns(trace, name, throttle_columns(delay)), intervals)
        check_fields(trace, name, labelled, delay)
        rows.append(throttle_rows(labelled, name, delay))
    return throttle_frame(rows)


def throttle_table(events: pl.DataFrame) -> pl.DataFrame:
    """Per event, context, reason and timeout: how often throttling slept and for how long.

    Columns: ``count`` (events), ``known_delay`` (events with a recorded delay; a totals
    block from a mail has none), ``zero_share`` (share with delay 0: not stalled beyond the
    first jiffy), ``timeout_share`` (share with delay ≥ timeout: right-censored, the real wait
    was at least the timeout), ``mean_usec`` (mean recorded delay, a lower bound when
    ``timeout_share > 0``), ``max_usec``. Shares are of ``known_delay``; null when it is 0.
    """
    known = pl.col("delay_us").is_not_null()
    w = pl.col("count")
    known_w = pl.when(known).then(w).otherwise(0)
    return (
        events.group_by(*GROUP_KEYS)
        .agg(
            count=w.sum(),
            known_delay=known_w.sum(),
            _zero=pl.when(pl.col("delay_us") == 0).then(w).otherwise(0).sum(),
            _timeout=pl.when(pl.col("delay_us") >= pl.col("usec_timeout"))
            .then(w)
            .otherwise(0)
            .sum(),
            _delay_sum=(pl.col("delay_us").fill_null(0) * known_w).sum(),
            max_usec=pl.col("delay_us").max(),
        )
        .with_columns(
            zero_share=pl.when(pl.col("known_delay") > 0).then(
                pl.col("_zero") / pl.col("known_delay")
            ),
            timeout_share=pl.when(pl.col("known_delay") > 0).then(
                pl.col("_timeout") / pl.col("known_delay")
            ),
            mean_usec=pl.when(pl.col("known_delay") > 0).then(
                pl.col("_delay_sum") / pl.col("known_delay")
            ),
        )
        .drop("_zero", "_timeout", "_delay_sum")
        .sort("event", "context", "reason", "usec_timeout")
    )


def delay_histogram(events: pl.DataFrame) -> pl.DataFrame:
    """The ``sort | uniq -c`` view: count per (event, context, reason, timeout, delay).

    Sorted by ascending count within each group, as seed 000 prints it. ``at_timeout`` marks
    right-censored rows (delay ≥ timeout).
    """
    return (
        events.filter(pl.col("delay_us").is_not_null())
        .group_by(*GROUP_KEYS, "delay_us")
        .agg(count=pl.col("count").sum())
        .with_columns(at_timeout=pl.col("delay_us") >= pl.col("usec_timeout"))
        .sort(*GROUP_KEYS, "count", "delay_us")
    )


@dataclass(frozen=True)
class HzEstimate:
    """HZ of the capturing kernel inferred from the jiffy quantum of throttle delays.

    ``jiffy_us`` is the greatest common divisor of the non-zero delays; every real delay is a
    multiple of the true jiffy, so the true jiffy divides ``jiffy_us`` and the inferred ``hz``
    is a *lower bound* of the true HZ (equal once some delay of exactly one jiffy was seen).
    ``method`` is ``gcd`` or ``rounded`` (HZ whose ``jiffies_to_usecs`` rounding explains all
    delays, e.g. HZ=300) or ``none``. ``verdict`` compares with ``config_hz`` (CONFIG_HZ):
    ``agrees``, ``conflicts``, ``no kconfig`` or ``no delays``.
    """

    jiffy_us: int | None
    hz: float | None
    method: str
    nonzero_samples: int
    distinct_delays: int
    config_hz: int | None
    verdict: str

    def conflict(self) -> str | None:
        """Why CONFIG_HZ (kconfig or ``--hz``) cannot be the capturing kernel's, when the
        delays say so; None otherwise. ``mmlab stalls`` prints it, ``mmlab fit`` refuses on
        it: a fit quantised to the wrong jiffy is wrong without any sign."""
        if self.verdict != "conflicts":
            return None
        return (
            f"CONFIG_HZ={self.config_hz} conflicts with the throttle delays: all "
            f"{self.distinct_delays} distinct non-zero delays are multiples of "
            f"{self.jiffy_us} us (HZ {self.hz:g} by {self.method})"
        )


def _explains(hz: int, delays: list[int]) -> bool:
    jiffy = 1e6 / hz
    return all(abs(d - round(d / jiffy) * jiffy) <= 1.0 for d in delays)


def infer_hz(events: pl.DataFrame, config_hz: int | None = None) -> HzEstimate:
    """Infer HZ from ``delay_us`` of :func:`throttle_events` and check it against CONFIG_HZ."""
    delays = sorted(
        int(d) for d in events.filter(pl.col("delay_us") > 0)["delay_us"].unique().to_list()
    )
    nonzero = int(events.filter(pl.col("delay_us") > 0)["count"].sum() or 0)
    if not delays:
        return HzEstimate(None, None, "none", 0, 0, config_hz, "no delays")
    jiffy = reduce(math.gcd, delays)
    hz: float | None = 1e6 / jiffy
    method = "gcd"
    if 1_000_000 % jiffy or jiffy < 1000:
        # Not a whole number of jiffies per second, or faster than any Kconfig HZ: the delays
        # were rounded by jiffies_to_usecs (HZ=300), so find a Kconfig HZ that explains them.
        fits = [h for h in KCONFIG_HZ if _explains(h, delays)]
        if fits:
            hz, method = float(min(fits)), "rounded"
    if config_hz is None:
        verdict = "no kconfig"
    else:
        verdict = "agrees" if hz is not None and abs(hz - config_hz) < 0.5 else "conflicts"
    return HzEstimate(jiffy, hz, method, nonzero, len(delays), config_hz, verdict)
