"""``trace-cmd report -R`` (raw) text and hist-trigger keys → the printed form of each field.

Raw output prints each event's ``TP_STRUCT__entry`` fields with their stored values instead
of its ``TP_printk`` format (docs/trace-formats.md "Raw trace-cmd text"): other key names
(``nr_activate0``, ``highest_zoneidx``, ``usec_delayed`` where the throttle event prints
``usect_delayed``, ``shr``/``shrink`` for shrink_slab's pointer and symbol) and numbers
where the printed form has names (``reason=1``, ``reclaim_flags=10``, ``lru=2``). Read
unmapped, the throttle rows lose their reason and delays and LRU activations read 0.

:func:`printed_form` renames the raw keys and decodes the values whose encoding is fixed by
include/trace/events/vmscan.h and enum lru_list since the events exist, row by row (a file
may mix both forms). ftrace hist triggers key on the same stored values
(:mod:`analysis.ingest.histogram`). It sits in :mod:`analysis.ingest`, not in
:mod:`.ftrace`, because both readers use it. What differs between kernels or
configurations is never guessed:

- gfp masks stay hex (``0x100cca``), as the kernel prints bits it has no name for: the
  ``___GFP_*`` bit numbers move between releases;
- compaction's ``status``/``ret`` (enum compact_result, renumbered over the years) and zone
  indices (``idx``, kcompactd's ``highest_zoneidx``: which zones exist is configuration)
  cannot be named: :func:`unmappable` finds them and the reader refuses the file.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

__all__ = ["RAW_KEYS", "printed_form", "unmappable"]

# include/trace/events/vmscan.h: show_reclaim_flags, show_throttle_flags (in print order).
_RECLAIM_FLAGS = (
    (0x01, "RECLAIM_WB_ANON"),
    (0x02, "RECLAIM_WB_FILE"),
    (0x10, "RECLAIM_WB_MIXED"),
    (0x04, "RECLAIM_WB_SYNC"),
    (0x08, "RECLAIM_WB_ASYNC"),
)
_THROTTLE_REASONS = (
    (1 << 0, "VMSCAN_THROTTLE_WRITEBACK"),
    (1 << 1, "VMSCAN_THROTTLE_ISOLATED"),
    (1 << 2, "VMSCAN_THROTTLE_NOPROGRESS"),
    (1 << 3, "VMSCAN_THROTTLE_CONGESTED"),
)
# enum lru_list (include/linux/mmzone.h), printed by __print_symbolic(lru, LRU_NAMES).
_LRU_NAMES = ("inactive_anon", "active_anon", "inactive_file", "active_file", "unevictable")

_SHRINK_INACTIVE = {"nr_activate0": "nr_activate_anon", "nr_activate1": "nr_activate_file"}
# Raw key → printed key, per event (keys raw text shares with the printed form are absent).
RAW_KEYS: dict[str, dict[str, str]] = {
    "mm_vmscan_throttled": {"usec_delayed": "usect_delayed"},
    "mm_vmscan_lru_shrink_inactive": {**_SHRINK_INACTIVE, "reclaim_flags": "flags"},
    "mm_vmscan_reclaim_pages": _SHRINK_INACTIVE,
    "mm_vmscan_lru_shrink_active": {"reclaim_flags": "flags"},
    "mm_vmscan_write_folio": {"reclaim_flags": "flags"},
    "mm_vmscan_writepage": {"reclaim_flags": "flags"},
    # highest_zoneidx since 5.8, classzone_idx before
    "mm_vmscan_lru_isolate": {"highest_zoneidx": "classzone", "classzone_idx": "classzone"},
    "mm_shrink_slab_start": {"shrink": "shrinker", "shr": "shrinker_ptr"},
    "mm_shrink_slab_end": {"shrink": "shrinker", "shr": "shrinker_ptr"},
    "mm_compaction_begin": {"sync": "mode"},
    "mm_compaction_end": {"sync": "mode"},
    "mm_compaction_try_to_compact_pages": {"prio": "priority"},
}
# Raw keys whose values cannot be named without the capturing kernel's headers and config.
_UNMAPPABLE: dict[str, tuple[str, ...]] = {
    "mm_compaction_end": ("status",),
    "mm_compaction_suitable": ("idx", "ret"),
    "mm_compaction_finished": ("idx", "ret"),
    "mm_compaction_deferred": ("idx",),
    "mm_compaction_defer_compaction": ("idx",),
    "mm_compaction_defer_reset": ("idx",),
    "mm_compaction_kcompactd_wake": ("highest_zoneidx",),
    "mm_compaction_wakeup_kcompactd": ("highest_zoneidx",),
}


def _flag_names(value: int, names: tuple[tuple[int, str], ...], none: str) -> list[str]:
    """``__print_flags``: the named bits in table order, leftover bits as hex, 0 → ``none``."""
    if value == 0:
        return [none]
    out = [name for bit, name in names if value & bit]
    rest = value & ~sum(bit for bit, _ in names)
    return [*out, hex(rest)] if rest else out


def _lookup(fn: Callable[[int], object], dtype: pl.DataType) -> Callable[[pl.Series], pl.Series]:
    """A batch function decoding an integer column through ``fn`` (once per distinct value)."""

    def run(series: pl.Series) -> pl.Series:
        values = series.drop_nulls().unique().to_list()
        return series.replace_strict({v: fn(v) for v in values}, default=None, return_dtype=dtype)

    return run


_FLAGS = pl.List(pl.String())


def _digits(column: str) -> pl.Expr:
    """The integer in a String column that raw text filled with a number, else null."""
    return pl.col(column).str.extract(r"^(\d+)$").cast(pl.Int64)


def _decoded(event: str, raw: str, printed: str) -> pl.Expr:
    """The printed value of the raw column ``raw`` of ``event``."""
    col = pl.col(raw)
    if raw == "reclaim_flags":
        fn = _lookup(lambda v: _flag_names(v, _RECLAIM_FLAGS, "RECLAIM_WB_NONE"), _FLAGS)
        return col.map_batches(fn, return_dtype=_FLAGS)
    if raw == "sync":
        return pl.when(col.cast(pl.Int64) != 0).then(pl.lit("sync")).otherwise(pl.lit("async"))
    if printed in ("shrinker", "shrinker_ptr"):
        return col.cast(pl.String)
    return col


def printed_form(event: str, frame: pl.LazyFrame) -> pl.LazyFrame:
    """``frame`` of ``event`` with raw keys and values mapped to the printed form (see the
    module docstring); a frame of printed text is returned unchanged."""
    columns = frame.collect_schema()
    renames = {raw: p for raw, p in RAW_KEYS.get(event, {}).items() if raw in columns}
    exprs = [
        pl.coalesce(pl.col(p), _decoded(event, raw, p).cast(columns[p])).alias(p)
        for raw, p in renames.items()
    ]
    # A number in a String field is decoded only on a row a raw-only key marks as raw.
    raw_row = pl.any_horizontal([pl.col(raw).is_not_null() for raw in renames] or [False])
    if event == "mm_vmscan_throttled" and renames:
        fn = _lookup(
            lambda v: "|".join(_flag_names(v, _THROTTLE_REASONS, "VMSCAN_THROTTLE_NONE")),
            pl.String(),
        )
        decoded = _digits("reason").map_batches(fn, return_dtype=pl.String())
        exprs.append(pl.when(raw_row).then(decoded).otherwise(pl.col("reason")).alias("reason"))
    if event == "mm_vmscan_lru_isolate" and renames:
        names = dict(enumerate(_LRU_NAMES))
        decoded = _digits("lru").replace_strict(names, default=None, return_dtype=pl.String())
        exprs.append(pl.when(raw_row).then(decoded).otherwise(pl.col("lru")).alias("lru"))
    if not exprs:
        return frame
    return frame.with_columns(exprs).drop(list(renames))


def unmappable(event: str, frame: pl.LazyFrame) -> tuple[str, int] | None:
    """(raw key, first line) of a raw field of ``event`` that cannot be named, or None."""
    columns = frame.collect_schema()
    for key in _UNMAPPABLE.get(event, ()):
        if key not in columns:
            continue
        value = pl.col(key).cast(pl.String)
        # `status`/`ret` share their names with the printed form: raw only when a number.
        raw = value.str.contains(r"^\d+$") if key in ("status", "ret") else value.is_not_null()
        lines = frame.filter(raw).select(pl.col("line").min()).collect()
        if lines.height and lines.item() is not None:
            return key, int(lines.item())
    return None
