"""An experiment's endpoints per run: one number per boot for the plan's named endpoints.

The names are those of :data:`analysis.capture.design.ENDPOINTS`. Reclaim is counted where
the pressure put it: a cgroup limit's reclaim in the cgroup's ``memory.stat`` (global
/proc/vmstat does not count cgroup-limit reclaim), global pressure's in /proc/vmstat's
kswapd and direct counters (the cgroup's own counters would count the same pages again).
The trace endpoints read every trace of the iteration (one per workload test in a guest
run); an iteration whose trace lacks the events an endpoint needs has no value for it
(None), never a zero.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import polars as pl

from analysis.ingest.mmtests import Iteration

__all__ = ["COMPUTED", "COVARIATES", "ENDPOINT_UNITS", "endpoint_value", "endpoint_values"]

# endpoint -> the Ops rows (analysis.metrics.ops) it is computed from, per pressure.
_SCANNED = {"cgroup": ("Cgroup-limit pages scanned",),
            "global": ("Kswapd pages scanned", "Direct pages scanned")}  # fmt: skip
_RECLAIMED = {"cgroup": ("Cgroup-limit pages reclaimed",),
              "global": ("Kswapd pages reclaimed", "Direct pages reclaimed")}  # fmt: skip
_VELOCITY = {"cgroup": ("Cgroup-limit velocity",), "global": ("Kswapd velocity", "Direct velocity")}


# Read once per call of endpoint_values: several endpoints of one run read its vmstat or
# analyse its traces (seconds each); cleared when the call returns, so nothing is held
# between calls (a file changed meanwhile is read again).
@functools.lru_cache(maxsize=1)
def _ops(it: Iteration) -> dict[str, float]:
    from analysis.metrics.sample_rows import ops_rows

    return {label: value for label, value, _, _ in ops_rows(it)}


@functools.lru_cache(maxsize=1)
def _traces(it: Iteration):
    from analysis.metrics.trace_files import analyse_iteration

    return analyse_iteration(it)


def _vmstat(it: Iteration, endpoint: str, pressure: str) -> float | None:
    rows = _ops(it)

    def total(labels: tuple[str, ...]) -> float | None:
        values = [rows.get(label) for label in labels]
        return None if any(v is None for v in values) else float(sum(values))

    if endpoint == "reclaim_velocity":
        return total(_VELOCITY[pressure])
    scanned, reclaimed = total(_SCANNED[pressure]), total(_RECLAIMED[pressure])
    if not scanned or reclaimed is None:
        return None
    return reclaimed / scanned


def _closed_ms(it: Iteration, context: str) -> pl.Series:
    """Durations (ms) of the closed ``mm_vmscan_<context>_reclaim_begin->end`` intervals."""
    parts = [
        r.reclaim[context].intervals.filter(pl.col("status") == "closed")["duration_ns"] / 1e6
        for r in _traces(it)
        if context in r.reclaim
    ]
    return pl.concat(parts) if parts else pl.Series("duration_ns", [], pl.Float64)


def _mean_stall(context: str) -> Callable[[Iteration, str], float | None]:
    def value(it: Iteration, pressure: str) -> float | None:
        ms = _closed_ms(it, context)
        return float(ms.mean()) if len(ms) else None

    return value


def _enabled(it: Iteration, *events: str) -> bool:
    """Whether the capture enabled every one of ``events`` (``mmlab.json``'s
    ``trace.events_enabled``): only then does an absent event mean none happened. Traces
    of other tools say nothing of what was enabled."""
    meta = it.metadata
    enabled = meta.trace.events_enabled if meta is not None and meta.trace is not None else ()
    return all(f"vmscan/{e}" in enabled for e in events)


def _throttle_s(it: Iteration, pressure: str) -> float | None:
    """Seconds reclaimers slept in ``reclaim_throttle()`` (``mm_vmscan_throttled``'s
    ``usec_delayed`` summed): 0 only where the capture enabled the event and nobody slept."""
    found = [r.throttle_events for r in _traces(it)]
    if not any(len(f) for f in found) and not _enabled(it, "mm_vmscan_throttled"):
        return None
    return sum(float((f["delay_us"] * f["count"]).sum()) for f in found) / 1e6


def _shrinker(reduce: Callable[[pl.DataFrame], float], none_called: float | None = None):
    """An endpoint of the ``do_shrink_slab()`` calls; ``none_called`` is its value where
    the capture enabled the shrinker events and no call happened (None: undefined)."""

    def value(it: Iteration, pressure: str) -> float | None:
        frames = [r.shrinker_invocations for r in _traces(it)]
        calls = pl.concat(frames) if frames else None
        if calls is not None and not calls.is_empty():
            return reduce(calls)
        enabled = _enabled(it, "mm_shrink_slab_start", "mm_shrink_slab_end")
        return none_called if enabled else None

    return value


def _backlog_taken(calls: pl.DataFrame) -> float:
    """The largest share of deferred work one ``do_shrink_slab()`` call took: its
    ``total_scan`` less its own ``delta`` (``nr >> priority`` on 6.12, ``nr / divisor``
    with the deferral patch; docs/shrinker-deferral.md)."""
    taken = (pl.col("to_scan_objects") - pl.col("delta_objects")).clip(lower_bound=0)
    return float(calls.select(taken.max()).item())


def _probe_ms(it: Iteration, pressure: str) -> float | None:
    """Median latency (ms) of the anon-latency probe's mappings (stutterp's
    ``mmap-latency-<N>.log``, in the unit its header names)."""
    from analysis.ingest.mmtests_logs import stutterp_log

    scale = {"us": 1e-3, "ms": 1.0, "ns": 1e-6, "s": 1e3}
    values: list[float] = []
    for path in sorted(it.path.glob("*/logs/mmap-latency-*.log*")):
        log = stutterp_log(path)
        values += [v * scale[log.unit] for v in log.values]
    return float(pl.Series(values).median()) if values else None


def _times(field: str) -> Callable[[Iteration, str], float | None]:
    def value(it: Iteration, pressure: str) -> float | None:
        found = [getattr(t, field) for t in it.times.values()]
        return None if not found or None in found else float(sum(found))

    return value


# endpoint -> (unit, how one iteration's value is computed).
_COMPUTE: dict[str, tuple[str, Callable[[Iteration, str], float | None]]] = {
    "reclaim_velocity": ("pages/s", lambda it, p: _vmstat(it, "reclaim_velocity", p)),
    "reclaim_efficiency": ("reclaimed/scanned", lambda it, p: _vmstat(it, "reclaim_efficiency", p)),
    "throttle_stall": ("s slept", _throttle_s),
    "direct_reclaim_stall": ("ms per stall", _mean_stall("direct")),
    "memcg_reclaim_stall": ("ms per stall", _mean_stall("memcg")),
    "probe_latency": ("ms, median", _probe_ms),
    "shrinker_scanned": ("objects", _shrinker(lambda c: float(c["scanned_objects"].sum()), 0.0)),
    "shrinker_freed": ("objects", _shrinker(lambda c: float(c["freed_objects"].sum()), 0.0)),
    "shrinker_backlog": ("objects, largest", _shrinker(_backlog_taken)),
    # The mean: ftrace's microsecond timestamps put most calls' durations at 0 or 1 us, so
    # a median sits on the clock's resolution.
    "shrinker_latency": ("us, mean", _shrinker(lambda c: float(c["duration_ns"].mean()) / 1e3)),
    "system_cpu": ("s", _times("system_s")),
    "elapsed": ("s", _times("elapsed_s")),
}
COMPUTED = tuple(_COMPUTE)
ENDPOINT_UNITS = {name: unit for name, (unit, _) in _COMPUTE.items()}


def endpoint_value(it: Iteration, endpoint: str, pressure: str) -> float | None:
    """``endpoint`` of iteration ``it`` run under ``pressure`` (``cgroup`` or ``global``);
    None where the iteration cannot give it (nothing scanned, no such stall, a counter or
    event missing). ValueError for an endpoint not computed here.

    - ``reclaim_velocity``: pages scanned per second of the workload, of the reclaim the
      pressure causes; ``reclaim_efficiency``: reclaimed / scanned of that reclaim;
    - ``throttle_stall``: seconds slept in ``reclaim_throttle()``, all reasons;
    - ``direct_reclaim_stall``, ``memcg_reclaim_stall``: mean ms of a closed
      ``mm_vmscan_{direct,memcg}_reclaim_begin->end`` interval (total stall time per stall);
    - ``probe_latency``: the probe's median mapping latency, ms;
    - ``shrinker_scanned``/``_freed``: objects over every ``do_shrink_slab()`` call;
      ``shrinker_backlog``: the largest share of deferred work one call took;
      ``shrinker_latency``: mean ``mm_shrink_slab_start->end``, us;
    - ``system_cpu``, ``elapsed``: the workload's /usr/bin/time system and wall seconds.
    """
    return endpoint_values(it, (endpoint,), pressure)[endpoint]


def endpoint_values(it: Iteration, names: Iterable[str], pressure: str) -> dict[str, float | None]:
    """:func:`endpoint_value` of each of ``names`` (endpoints, or :data:`COVARIATES`) for one
    run, its vmstat read and its traces analysed once for all of them."""
    names = tuple(names)
    unknown = [n for n in names if n not in _COMPUTE and n not in COVARIATES]
    if unknown:
        raise ValueError(f"endpoint {unknown[0]} is not computed per run ({', '.join(COMPUTED)})")
    compute = {n: _COMPUTE[n][1] if n in _COMPUTE else COVARIATES[n] for n in names}
    try:
        return {n: f(it, pressure) for n, f in compute.items()}
    finally:
        _ops.cache_clear()
        _traces.cache_clear()


def _writeback_rate(it: Iteration, pressure: str) -> float | None:
    """KiB written to the block device per second of the workload (``pgpgout`` over the
    workload's elapsed time): how fast dirty pages can be cleaned, which sets how fast
    reclaim can free file pages."""
    written = _ops(it).get("Sector Writes")
    elapsed = _times("elapsed_s")(it, pressure)
    return written / elapsed if written is not None and elapsed else None


# Per-run covariates: measured in every run, not set by the plan.
COVARIATES: dict[str, Callable[[Iteration, str], float | None]] = {
    "writeback_rate": _writeback_rate,
}
