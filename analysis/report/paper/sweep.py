"""The paper's results on the patched-kernel sweep: each model scored against the kernel
that ran the setting, and the significance of each knob's effect.

The sweep is a folder of ``mmlab capture --kernel`` captures of one patched kernel
(``data/vm-6.12``: ``docs/patched-kernels.md``), each with its ``vm.json`` provenance. The
calibration capture ran the defaults. Captures whose read-back knobs touch only
``vm.reclaim_throttle_*`` (or none) validate the timeout model
(:func:`analysis.models.throttle_validation.score_capture`), those touching only
``vm.shrinker_deferred_divisor`` (or none) the shrinker replay
(:func:`analysis.models.shrinker_validation.score_divisor`); a capture at the defaults is
the A/A check of both (``docs/model-validation.md`` "Throttle timeout", "Shrinker
deferral"). The probe latency of every capture is compared with the calibration's by
``mmlab compare``'s run-level machinery (:func:`analysis.stats.significance.compare_table`).

Writes ``tables/sweep-throttle.tex``, ``tables/sweep-shrinker.tex``,
``tables/sweep-latency.tex`` and ``figures/sweep-timeout.pdf``; returns the macros the
checked-in prose (``papers/reclaim-throttling/sections/*.tex``) quotes, prefix ``Sw``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl
from scipy import stats
from statsmodels.stats.multitest import multipletests

from analysis.errors import InputError
from analysis.ingest import benchmarks
from analysis.ingest.captures import traces_below
from analysis.ingest.textfile import read_text
from analysis.metrics.throttle import short_reason
from analysis.models import throttle
from analysis.models.run_scoring import LEVEL as PI_LEVEL
from analysis.models.shrinker import load_invocations
from analysis.models.shrinker_validation import ShrinkerScore, capture_divisor, score_divisor
from analysis.models.throttle_validation import (
    QuantityScore,
    RunValues,
    run_values,
    score_capture,
)
from analysis.models.throttle_waits import calibrate_with_waits
from analysis.report.paper.figures import save_pdf
from analysis.report.paper.latex import escape, fixed, number, table_tex
from analysis.report.throttle_fits import MS
from analysis.report.units import MISSING, PLAIN, Scale, interval_texts, mean_sd_texts, sig
from analysis.stats.significance import CI_LEVEL, RowComparison, compare_table, min_attainable_p

__all__ = [
    "CALIBRATION",
    "CHANGE_DIGITS",
    "RESAMPLES",
    "KnobSweep",
    "SweepCapture",
    "beyond_table",
    "change_cells",
    "knob_q",
    "knob_sweep",
    "latency_comparisons",
    "latency_table",
    "shrinker_table",
    "sweep_figure",
    "sweep_values",
    "throttle_table",
    "write_sweep",
]

CALIBRATION = "aa1"
# Two-stage bootstrap resamples of the latency change CI. Measured on the bundled sweep:
# seeds 0 and 1 print the same ten intervals at CHANGE_DIGITS (and at one decimal) already
# at 2 000 resamples (1 s); 20 000 (7 s) cuts the Monte-Carlo error of a bound by another
# factor of about three, a margin for other data (tests/test_paper_sweep.py checks two seeds).
RESAMPLES = 20_000
# Decimals of a printed latency change and its CI bounds (%): with five runs a side the
# intervals span tens of per cent, so digits below whole per cent would only be noise.
CHANGE_DIGITS = 0
LEVEL = 0.05
_THROTTLE_KNOB = "vm.reclaim_throttle_"
_DIVISOR_KNOB = "vm.shrinker_deferred_divisor"
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


@dataclass(frozen=True)
class SweepCapture:
    """One capture of the sweep: its name, folder, the knobs it read back (sysctl →
    value), its iterations, the kernel it ran (``uname -r``, Debian source package), the
    guest, and the workload of its first iteration's ``mmlab.json``."""

    name: str
    path: Path
    knobs: dict[str, str]
    iterations: int
    kernel: str
    source_package: str
    config_hz: int
    accel: str
    guest_cpus: int
    guest_memory_mb: int
    workers: int
    duration_s: float
    limit_mb: int
    slab_files: int


@dataclass(frozen=True)
class KnobSweep:
    """The sweep scored: ``throttle`` and ``shrinker`` validation scores of the
    calibration capture's model against each capture that ran a setting, ``latency`` the
    probe rows of each capture against the calibration (one per capture and row), and
    ``velocity_rho``/``velocity_rho_p``: Spearman's rank correlation of velocity with the
    writeback rate over every run of the timeout captures. ``beyond``: the model calibrated
    on the shortest-timeout capture (``beyond_calibration``) scored against every capture
    that ran a longer timeout (the calibration included), where its one-run models use the
    woken fit; ``calibration_runs``: the calibration's per-run quantities (its P(timeout)
    are the one-run models' predictions at its own timeout)."""

    calibration: SweepCapture
    captures: tuple[SweepCapture, ...]
    reason: str
    throttle: tuple[QuantityScore, ...]
    shrinker: tuple[ShrinkerScore, ...]
    latency: tuple[RowComparison, ...]
    velocity_rho: float
    velocity_rho_p: float
    velocity_runs: int
    beyond_calibration: SweepCapture
    beyond: tuple[QuantityScore, ...]
    calibration_runs: tuple[RunValues, ...]


def _capture(path: Path) -> SweepCapture:
    found = sorted(path.rglob("vm.json"))
    if len(found) != 1:
        raise InputError(path, f"expected one vm.json below this capture, found {len(found)}")
    try:
        vm = json.loads(read_text(found[0]))
        build, guest = vm["kernel_build"], vm["guest"]
        first = sorted(found[0].parent.glob("iter-*/mmlab.json"))[0]
        config = json.loads(read_text(first))["config"]
        knobs = {k: str(v["read_back"]) for k, v in vm["sysctls_read_back"].items()}
        return SweepCapture(
            name=path.name,
            path=path,
            knobs=knobs,
            iterations=len(traces_below(path)),
            kernel=str(build["kernel_release"]),
            source_package=str(build["source_package"]),
            config_hz=int(build["config_hz"]),
            accel=str(vm["accelerator"]),
            guest_cpus=int(guest["cpus"]),
            guest_memory_mb=int(guest["memory_mb"]),
            workers=int(config["workers"][0]),
            duration_s=float(config["duration_s"]),
            limit_mb=int(config["limit_mb"]),
            slab_files=int(config["slab_files"]),
        )
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise InputError(found[0], f"not an mmlab capture --kernel capture ({exc})") from None


def _runs_of(path: Path) -> Path:
    """The run folder of a capture (``aa1/aa1``), as ``mmlab compare`` takes it."""
    return next(iter(sorted(path.rglob("vm.json")))).parent


def latency_comparisons(
    captures: tuple[SweepCapture, ...], resamples: int = RESAMPLES, seed: int = 0
) -> tuple[RowComparison, ...]:
    """Workload rows of every capture after the first against the first (the
    calibration), decided by the run-level HD-50 as ``mmlab compare`` decides them."""
    calibration, *others = captures
    out = []
    for capture in others:
        paths = [_runs_of(calibration.path), _runs_of(capture.path)]
        table = benchmarks.load_runs(paths).table
        out += compare_table(
            table, calibration.name, [capture.name], "p50", LEVEL, None, resamples, seed
        )
    return tuple(out)


def knob_sweep(
    root: Path,
    calibration: str = CALIBRATION,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> KnobSweep:
    """Score the models of ``root/calibration`` against every other capture under ``root``
    that ran a timeout or a divisor (or nothing: A/A), and compare their probe latency."""
    folders = sorted(p for p in Path(root).iterdir() if p.is_dir())
    captures = {p.name: _capture(p) for p in folders}
    if calibration not in captures:
        raise InputError(root, f"no calibration capture {calibration!r} in the sweep")
    cal = captures.pop(calibration)
    if cal.knobs:
        raise InputError(cal.path, f"the calibration capture changed knobs {sorted(cal.knobs)}")
    timeout = [c for c in captures.values() if all(k.startswith(_THROTTLE_KNOB) for k in c.knobs)]
    divisor = [c for c in captures.values() if set(c.knobs) <= {_DIVISOR_KNOB}]
    runs = throttle.observe(cal.path)
    model, _ = calibrate_with_waits(runs, 0, seed, "auto")
    reason = next(r.reason for r in model.reasons if short_reason(r.reason) == "WRITEBACK")
    targets = {c.name: throttle.observe(c.path) for c in timeout}
    scores = tuple(
        s
        for c in timeout
        for s in score_capture(model, runs, targets[c.name], reason, c.name, seed=seed)
    )
    calls = [load_invocations(t) for t in traces_below(cal.path)]
    shrinker = tuple(
        s
        for c in divisor
        for s in score_divisor(
            calls,
            capture_divisor(cal.path),
            [load_invocations(t) for t in traces_below(c.path)],
            capture_divisor(c.path),
            c.name,
            seed=seed,
        )
    )
    latency = latency_comparisons((cal, *captures.values()), resamples, seed)
    observed = {cal.name: runs, **targets}
    tau = {c: next(s.tau_us for s in scores if s.capture == c) for c in targets}
    tau[cal.name] = next(s.calibration_tau_us for s in scores)
    short = min(tau, key=tau.__getitem__)
    short_model, _ = calibrate_with_waits(observed[short], 0, seed, "auto")
    named = {cal.name: cal, **captures}
    beyond = tuple(
        s
        for c in sorted(c for c in tau if tau[c] > tau[short])
        for s in score_capture(short_model, observed[short], observed[c], reason, c, seed=seed)
    )
    every = [*runs, *(o for obs in targets.values() for o in obs)]
    rho = stats.spearmanr([o.writeback_pps for o in every], [o.velocity_pps for o in every])
    return KnobSweep(
        calibration=cal,
        captures=tuple(captures.values()),
        reason=reason,
        throttle=scores,
        shrinker=shrinker,
        latency=latency,
        velocity_rho=float(rho.statistic),
        velocity_rho_p=float(rho.pvalue),
        velocity_runs=len(every),
        beyond_calibration=named[short],
        beyond=beyond,
        calibration_runs=tuple(run_values(o, reason) for o in runs),
    )


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


def _tau(sweep: KnobSweep, capture: str) -> str:
    return f"{next(s.tau_us for s in sweep.throttle if s.capture == capture) / 1000:g}"


def throttle_table(sweep: KnobSweep) -> str:
    """Per timeout capture and quantity: the model's prediction with its run-level 95 %
    prediction interval, the observed runs, each predictor's mean error (``wb``: velocity
    and efficiency given each run's writeback rate), the knob's permutation p and its
    Benjamini–Hochberg q (:func:`knob_q`)."""
    q = knob_q(sweep)
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


def knob_q(sweep: KnobSweep) -> dict[tuple[str, str], float]:
    """Benjamini–Hochberg q of every knob-effect permutation p of the throttle and
    shrinker tables, keyed by (capture, quantity). The family is all of them: each asks
    whether a capture's setting moved a quantity from the calibration's runs, and they
    are read together to say which knob did anything."""
    tests = [(s.capture, s.quantity, s.change_p) for s in (*sweep.throttle, *sweep.shrinker)]
    tests = [t for t in tests if t[2] is not None]
    _, q, _, _ = multipletests([p for *_, p in tests], method="fdr_bh")
    return {(c, quantity): float(v) for (c, quantity, _), v in zip(tests, q, strict=True)}


def shrinker_table(sweep: KnobSweep) -> str:
    """Per divisor capture and quantity: replayed (plain and depleted), observed, errors,
    the knob's permutation p and its q."""
    q = knob_q(sweep)
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
            ],
            rows,
            "llrrrrrrrrrr",
            f"The shrinker replay: each run of {cal} (divisor $2^{{\\text{{priority}}}}$) "
            "replayed under the divisor each capture ran, against that kernel's runs: "
            "mean replay and its 95\\,\\% prediction interval for one run; observed mean "
            "$\\pm$ sd over runs (objects per run, backlog as mean \\texttt{nr\\_deferred} "
            "taken per call); depleted: the replay whose extra freeing comes off the "
            "instance's later cache sizes; mean absolute error over runs of the replay, of "
            "the depleted replay and of no change (objects; kswapd share in pp); $p$: "
            f"permutation test over runs, {cal} against the capture; $q$: as in "
            "Table~\\ref{tab:sweep-throttle}.",
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
_ERRORS = ("error", "none", "linear", "p", "verdict", "wb error")
_WB = (*_ERRORS, "wb error sd", "wb inside")
_QUOTED = {
    ("short", "p_timeout"): (*_SLEEP, "interval"),
    ("short", "mean_stall_us"): _SLEEP,
    ("short", "velocity_pps"): _WB,
    ("short", "efficiency"): _ERRORS,
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
    ("long", "mean_stall_us"): ("model", "observed", "error", "none", "km error", "verdict"),
    ("long", "velocity_pps"): _WB,
    ("long", "efficiency"): _ERRORS,
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


def _run_errors(quantity: str, predicted, observed) -> np.ndarray:
    """Per-run absolute error of a throttle quantity in its unit of error (``_QUANTITY``):
    pp of a share or relative (a fraction); ``predicted`` one value or one per run."""
    observed = np.asarray(observed, dtype=float)
    diff = np.abs(np.asarray(predicted, dtype=float) - observed)
    return diff * 100 if _QUANTITY[quantity][1] == "pp" else diff / observed


def _sd(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1)) if values.size > 1 else math.nan


def _score(scores, capture: str, quantity: str):
    return next(s for s in scores if s.capture == capture and s.quantity == quantity)


def _verdict(quantity: str, model: float, *baselines: float) -> str:
    """The words the prose uses: is the model's error, as printed, below every baseline's?
    (Equal printed errors are a tie, not a win.)"""

    def printed(v: float) -> float:
        return float(_error(quantity, v).replace("{,}", ""))

    return "smaller than" if printed(model) < min(map(printed, baselines)) else "no smaller than"


def _role(sweep: KnobSweep, knob: str, pick) -> SweepCapture | None:
    """The capture whose knob ``knob`` read back a value ``pick`` chooses among them."""
    found = [c for c in sweep.captures if knob in c.knobs]
    return pick(found, key=lambda c: float(c.knobs[knob])) if found else None


def _throttle_fields(s: QuantityScore, q: dict[tuple[str, str], float]) -> dict[str, str]:
    """Every field of a throttle score the prose may quote, as printed."""
    quantity = s.quantity
    baselines = [s.no_change_error, s.linear_error]
    if s.kaplan_meier_error is not None:
        baselines.append(s.kaplan_meier_error)
    wb = s.given_writeback
    wb_errors = _run_errors(quantity, wb, s.observed) if wb is not None else np.array([])
    return {
        "model": _predicted(quantity, s.predicted, s.interval),
        "interval": _interval(quantity, s.predicted, s.interval),
        "bounds": _bounds(quantity, s.bounds),
        "km": _show(quantity, s.kaplan_meier if s.kaplan_meier is not None else math.nan),
        "observed": _observed(quantity, s.observed),
        "inside": f"{s.inside} of {len(s.observed)}",
        "error": _error(quantity, s.model_error),
        "error sd": _error(quantity, _sd(_run_errors(quantity, s.predicted, s.observed))),
        "none": _error(quantity, s.no_change_error),
        "linear": _error(quantity, s.linear_error),
        "km error": _error(quantity, s.kaplan_meier_error or math.nan),
        "p": _p(s.change_p),
        "q": _p(q.get((s.capture, quantity))),
        "verdict": _verdict(quantity, s.model_error, *baselines),
        "wb error": _error(quantity, s.given_writeback_error or math.nan),
        "wb error sd": _error(quantity, _sd(wb_errors)),
        "wb inside": f"{s.given_writeback_inside} of {len(s.observed)}",
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


def _family_values(q: dict[tuple[str, str], float]) -> dict[str, str]:
    """The multiple-testing family: its size, the level and the effects it keeps."""
    kept = [f"{escape(c)} {_QUANTITY[quantity][0]}" for (c, quantity), v in q.items() if v <= LEVEL]
    listed = ", ".join(kept[:-1]) + " and " + kept[-1] if len(kept) > 1 else "".join(kept)
    return {
        "tests": str(len(q)),
        "fdr": f"{LEVEL:g}",
        "kept": str(len(kept)),
        "kept list": listed or "none",
    }


def _drift_values(sweep: KnobSweep, aa: SweepCapture) -> dict[str, str]:
    """The A/A drift: the calibration's efficiency against the A/A capture's, same kernel
    and settings, as the floor a knob effect between two captures must exceed."""
    cal = np.array([r.efficiency for r in sweep.calibration_runs])
    other = _score(sweep.throttle, aa.name, "efficiency").observed
    return {
        "calibration efficiency": _observed("efficiency", tuple(cal)),
        "drift efficiency pp": fixed(100 * (float(np.mean(other)) - float(cal.mean())), 1),
    }


def _interval_values(sweep: KnobSweep) -> dict[str, str]:
    """Why the calibration's P(timeout) intervals span [0, 1]: the spread of its one-run
    predictions (its runs' own shares), the half-width mean ± t·sd·√(1 + 1/n) gives
    them, and the most a distribution-free interval from n runs (their range) covers."""
    shares = np.array([r.p_timeout for r in sweep.calibration_runs])
    n = shares.size
    half = stats.t.ppf(0.5 + PI_LEVEL / 2, n - 1) * _sd(shares) * math.sqrt(1 + 1 / n)
    return {
        "pi runs": str(n),
        "pi formula": f"mean $\\pm$ $t_{{{n - 1}}}\\cdot$sd$\\cdot\\sqrt{{1 + 1/{n}}}$",
        "pi share min": fixed(float(shares.min()), 3),
        "pi share max": fixed(float(shares.max()), 3),
        "pi share sd": fixed(_sd(shares), 3),
        "pi half width": fixed(half, 2),
        "pi range coverage": fixed(100 * (n - 1) / (n + 1), 0),
    }


def sweep_values(sweep: KnobSweep) -> dict[str, str]:
    """Every number and name the prose quotes about the sweep (keys ``sw ...``)."""
    cal = sweep.calibration
    knob = f"{_THROTTLE_KNOB}writeback_ms"
    short, long = _role(sweep, knob, min), _role(sweep, knob, max)
    aa = next(c for c in sweep.captures if not c.knobs)
    div1 = next(c for c in sweep.captures if c.knobs.get(_DIVISOR_KNOB) == "1")
    divprio = next(c for c in sweep.captures if c.knobs.get(_DIVISOR_KNOB) == "priority")
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
        "min p": _p(min_attainable_p(cal.iterations, min(c.iterations for c in sweep.captures))),
        "ci level": f"{100 * CI_LEVEL:g}",
        "rho": f"{sweep.velocity_rho:.2f}",
        "rho p": number(sig(sweep.velocity_rho_p, 1)),
        "rho runs": str(sweep.velocity_runs),
    }
    q = knob_q(sweep)
    roles = {
        "short": (sweep.throttle, short),
        "long": (sweep.throttle, long),
        "aa": (sweep.throttle, aa),
        "beyond long": (sweep.beyond, long),
        "beyond calibration": (sweep.beyond, cal),
        "beyond aa": (sweep.beyond, aa),
    }
    for (role, quantity), fields in _QUOTED.items():
        scores, capture = roles[role]
        every = _throttle_fields(_score(scores, capture.name, quantity), q)
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
    values |= _family_values(q) | _drift_values(sweep, aa) | _interval_values(sweep)
    kswapd = [max(s.observed) for s in sweep.shrinker if s.quantity == "kswapd_share"]
    values["kswapd share"] = fixed(max(kswapd), 0)
    probe = [r for r in sweep.latency if r.unit == "us"]
    values["probe flags"] = str(sum(r.verdict in ("improved", "regressed") for r in probe))
    values["probe comparisons"] = str(len(probe))
    values["probe min p"] = _p(min(r.p for r in probe if r.p is not None))
    widest = max(probe, key=lambda r: r.change_ci[1] - r.change_ci[0] if r.change_ci else 0)
    _, low, high = change_cells(widest)
    values |= {"probe widest capture": escape(widest.kernel), "probe widest low": f"${low}$"}
    values["probe widest high"] = f"${high}$"
    values["resamples"] = fixed(RESAMPLES, 0)
    return {f"sw {k}": v for k, v in values.items()}


def write_sweep(sweep: KnobSweep, out: Path) -> tuple[dict[str, str], list[Path]]:
    """Tables and the figure of the sweep under ``out``; its macros."""
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
    return sweep_values(sweep), written
