"""Orchestrate ``mmlab capture``: preflight, per-iteration capture, and signal-safe restore.

Everything changed on the machine (sysctls, the tracefs instance's settings and the
instance itself, the memory cgroup and its processes, the writers' files) is written to the
on-disk :mod:`~analysis.capture.journal` before it is changed and registered on a
:class:`Restorer` as it is changed (signals deferred in between, so no signal falls between
a change and its undo); the restorer runs on normal exit, on any exception, and on SIGINT,
SIGTERM, SIGHUP and SIGQUIT (turned into :class:`Interrupted` so ``finally`` runs). After
SIGKILL the journal is replayed by the next capture or ``mmlab capture --recover``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import zstandard

from analysis import __version__
from analysis.capture import PACKAGE_PARENT, journal, metadata, sysctl, tracefs
from analysis.capture.cgroup import MemCgroup, find_memory_hierarchy
from analysis.capture.checks import (
    cgroup_limit_bytes,
    check_machine,
    dirty_ratio_for,
    make_out,
    plans_for,
)
from analysis.capture.command import (
    COMMAND_TEST,
    METRICS_ENV,
    METRICS_FILE,
    describe_status,
    start_command,
    wait_child,
)
from analysis.capture.monitor import CGROUP_PSI_FILE, PSI_FILE, PSI_MEMORY, Monitor, Stream
from analysis.capture.plan import MIB, PhasePlan
from analysis.capture.workload import worker_errors
from analysis.errors import InputError
from analysis.ingest.capture_meta import CAPTURE_TOOL, MMLAB_JSON, IterationMeta, read_iteration
from analysis.ingest.mmtests import FAILED_PREFIX, INCOMPLETE

__all__ = [
    "LOCK_PATH",
    "SIGNALS",
    "WORK_PREFIX",
    "CaptureConfig",
    "Interrupted",
    "MachineBusy",
    "Progress",
    "Restorer",
    "WorkloadFailed",
    "capture",
    "fs_type",
    "lock_holder",
    "machine_lock",
    "preflight",
    "preflight_machine",
    "raise_on_signals",
    "recover",
    "remove_stale",
    "signals_deferred",
]

TEST = "stutterp"
# Filesystems whose pages are not written back (shmem) cannot produce dirty/writeback pages.
NO_WRITEBACK_FS = {"tmpfs", "ramfs"}
# One capture per machine: see machine_lock.
# One capture (host or guest) at a time per machine; tests that run mmlab as a subprocess
# point it elsewhere.
LOCK_PATH = Path(os.environ.get("MMLAB_CAPTURE_LOCK", "/run/lock/mmlab-capture.lock"))
# Signals that end a capture with its state restored: Ctrl-C, kill, a dropped ssh session
# (SIGHUP) and Ctrl-\ (SIGQUIT). SIGKILL cannot be caught: the journal covers it.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# The writers' files of capture PID: OUT/.mmlab-work-PID (removed with a dead PID's leftovers).
WORK_PREFIX = ".mmlab-work-"


class Interrupted(BaseException):
    """One of :data:`SIGNALS` arrived; raised in the main thread so cleanup runs in
    ``finally``. ``incomplete`` names the iteration directory it cut short, if any.

    ``args == (signum,)`` so it pickles (see :mod:`analysis.errors`); ``str`` is the name.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.incomplete: Path | None = None

    def __str__(self) -> str:
        return signal.Signals(self.signum).name


class WorkloadFailed(Exception):
    """An iteration's workload failed (:func:`workload_failures`): the capture stops after
    it, with everything restored; ``iteration`` is its directory, kept and marked."""

    def __init__(self, iteration: Path, reasons: list[str]) -> None:
        super().__init__(iteration, reasons)
        self.iteration = iteration
        self.reasons = reasons

    def __str__(self) -> str:
        return f"{self.iteration}: the workload failed: {'; '.join(self.reasons)}"


@dataclass
class _Deferral:
    """Signals that arrived inside :func:`signals_deferred` blocks, raised on leaving them,
    and whether an :class:`Interrupted` was raised already in this :func:`raise_on_signals`
    block: only the first signal interrupts; later ones (a second Ctrl-C during the
    teardown the first one started) are only recorded, so no ``finally`` is cut short."""

    depth: int = 0
    pending: list[int] = field(default_factory=list)
    raised: bool = False


_DEFERRAL = _Deferral()


def _interrupt(signum: int) -> None:
    _DEFERRAL.raised = True
    raise Interrupted(signum)


def _raise_interrupted(signum, frame) -> None:
    if _DEFERRAL.depth or _DEFERRAL.raised:
        _DEFERRAL.pending.append(signum)
        return
    _interrupt(signum)


@contextlib.contextmanager
def raise_on_signals(signums=SIGNALS) -> Iterator[None]:
    """Turn the first of the given signals into :class:`Interrupted` inside the block (later
    ones are recorded, never raised: see :class:`_Deferral`); restore handlers after."""
    saved = (_DEFERRAL.raised, list(_DEFERRAL.pending))
    _DEFERRAL.raised, _DEFERRAL.pending[:] = False, []
    previous = {s: signal.signal(s, _raise_interrupted) for s in signums}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _DEFERRAL.raised, _DEFERRAL.pending[:] = saved


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold back :class:`Interrupted` until the block ends (a change and the registration of
    its undo happen together or not at all). Done in the Python handler, not with
    ``pthread_sigmask``: the kernel may deliver a signal to another thread (the progress
    display's), whose mask the main thread cannot set."""
    _DEFERRAL.depth += 1
    try:
        yield
    finally:
        _DEFERRAL.depth -= 1
    # Only on a normal exit: an exception leaving the block is not replaced (a held signal
    # then interrupts at the next block's end, or was the first and has been raised).
    if not _DEFERRAL.depth and _DEFERRAL.pending and not _DEFERRAL.raised:
        signum = _DEFERRAL.pending[0]
        _DEFERRAL.pending.clear()
        _interrupt(signum)


@dataclass
class Restorer:
    """Undo actions, run last-registered-first; each runs once even if another fails.

    Signals are held back while undoing (:func:`signals_deferred`) so a Ctrl-C cannot
    leave the machine half restored. Failures are collected in ``errors`` (name, message)
    and re-raised as one.
    """

    actions: list[tuple[str, Callable[[], None]]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    def push(self, name: str, action: Callable[[], None]) -> None:
        self.actions.append((name, action))

    def run(self) -> None:
        with signals_deferred():
            while self.actions:
                name, action = self.actions.pop()
                try:
                    action()
                except Exception as exc:
                    self.errors.append((name, f"{type(exc).__name__}: {exc}"))
        if self.errors:
            raise RuntimeError(
                "restore incomplete: " + "; ".join(f"{n}: {m}" for n, m in self.errors)
            )


@dataclass(frozen=True)
class CaptureConfig:
    """Everything one ``mmlab capture`` invocation was asked to do."""

    out: Path
    run: str
    iterations: int = 3
    workers: tuple[int, ...] = (4, 8, 16)
    duration_s: float = 10.0
    limit_mb: int = 512
    events_include: tuple[str, ...] = ()
    sets: tuple[tuple[str, str], ...] = ()
    interval_s: float = 1.0
    buffer_kb: int = 8192
    compression: str = "zst"
    warmup_s: float = 1.0
    probe_map_mib: int = 1
    probe_s: float = 2.0
    command_line: tuple[str, ...] = ()
    system_wide: bool = False
    slab_files: int = 0
    negative_dentries: int = 0
    pressure: str = "cgroup"
    # The user's command (``-- CMD ARGS``), run instead of the built-in workload, in
    # ``command_cwd``, killed after ``command_timeout_s``.
    command: tuple[str, ...] = ()
    command_cwd: Path = Path(".")
    command_timeout_s: float | None = None
    # Run the built-in workload's phases too, while the command runs (``--beside``).
    beside: bool = False


@dataclass
class Progress:
    """What the progress display shows; updated in place by :func:`capture`."""

    stage: str = "preflight"
    iteration: int = 0
    iterations: int = 0
    workers: int = 0
    phase_elapsed_s: float = 0.0
    phase_duration_s: float = 0.0
    trace_bytes: int = 0
    trace_bytes_compressed: int = 0
    lost_events: int = 0
    oom_kills: int = 0
    messages: list[str] = field(default_factory=list)


class CountingSink:
    """A file-like that counts bytes written through it (compressed trace size)."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.bytes = 0

    def write(self, data: bytes) -> int:
        self.bytes += len(data)
        return self.raw.write(data) if self.raw is not None else len(data)

    def flush(self) -> None:
        if self.raw is not None:
            self.raw.flush()


def open_trace_sink(path: Path | None, compression: str):
    """(compressor stream, byte-counting sink) writing zstd or gzip to ``path`` (None: discard)."""
    raw = open(path, "wb") if path is not None else None  # noqa: SIM115 (closed by the caller)
    counter = CountingSink(raw)
    if compression == "zst":
        stream = zstandard.ZstdCompressor(level=9).stream_writer(counter, closefd=False)
    else:
        import gzip

        stream = gzip.GzipFile(fileobj=counter, mode="wb", compresslevel=6)
    return stream, counter


def clock_pair() -> tuple[float, float]:
    """Simultaneous (epoch seconds, CLOCK_MONOTONIC seconds) = the instance's ``mono`` clock."""
    m0 = time.clock_gettime(time.CLOCK_MONOTONIC)
    epoch = time.time()
    m1 = time.clock_gettime(time.CLOCK_MONOTONIC)
    return epoch, (m0 + m1) / 2


def fs_type(path: Path, mounts_text: str) -> str:
    """Filesystem type of the mount holding ``path`` (longest matching mount point)."""
    best, kind = "", "unknown"
    target = str(path.resolve())
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 3 or len(fields[1]) < len(best):
            continue
        if target == fields[1] or target.startswith(fields[1].rstrip("/") + "/"):
            best, kind = fields[1], fields[2]
    return kind


def preflight_machine() -> dict[str, object]:
    """Root, tracefs and the memory controller (what :func:`recover` needs); clear errors.
    Changes nothing: tracefs, if not mounted, is mounted by :func:`capture` (journalled)."""
    if os.geteuid() != 0:
        raise InputError("mmlab capture", "must run as root (tracefs and cgroups need it)")
    hierarchy = find_memory_hierarchy(Path("/proc/mounts").read_text())
    if hierarchy is None:
        raise InputError("/proc/mounts", "no memory cgroup controller mounted (v2 or v1)")
    return {
        "tracefs": tracefs.TRACEFS,
        "tracefs_mounted": tracefs.tracefs_state(),
        "cgroup_version": hierarchy[0],
        "cgroup_root": hierarchy[1],
    }


def check_events(tfs: Path, include: tuple[str, ...]) -> None:
    """``--events`` names this kernel has (read from a mounted tracefs at ``tfs``)."""
    if unknown := tracefs.unknown_events(tfs / "events", include):
        raise InputError(
            "--events", f"not events of this kernel: {', '.join(unknown)} (see {tfs}/events)"
        )


def preflight(cfg: CaptureConfig) -> dict[str, object]:
    """:func:`preflight_machine`, a disk filesystem for OUT (the built-in writers need
    writeback), the ``--set`` sysctls' checks and, when tracefs is mounted, known
    ``--events`` (else they are checked right after mounting it, before OUT is created).

    (The arguments were checked by :func:`~analysis.capture.checks.check_machine`.)
    """
    pre = preflight_machine()
    kind = fs_type(cfg.out, Path("/proc/mounts").read_text())
    if kind in NO_WRITEBACK_FS and (cfg.beside or not cfg.command):
        raise InputError(cfg.out, f"is on {kind}: file writers need a disk filesystem")
    for name, value in cfg.sets:
        sysctl.check_assignment(name, value, sysctl.PROC_SYS)
    if pre["tracefs_mounted"]:
        check_events(pre["tracefs"], cfg.events_include)
    return {**pre, "fs": kind}


def launch(cg: MemCgroup, spec: dict, spec_path: Path) -> subprocess.Popen:
    """Start the workload launcher inside ``cg``: a shell joins the cgroup, then execs Python.
    Its stderr is a pipe: a worker that dies of an exception says why there (one line)."""
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    script = 'echo $$ > "$1" && exec "$2" -m analysis.capture.workload "$3"'
    return subprocess.Popen(
        ["/bin/sh", "-c", script, "sh", str(cg.procs_file), sys.executable, str(spec_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def wait_launcher(
    proc: subprocess.Popen, timeout_s: float, tick: Callable[[], None]
) -> tuple[dict, float, float]:
    """Wait for the launcher, calling ``tick`` ~4x/s: (its JSON result with ``returncode``
    and the workers' ``errors`` by pid, user s, system s)."""
    ended = wait_child(proc, timeout_s, tick)
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    result = json.loads(out.splitlines()[-1]) if out.strip() else {"children": []}
    result["returncode"] = proc.returncode
    result["errors"] = worker_errors(err)
    # The launcher's own last words (a traceback's last line), for a launcher that failed.
    result["stderr_tail"] = (err.strip().splitlines() or [""])[-1]
    return result, ended.user_s, ended.system_s


def workload_failures(phases: list[dict]) -> list[str]:
    """Why an iteration's workload failed, one line per cause (none: it did not): the
    user's command ended other than ``exit 0``, or a built-in worker or its launcher ended
    with a non-zero exit status (a writer's ENOSPC, say). A worker ended by a signal is
    not one: SIGTERM/SIGKILL at the phase's end, or the cgroup's OOM killer (counted and
    warned about as ``oom_kills``)."""
    out = []
    for ph in phases:
        if "command" in ph:
            if ph["exit_status"] != 0:
                oom = f"; the cgroup's OOM killer fired {ph['oom_kills']} time(s)"
                timeout = "; killed after --timeout" if ph["timed_out"] else ""
                out.append(
                    f"the command ended {ph['ended']}{oom if ph['oom_kills'] else ''}{timeout}"
                )
            continue
        for child in ph["workers_ended"]:
            if child["ended"].startswith("exit ") and child["ended"] != "exit 0":
                why = ph["worker_errors"].get(str(child["pid"]), "no message")
                out.append(
                    f"{ph['workers']} workers: {child['role']} pid {child['pid']} ended "
                    f"{child['ended']} ({why})"
                )
        if ph["launcher_rc"] != 0:
            out.append(
                f"{ph['workers']} workers: the launcher ended "
                f"{describe_status(ph['launcher_rc'])} ({ph['launcher_stderr'] or 'no message'})"
            )
    return out


@dataclass
class Session:
    """Live handles of a running capture (cgroup, trace instance, work dir, restorer)."""

    cfg: CaptureConfig
    cg: MemCgroup
    inst: tracefs.TraceInstance
    work_dir: Path
    events: list[str]
    progress: Progress
    tick: Callable[[Progress], None]

    def phase_spec(self, plan: PhasePlan, log_path: Path, duration_s: float) -> dict:
        return {
            "mode": "phase",
            **plan.as_dict(),
            "work_dir": str(self.work_dir),
            "log_path": str(log_path),
            "duration_s": duration_s,
            "warmup_s": self.cfg.warmup_s,
            "seed": plan.workers * 1000,
            "slab_files": self.cfg.slab_files,
            "negative_dentries": self.cfg.negative_dentries,
        }

    def _follow(self, pid: int) -> None:
        if not self.cfg.system_wide:
            # The shell is still starting; what it execs forks well after this write.
            self.inst.follow([pid])

    def _ticker(self) -> Callable[[], None]:
        t0 = time.monotonic()

        def tick() -> None:
            self.progress.phase_elapsed_s = time.monotonic() - t0
            self.tick(self.progress)

        return tick

    def _cleanup(self, group: int | None = None) -> list[int]:
        """Kill what is left in the cgroup, or only process group ``group`` (a launcher's
        workers beside the user's command), and remove the writers' files (signals held:
        a Ctrl-C here must not leave writers running); returns the pids of the cgroup
        that were killed."""
        with signals_deferred():
            if group is None:
                left = self.cg.pids()
                self.cg.kill_all()
            else:
                left = []
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
            for f in self.work_dir.glob("writer-*"):
                f.unlink()
        return left

    def run_launcher(self, spec: dict, duration_s: float) -> tuple[dict, float, float]:
        proc = launch(self.cg, spec, self.work_dir / "spec.json")
        self._follow(proc.pid)
        try:
            return wait_launcher(proc, duration_s + self.cfg.warmup_s + 30, self._ticker())
        finally:
            self._cleanup(proc.pid if self.cfg.beside else None)

    def start_command(self, logs: Path) -> tuple[subprocess.Popen, float, float]:
        """Start the user's command in the cgroup: (process, start epoch s, start mono s)."""
        cfg = self.cfg
        start_epoch, start_mono = clock_pair()
        proc = start_command(
            self.cg.procs_file, cfg.command, cfg.command_cwd, logs, logs / METRICS_FILE
        )
        self._follow(proc.pid)
        return proc, start_epoch, start_mono

    def finish_command(self, started: tuple[subprocess.Popen, float, float], logs: Path) -> dict:
        """Wait for the command :meth:`start_command` started: its phase record (exit
        status, elapsed wall time, CPU seconds, processes it left behind, which are killed
        with everything else in the cgroup)."""
        proc, start_epoch, start_mono = started
        try:
            ended = wait_child(proc, self.cfg.command_timeout_s or math.inf, self._ticker())
            end_epoch, end_mono = clock_pair()
        finally:
            left = self._cleanup()
        return {
            "command": list(self.cfg.command),
            "cwd": str(self.cfg.command_cwd),
            "start_epoch_s": start_epoch,
            "end_epoch_s": end_epoch,
            "start_trace_s": start_mono,
            "end_trace_s": end_mono,
            "elapsed_s": end_mono - start_mono,
            "exit_status": ended.returncode,
            "ended": describe_status(ended.returncode),
            "timed_out": ended.timed_out,
            "user_s": ended.user_s,
            "system_s": ended.system_s,
            "processes_left_behind_killed": left,
            "stdout": f"{COMMAND_TEST}/logs/stdout",
            "stderr": f"{COMMAND_TEST}/logs/stderr",
            "metrics_file": f"{COMMAND_TEST}/logs/{METRICS_FILE}"
            if (logs / METRICS_FILE).exists()
            else None,
        }

    def idle_probe(self) -> dict:
        """The probe's own latency on the idle cgroup (see workload.idle_probe)."""
        spec = {"mode": "idle-probe", "probe_map_bytes": self.cfg.probe_map_mib * MIB}
        spec["seconds"] = 1.0
        result, _, _ = self.run_launcher(spec, 1.0)
        for key in ("returncode", "errors", "stderr_tail"):
            result.pop(key, None)
        return result


def estimate_trace_bytes(
    session: Session, plan: PhasePlan, seconds: float
) -> dict[str, float | int]:
    """Trace a short phase at the largest worker count; extrapolate compressed bytes/s."""
    stream, counter = open_trace_sink(None, session.cfg.compression)
    (session.inst.path / "trace").write_text("")
    streamer = tracefs.TraceStreamer(session.inst.path / "trace_pipe", stream).start()
    (session.inst.path / "tracing_on").write_text("1")
    try:
        spec = session.phase_spec(plan, session.work_dir / "probe-estimate.log", seconds)
        session.run_launcher(spec, seconds)
    finally:
        (session.inst.path / "tracing_on").write_text("0")
        streamer.stop()
        stream.close()
    cfg = session.cfg
    rate = counter.bytes / (seconds + cfg.warmup_s)
    total_s = cfg.iterations * len(cfg.workers) * (cfg.duration_s + cfg.warmup_s)
    return {
        "probe_seconds": seconds + cfg.warmup_s,
        "probe_workers": plan.workers,
        "compressed_bytes_per_s": rate,
        "uncompressed_bytes_per_s": streamer.bytes_in / (seconds + cfg.warmup_s),
        # The largest worker count is the busiest; doubling covers run-to-run variation.
        "estimated_total_bytes": int(rate * total_s * 2),
    }


def _oom_kills(before: dict[str, int], after: dict[str, int]) -> int:
    return after.get("oom_kill", 0) - before.get("oom_kill", 0)


def _by_test(phases: list[dict]) -> list[tuple[str, list[dict]]]:
    """The phases of each test that ran: stutterp's worker counts, the user's command."""
    tests = [(TEST, [p for p in phases if "command" not in p])]
    tests.append((COMMAND_TEST, [p for p in phases if "command" in p]))
    return [(t, ps) for t, ps in tests if ps]


def _timestamps(test: str, phases: list[dict], begin_s: float, end_s: float) -> str:
    """One test's ``tests-timestamp`` lines: the command over its own span (its elapsed
    time is what compare reads), stutterp over the iteration's; the first non-zero exit
    status of its phases; their CPU seconds."""
    if test == COMMAND_TEST:
        begin_s, end_s = phases[0]["start_epoch_s"], phases[0]["end_epoch_s"]
    rc = _exit_status(phases)
    user, system = sum(p["user_s"] for p in phases), sum(p["system_s"] for p in phases)
    return metadata.timestamp_lines(test, begin_s, end_s, rc, user, system)


def _exit_status(phases: list[dict]) -> int:
    """The first non-zero exit status of the phases (the command's, or the built-in
    workload's launcher's), else 0."""
    statuses = (p["exit_status"] if "command" in p else p["launcher_rc"] for p in phases)
    return next((st for st in statuses if st), 0)


def _measured(session: Session, run: Callable[[], dict]) -> dict:
    """``run()``'s phase record with the times around it and the cgroup's OOM counters
    before and after (the command's own start and end times, when it gives them, win)."""
    oom_before = session.cg.oom_events()
    start_epoch, start_mono = clock_pair()
    record = run()
    end_epoch, end_mono = clock_pair()
    oom_after = session.cg.oom_events()
    kills = _oom_kills(oom_before, oom_after)
    session.progress.oom_kills += kills
    return {
        "start_epoch_s": start_epoch,
        "end_epoch_s": end_epoch,
        "start_trace_s": start_mono,
        "end_trace_s": end_mono,
        **record,
        "cgroup_events_before": oom_before,
        "cgroup_events_after": oom_after,
        "oom_kills": kills,
    }


def _stutterp_phase(session: Session, plan: PhasePlan, it_dir: Path, logs: Path) -> dict:
    cfg = session.cfg
    session.progress.workers = plan.workers
    session.progress.phase_duration_s = cfg.duration_s + cfg.warmup_s
    log = logs / f"mmap-latency-{plan.workers}.log"
    result, u, s = session.run_launcher(
        session.phase_spec(plan, log, cfg.duration_s), cfg.duration_s
    )
    return {
        "workers": plan.workers,
        "plan": plan.as_dict(),
        "probe_starts_after_s": cfg.warmup_s,
        "latency_log": str(log.relative_to(it_dir)),
        "workers_ended": result["children"],
        "worker_errors": result["errors"],
        "launcher_rc": result["returncode"],
        "launcher_stderr": result["stderr_tail"],
        "user_s": u,
        "system_s": s,
    }


def _monitors(session: Session, it_dir: Path, test: str) -> tuple[Monitor, dict[str, str]]:
    """The iteration's monitors: /proc/vmstat and the cgroup's memory.stat (mmtests'
    ``time:`` records), and PSI: /proc/pressure/memory and the cgroup's memory.pressure
    (docs/capture.md "PSI files"). A PSI file the kernel lacks (PSI off, cgroup v1) is not
    recorded; the second value says why, per output name."""
    streams = [
        Stream("proc_vmstat", Path("/proc/vmstat"), it_dir / f"proc-vmstat-{test}.gz"),
        Stream("memcg_stat", session.cg.stat_file, it_dir / f"memcg-stat-{test}.gz"),
    ]
    missing = {}
    psi = (PSI_MEMORY, PSI_FILE), (session.cg.path / "memory.pressure", CGROUP_PSI_FILE)
    for src, name in psi:
        key = name.replace("-", "_").replace(".", "_")
        if src.is_file():
            streams.append(Stream(key, src, it_dir / name, psi=True))
        else:
            missing[key] = f"not recorded: {src} does not exist (PSI off, or cgroup v1)"
    return Monitor(streams, session.cfg.interval_s), missing


def capture_iteration(
    session: Session, plans: list[PhasePlan], iteration: int, shared_meta: dict
) -> dict:
    """One iteration: the user's command, or every worker count in turn, under one trace
    and one set of monitors. An iteration whose workload failed (:func:`workload_failures`)
    keeps its ``mmlab-incomplete`` marker, saying why, so analyses leave it out."""
    cfg = session.cfg
    # The files' test name: stutterp's when its phases run (alone or beside the command).
    test = TEST if plans else COMMAND_TEST
    it_dir = cfg.out / cfg.run / f"iter-{iteration}"
    logs, cmd_logs = it_dir / test / "logs", it_dir / COMMAND_TEST / "logs"
    for d in (logs, cmd_logs) if cfg.command else (logs,):
        d.mkdir(parents=True, exist_ok=True)
    (it_dir / INCOMPLETE).write_text(
        f"capture pid {os.getpid()} began this iteration at {time.time():.0f} (epoch s) and "
        "has not finished it; analyses leave it out (mmtests.find_runs)\n"
    )
    (it_dir / "kernel.version").write_text(Path("/proc/version").read_text())
    kconfig = metadata.kconfig_text()
    if kconfig is not None:
        import gzip

        (it_dir / f"kconfig-{os.uname().release}.txt.gz").write_bytes(
            gzip.compress(kconfig.encode())
        )
    before = metadata.snapshot()
    sysstate = [metadata.sysstate_block("start", p, t) for p, t in before.items()]

    trace_path = it_dir / f"ftrace-{test}.{cfg.compression}"
    stream, counter = open_trace_sink(trace_path, cfg.compression)
    (session.inst.path / "trace").write_text("")
    streamer = tracefs.TraceStreamer(session.inst.path / "trace_pipe", stream).start()
    monitor, unmonitored = _monitors(session, it_dir, test)
    begin_epoch, begin_mono = clock_pair()
    (it_dir / f"ftrace-{test}.start").write_text(f"{begin_epoch:.6f}\n{begin_mono:.6f}\n")
    (it_dir / f"proc-vmstat-{test}.start").write_text(f"{begin_epoch:.6f}\n")
    (session.inst.path / "tracing_on").write_text("1")
    monitor.start()
    phases: list[dict] = []

    def tick_trace() -> None:
        session.progress.trace_bytes = streamer.bytes_in
        session.progress.trace_bytes_compressed = counter.bytes
        session.progress.lost_events = streamer.lost_events

    try:
        tick_trace()
        started = session.start_command(cmd_logs) if cfg.command else None
        for plan in plans:
            phases.append(
                _measured(session, lambda p=plan: _stutterp_phase(session, p, it_dir, logs))
            )
            tick_trace()
        if started:
            phases.append(_measured(session, lambda: session.finish_command(started, cmd_logs)))
    finally:
        # Held: an open trace_pipe keeps the instance busy (its rmdir fails with EBUSY).
        with signals_deferred():
            (session.inst.path / "tracing_on").write_text("0")
            monitor.stop()
            streamer.stop()
            stream.close()
            counter.raw.close()
    end_epoch, end_mono = clock_pair()
    after = metadata.snapshot()
    sysstate += [metadata.sysstate_block("end", p, t) for p, t in after.items()]
    (it_dir / "tests-sysstate").write_text("".join(sysstate))
    (it_dir / "tests-timestamp").write_text(
        "".join(_timestamps(test, p, begin_epoch, end_epoch) for test, p in _by_test(phases))
    )
    failed = workload_failures(phases)
    meta = {
        **shared_meta,
        "test": test,
        "iteration": iteration,
        "start_epoch_s": begin_epoch,
        "end_epoch_s": end_epoch,
        "trace": {
            "file": trace_path.name,
            "clock": tracefs.TRACE_CLOCK,
            "start_epoch_s": begin_epoch,
            "start_trace_s": begin_mono,
            "end_trace_s": end_mono,
            "clock_mapping": "epoch_s = trace_s - start_trace_s + start_epoch_s "
            "(trace clock 'mono' is CLOCK_MONOTONIC; ftrace-<test>.start line 1 = "
            "start_epoch_s, line 2 = start_trace_s)",
            "events_enabled": session.events,
            "buffer_size_kb_per_cpu": cfg.buffer_kb,
            "bytes_uncompressed": streamer.bytes_in,
            "bytes_compressed": counter.bytes,
            "lost_event_lines": streamer.lost_lines,
            "lost_events": streamer.lost_events,
            "ring_buffer_overruns": session.inst.overruns(),
        },
        "monitors": {
            "interval_s": cfg.interval_s,
            **{f"{key}_samples": n for key, n in monitor.samples.items()},
            **unmonitored,
        },
        "phases": phases,
        "oom_kills": sum(p["oom_kills"] for p in phases),
        "workload_user_s": sum(p["user_s"] for p in phases),
        "workload_system_s": sum(p["system_s"] for p in phases),
        "workload_rc": _exit_status(phases),
        "failed": failed,
    }
    (it_dir / MMLAB_JSON).write_text(json.dumps(meta, indent=2, default=str) + "\n")
    if failed:
        (it_dir / INCOMPLETE).write_text(f"{FAILED_PREFIX}{'; '.join(failed)}\n")
    else:
        (it_dir / INCOMPLETE).unlink()
    return meta


class MachineBusy(InputError):
    """Another capture (host or guest) holds the machine: a reason to wait, not a failure."""


@contextlib.contextmanager
def machine_lock(path: Path = LOCK_PATH) -> Iterator[None]:
    """Hold an exclusive flock on ``path`` for the block, or refuse (InputError) if taken.

    Two captures at once corrupt each other: sysctls are machine-wide, so overlapping
    save/set/restore pairs leave a changed value behind (A saves 20 sets 19, B saves 19 sets
    18, A restores 20, B restores 19), and /proc/vmstat deltas would mix both workloads'
    reclaim. The file holds the holder's pid for the message; the kernel drops the lock when
    the holder exits, however it exits, and the next holder overwrites a dead one's pid.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "unknown"
            raise MachineBusy(
                path, f"another mmlab capture (pid {holder}) is running; wait for it"
            ) from None
        f.truncate(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            f.truncate(0)


def lock_holder(path: Path = LOCK_PATH) -> str | None:
    """The pid (as written) of the capture holding ``path``, or None when no capture runs.

    A pid left in the file by a holder that was SIGKILLed (the kernel dropped its flock) is
    cleared here, so the file never names a capture that is gone.
    """
    if not path.exists():
        return None
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            return f.read().strip() or "unknown"
        f.truncate(0)
    return None


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _dead_leftovers(parent: Path, prefix: str, alive: Callable[[int], bool]) -> list[Path]:
    """Directories ``<prefix><pid>`` under ``parent`` whose pid no longer runs."""
    return [
        p
        for p in sorted(parent.glob(f"{prefix}*"))
        if (pid := p.name.removeprefix(prefix)).isdigit() and not alive(int(pid)) and p.is_dir()
    ]


def remove_stale(
    instances: Path,
    cgroups: tuple[int, Path],
    work_parents: list[Path],
    report: Callable[[str], None],
    alive: Callable[[int], bool] = _alive,
) -> list[str]:
    """Remove what captures (or ``make bench``) that no longer run left, found by name: the
    ``mmlab-<pid>`` trace instances under ``instances`` (they keep tracing into their
    buffer) and memory cgroups under ``cgroups`` (version, root) (their workers keep running
    and would pollute this capture's vmstat deltas: the cgroup proves they are a capture's,
    so they are killed), and ``.mmlab-work-<pid>`` directories under ``work_parents``.
    Called under :func:`machine_lock`, so no running capture owns them. Each removal is
    passed to ``report`` as it happens and returned; one that fails is an InputError (the
    capture refuses to run beside it)."""
    version, root = cgroups
    found = (
        [("instance", p) for p in _dead_leftovers(instances, "mmlab-", alive)]
        + [("cgroup", p) for p in _dead_leftovers(root, "mmlab-", alive)]
        + [("work_dir", p) for w in work_parents for p in _dead_leftovers(w, WORK_PREFIX, alive)]
    )
    done = []
    for kind, path in found:
        pid = path.name.rpartition("-")[2]
        try:
            line = journal.undo({"kind": kind, "path": str(path), "version": version})
        except (OSError, TimeoutError) as exc:
            raise InputError(
                path,
                f"left by capture pid {pid}, which no longer runs, and cannot be removed "
                f"({exc}); remove it by hand",
            ) from None
        if line:
            done.append(f"mmlab capture: {line}, left by capture pid {pid} (no longer runs)")
            report(done[-1])
    return done


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def recover(
    pre: dict[str, object],
    work_parents: list[Path],
    report: Callable[[str], None] = _to_stderr,
) -> list[str]:
    """Undo what dead captures left (call under :func:`machine_lock`): replay the journal
    (:func:`analysis.capture.journal.replay`: ``--set`` sysctls back to their originals),
    then :func:`remove_stale`. ``pre`` is :func:`preflight`'s answer. Returns the lines
    reported, one per thing undone."""
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        report(line)

    journal.replay(journal.JOURNAL_PATH, say, journal.boot_id(), sysctl.PROC_SYS)
    remove_stale(
        pre["tracefs"] / "instances",
        (pre["cgroup_version"], pre["cgroup_root"]),
        work_parents,
        say,
    )
    return lines


def capture(
    cfg: CaptureConfig,
    tick: Callable[[Progress], None] = lambda p: None,
    report: Callable[[str], None] = _to_stderr,
) -> list[IterationMeta]:
    """Run the whole capture (one at a time per machine); returns each iteration's
    ``mmlab.json``.

    What dead captures left is undone first (:func:`recover`, each step passed to
    ``report``); then, journalled, tracefs is mounted if it was not and the ``--set``
    sysctls are written (a value the kernel refuses ends the capture here); OUT is created
    only after that. An iteration whose workload failed ends the capture with
    :class:`WorkloadFailed` once everything is restored.
    """
    progress = Progress(iterations=cfg.iterations)
    check_machine(cfg)
    pre = preflight(cfg)
    restorer = Restorer()
    metas: list[IterationMeta] = []
    with raise_on_signals(), machine_lock():
        stale = recover(pre, [cfg.out.absolute()], report)
        jr = journal.Journal(journal.JOURNAL_PATH, os.getpid(), journal.boot_id(), sysctl.PROC_SYS)
        jr.start()
        try:
            try:
                pre = _prepare(cfg, pre, restorer, jr)
                make_out(cfg.out)
                metas = _capture(cfg, pre, restorer, progress, tick, jr, stale)
            except Interrupted as exc:
                cut = sorted((cfg.out / cfg.run).glob(f"iter-*/{INCOMPLETE}"))
                exc.incomplete = cut[0].parent if cut else None
                raise
            finally:
                _teardown(restorer, jr)
        except Interrupted:
            # Only the first signal raises (_Deferral): if it landed between the body and
            # the teardown's own deferral, this finishes the teardown (else it is a no-op).
            _teardown(restorer, jr)
            raise
    return metas


def _restore(restorer: Restorer) -> None:
    """Run the undo actions; what fails is one clear error pointing at the journal, which
    is kept (``jr.finish()`` is not reached) for ``--recover`` to retry."""
    try:
        restorer.run()
    except RuntimeError as exc:
        raise InputError(
            journal.JOURNAL_PATH, f"{exc}; kept for mmlab capture --recover to finish"
        ) from None


def _teardown(restorer: Restorer, jr: journal.Journal) -> None:
    """Undo everything, then drop the journal, with signals held back throughout."""
    with signals_deferred():
        _restore(restorer)
        jr.finish()


def _prepare(cfg, pre, restorer, jr) -> dict[str, object]:
    """The changes made before OUT exists, each journalled first: tracefs mounted (if it was
    not; unmounted at the end), then ``--events`` checked on it, the ``vm.*`` sysctls read
    and the ``--set`` ones written. Returns ``pre`` with ``sysctls_vm_before`` and the
    :class:`~analysis.capture.sysctl.SysctlChanger` as ``sysctls``."""
    if not pre["tracefs_mounted"]:
        with signals_deferred():
            jr.mount(pre["tracefs"])
            tracefs.mount_tracefs(pre["tracefs"])
            restorer.push("tracefs mount", lambda: journal.unmount_tracefs(pre["tracefs"]))
        check_events(pre["tracefs"], cfg.events_include)
    vm_before = sysctl.read_tree("vm", sysctl.PROC_SYS)
    changer = sysctl.SysctlChanger(root=sysctl.PROC_SYS, before_first_change=jr.sysctl)
    restorer.push("sysctls", changer.restore)
    for name, value in cfg.sets:
        with signals_deferred():
            changer.set(name, value)
    return {**pre, "sysctls_vm_before": vm_before, "sysctls": changer}


def _capture(cfg, pre, restorer, progress, tick, jr, stale) -> list[IterationMeta]:
    vm_before, changer = pre["sysctls_vm_before"], pre["sysctls"]
    plans, dirty_ratio = [], None
    if cfg.beside or not cfg.command:
        mem_available = metadata.memory_info(Path("/proc/meminfo").read_text())
        dirty_ratio = dirty_ratio_for((), mem_available["mem_available_kib"] * 1024)
        plans = plans_for(cfg, dirty_ratio)

    name = f"mmlab-{os.getpid()}"
    with signals_deferred():
        jr.cgroup(pre["cgroup_version"], pre["cgroup_root"] / name)
        cg = MemCgroup.create(
            pre["cgroup_version"], pre["cgroup_root"], name, cgroup_limit_bytes(cfg)
        )
        restorer.push("cgroup", cg.remove)
    with signals_deferred():
        jr.instance(pre["tracefs"] / "instances" / name)
        inst = tracefs.TraceInstance.create(pre["tracefs"], name)
        restorer.push("trace instance", inst.remove)
        restorer.push("trace settings", inst.restore)
    trace_state_before = inst.state()
    events = tracefs.reclaim_event_set(inst.path / "events", cfg.events_include)
    inst.configure(events, cfg.buffer_kb)
    daemons = tracefs.reclaim_daemon_pids()
    if not cfg.system_wide:
        inst.follow(sorted(daemons))
    work_dir = cfg.out / f"{WORK_PREFIX}{os.getpid()}"
    with signals_deferred():
        jr.work_dir(work_dir)
        work_dir.mkdir()
        restorer.push("work dir", lambda: shutil.rmtree(work_dir, ignore_errors=True))
        restorer.push("kill workers", cg.kill_all)
    session = Session(cfg, cg, inst, work_dir, events, progress, tick)

    shared = {
        "tool": CAPTURE_TOOL,
        "tool_version": __version__,
        "command_line": list(cfg.command_line),
        "run": cfg.run,
        "test": TEST if plans else COMMAND_TEST,
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(cfg).items()},
        "system": metadata.system_metadata(),
        "sysctls_vm_before": vm_before,
        "sysctl_changes": {n: {"from": changer.saved.get(n), "to": v} for n, v in cfg.sets},
        "dirty_ratio_used": dirty_ratio,
        "cgroup": cg.settings(),
        "pressure": cfg.pressure,
        "trace_state_before": trace_state_before,
        "trace_pid_filter": "system-wide"
        if cfg.system_wide
        else {
            "note": "only the workload's processes (set_event_pid + event-fork) and the "
            "reclaim daemons below are traced",
            "daemons": {str(k): v for k, v in sorted(daemons.items())},
        },
        "stale_leftovers": stale,
    }
    if cfg.command:
        shared["command"] = {
            "argv": list(cfg.command),
            "cwd": str(cfg.command_cwd),
            "metrics_env": METRICS_ENV,
            "metrics_format": "<name> <value> <unit> [higher|lower] per line, '#' comments",
            "beside_built_in_workload": cfg.beside,
        }
    if plans:
        shared |= _stutterp_setup(session, plans)
    metas = []
    for i in range(cfg.iterations):
        progress.stage = "capturing"
        progress.iteration = i
        meta = capture_iteration(session, plans, i, shared)
        it_dir = cfg.out / cfg.run / f"iter-{i}"
        if meta["failed"]:
            raise WorkloadFailed(it_dir, meta["failed"])
        metas.append(read_iteration(it_dir))  # as written: what an analysis reads
    return metas


def _stutterp_setup(session: Session, plans: list[PhasePlan]) -> dict:
    """The built-in workload's probe overhead and trace volume estimate (refusing to start
    when OUT lacks room for it): its entries of the shared metadata."""
    cfg, progress, tick = session.cfg, session.progress, session.tick
    progress.stage = "probe overhead"
    tick(progress)
    overhead = session.idle_probe()
    progress.stage = "trace volume estimate"
    tick(progress)
    estimate = estimate_trace_bytes(session, plans[-1], cfg.probe_s)
    free = shutil.disk_usage(cfg.out).free
    needed = estimate["estimated_total_bytes"] + max(p.file_total_bytes for p in plans)
    progress.messages.append(
        f"trace volume estimate {estimate['estimated_total_bytes'] / MIB:.1f} MiB compressed "
        f"({estimate['uncompressed_bytes_per_s'] / MIB:.2f} MiB/s raw, from a "
        f"{estimate['probe_seconds']:.0f} s probe at {plans[-1].workers} workers; a lower "
        f"bound if reclaim had not started yet); {free / (1 << 30):.1f} GiB free"
    )
    if needed > free:
        raise InputError(cfg.out, f"needs ~{needed // MIB} MiB, only {free // MIB} MiB free")
    return {
        "probe": {
            "unit": "us",
            "log": f"{TEST}/logs/mmap-latency-<workers>.log",
            "line_format": "<epoch_s> <latency_us>",
            "map_bytes": cfg.probe_map_mib * MIB,
            "idle_overhead": overhead,
        },
        "trace_volume_estimate": estimate,
    }
