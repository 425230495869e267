"""One study, every output (issue 20): the mail report and the paper, built from one
:class:`~analysis.study.study.Study` of the bundled A/B pair, print identical numbers for
identical quantities — the throttle fits' P(timeout) and mean wait with their 95 % CIs, the
latency rows' change, CI and q, the Ops rows — and each result is computed once per study.

The two outputs format independently (plain text; LaTeX), so the comparison is of the
printed digits: LaTeX markup, thousands separators and a leading ``+`` dropped.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections import Counter

import pytest

from analysis.metrics.throttle import short_reason
from analysis.report.document import decided, render_report, study_json
from analysis.report.paper import build, comparison
from analysis.report.paper.fits import Shown, fit_values
from analysis.stats.fit import GroupFit
from analysis.stats.significance import METRICS, NOT_COMPARED
from analysis.study import fits, latency
from analysis.study.runs import study_runs
from analysis.study.study import Study
from tests.conftest import DATA, REPO

# The bundled A/B pair `make` reports on and writes the paper of (Makefile AB_RUNS).
AB_RUNS = (DATA / "stutterp-aa2", DATA / "stutterp-ab-dirty5")
# The computations a study makes once, wherever they are imported by name.
COUNTED = (
    latency.latency_comparison,
    fits.run_fits,
    sys.modules["analysis.study.study"].compare_runs,
    sys.modules["analysis.study.study"].run_throttle_table,
    sys.modules["analysis.study.study"].run_stall_table,
    sys.modules["analysis.study.latency"].compare_table,
)
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def numbers(text: str) -> list[str]:
    """The numbers printed in ``text`` (plain or LaTeX), as printed; ``m \\times 10^{k}``
    read as ``mek`` and an exponent's leading zeros dropped (``3.4e-07`` = ``3.4e-7``)."""
    text = re.sub(r"\s*\{?\\times\}?\s*10\^\{([-+]?\d+)\}", r"e\1", text.replace("{,}", ""))
    plain = re.sub(r"\\ensuremath|\\pm|\\scriptsize|[${}]", " ", text)
    found = [n.replace(",", "").removeprefix("+") for n in _NUMBER.findall(plain)]
    return [re.sub(r"e([-+]?)0*(\d)", r"e\1\2", n) for n in found]


@pytest.fixture(scope="module")
def outputs():
    """Every output of one study, each computation counted where any module calls it."""
    calls: Counter[str] = Counter()
    with pytest.MonkeyPatch.context() as mp:
        for func in COUNTED:

            def counted(*args, _func=func, **kwargs):
                calls[_func.__name__] += 1
                return _func(*args, **kwargs)

            for module in list(sys.modules.values()):
                name = getattr(module, "__name__", "")
                if name.startswith("analysis") and getattr(module, func.__name__, None) is func:
                    mp.setattr(module, func.__name__, counted)
        study = Study(study_runs(AB_RUNS), resamples=200)
        report = render_report(study, detail=True)
        json = study_json(study)
        roles = dict(zip((r.name for r in study.runs), ("base", "new"), strict=False))
        shown = [
            Shown(f"{roles[f.run]} {f.pooled.context} {short_reason(f.pooled.reason)}".lower(),
                  f.run, f.pooled, f)
            for f in study.fits
        ]  # fmt: skip
        paper = {
            "fits": fit_values(shown),
            "comparison": comparison.comparison_values(study.latency),
            "ops": build.ops_table(study.ops),
            "values": build.paper_values(study, study.ops),
        }
    return study, report, json, shown, paper, calls


def test_each_result_is_computed_once_per_study(outputs):
    *_, calls = outputs
    assert calls == {
        "latency_comparison": 1,
        "run_fits": 1,
        "compare_runs": 1,
        "run_throttle_table": 1,
        "run_stall_table": 1,
        "compare_table": len(METRICS),
    }


def _report_fit_line(report: str, fit, label: str) -> list[str]:
    head = f"{fit.run}: {short_reason(fit.pooled.reason)}, {fit.pooled.context}, timeout"
    block = report[report.index(head) :]
    line = next(x for x in block.splitlines() if x.strip().startswith(label))
    return numbers(line.removeprefix(f"  {label}"))


def test_fits_print_the_same_intervals_in_report_and_paper(outputs):
    _, report, _, shown, paper, _ = outputs
    fitted = [s for s in shown if isinstance(s.fit, GroupFit)]
    assert len(fitted) >= 2  # both runs throttle (memcg WRITEBACK)
    for s in fitted:
        for label, key in (("P(timeout)", "p timeout"), ("mean wait to timeout ms", "mean ms")):
            printed = _report_fit_line(report, s.spread, label)
            # pooled estimate [95 % CI], then mean and sd over iterations fitted alone
            assert printed[:3] == numbers(paper["fits"][f"fit {s.key} {key}"]), (s.key, key)
            spread = numbers(paper["fits"][f"fit {s.key} {key} iterations"])
            assert printed[3:] == spread, (s.key, key)


def test_latency_rows_print_the_same_change_ci_and_q(outputs):
    study, report, _, _, paper, _ = outputs
    values = paper["comparison"]
    summary = report.split("\n== ", 2)[1]
    rows = [
        r
        for r in decided(study.latency)
        if r.verdict != NOT_COMPARED and f"cmp {r.row} p50 change" in values
    ]
    assert rows  # the probe mmap-8 at least
    for r in rows:
        key = f"cmp {r.row} p50"
        tex = [values[f"{key} {k}"] for k in ("base", "new", "change", "change low", "change high")]
        line = next(x for x in summary.splitlines() if x.split()[:1] == [r.row])
        printed = numbers(line.split(None, 2)[2])
        # The report prints the change in mmtests' sign (positive = better), the paper
        # new/base − 1: the same digits, negated and the bounds swapped for lower-is-better.
        paper_change = numbers(" ".join(tex[2:]))
        if not r.higher_is_better:
            paper_change = [_negated(n) for n in (paper_change[0], *paper_change[:0:-1])]
        assert printed[:5] == numbers(" ".join(tex[:2])) + paper_change, line
        assert printed[5] == numbers(values[f"{key} q"])[0], line
        # The latency section states the change in mmtests' sign (positive = better).
        block = report[report.index(f"\n{r.row} (") :]
        m = re.search(r"HD-50 change (\S+)% \[(\S+), (\S+)\]", " ".join(block.split()))
        assert m, block[:400]
        flip = (lambda n: n.removeprefix("-") if n.startswith("-") else f"-{n}") if (
            not r.higher_is_better
        ) else (lambda n: n)  # fmt: skip
        change, low, high = (flip(n) for n in numbers(" ".join(tex[2:])))
        expected = [change, *((high, low) if not r.higher_is_better else (low, high))]
        assert numbers(" ".join(m.groups())) == expected


def _negated(number: str) -> str:
    return number.removeprefix("-") if number.startswith("-") else f"-{number}"


def test_hodges_lehmann_shift_prints_the_same_digits(outputs):
    # The paper quotes the probe's shift (new - base, in the row's unit); the report says
    # it in mmtests' sign (positive = better), so a lower-is-better row's is negated.
    study, report, _, _, paper, _ = outputs
    values = paper["comparison"]
    rows = [r for r in decided(study.latency) if f"cmp {r.row} p50 hl" in values]
    assert rows
    for r in rows:
        tex = numbers(" ".join(values[f"cmp {r.row} p50 {k}"] for k in ("hl", "hl low", "hl high")))
        block = " ".join(report[report.index(f"\n{r.row} (") :].split())
        m = re.search(r"Hodges–Lehmann shift of run medians (\S+) \[(\S+), (\S+)\] (\S+)", block)
        assert m and m[4] == r.unit, block[:600]
        printed = numbers(" ".join(m.groups()[:3]))
        if not r.higher_is_better:
            neg = [n.removeprefix("-") if n.startswith("-") else f"-{n}" for n in printed]
            printed = [neg[0], neg[2], neg[1]]
        zero = lambda ns: [re.sub(r"^-(0(\.0*)?)$", r"\1", n) for n in ns]  # noqa: E731
        assert zero(printed) == zero(tex), (r.row, m[0])


def test_ops_rows_print_the_same_means_and_sds(outputs):
    study, report, _, _, paper, _ = outputs
    section = report.split("== Reclaim Ops from /proc/vmstat ==", 1)[1].split("\n\n")[1]
    lines = section.splitlines()
    printed = {}
    for head, below in itertools.pairwise(lines):
        m = re.match(r"(\S.*?)\s{2,}(\S.*)$", head)
        if m and below.strip().startswith("±"):
            means = numbers(m[2])[: len(study.runs)]
            printed[m[1]] = [n for pair in zip(means, numbers(below), strict=True) for n in pair]
    tex = {}
    for line in paper["ops"].splitlines():
        if " & $" in line:
            label, cells = line.split(" & ", 1)
            tex[label.replace("\\%", "%")] = numbers(cells)
    assert len(tex) >= 10 and tex.keys() <= printed.keys(), tex.keys() - printed.keys()
    for label, cells in tex.items():
        assert printed[label] == cells, label


def test_json_carries_the_same_results(outputs):
    study, _, json, _, _, _ = outputs
    assert [f["run"] for f in json["throttle_fits"]] == [f.run for f in study.fits]
    assert json["throttle"] is study.throttle
    rows = json["latency"]["rows"]
    assert [(r["row"], r["change"], r["q"]) for r in rows] == [
        (r.row, r.change, r.q) for r in decided(study.latency)
    ]


# What a study (or the seed module the paper fits seed 000 with) computes, by function name:
# a notebook that shows one of these quantities takes it from ``Study`` (notebook 01:
# ``study.ops``) or ``seeds.throttle.seed_groups`` (notebook 03), never recomputes it with
# its own arguments, so the notebook, the report and the paper print one set of digits.
RECOMPUTED = re.compile(
    r"\b(compare_runs|latency_comparison|run_fits|run_throttle_table|run_stall_table"
    r"|shrinker_replays|fit_throttle_groups)\("
)


def test_no_notebook_recomputes_a_study_result():
    calls = {p.name: RECOMPUTED.findall(p.read_text()) for p in (REPO / "notebooks").glob("*.py")}
    assert {name: found for name, found in calls.items() if found} == {}
    assert RECOMPUTED.findall("print(format_comparison(compare_runs(runs)))") == ["compare_runs"]
    assert RECOMPUTED.findall("print(format_comparison(study.ops))") == []
