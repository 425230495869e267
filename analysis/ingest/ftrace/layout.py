"""Line layouts of trace text: split a block of bytes into lines and classify each one.

Compiled with numba because per-line Python (or capture-group regexes) cannot keep up
with hundreds of MB of trace. One pass over the bytes gives, per line, its kind
(event, header, blank, lost-events marker, stack-trace line, unparsed with a reason)
and for events the spans of comm, irq flags, event name and payload plus pid, tgid,
cpu and the timestamp. Layouts accepted (``docs/trace-formats.md`` "Line layouts"):

- ftrace ``trace``/``trace_pipe``: ``<comm>-<pid> [(<tgid>)] [<cpu>] [<flags>] <ts>: <event>: ...``
  comm split from pid at the last ``-`` before the pid digits (comm may hold spaces, ``-``,
  ``/``, ``:``, be ``<...>`` or empty); tgid ``(%7d)``/``(-------)``; 0, 4 or 5 flag chars.
- ``trace-cmd report``: same without flags; its preamble (``version = 6``, ``cpus=2``,
  ``CPU 1 is empty``) counts as header lines. A recording into a named buffer
  (``record -B NAME``), or several input files, prefixes each line with ``NAME: ``
  (right-aligned): kept as the line's ``instance``. ``report -l``:
  ``<comm>-<pid> <cpu><flags> <ts>: <event>: ...`` (comm cut to 8 characters), and its
  ``CPU:N [M EVENTS DROPPED]`` markers.
- ``perf script``: ``<comm> <tid> [<cpu>] <ts>: [<system>:]<event>: ...`` (also ``pid/tid``).
- mail-reformatted ``<ts> <comm>-<pid> <event>: ...`` (no cpu column).
- ``> `` quote prefixes (any depth) are removed first; a trailing ``\\r`` is dropped.
- Timestamps ``secs.frac`` become ns; a bare integer (counter/TSC clock) is kept raw.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

__all__ = [
    "BLANK",
    "COMM_END",
    "COMM_START",
    "COUNTER_CLOCK",
    "CPU",
    "EVENT",
    "FNV_OFFSET",
    "FNV_PRIME",
    "HEADER",
    "INSTANCE_END",
    "IRQ_END",
    "IRQ_START",
    "KINDS",
    "LITERALS",
    "LOST",
    "NAME_END",
    "NAME_START",
    "PAYLOAD_START",
    "PID",
    "REASON",
    "REASONS",
    "SCAN_COLUMNS",
    "STACK",
    "TGID",
    "TS",
    "UNPARSED",
    "count_lines",
    "find_lines",
    "fnv1a",
    "isdigit",
    "scan_lines",
]

EVENT, HEADER, BLANK, LOST, STACK, UNPARSED = 0, 1, 2, 3, 4, 5
KINDS = ("event", "header", "blank", "lost", "stack", "unparsed")
# Unparsed reasons, indexed by the code scan_lines stores.
REASONS = (
    "",
    "no trace line layout matched",
    "bad timestamp",
    "bad event name",
    "truncated final line",
    "field value not a number",  # set by the reader (columns.field_failures)
)
R_LAYOUT, R_TIMESTAMP, R_EVENT = 1, 2, 3

# Columns of the int64[n, SCAN_COLUMNS] array scan_lines fills, one row per line.
COMM_START, COMM_END = 0, 1  # comm span
PID, TGID, CPU = 2, 3, 4  # tgid and cpu -1 when the layout has none; cpu of a lost marker
TS = 5  # ns (or a raw counter clock); a lost marker's count (-1 unknown)
NAME_START, NAME_END = 6, 7  # event-name span
PAYLOAD_START = 8  # the payload ends at the line end
REASON = 9  # index into REASONS for unparsed lines
COUNTER_CLOCK = 10  # 1 when the timestamp is a bare counter
IRQ_START, IRQ_END = 11, 12  # irq-flags span (-1 none)
# The ":" ending a trace-cmd buffer/file name (0: none); the name is the word before it.
INSTANCE_END = 13
SCAN_COLUMNS = 14


def _load_numba_without_scipy_blas() -> None:
    """Load numba's array implementations now, telling them SciPy's BLAS is absent.

    On first use numba imports them, and they probe ``scipy.linalg.cython_blas`` (which
    imports ``scipy.linalg``: ~0.15 s of CPU time, a sixth of a small ``mmlab ingest``,
    benchmarks/ftrace.md, issue 23) only to choose how compiled ``np.convolve`` and
    ``np.correlate`` multiply: with BLAS or numba's own loop (the same sums, perhaps added in
    another order).
    No kernel here calls either; ``np.dot`` and ``np.linalg`` still load BLAS when a
    kernel using them is compiled. A no-op when numba's implementations or
    ``scipy.linalg`` are already loaded: nothing left to save.
    """
    blas = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    sys.modules[blas] = None  # type: ignore[assignment]  # import → ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules[blas]


_load_numba_without_scipy_blas()

FNV_OFFSET = np.uint64(14695981039346656037)
FNV_PRIME = np.uint64(1099511628211)


@njit(nogil=True, cache=True)
def count_lines(buf):
    """Number of lines in ``buf``: its newlines, plus one for an unterminated last line."""
    n = 0
    for i in range(buf.size):
        n += buf[i] == 10
    if buf.size > 0 and buf[buf.size - 1] != 10:
        n += 1
    return n


@njit(nogil=True, cache=True)
def find_lines(buf):
    """Start/end byte offsets of every line in ``buf`` (end excludes ``\\n`` and ``\\r``)."""
    n = count_lines(buf)
    starts = np.empty(n, np.int64)
    ends = np.empty(n, np.int64)
    ones = np.uint64(0x0101010101010101)
    high = np.uint64(0x8080808080808080)
    newlines = np.uint64(0x0A0A0A0A0A0A0A0A)
    k = 0
    s = 0
    size = buf.size
    words = size // 8
    packed = buf[: words * 8].view(np.uint64)
    for w in range(words):
        # Lines average ~190 bytes: test 8 bytes at once for a newline (the classic
        # "has a zero byte" test on word ^ 0x0a..0a), single bytes only where one is.
        x = packed[w] ^ newlines
        if ((x - ones) & ~x & high) == 0:
            continue
        for i in range(w * 8, w * 8 + 8):
            if buf[i] == 10:
                starts[k] = s
                ends[k] = i - 1 if i > s and buf[i - 1] == 13 else i
                k += 1
                s = i + 1
    for i in range(words * 8, size):
        if buf[i] == 10:
            starts[k] = s
            ends[k] = i - 1 if i > s and buf[i - 1] == 13 else i
            k += 1
            s = i + 1
    if k < n:
        starts[k] = s
        ends[k] = size - 1 if buf[size - 1] == 13 else size
    return starts, ends


@njit(nogil=True, cache=True)
def fnv1a(buf, s, e):
    """64-bit FNV-1a hash of ``buf[s:e]`` (names are grouped by hash, decoded once)."""
    h = FNV_OFFSET
    for i in range(s, e):
        h = (h ^ np.uint64(buf[i])) * FNV_PRIME
    return h


@njit(inline="always")
def isdigit(c):
    return 48 <= c <= 57


@njit(inline="always")
def _isname(c):
    # Event names: [A-Za-z0-9_]
    return isdigit(c) or 65 <= c <= 90 or 97 <= c <= 122 or c == 95


@njit(nogil=True, cache=True)
def _starts(buf, s, e, lit):
    if e - s < lit.size:
        return False
    for i in range(lit.size):  # noqa: SIM110 (numba: no generator expressions)
        if buf[s + i] != lit[i]:
            return False
    return True


@njit(nogil=True, cache=True)
def _parse_ts(buf, s, e):
    """Parse ``secs[.frac]`` in buf[s:e]; return (ns or raw, is_counter, ok)."""
    secs = 0
    i = s
    while i < e and isdigit(buf[i]):
        if i - s >= 18:
            return 0, False, False
        secs = secs * 10 + (buf[i] - 48)
        i += 1
    if i == s:
        return 0, False, False
    if i == e:
        return secs, True, True
    if buf[i] != 46:
        return 0, False, False
    i += 1
    frac = 0
    nd = 0
    while i < e and isdigit(buf[i]):
        if nd < 9:
            frac = frac * 10 + (buf[i] - 48)
            nd += 1
        i += 1
    if i != e or nd == 0 or secs > 9_000_000_000:
        return 0, False, False
    while nd < 9:
        frac *= 10
        nd += 1
    return secs * 1_000_000_000 + frac, False, True


@njit(nogil=True, cache=True)
def _parse_event(buf, i, e, out, k):
    """From buf[i:] parse ``[system:]event: payload``; fill event/payload spans; return kind."""
    while i < e and buf[i] == 32:
        i += 1
    if i < e and buf[i] == 60:  # "<stack trace>", "<user stack trace>"
        return STACK
    ns = i
    while i < e and (_isname(buf[i]) or buf[i] == 58):
        if buf[i] == 58 and (i + 1 == e or buf[i + 1] == 32):
            break
        if buf[i] == 58:
            ns = i + 1  # system prefix ("vmscan:") dropped
        i += 1
    if i == e or i == ns or buf[i] != 58:  # noqa: SIM109 (numba-friendly)
        out[k, REASON] = R_EVENT
        return UNPARSED
    out[k, NAME_START] = ns
    out[k, NAME_END] = i
    i += 1
    while i < e and buf[i] == 32:
        i += 1
    out[k, PAYLOAD_START] = i
    return EVENT


@njit(nogil=True, cache=True)
def _parse_int_back(buf, lo, j):
    """Digits ending at buf[j] (inclusive), scanning left; return (value, first index)."""
    v = 0
    mul = 1
    while j >= lo and isdigit(buf[j]):
        if mul > 1_000_000_000:
            return -1, j
        v += (buf[j] - 48) * mul
        mul *= 10
        j -= 1
    return v, j + 1


@njit(nogil=True, cache=True)
def _try_bracket(buf, s, e, b, out, k):
    """Parse a line whose cpu column ``[N]`` opens at ``b``; return kind or -1 to try the next."""
    # cpu digits and "] "
    j = b + 1
    cpu = 0
    while j < e and isdigit(buf[j]):
        cpu = cpu * 10 + (buf[j] - 48)
        j += 1
    if j == b + 1 or j >= e or buf[j] != 93 or j - b > 7:
        return -1
    after = j + 1
    # Backwards: optional (tgid), pid digits, then '-' (ftrace) or ' ' (perf).
    j = b - 1
    while j >= s and buf[j] == 32:
        j -= 1
    tgid = -1
    if j >= s and buf[j] == 41:
        p = j - 1
        while p >= s and buf[p] != 40:
            if not (isdigit(buf[p]) or buf[p] == 32 or buf[p] == 45):
                return -1
            p -= 1
        if p < s:
            return -1
        t = j - 1
        if isdigit(buf[t]):
            tgid, _ = _parse_int_back(buf, p + 1, t)
        j = p - 1
        while j >= s and buf[j] == 32:
            j -= 1
    if j < s or not isdigit(buf[j]):
        return -1
    pid, first = _parse_int_back(buf, s, j)
    if pid < 0:
        return -1
    j = first - 1
    if j >= s and buf[j] == 47:  # perf "pid/tid": the pid is the thread group id
        tgid, first = _parse_int_back(buf, s, j - 1)
        j = first - 1
    if j < s:
        return -1
    if buf[j] == 45:
        ce = j
    elif buf[j] == 32:
        ce = j
        while ce > s and buf[ce - 1] == 32:
            ce -= 1
    else:
        return -1
    out[k, COMM_START] = s
    out[k, COMM_END] = ce
    out[k, PID] = pid
    out[k, TGID] = tgid
    out[k, CPU] = cpu
    # Forward: [flags] timestamp':'
    i = after
    while i < e and buf[i] == 32:
        i += 1
    t0 = i
    while i < e and buf[i] != 32:
        i += 1
    if i > t0 and buf[i - 1] == 58:
        out[k, IRQ_START] = -1
        out[k, IRQ_END] = -1
        te = i - 1
    else:
        out[k, IRQ_START] = t0
        out[k, IRQ_END] = i
        while i < e and buf[i] == 32:
            i += 1
        t0 = i
        while i < e and buf[i] != 32:
            i += 1
        if i == t0 or buf[i - 1] != 58:
            out[k, REASON] = R_TIMESTAMP
            return -1
        te = i - 1
    ts, counter, ok = _parse_ts(buf, t0, te)
    if not ok:
        # A later "[N]" may still be the real cpu column (comm holding brackets).
        out[k, REASON] = R_TIMESTAMP
        return -1
    out[k, TS] = ts
    out[k, COUNTER_CLOCK] = 1 if counter else 0
    return _parse_event(buf, i, e, out, k)


@njit(nogil=True, cache=True)
def _try_ts_first(buf, s, e, out, k):
    """Mail-reformatted ``<ts> <comm>-<pid> <event>: payload``; return kind or -1."""
    i = s
    while i < e and buf[i] != 32:
        i += 1
    te = i - 1 if i > s and buf[i - 1] == 58 else i
    ts, counter, ok = _parse_ts(buf, s, te)
    if not ok or counter:
        return -1
    # Event token: the word before the first ": " (or ':' at line end).
    c = i
    while c < e and not (buf[c] == 58 and (c + 1 == e or buf[c + 1] == 32)):
        c += 1
    if c == e:
        return -1
    w = c - 1
    while w > i and buf[w] != 32:
        w -= 1
    if w <= i:
        return -1
    j = w - 1
    while j > i and buf[j] == 32:
        j -= 1
    pid, first = _parse_int_back(buf, i, j)
    if first > j or pid < 0 or buf[first - 1] != 45:
        return -1
    cs = i
    while cs < first - 1 and buf[cs] == 32:
        cs += 1
    out[k, COMM_START] = cs
    out[k, COMM_END] = first - 1
    out[k, PID] = pid
    out[k, TGID] = -1
    out[k, CPU] = -1
    out[k, TS] = ts
    out[k, COUNTER_CLOCK] = 0
    out[k, IRQ_START] = -1
    out[k, IRQ_END] = -1
    return _parse_event(buf, w + 1, e, out, k)


@njit(nogil=True, cache=True)
def _try_latency(buf, s, e, out, k):
    """``trace-cmd report -l``: ``<comm>-<pid> <cpu><flags> <ts>: <event>: payload`` (the
    cpu digits run into the 4-5 latency flags, which never start with a digit); return
    kind or -1."""
    i = s
    ps = -1
    pe = -1
    while i < e:
        while i < e and buf[i] == 32:
            i += 1
        ws = i
        while i < e and buf[i] != 32:
            i += 1
        if i - ws >= 2 and buf[i - 1] == 58 and ps > s and isdigit(buf[ws]):
            ts, counter, ok = _parse_ts(buf, ws, i - 1)
            if not ok:
                return -1
            f = ps
            cpu = 0
            while f < pe and isdigit(buf[f]):
                cpu = cpu * 10 + (buf[f] - 48)
                f += 1
            if f == ps or f - ps > 6 or not 4 <= pe - f <= 5:
                return -1
            j = ps - 1
            while j > s and buf[j] == 32:
                j -= 1
            pid, first = _parse_int_back(buf, s, j)
            if first > j or pid < 0 or first - 1 < s or buf[first - 1] != 45:
                return -1
            out[k, COMM_START] = s
            out[k, COMM_END] = first - 1
            out[k, PID] = pid
            out[k, TGID] = -1
            out[k, CPU] = cpu
            out[k, IRQ_START] = f
            out[k, IRQ_END] = pe
            out[k, TS] = ts
            out[k, COUNTER_CLOCK] = 1 if counter else 0
            return _parse_event(buf, i, e, out, k)
        ps = ws
        pe = i
    return -1


@njit(nogil=True, cache=True)
def _instance(buf, s, e):
    """Index of the ``:`` ending a trace-cmd ``NAME: `` line prefix at ``s``, or -1: one
    word ending in ``:`` then a space, not starting with a digit (a mail line's
    ``secs.frac:``)."""
    if isdigit(buf[s]):
        return -1
    i = s
    while i < e and buf[i] != 32:
        i += 1
    if i - s < 2 or i == e or buf[i - 1] != 58:
        return -1
    return i - 1


@njit(inline="always")
def _classify(buf, s, e, out, k, lits):
    """Kind of the line ``buf[s:e]`` (blank and quoting already removed); fills ``out[k]``."""
    c = buf[s]
    if c == 35:
        return HEADER
    if c == 61 and s + 1 < e and buf[s + 1] == 62:  # " => func" stack frame
        return STACK
    if c == 60 and _starts(buf, s, e, lits[4]):  # "<stack trace>"
        return STACK
    if c == 67 and _starts(buf, s, e, lits[5]) and _lost(buf, s, e, out, k, lits[6]):
        return LOST
    if _preamble(buf, s, e, lits):
        return HEADER
    res = -1
    out[k, REASON] = R_LAYOUT
    b = s
    while res < 0:
        while b < e and buf[b] != 91:
            b += 1
        if b >= e:
            break
        res = _try_bracket(buf, s, e, b, out, k)
        b += 1
    if res < 0:
        res = _try_latency(buf, s, e, out, k)
    if res < 0 and isdigit(c):
        res = _try_ts_first(buf, s, e, out, k)
    return UNPARSED if res < 0 else res


@njit(nogil=True, cache=True)
def _lost(buf, s, e, out, k, dropped):
    """``CPU:N [LOST M EVENTS]`` / ``CPU:N [LOST EVENTS]`` (the kernel) and
    ``CPU:N [M EVENTS DROPPED]`` / ``CPU:N [EVENTS DROPPED]`` (trace-cmd report), whose
    words are ``dropped``; the count is -1 when not given."""
    i = s + 4
    cpu = 0
    while i < e and isdigit(buf[i]):
        cpu = cpu * 10 + (buf[i] - 48)
        i += 1
    if i == s + 4 or i + 7 > e or buf[i] != 32 or buf[i + 1] != 91:
        return False
    i += 2
    lost = buf[i] == 76 and buf[i + 1] == 79 and buf[i + 2] == 83 and buf[i + 3] == 84
    if lost:
        i += 5  # "LOST "
    count = -1
    if i < e and isdigit(buf[i]):
        count = 0
        while i < e and isdigit(buf[i]):
            count = count * 10 + (buf[i] - 48)
            i += 1
        if not lost:
            i += 1
    if not lost and not (_starts(buf, i, e, dropped) and i + dropped.size == e):
        return False
    out[k, CPU] = cpu
    out[k, TS] = count
    return True


@njit(nogil=True, cache=True)
def _preamble(buf, s, e, lits):
    """trace-cmd report preamble lines (``version = 6``, ``cpus=2``, ``CPU 1 is empty``)."""
    if _starts(buf, s, e, lits[0]) or _starts(buf, s, e, lits[1]):
        return True
    if not _starts(buf, s, e, lits[2]):
        return False
    i = s + 3
    while i < e and (buf[i] == 32 or isdigit(buf[i])):
        i += 1
    return _starts(buf, i, e, lits[3])


@njit(nogil=True, cache=True)
def scan_lines(buf, starts, ends, lits):
    """Classify every line; return (kind int8[n], fields int64[n, SCAN_COLUMNS], event hash
    uint64[n]). ``fields`` columns are named by the constants above (``COMM_START`` ...
    ``INSTANCE_END``). ``lits`` holds the byte literals the classifier needs (see ``LITERALS``).
    """
    n = starts.size
    kind = np.empty(n, np.int8)
    out = np.zeros((n, SCAN_COLUMNS), np.int64)
    hashes = np.zeros(n, np.uint64)
    for k in range(n):
        s = starts[k]
        e = ends[k]
        while s < e and (buf[s] == 32 or buf[s] == 9):
            s += 1
        while s < e and buf[s] == 62:  # "> " mail quoting, any depth
            s += 1
            while s < e and (buf[s] == 32 or buf[s] == 9):
                s += 1
        while e > s and (buf[e - 1] == 32 or buf[e - 1] == 9):
            e -= 1
        if s == e:
            kind[k] = BLANK
            continue
        res = _classify(buf, s, e, out, k, lits)
        if res == EVENT:
            # A trace-cmd buffer name read as the start of comm ("NAME:   dd-1 [001] ..."):
            # split off when what follows "NAME: " is trace-cmd's whole comm column, 16
            # characters (8 with -l, whose flags follow the cpu digits). A kernel comm
            # (15 characters at most, in its own 16-wide column) holding ": " is never split.
            colon = _instance(buf, s, out[k, COMM_END])
            lat = out[k, IRQ_START] > 0 and isdigit(buf[out[k, IRQ_START] - 1])
            if colon > 0 and out[k, COMM_END] - colon - 2 != (8 if lat else 16):
                colon = -1
            if colon > 0:
                out[k, INSTANCE_END] = colon
                c = colon + 1
                while buf[c] == 32:
                    c += 1
                out[k, COMM_START] = c
            elif k > 0 and kind[k - 1] == LOST:
                # trace-cmd prints a drop marker and the next event as one prefixed record.
                out[k, INSTANCE_END] = out[k - 1, INSTANCE_END]
        elif res == UNPARSED:
            # A prefixed line no layout reads whole (a drop marker): try without the name.
            colon = _instance(buf, s, e)
            reason = out[k, REASON]
            if colon > 0:
                c = colon + 1
                while c < e and buf[c] == 32:
                    c += 1
                res = _classify(buf, c, e, out, k, lits) if c < e else UNPARSED
            if res == UNPARSED:
                out[k, REASON] = reason
            else:
                out[k, INSTANCE_END] = colon
        kind[k] = res
        if res == EVENT:
            hashes[k] = fnv1a(buf, out[k, NAME_START], out[k, NAME_END])
            ends[k] = e
    return kind, out, hashes


LITERALS = tuple(
    np.frombuffer(lit, np.uint8).copy()
    for lit in (
        b"version = ",
        b"cpus=",
        b"CPU",
        b"is empty",
        b"<stack trace>",
        b"CPU:",
        b"EVENTS DROPPED]",
    )
)
