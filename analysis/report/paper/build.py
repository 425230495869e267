"""Everything ``papers/reclaim-throttling/main.tex`` inputs besides its checked-in prose
(``papers/reclaim-throttling/sections/*.tex``), built from the captures.

``macros.tex`` (every number the prose quotes: the A/B runs' and, given a patched-kernel
sweep, :mod:`analysis.report.paper.sweep`'s ``\\Sw...`` of the
:class:`~analysis.study.sweep.KnobSweep`), ``tables/*.tex``,
``figures/*.pdf`` and ``generated/*.tex``, one per ``SECTION_HOOKS`` entry of the A/B
appendix. The first run is the *base*, the second the *new* one (macros
``\\Base...``/``\\New...``), as in ``mmlab report BASE NEW``. papers/README.md maps
each file to its make rule.

Each entry of ``SECTION_HOOKS`` is a function of
:class:`~analysis.study.study.Study` and the output folder that writes its own
tables and figures there and returns its macros; the section's prose is checked in
(``sections/ab-fits.tex``, ``ab-comparison.tex``, ``ab-shrinker.tex``).

Runs without ftrace captures (a plain mmtests tree) get what applies to them (macros, the
Ops table, the latency comparison, the reclaim-rate figure); the trace tables and the
sections in ``NEEDS_TRACES`` are written as one sentence saying that they need ftrace, and
are listed in ``PaperInputs.left_out`` (with ``sweep`` when no sweep was given).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.ingest.events import THROTTLED
from analysis.ingest.mmtests import Run
from analysis.metrics.compare import Comparison, monitor_series
from analysis.metrics.stall_runs import TAIL_QUANTILE
from analysis.metrics.throttle import short_reason
from analysis.outputs import staged_dir
from analysis.report.ops import display_label, row_scale
from analysis.report.paper import comparison, figures, fits, shrinker
from analysis.report.paper.designed import section as designed_section
from analysis.report.paper.latex import defined_macros, escape, macros_tex, pm, table_tex
from analysis.report.paper.sweep import write_sweep
from analysis.report.throttle import STALL_DIGITS, THROTTLE_DIGITS
from analysis.report.units import Scale
from analysis.study.dose import DesignedSweep
from analysis.study.study import Study
from analysis.study.sweep import KnobSweep, emulation_cost

__all__ = ["NEEDS_TRACES", "SECTION_HOOKS", "PaperInputs", "build_inputs", "paper_values"]


# name -> LaTeX of generated/<name>.tex (a hook may write tables/figures under ``out``);
# main.tex inputs each by name.
SECTION_HOOKS: dict[str, Callable[[Study, Path], str]] = {
    "fits": fits.section,
    "comparison": comparison.section,
    "shrinker-replay": shrinker.section,
}
# Hooks (and the tables named ``tables/<name>.tex``) computed from ftrace events only.
NEEDS_TRACES = ("throttle", "stalls", "fits", "shrinker-replay")


@dataclass(frozen=True)
class PaperInputs:
    """What :func:`build_inputs` wrote: the macros of ``macros.tex`` (phrase → LaTeX),
    those each section defines (section → macro name → LaTeX) and the files (a section's
    own tables and figures are under ``tables/`` and ``figures/`` beside them)."""

    macros: dict[str, str]
    section_macros: dict[str, dict[str, str]]
    files: tuple[Path, ...]
    left_out: tuple[str, ...] = ()


def _throttle(data: Study) -> pl.DataFrame:
    table = data.throttle
    return table.filter(pl.col("event") == THROTTLED) if not table.is_empty() else table


def _common(values: list[str]) -> str:
    return values[0] if len(set(values)) == 1 else ", ".join(dict.fromkeys(values))


def _throttle_cells(r: dict) -> dict[str, str]:
    """LaTeX cells of one :func:`run_throttle_table` row (table columns and macros)."""
    sd, d = r["timeout_share_sd"], THROTTLE_DIGITS
    return {
        "reason": escape(short_reason(r["reason"])),
        "context": escape(r["context"]),
        "timeout ms": f"{r['usec_timeout'] / 1000:g}",
        "events": pm(r["events_mean"], r["events_sd"], d["events"]),
        "timeout share": pm(
            100 * r["timeout_share_mean"], None if sd is None else 100 * sd, d["timeout share"]
        ),
        "zero share": f"{100 * r['zero_share_mean']:.{d['zero share']}f}",
        "mean delay ms": f"{r['mean_usec_mean'] / 1000:.{d['mean delay ms']}f}",
    }


def _stall_cells(r: dict) -> dict[str, str]:
    """LaTeX cells of one :func:`run_stall_table` row (table columns and macros)."""
    d = STALL_DIGITS
    return {
        "context": escape(r["context"]),
        "count": pm(r["stalls_mean"], r["stalls_sd"], d["count"]),
        "summed s": pm(r["stalled_s_mean"], r["stalled_s_sd"], d["summed s"]),
        "median ms": pm(r["median_ms_mean"], r["median_ms_sd"], d["median ms"]),
        "tail ms": pm(r["p99_ms_mean"], r["p99_ms_sd"], d["tail ms"]),
        "max ms": f"{r['max_ms']:.{d['max ms']}f}",
    }


def _run_values(role: str, run: Run, data: Study, cmp: Comparison) -> dict[str, str]:
    """Macros of one run (``role`` is ``base`` or ``new``)."""
    meta = run.iterations[0].metadata
    dirty = meta.dirty_ratio_used if meta else None
    values = {
        f"{role} run": escape(run.name),
        f"{role} iterations": str(len(run.iterations)),
        f"{role} dirty ratio": "unknown" if dirty is None else str(dirty),
        f"{role} duration s": f"{(meta.duration_s if meta else None) or 0:g}",
        f"{role} workers": ", ".join(str(w) for w in (meta.workers if meta else ())),
    }
    throttle = _throttle(data)
    throttle = throttle.filter(pl.col("run") == run.name) if throttle.height else throttle
    if throttle.height:
        t = _throttle_cells(throttle.sort("events_mean", descending=True).row(0, named=True))
        values |= {f"{role} throttle {k}": v for k, v in t.items()}
    stalls = data.stalls
    mine = stalls.filter(pl.col("run") == run.name) if stalls.height else stalls
    if mine.height:
        s = _stall_cells(mine.sort("stalls_mean", descending=True).row(0, named=True))
        values |= {f"{role} stall {k}": v for k, v in s.items()}
    # As the Ops table (and the report) print them: the row's one scale, at the sd.
    for label, key in (
        ("Cgroup-limit efficiency %", "efficiency"),
        ("Cgroup-limit pages scanned", "scanned"),
    ):
        row = cmp.row(label, run.name)
        scale = row_scale([cmp.row(label, r) for r in cmp.runs])
        values[f"{role} {key}"] = _scaled_pm(scale, row.mean, row.sd)
    return values


def paper_values(data: Study, cmp: Comparison) -> dict[str, str]:
    """Every number (and name) the paper's text quotes, as LaTeX, keyed by macro phrase."""
    if len(data.runs) < 2:
        raise InputError(
            data.runs[0].path if data.runs else "-", "the paper compares two runs; found fewer"
        )
    prov = data.provenance
    hz = sorted({a.hz.hz for _, _, a in data.analyses if a.hz.hz is not None})
    values = {
        "runs": str(len(data.runs)),
        "iterations total": str(len(prov)),
        "kernel": escape(_common([p.kernel or "unknown" for p in prov])),
        "config hz": _common([str(p.config_hz) for p in prov]),
        "inferred hz": ", ".join(f"{h:g}" for h in hz) or "--",
        "machine": escape(_common([p.machine or "not recorded" for p in prov])),
        "memcg": escape(_common([p.cgroup or "not recorded" for p in prov])),
        "traces": str(len(data.analyses)),
        "lost events": str(data.lost_events),
        "tail percentile": f"{100 * TAIL_QUANTILE:g}",
    }
    for role, run in zip(("base", "new"), data.runs[:2], strict=True):
        values |= _run_values(role, run, data, cmp)
    return values


def _scaled_pm(scale: Scale, mean: float | None, sd: float | None) -> str:
    """An Ops cell as the report prints it (:func:`~analysis.report.ops.row_scale`), in
    math mode: ``$2.9M \\pm 0.6M$``; ``--`` without a mean."""
    if mean is None:
        return "--"
    text = scale.text(mean, sd)
    return f"${text}$" if sd is None else f"${text} \\pm {scale.uncertainty(sd).removeprefix('±')}$"


def ops_table(cmp: Comparison) -> str:
    """vmstat Ops rows that are not zero everywhere: mean ± sd over iterations per run."""
    labels = list(dict.fromkeys(r.label for r in cmp.rows))
    rows = []
    for label in labels:
        cells = [cmp.row(label, run) for run in cmp.runs]
        if all(c.mean in (None, 0) for c in cells):
            continue
        scale = row_scale(cells)
        name = escape(display_label(label, scale.unit))
        rows.append([name, *(_scaled_pm(scale, c.mean, c.sd) for c in cells)])
    return table_tex(
        ["Ops row", *(escape(r) for r in cmp.runs)],
        rows,
        "l" + "r" * len(cmp.runs),
        "vmstat Ops rows (mean $\\pm$ sample sd over iterations; pages unless stated). "
        "Rows that are zero or undefined in every iteration are left out.",
        "tab:ops",
    )


def throttle_table(table: pl.DataFrame) -> str:
    """Per run and reason: events per iteration, timeout share, zero share, mean delay."""
    rows = []
    for r in table.iter_rows(named=True):
        c = _throttle_cells(r)
        rows.append([escape(r["run"]), *list(c.values())[:-1], f"$\\geq {c['mean delay ms']}$"])
    header = ["run", "reason", "context", "timeout ms", "events/iter", "timeout \\%", "zero \\%"]
    return table_tex(
        [*header, "mean ms"],
        rows,
        "lllrrrrr",
        "\\texttt{mm\\_vmscan\\_throttled} per run, reason and reclaim context: mean $\\pm$ "
        "sd over iterations. Sleeps at the timeout are right-censored, so the mean of the "
        "recorded delays is a lower bound of the mean wait.",
        "tab:throttle",
    )


def stall_table(table: pl.DataFrame) -> str:
    """Per run and reclaim context: stalls and time stalled per iteration, quantiles."""
    rows = [[escape(r["run"]), *_stall_cells(r).values()] for r in table.iter_rows(named=True)]
    return table_tex(
        ["run", "context", "stalls/iter", "stalled s/iter", "median ms", "p99 ms", "max ms"],
        rows,
        "llrrrrr",
        "Reclaim stalls (begin to end of one task's reclaim) per iteration: mean $\\pm$ sd "
        "over iterations of each iteration's count, summed time and nearest-rank quantiles; "
        "max over all iterations. Stalls of concurrent tasks overlap, so the summed time "
        "can exceed the capture's length.",
        "tab:stalls",
    )


def _figures(data: Study, out: Path) -> list[Path]:
    written = []
    hist = [
        a.delay_histogram.filter(pl.col("event") == THROTTLED).with_columns(run=pl.lit(run.name))
        for run, _, a in data.analyses
    ]
    n_iter = pl.DataFrame(
        {"run": [r.name for r in data.runs], "n": [len(r.iterations) for r in data.runs]}
    )
    delays = pl.concat(hist, how="vertical_relaxed") if hist else pl.DataFrame()
    if delays.height:
        delays = (
            delays.group_by("run", "delay_us", "at_timeout")
            .agg(pl.col("count").sum())
            .join(n_iter, on="run")
            .with_columns(events_per_iteration=pl.col("count") / pl.col("n"))
        )
        fig = figures.throttle_delay_figure(delays)
        written.append(figures.save_pdf(fig, out / "throttle-delays.pdf"))
    stalls = [
        paired.intervals.filter(pl.col("status") == "closed").select(
            pl.lit(run.name).alias("run"),
            pl.lit(i).alias("iteration"),
            (pl.col("duration_ns") / 1e6).alias("ms"),
        )
        for run, i, a in data.analyses
        for paired in a.reclaim.values()
    ]
    if stalls and sum(s.height for s in stalls):
        fig = figures.stall_ecdf_figure(pl.concat(stalls).filter(pl.col("ms") > 0))
        written.append(figures.save_pdf(fig, out / "stall-ecdf.pdf"))
    rates = monitor_series(data.runs)
    if rates.height:
        written.append(
            figures.save_pdf(figures.reclaim_rate_figure(rates), out / "reclaim-rates.pdf")
        )
    return written


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _no_traces(name: str) -> str:
    return f"\\emph{{No {escape(name)}: the runs given have no ftrace captures.}}\n"


def build_inputs(
    data: Study,
    out: Path,
    sweep: KnobSweep | None = None,
    designed: tuple[DesignedSweep, ...] = (),
) -> PaperInputs:
    """Write macros, tables, figures and hook sections for ``data``'s runs under ``out``
    (without traces, see the module docstring), the patched-kernel ``sweep``'s when
    given (else left out) and the ``designed`` sweeps' section (:mod:`.designed`; without
    one, ``generated/designed.tex`` says so): all of them or, when anything fails, none
    (other files in ``out`` are kept)."""
    with staged_dir(out) as stage:
        inputs = _build_inputs(data, stage, sweep, designed)
    return replace(inputs, files=tuple(out / f.relative_to(stage) for f in inputs.files))


def _emulation(data: Study, sweep: KnobSweep):
    """The sweep guest's emulation cost against the study's runs (the host), None when
    they recorded no idle probe (a plain mmtests tree)."""
    try:
        return emulation_cost(sweep, data.runs)
    except InputError:
        return None


def _build_inputs(
    data: Study, out: Path, sweep: KnobSweep | None, designed: tuple[DesignedSweep, ...]
) -> PaperInputs:
    cmp = data.ops
    values = paper_values(data, cmp)
    left_out = () if data.analyses else NEEDS_TRACES
    swept: list[Path] = []
    if sweep is None:
        left_out += ("sweep",)
    else:
        sweep_macros, swept = write_sweep(sweep, out, _emulation(data, sweep))
        values |= sweep_macros
    if not designed:
        left_out += ("designed",)
    tables = {"ops": lambda: ops_table(cmp)}
    tables["throttle"] = lambda: throttle_table(_throttle(data))
    tables["stalls"] = lambda: stall_table(data.stalls)
    files = [
        _write(out / "macros.tex", macros_tex(values)),
        *(
            _write(out / "tables" / f"{name}.tex", _no_traces(name) if name in left_out else tex())
            for name, tex in tables.items()
        ),
        *_figures(data, out / "figures"),
        *swept,
    ]
    sections = {
        name: _no_traces(name) if name in left_out else hook(data, out)
        for name, hook in SECTION_HOOKS.items()
    }
    files += [_write(out / "generated" / f"{name}.tex", tex) for name, tex in sections.items()]
    section_macros = {name: defined_macros(tex) for name, tex in sections.items()}
    body, answer, written = designed_section(designed, out)
    files += [_write(out / "generated" / "designed.tex", body),
              _write(out / "generated" / "designed-answer.tex", answer), *written]  # fmt: skip
    return PaperInputs(values, section_macros, tuple(files), left_out)
