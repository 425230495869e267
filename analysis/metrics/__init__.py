"""Kernel quantities derived from ingested frames: reclaim interval pairing, throttling,
daemon (kswapd/kcompactd) awake time, compaction, shrinkers, LRU, vmstat Ops rows,
the per-trace analysis and the cross-run Ops comparison."""
