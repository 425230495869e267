"""Compile the shrinker model's numba kernels once, at install, into numba's on-disk cache.

numba compiles a ``cache=True`` kernel the first time it is called in an environment
and then loads it from ``__pycache__`` beside the source. ``make setup`` runs ``python -m
analysis.warm``, so that the first shrinker model run a user or a CI machine makes costs
what every later one does (issue 23). The kernels
(:mod:`analysis.models.shrinker_kernel`) are compiled by the real code path, a model run
on the shrinker calls of a small trace read with
:func:`~analysis.ingest.ftrace.reader.read`, so they get exactly the argument types a
real run passes (numba compiles one version per type). The trace reader itself is C,
compiled when the package is installed: it has nothing to warm.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

__all__ = ["SAMPLE", "warm"]

# Real lines: the first events of data/stutterp-dirty20 iter-0 (Linux 6.18, trace_pipe)
# and of a `trace-cmd report` of tests/data/trace-cmd/trace.dat (an instance buffer).
SAMPLE = b"""\
          python-32443   [000] .....  2126.293483: mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE
          python-32443   [000] .....  2126.293535: mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=7 nr_reclaimed=5 nr_dirty=2 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=2 nr_ref_keep=0 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC
          python-32443   [000] .....  2126.293543: mm_shrink_slab_start: super_cache_scan+0x0/0x210 0000000057ada3c1: nid: 0 objects to shrink 0 gfp_flags GFP_HIGHUSER_MOVABLE cache items 8 delta 0 total_scan 0 priority 12
          python-32443   [000] .....  2126.293552: mm_shrink_slab_end: super_cache_scan+0x0/0x210 0000000057ada3c1: nid: 0 unused scan count 0 new scan count 0 total_scan 0 last shrinker return val 0
          python-32443   [000] .....  2126.304286: mm_vmscan_throttled: nid=0 usec_timeout=100000 usect_delayed=12000 reason=VMSCAN_THROTTLE_WRITEBACK
mmlab_speed:               dd-28412 [001]   995.834403: writeback_dirty_folio: bdi 254:0: ino=5317324 index=878592
"""  # noqa: E501


def warm() -> None:
    """Ingest :data:`SAMPLE` from a file into a throw-away cache and model its shrinker
    calls (compiles every model kernel)."""
    from analysis.ingest.ftrace.reader import read
    from analysis.metrics.pairing import all_intervals, reclaim_intervals
    from analysis.metrics.shrinker import shrinker_invocations
    from analysis.models import shrinker

    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "sample.trace"
        trace.write_bytes(SAMPLE)
        data = read(trace, cache_dir=Path(tmp) / "cache")
        intervals = all_intervals(reclaim_intervals(data, lost_lines=[]))
        calls, _ = shrinker_invocations(data, intervals, lost_lines=[])
        shrinker.model_trace(calls, shrinker.Variant("G2"))
    shrinker.do_shrink_slab(shrinker.Variant("G1"), deferred=0, freeable=100, priority=12)


if __name__ == "__main__":
    warm()
