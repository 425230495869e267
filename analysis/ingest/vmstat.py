"""/proc/vmstat and memory.stat captures: snapshots, pairs, monitor logs, tests-sysstate.

The format is detected from content, never from the file name:

- a plain snapshot, ``name value`` per line (``cat /proc/vmstat``, or a cgroup's
  ``memory.stat``, v1 or v2);
- mmtests' proc-vmstat monitor log: ``time: <epoch>`` followed by a full dump, repeated
  (gzip or plain);
- mmtests' ``tests-sysstate``: blocks opened by ``file start :: /proc/vmstat`` and
  ``file end :: /proc/vmstat`` (blocks of other files, zoneinfo or meminfo, are counted
  and left alone).

mmtests also writes ``key :: value`` lines (``status :: 0``, ``time :: ...``,
``test end :: ...``) into these files wherever a step finished: at the start, between
blocks, at the end. Such a line closes the block before it and is counted in
``other_lines``, in every layout. A file that holds nothing else (the 12-byte
``tests-sysstate`` of real trees, ``status :: 0``) is an error saying so; see
:func:`holds_snapshots` for choosing between ``tests-sysstate`` and ``.gz``.

Every reader returns :class:`Samples`: a wide Polars frame, one row per sample, an
``epoch_s`` column and one Int64 column per counter as the kernel names it. Unknown
counters are kept. :func:`counter_deltas` differences the *counters* between samples
(gauges are levels and are never differenced) and reports a counter that goes down
instead of producing a negative rate. :func:`canonical` maps old per-zone and renamed
counters onto today's names so one formula serves every kernel.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.errors import InputError
from analysis.ingest.textfile import read_text

__all__ = [
    "PROC_VMSTAT",
    "CounterReset",
    "Misaligned",
    "Samples",
    "canonical",
    "check_order",
    "counter_deltas",
    "holds_snapshots",
    "is_gauge",
    "misaligned_labels",
    "pair",
    "parse",
    "read",
]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_NAME_VALUE = re.compile(r"([a-z][a-z0-9_]*) (-?\d+)")
_TIME = re.compile(r"time: (\d+(?:\.\d+)?)")
_FILE_BLOCK = re.compile(r"file (start|end) :: (\S+)")
# An mmtests step line: a key at the start of the line, " ::", then anything (or nothing).
# Indented text (ip addresses such as "inet6 ::1/128" in sysstate) never matches.
_KEY_LINE = re.compile(r"[A-Za-z/][\w /.-]* ::(?: .*)?")

_VMSTAT_FAMILIES = ("nr_", "pg", "allocstall", "kswapd_", "compact_", "thp_", "slabs_", "pswp")

PROC_VMSTAT = "proc_vmstat"
MEMCG_V1 = "memcg_v1"
MEMCG_V2 = "memcg_v2"


@dataclass(frozen=True)
class Samples:
    """Samples of one counter file: a row per sample, in capture order.

    ``kind`` is ``proc_vmstat``, ``memcg_v1`` or ``memcg_v2`` (cgroup memory.stat);
    ``layout`` says where the samples came from (``snapshot``, ``snapshot pair``,
    ``monitor``, ``tests-sysstate``). ``frame`` has ``epoch_s`` (Float64 seconds, null when
    the format carries no time) and one Int64 column per counter. ``other_lines`` counts
    lines of tests-sysstate blocks that are not vmstat (zoneinfo, meminfo, ...).
    """

    source: str
    kind: str
    layout: str
    frame: pl.DataFrame
    other_lines: int = 0

    @property
    def names(self) -> list[str]:
        """Counter and gauge names, in the kernel's order."""
        return [c for c in self.frame.columns if c != "epoch_s"]

    def __len__(self) -> int:
        return self.frame.height

    @functools.cached_property
    def deltas(self) -> tuple[pl.DataFrame, tuple[CounterReset, ...]]:
        """:func:`counter_deltas` of these samples, computed once (an iteration's vmstat is
        checked, summed and tabled by different readers)."""
        return counter_deltas(self)


@dataclass(frozen=True)
class CounterReset:
    """A counter that went down between two samples: a reset, or two different machines."""

    counter: str
    interval: int
    before: int
    after: int

    def __str__(self) -> str:
        return (
            f"{self.counter} went down from {self.before} to {self.after} "
            f"(interval {self.interval}): counter reset or samples from different machines"
        )


# Counters despite the nr_ prefix (docs/trace-formats.md "/proc/vmstat").
_NR_COUNTERS = frozenset(
    {"nr_vmscan_write", "nr_vmscan_immediate_reclaim", "nr_dirtied", "nr_written"}
    | {"nr_throttled_written", "nr_foll_pin_acquired", "nr_foll_pin_released"}
)
# memory.stat v1: everything is a byte level except these event counts.
_MEMCG_V1_COUNTERS = re.compile(
    r"(total_)?(pgpgin|pgpgout|pgfault|pgmajfault|workingset_(?!nodes).*)"
)
# memory.stat v2 counters (Documentation/admin-guide/cgroup-v2.rst); the rest are byte levels.
_MEMCG_V2_COUNTERS = re.compile(
    r"(pgscan|pgsteal|pgrefill|pgactivate|pgdeactivate|pglazyfree|pgfault|pgmajfault|pgpromote"
    r"|pgdemote|zswp|thp_|workingset_(?!nodes)|swpin_|swpout_|numa_).*"
)


def is_gauge(name: str, kind: str = PROC_VMSTAT) -> bool:
    """True for a level (never differenced), False for an event counter.

    /proc/vmstat: ``nr_*`` items of ``enum zone_stat_item`` / ``node_stat_item`` are levels,
    except the event counts listed in ``docs/trace-formats.md`` "/proc/vmstat" (``nr_vmscan_write``,
    ``nr_dirtied``, ...); ``workingset_nodes`` is a level; every other item of
    ``enum vm_event_item`` is a counter.

    >>> is_gauge("nr_dirty"), is_gauge("nr_vmscan_write"), is_gauge("pgscan_kswapd")
    (True, False, False)
    """
    if kind == MEMCG_V1:
        return not _MEMCG_V1_COUNTERS.fullmatch(name)
    if kind == MEMCG_V2:
        return not _MEMCG_V2_COUNTERS.fullmatch(name)
    if name == "workingset_nodes":
        return True
    return name.startswith("nr_") and name not in _NR_COUNTERS


def _kind_of(names: Iterable[str]) -> str | None:
    """Which file a set of counter names came from, or None when it is none of ours.

    memory.stat is recognised by its levels (v1 ``cache``/``rss``, v2 ``anon``/``file``);
    /proc/vmstat by any of its item families, so a ``grep pgscan /proc/vmstat`` excerpt counts.
    """
    keys = set(names)
    if {"cache", "rss"} <= keys or "hierarchical_memory_limit" in keys:
        return MEMCG_V1
    if {"anon", "file"} <= keys:
        return MEMCG_V2
    if any(k.startswith(_VMSTAT_FAMILIES) for k in keys):
        return PROC_VMSTAT
    return None


# Counters are held as Int64; an unsigned long past 2^63 would take 292 years at 1e9/s.
_INT64 = 1 << 63


def _dump(path: str, numbered: list[tuple[int, str]]) -> dict[str, int]:
    """One ``name value`` dump; a duplicated name or a malformed line is an error."""
    values: dict[str, int] = {}
    for lineno, text in numbered:
        # str.split and int() first: a monitor log is ~200 lines a second for hours, and
        # the full-line regex is only needed to explain a line that does not fit.
        parts = text.split()
        try:
            name, value = parts[0], int(parts[1])
            valid = len(parts) == 2 and _NAME.fullmatch(name) is not None
        except (IndexError, ValueError):
            valid = False
        if not valid:
            raise InputError(path, f"expected 'name value', found {text[:60]!r}", line=lineno)
        if not -_INT64 <= value < _INT64:
            raise InputError(
                path, f"{name} {parts[1][:30]} is beyond 64 bits: no kernel counts so far", lineno
            )
        if name in values:
            first = next(n for n, t in numbered if t.split()[0] == name)
            raise InputError(path, f"counter {name} appears twice (first on line {first})", lineno)
        values[name] = value
    return values


def _frame(rows: list[dict[str, int]], epochs: list[float | None]) -> pl.DataFrame:
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    columns: dict[str, pl.Series] = {"epoch_s": pl.Series("epoch_s", epochs, dtype=pl.Float64)}
    for name in names:
        columns[name] = pl.Series(name, [row.get(name) for row in rows], dtype=pl.Int64)
    return pl.DataFrame(columns)


def _numbered(text: str) -> list[tuple[int, str]]:
    return [(i, line) for i, line in enumerate(text.split("\n")[:-1], start=1)]


def _monitor(path: str, lines: list[tuple[int, str]]) -> tuple[list[dict[str, int]], list]:
    rows: list[dict[str, int]] = []
    epochs: list[float | None] = []
    block: list[tuple[int, str]] = []
    for lineno, text in lines:
        m = _TIME.fullmatch(text.strip())
        if m is None:
            if text.strip():
                block.append((lineno, text))
            continue
        if epochs:
            rows.append(_dump(path, block))
        epoch = float(m.group(1))
        if epochs and epochs[-1] is not None and epoch < epochs[-1]:
            raise InputError(path, f"time goes backwards ({epochs[-1]} then {epoch})", lineno)
        epochs.append(epoch)
        block = []
    rows.append(_dump(path, block))
    if not rows[-1]:
        raise InputError(path, "last sample has a time line but no counters", lines[-1][0])
    return rows, epochs


def _sysstate(path: str, lines: list[tuple[int, str]]) -> tuple[list[dict[str, int]], int]:
    blocks: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] | None = None
    other = 0
    for lineno, text in lines:
        m = _FILE_BLOCK.fullmatch(text.strip())
        if m:
            current = None
            if m.group(2) == "/proc/vmstat":
                if m.group(1) in blocks:
                    raise InputError(path, f"second 'file {m.group(1)} :: /proc/vmstat'", lineno)
                current = blocks[m.group(1)] = []
            continue
        if _is_step(text):
            current = None
        if current is None:
            other += 1
        elif text.strip():
            current.append((lineno, text))
    missing = [k for k in ("start", "end") if k not in blocks]
    if missing:
        raise InputError(path, f"no 'file {missing[0]} :: /proc/vmstat' block")
    return [_dump(path, blocks["start"]), _dump(path, blocks["end"])], other


def _is_step(text: str) -> bool:
    """An mmtests ``key :: value`` line (the substring test first: monitors are long)."""
    return " ::" in text and _KEY_LINE.fullmatch(text.rstrip()) is not None


def holds_snapshots(text: str) -> bool:
    """Whether ``text`` has any /proc/vmstat content, not only mmtests step lines such
    as the ``status :: 0`` that real trees leave in a plain ``tests-sysstate`` beside the
    ``tests-sysstate.gz`` holding the snapshots."""
    return any(
        _FILE_BLOCK.fullmatch(line.strip()) or _NAME_VALUE.fullmatch(line.strip())
        for line in text.splitlines()
    )


def parse(text: str, source: str = "<text>") -> Samples:
    """Parse the text of a vmstat capture in any supported layout (see module docstring)."""
    if not text.strip():
        raise InputError(source, "empty file: no counters")
    lines = _numbered(text if text.endswith("\n") else text + "\n")
    if not text.endswith("\n"):
        # /proc/vmstat and every monitor end lines with a newline: a missing one means the
        # copy stopped mid-line, and the last value may have lost digits.
        raise InputError(source, "last line has no newline: the file looks truncated", len(lines))
    # One C-speed scan spares the per-line checks on the usual file without step lines.
    has_steps = " ::" in text
    if has_steps and any(_FILE_BLOCK.fullmatch(t.strip()) for _, t in lines):
        rows, other = _sysstate(source, lines)
        layout, epochs = "tests-sysstate", [None, None]
        return _samples(source, layout, rows, epochs, other, lines[0][0], lines)
    steps = [(n, t) for n, t in lines if _is_step(t)] if has_steps else []
    data = [(n, t) for n, t in lines if not _is_step(t)] if steps else lines
    first = next(((n, t.strip()) for n, t in data if t.strip()), None)
    if first is None:
        shown = steps[0][1].strip()[:60]
        # Real trees keep a status-only tests-sysstate beside the .gz holding the snapshots.
        hint = " (mmtests keeps them in tests-sysstate.gz)" if "tests-sysstate" in source else ""
        raise InputError(
            source,
            f"only mmtests step lines ({shown!r}), no /proc/vmstat snapshot{hint}",
            steps[0][0],
        )
    epochs: list[float | None]
    if _TIME.fullmatch(first[1]):
        rows, epochs = _monitor(source, data)
        layout = "monitor"
    elif _NAME_VALUE.fullmatch(first[1]):
        rows, layout, epochs = (
            [_dump(source, [x for x in data if x[1].strip()])],
            "snapshot",
            [None],
        )
    else:
        raise InputError(
            source,
            "not a /proc/vmstat snapshot, proc-vmstat monitor log, tests-sysstate or "
            f"memory.stat file: it starts with {first[1][:60]!r}",
            first[0],
        )
    return _samples(source, layout, rows, epochs, len(steps), first[0], lines)


def _samples(
    source: str,
    layout: str,
    rows: list[dict[str, int]],
    epochs: list[float | None],
    other: int,
    first_line: int,
    lines: list[tuple[int, str]],
) -> Samples:
    kind = _kind_of(rows[0])
    if kind is None:
        raise InputError(
            source, "counters are neither /proc/vmstat nor a cgroup memory.stat", first_line
        )
    frame = _frame(rows, epochs)
    _check_unsigned(source, kind, frame, lines)
    return Samples(source, kind, layout, frame, other)


def _check_unsigned(
    source: str, kind: str, frame: pl.DataFrame, lines: list[tuple[int, str]]
) -> None:
    """A negative event counter is damage: counters are sums of unsigned per-CPU increments
    and every kernel prints them unsigned. Levels may be negative (memcg v1 printed
    transient negative sums before ~4.x), so they are left alone."""
    counters = [n for n in frame.columns[1:] if not is_gauge(n, kind)]
    lows = frame.select(pl.col(counters).min()).row(0, named=True) if counters else {}
    for name, low in lows.items():
        if low is not None and low < 0:
            line = next((n for n, t in lines if t.split() == [name, str(low)]), None)
            raise InputError(
                source, f"counter {name} is negative ({low}): counters are unsigned", line
            )


def read(path: str | Path) -> Samples:
    """Read a vmstat capture file (plain or compressed); see :func:`parse`."""
    return parse(read_text(path), str(path))


def pair(before: Samples, after: Samples) -> Samples:
    """Two snapshots of the same file taken before and after a run, as one sample set."""
    if before.kind != after.kind:
        raise InputError(after.source, f"is {after.kind} but {before.source} is {before.kind}")
    frame = pl.concat([before.frame, after.frame], how="diagonal_relaxed")
    return Samples(f"{before.source} → {after.source}", before.kind, "snapshot pair", frame)


def _columns_where(
    frame: pl.DataFrame, names: list[str], test: Callable[[pl.Expr], pl.Expr]
) -> list[str]:
    """The columns among ``names`` where ``test`` holds in any row, in one query."""
    if not names:
        return []
    # One expression over the columns: an expression per column cost more than the query.
    row = frame.select(test(pl.col(names)).any()).row(0)
    return [c for c, hit in zip(names, row, strict=True) if hit]


def check_order(
    samples: Samples,
    first: str | Path,
    second: str | Path,
    fix: str = "give the earlier snapshot first",
    where: str | Path | None = None,
) -> None:
    """A snapshot pair given the wrong way round is one question, not a line per counter:
    InputError (at ``where``, else ``second``; ``fix`` says what to do) when most counters
    that changed went down from ``first`` to ``second`` (a real counter reset hits one or
    two counters, a swap all of them)."""
    deltas, resets = samples.deltas
    counters = [c for c in deltas.columns if c not in {"interval", "epoch_s", "dt_s"}]
    changed = len(resets) + len(_columns_where(deltas, counters, lambda c: c.fill_null(0) != 0))
    if resets and len(resets) * 2 > changed:
        raise InputError(
            second if where is None else where,
            f"{len(resets)} of {changed} counters that changed went down since {first}: "
            f"was {second} taken before {first}? ({fix})",
        )


@dataclass(frozen=True)
class Misaligned:
    """/proc/vmstat whose node-stat names are printed beside other items' values.

    RHEL 8's 4.18.0-184 kernel (the real ppc64le trees in ``data/mmtests-ci``) prints
    ``workingset_restore`` .. ``nr_kernel_misc_reclaimable`` one slot off: the value under
    ``nr_file_pages`` is the dirty count, under ``nr_dirty`` the writeback count, under
    ``nr_unstable`` the reclaim writes, so "Page writes by reclaim" read 4,027 where the
    real delta is ~3.35 M (mmtests prints the same). Found by :func:`misaligned_labels`;
    ``names`` are the node-stat items whose values cannot be trusted; ``reason`` says which
    consistency check failed, with the numbers."""

    names: frozenset[str]
    reason: str


# The first node_stat_item and the first item after the node stats (4.8+).
_NODE_FIRST, _NODE_AFTER = "nr_inactive_anon", "nr_dirty_threshold"


def _node_stat_names(names: list[str]) -> frozenset[str]:
    """Node-stat items in printed order: from ``nr_inactive_anon`` to before
    ``nr_dirty_threshold`` (every nr_*/workingset_* item when either is missing)."""
    if _NODE_FIRST in names and _NODE_AFTER in names:
        return frozenset(names[names.index(_NODE_FIRST) : names.index(_NODE_AFTER)])
    return frozenset(n for n in names if n.startswith(("nr_", "workingset_")))


def misaligned_labels(samples: Samples) -> Misaligned | None:
    """Check counters that must agree in every /proc/vmstat sample; a :class:`Misaligned`
    when they show names and values one slot apart, else None.

    - ``nr_zone_write_pending`` (a zone item) counts dirty + writeback (+ unstable NFS
      before 5.8) pages, which the node items ``nr_dirty``, ``nr_writeback`` and
      ``nr_unstable`` count: misaligned when the values printed as ``nr_file_pages`` +
      ``nr_dirty`` match it exactly in some sample where that sum does not, and the sum
      never matches where they do not (either may miss by a few pages in a sample; on a
      sound kernel the page cache alone is far above the pages under writeback);
    - a gauge holding a counter's value: ``nr_unstable`` (NFS pages not yet committed, a
      level kept under the dirty limit) above twice ``nr_dirty_threshold``.
    """
    frame = samples.frame
    cols = set(frame.columns)
    if samples.kind != PROC_VMSTAT or not {"nr_zone_write_pending", "nr_dirty"} <= cols:
        return None
    found = []
    pending, dirty = frame["nr_zone_write_pending"], frame["nr_dirty"]
    if {"nr_writeback", "nr_file_pages"} <= cols:
        unstable = frame["nr_unstable"] if "nr_unstable" in cols else 0
        straight = pending - dirty - frame["nr_writeback"] - unstable
        shifted = pending - frame["nr_file_pages"] - dirty
        # Zone and node items are folded from per-CPU deltas at different times, so either
        # sum may miss by a few pages in a sample: only exact matches are evidence.
        only_shifted = (shifted == 0) & (straight != 0)
        if only_shifted.any() and not ((straight == 0) & (shifted != 0)).any():
            i = int(only_shifted.arg_max())
            found.append(
                f"nr_zone_write_pending {pending[i]} = nr_file_pages {frame['nr_file_pages'][i]}"
                f" + nr_dirty {dirty[i]}, not nr_dirty + nr_writeback"
                f"{' + nr_unstable' if 'nr_unstable' in cols else ''}"
            )
    if {"nr_unstable", _NODE_AFTER} <= cols:
        over = frame.filter(pl.col("nr_unstable") > 2 * pl.col(_NODE_AFTER))
        if over.height:
            found.append(
                f"nr_unstable {over['nr_unstable'][0]} is above twice nr_dirty_threshold "
                f"{over[_NODE_AFTER][0]}: a counter's value under a level's name"
            )
    if not found:
        return None
    reason = "vmstat names misaligned with values (as RHEL 8 4.18.0-184 prints them): " + "; ".join(
        found
    )
    return Misaligned(_node_stat_names(list(frame.columns)), reason)


def counter_deltas(samples: Samples) -> tuple[pl.DataFrame, tuple[CounterReset, ...]]:
    """Counter increments between consecutive samples, one row per interval.

    Columns: ``interval`` (1-based), ``epoch_s`` (end of interval), ``dt_s`` (null when the
    samples carry no time) and one column per *counter* (gauges are dropped). An increment
    is null when the counter went down (reported as a :class:`CounterReset`) or is missing
    from either sample.
    """
    frame = samples.frame
    counters = [n for n in samples.names if not is_gauge(n, samples.kind)]
    diffs = frame.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("interval"),
        pl.col("epoch_s"),
        pl.col("epoch_s").diff().alias("dt_s"),
        pl.col(counters).diff(),
    ).slice(1)
    resets: list[CounterReset] = []
    # Only the counters that went down (a few, if any) are searched for where: a query per
    # counter cost more than the whole diff.
    for name in _columns_where(diffs, counters, lambda c: c < 0):
        negative = diffs.select(pl.arg_where(pl.col(name) < 0)).to_series().to_list()
        for idx in negative:
            resets.append(CounterReset(name, idx + 1, frame[name][idx], frame[name][idx + 1]))
    cleaned = (
        diffs.with_columns(pl.when(pl.col(counters) >= 0).then(pl.col(counters)))
        if counters
        else diffs
    )
    return cleaned, tuple(resets)


_ZONES = "dma|dma32|normal|high|movable|device"
_PER_ZONE = re.compile(
    rf"(pgscan_kswapd|pgscan_direct|pgsteal_kswapd|pgsteal_direct|pgrefill|allocstall)_({_ZONES})"
)
_OLD_PGSTEAL = re.compile(rf"pgsteal_({_ZONES})")
# Renamed counters: old name -> today's name (docs/trace-formats.md "/proc/vmstat").
RENAMED = {
    "thp_split": "thp_split_page",  # ~4.5
    "workingset_refault": "workingset_refault_file",  # split into _anon/_file ~5.9
    "workingset_activate": "workingset_activate_file",
    "workingset_restore": "workingset_restore_file",
    "kswapd_slept_prematurely_low": "kswapd_low_wmark_hit_quickly",
    "kswapd_slept_prematurely_high": "kswapd_high_wmark_hit_quickly",
    "compact_pages_moved": "pgmigrate_success",  # ~3.8
    "compact_pagemigrate_failed": "pgmigrate_fail",
}


def _add(exprs: list[pl.Expr]) -> pl.Expr:
    # Plain + so that a null (reset) anywhere makes the total null, unlike sum_horizontal.
    return functools.reduce(operator.add, exprs)


def canonical(deltas: pl.DataFrame) -> pl.DataFrame:
    """Add today's counter names to a delta frame from any kernel, keeping the originals.

    - ``<item>_<zone>`` per-zone counters of ``pgscan_{kswapd,direct}``,
      ``pgsteal_{kswapd,direct}``, ``pgrefill`` (node-wide since 4.8) and ``allocstall``
      (per zone since 4.8) are summed into ``<item>``;
    - before ~3.4 reclaim was ``pgsteal_<zone>`` (all contexts) plus ``kswapd_steal``:
      ``pgsteal_kswapd = kswapd_steal`` and ``pgsteal_direct = Σ pgsteal_<zone> − kswapd_steal``;
    - renamed counters (:data:`RENAMED`) get their new name when it is absent.
    """
    cols = deltas.columns
    groups: dict[str, list[str]] = {}
    for c in cols:
        m = _PER_ZONE.fullmatch(c)
        if m:
            groups.setdefault(m.group(1), []).append(c)
    exprs = [
        _add([pl.col(c) for c in ([base] if base in cols else []) + zoned]).alias(base)
        for base, zoned in groups.items()
    ]
    old_steal = [c for c in cols if _OLD_PGSTEAL.fullmatch(c)]
    if old_steal and "kswapd_steal" in cols and "pgsteal_direct" not in groups:
        exprs.append(pl.col("kswapd_steal").alias("pgsteal_kswapd"))
        exprs.append(
            (_add([pl.col(c) for c in old_steal]) - pl.col("kswapd_steal")).alias("pgsteal_direct")
        )
    exprs += [
        pl.col(old).alias(new) for old, new in RENAMED.items() if old in cols and new not in cols
    ]
    return deltas.with_columns(exprs) if exprs else deltas
