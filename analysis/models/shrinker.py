"""What-if model of shrinker deferral: a trace's ``do_shrink_slab()`` calls under another rule.

The arithmetic is that of ``docs/shrinker-deferral.md``: G1 (mainline up to Linux 5.12),
G2 (seed 001's proposal: deferred work only in kswapd, divided by ``priority``) and G3
(mainline since Linux 5.13, commit 18bb473e5031: divided by ``2^priority``). The deferral
divisor (the function of priority that divides the taken ``nr_deferred`` count before it
joins the scan target) and "deferred work only in kswapd" are parameters.

A replay re-runs a capture's calls (:func:`analysis.metrics.shrinker.shrinker_invocations`)
in trace order against the model's own ``nr_deferred[nid]`` counters, keyed by shrinker
instance (``shrinker_ptr``) and node. Taken from the trace, the same under every variant:
``freeable`` (``count_objects()``), ``delta`` (the call's own share), ``priority``, the
context, and whether the caller could run the shrinker at all (a filesystem shrinker under
a gfp mask without ``__GFP_FS`` returns SHRINK_STOP). Assumptions, stated because they
bound what a replay can say:

- the freeable series does not react to the variant (freeing more objects earlier would
  shrink later counts; the model does not feed that back);
- objects freed = objects scanned x the capture's freed-per-scanned ratio (one ratio per
  trace; unknown, hence null, when the capture scanned nothing);
- the counters start at what the first call of each shrinker instance took in the trace;
- memcg-aware shrinkers keep one counter per memory cgroup (5.13+), which the tracepoints
  do not name: the replay keeps one per instance and node, and ``chain_agreement`` says
  how often that single counter reproduces what the capturing kernel's calls took.

Before any what-if, :func:`replay_agreement` checks that the capturing kernel's rule
reproduces each call's own ``total_scan`` from the ``nr`` it took.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from scipy import stats

from analysis.capture.knobs import DEF_PRIORITY, Divisor, divisor_table
from analysis.errors import InputError, input_file
from analysis.ingest.textfile import read_text
from analysis.metrics.pairing import PairingReport
from analysis.stats.describe import nearest_rank

__all__ = [
    "DEF_PRIORITY",
    "FS_SHRINKERS",
    "GENERATIONS",
    "SWEEP_MODEL",
    "Agreement",
    "Call",
    "ContextWork",
    "ModelRun",
    "Ratio",
    "Replay",
    "Variant",
    "blocked_calls",
    "capturing_generation",
    "divisor_sweep",
    "divisor_table",
    "do_shrink_slab",
    "freed_per_scanned",
    "load_invocations",
    "model_trace",
    "outputs",
    "replay",
    "replay_agreement",
    "shrinker_share",
    "unpaired_note",
]

GENERATIONS = ("G1", "G2", "G3")
DEFAULT_DIVISOR = {"G1": "1", "G2": "priority", "G3": "2^priority"}
SHRINK_BATCH = 128
# Shrinkers whose scan_objects() returns SHRINK_STOP without __GFP_FS, and their batch:
# super_cache_scan() (fs/super.c; alloc_super() sets s_shrink->batch = 1024).
FS_SHRINKERS = {"super_cache_scan": 1024}
# show_gfp_flags() prints composite names first; these composites include __GFP_FS.
_FS_GFP = frozenset(
    {
        "__GFP_FS",
        "GFP_KERNEL",
        "GFP_KERNEL_ACCOUNT",
        "GFP_USER",
        "GFP_HIGHUSER",
        "GFP_HIGHUSER_MOVABLE",
        "GFP_TRANSHUGE",
        "GFP_TRANSHUGE_LIGHT",
    }
)


def shrinker_share(freeable: int, priority: int, seeks: int = 2) -> int:
    """``delta``: one call's own share of the cache (Linux 4.16+), objects."""
    return freeable // 2 if seeks == 0 else (freeable >> priority) * 4 // seeks


def _divisor_label(divisor: Divisor) -> str:
    return getattr(divisor, "__name__", None) or str(divisor)


@dataclass(frozen=True)
class Variant:
    """A deferral rule: generation, divisor (default: the generation's own), whether only
    kswapd takes deferred work (default: only in G2), and for G2 the patch's literal
    ``next_deferred = nr - scanned`` (``literal``) or the fixed ``nr + delta - scanned``."""

    generation: str = "G3"
    divisor: Divisor | None = None
    kswapd_only: bool | None = None
    literal: bool = True

    def __post_init__(self) -> None:
        if self.generation not in GENERATIONS:
            raise ValueError(f"unknown generation {self.generation!r}: use G1, G2 or G3")
        divisor_table(self.effective_divisor)

    @property
    def effective_divisor(self) -> Divisor:
        return DEFAULT_DIVISOR[self.generation] if self.divisor is None else self.divisor

    @property
    def only_kswapd(self) -> bool:
        return self.generation == "G2" if self.kswapd_only is None else self.kswapd_only

    @property
    def label(self) -> str:
        text = f"{self.generation} d={_divisor_label(self.effective_divisor)}"
        if self.only_kswapd != (self.generation == "G2"):
            text += " kswapd-only" if self.only_kswapd else " any-context"
        if self.generation == "G2":
            text += " literal" if self.literal else " fixed"
        return text


def _kernel():
    # numba starts here, not when mmlab --help imports the command.
    from analysis.models import shrinker_kernel

    return shrinker_kernel


@dataclass(frozen=True)
class Call:
    """One ``do_shrink_slab()`` call (objects): ``ran`` is False when the kernel returned
    before taking the counter."""

    ran: bool
    nr: int
    delta: int
    total_scan: int
    scanned: int
    next_deferred: int


def do_shrink_slab(
    variant: Variant,
    *,
    deferred: int,
    freeable: int,
    priority: int,
    seeks: int = 2,
    kswapd: bool = False,
    batch: int = SHRINK_BATCH,
    blocked: bool = False,
) -> Call:
    """One call of ``variant`` with ``deferred`` objects in ``nr_deferred[nid]``."""
    delta = shrinker_share(freeable, priority, seeks)
    ran, nr, total_scan, scanned, next_deferred = _kernel().shrink_call(
        GENERATIONS.index(variant.generation),
        variant.literal,
        deferred,
        kswapd or not variant.only_kswapd,
        freeable,
        delta,
        int(divisor_table(variant.effective_divisor)[priority]),
        batch,
        blocked,
    )
    return Call(bool(ran), int(nr), delta, int(total_scan), int(scanned), int(next_deferred))


def _per_shrinker(shrinker: pl.Series, value: Callable[[str], int | bool]) -> pl.Series:
    """``value`` of each call's shrinker symbol (``name+0xoff/0xsize`` → ``name``), worked
    out once per distinct symbol: a capture has millions of calls and a handful of them."""
    table = {s: value(s.split("+", 1)[0]) for s in shrinker.unique().drop_nulls().to_list()}
    return shrinker.replace_strict(table, default=None)


def blocked_calls(invocations: pl.DataFrame) -> pl.Series:
    """Calls whose shrinker is a filesystem one (:data:`FS_SHRINKERS`) entered with a gfp
    mask without ``__GFP_FS``: ``super_cache_scan()`` returns SHRINK_STOP, all deferred."""
    flags = invocations["gfp_flags"].fill_null([])
    has_fs = flags.list.eval(pl.element().is_in(list(_FS_GFP))).list.any()
    is_fs = _per_shrinker(invocations["shrinker"], lambda name: name in FS_SHRINKERS)
    return (is_fs.fill_null(False) & ~has_fs).alias("blocked")


def _batch(invocations: pl.DataFrame) -> np.ndarray:
    batch = _per_shrinker(invocations["shrinker"], lambda n: FS_SHRINKERS.get(n, SHRINK_BATCH))
    return batch.fill_null(SHRINK_BATCH).cast(pl.Int64).to_numpy()


@dataclass(frozen=True)
class Agreement:
    """How many calls a rule reproduces: ``share`` = matched / total (null if none)."""

    matched: int
    total: int

    @property
    def share(self) -> float | None:
        return self.matched / self.total if self.total else None

    def as_json(self) -> dict[str, float | int | None]:
        return {"matched": self.matched, "total": self.total, "share": self.share}


def _checked(invocations: pl.DataFrame, source: object) -> pl.DataFrame:
    if invocations.is_empty():
        raise InputError(
            str(source), "no mm_shrink_slab_start/end pairs: enable vmscan:mm_shrink_slab_*"
        )
    priority = invocations["priority"]
    if priority.null_count() or priority.min() < 0 or priority.max() > DEF_PRIORITY:
        raise InputError(
            str(source),
            "shrink_slab calls without a priority in 0..12: the model needs Linux 4.16+",
        )
    return invocations if invocations["begin_line"].is_sorted() else invocations.sort("begin_line")


def replay_agreement(invocations: pl.DataFrame, generation: str) -> Agreement:
    """Calls whose ``total_scan`` (start line) ``generation`` reproduces from the ``nr``,
    ``freeable``, ``delta`` and ``priority`` the same line prints."""
    code = GENERATIONS.index(generation)
    predicted = _kernel().targets(
        code,
        invocations["deferred_in_objects"].to_numpy(),
        invocations["freeable_objects"].to_numpy(),
        invocations["delta_objects"].to_numpy(),
        invocations["priority"].to_numpy(),
        divisor_table(DEFAULT_DIVISOR[generation]),
    )
    matched = int((predicted == invocations["to_scan_objects"].to_numpy()).sum())
    return Agreement(matched, invocations.height)


def capturing_generation(invocations: pl.DataFrame, trace: Path | None = None) -> tuple[str, str]:
    """The deferral rule of the capturing kernel and how it was found: from
    ``kernel.version`` beside the trace (mmtests/mmlab captures; 5.13+ is G3), else the
    mainline rule (G1 or G3) that reproduces more ``total_scan`` values."""
    version_file = trace.parent / "kernel.version" if trace is not None else None
    if version_file is not None and version_file.is_file():
        found = re.search(r"Linux version (\d+)\.(\d+)", read_text(version_file))
        if found:
            major, minor = int(found[1]), int(found[2])
            return ("G3" if (major, minor) >= (5, 13) else "G1"), f"Linux {major}.{minor}"
    g1, g3 = (replay_agreement(invocations, g).matched for g in ("G1", "G3"))
    return ("G3" if g3 >= g1 else "G1"), "total_scan arithmetic"


@dataclass(frozen=True)
class ContextWork:
    """Objects scanned per call by one context (``direct`` = every reclaimer that is not
    kswapd: direct, memcg, node and other), mmtests nearest-rank percentiles."""

    context: str
    calls: int
    mean: float | None
    p50: float | None
    p99: float | None
    max: int | None
    total: int


def _work(context: str, scanned: np.ndarray) -> ContextWork:
    if scanned.size == 0:
        return ContextWork(context, 0, None, None, None, None, 0)
    ordered = np.sort(scanned)
    ones = np.ones(ordered.size, dtype=np.int64)
    return ContextWork(
        context,
        int(ordered.size),
        float(ordered.mean()),
        nearest_rank(ordered, ones, 50),
        nearest_rank(ordered, ones, 99),
        int(ordered[-1]),
        int(ordered.sum()),
    )


@dataclass(frozen=True)
class Replay:
    """A variant's replay of one capture. ``calls``: per call ``ts_ns``, ``context``,
    ``nr_objects`` (taken), ``total_scan_objects``, ``scanned_objects``,
    ``next_deferred_objects``, ``deferred_objects`` (counter after its hand-back);
    ``backlog``: ``ts_ns``, ``backlog_objects`` (all counters summed) after every event.
    ``freed_objects``, ``efficiency`` (freed / scanned) are null when the capture's
    freed-per-scanned ratio is unknown; ``velocity`` is objects scanned per second.
    ``chain_agreement``: calls whose taken ``nr`` equals the capture's (for the capturing
    rule, how well one counter per instance and node reproduces the kernel's)."""

    variant: Variant
    calls: pl.DataFrame
    backlog: pl.DataFrame
    work: tuple[ContextWork, ...]
    scanned_objects: int
    freed_objects: float | None
    efficiency: float | None
    velocity_per_s: float | None
    backlog_max_objects: int
    backlog_end_objects: int
    chain_agreement: Agreement

    def context(self, name: str) -> ContextWork:
        return next(w for w in self.work if w.context == name)


@dataclass(frozen=True)
class Ratio:
    """Objects freed per object scanned in the capture, with a 95 % Wilson interval that
    treats scanned objects as independent trials (they come in batches, so it is too
    narrow when calls differ); all null when the capture scanned nothing."""

    estimate: float | None
    low: float | None
    high: float | None
    scanned_objects: int


def freed_per_scanned(invocations: pl.DataFrame) -> Ratio:
    """``last shrinker return val`` summed over the calls / objects they scanned."""
    scanned = int(invocations["scanned_objects"].sum() or 0)
    if not scanned:
        return Ratio(None, None, None, 0)
    freed = min(int(invocations["freed_objects"].sum() or 0), scanned)
    interval = stats.binomtest(freed, scanned).proportion_ci(0.95, method="wilson")
    return Ratio(freed / scanned, float(interval.low), float(interval.high), scanned)


def _span_s(invocations: pl.DataFrame) -> float | None:
    start = invocations["ts_ns"].min()
    end = (invocations["ts_ns"] + invocations["duration_ns"]).max()
    return (end - start) / 1e9 if end is not None and end > start else None


def replay(
    invocations: pl.DataFrame,
    variant: Variant,
    *,
    source: object = "<frame>",
    depletion: float | None = None,
) -> Replay:
    """Re-run the capture's calls (invocation frame, any order) under ``variant``.

    ``depletion`` (freed objects per scanned object, > 0) feeds the replay's extra freeing
    back into the later calls' ``cache items`` (``count_objects()``), which the plain
    replay keeps as the trace printed them (:func:`analysis.models.shrinker_kernel.replay`;
    ``docs/model-validation.md`` "Shrinker deferral")."""
    calls = _checked(invocations, source)
    # One nr_deferred counter per shrinker instance (its pointer) and node.
    instance = pl.col("shrinker_ptr").fill_null(pl.col("shrinker")).cast(pl.Categorical)
    code = calls.select(instance.to_physical().cast(pl.Int64) * 65536 + pl.col("nid").fill_null(0))
    first, keys = np.unique(code.to_series().to_numpy(), return_index=True, return_inverse=True)[1:]
    initial = calls["deferred_in_objects"].to_numpy()[first]
    n = calls.height
    # Take (start line) and hand-back (end line) events in trace order; lines are unique.
    lines = np.concatenate([calls["begin_line"].to_numpy(), calls["end_line"].to_numpy()])
    order = np.argsort(lines, kind="stable")
    event_kind = (order >= n).astype(np.int64)
    event_call = order % n
    ends_ns = (calls["ts_ns"] + calls["duration_ns"]).to_numpy()
    event_ts = np.concatenate([calls["ts_ns"].to_numpy(), ends_ns])[order]
    kswapd = (calls["context"] == "kswapd").to_numpy()
    ran, nr, target, scanned, next_deferred, new_count, backlog = _kernel().replay(
        GENERATIONS.index(variant.generation),
        variant.literal,
        event_kind,
        event_call,
        keys.astype(np.int64),
        initial.astype(np.int64),
        kswapd | (not variant.only_kswapd),
        calls["freeable_objects"].to_numpy(),
        calls["delta_objects"].to_numpy(),
        calls["priority"].to_numpy(),
        divisor_table(variant.effective_divisor),
        _batch(calls),
        blocked_calls(calls).to_numpy(),
        float(depletion or 0.0),
        calls["scanned_objects"].fill_null(0).to_numpy().astype(np.float64),
    )
    takers = ran & (kswapd | (not variant.only_kswapd))
    chain = Agreement(
        int((nr[takers] == calls["deferred_in_objects"].to_numpy()[takers]).sum()),
        int(takers.sum()),
    )
    ratio = freed_per_scanned(calls).estimate
    total = int(scanned.sum())
    span = _span_s(calls)
    return Replay(
        variant=variant,
        calls=pl.DataFrame(
            {
                "ts_ns": calls["ts_ns"],
                "context": calls["context"],
                "shrinker": calls["shrinker"],
                "nr_objects": nr,
                "total_scan_objects": target,
                "scanned_objects": scanned,
                "next_deferred_objects": next_deferred,
                "deferred_objects": new_count,
            }
        ),
        backlog=pl.DataFrame({"ts_ns": event_ts, "backlog_objects": backlog}),
        work=(_work("direct", scanned[~kswapd]), _work("kswapd", scanned[kswapd])),
        scanned_objects=total,
        freed_objects=total * ratio if ratio is not None else None,
        efficiency=ratio if total and ratio is not None else None,
        velocity_per_s=total / span if span else None,
        backlog_max_objects=int(backlog.max()),
        backlog_end_objects=int(backlog[-1]),
        chain_agreement=chain,
    )


@dataclass(frozen=True)
class ModelRun:
    """One capture under one variant: the check of the capturing rule first, then the
    replay; ``observed_*`` are the capture's own scanned and freed totals (objects),
    ``own_scanned_objects`` what the capturing rule's chained replay scanned."""

    source: str
    capturing_generation: str
    generation_source: str
    replay_agreement: Agreement
    capture_chain_agreement: Agreement
    freed_per_scanned: Ratio
    observed_scanned_objects: int
    observed_freed_objects: int
    own_scanned_objects: int
    result: Replay

    @property
    def outputs(self) -> dict[str, float]:
        """The scalar outputs of the replay (:func:`outputs`)."""
        return outputs(self.result)


def load_invocations(trace: Path) -> pl.DataFrame:
    """The shrinker calls of a trace file (ingested through the cache), context-labelled."""
    from analysis.ingest import ftrace
    from analysis.metrics import pairing
    from analysis.metrics.shrinker import shrinker_invocations

    data = ftrace.read(trace)
    lost = [int(entry.line) for entry in data.accounting.lost_events]
    intervals = pairing.all_intervals(pairing.reclaim_intervals(data, lost_lines=lost))
    invocations, paired = shrinker_invocations(data, intervals, lost_lines=lost)
    if note := unpaired_note(paired.report):
        print(f"mmlab: {trace}: {note}", file=sys.stderr)
    return _checked(invocations, trace)


def unpaired_note(report: PairingReport) -> str | None:
    """What a replay leaves out: shrink_slab starts and ends the pairing could not join
    (lines out of time order, a capture cut mid-call), or None when every call paired."""
    if not (report.unpaired_begin or report.unpaired_end):
        return None
    note = (
        f"{report.unpaired_begin:,} mm_shrink_slab_start and {report.unpaired_end:,} "
        "mm_shrink_slab_end events unpaired, not replayed"
    )
    if report.clock_backwards:
        note += f" ({report.clock_backwards:,} times a pid's timestamps go back in file order)"
    return note


def model_trace(
    invocations: pl.DataFrame, variant: Variant, *, trace: Path | None = None
) -> ModelRun:
    """:func:`replay_agreement` of the capturing rule, its own chained replay, and the
    replay under ``variant``."""
    calls = _checked(invocations, trace or "<frame>")
    generation, found_by = capturing_generation(calls, trace)
    own = replay(calls, Variant(generation))
    return ModelRun(
        source=str(trace) if trace is not None else "<frame>",
        capturing_generation=generation,
        generation_source=found_by,
        replay_agreement=replay_agreement(calls, generation),
        capture_chain_agreement=own.chain_agreement,
        freed_per_scanned=freed_per_scanned(calls),
        observed_scanned_objects=int(calls["scanned_objects"].sum()),
        observed_freed_objects=int(calls["freed_objects"].sum()),
        own_scanned_objects=own.scanned_objects,
        result=replay(calls, variant) if variant != Variant(generation) else own,
    )


def outputs(result: Replay) -> dict[str, float]:
    """The scalar outputs of a replay (NaN where a value is unknown), for sweeps."""
    direct, kswapd = result.context("direct"), result.context("kswapd")
    values: dict[str, float | int | None] = {
        "scanned_objects": result.scanned_objects,
        "freed_objects": result.freed_objects,
        "efficiency": result.efficiency,
        "velocity_per_s": result.velocity_per_s,
        "direct_p99_scanned": direct.p99,
        "direct_max_scanned": direct.max,
        "kswapd_p99_scanned": kswapd.p99,
        "kswapd_max_scanned": kswapd.max,
        "backlog_max_objects": result.backlog_max_objects,
        "backlog_end_objects": result.backlog_end_objects,
    }
    return {k: math.nan if v is None else float(v) for k, v in values.items()}


def divisor_sweep(
    invocations: pl.DataFrame,
    divisors: list[Divisor],
    *,
    generation: str = "G3",
    kswapd_only: bool | None = None,
) -> pl.DataFrame:
    """One row of :func:`outputs` per divisor (``divisor`` as text) under ``generation``."""
    rows = [
        {
            "divisor": _divisor_label(d),
            **outputs(replay(invocations, Variant(generation, d, kswapd_only))),
        }
        for d in divisors
    ]
    return pl.DataFrame(rows)


@functools.lru_cache(maxsize=8)
def _cached_invocations(trace: str) -> pl.DataFrame:
    # A .parquet is a table of calls as load_invocations returns them (saved, or joined
    # from several traces); anything else is a trace.
    if trace.endswith(".parquet"):
        try:
            calls = pl.read_parquet(input_file(trace))
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise InputError(trace, f"not a readable Parquet table ({exc})") from None
        return _checked(calls, trace)
    return load_invocations(Path(trace))


SWEEP_PARAMETERS = ("trace", "generation", "divisor", "kswapd_only")


def sweep_point(params: Mapping[str, object]) -> dict[str, float]:
    """One grid point for ``mmlab sweep``: ``trace`` (path of a trace, or a ``.parquet``
    table of calls as :func:`load_invocations` returns), ``generation`` (default G3),
    ``divisor`` (default the generation's), ``kswapd_only`` (default per generation) →
    :func:`outputs`. A trace's calls are read once per process."""
    unknown = set(params) - set(SWEEP_PARAMETERS)
    if unknown or "trace" not in params:
        raise ValueError(
            f"shrinker sweep parameters are {', '.join(SWEEP_PARAMETERS)} (trace required); "
            f"got {', '.join(sorted(params))}"
        )
    variant = Variant(
        str(params.get("generation", "G3")),
        params.get("divisor"),  # type: ignore[arg-type]
        params.get("kswapd_only"),  # type: ignore[arg-type]
    )
    return outputs(replay(_cached_invocations(str(params["trace"])), variant))


sweep_point.parameters = SWEEP_PARAMETERS
sweep_point.path_parameters = ("trace",)  # checked on every worker before a sweep
SWEEP_MODEL = sweep_point
