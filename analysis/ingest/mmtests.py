"""mmtests results trees: ``work/log/<RUN>/iter-<N>/``, read directly.

The layout (``docs/mmtests-conventions.md`` "Results tree") is also what ``mmlab capture``
writes, so one reader serves both. Point :func:`find_runs` at a ``work/log`` directory (runs
below it), a run directory (``iter-*`` below it), a single ``iter-N`` directory, or any
directory that holds such trees further down (a capture's folder under ``data/``).

Trees as mmtests leaves them on disk (see ``data/mmtests-ci``) are read as they are:

- the snapshot file is chosen by content among ``tests-sysstate`` and its compressed
  forms: real trees hold a 12-byte ``tests-sysstate`` (``status :: 0``) beside the
  ``tests-sysstate.gz`` that has the snapshots;
- with no ``tests-timestamp``, the test list comes from the monitor file names and the
  elapsed time from the proc-vmstat monitor's span (the source says so);
- an empty ``iter-N`` directory, or iterations with a gap (``iter-0`` and ``iter-2``
  without ``iter-1``), are errors naming the directory;
- an iteration that a capture did not finish, or whose workload failed (an
  ``mmlab-incomplete`` file in it, saying why when it failed, or no
  ``mmlab.json`` where its run's other iterations have one: interrupted or killed while
  writing) is left out, with a note on stderr, unless ``MMLAB_INCLUDE_INCOMPLETE=1``
  (``mmlab --include-incomplete``): its trace may be truncated and its counters cover
  part of the workload, so as a full run it would show a change that is not there;
- run directories of the same name in different places (CI archives keep one
  ``work/log.<host>.<date>/<config>`` per run, all named after the config) are named
  ``<config>@<parent>`` so that comparisons keep them apart.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest import capture_meta, vmstat
from analysis.ingest.capture_meta import MMLAB_JSON, IterationMeta
from analysis.ingest.kconfig import config_hz, page_size
from analysis.ingest.textfile import read_text

__all__ = [
    "FAILED",
    "FAILED_PREFIX",
    "INCLUDE_INCOMPLETE",
    "INCOMPLETE",
    "Iteration",
    "Machine",
    "Run",
    "TestTimes",
    "find_runs",
    "is_iteration",
    "machine_of",
    "read_timestamps",
    "sysstate_file",
    "unique_runs",
]

_ITER = re.compile(r"iter-(\d+)")
# Written by mmlab capture when it begins an iteration, removed when the iteration is done.
INCOMPLETE = "mmlab-incomplete"
# ... and kept, its text starting with this, when the iteration's workload failed (a writer's
# ENOSPC, the user's command's non-zero exit): the rest of its first line says why.
FAILED_PREFIX = "failed: "
# Written by mmlab capture --kernel into an iteration that ran but did not exercise its
# setting (no reclaim, a trace contradicting the knobs); holds the reason.
FAILED = "mmlab-failed"
# Environment variable: "1" makes incomplete iterations count (set by --include-incomplete).
INCLUDE_INCOMPLETE = "MMLAB_INCLUDE_INCOMPLETE"
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


_COMPRESSED = ("", ".gz", ".zst", ".xz")


def _first(directory: Path, stem: str) -> Path | None:
    """``stem`` or its compressed form, in that order, when present."""
    return next((p for s in _COMPRESSED if (p := directory / f"{stem}{s}").is_file()), None)


def sysstate_file(directory: Path) -> Path | None:
    """The ``tests-sysstate`` variant that holds snapshots (plain, .gz, .zst, .xz, in that
    order); when none does, the first present, so that reading it explains why."""
    present = [p for s in _COMPRESSED if (p := directory / f"tests-sysstate{s}").is_file()]
    return next((p for p in present if vmstat.holds_snapshots(read_text(p))), None) or next(
        iter(present), None
    )


@dataclass(frozen=True)
class Machine:
    """What a plain mmtests iteration says of its machine: ``kernel.version`` (``uname -a``,
    or ``/proc/version``), ``lscpu.txt`` and the first ``MemTotal`` of tests-sysstate's
    meminfo block. Empty / None where the file is missing or silent."""

    kernel_release: str = ""
    hostname: str = ""
    cpu_model: str = ""
    logical_cpus: int | None = None
    mem_total_kib: int | None = None


def _uname(text: str) -> tuple[str, str]:
    """(release, hostname) of ``uname -a`` ("Linux HOST RELEASE #1 ...") or of
    /proc/version ("Linux version RELEASE (builder@host) ..."; no hostname of the machine)."""
    words = text.split()
    if len(words) < 3 or words[0] != "Linux":
        return (words[0] if words else ""), ""
    return words[2], "" if words[1] == "version" else words[1]


def _field(text: str, name: str) -> str:
    found = re.search(rf"^{re.escape(name)}:\s*(.+)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


def machine_of(directory: Path) -> Machine:
    """:class:`Machine` of an mmtests iteration directory."""
    version, lscpu, sysstate = (
        _first(directory, "kernel.version"),
        _first(directory, "lscpu.txt"),
        sysstate_file(directory),
    )
    release, host = _uname(read_text(version)) if version else ("", "")
    cpu = read_text(lscpu) if lscpu else ""
    mem = _field(read_text(sysstate), "MemTotal") if sysstate else ""
    cpus = _field(cpu, "CPU(s)")
    return Machine(
        kernel_release=release,
        hostname=host,
        cpu_model=_field(cpu, "Model name"),
        logical_cpus=int(cpus) if cpus.isdigit() else None,
        mem_total_kib=int(mem.split()[0]) if mem[:1].isdigit() else None,
    )


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
    def metadata(self) -> IterationMeta | None:
        """``mmlab.json`` written by ``mmlab capture`` (None for plain mmtests trees)."""
        return capture_meta.read_iteration(self.path)

    @cached_property
    def kernel_build(self) -> str | None:
        """The kernel build that ran the iteration, from ``kernel.version``: its release and
        build stamp (``4.18.0-184.el8.ppc64le #1 SMP Wed Feb 26 ...``), the same for every
        boot of one build; None when the file was not saved."""
        version = _first(self.path, "kernel.version")
        text = read_text(version).strip() if version else ""
        release, _ = _uname(text)
        stamp = text[text.index("#") :] if "#" in text else ""
        return f"{release} {stamp}".strip() or None

    @cached_property
    def machine(self) -> Machine:
        """The machine as the plain mmtests files describe it (:func:`machine_of`)."""
        return machine_of(self.path)

    def _kconfig(self, value: Callable[[str], int | None]) -> int | None:
        """``value`` of the first ``kconfig-*`` that has it (None when none was saved)."""
        for candidate in sorted(self.path.glob("kconfig-*")):
            if (found := value(read_text(candidate))) is not None:
                return found
        return None

    @property
    def config_hz(self) -> int | None:
        """CONFIG_HZ of the capturing kernel from ``kconfig-*`` (None when not saved)."""
        return self._kconfig(config_hz)

    @property
    def page_size(self) -> int | None:
        """PAGE_SIZE in bytes of the capturing kernel from ``kconfig-*`` (None when not
        saved or not stated)."""
        return self._kconfig(page_size)

    def counter_deltas(self, test: str) -> dict[str, int]:
        """Counter increments of /proc/vmstat over the iteration (see :meth:`vmstat`);
        counters that went down (:class:`~analysis.ingest.vmstat.CounterReset`) are left out."""
        deltas, _ = self.vmstat(test).deltas
        return {
            c: int(deltas[c].sum())
            for c in deltas.columns
            if c not in {"interval", "epoch_s", "dt_s"} and deltas[c].null_count() == 0
        }

    def vmstat_monitor(self, test: str) -> vmstat.Samples | None:
        """The proc-vmstat monitor log of ``test``, or None when it was not monitored."""
        found = _first(self.path, f"proc-vmstat-{test}")
        return vmstat.read(found) if found else None

    @cached_property
    def _vmstat_read(self) -> dict[str, vmstat.Samples]:
        """:meth:`vmstat` by test, once read and checked: a run's endpoints, distrust and
        ops report each ask for every iteration's (parsing and checking is most of it)."""
        return {}

    def vmstat(self, test: str) -> vmstat.Samples:
        """The before/after vmstat of the iteration: tests-sysstate (:func:`sysstate_file`),
        else the monitor's first and last sample. Snapshots whose counters nearly all go
        down (swapped, or two machines) are an InputError naming the file: an iteration
        left out of the mean would still be counted in its "Iterations N"."""
        if test not in self._vmstat_read:
            self._vmstat_read[test] = self._read_vmstat(test)
        return self._vmstat_read[test]

    def _read_vmstat(self, test: str) -> vmstat.Samples:
        sysstate = sysstate_file(self.path)
        if sysstate is not None:
            samples = vmstat.read(sysstate)
            first, second = "'file start :: /proc/vmstat'", "'file end :: /proc/vmstat'"
        else:
            monitor = self.vmstat_monitor(test)
            if monitor is None:
                raise InputError(self.path, "no tests-sysstate and no proc-vmstat monitor")
            samples = monitor
            first, second = "the monitor's first sample", "a later one"
        where = sysstate or samples.source
        vmstat.check_order(samples, first, second, "swapped, or from two machines", where)
        return samples


@dataclass(frozen=True)
class Run:
    """A run (one kernel or configuration): its name is the column heading in comparisons."""

    name: str
    path: Path
    iterations: tuple[Iteration, ...]

    @cached_property
    def emulated(self) -> str | None:
        """A sentence when the run was captured in a guest whose CPUs were emulated (TCG),
        from the ``vm.json`` that ``mmlab capture --kernel`` writes beside the iterations;
        None for a host capture, a KVM guest or a plain mmtests tree. Times under emulation
        are not bare-metal times (docs/patched-kernels.md "Running a capture in a guest").
        Read once per run: the report asks for every iteration's provenance."""
        vm = capture_meta.read_vm(self.path)
        if vm is None:
            return None
        if vm.accelerator is None:
            raise InputError(vm.path, "no 'accelerator': the guest's platform is not recorded")
        if vm.accelerator != "tcg":
            return None
        return (
            f"{self.name} was captured in a TCG-emulated guest ({vm.path}): its times are not "
            "bare-metal times; compare it only with runs of the same platform"
        )


def _checked(iteration: Path) -> Path:
    """``iteration`` itself, or an error when mmtests left it empty (a run that died)."""
    if not any(iteration.iterdir()):
        raise InputError(iteration, "empty iteration directory: the run left no files")
    return iteration


def _incomplete(iteration: Path, run_has_metadata: bool) -> str | None:
    """Why ``iteration`` was not finished by its capture, or its workload failed, or it did
    not exercise what it was run for (``mmlab-failed``, with the reason); None if it was
    finished and did. A damaged ``mmlab.json`` is an error here, where every command finds
    its iterations, rather than in the commands that happen to read it."""
    capture_meta.read_iteration(iteration)
    marker = iteration / INCOMPLETE
    if marker.exists():
        first = (marker.read_text(errors="replace").splitlines() or [""])[0]
        if first.startswith(FAILED_PREFIX):
            return f"its workload failed ({first.removeprefix(FAILED_PREFIX)}; {INCOMPLETE})"
        return "its capture was interrupted (mmlab-incomplete)"
    if (failed := iteration / FAILED).exists():
        return f"its run failed: {read_text(failed).strip()} (mmlab-failed)"
    if run_has_metadata and not (iteration / MMLAB_JSON).exists():
        return f"no {MMLAB_JSON} where the run's other iterations have one (capture killed)"
    return None


def _complete(run_dir: Path, found: list[Path]) -> list[Path]:
    """``found`` without the incomplete iterations (each named on stderr), unless
    :data:`INCLUDE_INCOMPLETE` is set; an error when none is left."""
    if os.environ.get(INCLUDE_INCOMPLETE) == "1":
        return found
    with_meta = any((p / MMLAB_JSON).exists() for p in found)
    kept = []
    for p in found:
        if (why := _incomplete(p, with_meta)) is None:
            kept.append(p)
        else:
            print(
                f"mmlab: left out {p}: {why} (mmlab --include-incomplete uses it)",
                file=sys.stderr,
            )
    if not kept:
        raise InputError(
            run_dir, "every iteration is incomplete (mmlab --include-incomplete uses them)"
        )
    return kept


def _iterations(run_dir: Path, name: str) -> tuple[Iteration, ...]:
    found = sorted(
        (int(m[1]), p) for p in run_dir.iterdir() if p.is_dir() and (m := _ITER.fullmatch(p.name))
    )
    indices = [i for i, _ in found]
    if missing := sorted(set(range(indices[-1] + 1)) - set(indices)):
        have = ", ".join(f"iter-{i}" for i in indices)
        raise InputError(
            run_dir,
            f"iterations {have} but no iter-{missing[0]}: an iteration is missing "
            "(copy it, or point mmlab at each iter-N directory alone)",
        )
    complete = set(_complete(run_dir, [_checked(p) for _, p in found]))
    return tuple(Iteration(name, i, p) for i, p in found if p in complete)


def _run_names(run_dirs: list[Path]) -> list[str]:
    """Directory names, with ``@<parent>`` added where several runs share a name."""
    counts: dict[str, int] = {}
    for d in run_dirs:
        counts[d.name] = counts.get(d.name, 0) + 1
    names = [d.name if counts[d.name] == 1 else f"{d.name}@{d.parent.name}" for d in run_dirs]
    # Parents of the same name too (a/x/run, b/x/run): the whole paths tell them apart.
    return names if len(set(names)) == len(names) else [str(d) for d in run_dirs]


def is_iteration(path: Path) -> bool:
    """``path`` is named as an mmtests iteration directory (``iter-N``)."""
    return _ITER.fullmatch(path.name) is not None


def find_runs(path: str | Path) -> tuple[Run, ...]:
    """Every run at or below ``path`` (see module docstring), in path order."""
    root = Path(path)
    if not root.exists():
        raise InputError(root, "no such file or directory")
    if not root.is_dir():
        raise InputError(root, "not a directory")
    if _ITER.fullmatch(root.name):
        run_dir = root.parent
        _complete(root, [_checked(root)])
        iteration = Iteration(run_dir.name, int(root.name[5:]), root)
        return (Run(run_dir.name, run_dir, (iteration,)),)
    run_dirs = sorted(
        {p.parent for p in root.rglob("iter-*") if p.is_dir() and _ITER.fullmatch(p.name)}
    )
    if not run_dirs:
        raise InputError(root, "no mmtests run here (no iter-N directories below it)")
    return tuple(
        Run(name, d, _iterations(d, name))
        for name, d in zip(_run_names(run_dirs), run_dirs, strict=True)
    )


def unique_runs(runs: tuple[Run, ...]) -> tuple[Run, ...]:
    """Runs found from several command-line paths, renamed as :func:`find_runs` would had
    they been found together (each path alone cannot see the others' names)."""
    seen: set[Path] = set()
    for run in runs:
        if run.path.resolve() in seen:
            raise InputError(run.path, "the same run is given twice")
        seen.add(run.path.resolve())
    names = _run_names([r.path for r in runs])
    return tuple(
        Run(name, r.path, tuple(Iteration(name, it.index, it.path) for it in r.iterations))
        for name, r in zip(names, runs, strict=True)
    )
