"""One study: the runs compared and every result computed once from them.

A :class:`~analysis.study.study.Study` holds the runs (the first is the base) and computes
each result on first use — the per-iteration trace analyses, the provenance, the latency
comparison, the Ops rows, throttling, the throttle fits, the stalls, the shrinker replay —
as a cached property, so that the mail report, the paper and
``--json`` render one computation (``analysis.report`` only renders). ``runs`` finds the
runs of a study under a data folder; ``latency``, ``fits``, ``shrinker`` and ``provenance``
compute the results of their subject.
"""
