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

from analysis.errors import InputError
from analysis.ingest import benchmarks
from analysis.ingest.captures import traces_below
from analysis.ingest.textfile import read_text
from analysis.metrics.throttle import short_reason
from analysis.models import throttle
from analysis.models.shrinker import load_invocations
from analysis.models.shrinker_validation import ShrinkerScore, capture_divisor, score_divisor
from analysis.models.throttle_validation import QuantityScore, score_capture
from analysis.models.throttle_waits import calibrate_with_waits
from analysis.report.paper.figures import save_pdf
from analysis.report.paper.latex import escape, table_tex
from analysis.stats.significance import CI_LEVEL, RowComparison, compare_table, min_attainable_p

__all__ = [
    "CALIBRATION",
    "CHANGE_DIGITS",
    "RESAMPLES",
    "KnobSweep",
    "SweepCapture",
    "change_cells",
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
    writeback rate over every run of the timeout captures."""

    calibration: SweepCapture
    captures: tuple[SweepCapture, ...]
    reason: str
    throttle: tuple[QuantityScore, ...]
    shrinker: tuple[ShrinkerScore, ...]
    latency: tuple[RowComparison, ...]
    velocity_rho: float
    velocity_rho_p: float
    velocity_runs: int


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
    )


def _num(value: float, digits: int) -> str:
    if value is None or not math.isfinite(value):
        return "--"
    return f"{value:,.{digits}f}".replace(",", "{,}")


def _sci(value: float) -> str:
    """``value`` to one significant digit, as ``m \times 10^{e}`` below 0.001 (math)."""
    if value >= 1e-3:
        return f"{value:.1g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa} \\times 10^{{{int(exponent)}}}"


def _p(value: float | None) -> str:
    return "--" if value is None else f"{value:.3f}"


def _show(quantity: str, value: float) -> str:
    """A predicted or observed value in the table's unit (ms for the stall)."""
    if quantity == "mean_stall_us":
        return _num(value / 1000, 1)
    if quantity in ("p_timeout", "efficiency", "kswapd_share"):
        return _num(value, 3)
    return _num(value, 0)


def _error(quantity: str, value: float) -> str:
    """A mean error: percentage points, % (relative) or objects."""
    if _QUANTITY[quantity][1] == "\\%":
        return _num(100 * value, 0)
    return _num(value, 1 if _QUANTITY[quantity][1] == "pp" else 0)


def _interval(quantity: str, interval: tuple[float, float] | None) -> str:
    return (
        "--"
        if interval is None
        else f"[{_show(quantity, interval[0])}, " + (f"{_show(quantity, interval[1])}]")
    )


def _observed(quantity: str, values: tuple[float, ...]) -> str:
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else None
    mean = float(np.mean(values))
    return _show(quantity, mean) + ("" if sd is None else f" $\\pm$ {_show(quantity, sd)}")


def _tau(sweep: KnobSweep, capture: str) -> str:
    return f"{next(s.tau_us for s in sweep.throttle if s.capture == capture) / 1000:g}"


def throttle_table(sweep: KnobSweep) -> str:
    """Per timeout capture and quantity: the model's prediction with its run-level 95 %
    prediction interval, the observed runs, and each predictor's mean error."""
    rows = []
    for s in sweep.throttle:
        name, unit = _QUANTITY[s.quantity]
        mark = "$^{*}$" if s.extrapolated else ""
        rows.append(
            [
                f"{escape(s.capture)} ({_tau(sweep, s.capture)}{mark})",
                f"{name} ({unit})",
                _show(s.quantity, s.predicted),
                _interval(s.quantity, s.interval),
                _observed(s.quantity, s.observed),
                f"{s.inside}/{len(s.observed)}",
                _error(s.quantity, s.model_error),
                _error(s.quantity, s.no_change_error),
                _error(s.quantity, s.linear_error),
                _p(s.change_p),
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
                "$p$",
            ],
            rows,
            "llrrrrrrrr",
            f"The timeout model calibrated on {cal} (default timeout) against the kernels "
            "that ran each timeout $\\tau$: the mean prediction of the models calibrated on "
            "one run each and its 95\\,\\% prediction interval for one run; observed mean "
            "$\\pm$ sd over the capture's runs (stall in ms); in: runs inside the interval; "
            "mean error over runs of the model, of no change (the calibration's run mean) "
            "and of linear in $\\tau$ (every sleep scaled by $\\tau/\\tau_c$, $\\tau_c$ the "
            "calibration's timeout), in "
            "percentage points (pp) of a share or \\% of the observed value; $p$: "
            f"permutation test over runs, {cal} against the capture (did the knob change "
            "the quantity?). $^{*}$: beyond the longest wait the calibration observed.",
            "tab:sweep-throttle",
        )
    )


def shrinker_table(sweep: KnobSweep) -> str:
    """Per divisor capture and quantity: replayed, observed, errors, change p."""
    rows = [
        [
            f"{escape(s.capture)} ({escape(s.divisor)})",
            _QUANTITY[s.quantity][0],
            _show(s.quantity, s.predicted),
            _interval(s.quantity, s.interval),
            _observed(s.quantity, s.observed),
            f"{s.inside}/{len(s.observed)}",
            _error(s.quantity, s.model_error),
            _error(s.quantity, s.no_change_error),
            _p(s.change_p),
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
                "replay",
                "none",
                "$p$",
            ],
            rows,
            "llrrrrrrr",
            f"The shrinker replay: each run of {cal} (divisor $2^{{\\text{{priority}}}}$) "
            "replayed under the divisor each capture ran, against that kernel's runs: "
            "mean replay and its 95\\,\\% prediction interval for one run; observed mean "
            "$\\pm$ sd over runs (objects per run, backlog as mean \\texttt{nr\\_deferred} "
            "taken per call); mean absolute error over runs of the replay and of no change "
            "(objects; kswapd share in pp); $p$: permutation test over runs, "
            f"{cal} against the capture.",
            "tab:sweep-shrinker",
        )
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
            f"({_num(RESAMPLES, 0)} resamples), exact permutation $p$ over runs, "
            "Benjamini--Hochberg $q$ over the rows of one capture.",
            "tab:sweep-latency",
        )
    )


def _unit(unit: str) -> str:
    return "$\\mu$s" if unit == "us" else escape(unit)


def _compact(table: str) -> str:
    return table.replace(r"\centering\small", r"\centering\footnotesize\setlength{\tabcolsep}{3pt}")


def sweep_figure(sweep: KnobSweep) -> alt.HConcatChart:
    """P(timeout) and mean stall against the timeout each kernel ran: every observed run,
    the model's prediction with its 95 % prediction interval, and both baselines."""
    rows = []
    for s in sweep.throttle:
        if s.quantity not in ("p_timeout", "mean_stall_us"):
            continue
        scale = 1e-3 if s.quantity == "mean_stall_us" else 1.0
        tau = s.tau_us / 1000
        rows += [(s.quantity, tau, "observed run", v * scale, None, None) for v in s.observed]
        low, high = s.interval or (None, None)
        rows.append(
            (s.quantity, tau, "model", s.predicted * scale,
             None if low is None else low * scale, None if high is None else high * scale)
        )  # fmt: skip
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
                .encode(y="low:Q", y2="high:Q")
            ).properties(width=200, height=160)
        )
    return alt.hconcat(*panels)


# The throttle scores the prose quotes (role of the capture, quantity) → fields; the rest
# are in the table. Only these become macros, so that every macro is used.
_ALL = ("model", "observed", "error", "error sd", "none", "linear", "p", "verdict")
_ERRORS = ("error", "none", "linear", "p", "verdict")
_QUOTED = {
    ("short", "p_timeout"): _ALL,
    ("short", "mean_stall_us"): _ALL,
    ("short", "velocity_pps"): _ERRORS,
    ("short", "efficiency"): _ERRORS,
    ("long", "p_timeout"): ("model", "observed", "error", "none", "linear", "p"),
    ("long", "mean_stall_us"): ("model", "observed", "error", "none", "linear", "verdict"),
    ("long", "velocity_pps"): _ERRORS,
    ("long", "efficiency"): _ERRORS,
    ("aa", "p_timeout"): ("observed", "error", "none"),
}


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
        "rho p": _sci(sweep.velocity_rho_p),
        "rho runs": str(sweep.velocity_runs),
    }
    roles = {"short": short, "long": long, "aa": aa}
    for (role, q), fields in _QUOTED.items():
        s = _score(sweep.throttle, roles[role].name, q)
        every = {
            "model": _show(q, s.predicted),
            "observed": _observed(q, s.observed),
            "error": _error(q, s.model_error),
            "error sd": _error(q, s.model_error_sd or math.nan),
            "none": _error(q, s.no_change_error),
            "linear": _error(q, s.linear_error),
            "p": _p(s.change_p),
            "verdict": _verdict(q, s.model_error, s.no_change_error, s.linear_error),
        }
        values |= {f"{role} {_QUANTITY[q][0]} {f}": every[f] for f in fields}
    for role, c in (("div one", div1), ("div prio", divprio), ("aa", aa)):
        for q in ("scanned_objects", "backlog_objects"):
            s = _score(sweep.shrinker, c.name, q)
            key = f"{role} {_QUANTITY[q][0]}"
            values |= {
                f"{key} replay": _show(q, s.predicted),
                f"{key} observed": _observed(q, s.observed),
                f"{key} inside": f"{s.inside} of {len(s.observed)}",
                f"{key} p": _p(s.change_p),
                f"{key} ratio": _num(s.predicted / float(np.mean(s.observed)), 1),
            }
    kswapd = [max(s.observed) for s in sweep.shrinker if s.quantity == "kswapd_share"]
    values["kswapd share"] = _num(max(kswapd), 0)
    probe = [r for r in sweep.latency if r.unit == "us"]
    values["probe flags"] = str(sum(r.verdict in ("improved", "regressed") for r in probe))
    values["probe comparisons"] = str(len(probe))
    values["probe min p"] = _p(min(r.p for r in probe if r.p is not None))
    widest = max(probe, key=lambda r: r.change_ci[1] - r.change_ci[0] if r.change_ci else 0)
    _, low, high = change_cells(widest)
    values |= {"probe widest capture": escape(widest.kernel), "probe widest low": f"${low}$"}
    values["probe widest high"] = f"${high}$"
    values["resamples"] = _num(RESAMPLES, 0)
    return {f"sw {k}": v for k, v in values.items()}


def write_sweep(sweep: KnobSweep, out: Path) -> tuple[dict[str, str], list[Path]]:
    """Tables and the figure of the sweep under ``out``; its macros."""
    written = []
    for name, tex in (
        ("sweep-throttle", throttle_table(sweep)),
        ("sweep-shrinker", shrinker_table(sweep)),
        ("sweep-latency", latency_table(sweep)),
    ):
        path = out / "tables" / f"{name}.tex"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tex)
        written.append(path)
    written.append(save_pdf(sweep_figure(sweep), out / "figures" / "sweep-timeout.pdf"))
    return sweep_values(sweep), written
