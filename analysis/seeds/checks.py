"""The four seed mails recomputed: every derived figure they print, from the figures they
print it from, by mmlab's own code where mmlab has it, and where the answers differ, why.

One :class:`SeedCheck` per figure. ``verdict`` is ``agrees`` when mmlab's value rounds or
truncates to the printed one at the printed precision, ``differs`` otherwise (``why`` says
what explains it), ``cannot recompute`` when the mail does not print what the figure was
computed from, ``mmlab only`` for figures mmlab adds (no mail value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.ingest import histogram, mail_tables, vmstat
from analysis.metrics import pairing, throttle
from analysis.metrics.ops import Elapsed, ops_report

__all__ = [
    "SEED001_EXAMPLE",
    "SEEDS",
    "SeedCheck",
    "agrees",
    "all_checks",
    "seed001",
]

SEEDS = {
    "000": "000_901e324e43c5b0b5.txt",
    "001": "001_da4baa7195cde95f.txt",
    "002": "002_a4f0b6806489fc3c.txt",
    "003": "003_ee18fb956a8fffc1.txt",
}

# Seed 001's worked example (its lines 29 and 42): a node's freeable objects, the reclaim
# priority, the shrinker's seeks and the objects already deferred.
SEED001_EXAMPLE = {"freeable": 1_800_000, "priority": 12, "seeks": 2, "deferred": 1_000_000}


@dataclass(frozen=True)
class SeedCheck:
    """One published figure: where (``seed``, ``table``, ``row``, ``column``, mail ``line``),
    as printed (``mail``), as mmlab computes it (``mmlab``, in ``unit``), the ``verdict``
    and ``why`` it differs."""

    seed: str
    table: str
    row: str
    column: str
    line: int | None
    mail: str
    mmlab: float | None
    unit: str
    verdict: str
    why: str = ""


def _half_ulp(printed: str) -> float:
    """Half a unit in the last printed digit: the rounding error of a printed figure."""
    text = printed.rstrip("%").replace(",", "")
    return 0.5 / 10 ** (len(text.split(".")[1]) if "." in text else 0)


def agrees(printed: str, value: float, slack: float = 0.0) -> bool:
    """``value`` printed at ``printed``'s precision, rounded or truncated, gives ``printed``;
    ``slack`` widens this by the error ``value`` inherits from rounded inputs."""
    text = printed.rstrip("%").replace(",", "")
    decimals = len(text.split(".")[1]) if "." in text else 0
    scale = 10**decimals
    target = float(text)
    rounded = abs(value - target) <= 0.5 / scale + slack + 1e-9 * max(1.0, abs(value))
    return rounded or math.trunc(value * scale) == round(target * scale)


def _check(seed, table, row, column, line, printed, value, unit, why="", slack=0.0) -> SeedCheck:
    if value is None:
        return SeedCheck(
            seed, table, row, column, line, printed, None, unit, "cannot recompute", why
        )
    if printed == "-":
        return SeedCheck(seed, table, row, column, line, printed, value, unit, "mmlab only", why)
    ok = agrees(printed, value, slack)
    return SeedCheck(
        seed,
        table,
        row,
        column,
        line,
        printed,
        value,
        unit,
        "agrees" if ok else "differs",
        "" if ok else why,
    )


def _pct_change(base: float, new: float) -> float:
    """mmtests' % for lower-is-better rows: (base - new) / base."""
    return 100 * (base - new) / base


def _pct_slack(row: mail_tables.MailRow) -> float:
    """Largest error of :func:`_pct_change` from the rounding of the two printed values."""
    (base, new), (eb, en) = row.values[:2], (_half_ulp(t) for t in row.texts[:2])
    return 100 * (abs(new) * eb / base**2 + en / abs(base))


# Seed 000's Ops rows as vmstat counters (the counters mmtests differences).
_SEED000_COUNTERS = {
    "Ops Direct pages scanned": "pgscan_direct",
    "Ops Kswapd pages scanned": "pgscan_kswapd",
    "Ops Kswapd pages reclaimed": "pgsteal_kswapd",
    "Ops Direct pages reclaimed": "pgsteal_direct",
}
_SEED000_DERIVED = (
    "Kswapd efficiency %",
    "Kswapd velocity",
    "Direct efficiency %",
    "Direct velocity",
    "Percentage direct scans",
)


def _samples(delta: dict[str, int]) -> vmstat.Samples:
    """A before/after /proc/vmstat pair whose counters differ by ``delta``."""
    before = "".join(f"{k} 0\n" for k in delta)
    after = "".join(f"{k} {v}\n" for k, v in delta.items())
    return vmstat.pair(vmstat.parse(before, "before"), vmstat.parse(after, "after"))


def seed000(path: Path) -> list[SeedCheck]:
    """Latency % changes, Ops rows (mmlab's ops_report), prose claims, throttle histograms."""
    m = mail_tables.read(path)
    out = []
    # The mail's second latency block is "a single-socket machine that had more memory".
    second = m.line_of("single-socket machine")
    for r in m.rows:
        if r.label.split()[0] in {"Amean", "Stddev", "Max-90", "Max"} and len(r.pcts) == 2:
            value = _pct_change(*r.values)
            out.append(
                _check(
                    "000",
                    "latency" if r.line < second else "latency, machine 2",
                    r.label,
                    "% vs vanilla",
                    r.line,
                    f"{r.pcts[1]:.2f}%",
                    value,
                    "%",
                    slack=_pct_slack(r),
                )
            )
    elapsed = m.row("Duration Elapsed")
    for col in range(2):
        counters = {c: int(m.row(label).values[col]) for label, c in _SEED000_COUNTERS.items()}
        report = ops_report(_samples(counters), Elapsed(elapsed.values[col], "Duration Elapsed"))
        for label in _SEED000_DERIVED:
            printed = m.row(f"Ops {label}")
            why = ""
            if "velocity" in label:
                scanned = counters["pgscan_kswapd" if "Kswapd" in label else "pgscan_direct"]
                why = (
                    f"Duration Elapsed {elapsed.texts[col]} s is another run (v5r4, rc3) than "
                    f"the Ops table (v5r2, rc1); the printed velocity implies "
                    f"{scanned / printed.values[col]:.1f} s"
                )
            out.append(
                _check(
                    "000",
                    "Ops",
                    label,
                    f"kernel {col + 1}",
                    printed.line,
                    printed.texts[col],
                    report.value(label),
                    printed_unit(label),
                    why,
                )
            )
    for row, claim, before in (
        ("Direct pages scanned", "52", "Ops Direct pages scanned"),
        ("Page reclaim immediate", "89", "Ops Page reclaim immediate"),
        ("System CPU", "89", "Duration System"),
    ):
        r = m.row(before)
        out.append(
            _check(
                "000", "prose", f"{row} reduced by", "%", r.line, claim, _pct_change(*r.values), "%"
            )
        )
    out += _seed000_throttle(path)
    return out


def printed_unit(label: str) -> str:
    return "pages/s" if "velocity" in label else "%"


def _seed000_throttle(path: Path) -> list[SeedCheck]:
    labels = {0: "vanilla", 1: "vanilla", 2: "kswapd", 3: "direct totals"}
    hist = histogram.read(path, labels=labels | {4: "direct", 5: "direct", 6: "direct"})
    events = throttle.throttle_events(hist, pairing.all_intervals({}))
    table = throttle.throttle_table(events)
    out = []
    for r in table.filter(pl.col("known_delay") > 0).iter_rows(named=True):
        printed, why = "-", ""
        if r["context"] == "kswapd":
            printed = "16"
            why = (
                f"{r['timeout_share'] * r['known_delay']:.0f} of {r['known_delay']} "
                "sleeps reached the timeout; the mail's 'roughly 16%' does not follow"
            )
        out.append(
            _check(
                "000",
                "throttle",
                f"{r['reason']} {r['context']}",
                "timeout share",
                None,
                printed,
                100 * r["timeout_share"],
                "%",
                why,
            )
        )
    detailed = table.filter(pl.col("context") == "direct")
    for r in table.filter(pl.col("context") == "direct totals").iter_rows(named=True):
        breakdown = detailed.filter(pl.col("reason") == r["reason"])["count"].sum()
        out.append(
            _check(
                "000",
                "throttle totals",
                r["reason"],
                "direct total",
                None,
                str(r["count"]),
                float(breakdown),
                "events",
            )
        )
    hz = throttle.infer_hz(events, config_hz=None)
    out.append(_check("000", "throttle", "HZ from delay quantum", "HZ", None, "-", hz.hz, "Hz"))
    return out


def seed001() -> list[SeedCheck]:
    """The worked example (1.8 M freeable, priority 12, seeks 2, 1 M deferred) under the
    three deferral rules of docs/shrinker-deferral.md, in the kernel's integer arithmetic."""
    freeable, priority, seeks, deferred = SEED001_EXAMPLE.values()
    shifted = freeable >> priority
    delta = shifted * 4 // seeks
    g1 = min(deferred + delta, freeable // 2) if delta < freeable // 4 else deferred + delta
    rows = [
        ("freeable >> priority", 33, "440", shifted, "the mail rounds 439.45 up"),
        ("delta", 35, "800", delta, "the mail's 440 x 4 = 1600 slips (1760)"),
        ("G1 unclamped target", 51, "1,000,800", deferred + delta, "carries the 800"),
        ("G1 target (windup clamp)", 53, "900,000", min(g1, 2 * freeable), ""),
        ("G2 target, kswapd", None, "-", delta + deferred // priority, ""),
        ("G2 target, direct", None, "-", delta, ""),
        ("G3 target, any context", None, "-", (deferred >> priority) + delta, ""),
    ]
    return [
        _check("001", "shrinker", row, "objects", line, printed, float(v), "objects", why)
        for row, line, printed, v, why in rows
    ]


def seed002(path: Path) -> list[SeedCheck]:
    """The derived rows of both "FTrace Reclaim Statistics" tables from their base rows."""
    m = mail_tables.read(path)
    out = []
    for table, anchor in (("postmark", "MMTests Statistics: duration"), ("micro", "MICRO")):
        start = m.line_of(anchor)

        def row(label: str, start: int = start) -> mail_tables.MailRow | None:
            try:
                return m.row(label, start)
            except Exception:
                return None

        for col in range(2):
            direct, kswapd = row("Direct reclaim pages scanned"), row("Kswapd pages scanned")
            total = direct.values[col] + kswapd.values[col]
            writes = sum(
                r.values[col]
                for r in m.rows
                if r.line > start
                and "write" in r.label
                and "I/O" in r.label
                and r.line < m.line_of("Time stalled", start)
            )
            reclaimed = row("Total pages reclaimed")
            stalled = row("Time stalled direct reclaim (seconds)").values[col]
            usersys = row("User/Sys Time Running Test (seconds)").values[col]
            awake = row("Time kswapd awake (seconds)").values[col]
            elapsed = row("Total Elapsed Time (seconds)").values[col]
            checks = (
                ("Total pages scanned", total, "", "pages"),
                (
                    "%age total pages scanned/reclaimed",
                    100 * reclaimed.values[col] / total if reclaimed else None,
                    "no reclaimed row in this table: the printed 0.00% is not a ratio",
                    "%",
                ),
                ("%age total pages scanned/written", 100 * writes / total, "", "%"),
                (
                    "Percentage Time Spent Direct Reclaim",
                    100 * stalled / (usersys + stalled),
                    "",
                    "%",
                ),
                ("Percentage Time kswapd Awake", 100 * awake / elapsed, "", "%"),
            )
            for label, value, why, unit in checks:
                printed = row(label)
                out.append(
                    _check(
                        "002",
                        table,
                        label,
                        f"kernel {col + 1}",
                        printed.line,
                        printed.texts[col],
                        value,
                        unit,
                        why,
                    )
                )
    return out


_COMPACTION = {
    "Compaction migrate scanned": "compact_migrate_scanned",
    "Compaction pages isolated": "compact_isolated",
    "Page migrate success": "pgmigrate_success",
    "Page migrate failure": "pgmigrate_fail",
}


def seed003(path: Path) -> list[SeedCheck]:
    """vmstat rows, compaction cost (mmlab's ops_report) and the ftrace times, both tests."""
    m = mail_tables.read(path)
    out = []
    for table, anchor in (("nodirect", "-nodirect -nodirect"), ("direct", "-direct -direct")):
        start = m.line_of(anchor)
        stalls = m.row("Compaction stalls", start)
        success = m.row("Compaction success", start)
        for col in range(2):
            counters = {c: int(m.row(label, start).values[col]) for label, c in _COMPACTION.items()}
            counters |= {
                "pgscan_direct": int(m.row("Direct pages scanned", start).values[col]),
                "pgscan_kswapd": int(m.row("Kswapd pages scanned", start).values[col]),
            }
            report = ops_report(_samples(counters), Elapsed(1.0, "unused"))
            for label in ("Percentage direct scans", "Compaction cost"):
                printed = m.row(label, start)
                out.append(
                    _check(
                        "003",
                        table,
                        label,
                        f"kernel {col + 1}",
                        printed.line,
                        printed.texts[col],
                        report.value(label),
                        "%" if "Percentage" in label else "model units",
                    )
                )
            failures = m.row("Compaction failures", start).values[col]
            out.append(
                _check(
                    "003",
                    table,
                    "Compaction stalls",
                    f"kernel {col + 1}",
                    stalls.line,
                    stalls.texts[col],
                    success.values[col] + failures,
                    "stalls",
                    "success + failures: the rest ended neither way (deferred or contended)",
                )
            )
        direct = m.row("Time direct compacting", start)
        if table == "direct":
            cut = (stalls.values[0] - stalls.values[1], success.values[0] - success.values[1])
            out.append(
                _check(
                    "003",
                    table,
                    "success drop = stall drop",
                    "stalls",
                    success.line,
                    f"{cut[0]:.0f}",
                    cut[1],
                    "stalls",
                    "the mail says successes fell 'by the same number' as stalls",
                )
            )
        else:
            out.append(
                _check(
                    "003",
                    table,
                    "Time direct compacting change",
                    "%",
                    direct.line,
                    "-",
                    -_pct_change(*direct.values),
                    "%",
                    "the mail calls this 'almost halved'",
                )
            )
        out += _seed003_times(m, table, start)
    return out


def _seed003_times(m: mail_tables.MailTables, table: str, start: int) -> list[SeedCheck]:
    """kcompactd and kswapd times of the ftrace monitor (no unit printed): kcompactd can
    only compact while awake; kswapd awake read as ms against the test's Elapsed (s)."""
    awake = m.row("Time kcompactd awake", start)
    compacting = m.row("Time kcompactd compacting", start)
    kswapd = m.row("Time kswapd awake", start)
    elapsed = m.row("Elapsed", start)
    busy = 100 * compacting.values[1] / awake.values[1]
    why = "over 100 %: compacting can only happen while awake" if busy > 100 else ""
    out = [
        _check(
            "003",
            table,
            "kcompactd compacting / awake",
            "kernel 2",
            compacting.line,
            "-",
            busy,
            "%",
            why,
        )
    ]
    for col in range(2):
        share = 100 * kswapd.values[col] / 1000 / elapsed.values[col]
        out.append(
            _check(
                "003",
                table,
                "kswapd awake (as ms) / Elapsed",
                f"kernel {col + 1}",
                kswapd.line,
                "-",
                share,
                "%",
                "over 100 %: not one kswapd's wall time in ms; a sum over nodes' "
                "kswapd threads or another unit (the mail prints none)"
                if share > 100
                else "",
            )
        )
    return out


def all_checks(mail_dir: Path) -> pl.DataFrame:
    """Every check of the four seeds as a frame (columns of :class:`SeedCheck`)."""
    checks: Sequence[SeedCheck] = [
        *seed000(mail_dir / SEEDS["000"]),
        *seed001(),
        *seed002(mail_dir / SEEDS["002"]),
        *seed003(mail_dir / SEEDS["003"]),
    ]
    return pl.DataFrame([c.__dict__ for c in checks])
