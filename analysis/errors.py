"""Errors for bad user input: one clear message naming the file, line and reason."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["InputError"]


@dataclass(frozen=True)
class InputError(Exception):
    """Input that mmlab cannot use, with where and why.

    ``line`` is 1-based; ``offset`` is a byte offset (for compressed streams,
    where a line number is unknowable). Either may be ``None``.
    """

    path: str | Path
    reason: str
    line: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        where = str(self.path)
        if self.line is not None:
            where += f":{self.line}"
        if self.offset is not None:
            where += f" (byte offset {self.offset})"
        return f"{where}: {self.reason}"
