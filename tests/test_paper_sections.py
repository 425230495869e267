"""The paper's fits section and the report's fits section, checked against computations
from the raw trace text (grep) and seed 000's published histogram."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from analysis.ingest.mmtests import find_runs
from analysis.report.paper.fits import (
    aic_table,
    cautions,
    fit_values,
    observables_table,
    shown_groups,
)
from analysis.report.paper.latex import escape
from analysis.report.throttle_fits import format_run_fits
from analysis.seeds import throttle as seed_throttle
from analysis.seeds.checks import SEEDS
from analysis.seeds.throttle import SEED_MAIL
from analysis.stats.fit import fit_group, jiffy_data
from analysis.study.study import Study
from tests.conftest import DATA, MAIL, throttled_lines

# The A/B runs of the paper (Makefile AB_RUNS), whose fits sections/ab-fits.tex describes.
RUNS = ("stutterp-aa2", "stutterp-ab-dirty5")
FIELDS = re.compile(r"usec_timeout=(\d+) usect_delayed=(\d+) reason=(\S+)")


def test_packaged_seed_mail_is_the_bundled_one_byte_for_byte():
    # An installed mmlab reads seed 000 from its package, never from a repository's data/.
    assert SEED_MAIL.is_relative_to(Path(seed_throttle.__file__).parent)
    assert SEED_MAIL.read_bytes() == (MAIL / SEEDS["000"]).read_bytes()


@pytest.fixture(scope="module")
def data() -> Study:
    return Study(tuple(run for name in RUNS for run in find_runs(DATA / name)))


@pytest.fixture(scope="module")
def shown(data):
    return shown_groups(data, bootstrap=3)


def _grep_groups(run) -> Counter:
    """(timeout, delay, reason) → sleeps of a run, from the raw trace text."""
    out: Counter = Counter()
    for it in run.iterations:
        for line in throttled_lines(it.path):
            timeout, delay, reason = FIELDS.search(line).groups()
            out[(int(timeout), int(delay), reason)] += 1
    return out


def test_base_macros_equal_a_fit_of_the_grepped_delays(data, shown):
    groups = _grep_groups(data.runs[0])
    ((timeout, reason),) = {(t, r) for t, _, r in groups}
    delays = sorted((d, c) for (_, d, _), c in groups.items())
    direct = fit_group(
        jiffy_data(
            [d for d, _ in delays], [c for _, c in delays], timeout_us=timeout, jiffy_us=4000
        )
    )
    values = fit_values(shown)
    key = f"fit base memcg {reason.removeprefix('VMSCAN_THROTTLE_').lower()}"
    assert values[f"{key} n"] == str(sum(groups.values()))
    assert values[f"{key} timeouts"] == str(sum(c for (t, d, _), c in groups.items() if d >= t))
    assert values[f"{key} best"] == escape(direct.best.name)
    mean = direct.observables["restricted_mean_usec"].estimate / 1000
    assert _agrees(values[f"{key} mean ms"], mean)
    p = direct.observables["p_timeout"].estimate
    assert _agrees(values[f"{key} p timeout"], p)


def _agrees(macro: str, value: float) -> bool:
    """The estimate a macro prints first (``5.44``, ``3.4 \\times 10^{-7}``) is ``value``
    rounded at its printed digit."""
    match = re.search(r"(-?\d+(?:\.(\d+))?)(?:\s*\{?\\times\}?\s*10\^\{(-?\d+)\})?", macro)
    assert match, macro
    mantissa, decimals, exponent = match.groups()
    power = 10.0 ** int(exponent or 0)
    return abs(float(mantissa) * power - value) <= 0.5 * 10.0 ** -len(decimals or "") * power


def test_seed_000_kswapd_group_is_the_mails_histogram(shown):
    # The mail's kswapd block: 244 sleeps, 11 of them at the 100 ms timeout.
    values = fit_values(shown)
    assert values["fit seed kswapd writeback n"] == "244"
    assert values["fit seed kswapd writeback timeouts"] == "11"
    assert values["fit seed kswapd writeback timeout ms"] == "100"


def test_tables_have_one_row_per_fitted_group(data, shown):
    # dirty20 and dirty5 throttle for one reason each; seed 000 has four throttled blocks.
    expected = sum(len({(t, r) for t, _, r in _grep_groups(run)}) for run in data.runs) + 4
    assert len(shown) == expected
    aic = aic_table(shown)
    observables = observables_table(shown)
    for s in shown:
        assert aic.count(f"{escape(s.label)} &") == 1
        assert observables.count(f"{escape(s.label)} &") == 1
    # The best model of every group is bold, at dAIC zero.
    assert aic.count("\\textbf{0.0}") == expected


def test_each_group_sentence_of_the_prose_applies_to_its_fit(shown):
    """sections/ab-fits.tex gives each group a sentence that holds for its fit: the two
    runs' sleeps were never censored and have iterations, the seed groups' medians are
    zero (isolated), infinite (noprogress), past the timeout (direct writeback) and
    finite below it (kswapd writeback). If a fit changes, this fails and the prose must
    be rewritten."""
    fits = {s.key: s for s in shown}
    assert set(fits) == {
        "base memcg writeback",
        "new memcg writeback",
        "seed direct isolated",
        "seed direct noprogress",
        "seed direct writeback",
        "seed kswapd writeback",
    }
    for key in ("base memcg writeback", "new memcg writeback"):
        assert fits[key].fit.data.counts[-1] == 0 and fits[key].spread is not None
    median = {k: s.fit.observables["q0.5"].estimate for k, s in fits.items()}
    assert median["seed direct isolated"] == 0
    assert median["seed direct noprogress"] == float("inf")
    timeout = {k: s.fit.data.timeout_us for k, s in fits.items()}
    assert median["seed direct writeback"] > timeout["seed direct writeback"]
    assert 0 < median["seed kswapd writeback"] <= timeout["seed kswapd writeback"]
    assert fits["seed kswapd writeback"].fit.data.counts[-1] > 0
    # The macros of a sentence exist only where it applies.
    values = fit_values(shown)
    assert "fit base memcg writeback p timeout data high" in values
    assert "fit seed kswapd writeback p timeout data high" not in values
    assert "fit seed direct isolated p zero" in values
    assert "fit base memcg writeback p zero" not in values


def test_cautions_list_every_note_of_the_fits(shown):
    text = cautions(shown)
    notes = [n for s in shown if hasattr(s.fit, "identifiability") for n in s.fit.identifiability]
    assert notes and all(escape(n) in text for n in notes)
    assert text.count("\\item[--]") >= len(notes)


def test_report_fits_section_is_mail_ready_and_counts_timeouts(data):
    text = format_run_fits(data.fits)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "\x1b" not in text
    for run in data.runs:
        groups = _grep_groups(run)
        n = sum(groups.values())
        at_timeout = sum(c for (t, d, _), c in groups.items() if d >= t)
        assert f"{run.name}: WRITEBACK, memcg, timeout 100 ms, n={n} sleeps" in text
        assert f"data: {at_timeout} of {n} at the timeout" in text
