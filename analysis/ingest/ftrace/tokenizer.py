"""Payload tokenizer: ``key=value`` and free-text payloads → tokens → typed Polars columns.

Known events (the registry, :mod:`.events`) get a fixed column set, the union of every
kernel version's fields, so frames from any kernel share one schema (absent fields are
null), typed per event as the registry says.
Anything else a newer kernel appends (7.1's ``memcg_id``) is kept as an extra column,
Int64 if every value is an integer, else String. Unknown events keep ``payload`` (raw
text) and ``fields`` (List of Struct{key, value}).

Payload rules (numba, one pass): words are split on runs of spaces (so ``%-8s`` zone
padding disappears); ``key=value`` words give a field, a value glued to a comma
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
from numba import njit

from analysis.ingest.ftrace.arrow import ints, strings
from analysis.ingest.ftrace.events import (
    FLAGS,
    INT,
    KNOWN_EVENTS,
    SHRINK_SLAB,
    STR,
    field_type,
    polars_fields,
)
from analysis.ingest.ftrace.layout import FNV_OFFSET, FNV_PRIME, fnv1a, isdigit

__all__ = [
    "COMMON_SCHEMA",
    "GFP_LITERAL",
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


@njit(inline="always")
def _bare_phrase(buf, ps, pe, t, h, ks, ke, kh, vs, ve, ival, iok):
    """Store the pending words ``buf[ps:pe]`` as a key without a value (a free-text phrase
    such as shrink_slab's ``cache items``); returns the next token index and line hash."""
    ks[t] = ps
    ke[t] = pe
    kh[t] = fnv1a(buf, ps, pe)
    vs[t] = -1
    ve[t] = -1
    ival[t] = 0
    iok[t] = False
    return t + 1, (h ^ kh[t]) * FNV_PRIME


@njit(inline="always")
def _grown(a, size, used):
    """``a`` moved into a new array of ``size`` elements (its first ``used`` kept)."""
    b = np.empty(size, a.dtype)
    b[:used] = a[:used]
    return b


@njit(nogil=True, cache=True)
def _parse_int(buf, s, e):
    """Decimal (optionally negative) or 0x-hex integer filling buf[s:e]; (value, ok)."""
    neg = False
    if s < e and buf[s] == 45:
        neg = True
        s += 1
    if s >= e:
        return 0, False
    v = 0
    if e - s > 2 and buf[s] == 48 and (buf[s + 1] == 120 or buf[s + 1] == 88):
        if e - s - 2 > 15:
            return 0, False
        for i in range(s + 2, e):
            c = buf[i]
            if isdigit(c):
                d = c - 48
            elif 97 <= c <= 102:
                d = c - 87
            elif 65 <= c <= 70:
                d = c - 55
            else:
                return 0, False
            v = v * 16 + d
    else:
        if e - s > 18:
            return 0, False
        for i in range(s, e):
            if not isdigit(buf[i]):
                return 0, False
            v = v * 10 + (buf[i] - 48)
    return (-v if neg else v), True


@njit(nogil=True, cache=True)
def tokenize(buf, pstart, pend, mode, gfp):
    """Split payloads ``buf[pstart:pend]`` into fields (see module docstring).

    Returns per line (first token index, token count, key-signature hash) and per token
    (key span, key hash, value span, integer value, integer ok). A key start of -2/-3
    marks the synthetic shrinker symbol/pointer keys (key hash 1/2); a value span of
    (-1, -1) a bare phrase.
    """
    n = pstart.size
    first = np.empty(n, np.int64)
    count = np.zeros(n, np.int64)
    sig = np.empty(n, np.uint64)
    # Tokens are packed line after line into arrays grown on demand (a line of b bytes
    # holds at most (b + 1) // 2 words, each at most one token), sized first from the
    # payload bytes (trace payloads average over 10 bytes a word): no counting pass.
    size = 16
    for k in range(n):
        size += max(0, pend[k] - pstart[k]) // 10
    ks = np.empty(size, np.int64)
    ke = np.empty(size, np.int64)
    kh = np.empty(size, np.uint64)
    vs = np.empty(size, np.int64)
    ve = np.empty(size, np.int64)
    ival = np.empty(size, np.int64)
    iok = np.empty(size, np.bool_)
    t = 0
    for k in range(n):
        room = t + max(0, pend[k] - pstart[k] + 1) // 2
        if room > ks.size:
            size = max(2 * ks.size, room)
            ks, ke, kh = _grown(ks, size, t), _grown(ke, size, t), _grown(kh, size, t)
            vs, ve = _grown(vs, size, t), _grown(ve, size, t)
            ival, iok = _grown(ival, size, t), _grown(iok, size, t)
        first[k] = t
        h = FNV_OFFSET
        i = pstart[k]
        e = pend[k]
        word = 0
        ps = -1
        pe = -1
        shrink = mode[k] == 1
        while True:
            while i < e and buf[i] == 32:
                i += 1
            if i >= e:
                break
            ws = i
            eq = -1
            hk = FNV_OFFSET
            v = 0
            digits = True
            while i < e:
                c = buf[i]
                if c == 32:
                    break
                if c == 61:  # the key (hashed as it is read) ends at the first "="
                    eq = i
                    i += 1
                    if i < e and buf[i] == 40:  # "=(" value runs to ")"
                        while i < e and buf[i] != 41:
                            i += 1
                        if i < e:
                            i += 1
                        digits = False
                        break
                    # The value, parsed as a decimal on the way (else _parse_int below).
                    while i < e and buf[i] != 32:
                        d = buf[i] - 48
                        if d < 0 or d > 9:
                            digits = False
                        v = v * 10 + d
                        i += 1
                    break
                hk = (hk ^ np.uint64(c)) * FNV_PRIME
                i += 1
            we = i
            word += 1
            if shrink and word <= 2:
                ks[t] = -1 - word
                ke[t] = -1 - word
                kh[t] = np.uint64(word)
                ival[t] = 0
                iok[t] = False
                vs[t] = ws
                ve[t] = we - 1 if word == 2 and buf[we - 1] == 58 else we
                h = (h ^ kh[t]) * FNV_PRIME
                t += 1
                continue
            if eq > ws:
                if ps >= 0:
                    t, h = _bare_phrase(buf, ps, pe, t, h, ks, ke, kh, vs, ve, ival, iok)
                    ps = -1
                vend = we - 1 if buf[we - 1] == 44 else we
                ks[t] = ws
                ke[t] = eq
                vs[t] = eq + 1
                ve[t] = vend
                if digits and 0 < vend - eq - 1 <= 18 and vend == we:
                    ival[t] = v
                    iok[t] = True
                else:
                    ival[t], iok[t] = _parse_int(buf, eq + 1, vend)
                kh[t] = hk
                h = (h ^ hk) * FNV_PRIME
                t += 1
                continue
            v, ok = _parse_int(buf, ws, we)
            is_gfp = pe - ps == gfp.size
            if is_gfp:
                for j in range(gfp.size):
                    if buf[ps + j] != gfp[j]:
                        is_gfp = False
                        break
            if ps >= 0 and (ok or is_gfp):
                ks[t] = ps
                ke[t] = pe
                vs[t] = ws
                ve[t] = we
                ival[t] = v
                iok[t] = ok
                kh[t] = fnv1a(buf, ps, pe)
                h = (h ^ kh[t]) * FNV_PRIME
                t += 1
                ps = -1
            elif ps >= 0:
                pe = we
            else:
                ps = ws
                pe = we
        if ps >= 0:
            t, h = _bare_phrase(buf, ps, pe, t, h, ks, ke, kh, vs, ve, ival, iok)
        count[k] = t - first[k]
        sig[k] = h
    return first, count, sig, ks[:t], ke[:t], kh[:t], vs[:t], ve[:t], ival[:t], iok[:t]


GFP_LITERAL = np.frombuffer(b"gfp_flags", np.uint8).copy()


def key_name(buf: np.ndarray, s: int, e: int) -> str:
    """Field name of a token key: ``nid:`` → ``nid``, ``objects to shrink`` → TP field name."""
    if s < 0:
        return _SYNTHETIC[s]
    text = bytes(buf[s:e]).decode("utf-8", "replace")
    name = "_".join(text.split()).strip(":")
    return _PHRASES.get(name, name)


_KIND_CODES = {INT: 0, STR: 1, FLAGS: 2}


@dataclass(frozen=True)
class _Plan:
    """How the compiled emitter (:mod:`.columns`) maps raw key spellings to columns."""

    names: tuple[str, ...]
    kinds: np.ndarray  # int8 per column: 0 int, 1 str, 2 flags
    slots: np.ndarray  # int64 per column: its row in the int (kind 0) or span (else) output
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
                hashes.append(int(fnv1a(raw, 0, raw.size)))
                columns.append(col)
    kinds = np.array([_KIND_CODES[field_type(event, name)] for name in names], np.int8)
    is_int = kinds == 0
    slots = np.where(is_int, np.cumsum(is_int) - 1, np.cumsum(~is_int) - 1)
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
