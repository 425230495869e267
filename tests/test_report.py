"""The mailing-list report: every run and iteration, cover-letter order, 80 columns, no
ANSI; throttling per run checked against the raw trace text; the text fitter."""

from __future__ import annotations

import json
import re
import shutil
import statistics

import polars as pl
import pytest

from analysis.cli import main
from analysis.metrics.throttle_runs import run_throttle_table
from analysis.report.document import build_report, vmstat_section
from analysis.report.text import fit, shorten_middle
from analysis.report.units import plus_minus
from analysis.study.runs import study_runs
from analysis.study.study import Study
from tests.conftest import CAPTURES, DATA, share_ingest_cache, throttled_lines
from tests.test_golden import GOLDEN, RUNS, assert_json_matches

ORDER = [
    "== Summary ==",
    "== Workload latency ==",
    "== Reclaim Ops from /proc/vmstat ==",
    "== Reclaim throttling per reason ==",
    "== Reclaim stalls from ftrace ==",
]


# The bundled A/B pair `make` reports on (Makefile AB_RUNS).
AB_RUNS = (DATA / "stutterp-aa2", DATA / "stutterp-ab-dirty5")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> str:
    """``mmlab report CAPTURES --detail`` (every bundled capture), built once for these tests."""
    out = tmp_path_factory.mktemp("report") / "report.txt"
    assert main(["report", *map(str, CAPTURES), "--detail", "--out", str(out)]) == 0
    return out.read_text()


@pytest.fixture(scope="module")
def ab_report() -> str:
    """``build/report.txt``: the bundled A/B pair without ``--detail``."""
    return build_report(AB_RUNS)


def test_report_covers_every_run_and_iteration(report):
    runs = study_runs(CAPTURES)
    assert "mmtests-ci" not in report
    positions = [report.index(title) for title in ORDER]
    assert positions == sorted(positions)
    # --detail restores the full provenance and every traced iteration.
    assert report.index("== Captures ==") < report.index("== Workload latency ==")
    for run in runs:
        for it in run.iterations:
            assert f"-- {run.name} iter-{it.index} --" in report
    assert [line for line in report.splitlines() if len(line) > 80] == []
    assert "\x1b" not in report


def test_ab_report_is_short_and_its_summary_says_what_changed_and_was_found(ab_report):
    """Issue 20: build/report.txt was 1,426 lines, 88 % per-iteration dumps, and never
    showed the one setting that differed (vm.dirty_ratio 20 vs 5, the runs' mmlab.json)."""
    lines = ab_report.splitlines()
    assert len(lines) <= 200
    assert max(len(line) for line in lines) <= 80
    head = "\n".join(lines[:25])
    dirty = next(line for line in lines[:25] if line.strip().startswith("vm.dirty_ratio"))
    assert dirty.split() == ["vm.dirty_ratio", "20", "5"]
    # The verdict rows are compare_table's: the latency section's paragraph says the same.
    for row in ("mmap-8", "elapsed"):
        verdict = next(line for line in lines[:25] if line.strip().startswith(row + " "))
        assert verdict.rstrip().endswith("no change shown")
    # One q: the summary's is the section's.
    q = next(line for line in lines[:25] if line.strip().startswith("mmap-8 ")).split()[-4]
    assert f"{q} no change shown" in head and "HD-50 change" in ab_report
    # ... and a null carries the change it could have seen (issue 34).
    assert f"(q {q} ≥ 0.05; these runs detect" in " ".join(ab_report.split())
    # One sign (issue 29, item 25): the summary's change and the section's paragraph print
    # the same text, in mmtests' sign (positive = better), as the summary's header says.
    assert "change: positive = better" in " ".join(head.split())
    summary = re.search(r"us +\S+ +\S+ +(\S+% \[\S+, \S+\])", head)
    assert summary and f"HD-50 change {summary[1]}" in " ".join(ab_report.split())
    # Per-iteration detail only with --detail; one stall table per run instead.
    assert "iter-0 --" not in ab_report and "Every traced iteration" not in ab_report
    stalls = ab_report[ab_report.index("== Reclaim stalls") :]
    assert stalls.count("stalls/iter") == 2
    # No row of zeros or dashes; the omitted ones named once below the Ops table.
    ops = ab_report[ab_report.index("== Reclaim Ops") : ab_report.index("== Reclaim throttling")]
    assert "Kswapd efficiency %" not in ops.split("Omitted")[0]
    assert "Omitted, no value in any iteration (nothing scanned): Kswapd efficiency %" in ops
    assert "lower" in ops and "higher" in ops  # direction of better per row


def test_setting_differences_read_mmlab_json_and_kconfig(tmp_path):
    """Every sysctl in effect, capture option and kconfig option that differs is found;
    identical ones are not (values set by hand in a copy of one bundled iteration)."""
    from analysis.ingest.mmtests import find_runs
    from analysis.study.provenance import setting_differences

    base = tmp_path / "a" / "r1"
    shutil.copytree(AB_RUNS[0] / "dirty20-a2" / "iter-0", base / "iter-0")
    new = tmp_path / "b" / "r2" / "iter-0"
    shutil.copytree(base / "iter-0", new)
    meta = json.loads((new / "mmlab.json").read_text())
    meta["sysctl_changes"]["vm.swappiness"] = {"from": "60", "to": "10"}
    meta["config"]["limit_mb"] = 512
    (new / "mmlab.json").write_text(json.dumps(meta))
    (kconfig,) = new.glob("kconfig-*")
    kconfig.unlink()
    (new / "kconfig-x.txt").write_text("CONFIG_HZ=250\nCONFIG_LRU_GEN=y\n")
    runs = (*find_runs(tmp_path / "a"), *find_runs(tmp_path / "b"))
    differ = dict(setting_differences(runs))
    assert differ["vm.swappiness"] == ("60", "10")
    assert differ["config.limit_mb"] == ("256", "512")
    assert differ["CONFIG_LRU_GEN"] == ("n", "y")  # "# CONFIG_LRU_GEN is not set" in A
    assert "vm.dirty_ratio" not in differ and "CONFIG_HZ" not in differ


def test_report_provenance(report):
    names = [run.name for run in study_runs(CAPTURES)]
    assert report.startswith(f"mmlab report: {' vs '.join(names)}\n")
    # The bundled captures' mmlab.json: kernel 6.18.44, CONFIG_HZ 250, cgroup v1 at 256 MiB.
    assert "kernel 6.18.44-fc-v669" in report[: report.index("== Workload")]
    assert "  kernel     6.18.44-fc-v669" in report
    assert "  CONFIG_HZ  250" in report
    assert "  memcg      v1, limit 256 MiB" in report
    assert "No lost trace events." in report[: report.index("== Workload")]
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
    share_ingest_cache(tmp_path)
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
    runs = study_runs([DATA / "stutterp-dirty5", DATA / "stutterp-dirty20"])
    text = vmstat_section(Study(runs))
    assert text.index("dirty5") < text.index("dirty20")


def test_throttle_section_matches_the_raw_trace_text(report):
    # Independent of the ingest: grep the decompressed trace text per iteration.
    (run,) = study_runs([DATA / "stutterp-dirty5"])
    counts, shares = [], []
    for it in run.iterations:
        lines = throttled_lines(it.path)
        counts.append(len(lines))
        hit = [x for x in lines if "usect_delayed=100000 " in x and "usec_timeout=100000" in x]
        shares.append(100 * len(hit) / len(lines))
    section = report[report.index("== Reclaim throttling") : report.index("== Throttle delay")]
    block = section[section.index("\ndirty5 (3 iterations") :]
    row = next(line for line in block.splitlines() if line.startswith("WRITEBACK"))
    # The numbers are grep's; their rounding (at the sd) is the report's formatter's.
    events = plus_minus(statistics.mean(counts), statistics.stdev(counts))
    timeout = plus_minus(statistics.mean(shares), statistics.stdev(shares))
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
    differ = report[report.index("== Runs differ") : report.index("== Captures")]
    assert "Intel(R) Xeon(R) Processor" in differ and "AMD EPYC" in differ
    assert "Runs differ" not in (GOLDEN / "report.txt").read_text()


def test_runs_from_different_machines_say_so_first(monkeypatch):
    """Issue 17: runs of 2 and 160 CPUs, 23.5 and 994.9 GiB were compared without a word.
    The values are the bundled trees' own: mmlab.json of the 6.18 capture, lscpu.txt and
    meminfo of the ppc64le mmtests tree."""
    from analysis.report import document
    from analysis.study.provenance import iteration_provenance, run_differences

    other = DATA / "mmtests-ci" / "work" / "log.ltccip8.2020-06-12_1807"
    runs = study_runs([DATA / "stutterp-dirty20", other])
    rows = [iteration_provenance(run, it) for run in runs for it in run.iterations]
    differ = dict(line.split(": ", 1) for line in run_differences(rows))
    assert set(differ) == {"machine", "memory", "CONFIG_HZ", "memcg", "tests"}
    assert "2 CPUs" in differ["machine"] and "160 CPUs" in differ["machine"]
    assert differ["memory"] == "dirty20 23.5 GiB; usemem-stress-numa-compact 994.9 GiB"
    # Same machine, same config two days apart: nothing to say.
    same = study_runs([DATA / "mmtests-ci" / "work" / "log.ltccip8.2020-06-14_0656", other])
    assert run_differences([iteration_provenance(r, it) for r in same for it in r.iterations]) == ()
    monkeypatch.setattr(document, "SECTIONS", ())
    text = document.build_report([DATA / "stutterp-dirty20", other])
    assert text.index("== Summary ==") < text.index("== Runs differ in more than the kernel ==")
    summary = text[: text.index("== Runs differ")]
    assert "  machine: dirty20 vm, AMD EPYC" in summary and "POWER8" in summary
    assert "WARNING: these runs were not captured alike" in text


def test_summary_verdicts_print_the_papers_numbers(ab_report):
    """Issue 20: the report and the paper must print identical numbers for one quantity.
    The paper's comparison macros of the same A/B pair (HD-50 row) against the report's
    verdict lines, digit for digit (the sign is each document's own)."""
    import re

    from analysis.report.paper import comparison

    runs = study_runs(AB_RUNS)
    values = comparison.comparison_values(Study(runs).latency)

    def plain(key: str) -> str:
        return re.sub(r"\\ensuremath|[${}]", "", values[key])

    # elapsed has one value per run: the paper decides it by its mean, another quantity.
    for row in ("mmap-8",):
        key = f"cmp {row} p50"
        line = next(x for x in ab_report.splitlines()[:25] if x.strip().startswith(row + " "))
        # The paper prints new/base − 1, the report mmtests' sign (a lower-is-better row:
        # negated, bounds swapped).
        neg = {"+": "-", "-": "+"}
        change, low, high = (
            neg[v[0]] + v[1:] for v in (plain(key + f" {k}") for k in ("change", "change low",
                                                                        "change high"))
        )  # fmt: skip
        change = f"{change}% [{high}, {low}]"
        assert line.split()[2:4] == [plain(key + " base"), plain(key + " new")], line
        assert change in line and line.split()[-4] == plain(key + " q"), line


def test_no_run_is_left_out_by_its_folders_name(tmp_path):
    """Issue 29 item 9: runs under folders named like the repository's fixtures
    (mmtests-ci, vm-6.12, ...) were dropped silently from ``report --data``: 3 of 6 runs
    kept. Six copies of one real iteration, one per folder name: six runs (the runs
    ``report``, ``paper`` and the notebooks take)."""
    names = ("mmtests-ci", "mmtests-ci-more", "mmtests-formats", "vm-6.12", "mine", "other")
    source = DATA / "stutterp-dirty5" / "dirty5" / "iter-0"
    for name in names:
        shutil.copytree(source, tmp_path / name / f"run-{name}" / "iter-0")
    runs = study_runs([tmp_path])
    assert sorted(run.name for run in runs) == sorted(f"run-{n}" for n in names)
