"""The /proc monitors mmtests records beside a test, as long frames over time.

mmtests' ``monitors/watch-<name>.sh`` write ``<name>-<test>.gz`` in the iteration
directory (docs/inputs.md "mmtests monitors"): ``proc-buddyinfo``, ``proc-pagetypeinfo``,
``proc-zoneinfo``, ``slabinfo`` and ``proc-meminfo`` repeat ``time: <epoch>`` then the
file's text (as ``proc-vmstat``, read by :mod:`analysis.ingest.vmstat`); ``vmstat`` is
``vmstat -n <interval>`` whose lines mmtests prefixes with ``<epoch> <elapsed> <delta> --``.
Each reader gives one row per sample and item, with ``sample`` and ``epoch_s``:

- buddyinfo: ``node``, ``zone``, ``order``, ``free_blocks`` (blocks of 2^order pages);
- pagetypeinfo: ``node``, ``zone``, ``migratetype``, ``order``, ``free_blocks`` (the "Free
  pages count per migrate type" table; the pageblock counts follow it and are kept apart);
- zoneinfo: ``node``, ``zone``, ``item``, ``value`` (every ``name value`` line of a zone,
  ``pages free`` named ``pages_free``; the node's "per-node stats" with ``zone`` null);
- slabinfo (version 2.1): ``cache``, ``active_objs``, ``num_objs``, ``objsize``,
  ``objperslab``, ``pagesperslab``, ``active_slabs``, ``num_slabs``;
- meminfo: ``item``, ``value``, ``unit`` (``kB`` or null for counts like HugePages_Total);
- vmstat(8): the 17 columns of procps' vmstat (``r b swpd free buff cache si so bi bo in cs
  us sy id wa st``, memory in KiB), 18 with procps-ng 4's ``gu``; header lines counted.

A line a reader does not know is an error naming the file and line, except the lines
each format is known to hold and that carry no sample (zoneinfo's per-cpu pagesets and
protection arrays): those are counted in ``skipped``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis.errors import InputError, input_file
from analysis.ingest.mmtests import Run
from analysis.ingest.textfile import read_text

__all__ = [
    "MONITORS",
    "Monitor",
    "iteration_monitors",
    "monitor_file",
    "monitor_tests",
    "read_monitor",
    "runs_monitor",
    "time_blocks",
]

_TIME = re.compile(r"time: (\d+(?:\.\d+)?)")
Lines = list[tuple[int, str]]


@dataclass(frozen=True)
class Monitor:
    """One monitor log: ``frame`` (rows as the module docstring lists), lines ``skipped``."""

    source: Path
    name: str
    frame: pl.DataFrame
    samples: int
    skipped: int


def time_blocks(path: str | Path, text: str) -> Iterator[tuple[float, Lines]]:
    """``(epoch, numbered lines)`` per ``time: <epoch>`` block of an mmtests monitor log;
    InputError for text before the first time line or time going backwards."""
    epoch: float | None = None
    block: Lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _TIME.fullmatch(line.strip())
        if match is None:
            if line.strip():
                if epoch is None:
                    raise InputError(path, "text before the first 'time:' line", line=number)
                block.append((number, line))
            continue
        value = float(match.group(1))
        if epoch is not None:
            if value < epoch:
                raise InputError(path, f"time goes backwards ({epoch} then {value})", number)
            yield epoch, block
        epoch, block = value, []
    if epoch is not None:
        yield epoch, block


def _bad(path: Path, number: int, what: str, line: str) -> InputError:
    return InputError(path, f"not a {what} line: {line.strip()[:60]!r}", line=number)


_NODE_ZONE = re.compile(r"^Node\s+(\d+),\s+zone\s+(\S+)\s*(.*)$")


def _buddyinfo(path: Path, block: Lines) -> tuple[list[dict], int]:
    rows = []
    for number, line in block:
        match = _NODE_ZONE.match(line.strip())
        if match is None or not match.group(3):
            raise _bad(path, number, "buddyinfo", line)
        node, zone, counts = match.groups()
        for order, value in enumerate(counts.split()):
            rows.append(
                {"node": int(node), "zone": zone, "order": order, "free_blocks": int(value)}
            )
    return rows, 0


_PAGETYPE = re.compile(r"^Node\s+(\d+),\s+zone\s+(\S+),\s+type\s+(\S+)\s+([\d\s]+)$")


def _pagetypeinfo(path: Path, block: Lines) -> tuple[list[dict], int]:
    rows = []
    skipped = 0
    section = "header"
    for number, line in block:
        text = line.strip()
        if text.startswith("Free pages count per migrate type"):
            section = "free"
        elif text.startswith("Number of blocks type"):
            section = "blocks"
        elif section == "free" and (match := _PAGETYPE.match(text)):
            node, zone, kind, counts = match.groups()
            rows.extend(
                {
                    "node": int(node),
                    "zone": zone,
                    "migratetype": kind,
                    "order": order,
                    "free_blocks": int(value),
                }
                for order, value in enumerate(counts.split())
            )
        elif section in ("header", "blocks") or text.startswith(("Page block order", "Pages per")):
            skipped += 1  # pageblock size and the per-type block counts
        else:
            raise _bad(path, number, "pagetypeinfo", line)
    return rows, skipped


_ZONE_ITEM = re.compile(r"^([a-z_][a-z0-9_ ]*?):?\s+(-?\d+)$")


def _zoneinfo(path: Path, block: Lines) -> tuple[list[dict], int]:
    rows = []
    skipped = 0
    node = zone = None
    in_pagesets = node_stats = False
    for number, line in block:
        text = line.strip()
        if match := _NODE_ZONE.match(text):
            node, zone, in_pagesets = int(match.group(1)), match.group(2), False
            continue
        # "per-node stats" (under a node's first zone) hold the node's items until the
        # zone's own "pages free".
        node_stats = (node_stats or text == "per-node stats") and not text.startswith("pages")
        if zone is None:
            raise _bad(path, number, "zoneinfo", line)
        # Per-cpu pagesets ("cpu: 0", "count: 12", "high: ..." that is not the watermark)
        # run from "pagesets" to node_unreclaimable; protection is an array.
        in_pagesets = (in_pagesets or text == "pagesets") and not text.startswith(
            ("node_unreclaimable", "start_pfn")
        )
        if in_pagesets or text.startswith(("protection:", "per-node stats")):
            skipped += 1
            continue
        match = _ZONE_ITEM.match(text)
        if match is None:
            raise _bad(path, number, "zoneinfo", line)
        rows.append(_zone_row(node, None if node_stats else zone, match))
    return rows, skipped


def _zone_row(node: int | None, zone: str | None, match: re.Match) -> dict:
    """A zone's item; ``zone`` null for the node's own (per-node stats)."""
    return {
        "node": node,
        "zone": zone,
        "item": match.group(1).replace(" ", "_"),
        "value": int(match.group(2)),
    }


_SLAB_COLUMNS = ("active_objs", "num_objs", "objsize", "objperslab", "pagesperslab")


def _slabinfo(path: Path, block: Lines) -> tuple[list[dict], int]:
    rows = []
    skipped = 0
    for number, line in block:
        text = line.strip()
        if text.startswith("slabinfo - version:"):
            if text.split(":", 1)[1].strip() != "2.1":
                raise InputError(
                    path, f"slabinfo {text.split(':', 1)[1].strip()} is not 2.1", line=number
                )
            skipped += 1
            continue
        if text.startswith("#"):
            skipped += 1
            continue
        parts = text.split(":")
        head = parts[0].split()
        slabdata = parts[-1].split() if len(parts) == 3 else []
        if len(head) != 6 or len(slabdata) != 4 or slabdata[0] != "slabdata":
            raise _bad(path, number, "slabinfo 2.1", line)
        try:
            values = [int(v) for v in (*head[1:], *slabdata[1:3])]
        except ValueError:
            raise _bad(path, number, "slabinfo 2.1", line) from None
        rows.append(
            {
                "cache": head[0],
                **dict(zip((*_SLAB_COLUMNS, "active_slabs", "num_slabs"), values, strict=True)),
            }
        )
    return rows, skipped


_MEMINFO = re.compile(r"^(\S+):\s+(\d+)(?:\s+(kB))?$")


def _meminfo(path: Path, block: Lines) -> tuple[list[dict], int]:
    rows = []
    for number, line in block:
        match = _MEMINFO.match(line.strip())
        if match is None:
            raise _bad(path, number, "meminfo", line)
        rows.append({"item": match.group(1), "value": int(match.group(2)), "unit": match.group(3)})
    return rows, 0


VMSTAT_COLUMNS = (
    "r",
    "b",
    "swpd",
    "free",
    "buff",
    "cache",
    "si",
    "so",
    "bi",
    "bo",
    "in",
    "cs",
    "us",
    "sy",
    "id",
    "wa",
    "st",
)


def _vmstat8(path: Path, text: str) -> tuple[list[dict], int, int]:
    """vmstat(8) lines behind mmtests' ``<epoch> <elapsed> <delta> --`` prefix."""
    rows = []
    skipped = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        prefix, sep, rest = line.partition(" -- ")
        words = rest.split()
        if sep and words and not words[0].lstrip("-").isdigit():
            skipped += 1  # a repeated vmstat header ("procs ---memory---", "r b swpd ...")
            continue
        columns = (*VMSTAT_COLUMNS, "gu")[: len(words)]
        if not sep or len(prefix.split()) != 3 or len(words) not in (17, 18):
            raise _bad(path, number, "mmtests vmstat(8)", line)
        try:
            epoch = float(prefix.split()[0])
            values = dict(zip(columns, (int(w) for w in words), strict=True))
        except ValueError:
            raise _bad(path, number, "mmtests vmstat(8)", line) from None
        rows.append({"sample": len(rows), "epoch_s": epoch, **values})
    return rows, len(rows), skipped


_BLOCK_READERS: dict[str, Callable[[Path, Lines], tuple[list[dict], int]]] = {
    "proc-buddyinfo": _buddyinfo,
    "proc-pagetypeinfo": _pagetypeinfo,
    "proc-zoneinfo": _zoneinfo,
    "slabinfo": _slabinfo,
    "proc-meminfo": _meminfo,
}
MONITORS = (*_BLOCK_READERS, "vmstat")


def read_monitor(path: str | Path, name: str) -> Monitor:
    """Read the mmtests monitor log ``path`` of monitor ``name`` (one of :data:`MONITORS`)."""
    path = input_file(path)
    text = read_text(path)
    if name == "vmstat":
        rows, samples, skipped = _vmstat8(path, text)
    elif name in _BLOCK_READERS:
        rows, samples, skipped = [], 0, 0
        for sample, (epoch, block) in enumerate(time_blocks(path, text)):
            found, skip = _BLOCK_READERS[name](path, block)
            rows.extend({"sample": sample, "epoch_s": epoch, **row} for row in found)
            samples, skipped = sample + 1, skipped + skip
    else:
        raise ValueError(f"unknown monitor {name!r} (known: {MONITORS})")
    if not rows:
        raise InputError(path, f"no {name} sample")
    return Monitor(path, name, pl.DataFrame(rows, infer_schema_length=None), samples, skipped)


def monitor_file(iteration: str | Path, name: str, test: str) -> Path | None:
    """``<name>-<test>.gz`` (or uncompressed) in an iteration directory, if recorded."""
    directory = Path(iteration)
    return next(
        (p for p in (directory / f"{name}-{test}.gz", directory / f"{name}-{test}") if p.is_file()),
        None,
    )


def iteration_monitors(iteration: str | Path, test: str) -> dict[str, Monitor]:
    """Every monitor of :data:`MONITORS` recorded for ``test`` in an iteration directory
    (an mmtests tree's or a capture's), by name; absent monitors are left out."""
    found = {name: monitor_file(iteration, name, test) for name in MONITORS}
    return {name: read_monitor(path, name) for name, path in found.items() if path is not None}


def monitor_tests(iteration: str | Path) -> list[str]:
    """Tests with a monitor log of :data:`MONITORS` in an iteration directory (from the
    file names ``<monitor>-<test>[.gz]``), sorted."""
    found = set()
    for path in Path(iteration).iterdir():
        stem = path.name.removesuffix(".gz")
        for name in MONITORS:
            if stem.startswith(name + "-") and not stem.endswith(".start"):
                found.add(stem.removeprefix(name + "-"))
    return sorted(found)


def runs_monitor(runs: tuple[Run, ...], name: str) -> pl.DataFrame:
    """Monitor ``name`` of every iteration and test of ``runs`` in one frame: ``run``,
    ``iteration``, ``test``, ``t_s`` (seconds since the log's first sample) and the
    monitor's columns; empty when no iteration recorded it."""
    frames = []
    for run in runs:
        for iteration in run.iterations:
            for test in iteration.tests or monitor_tests(iteration.path):
                path = monitor_file(iteration.path, name, test)
                if path is None:
                    continue
                frame = read_monitor(path, name).frame
                frames.append(
                    frame.with_columns(
                        run=pl.lit(run.name),
                        iteration=pl.lit(iteration.index),
                        test=pl.lit(test),
                        t_s=pl.col("epoch_s") - pl.col("epoch_s").min(),
                    )
                )
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
