"""The paper's comparison section: its numbers recomputed independently from the raw probe
logs (SciPy's Harrell–Davis, an explicit permutation over runs, BH by hand) and from the
committed validation results."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from scipy import stats
from scipy.stats.mstats import hdquantiles

from analysis.ingest.mmtests import find_runs
from analysis.report.paper import comparison
from analysis.report.paper.latex import defined_macros, pm
from analysis.stats import validation_compare
from analysis.study.latency import LEVEL
from analysis.study.study import Study
from tests.conftest import DATA

PAPER_RUNS = (DATA / "stutterp-aa2", DATA / "stutterp-ab-dirty5")


@pytest.fixture(scope="module")
def cmp():
    runs = tuple(run for path in PAPER_RUNS for run in find_runs(path))
    return Study(runs, resamples=200).latency


def _probe_runs(path) -> list[np.ndarray]:
    """Latencies of each iteration's mmap-8 probe log, read as plain text."""
    logs = sorted(path.glob("*/iter-*/stutterp/logs/mmap-latency-8.log"))
    return [
        np.array(
            [float(line.split()[1]) for line in log.read_text().splitlines() if line[0] != "#"]
        )
        for log in logs
    ]


def _permutation_p(a: np.ndarray, b: np.ndarray) -> float:
    pooled, observed = np.concatenate([a, b]), abs(b.mean() - a.mean())
    diffs = []
    for split in itertools.combinations(range(len(pooled)), len(a)):
        mask = np.zeros(len(pooled), bool)
        mask[list(split)] = True
        diffs.append(abs(pooled[~mask].mean() - pooled[mask].mean()))
    return float(np.mean(np.array(diffs) >= observed - 1e-12))


def _number(latex: str) -> float:
    return float(re.sub(r"\\ensuremath|[${},+]", "", latex))


def test_median_line_matches_an_independent_computation(cmp):
    base, new = (_probe_runs(p) for p in PAPER_RUNS)
    assert len(base) == len(new) == 6
    hd_b = np.array([hdquantiles(r, prob=[0.5])[0] for r in base])
    hd_n = np.array([hdquantiles(r, prob=[0.5])[0] for r in new])
    values = comparison.comparison_values(cmp)
    assert values["cmp splits"] == str(math.comb(12, 6))
    # Welch's t on the log run medians decides; the exact permutation p is within 10×.
    p = stats.ttest_ind(np.log(hd_n), np.log(hd_b), equal_var=False).pvalue
    assert _number(values["cmp mmap-8 p50 p"]) == pytest.approx(p, rel=5e-3)
    probe = cmp.row("p50", "mmap-8")
    assert probe.p_permutation == pytest.approx(_permutation_p(np.log(hd_b), np.log(hd_n)))
    change = 100 * (hd_n.mean() / hd_b.mean() - 1)
    # Printed rounded where its CI is (units.decimals_at): equal to half its last digit.
    printed = re.sub(r"\\ensuremath|[${},+]", "", values["cmp mmap-8 p50 change"])
    half_digit = 0.5 * 10 ** -len(printed.partition(".")[2])
    assert float(printed) == pytest.approx(change, abs=half_digit + 1e-9)
    assert _number(values["cmp mmap-8 p50 base"]) == pytest.approx(hd_b.mean(), abs=0.05)
    assert values["cmp mmap-8 p50 verdict"] == "no change shown"


def test_table_q_is_bh_over_every_line(cmp):
    # Benjamini–Hochberg by hand: q_(i) = min over j >= i of p_(j) * m / j.
    ps = np.array([r.p for _, r in cmp.results])
    order = np.argsort(ps)
    m = len(ps)
    q = np.minimum.accumulate((ps[order] * m / np.arange(1, m + 1))[::-1])[::-1]
    expected = np.empty(m)
    expected[order] = np.minimum(q, 1)
    assert [s for s, _ in cmp.results] == ["mean", "p50", "p90", "p99", "mean"]
    assert cmp.table_q == pytest.approx(expected.tolist())
    # The elapsed row has one value per run: only its mean is a statistic.
    assert [r.row for _, r in cmp.results][-1] == "elapsed"


def test_validation_table_holds_the_committed_results():
    results = validation_compare.results()
    table = comparison.validation_table(results)
    rows = {line.split(" & ")[0]: line.split(" & ") for line in table.splitlines() if " & " in line}
    cells_of_grid = comparison.grid(results)
    assert {c.get("rows", 4) for c in cells_of_grid} == {results["rows"]}
    samples = min(c["samples"] for c in cells_of_grid)
    for method in ("mmlab verdict", "pooled Welch", "mmtests 2018"):
        # Columns: worst A/A per-row rate at 3, 5, 10 runs over shapes and run effects.
        for column, runs in enumerate((3, 5, 10), 1):
            cells = [
                c["methods"][method]["null_row"]
                for c in cells_of_grid
                if c["effect"] == 0 and c["runs"] == runs
            ]
            worst = max(cells, key=lambda a: a["rate"])
            cell = rows[method][column].strip(" \\")
            assert _holds(cell, worst["rate"], worst["mc_se"]), cell
        # Then the lowest power for +20 % at 5 and 10 runs (same sample size).
        for column, runs in enumerate((5, 10), 4):
            cells = [
                c["methods"][method]["power"]
                for c in cells_of_grid
                if c["effect"] > 0 and c["runs"] == runs and c["samples"] == samples
            ]
            low = min(cells, key=lambda a: a["rate"])
            assert _holds(rows[method][column], low["rate"], low["mc_se"]), rows[method][column]
    # Real A/A: rows flagged over every pair (mmlab by the median), each pair counted once.
    flagged = sum(r["flagged"]["mmlab p50"] for r in results["real_aa"])
    compared = sum(r["rows"] for r in results["real_aa"])
    assert rows["mmlab verdict"][-1].strip(" \\") == f"{flagged}/{compared}"
    values = comparison.validation_values(results)
    assert values["val real mmlab p50"] == f"{flagged} of {compared}"
    coverage = [c["coverage"]["rate"] for c in cells_of_grid]
    assert values["val coverage low"] == f"{min(coverage):.3f}"


def test_section_writes_the_macros_its_checked_in_prose_quotes(cmp, tmp_path):
    runs = tuple(run for path in PAPER_RUNS for run in find_runs(path))
    tex = comparison.section(Study(runs), tmp_path)
    assert all(line.startswith(("%", "\\newcommand")) for line in tex.splitlines())
    values = defined_macros(tex)
    every = comparison.comparison_values(cmp)
    # The probe's macros are its median line's.
    assert values["CmpProbeChange"] == every["cmp mmap-8 p50 change"]
    assert values["CmpProbeVerdict"] == every["cmp mmap-8 p50 verdict"]
    # The prose (sections/ab-comparison.tex) says one line is flagged and that the flag
    # does not survive BH over every line of the table.
    flagged = [
        (r, q)
        for (_, r), q in zip(cmp.results, cmp.table_q, strict=True)
        if r.verdict in ("improved", "regressed")
    ]
    assert values["CmpFlags"] == "1" == str(len(flagged)) and values["CmpFlagsKept"] == "0"
    assert flagged[0][1] >= LEVEL
    assert f"{{{flagged[0][1]:.3g}}}" in values["CmpFlagTableQ"]
    assert (tmp_path / "figures" / "comparison-quantiles.pdf").stat().st_size > 1000
    assert "SYNTHETIC" in (tmp_path / "tables" / "validation.tex").read_text()


def test_validation_claims_follow_the_results():
    results = validation_compare.results()
    values = comparison.validation_values(results)
    aa = [c for c in comparison.grid(results) if c["effect"] == 0]
    mmlab = max((c["methods"]["mmlab verdict"]["null_row"] for c in aa), key=lambda r: r["rate"])
    pooled = [
        c["methods"][m]["null_row"]["rate"]
        for c in aa
        for m in ("pooled Welch", "pooled Mann–Whitney")
    ]
    assert values["val mmlab aa"] == pm(mmlab["rate"], mmlab["mc_se"], 3)
    assert (values["val pooled aa"], values["val pooled aa max"]) == (
        f"{min(pooled):.3f}",
        f"{max(pooled):.3f}",
    )
    assert mmlab["rate"] < max(pooled)  # the claim the text makes


def test_one_run_gives_a_reason_not_a_failed_paper(tmp_path):
    runs = tuple(find_runs(PAPER_RUNS[0]))
    tex = comparison.section(Study(runs), tmp_path)
    assert tex.startswith("\\emph{One run: no latency comparison")


def test_the_flag_sentences_are_defined_only_where_they_apply(cmp):
    """sections/ab-comparison.tex tests ``\\ifdefined\\CmpFlagRow`` (a flagged line) and
    ``\\ifdefined\\CmpFlagNotKept`` (the first flag does not survive the table-wide q):
    runs without a flag must not leave the paragraph's macros undefined inside it."""
    import dataclasses

    probe = cmp.row("p50", "mmap-8")
    # The bundled pair: one flag, not kept.
    values = comparison.section_values(cmp, probe)
    assert "cmp flag row" in values and values["cmp flag not kept"] == ""
    # The same comparison with every verdict "no change shown": no flag macro at all.
    quiet = {
        metric: tuple(dataclasses.replace(r, verdict="no change shown") for r in rows)
        for metric, rows in cmp.by_metric.items()
    }
    values = comparison.section_values(dataclasses.replace(cmp, by_metric=quiet), probe)
    assert values["cmp flags"] == "0"
    assert not any(k.startswith("cmp flag ") for k in values)


def _holds(cell: str, rate: float, se: float) -> bool:
    """``$rate{\\pm}se$`` prints ``rate`` and ``se`` to one decimal place, the se's first
    one or two significant digits (the Particle Data Group's rule)."""
    m = re.fullmatch(r"\$(\d+\.(\d+))\{\\pm\}(\d+\.(\d+))\$", cell.strip(" \\"))
    assert m and len(m[2]) == len(m[4]), cell
    unit = 10.0 ** -len(m[2])
    significant = len(m[3].replace(".", "").lstrip("0"))
    return (
        abs(float(m[1]) - rate) <= unit / 2 + 1e-12
        and abs(float(m[3]) - se) <= unit / 2 + 1e-12
        and significant in (1, 2)
    )
