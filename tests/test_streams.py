"""analysis.metrics.streams: consumers on threads see their calls in order, one at a time,
and their errors reach the caller; the read-ahead yields every item in order."""

from __future__ import annotations

import threading
import time

import pytest

from analysis.metrics import streams


def test_ordered_runs_calls_one_at_a_time_in_submission_order():
    seen: list[int] = []
    running = threading.Semaphore(1)

    def call(i: int) -> None:
        assert running.acquire(blocking=False), "two calls ran at once"
        time.sleep(0.001 * (i % 3))  # later calls finishing first would reorder `seen`
        seen.append(i)
        running.release()

    with streams.Ordered() as stream:
        for i in range(40):
            stream.submit(call, i)
    assert seen == list(range(40))


def test_ordered_raises_the_first_error_of_its_calls():
    def call(i: int) -> None:
        if i in (3, 5):
            raise ValueError(f"call {i}")

    with pytest.raises(ValueError, match="call 3"), streams.Ordered() as stream:
        for i in range(8):
            stream.submit(call, i)


def test_an_error_of_the_caller_cancels_calls_not_started():
    started: list[int] = []
    gate = threading.Event()

    def call(i: int) -> None:
        gate.wait(5)
        started.append(i)

    # The first call waits until well after the caller's error has cancelled the rest.
    threading.Timer(1.0, gate.set).start()
    with pytest.raises(KeyError), streams.Ordered() as stream:
        for i in range(5):
            stream.submit(call, i)
        raise KeyError("caller")
    assert started == [0]


def test_ahead_yields_every_item_in_order_produced_on_another_thread():
    caller = threading.get_ident()
    producers: set[int] = set()

    def items():
        for i in range(10):
            producers.add(threading.get_ident())
            yield i

    assert list(streams.ahead(items())) == list(range(10))
    assert producers and caller not in producers


def test_ahead_passes_on_the_producer_error():
    def items():
        yield 1
        raise OSError("disk")

    got = []
    with pytest.raises(OSError, match="disk"):
        for item in streams.ahead(items()):
            got.append(item)
    assert got == [1]
