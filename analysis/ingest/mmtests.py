"""mmtests results trees: ``work/log/<RUN>/iter-<N>/``, read directly.

The layout (``docs/mmtests-conventions.md`` "Results tree") is also what ``mmlab capture``
writes, so one reader serves both. Point :func:`find_runs` at a ``work/log`` directory (runs
below it), a run directory (``iter-*`` below it), a single ``iter-N`` directory, or any
directory that holds such trees further down (a capture's folder under ``data/``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest import vmstat
from analysis.ingest.kconfig import config_hz
from analysis.ingest.textfile import read_text

__all__ = ["Iteration", "Run", "TestTimes", "find_runs", "read_timestamps"]

_ITER = re.compile(r"iter-(\d+)")
_BEGIN = re.compile(r"test begin :: (\S+) (\d+(?:\.\d+)?)")
_END = re.compile(r"test end :: (\S+) (\d+(?:\.\d+)?)(?: (-?\d+))?")
# mmtests writes /usr/bin/time's figures: "<s> user <s> system <elapsed> elapsed", where
# elapsed may be plain seconds or GNU time's [h:]mm:ss.ss, with or without the space.
_TIME = re.compile(
    r"time :: (\S+) ([\d.]+) ?user ([\d.]+) ?system ((?:\d+:)?(?:\d+:)?[\d.]+) ?elapsed.*"
)


def _seconds(clock: str) -> float:
    """``1:02:03.5`` / ``2:03.5`` / ``123.5`` → seconds."""
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


@dataclass(frozen=True)
class TestTimes:
    """One test's lines in ``tests-timestamp``: begin/end epochs, exit code, /usr/bin/time."""

    test: str
    begin_epoch: float | None = None
    end_epoch: float | None = None
    rc: int | None = None
    user_s: float | None = None
    system_s: float | None = None
    elapsed_s: float | None = None


def read_timestamps(path: Path) -> dict[str, TestTimes]:
    """Parse ``tests-timestamp``; lines of other kinds (mmtests logs more) are ignored."""
    fields: dict[str, dict] = {}
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        line = line.strip()
        if m := _BEGIN.fullmatch(line):
            fields.setdefault(m[1], {})["begin_epoch"] = float(m[2])
        elif m := _END.fullmatch(line):
            rec = fields.setdefault(m[1], {})
            rec["end_epoch"] = float(m[2])
            rec["rc"] = int(m[3]) if m[3] is not None else None
        elif m := _TIME.fullmatch(line):
            rec = fields.setdefault(m[1], {})
            rec.update(user_s=float(m[2]), system_s=float(m[3]), elapsed_s=_seconds(m[4]))
        elif line.startswith("time ::"):
            raise InputError(path, f"unreadable time line {line[:70]!r}", lineno)
    return {test: TestTimes(test, **rec) for test, rec in fields.items()}


def _first(directory: Path, *patterns: str) -> Path | None:
    for pattern in patterns:
        found = sorted(directory.glob(pattern))
        if found:
            return found[0]
    return None


@dataclass(frozen=True)
class Iteration:
    """One ``iter-N`` directory of a run. ``times`` and ``metadata`` are read once, when
    first used: test selection, elapsed time and every analysis ask for them."""

    run: str
    index: int
    path: Path

    @cached_property
    def times(self) -> dict[str, TestTimes]:
        ts = self.path / "tests-timestamp"
        return read_timestamps(ts) if ts.exists() else {}

    @property
    def tests(self) -> list[str]:
        """Tests of this iteration: from tests-timestamp, else from monitor file names."""
        names = list(self.times)
        if not names:
            names = sorted(
                p.name.removeprefix("proc-vmstat-").split(".")[0]
                for p in self.path.glob("proc-vmstat-*")
                if not p.name.endswith(".start")
            )
        return names

    @cached_property
    def metadata(self) -> dict:
        """``mmlab.json`` written by ``mmlab capture`` (empty for plain mmtests trees)."""
        meta = self.path / "mmlab.json"
        return json.loads(meta.read_text()) if meta.exists() else {}

    @property
    def config_hz(self) -> int | None:
        """CONFIG_HZ of the capturing kernel from ``kconfig-*`` (None when not saved)."""
        for candidate in sorted(self.path.glob("kconfig-*")):
            if (hz := config_hz(read_text(candidate))) is not None:
                return hz
        return None

    def counter_deltas(self, test: str) -> dict[str, int]:
        """Counter increments of /proc/vmstat over the iteration (see :meth:`vmstat`);
        counters that went down (:class:`~analysis.ingest.vmstat.CounterReset`) are left out."""
        deltas, _ = vmstat.counter_deltas(self.vmstat(test))
        return {
            c: int(deltas[c].sum())
            for c in deltas.columns
            if c not in {"interval", "epoch_s", "dt_s"} and deltas[c].null_count() == 0
        }

    def vmstat_monitor(self, test: str) -> vmstat.Samples | None:
        """The proc-vmstat monitor log of ``test``, or None when it was not monitored."""
        found = _first(
            self.path, f"proc-vmstat-{test}.gz", f"proc-vmstat-{test}.zst", f"proc-vmstat-{test}"
        )
        return vmstat.read(found) if found else None

    def vmstat(self, test: str) -> vmstat.Samples:
        """The before/after vmstat of the iteration: tests-sysstate, else the monitor's
        first and last sample."""
        sysstate = _first(self.path, "tests-sysstate", "tests-sysstate.gz")
        if sysstate is not None:
            return vmstat.read(sysstate)
        monitor = self.vmstat_monitor(test)
        if monitor is None:
            raise InputError(self.path, "no tests-sysstate and no proc-vmstat monitor")
        return monitor


@dataclass(frozen=True)
class Run:
    """A run (one kernel or configuration): its name is the column heading in comparisons."""

    name: str
    path: Path
    iterations: tuple[Iteration, ...]


def _iterations(run_dir: Path) -> tuple[Iteration, ...]:
    found = [
        (int(m[1]), p) for p in run_dir.iterdir() if p.is_dir() and (m := _ITER.fullmatch(p.name))
    ]
    return tuple(Iteration(run_dir.name, i, p) for i, p in sorted(found))


def find_runs(path: str | Path) -> tuple[Run, ...]:
    """Every run at or below ``path`` (see module docstring), in path order."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(root, "not a directory")
    if _ITER.fullmatch(root.name):
        run_dir = root.parent
        return (Run(run_dir.name, run_dir, (Iteration(run_dir.name, int(root.name[5:]), root),)),)
    run_dirs = sorted(
        {p.parent for p in root.rglob("iter-*") if p.is_dir() and _ITER.fullmatch(p.name)}
    )
    runs = tuple(Run(d.name, d, _iterations(d)) for d in run_dirs)
    if not runs:
        raise InputError(root, "no mmtests run here (no iter-N directories below it)")
    return runs
