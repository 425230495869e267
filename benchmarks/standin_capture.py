"""A stand-in for the benchmarks' real capture, made from the bundled captures, for a
machine where :mod:`benchmarks.ftrace_capture` may not record one (no tracefs of its own).

``benchmarks/work/standin.trace`` is the 53 real captures of the patched 6.12 kernel
under ``data/vm-6.12`` and ``data/vm-6.12-lab`` (memcg v1 and global pressure, shrinkers,
throttling, kswapd, compaction), in path order, repeated until it holds ``TARGET_BYTES``,
each copy shifted in time to begin a second after the one before ends: one long capture
in time order whose lines are all real 6.12 lines (no ``mm_vmscan_lru_isolate``, which
the real capture has for volume). Made by ``python -m benchmarks.standin_capture``; a
benchmark reads it when ``MMLAB_BENCH_CAPTURE`` names it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import zstandard

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "work" / "standin.trace"
TARGET_BYTES = 680_000_000
SOURCES = ("data/vm-6.12", "data/vm-6.12-lab")
GAP_US = 1_000_000
# ``comm-pid [cpu] flags secs.usecs:``: the timestamp rewritten, the rest kept.
_TS = re.compile(rb"^(.{0,64}?\]\s\S*\s+)(\d+)\.(\d{6}):")


def captures() -> list[Path]:
    """The bundled 6.12 captures, in path order."""
    return sorted(p for d in SOURCES for p in (HERE.parent / d).rglob("ftrace-*.zst"))


def shifted(text: bytes, start_us: int) -> tuple[bytes, int]:
    """``text`` with every timestamp moved so that the first is ``start_us``; and the
    last timestamp after the move."""
    out, first, last = [], None, start_us
    for line in text.splitlines(keepends=True):
        if m := _TS.match(line):
            us = int(m[2]) * 1_000_000 + int(m[3])
            first = us if first is None else first
            moved = us - first + start_us
            last = max(last, moved)
            line = m[1] + b"%d.%06d:" % divmod(moved, 1_000_000) + line[m.end() :]
        out.append(line)
    return b"".join(out), last


def make(path: Path = STANDIN, target_bytes: int = TARGET_BYTES) -> Path:
    """Write the stand-in to ``path`` (see the module docstring)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written, start = 0, 0
    with path.open("wb") as out:
        while written < target_bytes:
            for source in captures():
                text = zstandard.ZstdDecompressor().stream_reader(source.read_bytes()).read()
                moved, last = shifted(text, start)
                out.write(moved)
                written += len(moved)
                start = last + GAP_US
                if written >= target_bytes:
                    break
    return path


if __name__ == "__main__":
    print(make(*(Path(a) for a in sys.argv[1:2])))
