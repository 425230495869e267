"""Plain-text tables: the one renderer every ``mmlab`` table goes through.

Modelled on Go's benchstat (``texttab``): numbers right-aligned, text left-aligned, optional
titles spanning several columns (a run over its mean and % columns), and missing values
printed as ``-`` with a numbered reason under the table, each reason numbered once
(:class:`Footnotes`). Layout is done by rich without colour or terminal detection, so the
output is the same plain text on a terminal, in a pipe and in a notebook; every line fits
:data:`WIDTH` columns and has no trailing spaces.

Cells are strings (``None`` prints ``-``); a cell with a newline takes several lines, as
the ``±`` sd under a mean does. Numbers are formatted by :mod:`analysis.report.units`
(one scale per row, digits at the uncertainty).
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from analysis.report.text import WIDTH, shorten_middle
from analysis.report.units import MISSING

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "WIDTH",
    "Column",
    "Footnotes",
    "render",
    "wrapped",
]


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

    ``limit`` shortens longer cells to that many characters by replacing their middle
    with ``...`` (names such as shrinker symbols keep both ends, and the reader sees that
    something was left out; never numbers). Columns are separated by one space.
    """

    header: str = ""
    width: int = 0
    left: bool = False
    limit: int | None = None


def _cell(text: str | None, column: Column) -> str:
    text = MISSING if text is None else text
    if column.limit is None:
        return text
    return "\n".join(shorten_middle(line, column.limit) for line in text.split("\n"))


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
