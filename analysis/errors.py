"""Errors for bad user input: one clear message naming the file, line and reason.

Project exceptions are plain ``Exception`` subclasses, not frozen dataclasses: Python
assigns ``__traceback__``, ``__context__`` and ``__cause__`` on every exception it raises,
unwinds through a ``with`` block or throws into a generator, and a frozen dataclass
refuses those assignments (``FrozenInstanceError`` in place of the real error). Their
``args`` are exactly their constructor's arguments, so they pickle across process pools.
"""

from __future__ import annotations

import stat
from pathlib import Path

__all__ = ["InputError", "input_file"]


class InputError(Exception):
    """Input that mmlab cannot use, with where and why.

    ``line`` is 1-based; ``offset`` is a byte offset (for compressed streams,
    where a line number is unknowable). Either may be ``None``.
    """

    def __init__(
        self,
        path: str | Path,
        reason: str,
        line: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(path, reason, line, offset)
        self.path = path
        self.reason = reason
        self.line = line
        self.offset = offset

    def __str__(self) -> str:
        where = str(self.path)
        if self.line is not None:
            where += f":{self.line}"
        if self.offset is not None:
            where += f" (byte offset {self.offset})"
        return f"{where}: {self.reason}"


# What a path that is not a regular file is, for the one-line refusal.
_KINDS = (
    (stat.S_ISDIR, "a directory, not a file"),
    (stat.S_ISFIFO, "a FIFO (named pipe), not a regular file"),
    (stat.S_ISCHR, "a character device, not a regular file"),
    (stat.S_ISBLK, "a block device, not a regular file"),
    (stat.S_ISSOCK, "a socket, not a regular file"),
)


def input_file(path: str | Path, max_bytes: int | None = None) -> Path:
    """``path`` if it names a regular file (symlinks followed) of at most ``max_bytes``,
    else :class:`InputError`.

    Every reader of a user's file calls this before opening it: a FIFO would block the
    command forever, ``/dev/zero`` would feed it without end, and a directory or a missing
    path would surface as a traceback deep inside a parser. ``max_bytes`` bounds small
    hand-written files (a grid, a notebook) whose parsers slow down on huge input.
    """
    path = Path(path)
    try:
        status = path.stat()
        mode = status.st_mode
    except FileNotFoundError:
        raise InputError(path, "no such file or directory") from None
    except NotADirectoryError:
        raise InputError(path, "no such file or directory (a parent is a file)") from None
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    for test, kind in _KINDS:
        if test(mode):
            raise InputError(path, kind)
    if max_bytes is not None and status.st_size > max_bytes:
        raise InputError(path, f"{status.st_size:,} bytes: larger than {max_bytes:,} bytes")
    return path
