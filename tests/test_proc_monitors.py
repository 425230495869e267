"""mmtests /proc monitors (issue 30 item 3): real logs recorded here as mmtests' watch
scripts take them (tests/data/mmtests-monitors, tests/data/README.md) and the real vmstat(8)
log of the bundled mmtests-ci tree. Expected values are read from the text by hand
(split on whitespace), not by the readers under test.
"""

from __future__ import annotations

import gzip

import pytest

from analysis.errors import InputError
from analysis.ingest import proc_monitors
from tests.conftest import DATA, REPO

ITER = REPO / "tests/data/mmtests-monitors/work/log/monitors/iter-0"


def _first_block(name: str) -> list[str]:
    lines = gzip.decompress((ITER / f"{name}-writer.gz").read_bytes()).decode().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("time: ")]
    return lines[starts[0] + 1 : starts[1]]


def test_every_monitor_of_the_iteration_is_read() -> None:
    found = proc_monitors.iteration_monitors(ITER, "writer")
    assert sorted(found) == sorted(proc_monitors.MONITORS)
    assert all(m.samples >= 4 for m in found.values())


def test_buddyinfo_by_hand() -> None:
    expected = []
    for line in _first_block("proc-buddyinfo"):
        words = line.replace(",", " ").split()
        expected += [(int(words[1]), words[3], o, int(n)) for o, n in enumerate(words[4:])]
    frame = proc_monitors.read_monitor(ITER / "proc-buddyinfo-writer.gz", "proc-buddyinfo").frame
    got = frame.filter(sample=0).select("node", "zone", "order", "free_blocks").rows()
    assert got == expected and len({o for _, _, o, _ in expected}) == 11


def test_slabinfo_and_meminfo_by_hand() -> None:
    slab = [line.split() for line in _first_block("slabinfo")[2:]]
    frame = proc_monitors.read_monitor(ITER / "slabinfo-writer.gz", "slabinfo").frame
    first = frame.filter(sample=0)
    assert first["cache"].to_list() == [w[0] for w in slab]
    assert first["num_slabs"].to_list() == [int(w[14]) for w in slab]
    mem = dict(line.split(":") for line in _first_block("proc-meminfo"))
    frame = proc_monitors.read_monitor(ITER / "proc-meminfo-writer.gz", "proc-meminfo").frame
    row = frame.filter(sample=0, item="MemTotal").row(0, named=True)
    assert (row["value"], row["unit"]) == (int(mem["MemTotal"].split()[0]), "kB")
    assert frame.filter(sample=0, item="HugePages_Total")["unit"].to_list() == [None]


def test_zoneinfo_items_and_node_stats() -> None:
    block = _first_block("proc-zoneinfo")
    frees = [int(line.split()[2]) for line in block if line.strip().startswith("pages free")]
    frame = proc_monitors.read_monitor(ITER / "proc-zoneinfo-writer.gz", "proc-zoneinfo").frame
    first = frame.filter(sample=0)
    assert first.filter(item="pages_free")["value"].to_list() == frees
    # per-node stats belong to the node, not to the zone they are printed under
    assert first.filter(item="nr_inactive_file")["zone"].to_list() == [None]


def test_vmstat8_of_a_real_mmtests_tree() -> None:
    path = next((DATA / "mmtests-ci").rglob("vmstat-usemem.gz"))
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    frame = proc_monitors.read_monitor(path, "vmstat").frame
    assert frame.height == len(lines)
    assert frame["free"].to_list() == [int(line.split("--")[1].split()[3]) for line in lines]
    assert frame["epoch_s"][0] == float(lines[0].split()[0])


@pytest.mark.parametrize(
    ("name", "text", "line", "reason"),
    [
        ("proc-buddyinfo", "time: 1\nNode 0, zone DMA 1 2\ngarbage\n", 3, "buddyinfo"),
        ("proc-buddyinfo", "Node 0, zone DMA 1 2\n", 1, "before the first 'time:'"),
        ("proc-buddyinfo", "time: 2\nNode 0, zone DMA 1\ntime: 1\n", 3, "backwards"),
        ("slabinfo", "time: 1\nslabinfo - version: 2.0\n", 2, "not 2.1"),
        ("vmstat", "1.0 0.0 0.0 -- 1 2 3\n", 1, "vmstat"),
    ],
)
def test_bad_monitor_names_the_line(tmp_path, name, text, line, reason) -> None:
    path = tmp_path / "log"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"log:{line}: .*{reason}"):
        proc_monitors.read_monitor(path, name)
