"""The patched-kernel sweep scored once: each model of the calibration capture against the
kernels that ran a setting, and the significance of each knob's effect (the paper's
results; :mod:`analysis.report.paper.sweep` renders them, and a notebook may reuse them).

The sweep is a folder of ``mmlab capture --kernel`` captures of one patched kernel
(``data/vm-6.12``: ``docs/patched-kernels.md``), each with its ``vm.json`` provenance. The
calibration capture ran the defaults. Captures whose read-back knobs touch only
``vm.reclaim_throttle_*`` (or none) validate the timeout model, those touching only
``vm.shrinker_deferred_divisor`` (or none) the shrinker replay, each by its model's one
recipe (:mod:`analysis.models.throttle_validation`,
:mod:`analysis.models.shrinker_validation`); a capture at the defaults is the A/A check of
both (``docs/model-validation.md`` "Throttle timeout", "Shrinker deferral"). The probe
latency of every capture is compared with the calibration's by ``mmlab compare``'s
run-level machinery (:func:`analysis.stats.significance.compare_table`).

:func:`knob_sweep` scores the sweep; what the paper quotes beside the scores (the
Benjamini–Hochberg q of every knob effect, the captures in each role, the A/A drift, the
calibration's P(timeout) spread, the probe rows' summary) are cached properties of the
:class:`KnobSweep`, computed once from it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats
from statsmodels.stats.multitest import multipletests

from analysis.errors import InputError
from analysis.ingest import benchmarks
from analysis.ingest.capture_meta import read_iteration, the_vm_below
from analysis.ingest.captures import traces_below
from analysis.ingest.mmtests import Run
from analysis.metrics.throttle import short_reason
from analysis.models import shrinker_validation, throttle_validation
from analysis.models.run_scoring import half_width
from analysis.models.shrinker_validation import ShrinkerScore, divisor_capture
from analysis.models.throttle import Observation, observe
from analysis.models.throttle_validation import Calibration, QuantityScore, RunValues, run_values
from analysis.stats.blocked import BlockedEffects, blocked_effects
from analysis.stats.significance import RowComparison, compare_table, min_attainable_p

__all__ = [
    "CALIBRATION",
    "DIVISOR_KNOB",
    "LEVEL",
    "RESAMPLES",
    "THROTTLE_KNOB",
    "EmulationCost",
    "KnobSweep",
    "ProbeSummary",
    "QuantityScore",
    "Roles",
    "RunValues",
    "SharesSpread",
    "ShrinkerScore",
    "SweepCapture",
    "emulation_cost",
    "knob_sweep",
    "latency_comparisons",
    "sweep_capture",
]

CALIBRATION = "aa1"
# Two-stage bootstrap resamples of the latency change CI. Measured on the bundled sweep:
# seeds 0 and 1 print the same ten intervals at the paper's digits (and at one decimal)
# already at 2 000 resamples (1 s); 20 000 (7 s) cuts the Monte-Carlo error of a bound by
# another factor of about three, a margin for other data (tests/test_paper_sweep.py checks
# two seeds).
RESAMPLES = 20_000
# The false discovery rate of the knob effects and the level of each latency comparison.
LEVEL = 0.05
THROTTLE_KNOB = "vm.reclaim_throttle_"
DIVISOR_KNOB = "vm.shrinker_deferred_divisor"
# The knob whose shortest and longest read-back values are the short and long timeouts.
_TIMEOUT_KNOB = f"{THROTTLE_KNOB}writeback_ms"


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
    # The idle probe, measured once per capture before its first iteration
    # (``probe.idle_overhead`` of mmlab.json): the median µs to map and fault one mapping,
    # and to retouch it (the probe's loop alone); the guest's boot (vm.json, host clock).
    idle_probe_us: float | None = None
    idle_loop_us: float | None = None
    guest_boot_s: float | None = None


@dataclass(frozen=True)
class EmulationCost:
    """How much slower the emulated guest does the same CPU work than the host, measured by
    the latency probe on an idle cgroup, once per capture (``probe.idle_overhead``): the
    median over captures of the median µs to map and fault one mapping (``idle``: page
    faults, zeroing, the kernel's allocation path; with the guest captures' range) and to
    retouch it (``loop``: the probe's own instructions). The throttle timeouts are jiffies
    of a clock that emulation does not slow, so a timeout spans ``slowdown`` times less of
    the guest kernel's work than of the host's."""

    guest_captures: int
    host_captures: int
    host_cpu: str
    guest_idle_us: float
    guest_idle_range_us: tuple[float, float]
    host_idle_us: float
    guest_loop_us: float
    host_loop_us: float
    guest_boot_s: float | None
    map_bytes: int

    @property
    def slowdown(self) -> float:
        return self.guest_idle_us / self.host_idle_us

    @property
    def loop_slowdown(self) -> float:
        return self.guest_loop_us / self.host_loop_us


@dataclass(frozen=True)
class Roles:
    """The captures the paper names by role: the shortest and longest WRITEBACK timeouts,
    the A/A capture (no knob changed) and the divisor-one and divisor-priority captures."""

    short: SweepCapture
    long: SweepCapture
    aa: SweepCapture
    div_one: SweepCapture
    div_prio: SweepCapture


@dataclass(frozen=True)
class SharesSpread:
    """The calibration runs' own P(timeout) shares (its one-run models' predictions at
    its timeout): how many, their range and sd, the half-width of the run-level
    prediction interval they give (:func:`~analysis.models.run_scoring.half_width`), and
    the share of new runs a distribution-free interval from n runs (their range) covers,
    (n − 1)/(n + 1)."""

    runs: int
    low: float
    high: float
    sd: float
    half_width: float
    range_coverage: float


@dataclass(frozen=True)
class ProbeSummary:
    """The probe latency rows (µs) of every capture against the calibration: how many,
    how many were flagged improved or regressed, the smallest p, and the row whose change
    CI is widest."""

    comparisons: int
    flags: int
    min_p: float
    widest: RowComparison
    # The smallest and largest minimum detectable change (RowComparison.mde) of the rows.
    mde_low: float
    mde_high: float


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

    @cached_property
    def q(self) -> dict[tuple[str, str], float]:
        """Benjamini–Hochberg q of every knob-effect permutation p of the throttle and
        shrinker scores, keyed by (capture, quantity). The family is all of them: each asks
        whether a capture's setting moved a quantity from the calibration's runs, and they
        are read together to say which knob did anything."""
        tests = [(s.capture, s.quantity, s.change_p) for s in (*self.throttle, *self.shrinker)]
        tests = [t for t in tests if t[2] is not None]
        _, q, _, _ = multipletests([p for *_, p in tests], method="fdr_bh")
        return {(c, quantity): float(v) for (c, quantity, _), v in zip(tests, q, strict=True)}

    @cached_property
    def kept(self) -> tuple[tuple[str, str], ...]:
        """The (capture, quantity) effects whose q is at most :data:`LEVEL`."""
        return tuple(k for k, v in self.q.items() if v <= LEVEL)

    @cached_property
    def roles(self) -> Roles:
        """The captures in each role the paper names."""

        def divisor(value: str) -> SweepCapture:
            return next(c for c in self.captures if c.knobs.get(DIVISOR_KNOB) == value)

        timeouts = [c for c in self.captures if _TIMEOUT_KNOB in c.knobs]
        return Roles(
            short=min(timeouts, key=lambda c: float(c.knobs[_TIMEOUT_KNOB])),
            long=max(timeouts, key=lambda c: float(c.knobs[_TIMEOUT_KNOB])),
            aa=next(c for c in self.captures if not c.knobs),
            div_one=divisor("1"),
            div_prio=divisor("priority"),
        )

    def tau_us(self, capture: str) -> float:
        """The WRITEBACK timeout ``capture`` ran (µs), as its throttle scores read it."""
        return next(s.tau_us for s in self.throttle if s.capture == capture)

    @cached_property
    def efficiency_drift(self) -> float:
        """The A/A drift: the A/A capture's mean efficiency minus the calibration's, same
        kernel and settings, the floor a knob effect between two captures must exceed."""
        aa = self.roles.aa.name
        other = next(s for s in self.throttle if s.capture == aa and s.quantity == "efficiency")
        calibration = np.array([r.efficiency for r in self.calibration_runs])
        return float(np.mean(other.observed)) - float(calibration.mean())

    @cached_property
    def shares_spread(self) -> SharesSpread:
        """Why the calibration's P(timeout) intervals span [0, 1]: the spread of its one-run
        predictions."""
        shares = np.array([r.p_timeout for r in self.calibration_runs])
        n = shares.size
        return SharesSpread(
            runs=n,
            low=float(shares.min()),
            high=float(shares.max()),
            sd=float(np.std(shares, ddof=1)),
            half_width=half_width(shares),
            range_coverage=(n - 1) / (n + 1),
        )

    @cached_property
    def min_p(self) -> float:
        """The smallest permutation p the calibration and the smallest capture can give."""
        return min_attainable_p(
            self.calibration.iterations, min(c.iterations for c in self.captures)
        )

    @cached_property
    def max_kswapd_share(self) -> float:
        """The largest share of shrinker calls kswapd made in any run of the divisor
        captures."""
        return max(max(s.observed) for s in self.shrinker if s.quantity == "kswapd_share")

    @cached_property
    def probe(self) -> ProbeSummary:
        """The probe latency rows (µs) summarised."""
        rows = [r for r in self.latency if r.unit == "us"]
        mdes = [r.mde for r in rows if r.mde is not None]
        return ProbeSummary(
            comparisons=len(rows),
            flags=sum(r.verdict in ("improved", "regressed") for r in rows),
            min_p=min(r.p for r in rows if r.p is not None),
            widest=max(rows, key=lambda r: r.change_ci[1] - r.change_ci[0] if r.change_ci else 0),
            mde_low=min(mdes),
            mde_high=max(mdes),
        )

    @cached_property
    def mde(self) -> dict[tuple[str, str], BlockedEffects]:
        """The minimum detectable effect of every timeout capture's quantity against the
        calibration, keyed by (capture, quantity): the calibration's and the capture's runs
        as two levels of one block (:func:`~analysis.stats.blocked.blocked_effects`, 80 %
        power at :data:`LEVEL`), its only level's ``mde`` a relative change when every
        value is positive (``scale`` log), else a difference in the quantity's unit. What a
        knob effect that was not found could still have been."""
        cal = self.calibration.name
        out = {}
        for s in self.throttle:
            reference = [r.value(s.quantity) for r in self.calibration_runs]
            frame = pl.DataFrame(
                {
                    "level": [cal] * len(reference) + [s.capture] * len(s.observed),
                    "block": ["one"] * (len(reference) + len(s.observed)),
                    "value": [*reference, *s.observed],
                }
            )
            out[(s.capture, s.quantity)] = blocked_effects(frame, cal, alpha=LEVEL)
        return out


def sweep_capture(path: Path) -> SweepCapture:
    """The :class:`SweepCapture` of the capture folder ``path`` (one ``vm.json`` below it)."""
    vm = the_vm_below(path)
    first = sorted(vm.path.parent.glob("iter-*"))
    meta = read_iteration(first[0]) if first else None
    build, guest = vm.kernel_build, vm.guest
    needed = {
        "kernel_release": build.kernel_release, "source_package": build.source_package,
        "config_hz": build.config_hz, "accelerator": vm.accelerator, "guest cpus": guest.cpus,
        "guest memory_mb": guest.memory_mb, "an iteration's mmlab.json": meta,
    }  # fmt: skip
    if meta is not None:
        needed |= {"workers": meta.workers or None, "duration_s": meta.duration_s,
                   "limit_mb": meta.limit_mb, "slab_files": meta.slab_files}  # fmt: skip
    if missing := [k for k, v in needed.items() if v is None]:
        raise InputError(vm.path, f"not an mmlab capture --kernel capture: no {', '.join(missing)}")
    boot = vm.guest_boot_s
    idle = meta.probe_overhead if meta is not None else None
    return SweepCapture(
        name=path.name, path=path, knobs=vm.knobs(), iterations=len(traces_below(path)),
        kernel=str(build.kernel_release), source_package=str(build.source_package),
        config_hz=int(build.config_hz), accel=str(vm.accelerator), guest_cpus=int(guest.cpus),
        guest_memory_mb=int(guest.memory_mb), workers=int(meta.workers[0]),
        duration_s=float(meta.duration_s), limit_mb=int(meta.limit_mb),
        slab_files=int(meta.slab_files),
        idle_probe_us=idle.idle_latency_median_us if idle else None,
        idle_loop_us=idle.loop_overhead_median_us if idle else None,
        guest_boot_s=None if boot is None else float(boot),
    )  # fmt: skip


def emulation_cost(sweep: KnobSweep, host: Sequence[Run]) -> EmulationCost:
    """:class:`EmulationCost` of the sweep's guest against the ``host`` runs (captured by
    ``mmlab capture`` on the machine itself: their iterations' idle probe)."""
    guest = [c for c in (sweep.calibration, *sweep.captures) if c.idle_probe_us is not None]
    # The probe is measured once per capture and copied into each iteration's mmlab.json.
    metas = [run.iterations[0].metadata for run in host if run.iterations]
    metas = [m for m in metas if m is not None and m.probe_overhead is not None]
    if not metas or not guest:
        raise InputError(host[0].path, "no idle probe (probe.idle_overhead) in these runs")
    idle = [c.idle_probe_us for c in guest]
    boots = [c.guest_boot_s for c in guest if c.guest_boot_s is not None]
    cpus = {m.system.cpu_model for m in metas if m.system and m.system.cpu_model}
    return EmulationCost(
        guest_captures=len(guest),
        host_captures=len(metas),
        host_cpu=", ".join(sorted(cpus)) or "unknown",
        guest_idle_us=statistics.median(idle),
        guest_idle_range_us=(min(idle), max(idle)),
        host_idle_us=statistics.median(m.probe_overhead.idle_latency_median_us for m in metas),
        guest_loop_us=statistics.median(c.idle_loop_us for c in guest),
        host_loop_us=statistics.median(m.probe_overhead.loop_overhead_median_us for m in metas),
        guest_boot_s=statistics.median(boots) if boots else None,
        map_bytes=metas[0].probe_overhead.map_bytes,
    )


def _runs_of(path: Path) -> Path:
    """The run folder of a capture (``aa1/aa1``), as ``mmlab compare`` takes it."""
    return the_vm_below(path).path.parent


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


def _sweep_captures(root: Path, calibration: str) -> tuple[SweepCapture, list[SweepCapture]]:
    """The calibration capture (which must have changed no knob) and the others, in
    folder order."""
    captures = {p.name: sweep_capture(p) for p in sorted(root.iterdir()) if p.is_dir()}
    if calibration not in captures:
        raise InputError(root, f"no calibration capture {calibration!r} in the sweep")
    cal = captures.pop(calibration)
    if cal.knobs:
        raise InputError(cal.path, f"the calibration capture changed knobs {sorted(cal.knobs)}")
    return cal, list(captures.values())


def _beyond(
    calibrated: Calibration,
    observed: dict[str, list[Observation]],
    scores: tuple[QuantityScore, ...],
    reason: str,
    seed: int,
) -> tuple[str, tuple[QuantityScore, ...]]:
    """The capture that ran the shortest timeout (the calibration's included) and its
    model's scores against every capture that ran a longer one."""
    runs = {calibrated.name: calibrated.runs, **observed}
    tau = {c: next(s.tau_us for s in scores if s.capture == c) for c in observed}
    tau[calibrated.name] = next(s.calibration_tau_us for s in scores)
    short = min(tau, key=tau.__getitem__)
    longer = {c: runs[c] for c in sorted(c for c in tau if tau[c] > tau[short])}
    model = throttle_validation.calibration(short, runs[short], seed=seed)
    return short, throttle_validation.validate(model, longer, [reason], seed=seed)


def knob_sweep(
    root: Path,
    calibration: str = CALIBRATION,
    *,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> KnobSweep:
    """Score the models of ``root/calibration`` against every other capture under ``root``
    that ran a timeout or a divisor (or nothing: A/A), and compare their probe latency."""
    cal, captures = _sweep_captures(Path(root), calibration)
    timeout = [c for c in captures if all(k.startswith(THROTTLE_KNOB) for k in c.knobs)]
    divisor = [c for c in captures if set(c.knobs) <= {DIVISOR_KNOB}]
    calibrated = throttle_validation.calibration(cal.name, observe(cal.path), seed=seed)
    reason = next(
        r.reason for r in calibrated.model.reasons if short_reason(r.reason) == "WRITEBACK"
    )
    observed = {c.name: observe(c.path) for c in timeout}
    scores = throttle_validation.validate(calibrated, observed, [reason], seed=seed)
    shrinker = shrinker_validation.validate(
        divisor_capture(cal.path, cal.name),
        [divisor_capture(c.path, c.name) for c in divisor],
        seed=seed,
    )
    short, beyond = _beyond(calibrated, observed, scores, reason, seed)
    every = [*calibrated.runs, *(o for runs in observed.values() for o in runs)]
    rho = stats.spearmanr([o.writeback_pps for o in every], [o.velocity_pps for o in every])
    return KnobSweep(
        calibration=cal,
        captures=tuple(captures),
        reason=reason,
        throttle=scores,
        shrinker=shrinker,
        latency=latency_comparisons((cal, *captures), resamples, seed),
        velocity_rho=float(rho.statistic),
        velocity_rho_p=float(rho.pvalue),
        velocity_runs=len(every),
        beyond_calibration={c.name: c for c in (cal, *captures)}[short],
        beyond=beyond,
        calibration_runs=tuple(run_values(o, reason) for o in calibrated.runs),
    )
