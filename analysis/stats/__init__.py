"""Statistics over independent runs: descriptive summaries in :mod:`.describe`
(mean ± sd, distributions, nearest-rank percentiles); fits and tests join as siblings."""
