"""The patched kernel's knobs (kernels/patches/) and what a trace must show for them.

``vm.reclaim_throttle_<reason>_ms`` sets the timeout of ``reclaim_throttle()`` for one
reason; ``mm_vmscan_throttled`` prints it as ``usec_timeout``. ``vm.shrinker_deferred_divisor``
sets the deferral divisor of ``do_shrink_slab()``
(docs/shrinker-deferral.md "Deferral divisor"), in the forms :func:`divisor_table` takes
(and the shrinker model, :mod:`analysis.models.shrinker`, with it):
``2^priority`` (the default), ``priority`` or a positive integer; ``mm_shrink_slab_start``
prints the taken count ``nr``, the call's ``delta`` and the resulting ``total_scan``, so each
call can be recomputed under the divisor the capture claims (docs/patched-kernels.md
"Checking a capture against its knobs").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import polars as pl

__all__ = [
    "DEF_PRIORITY",
    "DIVISOR_KNOB",
    "THROTTLE_KNOBS",
    "DeferralCheck",
    "Divisor",
    "ThrottleCheck",
    "check_deferral",
    "check_iteration",
    "check_throttle",
    "divisor_table",
    "expected_timeouts_us",
    "usec_timeout",
]

# knob -> the reason mm_vmscan_throttled prints.
THROTTLE_KNOBS = {
    "vm.reclaim_throttle_writeback_ms": "VMSCAN_THROTTLE_WRITEBACK",
    "vm.reclaim_throttle_isolated_ms": "VMSCAN_THROTTLE_ISOLATED",
    "vm.reclaim_throttle_noprogress_ms": "VMSCAN_THROTTLE_NOPROGRESS",
    "vm.reclaim_throttle_congested_ms": "VMSCAN_THROTTLE_CONGESTED",
}
DIVISOR_KNOB = "vm.shrinker_deferred_divisor"


# The scan priorities of reclaim, DEF_PRIORITY (include/linux/mmzone.h) down to 0.
DEF_PRIORITY = 12

Divisor = str | int | Callable[[int], int]


def divisor_table(divisor: Divisor) -> np.ndarray:
    """The deferral divisor for priorities 0..DEF_PRIORITY as int64.

    ``"1"``, ``"priority"`` (the patch divides only when ``priority > 0``: 1 at 0),
    ``"2^priority"``, a positive integer constant, or a callable of priority returning
    a positive integer. Kernel arithmetic divides integers, so anything else is refused.
    """
    named: dict[str, Callable[[int], int]] = {
        "1": lambda p: 1,
        "priority": lambda p: max(p, 1),
        "2^priority": lambda p: 1 << p,
    }
    if isinstance(divisor, str) and divisor in named:
        function = named[divisor]
    elif isinstance(divisor, str) and re.fullmatch(r"-?\d+", divisor.strip()):
        return divisor_table(int(divisor))
    elif isinstance(divisor, int) and not isinstance(divisor, bool):
        function = lambda p: divisor  # noqa: E731
    elif callable(divisor):
        function = divisor
    else:
        raise ValueError(
            f"divisor {divisor!r}: expected 1, priority, 2^priority, a positive integer "
            "or a function of priority"
        )
    values = []
    for priority in range(DEF_PRIORITY + 1):
        value = function(priority)
        if not isinstance(value, int | np.integer) or value <= 0:
            raise ValueError(f"divisor at priority {priority} is {value!r}: must be an integer > 0")
        values.append(int(value))
    return np.asarray(values, dtype=np.int64)


def _default_jiffies(hz: int) -> dict[str, int]:
    """reclaim_throttle()'s built-in timeouts (mm/vmscan.c), jiffies."""
    return {
        "VMSCAN_THROTTLE_WRITEBACK": hz // 10,
        "VMSCAN_THROTTLE_ISOLATED": hz // 50,
        "VMSCAN_THROTTLE_NOPROGRESS": 1,
        "VMSCAN_THROTTLE_CONGESTED": 1,
    }


def _jiffies_to_usecs(jiffies: int, hz: int) -> int:
    """``jiffies_to_usecs()`` for an HZ that divides 10^6 (what the tracepoint prints)."""
    return jiffies * (1_000_000 // hz)


def usec_timeout(ms: int, hz: int) -> int:
    """``usec_timeout`` for a knob written as ``ms``: ``msecs_to_jiffies()`` rounds up to whole
    jiffies, the tracepoint prints ``jiffies_to_usecs()`` of that (HZ dividing 10^6)."""
    return _jiffies_to_usecs(-(-ms * hz // 1000), hz)


def expected_timeouts_us(knobs: dict[str, str], hz: int) -> dict[str, int]:
    """Each reason's ``usec_timeout`` under ``knobs`` (name -> value in ms; absent knobs keep
    the built-in timeout)."""
    expected = {r: _jiffies_to_usecs(j, hz) for r, j in _default_jiffies(hz).items()}
    for name, value in knobs.items():
        if name in THROTTLE_KNOBS:
            expected[THROTTLE_KNOBS[name]] = usec_timeout(int(value), hz)
    return expected


@dataclass(frozen=True)
class ThrottleCheck:
    """One reason's ``mm_vmscan_throttled`` events against the timeout expected (µs)."""

    reason: str
    events: int
    expected_us: int
    seen_us: tuple[int, ...]

    @property
    def agrees(self) -> bool:
        return self.events > 0 and self.seen_us == (self.expected_us,)


def check_throttle(throttled: pl.DataFrame, expected_us: dict[str, int]) -> list[ThrottleCheck]:
    """Per reason present in the trace: how many throttles, which ``usec_timeout`` values.

    A reason the trace never shows is left out (no evidence either way)."""
    out = []
    for reason, group in throttled.group_by("reason"):
        name = reason[0]
        seen = tuple(sorted(int(v) for v in group["usec_timeout"].unique()))
        out.append(ThrottleCheck(name, group.height, expected_us.get(name, -1), seen))
    return sorted(out, key=lambda c: c.reason)


@dataclass(frozen=True)
class DeferralCheck:
    """``mm_shrink_slab_start`` calls recomputed under a divisor.

    ``matching``: calls whose printed ``total_scan`` equals ``min(nr // d(priority) + delta,
    2 * cache_items)``; ``discriminating``: calls where this divisor and the default
    ``2^priority`` give different targets (only these tell the two apart), and
    ``discriminating_matching`` those of them that match this divisor.
    """

    divisor: str
    calls: int
    with_deferred: int
    matching: int
    discriminating: int
    discriminating_matching: int

    @property
    def agrees(self) -> bool:
        return self.calls > 0 and self.matching == self.calls


def _targets(start: pl.DataFrame, divisor: str) -> np.ndarray:
    table = divisor_table(divisor)
    nr = start["nr_objects_to_shrink"].to_numpy().astype(np.int64)
    priority = start["priority"].to_numpy().astype(np.int64)
    delta = start["delta"].to_numpy().astype(np.int64)
    cap = 2 * start["cache_items"].to_numpy().astype(np.int64)
    return np.minimum(nr // table[priority] + delta, cap)


def check_deferral(start: pl.DataFrame, divisor: str) -> DeferralCheck:
    """Recompute every ``mm_shrink_slab_start`` call (with a ``priority``) under ``divisor``."""
    start = start.filter(pl.col("priority").is_not_null())
    printed = start["total_scan"].to_numpy().astype(np.int64)
    mine = _targets(start, divisor)
    default = _targets(start, "2^priority")
    differ = mine != default
    return DeferralCheck(
        divisor=divisor,
        calls=start.height,
        with_deferred=int((start["nr_objects_to_shrink"] > 0).sum()),
        matching=int((printed == mine).sum()),
        discriminating=int(differ.sum()),
        discriminating_matching=int((differ & (printed == mine)).sum()),
    )


def check_iteration(trace: Path, knobs: dict[str, str], hz: int) -> dict:
    """Both checks on one iteration's trace under ``knobs`` (sysctl name -> value read back
    in the guest), as JSON-ready data: throttles per reason, then the deferral divisor."""
    from analysis.ingest import ftrace

    read = ftrace.read(trace)
    expected = expected_timeouts_us(knobs, hz)
    divisor = knobs.get(DIVISOR_KNOB, "2^priority")
    throttles = check_throttle(read.lazy("mm_vmscan_throttled").collect(), expected)
    deferral = check_deferral(read.lazy("mm_shrink_slab_start").collect(), divisor)
    return {
        "trace": trace.name,
        "throttle": [{**asdict(c), "agrees": c.agrees} for c in throttles],
        "deferral": {**asdict(deferral), "agrees": deferral.agrees},
    }
