"""Text and JSON of the shrinker deferral model: what :mod:`analysis.study.shrinker_model`
computed for ``mmlab model shrinker``.

The text says what a replay cannot tell: an unknown freed-per-scanned ratio, a capture
without kswapd calls (then nothing is known about the kswapd-only rules' backlog drain),
a counter chain the single-counter model does not reproduce.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from analysis.report.json_output import undefined_as_null
from analysis.report.standing import (
    standing_json,
    standing_lines,
    standing_sentence,
    undetected_lines,
)
from analysis.report.table import Column, Table
from analysis.report.text import fit, path_lines
from analysis.report.units import PLAIN, interval, plus_minus, sig
from analysis.stats.describe import mean_sd
from analysis.study.shrinker_model import (
    CHANGE_LEVEL,
    ContextWork,
    ModelRun,
    ShrinkerScore,
    Standing,
    Variant,
)

__all__ = [
    "SHRINKER_LABELS",
    "caveats",
    "format_model_run",
    "format_shrinker_validation",
    "model_run_json",
    "shrinker_validation_json",
]


def _share(agreement) -> str:
    share = agreement.share
    return f"{agreement.matched}/{agreement.total}" + (
        f" = {share:.4f}" if share is not None else ""
    )


def caveats(run: ModelRun) -> list[str]:
    """What this replay cannot conclude, and what would be needed."""
    out = []
    ratio = run.freed_per_scanned
    if ratio.estimate is None:
        out.append(
            "The capture scanned no slab objects, so freed/scanned (efficiency) is "
            "unknown; a capture whose shrinkers scan is needed to estimate it."
        )
    result = run.result
    kswapd_calls = result.context("kswapd").calls
    if kswapd_calls == 0 and result.variant.only_kswapd:
        out.append(
            "The capture has no kswapd shrinker calls: under a kswapd-only rule the "
            "backlog is never worked off here, which says nothing about a system "
            "where kswapd runs."
        )
    if run.capture_chain_agreement.share not in (None, 1.0):
        out.append(
            "One counter per shrinker instance and node does not reproduce every nr "
            "the kernel's calls took (per-memcg counters, which the tracepoints do not "
            "name, are one cause); the replay's counters are an approximation."
        )
    out.append(
        "One capture, one replay: a deterministic what-if, no sampling error; "
        "differences between runs need one replay per captured run."
    )
    return out


_WORK_COLUMNS = (
    Column("context", 7, left=True),
    Column("calls", 8),
    Column("mean", 9),
    Column("p50", 8),
    Column("p99", 8),
    Column("max", 10),
    Column("total", 12),
)


def _work_lines(work: tuple[ContextWork, ...]) -> list[str]:
    """Per reclaim context: calls and objects scanned per call (counts whole, the mean
    to three digits)."""
    rows = tuple(
        (
            w.context,
            str(w.calls),
            *(PLAIN.text(v) for v in (w.mean, w.p50, w.p99, w.max)),
            str(w.total),
        )
        for w in work
    )
    table = Table(_WORK_COLUMNS, rows)
    return ["Objects scanned per call (mmtests nearest-rank percentiles)", *table.text(indent=2)]


def format_model_run(run: ModelRun, standings: Sequence[Standing] = ()) -> str:
    """One capture's check and replay, at most 80 columns, and each replayed quantity's
    out-of-sample ``standing`` (the same sentence for all when none was validated)."""
    result, ratio = run.result, run.freed_per_scanned
    shown = "-" if ratio.estimate is None else interval(ratio.estimate, ratio.low, ratio.high)
    values = run.outputs
    lines = [
        "Shrinker deferral model of",
        *path_lines(str(run.source), "  "),
        f"capturing rule: {run.capturing_generation} (from {run.generation_source})",
        f"replay_agreement: {_share(run.replay_agreement)} (total_scan from each call's own nr)",
        f"chain agreement:  {_share(run.capture_chain_agreement)} (nr from the replayed counter)",
        f"capture: {run.observed_scanned_objects} objects scanned (its rule replayed: "
        f"{run.own_scanned_objects}), {run.observed_freed_objects} freed",
        f"freed/scanned {shown}" + (" (95% CI)" if ratio.estimate is not None else ""),
        "",
        f"Variant: {result.variant.label}",
        *_work_lines(result.work),
        f"scanned {result.scanned_objects} objects, freed {PLAIN.text(result.freed_objects)}, "
        f"efficiency {PLAIN.text(result.efficiency)}",
        f"velocity {PLAIN.text(values['velocity_per_s'])} objects/s; deferred backlog max "
        f"{result.backlog_max_objects}, end {result.backlog_end_objects} objects",
        *(fit(line) for line in _standing_lines(standings)),
        "",
        *(
            textwrap.fill(text, 80, initial_indent="note: ", subsequent_indent="  ")
            for text in caveats(run)
        ),
    ]
    return "\n".join(lines) + "\n"


def _standing_lines(standings: Sequence[Standing]) -> list[str]:
    """One sentence per replayed quantity's standing; one for all when they say the same
    (none validated)."""
    sentences = {standing_sentence(s, "divisor") for s in standings}
    if len(sentences) == 1:
        return [f"standing of every replayed quantity: {sentences.pop()}"]
    labels = {q: label for q, (label, _, _) in SHRINKER_LABELS.items()}
    return standing_lines(standings, labels, "divisor")


def _variant_json(variant: Variant) -> dict:
    divisor = variant.effective_divisor
    return {
        "generation": variant.generation,
        "divisor": getattr(divisor, "__name__", None) or str(divisor),
        "kswapd_only": variant.only_kswapd,
        "literal": variant.literal if variant.generation == "G2" else None,
        "label": variant.label,
    }


def model_run_json(run: ModelRun, standings: Sequence[Standing] = ()) -> dict:
    """JSON-ready dict of :func:`format_model_run`'s content (nulls, never NaN)."""
    ratio = run.freed_per_scanned
    return {
        "source": run.source,
        "capturing_generation": run.capturing_generation,
        "generation_source": run.generation_source,
        "replay_agreement": run.replay_agreement.as_json(),
        "chain_agreement": run.capture_chain_agreement.as_json(),
        "observed": {
            "scanned_objects": run.observed_scanned_objects,
            "freed_objects": run.observed_freed_objects,
            "replayed_scanned_objects": run.own_scanned_objects,
        },
        "freed_per_scanned": {
            "estimate": ratio.estimate,
            "ci95": [ratio.low, ratio.high],
            "scanned_objects": ratio.scanned_objects,
        },
        "variant": _variant_json(run.result.variant),
        "work": [vars(w) for w in run.result.work],
        "outputs": {k: undefined_as_null(v) for k, v in run.outputs.items()},
        "notes": caveats(run),
        "standings": [standing_json(s, "divisor") for s in standings],
    }


_VALIDATION_COLUMNS = (
    Column("quantity", left=True),
    Column("replayed [95% PI]"),
    Column("observed ± sd"),
    Column("in"),
    Column("model"),
    Column("none"),
    Column("p"),
)
# Label, per-run format (observations at their measured resolution) and unit.
SHRINKER_LABELS = {
    "scanned_objects": ("scanned obj", ".0f", "objects"),
    "freed_objects": ("freed obj", ".0f", "objects"),
    "backlog_objects": ("nr_deferred", ".0f", "objects"),
    "kswapd_share": ("kswapd calls", ".3f", "pp"),
}


def format_shrinker_validation(
    scores: Sequence[ShrinkerScore], calibration: str, standings: Sequence[Standing] = ()
) -> str:
    """The replay-vs-kernel table of the shrinker validation's scores
    (:mod:`analysis.models.shrinker_validation`), then the replay's ``standings`` per
    quantity, at most 80 columns."""
    lines = [
        f"shrinker deferral replay of {calibration} against kernels that ran the divisor",
        "  replayed: mean of one replay per calibration run; PI: run-level 95% interval",
        "  for one new run; in: runs inside it; errors: mean |error| over runs (objects;",
        "  pp for the share); none = calibration's run mean; p: permutation over runs,",
        "  calibration vs this capture; nr_deferred: mean taken per call;",
        "  depleted: the replay with its extra freeing taken off later cache items",
    ]
    for capture in dict.fromkeys(s.capture for s in scores):
        rows = [s for s in scores if s.capture == capture]
        first = rows[0]
        kind = "A/A" if first.divisor == first.calibration_divisor else "replayed"
        lines += [
            "",
            f"{capture}:",
            f"  divisor {first.divisor} vs {first.calibration_divisor} ({kind}), "
            f"{len(first.observed)} runs",
        ]
        cells = []
        for s in rows:
            low, high = s.interval if s.interval is not None else (None, None)
            mean, sd = mean_sd(list(s.observed))
            cells.append(
                (
                    SHRINKER_LABELS[s.quantity][0],
                    interval(s.predicted, low, high),
                    plus_minus(mean, sd),
                    f"{s.inside}/{len(s.observed)}",
                    PLAIN.text(s.model_error),
                    PLAIN.text(s.no_change_error),
                    sig(s.change_p),
                )
            )
        lines += Table(_VALIDATION_COLUMNS, cells).text(indent=2)
        lines += undetected_lines(rows, SHRINKER_LABELS, CHANGE_LEVEL)
        for s in rows:
            if s.depleted is None:
                continue
            low, high = s.depleted_interval or (None, None)
            lines.append(
                f"  {SHRINKER_LABELS[s.quantity][0]} depleted {interval(s.depleted, low, high)}"
                f" in {s.depleted_inside}/{len(s.observed)} error {PLAIN.text(s.depleted_error)}"
            )
        lines.append("  per run:")
        for s in rows:
            label, fmt, _ = SHRINKER_LABELS[s.quantity]
            lines.append(f"    {label:<12} " + " ".join(format(v, fmt) for v in s.observed))
    if standings:
        lines += ["", "the replay's out-of-sample standing per quantity:"]
        lines += _standing_lines(standings)
    return fit("\n".join(lines) + "\n")


def shrinker_validation_json(
    scores: Sequence[ShrinkerScore], calibration: str, standings: Sequence[Standing] = ()
) -> dict:
    """:func:`format_shrinker_validation`'s table for
    :func:`~analysis.report.json_output.dumps` (which writes the tuples as lists)."""
    return {
        "calibration": calibration,
        "level": 0.95,
        "scores": [
            {
                "capture": s.capture,
                "quantity": s.quantity,
                "unit": SHRINKER_LABELS[s.quantity][2],
                "divisor": s.divisor,
                "calibration_divisor": s.calibration_divisor,
                "replayed": s.predicted,
                "prediction_interval": s.interval,
                "observed_runs": s.observed,
                "runs_inside_interval": s.inside,
                "model_error": s.model_error,
                "no_change": s.no_change,
                "no_change_error": s.no_change_error,
                "change_permutation_p": s.change_p,
                "change_detectable": s.change_mde,
                "depleted": s.depleted,
                "depleted_interval": s.depleted_interval,
                "depleted_runs_inside_interval": s.depleted_inside,
                "depleted_error": s.depleted_error,
            }
            for s in scores
        ],
        "standings": [standing_json(s, "divisor") for s in standings],
    }
