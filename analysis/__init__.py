"""mmlab: Linux memory-reclaim experiments, from capture to paper.

Subpackages follow the data: ``capture`` (run workloads, record traces),
``ingest`` (parse captures into typed Polars frames), ``metrics`` (derived
reclaim statistics), ``stats`` (distributions, significance), ``models``
(throttle and shrinker-deferral models), ``seeds`` (the seed mails' figures recomputed),
``study`` (every result of the runs compared, computed once), ``notebooks`` (running the
notebooks and their parameter sweeps), ``report`` (tables and figures).
"""

import hashlib
from collections.abc import Iterable
from pathlib import Path

__all__ = ["__version__", "source_key"]

__version__ = "0.1.0"


def source_key(patterns: Iterable[str], extra: Iterable[str] = ()) -> str:
    """mmlab's version and a digest of the sources matching ``patterns`` (globs under this
    package) and of the ``extra`` strings (e.g. library versions): the key of a cache of
    what that code computed, so changed code never reads what older code wrote."""
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for pattern in patterns:
        for path in sorted(package.glob(pattern)):
            digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    for text in extra:
        digest.update(text.encode() + b"\0")
    return f"{__version__}-{digest.hexdigest()[:16]}"
