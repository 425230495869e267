"""Errors for bad user input: one clear message naming the file, line and reason.

Project exceptions are plain ``Exception`` subclasses, not frozen dataclasses: Python
assigns ``__traceback__``, ``__context__`` and ``__cause__`` on every exception it raises,
unwinds through a ``with`` block or throws into a generator, and a frozen dataclass
refuses those assignments (``FrozenInstanceError`` in place of the real error). Their
``args`` are exactly their constructor's arguments, so they pickle across process pools.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["InputError"]


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
