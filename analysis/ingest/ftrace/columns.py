"""Typed columns of a block's events, written in one pass over its lines in input order.

Building each event's columns separately (one gather per column over the rows of that
event) reads the 32 MB block in a scattered order, once per column: at ~15 million
strings per GB of trace that is cache-miss bound. The compiled ``_parse.emit`` instead
walks the event lines once, in order, tokenizes each payload as it goes (the tokens of
one line stay in cache; they are never stored for the block) and writes every common
column and every field of a known event (:func:`~.tokenizer.field_plan`) straight into
its place, as Arrow buffers:

- per event, rows are contiguous (``ev_start[e] + position``), so each event's columns
  are zero-copy slices (an Arrow array's ``offset``) of a few block-wide buffers;
- strings are Arrow ``string_view``\\ s (what Polars keeps); those over 12 bytes share
  one data buffer per block;
- a flags field (``gfp_flags=A|B``) is a list of string views, split where it is read;
- validity is a bitmap indexed like the values.

An event whose payload holds a key outside its plan (a field a newer kernel added, an
odd spelling), and every unknown event, is left ``planned`` false: its lines are
tokenized apart (:func:`~.tokenizer.tokenize`) and built by the general path
(:func:`~.tokenizer.event_frame`). The same pass finds the lines whose integer field is
not an integer (:meth:`BlockColumns.failures`).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from analysis.ingest.events import KNOWN_EVENTS, SHRINK_SLAB
from analysis.ingest.ftrace import _parse
from analysis.ingest.ftrace.arrow import frame
from analysis.ingest.ftrace.layout import PAYLOAD_START
from analysis.ingest.ftrace.tokenizer import event_frame, field_plan, tokenize

__all__ = ["COMMON_TYPES", "BlockColumns", "emit", "field_failures"]

_INT, _STR, _FLAGS = _parse.K_INT, _parse.K_STR, _parse.K_FLAGS
# The common columns' Arrow types (tokenizer.COMMON_SCHEMA as Polars reads them back).
COMMON_TYPES = {
    "line": pa.int64(),
    "comm": pa.string_view(),
    "pid": pa.int32(),
    "tgid": pa.int32(),
    "cpu": pa.int32(),
    "irq_flags": pa.string_view(),
    "ts_ns": pa.int64(),
    "instance": pa.string_view(),
}
_FIELD_TYPES = {
    _INT: pa.int64(),
    _STR: pa.string_view(),
    _FLAGS: pa.list_(pa.string_view()),
}


def emit(arguments: dict[str, object], line_base: int) -> dict[str, bytearray]:
    """``_parse.emit`` called by name: its arguments and results are declared once, in
    _parse.c (``EMIT_ARGS``/``EMIT_RESULTS``, in the compiled order), so this side never
    depends on their order; a name missing or unknown on either side is an error."""
    if set(arguments) != set(_parse.EMIT_ARGS):
        raise RuntimeError(
            f"_parse.emit takes {', '.join(_parse.EMIT_ARGS)}; given {', '.join(arguments)} "
            "(a stale build of _parse.c? make setup rebuilds it)"
        )
    results = _parse.emit(*(arguments[name] for name in _parse.EMIT_ARGS), line_base)
    return dict(zip(_parse.EMIT_RESULTS, results, strict=True))


class BlockColumns:
    """The event lines ``rows`` of one block (scan_lines' ``out`` and ``ends``), grouped by
    event ``ids`` (indexes into ``names``): Arrow tables of the planned events, the general
    path for the rest."""

    def __init__(self, buf, out, ends, rows, ids, names, line_base: int) -> None:
        self.buf, self.out, self.ends, self.rows, self.ids = buf, out, ends, rows, ids
        self.names = names
        n_ev = len(names)
        self.ev_start = _offsets(np.bincount(ids, minlength=n_ev))
        sizes = np.diff(self.ev_start)
        self.plans = [field_plan(name) if name in KNOWN_EVENTS else None for name in names]
        self.mode = np.array([name in SHRINK_SLAB for name in names], np.uint8)
        plans = [p for p in self.plans if p is not None]
        of_kind = {
            kind: np.array([0 if p is None else int((p.kinds == kind).sum()) for p in self.plans])
            for kind in (_INT, _STR, _FLAGS)
        }
        self.col_off = _offsets([0 if p is None else len(p.kinds) for p in self.plans])
        self.base_int = _offsets(of_kind[_INT] * sizes)
        self.base_str = _offsets(of_kind[_STR] * sizes)
        self.base_flag = _offsets(of_kind[_FLAGS] * (sizes + 1))
        self.fcol_off = _offsets(of_kind[_FLAGS])
        raw = emit(
            {
                "buf": buf,
                "out": out,
                "ends": ends,
                "rows": rows,
                "ids": ids,
                "ev_start": self.ev_start,
                "mode": self.mode,
                "plan_hash": _concat([p.hashes for p in plans], np.uint64),
                "plan_col": _concat([p.columns for p in plans], np.int64),
                "plan_off": _offsets([0 if p is None else len(p.hashes) for p in self.plans]),
                "col_off": self.col_off,
                "kinds": _concat([p.kinds for p in plans], np.int8),
                "slots": _concat([p.slots for p in plans], np.int64),
                "base_int": self.base_int,
                "base_str": self.base_str,
                "base_flag": self.base_flag,
                "fcol_off": self.fcol_off,
            },
            line_base,
        )
        self._r = {name: pa.py_buffer(r) for name, r in raw.items()}
        self.common_present = np.frombuffer(raw["common_present"], np.int64).reshape(n_ev, -1)
        self.present = np.frombuffer(raw["present"], np.int64)
        self.piece_off = np.frombuffer(raw["piece_off"], np.int64)
        self.planned = np.frombuffer(raw["planned"], np.bool_)
        self.bad = np.frombuffer(raw["bad"], np.bool_)
        self._tokens: dict[int, tuple] = {}

    def tokens(self, e: int) -> tuple:
        """(first, count, sig, pstart, pend, ks, ke, kh, vs, ve, ival, iok) of event ``e``'s
        lines, for the general path (first indexes that event's own tokens)."""
        if e not in self._tokens:
            rows = self.rows[self.ids == e]
            pstart, pend = self.out[rows, PAYLOAD_START], self.ends[rows]
            first, count, sig, *toks = tokenize(
                self.buf, pstart, pend, np.full(len(rows), self.mode[e], np.uint8)
            )
            self._tokens[e] = (first, count, sig, pstart, pend, *toks)
        return self._tokens[e]

    def failures(self) -> np.ndarray:
        """Per event line: True when a field its event prints as an integer has a value
        that is not one (:func:`field_failures`): from the column pass for planned events,
        from the separate tokens for known events left to the general path."""
        bad = self.bad.copy()
        for e, plan in enumerate(self.plans):
            if plan is not None and not self.planned[e]:
                _, count, _, _, _, _, _, kh, vs, _, _, iok = self.tokens(e)
                bad[self.ids == e] = field_failures(plan, count, kh, vs, iok)
        return bad

    def _array(
        self,
        type_: pa.DataType,
        n: int,
        values: tuple[str, ...],
        offset: int,
        mask: pa.Buffer | None = None,
        nulls: int = 0,
        children: list[pa.Array] | None = None,
    ) -> pa.Array:
        """``n`` values of ``type_`` over the emitted buffers ``values`` from element
        ``offset``, null where ``mask`` (a validity bitmap indexed like them) is clear."""
        buffers = [mask if nulls else None, *(self._r[name] for name in values)]
        return pa.Array.from_buffers(type_, n, buffers, nulls, offset, children)

    def common(self, e: int) -> list[pa.Array]:
        """Common columns of event ``e`` (line, comm, pid, tgid, cpu, irq_flags, ts_ns,
        instance)."""
        a, n = int(self.ev_start[e]), int(self.ev_start[e + 1] - self.ev_start[e])
        tgid, cpu, irq, inst = (n - self.common_present[e]).tolist()
        stride = (int(self.ev_start[-1]) + 7) // 8  # bytes per common validity bitmap
        valid = self._r["common_valid"]
        masks = [valid.slice(i * stride, stride) for i in range(_parse.N_COMMON_VALID)]
        t = COMMON_TYPES
        return [
            self._array(t["line"], n, ("line",), a),
            self._array(t["comm"], n, ("comm", "data"), a),
            self._array(t["pid"], n, ("pid",), a),
            self._array(t["tgid"], n, ("tgid",), a, masks[0], tgid),
            self._array(t["cpu"], n, ("cpu",), a, masks[1], cpu),
            self._array(t["irq_flags"], n, ("irq", "data"), a, masks[2], irq),
            self._array(t["ts_ns"], n, ("ts",), a),
            self._array(t["instance"], n, ("inst", "data"), a, masks[3], inst),
        ]

    def fields(self, e: int) -> list[pa.Array] | None:
        """Field columns of a planned event ``e`` in schema order, or None if not planned."""
        plan = self.plans[e]
        if plan is None or not self.planned[e]:
            return None
        n = int(self.ev_start[e + 1] - self.ev_start[e])
        c0 = int(self.col_off[e])
        columns = []
        for c, kind in enumerate(plan.kinds.tolist()):
            slot = int(plan.slots[c])
            nulls = n - int(self.present[c0 + c])
            if kind == _INT:
                at = int(self.base_int[e]) + slot * n
                values, mask, children = ("vals",), self._r["ivalid"], None
            elif kind == _STR:
                at = int(self.base_str[e]) + slot * n
                values, mask, children = ("views", "data"), self._r["svalid"], None
            else:  # list offsets into this column's split pieces
                f = int(self.fcol_off[e]) + slot
                lo, hi = int(self.piece_off[f]), int(self.piece_off[f + 1])
                pieces = self._array(_FIELD_TYPES[_STR], hi - lo, ("pieces", "data"), lo)
                at = int(self.base_flag[e]) + slot * (n + 1)
                values, mask, children = ("loff",), self._r["fvalid"], [pieces]
            columns.append(self._array(_FIELD_TYPES[kind], n, values, at, mask, nulls, children))
        return columns

    def table(self, e: int) -> pa.Table | pl.DataFrame:
        """Event ``e``'s frame: an Arrow table of the column pass when its event was
        planned, else the general path's Polars frame."""
        common = self.common(e)
        fields = self.fields(e)
        if fields is not None:
            names = [*COMMON_TYPES, *self.plans[e].names]
            return pa.Table.from_arrays([*common, *fields], names=names)
        common_frame = frame(pa.Table.from_arrays(common, names=[*COMMON_TYPES]))
        return event_frame(self.names[e], self.buf, common_frame, self.tokens(e))


def field_failures(plan, count: np.ndarray, kh: np.ndarray, vs: np.ndarray, iok: np.ndarray):
    """Per line of one event (``count`` tokens each, packed line after line): True when a
    field the event prints as an integer (``plan``) has a value that is not one
    (``nr_reclaimed=GARBAGE@@``). Such a line is not an event with a null field but an
    unparsed line (the reader counts it, with its line number): a null would read as "not
    printed by this kernel" and the event would count in every total."""
    keys = plan.hashes[plan.kinds[plan.columns] == _INT]
    failed = ~iok & (vs >= 0) & np.isin(kh, keys)
    bad = np.zeros(len(count), np.bool_)
    bad[np.repeat(np.arange(len(count)), count)[failed]] = True
    return bad


def _offsets(sizes) -> np.ndarray:
    """Start offsets of consecutive segments of ``sizes``, plus the total at the end."""
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    return starts


def _concat(arrays: list[np.ndarray], dtype) -> np.ndarray:
    """Concatenation of ``arrays`` (typed even when there are none)."""
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
