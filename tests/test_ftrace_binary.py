"""Binary traces (issue 16): a trace-cmd ``trace.dat`` is read through ``trace-cmd report``;
a ``perf.data`` is refused with the command that converts it.

Both files were recorded on this project's machine (kernel 6.18, memory cgroup with a
64 MiB limit; tests/data/README.md). Expected counts come from the text ``trace-cmd
report`` prints, counted here with a regular expression, not by the parser under test.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from analysis.errors import InputError
from analysis.ingest import ftrace
from analysis.ingest.ftrace import reader
from tests.conftest import REPO

TRACE_DAT = REPO / "tests/data/trace-cmd/trace.dat"
PERF_DATA = REPO / "tests/data/perf/perf.data"
needs_trace_cmd = pytest.mark.skipif(
    shutil.which("trace-cmd") is None, reason="trace-cmd is not installed"
)


def _report(*flags: str) -> str:
    return subprocess.run(
        ["trace-cmd", "report", *flags, "-i", str(TRACE_DAT)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@needs_trace_cmd
def test_trace_dat_is_read_through_trace_cmd_report(tmp_path) -> None:
    text = _report()
    expected = Counter(re.findall(r"\d+\.\d+: (\w+):", text))
    trace = ftrace.read(TRACE_DAT, cache_dir=tmp_path)
    acc = trace.accounting
    assert acc.events == dict(expected)
    assert acc.lines == len(text.splitlines()) == sum(expected.values()) + acc.header_lines
    assert acc.source == str(TRACE_DAT)
    isolate = trace.events("mm_vmscan_lru_isolate")
    assert isolate["instance"].unique().to_list() == ["mmlab_speed"]
    assert isolate["comm"].unique().to_list() == ["dd"]


@needs_trace_cmd
def test_report_l_text_gives_the_same_records(tmp_path) -> None:
    plain, _ = ftrace.parse_text(_report())
    latency, frames = ftrace.parse_text(_report("-l"))
    assert latency.events == plain.events and latency.unparsed == 0
    flags = frames["mm_vmscan_lru_isolate"]["irq_flags"]
    assert flags.null_count() == 0 and flags.str.len_chars().unique().to_list() == [5]


def test_trace_dat_without_trace_cmd_names_the_command(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(reader.shutil, "which", lambda name: None)
    with pytest.raises(InputError, match=r"trace-cmd report -i .*trace\.dat"):
        ftrace.read(TRACE_DAT, cache_dir=tmp_path)


def test_perf_data_names_perf_script(tmp_path) -> None:
    argv = [sys.executable, "-m", "analysis.cli", "ingest", str(PERF_DATA), "--json"]
    run = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.splitlines()) == 1
    assert f"perf script -i {PERF_DATA}" in run.stderr
