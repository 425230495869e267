"""The one number formatter (``analysis.report.units``): one scale per row, digits at
the uncertainty. Expected strings are worked by hand from the rules in the module
docstring (benchunit's CommonScale; the PDG rounding rule), not read off the code."""

from __future__ import annotations

import doctest
import math

import pytest

from analysis.report import units
from analysis.report.paper import latex
from analysis.report.text import path_lines
from analysis.report.units import (
    Scale,
    change,
    common_scale,
    interval,
    percent,
    plus_minus,
    uncertainty_decimals,
)


def test_a_row_spanning_three_decades_is_printed_in_one_unit():
    # 1.2e3 .. 4.5e6 ns: the smallest, 1.2 us, decides; ms would print it as 0.0012.
    row = [1.2e3, 5.6e4, 3.3e5, 4.5e6]
    scale = common_scale(row, "ns")
    assert (scale.unit, scale.factor) == ("us", 1e3)
    assert [scale.text(v) for v in row] == ["1.20", "56.0", "330", "4500"]
    # The same row in ms stays ms: a scale never goes below the given unit.
    assert common_scale([v / 1e6 for v in row], "ms").unit == "ms"


def test_bytes_and_counts_scale_by_their_own_ladders():
    assert common_scale([3 * 2**20, 5 * 2**30], "B").unit == "MiB"
    assert common_scale([109855.0, 5481633.0], "KiB").unit == "MiB"
    pages = common_scale([426467.0, 1039349.0], "pages")
    # A count keeps its unit in the header and carries k/M in the cell, as benchstat.
    assert (pages.unit, pages.suffix) == ("pages", "k")
    assert pages.text(1039349.0, 175531.0) == "1040k"
    # Shares are never rescaled.
    assert common_scale([0.5, 30.0], "%").factor == 1.0


def test_digits_follow_the_uncertainty_not_the_value():
    # The example: 1626.9006 us beside ±430223 us shows no digit below 100 ms.
    scale = common_scale([1626.9006], "us")
    assert (scale.unit, scale.text(1626.9006, uncertainty=430223.0)) == ("ms", "0")
    assert scale.uncertainty(430223.0) == "±400"
    assert plus_minus(1626.9006, 430223.0) == "0 ± 400000"
    assert (plus_minus(1626.9006, 23.1), plus_minus(1626.9006, 43.1)) == ("1627 ± 23", "1630 ± 40")
    # PDG: leading digits 100-354 keep two digits of the uncertainty, 355-949 one,
    # 950-999 round up to two digits of the next decade.
    assert [uncertainty_decimals(u) for u in (0.0123, 0.0456, 0.0987)] == [3, 2, 2]
    assert plus_minus(12.3456, 0.0123) == "12.346 ± 0.012"
    assert plus_minus(12.3456, 0.0456) == "12.35 ± 0.05"
    # A CI: the estimate and both ends at two digits of the smaller half-width.
    assert interval(566.93, 480.2, 690.1) == "567 [480, 690]"
    assert interval(5.6734, 5.22, 6.15) == "5.67 [5.22, 6.15]"
    assert interval(5.6734, 5.22, math.inf) == "5.67"
    assert change(19.67, -1.90, 45.97) == "+20% [-2, +46]"
    assert change(-0.1234, -0.3456, 0.1111) == "-0.12% [-0.35, +0.11]"


def test_report_and_paper_round_a_mean_and_sd_alike():
    # The report's plus_minus and the paper's pm are one rule in two notations.
    for mean, sd in ((967.4, 228.1), (0.254, 0.07), (64.33, 3.9), (12345.6, 2345.6)):
        plain = plus_minus(mean, sd)
        tex = latex.pm(mean, sd)
        # The paper groups thousands with {,}; the digits are the same.
        assert tex.replace("{,}", "") == "$" + plain.replace("±", "\\pm") + "$"


def test_a_percent_without_an_uncertainty_keeps_three_digits_and_two_decimals_at_most():
    assert [percent(v) for v in (-490.0, 30.0833, 0.669, -0.00449)] == [
        "-490",
        "30.1",
        "0.67",
        "0.00",
    ]
    assert change(0.1234) == "+0.12%" and change(45.45) == "+45.5%"


def test_missing_values_print_a_dash():
    assert Scale("ms").text(None) == Scale("ms").text(math.nan) == "-"
    assert plus_minus(None, 1.0) == interval(None, 1.0, 2.0) == change(None) == "-"


@pytest.mark.parametrize("module", [units, latex], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_a_pair_side_by_side_keeps_the_digits_its_difference_needs():
    """The mmtests-shaped block's base and new values: three significant digits each, or
    more when that would print two different values alike (elapsed 34.307 vs 34.267 s
    printed 34.3 twice beside a 0.12 % change). Worked by hand: the difference 0.04 s
    needs three decimals for two significant digits; 1013 us needs none."""
    assert Scale("s").pair(34.307, 34.267) == ("34.307", "34.267")
    assert Scale("us").pair(1741.2, 2754.3) == ("1741", "2754")
    # Never fewer digits than the value's own three significant ones.
    assert Scale("s").pair(0.0321, 0.00577) == ("0.0321", "0.00577")
    # At most four decimals are added, mmtests' resolution: 1e-9 apart stays at 4.
    assert Scale("s").pair(34.000000001, 34.0) == ("34.0000", "34.0000")
    assert Scale("s").pair(None, 1.5) == ("-", "1.50")


def test_an_end_at_the_estimate_is_rounded_at_the_other_end():
    # 0 of 2117 sleeps at the timeout: Wilson 95 % CI [0, 0.0018]; rounded at two
    # significant digits of 0.0018 (four decimals), not three digits of the estimate 0.
    assert units.interval_texts(0.0, 0.0, 0.00181) == ("0.0000", "0.0000", "0.0018")
    assert interval(5.0, 5.0, 5.5) == "5.00 [5.00, 5.50]"


def test_a_probability_near_zero_keeps_its_digits_in_e_notation():
    # 3.4e-7 with CI [1.2e-8, 1.366e-5]: two significant digits of the smaller half-width
    # 3.3e-7 is the 8th decimal; past six decimals, e-notation down to that place.
    assert units.interval_texts(3.4e-7, 1.2e-8, 1.366e-5) == ("3.4e-07", "1e-08", "1.366e-05")
    assert latex.number("3.4e-07") == "\\ensuremath{3.4{\\times}10^{-7}}"
    # Report columns and paper cells of a mean and sd over iterations: one rule.
    assert units.mean_sd_texts(5633.0, 970.0, Scale("ms", 1e3)) == ("5.6", "1.0")
    assert latex.pm(5.633, 0.970) == "$5.6 \\pm 1.0$"


def test_latex_escape_turns_plain_relations_into_one_sign():
    # The fit's lack-of-fit caution says "p 0.03 <= 0.05" on the command line; in the
    # paper "<" alone became $<$ followed by a literal "=".
    assert latex.escape("p 0.03 <= 0.05") == r"p 0.03 $\leq$ 0.05"
    assert latex.escape("n >= 5, 10% of n_max") == r"n $\geq$ 5, 10\% of n\_max"
    assert latex.escape("a < b") == "a $<$ b"


@pytest.mark.parametrize("tail", ["", " -- 0 unparsed lines", " -- " + "x" * 70])
@pytest.mark.parametrize(
    "path",
    ["data/x.zst", "/" + "/".join(["segment"] * 20) + "/file.zst", "/" + "n" * 90 + "/f"],
)
def test_path_lines_keep_every_character_within_80_columns(path: str, tail: str) -> None:
    lines = path_lines(path, "== ", tail)
    rejoined = lines[0].removeprefix("== ") + "".join(
        line.removeprefix("    ") for line in lines[1:]
    )
    # Every character of the path, in order, nothing added; the tail whole after it (on a
    # line of its own, without its leading blank, when the last line has no room).
    assert rejoined in (path + tail, path + tail.lstrip())
    # Only a single name longer than a line may pass 80 columns.
    assert all(len(line) <= 80 or "/" not in line.strip()[:-1] for line in lines)
    assert len(lines) == 1 or len(lines[0]) + len(lines[1].split("/")[0]) + 1 > 80
