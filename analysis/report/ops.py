"""Text tables for vmstat Ops rows, in the shape kernel developers paste from mmtests.

Both tables fit 80 columns (two runs for the comparison). Page counts are in pages
unless the label says otherwise. A missing value prints ``-`` with a footnote saying
why, instead of a misleading number.
"""

from __future__ import annotations

import textwrap

from analysis.metrics.compare import Comparison
from analysis.metrics.ops import ABSENT, OpsReport, OpsRow

__all__ = ["format_comparison", "format_ops"]

# Units that the label does not already make plain.
_SHOWN_UNITS = {"pages/s", "KiB", "objects", "huge pages", "model units"}
_LABEL_WIDTH = 30


def display_label(label: str, unit: str) -> str:
    """``Kswapd velocity`` → ``Kswapd velocity pages/s``; pages and % stay implicit."""
    return f"{label} {unit}" if unit in _SHOWN_UNITS else label


def _num(value: float | None, width: int = 13) -> str:
    if value is None:
        return f"{'-':>{width}}"
    text = f"{value:.2f}"
    return f"{text:>{width}}" if len(text) <= width else f"{value:>{width}.6g}"


def _pct(change: float | None) -> str:
    return " (      -)" if change is None else f" ({change:7.2f}%)"


class _Footnotes:
    """Numbered reasons for missing values, each reason numbered once."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def mark(self, reason: str) -> str:
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"[{self.reasons.index(reason) + 1}]"

    def lines(self) -> list[str]:
        return [
            line
            for i, reason in enumerate(self.reasons, start=1)
            for line in _wrapped(f"[{i}] {reason}")
        ]


def _wrapped(text: str, indent: str = "    ") -> list[str]:
    return textwrap.wrap(text, 80, subsequent_indent=indent, break_on_hyphens=False)


def _absent(rows: list[OpsRow]) -> list[str]:
    return [r.label for r in rows if r.note.startswith(ABSENT)]


def _page_line(sizes: set[int | None]) -> str:
    """What one page is: it differs between kernels (64 KiB on ppc64le, 4 KiB on x86)."""
    if None in sizes:
        return "Page size unknown: no kernel config saved with the capture."
    kib = ", ".join(f"{b // 1024} KiB" for b in sorted(sizes))
    return f"Pages are {kib} (kernel config)." if len(sizes) == 1 else f"Page sizes differ: {kib}."


def format_ops(report: OpsReport) -> str:
    """One capture's Ops table: value and footnoted reason where there is none."""
    elapsed = report.elapsed
    when = f"{elapsed.seconds:.2f} s" if elapsed.seconds is not None else "unknown"
    lines = [f"vmstat Ops: {report.source}", f"elapsed {when} ({elapsed.source})"]
    lines += [_page_line({report.page_bytes}), ""]
    notes = _Footnotes()
    absent = _absent(list(report.rows))
    for row in report.rows:
        if row.label in absent:
            continue
        mark = notes.mark(row.note) if row.value is None else ""
        lines.append(
            f"Ops {display_label(row.label, row.unit):<{_LABEL_WIDTH}}{_num(row.value, 16)} {mark}"
        )
    lines += ["", *notes.lines()]
    lines += _wrapped(f"Not in this kernel's vmstat: {', '.join(absent)}." if absent else "")
    for reset in report.resets:
        lines += _wrapped(f"Counter went down: {reset}")
    return "\n".join(line.rstrip() for line in lines).rstrip() + "\n"


def _sd(value: float | None) -> str:
    return f"{'' if value is None else '±' + f'{value:.6g}':>13}" + " " * 11


def format_comparison(cmp: Comparison) -> str:
    """Runs side by side: mean over iterations (% change vs the first run, positive =
    better as in mmtests), and ± sample standard deviation on the line below.

    Two runs fit 80 columns; with more, each further run gets its own block beside the
    first run, as one would paste them pairwise into a reply."""
    reports = [rep for reps in cmp.reports for rep in reps]
    # A row is left out only when no iteration of any run has its counters.
    absent = set.intersection(*(set(_absent(list(rep.rows))) for rep in reports))
    labels = list(dict.fromkeys(r.label for r in cmp.rows))
    zero = [
        label for k, label in enumerate(labels) if all(rep.rows[k].value == 0 for rep in reports)
    ]
    shown = [(k, label) for k, label in enumerate(labels) if label not in absent | set(zero)]
    notes = _Footnotes()
    blocks = [cmp.runs] if len(cmp.runs) <= 2 else [(cmp.runs[0], r) for r in cmp.runs[1:]]
    lines: list[str] = []
    for runs in blocks:
        lines += [*_block(cmp, runs, shown, notes), ""]
    lines += [
        *_wrapped(
            "Mean over iterations (% change vs first run; positive = better, as in "
            "mmtests), ± sample sd (n-1) below. Pages unless stated. No significance "
            "test here: a change within the ± spread of either run is not evidence of "
            "a difference.",
            indent="",
        ),
        *notes.lines(),
    ]
    lines.append(_page_line({rep.page_bytes for rep in reports}))
    lines += _wrapped(f"Zero in every iteration: {', '.join(zero)}." if zero else "")
    lines += _wrapped(
        f"Not in this kernel's vmstat: {', '.join(sorted(absent))}." if absent else ""
    )
    return "\n".join(lines) + "\n"


def _block(
    cmp: Comparison, runs: tuple[str, ...], shown: list[tuple[int, str]], notes: _Footnotes
) -> list[str]:
    """The table lines of ``runs`` (a subset of ``cmp.runs``, first run first)."""
    width = 24
    reports = [cmp.reports[cmp.runs.index(run)] for run in runs]
    lines = [
        " " * _LABEL_WIDTH + "".join(f"{run[-width + 1 :]:>{width}}" for run in runs),
        f"{'Iterations':<{_LABEL_WIDTH}}" + "".join(f"{len(r):>{width}}" for r in reports),
    ]
    for k, label in shown:
        cells = [cmp.row(label, run) for run in runs]
        why = next(
            (rep.rows[k].note for reps in reports for rep in reps if rep.rows[k].value is None), ""
        )
        mean_line = f"{display_label(label, cells[0].unit):<{_LABEL_WIDTH}}"
        for cell in cells:
            # A cell without a mean carries the footnote in its % slot.
            mark = f"{notes.mark(why):>11}" if cell.mean is None else _pct(cell.change_pct)
            mean_line += _num(cell.mean) + mark
        lines.append(mean_line.rstrip())
        if any(c.sd for c in cells):
            lines.append((" " * _LABEL_WIDTH + "".join(_sd(c.sd) for c in cells)).rstrip())
    return lines
