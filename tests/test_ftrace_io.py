"""ftrace ingest end to end: compressed inputs, damage, cache, epoch, parallel files, CLI."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import re
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import zstandard
from blake3 import blake3

from analysis.cli import main
from analysis.errors import InputError
from analysis.ingest import ftrace
from analysis.ingest.ftrace import reader
from analysis.ingest.ftrace.cache import CACHE_VERSION
from analysis.ingest.ftrace.layout import group_hashes
from tests.conftest import DATA

BUNDLED = DATA / "stutterp-dirty20" / "dirty20" / "iter-0" / "ftrace-stutterp.zst"

TEXT = (
    b"# tracer: nop\n"
    b"      kcompactd0-35      [000] .....   250.164105: mm_compaction_kcompactd_sleep: nid=0\n"
    b"              dd-3772    [001] .....   252.459898: mm_vmscan_throttled: nid=0 "
    b"usec_timeout=100000 usect_delayed=4000 reason=VMSCAN_THROTTLE_WRITEBACK\n"
    b"CPU:1 [LOST 7 EVENTS]\n"
    b"              dd-3772    [001] .....   252.460787: mm_vmscan_throttled: nid=0 "
    b"usec_timeout=100000 usect_delayed=0 reason=VMSCAN_THROTTLE_WRITEBACK\n"
)

COMPRESSORS = {
    "plain": lambda b: b,
    "gz": gzip.compress,
    "zst": lambda b: zstandard.ZstdCompressor().compress(b),
    "xz": lzma.compress,
    "bz2": bz2.compress,
}


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_every_compression(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"trace.{suffix}"
    path.write_bytes(COMPRESSORS[suffix](TEXT))
    trace = ftrace.read(path, cache_dir=tmp_path / "cache")
    assert trace.accounting.events == {
        "mm_compaction_kcompactd_sleep": 1,
        "mm_vmscan_throttled": 2,
    }
    assert trace.events("mm_vmscan_throttled")["usect_delayed"].to_list() == [4000, 0]
    assert trace.events("mm_vmscan_throttled")["line"].to_list() == [3, 5]
    assert trace.lost_events_total == 7


@pytest.mark.parametrize("suffix", ["gz", "zst", "xz", "bz2"])
def test_truncated_stream_names_file_and_offset(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"trace.{suffix}"
    whole = COMPRESSORS[suffix](TEXT * 200)
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError) as err:
        ftrace.read(path, cache_dir=tmp_path / "cache")
    assert err.value.path == path and err.value.offset is not None
    assert str(path) in str(err.value) and "byte offset" in str(err.value)


def test_corrupt_gzip_body(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(TEXT * 50))
    data[30:60] = b"\x00" * 30
    path = tmp_path / "bad.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="corrupt or truncated gzip"):
        ftrace.read(path, cache_dir=tmp_path / "cache")


def test_empty_event_frame_has_schema(tmp_path: Path) -> None:
    path = tmp_path / "t.trace"
    path.write_bytes(TEXT)
    frame = ftrace.read(path, cache_dir=tmp_path / "c").events("mm_vmscan_kswapd_wake")
    assert frame.is_empty()
    assert frame.schema["order"] == pl.Int64 and frame.schema["epoch_ns"] == pl.Int64


def test_cache_is_reused_and_keyed_by_content(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "t.trace"
    path.write_bytes(TEXT)
    first = ftrace.read(path, cache_dir=tmp_path / "c")
    monkeypatch.setattr(reader, "parse_block", _fail)
    again = ftrace.read(path, cache_dir=tmp_path / "c")
    assert again.directory == first.directory
    assert again.directory.name == f"{blake3(TEXT).hexdigest()}-v{CACHE_VERSION}"
    # Changed content is parsed again (and fails here, proving the cache was not used).
    path.write_bytes(TEXT + TEXT)
    with pytest.raises(AssertionError, match="parsed again"):
        ftrace.read(path, cache_dir=tmp_path / "c")


def test_a_failed_command_removes_what_two_workers_added_in_either_order(tmp_path: Path) -> None:
    """Two pool workers ingest two copies of one trace; the one whose entries are adopted
    second made the cache's folders. A failed command removed entries newest first, so
    ``by-path/`` was still holding the first worker's files when its turn came and stayed
    (CI, under load: ``build/ingest/by-path`` left behind)."""
    from analysis.ingest.ftrace import cache as trace_cache

    cache_dir = tmp_path / "c"
    worker_entries = []
    for name in ("second.trace", "first.trace"):  # the second one read makes the folders
        path = tmp_path / name
        path.write_bytes(TEXT)
        trace_cache.begin_command()
        ftrace.read(path, cache_dir=cache_dir)
        worker_entries.append(trace_cache.new_entries())
    trace_cache.begin_command()
    for entries in reversed(worker_entries):  # adopted in the order the files were given
        trace_cache.adopt_entries(entries)
    trace_cache.discard_new_entries()
    assert not cache_dir.exists(), sorted(cache_dir.rglob("*"))


def test_dataset_of_another_cache_version_is_not_served(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "t.trace"
    path.write_bytes(TEXT)
    first = ftrace.read(path, cache_dir=tmp_path / "c")
    # The index of an older mmlab names its dataset by that version's suffix.
    old = first.directory.with_name(first.directory.name.replace(f"-v{CACHE_VERSION}", "-v3"))
    first.directory.rename(old)
    index = next((tmp_path / "c" / "by-path").glob("*.json"))
    index.write_text(index.read_text().replace(first.directory.name, old.name))
    monkeypatch.setattr(reader, "parse_block", _fail)
    with pytest.raises(AssertionError, match="parsed again"):
        ftrace.read(path, cache_dir=tmp_path / "c")


def _fail(*args, **kwargs):
    raise AssertionError("parsed again")


def test_line_numbers_global_across_blocks(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(reader, "BLOCK_BYTES", 300)
    path = tmp_path / "t.trace"
    path.write_bytes(TEXT * 20)
    trace = ftrace.read(path, cache_dir=tmp_path / "c")
    lines = trace.events("mm_vmscan_throttled")["line"].to_list()
    assert lines == [5 * i + j for i in range(20) for j in (3, 5)]
    assert trace.accounting.lines == 100
    assert [x.line for x in trace.accounting.lost_events] == [5 * i + 4 for i in range(20)]


# Every kind of line: events known and unknown (the general path), a lost marker, a stack
# frame, a blank, unparsed lines of two reasons, an event with a non-number field.
MIXED = TEXT + (
    b"          <idle>-0       [001] d.h1.   253.000001: writeback_dirty_folio: bdi 254:0: "
    b"ino=5317324 index=878592\n"
    b" => shrink_node\n"
    b"\n"
    b"this line is not a trace line at all\n"
    b"              dd-3772    [001] .....   252.46x787: mm_vmscan_throttled: nid=0\n"
    b"              dd-3772    [001] .....   253.100000: mm_vmscan_throttled: nid=0 "
    b"usec_timeout=GARBAGE usect_delayed=0 reason=VMSCAN_THROTTLE_WRITEBACK\n"
)


@pytest.mark.parametrize("block_bytes", [1, 97, 250, 1000])
def test_blocks_split_mid_line_give_the_serial_parse(
    tmp_path: Path, monkeypatch, block_bytes: int
) -> None:
    # Block sizes that cut lines anywhere (1 byte: every read ends mid-line), parsed by the
    # worker threads, against parse_text of the whole input as one block.
    text = MIXED * 7
    serial, frames = reader.parse_text(text)
    monkeypatch.setattr(reader, "BLOCK_BYTES", block_bytes)
    path = tmp_path / "t.trace"
    path.write_bytes(text)
    trace = ftrace.read(path, cache_dir=tmp_path / "c", note_unparsed=False)
    assert trace.accounting.to_json() == {**serial.to_json(), "source": str(path)}
    assert serial.unparsed == 3 * 7 and serial.lines == 11 * 7
    assert serial.unparsed_by_reason["bad timestamp"].lines == tuple(10 + 11 * i for i in range(7))
    assert set(frames) == set(trace.event_names)
    for name, frame in frames.items():
        got = trace.events(name).drop("epoch_ns")
        assert got.equals(frame), name


def test_plain_text_blocks_divide_evenly_between_the_workers(tmp_path: Path) -> None:
    # The 671,331,924-byte benchmark capture: 20.007 blocks of 32 MiB would leave the 21st
    # to one worker; 22 blocks of 30.5 MB give each of the two workers 11.
    path = tmp_path / "big.trace"
    with path.open("wb") as fh:
        fh.truncate(671_331_924)  # sparse: no disk used
    size = reader.block_bytes(path)
    assert -(-671_331_924 // size) == 22 and size <= reader.BLOCK_BYTES
    # A compressed file's text size is unknown: full blocks.
    packed = tmp_path / "t.gz"
    packed.write_bytes(gzip.compress(TEXT))
    assert reader.block_bytes(packed) == reader.BLOCK_BYTES


def test_epoch_from_start_file_with_clock_line(tmp_path: Path) -> None:
    path = tmp_path / "ftrace-x.gz"
    path.write_bytes(gzip.compress(TEXT))
    # mmlab capture: epoch on line 1, trace clock at that instant on line 2.
    (tmp_path / "ftrace-x.gz.start").write_text("1700000000.5\n250.000000\n")
    frame = ftrace.read(path, cache_dir=tmp_path / "c").events("mm_compaction_kcompactd_sleep")
    # 1700000000.5 s + (250.164105 s - 250 s)
    assert frame["epoch_ns"][0] == 1_700_000_000_500_000_000 + 164_105_000


def test_epoch_from_mmtests_start_uses_first_event(tmp_path: Path) -> None:
    path = tmp_path / "ftrace-x.gz"
    path.write_bytes(gzip.compress(TEXT))
    (tmp_path / "ftrace-x.start").write_text("1700000000\n")
    frame = ftrace.read(path, cache_dir=tmp_path / "c").events("mm_vmscan_throttled")
    # First event at 250.164105 s is the epoch; 252.459898 s is 2.295793 s later.
    assert frame["epoch_ns"][0] == 1_700_000_000_000_000_000 + 2_295_793_000


def test_no_start_file_no_epoch(tmp_path: Path) -> None:
    path = tmp_path / "t.trace"
    path.write_bytes(TEXT)
    assert (
        ftrace.read(path, cache_dir=tmp_path / "c")
        .events("mm_vmscan_throttled")["epoch_ns"]
        .null_count()
        == 2
    )


def _bundled_text() -> bytes:
    return zstandard.ZstdDecompressor().stream_reader(BUNDLED.open("rb")).read()


def test_counts_match_grep_on_bundled_capture(tmp_path: Path) -> None:
    text = _bundled_text()
    plain = tmp_path / "ftrace.txt"
    plain.write_bytes(text)
    trace = ftrace.read(BUNDLED, cache_dir=tmp_path / "c")
    names = set(re.findall(rb" (\w+): ", text)) & {n.encode() for n in trace.event_names}
    assert len(names) >= 5
    for name in names:
        grep = subprocess.run(
            ["grep", "-c", f": {name.decode()}: ", str(plain)], capture_output=True, check=True
        )
        assert trace.accounting.events[name.decode()] == int(grep.stdout), name
        assert len(trace.events(name.decode())) == int(grep.stdout)
    wc = subprocess.run(["wc", "-l", str(plain)], capture_output=True, check=True)
    assert trace.accounting.lines == int(wc.stdout.split()[0])
    assert trace.accounting.unparsed == 0


def test_bundled_throttle_values_match_text(tmp_path: Path) -> None:
    text = _bundled_text().decode()
    expected = [int(m) for m in re.findall(r"usect_delayed=(\d+)", text)]
    frame = ftrace.read(BUNDLED, cache_dir=tmp_path / "c").events("mm_vmscan_throttled")
    assert frame["usect_delayed"].to_list() == expected
    assert frame["epoch_ns"].null_count() == 0


def _write_pair(tmp_path: Path) -> list[Path]:
    paths = []
    for i in range(2):
        path = tmp_path / "captures" / f"ftrace-{i}.gz"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(gzip.compress(TEXT * (i + 1)))
        paths.append(path)
    return paths


def test_directory_ingest_in_parallel_processes(tmp_path: Path) -> None:
    _write_pair(tmp_path)
    results = ftrace.ingest(sorted((tmp_path / "captures").iterdir()), cache_dir=tmp_path / "c")
    assert [r["events"]["mm_vmscan_throttled"] for r in results] == [2, 4]


def test_dask_cluster_ingest(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    paths = _write_pair(tmp_path)
    with (
        distributed.LocalCluster(processes=False, n_workers=1, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        results = ftrace.ingest(paths, cache_dir=tmp_path / "c", scheduler=client)
    assert [r["lines"] for r in results] == [5, 10]


def test_cli_json(tmp_path: Path, capsys) -> None:
    path = tmp_path / "t.trace"
    path.write_bytes(TEXT + b"junk\n")
    assert main(["ingest", str(path), "--out", str(tmp_path / "c"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["lines"] == 6 and out["unparsed"] == 1
    assert out["events"] == {"mm_compaction_kcompactd_sleep": 1, "mm_vmscan_throttled": 2}
    assert out["lost_events"] == [{"cpu": 1, "count": 7, "line": 4}]
    assert out["unparsed_samples"]["no trace line layout matched"]["lines"] == [6]


def test_cli_bad_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "t.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(TEXT * 100)[:40])
    assert main(["ingest", str(path), "--out", str(tmp_path / "c")]) == 2
    assert str(path) in capsys.readouterr().err


@pytest.mark.parametrize("block_bytes", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("tail", [b"", b"no newline at the end"])
def test_a_plain_file_is_read_as_maps_of_whole_lines(
    tmp_path: Path, block_bytes: int, tail: bytes
) -> None:
    """A plain file's blocks (views of its pages) are whole lines that join to the file,
    the unterminated rest is the final block, and the digest is the file's; lines longer
    than a block (every line at 1 and 7 bytes) widen that block's window."""
    from analysis.ingest import compressed

    text = b"".join(b"line %d %s\n" % (i, b"x" * (i % 40)) for i in range(3000)) + tail
    path = tmp_path / "plain.txt"
    path.write_bytes(text)
    digest: list[str] = []
    blocks = list(compressed.iter_blocks(path, block_bytes, digest))
    assert b"".join(bytes(b.data) for b in blocks) == text
    assert [b.final for b in blocks] == [False] * (len(blocks) - 1) + [True]
    assert all(bytes(b.data).endswith(b"\n") for b in blocks[:-1])
    assert bytes(blocks[-1].data) == tail
    assert digest == [blake3(text).hexdigest()]


def test_a_plain_line_longer_than_the_limit_is_refused(tmp_path: Path, monkeypatch) -> None:
    from analysis.ingest import compressed

    monkeypatch.setattr(compressed, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "long.txt"
    path.write_bytes(b"short\n" + b"y" * 5000 + b"\nend\n")
    with pytest.raises(InputError, match="a line of more than 1,000 bytes") as err:
        list(compressed.iter_blocks(path, 100))
    assert err.value.path == path


def test_a_plain_file_that_shrinks_while_read_is_refused(tmp_path: Path) -> None:
    """Reading past the new end of a mapped file would kill the process (SIGBUS): the next
    block's map is refused with the file named instead."""
    from analysis.ingest import compressed

    path = tmp_path / "shrinks.txt"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(10_000)))
    blocks = compressed.iter_blocks(path, 4096)
    first = next(blocks)
    assert bytes(first.data).startswith(b"line 0\n")
    with path.open("r+b") as fh:
        fh.truncate(5000)
    with pytest.raises(InputError, match="shrank while it was being read") as err:
        next(blocks)
    assert err.value.path == path


def test_non_number_field_found_whichever_path_builds_the_event() -> None:
    # Line 2: the compiled column pass finds the bad field. Lines 4-5: an extra key (7.1's
    # memcg_id) sends mm_vmscan_throttled to the general path, before or after the bad
    # field; the separate check over every token must still find it.
    good = b"dd-3772 [001] ..... 252.45: mm_vmscan_throttled: nid=0 usec_timeout=1 "
    text = (
        good + b"usect_delayed=0 reason=VMSCAN_THROTTLE_WRITEBACK\n"
        b"dd-3772 [001] ..... 252.46: mm_vmscan_throttled: nid=0 usec_timeout=GARBAGE\n"
    )
    with_extra = (
        text
        + good
        + b"usect_delayed=0 memcg_id=4\n"
        + b"dd-3772 [001] ..... 252.47: mm_vmscan_throttled: memcg_id=4 nid=X usec_timeout=1\n"
        + b"dd-3772 [001] ..... 252.48: mm_vmscan_throttled: nid=0 usec_timeout=2 memcg_id=x\n"
    )
    for data, bad in ((text, (2,)), (with_extra, (2, 4))):
        acc, frames = reader.parse_text(data)
        assert acc.unparsed_by_reason["field value not a number"].lines == bad
        assert frames["mm_vmscan_throttled"]["line"].to_list() == [
            n for n in range(1, data.count(b"\n") + 1) if n not in bad
        ]


@pytest.mark.parametrize(
    "hashes",
    [
        np.array([7, 3, 7, 7, 3, 9], np.uint64),
        # 3,000 distinct values: the table grows several times.
        np.random.default_rng(1).integers(0, 2**64, 3000, np.uint64, endpoint=False)[
            np.random.default_rng(2).integers(0, 3000, 20000)
        ],
        # Equal low bits: every value probes past the others' slots.
        (np.arange(40, dtype=np.uint64) << np.uint64(40))[::-1].repeat(3),
        np.array([2**64 - 1, 0, 2**63], np.uint64),
    ],
    ids=["few", "many", "colliding", "extremes"],
)
def test_group_hashes_is_numpy_unique(hashes: np.ndarray) -> None:
    first, ids = group_hashes(hashes)
    _, want_first, want_ids = np.unique(hashes, return_index=True, return_inverse=True)
    assert first.tolist() == want_first.tolist() and ids.tolist() == want_ids.ravel().tolist()
