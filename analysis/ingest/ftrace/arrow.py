"""Arrow buffers → Polars series without per-value Python: string views, nullable ints.

Polars keeps strings as Arrow ``string_view``\\ s, so spans of the raw block written as
views (:func:`put_view`, compiled, inlined into the emitters) are adopted as they are.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
from numba import njit

__all__ = ["VIEW_INLINE", "ints", "put_view", "string_views", "strings", "view_series"]

VIEW_INLINE = 12  # Arrow string_view: strings up to 12 bytes live inside their 16-byte view


@njit(inline="always")
def put_view(buf, s, e, views, inline, g, data, p):
    """Write the Arrow string_view of ``buf[s:e]`` as view ``g`` (``views``: uint32[4n],
    ``inline`` its bytes): (length, 12 inline bytes) for a short string, else (length,
    4-byte prefix, buffer 0, offset ``p`` into ``data``), its bytes copied to ``data[p:]``.
    An empty or reversed span stays an empty string. Returns the next free ``p``.
    """
    size = e - s
    if size <= 0:
        return p
    views[4 * g] = size
    if size <= VIEW_INLINE:
        for j in range(size):
            inline[16 * g + 4 + j] = buf[s + j]
        return p
    for j in range(4):
        inline[16 * g + 4 + j] = buf[s + j]
    views[4 * g + 3] = p
    for j in range(size):
        data[p + j] = buf[s + j]
    return p + size


@njit(nogil=True, cache=True)
def string_views(buf, s, e, valid):
    """Arrow ``string_view`` buffers (views uint32[4n], data) of the spans ``buf[s[i]:e[i]]``,
    empty where not ``valid``. Polars keeps strings as views, so it adopts these as they are.
    """
    n = s.size
    total = 0
    for i in range(n):
        if valid[i] and e[i] - s[i] > VIEW_INLINE:
            total += e[i] - s[i]
    views = np.zeros(4 * n, np.uint32)
    inline = views.view(np.uint8)
    data = np.empty(total, np.uint8)
    p = 0
    for i in range(n):
        if valid[i]:
            p = put_view(buf, s[i], e[i], views, inline, i, data, p)
    return views, data


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


def _series(array: pa.Array) -> pl.Series:
    """Polars series over the buffers of ``array`` (no copy)."""
    return pl.Series(_CArray(array))


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
