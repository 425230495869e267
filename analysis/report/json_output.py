"""JSON for scripts: the one encoder behind every ``mmlab ... --json``.

Results are frozen dataclasses and Polars frames; :func:`jsonable` turns them into plain
objects (a dataclass into an object of its fields in declaration order, a frame into a list
of row objects, tuples into lists, paths into strings) and every number that JSON cannot
hold — NaN, +inf, -inf — into ``null``. :func:`dumps` then writes strict JSON (RFC 8259):
``allow_nan=False`` makes any value that slipped through an error instead of a file that
Python reads and ``jq`` rejects.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import PurePath
from typing import Any

import polars as pl

__all__ = ["dumps", "jsonable"]


def jsonable(obj: Any) -> Any:
    """``obj`` as nested dicts, lists, strings, finite numbers, booleans and None.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Row:
    ...     name: str
    ...     mean: float
    ...     values: tuple[float, ...]
    >>> jsonable(Row("Kswapd velocity", float("nan"), (1.0, float("inf"))))
    {'name': 'Kswapd velocity', 'mean': None, 'values': [1.0, None]}
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, str | int | bool):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, pl.DataFrame):
        return [jsonable(row) for row in obj.iter_rows(named=True)]
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, PurePath):
        return str(obj)
    raise TypeError(f"no JSON form for {type(obj).__name__}: {obj!r}")


def dumps(obj: Any) -> str:
    """Strict, indented JSON text of ``obj`` (see :func:`jsonable`)."""
    return json.dumps(jsonable(obj), indent=2, allow_nan=False)
