"""The shrinker-deferral replay scored against kernels that ran the other divisor.

Each calibration run (a trace of the default kernel) is replayed
(:func:`analysis.models.shrinker.replay`, rule G3 of ``docs/shrinker-deferral.md``) under
the deferral divisor a validation capture ran, read from its ``vm.json`` ``knob_check``
(``mmlab capture --kernel`` checked every ``mm_shrink_slab_start`` of the iteration
against it; iterations that disagree are refused). Per run, the quantities compared are:

- ``scanned_objects``: objects scanned by every ``do_shrink_slab()`` call (sum of
  ``mm_shrink_slab_end`` ``total_scan`` handed to ``scan_objects()``: the replay's own);
- ``freed_objects``: objects freed; the replay has no freeing of its own, so it is its
  scanned objects x the calibration capture's pooled freed-per-scanned ratio (left out
  when the calibration scanned nothing: the ratio is unknown);
- ``backlog_objects``: mean ``nr_deferred`` taken per call (``mm_shrink_slab_start``
  ``nr_objects_to_shrink``; the replay's own counter);
- ``kswapd_share``: share of calls made by kswapd (the replay keeps the calibration's
  calls, so this is the calibration's split by construction).

Predictions are per calibration run, then the run-level interval of
:mod:`analysis.models.run_scoring`; errors are absolute (objects; percentage points for
the share), as runs that scanned nothing make relative errors undefined. The replay keeps
the calibration's call sequence, ``freeable`` and ``delta`` (``docs/shrinker-deferral.md``
and :mod:`analysis.models.shrinker`): it cannot see that a kernel which scans more slab
frees objects, changes the cache it counts and so how often and how hard reclaim calls
the shrinker. Beside it, a replay with depletion (``replay(..., depletion=ratio)``): the
objects the replay frees beyond what each traced call freed are taken off the instance's
later ``cache items`` (nothing grows them back), scored the same way as ``depleted_*``.
See ``docs/model-validation.md`` "Shrinker deferral".

The recipe, one for every caller (``mmlab model shrinker --validate``, the
``shrinker-validation`` sweep point, the paper's sweep in :mod:`analysis.study.sweep`):
:func:`divisor_capture` of the calibration and of each target, then :func:`validate`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from analysis.capture.knobs import DIVISOR_KNOB
from analysis.errors import InputError
from analysis.ingest.capture_meta import read_iteration, the_vm_below
from analysis.ingest.captures import traces_below
from analysis.models.run_scoring import (
    Standing,
    change_mde,
    change_p,
    inside,
    prediction_interval,
    standing,
)
from analysis.models.shrinker import Variant, load_invocations, replay

__all__ = [
    "NO_DIVISOR_PATCH",
    "SHRINKER_QUANTITIES",
    "DivisorCapture",
    "ShrinkerScore",
    "capture_divisor",
    "divisor_capture",
    "divisor_patch",
    "observed",
    "score_divisor",
    "standings",
    "validate",
]

# What a capture whose kernel lacks the patch (divisor_patch False) is told.
NO_DIVISOR_PATCH = (
    f"this capture's kernel does not have the divisor patch (no {DIVISOR_KNOB} among its sysctls)"
)
SHRINKER_QUANTITIES = ("scanned_objects", "freed_objects", "backlog_objects", "kswapd_share")


def divisor_patch(capture: Path) -> bool:
    """Whether the kernel of every traced iteration below ``capture`` has the deferral-divisor
    patch (kernels/patches/): its ``mmlab.json`` lists ``vm.shrinker_deferred_divisor`` among
    the vm sysctls read before the capture. A stock kernel has no such sysctl, and an
    iteration with no ``mmlab.json`` (a plain mmtests tree) cannot show one."""
    for trace in traces_below(capture):
        meta = read_iteration(trace.parent)
        if meta is None or DIVISOR_KNOB not in meta.sysctls_before:
            return False
    return True


def capture_divisor(capture: Path) -> str:
    """The deferral divisor every iteration of ``capture`` was checked to run (its
    ``vm.json`` ``knob_check``)."""
    vm = the_vm_below(capture)
    divisors = set(vm.deferral_divisors())
    if len(divisors) != 1:
        raise InputError(vm.path, f"iterations ran different divisors {sorted(divisors)}")
    return divisors.pop()


@dataclass(frozen=True)
class DivisorCapture:
    """One ``mmlab capture --kernel`` capture as the replay sees it: its name, the shrinker
    calls of each of its runs (traces, invocation frames) and the divisor it ran."""

    name: str
    runs: tuple[pl.DataFrame, ...]
    divisor: str


def divisor_capture(capture: Path, name: str | None = None) -> DivisorCapture:
    """The calls of every trace below ``capture`` and its divisor (:func:`capture_divisor`),
    named ``name`` (default: the path as given); an error saying so for a capture whose
    kernel lacks the patch (:func:`divisor_patch`), which has no divisor to score."""
    if not divisor_patch(capture):
        raise InputError(capture, NO_DIVISOR_PATCH)
    runs = tuple(load_invocations(t) for t in traces_below(capture))
    return DivisorCapture(str(capture) if name is None else name, runs, capture_divisor(capture))


def observed(calls: pl.DataFrame) -> dict[str, float]:
    """One run's observed quantities from its shrinker calls (invocation frame)."""
    return {
        "scanned_objects": float(calls["scanned_objects"].sum()),
        "freed_objects": float(calls["freed_objects"].sum()),
        "backlog_objects": float(calls["deferred_in_objects"].mean()),
        "kswapd_share": float((calls["context"] == "kswapd").mean()),
    }


@dataclass(frozen=True)
class ShrinkerScore:
    """One quantity of one validation capture: replayed (mean of the one-run replays) with
    its run-level interval, the observed runs, how many fall inside, the mean absolute
    per-run error of the replay and of no change (the calibration's run mean), and the
    permutation p of the observed change from the calibration runs with the smallest
    relative change those runs detect (``change_mde``). ``depleted_*``: the
    same for the replay with depletion (None for the kswapd share, which it keeps, and
    when the calibration scanned nothing: no freed-per-scanned ratio to deplete by)."""

    capture: str
    quantity: str
    divisor: str
    calibration_divisor: str
    predicted: float
    interval: tuple[float, float] | None
    observed: tuple[float, ...]
    inside: int
    model_error: float
    no_change: float
    no_change_error: float
    change_p: float | None
    depleted: float | None = None
    depleted_interval: tuple[float, float] | None = None
    depleted_inside: int | None = None
    depleted_error: float | None = None
    change_mde: float | None = None


def score_divisor(
    calibration: Sequence[pl.DataFrame],
    calibration_divisor: str,
    targets: Sequence[pl.DataFrame],
    divisor: str,
    capture: str,
    *,
    seed: int = 0,
) -> tuple[ShrinkerScore, ...]:
    """Replay every calibration run's calls under ``divisor`` and score against the runs
    of ``capture`` (``targets``, their invocation frames)."""
    if not calibration or not targets:
        raise InputError(capture, "no shrinker calls to replay or to score against")
    scanned = sum(float(c["scanned_objects"].sum()) for c in calibration)
    freed = sum(float(c["freed_objects"].sum()) for c in calibration)
    ratio = min(freed, scanned) / scanned if scanned else math.nan
    predicted = _replayed(calibration, divisor, ratio, None)
    depleted = _replayed(calibration, divisor, ratio, ratio) if scanned else None
    base = [observed(c) for c in calibration]
    seen = [observed(c) for c in targets]
    out = []
    # Without any object scanned in the calibration its freed-per-scanned ratio is unknown:
    # no freed prediction rather than a made-up one.
    for q in (q for q in SHRINKER_QUANTITIES if scanned or q != "freed_objects"):
        obs = np.array([s[q] for s in seen])
        calib = [b[q] for b in base]
        share = q == "kswapd_share"
        centre, interval = prediction_interval(predicted[q], upper=1.0 if share else math.inf)
        scale = 100.0 if share else 1.0
        extra: dict[str, object] = {}
        if depleted is not None and not share:
            d_centre, d_interval = prediction_interval(depleted[q])
            extra = {
                "depleted": d_centre,
                "depleted_interval": d_interval,
                "depleted_inside": inside(list(obs), d_interval),
                "depleted_error": float(np.mean(np.abs(d_centre - obs))),
            }
        out.append(
            ShrinkerScore(
                capture=capture,
                quantity=q,
                divisor=divisor,
                calibration_divisor=calibration_divisor,
                predicted=centre,
                interval=interval,
                observed=tuple(float(v) for v in obs),
                inside=inside(list(obs), interval),
                model_error=float(np.mean(np.abs(centre - obs)) * scale),
                no_change=float(np.mean(calib)),
                no_change_error=float(np.mean(np.abs(np.mean(calib) - obs)) * scale),
                change_p=change_p(calib, list(obs), seed),
                change_mde=change_mde(calib, list(obs)),
                **extra,
            )
        )
    return tuple(out)


def _replayed(
    calibration: Sequence[pl.DataFrame], divisor: str, ratio: float, depletion: float | None
) -> dict[str, list[float]]:
    """Per calibration run, the four quantities of its replay under ``divisor``."""
    replays = [replay(c, Variant("G3", divisor), depletion=depletion) for c in calibration]
    return {
        "scanned_objects": [float(r.scanned_objects) for r in replays],
        "freed_objects": [r.scanned_objects * ratio for r in replays],
        "backlog_objects": [float(r.calls["nr_objects"].mean()) for r in replays],
        "kswapd_share": [float((c["context"] == "kswapd").mean()) for c in calibration],
    }


def validate(
    calibration: DivisorCapture, targets: Sequence[DivisorCapture], *, seed: int = 0
) -> tuple[ShrinkerScore, ...]:
    """:func:`score_divisor` of ``calibration``'s runs against every target, target by
    target."""
    return tuple(
        s
        for t in targets
        for s in score_divisor(
            calibration.runs, calibration.divisor, t.runs, t.divisor, t.name, seed=seed
        )
    )


def standings(scores: Sequence[ShrinkerScore]) -> tuple[Standing, ...]:
    """Per quantity (:data:`SHRINKER_QUANTITIES`), the replay's :class:`Standing` over the
    validation captures that ran another divisor than the calibration (errors in objects,
    pp for the kswapd share; no linear baseline; none: not validated)."""
    return tuple(
        standing(
            q,
            "pp" if q == "kswapd_share" else "objects",
            [
                (s.model_error, s.no_change_error, None)
                for s in scores
                if s.quantity == q and s.divisor != s.calibration_divisor
            ],
        )
        for q in SHRINKER_QUANTITIES
    )
