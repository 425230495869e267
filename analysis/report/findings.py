"""The one-paragraph finding each notebook opens with, rendered from the results it shows.

Every sentence is built from the numbers (the Study's tables, the models' validation
scores, the per-run p values), never typed by hand, so that a notebook cannot say what
its own evidence below contradicts; a claim that could flip (beats "no change", moved
at p < 0.05) is chosen by the numbers too. A notebook shows the paragraph with
``IPython.display.Markdown``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import polars as pl

from analysis.metrics.compare import Comparison
from analysis.report.shrinker_model import SHRINKER_LABELS
from analysis.report.throttle_model import VALIDATION_LABELS
from analysis.report.units import common_scale, sig
from analysis.study.sweep import QuantityScore, ShrinkerScore

__all__ = [
    "ALPHA",
    "Score",
    "monitor_finding",
    "ops_finding",
    "same_setting",
    "seed_finding",
    "timeout_prediction_finding",
    "trace_finding",
    "trace_overview",
    "validation_finding",
]

# The level at which a per-run permutation p is called a change (docs/statistics.md).
ALPHA = 0.05
_LABELS = {q: v[0] for q, v in VALIDATION_LABELS.items()} | {
    q: v[0] for q, v in SHRINKER_LABELS.items()
}


def _span(values: Iterable[float], fmt: str) -> str:
    """``a`` or ``a–b`` (smallest to largest) of ``values`` in ``fmt``."""
    ordered = sorted(values)
    low, high = format(ordered[0], fmt), format(ordered[-1], fmt)
    return low if low == high else f"{low}–{high}"


def _names(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def ops_finding(cmp: Comparison, rows: Sequence[str]) -> str:
    """Each Ops row of ``rows`` (labels of :data:`~analysis.metrics.compare.OPS`) over the
    runs: the range of the run means, and how far each run is from the first."""
    parts = []
    for label in rows:
        found = [r for r in cmp.rows if r.label == label and r.mean is not None]
        if not found:
            continue
        changes = [abs(r.change_pct) for r in found[1:] if r.change_pct is not None]
        within = f", every run within {max(changes):.0f} % of the first" if changes else ""
        scale = common_scale([r.mean for r in found], found[0].unit)
        low, high = (scale.text(f([r.mean for r in found])) for f in (min, max))
        values = low if low == high else f"{low}–{high}"
        parts.append(f"{label.removesuffix(' %')} {values} {found[0].unit}{within}")
    return f"Over {len(cmp.runs)} runs (mean over each run's iterations): " + "; ".join(parts) + "."


def trace_overview(throttle: pl.DataFrame, stalls: pl.DataFrame) -> pl.DataFrame:
    """One row per run and context: reclaim stalls per iteration, seconds stalled, median
    and p99 stall (run means of the iterations'), the throttles per iteration and their
    shares that hit the timeout and did not sleep (``Study.stalls`` and ``Study.throttle``,
    WRITEBACK throttling joined to the context it stalled)."""
    stall = stalls.select(
        "run",
        "context",
        "iterations",
        pl.col("stalls_mean").round(0).cast(pl.Int64).alias("stalls/iter"),
        pl.col("stalled_s_mean").round(1).alias("stalled s/iter"),
        pl.col("median_ms_mean").round(2).alias("median ms"),
        pl.col("p99_ms_mean").round(1).alias("p99 ms"),
    )
    if throttle.is_empty():
        return stall
    throttled = throttle.filter(pl.col("event") == "mm_vmscan_throttled").select(
        "run",
        "context",
        pl.col("reason").str.replace("VMSCAN_THROTTLE_", "").alias("throttle"),
        pl.col("events_mean").round(0).cast(pl.Int64).alias("throttles/iter"),
        (100 * pl.col("timeout_share_mean")).round(1).alias("timeout %"),
        (100 * pl.col("zero_share_mean")).round(1).alias("no sleep %"),
    )
    return stall.join(throttled, on=["run", "context"], how="left", maintain_order="left")


def trace_finding(overview: pl.DataFrame) -> str:
    """The stalls and throttling of :func:`trace_overview` in two sentences."""
    if overview.is_empty():
        return "No reclaim stall was traced in these captures."
    contexts = _names(list(dict.fromkeys(overview["context"])))
    text = (
        f"Over {overview['run'].n_unique()} runs every traced reclaim stall was {contexts} "
        f"reclaim: {_span(overview['stalled s/iter'], '.1f')} s stalled per iteration (run "
        f"means), median stall {_span(overview['median ms'], '.2f')} ms, p99 "
        f"{_span(overview['p99 ms'], '.0f')} ms."
    )
    if "throttle" not in overview.columns or overview["throttle"].null_count() == overview.height:
        return text + " No task was throttled (`mm_vmscan_throttled`)."
    throttled = overview.drop_nulls("throttle")
    return text + (
        f" {_names(list(dict.fromkeys(throttled['throttle'])))} throttling: "
        f"{_span(throttled['throttles/iter'], ',.0f')} sleeps per iteration, of which "
        f"{_span(throttled['timeout %'], '.1f')} % reached the timeout and "
        f"{_span(throttled['no sleep %'], '.0f')} % did not sleep at all."
    )


Score = QuantityScore | ShrinkerScore


def same_setting(score: Score) -> bool:
    """Whether the capture ran the calibration's own setting (the A/A check): the model's
    prediction there is no change, so it has nothing to beat."""
    if isinstance(score, ShrinkerScore):
        return score.divisor == score.calibration_divisor
    return score.tau_us == score.calibration_tau_us


def _name(score: Score) -> str:
    return Path(score.capture).name


def validation_finding(scores: Sequence[Score], model: str, calibration: str) -> str:
    """Where ``model`` (calibrated on ``calibration``) beat the "no change" baseline in every
    capture that ran another setting, where it did not, and which quantities the knob moved
    (permutation p < :data:`ALPHA`), capture by capture."""
    if not scores:
        return f"No capture to score the {model} against."
    scored = [s for s in scores if not same_setting(s)]
    quantities = list(dict.fromkeys(s.quantity for s in scored))
    beats = [q for q in quantities if all(s.model_error < s.no_change_error
                                          for s in scored if s.quantity == q)]  # fmt: skip
    loses = [_LABELS.get(q, q) for q in quantities if q not in beats]
    checks = list(dict.fromkeys(_name(s) for s in scores if same_setting(s)))
    targets = _names(list(dict.fromkeys(map(_name, scored))))
    text = f"Calibrated on {calibration} and scored on {targets}"
    text += f" (A/A check: {_names(checks)})" if checks else ""
    text += f", the {model} "
    text += (
        f"beats no change for {_names([_LABELS.get(q, q) for q in beats])} in every capture."
        if beats
        else "does not beat no change for any quantity in every capture."
    )
    if beats and loses:
        text += (
            f" For {_names(loses)} it does not (its mean per-run error is no smaller than no "
            "change's in some capture): its what-ifs of those are not supported by the data."
        )
    moved = {
        capture: [
            f"{_LABELS.get(s.quantity, s.quantity)} (p {sig(s.change_p, 2)})"
            for s in scores
            if _name(s) == capture and s.change_p is not None and s.change_p < ALPHA
        ]
        for capture in dict.fromkeys(map(_name, scores))
    }
    changes = [f"in {c} {_names(m)}" for c, m in moved.items() if m]
    return text + (
        f" Changed from {calibration} (permutation over runs, p < {ALPHA}): {'; '.join(changes)}."
        if changes
        else f" No observed quantity changed at p < {ALPHA} (permutation over runs)."
    )


def seed_finding(checks: pl.DataFrame) -> str:
    """The verdicts of :func:`analysis.seeds.checks.all_checks` (one row per figure) in
    two sentences: how many printed figures agree, which differ (by seed and row; the
    table gives each one's reason), how many cannot be recomputed and how many mmlab adds."""
    count = checks.group_by("verdict").len()
    n = dict(zip(count["verdict"], count["len"], strict=True))
    printed = sum(n.get(v, 0) for v in ("agrees", "differs", "cannot recompute"))
    differs = checks.filter(pl.col("verdict") == "differs")
    where = [
        f"seed {seed}: {_names(list(dict.fromkeys(rows['row'])))}"
        for (seed,), rows in differs.group_by("seed", maintain_order=True)
    ]
    text = (
        f"Of the {printed} figures the seeds print and mmlab checks, {n.get('agrees', 0)} "
        f"agree and {n.get('differs', 0)} differ, each for a reason stated below"
    )
    text += f" ({'; '.join(where)})." if where else "."
    return text + (
        f" {n.get('cannot recompute', 0)} cannot be recomputed (the mail omits an input), and "
        f"mmlab adds {n.get('mmlab only', 0)} figures of its own."
    )


def monitor_finding(vmstat: pl.DataFrame) -> str:
    """Each run's vmstat(8) monitor (``runs_monitor(runs, "vmstat")``: KiB and percent
    columns) in one clause: free memory at the first sample and at its lowest, the peak
    swap-out and the peak share of CPU waiting on I/O."""
    if vmstat.is_empty():
        return "The tree holds no vmstat(8) monitor."
    gib = 2.0**20  # vmstat(8) prints KiB
    parts = [
        f"{run}: {rows.height} samples in {rows['iteration'].n_unique()} iteration(s), free "
        f"memory {rows['free'][0] / gib:.2f} GiB at the first and {rows['free'].min() / gib:.2f} "
        f"GiB at its lowest, swap-out peak {rows['so'].max():,} KiB/s, I/O wait peak "
        f"{rows['wa'].max()} %"
        for (run,), rows in vmstat.sort("run", "iteration", "t_s").group_by(
            "run", maintain_order=True
        )
    ]
    return "vmstat(8), per run: " + "; ".join(parts) + "."


def timeout_prediction_finding(rows: pl.DataFrame, own: Mapping[str, str]) -> str:
    """How well each wait (``rows``: ``capture``, ``wait`` and one ``p_<τ>`` column per
    timeout, with a ``capture == "observed"`` row of the kernel's shares) calibrated on one
    capture predicts P(timeout) at the timeouts that capture did not run (``own``: its
    column): mean and largest absolute error in points, and how often each wait was the
    closer one."""
    observed = rows.filter(pl.col("capture") == "observed").row(0, named=True)
    columns = [c for c in rows.columns if c.startswith("p_")]
    errors: dict[str, list[float]] = {}
    for row in rows.filter(pl.col("capture") != "observed").iter_rows(named=True):
        errors.setdefault(row["wait"], []).extend(
            100 * abs(row[c] - observed[c]) for c in columns if c != own[row["capture"]]
        )
    waits = list(errors)
    closer = {w: 0 for w in waits}
    for pair in zip(*(errors[w] for w in waits), strict=True):
        closer[waits[pair.index(min(pair))]] += 1
    n = len(errors[waits[0]])
    stated = [
        f"{w} errs by {sum(e) / n:.1f} points on average (largest {max(e):.1f}; the closer "
        f"in {closer[w]})"
        for w, e in errors.items()
    ]
    shares = ", ".join(
        f"{c.removeprefix('p_').replace('ms', ' ms')} {100 * observed[c]:.1f} %" for c in columns
    )
    return (
        f"Calibrated on one capture and asked for P(timeout) at a timeout it did not run "
        f"({n} predictions), {_names(stated)}. The kernels observed {shares} (run means)."
    )
