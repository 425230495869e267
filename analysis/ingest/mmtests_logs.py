"""Native readers of the result logs mmtests benchmarks leave in ``<iter>/<bench>/logs/``.

Each reader takes the samples, units and directions that mmtests' own extraction uses
(the ``bin/lib/MMTests/Extract<Bench>.pm`` modules of mmtests commit
b0b1d143bba3c6e0bb28995997bfe1db96b37779, the last with the THP/pft/pagealloc modules,
and ``shellpack_src/src/<bench>/parse-results`` + ``shellpack.yaml`` of commit
638401e07e70d67fa5a1e6295e1315ae0af831b2); see docs/mmtests-conventions.md
"Benchmark logs". Every unit is declared here with the mmtests source it comes from
(:class:`Declared`), never guessed from the numbers.

Every file of a ``logs/`` directory is accounted for (:func:`read_logs`): read, known not
to be a result (``mmtests.log``, ``/usr/bin/time`` of a THP run, ...), or unknown, which
gives one note naming the benchmark and the files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest.textfile import read_text

__all__ = [
    "HPAGEALLOC",
    "MAX_REPEAT",
    "PAGEALLOC",
    "PFT_RATE",
    "PFT_TIME",
    "READERS",
    "STUTTERP_MMTESTS",
    "THP_HUGE",
    "THP_LATENCY",
    "USEMEM",
    "Declared",
    "LatencyLog",
    "LogRead",
    "Reader",
    "command_logs",
    "hpagealloc_logs",
    "pagealloc_logs",
    "pft_logs",
    "read_logs",
    "stutterp_log",
    "stutterp_logs",
    "thp_logs",
    "usemem_log",
    "usemem_logs",
]

_OLD = "mmtests b0b1d143"
_NEW = "mmtests 638401e0"


@dataclass(frozen=True)
class Declared:
    """A row family's unit and direction as mmtests declares them, and where that is."""

    unit: str
    higher_is_better: bool
    source: str


@dataclass(frozen=True)
class LogRead:
    """Samples of one benchmark's logs: (row, value, declared), the files read, and one
    note per line or sample left out (with why)."""

    samples: tuple[tuple[str, float, Declared], ...] = ()
    read: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()


def _lines(path: Path) -> list[str]:
    return read_text(path).splitlines()


def _logs(logs: Path, pattern: str) -> list[tuple[re.Match[str], Path]]:
    """Files of ``logs`` whose whole name matches ``pattern``, numerically by group 1."""
    found = [(m, p) for p in logs.iterdir() if p.is_file() and (m := re.fullmatch(pattern, p.name))]
    return sorted(found, key=lambda mp: tuple(int(g) for g in mp[0].groups() if g.isdigit()))


def _numbers(lines: list[int]) -> str:
    """``3, 15, 29``: the first eight line numbers, then how many more."""
    more = f" and {len(lines) - 8} more" if len(lines) > 8 else ""
    return ", ".join(map(str, lines[:8])) + more


# --- stutterp ----------------------------------------------------------------------------

_UNITS = {"microseconds": "us", "milliseconds": "ms", "nanoseconds": "ns", "seconds": "s"}
STUTTERP_MMTESTS = Declared(
    "ms",
    False,
    f"{_OLD} ExtractStutterp.pm: mmap-latency.c prints '<count> <mean ns>'; "
    "each line is <count> samples of mean/1e6 ms (DATA_TIME_MSECONDS)",
)


@dataclass(frozen=True)
class LatencyLog:
    """One stutterp latency log: its unit, the samples, a note per line that is not a
    sample, and where the unit comes from (the probe's header, or mmtests' source)."""

    unit: str
    values: tuple[float, ...]
    skipped: tuple[str, ...]
    unit_source: str


# The samples one '<count> <mean ns>' line may stand for: each is a mapping of >= 5 ms, so
# 10^7 of them are 14 hours of stalls in one line; a larger count is damage (and a count
# beyond 64 bits cannot even be repeated).
MAX_REPEAT = 10_000_000


def stutterp_log(path: Path) -> LatencyLog:
    """The :class:`LatencyLog` of one ``mmap-latency-<N>.log[.gz]``, in either format:

    - mmlab's anon-latency probe: a ``#`` header ending ``unit: <word>``, then
      ``<epoch_s> <latency>`` per mapping (the unit is the header's);
    - mmtests' ``mmap-latency.c``: no header, ``<count> <mean latency in ns>`` per line
      printed when a mapping took 5 ms or more; ``count`` samples of ``mean / 1e6`` ms, as
      ExtractStutterp.pm (:data:`STUTTERP_MMTESTS`).

    A ``#`` header naming no unit, or an unknown one, is an error: the unit is not guessed.
    """
    lines = _lines(path)
    header = [(n, ln) for n, ln in enumerate(lines, 1) if ln.startswith("#")]
    if header:
        return _probe(path, lines, header)
    values: list[float] = []
    bad: list[int] = []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if len(fields) == 2 and all(f.isdigit() for f in fields):
            if int(fields[0]) > MAX_REPEAT:
                raise InputError(
                    path, f"count {fields[0][:30]} is beyond {MAX_REPEAT:,} samples", number
                )
            values += [int(fields[1]) / 1e6] * int(fields[0])
        else:
            bad.append(number)
    if bad and not values:
        raise InputError(
            path,
            "neither mmlab's probe (no '#' header naming the unit) nor mmtests' "
            f"'<count> <mean ns>' lines: {lines[bad[0] - 1][:40]!r}",
            bad[0],
        )
    skipped = (f"{path}: line(s) {_numbers(bad)} not mmtests' '<count> <mean ns>'",) if bad else ()
    return LatencyLog("ms", tuple(values), skipped, STUTTERP_MMTESTS.source)


def _probe(path: Path, lines: list[str], header: list[tuple[int, str]]) -> LatencyLog:
    number, unit = None, None
    for number, line in header:
        if m := re.search(r"unit: (\w+)", line):
            unit = _UNITS.get(m[1])
            if unit is None:
                raise InputError(path, f"unknown latency unit {m[1]!r} in the header", number)
    if unit is None:
        raise InputError(path, "the '#' header names no unit ('unit: <word>')", header[0][0])
    values, skipped = [], []
    for number, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        fields = line.split()
        try:
            values.append(float(fields[1]))
        except (IndexError, ValueError):
            skipped.append(f"{path}:{number}: not '<epoch_s> <latency>': {line[:40]!r}")
    return LatencyLog(unit, tuple(values), tuple(skipped), f"the '#' header of {path.name}")


def stutterp_logs(logs: Path) -> LogRead:
    """Rows ``mmap-<workers>`` of stutterp's ``mmap-latency-<workers>.log[.gz]``."""
    samples, read, notes = [], set(), []
    for m, path in _logs(logs, r"mmap-latency-(\d+)\.log(?:\.gz)?"):
        log = stutterp_log(path)
        declared = Declared(log.unit, False, log.unit_source)
        samples += [(f"mmap-{m[1]}", v, declared) for v in log.values]
        read.add(path.name)
        notes += log.skipped
    return LogRead(tuple(samples), frozenset(read), tuple(notes))


# --- usemem ------------------------------------------------------------------------------

_TIME = re.compile(r"([\d.]+)user ([\d.]+)system (?:(\d+):)?(\d+):([\d.]+)elapsed")
USEMEM = Declared(
    "s",
    False,
    f"{_OLD} ExtractUsemem.pm / {_NEW} parsers/time-parse-results: GNU /usr/bin/time "
    "user, system, elapsed (DATA_TIME_SECONDS, TIME_SECONDS)",
)


def usemem_log(path: Path) -> tuple[float, float, float] | None:
    """(user, system, elapsed) seconds of one GNU time output; None when there is none."""
    m = _TIME.search(read_text(path))
    if m is None:
        return None
    elapsed = int(m[3] or 0) * 3600 + int(m[4]) * 60 + float(m[5])
    return float(m[1]), float(m[2]), elapsed


def usemem_logs(logs: Path) -> LogRead:
    """Rows ``user-<threads>``, ``syst-<threads>``, ``elsp-<threads>`` (s), repetitions as
    samples, from ``usemem-<threads>-<rep>`` (mmtests until 2025) or ``time-<threads>-<rep>``
    (mmtests' usemem-bench since commit 2cdb1ab2, 2025-12-28; its parser names the rows
    User-N, System-N, Elapsed-N: mmlab keeps the older names so old and new trees compare).
    ExtractUsemem.pm before that printed only syst and elsp; the user row is current
    mmtests'."""
    samples, read, notes = [], set(), []
    for m, path in _logs(logs, r"(?:usemem|time)-(\d+)-(\d+)"):
        read.add(path.name)
        if (times := usemem_log(path)) is None:
            notes.append(f"{path}: no GNU time line ('<s>user <s>system <clock>elapsed')")
            continue
        samples += [
            (f"{k}-{m[1]}", v, USEMEM) for k, v in zip(("user", "syst", "elsp"), times, strict=True)
        ]
    return LogRead(tuple(samples), frozenset(read), tuple(notes))


# --- thpscale, thpcompact, thpchallenge, thpfioscale -------------------------------------

THP_LATENCY = Declared(
    "us",
    False,
    f"{_OLD} ExtractThpscale.pm: 'fault <thread> base|huge <latency>' (DATA_TIME_USECONDS)",
)
THP_HUGE = Declared(
    "%",
    True,
    f"{_OLD} ExtractThpscalecounts.pm: huge*100/(huge+base) (DATA_ACTIONS: higher is better)",
)


def thp_logs(logs: Path) -> LogRead:
    """Rows of ``threads-<N>.log[.gz]`` (thpscale, thpcompact, thpchallenge, thpfioscale):
    ``fault-base-N``, ``fault-huge-N``, ``fault-both-N`` (us, one sample per fault line)
    and ``huge-N`` (% of faults that got a huge page, one sample per iteration).

    mmtests adds one sample of 0 us to ``fault-base-N`` / ``fault-huge-N`` when the run
    had no such fault, and reports ``huge-N`` as -1 when it had no fault at all; neither is
    a measurement, so mmlab leaves them out and says so in a note."""
    samples, read, notes = [], set(), []
    for m, path in _logs(logs, r"threads-(\d+)\.log(?:\.gz)?"):
        n, counts = m[1], {"base": 0, "huge": 0}
        read.add(path.name)
        for number, line in enumerate(_lines(path), 1):
            if not line.startswith("fault"):
                continue
            fields = line.split()
            try:
                kind, latency = fields[2], float(fields[3])
            except (IndexError, ValueError):
                kind, latency = "", 0.0
            if kind not in counts:
                notes.append(f"{path}:{number}: not 'fault <thread> base|huge <us>': {line[:50]!r}")
                continue
            counts[kind] += 1
            samples += [(f"fault-{kind}-{n}", latency, THP_LATENCY)]
            samples += [(f"fault-both-{n}", latency, THP_LATENCY)]
        for kind in ("base", "huge"):
            if not counts[kind]:
                notes.append(f"{path}: no {kind} fault: mmtests' fake 0 us sample left out")
        total = counts["base"] + counts["huge"]
        if total:
            samples.append((f"huge-{n}", counts["huge"] * 100 / total, THP_HUGE))
        else:
            notes.append(f"{path}: no fault at all: mmtests' huge-{n} of -1 left out")
    return LogRead(tuple(samples), frozenset(read), tuple(notes))


# --- pft ---------------------------------------------------------------------------------

PFT_RATE = Declared(
    "faults/s",
    True,
    f"{_OLD} ExtractPft.pm: pft's flt/cpu/s and fault/wsec columns (DATA_OPS_PER_SECOND)",
)
PFT_TIME = Declared(
    "s", False, f"{_OLD} ExtractPfttime.pm: pft's SysTime and WallTime (DATA_TIME_SECONDS)"
)


def pft_logs(logs: Path) -> LogRead:
    """Rows ``faults/cpu-N``, ``faults/sec-N`` (faults/s) and ``system-N``, ``elapsed-N``
    (s) of ``pft-<clients>.log``: one sample per line ``<size> <threads> <cacheline>
    <user>s <sys>s <wall>s <flt/cpu/s> <fault/wsec>``. As mmtests, a line with any
    letter once the ``s`` suffixes are gone (a header, or ``inf`` when pft printed a
    system time of 0.00s) is not a sample; mmlab says so in a note."""
    samples, read, notes = [], set(), []
    for m, path in _logs(logs, r"pft-(\d+)\.log(?:\.gz)?"):
        read.add(path.name)
        bad = []
        for number, line in enumerate(_lines(path), 1):
            fields = line.replace("s", "").split()
            if re.search(r"[a-zA-Z]", line.replace("s", "")) or len(fields) != 8:
                bad.append(number)
                continue
            system, wall, per_cpu, per_wall = (float(f) for f in fields[4:8])
            samples += [
                (f"faults/cpu-{m[1]}", per_cpu, PFT_RATE),
                (f"faults/sec-{m[1]}", per_wall, PFT_RATE),
                (f"system-{m[1]}", system, PFT_TIME),
                (f"elapsed-{m[1]}", wall, PFT_TIME),
            ]
        if bad:
            notes.append(
                f"{path}: {len(bad)} line(s) not samples, left out as mmtests does (a header, "
                f"or inf when the system time printed 0.00s): line(s) {_numbers(bad)}"
            )
    return LogRead(tuple(samples), frozenset(read), tuple(notes))


# --- pagealloc, hpagealloc ---------------------------------------------------------------

PAGEALLOC = Declared(
    "cycles",
    False,
    f"{_OLD} ExtractPagealloc.pm: pagealloc-micro.stp 'order %2u batch %6lu alloc %llu "
    "free %llu', cycles per page (DATA_TIME_CYCLES)",
)
HPAGEALLOC = Declared(
    "ms",
    False,
    f"{_OLD} ExtractHpagealloc.pm: timed-hpagealloc.pl fifth column, ms per successful "
    "allocation (DATA_TIME_MSECONDS)",
)


def _one_log(logs: Path, name: str) -> Path | None:
    """``logs/name`` or its ``.gz``, when present (a benchmark that writes one log)."""
    return next((p for s in ("", ".gz") if (p := logs / f"{name}{s}").is_file()), None)


def pagealloc_logs(logs: Path) -> LogRead:
    """Rows ``alloc-odr<O>-<batch>``, ``free-odr<O>-<batch>``, ``total-odr<O>-<batch>``
    (cycles) of ``pagealloc.log``. As ExtractPagealloc.pm, the first two lines of each
    batch size are warm-up and left out; mmtests counts them per batch size over all
    orders, and so does mmlab, so that both give the same samples."""
    path = _one_log(logs, "pagealloc.log")
    if path is None:
        return LogRead()
    samples, notes, seen, warm = [], [], {}, []
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        if len(fields) != 8 or fields[0::2] != ["order", "batch", "alloc", "free"]:
            notes.append(f"{path}:{number}: not 'order O batch B alloc A free F': {line[:50]!r}")
            continue
        order, batch, alloc, free = fields[1], fields[3], float(fields[5]), float(fields[7])
        seen[batch] = seen.get(batch, 0) + 1
        if seen[batch] < 3:
            warm.append(number)
            continue
        for op, value in (("alloc", alloc), ("free", free), ("total", alloc + free)):
            samples.append((f"{op}-odr{order}-{batch}", value, PAGEALLOC))
    read = {path.name} | {
        p.name for p in logs.iterdir() if re.fullmatch(r"(alloc|free)-\d+", p.name)
    }
    return LogRead(tuple(samples), frozenset(read), tuple(notes))


def hpagealloc_logs(logs: Path) -> LogRead:
    """Row ``Latency`` (ms per successful huge page allocation) of ``hpagealloc.log``."""
    path = _one_log(logs, "hpagealloc.log")
    if path is None:
        return LogRead()
    samples, notes = [], []
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        try:
            samples.append(("Latency", float(fields[4]), HPAGEALLOC))
        except (IndexError, ValueError):
            notes.append(f"{path}:{number}: no latency in the fifth column: {line[:50]!r}")
    return LogRead(tuple(samples), frozenset({path.name}), tuple(notes))


# --- the user's command (mmlab capture OUT --run NAME -- CMD) ------------------------------

_METRIC_DIRECTIONS = {"higher": True, "lower": False}


def command_logs(logs: Path) -> LogRead:
    """Rows the user's command wrote to ``metrics`` (the path ``mmlab capture`` gave it in
    ``$MMLAB_METRICS``; docs/capture.md "Your own command"): one ``<name> <value> <unit>
    [higher|lower]`` per line, lower is better unless the line says ``higher``; ``#`` lines
    and blank lines are comments. A line in another shape, or a value that is not a finite
    number, is a note naming file and line, never a sample."""
    path = _one_log(logs, "metrics")
    if path is None:
        return LogRead()
    samples, notes = [], []
    for number, line in enumerate(_lines(path), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        try:
            value = float(fields[1]) if len(fields) in (3, 4) else math.nan
        except ValueError:
            value = math.nan
        direction = fields[3] if len(fields) == 4 else "lower"
        if not math.isfinite(value) or direction not in _METRIC_DIRECTIONS:
            notes.append(
                f"{path}:{number}: not '<name> <value> <unit> [higher|lower]' with a finite "
                f"value: {line[:60]!r}"
            )
            continue
        source = f"{path.name} of the command (its line '{fields[0]} <value> {fields[2]}'"
        source += f" {direction})" if len(fields) == 4 else "; lower is better, as it names none)"
        samples.append(
            (fields[0], value, Declared(fields[2], _METRIC_DIRECTIONS[direction], source))
        )
    return LogRead(tuple(samples), frozenset({path.name}), tuple(notes))


# --- the registry and the accounting -----------------------------------------------------


@dataclass(frozen=True)
class Reader:
    """How one benchmark's ``logs/`` is read, and which other files there are known not to
    be results (with why)."""

    read: Callable[[Path], LogRead]
    not_results: tuple[tuple[str, str], ...] = ()


_DRIVER_LOG = (r"(?:mmtests|commands)\.log(?:\.gz)?", "the mmtests driver's logs")
_THP = Reader(thp_logs, (_DRIVER_LOG, (r"threads-\d+\.time", "/usr/bin/time of the whole run")))
READERS: dict[str, Reader] = {
    "stutterp": Reader(
        stutterp_logs,
        (
            _DRIVER_LOG,
            (r"memory-hog-\d+\.log(?:\.gz)?", "memory hog output (mmtests reports none)"),
            (r"fio-\d+\.(?:log|latlog.*)(?:\.gz)?", "fio's own log (mmtests reports none)"),
            (r"fio-config\.\d+", "fio job file"),
            (r"calibrate\.time", "the calibration run's time"),
        ),
    ),
    "usemem": Reader(usemem_logs, (_DRIVER_LOG,)),
    "thpscale": _THP,
    "thpcompact": _THP,
    "thpchallenge": _THP,
    "thpfioscale": _THP,
    "pft": Reader(pft_logs, (_DRIVER_LOG,)),
    "pagealloc": Reader(pagealloc_logs, (_DRIVER_LOG,)),
    "hpagealloc": Reader(hpagealloc_logs, (_DRIVER_LOG,)),
    # mmlab capture's name for the user's command (analysis.capture.command.COMMAND_TEST).
    "command": Reader(
        command_logs, ((r"stdout|stderr", "the command's own output (mmlab reads none)"),)
    ),
}


def read_logs(benchmark: str, logs: Path) -> LogRead:
    """:data:`READERS`' reader of ``benchmark`` on ``logs``, with one more note when
    files are left that are neither read nor known not to be results."""
    reader = READERS[benchmark]
    got = reader.read(logs)
    unknown = sorted(
        p.name
        for p in logs.iterdir()
        if p.name not in got.read
        and not any(re.fullmatch(pat, p.name) for pat, _ in reader.not_results)
    )
    if not unknown:
        return got
    shown = ", ".join(unknown[:4]) + (f" and {len(unknown) - 4} more" if len(unknown) > 4 else "")
    note = (
        f"{logs}: {benchmark}: {len(unknown)} file(s) not understood ({shown}); not read "
        "(give --mmtests DIR to read them through mmtests' parse-results)"
    )
    return LogRead(got.samples, got.read, (*got.notes, note))
