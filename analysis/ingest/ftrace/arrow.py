"""Arrow buffers → Polars series and frames without per-value Python: string views,
nullable ints, whole tables.

Polars keeps strings as Arrow ``string_view``\\ s, so spans of the raw block written as
views (compiled: ``_parse.c``) are adopted as they are.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from analysis.ingest.ftrace import _parse

__all__ = ["frame", "ints", "string_views", "strings", "view_series"]


def string_views(buf, s: np.ndarray, e: np.ndarray, valid: np.ndarray):
    """Arrow ``string_view`` buffers (views uint32[4n], data) of the spans ``buf[s[i]:e[i]]``,
    empty where not ``valid``. Polars keeps strings as views, so it adopts these as they are.
    """
    views, data = _parse.string_views(
        buf,
        np.ascontiguousarray(s, np.int64),
        np.ascontiguousarray(e, np.int64),
        np.ascontiguousarray(valid, np.bool_),
    )
    return np.frombuffer(views, np.uint32), np.frombuffer(data, np.uint8)


class _CArray:
    """A PyArrow array seen only through the Arrow PyCapsule interface.

    ``pl.Series`` of a PyArrow array imports ``pyarrow.compute`` (0.03-0.04 s of CPU time
    in every ingest) to merge chunked dictionaries these arrays never are; through the
    capsule Polars adopts the same buffers directly.
    """

    def __init__(self, array: pa.Array) -> None:
        self.array = array

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple:
        return self.array.__arrow_c_array__(requested_schema)


class _CStream:
    """A PyArrow table seen only through the Arrow PyCapsule interface (as :class:`_CArray`)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.table.__arrow_c_stream__(requested_schema)


def _series(array: pa.Array) -> pl.Series:
    """Polars series over the buffers of ``array`` (no copy)."""
    return pl.Series(_CArray(array))


def frame(table: pa.Table) -> pl.DataFrame:
    """Polars frame over the buffers of ``table`` (no copy)."""
    return pl.DataFrame(_CStream(table))


def view_series(views: np.ndarray, valid: np.ndarray | None, data: pa.Buffer) -> pl.Series:
    """Polars String series over Arrow string_view buffers; null where not ``valid``."""
    mask = None
    if valid is not None and not valid.all():
        mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    buffers = [mask, pa.py_buffer(views), data]
    return _series(pa.Array.from_buffers(pa.string_view(), len(views) // 4, buffers))


def strings(buf: np.ndarray, s: np.ndarray, e: np.ndarray, valid: np.ndarray) -> pl.Series:
    """Polars String series of the byte spans ``buf[s:e]``; null where not ``valid``."""
    views, data = string_views(buf, s, e, valid)
    return view_series(views, valid, pa.py_buffer(data))


_ARROW_INTS = {pl.Int64: (np.int64, pa.int64()), pl.Int32: (np.int32, pa.int32())}


def ints(values: np.ndarray, valid: np.ndarray, dtype: pl.DataType = pl.Int64) -> pl.Series:
    """Polars integer series with nulls where not ``valid`` (Arrow buffers, no per-value work)."""
    np_type, arrow_type = _ARROW_INTS[dtype]
    data = np.ascontiguousarray(values, np_type)
    mask = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return _series(pa.Array.from_buffers(arrow_type, len(data), [mask, pa.py_buffer(data)]))
