"""An experiment plan executed run by run into an ordinary mmlab data tree, resumably.

Each planned run (:mod:`analysis.capture.design`) is one guest boot (``mmlab capture
--kernel`` with one iteration). What the executor keeps in OUT::

    plan.yaml              the plan file as given (its bytes), written at the first start
    order.json             settings with their parameters, and every run in order
    journal.jsonl          append-only history: start, done, failed, interrupted, abandoned
    <setting>/iter-K/      one boot each: the capture's files and boot.json
    <setting>/vm.json      the setting's provenance, rebuilt from its boots' boot.json
    failed/<run>.tar.gz    a failed run's files, beside <run>.txt saying why (a guest whose
                           capture failed: its result.json, with the kernel log's tail,
                           console.log and what it wrote of the tree)
    .staging/              runs in progress (a resumed executor removes what is left)

The tree is the truth of what finished: a run is done when an ``iter-K/boot.json`` names
it, so an executor killed between installing a run and journalling it never repeats the
run. Iterations are numbered in the order runs finish (an analysis reads ``iter-0..K-1``
without gaps), and each one's ``boot.json`` records its block, its place in the order and
the host it ran on. A SIGKILLed executor leaves its guest running (vng runs in a session
of its own); the next executor on OUT kills it through the pid file in the staging share.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import statistics
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from analysis.capture.design import Plan, PlannedRun, planned_runs
from analysis.errors import InputError
from analysis.ingest.capture_meta import (
    BOOT_JSON,
    EXPERIMENT_TOOL,
    KERNEL_IDENTITY,
    VM_JSON,
    BootRecord,
    read_boot,
)

__all__ = [
    "ExperimentStatus",
    "Journal",
    "RunOutcome",
    "check_cluster",
    "execute",
    "execute_run",
    "experiment_status",
    "order_document",
    "run_spec",
]

JOURNAL = "journal.jsonl"
ORDER = "order.json"
PLAN_COPY = "plan.yaml"
STAGING = ".staging"
FAILED_DIR = "failed"
# Capture options every run shares unless a factor level sets them (stutterp, as the
# bundled sweep ran it; mmlab capture --help).
CAPTURE_DEFAULTS = {
    "workload": "stutterp",
    "workers": 8,
    "duration": 14.0,
    "warmup": 3.0,
    "limit_mb": 256,
    "slab_files": 0,
    "negative_dentries": 0,
    "probe_seconds": 5.0,
    "pressure": "cgroup",
    "cgroup": 1,
    "filesystem": "ext4",
    "guest_memory_mb": 2048,
    "guest_cpus": 2,
    "guest_disk_mb": 4096,
}
# The shrinker-heavy workload: the filer's file creations (inodes allocated without
# __GFP_FS, so the superblock shrinker defers) beside a dcache of negative dentries.
SHRINKER_WORKLOAD = {"slab_files": 200_000, "negative_dentries": 2_000_000}


@dataclass(frozen=True)
class RunOutcome:
    """What one run produced: ``ok`` with the iteration's files (a tar archive) and its
    boot record, or not, with the reason (and whatever files there were)."""

    run_id: str
    ok: bool
    reason: str
    boot: dict
    archive: bytes = field(repr=False)
    wall_s: float


@dataclass(frozen=True)
class ExperimentStatus:
    """Where an executed plan stands (from OUT's tree and journal)."""

    total: int
    done: tuple[str, ...]
    failed: dict[str, str]
    pending: tuple[str, ...]
    per_setting: dict[str, int]
    run_wall_s: tuple[float, ...]
    hosts: dict[str, int]

    @property
    def eta_s(self) -> float | None:
        """Runs left times the median wall time of a finished run (None before the first)."""
        if not self.run_wall_s:
            return None
        return len(self.pending) * statistics.median(self.run_wall_s)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_spec(plan: Plan, run: PlannedRun) -> dict:
    """Everything one worker needs to boot ``run`` (JSON-ready: it may travel to a Dask
    worker on another machine)."""
    setting = plan.setting(run.setting)
    params = {**CAPTURE_DEFAULTS}
    if setting.params.get("workload") == "shrinker":
        params |= SHRINKER_WORKLOAD
    params |= setting.params
    return {
        **asdict(run),
        "plan": plan.name,
        "plan_digest": plan.digest,
        "kernel": str(plan.kernel),
        "accel": plan.accel,
        "timeout_s": plan.timeout_s,
        "levels": dict(setting.levels),
        "params": params,
    }


def _configs(spec: dict, out: Path):
    from analysis.capture.run import CaptureConfig
    from analysis.capture.vm import GuestConfig, choose_accel

    p = spec["params"]
    accel, reason = choose_accel(spec["accel"])
    cfg = CaptureConfig(
        out=out, run=spec["setting"], iterations=1, workers=(p["workers"],),
        duration_s=float(p["duration"]), limit_mb=p["limit_mb"], warmup_s=float(p["warmup"]),
        probe_s=float(p["probe_seconds"]), slab_files=p["slab_files"],
        negative_dentries=p["negative_dentries"], pressure=p["pressure"],
        command_line=("mmlab experiment", spec["plan"], spec["run_id"]),
    )  # fmt: skip
    guest = GuestConfig(
        kernel=Path(spec["kernel"]),
        sysctls=tuple((k, str(v)) for k, v in sorted(p.get("sysctl", {}).items())),
        accel=accel, accel_reason=reason, memory_mb=p["guest_memory_mb"], cpus=p["guest_cpus"],
        disk_mb=p["guest_disk_mb"], cgroup=p["cgroup"], timeout_s=spec["timeout_s"],
        pressure=p["pressure"], filesystem=p["filesystem"], write_mb_s=p.get("write_mb_s"),
        read_mb_s=p.get("read_mb_s"),
    )  # fmt: skip
    return cfg, guest


def _archive(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(directory, arcname=".")
    return buf.getvalue()


def execute_run(spec: dict, work: Path) -> RunOutcome:
    """Boot one guest for ``spec`` (:func:`run_spec`) with its files under ``work`` (removed
    after), and judge it (:func:`analysis.capture.exercised.problems`). A capture that
    fails is a failed run with the capture's message; a signal is not a failure and
    propagates."""
    from analysis.capture.exercised import problems

    t0 = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    try:
        cfg, guest = _configs(spec, work / "out")
        try:
            result = _when_free(cfg, guest)
        except InputError as exc:  # kept with the failed run: the guest's own account of it
            return RunOutcome(spec["run_id"], False, f"capture failed: {exc}", {},
                              getattr(exc, "evidence", b""), time.monotonic() - t0)  # fmt: skip
        iteration = result.run_dir / "iter-0"
        vm = result.vm
        (check,) = vm.knob_checks if vm.knob_check_note is None else ({},)
        reasons = problems(iteration, check, spec["params"]["pressure"])
        boot = {
            "run_id": spec["run_id"], "position": spec["position"], "block": spec["block"],
            "setting": spec["setting"], "levels": spec["levels"], "plan": spec["plan"],
            "plan_digest": spec["plan_digest"], "params": spec["params"], "vm": vm.document,
            "knob_check": check,
        }  # fmt: skip
        return RunOutcome(spec["run_id"], not reasons, "; ".join(reasons), boot,
                          _archive(iteration), time.monotonic() - t0)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


# How often a run waiting for the machine (another capture holds it) looks again.
BUSY_POLL_S = 10.0


def _when_free(cfg, guest):
    """:func:`~analysis.capture.vm.run_guest_capture`, once no other capture holds the
    machine: a host that is busy with another capture delays the run (its guest would
    share the CPUs unrecorded), it does not fail it."""
    from analysis.capture.run import MachineBusy
    from analysis.capture.vm import run_guest_capture

    while True:
        try:
            return run_guest_capture(cfg, guest)
        except MachineBusy:
            time.sleep(BUSY_POLL_S)


class Journal:
    """``journal.jsonl`` of OUT: one JSON object per line, flushed and synced per line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, run_id: str, event: str, **fields) -> None:
        line = json.dumps({"t": _now(), "run": run_id, "event": event, **fields})
        with open(self.path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def entries(self) -> list[dict]:
        if not self.path.exists():
            return []
        out = []
        lines = self.path.read_text().splitlines()
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                # Only the last line can be cut (a kill while appending): the others are
                # whole lines, and a bad one there is damage to report, not to skip.
                if lineno != len(lines):
                    raise InputError(self.path, "not a JSON line", line=lineno) from None
        return out


@contextlib.contextmanager
def _out_lock(out: Path) -> Iterator[None]:
    with open(out / ".lock", "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(out, "another mmlab experiment runs on this directory") from None
        yield


def order_document(plan: Plan) -> dict:
    return {
        "plan": plan.name,
        "plan_digest": plan.digest,
        "seed": plan.seed,
        "boots_per_setting": plan.boots_per_setting,
        "primary_endpoint": plan.primary_endpoint,
        "secondary_endpoints": list(plan.secondary_endpoints),
        "sizing": plan.sizing,
        "kernel": str(plan.kernel),
        "settings": [
            {"name": s.name, "levels": dict(s.levels), "params": s.params} for s in plan.settings
        ],
        "runs": [asdict(r) for r in planned_runs(plan)],
    }


def _start(plan: Plan, out: Path) -> None:
    """Write plan.yaml and order.json at the first start; on a resume, refuse another plan."""
    copy = out / PLAN_COPY
    if copy.exists():
        if copy.read_text() != plan.text:
            raise InputError(
                plan.path,
                f"{out} was started from another plan ({copy}); give that plan or a new OUT",
            )
        return
    if any(p for p in out.iterdir() if p.name != ".lock"):
        raise InputError(out, "is not empty and holds no plan.yaml: give a new or empty OUT")
    (out / ORDER).write_text(json.dumps(order_document(plan), indent=2) + "\n")
    copy.write_text(plan.text)


def _same_kernel(plan: Plan, out: Path) -> None:
    """A plan runs on one kernel: resuming OUT (perhaps in a later session, on a rebuilt
    image) with an image other than the one its finished runs booted would mix two kernels
    into every setting, confounded with the blocks that ran after the change."""
    from analysis.capture.vm import read_build_record

    seen = {b.kernel_build.identity(): b.run_id for b in _finished(out).values()
            if any(b.kernel_build.identity())}  # fmt: skip
    if not seen:
        return
    record = read_build_record(plan.kernel)
    current = tuple(record.get(k) for k in KERNEL_IDENTITY)
    for identity, run_id in seen.items():
        if identity != current:
            differ = [f"{k} {a} (run {run_id}) vs {b}"
                      for k, a, b in zip(KERNEL_IDENTITY, identity, current, strict=True)
                      if a != b]  # fmt: skip
            raise InputError(
                plan.kernel,
                f"is not the kernel {out}'s finished runs booted: {'; '.join(differ)}. Resume "
                "with that image (kernels/images/ keeps the lab's), or give a new OUT",
            )


def _boots(directory: Path, pattern: str) -> list[BootRecord]:
    """The boot records of the iterations ``pattern`` matches below ``directory``."""
    found = (read_boot(p.parent) for p in directory.glob(f"{pattern}/{BOOT_JSON}"))
    return [boot for boot in found if boot is not None]


def _finished(out: Path) -> dict[str, BootRecord]:
    """run id -> boot record of every run installed in OUT's tree."""
    return {boot.run_id: boot for boot in sorted(_boots(out, "*/iter-*"), key=lambda b: b.path)}


def experiment_status(out: Path) -> ExperimentStatus:
    """:class:`ExperimentStatus` of OUT (an executed or executing plan)."""
    if not (out / ORDER).is_file():
        raise InputError(out, f"no {ORDER}: not the output of mmlab experiment run")
    order = json.loads((out / ORDER).read_text())
    runs = [r["run_id"] for r in order["runs"]]
    finished = _finished(out)
    failed: dict[str, str] = {}
    for e in Journal(out / JOURNAL).entries():
        if e["event"] == "failed":
            failed[e["run"]] = e.get("reason", "")
        elif e["event"] in ("start", "done"):
            failed.pop(e["run"], None)
    per_setting = {s["name"]: 0 for s in order["settings"]}
    hosts: dict[str, int] = {}
    for boot in finished.values():
        per_setting[boot.setting] += 1
        host = boot.host or "unknown"
        hosts[host] = hosts.get(host, 0) + 1
    walls = tuple(b.wall_s for b in finished.values() if b.wall_s is not None)
    return ExperimentStatus(
        total=len(runs),
        done=tuple(r for r in runs if r in finished),
        failed={r: why for r, why in failed.items() if r not in finished},
        pending=tuple(r for r in runs if r not in finished and r not in failed),
        per_setting=per_setting,
        run_wall_s=walls,
        hosts=hosts,
    )


def _clean_staging(out: Path, journal: Journal, say: Callable[[str], None]) -> None:
    """Stop guests a killed executor left running and remove its staging directories."""
    from analysis.capture.vm import SHARE_PREFIX, kill_orphan_guest

    staging = out / STAGING
    for leftover in sorted(staging.glob("*")) if staging.is_dir() else []:
        for share in leftover.rglob(f"{SHARE_PREFIX}*"):
            if kill_orphan_guest(share):
                say(f"stopped the guest a killed executor left running ({share})")
        run_id = leftover.name.rsplit("-pid", 1)[0]
        shutil.rmtree(leftover, ignore_errors=True)
        journal.write(run_id, "abandoned", reason="the executor was killed during this run")
        say(f"removed the unfinished run {run_id} (it runs again)")
    for partial in out.glob("*/.installing-*"):
        shutil.rmtree(partial, ignore_errors=True)


def _setting_provenance(setting_dir: Path) -> dict:
    """The setting's ``vm.json``: the first boot's provenance (kernel build, knobs, guest,
    accelerator) with every boot's knob check and identity, in iteration order."""
    records = sorted(_boots(setting_dir, "iter-*"), key=lambda b: int(b.path.parent.name[5:]))
    boots = [dict(b.document) | {"iteration": b.path.parent.name} for b in records]
    first = boots[0]["vm"]
    return {
        **{k: v for k, v in first.items() if k not in ("knob_check", "timings_s", "host")},
        "tool": EXPERIMENT_TOOL,
        "one_boot_per_iteration": True,
        "knob_check": [b["knob_check"] | {"iteration": b["iteration"]} for b in boots],
        "boots": [
            {
                "iteration": b["iteration"], "run_id": b["run_id"], "block": b["block"],
                "position": b["position"], "guest_boot_id": b["vm"].get("guest_boot_id"),
                "host": b["vm"].get("host", {}).get("hostname"), "wall_s": b.get("wall_s"),
                "timings_s": b["vm"].get("timings_s"),
            }
            for b in boots
        ],
    }  # fmt: skip


def _install(out: Path, outcome: RunOutcome) -> Path:
    """Put a successful run into OUT/<setting>/iter-K (K: the next free index), atomically
    (extracted beside, then renamed), and rebuild the setting's vm.json."""
    setting_dir = out / outcome.boot["setting"]
    setting_dir.mkdir(exist_ok=True)
    tmp = setting_dir / f".installing-{outcome.run_id}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    with tarfile.open(fileobj=io.BytesIO(outcome.archive), mode="r:gz") as tar:
        tar.extractall(tmp, filter="data")
    (tmp / BOOT_JSON).write_text(
        json.dumps(outcome.boot | {"wall_s": outcome.wall_s}, indent=2) + "\n"
    )
    index = len(list(setting_dir.glob("iter-*")))
    final = setting_dir / f"iter-{index}"
    tmp.rename(final)
    (setting_dir / VM_JSON).write_text(
        json.dumps(_setting_provenance(setting_dir), indent=2) + "\n"
    )
    return final


def _keep_failed(out: Path, outcome: RunOutcome) -> None:
    failed = out / FAILED_DIR
    failed.mkdir(exist_ok=True)
    if outcome.archive:
        (failed / f"{outcome.run_id}.tar.gz").write_bytes(outcome.archive)
    if outcome.boot:
        (failed / f"{outcome.run_id}.json").write_text(json.dumps(outcome.boot, indent=2) + "\n")
    (failed / f"{outcome.run_id}.txt").write_text(outcome.reason + "\n")


Runner = Callable[[dict, Path], RunOutcome]
Progress = Callable[[ExperimentStatus, str], None]


def _record(out: Path, journal: Journal, outcome: RunOutcome) -> None:
    if outcome.ok:
        final = _install(out, outcome)
        journal.write(outcome.run_id, "done", iteration=str(final.relative_to(out)),
                      wall_s=round(outcome.wall_s, 1))  # fmt: skip
    else:
        _keep_failed(out, outcome)
        journal.write(outcome.run_id, "failed", reason=outcome.reason,
                      wall_s=round(outcome.wall_s, 1))  # fmt: skip


def execute(
    plan: Plan,
    out: Path,
    *,
    runner: Runner = execute_run,
    retry_failed: bool = False,
    progress: Progress = lambda status, line: None,
    client=None,
) -> ExperimentStatus:
    """Run every pending run of ``plan`` into ``out`` in the plan's order and return where it
    stands. Resumes a directory started from the same plan: finished runs are kept, runs a
    killed executor left are cleaned and run again, failed runs stay failed unless
    ``retry_failed``. ``client``: a ``distributed.Client`` whose workers (one thread each, one
    per host) boot the guests; results come back here and are installed by this process."""
    out.mkdir(parents=True, exist_ok=True)
    with _out_lock(out):
        _start(plan, out)
        _same_kernel(plan, out)
        journal = Journal(out / JOURNAL)
        _clean_staging(out, journal, lambda line: progress(experiment_status(out), line))
        status = experiment_status(out)
        todo = [r for r in planned_runs(plan) if r.run_id in status.pending
                or (retry_failed and r.run_id in status.failed)]  # fmt: skip
        specs = [run_spec(plan, r) for r in todo]
        if client is not None:
            return _execute_dask(out, journal, specs, client, progress)
        for spec in specs:
            progress(experiment_status(out), f"run {spec['run_id']}")
            work = out / STAGING / f"{spec['run_id']}-pid{os.getpid()}"
            journal.write(spec["run_id"], "start", host=os.uname().nodename, pid=os.getpid())
            try:
                outcome = runner(spec, work)
            except BaseException as exc:
                journal.write(spec["run_id"], "interrupted", reason=type(exc).__name__)
                shutil.rmtree(work, ignore_errors=True)
                raise
            _record(out, journal, outcome)
            line = f"{spec['run_id']}: " + ("done" if outcome.ok else f"FAILED: {outcome.reason}")
            progress(experiment_status(out), line)
        return experiment_status(out)


def check_cluster(workers: dict) -> None:
    """One guest at a time per host: every Dask worker must have one thread, and no two may
    share a host (the host capture lock would fail the second guest's run)."""
    hosts: dict[str, str] = {}
    for address, info in workers.items():
        if info.get("nthreads", 1) != 1:
            raise InputError(
                "--scheduler", f"worker {address} has {info['nthreads']} threads: start "
                "workers with --nthreads 1 (one guest at a time per machine)"
            )  # fmt: skip
        host = info.get("host", address)
        if host in hosts:
            raise InputError(
                "--scheduler", f"workers {hosts[host]} and {address} share host {host}: one "
                "worker per machine (guests on one host change each other's timing)"
            )  # fmt: skip
        hosts[host] = address
    if not workers:
        raise InputError("--scheduler", "the cluster has no workers")


def _remote_run(spec: dict) -> RunOutcome:
    """On a Dask worker: the run in a temporary directory of that machine."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mmlab-run-") as tmp:
        return execute_run(spec, Path(tmp) / "work")


def _execute_dask(out, journal, specs, client, progress) -> ExperimentStatus:
    from distributed import as_completed

    check_cluster(client.scheduler_info()["workers"])
    futures = {}
    for spec in specs:
        journal.write(spec["run_id"], "start", scheduler=str(client.scheduler.address))
        # Earlier positions first: the plan's interleaving holds as workers free up.
        key = f"mmlab-{spec['plan_digest'][:8]}-{spec['run_id']}"
        f = client.submit(_remote_run, spec, key=key, priority=-spec["position"], pure=False)
        futures[f] = spec
    try:
        for future in as_completed(futures):
            spec = futures[future]
            try:
                outcome = future.result()
            except Exception as exc:  # the worker died or raised: a failed run, with why
                outcome = RunOutcome(spec["run_id"], False, f"worker error: {exc!r}", {}, b"", 0.0)
            _record(out, journal, outcome)
            line = f"{spec['run_id']}: " + ("done" if outcome.ok else f"FAILED: {outcome.reason}")
            progress(experiment_status(out), line)
    except BaseException as exc:
        client.cancel(list(futures))
        pending = [s["run_id"] for f, s in futures.items() if not f.done()]
        for run_id in pending:
            journal.write(run_id, "interrupted", reason=type(exc).__name__)
        raise
    return experiment_status(out)
