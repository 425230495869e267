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

import csv
import dataclasses
import io
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from analysis.report.text import WIDTH, shorten_middle
from analysis.report.units import MISSING

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "WIDTH",
    "Column",
    "Footnotes",
    "Table",
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
    """One column: header (may hold a newline), minimum width in characters, alignment;
    the ``unit`` of its numbers and which way is ``better`` (``"lower"``, ``"higher"``)
    when the column holds one quantity (a table of quantities per row says so per row).

    ``limit`` shortens longer cells to that many characters by replacing their middle
    with ``...`` (names such as shrinker symbols keep both ends, and the reader sees that
    something was left out; never numbers). Columns are separated by one space.
    """

    header: str = ""
    width: int = 0
    left: bool = False
    limit: int | None = None
    unit: str = ""
    better: str | None = None

    @property
    def title(self) -> str:
        """The header with its unit: ``p99`` in ``ms`` is ``p99 ms``."""
        return f"{self.header} {self.unit}" if self.unit else self.header


@dataclass(frozen=True)
class Table:
    """One table, rendered alike as 80-column text, Markdown, CSV and LaTeX
    (``report.paper.latex.latex_table``): benchstat's texttab model. ``rows`` hold one
    cell per column, already formatted by :mod:`analysis.report.units` (None prints
    ``-``, a newline puts a cell's second line, such as ``±`` sd, under it); ``notes``
    are the lines under the table (footnotes saying why a cell is ``-``); ``spans``
    titles over groups of columns (see :func:`render`).

    >>> t = Table((Column("ctx", left=True), Column("p99", unit="ms", better="lower")),
    ...           (("memcg", "61 ± 25"),), notes=("[1] sd over 3 iterations",))
    >>> print("\\n".join(t.text()))
    ctx    p99 ms
    memcg 61 ± 25
    Lower is better: p99 ms.
    [1] sd over 3 iterations
    >>> print(t.markdown(), end="")
    | ctx | p99 ms |
    |:---|---:|
    | memcg | 61 ± 25 |
    <BLANKLINE>
    Lower is better: p99 ms.
    [1] sd over 3 iterations
    """

    columns: Sequence[Column]
    rows: Sequence[Sequence[str | None]]
    notes: Sequence[str] = ()
    spans: Sequence[tuple[str, int]] = field(default=())

    def cells(self) -> list[list[str]]:
        """Every cell as one line of plain text (a second line joined by a space)."""
        return [[_flat(c) for c in row] for row in self.rows]

    def directions(self) -> list[str]:
        """One sentence per direction of better that a column states."""
        out = []
        for way in ("lower", "higher"):
            names = [c.title for c in self.columns if c.better == way]
            if names:
                out.append(f"{way.capitalize()} is better: {', '.join(names)}.")
        return out

    def text(self, indent: int = 0) -> list[str]:
        """The table as lines of at most :data:`WIDTH` columns, then the notes."""
        columns = [dataclasses.replace(c, header=c.title, unit="") for c in self.columns]
        lines = render(columns, self.rows, spans=self.spans, indent=indent)
        notes = [line for note in (*self.directions(), *self.notes) for line in wrapped(note)]
        return lines + notes

    def markdown(self) -> str:
        """A GitHub Markdown table (numbers right-aligned), notes below it."""

        def line(cells: Iterable[str]) -> str:
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        align = ["|:---" if c.left else "|---:" for c in self.columns]
        out = [line(c.title for c in self.columns), "".join(align) + "|"]
        out += [line(row) for row in self.cells()]
        notes = [*self.directions(), *self.notes]
        return "\n".join(out + (["", *notes] if notes else [])) + "\n"

    def csv(self) -> str:
        """CSV (RFC 4180): a header of titles (with units), one record per row; the
        notes are not data and are left to the text forms."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(c.title for c in self.columns)
        writer.writerows(self.cells())
        return out.getvalue()


def _flat(text: str | None) -> str:
    return MISSING if text is None else " ".join(text.split("\n"))


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
