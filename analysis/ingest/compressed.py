"""Open plain, gzip, zstd, xz or bzip2 text by its magic bytes, with errors that name the file.

Captures arrive compressed in every way mmtests and people use (``ftrace-<test>.gz``,
``.zst`` from ``mmlab capture``, ``.xz``/``.bz2`` attachments). The compression is
detected from the first bytes, not the suffix, because renamed files are common.
A truncated or corrupt stream raises :class:`~analysis.errors.InputError` with the
byte offset in the *compressed* file where decoding failed. A plain file is not read but
mapped, a block at a time (:func:`_mapped_blocks`). While reading, the raw
(compressed) bytes are hashed (BLAKE3: a cryptographic hash at 0.14 s of CPU per 671 MB
where SHA-256, even with the CPU's SHA instructions, takes 0.39 s) so the ingest cache
can key on the content.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import mmap
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard
from blake3 import blake3

from analysis.errors import InputError, input_file

__all__ = [
    "MAX_LINE_BYTES",
    "SNIFF_BYTES",
    "Block",
    "detect_compression",
    "iter_blocks",
    "sha256_file",
]

MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bzip2",
}
HASH_BLOCK = 8 << 20
# The head of a text capture that must hold no NUL byte, and the longest line read (a
# 50 MB line in a trace is one unparsed line; 256 MiB without a newline is not text).
SNIFF_BYTES = 1 << 10
MAX_LINE_BYTES = 1 << 28


def detect_compression(head: bytes) -> str:
    """Name of the compression whose magic number starts ``head`` (``"plain"`` if none)."""
    for magic, name in MAGIC.items():
        if head.startswith(magic):
            return name
    return "plain"


class _HashingReader:
    """Raw file wrapper that hashes and counts every byte the decompressor pulls."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.offset = 0
        self.hash = blake3()

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.offset += len(data)
        self.hash.update(data)
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.raw.close()


class _ZstdReader:
    """zstd frames decoded one raw block at a time, failing if the input ends mid-frame.

    (``ZstdDecompressor.stream_reader`` returns a silent EOF on a truncated frame.)
    """

    def __init__(self, raw: _HashingReader) -> None:
        self.raw = raw
        self.dctx = zstandard.ZstdDecompressor()
        self.obj = self.dctx.decompressobj()

    def read(self, size: int) -> bytes:
        out: list[bytes] = []
        n = 0
        while n < size:
            chunk = self.raw.read(1 << 20)
            if not chunk:
                if not self.obj.eof:
                    raise EOFError("zstd stream ends inside a frame")
                break
            data = self.obj.decompress(chunk)
            while self.obj.eof and self.obj.unused_data:  # concatenated frames
                rest = self.obj.unused_data
                self.obj = self.dctx.decompressobj()
                data += self.obj.decompress(rest)
            out.append(data)
            n += len(data)
        return b"".join(out)


def _decompressor(kind: str, raw: _HashingReader) -> BinaryIO:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[arg-type]
    if kind == "zstd":
        return _ZstdReader(raw)  # type: ignore[return-value]
    if kind == "xz":
        return lzma.LZMAFile(raw)  # type: ignore[arg-type]
    if kind == "bzip2":
        return bz2.BZ2File(raw)  # type: ignore[arg-type]
    return raw  # type: ignore[return-value]


# Every way a decompressor reports damage; mapped to one InputError.
_STREAM_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError, ValueError)


@dataclass(frozen=True)
class Block:
    """Decompressed text ending at a newline (or at end of input), with its position.

    ``data`` holds whole lines; ``final`` marks the last block, whose last line may lack
    its newline (a truncated capture).
    """

    data: bytes | bytearray | memoryview
    final: bool


def _fill(stream: BinaryIO, carry: bytes, size: int) -> bytearray:
    """``carry`` followed by up to ``size`` more bytes of ``stream``, in one fresh buffer."""
    buf = bytearray(carry)
    buf += stream.read(size)
    return buf


def _sniff(path: Path, data: bytes | bytearray, kind: str) -> None:
    """Text captures hold no NUL byte: one in the first KiB is a binary file given by
    mistake (a disk image, a core file), refused before it is read, hashed or parsed
    whole (10 GB of NUL bytes once grew memory without bound). The line is of the text;
    the byte offset, of a plain file only (a compressed one's would be of its text)."""
    nul = data.find(b"\x00", 0, SNIFF_BYTES)
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(
            path,
            "binary content (NUL byte), not a text capture",
            line=line,
            offset=nul if kind == "plain" else None,
        )


def iter_blocks(path: Path, block_bytes: int, digest: list[str] | None = None) -> Iterator[Block]:
    """Yield decompressed ``path`` in blocks of about ``block_bytes``, split at newlines.

    When the stream ends, the hex BLAKE3 digest of the raw file is appended to ``digest``.
    Raises InputError naming the compressed byte offset if the stream is damaged, and
    before opening anything that is not a regular file (:func:`~analysis.errors.input_file`);
    binary content (:func:`_sniff`) and a line longer than :data:`MAX_LINE_BYTES` are
    InputErrors too, so memory stays bounded whatever the file.
    """
    with input_file(path).open("rb") as fh:
        kind = detect_compression(fh.read(8))
        fh.seek(0)
        size = os.fstat(fh.fileno()).st_size
        if kind == "plain" and size:
            yield from _mapped_blocks(path, fh, size, block_bytes, digest)
            return
        raw = _HashingReader(fh)
        stream = _decompressor(kind, raw)
        carry = b""
        first = True
        try:
            while True:
                # A small file gets a small buffer, not block_bytes of zeroes.
                want = min(block_bytes, max(size - raw.offset, 1 << 16))
                data = _fill(stream, carry, want)
                if first:
                    _sniff(path, data, kind)
                    first = False
                if len(data) == len(carry):
                    break
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    if len(data) > MAX_LINE_BYTES:
                        raise InputError(
                            path,
                            f"a line of more than {MAX_LINE_BYTES:,} bytes: not a text capture",
                            offset=raw.offset,
                        )
                    carry = bytes(data)
                    continue
                carry = bytes(data[cut:])
                del data[cut:]  # in place: no copy of the block
                yield Block(data, final=False)
        except _STREAM_ERRORS as exc:
            raise InputError(
                path, f"corrupt or truncated {kind} stream: {exc}", offset=raw.offset
            ) from exc
        yield Block(carry, final=True)
        if digest is not None:
            digest.append(raw.hash.hexdigest())


def _window(path: Path, fh: BinaryIO, start: int, end: int) -> tuple[mmap.mmap, int]:
    """Bytes ``start:end`` of the open file ``fh`` mapped read-only: (the map, where
    ``start`` is in it). Refuses a file that shrank below ``end`` since it was opened:
    reading a page past its new end would kill the process (SIGBUS)."""
    if os.fstat(fh.fileno()).st_size < end:
        raise InputError(path, "the file shrank while it was being read", offset=start)
    base = start - start % mmap.ALLOCATIONGRANULARITY
    return mmap.mmap(fh.fileno(), end - base, offset=base, access=mmap.ACCESS_READ), start - base


def _mapped_blocks(
    path: Path, fh: BinaryIO, size: int, block_bytes: int, digest: list[str] | None
) -> Iterator[Block]:
    """:func:`iter_blocks` of a plain file of ``size`` bytes, each block a read-only view
    of the file's pages (one map per block): the text is neither copied out of the page
    cache nor put in fresh memory that must be faulted in and zeroed, and a block's map is
    unmapped when its last view goes, so memory is that of the blocks in flight."""
    hasher = blake3()
    start, span = 0, block_bytes
    rest: memoryview | bytes = b""
    while start < size:
        end = min(size, start + span)
        window, at = _window(path, fh, start, end)
        if start == 0:
            _sniff(path, window[:SNIFF_BYTES], "plain")
        cut = window.rfind(b"\n", at) + 1
        if not cut:
            if end == size:  # the rest is the last line, without its newline
                rest = memoryview(window)[at:]
                break
            if end - start > MAX_LINE_BYTES:
                raise InputError(
                    path,
                    f"a line of more than {MAX_LINE_BYTES:,} bytes: not a text capture",
                    offset=end,
                )
            span *= 2
            continue
        data = memoryview(window)[at:cut]
        hasher.update(data)
        yield Block(data, final=False)
        start, span = start + cut - at, block_bytes
    hasher.update(rest)
    yield Block(rest, final=True)
    if digest is not None:
        digest.append(hasher.hexdigest())


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of the raw bytes of ``path``."""
    sha = hashlib.sha256()
    with input_file(path).open("rb") as fh:
        while block := fh.read(HASH_BLOCK):
            sha.update(block)
    return sha.hexdigest()
