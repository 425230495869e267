"""Text of the replication notes above a comparison: runs that share a boot, warm-ups."""

from __future__ import annotations

from analysis.report.text import fit
from analysis.stats.levels import Warmup

__all__ = ["level_notes", "warmup_line"]


def _span(iterations: tuple[int, ...]) -> str:
    return f"{iterations[0]}" if len(iterations) == 1 else f"{iterations[0]}-{iterations[-1]}"


def warmup_line(w: Warmup) -> str:
    """One warm-up regime as a sentence with one row's numbers."""
    row, first, lo, hi, unit = w.example
    rest = f"{len(w.iterations)}-{w.of - 1}" if w.of - len(w.iterations) > 1 else f"{w.of - 1}"
    shown = ", ".join(f"{v:.3g}" for v in first)
    more = f" and {len(w.rows) - 1} more row(s)" if len(w.rows) > 1 else ""
    return (
        f"WARM-UP: {w.kernel}, {w.boot}: iteration(s) {_span(w.iterations)} unlike {rest} in "
        f"{row}{more} (per-iteration median {shown} vs {lo:.3g}..{hi:.3g} {unit}); kept in the "
        "comparison: one boot per run avoids the regime"
    )


def level_notes(notes: tuple[str, ...], warm: list[Warmup]) -> str:
    """``NOTE:`` lines for runs that are not independent and ``WARM-UP:`` lines, wrapped."""
    lines = [f"NOTE: {n}" for n in notes] + [warmup_line(w) for w in warm]
    return "".join(f"{fit(line)}\n" for line in lines)
