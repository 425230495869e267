"""Compiled arithmetic of ``do_shrink_slab()`` (mm/vmscan.c, mm/shrinker.c since 6.7).

One call is :func:`shrink_call`; :func:`replay` runs a trace's calls in trace order
against per-shrinker ``nr_deferred[nid]`` counters. Kept apart from
:mod:`analysis.models.shrinker` so that importing the model (``mmlab --help``) does not
start numba. All arithmetic is int64 with the kernel's truncating ``/`` and ``>>``
(``//`` here: the operands are non-negative except in G1's negative-count fix-up, where
the divisor is 1).
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
from numba import njit

__all__ = ["replay", "scan_loop", "shrink_call", "targets"]


def _import_without(module: str, hidden: str, loaded: str) -> None:
    """Import ``module`` with ``hidden`` made unimportable (its ImportError path), unless
    ``module`` or ``loaded`` is already imported: then there is nothing left to save."""
    if module in sys.modules or loaded in sys.modules:
        return
    sys.modules[hidden] = None  # type: ignore[assignment]  # import → ImportError
    try:
        importlib.import_module(module)
    finally:
        del sys.modules[hidden]


def _load_numba_lean() -> None:
    """Load two parts of numba now, each telling it an optional library is absent.

    On first use numba's array implementations probe ``scipy.linalg.cython_blas`` (which
    imports ``scipy.linalg``: ~0.15 s of CPU time) only to choose how compiled
    ``np.convolve`` and ``np.correlate`` multiply: with BLAS or numba's own loop (the same
    sums, perhaps added in another order). No kernel here calls either; ``np.dot`` and
    ``np.linalg`` still load BLAS when a kernel using them is compiled.

    On the first compile or cache load numba's typing imports ``cffi`` and its C parser
    (~0.03 s of CPU time) only to type CFFI functions passed to a kernel; none is.
    """
    _import_without("numba.np.arraymath", "scipy.linalg.cython_blas", "scipy.linalg")
    _import_without("numba.core.typing.cffi_utils", "cffi", "cffi")


_load_numba_lean()

# Generation codes, in the order of analysis.models.shrinker.GENERATIONS.
G1, G2, G3 = 0, 1, 2
TAKE, ADD = 0, 1


@njit(cache=True, nogil=True)
def scan_loop(total_scan: int, freeable: int, batch: int, blocked: bool) -> int:
    """Objects the batch loop scans: ``while total_scan >= batch or total_scan >= freeable``
    hands ``min(batch, total_scan)`` to ``scan_objects()``. A blocked caller (filesystem
    shrinker under GFP_NOFS) gets SHRINK_STOP from its first ``scan_objects()``: 0."""
    if blocked or (total_scan < batch and total_scan < freeable):
        return 0
    full = total_scan // batch
    rest = total_scan - full * batch
    # After the full batches the loop goes on once more only for a tail >= freeable.
    return full * batch + (rest if rest >= freeable and rest > 0 else 0)


@njit(cache=True, nogil=True)
def shrink_call(
    generation: int,
    literal: bool,
    counter: int,
    takes: bool,
    freeable: int,
    delta: int,
    divisor: int,
    batch: int,
    blocked: bool,
) -> tuple[bool, int, int, int, int]:
    """One ``do_shrink_slab()`` call: (ran, nr taken, total_scan, scanned, next_deferred).

    ``counter`` is ``nr_deferred[nid]`` when the call reads it; ``takes`` says whether it
    may (``xchg`` with 0): every context in G1/G3, kswapd only in G2 or under the
    "deferred work only in kswapd" switch. ``divisor`` divides the taken count before it
    joins the target (G1 1, G2 ``priority``, G3 ``2^priority``). ``literal`` (G2 only)
    reproduces the patch's ``next_deferred = nr - scanned``; otherwise the unscanned
    ``nr + delta - scanned`` is deferred. ``ran`` is False when the kernel returns early
    (``freeable == 0``; in G2 also ``delta == 0``): nothing is taken or deferred.
    """
    if freeable <= 0 or (generation == G2 and delta <= 0):
        return False, 0, 0, 0, 0
    nr = counter if takes else 0
    twice = 2 * freeable
    if generation == G1:
        total_scan = nr // divisor + delta
        next_deferred = nr + delta
        if total_scan < 0:  # the kernel's "negative objects to delete" fix-up
            total_scan = freeable
            next_deferred = nr
        if delta < freeable // 4:  # windup clamp
            total_scan = min(total_scan, freeable // 2)
        total_scan = min(total_scan, twice)
        scanned = scan_loop(total_scan, freeable, batch, blocked)
        return True, nr, total_scan, scanned, max(next_deferred - scanned, 0)
    total_scan = min(nr // divisor + delta, twice)
    scanned = scan_loop(total_scan, freeable, batch, blocked)
    if generation == G2:
        if nr != 0:
            left = nr - scanned if literal else nr + delta - scanned
        else:
            left = total_scan - scanned
        return True, nr, total_scan, scanned, max(left, 0)
    return True, nr, total_scan, scanned, min(max(nr + delta - scanned, 0), twice)


@njit(cache=True, nogil=True)
def targets(
    generation: int,
    nr: np.ndarray,
    freeable: np.ndarray,
    delta: np.ndarray,
    priority: np.ndarray,
    divisors: np.ndarray,
) -> np.ndarray:
    """``total_scan`` of each call given the ``nr`` it took (the trace's own check)."""
    out = np.empty(nr.size, dtype=np.int64)
    # The target is fixed before the scan loop, so the batch size (1 here) cannot change it.
    for i in range(nr.size):
        out[i] = shrink_call(
            generation, True, nr[i], True, freeable[i], delta[i], divisors[priority[i]], 1, False
        )[2]
    return out


@njit(cache=True, nogil=True)
def replay(
    generation: int,
    literal: bool,
    event_kind: np.ndarray,
    event_call: np.ndarray,
    key: np.ndarray,
    initial: np.ndarray,
    takes: np.ndarray,
    freeable: np.ndarray,
    delta: np.ndarray,
    priority: np.ndarray,
    divisors: np.ndarray,
    batch: np.ndarray,
    blocked: np.ndarray,
    freed_ratio: float,
    observed_scanned: np.ndarray,
):
    """Run the calls' take (start) and hand-back (end) events in trace order.

    ``key[i]`` indexes the counter of call ``i`` (shrinker instance and node), ``initial``
    the counters' values before the first event. Returns per call: ran, nr, total_scan,
    scanned, next_deferred, the counter after its hand-back (``new scan count``); and per
    event the sum of all counters after it (the deferred backlog).

    ``freed_ratio`` > 0 feeds the replay's own freeing back (depletion): each instance
    keeps the objects the replay freed beyond what the traced call did (its scanned
    objects beyond ``observed_scanned`` x ``freed_ratio``, floored at 0), and later calls
    of it count that many fewer (``freeable``, floored at 0, with ``delta`` scaled alike).
    Under the capturing rule the replay scans what the trace scanned, so nothing changes.
    Nothing grows the cache back: an upper bound of the depletion.
    """
    n = freeable.size
    counter = initial.copy()
    ran = np.zeros(n, dtype=np.bool_)
    nr = np.zeros(n, dtype=np.int64)
    total_scan = np.zeros(n, dtype=np.int64)
    scanned = np.zeros(n, dtype=np.int64)
    next_deferred = np.zeros(n, dtype=np.int64)
    new_count = np.zeros(n, dtype=np.int64)
    backlog = np.empty(event_kind.size, dtype=np.int64)
    total = counter.sum()
    extra = np.zeros(counter.size, dtype=np.float64)
    for j in range(event_kind.size):
        i = event_call[j]
        k = key[i]
        if event_kind[j] == TAKE:
            have, share = freeable[i], delta[i]
            if extra[k] > 0 and have > 0:
                have = max(have - int(extra[k]), 0)
                share = share * have // freeable[i]
            ran[i], nr[i], total_scan[i], scanned[i], next_deferred[i] = shrink_call(
                generation,
                literal,
                counter[k],
                takes[i],
                have,
                share,
                divisors[priority[i]],
                batch[i],
                blocked[i],
            )
            if ran[i] and takes[i]:
                total -= counter[k]
                counter[k] = 0
        else:
            if freed_ratio > 0:
                extra[k] = max(extra[k] + (scanned[i] - observed_scanned[i]) * freed_ratio, 0.0)
            if ran[i] and next_deferred[i] > 0:
                counter[k] += next_deferred[i]
                total += next_deferred[i]
            new_count[i] = counter[k]
        backlog[j] = total
    return ran, nr, total_scan, scanned, next_deferred, new_count, backlog
