"""Binned latency histograms (issue 30 item 3): bpftrace hist()/lhist() text and -f json,
ftrace hist triggers.

bpftrace files were recorded here by tests/data-gen/record-inputs.sh (tests/data/README.md);
the hist-trigger files are the kernel's documented output (Documentation/trace/
histogram.rst, Linux 6.12; this kernel has no CONFIG_HIST_TRIGGERS). Expected counts are
read from the text with a regular expression or summed by hand, not by the reader.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from analysis.errors import InputError
from analysis.ingest import histogram
from tests.conftest import REPO

BPF = REPO / "tests/data/bpftrace"
HIST = REPO / "tests/data/ftrace-hist"


def test_bpftrace_text_log2_and_linear_bins() -> None:
    text = (BPF / "vmscan-bt.text").read_text()
    binned = histogram.read_binned(BPF / "vmscan-bt.text")
    assert binned.producer == "bpftrace"
    assert binned.series == ["@memcg_reclaim_ns", "@shrink_slab_ns", "@throttle_us"]
    # Every "[a, b) N |@..|" line is one bin, with its count.
    counts = [int(n) for n in re.findall(r"^\[[^\n]*?\)\s+(\d+) \|", text, flags=re.M)]
    assert binned.frame["count"].to_list() == counts
    memcg = binned.frame.filter(series="@memcg_reclaim_ns")
    assert memcg.row(0, named=True) | {"line": 0} == {
        "series": "@memcg_reclaim_ns",
        "lo": 8192.0,
        "hi": 16384.0,
        "count": 49,
        "unit": "ns",
        "line": 0,
    }
    assert memcg["hi"][-1] == 128 * 1024 * 1024  # "[64M, 128M)"
    throttle = binned.frame.filter(series="@throttle_us")
    assert throttle["lo"][:2].to_list() == [0.0, 4000.0] and throttle["unit"][0] == "us"


def test_bpftrace_json_matches_its_text_shape() -> None:
    binned = histogram.read_binned(BPF / "vmscan-bt.json")
    assert binned.producer == "bpftrace-json"
    records = [json.loads(line) for line in (BPF / "vmscan-bt.json").read_text().splitlines()]
    hist = {k: v for r in records if r["type"] == "hist" for k, v in r["data"].items()}
    for name, bins in hist.items():
        rows = binned.frame.filter(series=name)
        assert rows["count"].to_list() == [b["count"] for b in bins]
        # JSON max is inclusive: the bin is [min, max + 1), as in the text form.
        assert rows["hi"].to_list() == [b["max"] + 1.0 for b in bins]
    assert binned.skipped_lines == 2  # attached_probes and the count map


def test_quantile_bins_in_us() -> None:
    """Hand count of @memcg_reclaim_ns (text): 49+20+11 = 80 of 276 below 64K, the 140 of
    [64K, 128K) reach 220 -> the median bin; 90 % (248.4) is reached in [128K, 256K)."""
    binned = histogram.read_binned(BPF / "vmscan-bt.text")
    bins = histogram.to_us(binned, "@memcg_reclaim_ns")
    assert int(bins["count"].sum()) == 276
    q = histogram.quantile_bins(bins)
    assert q[0.5] == pytest.approx((65.536, 131.072))
    assert q[0.9] == pytest.approx((131.072, 262.144))


def test_unit_is_never_guessed(tmp_path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("@lat: \n[1K, 2K)   3 |@@@|\n[2K, 4K)   1 |@  |\n")
    binned = histogram.read_binned(path)
    with pytest.raises(InputError, match="unit of @lat is not known"):
        histogram.to_us(binned, "@lat")
    assert histogram.to_us(binned, "@lat", unit="ns")["hi_us"].to_list() == [2.048, 4.096]


def test_single_value_and_open_bins(tmp_path) -> None:
    path = tmp_path / "out.txt"
    path.write_text(
        "@x_us: \n(..., 0)    1 |@ |\n[0]    2 |@@|\n[1]    1 |@ |\n[2, 4)    1 |@ |\n"
        "[4, ...)    5 |@@@@@|\n"
    )
    frame = histogram.read_binned(path).frame
    assert frame["lo"].to_list() == [-math.inf, 0, 1, 2, 4]
    assert frame["hi"].to_list() == [0, 1, 2, 4, math.inf]


def test_hist_trigger_log2_keys() -> None:
    """``lat: ~ 2^k`` is roundup_pow_of_two(lat) = 2^k: 2^(k-1) < lat <= 2^k."""
    binned = histogram.read_binned(HIST / "wakeup_latency-log2.hist", event="wakeup_latency")
    frame = binned.frame
    assert binned.producer == "ftrace-hist"
    assert int(frame["count"].sum()) == 2122  # the file's "Hits: 2122"
    assert frame.height == 30  # "Entries: 30"
    first = frame.row(0, named=True)
    assert first["series"] == "wakeup_latency.lat[pid=2035,prio=9]"
    assert (first["lo"], first["hi"], first["count"]) == (3.0, 5.0, 43)


def test_hist_trigger_buckets() -> None:
    binned = histogram.read_binned(HIST / "wakeup_latency-buckets.hist", event="wakeup_latency")
    assert int(binned.frame["count"].sum()) == 2112 and binned.frame.height == 16
    assert set(zip(binned.frame["lo"], binned.frame["hi"], strict=True)) == {(0, 10), (10, 20)}


def test_hist_trigger_exact_keys_are_throttle_events(tmp_path) -> None:
    """SYNTHETIC (this kernel has no hist triggers): the layout of the files above, keyed
    on mm_vmscan_throttled's stored fields; reason 1 is WRITEBACK (1 << 0)."""
    directory = tmp_path / "events/vmscan/mm_vmscan_throttled"
    directory.mkdir(parents=True)
    (directory / "hist").write_text(
        "# event histogram\n#\n# trigger info: hist:keys=reason,usec_timeout,usec_delayed:"
        "vals=hitcount:sort=hitcount:size=2048 [active]\n#\n\n"
        "{ reason:          1, usec_timeout:     100000, usec_delayed:       4000 } hitcount:"
        "          5\n"
        "{ reason:          1, usec_timeout:     100000, usec_delayed:          0 } hitcount:"
        "         29\n\nTotals:\n    Hits: 34\n    Entries: 2\n    Dropped: 0\n"
    )
    hist = histogram.read_hist_trigger_events(directory / "hist")
    frame = hist.events("mm_vmscan_throttled")
    assert frame["reason"].to_list() == ["VMSCAN_THROTTLE_WRITEBACK"] * 2
    assert frame["usect_delayed"].to_list() == [4000, 0]
    assert frame["count"].to_list() == [5, 29]
    with pytest.raises(InputError, match="no histogram bins"):
        histogram.read_binned(directory / "hist")


def test_stalls_reads_a_throttle_hist_trigger(tmp_path, capsys) -> None:
    """SYNTHETIC hist file as above: `mmlab stalls --json` counts 34 sleeps of which 29
    were woken within the first jiffy."""
    from analysis.cli import main

    test_hist_trigger_exact_keys_are_throttle_events(tmp_path)
    path = tmp_path / "events/vmscan/mm_vmscan_throttled/hist"
    assert main(["stalls", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)[0]
    row = out["throttle"]["rows"][0] if "rows" in out["throttle"] else out["throttle"][0]
    assert row["reason"] == "VMSCAN_THROTTLE_WRITEBACK"
    assert row["count"] == 34
    assert row["zero_share"] == pytest.approx(29 / 34)
