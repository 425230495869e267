"""One study: the runs compared and every result computed once from them.

A :class:`~analysis.study.study.Study` holds the runs (the first is the base) and computes
each result on first use — the per-iteration trace analyses, the provenance, the latency
comparison, the Ops rows, throttling, the throttle fits, the stalls, the shrinker replay —
as a cached property, so that the mail report, the paper and
``--json`` render one computation (``analysis.report`` only renders). ``runs`` finds the
runs of a study under a data folder; ``latency``, ``fits``, ``shrinker`` and ``provenance``
compute the results of their subject.

Beside it, the results the other outputs render, each computed once: ``sweep`` (the
patched-kernel sweep scored by each model's validation recipe: the paper's results),
``throttle_model`` and ``shrinker_model`` (what ``mmlab model throttle``/``shrinker``
print), ``pilot`` (a pilot's spread and the runs a design needs). The report takes the
models' result types it prints from these modules: it never imports ``analysis.models``.
"""
