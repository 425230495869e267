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


def test_the_bundled_runs_come_from_two_machines_and_the_report_says_so(report):
    """The A/B captures (stutterp-aa*, -ab-*) ran on an Intel VM, the dirty20/dirty5 pair
    on an AMD EPYC VM (their mmlab.json): comparing all of them says so first; the A/B
    pair the golden report compares ran on one machine and says nothing."""
    assert report.index("== Runs differ in more than the kernel ==") < report.index("== Captures")
    differ = report[: report.index("== Captures")]
    assert "Intel(R) Xeon(R) Processor" in differ and "AMD EPYC" in differ
    assert "Runs differ" not in (GOLDEN / "report.txt").read_text()


def test_runs_from_different_machines_say_so_first(monkeypatch):
    """Issue 17: runs of 2 and 160 CPUs, 23.5 and 994.9 GiB were compared without a word.
    The values are the bundled trees' own: mmlab.json of the 6.18 capture, lscpu.txt and
    meminfo of the ppc64le mmtests tree."""
    from analysis.report import document
    from analysis.report.provenance import iteration_provenance, run_differences

    other = DATA / "mmtests-ci" / "work" / "log.ltccip8.2020-06-12_1807"
    runs = document.report_runs([DATA / "stutterp-dirty20", other])
    rows = [iteration_provenance(run, it) for run in runs for it in run.iterations]
    differ = dict(line.split(": ", 1) for line in run_differences(rows))
    assert set(differ) == {"machine", "memory", "CONFIG_HZ", "memcg", "tests"}
    assert "2 CPUs" in differ["machine"] and "160 CPUs" in differ["machine"]
    assert differ["memory"] == "dirty20 23.5 GiB; usemem-stress-numa-compact 994.9 GiB"
    # Same machine, same config two days apart: nothing to say.
    same = document.report_runs(
        [DATA / "mmtests-ci" / "work" / "log.ltccip8.2020-06-14_0656", other]
    )
    assert run_differences([iteration_provenance(r, it) for r in same for it in r.iterations]) == ()
    monkeypatch.setattr(document, "SECTIONS", ())
    text = document.build_report([DATA / "stutterp-dirty20", other])
    assert text.index("== Runs differ in more than the kernel ==") < text.index("== Captures ==")
    assert "WARNING: these runs were not captured alike" in text
