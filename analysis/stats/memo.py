"""A disk memo of the duration fits (:func:`analysis.stats.fit.fit_group`).

A group's fit is a pure function of its jiffy counts and options, and the slowest step of
every command that reads throttle sleeps: the report, ``compare``, the models, the paper
and the notebooks fit the same groups of the same captures again and again (the report of
the bundled captures spent 140 of its 183 s in 29 group fits). So a fit is kept, pickled,
under ``build/fits/<code key>/`` beside the ingest cache (``build/ingest``), keyed by its
inputs; the code key digests this package's sources and the numerical libraries'
versions, so a changed fit is never served from an older one. Entries are published by
rename: a concurrent reader finds one whole or not at all. ``MMLAB_FIT_CACHE`` names
another directory, or ``off`` to fit every time (the benchmarks measure the fit itself).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import threading
from collections.abc import Callable
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import TypeVar

import analysis

__all__ = ["DEFAULT_DIR", "code_key", "directory", "memoised"]

DEFAULT_DIR = Path("build") / "fits"
_LIBRARIES = ("numpy", "scipy", "statsmodels")

T = TypeVar("T")


@cache
def code_key() -> str:
    """mmlab's version and a digest of ``analysis/stats`` (every source the fits run) and
    of the versions of the libraries they call."""
    return analysis.source_key(["stats/**/*.py"], (f"{n}={version(n)}" for n in _LIBRARIES))


def directory() -> Path | None:
    """Where this code's fits are kept (None: ``MMLAB_FIT_CACHE=off``)."""
    chosen = os.environ.get("MMLAB_FIT_CACHE", "")
    if chosen == "off":
        return None
    return Path(chosen or DEFAULT_DIR) / code_key()


def _prune(root: Path, keep: str) -> None:
    """Drop the fits of other code keys: no code but theirs can read them."""
    for old in root.iterdir():
        if old.is_dir() and old.name != keep and not old.name.startswith("."):
            shutil.rmtree(old, ignore_errors=True)


def memoised(inputs: bytes, compute: Callable[[], T]) -> T:
    """``compute()``, or what it returned before for the same ``inputs`` under this code."""
    where = directory()
    if where is None:
        return compute()
    entry = where / f"{hashlib.sha256(inputs).hexdigest()}.pickle"
    try:
        return pickle.loads(entry.read_bytes())
    except (FileNotFoundError, EOFError, pickle.UnpicklingError):
        pass  # absent, or cut short by a full disk: computed again and rewritten
    value = compute()
    if not where.is_dir():
        where.mkdir(parents=True, exist_ok=True)
        _prune(where.parent, where.name)
    tmp = where / f".tmp-{os.getpid()}-{threading.get_ident()}"
    try:
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, entry)
    except OSError:
        tmp.unlink(missing_ok=True)  # a read-only or full disk: the fit stands, unkept
    return value
