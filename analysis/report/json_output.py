"""JSON for scripts: the one encoder behind every ``mmlab ... --json``.

Results are frozen dataclasses and Polars frames; :func:`jsonable` turns them into plain
objects (a dataclass into an object of its fields in declaration order, a frame into a list
of row objects, tuples into lists, paths into strings, NumPy scalars into numbers).
:func:`dumps` writes strict JSON (RFC 8259), which has no NaN or infinity: a NaN or
infinite float anywhere is refused with an error naming where it is (``$.rows[3].mean``),
never written as ``NaN`` (which Python reads and ``jq`` rejects) nor silently turned into
``null``. A value that can be missing is None in the result, with its reason beside it;
a serializer that knows what an infinite bound means (a CI that could not be computed)
says so before encoding.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import PurePath
from typing import Any

import numpy as np
import polars as pl

__all__ = ["NonFiniteError", "dumps", "jsonable", "undefined_as_null"]


class NonFiniteError(ValueError):
    """A NaN or infinite float met on the way to JSON, with where it was."""


def jsonable(obj: Any, where: str = "$") -> Any:
    """``obj`` as nested dicts, lists, strings, finite numbers, booleans and None;
    :class:`NonFiniteError` for NaN or an infinity, :class:`TypeError` for a type with no
    JSON form, both naming the path ``where`` the value was found.

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Row:
    ...     name: str
    ...     mean: float | None
    ...     values: tuple[float, ...]
    >>> jsonable(Row("Kswapd velocity", None, (1.0, 2.5)))
    {'name': 'Kswapd velocity', 'mean': None, 'values': [1.0, 2.5]}
    >>> jsonable(Row("Kswapd velocity", 1.0, (1.0, float("inf"))))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    analysis.report.json_output.NonFiniteError: $.values[1] is inf: JSON has no NaN...
    """
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise NonFiniteError(
                f"{where} is {obj}: JSON has no NaN or infinity; a missing value must be None"
            )
        return obj
    if obj is None or isinstance(obj, str | int | bool):
        return obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = dataclasses.fields(obj)
        return {f.name: jsonable(getattr(obj, f.name), f"{where}.{f.name}") for f in fields}
    if isinstance(obj, pl.DataFrame):
        rows = obj.iter_rows(named=True)
        return [jsonable(row, f"{where}[{i}]") for i, row in enumerate(rows)]
    if isinstance(obj, dict):
        return {str(k): jsonable(v, f"{where}.{k}") for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, PurePath):
        return str(obj)
    raise TypeError(f"{where}: no JSON form for {type(obj).__name__}: {obj!r}")


def undefined_as_null(value: float | None) -> float | None:
    """``value``, or None where a result defines NaN or an infinity as "not defined" (a
    CI bound that could not be computed, 0/0 efficiency): the serializer that knows this
    says so by calling it; anything else non-finite is refused by :func:`jsonable`.

    >>> undefined_as_null(float("-inf")), undefined_as_null(0.5), undefined_as_null(None)
    (None, 0.5, None)
    """
    return value if value is None or math.isfinite(value) else None


def dumps(obj: Any, indent: int | None = 2) -> str:
    """Strict JSON text of ``obj`` (see :func:`jsonable`), indented by ``indent``."""
    return json.dumps(jsonable(obj), indent=indent, allow_nan=False)
