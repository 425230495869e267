"""The stutterp workers: anon-latency probe, random file writers, anon hogs, and a filer.

Run as ``python -m analysis.capture.workload SPEC.json`` by a shell that has already moved
itself into the capture's memory cgroup and ``exec``'d Python, so every page the workers
touch is charged to that cgroup. The launcher forks the workers (sharing the interpreter's
pages copy-on-write, which keeps the per-worker overhead charged to the cgroup small), lets
them run, stops them with SIGTERM, and prints one JSON line describing how each ended.
The optional filer (``slab_files`` > 0) keeps that many empty files' dentries and inodes in
use, so the capture's slab shrinkers have real caches to work on.

Standard library only: this module is imported in every worker process.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import random
import signal
import statistics
import sys
import time
from pathlib import Path

__all__ = [
    "PAGE_BYTES",
    "fault_mapping_ns",
    "idle_probe",
    "main",
    "read_io",
    "retouch_ns",
    "run_filer",
    "run_hog",
    "run_phase",
    "run_probe",
    "run_writer",
    "touch_pages",
    "worker_errors",
]

PAGE_BYTES = 4096
WRITE_BLOCK_BYTES = 4096
# Files per directory of the filer: large directories would make lookups, not the dentry
# and inode caches, the cost.
FILES_PER_DIR = 1000
LATENCY_UNIT = "us"
LOG_HEADER = (
    "# mmlab anon-latency probe (stutterp mmap-N): one line per mapping: "
    "<epoch_s> <latency_us>; latency = mmap() plus faulting the mapping one 4096-byte page "
    "at a time; unit: microseconds\n"
)

_stop = False


def _on_term(signum: int, frame: object) -> None:
    global _stop
    _stop = True


def fault_mapping_ns(map_bytes: int) -> int:
    """Time mmap() of an anonymous region plus a write fault on each 4 KiB page (ns).

    Mirrors stutterp's anon-latency worker; the write makes the kernel allocate (and the
    memcg charge) a real page per fault rather than map the shared zero page.
    """
    t0 = time.perf_counter_ns()
    region = mmap.mmap(-1, map_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for off in range(0, map_bytes, PAGE_BYTES):
        region[off] = 1
    elapsed = time.perf_counter_ns() - t0
    region.close()
    return elapsed


def retouch_ns(region: mmap.mmap, map_bytes: int) -> int:
    """Time the probe's page loop over an already-faulted mapping: its pure Python cost (ns)."""
    t0 = time.perf_counter_ns()
    for off in range(0, map_bytes, PAGE_BYTES):
        region[off] = 1
    return time.perf_counter_ns() - t0


def run_probe(map_bytes: int, log_path: Path) -> None:
    """Map, fault and unmap ``map_bytes`` repeatedly, logging ``<epoch_s> <latency_us>``."""
    with open(log_path, "w") as log:
        log.write(LOG_HEADER)
        n = 0
        while not _stop:
            epoch = time.time()
            latency_ns = fault_mapping_ns(map_bytes)
            log.write(f"{epoch:.6f} {latency_ns / 1000:.3f}\n")
            n += 1
            # Flush often: an OOM kill must not take the logged latencies with it.
            if n % 64 == 0:
                log.flush()


def run_writer(path: Path, file_bytes: int, seed: int) -> None:
    """Randomly overwrite 4 KiB blocks of a ``file_bytes`` file (fio randwrite, bs=4k).

    No fsync: the point is dirty page-cache pages that reclaim meets at the LRU tail.
    """
    rng = random.Random(seed)
    blocks = max(1, file_bytes // WRITE_BLOCK_BYTES)
    payload = os.urandom(WRITE_BLOCK_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, file_bytes)
        while not _stop:
            os.pwrite(fd, payload, rng.randrange(blocks) * WRITE_BLOCK_BYTES)
    finally:
        os.close(fd)


def run_filer(directory: Path, files: int) -> None:
    """Look up ``files`` empty files in ``directory`` in turn, creating any that is missing.

    Each lookup that misses the dentry cache allocates a dentry and an inode (``dentry``,
    ``ext4_inode_cache`` slabs), charged to the cgroup; ext4 allocates inodes without
    ``__GFP_FS``, so the reclaim those charges enter cannot run the superblock shrinker
    (``super_cache_scan``) and defers its work (docs/shrinker-deferral.md "Terms"). The
    files persist across phases (the capture's work directory is removed at its end), so
    the first phase creates them and later phases read back what the shrinkers freed.
    """
    directory.mkdir(exist_ok=True)
    while not _stop:
        for i in range(files):
            if _stop:
                break
            path = directory / f"d{i // FILES_PER_DIR}" / f"f{i}"
            try:
                os.stat(path)
            except FileNotFoundError:
                path.parent.mkdir(exist_ok=True)
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


def run_dentry_filler(directory: Path, names: int) -> None:
    """Look up ``names`` names that do not exist, round and round.

    Each miss leaves a negative dentry (``dentry`` slab, charged to the cgroup) on the
    superblock's LRU, so the dcache grows to millions of objects cheaply — a cache as large
    as seed 001's — for ``super_cache_scan`` to scan, while the filer's file creations
    (ext4 and XFS allocate inodes without ``__GFP_FS``) enter reclaim in contexts where that
    shrinker must defer its work.
    """
    directory.mkdir(exist_ok=True)
    while not _stop:
        for i in range(names):
            if _stop:
                break
            with contextlib.suppress(FileNotFoundError):
                os.stat(directory / f"n{i}")


def touch_pages(region: mmap.mmap, value: int) -> None:
    """Write ``value`` into the first byte of every 4 KiB page of ``region`` (one pass).

    One extended-slice store, so the pass runs in C: each write marks the page's PTE dirty
    and young, which is all a re-touch needs to keep the anon page in use.
    """
    pages = len(range(0, len(region), PAGE_BYTES))
    region[::PAGE_BYTES] = bytes([value]) * pages


def run_hog(anon_bytes: int) -> None:
    """Map ``anon_bytes`` of anonymous memory once, fill it, then re-touch it until stopped.

    stutterp's hogs "continually map (100-dirty_ratio)% of memory": a footprint that stays
    resident for the whole phase. With no swap the kernel cannot reclaim these pages, so
    every page the writers and the probe add must come from the writers' file pages. Filled
    with a non-zero pattern (written, so each page is a private anon page charged to the
    memcg, not the shared zero page); every pass then writes one byte per page.
    """
    region = mmap.mmap(-1, anon_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    chunk = b"\x5a" * (1 << 20)
    for off in range(0, anon_bytes, len(chunk)):
        if _stop:
            break
        region[off : off + len(chunk)] = chunk[: anon_bytes - off]
    passes = 0
    while not _stop:
        passes += 1
        touch_pages(region, passes & 0xFF)
    region.close()


# A worker that dies of an exception writes one line "<prefix><pid>: <exception>" on
# stderr, which the capture reads (worker_errors) to say why the iteration failed.
ERROR_PREFIX = "mmlab-worker "


def _fork(target, *args) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            target(*args)
        except BaseException as exc:
            code = 1
            with contextlib.suppress(OSError):
                os.write(2, f"{ERROR_PREFIX}{os.getpid()}: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(code)
    return pid


def worker_errors(stderr: str) -> dict[str, str]:
    """pid (text) -> the exception a worker died of, from the launcher's stderr."""
    out = {}
    for line in stderr.splitlines():
        pid, sep, message = line.removeprefix(ERROR_PREFIX).partition(": ")
        if line.startswith(ERROR_PREFIX) and sep and pid.isdigit():
            out[pid] = message
    return out


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return f"exit {os.WEXITSTATUS(status)}"


def _stop_all(children: dict[int, str], grace_s: float = 5.0) -> dict[int, int]:
    """SIGTERM every child, SIGKILL stragglers after ``grace_s``; return pid -> wait status."""
    statuses: dict[int, int] = {}
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while len(statuses) < len(children):
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            statuses[pid] = status
            continue
        if time.monotonic() > deadline:
            for other in children.keys() - statuses.keys():
                os.kill(other, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.01)
    return statuses


def read_io(pid: int) -> dict[str, int]:
    """A process's /proc/<pid>/io counters (bytes; empty if it has gone).

    ``wchar`` is bytes passed to write()/pwrite(); ``write_bytes`` is bytes of page cache the
    task dirtied (task_io_account_write() when a clean folio becomes dirty), the upper bound
    on what writeback can write for it.
    """
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return {}
    fields = (line.split(": ") for line in text.splitlines())
    return {name: int(value) for name, value in fields if name in ("wchar", "write_bytes")}


def run_phase(spec: dict) -> dict:
    """Run one worker count: writers and the filer first, then (after ``warmup_s``) hogs and
    the probe."""
    work_dir = Path(spec["work_dir"])
    children: dict[int, str] = {}
    early: dict[int, int] = {}
    for i in range(spec["writers"]):
        path = work_dir / f"writer-{i}"
        children[_fork(run_writer, path, spec["file_bytes_per_writer"], spec["seed"] + i)] = (
            "writer"
        )
    if spec.get("slab_files", 0) > 0:
        children[_fork(run_filer, work_dir / "slab", spec["slab_files"])] = "filer"
    if spec.get("negative_dentries", 0) > 0:
        children[_fork(run_dentry_filler, work_dir / "negative", spec["negative_dentries"])] = (
            "dentries"
        )
    time.sleep(spec["warmup_s"])
    for _ in range(spec["hogs"]):
        children[_fork(run_hog, spec["anon_bytes_per_hog"])] = "hog"
    children[_fork(run_probe, spec["probe_map_bytes"], Path(spec["log_path"]))] = "probe"
    deadline = time.monotonic() + spec["duration_s"]
    while time.monotonic() < deadline and not _stop:
        # A worker that dies early (the cgroup's OOM killer) is reaped and reported.
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            early[pid] = status
        time.sleep(0.05)
    alive = {pid: role for pid, role in children.items() if pid not in early}
    # Read before SIGTERM: afterwards the counters vanish with the process.
    io = {pid: read_io(pid) for pid, role in alive.items() if role == "writer"}
    statuses = {**early, **_stop_all(alive)}
    return {
        "children": [
            {
                "pid": pid,
                "role": children[pid],
                "ended": _describe(status),
                "early": pid in early,
                **({"io": io[pid]} if pid in io else {}),
            }
            for pid, status in sorted(statuses.items())
        ]
    }


def idle_probe(map_bytes: int, seconds: float) -> dict:
    """The probe's own cost on an idle cgroup: fault latency and pure loop overhead (us)."""
    faults: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        faults.append(fault_mapping_ns(map_bytes) / 1000)
    region = mmap.mmap(-1, map_bytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    retouch_ns(region, map_bytes)
    loops = [retouch_ns(region, map_bytes) / 1000 for _ in range(200)]
    region.close()
    faults.sort()
    return {
        "map_bytes": map_bytes,
        "unit": LATENCY_UNIT,
        "mappings": len(faults),
        "idle_latency_median_us": statistics.median(faults),
        "idle_latency_p99_us": faults[max(0, int(len(faults) * 0.99) - 1)],
        "loop_overhead_median_us": statistics.median(loops),
    }


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _on_term)
    spec = json.loads(Path(argv[0]).read_text())
    if spec["mode"] == "idle-probe":
        result = idle_probe(spec["probe_map_bytes"], spec["seconds"])
    else:
        result = run_phase(spec)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
