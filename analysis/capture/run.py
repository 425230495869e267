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
from analysis.capture.checks import cgroup_limit_bytes, check_machine, make_out, plans_for
from analysis.capture.monitor import Monitor
from analysis.capture.plan import MIB, PhasePlan
from analysis.errors import InputError
from analysis.ingest.mmtests import INCOMPLETE

__all__ = [
    "LOCK_PATH",
    "SIGNALS",
    "WORK_PREFIX",
    "CaptureConfig",
    "Interrupted",
    "Progress",
    "Restorer",
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


@dataclass
class _Deferral:
    """Signals that arrived inside :func:`signals_deferred` blocks, raised on leaving them."""

    depth: int = 0
    pending: list[int] = field(default_factory=list)


_DEFERRAL = _Deferral()


def _raise_interrupted(signum, frame) -> None:
    if _DEFERRAL.depth:
        _DEFERRAL.pending.append(signum)
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def raise_on_signals(signums=SIGNALS) -> Iterator[None]:
    """Turn the given signals into :class:`Interrupted` inside the block; restore handlers after."""
    previous = {s: signal.signal(s, _raise_interrupted) for s in signums}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


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
        if not _DEFERRAL.depth and _DEFERRAL.pending:
            signum = _DEFERRAL.pending[0]
            _DEFERRAL.pending.clear()
            raise Interrupted(signum)


@dataclass
class Restorer:
    """Undo actions, run last-registered-first; each runs once even if another fails.

    Signals are ignored while undoing so a second Ctrl-C cannot leave the machine half
    restored. Failures are collected in ``errors`` (name, message) and re-raised as one.
    """

    actions: list[tuple[str, Callable[[], None]]] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)

    def push(self, name: str, action: Callable[[], None]) -> None:
        self.actions.append((name, action))

    def run(self) -> None:
        ignored = {s: signal.signal(s, signal.SIG_IGN) for s in SIGNALS}
        try:
            while self.actions:
                name, action = self.actions.pop()
                try:
                    action()
                except Exception as exc:
                    self.errors.append((name, f"{type(exc).__name__}: {exc}"))
        finally:
            for s, h in ignored.items():
                signal.signal(s, h)
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
    """Root, tracefs and the memory controller (what :func:`recover` needs); clear errors."""
    if os.geteuid() != 0:
        raise InputError("mmlab capture", "must run as root (tracefs and cgroups need it)")
    hierarchy = find_memory_hierarchy(Path("/proc/mounts").read_text())
    if hierarchy is None:
        raise InputError("/proc/mounts", "no memory cgroup controller mounted (v2 or v1)")
    tfs = tracefs.ensure_tracefs()
    return {"tracefs": tfs, "cgroup_version": hierarchy[0], "cgroup_root": hierarchy[1]}


def preflight(cfg: CaptureConfig) -> dict[str, object]:
    """:func:`preflight_machine`, a disk filesystem for OUT and known ``--events``.

    (The arguments were checked by :func:`~analysis.capture.checks.check_machine`.)
    """
    pre = preflight_machine()
    kind = fs_type(cfg.out, Path("/proc/mounts").read_text())
    if kind in NO_WRITEBACK_FS:
        raise InputError(cfg.out, f"is on {kind}: file writers need a disk filesystem")
    tfs = pre["tracefs"]
    unknown = tracefs.unknown_events(tfs / "events", cfg.events_include)
    if unknown:
        raise InputError(
            "--events", f"not events of this kernel: {', '.join(unknown)} (see {tfs}/events)"
        )
    return {**pre, "fs": kind}


def launch(cg: MemCgroup, spec: dict, spec_path: Path) -> subprocess.Popen:
    """Start the workload launcher inside ``cg``: a shell joins the cgroup, then execs Python."""
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_PARENT)}
    script = 'echo $$ > "$1" && exec "$2" -m analysis.capture.workload "$3"'
    return subprocess.Popen(
        ["/bin/sh", "-c", script, "sh", str(cg.procs_file), sys.executable, str(spec_path)],
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def wait_launcher(
    proc: subprocess.Popen, timeout_s: float, tick: Callable[[], None]
) -> tuple[dict, float, float]:
    """Wait for the launcher, calling ``tick`` ~4x/s: (its JSON result, user s, system s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        tick()
        time.sleep(0.25)
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = proc.stdout.read().decode() if proc.stdout else ""
    result = json.loads(out.splitlines()[-1]) if out.strip() else {"children": []}
    result["returncode"] = proc.returncode
    return result, usage.ru_utime, usage.ru_stime


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

    def run_launcher(self, spec: dict, duration_s: float) -> tuple[dict, float, float]:
        t0 = time.monotonic()
        proc = launch(self.cg, spec, self.work_dir / "spec.json")
        if not self.cfg.system_wide:
            # The shell is still starting Python; its workers fork well after this write.
            self.inst.follow([proc.pid])

        def tick() -> None:
            self.progress.phase_elapsed_s = time.monotonic() - t0
            self.tick(self.progress)

        try:
            return wait_launcher(proc, duration_s + self.cfg.warmup_s + 30, tick)
        finally:
            self.cg.kill_all()
            for f in self.work_dir.glob("writer-*"):
                f.unlink()

    def idle_probe(self) -> dict:
        """The probe's own latency on the idle cgroup (see workload.idle_probe)."""
        spec = {"mode": "idle-probe", "probe_map_bytes": self.cfg.probe_map_mib * MIB}
        spec["seconds"] = 1.0
        result, _, _ = self.run_launcher(spec, 1.0)
        result.pop("returncode", None)
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


def capture_iteration(
    session: Session, plans: list[PhasePlan], iteration: int, shared_meta: dict
) -> dict:
    """One iteration: every worker count in turn under one trace and one vmstat monitor."""
    cfg = session.cfg
    it_dir = cfg.out / cfg.run / f"iter-{iteration}"
    logs = it_dir / TEST / "logs"
    logs.mkdir(parents=True, exist_ok=True)
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

    trace_path = it_dir / f"ftrace-{TEST}.{cfg.compression}"
    stream, counter = open_trace_sink(trace_path, cfg.compression)
    (session.inst.path / "trace").write_text("")
    streamer = tracefs.TraceStreamer(session.inst.path / "trace_pipe", stream).start()
    monitor = Monitor(
        [
            (Path("/proc/vmstat"), it_dir / f"proc-vmstat-{TEST}.gz"),
            (session.cg.stat_file, it_dir / f"memcg-stat-{TEST}.gz"),
        ],
        cfg.interval_s,
    )
    begin_epoch, begin_mono = clock_pair()
    (it_dir / f"ftrace-{TEST}.start").write_text(f"{begin_epoch:.6f}\n{begin_mono:.6f}\n")
    (it_dir / f"proc-vmstat-{TEST}.start").write_text(f"{begin_epoch:.6f}\n")
    (session.inst.path / "tracing_on").write_text("1")
    monitor.start()
    phases: list[dict] = []
    user = sys_s = 0.0
    rc = 0
    try:
        for plan in plans:
            session.progress.workers = plan.workers
            session.progress.phase_duration_s = cfg.duration_s + cfg.warmup_s
            oom_before = session.cg.oom_events()
            start_epoch, start_mono = clock_pair()
            log = logs / f"mmap-latency-{plan.workers}.log"
            spec = session.phase_spec(plan, log, cfg.duration_s)

            def tick_trace() -> None:
                session.progress.trace_bytes = streamer.bytes_in
                session.progress.trace_bytes_compressed = counter.bytes
                session.progress.lost_events = streamer.lost_events

            tick_trace()
            result, u, s = session.run_launcher(spec, cfg.duration_s)
            end_epoch, end_mono = clock_pair()
            oom_after = session.cg.oom_events()
            kills = _oom_kills(oom_before, oom_after)
            session.progress.oom_kills += kills
            user += u
            sys_s += s
            rc = rc or result["returncode"]
            phases.append(
                {
                    "workers": plan.workers,
                    "plan": plan.as_dict(),
                    "start_epoch_s": start_epoch,
                    "end_epoch_s": end_epoch,
                    "start_trace_s": start_mono,
                    "end_trace_s": end_mono,
                    "probe_starts_after_s": cfg.warmup_s,
                    "latency_log": str(log.relative_to(it_dir)),
                    "workers_ended": result["children"],
                    "user_s": u,
                    "system_s": s,
                    "cgroup_events_before": oom_before,
                    "cgroup_events_after": oom_after,
                    "oom_kills": kills,
                }
            )
            tick_trace()
    finally:
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
        metadata.timestamp_lines(TEST, begin_epoch, end_epoch, rc, user, sys_s)
    )
    meta = {
        **shared_meta,
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
            "proc_vmstat_samples": monitor.samples[0],
            "memcg_stat_samples": monitor.samples[1],
        },
        "phases": phases,
        "oom_kills": sum(p["oom_kills"] for p in phases),
        "workload_user_s": user,
        "workload_system_s": sys_s,
        "workload_rc": rc,
    }
    (it_dir / "mmlab.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    (it_dir / INCOMPLETE).unlink()
    return meta


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
            raise InputError(
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
) -> list[dict]:
    """Run the whole capture (one at a time per machine); returns each mmlab.json content.

    What dead captures left is undone first (:func:`recover`, each step passed to
    ``report``); OUT is created only once the machine lock is held.
    """
    progress = Progress(iterations=cfg.iterations)
    check_machine(cfg)
    pre = preflight(cfg)
    restorer = Restorer()
    metas: list[dict] = []
    with raise_on_signals(), machine_lock():
        stale = recover(pre, [cfg.out], report)
        make_out(cfg.out)
        jr = journal.Journal(journal.JOURNAL_PATH, os.getpid(), journal.boot_id())
        jr.start()
        try:
            metas = _capture(cfg, pre, restorer, progress, tick, jr, stale)
        except Interrupted as exc:
            cut = sorted((cfg.out / cfg.run).glob(f"iter-*/{INCOMPLETE}"))
            exc.incomplete = cut[0].parent if cut else None
            raise
        finally:
            _restore(restorer)
            jr.finish()
    return metas


def _restore(restorer: Restorer) -> None:
    """Run the undo actions; what fails is one clear error pointing at the journal, which
    is kept (the caller's ``jr.finish()`` is not reached) for ``--recover`` to retry."""
    try:
        restorer.run()
    except RuntimeError as exc:
        raise InputError(
            journal.JOURNAL_PATH, f"{exc}; kept for mmlab capture --recover to finish"
        ) from None


def _capture(cfg, pre, restorer, progress, tick, jr, stale) -> list[dict]:
    vm_before = sysctl.read_tree("vm")
    changer = sysctl.SysctlChanger(before_first_change=jr.sysctl)
    restorer.push("sysctls", changer.restore)
    for name, value in cfg.sets:
        with signals_deferred():
            changer.set(name, value)
    dirty_ratio = int(Path("/proc/sys/vm/dirty_ratio").read_text())
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

    shared = {
        "tool": "mmlab capture",
        "tool_version": __version__,
        "command_line": list(cfg.command_line),
        "run": cfg.run,
        "test": TEST,
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
        "probe": {
            "unit": "us",
            "log": f"{TEST}/logs/mmap-latency-<workers>.log",
            "line_format": "<epoch_s> <latency_us>",
            "map_bytes": cfg.probe_map_mib * MIB,
            "idle_overhead": overhead,
        },
        "trace_volume_estimate": estimate,
        "stale_leftovers": stale,
    }
    metas: list[dict] = []
    for i in range(cfg.iterations):
        progress.stage = "capturing"
        progress.iteration = i
        metas.append(capture_iteration(session, plans, i, shared))
    return metas
