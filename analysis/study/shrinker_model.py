"""What ``mmlab model shrinker TRACE`` computes: each trace's check and replay under one
deferral rule (:func:`analysis.models.shrinker.model_trace`). Rendered by
:mod:`analysis.report.shrinker_model`, which takes the types it prints from here (with
``--validate``, the scores of :mod:`analysis.models.shrinker_validation`'s recipe and the
replay's out-of-sample standing per quantity from them, :func:`standings`: none without
``--validate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from analysis.ingest.captures import traces_below
from analysis.models.run_scoring import CHANGE_LEVEL, Standing
from analysis.models.shrinker import ContextWork, ModelRun, Variant, load_invocations, model_trace
from analysis.models.shrinker_validation import ShrinkerScore, divisor_capture, standings, validate

__all__ = [
    "CHANGE_LEVEL",
    "ContextWork",
    "ModelRun",
    "ShrinkerScore",
    "Standing",
    "Variant",
    "model_runs",
    "shrinker_validation",
    "standings",
]


def model_runs(paths: Sequence[Path], variant: Variant) -> tuple[ModelRun, ...]:
    """The check and replay under ``variant`` of every trace: each path a trace file or a
    directory whose ``ftrace-*`` traces are taken in order."""
    traces = [t for path in paths for t in (traces_below(path) if path.is_dir() else [path])]
    return tuple(model_trace(load_invocations(t), variant, trace=t) for t in traces)


def shrinker_validation(
    capture: Path, others: Sequence[Path]
) -> tuple[tuple[ShrinkerScore, ...], tuple[str, ...]]:
    """The replay calibrated on ``capture``'s divisor scored on each of ``others``, and
    each capture's note on iterations sharing a boot."""
    from analysis.ingest.boots import shared_boot_notes

    scores = validate(divisor_capture(capture), [divisor_capture(o) for o in others])
    notes = tuple(n for path in (capture, *others) for n in shared_boot_notes(path))
    return tuple(scores), notes
