"""An experiment's endpoints per run: one number per boot for the plan's named endpoints.

The names are those of :data:`analysis.capture.design.ENDPOINTS`. Reclaim is counted where
the pressure put it: a cgroup limit's reclaim in the cgroup's ``memory.stat`` (global
/proc/vmstat does not count cgroup-limit reclaim), global pressure's in /proc/vmstat's
kswapd and direct counters (the cgroup's own counters would count the same pages again).
"""

from __future__ import annotations

from analysis.ingest.mmtests import Iteration

__all__ = ["COMPUTED", "endpoint_value"]

# endpoint -> the Ops rows (analysis.metrics.ops) it is computed from, per pressure.
_SCANNED = {"cgroup": ("Cgroup-limit pages scanned",),
            "global": ("Kswapd pages scanned", "Direct pages scanned")}  # fmt: skip
_RECLAIMED = {"cgroup": ("Cgroup-limit pages reclaimed",),
              "global": ("Kswapd pages reclaimed", "Direct pages reclaimed")}  # fmt: skip
_VELOCITY = {"cgroup": ("Cgroup-limit velocity",), "global": ("Kswapd velocity", "Direct velocity")}
COMPUTED = ("reclaim_velocity", "reclaim_efficiency")


def endpoint_value(it: Iteration, endpoint: str, pressure: str) -> float | None:
    """``endpoint`` of iteration ``it`` run under ``pressure`` (``cgroup`` or ``global``):
    pages scanned per second of reclaim of that kind, or reclaimed/scanned; None when
    nothing was scanned (no efficiency) or a counter is missing. ValueError for an endpoint
    not computed here yet."""
    from analysis.metrics.sample_rows import ops_rows

    if endpoint not in COMPUTED:
        raise ValueError(f"endpoint {endpoint} is not computed per run yet ({', '.join(COMPUTED)})")
    rows = {label: value for label, value, _, _ in ops_rows(it)}

    def total(labels: tuple[str, ...]) -> float | None:
        values = [rows.get(label) for label in labels]
        return None if any(v is None for v in values) else float(sum(values))

    if endpoint == "reclaim_velocity":
        return total(_VELOCITY[pressure])
    scanned, reclaimed = total(_SCANNED[pressure]), total(_RECLAIMED[pressure])
    if not scanned or reclaimed is None:
        return None
    return reclaimed / scanned
