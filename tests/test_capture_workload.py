"""The stutterp anon hog keeps its whole region resident for its lifetime, in a real memcg.

A hog process runs inside a small memory cgroup; its ``RssAnon`` (/proc/<pid>/status, kB) and
the cgroup's usage are sampled every few milliseconds. The expected footprint is the hog's
own size, known in advance; a hog that unmapped and re-mapped its region (the earlier
design) shows samples near the interpreter's baseline between cycles and fails.
"""

from __future__ import annotations

import mmap
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.capture import workload
from analysis.capture.cgroup import MemCgroup, find_memory_hierarchy
from tests.conftest import REPO

MIB = 1 << 20
HOG_BYTES = 32 * MIB
LIMIT_BYTES = 96 * MIB
# The hog runs this long after it first reaches its size; ~1000 samples at 1 ms spacing.
WATCH_S = 1.0


def test_touch_pages_writes_one_byte_per_page_and_nothing_else():
    region = mmap.mmap(-1, 5 * workload.PAGE_BYTES + 100)
    workload.touch_pages(region, 7)
    data = region[:]
    # Six pages (the last one partial): offsets 0, 4096, ..., 20480 hold 7, all else 0.
    touched = [i for i, b in enumerate(data) if b]
    assert touched == [k * 4096 for k in range(6)]
    assert {data[i] for i in touched} == {7}
    region.close()


def _rss_anon_kib(pid: int) -> int | None:
    """``RssAnon`` from /proc/<pid>/status (kB); None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    for line in text.splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    return None


def _memory_cgroup() -> tuple[int, Path]:
    if os.geteuid() != 0:
        pytest.skip("needs root to create a memory cgroup")
    found = find_memory_hierarchy(Path("/proc/mounts").read_text())
    if found is None:
        pytest.skip("no memory cgroup controller mounted")
    return found


def test_hog_footprint_stays_at_its_size_until_stopped():
    version, root = _memory_cgroup()
    # Not "mmlab-*": the capture round-trip test compares that set before and after.
    cg = MemCgroup.create(version, root, f"mmlabtest-hog-{os.getpid()}", LIMIT_BYTES)
    # The child reports its own RssAnon before it maps anything: read from here, the
    # baseline races with the hog's first writes and, on a loaded machine, includes them.
    code = (
        "import signal, sys; from pathlib import Path; from analysis.capture import workload; "
        "signal.signal(signal.SIGTERM, workload._on_term); "
        "rss = [l.split()[1] for l in Path('/proc/self/status').read_text().splitlines() "
        "if l.startswith('RssAnon:')][0]; "
        f"print('ready', rss, flush=True); workload.run_hog({HOG_BYTES})"
    )
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=REPO,
            stdout=subprocess.PIPE,
            preexec_fn=lambda: cg.procs_file.write_text(str(os.getpid())),
        )
        ready, baseline = proc.stdout.readline().split()
        assert ready == b"ready"
        assert cg.pids() == [proc.pid]
        baseline_kib = int(baseline)
        size_kib = HOG_BYTES // 1024
        # A bound against a hang, not a speed target: filling 32 MiB takes milliseconds idle.
        deadline = time.monotonic() + 120
        while (_rss_anon_kib(proc.pid) or 0) < baseline_kib + size_kib:
            assert time.monotonic() < deadline, "hog never filled its region"
            time.sleep(0.001)
        usage_file = cg.path / ("memory.current" if version == 2 else "memory.usage_in_bytes")
        rss, usage = [], []
        end = time.monotonic() + WATCH_S
        while time.monotonic() < end:
            rss.append(_rss_anon_kib(proc.pid))
            usage.append(int(usage_file.read_text()))
            time.sleep(0.001)
        assert len(rss) > 100
        # Resident for its whole lifetime: never below the full region, never a re-map
        # that would double it (two regions alive at once).
        assert min(rss) >= baseline_kib + size_kib
        assert max(rss) < baseline_kib + 2 * size_kib
        assert min(usage) >= HOG_BYTES
        proc.send_signal(signal.SIGTERM)
        # The stop flag is checked between passes: a clean, prompt exit.
        assert proc.wait(timeout=5) == 0
    finally:
        cg.remove()


def test_read_io_counts_this_process_writes_exactly(tmp_path):
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        before = workload.read_io(os.getpid())
        written = os.write(fd, b"x" * MIB)
        after = workload.read_io(os.getpid())
    finally:
        os.close(fd)
    assert set(before) == {"wchar", "write_bytes"}
    # Nothing else in this thread writes between the two reads (reading /proc is no write).
    assert after["wchar"] - before["wchar"] == written == MIB


def test_read_io_of_a_missing_process_is_empty():
    # pid_max is at most 2**22, so this pid never exists: no counters, no exception.
    assert workload.read_io(2**22 + 1) == {}


def test_filer_creates_its_files_once_and_keeps_looking_them_up(tmp_path):
    """2,500 empty files (a few MB of dentries and inodes: no cgroup needed) in directories
    of FILES_PER_DIR; a second filer finds them all and creates nothing."""
    files = 2_500
    code = (
        "import signal, sys; from pathlib import Path; from analysis.capture import workload; "
        "signal.signal(signal.SIGTERM, workload._on_term); "
        f"workload.run_filer(Path({str(tmp_path / 'slab')!r}), {files})"
    )
    for _ in range(2):
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
        deadline = time.monotonic() + 120
        while sum(1 for _ in (tmp_path / "slab").rglob("f*")) < files:
            assert time.monotonic() < deadline, "filer never created its files"
            time.sleep(0.05)
        time.sleep(0.2)  # lookups only from here on
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        dirs = sorted(p.name for p in (tmp_path / "slab").iterdir())
        assert dirs == ["d0", "d1", "d2"]  # 1000 + 1000 + 500
        names = {p.name for p in (tmp_path / "slab").rglob("f*")}
        assert names == {f"f{i}" for i in range(files)}
        assert all(p.stat().st_size == 0 for p in (tmp_path / "slab" / "d2").iterdir())
