"""80-column table of throttling per run (``run_throttle_table`` of metrics.throttle_runs)."""

from __future__ import annotations

import polars as pl

__all__ = ["format_run_throttle"]


def _pm(mean: float | None, sd: float | None, scale: float = 1.0, digits: int = 1) -> str:
    if mean is None:
        return "-"
    text = f"{mean * scale:.{digits}f}"
    return text if sd is None else f"{text} ± {sd * scale:.{digits}f}"


def format_run_throttle(table: pl.DataFrame) -> str:
    """One block per run: events per iteration and timeout share (mean ± sd over
    iterations), zero share and mean recorded delay; a note on what the shares mean."""
    if table.is_empty():
        return "No throttle events in any trace.\n"
    out: list[str] = []
    for (run,), rows in table.group_by("run", maintain_order=True):
        n = rows["iterations"][0]
        out += [
            f"{run} ({n} iterations; mean ± sd over iterations)",
            f"{'reason':<16}{'timeout':>8} {'context':<8}{'events/iter':>16}{'timeout %':>14}"
            f"{'zero %':>8}{'mean ms':>9}",
        ]
        for r in rows.iter_rows(named=True):
            reason = r["reason"].removeprefix("VMSCAN_THROTTLE_").removeprefix("writeback_")
            lower = ">=" if (r["timeout_share_mean"] or 0) > 0 else ""
            mean_ms = "-" if r["mean_usec_mean"] is None else f"{r['mean_usec_mean'] / 1000:.2f}"
            out.append(
                f"{reason[:15]:<16}{r['usec_timeout'] / 1000:>6g}ms {r['context'][:8]:<8}"
                f"{_pm(r['events_mean'], r['events_sd'], digits=0):>16}"
                f"{_pm(r['timeout_share_mean'], r['timeout_share_sd'], 100):>14}"
                f"{_pm(r['zero_share_mean'], None, 100):>8}{lower + mean_ms:>9}"
            )
        out.append("")
    out.append(
        "timeout % = share of sleeps that ran to the timeout (right-censored: the wait\n"
        "was at least the timeout); zero % = woken within the first jiffy; mean ms is\n"
        "of recorded delays, a lower bound (>=) when any sleep hit the timeout. Shares\n"
        "are averaged over iterations with events; sd needs 2 or more of them."
    )
    return "\n".join(out) + "\n"
