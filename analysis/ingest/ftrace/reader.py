"""ftrace text → one typed Polars table per event, with an account of every line.

Reads ``trace``, ``trace_pipe``, ``trace-cmd report``, ``perf script`` output and mail
pastes from any kernel since 2.6.36 (layouts: :mod:`analysis.ingest.ftrace.layout`;
payloads and columns: :mod:`analysis.ingest.ftrace.tokenizer`), plain or gz/zst/xz/bz2.

Streaming: the decompressed text is cut into blocks of whole lines (``BLOCK_BYTES``),
parsed by two worker threads (the compiled passes and the Parquet writer release the
GIL) and written as lz4 Parquet part files ``event=<name>/part-<block>.parquet``, so
memory stays bounded by a few blocks whatever the input size. The dataset is cached in
``build/ingest/<blake3>-v<N>/``, keyed by the BLAKE3 digest of the input's raw bytes
(hashed by the reading thread as it reads); a small stat index (size, mtime) finds it
again without re-reading the file.

Per block, two compiled passes (C, ``_parse.c``, built with the package: no JIT): line
ends, layout and header fields (:func:`~.layout.scan_lines`), then one in-order pass
that tokenizes each payload and writes every common column and every field of a known
event as Arrow buffers (:mod:`.columns`). Only events that pass cannot place (unknown
events, a key outside the event's known fields) are tokenized apart and go through the
general per-event path (:func:`~.tokenizer.event_frame`). ``benchmarks/ftrace.md``
has the throughput (issues 4 and 23).

Accounting identity, checked by the tests for arbitrary input::

    lines == sum(events.values()) + header_lines + blank_lines + lost_markers
             + stack_lines + unparsed

``invalid_utf8_lines`` is not a category: such lines are decoded with U+FFFD and then
classified like any other line. Unparsed samples keep the raw bytes, escaped (``\\xNN``).
A last line without its newline is unparsed ("truncated final line") even when it would
parse: a capture cut mid-line may have lost digits. Input with no event or lost-event
line, unless it is trace headers only, is not a trace: :func:`read` raises InputError.

Epoch rule: ``<trace>.start`` (or ``<trace minus .gz/.zst/...>.start``) holds the epoch
(seconds, or integer ns) on line 1, as mmtests writes it; ``mmlab capture`` adds the trace
clock reading (ns, or ``secs.frac``) taken at that instant on line 2. Then
``epoch_ns = start_epoch_ns + (ts_ns - clock_at_start_ns)``. With line 1 only, the first
event's timestamp stands in for ``clock_at_start_ns``. Without a start file, or with a
counter clock, ``epoch_ns`` is null.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
from blake3 import blake3

from analysis.errors import InputError, input_file
from analysis.host import find_memory_hierarchy
from analysis.ingest.compressed import detect_compression, iter_blocks
from analysis.ingest.ftrace.arrow import frame
from analysis.ingest.ftrace.cache import (
    DEFAULT_CACHE,
    cached,
    event_parts,
    load_meta,
    path_lock,
    store,
    write_tables,
)
from analysis.ingest.ftrace.columns import BlockColumns
from analysis.ingest.ftrace.layout import (
    BLANK,
    COUNTER_CLOCK,
    CPU,
    EVENT,
    HEADER,
    LOST,
    NAME_END,
    NAME_HASH,
    NAME_START,
    REASON,
    REASONS,
    STACK,
    TS,
    UNPARSED,
    find_lines,
    group_hashes,
    scan_lines,
    text_shape,
)
from analysis.ingest.ftrace.malloc import give_back_freed_memory, reuse_freed_memory
from analysis.ingest.ftrace.perf_trace import convert as convert_perf_trace
from analysis.ingest.ftrace.perf_trace import looks_like_perf_trace
from analysis.ingest.ftrace.tokenizer import event_schema
from analysis.ingest.raw_text import printed_form, unmappable
from analysis.ingest.textfile import read_text

__all__ = [
    "Accounting",
    "LostEvents",
    "Trace",
    "UnparsedReason",
    "available_memory_bytes",
    "block_bytes",
    "ingest",
    "map_in_processes",
    "parse_text",
    "pool_workers",
    "read",
    "trace_cmd_report",
]

BLOCK_BYTES = 32 << 20
WORKERS = 2
SAMPLES = 5
SAMPLE_BYTES = 200  # of each sample line kept (a 10 MB line is not shown whole)
LINES_KEPT = 1000
# Peak RSS of one ingest process, whatever the input size (benchmarks/ftrace.md: 770 MB
# measured, 1536 MB the stated bound): what each parallel worker is allowed.
WORKER_PEAK_BYTES = 1536 << 20
_COMPRESSED_SUFFIXES = (".gz", ".zst", ".xz", ".bz2")


@dataclass(frozen=True)
class LostEvents:
    """A ``CPU:N [LOST M EVENTS]`` marker: ring-buffer overrun before the next event of ``cpu``.

    ``count`` is None for ``CPU:N [LOST EVENTS]`` (~5.7+ when the number is unknown).
    """

    cpu: int
    count: int | None
    line: int


@dataclass(frozen=True)
class UnparsedReason:
    """Lines no layout could read, for one reason: how many, where (first 1000) and samples."""

    count: int
    lines: tuple[int, ...]
    samples: tuple[str, ...]


@dataclass(frozen=True)
class Accounting:
    """Where every line of one input went (see the identity in the module docstring)."""

    source: str
    bytes: int
    lines: int
    events: dict[str, int]
    header_lines: int
    blank_lines: int
    stack_lines: int
    lost_events: tuple[LostEvents, ...]
    unparsed: int
    unparsed_by_reason: dict[str, UnparsedReason]
    invalid_utf8_lines: int
    truncated_final_line: bool
    counter_clock: bool

    @property
    def lost_markers(self) -> int:
        """Number of lost-event marker lines."""
        return len(self.lost_events)

    @property
    def lost_events_total(self) -> int:
        """Events the kernel reported dropped (markers without a count add nothing)."""
        return sum(lost.count or 0 for lost in self.lost_events)

    def to_json(self) -> dict:
        """The ``mmlab ingest --json`` form (keys fixed by issue 4)."""
        return {
            "source": self.source,
            "bytes": self.bytes,
            "lines": self.lines,
            "events": dict(sorted(self.events.items())),
            "header_lines": self.header_lines,
            "blank_lines": self.blank_lines,
            "stack_lines": self.stack_lines,
            "lost_events": [asdict(lost) for lost in self.lost_events],
            "lost_events_total": self.lost_events_total,
            "unparsed": self.unparsed,
            "unparsed_samples": {
                reason: {"count": u.count, "lines": list(u.lines[:20]), "samples": list(u.samples)}
                for reason, u in self.unparsed_by_reason.items()
            },
            "invalid_utf8_lines": self.invalid_utf8_lines,
            "truncated_final_line": self.truncated_final_line,
            "counter_clock": self.counter_clock,
        }

    @classmethod
    def from_json(cls, data: dict) -> Accounting:
        """Inverse of :meth:`to_json` (line lists are kept in full in ``accounting.json``)."""
        return cls(
            source=data["source"],
            bytes=data["bytes"],
            lines=data["lines"],
            events=data["events"],
            header_lines=data["header_lines"],
            blank_lines=data["blank_lines"],
            stack_lines=data["stack_lines"],
            lost_events=tuple(LostEvents(**lost) for lost in data["lost_events"]),
            unparsed=data["unparsed"],
            unparsed_by_reason={
                reason: UnparsedReason(u["count"], tuple(u["lines"]), tuple(u["samples"]))
                for reason, u in data["unparsed_samples"].items()
            },
            invalid_utf8_lines=data["invalid_utf8_lines"],
            truncated_final_line=data["truncated_final_line"],
            counter_clock=data["counter_clock"],
        )


# A block of text: a plain file's pages (mapped), or decompressed or decoded bytes.
Text = bytes | bytearray | memoryview


@dataclass
class _BlockResult:
    """What one block contributes to the accounting (frames are already on disk)."""

    lines: int = 0
    events: dict[str, int] = field(default_factory=dict)
    header: int = 0
    blank: int = 0
    stack: int = 0
    lost: list[LostEvents] = field(default_factory=list)
    unparsed: dict[str, list] = field(default_factory=dict)
    invalid_utf8: int = 0
    truncated: bool = False
    counter_clock: bool = False
    first_ts: int | None = None


def _decode(data: Text, ascii: bool) -> tuple[Text, int]:
    """Valid UTF-8 bytes of ``data`` (invalid sequences → U+FFFD) and how many lines had
    any; ``ascii``: every byte of ``data`` is ASCII (:func:`~.layout.text_shape`)."""
    if ascii:  # the usual case
        return data, 0
    try:
        str(data, "utf-8")
        return data, 0
    except UnicodeDecodeError:
        fixed = str(data, "utf-8", "replace")
        bad = sum(1 for line in fixed.split("\n") if "\ufffd" in line)
        # Lines already holding U+FFFD are counted too: the input could not be told apart.
        return fixed.encode("utf-8"), bad


def _escape(raw: bytes) -> str:
    """``raw`` as printable text: invalid UTF-8 as ``\\xNN``, control characters (NUL, ESC,
    ...) as ``\\xNN``/``\\uNNNN``, so a sample of a binary line cannot drive a terminal."""
    text = raw.decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _byte_array(data: Text) -> np.ndarray:
    """Read-only uint8 view of ``data``, whatever its type."""
    buf = np.frombuffer(data, np.uint8)
    buf.flags.writeable = False
    return buf


def parse_block(
    data: Text,
    line_base: int,
    final: bool,
    shape: tuple[int, bool] | None = None,
) -> tuple[_BlockResult, dict[str, pa.Table | pl.DataFrame]]:
    """Parse whole lines ``data`` (first line is line ``line_base + 1``) into event tables;
    ``shape``: its :func:`~.layout.text_shape`, when the caller has it.

    Returns the block's accounting and ``{event name: table}``: an Arrow table from the
    column pass, or a Polars frame from the general path.
    """
    raw = data
    lines, ascii = text_shape(data) if shape is None else shape
    data, invalid = _decode(data, ascii)
    buf = _byte_array(data)
    # Decoding keeps every newline (0x0A is never part of an invalid sequence), so the raw
    # text's line count holds; scan_lines refuses a count that is not the text's.
    starts, ends, kind, out = scan_lines(buf, lines)
    # Samples are cut from the undecoded bytes, so invalid UTF-8 shows as \xNN.
    raw_lines = (starts, ends.copy()) if not invalid else find_lines(raw)
    res = _BlockResult(lines=len(starts), invalid_utf8=invalid)
    if final and data and data[-1:] != b"\n":
        # A capture cut mid-line: even a line that parses may have lost digits or fields.
        res.truncated = True
        if kind[-1] in (EVENT, UNPARSED):
            kind[-1] = UNPARSED
            out[-1, REASON] = REASONS.index("truncated final line")
    counts = np.bincount(kind, minlength=6)
    res.header, res.blank, res.stack = int(counts[HEADER]), int(counts[BLANK]), int(counts[STACK])
    for k in np.flatnonzero(kind == LOST):
        count = int(out[k, TS])
        res.lost.append(
            LostEvents(int(out[k, CPU]), None if count < 0 else count, int(line_base + k + 1))
        )
    rows = np.flatnonzero(kind == EVENT)
    columns = _block_columns(buf, out, ends, rows, line_base)
    if columns is not None:
        bad = columns.failures()
        if bad.any():
            kind[rows[bad]] = UNPARSED
            out[rows[bad], REASON] = REASONS.index("field value not a number")
            rows = rows[~bad]
            columns = _block_columns(buf, out, ends, rows, line_base)
    for k in np.flatnonzero(kind == UNPARSED):
        entry = res.unparsed.setdefault(REASONS[out[k, REASON]], [0, [], []])
        entry[0] += 1
        if len(entry[1]) < LINES_KEPT:
            entry[1].append(int(line_base + k + 1))
        if len(entry[2]) < SAMPLES:
            start = raw_lines[0][k]
            entry[2].append(_escape(bytes(raw[start : min(raw_lines[1][k], start + SAMPLE_BYTES)])))
    if columns is None:
        return res, {}
    res.first_ts = int(out[rows[0], TS])
    res.counter_clock = bool(out[rows, COUNTER_CLOCK].any())
    tables = {name: columns.table(j) for j, name in enumerate(columns.names)}
    res.events = {name: len(table) for name, table in tables.items()}
    return res, tables


def _block_columns(buf, out, ends, rows, line_base: int) -> BlockColumns | None:
    """The compiled column pass over the event lines ``rows`` (None when there are none)."""
    if not len(rows):
        return None
    first, ids = group_hashes(out[rows, NAME_HASH].view(np.uint64))
    names = [
        bytes(buf[out[rows[i], NAME_START] : out[rows[i], NAME_END]]).decode("ascii", "replace")
        for i in first
    ]
    return BlockColumns(buf, out, ends, rows, ids, names, line_base)


def parse_text(text: str | bytes) -> tuple[Accounting, dict[str, pl.DataFrame]]:
    """Parse a whole trace held in memory (tests, pasted snippets): accounting and frames."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    res, tables = parse_block(data, 0, final=True)
    frames = {
        n: printed_form(n, (t if isinstance(t, pl.DataFrame) else frame(t)).lazy()).collect()
        for n, t in tables.items()
    }
    return _accounting("<text>", len(data), [res]), frames


def _accounting(source: str, nbytes: int, results: Iterable[_BlockResult]) -> Accounting:
    """Merge per-block results (in input order) into one Accounting."""
    results = list(results)
    events: dict[str, int] = {}
    unparsed: dict[str, list] = {}
    for res in results:
        for name, n in res.events.items():
            events[name] = events.get(name, 0) + n
        for reason, (n, lines, samples) in res.unparsed.items():
            entry = unparsed.setdefault(reason, [0, [], []])
            entry[0] += n
            entry[1].extend(lines[: LINES_KEPT - len(entry[1])])
            entry[2].extend(samples[: SAMPLES - len(entry[2])])
    return Accounting(
        source=source,
        bytes=nbytes,
        lines=sum(r.lines for r in results),
        events=events,
        header_lines=sum(r.header for r in results),
        blank_lines=sum(r.blank for r in results),
        stack_lines=sum(r.stack for r in results),
        lost_events=tuple(lost for r in results for lost in r.lost),
        unparsed=sum(v[0] for v in unparsed.values()),
        unparsed_by_reason={
            reason: UnparsedReason(n, tuple(lines), tuple(samples))
            for reason, (n, lines, samples) in unparsed.items()
        },
        invalid_utf8_lines=sum(r.invalid_utf8 for r in results),
        truncated_final_line=any(r.truncated for r in results),
        counter_clock=any(r.counter_clock for r in results),
    )


def _parse_clock(text: str, *, epoch: bool) -> int:
    """``secs.frac`` → ns. A bare integer is ns, except an epoch of ≤ 11 digits (seconds)."""
    text = text.strip()
    if "." in text:
        return int(Decimal(text) * 1_000_000_000)
    value = int(text)
    return value * 1_000_000_000 if epoch and len(text.lstrip("-")) <= 11 else value


def start_file(path: Path) -> Path | None:
    """The ``.start`` file beside a capture (``x.gz.start`` or ``x.start``), if any."""
    candidates = [path.with_name(path.name + ".start")]
    if path.suffix in _COMPRESSED_SUFFIXES:
        candidates.append(path.with_suffix(".start"))
    return next((p for p in candidates if p.is_file()), None)


def epoch_offset_ns(path: Path, first_ts: int | None, counter_clock: bool) -> int | None:
    """``epoch_ns - ts_ns`` for this capture (module docstring's epoch rule), or None."""
    start = start_file(path)
    if start is None or counter_clock:
        return None
    lines = [line for line in read_text(start).splitlines() if line.strip()]
    try:
        epoch = _parse_clock(lines[0].split()[-1], epoch=True)
        clock = _parse_clock(lines[1], epoch=False) if len(lines) > 1 else first_ts
    except (ValueError, ArithmeticError, IndexError) as exc:
        raise InputError(start, f"cannot read the capture start time: {exc}", line=1) from exc
    return None if clock is None else epoch - clock


def block_bytes(path: Path) -> int:
    """Bytes per block for ``path``: :data:`BLOCK_BYTES`, or for plain text a little less,
    so that the blocks divide evenly between the :data:`WORKERS`.

    With an uneven split one worker parses the last block while the other has nothing
    left: up to a block's parse time (0.25 s) of a core idle at the end of every ingest.
    Compressed input keeps :data:`BLOCK_BYTES`: its text size is not known up front.
    """
    with path.open("rb") as fh:
        if detect_compression(fh.read(8)) != "plain":
            return BLOCK_BYTES
        size = os.fstat(fh.fileno()).st_size
    blocks = max(1, -(-size // (BLOCK_BYTES * WORKERS))) * WORKERS
    return max(1, -(-size // blocks))


def _ingest_into(path: Path, directory: Path, progress: Callable[[int, int], None] | None):
    """Stream ``path`` into Parquet parts under ``directory``; return (accounting, digest,
    block results)."""
    reuse_freed_memory()
    digest: list[str] = []
    results: dict[int, _BlockResult] = {}
    nbytes = 0
    line_base = 0
    inflight: queue.Queue = queue.Queue(maxsize=WORKERS + 1)
    errors: list[BaseException] = []

    def work(block: int, data: Text, base: int, final: bool, shape: tuple[int, bool]) -> None:
        try:
            res, tables = parse_block(data, base, final, shape)
            write_tables(directory, block, tables)
            results[block] = res
        except BaseException as exc:  # re-raised in the reading thread
            errors.append(exc)
        finally:
            inflight.get()

    with ThreadPoolExecutor(WORKERS) as pool:
        for block, chunk in enumerate(iter_blocks(path, block_bytes(path), digest)):
            if errors:
                break
            inflight.put(block)  # blocks while WORKERS+1 blocks are in flight: bounded memory
            shape = text_shape(chunk.data)
            pool.submit(work, block, chunk.data, line_base, chunk.final, shape)
            nbytes += len(chunk.data)
            line_base += shape[0]
            if progress is not None:
                progress(len(chunk.data), line_base)
    give_back_freed_memory()
    if errors:
        raise errors[0]
    ordered = [results[i] for i in sorted(results)]
    return _accounting(str(path), nbytes, ordered), digest[0], ordered


@dataclass(frozen=True)
class Trace:
    """An ingested capture: per-event frames (lazy, from the Parquet cache) and accounting."""

    source: Path
    directory: Path
    accounting: Accounting
    epoch_offset_ns: int | None

    @property
    def event_names(self) -> list[str]:
        """Bare tracepoint names present in the capture, sorted."""
        return sorted(name for name, n in self.accounting.events.items() if n)

    @property
    def lost_events_total(self) -> int:
        """Events the kernel reported dropped before they reached the text."""
        return self.accounting.lost_events_total

    def lazy(self, name: str) -> pl.LazyFrame:
        """Frame of one event, lazily (empty with the event's schema when absent).

        Columns: line, comm, pid, tgid, cpu, irq_flags, ts_ns, epoch_ns, instance (the
        trace-cmd buffer, else null), then the event's fields (:data:`.events.EVENTS`),
        then any extra fields a newer kernel adds. ``trace-cmd report -R`` rows are given
        their printed form (:func:`analysis.ingest.raw_text.printed_form`).
        """
        frame = self._stored(name)
        frame = printed_form(name, frame)
        offset = self.epoch_offset_ns
        epoch = pl.lit(None, pl.Int64) if offset is None else pl.col("ts_ns") + offset
        columns = frame.collect_schema().names()
        at = columns.index("ts_ns") + 1
        ordered = [*columns[:at], "epoch_ns", *columns[at:]]
        return frame.with_columns(epoch.cast(pl.Int64).alias("epoch_ns")).select(ordered)

    def events(self, name: str) -> pl.DataFrame:
        """Frame of one event (see :meth:`lazy`)."""
        return self.lazy(name).collect()

    def _stored(self, name: str) -> pl.LazyFrame:
        """One event's rows as parsed (empty with the event's schema when absent)."""
        parts = event_parts(self.directory, name)
        if parts:
            return pl.concat([pl.scan_parquet(p) for p in parts], how="diagonal_relaxed")
        return pl.LazyFrame(schema=event_schema(name))


def _load(path: Path, directory: Path) -> Trace:
    meta = load_meta(directory)
    # The dataset is shared by every file with these bytes: name the one asked for.
    accounting = replace(Accounting.from_json(meta["accounting"]), source=str(path))
    _check_is_trace(path, accounting)
    trace = Trace(path, directory, accounting, meta["epoch_offset_ns"])
    _check_raw(trace)
    return trace


def _check_raw(trace: Trace) -> None:
    """InputError at the first ``trace-cmd report -R`` field that cannot be given its printed
    name (:func:`analysis.ingest.raw_text.unmappable`): read as it stands it would be
    silently wrong."""
    for name in trace.event_names:
        found = unmappable(name, trace._stored(name))
        if found is not None:
            key, line = found
            raise InputError(
                trace.source,
                f"is `trace-cmd report -R` (raw) text: {name}'s {key} is a number whose "
                "name depends on the capturing kernel; use `trace-cmd report` without -R",
                line=line,
            )


def _check_is_trace(path: Path, accounting: Accounting) -> None:
    """InputError unless some line is a trace event or lost-event marker, or the file is
    trace headers only (a capture in which nothing fired); binary or other text is not a
    capture with no reclaim, and must not be reported as one."""
    acc = accounting
    if acc.events or acc.lost_events or (acc.header_lines and not acc.unparsed):
        return
    if not acc.unparsed:
        raise InputError(
            path,
            f"holds no trace lines, only {acc.lines:,} blank or stack-frame lines"
            if acc.lines
            else "is empty",
        )
    first = min(u.lines[0] for u in acc.unparsed_by_reason.values())
    raise InputError(
        path,
        f"not a trace: no line matches a trace layout ({acc.unparsed:,} of {acc.lines:,} "
        f"lines unparsed, {acc.invalid_utf8_lines:,} not UTF-8)",
        line=first,
    )


# Magic numbers of the binary traces users have: trace-cmd's trace.dat
# (lib/trace-cmd/trace-output.c) and perf.data (tools/perf/util/header.c, either byte order).
_TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"
_PERF_MAGICS = (b"PERFILE2", b"2ELIFREP", b"PERFFILE")


def _binary_trace(path: Path) -> str | None:
    """``"trace.dat"`` or ``"perf.data"`` when ``path`` is one of those binary files."""
    with path.open("rb") as fh:
        head = fh.read(len(_TRACE_DAT_MAGIC))
    if head.startswith(_TRACE_DAT_MAGIC):
        return "trace.dat"
    return "perf.data" if head[:8] in _PERF_MAGICS else None


def _head_text(path: Path) -> str:
    """The first bytes of a plain-text file (empty for compressed input)."""
    with path.open("rb") as fh:
        head = fh.read(4096)
    return "" if detect_compression(head[:8]) != "plain" else head.decode("utf-8", "replace")


def trace_cmd_report(path: Path, out: Path) -> None:
    """Write ``trace-cmd report`` of the binary ``path`` to ``out`` (docs/trace-formats.md
    "Binary traces"); InputError saying what to do when trace-cmd is missing or fails."""
    exe = shutil.which("trace-cmd")
    if exe is None:
        raise InputError(
            path,
            "is a binary trace-cmd trace.dat and trace-cmd is not installed: install it "
            "(Debian/Ubuntu: apt-get install trace-cmd) or convert the file with "
            f"`trace-cmd report -i {path} > {path.name}.txt` and read the text",
        )
    with out.open("wb") as sink:
        run = subprocess.run([exe, "report", "-i", str(path)], stdout=sink, stderr=subprocess.PIPE)
    if run.returncode != 0:
        reason = run.stderr.decode("utf-8", "replace").strip().replace("\n", " ")
        raise InputError(path, f"`trace-cmd report` failed (exit {run.returncode}): {reason}")


def read(
    path: str | Path,
    *,
    cache_dir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    note_unparsed: bool = True,
) -> Trace:
    """Ingest one capture (or reuse its cached dataset) and return it as a :class:`Trace`.

    ``cache_dir`` defaults to ``build/ingest``; ``progress(bytes, lines_so_far)`` is called
    per block. Damaged compressed input raises InputError with the byte offset. A binary
    trace-cmd ``trace.dat`` is read through ``trace-cmd report``; a ``perf.data`` is refused
    with the ``perf script`` command that converts it. Unparsed lines are counted on
    stderr (``note_unparsed``; ``mmlab ingest`` lists them instead).
    """
    path = input_file(path)
    cache = Path(cache_dir) if cache_dir is not None else DEFAULT_CACHE
    binary = _binary_trace(path)
    if binary == "perf.data":
        raise InputError(
            path,
            "is a binary perf.data: convert it to text with "
            f"`perf script -i {path} > {path.name}.txt` and read the text",
        )

    perf_trace = binary is None and looks_like_perf_trace(_head_text(path))

    def build(tmp: Path) -> tuple[str, dict]:
        if perf_trace:
            # Parsed as the converted text (line for line, so line numbers hold), cached
            # under the digest of the perf trace text itself.
            with tempfile.TemporaryDirectory(dir=tmp) as text_dir:
                text = Path(text_dir) / "perf-trace.txt"
                convert_perf_trace(path, text)
                accounting, _, results = _ingest_into(text, tmp, progress)
            with path.open("rb") as fh:
                digest = hashlib.file_digest(fh, blake3).hexdigest()
            accounting = replace(accounting, source=str(path))
        elif binary == "trace.dat":
            # Parsed as its `trace-cmd report` text (line numbers are that text's), cached
            # under the digest of the trace.dat itself.
            with tempfile.TemporaryDirectory(dir=tmp) as text_dir:
                text = Path(text_dir) / "report.txt"
                trace_cmd_report(path, text)
                accounting, _, results = _ingest_into(text, tmp, progress)
            with path.open("rb") as fh:
                digest = hashlib.file_digest(fh, blake3).hexdigest()
            accounting = replace(accounting, source=str(path))
        else:
            accounting, digest, results = _ingest_into(path, tmp, progress)
        first_ts = next((r.first_ts for r in results if r.first_ts is not None), None)
        meta = {
            "epoch_offset_ns": epoch_offset_ns(path, first_ts, accounting.counter_clock),
            "accounting": {**accounting.to_json(), **_full_lines(accounting)},
        }
        return digest, meta

    with path_lock(cache, path):
        directory = cached(cache, path) or store(cache, path, build)
    trace = _load(path, directory)
    if (acc := trace.accounting.unparsed) and note_unparsed:
        # Every command that analyses a trace says so (stalls and fit also in their output).
        first = sorted(n for u in trace.accounting.unparsed_by_reason.values() for n in u.lines)
        print(
            f"mmlab: {path}: {acc:,} unparsed lines (first at line {first[0]}); "
            "mmlab ingest shows them",
            file=sys.stderr,
        )
    return trace


def _full_lines(accounting: Accounting) -> dict:
    """``unparsed_samples`` with every kept line number (to_json trims them for display)."""
    return {
        "unparsed_samples": {
            reason: {"count": u.count, "lines": list(u.lines), "samples": list(u.samples)}
            for reason, u in accounting.unparsed_by_reason.items()
        }
    }


def _read_for_pool(path: str, cache_dir: str | None) -> dict:
    """Worker entry point (process pool or Dask): ingest one file, return its accounting."""
    trace = read(path, cache_dir=Path(cache_dir) if cache_dir else None)
    return trace.accounting.to_json()


def pool_workers(files: int, cpus: int, mem_available_bytes: int) -> int:
    """Worker processes for ``files`` files: at most one per core and one per
    :data:`WORKER_PEAK_BYTES` of ``MemAvailable`` (``/proc/meminfo``), at least one."""
    return max(1, min(files, cpus, mem_available_bytes // WORKER_PEAK_BYTES))


def available_memory_bytes(mem_available_bytes: int, proc: Path = Path("/proc")) -> int:
    """``mem_available_bytes`` (``MemAvailable``), or less when the memory cgroup of this
    process or one of its ancestors leaves less below its limit (v2 ``memory.max`` -
    ``memory.current``, v1 ``memory.limit_in_bytes`` - ``memory.usage_in_bytes``): in a
    container or a limited slice ``MemAvailable`` is the whole machine's."""
    hierarchy = find_memory_hierarchy((proc / "mounts").read_text())
    if hierarchy is None:
        return mem_available_bytes
    version, root = hierarchy
    limit_name, usage_name = (
        ("memory.max", "memory.current")
        if version == 2
        else ("memory.limit_in_bytes", "memory.usage_in_bytes")
    )
    for line in (proc / "self" / "cgroup").read_text().splitlines():
        _, controllers, relative = line.split(":", 2)
        # v2 has one hierarchy (no controller names); v1 one per controller set.
        wanted = controllers == "" if version == 2 else "memory" in controllers.split(",")
        if wanted:
            group = root / relative.lstrip("/")
            break
    else:
        return mem_available_bytes
    free = mem_available_bytes
    for level in (group, *group.parents):
        if not level.is_relative_to(root):
            break
        limit = level / limit_name
        if limit.is_file() and (text := limit.read_text().strip()) != "max":
            free = min(free, int(text) - int((level / usage_name).read_text()))
    return max(free, 0)


def map_in_processes(
    fn: Callable[[str, str | None], dict], files: list[str], cache: str | None, workers: int
) -> list[dict]:
    """``[fn(f, cache) for f in files]`` over ``workers`` spawned processes.

    A worker killed mid-file (the OOM killer, a signal) breaks the whole pool; every file
    not finished then, and any file whose worker ran out of memory (MemoryError, when
    overcommit refuses rather than kills), is retried alone, one at a time, in a fresh
    process. A file that fails so again is an InputError naming it.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # spawn, not fork: forking a process whose Polars/Arrow thread pools are live deadlocks.
    context = multiprocessing.get_context("spawn")
    results: dict[int, dict] = {}
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(fn, f, cache) for f in files]
        for i, future in enumerate(futures):
            with contextlib.suppress(BrokenProcessPool, MemoryError):
                results[i] = future.result()
    for i in sorted(set(range(len(files))) - set(results)):
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            try:
                results[i] = pool.submit(fn, files[i], cache).result()
            except (BrokenProcessPool, MemoryError) as exc:
                how = (
                    "ran out of memory"
                    if isinstance(exc, MemoryError)
                    else "died (killed, e.g. by the OOM killer: see dmesg)"
                )
                raise InputError(
                    files[i], f"the ingest process {how} twice on this file, once alone"
                ) from None
    return [results[i] for i in range(len(files))]


def ingest(
    paths: Iterable[str | Path], *, cache_dir: Path | None = None, scheduler: str | None = None
) -> list[dict]:
    """Ingest several captures in parallel across files; return their accountings (JSON form).

    With ``scheduler`` (a Dask scheduler address, or a ``distributed.Client``) the files
    are spread over that cluster; otherwise over local processes
    (:func:`pool_workers`, :func:`map_in_processes`).
    """
    files = [str(p) for p in paths]
    cache = str(cache_dir) if cache_dir is not None else None
    if scheduler is not None:
        from distributed import Client

        client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
        futures = client.map(_read_for_pool, files, cache_dir=cache, pure=False)
        return client.gather(futures)
    if len(files) == 1:
        return [_read_for_pool(files[0], cache)]
    import psutil

    free = available_memory_bytes(psutil.virtual_memory().available)
    workers = pool_workers(len(files), os.cpu_count() or 1, free)
    return map_in_processes(_read_for_pool, files, cache, workers)
