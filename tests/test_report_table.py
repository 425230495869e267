"""The table renderer and the JSON encoder that every command's output goes through.

Layouts are worked out by hand (column widths = the longest cell, one space between
columns, numbers right-aligned); the comparison case uses the bundled dirty20/dirty5 runs.
"""

from __future__ import annotations

import csv
import dataclasses
import doctest
import io
import json
import re
from pathlib import Path

import polars as pl
import pytest

from analysis.ingest.mmtests import find_runs
from analysis.metrics.compare import compare_runs
from analysis.report import json_output, table
from analysis.report.json_output import NonFiniteError, dumps, jsonable
from analysis.report.ops import format_comparison
from analysis.report.paper.latex import latex_table, table_tex
from analysis.report.table import WIDTH, Column, Footnotes, Table, render
from analysis.report.units import fixed
from tests.conftest import DATA

ANSI = re.compile(r"\x1b\[")


def test_layout_by_hand():
    columns = [Column("name", left=True), Column("pages", width=6), Column("eff%")]
    rows = [("kswapd", "1234", fixed(76.5234, 2)), ("direct", None, fixed(float("nan"), 2))]
    # name: 6 wide ("kswapd"); pages: min 6; eff%: 5 ("76.52"); one space between.
    assert render(columns, rows) == [
        "name    pages  eff%",
        "kswapd   1234 76.52",
        "direct      -     -",
    ]


def test_spans_right_aligned_over_their_columns_keeping_the_end():
    columns = [Column(left=True), Column(width=4), Column(width=4)]
    lines = render(columns, [("a", "1", "2")], spans=[("", 1), ("6.18-rc1-vanilla", 2)])
    # The span covers 4 + 1 + 4 = 9 characters: the title keeps its last 9.
    assert lines == ["  1-vanilla", "a    1    2"]


def test_multi_line_cells_and_indent():
    lines = render([Column(left=True), Column()], [("mean", "10.00\n±2.5")], indent=2)
    assert lines == ["  mean 10.00", "        ±2.5"]


def test_a_limited_column_abbreviates_visibly_never_cuts_silently():
    # Issue 20: "super_cache_scan+0x0/" was a symbol cut at the column's edge.
    (line,) = render([Column(left=True, limit=20)], [("super_cache_scan+0x0/0x1a0",)])
    assert line == "super_ca...0x0/0x1a0" and len(line) == 20


def test_footnotes_number_each_reason_once():
    notes = Footnotes()
    marks = [notes.mark(r) for r in ("nothing scanned", "no counter", "nothing scanned")]
    assert marks == ["[1]", "[2]", "[1]"]
    assert notes.lines() == ["[1] nothing scanned", "[2] no counter"]


def test_too_wide_tables_fold_text_but_never_numbers():
    long_name = "super_cache_scan+0x0/0x1a0 " * 3
    rows = [(long_name, "123456789012"), ("short", "7")]
    lines = render([Column("shrinker", left=True), Column("scanned")], rows)
    assert max(map(len, lines)) <= WIDTH
    assert any(line.endswith(" 123456789012") for line in lines)
    assert "".join(line[: len(line) - 13].strip() for line in lines[1:3]).startswith(
        "super_cache_scan"
    )


def test_plain_text_whatever_the_environment(monkeypatch):
    rows = [("a", "1")]
    plain = render([Column("x", left=True), Column("y")], rows)
    for name, value in {"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLUMNS": "200"}.items():
        monkeypatch.setenv(name, value)
    assert render([Column("x", left=True), Column("y")], rows) == plain
    assert not any(ANSI.search(line) for line in plain)


@dataclasses.dataclass(frozen=True)
class _Row:
    label: str
    mean: float | None
    values: tuple[float, ...]


def test_json_encodes_results_and_refuses_nan_and_infinity_where_they_are():
    frame = pl.DataFrame({"pages": [1.0, None], "ctx": ["kswapd", "direct"]})
    obj = {"row": _Row("eff", None, (1.0, 2.0)), "frame": frame, "path": Path("a/b")}
    assert jsonable(obj) == {
        "row": {"label": "eff", "mean": None, "values": [1.0, 2.0]},
        "frame": [{"pages": 1.0, "ctx": "kswapd"}, {"pages": None, "ctx": "direct"}],
        "path": "a/b",
    }
    assert json.loads(dumps(obj))["row"]["mean"] is None
    # NaN and infinities are refused, naming where they are: never NaN, never a silent null.
    bad = {"rows": [_Row("eff", float("nan"), ())]}
    with pytest.raises(NonFiniteError, match=r"^\$\.rows\[0\]\.mean is nan: JSON has no NaN"):
        dumps(bad)
    nan_frame = pl.DataFrame({"x": [1.0, float("inf")]})
    with pytest.raises(NonFiniteError, match=r"^\$\[1\]\.x is inf"):
        dumps(nan_frame)
    with pytest.raises(TypeError, match=r"\$\.s: no JSON form for set"):
        jsonable({"s": {1, 2}})


def test_every_json_printer_goes_through_the_encoder():
    """Issue 20: 7 of 13 ``--json`` printers called json.dumps themselves."""
    commands = Path(__file__).resolve().parent.parent / "analysis" / "commands"
    own = [p.name for p in commands.glob("*.py") if "json.dump" in p.read_text()]
    assert own == []


def test_comparison_of_three_runs_in_pairwise_blocks():
    dirty20, dirty5 = (find_runs(DATA / f"stutterp-{n}")[0] for n in ("dirty20", "dirty5"))
    again = dataclasses.replace(dirty5, name="dirty5-again")
    text = format_comparison(compare_runs((dirty20, dirty5, again)))
    lines = text.splitlines()
    assert max(map(len, lines)) <= WIDTH
    assert not any(ANSI.search(line) for line in lines)
    # Two blocks, each headed by the first run and one other.
    heads = [line.split() for line in lines if line.strip().startswith("dirty20")]
    assert heads == [
        ["dirty20", "dirty5", "better"],
        ["dirty20", "dirty5-again", "better"],
    ]
    # Rows with no value anywhere ("nothing scanned" in both blocks) are named once below.
    omitted = [line for line in lines if line.startswith("Omitted, no value")]
    assert sum("(nothing scanned)" in line for line in omitted) == 1
    assert not any(line.startswith("Kswapd efficiency %") for line in lines)
    # The same run twice: identical means and % change in both blocks; means from the
    # golden report, % change by mmtests' rule for lower-is-better rows.
    faults = [line for line in lines if line.startswith("Minor Faults")]
    assert len(faults) == 2 and faults[0] == faults[1]
    change = 100 - 2038349.00 * 100 / 2915172.00
    # 2038349 ± 294869 pages: one M scale for the row, rounded at the sd (0.29M).
    # The % change to three digits (30.08... -> 30.1), at most two decimals.
    assert faults[0].endswith(f"2.04M ({change:7.1f}%) lower") and round(change, 1) == 30.1


@pytest.mark.parametrize("module", [table, json_output], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def _table() -> Table:
    """Throttle-like rows with a name LaTeX must escape, a missing cell and a ± cell."""
    columns = (
        Column("reason", left=True),
        Column("events/iter"),
        Column("p99", unit="ms", better="lower"),
        Column("zero", unit="%", better="higher"),
    )
    rows = (("WRITE_BACK", "970 ± 230", "61 ± 25", "30.9"), ("NOPROGRESS", "12", None, "0"))
    return Table(columns, rows, notes=("[1] no closed stall",))


def test_every_renderer_of_one_table_carries_the_same_cells():
    t = _table()
    expected = [
        ["reason", "events/iter", "p99 ms", "zero %"],
        ["WRITE_BACK", "970 ± 230", "61 ± 25", "30.9"],
        ["NOPROGRESS", "12", "-", "0"],
    ]
    md = t.markdown().splitlines()
    assert [[c.strip() for c in line.strip("|").split("|")] for line in md[:1] + md[2:4]] == (
        expected
    )
    assert md[1] == "|:---|---:|---:|---:|"
    assert list(csv.reader(io.StringIO(t.csv()))) == expected
    tex = latex_table(t, "Throttling", "tab:t").splitlines()
    body = [tex[6], *tex[8:10]]

    def unescape(cell: str) -> str:
        return cell.strip().removesuffix("\\\\").strip().replace("\\_", "_").replace("\\%", "%")

    assert [[unescape(c) for c in line.split(" & ")] for line in body] == expected
    assert tex[4] == "\\begin{tabular}{lrrr}"
    # The directions of better and the notes travel with the table in every form.
    directions = ["Lower is better: p99 ms.", "Higher is better: zero %."]
    assert t.text()[-3:] == [*directions, "[1] no closed stall"]
    assert md[-3:] == [*directions, "[1] no closed stall"]
    assert "Lower is better: p99 ms. Higher is better: zero \\%. [1] no closed stall" in tex[12]


def test_text_keeps_the_layout_of_render():
    t = _table()
    assert t.text()[:3] == [
        "reason     events/iter  p99 ms zero %",
        "WRITE_BACK   970 ± 230 61 ± 25   30.9",
        "NOPROGRESS          12       -      0",
    ]


def test_paper_tables_of_latex_cells_render_as_before():
    tex = table_tex(["run", "$p$"], [["a", "$0.3$"]], "lr", "Cap", "tab:x")
    assert "run & $p$ \\\\\n\\midrule\na & $0.3$ \\\\\n\\bottomrule" in tex
    with pytest.raises(ValueError, match="one l or r per column"):
        table_tex(["run", "p"], [["a", "1"]], "l", "Cap", "tab:x")
