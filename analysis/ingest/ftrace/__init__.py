"""ftrace text → one typed Polars table per event, with an account of every line.

One module per step of the ingest (the registry of known events they read is
:mod:`analysis.ingest.events`):

- ``_parse`` (C, ``_parse.c``, compiled when the package is installed): the passes over
  the bytes, wrapped by the modules below;
- :mod:`.layout`: line layouts (ftrace, trace-cmd, perf, mail pastes) → line kinds and spans;
- :mod:`.tokenizer`: payload tokens and the general per-event frame builder;
- :mod:`.columns`: the one-pass column emission for known events, as Arrow buffers;
- :mod:`.arrow`: Arrow buffers → Polars series and frames;
- :mod:`.cache`: the Parquet dataset cache keyed by content;
- :mod:`.reader`: blocks, workers and accounting: :func:`read` and :func:`ingest`.

The reader's names are loaded on first use, so importing this package (``mmlab --help``)
loads neither the compiled reader nor NumPy, Polars or PyArrow.
"""

from __future__ import annotations

import importlib

__all__ = ["Accounting", "LostEvents", "Trace", "UnparsedReason", "ingest", "parse_text", "read"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("analysis.ingest.ftrace.reader"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
