"""Text, JSON and Altair views of the shrinker deferral model (:mod:`analysis.models.shrinker`).

The text says what a replay cannot tell: an unknown freed-per-scanned ratio, a capture
without kswapd calls (then nothing is known about the kswapd-only rules' backlog drain),
a counter chain the single-counter model does not reproduce.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import altair as alt
import polars as pl

from analysis.models.shrinker import ContextWork, ModelRun, Variant, outputs
from analysis.models.shrinker_validation import ShrinkerScore
from analysis.stats.describe import mean_sd

__all__ = [
    "backlog_chart",
    "caveats",
    "format_model_run",
    "format_shrinker_validation",
    "model_run_json",
    "shrinker_validation_json",
    "tradeoff_chart",
]


def _num(value: float | int | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


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


def _work_lines(work: tuple[ContextWork, ...]) -> list[str]:
    header = f"  {'context':<8}{'calls':>9}{'mean':>10}{'p50':>9}{'p99':>9}{'max':>11}{'total':>13}"
    lines = ["Objects scanned per call (mmtests nearest-rank percentiles)", header]
    for w in work:
        lines.append(
            f"  {w.context:<8}{w.calls:>9}{_num(w.mean):>10}{_num(w.p50, 0):>9}"
            f"{_num(w.p99, 0):>9}{_num(w.max):>11}{w.total:>13}"
        )
    return lines


def format_model_run(run: ModelRun) -> str:
    """One capture's check and replay, at most 80 columns."""
    result, ratio = run.result, run.freed_per_scanned
    ci = (
        f" (95% CI {_num(ratio.low, 3)}-{_num(ratio.high, 3)})"
        if ratio.estimate is not None
        else ""
    )
    values = outputs(result)
    lines = [
        "Shrinker deferral model of",
        f"  {run.source}",
        f"capturing rule: {run.capturing_generation} (from {run.generation_source})",
        f"replay_agreement: {_share(run.replay_agreement)} (total_scan from each call's own nr)",
        f"chain agreement:  {_share(run.capture_chain_agreement)} (nr from the replayed counter)",
        f"capture: {run.observed_scanned_objects} objects scanned (its rule replayed: "
        f"{run.own_scanned_objects}), {run.observed_freed_objects} freed",
        f"freed/scanned {_num(ratio.estimate, 3)}{ci}",
        "",
        f"Variant: {result.variant.label}",
        *_work_lines(result.work),
        f"scanned {result.scanned_objects} objects, freed {_num(result.freed_objects)}, "
        f"efficiency {_num(result.efficiency, 3)}",
        f"velocity {_num(values['velocity_per_s'], 2)} objects/s; deferred backlog max "
        f"{result.backlog_max_objects}, end {result.backlog_end_objects} objects",
        "",
        *(
            textwrap.fill(text, 80, initial_indent="note: ", subsequent_indent="  ")
            for text in caveats(run)
        ),
    ]
    return "\n".join(lines) + "\n"


def _variant_json(variant: Variant) -> dict:
    divisor = variant.effective_divisor
    return {
        "generation": variant.generation,
        "divisor": getattr(divisor, "__name__", None) or str(divisor),
        "kswapd_only": variant.only_kswapd,
        "literal": variant.literal if variant.generation == "G2" else None,
        "label": variant.label,
    }


def model_run_json(run: ModelRun) -> dict:
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
        "outputs": {k: None if math.isnan(v) else v for k, v in outputs(run.result).items()},
        "notes": caveats(run),
    }


def tradeoff_chart(sweep: pl.DataFrame, title: str) -> alt.LayerChart:
    """Divisor sweep (:func:`analysis.models.shrinker.divisor_sweep` rows, optionally with a
    ``trace`` column): worst work landed on one direct reclaimer against the deferred
    backlog left behind; point size = objects scanned (cache trimmed)."""
    data = sweep.with_columns(
        trace=pl.col("trace") if "trace" in sweep.columns else pl.lit("capture")
    )
    base = alt.Chart(data).encode(
        x=alt.X("backlog_max_objects:Q", title="deferred backlog, max (objects)"),
        y=alt.Y("direct_max_scanned:Q", title="max objects scanned by one direct call"),
    )
    points = base.mark_circle(opacity=0.7).encode(
        color=alt.Color("trace:N", title="capture"),
        size=alt.Size("scanned_objects:Q", title="objects scanned"),
        tooltip=[
            "trace",
            "divisor",
            "direct_p99_scanned",
            "scanned_objects",
            "backlog_end_objects",
        ],
    )
    labels = base.mark_text(align="left", dx=6, fontSize=9).encode(text="divisor:N")
    return (points + labels).properties(width=420, height=260, title=title)


def backlog_chart(backlogs: dict[str, pl.DataFrame], title: str, bins: int = 400) -> alt.Chart:
    """Deferred backlog (``Replay.backlog``) over time, one step line per variant label:
    the largest backlog in each of ``bins`` equal time bins (a capture has ~10^5 events)."""
    frames = []
    for label, backlog in backlogs.items():
        origin, end = backlog["ts_ns"].min(), backlog["ts_ns"].max()
        width_ns = max((end - origin) // bins, 1)
        frames.append(
            backlog.group_by(((pl.col("ts_ns") - origin) // width_ns).alias("bin"))
            .agg(pl.col("backlog_objects").max())
            .select(
                pl.lit(label).alias("variant"),
                (pl.col("bin") * width_ns / 1e9).alias("time_s"),
                "backlog_objects",
            )
            .sort("time_s")
        )
    return (
        alt.Chart(pl.concat(frames))
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("time_s:Q", title="time since the first shrinker call (s)"),
            y=alt.Y("backlog_objects:Q", title="deferred objects, max per bin"),
            color=alt.Color("variant:N", title="rule"),
        )
        .properties(width=520, height=200, title=title)
    )


SHRINKER_LABELS = {
    "scanned_objects": ("scanned obj", ".0f", "objects"),
    "freed_objects": ("freed obj", ".0f", "objects"),
    "backlog_objects": ("nr_deferred", ".0f", "objects"),
    "kswapd_share": ("kswapd calls", ".3f", "pp"),
}


def format_shrinker_validation(scores: Sequence[ShrinkerScore], calibration: str) -> str:
    """The replay-vs-kernel table of
    :func:`analysis.models.shrinker_validation.score_divisor`, at most 80 columns."""
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
            f"  {'quantity':<12} {'replayed [95% PI]':<24} {'observed±sd':<14} {'in':<3}"
            f" {'model':>7} {'none':>7} {'p':>5}",
        ]
        for s in rows:
            label, fmt, _ = SHRINKER_LABELS[s.quantity]
            pi = format(s.predicted, fmt) + (
                ""
                if s.interval is None
                else f" [{format(s.interval[0], fmt)}, {format(s.interval[1], fmt)}]"
            )
            mean, sd = mean_sd(list(s.observed))
            spread = format(mean, fmt) + ("" if sd is None else f"±{format(sd, fmt)}")
            lines.append(
                f"  {label:<12} {pi:<24} {spread:<14} {s.inside}/{len(s.observed):<1} "
                f"{s.model_error:>7.0f} {s.no_change_error:>7.0f} {_num(s.change_p, 3):>5}"
            )
        for s in rows:
            if s.depleted is None:
                continue
            label, fmt, _ = SHRINKER_LABELS[s.quantity]
            pi = format(s.depleted, fmt) + (
                ""
                if s.depleted_interval is None
                else f" [{format(s.depleted_interval[0], fmt)}, "
                f"{format(s.depleted_interval[1], fmt)}]"
            )
            lines.append(
                f"  {label:<12} depleted {pi:<24} in {s.depleted_inside}/{len(s.observed)}"
                f" error {s.depleted_error:.0f}"
            )
        lines.append("  per run:")
        for s in rows:
            label, fmt, _ = SHRINKER_LABELS[s.quantity]
            lines.append(f"    {label:<12} " + " ".join(format(v, fmt) for v in s.observed))
    return "\n".join(lines) + "\n"


def shrinker_validation_json(scores: Sequence[ShrinkerScore], calibration: str) -> dict:
    """:func:`format_shrinker_validation`'s table as JSON-ready data."""
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
                "prediction_interval": None if s.interval is None else list(s.interval),
                "observed_runs": list(s.observed),
                "runs_inside_interval": s.inside,
                "model_error": s.model_error,
                "no_change": s.no_change,
                "no_change_error": s.no_change_error,
                "change_permutation_p": s.change_p,
                "depleted": s.depleted,
                "depleted_interval": None
                if s.depleted_interval is None
                else list(s.depleted_interval),
                "depleted_runs_inside_interval": s.depleted_inside,
                "depleted_error": s.depleted_error,
            }
            for s in scores
        ],
    }
