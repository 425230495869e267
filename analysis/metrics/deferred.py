"""Frozen results whose big per-row frames are read only when something asks for them.

An analysis of a long trace keeps its per-row frames (every reclaim interval, every
shrinker call) on disk beside the ingest cache; a report that prints only the tables never
reads them, so its memory does not grow with the trace. A field listed in the loaders is
absent from the instance until first read, then loaded once and kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Self

__all__ = ["Deferred"]


class Deferred:
    """Mixin for a frozen dataclass: :meth:`deferred` builds an instance whose fields named
    in ``loaders`` are produced by calling the loader on first access. Loaders must be
    picklable (module-level functions or ``functools.partial`` of them), so a result can
    come back from a worker process without its frames."""

    @classmethod
    def deferred(cls, loaders: Mapping[str, Callable[[], Any]], **values: Any) -> Self:
        obj = object.__new__(cls)
        for name, value in values.items():
            object.__setattr__(obj, name, value)
        object.__setattr__(obj, "_loaders", dict(loaders))
        return obj

    def __getattr__(self, name: str) -> Any:
        # Called only when the attribute is not set: a deferred field not read yet.
        loaders = self.__dict__.get("_loaders", {})
        if name not in loaders:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = loaders[name]()
        object.__setattr__(self, name, value)
        return value
