"""The paper's results on the patched-kernel sweep as LaTeX: the tables, the figure and the
macros of a :class:`~analysis.study.sweep.KnobSweep` (scored once by
:func:`analysis.study.sweep.knob_sweep`; nothing is computed or read here).

Writes ``tables/sweep-throttle.tex``, ``tables/sweep-beyond.tex``,
``tables/sweep-shrinker.tex``, ``tables/sweep-latency.tex`` and
``figures/sweep-timeout.pdf``; returns the macros the checked-in prose
(``papers/reclaim-throttling/sections/*.tex``) quotes, prefix ``Sw``.
"""

from __future__ import annotations

import math
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl

from analysis.report.paper.figures import save_pdf
from analysis.report.paper.latex import escape, fixed, number, table_tex
from analysis.report.throttle_fits import MS
from analysis.report.units import (
    MISSING,
    PLAIN,
    Scale,
    interval_texts,
    mean_sd_texts,
    sig,
    up_down,
)
from analysis.stats.blocked import BlockedEffects
from analysis.stats.significance import CI_LEVEL, POWER, RowComparison
from analysis.study.sweep import (
    LEVEL,
    RESAMPLES,
    EmulationCost,
    KnobSweep,
    QuantityScore,
    ShrinkerScore,
    SweepCapture,
)

__all__ = [
    "CHANGE_DIGITS",
    "beyond_table",
    "change_cells",
    "latency_table",
    "shrinker_table",
    "sweep_figure",
    "sweep_values",
    "throttle_table",
    "write_sweep",
]

# Decimals of a printed latency change and its CI bounds (%): with five runs a side the
# intervals span tens of per cent, so digits below whole per cent would only be noise.
CHANGE_DIGITS = 0
_QUANTITY = {
    "p_timeout": ("P(timeout)", "pp"),
    "mean_stall_us": ("stall", "\\%"),
    "velocity_pps": ("velocity", "\\%"),
    "efficiency": ("efficiency", "pp"),
    "scanned_objects": ("scanned objects", "objects"),
    "freed_objects": ("freed objects", "objects"),
    "backlog_objects": ("backlog per call", "objects"),
    "kswapd_share": ("kswapd share", "pp"),
}


def _scale(quantity: str) -> Scale:
    """The table's unit of ``quantity``: ms for the stall (scored in µs), else as scored."""
    return MS if quantity == "mean_stall_us" else PLAIN


def _show(quantity: str, value: float | None) -> str:
    """A value alone (a replay, Kaplan–Meier's prediction) to three significant digits in
    the table's unit, as the report prints a value without an uncertainty."""
    return number(_scale(quantity).text(value))


def _predicted(quantity: str, value: float, interval: tuple[float, float] | None) -> str:
    """A prediction rounded where its interval is (as :func:`_interval` rounds the ends)."""
    if interval is None:
        return _show(quantity, value)
    return number(interval_texts(value, *interval, _scale(quantity))[0])


def _error(quantity: str, value: float) -> str:
    """A mean error at the resolution the text quotes: whole % (relative), tenths of a
    percentage point, whole objects."""
    if _QUANTITY[quantity][1] == "\\%":
        return fixed(100 * value, 0)
    return fixed(value, 1 if _QUANTITY[quantity][1] == "pp" else 0)


def _interval(quantity: str, value: float | None, interval: tuple[float, float] | None) -> str:
    """``[low, high]`` of ``value``'s interval, rounded as the report rounds a CI
    (:func:`~analysis.report.units.interval_texts`)."""
    if interval is None or value is None or not math.isfinite(value):
        return "--"
    _, low, high = interval_texts(value, *interval, _scale(quantity))
    return f"[{number(low)}, {number(high)}]"


def _bounds(quantity: str, bounds: tuple[float, float] | None) -> str:
    """The identification bounds ``[low, high]``: what the data allow, not an interval
    around the prediction, so each end is a value of its own (:func:`_show`), not rounded
    at the prediction's CI (which printed [0.00000, 0.60190])."""
    if bounds is None:
        return "--"
    return f"[{_show(quantity, bounds[0])}, {_show(quantity, bounds[1])}]"


def _observed(quantity: str, values: tuple[float, ...]) -> str:
    """Mean ± sd over runs, rounded at the sd as the report's ``plus_minus``."""
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else None
    mean, spread = mean_sd_texts(float(np.mean(values)), sd, _scale(quantity))
    return number(mean) + ("" if spread == MISSING else f" $\\pm$ {number(spread)}")


def _p(value: float | None) -> str:
    """A p or q value as the report prints it (:func:`~analysis.report.units.sig`)."""
    return number(sig(value))


def _detectable(value: float | None) -> str:
    """The smallest relative change the runs detect, up and down (``--`` without one)."""
    return "--" if value is None else escape(up_down(value))


def _tau(sweep: KnobSweep, capture: str) -> str:
    return f"{sweep.tau_us(capture) / 1000:g}"


def throttle_table(sweep: KnobSweep) -> str:
    """Per timeout capture and quantity: the model's prediction with its run-level 95 %
    prediction interval, the observed runs, each predictor's mean error (``wb``: velocity
    and efficiency given each run's writeback rate), the knob's permutation p and its
    Benjamini–Hochberg q (:attr:`~analysis.study.sweep.KnobSweep.q`)."""
    q = sweep.q
    rows = []
    for s in sweep.throttle:
        name, unit = _QUANTITY[s.quantity]
        mark = "$^{*}$" if s.extrapolated else ""
        rows.append(
            [
                f"{escape(s.capture)} ({_tau(sweep, s.capture)}{mark})",
                f"{name} ({unit})",
                _predicted(s.quantity, s.predicted, s.interval),
                _interval(s.quantity, s.predicted, s.interval),
                _observed(s.quantity, s.observed),
                f"{s.inside}/{len(s.observed)}",
                _error(s.quantity, s.model_error),
                _error(s.quantity, s.no_change_error),
                _error(s.quantity, s.linear_error),
                "--"
                if s.given_writeback_error is None
                else _error(s.quantity, s.given_writeback_error),
                _p(s.change_p),
                _p(q.get((s.capture, s.quantity))),
            ]
        )
    cal = escape(sweep.calibration.name)
    return _compact(
        table_tex(
            [
                "capture ($\\tau$ ms)",
                "quantity (error)",
                "model",
                "95\\% PI",
                "observed",
                "in",
                "model",
                "none",
                "linear",
                "wb",
                "$p$",
                "$q$",
            ],
            rows,
            "llrrrrrrrrrr",
            f"The timeout model calibrated on {cal} (default timeout) against the kernels "
            "that ran each timeout $\\tau$: the mean prediction of the models calibrated on "
            "one run each and its 95\\,\\% prediction interval for one run; observed mean "
            "$\\pm$ sd over the capture's runs (stall in ms); in: runs inside the interval; "
            "mean error over runs of the model, of no change (the calibration's run mean) "
            "and of linear in $\\tau$ (every sleep scaled by $\\tau/\\tau_c$, $\\tau_c$ the "
            "calibration's timeout), and of velocity or efficiency given each run's "
            "writeback rate (wb: a line over the calibration's runs), in "
            "percentage points (pp) of a share or \\% of the observed value; $p$: "
            f"permutation test over runs, {cal} against the capture (did the knob change "
            "the quantity?), $q$: its Benjamini--Hochberg adjustment over every $p$ of "
            "Tables~\\ref{tab:sweep-throttle} and~\\ref{tab:sweep-shrinker}. $^{*}$: "
            "beyond the longest wait the calibration observed, where the one-run models "
            "use the woken fit (Table~\\ref{tab:sweep-beyond}).",
            "tab:sweep-throttle",
        ),
        wide=True,
    )


def _beyond_scores(sweep: KnobSweep) -> list[tuple[SweepCapture, QuantityScore]]:
    """(calibration, score) of every sleep quantity predicted beyond the calibration's
    timeout: the default calibration's and the shortest timeout's."""
    return [
        (cal, s)
        for cal, scores in (
            (sweep.calibration, sweep.throttle),
            (sweep.beyond_calibration, sweep.beyond),
        )
        for s in scores
        if s.kaplan_meier is not None and s.quantity in ("p_timeout", "mean_stall_us")
    ]


def beyond_table(sweep: KnobSweep) -> str:
    """Beyond the calibration's timeout: the woken fit with its run-level interval and the
    identification bounds, Kaplan–Meier's never-woken prediction, and the observed runs."""
    rows = []
    for cal, s in _beyond_scores(sweep):
        q = s.quantity
        rows.append(
            [
                f"{escape(cal.name)} $\\to$ {escape(s.capture)} "
                f"({s.calibration_tau_us / 1000:g} $\\to$ {s.tau_us / 1000:g})",
                f"{_QUANTITY[q][0]} ({_QUANTITY[q][1]})",
                _predicted(q, s.predicted, s.interval),
                _interval(q, s.predicted, s.interval),
                _bounds(q, s.bounds),
                _show(q, s.kaplan_meier),
                _observed(q, s.observed),
                f"{s.inside}/{len(s.observed)}",
                _error(q, s.model_error),
                _error(q, s.kaplan_meier_error),
                _error(q, s.no_change_error),
            ]
        )
    return _compact(
        table_tex(
            [
                "calibration $\\to$ capture ($\\tau$ ms)",
                "quantity (error)",
                "woken",
                "95\\% PI",
                "bounds",
                "K--M",
                "observed",
                "in",
                "woken",
                "K--M",
                "none",
            ],
            rows,
            "llrrrrrrrrr",
            "Beyond the calibration's timeout: each calibration run's censored fit with every "
            "sleeper woken (woken: mean of the one-run predictions, with their 95\\,\\% "
            "prediction interval for one run), the identification bounds (what the "
            "calibration's sleeps allow whatever happens after its timeout), Kaplan--Meier "
            "(K--M: a sleeper still asleep at the calibration's timeout never wakes, the "
            "upper bound), the observed runs (mean $\\pm$ sd; stall in ms) and how many fall "
            "in the interval; mean error over runs of the woken fit, of Kaplan--Meier and "
            "of no change, in pp or \\% as in Table~\\ref{tab:sweep-throttle}.",
            "tab:sweep-beyond",
        ),
        wide=True,
    )


def shrinker_table(sweep: KnobSweep) -> str:
    """Per divisor capture and quantity: replayed (plain and depleted), observed, errors,
    the knob's permutation p and its q."""
    q = sweep.q
    rows = [
        [
            f"{escape(s.capture)} ({escape(s.divisor)})",
            _QUANTITY[s.quantity][0],
            _predicted(s.quantity, s.predicted, s.interval),
            _interval(s.quantity, s.predicted, s.interval),
            _observed(s.quantity, s.observed),
            f"{s.inside}/{len(s.observed)}",
            "--" if s.depleted is None else _show(s.quantity, s.depleted),
            _error(s.quantity, s.model_error),
            "--" if s.depleted_error is None else _error(s.quantity, s.depleted_error),
            _error(s.quantity, s.no_change_error),
            _p(s.change_p),
            _p(q.get((s.capture, s.quantity))),
            _detectable(s.change_mde),
        ]
        for s in sweep.shrinker
    ]
    cal = escape(sweep.calibration.name)
    return _compact(
        table_tex(
            [
                "capture (divisor)",
                "quantity",
                "replay",
                "95\\% PI",
                "observed",
                "in",
                "depleted",
                "replay",
                "depleted",
                "none",
                "$p$",
                "$q$",
                "MDE",
            ],
            rows,
            "llrrrrrrrrrrr",
            f"The shrinker replay: each run of {cal} (divisor $2^{{\\text{{priority}}}}$) "
            "replayed under the divisor each capture ran, against that kernel's runs: "
            "mean replay and its 95\\,\\% prediction interval for one run; observed mean "
            "$\\pm$ sd over runs (objects per run, backlog as mean \\texttt{nr\\_deferred} "
            "taken per call); depleted: the replay whose extra freeing comes off the "
            "instance's later cache sizes; mean absolute error over runs of the replay, of "
            "the depleted replay and of no change (objects; kswapd share in pp); $p$: "
            f"permutation test over runs, {cal} against the capture; $q$: as in "
            "Table~\\ref{tab:sweep-throttle}; MDE: the smallest change these runs detect "
            "(80\\,\\% power, Welch $t$ on the logs of the run values), up and down.",
            "tab:sweep-shrinker",
        ),
        wide=True,
    )


def change_cells(r: RowComparison, digits: int = CHANGE_DIGITS) -> tuple[str, str, str]:
    """(change, CI low, CI high) of a latency comparison in %, as printed."""
    if r.change is None:
        return "--", "--", "--"
    low, high = r.change_ci if r.change_ci else (math.nan, math.nan)
    return tuple(f"{v:+.{digits}f}" if math.isfinite(v) else "--" for v in (r.change, low, high))  # type: ignore[return-value]


def latency_table(sweep: KnobSweep) -> str:
    """Probe rows of every capture against the calibration: HD-50 change, CI, p, q."""
    rows = []
    for r in sweep.latency:
        change, low, high = change_cells(r)
        rows.append(
            [
                escape(r.kernel),
                f"{escape(r.row)} ({_unit(r.unit)})",
                f"${change}$ [${low}$, ${high}$]",
                _p(r.p),
                _p(r.q),
                escape(r.verdict),
            ]
        )
    return _compact(
        table_tex(
            ["capture", "row", "HD-50 change \\% [95\\% CI]", "$p$", "$q$", "verdict"],
            rows,
            "llrrrl",
            f"Workload rows of each capture against {escape(sweep.calibration.name)} "
            "(\\texttt{mmlab compare}, deciding statistic the run-level Harrell--Davis "
            "median): change new/base$-1$ with its two-stage bootstrap 95\\,\\% CI "
            f"({fixed(RESAMPLES, 0)} resamples), exact permutation $p$ over runs, "
            "Benjamini--Hochberg $q$ over the rows of one capture.",
            "tab:sweep-latency",
        )
    )


def _unit(unit: str) -> str:
    return "$\\mu$s" if unit == "us" else escape(unit)


def _compact(table: str, wide: bool = False) -> str:
    """Smaller type and gaps; a ``wide`` table is also scaled to the text width."""
    table = table.replace(
        r"\centering\small", r"\centering\footnotesize\setlength{\tabcolsep}{3pt}"
    )
    if wide:
        table = table.replace(r"\begin{tabular}", r"\resizebox{\textwidth}{!}{\begin{tabular}")
        table = table.replace(r"\end{tabular}", r"\end{tabular}}")
    return table


# The shortest timeout's model is drawn this factor right of the timeout it predicts, so
# that its interval does not hide the default calibration's at the same timeout.
_NUDGE = 1.15


def sweep_figure(sweep: KnobSweep) -> alt.HConcatChart:
    """P(timeout) and mean stall against the timeout each kernel ran: every observed run,
    the predictions of the model calibrated at the default and of the one calibrated at
    the shortest timeout (beyond it), each with its 95 % prediction interval, and the
    default calibration's two baselines."""
    rows = []
    sleep = ("p_timeout", "mean_stall_us")
    for scores, nudge in ((sweep.throttle, 1.0), (sweep.beyond, _NUDGE)):
        for s in (s for s in scores if s.quantity in sleep):
            scale = 1e-3 if s.quantity == "mean_stall_us" else 1.0
            tau = s.tau_us / 1000
            if nudge == 1.0 or s.capture == sweep.calibration.name:
                rows += [
                    (s.quantity, tau, "observed run", v * scale, None, None) for v in s.observed
                ]
            low, high = s.interval or (None, None)
            rows.append(
                (s.quantity, tau * nudge, f"model from {s.calibration_tau_us / 1000:g} ms",
                 s.predicted * scale,
                 None if low is None else low * scale, None if high is None else high * scale)
            )  # fmt: skip
            if nudge == 1.0:
                rows.append((s.quantity, tau, "no change", s.no_change * scale, None, None))
                rows.append((s.quantity, tau, "linear in τ", s.linear * scale, None, None))
    frame = pl.DataFrame(
        rows, schema=["quantity", "tau_ms", "what", "value", "low", "high"], orient="row"
    )
    panels = []
    for quantity, title in (("p_timeout", "P(timeout)"), ("mean_stall_us", "mean stall (ms)")):
        part = frame.filter(pl.col("quantity") == quantity)
        x = alt.X("tau_ms:Q", title="timeout τ the kernel ran (ms)", scale=alt.Scale(type="log"))
        color = alt.Color("what:N", title=None, legend=alt.Legend(orient="bottom"))
        base = alt.Chart(part).encode(x=x, color=color)
        panels.append(
            (
                base.mark_point(filled=True, size=40, opacity=0.8).encode(
                    y=alt.Y("value:Q", title=title)
                )
                + base.transform_filter("datum.low != null")
                .mark_errorbar(ticks=True)
                .encode(y=alt.Y("low:Q", title=title), y2="high:Q")
            ).properties(width=200, height=160)
        )
    return alt.hconcat(*panels)


# The throttle scores the prose quotes (role of the capture, quantity) → fields; the rest
# are in the tables. Only these become macros, so that every macro is used. Roles: the
# default calibration's scores of the short and long timeouts and of the A/A capture, and
# the short timeout's scores beyond it (of the long timeout, the calibration, the A/A).
_SLEEP = ("model", "observed", "error", "error sd", "none", "linear", "p", "q", "verdict")
_ERRORS = ("error", "none", "linear", "verdict", "wb error")
_WB = (*_ERRORS, "wb error sd", "wb inside")
_QUOTED = {
    ("short", "p_timeout"): (*_SLEEP, "interval", "mde"),
    ("short", "mean_stall_us"): (*_SLEEP, "mde"),
    ("short", "velocity_pps"): (*_WB, "finding", "mde"),
    ("short", "efficiency"): (*_ERRORS, "finding", "mde"),
    ("long", "p_timeout"): (
        "model",
        "interval",
        "bounds",
        "km",
        "observed",
        "error",
        "none",
        "km error",
        "p",
        "q",
    ),
    ("long", "mean_stall_us"): (
        "model",
        "observed",
        "error",
        "none",
        "linear",
        "km error",
        "verdict",
    ),
    ("long", "velocity_pps"): (*_WB, "finding"),
    ("long", "efficiency"): (*_ERRORS, "finding"),
    ("aa", "p_timeout"): ("observed", "error", "none"),
    ("aa", "efficiency"): ("observed", "p", "q"),
    ("beyond long", "p_timeout"): (
        "model",
        "interval",
        "bounds",
        "km",
        "error",
        "km error",
        "none",
    ),
    ("beyond long", "mean_stall_us"): (
        "model",
        "observed",
        "bounds",
        "error",
        "error sd",
        "km error",
        "none",
        "linear",
        "verdict",
    ),
    ("beyond calibration", "p_timeout"): (
        "model",
        "interval",
        "observed",
        "inside",
        "error",
        "km error",
        "none",
    ),
    ("beyond aa", "p_timeout"): ("observed", "inside", "error", "km error", "none"),
}
# The shrinker scores the prose quotes beyond replay, observed, inside, p and ratio.
_SHRINKER_QUOTED = {
    ("div one", "scanned_objects"): (
        "depleted",
        "depleted interval",
        "error",
        "depleted error",
        "none",
        "q",
    ),
    ("div one", "backlog_objects"): ("error", "depleted error", "none", "q"),
    ("div prio", "scanned_objects"): ("depleted", "error", "depleted error", "none", "q"),
    ("div prio", "backlog_objects"): ("error", "depleted error", "none"),
}


def _score(scores, capture: str, quantity: str):
    return next(s for s in scores if s.capture == capture and s.quantity == quantity)


def _verdict(quantity: str, model: float, baselines: dict[str, float]) -> str:
    """The words the prose uses: which baselines' errors (name → error) the model's error,
    as printed, is below, naming them (equal printed errors are a tie, not a win)."""

    def printed(v: float) -> float:
        return float(_error(quantity, v).replace("{,}", ""))

    def listed(names: list[str], word: str) -> str:
        return ", ".join(names[:-1]) + f" {word} " + names[-1] if len(names) > 1 else names[0]

    beaten = [name for name, v in baselines.items() if printed(model) < printed(v)]
    rest = [name for name in baselines if name not in beaten]
    if not rest:
        return "smaller than " + listed(beaten, "and")
    if not beaten:
        return "no smaller than " + listed(rest, "or")
    return f"smaller than {listed(beaten, 'and')} but not than {listed(rest, 'or')}"


def _mde(effects: BlockedEffects) -> str:
    """The minimum detectable effect in words: on the log scale a factor either way
    (1 + mde up, its inverse down), else a difference in the quantity's unit."""
    mde = effects.levels[0].mde
    if effects.scale == "log":
        return f"a change by a factor of {fixed(1 + mde, 1)} either way"
    return f"a change of $\\pm${fixed(mde, 2)}"


def _finding(effects: BlockedEffects, p: float | None, q: float | None) -> str:
    """Did the knob change the quantity? Only an effect whose Benjamini–Hochberg q is at
    most :data:`~analysis.study.sweep.LEVEL` is credited; any other is a null, given with
    the smallest change its runs detect with 80 % power at that level."""
    tested = f"$p = {_p(p)}$, $q = {_p(q)}$"
    if q is not None and q <= LEVEL:
        return f"changed ({tested})"
    return (
        f"did not change detectably ({tested}; these runs detect only {_mde(effects)} "
        f"with {100 * effects.power:g}\\,\\% power at the {100 * LEVEL:g}\\,\\% level)"
    )


def _throttle_fields(
    s: QuantityScore, q: dict[tuple[str, str], float], mde: BlockedEffects | None
) -> dict[str, str]:
    """Every field of a throttle score the prose may quote, as printed; ``mde``: its
    minimum detectable effect (only the default calibration's scores have one)."""
    quantity = s.quantity
    baselines = {"no change's": s.no_change_error, "the linear baseline's": s.linear_error}
    if s.kaplan_meier_error is not None:
        baselines["Kaplan--Meier's"] = s.kaplan_meier_error
    return {
        "model": _predicted(quantity, s.predicted, s.interval),
        "interval": _interval(quantity, s.predicted, s.interval),
        "bounds": _bounds(quantity, s.bounds),
        "km": _show(quantity, s.kaplan_meier if s.kaplan_meier is not None else math.nan),
        "observed": _observed(quantity, s.observed),
        "inside": f"{s.inside} of {len(s.observed)}",
        "error": _error(quantity, s.model_error),
        "error sd": _error(quantity, _nan(s.model_error_sd)),
        "none": _error(quantity, s.no_change_error),
        "linear": _error(quantity, s.linear_error),
        "km error": _error(quantity, s.kaplan_meier_error or math.nan),
        "p": _p(s.change_p),
        "q": _p(q.get((s.capture, quantity))),
        "verdict": _verdict(quantity, s.model_error, baselines),
        "wb error": _error(quantity, s.given_writeback_error or math.nan),
        "wb error sd": _error(quantity, _nan(s.given_writeback_error_sd)),
        "wb inside": f"{s.given_writeback_inside} of {len(s.observed)}",
        "finding": "" if mde is None else _finding(mde, s.change_p, q.get((s.capture, quantity))),
        "mde": "" if mde is None else _mde(mde),
    }


def _shrinker_fields(s: ShrinkerScore, q: dict[tuple[str, str], float]) -> dict[str, str]:
    """The shrinker score's errors (plain and depleted replay), as printed."""
    quantity = s.quantity
    return {
        "depleted": _show(quantity, s.depleted if s.depleted is not None else math.nan),
        "error": _error(quantity, s.model_error),
        "depleted error": _error(quantity, s.depleted_error or math.nan),
        "depleted interval": _interval(quantity, s.depleted, s.depleted_interval),
        "none": _error(quantity, s.no_change_error),
        "q": _p(q.get((s.capture, quantity))),
    }


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def _family_values(sweep: KnobSweep) -> dict[str, str]:
    """The multiple-testing family: its size, the level and the effects it keeps."""
    kept = [f"{escape(c)} {_QUANTITY[quantity][0]}" for c, quantity in sweep.kept]
    listed = ", ".join(kept[:-1]) + " and " + kept[-1] if len(kept) > 1 else "".join(kept)
    return {
        "tests": str(len(sweep.q)),
        "fdr": f"{LEVEL:g}",
        "kept": str(len(kept)),
        "kept list": listed or "none",
    }


def _drift_values(sweep: KnobSweep) -> dict[str, str]:
    """The A/A drift (:attr:`~analysis.study.sweep.KnobSweep.efficiency_drift`) and the
    calibration's efficiency it is measured from."""
    cal = tuple(r.efficiency for r in sweep.calibration_runs)
    return {
        "calibration efficiency": _observed("efficiency", cal),
        "drift efficiency pp": fixed(100 * sweep.efficiency_drift, 1),
    }


def _interval_values(sweep: KnobSweep) -> dict[str, str]:
    """Why the calibration's P(timeout) intervals span [0, 1]: the spread of its one-run
    predictions (its runs' own shares), the half-width mean ± t·sd·√(1 + 1/n) gives
    them, and the most a distribution-free interval from n runs (their range) covers."""
    spread = sweep.shares_spread
    n = spread.runs
    return {
        "pi runs": str(n),
        "pi formula": f"mean $\\pm$ $t_{{{n - 1}}}\\cdot$sd$\\cdot\\sqrt{{1 + 1/{n}}}$",
        "pi share min": fixed(spread.low, 3),
        "pi share max": fixed(spread.high, 3),
        "pi share sd": fixed(spread.sd, 3),
        "pi half width": fixed(spread.half_width, 2),
        "pi range coverage": fixed(100 * spread.range_coverage, 0),
    }


def _credited(sweep: KnobSweep) -> dict[str, str]:
    """What the conclusion may credit to each timeout, generated from the multiple-testing
    step: an effect on the sleep is credited only when its q is at most :data:`LEVEL`."""
    short, long = sweep.roles.short.name, sweep.roles.long.name
    sleep = ("p_timeout", "mean_stall_us")
    q = sweep.q
    tau = _tau(sweep, short)
    if all((short, x) in sweep.kept for x in sleep):
        short_words = f"a {tau}\\,ms timeout changed the sleeps it governs"
    elif any((short, x) in sweep.kept for x in sleep):
        kept = next(_QUANTITY[x][0] for x in sleep if (short, x) in sweep.kept)
        short_words = f"a {tau}\\,ms timeout changed the sleeps' {kept} and nothing else detectably"
    else:
        qs = " and ".join(f"$q = {_p(q.get((short, x)))}$" for x in sleep)
        short_words = (
            f"no effect of a {tau}\\,ms timeout survives the adjustment for "
            f"{len(q)} tests: its sleeps moved the way a model calibrated at the default "
            f"predicted, but at {qs} that shift is not credited to the timeout"
        )
    kept_long = (long, "p_timeout") in sweep.kept
    long_words = (
        f"a {_tau(sweep, long)}\\,ms timeout let writeback wake the sleepers first "
        f"($q = {_p(q.get((long, 'p_timeout')))}$ for the share that timed out)"
        if kept_long
        else f"the share of sleeps that timed out at {_tau(sweep, long)}\\,ms did not change "
        f"detectably ($q = {_p(q.get((long, 'p_timeout')))}$)"
    )
    return {"short claim": short_words, "long claim": long_words}


def _emulation_values(cost: EmulationCost, sweep: KnobSweep) -> dict[str, str]:
    """The TCG caveat in numbers: the idle probe in the guest against the host, and what
    each timeout of the sweep is worth in the host's CPU time."""
    low, high = cost.guest_idle_range_us
    values = {
        "tcg captures": str(cost.guest_captures),
        "tcg map mib": f"{cost.map_bytes / 2**20:g}",
        "tcg host captures": str(cost.host_captures),
        "tcg host cpu": escape(cost.host_cpu),
        "tcg guest idle ms": fixed(cost.guest_idle_us / 1000, 1),
        "tcg guest idle low ms": fixed(low / 1000, 1),
        "tcg guest idle high ms": fixed(high / 1000, 1),
        "tcg host idle us": fixed(cost.host_idle_us, 0),
        "tcg slowdown": fixed(cost.slowdown, 0),
        "tcg slowdown low": fixed(low / cost.host_idle_us, 0),
        "tcg slowdown high": fixed(high / cost.host_idle_us, 0),
        "tcg loop slowdown": fixed(cost.loop_slowdown, 0),
        "tcg boot s": "--" if cost.guest_boot_s is None else fixed(cost.guest_boot_s, 0),
    }
    for role, capture in (("default", sweep.roles.aa), ("short", sweep.roles.short),
                          ("long", sweep.roles.long)):  # fmt: skip
        ms = sweep.tau_us(capture.name) / 1000 / cost.slowdown
        values[f"tcg {role} tau host ms"] = fixed(ms, 1)
    return values


def sweep_values(sweep: KnobSweep, cost: EmulationCost | None = None) -> dict[str, str]:
    """Every number and name the prose quotes about the sweep (keys ``sw ...``); ``cost``:
    the guest's emulation cost against the host runs, when there are host runs."""
    cal, roles = sweep.calibration, sweep.roles
    short, long, aa = roles.short, roles.long, roles.aa
    div1, divprio = roles.div_one, roles.div_prio
    values = {
        "kernel": escape(cal.kernel),
        "source package": escape(cal.source_package),
        "config hz": str(cal.config_hz),
        "accel": escape(cal.accel.upper()),
        "guest cpus": str(cal.guest_cpus),
        "guest memory mb": str(cal.guest_memory_mb),
        "workers": str(cal.workers),
        "duration s": f"{cal.duration_s:g}",
        "limit mb": str(cal.limit_mb),
        "slab files": f"{cal.slab_files:,}".replace(",", "{,}"),
        "captures": str(len(sweep.captures) + 1),
        "iterations": str(cal.iterations),
        "runs total": str(cal.iterations + sum(c.iterations for c in sweep.captures)),
        "calibration": escape(cal.name),
        "aa": escape(aa.name),
        "short": escape(short.name),
        "long": escape(long.name),
        "div one": escape(div1.name),
        "div prio": escape(divprio.name),
        "default tau ms": f"{_score(sweep.throttle, aa.name, 'p_timeout').tau_us / 1000:g}",
        "short tau ms": _tau(sweep, short.name),
        "long tau ms": _tau(sweep, long.name),
        "min p": _p(sweep.min_p),
        "ci level": f"{100 * CI_LEVEL:g}",
        "rho": f"{sweep.velocity_rho:.2f}",
        "rho p": number(sig(sweep.velocity_rho_p, 1)),
        "rho runs": str(sweep.velocity_runs),
    }
    q = sweep.q
    quoted = {
        "short": (sweep.throttle, short),
        "long": (sweep.throttle, long),
        "aa": (sweep.throttle, aa),
        "beyond long": (sweep.beyond, long),
        "beyond calibration": (sweep.beyond, cal),
        "beyond aa": (sweep.beyond, aa),
    }
    for (role, quantity), fields in _QUOTED.items():
        scores, capture = quoted[role]
        mde = sweep.mde.get((capture.name, quantity)) if scores is sweep.throttle else None
        every = _throttle_fields(_score(scores, capture.name, quantity), q, mde)
        values |= {f"{role} {_QUANTITY[quantity][0]} {f}": every[f] for f in fields}
    for role, c in (("div one", div1), ("div prio", divprio), ("aa", aa)):
        for quantity in ("scanned_objects", "backlog_objects"):
            s = _score(sweep.shrinker, c.name, quantity)
            key = f"{role} {_QUANTITY[quantity][0]}"
            values |= {
                f"{key} replay": _show(quantity, s.predicted),
                f"{key} observed": _observed(quantity, s.observed),
                f"{key} inside": f"{s.inside} of {len(s.observed)}",
                f"{key} p": _p(s.change_p),
                f"{key} ratio": fixed(s.predicted / float(np.mean(s.observed)), 1),
            }
            every = _shrinker_fields(s, q)
            values |= {f"{key} {f}": every[f] for f in _SHRINKER_QUOTED.get((role, quantity), ())}
    values |= _family_values(sweep) | _drift_values(sweep) | _interval_values(sweep)
    values["kswapd share"] = fixed(sweep.max_kswapd_share, 0)
    probe = sweep.probe
    values["probe flags"] = str(probe.flags)
    values["probe comparisons"] = str(probe.comparisons)
    values["probe min p"] = _p(probe.min_p)
    _, low, high = change_cells(probe.widest)
    values["probe widest capture"] = escape(probe.widest.kernel)
    values |= {"probe widest low": f"${low}$", "probe widest high": f"${high}$"}
    values["power"] = f"{100 * POWER:g}"
    values["probe mde low"] = fixed(1 + probe.mde_low, 1)
    values["probe mde high"] = fixed(1 + probe.mde_high, 1)
    values |= _credited(sweep)
    if cost is not None:
        values |= _emulation_values(cost, sweep)
    values["resamples"] = fixed(RESAMPLES, 0)
    return {f"sw {k}": v for k, v in values.items()}


def write_sweep(
    sweep: KnobSweep, out: Path, cost: EmulationCost | None = None
) -> tuple[dict[str, str], list[Path]]:
    """Tables and the figure of the sweep under ``out``; its macros (with ``cost``'s)."""
    written = []
    for name, tex in (
        ("sweep-throttle", throttle_table(sweep)),
        ("sweep-beyond", beyond_table(sweep)),
        ("sweep-shrinker", shrinker_table(sweep)),
        ("sweep-latency", latency_table(sweep)),
    ):
        path = out / "tables" / f"{name}.tex"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tex)
        written.append(path)
    written.append(save_pdf(sweep_figure(sweep), out / "figures" / "sweep-timeout.pdf"))
    return sweep_values(sweep, cost), written
