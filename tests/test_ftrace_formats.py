"""Verbatim trace lines of every layout and event version in docs/trace-formats.md, parsed by hand.

Expected values are read off the lines themselves (not produced by the parser): e.g.
``461.757468`` s is 461_757_468_000 ns; ``pfn=0x1f000`` is 126976.
"""

from __future__ import annotations

import polars as pl
import pytest

from analysis.ingest.ftrace import parse_text
from analysis.metrics.pairing import label_context

# (line, event, expected column values). Lines marked "capture" are from this machine's
# kernel 6.18 (benchmarks/work capture and data/stutterp-*); the rest follow the format
# strings per kernel version in docs/trace-formats.md "Events by kernel version".
CASES = [
    # --- layouts ("Line layouts") ---
    (  # capture: 6.18 trace_pipe, 5 flag chars
        "              dd-3772    [001] d..1.   252.454999: mm_vmscan_lru_isolate: classzone=4 "
        "order=0 nr_requested=15 nr_scanned=15 nr_skipped=0 nr_taken=15 lru=inactive_file",
        "mm_vmscan_lru_isolate",
        {
            "comm": "dd",
            "pid": 3772,
            "tgid": None,
            "cpu": 1,
            "irq_flags": "d..1.",
            "ts_ns": 252_454_999_000,
            "instance": None,
            "classzone": 4,
            "nr_scanned": 15,
            "nr_taken": 15,
            "lru": "inactive_file",
            "isolate_mode": None,
        },
    ),
    (  # comm with spaces and '#', split at the last '-'
        " DNS Res~ver #12-5720    [001] d..1.   461.757468: mm_vmscan_kswapd_wake: nid=0 order=3",
        "mm_vmscan_kswapd_wake",
        {"comm": "DNS Res~ver #12", "pid": 5720, "cpu": 1, "ts_ns": 461_757_468_000, "order": 3},
    ),
    (  # tgid column, 4 flag chars (before ~5.15)
        "    kworker/u4:4-3896  (   3896) [000] ....   100.000001: mm_vmscan_kswapd_sleep: nid=0",
        "mm_vmscan_kswapd_sleep",
        {"comm": "kworker/u4:4", "pid": 3896, "tgid": 3896, "irq_flags": "....", "nid": 0},
    ),
    (  # cmdline-cache miss, unknown tgid
        "           <...>-1234  (-------) [001] d...    12.345678: mm_vmscan_kswapd_sleep: nid=1",
        "mm_vmscan_kswapd_sleep",
        {"comm": "<...>", "pid": 1234, "tgid": None, "ts_ns": 12_345_678_000, "nid": 1},
    ),
    (  # empty comm after copy/paste, no flags column (pre-3.2 / irq-info=0)
        "-5972  [000]   100.500000: mm_vmscan_kswapd_sleep: nid=0",
        "mm_vmscan_kswapd_sleep",
        {"comm": "", "pid": 5972, "irq_flags": None, "ts_ns": 100_500_000_000},
    ),
    (  # older 5-wide pid, tgid "(-----)", comm with '-' and '/'
        "  kworker/0:1-my-5  (-----) [003] d.h1  99.000002: mm_vmscan_kswapd_sleep: nid=0",
        "mm_vmscan_kswapd_sleep",
        {"comm": "kworker/0:1-my", "pid": 5, "tgid": None, "cpu": 3, "irq_flags": "d.h1"},
    ),
    (  # counter clock: bare integer timestamp kept raw
        "            dd-100   [000] ..... 1234567890: mm_vmscan_kswapd_sleep: nid=0",
        "mm_vmscan_kswapd_sleep",
        {"ts_ns": 1_234_567_890},
    ),
    (  # trace-cmd report: no flags
        "          kswapd0-32    [001]  5234.100200: mm_vmscan_kswapd_wake: nid=0 order=0",
        "mm_vmscan_kswapd_wake",
        {"comm": "kswapd0", "pid": 32, "irq_flags": None, "ts_ns": 5_234_100_200_000},
    ),
    (  # capture: trace-cmd report of a `-B` buffer (tests/data/trace-cmd/trace.dat)
        "mmlab_speed:               dd-28412 [001]   995.834158: mm_vmscan_lru_isolate: "
        "classzone=4 order=0 nr_requested=15 nr_scanned=256 nr_skipped=0 nr_taken=256 "
        "lru=inactive_file",
        "mm_vmscan_lru_isolate",
        {
            "instance": "mmlab_speed",
            "comm": "dd",
            "pid": 28412,
            "cpu": 1,
            "irq_flags": None,
            "ts_ns": 995_834_158_000,
            "nr_taken": 256,
        },
    ),
    (  # capture: the same record in `trace-cmd report -l` (cpu digits, then latency flags)
        "mmlab_speed:       dd-28412   1d..1.   995.834158: mm_vmscan_lru_isolate: "
        "classzone=4 order=0 nr_requested=15 nr_scanned=256 nr_skipped=0 nr_taken=256 "
        "lru=inactive_file",
        "mm_vmscan_lru_isolate",
        {
            "instance": "mmlab_speed",
            "comm": "dd",
            "pid": 28412,
            "cpu": 1,
            "irq_flags": "d..1.",
            "ts_ns": 995_834_158_000,
            "nr_taken": 256,
        },
    ),
    (  # capture: report -l, flags of a record with interrupts on
        "mmlab_speed:       dd-28412   1.....   995.834232: mm_shrink_slab_start: "
        "0xffffffff816bf630 0xffff888102487280: nid: 0 objects to shrink 1 gfp_flags "
        "GFP_HIGHUSER_MOVABLE cache items 1 delta 0 total_scan 0 priority 12",
        "mm_shrink_slab_start",
        {"comm": "dd", "cpu": 1, "irq_flags": ".....", "shrinker": "0xffffffff816bf630"},
    ),
    (  # trace-cmd's "%*s: " buffer name (right-aligned to the longest) before
        # "%16s-%-5d [%03d]": kswapd must stay kswapd
        "      kswapd_buf:          kswapd0-32    [001]  5234.100200: mm_vmscan_kswapd_wake: "
        "nid=0 order=0",
        "mm_vmscan_kswapd_wake",
        {"instance": "kswapd_buf", "comm": "kswapd0", "pid": 32, "cpu": 1},
    ),
    (  # a kernel comm holding ": " in its 16-wide column is not a trace-cmd buffer name
        "    ab: cdefghij-123     [001] ..... 1.000000: mm_vmscan_kswapd_sleep: nid=0",
        "mm_vmscan_kswapd_sleep",
        {"comm": "ab: cdefghij", "instance": None, "pid": 123},
    ),
    (  # nor in report -l's 8-wide column
        "ab: cdef-123     1d..1. 1.000000: mm_vmscan_kswapd_sleep: nid=0",
        "mm_vmscan_kswapd_sleep",
        {"comm": "ab: cdef", "instance": None, "irq_flags": "d..1."},
    ),
    (  # capture: perf script of tests/data/perf/perf.data, event name padded
        "              dd 12320 [001]  1487.466650:   vmscan:mm_vmscan_memcg_reclaim_end: "
        "nr_reclaimed=257",
        "mm_vmscan_memcg_reclaim_end",
        {"comm": "dd", "pid": 12320, "cpu": 1, "ts_ns": 1_487_466_650_000, "nr_reclaimed": 257},
    ),
    (  # perf script with system prefix
        "         kswapd0    32 [001]  5234.100200: vmscan:mm_vmscan_kswapd_wake: nid=0 order=2",
        "mm_vmscan_kswapd_wake",
        {"comm": "kswapd0", "pid": 32, "cpu": 1, "order": 2},
    ),
    (  # perf script pid/tid, older perf without the system prefix
        "              dd  5/6 [001]  5234.100200: mm_vmscan_kswapd_wake: nid=0 order=2",
        "mm_vmscan_kswapd_wake",
        {"comm": "dd", "pid": 6, "tgid": 5},
    ),
    (  # timestamp first (reformatted in mails)
        "461.757468 kswapd0-32 mm_vmscan_kswapd_wake: nid=0 order=3",
        "mm_vmscan_kswapd_wake",
        {"comm": "kswapd0", "pid": 32, "cpu": None, "ts_ns": 461_757_468_000, "order": 3},
    ),
    (  # "> " quoted mail paste, two levels
        "> > dd-100 [000] ..... 1.000000: mm_vmscan_kswapd_sleep: nid=0",
        "mm_vmscan_kswapd_sleep",
        {"comm": "dd", "pid": 100, "ts_ns": 1_000_000_000},
    ),
    # --- vmscan versions ("Events by kernel version", vmscan) ---
    (  # 4.8-5.1 kswapd_wake with zid
        "kswapd0-32 [000] .... 1.0: mm_vmscan_kswapd_wake: nid=0 zid=2 order=3",
        "mm_vmscan_kswapd_wake",
        {"nid": 0, "zid": 2, "order": 3},
    ),
    (  # <=4.16 wakeup_kswapd
        "dd-1 [000] .... 1.0: mm_vmscan_wakeup_kswapd: nid=0 zid=1 order=0",
        "mm_vmscan_wakeup_kswapd",
        {"zid": 1, "gfp_flags": None},
    ),
    (  # 5.2+ wakeup_kswapd, gfp with unknown bit printed as hex
        "dd-1 [000] ..... 1.0: mm_vmscan_wakeup_kswapd: nid=0 order=2 "
        "gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_WRITE|0x2",
        "mm_vmscan_wakeup_kswapd",
        {"order": 2, "zid": None, "gfp_flags": ["GFP_HIGHUSER_MOVABLE", "__GFP_WRITE", "0x2"]},
    ),
    (  # <=4.7 direct reclaim begin
        "dd-1 [000] .... 1.0: mm_vmscan_direct_reclaim_begin: order=0 may_writepage=1 "
        "gfp_flags=GFP_HIGHUSER_MOVABLE",
        "mm_vmscan_direct_reclaim_begin",
        {"may_writepage": 1, "classzone_idx": None, "gfp_flags": ["GFP_HIGHUSER_MOVABLE"]},
    ),
    (  # 4.8-5.1 with classzone_idx; pre-4.6 single bits without "__"
        "dd-1 [000] .... 1.0: mm_vmscan_direct_reclaim_begin: order=3 may_writepage=1 "
        "gfp_flags=GFP_NOFS|GFP_NOWARN classzone_idx=2",
        "mm_vmscan_direct_reclaim_begin",
        {"order": 3, "classzone_idx": 2, "gfp_flags": ["GFP_NOFS", "GFP_NOWARN"]},
    ),
    (  # capture: 5.2+ memcg reclaim begin
        "              dd-3772    [001] .....   252.454944: mm_vmscan_memcg_reclaim_begin: "
        "order=0 gfp_flags=GFP_HIGHUSER_MOVABLE",
        "mm_vmscan_memcg_reclaim_begin",
        {"order": 0, "may_writepage": None, "gfp_flags": ["GFP_HIGHUSER_MOVABLE"]},
    ),
    (
        "dd-1 [000] ..... 1.0: mm_vmscan_memcg_softlimit_reclaim_end: nr_reclaimed=32",
        "mm_vmscan_memcg_softlimit_reclaim_end",
        {"nr_reclaimed": 32},
    ),
    (
        "dd-1 [000] ..... 1.0: mm_vmscan_node_reclaim_begin: nid=1 order=0 gfp_flags=none",
        "mm_vmscan_node_reclaim_begin",
        {"nid": 1, "gfp_flags": ["none"]},
    ),
    (  # 3.12-4.15 shrink_slab_start: nid, pgs_scanned/lru_pgs, raw pointer, no priority
        "kswapd0-32 [000] .... 1.0: mm_shrink_slab_start: super_cache_scan+0x0/0x1a0 "
        "ffff88003f8d3c00: nid: 0 objects to shrink 6 gfp_flags GFP_KERNEL pgs_scanned 32 "
        "lru_pgs 48931 cache items 7766 delta 10 total_scan 16",
        "mm_shrink_slab_start",
        {
            "shrinker": "super_cache_scan+0x0/0x1a0",
            "shrinker_ptr": "ffff88003f8d3c00",
            "nid": 0,
            "nr_objects_to_shrink": 6,
            "gfp_flags": ["GFP_KERNEL"],
            "pgs_scanned": 32,
            "lru_pgs": 48931,
            "cache_items": 7766,
            "delta": 10,
            "total_scan": 16,
            "priority": None,
        },
    ),
    (  # pre-3.12 shrink_slab_start: no nid
        "kswapd0-32 [000] .... 1.0: mm_shrink_slab_start: prune_super+0x0/0x1b0 "
        "ffff88003f8d3c00: objects to shrink 6 gfp_flags GFP_KERNEL pgs_scanned 32 "
        "lru_pgs 48931 cache items 7766 delta 10 total_scan 16",
        "mm_shrink_slab_start",
        {"nid": None, "nr_objects_to_shrink": 6, "total_scan": 16},
    ),
    (  # capture: 6.18 shrink_slab_start, hashed pointer, priority
        "              dd-3772    [001] .....   252.455024: mm_shrink_slab_start: "
        "super_cache_scan+0x0/0x210 0000000057ada3c1: nid: 0 objects to shrink 0 gfp_flags "
        "GFP_HIGHUSER_MOVABLE cache items 9 delta 0 total_scan 0 priority 12",
        "mm_shrink_slab_start",
        {
            "shrinker": "super_cache_scan+0x0/0x210",
            "shrinker_ptr": "0000000057ada3c1",
            "cache_items": 9,
            "priority": 12,
            "lru_pgs": None,
            "delta": 0,
        },
    ),
    (  # negative delta (%lld)
        "kswapd0-32 [000] ..... 1.0: mm_shrink_slab_start: super_cache_scan+0x0/0x210 "
        "0000000057ada3c1: nid: 0 objects to shrink 5 gfp_flags GFP_KERNEL cache items 9 "
        "delta -3 total_scan 2 priority 0",
        "mm_shrink_slab_start",
        {"delta": -3, "priority": 0},
    ),
    (  # capture: shrink_slab_end
        "              dd-3772    [001] .....   252.455025: mm_shrink_slab_end: "
        "super_cache_scan+0x0/0x210 0000000057ada3c1: nid: 0 unused scan count 0 new scan count"
        " 0 total_scan 0 last shrinker return val 0",
        "mm_shrink_slab_end",
        {"nid": 0, "unused_scan": 0, "new_scan": 0, "total_scan": 0, "retval": 0},
    ),
    (  # pre-3.16 shrink_slab_end: no nid
        "kswapd0-32 [000] .... 1.0: mm_shrink_slab_end: prune_super+0x0/0x1b0 ffff88003f8d3c00:"
        " unused scan count 6 new scan count 2 total_scan 4 last shrinker return val 11",
        "mm_shrink_slab_end",
        {"nid": None, "unused_scan": 6, "new_scan": 2, "total_scan": 4, "retval": 11},
    ),
    (  # 3.x lru_isolate with isolate_mode and file=
        "dd-1 [000] .... 1.0: mm_vmscan_lru_isolate: isolate_mode=1 order=0 nr_requested=32 "
        "nr_scanned=40 nr_taken=32 file=1",
        "mm_vmscan_lru_isolate",
        {"isolate_mode": 1, "nr_requested": 32, "nr_scanned": 40, "file": 1, "lru": None},
    ),
    (  # 4.11-6.6 lru_isolate with isolate_mode, classzone, nr_skipped, lru=
        "dd-1 [000] .... 1.0: mm_vmscan_lru_isolate: isolate_mode=0 classzone=3 order=0 "
        "nr_requested=32 nr_scanned=32 nr_skipped=0 nr_taken=32 lru=inactive_file",
        "mm_vmscan_lru_isolate",
        {"isolate_mode": 0, "classzone": 3, "nr_skipped": 0, "lru": "inactive_file"},
    ),
    (  # pre-5.14 writepage: decimal pfn
        "kswapd0-32 [000] .... 1.0: mm_vmscan_writepage: page=ffffea0000c6a740 pfn=203177 "
        "flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC",
        "mm_vmscan_writepage",
        {
            "page": "ffffea0000c6a740",
            "pfn": 203177,
            "flags": ["RECLAIM_WB_FILE", "RECLAIM_WB_ASYNC"],
        },
    ),
    (  # 5.18+ write_folio: hex pfn
        "kswapd0-32 [000] ..... 1.0: mm_vmscan_write_folio: page=0000000012345678 pfn=0x1f000 "
        "flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC",
        "mm_vmscan_write_folio",
        {"pfn": 0x1F000, "page": "0000000012345678"},
    ),
    (  # <=4.7 shrink_inactive with zid
        "kswapd0-32 [000] .... 1.0: mm_vmscan_lru_shrink_inactive: nid=0 zid=2 nr_scanned=32 "
        "nr_reclaimed=30 priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC",
        "mm_vmscan_lru_shrink_inactive",
        {"zid": 2, "nr_scanned": 32, "nr_reclaimed": 30, "priority": 12, "nr_dirty": None},
    ),
    (  # 4.11-5.1 detail fields, single nr_activate
        "kswapd0-32 [000] .... 1.0: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 "
        "nr_reclaimed=30 nr_dirty=1 nr_writeback=2 nr_congested=0 nr_immediate=3 "
        "nr_activate=4 nr_ref_keep=5 nr_unmap_fail=6 priority=11 flags=RECLAIM_WB_ANON",
        "mm_vmscan_lru_shrink_inactive",
        {
            "nr_dirty": 1,
            "nr_writeback": 2,
            "nr_immediate": 3,
            "nr_activate": 4,
            "nr_activate_anon": None,
            "nr_ref_keep": 5,
            "nr_unmap_fail": 6,
            "priority": 11,
        },
    ),
    (  # capture: lru_shrink_active
        "              dd-3773    [000] .....   256.512555: mm_vmscan_lru_shrink_active: nid=0 "
        "nr_taken=15 nr_active=13 nr_deactivated=2 nr_referenced=13 priority=12 "
        "flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC",
        "mm_vmscan_lru_shrink_active",
        {"nr_taken": 15, "nr_active": 13, "nr_deactivated": 2, "nr_referenced": 13},
    ),
    (  # capture: throttled, with the kernel's "usect_delayed" spelling
        "              dd-3772    [001] .....   252.459898: mm_vmscan_throttled: nid=0 "
        "usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK",
        "mm_vmscan_throttled",
        {"usec_timeout": 100000, "usect_delayed": 4000, "reason": "VMSCAN_THROTTLE_WRITEBACK"},
    ),
    (  # capture: reclaim_pages (6.13+)
        "       kdamond.0-77      [001] .....   252.630599: mm_vmscan_reclaim_pages: nid=0 "
        "nr_scanned=204 nr_reclaimed=203 nr_dirty=0 nr_writeback=0 nr_congested=0 "
        "nr_immediate=0 nr_activate_anon=1 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0",
        "mm_vmscan_reclaim_pages",
        {"comm": "kdamond.0", "nr_scanned": 204, "nr_reclaimed": 203, "nr_activate_anon": 1},
    ),
    (  # 7.1 appends memcg_id: kept as an extra integer column
        "dd-1 [000] ..... 1.0: mm_vmscan_memcg_reclaim_end: nr_reclaimed=32 memcg_id=17",
        "mm_vmscan_memcg_reclaim_end",
        {"nr_reclaimed": 32, "memcg_id": 17},
    ),
    # --- writeback (removed 5.16 / ~5.18) ---
    (
        "dd-1 [000] .... 1.0: writeback_congestion_wait: usec_timeout=100000 usec_delayed=104000",
        "writeback_congestion_wait",
        {"usec_timeout": 100000, "usec_delayed": 104000},
    ),
    (
        "dd-1 [000] .... 1.0: writeback_wait_iff_congested: usec_timeout=100000 usec_delayed=0",
        "writeback_wait_iff_congested",
        {"usec_delayed": 0},
    ),
    # --- compaction ---
    (
        " kcompactd0-35 [001] .... 5.0: mm_compaction_begin: zone_start=0x1000 "
        "migrate_pfn=0x1000 free_pfn=0x13fe00 zone_end=0x140000, mode=async",
        "mm_compaction_begin",
        {"zone_start": 0x1000, "free_pfn": 0x13FE00, "zone_end": 0x140000, "mode": "async"},
    ),
    (
        " kcompactd0-35 [001] .... 5.0: mm_compaction_end: zone_start=0x1000 migrate_pfn=0x1200 "
        "free_pfn=0x13fe00 zone_end=0x140000, mode=sync status=partial_skipped",
        "mm_compaction_end",
        {"migrate_pfn": 0x1200, "mode": "sync", "status": "partial_skipped"},
    ),
    (  # ~5.2+
        "dd-1 [000] .... 1.0: mm_compaction_try_to_compact_pages: order=9 "
        "gfp_mask=GFP_TRANSHUGE_LIGHT priority=2",
        "mm_compaction_try_to_compact_pages",
        {"order": 9, "gfp_mask": ["GFP_TRANSHUGE_LIGHT"], "priority": 2, "mode": None},
    ),
    (  # earlier: hex gfp_mask and mode=
        "dd-1 [000] .... 1.0: mm_compaction_try_to_compact_pages: order=9 gfp_mask=0x24200ca "
        "mode=1",
        "mm_compaction_try_to_compact_pages",
        {"gfp_mask": ["0x24200ca"], "mode": "1", "priority": None},
    ),
    (  # %-8s zone padding stripped
        "dd-1 [000] .... 1.0: mm_compaction_suitable: node=0 zone=Normal   order=9 ret=continue",
        "mm_compaction_suitable",
        {"node": 0, "zone": "Normal", "order": 9, "ret": "continue"},
    ),
    (
        "dd-1 [000] .... 1.0: mm_compaction_finished: node=0 zone=DMA32    order=2 ret=success",
        "mm_compaction_finished",
        {"zone": "DMA32", "ret": "success"},
    ),
    (
        "dd-1 [000] .... 1.0: mm_compaction_deferred: node=0 zone=Normal   order=9 "
        "order_failed=9 consider=64 limit=64",
        "mm_compaction_deferred",
        {"zone": "Normal", "order_failed": 9, "consider": 64, "limit": 64},
    ),
    (
        "dd-1 [000] .... 1.0: mm_compaction_defer_reset: node=0 zone=Normal   order=3 "
        "order_failed=4 consider=0 limit=1",
        "mm_compaction_defer_reset",
        {"order": 3, "order_failed": 4, "limit": 1},
    ),
    (  # capture
        "      kcompactd0-35      [000] .....   250.164105: mm_compaction_kcompactd_sleep: nid=0",
        "mm_compaction_kcompactd_sleep",
        {"comm": "kcompactd0", "pid": 35, "nid": 0, "ts_ns": 250_164_105_000},
    ),
    (  # classzone_idx printed as a zone name (%-8s)
        "kswapd0-32 [000] .... 1.0: mm_compaction_wakeup_kcompactd: nid=0 order=9 "
        "classzone_idx=Normal  ",
        "mm_compaction_wakeup_kcompactd",
        {"order": 9, "classzone_idx": "Normal"},
    ),
    (
        " kcompactd0-35 [001] .... 5.0: mm_compaction_isolate_migratepages: "
        "range=(0x1000 ~ 0x1200) nr_scanned=512 nr_taken=32",
        "mm_compaction_isolate_migratepages",
        {"start_pfn": 0x1000, "end_pfn": 0x1200, "nr_scanned": 512, "nr_taken": 32},
    ),
    (
        " kcompactd0-35 [001] .... 5.0: mm_compaction_fast_isolate_freepages: "
        "range=(0x13fe00 ~ 0x140000) nr_scanned=3 nr_taken=0",
        "mm_compaction_fast_isolate_freepages",
        {"start_pfn": 0x13FE00, "end_pfn": 0x140000},
    ),
    (
        "dd-1 [000] .... 1.0: mm_compaction_migratepages: nr_migrated=30 nr_failed=2",
        "mm_compaction_migratepages",
        {"nr_migrated": 30, "nr_failed": 2},
    ),
]


@pytest.mark.parametrize(("line", "event", "expected"), CASES, ids=[c[1] for c in CASES])
def test_verbatim_line(line: str, event: str, expected: dict) -> None:
    acc, frames = parse_text(line + "\n")
    assert acc.events == {event: 1}, acc.unparsed_by_reason
    row = frames[event].row(0, named=True)
    assert {k: row[k] for k in expected} == expected


def test_unknown_event_kept_with_fields() -> None:
    _, frames = parse_text(
        "dd-100 [000] ..... 1.000000: writeback_dirty_page: bdi 8:0: ino=12 index=3\n"
    )
    row = frames["writeback_dirty_page"].row(0, named=True)
    assert row["payload"] == "bdi 8:0: ino=12 index=3"
    assert {"key": "ino", "value": "12"} in row["fields"]
    assert {"key": "index", "value": "3"} in row["fields"]


NON_EVENT_TEXT = """\
# tracer: nop
#
# entries-in-buffer/entries-written: 5/5   #P:2
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
version = 6
cpus=2
CPU 1 is empty

CPU:1 [LOST 123 EVENTS]
CPU:0 [LOST EVENTS]
              dd-100   [000] ..... 1.000000: <stack trace>
 => __alloc_pages+0x1d4/0x330
 => folio_alloc+0x17/0x50
garbage line here
 dd-100 [000] ..... abc: mm_vmscan_kswapd_sleep: nid=0
 dd-100 [000] ..... 1.0: !!bad: nid=0
 dd-100 [000] ..... 1.0: mm_vmscan_kswapd_sl"""


def test_non_event_lines_accounted() -> None:
    acc, frames = parse_text(NON_EVENT_TEXT)
    assert frames == {}
    assert acc.lines == 18
    assert (acc.header_lines, acc.blank_lines, acc.stack_lines) == (8, 1, 3)
    assert [(x.cpu, x.count, x.line) for x in acc.lost_events] == [(1, 123, 10), (0, None, 11)]
    assert acc.lost_events_total == 123
    by_reason = {r: u.lines for r, u in acc.unparsed_by_reason.items()}
    assert by_reason == {
        "no trace line layout matched": (15,),
        "bad timestamp": (16,),
        "bad event name": (17,),
        "truncated final line": (18,),
    }
    assert acc.unparsed_by_reason["bad timestamp"].samples[0].startswith(" dd-100 [000]")
    assert acc.truncated_final_line


def test_trace_cmd_drop_marker_keeps_the_buffer_name() -> None:
    # trace-cmd prints the buffer name, "CPU:N [M EVENTS DROPPED]" and the next event as
    # one record: the event line itself carries no prefix (tracecmd/trace-read.c).
    text = (
        "cpus=2\n"
        "mmlab_speed: CPU:1 [57 EVENTS DROPPED]\n"
        "              dd-28412 [001]   995.834158: mm_vmscan_kswapd_sleep: nid=0\n"
        "CPU:0 [EVENTS DROPPED]\n"
        "              dd-28412 [000]   995.900000: mm_vmscan_kswapd_sleep: nid=1\n"
    )
    acc, frames = parse_text(text)
    assert [(x.cpu, x.count, x.line) for x in acc.lost_events] == [(1, 57, 2), (0, None, 4)]
    assert frames["mm_vmscan_kswapd_sleep"]["instance"].to_list() == ["mmlab_speed", None]
    assert (acc.header_lines, acc.unparsed) == (1, 0)


def test_prefixed_kswapd_counts_as_kswapd() -> None:
    """Issue 16: a `-B` buffer's prefix folded into comm made kswapd's scans "other"."""
    line = (
        "reclaim:          kswapd0-32    [001]  5234.100200: mm_vmscan_lru_shrink_inactive: "
        "nid=0 nr_scanned=32 nr_reclaimed=30 nr_dirty=0 nr_writeback=0 nr_congested=0 "
        "nr_immediate=0 nr_activate_anon=0 nr_activate_file=2 nr_ref_keep=0 nr_unmap_fail=0 "
        "priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC\n"
    )
    _, frames = parse_text(line)
    no_intervals = pl.DataFrame(
        schema={"pid": pl.Int32, "begin_ts_ns": pl.Int64, "end_ts_ns": pl.Int64, "kind": pl.String}
    )
    labelled = label_context(frames["mm_vmscan_lru_shrink_inactive"], no_intervals)
    assert labelled.select("context", "nr_scanned").row(0) == ("kswapd", 32)


def test_invalid_utf8_in_comm_is_counted_and_parsed() -> None:
    data = b"  ab\xff\xfecd-42 [000] ..... 1.000000: mm_vmscan_kswapd_sleep: nid=0\n"
    acc, frames = parse_text(data)
    assert acc.invalid_utf8_lines == 1
    assert frames["mm_vmscan_kswapd_sleep"]["comm"][0] == "ab\ufffd\ufffdcd"


def test_crlf_and_line_numbers() -> None:
    text = "x\r\n\r\ndd-1 [000] .... 2.5: mm_vmscan_kswapd_sleep: nid=3\r\n"
    acc, frames = parse_text(text)
    row = frames["mm_vmscan_kswapd_sleep"].row(0, named=True)
    assert (row["line"], row["nid"], row["ts_ns"]) == (3, 3, 2_500_000_000)
    assert (acc.lines, acc.blank_lines, acc.unparsed) == (3, 1, 1)


def test_short_words_outgrow_the_first_token_estimate() -> None:
    # 4 bytes a field ("a=1 "), against the 10 bytes a word the tokenizer first sizes its
    # token arrays for: they are grown mid-block, and every field still lands in its row.
    letters = "abcdefghijklmnopqrstuvwxyz"
    lines = [
        f"x-1 [000] ..... {i}.000000: my_event: " + " ".join(f"{c}={i % 10}" for c in letters)
        for i in range(1, 401)
    ]
    acc, frames = parse_text("\n".join(lines) + "\n")
    assert acc.events == {"my_event": 400} and acc.unparsed == 0
    fields = frames["my_event"]["fields"].to_list()
    assert fields[0] == [{"key": c, "value": "1"} for c in letters]
    assert fields[399] == [{"key": c, "value": "0"} for c in letters]
    assert all(len(row) == 26 for row in fields)
