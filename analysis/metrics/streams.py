"""Work on a trace's blocks spread over threads: the next block read while this one is
analysed (:func:`ahead`), and the independent consumers of a block (the reclaim pairing,
the shrinker calls, what is read of every event) each on a thread of its own
(:class:`Ordered`), so an analysis uses two cores rather than one.

Polars, PyArrow and NumPy release the GIL while they compute, which is where the
analysis spends its time. Each consumer keeps its own state and sees the blocks in file
order, one at a time, so the results are those of running everything in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["Ordered", "ahead"]

T = TypeVar("T")


class Ordered:
    """Calls run one at a time, in the order submitted, on one thread of their own: a
    consumer whose state carries from block to block. Leaving the ``with`` block waits for
    every call and raises the first call's error (after an error of the caller's own, it
    cancels the calls not started)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1)
        self._futures: list[Future] = []

    def submit(self, fn: Callable[..., object], *args: object) -> None:
        # Finished calls are dropped as they go: only their errors matter.
        self._futures = [f for f in self._futures if not f.done() or f.exception()]
        self._futures.append(self._pool.submit(fn, *args))

    def __enter__(self) -> Ordered:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self._pool.shutdown(wait=True, cancel_futures=kind is not None)
        if kind is None:
            for future in self._futures:
                future.result()


def ahead(items: Iterable[T]) -> Iterator[T]:
    """``items`` in order, the next one produced on another thread while the caller works
    on this one (at most one waits: memory is one more item)."""
    iterator = iter(items)
    done = object()

    def step() -> object:
        return next(iterator, done)

    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(step)
        while (item := pending.result()) is not done:
            pending = pool.submit(step)
            yield item  # type: ignore[misc]
