"""Where an analysis puts the per-row frames it produces block by block: in memory, or as
Parquet parts in a directory (the analysis cache), read back whole only when asked for.

Reading them back sorts them as the whole-trace computation orders them, so a frame is
the same whichever way it was produced.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl

__all__ = ["RowStore", "stored", "sum_parts"]


def _read_parts(directory: Path, sort: tuple[str, ...]) -> pl.DataFrame:
    parts = sorted(directory.glob("part-*.parquet"))
    frame = pl.read_parquet(parts) if parts else pl.read_parquet(directory / "empty.parquet")
    return frame.sort(*sort) if sort else frame


def _scan_parts(directory: Path) -> pl.LazyFrame:
    parts = sorted(directory.glob("part-*.parquet"))
    return pl.scan_parquet(parts if parts else directory / "empty.parquet")


def _concat(frames: tuple[pl.DataFrame, ...], sort: tuple[str, ...]) -> pl.DataFrame:
    frame = pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]
    return frame.sort(*sort) if sort else frame


class RowStore:
    """Frames of named row sets, added block by block; ``directory`` None keeps them in
    memory. Every name must be added at least once (an empty frame gives the schema)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self._frames: dict[str, list[pl.DataFrame]] = {}
        self._parts: dict[str, int] = {}

    def add(self, name: str, frame: pl.DataFrame) -> None:
        if self.directory is None:
            self._frames.setdefault(name, []).append(frame)
            return
        where = self.directory / name
        if name not in self._parts:
            where.mkdir(parents=True)
            frame.clear().write_parquet(where / "empty.parquet")
            self._parts[name] = 0
        if frame.height:
            # Parts are read whole: no statistics (a quarter of the writing time).
            part = where / f"part-{self._parts[name]:06d}.parquet"
            frame.write_parquet(part, compression="lz4", statistics=False)
            self._parts[name] += 1

    def loader(self, name: str, sort: Sequence[str] = ()) -> Callable[[], pl.DataFrame]:
        """A picklable function returning every row of ``name``, sorted by ``sort``."""
        if self.directory is None:
            return functools.partial(_concat, tuple(self._frames[name]), tuple(sort))
        return functools.partial(_read_parts, self.directory / name, tuple(sort))

    def scan(self, name: str) -> pl.LazyFrame:
        """Every row of ``name``, lazily (for an aggregate that reads a few columns)."""
        if self.directory is None:
            return pl.concat(self._frames[name], how="vertical").lazy()
        return _scan_parts(self.directory / name)


def stored(directory: Path, name: str, sort: Sequence[str] = ()) -> Callable[[], pl.DataFrame]:
    """The loader of row set ``name`` written earlier under ``directory``."""
    return functools.partial(_read_parts, directory / name, tuple(sort))


def sum_parts(parts: list[pl.DataFrame], keys: Sequence[str]) -> pl.DataFrame:
    """Per-block sums (group-by ``keys`` tables of counts) summed over the blocks, in the
    first part's column types: the sums of the whole trace."""
    schema = parts[0].schema
    return (
        pl.concat(parts, how="vertical")
        .group_by(*keys)
        .agg(pl.all().sum())
        .select(pl.col(name).cast(dtype) for name, dtype in schema.items())
    )
