"""``mmlab compare`` end to end: real bundled trees and captures, and bad input (a clear
message per row or one clear error, never a traceback)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import polars as pl
import pytest
from scipy import stats
from scipy.stats.mstats import hdquantiles

from analysis.cli import main
from analysis.ingest.benchmarks import load_runs, stutterp_log, usemem_log
from tests.conftest import DATA

CI = DATA / "mmtests-ci" / "work"
AA = (CI / "log.ltccip8.2020-06-12_1807", CI / "log.ltccip8.2020-06-14_0656")
BIG = CI / "log.ltccip8.2020-06-03_1400"


def _json(capsys, *argv: str) -> list[dict]:
    assert main(["compare", *argv, "--json", "--resamples", "300"]) == 0
    return json.loads(capsys.readouterr().out)


def test_usemem_gnu_time_parsed():
    log = AA[0] / "usemem-stress-numa-compact" / "iter-0" / "usemem" / "logs" / "usemem-1-1"
    user, system, elapsed = usemem_log(log)
    text = log.read_text()
    assert f"{user:.2f}user {system:.2f}system" in text
    assert f"0:{elapsed:05.2f}elapsed" in text


def test_stutterp_log_unit_and_count():
    log = DATA / "stutterp-dirty20" / "dirty20" / "iter-0" / "stutterp" / "logs"
    got = stutterp_log(log / "mmap-latency-4.log")
    lines = (log / "mmap-latency-4.log").read_text().splitlines()
    assert got.unit == "us" and not got.skipped
    assert got.unit_source == "the '#' header of mmap-latency-4.log"
    assert len(got.values) == sum(not ln.startswith("#") for ln in lines)


def test_one_run_per_kernel_is_described_never_given_a_verdict(capsys):
    """mmtests-ci README: 06-12 vs 06-14 is the same kernel and config (a real A/A);
    06-03 used 100x the memory (a real, large difference: every usemem time grows). Each
    tree holds one iteration: the difference is described (change, no p, no CI), and no
    row gets a verdict, however large the change (issue 19, defect 3)."""
    rows = _json(capsys, str(AA[0]), str(AA[1]), str(BIG))
    # The three run directories share one name; each is told apart by its tree's.
    aa = [r for r in rows if r["kernel"] == f"usemem-stress-numa-compact@{AA[1].name}"]
    big = [r for r in rows if r["kernel"].endswith(f"@{BIG.name}") and r["row"] != "elapsed"]
    assert len(aa) == 10 and len(big) == 9
    assert all(r["verdict"] in ("no verdict", "no change shown") for r in aa + big)
    assert all(r["change"] > 1000 for r in big)
    for r in aa + big:
        if r["verdict"] == "no verdict":
            assert r["p"] is None and r["q"] is None and r["change_ci"] is None
            assert "1 vs 1 runs: one run per kernel gives no p" in r["reason"]


def test_bundled_captures_three_runs_welch_decides(capsys):
    """3 vs 3 runs: the exact permutation test cannot give p < 2/C(6,3) = 0.1, so it
    could never flag a row at 0.05; Welch's t on the log per-run medians can (issue 33).
    Its p recomputed from the logs (SciPy's Harrell–Davis and Welch), q by hand (BH over
    the family's 4 rows): here every q ≥ 0.05, no change shown, and the reason quotes
    no permutation floor (it did not decide)."""
    rows = _json(capsys, str(DATA / "stutterp-dirty20"), str(DATA / "stutterp-dirty5"))
    table = load_runs([DATA / "stutterp-dirty20", DATA / "stutterp-dirty5"]).table
    family = {r["family_rows"] for r in rows if r["p"] is not None}
    assert family == {4}  # mmap-4/8/16 and elapsed: the workload family
    mmap = [r for r in rows if r["row"].startswith("mmap-")]
    assert {r["row"] for r in mmap} == {"mmap-4", "mmap-8", "mmap-16"}
    for r in mmap:
        assert r["runs"] == r["base_runs"] == 3 and r["unit"] == "us"
        hd = []
        for kernel in (r["base"], r["kernel"]):
            frame = table.filter((pl.col("row") == r["row"]) & (pl.col("kernel") == kernel))
            runs = frame.partition_by("run", maintain_order=True)
            hd.append(np.log([hdquantiles(g["value"].to_numpy(), [0.5])[0] for g in runs]))
        assert r["p"] == pytest.approx(stats.ttest_ind(hd[1], hd[0], equal_var=False).pvalue)
        assert r["decided_by"] == "Welch t" and r["p_permutation"] >= 0.1
    ps = np.array([r["p"] for r in rows if r["p"] is not None])
    order = np.argsort(ps)
    q = np.minimum.accumulate((ps[order] * len(ps) / np.arange(1, len(ps) + 1))[::-1])[::-1]
    expected = np.empty(len(ps))
    expected[order] = np.minimum(q, 1)
    assert [r["q"] for r in rows if r["p"] is not None] == pytest.approx(expected.tolist())
    for r in mmap:
        assert r["verdict"] == "no change shown" and "permutation" not in r["reason"]
        # Design for the default ±10 % by Welch's power at 0.05/4: more than these 3 runs.
        assert r["design_effect_pct"] == 10 and r["needed_runs"] > 3


def test_mmtests_text_fits_80_columns(capsys):
    assert main(["compare", str(AA[0]), str(BIG), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "\x1b" not in out
    # One run per kernel: no verdict, so no marker anywhere.
    marked = [ln for ln in out.splitlines() if ln.startswith("HD-50") and "*" in ln]
    assert marked == [] and "no verdict (1 vs 1 runs" in " ".join(out.split())


def _table(tmp_path, lines: list[str]) -> str:
    path = tmp_path / "t.csv"
    path.write_text("kernel,row,run,value,unit\n" + "\n".join(lines) + "\n")
    return str(path)


def _rows(kernel: str, row: str, runs: dict[int, list[float]], unit: str = "us") -> list[str]:
    return [f"{kernel},{row},{r},{v},{unit}" for r, vs in runs.items() for v in vs]


def test_bad_rows_get_a_message_each(tmp_path, capsys):
    rng = np.random.default_rng(5)
    good = {r: list(rng.lognormal(size=5)) for r in range(4)}
    lines = [
        *_rows("a", "fine", good),
        *_rows("b", "fine", {r: list(rng.lognormal(size=5)) for r in range(4)}),
        *_rows("a", "only-a", good),
        *_rows("a", "flat", {r: [7.0, 7.0] for r in range(3)}),
        *_rows("b", "flat", {r: [7.0, 7.0] for r in range(3)}),
        *_rows("a", "empty", {0: ["nan"], 1: ["nan"]}),
        *_rows("b", "empty", {0: [1.0]}),
        *_rows("a", "neg", {0: [1.0, -2.0, 3.0], 1: [2.0, 2.5]}),
        *_rows("b", "neg", {0: [1.0, 2.0, "nan"], 1: [2.0, 3.0]}),
        *_rows("a", "one-run", {0: [1.0, 1.1, 1.2, 0.9]}),
        *_rows("b", "one-run", {0: [1.5, 1.6, 1.4, 1.7]}),
    ]
    rows = {r["row"]: r for r in _json(capsys, _table(tmp_path, lines))}
    assert rows["fine"]["verdict"] != "not compared"
    assert rows["only-a"]["verdict"] == "not compared"
    assert rows["only-a"]["reason"] == "row missing for b"
    assert rows["flat"]["p"] is None and rows["flat"]["verdict"] == "no change shown"
    assert rows["flat"]["reason"] == "every value is 7 in both kernels"
    assert rows["empty"]["verdict"] == "not compared"
    assert rows["empty"]["reason"] == "a: no values in this row"
    assert "a: 1 negative us values dropped" in rows["neg"]["notes"]
    assert "b: 1 NaN/empty values dropped" in rows["neg"]["notes"]
    # 4 vs 4 repetitions fully separated, but one run each: described, no p.
    assert rows["one-run"]["verdict"] == "no verdict" and rows["one-run"]["p"] is None
    assert rows["one-run"]["change"] == pytest.approx((1.55 / 1.05 - 1) * 100, rel=0.02)


def test_ties_are_exact_in_the_permutation(tmp_path, capsys):
    lines = [
        *_rows("a", "tied", {0: [1.0, 1.0], 1: [1.0, 1.0], 2: [1.0, 1.0]}),
        *_rows("b", "tied", {0: [1.0, 1.0], 1: [2.0, 2.0], 2: [2.0, 2.0]}),
    ]
    (row,) = _json(capsys, _table(tmp_path, lines))
    # Run medians a {1,1,1} vs b {1,2,2}: of the 20 splits of {1,1,1,1,2,2}, the 4 with
    # no 2 in a and the 4 with both 2s in a are as extreme as observed: p = 8/20.
    assert row["p_permutation"] == pytest.approx(8 / 20)
    # Welch's t on the logs: mean difference ⅔·log 2, se of b alone (a does not vary),
    # 2 df: within tenfold of the permutation p, so it decides.
    t = (2 / 3 * math.log(2)) / (math.log(2) / math.sqrt(3) / math.sqrt(3))
    assert row["p"] == pytest.approx(2 * stats.t.sf(t, 2)) and row["decided_by"] == "Welch t"


@pytest.mark.parametrize(
    ("lines", "argv", "message"),
    [
        (["a,r,0,1.0,us", "b,r,0,x,us"], [], "t.csv:3: value 'x' is not a number"),
        (["a,r,0,1.0,us", "a,r,1,2.0,us"], [], "only one kernel (a)"),
        (["a,r,0,1.0,us", "b,r,0,2.0,us"], ["--base", "c"], "base kernel 'c' not found"),
        (["a,r,0,1.0,us", "b,r,0,2.0,ms"], [], "t.csv:3: row 'r' has several units"),
    ],
)
def test_bad_tables_fail_with_one_clear_line(tmp_path, capsys, lines, argv, message):
    assert main(["compare", _table(tmp_path, lines), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_parquet_table_gives_the_same_rows_as_csv(tmp_path, capsys):
    import polars as pl

    rng = np.random.default_rng(6)
    lines = [
        *_rows("a", "r", {r: list(rng.lognormal(size=4)) for r in range(4)}),
        *_rows("b", "r", {r: list(rng.lognormal(size=4)) for r in range(4)}),
    ]
    csv = _table(tmp_path, lines)
    parquet = tmp_path / "t.parquet"
    pl.read_csv(csv, schema_overrides={"run": pl.String}).write_parquet(parquet)
    assert _json(capsys, csv) == _json(capsys, str(parquet))


def test_markdown_states_the_sign_and_refuses_one_run(tmp_path, capsys):
    lines = [*_rows("a", "r", {0: [1.0, 1.1, 1.2]}), *_rows("b", "r", {0: [1.5, 1.6, 1.7]})]
    assert main(["compare", _table(tmp_path, lines), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| row | unit | kernel | runs |")
    # One run each: the change is described (+45.5 %, no CI), no p, q or verdict.
    # Three significant digits without a CI (units.change): 1.6 / 1.1 − 1 = +45.45 %.
    assert "| r | us | b | 1 vs 1 |" in out and "| +45.5% (no CI) | – | – | no verdict:" in out
    assert "a session effect cannot be told from a kernel change" in out
    assert out.count("new/base − 1") == 1


def test_equivalence_needs_the_whole_tost_interval_inside_delta(tmp_path, capsys):
    """SYNTHETIC: both kernels 100 us ± 1 % (6 runs each): equivalent within ±5 %, but not
    within ±0.01 %, where the 90 % CI of the change cannot fit."""
    rng = np.random.default_rng(7)
    lines = [
        line
        for k in ("a", "b")
        for line in _rows(k, "r", {r: list(100 * rng.lognormal(0, 0.01, 20)) for r in range(6)})
    ]
    path = _table(tmp_path, lines)
    (wide,) = _json(capsys, path, "--delta", "5")
    (narrow,) = _json(capsys, path, "--delta", "0.01")
    assert wide["verdict"] == "equivalent" and "90% CI of change within ±5%" in wide["reason"]
    assert narrow["verdict"] == "no change shown"


@pytest.mark.parametrize("value", ["inf", "-inf", "Infinity"])
@pytest.mark.parametrize("fmt", [[], ["--json"]])
def test_an_infinite_value_is_refused_with_file_and_line(tmp_path, capsys, value, fmt):
    """Issue 17: inf gave p 0, q 0 and -100 % in text and a traceback with --json."""
    table = tmp_path / "t.csv"
    lines = ["kernel,row,run,value,unit"]
    lines += [f"{k},lat,{r},{v},us" for k in "ab" for r in range(3) for v in (1.0, 2.0)]
    lines.insert(5, f"b,lat,0,{value},us")
    table.write_text("\n".join(lines) + "\n")
    assert main(["compare", str(table), *fmt]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"mmlab compare: {table}:6: value {float(value)} is not finite\n"


def test_text_uses_one_sign_and_never_claims_an_interval_it_lacks(tmp_path, capsys):
    """SYNTHETIC: latency doubled over 5 runs each, and a one-run row. The paragraph's
    change equals the table's HD-50 % cell, same sign (positive = better, stated once);
    a row without interval says "no CI", never "(95% CI)", and no "by none" (defect 7)."""
    rng = np.random.default_rng(11)
    lines = [
        *_rows("a", "two", {r: list(100 * rng.lognormal(0, 0.2, 30)) for r in range(5)}),
        *_rows("b", "two", {r: list(200 * rng.lognormal(0, 0.2, 30)) for r in range(5)}),
        *_rows("a", "once", {0: [1.0, 1.1, 1.2]}),
        *_rows("b", "once", {0: [1.5, 1.6, 1.7]}),
    ]
    assert main(["compare", _table(tmp_path, lines), "--resamples", "300"]) == 0
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    cell = next(ln for ln in out.splitlines() if ln.startswith("HD-50")).split("*")[1]
    table_pct = float(cell.strip().rstrip("%"))
    assert table_pct < -50  # twice the latency: worse, so negative in mmtests' sign
    # The same change, rounded where its CI is in the paragraph (units.change).
    said = re.search(r"HD-50 change ([+-][0-9.]+)% \[", flat)
    assert said and said[1][0] == "-"
    decimals = len(said[1].partition(".")[2])
    assert abs(float(said[1]) - table_pct) <= 0.5 * 10**-decimals + 0.005
    assert out.count("positive = better") == 1
    once = flat[flat.index("once (us") :]
    assert "(no CI)" in once and "(95% CI)" not in once and "by none" not in flat


def test_nan_inf_and_negative_latencies_in_a_log_are_counted_and_left_out(tmp_path, capsys):
    """Issue 29, item 11: an mmap-4 probe log of the bundled pair with `nan`, `inf` and
    three `-5` latencies. Each kind is counted in a note; the p is one the tests can give
    (the 3 vs 3 permutation p is at least 0.1, Welch's is positive), never 0; the table's
    Min is the least finite, non-negative latency of the logs, not −5."""
    import shutil

    for name in ("stutterp-dirty20", "stutterp-dirty5"):
        shutil.copytree(DATA / name, tmp_path / name)
    log = tmp_path / "stutterp-dirty20/dirty20/iter-0/stutterp/logs/mmap-latency-4.log"
    lines = log.read_text().splitlines()
    bad = ["nan", "inf", "-5", "-5", "-5"]
    for i, value in enumerate(bad, 1):
        lines[i] = f"{lines[i].split()[0]} {value}"
    log.write_text("\n".join(lines) + "\n")
    argv = [str(tmp_path / "stutterp-dirty20"), str(tmp_path / "stutterp-dirty5")]
    (row,) = _json(capsys, *argv, "--rows", "mmap-4")
    assert set(row["notes"]) == {
        "dirty20: 1 NaN/empty values dropped",
        "dirty20: 1 infinite values dropped",
        "dirty20: 3 negative us values dropped",
    }
    assert 0 < row["p"] <= 1 and row["p_permutation"] >= 0.1
    assert main(["compare", *argv, "--rows", "mmap-4", "--resamples", "200"]) == 0
    table = capsys.readouterr().out
    logs = (tmp_path / "stutterp-dirty20/dirty20").glob("iter-*/stutterp/logs/mmap-latency-4.log")
    values = [float(x.split()[1]) for f in logs for x in f.read_text().splitlines() if x[0] != "#"]
    least = min(v for v in values if math.isfinite(v) and v >= 0)
    (line,) = [x for x in table.splitlines() if x.startswith("Min")]
    assert float(line.split()[1]) == pytest.approx(least, abs=5e-5)
