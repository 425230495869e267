"""Issue 8's "Bad input to try": every case ends in a result or in one line, exit status 2.

Inputs are cut from a real capture (``data/stutterp-dirty20`` iter-2, kernel 6.18: its
first 2,000 lines) and damaged the way files get damaged. Expected numbers come from the
undamaged excerpt, counted here by plain string matching, not by the parser under test.
Commands run in-process through :func:`analysis.cli.main` (one subprocess checks that no
traceback reaches the terminal). ``--json`` output is parsed strictly: NaN or Infinity
tokens fail.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import zstandard

from analysis import cli
from analysis.errors import InputError
from analysis.ingest.ftrace.reader import (
    available_memory_bytes,
    map_in_processes,
    pool_workers,
)
from tests.dying_workers import die_always, die_once, out_of_memory_once

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO / "data/stutterp-dirty20/dirty20/iter-2/ftrace-stutterp.zst"
EXCERPT_LINES = 2000


def _reject_constant(token: str):
    raise ValueError(f"non-standard JSON token {token}")


def strict_json(text: str):
    return json.loads(text, parse_constant=_reject_constant)


@pytest.fixture(scope="module")
def excerpt() -> bytes:
    """The first 2,000 lines of a real capture, newline-terminated."""
    reader = zstandard.ZstdDecompressor().stream_reader(CAPTURE.open("rb"))
    lines = []
    buffer = b""
    while len(lines) < EXCERPT_LINES:
        buffer += reader.read(1 << 16)
        *whole, buffer = buffer.split(b"\n")
        lines.extend(whole)
    return b"\n".join(lines[:EXCERPT_LINES]) + b"\n"


def event_counts(text: bytes) -> Counter:
    """Events per name by string matching: ``<ts>: <name>: `` on each line."""
    counts: Counter = Counter()
    for line in text.split(b"\n"):
        head, sep, _ = line.partition(b": mm_")
        if sep and head.rstrip()[-1:].isdigit():
            counts["mm_" + line.split(b": mm_", 1)[1].split(b":", 1)[0].decode()] += 1
    return counts


class Cli:
    """``mmlab`` in-process, with a private ingest cache."""

    def __init__(self, capsys, cache: Path) -> None:
        self.capsys = capsys
        self.cache = cache

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        if argv[0] == "ingest":
            argv = (*argv, "--out", str(self.cache))
        rc = cli.main(list(argv))
        out, err = self.capsys.readouterr()
        return rc, out, err


@pytest.fixture
def mmlab(capsys, tmp_path, monkeypatch) -> Cli:
    monkeypatch.chdir(tmp_path)  # stalls caches under ./build/ingest
    return Cli(capsys, tmp_path / "cache")


def assert_one_line_error(rc: int, out: str, err: str, command: str, path: Path, reason: str):
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"mmlab {command}: {path}"), err
    assert reason in err, err


def ingest_json(mmlab: Cli, path: Path) -> dict:
    rc, out, err = mmlab("ingest", str(path), "--json")
    assert (rc, err) == (0, "")
    return strict_json(out)


def stalls_json(mmlab: Cli, path: Path) -> list:
    rc, out, err = mmlab("stalls", str(path), "--json")
    assert rc == 0
    # Nothing on stderr but the count of unparsed lines (issue 17), which the JSON repeats.
    result = strict_json(out)
    notes = [f"mmlab: {path}: {r['unparsed']:,} unparsed lines" for r in result if r["unparsed"]]
    assert [ln.split(" (first")[0] for ln in err.splitlines()] == notes
    return result


def without_source(value):
    """``stalls --json`` with file names removed, to compare two inputs' results."""
    if isinstance(value, dict):
        return {k: without_source(v) for k, v in value.items() if k not in {"source", "path"}}
    if isinstance(value, list):
        return [without_source(v) for v in value]
    return value


COMMANDS = ("ingest", "stalls")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", ["trace.txt", "trace.gz", "trace.zst", "trace.xz"])
def test_empty_and_zero_length_compressed(mmlab, tmp_path, command, name):
    path = tmp_path / name
    path.write_bytes(b"")
    assert_one_line_error(*mmlab(command, str(path)), command, path, "is empty")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("suffix", "compress", "kind"),
    [
        (".gz", gzip.compress, "gzip"),
        (".zst", lambda d: zstandard.ZstdCompressor().compress(d), "zstd"),
        (".xz", lzma.compress, "xz"),
    ],
)
def test_truncated_compressed_stream(mmlab, tmp_path, excerpt, command, suffix, compress, kind):
    whole = compress(excerpt)
    path = tmp_path / f"ftrace{suffix}"
    path.write_bytes(whole[: len(whole) // 2])
    rc, out, err = mmlab(command, str(path))
    assert_one_line_error(rc, out, err, command, path, f"corrupt or truncated {kind} stream")
    assert "(byte offset " in err


def test_compression_is_read_from_content_not_name(mmlab, tmp_path, excerpt):
    plain_named_zst = tmp_path / "plain.zst"
    plain_named_zst.write_bytes(excerpt)
    zst_named_txt = tmp_path / "zst.txt"
    zst_named_txt.write_bytes(zstandard.ZstdCompressor().compress(excerpt))
    expected = dict(event_counts(excerpt))
    for path in (plain_named_zst, zst_named_txt):
        acc = ingest_json(mmlab, path)
        assert acc["source"] == str(path)
        assert acc["events"] == expected
        assert acc["lines"] == EXCERPT_LINES and acc["unparsed"] == 0
    assert without_source(stalls_json(mmlab, plain_named_zst)) == without_source(
        stalls_json(mmlab, zst_named_txt)
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_random_binary_is_not_a_trace(mmlab, tmp_path, command):
    path = tmp_path / "random.bin"
    path.write_bytes(random.Random(8).randbytes(1 << 18))
    rc, out, err = mmlab(command, str(path))
    # Refused from its first KiB (issue 29 item 21), before it is read on.
    assert_one_line_error(rc, out, err, command, path, "binary content (NUL byte)")
    assert err.startswith(f"mmlab {command}: {path}:1 (byte offset ")


def test_text_that_is_not_a_trace(mmlab, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("# my notes\nkswapd was busy today\n")
    rc, out, err = mmlab("ingest", str(path))
    assert_one_line_error(rc, out, err, "ingest", path, "no line matches a trace layout")
    assert f"{path}:2: " in err


def test_blank_lines_only_are_not_a_trace(mmlab, tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("\n  \n\n")
    assert_one_line_error(*mmlab("ingest", str(path)), "ingest", path, "only 3 blank")


def test_headers_only_is_an_empty_trace_not_an_error(mmlab, tmp_path):
    """ftrace's ``trace`` file of a capture in which nothing fired."""
    path = tmp_path / "trace"
    path.write_text("# tracer: nop\n#\n# entries-in-buffer/entries-written: 0/0   #P:2\n")
    acc = ingest_json(mmlab, path)
    assert (acc["events"], acc["header_lines"], acc["unparsed"]) == ({}, 3, 0)


@pytest.mark.parametrize("command", COMMANDS)
def test_missing_path(mmlab, tmp_path, command):
    path = tmp_path / "nowhere.txt"
    rc, out, err = mmlab(command, str(path))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert str(path) in err and "o such file or directory" in err


def test_directory_where_a_file_is_expected(mmlab, tmp_path):
    empty = tmp_path / "empty-dir"
    empty.mkdir()
    assert_one_line_error(
        *mmlab("ingest", str(empty)), "ingest", empty, "directory holds no trace files"
    )
    assert_one_line_error(*mmlab("stalls", str(empty)), "stalls", empty, "no ftrace-* file")


def test_file_where_a_directory_is_expected(mmlab, tmp_path, excerpt):
    trace = tmp_path / "ftrace-x.txt"
    trace.write_bytes(excerpt)
    blocker = tmp_path / "cache-file"
    blocker.write_text("x\n")
    rc = cli.main(["ingest", str(trace), "--out", str(blocker)])
    out, err = mmlab.capsys.readouterr()
    assert_one_line_error(rc, out, err, "ingest", blocker, "this is a file")
    inside = trace / "ftrace-y.txt"
    rc, out, err = mmlab("stalls", str(inside))
    assert rc == 2 and err.count("\n") == 1 and str(inside) in err


def test_crlf_line_endings_read_like_lf(mmlab, tmp_path, excerpt):
    lf, crlf = tmp_path / "lf.txt", tmp_path / "crlf.txt"
    lf.write_bytes(excerpt)
    crlf.write_bytes(excerpt.replace(b"\n", b"\r\n"))
    a, b = ingest_json(mmlab, lf), ingest_json(mmlab, crlf)
    assert b["events"] == a["events"] == dict(event_counts(excerpt))
    assert b["unparsed"] == 0
    assert without_source(stalls_json(mmlab, crlf)) == without_source(stalls_json(mmlab, lf))


def test_ten_megabyte_line(mmlab, tmp_path, excerpt):
    lines = excerpt.split(b"\n")
    path = tmp_path / "long.txt"
    path.write_bytes(b"\n".join([*lines[:100], b"x" * (10 << 20), *lines[100:]]))
    acc = ingest_json(mmlab, path)
    assert acc["events"] == dict(event_counts(excerpt))
    assert acc["unparsed"] == 1
    (reason,) = acc["unparsed_samples"].values()
    assert reason["lines"] == [101]
    assert reason["samples"] == ["x" * 200]  # a sample, not the whole line
    stalls_json(mmlab, path)


def test_nul_bytes_mid_file_are_counted_and_shown_escaped(mmlab, tmp_path, excerpt):
    lines = excerpt.split(b"\n")
    path = tmp_path / "nul.txt"
    path.write_bytes(b"\n".join([*lines[:100], b"\x00\x00bad \x1b[31mred\xff", *lines[100:]]))
    acc = ingest_json(mmlab, path)
    assert acc["events"] == dict(event_counts(excerpt))
    (reason,) = acc["unparsed_samples"].values()
    assert reason["lines"] == [101]
    assert reason["samples"] == ["\\x00\\x00bad \\x1b[31mred\\xff"]
    rc, out, err = mmlab("ingest", str(path))
    assert rc == 0 and err == ""
    assert "| \\x00\\x00bad \\x1b[31mred\\xff" in out
    assert not any(c in out for c in "\x00\x1b\ufffd")
    stalls_json(mmlab, path)


def _values(tree, key: str) -> list:
    """Every value stored under ``key`` anywhere in a JSON tree."""
    if isinstance(tree, dict):
        return [v for k, x in tree.items() for v in ([x] if k == key else _values(x, key))]
    if isinstance(tree, list):
        return [v for x in tree for v in _values(x, key)]
    return []


def test_timestamps_going_backwards_are_reported(mmlab, tmp_path, excerpt):
    lines = excerpt.split(b"\n")[:-1]
    ordered, path = tmp_path / "ordered.txt", tmp_path / "backwards.txt"
    ordered.write_bytes(excerpt)
    # Lines 201-300 moved before 51-200: the clock steps back once, at the old line 51.
    path.write_bytes(
        b"\n".join([*lines[:50], *lines[200:300], *lines[50:200], *lines[300:]]) + b"\n"
    )
    acc = ingest_json(mmlab, path)
    assert acc["events"] == dict(event_counts(excerpt))
    assert sum(_values(stalls_json(mmlab, ordered), "clock_backwards")) == 0
    assert sum(_values(stalls_json(mmlab, path), "clock_backwards")) == 1


def test_last_line_cut_mid_field(mmlab, tmp_path, excerpt):
    """The cut line parses (``flags=RECLAIM_WB_F``) but cannot be trusted: it is unparsed."""
    path = tmp_path / "cut.txt"
    path.write_bytes(excerpt[:-21])
    last = excerpt[:-1].rsplit(b"\n", 1)[1]
    acc = ingest_json(mmlab, path)
    expected = event_counts(excerpt) - event_counts(last + b"\n")
    assert acc["events"] == dict(expected)
    assert acc["truncated_final_line"]
    assert acc["unparsed_samples"]["truncated final line"]["lines"] == [EXCERPT_LINES]
    stalls_json(mmlab, path)


def test_non_utf8_comm(mmlab, tmp_path, excerpt):
    path = tmp_path / "comm.txt"
    path.write_bytes(excerpt.replace(b"python-", b"py\xff\xfeon-", 5))
    acc = ingest_json(mmlab, path)
    assert acc["events"] == dict(event_counts(excerpt))
    assert (acc["invalid_utf8_lines"], acc["unparsed"]) == (5, 0)
    stalls_json(mmlab, path)


def test_error_reaches_the_terminal_without_traceback(tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(random.Random(3).randbytes(1 << 16))
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.cli", "ingest", str(path), "--out", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"mmlab ingest: {path}:1 (byte offset ")
    assert "binary content (NUL byte), not a text capture" in proc.stderr


def test_reader_closing_the_pipe_is_not_an_error(tmp_path):
    """``mmlab ... | head -1``: the reader goes away before mmlab writes."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.write_text(BEFORE)
    after.write_text(AFTER)
    argv = [sys.executable, "-m", "analysis.cli", "vmstat", str(before), str(after)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdout.close()
    assert (proc.wait(), proc.stderr.read()) == (0, b"")


def test_two_ingests_at_once_give_one_result(tmp_path, excerpt):
    path = tmp_path / "ftrace-x.txt"
    path.write_bytes(excerpt * 20)  # 40,000 lines: long enough for the runs to overlap
    cache = tmp_path / "cache"
    argv = [sys.executable, "-m", "analysis.cli", "ingest", str(path), "--out", str(cache)]
    procs = [
        subprocess.Popen([*argv, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    outputs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outputs]
    a, b = (strict_json(out) for out, _ in outputs)
    assert a == b
    assert a["events"] == {k: 20 * v for k, v in event_counts(excerpt).items()}
    datasets = [p for p in cache.iterdir() if p.name not in {"by-path"}]
    assert len(datasets) == 1, datasets  # one dataset, no leftover temporary directory
    assert len(list((cache / "by-path").glob("*.json"))) == 1


@pytest.mark.parametrize(
    ("files", "cpus", "mem_gib", "expected"),
    [
        (8, 16, 64, 8),  # files are the limit
        (8, 2, 64, 2),  # cores are the limit
        (8, 16, 4.5, 3),  # 4.5 GiB / 1.5 GiB per worker
        (8, 16, 1, 1),  # always at least one
    ],
)
def test_pool_workers_bounded_by_memory_and_cores(files, cpus, mem_gib, expected):
    assert pool_workers(files, cpus, int(mem_gib * (1 << 30))) == expected


MIB = 1 << 20


def fake_cgroup(root: Path, version: int, limits: dict[str, tuple[str, int]]) -> Path:
    """/proc and a memory cgroup tree under ``root``: this process in ``a/b``; ``limits``
    maps a group to (limit text, usage bytes)."""
    proc = root / "proc"
    (proc / "self").mkdir(parents=True)
    mount = root / ("unified" if version == 2 else "memory")
    mount.mkdir()
    if version == 2:
        (proc / "mounts").write_text(f"cgroup2 {mount} cgroup2 rw,nosuid 0 0\n")
        (mount / "cgroup.controllers").write_text("cpu io memory pids\n")
        (proc / "self" / "cgroup").write_text("0::/a/b\n")
    else:
        (proc / "mounts").write_text(f"cgroup {mount} cgroup rw,memory 0 0\n")
        (proc / "self" / "cgroup").write_text("5:cpu:/\n4:memory:/a/b\n")
    names = (
        ("memory.max", "memory.current")
        if version == 2
        else ("memory.limit_in_bytes", "memory.usage_in_bytes")
    )
    for group, (limit, usage) in limits.items():
        (mount / group).mkdir(parents=True, exist_ok=True)
        (mount / group / names[0]).write_text(f"{limit}\n")
        (mount / group / names[1]).write_text(f"{usage}\n")
    return proc


@pytest.mark.parametrize("version", [1, 2])
def test_available_memory_is_bounded_by_the_memory_cgroup(tmp_path, version):
    limits = {"a": (str(512 * MIB), 100 * MIB), "a/b": (str(1024 * MIB), 200 * MIB)}
    proc = fake_cgroup(tmp_path, version, limits)
    # The parent's limit is the tighter: 512 - 100 MiB.
    assert available_memory_bytes(8192 * MIB, proc) == 412 * MIB
    assert available_memory_bytes(300 * MIB, proc) == 300 * MIB


@pytest.mark.parametrize("version", [1, 2])
def test_unlimited_cgroup_leaves_mem_available(tmp_path, version):
    unlimited = "max" if version == 2 else "9223372036854771712"
    proc = fake_cgroup(tmp_path, version, {"a": (unlimited, 10), "a/b": (unlimited, 10)})
    assert available_memory_bytes(8192 * MIB, proc) == 8192 * MIB


def test_a_killed_worker_is_retried_alone(tmp_path):
    files = [str(tmp_path / n) for n in ("a.txt", "die.txt", "b.txt")]
    results = map_in_processes(die_once, files, str(tmp_path), 2)
    assert results == [{"source": f} for f in files]
    assert (tmp_path / "die.txt.died").exists()


def test_a_worker_out_of_memory_is_retried_alone(tmp_path):
    files = [str(tmp_path / n) for n in ("a.txt", "oom.txt")]
    assert map_in_processes(out_of_memory_once, files, str(tmp_path), 2) == [
        {"source": f} for f in files
    ]
    assert (tmp_path / "oom.txt.oom").exists()


def test_a_worker_dying_twice_is_one_error_naming_the_file(tmp_path):
    files = [str(tmp_path / n) for n in ("a.txt", "die.txt")]
    with pytest.raises(InputError) as info:
        map_in_processes(die_always, files, str(tmp_path), 2)
    assert info.value.path == files[1]
    assert "died (killed" in str(info.value) and "twice on this file" in str(info.value)


def test_half_built_datasets_of_dead_processes_are_removed(mmlab, tmp_path, excerpt):
    """A worker killed mid-ingest leaves ``tmp-<pid>-<thread>``; the next ingest removes it
    unless that process is alive."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    orphan = mmlab.cache / f"tmp-{dead.stdout.strip()}-1"
    alive = mmlab.cache / f"tmp-{os.getpid()}-1"
    for d in (orphan, alive):
        (d / "event=x").mkdir(parents=True)
    trace = tmp_path / "ftrace-x.txt"
    trace.write_bytes(excerpt)
    ingest_json(mmlab, trace)
    assert not orphan.exists() and alive.is_dir()


def test_input_error_in_a_worker_reaches_the_command(mmlab, tmp_path, excerpt):
    """Two files go through the process pool; the bad one's InputError crosses back."""
    folder = tmp_path / "captures"
    folder.mkdir()
    (folder / "ftrace-good.txt").write_bytes(excerpt)
    bad = folder / "ftrace-bad.txt"
    bad.write_bytes(random.Random(5).randbytes(1 << 12))
    assert_one_line_error(*mmlab("ingest", str(folder)), "ingest", bad, "NUL byte")


# mmtests trees (ingest/mmtests.py); the real-tree quirks are test_mmtests_tree's.
@pytest.fixture
def tree(tmp_path) -> Path:
    run = tmp_path / "dirty5"
    shutil.copytree(REPO / "data/stutterp-dirty5/dirty5", run)
    return run


def vmstat_rows(mmlab: Cli, *argv: str) -> dict:
    rc, out, err = mmlab(*argv, "--json")
    assert (rc, err) == (0, ""), err
    return strict_json(out)


def test_tree_without_tests_timestamp(mmlab, tree):
    """Elapsed time then comes from elsewhere; every count is unchanged."""
    full = vmstat_rows(mmlab, "compare-vmstat", str(tree))
    (tree / "iter-0" / "tests-timestamp").unlink()
    cut = vmstat_rows(mmlab, "compare-vmstat", str(tree))
    assert full["elapsed"]["dirty5"][0]["source"] == "tests-timestamp time ::"
    assert cut["elapsed"]["dirty5"][0]["source"] != "tests-timestamp time ::"
    assert cut["elapsed"]["dirty5"][1:] == full["elapsed"]["dirty5"][1:]
    counts = [
        (a, b) for a, b in zip(full["rows"], cut["rows"], strict=True) if a["unit"] != "pages/s"
    ]
    assert counts and all(a == b for a, b in counts)
    stalls_json(mmlab, tree)


def test_tree_with_empty_iteration(mmlab, tree):
    shutil.rmtree(tree / "iter-0")
    (tree / "iter-0").mkdir()
    rc, out, err = mmlab("compare-vmstat", str(tree))
    assert_one_line_error(rc, out, err, "compare-vmstat", tree / "iter-0", "empty iteration")
    # One rule for every command (issue 29 item 8): stalls refuses it too.
    rc, out, err = mmlab("stalls", str(tree))
    assert_one_line_error(rc, out, err, "stalls", tree / "iter-0", "empty iteration")


def test_tree_with_a_gap_in_iterations(mmlab, tree):
    """iter-0 and iter-2 without iter-1: a copy that lost an iteration, said so."""
    shutil.rmtree(tree / "iter-1")
    rc, out, err = mmlab("compare-vmstat", str(tree))
    assert_one_line_error(rc, out, err, "compare-vmstat", tree, "but no iter-1")
    rc, out, err = mmlab("stalls", str(tree))
    assert_one_line_error(rc, out, err, "stalls", tree, "but no iter-1")
    rc, out, err = mmlab("vmstat", str(tree / "iter-2"), "--json")
    assert (rc, err) == (0, "")
    strict_json(out)


# vmstat files (ingest/vmstat.py)
BEFORE = "nr_free_pages 100\npgscan_kswapd 10\npgsteal_kswapd 5\n"
AFTER = "nr_free_pages 50\npgscan_kswapd 30\npgsteal_kswapd 15\n"


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (BEFORE.replace("kswapd 10", "kswapd -10"), 2, "counter pgscan_kswapd is negative (-10)"),
        (BEFORE.replace("kswapd 10", "kswapd 10.5"), 2, "expected 'name value'"),
        (BEFORE + "pgscan_kswapd 12\n", 4, "pgscan_kswapd appears twice (first on line 2)"),
    ],
)
def test_bad_vmstat_snapshot(mmlab, tmp_path, text, line, reason):
    before, after = tmp_path / "before", tmp_path / "after"
    before.write_text(text)
    after.write_text(AFTER)
    rc, out, err = mmlab("vmstat", str(before), str(after))
    assert_one_line_error(rc, out, err, "vmstat", before, reason)
    assert err.startswith(f"mmlab vmstat: {before}:{line}: ")


def test_negative_level_is_data_not_damage(mmlab, tmp_path):
    """memcg v1 printed transiently negative levels before ~4.x; only counters must be >= 0."""
    before, after = tmp_path / "before", tmp_path / "after"
    before.write_text(BEFORE.replace("pages 100", "pages -100"))
    after.write_text(AFTER)
    metrics = vmstat_rows(mmlab, "vmstat", str(before), str(after))["metrics"]
    assert (metrics["Kswapd pages scanned"], metrics["Kswapd efficiency %"]) == (20.0, 50.0)


def test_a_corrupt_field_is_an_unparsed_line_every_analysis_counts(mmlab, tmp_path, excerpt):
    """Issue 17: ``nr_reclaimed=GARBAGE@@`` was an event with a null field and "0 unparsed
    lines"; with half the lines garbage, stalls and fit said nothing."""
    lines = excerpt.split(b"\n")
    hit = [i for i, ln in enumerate(lines) if b"mm_vmscan_memcg_reclaim_end: nr_reclaimed=" in ln]
    damaged = hit[::2]
    for i in damaged:
        lines[i] = lines[i].split(b"nr_reclaimed=")[0] + b"nr_reclaimed=GARBAGE@@"
    path = tmp_path / "trace.txt"
    path.write_bytes(b"\n".join(lines))
    numbers = [i + 1 for i in damaged]
    acc = ingest_json(mmlab, path)
    assert acc["unparsed"] == len(damaged) > 50
    assert acc["unparsed_samples"]["field value not a number"]["lines"] == numbers[:20]
    assert acc["events"]["mm_vmscan_memcg_reclaim_end"] == len(hit) - len(damaged)
    rc, out, err = mmlab("stalls", str(path))
    assert rc == 0
    shown = ", ".join(map(str, numbers[:10]))
    # The header wraps at 80 columns: the list is read across its lines.
    assert f"{len(damaged)} unparsed lines: {shown}, ..." in " ".join(out.split())
    assert f"{len(damaged)} unparsed lines (first at line {numbers[0]})" in err
    rc, out, err = mmlab("stalls", str(path), "--json")
    (result,) = strict_json(out)
    assert (result["unparsed"], result["unparsed_lines"]) == (len(damaged), numbers[:10])
    rc, out, err = mmlab("fit", str(path), "--bootstrap", "0", "--family", "weibull")
    assert rc == 0 and f"{len(damaged)} unparsed lines: {shown}" in " ".join(out.split())
