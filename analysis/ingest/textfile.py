"""Open capture files whatever their compression, detected from magic bytes, not names.

mmtests gzips its monitors; ``mmlab capture`` writes zstd; users paste plain text.
A truncated or corrupt stream is an :class:`~analysis.errors.InputError` that names
the file and how far decompression got.
"""

from __future__ import annotations

import bz2
import io
import lzma
import zlib
from pathlib import Path

import zstandard

from analysis.errors import InputError

__all__ = ["compression_of", "read_bytes", "read_text"]

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
)


def compression_of(head: bytes) -> str | None:
    """Name of the compression whose magic number starts ``head``, or ``None`` for plain."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def _decompress(data: bytes, kind: str) -> bytes:
    if kind == "gzip":
        # gzip.decompress raises EOFError on a truncated stream; decompressobj tells how far.
        out = io.BytesIO()
        d = zlib.decompressobj(wbits=47)
        pos = 0
        while pos < len(data):
            out.write(d.decompress(data[pos:]))
            if not d.eof:
                raise EOFError(f"stream ends early at compressed byte {len(data)}")
            pos = len(data) - len(d.unused_data)
            # A multi-member gzip file (concatenated .gz) continues with another header.
            if d.unused_data:
                d = zlib.decompressobj(wbits=47)
        return out.getvalue()
    if kind == "zstd":
        with zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(data), read_across_frames=True
        ) as r:
            return r.read()
    if kind == "xz":
        return lzma.decompress(data)
    if kind == "bzip2":
        return bz2.decompress(data)
    raise AssertionError(kind)


def read_bytes(path: str | Path) -> bytes:
    """The decompressed content of ``path`` (plain, gzip, zstd, xz or bzip2)."""
    raw = Path(path).read_bytes()
    kind = compression_of(raw[:8])
    if kind is None:
        return raw
    try:
        return _decompress(raw, kind)
    except (EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError, ValueError) as exc:
        raise InputError(path, f"corrupt or truncated {kind} stream: {exc}") from None


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
