"""Small capture files (vmstat dumps, monitors, timestamps) read whole as checked text.

Decompression (plain, gzip, zstd, xz, bzip2, detected from magic bytes, with errors that
name the file and offset) is :mod:`analysis.ingest.compressed`'s; this adds the checks a
text format needs: no NUL bytes, valid UTF-8, each reported with its line.
"""

from __future__ import annotations

from pathlib import Path

from analysis.errors import InputError
from analysis.ingest.compressed import iter_blocks

__all__ = ["read_bytes", "read_text"]

_WHOLE = 1 << 26


def read_bytes(path: str | Path) -> bytes:
    """The decompressed content of ``path``."""
    return b"".join(block.data for block in iter_blocks(Path(path), _WHOLE))


def read_text(path: str | Path) -> str:
    """The decompressed content of ``path`` as UTF-8 text; binary content is an error."""
    data = read_bytes(path)
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(path, "binary content (NUL byte), not text", line=line, offset=nul)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(path, "not UTF-8 text", line=line, offset=exc.start) from None
