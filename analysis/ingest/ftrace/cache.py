"""The Parquet cache of ingested traces: one dataset per input content, found again by stat.

A dataset is ``<cache>/<digest>-v<CACHE_VERSION>/``: lz4 Parquet parts
``event=<name>/part-<block>.parquet`` and ``meta.json`` (accounting, epoch offset), and
once analysed the analysis results, ``analysis-<key>/`` (:func:`results`). It is
keyed by the BLAKE3 digest of the input's raw bytes, so a renamed or copied capture reuses
it; ``by-path/<sha1 of path>.json`` remembers (size, mtime) → dataset so an unchanged file
is found without reading it again; a dataset of another cache version is never served. A
dataset is built in a private temporary directory and renamed into place, and the index is
replaced atomically, so concurrent readers never see half of either; :func:`path_lock`
makes a second ingest of the same file wait for the first and reuse its dataset instead of
building another.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa

__all__ = [
    "CACHE_VERSION",
    "DEFAULT_CACHE",
    "adopt_entries",
    "begin_command",
    "cached",
    "discard_new_entries",
    "event_parts",
    "load_meta",
    "new_entries",
    "path_lock",
    "results",
    "store",
    "write_tables",
]

# 2: the instance column, report -l lines, EVENTS DROPPED markers; 3: lines with a
# non-integer integer field are unparsed, not events with a null; 4: keyed by BLAKE3, not
# SHA-256.
CACHE_VERSION = "4"
DEFAULT_CACHE = Path("build") / "ingest"


_DELTAS = {"line": "DELTA_BINARY_PACKED", "ts_ns": "DELTA_BINARY_PACKED"}


def write_tables(directory: Path, block: int, tables: dict[str, pa.Table | pl.DataFrame]) -> None:
    """One Parquet part per event of block number ``block``.

    The column pass's Arrow tables are written by PyArrow straight from its buffers.
    Strings are dictionary-encoded (a capture repeats a few comms, flags and shrinker
    names); integers are not (their dictionary attempt costs time for no smaller file),
    and the line number and timestamp, which only grow, are stored as deltas: a third of
    the bytes and less to compress (benchmarks/ftrace.md). No statistics: parts are read
    whole. The general path's Polars frames are written by Polars (their extra columns are
    named by whatever key the text held, which Arrow's C interface cannot always carry: a
    NUL byte).
    """
    import pyarrow.parquet as pq

    for name, table in tables.items():
        part = directory / f"event={name}"
        part.mkdir(exist_ok=True)
        if isinstance(table, pl.DataFrame):
            table.write_parquet(
                part / f"part-{block:06d}.parquet", compression="lz4", statistics=False
            )
            continue
        strings = [
            f"{f.name}.list.element"
            if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)
            else f.name
            for f in table.schema
            if not pa.types.is_integer(f.type)
        ]
        pq.write_table(
            table,
            part / f"part-{block:06d}.parquet",
            compression="lz4",
            use_dictionary=strings,
            column_encoding=_DELTAS,
            write_statistics=False,
        )


def event_parts(directory: Path, name: str) -> list[Path]:
    """The Parquet parts of one event in block order (none when the event is absent)."""
    return sorted((directory / f"event={name}").glob("part-*.parquet"))


def load_meta(directory: Path) -> dict:
    """``meta.json`` of a dataset."""
    return json.loads((directory / "meta.json").read_text())


def _stat_key(path: Path) -> dict:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _index(cache: Path, key: dict) -> Path:
    # os.fsencode: a Linux file name need not be UTF-8 (its bytes come back as surrogates).
    return cache / "by-path" / f"{hashlib.sha1(os.fsencode(key['path'])).hexdigest()}.json"


@contextlib.contextmanager
def path_lock(cache: Path, path: Path) -> Iterator[None]:
    """Hold an exclusive flock for ingesting ``path`` into ``cache`` (released on exit,
    however the holder exits). The lock file and the folders made for it are recorded as
    new entries (:func:`discard_new_entries`)."""
    lock = _index(cache, _stat_key(path)).with_suffix(".lock")
    _note_new(lock)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


# What this process added to caches since the command began, newest last: a command that
# fails leaves no cache entry behind for what it refused (issue 29; README "a command
# that fails leaves no output behind"). Kept per process; a pool worker hands its own to
# the command's process (new_entries, adopt_entries).
_NEW: list[Path] = []


def _note_new(path: Path) -> None:
    """Record ``path`` and every missing folder above it (outermost first) as new."""
    _NEW.extend(d for d in reversed((path, *path.parents)) if not d.exists() and d not in _NEW)


def new_entries() -> list[str]:
    """What this process added since :func:`begin_command` (a pool worker's answer)."""
    return [str(p) for p in _NEW]


def adopt_entries(paths: list[str]) -> None:
    """Take a pool worker's :func:`new_entries` as this process's own, so that a command
    that fails removes them too."""
    _NEW.extend(Path(p) for p in paths if Path(p) not in _NEW)


def begin_command() -> None:
    """Forget the entries of an earlier command of this process (they are kept)."""
    _NEW.clear()


def discard_new_entries() -> None:
    """Remove what this process added to caches since :func:`begin_command`, deepest
    first: pool workers' entries are adopted in file order, not in the order they were
    made, so the worker that made ``by-path/`` may come after one that only added a file
    to it. A folder another process has filled meanwhile stays. (A process waiting on a
    removed lock and one making it anew may then build the same dataset twice;
    :func:`_publish` keeps the first.)"""
    entries = sorted(_NEW, key=lambda p: len(p.parts), reverse=True)
    _NEW.clear()
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                if entry.name.endswith(f"-v{CACHE_VERSION}"):
                    shutil.rmtree(entry)
                else:
                    entry.rmdir()
            else:
                entry.unlink(missing_ok=True)


def _replace_text(target: Path, text: str) -> None:
    """Write ``target`` whole or not at all (a reader sees the old or the new content)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}")
    tmp.write_text(text)
    tmp.replace(target)


def cached(cache: Path, path: Path) -> Path | None:
    """The dataset of ``path`` if its size and mtime are those it was ingested with."""
    key = _stat_key(path)
    index = _index(cache, key)
    if index.is_file():
        known = json.loads(index.read_text())
        directory = cache / known.get("dataset", "-")
        current = directory.name.endswith(f"-v{CACHE_VERSION}")
        if (
            current
            and {k: known.get(k) for k in key} == key
            and (directory / "meta.json").is_file()
        ):
            return directory
    return None


def store(cache: Path, path: Path, build: Callable[[Path], tuple[str, dict]]) -> Path:
    """Build the dataset of ``path`` with ``build(tmp) -> (digest, meta)`` and index it."""
    key = _stat_key(path)
    _remove_orphans(cache)
    tmp = cache / f"tmp-{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        digest, meta = build(tmp)
        (tmp / "meta.json").write_text(json.dumps({"version": CACHE_VERSION, **meta}))
        directory = cache / f"{digest}-v{CACHE_VERSION}"
        _note_new(directory)
        _publish(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    index = _index(cache, key)
    _note_new(index)
    index.parent.mkdir(exist_ok=True)
    _replace_text(index, json.dumps({**key, "dataset": directory.name}))
    return directory


def results(dataset: Path, key: str, build: Callable[[Path], None]) -> Path:
    """The directory of the analysis results of ``dataset`` under ``key`` (which names the
    mmlab version and the analysis code), built by ``build(tmp)`` the first time; ``build``
    writes ``meta.json`` last. It sits beside the dataset's event parts and is published by
    rename, so a concurrent reader finds it whole or not at all, and a build that fails
    leaves nothing behind."""
    directory = dataset / f"analysis-{key}"
    if (directory / "meta.json").is_file():
        return directory
    _remove_orphans(dataset)
    tmp = dataset / f"tmp-{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        build(tmp)
        _publish(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def _remove_orphans(cache: Path) -> None:
    """Delete the half-built datasets of ingest processes that no longer exist (killed,
    e.g. by the OOM killer, before their ``finally`` could run)."""
    for tmp in cache.glob("tmp-*-*"):
        try:
            os.kill(int(tmp.name.split("-")[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(tmp, ignore_errors=True)
        except (ValueError, PermissionError):
            continue  # not ours to judge: a name we did not write, or another user's process


def _publish(tmp: Path, directory: Path) -> None:
    """Rename the built dataset ``tmp`` to ``directory``, unless another process (another
    file with the same bytes) got there first: a complete dataset is never replaced."""
    try:
        tmp.rename(directory)
    except OSError:
        if not (directory / "meta.json").is_file():
            raise
        shutil.rmtree(tmp)
