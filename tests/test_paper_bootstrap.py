"""The bootstrap numbers the paper prints are stable to their printed digit (issue 22): the
same data with two bootstrap seeds print the same text.

- The G² goodness-of-fit p of the fits (``fit_bootstrap=BOOTSTRAP`` replicates), which
  the paper prints through each group's lack-of-fit caution: seed 000's kswapd group
  (p near 0.03, the one a seed flipped at 20 replicates; 8 s a seed, so the only one
  refitted here); a p no replicate reaches prints its bound 1/(B+1), the same for every
  seed by construction.
- The A/B latency change and its two-stage bootstrap CI of every row and statistic
  (``Study``'s ``resamples``), as the paper's comparison section prints them.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import replace

import polars as pl

from analysis.ingest import benchmarks, histogram
from analysis.ingest.events import THROTTLED
from analysis.metrics import pairing, throttle
from analysis.report.paper.fits import BOOTSTRAP
from analysis.report.units import change
from analysis.seeds.throttle import SEED_LABELS, SEED_MAIL
from analysis.stats.fit import GroupFit, fit_throttle_groups, lack_of_fit
from analysis.stats.significance import METRICS, compare_table
from analysis.study.latency import LEVEL
from analysis.study.study import Study
from tests.conftest import DATA

AB_RUNS = (DATA / "stutterp-aa2", DATA / "stutterp-ab-dirty5")


def _printed_p(text: str | None) -> str:
    """The verdict and p as the caution prints them, without the seed-dependent count."""
    if text is None:
        return "not rejected"
    m = re.search(r"\(p (= 1/\d+ = )?([\d.e-]+) <= ([\d.]+)", text)
    assert m, text
    return f"rejected, p {m[1] or ''}{m[2]}"


def _kswapd_writeback(seed: int) -> GroupFit:
    events = throttle.throttle_events(
        histogram.read(SEED_MAIL, labels=SEED_LABELS), pairing.all_intervals({})
    ).filter(pl.col("event") == THROTTLED)
    chosen = events.filter(
        pl.col("reason").str.contains("WRITEBACK") & (pl.col("context") == "kswapd")
    )
    jiffy = throttle.infer_hz(events).jiffy_us
    (group,) = fit_throttle_groups(chosen, jiffy, bootstrap=BOOTSTRAP, seed=seed)
    assert isinstance(group, GroupFit)
    return group


def test_goodness_of_fit_p_agrees_between_seeds_to_its_printed_digit():
    first, second = _kswapd_writeback(0), _kswapd_writeback(1)
    assert _printed_p(first.lack_of_fit) == _printed_p(second.lack_of_fit) == "rejected, p 0.03"
    # The counts differ by seed, within the Monte-Carlo error the caution states.
    assert "Monte-Carlo se 0.01" in first.lack_of_fit
    # A p no replicate reaches prints the bound 1/(B+1), whatever the seed.
    floor = replace(first.best, g2_p=1 / (BOOTSTRAP + 1))
    assert _printed_p(lack_of_fit(floor, BOOTSTRAP)) == "rejected, p = 1/201 = 0.005"


def test_latency_change_cis_agree_between_seeds_to_their_printed_digit():
    table = benchmarks.load_runs(AB_RUNS).table
    kernels = list(dict.fromkeys(table["kernel"]))
    resamples = Study.__dataclass_fields__["resamples"].default

    def printed(seed: int) -> list[tuple[str, str, str]]:
        # As the report and the paper round a change and its CI (units.decimals_at).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [
                (metric, r.row, change(r.change, *(r.change_ci or (None, None))))
                for metric in METRICS
                for r in compare_table(
                    table, kernels[0], kernels[1:], metric, LEVEL, None, resamples, seed
                )
            ]

    first = printed(0)
    assert len(first) >= 4 and any("[" in c[2] for c in first)
    assert printed(1) == first
