"""The compiled reader (analysis/ingest/ftrace/_parse.c) against independent computations:
Python's own byte counting, Polars' string split, the raw text of each field; and its
refusal of inconsistent input instead of reading past a buffer."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis.ingest import ftrace
from analysis.ingest.ftrace import _parse, reader
from analysis.ingest.ftrace.layout import scan_lines, text_shape

HEADER = "{comm:>16}-3772    [001] .....   252.{us:06d}: "


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 31, 4079, 4080, 4081, 8160, 8161, 100_003])
def test_text_shape_is_pythons_count(size: int) -> None:
    # Sizes around the 16-byte vectors and the 255-vector count flush; a high byte in the
    # vector part and in the tail; with and without a final newline.
    rng = random.Random(size)
    text = bytes(rng.choice(b"ab \n") for _ in range(size))

    def python(data: bytes) -> tuple[int, bool]:
        return data.count(b"\n") + (len(data) > 0 and not data.endswith(b"\n")), data.isascii()

    for data in (text, text + b"\n", text.rstrip(b"\n")):
        assert text_shape(data) == python(data)
        for at in {0, len(data) // 2, len(data) - 1} if data else ():
            high = bytearray(data)
            high[at] = 0xC3
            assert text_shape(bytes(high)) == python(bytes(high))
            assert not python(bytes(high))[1]


def test_scan_refuses_a_line_count_that_is_not_the_texts() -> None:
    data = b"a\nb\nc"
    assert len(scan_lines(data, 3)[0]) == 3
    for wrong in (2, 4):
        with pytest.raises(ValueError, match="has not"):
            scan_lines(data, wrong)


def _line(event: str, payload: str, us: int, comm: str = "dd") -> str:
    return HEADER.format(comm=comm, us=us) + f"{event}: {payload}\n"


@pytest.mark.parametrize(
    "flags",
    [
        "RECLAIM_WB_FILE|RECLAIM_WB_ASYNC",
        "A||B",
        "|",
        "A|",
        "|A",
        "ONE",
        "",
        "A_VERY_LONG_FLAG_NAME_OVER_TWELVE|B|ANOTHER_LONG_ONE_HERE",
    ],
)
def test_flags_are_polars_split_of_the_text(flags: str) -> None:
    base = "nid=0 nr_scanned=7 nr_reclaimed=5 priority=12"
    text = _line("mm_vmscan_lru_shrink_inactive", f"{base} flags={flags}", 1) + _line(
        "mm_vmscan_lru_shrink_inactive", base, 2
    )
    _, frames = reader.parse_text(text)
    got = frames["mm_vmscan_lru_shrink_inactive"]["flags"]
    want = pl.Series([flags, None]).str.split("|")
    assert got.to_list() == want.to_list()
    assert got.dtype == pl.List(pl.String)


def test_strings_at_the_inline_boundary_keep_their_bytes() -> None:
    # Arrow string views hold up to 12 bytes inline, longer ones in the block's data
    # buffer: comms and shrinker names either side of 12, interleaved with another event.
    comms = ["a" * n for n in (1, 11, 12, 13, 15)]
    shrinkers = [*("s" * n + "+0x0/0x210" for n in (1, 2, 3, 30)), "x"]
    lines = []
    for i, (comm, shrinker) in enumerate(zip(comms, shrinkers, strict=True)):
        lines.append(_line("mm_vmscan_memcg_reclaim_end", "nr_reclaimed=3", 2 * i, comm))
        lines.append(
            _line(
                "mm_shrink_slab_end",
                f"{shrinker} 0000000057ada3c1: nid: 0 unused scan count 0 new scan count 0 "
                "total_scan 0 last shrinker return val 0",
                2 * i + 1,
                comm,
            )
        )
    _, frames = reader.parse_text("".join(lines))
    assert frames["mm_vmscan_memcg_reclaim_end"]["comm"].to_list() == comms
    end = frames["mm_shrink_slab_end"]
    assert end["comm"].to_list() == comms
    assert end["shrinker"].to_list() == shrinkers
    assert end["shrinker_ptr"].to_list() == ["0000000057ada3c1"] * len(comms)


def test_an_event_built_by_both_paths_reads_back_as_one_table(tmp_path: Path, monkeypatch) -> None:
    # Block 1 holds a throttled line with a field of a newer kernel (the general path
    # builds the event: Polars writes it), block 2 plain ones (the column pass: PyArrow
    # writes it): one schema, every row, the values of the whole text parsed at once.
    payload = "nid=0 usec_timeout=100000 usect_delayed={} reason=VMSCAN_THROTTLE_WRITEBACK"
    first = _line("mm_vmscan_throttled", payload.format(4000) + " memcg_id=7", 1)
    rest = "".join(_line("mm_vmscan_throttled", payload.format(i), 2 + i) for i in range(30))
    text = (first + rest).encode()
    monkeypatch.setattr(reader, "BLOCK_BYTES", len(first) + 10)
    path = tmp_path / "t.trace"
    path.write_bytes(text)
    trace = ftrace.read(path, cache_dir=tmp_path / "c")
    assert len(list((trace.directory / "event=mm_vmscan_throttled").glob("*.parquet"))) > 1
    got = trace.events("mm_vmscan_throttled").drop("epoch_ns")
    _, whole = reader.parse_text(text)
    assert got.equals(whole["mm_vmscan_throttled"])
    assert got["usect_delayed"].to_list() == [4000, *range(30)]
    assert got["memcg_id"].to_list() == [7] + [None] * 30


def test_emit_refuses_inconsistent_arrays() -> None:
    data = _line("mm_vmscan_memcg_reclaim_end", "nr_reclaimed=3", 1).encode()
    _, ends, _, out = scan_lines(data)
    i64 = np.zeros(0, np.int64)
    args = [
        data,
        out,
        ends,
        np.array([0], np.int64),  # rows
        np.array([0], np.int64),  # ids
        np.array([0, 2], np.int64),  # ev_start: says two rows, there is one
        np.zeros(1, np.uint8),
        np.zeros(0, np.uint64),
        i64,
        np.zeros(2, np.int64),
        np.zeros(2, np.int64),
        np.zeros(0, np.int8),
        i64,
        np.zeros(2, np.int64),
        np.zeros(2, np.int64),
        np.zeros(2, np.int64),
        np.zeros(2, np.int64),
        0,
    ]
    with pytest.raises(ValueError, match="inconsistent"):
        _parse.emit(*args)
    args[5] = np.array([0, 1], np.int64)
    args[3] = np.array([5], np.int64)  # a row past the block's lines
    with pytest.raises(ValueError, match="out of range"):
        _parse.emit(*args)
