"""Benchmark logs of real mmtests trees, read natively, against what mmtests' own Perl
extracts from the same files (tests/data/mmtests-perl, written by
tests/data-gen/mmtests-perl.sh with gormanm/mmtests b0b1d143 for the 2020 trees' modules
and 638401e0 for current parse-results). mmtests prints 2 decimals (4 for stutterp's
current parser), so values agree to half a unit of the last printed digit."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from analysis.cli import main
from analysis.errors import InputError
from analysis.ingest import benchmarks, mmtests, mmtests_logs

from .conftest import DATA

PERL = Path(__file__).parent / "data" / "mmtests-perl"
MORE = DATA / "mmtests-ci-more" / "work"
AA = ("log.ltccip8.2020-06-12_1807", "log.ltccip8.2020-06-14_0656")
BIG = "log.ltccip8.2020-06-03_1400"
FORMATS = DATA / "mmtests-formats" / "work" / "log"
HALF = 0.005 + 1e-9  # half the last digit mmtests prints, plus float noise


def perl_samples(name: str, columns: int = 4) -> dict[str, list[float]]:
    """Row -> printed sample values of an ``extract-mmtests.pl`` output file:
    ``<row> <iteration> <sample> <value>`` in fixed-width fields, where a row name as wide
    as its field runs into the iteration (``elapsed-110`` + ``0`` -> ``elapsed-1100``;
    these trees have only iteration 0). Single-value reports (``columns=3``) print no
    sample number."""
    rows: dict[str, list[float]] = defaultdict(list)
    for line in (PERL / f"{name}.txt").read_text().splitlines():
        fields = line.split()
        row = fields[0] if len(fields) == columns else fields[0].removesuffix("0")
        rows[row].append(float(fields[-1]))
    return dict(rows)


def mmlab_samples(read: mmtests_logs.LogRead) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = defaultdict(list)
    for row, value, _ in read.samples:
        rows[row].append(value)
    return dict(rows)


def assert_same_samples(ours: list[float], theirs: list[float], tolerance: float = HALF):
    assert len(ours) == len(theirs)
    for a, b in zip(sorted(ours), sorted(theirs), strict=True):
        assert abs(a - b) <= tolerance, (a, b)


def logs(run: str, config: str, bench: str) -> Path:
    return MORE / run / config / "iter-0" / bench / "logs"


@pytest.mark.parametrize("run", AA)
def test_thpscale_latency_samples_are_mmtests_without_its_fake_zeros(run):
    got = mmtests_logs.read_logs("thpscale", logs(run, "thpscale", "thpscale"))
    ours, theirs = mmlab_samples(got), perl_samples(f"{run}-thpscale")
    # mmtests' fake samples: a single 0 us in a fault-base/huge row with no such fault.
    fake = {r for r, v in theirs.items() if v == [0.0] and r.split("-")[1] in ("base", "huge")}
    assert fake == {"fault-huge-1"}  # one thread on this machine never got a huge page
    assert set(ours) - {r for r in ours if r.startswith("huge-")} == set(theirs) - fake
    for row in set(theirs) - fake:
        assert_same_samples(ours[row], theirs[row])
    assert len([r for r in theirs if r.startswith("fault-")]) == 27
    assert any("no huge fault: mmtests' fake 0 us sample left out" in n for n in got.notes)
    assert all(d.unit == "us" and not d.higher_is_better for r, _, d in got.samples if "fault" in r)


@pytest.mark.parametrize("run", [*AA, BIG])
def test_huge_page_percentages_are_mmtests_and_higher_is_better(run):
    got = mmtests_logs.read_logs("thpscale", logs(run, "thpscale", "thpscale"))
    huge = {r: v for r, v, _ in got.samples if r.startswith("huge-")}
    theirs = perl_samples(f"{run}-thpscalecounts", columns=3)
    assert set(huge) == set(theirs) and len(huge) == 9
    assert all(abs(huge[r] - theirs[r][0]) <= HALF for r in huge)
    assert all(d.unit == "%" and d.higher_is_better for r, _, d in got.samples if r in huge)


def test_the_large_thpscale_run_has_mmtests_counts_and_sums():
    """180,000 faults: mmtests' printed values summed per row by awk in data-gen."""
    ours = mmlab_samples(mmtests_logs.read_logs("thpscale", logs(BIG, "thpscale", "thpscale")))
    for line in (PERL / f"{BIG}-thpscale-sums.txt").read_text().splitlines():
        row, n, total = line.split()
        if int(n) == 1 and float(total) == 0 and row not in ours:
            continue  # mmtests' fake 0 sample
        assert len(ours[row]) == int(n)
        assert abs(sum(ours[row]) - float(total)) <= 0.006 + int(n) * HALF


@pytest.mark.parametrize("run", [*AA, BIG])
def test_pft_rates_and_times_are_mmtests_less_its_inf_lines(run):
    got = mmtests_logs.read_logs("pft", logs(run, "performance", "pft"))
    ours = mmlab_samples(got)
    theirs = perl_samples(f"{run}-pft") | perl_samples(f"{run}-pfttime")
    assert set(ours) == set(theirs)
    for row, values in theirs.items():
        # Rates print as e.g. 175704.03: 2 decimals of a value with 3 in pft's output.
        assert_same_samples(ours[row], values)
    units = {r.split("-")[0]: (d.unit, d.higher_is_better) for r, _, d in got.samples}
    assert units == {
        "faults/cpu": ("faults/s", True),
        "faults/sec": ("faults/s", True),
        "system": ("s", False),
        "elapsed": ("s", False),
    }


@pytest.mark.parametrize("run", AA)
def test_pft_says_which_lines_it_left_out(run):
    path = logs(run, "performance", "pft")
    got = mmtests_logs.read_logs("pft", path)
    inf_lines = sum(
        "inf" in line for p in path.glob("pft-*.log") for line in p.read_text().splitlines()
    )
    noted = sum(int(n.split(": ")[1].split()[0]) for n in got.notes if "not samples" in n)
    assert inf_lines > 0 and noted == inf_lines


@pytest.mark.parametrize("run", [*AA, BIG])
def test_usemem_gnu_time_rows_are_mmtests(run):
    path = DATA / "mmtests-ci" / "work" / run / "usemem-stress-numa-compact" / "iter-0"
    got = mmtests_logs.read_logs("usemem", path / "usemem" / "logs")
    ours, theirs = mmlab_samples(got), perl_samples(f"{run}-usemem")
    # The 2023 module printed syst and elsp only; current mmtests also prints user time.
    assert set(ours) - set(theirs) == {"user-1", "user-3", "user-4"} and not got.notes
    for row, values in theirs.items():
        assert_same_samples(ours[row], values)


def test_time_n_m_usemem_logs_give_user_syst_elsp_rows_as_current_mmtests():
    """Current mmtests names the rows User-N, System-N, Elapsed-N; mmlab keeps the
    names of older trees so the two compare."""
    path = FORMATS / "usemem-time-names" / "iter-0" / "usemem" / "logs"
    got = mmtests_logs.read_logs("usemem", path)
    ours, theirs = mmlab_samples(got), perl_samples("usemem-time-new")
    names = {"User": "user", "System": "syst", "Elapsed": "elsp"}
    renamed = {f"{names[r.split('-')[0]]}-{r.split('-')[1]}": v for r, v in theirs.items()}
    assert set(ours) == set(renamed) == {f"{k}-{t}" for k in names.values() for t in (1, 3, 4)}
    for row, values in renamed.items():
        assert_same_samples(ours[row], values)
    assert not got.notes


def test_mmtests_stutterp_log_gives_the_milliseconds_mmtests_reports():
    path = FORMATS / "stutterp-mmap-latency" / "iter-0" / "stutterp" / "logs"
    got = mmtests_logs.read_logs("stutterp", path)
    ours = mmlab_samples(got)
    old, new = perl_samples("stutterp-old"), perl_samples("stutterp-new")
    assert set(ours) == set(old) == set(new) == {"mmap-1", "mmap-4"}
    for row in ours:
        assert_same_samples(ours[row], old[row])  # ExtractStutterp.pm: ns / 1e6, in ms
        # Current parse-results prints $((ns/1000)) (whole us) under TIME_MSECONDS.
        assert sorted(int(v * 1000 + 1e-9) for v in ours[row]) == sorted(map(int, new[row]))
    assert {(d.unit, d.higher_is_better) for _, _, d in got.samples} == {("ms", False)}
    assert "'<count> <mean ns>'" in got.samples[0][2].source


def test_count_column_repeats_the_mean(tmp_path):
    (tmp_path / "mmap-latency-2.log").write_text("3 6580000\n1 5000000\n")
    log = mmtests_logs.stutterp_log(tmp_path / "mmap-latency-2.log")
    assert log.values == (6.58, 6.58, 6.58, 5.0) and log.unit == "ms"


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("# latency per mapping\n", "names no unit"),
        ("# latency; unit: fortnights\n", "unknown latency unit 'fortnights'"),
    ],
)
def test_a_probe_header_without_a_known_unit_is_an_error_not_a_guess(tmp_path, header, reason):
    log = tmp_path / "mmap-latency-4.log"
    log.write_text(header + "1795439413.5 514.7\n")
    with pytest.raises(InputError, match=reason):
        mmtests_logs.stutterp_log(log)


def test_thp_fault_without_any_fault_drops_mmtests_minus_one(tmp_path):
    (tmp_path / "threads-2.log").write_text("Running with 2 threads\n")
    got = mmtests_logs.thp_logs(tmp_path)
    assert got.samples == ()
    assert any("huge-2 of -1 left out" in n for n in got.notes)


def test_pagealloc_drops_two_warmup_lines_per_batch_as_mmtests(tmp_path):
    """pagealloc-micro.stp's printf; mmtests counts warm-up per batch size over orders."""
    lines = [f"order {o:2d} batch {b:6d} alloc {10 * i} free {i}" for o in (0, 1) for b in (1, 8)
             for i in range(1, 4)]  # fmt: skip
    (tmp_path / "pagealloc.log").write_text("\n".join(lines) + "\n")
    rows = mmlab_samples(mmtests_logs.pagealloc_logs(tmp_path))
    # batch 1: lines 1,2 (order 0) are warm-up; order 0 keeps i=3, order 1 keeps i=1..3.
    assert rows["alloc-odr0-1"] == [30.0] and rows["alloc-odr1-1"] == [10.0, 20.0, 30.0]
    assert rows["total-odr0-8"] == [33.0]


def test_hpagealloc_reads_the_fifth_column_in_ms(tmp_path):
    """timed-hpagealloc.pl: printf "%-4d %-4d %-d %12.4f %12.4f\\n"."""
    (tmp_path / "hpagealloc.log").write_text("2    2    2       4.0000       2.0000\n")
    got = mmtests_logs.hpagealloc_logs(tmp_path)
    assert [(r, v, d.unit) for r, v, d in got.samples] == [("Latency", 2.0, "ms")]


def test_unknown_files_and_benchmarks_each_give_one_warning(tmp_path):
    it = tmp_path / "run" / "iter-0"
    (it / "thpscale" / "logs").mkdir(parents=True)
    (it / "thpscale" / "logs" / "threads-1.log").write_text("fault 0 huge 100 0 0\n")
    (it / "thpscale" / "logs" / "surprise.csv").write_text("x\n")
    (it / "thpscale" / "logs" / "threads-1.time").write_text("0.1user\n")
    (it / "fsmark" / "logs").mkdir(parents=True)
    (it / "fsmark" / "logs" / "fsmark.log").write_text("x\n")
    loaded = benchmarks.load_runs([tmp_path / "run"])
    warnings = [s for s in loaded.skipped if "surprise.csv" in s or "fsmark" in s]
    assert len(warnings) == 2
    assert "thpscale: 1 file(s) not understood (surprise.csv)" in warnings[1]
    assert "fsmark: no native reader; give --mmtests DIR" in warnings[0]
    assert set(loaded.table["row"]) == {"fault-huge-1", "fault-both-1", "huge-1"}
    assert any(str(u).startswith("thpscale huge-* in %: ") for u in loaded.units)


def fake_checkout(root: Path) -> Path:
    """A checkout whose aim9 parse-results prints what mmtests 638401e0's printed for
    the bundled tree, with the shellpack.yaml keys mmlab reads (as in that commit)."""
    pack = root / "shellpack_src" / "src" / "aim9"
    pack.mkdir(parents=True)
    script = pack / "parse-results"
    script.write_text(f"#!/bin/sh\ncat '{PERL / 'aim9-parse-results.txt'}'\n")
    script.chmod(0o755)
    (pack / "shellpack.yaml").write_text(
        "summarise: Multiops\npreferhigher: true\n"
        + "".join(f"{m}:\n  units: OPS_PER_SECOND\n" for m in ("page_test", "exec_test"))
    )
    return root


def test_the_generic_path_reads_parse_results_as_mmtests_does(tmp_path):
    run = MORE / AA[0] / "performance"
    checkout = fake_checkout(tmp_path / "mmtests")
    loaded = benchmarks.load_runs([run], mmtests_dir=checkout)
    aim9 = loaded.table.filter(loaded.table["row"].str.ends_with("_test"))
    theirs = perl_samples("aim9-new")
    assert set(aim9["row"]) == set(theirs)
    for row, values in theirs.items():
        assert_same_samples(aim9.filter(aim9["row"] == row)["value"].to_list(), values)
    units = dict(zip(aim9["row"], aim9["unit"], strict=True))
    assert units["page_test"] == "ops/s" and units["brk_test"] == "unstated"
    assert aim9["higher_is_better"].all()
    assert any("no units for metric 'brk_test'" in s for s in loaded.skipped)
    assert not any("aim9: no native reader" in s for s in loaded.skipped)


@pytest.mark.parametrize(
    ("script", "warning"),
    [
        # Debian's default mawk on mmtests' parse-results: a message, exit 0, no output.
        ("echo 'mawk: line 1: regular expression compile failed' >&2", "wrote on stderr: mawk"),
        ("true", "printed no sample for"),  # a log format the parser does not know
    ],
)
def test_a_parser_that_prints_nothing_warns(tmp_path, capsys, script, warning):
    """Issue 29 item 1: only ``elapsed`` was compared, with no word, when parse-results
    printed nothing for a non-empty logs/ (as it does under mawk, or on 2020-format logs)."""
    checkout = fake_checkout(tmp_path / "mmtests")
    (checkout / "shellpack_src/src/aim9/parse-results").write_text(f"#!/bin/sh\n{script}\n")
    run = MORE / AA[0] / "performance"
    loaded = benchmarks.load_runs([run], mmtests_dir=checkout)
    assert "page_test" not in set(loaded.table["row"])
    assert any(warning in s for s in loaded.skipped), loaded.skipped
    assert any("printed no sample" in s and "its rows are missing" in s for s in loaded.skipped)
    other = MORE / AA[1] / "performance"
    args = ["compare", str(run), str(other), "--mmtests", str(checkout)]
    assert main(args) == 0
    assert warning in capsys.readouterr().err


def test_the_checkout_may_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MMTESTS", str(fake_checkout(tmp_path / "mmtests")))
    loaded = benchmarks.load_runs([MORE / AA[0] / "performance"])
    assert "page_test" in set(loaded.table["row"])


def test_without_a_checkout_aim9_is_a_warning_not_a_gap():
    loaded = benchmarks.load_runs([MORE / AA[0] / "performance"])
    assert any("aim9: no native reader; give --mmtests DIR" in s for s in loaded.skipped)
    assert "page_test" not in set(loaded.table["row"])


def test_not_a_checkout_is_one_clear_error(tmp_path, capsys):
    runs = [str(MORE / r / "performance") for r in AA]
    assert main(["compare", *runs, "--mmtests", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not an mmtests checkout" in err and "Traceback" not in err


def test_compare_on_two_real_thpscale_trees_prints_fault_and_huge_rows(capsys):
    base, new = (str(MORE / r / "thpscale") for r in AA)
    assert main(["compare", base, new, "--resamples", "200"]) == 0
    out, err = capsys.readouterr()
    headings = [ln.split(" (")[0] for ln in out.splitlines() if ln.startswith(("fault-", "huge-"))]
    threads = (1, 3, 5, 7, 12, 18, 24, 30, 32)
    expected = {f"fault-{k}-{t}" for k in ("base", "huge", "both") for t in threads}
    # fault-huge-1: no huge fault in either run (mmtests' fake 0); said on stderr.
    assert set(headings) == (expected - {"fault-huge-1"}) | {f"huge-{t}" for t in threads}
    assert "huge-32 (%; higher is better)" in out and "fault-base-1 (us; lower is better)" in out
    # One verdict paragraph per row, and the elapsed row of tests-timestamp.
    verdicts = [ln for ln in out.splitlines() if ln.startswith(f"  thpscale@{AA[1]}: ")]
    assert len(verdicts) == len(headings) + 1
    # One run per kernel (a real A/A pair two days apart): described, never given a verdict
    # (issue 19; the within-run faults are not independent replicates of the kernel).
    # (A row that is 0 in every sample says so instead.)
    assert all(
        v.split(": ")[1].startswith(("no verdict", "no change shown (every value is 0"))
        for v in verdicts
    )
    assert not [v for v in verdicts if v.split(": ")[1].startswith(("improved", "regressed"))]
    assert "fake 0 us sample left out" in err
    assert "unit of thpscale fault-base-* in us: mmtests b0b1d143 ExtractThpscale.pm" in err


def test_thpscale_iteration_is_found_by_find_runs():
    runs = mmtests.find_runs(MORE / AA[0] / "thpscale")
    assert [it.tests for it in runs[0].iterations] == [["thpscale"]]


@pytest.mark.skipif(os.environ.get("MMTESTS") is not None, reason="MMTESTS set by the user")
def test_no_environment_checkout_by_default():
    from analysis.ingest import mmtests_shellpack

    assert mmtests_shellpack.checkout(None) is None


def test_stutterp_side_files_are_known_not_results(tmp_path):
    """stutterp-bench (mmtests 638401e0) writes these beside mmap-latency-N.log.gz."""
    for name in ("calibrate.time", "fio-config.4", "fio-4.log", "fio-4.latlog_lat.1.log",
                 "memory-hog-4.log.gz", "mmtests.log", "commands.log"):  # fmt: skip
        (tmp_path / name).write_text("x\n")
    (tmp_path / "mmap-latency-4.log").write_text("2 6000000\n")
    got = mmtests_logs.read_logs("stutterp", tmp_path)
    assert not got.notes and [v for _, v, _ in got.samples] == [6.0, 6.0]


def test_a_row_in_two_units_is_an_error_not_a_comparison(tmp_path, capsys):
    """mmlab's probe (us) and mmtests' stutterp (ms) both name their rows mmap-N."""
    for run, text in (("probe", "# unit: microseconds\n1.0 500.0\n"), ("mmt", "1 6000000\n")):
        logs_dir = tmp_path / run / "iter-0" / "stutterp" / "logs"
        logs_dir.mkdir(parents=True)
        (logs_dir / "mmap-latency-4.log").write_text(text)
    assert main(["compare", str(tmp_path / "probe"), str(tmp_path / "mmt")]) == 2
    err = capsys.readouterr().err
    assert "row 'mmap-4' is in us and ms in different runs" in err and "Traceback" not in err


def test_a_headerless_log_in_neither_format_is_an_error_naming_the_line(tmp_path):
    log = tmp_path / "mmap-latency-4.log"
    log.write_text("1795439413.5 514.7\n1795439413.6 200.1\n")
    with pytest.raises(InputError, match="neither mmlab's probe") as caught:
        mmtests_logs.stutterp_log(log)
    assert caught.value.line == 1


def test_stray_lines_in_an_mmtests_log_are_counted_in_one_note(tmp_path):
    log = tmp_path / "mmap-latency-4.log"
    log.write_text("1 6000000\nKilled\n2 7000000\n")
    got = mmtests_logs.stutterp_log(log)
    assert got.values == (6.0, 7.0, 7.0)
    assert got.skipped == (f"{log}: line(s) 2 not mmtests' '<count> <mean ns>'",)


def summary_lines(text: str, mmtests_layout: bool) -> dict[tuple[str, str], tuple[float, ...]]:
    """(row, statistic) -> (base, new, new's % change) of a comparison printed by
    compare-mmtests.pl (``Stat row base (pct) new (pct)``) or by ``mmlab compare``
    (a ``row (unit; ...)`` heading, then ``Stat base (pct) new (pct)``)."""
    found, row = {}, None
    for line in text.splitlines():
        fields = line.replace("(", " ").replace(")", " ").replace("*", " ").split()
        if not mmtests_layout and " is better)" in line:
            row = line.split(" (")[0]
        elif mmtests_layout and len(fields) == 6 and fields[3].endswith("%"):
            found[fields[1], fields[0]] = (
                float(fields[2]),
                float(fields[4]),
                float(fields[5][:-1]),
            )
        elif not mmtests_layout and row and len(fields) == 5 and fields[2] == "0.00%":
            # '-': not defined (e.g. a standard deviation of one sample)
            found[row, fields[0]] = tuple(
                None if f == "-" else float(f.removesuffix("%"))
                for f in (fields[1], fields[3], fields[4])
            )
    return found


@pytest.mark.parametrize(("bench", "config"), [("thpscale", "thpscale"), ("pft", "performance")])
def test_compare_prints_the_summary_mmtests_compare_prints(capsys, bench, config):
    """compare-mmtests.pl's Min, Max, Stddev (and Amean, CoeffVar, BAmean-50/99 where mmtests
    prints Amean: it prints Hmean for rates) with its % sign: positive = better."""
    assert main(["compare", *(str(MORE / r / config) for r in AA), "--resamples", "200"]) == 0
    ours = summary_lines(capsys.readouterr().out, mmtests_layout=False)
    theirs = summary_lines((PERL / f"compare-{bench}.txt").read_text(), mmtests_layout=True)
    rows = {row for row, _ in theirs} - {"fault-huge-1"}  # mmtests' fake 0 only
    assert rows and rows <= {row for row, _ in ours}
    checked = 0
    for row in rows:
        stats = {"Min", "Max", "Stddev"}
        if (row, "Amean") in theirs:
            stats |= {"Amean", "CoeffVar", "BAmean-50", "BAmean-99"}
        for stat in stats:
            (b, n, pct), (tb, tn, tpct) = ours[row, stat], theirs[row, stat]
            if b is None or n is None:
                # One sample in that run: mmtests prints a standard deviation of 0 and
                # BAmean = the sample; mmlab '-' (undefined, and no quantile rows).
                side = 0 if b is None else 1
                assert theirs[row, "Min"][side] == theirs[row, "Max"][side], (row, stat)
                assert stat not in ("Stddev", "CoeffVar") or theirs[row, stat][side] == 0
                continue
            assert abs(b - tb) <= 0.006 and abs(n - tn) <= 0.006, (row, stat)
            assert abs(pct - tpct) <= 0.011, (row, stat, pct, tpct)
            checked += 1
    assert checked >= 3 * len(rows)


def test_a_failing_parse_results_is_one_line_naming_it(tmp_path, capsys):
    checkout = fake_checkout(tmp_path / "mmtests")
    script = checkout / "shellpack_src" / "src" / "aim9" / "parse-results"
    script.write_text("#!/bin/sh\necho 'Failed to change directory' >&2\nexit 3\n")
    runs = [str(MORE / r / "performance") for r in AA]
    assert main(["compare", *runs, "--mmtests", str(checkout)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{script}: failed on " in err[0]
    assert err[0].endswith("(exit 3): Failed to change directory")


def test_json_rows_say_where_their_unit_comes_from(capsys):
    runs = [str(MORE / r / "thpscale") for r in AA]
    assert main(["compare", *runs, "--rows", "-32", "--json", "--resamples", "100"]) == 0
    rows = json.loads(capsys.readouterr().out)
    sources = {r["row"]: r["unit_source"] for r in rows}
    assert sources["fault-base-32"].startswith("mmtests b0b1d143 ExtractThpscale.pm")
    assert sources["huge-32"].startswith("mmtests b0b1d143 ExtractThpscalecounts.pm")


def test_a_table_has_no_unit_source_to_name(tmp_path, capsys):
    table = tmp_path / "t.csv"
    table.write_text("kernel,row,run,value,unit\na,r,0,1,us\na,r,1,2,us\nb,r,0,3,us\nb,r,1,4,us\n")
    assert main(["compare", str(table), "--json", "--resamples", "100"]) == 0
    assert [r["unit_source"] for r in json.loads(capsys.readouterr().out)] == [None]


@pytest.mark.parametrize("bench", ["pagealloc", "hpagealloc"])
def test_pagealloc_and_hpagealloc_printf_fixtures_read_as_mmtests(bench):
    """data/mmtests-formats: written from the benchmarks' printf formats (no public tree)."""
    path = FORMATS / f"{bench}-printf" / "iter-0" / bench / "logs"
    got = mmtests_logs.read_logs(bench, path)
    ours, theirs = mmlab_samples(got), perl_samples(f"{bench}-old")
    assert set(ours) == set(theirs)
    for row, values in theirs.items():
        assert_same_samples(ours[row], values)
    unit = {"pagealloc": "cycles", "hpagealloc": "ms"}[bench]
    assert {(d.unit, d.higher_is_better) for _, _, d in got.samples} == {(unit, False)}
    assert not [n for n in got.notes if "not understood" in n]


@pytest.mark.parametrize(
    ("run", "kind", "share"), [("madvhugepage", "huge", 100.0), ("default", "base", 0.0)]
)
def test_thpchallenge_output_reads_as_current_mmtests_without_fake_zeros(run, kind, share):
    """mmtests' own thpchallenge.c, run here (data/mmtests-formats README): with
    MADV_HUGEPAGE every fault got a huge page, without it (THP 'madvise' mode) none."""
    path = FORMATS / f"thpchallenge-{run}" / "iter-0" / "thpchallenge" / "logs"
    got = mmtests_logs.read_logs("thpchallenge", path)
    ours, theirs = mmlab_samples(got), perl_samples(f"thpchallenge-{run}-new")
    other = "base" if kind == "huge" else "huge"
    assert {r for r, v in theirs.items() if v == [0.0]} == {f"fault-{other}-1", f"fault-{other}-2"}
    latency = {r: v for r, v in ours.items() if r.startswith("fault-")}
    assert set(latency) == {f"fault-{k}-{n}" for k in (kind, "both") for n in (1, 2)}
    for row, values in latency.items():
        assert_same_samples(values, theirs[row])
    counts = perl_samples(f"thpchallenge-{run}-counts-new")
    assert {r: v for r, v in ours.items() if r.startswith("huge-")} == counts
    assert counts == {"huge-1": [share], "huge-2": [share]}
    assert not [n for n in got.notes if "not understood" in n]  # threads-N.time is known


def test_compare_reads_old_and_new_usemem_namings_of_the_same_files_alike(capsys):
    """time-N-M (current mmtests) beside the usemem-N-M files they were copied from."""
    old = DATA / "mmtests-ci" / "work" / AA[0] / "usemem-stress-numa-compact"
    new = FORMATS / "usemem-time-names"
    assert main(["compare", str(old), str(new), "--json", "--resamples", "100"]) == 0
    rows = {r["row"]: r for r in json.loads(capsys.readouterr().out)}
    expected = {f"{k}-{t}" for k in ("user", "syst", "elsp") for t in (1, 3, 4)}
    assert expected <= set(rows)
    # elsp-1 is 0.36 s in all 7: a change of 0 with no spread has no estimate (None).
    assert all(rows[r]["change"] in (0, None) and rows[r]["samples"] == 7 for r in expected)
    # The same numbers under two names: never a change (one run each: no verdict, or no
    # change shown where both runs are identical with no spread).
    assert {rows[r]["verdict"] for r in expected} <= {"no change shown", "no verdict"}
