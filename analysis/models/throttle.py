"""What another throttle timeout would do: latent waits, timeout predictions, reclaim cycles.

A reclaimer throttled in ``reclaim_throttle()`` (mm/vmscan.c) sleeps until its wake
condition or its timeout (``VMSCAN_THROTTLE_WRITEBACK``: HZ/10, woken once writeback of
``SWAP_CLUSTER_MAX`` pages per throttled task completed, ``__acct_reclaim_writeback()``).
The latent wait T (the sleep with no timeout) is an :class:`~analysis.stats.latent.LatentWait`:
:class:`ParametricWait` (a fitted scipy distribution) or :class:`EmpiricalWait` (Kaplan–Meier of
a throttle group's recorded ``usect_delayed``). :func:`predict_timeout` answers, for a
timeout τ: P(timeout) = S(τ), the mean stall E[min(T, τ)] and stall quantiles, with
percentile-bootstrap intervals from replicates of the wait.

The reclaim-cycle model (:func:`calibrate`, :func:`predict_cycle`) turns a
capture into velocity (pages scanned per second of reclaim) and efficiency (reclaimed /
scanned, both from ``mm_vmscan_lru_shrink_inactive``) as functions of each reason's τ.
Assumptions, each a way it can be wrong:

1. A reclaimer alternates between scanning at a fixed rate v (pages/s, reclaim time minus
   throttle sleep over ``nr_scanned``) and sleeping; a reason r throttles it q_r times per
   scanned page, whatever τ is (τ changes how long it sleeps, not how often). Reclaim
   time includes waiting for a CPU, so v falls with the number of concurrent reclaimers
   and does not carry over to another worker count. Velocity here is per second of
   reclaim, not mmtests' pages scanned per second of the test.
2. A *cycle* is the scanning a reclaimer does after waking from one throttle until its next
   one. Its efficiency depends only on x = s·w/P, the share of the dirty pool written back
   during the sleep s = min(T, τ): w is the writeback completion rate (vmstat ``nr_written``,
   pages/s) and P the dirty pool (the cgroup's ``dirty + writeback``, else vmstat
   ``nr_dirty + nr_writeback``). logit(efficiency) = a_r + b_r·x, a binomial GLM over cycles
   (pages are not independent, so its standard errors are not used: intervals come from a
   bootstrap over cycles). The sleep a cycle follows is not randomised: long sleeps come with
   slow writeback, so b_r mixes the sleep's effect with the state that made it long.
3. Scans before a reclaimer's first throttle keep their observed efficiency.
4. T is the same at any τ (the wake condition does not depend on the timeout) and nothing
   beyond the observed timeout is known: τ above it is extrapolation and flagged.
5. Reclaim contexts (kswapd, direct, memcg) are pooled per reason.

The kernel's timeouts are whole jiffies; a τ between two multiples of a jiffy gets the
value at the one below (the delays, and so the Kaplan–Meier steps, are whole jiffies).

Velocity(τ) = 1 / (1/v + Σ_r q_r·E[min(T_r, τ_r)]); efficiency(τ) = the page-weighted mix
of each reason's E_T[logit⁻¹(a_r + b_r·min(T_r, τ_r)·w/P)] and the pre-throttle scans.
Times are µs in waits, seconds in rates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import polars as pl
import statsmodels.api as sm
from scipy import integrate
from scipy.special import expit
from statsmodels.duration.survfunc import SurvfuncRight

from analysis.errors import InputError
from analysis.ingest import mmtests, vmstat
from analysis.ingest.capture_meta import MMLAB_JSON
from analysis.ingest.captures import iteration_traces
from analysis.metrics import pairing, throttle
from analysis.stats.latent import LatentWait

__all__ = [
    "CycleModel",
    "CyclePrediction",
    "EmpiricalWait",
    "Estimate",
    "Observation",
    "ParametricWait",
    "ReasonCycle",
    "TimeoutPrediction",
    "Window",
    "calibrate",
    "cycles_of",
    "group_waits",
    "observe",
    "observe_iteration",
    "per_run",
    "phase_windows",
    "predict_cycle",
    "predict_timeout",
    "timeout_curve",
]

PAGE_BYTES = 4096
SHRINK = "mm_vmscan_lru_shrink_inactive"
MC_DRAWS = 4000  # draws of T per expectation over the wait: Monte Carlo error ~1/sqrt(4000)


@dataclass(frozen=True)
class ParametricWait:
    """T from a frozen scipy distribution ``dist`` (µs), with an atom ``zero_mass`` at 0 and a
    ``cure_fraction`` never woken: S(t) = (1 − z − c)·dist.sf(t) + c for t ≥ 0."""

    reason: str
    dist: object
    zero_mass: float = 0.0
    cure_fraction: float = 0.0
    support_limit_us: float = math.inf

    def __post_init__(self) -> None:
        if min(self.zero_mass, self.cure_fraction) < 0 or self.zero_mass + self.cure_fraction > 1:
            raise ValueError(
                f"{self.reason}: zero mass {self.zero_mass} and cure fraction "
                f"{self.cure_fraction} must be ≥ 0 and sum to at most 1"
            )

    @property
    def _body(self) -> float:
        return 1.0 - self.zero_mass - self.cure_fraction

    def survival(self, t_us: np.ndarray) -> np.ndarray:
        t = np.asarray(t_us, dtype=float)
        s = self._body * self.dist.sf(t) + self.cure_fraction
        return np.where(t < 0, 1.0, s)

    def timed_out(self, tau_us: float) -> float:
        # Continuous between the atoms at 0 and never: P(T >= tau) = S(tau) for tau > 0.
        return float(self.survival(np.array([tau_us]))[0])

    def restricted_mean_us(self, tau_us: float) -> float:
        if tau_us <= 0:
            return 0.0
        body, _ = integrate.quad(lambda t: float(self.dist.sf(t)), 0.0, tau_us, limit=200)
        return self._body * body + self.cure_fraction * tau_us

    def quantile_us(self, p: float) -> float:
        if p <= self.zero_mass:
            return 0.0
        if p > 1.0 - self.cure_fraction:
            return math.inf
        return float(self.dist.ppf((p - self.zero_mass) / self._body))

    def draws(self, n: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        u = rng.random(n)
        body = np.asarray(self.dist.rvs(size=n, random_state=rng), dtype=float)
        cured = u >= self.zero_mass + self._body
        return np.where(u < self.zero_mass, 0.0, np.where(cured, math.inf, body))


@dataclass(frozen=True, eq=False)
class EmpiricalWait:
    """Kaplan–Meier estimate (statsmodels ``SurvfuncRight``) of T from one throttle group's
    ``usect_delayed`` (µs): a delay at or above its event's ``usec_timeout`` is
    right-censored there (groups pooling several timeouts censor each delay at its own).
    ``support_limit_us`` is the largest timeout. The mass left beyond it is taken as never
    woken (``cure_fraction``: an upper bound of the true cure fraction, so S(τ) and
    E[min(T, τ)] beyond the limit are upper bounds too). Delays are whole jiffies
    (``jiffies_to_usecs``), taken as exact. Build with :meth:`from_delays`."""

    reason: str
    values_us: np.ndarray
    timeouts_us: np.ndarray
    counts: np.ndarray
    times_us: np.ndarray = field(repr=False)
    surv: np.ndarray = field(repr=False)

    @classmethod
    def from_delays(
        cls,
        reason: str,
        delays_us: Sequence[float] | np.ndarray,
        timeout_us: float | Sequence[float] | np.ndarray,
        counts: Sequence[int] | np.ndarray | None = None,
        *,
        source: str = "<delays>",
    ) -> EmpiricalWait:
        """KM of ``delays_us`` (optionally with multiplicities ``counts``), each censored at
        ``timeout_us`` (one value, or one per delay)."""
        d = np.asarray(delays_us, dtype=float)
        w = np.ones_like(d) if counts is None else np.asarray(counts, dtype=float)
        if d.size == 0 or w.sum() <= 0:
            raise InputError(source, f"throttle reason {reason}: no delays to estimate from")
        if np.isnan(d).any() or (d < 0).any():
            raise InputError(source, f"throttle reason {reason}: negative or missing delay")
        tau = np.broadcast_to(np.asarray(timeout_us, dtype=float), d.shape)
        if not (tau > 0).all():
            raise InputError(source, f"throttle reason {reason}: a timeout ≤ 0 µs")
        rows, inverse = np.unique(
            np.column_stack([np.minimum(d, tau), tau]), axis=0, return_inverse=True
        )
        merged = np.bincount(inverse.ravel(), weights=w)
        values, timeouts = rows[:, 0], rows[:, 1]
        km = SurvfuncRight(values, (values < timeouts).astype(float), freq_weights=merged)
        return cls(reason, values, timeouts, merged, np.asarray(km.surv_times), km.surv_prob)

    @property
    def zero_mass(self) -> float:
        return float(1.0 - self.surv[0]) if self.times_us.size and self.times_us[0] == 0 else 0.0

    @property
    def cure_fraction(self) -> float:
        return float(self.surv[-1]) if self.surv.size else 1.0

    @property
    def support_limit_us(self) -> float:
        return float(self.timeouts_us.max())

    def survival(self, t_us: np.ndarray) -> np.ndarray:
        # A step function 1 before the first event time; with no event at all (every sleep
        # ran to its timeout) it is 1 everywhere.
        steps = np.concatenate(([1.0], self.surv))
        idx = np.searchsorted(self.times_us, np.asarray(t_us, dtype=float), side="right")
        return steps[idx]

    def timed_out(self, tau_us: float) -> float:
        # S(tau-): the KM steps strictly before tau, so delays recorded at exactly tau count
        # as ended by the timeout, as the trace counts them (usect_delayed >= usec_timeout).
        steps = np.concatenate(([1.0], self.surv))
        return float(steps[np.searchsorted(self.times_us, float(tau_us), side="left")])

    def restricted_mean_us(self, tau_us: float) -> float:
        # The integral of the KM step function from 0 to tau.
        knots = np.concatenate(
            ([0.0], self.times_us[(self.times_us > 0) & (self.times_us < tau_us)])
        )
        widths = np.diff(np.append(knots, max(tau_us, 0.0)))
        return float(np.sum(self.survival(knots) * widths))

    def quantile_us(self, p: float) -> float:
        cdf = 1.0 - self.surv
        idx = int(np.searchsorted(cdf, p - 1e-12, side="left"))
        return 0.0 if p <= 0 else (float(self.times_us[idx]) if idx < cdf.size else math.inf)

    def draws(self, n: int, seed: int) -> np.ndarray:
        u = np.random.default_rng(seed).random(n)
        idx = np.searchsorted(1.0 - self.surv, u, side="left")
        # Past the last event time (the mass beyond the timeout): never woken.
        return np.append(self.times_us, math.inf)[idx]

    def resample(self, n: int, seed: int) -> tuple[EmpiricalWait, ...]:
        """``n`` bootstrap replicates: the group's delays drawn with replacement (treated as
        independent, which delays of a few tasks in one run are not: the spread across runs
        is the check)."""
        rng = np.random.default_rng(seed)
        total = round(float(self.counts.sum()))
        out = []
        for _ in range(n):
            counts = rng.multinomial(total, self.counts / self.counts.sum())
            keep = counts > 0
            out.append(
                EmpiricalWait.from_delays(
                    self.reason, self.values_us[keep], self.timeouts_us[keep], counts[keep]
                )
            )
        return tuple(out)


def group_waits(
    events: pl.DataFrame, *, source: str = "<events>"
) -> dict[tuple[str, str, str], EmpiricalWait]:
    """An :class:`EmpiricalWait` per (event, context, reason) of
    :func:`analysis.metrics.throttle.throttle_events` (a trace's or a mail histogram's,
    whose ``count`` weights each delay); each delay censored at its own ``usec_timeout``.
    Rows without a delay (a histogram's totals block) are left out."""
    known = events.filter(pl.col("delay_us").is_not_null() & pl.col("usec_timeout").is_not_null())
    return {
        (str(event), str(context), str(reason)): EmpiricalWait.from_delays(
            str(reason),
            group["delay_us"].to_numpy(),
            group["usec_timeout"].to_numpy(),
            group["count"].to_numpy(),
            source=source,
        )
        for (event, context, reason), group in known.group_by(
            "event", "context", "reason", maintain_order=True
        )
    }


@dataclass(frozen=True)
class Estimate:
    """A value with its percentile-bootstrap interval (``low``/``high`` None without one)."""

    value: float
    low: float | None = None
    high: float | None = None


def _estimate(value: float, replicates: Sequence[float], level: float) -> Estimate:
    if not replicates:
        return Estimate(value)
    a = np.asarray(replicates, dtype=float)
    lo, hi = np.percentile(a, [50 * (1 - level), 50 * (1 + level)])
    return Estimate(value, float(lo), float(hi))


@dataclass(frozen=True)
class TimeoutPrediction:
    """What timeout ``tau_us`` would do to one reason's sleepers. ``stall_quantiles_us`` are
    quantiles of the stall min(T, τ); ``extrapolated`` when τ exceeds what the wait's data
    covers (its ``support_limit_us``)."""

    reason: str
    tau_us: float
    p_timeout: Estimate
    mean_stall_us: Estimate
    stall_quantiles_us: tuple[tuple[float, Estimate], ...]
    extrapolated: bool
    replicates: int


def _timeout_values(wait: LatentWait, tau: float, probs: Sequence[float]) -> list[float]:
    stall_q = [min(wait.quantile_us(p), tau) for p in probs]
    return [wait.timed_out(tau), wait.restricted_mean_us(tau), *stall_q]


def predict_timeout(
    wait: LatentWait,
    tau_us: float,
    *,
    replicates: Sequence[LatentWait] = (),
    probs: Sequence[float] = (0.5, 0.9, 0.99),
    level: float = 0.95,
) -> TimeoutPrediction:
    """P(timeout) = P(T ≥ τ) (:meth:`LatentWait.timed_out`, as the trace counts it),
    E[min(T, τ)] (µs) and stall quantiles under timeout ``tau_us``.

    Intervals are percentiles of the same quantities over ``replicates`` (bootstrap
    replicates of ``wait``: :meth:`EmpiricalWait.resample`, or a fit's bootstrap).
    """
    if not tau_us > 0:
        raise ValueError(f"timeout must be > 0 µs, got {tau_us}")
    point = _timeout_values(wait, tau_us, probs)
    reps = np.array([_timeout_values(r, tau_us, probs) for r in replicates]).reshape(
        len(replicates), len(point)
    )
    est = [_estimate(v, list(reps[:, i]), level) for i, v in enumerate(point)]
    return TimeoutPrediction(
        reason=wait.reason,
        tau_us=float(tau_us),
        p_timeout=est[0],
        mean_stall_us=est[1],
        stall_quantiles_us=tuple(zip(probs, est[2:], strict=True)),
        extrapolated=tau_us > wait.support_limit_us,
        replicates=len(replicates),
    )


@dataclass(frozen=True)
class Observation:
    """One trace of a capture, reduced to what the cycle model needs.

    ``cycles``: one row per throttle (``reason``, ``usec_timeout``, ``delay_us``, and the
    pages ``scanned``/``reclaimed`` by the same pid's ``mm_vmscan_lru_shrink_inactive`` after
    it woke and before its next throttle). ``pre_scanned``/``pre_reclaimed``: pages of scans
    before the pid's first throttle. ``reclaim_s``: closed reclaim intervals (all contexts).
    ``writeback_pps``: vmstat ``nr_written`` per second; ``dirty_pool_pages``: mean dirty +
    writeback pages (cgroup memory.stat, else /proc/vmstat). ``blocked`` sums
    ``nr_dirty + nr_writeback + nr_immediate`` over the scans (pages). ``config_hz``:
    CONFIG_HZ of the capturing kernel (kconfig), None when not saved."""

    source: str
    cycles: pl.DataFrame
    pre_scanned: int
    pre_reclaimed: int
    blocked: int
    reclaim_s: float
    writeback_pps: float
    dirty_pool_pages: float
    config_hz: int | None = None

    @property
    def scanned(self) -> int:
        return int(self.cycles["scanned"].sum()) + self.pre_scanned

    @property
    def reclaimed(self) -> int:
        return int(self.cycles["reclaimed"].sum()) + self.pre_reclaimed

    @property
    def velocity_pps(self) -> float:
        """Observed pages scanned per second of reclaim."""
        return self.scanned / self.reclaim_s

    @property
    def efficiency(self) -> float:
        """Observed reclaimed / scanned."""
        return self.reclaimed / self.scanned

    @property
    def blocked_share(self) -> float:
        """Share of scanned pages found dirty, under writeback or marked for immediate
        reclaim: what throttling waits on, and most of 1 − efficiency."""
        return self.blocked / self.scanned


def cycles_of(shrink: pl.DataFrame, throttled: pl.DataFrame) -> tuple[pl.DataFrame, int, int]:
    """Attribute each scan (``pid``, ``ts_ns``, ``nr_scanned``, ``nr_reclaimed``) to the same
    pid's latest earlier throttle (``mm_vmscan_throttled`` fires at wake-up, so its ``ts_ns``
    starts the cycle). Returns the per-throttle cycles and the pre-throttle pages."""
    marks = throttled.sort("ts_ns").with_row_index("cycle")
    scans = shrink.select(
        pl.col("pid").cast(pl.Int32), pl.col("ts_ns").cast(pl.Int64), "nr_scanned", "nr_reclaimed"
    ).sort("ts_ns")
    joined = scans.join_asof(
        marks.select(pl.col("pid").cast(pl.Int32), pl.col("ts_ns").cast(pl.Int64), "cycle"),
        on="ts_ns",
        by="pid",
        strategy="backward",
        check_sortedness=False,  # both sides sorted by ts_ns just above
    )
    per = joined.group_by("cycle").agg(
        scanned=pl.col("nr_scanned").sum(), reclaimed=pl.col("nr_reclaimed").sum()
    )
    pre = per.filter(pl.col("cycle").is_null())
    cycles = marks.join(per.drop_nulls("cycle"), on="cycle", how="left").select(
        "reason",
        pl.col("usec_timeout").cast(pl.Float64),
        pl.col("delay_us").cast(pl.Float64),
        pl.col("scanned").fill_null(0).cast(pl.Int64),
        pl.col("reclaimed").fill_null(0).cast(pl.Int64),
    )
    pages = (int(pre["scanned"].sum() or 0), int(pre["reclaimed"].sum() or 0))
    return cycles, *pages


@dataclass(frozen=True)
class Window:
    """A stretch of an iteration: ``mmlab capture``'s phase with ``workers`` workers
    (mmlab.json ``phases``: trace-clock and epoch bounds), or the whole iteration (None)."""

    workers: int | None = None
    trace_s: tuple[float, float] | None = None
    epoch_s: tuple[float, float] | None = None


def phase_windows(iteration: mmtests.Iteration, workers: int | None) -> list[Window]:
    """The whole iteration (``workers`` None), else its phases run with ``workers``."""
    if workers is None:
        return [Window()]
    meta = iteration.metadata
    phases = [p for p in (meta.phases if meta else ()) if p.workers == workers]
    if not phases:
        raise InputError(iteration.path, f"no phase with {workers} workers in {MMLAB_JSON}")
    windows = []
    for p in phases:
        bounds = (p.start_trace_s, p.end_trace_s, p.start_epoch_s, p.end_epoch_s)
        if None in bounds:
            raise InputError(meta.path, f"the phase of {workers} workers lacks its bounds")
        windows.append(Window(workers, bounds[:2], bounds[2:]))  # type: ignore[arg-type]
    return windows


def _within(frame: pl.DataFrame, column: str, bounds: tuple[float, float] | None) -> pl.DataFrame:
    return frame if bounds is None else frame.filter(pl.col(column).is_between(*bounds))


def _writeback_and_pool(
    iteration: mmtests.Iteration, test: str, window: Window
) -> tuple[float, float]:
    monitor = iteration.vmstat_monitor(test)
    if monitor is None or "nr_written" not in monitor.names:
        raise InputError(iteration.path, f"no proc-vmstat-{test} monitor with nr_written")
    frame = _within(monitor.frame, "epoch_s", window.epoch_s)
    if frame.height < 2:
        raise InputError(iteration.path, f"fewer than 2 proc-vmstat-{test} samples in the window")
    dt = float(frame["epoch_s"][-1] - frame["epoch_s"][0])
    written = float(frame["nr_written"][-1] - frame["nr_written"][0])
    memcg = sorted(iteration.path.glob(f"memcg-stat-{test}*"))
    if memcg:
        stat = _within(vmstat.read(memcg[0]).frame, "epoch_s", window.epoch_s)
        pool = float(((stat["dirty"] + stat["writeback"]) / PAGE_BYTES).mean())
    else:
        pool = float((frame["nr_dirty"] + frame["nr_writeback"]).mean())
    return written / dt, pool


def _reclaim_ns(closed: pl.DataFrame, bounds: tuple[float, float] | None) -> int:
    """Closed reclaim time, each interval clipped to ``bounds`` (trace seconds)."""
    if bounds is None:
        return int(closed["duration_ns"].sum() or 0)
    lo, hi = (int(b * 1e9) for b in bounds)
    clipped = pl.min_horizontal("end_ts_ns", pl.lit(hi)) - pl.max_horizontal(
        "begin_ts_ns", pl.lit(lo)
    )
    return int(closed.select(clipped.clip(lower_bound=0)).sum().item() or 0)


def observe_iteration(
    iteration: mmtests.Iteration, *, workers: int | None = None
) -> list[Observation]:
    """One :class:`Observation` per trace of an mmtests/``mmlab capture`` iteration, or per
    trace and phase with ``workers`` workers (``mmlab capture --workers 4,8,16``)."""
    # Imported here: the trace reader pulls in NumPy, Polars and PyArrow, which `mmlab --help`
    # must not pay for.
    from analysis.ingest import ftrace

    out = []
    for test, path in iteration_traces(iteration):
        trace = ftrace.read(path)
        if SHRINK not in trace.event_names:
            raise InputError(path, f"no {SHRINK} events: nothing to measure scanning by")
        reclaim = pairing.reclaim_intervals(trace)
        closed = pl.concat(
            [
                s.intervals.filter(pl.col("status") == "closed").select(
                    "begin_ts_ns", "end_ts_ns", "duration_ns"
                )
                for s in reclaim.values()
            ]
        )
        events = throttle.throttle_events(trace, pairing.all_intervals(reclaim)).filter(
            pl.col("delay_us").is_not_null()
        )
        for window in phase_windows(iteration, workers):
            ns = None if window.trace_s is None else tuple(t * 1e9 for t in window.trace_s)
            shrink = _within(trace.events(SHRINK), "ts_ns", ns)
            reclaim_ns = _reclaim_ns(closed, window.trace_s)
            if reclaim_ns <= 0:
                raise InputError(path, "no closed reclaim interval: reclaim time unknown")
            cycles, pre_s, pre_r = cycles_of(shrink, _within(events, "ts_ns", ns))
            blocked = shrink.select(pl.sum_horizontal("nr_dirty", "nr_writeback", "nr_immediate"))
            w, pool = _writeback_and_pool(iteration, test, window)
            source = str(path) if workers is None else f"{path}#workers={workers}"
            out.append(
                Observation(
                    source,
                    cycles,
                    pre_s,
                    pre_r,
                    int(blocked.sum().item()),
                    reclaim_ns / 1e9,
                    w,
                    pool,
                    iteration.config_hz,
                )
            )
    return out


def observe(path: str | Path, *, workers: int | None = None) -> list[Observation]:
    """Observations of every iteration below ``path`` (capture, run or ``iter-N``), of its
    phases with ``workers`` workers only when given."""
    found = [
        obs
        for run in mmtests.find_runs(path)
        for iteration in run.iterations
        for obs in observe_iteration(iteration, workers=workers)
    ]
    if not found:
        raise InputError(path, "no trace in any iteration below this path")
    return found


@dataclass(frozen=True)
class ReasonCycle:
    """One throttle reason's part of the cycle: how often (``throttles_per_page``), what
    share of scanned pages its cycles hold (``page_share``), the latent wait, the efficiency
    GLM ``logit(e) = a + b·x`` (``coef`` = (a, b), x = sleep·w/P) and the observed timeout
    (the largest, when the reason's throttles had several)."""

    reason: str
    timeout_us: float
    throttles_per_page: float
    page_share: float
    coef: tuple[float, float]
    wait: LatentWait


@dataclass(frozen=True)
class CycleModel:
    """A calibrated reclaim cycle. ``scan_s_per_page`` = 1/v; ``pre_*`` are the scans before
    any throttle; ``writeback_pps``/``dirty_pool_pages`` the environment it was measured in;
    ``replicates`` are bootstrap models (cycles resampled; 1/v and the environment fixed)."""

    sources: tuple[str, ...]
    scan_s_per_page: float
    pre_share: float
    pre_efficiency: float
    writeback_pps: float
    dirty_pool_pages: float
    reasons: tuple[ReasonCycle, ...]
    observed_velocity_pps: float
    observed_efficiency: float
    replicates: tuple[CycleModel, ...] = ()

    def reason(self, name: str) -> ReasonCycle:
        for r in self.reasons:
            if r.reason == name:
                return r
        known = ", ".join(r.reason for r in self.reasons) or "none"
        raise ValueError(f"no throttle reason {name!r} in the calibration (have: {known})")


def _glm_coef(x: np.ndarray, scanned: np.ndarray, reclaimed: np.ndarray) -> tuple[float, float]:
    keep = scanned > 0
    if keep.sum() < 3 or np.ptp(x[keep]) == 0:
        e = reclaimed[keep].sum() / max(scanned[keep].sum(), 1)
        return float(np.log(e / (1 - e))) if 0 < e < 1 else 0.0, 0.0
    endog = np.column_stack([reclaimed[keep], scanned[keep] - reclaimed[keep]])
    fit = sm.GLM(endog, sm.add_constant(x[keep]), family=sm.families.Binomial()).fit()
    a, b = fit.params
    return float(a), float(b)


def _reason_cycles(cycles: pl.DataFrame, pages: float, x_per_us: float) -> tuple[ReasonCycle, ...]:
    out = []
    for (reason,), group in cycles.group_by("reason", maintain_order=True):
        timeouts = group["usec_timeout"].to_numpy()
        delays = group["delay_us"].to_numpy()
        scanned = group["scanned"].to_numpy().astype(float)
        reclaimed = group["reclaimed"].to_numpy().astype(float)
        out.append(
            ReasonCycle(
                reason=str(reason),
                timeout_us=float(timeouts.max()),
                throttles_per_page=group.height / pages,
                page_share=scanned.sum() / pages,
                coef=_glm_coef(np.minimum(delays, timeouts) * x_per_us, scanned, reclaimed),
                wait=EmpiricalWait.from_delays(str(reason), delays, timeouts),
            )
        )
    return tuple(sorted(out, key=lambda r: r.reason))


def calibrate(
    observations: Sequence[Observation], *, bootstrap: int = 0, seed: int = 0
) -> CycleModel:
    """Calibrate the cycle model on the pooled ``observations`` of one capture."""
    if not observations:
        raise ValueError("calibrate needs at least one observation")
    cycles = pl.concat([o.cycles for o in observations], how="vertical")
    pre_s = sum(o.pre_scanned for o in observations)
    pre_r = sum(o.pre_reclaimed for o in observations)
    pages = float(cycles["scanned"].sum()) + pre_s
    reclaim_s = sum(o.reclaim_s for o in observations)
    sleep_s = float(cycles.select(pl.min_horizontal("delay_us", "usec_timeout")).sum().item()) / 1e6
    w = float(np.mean([o.writeback_pps for o in observations]))
    pool = float(np.mean([o.dirty_pool_pages for o in observations]))
    x_per_us = w / pool / 1e6
    model = CycleModel(
        sources=tuple(o.source for o in observations),
        scan_s_per_page=(reclaim_s - sleep_s) / pages,
        pre_share=pre_s / pages,
        pre_efficiency=pre_r / pre_s if pre_s else 0.0,
        writeback_pps=w,
        dirty_pool_pages=pool,
        reasons=_reason_cycles(cycles, pages, x_per_us),
        observed_velocity_pps=pages / reclaim_s,
        observed_efficiency=(float(cycles["reclaimed"].sum()) + pre_r) / pages,
    )
    if not bootstrap:
        return model
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(bootstrap):
        sample = cycles[rng.integers(0, cycles.height, cycles.height)]
        pages_b = float(sample["scanned"].sum()) + pre_s
        reps.append(
            replace(
                model,
                pre_share=pre_s / pages_b,
                reasons=_reason_cycles(sample, pages_b, x_per_us),
            )
        )
    return replace(model, replicates=tuple(reps))


@dataclass(frozen=True)
class CyclePrediction:
    """Velocity (pages scanned per second of reclaim) and efficiency (reclaimed/scanned) at
    timeouts ``taus_us`` (reason → µs; reasons not named keep their observed timeout).
    ``runs``: (velocity, efficiency) of the same prediction by models calibrated on one run
    each (:func:`per_run`), whose spread is the run-level uncertainty."""

    taus_us: tuple[tuple[str, float], ...]
    velocity_pps: Estimate
    efficiency: Estimate
    extrapolated: bool
    runs: tuple[tuple[float, float], ...] = ()

    def run_sd(self) -> tuple[float | None, float | None]:
        """Sample sd of velocity and of efficiency over :attr:`runs` (None below 2)."""
        if len(self.runs) < 2:
            return None, None
        v, e = np.array(self.runs).T
        return float(np.std(v, ddof=1)), float(np.std(e, ddof=1))


def _cycle_values(
    model: CycleModel, taus: Mapping[str, float], x_per_us: float, seed: int
) -> tuple[float, float]:
    seconds_per_page = model.scan_s_per_page
    efficiency = model.pre_share * model.pre_efficiency
    for r in model.reasons:
        tau = taus.get(r.reason, r.timeout_us)
        seconds_per_page += r.throttles_per_page * r.wait.restricted_mean_us(tau) / 1e6
        sleeps = np.minimum(r.wait.draws(MC_DRAWS, seed), tau)
        a, b = r.coef
        efficiency += r.page_share * float(np.mean(expit(a + b * sleeps * x_per_us)))
    return 1.0 / seconds_per_page, float(efficiency)


def predict_cycle(
    model: CycleModel,
    taus_us: Mapping[str, float] | None = None,
    *,
    writeback_pps: float | None = None,
    dirty_pool_pages: float | None = None,
    waits: Mapping[str, LatentWait] | None = None,
    throttles_per_page: Mapping[str, float] | None = None,
    level: float = 0.95,
    seed: int = 0,
) -> CyclePrediction:
    """Velocity and efficiency at ``taus_us``, in the calibration's environment unless
    another writeback rate, dirty pool, latent waits or throttle frequencies (reason →
    wait, reason → throttles per scanned page) are given."""
    taus = dict(taus_us or {})
    for name, tau in taus.items():
        model.reason(name)
        if not tau > 0:
            raise ValueError(f"timeout for {name} must be > 0 µs, got {tau}")
    w = model.writeback_pps if writeback_pps is None else writeback_pps
    pool = model.dirty_pool_pages if dirty_pool_pages is None else dirty_pool_pages
    x_per_us = w / pool / 1e6

    def retarget(m: CycleModel) -> CycleModel:
        given_wait, given_rate = waits or {}, throttles_per_page or {}
        return replace(
            m,
            reasons=tuple(
                replace(
                    r,
                    wait=given_wait.get(r.reason, r.wait),
                    throttles_per_page=given_rate.get(r.reason, r.throttles_per_page),
                )
                for r in m.reasons
            ),
        )

    v, e = _cycle_values(retarget(model), taus, x_per_us, seed)
    reps = [_cycle_values(retarget(m), taus, x_per_us, seed) for m in model.replicates]
    extrapolated = any(
        taus.get(r.reason, r.timeout_us) > retarget(model).reason(r.reason).wait.support_limit_us
        for r in model.reasons
    )
    return CyclePrediction(
        taus_us=tuple(sorted(taus.items())),
        velocity_pps=_estimate(v, [r[0] for r in reps], level),
        efficiency=_estimate(e, [r[1] for r in reps], level),
        extrapolated=extrapolated,
    )


def per_run(
    prediction: CyclePrediction, models: Sequence[CycleModel], *, seed: int = 0
) -> CyclePrediction:
    """``prediction`` with the same timeouts predicted by ``models`` (each calibrated on one
    run, in its own environment) attached as :attr:`CyclePrediction.runs`."""
    taus = dict(prediction.taus_us)
    values = tuple(
        _cycle_values(m, taus, m.writeback_pps / m.dirty_pool_pages / 1e6, seed) for m in models
    )
    return replace(prediction, runs=values)


def timeout_curve(model: CycleModel, reason: str, taus_us: Sequence[float]) -> pl.DataFrame:
    """One row per timeout of ``reason`` (others at their observed timeout): ``p_timeout``,
    ``mean_stall_us``, ``velocity_pps``, ``efficiency``, each with ``*_low``/``*_high``
    (bootstrap, when the model has replicates), and ``extrapolated``."""
    cycle = model.reason(reason)
    reps = [m.reason(reason).wait for m in model.replicates]
    rows = []
    for tau in taus_us:
        wait = predict_timeout(cycle.wait, tau, replicates=reps)
        flow = predict_cycle(model, {reason: tau})
        row: dict[str, object] = {"reason": reason, "tau_us": float(tau)}
        for key, est in (
            ("p_timeout", wait.p_timeout),
            ("mean_stall_us", wait.mean_stall_us),
            ("velocity_pps", flow.velocity_pps),
            ("efficiency", flow.efficiency),
        ):
            row |= {key: est.value, f"{key}_low": est.low, f"{key}_high": est.high}
        rows.append(row | {"extrapolated": flow.extrapolated})
    return pl.DataFrame(rows)
