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
from analysis.ingest.ftrace import _parse, columns, reader
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
    two = np.zeros(2, np.int64)
    args = {
        "buf": data, "out": out, "ends": ends,
        "rows": np.array([0], np.int64),
        "ids": np.array([0], np.int64),
        "ev_start": np.array([0, 2], np.int64),  # says two rows, there is one
        "mode": np.zeros(1, np.uint8), "plan_hash": np.zeros(0, np.uint64), "plan_col": i64,
        "plan_off": two, "col_off": two, "kinds": np.zeros(0, np.int8), "slots": i64,
        "base_int": two, "base_str": two, "base_flag": two, "fcol_off": two,
    }  # fmt: skip
    with pytest.raises(ValueError, match="inconsistent"):
        columns.emit(args, 0)
    args["ev_start"] = np.array([0, 1], np.int64)
    args["rows"] = np.array([5], np.int64)  # a row past the block's lines
    with pytest.raises(ValueError, match="out of range"):
        columns.emit(args, 0)
    # A caller naming other arguments than _parse.c declares is refused before the call.
    with pytest.raises(RuntimeError, match="make setup"):
        columns.emit({k: v for k, v in args.items() if k != "mode"}, 0)
    with pytest.raises(RuntimeError, match="make setup"):
        columns.emit(args | {"modes": args["mode"]}, 0)


def test_emits_results_are_what_their_declared_names_say() -> None:
    """emit's 17 arguments and 22 results are declared once in _parse.c, which exports
    their names in order; columns.emit passes and reads them by name. Here each result is
    sized as its name's column is (bytes per row, per event, per column, per flags column),
    so a declaration whose names and contents drift apart fails."""
    assert len(set(_parse.EMIT_ARGS)) == len(_parse.EMIT_ARGS) == 17
    assert len(set(_parse.EMIT_RESULTS)) == len(_parse.EMIT_RESULTS) == 22
    text = _line(
        "mm_vmscan_throttled",
        "nid=0 usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK",
        1,
    ) + _line(
        "mm_vmscan_lru_shrink_inactive",
        "nid=0 nr_scanned=32 nr_reclaimed=32 nr_dirty=0 nr_writeback=0 nr_congested=0 "
        "nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 "
        "nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC",
        2,
    )
    data = text.encode()
    _, ends, _, out = scan_lines(data)
    block = reader._block_columns(data, out, ends, np.arange(2, dtype=np.int64), 0)
    assert block is not None and block.planned.all()
    sizes = {name: buffer.size for name, buffer in block._r.items()}
    n, n_ev = 2, 2
    kinds = np.concatenate([plan.kinds for plan in block.plans])
    ints, strs, flags = ((kinds == k).sum() for k in (_parse.K_INT, _parse.K_STR, _parse.K_FLAGS))
    assert flags == 1 and ints > 10 and strs == 1  # one event of each kind of field
    assert sizes == {
        "line": 8 * n, "pid": 4 * n, "tgid": 4 * n, "cpu": 4 * n, "ts": 8 * n,
        "comm": 16 * n, "irq": 16 * n, "inst": 16 * n,
        "common_valid": _parse.N_COMMON_VALID, "common_present": 8 * _parse.N_COMMON_VALID * n_ev,
        "vals": 8 * ints, "ivalid": (ints + 7) // 8, "views": 16 * strs, "svalid": 1,
        "loff": 4 * 2, "fvalid": 1, "pieces": 16 * 2, "piece_off": 8 * (flags + 1),
        "present": 8 * len(kinds), "data": sizes["data"], "planned": n_ev, "bad": n,
    }  # fmt: skip
    assert 0 < sizes["data"] <= len(data)
