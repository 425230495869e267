"""mmlab: Linux memory-reclaim experiments, from capture to paper.

Subpackages follow the data: ``capture`` (run workloads, record traces),
``ingest`` (parse captures into typed Polars frames), ``metrics`` (derived
reclaim statistics), ``stats`` (distributions, significance), ``models``
(throttle and shrinker-deferral models), ``seeds`` (the seed mails' figures recomputed),
``study`` (every result of the runs compared, computed once), ``notebooks`` (running the
notebooks and their parameter sweeps), ``report`` (tables and figures).
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
