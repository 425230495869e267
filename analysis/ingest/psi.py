"""Pressure stall information (PSI) of memory: ``/proc/pressure/memory`` and a cgroup v2
``memory.pressure``, as a time series and as run-level rows (docs/inputs.md "PSI").

The kernel's text (kernel/sched/psi.c ``psi_show``), one line per kind::

    some avg10=0.00 avg60=0.00 avg300=0.00 total=0
    full avg10=0.00 avg60=0.00 avg300=0.00 total=0

``avgN`` are the percentages of wall time in the last N seconds in which some (``some``)
or all non-idle (``full``) tasks were stalled on memory, running averages the kernel
updates every 2 s; ``total`` is the cumulative stall time in µs since boot (or since the
cgroup was created). A recording (``mmlab capture``'s ``psi-memory`` and
``cgroup-memory.pressure``, one sample per monitor interval) precedes each sample with
``# t=<seconds>`` (CLOCK_MONOTONIC, the trace clock); a file of one sample without it is a
snapshot. The run-level rows come from ``total``, which is exact, not from the averages:
stall time over the recording and its share of the elapsed time.

Nothing is guessed: a line that is neither a sample line nor a ``# t=`` line, a kind
without all four fields, a sample without ``some``, a timestamp that does not increase,
and a ``total`` that goes down (not the same file or cgroup) are errors naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.errors import InputError, input_file
from analysis.ingest.textfile import read_text

__all__ = ["PSI_FILES", "PsiRun", "PsiSeries", "iteration_psi", "parse_psi", "read", "run_rows"]

# The names mmlab capture writes in an iteration directory: scope -> file name.
PSI_FILES = {"system": "psi-memory", "cgroup": "cgroup-memory.pressure"}
KINDS = ("some", "full")
_SAMPLE = re.compile(
    r"^(some|full) avg10=(\d+\.\d+) avg60=(\d+\.\d+) avg300=(\d+\.\d+) total=(\d+)$"
)
_TIME = re.compile(r"^# t=(\d+(?:\.\d+)?)$")
SCHEMA = {
    "sample": pl.Int64(),
    "t_s": pl.Float64(),
    "kind": pl.String(),
    "avg10": pl.Float64(),
    "avg60": pl.Float64(),
    "avg300": pl.Float64(),
    "total_us": pl.Int64(),
    "line": pl.Int64(),
}


@dataclass(frozen=True)
class PsiSeries:
    """One PSI file: a row per sample and kind (``t_s`` null in a snapshot)."""

    source: Path
    frame: pl.DataFrame
    samples: int
    timed: bool


@dataclass(frozen=True)
class PsiRun:
    """Run-level memory pressure of one kind over a recording (from ``total``).

    ``stall_s``: stall time between the first and last sample; ``share_pct``: its share
    of the elapsed time between them (what avg10..avg300 estimate over other windows);
    ``avg10_max``: the highest 10 s average seen. A snapshot has no interval: ``stall_s``,
    ``elapsed_s`` and ``share_pct`` are None.
    """

    kind: str
    samples: int
    elapsed_s: float | None
    stall_s: float | None
    share_pct: float | None
    avg10_max: float


def parse_psi(text: str, source: str | Path = "<text>") -> PsiSeries:
    """Parse PSI text (module docstring); InputError naming the line on anything else."""
    source = Path(source)
    rows: list[dict[str, object]] = []
    t: float | None = None
    sample = -1
    seen: set[str] = set()
    timed = False
    first_line = 0

    def close(number: int) -> None:
        if sample >= 0 and "some" not in seen:
            raise InputError(source, "a PSI sample without its 'some' line", line=number)

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if match := _TIME.match(line):
            close(number)
            value = float(match.group(1))
            if t is not None and value <= t:
                raise InputError(source, f"time {value} s does not increase", line=number)
            t, timed, sample, seen = value, True, sample + 1, set()
            first_line = first_line or number
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise InputError(
                source,
                "not a PSI line ('some|full avg10=.. avg60=.. avg300=.. total=..' or "
                f"'# t=<seconds>'): {line[:60]!r}",
                line=number,
            )
        kind = match.group(1)
        if timed and t is None:
            raise InputError(source, "a sample before the first '# t=' line", line=number)
        if not timed and (sample < 0 or kind in seen):
            if sample >= 0:
                raise InputError(
                    source, "several samples without '# t=' lines between them", line=number
                )
            sample = 0
        if kind in seen:
            raise InputError(source, f"two '{kind}' lines in one sample", line=number)
        seen.add(kind)
        rows.append(
            {
                "sample": sample,
                "t_s": t,
                "kind": kind,
                "avg10": float(match.group(2)),
                "avg60": float(match.group(3)),
                "avg300": float(match.group(4)),
                "total_us": int(match.group(5)),
                "line": number,
            }
        )
    if not rows:
        raise InputError(source, "no PSI sample ('some avg10=... total=...')")
    close(len(text.splitlines()))
    frame = pl.DataFrame(rows, schema=SCHEMA, orient="row")
    _check_totals(frame, source)
    return PsiSeries(source, frame, int(frame["sample"].max()) + 1, timed)


def _check_totals(frame: pl.DataFrame, source: Path) -> None:
    """``total`` is cumulative: one that goes down is another file or cgroup."""
    down = (
        frame.sort("kind", "sample")
        .with_columns(prev=pl.col("total_us").shift(1).over("kind"))
        .filter(pl.col("total_us") < pl.col("prev"))
    )
    if down.height:
        row = down.sort("line").row(0, named=True)
        raise InputError(
            source,
            f"{row['kind']} total goes down ({row['prev']} -> {row['total_us']} us): not "
            "one cumulative counter (another file or cgroup?)",
            line=row["line"],
        )


def read(path: str | Path) -> PsiSeries:
    """Read a PSI file (plain or compressed text)."""
    path = input_file(path)
    return parse_psi(read_text(path), source=path)


def run_rows(series: PsiSeries) -> tuple[PsiRun, ...]:
    """One :class:`PsiRun` per kind present, ``some`` first."""
    out = []
    for kind in KINDS:
        rows = series.frame.filter(pl.col("kind") == kind).sort("sample")
        if rows.is_empty():
            continue
        elapsed = stall = share = None
        if series.timed and rows.height > 1:
            elapsed = float(rows["t_s"][-1] - rows["t_s"][0])
            stall = (int(rows["total_us"][-1]) - int(rows["total_us"][0])) / 1e6
            share = 100.0 * stall / elapsed
        out.append(PsiRun(kind, rows.height, elapsed, stall, share, float(rows["avg10"].max())))
    return tuple(out)


def iteration_psi(iteration: str | Path) -> dict[str, PsiSeries]:
    """The PSI recordings of a capture iteration directory, by scope (``system``,
    ``cgroup``; :data:`PSI_FILES`); a scope whose file is absent is left out."""
    directory = Path(iteration)
    return {
        scope: read(directory / name)
        for scope, name in PSI_FILES.items()
        if (directory / name).is_file()
    }
