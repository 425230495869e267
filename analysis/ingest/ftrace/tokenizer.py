"""Payload tokenizer: ``key=value`` and free-text payloads → tokens → typed Polars columns.

Known events (the registry, :mod:`.events`) get a fixed column set, the union of every
kernel version's fields, so frames from any kernel share one schema (absent fields are
null), typed per event as the registry says.
Anything else a newer kernel appends (7.1's ``memcg_id``) is kept as an extra column,
Int64 if every value is an integer, else String. Unknown events keep ``payload`` (raw
text) and ``fields`` (List of Struct{key, value}).

Payload rules (compiled, ``_parse.c``, one pass): words are split on runs of spaces (so
``%-8s`` zone padding disappears); ``key=value`` words give a field, a value glued to a comma
(``zone_end=0x100000,``) loses it, a value opening ``(`` runs to ``)``
(``range=(0x1 ~ 0x2)``). Free text (shrink_slab) is read as phrases followed by a
value: consecutive words form a phrase key until an integer (or, after ``gfp_flags``,
any word) ends it: ``objects to shrink 5`` → ``objects_to_shrink=5``. In shrink_slab the
first two words are the shrinker symbol (``%pS``) and pointer (``%p:``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from analysis.ingest.events import (
    FLAGS,
    INT,
    KNOWN_EVENTS,
    SHRINK_SLAB,
    STR,
    field_type,
    polars_fields,
)
from analysis.ingest.ftrace import _parse
from analysis.ingest.ftrace.arrow import ints, strings
from analysis.ingest.ftrace.layout import fnv1a

__all__ = [
    "COMMON_SCHEMA",
    "event_frame",
    "event_schema",
    "field_plan",
    "tokenize",
]

# Free-text phrases of shrink_slab → the TP_STRUCT__entry field they print.
_PHRASES = {
    "objects_to_shrink": "nr_objects_to_shrink",
    "unused_scan_count": "unused_scan",
    "new_scan_count": "new_scan",
    "last_shrinker_return_val": "retval",
}
_SYNTHETIC = {-2: "shrinker", -3: "shrinker_ptr"}

COMMON_SCHEMA = {
    "line": pl.Int64,
    "comm": pl.String,
    "pid": pl.Int32,
    "tgid": pl.Int32,
    "cpu": pl.Int32,
    "irq_flags": pl.String,
    "ts_ns": pl.Int64,
    # The trace-cmd buffer (``record -B NAME``) or input file named before the line; null
    # for ftrace and perf text (docs/trace-formats.md "Other producers").
    "instance": pl.String,
}
FIELDS_DTYPE = pl.List(pl.Struct({"key": pl.String, "value": pl.String}))


def event_schema(event: str) -> dict[str, pl.DataType]:
    """Full Polars schema of an event frame (common columns + the event's own)."""
    if event in KNOWN_EVENTS:
        return {**COMMON_SCHEMA, **polars_fields(event)}
    return {**COMMON_SCHEMA, "payload": pl.String, "fields": FIELDS_DTYPE}


_TOKEN_TYPES = (
    np.int64,  # first token of each line
    np.int64,  # token count of each line
    np.uint64,  # hash of each line's key sequence
    np.int64,  # key start (-2/-3: the shrinker symbol/pointer words, key hash 1/2)
    np.int64,  # key end
    np.uint64,  # key hash (FNV-1a of the key text)
    np.int64,  # value start (-1: a phrase without a value)
    np.int64,  # value end
    np.int64,  # integer value (0 unless it is one)
    np.bool_,  # the value is an integer
)


def tokenize(buf, pstart: np.ndarray, pend: np.ndarray, mode: np.ndarray) -> tuple:
    """Split payloads ``buf[pstart:pend]`` into fields (see module docstring); ``mode[k]``
    is 1 for a shrink_slab line (free text).

    Returns per line (first token index, token count, key-signature hash) and per token
    (key span, key hash, value span, integer value, integer ok), packed line after line.
    A key start of -2/-3 marks the synthetic shrinker symbol/pointer keys (key hash 1/2);
    a value span of (-1, -1) a bare phrase.
    """
    arrays = _parse.tokenize(
        buf,
        np.ascontiguousarray(pstart, np.int64),
        np.ascontiguousarray(pend, np.int64),
        np.ascontiguousarray(mode, np.uint8),
    )
    return tuple(np.frombuffer(a, t) for a, t in zip(arrays, _TOKEN_TYPES, strict=True))


def key_name(buf: np.ndarray, s: int, e: int) -> str:
    """Field name of a token key: ``nid:`` → ``nid``, ``objects to shrink`` → TP field name."""
    if s < 0:
        return _SYNTHETIC[s]
    text = bytes(buf[s:e]).decode("utf-8", "replace")
    name = "_".join(text.split()).strip(":")
    return _PHRASES.get(name, name)


_KIND_CODES = {INT: _parse.K_INT, STR: _parse.K_STR, FLAGS: _parse.K_FLAGS}


@dataclass(frozen=True)
class _Plan:
    """How the compiled emitter (:mod:`.columns`) maps raw key spellings to columns."""

    names: tuple[str, ...]
    kinds: np.ndarray  # int8 per column: _parse.K_INT, K_STR or K_FLAGS
    slots: np.ndarray  # int64 per column: its index among the columns of its kind
    hashes: np.ndarray  # uint64 FNV-1a of each accepted raw key text (1/2: shrinker words)
    columns: np.ndarray  # int64 column index of each spelling


@functools.cache
def field_plan(event: str) -> _Plan:
    """Key table of a known event: every spelling :func:`key_name` maps to one of its fields.

    Spellings are the field name, ``name:`` (shrink_slab's ``nid:``), the name with spaces
    (``cache items``) and the free-text phrases of ``_PHRASES``; each is kept only if
    key_name() really maps it to the field, so the compiled fill names columns exactly
    as the general path does. They are listed in printed order (the emitter looks for
    each key just after the previous one's).
    """
    names = KNOWN_EVENTS[event]
    phrases = {field: text.replace("_", " ") for text, field in _PHRASES.items()}
    hashes: list[int] = []
    columns: list[int] = []
    for col, name in enumerate(names):
        if event in SHRINK_SLAB and name in _SYNTHETIC.values():
            hashes.append(next(-1 - s for s, n in _SYNTHETIC.items() if n == name))
            columns.append(col)
            continue
        spellings = (phrases.get(name, name), name + ":", name, name.replace("_", " "))
        for text in dict.fromkeys(spellings):
            raw = np.frombuffer(text.encode(), np.uint8)
            if key_name(raw, 0, raw.size) == name:
                hashes.append(fnv1a(text.encode()))
                columns.append(col)
    kinds = np.array([_KIND_CODES[field_type(event, name)] for name in names], np.int8)
    slots = np.zeros(len(kinds), np.int64)
    for kind in _KIND_CODES.values():
        of_kind = kinds == kind
        slots[of_kind] = np.arange(of_kind.sum())
    return _Plan(names, kinds, slots, np.array(hashes, np.uint64), np.array(columns, np.int64))


def _column(
    event: str, key: str, kind: str | None, buf: np.ndarray, tok: np.ndarray, present, toks
) -> pl.Series:
    """One event column from the token values at ``tok`` (rows without the key: null)."""
    _, _, _, vs, ve, ival, iok = toks
    safe = np.where(present, tok, 0)
    if kind == INT:
        return ints(ival[safe], present & iok[safe]).alias(key)
    text = strings(buf, vs[safe], ve[safe], present & (vs[safe] >= 0)).alias(key)
    if kind == FLAGS:
        return text.str.split("|")
    if kind is None and present.any() and bool(iok[safe][present].all()):
        # An unlisted field (e.g. 7.1's memcg_id): integer when every value is one.
        return ints(ival[safe], present).alias(key)
    return text


def _range_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """``range=(0x1 ~ 0x2)`` of compaction isolate events → ``start_pfn``/``end_pfn``."""
    if "range" not in frame.columns:
        return frame
    parts = frame["range"].str.strip_chars("()").str.split_exact(" ~ ", 1).struct.unnest()
    hexes = [
        parts[c].str.strip_prefix("0x").str.to_integer(base=16, strict=False) for c in parts.columns
    ]
    return frame.drop("range").with_columns(
        hexes[0].cast(pl.Int64).alias("start_pfn"), hexes[1].cast(pl.Int64).alias("end_pfn")
    )


def _fields_column(buf, rows_first, rows_count, toks) -> pl.Series:
    """``fields`` of an unknown event: List[Struct{key, value}] of its key=value tokens."""
    ks, ke, _, vs, ve, _, _ = toks
    offsets = np.zeros(len(rows_count) + 1, np.int64)
    np.cumsum(rows_count, out=offsets[1:])
    idx = np.repeat(rows_first - offsets[:-1], rows_count) + np.arange(offsets[-1])
    keep = ks[idx] >= 0
    keys = strings(buf, ks[idx], ke[idx], keep)
    values = strings(buf, vs[idx], ve[idx], keep & (vs[idx] >= 0))
    structs = pl.DataFrame({"key": keys, "value": values}).to_struct("fields").to_arrow()
    # from_buffers, not pa.array(): pa.array() of a NumPy array imports pandas (0.3 s).
    offsets_array = pa.Array.from_buffers(pa.int64(), len(offsets), [None, pa.py_buffer(offsets)])
    lists = pa.LargeListArray.from_arrays(offsets_array, structs)
    return pl.Series("fields", lists).cast(FIELDS_DTYPE)


def _bdi_prefix(buf: np.ndarray, toks: list) -> list:
    """``bdi 254:0: limit=...`` (balance_dirty_pages): the phrase ``bdi NAME:`` becomes
    the field ``bdi`` with value ``NAME`` (a device name, so never a column name)."""
    ks, ke, kh, vs, ve, ival, iok = toks
    ok = (vs < 0) & (ke - ks > 5)
    at = np.where(ok, ks, 0)
    for i, byte in enumerate(b"bdi "):
        ok &= buf[np.minimum(at + i, buf.size - 1)] == byte
    if not ok.any():
        return toks
    ends = np.where(buf[np.maximum(ke - 1, 0)] == ord(":"), ke - 1, ke)
    return [
        ks,
        np.where(ok, ks + 3, ke),
        kh,
        np.where(ok, ks + 4, vs),
        np.where(ok, ends, ve),
        ival,
        np.where(ok, False, iok),
    ]


def event_frame(event: str, buf: np.ndarray, common: pl.DataFrame, tokens: tuple) -> pl.DataFrame:
    """Typed frame of one event: ``common`` columns plus one column per payload field.

    ``tokens`` = (first, count, sig, pstart, pend, ks, ke, vs, ve, ival, iok) restricted
    to this event's rows for the first five entries.
    """
    first, count, sig, pstart, pend, *toks = tokens
    if event not in KNOWN_EVENTS:
        payload = strings(buf, pstart, pend, np.ones(len(pstart), bool)).alias("payload")
        return common.with_columns(payload, _fields_column(buf, first, count, toks))
    ks, ke = toks[0], toks[1]
    _, ufirst, uinv = np.unique(sig, return_index=True, return_inverse=True)
    keys: list[str] = []
    table: list[dict[str, int]] = []
    if "bdi" in KNOWN_EVENTS[event]:
        toks = _bdi_prefix(buf, toks)
        ks, ke = toks[0], toks[1]
    for row in ufirst:
        names = [key_name(buf, ks[t], ke[t]) for t in range(first[row], first[row] + count[row])]
        positions: dict[str, int] = {}
        for pos, name in enumerate(names):
            positions.setdefault(name, pos)
        table.append(positions)
        keys.extend(name for name in names if name not in keys)
    columns = []
    for key in keys:
        pos = np.array([row.get(key, -1) for row in table], np.int64)[uinv.ravel()]
        present = pos >= 0
        kind = field_type(event, key) if key in KNOWN_EVENTS[event] else None
        columns.append(_column(event, key, kind, buf, first + pos, present, toks))
    frame = _range_columns(common.with_columns(columns))
    schema = event_schema(event)
    missing = [
        pl.lit(None, dtype).alias(name) for name, dtype in schema.items() if name not in frame
    ]
    frame = frame.with_columns(missing)
    extra = [c for c in frame.columns if c not in schema]
    return frame.select([*schema, *extra]).cast(schema)
