"""ftrace text → one typed Polars table per event, with an account of every line.

One module per step of the ingest (the registry of known events they read is
:mod:`analysis.ingest.events`):

- :mod:`.layout`: line layouts (ftrace, trace-cmd, perf, mail pastes) → line kinds and spans;
- :mod:`.tokenizer`: payload tokens and the general per-event frame builder;
- :mod:`.columns`: the compiled one-pass column emission for known events;
- :mod:`.arrow`: Arrow buffers → Polars series;
- :mod:`.cache`: the Parquet dataset cache keyed by content;
- :mod:`.reader`: blocks, workers and accounting: :func:`read` and :func:`ingest`.

The reader's names are loaded on first use, so importing this package (``mmlab --help``)
does not start numba.
"""

from __future__ import annotations

import importlib

__all__ = ["Accounting", "LostEvents", "Trace", "UnparsedReason", "ingest", "parse_text", "read"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("analysis.ingest.ftrace.reader"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
