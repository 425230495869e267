"""glibc malloc settings for the ingest's big per-block arrays (no-ops without glibc).

Kept apart from :mod:`.reader` so that :func:`one_arena` can run before anything that
starts threads (Polars and PyArrow do on import) is loaded.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

__all__ = ["give_back_freed_memory", "one_arena", "reuse_freed_memory"]

# glibc mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_HEAP_KEEP_BYTES = 256 << 20


def _libc(function: str):
    """glibc's ``function``, or None without glibc."""
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), function)
    except (OSError, AttributeError):
        return None


def _mallopt(param: int, value: int) -> None:
    if (mallopt := _libc("mallopt")) is not None:
        mallopt(param, value)


@functools.cache
def reuse_freed_memory() -> None:
    """Have glibc malloc recycle freed big arrays instead of mapping fresh pages for each.

    Every block allocates tens of MB of column buffers; by default glibc serves each
    from its own mmap and unmaps it on free, so every page is faulted in and zeroed again.
    With a higher mmap threshold they come from the heap and are reused; at most
    ``_HEAP_KEEP_BYTES`` of free heap is kept. Process-wide and harmless elsewhere. With
    :func:`one_arena`, the 630 MB capture of benchmarks/ftrace.md takes 85,000 page
    faults instead of 155,000 (the numba reader's bigger arrays made that a quarter of its
    CPU time; for the C reader the CPU time is the same within the noise of 3 runs).
    """
    _mallopt(_M_MMAP_THRESHOLD, _HEAP_KEEP_BYTES)
    _mallopt(_M_TRIM_THRESHOLD, _HEAP_KEEP_BYTES)


def one_arena() -> None:
    """Serve every thread's allocations from glibc's main arena.

    By default each thread that allocates gets an arena of its own (15 in one ingest:
    the two parse workers and the Polars and PyArrow pools), made of 64 MB heaps that a
    block's 10-20 MB arrays fragment and that glibc unmaps as they empty, so the workers'
    pages are faulted in again block after block. With one arena they reuse the heap that
    :func:`reuse_freed_memory` keeps: half the page faults and 0.2-0.4 s less system time
    for the 671 MB capture (benchmarks/ftrace.md). Only threads that have not allocated
    yet are affected: ``mmlab ingest`` calls this before importing Polars.
    """
    _mallopt(_M_ARENA_MAX, 1)


def give_back_freed_memory() -> None:
    """Return the free heap :func:`reuse_freed_memory` keeps, and PyArrow's free pool
    memory, to the system once the blocks are parsed: what runs next in the process (the
    analysis of ``mmlab stalls``) then adds to what the ingest holds (~200 MB for the
    650 MB capture of benchmarks/stalls.md), not to the ingest's peak (~450 MB), which
    glibc would otherwise keep."""
    if (trim := _libc("malloc_trim")) is not None:
        trim(0)
    import pyarrow

    pyarrow.default_memory_pool().release_unused()
