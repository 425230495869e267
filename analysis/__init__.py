"""mmlab: Linux memory-reclaim experiments, from capture to paper.

Subpackages follow the data: ``capture`` (run workloads, record traces),
``ingest`` (parse captures into typed Polars frames), ``metrics`` (derived
reclaim statistics), ``stats`` (distributions, significance), ``models``
(throttle and shrinker-deferral models), ``report`` (tables and figures).
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
