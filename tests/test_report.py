"""The mailing-list report: every run and iteration, cover-letter order, 80 columns, no
ANSI; throttling per run checked against the raw trace text; the text fitter."""

from __future__ import annotations

import json
import shutil
import statistics

import polars as pl
import pytest

from analysis.cli import main
from analysis.metrics.throttle_runs import run_throttle_table
from analysis.report.document import ReportData, capture_runs, vmstat_section
from analysis.report.text import fit, shorten_middle
from tests.conftest import DATA, throttled_lines
from tests.test_golden import GOLDEN, RUNS, assert_json_matches

ORDER = [
    "== Captures ==",
    "== Warnings ==",
    "== Workload latency ==",
    "== Reclaim Ops from /proc/vmstat ==",
    "== Reclaim throttling per reason ==",
    "== Reclaim stalls from ftrace ==",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> str:
    """``mmlab report --data data`` (every bundled run), built once for these tests."""
    out = tmp_path_factory.mktemp("report") / "report.txt"
    assert main(["report", "--data", str(DATA), "--out", str(out)]) == 0
    return out.read_text()


def test_report_covers_every_run_and_iteration(report):
    runs = capture_runs(DATA)
    assert "mmtests-ci" not in report
    positions = [report.index(title) for title in ORDER]
    assert positions == sorted(positions)
    for run in runs:
        for it in run.iterations:
            assert f"-- {run.name} iter-{it.index} --" in report
    assert [line for line in report.splitlines() if len(line) > 80] == []
    assert "\x1b" not in report


def test_report_provenance(report):
    names = [run.name for run in capture_runs(DATA)]
    assert report.startswith(f"mmlab report: {' vs '.join(names)}\n")
    # The bundled captures' mmlab.json: kernel 6.18.44, CONFIG_HZ 250, cgroup v1 at 256 MiB.
    assert "  kernel     6.18.44-fc-v669" in report
    assert "  CONFIG_HZ  250" in report
    assert "  memcg      v1, limit 256 MiB" in report
    assert "No lost trace events." in report
    # The latency section is mmlab compare's: the probe's mmap latency per worker count.
    latency = report[report.index("== Workload latency") : report.index("== Reclaim Ops")]
    assert f"Comparison of HD-50 (run-level estimate), base {names[0]}." in latency
    assert "mmap-4 (us; lower is better)" in latency


def test_report_json_agrees_with_the_commands_golden_json(tmp_path, monkeypatch, capsys):
    # The same runs as tests/golden: the report's JSON holds what compare-vmstat --json and
    # stalls --json print for them (their golden files), plus where each analysis belongs.
    (tmp_path / "data").mkdir()
    for run in RUNS:
        shutil.copytree(DATA / run, tmp_path / "data" / run)
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--data", "data", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["iterations"]) for r in report["runs"]] == [("dirty20", 3), ("dirty5", 3)]
    vmstat_golden = json.loads((GOLDEN / "compare-vmstat.json").read_text())
    assert_json_matches(report["vmstat"], vmstat_golden, "compare-vmstat.json")
    first = report["stalls"][0]
    assert (first.pop("run"), first.pop("iteration")) == ("dirty20", 0)
    stalls_golden = json.loads((GOLDEN / "stalls-iteration.json").read_text())
    assert_json_matches([first], stalls_golden, "stalls-iteration.json")
    assert len(report["stalls"]) == 6
    assert {p["config_hz"] for p in report["provenance"]} == {250}
    assert [(t["run"], t["iterations"]) for t in report["throttle"]] == [
        ("dirty20", 3),
        ("dirty5", 3),
    ]
    # One fitted group per run; its n is the throttle table's events of all iterations.
    fits = {f["run"]: f for f in report["throttle_fits"]}
    for t in report["throttle"]:
        assert fits[t["run"]]["n"] == round(t["events_mean"] * t["iterations"])
        assert fits[t["run"]]["iterations"]["p_timeout"]["sd"] is not None


def test_base_comes_first():
    # RUN arguments in the order given: dirty5 as base, its column first.
    runs = (*capture_runs(DATA / "stutterp-dirty5"), *capture_runs(DATA / "stutterp-dirty20"))
    text = vmstat_section(ReportData(runs))
    assert text.index("dirty5") < text.index("dirty20")


def test_throttle_section_matches_the_raw_trace_text(report):
    # Independent of the ingest: grep the decompressed trace text per iteration.
    (run,) = capture_runs(DATA / "stutterp-dirty5")
    counts, shares = [], []
    for it in run.iterations:
        lines = throttled_lines(it.path)
        counts.append(len(lines))
        hit = [x for x in lines if "usect_delayed=100000 " in x and "usec_timeout=100000" in x]
        shares.append(100 * len(hit) / len(lines))
    section = report[report.index("== Reclaim throttling") : report.index("== Throttle delay")]
    block = section[section.index("dirty5 (3 iterations") :]
    row = next(line for line in block.splitlines() if line.startswith("WRITEBACK"))
    events = f"{statistics.mean(counts):.0f} ± {statistics.stdev(counts):.0f}"
    timeout = f"{statistics.mean(shares):.1f} ± {statistics.stdev(shares):.1f}"
    assert events in row and timeout in row, row


def test_run_throttle_table_counts_absent_iterations_as_zero():
    def table(count: int, timeout_share: float) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "event": ["mm_vmscan_throttled"],
                "context": ["direct"],
                "reason": ["VMSCAN_THROTTLE_WRITEBACK"],
                "usec_timeout": [100000],
                "count": [count],
                "timeout_share": [timeout_share],
                "zero_share": [0.0],
                "mean_usec": [1000.0],
            }
        )

    empty = table(1, 0.0).clear()
    rows = run_throttle_table(
        [("a", 0, table(10, 0.5)), ("a", 1, table(20, 0.1)), ("a", 2, empty), ("b", 0, empty)]
    )
    (row,) = rows.to_dicts()
    # Events per iteration: (10 + 20 + 0) / 3 = 10, sd of (10, 20, 0) = 10;
    # the timeout share only over the two iterations that slept: (0.5 + 0.1) / 2.
    assert (row["run"], row["iterations"], row["with_events"]) == ("a", 3, 2)
    assert row["events_mean"] == pytest.approx(10.0)
    assert row["events_sd"] == pytest.approx(10.0)
    assert row["timeout_share_mean"] == pytest.approx(0.3)


def test_fit_wraps_shortens_and_strips_ansi():
    path = "data/" + "x" * 100 + "/ftrace.zst"
    text = fit(f"\x1b[1mtrace\x1b[0m {path} (trace, capture 33.529 s; no lost events)\n")
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0] == "trace"
    assert lines[1].startswith("    data/xxx") and lines[1].endswith("/ftrace.zst")
    assert "\x1b" not in text
    assert shorten_middle("abcdefghij", 7) == "ab...ij"


def test_report_on_missing_data_is_a_clear_error(tmp_path, capsys):
    assert main(["report", "--data", str(tmp_path), "--out", str(tmp_path / "r.txt")]) == 2
    assert "no mmtests run here" in capsys.readouterr().err
