"""Binary traces (issue 16): a trace-cmd ``trace.dat`` is read through ``trace-cmd report``;
a ``perf.data`` is refused with the command that converts it.

Both files were recorded on this project's machine (kernel 6.18, memory cgroup with a
64 MiB limit; tests/data/README.md). Expected counts come from the text ``trace-cmd
report`` prints, counted here with a regular expression, not by the parser under test.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from analysis.cli import main
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


def _stalls_and_fit(path, capsys) -> tuple[list, str]:
    """``mmlab stalls --json`` and ``mmlab fit`` of ``path``, its name taken out."""
    assert main(["stalls", str(path), "--json"]) == 0
    stalls = json.loads(capsys.readouterr().out)
    assert main(["fit", str(path)]) == 0
    fit = capsys.readouterr().out.replace(path.name, "TRACE")
    for entry in stalls:
        entry["source"] = None
    return stalls, fit


@needs_trace_cmd
def test_raw_report_gives_the_default_text_results(tmp_path, monkeypatch, capsys) -> None:
    """Issue 30 item 4: `report -R` prints reason=1, reclaim_flags=10, nr_activate1=...,
    lru=2; mapped to their printed names, stalls and fit print what the default text gives."""
    monkeypatch.chdir(tmp_path)
    raw = tmp_path / "raw.txt"
    raw.write_text(_report("-R"))
    default = tmp_path / "default.txt"
    default.write_text(_report())
    assert "reason=1" in raw.read_text() and "nr_activate1=" in raw.read_text()
    raw_stalls, raw_fit = _stalls_and_fit(raw, capsys)
    default_stalls, default_fit = _stalls_and_fit(default, capsys)
    # The one difference: a gfp mask, which raw text prints as a number (its bits differ
    # between kernels) and the attribution labels as such; its stalls are the same.
    raw_gfp = [g.pop("gfp_flags") for s in raw_stalls for g in s["attribution"]["by_gfp"]]
    default_gfp = [g.pop("gfp_flags") for s in default_stalls for g in s["attribution"]["by_gfp"]]
    assert raw_gfp == ["0x100cca (raw mask: -R text names no flags)"]
    assert default_gfp == ["GFP_HIGHUSER_MOVABLE"]
    assert raw_stalls == default_stalls
    assert raw_fit == default_fit
    # Not trivially equal: the default text has throttle delays and activations to lose.
    assert "VMSCAN_THROTTLE_WRITEBACK" in default_fit
    assert '"activated_pages": 0' not in json.dumps(default_stalls)


@needs_trace_cmd
def test_ts_diff_column_is_dropped(tmp_path) -> None:
    plain_acc, plain = ftrace.parse_text(_report())
    diff_acc, frames = ftrace.parse_text(_report("--ts-diff"))
    assert diff_acc.unparsed == 0 and diff_acc.events == plain_acc.events
    for name, frame in plain.items():
        assert frames[name].equals(frame), name


def test_raw_names_are_decoded_row_by_row() -> None:
    """Hand-decoded from include/trace/events/vmscan.h: reason 1<<2 is NOPROGRESS,
    reclaim_flags 0x09 ANON|ASYNC, lru 3 active_file; a printed line beside them is kept."""
    text = (
        "kswapd0-49 [001] 10.000001: mm_vmscan_throttled:  nid=0 usec_timeout=4000 "
        "usec_delayed=4000 reason=4\n"
        "kswapd0-49 [001] 10.000002: mm_vmscan_throttled: nid=0 usec_timeout=100000 "
        "usect_delayed=8000 reason=VMSCAN_THROTTLE_WRITEBACK\n"
        "kswapd0-49 [001] 10.000003: mm_vmscan_lru_shrink_inactive:  nid=0 nr_scanned=32 "
        "nr_reclaimed=0 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 "
        "nr_activate0=7 nr_activate1=0 nr_ref_keep=0 nr_unmap_fail=0 priority=12 "
        "reclaim_flags=9\n"
        "kswapd0-49 [001] 10.000004: mm_vmscan_lru_isolate:  highest_zoneidx=2 order=0 "
        "nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 lru=3\n"
        "kswapd0-49 [001] 10.000005: mm_compaction_begin:  zone_start=0x1000 "
        "migrate_pfn=0x1000 free_pfn=0x2000 zone_end=0x3000 sync=0\n"
    )
    acc, frames = ftrace.parse_text(text)
    assert acc.unparsed == 0
    throttled = frames["mm_vmscan_throttled"]
    assert throttled["reason"].to_list() == [
        "VMSCAN_THROTTLE_NOPROGRESS",
        "VMSCAN_THROTTLE_WRITEBACK",
    ]
    assert throttled["usect_delayed"].to_list() == [4000, 8000]
    assert "usec_delayed" not in throttled.columns
    inactive = frames["mm_vmscan_lru_shrink_inactive"].row(0, named=True)
    assert inactive["flags"] == ["RECLAIM_WB_ANON", "RECLAIM_WB_ASYNC"]
    assert (inactive["nr_activate_anon"], inactive["nr_activate_file"]) == (7, 0)
    isolate = frames["mm_vmscan_lru_isolate"].row(0, named=True)
    assert (isolate["lru"], isolate["classzone"]) == ("active_file", 2)
    assert frames["mm_compaction_begin"]["mode"].to_list() == ["async"]


def test_raw_compaction_status_is_refused(tmp_path) -> None:
    """enum compact_result and zone indices differ between kernels: refused, naming the line."""
    path = tmp_path / "raw.txt"
    path.write_text(
        "kcompactd0-40 [000] 5.000001: mm_compaction_end:  zone_start=0x1000 "
        "migrate_pfn=0x1000 free_pfn=0x2000 zone_end=0x3000 sync=0 status=3\n"
    )
    with pytest.raises(InputError, match=r"raw\.txt:1: .*report -R.*status.*without -R"):
        ftrace.read(path, cache_dir=tmp_path / "cache")


def test_perf_script_without_cpu_column() -> None:
    """`perf script` of a per-thread record (no sample cpu) and of the default fields: the
    same 38 events of tests/data/perf/perf.data, cpu null in the first."""
    plain_acc, plain = ftrace.parse_text((PERF_DATA.parent / "perf-script.txt").read_bytes())
    acc, frames = ftrace.parse_text((PERF_DATA.parent / "perf-script-nocpu.txt").read_bytes())
    assert acc.unparsed == 0 and acc.events == plain_acc.events
    assert sum(acc.events.values()) == 38
    for name, frame in plain.items():
        assert frames[name]["cpu"].null_count() == frame.height
        assert frames[name].drop("cpu").equals(frame.drop("cpu")), name
