"""The reclaim trace events mmlab knows: names, fields, per-event field types, history.

One :class:`Event` per tracepoint of ``include/trace/events/{vmscan,compaction,writeback}.h``
that mmlab analyses (and kmem's ``mm_page_alloc_extfrag``).
Its ``fields`` are the union over kernel versions, in printed order, named after the
``TP_STRUCT__entry`` members (= the printed keys), each with its own type, so an event's
``mode`` or ``zone`` is typed where that event is declared and never by the field's name
elsewhere. ``history`` says which kernel version changed the printed format and how
(from the tracepoint formats of each release); a parser must accept every variant.

Everything that names an event reads it here: the ftrace tokenizer and column emission
(:mod:`.ftrace.tokenizer`, :mod:`.ftrace.columns`), the mail-histogram reader
(:mod:`analysis.ingest.histogram`), the capture's event set
(:func:`analysis.capture.tracefs.reclaim_event_set`) and the metrics.

Adding an event: append an :class:`Event` to ``EVENTS`` with every field's kind; the
ingest, the schema of absent events and the capture follow. This module imports no
compiled reader, so the capture, the histogram reader and ``mmlab --help`` stay light. It sits in
:mod:`analysis.ingest`, not in :mod:`.ftrace`, because readers of other formats (the mail
histograms) and the capture share it: ``ftrace`` imports ``ingest``'s modules, never the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = [
    "BALANCE_DIRTY_PAGES",
    "EVENTS",
    "FLAGS",
    "INT",
    "KNOWN_EVENTS",
    "LEGACY_THROTTLE",
    "NOISY",
    "POLARS_TYPES",
    "SHRINK_SLAB",
    "STR",
    "THROTTLED",
    "Event",
    "Field",
    "field_type",
    "polars_fields",
]

# Field kinds: a decimal or 0x-hex integer, a string, or ``|``-separated flags (List[String]).
INT, STR, FLAGS = "int", "str", "flags"
POLARS_TYPES: dict[str, pl.DataType] = {
    INT: pl.Int64(),
    STR: pl.String(),
    FLAGS: pl.List(pl.String()),
}


@dataclass(frozen=True)
class Field:
    """One printed field of a tracepoint and how its value is typed."""

    name: str
    kind: str = INT


@dataclass(frozen=True)
class Event:
    """A tracepoint: ``system/name``, its fields (union over versions) and format history.

    ``free_text``: the payload is phrases, not ``key=value`` (shrink_slab).
    ``noisy``: one line per isolated batch; the capture enables it only on request.
    """

    system: str
    name: str
    fields: tuple[Field, ...]
    history: tuple[str, ...] = ()
    free_text: bool = False
    noisy: bool = False

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


def _ints(*names: str) -> tuple[Field, ...]:
    return tuple(Field(n) for n in names)


_GFP = Field("gfp_flags", FLAGS)
_RECLAIM_BEGIN = (Field("order"), Field("may_writepage"), _GFP, Field("classzone_idx"))
_RECLAIM_BEGIN_HISTORY = (
    "<= 4.7: order, may_writepage, gfp_flags",
    "4.8-5.1: classzone_idx appended (node-based LRU)",
    "5.2+: order, gfp_flags only (may_writepage and classzone_idx dropped)",
    "7.1+: a u64 memcg_id appended (kept as an extra column)",
)
_RECLAIM_END = (Field("nr_reclaimed"),)
_RECLAIM_END_HISTORY = ("all versions: nr_reclaimed", "7.1+: memcg_id appended")
_ISOLATE = _ints("start_pfn", "end_pfn", "nr_scanned", "nr_taken")
_ISOLATE_HISTORY = ("4.1+: range=(0x%lx ~ 0x%lx) read as start_pfn, end_pfn",)
_DEFER = (
    Field("node"),
    Field("zone", STR),
    Field("order"),
    Field("order_failed"),
    Field("consider"),
    Field("limit"),
)
# kcompactd prints the zone *name* (%-8s) under classzone_idx.
_KCOMPACTD = (Field("nid"), Field("order"), Field("classzone_idx", STR))
_SHRINK_COUNTS = _ints(
    "nr_dirty",
    "nr_writeback",
    "nr_congested",
    "nr_immediate",
    "nr_activate",
    "nr_activate_anon",
    "nr_activate_file",
    "nr_ref_keep",
    "nr_unmap_fail",
)
_COMPACTION_RANGE = _ints("zone_start", "migrate_pfn", "free_pfn", "zone_end")
_SUITABLE = (Field("node"), Field("zone", STR), Field("order"), Field("ret", STR))
_WRITE = (Field("page", STR), Field("pfn"), Field("flags", FLAGS))
_WRITE_HISTORY = ("5.14+: pfn printed as hex", "5.18: renamed mm_vmscan_writepage -> write_folio")
_LEGACY_WAIT = _ints("usec_timeout", "usec_delayed")


def _vmscan(name: str, fields: tuple[Field, ...], *history: str, **kw) -> Event:
    return Event("vmscan", name, fields, history, **kw)


def _compaction(name: str, fields: tuple[Field, ...], *history: str) -> Event:
    return Event("compaction", name, fields, history)


EVENTS: dict[str, Event] = {
    e.name: e
    for e in (
        _vmscan("mm_vmscan_kswapd_sleep", _ints("nid"), "all versions: nid"),
        _vmscan(
            "mm_vmscan_kswapd_wake",
            _ints("nid", "zid", "order"),
            "<= 4.7: nid, order",
            "4.8-5.1: nid, zid, order",
            "5.2+: nid, order again",
        ),
        _vmscan(
            "mm_vmscan_wakeup_kswapd",
            (Field("nid"), Field("zid"), Field("order"), _GFP),
            "<= 4.16: nid, zid, order",
            "4.17-5.1: gfp_flags appended",
            "5.2+: nid, order, gfp_flags (zid dropped)",
        ),
        _vmscan("mm_vmscan_direct_reclaim_begin", _RECLAIM_BEGIN, *_RECLAIM_BEGIN_HISTORY),
        _vmscan("mm_vmscan_memcg_reclaim_begin", _RECLAIM_BEGIN, *_RECLAIM_BEGIN_HISTORY),
        _vmscan("mm_vmscan_memcg_softlimit_reclaim_begin", _RECLAIM_BEGIN, *_RECLAIM_BEGIN_HISTORY),
        _vmscan("mm_vmscan_direct_reclaim_end", _RECLAIM_END, *_RECLAIM_END_HISTORY),
        _vmscan("mm_vmscan_memcg_reclaim_end", _RECLAIM_END, *_RECLAIM_END_HISTORY),
        _vmscan("mm_vmscan_memcg_softlimit_reclaim_end", _RECLAIM_END, *_RECLAIM_END_HISTORY),
        _vmscan(
            "mm_vmscan_node_reclaim_begin",
            (Field("nid"), Field("order"), _GFP),
            "~5.2+: nid, order, gfp_flags",
        ),
        _vmscan("mm_vmscan_node_reclaim_end", _RECLAIM_END, "all versions: nr_reclaimed"),
        _vmscan(
            "mm_shrink_slab_start",
            (
                Field("shrinker", STR),
                # hashed (4.15-5.11) or raw: an identity, not a number
                Field("shrinker_ptr", STR),
                Field("nid"),
                Field("nr_objects_to_shrink"),
                _GFP,
                *_ints("pgs_scanned", "lru_pgs", "cache_items", "delta", "total_scan", "priority"),
            ),
            "free text: '%pS %p: [nid: %d ]objects to shrink %ld gfp_flags %s ...'",
            "3.12+: 'nid: %d' added",
            "until 4.15: pgs_scanned, lru_pgs; 4.16+: priority appended",
            "4.15-5.11: the %p pointer is hashed; raw before and from 5.12",
            "7.1+: memcg_id appended",
            free_text=True,
        ),
        _vmscan(
            "mm_shrink_slab_end",
            (
                Field("shrinker", STR),
                Field("shrinker_ptr", STR),
                *_ints("nid", "unused_scan", "new_scan", "total_scan", "retval"),
            ),
            "free text: '%pS %p: [nid: %d ]unused scan count %ld new scan count %ld ...'",
            "~3.16+: 'nid: %d' added",
            "7.1+: memcg_id appended",
            free_text=True,
        ),
        _vmscan(
            "mm_vmscan_lru_isolate",
            (
                *_ints("isolate_mode", "classzone", "order", "nr_requested", "nr_scanned"),
                *_ints("nr_skipped", "nr_taken", "file"),
                Field("lru", STR),
            ),
            "until 6.6: isolate_mode printed",
            "4.11+: lru=%s replaces file=%d",
            noisy=True,
        ),
        _vmscan("mm_vmscan_writepage", _WRITE, *_WRITE_HISTORY),
        _vmscan("mm_vmscan_write_folio", _WRITE, *_WRITE_HISTORY),
        _vmscan(
            "mm_vmscan_lru_shrink_inactive",
            (
                *_ints("nid", "zid", "nr_scanned", "nr_reclaimed"),
                *_SHRINK_COUNTS,
                Field("priority"),
                Field("flags", FLAGS),
            ),
            "<= 4.7: zid printed",
            "4.11+: nr_dirty ... nr_unmap_fail detail counters",
            "5.2+: nr_activate split into nr_activate_anon, nr_activate_file",
        ),
        _vmscan(
            "mm_vmscan_lru_shrink_active",
            (
                *_ints("nid", "nr_taken", "nr_active", "nr_deactivated", "nr_referenced"),
                Field("priority"),
                Field("flags", FLAGS),
            ),
            "4.11+: nid nr_taken nr_active nr_deactivated nr_referenced priority flags",
        ),
        _vmscan(
            "mm_vmscan_throttled",
            (*_ints("nid", "usec_timeout", "usect_delayed"), Field("reason", STR)),
            "5.16+: added with reclaim_throttle(); the kernel prints 'usect_delayed' (sic)",
        ),
        _vmscan(
            "mm_vmscan_reclaim_pages",
            (*_ints("nid", "nr_scanned", "nr_reclaimed"), *_SHRINK_COUNTS),
            "~6.13+: shrink_inactive's counters without priority and flags",
        ),
        Event(
            "writeback",
            "writeback_congestion_wait",
            _LEGACY_WAIT,
            ("removed ~5.18 (replaced by mm_vmscan_throttled)",),
        ),
        Event(
            "writeback",
            "writeback_wait_iff_congested",
            _LEGACY_WAIT,
            ("removed in 5.16 (replaced by mm_vmscan_throttled)",),
        ),
        _compaction(
            "mm_compaction_begin",
            (*_COMPACTION_RANGE, Field("mode", STR)),
            "4.1+: 'zone_end=0x%lx, mode=%s' (comma glued to the value)",
        ),
        _compaction(
            "mm_compaction_end",
            (*_COMPACTION_RANGE, Field("mode", STR), Field("status", STR)),
            "4.1+: begin's fields plus status=%s (free string)",
        ),
        _compaction(
            "mm_compaction_try_to_compact_pages",
            (Field("order"), Field("gfp_mask", FLAGS), Field("priority"), Field("mode", STR)),
            "before ~5.2: gfp_mask=0x%x and mode=",
            "~5.2+: order, gfp_mask=%s, priority",
        ),
        _compaction("mm_compaction_suitable", _SUITABLE, "zone=%-8s padded"),
        _compaction("mm_compaction_finished", _SUITABLE, "zone=%-8s padded"),
        _compaction("mm_compaction_deferred", _DEFER),
        _compaction("mm_compaction_defer_compaction", _DEFER),
        _compaction("mm_compaction_defer_reset", _DEFER),
        _compaction("mm_compaction_kcompactd_sleep", _ints("nid"), "4.6+: added"),
        _compaction("mm_compaction_kcompactd_wake", _KCOMPACTD, "4.6+: added"),
        _compaction("mm_compaction_wakeup_kcompactd", _KCOMPACTD, "4.6+: added"),
        _compaction("mm_compaction_isolate_migratepages", _ISOLATE, *_ISOLATE_HISTORY),
        _compaction("mm_compaction_isolate_freepages", _ISOLATE, *_ISOLATE_HISTORY),
        _compaction("mm_compaction_fast_isolate_freepages", _ISOLATE, *_ISOLATE_HISTORY),
        _compaction("mm_compaction_migratepages", _ints("nr_migrated", "nr_failed")),
        Event(
            "writeback",
            "balance_dirty_pages",
            (
                # "bdi %s:" opens the payload: the device name, read by the tokenizer
                Field("bdi", STR),
                *_ints("limit", "setpoint", "dirty", "bdi_setpoint", "bdi_dirty"),
                *_ints("wb_setpoint", "wb_dirty"),
                *_ints("dirty_ratelimit", "task_ratelimit", "dirtied", "dirtied_pause"),
                *_ints("paused", "pause", "period", "think", "cgroup_ino"),
            ),
            (
                "3.2+: 'bdi %s: limit= setpoint= dirty= bdi_setpoint= bdi_dirty= "
                "dirty_ratelimit= task_ratelimit= dirtied= dirtied_pause= paused= pause= "
                "period= think='; limits in pages, ratelimits in KB/s, times in ms",
                "~4.x (cgroup writeback): cgroup_ino appended",
                "~6.13-6.18: bdi_setpoint, bdi_dirty printed as wb_setpoint, wb_dirty (6.12 "
                "prints bdi_*, 6.18 wb_*)",
            ),
        ),
        Event(
            "kmem",
            "mm_page_alloc_extfrag",
            (
                Field("page", STR),
                *_ints("pfn", "alloc_order", "fallback_order", "pageblock_order"),
                *_ints("alloc_migratetype", "fallback_migratetype", "fragmenting"),
                Field("change_ownership"),
            ),
            (
                "page=%p pfn= alloc_order= fallback_order= pageblock_order= "
                "alloc_migratetype= fallback_migratetype= fragmenting= change_ownership=",
                "pfn printed as hex in current kernels (both read)",
            ),
            noisy=True,
        ),
    )
}

KNOWN_EVENTS: dict[str, tuple[str, ...]] = {n: e.field_names for n, e in EVENTS.items()}
SHRINK_SLAB = frozenset(n for n, e in EVENTS.items() if e.free_text)
NOISY = tuple(n for n, e in EVENTS.items() if e.noisy)
THROTTLED = "mm_vmscan_throttled"
# The throttle waits before mm_vmscan_throttled (removed 5.16 / ~5.18).
LEGACY_THROTTLE = ("writeback_congestion_wait", "writeback_wait_iff_congested")
BALANCE_DIRTY_PAGES = "balance_dirty_pages"


def field_type(event: str, key: str) -> str:
    """Kind of a known event's field: ``int``, ``str`` or ``flags``; ``int`` if unlisted."""
    return next((f.kind for f in EVENTS[event].fields if f.name == key), INT)


def polars_fields(event: str) -> dict[str, pl.DataType]:
    """Polars schema of a known event's own fields, in printed order."""
    return {f.name: POLARS_TYPES[f.kind] for f in EVENTS[event].fields}
