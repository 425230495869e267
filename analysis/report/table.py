"""Plain-text tables: the one renderer every ``mmlab`` table goes through.

Modelled on Go's benchstat (``texttab``): numbers right-aligned, text left-aligned, optional
titles spanning several columns (a run over its mean and % columns), and missing values
printed as ``-`` with a numbered reason under the table, each reason numbered once
(:class:`Footnotes`). Layout is done by rich without colour or terminal detection, so the
output is the same plain text on a terminal, in a pipe and in a notebook; every line fits
:data:`WIDTH` columns and has no trailing spaces.

Cells are strings (``None`` prints ``-``); a cell with a newline takes several lines, as
the ``±`` sd under a mean does. Numbers are formatted with :func:`num` and :func:`pct`.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analysis.report.text import WIDTH

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "WIDTH",
    "Column",
    "Footnotes",
    "change_digits",
    "estimate_digits",
    "num",
    "pct",
    "plus_minus",
    "render",
    "sig",
    "wrapped",
]

MISSING = "-"


def num(value: float | int | None, digits: int = 2, width: int | None = None) -> str:
    """``value`` with ``digits`` decimals (integers as they are); ``-`` for None or NaN.

    A float longer than ``width`` characters falls back to 6 significant digits:

    >>> num(3.14159), num(7), num(None), num(float("nan")), num(1.5e12, width=12)
    ('3.14', '7', '-', '-', '1.5e+12')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, int):
        return str(value)
    text = f"{value:.{digits}f}"
    return f"{value:.6g}" if width is not None and len(text) > width else text


def pct(percent: float | None, digits: int = 2, width: int = 0) -> str:
    """A percentage (already ×100), padded to ``width`` before the sign; ``-`` when missing.

    >>> pct(30.0833), pct(-5.3, width=7), pct(None)
    ('30.08%', '  -5.30%', '-')
    """
    return MISSING if percent is None else f"{percent:{width}.{digits}f}%"


def estimate_digits(value: float) -> int:
    """Decimals of a latency estimate, the same in the report and the paper: 0 from 1000
    up, 1 from 100, else 2 (a run-level median moves in its 3rd-4th digit between runs).

    >>> [estimate_digits(v) for v in (1626.9, 216.61, 11.47)]
    [0, 1, 2]
    """
    return 0 if abs(value) >= 1000 else 1 if abs(value) >= 100 else 2


def change_digits(percent: float) -> int:
    """Decimals of a % change (report and paper): 1 from 10 % up, else 2.

    >>> change_digits(-36.8), change_digits(2.97)
    (1, 2)
    """
    return 1 if abs(percent) >= 10 else 2


def sig(value: float | None, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits (p and q values); ``-`` when missing.

    >>> sig(0.31234), sig(0.000123), sig(None)
    ('0.312', '0.000123', '-')
    """
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{value:.{digits}g}"


def plus_minus(mean: float | None, sd: float | None, digits: int) -> str:
    """``mean ± sd`` with ``digits`` decimals (the paper's ``pm`` in plain text); the mean
    alone without an sd; ``-`` without a mean.

    >>> plus_minus(352.8, 127.6, 0), plus_minus(5.62, None, 1), plus_minus(None, 1.0, 1)
    ('353 ± 128', '5.6', '-')
    """
    if mean is None:
        return MISSING
    text = f"{mean:.{digits}f}"
    return text if sd is None else f"{text} ± {sd:.{digits}f}"


def wrapped(text: str, indent: str = "    ") -> list[str]:
    """``text`` as lines of at most :data:`WIDTH` columns, continuation lines indented."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


class Footnotes:
    """Numbered reasons under a table (benchstat's notes): each reason numbered once.

    >>> notes = Footnotes()
    >>> notes.mark("nothing scanned"), notes.mark("no vmstat"), notes.mark("nothing scanned")
    ('[1]', '[2]', '[1]')
    >>> notes.lines()
    ['[1] nothing scanned', '[2] no vmstat']
    """

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def mark(self, reason: str) -> str:
        """The marker to put beside a cell that ``reason`` explains."""
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"[{self.reasons.index(reason) + 1}]"

    def lines(self) -> list[str]:
        """One wrapped line per reason, in the order first marked."""
        return [
            line
            for i, reason in enumerate(self.reasons, start=1)
            for line in wrapped(f"[{i}] {reason}")
        ]


@dataclass(frozen=True)
class Column:
    """One column: header (may hold a newline), minimum width in characters, alignment.

    ``limit`` cuts longer cells to that many characters (names such as shrinker symbols,
    never numbers). Columns are separated by one space.
    """

    header: str = ""
    width: int = 0
    left: bool = False
    limit: int | None = None


def _cell(text: str | None, column: Column) -> str:
    text = MISSING if text is None else text
    if column.limit is None:
        return text
    return "\n".join(line[: column.limit] for line in text.split("\n"))


def _width(column: Column, cells: Iterable[str]) -> int:
    lines = [line for text in cells for line in text.split("\n")]
    return max([column.width, *(len(line) for line in [*column.header.split("\n"), *lines])])


def render(
    columns: Sequence[Column],
    rows: Iterable[Sequence[str | None]],
    *,
    spans: Sequence[tuple[str, int]] = (),
    indent: int = 0,
) -> list[str]:
    """The lines of a table of ``rows`` (one cell per column).

    The header line is left out when no column has a header. ``spans`` puts a title line
    above the headers, each ``(title, n)`` right-aligned over the next ``n`` columns (its
    start cut when too long: run names differ at the end). ``indent`` shifts the table
    right. When the table would be wider than :data:`WIDTH`, text columns wrap; numbers
    never do.
    """
    from rich.table import Table
    from rich.text import Text

    body = [[_cell(text, col) for text, col in zip(row, columns, strict=True)] for row in rows]
    widths = [_width(col, (row[i] for row in body)) for i, col in enumerate(columns)]
    # Left padding 1 separates columns; the first column has none (pad_edge=False).
    table = Table(
        box=None,
        show_header=any(col.header for col in columns),
        pad_edge=False,
        padding=(0, 0, 0, 1),
        header_style=None,
    )
    for col, width in zip(columns, widths, strict=True):
        # rich narrows only columns without a fixed width: text may wrap, numbers keep theirs.
        table.add_column(
            Text(col.header, justify="left" if col.left else "right"),
            width=None if col.left else width,
            min_width=col.width if col.left else None,
            justify="left" if col.left else "right",
            no_wrap=not col.left,
            overflow="fold",
        )
    for row in body:
        table.add_row(*(Text(text) for text in row))
    lines = []
    if spans:
        lines += _text(_span_table(spans, widths), WIDTH - indent)
    lines += _text(table, WIDTH - indent)
    return [" " * indent + line if line else line for line in lines]


def _span_table(spans: Sequence[tuple[str, int]], widths: list[int]) -> Table:
    """A one-row table whose columns each cover ``n`` columns of the main table."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 0, 0, 1))
    start, titles = 0, []
    for title, n in spans:
        # n columns and the n - 1 separators between them.
        width = sum(widths[start : start + n]) + n - 1
        table.add_column(width=width, justify="right", no_wrap=True)
        titles.append(Text(title[-width:] if width else ""))
        start += n
    table.add_row(*titles)
    return table


def _text(table: Table, width: int) -> list[str]:
    """The lines rich lays ``table`` out in, ``width`` columns at most, right ends stripped."""
    from rich.console import Console

    # No colour, no terminal or notebook detection: the same text everywhere.
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        force_interactive=False,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
    )
    console.print(table)
    return [line.rstrip() for line in out.getvalue().splitlines()]
