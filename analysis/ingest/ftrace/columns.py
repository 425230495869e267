"""Typed columns of a block's events, written in one pass over its lines in input order.

Building each event's columns separately (one gather per column over the rows of that
event) reads the 32 MB block and the token arrays in a scattered order, once per column:
at ~15 million strings per GB of trace that is cache-miss bound. :func:`emit_columns`
instead walks the event lines once, in order, and writes every common column and every
field of a known event (:func:`~analysis.ingest.ftrace.tokenizer.field_plan`) straight into
its place: per event, rows are contiguous (``ev_start[e] + position``), so each event's
columns are zero-copy slices. Strings are Arrow ``string_view``\\ s (Polars' own layout);
those over 12 bytes share one data buffer per block.

An event whose payload holds a key outside its plan (a field a newer kernel added, an
odd spelling), and every unknown event, is marked not ``planned``: the caller builds its
fields with the general path (:func:`~analysis.ingest.ftrace.tokenizer.event_frame`).
The same pass finds the lines :func:`field_failures` names, so that separate pass over
every token runs only for a block with an event left to the general path.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
from numba import njit

from analysis.ingest.events import KNOWN_EVENTS
from analysis.ingest.ftrace.arrow import ints, put_view, view_series
from analysis.ingest.ftrace.layout import (
    COMM_END,
    COMM_START,
    CPU,
    INSTANCE_END,
    IRQ_END,
    IRQ_START,
    PID,
    TGID,
    TS,
)
from analysis.ingest.ftrace.tokenizer import field_plan

__all__ = ["BlockColumns", "emit_columns", "field_failures"]

_INT, _FLAGS = 0, 2  # field_plan kinds (1 = plain string)


@njit(inline="always")
def _name_start(buf, colon):
    """Start of the trace-cmd buffer name ending at ``colon``: the word before it, which
    may be on the line before (a drop marker's, docs/trace-formats.md "Other producers")."""
    i = colon
    while i > 0 and buf[i - 1] > 32 and buf[i - 1] != 62:  # not blank, newline or ">"
        i -= 1
    return i


@njit(nogil=True, cache=True)
def emit_columns(
    buf,
    out,
    rows,
    ids,
    ev_start,
    line_base,
    pstart,
    pend,
    first,
    count,
    kh,
    vs,
    ve,
    ival,
    iok,
    plan_hash,
    plan_col,
    plan_off,
    col_off,
    kinds,
    slots,
    base_int,
    base_str,
    base_valid,
):
    """Common columns and planned fields of the event lines ``rows`` (see module docstring).

    ``ids[k]`` is the event of ``rows[k]``, whose payload is ``buf[pstart[k]:pend[k]]``;
    event ``e``'s rows go to positions ``ev_start[e]..ev_start[e+1]`` of the common
    arrays, in input order. Event ``e``'s
    plan is ``plan_hash/plan_col[plan_off[e]:plan_off[e+1]]`` (empty: not planned), its
    column kinds and slots ``kinds/slots[col_off[e]:col_off[e+1]]``; its integer fields,
    string views and validity start at ``base_int/base_str/base_valid[e]``, laid out
    [slot or column, position]. ``out`` is scan_lines' fields array. ``bad[k]``: line
    ``k`` has an integer field whose value is not one (as :func:`field_failures`; exact
    for the events still ``planned`` at the end).
    """
    n = rows.size
    n_ev = ev_start.size - 1
    line = np.empty(n, np.int64)
    pid = np.empty(n, np.int32)
    tgid = np.empty(n, np.int32)
    cpu = np.empty(n, np.int32)
    ts = np.empty(n, np.int64)
    comm = np.zeros(4 * n, np.uint32)
    irq = np.zeros(4 * n, np.uint32)
    irq_ok = np.empty(n, np.bool_)
    inst = np.zeros(4 * n, np.uint32)
    inst_ok = np.empty(n, np.bool_)
    vals = np.zeros(base_int[n_ev], np.int64)
    views = np.zeros(4 * base_str[n_ev], np.uint32)
    valid = np.zeros(base_valid[n_ev], np.bool_)
    comm_inline = comm.view(np.uint8)
    irq_inline = irq.view(np.uint8)
    inst_inline = inst.view(np.uint8)
    views_inline = views.view(np.uint8)
    planned = np.empty(n_ev, np.bool_)
    for e in range(n_ev):
        planned[e] = plan_off[e + 1] > plan_off[e]
    # Every string is a piece of its line's comm, irq flags, instance or payload: a bound
    # on their bytes.
    total = 0
    for k in range(n):
        r = rows[k]
        total += max(0, out[r, COMM_END] - out[r, COMM_START]) + max(
            0, out[r, IRQ_END] - out[r, IRQ_START]
        )
        if out[r, INSTANCE_END] > 0:
            total += out[r, INSTANCE_END] - _name_start(buf, out[r, INSTANCE_END])
        total += max(0, pend[k] - pstart[k])
    data = np.empty(total, np.uint8)
    p = 0
    seen = np.zeros(kinds.size, np.bool_)
    filled = np.zeros(n_ev, np.int64)
    bad = np.zeros(n, np.bool_)
    for k in range(n):
        e = ids[k]
        r = rows[k]
        at = filled[e]
        filled[e] += 1
        g = ev_start[e] + at
        line[g] = line_base + r + 1
        pid[g] = out[r, PID]
        tgid[g] = out[r, TGID]
        cpu[g] = out[r, CPU]
        ts[g] = out[r, TS]
        p = put_view(buf, out[r, COMM_START], out[r, COMM_END], comm, comm_inline, g, data, p)
        irq_ok[g] = out[r, IRQ_START] >= 0
        if irq_ok[g]:
            p = put_view(buf, out[r, IRQ_START], out[r, IRQ_END], irq, irq_inline, g, data, p)
        colon = out[r, INSTANCE_END]
        inst_ok[g] = colon > 0
        if inst_ok[g]:
            p = put_view(buf, _name_start(buf, colon), colon, inst, inst_inline, g, data, p)
        if not planned[e]:
            continue
        ne = ev_start[e + 1] - ev_start[e]
        lo = plan_off[e]
        m = plan_off[e + 1] - lo
        c0 = col_off[e]
        for c in range(c0, col_off[e + 1]):
            seen[c] = False
        j = 0
        for t in range(first[k], first[k] + count[k]):
            # Keys come in printed order: look just after the previous key's spelling.
            tries = 0
            while tries < m and plan_hash[lo + j] != kh[t]:
                j = j + 1 if j + 1 < m else 0
                tries += 1
            if tries == m:
                planned[e] = False
                break
            c = plan_col[lo + j]
            if kinds[c0 + c] == _INT and not iok[t] and vs[t] >= 0:
                bad[k] = True  # a repeated key's value too, as field_failures
            if seen[c0 + c]:  # a repeated key: the first one wins, as in the general path
                continue
            seen[c0 + c] = True
            slot = slots[c0 + c]
            v = base_valid[e] + c * ne + at
            if kinds[c0 + c] == _INT:
                vals[base_int[e] + slot * ne + at] = ival[t]
                valid[v] = iok[t]
            elif vs[t] >= 0:
                gv = base_str[e] + slot * ne + at
                p = put_view(buf, vs[t], ve[t], views, views_inline, gv, data, p)
                valid[v] = True
    common = (line, comm, pid, tgid, cpu, irq, irq_ok, ts, inst, inst_ok)
    return common, vals, views, valid, data[:p], planned, bad


class BlockColumns:
    """The columns :func:`emit_columns` wrote for one block, sliced per event."""

    def __init__(self, buf, out, rows, ids, names, line_base, payload, tokens) -> None:
        first, count, _, _, _, *key_values = tokens  # key hash, value span, int value, ok
        n_ev = len(names)
        self.ev_start = _offsets(np.bincount(ids, minlength=n_ev))
        sizes = np.diff(self.ev_start)
        self.plans = [field_plan(name) if name in KNOWN_EVENTS else None for name in names]
        tables = [p for p in self.plans if p is not None]
        plan_len = [0 if p is None else len(p.hashes) for p in self.plans]
        n_cols = [0 if p is None else len(p.kinds) for p in self.plans]
        n_int = [0 if p is None else int((p.kinds == _INT).sum()) for p in self.plans]
        self.col_off = _offsets(n_cols)
        self.base_int = _offsets(np.multiply(n_int, sizes))
        self.base_str = _offsets(np.multiply(np.subtract(n_cols, n_int), sizes))
        self.base_valid = _offsets(np.multiply(n_cols, sizes))
        self.common, self.vals, self.views, self.valid, data, self.planned, self.bad = emit_columns(
            buf,
            out,
            rows,
            ids,
            self.ev_start,
            line_base,
            *payload,
            first,
            count,
            *key_values,
            _concat([p.hashes for p in tables], np.uint64),
            _concat([p.columns for p in tables], np.int64),
            _offsets(plan_len),
            self.col_off,
            _concat([p.kinds for p in tables], np.int8),
            _concat([p.slots for p in tables], np.int64),
            self.base_int,
            self.base_str,
            self.base_valid,
        )
        self.data = pa.py_buffer(data)

    def failures(self) -> np.ndarray | None:
        """:func:`field_failures` of the block's lines, from the column pass; None when an
        event of the registry was left to the general path (its lines were not all read)."""
        unread = any(
            p is not None and not ok for p, ok in zip(self.plans, self.planned, strict=True)
        )
        return None if unread else self.bad

    def frame(self, e: int) -> pl.DataFrame:
        """Common columns of event ``e`` (line, comm, pid, tgid, cpu, irq_flags, ts_ns,
        instance)."""
        a, b = self.ev_start[e], self.ev_start[e + 1]
        line, comm, pid, tgid, cpu, irq, irq_ok, ts, inst, inst_ok = self.common
        every = np.ones(b - a, bool)
        return pl.DataFrame(
            [
                pl.Series("line", line[a:b]),
                view_series(comm[4 * a : 4 * b], None, self.data).alias("comm"),
                ints(pid[a:b], every, pl.Int32).alias("pid"),
                ints(tgid[a:b], tgid[a:b] >= 0, pl.Int32).alias("tgid"),
                ints(cpu[a:b], cpu[a:b] >= 0, pl.Int32).alias("cpu"),
                view_series(irq[4 * a : 4 * b], irq_ok[a:b], self.data).alias("irq_flags"),
                pl.Series("ts_ns", ts[a:b]),
                view_series(inst[4 * a : 4 * b], inst_ok[a:b], self.data).alias("instance"),
            ]
        )

    def fields(self, e: int) -> list[pl.Series] | None:
        """Field columns of a planned event ``e`` in schema order, or None if not planned."""
        plan = self.plans[e]
        if plan is None or not self.planned[e]:
            return None
        n = self.ev_start[e + 1] - self.ev_start[e]
        columns = []
        for c, name in enumerate(plan.names):
            slot = plan.slots[c]
            ok = self.valid[self.base_valid[e] + c * n : self.base_valid[e] + (c + 1) * n]
            if plan.kinds[c] == _INT:
                at = self.base_int[e] + slot * n
                columns.append(ints(self.vals[at : at + n], ok).alias(name))
                continue
            at = 4 * (self.base_str[e] + slot * n)
            text = view_series(self.views[at : at + 4 * n], ok, self.data).alias(name)
            columns.append(text.str.split("|") if plan.kinds[c] == _FLAGS else text)
        return columns


@njit(nogil=True, cache=True)
def _failed_lines(ids, first, count, kh, vs, iok, int_hash, int_off):
    """Line ``k`` has a token with a value (``vs >= 0``) that did not parse as an integer
    (``iok`` false) under a key among its event's integer keys
    ``int_hash[int_off[e]:int_off[e + 1]]``."""
    bad = np.zeros(ids.size, np.bool_)
    for k in range(ids.size):
        lo, hi = int_off[ids[k]], int_off[ids[k] + 1]
        for t in range(first[k], first[k] + count[k]):
            if iok[t] or vs[t] < 0 or bad[k]:
                continue
            for i in range(lo, hi):
                if int_hash[i] == kh[t]:
                    bad[k] = True
    return bad


def field_failures(names: list[str], ids: np.ndarray, tokens: tuple) -> np.ndarray:
    """Per event line (``ids[k]`` indexes ``names``): True when a field its event prints as
    an integer has a value that is not one (``nr_reclaimed=GARBAGE@@``). Such a line is
    not an event with a null field but an unparsed line (the reader counts it, with its
    line number): a null would read as "not printed by this kernel" and the event would
    count in every total. ``tokens`` are :func:`~.tokenizer.tokenize`'s, per line."""
    first, count, _sig, _ks, _ke, kh, vs, _ve, _ival, iok = tokens
    keys = []
    for name in names:
        plan = field_plan(name) if name in KNOWN_EVENTS else None
        keys.append(
            np.zeros(0, np.uint64)
            if plan is None
            else plan.hashes[plan.kinds[plan.columns] == _INT]
        )
    int_off = _offsets([k.size for k in keys])
    return _failed_lines(ids, first, count, kh, vs, iok, _concat(keys, np.uint64), int_off)


def _offsets(sizes) -> np.ndarray:
    """Start offsets of consecutive segments of ``sizes``, plus the total at the end."""
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    return starts


def _concat(arrays: list[np.ndarray], dtype) -> np.ndarray:
    """Concatenation of ``arrays`` (typed even when there are none)."""
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
