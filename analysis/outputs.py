"""Files a command writes appear whole or not at all.

A command that fails half way (bad input, a full disk, Ctrl-C) must not leave a
half-written report, a paper folder with half its tables, or a notebook without its HTML
for ``make`` to mistake for a result. Each output is written under a temporary name in the
same directory and renamed into place only once everything it belongs with is written
(``rename`` within one file system is atomic).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["Stages", "replace_text", "staged_dir"]


def _tmp_name(path: Path) -> Path:
    """A name beside ``path`` that no other process uses (hidden, ends in ``.tmp``)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def replace_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically: the old file or the new one, never half."""
    path = Path(path)
    tmp = _tmp_name(path)
    try:
        tmp.write_text(text)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists():
        path = path.parent
    return path


@contextmanager
def staged_dir(out: Path) -> Iterator[Path]:
    """A fresh directory to write ``out``'s files into; when the block ends without an
    exception each file is moved to the same place under ``out`` (other files already in
    ``out``, e.g. LaTeX's, are kept); when it raises, nothing under ``out`` changes and the
    staging directory is removed. The staging directory is beside ``out`` (or beside its
    first existing ancestor), so the moves are renames."""
    out = Path(out)
    stage = Path(
        tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=_existing_ancestor(out.parent))
    )
    try:
        yield stage
        for src in sorted(p for p in stage.rglob("*") if not p.is_dir()):
            dest = out / src.relative_to(stage)
            dest.parent.mkdir(parents=True, exist_ok=True)
            src.replace(dest)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


class Stages:
    """Progress of a long command: one line on stderr per stage done, with what is left
    (``mmlab paper: [3/8] fits of dirty5 done, 5 left``). Never on stdout, which holds
    the command's result (JSON stays clean); plain lines, readable in a log as on a
    terminal. Stages found on the way are announced with :meth:`expect`."""

    def __init__(self, command: str, total: int = 0) -> None:
        self.command = command
        self.total = total
        self.count = 0

    def expect(self, more: int) -> None:
        """``more`` stages besides those announced so far."""
        self.total += more

    def done(self, what: str) -> None:
        """Say that stage ``what`` is done, and how many of the announced are left."""
        self.count += 1
        total = max(self.total, self.count)
        left = f", {total - self.count} left" if total > self.count else ""
        print(
            f"mmlab {self.command}: [{self.count}/{total}] {what} done{left}",
            file=sys.stderr,
            flush=True,
        )
