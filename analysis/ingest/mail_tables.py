"""Tables pasted into mails: ``Label  value  value`` rows as mmtests prints them.

Seed mails carry mmtests output (``Ops Direct pages scanned  1056608451.00  503594991.00``,
``Amean mmap-4  31.4003 (   0.00%)  2661.0198 (-8374.52%)``, ``Percentage Time kswapd Awake
12.37%  14.10%``), often quoted (``> >``) or re-flowed with single spaces. A row is a label
followed by one or more numbers; a ``( x%)`` or ``* x%*`` after a number is its printed
comparison percentage. Rows keep their 1-based line so a check can name where a figure is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest.textfile import read_text

__all__ = ["MailRow", "MailTables", "parse_rows", "read"]

_QUOTE = re.compile(r"^(?:\s*>)+ ?")
# A printed comparison after a value: "( -8374.52%)" or "* -17.65%*".
_PCT = re.compile(r"\(\s*(-?[\d.]+)%\)|\*\s*(-?[\d.]+)%\*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?%?")


@dataclass(frozen=True)
class MailRow:
    """One table row: ``label``, the values as printed (``texts``, e.g. ``"12.37%"``), as
    floats (``values``, % stripped), the printed comparison percentages (``pcts``, one per
    value after the first when the table has them) and the 1-based ``line``."""

    line: int
    label: str
    texts: tuple[str, ...]
    values: tuple[float, ...]
    pcts: tuple[float, ...]


def _row(number: int, line: str) -> MailRow | None:
    body = _QUOTE.sub("", line)
    pcts = tuple(float(a or b) for a, b in _PCT.findall(body))
    tokens = _PCT.sub(" ", body).split()
    k = len(tokens)
    while k > 0 and _NUMBER.fullmatch(tokens[k - 1]):
        k -= 1
    label, texts = " ".join(tokens[:k]), tuple(tokens[k:])
    # A colon marks a header ("Date: Tue Dec 07 2010") or a prose lead-in, not a row label.
    if not texts or not re.search(r"[A-Za-z]", label) or ":" in label:
        return None
    return MailRow(number, label, texts, tuple(float(t.rstrip("%")) for t in texts), pcts)


def parse_rows(text: str) -> list[MailRow]:
    """Every line of ``text`` that reads as a table row, in order."""
    return [r for n, line in enumerate(text.splitlines(), 1) if (r := _row(n, line))]


@dataclass(frozen=True)
class MailTables:
    """The rows of one mail and where its anchors (section headings) are."""

    path: Path
    text: str
    rows: tuple[MailRow, ...]

    def line_of(self, anchor: str, after: int = 0) -> int:
        """1-based line of the first line after ``after`` containing ``anchor`` (any run of
        spaces, non-breaking ones included, matches one space)."""
        for n, line in enumerate(self.text.splitlines(), 1):
            if n > after and anchor in " ".join(line.split()):
                return n
        raise InputError(self.path, f"no line containing {anchor!r} after line {after}")

    def row(self, label: str, after: int = 0) -> MailRow:
        """The first row labelled ``label`` after line ``after``."""
        for r in self.rows:
            if r.line > after and r.label == label:
                return r
        raise InputError(self.path, f"no table row {label!r} after line {after}")


def read(path: Path) -> MailTables:
    """The table rows of the mail at ``path``."""
    text = read_text(path)
    return MailTables(Path(path), text, tuple(parse_rows(text)))
