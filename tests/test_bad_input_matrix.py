"""Issue 16's bad-input matrix: every file-reading subcommand against every way a file goes bad.

Each refused case must end in exit status 2 with exactly one line on stderr, ``mmlab
<command>: <path>...: <reason>``, nothing on stdout, no traceback, no output file or
folder left behind, and every input byte for byte as it was (SHA-256 before and after).
Inputs are cut from a real capture (``data/stutterp-dirty5`` iter-0) and damaged the way
files get damaged. Commands run in-process through :func:`analysis.cli.main`; a FIFO or
``/dev/zero`` that a reader opened would block or never end, so every case runs under a
120 s alarm (a hang never ends; a loaded machine took over 30 s for a fit that
ends). Inputs that are degenerate but usable (one run per kernel, an mmtests tree without
``tests-timestamp``) are results, and the test checks that they say why.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import os
import random
import re
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from analysis import cli
from analysis.ingest.mmtests import INCOMPLETE

REPO = Path(__file__).resolve().parents[1]
ITER = REPO / "data/stutterp-dirty5/dirty5/iter-0"
EXCERPT_BYTES = 300_000
PROGRESS = re.compile(r"mmlab [a-z -]+: \[\d+/\d+\] .* done(, \d+ left)?$")
ALARM_S = 120


class Hung(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception`` in mmlab eats it."""


@pytest.fixture(autouse=True)
def alarm() -> Iterator[None]:
    def hung(signum, frame):
        raise Hung(f"no answer within {ALARM_S} s (a reader opened a FIFO or /dev/zero?)")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(ALARM_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def excerpt() -> bytes:
    """The first ~300 kB of a real trace, cut at a line end."""
    raw = zstandard.ZstdDecompressor().stream_reader((ITER / "ftrace-stutterp.zst").open("rb"))
    text = raw.read(EXCERPT_BYTES + 4096)
    return text[: text.rfind(b"\n", 0, EXCERPT_BYTES) + 1]


def _half(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _corrupt_line(text: bytes, junk: bytes) -> bytes:
    lines = text.split(b"\n")
    mid = len(lines) // 2
    lines[mid] = lines[mid][:30] + junk
    return b"\n".join(lines)


# name -> bytes of the file (built from the excerpt), for commands that read one file.
BAD_FILES = {
    "empty": lambda t: b"",
    "random bytes": lambda t: random.Random(16).randbytes(50_000),
    "truncated gz": lambda t: _half(gzip.compress(t)),
    "truncated zst": lambda t: _half(zstandard.ZstdCompressor().compress(t)),
    "truncated xz": lambda t: _half(lzma.compress(t)),
}
# Paths that are not a readable file at all.
NOT_FILES = ("missing", "directory", "fifo", "/dev/zero")


def _special(tmp_path: Path, kind: str) -> Path:
    if kind == "/dev/zero":
        return Path("/dev/zero")
    path = tmp_path / kind.replace(" ", "-")
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    return path


# Every subcommand that reads one file, with that file as FILE and outputs under OUT.
FILE_COMMANDS = {
    "ingest": ["ingest", "FILE", "--out", "OUT"],
    "stalls": ["stalls", "FILE"],
    "fit": ["fit", "FILE"],
    "vmstat": ["vmstat", "FILE"],
    "compare": ["compare", "FILE", "--json"],
    "model shrinker": ["model", "shrinker", "FILE"],
    "sweep": ["sweep", "throttle", "--grid", "FILE", "--out", "OUT"],
    "notebook": ["notebook", "FILE", "--out", "OUT"],
    "sweep-notebook": ["sweep-notebook", "NOTEBOOK", "--grid", "FILE", "--out", "OUT"],
}
# Every subcommand that reads a run (or capture) directory, given as RUN.
DIR_COMMANDS = {
    "compare-vmstat": ["compare-vmstat", "RUN"],
    "compare": ["compare", "RUN", "RUN"],
    "model throttle": ["model", "throttle", "RUN"],
    "report": ["report", "RUN", "--out", "OUT"],
    "paper": ["paper", "RUN", "RUN", "--out", "OUT"],
    "stalls": ["stalls", "RUN"],
    "vmstat": ["vmstat", "RUN"],
}


def _tree_hash(paths: list[Path]) -> dict[str, str]:
    """SHA-256 of every regular file at or below ``paths`` (FIFOs and devices skipped)."""
    out = {}
    for root in paths:
        files = [root] if not root.is_dir() else sorted(root.rglob("*"))
        for f in files:
            if f.is_file() and not f.is_symlink() and str(f).startswith(str(root)):
                out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def refused(
    capsys, tmp_path: Path, template: list[str], values: dict[str, Path], named: Path
) -> str:
    """Run ``mmlab`` with ``template``'s placeholders filled in and check the contract of a
    refusal; the one stderr line is returned for further checks."""
    out_path = tmp_path / "out"
    argv = [str(values.get(a, out_path if a == "OUT" else a)) for a in template]
    inputs = [p for p in values.values() if p.exists() and p != Path("/dev/zero")]
    before = _tree_hash(inputs)
    rc = cli.main(argv)
    stdout, stderr = capsys.readouterr()
    # A long command's progress lines (issue 29 item 24) may come before the refusal.
    stderr = "".join(ln for ln in stderr.splitlines(keepends=True) if not PROGRESS.match(ln))
    assert rc == 2, (argv, stdout[-300:], stderr[-300:])
    assert stdout == ""
    assert "Traceback" not in stderr
    assert stderr.count("\n") == 1, stderr
    command = template[0]
    assert stderr.startswith(f"mmlab {command}: "), stderr
    assert str(named) in stderr, stderr
    if command != "ingest":  # ingest's OUT is a cache, keyed on content (not an output)
        assert not out_path.exists(), "partial output left behind"
    # Nor a cache entry for the input it refused (issue 29 item 22): ./build/ingest of
    # stalls, fit, report, ... and ingest's own OUT.
    cache = out_path if command == "ingest" else Path("build")
    assert not (cache.exists() and list(cache.rglob("*"))), (
        f"cache left: {list(cache.rglob('*'))[:3]}"
    )
    assert not list(tmp_path.glob(".out.*")), "staging folder left behind"
    assert _tree_hash(inputs) == before, "an input changed"
    return stderr


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)  # stalls and fit cache under ./build/ingest
    notebook = tmp_path / "nb.py"
    notebook.write_text("# %% tags=['parameters']\nx = 1\n\n# %%\nprint(x)\n")
    return tmp_path


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize("kind", NOT_FILES)
def test_a_path_that_is_not_a_regular_file(capsys, workspace, command, kind):
    path = _special(workspace, kind)
    values = {"FILE": path, "NOTEBOOK": workspace / "nb.py"}
    err = refused(capsys, workspace, FILE_COMMANDS[command], values, path)
    if kind == "missing":
        assert "no such file" in err.lower()


@pytest.mark.parametrize("command", FILE_COMMANDS)
@pytest.mark.parametrize("damage", BAD_FILES)
def test_a_damaged_file(capsys, workspace, excerpt, command, damage):
    path = workspace / f"input-{damage.replace(' ', '-')}"
    path.write_bytes(BAD_FILES[damage](excerpt))
    values = {"FILE": path, "NOTEBOOK": workspace / "nb.py"}
    err = refused(capsys, workspace, FILE_COMMANDS[command], values, path)
    if damage.startswith("truncated") and command in {"ingest", "stalls", "fit"}:
        assert "byte offset" in err


@pytest.mark.parametrize("command", DIR_COMMANDS)
@pytest.mark.parametrize("kind", [*NOT_FILES, "file"])
def test_a_run_that_is_not_a_directory_of_runs(capsys, workspace, excerpt, command, kind):
    if kind == "file" and command in {"stalls", "vmstat"}:
        pytest.skip("a file is these commands' other input")
    if kind == "file":
        path = workspace / "trace.txt"
        path.write_bytes(excerpt)
    elif kind == "directory":
        path = workspace / "empty-run"
        path.mkdir()
    else:
        path = _special(workspace, kind)
    refused(capsys, workspace, DIR_COMMANDS[command], {"RUN": path}, path)


@pytest.fixture
def run_tree(workspace) -> Path:
    """One mmtests run (``dirty5``) with one real iteration, copied."""
    run = workspace / "run" / "dirty5"
    shutil.copytree(ITER, run / "iter-0")
    return run


@pytest.mark.parametrize("command", ["stalls", "report"])
def test_a_truncated_trace_inside_a_run(capsys, run_tree, excerpt, command):
    trace = run_tree / "iter-0" / "ftrace-stutterp.zst"
    trace.write_bytes(BAD_FILES["truncated zst"](excerpt))
    template = DIR_COMMANDS[command]
    err = refused(capsys, run_tree.parents[1], template, {"RUN": run_tree}, trace)
    assert "byte offset" in err


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (b"nr_free_pages abc\npgscan_kswapd 10\n", "nr_free_pages"),
        (b"nr_free_pages 5\npgscan_kswapd -10\n", "pgscan_kswapd"),
    ],
)
def test_vmstat_counters_that_are_not_counts(capsys, workspace, text, reason):
    before, after = workspace / "before", workspace / "after"
    before.write_bytes(b"nr_free_pages 5\npgscan_kswapd 10\n")
    after.write_bytes(text)
    template = ["vmstat", "BEFORE", "AFTER"]
    err = refused(capsys, workspace, template, {"BEFORE": before, "AFTER": after}, after)
    assert reason in err


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (b"kernel,row,run,value\na,r,1,1\n", None, "missing column"),
        (b"kernel,row,run,value,unit\na,r,1,1,ms\na,r,2,x,ms\nb,r,1,2,ms\n", 3, "not a number"),
        (b"kernel,row,run,value,unit\na,r,1,1,ms\n" + b"\xff\xfe,r,1,2,ms\n", 3, "UTF-8"),
        # Issue 29 item 7: one (kernel, row) whose samples mix us and ms.
        (b"kernel,row,run,value,unit\na,r,1,1,us\nb,r,1,2,us\na,r,2,2000,ms\n", 4, "units"),
    ],
)
def test_compare_csv_that_cannot_be_compared(capsys, workspace, text, line, reason):
    table = workspace / "table.csv"
    table.write_bytes(text)
    err = refused(capsys, workspace, ["compare", "TABLE"], {"TABLE": table}, table)
    assert reason in err
    if line is not None:
        assert f"{table}:{line}" in err


def test_compare_csv_with_one_run_per_kernel_says_so(capsys, workspace):
    table = workspace / "table.csv"
    table.write_bytes(b"kernel,row,run,value,unit\na,r,1,1,ms\nb,r,1,2,ms\n")
    assert cli.main(["compare", str(table)]) == 0
    assert "one run per kernel" in capsys.readouterr().out


def test_one_corrupted_line_mid_trace_is_named(capsys, workspace, excerpt):
    trace = workspace / "trace.txt"
    trace.write_bytes(_corrupt_line(excerpt, b"\xff\x00garbage"))
    assert cli.main(["ingest", str(trace), "--out", str(workspace / "cache")]) == 0
    out = capsys.readouterr().out
    line = excerpt.count(b"\n") // 2 + 1
    assert "1 unparsed lines" in out and f"lines {line}" in out


def test_a_50_megabyte_line(capsys, workspace, excerpt):
    # One 50 MB line (no newline inside) between two halves of a real trace: read in
    # bounded memory, counted as one unparsed line, the events around it kept.
    trace = workspace / "trace.txt"
    half = excerpt.rfind(b"\n", 0, len(excerpt) // 2) + 1
    trace.write_bytes(excerpt[:half] + b"x" * (50 << 20) + b"\n" + excerpt[half:])
    assert cli.main(["ingest", str(trace), "--out", str(workspace / "cache")]) == 0
    assert "1 unparsed lines" in capsys.readouterr().out
    grid = workspace / "grid.yaml"
    grid.write_bytes(b"tau_us: [" + b"1" * (50 << 20) + b"]\n")
    err = refused(capsys, workspace, ["sweep", "throttle", "--grid", "G"], {"G": grid}, grid)
    assert "larger than" in err


def test_swapped_arguments(capsys, workspace):
    # The grid given as the model and the model as the grid: the grid's path is named.
    grid = workspace / "grid.yaml"
    grid.write_text("tau_us: [1000]\n")
    template = ["sweep", "GRID", "--grid", "throttle", "--out", "OUT"]
    assert "unknown sweep model" in refused(capsys, workspace, template, {"GRID": grid}, grid)
    # A trace where a notebook belongs, and the notebook where its grid belongs.
    trace = workspace / "trace.txt"
    trace.write_text("not a notebook\n")
    notebook = workspace / "nb.py"
    template = ["sweep-notebook", "TRACE", "--grid", "NB", "--out", "OUT"]
    refused(capsys, workspace, template, {"TRACE": trace, "NB": notebook}, notebook)


@pytest.mark.parametrize(
    ("side", "data", "command", "where"),
    [
        ("mmlab.json", b'{"config": \n', "report", ":2: not JSON"),
        ("mmlab.json", b"[1, 2]\n", "report", ": not a JSON object"),
        ("ftrace-stutterp.start", b"\x00\x01binary", "stalls", ":1 (byte offset 0)"),
        ("kernel.version", b"Linux version \xff\xfe", "model shrinker", ":1 (byte offset"),
    ],
)
def test_a_damaged_side_file_inside_a_run(capsys, run_tree, side, data, command, where):
    # The files beside a trace (capture metadata, start time, kernel version) are read
    # with the same checks as the trace itself.
    path = run_tree / "iter-0" / side
    path.write_bytes(data)
    template = {
        "report": ["report", "RUN", "--out", "OUT"],
        "stalls": ["stalls", "ITER"],
        "model shrinker": ["model", "shrinker", "ITER"],
    }[command]
    values = {"RUN": run_tree, "ITER": run_tree / "iter-0"}
    err = refused(capsys, run_tree.parents[1], template, values, path)
    assert f"{path}{where}" in err


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "missing", "random parquet"])
def test_a_bad_path_inside_a_sweep_grid(capsys, workspace, kind):
    if kind == "random parquet":
        path = workspace / "calls.parquet"
        path.write_bytes(b"PAR1" + random.Random(3).randbytes(1000))
    else:
        path = _special(workspace, kind)
    grid = workspace / "grid.yaml"
    grid.write_text(f"trace: [{path}]\n")
    template = ["sweep", "shrinker", "--grid", "GRID", "--out", "OUT"]
    err = refused(capsys, workspace, template, {"GRID": grid, "PATH": path}, grid)
    assert str(path) in err


@pytest.mark.parametrize("command", ["stalls", "report", "model throttle"])
def test_a_fifo_in_place_of_a_runs_trace_is_named_not_skipped(capsys, run_tree, command):
    trace = run_tree / "iter-0" / "ftrace-stutterp.zst"
    trace.unlink()
    os.mkfifo(trace)
    err = refused(capsys, run_tree.parents[1], DIR_COMMANDS[command], {"RUN": run_tree}, trace)
    assert "FIFO" in err


# Issue 29 item 8: one rule for a run's iterations in every command that reads a run.
RUN_READERS = ("stalls", "fit", "compare-vmstat", "vmstat", "model throttle", "report")


def _run_command(command: str) -> list[str]:
    return DIR_COMMANDS.get(command, [*command.split(), "RUN"])


@pytest.mark.parametrize("command", RUN_READERS)
def test_an_empty_iteration_is_refused_by_every_command(capsys, run_tree, command):
    empty = run_tree / "iter-1"
    empty.mkdir()
    err = refused(capsys, run_tree.parents[1], _run_command(command), {"RUN": run_tree}, empty)
    assert "empty iteration directory" in err


@pytest.mark.parametrize("command", RUN_READERS)
def test_a_truncated_mmlab_json_is_refused_by_every_command(capsys, run_tree, command):
    meta = run_tree / "iter-0" / "mmlab.json"
    meta.write_bytes(meta.read_bytes()[:200])
    err = refused(capsys, run_tree.parents[1], _run_command(command), {"RUN": run_tree}, meta)
    assert f"{meta}:" in err and "not JSON" in err


@pytest.mark.parametrize("command", ["stalls", "fit"])
def test_an_interrupted_iteration_is_left_out_not_read(capsys, run_tree, excerpt, command):
    # iter-1: a copy cut short, its trace truncated mid-stream: reading it would die.
    cut = run_tree / "iter-1"
    shutil.copytree(run_tree / "iter-0", cut)
    (cut / INCOMPLETE).write_text("cut\n")
    (cut / "ftrace-stutterp.zst").write_bytes(BAD_FILES["truncated zst"](excerpt))
    fast = ["--bootstrap", "0"] if command == "fit" else []
    assert cli.main([command, str(run_tree), "--json", *fast]) == 0
    out, err = capsys.readouterr()
    assert f"left out {cut}" in err
    sources = {r["source"] for r in json.loads(out)}
    assert sources == {str(run_tree / "iter-0" / "ftrace-stutterp.zst")}
    # The cut iteration's trace named alone is refused the same way, not read.
    assert cli.main([command, str(cut / "ftrace-stutterp.zst")]) == 2
    assert "incomplete" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["compare-vmstat", "vmstat", "report"])
def test_an_iteration_with_swapped_snapshots_is_refused(capsys, run_tree, command):
    """Issue 29 item 2: one iteration's tests-sysstate with its /proc/vmstat blocks swapped
    was left out of the means while the table still said "Iterations 3" (changes of up to
    14 % between byte-identical data). Refused, naming the file."""
    shutil.copytree(run_tree / "iter-0", run_tree / "iter-1")
    sysstate = run_tree / "iter-1" / "tests-sysstate"
    text = sysstate.read_text()
    start, end = "file start :: /proc/vmstat", "file end :: /proc/vmstat"
    sysstate.write_text(text.replace(start, "@").replace(end, start).replace("@", end))
    err = refused(capsys, run_tree.parents[1], _run_command(command), {"RUN": run_tree}, sysstate)
    assert "went down since 'file start :: /proc/vmstat'" in err


@pytest.mark.parametrize("value", ["inf", "nan", "-5", "0"])
@pytest.mark.parametrize("command", ["vmstat", "compare-vmstat"])
def test_an_elapsed_time_that_is_not_a_duration(capsys, run_tree, command, value):
    """Issue 29 item 23: ``--elapsed inf|nan|-5`` were accepted (velocity 0, NaN, < 0)."""
    template = [command, "RUN", "--elapsed", value]
    err = refused(capsys, run_tree.parents[1], template, {"RUN": run_tree}, Path("--elapsed"))
    assert "not a positive, finite number of seconds" in err


# Issue 29 item 20: tracebacks on a legal file name, a renamed field, a value past 64 bits.
@pytest.mark.parametrize("command", ["ingest", "stalls", "fit"])
def test_a_file_name_that_is_not_utf8(monkeypatch, workspace, excerpt, command):
    path = workspace / os.fsdecode(b"trace-\xff\xfe.txt")  # legal on Linux
    path.write_bytes(excerpt)
    argv = {
        "ingest": ["ingest", str(path), "--out", str(workspace / "cache")],
        "stalls": ["stalls", str(path)],
        "fit": ["fit", str(path), "--bootstrap", "0"],
    }[command]
    # The name goes out as its own bytes (as ls prints it): read them, not decoded text
    # (pytest's capture, and xdist's report of it, would choke on them).
    raw, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="utf-8"))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding="utf-8"))
    assert cli.main(argv) == 0
    sys.stdout.flush()
    sys.stderr.flush()
    assert b"trace-\xff\xfe.txt" in raw.getvalue()
    assert b"Traceback" not in err.getvalue()


def _renamed(excerpt: bytes) -> tuple[bytes, int]:
    """The excerpt with mm_vmscan_throttled's ``usect_delayed`` printed as ``wait_usec``
    (not the struct's own ``usec_delayed``: that is trace-cmd -R's raw name, which is read),
    and the line number of the first such line (by plain search)."""
    lines = excerpt.split(b"\n")
    first = next(i for i, ln in enumerate(lines, 1) if b"mm_vmscan_throttled:" in ln)
    return excerpt.replace(b" usect_delayed=", b" wait_usec="), first


@pytest.mark.parametrize("command", ["stalls", "fit", "report"])
def test_a_renamed_trace_field_is_named(capsys, run_tree, excerpt, command):
    """A kernel that printed another name (a rename): ``stalls`` and ``report`` died in a
    renderer, and ``fit`` said "no throttle delays" beside 38 throttle events read."""
    text, line = _renamed(excerpt)
    trace = run_tree / "iter-0" / "ftrace-stutterp.zst"
    trace.write_bytes(zstandard.ZstdCompressor().compress(text))
    template = DIR_COMMANDS.get(command, [command, "RUN"])
    err = refused(capsys, run_tree.parents[1], template, {"RUN": run_tree}, trace)
    assert f"{trace}:{line}: mm_vmscan_throttled without its usect_delayed field" in err
    assert "wait_usec instead" in err


def test_a_vmstat_counter_beyond_64_bits(capsys, workspace):
    before, after = workspace / "before", workspace / "after"
    before.write_bytes(b"nr_free_pages 5\npgscan_kswapd 10\n")
    after.write_bytes(b"nr_free_pages 5\npgscan_kswapd 99999999999999999999999\n")
    template = ["vmstat", "BEFORE", "AFTER"]
    err = refused(capsys, workspace, template, {"BEFORE": before, "AFTER": after}, after)
    assert f"{after}:2: pgscan_kswapd 99999999999999999999999 is beyond 64 bits" in err


def test_a_latency_count_beyond_64_bits(capsys, run_tree):
    other = run_tree.parent / "other"
    shutil.copytree(run_tree, other)
    log = other / "iter-0" / "stutterp" / "logs" / "mmap-latency-4.log"
    log.write_text("3 5000000\n99999999999999999999999 6000000\n")  # mmtests' format
    template = ["compare", "RUN", "OTHER"]
    err = refused(capsys, run_tree.parents[1], template, {"RUN": run_tree, "OTHER": other}, log)
    assert f"{log}:2: count 99999999999999999999999 is beyond" in err


@pytest.mark.parametrize("command", FILE_COMMANDS)
def test_ten_gigabytes_of_nul_bytes(capsys, workspace, command):
    """Issue 29 item 21: a disk image or core file given by mistake was read on (memory
    grew with it: OOM-killed in a 1.5 GB cgroup). A sparse 10 GB file of NUL bytes (no
    disk used) is refused from its first KiB, well within the alarm."""
    raw = workspace / "disk.raw"
    with raw.open("wb") as f:
        f.truncate(10 << 30)
    before = raw.stat()
    path = workspace / "disk.img"  # a symlink: the matrix's SHA-256 of inputs skips it
    path.symlink_to(raw)
    values = {"FILE": path, "NOTEBOOK": workspace / "nb.py"}
    err = refused(capsys, workspace, FILE_COMMANDS[command], values, path)
    assert f"{path}:1 (byte offset 0): binary content (NUL byte)" in err or "larger than" in err
    after = raw.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_a_line_without_end_is_bounded(capsys, workspace, excerpt, monkeypatch):
    # The line bound, scaled down: 2 MiB without a newline where 1 MiB is the limit.
    from analysis.ingest import compressed

    monkeypatch.setattr(compressed, "MAX_LINE_BYTES", 1 << 20)
    path = workspace / "trace.txt"
    path.write_bytes(excerpt + b"x" * (2 << 20))
    err = refused(capsys, workspace, FILE_COMMANDS["stalls"], {"FILE": path}, path)
    assert "a line of more than 1,048,576 bytes" in err
